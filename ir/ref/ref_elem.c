/* ref_elem.c: elementwise ops. Floats compute in double and round once at
 * the store (ir_store); integers (and bool) compute exactly in int64 and
 * wrap to the output type like PyTorch. Broadcasting goes through ref_iter,
 * so every op here shares one loop shape. */
#include "ir/ref/ref_impl.h"

#include <math.h>

static double relu6(double x)
{
	return x < 0 ? 0 : x > 6 ? 6 : x; /* NaN falls through */
}

/* log(1 + e^x) without overflow: x + log(1 + e^-x) for x > 0. */
static double softplus(double x)
{
	return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

static double unary_f(ir_op op, const ir_attrs *a, double x)
{
	switch (op) {
	case IR_OP_neg: return -x;
	case IR_OP_abs: return fabs(x);
	case IR_OP_exp: return exp(x);
	case IR_OP_log: return log(x);
	case IR_OP_sqrt: return sqrt(x);
	case IR_OP_rsqrt: return 1 / sqrt(x);
	case IR_OP_tanh: return tanh(x);
	case IR_OP_sigmoid: return 1 / (1 + exp(-x));
	case IR_OP_erf: return erf(x);
	case IR_OP_relu: return x < 0 ? 0 : x; /* relu(NaN) = NaN, as PyTorch */
	case IR_OP_gelu:
		if (a->approximate == IR_GELU_TANH)
			return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
		return x * 0.5 * (1 + erf(x / sqrt(2.0)));
	case IR_OP_silu: return x / (1 + exp(-x));
	case IR_OP_hardswish: return x * relu6(x + 3) / 6;
	case IR_OP_hardsigmoid: return relu6(x + 3) / 6;
	case IR_OP_clamp:
		if (x < a->min)
			x = a->min;
		if (x > a->max)
			x = a->max;
		return x;
	case IR_OP_sin: return sin(x);
	case IR_OP_cos: return cos(x);
	case IR_OP_floor: return floor(x);
	case IR_OP_ceil: return ceil(x);
	case IR_OP_round: return nearbyint(x); /* the default mode: ties to even */
	case IR_OP_softplus: return softplus(x);
	case IR_OP_mish: return x * tanh(softplus(x));
	case IR_OP_elu: return x > 0 ? x : a->alpha * expm1(x);
	case IR_OP_leaky_relu: return x < 0 ? a->alpha * x : x;
	case IR_OP_isnan: return isnan(x) ? 1 : 0;
	case IR_OP_isinf: return isinf(x) ? 1 : 0;
	default: return NAN;
	}
}

static int64_t unary_i(ir_op op, const ir_attrs *a, int64_t x)
{
	switch (op) {
	case IR_OP_neg: return (int64_t)(0 - (uint64_t)x);
	case IR_OP_abs: return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
	case IR_OP_relu: return x < 0 ? 0 : x;
	case IR_OP_clamp:
		/* Bounds are doubles; a bound between integers rounds inward. */
		if ((double)x < a->min)
			return a->min > 9.2e18 ? INT64_MAX : (int64_t)ceil(a->min);
		if ((double)x > a->max)
			return a->max < -9.2e18 ? INT64_MIN : (int64_t)floor(a->max);
		return x;
	default: return x;
	}
}

int ref_unary(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	int64_t total = ref_numel(&out->shape);
	ir_dtype it = in[0].dtype, ot = out->dtype;
	if (ref_is_int(it)) {
		for (int64_t i = 0; i < total; i++)
			ref_store_int(ot, out->data, (size_t)i,
				      unary_i(n->op, n->attrs, ref_load_int(it, in[0].data, (size_t)i)));
		return SN_OK;
	}
	for (int64_t i = 0; i < total; i++)
		ir_store(ot, out->data, (size_t)i, unary_f(n->op, n->attrs, ir_load(it, in[0].data, (size_t)i)));
	return SN_OK;
}

/* mod: C fmod (the dividend's sign), or with the divisor's sign
 * (Python's %, torch.remainder) when fm is false. */
static double mod_f(double x, double y, bool fm)
{
	double r = fmod(x, y);
	if (!fm && r != 0 && (r < 0) != (y < 0))
		r += y;
	return r;
}

static double binary_f(ir_op op, const ir_attrs *a, double x, double y)
{
	switch (op) {
	case IR_OP_mod: return mod_f(x, y, a->fmod);
	case IR_OP_add: return x + y;
	case IR_OP_sub: return x - y;
	case IR_OP_mul: return x * y;
	case IR_OP_div: return x / y;
	case IR_OP_pow: return pow(x, y);
	/* torch.minimum/maximum: NaN in either operand gives NaN. */
	case IR_OP_min: return isnan(x) || isnan(y) ? NAN : x < y ? x : y;
	case IR_OP_max: return isnan(x) || isnan(y) ? NAN : x > y ? x : y;
	case IR_OP_equal: return x == y;
	case IR_OP_less: return x < y;
	case IR_OP_greater: return x > y;
	default: return NAN;
	}
}

/* Integer arithmetic wraps (through uint64, so there is no UB). */
static int binary_i(ir_op op, const ir_attrs *a, int64_t x, int64_t y, int64_t *r, sn_err *e)
{
	switch (op) {
	case IR_OP_mod:
		if (y == 0)
			return sn_errf(e, SN_EINPUT, "mod: integer division by zero");
		*r = y == -1 ? 0 : x % y; /* C: the dividend's sign */
		if (!a->fmod && *r != 0 && (*r < 0) != (y < 0))
			*r += y;
		break;
	case IR_OP_add: *r = (int64_t)((uint64_t)x + (uint64_t)y); break;
	case IR_OP_sub: *r = (int64_t)((uint64_t)x - (uint64_t)y); break;
	case IR_OP_mul: *r = (int64_t)((uint64_t)x * (uint64_t)y); break;
	case IR_OP_div:
		if (y == 0)
			return sn_errf(e, SN_EINPUT, "div: integer division by zero");
		/* C truncates toward zero; INT64_MIN / -1 wraps to itself. */
		*r = y == -1 ? (int64_t)(0 - (uint64_t)x) : x / y;
		break;
	case IR_OP_pow: *r = (int64_t)pow((double)x, (double)y); break;
	case IR_OP_min: *r = x < y ? x : y; break;
	case IR_OP_max: *r = x > y ? x : y; break;
	case IR_OP_equal: *r = x == y; break;
	case IR_OP_less: *r = x < y; break;
	case IR_OP_greater: *r = x > y; break;
	default: *r = 0; break;
	}
	return SN_OK;
}

int ref_binary(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	ref_iter it;
	ref_iter_init(&it, &out->shape);
	if (ref_iter_bcast(&it, &in[0].shape) < 0 || ref_iter_bcast(&it, &in[1].shape) < 0)
		return ref_bcast_fail(n, e);
	int64_t total = ref_numel(&out->shape);
	ir_dtype at = in[0].dtype, bt = in[1].dtype, ot = out->dtype;
	if (ref_is_int(at) && ref_is_int(bt)) {
		for (int64_t i = 0; i < total; i++, ref_iter_next(&it)) {
			int64_t r = 0;
			if (binary_i(n->op, n->attrs, ref_load_int(at, in[0].data, (size_t)it.off[0]),
				     ref_load_int(bt, in[1].data, (size_t)it.off[1]), &r, e) != SN_OK)
				return e->code;
			ref_store_int(ot, out->data, (size_t)i, r);
		}
		return SN_OK;
	}
	for (int64_t i = 0; i < total; i++, ref_iter_next(&it))
		ir_store(ot, out->data, (size_t)i,
			 binary_f(n->op, n->attrs, ir_load(at, in[0].data, (size_t)it.off[0]),
				  ir_load(bt, in[1].data, (size_t)it.off[1])));
	return SN_OK;
}

int ref_where(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	ref_iter it;
	ref_iter_init(&it, &out->shape);
	for (int k = 0; k < 3; k++)
		if (ref_iter_bcast(&it, &in[k].shape) < 0)
			return ref_bcast_fail(n, e);
	int64_t total = ref_numel(&out->shape);
	size_t es = ir_dtype_size(out->dtype);
	ir_dtype ct = in[0].dtype;
	for (int64_t i = 0; i < total; i++, ref_iter_next(&it)) {
		bool c = ref_is_int(ct) ? ref_load_int(ct, in[0].data, (size_t)it.off[0]) != 0
					: ir_load(ct, in[0].data, (size_t)it.off[0]) != 0;
		int k = c ? 1 : 2;
		/* x and y have the output's dtype: move the bits unchanged. */
		ref_copy_elem(out->data, (size_t)i, in[k].data, (size_t)it.off[k], es);
	}
	return SN_OK;
}

/* Integer to integer casts are exact in int64 and saturate like ir_store
 * does for float to integer, so every cast to an integer type agrees. */
static int64_t saturate(ir_dtype t, int64_t v)
{
	int64_t lo = INT64_MIN, hi = INT64_MAX;
	switch (t) {
	case IR_I32: lo = INT32_MIN, hi = INT32_MAX; break;
	case IR_I8: lo = INT8_MIN, hi = INT8_MAX; break;
	case IR_U8: lo = 0, hi = UINT8_MAX; break;
	default: break;
	}
	return v < lo ? lo : v > hi ? hi : v;
}

int ref_cast(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	int64_t total = ref_numel(&out->shape);
	ir_dtype it = in[0].dtype, ot = out->dtype;
	if (ref_is_int(it) && ref_is_int(ot)) {
		for (int64_t i = 0; i < total; i++)
			ref_store_int(ot, out->data, (size_t)i,
				      saturate(ot, ref_load_int(it, in[0].data, (size_t)i)));
		return SN_OK;
	}
	for (int64_t i = 0; i < total; i++)
		ir_store(ot, out->data, (size_t)i, ir_load(it, in[0].data, (size_t)i));
	return SN_OK;
}
