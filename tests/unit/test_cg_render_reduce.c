/* test_cg_render_reduce.c: the reduction, softmax/norm and pooling
 * renderers. Every kernel they produce is compiled with NVRTC for sm_80
 * and sm_90 (cg_render_util.h); launch shapes are checked against values
 * worked out by hand. Numerics are the GPU tests' job
 * (tests/gpu/test_cuda_reduce.c). */
#include "cg_render_util.h"

/* ---- reductions ---- */
static void test_reduce(void)
{
	static const ir_op ops[] = {IR_OP_reduce_sum, IR_OP_reduce_mean, IR_OP_reduce_max, IR_OP_reduce_min};
	struct {
		ir_shape s;
		ir_ints axes;
		bool keep;
	} cases[] = {
		{SHAPE(8, 300), INTS(1), false},          /* short rows: warp per row */
		{SHAPE(3, 5000), INTS(-1), true},         /* long rows: block per row */
		{SHAPE(4, 7, 33), INTS(1), false},        /* columns */
		{SHAPE(2, 3, 4, 5), INTS(0, 2), true},    /* non-contiguous axes */
		{SHAPE(6, 70000), INTS(), false},         /* everything, one output */
		{SHAPE(2, 64, 56, 56), INTS(2, 3), true}, /* global pooling shape */
	};
	char label[96];
	for (size_t c = 0; c < SN_COUNT(cases); c++)
		for (size_t o = 0; o < SN_COUNT(ops); o++)
			for (size_t d = 0; d < SN_COUNT(fdt); d++) {
				if (d > 0 && (o > 1 || c > 2))
					continue; /* the narrow dtypes on a few shapes are enough */
				fresh();
				ir_attrs a = attrs(ops[o]);
				a.axes = cases[c].axes;
				a.keepdims = cases[c].keep;
				ir_ref x = in(fdt[d], cases[c].s);
				snprintf(label, sizeof label, "%s case %zu %s", ir_ops[ops[o]].name, c,
					 ir_dtype_name(fdt[d]));
				build(cg_render_reduce, op(ops[o], &x, 1, &a), label);
			}
	/* integers: sum and max in i32, a mean in i64 */
	static const ir_dtype idt[] = {IR_I32, IR_I64, IR_I8};
	for (size_t d = 0; d < SN_COUNT(idt); d++) {
		fresh();
		ir_attrs a = attrs(IR_OP_reduce_sum);
		a.axes = INTS(1);
		ir_ref x = in(idt[d], SHAPE(5, 100, 3));
		build(cg_render_reduce, op(IR_OP_reduce_sum, &x, 1, &a), "reduce_sum int");
		build(cg_render_reduce, op(IR_OP_reduce_max, &x, 1, &a), "reduce_max int");
		build(cg_render_reduce, op(IR_OP_reduce_mean, &x, 1, &a), "reduce_mean int");
	}

	/* The launch shape follows the strategy, worked out by hand. */
	cg_step st;
	fresh();
	ir_attrs a = attrs(IR_OP_reduce_sum);
	a.axes = INTS(1);
	ir_ref x = in(IR_F32, SHAPE(100, 300));
	if (render(cg_render_reduce, op(IR_OP_reduce_sum, &x, 1, &a), &st, "rows")) {
		/* 100 rows of 300: a warp each, 8 per block of 256 -> 13 blocks */
		CHECK(st.k.grid[0] == 13 && st.k.block[0] == 256);
		CHECK(st.k.nbufs == 2 && st.k.bufs[0] == x);
		CHECK(strstr(st.k.name, "reduce_sum_") == st.k.name);
	}
	step_free(&st);
	x = in(IR_F32, SHAPE(3, 5000));
	if (render(cg_render_reduce, op(IR_OP_reduce_sum, &x, 1, &a), &st, "long rows")) /* a block per row */
		CHECK(st.k.grid[0] == 3 && st.k.block[0] == 256);
	step_free(&st);
	x = in(IR_F32, SHAPE(64, 10, 128)); /* columns: 8192 outputs, a thread each */
	if (render(cg_render_reduce, op(IR_OP_reduce_sum, &x, 1, &a), &st, "columns"))
		CHECK(st.k.grid[0] == 32 && st.k.block[0] == 256);
	step_free(&st);
	/* identical specs give identical kernels */
	cg_step s1, s2;
	ir_ref x1 = in(IR_F16, SHAPE(4, 4000)), x2 = in(IR_F16, SHAPE(4, 4000));
	render(cg_render_reduce, op(IR_OP_reduce_mean, &x1, 1, &a), &s1, "same 1");
	render(cg_render_reduce, op(IR_OP_reduce_mean, &x2, 1, &a), &s2, "same 2");
	CHECK(s1.k.src && s2.k.src && strcmp(s1.k.name, s2.k.name) == 0 && strcmp(s1.k.src, s2.k.src) == 0);
	step_free(&s1);
	step_free(&s2);
}

/* ---- softmax and the norms ---- */
static void test_norm(void)
{
	char label[96];
	struct {
		ir_shape s;
		int axis;
	} sm[] = {
		{SHAPE(4, 100), -1},      /* warp per row, in registers */
		{SHAPE(2, 3000), 1},      /* block per row, in registers */
		{SHAPE(2, 50257), -1},    /* long rows, re-read */
		{SHAPE(2, 5, 7), 1},      /* an inner axis: columns */
		{SHAPE(3, 1, 12, 64), 0}, /* outer 1 */
	};
	for (size_t c = 0; c < SN_COUNT(sm); c++)
		for (size_t d = 0; d < SN_COUNT(fdt); d++)
			for (int lg = 0; lg < 2; lg++) {
				if (lg && d == 2)
					continue;
				fresh();
				ir_op o = lg ? IR_OP_log_softmax : IR_OP_softmax;
				ir_attrs a = attrs(o);
				a.axis = sm[c].axis;
				ir_ref x = in(fdt[d], sm[c].s);
				snprintf(label, sizeof label, "%s case %zu %s", ir_ops[o].name, c, ir_dtype_name(fdt[d]));
				build(cg_render_norm, op(o, &x, 1, &a), label);
			}
	for (size_t d = 0; d < SN_COUNT(fdt); d++) {
		fresh();
		ir_attrs a = attrs(IR_OP_layer_norm);
		ir_ref x = in(fdt[d], SHAPE(2, 16, 768));
		ir_ref ins[3] = {x, in(fdt[d], SHAPE(768)), in(IR_F32, SHAPE(768))}; /* mixed dtypes */
		snprintf(label, sizeof label, "layer_norm %s", ir_dtype_name(fdt[d]));
		build(cg_render_norm, op(IR_OP_layer_norm, ins, 3, &a), label);
		build(cg_render_norm, op(IR_OP_layer_norm, ins, 1, &a), label);
		a.axis = 1;
		ir_ref x2 = in(fdt[d], SHAPE(3, 4, 9000));
		ir_ref ins2[2] = {x2, in(fdt[d], SHAPE(4, 9000))};
		build(cg_render_norm, op(IR_OP_layer_norm, ins2, 2, &a), label);
		a = attrs(IR_OP_rms_norm);
		a.eps = 1e-6;
		ins[2] = ins[1];
		snprintf(label, sizeof label, "rms_norm %s", ir_dtype_name(fdt[d]));
		build(cg_render_norm, op(IR_OP_rms_norm, ins, 2, &a), label);
		build(cg_render_norm, op(IR_OP_rms_norm, &x, 1, &a), label);
		for (int l = 0; l < 2; l++) {
			a = attrs(IR_OP_batch_norm);
			a.layout = l ? IR_NHWC : IR_NCHW;
			ir_ref bx = in(fdt[d], l ? SHAPE(2, 7, 7, 64) : SHAPE(2, 64, 7, 7));
			ir_ref bn[5] = {bx, in(fdt[d], SHAPE(64)), in(fdt[d], SHAPE(64)), in(IR_F32, SHAPE(64)),
					in(IR_F32, SHAPE(64))};
			snprintf(label, sizeof label, "batch_norm %s %s", ir_layout_name(a.layout), ir_dtype_name(fdt[d]));
			build(cg_render_norm, op(IR_OP_batch_norm, bn, 5, &a), label);
		}
	}
	fresh();
	ir_attrs a = attrs(IR_OP_batch_norm);
	ir_ref bx = in(IR_F32, SHAPE(4, 10));
	ir_ref bn[5] = {bx, in(IR_F32, SHAPE(10)), in(IR_F32, SHAPE(10)), in(IR_F32, SHAPE(10)), in(IR_F32, SHAPE(10))};
	cg_step st;
	if (render(cg_render_norm, op(IR_OP_batch_norm, bn, 5, &a), &st, "batch_norm rank 2")) {
		CHECK(st.k.nbufs == 6 && st.k.bufs[0] == bx && st.k.bufs[4] == bn[4]);
		CHECK(strstr(st.k.src, "i % 10L") != NULL); /* channel = i % C for [N, C] */
	}
	step_free(&st);
	a = attrs(IR_OP_softmax);
	ir_ref x = in(IR_F16, SHAPE(100, 300));
	if (render(cg_render_norm, op(IR_OP_softmax, &x, 1, &a), &st, "softmax launch"))
		CHECK(st.k.grid[0] == 13 && st.k.block[0] == 256); /* a warp per row, 8 rows per block */
	step_free(&st);
	a = attrs(IR_OP_layer_norm);
	x = in(IR_F32, SHAPE(3, 5000));
	if (render(cg_render_norm, op(IR_OP_layer_norm, &x, 1, &a), &st, "layer_norm launch"))
		CHECK(st.k.grid[0] == 3 && st.k.block[0] == 512 && st.k.nbufs == 2);
	step_free(&st);
}

/* ---- pooling ---- */
static void test_pool(void)
{
	char label[96];
	for (size_t d = 0; d < SN_COUNT(fdt); d++)
		for (int l = 0; l < 2; l++) {
			fresh();
			ir_layout lay = l ? IR_NHWC : IR_NCHW;
			ir_ref x = in(fdt[d], l ? SHAPE(2, 17, 19, 8) : SHAPE(2, 8, 17, 19));
			ir_attrs a = attrs(IR_OP_max_pool2d);
			a.layout = lay;
			a.kernel = INTS(3, 3);
			a.stride = INTS(2, 2);
			a.pad = INTS(1, 1, 1, 1);
			snprintf(label, sizeof label, "max_pool2d %s %s", ir_layout_name(lay), ir_dtype_name(fdt[d]));
			build(cg_render_pool, op(IR_OP_max_pool2d, &x, 1, &a), label);
			a.ceil_mode = true;
			a.dilation = INTS(2, 1);
			a.pad = INTS(2, 0, 1, 1);
			build(cg_render_pool, op(IR_OP_max_pool2d, &x, 1, &a), label);
			ir_attrs v = attrs(IR_OP_avg_pool2d);
			v.layout = lay;
			v.kernel = INTS(3, 2);
			v.pad = INTS(1, 1, 1, 0);
			v.ceil_mode = true;
			snprintf(label, sizeof label, "avg_pool2d %s %s", ir_layout_name(lay), ir_dtype_name(fdt[d]));
			build(cg_render_pool, op(IR_OP_avg_pool2d, &x, 1, &v), label);
			v.count_include_pad = true;
			build(cg_render_pool, op(IR_OP_avg_pool2d, &x, 1, &v), label);
			ir_attrs ga = attrs(IR_OP_global_avg_pool);
			ga.layout = lay;
			snprintf(label, sizeof label, "global_avg_pool %s %s", ir_layout_name(lay), ir_dtype_name(fdt[d]));
			build(cg_render_pool, op(IR_OP_global_avg_pool, &x, 1, &ga), label);
			ir_ref big = in(fdt[d], l ? SHAPE(1, 80, 80, 3) : SHAPE(1, 3, 80, 80));
			build(cg_render_pool, op(IR_OP_global_avg_pool, &big, 1, &ga), label);
		}
	static const ir_dtype idt[] = {IR_I32, IR_U8, IR_I64};
	for (size_t d = 0; d < SN_COUNT(idt); d++) {
		fresh();
		ir_ref x = in(idt[d], SHAPE(1, 3, 9, 9));
		ir_attrs a = attrs(IR_OP_max_pool2d);
		a.kernel = INTS(2, 2);
		build(cg_render_pool, op(IR_OP_max_pool2d, &x, 1, &a), "max_pool2d int");
	}
	/* ResNet-50's stem pool: 64x112x112 -> 64x56x56 = 200704 outputs per image */
	fresh();
	ir_ref x = in(IR_F32, SHAPE(1, 64, 112, 112));
	ir_attrs a = attrs(IR_OP_max_pool2d);
	a.kernel = INTS(3, 3);
	a.stride = INTS(2, 2);
	a.pad = INTS(1, 1, 1, 1);
	cg_step st;
	if (render(cg_render_pool, op(IR_OP_max_pool2d, &x, 1, &a), &st, "stem pool"))
		CHECK(st.k.grid[0] == 200704 / 256 && st.k.block[0] == 256 && st.k.bufs[0] == x);
	step_free(&st);
	ir_attrs ga = attrs(IR_OP_global_avg_pool);
	x = in(IR_F16, SHAPE(2, 2048, 7, 7)); /* 4096 planes, a warp each, 8 per block */
	if (render(cg_render_pool, op(IR_OP_global_avg_pool, &x, 1, &ga), &st, "head pool"))
		CHECK(st.k.grid[0] == 512 && strstr(st.k.src, "/ 49.0f") != NULL);
	step_free(&st);
}

int main(void)
{
	cg_render_start("cg_render_reduce");
	test_reduce();
	test_norm();
	test_pool();
	return cg_render_finish("cg_render_reduce");
}
