/* test_ref_ops.c: the reference interpreter's elementwise, reduction and
 * data-movement ops, dtypes and errors, against values worked out by hand
 * (the arithmetic is in the comments) or closed forms. The neural-network
 * ops (norms, matmul, conv, pools, attention) are in test_ref_nn.c. */
#include "test_ref_util.h"
#include <math.h>
#include <time.h>

static const double TOL = 1e-6; /* f32 results: a few ulps */

/* One f32 input of 6 values through a unary op. */
static void unary_case(ir_op op, const ir_attrs *a, const float *x, const double *want, const char *what)
{
	tg t;
	tg_init(&t);
	ir_ref r = top(&t, op, a, 1, tin(&t, "x", IR_F32, SHAPE(6), x));
	if (trun(&t, r))
		EXPECT(&t, want, 6, TOL, what);
	tg_free(&t);
}

static void test_unary(void)
{
	const float x[6] = {-4, -1, -0.5f, 0.5f, 1, 4};
	ir_attrs a;
	/* closed forms, evaluated here with libm on the same inputs */
	double w[6];
	for (int i = 0; i < 6; i++)
		w[i] = -x[i];
	unary_case(IR_OP_neg, NULL, x, w, "neg");
	unary_case(IR_OP_abs, NULL, x, (double[]){4, 1, 0.5, 0.5, 1, 4}, "abs");
	unary_case(IR_OP_relu, NULL, x, (double[]){0, 0, 0, 0.5, 1, 4}, "relu");
	/* exp(1) = e, exp(-1) = 1/e, exp(4) = 54.598150033144236 */
	unary_case(IR_OP_exp, NULL, x,
		   (double[]){0.018315638888734179, 0.36787944117144233, 0.60653065971263342,
			      1.6487212707001282, 2.718281828459045, 54.598150033144236}, "exp");
	const float pos[6] = {0.25f, 1, 2, 4, 16, 100};
	/* log 2 = 0.6931..., log 4 = 2 log 2, log 16 = 4 log 2 */
	unary_case(IR_OP_log, NULL, pos,
		   (double[]){-1.3862943611198906, 0, 0.69314718055994531, 1.3862943611198906,
			      2.7725887222397811, 4.6051701859880914}, "log");
	unary_case(IR_OP_sqrt, NULL, pos, (double[]){0.5, 1, 1.4142135623730951, 2, 4, 10}, "sqrt");
	unary_case(IR_OP_rsqrt, NULL, pos, (double[]){2, 1, 0.70710678118654752, 0.5, 0.25, 0.1}, "rsqrt");
	/* tanh(0.5) = 0.46211715726000974, tanh(1) = 0.76159415595576489 */
	unary_case(IR_OP_tanh, NULL, x,
		   (double[]){-0.99932929973906704, -0.76159415595576489, -0.46211715726000974,
			      0.46211715726000974, 0.76159415595576489, 0.99932929973906704}, "tanh");
	/* sigmoid(x) = 1 / (1 + e^-x) */
	for (int i = 0; i < 6; i++)
		w[i] = 1 / (1 + exp(-(double)x[i]));
	unary_case(IR_OP_sigmoid, NULL, x, w, "sigmoid");
	/* erf(0.5) = 0.52049987781304654, erf(1) = 0.84270079294971487 */
	unary_case(IR_OP_erf, NULL, x,
		   (double[]){-0.99999998458274209, -0.84270079294971487, -0.52049987781304654,
			      0.52049987781304654, 0.84270079294971487, 0.99999998458274209}, "erf");
	/* gelu(x) = x * Phi(x): Phi(1) = 0.84134474606854293, Phi(0.5) = 0.69146246127401310 */
	unary_case(IR_OP_gelu, NULL, x,
		   (double[]){-4 * 3.1671241833119857e-05, -1 * 0.15865525393145707, -0.5 * 0.30853753872598690,
			      0.5 * 0.69146246127401310, 0.84134474606854293, 4 * 0.99996832875816688}, "gelu none");
	ir_attrs_init(IR_OP_gelu, &a);
	a.approximate = IR_GELU_TANH;
	for (int i = 0; i < 6; i++) {
		double v = x[i];
		w[i] = 0.5 * v * (1 + tanh(0.79788456080286536 * (v + 0.044715 * v * v * v)));
	}
	unary_case(IR_OP_gelu, &a, x, w, "gelu tanh");
	/* silu(1) = 1 * sigmoid(1) = 0.73105857863000488 */
	for (int i = 0; i < 6; i++)
		w[i] = x[i] / (1 + exp(-(double)x[i]));
	CHECK_NEAR(w[4], 0.73105857863000488, 1e-15);
	unary_case(IR_OP_silu, NULL, x, w, "silu");
	/* hardswish: x * relu6(x+3) / 6: -4 -> 0, -1 -> -1*2/6, -0.5 -> -0.5*2.5/6,
	 * 0.5 -> 0.5*3.5/6, 1 -> 4/6, 4 -> 4*6/6 = 4 */
	unary_case(IR_OP_hardswish, NULL, x, (double[]){0, -2.0 / 6, -1.25 / 6, 1.75 / 6, 4.0 / 6, 4}, "hardswish");
	/* hardsigmoid: relu6(x+3) / 6 (PyTorch, not ONNX's 0.2x+0.5) */
	unary_case(IR_OP_hardsigmoid, NULL, x, (double[]){0, 2.0 / 6, 2.5 / 6, 3.5 / 6, 4.0 / 6, 1}, "hardsigmoid");
	ir_attrs_init(IR_OP_clamp, &a);
	a.min = -0.75;
	a.max = 2;
	unary_case(IR_OP_clamp, &a, x, (double[]){-0.75, -0.75, -0.5, 0.5, 1, 2}, "clamp");
	const float withnan[6] = {NAN, -1, 0, 1, 3, -3};
	unary_case(IR_OP_clamp, &a, withnan, (double[]){NAN, -0.75, 0, 1, 2, -0.75}, "clamp NaN");
	unary_case(IR_OP_relu, NULL, withnan, (double[]){NAN, 0, 0, 1, 3, 0}, "relu NaN");
}

static void test_binary(void)
{
	/* a [2,3] op b [3] (broadcast over rows) */
	const float a[6] = {1, 2, 3, -4, 5, -6}, b[3] = {2, -4, 0.5f};
	static const struct {
		ir_op op;
		double want[6];
	} cases[] = {
		{IR_OP_add, {3, -2, 3.5, -2, 1, -5.5}},
		{IR_OP_sub, {-1, 6, 2.5, -6, 9, -6.5}},
		{IR_OP_mul, {2, -8, 1.5, -8, -20, -3}},
		{IR_OP_div, {0.5, -0.5, 6, -2, -1.25, -12}},
		{IR_OP_min, {1, -4, 0.5, -4, -4, -6}},
		{IR_OP_max, {2, 2, 3, 2, 5, 0.5}},
		{IR_OP_equal, {0, 0, 0, 0, 0, 0}},
		{IR_OP_less, {1, 0, 0, 1, 0, 1}},
		{IR_OP_greater, {0, 1, 1, 0, 1, 0}},
	};
	for (size_t i = 0; i < SN_COUNT(cases); i++) {
		tg t;
		tg_init(&t);
		ir_ref r = top(&t, cases[i].op, NULL, 2, tin(&t, "a", IR_F32, SHAPE(2, 3), a),
			       tin(&t, "b", IR_F32, SHAPE(3), b));
		if (trun(&t, r)) {
			if (cases[i].op >= IR_OP_equal)
				CHECK(t.out.dtype == IR_BOOL);
			EXPECT(&t, cases[i].want, 6, TOL, ir_ops[cases[i].op].name);
		}
		tg_free(&t);
	}
	/* pow: [2,3] ** [2,1]: 2^3 = 8, 9^0.5 = 3, 4^-1 = 0.25; 2^2, 9^2, 4^2 */
	tg t;
	tg_init(&t);
	const float pa[6] = {2, 9, 4, 2, 9, 4}, pb[2] = {3, 2}, pc[3] = {3, 0.5f, -1};
	ir_ref x = tin(&t, "a", IR_F32, SHAPE(2, 3), pa);
	ir_ref y1 = tin(&t, "b", IR_F32, SHAPE(2, 1), pb), y2 = tin(&t, "c", IR_F32, SHAPE(3), pc);
	ir_ref r = top(&t, IR_OP_pow, NULL, 2, top(&t, IR_OP_pow, NULL, 2, x, y1), y2);
	/* (2^3)^3 = 512, (9^3)^0.5 = 27, (4^3)^-1 = 1/64; (2^2)^3 = 64, (81)^0.5 = 9, 16^-1 */
	if (trun(&t, r))
		EXPECT(&t, ((double[]){512, 27, 1.0 / 64, 64, 9, 1.0 / 16}), 6, TOL, "pow");
	tg_free(&t);
	/* equal on equal values, and NaN in min/max */
	tg_init(&t);
	const float ea[3] = {1, NAN, 3}, eb[3] = {1, 2, 4};
	x = tin(&t, "a", IR_F32, SHAPE(3), ea);
	ir_ref z = tin(&t, "b", IR_F32, SHAPE(3), eb);
	r = top(&t, IR_OP_max, NULL, 2, x, z);
	if (trun(&t, r))
		EXPECT(&t, ((double[]){1, NAN, 4}), 3, 0, "max NaN");
	tg_free(&t);
	tg_init(&t);
	x = tin(&t, "a", IR_F32, SHAPE(3), ea);
	z = tin(&t, "b", IR_F32, SHAPE(3), eb);
	if (trun(&t, top(&t, IR_OP_equal, NULL, 2, x, z)))
		EXPECT(&t, ((double[]){1, 0, 0}), 3, 0, "equal");
	tg_free(&t);
}

static void test_where(void)
{
	/* where(c [2,1], x [1,3], y []) -> [2,3]: row 0 takes x, row 1 takes y */
	tg t;
	tg_init(&t);
	const uint8_t c[2] = {1, 0};
	const float x[3] = {1.5f, -2, 3}, y[1] = {7};
	ir_ref r = top(&t, IR_OP_where, NULL, 3, tin(&t, "c", IR_BOOL, SHAPE(2, 1), c),
		       tin(&t, "x", IR_F32, SHAPE(1, 3), x), tin(&t, "y", IR_F32, SCALAR, y));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){1.5, -2, 3, 7, 7, 7}), 6, 0, "where broadcast");
	tg_free(&t);
}

static void test_dtypes(void)
{
	/* 1/3 = 1.0101010|1010...b x 2^-2; bf16 keeps 7 bits after the point and
	 * the rest (0.1010...b ulp) is above half an ulp, so it rounds up to
	 * 1.0101011b x 2^-2 = 171/512 = 0.333984375. */
	uint16_t one = ir_bf16_from_double(1), three = ir_bf16_from_double(3);
	tg t;
	tg_init(&t);
	ir_ref r = top(&t, IR_OP_div, NULL, 2, tin(&t, "a", IR_BF16, SHAPE(1), &one),
		       tin(&t, "b", IR_BF16, SHAPE(1), &three));
	if (trun(&t, r)) {
		CHECK(t.out.dtype == IR_BF16);
		EXPECT(&t, ((double[]){0.333984375}), 1, 0, "bf16 1/3");
	}
	tg_free(&t);
	/* 1/3 in f16: 11 significant bits: 1.0101010101|0101...b x 2^-2, the
	 * rest is below half an ulp: 1365/4096 = 0.333251953125 */
	uint16_t h1 = ir_f16_from_double(1), h3 = ir_f16_from_double(3);
	tg_init(&t);
	r = top(&t, IR_OP_div, NULL, 2, tin(&t, "a", IR_F16, SHAPE(1), &h1), tin(&t, "b", IR_F16, SHAPE(1), &h3));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){0.333251953125}), 1, 0, "f16 1/3");
	tg_free(&t);
	/* bf16 addition rounds the exact sum once, to nearest even:
	 * 1 + 2^-8 is the tie between 1 and 1 + 2^-7 and goes to the even 1;
	 * 1 + (2^-8 + 2^-15) is above the tie and goes up to 1.0078125. */
	uint16_t bb[2] = {ir_bf16_from_double(0x1p-8), ir_bf16_from_double(0x1p-8 + 0x1p-15)};
	uint16_t ones[2] = {one, one};
	CHECK(ir_bf16_to_double(bb[1]) == 0x1p-8 + 0x1p-15); /* representable */
	tg_init(&t);
	r = top(&t, IR_OP_add, NULL, 2, tin(&t, "a", IR_BF16, SHAPE(2), ones), tin(&t, "b", IR_BF16, SHAPE(2), bb));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){1, 1.0078125}), 2, 0, "bf16 add rounds to nearest even");
	tg_free(&t);
	ir_attrs ca;
	ir_attrs_init(IR_OP_cast, &ca);
	/* casts: f32 -> i32 truncates toward zero; i64 -> i8 saturates;
	 * f32 -> bool is x != 0 */
	const float cf[4] = {-2.7f, 2.7f, 0, 300.5f};
	tg_init(&t);
	ca.dtype = IR_I32;
	r = top(&t, IR_OP_cast, &ca, 1, tin(&t, "x", IR_F32, SHAPE(4), cf));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){-2, 2, 0, 300}), 4, 0, "cast f32 to i32");
	tg_free(&t);
	const int64_t ci[4] = {300, -300, 5, -5};
	tg_init(&t);
	ca.dtype = IR_I8;
	r = top(&t, IR_OP_cast, &ca, 1, tin(&t, "x", IR_I64, SHAPE(4), ci));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){127, -128, 5, -5}), 4, 0, "cast i64 to i8 saturates");
	tg_free(&t);
	tg_init(&t);
	ca.dtype = IR_BOOL;
	r = top(&t, IR_OP_cast, &ca, 1, tin(&t, "x", IR_F32, SHAPE(4), cf));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){1, 1, 0, 1}), 4, 0, "cast f32 to bool");
	tg_free(&t);
}

static uint32_t conv_f16_from(double x) { return ir_f16_from_double(x); }
static double conv_f16_to(uint32_t b) { return ir_f16_to_double((uint16_t)b); }
static uint32_t conv_bf16_from(double x) { return ir_bf16_from_double(x); }
static double conv_bf16_to(uint32_t b) { return ir_bf16_to_double((uint16_t)b); }
static uint32_t conv_e4m3_from(double x) { return ir_f8e4m3_from_double(x); }
static double conv_e4m3_to(uint32_t b) { return ir_f8e4m3_to_double((uint8_t)b); }
static uint32_t conv_e5m2_from(double x) { return ir_f8e5m2_from_double(x); }
static double conv_e5m2_to(uint32_t b) { return ir_f8e5m2_to_double((uint8_t)b); }

/* Every conversion to a small float format rounds to the nearest of the
 * two neighbouring values (ties to the even encoding), checked against
 * the neighbours' own values on fresh random doubles spread over each
 * format's range, and every encoding converts to double and back to
 * itself. The oracle is the ordering of the encodings, not the code. */
static void test_conversions(void)
{
	static const struct {
		const char *name;
		int bits, mbits, maxexp;
		uint32_t (*from)(double);
		double (*to)(uint32_t);
	} f[] = {
		{"f16", 16, 10, 16, conv_f16_from, conv_f16_to},
		{"bf16", 16, 7, 128, conv_bf16_from, conv_bf16_to},
		{"e4m3", 8, 3, 9, conv_e4m3_from, conv_e4m3_to},
		{"e5m2", 8, 2, 16, conv_e5m2_from, conv_e5m2_to},
	};
	uint64_t seed = 0x9e3779b97f4a7c15u ^ (uint64_t)time(NULL);
	for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
		uint32_t sign = 1u << (f[k].bits - 1);
		int bad = 0;
		for (uint32_t b = 0; b < (1u << f[k].bits); b++) {
			double v = f[k].to(b);
			if (!isnan(v) && f[k].from(v) != b)
				bad++;
			/* the midpoint of b and the next encoding of the same sign
			 * (exact in double) is a tie: it goes to the even one */
			if ((b & ~sign) + 1 < sign) {
				double w = f[k].to(b + 1);
				if (!isnan(v) && !isnan(w) && !isinf(w) && f[k].from((v + w) / 2) != (b & 1 ? b + 1 : b))
					bad++;
			}
		}
		for (int i = 0; i < 200000; i++) {
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			/* a mantissa of 53 random bits, an exponent over the range
			 * and below it (subnormals, underflow), either sign */
			double x = ldexp((double)(seed >> 11) * 0x1p-53, (int)(seed % 64) - 48 + f[k].maxexp / 2);
			if (i % 3 == 0)
				x = ldexp(x, -f[k].maxexp);
			if (seed & 1u << 7)
				x = -x;
			uint32_t r = f[k].from(x), mag = r & ~sign;
			double v = fabs(f[k].to(r)), a = fabs(x);
			if (isinf(v) || isnan(v) || (signbit(x) != 0) != ((r & sign) != 0))
				continue; /* overflow: the formats' own rule, tested apart */
			double up = fabs(f[k].to((r & sign) | (mag + 1)));
			double dn = mag ? fabs(f[k].to((r & sign) | (mag - 1))) : -1;
			double d = fabs(a - v);
			bool ok = (isnan(up) || isinf(up) || d <= fabs(up - a)) && (dn < 0 || d <= fabs(a - dn));
			bool tie = (!isnan(up) && !isinf(up) && d == fabs(up - a)) || (dn >= 0 && d == fabs(a - dn));
			if (!ok || (tie && d > 0 && (mag & 1)))
				bad++;
		}
		if (bad)
			fprintf(stderr, "%s: %d conversions not to the nearest (seed %llx)\n", f[k].name, bad,
				(unsigned long long)seed);
		CHECK(bad == 0);
	}
}

static void test_integers(void)
{
	/* C division truncates toward zero: 7/2 = 3, -7/2 = -3, 7/-2 = -3, -7/-2 = 3 */
	const int32_t a[4] = {7, -7, 7, -7}, b[4] = {2, 2, -2, -2};
	tg t;
	tg_init(&t);
	ir_ref r = top(&t, IR_OP_div, NULL, 2, tin(&t, "a", IR_I32, SHAPE(4), a), tin(&t, "b", IR_I32, SHAPE(4), b));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){3, -3, -3, 3}), 4, 0, "i32 div truncates");
	tg_free(&t);
	/* int64 stays exact past 2^53: (2^62 + 1) + 1 = 2^62 + 2, which a
	 * double cannot hold (it would give 2^62). */
	const int64_t big[1] = {(INT64_C(1) << 62) + 1}, one[1] = {1};
	tg_init(&t);
	r = top(&t, IR_OP_add, NULL, 2, tin(&t, "a", IR_I64, SHAPE(1), big), tin(&t, "b", IR_I64, SHAPE(1), one));
	if (trun(&t, r))
		CHECK(((int64_t *)t.out.data)[0] == (INT64_C(1) << 62) + 2);
	tg_free(&t);
	/* u8 wraps like PyTorch: 200 + 100 = 300 - 256 = 44; 3 - 5 = 254 */
	const uint8_t ua[2] = {200, 3}, ub[2] = {100, 5};
	tg_init(&t);
	r = top(&t, IR_OP_add, NULL, 2, tin(&t, "a", IR_U8, SHAPE(2), ua), tin(&t, "b", IR_U8, SHAPE(2), ub));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){44, 8}), 2, 0, "u8 add wraps");
	tg_free(&t);
	tg_init(&t);
	r = top(&t, IR_OP_sub, NULL, 2, tin(&t, "a", IR_U8, SHAPE(2), ua), tin(&t, "b", IR_U8, SHAPE(2), ub));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){100, 254}), 2, 0, "u8 sub wraps");
	tg_free(&t);
	/* i32 mul, min, max, neg, abs, relu, clamp, less */
	const int32_t x[4] = {-3, 5, -7, 2}, y[4] = {4, -2, -7, 9};
	static const struct {
		ir_op op;
		double want[4];
	} cases[] = {
		{IR_OP_mul, {-12, -10, 49, 18}}, {IR_OP_min, {-3, -2, -7, 2}}, {IR_OP_max, {4, 5, -7, 9}},
		{IR_OP_less, {1, 0, 0, 1}}, {IR_OP_equal, {0, 0, 1, 0}}, {IR_OP_sub, {-7, 7, 0, -7}},
	};
	for (size_t i = 0; i < SN_COUNT(cases); i++) {
		tg_init(&t);
		r = top(&t, cases[i].op, NULL, 2, tin(&t, "a", IR_I32, SHAPE(4), x), tin(&t, "b", IR_I32, SHAPE(4), y));
		if (trun(&t, r))
			EXPECT(&t, cases[i].want, 4, 0, ir_ops[cases[i].op].name);
		tg_free(&t);
	}
	ir_attrs ca;
	ir_attrs_init(IR_OP_clamp, &ca);
	ca.min = -2.5; /* rounds inward to -2 */
	ca.max = 3;
	tg_init(&t);
	r = top(&t, IR_OP_clamp, &ca, 1,
		top(&t, IR_OP_abs, NULL, 1, top(&t, IR_OP_neg, NULL, 1, tin(&t, "x", IR_I32, SHAPE(4), x))));
	/* neg: 3 -5 7 -2; abs: 3 5 7 2; clamp [-2, 3]: 3 3 3 2 */
	if (trun(&t, r))
		EXPECT(&t, ((double[]){3, 3, 3, 2}), 4, 0, "i32 neg abs clamp");
	tg_free(&t);
	tg_init(&t);
	r = top(&t, IR_OP_clamp, &ca, 1, top(&t, IR_OP_relu, NULL, 1, tin(&t, "x", IR_I32, SHAPE(4), x)));
	/* relu: 0 5 0 2; clamp: 0 3 0 2 */
	if (trun(&t, r))
		EXPECT(&t, ((double[]){0, 3, 0, 2}), 4, 0, "i32 relu clamp");
	tg_free(&t);
	/* integer division by zero is an input error, not a crash */
	const int32_t z[4] = {1, 0, 1, 1};
	tg_init(&t);
	r = top(&t, IR_OP_div, NULL, 2, tin(&t, "a", IR_I32, SHAPE(4), x), tin(&t, "b", IR_I32, SHAPE(4), z));
	ir_add_output(t.g, r);
	CHECK(ref_run(t.g, t.vals, &t.out, &t.e) == SN_EINPUT);
	CHECK_STR(t.e.msg, "div: integer division by zero");
	tg_free(&t);
}

static void test_sources(void)
{
	/* iota i64 [2,3] along axis 1: 0 1 2 0 1 2; along axis 0: 0 0 0 1 1 1.
	 * Their sum with a const [3] {10,20,30} and a param [2,3]. */
	tg t;
	tg_init(&t);
	ir_shape s23 = SHAPE(2, 3), s3 = SHAPE(3), s4 = SHAPE(4), s2 = SHAPE(2);
	ir_ref i1 = report(&t, ir_add_iota(t.g, IR_I64, &s23, 1, &t.e), "iota");
	ir_ref i0 = report(&t, ir_add_iota(t.g, IR_I64, &s23, 0, &t.e), "iota");
	const int64_t cv[3] = {10, 20, 30}, pv[6] = {100, 200, 300, 400, 500, 600};
	ir_ref c = report(&t, ir_add_const(t.g, IR_I64, &s3, cv, &t.e), "const");
	ir_ref p = tparam(&t, "p", IR_I64, SHAPE(2, 3), pv);
	ir_ref s = top(&t, IR_OP_add, NULL, 2, top(&t, IR_OP_add, NULL, 2, i1, top(&t, IR_OP_mul, NULL, 2, i0, c)), p);
	/* i1 + i0*c + p: row 0: 0+0+100, 1+0+200, 2+0+300; row 1: 0+10+400, 1+20+500, 2+30+600 */
	if (trun(&t, s))
		EXPECT(&t, ((double[]){100, 201, 302, 410, 521, 632}), 6, 0, "iota const param");
	tg_free(&t);
	/* f32 iota, and a const returned directly (the output is a copy) */
	tg_init(&t);
	ir_ref f = report(&t, ir_add_iota(t.g, IR_F32, &s4, 0, &t.e), "iota");
	if (trun(&t, f))
		EXPECT(&t, ((double[]){0, 1, 2, 3}), 4, 0, "iota f32");
	tg_free(&t);
	tg_init(&t);
	const float k[2] = {2.5f, -1};
	c = report(&t, ir_add_const(t.g, IR_F32, &s2, k, &t.e), "const");
	if (trun(&t, c)) {
		EXPECT(&t, ((double[]){2.5, -1}), 2, 0, "const output");
		CHECK(t.out.data != t.g->nodes[c].data);
	}
	tg_free(&t);
}

static void test_reduce(void)
{
	/* x = [[1, 5, 3], [4, 2, 6]] */
	const float x[6] = {1, 5, 3, 4, 2, 6};
	static const struct {
		ir_op op;
		ir_ints axes;
		bool keep;
		int n;
		double want[3];
	} cases[] = {
		{IR_OP_reduce_sum, {1, {1}}, false, 2, {9, 12}},              /* 1+5+3, 4+2+6 */
		{IR_OP_reduce_mean, {1, {0}}, true, 3, {2.5, 3.5, 4.5}},     /* (1+4)/2, ... */
		{IR_OP_reduce_max, {0, {0}}, false, 1, {6}},                 /* all axes */
		{IR_OP_reduce_min, {1, {-1}}, false, 2, {1, 2}},
		{IR_OP_reduce_sum, {2, {0, 1}}, true, 1, {21}},
	};
	for (size_t i = 0; i < SN_COUNT(cases); i++) {
		tg t;
		tg_init(&t);
		ir_attrs a;
		ir_attrs_init(cases[i].op, &a);
		a.axes = cases[i].axes;
		a.keepdims = cases[i].keep;
		ir_ref r = top(&t, cases[i].op, &a, 1, tin(&t, "x", IR_F32, SHAPE(2, 3), x));
		if (trun(&t, r)) {
			EXPECT(&t, cases[i].want, cases[i].n, TOL, ir_ops[cases[i].op].name);
			CHECK(t.out.shape.rank == (cases[i].keep ? 2 : 2 - (cases[i].axes.n ? cases[i].axes.n : 2)));
		}
		tg_free(&t);
	}
	/* NaN propagates through max; i64 sums are exact: 2^60 + 3 + 2^60 */
	const float xn[3] = {1, NAN, 3};
	tg t;
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_reduce_max, NULL, 1, tin(&t, "x", IR_F32, SHAPE(3), xn))))
		EXPECT(&t, ((double[]){NAN}), 1, 0, "reduce_max NaN");
	tg_free(&t);
	const int64_t xi[3] = {INT64_C(1) << 60, 3, INT64_C(1) << 60};
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_reduce_sum, NULL, 1, tin(&t, "x", IR_I64, SHAPE(3), xi))))
		CHECK(((int64_t *)t.out.data)[0] == (INT64_C(1) << 61) + 3);
	tg_free(&t);
	/* a 3-d reduction over the middle axis: x[i][j][k] = 100i + 10j + k,
	 * sum over j of 3 rows = 300i + 30 + 3k */
	float x3[2 * 3 * 2];
	for (int i = 0; i < 12; i++)
		x3[i] = (float)(100 * (i / 6) + 10 * (i / 2 % 3) + i % 2);
	ir_attrs a;
	ir_attrs_init(IR_OP_reduce_sum, &a);
	a.axes = INTS(1);
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_reduce_sum, &a, 1, tin(&t, "x", IR_F32, SHAPE(2, 3, 2), x3))))
		EXPECT(&t, ((double[]){30, 33, 330, 333}), 4, TOL, "reduce_sum middle axis");
	tg_free(&t);
}

static void test_softmax(void)
{
	/* rows [1,2,3] and [1,1,1]: e^k / (e + e^2 + e^3) and 1/3 each;
	 * log_softmax = x - 3 - log(1 + e^-1 + e^-2) = x - 3.40760596444438 */
	const float x[6] = {1, 2, 3, 1, 1, 1};
	double sm[6] = {0.090030573170380462, 0.24472847105479767, 0.66524095577481771, 1.0 / 3, 1.0 / 3, 1.0 / 3};
	double lsm[6] = {-2.4076059644443806, -1.4076059644443806, -0.40760596444438057, -1.0986122886681098,
			 -1.0986122886681098, -1.0986122886681098};
	tg t;
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_softmax, NULL, 1, tin(&t, "x", IR_F32, SHAPE(2, 3), x))))
		EXPECT(&t, sm, 6, TOL, "softmax rows");
	tg_free(&t);
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_log_softmax, NULL, 1, tin(&t, "x", IR_F32, SHAPE(2, 3), x))))
		EXPECT(&t, lsm, 6, TOL, "log_softmax rows");
	tg_free(&t);
	/* axis 0 of the same matrix: columns (1,1) -> 1/2 1/2; (2,1) and (3,1):
	 * 1/(1+e^-1) = 0.7310585786300049, 1/(1+e^-2) = 0.8807970779778823 */
	ir_attrs a;
	ir_attrs_init(IR_OP_softmax, &a);
	a.axis = 0;
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_softmax, &a, 1, tin(&t, "x", IR_F32, SHAPE(2, 3), x))))
		EXPECT(&t, ((double[]){0.5, 0.7310585786300049, 0.8807970779778823, 0.5, 0.2689414213699951,
				       0.11920292202211755}), 6, TOL, "softmax axis 0");
	tg_free(&t);
	/* a large row does not overflow: softmax([1000, 1000]) = [0.5, 0.5] */
	const float big[2] = {1000, 1000};
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_softmax, NULL, 1, tin(&t, "x", IR_F32, SHAPE(2), big))))
		EXPECT(&t, ((double[]){0.5, 0.5}), 2, 0, "softmax large");
	tg_free(&t);
}

static void test_moves(void)
{
	const float x[6] = {0, 1, 2, 3, 4, 5}; /* [[0,1,2],[3,4,5]] */
	ir_attrs a;
	tg t;
	/* transpose [2,3] -> [3,2]: [[0,3],[1,4],[2,5]] */
	ir_attrs_init(IR_OP_transpose, &a);
	a.perm = INTS(1, 0);
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_transpose, &a, 1, tin(&t, "x", IR_F32, SHAPE(2, 3), x))))
		EXPECT(&t, ((double[]){0, 3, 1, 4, 2, 5}), 6, 0, "transpose");
	tg_free(&t);
	/* 3-d: x [1,2,3] with x[0][j][k] = 3j + k; perm [2,0,1] gives [3,1,2] with
	 * out[k][0][j] = 3j + k: k=0: 0 3; k=1: 1 4; k=2: 2 5 */
	a.perm = INTS(2, 0, 1);
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_transpose, &a, 1, tin(&t, "x", IR_F32, SHAPE(1, 2, 3), x))))
		EXPECT(&t, ((double[]){0, 3, 1, 4, 2, 5}), 6, 0, "transpose 3d");
	tg_free(&t);
	/* reshape, flatten, squeeze, unsqueeze keep the bytes */
	ir_attrs_init(IR_OP_reshape, &a);
	a.shape = INTS(3, IR_DIM_INFER);
	tg_init(&t);
	ir_ref r = top(&t, IR_OP_reshape, &a, 1, tin(&t, "x", IR_F32, SHAPE(2, 3), x));
	ir_attrs u;
	ir_attrs_init(IR_OP_unsqueeze, &u);
	u.axes = INTS(0, 3);
	r = top(&t, IR_OP_unsqueeze, &u, 1, r); /* [1,3,2,1] */
	r = top(&t, IR_OP_flatten, NULL, 1, r); /* [1,6] */
	r = top(&t, IR_OP_squeeze, NULL, 1, r); /* [6] */
	if (trun(&t, r)) {
		CHECK(t.out.shape.rank == 1 && t.out.shape.d[0] == 6);
		EXPECT(&t, ((double[]){0, 1, 2, 3, 4, 5}), 6, 0, "reshape chain");
	}
	tg_free(&t);
	/* expand [3,1] -> [2,3,2]: each of 3 rows repeated twice, the whole twice */
	const float col[3] = {7, 8, 9};
	ir_attrs_init(IR_OP_expand, &a);
	a.shape = INTS(2, 3, 2);
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_expand, &a, 1, tin(&t, "x", IR_F32, SHAPE(3, 1), col))))
		EXPECT(&t, ((double[]){7, 7, 8, 8, 9, 9, 7, 7, 8, 8, 9, 9}), 12, 0, "expand");
	tg_free(&t);
	/* concat axis 1: [2,3] ++ [2,1] -> [[0,1,2,7],[3,4,5,8]] */
	ir_attrs_init(IR_OP_concat, &a);
	a.axis = -1;
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_concat, &a, 2, tin(&t, "x", IR_F32, SHAPE(2, 3), x),
			 tin(&t, "y", IR_F32, SHAPE(2, 1), col))))
		EXPECT(&t, ((double[]){0, 1, 2, 7, 3, 4, 5, 8}), 8, 0, "concat");
	tg_free(&t);
	/* split axis 1 sizes [1,2] piece 1: [[1,2],[4,5]] */
	ir_attrs_init(IR_OP_split, &a);
	a.axis = 1;
	a.sizes = INTS(1, 2);
	a.index = 1;
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_split, &a, 1, tin(&t, "x", IR_F32, SHAPE(2, 3), x))))
		EXPECT(&t, ((double[]){1, 2, 4, 5}), 4, 0, "split");
	tg_free(&t);
}

static void test_slice(void)
{
	const float x[5] = {10, 11, 12, 13, 14};
	static const struct {
		int64_t start, end, step;
		int n;
		double want[5];
	} cases[] = {
		{1, 4, 1, 3, {11, 12, 13}},
		{-1, -6, -1, 5, {14, 13, 12, 11, 10}},          /* end -6 < -5 clamps to -1: all */
		{4, 0, -2, 2, {14, 12}},                          /* 4, 2 (0 excluded) */
		{INT64_MAX, INT64_MIN, -3, 2, {14, 11}},          /* start clamps to 4: 4, 1 */
		{-3, 100, 2, 2, {12, 14}},                        /* start 2, end clamps to 5 */
		{3, 1, 1, 0, {0}},                                /* empty */
	};
	for (size_t i = 0; i < SN_COUNT(cases); i++) {
		ir_attrs a;
		ir_attrs_init(IR_OP_slice, &a);
		a.starts = INTS(cases[i].start);
		a.ends = INTS(cases[i].end);
		a.steps = INTS(cases[i].step);
		tg t;
		tg_init(&t);
		if (trun(&t, top(&t, IR_OP_slice, &a, 1, tin(&t, "x", IR_F32, SHAPE(5), x))))
			EXPECT(&t, cases[i].want, cases[i].n, 0, "slice 1-d");
		tg_free(&t);
	}
	/* 2-d on x [3,3] = 0..8: axis 1 reversed (start -1 = 2, end INT64_MIN
	 * = before 0, step -1), axis 0 rows 1..2: [5,4,3,8,7,6] */
	float m[9];
	for (int i = 0; i < 9; i++)
		m[i] = (float)i;
	ir_attrs a;
	ir_attrs_init(IR_OP_slice, &a);
	a.axes = INTS(1, 0);
	a.starts = INTS(-1, 1);
	a.ends = INTS(INT64_MIN, 3);
	a.steps = INTS(-1, 1);
	tg t;
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_slice, &a, 1, tin(&t, "x", IR_F32, SHAPE(3, 3), m))))
		EXPECT(&t, ((double[]){5, 4, 3, 8, 7, 6}), 6, 0, "slice 2-d negative step");
	tg_free(&t);
}

static void test_gather(void)
{
	/* table [4,2] rows r: (10r, 10r+1); indices [-1, 0, 2] -> rows 3, 0, 2 */
	const float tab[8] = {0, 1, 10, 11, 20, 21, 30, 31};
	const int64_t idx[3] = {-1, 0, 2};
	tg t;
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_gather, NULL, 2, tin(&t, "t", IR_F32, SHAPE(4, 2), tab),
			 tin(&t, "i", IR_I64, SHAPE(3), idx))))
		EXPECT(&t, ((double[]){30, 31, 0, 1, 20, 21}), 6, 0, "gather rows");
	tg_free(&t);
	/* axis 1 with i32 indices [[1],[0]]: out [4,2,1]: x[r][1], x[r][0] */
	const int32_t i2[2] = {1, 0};
	ir_attrs a;
	ir_attrs_init(IR_OP_gather, &a);
	a.axis = 1;
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_gather, &a, 2, tin(&t, "t", IR_F32, SHAPE(4, 2), tab),
			 tin(&t, "i", IR_I32, SHAPE(2, 1), i2))))
		EXPECT(&t, ((double[]){1, 0, 11, 10, 21, 20, 31, 30}), 8, 0, "gather axis 1");
	tg_free(&t);
	/* an index past the table is an input error with the range */
	float *emb = calloc(50257, sizeof *emb);
	const int64_t bad[2] = {5, 70000};
	tg_init(&t);
	ir_ref r = top(&t, IR_OP_gather, NULL, 2, tin(&t, "wte", IR_F32, SHAPE(50257, 1), emb),
		       tin(&t, "ids", IR_I64, SHAPE(2), bad));
	ir_add_output(t.g, r);
	CHECK(ref_run(t.g, t.vals, &t.out, &t.e) == SN_EINPUT);
	CHECK_STR(t.e.msg, "gather: index 70000 out of range [-50257, 50257)");
	CHECK(t.out.data == NULL);
	tg_free(&t);
	free(emb);
}

static void test_pad(void)
{
	const float x[3] = {1, 2, 3};
	static const struct {
		ir_padmode mode;
		double want[7];
	} cases[] = {
		{IR_PAD_CONSTANT, {9, 9, 1, 2, 3, 9, 9}},
		{IR_PAD_REFLECT, {3, 2, 1, 2, 3, 2, 1}}, /* mirror without repeating the edge */
		{IR_PAD_EDGE, {1, 1, 1, 2, 3, 3, 3}},
	};
	for (size_t i = 0; i < SN_COUNT(cases); i++) {
		ir_attrs a;
		ir_attrs_init(IR_OP_pad, &a);
		a.pad = INTS(2, 2);
		a.mode = cases[i].mode;
		a.value = 9;
		tg t;
		tg_init(&t);
		if (trun(&t, top(&t, IR_OP_pad, &a, 1, tin(&t, "x", IR_F32, SHAPE(3), x))))
			EXPECT(&t, cases[i].want, 7, 0, ir_padmode_name(cases[i].mode));
		tg_free(&t);
	}
	/* 2-d reflect on [2,3] = [[1,2,3],[4,5,6]] with pad begins [1,0] ends [0,2]:
	 * rows: reflect(-1) = 1 -> row 1 first; columns 0,1,2 then 1,0 */
	const float m[6] = {1, 2, 3, 4, 5, 6};
	ir_attrs a;
	ir_attrs_init(IR_OP_pad, &a);
	a.pad = INTS(1, 0, 0, 2);
	a.mode = IR_PAD_REFLECT;
	tg t;
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_pad, &a, 1, tin(&t, "x", IR_F32, SHAPE(2, 3), m))))
		EXPECT(&t, ((double[]){4, 5, 6, 5, 4, 1, 2, 3, 2, 1, 4, 5, 6, 5, 4}), 15, 0, "pad reflect 2-d");
	tg_free(&t);
}

static void test_errors(void)
{
	/* a graph with a symbol is refused */
	tg t;
	tg_init(&t);
	int n = ir_sym(t.g, "N", 1);
	ir_ref r = top(&t, IR_OP_relu, NULL, 1, tin(&t, "x", IR_F32, SHAPE(IR_SYM(n), 3), NULL));
	ir_add_output(t.g, r);
	CHECK(ref_run(t.g, t.vals, &t.out, &t.e) == SN_EINPUT);
	CHECK_STR(t.e.msg, "ref: input %x has symbolic type f32[N,3]; bind its symbols first");
	tg_free(&t);
	/* an input with the wrong shape or without data */
	const float x[4] = {1, 2, 3, 4};
	tg_init(&t);
	r = top(&t, IR_OP_relu, NULL, 1, tin(&t, "x", IR_F32, SHAPE(4), x));
	ir_add_output(t.g, r);
	t.vals[0].shape = SHAPE(2, 2);
	CHECK(ref_run(t.g, t.vals, &t.out, &t.e) == SN_EINPUT);
	CHECK_STR(t.e.msg, "ref: input %x should be f32[4], got f32[2,2]");
	t.e.code = SN_OK;
	t.vals[0].shape = SHAPE(4);
	t.vals[0].data = NULL;
	CHECK(ref_run(t.g, t.vals, &t.out, &t.e) == SN_EINPUT);
	CHECK_STR(t.e.msg, "ref: input %x has no data");
	tg_free(&t);
	/* the same value returned twice gives two owned copies; ref_eval_node
	 * refuses inputs */
	tg_init(&t);
	r = top(&t, IR_OP_neg, NULL, 1, tin(&t, "x", IR_F32, SHAPE(4), x));
	ir_add_output(t.g, r);
	ir_add_output(t.g, r);
	ir_tensor outs[2];
	CHECK(ref_run(t.g, t.vals, outs, &t.e) == SN_OK);
	if (t.e.code == SN_OK) {
		CHECK(outs[0].data != outs[1].data);
		CHECK(((float *)outs[1].data)[3] == -4);
		free(outs[0].data);
		free(outs[1].data);
	}
	/* ref_eval_node on one node (as constant folding uses it): neg of
	 * [2, -0.5, 3, 1] is [-2, 0.5, -3, -1]; a wrong operand type is refused */
	const float y[4] = {2, -0.5f, 3, 1};
	ir_tensor op = {IR_F32, SHAPE(4), (void *)y, sizeof y}, one;
	CHECK(ref_eval_node(t.g, &t.g->nodes[r], &op, &one, &t.e) == SN_OK);
	if (t.e.code == SN_OK) {
		CHECK(one.nbytes == 16 && one.shape.rank == 1 && one.shape.d[0] == 4);
		const float *v = one.data;
		CHECK(v[0] == -2 && v[1] == 0.5f && v[2] == -3 && v[3] == -1);
		free(one.data);
	}
	op.shape = SHAPE(2, 2);
	CHECK(ref_eval_node(t.g, &t.g->nodes[r], &op, &one, &t.e) == SN_EINPUT);
	CHECK_STR(t.e.msg, "ref: neg: operand 0 should be f32[4], got f32[2,2]");
	CHECK(one.data == NULL);
	t.e.code = SN_OK;
	CHECK(ref_eval_node(t.g, &t.g->nodes[0], NULL, &one, &t.e) == SN_EINPUT);
	CHECK_STR(t.e.msg, "ref: input %x has no value to evaluate");
	tg_free(&t);
}

/* Rounding, sin and cos, the activations with closed forms (softplus,
 * mish, elu, leaky_relu) and the float tests. */
static void test_unary_math(void)
{
	const float x[6] = {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.7f};
	unary_case(IR_OP_floor, NULL, x, (double[]){-3, -2, -1, 0, 1, 2}, "floor");
	unary_case(IR_OP_ceil, NULL, x, (double[]){-2, -1, -0.0, 1, 2, 3}, "ceil");
	/* ties to even: -2.5 -> -2, -1.5 -> -2, -0.5 -> -0, 0.5 -> 0, 1.5 -> 2 */
	unary_case(IR_OP_round, NULL, x, (double[]){-2, -2, 0, 0, 2, 3}, "round");
	const float ang[6] = {0, (float)(M_PI / 6), (float)(M_PI / 2), (float)M_PI, -(float)(M_PI / 3), 1};
	/* sin 30deg = 0.5, sin 90deg = 1, sin -60deg = -sqrt(3)/2; the floats
	 * are rounded angles, so a few ulps off */
	unary_case(IR_OP_sin, NULL, ang, (double[]){0, 0.5, 1, 0, -0.86602540378443865, 0.8414709848078965}, "sin");
	unary_case(IR_OP_cos, NULL, ang, (double[]){1, 0.86602540378443865, 0, -1, 0.5, 0.54030230586813972}, "cos");
	/* softplus(x) = log(1 + e^x): softplus(0) = log 2, softplus(-x) = softplus(x) - x */
	const float sp[6] = {0, 1, -1, 30, -30, 800};
	unary_case(IR_OP_softplus, NULL, sp,
		   (double[]){0.69314718055994531, 1.3132616875182228, 0.31326168751822286, 30.000000000000092,
			      9.3576229688401746e-14, 800},
		   "softplus");
	/* mish(x) = x tanh(softplus(x)): mish(1) = tanh(1.3132616875) = 0.8650983882673103 */
	unary_case(IR_OP_mish, NULL, sp,
		   (double[]){0, 0.86509838826731034, -0.30340146137410895, 30, -2.8072868906520524e-12, 800}, "mish");
	ir_attrs a;
	ir_attrs_init(IR_OP_elu, &a);
	CHECK(a.alpha == 1);
	a.alpha = 2;
	/* elu: x > 0 ? x : 2 (e^x - 1); e^-1 - 1 = -0.63212055882855767 */
	unary_case(IR_OP_elu, &a, sp, (double[]){0, 1, 2 * -0.63212055882855767, 30, -2 * (1 - 9.3576229688e-14), 800},
		   "elu");
	ir_attrs_init(IR_OP_leaky_relu, &a);
	CHECK(a.alpha == 0.01);
	unary_case(IR_OP_leaky_relu, &a, sp, (double[]){0, 1, -0.01, 30, -0.3, 800}, "leaky_relu");
	const float odd[6] = {NAN, INFINITY, -INFINITY, 0, -1, 3.4e38f};
	unary_case(IR_OP_isnan, NULL, odd, (double[]){1, 0, 0, 0, 0, 0}, "isnan");
	unary_case(IR_OP_isinf, NULL, odd, (double[]){0, 1, 1, 0, 0, 0}, "isinf");
}

static void test_mod(void)
{
	tg t;
	/* Python's % (the divisor's sign): 7 % -3 = -2, -7 % 3 = 2, -7 % -3 = -1, 7 % 3 = 1;
	 * fmod (the dividend's): 7 fmod -3 = 1, -7 fmod 3 = -1 */
	const float a[4] = {7, -7, -7, 7}, b[4] = {-3, 3, -3, 3};
	const int32_t ai[4] = {7, -7, -7, 7}, bi[4] = {-3, 3, -3, 3};
	for (int fm = 0; fm < 2; fm++)
		for (int isint = 0; isint < 2; isint++) {
			tg_init(&t);
			ir_attrs at;
			ir_attrs_init(IR_OP_mod, &at);
			at.fmod = fm;
			ir_dtype dt = isint ? IR_I32 : IR_F32;
			ir_ref r = top(&t, IR_OP_mod, &at, 2, tin(&t, "a", dt, SHAPE(4), isint ? (const void *)ai : a),
				       tin(&t, "b", dt, SHAPE(4), isint ? (const void *)bi : b));
			if (trun(&t, r))
				EXPECT(&t, (fm ? (double[]){1, -1, -1, 1} : (double[]){-2, 2, -1, 1}), 4, 0,
				       fm ? "mod fmod" : "mod");
			tg_free(&t);
		}
	/* float remainder with fractions: 5.5 % 2 = 1.5, -5.5 % 2 = 0.5 */
	tg_init(&t);
	const float c[2] = {5.5f, -5.5f}, d[1] = {2};
	if (trun(&t, top(&t, IR_OP_mod, NULL, 2, tin(&t, "c", IR_F32, SHAPE(2), c), tin(&t, "d", IR_F32, SHAPE(1), d))))
		EXPECT(&t, ((double[]){1.5, 0.5}), 2, 0, "mod fractions");
	tg_free(&t);
	/* integer division by zero is an error */
	tg_init(&t);
	const int32_t z[1] = {0};
	ir_ref r = top(&t, IR_OP_mod, NULL, 2, tin(&t, "a", IR_I32, SHAPE(4), ai), tin(&t, "z", IR_I32, SHAPE(1), z));
	ir_add_output(t.g, r);
	CHECK(ref_run(t.g, t.vals, &t.out, &t.e) == SN_EINPUT && strstr(t.e.msg, "division by zero"));
	tg_free(&t);
}

int main(void)
{
	test_unary();
	test_unary_math();
	test_mod();
	test_binary();
	test_where();
	test_dtypes();
	test_conversions();
	test_integers();
	test_sources();
	test_reduce();
	test_softmax();
	test_moves();
	test_slice();
	test_gather();
	test_pad();
	test_errors();
	return check_done("ref_ops");
}
