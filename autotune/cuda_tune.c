/* cuda_tune.c: the autotuner (at_tune.h).
 *
 * 1. Items: every unique elementwise kernel of the plan (by spec key) and
 *    every unique cuBLASLt product (by at_mm_spec), with how often the plan
 *    runs it and a cost estimate from its bytes and flops.
 * 2. A stored record for (spec, this device) decides an item without
 *    timing, once the renderer (or cublasLtMatmulAlgoCheck) accepts its
 *    choice and the chosen kernel's output matches the default's on random
 *    inputs; a record that fails either is rejected and counted.
 * 3. The other items, most expensive first, get candidates: elementwise
 *    block x vec configs the renderer accepts, or the cuBLASLt heuristic's
 *    top algorithms. Kernels are compiled with NVRTC on every core (through
 *    the kernel cache), a chunk of items at a time. Each candidate runs
 *    once on random inputs and must match the default's output; then it is
 *    timed (median of AT_REPS runs, the L2 flushed before each). A candidate
 *    that fails to compile, to launch, to match, or runs far slower than
 *    the default is scored out. The whole budget and each item's cap are
 *    checked before every candidate: when they run out the best so far
 *    wins (or the default). The winner goes into the plan and a record.
 * A kernel that faults on the device leaves the context unusable; that is
 * reported as an error (generated candidates are not expected to fault). */
#include "autotune/at_tune.h"

#include "codegen/cg_render.h"
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

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct cand {
	cg_config cfg;     /* AT_KERNEL */
	cg_blas_algo algo; /* AT_BLAS */
	char name[64];
	char *src;
	unsigned grid[3], block[3], smem;
	uint32_t nbufs;
	ir_ref bufs[CG_MAX_BUFS];
	void *cubin;
	size_t cubin_size;
	double ms;
	bool ok; /* compiled, matched, timed (or, for a record, checked) */
} cand;

typedef struct item {
	at_kind kind;
	uint8_t spec[16];
	uint32_t kern; /* AT_KERNEL: the plan's kernel */
	uint32_t step; /* AT_BLAS: a plan step computing it */
	ir_ref node;   /* AT_KERNEL: a node it renders */
	uint32_t uses;
	double est;
	cand *c; /* c[0]: the default */
	size_t nc;
	bool record; /* c[1] is a stored record's choice: check it, do not time */
	at_record rec;
	int chosen;  /* index into c, -1: none yet */
	double default_ms;
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
	double el = now() - tu->t0, left = tu->budget - el > 0 ? tu->budget - el : 0;
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
		switch (t) {
		case IR_F32: {
			uint32_t v = (uint32_t)(r >> 63) << 31 | (uint32_t)(122 + r % 5) << 23 | ((uint32_t)(r >> 8) & 0x7fffff);
			memcpy((char *)buf + 4 * i, &v, 4);
			break;
		}
		case IR_BF16: {
			uint16_t v = (uint16_t)((r >> 63) << 15 | (122 + r % 5) << 7 | ((r >> 8) & 0x7f));
			memcpy((char *)buf + 2 * i, &v, 2);
			break;
		}
		case IR_F16: {
			uint16_t v = (uint16_t)((r >> 63) << 15 | (10 + r % 5) << 10 | ((r >> 8) & 0x3ff));
			memcpy((char *)buf + 2 * i, &v, 2);
			break;
		}
		case IR_F8E4M3: ((uint8_t *)buf)[i] = (uint8_t)((r >> 63) << 7 | (3 + r % 4) << 3 | ((r >> 8) & 7)); break;
		case IR_F8E5M2: ((uint8_t *)buf)[i] = (uint8_t)((r >> 63) << 7 | (10 + r % 5) << 2 | ((r >> 8) & 3)); break;
		case IR_BOOL: ((uint8_t *)buf)[i] = (uint8_t)(r & 1); break;
		default: ir_store(t, buf, i, (double)(1 + r % 9)); break;
		}
	}
}

/* Whether got matches want (n elements of t): bit for bit, or within
 * rtol (relative to each value, or to the largest when scale). */
static bool matches(ir_dtype t, const void *want, const void *got, size_t n, double rtol, bool scale)
{
	if (!memcmp(want, got, n * ir_dtype_size(t)))
		return true;
	if (!ir_dtype_is_float(t))
		return false;
	double big = 0;
	if (scale)
		for (size_t i = 0; i < n; i++) {
			double a = fabs(ir_load(t, want, i));
			if (isfinite(a) && a > big)
				big = a;
		}
	for (size_t i = 0; i < n; i++) {
		double a = ir_load(t, want, i), b = ir_load(t, got, i);
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

static bool is_elementwise(const ir_node *n)
{
	ir_kind k = ir_ops[n->op].kind;
	return k == IR_K_UNARY || k == IR_K_BINARY || k == IR_K_TERNARY;
}

/* Renders node r with want into c (NULL want: the default). */
static int render(const tuner *tu, ir_ref r, const cg_config *want, cand *c)
{
	cg_step st;
	memset(&st, 0, sizeof st);
	st.node = r;
	sn_err e = {0};
	int rc = cg_render_elementwise(tu->g, r, tu->t, want, &st, &e);
	if (rc || st.kind != CG_STEP_KERNEL || !st.k.src) {
		free(st.k.src);
		return rc ? rc : SN_EINTERNAL;
	}
	memset(c, 0, sizeof *c);
	c->cfg = st.k.cfg;
	if (!c->cfg.block)
		c->cfg.block = (int32_t)st.k.block[0];
	memcpy(c->name, st.k.name, sizeof c->name);
	c->src = st.k.src;
	memcpy(c->grid, st.k.grid, sizeof c->grid);
	memcpy(c->block, st.k.block, sizeof c->block);
	c->smem = st.k.smem;
	c->nbufs = st.k.nbufs;
	memcpy(c->bufs, st.k.bufs, sizeof c->bufs);
	return SN_OK;
}

static bool same_cfg(const cg_config *a, const cg_config *b)
{
	return !memcmp(a, b, sizeof *a);
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

/* The elementwise search space, most promising first: the widest vector
 * the dtypes allow and blocks near 256 before narrow vectors and extreme
 * blocks. The renderer says which of these it accepts. */
static int kernel_space(tuner *tu, item *it)
{
	static const int blocks[] = {256, 128, 512, 1024, 64};
	static const int vecs[] = {16, 8, 4, 2, 1};
	for (size_t v = 0; v < SN_COUNT(vecs); v++)
		for (size_t b = 0; b < SN_COUNT(blocks); b++) {
			cg_config want = {.block = blocks[b], .vec = vecs[v]};
			cand c;
			if (render(tu, it->node, &want, &c) != SN_OK)
				continue; /* outside this kernel's space */
			bool dup = false;
			for (size_t k = 0; k < it->nc && !dup; k++)
				dup = !strcmp(it->c[k].name, c.name);
			if (dup || c.nbufs != it->c[0].nbufs || memcmp(c.bufs, it->c[0].bufs, sizeof c.bufs)) {
				cand_free(&c);
				continue;
			}
			if (push(&it->c, &it->nc, &c)) {
				cand_free(&c);
				return SN_EINTERNAL;
			}
		}
	return SN_OK;
}

static int collect(tuner *tu, item **out, size_t *nout, sn_err *e)
{
	const ir_graph *g = tu->g;
	cg_plan *p = tu->p;
	item *it = NULL;
	size_t n = 0, cap = 0;
#define GROW()                                                                       \
	do {                                                                         \
		if (n == cap) {                                                      \
			size_t nc_ = cap ? 2 * cap : 32;                             \
			item *ni_ = realloc(it, nc_ * sizeof *ni_);                 \
			if (!ni_) {                                                  \
				items_free(it, n);                                   \
				return sn_errf(e, SN_EINTERNAL, "out of memory");    \
			}                                                            \
			it = ni_;                                                    \
			cap = nc_;                                                   \
		}                                                                    \
	} while (0)
	for (ir_ref r = 0; r < g->nnodes; r++) {
		if (!is_elementwise(&g->nodes[r]))
			continue;
		cand d;
		if (render(tu, r, NULL, &d) != SN_OK)
			continue;
		uint8_t spec[16];
		cg_spec_key(d.src, spec);
		bool seen = false;
		for (size_t i = 0; i < n && !seen; i++)
			seen = it[i].kind == AT_KERNEL && !memcmp(it[i].spec, spec, 16);
		uint32_t kk = 0;
		while (kk < p->nkerns && strcmp(p->kerns[kk].name, d.name))
			kk++;
		if (seen || kk == p->nkerns) {
			cand_free(&d);
			continue;
		}
		GROW();
		item *x = &it[n++];
		memset(x, 0, sizeof *x);
		x->kind = AT_KERNEL;
		memcpy(x->spec, spec, 16);
		x->kern = kk;
		x->node = r;
		x->chosen = -1;
		x->c = malloc(sizeof *x->c);
		if (!x->c) {
			cand_free(&d);
			items_free(it, n);
			return sn_errf(e, SN_EINTERNAL, "out of memory");
		}
		x->c[0] = d;
		x->nc = 1;
		for (uint32_t s = 0; s < p->nsteps; s++)
			if (p->steps[s].kind == CG_LAUNCH && p->steps[s].kern == kk) {
				x->uses++;
				x->est += p->steps[s].bytes / 3e12;
			}
	}
	for (uint32_t s = 0; s < p->nsteps; s++) {
		if (p->steps[s].kind != CG_MATMUL)
			continue;
		uint8_t spec[16];
		at_mm_spec(&p->steps[s].mm, spec);
		item *x = NULL;
		for (size_t i = 0; i < n && !x; i++)
			if (it[i].kind == AT_BLAS && !memcmp(it[i].spec, spec, 16))
				x = &it[i];
		if (!x) {
			GROW();
			x = &it[n++];
			memset(x, 0, sizeof *x);
			x->kind = AT_BLAS;
			memcpy(x->spec, spec, 16);
			x->step = s;
			x->chosen = -1;
		}
		x->uses++;
		x->est += p->steps[s].bytes / 3e12 + p->steps[s].flops / 4e14;
	}
#undef GROW
	*out = it;
	*nout = n;
	return SN_OK;
}

/* ---- measuring ---- */

typedef struct bufs {
	CUdeviceptr d[CG_MAX_BUFS];
	ir_dtype t[CG_MAX_BUFS];
	size_t bytes[CG_MAX_BUFS];
	unsigned n;
} bufs;

static void bufs_free(tuner *tu, bufs *b)
{
	for (unsigned i = 0; i < b->n; i++)
		rt_dev_free(tu->c, b->d[i]);
	b->n = 0;
}

/* Device buffers of the given sizes, filled with random values. */
static int bufs_make(tuner *tu, bufs *b, sn_err *e)
{
	for (unsigned i = 0; i < b->n; i++) {
		b->d[i] = 0;
	}
	for (unsigned i = 0; i < b->n; i++) {
		void *h = malloc(b->bytes[i] ? b->bytes[i] : 1);
		if (!h)
			return sn_errf(e, SN_EINTERNAL, "out of memory");
		fill(h, b->bytes[i], b->t[i], &tu->seed);
		int rc = rt_dev_alloc(tu->c, b->bytes[i], &b->d[i], e) || rt_dev_upload(tu->c, b->d[i], h, b->bytes[i], e);
		free(h);
		if (rc)
			return e->code;
	}
	return SN_OK;
}

typedef struct klaunch {
	rt_kfn *k;
	const cand *c;
	CUdeviceptr args[CG_MAX_BUFS];
} klaunch;

static int launch_kernel(void *ctx, sn_err *e)
{
	klaunch *l = ctx;
	return rt_kfn_launch(l->k, l->c->grid, l->c->block, l->c->smem, l->args, l->c->nbufs, e);
}

typedef struct blaunch {
	rt_blas *b;
	rt_gemm *gm;
	CUdeviceptr a, bm, bias, out;
	CUstream s;
} blaunch;

static int launch_gemm(void *ctx, sn_err *e)
{
	blaunch *l = ctx;
	return rt_gemm_run(l->b, l->gm, l->a, l->bm, l->bias, l->out, l->s, e);
}

static bool over(const tuner *tu, double tk)
{
	double t = now();
	return t - tu->t0 >= tu->budget || t - tk >= tu->cap;
}

/* Runs launch once with the output prefilled with 0xff bytes, downloads
 * the output into host (bytes). */
static int run_once(tuner *tu, int (*launch)(void *, sn_err *), void *ctx, CUdeviceptr out, size_t bytes, void *host,
		    sn_err *e)
{
	if (rt_dev_fill(tu->c, out, 0xff, bytes, e) || launch(ctx, e) || rt_sync(tu->c, e))
		return e->code ? e->code : SN_EINTERNAL;
	return rt_dev_download(tu->c, host, out, bytes, e);
}

/* A device error leaves the context unusable: only those stop the tuner. */
static bool fatal(const sn_err *e)
{
	return strstr(e->msg, "CUDA_ERROR_ILLEGAL") || strstr(e->msg, "CUDA_ERROR_LAUNCH_FAILED") ||
	       strstr(e->msg, "CUDA_ERROR_MISALIGNED") || strstr(e->msg, "CUDA_ERROR_HARDWARE") ||
	       strstr(e->msg, "CUDA_ERROR_LAUNCH_TIMEOUT");
}

/* Checks and times item x's candidates (kernels: cubins ready). */
static int measure_kernel(tuner *tu, item *x, sn_err *e)
{
	const ir_graph *g = tu->g;
	cand *d = &x->c[0];
	bufs b = {.n = d->nbufs};
	for (unsigned i = 0; i < b.n; i++) {
		const ir_node *nd = &g->nodes[d->bufs[i]];
		b.t[i] = nd->dtype;
		b.bytes[i] = (size_t)ir_numel(&nd->shape) * ir_dtype_size(nd->dtype);
	}
	unsigned o = b.n - 1;
	void *want = malloc(b.bytes[o] ? b.bytes[o] : 1), *got = malloc(b.bytes[o] ? b.bytes[o] : 1);
	int rc = SN_OK;
	double tk = now();
	if (!want || !got) {
		rc = sn_errf(e, SN_EINTERNAL, "out of memory");
		goto done;
	}
	if ((rc = bufs_make(tu, &b, e)))
		goto done;
	double rtol = rtol_of(b.t[o], false);
	for (size_t i = 0; i < x->nc; i++) {
		cand *c = &x->c[i];
		if (i > 0 && !x->record && over(tu, tk)) {
			tu->s->budget_out |= now() - tu->t0 >= tu->budget;
			break;
		}
		if (!c->cubin) {
			tu->s->failed += i > 0;
			if (i == 0)
				break; /* no default: nothing to compare with */
			continue;
		}
		rt_kfn *k = NULL;
		sn_err le = {0};
		klaunch l = {.c = c};
		for (unsigned a = 0; a < b.n; a++)
			for (unsigned j = 0; j < b.n; j++)
				if (c->bufs[a] == d->bufs[j])
					l.args[a] = b.d[j];
		if (rt_kfn_load(tu->c, c->cubin, c->name, c->smem, &k, &le) != SN_OK) {
			if (fatal(&le)) {
				rc = sn_errf(e, SN_EINTERNAL, "autotuning: %s", le.msg);
				goto done;
			}
			tu->s->failed += i > 0;
			if (i == 0)
				break;
			continue;
		}
		l.k = k;
		int r2 = run_once(tu, launch_kernel, &l, b.d[o], b.bytes[o], i == 0 ? want : got, &le);
		bool ok = r2 == SN_OK && (i == 0 || matches(b.t[o], want, got, b.bytes[o] / ir_dtype_size(b.t[o]), rtol, false));
		double med = 0, mx = 0;
		if (ok && !x->record) {
			ok = rt_time(tu->tm, launch_kernel, &l, AT_REPS, &med, &mx, &le) == SN_OK;
			tu->s->timings += ok;
			tu->s->candidates += ok && i > 0;
			if (ok && i > 0 && med > AT_TOO_SLOW * x->c[0].ms + 1.0)
				ok = false;
		}
		rt_kfn_free(k);
		if (le.code && fatal(&le)) {
			rc = sn_errf(e, SN_EINTERNAL, "autotuning: kernel %s: %s", c->name, le.msg);
			goto done;
		}
		c->ok = ok;
		c->ms = med;
		if (!ok) {
			tu->s->failed += i > 0;
			if (i == 0)
				break;
		}
	}
done:
	bufs_free(tu, &b);
	free(want);
	free(got);
	return rc;
}

static int measure_blas(tuner *tu, item *x, sn_err *e)
{
	const cg_mm *g = &tu->p->steps[x->step].mm;
	size_t es = ir_dtype_size(g->dtype);
	int64_t nb = g->batch > 1 ? g->batch - 1 : 0;
	bufs b = {.n = g->bias != CG_NO_BUF ? 4 : 3};
	b.bytes[0] = (size_t)(nb * g->stride_a + g->m * g->k) * es;
	b.bytes[1] = (size_t)(nb * g->stride_b + g->k * g->n) * es;
	b.bytes[2] = (size_t)(nb * g->stride_c + g->m * g->n) * es;
	b.bytes[3] = (size_t)g->n * es;
	for (int i = 0; i < 4; i++)
		b.t[i] = g->dtype;
	size_t ob = b.bytes[2];
	void *want = malloc(ob ? ob : 1), *got = malloc(ob ? ob : 1);
	int rc = SN_OK;
	double tk = now();
	if (!want || !got) {
		rc = sn_errf(e, SN_EINTERNAL, "out of memory");
		goto done;
	}
	if ((rc = bufs_make(tu, &b, e)))
		goto done;
	double rtol = rtol_of(g->dtype, g->tf32);
	for (size_t i = 0; i < x->nc; i++) {
		cand *c = &x->c[i];
		if (i > 0 && !x->record && over(tu, tk)) {
			tu->s->budget_out |= now() - tu->t0 >= tu->budget;
			break;
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
			     .bias = b.n > 3 ? b.d[3] : 0, .s = tu->c->stream};
		int r2 = run_once(tu, launch_gemm, &l, b.d[2], ob, i == 0 ? want : got, &le);
		bool ok = r2 == SN_OK && (i == 0 || matches(g->dtype, want, got, ob / es, rtol, true));
		double med = 0, mx = 0;
		if (ok && !x->record) {
			ok = rt_time(tu->tm, launch_gemm, &l, AT_REPS, &med, &mx, &le) == SN_OK;
			tu->s->timings += ok;
			tu->s->candidates += ok && i > 0;
			if (ok && i > 0 && med > AT_TOO_SLOW * x->c[0].ms + 1.0)
				ok = false;
		}
		rt_gemm_free(gm);
		if (le.code && fatal(&le)) {
			rc = sn_errf(e, SN_EINTERNAL, "autotuning: cuBLASLt: %s", le.msg);
			goto done;
		}
		c->ok = ok;
		c->ms = med;
		if (!ok) {
			tu->s->failed += i > 0;
			if (i == 0)
				break;
		}
	}
done:
	bufs_free(tu, &b);
	free(want);
	free(got);
	return rc;
}

/* Compiles the kernel candidates of items[0..n) in parallel; a batch that
 * fails is compiled job by job, so one bad candidate only scores itself out. */
static void compile(tuner *tu, item *items, size_t n)
{
	size_t nj = 0;
	for (size_t i = 0; i < n; i++)
		if (items[i].kind == AT_KERNEL)
			nj += items[i].nc;
	rt_job *jobs = calloc(nj ? nj : 1, sizeof *jobs);
	cand **who = calloc(nj ? nj : 1, sizeof *who);
	if (!jobs || !who) {
		free(jobs);
		free(who);
		return;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t c = 0; items[i].kind == AT_KERNEL && c < items[i].nc; c++) {
			jobs[k].name = items[i].c[c].name;
			jobs[k].src = items[i].c[c].src;
			who[k++] = &items[i].c[c];
		}
	sn_err e = {0};
	rt_compile_stats cs;
	if (rt_compile_all(tu->nv, jobs, nj, tu->c->sm, tu->o->cache_dir, 0, NULL, tu->o->warn, tu->o->ctx, &cs, &e) !=
	    SN_OK) {
		for (size_t j = 0; j < nj; j++) {
			sn_err e1 = {0};
			rt_compile_all(tu->nv, &jobs[j], 1, tu->c->sm, tu->o->cache_dir, 1, NULL, tu->o->warn, tu->o->ctx,
				       NULL, &e1);
		}
	}
	for (size_t j = 0; j < nj; j++) {
		who[j]->cubin = jobs[j].cubin;
		who[j]->cubin_size = jobs[j].size;
		jobs[j].cubin = NULL;
	}
	rt_jobs_free(jobs, nj);
	free(jobs);
	free(who);
}

/* Candidates for an item that no record decides. */
static int space(tuner *tu, item *x, sn_err *e)
{
	if (x->kind == AT_KERNEL)
		return kernel_space(tu, x) ? sn_errf(e, SN_EINTERNAL, "out of memory") : SN_OK;
	cg_blas_algo al[AT_MAX_BLAS];
	int na = 0;
	sn_err le = {0};
	if (rt_gemm_candidates(tu->blas, &tu->p->steps[x->step].mm, al, AT_MAX_BLAS, &na, &le) != SN_OK)
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

/* A stored record for x, when it names a choice this build can make. */
static int from_record(tuner *tu, item *x, sn_err *e)
{
	bool found = false;
	at_record r;
	at_store_get(tu->st, x->spec, &tu->dev, &r, &found);
	if (!found)
		return SN_OK;
	if (r.kind != x->kind || (r.kind == AT_KERNEL && !at_config_plausible(&r.cfg))) {
		tu->s->rejected++;
		return SN_OK;
	}
	cand c;
	if (x->kind == AT_KERNEL) {
		/* the default first, then the record's config if the
		 * renderer takes it and gives this very config */
		if (render(tu, x->node, &r.cfg, &c) != SN_OK) {
			tu->s->rejected++;
			return SN_OK;
		}
		if (!same_cfg(&c.cfg, &r.cfg) || c.nbufs != x->c[0].nbufs || memcmp(c.bufs, x->c[0].bufs, sizeof c.bufs)) {
			cand_free(&c);
			tu->s->rejected++;
			return SN_OK;
		}
		if (!strcmp(c.name, x->c[0].name)) {
			cand_free(&c); /* the record chose the default */
			x->record = true;
			x->rec = r;
			return SN_OK;
		}
	} else {
		memset(&c, 0, sizeof c);
		c.algo = r.algo;
		/* the default: the heuristic's first */
		cg_blas_algo al[1];
		int na = 0;
		sn_err le = {0};
		if (rt_gemm_candidates(tu->blas, &tu->p->steps[x->step].mm, al, 1, &na, &le) != SN_OK || na < 1) {
			tu->s->rejected++;
			return SN_OK;
		}
		cand d;
		memset(&d, 0, sizeof d);
		d.algo = al[0];
		if (push(&x->c, &x->nc, &d))
			return sn_errf(e, SN_EINTERNAL, "out of memory");
		if (same_algo(&d.algo, &r.algo)) {
			x->record = true;
			x->rec = r;
			return SN_OK;
		}
	}
	if (push(&x->c, &x->nc, &c)) {
		cand_free(&c);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	x->record = true;
	x->rec = r;
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
	if (x->kind == AT_KERNEL)
		r.cfg = x->c[best].cfg;
	else
		r.algo = x->c[best].algo;
	r.algo.valid = x->kind == AT_BLAS;
	r.ms = x->c[best].ms;
	r.default_ms = x->c[0].ms;
	r.candidates = (int32_t)(tried + 1);
	snprintf(r.version, sizeof r.version, "%s", SINTER_VERSION);
	at_store_put(tu->st, &r);
}

/* Puts x's winner into the plan. */
static int patch(tuner *tu, item *x, sn_err *e)
{
	cg_plan *p = tu->p;
	if (x->chosen < 0)
		return SN_OK;
	cand *c = &x->c[x->chosen];
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
	if (x->chosen == 0)
		return SN_OK;
	cg_kern *k = &p->kerns[x->kern];
	char *src = strdup(c->src);
	if (!src)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	free(k->src);
	k->src = src;
	memcpy(k->name, c->name, sizeof k->name);
	k->cfg = c->cfg;
	if (!p->map && !p->borrowed)
		free(k->cubin);
	k->cubin = NULL;
	k->cubin_size = 0;
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
	tuner tu = {.g = g, .t = t, .p = p, .c = c, .st = st, .o = o, .s = s, .t0 = now(), .seed = 0x9e3779b97f4a7c15ull};
	tu.budget = o->budget_s > 0 ? o->budget_s : AT_DEFAULT_BUDGET_S;
	tu.cap = o->kernel_cap_s > 0 ? o->kernel_cap_s : AT_DEFAULT_KERNEL_CAP_S;
	tu.tty = isatty(fileno(o->out ? o->out : stderr));
	at_device_of(c, &tu.dev);
	item *it = NULL;
	size_t n = 0;
	if (collect(&tu, &it, &n, e))
		return e->code;
	int rc = SN_OK;
	tu.total = n;
	s->tunable = n;
	s->specs = malloc((n ? n : 1) * sizeof *s->specs);
	if (!s->specs) {
		items_free(it, n);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		memcpy(s->specs[i], it[i].spec, 16);
	s->nspecs = n;
	bool any_blas = false;
	for (size_t i = 0; i < n; i++)
		any_blas |= it[i].kind == AT_BLAS;
	if ((rc = rt_nvrtc_open(&tu.nv, e)) || (rc = rt_timer_open(c, &tu.tm, e)) ||
	    (any_blas && (rc = rt_blas_open(c, &tu.blas, e))))
		goto done;
	for (size_t i = 0; i < n && !rc; i++)
		rc = from_record(&tu, &it[i], e);
	for (size_t i = 0; i < n && !rc; i++)
		if (!it[i].record)
			rc = space(&tu, &it[i], e);
	if (rc)
		goto done;
	qsort(it, n, sizeof *it, cmp_est);
	progress(&tu, false);
	for (size_t i0 = 0; i0 < n && !rc; i0 += AT_CHUNK) {
		size_t m = n - i0 < AT_CHUNK ? n - i0 : AT_CHUNK;
		bool spent = now() - tu.t0 >= tu.budget;
		if (spent && !it[i0].record) {
			s->budget_out = true;
			/* the rest keep their defaults and get no record */
			for (size_t i = i0; i < n; i++, tu.done++)
				if (!it[i].record)
					s->untuned++;
			break;
		}
		compile(&tu, &it[i0], m);
		for (size_t i = i0; i < i0 + m && !rc; i++) {
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
	s->seconds = now() - tu.t0;
	if (!rc)
		progress(&tu, true);
	rt_blas_close(tu.blas);
	rt_timer_close(tu.tm);
	rt_nvrtc_close(tu.nv);
	items_free(it, n);
	if (rc)
		at_tune_stats_free(s);
	return rc;
}
