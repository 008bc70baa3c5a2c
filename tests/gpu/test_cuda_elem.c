/* test_cuda_elem.c: every elementwise op on CUDA against the reference:
 * each unary op per float dtype (vectorized sizes and sizes with a scalar
 * tail), integer unary and binary ops, binary ops under several broadcast
 * patterns, comparisons, where, casts between every pair of dtypes, and a
 * tensor large enough for the grid-stride loop to wrap. Inputs are fresh
 * random values (gpu_check.c): floats in [-1, 1), integers in [0, 4);
 * ops with a restricted domain get operands shifted or exponentiated. */
#include "gpu_check.h"

#include <stdio.h>
#include <string.h>

/* A scalar constant of dtype t. */
static ir_ref scalar(ir_graph *g, ir_dtype t, double v)
{
	uint64_t bits = 0;
	ir_store(t, &bits, 0, v);
	ir_shape s = {0, {0}};
	return ir_add_const(g, t, &s, &bits, &gpu_err);
}

static ir_ref cast(ir_graph *g, ir_ref a, ir_dtype t)
{
	ir_attrs at;
	ir_attrs_init(IR_OP_cast, &at);
	at.dtype = t;
	return gpu_op1(g, IR_OP_cast, a, &at);
}

static const ir_op unary_ops[] = {
	IR_OP_neg, IR_OP_abs, IR_OP_exp, IR_OP_log, IR_OP_sqrt, IR_OP_rsqrt, IR_OP_tanh, IR_OP_sigmoid,
	IR_OP_erf, IR_OP_relu, IR_OP_gelu, IR_OP_silu, IR_OP_hardswish, IR_OP_hardsigmoid, IR_OP_clamp,
	IR_OP_sin, IR_OP_cos, IR_OP_floor, IR_OP_ceil, IR_OP_round, IR_OP_softplus, IR_OP_mish, IR_OP_elu,
	IR_OP_leaky_relu,
};

static void unary_float(void)
{
	const ir_dtype ts[] = {IR_F32, IR_F16, IR_BF16};
	const ir_shape shapes[] = {GPU_SHAPE(64, 1000), GPU_SHAPE(37, 129)};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++)
		for (size_t si = 0; si < SN_COUNT(shapes); si++)
			for (size_t i = 0; i <= SN_COUNT(unary_ops); i++) {
				ir_op op = i < SN_COUNT(unary_ops) ? unary_ops[i] : IR_OP_gelu;
				ir_graph *g = ir_graph_new();
				ir_ref x = gpu_in(g, "x", ts[ti], shapes[si]);
				/* hardswish/hardsigmoid bend at -3 and 3: widen the range */
				if (op == IR_OP_hardswish || op == IR_OP_hardsigmoid || op == IR_OP_floor ||
				    op == IR_OP_ceil || op == IR_OP_round || op == IR_OP_sin || op == IR_OP_cos)
					x = gpu_op2(g, IR_OP_mul, x, scalar(g, ts[ti], 5));
				if (op == IR_OP_log || op == IR_OP_sqrt || op == IR_OP_rsqrt)
					x = gpu_op1(g, IR_OP_exp, x, NULL); /* positive */
				ir_attrs at;
				ir_attrs_init(op, &at);
				if (op == IR_OP_clamp)
					at.min = -0.5, at.max = 0.25;
				if (i == SN_COUNT(unary_ops))
					at.approximate = IR_GELU_TANH;
				char label[96];
				snprintf(label, sizeof label, "%s%s %s [%lld,%lld]", ir_ops[op].name,
					 i == SN_COUNT(unary_ops) ? "(tanh)" : "", ir_dtype_name(ts[ti]),
					 (long long)shapes[si].d[0], (long long)shapes[si].d[1]);
				gpu_run(g, gpu_op1(g, op, x, &at), gpu_tol(ts[ti]), label);
			}
}

/* isnan of log(x) (NaN below 0), isinf of 1 / floor(x) (inf on [0, 1)),
 * mod in both sign conventions, float and integer. */
static void tests_and_mod(void)
{
	const ir_dtype ts[] = {IR_F32, IR_F16, IR_BF16};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++) {
		ir_graph *g = ir_graph_new();
		ir_ref x = gpu_in(g, "x", ts[ti], GPU_SHAPE(37, 129));
		char label[64];
		snprintf(label, sizeof label, "isnan %s", ir_dtype_name(ts[ti]));
		gpu_run(g, gpu_op1(g, IR_OP_isnan, gpu_op1(g, IR_OP_log, x, NULL), NULL), 1e-12, label);
		g = ir_graph_new();
		x = gpu_in(g, "x", ts[ti], GPU_SHAPE(37, 129));
		snprintf(label, sizeof label, "isinf %s", ir_dtype_name(ts[ti]));
		ir_ref inv = gpu_op2(g, IR_OP_div, scalar(g, ts[ti], 1), gpu_op1(g, IR_OP_floor, x, NULL));
		gpu_run(g, gpu_op1(g, IR_OP_isinf, inv, NULL), 1e-12, label);
		for (int fm = 0; fm < 2; fm++) {
			g = ir_graph_new();
			ir_attrs at;
			ir_attrs_init(IR_OP_mod, &at);
			at.fmod = fm;
			ir_ref v[2] = {gpu_op2(g, IR_OP_mul, gpu_in(g, "a", ts[ti], GPU_SHAPE(37, 129)), scalar(g, ts[ti], 7)),
				       gpu_in(g, "b", ts[ti], GPU_SHAPE(129))};
			snprintf(label, sizeof label, "mod%s %s", fm ? " fmod" : "", ir_dtype_name(ts[ti]));
			gpu_run(g, ir_add(g, IR_OP_mod, v, 2, &at, &gpu_err), gpu_tol(ts[ti]) * 4, label);
		}
	}
	const ir_dtype is[] = {IR_I64, IR_I32, IR_I8};
	for (size_t ti = 0; ti < SN_COUNT(is); ti++)
		for (int fm = 0; fm < 2; fm++) {
			ir_graph *g = ir_graph_new();
			ir_attrs at;
			ir_attrs_init(IR_OP_mod, &at);
			at.fmod = fm;
			/* a in [-8, 8), b in {-3, -2, 1, 2}: no zero divisor */
			ir_ref a = gpu_op2(g, IR_OP_sub, gpu_op2(g, IR_OP_mul, gpu_in(g, "a", is[ti], GPU_SHAPE(33, 65)), scalar(g, is[ti], 4)),
				       scalar(g, is[ti], 8));
			ir_ref b = gpu_op2(g, IR_OP_sub, gpu_in(g, "b", is[ti], GPU_SHAPE(65)), scalar(g, is[ti], 2));
			ir_ref nz = gpu_op2(g, IR_OP_equal, b, scalar(g, is[ti], 0));
			ir_ref w[3] = {nz, scalar(g, is[ti], -3), b};
			ir_ref v[2] = {a, ir_add(g, IR_OP_where, w, 3, NULL, &gpu_err)};
			char label[64];
			snprintf(label, sizeof label, "mod%s %s", fm ? " fmod" : "", ir_dtype_name(is[ti]));
			gpu_run(g, ir_add(g, IR_OP_mod, v, 2, &at, &gpu_err), 1e-12, label);
		}
}

static void unary_int(void)
{
	const ir_dtype ts[] = {IR_I64, IR_I32, IR_I8};
	const ir_op ops[] = {IR_OP_neg, IR_OP_abs, IR_OP_relu, IR_OP_clamp};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++)
		for (size_t i = 0; i < SN_COUNT(ops); i++) {
			ir_graph *g = ir_graph_new();
			/* [0,4) - 2: both signs */
			ir_ref x = gpu_op2(g, IR_OP_sub, gpu_in(g, "x", ts[ti], GPU_SHAPE(33, 65)), scalar(g, ts[ti], 2));
			ir_attrs at;
			ir_attrs_init(ops[i], &at);
			if (ops[i] == IR_OP_clamp)
				at.min = -1.5, at.max = 0.5; /* integer bounds -1 and 0 */
			char label[64];
			snprintf(label, sizeof label, "%s %s", ir_ops[ops[i]].name, ir_dtype_name(ts[ti]));
			gpu_run(g, gpu_op1(g, ops[i], x, &at), 1e-12, label);
		}
}

static const ir_op binary_ops[] = {
	IR_OP_add, IR_OP_sub, IR_OP_mul, IR_OP_div, IR_OP_pow, IR_OP_min, IR_OP_max,
	IR_OP_equal, IR_OP_less, IR_OP_greater,
};

/* Broadcast patterns: same shape (vectorized), row, column, outer
 * product, scalar, leading-1 ranks. */
static const struct {
	ir_shape a, b;
	const char *name;
} pats[] = {
	{{2, {64, 1000}}, {2, {64, 1000}}, "same"},
	{{3, {2, 3, 4}}, {2, {3, 1}}, "[2,3,4]+[3,1]"},
	{{3, {4, 1, 5}}, {3, {1, 6, 1}}, "[4,1,5]+[1,6,1]"},
	{{0, {0}}, {2, {17, 33}}, "scalar+[17,33]"},
	{{4, {1, 1, 8, 7}}, {1, {7}}, "[1,1,8,7]+[7]"},
};

static void binary(void)
{
	const ir_dtype ts[] = {IR_F32, IR_F16, IR_BF16, IR_I64, IR_I32};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++) {
		ir_dtype t = ts[ti];
		bool isf = ir_dtype_is_float(t);
		for (size_t i = 0; i < SN_COUNT(binary_ops); i++)
			for (size_t p = 0; p < SN_COUNT(pats); p++) {
				ir_op op = binary_ops[i];
				if (op == IR_OP_pow && !isf)
					continue;
				ir_graph *g = ir_graph_new();
				ir_ref a = gpu_in(g, "a", t, pats[p].a), b = gpu_in(g, "b", t, pats[p].b);
				if (op == IR_OP_pow)
					a = gpu_op1(g, IR_OP_exp, a, NULL); /* a positive base */
				if (op == IR_OP_div)
					b = isf ? gpu_op1(g, IR_OP_exp, b, NULL) : gpu_op2(g, IR_OP_add, b, scalar(g, t, 1));
				if (!isf) /* numerators and compared values of both signs */
					a = gpu_op2(g, IR_OP_sub, a, scalar(g, t, 2));
				bool cmp = op == IR_OP_equal || op == IR_OP_less || op == IR_OP_greater;
				char label[96];
				snprintf(label, sizeof label, "%s %s %s", ir_ops[op].name, ir_dtype_name(t), pats[p].name);
				gpu_run(g, gpu_op2(g, op, a, b), cmp || !isf ? 1e-12 : gpu_tol(t), label);
			}
	}
	/* equal on bool */
	ir_graph *g = ir_graph_new();
	ir_ref a = gpu_in(g, "a", IR_BOOL, GPU_SHAPE(5, 1)), b = gpu_in(g, "b", IR_BOOL, GPU_SHAPE(9));
	gpu_run(g, gpu_op2(g, IR_OP_equal, a, b), 1e-12, "equal bool [5,1]+[9]");
	/* min/max propagate NaN: log of a negative half */
	g = ir_graph_new();
	a = gpu_op1(g, IR_OP_log, gpu_in(g, "a", IR_F32, GPU_SHAPE(300)), NULL);
	b = gpu_in(g, "b", IR_F32, GPU_SHAPE(300));
	gpu_run(g, gpu_op2(g, IR_OP_max, a, b), 1e-5, "max f32 with NaN");
}

static void where(void)
{
	const ir_dtype ts[] = {IR_F32, IR_F16, IR_BF16, IR_I64, IR_I8, IR_BOOL};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++) {
		ir_graph *g = ir_graph_new();
		ir_ref c = gpu_in(g, "c", IR_BOOL, GPU_SHAPE(2, 1, 4)), x = gpu_in(g, "x", ts[ti], GPU_SHAPE(3, 1));
		ir_ref y = gpu_in(g, "y", ts[ti], GPU_SHAPE(4));
		ir_ref v[3] = {c, x, y};
		char label[64];
		snprintf(label, sizeof label, "where %s broadcast", ir_dtype_name(ts[ti]));
		gpu_run(g, ir_add(g, IR_OP_where, v, 3, NULL, &gpu_err), 1e-12, label);
		g = ir_graph_new();
		c = gpu_in(g, "c", IR_BOOL, GPU_SHAPE(100, 130));
		x = gpu_in(g, "x", ts[ti], GPU_SHAPE(100, 130));
		y = gpu_in(g, "y", ts[ti], GPU_SHAPE(100, 130));
		ir_ref w[3] = {c, x, y};
		snprintf(label, sizeof label, "where %s same", ir_dtype_name(ts[ti]));
		gpu_run(g, ir_add(g, IR_OP_where, w, 3, NULL, &gpu_err), 1e-12, label);
	}
}

static void casts(void)
{
	const ir_dtype all[] = {IR_F32, IR_F16, IR_BF16, IR_F8E4M3, IR_F8E5M2, IR_I64, IR_I32, IR_I8, IR_U8, IR_BOOL};
	for (size_t i = 0; i < SN_COUNT(all); i++)
		for (size_t j = 0; j < SN_COUNT(all); j++) {
			if (i == j)
				continue;
			ir_dtype from = all[i], to = all[j];
			ir_graph *g = ir_graph_new();
			ir_ref x = gpu_in(g, "x", from, GPU_SHAPE(41, 97));
			/* floats: scale to [-300, 300) so integer targets truncate,
			 * i8/u8 saturate and fp8 targets use their range; the f16
			 * scale stays within its range too. Integers: [-2, 2). */
			if (ir_dtype_is_float(from) && from != IR_F8E4M3 && from != IR_F8E5M2)
				x = gpu_op2(g, IR_OP_mul, x, scalar(g, from, 300));
			else if (!ir_dtype_is_float(from) && from != IR_BOOL)
				x = gpu_op2(g, IR_OP_sub, x, scalar(g, from, 2));
			char label[64];
			snprintf(label, sizeof label, "cast %s -> %s", ir_dtype_name(from), ir_dtype_name(to));
			double tol = ir_dtype_is_float(to) ? gpu_tol(to) : 1e-12;
			gpu_run(g, cast(g, x, to), tol, label);
		}
	/* past the fp8 ranges: e4m3fn overflows to NaN, e5m2 to inf, on both sides */
	const ir_dtype f8[] = {IR_F8E4M3, IR_F8E5M2};
	for (size_t i = 0; i < SN_COUNT(f8); i++) {
		ir_graph *g = ir_graph_new();
		ir_ref x = gpu_op2(g, IR_OP_mul, gpu_in(g, "x", IR_F32, GPU_SHAPE(1000)), scalar(g, IR_F32, 1e5));
		char label[64];
		snprintf(label, sizeof label, "cast f32 -> %s overflow", ir_dtype_name(f8[i]));
		gpu_run(g, cast(g, x, f8[i]), gpu_tol(f8[i]), label);
	}
}

static void large(void)
{
	/* 3 x 2^20 elements: more than the 8192 x 256 threads of the grid */
	ir_graph *g = ir_graph_new();
	ir_ref a = gpu_in(g, "a", IR_F32, GPU_SHAPE(3, 1 << 20)), b = gpu_in(g, "b", IR_F32, GPU_SHAPE(1 << 20));
	gpu_run(g, gpu_op2(g, IR_OP_add, a, b), 1e-5, "add f32 [3,2^20]+[2^20]");
	g = ir_graph_new();
	a = gpu_in(g, "a", IR_F16, GPU_SHAPE(3 << 20));
	gpu_run(g, gpu_op1(g, IR_OP_silu, a, NULL), gpu_tol(IR_F16), "silu f16 [3*2^20]");
	/* chains: a value read by several kernels, odd sizes */
	g = ir_graph_new();
	a = gpu_in(g, "a", IR_BF16, GPU_SHAPE(7, 11, 13));
	b = gpu_in(g, "b", IR_BF16, GPU_SHAPE(11, 1));
	ir_ref c = gpu_op2(g, IR_OP_mul, a, b), d = gpu_op1(g, IR_OP_tanh, c, NULL);
	gpu_run(g, gpu_op2(g, IR_OP_sub, d, c), gpu_tol(IR_BF16), "tanh(a*b)-a*b bf16");
}

int main(void)
{
	if (!gpu_available())
		return gpu_done();
	unary_float();
	tests_and_mod();
	unary_int();
	binary();
	where();
	casts();
	large();
	return gpu_done();
}
