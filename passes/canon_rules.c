/* canon_rules.c: canonicalize's algebraic rules, one table row each
 * (canon.h). Every rule keeps the node's dtype and shape: the identities
 * on binary ops apply only when the other operand already has the result's
 * shape, so broadcasting is preserved. */
#include "passes/canon.h"

#include <string.h>

static const ir_node *op_of(const ir_graph *d, const ir_node *n, uint32_t k)
{
	return &d->nodes[n->in[k]];
}

/* Whether node r is a const whose elements all equal v. */
static bool const_all(const ir_graph *d, ir_ref r, double v)
{
	const ir_node *c = &d->nodes[r];
	int64_t n = ir_numel(&c->shape);
	if (c->op != IR_OP_const || !c->data || n < 0)
		return false;
	for (int64_t i = 0; i < n; i++)
		if (ir_load(c->dtype, c->data, (size_t)i) != v)
			return false;
	return true;
}

/* Operand k is the identity v and the other operand has the result's type. */
static bool ident_at(const ir_graph *d, const ir_node *n, uint32_t k, double v)
{
	const ir_node *x = op_of(d, n, 1 - k);
	return const_all(d, n->in[k], v) && x->dtype == n->dtype && ir_shape_eq(&x->shape, &n->shape);
}

static bool m_add0(const ir_graph *d, const ir_node *n) { return ident_at(d, n, 1, 0) || ident_at(d, n, 0, 0); }
static bool m_mul1(const ir_graph *d, const ir_node *n) { return ident_at(d, n, 1, 1) || ident_at(d, n, 0, 1); }
static bool m_rhs0(const ir_graph *d, const ir_node *n) { return ident_at(d, n, 1, 0); }
static bool m_rhs1(const ir_graph *d, const ir_node *n) { return ident_at(d, n, 1, 1); }

/* The operand that is not the identity. */
static ir_ref r_other(canon *c, const ir_node *n, const ir_node *like, sn_err *e)
{
	(void)like, (void)e;
	bool zero = n->op == IR_OP_add || n->op == IR_OP_sub;
	return ident_at(c->r.dst, n, 1, zero ? 0 : 1) ? n->in[0] : n->in[1];
}

/* The node is its operand (identity by shape or attribute). */
static ir_ref r_operand(canon *c, const ir_node *n, const ir_node *like, sn_err *e)
{
	(void)c, (void)like, (void)e;
	return n->in[0];
}

static ir_ref r_operand_of_operand(canon *c, const ir_node *n, const ir_node *like, sn_err *e)
{
	(void)like, (void)e;
	return op_of(c->r.dst, n, 0)->in[0];
}

static bool same_as_operand(const ir_graph *d, const ir_node *n)
{
	const ir_node *x = op_of(d, n, 0);
	return x->dtype == n->dtype && ir_shape_eq(&x->shape, &n->shape);
}

static bool m_neg_neg(const ir_graph *d, const ir_node *n) { return op_of(d, n, 0)->op == IR_OP_neg; }

/* ---- transpose ---- */

/* perm normalized into p; false when it is not a permutation of rank. */
static bool norm_perm(const ir_ints *perm, int rank, int64_t *p)
{
	if (perm->n != rank)
		return false;
	for (int i = 0; i < rank; i++) {
		int a = ir_axis(perm->v[i], rank);
		if (a < 0)
			return false;
		p[i] = a;
	}
	return true;
}

static bool is_identity_perm(const ir_ints *perm, int rank)
{
	int64_t p[IR_MAX_LIST];
	if (!norm_perm(perm, rank, p))
		return false;
	for (int i = 0; i < rank; i++)
		if (p[i] != i)
			return false;
	return true;
}

static bool m_transpose_id(const ir_graph *d, const ir_node *n)
{
	return is_identity_perm(&n->attrs->perm, op_of(d, n, 0)->shape.rank);
}

static bool m_transpose2(const ir_graph *d, const ir_node *n)
{
	return op_of(d, n, 0)->op == IR_OP_transpose;
}

/* transpose(transpose(x, p1), p2) = transpose(x, q), q[i] = p1[p2[i]]; x
 * itself when q is the identity. */
static ir_ref r_transpose2(canon *c, const ir_node *n, const ir_node *like, sn_err *e)
{
	const ir_node *t = op_of(c->r.dst, n, 0);
	int rank = n->shape.rank;
	int64_t p1[IR_MAX_LIST], p2[IR_MAX_LIST];
	if (!norm_perm(&t->attrs->perm, rank, p1) || !norm_perm(&n->attrs->perm, rank, p2)) {
		sn_errf(e, SN_EINPUT, "transpose: bad permutation");
		return IR_NONE;
	}
	ir_attrs a = *n->attrs;
	bool id = true;
	for (int i = 0; i < rank; i++) {
		a.perm.v[i] = p1[p2[i]];
		id &= a.perm.v[i] == i;
	}
	if (id)
		return t->in[0];
	ir_node q = *n;
	q.in = t->in;
	q.attrs = &a;
	return canon_emit(c, &q, like, e);
}

/* ---- views: reshape, flatten, squeeze, unsqueeze ---- */

static bool is_view(ir_op op)
{
	return op == IR_OP_reshape || op == IR_OP_flatten || op == IR_OP_squeeze || op == IR_OP_unsqueeze;
}

static bool m_view2(const ir_graph *d, const ir_node *n)
{
	return is_view(op_of(d, n, 0)->op);
}

/* view(view(x)) = reshape(x, the result's shape). */
static ir_ref r_view2(canon *c, const ir_node *n, const ir_node *like, sn_err *e)
{
	const ir_node *v = op_of(c->r.dst, n, 0);
	ir_attrs a;
	ir_attrs_init(IR_OP_reshape, &a);
	a.shape.n = n->shape.rank;
	memcpy(a.shape.v, n->shape.d, (size_t)n->shape.rank * sizeof a.shape.v[0]);
	ir_node q = {.op = IR_OP_reshape, .nin = 1, .in = v->in, .attrs = &a};
	return canon_emit(c, &q, like, e);
}

/* ---- casts ---- */

/* Whether every value of dtype a is exactly a value of dtype b. */
static bool exact_cast(ir_dtype a, ir_dtype b)
{
	if (a == b || a == IR_BOOL)
		return true;
	switch (a) {
	case IR_F16:
	case IR_BF16: return b == IR_F32;
	case IR_F8E4M3:
	case IR_F8E5M2: return b == IR_F16 || b == IR_BF16 || b == IR_F32;
	case IR_I8: return b == IR_I32 || b == IR_I64 || b == IR_F16 || b == IR_BF16 || b == IR_F32;
	case IR_U8: return b == IR_I32 || b == IR_I64 || b == IR_F16 || b == IR_BF16 || b == IR_F32;
	case IR_I32: return b == IR_I64;
	default: return false;
	}
}

static bool m_cast_same(const ir_graph *d, const ir_node *n)
{
	return op_of(d, n, 0)->dtype == n->dtype;
}

static bool m_cast2(const ir_graph *d, const ir_node *n)
{
	const ir_node *m = op_of(d, n, 0);
	return m->op == IR_OP_cast && exact_cast(op_of(d, m, 0)->dtype, m->dtype);
}

/* cast(cast(x, a), b) with x -> a exact = cast(x, b); x when b is x's dtype. */
static ir_ref r_cast2(canon *c, const ir_node *n, const ir_node *like, sn_err *e)
{
	const ir_node *m = op_of(c->r.dst, n, 0);
	if (op_of(c->r.dst, m, 0)->dtype == n->dtype)
		return m->in[0];
	ir_node q = *n;
	q.in = m->in;
	return canon_emit(c, &q, like, e);
}

/* ---- identity data movement ---- */

static bool m_slice_id(const ir_graph *d, const ir_node *n)
{
	const ir_ints *st = &n->attrs->steps;
	for (int32_t k = 0; k < st->n; k++)
		if (st->v[k] != 1)
			return false;
	return same_as_operand(d, n);
}

static bool m_concat1(const ir_graph *d, const ir_node *n)
{
	return n->nin == 1 && same_as_operand(d, n);
}

static bool m_pad0(const ir_graph *d, const ir_node *n)
{
	const ir_ints *p = &n->attrs->pad;
	for (int32_t k = 0; k < p->n; k++)
		if (p->v[k] != 0)
			return false;
	return same_as_operand(d, n);
}

/* ---- gathers at constant indices ---- */

/* The first index of gather n's constant indices when they are one scalar
 * or a run i, i+1, ..., i+L-1 inside the axis (negative ones counted from
 * its end); -1 otherwise. */
static int64_t gather_run(const ir_graph *d, const ir_node *n, int *axis)
{
	const ir_node *x = op_of(d, n, 0), *ix = op_of(d, n, 1);
	int64_t cnt = ir_numel(&ix->shape);
	if (ix->op != IR_OP_const || !ix->data || ix->shape.rank > 1 || cnt < 1 ||
	    (ix->dtype != IR_I64 && ix->dtype != IR_I32))
		return -1;
	int a = ir_axis(n->attrs->axis, x->shape.rank);
	if (a < 0)
		return -1;
	int64_t dim = x->shape.d[a], first = -1;
	if (dim < 1)
		return -1; /* symbolic or empty: the gather checks its indices */
	for (int64_t k = 0; k < cnt; k++) {
		int64_t v = (int64_t)ir_load(ix->dtype, ix->data, (size_t)k);
		if (v < 0)
			v += dim;
		if (v < 0 || v >= dim || (k && v != first + k))
			return -1; /* out of range: left to the gather's own error */
		if (!k)
			first = v;
	}
	*axis = a;
	return first;
}

static bool m_gather_run(const ir_graph *d, const ir_node *n)
{
	int a;
	return gather_run(d, n, &a) >= 0;
}

/* gather(x, i) at a constant scalar i = the slice [i, i+1) of the axis,
 * reshaped to drop it; at a constant run i..i+L-1 = the slice [i, i+L). A
 * slice is index-only (fusion computes it where it is read, a gather is a
 * kernel of its own): torchvision's attention selects q, k and v from one
 * projection this way, Hugging Face's poolers the first token. */
static ir_ref r_gather_run(canon *c, const ir_node *n, const ir_node *like, sn_err *e)
{
	const ir_graph *d = c->r.dst;
	int a = 0;
	int64_t i = gather_run(d, n, &a);
	const ir_node *ix = op_of(d, n, 1);
	int64_t len = ir_numel(&ix->shape);
	ir_attrs sa;
	ir_attrs_init(IR_OP_slice, &sa);
	sa.axes.n = sa.starts.n = sa.ends.n = sa.steps.n = 1;
	sa.axes.v[0] = a;
	sa.starts.v[0] = i;
	sa.ends.v[0] = i + len;
	sa.steps.v[0] = 1;
	bool scalar = ix->shape.rank == 0;
	ir_node q = {.op = IR_OP_slice, .nin = 1, .in = n->in, .attrs = &sa};
	ir_ref s = canon_emit(c, &q, scalar ? NULL : like, e);
	if (s == IR_NONE || !scalar)
		return s;
	ir_attrs ra;
	ir_attrs_init(IR_OP_reshape, &ra);
	ra.shape.n = n->shape.rank;
	memcpy(ra.shape.v, n->shape.d, (size_t)n->shape.rank * sizeof ra.shape.v[0]);
	ir_node r = {.op = IR_OP_reshape, .nin = 1, .in = &s, .attrs = &ra};
	return canon_emit(c, &r, like, e);
}

const canon_rule canon_rules[] = {
	{"x+0", IR_OP_add, m_add0, r_other},
	{"x-0", IR_OP_sub, m_rhs0, r_other},
	{"x*1", IR_OP_mul, m_mul1, r_other},
	{"x/1", IR_OP_div, m_rhs1, r_other},
	{"neg(neg x)", IR_OP_neg, m_neg_neg, r_operand_of_operand},
	{"identity transpose", IR_OP_transpose, m_transpose_id, r_operand},
	{"transpose(transpose x)", IR_OP_transpose, m_transpose2, r_transpose2},
	{"identity reshape", IR_OP_reshape, same_as_operand, r_operand},
	{"identity flatten", IR_OP_flatten, same_as_operand, r_operand},
	{"identity squeeze", IR_OP_squeeze, same_as_operand, r_operand},
	{"identity unsqueeze", IR_OP_unsqueeze, same_as_operand, r_operand},
	{"reshape(view x)", IR_OP_reshape, m_view2, r_view2},
	{"flatten(view x)", IR_OP_flatten, m_view2, r_view2},
	{"squeeze(view x)", IR_OP_squeeze, m_view2, r_view2},
	{"unsqueeze(view x)", IR_OP_unsqueeze, m_view2, r_view2},
	{"cast to the same dtype", IR_OP_cast, m_cast_same, r_operand},
	{"cast(exact cast x)", IR_OP_cast, m_cast2, r_cast2},
	{"identity slice", IR_OP_slice, m_slice_id, r_operand},
	{"identity expand", IR_OP_expand, same_as_operand, r_operand},
	{"concat of one", IR_OP_concat, m_concat1, r_operand},
	{"pad by zeros", IR_OP_pad, m_pad0, r_operand},
	{"gather at a constant run", IR_OP_gather, m_gather_run, r_gather_run},
};
const size_t canon_nrules = SN_COUNT(canon_rules);
