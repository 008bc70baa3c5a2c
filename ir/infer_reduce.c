/* infer_reduce.c: shape rules of reductions, softmax and the norms
 * (layer, batch, group), cumsum, argmax/argmin and topk. */
#include "infer_impl.h"

/* ---- reductions and normalizations --------------------------------------- */

int ir_rule_reduce(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	const ir_attrs *at = n->attrs;
	unsigned mask;
	if (need_numeric(g, n, x, "operand", e) != SN_OK ||
	    axes_mask(g, n, &at->axes, x->shape.rank, TY(x), &mask, e) != SN_OK)
		return e->code;
	if (at->axes.n == 0)
		mask = (1u << x->shape.rank) - 1;
	ir_shape r = {0};
	for (int i = 0; i < x->shape.rank; i++)
		if (!(mask & (1u << i)))
			r.d[r.rank++] = x->shape.d[i];
		else if (at->keepdims)
			r.d[r.rank++] = 1;
	*t = x->dtype;
	*s = r;
	return SN_OK;
}

int ir_rule_axis_float(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	int a;
	if (need_float(g, n, IN(0), "operand", e) != SN_OK ||
	    axis_of(g, n, n->attrs->axis, IN(0), &a, e) != SN_OK)
		return e->code;
	*t = IN(0)->dtype;
	*s = IN(0)->shape;
	return SN_OK;
}

/* layer_norm(x, weight?, bias?) and rms_norm(x, weight?): normalized over
 * the dims [axis, rank); weight and bias have exactly those dims. */
int ir_rule_layer_norm(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	static const char *const names[] = {"x", "weight", "bias"};
	const ir_node *x = IN(0);
	int a;
	if (need_float(g, n, x, "operand", e) != SN_OK ||
	    axis_of(g, n, n->attrs->axis, x, &a, e) != SN_OK)
		return e->code;
	double eps = n->attrs->eps;
	if (!(eps > 0) || isinf(eps)) {
		char b[32];
		sn_fmt_double(b, eps);
		return fail(e, n, "eps must be a finite number > 0, got %s", b);
	}
	int k = x->shape.rank - a;
	for (uint32_t i = 1; i < n->nin; i++) {
		const ir_node *w = IN(i);
		if (need_float(g, n, w, names[i], e) != SN_OK)
			return e->code;
		bool ok = w->shape.rank == k;
		for (int j = 0; ok && j < k; j++)
			ok = w->shape.d[j] == x->shape.d[a + j];
		if (!ok)
			return fail(e, n, "%s %s must have the shape %s of x's dims from axis %d",
				    names[i], TY(w), dims_s(g, x->shape.d + a, k).s, a);
	}
	*t = x->dtype;
	*s = x->shape;
	return SN_OK;
}

int ir_rule_batch_norm(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	static const char *const names[] = {"x", "weight", "bias", "mean", "var"};
	const ir_node *x = IN(0);
	if (need_float(g, n, x, "operand", e) != SN_OK)
		return e->code;
	if (x->shape.rank < 2)
		return fail(e, n, "x %s must have rank >= 2", TY(x));
	double eps = n->attrs->eps;
	if (!(eps >= 0) || isinf(eps)) {
		char b[32];
		sn_fmt_double(b, eps);
		return fail(e, n, "eps must be a finite number >= 0, got %s", b);
	}
	int64_t c = x->shape.d[n->attrs->layout == IR_NHWC ? x->shape.rank - 1 : 1];
	for (int i = 1; i < 5; i++) {
		const ir_node *w = IN(i);
		if (need_float(g, n, w, names[i], e) != SN_OK)
			return e->code;
		if (w->shape.rank != 1 || w->shape.d[0] != c)
			return fail(e, n, "%s %s must be [%s], the channels of x %s (%s)",
				    names[i], TY(w), DIM(c), TY(x), ir_layout_name(n->attrs->layout));
	}
	*t = x->dtype;
	*s = x->shape;
	return SN_OK;
}


/* cumsum: numeric, same type, along axis. */
int ir_rule_cumsum(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	int a;
	if (need_numeric(g, n, IN(0), "operand", e) != SN_OK ||
	    axis_of(g, n, n->attrs->axis, IN(0), &a, e) != SN_OK)
		return e->code;
	*t = IN(0)->dtype;
	*s = IN(0)->shape;
	return SN_OK;
}

/* argmax, argmin: i64 indices along axis, which is dropped (or kept as 1);
 * the axis must not be empty. */
int ir_rule_arg_reduce(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	int a;
	if (need_numeric(g, n, x, "operand", e) != SN_OK || axis_of(g, n, n->attrs->axis, x, &a, e) != SN_OK)
		return e->code;
	if (x->shape.d[a] == 0)
		return fail(e, n, "axis %d of %s is empty", a, TY(x));
	ir_shape r = {0};
	for (int i = 0; i < x->shape.rank; i++)
		if (i != a)
			r.d[r.rank++] = x->shape.d[i];
		else if (n->attrs->keepdims)
			r.d[r.rank++] = 1;
	*t = IR_I64;
	*s = r;
	return SN_OK;
}

/* topk: the k largest (or smallest) along axis, sorted; index 0 gives the
 * values (x's dtype), 1 their i64 indices. 0 <= k <= the axis, concrete. */
int ir_rule_topk(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	int a;
	if (need_numeric(g, n, x, "operand", e) != SN_OK || axis_of(g, n, n->attrs->axis, x, &a, e) != SN_OK)
		return e->code;
	int64_t d = x->shape.d[a], k = n->attrs->k;
	if (d < 0)
		return fail(e, n, "axis %d of %s is symbolic", a, TY(x));
	if (k < 0 || k > d)
		return fail(e, n, "k %lld is out of range for axis %d of %s", LL(k), a, TY(x));
	if (n->attrs->index != 0 && n->attrs->index != 1)
		return fail(e, n, "index %lld must be 0 (values) or 1 (indices)", LL(n->attrs->index));
	*t = n->attrs->index ? IR_I64 : x->dtype;
	*s = x->shape;
	s->d[a] = k;
	return SN_OK;
}

/* group_norm(x, weight, bias): x float [N, C, ...] (rank >= 3), C concrete
 * and divisible by groups; weight and bias [C] of x's dtype. */
int ir_rule_group_norm(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	static const char *const names[] = {"x", "weight", "bias"};
	const ir_node *x = IN(0);
	if (need_float(g, n, x, "operand", e) != SN_OK)
		return e->code;
	if (x->shape.rank < 3)
		return fail(e, n, "x %s must have rank >= 3 ([N, C, spatial...])", TY(x));
	double eps = n->attrs->eps;
	if (!(eps >= 0) || isinf(eps)) {
		char b[32];
		sn_fmt_double(b, eps);
		return fail(e, n, "eps must be a finite number >= 0, got %s", b);
	}
	int64_t c = x->shape.d[1], gr = n->attrs->groups;
	if (c < 0)
		return fail(e, n, "the channels of x %s must be known", TY(x));
	if (gr < 1 || c % gr != 0)
		return fail(e, n, "groups %lld must be >= 1 and divide the %lld channels of x %s", LL(gr), LL(c), TY(x));
	for (int i = 1; i < 3; i++) {
		const ir_node *w = IN(i);
		if (same_dtype(g, n, x, "x", w, names[i], e) != SN_OK)
			return e->code;
		if (w->shape.rank != 1 || w->shape.d[0] != c)
			return fail(e, n, "%s %s must be [%lld], the channels of x %s", names[i], TY(w), LL(c), TY(x));
	}
	*t = x->dtype;
	*s = x->shape;
	return SN_OK;
}
