/* cuda_compile.c: compiling a model for the cuda device (sinter_model_compile,
 * sinter_model_compile_kernels): passes on a copy of the model, lowering into a
 * plan, max-autotune, NVRTC through the kernel cache, the plan cache
 * looked up first and stored after (cuda_cache.c). */
#include "api/cuda_compiled.h"
#include "api/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- building a plan ---- */

/* Passes on a copy of m, then lowering: the plan, with its weight image
 * when m's weights are loaded. */
sinter_status api_cuda_build_plan(const sinter_model *mc, const resolved *r, int sm, cg_plan **out,
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
		rt_compile_all(nv, jobs, nj, sm, api_cuda_cache_dir(o, cbuf, sizeof cbuf), 0, o ? o->dump_dir : NULL,
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
sinter_status api_cuda_compile_bound(sinter_compiled *c, const sinter_model *m, const int64_t *vals,
				     sinter_compile_stats *s, slot **out, sinter_error *err)
{
	resolved r;
	sinter_status st = api_cuda_resolve(&c->o, &r, err);
	if (st)
		return st;
	if (c->o.target_sm && c->o.target_sm != c->dev->sm)
		return api_failf(err, SINTER_E_USAGE, "target sm_%d does not match the GPU %s (sm_%d)", c->o.target_sm,
				 c->dev->name, c->dev->sm);
	if (!m->weights)
		return api_failf(err, SINTER_E_USAGE, "the model's weights are not loaded");
	char cbuf[4096], path[4200] = "";
	const char *dir = c->o.no_plan_cache ? NULL : api_cuda_cache_dir(&c->o, cbuf, sizeof cbuf);
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
		api_cuda_plan_key(m, &r, c->dev, wid, key0);
		memcpy(key, key0, 16);
		bool have_key = true;
		if (r.tune && kc_plan_path(dir, key0, false, path0, sizeof path0, &e) == SN_OK)
			have_key = api_cuda_tuned_key(path0, tc.st, c->dev, key0, key, digest);
		s->key_s = sn_now() - t0;
		if (kc_plan_path(dir, key, false, path, sizeof path, &e) != SN_OK)
			path[0] = 0;
		existed = path[0] && access(path, F_OK) == 0;
		if (path[0] && have_key)
			p = api_cuda_cache_lookup(path, m, &info, &c->o);
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
		return api_cuda_add_slot(c, p, vals, r.graphs, s, out, err);
	}
	if ((st = api_cuda_build_plan(m, &r, c->dev->sm, &p, s, r.tune ? &tc : NULL, err)) ||
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
			api_cuda_extend_key(key0, digest, key);
			if (kc_plan_path(dir, key, true, path, sizeof path, &e) != SN_OK ||
			    kc_plan_path(dir, key0, true, path0, sizeof path0, &e) != SN_OK)
				path[0] = 0;
			else
				api_cuda_tune_list_write(path0, &tc.s, &c->o);
		} else {
			path[0] = 0;
		}
		at_tune_stats_free(&tc.s);
		at_store_close(tc.st);
		tc.st = NULL;
	}
	if ((st = api_cuda_add_slot(c, p, vals, r.graphs, s, out, err)))
		return st;
	/* stored with the cuBLASLt algorithms the load chose */
	if (path[0]) {
		t0 = sn_now();
		api_pc_info_for_write(m, &info);
		uint8_t key[16];
		api_cuda_plan_key(m, &r, c->dev, wid, key);
		if ((!r.tune && kc_plan_path(dir, key, true, path, sizeof path, &e) != SN_OK) ||
		    cg_plan_write(path, (*out)->plan, &info, &e) != SN_OK) {
			api_pc_warn(&c->o, "plan cache: not stored: %s", e.msg);
		} else {
			/* what the key was made of, for sinter cache explain */
			char kpath[4300];
			sn_buf kb = {0};
			api_cuda_key_components(m, &r, c->dev, wid, records, &kb);
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

sinter_status api_model_compile(const sinter_model *m, const sinter_compile_options *o,
			     sinter_compiled **out, sinter_compile_stats *stats, sinter_error *err)
{
	if (o->device == SINTER_DEVICE_CPU)
		return api_cpu_compile(m, o, out, stats, err);
	if (o->device == SINTER_DEVICE_REF)
		return api_ref_compile(m, o, out, stats, err);
	*out = NULL;
	if (m->g->nstates && sinter_model_num_symbols(m))
		return api_failf(err, SINTER_E_USAGE, "the model has %u states and unbound symbols: state on cuda needs "
				 "every symbol bound (--shape)", m->g->nstates);
	sinter_compile_stats s = {0};
	resolved r;
	sinter_status st = api_cuda_resolve(o, &r, err);
	if (st)
		return st;
	if (!m->weights)
		return api_failf(err, SINTER_E_USAGE, "the model's weights are not loaded");
	sinter_compiled *c = NULL;
	double t0 = sn_now();
	if ((st = api_cuda_new(o, &c, err)))
		return st;
	s.context_s = sn_now() - t0;
	/* the user's view of inputs and outputs: a copy of the model's graph */
	sn_err e = {0};
	c->desc = calloc(1, sizeof *c->desc);
	if (!c->desc || !(c->desc->g = ir_graph_clone(m->g, &e)) || api_defaults_copy(c->desc, m, NULL)) {
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
		c->path = api_cuda_strdup(m->path, &oom);
		if (m->wsrc == API_W_FILE && m->nwfiles) {
			/* every file and the prefix: a second --weights or an
			 * explicit --weights-prefix holds for each binding too */
			if (!(c->wfiles = calloc(m->nwfiles, sizeof *c->wfiles)))
				oom = true;
			else
				c->nwfiles = m->nwfiles;
			for (size_t i = 0; i < c->nwfiles; i++)
				c->wfiles[i] = api_cuda_strdup(m->wfiles[i], &oom);
			c->wprefix = api_cuda_strdup(m->wprefix ? m->wprefix : "", &oom);
		}
		c->wsrc = m->wsrc;
		c->seed = m->seed;
		c->nsyms = m->g->nsyms < 16 ? m->g->nsyms : 16;
		for (uint32_t i = 0; i < c->nsyms; i++)
			c->syms[i] = api_cuda_strdup(m->g->syms[i], &oom);
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
	if ((st = api_cuda_compile_bound(c, m, NULL, &s, &sl, err))) {
		sinter_compiled_free(c);
		return st;
	}
	c->last = sl;
	if ((st = api_state_init(&c->st, m->g, err))) {
		sinter_compiled_free(c);
		return st;
	}
	if (stats)
		*stats = s;
	*out = c;
	return SINTER_OK;
}

sinter_status api_model_compile_kernels(const sinter_model *m, const sinter_compile_options *o, const char *package,
				     sinter_compile_stats *stats, sinter_error *err)
{
	if (o->device == SINTER_DEVICE_CPU)
		return api_cpu_compile_package(m, o, package, stats, err);
	sinter_compile_stats s = {0};
	resolved r;
	sinter_status st = api_cuda_resolve(o, &r, err);
	if (st)
		return st;
	if (package && !m->weights)
		return api_failf(err, SINTER_E_USAGE, "a package carries the weights: they are not loaded");
	if (package && m->g->nstates)
		return api_failf(err, SINTER_E_USAGE, "a CUDA package of a model with state is not built yet (the plan "
				 "does not mark its states): compile it where it runs");
	int sm = o && o->target_sm ? o->target_sm : 90;
	cg_plan *p = NULL;
	if (r.tune)
		return api_failf(err, SINTER_E_USAGE, "max-autotune times kernels on the GPU: it runs in sinter_model_compile "
						      "(sinter run or bench), not in a compile without loading");
	if (!(st = api_cuda_build_plan(m, &r, sm, &p, &s, NULL, err)))
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
