/* test_cuda_conv_tc.c: the pipelined tensor-core conv2d (variant 4), the
 * depthwise kernel (variant 5), the few-channel kernel (variant 6) and the
 * fusion epilogue of every conv kernel, on CUDA against the reference
 * interpreter, with fresh random inputs and the arena poisoned
 * (gpu_check.c).
 *  - variant 4 over a grid of shapes (odd sizes, channels that are no
 *    multiple of the tile, batch 1, strides 1 and 2, 1x1 / 3x3 / 5x5 /
 *    7x7, asymmetric padding, dilation, groups) in bf16 with its default
 *    config and six asked-for configs (tiles 32 to 256 wide, 2 to 16
 *    warps, 2 to 4 stages, both slice depths, 1 to 4 k groups; the 1x1
 *    stride-1 convs' default is a cuBLASLt product), f16 and f32 under TF32
 *    (tolerance 2e-3: operands keep 10 mantissa bits) with the default and
 *    one other;
 *  - depthwise: multiplier 1 and 2, stride 2, 5x5, NHWC and NCHW, three
 *    dtypes;
 *  - the few-channel kernel (variant 6): ResNet-50's stem, odd sizes and
 *    channel counts, stride 1 (pairs at odd offsets), two column segments,
 *    two channel blocks, a single row; bf16, f16, f32 under TF32, fused;
 *  - the fusion contract: conv, add of a residual, relu in the graph (as
 *    the reference runs them); on the GPU the conv's kernel alone, rendered
 *    with a hand-written epilogue relu(v + e0[i]) storing into the relu's
 *    buffer, the add and relu steps dropped. */
#include "gpu_conv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef gpu_conv_spec cspec;

/* What the plan hook re-renders the graph's conv with. */
static struct {
	const cg_config *want;
	bool fuse; /* the conv is followed by add(conv, residual) and relu: fuse them */
} hook;

/* Re-renders plan p's conv step (the first step) with hook.want and, when
 * hook.fuse, the epilogue relu(v + e0[i]) into the relu's buffer. */
static int rerender(const ir_graph *g, cg_plan *p, sn_err *e)
{
	cg_target tg = {.sm = p->sm, .tf32 = gpu_tf32};
	cg_step st;
	int rc = gpu_conv_render(g, &tg, hook.want, hook.fuse, &st, e);
	return rc ? rc : gpu_conv_patch(p, &st, hook.fuse, e);
}

/* conv2d(x, w[, b]) of c in dtype t and layout lay (then + residual, relu
 * when fuse), run with config want (NULL: the default). */
static void conv(const cspec *c, ir_dtype t, ir_layout lay, bool tf32, const cg_config *want, bool fuse,
		 const char *what)
{
	ir_graph *g = ir_graph_new();
	ir_ref r = gpu_conv_graph(g, c, t, lay, fuse);
	char label[192], cfg[64] = "default";
	if (want)
		cg_config_str(want, cfg, sizeof cfg);
	snprintf(label, sizeof label, "%s %s %s n%lld c%lld %lldx%lld o%lld k%lldx%lld s%lld d%lld g%lld%s [%s]", what,
		 tf32 ? "f32-tf32" : ir_dtype_name(t), ir_layout_name(lay), (long long)c->n, (long long)c->c,
		 (long long)c->h, (long long)c->w, (long long)c->o, (long long)c->kh, (long long)c->kw, (long long)c->sh,
		 (long long)c->dil, (long long)c->groups, c->bias ? " bias" : "", cfg);
	if (!gpu_built(g, r, label))
		return;
	ir_add_output(g, r);
	hook.want = want;
	hook.fuse = fuse;
	gpu_tf32 = tf32;
	gpu_plan_hook = want || fuse ? rerender : NULL;
	gpu_plain_plan = want || fuse; /* node i's buffer is i; a 1x1 conv is a kernel step */
	gpu_compare(g, tf32 ? 2e-3 : gpu_tol(t), label);
	gpu_plan_hook = NULL;
	gpu_plain_plan = false;
	gpu_tf32 = false;
}

#define P4(p) {p, p, p, p}
static const cspec grid[] = {
	{1, 64, 14, 14, 64, 3, 3, 1, 1, P4(1), 1, 1, true},        /* batch 1, 3x3 */
	{3, 24, 13, 11, 40, 5, 5, 1, 1, P4(2), 1, 1, true},        /* C = 24: k slices straddle taps, odd sizes */
	{2, 32, 17, 15, 72, 1, 1, 2, 2, P4(0), 1, 1, false},       /* 1x1 stride 2, N not a tile multiple */
	{1, 16, 23, 23, 200, 7, 7, 2, 2, P4(3), 1, 1, true},       /* 7x7 stride 2 */
	{2, 64, 9, 9, 96, 3, 3, 1, 1, P4(2), 2, 1, true},          /* dilation 2 */
	{2, 128, 7, 9, 204, 3, 3, 2, 2, P4(1), 1, 4, true},        /* 4 groups of 32 -> 51 (odd: no paired stores) */
	{1, 8, 5, 5, 8, 3, 3, 1, 1, P4(1), 1, 1, false},           /* C = 8, a single partial tile */
	{1, 256, 14, 14, 512, 1, 1, 1, 1, P4(0), 1, 1, true},      /* ResNet-50 layer3 1x1 at batch 1 */
	{2, 40, 15, 15, 100, 3, 3, 2, 2, {1, 0, 2, 1}, 1, 1, true}, /* asymmetric padding */
	{4, 64, 28, 28, 128, 3, 3, 1, 1, P4(1), 1, 1, true},       /* several 128-row tiles and K slices */
};

static const cspec depthwise[] = {
	{1, 32, 12, 12, 32, 3, 3, 1, 1, P4(1), 1, 32, true},
	{2, 24, 10, 10, 48, 3, 3, 2, 2, P4(1), 1, 24, false}, /* multiplier 2 */
	{2, 64, 15, 13, 64, 5, 5, 2, 2, P4(2), 1, 64, true},  /* 5x5 stride 2 */
	{1, 8, 9, 9, 8, 3, 3, 1, 1, P4(2), 2, 8, true},       /* dilation 2 */
};

/* the few-channel kernel (variant 6): channels below 8, the pipeline's chunk */
static const cspec stem[] = {
	{2, 3, 224, 224, 64, 7, 7, 2, 2, P4(3), 1, 1, true},        /* ResNet-50's stem */
	{1, 3, 37, 29, 24, 7, 7, 2, 2, {3, 2, 1, 3}, 1, 1, true},   /* odd sizes, fewer than 64 channels out */
	{3, 1, 20, 150, 70, 3, 3, 1, 1, P4(1), 1, 1, false},        /* odd pair offsets, two column segments, 2 channel blocks */
	{2, 5, 19, 33, 33, 5, 5, 1, 1, {2, 1, 0, 2}, 1, 1, true},   /* odd C and O: single stores */
	{1, 6, 1, 40, 16, 1, 3, 1, 2, {0, 1, 0, 1}, 1, 1, true},    /* one row (f32 under tf32: 6 is no multiple of 4) */
};

int main(void)
{
	if (!gpu_available())
		return gpu_done();
	/* 16-bit configs; f32 halves tile_k (the same bytes per row) */
	static const cg_config cfgs[] = {
		{.variant = 4, .tile_m = 128, .tile_n = 128, .tile_k = 32, .warps = 8, .stages = 4},
		{.variant = 4, .tile_m = 128, .tile_n = 64, .tile_k = 64, .warps = 4, .stages = 3},
		{.variant = 4, .tile_m = 64, .tile_n = 32, .tile_k = 32, .warps = 2, .stages = 2},
		{.variant = 4, .tile_m = 32, .tile_n = 256, .tile_k = 64, .warps = 8, .stages = 2},
		{.variant = 4, .tile_m = 64, .tile_n = 64, .tile_k = 64, .warps = 8, .stages = 3, .split_k = 2},
		{.variant = 4, .tile_m = 128, .tile_n = 64, .tile_k = 64, .warps = 16, .stages = 3, .split_k = 4},
	};
	for (size_t i = 0; i < SN_COUNT(grid); i++) {
		conv(&grid[i], IR_BF16, IR_NHWC, false, NULL, false, "tc");
		for (size_t k = 0; k < SN_COUNT(cfgs); k++)
			conv(&grid[i], IR_BF16, IR_NHWC, false, &cfgs[k], false, "tc");
		conv(&grid[i], IR_F16, IR_NHWC, false, NULL, false, "tc");
		conv(&grid[i], IR_F16, IR_NHWC, false, &cfgs[i % SN_COUNT(cfgs)], false, "tc");
		cg_config f = cfgs[(i + 1) % SN_COUNT(cfgs)];
		f.tile_k /= 2;
		conv(&grid[i], IR_F32, IR_NHWC, true, NULL, false, "tc");
		conv(&grid[i], IR_F32, IR_NHWC, true, &f, false, "tc");
	}
	static const cg_config v6 = {.variant = 6};
	for (size_t i = 0; i < SN_COUNT(stem); i++) {
		conv(&stem[i], IR_BF16, IR_NHWC, false, NULL, false, "stem");
		conv(&stem[i], IR_F16, IR_NHWC, false, &v6, false, "stem");
		conv(&stem[i], IR_F32, IR_NHWC, true, &v6, false, "stem");
		conv(&stem[i], i % 2 ? IR_F32 : IR_BF16, IR_NHWC, i % 2, &v6, true, "stem fused");
	}
	static const ir_dtype fdt[] = {IR_F32, IR_F16, IR_BF16};
	for (size_t i = 0; i < SN_COUNT(depthwise); i++)
		for (size_t d = 0; d < SN_COUNT(fdt); d++)
			for (int l = 0; l < 2; l++)
				conv(&depthwise[i], fdt[d], l ? IR_NHWC : IR_NCHW, false, NULL, false, "depthwise");
	/* the epilogue on every kernel */
	static const cg_config v1 = {.variant = 1}, v2 = {.variant = 2}, v3 = {.variant = 3};
	conv(&grid[0], IR_BF16, IR_NHWC, false, NULL, true, "fused");
	conv(&grid[5], IR_BF16, IR_NHWC, false, NULL, true, "fused");
	conv(&grid[1], IR_F16, IR_NHWC, false, &cfgs[0], true, "fused");
	conv(&grid[3], IR_F32, IR_NHWC, true, NULL, true, "fused");
	conv(&grid[9], IR_BF16, IR_NHWC, false, &cfgs[4], true, "fused"); /* k groups, staged 16-byte stores */
	conv(&grid[7], IR_BF16, IR_NHWC, false, &cfgs[5], true, "fused");
	conv(&grid[7], IR_BF16, IR_NHWC, false, NULL, false, "cublasLt"); /* a 1x1 conv as a product */
	conv(&grid[2], IR_F16, IR_NHWC, false, NULL, false, "stride 2 kernel");
	conv(&grid[4], IR_BF16, IR_NCHW, false, &v3, true, "fused");
	conv(&grid[8], IR_F32, IR_NCHW, false, &v2, true, "fused");
	conv(&grid[6], IR_F16, IR_NHWC, false, &v1, true, "fused");
	conv(&depthwise[2], IR_BF16, IR_NHWC, false, NULL, true, "fused");
	conv(&depthwise[1], IR_F32, IR_NCHW, false, NULL, true, "fused");
	return gpu_done();
}
