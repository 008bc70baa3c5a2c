/* attention.c: recognizes attention written as matrix products and a
 * softmax, and rewrites it into scaled_dot_product_attention, so one
 * kernel computes it without storing the scores (DESIGN.md, Passes).
 *
 * On every matmul(P, V) the pattern is read backwards:
 *
 *   P = cast*(softmax(X, last axis))          casts between floats
 *     | cast*(where(isnan(A), 0, A))          A that softmax: torch's SDPA
 *                                             guard (fills that cannot
 *                                             hide a row as NaN only)
 *   X = cast(X) | mul(X, c) | mul(c, X) | div(X, c)     c a scalar const
 *                                             (or a known scalar param) > 0:
 *                                             the scale, which also scales
 *                                             the mask terms below it
 *     | add(X, M) | add(M, X) | sub(X, M)     M: an additive mask term
 *     | where(C, F, X)                        F: -inf or a fill that hides
 *     | where(C, X, F)                          (<= -1e30, or fp16's lowest):
 *                                             C hides (keeps) where true;
 *                                             C causal (j > i: iotas
 *                                             compared, or bool values
 *                                             known to be triu(1)) is the
 *                                             causal flag
 *     | reshape(X)                            [a*b, h, L, S] from
 *                                             [a, b, h, L, S] and back
 *                                             (Swin's shifted windows: a
 *                                             mask per window between)
 *     | S
 *   S = matmul(Q, KT)    Q, KT with their own scalar muls/divs folded into
 *                        the scale (torch's sdpa decomposition scales q and
 *                        k by sqrt(scale) each); K is KT's source when KT
 *                        is a transpose of the last two axes (or a reshape
 *                        of one over the leading axes), else a new
 *                        transpose that canonicalize folds.
 *
 * Every node from S to P is read once (by the next). The mask parts become
 * one mask: the causal flag alone; one where with a -inf fill as the bool
 * mask (its condition, negated where true hides: a const negated in
 * place, where(K, false, true) read as K); anything else one additive
 * mask in the query's dtype, the sum of the terms, each where a
 * where(C, fill, 0). Keys and values repeated to the query heads (GQA:
 * reshape(expand(...)) with one axis of 1 expanded, as repeat_kv,
 * repeat_interleave and unsqueeze-tile-reshape export; or a gather of
 * heads h / r) are read at their own heads, which the op takes, when both
 * fold by the same factor. The pattern's old nodes are left for DCE.
 * Nothing here reads the precision: bf16 graphs match as fp32 ones. */
#include "passes/passes.h"
#include "passes/rewrite.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct att {
	const ir_graph *g;
	uint32_t *uses;
	const ir_wstore *ws; /* NULL when the weights are unknown */
	uint8_t *facts;      /* per node: term_facts, 0 until asked */
} att;

enum { PART_ADD, PART_SUB, PART_HIDE, PART_KEEP, PART_CAUSAL };

/* One mask part between the scores and the softmax, scaled by coef (the
 * product of the scales above it). ADD/SUB: r is added/subtracted; HIDE:
 * where(r, fill, X); KEEP: where(r, X, fill); CAUSAL: r true where j > i. */
typedef struct part {
	int kind;
	ir_ref r;
	double fill, coef;
	bool split;  /* r is in the windows' view [a, b, ...] (see match) */
	bool finite; /* ADD/SUB: r's values are known and finite */
	bool rows;   /* ADD: r's values are known, each row keeps a key */
	bool causal; /* ADD: r's values are known, 0 where j <= i and hiding
		      * where j > i in every [i, j] slice (HF's causal mask as
		      * an initializer) */
} part;

#define MAX_PARTS 8

/* Swin's shifted windows: the scores [a*b, h, L, S] reshaped to
 * [a, b, h, L, S] (batches, windows), a mask per window added, and
 * reshaped back. Between the two reshapes split is set, and the parts
 * found there are reshaped to the scores' view. */
typedef struct match {
	ir_ref q, kt;
	double scale;
	part parts[MAX_PARTS];
	int nparts;
	bool split;
	int rk5; /* the windows' view's rank */
	int64_t a, b;
} match;

static const ir_node *N(const ir_graph *g, ir_ref r)
{
	return &g->nodes[r];
}

/* The values of a const, or of a param whose weights are known (ONNX
 * initializers import as params; a compiled plan holds its weights, and
 * the plan cache rebuilds when they change). NULL otherwise. */
static const void *values(const att *a, const ir_node *c)
{
	if (c->op == IR_OP_const)
		return c->data;
	if (c->op != IR_OP_param || !a->ws || !c->pname)
		return NULL;
	const ir_tensor *t = ir_ws_get(a->ws, c->pname);
	int64_t n = ir_numel(&c->shape);
	if (!t || t->dtype != c->dtype || n < 0 || t->nbytes != (size_t)n * ir_dtype_size(c->dtype) ||
	    !ir_shape_eq(&t->shape, &c->shape))
		return NULL;
	return t->data;
}

/* The values of a float const or param, as values() reads them, except
 * that a param's stored values may be of another float dtype (*dt): the
 * precision pass makes bf16 params whose weights the API converts later. */
static const void *float_values(const att *a, const ir_node *c, ir_dtype *dt)
{
	*dt = c->dtype;
	if (!ir_dtype_is_float(c->dtype))
		return NULL;
	if (c->op == IR_OP_const)
		return c->data;
	if (c->op != IR_OP_param || !a->ws || !c->pname)
		return NULL;
	const ir_tensor *t = ir_ws_get(a->ws, c->pname);
	int64_t n = ir_numel(&c->shape);
	if (!t || !ir_dtype_is_float(t->dtype) || n < 0 || t->nbytes != (size_t)n * ir_dtype_size(t->dtype) ||
	    !ir_shape_eq(&t->shape, &c->shape))
		return NULL;
	*dt = t->dtype;
	return t->data;
}

static bool scalar_const(const att *a, ir_ref r, double *v)
{
	const ir_node *n = N(a->g, r);
	const void *d;
	ir_dtype dt;
	unsigned char buf[16];
	if (ir_numel(&n->shape) != 1 || !(d = float_values(a, n, &dt)))
		return false;
	ir_store(n->dtype, buf, 0, ir_load(dt, d, 0)); /* as the graph computes it */
	*v = ir_load(n->dtype, buf, 0);
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

/* c's values are known, its leading axes all 1, true exactly where j > i. */
static bool causal_values(const att *a, ir_ref cond)
{
	const ir_node *c = N(a->g, cond);
	const uint8_t *b = c->dtype == IR_BOOL ? values(a, c) : NULL;
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

/* A fill that hides a score as -inf does: -inf, or so low that adding a
 * score to it leaves it (finfo.min of f32 and bf16), or fp16's lowest. */
static bool hides(double f, ir_dtype t)
{
	return (isinf(f) && f < 0) || f <= -1e30 || (t == IR_F16 && f <= -65504);
}

/* The lowest finite value of float dtype t. */
static double lowest(ir_dtype t)
{
	switch (t) {
	case IR_F16:
		return -65504.0;
	case IR_BF16:
		return -3.3895313892515355e38;
	default:
		return -FLT_MAX;
	}
}

/* Whether s broadcasts to t without widening it. */
static bool narrower(const ir_shape *s, const ir_shape *t)
{
	if (s->rank > t->rank)
		return false;
	for (int d = 1; d <= s->rank; d++)
		if (s->d[s->rank - d] != 1 && s->d[s->rank - d] != t->d[t->rank - d])
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

static bool float_cast(const ir_graph *g, const ir_node *n)
{
	return n->op == IR_OP_cast && ir_dtype_is_float(n->dtype) && ir_dtype_is_float(N(g, n->in[0])->dtype);
}

static bool push(match *m, int kind, ir_ref r, double fill, double coef)
{
	if (m->nparts == MAX_PARTS)
		return false;
	m->parts[m->nparts++] = (part){kind, r, fill, coef, m->split, false, false, false};
	return true;
}

static bool zero_const(const att *a, ir_ref r)
{
	double c;
	return scalar_const(a, r, &c) && c == 0;
}

/* An added term where(C, F, 0) or where(C, 0, F) with a fill F that hides
 * is the part HIDE or KEEP of C (*t becomes C): the same scores, and with
 * F -inf a bool mask. PART_ADD otherwise. */
static int where_fill(const att *a, ir_ref *t, double *fill)
{
	const ir_node *w = N(a->g, *t);
	if (w->op != IR_OP_where || N(a->g, w->in[0])->dtype != IR_BOOL)
		return PART_ADD;
	for (int k = 1; k <= 2; k++)
		if (zero_const(a, w->in[3 - k]) && scalar_const(a, w->in[k], fill) &&
		    hides(*fill, N(a->g, w->in[k])->dtype)) {
			*t = w->in[0];
			return k == 1 ? PART_HIDE : PART_KEEP;
		}
	return PART_ADD;
}

/* Reads X (the softmax's input) down to S = matmul(Q, KT), collecting the
 * scale and the mask parts into m. */
static bool scores(const att *a, ir_ref r, match *m, int depth)
{
	const ir_graph *g = a->g;
	const ir_node *n = N(g, r);
	double c;
	if (depth > 32 || !once(a, r))
		return false;
	switch (n->op) {
	case IR_OP_cast:
		return float_cast(g, n) && scores(a, n->in[0], m, depth + 1);
	case IR_OP_mul:
		for (int k = 0; k < 2; k++)
			if (scalar_const(a, n->in[k], &c) && c > 0 && !isinf(c)) {
				m->scale *= c;
				return scores(a, n->in[1 - k], m, depth + 1);
			}
		return false;
	case IR_OP_div:
		if (!scalar_const(a, n->in[1], &c) || !(c > 0) || isinf(c))
			return false;
		m->scale /= c;
		return scores(a, n->in[0], m, depth + 1);
	case IR_OP_add:
	case IR_OP_sub:
		/* the operand that leads to the scores is X; the other a term */
		for (int k = 0; k < (n->op == IR_OP_add ? 2 : 1); k++) {
			match save = *m;
			int kind = n->op == IR_OP_add ? PART_ADD : PART_SUB;
			ir_ref t = n->in[1 - k];
			double fill = 0;
			if (kind == PART_ADD)
				kind = where_fill(a, &t, &fill);
			if (push(m, kind, t, fill, m->scale) && scores(a, n->in[k], m, depth + 1))
				return true;
			*m = save;
		}
		return false;
	case IR_OP_where: {
		ir_ref cond = n->in[0];
		if (N(g, cond)->dtype != IR_BOOL)
			return false;
		if (scalar_const(a, n->in[1], &c) && hides(c, N(g, n->in[1])->dtype)) {
			bool causal = is_causal(g, cond) || causal_values(a, cond);
			return push(m, causal ? PART_CAUSAL : PART_HIDE, cond, c, m->scale) &&
			       scores(a, n->in[2], m, depth + 1);
		}
		if (scalar_const(a, n->in[2], &c) && hides(c, N(g, n->in[2])->dtype))
			return push(m, PART_KEEP, cond, c, m->scale) && scores(a, n->in[1], m, depth + 1);
		return false;
	}
	case IR_OP_reshape: {
		/* [a*b, rest] from [a, b, rest] (split opens) or the reverse
		 * (split closes); rest the last three axes */
		const ir_shape *o = &n->shape, *i = &N(g, n->in[0])->shape;
		if (o->rank >= 4 && i->rank == o->rank + 1 && !m->split &&
		    !memcmp(&i->d[2], &o->d[1], (size_t)(o->rank - 1) * sizeof o->d[0]) && i->d[0] > 0 &&
		    i->d[1] > 0 && i->d[0] * i->d[1] == o->d[0]) {
			m->split = true, m->rk5 = i->rank, m->a = i->d[0], m->b = i->d[1];
			return scores(a, n->in[0], m, depth + 1);
		}
		if (i->rank >= 4 && o->rank == i->rank + 1 && m->split && o->d[0] == m->a && o->d[1] == m->b &&
		    !memcmp(&o->d[2], &i->d[1], (size_t)(i->rank - 1) * sizeof o->d[0])) {
			m->split = false;
			return scores(a, n->in[0], m, depth + 1);
		}
		return false;
	}
	case IR_OP_matmul:
		if (m->split)
			return false;
		m->q = n->in[0];
		m->kt = n->in[1];
		return true;
	default:
		return false;
	}
}

/* r with its scalar muls and divs peeled off into *scale. */
static ir_ref peel_scale(const att *a, ir_ref r, double *scale)
{
	for (int i = 0; i < 8; i++) {
		const ir_node *n = N(a->g, r);
		double c;
		if (n->op == IR_OP_mul && scalar_const(a, n->in[1], &c) && c > 0 && !isinf(c))
			*scale *= c, r = n->in[0];
		else if (n->op == IR_OP_mul && scalar_const(a, n->in[0], &c) && c > 0 && !isinf(c))
			*scale *= c, r = n->in[1];
		else if (n->op == IR_OP_div && scalar_const(a, n->in[1], &c) && c > 0 && !isinf(c))
			*scale /= c, r = n->in[0];
		else
			break;
	}
	return r;
}

/* Whether n is a transpose that swaps its last two axes only. */
static bool swap_last2(const ir_node *n)
{
	int rk = n->shape.rank;
	if (n->op != IR_OP_transpose || rk < 2 || (int)n->attrs->perm.n != rk)
		return false;
	for (int d = 0; d < rk; d++) {
		int64_t want = d == rk - 2 ? rk - 1 : d == rk - 1 ? rk - 2 : d;
		if (n->attrs->perm.v[d] != want)
			return false;
	}
	return true;
}

/* The product of s's dims [from, rank); -1 when one is a symbol. */
static int64_t inner(const ir_shape *s, int from)
{
	int64_t p = 1;
	for (int d = from; d < s->rank; d++) {
		if (s->d[d] < 0)
			return -1;
		p *= s->d[d];
	}
	return p;
}

static ir_ref add_reshape(rw *r, ir_ref src, const ir_shape *to)
{
	const ir_node *n = &r->dst->nodes[src];
	if (ir_shape_eq(&n->shape, to))
		return src;
	ir_attrs at;
	ir_attrs_init(IR_OP_reshape, &at);
	at.shape.n = to->rank;
	for (int d = 0; d < to->rank; d++)
		at.shape.v[d] = to->d[d];
	sn_err sub = {0};
	return ir_add(r->dst, IR_OP_reshape, &src, 1, &at, &sub);
}

/* A tensor of shape x ([..., H, S, E]) whose value is src's, reshaped to
 * x, with its heads repeated r times each from a tensor of H / r heads
 * (GQA). Sets *kv to that tensor in dst (a reshape of the expand's input,
 * or the gather's data) and returns r; 0 when src is no such repeat. */
static int64_t repeat_of(const att *a, rw *r, ir_ref src, const ir_shape *x, ir_ref *kv)
{
	const ir_graph *g = a->g;
	int hx = x->rank - 3;
	if (hx < 0 || x->d[hx] <= 1)
		return 0;
	const ir_node *n = N(g, src);
	if (n->op == IR_OP_gather && ir_shape_eq(&n->shape, x)) {
		const ir_node *d = N(g, n->in[0]), *ix = N(g, n->in[1]);
		const void *iv = values(a, ix);
		int64_t h = x->d[hx], hk = d->shape.rank == x->rank ? d->shape.d[hx] : 0;
		if (ir_axis(n->attrs->axis, d->shape.rank) != hx || !iv || ix->shape.rank != 1 || ix->shape.d[0] != h ||
		    ir_dtype_is_float(ix->dtype) || hk <= 0 || h % hk)
			return 0;
		for (int64_t i = 0; i < h; i++)
			if ((int64_t)ir_load(ix->dtype, iv, (size_t)i) != i / (h / hk))
				return 0;
		*kv = r->map[n->in[0]];
		return h / hk;
	}
	while (n->op == IR_OP_reshape) /* the order of the elements is kept */
		n = N(g, n->in[0]);
	if (n->op != IR_OP_expand)
		return 0;
	const ir_shape *es = &n->shape, *us = &N(g, n->in[0])->shape;
	int off = es->rank - us->rank, ax = -1;
	if (off < 0)
		return 0;
	for (int d = 0; d < es->rank; d++) {
		int64_t u = d < off ? 1 : us->d[d - off];
		if (u == es->d[d])
			continue;
		if (ax >= 0 || u != 1)
			return 0;
		ax = d;
	}
	if (ax < 0)
		return 0;
	int64_t rep = es->d[ax], in_e = inner(es, ax + 1);
	if (rep <= 1 || in_e < 0 || in_e != inner(x, hx + 1) || x->d[hx] % rep)
		return 0;
	ir_shape ks = *x;
	ks.d[hx] /= rep;
	ir_ref k = add_reshape(r, r->map[n->in[0]], &ks);
	if (k == IR_NONE)
		return 0;
	*kv = k;
	return rep;
}

/* The key in dst from KT (old): KT's source where KT swaps it last two
 * axes, or is a reshape over the leading axes of such a swap; else a new
 * transpose. *src and *shape: the old value whose elements, reshaped to
 * *shape, are K (for the GQA fold); *src IR_NONE when K is new. */
static ir_ref key_of(const att *a, rw *r, ir_ref kt, double *scale, ir_ref *src, ir_shape *shape)
{
	const ir_graph *g = a->g;
	const ir_node *n = N(g, kt);
	int rk = n->shape.rank;
	*src = IR_NONE;
	*shape = n->shape;
	kt = peel_scale(a, kt, scale);
	n = N(g, kt);
	if (n->shape.rank != rk)
		return IR_NONE;
	shape->d[rk - 2] = n->shape.d[rk - 1];
	shape->d[rk - 1] = n->shape.d[rk - 2];
	if (swap_last2(n)) {
		*src = peel_scale(a, n->in[0], scale);
		return r->map[*src];
	}
	if (n->op == IR_OP_reshape) {
		const ir_node *t = N(g, n->in[0]);
		int tr = t->shape.rank;
		if (swap_last2(t) && tr >= 2 && t->shape.d[tr - 2] == n->shape.d[rk - 2] &&
		    t->shape.d[tr - 1] == n->shape.d[rk - 1]) {
			*src = peel_scale(a, t->in[0], scale);
			return add_reshape(r, r->map[*src], shape);
		}
	}
	ir_attrs at;
	ir_attrs_init(IR_OP_transpose, &at);
	at.perm.n = rk;
	for (int d = 0; d < rk; d++)
		at.perm.v[d] = d;
	at.perm.v[rk - 2] = rk - 1;
	at.perm.v[rk - 1] = rk - 2;
	sn_err sub = {0};
	ir_ref in = r->map[kt];
	return ir_add(r->dst, IR_OP_transpose, &in, 1, &at, &sub);
}

static ir_ref scalar(rw *r, ir_dtype t, double v)
{
	unsigned char buf[16];
	ir_shape s = {0};
	sn_err sub = {0};
	ir_store(t, buf, 0, v);
	return ir_add_const(r->dst, t, &s, buf, &sub);
}

static ir_ref node2(rw *r, ir_op op, ir_ref x, ir_ref y)
{
	ir_ref in[2] = {x, y};
	sn_err sub = {0};
	return ir_add(r->dst, op, in, 2, NULL, &sub);
}

static ir_ref node3(rw *r, ir_op op, ir_ref x, ir_ref y, ir_ref z)
{
	ir_ref in[3] = {x, y, z};
	sn_err sub = {0};
	return ir_add(r->dst, op, in, 3, NULL, &sub);
}

/* x (dst), a part found in the windows' view [a, b, ...] (broadcast to
 * it), in the scores' view [a*b, ...]: its first two axes expanded where
 * they must be and merged. */
static ir_ref unsplit(const match *m, rw *r, ir_ref x)
{
	if (x == IR_NONE)
		return x;
	ir_shape s = r->dst->nodes[x].shape, t = {0};
	if (s.rank > m->rk5 || m->rk5 < 2)
		return IR_NONE;
	int pad = m->rk5 - s.rank; /* broadcast from the right */
	t.rank = m->rk5;
	for (int d = 0; d < m->rk5; d++)
		t.d[d] = d < pad ? 1 : s.d[d - pad];
	if (!(t.d[0] == 1 && m->a == 1)) { /* a copy of the mask per batch and window */
		t.d[0] = m->a, t.d[1] = m->b;
		ir_attrs at;
		ir_attrs_init(IR_OP_expand, &at);
		at.shape.n = t.rank;
		for (int d = 0; d < t.rank; d++)
			at.shape.v[d] = t.d[d];
		sn_err sub = {0};
		if ((x = ir_add(r->dst, IR_OP_expand, &x, 1, &at, &sub)) == IR_NONE)
			return IR_NONE;
	}
	ir_shape o = {.rank = t.rank - 1};
	o.d[0] = t.d[0] * t.d[1];
	for (int d = 2; d < t.rank; d++)
		o.d[d - 1] = t.d[d];
	return add_reshape(r, x, &o);
}

/* The bool mask (true keeps) for one part that hides with -inf; IR_NONE
 * on failure (e set on OOM). */
static ir_ref keep_mask(const att *a, rw *r, const part *p, sn_err *e)
{
	const ir_node *c = N(a->g, p->r);
	if (p->kind == PART_KEEP)
		return r->map[p->r];
	/* HIDE: the negation */
	if (c->op == IR_OP_where) {
		double t, f;
		const ir_node *x = N(a->g, c->in[1]), *y = N(a->g, c->in[2]);
		if (x->dtype == IR_BOOL && y->dtype == IR_BOOL && x->op == IR_OP_const && y->op == IR_OP_const &&
		    ir_numel(&x->shape) == 1 && ir_numel(&y->shape) == 1 && x->data && y->data) {
			t = ir_load(IR_BOOL, x->data, 0), f = ir_load(IR_BOOL, y->data, 0);
			if (t == 0 && f != 0 && N(a->g, c->in[0])->dtype == IR_BOOL &&
			    ir_shape_eq(&N(a->g, c->in[0])->shape, &c->shape))
				return r->map[c->in[0]];
		}
	}
	/* a const negated in place; a param keeps its key (its values stay
	 * out of the graph) */
	const uint8_t *hide = c->op == IR_OP_const ? c->data : NULL;
	if (hide) {
		int64_t n = ir_numel(&c->shape);
		uint8_t *keep = malloc(n > 0 ? (size_t)n : 1);
		if (!keep) {
			sn_errf(e, SN_EINTERNAL, "out of memory");
			return IR_NONE;
		}
		for (int64_t i = 0; i < n; i++)
			keep[i] = !hide[i];
		sn_err sub = {0};
		ir_ref k = ir_add_const(r->dst, IR_BOOL, &c->shape, keep, &sub);
		free(keep);
		return k;
	}
	return node3(r, IR_OP_where, r->map[p->r], scalar(r, IR_BOOL, 0), scalar(r, IR_BOOL, 1));
}

/* One part as an additive term of dtype t; IR_NONE on failure. */
static ir_ref term(const att *a, rw *r, const part *p, ir_dtype t)
{
	ir_ref x = r->map[p->r], zero;
	switch (p->kind) {
	case PART_ADD:
	case PART_SUB:
		if (N(a->g, p->r)->dtype != t) {
			ir_attrs at;
			ir_attrs_init(IR_OP_cast, &at);
			at.dtype = t;
			sn_err sub = {0};
			x = ir_add(r->dst, IR_OP_cast, &x, 1, &at, &sub);
		}
		if (x != IR_NONE && p->coef != 1)
			x = node2(r, IR_OP_mul, x, scalar(r, t, p->coef));
		if (x != IR_NONE && p->kind == PART_SUB) {
			sn_err sub = {0};
			x = ir_add(r->dst, IR_OP_neg, &x, 1, NULL, &sub);
		}
		return x;
	case PART_CAUSAL:
		return node3(r, IR_OP_where, x, scalar(r, t, -INFINITY), scalar(r, t, 0));
	default: /* a fill scaled as the scores above it are */
		zero = scalar(r, t, 0);
		double v = p->fill * p->coef;
		if (!isinf(p->fill) && (isinf(v) || v < lowest(t)))
			v = lowest(t); /* a finite fill stays finite */
		ir_ref f = scalar(r, t, v);
		return p->kind == PART_HIDE ? node3(r, IR_OP_where, x, f, zero) : node3(r, IR_OP_where, x, zero, f);
	}
}

enum {
	FACT_ASKED = 1,
	FACT_ZERO = 2,   /* all 0 */
	FACT_FINITE = 4, /* all finite in the node's dtype */
	FACT_ROWS = 8,   /* each row (last axis) has an entry > -1e30 */
	FACT_CAUSAL = 16 /* every [i, j] slice 0 where j <= i, hiding where j > i */
};

/* What the known values of float term r are (FACT_*; none when they are
 * unknown), read once per node: every layer adds the same mask. */
static unsigned term_facts(const att *a, ir_ref r)
{
	if (a->facts[r])
		return a->facts[r];
	const ir_node *tn = N(a->g, r);
	ir_dtype tdt;
	const void *tv = float_values(a, tn, &tdt);
	int64_t cnt = ir_numel(&tn->shape);
	int rk = tn->shape.rank;
	int64_t cols = rk ? tn->shape.d[rk - 1] : 1, rows = rk >= 2 ? tn->shape.d[rk - 2] : 1;
	bool zero = tv != NULL, finite = tv != NULL, keep = tv != NULL && cols > 0;
	bool causal = tv != NULL && rk >= 2 && rows > 0 && cols > 0;
	for (int64_t j = 0; tv && j < cnt; j++) {
		double x = ir_load(tdt, tv, (size_t)j);
		bool hid = isinf(x) ? x < 0 : x <= -1e30;
		zero = zero && x == 0;
		finite = finite && isfinite(x) && x >= lowest(tn->dtype) && -x >= lowest(tn->dtype);
		causal = causal && (j % cols > (j / cols) % rows ? hid : x == 0);
		if (j % cols == 0 && keep) { /* a row starts: one entry that keeps */
			int64_t k = 0;
			while (k < cols && !(ir_load(tdt, tv, (size_t)(j + k)) > -1e30))
				k++;
			keep = k < cols;
		}
	}
	a->facts[r] = (uint8_t)(FACT_ASKED | (zero ? FACT_ZERO : 0) | (finite ? FACT_FINITE : 0) |
				(keep ? FACT_ROWS : 0) | (causal ? FACT_CAUSAL : 0));
	return a->facts[r];
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
	while (float_cast(g, pn) && once(a, p))
		p = pn->in[0], pn = N(g, p);
	/* torch's sdpa decomposition: where(isnan(P), 0, P), a row with every
	 * key hidden 0 and not NaN */
	bool guard = false;
	if (pn->op == IR_OP_where && once(a, p) && zero_const(a, pn->in[1]) && N(g, pn->in[0])->op == IR_OP_isnan &&
	    once(a, pn->in[0]) && N(g, pn->in[0])->in[0] == pn->in[2] && a->uses[pn->in[2]] == 2) {
		p = pn->in[2], pn = N(g, p);
		guard = true;
	}
	if (pn->op != IR_OP_softmax || !last_axis(pn) || !(guard || once(a, p)))
		return IR_NONE;
	match m = {.scale = 1.0};
	if (!scores(a, pn->in[0], &m, 0))
		return IR_NONE;
	/* Terms whose values are known: all zero (the zero mask an export
	 * writes for no mask) dropped, when they do not widen the scores;
	 * all finite (in the dtype the graph reads them in), or each row
	 * keeping a key, safe under the guard; a causal one alone the causal
	 * flag (an exact rewrite: causal keeps j = 0 in every row). */
	for (int i = 0; i < m.nparts; i++) {
		part *pt = &m.parts[i];
		if ((pt->kind != PART_ADD && pt->kind != PART_SUB) || pt->split)
			continue;
		const ir_node *tn = N(g, pt->r);
		unsigned f = term_facts(a, pt->r);
		bool fits = narrower(&tn->shape, &pn->shape);
		pt->finite = f & FACT_FINITE;
		pt->rows = (f & FACT_ROWS) && pt->kind == PART_ADD;
		pt->causal = (f & FACT_CAUSAL) && pt->kind == PART_ADD && fits;
		if ((f & FACT_ZERO) && fits) {
			m.parts[i--] = m.parts[--m.nparts];
			continue;
		}
	}
	if (m.nparts == 1 && m.parts[0].causal)
		m.parts[0].kind = PART_CAUSAL;
	/* Under the guard, no mask part may hide a whole row as NaN: causal
	 * keeps the diagonal; a where's -inf fill becomes the dtype's lowest
	 * finite value, so such a row averages every value, as a finfo.min
	 * mask does, where the guard gave 0; additive terms only when their
	 * values are known and finite, or alone and keeping a key per row. */
	for (int i = 0; guard && i < m.nparts; i++) {
		part *pt = &m.parts[i];
		if ((pt->kind == PART_ADD || pt->kind == PART_SUB) && !pt->finite && !(pt->rows && m.nparts == 1))
			return IR_NONE;
		if ((pt->kind == PART_HIDE || pt->kind == PART_KEEP) && isinf(pt->fill))
			pt->fill = lowest(pn->dtype), pt->coef = 1;
	}
	ir_ref q = peel_scale(a, m.q, &m.scale);
	const ir_node *ktn = N(g, m.kt), *qn = N(g, q), *vn = N(g, v);
	int rk = ktn->shape.rank;
	ir_dtype dt = qn->dtype;
	if (rk < 2 || qn->shape.rank < 2 || vn->shape.rank < 2 || mm->dtype != dt)
		return IR_NONE;
	ir_ref ksrc, k, kv, vv;
	ir_shape ks;
	double scale = m.scale;
	if ((k = key_of(a, r, m.kt, &scale, &ksrc, &ks)) == IR_NONE)
		return IR_NONE;
	if (!(scale > 0) || isinf(scale) || r->dst->nodes[k].dtype != dt || vn->dtype != dt)
		return IR_NONE;
	/* GQA: both folded by the same factor, or neither */
	int64_t rk_ = ksrc != IR_NONE ? repeat_of(a, r, ksrc, &ks, &kv) : 0;
	int64_t rv = rk_ ? repeat_of(a, r, v, &vn->shape, &vv) : 0;
	ir_ref in[4];
	in[0] = r->map[q];
	in[1] = rk_ && rk_ == rv ? kv : k;
	in[2] = rk_ && rk_ == rv ? vv : r->map[v];
	ir_attrs at;
	ir_attrs_init(IR_OP_scaled_dot_product_attention, &at);
	at.scale = scale;
	uint32_t nin = 3;
	if (m.nparts == 1 && m.parts[0].kind == PART_CAUSAL) {
		at.causal = true;
	} else if (m.nparts == 1 && (m.parts[0].kind == PART_HIDE || m.parts[0].kind == PART_KEEP) &&
		   isinf(m.parts[0].fill)) {
		ir_ref km = keep_mask(a, r, &m.parts[0], e);
		if (m.parts[0].split)
			km = unsplit(&m, r, km);
		if ((in[nin++] = km) == IR_NONE)
			return IR_NONE;
	} else if (m.nparts) {
		ir_ref sum = IR_NONE;
		for (int i = 0; i < m.nparts; i++) {
			ir_ref t = term(a, r, &m.parts[i], dt);
			if (m.parts[i].split)
				t = unsplit(&m, r, t);
			if (t == IR_NONE)
				return IR_NONE;
			sum = sum == IR_NONE ? t : node2(r, IR_OP_add, sum, t);
			if (sum == IR_NONE)
				return IR_NONE;
		}
		in[nin++] = sum;
	}
	sn_err sub = {0};
	ir_ref out = ir_add(r->dst, IR_OP_scaled_dot_product_attention, in, nin, &at, &sub);
	if (out == IR_NONE || !ir_shape_eq(&r->dst->nodes[out].shape, &mm->shape) ||
	    r->dst->nodes[out].dtype != mm->dtype)
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
	att a = {.g = *g, .uses = rw_uses(*g), .ws = ctx ? ctx->ws : NULL,
		 .facts = calloc((*g)->nnodes ? (*g)->nnodes : 1, 1)};
	if (!a.uses || !a.facts) {
		free(a.uses);
		free(a.facts);
		return sn_errf(e, SN_EINTERNAL, "attention: out of memory");
	}
	ir_graph *ng = rw_map(*g, rewrite, &a, e);
	free(a.uses);
	free(a.facts);
	if (!ng)
		return e->code ? e->code : sn_errf(e, SN_EINTERNAL, "attention: out of memory");
	ir_graph_free(*g);
	*g = ng;
	return SN_OK;
}
