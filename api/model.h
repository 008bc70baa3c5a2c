/* model.h: the model handle, shared by the API's files. */
#ifndef SINTER_API_MODEL_H
#define SINTER_API_MODEL_H

#include "sinter.h"
#include "sinter_tools.h"

#include <pthread.h>

#include "ir/ir.h"
#include "ir/wstore.h"

/* Where the params' values come from. They are read (or drawn) on first
 * use, so a plan-cache hit reads no weight at all. */
typedef enum api_wsrc { API_W_NONE, API_W_FILE, API_W_RANDOM, API_W_ONNX } api_wsrc;

struct sinter_model {
	ir_graph *g;
	ir_wstore *ws;   /* param values by key, once materialized */
	bool weights;    /* every param of g has a value: in ws, or in wsrc */
	bool onnx;       /* imported from ONNX: ws holds its initializers */
	char *dir;       /* directory of the source file, for the weights path */
	char *path;      /* the source file (NULL when parsed from memory) */
	api_wsrc wsrc;
	char *wpath;     /* API_W_FILE: the checked weights file (wfiles[0]) */
	char **wfiles;   /* API_W_FILE: every file named, in order (an index among them) */
	size_t nwfiles;
	char *wprefix;   /* API_W_FILE: the key prefix in force ("" for none) */
	char **wread;    /* API_W_FILE: every safetensors file read (an index's shards), real paths */
	size_t nwread;
	uint64_t seed;   /* API_W_RANDOM */
	bool materialized; /* ws holds every param's value */
	pthread_mutex_t lock; /* guards the first use's materialization (threads sharing m) */
	char **srcs;       /* the other files it was read from (ONNX external data), real paths */
	size_t nsrcs;
	/* inputs with a default: ONNX graph inputs that have an initializer
	 * (IR version >= 4), named as the inputs, their values the
	 * initializers'; a run that gives none of such an input takes its
	 * default (docs/ONNX.md). Owned. */
	sinter_tensor *defaults;
	size_t ndefaults;
};

/* The file among m's own (source, weights, external data) that path
 * names (same device and inode), or NULL; *scratch (free it) may hold it. */
const char *api_model_file(const sinter_model *m, const char *path, char **scratch);

/* Frees n strings and the array v. */
void api_strs_free(char **v, size_t n);
/* A fresh, empty weight store for m; on OOM the old one stays (callers
 * say the weights are not loaded, so nothing reads it) and SN_EINTERNAL. */
int api_reset_ws(sinter_model *m);
/* Forgets m's param values and where they come from (no weights). */
void api_free_params(sinter_model *m);
/* A new host tensor named name (copied), its data allocated for dt and s;
 * SN_EINTERNAL when out of memory. */
int api_set_tensor(sinter_tensor *t, const char *name, ir_dtype dt, const ir_shape *s);

/* Reads (or draws) every param's value into m->ws if not done yet. */
sinter_status api_materialize(sinter_model *m, sinter_error *err);

/* Copies an internal error into err; returns its status. */
sinter_status api_fail(sinter_error *err, const sn_err *e);
sinter_status api_failf(sinter_error *err, sinter_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* SINTER_E_USAGE naming the first unbound symbol, or SINTER_OK. */
sinter_status api_need_shaped(const sinter_model *m, sinter_error *err);
/* Points vals at the caller's inputs (matched by name or position) after
 * checking dtype and shape; SINTER_E_INPUT otherwise. */
sinter_status api_bind_inputs(const ir_graph *g, const sinter_tensor *inputs, size_t n,
			      ir_tensor *vals, sinter_error *err);
/* inputs, and m's default of each input of g they give no tensor for
 * (m->defaults), into *all (free the array, not the tensors: they are the
 * caller's and m's); *all NULL when there is none to add (m NULL: none). */
sinter_status api_with_defaults(const sinter_model *m, const ir_graph *g, const sinter_tensor *inputs, size_t n,
				sinter_tensor **all, size_t *nall, sinter_error *err);
/* api_bind_inputs over inputs and m's defaults. */
sinter_status api_bind_with_defaults(const sinter_model *m, const ir_graph *g, const sinter_tensor *inputs, size_t n,
				     ir_tensor *vals, sinter_error *err);
/* Copies src's defaults into dst (a compiled handle's description). */
sinter_status api_defaults_copy(sinter_model *dst, const sinter_model *src, sinter_error *err);
/* A g->nnodes array with every param's value (from ws, converted to the
 * param's dtype where they differ); free with api_vals_free. */
sinter_status api_param_vals(const ir_graph *g, const ir_wstore *ws, ir_tensor **vals,
			     sinter_error *err);
void api_vals_free(const ir_graph *g, const ir_wstore *ws, ir_tensor *vals);
/* Moves ir tensors (outputs) into a new sinter_tensor array named after the
 * graph's outputs; frees nothing on failure but returns NULL. */
sinter_tensor *api_wrap_outputs(const ir_graph *g, ir_tensor *outs);

/* The public entry points that take options (sinter.c) check them and
 * call these with a full options struct (never NULL, size set; every field
 * past the caller's size zero) and a full stats struct (never NULL). The
 * device's implementation: cuda_*.c, or sinter.c's stubs in a build
 * without CUDA. */
sinter_status api_model_compile(const sinter_model *m, const sinter_compile_options *o, sinter_compiled **out,
				sinter_compile_stats *stats, sinter_error *err);
sinter_status api_model_compile_kernels(const sinter_model *m, const sinter_compile_options *o, const char *package,
					sinter_compile_stats *stats, sinter_error *err);
sinter_status api_package_load(const char *path, const sinter_compile_options *o, sinter_compiled **out,
			       sinter_compile_stats *stats, sinter_error *err);
sinter_status api_cache_explain(const sinter_model *m, const sinter_compile_options *o, char **report,
				sinter_error *err);
/* Whether the device can be used; into why[cap]: what it is, or why not. */
bool api_cuda_available(char *why, size_t cap);
bool api_cpu_available(char *why, size_t cap);
/* sinter_model_print_plan for the cpu device (cpu_api.c). */
sinter_status api_cpu_print_plan(const sinter_model *m, char **text, sinter_error *err);
/* Hands b's text to the caller as *text (b consumed; "" when empty);
 * SINTER_E_INTERNAL when b ran out of memory. */
sinter_status api_buf_take(sn_buf *b, char **text, sinter_error *err);

/* Every compiled handle (struct sinter_compiled in cuda_api.c, api_cpu in
 * cpu_api.c) starts with its device, so the public entry points dispatch
 * on it. */
typedef enum api_device { API_DEV_CUDA, API_DEV_CPU, API_DEV_REF } api_device;
static inline api_device api_device_of(const sinter_compiled *c)
{
	return *(const api_device *)(const void *)c;
}

/* The cpu device (cpu_api.c): sinter_model_compile with device "cpu", and the
 * compiled handle's entry points for it. */
bool api_cpu_built(void);
sinter_status api_cpu_compile(const sinter_model *m, const sinter_compile_options *o, sinter_compiled **out,
			      sinter_compile_stats *stats, sinter_error *err);
size_t api_cpu_num_inputs(const sinter_compiled *c);
size_t api_cpu_num_outputs(const sinter_compiled *c);
sinter_status api_cpu_input(const sinter_compiled *c, size_t i, sinter_tensor *d, sinter_error *err);
sinter_status api_cpu_output(const sinter_compiled *c, size_t i, sinter_tensor *d, sinter_error *err);
void api_cpu_free(sinter_compiled *c);
sinter_status api_cpu_run(sinter_compiled *c, const sinter_tensor *inputs, size_t n, sinter_tensor **outputs,
			  sinter_error *err);
sinter_status api_cpu_bench(sinter_compiled *c, int warmup, int iters, double *ms, sinter_error *err);
/* sinter_cache_explain with device "cpu". */
sinter_status api_cpu_explain(const sinter_model *m, const sinter_compile_options *o, char **report,
			      sinter_error *err);
/* sinter_compiled_profile on cpu: each step timed where it runs. */
sinter_status api_cpu_profile(sinter_compiled *c, int iters, sinter_profile_entry **entries, size_t *n,
			      sinter_error *err);
/* AOT packages of cpu plans (cpu_api.c). sinter_model_compile_kernels with
 * device "cpu": the plan built, its objects compiled (or from the kernel
 * cache) and written with it into package when not NULL. */
sinter_status api_cpu_compile_package(const sinter_model *m, const sinter_compile_options *o, const char *package,
				      sinter_compile_stats *stats, sinter_error *err);
/* sinter_package_load's routing, first thing in both builds: true when it
 * answered (*st): a cpu package loaded on cpu, or a package refused for
 * the device asked for (o->device "cpu" with a CUDA package, "cuda" with
 * a cpu one: SINTER_E_USAGE naming both); false leaves path to the CUDA
 * loader. */
bool api_package_route(const char *path, const sinter_compile_options *o, sinter_compiled **out,
		       sinter_compile_stats *stats, sinter_error *err, sinter_status *st);

#endif
