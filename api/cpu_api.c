/* cpu_api.c: the public API's CPU device (sinter_compile_options.device =
 * "cpu"). It sequences the stages and owns no algorithm: options -> passes
 * on a copy of the model -> lowering into a CPU plan (codegen/cl_lower.c)
 * -> the runtime's load (LLVM -O3 for the host, or the object cache; ORC
 * LLJIT) -> runs. The entry points of sinter_compiled dispatch here on the
 * handle's device (api/model.h, api_device). */
#include "api/model.h"
#include "api/state.h"
#include "api/observe.h"
#include "api/plan_cache.h"

#include "frontend/sir.h"
#include "ir/file.h"
#include "ir/log.h"
#include "passes/pass.h"
#include "runtime/kcache.h"

#ifdef SINTER_HAVE_CPU
#include "runtime/cpu_exec.h"
#endif

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

/* What the file at path starts with: 1 a cpu plan (SINTCPUP), 2 a CUDA
 * plan (SINTPLAN), 0 anything else, or a file that cannot be read (its
 * reader says why). Opened without blocking: a FIFO is not waited on. */
static int package_kind(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	struct stat sb;
	char h[8];
	int kind = 0;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && pread(fd, h, 8, 0) == 8)
		kind = !memcmp(h, "SINTCPUP", 8) ? 1 : !memcmp(h, "SINTPLAN", 8) ? 2 : 0;
	close(fd);
	return kind;
}

static sinter_status cpu_load_package(const char *path, const sinter_compile_options *o, sinter_compiled **out,
				      sinter_compile_stats *stats, sinter_error *err);

sinter_device sinter_compiled_device(const sinter_compiled *c)
{
	return !c ? SINTER_DEVICE_CUDA
	       : api_device_of(c) == API_DEV_CPU ? SINTER_DEVICE_CPU
	       : api_device_of(c) == API_DEV_REF ? SINTER_DEVICE_REF
						 : SINTER_DEVICE_CUDA;
}

bool api_package_route(const char *path, const sinter_compile_options *o, sinter_compiled **out,
		       sinter_compile_stats *stats, sinter_error *err, sinter_status *st)
{
	*out = NULL;
	sinter_device dev = o->device; /* checked by sinter_package_load */
	int kind = path ? package_kind(path) : 0;
	if (kind == 1 && dev == SINTER_DEVICE_CUDA) {
		*st = api_failf(err, SINTER_E_USAGE,
				"%s: a cpu package (sinter compile --device cpu): it runs on cpu, not on cuda", path);
		return true;
	}
	if (kind == 2 && dev == SINTER_DEVICE_CPU) {
		*st = api_failf(err, SINTER_E_USAGE,
				"%s: a CUDA package (sinter compile without --device cpu): it runs on cuda, not on cpu",
				path);
		return true;
	}
	if (kind == 1 || dev == SINTER_DEVICE_CPU) { /* the cpu reader says what is wrong with the rest */
		*st = cpu_load_package(path, o, out, stats, err);
		return true;
	}
	return false;
}

#ifndef SINTER_HAVE_CPU

static sinter_status cpu_load_package(const char *path, const sinter_compile_options *o, sinter_compiled **out,
				      sinter_compile_stats *stats, sinter_error *err)
{
	*out = NULL;
	return api_failf(err, SINTER_E_ENV, "%s: a cpu package, and this build of sinter has no cpu backend (LLVM 16 "
					    "or OpenBLAS was not found at build time)",
			 path);
}

sinter_status api_cpu_compile_package(const sinter_model *m, const sinter_compile_options *o, const char *package,
				      sinter_compile_stats *stats, sinter_error *err)
{
	return api_failf(err, SINTER_E_ENV,
			 "this build of sinter has no cpu backend (LLVM 16 or OpenBLAS was not found at build time)");
}

bool api_cpu_built(void)
{
	return false;
}

api_state *api_cpu_state(sinter_compiled *c)
{
	return NULL;
}

bool api_cpu_available(char *why, size_t cap)
{
	snprintf(why, cap, "this build of sinter has no cpu backend (LLVM 16 or OpenBLAS was not found at build time)");
	return false;
}

sinter_status api_cpu_compile(const sinter_model *m, const sinter_compile_options *o, sinter_compiled **out,
			      sinter_compile_stats *stats, sinter_error *err)
{
	*out = NULL;
	return api_failf(err, SINTER_E_ENV,
			 "this build of sinter has no cpu backend (LLVM 16 or OpenBLAS was not found at build time)");
}
size_t api_cpu_num_inputs(const sinter_compiled *c) { return 0; }
size_t api_cpu_num_outputs(const sinter_compiled *c) { return 0; }
sinter_status api_cpu_input(const sinter_compiled *c, size_t i, sinter_tensor *d, sinter_error *err)
{
	return api_failf(err, SINTER_E_ENV, "this build of sinter has no cpu backend");
}
sinter_status api_cpu_output(const sinter_compiled *c, size_t i, sinter_tensor *d, sinter_error *err)
{
	return api_failf(err, SINTER_E_ENV, "this build of sinter has no cpu backend");
}
void api_cpu_free(sinter_compiled *c) {}
sinter_status api_cpu_run(sinter_compiled *c, const sinter_tensor *inputs, size_t n, sinter_tensor **outputs,
			  sinter_error *err)
{
	*outputs = NULL;
	return api_failf(err, SINTER_E_ENV, "this build of sinter has no cpu backend");
}
sinter_status api_cpu_bench(sinter_compiled *c, int warmup, int iters, double *ms, sinter_error *err)
{
	return SINTER_E_ENV;
}
sinter_status api_cpu_profile(sinter_compiled *c, int iters, sinter_profile_entry **entries, size_t *n,
			      sinter_error *err)
{
	*entries = NULL;
	*n = 0;
	return SINTER_E_ENV;
}
sinter_status api_cpu_print_plan(const sinter_model *m, char **text, sinter_error *err)
{
	*text = NULL;
	return api_failf(err, SINTER_E_ENV, "this build of sinter has no cpu backend");
}
sinter_status api_cpu_explain(const sinter_model *m, const sinter_compile_options *o, char **report, sinter_error *err)
{
	*report = NULL;
	return api_failf(err, SINTER_E_ENV, "this build of sinter has no cpu backend");
}

#else

typedef struct api_cpu {
	api_device device; /* API_DEV_CPU: first, as in every compiled handle */
	rt_cpu *rt;
	sinter_model *desc; /* the user's view of inputs and outputs */
	bool poison;
	/* the last run's inputs (copies) and output buffers, for bench */
	void **last_in;
	void **out_buf;
	api_state st; /* the model's states, kept across runs (state.h) */
	/* held by a run or a bench: runs on one handle from several threads
	 * take turns (the plan's arena, last_in and out_buf are the
	 * handle's), so each gets its own right outputs (sinter.h, Threads) */
	pthread_mutex_t run_lock;
} api_cpu;

bool api_cpu_built(void)
{
	return true;
}

api_state *api_cpu_state(sinter_compiled *cc)
{
	return &((api_cpu *)cc)->st;
}

bool api_cpu_available(char *why, size_t cap)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(why, cap, "cpu (%ld cores, LLVM 16 JIT, OpenBLAS)", n);
	return true;
}

void api_cpu_free(sinter_compiled *cc)
{
	api_cpu *c = (api_cpu *)cc;
	if (!c)
		return;
	const ir_graph *g = c->rt ? rt_cpu_plan(c->rt)->g : NULL;
	for (uint32_t i = 0; g && c->last_in && i < g->ninputs; i++)
		free(c->last_in[i]);
	for (uint32_t i = 0; g && c->out_buf && i < g->noutputs; i++)
		free(c->out_buf[i]);
	free(c->last_in);
	free(c->out_buf);
	api_state_free(&c->st);
	rt_cpu_free(c->rt);
	sinter_model_free(c->desc);
	pthread_mutex_destroy(&c->run_lock);
	free(c);
}

/* SINTER_E_USAGE for options the cpu device does not take. */
static sinter_status check_options(const sinter_compile_options *o, sinter_error *err)
{
	const char *mode = o && o->mode ? o->mode : "default";
	if (strcmp(mode, "default") && strcmp(mode, "reduce-overhead"))
		return api_failf(err, SINTER_E_USAGE,
				 "mode '%s' on cpu: the cpu device takes default (reduce-overhead is the same there: "
				 "its steps have no launch overhead to capture; max-autotune has no cpu search spaces)",
				 mode);
	if (o && o->precision != SINTER_PREC_FP32 && o->precision != SINTER_PREC_BF16)
		return api_failf(err, SINTER_E_USAGE,
				 "the cpu device takes fp32 and bf16 (bf16 storage, fp32 arithmetic): precision %s is "
				 "not built for it",
				 (unsigned)o->precision <= SINTER_PREC_FP8
					 ? (const char *[]){"fp32", "tf32", "bf16", "fp16", "fp8"}[o->precision]
					 : "?");
	return SINTER_OK;
}

/* The passes o asks for on a copy of m, the CPU plan, its params' values
 * copied into its weight image. */
static sinter_status build(const sinter_model *mc, const sinter_compile_options *o, cl_plan **out,
			   sinter_compile_stats *s, sinter_error *err)
{
	sinter_model *m = (sinter_model *)mc;
	*out = NULL;
	sinter_status st = api_need_shaped(m, err);
	if (st || (st = check_options(o, err)))
		return st;
	if (m->weights && (st = api_materialize(m, err)))
		return st;
	const char *mode = o && o->mode ? o->mode : "default";
	sn_err e = {0};
	double t0 = sn_now();
	ir_graph *g = ir_graph_clone(m->g, &e);
	ir_wstore *ws = m->weights ? ir_ws_new_over(m->ws) : NULL;
	if (!g || (m->weights && !ws)) {
		ir_graph_free(g);
		ir_ws_free(ws);
		return e.code ? api_fail(err, &e) : api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	const char *pipeline = o && o->passes ? o->passes : pass_pipeline(mode);
	pass_ctx ctx = {.ws = ws, .precision = o && o->precision == SINTER_PREC_BF16 ? PASS_BF16 : PASS_FP32, .sm = 0};
	if (pipeline[0] && pass_run_list(&g, pipeline, &ctx, &e) != SN_OK) {
		ir_graph_free(g);
		ir_ws_free(ws);
		return api_fail(err, &e);
	}
	/* the nodes in the order the plan file's text reads back (the
	 * precision pass puts each input's cast right after it, the parser
	 * numbers inputs first): the plan cache stores what cl_lower makes */
	{
		sn_buf text = {0};
		ir_print(g, &text);
		ir_graph *h = NULL;
		if (text.oom || sir_parse(text.s ? text.s : "", text.len, "<cpu graph>", NULL, 0, &h, &e) != SN_OK) {
			sn_buf_free(&text);
			ir_graph_free(g);
			ir_ws_free(ws);
			return e.code ? api_fail(err, &e) : api_failf(err, SINTER_E_INTERNAL, "out of memory");
		}
		sn_buf_free(&text);
		ir_graph_free(g);
		g = h;
	}
	s->passes_s = sn_now() - t0;
	sn_stage("passes", t0, "%s, %u nodes after", pipeline[0] ? pipeline : "none", g->nnodes);
	t0 = sn_now();
	ir_tensor *vals = NULL;
	if (m->weights && (st = api_param_vals(g, ws, &vals, err))) {
		ir_graph_free(g);
		ir_ws_free(ws);
		return st;
	}
	int rc = cl_lower(g, vals, o && o->no_fusion, out, &e); /* takes g on success */
	if (vals)
		api_vals_free(g, ws, vals);
	ir_ws_free(ws);
	if (rc) {
		ir_graph_free(g);
		return api_fail(err, &e);
	}
	s->codegen_s = sn_now() - t0;
	sn_stage("codegen (cpu)", t0, "%u steps, %u kernels, %u on the reference interpreter", (*out)->nsteps,
		 (*out)->nfns, (*out)->nref);
	return SINTER_OK;
}

sinter_status api_cpu_print_plan(const sinter_model *m, char **text, sinter_error *err)
{
	*text = NULL;
	cl_plan *p = NULL;
	sinter_compile_stats s = {0};
	sinter_compile_options o;
	memset(&o, 0, sizeof o);
	o.passes = ""; /* the model as given (sinter print runs its passes first) */
	sinter_status st = build(m, &o, &p, &s, err);
	if (st)
		return st;
	sn_buf b = {0};
	cl_plan_list(p, &b);
	cl_plan_free(p);
	return api_buf_take(&b, text, err);
}

/* ---- the plan cache (docs/CACHE.md): cpu entries beside the CUDA ones,
 * keyed by XXH3-128 of the text "sinter cpu plan FORMAT VERSION", the
 * emitter's version (CL_EMIT_VERSION), the mode, pass pipeline, precision
 * and fusion, the host (LLVM, target triple, CPU and its features,
 * OpenBLAS's build), the weights' identity and the model's canonical
 * text: a key no CUDA plan can have. ---- */
static void plan_key(const sinter_model *m, const sinter_compile_options *o, const char *wid, uint8_t key[16])
{
	const char *mode = o && o->mode ? o->mode : "default";
	sn_buf b = {0};
	sn_buf_printf(&b, "sinter cpu plan %d %s\nemit %d\nmode %s\npipeline %s\nprecision %d\nfusion %s\nhost ",
		      CL_PLAN_FORMAT, SINTER_VERSION, CL_EMIT_VERSION, mode,
		      o && o->passes ? o->passes : pass_pipeline(mode), o ? (int)o->precision : 0,
		      o && o->no_fusion ? "off" : "on");
	rt_cpu_host(&b);
	sn_buf_printf(&b, "\nweights %s\n", wid);
	ir_print(m->g, &b);
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits(b.s ? b.s : "", b.len));
	memcpy(key, c.digest, 16);
	sn_buf_free(&b);
}

/* The key's components as "label value" lines (api/cuda_cache.c's for
 * CUDA plans), for the .key file beside a stored plan and for sinter
 * cache explain: the key's fields, the host split into the CPU, its
 * features, LLVM and OpenBLAS, and the model's canonical text replaced
 * by its hash and its inputs' shapes. */
static void key_components(const sinter_model *m, const sinter_compile_options *o, const char *wid, sn_buf *b)
{
	const char *mode = o && o->mode ? o->mode : "default";
	sn_buf_printf(b, "format cpu %d\nversion %s\nemit %d\nmode %s\npipeline %s\nprecision %s\nfusion %s\n",
		      CL_PLAN_FORMAT, SINTER_VERSION, CL_EMIT_VERSION, mode, o && o->passes ? o->passes : pass_pipeline(mode),
		      o && o->precision == SINTER_PREC_BF16 ? "bf16" : "fp32", o && o->no_fusion ? "off" : "on");
	/* "llvm V TRIPLE CPU FEATURES openblas CONFIG" */
	sn_buf h = {0};
	rt_cpu_host(&h);
	const char *t[5] = {0}, *at = h.s ? h.s : "";
	size_t len[5] = {0};
	for (int i = 0; i < 5; i++) {
		at += strspn(at, " ");
		t[i] = at;
		len[i] = strcspn(at, " ");
		at += len[i];
	}
	const char *blas = strstr(at, "openblas ");
	sn_buf_printf(b, "device cpu %.*s %.*s\nfeatures %.*s\nllvm %.*s\nopenblas %s\nweights %s\n", (int)len[2], t[2],
		      (int)len[3], t[3], (int)len[4], t[4], (int)len[1], t[1], blas ? blas + 9 : "?", wid);
	sn_buf_free(&h);
	api_pc_model_components(m, b);
}

static const char *const key_labels[] = {"format", "version", "emit", "mode", "pipeline", "precision", "fusion",
					  "device", "features", "llvm", "openblas", "weights", "model", "shapes"};

/* The plan stored at path when it is there, sound and current; a corrupt
 * or stale entry is reported once and deleted, one another user could
 * have written is reported and left alone. */
static cl_plan *cache_lookup(const char *path, const sinter_model *m, const cg_plan_info *want,
			     const sinter_compile_options *o)
{
	if (access(path, F_OK) != 0)
		return NULL;
	cl_plan *p = NULL;
	cg_plan_info have;
	sn_err e = {0};
	if (cl_plan_read(path, &p, &have, &e) != SN_OK) {
		bool distrust = strstr(e.msg, "not trusted") != NULL;
		bool bad = e.code == SN_EINPUT && !distrust;
		/* a directory in its place: removed when empty or sinter's, else
		 * left alone (said here, and again when the store fails) */
		char dirwhy[600];
		if (bad && kc_drop_dir(path, dirwhy, sizeof dirwhy) != 0) {
			api_pc_warn(o, "plan cache: corrupt entry (%s: %s), rebuilding", path, dirwhy);
			return NULL;
		}
		api_pc_warn(o, "plan cache: %s entry (%s)%s, rebuilding",
			    distrust ? "refused" : bad ? "corrupt" : "unreadable", e.msg, bad ? ": deleted" : "");
		if (bad)
			unlink(path);
		return NULL;
	}
	const char *changed = api_pc_stale(m, want, &have);
	if (changed) {
		api_pc_warn(o, "plan cache: stale entry %s (%s changed): rebuilding", path, changed);
		cl_plan_free(p);
		unlink(path);
		return NULL;
	}
	return p;
}

/* Writes the loaded plan to path, and what its key was made of beside it
 * (.key, for sinter cache explain); a failure is a warning: the compile
 * stands. */
static void cache_store(const char *path, const cl_plan *p, const sinter_model *m, cg_plan_info *info,
			const sinter_compile_options *o, const char *wid)
{
	sn_err e = {0};
	api_pc_info_for_write(m, info);
	if (cl_plan_write(path, p, info, &e) != SN_OK) {
		api_pc_warn(o, "plan cache: not stored: %s", e.msg);
		return;
	}
	char kpath[4300];
	sn_buf kb = {0};
	key_components(m, o, wid, &kb);
	api_pc_sidecar(path, ".key", kpath, sizeof kpath);
	if (!kb.oom)
		sn_write_file(kpath, kb.s, kb.len, 0600, &e);
	sn_buf_free(&kb);
	if (sn_cache_shared()) { /* the group reads them, whatever the umask */
		chmod(path, 0640);
		chmod(kpath, 0640);
	}
}

/* A compiled cpu model over plan p (which it will own once loaded) for
 * graph g: NULL on failure, e set when cloning g failed (else out of
 * memory). Its stats from the plan go into s. Free with api_cpu_free. */
static api_cpu *cpu_new(const ir_graph *g, const cl_plan *p, const sinter_compile_options *o,
			sinter_compile_stats *s, sn_err *e)
{
	api_cpu *c = calloc(1, sizeof *c);
	if (c && pthread_mutex_init(&c->run_lock, NULL)) {
		free(c);
		c = NULL;
	}
	if (!c || !(c->desc = calloc(1, sizeof *c->desc)) || !(c->desc->g = ir_graph_clone(g, e))) {
		if (c) {
			free(c->desc);
			pthread_mutex_destroy(&c->run_lock);
		}
		free(c);
		return NULL;
	}
	c->device = API_DEV_CPU;
	c->poison = o && o->poison;
	if (api_state_init(&c->st, g, NULL)) { /* out of memory: the graph is shaped */
		sinter_model_free(c->desc);
		pthread_mutex_destroy(&c->run_lock);
		free(c);
		return NULL;
	}
	s->steps = p->nkernel + p->ngemm + p->nconv + p->nattn + p->npool + p->ngather + p->nref;
	s->kernels = s->unique_kernels = p->nfns;
	s->ref_steps = p->nref;
	s->arena_bytes = p->arena_bytes;
	s->weight_bytes = p->weight_bytes;
	return c;
}

sinter_status api_cpu_compile(const sinter_model *m, const sinter_compile_options *o, sinter_compiled **out,
			      sinter_compile_stats *stats, sinter_error *err)
{
	*out = NULL;
	if (!m->weights)
		return api_failf(err, SINTER_E_USAGE, "the model's weights are not loaded");
	if (sinter_model_num_symbols(m))
		return api_failf(err, SINTER_E_USAGE, "the cpu device compiles fully shaped models: bind symbol %s (--shape %s=N)",
				 sinter_model_symbol(m, 0), sinter_model_symbol(m, 0));
	if (o && o->threads < 0)
		return api_failf(err, SINTER_E_USAGE, "threads must be >= 0, got %d", o->threads);
	sinter_status st = check_options(o, err);
	if (st)
		return st;
	rt_cpu_blas_quiet();
	sinter_compile_stats s = {0};
	cl_plan *p = NULL;
	char dbuf[4096];
	const char *dir = o && o->cache_dir ? (o->cache_dir[0] ? o->cache_dir : NULL)
			  : kc_default_dir(dbuf, sizeof dbuf) == SN_OK ? dbuf : NULL;
	const char *pdir = o && o->no_plan_cache ? NULL : dir;
	cg_plan_info info = {0};
	char wid[4200], path[4200] = "";
	double t0 = sn_now();
	sn_err e = {0};
	uint8_t key[16];
	bool existed = false;
	if (pdir) {
		api_pc_weights_id(m, wid, sizeof wid, &info);
		plan_key(m, o, wid, key);
		s.key_s = sn_now() - t0;
		if (kc_plan_path(pdir, key, false, path, sizeof path, &e) != SN_OK)
			path[0] = 0;
		existed = path[0] && access(path, F_OK) == 0;
		if (path[0] && (p = cache_lookup(path, m, &info, o)))
			s.plan_hit = true;
	}
	sn_log(SN_LOG_INFO, "plan cache (cpu): %s",
	       !pdir     ? "off"
	       : p       ? "hit"
	       : existed ? "miss (the entry was stale or corrupt: see the warning above)"
			 : "miss (no entry for this model, shapes, mode, precision, fusion, host and weights: sinter cache "
			   "explain --device cpu names what differs from the nearest one)");
	if (!p && (st = build(m, o, &p, &s, err)))
		return st;
	s.plan_s = s.plan_hit ? sn_now() - t0 : 0;
again:;
	api_cpu *c = cpu_new(m->g, p, o, &s, &e);
	if (!c) {
		cl_plan_free(p);
		return e.code ? api_fail(err, &e) : api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	if ((st = api_defaults_copy(c->desc, m, err))) { /* the inputs' defaults, for runs that leave them out */
		cl_plan_free(p);
		api_cpu_free((sinter_compiled *)c);
		return st;
	}
	rt_cpu_stats rs;
	t0 = sn_now();
	if (rt_cpu_load(p, dir, o ? o->threads : 0, o && o->warn ? o->warn : api_warn_stderr, o ? o->warn_ctx : NULL, &rs,
			&c->rt, &e) != SN_OK) {
		api_cpu_free((sinter_compiled *)c);
		if (s.plan_hit && e.code == SN_EINPUT) {
			/* the entry's objects left the kernel cache: build it again */
			api_pc_warn(o, "plan cache: entry %s: %s: rebuilding", path, e.msg);
			s = (sinter_compile_stats){0};
			e = (sn_err){0};
			if ((st = build(m, o, &p, &s, err)))
				return st;
			goto again;
		}
		return api_fail(err, &e);
	}
	s.nvrtc_s = rs.opt_s;
	s.load_s = rs.jit_s;
	s.cache_hits = rs.obj_hit ? s.kernels : 0;
	sn_stage("load (cpu)", t0, "LLVM %.3f s, JIT %.3f s, object cache %s, %d threads", rs.opt_s, rs.jit_s,
		 rs.obj_hit ? "hit" : "miss", rs.threads);
	if (pdir && !s.plan_hit) {
		t0 = sn_now();
		if (kc_plan_path(pdir, key, true, path, sizeof path, &e) == SN_OK)
			cache_store(path, rt_cpu_plan(c->rt), m, &info, o, wid);
		else
			api_pc_warn(o, "plan cache: not stored: %s", e.msg);
		s.plan_s = sn_now() - t0;
	}
	if (stats)
		*stats = s;
	*out = (sinter_compiled *)c;
	return SINTER_OK;
}

sinter_status api_cpu_explain(const sinter_model *m, const sinter_compile_options *o, char **report, sinter_error *err)
{
	*report = NULL;
	sinter_status st = api_need_shaped((sinter_model *)m, err);
	if (st || (st = check_options(o, err)))
		return st;
	if (o && o->no_plan_cache)
		return api_failf(err, SINTER_E_USAGE, "the plan cache is off (no_plan_cache): there is nothing to explain");
	char dbuf[4096];
	const char *dir = o && o->cache_dir ? (o->cache_dir[0] ? o->cache_dir : NULL)
			  : kc_default_dir(dbuf, sizeof dbuf) == SN_OK ? dbuf : NULL;
	if (!dir)
		return api_failf(err, SINTER_E_ENV, "no cache directory: set SINTER_CACHE_DIR, XDG_CACHE_HOME or HOME");
	rt_cpu_blas_quiet(); /* the host's key names OpenBLAS's build */
	sn_buf b = {0}, ours = {0};
	cg_plan_info info = {0};
	char wid[4200], path[4300];
	api_pc_weights_id(m, wid, sizeof wid, &info);
	uint8_t key[16];
	plan_key(m, o, wid, key);
	key_components(m, o, wid, &ours);
	sn_buf_printf(&b, "cache %s\n", dir);
	sn_err e = {0};
	if (kc_plan_path(dir, key, false, path, sizeof path, &e) == SN_OK && access(path, F_OK) == 0) {
		cl_plan *p = NULL;
		cg_plan_info have;
		const char *changed = NULL;
		if (cl_plan_read(path, &p, &have, &e) != SN_OK) {
			sn_buf_printf(&b, "plan: an entry %s that does not read (%s): a compile would delete or skip it and "
					  "rebuild\n",
				      path, e.msg);
		} else if ((changed = api_pc_stale(m, &info, &have))) {
			sn_buf_printf(&b, "plan: a stale entry %s (%s changed): a compile would rebuild it\n", path, changed);
		} else {
			sn_buf_printf(&b, "plan: hit %s\n", path);
			/* its code: the objects the entry names, in the kernel cache */
			int have_obj = 0, want = 0;
			for (int k = 0; k < CL_NMOD; k++) {
				char kp[4400];
				if (!p->has_obj[k])
					continue;
				want++;
				have_obj += kc_entry_path(dir, p->objkey[k], kp, sizeof kp, &e) == SN_OK && access(kp, F_OK) == 0;
			}
			sn_buf_printf(&b, "objects: %d of the %d compiled modules the entry names in the kernel cache%s\n",
				      have_obj, want, have_obj < want ? " (a compile would rebuild the plan)" : "");
		}
		cl_plan_free(p);
	} else {
		sn_buf_printf(&b, "plan: miss\n");
		api_pc_explain_nearest(dir, ours.s ? ours.s : "", true, key_labels, SN_COUNT(key_labels), &b);
		sn_buf_printf(&b, "objects: a compile would look each module up in the kernel cache by its LLVM text\n");
	}
	bool oom = b.oom || ours.oom;
	sn_buf_free(&ours);
	if (oom) {
		sn_buf_free(&b);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	*report = b.s;
	return SINTER_OK;
}

/* ---- AOT packages (docs/CACHE.md, "cpu packages"): the plan file of
 * codegen/cl_io.c with the objects and the host they were compiled for
 * in its tables, read into private memory; loading one runs no pass, no
 * lowering, no LLVM and needs no cache. ---- */

sinter_status api_cpu_compile_package(const sinter_model *m, const sinter_compile_options *o, const char *package,
				      sinter_compile_stats *stats, sinter_error *err)
{
	if (package && !m->weights)
		return api_failf(err, SINTER_E_USAGE, "a package carries the weights: they are not loaded");
	if (sinter_model_num_symbols(m))
		return api_failf(err, SINTER_E_USAGE, "the cpu device compiles fully shaped models: bind symbol %s (--shape %s=N)",
				 sinter_model_symbol(m, 0), sinter_model_symbol(m, 0));
	sinter_status st = check_options(o, err);
	if (st)
		return st;
	rt_cpu_blas_quiet();
	sinter_compile_stats s = {0};
	cl_plan *p = NULL;
	if ((st = build(m, o, &p, &s, err)))
		return st;
	p->keep_obj = package != NULL;
	char dbuf[4096];
	const char *dir = o && o->cache_dir ? (o->cache_dir[0] ? o->cache_dir : NULL)
			  : kc_default_dir(dbuf, sizeof dbuf) == SN_OK ? dbuf : NULL;
	rt_cpu *rt = NULL;
	rt_cpu_stats rs;
	sn_err e = {0};
	if (rt_cpu_load(p, dir, 1, o && o->warn ? o->warn : api_warn_stderr, o ? o->warn_ctx : NULL, &rs, &rt, &e) !=
	    SN_OK)
		return api_fail(err, &e);
	const cl_plan *lp = rt_cpu_plan(rt);
	s.steps = lp->nkernel + lp->ngemm + lp->nconv + lp->nattn + lp->npool + lp->ngather + lp->nref;
	s.kernels = s.unique_kernels = lp->nfns;
	s.ref_steps = lp->nref;
	s.arena_bytes = lp->arena_bytes;
	s.weight_bytes = lp->weight_bytes;
	s.nvrtc_s = rs.opt_s;
	s.cache_hits = rs.obj_hit ? s.kernels : 0;
	if (package) {
		cg_plan_info info = {0};
		snprintf(info.version, sizeof info.version, "%s", SINTER_VERSION);
		snprintf(info.source, sizeof info.source, "%s", m->path ? m->path : "");
		double t0 = sn_now();
		if (cl_package_write(package, lp, &info, &e) != SN_OK)
			st = api_fail(err, &e);
		s.plan_s = sn_now() - t0;
	}
	rt_cpu_free(rt);
	if (stats)
		*stats = s;
	return st;
}

static sinter_status cpu_load_package(const char *path, const sinter_compile_options *o, sinter_compiled **out,
				      sinter_compile_stats *stats, sinter_error *err)
{
	*out = NULL;
	if (o && o->threads < 0)
		return api_failf(err, SINTER_E_USAGE, "threads must be >= 0, got %d", o->threads);
	rt_cpu_blas_quiet();
	sinter_compile_stats s = {0};
	double t0 = sn_now();
	cl_plan *p = NULL;
	cg_plan_info info;
	sn_err e = {0};
	if (cl_package_read(path, &p, &info, &e) != SN_OK)
		return api_fail(err, &e);
	s.plan_s = sn_now() - t0;
	api_cpu *c = cpu_new(p->g, p, o, &s, &e);
	if (!c) {
		cl_plan_free(p);
		return e.code ? api_fail(err, &e) : api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	s.plan_hit = true;
	rt_cpu_stats rs;
	t0 = sn_now();
	/* no cache: the package's objects are linked as they are */
	if (rt_cpu_load(p, NULL, o ? o->threads : 0, o && o->warn ? o->warn : api_warn_stderr, o ? o->warn_ctx : NULL,
			&rs, &c->rt, &e) != SN_OK) {
		api_cpu_free((sinter_compiled *)c);
		return api_failf(err, (sinter_status)e.code, "%s: %s", path, e.msg);
	}
	s.nvrtc_s = rs.opt_s;
	s.load_s = rs.jit_s;
	s.cache_hits = s.kernels;
	sn_stage("load package (cpu)", t0, "JIT %.3f s, %d threads", rs.jit_s, rs.threads);
	if (stats)
		*stats = s;
	*out = (sinter_compiled *)c;
	return SINTER_OK;
}

size_t api_cpu_num_inputs(const sinter_compiled *cc)
{
	return sinter_model_num_inputs(((const api_cpu *)cc)->desc);
}

size_t api_cpu_num_outputs(const sinter_compiled *cc)
{
	return sinter_model_num_outputs(((const api_cpu *)cc)->desc);
}

sinter_status api_cpu_input(const sinter_compiled *cc, size_t i, sinter_tensor *d, sinter_error *err)
{
	return sinter_model_input(((const api_cpu *)cc)->desc, i, d, err);
}

sinter_status api_cpu_output(const sinter_compiled *cc, size_t i, sinter_tensor *d, sinter_error *err)
{
	return sinter_model_output(((const api_cpu *)cc)->desc, i, d, err);
}

static size_t node_bytes(const ir_node *n)
{
	return (size_t)ir_numel(&n->shape) * ir_dtype_size(n->dtype);
}

static sinter_status cpu_run(api_cpu *c, const sinter_tensor *inputs, size_t ninputs, sinter_tensor **outputs,
			     sinter_error *err);

sinter_status api_cpu_run(sinter_compiled *cc, const sinter_tensor *inputs, size_t ninputs, sinter_tensor **outputs,
			  sinter_error *err)
{
	api_cpu *c = (api_cpu *)cc;
	pthread_mutex_lock(&c->run_lock);
	sinter_status st = cpu_run(c, inputs, ninputs, outputs, err);
	pthread_mutex_unlock(&c->run_lock);
	return st;
}

static sinter_status cpu_run(api_cpu *c, const sinter_tensor *inputs, size_t ninputs, sinter_tensor **outputs,
			     sinter_error *err)
{
	*outputs = NULL;
	const ir_graph *g = rt_cpu_plan(c->rt)->g;
	uint32_t nin = g->ninputs, nout = g->noutputs;
	ir_tensor *vals = calloc(g->nnodes ? g->nnodes : 1, sizeof *vals);
	ir_tensor *outs = calloc(nout ? nout : 1, sizeof *outs);
	const void **ins = calloc(nin ? nin : 1, sizeof *ins);
	void **op = calloc(nout ? nout : 1, sizeof *op);
	sinter_status st = SINTER_OK;
	if (!c->last_in)
		c->last_in = calloc(nin ? nin : 1, sizeof *c->last_in);
	if (!vals || !outs || !ins || !op || !c->last_in) {
		st = api_failf(err, SINTER_E_INTERNAL, "out of memory");
		goto done;
	}
	if ((st = api_bind_with_defaults(c->desc, g, inputs, ninputs, vals, err)))
		goto done;
	api_state_bind(&c->st, g, vals);
	for (uint32_t i = 0; i < nin; i++) {
		const ir_node *in = &g->nodes[g->inputs[i]];
		ins[i] = vals[g->inputs[i]].data;
		/* kept for sinter_compiled_bench */
		size_t nb = node_bytes(in);
		if (!c->last_in[i] && !(c->last_in[i] = malloc(nb ? nb : 1))) {
			st = api_failf(err, SINTER_E_INTERNAL, "out of memory");
			goto done;
		}
		if (nb && i < nin - g->nstates) /* a state's: copied when a bench asks (rerun_ready) */
			memcpy(c->last_in[i], ins[i], nb);
	}
	for (uint32_t i = 0; i < nout; i++) {
		const ir_node *on = &g->nodes[g->outputs[i]];
		outs[i] = (ir_tensor){.dtype = on->dtype, .shape = on->shape, .nbytes = node_bytes(on)};
		if (i >= nout - g->nstates) { /* a state's new value: into the state's buffer (in place) */
			op[i] = c->st.t[i - (nout - g->nstates)].data;
			continue;
		}
		if (!(outs[i].data = op[i] = malloc(outs[i].nbytes ? outs[i].nbytes : 1))) {
			st = api_failf(err, SINTER_E_INTERNAL, "out of memory");
			goto done;
		}
	}
	sn_err e = {0};
	double t0 = sn_now();
	if (rt_cpu_run(c->rt, ins, op, c->poison, &e) != SN_OK) {
		st = api_fail(err, &e);
		goto done;
	}
	sn_stage("run (cpu)", t0, "%u steps", rt_cpu_plan(c->rt)->nsteps);
	*outputs = api_wrap_outputs(c->desc->g, outs);
	if (!*outputs)
		st = api_failf(err, SINTER_E_INTERNAL, "out of memory");
	nout = 0; /* moved (or freed) */
done:
	for (uint32_t i = 0; outs && i < nout; i++)
		free(outs[i].data);
	free(outs);
	free(vals);
	free(ins);
	free(op);
	return st;
}

static sinter_status cpu_bench(api_cpu *c, int warmup, int iters, double *ms, sinter_error *err);

sinter_status api_cpu_bench(sinter_compiled *cc, int warmup, int iters, double *ms, sinter_error *err)
{
	api_cpu *c = (api_cpu *)cc;
	pthread_mutex_lock(&c->run_lock);
	sinter_status st = cpu_bench(c, warmup, iters, ms, err);
	pthread_mutex_unlock(&c->run_lock);
	return st;
}

/* The last run's inputs in place and output buffers made, for calls
 * that repeat it (bench, profile: what names them). */
static sinter_status rerun_ready(api_cpu *c, const char *what, sinter_error *err)
{
	const ir_graph *g = rt_cpu_plan(c->rt)->g;
	if (!c->last_in || (g->ninputs && !c->last_in[0]))
		return api_failf(err, SINTER_E_USAGE, "%s needs a run first (its inputs are reused)", what);
	for (uint32_t k = 0; k < g->nstates; k++) { /* the states as they are now */
		uint32_t i = g->ninputs - g->nstates + k;
		if (c->last_in[i] && c->st.t[k].nbytes)
			memcpy(c->last_in[i], c->st.t[k].data, c->st.t[k].nbytes);
	}
	if (!c->out_buf) {
		if (!(c->out_buf = calloc(g->noutputs ? g->noutputs : 1, sizeof *c->out_buf)))
			return api_failf(err, SINTER_E_INTERNAL, "out of memory");
		for (uint32_t i = 0; i < g->noutputs; i++) {
			size_t nb = node_bytes(&g->nodes[g->outputs[i]]);
			if (!(c->out_buf[i] = malloc(nb ? nb : 1)))
				return api_failf(err, SINTER_E_INTERNAL, "out of memory");
		}
	}
	return SINTER_OK;
}

static sinter_status cpu_bench(api_cpu *c, int warmup, int iters, double *ms, sinter_error *err)
{
	sinter_status st = rerun_ready(c, "bench", err);
	if (st)
		return st;
	sn_err e = {0};
	rt_cpu_trace_steps(c->rt, false); /* a trace gets no spans from the timed calls (the profile has the steps) */
	for (int i = 0; i < warmup + iters; i++) {
		double t0 = sn_now();
		if (rt_cpu_run(c->rt, (const void *const *)c->last_in, c->out_buf, false, &e) != SN_OK) {
			rt_cpu_trace_steps(c->rt, true);
			return api_fail(err, &e);
		}
		if (i >= warmup)
			ms[i - warmup] = (sn_now() - t0) * 1e3;
	}
	rt_cpu_trace_steps(c->rt, true);
	return SINTER_OK;
}

static sinter_status cpu_profile(api_cpu *c, int iters, sinter_profile_entry **entries, size_t *n, sinter_error *err)
{
	if (iters < 1)
		return api_failf(err, SINTER_E_USAGE, "a profile needs at least one call, got %d", iters);
	sinter_status st = rerun_ready(c, "a profile", err);
	if (st)
		return st;
	rt_cpu_prof *pr = NULL;
	size_t k = 0;
	sn_err e = {0};
	double t0 = sn_now();
	if (rt_cpu_profile(c->rt, (const void *const *)c->last_in, c->out_buf, iters, &pr, &k, &e) != SN_OK)
		return api_fail(err, &e);
	sinter_profile_entry *p = calloc(k ? k : 1, sizeof *p);
	if (!p) {
		free(pr);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	for (size_t i = 0; i < k; i++)
		p[i] = (sinter_profile_entry){.kernel = pr[i].name, .op = pr[i].op, .ms = pr[i].ms, .bytes = pr[i].bytes,
					      .flops = pr[i].flops};
	free(pr);
	char track[96];
	snprintf(track, sizeof track, "cpu: steps (each timed where it runs, mean of %d calls)", iters);
	api_trace_steps(p, k, t0, track);
	*entries = p;
	*n = k;
	return SINTER_OK;
}

sinter_status api_cpu_profile(sinter_compiled *cc, int iters, sinter_profile_entry **entries, size_t *n,
			      sinter_error *err)
{
	api_cpu *c = (api_cpu *)cc;
	if (!entries || !n)
		return api_failf(err, SINTER_E_USAGE, "profile: entries and n must not be NULL");
	*entries = NULL;
	*n = 0;
	pthread_mutex_lock(&c->run_lock);
	sinter_status st = cpu_profile(c, iters, entries, n, err);
	pthread_mutex_unlock(&c->run_lock);
	return st;
}

#endif
