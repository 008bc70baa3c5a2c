/* fold_bn.c: conv-BN folding (pass "fold-bn").
 *
 * An inference batch_norm whose input is a conv2d (or a linear, when the
 * norm's channel axis is the last one) becomes part of that producer:
 *
 *   scale[o] = weight[o] / sqrt(var[o] + eps)
 *   w'[o,...] = w[o,...] * scale[o]
 *   b'[o]     = (b[o] - mean[o]) * scale[o] + bias[o]     (b = 0 without a bias)
 *
 * Dim 0 of the producer's weight is the output channel in every case
 * (conv OIHW and OHWI, linear [out, in]), so both conv layouts fold alike.
 *
 * A fold applies when the producer's output has no reader but the norm (and
 * is no graph output), the norm's channel axis is the producer's output
 * channel axis, and the norm's four vectors and the producer's weight (and
 * bias) are params. The folded producer takes the norm's name and location.
 *
 * Derived params (keys of the weight store):
 *   weight  "<producer weight key>+bn(<norm weight key>)"
 *   bias    "<norm bias key>+fold(<producer weight key>)"
 * and, should a key repeat within one run (norms sharing params after
 * convs sharing a weight), "#2", "#3", ... appended,
 * with value names "<weight name>.fold" and "<norm bias name>.fold" when
 * free. The dtypes are the producer's weight dtype and the producer's
 * dtype. With ctx->ws the values are computed in fp64 from the stored
 * tensors and rounded once into that dtype (ir_store); without it only the
 * graph is rewritten. Params that nothing reads any more are dropped. */
#include "passes/passes.h"
#include "passes/rewrite.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fold {
	const ir_graph *g;
	ir_wstore *ws;
	rw r;
	ir_ref *prod;      /* per src node: for a folded norm, its producer; else IR_NONE */
	uint32_t *uses;    /* per src node: readers (operand slots and outputs) after folding */
	bool *dead;        /* per src node: not copied */
} fold;

static const ir_node *N(const ir_graph *g, ir_ref r) { return &g->nodes[r]; }

static bool is_param(const ir_graph *g, ir_ref r) { return N(g, r)->op == IR_OP_param; }

/* The producer the norm n folds into, or IR_NONE. */
static ir_ref foldable(const ir_graph *g, const ir_node *n, const uint32_t *uses)
{
	if (n->op != IR_OP_batch_norm)
		return IR_NONE;
	ir_ref x = n->in[0];
	const ir_node *p = N(g, x);
	if (uses[x] != 1 || (p->op != IR_OP_conv2d && p->op != IR_OP_linear))
		return IR_NONE;
	for (uint32_t k = 1; k < 5; k++)
		if (!is_param(g, n->in[k]))
			return IR_NONE;
	for (uint32_t k = 1; k < p->nin; k++)
		if (!is_param(g, p->in[k]))
			return IR_NONE;
	int rank = p->shape.rank;
	int bn_axis = n->attrs->layout == IR_NHWC ? rank - 1 : 1;
	int out_axis = rank - 1; /* linear */
	if (p->op == IR_OP_conv2d)
		out_axis = p->attrs->layout == IR_NHWC ? 3 : 1;
	return bn_axis == out_axis ? x : IR_NONE;
}

static uint32_t *count_uses(const ir_graph *g)
{
	uint32_t *u = calloc(g->nnodes ? g->nnodes : 1, sizeof *u);
	if (!u)
		return NULL;
	for (uint32_t i = 0; i < g->nnodes; i++)
		for (uint32_t k = 0; k < g->nodes[i].nin; k++)
			u[g->nodes[i].in[k]]++;
	for (uint32_t i = 0; i < g->noutputs; i++)
		u[g->outputs[i]]++;
	return u;
}

static bool name_taken(const ir_graph *g, const char *s)
{
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].name && strcmp(g->nodes[i].name, s) == 0)
			return true;
	return false;
}

/* Names dst node r "<base>.fold" when neither graph uses that name. */
static int name_fold(fold *f, ir_ref r, const char *base)
{
	if (!base)
		return SN_OK;
	char buf[512];
	if ((size_t)snprintf(buf, sizeof buf, "%s.fold", base) >= sizeof buf ||
	    name_taken(f->g, buf) || name_taken(f->r.dst, buf))
		return SN_OK;
	return ir_set_name(f->r.dst, r, buf);
}

static bool key_taken(const ir_graph *g, const char *key)
{
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].pname && strcmp(g->nodes[i].pname, key) == 0)
			return true;
	return false;
}

/* Formats a derived key "<a><fmt><b>" into buf, made unique among the
 * params made so far; true when it does not fit. */
static bool make_key(fold *f, char *buf, size_t cap, const char *fmt, const char *a, const char *b)
{
	size_t n = (size_t)snprintf(buf, cap, fmt, a, b);
	if (n >= cap - 16)
		return true;
	for (int k = 2; key_taken(f->r.dst, buf); k++)
		snprintf(buf + n, cap - n, "#%d", k);
	return false;
}

/* The stored tensor of param node r, checked against the node's type. */
static const ir_tensor *stored(fold *f, ir_ref r, const ir_node *bn, sn_err *e)
{
	const ir_node *p = N(f->g, r);
	const ir_tensor *t = ir_ws_get(f->ws, p->pname);
	if (!t) {
		sn_errf(e, SN_EINPUT, "fold-bn: no weight \"%s\" for %%%s", p->pname,
			bn->name ? bn->name : "batch_norm");
		return NULL;
	}
	if (!ir_shape_eq(&t->shape, &p->shape) || !ir_dtype_is_float(t->dtype)) {
		sn_errf(e, SN_EINPUT, "fold-bn: weight \"%s\" has another type than its param",
			p->pname);
		return NULL;
	}
	return t;
}

static void *new_data(ir_tensor *t, ir_dtype dt, const ir_shape *s)
{
	t->dtype = dt;
	t->shape = *s;
	t->nbytes = (size_t)ir_numel(s) * ir_dtype_size(dt);
	t->data = malloc(t->nbytes ? t->nbytes : 1);
	return t->data;
}

/* Computes the folded weight and bias of norm bn over producer p into the
 * store under wkey and bkey. */
static int fold_values(fold *f, const ir_node *bn, const ir_node *p, const char *wkey,
		       const char *bkey, ir_dtype bdt, sn_err *e)
{
	const ir_tensor *v[4], *w, *b = NULL;
	for (int k = 0; k < 4; k++)
		if (!(v[k] = stored(f, bn->in[k + 1], bn, e)))
			return e->code;
	if (!(w = stored(f, p->in[1], bn, e)) || (p->nin > 2 && !(b = stored(f, p->in[2], bn, e))))
		return e->code;
	int64_t och = w->shape.d[0], numel = ir_numel(&w->shape);
	if (och <= 0 || numel < 0 || v[0]->shape.d[0] != och)
		return sn_errf(e, SN_EINTERNAL, "fold-bn: channel counts of %%%s disagree",
			       bn->name ? bn->name : "batch_norm");
	size_t per = (size_t)(numel / och);
	ir_tensor wt, bt;
	ir_shape bs = {1, {och}};
	if (!new_data(&wt, w->dtype, &w->shape))
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	if (!new_data(&bt, bdt, &bs)) {
		free(wt.data);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	for (int64_t o = 0; o < och; o++) {
		size_t c = (size_t)o;
		double gamma = ir_load(v[0]->dtype, v[0]->data, c), beta = ir_load(v[1]->dtype, v[1]->data, c);
		double mean = ir_load(v[2]->dtype, v[2]->data, c), var = ir_load(v[3]->dtype, v[3]->data, c);
		double scale = gamma / sqrt(var + bn->attrs->eps);
		double b0 = b ? ir_load(b->dtype, b->data, c) : 0.0;
		if (w->dtype == IR_F32 && wt.dtype == IR_F32) {
			/* the common case without a call per element: the same
			 * rounding as ir_store's (double to float) */
			const float *src = w->data;
			float *dst = wt.data;
			for (size_t i = c * per; i < (c + 1) * per; i++)
				dst[i] = (float)((double)src[i] * scale);
		} else {
			for (size_t i = c * per; i < (c + 1) * per; i++)
				ir_store(wt.dtype, wt.data, i, ir_load(w->dtype, w->data, i) * scale);
		}
		ir_store(bdt, bt.data, c, (b0 - mean) * scale + beta);
	}
	if (ir_ws_put(f->ws, wkey, wt, e) != SN_OK) {
		free(bt.data);
		return e->code;
	}
	return ir_ws_put(f->ws, bkey, bt, e);
}

/* Emits the folded producer standing for norm `old`. */
static ir_ref emit_fold(fold *f, ir_ref old, sn_err *e)
{
	const ir_graph *g = f->g;
	const ir_node *bn = N(g, old), *p = N(g, f->prod[old]);
	const ir_node *w = N(g, p->in[1]), *beta = N(g, bn->in[2]);
	char wkey[1024], bkey[1024];
	if (make_key(f, wkey, sizeof wkey, "%s+bn(%s)", w->pname, N(g, bn->in[1])->pname) ||
	    make_key(f, bkey, sizeof bkey, "%s+fold(%s)", beta->pname, w->pname)) {
		sn_errf(e, SN_EINPUT, "fold-bn: param keys of %%%s are too long", bn->name ? bn->name : "batch_norm");
		return IR_NONE;
	}
	ir_shape bs = {1, {w->shape.d[0]}};
	ir_graph *d = f->r.dst;
	ir_ref nw = ir_add_param(d, wkey, w->dtype, &w->shape, e);
	if (nw == IR_NONE || name_fold(f, nw, w->name) != SN_OK)
		goto oom;
	ir_ref nb = ir_add_param(d, bkey, p->dtype, &bs, e);
	if (nb == IR_NONE || name_fold(f, nb, beta->name) != SN_OK)
		goto oom;
	if (f->ws && fold_values(f, bn, p, wkey, bkey, p->dtype, e) != SN_OK)
		return IR_NONE;
	ir_ref in[3] = {f->r.map[p->in[0]], nw, nb};
	ir_ref r = ir_add(d, p->op, in, 3, p->attrs, e);
	if (r == IR_NONE)
		return IR_NONE;
	if (ir_set_name(d, r, bn->name) != SN_OK)
		goto oom;
	d->nodes[r].line = bn->line;
	d->nodes[r].col = bn->col;
	return r;
oom:
	sn_errf(e, SN_EINTERNAL, "out of memory");
	return IR_NONE;
}

/* Finds the folds and what they leave without readers. */
static void plan(fold *f)
{
	const ir_graph *g = f->g;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		ir_ref p = foldable(g, n, f->uses);
		f->prod[i] = p;
		if (p == IR_NONE)
			continue;
		f->dead[p] = true;
		for (uint32_t k = 1; k < 5; k++)
			f->uses[n->in[k]]--;
		for (uint32_t k = 1; k < N(g, p)->nin; k++)
			f->uses[N(g, p)->in[k]]--;
	}
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (is_param(g, i) && f->uses[i] == 0)
			f->dead[i] = true; /* unread params go too: a param is only a name */
}

int pass_fold_bn(ir_graph **gp, pass_ctx *ctx, sn_err *e)
{
	const ir_graph *g = *gp;
	fold f = {.g = g, .ws = ctx ? ctx->ws : NULL};
	size_t n = g->nnodes ? g->nnodes : 1;
	f.prod = malloc(n * sizeof *f.prod);
	f.dead = calloc(n, sizeof *f.dead);
	f.uses = count_uses(g);
	if (!f.prod || !f.dead || !f.uses) {
		free(f.prod), free(f.dead), free(f.uses);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	plan(&f);
	bool any = false;
	for (uint32_t i = 0; i < g->nnodes; i++)
		any |= f.prod[i] != IR_NONE;
	ir_graph *out = NULL;
	if (any && rw_begin(&f.r, g, e) == SN_OK) {
		uint32_t i = 0;
		for (; i < g->nnodes; i++) {
			if (f.dead[i])
				continue;
			ir_ref r = f.prod[i] != IR_NONE ? emit_fold(&f, i, e) : rw_copy(&f.r, i, e);
			if (r == IR_NONE)
				break;
			f.r.map[i] = r;
		}
		if (i == g->nnodes)
			out = rw_finish(&f.r, e);
		else
			rw_abort(&f.r);
	}
	free(f.prod), free(f.dead), free(f.uses);
	if (!any)
		return SN_OK;
	if (!out)
		return e->code ? e->code : sn_errf(e, SN_EINTERNAL, "fold-bn: rebuilding the graph failed");
	ir_graph_free(*gp);
	*gp = out;
	return SN_OK;
}
