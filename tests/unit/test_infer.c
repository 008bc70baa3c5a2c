/* test_infer.c: shape and dtype inference. Every expected type below was
 * worked out by hand from the op's PyTorch/ONNX definition (the arithmetic
 * is in the comments); every error case checks the exact message. */
#include "ir/ir.h"
#include "check.h"

#include <stdarg.h>
#include <stdint.h>

static ir_graph *g;
static sn_err err;
static int64_t N, M, H; /* symbols */
static unsigned nameseq;

static void begin(void)
{
	ir_graph_free(g);
	g = ir_graph_new();
	N = IR_SYM(ir_sym(g, "N", 1));
	M = IR_SYM(ir_sym(g, "M", 1));
	H = IR_SYM(ir_sym(g, "H", 1));
	err = (sn_err){0};
}

static ir_shape shp(int rank, const int64_t *d)
{
	ir_shape s = {0};
	s.rank = rank;
	for (int i = 0; i < rank; i++)
		s.d[i] = d[i];
	return s;
}
#define SH(...) shp((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
static const ir_shape SCALAR = {0};

static ir_ints ints_of(int n, const int64_t *v)
{
	ir_ints r = {0};
	r.n = n;
	for (int i = 0; i < n; i++)
		r.v[i] = v[i];
	return r;
}
#define INTS(...) ints_of((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
static const ir_ints NOINTS = {0};

static ir_attrs A(ir_op op)
{
	ir_attrs a;
	ir_attrs_init(op, &a);
	return a;
}

/* An input of type t[s]; inputs are expected to be valid here. */
static ir_ref X(ir_dtype t, ir_shape s)
{
	char name[16];
	snprintf(name, sizeof name, "x%u", nameseq++);
	sn_err e = {0};
	ir_ref r = ir_add_input(g, name, t, &s, &e);
	if (r == IR_NONE)
		fprintf(stderr, "test setup: %s\n", e.msg);
	CHECK(r != IR_NONE);
	return r;
}

/* op(operands...) with attributes a (NULL: defaults) */
static ir_ref op_(ir_op op, const ir_attrs *a, int nin, ...)
{
	ir_ref in[8];
	va_list ap;
	va_start(ap, nin);
	for (int i = 0; i < nin; i++)
		in[i] = va_arg(ap, unsigned);
	va_end(ap);
	return ir_add(g, op, in, (uint32_t)nin, a, &err);
}
#define NARGS(...) ((int)(sizeof((ir_ref[]){__VA_ARGS__}) / sizeof(ir_ref)))
#define OP(op, a, ...) op_(IR_OP_##op, a, NARGS(__VA_ARGS__), __VA_ARGS__)

/* The type as text, written independently of the library's printers. */
static const char *type_of(ir_ref r)
{
	static char buf[4200];
	if (r == IR_NONE) {
		snprintf(buf, sizeof buf, "error: %s", err.msg);
		return buf;
	}
	const ir_node *n = &g->nodes[r];
	int k = snprintf(buf, sizeof buf, "%s[", ir_dtype_name(n->dtype));
	for (int i = 0; i < n->shape.rank; i++) {
		int64_t d = n->shape.d[i];
		if (d >= 0)
			k += snprintf(buf + k, sizeof buf - k, "%s%lld", i ? "," : "", (long long)d);
		else
			k += snprintf(buf + k, sizeof buf - k, "%s%s", i ? "," : "", g->syms[IR_SYM_ID(d)]);
	}
	snprintf(buf + k, sizeof buf - k, "]");
	return buf;
}

#define OK(expr, want) ok_at((expr), (want), __LINE__)
static ir_ref ok_at(ir_ref r, const char *want, int line)
{
	check_count++;
	const char *got = type_of(r);
	if (strcmp(got, want) != 0) {
		fprintf(stderr, "%s:%d: got \"%s\", want \"%s\"\n", __FILE__, line, got, want);
		check_failures++;
	}
	err = (sn_err){0};
	return r;
}

#define BAD(expr, want) bad_at((expr), (want), __LINE__)
static void bad_at(ir_ref r, const char *want, int line)
{
	check_count++;
	if (r != IR_NONE || err.code != SN_EINPUT || strcmp(err.msg, want) != 0) {
		fprintf(stderr, "%s:%d: got %s (code %d, \"%s\"), want the error \"%s\"\n", __FILE__, line,
			r == IR_NONE ? "no node" : type_of(r), err.code, err.msg, want);
		check_failures++;
	}
	err = (sn_err){0};
}

static void test_sources(void)
{
	begin();
	OK(X(IR_BF16, SH(N, 3, 224, 224)), "bf16[N,3,224,224]");
	OK(X(IR_BOOL, SCALAR), "bool[]");
	ir_shape s = SH(2, IR_SYM(7));
	BAD(ir_add_input(g, "y", IR_F32, &s, &err), "input: dim 1 names symbol 7, which the graph does not have");
	s = SH(2, IR_DIM_INFER);
	BAD(ir_add_param(g, "w", IR_F32, &s, &err), "param: dim 1 is -1, not a size or a symbol");
	s = SH(2);
	BAD(ir_add_input(g, "y", (ir_dtype)42, &s, &err), "input: invalid dtype 42");
	/* 4 bytes * 2^31 * 2^31 * 2^2 = 2^66 bytes: too many */
	s = SH(INT64_C(1) << 31, INT64_C(1) << 31, 4);
	BAD(ir_add_param(g, "w", IR_F32, &s, &err), "param: f32[2147483648,2147483648,4] has too many elements");
	s = SH(4, 5);
	OK(ir_add_iota(g, IR_I64, &s, -1, &err), "i64[4,5]");
	BAD(ir_add_iota(g, IR_I64, &s, 2, &err), "iota: axis 2 is out of range for i64[4,5]");
	BAD(ir_add_iota(g, IR_BOOL, &s, 0, &err), "iota: expects a numeric dtype, got bool[4,5]");
}

static void test_elementwise(void)
{
	begin();
	ir_ref x = X(IR_F32, SH(N, 1, 3)), y = X(IR_F32, SH(4, 1)), b = X(IR_BOOL, SH(2, 3));
	ir_ref i = X(IR_I32, SH(4)), h = X(IR_F16, SH(4, 1));
	OK(OP(relu, NULL, x), "f32[N,1,3]");
	OK(OP(neg, NULL, i), "i32[4]");
	BAD(OP(neg, NULL, b), "neg: expects a numeric operand, got bool[2,3]");
	BAD(OP(exp, NULL, i), "exp: expects a float operand, got i32[4]");
	ir_attrs a = A(IR_OP_cast);
	a.dtype = IR_I8;
	OK(OP(cast, &a, x), "i8[N,1,3]");
	a.dtype = IR_BF16;
	OK(OP(cast, &a, b), "bf16[2,3]");
	/* [N,1,3] with [4,1]: right-aligned -> [N,1,3] vs [1,4,1] -> [N,4,3] */
	OK(OP(add, NULL, x, y), "f32[N,4,3]");
	OK(OP(mul, NULL, y, x), "f32[N,4,3]");
	/* a symbol broadcasts with itself and with 1 */
	ir_ref p = X(IR_F32, SH(1, 3)), q = X(IR_F32, SH(N, 1));
	OK(OP(sub, NULL, p, q), "f32[N,3]");
	OK(OP(div, NULL, q, q), "f32[N,1]");
	ir_ref r23 = X(IR_F32, SH(2, 3)), r4 = X(IR_F32, SH(4)), n3 = X(IR_F32, SH(N, 3)), m3 = X(IR_F32, SH(M, 3));
	BAD(OP(add, NULL, r23, r4), "add: shapes f32[2,3] and f32[4] do not broadcast");
	BAD(OP(max, NULL, n3, r23), "max: shapes f32[N,3] and f32[2,3] do not broadcast");
	BAD(OP(min, NULL, n3, m3), "min: shapes f32[N,3] and f32[M,3] do not broadcast");
	BAD(OP(add, NULL, y, h), "add: operands f32[4,1] and f16[4,1] have different dtypes (no implicit promotion)");
	BAD(OP(add, NULL, b, b), "add: expects a numeric operand, got bool[2,3]");
	BAD(OP(pow, NULL, i, i), "pow: expects a float operand, got i32[4]");
	OK(OP(pow, NULL, h, h), "f16[4,1]");
	OK(OP(less, NULL, i, i), "bool[4]");
	OK(OP(equal, NULL, x, y), "bool[N,4,3]");
	/* where: [2,1] x [3] x [1,1] -> [2,3] */
	ir_ref c = X(IR_BOOL, SH(2, 1)), v = X(IR_F16, SH(3)), w = X(IR_F16, SH(1, 1));
	OK(OP(where, NULL, c, v, w), "f16[2,3]");
	BAD(OP(where, NULL, i, v, w), "where: condition i32[4] must be bool");
	BAD(OP(where, NULL, c, v, y), "where: operands f16[3] and f32[4,1] have different dtypes (no implicit promotion)");
	ir_ref c4 = X(IR_BOOL, SH(4, 1)), y21 = X(IR_F16, SH(2, 1));
	BAD(OP(where, NULL, c4, v, y21),
	    "where: shapes bool[4,1], f16[3] and f16[2,1] do not broadcast");
}

static void test_reduce_norm(void)
{
	begin();
	ir_ref x = X(IR_F32, SH(2, 3, 4)), b = X(IR_BOOL, SH(2));
	ir_attrs a = A(IR_OP_reduce_sum);
	a.axes = INTS(-1);
	a.keepdims = true;
	OK(OP(reduce_sum, &a, x), "f32[2,3,1]");
	a.axes = INTS(0, 2);
	a.keepdims = false;
	OK(OP(reduce_mean, &a, x), "f32[3]");
	a.axes = NOINTS;
	OK(OP(reduce_max, &a, x), "f32[]");
	a.keepdims = true;
	OK(OP(reduce_min, &a, x), "f32[1,1,1]");
	a.axes = INTS(3);
	BAD(OP(reduce_sum, &a, x), "reduce_sum: axis 3 is out of range for f32[2,3,4]");
	a.axes = INTS(1, -2);
	BAD(OP(reduce_sum, &a, x), "reduce_sum: axis -2 appears twice in axes [1,-2]");
	a.axes = NOINTS;
	BAD(OP(reduce_sum, &a, b), "reduce_sum: expects a numeric operand, got bool[2]");

	OK(OP(softmax, NULL, x), "f32[2,3,4]");
	ir_attrs s = A(IR_OP_log_softmax);
	s.axis = -4;
	BAD(OP(log_softmax, &s, x), "log_softmax: axis -4 is out of range for f32[2,3,4]");
	ir_ref i = X(IR_I32, SH(5));
	BAD(OP(softmax, NULL, i), "softmax: expects a float operand, got i32[5]");

	ir_ref t = X(IR_BF16, SH(N, 5, 8)), w8 = X(IR_F32, SH(8)), w58 = X(IR_F32, SH(5, 8)), w5 = X(IR_F32, SH(5));
	OK(OP(layer_norm, NULL, t, w8, w8), "bf16[N,5,8]");
	ir_attrs l = A(IR_OP_layer_norm);
	l.axis = 1;
	OK(OP(layer_norm, &l, t, w58, w58), "bf16[N,5,8]");
	OK(OP(rms_norm, &l, t, w58), "bf16[N,5,8]");
	OK(OP(rms_norm, NULL, t), "bf16[N,5,8]");
	BAD(OP(layer_norm, NULL, t, w5), "layer_norm: weight f32[5] must have the shape [8] of x's dims from axis 2");
	BAD(OP(layer_norm, &l, t, w58, w8), "layer_norm: bias f32[8] must have the shape [5,8] of x's dims from axis 1");
	ir_ref i8 = X(IR_I32, SH(8));
	BAD(OP(rms_norm, NULL, t, i8), "rms_norm: expects a float weight, got i32[8]");
	l = A(IR_OP_layer_norm);
	l.eps = 0;
	BAD(OP(layer_norm, &l, t), "layer_norm: eps must be a finite number > 0, got 0");

	ir_ref bx = X(IR_F32, SH(N, 64, 7, 7)), c64 = X(IR_F32, SH(64)), c32 = X(IR_F32, SH(32));
	OK(OP(batch_norm, NULL, bx, c64, c64, c64, c64), "f32[N,64,7,7]");
	BAD(OP(batch_norm, NULL, bx, c64, c64, c32, c64),
	    "batch_norm: mean f32[32] must be [64], the channels of x f32[N,64,7,7] (NCHW)");
	ir_attrs bn = A(IR_OP_batch_norm);
	bn.layout = IR_NHWC;
	ir_ref hx = X(IR_F32, SH(N, 7, 7, 32));
	OK(OP(batch_norm, &bn, hx, c32, c32, c32, c32), "f32[N,7,7,32]");
	ir_ref r1 = X(IR_F32, SH(64));
	BAD(OP(batch_norm, NULL, r1, c64, c64, c64, c64), "batch_norm: x f32[64] must have rank >= 2");
}

static void test_contract(void)
{
	begin();
	ir_ref a23 = X(IR_F32, SH(2, 3)), b34 = X(IR_F32, SH(3, 4)), v3 = X(IR_F32, SH(3));
	OK(OP(matmul, NULL, a23, b34), "f32[2,4]");
	OK(OP(matmul, NULL, v3, v3), "f32[]");        /* dot product */
	OK(OP(matmul, NULL, v3, b34), "f32[4]");      /* [3] -> [1,3], then the 1 is dropped */
	ir_ref a523 = X(IR_F32, SH(5, 2, 3));
	OK(OP(matmul, NULL, a523, v3), "f32[5,2]");   /* [3] -> [3,1], then the 1 is dropped */
	/* batch [N,1] with [7] -> [N,7], then [2,3]@[3,4] */
	ir_ref bn = X(IR_F32, SH(N, 1, 2, 3)), b734 = X(IR_F32, SH(7, 3, 4));
	OK(OP(matmul, NULL, bn, b734), "f32[N,7,2,4]");
	ir_ref b45 = X(IR_F32, SH(4, 5)), b534 = X(IR_F32, SH(5, 3, 4)), a223 = X(IR_F32, SH(2, 2, 3));
	BAD(OP(matmul, NULL, a23, b45), "matmul: contraction dims of f32[2,3] and f32[4,5] differ (3 vs 4)");
	BAD(OP(matmul, NULL, a223, b534), "matmul: batch dims of f32[2,2,3] and f32[5,3,4] do not broadcast");
	ir_ref s = X(IR_F32, SCALAR), hb = X(IR_F16, SH(3, 4));
	BAD(OP(matmul, NULL, s, v3), "matmul: operands f32[] and f32[3] must have rank >= 1");
	BAD(OP(matmul, NULL, a23, hb), "matmul: operands f32[2,3] and f16[3,4] have different dtypes (no implicit promotion)");

	ir_ref x = X(IR_F32, SH(N, 16, 32)), w = X(IR_F32, SH(64, 32)), bias = X(IR_F32, SH(64));
	OK(OP(linear, NULL, x, w, bias), "f32[N,16,64]");
	ir_ref w83 = X(IR_F32, SH(8, 3));
	OK(OP(linear, NULL, v3, w83), "f32[8]");
	BAD(OP(linear, NULL, a23, w), "linear: x f32[2,3] and weight f32[64,32] disagree on in features (3 vs 32)");
	BAD(OP(linear, NULL, x, w, v3), "linear: bias f32[3] must be [64], the out features of weight f32[64,32]");
	BAD(OP(linear, NULL, x, bias), "linear: weight f32[64] must have rank 2 ([out, in])");
	ir_ref wh = X(IR_F16, SH(64, 32));
	BAD(OP(linear, NULL, x, wh), "linear: weight f16[64,32] must have the dtype of x (f32; no implicit promotion)");
}

static void test_conv(void)
{
	begin();
	/* ResNet stem: (224 + 3 + 3 - 1*(7-1) - 1) / 2 + 1 = 223/2 + 1 = 112 */
	ir_ref x = X(IR_F32, SH(N, 3, 224, 224)), w = X(IR_F32, SH(64, 3, 7, 7)), b = X(IR_F32, SH(64));
	ir_attrs a = A(IR_OP_conv2d);
	a.stride = INTS(2, 2);
	a.pad = INTS(3, 3, 3, 3);
	OK(OP(conv2d, &a, x, w, b), "f32[N,64,112,112]");
	/* groups 4, dilation 2, pad [t=1,l=2,b=1,r=2]:
	 * H = (10+1+1 - 2*2 - 1)/1 + 1 = 8, W = (10+2+2 - 4 - 1)/1 + 1 = 10 */
	ir_ref xg = X(IR_F32, SH(1, 8, 10, 10)), wg = X(IR_F32, SH(16, 2, 3, 3));
	a = A(IR_OP_conv2d);
	a.groups = 4;
	a.dilation = INTS(2, 2);
	a.pad = INTS(1, 2, 1, 2);
	OK(OP(conv2d, &a, xg, wg), "f32[1,16,8,10]");
	/* stride [2,3], pad bottom 1 only: H = (10+0+1-2-1)/2+1 = 5, W = (10-2-1)/3+1 = 3 */
	a = A(IR_OP_conv2d);
	a.groups = 4;
	a.stride = INTS(2, 3);
	a.pad = INTS(0, 0, 1, 0);
	OK(OP(conv2d, &a, xg, wg), "f32[1,16,5,3]");
	/* NHWC with OHWI weights: (9-3)/2+1 = 4 */
	ir_ref xh = X(IR_F16, SH(2, 9, 9, 4)), wh = X(IR_F16, SH(8, 3, 3, 4));
	a = A(IR_OP_conv2d);
	a.layout = IR_NHWC;
	a.stride = INTS(2, 2);
	OK(OP(conv2d, &a, xh, wh), "f16[2,4,4,8]");

	ir_ref x6 = X(IR_F32, SH(1, 6, 5, 5)), w6 = X(IR_F32, SH(4, 6, 3, 3));
	a = A(IR_OP_conv2d);
	a.groups = 4;
	BAD(OP(conv2d, &a, x6, w6), "conv2d: channels 6 of x f32[1,6,5,5] are not divisible by groups 4");
	ir_ref w3 = X(IR_F32, SH(4, 3, 3, 3));
	a.groups = 2;
	BAD(OP(conv2d, &a, xg, w3), "conv2d: weight f32[4,3,3,3] has 3 input channels per group, expected 4 (8 / 2 groups)");
	ir_ref w5 = X(IR_F32, SH(5, 4, 3, 3));
	BAD(OP(conv2d, &a, xg, w5), "conv2d: output channels 5 of weight f32[5,4,3,3] are not divisible by groups 2");
	ir_ref xs = X(IR_F32, SH(1, 1, 2, 2)), ws = X(IR_F32, SH(1, 1, 3, 3));
	BAD(OP(conv2d, NULL, xs, ws), "conv2d: input f32[1,1,2,2] is too small for kernel 3x3 (output 0x0)");
	a = A(IR_OP_conv2d);
	a.pad = INTS(1, 0, 0, 0); /* H = (2+1-2-1)+1 = 1, W = (2-2-1) < 0 */
	BAD(OP(conv2d, &a, xs, ws), "conv2d: input f32[1,1,2,2] is too small for kernel 3x3 (output 1x0)");
	ir_ref xsym = X(IR_F32, SH(1, 3, H, 8));
	BAD(OP(conv2d, NULL, xsym, w), "conv2d: x f32[1,3,H,8] must have concrete channel and spatial dims (NCHW)");
	a = A(IR_OP_conv2d);
	a.stride = INTS(0, 1);
	BAD(OP(conv2d, &a, x, w), "conv2d: stride must have 2 entries > 0, got [0,1]");
	a = A(IR_OP_conv2d);
	a.pad = INTS(1, 1);
	BAD(OP(conv2d, &a, x, w), "conv2d: pad must have 4 entries >= 0 ([top, left, bottom, right]), got [1,1]");
	ir_ref wf16 = X(IR_F16, SH(64, 3, 7, 7));
	BAD(OP(conv2d, NULL, x, wf16), "conv2d: weight f16[64,3,7,7] must have the dtype of x (f32; no implicit promotion)");
	BAD(OP(conv2d, NULL, x, w, xg), "conv2d: bias f32[1,8,10,10] must be [64], the output channels of weight f32[64,3,7,7]");
	a = A(IR_OP_conv2d);
	a.dilation = INTS(INT64_MAX / 2, 1);
	BAD(OP(conv2d, &a, x, w), "conv2d: output size of f32[N,3,224,224] overflows");
}

static void test_attention(void)
{
	begin();
	ir_ref q = X(IR_F16, SH(N, 12, 128, 64)), k = X(IR_F16, SH(N, 12, 256, 64)), v = X(IR_F16, SH(N, 12, 256, 32));
	OK(OP(scaled_dot_product_attention, NULL, q, k, v), "f16[N,12,128,32]");
	/* batch [2,4] with [4] and [4] -> [2,4]; scores [2,4,8,10] */
	ir_ref q2 = X(IR_F32, SH(2, 4, 8, 16)), k2 = X(IR_F32, SH(4, 10, 16)), v2 = X(IR_F32, SH(4, 10, 8));
	ir_ref mb = X(IR_BOOL, SH(8, 10)), mf = X(IR_F32, SH(2, 1, 1, 10));
	OK(OP(scaled_dot_product_attention, NULL, q2, k2, v2, mb), "f32[2,4,8,8]");
	OK(OP(scaled_dot_product_attention, NULL, q2, k2, v2, mf), "f32[2,4,8,8]");
	ir_ref m11 = X(IR_BOOL, SH(8, 11)), mi = X(IR_I32, SH(8, 10)), mbig = X(IR_BOOL, SH(3, 2, 4, 8, 10));
	BAD(OP(scaled_dot_product_attention, NULL, q2, k2, v2, m11),
	    "scaled_dot_product_attention: mask bool[8,11] does not broadcast to the scores' shape [2,4,8,10]");
	BAD(OP(scaled_dot_product_attention, NULL, q2, k2, v2, mbig),
	    "scaled_dot_product_attention: mask bool[3,2,4,8,10] does not broadcast to the scores' shape [2,4,8,10]");
	BAD(OP(scaled_dot_product_attention, NULL, q2, k2, v2, mi),
	    "scaled_dot_product_attention: mask i32[8,10] must be bool or the query's dtype f32");
	/* GQA: 6 query heads on 2 key/value heads; 4 does not divide 6, and k and v must agree */
	ir_ref gq = X(IR_BF16, SH(N, 6, 9, 64)), gk = X(IR_BF16, SH(N, 2, 7, 64)), gv = X(IR_BF16, SH(N, 2, 7, 32));
	OK(OP(scaled_dot_product_attention, NULL, gq, gk, gv), "bf16[N,6,9,32]");
	ir_ref gk4 = X(IR_BF16, SH(N, 4, 7, 64)), gv3 = X(IR_BF16, SH(N, 3, 7, 32));
	BAD(OP(scaled_dot_product_attention, NULL, gq, gk4, gk4),
	    "scaled_dot_product_attention: batch dims of query bf16[N,6,9,64], key bf16[N,4,7,64] and value "
	    "bf16[N,4,7,64] do not broadcast");
	BAD(OP(scaled_dot_product_attention, NULL, gq, gk, gv3),
	    "scaled_dot_product_attention: batch dims of query bf16[N,6,9,64], key bf16[N,2,7,64] and value "
	    "bf16[N,3,7,32] do not broadcast");
	ir_attrs a = A(IR_OP_scaled_dot_product_attention);
	a.causal = true;
	OK(OP(scaled_dot_product_attention, &a, q2, k2, v2), "f32[2,4,8,8]");
	BAD(OP(scaled_dot_product_attention, &a, q2, k2, v2, mb),
	    "scaled_dot_product_attention: causal and an explicit mask cannot be combined");
	a = A(IR_OP_scaled_dot_product_attention);
	a.scale = -0.125;
	BAD(OP(scaled_dot_product_attention, &a, q2, k2, v2),
	    "scaled_dot_product_attention: scale must be a finite number >= 0 (0: 1/sqrt(E)), got -0.125");
	BAD(OP(scaled_dot_product_attention, NULL, q2, v2, v2),
	    "scaled_dot_product_attention: query f32[2,4,8,16] and key f32[4,10,8] disagree on the embedding dim (16 vs 8)");
	ir_ref v9 = X(IR_F32, SH(4, 9, 8));
	BAD(OP(scaled_dot_product_attention, NULL, q2, k2, v9),
	    "scaled_dot_product_attention: key f32[4,10,16] and value f32[4,9,8] disagree on the sequence length (10 vs 9)");
	ir_ref k3 = X(IR_F32, SH(3, 10, 16));
	BAD(OP(scaled_dot_product_attention, NULL, q2, k3, v2),
	    "scaled_dot_product_attention: batch dims of query f32[2,4,8,16], key f32[3,10,16] and value f32[4,10,8] do not broadcast");
	ir_ref qi = X(IR_I32, SH(8, 16));
	BAD(OP(scaled_dot_product_attention, NULL, qi, k2, v2),
	    "scaled_dot_product_attention: expects a float query, got i32[8,16]");
}

static void test_pool(void)
{
	begin();
	/* ResNet max pool: (112 + 1 + 1 - 2 - 1)/2 + 1 = 56 */
	ir_ref x = X(IR_F32, SH(N, 64, 112, 112));
	ir_attrs a = A(IR_OP_max_pool2d);
	a.kernel = INTS(3, 3);
	a.stride = INTS(2, 2);
	a.pad = INTS(1, 1, 1, 1);
	OK(OP(max_pool2d, &a, x), "f32[N,64,56,56]");
	/* stride defaults to the kernel: (5-2)/2+1 = 2; ceil: ceil(3/2)+1 = 3
	 * and the last window starts at 4 < 5, so it stays */
	ir_ref x5 = X(IR_F32, SH(1, 1, 5, 5)), x6 = X(IR_F32, SH(1, 1, 6, 6));
	a = A(IR_OP_avg_pool2d);
	a.kernel = INTS(2, 2);
	OK(OP(avg_pool2d, &a, x5), "f32[1,1,2,2]");
	a.ceil_mode = true;
	OK(OP(avg_pool2d, &a, x5), "f32[1,1,3,3]");
	/* k 2, s 2, pad 1, ceil: ceil((5+2-1-1)/2)+1 = 4, but window 3 would
	 * start at 6 >= 5 + 1 (all in the right padding): 3. Floor gives 3. */
	a.pad = INTS(1, 1, 1, 1);
	OK(OP(avg_pool2d, &a, x5), "f32[1,1,3,3]");
	/* k 3, s 2, pad 1 on 6: floor (6+2-2-1)/2+1 = 3; ceil: 4, window 3
	 * starts at 6 < 6 + 1: kept */
	a = A(IR_OP_max_pool2d);
	a.kernel = INTS(3, 3);
	a.stride = INTS(2, 2);
	a.pad = INTS(1, 1, 1, 1);
	OK(OP(max_pool2d, &a, x6), "f32[1,1,3,3]");
	a.ceil_mode = true;
	OK(OP(max_pool2d, &a, x6), "f32[1,1,4,4]");
	/* dilation 2: (10 - 2*2 - 1)/1 + 1 = 6; H 10, W 7 -> W (7-4-1)+1 = 3 */
	ir_ref x10 = X(IR_F32, SH(1, 1, 10, 7));
	a = A(IR_OP_max_pool2d);
	a.kernel = INTS(3, 3);
	a.stride = INTS(1, 1);
	a.dilation = INTS(2, 2);
	OK(OP(max_pool2d, &a, x10), "f32[1,1,6,3]");
	/* dilation 2 allows pad up to ((3-1)*2+1)/2 = 2 */
	a.pad = INTS(2, 2, 2, 2);
	OK(OP(max_pool2d, &a, x10), "f32[1,1,10,7]");
	a.pad = INTS(3, 0, 0, 0);
	BAD(OP(max_pool2d, &a, x10),
	    "max_pool2d: pad [3,0,0,0] must be at most half the effective kernel (kernel [3,3], dilation [2,2])");
	ir_ref xh = X(IR_BF16, SH(2, 8, 8, 3));
	a = A(IR_OP_avg_pool2d);
	a.kernel = INTS(2, 2);
	a.layout = IR_NHWC;
	OK(OP(avg_pool2d, &a, xh), "bf16[2,4,4,3]");
	a = A(IR_OP_max_pool2d);
	a.kernel = INTS(3, 3);
	a.pad = INTS(2, 2, 2, 2);
	BAD(OP(max_pool2d, &a, x5), "max_pool2d: pad [2,2,2,2] must be at most half the effective kernel (kernel [3,3], dilation [1,1])");
	a.pad = INTS(0, 0, 0, 0);
	BAD(OP(max_pool2d, &a, X(IR_F32, SH(1, 1, 2, 2))), "max_pool2d: input f32[1,1,2,2] is too small for kernel 3x3 (output 0x0)");
	BAD(OP(max_pool2d, NULL, x5), "max_pool2d: kernel must have 2 entries > 0, got []");
	a = A(IR_OP_avg_pool2d);
	a.kernel = INTS(2, 2);
	ir_ref xi = X(IR_I32, SH(1, 1, 4, 4)), xs = X(IR_F32, SH(1, 1, H, 4));
	BAD(OP(avg_pool2d, &a, xi), "avg_pool2d: expects a float operand, got i32[1,1,4,4]");
	BAD(OP(avg_pool2d, &a, xs), "avg_pool2d: x f32[1,1,H,4] must have concrete spatial dims (NCHW)");
	a.stride = INTS(2);
	BAD(OP(avg_pool2d, &a, x5), "avg_pool2d: stride must have 2 entries > 0, got [2]");

	ir_ref gx = X(IR_F32, SH(N, 2048, 7, 7));
	OK(OP(global_avg_pool, NULL, gx), "f32[N,2048,1,1]");
	ir_attrs gp = A(IR_OP_global_avg_pool);
	gp.layout = IR_NHWC;
	OK(OP(global_avg_pool, &gp, gx), "f32[N,1,1,7]");
	BAD(OP(global_avg_pool, NULL, X(IR_F32, SH(3, 4))), "global_avg_pool: x f32[3,4] must have rank 4");
}

static void test_reshape_family(void)
{
	begin();
	ir_ref x = X(IR_F32, SH(N, 3, 4)), y = X(IR_F32, SH(2, 3, 4)), z = X(IR_F32, SH(N, 6));
	ir_attrs a = A(IR_OP_reshape);
	a.shape = INTS(N, IR_DIM_INFER);
	OK(OP(reshape, &a, x), "f32[N,12]");
	a.shape = INTS(4, IR_DIM_INFER, 2); /* 24 / 8 = 3 */
	OK(OP(reshape, &a, y), "f32[4,3,2]");
	a.shape = INTS(2, N, 3);
	OK(OP(reshape, &a, z), "f32[2,N,3]");
	a.shape = INTS(3, 0);
	OK(OP(reshape, &a, X(IR_F32, SH(0, 3))), "f32[3,0]");
	a.shape = INTS(1, 1);
	OK(OP(reshape, &a, X(IR_F32, SCALAR)), "f32[1,1]");
	a.shape = INTS(M, 6);
	BAD(OP(reshape, &a, z), "reshape: f32[N,6] cannot become [M,6] (the symbols differ)");
	a.shape = INTS(5, 5);
	BAD(OP(reshape, &a, y), "reshape: f32[2,3,4] cannot become [5,5] (the element counts differ)");
	a.shape = INTS(5, IR_DIM_INFER);
	BAD(OP(reshape, &a, y), "reshape: f32[2,3,4] cannot become [5,-1] (24 elements are not a multiple of 5)");
	a.shape = INTS(IR_DIM_INFER, IR_DIM_INFER);
	BAD(OP(reshape, &a, y), "reshape: target [-1,-1] has more than one -1");
	a.shape = INTS(0, IR_DIM_INFER);
	BAD(OP(reshape, &a, X(IR_F32, SH(0, 3))), "reshape: cannot infer the -1 of [0,-1] from f32[0,3]: the other dims include a 0");

	ir_attrs t = A(IR_OP_transpose);
	t.perm = INTS(2, 0, 1);
	OK(OP(transpose, &t, x), "f32[4,N,3]");
	t.perm = INTS(0, 0, 1);
	BAD(OP(transpose, &t, x), "transpose: perm [0,0,1] is not a permutation of the 3 axes of f32[N,3,4]");
	t.perm = INTS(1, 0);
	BAD(OP(transpose, &t, x), "transpose: perm [1,0] is not a permutation of the 3 axes of f32[N,3,4]");

	ir_ref f = X(IR_F32, SH(N, 3, 4, 5));
	OK(OP(flatten, NULL, f), "f32[N,60]");
	ir_attrs fl = A(IR_OP_flatten);
	fl.axis = -3;
	fl.end = -2;
	OK(OP(flatten, &fl, f), "f32[N,12,5]");
	fl.axis = 0;
	fl.end = 1;
	OK(OP(flatten, &fl, X(IR_F32, SH(N, 1, 4))), "f32[N,4]"); /* N * 1 */
	fl.end = -1;
	BAD(OP(flatten, &fl, X(IR_F32, SH(2, N, 4))),
	    "flatten: cannot fold dims 0 to 2 of f32[2,N,4] into one: they include a symbol");
	fl.axis = 0;
	fl.end = 0;
	OK(OP(flatten, &fl, X(IR_F32, SCALAR)), "f32[1]");
	fl.axis = 2;
	fl.end = 1;
	BAD(OP(flatten, &fl, f), "flatten: start axis 2 comes after end axis 1 for f32[N,3,4,5]");
	fl.axis = 1;
	fl.end = 4;
	BAD(OP(flatten, &fl, f), "flatten: end 4 is out of range for f32[N,3,4,5]");
	BAD(OP(flatten, NULL, X(IR_F32, SCALAR)), "flatten: axis 1 is out of range for f32[]");

	ir_ref sq = X(IR_F32, SH(1, 3, 1, N));
	OK(OP(squeeze, NULL, sq), "f32[3,N]");
	ir_attrs s = A(IR_OP_squeeze);
	s.axes = INTS(-2);
	OK(OP(squeeze, &s, sq), "f32[1,3,N]");
	s.axes = INTS(1);
	BAD(OP(squeeze, &s, sq), "squeeze: axis 1 of f32[1,3,1,N] has size 3, not 1");
	s.axes = INTS(3);
	BAD(OP(squeeze, &s, sq), "squeeze: axis 3 of f32[1,3,1,N] has size N, not 1");

	ir_ref u = X(IR_F32, SH(3, 4));
	ir_attrs us = A(IR_OP_unsqueeze);
	us.axes = INTS(0, -1); /* output rank 4: axes 0 and 3 */
	OK(OP(unsqueeze, &us, u), "f32[1,3,4,1]");
	us.axes = INTS(1);
	OK(OP(unsqueeze, &us, u), "f32[3,1,4]");
	us.axes = INTS(0, -4);
	BAD(OP(unsqueeze, &us, u), "unsqueeze: axis -4 appears twice in axes [0,-4]");
	us.axes = INTS(3);
	BAD(OP(unsqueeze, &us, u), "unsqueeze: axis 3 is out of range for the output rank 3");
	BAD(OP(unsqueeze, NULL, u), "unsqueeze: axes must not be empty");

	ir_attrs ex = A(IR_OP_expand);
	ex.shape = INTS(2, 3, 4);
	OK(OP(expand, &ex, X(IR_F32, SH(3, 1))), "f32[2,3,4]");
	ex.shape = INTS(IR_DIM_INFER, 5);
	OK(OP(expand, &ex, X(IR_F32, SH(N, 1))), "f32[N,5]");
	ex.shape = INTS(M, N, 5);
	OK(OP(expand, &ex, X(IR_F32, SH(N, 1))), "f32[M,N,5]");
	ex.shape = INTS(3, 4);
	BAD(OP(expand, &ex, X(IR_F32, SH(3, 2))), "expand: f32[3,2] does not broadcast to [3,4]");
	ex.shape = INTS(IR_DIM_INFER, 3, 2);
	BAD(OP(expand, &ex, X(IR_F32, SH(3, 2))), "expand: target [-1,3,2] has a -1 in a new leading dim");
	ex.shape = INTS(2);
	BAD(OP(expand, &ex, X(IR_F32, SH(3, 2))), "expand: target [2] has fewer dims than f32[3,2]");
}

static void test_concat_split_slice(void)
{
	begin();
	ir_ref a = X(IR_F32, SH(2, 3)), b = X(IR_F32, SH(2, 5)), c = X(IR_F32, SH(2, 1));
	ir_attrs at = A(IR_OP_concat);
	at.axis = 1;
	OK(OP(concat, &at, a, b, c), "f32[2,9]");
	at.axis = -1;
	OK(OP(concat, &at, b, a), "f32[2,8]");
	at.axis = 0;
	ir_ref n3 = X(IR_F32, SH(N, 3));
	OK(OP(concat, &at, n3), "f32[N,3]");
	BAD(OP(concat, &at, n3, a), "concat: axis 0 of operand 0 f32[N,3] is symbolic");
	BAD(OP(concat, &at, a, b), "concat: operand 1 f32[2,5] does not match operand 0 f32[2,3] outside axis 0");
	BAD(OP(concat, &at, a, X(IR_F16, SH(2, 3))), "concat: operand 1 f16[2,3] has a different dtype from operand 0 f32[2,3]");
	at.axis = 2;
	BAD(OP(concat, &at, a, a), "concat: axis 2 is out of range for f32[2,3]");

	ir_ref x = X(IR_F32, SH(N, 10));
	ir_attrs sp = A(IR_OP_split);
	sp.axis = 1;
	sp.sizes = INTS(3, 7);
	sp.index = 1;
	OK(OP(split, &sp, x), "f32[N,7]");
	sp.index = 0;
	OK(OP(split, &sp, x), "f32[N,3]");
	sp.index = 2;
	BAD(OP(split, &sp, x), "split: index 2 is out of range for 2 sizes");
	sp.index = 0;
	sp.sizes = INTS(3, 6);
	BAD(OP(split, &sp, x), "split: sizes [3,6] sum to 9, but axis 1 of f32[N,10] is 10");
	sp.sizes = INTS(10, 0);
	BAD(OP(split, &sp, x), "split: sizes [10,0] must be > 0 and sum to 10");
	sp.axis = 0;
	sp.sizes = INTS(1);
	BAD(OP(split, &sp, x), "split: axis 0 of f32[N,10] is symbolic");

	ir_ref s = X(IR_F32, SH(10, N, 8));
	ir_attrs sl = A(IR_OP_slice);
	sl.starts = INTS(1);
	sl.ends = INTS(INT64_MAX);
	OK(OP(slice, &sl, s), "f32[9,N,8]"); /* axes default to [0] */
	sl.starts = INTS(-1);
	sl.ends = INTS(INT64_MIN);
	sl.steps = INTS(-1);
	OK(OP(slice, &sl, s), "f32[10,N,8]"); /* 9 down to 0: reversed */
	sl.starts = INTS(8);
	sl.ends = INTS(2);
	sl.steps = INTS(-3);
	OK(OP(slice, &sl, s), "f32[2,N,8]");  /* 8, 5 */
	sl.starts = INTS(100);
	sl.ends = INTS(0);
	sl.steps = INTS(-2);
	OK(OP(slice, &sl, s), "f32[5,N,8]");  /* start clamps to 9: 9, 7, 5, 3, 1 */
	sl.starts = INTS(-3);
	sl.ends = INTS(-1);
	sl.steps = NOINTS;
	OK(OP(slice, &sl, s), "f32[2,N,8]");  /* 7, 8 */
	sl.starts = INTS(5);
	sl.ends = INTS(2);
	OK(OP(slice, &sl, s), "f32[0,N,8]");
	sl.starts = INTS(0, -100);
	sl.ends = INTS(8, 3);
	sl.axes = INTS(-1, 0);
	sl.steps = INTS(3, 1);
	OK(OP(slice, &sl, s), "f32[3,N,3]"); /* axis 2: 0, 3, 6; axis 0: start clamps to 0, [0,3) */
	sl.steps = INTS(0, 1);
	BAD(OP(slice, &sl, s), "slice: steps [0,1] must not contain 0");
	sl.steps = INTS(1);
	BAD(OP(slice, &sl, s), "slice: starts, ends, axes and steps must have equal lengths (2, 2, 2, 1)");
	sl = A(IR_OP_slice);
	sl.starts = INTS(0);
	sl.ends = INTS(1);
	sl.axes = INTS(1);
	BAD(OP(slice, &sl, s), "slice: axis 1 of f32[10,N,8] is symbolic");
	sl.axes = INTS(3);
	BAD(OP(slice, &sl, s), "slice: axis 3 is out of range for f32[10,N,8]");
	BAD(OP(slice, NULL, s), "slice: starts and ends must not be empty");
}

static void test_gather_pad(void)
{
	begin();
	ir_ref emb = X(IR_F32, SH(50257, 768)), ids = X(IR_I64, SH(N, 512));
	OK(OP(gather, NULL, emb, ids), "f32[N,512,768]");
	ir_attrs a = A(IR_OP_gather);
	a.axis = -2;
	ir_ref d = X(IR_F16, SH(4, 5, 6)), i0 = X(IR_I32, SCALAR);
	OK(OP(gather, &a, d, i0), "f16[4,6]");
	ir_ref fi = X(IR_F32, SH(3));
	BAD(OP(gather, NULL, emb, fi), "gather: indices f32[3] must be i32 or i64");
	a.axis = 3;
	BAD(OP(gather, &a, d, i0), "gather: axis 3 is out of range for f16[4,5,6]");
	ir_ref i6 = X(IR_I32, SH(1, 2, 1, 2, 1, 2)), i7 = X(IR_I32, SH(1, 1, 1, 1, 1, 1, 1));
	OK(OP(gather, NULL, d, i6), "f16[1,2,1,2,1,2,5,6]"); /* rank 3 - 1 + 6 = 8 */
	BAD(OP(gather, NULL, d, i7), "gather: result would have rank 9 (at most 8)");

	ir_ref x = X(IR_F32, SH(2, 3, 4));
	ir_attrs p = A(IR_OP_pad);
	p.pad = INTS(0, 1, 2, 3, 4, 5); /* [2+0+3, 3+1+4, 4+2+5] */
	OK(OP(pad, &p, x), "f32[5,8,11]");
	p.mode = IR_PAD_REFLECT;
	p.pad = INTS(0, 2, 3, 1, 0, 3);
	OK(OP(pad, &p, x), "f32[3,5,10]");
	p.pad = INTS(0, 3, 0, 0, 0, 0);
	BAD(OP(pad, &p, x), "pad: reflect padding on axis 1 of f32[2,3,4] must be less than 3, got [0,3,0,0,0,0]");
	p.mode = IR_PAD_EDGE;
	OK(OP(pad, &p, x), "f32[2,6,4]");
	p.pad = INTS(1, 0, 0, 0);
	BAD(OP(pad, &p, X(IR_F32, SH(0, 3))), "pad: edge padding needs a non-empty axis 0 in f32[0,3]");
	p.mode = IR_PAD_CONSTANT;
	p.pad = INTS(0, 1, 0, 1);
	OK(OP(pad, &p, X(IR_F32, SH(N, 3))), "f32[N,5]");
	p.pad = INTS(1, 0, 0, 0);
	BAD(OP(pad, &p, X(IR_F32, SH(N, 3))), "pad: axis 0 of f32[N,3] is symbolic but padded");
	p.pad = INTS(1, 1);
	BAD(OP(pad, &p, x), "pad: pad must have 6 entries (begins then ends) for f32[2,3,4], got [1,1]");
	p.pad = INTS(0, -1, 0, 0, 0, 0);
	BAD(OP(pad, &p, x), "pad: pad [0,-1,0,0,0,0] must not be negative");
	p.pad = INTS(0, INT64_MAX, 0, 0, 0, 0);
	BAD(OP(pad, &p, x), "pad: padded size of axis 1 of f32[2,3,4] overflows");
}

/* Corrupted attributes never make a rule read out of bounds. */
static void test_bad_attrs(void)
{
	begin();
	ir_ref x = X(IR_F32, SH(2, 3));
	ir_attrs a = A(IR_OP_reduce_sum);
	a.axes.n = 17;
	BAD(OP(reduce_sum, &a, x), "reduce_sum: attribute axes has 17 entries (0 to 16 allowed)");
	a = A(IR_OP_cast);
	a.dtype = (ir_dtype)77;
	BAD(OP(cast, &a, x), "cast: attribute dtype has an invalid value 77");
	a = A(IR_OP_reshape);
	a.shape = INTS(1, 1, 1, 1, 1, 1, 1, 1, 6);
	BAD(OP(reshape, &a, x), "reshape: target [1,1,1,1,1,1,1,1,6] has 9 dims (at most 8)");
}

int main(void)
{
	test_sources();
	test_elementwise();
	test_reduce_norm();
	test_contract();
	test_conv();
	test_attention();
	test_pool();
	test_reshape_family();
	test_concat_split_slice();
	test_gather_pad();
	test_bad_attrs();
	ir_graph_free(g);
	return check_done("infer");
}
