/* conv_bench.c: sinter's conv2d kernels alone on the convolutions of
 * ResNet-50 (torchvision, batch 32, 224x224, NHWC as the layout pass makes
 * it, bias from the folded batch norm), in bf16, or f32 under TF32 with
 * --tf32. benchmarks/conv_bench.py runs it beside cuDNN and prints the
 * table; alone it prints one tab-separated line per shape and config:
 *
 *   conv_bench [--tf32] [--batch N] [--reps R] [--iters I] [--skip STR] [CONFIG ...]
 *
 * CONFIG: "default" (the renderer's choice, a cuBLASLt product for the 1x1
 * stride-1 convs; always run first), "kernel" (the generated kernel's
 * default, 1x1 convs included) or TMxTNxTKwWsS, e.g. 128x128x32w8s4
 * (variant 4 with those fields; 1x1 convs on the generated kernel too),
 * with an optional kG suffix for G k groups (split_k), or vN: variant N
 * with its own defaults (v3 the older mma.sync kernel, v6 the few-channel
 * kernel), or wgTMxTNwWsS[kG] for the wgmma kernel (variant 7, sm_90),
 * e.g. wg128x256w8s4, or wpTMxTNwWsS for variant 8 (a producer
 * warpgroup beside W consumer warps), or wcTMxTNwWsSkG for variant 9
 * (split-K over a cluster of G blocks; "wc" alone: its own default). --skip STR leaves
 * out the shapes whose name contains STR ("1x1 ": the stride-1 1x1s). A
 * config the renderer refuses for a shape is reported as such. Each
 * measurement is one plan holding R copies of the conv (same inputs,
 * distinct outputs) launched back to back, timed with CUDA events over I
 * calls after warm-up; the median call over R is one conv's time. Inputs
 * are random (never zeros). Columns: name, count in the model, M, N, K,
 * GFLOP of one conv, config asked, config used, ms, TFLOP/s. */
#include "codegen/cg_render.h"
#include "runtime/cuda_exec.h"
#include "runtime/cuda_nvrtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct shape {
	const char *name;
	int count;
	int64_t c, hw, o, k, s;
} shape;

/* every distinct conv of ResNet-50 (stride on the 3x3), with how often it
 * occurs: 53 convs */
static const shape shapes[] = {
	{"stem 7x7/2 3-64 @224", 1, 3, 224, 64, 7, 2},
	{"l1 1x1 64-64 @56", 1, 64, 56, 64, 1, 1},
	{"l1 3x3 64-64 @56", 3, 64, 56, 64, 3, 1},
	{"l1 1x1 64-256 @56", 4, 64, 56, 256, 1, 1},
	{"l1 1x1 256-64 @56", 2, 256, 56, 64, 1, 1},
	{"l2 1x1 256-128 @56", 1, 256, 56, 128, 1, 1},
	{"l2 3x3/2 128-128 @56", 1, 128, 56, 128, 3, 2},
	{"l2 1x1 128-512 @28", 4, 128, 28, 512, 1, 1},
	{"l2 1x1/2 256-512 @56", 1, 256, 56, 512, 1, 2},
	{"l2 1x1 512-128 @28", 3, 512, 28, 128, 1, 1},
	{"l2 3x3 128-128 @28", 3, 128, 28, 128, 3, 1},
	{"l3 1x1 512-256 @28", 1, 512, 28, 256, 1, 1},
	{"l3 3x3/2 256-256 @28", 1, 256, 28, 256, 3, 2},
	{"l3 1x1 256-1024 @14", 6, 256, 14, 1024, 1, 1},
	{"l3 1x1/2 512-1024 @28", 1, 512, 28, 1024, 1, 2},
	{"l3 1x1 1024-256 @14", 5, 1024, 14, 256, 1, 1},
	{"l3 3x3 256-256 @14", 5, 256, 14, 256, 3, 1},
	{"l4 1x1 1024-512 @14", 1, 1024, 14, 512, 1, 1},
	{"l4 3x3/2 512-512 @14", 1, 512, 14, 512, 3, 2},
	{"l4 1x1 512-2048 @7", 3, 512, 7, 2048, 1, 1},
	{"l4 1x1/2 1024-2048 @14", 1, 1024, 14, 2048, 1, 2},
	{"l4 1x1 2048-512 @7", 2, 2048, 7, 512, 1, 1},
	{"l4 3x3 512-512 @7", 2, 512, 7, 512, 3, 1},
};

static uint64_t rng = 0x5eed;
static float uniform(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (float)((double)(z >> 11) * 0x1.0p-53) * 2 - 1;
}

/* Re-renders every conv step of p (graph g) with want. */
static int rerender(const ir_graph *g, cg_plan *p, const cg_target *t, const cg_config *want, cg_config *used,
		    sn_err *e)
{
	uint32_t s = 0;
	for (uint32_t i = 0; i < g->nnodes && s < p->nsteps; i++) {
		if (g->nodes[i].op != IR_OP_conv2d)
			continue;
		cg_step st = {.node = i};
		if (cg_render_conv(g, i, t, want, &st, e))
			return e->code;
		cg_pstep *ps = &p->steps[s++];
		cg_kern *k = &p->kerns[ps->kern];
		if (strcmp(k->name, st.k.name)) {
			free(k->src);
			k->src = st.k.src;
			memcpy(k->name, st.k.name, sizeof k->name);
		} else {
			free(st.k.src);
		}
		k->cfg = st.k.cfg;
		*used = st.k.cfg;
		memcpy(ps->grid, st.k.grid, sizeof ps->grid);
		memcpy(ps->block, st.k.block, sizeof ps->block);
		ps->smem = st.k.smem;
	}
	return SN_OK;
}

static int parse_cfg(const char *s, cg_config *c)
{
	int tm, tn, tk, w, st, sk = 0, v;
	if (!strncmp(s, "wp", 2)) { /* the wgmma kernel with a producer warpgroup: wpTMxTNwWsS */
		if (sscanf(s + 2, "%dx%dw%ds%d", &tm, &tn, &w, &st) < 4)
			return -1;
		*c = (cg_config){.variant = 8, .tile_m = tm, .tile_n = tn, .warps = w, .stages = st};
		return 0;
	}
	if (!strncmp(s, "wc", 2)) { /* split-K over a cluster of G blocks: wcTMxTNwWsSkG, or wc alone */
		if (!s[2]) {
			*c = (cg_config){.variant = 9};
			return 0;
		}
		if (sscanf(s + 2, "%dx%dw%ds%dk%d", &tm, &tn, &w, &st, &sk) < 5)
			return -1;
		*c = (cg_config){.variant = 9, .tile_m = tm, .tile_n = tn, .warps = w, .stages = st, .split_k = sk};
		return 0;
	}
	if (!strncmp(s, "wg", 2)) { /* the wgmma kernel: wgTMxTNwWsS[kG] */
		if (sscanf(s + 2, "%dx%dw%ds%dk%d", &tm, &tn, &w, &st, &sk) < 4)
			return -1;
		*c = (cg_config){.variant = 7, .tile_m = tm, .tile_n = tn, .warps = w, .stages = st, .split_k = sk};
		return 0;
	}
	if (sscanf(s, "v%d", &v) == 1 && v > 0) { /* a variant with its own defaults */
		*c = (cg_config){.variant = v};
		return 0;
	}
	if (sscanf(s, "%dx%dx%dw%ds%dk%d", &tm, &tn, &tk, &w, &st, &sk) < 5)
		return -1;
	*c = (cg_config){.variant = 4, .tile_m = tm, .tile_n = tn, .tile_k = tk, .warps = w, .stages = st, .split_k = sk};
	return 0;
}

static void bench(rt_cuda *dev, rt_nvrtc *nv, const shape *sh, int64_t batch, bool tf32, int reps, int iters,
		  const char *cfgname)
{
	sn_err e = {0};
	cg_config want = {0};
	bool dflt = strcmp(cfgname, "default") == 0, kern = strcmp(cfgname, "kernel") == 0;
	if (!dflt && !kern && parse_cfg(cfgname, &want)) {
		printf("%s\tbad config %s\n", sh->name, cfgname);
		return;
	}
	ir_dtype t = tf32 ? IR_F32 : IR_BF16;
	ir_graph *g = ir_graph_new();
	int64_t pad = sh->k / 2, ho = (sh->hw + 2 * pad - sh->k) / sh->s + 1;
	ir_shape xs = {4, {batch, sh->hw, sh->hw, sh->c}}, ws = {4, {sh->o, sh->k, sh->k, sh->c}}, bs = {1, {sh->o}};
	ir_ref ins[3] = {ir_add_input(g, "x", t, &xs, &e), ir_add_input(g, "w", t, &ws, &e),
			 ir_add_input(g, "b", t, &bs, &e)};
	ir_attrs a;
	ir_attrs_init(IR_OP_conv2d, &a);
	a.layout = IR_NHWC;
	a.stride = (ir_ints){2, {sh->s, sh->s}};
	a.pad = (ir_ints){4, {pad, pad, pad, pad}};
	a.dilation = (ir_ints){2, {1, 1}};
	a.groups = 1;
	for (int r = 0; r < reps; r++)
		ir_add_output(g, ir_add(g, IR_OP_conv2d, ins, 3, &a, &e));
	int64_t m = batch * ho * ho, kk = sh->c * sh->k * sh->k;
	double gflop = 2.0 * (double)m * (double)sh->o * (double)kk * 1e-9;
	cg_target tg = {.sm = dev->sm, .tf32 = tf32, .conv_kernels = !dflt};
	cg_plan *p = NULL;
	rt_model *md = NULL;
	rt_job *jobs = NULL;
	void *host[3] = {0};
	double *ms = calloc((size_t)iters, sizeof *ms);
	cg_config used = {0};
	int rc = e.code ? e.code : cg_lower(g, NULL, &tg, &p, &e);
	bool blas = !rc && p->nsteps && p->steps[0].kind == CG_MATMUL;
	if (!rc && !blas)
		used = p->kerns[0].cfg;
	if (!rc && !dflt && !kern)
		rc = rerender(g, p, &tg, &want, &used, &e);
	if (!rc && !(jobs = calloc(p->nkerns ? p->nkerns : 1, sizeof *jobs)))
		rc = sn_errf(&e, SN_EINTERNAL, "out of memory");
	for (uint32_t i = 0; !rc && i < p->nkerns; i++)
		jobs[i] = (rt_job){.name = p->kerns[i].name, .src = p->kerns[i].src};
	if (!rc)
		rc = rt_compile_all(nv, jobs, p->nkerns, dev->sm, NULL, 0, NULL, NULL, NULL, NULL, &e);
	for (uint32_t i = 0; !rc && i < p->nkerns; i++) {
		p->kerns[i].cubin = jobs[i].cubin;
		p->kerns[i].cubin_size = jobs[i].size;
		jobs[i].cubin = NULL;
	}
	rt_load_opts lo = {0};
	if (!rc)
		rc = rt_model_load(dev, p, &lo, &md, NULL, &e);
	for (int i = 0; !rc && i < 3; i++) {
		const ir_node *n = &g->nodes[ins[i]];
		size_t count = (size_t)ir_numel(&n->shape), nb = count * ir_dtype_size(t);
		host[i] = malloc(nb);
		if (!host[i]) {
			rc = sn_errf(&e, SN_EINTERNAL, "out of memory");
			break;
		}
		for (size_t k = 0; k < count; k++)
			ir_store(t, host[i], k, uniform() * (i == 1 ? 0.1 : 1.0));
	}
	void **outs = calloc((size_t)reps, sizeof *outs);
	size_t ob = (size_t)(m * sh->o) * ir_dtype_size(t);
	for (int r = 0; !rc && r < reps; r++)
		if (!(outs[r] = malloc(ob)))
			rc = sn_errf(&e, SN_EINTERNAL, "out of memory");
	if (!rc)
		rc = rt_model_run(md, (const void *const *)host, outs, &e);
	if (!rc)
		rc = rt_model_time(md, 3, iters, ms, &e);
	char ucfg[96] = "cublasLt";
	if (!blas)
		cg_config_str(&used, ucfg, sizeof ucfg);
	if (rc) {
		printf("%s\t%d\t%lld\t%lld\t%lld\t%.4f\t%s\t-\t-\t-\tfailed: %s\n", sh->name, sh->count, (long long)m,
		       (long long)sh->o, (long long)kk, gflop, cfgname, e.msg);
	} else {
		for (int i = 1; i < iters; i++) /* insertion sort for the median */
			for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) {
				double x = ms[j];
				ms[j] = ms[j - 1];
				ms[j - 1] = x;
			}
		double one = ms[iters / 2] / reps;
		printf("%s\t%d\t%lld\t%lld\t%lld\t%.4f\t%s\t%s\t%.5f\t%.1f\n", sh->name, sh->count, (long long)m,
		       (long long)sh->o, (long long)kk, gflop, cfgname, ucfg, one, gflop / one);
	}
	fflush(stdout);
	for (int r = 0; outs && r < reps; r++)
		free(outs[r]);
	free(outs);
	for (int i = 0; i < 3; i++)
		free(host[i]);
	rt_model_free(md);
	if (jobs && p)
		rt_jobs_free(jobs, p->nkerns);
	free(jobs);
	cg_plan_free(p);
	free(ms);
	ir_graph_free(g);
}

int main(int argc, char **argv)
{
	bool tf32 = false;
	int64_t batch = 32;
	int reps = 10, iters = 20;
	const char *cfgs[32] = {"default"}, *skip = NULL;
	int ncfg = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--tf32"))
			tf32 = true;
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			batch = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--skip") && i + 1 < argc)
			skip = argv[++i];
		else if (argv[i][0] != '-' && ncfg < 32 && strcmp(argv[i], "default"))
			cfgs[ncfg++] = argv[i];
		else {
			fprintf(stderr, "usage: conv_bench [--tf32] [--batch N] [--reps R] [--iters I] [--skip STR] [kernel | TMxTNxTKwWsS[kG] | vN | wgTMxTNwWsS[kG] | wpTMxTNwWsS | wcTMxTNwWsSkG ...]\n");
			return 2;
		}
	}
	if (batch < 1 || reps < 1 || iters < 1) {
		fprintf(stderr, "conv_bench: batch, reps and iters must be >= 1\n");
		return 2;
	}
	sn_err e = {0};
	rt_cuda *dev = NULL;
	rt_nvrtc *nv = NULL;
	if (rt_cuda_open(0, &dev, &e) || rt_nvrtc_open(&nv, &e)) {
		fprintf(stderr, "conv_bench: %s\n", e.msg);
		return 3;
	}
	printf("# %s (sm_%d), %s, batch %lld, %d convs per plan, median of %d calls\n", dev->name, dev->sm,
	       tf32 ? "f32 under tf32" : "bf16", (long long)batch, reps, iters);
	for (size_t i = 0; i < SN_COUNT(shapes); i++)
		for (int c = 0; c < ncfg && !(skip && strstr(shapes[i].name, skip)); c++)
			bench(dev, nv, &shapes[i], batch, tf32, reps, iters, cfgs[c]);
	rt_nvrtc_close(nv);
	rt_cuda_close(dev);
	return 0;
}
