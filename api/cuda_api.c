/* cuda_api.c: the public API's device entry points (sinter.h, "compiling
 * for a device"), sequencing codegen, NVRTC and the CUDA executor. */
#include "api/model.h"

#include "passes/memplan.h"
#include "runtime/cuda_exec.h"
#include "runtime/cuda_nvrtc.h"
#include "runtime/kcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct sinter_compiled {
	rt_cuda *dev;
	rt_model *rm;
	ir_graph *g; /* input and output names and types */
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void warn_stderr(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "sinter: warning: %s\n", msg);
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

sinter_status sinter_compile_kernels(const sinter_model *m, const sinter_compile_options *o,
				     sinter_compile_stats *stats, sinter_error *err)
{
	sinter_status st = api_need_shaped(m, err);
	if (st)
		return st;
	int sm = o && o->target_sm ? o->target_sm : 90;
	sinter_compile_stats s = {0};
	sn_err e = {0};
	cg_plan *plan = NULL;
	rt_nvrtc *nv = NULL;
	rt_job *jobs = NULL;
	size_t nk = 0;
	char cbuf[4096];
	double t0 = now();
	cg_target tgt = {.sm = sm, .tf32 = o && o->tf32};
	if (cg_lower(m->g, &tgt, &plan, &e) != SN_OK)
		goto done;
	mp_plan_t mp;
	if (mp_plan(m->g, cg_is_alias, 256, &mp, &e) != SN_OK)
		goto done;
	s.arena_bytes = mp.peak;
	mp_plan_free(&mp);
	s.codegen_s = now() - t0;
	s.steps = plan->nsteps;
	jobs = calloc(plan->nsteps ? plan->nsteps : 1, sizeof *jobs);
	if (!jobs) {
		sn_errf(&e, SN_EINTERNAL, "out of memory");
		goto done;
	}
	for (uint32_t i = 0; i < plan->nsteps; i++)
		if (plan->steps[i].kind == CG_STEP_KERNEL) {
			jobs[nk].name = plan->steps[i].k.name;
			jobs[nk++].src = plan->steps[i].k.src;
		}
	s.kernels = nk;
	t0 = now();
	rt_compile_stats cs = {0};
	if (rt_nvrtc_open(&nv, &e) == SN_OK)
		rt_compile_all(nv, jobs, nk, sm, cache_dir_of(o, cbuf, sizeof cbuf), 0, o ? o->dump_dir : NULL,
			       o && o->warn ? o->warn : warn_stderr, o ? o->warn_ctx : NULL, &cs, &e);
	s.nvrtc_s = now() - t0;
	s.unique_kernels = cs.unique;
	s.cache_hits = cs.hits;
done:
	if (jobs)
		rt_jobs_free(jobs, nk);
	free(jobs);
	rt_nvrtc_close(nv);
	cg_plan_free(plan);
	if (stats)
		*stats = s;
	return e.code ? api_fail(err, &e) : SINTER_OK;
}

sinter_status sinter_compile(const sinter_model *m, const sinter_compile_options *o,
			     sinter_compiled **out, sinter_compile_stats *stats, sinter_error *err)
{
	*out = NULL;
	sinter_status st = api_need_shaped(m, err);
	if (st)
		return st;
	if (!m->weights)
		return api_failf(err, SINTER_E_USAGE, "the model's weights are not loaded");
	sn_err e = {0};
	sinter_compiled *c = calloc(1, sizeof *c);
	if (!c)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	if (rt_cuda_open(0, &c->dev, &e) != SN_OK)
		goto fail;
	if (o && o->target_sm && o->target_sm != c->dev->sm) {
		sn_errf(&e, SN_EUSAGE, "--target sm_%d does not match the GPU %s (sm_%d)", o->target_sm,
			c->dev->name, c->dev->sm);
		goto fail;
	}
	if (!(c->g = ir_graph_clone(m->g, &e)))
		goto fail;
	char cbuf[4096];
	rt_build_opts bo = {
		.cache_dir = cache_dir_of(o, cbuf, sizeof cbuf),
		.dump_dir = o ? o->dump_dir : NULL,
		.poison = o && o->poison,
		.tf32 = o && o->tf32,
		.graphs = o && o->cuda_graphs,
		.warn = o && o->warn ? o->warn : warn_stderr,
		.warn_ctx = o ? o->warn_ctx : NULL,
	};
	rt_times t = {0};
	ir_tensor *vals;
	sinter_status vs = api_param_vals(m->g, m->ws, &vals, err);
	if (vs) {
		sinter_compiled_free(c);
		return vs;
	}
	int brc = rt_model_build(c->dev, m->g, vals, &bo, &c->rm, &t, &e);
	api_vals_free(m->g, m->ws, vals);
	if (brc != SN_OK)
		goto fail;
	if (stats) {
		memset(stats, 0, sizeof *stats);
		stats->codegen_s = t.lower;
		stats->nvrtc_s = t.nvrtc;
		stats->load_s = t.load;
		stats->upload_s = t.upload;
		stats->kernels = t.kernels;
		stats->unique_kernels = t.unique;
		stats->cache_hits = t.cache_hits;
		stats->arena_bytes = t.arena_bytes;
		stats->weight_bytes = t.weight_bytes;
	}
	*out = c;
	return SINTER_OK;
fail:
	sinter_compiled_free(c);
	return api_fail(err, &e);
}

void sinter_compiled_free(sinter_compiled *c)
{
	if (!c)
		return;
	rt_model_free(c->rm);
	rt_cuda_close(c->dev);
	ir_graph_free(c->g);
	free(c);
}

sinter_status sinter_compiled_run(sinter_compiled *c, const sinter_tensor *inputs, size_t ninputs,
				  sinter_tensor **outputs, sinter_error *err)
{
	*outputs = NULL;
	const ir_graph *g = c->g;
	ir_tensor *vals = calloc(g->nnodes ? g->nnodes : 1, sizeof *vals);
	ir_tensor *ins = calloc(g->ninputs ? g->ninputs : 1, sizeof *ins);
	ir_tensor *outs = calloc(g->noutputs ? g->noutputs : 1, sizeof *outs);
	sinter_status st = SINTER_OK;
	if (!vals || !ins || !outs) {
		st = api_failf(err, SINTER_E_INTERNAL, "out of memory");
		goto done;
	}
	st = api_bind_inputs(g, inputs, ninputs, vals, err);
	if (st)
		goto done;
	for (uint32_t i = 0; i < g->ninputs; i++)
		ins[i] = vals[g->inputs[i]];
	sn_err e = {0};
	if (rt_model_run(c->rm, ins, outs, &e) != SN_OK) {
		st = api_fail(err, &e);
		goto done;
	}
	*outputs = api_wrap_outputs(g, outs);
	if (!*outputs)
		st = api_failf(err, SINTER_E_INTERNAL, "out of memory");
done:
	free(vals);
	free(ins);
	free(outs);
	return st;
}

sinter_status sinter_compiled_bench(sinter_compiled *c, int warmup, int iters, double *ms,
				    sinter_error *err)
{
	sn_err e = {0};
	return rt_model_time(c->rm, warmup, iters, ms, &e) == SN_OK ? SINTER_OK : api_fail(err, &e);
}

sinter_status sinter_compiled_profile(sinter_compiled *c, int iters, sinter_profile_entry **entries,
				      size_t *n, sinter_error *err)
{
	_Static_assert(sizeof(sinter_profile_entry) == sizeof(rt_prof), "one layout");
	sn_err e = {0};
	rt_prof *p = NULL;
	if (rt_model_profile(c->rm, iters, &p, n, &e) != SN_OK)
		return api_fail(err, &e);
	*entries = (sinter_profile_entry *)p; /* same fields in the same order */
	return SINTER_OK;
}
