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

static sn_err err;
static int build_failures; /* graphs the builder refused (a bug of this test) */

static ir_shape shp(int rank, const int64_t *d)
{
	ir_shape s = {rank, {0}};
	for (int i = 0; i < rank; i++)
		s.d[i] = d[i];
	return s;
}
#define SHAPE(...) shp((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

static ir_ref in(ir_graph *g, const char *name, ir_dtype t, ir_shape s)
{
	return ir_add_input(g, name, t, &s, &err);
}

static ir_ref op1(ir_graph *g, ir_op op, ir_ref a, const ir_attrs *at)
{
	return ir_add(g, op, &a, 1, at, &err);
}

static ir_ref op2(ir_graph *g, ir_op op, ir_ref a, ir_ref b)
{
	ir_ref v[2] = {a, b};
	return ir_add(g, op, v, 2, NULL, &err);
}

/* A scalar constant of dtype t. */
static ir_ref scalar(ir_graph *g, ir_dtype t, double v)
{
	uint64_t bits = 0;
	ir_store(t, &bits, 0, v);
	ir_shape s = {0, {0}};
	return ir_add_const(g, t, &s, &bits, &err);
}

static ir_ref cast(ir_graph *g, ir_ref a, ir_dtype t)
{
	ir_attrs at;
	ir_attrs_init(IR_OP_cast, &at);
	at.dtype = t;
	return op1(g, IR_OP_cast, a, &at);
}

/* Hands g to gpu_compare with output r, or reports a builder failure. */
static void run(ir_graph *g, ir_ref r, double tol, const char *label)
{
	if (r == IR_NONE || err.code) {
		printf("%-48s FAIL: builder: %s\n", label, err.msg);
		err = (sn_err){0};
		ir_graph_free(g);
		build_failures++;
		return;
	}
	ir_add_output(g, r);
	gpu_compare(g, tol, label);
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
	const ir_shape shapes[] = {SHAPE(64, 1000), SHAPE(37, 129)};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++)
		for (size_t si = 0; si < SN_COUNT(shapes); si++)
			for (size_t i = 0; i <= SN_COUNT(unary_ops); i++) {
				ir_op op = i < SN_COUNT(unary_ops) ? unary_ops[i] : IR_OP_gelu;
				ir_graph *g = ir_graph_new();
				ir_ref x = in(g, "x", ts[ti], shapes[si]);
				/* hardswish/hardsigmoid bend at -3 and 3: widen the range */
				if (op == IR_OP_hardswish || op == IR_OP_hardsigmoid || op == IR_OP_floor ||
				    op == IR_OP_ceil || op == IR_OP_round || op == IR_OP_sin || op == IR_OP_cos)
					x = op2(g, IR_OP_mul, x, scalar(g, ts[ti], 5));
				if (op == IR_OP_log || op == IR_OP_sqrt || op == IR_OP_rsqrt)
					x = op1(g, IR_OP_exp, x, NULL); /* positive */
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
				run(g, op1(g, op, x, &at), gpu_tol(ts[ti]), label);
			}
}

/* isnan of log(x) (NaN below 0), isinf of 1 / floor(x) (inf on [0, 1)),
 * mod in both sign conventions, float and integer. */
static void tests_and_mod(void)
{
	const ir_dtype ts[] = {IR_F32, IR_F16, IR_BF16};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++) {
		ir_graph *g = ir_graph_new();
		ir_ref x = in(g, "x", ts[ti], SHAPE(37, 129));
		char label[64];
		snprintf(label, sizeof label, "isnan %s", ir_dtype_name(ts[ti]));
		run(g, op1(g, IR_OP_isnan, op1(g, IR_OP_log, x, NULL), NULL), 1e-12, label);
		g = ir_graph_new();
		x = in(g, "x", ts[ti], SHAPE(37, 129));
		snprintf(label, sizeof label, "isinf %s", ir_dtype_name(ts[ti]));
		ir_ref inv = op2(g, IR_OP_div, scalar(g, ts[ti], 1), op1(g, IR_OP_floor, x, NULL));
		run(g, op1(g, IR_OP_isinf, inv, NULL), 1e-12, label);
		for (int fm = 0; fm < 2; fm++) {
			g = ir_graph_new();
			ir_attrs at;
			ir_attrs_init(IR_OP_mod, &at);
			at.fmod = fm;
			ir_ref v[2] = {op2(g, IR_OP_mul, in(g, "a", ts[ti], SHAPE(37, 129)), scalar(g, ts[ti], 7)),
				       in(g, "b", ts[ti], SHAPE(129))};
			snprintf(label, sizeof label, "mod%s %s", fm ? " fmod" : "", ir_dtype_name(ts[ti]));
			run(g, ir_add(g, IR_OP_mod, v, 2, &at, &err), gpu_tol(ts[ti]) * 4, label);
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
			ir_ref a = op2(g, IR_OP_sub, op2(g, IR_OP_mul, in(g, "a", is[ti], SHAPE(33, 65)), scalar(g, is[ti], 4)),
				       scalar(g, is[ti], 8));
			ir_ref b = op2(g, IR_OP_sub, in(g, "b", is[ti], SHAPE(65)), scalar(g, is[ti], 2));
			ir_ref nz = op2(g, IR_OP_equal, b, scalar(g, is[ti], 0));
			ir_ref w[3] = {nz, scalar(g, is[ti], -3), b};
			ir_ref v[2] = {a, ir_add(g, IR_OP_where, w, 3, NULL, &err)};
			char label[64];
			snprintf(label, sizeof label, "mod%s %s", fm ? " fmod" : "", ir_dtype_name(is[ti]));
			run(g, ir_add(g, IR_OP_mod, v, 2, &at, &err), 1e-12, label);
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
			ir_ref x = op2(g, IR_OP_sub, in(g, "x", ts[ti], SHAPE(33, 65)), scalar(g, ts[ti], 2));
			ir_attrs at;
			ir_attrs_init(ops[i], &at);
			if (ops[i] == IR_OP_clamp)
				at.min = -1.5, at.max = 0.5; /* integer bounds -1 and 0 */
			char label[64];
			snprintf(label, sizeof label, "%s %s", ir_ops[ops[i]].name, ir_dtype_name(ts[ti]));
			run(g, op1(g, ops[i], x, &at), 1e-12, label);
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
				ir_ref a = in(g, "a", t, pats[p].a), b = in(g, "b", t, pats[p].b);
				if (op == IR_OP_pow)
					a = op1(g, IR_OP_exp, a, NULL); /* a positive base */
				if (op == IR_OP_div)
					b = isf ? op1(g, IR_OP_exp, b, NULL) : op2(g, IR_OP_add, b, scalar(g, t, 1));
				if (!isf) /* numerators and compared values of both signs */
					a = op2(g, IR_OP_sub, a, scalar(g, t, 2));
				bool cmp = op == IR_OP_equal || op == IR_OP_less || op == IR_OP_greater;
				char label[96];
				snprintf(label, sizeof label, "%s %s %s", ir_ops[op].name, ir_dtype_name(t), pats[p].name);
				run(g, op2(g, op, a, b), cmp || !isf ? 1e-12 : gpu_tol(t), label);
			}
	}
	/* equal on bool */
	ir_graph *g = ir_graph_new();
	ir_ref a = in(g, "a", IR_BOOL, SHAPE(5, 1)), b = in(g, "b", IR_BOOL, SHAPE(9));
	run(g, op2(g, IR_OP_equal, a, b), 1e-12, "equal bool [5,1]+[9]");
	/* min/max propagate NaN: log of a negative half */
	g = ir_graph_new();
	a = op1(g, IR_OP_log, in(g, "a", IR_F32, SHAPE(300)), NULL);
	b = in(g, "b", IR_F32, SHAPE(300));
	run(g, op2(g, IR_OP_max, a, b), 1e-5, "max f32 with NaN");
}

static void where(void)
{
	const ir_dtype ts[] = {IR_F32, IR_F16, IR_BF16, IR_I64, IR_I8, IR_BOOL};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++) {
		ir_graph *g = ir_graph_new();
		ir_ref c = in(g, "c", IR_BOOL, SHAPE(2, 1, 4)), x = in(g, "x", ts[ti], SHAPE(3, 1));
		ir_ref y = in(g, "y", ts[ti], SHAPE(4));
		ir_ref v[3] = {c, x, y};
		char label[64];
		snprintf(label, sizeof label, "where %s broadcast", ir_dtype_name(ts[ti]));
		run(g, ir_add(g, IR_OP_where, v, 3, NULL, &err), 1e-12, label);
		g = ir_graph_new();
		c = in(g, "c", IR_BOOL, SHAPE(100, 130));
		x = in(g, "x", ts[ti], SHAPE(100, 130));
		y = in(g, "y", ts[ti], SHAPE(100, 130));
		ir_ref w[3] = {c, x, y};
		snprintf(label, sizeof label, "where %s same", ir_dtype_name(ts[ti]));
		run(g, ir_add(g, IR_OP_where, w, 3, NULL, &err), 1e-12, label);
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
			ir_ref x = in(g, "x", from, SHAPE(41, 97));
			/* floats: scale to [-300, 300) so integer targets truncate,
			 * i8/u8 saturate and fp8 targets use their range; the f16
			 * scale stays within its range too. Integers: [-2, 2). */
			if (ir_dtype_is_float(from) && from != IR_F8E4M3 && from != IR_F8E5M2)
				x = op2(g, IR_OP_mul, x, scalar(g, from, 300));
			else if (!ir_dtype_is_float(from) && from != IR_BOOL)
				x = op2(g, IR_OP_sub, x, scalar(g, from, 2));
			char label[64];
			snprintf(label, sizeof label, "cast %s -> %s", ir_dtype_name(from), ir_dtype_name(to));
			double tol = ir_dtype_is_float(to) ? gpu_tol(to) : 1e-12;
			run(g, cast(g, x, to), tol, label);
		}
	/* past the fp8 ranges: e4m3fn overflows to NaN, e5m2 to inf, on both sides */
	const ir_dtype f8[] = {IR_F8E4M3, IR_F8E5M2};
	for (size_t i = 0; i < SN_COUNT(f8); i++) {
		ir_graph *g = ir_graph_new();
		ir_ref x = op2(g, IR_OP_mul, in(g, "x", IR_F32, SHAPE(1000)), scalar(g, IR_F32, 1e5));
		char label[64];
		snprintf(label, sizeof label, "cast f32 -> %s overflow", ir_dtype_name(f8[i]));
		run(g, cast(g, x, f8[i]), gpu_tol(f8[i]), label);
	}
}

static void large(void)
{
	/* 3 x 2^20 elements: more than the 8192 x 256 threads of the grid */
	ir_graph *g = ir_graph_new();
	ir_ref a = in(g, "a", IR_F32, SHAPE(3, 1 << 20)), b = in(g, "b", IR_F32, SHAPE(1 << 20));
	run(g, op2(g, IR_OP_add, a, b), 1e-5, "add f32 [3,2^20]+[2^20]");
	g = ir_graph_new();
	a = in(g, "a", IR_F16, SHAPE(3 << 20));
	run(g, op1(g, IR_OP_silu, a, NULL), gpu_tol(IR_F16), "silu f16 [3*2^20]");
	/* chains: a value read by several kernels, odd sizes */
	g = ir_graph_new();
	a = in(g, "a", IR_BF16, SHAPE(7, 11, 13));
	b = in(g, "b", IR_BF16, SHAPE(11, 1));
	ir_ref c = op2(g, IR_OP_mul, a, b), d = op1(g, IR_OP_tanh, c, NULL);
	run(g, op2(g, IR_OP_sub, d, c), gpu_tol(IR_BF16), "tanh(a*b)-a*b bf16");
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
	int rc = gpu_done();
	return rc ? rc : build_failures ? 1 : 0;
}
