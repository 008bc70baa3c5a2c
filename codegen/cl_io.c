/* cl_io.c: cpu plan files (cl.h, "cpu plan files"), the plan cache's
 * entries for --device cpu. The plan's tables are stored; its graph as
 * canonical .sir text (parsed and verified again on reading); its
 * compiled code as the keys of its objects in the kernel cache; its
 * weight image on a page boundary at the end, mapped by the reader. The
 * reader trusts nothing: every count, index, offset and size is checked
 * before the plan reaches the runtime. */
#include "codegen/cl.h"
#include "codegen/plan_bytes.h"
#include "frontend/sir.h"
#include "ir/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

static const char MAGIC[8] = {'S', 'I', 'N', 'T', 'C', 'P', 'U', 'P'};
enum { HEADER = 64, PAGE = 4096 };
#define MAX_COUNT (1u << 24)
#define MAX_BYTES ((uint64_t)1 << 40)

/* ---- writing ---- */

static void putbytes(wbuf *b, const void *s, size_t n)
{
	put64(b, n);
	put(b, s, n);
}
static void putstr(wbuf *b, const char *s)
{
	putbytes(b, s ? s : "", s ? strlen(s) : 0);
}

static uint64_t nchunks(uint64_t bytes)
{
	return (bytes + WCHUNK - 1) / WCHUNK;
}

/* The graph's text parsed back must be the same graph node for node (the
 * steps name nodes by index): true when it is. */
static bool round_trips(const ir_graph *g, const char *text, size_t len)
{
	ir_graph *h = NULL;
	sn_err e = {0};
	if (sir_parse(text, len, "<cpu plan>", NULL, 0, &h, &e) != SN_OK)
		return false;
	bool ok = h->nnodes == g->nnodes && h->ninputs == g->ninputs && h->noutputs == g->noutputs;
	for (ir_ref r = 0; ok && r < g->nnodes; r++) {
		const ir_node *a = &g->nodes[r], *b = &h->nodes[r];
		ok = a->op == b->op && a->dtype == b->dtype && ir_shape_eq(&a->shape, &b->shape) && a->nin == b->nin &&
		     (!a->nin || !memcmp(a->in, b->in, a->nin * sizeof *a->in));
	}
	for (uint32_t i = 0; ok && i < g->ninputs; i++)
		ok = g->inputs[i] == h->inputs[i];
	for (uint32_t i = 0; ok && i < g->noutputs; i++)
		ok = g->outputs[i] == h->outputs[i];
	ir_graph_free(h);
	return ok;
}

static void put_meta(wbuf *b, const cl_plan *p, const cg_plan_info *info, const char *text, size_t tlen, bool package)
{
	putstr(b, info->version);
	putstr(b, info->source);
	put64(b, info->w_size);
	put64(b, info->w_mtime_ns);
	put64(b, info->w_ino);
	put(b, info->w_hash, 16);
	putbytes(b, text, tlen);
	const ir_graph *g = p->g;
	put32(b, g->nnodes);
	for (ir_ref r = 0; r < g->nnodes; r++) {
		put32(b, p->vals[r].where);
		put64(b, p->vals[r].offset);
		put32(b, p->vals[r].index);
	}
	const fu_plan *fp = &p->fp;
	put32(b, fp->ngroups);
	for (uint32_t i = 0; i < fp->ngroups; i++) {
		const fu_group *gr = &fp->groups[i];
		put32(b, gr->kind);
		put32(b, gr->root);
		put32(b, gr->core);
		put32(b, gr->first);
		put32(b, gr->n);
		put32(b, gr->bias);
		put32(b, gr->residual);
		put32(b, gr->act);
	}
	put32(b, fp->nmembers);
	for (uint32_t i = 0; i < fp->nmembers; i++)
		put32(b, fp->members[i]);
	for (ir_ref r = 0; r < g->nnodes; r++) {
		put32(b, fp->group_of[r]);
		put(b, &fp->stored[r], 1);
		put(b, &fp->free_[r], 1);
	}
	put32(b, p->nsteps);
	for (uint32_t i = 0; i < p->nsteps; i++) {
		const cl_step *s = &p->steps[i];
		put32(b, s->kind);
		putstr(b, s->op);
		put32(b, s->group);
		put32(b, s->node);
		put32(b, (uint32_t)s->fn);
		put32(b, s->nargs);
		for (uint32_t k = 0; k < CL_MAX_ARGS; k++)
			put32(b, k < s->nargs ? s->args[k] : IR_NONE);
		put64(b, (uint64_t)s->rows);
		put64(b, (uint64_t)s->inner);
		put32(b, s->a);
		put32(b, s->b);
		put32(b, s->bias);
		put32(b, s->c);
		put32(b, s->out);
		const int64_t dims[] = {s->batch, s->m, s->n, s->k, s->sa, s->sb, s->sc};
		for (size_t k = 0; k < SN_COUNT(dims); k++)
			put64(b, (uint64_t)dims[k]);
		put32(b, s->trans_b);
		put32(b, (uint32_t)s->act);
	}
	put64(b, p->arena_bytes);
	put64(b, p->weight_bytes);
	put32(b, p->nfns);
	for (uint32_t i = 0; i < p->nfns; i++)
		putstr(b, p->fns[i]);
	for (int k = 0; k < CL_NMOD; k++) {
		uint8_t has = p->has_obj[k];
		put(b, &has, 1);
		put(b, p->objkey[k], 16);
	}
	/* format 2: the host the objects were compiled for, and in a package
	 * the objects themselves (a cache entry's are in the kernel cache) */
	putstr(b, p->host);
	for (int k = 0; k < CL_NMOD; k++)
		putbytes(b, package ? p->obj[k] : NULL, package ? (size_t)p->obj_size[k] : 0);
	const uint32_t counts[] = {p->nref, p->nkernel, p->ngemm, p->nconv, p->nattn, p->npool, p->ngather};
	for (size_t k = 0; k < SN_COUNT(counts); k++)
		put32(b, counts[k]);
	uint64_t nc = nchunks(p->weight_bytes);
	put64(b, nc);
	for (uint64_t i = 0; i < nc; i++) {
		uint64_t off = i * WCHUNK, n = p->weight_bytes - off < WCHUNK ? p->weight_bytes - off : WCHUNK;
		put64(b, XXH3_64bits((const uint8_t *)p->weights + off, n));
	}
}

static int write_file(const char *path, const cl_plan *p, const cg_plan_info *info, bool package, sn_err *e)
{
	for (int k = 0; k < CL_NMOD; k++)
		if (p->llmod[k])
			return sn_errf(e, SN_EINTERNAL, "cpu plan: its modules are not compiled yet");
	for (int k = 0; package && k < CL_NMOD; k++)
		if (p->has_obj[k] && (!p->obj[k] || !p->obj_size[k]))
			return sn_errf(e, SN_EINTERNAL, "cpu plan: its objects were not kept for the package");
	if (p->weight_bytes && !p->weights)
		return sn_errf(e, SN_EINTERNAL, "cpu plan: the weight image is gone");
	sn_buf text = {0};
	ir_print(p->g, &text);
	if (text.oom) {
		sn_buf_free(&text);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	if (!round_trips(p->g, text.s ? text.s : "", text.len)) {
		sn_buf_free(&text);
		return sn_errf(e, SN_EINTERNAL, "cpu plan: its graph does not read back node for node from its text");
	}
	wbuf meta = {0};
	put_meta(&meta, p, info, text.s, text.len, package);
	sn_buf_free(&text);
	if (meta.oom) {
		free(meta.p);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	uint64_t w_off = (HEADER + meta.len + PAGE - 1) / PAGE * PAGE;
	uint64_t total = w_off + p->weight_bytes;
	static const uint8_t pad[PAGE];
	size_t npad = (size_t)(w_off - HEADER - meta.len);
	uint64_t sum = XXH3_64bits(meta.p, meta.len);
	uint8_t h[HEADER] = {0};
	memcpy(h, MAGIC, 8);
	uint32_t fmt = CL_PLAN_FORMAT;
	uint64_t meta_len = meta.len;
	memcpy(h + 8, &fmt, 4);
	memcpy(h + 16, &total, 8);
	memcpy(h + 24, &sum, 8);
	memcpy(h + 32, &meta_len, 8);
	memcpy(h + 40, &w_off, 8);
	memcpy(h + 48, &p->weight_bytes, 8);
	/* the one writer (ir/file.h): a unique temp file, fsync, rename; an
	 * entry is never rewritten in place, so a reader's mapping of the old
	 * one stays whole. A plan cache entry is not fsynced: its reader
	 * checks the tables' and the weight image's XXH3 and rebuilds a bad
	 * entry, so a crash costs at most the entry, and the fsync of
	 * ResNet-50's 102 MB took 0.12-0.29 s of a 1.5-1.9 s cold compile
	 * (docs/PERF.md); a package is the user's output and is synced */
	sn_out out = {0};
	int rc = sn_out_open(&out, path, 0644, e);
	out.no_sync = !package;
	if (rc == SN_OK) {
		sn_out_write(&out, h, HEADER);
		sn_out_write(&out, meta.p, meta.len);
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

int cl_plan_write(const char *path, const cl_plan *p, const cg_plan_info *info, sn_err *e)
{
	return write_file(path, p, info, false, e);
}

int cl_package_write(const char *path, const cl_plan *p, const cg_plan_info *info, sn_err *e)
{
	return write_file(path, p, info, true, e);
}

bool cl_is_cpu_plan(const void *head, size_t n)
{
	return n >= 8 && !memcmp(head, MAGIC, 8);
}

/* ---- reading ---- */

/* n bytes in place (borrowed), their length first. */
static const char *getbytes(rbuf *r, size_t *n)
{
	uint64_t len = get64(r);
	if (r->bad || r->len - r->at < len) {
		r->bad = true;
		*n = 0;
		return "";
	}
	const char *s = (const char *)r->p + r->at;
	r->at += len;
	*n = (size_t)len;
	return s;
}
/* A string into out[cap]; longer ones and embedded NULs are bad. */
static void getstr(rbuf *r, char *out, size_t cap)
{
	size_t n;
	const char *s = getbytes(r, &n);
	if (r->bad || n >= cap || memchr(s, 0, n)) {
		r->bad = true;
		out[0] = 0;
		return;
	}
	memcpy(out, s, n);
	out[n] = 0;
}

static uint64_t node_bytes(const ir_node *n)
{
	return (uint64_t)ir_numel(&n->shape) * ir_dtype_size(n->dtype);
}

static bool ref_ok(const ir_graph *g, ir_ref r, bool none_ok)
{
	return r < g->nnodes || (none_ok && r == IR_NONE);
}

/* Whether the buffer of node r holds at least need bytes. */
static bool holds(const cl_plan *p, ir_ref r, uint64_t need)
{
	return r == IR_NONE || node_bytes(&p->g->nodes[r]) >= need;
}

/* Every node's place fits its buffer; views name earlier nodes. */
static const char *check_vals(const cl_plan *p)
{
	const ir_graph *g = p->g;
	for (ir_ref r = 0; r < g->nnodes; r++) {
		const cl_val *v = &p->vals[r];
		uint64_t nb = node_bytes(&g->nodes[r]);
		switch (v->where) {
		case CL_NOWHERE: break;
		case CL_ARENA:
			if (v->offset > p->arena_bytes || p->arena_bytes - v->offset < nb || v->offset % 4)
				return "a buffer outside the arena";
			break;
		case CL_WEIGHT:
			if (v->offset > p->weight_bytes || p->weight_bytes - v->offset < nb || v->offset % 4)
				return "a buffer outside the weight image";
			break;
		case CL_INPUT:
			if (v->index >= g->ninputs || g->inputs[v->index] != r)
				return "a bad input index";
			break;
		case CL_VIEW:
			if (v->index >= r || p->vals[v->index].where == CL_NOWHERE ||
			    node_bytes(&g->nodes[v->index]) < nb)
				return "a bad view";
			break;
		default: return "a bad buffer kind";
		}
	}
	for (uint32_t i = 0; i < g->noutputs; i++)
		if (p->vals[g->outputs[i]].where == CL_NOWHERE)
			return "an output without a buffer";
	return NULL;
}

static const char *check_fp(const cl_plan *p)
{
	const ir_graph *g = p->g;
	const fu_plan *fp = &p->fp;
	for (uint32_t i = 0; i < fp->nmembers; i++)
		if (fp->members[i] >= g->nnodes)
			return "a bad group member";
	for (uint32_t i = 0; i < fp->ngroups; i++) {
		const fu_group *gr = &fp->groups[i];
		if (!ref_ok(g, gr->root, false) || !ref_ok(g, gr->core, true) || !ref_ok(g, gr->bias, true) ||
		    !ref_ok(g, gr->residual, true) || gr->first > fp->nmembers || fp->nmembers - gr->first < gr->n ||
		    (unsigned)gr->kind > FU_ROWS || (unsigned)gr->act > FU_ACT_GELU)
			return "a bad fusion group";
	}
	for (ir_ref r = 0; r < g->nnodes; r++)
		if (fp->group_of[r] != FU_NO_GROUP && fp->group_of[r] >= fp->ngroups)
			return "a bad group index";
	return NULL;
}

/* n and its operands all f32 or all bf16: what the runtime's products,
 * convolutions, attention and pooling read (by the output's dtype). */
static bool uniform_float(const ir_graph *g, const ir_node *n)
{
	if (n->dtype != IR_F32 && n->dtype != IR_BF16)
		return false;
	for (uint32_t k = 0; k < n->nin; k++)
		if (g->nodes[n->in[k]].dtype != n->dtype)
			return false;
	return true;
}

/* r is IR_NONE or of dtype t. */
static bool none_or(const ir_graph *g, ir_ref r, ir_dtype t)
{
	return r == IR_NONE || g->nodes[r].dtype == t;
}

static const char *check_step(const cl_plan *p, const cl_step *s)
{
	const ir_graph *g = p->g;
	if ((unsigned)s->kind > CL_GATHER)
		return "a bad step kind";
	if (s->nargs > CL_MAX_ARGS || !ref_ok(g, s->node, false) || s->group >= p->fp.ngroups ||
	    s->fn < -1 || (s->fn >= 0 && (uint32_t)s->fn >= p->nfns) || memchr(s->op, 0, sizeof s->op) == NULL)
		return "a bad step";
	for (uint32_t k = 0; k < s->nargs; k++)
		if (!ref_ok(g, s->args[k], false) || p->vals[s->args[k]].where == CL_NOWHERE)
			return "a step argument without a buffer";
	const ir_ref refs[] = {s->a, s->b, s->bias, s->c, s->out};
	for (size_t k = 0; k < SN_COUNT(refs); k++)
		if (!ref_ok(g, refs[k], true) || (refs[k] != IR_NONE && p->vals[refs[k]].where == CL_NOWHERE))
			return "a step operand without a buffer";
	const ir_node *n = &g->nodes[s->node];
	switch (s->kind) {
	case CL_KERNEL:
		if (s->fn < 0 || s->nargs < 1 || s->rows < 0)
			return "a kernel step without its function";
		break;
	case CL_GEMM: {
		if (s->a == IR_NONE || s->b == IR_NONE || s->out == IR_NONE || s->batch < 1 || s->m < 1 || s->n < 1 ||
		    s->k < 1 || s->sa < 0 || s->sb < 0 || s->sc < 0 || s->m > (int64_t)MAX_BYTES ||
		    s->n > (int64_t)MAX_BYTES || s->k > (int64_t)MAX_BYTES || s->batch > (int64_t)MAX_BYTES ||
		    (unsigned)s->act > 2)
			return "a bad product";
		/* all f32 or all bf16 (the runtime reads them as the output's
		 * dtype), every batch's operands inside their buffers */
		ir_dtype t = g->nodes[s->out].dtype;
		if ((t != IR_F32 && t != IR_BF16) || !none_or(g, s->a, t) || !none_or(g, s->b, t) ||
		    !none_or(g, s->c, t) || !none_or(g, s->bias, t))
			return "a product of another dtype than f32 or bf16";
		uint64_t es = ir_dtype_size(t);
		uint64_t bl = (uint64_t)s->batch - 1, m = (uint64_t)s->m, nn = (uint64_t)s->n, k = (uint64_t)s->k;
		if (!holds(p, s->a, es * (bl * (uint64_t)s->sa + m * k)) ||
		    !holds(p, s->b, es * (bl * (uint64_t)s->sb + k * nn)) ||
		    !holds(p, s->out, es * (bl * (uint64_t)s->sc + m * nn)) ||
		    !holds(p, s->c, es * (bl * (uint64_t)s->sc + m * nn)) || !holds(p, s->bias, es * nn) ||
		    (s->batch > 1 && s->sc < s->m * s->n))
			return "a product outside its buffers";
		break;
	}
	case CL_CONV:
		/* the runtime reads the shapes from the (verified) node */
		if (n->op != IR_OP_conv2d || n->nin < 2 || n->attrs->layout != IR_NHWC || n->shape.rank != 4 ||
		    s->out == IR_NONE || !holds(p, s->out, node_bytes(n)) || !uniform_float(g, n) ||
		    g->nodes[s->out].dtype != n->dtype)
			return "a bad convolution step";
		for (uint32_t k = 0; k < n->nin; k++)
			if (p->vals[n->in[k]].where == CL_NOWHERE)
				return "a convolution operand without a buffer";
		break;
	case CL_ATTN:
		/* the lowering's own test (q, k, v and the optional mask) */
		if (!cl_attn_fits(g, n) || s->out == IR_NONE || !holds(p, s->out, node_bytes(n)) ||
		    g->nodes[s->out].dtype != n->dtype)
			return "a bad attention step";
		for (uint32_t k = 0; k < n->nin; k++)
			if (p->vals[n->in[k]].where == CL_NOWHERE)
				return "an attention operand without a buffer";
		break;
	case CL_POOL:
		if ((n->op != IR_OP_max_pool2d && n->op != IR_OP_global_avg_pool) || s->out == IR_NONE ||
		    !holds(p, s->out, node_bytes(n)) || !uniform_float(g, n) || g->nodes[s->out].dtype != n->dtype ||
		    p->vals[n->in[0]].where == CL_NOWHERE)
			return "a bad pooling step";
		break;
	case CL_GATHER: {
		/* the runtime checks every index against the data's axis */
		const ir_node *ix = &g->nodes[n->in[1]];
		if (n->op != IR_OP_gather || n->nin != 2 || s->b != n->in[0] || s->out == IR_NONE ||
		    !holds(p, s->out, node_bytes(n)) || p->vals[n->in[0]].where == CL_NOWHERE ||
		    (ix->dtype != IR_I64 && ix->dtype != IR_I32) ||
		    (s->a == IR_NONE ? ix->op != IR_OP_iota || ix->shape.rank != 1 : s->a != n->in[1]))
			return "a bad gather step";
		break;
	}
	case CL_REF:
		if (p->vals[p->fp.groups[s->group].root].where == CL_NOWHERE)
			return "a fallback step without its buffer";
		break;
	case CL_SKIP: break;
	}
	return NULL;
}

/* The tables of data[0 .. meta end) into p (allocated here; the weight
 * image is left to the caller). A reason when the file is bad. */
static const char *parse(const uint8_t *data, size_t size, cl_plan *p, cg_plan_info *info, uint64_t *w_off,
			 const uint8_t **sums, uint64_t *nsums, sn_err *e)
{
	if (size < HEADER || memcmp(data, MAGIC, 8))
		return "not a sinter cpu plan";
	uint32_t fmt;
	uint64_t total, sum, meta_len, wb;
	memcpy(&fmt, data + 8, 4);
	memcpy(&total, data + 16, 8);
	memcpy(&sum, data + 24, 8);
	memcpy(&meta_len, data + 32, 8);
	memcpy(w_off, data + 40, 8);
	memcpy(&wb, data + 48, 8);
	static _Thread_local char why[64];
	if (fmt != CL_PLAN_FORMAT) {
		snprintf(why, sizeof why, "format version %u, expected %d", fmt, CL_PLAN_FORMAT);
		return why;
	}
	if (total != size)
		return total > size ? "truncated" : "size mismatch";
	if (meta_len > size - HEADER || *w_off % PAGE || *w_off < HEADER + meta_len || *w_off > size ||
	    size - *w_off != wb)
		return "bad section offsets";
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION /* mutations reach the tables */
	if (XXH3_64bits(data + HEADER, meta_len) != sum)
		return "checksum mismatch";
#endif
	rbuf r = {.p = data + HEADER, .len = meta_len};
	getstr(&r, info->version, sizeof info->version);
	getstr(&r, info->source, sizeof info->source);
	info->w_size = get64(&r);
	info->w_mtime_ns = get64(&r);
	info->w_ino = get64(&r);
	get(&r, info->w_hash, 16);
	size_t tlen;
	const char *text = getbytes(&r, &tlen);
	if (r.bad)
		return "truncated tables";
	sn_err sub = {0};
	if (sir_parse(text, tlen, "<cpu plan>", NULL, 0, &p->g, &sub) != SN_OK) {
		if (sub.code == SN_EINTERNAL) {
			*e = sub;
			return "out of memory";
		}
		return "its graph does not parse";
	}
	const ir_graph *g = p->g;
	if (get32(&r) != g->nnodes)
		return "node count mismatch";
	uint32_t nn = g->nnodes ? g->nnodes : 1;
	p->vals = calloc(nn, sizeof *p->vals);
	p->fp.group_of = calloc(nn, sizeof *p->fp.group_of);
	p->fp.stored = calloc(nn, 1);
	p->fp.free_ = calloc(nn, 1);
	if (!p->vals || !p->fp.group_of || !p->fp.stored || !p->fp.free_)
		return "out of memory";
	for (ir_ref i = 0; i < g->nnodes; i++) {
		p->vals[i].where = (cl_where)get32(&r);
		p->vals[i].offset = get64(&r);
		p->vals[i].index = get32(&r);
	}
	uint32_t ng = get32(&r);
	if (r.bad || ng > MAX_COUNT || (uint64_t)ng * 32 > r.len - r.at)
		return "bad group count";
	p->fp.ngroups = ng;
	if (!(p->fp.groups = calloc(ng ? ng : 1, sizeof *p->fp.groups)))
		return "out of memory";
	for (uint32_t i = 0; i < ng; i++) {
		fu_group *gr = &p->fp.groups[i];
		gr->kind = (fu_kind)get32(&r);
		gr->root = get32(&r);
		gr->core = get32(&r);
		gr->first = get32(&r);
		gr->n = get32(&r);
		gr->bias = get32(&r);
		gr->residual = get32(&r);
		gr->act = (fu_act)get32(&r);
	}
	uint32_t nm = get32(&r);
	if (r.bad || nm > MAX_COUNT || (uint64_t)nm * 4 > r.len - r.at)
		return "bad member count";
	p->fp.nmembers = nm;
	if (!(p->fp.members = calloc(nm ? nm : 1, sizeof *p->fp.members)))
		return "out of memory";
	for (uint32_t i = 0; i < nm; i++)
		p->fp.members[i] = get32(&r);
	for (ir_ref i = 0; i < g->nnodes; i++) {
		p->fp.group_of[i] = get32(&r);
		get(&r, &p->fp.stored[i], 1);
		get(&r, &p->fp.free_[i], 1);
	}
	uint32_t ns = get32(&r);
	if (r.bad || ns > MAX_COUNT || (uint64_t)ns * 64 > r.len - r.at)
		return "bad step count";
	p->nsteps = ns;
	if (!(p->steps = calloc(ns ? ns : 1, sizeof *p->steps)))
		return "out of memory";
	for (uint32_t i = 0; i < ns; i++) {
		cl_step *s = &p->steps[i];
		s->kind = (cl_kind)get32(&r);
		getstr(&r, s->op, sizeof s->op);
		s->group = get32(&r);
		s->node = get32(&r);
		s->fn = (int32_t)get32(&r);
		s->nargs = get32(&r);
		for (uint32_t k = 0; k < CL_MAX_ARGS; k++)
			s->args[k] = get32(&r);
		s->rows = (int64_t)get64(&r);
		s->inner = (int64_t)get64(&r);
		s->a = get32(&r);
		s->b = get32(&r);
		s->bias = get32(&r);
		s->c = get32(&r);
		s->out = get32(&r);
		int64_t *dims[] = {&s->batch, &s->m, &s->n, &s->k, &s->sa, &s->sb, &s->sc};
		for (size_t k = 0; k < SN_COUNT(dims); k++)
			*dims[k] = (int64_t)get64(&r);
		uint32_t tb = get32(&r);
		s->trans_b = tb != 0;
		s->act = (int)get32(&r);
		if (tb > 1)
			r.bad = true;
	}
	p->arena_bytes = get64(&r);
	p->weight_bytes = get64(&r);
	if (r.bad || p->weight_bytes != wb || p->arena_bytes > MAX_BYTES)
		return "bad sizes";
	uint32_t nf = get32(&r);
	if (r.bad || nf > MAX_COUNT || (uint64_t)nf * 8 > r.len - r.at)
		return "bad function count";
	if (!(p->fns = calloc(nf ? nf : 1, sizeof *p->fns)))
		return "out of memory";
	p->nfns = nf;
	for (uint32_t i = 0; i < nf; i++) {
		char name[128];
		getstr(&r, name, sizeof name);
		for (const char *c = name; *c; c++)
			if (!(*c == '_' || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
				r.bad = true;
		if (r.bad || !name[0])
			return "a bad function name";
		if (!(p->fns[i] = strdup(name)))
			return "out of memory";
	}
	for (int k = 0; k < CL_NMOD; k++) {
		uint8_t has;
		get(&r, &has, 1);
		p->has_obj[k] = has == 1;
		get(&r, p->objkey[k], 16);
		if (has > 1)
			r.bad = true;
	}
	if (nf && !p->has_obj[0] && !p->has_obj[1])
		return "functions without an object";
	{
		size_t hn;
		const char *h = getbytes(&r, &hn);
		if (r.bad || hn > 65536 || memchr(h, 0, hn))
			return "a bad host";
		if (!(p->host = malloc(hn + 1)))
			return "out of memory";
		memcpy(p->host, h, hn);
		p->host[hn] = 0;
	}
	for (int k = 0; k < CL_NMOD; k++) {
		size_t on;
		const uint8_t *o = (const uint8_t *)getbytes(&r, &on);
		if (r.bad || (on && !p->has_obj[k]))
			return "a bad object";
		if (!on)
			continue;
		if (!(p->obj[k] = malloc(on)))
			return "out of memory";
		memcpy(p->obj[k], o, on);
		p->obj_size[k] = on;
	}
	uint32_t *counts[] = {&p->nref, &p->nkernel, &p->ngemm, &p->nconv, &p->nattn, &p->npool, &p->ngather};
	for (size_t k = 0; k < SN_COUNT(counts); k++)
		*counts[k] = get32(&r);
	*nsums = get64(&r);
	if (r.bad || *nsums != nchunks(wb) || *nsums * 8 != r.len - r.at)
		return "bad weight checksums";
	*sums = r.p + r.at;
	const char *bad = check_vals(p);
	if (!bad)
		bad = check_fp(p);
	for (uint32_t i = 0; !bad && i < p->nsteps; i++)
		bad = check_step(p, &p->steps[i]);
	return bad;
}

/* Whether every chunk of the image has its checksum (sums unaligned in
 * the file: copied out first), verified on the cores. */
static bool check_weights(const uint8_t *w, uint64_t bytes, const uint8_t *sums)
{
	uint64_t n = nchunks(bytes);
	uint64_t *a = malloc((size_t)(n ? n : 1) * sizeof *a);
	if (!a)
		return false;
	if (n)
		memcpy(a, sums, (size_t)n * 8);
	bool ok = cg_check_chunks(w, bytes, a, n);
	free(a);
	return ok;
}

int cl_plan_parse(const void *data, size_t size, cl_plan **out, cg_plan_info *info, sn_err *e)
{
	*out = NULL;
	memset(info, 0, sizeof *info);
	cl_plan *p = calloc(1, sizeof *p);
	if (!p)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	p->borrowed = true;
	uint64_t w_off = 0, nsums = 0;
	const uint8_t *sums = NULL;
	sn_err sub = {0};
	const char *why = parse(data, size, p, info, &w_off, &sums, &nsums, &sub);
	if (!why && p->weight_bytes) {
		p->weights = (uint8_t *)(uintptr_t)data + w_off;
		if (!check_weights(p->weights, p->weight_bytes, sums))
			why = "weight image checksum mismatch";
	}
	if (why) {
		int code = strcmp(why, "out of memory") ? SN_EINPUT : SN_EINTERNAL;
		cl_plan_free(p);
		return sn_errf(e, code, "%s", why);
	}
	*out = p;
	return SN_OK;
}

/* The file on fd (size bytes) read into private anonymous memory: a
 * file truncated or rewritten while in use is a read error now, never a
 * SIGBUS later (as cg_plan_read). Anonymous pages keep the weight image
 * 4 KiB aligned. Closes fd. NULL with e set on failure; free with munmap
 * (cl_plan_free does, as p->map). */
static void *read_private(int fd, size_t size, const char *path, const char *what, sn_err *e)
{
	void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		int err = errno;
		sn_close(fd);
		char sz[32];
		sn_fmt_bytes(sz, size);
		sn_errf(e, SN_EENV, "%s: cannot hold the %s's %s in memory: %s", path, what, sz, strerror(err));
		return NULL;
	}
#ifdef MADV_HUGEPAGE
	/* 2 MiB pages where the kernel has them: a third of the time of 4 KiB
	 * faults on a 100 MB image (docs/CACHE.md, "Reading") */
	madvise(map, size, MADV_HUGEPAGE);
#endif
	sn_err sub = {0};
	int rc = sn_pread_full(fd, map, size, 0, path, &sub);
	sn_close(fd);
	if (rc != SN_OK) {
		munmap(map, size);
		sn_errf(e, sub.code, "%s", sub.msg);
		return NULL;
	}
	return map;
}

int cl_package_read(const char *path, cl_plan **out, cg_plan_info *info, sn_err *e)
{
	*out = NULL;
	memset(info, 0, sizeof *info);
	int fd;
	struct stat sb;
	sn_err sub = {0};
	/* a package larger than this machine's memory cannot be loaded anyway */
	if (sn_open_read(path, 0, sn_mem_bytes(), NULL, &fd, &sb, &sub) != SN_OK)
		return sn_errf(e, sub.code, "%s", sub.msg);
	size_t size = (size_t)sb.st_size;
	if (size < HEADER) {
		/* a short file: the start of a plan, or something else */
		uint8_t h[8] = {0};
		size_t k = size < 8 ? size : 8;
		bool ours = size && sn_pread_full(fd, h, k, 0, path, &sub) == SN_OK && !memcmp(h, MAGIC, k);
		sn_close(fd);
		return sn_errf(e, SN_EINPUT, "%s: %s", path,
			       !size ? "not a sinter cpu plan (empty)" : ours ? "truncated" : "not a sinter cpu plan");
	}
	void *map = read_private(fd, size, path, "package", e);
	if (!map)
		return e->code;
	cl_plan *p = NULL;
	if (cl_plan_parse(map, size, &p, info, &sub) != SN_OK) {
		munmap(map, size);
		return sn_errf(e, sub.code, "%s: %s", path, sub.msg);
	}
	p->borrowed = false;
	p->map = map;
	p->map_size = size;
	for (int k = 0; k < CL_NMOD; k++)
		if (p->has_obj[k] && !p->obj[k]) {
			cl_plan_free(p);
			return sn_errf(e, SN_EINPUT,
				       "%s: not a package: a plan-cache entry without its objects (they are in the kernel "
				       "cache it came from)",
				       path);
		}
	*out = p;
	return SN_OK;
}

int cl_plan_read(const char *path, cl_plan **out, cg_plan_info *info, sn_err *e)
{
	*out = NULL;
	memset(info, 0, sizeof *info);
	int fd;
	struct stat sb;
	sn_err sub = {0};
	if (sn_open_read(path, SN_F_NOFOLLOW, MAX_BYTES, NULL, &fd, &sb, &sub) != SN_OK)
		return sn_errf(e, sub.code, "%s", sub.msg);
	const char *distrust = NULL;
	if (!sn_cache_trusted(&sb, &distrust)) {
		sn_close(fd);
		return sn_errf(e, SN_EINPUT, "%s: %s: not trusted", path, distrust);
	}
	size_t size = (size_t)sb.st_size;
	if (size < HEADER) {
		sn_close(fd);
		return sn_errf(e, SN_EINPUT, "%s: %s", path, size ? "truncated" : "not a sinter cpu plan (empty)");
	}
	/* Read, not mapped: sinter never rewrites an entry in place, but
	 * anyone may truncate it, and a mapped file cut short under a running
	 * plan is a SIGBUS when the runtime touches a page that is gone. */
	void *map = read_private(fd, size, path, "plan", e);
	if (!map)
		return e->code;
	cl_plan *p = NULL;
	if (cl_plan_parse(map, size, &p, info, &sub) != SN_OK) {
		munmap(map, size);
		return sn_errf(e, sub.code, "%s: %s", path, sub.msg);
	}
	p->borrowed = false;
	p->map = map;
	p->map_size = size;
	*out = p;
	return SN_OK;
}
