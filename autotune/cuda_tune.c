/* cuda_tune.c: the autotuner (at_tune.h).
 *
 * 1. Items: every unique kernel of the plan (by spec key) and every unique
 *    cuBLASLt product (by at_mm_spec), with how often the plan runs it and
 *    a cost estimate from its bytes and flops.
 * 2. Candidates come from codegen itself: the graph is lowered again with
 *    cg_target.pick asking every kernel for one config of the search space
 *    (threads per block x vector width); a kernel whose renderer accepts it
 *    yields a candidate (its source, config and launch geometry), one that
 *    does not keeps its default. Products get the cuBLASLt heuristic's top
 *    algorithms and, lowered again with cg_target.pick_mm, the GEMM
 *    template's kernels for them (at_gemm_space), run on the product's
 *    own buffers; a template that wins turns the plan's product steps into
 *    launches (patch_mm_kernel) and is recorded as AT_GEMM. Kernels
 *    without any candidate are not tunable.
 * 3. A stored record for (spec, this device) decides an item without
 *    timing, once the renderer (or cublasLtMatmulAlgoCheck) accepts its
 *    choice and the chosen kernel's output matches the default's on random
 *    inputs; a record that fails either is rejected and counted.
 * 4. The other items, most expensive first: candidates compiled with NVRTC
 *    on every core (through the kernel cache), a chunk of items at a time;
 *    each runs once on random inputs and must match the default's output,
 *    then is timed (median of AT_REPS runs, the L2 flushed before each). A
 *    candidate that fails to compile, to launch, to match, or runs far
 *    slower than the default is scored out. The whole budget and each
 *    item's cap are checked before every candidate: when they run out the
 *    best so far wins (or the default). The winner is patched into the plan
 *    (the candidate plans share its buffers: the configs do not change the
 *    fusion groups) and written as a record.
 * A kernel that faults on the device leaves the context unusable; that is
 * reported as an error (generated candidates are not expected to fault). */
#include "autotune/at_tune.h"
#include "autotune/cuda_check.h"

#include "codegen/cg_render.h"
#include "ir/log.h"
#include "runtime/cuda_blas.h"
#include "runtime/cuda_nvrtc.h"
#include "runtime/cuda_time.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define AT_REPS 7          /* timed runs per candidate (median) */
#define AT_MAX_BLAS 8      /* cuBLASLt candidates asked for */
#define AT_CHUNK 8         /* items whose candidates compile together */
#define AT_TOO_SLOW 8.0    /* a candidate this many times the default's time is dropped */

typedef struct cand {
	cg_config asked;   /* AT_KERNEL: the config asked for (all zero: the default) */
	cg_config cfg;     /* AT_KERNEL: the config the renderer reports */
	cg_blas_algo algo; /* AT_BLAS */
	char name[64];
	char *src;
	unsigned grid[3], block[3], smem;
	uint32_t nargs;
	uint32_t args[CG_MAX_ARGS]; /* plan buffer ids */
	uint32_t ntmaps;            /* tensor maps over args (cg_kern's) */
	cg_tmap tmaps[CG_MAX_TMAPS];
	void *cubin;
	size_t cubin_size;
	double ms;
	bool ok; /* compiled, matched, timed (or, for a record, checked) */
	bool kern; /* AT_BLAS: the GEMM template's kernel (src, cubin, launch) instead of an algorithm */
} cand;

typedef struct item {
	at_kind kind;
	uint8_t spec[16];
	uint32_t kern; /* AT_KERNEL: the plan's kernel */
	uint32_t step; /* a plan step running it */
	uint32_t uses;
	double est;
	cand *c; /* c[0]: the default */
	size_t nc;
	bool record; /* c[1] (if any) is a stored record's choice: check it, do not time */
	bool want;   /* candidates wanted (no record) */
	bool rec_bad; /* the record's config is not one the renderer takes here */
	at_record rec;
	int chosen;  /* index into c, -1: none yet */
} item;

typedef struct tuner {
	const ir_graph *g;
	const cg_target *t;
	cg_plan *p;
	rt_cuda *c;
	at_store *st;
	const at_tune_opts *o;
	at_tune_stats *s;
	at_device dev;
	rt_nvrtc *nv;
	rt_timer *tm;
	rt_blas *blas;
	at_check *chk;   /* fill and compare on the device; NULL: on the host */
	void *chk_cubin; /* compiled with the first batch */
	size_t chk_size;
	double t0, budget, cap;
	uint64_t seed;
	size_t done, total;
	bool tty;
} tuner;

void at_device_of(const rt_cuda *c, at_device *d)
{
	memset(d, 0, sizeof *d);
	size_t i = 0;
	for (; c->name[i] && i + 1 < sizeof d->name; i++)
		d->name[i] = c->name[i] >= 0x20 && c->name[i] < 0x7f && c->name[i] != '"' && c->name[i] != '\\'
				     ? c->name[i]
				     : '?';
	d->sm = c->sm;
	d->driver = c->driver_version;
	d->nvrtc = rt_nvrtc_lib_version();
	d->blas = rt_blas_lib_version();
}

void at_tune_stats_free(at_tune_stats *s)
{
	free(s->specs);
	s->specs = NULL;
	s->nspecs = 0;
}

static void cand_free(cand *c)
{
	free(c->src);
	free(c->cubin);
	c->src = NULL;
	c->cubin = NULL;
}

static void items_free(item *it, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < it[i].nc; k++)
			cand_free(&it[i].c[k]);
		free(it[i].c);
	}
	free(it);
}

/* ---- progress ---- */

static double speedup(const at_tune_stats *s)
{
	return s->tuned_ms > 0 ? s->default_ms / s->tuned_ms : 1.0;
}

static void progress(tuner *tu, bool final)
{
	const at_tune_opts *o = tu->o;
	FILE *f = o->out ? o->out : stderr;
	at_tune_stats *s = tu->s;
	double el = sn_now() - tu->t0, left = tu->budget - el > 0 ? tu->budget - el : 0;
	int mode = o->progress == AT_PROGRESS_AUTO ? (tu->tty ? AT_PROGRESS_BAR : AT_PROGRESS_SUMMARY) : o->progress;
	if (mode == AT_PROGRESS_NONE)
		return;
	if (mode == AT_PROGRESS_JSON) {
		fprintf(f,
			"{\"tune\": \"%s\", \"done\": %zu, \"total\": %zu, \"from_records\": %zu, \"tuned\": %zu, "
			"\"untuned\": %zu, \"candidates\": %zu, \"timings\": %zu, \"failed\": %zu, \"rejected\": %zu, "
			"\"speedup\": %.4f, \"seconds\": %.3f, \"left_s\": %.3f, \"budget_out\": %s}\n",
			final ? "summary" : "progress", tu->done, tu->total, s->from_records, s->tuned, s->untuned,
			s->candidates, s->timings, s->failed, s->rejected, speedup(s), el, left,
			s->budget_out ? "true" : "false");
		fflush(f);
		return;
	}
	if (mode == AT_PROGRESS_BAR) {
		char bar[21];
		size_t fill = tu->total ? 20 * tu->done / tu->total : 20;
		for (size_t i = 0; i < 20; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[20] = 0;
		fprintf(f, "\rmax-autotune [%s] %zu/%zu kernels, %zu candidates timed, best %.2fx, %.1f s left ", bar,
			tu->done, tu->total, s->candidates, speedup(s), left);
		if (final)
			fputc('\n', f);
		fflush(f);
		if (!final)
			return;
	}
	if (final)
		fprintf(f,
			"max-autotune: %zu kernels (%zu from records, %zu tuned, %zu left at the default%s), %zu candidates "
			"timed, %zu scored out, %zu records rejected, %.2fx on the tuned steps, %.1f s\n",
			tu->total, s->from_records, s->tuned, s->untuned, s->budget_out ? ": budget spent" : "",
			s->candidates, s->failed, s->rejected, speedup(s), el);
}

/* ---- random data and comparisons ---- */

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Values that make every op well defined and every bit count: floats of
 * either sign in [2^-5, 2) (no zeros, no subnormals), integers 1..9,
 * bools 0 or 1. */
static void fill(void *buf, size_t bytes, ir_dtype t, uint64_t *seed)
{
	size_t es = ir_dtype_size(t), n = bytes / es;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = next(seed);
		/* the sign from bit 63, the mantissa from bits 8.., the exponent's
		 * offset in [0, 5) from bits 32..47 scaled (no division: buffers
		 * have tens of millions of elements) */
		uint64_t sg = r >> 63, e5 = ((r >> 32) & 0xffff) * 5 >> 16;
		switch (t) {
		case IR_F32: {
			uint32_t v = (uint32_t)(sg << 31 | (122 + e5) << 23 | ((r >> 8) & 0x7fffff));
			memcpy((char *)buf + 4 * i, &v, 4);
			break;
		}
		case IR_BF16: {
			uint16_t v = (uint16_t)(sg << 15 | (122 + e5) << 7 | ((r >> 8) & 0x7f));
			memcpy((char *)buf + 2 * i, &v, 2);
			break;
		}
		case IR_F16: {
			uint16_t v = (uint16_t)(sg << 15 | (10 + e5) << 10 | ((r >> 8) & 0x3ff));
			memcpy((char *)buf + 2 * i, &v, 2);
			break;
		}
		case IR_F8E4M3: ((uint8_t *)buf)[i] = (uint8_t)(sg << 7 | (3 + ((r >> 32) & 3)) << 3 | ((r >> 8) & 7)); break;
		case IR_F8E5M2: ((uint8_t *)buf)[i] = (uint8_t)(sg << 7 | (10 + e5) << 2 | ((r >> 8) & 3)); break;
		case IR_BOOL: ((uint8_t *)buf)[i] = (uint8_t)(r & 1); break;
		default: ir_store(t, buf, i, (double)(1 + r % 9)); break;
		}
	}
}

/* Element i of a float buffer of type t (f32, f16, bf16) as a float,
 * inline: matches walks tens of millions of them. */
static inline float load_f(ir_dtype t, const void *p, size_t i)
{
	uint32_t u;
	float f;
	if (t == IR_F32) {
		memcpy(&f, (const char *)p + 4 * i, 4);
		return f;
	}
	uint16_t h;
	memcpy(&h, (const char *)p + 2 * i, 2);
	if (t == IR_BF16) {
		u = (uint32_t)h << 16;
		memcpy(&f, &u, 4);
		return f;
	}
	return (float)ir_load(t, p, i);
}

/* Whether got matches want (n elements of t): bit for bit, or within
 * rtol (relative to each value, or to the largest when scale). */
static bool matches(ir_dtype t, const void *want, const void *got, size_t n, double rtol, bool scale)
{
	if (!memcmp(want, got, n * ir_dtype_size(t)))
		return true;
	if (!ir_dtype_is_float(t))
		return false;
	bool fast = t == IR_F32 || t == IR_BF16; /* others through ir_load */
	double big = 0;
	if (scale)
		for (size_t i = 0; i < n; i++) {
			double a = fabs(fast ? (double)load_f(t, want, i) : ir_load(t, want, i));
			if (isfinite(a) && a > big)
				big = a;
		}
	for (size_t i = 0; i < n; i++) {
		double a = fast ? (double)load_f(t, want, i) : ir_load(t, want, i);
		double b = fast ? (double)load_f(t, got, i) : ir_load(t, got, i);
		if (isnan(a) || isnan(b)) {
			if (isnan(a) != isnan(b))
				return false;
			continue;
		}
		if (isinf(a) || isinf(b)) {
			if (a != b)
				return false;
			continue;
		}
		double tol = scale ? rtol * big + 1e-30 : 1e-6 + rtol * fabs(a);
		if (fabs(a - b) > tol)
			return false;
	}
	return true;
}

static double rtol_of(ir_dtype t, bool tf32)
{
	switch (t) {
	case IR_F32: return tf32 ? 2e-2 : 1e-4;
	case IR_F16:
	case IR_BF16: return 2e-2;
	default: return 0.15;
	}
}

/* ---- items ---- */

/* Whether a kernel that reports cfg was rendered with what asked asks
 * for: every field asked for has that value (fields left 0 are the
 * renderer's to choose). */
static bool consistent(const cg_config *asked, const cg_config *cfg)
{
	const int32_t a[] = {asked->variant, asked->block, asked->tile_m, asked->tile_n, asked->tile_k,
			     asked->warps, asked->stages, asked->vec, asked->rows, asked->split_k};
	const int32_t c[] = {cfg->variant, cfg->block, cfg->tile_m, cfg->tile_n, cfg->tile_k,
			     cfg->warps, cfg->stages, cfg->vec, cfg->rows, cfg->split_k};
	for (size_t i = 0; i < SN_COUNT(a); i++)
		if (a[i] && a[i] != c[i] && !(i == 7 && a[i] == 1 && c[i] == 0)) /* vec 1: scalar, 0 to some */
			return false;
	return true;
}

static bool same_algo(const cg_blas_algo *a, const cg_blas_algo *b)
{
	return a->id == b->id && a->tile == b->tile && a->stages == b->stages && a->splitk == b->splitk &&
	       a->reduction == b->reduction && a->swizzle == b->swizzle && a->custom == b->custom &&
	       a->inner == b->inner && a->cluster == b->cluster;
}

static int push(cand **cs, size_t *n, const cand *c)
{
	cand *nc = realloc(*cs, (*n + 1) * sizeof *nc);
	if (!nc)
		return SN_EINTERNAL;
	*cs = nc;
	nc[(*n)++] = *c;
	return SN_OK;
}

/* Kernel kk of plan p as a candidate: its source (copied), config and the
 * launch of its first step. */
static int cand_of(const cg_plan *p, uint32_t kk, cand *c)
{
	memset(c, 0, sizeof *c);
	uint32_t s = 0;
	while (s < p->nsteps && !(p->steps[s].kind == CG_LAUNCH && p->steps[s].kern == kk))
		s++;
	if (s == p->nsteps || !p->kerns[kk].src || !(c->src = strdup(p->kerns[kk].src)))
		return SN_EINTERNAL;
	const cg_pstep *ps = &p->steps[s];
	c->cfg = p->kerns[kk].cfg;
	memcpy(c->name, p->kerns[kk].name, sizeof c->name);
	memcpy(c->grid, ps->grid, sizeof c->grid);
	memcpy(c->block, ps->block, sizeof c->block);
	c->smem = ps->smem;
	c->nargs = ps->nargs;
	memcpy(c->args, ps->args, sizeof c->args);
	c->ntmaps = p->kerns[kk].ntmaps;
	memcpy(c->tmaps, p->kerns[kk].tmaps, sizeof c->tmaps);
	return SN_OK;
}

static item *find(item *it, size_t n, at_kind k, const uint8_t spec[16])
{
	for (size_t i = 0; i < n; i++)
		if (it[i].kind == k && !memcmp(it[i].spec, spec, 16))
			return &it[i];
	return NULL;
}

/* ---- lowering again with other configs ---- */

typedef struct pick_ctx {
	const item *it;
	size_t n;
	const cg_config *all;    /* every wanted kernel item gets this config */
	const cg_config *mm_all; /* every wanted product gets the GEMM template with this config */
	/* neither: each record's choice (kernels' configs, products' template configs) */
} pick_ctx;

static bool pick_hook(void *ctx, const uint8_t spec[16], const cg_config *def, cg_config *want)
{
	(void)def;
	pick_ctx *pc = ctx;
	if (pc->mm_all)
		return false;
	for (size_t i = 0; i < pc->n; i++) {
		const item *x = &pc->it[i];
		if (x->kind != AT_KERNEL || memcmp(x->spec, spec, 16))
			continue;
		if (pc->all) {
			if (!x->want)
				return false;
			*want = *pc->all;
			return true;
		}
		if (!x->record)
			return false;
		*want = x->rec.cfg;
		return true;
	}
	return false;
}

/* A product cuBLASLt would run: the GEMM template with a config of its
 * space, or the one its record chose. */
static bool pick_mm_hook(void *ctx, const cg_mm *mm, cg_config *want)
{
	pick_ctx *pc = ctx;
	if (pc->all)
		return false;
	uint8_t spec[16];
	at_mm_spec(mm, spec);
	for (size_t i = 0; i < pc->n; i++) {
		const item *x = &pc->it[i];
		if (x->kind != AT_BLAS || memcmp(x->spec, spec, 16))
			continue;
		if (pc->mm_all) {
			if (!x->want)
				return false;
			*want = *pc->mm_all;
			return true;
		}
		if (!x->record || x->rec.kind != AT_GEMM)
			return false;
		*want = x->rec.cfg;
		return true;
	}
	return false;
}

/* Lowers the graph again (no weights) with the hooks. */
static int relower(tuner *tu, pick_ctx *pc, cg_plan **out)
{
	cg_target t2 = *tu->t;
	t2.pick = pick_hook;
	t2.pick_mm = pick_mm_hook;
	t2.pick_ctx = pc;
	sn_err e = {0};
	return cg_lower(tu->g, NULL, &t2, out, &e);
}

/* The search space, most promising first: blocks near 256 and the widest
 * vectors before extremes. Renderers take what they can. */
const cg_config at_space[] = {
	{.block = 256, .vec = 8}, {.block = 128, .vec = 8}, {.block = 512, .vec = 8}, {.block = 256, .vec = 4},
	{.block = 128, .vec = 4}, {.block = 512, .vec = 4}, {.block = 1024, .vec = 8}, {.block = 1024, .vec = 4},
	{.block = 256, .vec = 2}, {.block = 128, .vec = 2}, {.block = 512, .vec = 2}, {.block = 64, .vec = 8},
	{.block = 64, .vec = 4}, {.block = 256, .vec = 1}, {.block = 128, .vec = 1}, {.block = 512, .vec = 1},
	{.block = 1024, .vec = 1}, {.block = 64, .vec = 1}, {.block = 1024, .vec = 2}, {.block = 64, .vec = 2},
	/* the tensor-core convolution's tiles (tile_k and the variant stay its own) */
	{.tile_m = 128, .tile_n = 128, .warps = 8, .stages = 3}, {.tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4},
	{.tile_m = 128, .tile_n = 64, .warps = 4, .stages = 3}, {.tile_m = 128, .tile_n = 64, .warps = 4, .stages = 4},
	{.tile_m = 64, .tile_n = 64, .warps = 4, .stages = 3}, {.tile_m = 64, .tile_n = 64, .warps = 4, .stages = 4},
	{.tile_m = 64, .tile_n = 128, .warps = 4, .stages = 3}, {.tile_m = 256, .tile_n = 64, .warps = 8, .stages = 3},
	{.tile_m = 128, .tile_n = 128, .warps = 4, .stages = 3}, {.tile_m = 64, .tile_n = 64, .warps = 2, .stages = 4},
	/* the wgmma convolution on sm_90 (variant 7; tile_k stays its own):
	 * the default's shapes at other depths, taller and narrower tiles,
	 * and k groups of warpgroups (split_k) for grids too small for the
	 * SMs */
	{.variant = 7, .tile_m = 128, .tile_n = 256, .warps = 8, .stages = 3},
	{.variant = 7, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4},
	{.variant = 7, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 6},
	{.variant = 7, .tile_m = 256, .tile_n = 128, .warps = 8, .stages = 3},
	{.variant = 7, .tile_m = 128, .tile_n = 64, .warps = 8, .stages = 4},
	{.variant = 7, .tile_m = 128, .tile_n = 64, .warps = 4, .stages = 6},
	{.variant = 7, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6},
	{.variant = 7, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 4},
	{.variant = 7, .tile_m = 64, .tile_n = 128, .warps = 8, .stages = 5, .split_k = 2},
	{.variant = 7, .tile_m = 64, .tile_n = 64, .warps = 8, .stages = 6, .split_k = 2},
	{.variant = 7, .tile_m = 128, .tile_n = 128, .warps = 16, .stages = 4, .split_k = 2},
	/* ... and with a producer warpgroup (variant 8, f16/bf16; warps are
	 * the consumers'): the default's shapes at other depths */
	{.variant = 8, .tile_m = 256, .tile_n = 128, .warps = 8, .stages = 3},
	{.variant = 8, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4},
	{.variant = 8, .tile_m = 192, .tile_n = 128, .warps = 12, .stages = 4},
	{.variant = 8, .tile_m = 128, .tile_n = 64, .warps = 4, .stages = 3},
	/* attention's wgmma kernels on sm_90 (variant 3; 4 with a producer
	 * warpgroup), beside the defaults: the best tiles of the kernel
	 * benchmark's sweep (docs/PERF.md) */
	{.variant = 3, .tile_m = 192, .tile_n = 80}, {.variant = 3, .tile_m = 128, .tile_n = 128},
	{.variant = 4, .tile_m = 128, .tile_n = 96}, {.variant = 3, .tile_m = 128, .tile_n = 64},
	/* the GEMM template (cg_gemm_tc.c): wgmma fed by TMA on sm_90
	 * (variant 3, its default there), wgmma fed by cp.async (variant 2),
	 * mma.sync (variant 1; in two k groups of 8 warps, a 64x64 tile spilled
	 * on an untransposed B); the tiles above without a variant apply to its
	 * default variant */
	{.variant = 3, .tile_m = 128, .tile_n = 256, .warps = 12, .stages = 4},
	{.variant = 3, .tile_m = 128, .tile_n = 128, .warps = 12, .stages = 6},
	{.variant = 3, .tile_m = 64, .tile_n = 128, .warps = 8, .stages = 8},
	{.variant = 2, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4},
	{.variant = 2, .tile_m = 128, .tile_n = 256, .warps = 8, .stages = 3},
	{.variant = 2, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 8},
	{.variant = 1, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 4},
	/* ... and split-K over a cluster of blocks (wgmma), for small grids
	 * (the products' configs against cuBLASLt, at_gemm_space, too) */
	{.variant = 2, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6},
	{.variant = 2, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6, .split_k = 2},
	{.variant = 2, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6, .split_k = 3},
	{.variant = 2, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 8, .split_k = 2},
	{.variant = 2, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 8, .split_k = 4},
	{.variant = 2, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4, .split_k = 2},
};
const size_t at_space_n = SN_COUNT(at_space);

/* The GEMM template's configs asked of every product cuBLASLt runs (its
 * candidates against cuBLASLt's algorithms): its own default first, then
 * wgmma tiles (sm_90), split-K over clusters of 2-4 blocks for grids
 * too small for the SMs (GPT-2's and the MLP's products at small
 * batch), wgmma fed by TMA (variant 3), and mma.sync tiles (sm_80+;
 * variants 2 and 3 are refused there). */
const cg_config at_gemm_space[] = {
	{0},
	{.variant = 2, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4},
	{.variant = 2, .tile_m = 128, .tile_n = 256, .warps = 8, .stages = 3},
	{.variant = 2, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6},
	{.variant = 2, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 8},
	{.variant = 2, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6, .split_k = 2},
	{.variant = 2, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6, .split_k = 3},
	{.variant = 2, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 8, .split_k = 2},
	{.variant = 2, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 8, .split_k = 4},
	{.variant = 2, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4, .split_k = 2},
	{.variant = 3, .tile_m = 128, .tile_n = 256, .warps = 12, .stages = 4},
	{.variant = 3, .tile_m = 128, .tile_n = 128, .warps = 12, .stages = 6},
	{.variant = 3, .tile_m = 64, .tile_n = 128, .warps = 8, .stages = 8},
	{.variant = 1, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 3},
	{.variant = 1, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 4},
};
const size_t at_gemm_space_n = SN_COUNT(at_gemm_space);

/* Adds, for every product item asked for (asked: the config q was
 * lowered with; NULL: each record's), the GEMM template's kernel that
 * q runs at the item's step in place of cuBLASLt: a candidate when it
 * reads and writes only the product's buffers (its A, B, bias, C and
 * output, as the plan's step names them). */
static void harvest_mm(item *it, size_t n, const cg_plan *p, const cg_plan *q, const cg_config *asked)
{
	if (q->nsteps != p->nsteps)
		return; /* other groups: not comparable */
	for (size_t i = 0; i < n; i++) {
		item *x = &it[i];
		if (x->kind != AT_BLAS || (asked ? !x->want : !(x->record && x->rec.kind == AT_GEMM)) || x->nc < 1 ||
		    x->c[0].kern)
			continue; /* not asked, or no cuBLASLt default to compare with */
		const cg_pstep *qs = &q->steps[x->step];
		const cg_mm *g = &p->steps[x->step].mm;
		if (qs->kind != CG_LAUNCH || qs->kern >= q->nkerns || !q->kerns[qs->kern].src)
			continue;
		const cg_kern *k = &q->kerns[qs->kern];
		const cg_config *a = asked ? asked : &x->rec.cfg;
		if (!consistent(a, &k->cfg))
			continue;
		bool ok = qs->nargs <= CG_MAX_ARGS, dup = false;
		for (uint32_t j = 0; ok && j < qs->nargs; j++) {
			uint32_t b = qs->args[j];
			ok = b == g->a || b == g->b || b == g->out || (b == g->bias && b != CG_NO_BUF) ||
			     (b == g->c && b != CG_NO_BUF);
		}
		for (size_t j = 0; ok && j < x->nc && !dup; j++)
			dup = x->c[j].kern && !strcmp(x->c[j].name, k->name);
		if (!ok || dup)
			continue;
		cand c;
		memset(&c, 0, sizeof c);
		if (!(c.src = strdup(k->src)))
			continue;
		c.kern = true;
		c.asked = *a;
		c.cfg = k->cfg;
		c.ntmaps = k->ntmaps; /* over argument positions: the same on the item's buffers */
		memcpy(c.tmaps, k->tmaps, sizeof c.tmaps);
		memcpy(c.name, k->name, sizeof c.name);
		memcpy(c.grid, qs->grid, sizeof c.grid);
		memcpy(c.block, qs->block, sizeof c.block);
		c.smem = qs->smem;
		c.nargs = qs->nargs;
		memcpy(c.args, qs->args, sizeof c.args);
		if (push(&x->c, &x->nc, &c))
			cand_free(&c);
	}
}

/* Adds the kernels of plan q that differ from what each item has; asked:
 * the config q was lowered with (NULL: each record's). A kernel that does
 * not report what it was asked for was left at its default. */
static int harvest(item *it, size_t n, const cg_plan *q, const cg_config *asked)
{
	for (uint32_t kk = 0; kk < q->nkerns; kk++) {
		item *x = find(it, n, AT_KERNEL, q->kerns[kk].spec);
		if (!x || (asked ? !x->want : !x->record))
			continue;
		const cg_config *a = asked ? asked : &x->rec.cfg;
		if (!consistent(a, &q->kerns[kk].cfg)) {
			x->rec_bad |= !asked; /* the renderer does not take the record's config */
			continue;
		}
		bool dup = false;
		for (size_t k = 0; k < x->nc && !dup; k++)
			dup = !strcmp(x->c[k].name, q->kerns[kk].name);
		if (dup)
			continue;
		cand c;
		if (cand_of(q, kk, &c) != SN_OK)
			continue;
		c.asked = *a;
		/* the same buffers in the same order, or it is not comparable */
		if (c.nargs != x->c[0].nargs || memcmp(c.args, x->c[0].args, sizeof c.args) || push(&x->c, &x->nc, &c)) {
			cand_free(&c);
			continue;
		}
	}
	return SN_OK;
}

static int collect(tuner *tu, item **out, size_t *nout, sn_err *e)
{
	cg_plan *p = tu->p;
	item *it = NULL;
	size_t n = 0, cap = 0;
	for (uint32_t s = 0; s < p->nsteps; s++) {
		const cg_pstep *ps = &p->steps[s];
		uint8_t spec[16];
		at_kind k = ps->kind == CG_MATMUL ? AT_BLAS : AT_KERNEL;
		if (k == AT_BLAS)
			at_mm_spec(&ps->mm, spec);
		else
			memcpy(spec, p->kerns[ps->kern].spec, 16);
		item *x = find(it, n, k, spec);
		if (!x) {
			if (n == cap) {
				size_t nc = cap ? 2 * cap : 32;
				item *ni = realloc(it, nc * sizeof *ni);
				if (!ni) {
					items_free(it, n);
					return sn_errf(e, SN_EINTERNAL, "out of memory");
				}
				it = ni;
				cap = nc;
			}
			x = &it[n++];
			memset(x, 0, sizeof *x);
			x->kind = k;
			memcpy(x->spec, spec, 16);
			x->step = s;
			x->chosen = -1;
			if (k == AT_KERNEL) {
				cand d;
				x->kern = ps->kern;
				if (cand_of(p, ps->kern, &d) != SN_OK || push(&x->c, &x->nc, &d)) {
					items_free(it, n);
					return sn_errf(e, SN_EINTERNAL, "out of memory");
				}
			}
		}
		x->uses++;
		x->est += ps->bytes / 3e12 + ps->flops / 4e14;
	}
	*out = it;
	*nout = n;
	return SN_OK;
}

/* ---- measuring ---- */

/* Device buffers with random contents and a pristine copy of each (to
 * restore those a run writes). */
typedef struct bufs {
	unsigned n;
	CUdeviceptr d[CG_MAX_ARGS + 2], keep[CG_MAX_ARGS + 2];
	ir_dtype t[CG_MAX_ARGS + 2];
	size_t bytes[CG_MAX_ARGS + 2];
	bool written[CG_MAX_ARGS + 2]; /* the default's run changed it */
	void *host[CG_MAX_ARGS + 2];   /* written: the default's result (host check) */
	CUdeviceptr want[CG_MAX_ARGS + 2]; /* written: the default's result (device check) */
} bufs;

static void bufs_free(tuner *tu, bufs *b)
{
	for (unsigned i = 0; i < b->n; i++) {
		rt_dev_free(tu->c, b->d[i]);
		rt_dev_free(tu->c, b->keep[i]);
		if (b->want[i])
			rt_dev_free(tu->c, b->want[i]);
		free(b->host[i]);
	}
	memset(b, 0, sizeof *b);
}

/* Whether b can be checked on the device. */
static bool on_device(const tuner *tu, const bufs *b)
{
	bool ok = tu->chk != NULL;
	for (unsigned i = 0; ok && i < b->n; i++)
		ok = at_check_takes(b->t[i]);
	return ok;
}

static int bufs_make(tuner *tu, bufs *b, sn_err *e)
{
	if (on_device(tu, b)) {
		for (unsigned i = 0; i < b->n; i++) {
			size_t n = b->bytes[i] / ir_dtype_size(b->t[i]);
			uint64_t seed = next(&tu->seed);
			if (rt_dev_alloc(tu->c, b->bytes[i], &b->d[i], e) || rt_dev_alloc(tu->c, b->bytes[i], &b->keep[i], e) ||
			    at_check_fill(tu->chk, b->d[i], b->t[i], n, seed, e) ||
			    rt_dev_copy(tu->c, b->keep[i], b->d[i], b->bytes[i], e))
				return e->code;
		}
		return SN_OK;
	}
	for (unsigned i = 0; i < b->n; i++) {
		void *h = malloc(b->bytes[i] ? b->bytes[i] : 1);
		if (!h)
			return sn_errf(e, SN_EINTERNAL, "out of memory");
		fill(h, b->bytes[i], b->t[i], &tu->seed);
		int rc = rt_dev_alloc(tu->c, b->bytes[i], &b->d[i], e) || rt_dev_alloc(tu->c, b->bytes[i], &b->keep[i], e) ||
			 rt_dev_upload(tu->c, b->d[i], h, b->bytes[i], e) || rt_dev_upload(tu->c, b->keep[i], h, b->bytes[i], e);
		b->host[i] = h; /* the initial contents until the default's run */
		if (rc)
			return e->code;
	}
	return SN_OK;
}

/* Puts back what a run wrote. */
static int bufs_restore(tuner *tu, bufs *b, sn_err *e)
{
	for (unsigned i = 0; i < b->n; i++)
		if (b->written[i] && rt_dev_copy(tu->c, b->d[i], b->keep[i], b->bytes[i], e))
			return e->code;
	return SN_OK;
}

/* After the default's run: which buffers it wrote (kept as the results
 * to match). */
static int bufs_mark(tuner *tu, bufs *b, sn_err *e)
{
	if (on_device(tu, b)) {
		for (unsigned i = 0; i < b->n; i++) {
			uint64_t bad;
			size_t n = b->bytes[i] / ir_dtype_size(b->t[i]);
			if (at_check_diff(tu->chk, b->keep[i], b->d[i], b->t[i], n, -1, false, &bad, e))
				return e->code;
			b->written[i] = bad > 0;
			if (b->written[i] && (rt_dev_alloc(tu->c, b->bytes[i], &b->want[i], e) ||
					      rt_dev_copy(tu->c, b->want[i], b->d[i], b->bytes[i], e)))
				return e->code;
		}
		return SN_OK;
	}
	for (unsigned i = 0; i < b->n; i++) {
		void *h = malloc(b->bytes[i] ? b->bytes[i] : 1);
		if (!h || rt_dev_download(tu->c, h, b->d[i], b->bytes[i], e)) {
			free(h);
			return e->code ? e->code : sn_errf(e, SN_EINTERNAL, "out of memory");
		}
		b->written[i] = memcmp(h, b->host[i], b->bytes[i]) != 0;
		free(b->host[i]);
		b->host[i] = b->written[i] ? h : NULL;
		if (!b->written[i])
			free(h);
	}
	return SN_OK;
}

/* Whether the last run wrote what the default's did. */
static bool bufs_match(tuner *tu, bufs *b, double rtol, bool scale, sn_err *e)
{
	bool ok = true;
	if (on_device(tu, b)) {
		for (unsigned i = 0; i < b->n && ok; i++) {
			uint64_t bad = 0;
			size_t n = b->bytes[i] / ir_dtype_size(b->t[i]);
			ok = !b->written[i] || (at_check_diff(tu->chk, b->want[i], b->d[i], b->t[i], n, rtol, scale, &bad, e) ==
							SN_OK &&
						bad == 0);
		}
		return ok;
	}
	for (unsigned i = 0; i < b->n && ok; i++) {
		if (!b->written[i])
			continue;
		void *h = malloc(b->bytes[i] ? b->bytes[i] : 1);
		ok = h && rt_dev_download(tu->c, h, b->d[i], b->bytes[i], e) == SN_OK &&
		     matches(b->t[i], b->host[i], h, b->bytes[i] / ir_dtype_size(b->t[i]), rtol, scale);
		free(h);
	}
	return ok;
}

typedef struct klaunch {
	CUtensorMap tm[CG_MAX_TMAPS]; /* first: CUtensorMap is 128-byte aligned */
	rt_kfn *k;
	const cand *c;
	CUdeviceptr args[CG_MAX_ARGS];
} klaunch;

static int launch_kernel(void *ctx, sn_err *e)
{
	klaunch *l = ctx;
	return rt_kfn_launch_tm(l->k, l->c->grid, l->c->block, l->c->smem, l->args, l->c->nargs, l->tm, l->c->ntmaps, e);
}

/* The candidate's tensor maps (the TMA variant's), over the buffers it is
 * launched with (lbytes: their sizes); false when one cannot be encoded. */
static bool encode_tmaps(tuner *tu, klaunch *l, const size_t *lbytes, sn_err *e)
{
	const cand *c = l->c;
	for (unsigned t = 0; t < c->ntmaps; t++) {
		unsigned a = c->tmaps[t].arg;
		if (a >= c->nargs || rt_tmap_encode(tu->c, &c->tmaps[t], l->args[a], lbytes[a], &l->tm[t], e) != SN_OK)
			return false;
	}
	return true;
}

typedef struct blaunch {
	rt_blas *b;
	rt_gemm *gm;
	CUdeviceptr a, bm, bias, cm, out;
	CUstream s;
} blaunch;

static int launch_gemm(void *ctx, sn_err *e)
{
	blaunch *l = ctx;
	return rt_gemm_run_c(l->b, l->gm, l->a, l->bm, l->bias, l->cm, l->out, l->s, e);
}

static bool over(const tuner *tu, double tk)
{
	double t = sn_now();
	return t - tu->t0 >= tu->budget || t - tk >= tu->cap;
}

/* A device error leaves the context unusable: only those stop the tuner. */
static bool fatal(const sn_err *e)
{
	return strstr(e->msg, "CUDA_ERROR_ILLEGAL") || strstr(e->msg, "CUDA_ERROR_LAUNCH_FAILED") ||
	       strstr(e->msg, "CUDA_ERROR_MISALIGNED") || strstr(e->msg, "CUDA_ERROR_HARDWARE") ||
	       strstr(e->msg, "CUDA_ERROR_LAUNCH_TIMEOUT");
}

/* One candidate (index i of x): checked against the default's results
 * (i = 0: the default's run records them), then timed unless x is decided
 * by a record. */
static int try_cand(tuner *tu, item *x, size_t i, bufs *b, int (*launch)(void *, sn_err *), void *ctx, double rtol,
		    bool scale, sn_err *e)
{
	cand *c = &x->c[i];
	sn_err le = {0};
	bool ok = bufs_restore(tu, b, &le) == SN_OK && launch(ctx, &le) == SN_OK && rt_sync(tu->c, &le) == SN_OK;
	if (ok && i == 0)
		ok = bufs_mark(tu, b, &le) == SN_OK;
	else if (ok)
		ok = bufs_match(tu, b, rtol, scale, &le);
	double med = 0, mx = 0;
	if (ok && !x->record) {
		ok = rt_time(tu->tm, launch, ctx, AT_REPS, &med, &mx, &le) == SN_OK;
		tu->s->timings += ok;
		tu->s->candidates += ok && i > 0;
		if (ok && i > 0 && med > AT_TOO_SLOW * x->c[0].ms + 1.0)
			ok = false;
	}
	if (le.code && fatal(&le))
		return sn_errf(e, SN_EINTERNAL, "autotuning: %s: %s", x->kind == AT_BLAS ? "cuBLASLt" : c->name, le.msg);
	c->ok = ok;
	c->ms = med;
	tu->s->failed += !ok && i > 0;
	return SN_OK;
}

static int measure_kernel(tuner *tu, item *x, sn_err *e)
{
	const cg_plan *p = tu->p;
	cand *d = &x->c[0];
	bufs b = {.n = d->nargs};
	for (unsigned i = 0; i < b.n; i++) {
		const cg_buf *pb = &p->bufs[d->args[i]];
		b.t[i] = pb->dtype;
		b.bytes[i] = (size_t)pb->bytes;
	}
	int rc = bufs_make(tu, &b, e);
	double tk = sn_now();
	for (size_t i = 0; !rc && i < x->nc; i++) {
		cand *c = &x->c[i];
		if (i > 0 && !x->record && over(tu, tk)) {
			tu->s->budget_out |= sn_now() - tu->t0 >= tu->budget;
			break;
		}
		rt_kfn *k = NULL;
		sn_err le = {0};
		if (!c->cubin || rt_kfn_load(tu->c, c->cubin, c->name, c->smem, &k, &le) != SN_OK) {
			if (le.code && fatal(&le))
				rc = sn_errf(e, SN_EINTERNAL, "autotuning: %s", le.msg);
			tu->s->failed += i > 0;
			if (i == 0)
				break; /* no default: nothing to compare with */
			continue;
		}
		/* the same buffer in two places is one allocation */
		klaunch l = {.k = k, .c = c};
		size_t lbytes[CG_MAX_ARGS] = {0};
		for (unsigned a = 0; a < c->nargs; a++)
			for (unsigned j = 0; j < b.n; j++)
				if (c->args[a] == d->args[j]) {
					l.args[a] = b.d[j];
					lbytes[a] = b.bytes[j];
					break;
				}
		if (!encode_tmaps(tu, &l, lbytes, &le)) {
			rt_kfn_free(k);
			tu->s->failed += i > 0;
			if (i == 0)
				break;
			continue;
		}
		/* a contraction's candidates add in other orders (split-K, k
		 * groups, other slices): its output is matched relative to its
		 * largest value, as a product's is; other kernels element by
		 * element */
		bool contract = p->steps[x->step].flops > 0;
		rc = try_cand(tu, x, i, &b, launch_kernel, &l, rtol_of(b.t[b.n - 1], contract && tu->t->tf32), contract,
			      e);
		rt_kfn_free(k);
		if (i == 0 && !c->ok)
			break;
	}
	bufs_free(tu, &b);
	return rc;
}

/* Candidate i of product item x, the GEMM template's kernel: its
 * arguments are the product's buffers, so it runs on b's. */
static int measure_mm_kernel(tuner *tu, item *x, size_t i, const cg_mm *g, bufs *b, sn_err *e)
{
	cand *c = &x->c[i];
	rt_kfn *k = NULL;
	sn_err le = {0};
	if (!c->cubin || rt_kfn_load(tu->c, c->cubin, c->name, c->smem, &k, &le) != SN_OK) {
		tu->s->failed++;
		return le.code && fatal(&le) ? sn_errf(e, SN_EINTERNAL, "autotuning: %s", le.msg) : SN_OK;
	}
	klaunch l = {.k = k, .c = c};
	size_t lbytes[CG_MAX_ARGS] = {0};
	for (unsigned a = 0; a < c->nargs; a++) {
		uint32_t id = c->args[a];
		unsigned r = id == g->a ? 0 : id == g->b ? 1 : id == g->out ? 2 : id == g->bias ? 3 : 4;
		l.args[a] = b->d[r];
		lbytes[a] = b->bytes[r];
	}
	if (!encode_tmaps(tu, &l, lbytes, &le)) {
		rt_kfn_free(k);
		tu->s->failed++;
		return SN_OK;
	}
	int rc = try_cand(tu, x, i, b, launch_kernel, &l, rtol_of(g->dtype, g->tf32), true, e);
	rt_kfn_free(k);
	return rc;
}

static int measure_blas(tuner *tu, item *x, sn_err *e)
{
	const cg_mm *g = &tu->p->steps[x->step].mm;
	size_t es = ir_dtype_size(g->dtype);
	int64_t nb = g->batch > 1 ? g->batch - 1 : 0;
	bufs b = {.n = 5};
	b.bytes[0] = (size_t)(nb * g->stride_a + g->m * g->k) * es;
	b.bytes[1] = (size_t)(nb * g->stride_b + g->k * g->n) * es;
	b.bytes[2] = (size_t)(nb * g->stride_c + g->m * g->n) * es; /* out */
	b.bytes[3] = g->bias != CG_NO_BUF ? (size_t)g->n * es : 0;
	b.bytes[4] = g->c != CG_NO_BUF ? b.bytes[2] : 0;
	for (int i = 0; i < 5; i++)
		b.t[i] = g->dtype;
	int rc = bufs_make(tu, &b, e);
	double tk = sn_now();
	for (size_t i = 0; !rc && i < x->nc; i++) {
		cand *c = &x->c[i];
		if (i > 0 && !x->record && over(tu, tk)) {
			tu->s->budget_out |= sn_now() - tu->t0 >= tu->budget;
			break;
		}
		if (c->kern) {
			rc = measure_mm_kernel(tu, x, i, g, &b, e);
			continue;
		}
		cg_mm m = *g;
		m.algo = c->algo;
		rt_gemm *gm = NULL;
		cg_blas_algo used;
		sn_err le = {0};
		if (rt_gemm_prepare(tu->blas, &m, &gm, &used, &le) != SN_OK || !same_algo(&used, &c->algo)) {
			rt_gemm_free(gm);
			tu->s->failed += i > 0;
			if (i == 0)
				break;
			continue; /* cublasLtMatmulAlgoCheck refused it here */
		}
		blaunch l = {.b = tu->blas, .gm = gm, .a = b.d[0], .bm = b.d[1], .out = b.d[2],
			     .bias = g->bias != CG_NO_BUF ? b.d[3] : 0, .cm = g->c != CG_NO_BUF ? b.d[4] : 0,
			     .s = tu->c->stream};
		rc = try_cand(tu, x, i, &b, launch_gemm, &l, rtol_of(g->dtype, g->tf32), true, e);
		rt_gemm_free(gm);
		if (i == 0 && !c->ok)
			break;
	}
	bufs_free(tu, &b);
	return rc;
}

/* Compiles, in parallel as one NVRTC batch, the kernel candidates of
 * items[0..n) that have no cubin yet (all of an item's when all is set,
 * else only its default, c[0]), and, when plan is set, every kernel of
 * the plan no item runs (straight into the plan). A batch that fails is
 * compiled job by job, so one bad candidate only scores itself out. */
static void compile(tuner *tu, item *items, size_t n, const bool *all, bool plan)
{
	cg_plan *p = tu->p;
	bool *ours = plan ? calloc(p->nkerns ? p->nkerns : 1, 1) : NULL;
	if (plan && !ours)
		return;
	for (size_t i = 0; plan && i < n; i++)
		if (items[i].kind == AT_KERNEL)
			ours[items[i].kern] = true;
	size_t nj = 0;
	for (size_t i = 0; i < n; i++)
		nj += items[i].nc; /* products: their template kernels */
	for (uint32_t k = 0; plan && k < p->nkerns; k++)
		nj += !ours[k] && !p->kerns[k].cubin;
	nj += plan;
	rt_job *jobs = calloc(nj ? nj : 1, sizeof *jobs);
	cand **who = calloc(nj ? nj : 1, sizeof *who);
	cg_kern **kwho = calloc(nj ? nj : 1, sizeof *kwho);
	if (!jobs || !who || !kwho) {
		free(jobs);
		free(who);
		free(kwho);
		free(ours);
		return;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t c = 0; c < items[i].nc && (c == 0 || !all || all[i]); c++) {
			if (items[i].c[c].cubin || !items[i].c[c].src)
				continue;
			jobs[k].name = items[i].c[c].name;
			jobs[k].src = items[i].c[c].src;
			who[k++] = &items[i].c[c];
		}
	for (uint32_t q = 0; plan && q < p->nkerns; q++)
		if (!ours[q] && !p->kerns[q].cubin && p->kerns[q].src) {
			jobs[k].name = p->kerns[q].name;
			jobs[k].src = p->kerns[q].src;
			kwho[k++] = &p->kerns[q];
		}
	size_t chk = SIZE_MAX; /* the check kernels, with the first batch */
	if (plan && !tu->chk_cubin) {
		jobs[k].name = AT_CHECK_JOB;
		jobs[k].src = at_check_src();
		chk = k++;
	}
	nj = k;
	sn_err e = {0};
	rt_compile_stats cs;
	if (nj && rt_compile_all(tu->nv, jobs, nj, tu->c->sm, tu->o->cache_dir, 0, NULL, tu->o->warn, tu->o->ctx, &cs,
				 &e) != SN_OK) {
		for (size_t j = 0; j < nj; j++) {
			sn_err e1 = {0};
			rt_compile_all(tu->nv, &jobs[j], 1, tu->c->sm, tu->o->cache_dir, 1, NULL, tu->o->warn, tu->o->ctx,
				       NULL, &e1);
		}
	}
	for (size_t j = 0; j < nj; j++) {
		if (j == chk) {
			tu->chk_cubin = jobs[j].cubin;
			tu->chk_size = jobs[j].size;
		} else if (who[j]) {
			who[j]->cubin = jobs[j].cubin;
			who[j]->cubin_size = jobs[j].size;
		} else {
			kwho[j]->cubin = jobs[j].cubin; /* the plan's own: compile_kernels skips it */
			kwho[j]->cubin_size = jobs[j].size;
		}
		jobs[j].cubin = NULL;
	}
	rt_jobs_free(jobs, nj);
	free(jobs);
	free(who);
	free(kwho);
	free(ours);
}

/* A product's candidates: the heuristic's top algorithms (the first is
 * the default). */
static int blas_space(tuner *tu, item *x, int max, sn_err *e)
{
	cg_blas_algo al[AT_MAX_BLAS];
	int na = 0;
	sn_err le = {0};
	if (rt_gemm_candidates(tu->blas, &tu->p->steps[x->step].mm, al, max, &na, &le) != SN_OK)
		na = 0; /* untunable here: the load's heuristic decides */
	for (int i = 0; i < na; i++) {
		cand c;
		memset(&c, 0, sizeof c);
		c.algo = al[i];
		bool dup = false;
		for (size_t k = 0; k < x->nc && !dup; k++)
			dup = same_algo(&x->c[k].algo, &c.algo);
		if (!dup && push(&x->c, &x->nc, &c))
			return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	return SN_OK;
}

/* A stored record for x: kept in x->rec when it is for this kind of
 * item and plausible; a kernel's is rendered by the record relowering, a
 * product's algorithm is checked by cuBLASLt when measured. */
static int from_record(tuner *tu, item *x, sn_err *e)
{
	bool found = false;
	at_record r;
	at_store_get(tu->st, x->spec, &tu->dev, &r, &found);
	if (!found)
		return SN_OK;
	bool kind_ok = r.kind == x->kind || (x->kind == AT_BLAS && r.kind == AT_GEMM);
	if (!kind_ok || (r.kind != AT_BLAS && !at_config_plausible(&r.cfg))) {
		tu->s->rejected++;
		return SN_OK;
	}
	x->record = true;
	x->rec = r;
	if (x->kind == AT_BLAS) {
		if (blas_space(tu, x, 1, e))
			return e->code;
		if (x->nc < 1) {
			x->record = false;
			tu->s->rejected++;
			return SN_OK;
		}
		if (r.kind == AT_BLAS && !same_algo(&x->c[0].algo, &r.algo)) {
			cand c;
			memset(&c, 0, sizeof c);
			c.algo = r.algo;
			if (push(&x->c, &x->nc, &c))
				return sn_errf(e, SN_EINTERNAL, "out of memory");
		}
	}
	return SN_OK;
}

/* The winner: the fastest candidate that passed, else the default. */
static void decide(tuner *tu, item *x)
{
	at_tune_stats *s = tu->s;
	if (x->record) {
		/* checked, not timed: the record's choice if it matched */
		x->chosen = x->nc > 1 && x->c[1].ok ? 1 : 0;
		if (x->nc > 1 && !x->c[1].ok)
			s->rejected++;
		s->from_records++;
		s->default_ms += x->uses * x->rec.default_ms;
		s->tuned_ms += x->uses * (x->chosen ? x->rec.ms : x->rec.default_ms);
		return;
	}
	if (x->nc == 0 || !x->c[0].ok) {
		x->chosen = -1;
		s->untuned++;
		return;
	}
	int best = 0;
	size_t tried = 0;
	for (size_t i = 1; i < x->nc; i++) {
		tried += x->c[i].ok;
		if (x->c[i].ok && x->c[i].ms < x->c[best].ms)
			best = (int)i;
	}
	x->chosen = best;
	if (x->nc > 1 && tried == 0 && s->budget_out) {
		s->untuned++;
		return; /* nothing timed: no record, so a later run tunes it */
	}
	s->tuned++;
	s->default_ms += x->uses * x->c[0].ms;
	s->tuned_ms += x->uses * x->c[best].ms;
	at_record r;
	memset(&r, 0, sizeof r);
	r.kind = x->kind;
	memcpy(r.spec, x->spec, 16);
	r.dev = tu->dev;
	if (x->kind == AT_KERNEL || x->c[best].kern) {
		r.kind = x->kind == AT_KERNEL ? AT_KERNEL : AT_GEMM; /* a product the template won */
		r.cfg = x->c[best].asked; /* what to ask the renderer for again */
	} else {
		r.algo = x->c[best].algo;
	}
	r.algo.valid = r.kind == AT_BLAS;
	r.ms = x->c[best].ms;
	r.default_ms = x->c[0].ms;
	r.candidates = (int32_t)(tried + 1);
	snprintf(r.version, sizeof r.version, "%s", SINTER_VERSION);
	at_store_put(tu->st, &r);
}

/* Buffer id of the product step to that plays the role id plays in from
 * (A, B, output, bias, C). */
static uint32_t role(const cg_mm *from, const cg_mm *to, uint32_t id)
{
	return id == from->a ? to->a : id == from->b ? to->b : id == from->out ? to->out : id == from->bias ? to->bias
													 : to->c;
}

/* The GEMM template won product x: every cuBLASLt step of x's spec
 * becomes a launch of the winner's kernel (added to the plan once, its
 * cubin moved in), on that step's buffers. */
static int patch_mm_kernel(tuner *tu, item *x, cand *c, sn_err *e)
{
	cg_plan *p = tu->p;
	uint32_t kk = 0;
	while (kk < p->nkerns && strcmp(p->kerns[kk].name, c->name))
		kk++;
	if (kk == p->nkerns) {
		cg_kern *nk = realloc(p->kerns, (p->nkerns + 1) * sizeof *nk);
		if (!nk)
			return sn_errf(e, SN_EINTERNAL, "out of memory");
		p->kerns = nk;
		cg_kern *k = &p->kerns[p->nkerns];
		memset(k, 0, sizeof *k);
		if (!(k->src = strdup(c->src)))
			return sn_errf(e, SN_EINTERNAL, "out of memory");
		p->nkerns++;
		memcpy(k->name, c->name, sizeof k->name);
		cg_spec_key(c->src, k->spec);
		k->cfg = c->cfg;
		k->ntmaps = c->ntmaps;
		memcpy(k->tmaps, c->tmaps, sizeof k->tmaps);
		k->cubin = c->cubin; /* moved: compile_kernels skips it */
		k->cubin_size = c->cubin ? c->cubin_size : 0;
		c->cubin = NULL;
	}
	const cg_mm from = p->steps[x->step].mm;
	for (uint32_t s = 0; s < p->nsteps; s++) {
		cg_pstep *ps = &p->steps[s];
		if (ps->kind != CG_MATMUL)
			continue;
		uint8_t spec[16];
		at_mm_spec(&ps->mm, spec);
		if (memcmp(spec, x->spec, 16))
			continue;
		const cg_mm to = ps->mm;
		ps->kind = CG_LAUNCH;
		ps->kern = kk;
		memcpy(ps->grid, c->grid, sizeof c->grid);
		memcpy(ps->block, c->block, sizeof c->block);
		ps->smem = c->smem;
		ps->nargs = c->nargs;
		for (uint32_t a = 0; a < c->nargs; a++)
			ps->args[a] = role(&from, &to, c->args[a]);
		memset(&ps->mm, 0, sizeof ps->mm);
	}
	return SN_OK;
}

/* Puts x's winner into the plan. */
static int patch(tuner *tu, item *x, sn_err *e)
{
	cg_plan *p = tu->p;
	if (x->chosen < 0)
		return SN_OK;
	cand *c = &x->c[x->chosen];
	if (x->kind == AT_BLAS && c->kern)
		return patch_mm_kernel(tu, x, c, e);
	if (x->kind == AT_BLAS) {
		cg_blas_algo a = c->algo;
		a.valid = 1;
		for (uint32_t s = 0; s < p->nsteps; s++) {
			if (p->steps[s].kind != CG_MATMUL)
				continue;
			uint8_t spec[16];
			at_mm_spec(&p->steps[s].mm, spec);
			if (!memcmp(spec, x->spec, 16))
				p->steps[s].mm.algo = a;
		}
		return SN_OK;
	}
	cg_kern *k = &p->kerns[x->kern];
	if (x->chosen == 0) {
		if (!k->cubin && c->cubin) { /* compiled here: compile_kernels skips it */
			k->cubin = c->cubin;
			k->cubin_size = c->cubin_size;
			c->cubin = NULL;
		}
		return SN_OK;
	}
	char *src = strdup(c->src);
	if (!src)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	free(k->src);
	k->src = src;
	memcpy(k->name, c->name, sizeof k->name);
	k->cfg = c->cfg;
	k->ntmaps = c->ntmaps;
	memcpy(k->tmaps, c->tmaps, sizeof k->tmaps);
	if (!p->map && !p->borrowed)
		free(k->cubin);
	k->cubin = c->cubin; /* moved: compile_kernels skips it */
	k->cubin_size = c->cubin ? c->cubin_size : 0;
	c->cubin = NULL;
	for (uint32_t s = 0; s < p->nsteps; s++)
		if (p->steps[s].kind == CG_LAUNCH && p->steps[s].kern == x->kern) {
			memcpy(p->steps[s].grid, c->grid, sizeof c->grid);
			memcpy(p->steps[s].block, c->block, sizeof c->block);
			p->steps[s].smem = c->smem;
		}
	return SN_OK;
}

static int cmp_est(const void *a, const void *b)
{
	const item *x = a, *y = b;
	if (x->record != y->record)
		return x->record ? -1 : 1; /* records first: they cost no timing */
	return (x->est < y->est) - (x->est > y->est);
}

int at_tune_plan(const ir_graph *g, const cg_target *t, cg_plan *p, rt_cuda *c, at_store *st,
		 const at_tune_opts *o, at_tune_stats *s, sn_err *e)
{
	memset(s, 0, sizeof *s);
	tuner tu = {.g = g, .t = t, .p = p, .c = c, .st = st, .o = o, .s = s, .t0 = sn_now(), .seed = 0x9e3779b97f4a7c15ull};
	tu.budget = o->budget_s > 0 ? o->budget_s : AT_DEFAULT_BUDGET_S;
	tu.cap = o->kernel_cap_s > 0 ? o->kernel_cap_s : AT_DEFAULT_KERNEL_CAP_S;
	tu.tty = isatty(fileno(o->out ? o->out : stderr));
	at_device_of(c, &tu.dev);
	item *it = NULL;
	size_t n = 0;
	if (collect(&tu, &it, &n, e))
		return e->code;
	int rc = SN_OK;
	bool any_blas = false;
	for (size_t i = 0; i < n; i++)
		any_blas |= it[i].kind == AT_BLAS;
	if ((rc = rt_nvrtc_open(&tu.nv, e)) || (rc = rt_timer_open(c, &tu.tm, e)) ||
	    (any_blas && (rc = rt_blas_open(c, &tu.blas, e))))
		goto done;
	/* records: a kernel's config must render to exactly that config */
	bool rec_kernels = false;
	for (size_t i = 0; i < n && !rc; i++) {
		rc = from_record(&tu, &it[i], e);
		rec_kernels |= it[i].record && (it[i].kind == AT_KERNEL || it[i].rec.kind == AT_GEMM);
	}
	if (rc)
		goto done;
	if (rec_kernels) {
		pick_ctx pc = {.it = it, .n = n};
		cg_plan *q = NULL;
		if (relower(&tu, &pc, &q) == SN_OK) {
			harvest(it, n, q, NULL);
			harvest_mm(it, n, p, q, NULL);
		}
		cg_plan_free(q);
	}
	for (size_t i = 0; i < n; i++) {
		item *x = &it[i];
		/* a kernel's record its renderer did not take, a product's
		 * template config the template did not */
		if (x->record && ((x->kind == AT_KERNEL && x->rec_bad) || (x->rec.kind == AT_GEMM && x->nc < 2))) {
			s->rejected++; /* this build does not render that config here */
			x->record = false;
		}
		x->want = !x->record;
	}
	/* candidates for the rest: products' algorithms (the heuristic's
	 * first is the default, c[0]), then the graph lowered once per config */
	for (size_t i = 0; i < n && !rc; i++)
		if (it[i].want && it[i].kind == AT_BLAS)
			rc = blas_space(&tu, &it[i], AT_MAX_BLAS, e);
	if (rc)
		goto done;
	bool want_kernels = false;
	for (size_t i = 0; i < n; i++)
		want_kernels |= it[i].want && it[i].kind == AT_KERNEL;
	for (size_t k = 0; want_kernels && k < at_space_n; k++) {
		pick_ctx pc = {.it = it, .n = n, .all = &at_space[k]};
		cg_plan *q = NULL;
		if (relower(&tu, &pc, &q) == SN_OK)
			harvest(it, n, q, &at_space[k]);
		cg_plan_free(q);
	}
	/* products: the GEMM template against cuBLASLt's algorithms */
	bool want_mm = false;
	for (size_t i = 0; i < n; i++)
		want_mm |= it[i].want && it[i].kind == AT_BLAS;
	for (size_t k = 0; want_mm && k < at_gemm_space_n; k++) {
		pick_ctx pc = {.it = it, .n = n, .mm_all = &at_gemm_space[k]};
		cg_plan *q = NULL;
		if (relower(&tu, &pc, &q) == SN_OK)
			harvest_mm(it, n, p, q, &at_gemm_space[k]);
		cg_plan_free(q);
	}
	/* an item with nothing to choose from is not tunable */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		bool keep = it[i].record || it[i].nc > 1;
		if (keep) {
			it[m++] = it[i];
		} else {
			for (size_t k = 0; k < it[i].nc; k++)
				cand_free(&it[i].c[k]);
			free(it[i].c);
		}
	}
	n = m;
	tu.total = n;
	s->tunable = n;
	s->specs = malloc((n ? n : 1) * sizeof *s->specs);
	if (!s->specs) {
		rc = sn_errf(e, SN_EINTERNAL, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		memcpy(s->specs[i], it[i].spec, 16);
	s->nspecs = n;
	qsort(it, n, sizeof *it, cmp_est);
	progress(&tu, false);
	/* One NVRTC batch first, so its wall is paid once: every default, every
	 * record's choice, the first chunk's candidates, and the plan's kernels
	 * nothing tunes. A second machine with imported records compiles
	 * nothing after it. */
	bool *all = calloc(n ? n : 1, sizeof *all);
	if (!all) {
		rc = sn_errf(e, SN_EINTERNAL, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		all[i] = it[i].record || i < AT_CHUNK;
	compile(&tu, it, n, all, true);
	free(all);
	if (tu.chk_cubin) {
		sn_err ce = {0};
		if (at_check_open(c, tu.chk_cubin, &tu.chk, &ce) != SN_OK && fatal(&ce)) {
			rc = sn_errf(e, SN_EINTERNAL, "autotuning: %s", ce.msg);
			goto done;
		}
	}
	for (size_t i0 = 0; i0 < n && !rc; i0 += AT_CHUNK) {
		size_t m = n - i0 < AT_CHUNK ? n - i0 : AT_CHUNK;
		bool spent = sn_now() - tu.t0 >= tu.budget;
		if (spent && !it[i0].record) {
			s->budget_out = true;
			/* the rest keep their defaults and get no record */
			for (size_t i = i0; i < n; i++, tu.done++)
				if (!it[i].record)
					s->untuned++;
			break;
		}
		compile(&tu, &it[i0], m, NULL, false);
		for (size_t i = i0; i < i0 + m && !rc; i++) {
			/* a record that chose the default needs no run */
			if (!(it[i].record && it[i].nc == 1))
				rc = it[i].kind == AT_KERNEL ? measure_kernel(&tu, &it[i], e) : measure_blas(&tu, &it[i], e);
			if (rc)
				break;
			decide(&tu, &it[i]);
			rc = patch(&tu, &it[i], e);
			tu.done++;
			progress(&tu, false);
		}
	}
	s->rejected += at_store_stats_of(st)->rejected;
done:
	s->seconds = sn_now() - tu.t0;
	if (!rc)
		progress(&tu, true);
	at_check_close(tu.chk);
	free(tu.chk_cubin);
	rt_blas_close(tu.blas);
	rt_timer_close(tu.tm);
	rt_nvrtc_close(tu.nv);
	items_free(it, n);
	if (rc)
		at_tune_stats_free(s);
	return rc;
}
