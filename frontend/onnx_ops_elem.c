/* onnx_ops_elem.c: ONNX elementwise ops beyond onnx_ops.c's: the tests
 * (IsNaN, IsInf), activations (Elu, Selu, LeakyRelu, Softplus, Mish, ...),
 * Mod, PRelu, Xor, Sum/Mean, Sign; and what is written with elementwise
 * ops and reductions: GroupNormalization and InstanceNormalization, the
 * derived reductions (L1, L2, LogSum, LogSumExp, SumSquare). */
#include "onnx_build.h"

#include <string.h>

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
	bool noop;
	if (ox_reduce_axes(c, nd, &a, &noop))
		return c->e->code;
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
