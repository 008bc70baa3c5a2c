/* test_cuda_conv_dw.c: the tiled depthwise conv2d (variant 10,
 * codegen/cg_conv_dw.c) on CUDA against the reference interpreter, with
 * fresh random inputs and the arena poisoned (gpu_check.c):
 *  - ConvNeXt-T's 7x7 depthwise convs at batch 8 (96 channels at 56x56,
 *    192 at 28, 384 at 14, 768 at 7) and MobileNetV3 / EfficientNet's
 *    (3x3 and 5x5, strides 1 and 2), NHWC and NCHW, bf16 and f32 (f16 on
 *    some), by default (which must pick variant 10);
 *  - the odd cases: channel counts that are no multiple of a 16-byte
 *    vector (4, 2 and 1 channel vectors), asymmetric padding, dilation 2,
 *    9x9 and 11x11 filters (the weights read from shared memory), outputs
 *    narrower than a thread's 4 columns, a single channel;
 *  - the fusion epilogue relu(v + residual) (as test_cuda_conv_tc.c).
 * Then, on the model shapes, the bandwidth: bytes in + out over the median
 * of 50 launches (CUDA events, back to back, as `sinter bench` times), for
 * the simple kernel (variant 5, the default before) and the tiled one,
 * beside a device-to-device copy of the same bytes measured the same way
 * in this process (the copy floor): "% of copy" is the issue-26 yardstick
 * (>= 70 %); in bf16, other tiles of variant 10 too (sweep_*, checked on
 * the odd cases), to choose the rule by. The timing lines are reports,
 * not checks; SINTER_DW_NO_TIMING=1 skips them.
 * With the arguments "compile SM" it needs no GPU: every case is rendered
 * and a quarter of them (the kernels do not depend on the target: every
 * fourth case for sm_90, the ones two after those for sm_80, to keep CI
 * at about 20 s of NVRTC) are NVRTC-compiled for sm_SM in one batch
 * (codegen.nvrtc.conv_dw.sm_80 and .sm_90, strict: no spills);
 * SINTER_DW_DUMP=dir writes their sources there. */
#include "gpu_conv.h"

#include "runtime/cuda.h"
#include "runtime/cuda_nvrtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef gpu_conv_spec cspec;

#define P4(p) {p, p, p, p}
#define DW(n, c, h, k, s, p, d, b) {n, c, h, h, c, k, k, s, s, P4(p), d, c, b}
/* the models' shapes (timed) */
static const cspec models[] = {
	DW(8, 96, 56, 7, 1, 3, 1, true),   /* ConvNeXt-T stage 1 */
	DW(8, 192, 28, 7, 1, 3, 1, true),  /* stage 2 */
	DW(8, 384, 14, 7, 1, 3, 1, true),  /* stage 3 */
	DW(8, 768, 7, 7, 1, 3, 1, true),   /* stage 4 */
	DW(8, 32, 112, 3, 1, 1, 1, false), /* MobileNetV3 / EfficientNet-B0 3x3 */
	DW(8, 144, 56, 3, 2, 1, 1, false), /* 3x3 stride 2 */
	DW(8, 240, 28, 5, 1, 2, 1, false), /* 5x5 */
	DW(8, 672, 14, 5, 2, 2, 1, false), /* 5x5 stride 2 */
};
static const char *const model_names[] = {"convnext 96@56 7x7",   "convnext 192@28 7x7", "convnext 384@14 7x7",
					  "convnext 768@7 7x7",   "mbv3 32@112 3x3",     "effnet 144@56 3x3 s2",
					  "effnet 240@28 5x5",    "effnet 672@14 5x5 s2"};
/* the odd cases (checked, not timed) */
static const cspec odd[] = {
	{2, 36, 17, 19, 36, 3, 3, 1, 1, P4(1), 1, 36, false},          /* 36 channels: bf16 vectors of 4 */
	{1, 6, 9, 11, 6, 3, 3, 1, 1, P4(1), 1, 6, true},               /* vectors of 2 */
	{3, 5, 13, 13, 5, 3, 3, 2, 2, {1, 0, 2, 1}, 1, 5, true},       /* single channels, asymmetric padding */
	{2, 64, 20, 23, 64, 3, 3, 1, 1, P4(2), 2, 64, true},           /* dilation 2 */
	{2, 32, 15, 15, 32, 9, 9, 1, 1, P4(4), 1, 32, true},           /* 9x9 */
	{1, 16, 21, 21, 16, 11, 11, 1, 1, P4(5), 1, 16, false},        /* 11x11: weights from shared memory */
	{1, 8, 3, 2, 8, 3, 3, 1, 1, P4(1), 1, 8, true},                /* 2 columns out */
	{2, 48, 31, 31, 48, 7, 7, 2, 2, P4(3), 1, 48, true},           /* 7x7 stride 2 */
	{1, 24, 10, 37, 24, 1, 5, 1, 3, {0, 2, 0, 1}, 1, 24, true},    /* 1x5, stride (1, 3) */
	{2, 200, 9, 9, 200, 3, 3, 1, 1, P4(0), 1, 200, false},         /* no padding, 25 vectors */
};

static bool compile_only;
static int compile_sm;
static rt_job jobs[512];
static char *labels[512]; /* jobs[i]'s case */
static size_t njobs;
static int compile_failures;
static unsigned compile_seq; /* compile mode: cases rendered so far */

static const cg_config v10 = {.variant = 10}, v5 = {.variant = 5};
/* other tiles of variant 10 (tile_m rows x tile_n columns, tile_k outputs
 * a thread along W), checked on the odd cases and timed on the models'
 * shapes beside the default's, for choosing the rule */
static const cg_config sweep_nhwc[] = {
	{.variant = 10, .tile_m = 4, .tile_n = 16, .tile_k = 8},  {.variant = 10, .tile_m = 8, .tile_n = 16, .tile_k = 8},
	{.variant = 10, .tile_m = 16, .tile_n = 16, .tile_k = 8}, {.variant = 10, .tile_m = 8, .tile_n = 32, .tile_k = 8},
	{.variant = 10, .tile_m = 8, .tile_n = 16, .tile_k = 4},  {.variant = 10, .tile_m = 2, .tile_n = 8, .tile_k = 8},
};
static const cg_config sweep_nchw[] = {
	{.variant = 10, .tile_m = 4, .tile_n = 64, .tile_k = 8},  {.variant = 10, .tile_m = 16, .tile_n = 64, .tile_k = 8},
	{.variant = 10, .tile_m = 32, .tile_n = 32, .tile_k = 8}, {.variant = 10, .tile_m = 8, .tile_n = 64, .tile_k = 4},
	{.variant = 10, .tile_m = 8, .tile_n = 32, .tile_k = 4, .vec = 2},
};

static int render(const ir_graph *g, int sm, const cg_config *want, bool fuse, cg_step *st, sn_err *e)
{
	cg_target tg = {.sm = sm, .conv_kernels = true};
	int rc = gpu_conv_render(g, &tg, want, fuse, st, e);
	int v = want ? want->variant : 10; /* the default must be the tiled kernel */
	if (!rc && st->k.cfg.variant != v) {
		rc = sn_errf(e, SN_EINTERNAL, "test: the conv was rendered with variant %d, not %d", (int)st->k.cfg.variant, v);
		free(st->k.src);
	}
	return rc;
}

static struct {
	const cg_config *want;
	bool fuse;
} hook;

static int rerender(const ir_graph *g, cg_plan *p, sn_err *e)
{
	cg_step st;
	int rc = render(g, p->sm, hook.want, hook.fuse, &st, e);
	return rc ? rc : gpu_conv_patch(p, &st, hook.fuse, e);
}

static void label_of(char *label, size_t n, const cspec *c, ir_dtype t, ir_layout lay, const cg_config *want,
		     bool fuse)
{
	char cfg[96] = "default";
	if (want)
		cg_config_str(want, cfg, sizeof cfg);
	snprintf(label, n, "dw%s %s %s n%lld c%lld %lldx%lld k%lldx%lld s%lldx%lld d%lld%s [%s]", fuse ? " fused" : "",
		 ir_dtype_name(t), ir_layout_name(lay), (long long)c->n, (long long)c->c, (long long)c->h,
		 (long long)c->w, (long long)c->kh, (long long)c->kw, (long long)c->sh, (long long)c->sw,
		 (long long)c->dil, c->bias ? " bias" : "", cfg);
}

/* Checks c against the reference (or, compile mode, renders it). */
static void conv(const cspec *c, ir_dtype t, ir_layout lay, const cg_config *want, bool fuse)
{
	ir_graph *g = ir_graph_new();
	ir_ref r = gpu_conv_graph(g, c, t, lay, fuse);
	char label[192];
	label_of(label, sizeof label, c, t, lay, want, fuse);
	if (!gpu_built(g, r, label)) {
		compile_failures += compile_only;
		return;
	}
	ir_add_output(g, r);
	if (compile_only) {
		cg_step st;
		sn_err e = {0};
		if (render(g, compile_sm, want, fuse, &st, &e)) {
			printf("%-80s FAIL: %s\n", label, e.msg);
			compile_failures++;
		} else if (compile_seq++ % 4 != (compile_sm == 90 ? 0 : 2)) {
			free(st.k.src); /* another target's share, or none (the source does not depend on it) */
		} else if (njobs < SN_COUNT(jobs)) {
			char *name = malloc(sizeof st.k.name);
			memcpy(name, st.k.name, sizeof st.k.name);
			labels[njobs] = strdup(label);
			jobs[njobs++] = (rt_job){.name = name, .src = st.k.src};
		} else {
			free(st.k.src);
		}
		ir_graph_free(g);
		return;
	}
	hook.want = want;
	hook.fuse = fuse;
	gpu_plan_hook = rerender;
	gpu_plain_plan = true;
	gpu_compare(g, gpu_tol(t), label);
	gpu_plan_hook = NULL;
	gpu_plain_plan = false;
}

/* The median of 50 device-to-device copies of n bytes, back to back,
 * each between two events (as rt_model_time times a plan); -1 on error. */
static double copy_ms(size_t n)
{
	rt_cuda *d = gpu_device();
	CUdeviceptr a = 0, b = 0;
	CUevent ev[51];
	double ms[50], med = -1;
	int made = 0;
	if (d->d.MemAlloc(&a, n) || d->d.MemAlloc(&b, n))
		goto out;
	for (; made < 51; made++)
		if (d->d.EventCreate(&ev[made], 0))
			goto out;
	d->d.MemsetD8Async(a, 0x3c, n, d->stream);
	for (int i = 0; i < 10; i++)
		d->d.MemcpyDtoDAsync(b, a, n, d->stream);
	d->d.EventRecord(ev[0], d->stream);
	for (int i = 0; i < 50; i++) {
		d->d.MemcpyDtoDAsync(b, a, n, d->stream);
		d->d.EventRecord(ev[i + 1], d->stream);
	}
	if (d->d.EventSynchronize(ev[50]))
		goto out;
	for (int i = 0; i < 50; i++) {
		float f = 0;
		d->d.EventElapsedTime(&f, ev[i], ev[i + 1]);
		ms[i] = f;
	}
	for (int i = 1; i < 50; i++) /* insertion sort */
		for (int k = i; k > 0 && ms[k] < ms[k - 1]; k--) {
			double x = ms[k];
			ms[k] = ms[k - 1];
			ms[k - 1] = x;
		}
	med = ms[25];
out:
	for (int i = 0; i < made; i++)
		d->d.EventDestroy(ev[i]);
	if (a)
		d->d.MemFree(a);
	if (b)
		d->d.MemFree(b);
	return med;
}

/* The median time of c's conv alone with config want, on random inputs;
 * -1 when it failed (printed). */
static double time_conv(const cspec *c, ir_dtype t, ir_layout lay, const cg_config *want)
{
	ir_graph *g = ir_graph_new();
	ir_ref r = gpu_conv_graph(g, c, t, lay, false);
	if (r == IR_NONE) {
		ir_graph_free(g);
		return -1;
	}
	ir_add_output(g, r);
	ir_tensor *vals = calloc(g->nnodes, sizeof *vals), ins[3] = {{0}}, outs[1] = {{0}};
	uint64_t s = gpu_seed() ^ 0x5deece66dull;
	for (uint32_t k = 0; k < g->ninputs && k < 3; k++) {
		const ir_node *n = &g->nodes[g->inputs[k]];
		size_t cnt = (size_t)ir_numel(&n->shape), nb = cnt * ir_dtype_size(n->dtype);
		ins[k] = (ir_tensor){n->dtype, n->shape, malloc(nb), nb};
		for (size_t x = 0; x < cnt; x++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			ir_store(n->dtype, ins[k].data, x, (double)(s >> 11) * 0x1.0p-53 * 2 - 1);
		}
		vals[g->inputs[k]] = ins[k];
	}
	double ms = -1;
	sn_err e = {0};
	hook.want = want;
	hook.fuse = false;
	gpu_plan_hook = rerender;
	gpu_plain_plan = true;
	gpu_set_timing(50, &ms);
	int rc = gpu_build_run(gpu_device(), g, vals, ins, false, outs, &e);
	gpu_set_timing(0, NULL);
	gpu_plan_hook = NULL;
	gpu_plain_plan = false;
	if (rc) {
		printf("time: FAIL %s\n", e.msg);
		ms = -1;
	}
	free(outs[0].data);
	for (int k = 0; k < 3; k++)
		free(ins[k].data);
	free(vals);
	ir_graph_free(g);
	return ms;
}

static void bandwidth(void)
{
	printf("\n%-22s %-5s %-4s %9s | %-26s | %-26s | %s\n", "shape (batch 8)", "dtype", "lay", "MB", "variant 5 (simple)",
	       "variant 10 (tiled)", "copy of the same bytes");
	double big = copy_ms((size_t)1 << 30);
	static const ir_dtype dts[] = {IR_BF16, IR_F32};
	for (size_t i = 0; i < SN_COUNT(models); i++)
		for (size_t d = 0; d < SN_COUNT(dts); d++)
			for (int l = 0; l < 2; l++) {
				const cspec *c = &models[i];
				ir_layout lay = l ? IR_NCHW : IR_NHWC;
				int64_t ho = (c->h + 2 * c->pad[0] - c->kh) / c->sh + 1;
				double es = (double)ir_dtype_size(dts[d]);
				double bytes = es * (double)c->n * (double)c->c * ((double)c->h * c->w + (double)ho * ho);
				double t5 = time_conv(c, dts[d], lay, &v5), t10 = time_conv(c, dts[d], lay, &v10);
				double tc = copy_ms((size_t)(bytes / 2));
				double g5 = bytes / t5 / 1e6, g10 = bytes / t10 / 1e6, gc = bytes / tc / 1e6;
				printf("%-22s %-5s %-4s %9.2f | %7.4f ms %6.0f GB/s %3.0f%% | %7.4f ms %6.0f GB/s %3.0f%% | "
				       "%7.4f ms %6.0f GB/s\n",
				       model_names[i], ir_dtype_name(dts[d]), l ? "nchw" : "nhwc", bytes / 1e6, t5, g5,
				       100 * g5 / gc, t10, g10, 100 * g10 / gc, tc, gc);
				fflush(stdout);
				if (dts[d] != IR_BF16)
					continue;
				const cg_config *sw = l ? sweep_nchw : sweep_nhwc;
				size_t ns = l ? SN_COUNT(sweep_nchw) : SN_COUNT(sweep_nhwc);
				for (size_t k = 0; k < ns; k++) {
					char cfg[96];
					cg_config_str(&sw[k], cfg, sizeof cfg);
					double tk = time_conv(c, dts[d], lay, &sw[k]);
					printf("    %-48s %7.4f ms %6.0f GB/s %3.0f%%\n", cfg, tk, bytes / tk / 1e6,
					       100 * (bytes / tk / 1e6) / gc);
				}
			}
	printf("copy floor (1 GiB device to device): %.0f GB/s\n", big > 0 ? 2.0 * (double)((size_t)1 << 30) / big / 1e6 : -1.0);
}

int main(int argc, char **argv)
{
	compile_only = argc > 2 && !strcmp(argv[1], "compile");
	if (compile_only)
		compile_sm = atoi(argv[2]);
	else if (!gpu_available())
		return gpu_done();
	static const ir_dtype all[] = {IR_BF16, IR_F32, IR_F16};
	for (size_t i = 0; i < SN_COUNT(models); i++)
		for (size_t d = 0; d < 2 + (i % 3 == 0); d++)
			for (int l = 0; l < 2; l++)
				conv(&models[i], all[d], l ? IR_NCHW : IR_NHWC, NULL, false);
	for (size_t i = 0; i < SN_COUNT(odd); i++)
		for (size_t d = 0; d < 3; d++)
			for (int l = 0; l < 2; l++)
				if (!compile_only || d < 2 || i % 2 == 0)
					conv(&odd[i], all[d], l ? IR_NCHW : IR_NHWC, (i + d) % 2 ? &v10 : NULL, false);
	for (size_t k = 0; k < SN_COUNT(sweep_nhwc); k++)
		conv(&odd[(k * 3) % SN_COUNT(odd)], k % 2 ? IR_F32 : IR_BF16, IR_NHWC, &sweep_nhwc[k], false);
	for (size_t k = 0; k < SN_COUNT(sweep_nchw); k++)
		conv(&odd[(k * 3 + 1) % SN_COUNT(odd)], k % 2 ? IR_F32 : IR_BF16, IR_NCHW, &sweep_nchw[k], false);
	conv(&models[0], IR_BF16, IR_NHWC, NULL, true);
	conv(&models[5], IR_F32, IR_NCHW, NULL, true);
	conv(&odd[0], IR_BF16, IR_NHWC, &v10, true);
	conv(&odd[2], IR_F16, IR_NHWC, NULL, true);
	conv(&odd[4], IR_F32, IR_NCHW, NULL, true);
	if (compile_only) {
		rt_nvrtc *nv = NULL;
		sn_err e = {0};
		if (rt_nvrtc_open(&nv, &e) != SN_OK) {
			printf("skipped: %s\n", e.msg);
			return GPU_SKIP;
		}
		rt_compile_stats cs = {0};
		int rc = rt_compile_all(nv, jobs, njobs, compile_sm, NULL, 0, getenv("SINTER_DW_DUMP"), NULL, NULL, &cs, &e);
		if (rc)
			printf("FAIL: %s\n", e.msg);
		for (size_t i = 0; rc && i < njobs; i++)
			if (strstr(e.msg, jobs[i].name))
				printf("(kernel %s is %s)\n", jobs[i].name, labels[i]);
		printf("conv_dw: %zu kernels rendered, %zu compiled for sm_%d in %.1f s\n", njobs, cs.compiled, compile_sm,
		       cs.seconds);
		rt_jobs_free(jobs, njobs);
		for (size_t i = 0; i < njobs; i++) {
			free((char *)jobs[i].name);
			free((char *)jobs[i].src);
			free(labels[i]);
		}
		rt_nvrtc_close(nv);
		return rc || compile_failures ? 1 : 0;
	}
	if (!getenv("SINTER_DW_NO_TIMING"))
		bandwidth();
	return gpu_done();
}
