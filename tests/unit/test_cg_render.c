/* test_cg_render.c: codegen's framework (cg_lower, cg_finish, dtype
 * helpers) and the elementwise and data-movement renderers. Every kernel
 * rendered here is compiled with NVRTC for sm_80 and sm_90 when the CUDA
 * toolkit was found at build time and NVRTC loads (else the compile checks
 * are skipped, and the test says so); launch shapes, buffers, vector
 * widths, view strides and names are checked against values worked out by
 * hand. Numerics are the GPU tests' job (tests/gpu/test_cuda_{elem,move}.c).
 * SINTER_DUMP_DIR=dir writes every source there. */
#include "check.h"
#include "codegen/cg_render.h"
#ifdef SINTER_HAVE_CUDA
#include "runtime/cuda_nvrtc.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- every rendered kernel, kept for the NVRTC pass at the end ---- */
static struct {
	char *name, *src;
} kept[1024];
static size_t nkept;

static void keep(const cg_kernel *k)
{
	if (nkept < SN_COUNT(kept)) {
		kept[nkept].name = strdup(k->name);
		kept[nkept].src = strdup(k->src);
		nkept++;
	}
}

static sn_err err;

static ir_shape shp(int rank, const int64_t *d)
{
	ir_shape s = {rank, {0}};
	for (int i = 0; i < rank; i++)
		s.d[i] = d[i];
	return s;
}
#define SHAPE(...) shp((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
static const ir_shape SCALAR = {0, {0}};

static ir_ref in(ir_graph *g, const char *name, ir_dtype t, ir_shape s)
{
	return ir_add_input(g, name, t, &s, &err);
}

/* Renders node r with its family's renderer; keeps the kernel. */
static bool render(const ir_graph *g, ir_ref r, cg_step *st)
{
	memset(st, 0, sizeof *st);
	st->node = r;
	cg_target t = {.sm = 90};
	ir_kind k = ir_ops[g->nodes[r].op].kind;
	sn_err e = {0};
	int rc = (k == IR_K_MOVE || g->nodes[r].op == IR_OP_iota) ? cg_render_move(g, r, &t, NULL, st, &e)
								    : cg_render_elementwise(g, r, &t, NULL, st, &e);
	if (rc != SN_OK) {
		fprintf(stderr, "render %s: %s\n", ir_ops[g->nodes[r].op].name, e.msg);
		return false;
	}
	if (st->kind == CG_STEP_KERNEL)
		keep(&st->k);
	return true;
}

/* Renders, checks it is a kernel over nbufs buffers, frees it. */
static void render_ok(const ir_graph *g, ir_ref r, uint32_t nbufs)
{
	cg_step st;
	CHECK(r != IR_NONE);
	if (r == IR_NONE) {
		fprintf(stderr, "  builder: %s\n", err.msg);
		err = (sn_err){0};
		return;
	}
	CHECK(render(g, r, &st));
	CHECK(st.kind == CG_STEP_KERNEL);
	CHECK(st.k.nbufs == nbufs);
	CHECK(st.k.bufs[st.k.nbufs - 1] == r);
	CHECK(st.k.src && strstr(st.k.src, "/* sinter kernel: ") == st.k.src);
	CHECK(st.k.src && !strstr(st.k.src, CG_NAME));
	CHECK(st.k.src && strstr(st.k.src, st.k.name));
	free(st.k.src);
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

/* ---- framework ---- */

static void test_finish(void)
{
	sn_buf b = {0};
	sn_buf_puts(&b, "/* x */ extern \"C\" __global__ void " CG_NAME "(float *p) { /* " CG_NAME " */ }\n");
	cg_kernel k = {0};
	CHECK(cg_finish(&k, "demo", &b, &err) == SN_OK);
	CHECK(b.s == NULL);
	/* prefix, '_', 12 lowercase hex digits */
	CHECK(strlen(k.name) == 4 + 1 + 12 && strncmp(k.name, "demo_", 5) == 0);
	CHECK(strspn(k.name + 5, "0123456789abcdef") == 12);
	/* both placeholders replaced */
	const char *p = strstr(k.src, k.name);
	CHECK(p && strstr(p + 1, k.name));
	CHECK(!strstr(k.src, CG_NAME));

	sn_buf b2 = {0};
	sn_buf_puts(&b2, "/* x */ extern \"C\" __global__ void " CG_NAME "(float *p) { /* " CG_NAME " */ }\n");
	cg_kernel k2 = {0};
	CHECK(cg_finish(&k2, "demo", &b2, &err) == SN_OK);
	CHECK_STR(k.name, k2.name); /* the same source gives the same name */
	sn_buf b3 = {0};
	sn_buf_puts(&b3, "/* y */ extern \"C\" __global__ void " CG_NAME "(float *p) { }\n");
	cg_kernel k3 = {0};
	CHECK(cg_finish(&k3, "demo", &b3, &err) == SN_OK);
	CHECK(strcmp(k.name, k3.name) != 0);
	free(k.src);
	free(k2.src);
	free(k3.src);

	/* a prefix that leaves no room for the hash is refused */
	char longp[80];
	memset(longp, 'p', sizeof longp - 1);
	longp[sizeof longp - 1] = 0;
	sn_buf b4 = {0};
	sn_buf_puts(&b4, "x");
	sn_err e = {0};
	cg_kernel k4 = {0};
	CHECK(cg_finish(&k4, longp, &b4, &e) == SN_EINTERNAL);
	CHECK(k4.src == NULL);
}

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;
	for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static void test_helpers(void)
{
	CHECK_STR(cg_ctype(IR_F32), "float");
	CHECK_STR(cg_ctype(IR_BF16), "unsigned short");
	CHECK_STR(cg_ctype(IR_I64), "long long");
	CHECK_STR(cg_ctype(IR_I8), "signed char");
	CHECK_STR(cg_ctype(IR_BOOL), "unsigned char");
	sn_buf b = {0};
	cg_emit_dtype_helpers(&b, IR_F16);
	cg_emit_dtype_helpers(&b, IR_F16); /* once per source */
	cg_emit_dtype_helpers(&b, IR_F8E4M3);
	cg_emit_dtype_helpers(&b, IR_F8E5M2);
	CHECK(count(b.s, "float ld_f16(") == 1);
	CHECK(count(b.s, "cvt.rn.f16.f32") == 1);
	/* the shared fp8 encoder is emitted once for both fp8 formats */
	CHECK(count(b.s, "unsigned sn_mini_from_float(") == 1);
	CHECK(count(b.s, "cvt.rn.satfinite.e4m3x2.f32") == 1);
	CHECK(count(b.s, "cvt.rn.satfinite.e5m2x2.f32") == 1);
	CHECK(count(b.s, "#if __CUDA_ARCH__ >= 890") == 2);
	/* decode constants by hand: e4m3 subnormal 2^(1-7-3), e5m2 2^(1-15-2) */
	CHECK(strstr(b.s, "ldexpf((float)m, -9)") != NULL);
	CHECK(strstr(b.s, "ldexpf((float)m, -16)") != NULL);
	/* the overflow thresholds: e4m3fn 448 + 16, e5m2 57344 + 4096 */
	CHECK(strstr(b.s, "a > 464.0f") != NULL);
	CHECK(strstr(b.s, "a >= 61440.0f") != NULL);
	sn_buf_free(&b);
	cg_emit_dtype_helpers(&b, IR_BF16);
	CHECK(strstr(b.s, "cvt.rn.bf16.f32") && strstr(b.s, "<< 16"));
	sn_buf_free(&b);
}

/* ---- elementwise ---- */

static const ir_op unary_ops[] = {
	IR_OP_neg, IR_OP_abs, IR_OP_exp, IR_OP_log, IR_OP_sqrt, IR_OP_rsqrt, IR_OP_tanh, IR_OP_sigmoid,
	IR_OP_erf, IR_OP_relu, IR_OP_gelu, IR_OP_silu, IR_OP_hardswish, IR_OP_hardsigmoid, IR_OP_clamp,
};
static const ir_op binary_ops[] = {
	IR_OP_add, IR_OP_sub, IR_OP_mul, IR_OP_div, IR_OP_pow, IR_OP_min, IR_OP_max,
	IR_OP_equal, IR_OP_less, IR_OP_greater,
};

static void test_unary(void)
{
	const ir_dtype fts[] = {IR_F32, IR_F16, IR_BF16, IR_I64};
	for (size_t ti = 0; ti < SN_COUNT(fts); ti++) {
		ir_graph *g = ir_graph_new();
		ir_ref a = in(g, "a", fts[ti], SHAPE(3, 5)), v = in(g, "v", fts[ti], SHAPE(4, 256));
		for (size_t i = 0; i < SN_COUNT(unary_ops); i++) {
			ir_op op = unary_ops[i];
			bool intok = op == IR_OP_neg || op == IR_OP_abs || op == IR_OP_relu || op == IR_OP_clamp;
			if (!ir_dtype_is_float(fts[ti]) && !intok)
				continue;
			ir_attrs at;
			ir_attrs_init(op, &at);
			if (op == IR_OP_clamp)
				at.min = -1.5, at.max = 2.25;
			render_ok(g, op1(g, op, a, &at), 2);
			if (fts[ti] != IR_F16) /* f16's vector path: the binary ops */
				render_ok(g, op1(g, op, v, &at), 2);
			if (op == IR_OP_gelu && ir_dtype_is_float(fts[ti])) {
				at.approximate = IR_GELU_TANH;
				render_ok(g, op1(g, op, a, &at), 2);
			}
		}
		ir_graph_free(g);
	}
}

static void test_clamp_int_bounds(void)
{
	/* integer clamp rounds a fractional bound inward: [-1.5, 2.25] -> [-1, 2] */
	ir_graph *g = ir_graph_new();
	ir_ref a = in(g, "a", IR_I32, SHAPE(7));
	ir_attrs at;
	ir_attrs_init(IR_OP_clamp, &at);
	at.min = -1.5, at.max = 2.25;
	cg_step st;
	CHECK(render(g, op1(g, IR_OP_clamp, a, &at), &st));
	CHECK(strstr(st.k.src, "sn_clampll(x, -1LL, 2LL)") != NULL);
	free(st.k.src);
	/* the float clamp keeps the bounds, infinities as bit patterns */
	ir_ref f = in(g, "f", IR_F32, SHAPE(7));
	at.max = INFINITY;
	CHECK(render(g, op1(g, IR_OP_clamp, f, &at), &st));
	CHECK(strstr(st.k.src, "sn_clampf(x, -1.5f, __uint_as_float(0x7f800000u))") != NULL);
	free(st.k.src);
	ir_graph_free(g);
}

static void test_binary(void)
{
	const ir_dtype ts[] = {IR_F32, IR_F16, IR_BF16, IR_I64};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++) {
		ir_dtype t = ts[ti];
		ir_graph *g = ir_graph_new();
		ir_ref a = in(g, "a", t, SHAPE(2, 3, 4)), b = in(g, "b", t, SHAPE(3, 1));
		ir_ref c = in(g, "c", t, SHAPE(4, 256)), d = in(g, "d", t, SHAPE(4, 256));
		ir_ref s = in(g, "s", t, SCALAR);
		for (size_t i = 0; i < SN_COUNT(binary_ops); i++) {
			if (binary_ops[i] == IR_OP_pow && !ir_dtype_is_float(t))
				continue;
			render_ok(g, op2(g, binary_ops[i], a, b), 3);
			if (t != IR_BF16) /* bf16's vector path: the unary ops */
				render_ok(g, op2(g, binary_ops[i], c, d), 3);
			if (t == IR_F32 || t == IR_I64)
				render_ok(g, op2(g, binary_ops[i], s, c), 3);
		}
		ir_graph_free(g);
	}
	/* bool operands compare */
	ir_graph *g = ir_graph_new();
	ir_ref a = in(g, "a", IR_BOOL, SHAPE(5)), b = in(g, "b", IR_BOOL, SHAPE(2, 5));
	render_ok(g, op2(g, IR_OP_equal, a, b), 3);
	ir_graph_free(g);
}

/* Launch shapes, vector widths and broadcast index math, by hand. */
static void test_elem_layout(void)
{
	ir_graph *g = ir_graph_new();
	ir_ref a = in(g, "a", IR_F32, SHAPE(4, 256)), b = in(g, "b", IR_F32, SHAPE(4, 256));
	ir_ref h = in(g, "h", IR_F16, SHAPE(8, 125)), x = in(g, "x", IR_F32, SHAPE(2, 3, 4));
	ir_ref y = in(g, "y", IR_F32, SHAPE(3, 1));
	cg_step st;
	/* 1024 f32: 256 float4 vectors, one block of 256, no scalar tail */
	ir_ref r = op2(g, IR_OP_add, a, b);
	CHECK(render(g, r, &st));
	CHECK(strstr(st.k.src, "vec=4") && strstr(st.k.src, "uint4"));
	CHECK(st.k.grid[0] == 1 && st.k.block[0] == 256 && st.k.grid[1] == 1 && st.k.block[2] == 1);
	CHECK(st.k.bufs[0] == a && st.k.bufs[1] == b && st.k.bufs[2] == r);
	CHECK(strstr(st.k.src, "j < 256L") && !strstr(st.k.src, "i < 1024L"));
	free(st.k.src);
	/* 1000 f16: 8 per 16 bytes, 125 vectors and no tail */
	CHECK(render(g, op1(g, IR_OP_exp, h, NULL), &st));
	CHECK(strstr(st.k.src, "vec=8") && strstr(st.k.src, "j < 125L"));
	free(st.k.src);
	/* cast f32 -> f16 over 1000: the widest dtype (4 bytes) sets 4 per
	 * vector: 250 vectors, f16 side moves 8 bytes (uint2) */
	ir_attrs ca;
	ir_attrs_init(IR_OP_cast, &ca);
	ca.dtype = IR_F32;
	CHECK(render(g, op1(g, IR_OP_cast, h, &ca), &st));
	CHECK(strstr(st.k.src, "vec=4") && strstr(st.k.src, "j < 250L") && strstr(st.k.src, "uint2"));
	free(st.k.src);
	/* broadcast [2,3,4] + [3,1]: no vectors; y's index is the middle
	 * dim (stride 1), x's the flat index, merged to one dim of 24 */
	CHECK(render(g, op2(g, IR_OP_mul, x, y), &st));
	CHECK(strstr(st.k.src, "vec=1 broadcast") && strstr(st.k.src, "i < 24L"));
	CHECK(strstr(st.k.src, "q = rem % 4L") && strstr(st.k.src, "o1 += q * 1L"));
	CHECK(strstr(st.k.src, "o0 += q * 4L") && strstr(st.k.src, "o0 += q * 12L"));
	free(st.k.src);
	/* 5 elements of 4 bytes: fewer than a vector's 4? no, 5 >= 4: one
	 * vector and a tail of one */
	ir_ref f5 = in(g, "f5", IR_F32, SHAPE(5));
	CHECK(render(g, op1(g, IR_OP_neg, f5, NULL), &st));
	CHECK(strstr(st.k.src, "j < 1L") && strstr(st.k.src, "i = 4L + gid; i < 5L"));
	free(st.k.src);
	ir_graph_free(g);
}

static void test_identical_specs(void)
{
	/* two graphs, different value names, same spec: one kernel */
	ir_graph *g1 = ir_graph_new(), *g2 = ir_graph_new();
	ir_ref a1 = in(g1, "a", IR_BF16, SHAPE(6, 7)), a2 = in(g2, "zz", IR_BF16, SHAPE(6, 7));
	ir_ref pad = in(g2, "pad", IR_F32, SHAPE(1)); /* shifts node ids */
	(void)pad;
	cg_step s1, s2, s3;
	CHECK(render(g1, op1(g1, IR_OP_silu, a1, NULL), &s1));
	CHECK(render(g2, op1(g2, IR_OP_silu, a2, NULL), &s2));
	CHECK_STR(s1.k.name, s2.k.name);
	CHECK_STR(s1.k.src, s2.k.src);
	CHECK(strncmp(s1.k.name, "silu_", 5) == 0);
	CHECK(render(g2, op1(g2, IR_OP_sigmoid, a2, NULL), &s3));
	CHECK(strcmp(s1.k.name, s3.k.name) != 0);
	free(s1.k.src);
	free(s2.k.src);
	free(s3.k.src);
	ir_graph_free(g1);
	ir_graph_free(g2);
}

static void test_cast_where(void)
{
	const ir_dtype all[] = {IR_F32, IR_F16, IR_BF16, IR_F8E4M3, IR_F8E5M2, IR_I64, IR_I32, IR_I8, IR_U8, IR_BOOL};
	ir_graph *g = ir_graph_new();
	for (size_t i = 0; i < SN_COUNT(all); i++) {
		char nm[16];
		snprintf(nm, sizeof nm, "x%zu", i);
		ir_ref x = in(g, nm, all[i], SHAPE(3, 37));
		for (size_t j = 0; j < SN_COUNT(all); j++) {
			/* every pair through f32 both ways, plus the rest on sm checks */
			if (i != 0 && j != 0 && i != j + 1 && j != i + 1)
				continue;
			ir_attrs at;
			ir_attrs_init(IR_OP_cast, &at);
			at.dtype = all[j];
			render_ok(g, op1(g, IR_OP_cast, x, &at), 2);
		}
	}
	/* where: bool [2,1,4], f32 [3,1], f32 [4] -> [2,3,4]; f16 no broadcast */
	ir_ref c = in(g, "c", IR_BOOL, SHAPE(2, 1, 4)), x = in(g, "wx", IR_F32, SHAPE(3, 1));
	ir_ref y = in(g, "wy", IR_F32, SHAPE(4));
	ir_ref w3[3] = {c, x, y};
	ir_ref w = ir_add(g, IR_OP_where, w3, 3, NULL, &err);
	render_ok(g, w, 4);
	ir_ref c2 = in(g, "c2", IR_BOOL, SHAPE(64)), h1 = in(g, "h1", IR_F16, SHAPE(64));
	ir_ref h2 = in(g, "h2", IR_F16, SHAPE(64));
	ir_ref w4[3] = {c2, h1, h2};
	render_ok(g, ir_add(g, IR_OP_where, w4, 3, NULL, &err), 4);
	ir_ref i1 = in(g, "i1", IR_I64, SHAPE(2, 3)), i2 = in(g, "i2", IR_I64, SHAPE(3));
	ir_ref c3 = in(g, "c3", IR_BOOL, SHAPE(2, 1));
	ir_ref w5[3] = {c3, i1, i2};
	render_ok(g, ir_add(g, IR_OP_where, w5, 3, NULL, &err), 4);
	ir_graph_free(g);
}

/* ---- data movement ---- */

static ir_ref move(ir_graph *g, ir_op op, ir_ref a, const ir_attrs *at)
{
	return ir_add(g, op, &a, 1, at, &err);
}

static void test_views(void)
{
	const ir_dtype ts[] = {IR_F32, IR_F16, IR_I64, IR_BOOL};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++) {
		ir_graph *g = ir_graph_new();
		ir_ref x = in(g, "x", ts[ti], SHAPE(2, 3, 4)), y = in(g, "y", ts[ti], SHAPE(3, 1));
		ir_attrs at;
		ir_attrs_init(IR_OP_transpose, &at);
		at.perm = (ir_ints){3, {2, 0, 1}};
		render_ok(g, move(g, IR_OP_transpose, x, &at), 2);
		at.perm = (ir_ints){3, {0, 2, 1}};
		render_ok(g, move(g, IR_OP_transpose, x, &at), 2);
		ir_attrs_init(IR_OP_expand, &at);
		at.shape = (ir_ints){3, {2, 3, 4}};
		render_ok(g, move(g, IR_OP_expand, y, &at), 2);
		ir_attrs_init(IR_OP_split, &at);
		at.axis = 1, at.sizes = (ir_ints){2, {1, 2}}, at.index = 1;
		render_ok(g, move(g, IR_OP_split, x, &at), 2);
		ir_attrs_init(IR_OP_slice, &at);
		at.axes = (ir_ints){1, {2}}, at.starts = (ir_ints){1, {-1}}, at.ends = (ir_ints){1, {-5}};
		at.steps = (ir_ints){1, {-1}};
		render_ok(g, move(g, IR_OP_slice, x, &at), 2);
		ir_graph_free(g);
	}
}

/* The strides of views, by hand. */
static void test_view_strides(void)
{
	ir_graph *g = ir_graph_new();
	ir_ref x = in(g, "x", IR_F32, SHAPE(5, 6)), t = in(g, "t", IR_F32, SHAPE(2, 3, 4));
	cg_step st;
	/* slice rows 4,2,0 (start -1, end -6 clamps to before 0, step -2) and
	 * columns 1,3: out [3,2], base 4*6+1 = 25, strides -12 and 2 */
	ir_attrs at;
	ir_attrs_init(IR_OP_slice, &at);
	at.axes = (ir_ints){2, {0, 1}};
	at.starts = (ir_ints){2, {-1, 1}};
	at.ends = (ir_ints){2, {-6, 5}};
	at.steps = (ir_ints){2, {-2, 2}};
	ir_ref s = move(g, IR_OP_slice, x, &at);
	CHECK(s != IR_NONE && g->nodes[s].shape.d[0] == 3 && g->nodes[s].shape.d[1] == 2);
	CHECK(render(g, s, &st));
	CHECK(strstr(st.k.src, "view base=25 strides=[3x-12,2x2]") != NULL);
	free(st.k.src);
	/* transpose [2,3,4] perm [2,0,1]: out [4,2,3], strides 1, 12, 4; the
	 * last two dims walk as one (12 == 4 * 3): [4x1,6x4] */
	ir_attrs_init(IR_OP_transpose, &at);
	at.perm = (ir_ints){3, {2, 0, 1}};
	CHECK(render(g, move(g, IR_OP_transpose, t, &at), &st));
	CHECK(strstr(st.k.src, "strides=[4x1,6x4]") != NULL);
	free(st.k.src);
	/* perm [1,2,0] of [2,3,4]: out [3,4,2], strides 4,1,12; dims 0 and 1
	 * walk as one (4 == 1 * 4): [12x1,2x12] */
	at.perm = (ir_ints){3, {1, 2, 0}};
	CHECK(render(g, move(g, IR_OP_transpose, t, &at), &st));
	CHECK(strstr(st.k.src, "strides=[12x1,2x12]") != NULL);
	free(st.k.src);
	/* split piece 1 of sizes [1,2] along axis 1 of [2,3,4]: base 4 */
	ir_attrs_init(IR_OP_split, &at);
	at.axis = 1, at.sizes = (ir_ints){2, {1, 2}}, at.index = 1;
	CHECK(render(g, move(g, IR_OP_split, t, &at), &st));
	CHECK(strstr(st.k.src, "view base=4 strides=[2x12,8x1]") != NULL);
	free(st.k.src);
	/* reshape is an alias */
	ir_attrs_init(IR_OP_reshape, &at);
	at.shape = (ir_ints){1, {30}};
	CHECK(render(g, move(g, IR_OP_reshape, x, &at), &st));
	CHECK(st.kind == CG_STEP_ALIAS && st.k.src == NULL);
	ir_graph_free(g);
}

static void test_concat_gather_pad_iota(void)
{
	const ir_dtype ts[] = {IR_F32, IR_F16, IR_BF16, IR_I64, IR_BOOL};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++) {
		ir_dtype t = ts[ti];
		ir_graph *g = ir_graph_new();
		ir_ref a = in(g, "a", t, SHAPE(2, 1, 4)), b = in(g, "b", t, SHAPE(2, 3, 4));
		ir_ref c = in(g, "c", t, SHAPE(2, 2, 4));
		ir_ref v3[3] = {a, b, c};
		ir_attrs at;
		ir_attrs_init(IR_OP_concat, &at);
		at.axis = 1;
		render_ok(g, ir_add(g, IR_OP_concat, v3, 3, &at, &err), 4);
		at.axis = -1;
		ir_ref v2[2] = {b, b};
		render_ok(g, ir_add(g, IR_OP_concat, v2, 2, &at, &err), 3);

		ir_ref ix = in(g, "ix", IR_I64, SHAPE(2, 3)), ix32 = in(g, "ix32", IR_I32, SHAPE(5));
		ir_attrs_init(IR_OP_gather, &at);
		ir_ref gv[2] = {b, ix};
		render_ok(g, ir_add(g, IR_OP_gather, gv, 2, &at, &err), 3);
		at.axis = 1;
		ir_ref gv2[2] = {b, ix32};
		render_ok(g, ir_add(g, IR_OP_gather, gv2, 2, &at, &err), 3);

		if (t != IR_BOOL) {
			ir_attrs_init(IR_OP_pad, &at);
			at.pad = (ir_ints){6, {0, 1, 2, 1, 0, 3}};
			at.value = 1.5;
			for (int m = 0; m < 3; m++) {
				at.mode = (ir_padmode)m;
				render_ok(g, move(g, IR_OP_pad, b, &at), 2);
			}
			ir_shape is = SHAPE(3, 4);
			render_ok(g, ir_add_iota(g, t, &is, 1, &err), 1);
		}
		ir_graph_free(g);
	}
}

static void test_move_details(void)
{
	ir_graph *g = ir_graph_new();
	ir_ref x = in(g, "x", IR_F16, SHAPE(2, 3)), e = in(g, "e", IR_F32, SHAPE(10, 4));
	ir_ref ix = in(g, "ix", IR_I64, SHAPE(2, 3));
	cg_step st;
	/* pad [2,3] by begins [0,1], ends [1,2] with 1.5: the f16 bits 0x3e00 */
	ir_attrs at;
	ir_attrs_init(IR_OP_pad, &at);
	at.pad = (ir_ints){4, {0, 1, 1, 2}};
	at.value = 1.5;
	ir_ref p = move(g, IR_OP_pad, x, &at);
	CHECK(p != IR_NONE && g->nodes[p].shape.d[0] == 3 && g->nodes[p].shape.d[1] == 6);
	CHECK(render(g, p, &st));
	CHECK(strstr(st.k.src, "(unsigned short)0x3e00") != NULL);
	CHECK(strstr(st.k.src, "i < 18L") != NULL);
	free(st.k.src);
	/* gather rows of a [10,4] table with [2,3] indices: out [2,3,4]; a
	 * negative index adds 10, then clamps to [0, 9] */
	ir_ref gv[2] = {e, ix};
	ir_attrs_init(IR_OP_gather, &at);
	ir_ref gr = ir_add(g, IR_OP_gather, gv, 2, &at, &err);
	CHECK(render(g, gr, &st));
	CHECK(strstr(st.k.src, "ix += 10LL") && strstr(st.k.src, "ix > 9LL ? 9LL"));
	CHECK(strstr(st.k.src, "out of range indices clamp") || strstr(st.k.src, "out-of-range indices clamp"));
	CHECK(st.k.bufs[0] == e && st.k.bufs[1] == ix && st.k.bufs[2] == gr);
	free(st.k.src);
	/* concat of 8 [2,3] operands along axis 0 (one output row of 8 * 6
	 * columns): two kernels, operands 0-6 into columns [0, 42), operand 7
	 * into [42, 48) */
	ir_ref v8[8];
	for (int i = 0; i < 8; i++)
		v8[i] = x;
	ir_attrs_init(IR_OP_concat, &at);
	ir_ref c8 = ir_add(g, IR_OP_concat, v8, 8, &at, &err);
	CHECK(c8 != IR_NONE);
	cg_target t = {.sm = 90};
	sn_err e2 = {0};
	memset(&st, 0, sizeof st);
	CHECK(cg_render_move(g, c8, &t, NULL, &st, &e2) == SN_OK);
	CHECK(st.kind == CG_STEP_KERNEL && st.nmore == 1);
	if (st.nmore == 1) {
		CHECK(st.k.nbufs == 8 && st.k.bufs[0] == x && st.k.bufs[7] == c8);
		CHECK(st.more[0].nbufs == 2 && st.more[0].bufs[0] == x && st.more[0].bufs[1] == c8);
		CHECK(strstr(st.k.src, "\n * part: 1 of 2, columns [0, 42) from operands 0 1 2 3 4 5 6\n"));
		CHECK(strstr(st.k.src, "i < 42L;") && strstr(st.k.src, "out[o * 48L + j + 0L] = in6[o * 6L + j - 36L];"));
		CHECK(strstr(st.more[0].src, "\n * part: 2 of 2, columns [42, 48) from operands 7\n"));
		CHECK(strstr(st.more[0].src, "i < 6L;") && strstr(st.more[0].src, "out[o * 48L + j + 42L] = in0[o * 6L + j - 0L];"));
		CHECK(st.k.grid[0] == 1 && st.more[0].grid[0] == 1 && strcmp(st.k.name, st.more[0].name));
		keep(&st.k);
		keep(&st.more[0]);
	}
	cg_step_free_kernels(&st);
	CHECK(st.k.src == NULL && st.more == NULL && st.nmore == 0);
	/* 16 bytes at a time where every row is whole vectors: 8 f16 [2,8]
	 * along axis 1 (rows of one uint4, the output's of 8) in two kernels;
	 * 2 f32 [4,4] along axis 1 in one (rows of 1 and 2 uint4s) */
	ir_ref h = in(g, "h", IR_F16, SHAPE(2, 8));
	for (int i = 0; i < 8; i++)
		v8[i] = h;
	at.axis = 1;
	ir_ref h8 = ir_add(g, IR_OP_concat, v8, 8, &at, &err);
	CHECK(h8 != IR_NONE && render(g, h8, &st) && st.nmore == 1);
	if (st.nmore == 1) {
		CHECK(strstr(st.k.src, "\n * part: 1 of 2, columns [0, 56) from operands 0 1 2 3 4 5 6\n"));
		CHECK(strstr(st.k.src, "config: block=256 operands=7 vec=8 */") && strstr(st.k.src, "i < 14L;"));
		CHECK(strstr(st.k.src, "long o = i / 7L, j = i - o * 7L;"));
		CHECK(strstr(st.k.src, "((uint4 *)out)[o * 8L + j + 0L] = ((const uint4 *)in6)[o * 1L + j - 6L];"));
		CHECK(strstr(st.more[0].src, "\n * part: 2 of 2, columns [56, 64) from operands 7\n"));
		CHECK(strstr(st.more[0].src, "((uint4 *)out)[o * 8L + j + 7L] = ((const uint4 *)in0)[o * 1L + j - 0L];"));
		CHECK(strstr(st.more[0].src, "i < 2L;"));
		keep(&st.more[0]);
	}
	cg_step_free_kernels(&st);
	ir_ref f4[2] = {in(g, "f", IR_F32, SHAPE(4, 4)), in(g, "f2", IR_F32, SHAPE(4, 8))};
	ir_ref fc = ir_add(g, IR_OP_concat, f4, 2, &at, &err);
	CHECK(fc != IR_NONE && render(g, fc, &st) && st.nmore == 0);
	CHECK(strstr(st.k.src, "config: block=256 operands=2 vec=4 */") && strstr(st.k.src, "i < 12L;"));
	CHECK(strstr(st.k.src, "\t\t\t((uint4 *)out)[i] = ((const uint4 *)in1)[o * 2L + j - 1L];"));
	cg_step_free_kernels(&st);
	ir_graph_free(g);
}

/* A concat of n operands, xk of dtype t shaped [3, 1 + k % 4, 5] along
 * axis 1 except operand 2 (empty: [3, 0, 5]), rendered: one kernel per 7
 * non-empty operands, which together name each of them once in order,
 * each over its own columns [a, b) of the output's rows of 5 * width
 * columns, the parts' columns adjoining from 0 to the end, each a loop
 * over 3 * (b - a) elements. Keeps the kernels for NVRTC when compile. */
static void concat_many(uint32_t n, ir_dtype t, bool compile)
{
	ir_graph *g = ir_graph_new();
	ir_ref *v = malloc(n * sizeof *v);
	int64_t width = 0;
	for (uint32_t k = 0; k < n; k++) {
		char nm[16];
		snprintf(nm, sizeof nm, "x%u", k);
		int64_t w = k == 2 ? 0 : 1 + k % 4;
		v[k] = in(g, nm, t, SHAPE(3, w, 5));
		width += w;
	}
	ir_attrs at;
	ir_attrs_init(IR_OP_concat, &at);
	at.axis = 1;
	ir_ref c = ir_add(g, IR_OP_concat, v, n, &at, &err);
	CHECK(c != IR_NONE);
	cg_step st;
	memset(&st, 0, sizeof st);
	cg_target tg = {.sm = 90};
	sn_err e = {0};
	CHECK(cg_render_move(g, c, &tg, NULL, &st, &e) == SN_OK);
	uint32_t nonempty = n - (n > 2), parts = (nonempty + 6) / 7;
	if (n <= 7)
		parts = 1; /* the one kernel takes every operand, the empty one too */
	CHECK(st.kind == CG_STEP_KERNEL && st.nmore + 1 == parts);
	uint32_t next = 0; /* the next operand a kernel should name */
	int64_t col = 0, orow = width * 5;
	for (uint32_t p = 0; p <= st.nmore && st.kind == CG_STEP_KERNEL; p++) {
		const cg_kernel *k = p ? &st.more[p - 1] : &st.k;
		CHECK(k->nbufs >= 2 && k->nbufs <= CG_MAX_BUFS && k->bufs[k->nbufs - 1] == c);
		for (uint32_t b = 0; b + 1 < k->nbufs; b++) {
			if (n > 7 && next == 2)
				next++; /* the empty operand is no kernel's */
			CHECK(next < n && k->bufs[b] == v[next]);
			next++;
		}
		if (n > 7) {
			char want[64];
			snprintf(want, sizeof want, "\n * part: %u of %u, columns [%lld, ", p + 1, parts, (long long)col);
			const char *at_ = strstr(k->src, want);
			CHECK(at_ != NULL);
			long long b = -1;
			if (at_)
				sscanf(at_ + strlen(want), "%lld)", &b);
			CHECK(b > col && b <= orow);
			snprintf(want, sizeof want, "i < %lldL;", 3 * (b - col));
			CHECK(strstr(k->src, want) != NULL);
			if (b > col)
				col = b;
		} else {
			col = orow;
		}
		for (uint32_t q = 0; q < p; q++)
			CHECK(strcmp(k->name, q ? st.more[q - 1].name : st.k.name) != 0);
		if (compile && (n < 100 || p == 0 || p == st.nmore))
			keep(k);
	}
	CHECK(next == n && col == orow);
	cg_step_free_kernels(&st);
	free(v);
	ir_graph_free(g);
}

static void test_concat_many(void)
{
	concat_many(7, IR_F32, false);
	concat_many(8, IR_F32, true);
	concat_many(9, IR_BF16, true);
	concat_many(33, IR_I64, true);
	concat_many(200, IR_U8, true); /* 29 kernels; the first and last compiled */
	/* an empty output with 9 operands: one kernel that copies nothing */
	ir_graph *g = ir_graph_new();
	ir_ref v[9];
	for (int k = 0; k < 9; k++) {
		char nm[16];
		snprintf(nm, sizeof nm, "x%d", k);
		v[k] = in(g, nm, IR_F16, SHAPE(0, 2));
	}
	ir_attrs at;
	ir_attrs_init(IR_OP_concat, &at);
	at.axis = 1;
	ir_ref c = ir_add(g, IR_OP_concat, v, 9, &at, &err);
	cg_step st;
	CHECK(render(g, c, &st));
	CHECK(st.kind == CG_STEP_KERNEL && st.nmore == 0 && st.k.nbufs == 1 && st.k.bufs[0] == c);
	CHECK(strstr(st.k.src, "i < 0L;") && strstr(st.k.src, "(void)out;"));
	cg_step_free_kernels(&st);
	ir_graph_free(g);
}

/* ---- cg_lower ---- */

static void test_lower(void)
{
	ir_graph *g = ir_graph_new();
	ir_ref x = in(g, "x", IR_F32, SHAPE(2, 8));
	ir_shape ws = SHAPE(8);
	ir_ref w = ir_add_param(g, "w", IR_F32, &ws, &err);
	ir_ref m = op2(g, IR_OP_mul, x, w);
	ir_attrs at;
	ir_attrs_init(IR_OP_reshape, &at);
	at.shape = (ir_ints){1, {16}};
	ir_ref r = move(g, IR_OP_reshape, m, &at);
	ir_ref y = op1(g, IR_OP_relu, r, NULL);
	ir_set_name(g, y, "y");
	ir_add_output(g, y);
	CHECK(y != IR_NONE);
	cg_rplan *p = NULL;
	cg_target t = {.sm = 80};
	CHECK(cg_render_graph(g, &t, &p, &err) == SN_OK);
	CHECK(p && p->nsteps == 3);
	if (p && p->nsteps == 3) {
		CHECK(p->steps[0].node == m && p->steps[0].kind == CG_STEP_KERNEL);
		CHECK(p->steps[1].node == r && p->steps[1].kind == CG_STEP_ALIAS);
		CHECK(p->steps[2].node == y && p->steps[2].kind == CG_STEP_KERNEL);
		CHECK(p->steps[2].k.bufs[0] == r);
		keep(&p->steps[0].k);
		keep(&p->steps[2].k);
	}
	cg_rplan_free(p);
	CHECK(cg_is_alias(g, &g->nodes[r]) && !cg_is_alias(g, &g->nodes[m]));

	/* a concat of 8 operands is a step of two kernels */
	ir_ref v8[8];
	for (int i = 0; i < 8; i++)
		v8[i] = x;
	ir_attrs_init(IR_OP_concat, &at);
	ir_ref c = ir_add(g, IR_OP_concat, v8, 8, &at, &err);
	ir_set_name(g, c, "cat");
	CHECK(cg_render_graph(g, &t, &p, &err) == SN_OK);
	CHECK(p && p->nsteps == 4 && p->steps[3].node == c && p->steps[3].nmore == 1);
	cg_rplan_free(p);
	p = NULL;
	/* the plan of a concat of 40 operands, every third computed by exp:
	 * 6 launches, each of at most 8 buffers ending with the concat's, that
	 * name the 40 operands' buffers once each in order; the exps' arena
	 * space does not overlap the concat's (they are live until its last
	 * launch) */
	{
		ir_graph *g2 = ir_graph_new();
		ir_ref v40[40];
		for (int k = 0; k < 40; k++) {
			char nm[16];
			snprintf(nm, sizeof nm, "x%d", k);
			v40[k] = in(g2, nm, IR_F32, SHAPE(2, 1 + k % 3, 4));
			if (k % 3 == 0)
				v40[k] = op1(g2, IR_OP_exp, v40[k], NULL);
		}
		ir_attrs_init(IR_OP_concat, &at);
		at.axis = 1;
		ir_ref c40 = ir_add(g2, IR_OP_concat, v40, 40, &at, &err);
		ir_add_output(g2, op1(g2, IR_OP_neg, c40, NULL));
		cg_plan *pl = NULL;
		CHECK(cg_lower(g2, NULL, &t, &pl, &err) == SN_OK);
		uint32_t ncat = 0, seen = 0, out = CG_NO_BUF;
		bool order = true, overlap = false;
		for (uint32_t i = 0; pl && i < pl->nsteps; i++) {
			const cg_pstep *s = &pl->steps[i];
			if (s->kind != CG_LAUNCH || strcmp(s->op, "concat"))
				continue;
			ncat++;
			CHECK(s->nargs >= 2 && s->nargs <= 8);
			if (out == CG_NO_BUF)
				out = s->args[s->nargs - 1];
			CHECK(s->args[s->nargs - 1] == out);
			for (uint32_t a = 0; a + 1 < s->nargs; a++) {
				const cg_buf *b = &pl->bufs[s->args[a]];
				order &= seen < 40 && b->shape[1] == 1 + (int64_t)seen % 3 &&
					 (seen % 3 == 0 ? b->where == CG_IN_ARENA : b->where == CG_IN_INPUT);
				const cg_buf *o = &pl->bufs[out];
				if (b->where == CG_IN_ARENA && o->where == CG_IN_ARENA)
					overlap |= b->offset < o->offset + o->bytes && o->offset < b->offset + b->bytes;
				seen++;
			}
			for (uint32_t j = 0; j < i; j++)
				CHECK(pl->steps[j].kind != CG_LAUNCH || strcmp(pl->steps[j].op, "concat") ||
				      pl->steps[j].kern != s->kern);
		}
		CHECK(ncat == 6 && seen == 40 && order && !overlap);
		cg_plan_free(pl);
		ir_graph_free(g2);
	}
	/* a renderer's error comes back naming the node: a transpose whose
	 * perm went bad after the builder checked it */
	ir_attrs_init(IR_OP_transpose, &at);
	at.perm = (ir_ints){2, {1, 0}};
	ir_ref tr = move(g, IR_OP_transpose, x, &at);
	ir_set_name(g, tr, "tr");
	CHECK(tr != IR_NONE);
	((ir_attrs *)g->nodes[tr].attrs)->perm.v[0] = 5;
	sn_err e = {0};
	CHECK(cg_render_graph(g, &t, &p, &e) == SN_EINPUT && p == NULL);
	char want[200];
	snprintf(want, sizeof want, "node %u (%%tr, transpose): transpose: perm entry 5 out of range", tr);
	CHECK_STR(e.msg, want);
	ir_graph_free(g);

	/* unbound symbols are refused */
	g = ir_graph_new();
	int n = ir_sym(g, "N", 1);
	ir_shape ss = {2, {IR_SYM(n), 4}};
	x = ir_add_input(g, "x", IR_F32, &ss, &err);
	y = op1(g, IR_OP_exp, x, NULL);
	e = (sn_err){0};
	CHECK(cg_render_graph(g, &t, &p, &e) == SN_EINPUT);
	snprintf(want, sizeof want, "node %u (exp): shape has unbound symbols (bind them first)", y);
	CHECK_STR(e.msg, want);
	ir_graph_free(g);
}

/* ---- NVRTC ---- */

static void compile_all(void)
{
	const char *dump = getenv("SINTER_DUMP_DIR");
	if (dump)
		for (size_t i = 0; i < nkept; i++) {
			char path[512];
			snprintf(path, sizeof path, "%s/%s.cu", dump, kept[i].name);
			FILE *f = fopen(path, "w");
			if (f) {
				fputs(kept[i].src, f);
				fclose(f);
			}
		}
#ifdef SINTER_HAVE_CUDA
	rt_nvrtc *nv = NULL;
	sn_err e = {0};
	if (rt_nvrtc_open(&nv, &e) != SN_OK) {
		printf("nvrtc compile checks skipped: %s\n", e.msg);
		return;
	}
	rt_job *jobs = calloc(nkept ? nkept : 1, sizeof *jobs);
	CHECK(jobs != NULL);
	for (size_t i = 0; jobs && i < nkept; i++)
		jobs[i] = (rt_job){.name = kept[i].name, .src = kept[i].src};
	const int sms[] = {80, 90};
	for (size_t s = 0; jobs && s < SN_COUNT(sms); s++) {
		rt_compile_stats cs = {0};
		e = (sn_err){0};
		int rc = rt_compile_all(nv, jobs, nkept, sms[s], NULL, 0, NULL, NULL, NULL, &cs, &e);
		CHECK(rc == SN_OK);
		if (rc != SN_OK)
			fprintf(stderr, "sm_%d: %s\n", sms[s], e.msg);
		for (size_t i = 0; rc == SN_OK && i < nkept; i++)
			CHECK(jobs[i].cubin && jobs[i].size > 0);
		printf("sm_%d: %zu kernels, %zu distinct, compiled in %.1f s\n", sms[s], nkept, cs.unique, cs.seconds);
		rt_jobs_free(jobs, nkept);
	}
	free(jobs);
	rt_nvrtc_close(nv);
#else
	printf("nvrtc compile checks skipped: built without the CUDA toolkit\n");
#endif
}

int main(void)
{
	test_finish();
	test_helpers();
	test_unary();
	test_clamp_int_bounds();
	test_binary();
	test_elem_layout();
	test_identical_specs();
	test_cast_where();
	test_views();
	test_view_strides();
	test_concat_gather_pad_iota();
	test_move_details();
	test_concat_many();
	test_lower();
	compile_all();
	for (size_t i = 0; i < nkept; i++) {
		free(kept[i].name);
		free(kept[i].src);
	}
	return check_done("cg_render");
}
