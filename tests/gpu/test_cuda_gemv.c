/* test_cuda_gemv.c: the skinny-product family (codegen/cg_gemv.c) on CUDA.
 *
 * Numerics: decode-shaped products, m in {1, 2, 4, 8, 16} x (k, n) in
 * {(2048, 2048), (2048, 8192), (8192, 2048), (2048, 128256)}, bf16, f16 and
 * f32 (the last shape at m 1 and 16 only in f16 and f32), lowered as a user's graph is (fusion on) and run against the
 * reference interpreter (fp64) on fresh random inputs, the arena poisoned
 * (gpu_check.c): linear with its bias (B n x k), and on the smaller shapes
 * epilogues (silu, a residual add, a cast to f32), matmul with B k x n, and
 * configs (columns per block, warps, units in flight, split-K over 1-8
 * blocks of a cluster). A plan hook checks that every product ran as a gemv
 * kernel.
 *
 * Bandwidth: each product's kernel alone, its weight (B) read once:
 * streaming, copies of every buffer (256 MiB in all at least, several
 * times the L2) launched in turn back to back between two events, gives
 * time and GB/s = B's bytes / time, printed next to the device's copy
 * bandwidth measured here (cuMemcpyDtoDAsync of 1 GiB, read + write bytes
 * / time, median of 20) as a percentage: the target is >= 90 %.
 * The percentage is printed, not checked (timing on a shared machine).
 * "cublas us": the same product on cuBLASLt (the heuristic's algorithm,
 * as a plan's CG_MATMUL step), timed the same streaming way, and its % of
 * the copy bandwidth; the last line counts the cases gemv is faster.
 * "flushed us" is the earlier figure, the median of 50 launches with
 * events around each and a 256 MiB memset before each: that memset leaves
 * the L2 dirty, and (our reading of a ~15 us floor under every small
 * product's time there) its write-back is counted in the launch after it.
 *
 * It sets SINTER_GEMV=1 (the family's default rule is off without it).
 *
 * Usage: gpu_test_cuda_gemv [numerics|bandwidth|sweep] (default: numerics
 * and bandwidth; sweep: bandwidth, then bf16 linears over a grid of configs,
 * each case's best beside its default). */
#include "gpu_check.h"

#include "codegen/cg.h"
#include "codegen/cg_gemv.h"
#include "runtime/cuda_blas.h"
#include "runtime/cuda_nvrtc.h"
#include "runtime/cuda_time.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHAPE GPU_SHAPE

static int failures, ran;
static const int ms[] = {1, 2, 4, 8, 16};
static const int64_t shapes[][2] = {{2048, 2048}, {2048, 8192}, {8192, 2048}, {2048, 128256}}; /* k, n */

/* ---- the plan hook: every product a gemv kernel ---- */
static int gemv_kernels, other_products;
static cg_config asked_cfg;
static bool asked, cfg_taken;

static int check_plan(const ir_graph *g, cg_plan *p, sn_err *e)
{
	(void)g;
	(void)e;
	gemv_kernels = other_products = 0;
	cfg_taken = false;
	for (uint32_t i = 0; i < p->nsteps; i++) {
		const cg_pstep *s = &p->steps[i];
		bool prod = strcmp(s->op, "linear") == 0 || strcmp(s->op, "matmul") == 0;
		if (s->kind == CG_LAUNCH && strncmp(p->kerns[s->kern].name, "gemv_", 5) == 0) {
			gemv_kernels++;
			const cg_config *c = &p->kerns[s->kern].cfg;
			cfg_taken |= asked && c->tile_n == asked_cfg.tile_n && c->warps == asked_cfg.warps &&
				     c->stages == asked_cfg.stages && c->split_k == asked_cfg.split_k;
		} else if (prod) {
			other_products++;
		}
	}
	return SN_OK;
}

static bool pick(void *ctx, const uint8_t spec[16], const cg_config *def, cg_config *want)
{
	(void)ctx;
	(void)spec;
	(void)def;
	if (!asked)
		return false;
	*want = asked_cfg;
	return true;
}

typedef enum epi { E_BIAS, E_SILU, E_RES, E_F32, E_NONE } epi;
static const char *const epi_names[] = {"+bias", "silu", "+res", "+bias f32", ""};

/* x[m, k] @ w (linear: w [n, k]; else matmul: w [k, n]) then ep, in t,
 * against the reference; cfg: a config asked of the kernel (NULL: none). */
static void product(ir_dtype t, bool lin, int64_t m, int64_t k, int64_t n, epi ep, const cg_config *cfg)
{
	ir_graph *g = ir_graph_new();
	ir_ref x = gpu_in(g, "x", t, SHAPE(m, k)), r;
	if (lin) {
		ir_ref w = gpu_in(g, "w", t, SHAPE(n, k));
		bool bias = ep == E_BIAS || ep == E_F32;
		ir_ref b = bias ? gpu_in(g, "b", t, SHAPE(n)) : IR_NONE;
		r = ir_add(g, IR_OP_linear, (ir_ref[]){x, w, b}, bias ? 3 : 2, NULL, &gpu_err);
	} else {
		r = gpu_op2(g, IR_OP_matmul, x, gpu_in(g, "w", t, SHAPE(k, n)));
	}
	if (ep == E_SILU)
		r = gpu_op1(g, IR_OP_silu, r, NULL);
	else if (ep == E_RES)
		r = gpu_op2(g, IR_OP_add, r, gpu_in(g, "res", t, SHAPE(m, n)));
	else if (ep == E_F32) {
		ir_attrs a;
		ir_attrs_init(IR_OP_cast, &a);
		a.dtype = IR_F32;
		r = gpu_op1(g, IR_OP_cast, r, &a);
	}
	char label[160], cs[96] = "default";
	if (cfg)
		cg_config_str(cfg, cs, sizeof cs);
	snprintf(label, sizeof label, "%s %s m=%lld k=%lld n=%lld %s [%s]", lin ? "linear" : "matmul", ir_dtype_name(t),
		 (long long)m, (long long)k, (long long)n, epi_names[ep], cs);
	if (!gpu_built(g, r, label)) {
		failures++;
		return;
	}
	ir_add_output(g, r);
	asked = cfg != NULL;
	if (cfg)
		asked_cfg = *cfg;
	gpu_pick = pick;
	gpu_plan_hook = check_plan;
	/* fp32 sums of k products: the tolerance of the dtype, f32's for k
	 * up to 8192 terms in fp32 */
	double tol = t == IR_F32 ? 1e-5 : gpu_tol(t);
	if (!gpu_compare(g, tol, label))
		failures++;
	gpu_pick = NULL;
	gpu_plan_hook = NULL;
	ran++;
	if (gemv_kernels != 1 || other_products) {
		printf("%-60s FAIL: %d gemv kernels and %d other products in the plan, want 1 and 0\n", label,
		       gemv_kernels, other_products);
		failures++;
	} else if (cfg && !cfg_taken) {
		printf("%-60s FAIL: the kernel did not take the config\n", label);
		failures++;
	}
	asked = false;
}

static void numerics(void)
{
	static const ir_dtype dts[] = {IR_BF16, IR_F16, IR_F32};
	for (size_t d = 0; d < SN_COUNT(dts); d++) {
		for (size_t si = 0; si < SN_COUNT(shapes); si++)
			for (size_t mi = 0; mi < SN_COUNT(ms); mi++)
				/* the lm_head (the reference's minutes) at every m in bf16,
				 * at 1 and 16 rows in f16 and f32 */
				if (si != 3 || dts[d] == IR_BF16 || mi == 0 || mi == SN_COUNT(ms) - 1)
					product(dts[d], true, ms[mi], shapes[si][0], shapes[si][1], E_BIAS, NULL);
		/* epilogues and B k x n on the first shapes */
		for (size_t mi = 0; mi < SN_COUNT(ms); mi++) {
			product(dts[d], true, ms[mi], 2048, 2048, E_SILU, NULL);
			product(dts[d], true, ms[mi], 8192, 2048, E_RES, NULL);
			product(dts[d], true, ms[mi], 2048, 8192, E_F32, NULL);
			if (ms[mi] <= (dts[d] == IR_F32 ? 16 : 8)) {
				product(dts[d], false, ms[mi], 2048, 2048, E_NONE, NULL);
				product(dts[d], false, ms[mi], 2048, 8192, E_NONE, NULL);
			}
		}
		/* odd sizes: n not a multiple of the columns per block, k not of 32 */
		product(dts[d], true, 3, 2056, 1000, E_BIAS, NULL);
		product(dts[d], true, 16, 4104, 777, E_SILU, NULL);
		product(dts[d], false, 5, 1056, 1000, E_NONE, NULL); /* B k x n, n = 1000: a tail block */
	}
	/* configs, split-K over 1-8 blocks of a cluster (sm_90) */
	cg_config cfgs[] = {
		{.variant = CG_GEMV_VARIANT, .tile_n = 32, .warps = 8, .stages = 2, .split_k = 1},
		{.variant = CG_GEMV_VARIANT, .tile_n = 16, .warps = 4, .stages = 4, .split_k = 3},
		{.variant = CG_GEMV_VARIANT, .tile_n = 8, .warps = 2, .stages = 8, .split_k = 8},
		{.variant = CG_GEMV_VARIANT, .tile_n = 8, .warps = 16, .stages = 1, .split_k = 5},
	};
	for (size_t ci = 0; ci < SN_COUNT(cfgs); ci++) {
		if (cfgs[ci].split_k > 1 && gpu_device_sm() < 90)
			continue;
		product(IR_BF16, true, 5, 4096, 2056, E_BIAS, &cfgs[ci]);
		product(IR_F16, true, 16, 2048, 4096, E_SILU, &cfgs[ci]);
		cg_config c = cfgs[ci];
		c.tile_n = c.tile_n > 8 ? 4 : 2; /* f32: tile_n x m <= 64 */
		product(IR_F32, true, 9, 2048, 2048, E_BIAS, &c);
		c.tile_n = 32; /* B k x n: 4 threads of 16 bytes (bf16) */
		product(IR_BF16, false, 4, 2048, 2048, E_NONE, &c);
	}
}

/* ---- bandwidth ---- */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

#define REPS 50

/* The median ms of REPS runs of f (events around each), the L2 flushed
 * (flush: a buffer of nflush bytes overwritten) before each. */
typedef int (*launch_fn)(void *ctx, sn_err *e);
static int time_median(rt_cuda *dv, launch_fn f, void *ctx, CUdeviceptr flush, size_t nflush, int reps,
		       double *median, sn_err *e)
{
	CUevent ev[2 * REPS];
	double ms[REPS];
	int rc = SN_OK, made = 0;
	for (; made < 2 * reps && !rc; made++)
		rc = rt_check(dv, dv->d.EventCreate(&ev[made], CU_EVENT_DEFAULT), "cuEventCreate", e);
	for (int i = 0; i < reps && !rc; i++) {
		if (flush)
			rc = rt_dev_fill(dv, flush, (unsigned char)i, nflush, e);
		if (!rc)
			rc = rt_check(dv, dv->d.EventRecord(ev[2 * i], dv->stream), "cuEventRecord", e);
		if (!rc)
			rc = f(ctx, e);
		if (!rc)
			rc = rt_check(dv, dv->d.EventRecord(ev[2 * i + 1], dv->stream), "cuEventRecord", e);
	}
	if (!rc)
		rc = rt_sync(dv, e);
	for (int i = 0; i < reps && !rc; i++) {
		float t = 0;
		rc = rt_check(dv, dv->d.EventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]), "cuEventElapsedTime", e);
		ms[i] = t;
	}
	for (int i = 0; i < made; i++)
		dv->d.EventDestroy(ev[i]);
	if (!rc) {
		qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
		*median = ms[reps / 2];
	}
	return rc;
}

typedef struct copy_ctx {
	rt_cuda *dv;
	CUdeviceptr a, b;
	size_t n;
} copy_ctx;

static int copy_launch(void *p, sn_err *e)
{
	copy_ctx *c = p;
	return rt_dev_copy(c->dv, c->b, c->a, c->n, e);
}

typedef struct kern_ctx {
	rt_kfn *k;
	const cg_pstep *s;
	CUdeviceptr args[CG_MAX_ARGS];
} kern_ctx;

static int kern_launch(void *p, sn_err *e)
{
	kern_ctx *c = p;
	return rt_kfn_launch(c->k, c->s->grid, c->s->block, c->s->smem, c->args, c->s->nargs, e);
}

static uint64_t brng = 0x2545f4914f6cdd1dull;

/* Random bytes that are finite values of dtype t in [-1, 1). */
static void randomize(ir_dtype t, void *p, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		brng ^= brng << 13;
		brng ^= brng >> 7;
		brng ^= brng << 17;
		ir_store(t, p, i, (double)(brng >> 11) * 0x1.0p-52 - 1.0);
	}
}

/* linear(x [m, k], w [n, k], b [n]) alone: its kernel timed; *gbs the
 * weight's bytes / median time. */
static bool sweep_pick(void *ctx, const uint8_t spec[16], const cg_config *def, cg_config *want)
{
	(void)spec;
	(void)def;
	*want = *(const cg_config *)ctx;
	return true;
}

/* cfg: the config asked of the kernel (NULL: its default); *taken: whether
 * the kernel took it. */
static int bandwidth_of(rt_cuda *dv, rt_nvrtc *nv, ir_dtype t, int64_t m, int64_t k, int64_t n, const cg_config *cfg,
			bool *taken, CUdeviceptr flush, size_t nflush, double *us, double *flushed_us, double *gbs, char *kname,
			size_t kcap, sn_err *e)
{
	ir_graph *g = ir_graph_new();
	ir_ref x = gpu_in(g, "x", t, SHAPE(m, k)), w = gpu_in(g, "w", t, SHAPE(n, k)), b = gpu_in(g, "b", t, SHAPE(n));
	ir_ref r = ir_add(g, IR_OP_linear, (ir_ref[]){x, w, b}, 3, NULL, &gpu_err);
	if (!gpu_built(g, r, "bandwidth graph"))
		return sn_errf(e, SN_EINTERNAL, "bandwidth graph: not built");
	ir_add_output(g, r);
	cg_target tg = {.sm = dv->sm, .pick = cfg ? sweep_pick : NULL, .pick_ctx = (void *)cfg};
	cg_plan *p = NULL;
	rt_job job = {0};
	rt_kfn *kf = NULL;
	kern_ctx kc = {0};
	CUdeviceptr bufs[CG_MAX_ARGS] = {0};
	kern_ctx *rot = NULL; /* nrot copies of every buffer, launched in turn */
	int nrot = 0;
	int rc = cg_lower(g, NULL, &tg, &p, e);
	if (!rc && (p->nsteps != 1 || p->steps[0].kind != CG_LAUNCH || p->steps[0].nargs > CG_MAX_ARGS))
		rc = sn_errf(e, SN_EINTERNAL, "linear m=%lld: the plan is not one kernel", (long long)m);
	const cg_kern *kn = rc ? NULL : &p->kerns[p->steps[0].kern];
	if (kn)
		snprintf(kname, kcap, "%s", kn->name);
	if (kn && taken)
		*taken = !cfg || (kn->cfg.variant == cfg->variant && kn->cfg.tile_n == cfg->tile_n &&
				  kn->cfg.warps == cfg->warps && kn->cfg.stages == cfg->stages &&
				  (!cfg->split_k || kn->cfg.split_k == cfg->split_k));
	if (!rc) {
		job = (rt_job){.name = kn->name, .src = kn->src};
		rc = rt_compile_all(nv, &job, 1, dv->sm, NULL, 0, NULL, NULL, NULL, NULL, e);
	}
	if (!rc)
		rc = rt_kfn_load(dv, job.cubin, kn->name, p->steps[0].smem, &kf, e);
	for (uint32_t i = 0; !rc && i < p->steps[0].nargs; i++) {
		const cg_buf *bf = &p->bufs[p->steps[0].args[i]];
		size_t count = bf->bytes / ir_dtype_size(bf->dtype);
		void *h = malloc(bf->bytes);
		rc = h ? rt_dev_alloc(dv, bf->bytes, &bufs[i], e) : sn_errf(e, SN_EINTERNAL, "out of memory");
		if (!rc) {
			randomize(bf->dtype, h, count);
			rc = rt_dev_upload(dv, bufs[i], h, bf->bytes, e);
		}
		free(h);
		kc.args[i] = bufs[i];
	}
	if (!rc) {
		kc.k = kf;
		kc.s = &p->steps[0];
		rc = kern_launch(&kc, e); /* warm-up */
		double ms = 0;
		if (!rc)
			rc = time_median(dv, kern_launch, &kc, flush, nflush, REPS, &ms, e);
		*flushed_us = ms * 1e3;
	}
	/* streaming: copies of every buffer (>= 256 MiB in all, several times
	 * the L2) launched in turn back to back between two events, as a
	 * decode step's kernels run; no memset before each (the flush leaves
	 * the L2 dirty, and its write-back is counted in the time above) */
	size_t all = 0;
	for (uint32_t i = 0; !rc && i < p->steps[0].nargs; i++)
		all += p->bufs[p->steps[0].args[i]].bytes;
	nrot = rc ? 0 : (int)(((size_t)256 << 20) / (all ? all : 1)) + 1;
	if (nrot > 64)
		nrot = 64;
	rot = nrot ? calloc((size_t)nrot, sizeof *rot) : NULL;
	if (!rc && !rot)
		rc = sn_errf(e, SN_EINTERNAL, "out of memory");
	for (int c = 0; !rc && c < nrot; c++) {
		rot[c] = kc;
		for (uint32_t i = 0; !rc && i < p->steps[0].nargs; i++) {
			size_t bytes = p->bufs[p->steps[0].args[i]].bytes;
			rot[c].args[i] = 0;
			rc = rt_dev_alloc(dv, bytes, &rot[c].args[i], e);
			if (!rc)
				rc = rt_dev_copy(dv, rot[c].args[i], bufs[i], bytes, e);
		}
	}
	if (!rc) {
		int launches = nrot < 32 ? 64 : 2 * nrot;
		CUevent ev[2] = {0};
		float ms = 0;
		for (int c = 0; !rc && c < nrot; c++) /* warm-up: every copy once */
			rc = kern_launch(&rot[c], e);
		for (int i = 0; !rc && i < 2; i++)
			rc = rt_check(dv, dv->d.EventCreate(&ev[i], CU_EVENT_DEFAULT), "cuEventCreate", e);
		if (!rc)
			rc = rt_check(dv, dv->d.EventRecord(ev[0], dv->stream), "cuEventRecord", e);
		for (int i = 0; !rc && i < launches; i++)
			rc = kern_launch(&rot[i % nrot], e);
		if (!rc)
			rc = rt_check(dv, dv->d.EventRecord(ev[1], dv->stream), "cuEventRecord", e);
		if (!rc)
			rc = rt_sync(dv, e);
		if (!rc)
			rc = rt_check(dv, dv->d.EventElapsedTime(&ms, ev[0], ev[1]), "cuEventElapsedTime", e);
		for (int i = 0; i < 2; i++)
			if (ev[i])
				dv->d.EventDestroy(ev[i]);
		*us = ms * 1e3 / launches;
		*gbs = (double)(n * k) * (double)ir_dtype_size(t) / (*us * 1e-6) / 1e9;
	}
	for (int c = 0; rot && c < nrot; c++)
		for (uint32_t i = 0; i < CG_MAX_ARGS; i++)
			if (rot[c].args[i])
				rt_dev_free(dv, rot[c].args[i]);
	free(rot);
	for (uint32_t i = 0; i < CG_MAX_ARGS; i++)
		if (bufs[i])
			rt_dev_free(dv, bufs[i]);
	rt_kfn_free(kf);
	rt_jobs_free(&job, 1);
	cg_plan_free(p);
	ir_graph_free(g);
	return rc;
}

/* The same product, x [m, k] @ w [n, k]^T + b, on cuBLASLt (its
 * heuristic's algorithm, as a plan's CG_MATMUL step runs it), timed the
 * same streaming way: *us per product. */
static int cublas_of(rt_cuda *dv, rt_blas *bl, ir_dtype t, int64_t m, int64_t k, int64_t n, double *us, sn_err *e)
{
	cg_mm g = {.a = 0, .b = 1, .bias = 2, .out = 3, .c = CG_NO_BUF, .batch = 1, .m = m, .n = n, .k = k,
		   .stride_a = m * k, .stride_b = 0, .stride_c = m * n, .trans_b = true, .dtype = t, .act = CG_ACT_NONE};
	size_t es = ir_dtype_size(t), sz[4] = {(size_t)(m * k) * es, (size_t)(n * k) * es, (size_t)n * es,
						   (size_t)(m * n) * es};
	size_t all = sz[0] + sz[1] + sz[2] + sz[3];
	int nrot = (int)(((size_t)256 << 20) / all) + 1;
	if (nrot > 64)
		nrot = 64;
	CUdeviceptr (*p)[4] = calloc((size_t)nrot, sizeof *p);
	rt_gemm *gm = NULL;
	CUevent ev[2] = {0};
	int rc = p ? rt_gemm_prepare(bl, &g, &gm, NULL, e) : sn_errf(e, SN_EINTERNAL, "out of memory");
	for (int c = 0; !rc && c < nrot; c++)
		for (int i = 0; !rc && i < 4; i++) {
			rc = rt_dev_alloc(dv, sz[i], &p[c][i], e);
			if (!rc) /* 0x3c bytes: small finite values in every dtype */
				rc = rt_dev_fill(dv, p[c][i], 0x3c, sz[i], e);
		}
	for (int c = 0; !rc && c < nrot; c++) /* warm-up */
		rc = rt_gemm_run(bl, gm, p[c][0], p[c][1], p[c][2], p[c][3], dv->stream, e);
	int launches = nrot < 32 ? 64 : 2 * nrot;
	float ms = 0;
	for (int i = 0; !rc && i < 2; i++)
		rc = rt_check(dv, dv->d.EventCreate(&ev[i], CU_EVENT_DEFAULT), "cuEventCreate", e);
	if (!rc)
		rc = rt_check(dv, dv->d.EventRecord(ev[0], dv->stream), "cuEventRecord", e);
	for (int i = 0; !rc && i < launches; i++) {
		CUdeviceptr *q = p[i % nrot];
		rc = rt_gemm_run(bl, gm, q[0], q[1], q[2], q[3], dv->stream, e);
	}
	if (!rc)
		rc = rt_check(dv, dv->d.EventRecord(ev[1], dv->stream), "cuEventRecord", e);
	if (!rc)
		rc = rt_sync(dv, e);
	if (!rc)
		rc = rt_check(dv, dv->d.EventElapsedTime(&ms, ev[0], ev[1]), "cuEventElapsedTime", e);
	*us = ms * 1e3 / launches;
	for (int i = 0; i < 2; i++)
		if (ev[i])
			dv->d.EventDestroy(ev[i]);
	for (int c = 0; p && c < nrot; c++)
		for (int i = 0; i < 4; i++)
			if (p[c][i])
				rt_dev_free(dv, p[c][i]);
	free(p);
	rt_gemm_free(gm);
	return rc;
}

/* `sweep`: bf16 linears (m 1, 4, 16 x the three large shapes) over a grid
 * of configs, each case's best printed beside its default: data for the
 * default rule (cg_gemv.c, config_of). */
static bool sweep;

static void sweep_configs(rt_cuda *dv, rt_nvrtc *nv, CUdeviceptr flush, size_t nflush, double copy_gbs)
{
	static const int sms[] = {1, 4, 16};
	static const int tns[] = {8, 16, 32};
	static const int ws[][2] = {{4, 2}, {4, 4}, {8, 4}}; /* warps, stages */
	static const int sks[] = {0, 1, 8};                  /* 0: the rule's split */
	printf("sweep (bf16 linear; %% of the copy bandwidth):\n");
	for (size_t si = 1; si < SN_COUNT(shapes); si++)
		for (size_t mi = 0; mi < SN_COUNT(sms); mi++) {
			int64_t k = shapes[si][0], n = shapes[si][1];
			double us = 0, fus = 0, gbs = 0, best = 0;
			char kname[64], bs[96] = "";
			sn_err e = {0};
			if (bandwidth_of(dv, nv, IR_BF16, sms[mi], k, n, NULL, NULL, flush, nflush, &us, &fus, &gbs, kname, sizeof kname,
					 &e)) {
				printf("  m=%d k=%lld n=%lld FAIL: %s\n", sms[mi], (long long)k, (long long)n, e.msg);
				failures++;
				continue;
			}
			double def = gbs;
			for (size_t a = 0; a < SN_COUNT(tns); a++)
				for (size_t b = 0; b < SN_COUNT(ws); b++)
					for (size_t c = 0; c < SN_COUNT(sks); c++) {
						if (sks[c] > 1 && dv->sm < 90)
							continue;
						cg_config cf = {.variant = CG_GEMV_VARIANT, .tile_n = tns[a], .warps = ws[b][0],
								.stages = ws[b][1], .split_k = sks[c]};
						bool taken = false;
						sn_err e2 = {0};
						if (bandwidth_of(dv, nv, IR_BF16, sms[mi], k, n, &cf, &taken, flush, nflush, &us, &fus, &gbs,
								 kname, sizeof kname, &e2) || !taken)
							continue; /* a config this product does not take */
						if (gbs > best) {
							best = gbs;
							cg_config_str(&cf, bs, sizeof bs);
						}
					}
			printf("  m=%2d k=%5lld n=%6lld default %5.1f %%  best %5.1f %% [%s]\n", sms[mi], (long long)k,
			       (long long)n, 100 * def / copy_gbs, 100 * best / copy_gbs, bs);
		}
}

static void bandwidth(void)
{
	rt_cuda *dv = gpu_device();
	sn_err e = {0};
	rt_nvrtc *nv = NULL;
	copy_ctx cc = {.dv = dv, .n = (size_t)1 << 30};
	size_t nflush = (size_t)256 << 20; /* several times any L2 */
	CUdeviceptr flush = 0;
	double copy_ms = 0;
	int rc = rt_nvrtc_open(&nv, &e);
	if (!rc)
		rc = rt_dev_alloc(dv, cc.n, &cc.a, &e);
	if (!rc)
		rc = rt_dev_alloc(dv, cc.n, &cc.b, &e);
	if (!rc)
		rc = rt_dev_alloc(dv, nflush, &flush, &e);
	if (!rc)
		rc = rt_dev_fill(dv, cc.a, 1, cc.n, &e);
	if (!rc)
		rc = copy_launch(&cc, &e);
	if (!rc)
		rc = time_median(dv, copy_launch, &cc, 0, 0, 20, &copy_ms, &e);
	if (cc.a)
		rt_dev_free(dv, cc.a);
	if (cc.b)
		rt_dev_free(dv, cc.b);
	if (rc) {
		printf("bandwidth FAIL: %s\n", e.msg);
		failures++;
		if (flush)
			rt_dev_free(dv, flush);
		rt_nvrtc_close(nv);
		return;
	}
	double copy_gbs = 2.0 * (double)cc.n / (copy_ms * 1e-3) / 1e9;
	printf("copy floor: cuMemcpyDtoDAsync of 1 GiB, %.3f ms, %.0f GB/s (read + write)\n", copy_ms, copy_gbs);
	rt_blas *bl = NULL;
	sn_err be = {0};
	if (rt_blas_open(dv, &bl, &be)) {
		printf("cuBLASLt: not timed (%s)\n", be.msg);
		bl = NULL;
	}
	printf("%-6s %3s %6s %7s %10s %9s %8s %7s %10s %10s %8s  %s\n", "dtype", "m", "k", "n", "weight MB", "time us",
	       "GB/s", "% copy", "flushed us", "cublas us", "% copy", "kernel");
	static const ir_dtype dts[] = {IR_BF16, IR_F16, IR_F32};
	double worst = 1e9;
	int gemv_wins = 0, cublas_cases = 0;
	for (size_t d = 0; d < SN_COUNT(dts); d++)
		for (size_t si = 0; si < SN_COUNT(shapes); si++)
			for (size_t mi = 0; mi < SN_COUNT(ms); mi++) {
				int64_t k = shapes[si][0], n = shapes[si][1];
				double us = 0, fus = 0, gbs = 0;
				char kname[64] = "";
				sn_err e2 = {0};
				if (bandwidth_of(dv, nv, dts[d], ms[mi], k, n, NULL, NULL, flush, nflush, &us, &fus, &gbs, kname,
						 sizeof kname, &e2)) {
					printf("%-6s %3d %6lld %7lld FAIL: %s\n", ir_dtype_name(dts[d]), ms[mi], (long long)k,
					       (long long)n, e2.msg);
					failures++;
					continue;
				}
				double pct = 100 * gbs / copy_gbs, wb = (double)(n * k) * (double)ir_dtype_size(dts[d]);
				if (dts[d] == IR_BF16 && pct < worst)
					worst = pct;
				double bus = 0; /* cuBLASLt's time; 0: not timed (printed, not a failure) */
				sn_err e3 = {0};
				if (bl && cublas_of(dv, bl, dts[d], ms[mi], k, n, &bus, &e3)) {
					printf("  cuBLASLt m=%d k=%lld n=%lld: %s\n", ms[mi], (long long)k, (long long)n, e3.msg);
					bus = 0;
				}
				if (bus > 0)
					gemv_wins += us < bus;
				cublas_cases += bus > 0;
				printf("%-6s %3d %6lld %7lld %10.1f %9.2f %8.0f %6.1f%% %10.2f %10.2f %7.1f%%  %s\n",
				       ir_dtype_name(dts[d]), ms[mi], (long long)k, (long long)n, wb / 1e6, us, gbs, pct, fus, bus,
				       bus > 0 ? 100 * wb / (bus * 1e-6) / 1e9 / copy_gbs : 0.0, kname);
			}
	printf("bf16: the lowest is %.1f %% of the copy bandwidth (target >= 90 %%)\n", worst);
	printf("gemv faster than cuBLASLt in %d of %d cases\n", gemv_wins, cublas_cases);
	rt_blas_close(bl);
	if (sweep)
		sweep_configs(dv, nv, flush, nflush, copy_gbs);
	rt_dev_free(dv, flush);
	rt_nvrtc_close(nv);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	if (strcmp(what, "all") && strcmp(what, "numerics") && strcmp(what, "bandwidth") && strcmp(what, "sweep")) {
		fprintf(stderr, "usage: %s [numerics|bandwidth|sweep]\n", argv[0]);
		return 2;
	}
	/* the family is off by default (cg_gemv_by_default): the knob puts the
	 * products measured here on it */
	setenv("SINTER_GEMV", "1", 1);
	sweep = !strcmp(what, "sweep");
	if (sweep)
		what = "bandwidth";
	if (!gpu_available())
		return gpu_done();
	if (strcmp(what, "bandwidth"))
		numerics();
	if (strcmp(what, "numerics"))
		bandwidth();
	printf("gemv: %d graphs, %d failures\n", ran, failures);
	int rc = gpu_done();
	return failures ? 1 : rc;
}
