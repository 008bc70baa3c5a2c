/* cuda_measure.c: the autotuner's measuring (cuda_tune.c decides).
 * Candidates are compiled with NVRTC on every core (through the kernel
 * cache), a chunk of items at a time; each runs once on random inputs and
 * must match the default's output, then is timed (median of AT_REPS runs,
 * the L2 flushed before each). A candidate that fails to compile, to
 * launch, to match, or runs far slower than the default is scored out.
 * The whole budget and each item's cap are checked before every
 * candidate. */
#include "autotune/cuda_tune_impl.h"

#include "ir/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AT_REPS 7          /* timed runs per candidate (median) */
#define AT_TOO_SLOW 8.0    /* a candidate this many times the default's time is dropped */

/* ---- random data and comparisons ---- */

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Values that make every op well defined and every bit count: floats of
 * either sign in [2^-5, 2) (no zeros, no subnormals), integers 1..9,
 * bools 0 or 1. */
static void fill(void *buf, size_t bytes, ir_dtype t, uint64_t *seed)
{
	size_t es = ir_dtype_size(t), n = bytes / es;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = next(seed);
		/* the sign from bit 63, the mantissa from bits 8.., the exponent's
		 * offset in [0, 5) from bits 32..47 scaled (no division: buffers
		 * have tens of millions of elements) */
		uint64_t sg = r >> 63, e5 = ((r >> 32) & 0xffff) * 5 >> 16;
		switch (t) {
		case IR_F32: {
			uint32_t v = (uint32_t)(sg << 31 | (122 + e5) << 23 | ((r >> 8) & 0x7fffff));
			memcpy((char *)buf + 4 * i, &v, 4);
			break;
		}
		case IR_BF16: {
			uint16_t v = (uint16_t)(sg << 15 | (122 + e5) << 7 | ((r >> 8) & 0x7f));
			memcpy((char *)buf + 2 * i, &v, 2);
			break;
		}
		case IR_F16: {
			uint16_t v = (uint16_t)(sg << 15 | (10 + e5) << 10 | ((r >> 8) & 0x3ff));
			memcpy((char *)buf + 2 * i, &v, 2);
			break;
		}
		case IR_F8E4M3: ((uint8_t *)buf)[i] = (uint8_t)(sg << 7 | (3 + ((r >> 32) & 3)) << 3 | ((r >> 8) & 7)); break;
		case IR_F8E5M2: ((uint8_t *)buf)[i] = (uint8_t)(sg << 7 | (10 + e5) << 2 | ((r >> 8) & 3)); break;
		case IR_BOOL: ((uint8_t *)buf)[i] = (uint8_t)(r & 1); break;
		default: ir_store(t, buf, i, (double)(1 + r % 9)); break;
		}
	}
}

/* Element i of a float buffer of type t (f32, f16, bf16) as a float,
 * inline: matches walks tens of millions of them. */
static inline float load_f(ir_dtype t, const void *p, size_t i)
{
	uint32_t u;
	float f;
	if (t == IR_F32) {
		memcpy(&f, (const char *)p + 4 * i, 4);
		return f;
	}
	uint16_t h;
	memcpy(&h, (const char *)p + 2 * i, 2);
	if (t == IR_BF16) {
		u = (uint32_t)h << 16;
		memcpy(&f, &u, 4);
		return f;
	}
	return (float)ir_load(t, p, i);
}

/* Whether got matches want (n elements of t): bit for bit, or within
 * rtol (relative to each value, or to the largest when scale). */
static bool matches(ir_dtype t, const void *want, const void *got, size_t n, double rtol, bool scale)
{
	if (!memcmp(want, got, n * ir_dtype_size(t)))
		return true;
	if (!ir_dtype_is_float(t))
		return false;
	bool fast = t == IR_F32 || t == IR_BF16; /* others through ir_load */
	double big = 0;
	if (scale)
		for (size_t i = 0; i < n; i++) {
			double a = fabs(fast ? (double)load_f(t, want, i) : ir_load(t, want, i));
			if (isfinite(a) && a > big)
				big = a;
		}
	for (size_t i = 0; i < n; i++) {
		double a = fast ? (double)load_f(t, want, i) : ir_load(t, want, i);
		double b = fast ? (double)load_f(t, got, i) : ir_load(t, got, i);
		if (isnan(a) || isnan(b)) {
			if (isnan(a) != isnan(b))
				return false;
			continue;
		}
		if (isinf(a) || isinf(b)) {
			if (a != b)
				return false;
			continue;
		}
		double tol = scale ? rtol * big + 1e-30 : 1e-6 + rtol * fabs(a);
		if (fabs(a - b) > tol)
			return false;
	}
	return true;
}

static double rtol_of(ir_dtype t, bool tf32)
{
	switch (t) {
	case IR_F32: return tf32 ? 2e-2 : 1e-4;
	case IR_F16:
	case IR_BF16: return 2e-2;
	default: return 0.15;
	}
}

/* ---- measuring ---- */

/* Device buffers with random contents and a pristine copy of each (to
 * restore those a run writes). */
typedef struct bufs {
	unsigned n;
	CUdeviceptr d[CG_MAX_ARGS + 2], keep[CG_MAX_ARGS + 2];
	ir_dtype t[CG_MAX_ARGS + 2];
	size_t bytes[CG_MAX_ARGS + 2];
	bool written[CG_MAX_ARGS + 2]; /* the default's run changed it */
	void *host[CG_MAX_ARGS + 2];   /* written: the default's result (host check) */
	CUdeviceptr want[CG_MAX_ARGS + 2]; /* written: the default's result (device check) */
} bufs;

static void bufs_free(at_tuner *tu, bufs *b)
{
	for (unsigned i = 0; i < b->n; i++) {
		rt_dev_free(tu->c, b->d[i]);
		rt_dev_free(tu->c, b->keep[i]);
		if (b->want[i])
			rt_dev_free(tu->c, b->want[i]);
		free(b->host[i]);
	}
	memset(b, 0, sizeof *b);
}

/* Whether b can be checked on the device. */
static bool on_device(const at_tuner *tu, const bufs *b)
{
	bool ok = tu->chk != NULL;
	for (unsigned i = 0; ok && i < b->n; i++)
		ok = at_check_takes(b->t[i]);
	return ok;
}

static int bufs_make(at_tuner *tu, bufs *b, sn_err *e)
{
	if (on_device(tu, b)) {
		for (unsigned i = 0; i < b->n; i++) {
			size_t n = b->bytes[i] / ir_dtype_size(b->t[i]);
			uint64_t seed = next(&tu->seed);
			if (rt_dev_alloc(tu->c, b->bytes[i], &b->d[i], e) || rt_dev_alloc(tu->c, b->bytes[i], &b->keep[i], e) ||
			    at_check_fill(tu->chk, b->d[i], b->t[i], n, seed, e) ||
			    rt_dev_copy(tu->c, b->keep[i], b->d[i], b->bytes[i], e))
				return e->code;
		}
		return SN_OK;
	}
	for (unsigned i = 0; i < b->n; i++) {
		void *h = malloc(b->bytes[i] ? b->bytes[i] : 1);
		if (!h)
			return sn_errf(e, SN_EINTERNAL, "out of memory");
		fill(h, b->bytes[i], b->t[i], &tu->seed);
		int rc = rt_dev_alloc(tu->c, b->bytes[i], &b->d[i], e) || rt_dev_alloc(tu->c, b->bytes[i], &b->keep[i], e) ||
			 rt_dev_upload(tu->c, b->d[i], h, b->bytes[i], e) || rt_dev_upload(tu->c, b->keep[i], h, b->bytes[i], e);
		b->host[i] = h; /* the initial contents until the default's run */
		if (rc)
			return e->code;
	}
	return SN_OK;
}

/* Puts back what a run wrote. */
static int bufs_restore(at_tuner *tu, bufs *b, sn_err *e)
{
	for (unsigned i = 0; i < b->n; i++)
		if (b->written[i] && rt_dev_copy(tu->c, b->d[i], b->keep[i], b->bytes[i], e))
			return e->code;
	return SN_OK;
}

/* After the default's run: which buffers it wrote (kept as the results
 * to match). */
static int bufs_mark(at_tuner *tu, bufs *b, sn_err *e)
{
	if (on_device(tu, b)) {
		for (unsigned i = 0; i < b->n; i++) {
			uint64_t bad;
			size_t n = b->bytes[i] / ir_dtype_size(b->t[i]);
			if (at_check_diff(tu->chk, b->keep[i], b->d[i], b->t[i], n, -1, false, &bad, e))
				return e->code;
			b->written[i] = bad > 0;
			if (b->written[i] && (rt_dev_alloc(tu->c, b->bytes[i], &b->want[i], e) ||
					      rt_dev_copy(tu->c, b->want[i], b->d[i], b->bytes[i], e)))
				return e->code;
		}
		return SN_OK;
	}
	for (unsigned i = 0; i < b->n; i++) {
		void *h = malloc(b->bytes[i] ? b->bytes[i] : 1);
		if (!h || rt_dev_download(tu->c, h, b->d[i], b->bytes[i], e)) {
			free(h);
			return e->code ? e->code : sn_errf(e, SN_EINTERNAL, "out of memory");
		}
		b->written[i] = memcmp(h, b->host[i], b->bytes[i]) != 0;
		free(b->host[i]);
		b->host[i] = b->written[i] ? h : NULL;
		if (!b->written[i])
			free(h);
	}
	return SN_OK;
}

/* Whether the last run wrote what the default's did. */
static bool bufs_match(at_tuner *tu, bufs *b, double rtol, bool scale, sn_err *e)
{
	bool ok = true;
	if (on_device(tu, b)) {
		for (unsigned i = 0; i < b->n && ok; i++) {
			uint64_t bad = 0;
			size_t n = b->bytes[i] / ir_dtype_size(b->t[i]);
			ok = !b->written[i] || (at_check_diff(tu->chk, b->want[i], b->d[i], b->t[i], n, rtol, scale, &bad, e) ==
							SN_OK &&
						bad == 0);
		}
		return ok;
	}
	for (unsigned i = 0; i < b->n && ok; i++) {
		if (!b->written[i])
			continue;
		void *h = malloc(b->bytes[i] ? b->bytes[i] : 1);
		ok = h && rt_dev_download(tu->c, h, b->d[i], b->bytes[i], e) == SN_OK &&
		     matches(b->t[i], b->host[i], h, b->bytes[i] / ir_dtype_size(b->t[i]), rtol, scale);
		free(h);
	}
	return ok;
}

typedef struct klaunch {
	CUtensorMap tm[CG_MAX_TMAPS]; /* first: CUtensorMap is 128-byte aligned */
	rt_kfn *k;
	const at_cand *c;
	CUdeviceptr args[CG_MAX_ARGS];
} klaunch;

static int launch_kernel(void *ctx, sn_err *e)
{
	klaunch *l = ctx;
	return rt_kfn_launch_tm(l->k, l->c->grid, l->c->block, l->c->smem, l->args, l->c->nargs, l->tm, l->c->ntmaps, e);
}

/* The candidate's tensor maps (the TMA variant's), over the buffers it is
 * launched with (lbytes: their sizes); false when one cannot be encoded. */
static bool encode_tmaps(at_tuner *tu, klaunch *l, const size_t *lbytes, sn_err *e)
{
	const at_cand *c = l->c;
	for (unsigned t = 0; t < c->ntmaps; t++) {
		unsigned a = c->tmaps[t].arg;
		if (a >= c->nargs || rt_tmap_encode(tu->c, &c->tmaps[t], l->args[a], lbytes[a], &l->tm[t], e) != SN_OK)
			return false;
	}
	return true;
}

typedef struct blaunch {
	rt_blas *b;
	rt_gemm *gm;
	CUdeviceptr a, bm, bias, cm, out;
	CUstream s;
} blaunch;

static int launch_gemm(void *ctx, sn_err *e)
{
	blaunch *l = ctx;
	return rt_gemm_run_c(l->b, l->gm, l->a, l->bm, l->bias, l->cm, l->out, l->s, e);
}

static bool over(const at_tuner *tu, double tk)
{
	double t = sn_now();
	return t - tu->t0 >= tu->budget || t - tk >= tu->cap;
}

/* A device error leaves the context unusable: only those stop the tuner. */
bool at_fatal(const sn_err *e)
{
	return strstr(e->msg, "CUDA_ERROR_ILLEGAL") || strstr(e->msg, "CUDA_ERROR_LAUNCH_FAILED") ||
	       strstr(e->msg, "CUDA_ERROR_MISALIGNED") || strstr(e->msg, "CUDA_ERROR_HARDWARE") ||
	       strstr(e->msg, "CUDA_ERROR_LAUNCH_TIMEOUT");
}

/* One candidate (index i of x): checked against the default's results
 * (i = 0: the default's run records them), then timed unless x is decided
 * by a record. */
static int try_cand(at_tuner *tu, at_item *x, size_t i, bufs *b, int (*launch)(void *, sn_err *), void *ctx, double rtol,
		    bool scale, sn_err *e)
{
	at_cand *c = &x->c[i];
	sn_err le = {0};
	bool ok = bufs_restore(tu, b, &le) == SN_OK && launch(ctx, &le) == SN_OK && rt_sync(tu->c, &le) == SN_OK;
	if (ok && i == 0)
		ok = bufs_mark(tu, b, &le) == SN_OK;
	else if (ok)
		ok = bufs_match(tu, b, rtol, scale, &le);
	double med = 0, mx = 0;
	if (ok && !x->record) {
		ok = rt_time(tu->tm, launch, ctx, AT_REPS, &med, &mx, &le) == SN_OK;
		tu->s->timings += ok;
		tu->s->candidates += ok && i > 0;
		if (ok && i > 0 && med > AT_TOO_SLOW * x->c[0].ms + 1.0)
			ok = false;
	}
	if (le.code && at_fatal(&le))
		return sn_errf(e, SN_EINTERNAL, "autotuning: %s: %s", x->kind == AT_BLAS ? "cuBLASLt" : c->name, le.msg);
	c->ok = ok;
	c->ms = med;
	tu->s->failed += !ok && i > 0;
	return SN_OK;
}

int at_measure_kernel(at_tuner *tu, at_item *x, sn_err *e)
{
	const cg_plan *p = tu->p;
	at_cand *d = &x->c[0];
	bufs b = {.n = d->nargs};
	for (unsigned i = 0; i < b.n; i++) {
		const cg_buf *pb = &p->bufs[d->args[i]];
		b.t[i] = pb->dtype;
		b.bytes[i] = (size_t)pb->bytes;
	}
	int rc = bufs_make(tu, &b, e);
	double tk = sn_now();
	for (size_t i = 0; !rc && i < x->nc; i++) {
		at_cand *c = &x->c[i];
		if (i > 0 && !x->record && over(tu, tk)) {
			tu->s->budget_out |= sn_now() - tu->t0 >= tu->budget;
			break;
		}
		rt_kfn *k = NULL;
		sn_err le = {0};
		if (!c->cubin || rt_kfn_load(tu->c, c->cubin, c->name, c->smem, &k, &le) != SN_OK) {
			if (le.code && at_fatal(&le))
				rc = sn_errf(e, SN_EINTERNAL, "autotuning: %s", le.msg);
			tu->s->failed += i > 0;
			if (i == 0)
				break; /* no default: nothing to compare with */
			continue;
		}
		/* the same buffer in two places is one allocation */
		klaunch l = {.k = k, .c = c};
		size_t lbytes[CG_MAX_ARGS] = {0};
		for (unsigned a = 0; a < c->nargs; a++)
			for (unsigned j = 0; j < b.n; j++)
				if (c->args[a] == d->args[j]) {
					l.args[a] = b.d[j];
					lbytes[a] = b.bytes[j];
					break;
				}
		if (!encode_tmaps(tu, &l, lbytes, &le)) {
			rt_kfn_free(k);
			tu->s->failed += i > 0;
			if (i == 0)
				break;
			continue;
		}
		/* a contraction's candidates add in other orders (split-K, k
		 * groups, other slices): its output is matched relative to its
		 * largest value, as a product's is; other kernels element by
		 * element */
		bool contract = p->steps[x->step].flops > 0;
		rc = try_cand(tu, x, i, &b, launch_kernel, &l, rtol_of(b.t[b.n - 1], contract && tu->t->tf32), contract,
			      e);
		rt_kfn_free(k);
		if (i == 0 && !c->ok)
			break;
	}
	bufs_free(tu, &b);
	return rc;
}

/* Candidate i of product item x, the GEMM template's kernel: its
 * arguments are the product's buffers, so it runs on b's. */
static int measure_mm_kernel(at_tuner *tu, at_item *x, size_t i, const cg_mm *g, bufs *b, sn_err *e)
{
	at_cand *c = &x->c[i];
	rt_kfn *k = NULL;
	sn_err le = {0};
	if (!c->cubin || rt_kfn_load(tu->c, c->cubin, c->name, c->smem, &k, &le) != SN_OK) {
		tu->s->failed++;
		return le.code && at_fatal(&le) ? sn_errf(e, SN_EINTERNAL, "autotuning: %s", le.msg) : SN_OK;
	}
	klaunch l = {.k = k, .c = c};
	size_t lbytes[CG_MAX_ARGS] = {0};
	for (unsigned a = 0; a < c->nargs; a++) {
		uint32_t id = c->args[a];
		unsigned r = id == g->a ? 0 : id == g->b ? 1 : id == g->out ? 2 : id == g->bias ? 3 : 4;
		l.args[a] = b->d[r];
		lbytes[a] = b->bytes[r];
	}
	if (!encode_tmaps(tu, &l, lbytes, &le)) {
		rt_kfn_free(k);
		tu->s->failed++;
		return SN_OK;
	}
	int rc = try_cand(tu, x, i, b, launch_kernel, &l, rtol_of(g->dtype, g->tf32), true, e);
	rt_kfn_free(k);
	return rc;
}

int at_measure_blas(at_tuner *tu, at_item *x, sn_err *e)
{
	const cg_mm *g = &tu->p->steps[x->step].mm;
	size_t es = ir_dtype_size(g->dtype);
	int64_t nb = g->batch > 1 ? g->batch - 1 : 0;
	bufs b = {.n = 5};
	b.bytes[0] = (size_t)(nb * g->stride_a + g->m * g->k) * es;
	b.bytes[1] = (size_t)(nb * g->stride_b + g->k * g->n) * es;
	b.bytes[2] = (size_t)(nb * g->stride_c + g->m * g->n) * es; /* out */
	b.bytes[3] = g->bias != CG_NO_BUF ? (size_t)g->n * es : 0;
	b.bytes[4] = g->c != CG_NO_BUF ? b.bytes[2] : 0;
	for (int i = 0; i < 5; i++)
		b.t[i] = g->dtype;
	int rc = bufs_make(tu, &b, e);
	double tk = sn_now();
	for (size_t i = 0; !rc && i < x->nc; i++) {
		at_cand *c = &x->c[i];
		if (i > 0 && !x->record && over(tu, tk)) {
			tu->s->budget_out |= sn_now() - tu->t0 >= tu->budget;
			break;
		}
		if (c->kern) {
			rc = measure_mm_kernel(tu, x, i, g, &b, e);
			continue;
		}
		cg_mm m = *g;
		m.algo = c->algo;
		rt_gemm *gm = NULL;
		cg_blas_algo used;
		sn_err le = {0};
		if (rt_gemm_prepare(tu->blas, &m, &gm, &used, &le) != SN_OK || !at_same_algo(&used, &c->algo)) {
			rt_gemm_free(gm);
			tu->s->failed += i > 0;
			if (i == 0)
				break;
			continue; /* cublasLtMatmulAlgoCheck refused it here */
		}
		blaunch l = {.b = tu->blas, .gm = gm, .a = b.d[0], .bm = b.d[1], .out = b.d[2],
			     .bias = g->bias != CG_NO_BUF ? b.d[3] : 0, .cm = g->c != CG_NO_BUF ? b.d[4] : 0,
			     .s = tu->c->stream};
		rc = try_cand(tu, x, i, &b, launch_gemm, &l, rtol_of(g->dtype, g->tf32), true, e);
		rt_gemm_free(gm);
		if (i == 0 && !c->ok)
			break;
	}
	bufs_free(tu, &b);
	return rc;
}

/* Compiles, in parallel as one NVRTC batch, the kernel candidates of
 * items[0..n) that have no cubin yet (all of an item's when all is set,
 * else only its default, c[0]), and, when plan is set, every kernel of
 * the plan no item runs (straight into the plan). A batch that fails is
 * compiled job by job, so one bad candidate only scores itself out. */
void at_compile(at_tuner *tu, at_item *items, size_t n, const bool *all, bool plan)
{
	cg_plan *p = tu->p;
	bool *ours = plan ? calloc(p->nkerns ? p->nkerns : 1, 1) : NULL;
	if (plan && !ours)
		return;
	for (size_t i = 0; plan && i < n; i++)
		if (items[i].kind == AT_KERNEL)
			ours[items[i].kern] = true;
	size_t nj = 0;
	for (size_t i = 0; i < n; i++)
		nj += items[i].nc; /* products: their template kernels */
	for (uint32_t k = 0; plan && k < p->nkerns; k++)
		nj += !ours[k] && !p->kerns[k].cubin;
	nj += plan;
	rt_job *jobs = calloc(nj ? nj : 1, sizeof *jobs);
	at_cand **who = calloc(nj ? nj : 1, sizeof *who);
	cg_kern **kwho = calloc(nj ? nj : 1, sizeof *kwho);
	if (!jobs || !who || !kwho) {
		free(jobs);
		free(who);
		free(kwho);
		free(ours);
		return;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t c = 0; c < items[i].nc && (c == 0 || !all || all[i]); c++) {
			if (items[i].c[c].cubin || !items[i].c[c].src)
				continue;
			jobs[k].name = items[i].c[c].name;
			jobs[k].src = items[i].c[c].src;
			who[k++] = &items[i].c[c];
		}
	for (uint32_t q = 0; plan && q < p->nkerns; q++)
		if (!ours[q] && !p->kerns[q].cubin && p->kerns[q].src) {
			jobs[k].name = p->kerns[q].name;
			jobs[k].src = p->kerns[q].src;
			kwho[k++] = &p->kerns[q];
		}
	size_t chk = SIZE_MAX; /* the check kernels, with the first batch */
	if (plan && !tu->chk_cubin) {
		jobs[k].name = AT_CHECK_JOB;
		jobs[k].src = at_check_src();
		chk = k++;
	}
	nj = k;
	sn_err e = {0};
	rt_compile_stats cs;
	if (nj && rt_compile_all(tu->nv, jobs, nj, tu->c->sm, tu->o->cache_dir, 0, NULL, tu->o->warn, tu->o->ctx, &cs,
				 &e) != SN_OK) {
		for (size_t j = 0; j < nj; j++) {
			sn_err e1 = {0};
			rt_compile_all(tu->nv, &jobs[j], 1, tu->c->sm, tu->o->cache_dir, 1, NULL, tu->o->warn, tu->o->ctx,
				       NULL, &e1);
		}
	}
	for (size_t j = 0; j < nj; j++) {
		if (j == chk) {
			tu->chk_cubin = jobs[j].cubin;
			tu->chk_size = jobs[j].size;
		} else if (who[j]) {
			who[j]->cubin = jobs[j].cubin;
			who[j]->cubin_size = jobs[j].size;
		} else {
			kwho[j]->cubin = jobs[j].cubin; /* the plan's own: compile_kernels skips it */
			kwho[j]->cubin_size = jobs[j].size;
		}
		jobs[j].cubin = NULL;
	}
	rt_jobs_free(jobs, nj);
	free(jobs);
	free(who);
	free(kwho);
	free(ours);
}
