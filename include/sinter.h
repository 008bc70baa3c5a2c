/* sinter.h: the public C API of sinter, a graph compiler for neural
 * networks: the core (load a model, compile it for a device, run it and
 * keep its state; errors; versions). Tensor files, random inputs and
 * weights, printing, benches and profiles, caches and tuning records,
 * logging, traces and the rest of what the sinter command uses are in
 * sinter_tools.h.
 *
 * Conventions (docs/API.md):
 *  - Names are noun-first: sinter_NOUN_VERB (sinter_model_load,
 *    sinter_package_load, sinter_compiled_run).
 *  - Handles are opaque; the comment of every constructor names its
 *    destructor. Strings and arrays handed to the caller say who frees
 *    them.
 *  - Errors: every call that can fail returns a sinter_status and takes
 *    an optional `sinter_error *err` last (NULL: no message); on failure
 *    err holds the status and a message (with file:line:col and the source
 *    line where there is a source). Calls that cannot fail (getters,
 *    destructors) return their value. The library never exits or aborts
 *    on bad input.
 *  - Options are structs whose first field is their size (set by their
 *    static inline _init): the library reads the fields that size covers
 *    and takes the defaults (zero) for the rest, so a program built
 *    against an older header runs with a newer library; fields past the
 *    library's own must be zero.
 *
 * Linking: libsinter.so (pkg-config sinter; CMake find_package(sinter),
 * target sinter::sinter) or libsinter.a (pkg-config --static sinter;
 * sinter::sinter_static), which also needs -lxxhash -lm -ldl -pthread.
 *
 * Threads. The library keeps no mutable global state that a call depends
 * on: the caches are folders of files written through a temp file and a
 * rename, safe for concurrent writers, including other processes.
 *  - Any function may run concurrently with any other on different handles
 *    (each thread its own sinter_model / sinter_compiled).
 *  - A sinter_model may be shared by threads that only read it: every
 *    function taking a `const sinter_model *`, and sinter_model_run_ref,
 *    may run concurrently on one model (weights read on first use are read
 *    once, under the model's lock). Functions taking a non-const model
 *    that change it (sinter_model_optimize, sinter_model_load_weights,
 *    sinter_model_init_random, sinter_model_free) need it to themselves.
 *  - A CUDA sinter_compiled is used by one thread at a time (it owns a
 *    CUDA stream, buffers and the last run's inputs); compile one per
 *    thread to run in parallel. A cpu one may be shared: its runs and
 *    benches from several threads take turns (a lock), each with its own
 *    right outputs; one per thread runs in parallel.
 *    Options, stats and error structs belong to their caller.
 *  - sinter_version, sinter_dtype_*, sinter_device_*, and (sinter_tools.h)
 *    sinter_precision_parse and the cache functions may be called from
 *    any thread at any time.
 * tests/unit/test_threads.c checks this under ThreadSanitizer
 * (-DSINTER_TSAN=ON). */
#ifndef SINTER_H
#define SINTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is exported from libsinter.so; the library is
 * built with hidden visibility otherwise. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(default)
#endif

/* ---- errors, versions, types ---- */

/* Status codes; the CLI exits with the same numbers. */
typedef enum sinter_status {
	SINTER_OK = 0,
	SINTER_E_INPUT = 1,    /* bad input: malformed file, mismatched shapes, missing param */
	SINTER_E_USAGE = 2,    /* bad option or argument */
	SINTER_E_ENV = 3,      /* environment: no GPU, missing library, I/O failure */
	SINTER_E_INTERNAL = 4, /* a bug in sinter, or out of memory */
} sinter_status;

/* What a failed call says, when its caller passes one. */
typedef struct sinter_error {
	sinter_status status;
	char message[4096];
} sinter_error;

/* The library's version, "MAJOR.MINOR.PATCH". Until the first release the
 * API may change between versions (CHANGELOG.md says how). */
const char *sinter_version(void);

/* Element types, in the IR's order. */
typedef enum sinter_dtype {
	SINTER_F32, SINTER_F16, SINTER_BF16, SINTER_F8E4M3, SINTER_F8E5M2,
	SINTER_I64, SINTER_I32, SINTER_I8, SINTER_U8, SINTER_BOOL,
} sinter_dtype;
/* "f32", "bf16", ...; "?" for a value out of range. */
const char *sinter_dtype_name(sinter_dtype t);
/* Bytes per element; 0 for a value out of range. */
size_t sinter_dtype_size(sinter_dtype t);

#define SINTER_MAX_RANK 8

/* A host tensor. In descriptions of a model's inputs and outputs, a symbolic
 * dim is -1 and data is NULL. */
typedef struct sinter_tensor {
	const char *name;
	sinter_dtype dtype;
	int32_t rank;
	int64_t shape[SINTER_MAX_RANK];
	void *data;
	size_t nbytes;
} sinter_tensor;

/* Frees n tensors, their data and names, and the array. */
void sinter_tensors_free(sinter_tensor *ts, size_t n);
/* Frees a string or array the library handed over ("free with sinter_free"). */
void sinter_free(void *p);

/* ---- devices ---- */
typedef enum sinter_device {
	SINTER_DEVICE_DEFAULT, /* compiling: cuda; loading a package: the package's own */
	SINTER_DEVICE_CUDA,    /* the present NVIDIA GPU (kernels through NVRTC, products
				* through cuBLASLt) */
	SINTER_DEVICE_CPU,     /* the host CPU: fused groups JIT-compiled with LLVM, products
				* and convolutions through OpenBLAS, other steps on the
				* reference interpreter (docs/DESIGN.md, The cpu device) */
	SINTER_DEVICE_REF,     /* the reference interpreter on the model as written (no
				* passes; the model must outlive the handle): a compiled
				* handle that keeps state across runs (docs/DESIGN.md, State) */
} sinter_device;
/* "cuda", "cpu", "ref" ("default" for SINTER_DEVICE_DEFAULT, "?" out of range). */
const char *sinter_device_name(sinter_device d);
/* SINTER_OK when device d can be used here, SINTER_E_ENV (err says why)
 * when not (no GPU, or the device not built), SINTER_E_USAGE for
 * SINTER_DEVICE_DEFAULT or a value out of range. info[cap] (may be NULL)
 * receives a description of the device when it can be used (CUDA:
 * "NAME (sm_XX)"; cpu: the host CPU and its features), else the reason.
 * REF is always available. */
sinter_status sinter_device_available(sinter_device d, char *info, size_t cap, sinter_error *err);

/* ---- models ---- */
typedef struct sinter_shape_binding {
	const char *name; /* a symbol of the graph, e.g. "N" */
	int64_t value;
} sinter_shape_binding;

/* An input kept as state across runs, and the output that updates it
 * (docs/DESIGN.md, State): how an ONNX export (or any model) that takes
 * its cache as an input and returns the new one as an output declares
 * it, e.g. {"present.0.key", "past_key_values.0.key"}. */
typedef struct sinter_state_binding {
	const char *output; /* an output's name: the state's value for the next run */
	const char *input;  /* an input's name, of the output's dtype and shape */
} sinter_state_binding;

/* How a model is loaded. Initialize with sinter_load_options_init (it sets
 * size); zero fields are the defaults. */
typedef struct sinter_load_options {
	size_t size;                        /* sizeof(sinter_load_options) */
	const sinter_shape_binding *shapes; /* symbols bound at load time */
	size_t nshapes;
	const sinter_state_binding *states; /* inputs made states (a model without states of its own) */
	size_t nstates;
} sinter_load_options;
static inline void sinter_load_options_init(sinter_load_options *o)
{
	memset(o, 0, sizeof *o);
	o->size = sizeof *o;
}

typedef struct sinter_model sinter_model;

/* Reads, parses and verifies a .sir file, or imports a .onnx file (whose
 * initializers become the loaded weights). opt may be NULL.
 * Free the model with sinter_model_free. */
sinter_status sinter_model_load(const char *path, const sinter_load_options *opt, sinter_model **out,
				sinter_error *err);
/* The same from text in memory; name is used in messages and weights paths
 * are relative to the current directory. Free with sinter_model_free. */
sinter_status sinter_model_parse(const char *text, size_t len, const char *name, const sinter_load_options *opt,
				 sinter_model **out, sinter_error *err);
void sinter_model_free(sinter_model *m);

size_t sinter_model_num_inputs(const sinter_model *m);
size_t sinter_model_num_outputs(const sinter_model *m);
/* Describes input/output i (data NULL; name owned by the model). */
sinter_status sinter_model_input(const sinter_model *m, size_t i, sinter_tensor *desc, sinter_error *err);
sinter_status sinter_model_output(const sinter_model *m, size_t i, sinter_tensor *desc, sinter_error *err);

/* Reads every param from safetensors files, as checkpoints ship: each of
 * paths[0..n) a .safetensors file or a sharded checkpoint's index (a .json
 * such as model.safetensors.index.json, whose "weight_map" names each
 * key's shard beside it), read as one set of keys; n == 0: the file named
 * by the model's `weights` line (relative to the model's file). Tensors
 * are matched by key; a key in two files is SINTER_E_INPUT ("duplicate
 * key K in A and B"). prefix: a key prefix one side carries and the other
 * lacks ("transformer.", "model."): a param K reads prefix+K, or K less
 * prefix, or K; NULL guesses it when no param's key is in the files as it
 * is but all are under one prefix (said on stderr through the log); ""
 * matches keys as they are. Floats convert among floats with correct
 * rounding, integers among integers when the value fits; a missing key, a
 * shape mismatch, a conversion between float and integer or an integer
 * that does not fit is SINTER_E_INPUT; extra tensors are ignored. */
sinter_status sinter_model_load_weights(sinter_model *m, const char *const *paths, size_t n, const char *prefix,
					sinter_error *err);

/* Runs the model on the reference interpreter (plain C, fp64
 * accumulation): the oracle for every device. inputs are matched to the
 * graph's inputs by name (or by position when unnamed); weights must be
 * loaded. *outputs (n = num_outputs) is freed with sinter_tensors_free.
 * A model with state runs once from zeroed state (to keep state across
 * runs, compile it with device REF). */
sinter_status sinter_model_run_ref(sinter_model *m, const sinter_tensor *inputs, size_t ninputs,
				   sinter_tensor **outputs, sinter_error *err);

/* ---- compiling for a device ---- */
typedef enum sinter_precision {
	SINTER_PREC_FP32, /* as declared */
	SINTER_PREC_TF32, /* fp32 values; fp32 contractions may use TF32 tensor cores */
	SINTER_PREC_BF16, /* weights and activations bf16; accumulation and statistics fp32 */
	SINTER_PREC_FP16,
	SINTER_PREC_FP8,  /* bf16, with e4m3 matmul/linear weights (sm_89 and newer) */
} sinter_precision;
enum { SINTER_TUNE_AUTO, SINTER_TUNE_BAR, SINTER_TUNE_SUMMARY, SINTER_TUNE_JSON, SINTER_TUNE_QUIET };

/* Everything that decides how a model is compiled and run, in one struct;
 * the modes' meaning is decided by the library, not by its callers.
 * Initialize with sinter_compile_options_init (it sets size); zero fields
 * mean: mode "default", fp32, device cuda (the present GPU), the default
 * cache directory, plan cache on. */
typedef struct sinter_compile_options {
	size_t size;           /* sizeof(sinter_compile_options) */
	sinter_device device;  /* DEFAULT: cuda (a package: its own). cpu takes fp32 and bf16,
				* modes default and reduce-overhead (the same there), fully
				* shaped models; no run_device. REF takes no other option
				* and makes no package */
	const char *mode;      /* "default" (NULL): passes, heuristic kernel configs, caches;
				* "reduce-overhead": default + the plan captured once as a CUDA
				* graph and replayed; "max-autotune": reduce-overhead + each
				* tunable kernel's config and each matrix product's cuBLASLt
				* algorithm chosen by timing candidates on the GPU within a
				* budget, or taken from stored tuning records (docs/CACHE.md) */
	sinter_precision precision; /* fp32 contractions use TF32 under SINTER_PREC_TF32 */
	const char *passes;    /* NULL: the mode's pipeline; "": none (the model was optimized
				* already); else a comma list of passes */
	int target_sm;         /* 0: the present GPU's; else e.g. 90 (no GPU needed) */
	const char *dump_dir;  /* write every kernel's CUDA C source here; NULL: no */
	const char *cache_dir; /* kernel and plan caches; NULL: the default directory
				* ($SINTER_CACHE_DIR, $XDG_CACHE_HOME/sinter, ~/.cache/sinter); "": none */
	bool no_plan_cache;    /* compile afresh (the kernel cache still serves) */
	bool poison;           /* fill intermediates with NaN before each run (tests) */
	bool no_fusion;        /* one kernel or matrix product per IR node, as before fusion
				* (for comparison; DESIGN.md, Fusion) */
	int max_plans;         /* models with unbound symbols: plans kept loaded at once,
				* one per set of bound values (0: 8) */
	void (*warn)(void *ctx, const char *msg); /* cache corruption reports; NULL: stderr */
	void *warn_ctx;
	/* max-autotune only */
	double tune_budget_s;  /* seconds of tuning for the whole model (0: 20) */
	double tune_kernel_s;  /* seconds for one kernel's candidates (0: 2) */
	const char *cache_remote; /* tuning records also in Redis, "redis://HOST:PORT"; NULL:
				* $SINTER_CACHE_REMOTE when set; "": none */
	int tune_progress;     /* on stderr: SINTER_TUNE_AUTO (0: a bar on a terminal, else one
				* summary line), _BAR, _SUMMARY, _JSON (a JSON object per line), _QUIET */
	int threads;           /* cpu: worker threads (0: the cores this process may use). sinter's
				* own pool splits the work and OpenBLAS runs each call on one
				* thread: compiling for cpu sets OpenBLAS's thread count to 1 for
				* the whole process (openblas_set_num_threads), which an
				* application that also calls OpenBLAS will see */
} sinter_compile_options;
static inline void sinter_compile_options_init(sinter_compile_options *o)
{
	memset(o, 0, sizeof *o);
	o->size = sizeof *o;
}

/* What a compile did and how long it took. Initialize with
 * sinter_compile_stats_init (it sets size): the library fills the fields
 * size covers. */
typedef struct sinter_compile_stats {
	size_t size;           /* sizeof(sinter_compile_stats) */
	double passes_s, codegen_s, nvrtc_s, load_s, upload_s, plan_s; /* seconds; plan_s: plan
				* cache lookup and read (a hit) or write (a miss) */
	size_t kernels, unique_kernels, cache_hits, steps;
	size_t arena_bytes, weight_bytes; /* device memory: intermediates, weights */
	double context_s;      /* CUDA context creation */
	double key_s, blas_s, capture_s; /* plan-cache key; cuBLASLt handle and algorithms;
				* CUDA graph capture */
	bool plan_hit;         /* the plan came from the plan cache or a package */
	/* max-autotune: tunable kernels and products, how many a stored record
	 * decided, how many were timed now, candidates and timing runs, those
	 * scored out, records rejected; seconds; estimated speedup of the tuned
	 * steps over their defaults */
	size_t tune_kernels, tune_from_records, tune_tuned, tune_candidates, tune_timings, tune_failed,
		tune_rejected;
	double tune_s, tune_speedup;
	size_t ref_steps;      /* cpu: steps that run on the reference interpreter (fallback);
				* on cpu nvrtc_s is LLVM's -O3 and code generation (0 on an
				* object-cache hit), load_s ORC LLJIT's linking */
} sinter_compile_stats;
static inline void sinter_compile_stats_init(sinter_compile_stats *s)
{
	memset(s, 0, sizeof *s);
	s->size = sizeof *s;
}

/* A model compiled and loaded on a device. Free with sinter_compiled_free. */
typedef struct sinter_compiled sinter_compiled;

/* Compiles m for o->device (o may be NULL: the defaults) and loads it,
 * weights uploaded (they must be loaded in m first: file weights are read
 * only on a plan-cache miss). The passes o asks for run on a copy: m is
 * not changed. The plan comes from the plan cache when it holds it (no
 * passes, rendering, NVRTC or cuBLASLt heuristic then); else it is built
 * and stored there. On cuda, a model with unbound symbols (a symbolic
 * batch) compiles lazily: each run binds them from its inputs' shapes and
 * uses the plan for those values, built (or read from the plan cache) on
 * first use and kept loaded, up to o->max_plans at once; m must come from
 * a file (sinter_model_load). stats (may be NULL) is filled.
 * Free with sinter_compiled_free. */
sinter_status sinter_model_compile(const sinter_model *m, const sinter_compile_options *o, sinter_compiled **out,
				   sinter_compile_stats *stats, sinter_error *err);
/* Compiles m ahead of time, loading nothing: on cuda, every kernel for sm
 * o->target_sm (90 when 0) with NVRTC, without a GPU; on cpu, the plan's
 * objects for this machine. The model must be fully shaped. When package
 * is not NULL, writes the plan, its kernels and the weight image (the
 * weights must be loaded) there as one file that runs where NVRTC (or
 * LLVM) is absent (sinter_package_load); a CUDA package's matrix products
 * pick their cuBLASLt algorithm when loaded. */
sinter_status sinter_model_compile_kernels(const sinter_model *m, const sinter_compile_options *o,
					   const char *package, sinter_compile_stats *stats, sinter_error *err);
/* Loads an AOT package (sinter compile -o FILE.sinterpkg): a CUDA one on
 * the present GPU, no NVRTC needed (a package for another arch is refused
 * naming both); a cpu one on the cpu device, its objects linked as they are
 * (no LLVM, no cache), refused (SINTER_E_ENV) on a CPU without the
 * features they were compiled for. o->device CPU with a CUDA package, or
 * CUDA with a cpu one, is SINTER_E_USAGE. o may be NULL (only device,
 * threads, poison and mode matter). Free with sinter_compiled_free. */
sinter_status sinter_package_load(const char *path, const sinter_compile_options *o, sinter_compiled **out,
				  sinter_compile_stats *stats, sinter_error *err);
void sinter_compiled_free(sinter_compiled *c);

/* The device a compiled model (or package) runs on: CUDA, CPU or REF. */
sinter_device sinter_compiled_device(const sinter_compiled *c);
/* Inputs and outputs of a compiled model (or package), as for a model's (a
 * symbolic dim of a lazily compiled model is -1). */
size_t sinter_compiled_num_inputs(const sinter_compiled *c);
size_t sinter_compiled_num_outputs(const sinter_compiled *c);
sinter_status sinter_compiled_input(const sinter_compiled *c, size_t i, sinter_tensor *desc, sinter_error *err);
sinter_status sinter_compiled_output(const sinter_compiled *c, size_t i, sinter_tensor *desc, sinter_error *err);

/* Runs on the device; inputs as for sinter_model_run_ref; *outputs (host)
 * is freed with sinter_tensors_free. */
sinter_status sinter_compiled_run(sinter_compiled *c, const sinter_tensor *inputs, size_t ninputs,
				  sinter_tensor **outputs, sinter_error *err);
/* Runs on device memory with no host copy (how the Python package runs
 * torch CUDA tensors): inputs[i].data and outputs[i].data are device
 * addresses (CUdeviceptr) on the compiled model's GPU, device 0's primary
 * context, nbytes how many bytes lie there; inputs are matched as for
 * sinter_compiled_run, outputs by position, and each must have exactly the
 * model's dtype and shape (for a lazily compiled model, those its inputs
 * bind). stream is a CUstream of that context (NULL: the legacy default
 * stream): the run starts after the work queued on it so far, and work
 * queued on it afterwards starts after the run (the outputs are written
 * then); the call does not wait for the device. Inputs and outputs may be
 * reused or freed in stream order. CUDA only. */
sinter_status sinter_compiled_run_device(sinter_compiled *c, const sinter_tensor *inputs, size_t ninputs,
					 const sinter_tensor *outputs, size_t noutputs, void *stream,
					 sinter_error *err);

/* ---- state ---- */
/* State (docs/DESIGN.md, State): a model's states (.sir `state %x: TYPE`
 * inputs with their `update`, or ONNX inputs named by --state OUT=IN) are
 * neither inputs nor outputs of a compiled model: it keeps one buffer per
 * state, zeroed when compiled, that each run reads and updates in place,
 * so runs accumulate (a KV cache grows) until reset. ref and cpu keep
 * state in host memory; cuda too for now (copied in and out by each run,
 * every symbol bound; no packages, no run_device). Not to be called while
 * a run of c is in progress on another thread.
 * state_read: a copy of every state (named, shaped), freed with
 * sinter_tensors_free. state_write: each tensor given replaces the state
 * of its name (dtype and shape must be the state's); the others stay.
 * state_reset: every state zeroed. */
sinter_status sinter_compiled_state_read(sinter_compiled *c, sinter_tensor **states, size_t *n, sinter_error *err);
sinter_status sinter_compiled_state_write(sinter_compiled *c, const sinter_tensor *states, size_t n,
					  sinter_error *err);
sinter_status sinter_compiled_state_reset(sinter_compiled *c, sinter_error *err);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
