/* test_cuda_numerics.c: the CUDA kernels at the inputs where a float
 * formula gives a wrong answer (issue 31 item 14), against the reference
 * interpreter. Inputs are fresh random values in [-1, 1) (gpu_check.c)
 * moved there by x * scale + shift:
 * - sigmoid and silu at x near -90 and -100 (1 / (1 + e^-x) was 0 below
 *   -88.7; sigmoid(-100) is a subnormal, silu(-90) a normal float),
 *   tanh-GELU near -5 (0.5 x (1 + tanh(u)) cancelled), hardswish near 3e38
 *   (x relu6(x + 3) overflowed), each unfused (the elementwise kernel,
 *   vectorized) and fused (a pointwise kernel), and over [-10, 10];
 * - layer_norm and rms_norm of rows scaled to 1e30 (squares overflow a
 *   float: the rows came out 0), rows [1e30, -1e30, x], layer_norm and
 *   group_norm of 1e4 + x over rows of 4096 and 2^20 (a float mean drifts),
 *   softmax down a column of 2^20 (a float sum drifts), softmax and
 *   log_softmax over rows of 2^20;
 * - the row group (a decomposed layer norm) over 1e4 + x in rows of 1000,
 *   4096 and 2^20, and a decomposed softmax over rows of 2^20.
 * Every case but the long softmax rows fails with the float formulas.
 * Usage: gpu_test_cuda_numerics [SM]: with SM (e.g. 90) the graphs are only
 * lowered and every kernel NVRTC-compiled for sm_SM, no GPU needed. */
#include "gpu_check.h"
#include "codegen/cg.h"
#include "runtime/cuda_nvrtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compile_sm, compile_fail;
static rt_nvrtc *nvrtc;

static ir_ref scalar(ir_graph *g, double v)
{
	float f = (float)v;
	ir_shape s = {0, {0}};
	return ir_add_const(g, IR_F32, &s, &f, &gpu_err);
}

/* x * scale + shift, in f32 */
static ir_ref affine(ir_graph *g, ir_ref x, double scale, double shift)
{
	ir_ref y = gpu_op2(g, IR_OP_mul, x, scalar(g, scale));
	return shift != 0 ? gpu_op2(g, IR_OP_add, y, scalar(g, shift)) : y;
}

/* Lowers and compiles g for compile_sm (printing the plan's kernels), or
 * compares it with the reference on the GPU. */
static void check(ir_graph *g, ir_ref r, double tol, const char *label)
{
	if (!compile_sm) {
		gpu_run(g, r, tol, label);
		return;
	}
	if (!gpu_built(g, r, label)) {
		compile_fail++;
		return;
	}
	ir_add_output(g, r);
	cg_target t = {.sm = compile_sm, .unfused = gpu_plain_plan};
	cg_plan *p = NULL;
	sn_err e = {0};
	bool ok = cg_lower(g, NULL, &t, &p, &e) == SN_OK;
	printf("%-48s", label);
	for (uint32_t k = 0; ok && k < p->nkerns; k++) {
		void *cubin = NULL;
		size_t size = 0;
		ok = rt_nvrtc_compile(nvrtc, p->kerns[k].name, p->kerns[k].src, compile_sm, &cubin, &size, NULL, &e) ==
		     SN_OK;
		printf(" %s", p->kerns[k].name);
		free(cubin);
	}
	printf(ok ? " compiled\n" : " FAIL: %s\n", e.msg);
	compile_fail += !ok;
	cg_plan_free(p);
	ir_graph_free(g);
}

static void activations(void)
{
	static const struct {
		ir_op op;
		bool tanh;
		double scale, shift, tol;
		const char *where;
	} cases[] = {
		{IR_OP_sigmoid, false, 0.5, -90, 1e-5, "near -90"},
		/* subnormal results: a few dozen steps of 1.4e-45 each */
		{IR_OP_sigmoid, false, 0.5, -100, 1e-3, "near -100"},
		{IR_OP_sigmoid, false, 10, 0, 1e-5, "over [-10, 10]"},
		{IR_OP_silu, false, 0.5, -90, 1e-5, "near -90"},
		{IR_OP_silu, false, 0.5, -100, 1e-3, "near -100"},
		{IR_OP_silu, false, 10, 0, 1e-5, "over [-10, 10]"},
		/* u in float: a few roundings in 2u ~ -20 (1e-6) */
		{IR_OP_gelu, true, 0.5, -5, 1e-5, "near -5"},
		{IR_OP_gelu, true, 10, 0, 1e-5, "over [-10, 10]"},
		{IR_OP_hardswish, false, 1e38, 2e38, 1e-5, "near 2e38"},
		{IR_OP_hardswish, false, 5, 0, 1e-5, "over [-5, 5]"},
	};
	for (int plain = 1; plain >= 0; plain--) {
		gpu_plain_plan = plain;
		for (size_t i = 0; i < SN_COUNT(cases); i++) {
			ir_graph *g = ir_graph_new();
			ir_ref x = affine(g, gpu_in(g, "x", IR_F32, GPU_SHAPE(64, 1001)), cases[i].scale, cases[i].shift);
			ir_attrs at;
			ir_attrs_init(cases[i].op, &at);
			if (cases[i].tanh)
				at.approximate = IR_GELU_TANH;
			char label[96];
			snprintf(label, sizeof label, "%s%s %s%s", ir_ops[cases[i].op].name, cases[i].tanh ? "(tanh)" : "",
				 cases[i].where, plain ? "" : " fused");
			check(g, gpu_op1(g, cases[i].op, x, &at), cases[i].tol, label);
		}
	}
	gpu_plain_plan = false;
}

static ir_ref norm(ir_graph *g, ir_op op, ir_ref x, const ir_ref *wb, uint32_t nwb)
{
	ir_ref v[3] = {x, nwb > 0 ? wb[0] : IR_NONE, nwb > 1 ? wb[1] : IR_NONE};
	return ir_add(g, op, v, 1 + nwb, NULL, &gpu_err);
}

static void norms(void)
{
	char label[96];
	/* rows scaled to 1e30: a warp per row in registers and reading it
	 * again, a block per row in registers and reading it again */
	static const int64_t lens[] = {3, 64, 1000, 4096, 20000};
	for (size_t k = 0; k < SN_COUNT(lens); k++)
		for (int rms = 0; rms < 2; rms++) {
			ir_graph *g = ir_graph_new();
			ir_ref x = affine(g, gpu_in(g, "x", IR_F32, GPU_SHAPE(5, lens[k])), 1e30, 0);
			ir_ref wb[2] = {gpu_in(g, "w", IR_F32, GPU_SHAPE(lens[k])), gpu_in(g, "b", IR_F32, GPU_SHAPE(lens[k]))};
			snprintf(label, sizeof label, "%s of 1e30 x, rows of %lld", rms ? "rms_norm" : "layer_norm",
				 (long long)lens[k]);
			check(g, norm(g, rms ? IR_OP_rms_norm : IR_OP_layer_norm, x, wb, rms ? 1 : 2), 1e-5, label);
		}
	/* rows [1e30, -1e30, x] */
	{
		ir_graph *g = ir_graph_new();
		float c[3] = {1e30f, -1e30f, 0};
		ir_shape cs = {1, {3}};
		ir_ref x = gpu_op2(g, IR_OP_add, gpu_in(g, "x", IR_F32, GPU_SHAPE(40, 3)),
				   ir_add_const(g, IR_F32, &cs, c, &gpu_err));
		check(g, norm(g, IR_OP_layer_norm, x, NULL, 0), 1e-5, "layer_norm of rows [1e30, -1e30, x]");
	}
	/* 1e4 + x: the mean's error is the output's */
	static const int64_t long_rows[][2] = {{3, 4096}, {2, 1 << 20}};
	for (size_t k = 0; k < SN_COUNT(long_rows); k++) {
		ir_graph *g = ir_graph_new();
		ir_ref x = affine(g, gpu_in(g, "x", IR_F32, GPU_SHAPE(long_rows[k][0], long_rows[k][1])), 1, 1e4);
		snprintf(label, sizeof label, "layer_norm of 1e4 + x, rows of %lld", (long long)long_rows[k][1]);
		check(g, norm(g, IR_OP_layer_norm, x, NULL, 0), 1e-5, label);
	}
	{
		ir_graph *g = ir_graph_new();
		ir_ref x = affine(g, gpu_in(g, "x", IR_F32, GPU_SHAPE(1, 4, 512, 512)), 1, 1e4);
		ir_ref v[3] = {x, gpu_in(g, "w", IR_F32, GPU_SHAPE(4)), gpu_in(g, "b", IR_F32, GPU_SHAPE(4))};
		ir_attrs at;
		ir_attrs_init(IR_OP_group_norm, &at);
		at.groups = 1;
		check(g, ir_add(g, IR_OP_group_norm, v, 3, &at, &gpu_err), 1e-5, "group_norm of 1e4 + x, groups of 2^20");
	}
	/* softmax down a column of 2^20: a thread sums it alone */
	{
		ir_graph *g = ir_graph_new();
		ir_ref x = affine(g, gpu_in(g, "x", IR_F32, GPU_SHAPE(1 << 20, 2)), 1e-3, 0);
		ir_attrs at;
		ir_attrs_init(IR_OP_softmax, &at);
		at.axis = 0;
		check(g, gpu_op1(g, IR_OP_softmax, x, &at), 1e-5, "softmax down columns of 2^20");
	}
	for (int logsm = 0; logsm < 2; logsm++) {
		ir_graph *g = ir_graph_new();
		ir_ref x = affine(g, gpu_in(g, "x", IR_F32, GPU_SHAPE(2, 1 << 20)), 10, 0);
		snprintf(label, sizeof label, "%s over rows of 2^20", logsm ? "log_softmax" : "softmax");
		check(g, gpu_op1(g, logsm ? IR_OP_log_softmax : IR_OP_softmax, x, NULL), 1e-5, label);
	}
}

static ir_ref reduce(ir_graph *g, ir_op op, ir_ref x)
{
	ir_attrs at;
	ir_attrs_init(op, &at);
	at.axes = GPU_INTS(-1);
	at.keepdims = true;
	return gpu_op1(g, op, x, &at);
}

/* decomposed norms: one row-group kernel (tests/gpu/test_cuda_fuse.c
 * checks that it is one) */
static void row_groups(void)
{
	static const int64_t rows[][2] = {{8, 1000}, {3, 4096}, {2, 1 << 20}};
	char label[96];
	for (size_t k = 0; k < SN_COUNT(rows); k++) {
		ir_graph *g = ir_graph_new();
		ir_ref h = affine(g, gpu_in(g, "x", IR_F32, GPU_SHAPE(rows[k][0], rows[k][1])), 1, 1e4);
		ir_ref d = gpu_op2(g, IR_OP_sub, h, reduce(g, IR_OP_reduce_mean, h));
		ir_ref var = reduce(g, IR_OP_reduce_mean, gpu_op2(g, IR_OP_mul, d, d));
		ir_ref r = gpu_op1(g, IR_OP_rsqrt, gpu_op2(g, IR_OP_add, var, scalar(g, 1e-5)), NULL);
		snprintf(label, sizeof label, "decomposed layer norm of 1e4 + x, rows of %lld", (long long)rows[k][1]);
		check(g, gpu_op2(g, IR_OP_mul, d, r), 1e-5, label);
	}
	ir_graph *g = ir_graph_new();
	ir_ref x = affine(g, gpu_in(g, "x", IR_F32, GPU_SHAPE(2, 1 << 20)), 10, 0);
	ir_ref e = gpu_op1(g, IR_OP_exp, gpu_op2(g, IR_OP_sub, x, reduce(g, IR_OP_reduce_max, x)), NULL);
	check(g, gpu_op2(g, IR_OP_div, e, reduce(g, IR_OP_reduce_sum, e)), 1e-5, "decomposed softmax, rows of 2^20");
}

int main(int argc, char **argv)
{
	compile_sm = argc > 1 ? atoi(argv[1]) : 0;
	if (compile_sm) {
		sn_err e = {0};
		if (rt_nvrtc_open(&nvrtc, &e) != SN_OK) {
			printf("skipped: no NVRTC (%s)\n", e.msg);
			return GPU_SKIP;
		}
	} else if (!gpu_available()) {
		return gpu_done();
	}
	activations();
	norms();
	row_groups();
	if (compile_sm) {
		rt_nvrtc_close(nvrtc);
		printf("%d failed\n", compile_fail);
		return compile_fail != 0;
	}
	return gpu_done();
}
