/* cuda_api.c: the public API's device entry points (sinter.h, "compiling
 * for a device"). They sequence the stages and own no algorithm:
 * options -> plan cache lookup -> (on a miss) passes on a copy of the model,
 * lowering into a plan (codegen), NVRTC through the kernel cache, plan
 * stored -> runtime load. This file holds the handle: options, its plan
 * slots and their loading, packages; the stages are cuda_compile.c,
 * cuda_cache.c and cuda_run.c (cuda_compiled.h). */
#include "api/cuda_compiled.h"
#include "api/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* The modes' meaning, decided here and nowhere else. */
sinter_status api_cuda_resolve(const sinter_compile_options *o, resolved *r, sinter_error *err)
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
const char *api_cuda_cache_dir(const sinter_compile_options *o, char *buf, size_t cap)
{
	if (o && o->cache_dir)
		return o->cache_dir[0] ? o->cache_dir : NULL;
	return kc_default_dir(buf, cap) == SN_OK ? buf : NULL;
}

bool api_cuda_available(char *why, size_t cap)
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
	if (c && api_device_of(c) != API_DEV_CUDA) { /* cpu or ref */
		api_host_free(c);
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
	for (size_t i = 0; i < c->nwfiles; i++)
		free(c->wfiles[i]);
	free(c->wfiles);
	free(c->wprefix);
	for (uint32_t i = 0; i < c->nsyms; i++)
		free(c->syms[i]);
	sinter_model_free(c->desc);
	api_state_free(&c->st);
	free(c);
}

api_state *api_cuda_state(sinter_compiled *c)
{
	return &c->st;
}

char *api_cuda_strdup(const char *s, bool *oom)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	*oom |= !d;
	return d;
}

sinter_status api_cuda_new(const sinter_compile_options *o, sinter_compiled **out, sinter_error *err)
{
	sinter_compiled *c = calloc(1, sizeof *c);
	if (!c)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	if (o)
		c->o = *o;
	bool oom = false;
	c->o.mode = c->mode = api_cuda_strdup(c->o.mode, &oom);
	c->o.passes = c->passes = api_cuda_strdup(c->o.passes, &oom);
	c->o.dump_dir = c->dump_dir = api_cuda_strdup(c->o.dump_dir, &oom);
	c->o.cache_dir = c->cache_dir = api_cuda_strdup(c->o.cache_dir, &oom);
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
sinter_status api_cuda_add_slot(sinter_compiled *c, cg_plan *p, const int64_t *vals, bool graphs,
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

sinter_status api_package_load(const char *path, const sinter_compile_options *o, sinter_compiled **out,
				  sinter_compile_stats *stats, sinter_error *err)
{
	*out = NULL;
	sinter_status routed;
	if (api_package_route(path, o, out, stats, err, &routed)) /* a cpu package, or the wrong device */
		return routed;
	sinter_compile_stats s = {0};
	resolved r;
	sinter_status st = api_cuda_resolve(o, &r, err);
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
	if ((st = api_cuda_new(o, &c, err))) {
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
	if ((st = api_cuda_add_slot(c, p, NULL, r.graphs, &s, &sl, err))) {
		sinter_compiled_free(c);
		return st;
	}
	c->last = sl;
	if (stats)
		*stats = s;
	*out = c;
	return SINTER_OK;
}
