/* infer_index.c: shape rules of indexing by tensors: gather_elements,
 * scatter_elements and scatter_nd. */
#include "infer_impl.h"

static int need_index(const ir_graph *g, const ir_node *n, const ir_node *ix, sn_err *e)
{
	if (ix->dtype == IR_I32 || ix->dtype == IR_I64)
		return SN_OK;
	return fail(e, n, "indices %s must be i32 or i64", TY(ix));
}

/* gather_elements(data, indices), ONNX GatherElements / torch.gather:
 * indices has data's rank; the result has the indices' shape; outside
 * axis, each dim of indices is at most data's. */
int ir_rule_gather_elements(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0), *ix = IN(1);
	int a;
	if (need_index(g, n, ix, e) != SN_OK || axis_of(g, n, n->attrs->axis, x, &a, e) != SN_OK)
		return e->code;
	if (ix->shape.rank != x->shape.rank)
		return fail(e, n, "indices %s must have the rank of data %s", TY(ix), TY(x));
	for (int i = 0; i < x->shape.rank; i++) {
		int64_t di = ix->shape.d[i], dx = x->shape.d[i];
		if (i != a && di != dx && (di < 0 || dx < 0 || di > dx))
			return fail(e, n, "dim %d of indices %s exceeds that of data %s", i, TY(ix), TY(x));
	}
	*t = x->dtype;
	*s = ix->shape;
	return SN_OK;
}

static int scatter_red_ok(const ir_graph *g, const ir_node *n, const ir_node *x, sn_err *e)
{
	if (n->attrs->reduction != IR_SCATTER_NONE && x->dtype == IR_BOOL)
		return fail(e, n, "reduction %s needs numeric data, got %s",
			    ir_scatter_name(n->attrs->reduction), TY(x));
	return SN_OK;
}

/* scatter_elements(data, indices, updates), ONNX ScatterElements /
 * torch.scatter: indices and updates have one shape, of data's rank, each
 * dim at most data's outside axis; the result has data's type. */
int ir_rule_scatter_elements(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0), *ix = IN(1), *u = IN(2);
	int a;
	if (need_index(g, n, ix, e) != SN_OK || axis_of(g, n, n->attrs->axis, x, &a, e) != SN_OK ||
	    same_dtype(g, n, x, "data", u, "updates", e) != SN_OK || scatter_red_ok(g, n, x, e) != SN_OK)
		return e->code;
	if (!ir_shape_eq(&ix->shape, &u->shape))
		return fail(e, n, "indices %s and updates %s must have one shape", TY(ix), TY(u));
	if (ix->shape.rank != x->shape.rank)
		return fail(e, n, "indices %s must have the rank of data %s", TY(ix), TY(x));
	for (int i = 0; i < x->shape.rank; i++) {
		int64_t di = ix->shape.d[i], dx = x->shape.d[i];
		if (i != a && di != dx && (di < 0 || dx < 0 || di > dx))
			return fail(e, n, "dim %d of indices %s exceeds that of data %s", i, TY(ix), TY(x));
	}
	*t = x->dtype;
	*s = x->shape;
	return SN_OK;
}

/* scatter_nd(data, indices, updates), ONNX ScatterND: indices [..., k]
 * with k <= rank(data), concrete; updates = indices.shape[:-1] +
 * data.shape[k:]. */
int ir_rule_scatter_nd(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0), *ix = IN(1), *u = IN(2);
	if (need_index(g, n, ix, e) != SN_OK || same_dtype(g, n, x, "data", u, "updates", e) != SN_OK ||
	    scatter_red_ok(g, n, x, e) != SN_OK)
		return e->code;
	int q = ix->shape.rank;
	int64_t k = q ? ix->shape.d[q - 1] : -1;
	if (q < 1 || k < 1 || k > x->shape.rank)
		return fail(e, n, "indices %s must be [..., k] with 1 <= k <= %d (the rank of data %s)",
			    TY(ix), x->shape.rank, TY(x));
	ir_shape want = head(&ix->shape, q - 1);
	for (int i = (int)k; i < x->shape.rank; i++)
		if (!push_dim(&want, x->shape.d[i]))
			return fail(e, n, "updates would have rank above %d", IR_MAX_RANK);
	if (!ir_shape_eq(&want, &u->shape))
		return fail(e, n, "updates %s must have the shape %s", TY(u), type_s(g, u->dtype, &want).s);
	*t = x->dtype;
	*s = x->shape;
	return SN_OK;
}
