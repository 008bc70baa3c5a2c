/* cuda_api.c: the public API's device entry points (sinter.h, "compiling
 * for a device"). It sequences the stages and owns no algorithm:
 * options -> plan cache lookup -> (on a miss) passes on a copy of the model,
 * lowering into a plan (codegen), NVRTC through the kernel cache, plan
 * stored -> runtime load. */
#include "api/model.h"
#include "api/observe.h"
#include "api/plan_cache.h"

#include "autotune/at_tune.h"

#include "codegen/cg.h"
#include "ir/file.h"
#include "ir/log.h"
#include "passes/pass.h"
#include "runtime/cuda_blas.h"
#include "runtime/cuda_exec.h"
#include "runtime/cuda_nvrtc.h"
#include "runtime/kcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

/* One loaded plan: for a model with unbound symbols, one per set of bound
 * values (vals), least recently used evicted past max_plans. */
typedef struct slot {
	int64_t vals[16];
	cg_plan *plan;
	rt_model *rm;
	uint64_t used;
	int share; /* index into the compiled model's shared weights, or -1 */
} slot;

/* A weight image on the device, shared by the plans of one model at
 * several batch sizes (their images are the same bytes). */
typedef struct wshare {
	CUdeviceptr p;
	uint64_t bytes, hash;
	int refs;
} wshare;

struct sinter_compiled {
	api_device device; /* API_DEV_CUDA (0); first in every compiled handle (model.h) */
	rt_cuda *dev;
	sinter_compile_options o; /* strings below are copies */
	char *mode, *passes, *dump_dir, *cache_dir;
	/* a model with unbound symbols: what it takes to load it again bound */
	char *path;
	api_wsrc wsrc;
	char *wpath;
	uint64_t seed;
	uint32_t nsyms;
	char *syms[16];
	/* inputs as the user sees them (symbolic dims -1) */
	sinter_model *desc;
	slot *slots;
	size_t nslots, cap;
	uint64_t tick;
	slot *last;
	wshare shares[16];
};

typedef struct resolved {
	const char *pipeline;
	sinter_precision prec;
	bool graphs;
	bool unfused;
	bool tune; /* max-autotune */
	const char *mode;
	const char *remote; /* the remote tuning store, or NULL */
} resolved;

/* max-autotune's state while one plan is built: the device, the record
 * store, and what the tuner did. */
typedef struct tune_ctx {
	rt_cuda *dev;
	at_store *st;
	at_tune_opts o;
	at_tune_stats s;
} tune_ctx;


void sinter_compile_options_init(sinter_compile_options *o)
{
	memset(o, 0, sizeof *o);
}

/* The modes' meaning, decided here and nowhere else. */
static sinter_status resolve(const sinter_compile_options *o, resolved *r, sinter_error *err)
{
	const char *mode = o && o->mode ? o->mode : "default";
	memset(r, 0, sizeof *r);
	r->mode = mode;
	if (strcmp(mode, "default") && strcmp(mode, "reduce-overhead") && strcmp(mode, "max-autotune"))
		return api_failf(err, SINTER_E_USAGE, "unknown mode '%s' (default, reduce-overhead or max-autotune)",
				 mode);
	r->tune = !strcmp(mode, "max-autotune");
	r->graphs = r->tune || !strcmp(mode, "reduce-overhead");
	/* the environment's one say in tuning: where shared records live */
	r->remote = o && o->cache_remote ? (o->cache_remote[0] ? o->cache_remote : NULL) : getenv("SINTER_CACHE_REMOTE");
	if (r->remote && !r->remote[0])
		r->remote = NULL;
	if (o && (o->tune_budget_s < 0 || o->tune_kernel_s < 0 || o->tune_budget_s != o->tune_budget_s ||
		  o->tune_kernel_s != o->tune_kernel_s))
		return api_failf(err, SINTER_E_USAGE, "the tuning budget must be a number of seconds >= 0");
	if (o && (o->tune_progress < SINTER_TUNE_AUTO || o->tune_progress > SINTER_TUNE_QUIET))
		return api_failf(err, SINTER_E_USAGE, "unknown tune_progress %d", o->tune_progress);
	r->pipeline = o && o->passes ? o->passes : pass_pipeline(mode);
	r->prec = o ? o->precision : SINTER_PREC_FP32;
	r->unfused = o && o->no_fusion;
	if ((unsigned)r->prec > SINTER_PREC_FP8)
		return api_failf(err, SINTER_E_USAGE, "unknown precision %d", (int)r->prec);
	return SINTER_OK;
}

/* The cache directory an options struct asks for: NULL for none. */
static const char *cache_dir_of(const sinter_compile_options *o, char *buf, size_t cap)
{
	if (o && o->cache_dir)
		return o->cache_dir[0] ? o->cache_dir : NULL;
	return kc_default_dir(buf, cap) == SN_OK ? buf : NULL;
}

bool sinter_cuda_available(char *why, size_t cap)
{
	rt_cuda *c = NULL;
	sn_err e = {0};
	if (rt_cuda_open(0, &c, &e) != SN_OK) {
		snprintf(why, cap, "%s", e.msg);
		return false;
	}
	snprintf(why, cap, "%s (sm_%d)", c->name, c->sm);
	rt_cuda_close(c);
	return true;
}

/* ---- building a plan ---- */

/* Passes on a copy of m, then lowering: the plan, with its weight image
 * when m's weights are loaded. */
static sinter_status build_plan(const sinter_model *mc, const resolved *r, int sm, cg_plan **out,
				sinter_compile_stats *s, tune_ctx *tc, sinter_error *err)
{
	sinter_model *m = (sinter_model *)mc; /* values are read on first use; m does not change */
	*out = NULL;
	sinter_status st = api_need_shaped(m, err);
	if (st)
		return st;
	if (m->weights && (st = api_materialize(m, err)))
		return st;
	sn_err e = {0};
	double t0 = sn_now();
	ir_graph *g = ir_graph_clone(m->g, &e);
	ir_wstore *ws = m->weights ? ir_ws_new_over(m->ws) : NULL;
	if (!g || (m->weights && !ws)) {
		ir_graph_free(g);
		ir_ws_free(ws);
		return e.code ? api_fail(err, &e) : api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	pass_ctx ctx = {.ws = ws, .precision = (pass_precision)r->prec, .sm = sm};
	if (r->pipeline[0] && pass_run_list(&g, r->pipeline, &ctx, &e) != SN_OK)
		goto fail;
	s->passes_s = sn_now() - t0;
	sn_stage("passes", t0, "%s, %u nodes after", r->pipeline[0] ? r->pipeline : "none", g->nnodes);
	t0 = sn_now();
	ir_tensor *vals = NULL;
	if (m->weights && (st = api_param_vals(g, ws, &vals, err))) {
		ir_graph_free(g);
		ir_ws_free(ws);
		return st;
	}
	cg_target t = {.sm = sm, .tf32 = r->prec == SINTER_PREC_TF32, .unfused = r->unfused};
	int rc = cg_lower(g, vals, &t, out, &e);
	if (vals)
		api_vals_free(g, ws, vals);
	s->codegen_s = sn_now() - t0;
	if (rc)
		goto fail;
	sn_stage("codegen", t0, "%u steps, %u kernels, arena %llu bytes", (*out)->nsteps, (*out)->nkerns,
		 (unsigned long long)(*out)->arena_bytes);
	if (tc && at_tune_plan(g, &t, *out, tc->dev, tc->st, &tc->o, &tc->s, &e) != SN_OK) {
		cg_plan_free(*out);
		*out = NULL;
		goto fail;
	}
	ir_graph_free(g);
	ir_ws_free(ws);
	s->steps = (*out)->nsteps;
	s->arena_bytes = (*out)->arena_bytes;
	s->weight_bytes = (*out)->weight_bytes;
	return SINTER_OK;
fail:
	ir_graph_free(g);
	ir_ws_free(ws);
	return api_fail(err, &e);
}

/* Compiles the plan's kernels that have no cubin yet (NVRTC through the
 * kernel cache). */
static sinter_status compile_kernels(cg_plan *p, int sm, const sinter_compile_options *o, sinter_compile_stats *s,
				     sinter_error *err)
{
	s->kernels = 0;
	for (uint32_t i = 0; i < p->nsteps; i++)
		s->kernels += p->steps[i].kind == CG_LAUNCH;
	if (!p->nkerns)
		return SINTER_OK;
	/* max-autotune's tuner compiled some already (with its candidates, in
	 * one batch): those are skipped, but still counted as unique kernels
	 * (they are their own: the tuner's first batch went through NVRTC or
	 * the kernel cache, counted in tune_s) */
	rt_job *jobs = calloc(p->nkerns, sizeof *jobs);
	uint32_t *idx = calloc(p->nkerns, sizeof *idx);
	if (!jobs || !idx) {
		free(jobs);
		free(idx);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	uint32_t nj = 0, done = 0;
	for (uint32_t i = 0; i < p->nkerns; i++) {
		if (p->kerns[i].cubin && !(o && o->dump_dir)) { /* dumping wants every source */
			done++;
			continue;
		}
		jobs[nj].name = p->kerns[i].name;
		jobs[nj].src = p->kerns[i].src;
		idx[nj++] = i;
	}
	sn_err e = {0};
	rt_nvrtc *nv = NULL;
	rt_compile_stats cs = {0};
	char cbuf[4096];
	double t0 = sn_now();
	if (nj && rt_nvrtc_open(&nv, &e) == SN_OK)
		rt_compile_all(nv, jobs, nj, sm, cache_dir_of(o, cbuf, sizeof cbuf), 0, o ? o->dump_dir : NULL,
			       o && o->warn ? o->warn : api_warn_stderr, o ? o->warn_ctx : NULL, &cs, &e);
	rt_nvrtc_close(nv);
	s->nvrtc_s = sn_now() - t0;
	sn_stage("nvrtc", t0, "sm_%d, %zu unique kernels: %zu from the kernel cache, %zu compiled, %u by the tuner", sm,
		 cs.unique, cs.hits, cs.compiled, done);
	s->unique_kernels = cs.unique + done;
	s->cache_hits = cs.hits;
	for (uint32_t j = 0; !e.code && j < nj; j++) {
		free(p->kerns[idx[j]].cubin); /* the tuner's, when dumping */
		p->kerns[idx[j]].cubin = jobs[j].cubin; /* moved */
		p->kerns[idx[j]].cubin_size = jobs[j].size;
		jobs[j].cubin = NULL;
	}
	rt_jobs_free(jobs, nj);
	free(jobs);
	free(idx);
	return e.code ? api_fail(err, &e) : SINTER_OK;
}

/* ---- the plan cache ---- */

/* key = XXH3-128 of (plan format, sinter version, the model's canonical
 * text, the options that shape the plan, the device key, the weights'
 * identity). The weights' content is checked apart (their fingerprint). */
static void plan_key(const sinter_model *m, const resolved *r, const rt_cuda *dev, const char *wid, uint8_t key[16])
{
	sn_buf b = {0};
	int nv = rt_nvrtc_lib_version();
	sn_buf_printf(&b, "sinter plan %d %s\nmode %s\npipeline %s\nprecision %d\nfusion %s\n", CG_PLAN_FORMAT,
		      SINTER_VERSION, r->mode, r->pipeline, (int)r->prec, r->unfused ? "off" : "on");
	sn_buf_printf(&b, "device %s sm_%d driver %d nvrtc %d cublasLt %d\nweights %s\n", dev->name, dev->sm,
		      dev->driver_version, nv, rt_blas_lib_version(), wid);
	ir_print(m->g, &b);
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits(b.s ? b.s : "", b.len));
	memcpy(key, c.digest, 16);
	sn_buf_free(&b);
}

/* The key's components as "label value" lines, for the .key file beside
 * a stored plan and for sinter cache explain: the key's fields with the
 * model's canonical text replaced by its hash (and its inputs' shapes, the
 * shape binding, spelled out), plus the records' digest of a tuned plan. */
static void key_components(const sinter_model *m, const resolved *r, const rt_cuda *dev, const char *wid,
			   const char *records, sn_buf *b)
{
	static const char *const precs[] = {"fp32", "tf32", "bf16", "fp16", "fp8"};
	sn_buf_printf(b, "format %d\nversion %s\nmode %s\npipeline %s\nprecision %s\nfusion %s\n", CG_PLAN_FORMAT,
		      SINTER_VERSION, r->mode, r->pipeline, (unsigned)r->prec < 5 ? precs[r->prec] : "?",
		      r->unfused ? "off" : "on");
	sn_buf_printf(b, "device %s sm_%d driver %d\nnvrtc %d\ncublaslt %d\nweights %s\n", dev->name, dev->sm,
		      dev->driver_version, rt_nvrtc_lib_version(), rt_blas_lib_version(), wid);
	sn_buf t = {0};
	ir_print(m->g, &t);
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits(t.s ? t.s : "", t.len));
	sn_buf_free(&t);
	sn_buf_puts(b, "model ");
	for (int i = 0; i < 16; i++)
		sn_buf_printf(b, "%02x", c.digest[i]);
	sn_buf_puts(b, "\nshapes");
	for (uint32_t i = 0; i < m->g->ninputs; i++) {
		const ir_node *n = &m->g->nodes[m->g->inputs[i]];
		sn_buf_printf(b, " %s:[", n->name ? n->name : "?");
		for (int d = 0; d < n->shape.rank; d++)
			sn_buf_printf(b, "%s%lld", d ? "," : "", (long long)n->shape.d[d]);
		sn_buf_puts(b, "]");
	}
	sn_buf_printf(b, "\nrecords %s\n", records && records[0] ? records : "none");
}

/* The plan for m from the cache at path when it is there and current;
 * a corrupt or stale entry is reported once and deleted. */
static cg_plan *cache_lookup(const char *path, const sinter_model *m, const cg_plan_info *want,
			     const sinter_compile_options *o)
{
	if (access(path, F_OK) != 0)
		return NULL;
	cg_plan *p = NULL;
	cg_plan_info have;
	sn_err e = {0};
	if (cg_plan_read(path, true, &p, &have, &e) != SN_OK) {
		/* a bad entry goes; one the system could not read (I/O, memory) stays */
		bool bad = e.code == SN_EINPUT;
		api_pc_warn(o, "plan cache: %s entry (%s)%s, rebuilding", bad ? "corrupt" : "unreadable", e.msg,
		     bad ? ": deleted" : "");
		if (bad)
			unlink(path);
		return NULL;
	}
	const char *changed = api_pc_stale(m, want, &have);
	if (changed) {
		api_pc_warn(o, "plan cache: stale entry %s (%s changed): rebuilding", path, changed);
		cg_plan_free(p);
		unlink(path);
		return NULL;
	}
	return p;
}

/* ---- compiled models ---- */

static void slot_clear(sinter_compiled *c, slot *s)
{
	rt_model_free(s->rm);
	cg_plan_free(s->plan);
	if (s->share >= 0 && --c->shares[s->share].refs == 0) {
		rt_weights_free(c->dev, c->shares[s->share].p);
		memset(&c->shares[s->share], 0, sizeof c->shares[s->share]);
	}
	memset(s, 0, sizeof *s);
	s->share = -1;
}

void sinter_compiled_free(sinter_compiled *c)
{
	if (c && api_device_of(c) == API_DEV_CPU) {
		api_cpu_free(c);
		return;
	}
	if (!c)
		return;
	for (size_t i = 0; i < c->nslots; i++)
		slot_clear(c, &c->slots[i]);
	free(c->slots);
	rt_cuda_close(c->dev);
	free(c->mode);
	free(c->passes);
	free(c->dump_dir);
	free(c->cache_dir);
	free(c->path);
	free(c->wpath);
	for (uint32_t i = 0; i < c->nsyms; i++)
		free(c->syms[i]);
	sinter_model_free(c->desc);
	free(c);
}

static char *dup_or_null(const char *s, bool *oom)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	*oom |= !d;
	return d;
}

static sinter_status new_compiled(const sinter_compile_options *o, sinter_compiled **out, sinter_error *err)
{
	sinter_compiled *c = calloc(1, sizeof *c);
	if (!c)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	if (o)
		c->o = *o;
	bool oom = false;
	c->o.mode = c->mode = dup_or_null(c->o.mode, &oom);
	c->o.passes = c->passes = dup_or_null(c->o.passes, &oom);
	c->o.dump_dir = c->dump_dir = dup_or_null(c->o.dump_dir, &oom);
	c->o.cache_dir = c->cache_dir = dup_or_null(c->o.cache_dir, &oom);
	if (oom) {
		sinter_compiled_free(c);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	sn_err e = {0};
	if (rt_cuda_open(0, &c->dev, &e) != SN_OK) {
		sinter_compiled_free(c);
		return api_fail(err, &e);
	}

	*out = c;
	return SINTER_OK;
}

/* Loads plan p into a new slot (taking p); the least recently used slot
 * makes room past max_plans. */
static sinter_status add_slot(sinter_compiled *c, cg_plan *p, const int64_t *vals, bool graphs,
			      sinter_compile_stats *s, slot **out, sinter_error *err)
{
	size_t max = c->o.max_plans > 0 ? (size_t)c->o.max_plans : 8;
	if (c->nslots >= max) {
		size_t lru = 0;
		for (size_t i = 1; i < c->nslots; i++)
			if (c->slots[i].used < c->slots[lru].used)
				lru = i;
		slot_clear(c, &c->slots[lru]);
		c->slots[lru] = c->slots[--c->nslots];
		c->last = NULL;
	}
	if (c->nslots == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 4;
		slot *ns = realloc(c->slots, cap * sizeof *ns);
		if (!ns) {
			cg_plan_free(p);
			return api_failf(err, SINTER_E_INTERNAL, "out of memory");
		}
		c->slots = ns;
		c->cap = cap;
		c->last = NULL;
	}
	slot *sl = &c->slots[c->nslots];
	memset(sl, 0, sizeof *sl);
	sl->share = -1;
	if (vals)
		memcpy(sl->vals, vals, sizeof sl->vals);
	sl->plan = p;
	rt_load_opts lo = {.poison = c->o.poison, .graphs = graphs};
	rt_times t = {0};
	sn_err e = {0};
	if (c->nsyms && p->weight_bytes && p->weights) {
		/* plans for other batch sizes share one copy of the weights */
		uint64_t h = XXH3_64bits(p->weights, p->weight_bytes);
		int free_i = -1;
		for (int i = 0; i < 16 && sl->share < 0; i++) {
			if (c->shares[i].refs && c->shares[i].bytes == p->weight_bytes && c->shares[i].hash == h)
				sl->share = i;
			else if (!c->shares[i].refs && free_i < 0)
				free_i = i;
		}
		if (sl->share < 0 && free_i >= 0) {
			wshare *w = &c->shares[free_i];
			if (rt_weights_upload(c->dev, p, &w->p, &e) != SN_OK) {
				cg_plan_free(p);
				return api_fail(err, &e);
			}
			w->bytes = p->weight_bytes;
			w->hash = h;
			sl->share = free_i;
		}
		if (sl->share >= 0) {
			c->shares[sl->share].refs++;
			lo.weights = c->shares[sl->share].p;
		}
	}
	if (rt_model_load(c->dev, p, &lo, &sl->rm, &t, &e) != SN_OK) {
		if (sl->share >= 0 && --c->shares[sl->share].refs == 0) {
			rt_weights_free(c->dev, c->shares[sl->share].p);
			memset(&c->shares[sl->share], 0, sizeof c->shares[sl->share]);
		}
		cg_plan_free(p);
		return api_fail(err, &e);
	}
	sn_log(SN_LOG_INFO, "load: modules %.1f ms, weights and arena %.1f ms, cuBLASLt %.1f ms, graph capture %.1f ms",
	       1e3 * t.load, 1e3 * t.upload, 1e3 * t.blas, 1e3 * t.capture);
	s->load_s = t.load;
	s->blas_s = t.blas;
	s->capture_s = t.capture;
	s->upload_s = t.upload;
	sl->used = ++c->tick;
	c->nslots++;
	*out = sl;
	return SINTER_OK;
}

/* ---- max-autotune and the plan cache ----
 * A tuned plan depends on the tuning records it used, so its key is the
 * plain key extended with a digest of those records. Which records a
 * model uses is only known after its passes and lowering, so the list of
 * their specs is kept beside the plan cache under the plain key
 * (plans/XX/<30 hex>.tune: "sinter tuning specs 1", then one spec in hex
 * per line); a warm start reads it, asks the store for each record
 * (at_digest) and looks the plan up under the extended key. A list that
 * is missing, malformed, or names a spec without a record is a miss. */
#define TUNE_LIST_HEAD "sinter tuning specs 1\n"

static void tune_list_path(const char *plan_path, char *out, size_t cap)
{
	api_pc_sidecar(plan_path, ".tune", out, cap);
}

static void extend_key(const uint8_t key0[16], const uint8_t digest[16], uint8_t key[16])
{
	uint8_t both[32];
	memcpy(both, key0, 16);
	memcpy(both + 16, digest, 16);
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits(both, 32));
	memcpy(key, c.digest, 16);
}

static int unhex_nibble(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The extended key for the plain key0 from the stored list, or false. */
static bool tuned_key(const char *plan_path, at_store *st, const rt_cuda *dev, const uint8_t key0[16], uint8_t key[16],
		      uint8_t digest[16])
{
	char path[4300];
	tune_list_path(plan_path, path, sizeof path);
	if (access(path, F_OK) != 0)
		return false;
	void *buf = NULL;
	size_t len = 0;
	sn_err e = {0};
	if (sn_read_file(path, SN_F_NOFOLLOW | SN_F_ENV, 1 << 22, NULL, &buf, &len, &e) != SN_OK)
		return false;
	size_t hl = strlen(TUNE_LIST_HEAD);
	bool ok = len >= hl && !memcmp(buf, TUNE_LIST_HEAD, hl) && (len - hl) % 33 == 0;
	size_t n = ok ? (len - hl) / 33 : 0;
	uint8_t (*specs)[16] = ok ? malloc((n ? n : 1) * sizeof *specs) : NULL;
	const char *t = (const char *)buf + hl;
	for (size_t i = 0; specs && ok && i < n; i++) {
		ok = t[33 * i + 32] == '\n';
		for (int k = 0; ok && k < 16; k++) {
			int hi = unhex_nibble(t[33 * i + 2 * k]), lo = unhex_nibble(t[33 * i + 2 * k + 1]);
			ok = hi >= 0 && lo >= 0;
			specs[i][k] = (uint8_t)(hi * 16 + lo);
		}
	}
	free(buf);
	bool complete = false;
	at_device d;
	at_device_of(dev, &d);
	if (specs && ok && at_digest(st, &d, (const uint8_t (*)[16])specs, n, digest, &complete) == SN_OK && complete)
		extend_key(key0, digest, key);
	free(specs);
	return specs && ok && complete;
}

static void tune_list_write(const char *plan_path, const at_tune_stats *ts, const sinter_compile_options *o)
{
	char path[4300];
	tune_list_path(plan_path, path, sizeof path);
	sn_buf b = {0};
	sn_buf_puts(&b, TUNE_LIST_HEAD);
	for (size_t i = 0; i < ts->nspecs; i++) {
		for (int k = 0; k < 16; k++)
			sn_buf_printf(&b, "%02x", ts->specs[i][k]);
		sn_buf_puts(&b, "\n");
	}
	sn_err e = {0};
	if (b.oom || sn_write_file(path, b.s, b.len, 0600, &e) != SN_OK)
		api_pc_warn(o, "plan cache: tuning list not stored: %s", b.oom ? "out of memory" : e.msg);
	sn_buf_free(&b);
}

static void tune_stats_out(const at_tune_stats *ts, sinter_compile_stats *s)
{
	s->tune_kernels = ts->tunable;
	s->tune_from_records = ts->from_records;
	s->tune_tuned = ts->tuned;
	s->tune_candidates = ts->candidates;
	s->tune_timings = ts->timings;
	s->tune_failed = ts->failed;
	s->tune_rejected = ts->rejected;
	s->tune_s = ts->seconds;
	s->tune_speedup = ts->tuned_ms > 0 ? ts->default_ms / ts->tuned_ms : 1.0;
}

/* The plan of a fully shaped model: from the plan cache, or built (and
 * stored); then loaded into a new slot. */
static sinter_status compile_bound(sinter_compiled *c, const sinter_model *m, const int64_t *vals,
				   sinter_compile_stats *s, slot **out, sinter_error *err)
{
	resolved r;
	sinter_status st = resolve(&c->o, &r, err);
	if (st)
		return st;
	if (c->o.target_sm && c->o.target_sm != c->dev->sm)
		return api_failf(err, SINTER_E_USAGE, "target sm_%d does not match the GPU %s (sm_%d)", c->o.target_sm,
				 c->dev->name, c->dev->sm);
	if (!m->weights)
		return api_failf(err, SINTER_E_USAGE, "the model's weights are not loaded");
	char cbuf[4096], path[4200] = "";
	const char *dir = c->o.no_plan_cache ? NULL : cache_dir_of(&c->o, cbuf, sizeof cbuf);
	cg_plan_info info = {0};
	char wid[4200];
	double t0 = sn_now();
	api_pc_weights_id(m, wid, sizeof wid, &info);
	sn_err e = {0};
	cg_plan *p = NULL;
	tune_ctx tc = {.dev = c->dev};
	char records[33] = "";
	uint8_t key0[16];
	char path0[4200] = "";
	if (r.tune) {
		char kbuf[4096];
		const char *kdir = c->o.cache_dir ? (c->o.cache_dir[0] ? c->o.cache_dir : NULL)
						  : kc_default_dir(kbuf, sizeof kbuf) == SN_OK ? kbuf : NULL;
		if (at_store_open(kdir, r.remote, c->o.warn, c->o.warn_ctx, &tc.st, &e) != SN_OK)
			return api_fail(err, &e);
		tc.o = (at_tune_opts){.budget_s = c->o.tune_budget_s, .kernel_cap_s = c->o.tune_kernel_s,
				      .progress = c->o.tune_progress, .cache_dir = kdir,
				      .warn = c->o.warn ? c->o.warn : api_warn_stderr, .ctx = c->o.warn_ctx};
	}
	bool existed = false;
	if (dir) {
		uint8_t key[16], digest[16];
		plan_key(m, &r, c->dev, wid, key0);
		memcpy(key, key0, 16);
		bool have_key = true;
		if (r.tune && kc_plan_path(dir, key0, false, path0, sizeof path0, &e) == SN_OK)
			have_key = tuned_key(path0, tc.st, c->dev, key0, key, digest);
		s->key_s = sn_now() - t0;
		if (kc_plan_path(dir, key, false, path, sizeof path, &e) != SN_OK)
			path[0] = 0;
		existed = path[0] && access(path, F_OK) == 0;
		if (path[0] && have_key)
			p = cache_lookup(path, m, &info, &c->o);
	}
	sn_log(SN_LOG_INFO, "plan cache: %s", !dir ? "off" : p ? "hit" : !existed
		    ? "miss (no entry for this model, shapes, mode, precision, device and weights)"
		    : "miss (the entry was stale or corrupt: see the warning above)");
	if (p) {
		at_store_close(tc.st);
		s->plan_hit = true;
		s->plan_s = sn_now() - t0;
		s->steps = p->nsteps;
		s->arena_bytes = p->arena_bytes;
		s->weight_bytes = p->weight_bytes;
		s->kernels = p->nkerns;
		return add_slot(c, p, vals, r.graphs, s, out, err);
	}
	if ((st = build_plan(m, &r, c->dev->sm, &p, s, r.tune ? &tc : NULL, err)) ||
	    (st = compile_kernels(p, c->dev->sm, &c->o, s, err))) {
		cg_plan_free(p);
		at_tune_stats_free(&tc.s);
		at_store_close(tc.st);
		return st;
	}
	if (r.tune) {
		tune_stats_out(&tc.s, s);
		/* the key covers the records now stored; a plan some of whose
		 * kernels the budget left untuned is not stored (the next
		 * compile tunes them) */
		bool complete = false;
		uint8_t digest[16];
		at_device d;
		at_device_of(c->dev, &d);
		if (path0[0] && tc.s.untuned == 0 &&
		    at_digest(tc.st, &d, (const uint8_t (*)[16])tc.s.specs, tc.s.nspecs, digest, &complete) == SN_OK &&
		    complete) {
			for (int i = 0; i < 16; i++)
				snprintf(records + 2 * i, 3, "%02x", digest[i]);
			uint8_t key[16];
			extend_key(key0, digest, key);
			if (kc_plan_path(dir, key, true, path, sizeof path, &e) != SN_OK ||
			    kc_plan_path(dir, key0, true, path0, sizeof path0, &e) != SN_OK)
				path[0] = 0;
			else
				tune_list_write(path0, &tc.s, &c->o);
		} else {
			path[0] = 0;
		}
		at_tune_stats_free(&tc.s);
		at_store_close(tc.st);
		tc.st = NULL;
	}
	if ((st = add_slot(c, p, vals, r.graphs, s, out, err)))
		return st;
	/* stored with the cuBLASLt algorithms the load chose */
	if (path[0]) {
		t0 = sn_now();
		api_pc_info_for_write(m, &info);
		uint8_t key[16];
		plan_key(m, &r, c->dev, wid, key);
		if ((!r.tune && kc_plan_path(dir, key, true, path, sizeof path, &e) != SN_OK) ||
		    cg_plan_write(path, (*out)->plan, &info, &e) != SN_OK) {
			api_pc_warn(&c->o, "plan cache: not stored: %s", e.msg);
		} else {
			/* what the key was made of, for sinter cache explain */
			char kpath[4300];
			sn_buf kb = {0};
			key_components(m, &r, c->dev, wid, records, &kb);
			api_pc_sidecar(path, ".key", kpath, sizeof kpath);
			if (!kb.oom)
				sn_write_file(kpath, kb.s, kb.len, 0600, &e);
			sn_buf_free(&kb);
			if (sn_cache_shared()) { /* the group reads them, whatever the umask */
				chmod(path, 0640);
				chmod(kpath, 0640);
			}
		}
		s->plan_s = sn_now() - t0;
	}
	/* the device holds the weights now */
	free((*out)->plan->weights);
	(*out)->plan->weights = NULL;
	return SINTER_OK;
}

sinter_status sinter_compile(const sinter_model *m, const sinter_compile_options *o,
			     sinter_compiled **out, sinter_compile_stats *stats, sinter_error *err)
{
	if (o && o->device && !strcmp(o->device, "cpu"))
		return api_cpu_compile(m, o, out, stats, err);
	if (o && o->device && strcmp(o->device, "cuda")) {
		*out = NULL;
		return api_failf(err, SINTER_E_USAGE, "unknown device '%s' (cuda or cpu)", o->device);
	}
	*out = NULL;
	sinter_compile_stats s = {0};
	resolved r;
	sinter_status st = resolve(o, &r, err);
	if (st)
		return st;
	if (!m->weights)
		return api_failf(err, SINTER_E_USAGE, "the model's weights are not loaded");
	sinter_compiled *c = NULL;
	double t0 = sn_now();
	if ((st = new_compiled(o, &c, err)))
		return st;
	s.context_s = sn_now() - t0;
	/* the user's view of inputs and outputs: a copy of the model's graph */
	sn_err e = {0};
	c->desc = calloc(1, sizeof *c->desc);
	if (!c->desc || !(c->desc->g = ir_graph_clone(m->g, &e))) {
		sinter_compiled_free(c);
		return e.code ? api_fail(err, &e) : api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	if (sinter_model_num_symbols(m)) {
		/* bound lazily, from each run's inputs */
		if (!m->path) {
			sinter_compiled_free(c);
			return api_failf(err, SINTER_E_USAGE, "a model with unbound symbols compiles lazily only when it was loaded from a file");
		}
		bool oom = false;
		c->path = dup_or_null(m->path, &oom);
		c->wpath = dup_or_null(m->wpath, &oom);
		c->wsrc = m->wsrc;
		c->seed = m->seed;
		c->nsyms = m->g->nsyms < 16 ? m->g->nsyms : 16;
		for (uint32_t i = 0; i < c->nsyms; i++)
			c->syms[i] = dup_or_null(m->g->syms[i], &oom);
		if (oom || m->g->nsyms > 16) {
			sinter_compiled_free(c);
			return api_failf(err, oom ? SINTER_E_INTERNAL : SINTER_E_INPUT, oom ? "out of memory" : "more than 16 symbols");
		}
		if (stats)
			*stats = s;
		*out = c;
		return SINTER_OK;
	}
	slot *sl;
	if ((st = compile_bound(c, m, NULL, &s, &sl, err))) {
		sinter_compiled_free(c);
		return st;
	}
	c->last = sl;
	if (stats)
		*stats = s;
	*out = c;
	return SINTER_OK;
}

sinter_status sinter_compile_kernels(const sinter_model *m, const sinter_compile_options *o, const char *package,
				     sinter_compile_stats *stats, sinter_error *err)
{
	if (o && o->device && !strcmp(o->device, "cpu"))
		return api_cpu_compile_package(m, o, package, stats, err);
	sinter_compile_stats s = {0};
	resolved r;
	sinter_status st = resolve(o, &r, err);
	if (st)
		return st;
	if (package && !m->weights)
		return api_failf(err, SINTER_E_USAGE, "a package carries the weights: they are not loaded");
	int sm = o && o->target_sm ? o->target_sm : 90;
	cg_plan *p = NULL;
	if (r.tune)
		return api_failf(err, SINTER_E_USAGE, "max-autotune times kernels on the GPU: it runs in sinter_compile "
						      "(sinter run or bench), not in a compile without loading");
	if (!(st = build_plan(m, &r, sm, &p, &s, NULL, err)))
		st = compile_kernels(p, sm, o, &s, err);
	if (!st && package) {
		cg_plan_info info = {0};
		snprintf(info.version, sizeof info.version, "%s", SINTER_VERSION);
		snprintf(info.source, sizeof info.source, "%s", m->path ? m->path : "");
		sn_err e = {0};
		double t0 = sn_now();
		if (cg_plan_write(package, p, &info, &e) != SN_OK)
			st = api_fail(err, &e);
		s.plan_s = sn_now() - t0;
	}
	cg_plan_free(p);
	if (stats)
		*stats = s;
	return st;
}

sinter_status sinter_load_package(const char *path, const sinter_compile_options *o, sinter_compiled **out,
				  sinter_compile_stats *stats, sinter_error *err)
{
	*out = NULL;
	sinter_status routed;
	if (api_package_route(path, o, out, stats, err, &routed)) /* a cpu package, or the wrong device */
		return routed;
	sinter_compile_stats s = {0};
	resolved r;
	sinter_status st = resolve(o, &r, err);
	if (st)
		return st;
	double t0 = sn_now();
	cg_plan *p = NULL;
	cg_plan_info info;
	sn_err e = {0};
	if (cg_plan_read(path, false, &p, &info, &e) != SN_OK)
		return api_fail(err, &e);
	s.plan_s = sn_now() - t0;
	sinter_compiled *c = NULL;
	t0 = sn_now();
	if ((st = new_compiled(o, &c, err))) {
		cg_plan_free(p);
		return st;
	}
	s.context_s = sn_now() - t0;
	if (p->sm != c->dev->sm) {
		st = api_failf(err, SINTER_E_ENV, "%s: the package is for sm_%d, the GPU %s is sm_%d", path, p->sm,
			       c->dev->name, c->dev->sm);
		cg_plan_free(p);
		sinter_compiled_free(c);
		return st;
	}
	s.plan_hit = true;
	s.steps = p->nsteps;
	s.arena_bytes = p->arena_bytes;
	s.weight_bytes = p->weight_bytes;
	s.kernels = p->nkerns;
	slot *sl;
	if ((st = add_slot(c, p, NULL, r.graphs, &s, &sl, err))) {
		sinter_compiled_free(c);
		return st;
	}
	c->last = sl;
	if (stats)
		*stats = s;
	*out = c;
	return SINTER_OK;
}

/* ---- running ---- */

size_t sinter_compiled_num_inputs(const sinter_compiled *c)
{
	if (api_device_of(c) == API_DEV_CPU)
		return api_cpu_num_inputs(c);
	return c->desc ? c->desc->g->ninputs : c->last ? c->last->plan->ninputs : 0;
}

size_t sinter_compiled_num_outputs(const sinter_compiled *c)
{
	if (api_device_of(c) == API_DEV_CPU)
		return api_cpu_num_outputs(c);
	return c->desc ? c->desc->g->noutputs : c->last ? c->last->plan->noutputs : 0;
}

static void describe_io(const cg_io *io, sinter_tensor *d)
{
	memset(d, 0, sizeof *d);
	d->name = io->name;
	d->dtype = (sinter_dtype)io->dtype;
	d->rank = io->rank;
	memcpy(d->shape, io->shape, sizeof d->shape);
	size_t n = 1;
	for (int k = 0; k < io->rank; k++)
		n *= (size_t)io->shape[k];
	d->nbytes = n * ir_dtype_size(io->dtype);
}

sinter_status sinter_compiled_input(const sinter_compiled *c, size_t i, sinter_tensor *d)
{
	if (api_device_of(c) == API_DEV_CPU)
		return api_cpu_input(c, i, d);
	if (c->desc)
		return sinter_model_input(c->desc, i, d);
	if (!c->last || i >= c->last->plan->ninputs)
		return api_failf(NULL, SINTER_E_USAGE, "no input %zu", i);
	describe_io(&c->last->plan->inputs[i], d);
	return SINTER_OK;
}

/* The input of t matching plan input i: by name, else by position. */
static const sinter_tensor *match_input(const cg_io *io, uint32_t i, const sinter_tensor *ts, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (ts[k].name && io->name[0] && !strcmp(ts[k].name, io->name))
			return &ts[k];
	if (i < n && (!ts[i].name || !ts[i].name[0] || !io->name[0]))
		return &ts[i];
	return NULL;
}

/* The slot for these inputs: the only one, or (unbound symbols) the one
 * for the values they bind, built on first use. */
static sinter_status slot_for(sinter_compiled *c, const sinter_tensor *ins, size_t nin, slot **out, sinter_error *err)
{
	if (!c->nsyms) {
		*out = c->last;
		return c->last ? SINTER_OK : api_failf(err, SINTER_E_INTERNAL, "no plan loaded");
	}
	int64_t vals[16];
	for (int k = 0; k < 16; k++)
		vals[k] = -1;
	const ir_graph *g = c->desc->g;
	for (uint32_t i = 0; i < g->ninputs; i++) {
		const ir_node *in = &g->nodes[g->inputs[i]];
		const sinter_tensor *t = NULL;
		for (size_t k = 0; k < nin && !t; k++)
			if (ins[k].name && in->name && !strcmp(ins[k].name, in->name))
				t = &ins[k];
		if (!t && i < nin && (!ins[i].name || !ins[i].name[0]))
			t = &ins[i];
		if (!t) {
			char have[512];
			api_list_tensors(ins, nin, have, sizeof have);
			return api_failf(err, SINTER_E_INPUT, "no tensor for input %%%s; the inputs hold: %s",
					 in->name ? in->name : "?", have);
		}
		if (t->rank != in->shape.rank)
			return api_failf(err, SINTER_E_INPUT, "input %%%s: rank %d, the model takes rank %d",
					 in->name ? in->name : "?", (int)t->rank, in->shape.rank);
		for (int d = 0; d < in->shape.rank; d++) {
			if (!IR_IS_SYM(in->shape.d[d]))
				continue;
			uint32_t id = IR_SYM_ID(in->shape.d[d]);
			if (id >= 16)
				continue;
			if (vals[id] >= 0 && vals[id] != t->shape[d])
				return api_failf(err, SINTER_E_INPUT, "symbol %s is %lld and %lld in the inputs",
						 c->syms[id], (long long)vals[id], (long long)t->shape[d]);
			vals[id] = t->shape[d];
		}
	}
	for (size_t i = 0; i < c->nslots; i++)
		if (!memcmp(c->slots[i].vals, vals, sizeof vals)) {
			c->slots[i].used = ++c->tick;
			*out = c->last = &c->slots[i];
			return SINTER_OK;
		}
	/* first use of these values: the model loaded again, bound */
	sinter_shape_binding binds[16];
	size_t nb = 0;
	for (uint32_t k = 0; k < c->nsyms; k++)
		if (vals[k] >= 0)
			binds[nb++] = (sinter_shape_binding){c->syms[k], vals[k]};
	sinter_options so = {.shapes = binds, .nshapes = nb};
	sinter_model *m = NULL;
	sinter_status st = sinter_model_load(c->path, &so, &m, err);
	if (!st && c->wsrc == API_W_FILE)
		st = sinter_model_load_weights(m, c->wpath, err);
	else if (!st && c->wsrc == API_W_RANDOM)
		st = sinter_model_init_random(m, c->seed, err);
	else if (!st && c->wsrc == API_W_NONE)
		st = sinter_model_load_weights(m, NULL, err);
	sinter_compile_stats s = {0};
	slot *sl = NULL;
	if (!st)
		st = compile_bound(c, m, vals, &s, &sl, err);
	sinter_model_free(m);
	if (st)
		return st;
	*out = c->last = sl;
	return SINTER_OK;
}

sinter_status sinter_compiled_run(sinter_compiled *c, const sinter_tensor *inputs, size_t ninputs,
				  sinter_tensor **outputs, sinter_error *err)
{
	if (api_device_of(c) == API_DEV_CPU)
		return api_cpu_run(c, inputs, ninputs, outputs, err);
	*outputs = NULL;
	slot *sl;
	sinter_status st = slot_for(c, inputs, ninputs, &sl, err);
	if (st)
		return st;
	const cg_plan *p = sl->plan;
	const void **ins = calloc(p->ninputs ? p->ninputs : 1, sizeof *ins);
	void **outs = calloc(p->noutputs ? p->noutputs : 1, sizeof *outs);
	sinter_tensor *res = calloc(p->noutputs ? p->noutputs : 1, sizeof *res);
	if (!ins || !outs || !res) {
		st = api_failf(err, SINTER_E_INTERNAL, "out of memory");
		goto done;
	}
	for (uint32_t i = 0; i < p->ninputs; i++) {
		const cg_io *io = &p->inputs[i];
		const sinter_tensor *t = match_input(io, i, inputs, ninputs);
		bool same = t && (ir_dtype)t->dtype == io->dtype && t->rank == io->rank;
		for (int d = 0; same && d < io->rank; d++)
			same = t->shape[d] == io->shape[d];
		if (!t) {
			char have[512];
			api_list_tensors(inputs, ninputs, have, sizeof have);
			st = api_failf(err, SINTER_E_INPUT, "no tensor for input %%%s; the inputs hold: %s", io->name, have);
			goto done;
		}
		if (!same) {
			st = api_failf(err, SINTER_E_INPUT, "input %%%s: dtype or shape differs from the model's", io->name);
			goto done;
		}
		if (!t->data || t->nbytes < p->bufs[io->buf].bytes) {
			st = api_failf(err, SINTER_E_INPUT, "input %%%s: %zu bytes of data, it needs %llu", io->name,
				       t->nbytes, (unsigned long long)p->bufs[io->buf].bytes);
			goto done;
		}
		ins[i] = t->data;
	}
	for (uint32_t i = 0; i < p->noutputs; i++) {
		const cg_io *io = &p->outputs[i];
		uint64_t nb = p->bufs[io->buf].bytes;
		char name[32];
		snprintf(name, sizeof name, "output%u", i);
		res[i].name = strdup(io->name[0] ? io->name : name);
		res[i].dtype = (sinter_dtype)io->dtype;
		res[i].rank = io->rank;
		memcpy(res[i].shape, io->shape, sizeof res[i].shape);
		res[i].nbytes = (size_t)nb;
		res[i].data = malloc(nb ? nb : 1);
		outs[i] = res[i].data;
		if (!res[i].name || !res[i].data) {
			st = api_failf(err, SINTER_E_INTERNAL, "out of memory");
			goto done;
		}
	}
	sn_err e = {0};
	double t0 = sn_now();
	if (rt_model_run(sl->rm, (const void *const *)ins, outs, &e) != SN_OK)
		st = api_fail(err, &e);
	else
		sn_stage("run (cuda)", t0, "%u steps, inputs copied in and outputs out", p->nsteps);
done:
	if (st) {
		sinter_tensors_free(res, p->noutputs);
		res = NULL;
	}
	*outputs = res;
	free(ins);
	free(outs);
	return st;
}

/* ---- running on device memory (sinter_compiled_run_device) ---- */

sinter_status sinter_compiled_output(const sinter_compiled *c, size_t i, sinter_tensor *d)
{
	if (api_device_of(c) == API_DEV_CPU)
		return api_cpu_output(c, i, d);
	if (c->desc)
		return sinter_model_output(c->desc, i, d);
	if (!c->last || i >= c->last->plan->noutputs)
		return api_failf(NULL, SINTER_E_USAGE, "no output %zu", i);
	describe_io(&c->last->plan->outputs[i], d);
	return SINTER_OK;
}

/* t matches io exactly (dtype, shape) and holds its bytes. */
static sinter_status same_io(const cg_io *io, const sinter_tensor *t, uint64_t bytes, const char *what,
			     sinter_error *err)
{
	bool same = (ir_dtype)t->dtype == io->dtype && t->rank == io->rank;
	for (int d = 0; same && d < io->rank; d++)
		same = t->shape[d] == io->shape[d];
	if (!same)
		return api_failf(err, SINTER_E_INPUT, "%s %%%s: dtype or shape differs from the model's", what, io->name);
	if (!t->data || t->nbytes < bytes)
		return api_failf(err, SINTER_E_INPUT, "%s %%%s: %zu bytes of device memory, it needs %llu", what,
				 io->name, t->nbytes, (unsigned long long)bytes);
	return SINTER_OK;
}

sinter_status sinter_compiled_run_device(sinter_compiled *c, const sinter_tensor *inputs, size_t ninputs,
					 const sinter_tensor *outputs, size_t noutputs, void *stream,
					 sinter_error *err)
{
	if (api_device_of(c) == API_DEV_CPU)
		return api_failf(err, SINTER_E_USAGE, "run_device runs on CUDA memory: this model is compiled for cpu");
	slot *sl;
	sinter_status st = slot_for(c, inputs, ninputs, &sl, err);
	if (st)
		return st;
	const cg_plan *p = sl->plan;
	if (noutputs != p->noutputs)
		return api_failf(err, SINTER_E_USAGE, "%zu output tensors given, the model has %u", noutputs,
				 p->noutputs);
	CUdeviceptr *ins = calloc(p->ninputs + p->noutputs + 1, sizeof *ins), *outs = ins + p->ninputs;
	if (!ins)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	for (uint32_t i = 0; !st && i < p->ninputs; i++) {
		const cg_io *io = &p->inputs[i];
		const sinter_tensor *t = match_input(io, i, inputs, ninputs);
		char have[512];
		if (!t && (api_list_tensors(inputs, ninputs, have, sizeof have), 1))
			st = api_failf(err, SINTER_E_INPUT, "no tensor for input %%%s; the inputs hold: %s", io->name,
				       have);
		else if (!(st = same_io(io, t, p->bufs[io->buf].bytes, "input", err)))
			ins[i] = (CUdeviceptr)(uintptr_t)t->data;
	}
	for (uint32_t i = 0; !st && i < p->noutputs; i++) {
		const cg_io *io = &p->outputs[i];
		if (!(st = same_io(io, &outputs[i], p->bufs[io->buf].bytes, "output", err)))
			outs[i] = (CUdeviceptr)(uintptr_t)outputs[i].data;
	}
	sn_err e = {0};
	if (!st && rt_model_run_device(sl->rm, ins, outs, (CUstream)stream, &e) != SN_OK)
		st = api_fail(err, &e);
	free(ins);
	return st;
}

sinter_status sinter_compiled_bench(sinter_compiled *c, int warmup, int iters, double *ms,
				    sinter_error *err)
{
	if (api_device_of(c) == API_DEV_CPU)
		return api_cpu_bench(c, warmup, iters, ms, err);
	if (!c->last)
		return api_failf(err, SINTER_E_USAGE, "run the model once before timing it");
	sn_err e = {0};
	return rt_model_time(c->last->rm, warmup, iters, ms, &e) == SN_OK ? SINTER_OK : api_fail(err, &e);
}

sinter_status sinter_compiled_profile(sinter_compiled *c, int iters, sinter_profile_entry **entries,
				      size_t *n, sinter_error *err)
{
	if (api_device_of(c) == API_DEV_CPU)
		return api_failf(err, SINTER_E_USAGE, "a per-step profile is not built for the cpu device yet");
	_Static_assert(sizeof(sinter_profile_entry) == sizeof(rt_prof), "one layout");
	if (!c->last)
		return api_failf(err, SINTER_E_USAGE, "run the model once before profiling it");
	sn_err e = {0};
	rt_prof *p = NULL;
	double t0 = sn_now();
	if (rt_model_profile(c->last->rm, iters, &p, n, &e) != SN_OK)
		return api_fail(err, &e);
	*entries = (sinter_profile_entry *)p; /* same fields in the same order */
	api_trace_profile(*entries, *n, t0, c->dev->name);
	return SINTER_OK;
}

/* ---- sinter cache explain ---- */

/* The value of label in "label value" lines (NULL when absent), into out. */
static const char *component(const char *text, const char *label, char *out, size_t cap)
{
	size_t ll = strlen(label);
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (n > ll && !strncmp(p, label, ll) && p[ll] == ' ') {
			snprintf(out, cap, "%.*s", (int)(n - ll - 1), p + ll + 1);
			return out;
		}
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}

static const char *const key_labels[] = {"format", "version", "mode", "pipeline", "precision", "fusion", "device",
					  "nvrtc", "cublaslt", "weights", "model", "shapes", "records"};

/* How many components of entry differ from ours. */
static int differences(const char *ours, const char *entry)
{
	int d = 0;
	for (size_t i = 0; i < SN_COUNT(key_labels); i++) {
		char a[1024], b[1024];
		const char *x = component(ours, key_labels[i], a, sizeof a), *y = component(entry, key_labels[i], b, sizeof b);
		d += !x || !y || strcmp(x, y);
	}
	return d;
}

sinter_status sinter_cache_explain(const sinter_model *m, const sinter_compile_options *o, char **report,
				   sinter_error *err)
{
	*report = NULL;
	resolved r;
	sinter_status st = resolve(o, &r, err);
	if (st || (st = api_need_shaped((sinter_model *)m, err)))
		return st;
	char cbuf[4096];
	const char *dir = cache_dir_of(o, cbuf, sizeof cbuf);
	if (!dir)
		return api_failf(err, SINTER_E_ENV, "no cache directory: set SINTER_CACHE_DIR, XDG_CACHE_HOME or HOME");
	rt_cuda *dev = NULL;
	sn_err e = {0};
	if (rt_cuda_open(0, &dev, &e) != SN_OK)
		return api_failf(err, SINTER_E_ENV, "explain needs the GPU the plans are for (their key holds its name and versions): %s",
				 e.msg);
	sn_buf b = {0};
	cg_plan_info info = {0};
	char wid[4200], path[4300], path0[4300] = "", records[33] = "";
	api_pc_weights_id(m, wid, sizeof wid, &info);
	uint8_t key0[16], key[16];
	plan_key(m, &r, dev, wid, key0);
	memcpy(key, key0, 16);
	sn_buf_printf(&b, "cache %s\n", dir);
	if (r.tune) {
		at_store *ts = NULL;
		if (at_store_open(dir, r.remote, o ? o->warn : NULL, o ? o->warn_ctx : NULL, &ts, &e) != SN_OK) {
			rt_cuda_close(dev);
			sn_buf_free(&b);
			return api_fail(err, &e);
		}
		uint8_t digest[16];
		if (kc_plan_path(dir, key0, false, path0, sizeof path0, &e) == SN_OK &&
		    tuned_key(path0, ts, dev, key0, key, digest)) {
			for (int i = 0; i < 16; i++)
				snprintf(records + 2 * i, 3, "%02x", digest[i]);
			sn_buf_printf(&b, "tuning: every listed kernel has a record for this GPU (plan key covers them)\n");
		} else {
			char lp[4400];
			tune_list_path(path0, lp, sizeof lp);
			sn_buf_printf(&b, "tuning: %s\n", access(lp, F_OK) == 0
								? "listed kernels lack records for this GPU (a compile would time them)"
								: "no tuned plan listed for this model and options (a compile would tune)");
		}
		const at_store_stats *ss = at_store_stats_of(ts);
		sn_buf_printf(&b, "tuning records read: %zu local, %zu remote, %zu missing, %zu rejected\n", ss->local_hits,
			      ss->remote_hits, ss->misses, ss->rejected);
		at_store_close(ts);
	}
	sn_buf ours = {0};
	key_components(m, &r, dev, wid, records, &ours);
	if (kc_plan_path(dir, key, false, path, sizeof path, &e) == SN_OK && access(path, F_OK) == 0) {
		sn_buf_printf(&b, "plan: hit %s\n", path);
	} else {
		sn_buf_printf(&b, "plan: miss\n");
		/* the nearest stored plan: fewest differing components */
		char best[4600] = "", *best_text = NULL;
		int best_d = 1 << 30;
		for (int i = 0; i < 256; i++) {
			char sub[4200];
			snprintf(sub, sizeof sub, "%s/plans/%02x", dir, i);
			DIR *dd = opendir(sub);
			struct dirent *de;
			while (dd && (de = readdir(dd))) {
				size_t l = strlen(de->d_name);
				if (l < 5 || strcmp(de->d_name + l - 4, ".key"))
					continue;
				char f[4500];
				snprintf(f, sizeof f, "%s/%s", sub, de->d_name);
				void *text = NULL;
				size_t len;
				sn_err re = {0};
				if (sn_read_file(f, SN_F_NOFOLLOW | SN_F_ENV, 1 << 16, NULL, &text, &len, &re) != SN_OK)
					continue;
				int d = differences(ours.s ? ours.s : "", text);
				if (d < best_d) {
					best_d = d;
					snprintf(best, sizeof best, "%s", f);
					free(best_text);
					best_text = text;
				} else {
					free(text);
				}
			}
			if (dd)
				closedir(dd);
		}
		if (!best_text) {
			sn_buf_printf(&b, "  no stored plan to compare with\n");
		} else {
			sn_buf_printf(&b, "  nearest stored plan %s differs in %d component%s:\n", best, best_d,
				      best_d == 1 ? "" : "s");
			for (size_t i = 0; i < SN_COUNT(key_labels); i++) {
				char a[1024], c2[1024];
				const char *x = component(ours.s ? ours.s : "", key_labels[i], a, sizeof a),
					   *y = component(best_text, key_labels[i], c2, sizeof c2);
				if (!x || !y || strcmp(x, y))
					sn_buf_printf(&b, "    %-9s this compile: %s\n              the entry:    %s\n", key_labels[i],
						      x ? x : "(none)", y ? y : "(none)");
			}
			free(best_text);
		}
	}
	sn_buf_free(&ours);
	/* kernels: the default plan's, against the kernel cache */
	cg_plan *p = NULL;
	sinter_compile_stats cs = {0};
	sinter_error berr;
	if (build_plan(m, &r, dev->sm, &p, &cs, NULL, &berr) == SINTER_OK) {
		size_t hits = 0;
		int nv = rt_nvrtc_lib_version();
		for (uint32_t i = 0; i < p->nkerns; i++) {
			uint8_t kk[KC_KEY_SIZE];
			char kp[4400];
			kc_key(p->kerns[i].src, nv, dev->sm, RT_NVRTC_FLAGS, kk);
			hits += kc_entry_path(dir, kk, kp, sizeof kp, &e) == SN_OK && access(kp, F_OK) == 0;
		}
		sn_buf_printf(&b, "kernels: %zu of %u unique kernels (default configs) in the kernel cache\n", hits,
			      p->nkerns);
		cg_plan_free(p);
	} else {
		sn_buf_printf(&b, "kernels: not checked (%s)\n", berr.message);
	}
	rt_cuda_close(dev);
	if (b.oom) {
		sn_buf_free(&b);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	*report = b.s;
	return SINTER_OK;
}
