/* onnx_ops_more.c: the ONNX ops that current PyTorch and transformers
 * exports add to the basic set: the elementwise tests and activations,
 * indexing (GatherElements, ScatterElements, ScatterND), scans and arg
 * reductions, group and instance norms, the derived reductions (L1, L2,
 * LogSum, LogSumExp, SumSquare), Tile, Einsum, ConvTranspose and Resize.
 * Ops sinter has no IR op for are written with the ones it has: Einsum as
 * transposes, reshapes and a matmul; ConvTranspose as a convolution of the
 * zero-stuffed input with the flipped weight; Resize as gathers along each
 * resized axis with index and weight tables computed at import time. */
#include "onnx_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OOM(c) sn_errf((c)->e, SN_EINTERNAL, "out of memory")

static int bind(ox_ctx *c, const onnx_node *nd, ir_ref r) { return ox_out(c, nd, 0, r); }

static ir_ref emit1(ox_ctx *c, const onnx_node *nd, ir_op op, ir_ref x, const ir_attrs *a)
{
	return x == IR_NONE ? IR_NONE : ox_emit(c, nd, op, &x, 1, a);
}

static ir_ref emit2(ox_ctx *c, const onnx_node *nd, ir_op op, ir_ref a, ir_ref b)
{
	if (a == IR_NONE || b == IR_NONE)
		return IR_NONE;
	ir_ref in[2] = {a, b};
	return ox_emit(c, nd, op, in, 2, NULL);
}

static ir_ref where3(ox_ctx *c, const onnx_node *nd, ir_ref k, ir_ref x, ir_ref y)
{
	if (k == IR_NONE || x == IR_NONE || y == IR_NONE)
		return IR_NONE;
	ir_ref in[3] = {k, x, y};
	return ox_emit(c, nd, IR_OP_where, in, 3, NULL);
}

static ir_dtype dtype_of(ox_ctx *c, ir_ref r) { return ox_node(c, r)->dtype; }
static ir_shape shape_of(ox_ctx *c, ir_ref r) { return ox_node(c, r)->shape; }

static ir_ref reshape(ox_ctx *c, const onnx_node *nd, ir_ref x, const ir_shape *s)
{
	if (x == IR_NONE)
		return IR_NONE;
	if (ir_shape_eq(&ox_node(c, x)->shape, s))
		return x;
	ir_attrs a;
	ir_attrs_init(IR_OP_reshape, &a);
	a.shape.n = s->rank;
	memcpy(a.shape.v, s->d, (size_t)s->rank * sizeof *s->d);
	return emit1(c, nd, IR_OP_reshape, x, &a);
}

static ir_ref transpose(ox_ctx *c, const onnx_node *nd, ir_ref x, const int *perm, int rank)
{
	bool id = true;
	for (int i = 0; i < rank; i++)
		id &= perm[i] == i;
	if (x == IR_NONE || id)
		return x;
	ir_attrs a;
	ir_attrs_init(IR_OP_transpose, &a);
	a.perm.n = rank;
	for (int i = 0; i < rank; i++)
		a.perm.v[i] = perm[i];
	return emit1(c, nd, IR_OP_transpose, x, &a);
}

/* ---- elementwise ---- */

static const struct {
	const char *onnx;
	ir_op op;
} simple[] = {
	{"IsNaN", IR_OP_isnan}, {"Sin", IR_OP_sin}, {"Cos", IR_OP_cos}, {"Floor", IR_OP_floor},
	{"Ceil", IR_OP_ceil}, {"Round", IR_OP_round}, {"Softplus", IR_OP_softplus}, {"Mish", IR_OP_mish},
};

int ox_tr_simple_unary(ox_ctx *c, const onnx_node *nd)
{
	for (size_t i = 0; i < SN_COUNT(simple); i++)
		if (strcmp(simple[i].onnx, nd->op_type) == 0)
			return bind(c, nd, emit1(c, nd, simple[i].op, ox_need(c, nd, 0), NULL));
	return ox_fail(c, nd, "not a simple unary op");
}

/* Elu, LeakyRelu: alpha */
int ox_tr_alpha_unary(ox_ctx *c, const onnx_node *nd)
{
	ir_op op = nd->op_type[0] == 'E' ? IR_OP_elu : IR_OP_leaky_relu;
	ir_attrs a;
	ir_attrs_init(op, &a);
	a.alpha = ox_af(nd, "alpha", op == IR_OP_elu ? 1.0 : 0.01);
	return bind(c, nd, emit1(c, nd, op, ox_need(c, nd, 0), &a));
}

/* IsInf: either sign, or one of them (detect_negative/detect_positive). */
int ox_tr_isinf(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	bool neg = ox_ai(nd, "detect_negative", 1) != 0, pos = ox_ai(nd, "detect_positive", 1) != 0;
	ir_ref inf = emit1(c, nd, IR_OP_isinf, x, NULL);
	if (neg && pos)
		return bind(c, nd, inf);
	ir_ref sign = !neg && !pos ? ox_scalar(c, IR_BOOL, 0)
				   : emit2(c, nd, pos ? IR_OP_greater : IR_OP_less, x, ox_scalar(c, dtype_of(c, x), 0));
	return bind(c, nd, where3(c, nd, inf, sign, ox_scalar(c, IR_BOOL, 0)));
}

int ox_tr_mod(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0), y = ox_need(c, nd, 1);
	if (x == IR_NONE || y == IR_NONE)
		return c->e->code;
	ir_attrs a;
	ir_attrs_init(IR_OP_mod, &a);
	a.fmod = ox_ai(nd, "fmod", 0) != 0;
	ir_ref in[2] = {x, y};
	return bind(c, nd, ox_emit(c, nd, IR_OP_mod, in, 2, &a));
}

/* PRelu: where(x < 0, x * slope, x); slope broadcasts to x. */
int ox_tr_prelu(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0), s = ox_need(c, nd, 1);
	if (x == IR_NONE || s == IR_NONE)
		return c->e->code;
	ir_ref neg = emit2(c, nd, IR_OP_less, x, ox_scalar(c, dtype_of(c, x), 0));
	return bind(c, nd, where3(c, nd, neg, emit2(c, nd, IR_OP_mul, x, s), x));
}

/* Xor of bools: a != b. */
int ox_tr_xor(ox_ctx *c, const onnx_node *nd)
{
	ir_ref a = ox_need(c, nd, 0), b = ox_need(c, nd, 1);
	if (a == IR_NONE || b == IR_NONE)
		return c->e->code;
	if (dtype_of(c, a) != IR_BOOL || dtype_of(c, b) != IR_BOOL)
		return ox_fail(c, nd, "expects bool inputs");
	return bind(c, nd, where3(c, nd, emit2(c, nd, IR_OP_equal, a, b), ox_scalar(c, IR_BOOL, 0),
				  ox_scalar(c, IR_BOOL, 1)));
}

/* Sum, Mean: variadic, broadcasting, folded left to right. */
int ox_tr_sum_mean(ox_ctx *c, const onnx_node *nd)
{
	ir_ref y = ox_need(c, nd, 0);
	for (size_t i = 1; i < nd->ninputs && y != IR_NONE; i++)
		y = emit2(c, nd, IR_OP_add, y, ox_need(c, nd, i));
	if (y != IR_NONE && nd->op_type[0] == 'M' && nd->ninputs > 1)
		y = emit2(c, nd, IR_OP_div, y, ox_scalar(c, dtype_of(c, y), (double)nd->ninputs));
	return bind(c, nd, y);
}

/* Sign: 1, -1 or 0 (NaN stays NaN: x - x is NaN only for NaN, 0 else). */
int ox_tr_sign(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	ir_dtype t = dtype_of(c, x);
	ir_ref zero = ox_scalar(c, t, 0);
	ir_ref y = where3(c, nd, emit2(c, nd, IR_OP_greater, x, zero), ox_scalar(c, t, 1),
			  where3(c, nd, emit2(c, nd, IR_OP_less, x, zero), ox_scalar(c, t, -1), zero));
	if (ir_dtype_is_float(t))
		y = emit2(c, nd, IR_OP_add, y, emit2(c, nd, IR_OP_sub, x, x));
	return bind(c, nd, y);
}

/* Selu, Celu, Softsign, ThresholdedRelu: with elu, abs, where. */
int ox_tr_more_act(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	ir_dtype t = dtype_of(c, x);
	const char *op = nd->op_type;
	ir_attrs a;
	ir_attrs_init(IR_OP_elu, &a);
	if (strcmp(op, "Selu") == 0) { /* gamma * elu(x, alpha) */
		a.alpha = ox_af(nd, "alpha", 1.67326319217681884765625);
		double gamma = ox_af(nd, "gamma", 1.05070102214813232421875);
		return bind(c, nd, emit2(c, nd, IR_OP_mul, emit1(c, nd, IR_OP_elu, x, &a), ox_scalar(c, t, gamma)));
	}
	if (strcmp(op, "Celu") == 0) { /* alpha * elu(x / alpha) */
		double al = ox_af(nd, "alpha", 1.0);
		if (al == 0)
			return ox_fail(c, nd, "alpha must not be 0");
		ir_ref s = emit1(c, nd, IR_OP_elu, emit2(c, nd, IR_OP_div, x, ox_scalar(c, t, al)), &a);
		return bind(c, nd, emit2(c, nd, IR_OP_mul, s, ox_scalar(c, t, al)));
	}
	if (strcmp(op, "Softsign") == 0) /* x / (1 + |x|) */
		return bind(c, nd, emit2(c, nd, IR_OP_div, x,
					 emit2(c, nd, IR_OP_add, emit1(c, nd, IR_OP_abs, x, NULL), ox_scalar(c, t, 1))));
	/* ThresholdedRelu: x > alpha ? x : 0 */
	ir_ref k = emit2(c, nd, IR_OP_greater, x, ox_scalar(c, t, ox_af(nd, "alpha", 1.0)));
	return bind(c, nd, where3(c, nd, k, x, ox_scalar(c, t, 0)));
}

/* ---- indexing ---- */

/* GatherND: data's batch dims and the k indexed dims after them folded
 * into one, each index tuple turned into an offset into it (negative
 * components wrapped; the batch position from an iota), one gather. */
int ox_tr_gather_nd(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0), ix = ox_need(c, nd, 1);
	if (x == IR_NONE || ix == IR_NONE)
		return c->e->code;
	ir_shape xs = shape_of(c, x), is = shape_of(c, ix);
	int q = is.rank;
	int64_t bd = ox_ai(nd, "batch_dims", 0), k = q ? is.d[q - 1] : -1;
	if (bd < 0 || bd >= q || bd > xs.rank)
		return ox_fail(c, nd, "batch_dims %lld is out of range", (long long)bd);
	if (q < 1 || k < 1 || bd + k > xs.rank)
		return ox_fail(c, nd, "indices must be [..., k] with 1 <= k <= %lld", (long long)(xs.rank - bd));
	ir_dtype it = dtype_of(c, ix);
	if (it != IR_I64 && it != IR_I32)
		return ox_fail(c, nd, "indices must be int64 or int32");
	int64_t prod = 1; /* the folded dims: batch and indexed */
	for (int i = 0; i < bd + k; i++) {
		if (xs.d[i] < 0 || (i < bd && is.d[i] != xs.d[i]))
			return ox_fail(c, nd, "the batch and indexed dims must be known and agree; bind them to values when loading the model");
		if (__builtin_mul_overflow(prod, xs.d[i], &prod))
			return ox_fail(c, nd, "the indexed dims are too large");
	}
	ir_shape os = {q - 1, {0}}; /* an offset per index tuple */
	for (int i = 0; i < q - 1; i++)
		os.d[i] = is.d[i];
	ir_ref off = IR_NONE;
	int64_t stride = prod;
	for (int64_t j = 0; j < bd + k; j++) {
		stride /= xs.d[j] ? xs.d[j] : 1;
		ir_ref v;
		if (j < bd) {
			v = ox_iota(c, nd, it, &os, j);
		} else {
			ir_attrs sa;
			ir_attrs_init(IR_OP_slice, &sa);
			sa.axes = (ir_ints){1, {q - 1}};
			sa.starts = (ir_ints){1, {j - bd}};
			sa.ends = (ir_ints){1, {j - bd + 1}};
			v = reshape(c, nd, emit1(c, nd, IR_OP_slice, ix, &sa), &os);
			ir_ref wrapped = emit2(c, nd, IR_OP_add, v, ox_scalar(c, it, (double)xs.d[j]));
			v = where3(c, nd, emit2(c, nd, IR_OP_less, v, ox_scalar(c, it, 0)), wrapped, v);
		}
		if (stride != 1)
			v = emit2(c, nd, IR_OP_mul, v, ox_scalar(c, it, (double)stride));
		off = off == IR_NONE ? v : emit2(c, nd, IR_OP_add, off, v);
		if (off == IR_NONE)
			return c->e->code;
	}
	ir_shape fs = {1 + xs.rank - (int)(bd + k), {prod}};
	for (int i = (int)(bd + k); i < xs.rank; i++)
		fs.d[1 + i - bd - k] = xs.d[i];
	ir_ref flat = reshape(c, nd, x, &fs);
	ir_attrs ga;
	ir_attrs_init(IR_OP_gather, &ga);
	ir_ref in[2] = {flat, off};
	if (flat == IR_NONE)
		return c->e->code;
	return bind(c, nd, ox_emit(c, nd, IR_OP_gather, in, 2, &ga));
}

/* OneHot: where(unsqueeze(indices) == iota along the new axis, on, off);
 * depth must be known; negative indices count from the end, others out of
 * range give a row of off. */
int ox_tr_one_hot(ox_ctx *c, const onnx_node *nd)
{
	ir_ref ix = ox_need(c, nd, 0), vals = ox_need(c, nd, 2);
	double depthf;
	if (ix == IR_NONE || vals == IR_NONE || ox_num(c, nd, 1, "depth", &depthf))
		return c->e->code;
	if (!(depthf >= 1) || depthf > (double)(1 << 24))
		return ox_fail(c, nd, "depth %g is out of range", depthf);
	int64_t depth = (int64_t)depthf;
	ir_shape is = shape_of(c, ix), vs = shape_of(c, vals);
	if (vs.rank != 1 || vs.d[0] != 2)
		return ox_fail(c, nd, "values must be [off, on]");
	int r = is.rank + 1;
	if (r > IR_MAX_RANK)
		return ox_fail(c, nd, "the output would have rank above %d", IR_MAX_RANK);
	int ax = ir_axis(ox_ai(nd, "axis", -1), r);
	if (ax < 0)
		return ox_fail(c, nd, "axis is out of range");
	if (dtype_of(c, ix) != IR_I64) {
		ir_attrs ca;
		ir_attrs_init(IR_OP_cast, &ca);
		ca.dtype = IR_I64;
		ix = emit1(c, nd, IR_OP_cast, ix, &ca);
	}
	ir_ref wrapped = emit2(c, nd, IR_OP_add, ix, ox_scalar(c, IR_I64, (double)depth));
	ix = where3(c, nd, emit2(c, nd, IR_OP_less, ix, ox_scalar(c, IR_I64, 0)), wrapped, ix);
	ir_attrs ua;
	ir_attrs_init(IR_OP_unsqueeze, &ua);
	ua.axes = (ir_ints){1, {ax}};
	ix = emit1(c, nd, IR_OP_unsqueeze, ix, &ua);
	ir_shape ios = {r, {0}};
	for (int i = 0; i < r; i++)
		ios.d[i] = i == ax ? depth : 1;
	ir_ref pos = ox_iota(c, nd, IR_I64, &ios, ax);
	ir_ref hit = emit2(c, nd, IR_OP_equal, ix, pos);
	ir_ref pick[2];
	for (int k = 0; k < 2; k++) {
		ir_attrs sa;
		ir_attrs_init(IR_OP_slice, &sa);
		sa.starts = (ir_ints){1, {k}};
		sa.ends = (ir_ints){1, {k + 1}};
		ir_shape sc = {0, {0}};
		pick[k] = reshape(c, nd, emit1(c, nd, IR_OP_slice, vals, &sa), &sc);
	}
	return bind(c, nd, where3(c, nd, hit, pick[1], pick[0]));
}

/* NonZero: its result's shape depends on the values, so only a known input
 * is supported (evaluated here). */
int ox_tr_nonzero(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	const ir_tensor *t = ox_known(c, x);
	if (!t)
		return ox_fail(c, nd, "its output shape depends on the input's values: the input must be known at "
				      "import time");
	int r = t->shape.rank ? t->shape.rank : 1;
	int64_t n = 1;
	for (int i = 0; i < t->shape.rank; i++)
		n *= t->shape.d[i];
	int64_t cnt = 0;
	for (int64_t i = 0; i < n; i++)
		cnt += ir_load(t->dtype, t->data, (size_t)i) != 0;
	ir_tensor o = {IR_I64, {2, {r, cnt}}, malloc((size_t)(r * cnt) * 8 + 1), (size_t)(r * cnt) * 8};
	if (!o.data)
		return OOM(c);
	int64_t *p = o.data, col = 0;
	for (int64_t i = 0; i < n; i++) {
		if (ir_load(t->dtype, t->data, (size_t)i) == 0)
			continue;
		int64_t rem = i;
		for (int d = t->shape.rank - 1; d >= 0; d--) {
			p[d * cnt + col] = rem % t->shape.d[d];
			rem /= t->shape.d[d];
		}
		if (!t->shape.rank)
			p[col] = 0;
		col++;
	}
	return bind(c, nd, ox_value(c, o));
}



static int reduction_of(ox_ctx *c, const onnx_node *nd, ir_scatter *out)
{
	static const char *const names[] = {"none", "add", "mul", "max", "min"};
	for (int i = 0; i < 5; i++)
		if (ox_as_is(nd, "reduction", "none", names[i])) {
			*out = (ir_scatter)i;
			return SN_OK;
		}
	return ox_fail(c, nd, "reduction must be none, add, mul, max or min");
}

int ox_tr_gather_elements(ox_ctx *c, const onnx_node *nd)
{
	ir_ref in[2] = {ox_need(c, nd, 0), ox_need(c, nd, 1)};
	if (in[0] == IR_NONE || in[1] == IR_NONE)
		return c->e->code;
	ir_attrs a;
	ir_attrs_init(IR_OP_gather_elements, &a);
	a.axis = ox_ai(nd, "axis", 0);
	return bind(c, nd, ox_emit(c, nd, IR_OP_gather_elements, in, 2, &a));
}

/* ScatterElements, ScatterND */
int ox_tr_scatter(ox_ctx *c, const onnx_node *nd)
{
	bool elems = strcmp(nd->op_type, "ScatterElements") == 0;
	ir_op op = elems ? IR_OP_scatter_elements : IR_OP_scatter_nd;
	ir_ref in[3] = {ox_need(c, nd, 0), ox_need(c, nd, 1), ox_need(c, nd, 2)};
	if (in[0] == IR_NONE || in[1] == IR_NONE || in[2] == IR_NONE)
		return c->e->code;
	ir_attrs a;
	ir_attrs_init(op, &a);
	if (elems)
		a.axis = ox_ai(nd, "axis", 0);
	if (reduction_of(c, nd, &a.reduction))
		return c->e->code;
	return bind(c, nd, ox_emit(c, nd, op, in, 3, &a));
}

/* ---- scans and arg reductions ---- */

int ox_tr_cumsum(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	ir_ints ax;
	if (x == IR_NONE || ox_ints(c, nd, 1, "axis", false, &ax))
		return c->e->code;
	if (ax.n != 1)
		return ox_fail(c, nd, "axis must hold one value");
	ir_attrs a;
	ir_attrs_init(IR_OP_cumsum, &a);
	a.axis = ax.v[0];
	a.exclusive = ox_ai(nd, "exclusive", 0) != 0;
	a.reverse = ox_ai(nd, "reverse", 0) != 0;
	return bind(c, nd, emit1(c, nd, IR_OP_cumsum, x, &a));
}

int ox_tr_arg(ox_ctx *c, const onnx_node *nd)
{
	ir_op op = strcmp(nd->op_type, "ArgMax") == 0 ? IR_OP_argmax : IR_OP_argmin;
	ir_attrs a;
	ir_attrs_init(op, &a);
	a.axis = ox_ai(nd, "axis", 0);
	a.keepdims = ox_ai(nd, "keepdims", 1) != 0;
	a.select_last = ox_ai(nd, "select_last_index", 0) != 0;
	return bind(c, nd, emit1(c, nd, op, ox_need(c, nd, 0), &a));
}

/* TopK: values and indices as two topk nodes (index 0 and 1), each made
 * only when the graph names that output; always sorted (sorted=0 leaves
 * the order to the implementation). */
int ox_tr_topk(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	ir_ints k;
	if (x == IR_NONE || ox_ints(c, nd, 1, "K", false, &k))
		return c->e->code;
	if (k.n != 1)
		return ox_fail(c, nd, "K must hold one value");
	ir_attrs a;
	ir_attrs_init(IR_OP_topk, &a);
	a.axis = ox_ai(nd, "axis", -1);
	a.k = k.v[0];
	a.smallest = ox_ai(nd, "largest", 1) == 0;
	for (size_t i = 0; i < 2 && i < nd->noutputs; i++) {
		if (!nd->outputs[i][0])
			continue;
		a.index = (int64_t)i;
		if (ox_out(c, nd, i, emit1(c, nd, IR_OP_topk, x, &a)))
			return c->e->code;
	}
	return SN_OK;
}

/* ---- norms ---- */

/* A per-group [G] tensor repeated to per-channel [C] (GroupNormalization
 * before opset 21). */
static ir_ref per_channel(ox_ctx *c, const onnx_node *nd, ir_ref v, int64_t C, int64_t G)
{
	ir_shape s2 = {2, {G, 1}}, e2 = {2, {G, C / G}}, s1 = {1, {C}};
	ir_attrs a;
	ir_attrs_init(IR_OP_expand, &a);
	a.shape = (ir_ints){2, {G, C / G}};
	(void)e2;
	return reshape(c, nd, emit1(c, nd, IR_OP_expand, reshape(c, nd, v, &s2), &a), &s1);
}

/* GroupNormalization (num_groups; scale and bias per group before opset
 * 21, per channel since) and InstanceNormalization (a group per channel). */
int ox_tr_group_norm(ox_ctx *c, const onnx_node *nd)
{
	bool inst = nd->op_type[0] == 'I';
	ir_ref in[3] = {ox_need(c, nd, 0), ox_need(c, nd, 1), ox_need(c, nd, 2)};
	if (in[0] == IR_NONE || in[1] == IR_NONE || in[2] == IR_NONE)
		return c->e->code;
	ir_shape xs = shape_of(c, in[0]);
	if (xs.rank < 3)
		return ox_fail(c, nd, "the input must have rank >= 3");
	int64_t C = xs.d[1], G = inst ? C : ox_ai(nd, "num_groups", 0);
	if (C < 0)
		return ox_fail(c, nd, "the channel dim must be known");
	if (G < 1 || C % G != 0)
		return ox_fail(c, nd, "num_groups %lld must divide the %lld channels", (long long)G, (long long)C);
	for (int i = 1; i < 3; i++) {
		ir_shape ws = shape_of(c, in[i]);
		if (ws.rank != 1 || (ws.d[0] != C && ws.d[0] != G))
			return ox_fail(c, nd, "scale and bias must be [C] or [num_groups]");
		if (ws.d[0] != C && (in[i] = per_channel(c, nd, in[i], C, G)) == IR_NONE)
			return c->e->code;
		if (dtype_of(c, in[i]) != dtype_of(c, in[0])) {
			ir_attrs ca;
			ir_attrs_init(IR_OP_cast, &ca);
			ca.dtype = dtype_of(c, in[0]);
			if ((in[i] = emit1(c, nd, IR_OP_cast, in[i], &ca)) == IR_NONE)
				return c->e->code;
		}
	}
	ir_attrs a;
	ir_attrs_init(IR_OP_group_norm, &a);
	a.groups = G;
	a.eps = ox_af(nd, "epsilon", 1e-5);
	return bind(c, nd, ox_emit(c, nd, IR_OP_group_norm, in, 3, &a));
}

/* ---- derived reductions ---- */

/* ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceSumSquare: a
 * reduce_sum (or max) around elementwise ops; LogSumExp subtracts the
 * maximum first so that exp cannot overflow. */
int ox_tr_reduce_more(ox_ctx *c, const onnx_node *nd)
{
	const char *t = nd->op_type + 6;
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	ir_attrs a;
	ir_attrs_init(IR_OP_reduce_sum, &a);
	a.keepdims = ox_ai(nd, "keepdims", 1) != 0;
	if (ox_has(nd, 1)) {
		if (ox_ints(c, nd, 1, "axes", false, &a.axes))
			return c->e->code;
	} else if (ox_aints(c, nd, "axes", &a.axes) < 0) {
		return c->e->code;
	}
	bool noop = a.axes.n == 0 && ox_ai(nd, "noop_with_empty_axes", 0);
	ir_dtype dt = dtype_of(c, x);
	if (strcmp(t, "LogSumExp") == 0) {
		if (noop)
			return bind(c, nd, x);
		ir_attrs mk = a;
		mk.keepdims = true;
		ir_ref m = emit1(c, nd, IR_OP_reduce_max, x, &mk);
		/* a maximum of -inf (or inf) would make x - m NaN: use 0 there */
		ir_ref fin = emit1(c, nd, IR_OP_isinf, m, NULL);
		m = where3(c, nd, fin, ox_scalar(c, dt, 0), m);
		ir_ref s = emit1(c, nd, IR_OP_reduce_sum, emit1(c, nd, IR_OP_exp, emit2(c, nd, IR_OP_sub, x, m), NULL), &a);
		ir_ref y = emit1(c, nd, IR_OP_log, s, NULL);
		if (!a.keepdims && y != IR_NONE)
			m = reshape(c, nd, m, &ox_node(c, y)->shape);
		return bind(c, nd, emit2(c, nd, IR_OP_add, y, m));
	}
	ir_ref v = x;
	if (strcmp(t, "L1") == 0)
		v = emit1(c, nd, IR_OP_abs, x, NULL);
	else if (strcmp(t, "L2") == 0 || strcmp(t, "SumSquare") == 0)
		v = emit2(c, nd, IR_OP_mul, x, x);
	ir_ref s = noop ? v : emit1(c, nd, IR_OP_reduce_sum, v, &a);
	if (strcmp(t, "L2") == 0) {
		if (!ir_dtype_is_float(dt))
			return ox_fail(c, nd, "ReduceL2 of integers is not supported");
		s = emit1(c, nd, IR_OP_sqrt, s, NULL);
	} else if (strcmp(t, "LogSum") == 0) {
		s = emit1(c, nd, IR_OP_log, s, NULL);
	}
	return bind(c, nd, s);
}

/* ---- Tile: a unit dim before each repeated dim, expanded, folded ---- */

int ox_tr_tile(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	ir_ints rep;
	if (x == IR_NONE || ox_ints(c, nd, 1, "repeats", false, &rep))
		return c->e->code;
	ir_shape xs = shape_of(c, x);
	if (rep.n != xs.rank)
		return ox_fail(c, nd, "repeats has %d entries for an input of rank %d", rep.n, xs.rank);
	ir_shape mid = {0}, out = {0};
	ir_attrs ea;
	ir_attrs_init(IR_OP_expand, &ea);
	for (int i = 0; i < xs.rank; i++) {
		int64_t d = xs.d[i], r = rep.v[i];
		if (r < 0)
			return ox_fail(c, nd, "repeats must not be negative");
		if (r != 1) {
			if (d < 0)
				return ox_fail(c, nd, "a repeated dim must be known; bind it to a value when loading the model");
			if (r > 0 && d > INT64_MAX / r)
				return ox_fail(c, nd, "repeats %lld of a dim of %lld overflow", (long long)r, (long long)d);
			if (mid.rank >= IR_MAX_RANK)
				return ox_fail(c, nd, "too many repeated dims");
			mid.d[mid.rank] = 1;
			ea.shape.v[mid.rank++] = r;
		}
		if (mid.rank >= IR_MAX_RANK)
			return ox_fail(c, nd, "too many repeated dims");
		mid.d[mid.rank] = d;
		ea.shape.v[mid.rank++] = d;
		out.d[out.rank++] = r != 1 ? r * d : d;
	}
	ea.shape.n = mid.rank;
	ir_ref y = reshape(c, nd, emit1(c, nd, IR_OP_expand, reshape(c, nd, x, &mid), &ea), &out);
	return bind(c, nd, y);
}

/* ---- Range with a symbolic limit: iota ---- */

int ox_tr_range_sym(ox_ctx *c, const onnx_node *nd, int64_t sym)
{
	double st, de;
	if (ox_num(c, nd, 0, "start", &st) || ox_num(c, nd, 2, "delta", &de))
		return c->e->code;
	if (st != 0 || de != 1)
		return ox_fail(c, nd, "a limit that depends on symbolic dim %s needs start 0 and delta 1",
			       c->w->syms[sym]);
	ir_dtype t = dtype_of(c, ox_in(c, nd, 0));
	ir_shape s = {1, {IR_SYM(sym)}};
	return bind(c, nd, ox_iota(c, nd, t, &s, 0));
}

/* ---- Einsum ---- */

/* An operand while contracting: its value and one letter per dim. */
typedef struct eterm {
	ir_ref v;
	char l[IR_MAX_RANK + 1];
} eterm;

/* Sums x over the letters not in keep. */
static int ein_reduce(ox_ctx *c, const onnx_node *nd, eterm *x, const char *keep)
{
	ir_attrs a;
	ir_attrs_init(IR_OP_reduce_sum, &a);
	char rest[IR_MAX_RANK + 1];
	int nr = 0;
	for (int i = 0; x->l[i]; i++) {
		if (strchr(keep, x->l[i]))
			rest[nr++] = x->l[i];
		else
			a.axes.v[a.axes.n++] = i;
	}
	rest[nr] = 0;
	if (!a.axes.n)
		return SN_OK;
	if ((x->v = emit1(c, nd, IR_OP_reduce_sum, x->v, &a)) == IR_NONE)
		return c->e->code;
	memcpy(x->l, rest, (size_t)nr + 1);
	return SN_OK;
}

/* The dims of x for the letters of group, in order; the product (one dim
 * of 1 for an empty group) into *prod (-1: a product over a symbol). */
static void ein_group(ox_ctx *c, const eterm *x, const char *group, ir_shape *dims, int64_t *prod)
{
	ir_shape s = shape_of(c, x->v);
	dims->rank = 0;
	*prod = 1;
	for (int i = 0; group[i]; i++) {
		int64_t d = s.d[strchr(x->l, group[i]) - x->l];
		dims->d[dims->rank++] = d;
		if (d < 0 && group[1])
			*prod = -1;
		else if (*prod >= 0)
			*prod = group[1] ? *prod * d : d;
	}
}

/* x's dims permuted into the order of letters (a permutation of x->l). */
static ir_ref ein_order(ox_ctx *c, const onnx_node *nd, const eterm *x, const char *letters)
{
	int perm[IR_MAX_RANK], r = (int)strlen(letters);
	for (int i = 0; i < r; i++)
		perm[i] = (int)(strchr(x->l, letters[i]) - x->l);
	return transpose(c, nd, x->v, perm, r);
}

/* dst = a b c (letters), cut to cap - 1. */
static void cat3(char *dst, size_t cap, const char *a, const char *b, const char *c)
{
	size_t k = 0;
	for (const char *p[3] = {a, b, c}, **q = p; q < p + 3; q++)
		for (const char *s = *q; *s && k + 1 < cap; s++)
			dst[k++] = *s;
	dst[k] = 0;
}

/* a and b contracted into a term with the letters of both that keep
 * holds: batch letters (both, kept), then a's own, then b's own, through
 * one matmul of [batch..., L, K] by [batch..., K, R]. */
static int ein_pair(ox_ctx *c, const onnx_node *nd, eterm *a, eterm *b, const char *keep, eterm *out)
{
	char batch[IR_MAX_RANK + 1] = "", con[IR_MAX_RANK + 1] = "", left[IR_MAX_RANK + 1] = "",
	     right[IR_MAX_RANK + 1] = "";
	int nb = 0, nc = 0, nl = 0, nr = 0;
	for (int i = 0; a->l[i]; i++) {
		char ch = a->l[i];
		if (!strchr(b->l, ch))
			left[nl++] = ch;
		else if (strchr(keep, ch))
			batch[nb++] = ch;
		else
			con[nc++] = ch;
	}
	for (int i = 0; b->l[i]; i++)
		if (!strchr(a->l, b->l[i]))
			right[nr++] = b->l[i];
	batch[nb] = con[nc] = left[nl] = right[nr] = 0;
	char la[2 * IR_MAX_RANK + 1], lb[2 * IR_MAX_RANK + 1];
	cat3(la, sizeof la, batch, left, con);
	cat3(lb, sizeof lb, batch, con, right);
	ir_shape bd, ld, cd, rd, bbd;
	int64_t bp, lp, cp, rp;
	ein_group(c, a, batch, &bd, &bp);
	ein_group(c, b, batch, &bbd, &bp);
	ein_group(c, a, left, &ld, &lp);
	ein_group(c, a, con, &cd, &cp);
	ein_group(c, b, right, &rd, &rp);
	if (lp < 0 || cp < 0 || rp < 0)
		return ox_fail(c, nd, "einsum: a group of several dims holds a symbolic dim; bind it to a value when loading the model");
	if (nb + 2 > IR_MAX_RANK || nb + nl + nr > IR_MAX_RANK)
		return ox_fail(c, nd, "einsum: too many dims");
	ir_shape sa = bd, sb = bbd;
	sa.d[sa.rank++] = lp;
	sa.d[sa.rank++] = cp;
	sb.d[sb.rank++] = cp;
	sb.d[sb.rank++] = rp;
	ir_ref A = reshape(c, nd, ein_order(c, nd, a, la), &sa);
	ir_ref B = reshape(c, nd, ein_order(c, nd, b, lb), &sb);
	ir_ref y = emit2(c, nd, IR_OP_matmul, A, B);
	if (y == IR_NONE)
		return c->e->code;
	ir_shape ys = shape_of(c, y), so = {0};
	for (int i = 0; i < nb; i++)
		so.d[so.rank++] = ys.d[i];
	for (int i = 0; i < nl; i++)
		so.d[so.rank++] = ld.d[i];
	for (int i = 0; i < nr; i++)
		so.d[so.rank++] = rd.d[i];
	out->v = reshape(c, nd, y, &so);
	cat3(out->l, sizeof out->l, batch, left, right);
	return out->v == IR_NONE ? c->e->code : SN_OK;
}

/* The letters of one term of the equation; "..." becomes the letters
 * '0'.. (ellipsis dims, aligned from the right) for a rank-r operand. */
static int ein_term(ox_ctx *c, const onnx_node *nd, const char *s, size_t n, int rank, char *out, int *nell)
{
	int k = 0, named = 0;
	for (size_t i = 0; i < n; i++)
		named += s[i] != '.' && s[i] != ' ';
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ')
			continue;
		if (s[i] == '.') {
			if (i + 2 >= n + 0 || s[i + 1] != '.' || s[i + 2] != '.')
				return ox_fail(c, nd, "einsum: malformed ellipsis");
			int ne = rank < 0 ? *nell : rank - named;
			if (ne < 0 || (*nell >= 0 && rank >= 0 && ne > *nell && *nell != ne))
				return ox_fail(c, nd, "einsum: ellipsis does not fit the operand's rank");
			if (*nell < ne)
				*nell = ne;
			for (int j = 0; j < ne && k < IR_MAX_RANK; j++)
				out[k++] = (char)('0' + (*nell - ne) + j);
			i += 2;
			continue;
		}
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
			return ox_fail(c, nd, "einsum: unexpected character '%c' in the equation", s[i]);
		if (k >= IR_MAX_RANK)
			return ox_fail(c, nd, "einsum: a term has too many letters");
		out[k++] = s[i];
	}
	out[k] = 0;
	for (int i = 0; i < k; i++)
		if (strchr(out + i + 1, out[i]))
			return ox_fail(c, nd, "einsum: repeated letter '%c' in one term (diagonals) is not supported", out[i]);
	return SN_OK;
}

int ox_tr_einsum(ox_ctx *c, const onnx_node *nd)
{
	const onnx_attr *at = ox_attr(nd, "equation");
	char eq[256];
	if (!at || !at->s.n || at->s.n >= sizeof eq || memchr(at->s.p, 0, at->s.n))
		return ox_fail(c, nd, "equation is required (at most %zu characters)", sizeof eq - 1);
	memcpy(eq, at->s.p, at->s.n);
	eq[at->s.n] = 0;
	const char *arrow = strstr(eq, "->");
	size_t lhs = arrow ? (size_t)(arrow - eq) : strlen(eq);
	if (nd->ninputs < 1 || nd->ninputs > 8)
		return ox_fail(c, nd, "einsum: 1 to 8 operands are supported");
	eterm t[8];
	int nell = -1;
	size_t start = 0, k = 0;
	for (size_t i = 0; i <= lhs; i++) {
		if (i < lhs && eq[i] != ',')
			continue;
		if (k >= nd->ninputs)
			return ox_fail(c, nd, "einsum: the equation has more terms than inputs");
		if ((t[k].v = ox_need(c, nd, k)) == IR_NONE)
			return c->e->code;
		if (ein_term(c, nd, eq + start, i - start, shape_of(c, t[k].v).rank, t[k].l, &nell))
			return c->e->code;
		if ((int)strlen(t[k].l) != shape_of(c, t[k].v).rank)
			return ox_fail(c, nd, "einsum: term %zu has %zu letters for an operand of rank %d", k,
				       strlen(t[k].l), shape_of(c, t[k].v).rank);
		k++;
		start = i + 1;
	}
	if (k != nd->ninputs)
		return ox_fail(c, nd, "einsum: the equation has %zu terms for %zu inputs", k, nd->ninputs);
	char outl[IR_MAX_RANK + 1] = "";
	if (arrow) {
		if (ein_term(c, nd, arrow + 2, strlen(arrow + 2), -1, outl, &nell))
			return c->e->code;
	} else { /* implicit: the ellipsis, then letters seen once, sorted */
		int no = 0;
		for (int j = 0; j < nell; j++)
			outl[no++] = (char)('0' + j);
		for (int ch = 'A'; ch <= 'z'; ch++) {
			int seen = 0;
			for (size_t i = 0; i < k; i++)
				seen += strchr(t[i].l, ch) != NULL && ch != 0;
			if (seen == 1 && no < IR_MAX_RANK && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
				outl[no++] = (char)ch;
		}
		outl[no] = 0;
	}
	for (int i = 0; outl[i]; i++) {
		bool found = false;
		for (size_t j = 0; j < k; j++)
			found |= strchr(t[j].l, outl[i]) != NULL;
		if (!found)
			return ox_fail(c, nd, "einsum: output letter '%c' is in no input", outl[i]);
	}
	/* fold left to right; a letter is kept while the output or a later
	 * operand needs it */
	eterm acc = t[0];
	for (size_t i = 0; i < k; i++) {
		char keep[IR_MAX_RANK * 9 + 1];
		snprintf(keep, sizeof keep, "%s", outl);
		for (size_t j = i + 1; j < k; j++)
			strncat(keep, t[j].l, sizeof keep - strlen(keep) - 1);
		if (i == 0) {
			if (ein_reduce(c, nd, &acc, keep))
				return c->e->code;
			continue;
		}
		/* letters only one side has and nobody needs: summed first */
		char keep_a[sizeof keep + IR_MAX_RANK + 1], keep_b[sizeof keep + IR_MAX_RANK + 1];
		snprintf(keep_a, sizeof keep_a, "%s%s", keep, t[i].l);
		snprintf(keep_b, sizeof keep_b, "%s%s", keep, acc.l);
		eterm b = t[i];
		if (ein_reduce(c, nd, &acc, keep_a) || ein_reduce(c, nd, &b, keep_b) ||
		    ein_pair(c, nd, &acc, &b, keep, &acc))
			return c->e->code;
	}
	if (ein_reduce(c, nd, &acc, outl))
		return c->e->code;
	if (strlen(acc.l) != strlen(outl))
		return ox_fail(c, nd, "einsum: could not form the output");
	return bind(c, nd, ein_order(c, nd, &acc, outl));
}

/* ---- ConvTranspose ---- */

static ir_ref pad_op(ox_ctx *c, const onnx_node *nd, ir_ref x, const int64_t *pb, const int64_t *pe)
{
	/* negative pads crop (a slice), positive ones pad with zeros */
	ir_shape s = shape_of(c, x);
	int r = s.rank;
	ir_attrs pa, sa;
	ir_attrs_init(IR_OP_pad, &pa);
	ir_attrs_init(IR_OP_slice, &sa);
	pa.pad.n = 2 * r;
	bool anypad = false;
	for (int i = 0; i < r; i++) {
		pa.pad.v[i] = pb[i] > 0 ? pb[i] : 0;
		pa.pad.v[r + i] = pe[i] > 0 ? pe[i] : 0;
		anypad |= pb[i] > 0 || pe[i] > 0;
		if (pb[i] < 0 || pe[i] < 0) {
			sa.axes.v[sa.axes.n] = i;
			sa.starts.v[sa.axes.n] = pb[i] < 0 ? -pb[i] : 0;
			sa.ends.v[sa.axes.n] = pe[i] < 0 ? s.d[i] + pe[i] : INT64_MAX;
			sa.axes.n++;
		}
	}
	sa.starts.n = sa.ends.n = sa.axes.n;
	if (sa.axes.n)
		x = emit1(c, nd, IR_OP_slice, x, &sa);
	if (anypad)
		x = emit1(c, nd, IR_OP_pad, x, &pa);
	return x;
}

/* ConvTranspose (1-d and 2-d): the input zero-stuffed by the stride (a
 * unit dim after each spatial dim, padded with stride - 1 zeros, folded),
 * padded by dilation * (kernel - 1) - pad on each side (plus
 * output_padding at the end), then a stride-1 convolution with the weight
 * [C, O/g, kh, kw] regrouped to [O, C/g, kh, kw] and flipped in space. */
int ox_tr_conv_transpose(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0), w = ox_need(c, nd, 1), b = ox_in(c, nd, 2);
	if (x == IR_NONE || w == IR_NONE || c->e->code)
		return c->e->code;
	int nsp = shape_of(c, x).rank - 2;
	if ((nsp != 1 && nsp != 2) || shape_of(c, w).rank != nsp + 2)
		return ox_fail(c, nd, "only 1-d and 2-d transposed convolutions are supported");
	ir_attrs ua;
	ir_attrs_init(IR_OP_unsqueeze, &ua);
	ua.axes = (ir_ints){1, {2}};
	if (nsp == 1 && ((x = emit1(c, nd, IR_OP_unsqueeze, x, &ua)) == IR_NONE ||
			 (w = emit1(c, nd, IR_OP_unsqueeze, w, &ua)) == IR_NONE))
		return c->e->code;
	ir_shape xs = shape_of(c, x), ws = shape_of(c, w);
	int64_t G = ox_ai(nd, "group", 1), C = xs.d[1];
	if (C < 0 || xs.d[2] < 0 || xs.d[3] < 0)
		return ox_fail(c, nd, "channel and spatial dims must be known; bind them to values when loading the model");
	if (G < 1 || C % G || ws.d[0] != C)
		return ox_fail(c, nd, "the weight [C, O/group, kh, kw] does not match the input's %lld channels",
			       (long long)C);
	int64_t k[2] = {ws.d[2], ws.d[3]}, s[2] = {1, 1}, d[2] = {1, 1}, op[2] = {0, 0}, p[4] = {0, 0, 0, 0};
	ir_ints v;
	const char *names[] = {"strides", "dilations", "output_padding"};
	int64_t *dst[] = {s, d, op};
	for (int i = 0; i < 3; i++) {
		int got = ox_aints(c, nd, names[i], &v);
		if (got < 0)
			return c->e->code;
		if (got && v.n != nsp)
			return ox_fail(c, nd, "%s has %d entries, expected %d", names[i], v.n, nsp);
		for (int j = 0; got && j < nsp; j++)
			dst[i][j + 2 - nsp] = v.v[j];
	}
	for (int j = 0; j < 2; j++)
		if (s[j] < 1 || d[j] < 1 || op[j] < 0 || s[j] > 4096 || d[j] > 4096 || op[j] >= (s[j] > d[j] ? s[j] : d[j]))
			return ox_fail(c, nd, "strides, dilations or output_padding out of range");
	bool same_upper = ox_as_is(nd, "auto_pad", "NOTSET", "SAME_UPPER"),
	     same_lower = ox_as_is(nd, "auto_pad", "NOTSET", "SAME_LOWER");
	int got_os = ox_aints(c, nd, "output_shape", &v);
	if (got_os < 0)
		return c->e->code;
	if (got_os)
		for (int j = 0; j < v.n; j++)
			if (v.v[j] < 0 || v.v[j] > ((int64_t)1 << 30))
				return ox_fail(c, nd, "output_shape entry %lld is out of range", (long long)v.v[j]);
	if (xs.d[2] > ((int64_t)1 << 30) || xs.d[3] > ((int64_t)1 << 30) || k[0] > 4096 || k[1] > 4096)
		return ox_fail(c, nd, "spatial dims or kernel too large");
	if (got_os || same_upper || same_lower) {
		for (int j = 0; j < 2; j++) {
			int64_t in = xs.d[2 + j];
			int64_t want = got_os ? (j + nsp >= 2 ? v.v[v.n - 2 + j] : 1) : in * s[j];
			if (got_os && v.n < nsp)
				return ox_fail(c, nd, "output_shape has %d entries, expected %d", v.n, nsp);
			/* a negative total (a larger output) pads the end: floor division */
			int64_t total = s[j] * (in - 1) + op[j] + ((k[j] - 1) * d[j] + 1) - want;
			int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
			p[j] = same_upper ? half : total - half;
			p[j + 2] = total - p[j];
		}
	} else if (!ox_as_is(nd, "auto_pad", "NOTSET", "NOTSET") && !ox_as_is(nd, "auto_pad", "NOTSET", "VALID")) {
		return ox_fail(c, nd, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID");
	} else {
		int got = ox_aints(c, nd, "pads", &v);
		if (got < 0)
			return c->e->code;
		if (got && v.n != 2 * nsp)
			return ox_fail(c, nd, "pads has %d entries, expected %d", v.n, 2 * nsp);
		for (int j = 0; got && j < 2 * nsp; j++)
			if (v.v[j] < -((int64_t)1 << 30) || v.v[j] > ((int64_t)1 << 30))
				return ox_fail(c, nd, "pads entry %lld is out of range", (long long)v.v[j]);
		for (int j = 0; got && j < nsp; j++) {
			p[j + 2 - nsp] = v.v[j];
			p[j + 4 - nsp] = v.v[j + nsp];
		}
	}
	/* zero-stuff: [N,C,H,W] -> [N,C,H,1,W,1] -> pad -> [N,C,H*sh,W*sw] */
	ir_shape s6 = {6, {xs.d[0], C, xs.d[2], 1, xs.d[3], 1}};
	ir_ref z = x;
	if (s[0] > 1 || s[1] > 1) {
		ir_attrs pa;
		ir_attrs_init(IR_OP_pad, &pa);
		pa.pad = (ir_ints){12, {0, 0, 0, 0, 0, 0, 0, 0, 0, s[0] - 1, 0, s[1] - 1}};
		ir_shape s4 = {4, {xs.d[0], C, xs.d[2] * s[0], xs.d[3] * s[1]}};
		z = reshape(c, nd, emit1(c, nd, IR_OP_pad, reshape(c, nd, x, &s6), &pa), &s4);
	}
	/* the stuffed size is (in - 1) * s + 1: the trailing s - 1 zeros go */
	int64_t pb[4] = {0, 0, d[0] * (k[0] - 1) - p[0], d[1] * (k[1] - 1) - p[1]};
	int64_t pe[4] = {0, 0, d[0] * (k[0] - 1) - p[2] + op[0] - (s[0] - 1),
			 d[1] * (k[1] - 1) - p[3] + op[1] - (s[1] - 1)};
	if (z != IR_NONE)
		z = pad_op(c, nd, z, pb, pe);
	/* weight: [C, O/g, kh, kw] -> [g, C/g, O/g, kh, kw] -> [g, O/g, C/g, kh, kw] -> [O, C/g, kh, kw], flipped */
	int64_t og = ws.d[1];
	ir_shape w5 = {5, {G, C / G, og, k[0], k[1]}}, w4 = {4, {G * og, C / G, k[0], k[1]}};
	int perm[5] = {0, 2, 1, 3, 4};
	ir_ref wt = reshape(c, nd, transpose(c, nd, reshape(c, nd, w, &w5), perm, 5), &w4);
	ir_attrs fa;
	ir_attrs_init(IR_OP_slice, &fa);
	fa.axes = (ir_ints){2, {2, 3}};
	fa.starts = (ir_ints){2, {-1, -1}};
	fa.ends = (ir_ints){2, {INT64_MIN, INT64_MIN}};
	fa.steps = (ir_ints){2, {-1, -1}};
	wt = emit1(c, nd, IR_OP_slice, wt, &fa);
	if (z == IR_NONE || wt == IR_NONE)
		return c->e->code;
	ir_attrs ca;
	ir_attrs_init(IR_OP_conv2d, &ca);
	ca.groups = G;
	ca.dilation = (ir_ints){2, {d[0], d[1]}};
	ir_ref in[3] = {z, wt, b};
	ir_ref y = ox_emit(c, nd, IR_OP_conv2d, in, b == IR_NONE ? 2 : 3, &ca);
	if (nsp == 1 && y != IR_NONE) {
		ir_attrs sq;
		ir_attrs_init(IR_OP_squeeze, &sq);
		sq.axes = (ir_ints){1, {2}};
		y = emit1(c, nd, IR_OP_squeeze, y, &sq);
	}
	return bind(c, nd, y);
}

/* ---- Resize ---- */

/* Bounds: a resized dim of at most 65536 (4K frames need 3840), and a
 * resized constant (folded here, at import time) of at most 4M elements:
 * models resize activations; a larger constant would only be slow. */
enum { RESIZE_MAX = 1 << 16, RESIZE_KNOWN_MAX = 1 << 22 };

/* The input coordinate of output coordinate o along an axis of size in
 * resized to out with scale s (ONNX's coordinate_transformation_mode), in
 * float arithmetic as onnxruntime computes it: the spec leaves the
 * precision open, and a coordinate on a tie of the nearest modes (x.5)
 * lands by it. The resized length is the output length out (so
 * pytorch_half_pixel and align_corners use the integer length, not in * s). */
static float resize_coord(int mode, float o, int64_t in, int64_t out, float s)
{
	float lo = (float)in, lr = (float)out;
	switch (mode) {
	case 1: return (o + 0.5f) / s - 0.5f;                         /* half_pixel */
	case 2: return lr > 1 ? (o + 0.5f) / s - 0.5f : 0.0f;          /* pytorch_half_pixel */
	case 3: return lr == 1 ? 0.0f : o * (lo - 1) / (lr - 1);       /* align_corners */
	case 4: return o / s;                                         /* asymmetric */
	case 5: return (o + 0.5f) / s;                                /* tf_half_pixel_for_nn */
	default: {                                                    /* half_pixel_symmetric */
		float width = s * lo, adj = lr / width, center = lo / 2, off = center * (1 - adj);
		return (float)((double)off + ((double)o + 0.5) / (double)s - 0.5);
	}
	}
}

static int64_t clampi(int64_t v, int64_t hi) { return v < 0 ? 0 : v > hi ? hi : v; }

/* y gathered along axis by the index table idx[out], times the weight
 * table wt[out] (NULL: no weight) broadcast over the dims after axis. */
static ir_ref resize_term(ox_ctx *c, const onnx_node *nd, ir_ref y, int axis, const int64_t *idx,
			  const double *wt, int64_t out)
{
	ir_shape ys = shape_of(c, y);
	ir_tensor it = {IR_I64, {1, {out}}, malloc((size_t)out * 8 + 1), (size_t)out * 8};
	if (!it.data)
		return OOM(c), IR_NONE;
	memcpy(it.data, idx, (size_t)out * 8);
	ir_attrs ga;
	ir_attrs_init(IR_OP_gather, &ga);
	ga.axis = axis;
	ir_ref in[2] = {y, ox_value(c, it)};
	if (in[1] == IR_NONE)
		return IR_NONE;
	ir_ref g = ox_emit(c, nd, IR_OP_gather, in, 2, &ga);
	if (!wt || g == IR_NONE)
		return g;
	ir_dtype t = ys.rank ? dtype_of(c, y) : IR_F32;
	ir_shape ws = {ys.rank - axis, {0}};
	ws.d[0] = out;
	for (int i = 1; i < ws.rank; i++)
		ws.d[i] = 1;
	size_t es = ir_dtype_size(t);
	ir_tensor w = {t, ws, malloc((size_t)out * es + 1), (size_t)out * es};
	if (!w.data)
		return OOM(c), IR_NONE;
	for (int64_t i = 0; i < out; i++)
		ir_store(t, w.data, (size_t)i, wt[i]);
	return emit2(c, nd, IR_OP_mul, g, ox_value(c, w));
}

/* Resize along one axis from in to out: nearest (one gather), linear (two
 * weighted gathers) or cubic (four), with the tables computed here. */
static ir_ref resize_axis(ox_ctx *c, const onnx_node *nd, ir_ref y, int axis, int64_t in, int64_t out,
			  float s, int mode, int coord, int nearest, double ca, bool excl)
{
	int taps = mode == 0 ? 1 : mode == 1 ? 2 : 4;
	int64_t *idx = malloc((size_t)(out * taps + 1) * sizeof *idx);
	double *wt = malloc((size_t)(out * taps + 1) * sizeof *wt);
	if (!idx || !wt) {
		free(idx);
		free(wt);
		return OOM(c), IR_NONE;
	}
	bool ident = out == in;
	for (int64_t o = 0; o < out; o++) {
		double x = resize_coord(coord, (float)o, in, out, s);
		if (mode == 0) {
			double f = floor(x), r;
			switch (nearest) {
			case 0: r = x - f == 0.5 ? f : round(x); break; /* round_prefer_floor */
			case 1: r = x - f == 0.5 ? f + 1 : round(x); break;
			case 2: r = f; break;
			default: r = ceil(x); break;
			}
			idx[o] = clampi(!(r > -1e18) ? 0 : r > 1e18 ? in : (int64_t)r, in - 1);
			wt[o] = 1;
			ident &= idx[o] == o;
			continue;
		}
		double f = floor(x), r = x - f;
		int64_t b = !(f > -1e18) ? 0 : f > 1e18 ? in : (int64_t)f;
		double cw[4];
		if (mode == 1) {
			cw[0] = 1 - r, cw[1] = r;
		} else {
			cw[0] = ((ca * (r + 1) - 5 * ca) * (r + 1) + 8 * ca) * (r + 1) - 4 * ca;
			cw[1] = ((ca + 2) * r - (ca + 3)) * r * r + 1;
			cw[2] = ((ca + 2) * (1 - r) - (ca + 3)) * (1 - r) * (1 - r) + 1;
			cw[3] = ((ca * (2 - r) - 5 * ca) * (2 - r) + 8 * ca) * (2 - r) - 4 * ca;
			b -= 1;
		}
		double sum = 0;
		for (int k = 0; k < taps; k++) {
			int64_t j = b + k;
			if (excl && (j < 0 || j >= in))
				cw[k] = 0;
			sum += cw[k];
		}
		for (int k = 0; k < taps; k++) {
			idx[k * out + o] = clampi(b + k, in - 1);
			wt[k * out + o] = excl && sum != 0 ? cw[k] / sum : cw[k];
			/* the identity: all the weight on o itself */
			ident &= wt[k * out + o] == (b + k == o ? 1.0 : 0.0);
		}
	}
	ir_ref acc = y;
	if (!ident) {
		acc = IR_NONE;
		for (int k = 0; k < taps; k++) {
			bool zero = true;
			for (int64_t o = 0; o < out; o++)
				zero &= wt[k * out + o] == 0;
			if (zero && !(k == taps - 1 && acc == IR_NONE))
				continue;
			ir_ref t = resize_term(c, nd, y, axis, idx + k * out, mode == 0 ? NULL : wt + k * out, out);
			acc = acc == IR_NONE ? t : emit2(c, nd, IR_OP_add, acc, t);
			if (t == IR_NONE)
				break;
		}
	}
	free(idx);
	free(wt);
	return acc;
}

static int str_choice(const onnx_node *nd, const char *name, const char *def, const char *const *opts, int n)
{
	for (int i = 0; i < n; i++)
		if (ox_as_is(nd, name, def, opts[i]))
			return i;
	return -1;
}

int ox_tr_resize(ox_ctx *c, const onnx_node *nd)
{
	static const char *const modes[] = {"nearest", "linear", "cubic"};
	static const char *const coords[] = {"half_pixel_symmetric", "half_pixel", "pytorch_half_pixel",
					     "align_corners", "asymmetric", "tf_half_pixel_for_nn"};
	static const char *const nears[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	int mode = str_choice(nd, "mode", "nearest", modes, 3);
	int coord = str_choice(nd, "coordinate_transformation_mode", "half_pixel", coords, 6);
	int nearest = str_choice(nd, "nearest_mode", "round_prefer_floor", nears, 4);
	if (mode < 0)
		return ox_fail(c, nd, "mode must be nearest, linear or cubic");
	if (coord < 0)
		return ox_fail(c, nd, "coordinate_transformation_mode tf_crop_and_resize is not supported");
	if (nearest < 0)
		return ox_fail(c, nd, "nearest_mode must be round_prefer_floor, round_prefer_ceil, floor or ceil");
	static const char *const policies[] = {"stretch", "not_larger", "not_smaller"};
	int policy = str_choice(nd, "keep_aspect_ratio_policy", "stretch", policies, 3);
	if (policy < 0)
		return ox_fail(c, nd, "keep_aspect_ratio_policy must be stretch, not_larger or not_smaller");
	if (mode != 0 && !ir_dtype_is_float(dtype_of(c, x)))
		return ox_fail(c, nd, "linear and cubic resizing need a float input");
	ir_shape xs = shape_of(c, x);
	int r = xs.rank;
	ir_ints axes = {r, {0}};
	for (int i = 0; i < r; i++)
		axes.v[i] = i;
	int got = ox_aints(c, nd, "axes", &axes);
	if (got < 0)
		return c->e->code;
	/* Per resized axis: its scale (float, as onnxruntime keeps it) and, from
	 * sizes, its output length (-1: from the scale). */
	float scale[IR_MAX_LIST];
	int64_t size[IR_MAX_LIST];
	if (ox_has(nd, 3)) {
		ir_ints sz;
		if (ox_ints(c, nd, 3, "sizes", false, &sz))
			return c->e->code;
		if (sz.n != axes.n)
			return ox_fail(c, nd, "sizes has %d entries for %d axes", sz.n, axes.n);
		for (int i = 0; i < axes.n; i++) {
			if (sz.v[i] < 0)
				return ox_fail(c, nd, "sizes must be >= 0, got %lld (entry %d)", (long long)sz.v[i], i);
			size[i] = sz.v[i], scale[i] = -1;
		}
		if (policy) { /* one scale for every axis: the smallest or the largest */
			float k = policy == 1 ? INFINITY : 0;
			for (int i = 0; i < axes.n; i++) {
				int a = ir_axis(axes.v[i], r);
				if (a < 0 || xs.d[a] <= 0)
					return ox_fail(c, nd, "keep_aspect_ratio_policy needs known, non-empty resized dims");
				float q = (float)size[i] / (float)xs.d[a];
				k = policy == 1 ? (q < k ? q : k) : (q > k ? q : k);
			}
			for (int i = 0; i < axes.n; i++) {
				float o = roundf(k * (float)xs.d[ir_axis(axes.v[i], r)]);
				if (!(o >= 0 && o <= (float)RESIZE_MAX))
					return ox_fail(c, nd, "output size %g is out of range (at most %d)", (double)o,
						       RESIZE_MAX);
				scale[i] = k;
				size[i] = (int64_t)o;
			}
		}
	} else if (ox_has(nd, 2)) {
		ir_ref sr = ox_need(c, nd, 2);
		const ir_tensor *st = sr != IR_NONE ? ox_known(c, sr) : NULL;
		if (!st)
			return c->e->code ? c->e->code : ox_fail(c, nd, "scales must be known at import time");
		size_t ns = st->nbytes / ir_dtype_size(st->dtype);
		if (ns != (size_t)axes.n)
			return ox_fail(c, nd, "scales has %zu entries for %d axes", ns, axes.n);
		for (int i = 0; i < axes.n; i++) {
			scale[i] = (float)ir_load(st->dtype, st->data, (size_t)i), size[i] = -1;
			if (!(scale[i] > 0))
				return ox_fail(c, nd, "scales must be > 0, got %g (entry %d)", (double)scale[i], i);
		}
	} else {
		return ox_fail(c, nd, "scales or sizes is required");
	}
	if (ox_known(c, x)) {
		double total = 1;
		for (int i = 0; i < r; i++)
			total *= xs.d[i] > 0 ? (double)xs.d[i] : 1;
		for (int i = 0; i < axes.n; i++) {
			int a = ir_axis(axes.v[i], r);
			double o = size[i] >= 0 ? (double)size[i] : scale[i] * (a >= 0 && xs.d[a] > 0 ? (double)xs.d[a] : 1);
			total *= (a >= 0 && xs.d[a] > 0) ? o / (double)xs.d[a] : o;
		}
		if (!(total <= RESIZE_KNOWN_MAX))
			return ox_fail(c, nd, "resizing a constant to %g elements (more than %d) is not supported", total,
				       RESIZE_KNOWN_MAX);
	}
	double ca = ox_af(nd, "cubic_coeff_a", -0.75);
	bool excl = ox_ai(nd, "exclude_outside", 0) != 0;
	/* Each axis's output length and scale first: onnxruntime copies the
	 * input when no length changes, whatever the scales. */
	int64_t outv[IR_MAX_LIST];
	bool same = true;
	for (int i = 0; i < axes.n; i++) {
		int a = ir_axis(axes.v[i], r);
		if (a < 0)
			return ox_fail(c, nd, "axis %lld is out of range", (long long)axes.v[i]);
		int64_t in = xs.d[a];
		float s = scale[i];
		int64_t out = size[i];
		if (out < 0) { /* from the scale: onnxruntime's (int64)(scale * in), in float */
			if (in < 0) {
				if (s != 1)
					return ox_fail(c, nd, "a resized dim must be known; bind it to a value when loading the model");
				out = in;
			} else {
				float o = s * (float)in;
				if (!(o <= (float)RESIZE_MAX))
					return ox_fail(c, nd, "scale %g makes axis %d %g long (at most %d)", (double)s, a,
						       (double)o, RESIZE_MAX);
				out = (int64_t)o;
			}
		} else {
			if (in < 0 && out != in)
				return ox_fail(c, nd, "a resized dim must be known; bind it to a value when loading the model");
			if (in >= 0 && s <= 0) /* onnxruntime's scale from sizes, in float */
				s = in ? (float)out / (float)in : 1;
		}
		if (in >= 0 && out > RESIZE_MAX)
			return ox_fail(c, nd, "output size %lld is out of range (at most %d)", (long long)out, RESIZE_MAX);
		if (in >= 0 && ox_ai(nd, "antialias", 0) && s < 1 && mode != 0)
			return ox_fail(c, nd, "antialias when downsampling is not supported");
		if ((in == 0 || out == 0) && out != in)
			return ox_fail(c, nd, "resizing an empty dim is not supported");
		outv[i] = out, scale[i] = s;
		same &= out == in;
	}
	ir_ref y = x;
	for (int i = 0; i < axes.n && y != IR_NONE && !same; i++) {
		int a = ir_axis(axes.v[i], r);
		int64_t in = xs.d[a];
		if (in <= 0)
			continue; /* symbolic with scale 1, or empty */
		y = resize_axis(c, nd, y, a, in, outv[i], scale[i], mode, coord, nearest, ca, excl);
	}
	return bind(c, nd, y);
}
