/* attention.c: recognizes attention written as matrix products and a
 * softmax, and rewrites it into scaled_dot_product_attention, so one
 * kernel computes it without storing the scores (DESIGN.md, Passes).
 *
 * The forms are rows of a table, tried in order on every matmul(P, V):
 *
 *   P = softmax(X, last axis)
 *   X = where(causal, -inf, Y)    causal: greater(col, row) or less(row, col)
 *                                 over iotas of the last two axes (j > i),
 *                                 or a bool const (or a bool param whose
 *                                 weights are known) true exactly where
 *                                 j > i (ONNX exports write triu(ones, 1))
 *     | where(C, -inf, Y)         C: any other bool const; the mask is its
 *                                 negation, a new const (false hides)
 *     | add(Y, M) | add(M, Y)     M: an additive float mask
 *     | Y
 *   Y = mul(S, c) | mul(c, S)     c: a scalar const, the scale
 *     | div(S, c)                 scale 1/c
 *     | S                         scale 1
 *   S = matmul(Q, KT)             KT: keys transposed, [..., E, S]
 *
 * Every node between S and P is read once (by the next). K is KT with its
 * last two axes swapped back (a transpose that canonicalize folds into the
 * one that made KT). The pattern's old nodes are left for DCE. */
#include "passes/passes.h"
#include "passes/rewrite.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct att {
	const ir_graph *g;
	uint32_t *uses;
	const ir_wstore *ws; /* NULL when the weights are unknown */
} att;

static const ir_node *N(const ir_graph *g, ir_ref r)
{
	return &g->nodes[r];
}

static bool scalar_const(const ir_graph *g, ir_ref r, double *v)
{
	const ir_node *n = N(g, r);
	if (n->op != IR_OP_const || ir_numel(&n->shape) != 1 || !n->data || !ir_dtype_is_float(n->dtype))
		return false;
	*v = ir_load(n->dtype, n->data, 0);
	return true;
}

/* iota over axis a (counted from the end: 1 last, 2 second to last). */
static bool iota_from_end(const ir_graph *g, ir_ref r, int a)
{
	const ir_node *n = N(g, r);
	if (n->op != IR_OP_iota)
		return false;
	int ax = ir_axis(n->attrs->axis, n->shape.rank);
	return ax >= 0 && ax == n->shape.rank - a;
}

/* cond is true where j > i (the positions a causal mask hides). */
static bool is_causal(const ir_graph *g, ir_ref cond)
{
	const ir_node *c = N(g, cond);
	if (c->dtype != IR_BOOL || c->shape.rank < 2)
		return false;
	if (c->op == IR_OP_greater)
		return iota_from_end(g, c->in[0], 1) && iota_from_end(g, c->in[1], 2);
	if (c->op == IR_OP_less)
		return iota_from_end(g, c->in[0], 2) && iota_from_end(g, c->in[1], 1);
	return false;
}

/* The values of a bool const, or of a bool param whose weights are known
 * (ONNX initializers import as params; a compiled plan holds its weights,
 * and the plan cache rebuilds when they change). NULL otherwise. */
static const uint8_t *bool_values(const att *a, const ir_node *c)
{
	if (c->dtype != IR_BOOL)
		return NULL;
	if (c->op == IR_OP_const)
		return c->data;
	if (c->op != IR_OP_param || !a->ws || !c->pname)
		return NULL;
	const ir_tensor *t = ir_ws_get(a->ws, c->pname);
	int64_t n = ir_numel(&c->shape);
	if (!t || t->dtype != IR_BOOL || n < 0 || t->nbytes != (size_t)n || !ir_shape_eq(&t->shape, &c->shape))
		return NULL;
	return t->data;
}

/* c's values are known, its leading axes all 1, true exactly where j > i. */
static bool causal_values(const att *a, ir_ref cond)
{
	const ir_node *c = N(a->g, cond);
	const uint8_t *b = bool_values(a, c);
	int rk = c->shape.rank;
	if (!b || rk < 2)
		return false;
	for (int d = 0; d < rk - 2; d++)
		if (c->shape.d[d] != 1)
			return false;
	int64_t L = c->shape.d[rk - 2], S = c->shape.d[rk - 1];
	for (int64_t i = 0; i < L; i++)
		for (int64_t j = 0; j < S; j++)
			if ((b[i * S + j] != 0) != (j > i))
				return false;
	return true;
}

static bool last_axis(const ir_node *n)
{
	return ir_axis(n->attrs->axis, n->shape.rank) == n->shape.rank - 1;
}

static bool once(const att *a, ir_ref r)
{
	return a->uses[r] == 1;
}

static ir_ref rewrite(rw *r, ir_ref old, void *ctx, sn_err *e)
{
	const att *a = ctx;
	const ir_graph *g = a->g;
	const ir_node *mm = N(g, old);
	if (mm->op != IR_OP_matmul)
		return IR_NONE;
	ir_ref p = mm->in[0], v = mm->in[1];
	const ir_node *pn = N(g, p);
	if (pn->op != IR_OP_softmax || !last_axis(pn) || !once(a, p))
		return IR_NONE;
	ir_ref x = pn->in[0], mask = IR_NONE;
	bool causal = false;
	const ir_node *xn = N(g, x);
	double ninf;
	const uint8_t *hide = NULL; /* a bool const whose true entries hide */
	const ir_node *hn = NULL;
	if (xn->op == IR_OP_where && once(a, x) && scalar_const(g, xn->in[1], &ninf) && isinf(ninf) && ninf < 0) {
		hn = N(g, xn->in[0]);
		if (is_causal(g, xn->in[0]) || causal_values(a, xn->in[0]))
			causal = true;
		else if (hn->op == IR_OP_const && hn->dtype == IR_BOOL && hn->data)
			hide = hn->data;
		else
			return IR_NONE;
		x = xn->in[2];
	} else if (xn->op == IR_OP_add && once(a, x)) {
		/* the operand that leads to the scores is Y; the other the mask */
		for (int k = 0; k < 2; k++) {
			const ir_node *y = N(g, xn->in[k]);
			if ((y->op == IR_OP_mul || y->op == IR_OP_div || y->op == IR_OP_matmul) &&
			    ir_shape_eq(&y->shape, &xn->shape)) {
				mask = xn->in[1 - k];
				x = xn->in[k];
				break;
			}
		}
		if (mask == IR_NONE)
			return IR_NONE;
	}
	double scale = 1.0, c;
	xn = N(g, x);
	ir_ref s = x;
	if ((xn->op == IR_OP_mul || xn->op == IR_OP_div) && once(a, x)) {
		if (scalar_const(g, xn->in[1], &c))
			s = xn->in[0], scale = xn->op == IR_OP_mul ? c : 1.0 / c;
		else if (xn->op == IR_OP_mul && scalar_const(g, xn->in[0], &c))
			s = xn->in[1], scale = c;
		else
			return IR_NONE;
	}
	if (!(scale > 0) || isinf(scale))
		return IR_NONE;
	const ir_node *sn = N(g, s);
	if (sn->op != IR_OP_matmul || !once(a, s))
		return IR_NONE;
	ir_ref q = sn->in[0], kt = sn->in[1];
	const ir_node *ktn = N(g, kt), *qn = N(g, q), *vn = N(g, v);
	int rk = ktn->shape.rank;
	if (rk < 2 || qn->shape.rank < 2 || vn->shape.rank < 2 || qn->dtype != ktn->dtype || qn->dtype != vn->dtype)
		return IR_NONE;
	/* K from KT, its last two axes swapped */
	ir_attrs at;
	ir_attrs_init(IR_OP_transpose, &at);
	at.perm.n = rk;
	for (int d = 0; d < rk; d++)
		at.perm.v[d] = d;
	at.perm.v[rk - 2] = rk - 1;
	at.perm.v[rk - 1] = rk - 2;
	ir_ref in[4];
	sn_err sub = {0};
	in[0] = r->map[kt];
	ir_ref k = ir_add(r->dst, IR_OP_transpose, in, 1, &at, &sub);
	if (k == IR_NONE)
		return IR_NONE;
	ir_attrs_init(IR_OP_scaled_dot_product_attention, &at);
	at.causal = causal;
	at.scale = scale;
	in[0] = r->map[q];
	in[1] = k;
	in[2] = r->map[v];
	uint32_t nin = 3;
	if (mask != IR_NONE)
		in[nin++] = r->map[mask];
	if (hide) { /* SDPA's bool mask keeps where true: the negation */
		int64_t n = ir_numel(&hn->shape);
		uint8_t *keep = malloc(n > 0 ? (size_t)n : 1);
		if (!keep) {
			sn_errf(e, SN_EINTERNAL, "out of memory");
			return IR_NONE;
		}
		for (int64_t i = 0; i < n; i++)
			keep[i] = !hide[i];
		in[nin] = ir_add_const(r->dst, IR_BOOL, &hn->shape, keep, &sub);
		free(keep);
		if (in[nin] == IR_NONE)
			return IR_NONE;
		nin++;
	}
	ir_ref out = ir_add(r->dst, IR_OP_scaled_dot_product_attention, in, nin, &at, &sub);
	if (out == IR_NONE)
		return IR_NONE; /* the shapes do not fit: leave it as written */
	if (mm->name && rw_set_name(r, out, mm->name) != SN_OK) {
		sn_errf(e, SN_EINTERNAL, "out of memory");
		return IR_NONE;
	}
	r->dst->nodes[out].line = mm->line;
	r->dst->nodes[out].col = mm->col;
	return out;
}

int pass_attention(ir_graph **g, pass_ctx *ctx, sn_err *e)
{
	att a = {.g = *g, .uses = rw_uses(*g), .ws = ctx ? ctx->ws : NULL};
	if (!a.uses)
		return sn_errf(e, SN_EINTERNAL, "attention: out of memory");
	ir_graph *ng = rw_map(*g, rewrite, &a, e);
	free(a.uses);
	if (!ng)
		return e->code ? e->code : sn_errf(e, SN_EINTERNAL, "attention: out of memory");
	ir_graph_free(*g);
	*g = ng;
	return SN_OK;
}
