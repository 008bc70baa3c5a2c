/* test_cuda_conv_wg.c: the wgmma implicit-GEMM conv2d (variant 7, and
 * variant 8 with a producer warpgroup; sm_90 compiled for sm_90a) on CUDA
 * against the reference interpreter, with
 * fresh random inputs and the arena poisoned (gpu_check.c):
 *  - a grid of shapes (odd sizes, channels that are no multiple of the
 *    tile, batch 1, strides 1 and 2, 1x1 / 3x3 / 5x5 / 7x7, asymmetric
 *    padding, dilation, groups, a single partial tile) in bf16 with the
 *    default config and seven asked-for ones (tiles 64 to 256 rows and 48
 *    to 256 channels, 1 to 4 warpgroups, 1 or 2 m64 tiles per warpgroup,
 *    3 to 6 stages, 1, 2 or 4 k groups), every shape through about half
 *    of them; f16 and f32 under TF32 (wgmma's tf32 form on operands
 *    rounded to TF32; tolerance 2e-3) with the default and one other;
 *  - variant 8 over the same grid in bf16 with its default and seven
 *    asked-for configs (1 to 3 consumer warpgroups, 2 to 8 stages), every
 *    shape through about half of them, and in f16 with one;
 *  - variant 9 (split-K over a cluster of 2 to 8 blocks) over the same
 *    grid in bf16 with its default and four asked-for configs, about
 *    half each, in f16 and f32 under TF32 with one; ResNet-50's layer 4
 *    at batch 1 by default (clusters of 8);
 *  - the fusion epilogue relu(v + residual) on several configs and
 *    dtypes (the add and relu steps dropped, as in test_cuda_conv_tc.c),
 *    with staged 16-byte stores and with the scalar way out (odd channel
 *    counts).
 * On a GPU other than sm_90 it prints "skipped". With the argument
 * "compile" it needs no GPU: every case is rendered for sm_90 and
 * NVRTC-compiled (for sm_90a) in one batch, strictly in CI
 * (codegen.nvrtc.conv_wg.sm_90: no spills, no serialized wgmma). */
#include "gpu_conv.h"

#include "runtime/cuda_nvrtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef gpu_conv_spec cspec;

/* compile mode: the rendered sources, compiled at the end */
static bool compile_only;
static rt_job jobs[512];
static size_t njobs;
static int compile_failures; /* compile mode: graphs not built or not rendered */

/* Renders g's conv with want (NULL: the default) for sm (gpu_conv.h), and
 * checks that it is the wgmma kernel (variant 7, or 8 with a producer
 * warpgroup). */
static int render(const ir_graph *g, int sm, bool tf32, const cg_config *want, bool fuse, cg_step *st, sn_err *e)
{
	cg_target tg = {.sm = sm, .tf32 = tf32, .conv_kernels = true};
	int rc = gpu_conv_render(g, &tg, want, fuse, st, e);
	/* the default is 7, 8 (f16/bf16) or 9 (small grids) by shape; asked
	 * for, the one asked */
	bool ok = want && want->variant ? st->k.cfg.variant == want->variant
					: st->k.cfg.variant == 7 || st->k.cfg.variant == 9 || (st->k.cfg.variant == 8 && !tf32);
	if (!rc && !ok) {
		rc = sn_errf(e, SN_EINTERNAL, "test: the conv was rendered with variant %d, not the wgmma kernel's",
			     (int)st->k.cfg.variant);
		free(st->k.src);
	}
	return rc;
}

static struct {
	const cg_config *want;
	bool fuse;
} hook;

/* The plan hook: the conv step (the first) rendered again (always: the
 * test names the kernel it checks), add and relu dropped when fused. */
static int rerender(const ir_graph *g, cg_plan *p, sn_err *e)
{
	cg_step st;
	int rc = render(g, p->sm, gpu_tf32, hook.want, hook.fuse, &st, e);
	return rc ? rc : gpu_conv_patch(p, &st, hook.fuse, e);
}

static void conv(const cspec *c, ir_dtype t, bool tf32, const cg_config *want, bool fuse)
{
	ir_graph *g = ir_graph_new();
	ir_ref r = gpu_conv_graph(g, c, t, IR_NHWC, fuse);
	char label[192], cfg[96] = "default";
	if (want)
		cg_config_str(want, cfg, sizeof cfg);
	snprintf(label, sizeof label, "wg%s %s n%lld c%lld %lldx%lld o%lld k%lldx%lld s%lld d%lld g%lld%s [%s]",
		 fuse ? " fused" : "", tf32 ? "f32-tf32" : ir_dtype_name(t), (long long)c->n, (long long)c->c,
		 (long long)c->h, (long long)c->w, (long long)c->o, (long long)c->kh, (long long)c->kw, (long long)c->sh,
		 (long long)c->dil, (long long)c->groups, c->bias ? " bias" : "", cfg);
	if (!gpu_built(g, r, label)) {
		compile_failures += compile_only;
		return;
	}
	ir_add_output(g, r);
	if (compile_only) {
		cg_step st;
		sn_err e = {0};
		if (render(g, 90, tf32, want, fuse, &st, &e)) {
			printf("%-80s FAIL: %s\n", label, e.msg);
			compile_failures++;
		} else if (njobs < SN_COUNT(jobs)) {
			char *name = malloc(sizeof st.k.name);
			memcpy(name, st.k.name, sizeof st.k.name);
			jobs[njobs++] = (rt_job){.name = name, .src = st.k.src};
		} else {
			free(st.k.src);
		}
		ir_graph_free(g);
		return;
	}
	hook.want = want;
	hook.fuse = fuse;
	gpu_tf32 = tf32;
	gpu_plan_hook = rerender;
	gpu_plain_plan = true; /* node i's buffer is i; a 1x1 conv is a kernel step */
	gpu_compare(g, tf32 ? 2e-3 : gpu_tol(t), label);
	gpu_plan_hook = NULL;
	gpu_plain_plan = false;
	gpu_tf32 = false;
}

#define P4(p) {p, p, p, p}
static const cspec grid[] = {
	{1, 64, 14, 14, 64, 3, 3, 1, 1, P4(1), 1, 1, true},         /* batch 1, 3x3 */
	{3, 24, 13, 11, 40, 5, 5, 1, 1, P4(2), 1, 1, true},         /* C = 24: k slices straddle taps, odd sizes */
	{2, 32, 17, 15, 72, 1, 1, 2, 2, P4(0), 1, 1, false},        /* 1x1 stride 2, N not a tile multiple */
	{1, 16, 23, 23, 200, 7, 7, 2, 2, P4(3), 1, 1, true},        /* 7x7 stride 2 */
	{2, 64, 9, 9, 96, 3, 3, 1, 1, P4(2), 2, 1, true},           /* dilation 2 */
	{2, 128, 7, 9, 204, 3, 3, 2, 2, P4(1), 1, 4, true},         /* 4 groups of 32 -> 51: scalar stores */
	{1, 8, 5, 5, 8, 3, 3, 1, 1, P4(1), 1, 1, false},            /* C = 8, a single partial tile */
	{1, 256, 14, 14, 512, 1, 1, 1, 1, P4(0), 1, 1, true},       /* ResNet-50 layer3 1x1 at batch 1 */
	{2, 40, 15, 15, 100, 3, 3, 2, 2, {1, 0, 2, 1}, 1, 1, true}, /* asymmetric padding */
	{4, 64, 28, 28, 128, 3, 3, 1, 1, P4(1), 1, 1, true},        /* several tiles and many slices */
	{2, 256, 10, 10, 264, 3, 3, 1, 1, P4(1), 1, 1, true},       /* 264 channels: a partial 256-wide tile */
};

/* variant 7 configs (tile_k stays the kernel's) */
static const cg_config cfgs[] = {
	{.variant = 7, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4},
	{.variant = 7, .tile_m = 128, .tile_n = 256, .warps = 8, .stages = 4},
	{.variant = 7, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 3},
	{.variant = 7, .tile_m = 256, .tile_n = 128, .warps = 8, .stages = 3},
	{.variant = 7, .tile_m = 64, .tile_n = 128, .warps = 8, .stages = 5, .split_k = 2},
	{.variant = 7, .tile_m = 64, .tile_n = 48, .warps = 16, .stages = 3, .split_k = 4},
	{.variant = 7, .tile_m = 192, .tile_n = 80, .warps = 12, .stages = 6},
};

/* variant 8 (a producer warpgroup; f16/bf16): 1 to 3 consumer
 * warpgroups, 1 or 2 m64 tiles each, tile_n 48 to 256, 2 to 8 stages,
 * and its own default (variant alone) */
static const cg_config wscfgs[] = {
	{.variant = 8},
	{.variant = 8, .tile_m = 128, .tile_n = 256, .warps = 8, .stages = 4},
	{.variant = 8, .tile_m = 256, .tile_n = 128, .warps = 8, .stages = 4},
	{.variant = 8, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 6},
	{.variant = 8, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 8},
	{.variant = 8, .tile_m = 128, .tile_n = 48, .warps = 4, .stages = 3},
	{.variant = 8, .tile_m = 192, .tile_n = 80, .warps = 12, .stages = 5},
	{.variant = 8, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 2},
};

/* variant 9 (split-K over a cluster of split_k blocks): 2 to 8 blocks
 * (3: slices not a multiple), one or two warpgroups, tiles 64 to 128
 * rows and 32 to 128 channels, its own default (variant alone) */
static const cg_config clcfgs[] = {
	{.variant = 9},
	{.variant = 9, .tile_m = 64, .tile_n = 32, .warps = 4, .stages = 6, .split_k = 8},
	{.variant = 9, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 6, .split_k = 3},
	{.variant = 9, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4, .split_k = 2},
	{.variant = 9, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 4, .split_k = 4},
};

int main(int argc, char **argv)
{
	compile_only = argc > 1 && !strcmp(argv[1], "compile");
	if (!compile_only) {
		if (!gpu_available())
			return gpu_done();
		if (gpu_device_sm() != 90) {
			printf("skipped: the wgmma kernel needs sm_90 (this device is sm_%d)\n", gpu_device_sm());
			gpu_done();
			return GPU_SKIP;
		}
	}
	size_t nc = SN_COUNT(cfgs);
	for (size_t i = 0; i < SN_COUNT(grid); i++) {
		conv(&grid[i], IR_BF16, false, NULL, false);
		for (size_t k = 0; k < nc; k++)
			if ((i + k) % 2 == 0 || compile_only)
				conv(&grid[i], IR_BF16, false, &cfgs[k], false);
		conv(&grid[i], IR_F16, false, NULL, false);
		conv(&grid[i], IR_F16, false, &cfgs[i % nc], false);
		conv(&grid[i], IR_F32, true, NULL, false);
		conv(&grid[i], IR_F32, true, &cfgs[(i + 3) % nc], false);
		for (size_t k = 0; k < SN_COUNT(wscfgs); k++)
			if ((i + k) % 2 == 0 || compile_only)
				conv(&grid[i], IR_BF16, false, &wscfgs[k], false);
		conv(&grid[i], IR_F16, false, &wscfgs[(i + 1) % SN_COUNT(wscfgs)], false);
		for (size_t k = 0; k < SN_COUNT(clcfgs); k++)
			if ((i + k) % 2 == 0 || compile_only)
				conv(&grid[i], IR_BF16, false, &clcfgs[k], false);
		conv(&grid[i], IR_F16, false, &clcfgs[(i + 1) % SN_COUNT(clcfgs)], false);
		conv(&grid[i], IR_F32, true, &clcfgs[(i + 2) % SN_COUNT(clcfgs)], false);
	}
	/* ResNet-50's layer 4 at batch 1: its 3x3 and 1x1s by default (split
	 * over clusters of 8: 72 and 32 slices) */
	static const cspec l4[] = {
		{1, 512, 7, 7, 512, 3, 3, 1, 1, P4(1), 1, 1, true},
		{1, 2048, 7, 7, 512, 1, 1, 1, 1, P4(0), 1, 1, true},
		{1, 1024, 14, 14, 2048, 1, 1, 2, 2, P4(0), 1, 1, false},
	};
	for (size_t i = 0; i < SN_COUNT(l4); i++) {
		conv(&l4[i], IR_BF16, false, NULL, false);
		conv(&l4[i], IR_F32, true, NULL, false);
	}
	conv(&l4[0], IR_BF16, false, NULL, true);
	conv(&l4[1], IR_F16, false, NULL, true);
	/* the fusion epilogue: staged 16-byte stores, k groups, scalar stores */
	conv(&grid[0], IR_BF16, false, NULL, true);
	conv(&grid[5], IR_BF16, false, &cfgs[0], true);
	conv(&grid[1], IR_F16, false, &cfgs[4], true);
	conv(&grid[3], IR_F32, true, NULL, true);
	conv(&grid[9], IR_BF16, false, &cfgs[5], true);
	conv(&grid[10], IR_BF16, false, &cfgs[3], true);
	conv(&grid[0], IR_BF16, false, &wscfgs[0], true);
	conv(&grid[5], IR_BF16, false, &wscfgs[1], true);
	conv(&grid[9], IR_F16, false, &wscfgs[2], true);
	conv(&grid[4], IR_BF16, false, &wscfgs[5], true);
	conv(&grid[5], IR_BF16, false, &clcfgs[2], true);
	conv(&grid[1], IR_F16, false, &clcfgs[1], true);
	conv(&grid[3], IR_F32, true, &clcfgs[3], true);
	if (compile_only) {
		rt_nvrtc *nv = NULL;
		sn_err e = {0};
		if (rt_nvrtc_open(&nv, &e) != SN_OK) {
			printf("skipped: %s\n", e.msg);
			return GPU_SKIP;
		}
		rt_compile_stats cs = {0};
		int rc = rt_compile_all(nv, jobs, njobs, 90, NULL, 0, NULL, NULL, NULL, &cs, &e);
		if (rc)
			printf("FAIL: %s\n", e.msg);
		printf("conv_wg: %zu kernels rendered, %zu compiled for sm_90a in %.1f s\n", njobs, cs.compiled,
		       cs.seconds);
		rt_jobs_free(jobs, njobs);
		for (size_t i = 0; i < njobs; i++) {
			free((char *)jobs[i].name);
			free((char *)jobs[i].src);
		}
		rt_nvrtc_close(nv);
		return rc || compile_failures ? 1 : 0;
	}
	return gpu_done();
}
