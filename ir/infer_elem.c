/* infer_elem.c: shape rules of sources (params, consts, inputs, iota) and
 * elementwise ops: unary, binary with broadcasting, casts, comparisons,
 * where, the float tests isnan and isinf. */
#include "infer_impl.h"

/* ---- sources ------------------------------------------------------------- */

int ir_rule_source(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	if ((unsigned)n->dtype >= IR_NDTYPES)
		return fail(e, n, "invalid dtype %d", (int)n->dtype);
	if (n->shape.rank < 0 || n->shape.rank > IR_MAX_RANK)
		return fail(e, n, "rank %d is out of range (0 to %d)", n->shape.rank, IR_MAX_RANK);
	for (int i = 0; i < n->shape.rank; i++) {
		int64_t d = n->shape.d[i];
		if (d == IR_DIM_INFER)
			return fail(e, n, "dim %d is -1, not a size or a symbol", i);
		if (!dim_ok(g, d))
			return fail(e, n, "dim %d names symbol %lld, which the graph does not have",
				    i, LL(sym_id(d)));
	}
	*t = n->dtype;
	*s = n->shape;
	return SN_OK;
}

int ir_rule_iota(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	int a;
	if (ir_rule_source(g, n, t, s, e) != SN_OK || axis_of(g, n, n->attrs->axis, n, &a, e) != SN_OK)
		return e->code;
	return need_numeric(g, n, n, "dtype", e);
}

/* ---- elementwise ---------------------------------------------------------- */

int ir_rule_unary(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	if (need_numeric(g, n, IN(0), "operand", e) != SN_OK)
		return e->code;
	*t = IN(0)->dtype;
	*s = IN(0)->shape;
	return SN_OK;
}

int ir_rule_unary_float(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	if (need_float(g, n, IN(0), "operand", e) != SN_OK)
		return e->code;
	*t = IN(0)->dtype;
	*s = IN(0)->shape;
	return SN_OK;
}

int ir_rule_cast(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	*t = n->attrs->dtype;
	*s = IN(0)->shape;
	return SN_OK;
}

/* Same dtype and broadcast shapes; the dtype class is checked by callers. */
static int binary_common(const ir_graph *g, const ir_node *n, ir_shape *s, sn_err *e)
{
	const ir_node *a = IN(0), *b = IN(1);
	if (a->dtype != b->dtype)
		return fail(e, n, "operands %s and %s have different dtypes (no implicit promotion)",
			    TY(a), TY(b));
	if (!bcast(&a->shape, &b->shape, s))
		return fail(e, n, "shapes %s and %s do not broadcast", TY(a), TY(b));
	return SN_OK;
}

int ir_rule_binary(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	if (binary_common(g, n, s, e) != SN_OK || need_numeric(g, n, IN(0), "operand", e) != SN_OK)
		return e->code;
	*t = IN(0)->dtype;
	return SN_OK;
}

int ir_rule_binary_float(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	if (binary_common(g, n, s, e) != SN_OK || need_float(g, n, IN(0), "operand", e) != SN_OK)
		return e->code;
	*t = IN(0)->dtype;
	return SN_OK;
}

int ir_rule_compare(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	if (binary_common(g, n, s, e) != SN_OK)
		return e->code;
	*t = IR_BOOL;
	return SN_OK;
}

int ir_rule_where(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *c = IN(0), *x = IN(1), *y = IN(2);
	if (c->dtype != IR_BOOL)
		return fail(e, n, "condition %s must be bool", TY(c));
	if (x->dtype != y->dtype)
		return fail(e, n, "operands %s and %s have different dtypes (no implicit promotion)",
			    TY(x), TY(y));
	ir_shape r;
	if (!bcast(&c->shape, &x->shape, &r) || !bcast(&r, &y->shape, s))
		return fail(e, n, "shapes %s, %s and %s do not broadcast", TY(c), TY(x), TY(y));
	*t = x->dtype;
	return SN_OK;
}


/* isnan, isinf: a float operand, a bool result of its shape. */
int ir_rule_unary_test(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	if (need_float(g, n, IN(0), "operand", e) != SN_OK)
		return e->code;
	*t = IR_BOOL;
	*s = IN(0)->shape;
	return SN_OK;
}
