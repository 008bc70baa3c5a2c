/* layout.c: channels-last for convolutional regions (pass "layout").
 *
 * Every value v of the source graph gets a layout, decided in one forward
 * walk (topological order):
 *   NCHW  the rebuilt value has v's shape and data (the default);
 *   NHWC  the rebuilt value is transpose(v, [0,2,3,1]) (v has rank 4).
 * Seeds and propagation:
 *   - conv2d (layout NCHW) always runs NHWC: its weight becomes a new param
 *     "<key>@OHWI" (a transpose when the weight is computed), its result
 *     is NHWC;
 *   - max_pool2d, avg_pool2d, global_avg_pool and rank-4 batch_norm (NCHW)
 *     run NHWC when their input is NHWC;
 *   - elementwise ops with a rank-4 result and an NHWC operand are NHWC;
 *     their other operands are brought to NHWC (rank < 4 ones are first
 *     reshaped to rank 4, as broadcasting reads them; params become
 *     "<key>@NHWC" params);
 *   - concat, softmax/log_softmax and keepdims reductions with an NHWC
 *     operand are NHWC with their axes remapped; other reductions of an
 *     NHWC operand remap their axes and give NCHW-ordered results (a
 *     transpose of the result when the kept axes come out in another order);
 *   - reshape, flatten, squeeze and unsqueeze of an NHWC value whose data
 *     order is the NCHW one (C = 1, or H = W = 1, as after global pooling)
 *     read it directly;
 *   - a transpose of an NHWC value composes its permutation.
 * Every other reader of an NHWC value, and a graph output, gets it back
 * through one transpose [0,3,1,2] per value; a value entering the region
 * through one transpose [0,2,3,1] per value. Inserted transposes are named
 * "<name>.nhwc" / "<name>.nchw"; an NHWC graph output hands its name to
 * the transpose back. With ctx->ws the derived params' values are the
 * permuted values of the originals. Params left unread are dropped.
 *
 * decide() assigns the layouts first; one rebuild then emits each node from
 * its operands' layouts (rw_begin/rw_copy rather than rw_map, because the
 * graph outputs must be mapped to their transposes back before rw_finish). */
#include "passes/passes.h"
#include "passes/rewrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { L_NCHW, L_NHWC };

static const int64_t to_cl[4] = {0, 2, 3, 1};   /* NCHW -> NHWC */
static const int64_t to_cf[4] = {0, 3, 1, 2};   /* NHWC -> NCHW */
static const int64_t cl_pos[4] = {0, 3, 1, 2};  /* NCHW axis a sits at NHWC position cl_pos[a] */

typedef struct lay {
	const ir_graph *g;
	ir_wstore *ws;
	rw r;
	uint8_t *tag;   /* per src node: L_NCHW or L_NHWC */
	ir_ref *fwd;    /* per src node: its NHWC version in dst, IR_NONE until made */
	ir_ref *back;   /* per src node (NHWC): its NCHW version in dst */
	ir_ref *ohwi;   /* per src node: as an OHWI conv weight in dst */
} lay;

static const ir_node *S(const lay *l, ir_ref r) { return &l->g->nodes[r]; }

static bool name_taken(const ir_graph *g, const char *s)
{
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].name && strcmp(g->nodes[i].name, s) == 0)
			return true;
	return false;
}

/* Names dst node r "<base><suffix>" when neither graph uses that name. */
static int name_as(lay *l, ir_ref r, const char *base, const char *suffix)
{
	char buf[512];
	if (!base || (size_t)snprintf(buf, sizeof buf, "%s%s", base, suffix) >= sizeof buf ||
	    name_taken(l->g, buf) || name_taken(l->r.dst, buf))
		return SN_OK;
	return ir_set_name(l->r.dst, r, buf);
}

static ir_ref oom(sn_err *e)
{
	sn_errf(e, SN_EINTERNAL, "out of memory");
	return IR_NONE;
}

static ir_ref add_transpose(lay *l, ir_ref x, const int64_t *perm, int rank, sn_err *e)
{
	ir_attrs a;
	ir_attrs_init(IR_OP_transpose, &a);
	a.perm.n = rank;
	memcpy(a.perm.v, perm, (size_t)rank * sizeof *perm);
	return ir_add(l->r.dst, IR_OP_transpose, &x, 1, &a, e);
}

static ir_ref add_reshape(lay *l, ir_ref x, const ir_shape *s, sn_err *e)
{
	ir_attrs a;
	ir_attrs_init(IR_OP_reshape, &a);
	a.shape.n = s->rank;
	memcpy(a.shape.v, s->d, (size_t)s->rank * sizeof *s->d);
	return ir_add(l->r.dst, IR_OP_reshape, &x, 1, &a, e);
}

/* s with leading 1s up to rank 4 (s->rank <= 4). */
static ir_shape pad4(const ir_shape *s)
{
	ir_shape r = {4, {1, 1, 1, 1}};
	for (int i = 0; i < s->rank; i++)
		r.d[4 - s->rank + i] = s->d[i];
	return r;
}

static ir_shape permuted(const ir_shape *s, const int64_t *perm)
{
	ir_shape r = {s->rank, {0}};
	for (int i = 0; i < s->rank; i++)
		r.d[i] = s->d[perm[i]];
	return r;
}

/* A new param standing for src param p permuted by to_cl (p's shape padded
 * to rank 4 first), under key "<key><suffix>"; its values go to the store. */
static ir_ref derived_param(lay *l, ir_ref p, const char *suffix, const char *vsuffix, sn_err *e)
{
	const ir_node *n = S(l, p);
	char key[1024];
	if ((size_t)snprintf(key, sizeof key, "%s%s", n->pname, suffix) >= sizeof key) {
		sn_errf(e, SN_EINPUT, "layout: param key \"%s\" is too long", n->pname);
		return IR_NONE;
	}
	ir_shape s4 = pad4(&n->shape), s = permuted(&s4, to_cl);
	if (l->ws) {
		const ir_tensor *t = ir_ws_get(l->ws, n->pname);
		if (!t || !ir_shape_eq(&t->shape, &n->shape) || t->dtype != n->dtype) {
			sn_errf(e, SN_EINPUT, t ? "layout: weight \"%s\" has another type than its param"
						: "layout: no weight \"%s\"", n->pname);
			return IR_NONE;
		}
		size_t es = ir_dtype_size(t->dtype);
		ir_tensor o = {.dtype = t->dtype, .shape = s, .nbytes = t->nbytes};
		if (!(o.data = malloc(o.nbytes ? o.nbytes : 1)))
			return oom(e);
		const int64_t *d = s4.d; /* NCHW dims of the padded source */
		size_t i = 0;
		for (int64_t a = 0; a < d[0]; a++)
			for (int64_t h = 0; h < d[2]; h++)
				for (int64_t w = 0; w < d[3]; w++) {
					/* channel c of (a, h, w) is d[2] * d[3] elements after c - 1 */
					size_t src = (size_t)(((a * d[1]) * d[2] + h) * d[3] + w), step = (size_t)(d[2] * d[3]);
					if (es == 4) {
						const uint32_t *sp = t->data;
						uint32_t *dp = o.data;
						for (int64_t c = 0; c < d[1]; c++, i++, src += step)
							dp[i] = sp[src];
					} else if (es == 2) {
						const uint16_t *sp = t->data;
						uint16_t *dp = o.data;
						for (int64_t c = 0; c < d[1]; c++, i++, src += step)
							dp[i] = sp[src];
					} else {
						for (int64_t c = 0; c < d[1]; c++, i++, src += step)
							memcpy((char *)o.data + i * es, (const char *)t->data + src * es, es);
					}
				}
		if (ir_ws_put(l->ws, key, o, e) != SN_OK)
			return IR_NONE;
	}
	ir_ref r = ir_add_param(l->r.dst, key, n->dtype, &s, e);
	if (r != IR_NONE && name_as(l, r, n->name, vsuffix) != SN_OK)
		return oom(e);
	return r;
}

/* v (a src value) as the dst value it stands for in NHWC. Values of rank
 * below 4 are read as broadcasting reads them (leading 1s); rank 0 stays. */
static ir_ref as_nhwc(lay *l, ir_ref v, sn_err *e)
{
	const ir_node *n = S(l, v);
	if (l->tag[v] == L_NHWC || n->shape.rank == 0)
		return l->r.map[v];
	if (l->fwd[v] != IR_NONE)
		return l->fwd[v];
	ir_ref r;
	if (n->op == IR_OP_param) {
		r = derived_param(l, v, "@NHWC", ".nhwc", e);
	} else {
		r = l->r.map[v];
		if (n->shape.rank < 4) {
			ir_shape s4 = pad4(&n->shape);
			r = add_reshape(l, r, &s4, e);
		}
		if (r != IR_NONE)
			r = add_transpose(l, r, to_cl, 4, e);
		if (r != IR_NONE && name_as(l, r, n->name, ".nhwc") != SN_OK)
			return oom(e);
	}
	return l->fwd[v] = r;
}

/* v as the dst value with v's own shape and data. */
static ir_ref as_nchw(lay *l, ir_ref v, sn_err *e)
{
	if (l->tag[v] == L_NCHW)
		return l->r.map[v];
	if (l->back[v] != IR_NONE)
		return l->back[v];
	ir_ref r = add_transpose(l, l->r.map[v], to_cf, 4, e);
	if (r != IR_NONE && name_as(l, r, S(l, v)->name, ".nchw") != SN_OK)
		return oom(e);
	return l->back[v] = r;
}

/* Conv weight w (OIHW) as OHWI. */
static ir_ref as_ohwi(lay *l, ir_ref w, sn_err *e)
{
	if (l->ohwi[w] != IR_NONE)
		return l->ohwi[w];
	const ir_node *n = S(l, w);
	ir_ref r;
	if (n->op == IR_OP_param) {
		r = derived_param(l, w, "@OHWI", ".ohwi", e);
	} else {
		r = add_transpose(l, as_nchw(l, w, e), to_cl, 4, e);
		if (r != IR_NONE && name_as(l, r, n->name, ".ohwi") != SN_OK)
			return oom(e);
	}
	return l->ohwi[w] = r;
}

/* Adds src node old to dst with operands in[] and attributes a, keeping
 * its name and location. */
static ir_ref emit(lay *l, ir_ref old, const ir_ref *in, const ir_attrs *a, sn_err *e)
{
	const ir_node *n = S(l, old);
	for (uint32_t k = 0; k < n->nin; k++)
		if (in[k] == IR_NONE)
			return IR_NONE;
	ir_ref r = ir_add(l->r.dst, n->op, in, n->nin, a, e);
	if (r == IR_NONE)
		return r;
	if (ir_set_name(l->r.dst, r, n->name) != SN_OK)
		return oom(e);
	l->r.dst->nodes[r].line = n->line;
	l->r.dst->nodes[r].col = n->col;
	return r;
}

static bool any_nhwc(const lay *l, const ir_node *n)
{
	for (uint32_t k = 0; k < n->nin; k++)
		if (l->tag[n->in[k]] == L_NHWC)
			return true;
	return false;
}

/* Whether a rank-4 NHWC value holds its elements in NCHW order. */
static bool same_order(const ir_shape *s)
{
	return s->d[1] == 1 || (s->d[2] == 1 && s->d[3] == 1);
}

/* A reduction of an NHWC operand: axes remapped; the result is NHWC with
 * keepdims, else NCHW-ordered (transposed when the kept axes come out of
 * order). */
static ir_ref emit_reduce(lay *l, ir_ref old, ir_ref x, sn_err *e)
{
	const ir_node *n = S(l, old);
	ir_attrs a = *n->attrs;
	unsigned mask = a.axes.n ? 0 : 15u;
	for (int i = 0; i < a.axes.n; i++) {
		int ax = ir_axis(a.axes.v[i], 4);
		if (ax < 0) {
			sn_errf(e, SN_EINTERNAL, "layout: bad axis in %s", ir_ops[n->op].name);
			return IR_NONE;
		}
		a.axes.v[i] = cl_pos[ax];
		mask |= 1u << ax;
	}
	ir_ref r = emit(l, old, &x, &a, e);
	if (r == IR_NONE || a.keepdims)
		return r;
	/* kept NCHW axes in the order the NHWC result holds them */
	int kept[4], k = 0;
	for (int p = 0; p < 4; p++)
		if (!(mask & (1u << to_cl[p])))
			kept[k++] = (int)to_cl[p];
	int64_t perm[4] = {0, 1, 2, 3};
	bool id = true;
	for (int i = 0, j = 0; i < 4; i++) /* output axis j is NCHW axis i */
		if (!(mask & (1u << i))) {
			for (int q = 0; q < k; q++)
				if (kept[q] == i)
					perm[j] = q;
			id &= perm[j] == j;
			j++;
		}
	if (id)
		return r;
	/* the transpose takes the name; the reduction becomes "<name>.nhwc" */
	ir_ref t = add_transpose(l, r, perm, k, e);
	if (t == IR_NONE)
		return t;
	l->r.dst->nodes[r].name = NULL;
	if (ir_set_name(l->r.dst, t, n->name) != SN_OK || name_as(l, r, n->name, ".nhwc") != SN_OK)
		return oom(e);
	return t;
}

/* A reshape-like op (reshape, flatten, squeeze, unsqueeze) reading NHWC x
 * whose data is in NCHW order: the same op when it gives the same shape,
 * else a reshape to the old result's shape. */
static ir_ref emit_view(lay *l, ir_ref old, ir_ref x, sn_err *e)
{
	const ir_node *n = S(l, old);
	bool keep = n->op == IR_OP_reshape;
	if (n->op == IR_OP_flatten)
		keep = ir_axis(n->attrs->axis, 4) <= 1 && ir_axis(n->attrs->end, 4) == 3;
	if (keep)
		return emit(l, old, &x, n->attrs, e);
	ir_attrs a;
	ir_attrs_init(IR_OP_reshape, &a);
	a.shape.n = n->shape.rank;
	memcpy(a.shape.v, n->shape.d, (size_t)n->shape.rank * sizeof *n->shape.d);
	ir_ref r = ir_add(l->r.dst, IR_OP_reshape, &x, 1, &a, e);
	if (r != IR_NONE && ir_set_name(l->r.dst, r, n->name) != SN_OK)
		return oom(e);
	return r;
}

static bool is_region_op(const ir_node *n)
{
	switch (n->op) {
	case IR_OP_max_pool2d: case IR_OP_avg_pool2d: case IR_OP_global_avg_pool:
		return n->attrs->layout == IR_NCHW;
	case IR_OP_batch_norm:
		return n->attrs->layout == IR_NCHW && n->shape.rank == 4;
	default:
		return false;
	}
}

/* reduce_sum/mean/max/min (their axes move with the layout); argmax and
 * argmin, reductions along one axis, stay in NCHW */
static bool is_axes_reduce(ir_op op)
{
	return ir_ops[op].kind == IR_K_REDUCE && (ir_ops[op].attrs & IR_A(axes));
}

static bool is_elementwise(ir_op op)
{
	ir_kind k = ir_ops[op].kind;
	return k == IR_K_UNARY || k == IR_K_BINARY || k == IR_K_TERNARY;
}

/* The layout of every src value, by forward propagation (the rules at the
 * top of this file). */
static void decide(const ir_graph *g, uint8_t *tag)
{
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		bool cl = false;
		for (uint32_t k = 0; k < n->nin; k++)
			cl |= tag[n->in[k]] == L_NHWC;
		if (n->op == IR_OP_conv2d)
			cl = n->attrs->layout == IR_NCHW;
		else if (is_region_op(n))
			cl = tag[n->in[0]] == L_NHWC;
		else if (is_axes_reduce(n->op))
			cl = cl && n->attrs->keepdims;
		else if (is_elementwise(n->op) || n->op == IR_OP_concat || n->op == IR_OP_softmax ||
			 n->op == IR_OP_log_softmax)
			cl = cl && n->shape.rank == 4;
		else
			cl = false;
		tag[i] = cl ? L_NHWC : L_NCHW;
	}
}

/* Emits src node old, an NHWC value (decide), from its operands. */
static ir_ref emit_nhwc(lay *l, ir_ref old, ir_ref *ins, sn_err *e)
{
	const ir_node *n = S(l, old);
	ir_attrs a = *n->attrs;
	if (n->op == IR_OP_conv2d) {
		ins[0] = as_nhwc(l, n->in[0], e);
		ins[1] = as_ohwi(l, n->in[1], e);
		if (n->nin > 2)
			ins[2] = as_nchw(l, n->in[2], e);
		a.layout = IR_NHWC;
	} else if (is_region_op(n)) {
		ins[0] = l->r.map[n->in[0]];
		for (uint32_t k = 1; k < n->nin; k++)
			ins[k] = as_nchw(l, n->in[k], e);
		a.layout = IR_NHWC;
	} else if (is_axes_reduce(n->op)) {
		return emit_reduce(l, old, l->r.map[n->in[0]], e);
	} else { /* elementwise, concat, softmax, log_softmax */
		for (uint32_t k = 0; k < n->nin; k++)
			ins[k] = as_nhwc(l, n->in[k], e);
		if (!is_elementwise(n->op))
			a.axis = cl_pos[ir_axis(a.axis, 4) & 3];
	}
	return emit(l, old, ins, &a, e);
}

/* Emits src node old, an NCHW value one of whose operands is NHWC. */
static ir_ref emit_nchw(lay *l, ir_ref old, ir_ref *ins, sn_err *e)
{
	const ir_node *n = S(l, old);
	ir_attrs a = *n->attrs;
	ir_op op = n->op;
	if (is_axes_reduce(op))
		return emit_reduce(l, old, l->r.map[n->in[0]], e);
	if ((op == IR_OP_reshape || op == IR_OP_flatten || op == IR_OP_squeeze || op == IR_OP_unsqueeze) &&
	    same_order(&S(l, n->in[0])->shape))
		return emit_view(l, old, l->r.map[n->in[0]], e);
	if (op == IR_OP_transpose) {
		/* out axis i = src axis perm[i] = NHWC axis cl_pos[perm[i]] */
		bool id = true;
		for (int i = 0; i < 4; i++) {
			a.perm.v[i] = cl_pos[a.perm.v[i] & 3];
			id &= a.perm.v[i] == i;
		}
		ins[0] = l->r.map[n->in[0]];
		return id ? ins[0] : emit(l, old, ins, &a, e);
	}
	for (uint32_t k = 0; k < n->nin; k++)
		ins[k] = as_nchw(l, n->in[k], e);
	return emit(l, old, ins, &a, e);
}

/* The dst value standing for src node old. */
static ir_ref visit(lay *l, ir_ref old, sn_err *e)
{
	const ir_node *n = S(l, old);
	if (l->tag[old] == L_NCHW && !any_nhwc(l, n))
		return rw_copy(&l->r, old, e);
	ir_ref in[IR_MAX_LIST];
	ir_ref *ins = n->nin <= IR_MAX_LIST ? in : malloc(n->nin * sizeof *ins);
	if (!ins)
		return oom(e);
	ir_ref r = l->tag[old] == L_NHWC ? emit_nhwc(l, old, ins, e) : emit_nchw(l, old, ins, e);
	if (ins != in)
		free(ins);
	return r;
}

/* Hands each NHWC output's name to its transpose back; sets the map so
 * that rw_finish returns the NCHW values. */
static int outputs_back(lay *l, sn_err *e)
{
	for (uint32_t i = 0; i < l->g->noutputs; i++) {
		ir_ref v = l->g->outputs[i];
		if (l->tag[v] != L_NHWC || l->r.map[v] == IR_NONE)
			continue;
		ir_ref b = as_nchw(l, v, e);
		if (b == IR_NONE)
			return e->code;
		ir_node *cl = &l->r.dst->nodes[l->r.map[v]], *bk = &l->r.dst->nodes[b];
		const char *name = S(l, v)->name;
		if (name && cl->name && strcmp(cl->name, name) == 0) {
			cl->name = NULL;
			bk->name = NULL;
			if (ir_set_name(l->r.dst, b, name) != SN_OK ||
			    name_as(l, l->r.map[v], name, ".nhwc") != SN_OK)
				return sn_errf(e, SN_EINTERNAL, "out of memory");
		}
		l->tag[v] = L_NCHW;
		l->r.map[v] = b;
	}
	return SN_OK;
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

/* g without the params marked in drop (a bool per node) that nothing reads. */
static ir_graph *drop_unread(ir_graph *g, const bool *drop, sn_err *e)
{
	uint32_t *u = count_uses(g);
	if (!u) {
		ir_graph_free(g); /* it is consumed on every path */
		return oom(e), NULL;
	}
	bool any = false;
	for (uint32_t i = 0; i < g->nnodes; i++)
		any |= drop[i] && !u[i];
	if (!any) {
		free(u);
		return g;
	}
	rw r;
	ir_graph *out = NULL;
	if (rw_begin(&r, g, e) == SN_OK) {
		uint32_t i = 0;
		for (; i < g->nnodes; i++)
			if (!(drop[i] && !u[i]) && rw_copy(&r, i, e) == IR_NONE)
				break;
		if (i == g->nnodes)
			out = rw_finish(&r, e);
		else
			rw_abort(&r);
	}
	ir_graph_free(g);
	free(u);
	return out;
}

static bool has_nchw_conv(const ir_graph *g)
{
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].op == IR_OP_conv2d && g->nodes[i].attrs->layout == IR_NCHW)
			return true;
	return false;
}

int pass_layout(ir_graph **gp, pass_ctx *ctx, sn_err *e)
{
	const ir_graph *g = *gp;
	if (!has_nchw_conv(g))
		return SN_OK;
	lay l = {.g = g, .ws = ctx ? ctx->ws : NULL};
	size_t n = g->nnodes;
	l.tag = calloc(n, sizeof *l.tag);
	l.fwd = malloc(n * sizeof *l.fwd);
	l.back = malloc(n * sizeof *l.back);
	l.ohwi = malloc(n * sizeof *l.ohwi);
	uint32_t *used = count_uses(g);
	bool *drop = NULL;
	ir_graph *out = NULL;
	if (!l.tag || !l.fwd || !l.back || !l.ohwi || !used) {
		oom(e);
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		l.fwd[i] = l.back[i] = l.ohwi[i] = IR_NONE;
	decide(g, l.tag);
	if (rw_begin(&l.r, g, e) != SN_OK)
		goto done;
	uint32_t i = 0;
	for (; i < n; i++)
		if ((l.r.map[i] = visit(&l, i, e)) == IR_NONE)
			break;
	if (i < n || outputs_back(&l, e) != SN_OK ||
	    !(drop = calloc(l.r.dst->nnodes ? l.r.dst->nnodes : 1, sizeof *drop))) {
		if (!e->code)
			oom(e);
		rw_abort(&l.r);
		goto done;
	}
	for (i = 0; i < n; i++) /* params that had readers may have lost them */
		if (g->nodes[i].op == IR_OP_param && used[i])
			drop[l.r.map[i]] = true;
	out = rw_finish(&l.r, e);
	if (out)
		out = drop_unread(out, drop, e);
done:
	free(l.tag), free(l.fwd), free(l.back), free(l.ohwi), free(used), free(drop);
	if (!out)
		return e->code ? e->code : sn_errf(e, SN_EINTERNAL, "layout: rebuilding the graph failed");
	ir_graph_free(*gp);
	*gp = out;
	return SN_OK;
}
