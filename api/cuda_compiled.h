/* cuda_compiled.h: the cuda device's compiled handle (struct
 * sinter_compiled) and what the API's cuda files share: cuda_api.c (the
 * handle, its options and plan slots, loading, packages), cuda_compile.c
 * (passes, lowering, NVRTC, max-autotune), cuda_cache.c (the plan cache's
 * keys and sinter cache explain), cuda_run.c (running, benchmarking,
 * profiling). Internal to api/. Prefix: api_cuda_. */
#ifndef SINTER_API_CUDA_COMPILED_H
#define SINTER_API_CUDA_COMPILED_H

#include "api/model.h"
#include "api/state.h"
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
	char **wfiles; /* API_W_FILE: every weights file named (an index among them) */
	size_t nwfiles;
	char *wprefix; /* the key prefix in force ("" for none) */
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
	api_state st; /* the model's states, kept across runs (state.h): in host memory, copied in and
		       * out by each run */
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

/* The modes' meaning (o may be NULL: the defaults). */
sinter_status api_cuda_resolve(const sinter_compile_options *o, resolved *r, sinter_error *err);
/* The cache directory an options struct asks for (buf holds the default
 * one): NULL for none. */
const char *api_cuda_cache_dir(const sinter_compile_options *o, char *buf, size_t cap);
/* A malloc'ed copy of s (NULL for NULL); sets *oom when the copy fails. */
char *api_cuda_strdup(const char *s, bool *oom);
/* A new handle with a copy of o and the device opened (sinter_compiled_free). */
sinter_status api_cuda_new(const sinter_compile_options *o, sinter_compiled **out, sinter_error *err);
/* Loads plan p into a new slot of c (taking p). */
sinter_status api_cuda_add_slot(sinter_compiled *c, cg_plan *p, const int64_t *vals, bool graphs,
				sinter_compile_stats *s, slot **out, sinter_error *err);
/* Passes on a copy of m, then lowering (and tuning when tc is set): the
 * plan, with its weight image when m's weights are loaded (cuda_compile.c). */
sinter_status api_cuda_build_plan(const sinter_model *m, const resolved *r, int sm, cg_plan **out,
				  sinter_compile_stats *s, tune_ctx *tc, sinter_error *err);
/* The plan of a fully shaped model, from the plan cache or built, loaded
 * into a new slot (cuda_compile.c). */
sinter_status api_cuda_compile_bound(sinter_compiled *c, const sinter_model *m, const int64_t *vals,
				     sinter_compile_stats *s, slot **out, sinter_error *err);
/* The plan cache (cuda_cache.c): the key, its components as text, a
 * lookup; a tuned plan's extended key and its list of specs. */
void api_cuda_plan_key(const sinter_model *m, const resolved *r, const rt_cuda *dev, const char *wid, uint8_t key[16]);
void api_cuda_key_components(const sinter_model *m, const resolved *r, const rt_cuda *dev, const char *wid,
			     const char *records, sn_buf *b);
cg_plan *api_cuda_cache_lookup(const char *path, const sinter_model *m, const cg_plan_info *want,
			       const sinter_compile_options *o);
bool api_cuda_tuned_key(const char *plan_path, at_store *st, const rt_cuda *dev, const uint8_t key0[16],
			uint8_t key[16], uint8_t digest[16]);
void api_cuda_extend_key(const uint8_t key0[16], const uint8_t digest[16], uint8_t key[16]);
void api_cuda_tune_list_write(const char *plan_path, const at_tune_stats *ts, const sinter_compile_options *o);

#endif
