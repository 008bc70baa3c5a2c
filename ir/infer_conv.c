/* infer_conv.c: shape rules of conv2d and pooling, and the window
 * arithmetic (stride, padding, dilation) they share. */
#include "infer_impl.h"

static int check_window_attrs(const ir_graph *g, const ir_node *n, const ir_ints *stride,
			      const ir_ints *dil, sn_err *e)
{
	const ir_attrs *at = n->attrs;
	if (!ints_ok(stride, 2, false))
		return fail(e, n, "stride must have 2 entries > 0, got %s", ints_s(stride).s);
	if (!ints_ok(dil, 2, false))
		return fail(e, n, "dilation must have 2 entries > 0, got %s", ints_s(dil).s);
	if (!ints_ok(&at->pad, 4, true))
		return fail(e, n, "pad must have 4 entries >= 0 ([top, left, bottom, right]), got %s",
			    ints_s(&at->pad).s);
	return SN_OK;
}

/* Output H, W of a conv or pool window over x's spatial dims hw[2]. */
static int window_hw(const ir_graph *g, const ir_node *n, const ir_node *x, const int64_t hw[2],
		     const int64_t k[2], const int64_t dil[2], const int64_t st[2], bool ceil_mode,
		     int64_t out[2], sn_err *e)
{
	const int64_t *p = n->attrs->pad.v;
	for (int i = 0; i < 2; i++)
		if (!window(hw[i], p[i], p[i + 2], k[i], dil[i], st[i], ceil_mode, &out[i]))
			return fail(e, n, "output size of %s overflows", TY(x));
	if (out[0] < 1 || out[1] < 1)
		return fail(e, n, "input %s is too small for kernel %lldx%lld (output %lldx%lld)",
			    TY(x), LL(k[0]), LL(k[1]), LL(out[0]), LL(out[1]));
	return SN_OK;
}

int ir_rule_conv2d(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0), *w = IN(1), *b = n->nin > 2 ? IN(2) : NULL;
	const ir_attrs *at = n->attrs;
	if (x->shape.rank != 4)
		return fail(e, n, "x %s must have rank 4", TY(x));
	if (w->shape.rank != 4)
		return fail(e, n, "weight %s must have rank 4", TY(w));
	if (need_numeric(g, n, x, "operand", e) != SN_OK ||
	    same_dtype(g, n, x, "x", w, "weight", e) != SN_OK ||
	    (b && same_dtype(g, n, x, "x", b, "bias", e) != SN_OK))
		return e->code;
	if (at->groups < 1)
		return fail(e, n, "groups must be >= 1, got %lld", LL(at->groups));
	if (check_window_attrs(g, n, &at->stride, &at->dilation, e) != SN_OK)
		return e->code;
	bool nhwc = at->layout == IR_NHWC;
	const int64_t *xd = x->shape.d, *wd = w->shape.d;
	int64_t c = xd[nhwc ? 3 : 1], hw[2] = {xd[nhwc ? 1 : 2], xd[nhwc ? 2 : 3]};
	int64_t o = wd[0], cg = wd[nhwc ? 3 : 1], k[2] = {wd[nhwc ? 1 : 2], wd[nhwc ? 2 : 3]};
	if (c < 0 || hw[0] < 0 || hw[1] < 0)
		return fail(e, n, "x %s must have concrete channel and spatial dims (%s)", TY(x),
			    ir_layout_name(at->layout));
	if (!ir_shape_concrete(&w->shape))
		return fail(e, n, "weight %s must be concrete", TY(w));
	if (c % at->groups)
		return fail(e, n, "channels %lld of x %s are not divisible by groups %lld",
			    LL(c), TY(x), LL(at->groups));
	if (o % at->groups)
		return fail(e, n, "output channels %lld of weight %s are not divisible by groups %lld",
			    LL(o), TY(w), LL(at->groups));
	if (cg != c / at->groups)
		return fail(e, n, "weight %s has %lld input channels per group, expected %lld (%lld / %lld groups)",
			    TY(w), LL(cg), LL(c / at->groups), LL(c), LL(at->groups));
	if (k[0] < 1 || k[1] < 1)
		return fail(e, n, "weight %s has an empty kernel", TY(w));
	if (b && (b->shape.rank != 1 || b->shape.d[0] != o))
		return fail(e, n, "bias %s must be [%lld], the output channels of weight %s",
			    TY(b), LL(o), TY(w));
	int64_t out[2];
	if (window_hw(g, n, x, hw, k, at->dilation.v, at->stride.v, false, out, e) != SN_OK)
		return e->code;
	ir_shape r = {4, {xd[0], o, out[0], out[1]}};
	if (nhwc)
		r = (ir_shape){4, {xd[0], out[0], out[1], o}};
	*t = x->dtype;
	*s = r;
	return SN_OK;
}

/* ---- pooling ----------------------------------------------------------------- */

int ir_rule_pool(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	const ir_attrs *at = n->attrs;
	bool is_max = n->op == IR_OP_max_pool2d, nhwc = at->layout == IR_NHWC;
	if (x->shape.rank != 4)
		return fail(e, n, "x %s must have rank 4", TY(x));
	if ((is_max ? need_numeric(g, n, x, "operand", e) : need_float(g, n, x, "operand", e)) != SN_OK)
		return e->code;
	if (!ints_ok(&at->kernel, 2, false))
		return fail(e, n, "kernel must have 2 entries > 0, got %s", ints_s(&at->kernel).s);
	const ir_ints *st = at->stride.n ? &at->stride : &at->kernel;
	ir_ints one = {2, {1, 1}};
	const ir_ints *dil = is_max ? &at->dilation : &one;
	if (check_window_attrs(g, n, st, dil, e) != SN_OK)
		return e->code;
	/* PyTorch: pad <= ((k - 1) * dilation + 1) / 2 */
	for (int i = 0; i < 4; i++) {
		int64_t span;
		if (__builtin_mul_overflow(at->kernel.v[i % 2] - 1, dil->v[i % 2], &span) ||
		    at->pad.v[i] > span / 2 + span % 2)
			return fail(e, n, "pad %s must be at most half the effective kernel (kernel %s, dilation %s)",
				    ints_s(&at->pad).s, ints_s(&at->kernel).s, ints_s(dil).s);
	}
	const int64_t *xd = x->shape.d;
	int64_t hw[2] = {xd[nhwc ? 1 : 2], xd[nhwc ? 2 : 3]}, out[2];
	if (hw[0] < 0 || hw[1] < 0)
		return fail(e, n, "x %s must have concrete spatial dims (%s)", TY(x), ir_layout_name(at->layout));
	if (window_hw(g, n, x, hw, at->kernel.v, dil->v, st->v, at->ceil_mode, out, e) != SN_OK)
		return e->code;
	ir_shape r = x->shape;
	r.d[nhwc ? 1 : 2] = out[0];
	r.d[nhwc ? 2 : 3] = out[1];
	*t = x->dtype;
	*s = r;
	return SN_OK;
}

int ir_rule_global_pool(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	if (x->shape.rank != 4)
		return fail(e, n, "x %s must have rank 4", TY(x));
	if (need_float(g, n, x, "operand", e) != SN_OK)
		return e->code;
	bool nhwc = n->attrs->layout == IR_NHWC;
	ir_shape r = x->shape;
	r.d[nhwc ? 1 : 2] = 1;
	r.d[nhwc ? 2 : 3] = 1;
	*t = x->dtype;
	*s = r;
	return SN_OK;
}
