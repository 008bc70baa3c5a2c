/* cg_io.c: plan files (cg.h, "plan files"): the plan cache's entries and
 * AOT packages. The reader trusts nothing: a file may be truncated,
 * corrupted, from another version, or hostile; every field is checked
 * before the plan is handed to the runtime. */
#include "codegen/cg.h"
#include "codegen/plan_bytes.h"
#include "ir/file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

static const char MAGIC[8] = {'S', 'I', 'N', 'T', 'P', 'L', 'A', 'N'};
enum { HEADER = 64, PAGE = 4096 };
/* Limits that keep a hostile file from asking for absurd allocations. */
#define MAX_COUNT (1u << 22)
#define MAX_BYTES ((uint64_t)1 << 40)

/* ---- writing ---- */

static void puti64s(wbuf *b, const int64_t *v, int n)
{
	for (int i = 0; i < n; i++)
		put64(b, (uint64_t)v[i]);
}
static void putf64(wbuf *b, double v) { put(b, &v, 8); }
static void putstr(wbuf *b, const char *s)
{
	uint32_t n = (uint32_t)strlen(s ? s : "");
	put32(b, n);
	put(b, s ? s : "", n);
}


static void put_meta(wbuf *b, const cg_plan *p, const cg_plan_info *info, uint64_t *cubin_off)
{
	putstr(b, info ? info->version : "");
	putstr(b, info ? info->source : "");
	put64(b, info ? info->w_size : 0);
	put64(b, info ? info->w_mtime_ns : 0);
	put64(b, info ? info->w_ino : 0);
	uint8_t zero[16] = {0};
	put(b, info ? info->w_hash : zero, 16);

	put32(b, (uint32_t)p->sm);
	put64(b, p->arena_bytes);
	put64(b, p->weight_bytes);
	for (uint64_t off = 0; off < p->weight_bytes; off += WCHUNK) {
		uint64_t n = p->weight_bytes - off < WCHUNK ? p->weight_bytes - off : WCHUNK;
		put64(b, XXH3_64bits((const char *)p->weights + off, n));
	}
	put32(b, p->nbufs);
	for (uint32_t i = 0; i < p->nbufs; i++) {
		const cg_buf *x = &p->bufs[i];
		put32(b, x->where);
		put32(b, x->dtype);
		put32(b, (uint32_t)x->rank);
		puti64s(b, x->shape, IR_MAX_RANK);
		puti64s(b, x->strides, IR_MAX_RANK);
		put64(b, x->bytes);
		put64(b, x->offset);
		put32(b, x->index);
	}
	put32(b, p->nkerns);
	uint64_t off = 0;
	for (uint32_t i = 0; i < p->nkerns; i++) {
		const cg_kern *k = &p->kerns[i];
		putstr(b, k->name);
		put(b, k->spec, 16);
		put(b, &k->cfg, sizeof k->cfg); /* ten int32 */
		put64(b, off);
		put64(b, k->cubin_size);
		off += k->cubin_size;
		put32(b, k->ntmaps);
		for (uint32_t t = 0; t < k->ntmaps; t++) {
			const cg_tmap *m = &k->tmaps[t];
			put32(b, m->arg);
			put32(b, m->dtype);
			put32(b, m->rank);
			put32(b, m->swizzle);
			for (int d = 0; d < CG_TMAP_RANK; d++) {
				put64(b, m->dims[d]);
				put64(b, m->strides[d]);
				put32(b, m->box[d]);
			}
		}
	}
	*cubin_off = off; /* total cubin bytes */
	put32(b, p->nsteps);
	for (uint32_t i = 0; i < p->nsteps; i++) {
		const cg_pstep *s = &p->steps[i];
		put32(b, s->kind);
		putstr(b, s->op);
		putf64(b, s->bytes);
		putf64(b, s->flops);
		if (s->kind == CG_LAUNCH) {
			put32(b, s->kern);
			for (int d = 0; d < 3; d++)
				put32(b, s->grid[d]);
			for (int d = 0; d < 3; d++)
				put32(b, s->block[d]);
			put32(b, s->smem);
			put32(b, s->nargs);
			for (uint32_t a = 0; a < s->nargs; a++)
				put32(b, s->args[a]);
		} else {
			const cg_mm *m = &s->mm;
			put32(b, m->a);
			put32(b, m->b);
			put32(b, m->bias);
			put32(b, m->out);
			put32(b, m->c);
			const int64_t dims[] = {m->batch, m->m, m->n, m->k, m->stride_a, m->stride_b, m->stride_c};
			puti64s(b, dims, 7);
			put32(b, m->trans_b);
			put32(b, m->dtype);
			put32(b, m->act);
			put32(b, m->tf32);
			put(b, &m->algo, sizeof m->algo); /* ten int32 */
		}
	}
	for (int io = 0; io < 2; io++) {
		uint32_t n = io ? p->noutputs : p->ninputs;
		const cg_io *v = io ? p->outputs : p->inputs;
		put32(b, n);
		for (uint32_t i = 0; i < n; i++) {
			putstr(b, v[i].name);
			put32(b, v[i].dtype);
			put32(b, (uint32_t)v[i].rank);
			puti64s(b, v[i].shape, IR_MAX_RANK);
			put32(b, v[i].buf);
		}
	}
}

int cg_plan_write(const char *path, const cg_plan *p, const cg_plan_info *info, sn_err *e)
{
	for (uint32_t i = 0; i < p->nkerns; i++)
		if (!p->kerns[i].cubin && p->kerns[i].cubin_size == 0)
			return sn_errf(e, SN_EINTERNAL, "plan: kernel %s has no cubin to write", p->kerns[i].name);
	if (p->weight_bytes && !p->weights)
		return sn_errf(e, SN_EINTERNAL, "plan: the weight image is gone");
	wbuf meta = {0};
	uint64_t cubins = 0;
	put_meta(&meta, p, info, &cubins);
	if (meta.oom) {
		free(meta.p);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	uint64_t cubin_off = HEADER + meta.len;
	uint64_t w_off = (cubin_off + cubins + PAGE - 1) / PAGE * PAGE;
	uint64_t total = w_off + p->weight_bytes;

	/* the checksum covers everything between the header and the weight
	 * image, in file order; the tables hold the image's chunk checksums */
	XXH3_state_t *xs = XXH3_createState();
	if (!xs) {
		free(meta.p);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	static const uint8_t pad[PAGE];
	size_t npad = (size_t)(w_off - cubin_off - cubins);
	XXH3_64bits_reset(xs);
	XXH3_64bits_update(xs, meta.p, meta.len);
	for (uint32_t i = 0; i < p->nkerns; i++)
		XXH3_64bits_update(xs, p->kerns[i].cubin, p->kerns[i].cubin_size);
	XXH3_64bits_update(xs, pad, npad);
	uint64_t sum = XXH3_64bits_digest(xs);
	XXH3_freeState(xs);

	uint8_t h[HEADER] = {0};
	memcpy(h, MAGIC, 8);
	uint32_t fmt = CG_PLAN_FORMAT;
	uint64_t meta_len = meta.len;
	memcpy(h + 8, &fmt, 4);
	memcpy(h + 16, &total, 8);
	memcpy(h + 24, &sum, 8);
	memcpy(h + 32, &meta_len, 8);
	memcpy(h + 40, &cubin_off, 8);
	memcpy(h + 48, &w_off, 8);
	memcpy(h + 56, &p->weight_bytes, 8);

	/* the one writer (ir/file.h): a unique temp file beside the
	 * destination, fsync, rename */
	sn_out out = {0};
	int rc = sn_out_open(&out, path, 0644, e);
	if (rc == SN_OK) {
		sn_out_write(&out, h, HEADER);
		sn_out_write(&out, meta.p, meta.len);
		for (uint32_t i = 0; i < p->nkerns; i++)
			sn_out_write(&out, p->kerns[i].cubin, p->kerns[i].cubin_size);
		sn_out_write(&out, pad, npad);
		if (p->weight_bytes)
			sn_out_write(&out, p->weights, p->weight_bytes);
		rc = sn_out_finish(&out, e);
		if (rc == SN_OK)
			rc = sn_out_commit(&out, e);
	}
	sn_out_abort(&out);
	free(meta.p);
	return rc;
}

/* ---- reading ---- */

static void geti64s(rbuf *r, int64_t *v, int n)
{
	for (int i = 0; i < n; i++)
		v[i] = (int64_t)get64(r);
}
static double getf64(rbuf *r)
{
	double v;
	get(r, &v, 8);
	return v;
}
/* A string into out[cap] (NUL-terminated); longer ones are bad. */
static void getstr(rbuf *r, char *out, size_t cap)
{
	uint32_t n = get32(r);
	if (r->bad || n >= cap || r->len - r->at < n) {
		r->bad = true;
		out[0] = 0;
		return;
	}
	memcpy(out, r->p + r->at, n);
	out[n] = 0;
	r->at += n;
	if (memchr(out, 0, n))
		r->bad = true;
}

static bool shape_ok(int32_t rank, const int64_t *shape)
{
	if (rank < 0 || rank > IR_MAX_RANK)
		return false;
	for (int d = 0; d < rank; d++)
		if (shape[d] < 0 || shape[d] > (int64_t)MAX_BYTES)
			return false;
	return true;
}

typedef struct chunk_job {
	const uint8_t *data;
	uint64_t size;
	const uint64_t *sums;
	uint64_t from, to, step;
	bool bad;
} chunk_job;

static void *check_range(void *arg)
{
	chunk_job *j = arg;
	for (uint64_t i = j->from; i < j->to; i += j->step) {
		uint64_t off = i * WCHUNK, n = j->size - off < WCHUNK ? j->size - off : WCHUNK;
		if (XXH3_64bits(j->data + off, n) != j->sums[i])
			j->bad = true;
	}
	return NULL;
}

/* Verifies the weight image's chunks on up to 8 threads. */
bool cg_check_chunks(const uint8_t *data, uint64_t size, const uint64_t *sums, uint64_t n)
{
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	(void)data, (void)size, (void)sums, (void)n;
	return true;
#else
	enum { MAXT = 8 };
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t nt = n < MAXT ? n : MAXT;
	if (cores > 0 && (uint64_t)cores < nt)
		nt = (uint64_t)cores;
	chunk_job jobs[MAXT];
	pthread_t tids[MAXT];
	bool started[MAXT] = {false};
	for (uint64_t t = 0; t < nt; t++) {
		jobs[t] = (chunk_job){data, size, sums, t, n, nt, false};
		started[t] = t > 0 && pthread_create(&tids[t], NULL, check_range, &jobs[t]) == 0;
	}
	for (uint64_t t = 0; t < nt; t++)
		if (!started[t])
			check_range(&jobs[t]); /* this thread's share, and any a thread could not take */
	bool ok = true;
	for (uint64_t t = 0; t < nt; t++) {
		if (started[t])
			pthread_join(tids[t], NULL);
		ok &= !jobs[t].bad;
	}
	return ok;
#endif
}

/* Reads the tables; the plan's arrays are allocated here, and cubins and
 * weights point into data. Returns a reason when the file is bad. */
static const char *parse(const uint8_t *data, size_t size, cg_plan *p, cg_plan_info *info)
{
	if (size < HEADER || memcmp(data, MAGIC, 8))
		return "not a sinter plan";
	uint32_t fmt, reserved;
	uint64_t total, sum, meta_len, cubin_off, w_off, w_bytes;
	memcpy(&fmt, data + 8, 4);
	memcpy(&reserved, data + 12, 4);
	memcpy(&total, data + 16, 8);
	memcpy(&sum, data + 24, 8);
	memcpy(&meta_len, data + 32, 8);
	memcpy(&cubin_off, data + 40, 8);
	memcpy(&w_off, data + 48, 8);
	memcpy(&w_bytes, data + 56, 8);
	if (fmt != CG_PLAN_FORMAT)
		return "written by another format version";
	if (reserved)
		return "bad header";
	if (total != size)
		return "truncated or padded";
	if (meta_len > size - HEADER || cubin_off != HEADER + meta_len || w_off > size || w_bytes != size - w_off ||
	    w_off < cubin_off || w_off % PAGE)
		return "bad section offsets";
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	if (XXH3_64bits(data + HEADER, w_off - HEADER) != sum)
		return "checksum mismatch";
#else
	(void)sum; /* the fuzzer's mutations reach the tables */
#endif

	rbuf r = {.p = data + HEADER, .len = meta_len};
	cg_plan_info in = {0};
	getstr(&r, in.version, sizeof in.version);
	getstr(&r, in.source, sizeof in.source);
	in.w_size = get64(&r);
	in.w_mtime_ns = get64(&r);
	in.w_ino = get64(&r);
	get(&r, in.w_hash, 16);
	if (info)
		*info = in;

	p->sm = (int32_t)get32(&r);
	p->arena_bytes = get64(&r);
	p->weight_bytes = get64(&r);
	if (p->weight_bytes != w_bytes || p->arena_bytes > MAX_BYTES)
		return "bad sizes";
	p->weights = w_bytes ? (void *)(data + w_off) : NULL;
	uint64_t nchunks = (w_bytes + WCHUNK - 1) / WCHUNK;
	if (nchunks * 8 > meta_len - r.at)
		return "truncated tables";
	uint64_t *sums = malloc((nchunks ? nchunks : 1) * sizeof *sums);
	if (!sums)
		return "out of memory";
	for (uint64_t i = 0; i < nchunks; i++)
		sums[i] = get64(&r);
	bool weights_ok = cg_check_chunks(data + w_off, w_bytes, sums, nchunks);
	free(sums);
	if (!weights_ok)
		return "checksum mismatch in the weights";
	p->nbufs = get32(&r);
	if (r.bad || p->nbufs > MAX_COUNT || (size_t)p->nbufs * 16 > meta_len)
		return "bad buffer count";
	if (!(p->bufs = calloc(p->nbufs ? p->nbufs : 1, sizeof *p->bufs)))
		return "out of memory";
	for (uint32_t i = 0; i < p->nbufs && !r.bad; i++) {
		cg_buf *x = &p->bufs[i];
		x->where = (cg_where)get32(&r);
		x->dtype = (ir_dtype)get32(&r);
		x->rank = (int32_t)get32(&r);
		geti64s(&r, x->shape, IR_MAX_RANK);
		geti64s(&r, x->strides, IR_MAX_RANK);
		x->bytes = get64(&r);
		x->offset = get64(&r);
		x->index = get32(&r);
		if ((unsigned)x->dtype >= IR_NDTYPES || !shape_ok(x->rank, x->shape) || x->bytes > MAX_BYTES)
			return "bad buffer";
		switch (x->where) {
		case CG_IN_ARENA:
			if (x->offset > p->arena_bytes || x->bytes > p->arena_bytes - x->offset)
				return "a buffer lies outside the arena";
			break;
		case CG_IN_WEIGHT:
			if (x->offset > p->weight_bytes || x->bytes > p->weight_bytes - x->offset)
				return "a buffer lies outside the weight image";
			break;
		case CG_IN_INPUT:
			break; /* index checked against the inputs below */
		case CG_IN_VIEW: {
			if (x->index >= i)
				return "a view names a later buffer";
			const cg_buf *base = &p->bufs[x->index];
			if (x->offset > base->bytes || x->bytes > base->bytes - x->offset)
				return "a view lies outside its buffer";
			break;
		}
		default:
			return "bad buffer location";
		}
	}
	uint32_t nkerns = get32(&r);
	if (r.bad || nkerns > MAX_COUNT || (size_t)nkerns * 16 > meta_len)
		return "bad kernel count";
	if (!(p->kerns = calloc(nkerns ? nkerns : 1, sizeof *p->kerns)))
		return "out of memory";
	p->nkerns = nkerns; /* set once kerns exists: cg_plan_free walks it */
	uint64_t cubin_space = w_off - cubin_off;
	for (uint32_t i = 0; i < p->nkerns && !r.bad; i++) {
		cg_kern *k = &p->kerns[i];
		getstr(&r, k->name, sizeof k->name);
		get(&r, k->spec, 16);
		get(&r, &k->cfg, sizeof k->cfg);
		uint64_t off = get64(&r);
		k->cubin_size = get64(&r);
		if (r.bad || !k->name[0] || off > cubin_space || k->cubin_size > cubin_space - off || !k->cubin_size)
			return "bad kernel";
		for (const char *c = k->name; *c; c++)
			if (!(*c == '_' || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
				return "bad kernel name";
		k->cubin = (void *)(data + cubin_off + off);
		k->ntmaps = get32(&r);
		if (r.bad || k->ntmaps > CG_MAX_TMAPS)
			return "bad tensor map count";
		for (uint32_t t = 0; t < k->ntmaps; t++) {
			cg_tmap *m = &k->tmaps[t];
			m->arg = get32(&r);
			m->dtype = get32(&r);
			m->rank = get32(&r);
			m->swizzle = get32(&r);
			for (int d = 0; d < CG_TMAP_RANK; d++) {
				m->dims[d] = get64(&r);
				m->strides[d] = get64(&r);
				m->box[d] = get32(&r);
			}
			/* the runtime checks the map against its buffer at load */
			if (r.bad || m->arg >= CG_MAX_ARGS || m->rank < 1 || m->rank > CG_TMAP_RANK)
				return "bad tensor map";
		}
	}
	p->nsteps = get32(&r);
	if (r.bad || p->nsteps > MAX_COUNT || (size_t)p->nsteps * 16 > meta_len)
		return "bad step count";
	if (!(p->steps = calloc(p->nsteps ? p->nsteps : 1, sizeof *p->steps)))
		return "out of memory";
	for (uint32_t i = 0; i < p->nsteps && !r.bad; i++) {
		cg_pstep *s = &p->steps[i];
		s->kind = (cg_step_kind)get32(&r);
		getstr(&r, s->op, sizeof s->op);
		s->bytes = getf64(&r);
		s->flops = getf64(&r);
		if (s->kind == CG_LAUNCH) {
			s->kern = get32(&r);
			for (int d = 0; d < 3; d++)
				s->grid[d] = get32(&r);
			for (int d = 0; d < 3; d++)
				s->block[d] = get32(&r);
			s->smem = get32(&r);
			s->nargs = get32(&r);
			if (r.bad || s->kern >= p->nkerns || s->nargs > CG_MAX_ARGS)
				return "bad launch";
			for (int d = 0; d < 3; d++)
				if (!s->grid[d] || !s->block[d] || s->grid[d] > INT32_MAX || s->block[d] > 1024)
					return "bad launch shape";
			if (s->smem > 1024 * 1024)
				return "bad shared memory size";
			for (uint32_t a = 0; a < s->nargs; a++)
				if ((s->args[a] = get32(&r)) >= p->nbufs)
					return "a launch names a missing buffer";
			for (uint32_t t = 0; t < p->kerns[s->kern].ntmaps; t++)
				if (p->kerns[s->kern].tmaps[t].arg >= s->nargs)
					return "a tensor map names a missing argument";
		} else if (s->kind == CG_MATMUL) {
			cg_mm *m = &s->mm;
			m->a = get32(&r);
			m->b = get32(&r);
			m->bias = get32(&r);
			m->out = get32(&r);
			m->c = get32(&r);
			int64_t dims[7];
			geti64s(&r, dims, 7);
			m->batch = dims[0], m->m = dims[1], m->n = dims[2], m->k = dims[3];
			m->stride_a = dims[4], m->stride_b = dims[5], m->stride_c = dims[6];
			m->trans_b = get32(&r) != 0;
			m->dtype = (ir_dtype)get32(&r);
			m->act = (cg_act)get32(&r);
			m->tf32 = get32(&r) != 0;
			get(&r, &m->algo, sizeof m->algo);
			if (m->a >= p->nbufs || m->b >= p->nbufs || m->out >= p->nbufs ||
			    (m->bias != CG_NO_BUF && m->bias >= p->nbufs) || (m->c != CG_NO_BUF && m->c >= p->nbufs) ||
			    (unsigned)m->dtype >= IR_NDTYPES ||
			    (unsigned)m->act > CG_ACT_GELU)
				return "bad matrix product";
			for (int d = 0; d < 7; d++)
				if (dims[d] < 0 || dims[d] > INT32_MAX)
					return "bad matrix product size";
			/* every batch of every operand inside its buffer */
			uint64_t es = ir_dtype_size(m->dtype), last = m->batch ? (uint64_t)m->batch - 1 : 0;
			uint64_t need_a = (last * (uint64_t)m->stride_a + (uint64_t)(m->m * m->k)) * es;
			uint64_t need_b = (last * (uint64_t)m->stride_b + (uint64_t)(m->k * m->n)) * es;
			uint64_t need_c = (last * (uint64_t)m->stride_c + (uint64_t)(m->m * m->n)) * es;
			if (m->batch && (need_a > p->bufs[m->a].bytes || need_b > p->bufs[m->b].bytes ||
					 need_c > p->bufs[m->out].bytes ||
					 (m->c != CG_NO_BUF && need_c > p->bufs[m->c].bytes) ||
					 (m->bias != CG_NO_BUF && (uint64_t)m->n * es > p->bufs[m->bias].bytes)))
				return "a matrix product reaches past its buffers";
		} else {
			return "bad step kind";
		}
	}
	for (int io = 0; io < 2 && !r.bad; io++) {
		uint32_t n = get32(&r);
		if (r.bad || n > MAX_COUNT || (size_t)n * 16 > meta_len)
			return "bad input or output count";
		cg_io *v = calloc(n ? n : 1, sizeof *v);
		if (!v)
			return "out of memory";
		if (io)
			p->outputs = v, p->noutputs = n;
		else
			p->inputs = v, p->ninputs = n;
		for (uint32_t i = 0; i < n && !r.bad; i++) {
			char name[1024];
			getstr(&r, name, sizeof name);
			if (!(v[i].name = strdup(name)))
				return "out of memory";
			v[i].dtype = (ir_dtype)get32(&r);
			v[i].rank = (int32_t)get32(&r);
			geti64s(&r, v[i].shape, IR_MAX_RANK);
			v[i].buf = get32(&r);
			if ((unsigned)v[i].dtype >= IR_NDTYPES || !shape_ok(v[i].rank, v[i].shape) || v[i].buf >= p->nbufs)
				return "bad input or output";
			const cg_buf *b = &p->bufs[v[i].buf];
			if (!io && (b->where != CG_IN_INPUT || b->index != i))
				return "an input is not an input buffer";
		}
	}
	if (r.bad)
		return "truncated tables";
	if (r.at != r.len)
		return "trailing bytes after the tables";
	for (uint32_t i = 0; i < p->nbufs; i++)
		if (p->bufs[i].where == CG_IN_INPUT &&
		    (p->bufs[i].index >= p->ninputs || p->inputs[p->bufs[i].index].buf != i))
			return "an input buffer without its input";
	return NULL;
}

int cg_plan_parse(const void *data, size_t size, cg_plan **out, cg_plan_info *info, sn_err *e)
{
	*out = NULL;
	cg_plan *p = calloc(1, sizeof *p);
	if (!p)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	p->borrowed = true;
	const char *why = parse(data, size, p, info);
	if (why) {
		cg_plan_free(p);
		return sn_errf(e, strcmp(why, "out of memory") ? SN_EINPUT : SN_EINTERNAL, "%s", why);
	}
	*out = p;
	return SN_OK;
}

int cg_plan_read(const char *path, bool nofollow, cg_plan **out, cg_plan_info *info, sn_err *e)
{
	*out = NULL;
	int fd;
	struct stat sb;
	sn_err sub = {0};
	/* a plan larger than this machine's memory cannot be loaded anyway */
	if (sn_open_read(path, nofollow ? SN_F_NOFOLLOW : 0, sn_mem_bytes(), NULL, &fd, &sb, &sub) != SN_OK)
		return sn_errf(e, sub.code, "%s", sub.msg);
	/* in sinter's own folders, only what this user wrote and no one else
	 * could have changed is trusted */
	const char *distrust = NULL;
	if (nofollow && !sn_cache_trusted(&sb, &distrust)) {
		sn_close(fd);
		return sn_errf(e, SN_EINPUT, "%s: %s: not trusted", path, distrust);
	}
	size_t size = (size_t)sb.st_size;
	if (!size) {
		sn_close(fd);
		return sn_errf(e, SN_EINPUT, "%s: not a sinter plan (empty)", path);
	}
	/* Read into private memory, never mapped: a file truncated or
	 * rewritten while it is in use (a package on a network disk, a cache
	 * entry replaced) is then a read error here, not a SIGBUS later when
	 * the runtime touches a page that no longer exists. Anonymous pages,
	 * so the weight image stays 4 KiB aligned and cg_plan_free unmaps it. */
	void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		sn_close(fd);
		char sz[32];
		sn_fmt_bytes(sz, size);
		return sn_errf(e, SN_EENV, "%s: cannot hold the plan's %s in memory: %s", path, sz, strerror(errno));
	}
	int rc = sn_pread_full(fd, map, size, 0, path, &sub);
	sn_close(fd);
	if (rc != SN_OK) {
		munmap(map, size);
		return sn_errf(e, sub.code, "%s", sub.msg);
	}
	cg_plan *p = NULL;
	if (cg_plan_parse(map, size, &p, info, &sub) != SN_OK) {
		munmap(map, size);
		return sn_errf(e, sub.code, "%s: %s", path, sub.msg);
	}
	p->borrowed = false;
	p->map = map;
	p->map_size = size;
	*out = p;
	return SN_OK;
}
