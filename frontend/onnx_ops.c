/* onnx_ops.c: the table of supported ONNX ops, and the translators of
 * elementwise ops, norms, contractions, convolution, pooling and
 * reductions (shapes and data movement: onnx_ops_move.c). */
#include "onnx_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OOM(c) sn_errf((c)->e, SN_EINTERNAL, "out of memory")

static int bind(ox_ctx *c, const onnx_node *nd, ir_ref r) { return ox_out(c, nd, 0, r); }

static ir_ref emit2(ox_ctx *c, const onnx_node *nd, ir_op op, ir_ref a, ir_ref b)
{
	if (a == IR_NONE || b == IR_NONE)
		return IR_NONE;
	ir_ref in[2] = {a, b};
	return ox_emit(c, nd, op, in, 2, NULL);
}

static ir_ref emit1(ox_ctx *c, const onnx_node *nd, ir_op op, ir_ref x, const ir_attrs *a)
{
	return x == IR_NONE ? IR_NONE : ox_emit(c, nd, op, &x, 1, a);
}

static ir_dtype dtype_of(ox_ctx *c, ir_ref r) { return ox_node(c, r)->dtype; }

/* Refuses optional outputs k >= first that the graph names. */
static int no_extra_outputs(ox_ctx *c, const onnx_node *nd, size_t first, const char *what)
{
	for (size_t k = first; k < nd->noutputs; k++)
		if (nd->outputs[k][0])
			return ox_fail(c, nd, "output %zu (%s) is not supported", k, what);
	return SN_OK;
}

/* ---- elementwise ---- */

static const struct {
	const char *onnx;
	ir_op op;
} unary_ops[] = {
	{"Relu", IR_OP_relu}, {"Sigmoid", IR_OP_sigmoid}, {"Tanh", IR_OP_tanh},
	{"Erf", IR_OP_erf}, {"Sqrt", IR_OP_sqrt}, {"Neg", IR_OP_neg}, {"Abs", IR_OP_abs},
	{"Exp", IR_OP_exp}, {"Log", IR_OP_log}, {"HardSwish", IR_OP_hardswish},
	{"Add", IR_OP_add}, {"Sub", IR_OP_sub}, {"Mul", IR_OP_mul}, {"Div", IR_OP_div},
	{"Equal", IR_OP_equal}, {"Less", IR_OP_less}, {"Greater", IR_OP_greater},
	{"Min", IR_OP_min}, {"Max", IR_OP_max},
};

static ir_op op_of(const char *onnx)
{
	for (size_t i = 0; i < SN_COUNT(unary_ops); i++)
		if (strcmp(unary_ops[i].onnx, onnx) == 0)
			return unary_ops[i].op;
	return IR_OP_input;
}

static int tr_unary(ox_ctx *c, const onnx_node *nd)
{
	return bind(c, nd, emit1(c, nd, op_of(nd->op_type), ox_need(c, nd, 0), NULL));
}

static int tr_binary(ox_ctx *c, const onnx_node *nd)
{
	return bind(c, nd, emit2(c, nd, op_of(nd->op_type), ox_need(c, nd, 0), ox_need(c, nd, 1)));
}

/* Min, Max: variadic, folded left to right. */
static int tr_variadic(ox_ctx *c, const onnx_node *nd)
{
	ir_ref y = ox_need(c, nd, 0);
	for (size_t i = 1; i < nd->ninputs && y != IR_NONE; i++)
		y = emit2(c, nd, op_of(nd->op_type), y, ox_need(c, nd, i));
	return bind(c, nd, y);
}

static int tr_pow(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0), y = ox_need(c, nd, 1);
	if (x == IR_NONE || y == IR_NONE)
		return c->e->code;
	if (dtype_of(c, y) != dtype_of(c, x)) { /* ONNX lets the exponent's type differ */
		ir_attrs a;
		ir_attrs_init(IR_OP_cast, &a);
		a.dtype = dtype_of(c, x);
		y = emit1(c, nd, IR_OP_cast, y, &a);
	}
	return bind(c, nd, emit2(c, nd, IR_OP_pow, x, y));
}

static ir_ref bool_const(ox_ctx *c, bool v) { return ox_scalar(c, IR_BOOL, v); }

static int tr_logic(ox_ctx *c, const onnx_node *nd)
{
	const char *t = nd->op_type;
	ir_ref a = ox_need(c, nd, 0), in[3];
	if (a == IR_NONE)
		return c->e->code;
	if (strcmp(t, "Not") == 0) {
		in[0] = a, in[1] = bool_const(c, false), in[2] = bool_const(c, true);
	} else if (strcmp(t, "LessOrEqual") == 0 || strcmp(t, "GreaterOrEqual") == 0) {
		/* a <= b is not (a > b); a >= b is not (a < b) */
		in[0] = emit2(c, nd, t[0] == 'L' ? IR_OP_greater : IR_OP_less, a, ox_need(c, nd, 1));
		in[1] = bool_const(c, false), in[2] = bool_const(c, true);
	} else {
		ir_ref b = ox_need(c, nd, 1);
		if (b == IR_NONE)
			return c->e->code;
		if (dtype_of(c, a) != IR_BOOL || dtype_of(c, b) != IR_BOOL)
			return ox_fail(c, nd, "expects bool inputs");
		if (strcmp(t, "And") == 0)
			in[0] = a, in[1] = b, in[2] = bool_const(c, false);
		else
			in[0] = a, in[1] = bool_const(c, true), in[2] = b;
	}
	if (in[0] == IR_NONE || in[1] == IR_NONE || in[2] == IR_NONE)
		return c->e->code;
	if (dtype_of(c, in[0]) != IR_BOOL)
		return ox_fail(c, nd, "expects a bool input");
	return bind(c, nd, ox_emit(c, nd, IR_OP_where, in, 3, NULL));
}

static int tr_where(ox_ctx *c, const onnx_node *nd)
{
	ir_ref in[3] = {ox_need(c, nd, 0), ox_need(c, nd, 1), ox_need(c, nd, 2)};
	if (in[0] == IR_NONE || in[1] == IR_NONE || in[2] == IR_NONE)
		return c->e->code;
	return bind(c, nd, ox_emit(c, nd, IR_OP_where, in, 3, NULL));
}

static int tr_reciprocal(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	return bind(c, nd, emit2(c, nd, IR_OP_div, ox_scalar(c, dtype_of(c, x), 1), x));
}

static int tr_gelu(ox_ctx *c, const onnx_node *nd)
{
	ir_attrs a;
	ir_attrs_init(IR_OP_gelu, &a);
	if (ox_as_is(nd, "approximate", "none", "tanh"))
		a.approximate = IR_GELU_TANH;
	else if (!ox_as_is(nd, "approximate", "none", "none"))
		return ox_fail(c, nd, "approximate must be none or tanh");
	return bind(c, nd, emit1(c, nd, IR_OP_gelu, ox_need(c, nd, 0), &a));
}

static int tr_hard_sigmoid(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	double alpha = ox_af(nd, "alpha", 0.2), beta = ox_af(nd, "beta", 0.5);
	if (fabs(alpha - 1.0 / 6) < 1e-7 && beta == 0.5)
		return bind(c, nd, emit1(c, nd, IR_OP_hardsigmoid, x, NULL));
	ir_dtype t = dtype_of(c, x);
	ir_ref y = emit2(c, nd, IR_OP_add, emit2(c, nd, IR_OP_mul, x, ox_scalar(c, t, alpha)),
			 ox_scalar(c, t, beta));
	ir_attrs a;
	ir_attrs_init(IR_OP_clamp, &a);
	a.min = 0;
	a.max = 1;
	return bind(c, nd, emit1(c, nd, IR_OP_clamp, y, &a));
}

static int tr_clip(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	ir_attrs a;
	ir_attrs_init(IR_OP_clamp, &a);
	bool lo_known = !ox_has(nd, 1), hi_known = !ox_has(nd, 2);
	ir_ref lo = ox_in(c, nd, 1), hi = ox_in(c, nd, 2);
	if (c->e->code)
		return c->e->code;
	const ir_tensor *lk = lo != IR_NONE ? ox_known(c, lo) : NULL;
	const ir_tensor *hk = hi != IR_NONE ? ox_known(c, hi) : NULL;
	if (lk && lk->nbytes == ir_dtype_size(lk->dtype)) {
		a.min = ir_load(lk->dtype, lk->data, 0);
		lo_known = true;
	}
	if (hk && hk->nbytes == ir_dtype_size(hk->dtype)) {
		a.max = ir_load(hk->dtype, hk->data, 0);
		hi_known = true;
	}
	ir_ref y = isinf(a.min) && isinf(a.max) ? x : emit1(c, nd, IR_OP_clamp, x, &a);
	if (!lo_known) /* tensor bounds: max(x, lo) then min(., hi) */
		y = emit2(c, nd, IR_OP_max, y, lo);
	if (!hi_known)
		y = emit2(c, nd, IR_OP_min, y, hi);
	return bind(c, nd, y);
}

/* ---- norms ---- */

/* Before opset 13, Softmax and LogSoftmax (axis default 1) see the input
 * as 2-d, [prod(dims before axis), prod(dims from axis)]: one softmax over
 * all the dims from axis on, done here over those dims folded into one. */
static int tr_softmax(ox_ctx *c, const onnx_node *nd)
{
	ir_op op = strcmp(nd->op_type, "Softmax") == 0 ? IR_OP_softmax : IR_OP_log_softmax;
	ir_attrs a;
	ir_attrs_init(op, &a);
	a.axis = ox_ai(nd, "axis", c->opset < 13 ? 1 : -1);
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE || c->opset >= 13)
		return bind(c, nd, emit1(c, nd, op, x, &a));
	const ir_shape xs = ox_node(c, x)->shape;
	int ax = ir_axis(a.axis, xs.rank);
	if (ax < 0)
		return ox_fail(c, nd, "axis %lld is out of range for rank %d", (long long)a.axis, xs.rank);
	if (ax >= xs.rank - 1)
		return bind(c, nd, emit1(c, nd, op, x, &a));
	ir_attrs ra;
	ir_attrs_init(IR_OP_reshape, &ra);
	int64_t inner = 1;
	for (int i = 0; i < xs.rank; i++) {
		if (i < ax) {
			ra.shape.v[ra.shape.n++] = xs.d[i];
			continue;
		}
		if (xs.d[i] < 0)
			return ox_fail(c, nd, "the dims from axis %d must be known (opset %lld's 2-d softmax); "
				       "bind them to values when loading the model", ax, (long long)c->opset);
		inner *= xs.d[i];
	}
	ra.shape.v[ra.shape.n++] = inner;
	a.axis = -1;
	ir_ref y = emit1(c, nd, op, emit1(c, nd, IR_OP_reshape, x, &ra), &a);
	ra.shape.n = xs.rank;
	for (int i = 0; i < xs.rank; i++)
		ra.shape.v[i] = xs.d[i];
	return bind(c, nd, emit1(c, nd, IR_OP_reshape, y, &ra));
}

/* LayerNormalization's optional outputs Mean and InvStdDev over the
 * normalized axes ax..rank-1 (kept as 1s): mean(x) and 1 / sqrt(var(x) +
 * eps), computed in the stash type (stash_type 1: f32, the only one ONNX
 * defines) that is also their dtype. */
static int layer_norm_stats(ox_ctx *c, const onnx_node *nd, ir_ref x, int ax, double eps)
{
	int rank = ox_node(c, x)->shape.rank; /* (adding nodes may move the node array) */
	if (ox_ai(nd, "stash_type", 1) != 1)
		return ox_fail(c, nd, "stash_type %lld is not supported (only 1, float)",
			       (long long)ox_ai(nd, "stash_type", 1));
	if (dtype_of(c, x) != IR_F32) {
		ir_attrs ca;
		ir_attrs_init(IR_OP_cast, &ca);
		ca.dtype = IR_F32;
		x = emit1(c, nd, IR_OP_cast, x, &ca);
	}
	ir_attrs a;
	ir_attrs_init(IR_OP_reduce_mean, &a);
	a.keepdims = true;
	a.axes.n = rank - ax;
	for (int i = ax; i < rank; i++)
		a.axes.v[i - ax] = i;
	ir_ref mean = emit1(c, nd, IR_OP_reduce_mean, x, &a);
	ir_ref d = emit2(c, nd, IR_OP_sub, x, mean);
	ir_ref var = emit1(c, nd, IR_OP_reduce_mean, emit2(c, nd, IR_OP_mul, d, d), &a);
	ir_ref sd = emit1(c, nd, IR_OP_sqrt, emit2(c, nd, IR_OP_add, var, ox_scalar(c, IR_F32, eps)), NULL);
	ir_ref inv = emit2(c, nd, IR_OP_div, ox_scalar(c, IR_F32, 1), sd);
	if (ox_out(c, nd, 1, mean) || ox_out(c, nd, 2, inv))
		return c->e->code;
	return SN_OK;
}

static int tr_layer_norm(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0), w = ox_need(c, nd, 1), b = ox_in(c, nd, 2);
	if (x == IR_NONE || w == IR_NONE || c->e->code)
		return c->e->code;
	ir_attrs a;
	ir_attrs_init(IR_OP_layer_norm, &a);
	a.axis = ox_ai(nd, "axis", -1);
	a.eps = ox_af(nd, "epsilon", 1e-5);
	const ir_shape *xs = &ox_node(c, x)->shape;
	int ax = ir_axis(a.axis, xs->rank);
	if (ax < 0)
		return ox_fail(c, nd, "axis %lld is out of range for rank %d", (long long)a.axis, xs->rank);
	ir_shape tail = {xs->rank - ax, {0}};
	memcpy(tail.d, xs->d + ax, (size_t)tail.rank * sizeof *tail.d);
	if (((nd->noutputs > 1 && nd->outputs[1][0]) || (nd->noutputs > 2 && nd->outputs[2][0])) &&
	    layer_norm_stats(c, nd, x, ax, a.eps))
		return c->e->code;
	bool exact = ir_shape_eq(&ox_node(c, w)->shape, &tail) &&
		     (b == IR_NONE || ir_shape_eq(&ox_node(c, b)->shape, &tail));
	if (exact) {
		ir_ref in[3] = {x, w, b};
		return bind(c, nd, ox_emit(c, nd, IR_OP_layer_norm, in, b == IR_NONE ? 2 : 3, &a));
	}
	/* scale and bias that only broadcast: normalize, then multiply and add */
	ir_ref y = emit2(c, nd, IR_OP_mul, emit1(c, nd, IR_OP_layer_norm, x, &a), w);
	if (b != IR_NONE)
		y = emit2(c, nd, IR_OP_add, y, b);
	return bind(c, nd, y);
}

static int tr_batch_norm(ox_ctx *c, const onnx_node *nd)
{
	if (ox_ai(nd, "training_mode", 0))
		return ox_fail(c, nd, "training_mode is not supported");
	if (no_extra_outputs(c, nd, 1, "running statistics"))
		return c->e->code;
	ir_ref in[5];
	for (size_t i = 0; i < 5; i++)
		if ((in[i] = ox_need(c, nd, i)) == IR_NONE)
			return c->e->code;
	ir_attrs a;
	ir_attrs_init(IR_OP_batch_norm, &a);
	a.eps = ox_af(nd, "epsilon", 1e-5);
	return bind(c, nd, ox_emit(c, nd, IR_OP_batch_norm, in, 5, &a));
}

/* ---- contractions ---- */

static int tr_matmul(ox_ctx *c, const onnx_node *nd)
{
	return bind(c, nd, emit2(c, nd, IR_OP_matmul, ox_need(c, nd, 0), ox_need(c, nd, 1)));
}

static ir_ref transpose2(ox_ctx *c, const onnx_node *nd, ir_ref x)
{
	ir_attrs a;
	ir_attrs_init(IR_OP_transpose, &a);
	a.perm = (ir_ints){2, {1, 0}};
	return emit1(c, nd, IR_OP_transpose, x, &a);
}

static int tr_gemm(ox_ctx *c, const onnx_node *nd)
{
	ir_ref A = ox_need(c, nd, 0), B = ox_need(c, nd, 1), C = ox_in(c, nd, 2);
	if (A == IR_NONE || B == IR_NONE || c->e->code)
		return c->e->code;
	bool ta = ox_ai(nd, "transA", 0) != 0, tb = ox_ai(nd, "transB", 0) != 0;
	double alpha = ox_af(nd, "alpha", 1), beta = ox_af(nd, "beta", 1);
	if (ox_node(c, A)->shape.rank != 2 || ox_node(c, B)->shape.rank != 2)
		return ox_fail(c, nd, "A and B must be 2-d");
	const ir_node *bn = ox_node(c, B);
	if (!ta && tb && alpha == 1 && (C == IR_NONE || beta == 1) &&
	    (C == IR_NONE || (ox_node(c, C)->shape.rank == 1 && ox_node(c, C)->shape.d[0] == bn->shape.d[0]))) {
		ir_ref in[3] = {A, B, C}; /* x @ w^T + b: torch.nn.Linear */
		return bind(c, nd, ox_emit(c, nd, IR_OP_linear, in, C == IR_NONE ? 2 : 3, NULL));
	}
	ir_dtype t = dtype_of(c, A);
	ir_ref y = emit2(c, nd, IR_OP_matmul, ta ? transpose2(c, nd, A) : A, tb ? transpose2(c, nd, B) : B);
	if (alpha != 1)
		y = emit2(c, nd, IR_OP_mul, y, ox_scalar(c, t, alpha));
	if (C != IR_NONE && beta != 0)
		y = emit2(c, nd, IR_OP_add, y, beta == 1 ? C : emit2(c, nd, IR_OP_mul, C, ox_scalar(c, t, beta)));
	return bind(c, nd, y);
}

/* ---- convolution and pooling ---- */

/* Pads [top, left, bottom, right] from pads/auto_pad for spatial dims in,
 * kernel k, strides s, dilations d (all 2-d; a 1-d op is lifted to height
 * 1, and its pads attribute [begin, end] becomes [0, begin, 0, end]). */
static int spatial_pads(ox_ctx *c, const onnx_node *nd, int nsp, const int64_t *in, const int64_t *k,
			const ir_ints *s, const ir_ints *d, ir_ints *pad)
{
	*pad = (ir_ints){4, {0, 0, 0, 0}};
	bool upper = ox_as_is(nd, "auto_pad", "NOTSET", "SAME_UPPER");
	bool lower = ox_as_is(nd, "auto_pad", "NOTSET", "SAME_LOWER");
	if (upper || lower) {
		for (int i = 0; i < 2; i++) {
			if (in[i] < 0)
				return ox_fail(c, nd, "auto_pad needs known spatial dims; bind them to values when loading the model");
			if (in[i] > ((int64_t)1 << 40) || k[i] > ((int64_t)1 << 20))
				return ox_fail(c, nd, "spatial dims are too large");
			int64_t out = (in[i] + s->v[i] - 1) / s->v[i];
			int64_t total = (out - 1) * s->v[i] + (k[i] - 1) * d->v[i] + 1 - in[i];
			if (total < 0)
				total = 0;
			int64_t small = total / 2, big = total - small;
			pad->v[i] = upper ? small : big;
			pad->v[i + 2] = upper ? big : small;
		}
		return SN_OK;
	}
	if (!ox_as_is(nd, "auto_pad", "NOTSET", "NOTSET") && !ox_as_is(nd, "auto_pad", "NOTSET", "VALID"))
		return ox_fail(c, nd, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID");
	if (ox_as_is(nd, "auto_pad", "NOTSET", "VALID"))
		return SN_OK;
	int got = ox_aints(c, nd, "pads", pad);
	if (got < 0)
		return c->e->code;
	if (!got)
		*pad = (ir_ints){4, {0, 0, 0, 0}};
	else if (pad->n != 2 * nsp)
		return ox_fail(c, nd, "pads has %d entries, expected %d", pad->n, 2 * nsp);
	else if (nsp == 1)
		*pad = (ir_ints){4, {0, pad->v[0], 0, pad->v[1]}};
	return SN_OK;
}

/* A per-spatial-dim attribute (strides, dilations, kernel_shape; def when
 * absent) as 2 entries: a 1-d op's [v] becomes [1, v]. */
static int pair_attr(ox_ctx *c, const onnx_node *nd, const char *name, int nsp, int64_t def, ir_ints *v)
{
	*v = (ir_ints){2, {def, def}};
	int got = ox_aints(c, nd, name, v);
	if (got < 0)
		return c->e->code;
	if (got && v->n != nsp)
		return ox_fail(c, nd, "%s has %d entries, expected %d", name, v->n, nsp);
	if (got && nsp == 1)
		*v = (ir_ints){2, {1, v->v[0]}};
	for (int i = 0; i < 2; i++)
		if (v->v[i] < 1 || v->v[i] > (1 << 20))
			return ox_fail(c, nd, "%s entry %lld is out of range", name, (long long)v->v[i]);
	return SN_OK;
}

/* x with a unit dim inserted (unsqueeze) or removed (squeeze) at axis 2:
 * 1-d convolution and pooling run as 2-d ones of height 1. */
static ir_ref lift(ox_ctx *c, const onnx_node *nd, ir_ref x, bool up)
{
	ir_op op = up ? IR_OP_unsqueeze : IR_OP_squeeze;
	ir_attrs a;
	ir_attrs_init(op, &a);
	a.axes = (ir_ints){1, {2}};
	return emit1(c, nd, op, x, &a);
}

static int tr_conv(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0), w = ox_need(c, nd, 1), b = ox_in(c, nd, 2);
	if (x == IR_NONE || w == IR_NONE || c->e->code)
		return c->e->code;
	int nsp = ox_node(c, x)->shape.rank - 2;
	if (nsp == 3)
		return ox_tr_conv3d(c, nd);
	if ((nsp != 1 && nsp != 2) || ox_node(c, w)->shape.rank != nsp + 2)
		return ox_fail(c, nd, "only 1-d, 2-d and 3-d convolutions (input and weight of rank 3 to 5) are supported");
	if (nsp == 1 && ((x = lift(c, nd, x, true)) == IR_NONE || (w = lift(c, nd, w, true)) == IR_NONE))
		return c->e->code;
	const ir_shape *xs = &ox_node(c, x)->shape, *ws = &ox_node(c, w)->shape;
	ir_attrs a;
	ir_attrs_init(IR_OP_conv2d, &a);
	a.groups = ox_ai(nd, "group", 1);
	ir_ints ks;
	if (ox_attr(nd, "kernel_shape") && pair_attr(c, nd, "kernel_shape", nsp, 1, &ks))
		return c->e->code;
	if (ox_attr(nd, "kernel_shape") && (ks.v[0] != ws->d[2] || ks.v[1] != ws->d[3]))
		return ox_fail(c, nd, "kernel_shape differs from the weight's spatial dims");
	if (pair_attr(c, nd, "strides", nsp, 1, &a.stride) || pair_attr(c, nd, "dilations", nsp, 1, &a.dilation) ||
	    spatial_pads(c, nd, nsp, xs->d + 2, ws->d + 2, &a.stride, &a.dilation, &a.pad))
		return c->e->code;
	ir_ref in[3] = {x, w, b};
	ir_ref y = ox_emit(c, nd, IR_OP_conv2d, in, b == IR_NONE ? 2 : 3, &a);
	return bind(c, nd, nsp == 1 && y != IR_NONE ? lift(c, nd, y, false) : y);
}

/* ONNX's pool output size along one dim (the window must start inside the
 * input or the left padding in ceil mode); -1 if it is not positive. */
static int64_t pool_out(int64_t in, int64_t p0, int64_t p1, int64_t k, int64_t dil, int64_t st,
			bool ceil_mode)
{
	int64_t num = in + p0 + p1 - (k - 1) * dil - 1;
	if (num < 0)
		return -1;
	int64_t out = (ceil_mode ? num + st - 1 : num) / st + 1;
	if (ceil_mode && (out - 1) * st >= in + p0)
		out--;
	return out;
}

/* A pool whose pads exceed half the (effective) kernel, which sinter's
 * pools refuse (PyTorch's limit): the pads become an explicit pad op before
 * a pool without padding. max: pad with -inf (or the integer dtype's
 * minimum), which never wins over a real element; average counting the
 * pads: pad with zeros; average of real elements only: sum over count, as
 * avg(pad(x, 0)) / avg(pad(ones, 0)) (both windows have the same divisor;
 * the second is known at import time). In ceil mode this holds only when
 * the explicit padding gives the same output size (ONNX drops a last
 * window that starts in the right padding; after padding it would not). */
static ir_ref pool_wide_pads(ox_ctx *c, const onnx_node *nd, ir_ref x, ir_attrs *a)
{
	const ir_shape xs = ox_node(c, x)->shape; /* copies: adding nodes may move the node array */
	const ir_dtype t = dtype_of(c, x);
	bool max = nd->op_type[0] == 'M';
	ir_op op = max ? IR_OP_max_pool2d : IR_OP_avg_pool2d;
	ir_ints one = {2, {1, 1}};
	const ir_ints *dil = max ? &a->dilation : &one;
	for (int i = 0; i < 2; i++) {
		int64_t in = xs.d[2 + i], p0 = a->pad.v[i], p1 = a->pad.v[i + 2];
		if (in < 0)
			return ox_fail(c, nd, "pads above half the kernel need known spatial dims"), IR_NONE;
		int64_t want = pool_out(in, p0, p1, a->kernel.v[i], dil->v[i], a->stride.v[i], a->ceil_mode);
		int64_t got = pool_out(in + p0 + p1, 0, 0, a->kernel.v[i], dil->v[i], a->stride.v[i],
				       a->ceil_mode);
		if (want != got)
			return ox_fail(c, nd, "pads above half the kernel with ceil_mode are not supported when "
					      "the last window starts in the padding"), IR_NONE;
	}
	ir_attrs pa;
	ir_attrs_init(IR_OP_pad, &pa);
	pa.mode = IR_PAD_CONSTANT;
	pa.pad = (ir_ints){8, {0, 0, a->pad.v[0], a->pad.v[1], 0, 0, a->pad.v[2], a->pad.v[3]}};
	if (max)
		pa.value = ir_dtype_is_float(t) ? -INFINITY : t == IR_U8 ? 0 : t == IR_I8 ? INT8_MIN
			 : t == IR_I32 ? INT32_MIN : (double)INT64_MIN;
	a->pad = (ir_ints){4, {0, 0, 0, 0}};
	bool exclude = !max && !a->count_include_pad;
	if (!max)
		a->count_include_pad = true;
	ir_ref y = emit1(c, nd, op, emit1(c, nd, IR_OP_pad, x, &pa), a);
	if (!exclude || y == IR_NONE)
		return y;
	ir_shape s1 = {4, {1, 1, xs.d[2], xs.d[3]}};
	size_t n = (size_t)(s1.d[2] * s1.d[3]), es = ir_dtype_size(t);
	void *p = malloc(n * es + 1);
	if (!p)
		return OOM(c), IR_NONE;
	for (size_t i = 0; i < n; i++)
		ir_store(t, p, i, 1);
	ir_ref ones = ox_value(c, (ir_tensor){t, s1, p, n * es});
	ir_ref cnt = emit1(c, nd, op, emit1(c, nd, IR_OP_pad, ones, &pa), a);
	return emit2(c, nd, IR_OP_div, y, cnt);
}

static int tr_pool(ox_ctx *c, const onnx_node *nd)
{
	bool max = nd->op_type[0] == 'M';
	ir_op op = max ? IR_OP_max_pool2d : IR_OP_avg_pool2d;
	if (no_extra_outputs(c, nd, 1, "indices"))
		return c->e->code;
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	int nsp = ox_node(c, x)->shape.rank - 2;
	if (nsp != 1 && nsp != 2)
		return ox_fail(c, nd, "only 1-d and 2-d pooling (input of rank 3 or 4) is supported");
	if (!ox_attr(nd, "kernel_shape"))
		return ox_fail(c, nd, "kernel_shape is required");
	if (nsp == 1 && (x = lift(c, nd, x, true)) == IR_NONE)
		return c->e->code;
	const ir_shape *xs = &ox_node(c, x)->shape;
	ir_attrs a;
	ir_attrs_init(op, &a);
	ir_ints dil;
	if (pair_attr(c, nd, "kernel_shape", nsp, 1, &a.kernel) || pair_attr(c, nd, "strides", nsp, 1, &a.stride) ||
	    pair_attr(c, nd, "dilations", nsp, 1, &dil) ||
	    spatial_pads(c, nd, nsp, xs->d + 2, a.kernel.v, &a.stride, &dil, &a.pad))
		return c->e->code;
	a.ceil_mode = ox_ai(nd, "ceil_mode", 0) != 0;
	if (max)
		a.dilation = dil;
	else if (dil.v[0] != 1 || dil.v[1] != 1)
		return ox_fail(c, nd, "dilations are not supported for average pooling");
	else
		a.count_include_pad = ox_ai(nd, "count_include_pad", 0) != 0;
	for (int i = 0; i < 4; i++) {
		int64_t span = (a.kernel.v[i % 2] - 1) * dil.v[i % 2];
		if (a.pad.v[i] < 0)
			return ox_fail(c, nd, "negative pads are not supported");
		if (a.pad.v[i] > span / 2 + span % 2) {
			ir_ref y = pool_wide_pads(c, nd, x, &a);
			return bind(c, nd, nsp == 1 && y != IR_NONE ? lift(c, nd, y, false) : y);
		}
	}
	ir_ref y = emit1(c, nd, op, x, &a);
	return bind(c, nd, nsp == 1 && y != IR_NONE ? lift(c, nd, y, false) : y);
}

static int tr_global_pool(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	int r = ox_node(c, x)->shape.rank;
	bool max = strcmp(nd->op_type, "GlobalMaxPool") == 0;
	if (r == 4 && !max)
		return bind(c, nd, emit1(c, nd, IR_OP_global_avg_pool, x, NULL));
	if (r < 3)
		return ox_fail(c, nd, "the input must have rank >= 3");
	ir_op op = max ? IR_OP_reduce_max : IR_OP_reduce_mean;
	ir_attrs a;
	ir_attrs_init(op, &a);
	a.keepdims = true;
	a.axes.n = r - 2;
	for (int i = 2; i < r; i++)
		a.axes.v[i - 2] = i;
	return bind(c, nd, emit1(c, nd, op, x, &a));
}

/* ---- reductions ---- */

static int tr_reduce(ox_ctx *c, const onnx_node *nd)
{
	const char *t = nd->op_type + 6;
	ir_op op = strcmp(t, "Sum") == 0 ? IR_OP_reduce_sum : strcmp(t, "Mean") == 0 ? IR_OP_reduce_mean
			       : strcmp(t, "Max") == 0			  ? IR_OP_reduce_max
									  : IR_OP_reduce_min;
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	ir_attrs a;
	ir_attrs_init(op, &a);
	bool noop;
	if (ox_reduce_axes(c, nd, &a, &noop))
		return c->e->code;
	if (noop)
		return bind(c, nd, x);
	if (dtype_of(c, x) == IR_BOOL && (op == IR_OP_reduce_max || op == IR_OP_reduce_min)) {
		/* any / all: the max / min of the values as u8 (0 and 1) */
		ir_attrs ca;
		ir_attrs_init(IR_OP_cast, &ca);
		ca.dtype = IR_U8;
		ir_ref y = emit1(c, nd, op, emit1(c, nd, IR_OP_cast, x, &ca), &a);
		ca.dtype = IR_BOOL;
		return bind(c, nd, emit1(c, nd, IR_OP_cast, y, &ca));
	}
	return bind(c, nd, emit1(c, nd, op, x, &a));
}

/* ---- the table ---- */

#define V 0xffffffffu /* variadic */
static const ox_op ops[] = {
	{"Abs", tr_unary, 1, 1},
	{"Add", tr_binary, 2, 2},
	{"And", tr_logic, 2, 2},
	{"ArgMax", ox_tr_arg, 1, 1},
	{"ArgMin", ox_tr_arg, 1, 1},
	{"AveragePool", tr_pool, 1, 1},
	{"BatchNormalization", tr_batch_norm, 5, 5},
	{"Cast", ox_tr_cast, 1, 1},
	{"CastLike", ox_tr_cast_like, 2, 2},
	{"Ceil", ox_tr_simple_unary, 1, 1},
	{"Celu", ox_tr_more_act, 1, 1},
	{"Clip", tr_clip, 1, 3},
	{"Concat", ox_tr_concat, 1, V},
	{"Constant", ox_tr_constant, 0, 0},
	{"ConstantOfShape", ox_tr_constant_of_shape, 1, 1},
	{"Conv", tr_conv, 2, 3},
	{"ConvTranspose", ox_tr_conv_transpose, 2, 3},
	{"Cos", ox_tr_simple_unary, 1, 1},
	{"CumSum", ox_tr_cumsum, 2, 2},
	{"Div", tr_binary, 2, 2},
	{"Dropout", ox_tr_dropout, 1, 3},
	{"Einsum", ox_tr_einsum, 1, V},
	{"Elu", ox_tr_alpha_unary, 1, 1},
	{"Equal", tr_binary, 2, 2},
	{"Erf", tr_unary, 1, 1},
	{"Exp", tr_unary, 1, 1},
	{"Expand", ox_tr_expand, 2, 2},
	{"Flatten", ox_tr_flatten, 1, 1},
	{"Floor", ox_tr_simple_unary, 1, 1},
	{"Gather", ox_tr_gather, 2, 2},
	{"GatherElements", ox_tr_gather_elements, 2, 2},
	{"GatherND", ox_tr_gather_nd, 2, 2},
	{"Gelu", tr_gelu, 1, 1},
	{"Gemm", tr_gemm, 2, 3},
	{"GlobalAveragePool", tr_global_pool, 1, 1},
	{"GlobalMaxPool", tr_global_pool, 1, 1},
	{"Greater", tr_binary, 2, 2},
	{"GreaterOrEqual", tr_logic, 2, 2},
	{"GridSample", ox_tr_grid_sample, 2, 2},
	{"GroupNormalization", ox_tr_group_norm, 3, 3},
	{"GRU", ox_tr_gru, 3, 6},
	{"HardSigmoid", tr_hard_sigmoid, 1, 1},
	{"HardSwish", tr_unary, 1, 1},
	{"Identity", ox_tr_identity, 1, 1},
	{"InstanceNormalization", ox_tr_group_norm, 3, 3},
	{"IsInf", ox_tr_isinf, 1, 1},
	{"IsNaN", ox_tr_simple_unary, 1, 1},
	{"LayerNormalization", tr_layer_norm, 2, 3},
	{"LeakyRelu", ox_tr_alpha_unary, 1, 1},
	{"Less", tr_binary, 2, 2},
	{"LessOrEqual", tr_logic, 2, 2},
	{"Log", tr_unary, 1, 1},
	{"LSTM", ox_tr_lstm, 3, 8},
	{"LogSoftmax", tr_softmax, 1, 1},
	{"MatMul", tr_matmul, 2, 2},
	{"Max", tr_variadic, 1, V},
	{"MaxPool", tr_pool, 1, 1},
	{"Mean", ox_tr_sum_mean, 1, V},
	{"Min", tr_variadic, 1, V},
	{"Mish", ox_tr_simple_unary, 1, 1},
	{"Mod", ox_tr_mod, 2, 2},
	{"Mul", tr_binary, 2, 2},
	{"Neg", tr_unary, 1, 1},
	{"NonZero", ox_tr_nonzero, 1, 1},
	{"Not", tr_logic, 1, 1},
	{"OneHot", ox_tr_one_hot, 3, 3},
	{"Or", tr_logic, 2, 2},
	{"PRelu", ox_tr_prelu, 2, 2},
	{"Pad", ox_tr_pad, 2, 4},
	{"Pow", tr_pow, 2, 2},
	{"Range", ox_tr_range, 3, 3},
	{"Reciprocal", tr_reciprocal, 1, 1},
	{"ReduceL1", ox_tr_reduce_more, 1, 2},
	{"ReduceL2", ox_tr_reduce_more, 1, 2},
	{"ReduceLogSum", ox_tr_reduce_more, 1, 2},
	{"ReduceLogSumExp", ox_tr_reduce_more, 1, 2},
	{"ReduceMax", tr_reduce, 1, 2},
	{"ReduceMean", tr_reduce, 1, 2},
	{"ReduceMin", tr_reduce, 1, 2},
	{"ReduceSum", tr_reduce, 1, 2},
	{"ReduceSumSquare", ox_tr_reduce_more, 1, 2},
	{"Relu", tr_unary, 1, 1},
	{"Reshape", ox_tr_reshape, 2, 2},
	{"Resize", ox_tr_resize, 1, 4},
	{"RNN", ox_tr_rnn, 3, 6},
	{"Round", ox_tr_simple_unary, 1, 1},
	{"ScatterElements", ox_tr_scatter, 3, 3},
	{"ScatterND", ox_tr_scatter, 3, 3},
	{"Selu", ox_tr_more_act, 1, 1},
	{"Shape", ox_tr_shape, 1, 1},
	{"Sigmoid", tr_unary, 1, 1},
	{"Sign", ox_tr_sign, 1, 1},
	{"Sin", ox_tr_simple_unary, 1, 1},
	{"Size", ox_tr_size, 1, 1},
	{"Slice", ox_tr_slice, 3, 5},
	{"Softmax", tr_softmax, 1, 1},
	{"Softplus", ox_tr_simple_unary, 1, 1},
	{"Softsign", ox_tr_more_act, 1, 1},
	{"Split", ox_tr_split, 1, 2},
	{"Sqrt", tr_unary, 1, 1},
	{"Squeeze", ox_tr_squeeze, 1, 2},
	{"Sub", tr_binary, 2, 2},
	{"Sum", ox_tr_sum_mean, 1, V},
	{"Tanh", tr_unary, 1, 1},
	{"ThresholdedRelu", ox_tr_more_act, 1, 1},
	{"Tile", ox_tr_tile, 2, 2},
	{"TopK", ox_tr_topk, 2, 2},
	{"Transpose", ox_tr_transpose, 1, 1},
	{"Trilu", ox_tr_trilu, 1, 2},
	{"Unsqueeze", ox_tr_unsqueeze, 1, 2},
	{"Where", tr_where, 3, 3},
	{"Xor", ox_tr_xor, 2, 2},
};

const ox_op *ox_find_op(const char *op_type)
{
	for (size_t i = 0; i < SN_COUNT(ops); i++)
		if (strcmp(ops[i].name, op_type) == 0)
			return &ops[i];
	return NULL;
}
