/* sinter.h: the public C API of sinter, a graph compiler for neural networks.
 *
 * Handles are opaque. Every function that can fail returns a sinter_status
 * and, when err is not NULL, fills it with a message (with file:line:col and
 * the source line where there is a source). The library never exits or
 * aborts on bad input. Strings and arrays handed to the caller say who frees
 * them. The sinter command (cli/) uses nothing but this header.
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
 *    function taking a `const sinter_model *`, and sinter_run_ref, may run
 *    concurrently on one model (weights read on first use are read once,
 *    under the model's lock). Functions taking a non-const model that
 *    change it (sinter_model_optimize, sinter_model_load_weights,
 *    sinter_model_init_random, sinter_model_free) need it to themselves.
 *  - A CUDA sinter_compiled is used by one thread at a time (it owns a
 *    CUDA stream, buffers and the last run's inputs); compile one per
 *    thread to run in parallel. A cpu one may be shared: its runs and
 *    benches from several threads take turns (a lock), each with its own
 *    right outputs; one per thread runs in parallel.
 *    sinter_compile_options and error structs belong to their caller.
 *  - sinter_version, sinter_dtype_*, sinter_precision_parse,
 *    sinter_cuda_available and the cache functions may be called from any
 *    thread at any time.
 * tests/unit/test_threads.c checks this under ThreadSanitizer
 * (-DSINTER_TSAN=ON). */
#ifndef SINTER_H
#define SINTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is exported from libsinter.so; the library is
 * built with hidden visibility otherwise. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(default)
#endif

/* Status codes; the CLI exits with the same numbers. */
typedef enum sinter_status {
	SINTER_OK = 0,
	SINTER_E_INPUT = 1,    /* bad input: malformed file, mismatched shapes, missing param */
	SINTER_E_USAGE = 2,    /* bad option or argument */
	SINTER_E_ENV = 3,      /* environment: no GPU, missing library, I/O failure */
	SINTER_E_INTERNAL = 4, /* a bug in sinter, or out of memory */
} sinter_status;

typedef struct sinter_error {
	sinter_status status;
	char message[4096];
} sinter_error;

/* Element types, in the IR's order. */
typedef enum sinter_dtype {
	SINTER_F32, SINTER_F16, SINTER_BF16, SINTER_F8E4M3, SINTER_F8E5M2,
	SINTER_I64, SINTER_I32, SINTER_I8, SINTER_U8, SINTER_BOOL,
} sinter_dtype;

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

const char *sinter_version(void);
const char *sinter_dtype_name(sinter_dtype t);
size_t sinter_dtype_size(sinter_dtype t);

/* ---- options ---- */
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

typedef struct sinter_options {
	const sinter_shape_binding *shapes; /* symbols bound at load time */
	size_t nshapes;
	const sinter_state_binding *states; /* inputs made states (a model without states of its own) */
	size_t nstates;
} sinter_options;

/* Zeroes o: no bindings. */
void sinter_options_init(sinter_options *o);

/* ---- models ---- */
typedef struct sinter_model sinter_model;

/* Reads, parses and verifies a .sir file, or imports a .onnx file (whose
 * initializers become the loaded weights). opt may be NULL.
 * Free the model with sinter_model_free. */
sinter_status sinter_model_load(const char *path, const sinter_options *opt,
				sinter_model **out, sinter_error *err);
/* The same from text in memory; name is used in messages and weights paths
 * are relative to the current directory. Free with sinter_model_free. */
sinter_status sinter_model_parse(const char *text, size_t len, const char *name,
				 const sinter_options *opt, sinter_model **out,
				 sinter_error *err);
void sinter_model_free(sinter_model *m);
/* Writes the model as sir_path (a .sir) plus its weights beside it
 * (the same name with .safetensors; the .sir's weights line names it):
 * how `sinter import` turns an ONNX file into sinter IR. */
sinter_status sinter_model_save(const sinter_model *m, const char *sir_path, sinter_error *err);

/* The canonical text of the model. The caller frees it with sinter_free. */
char *sinter_model_print(const sinter_model *m);
/* The fusion groups a CUDA compile for sm_<target_sm> would make of m (its
 * symbolic dims bound), one line per group; NULL with err set when they
 * cannot be made. Free with sinter_free. */
char *sinter_model_print_groups(const sinter_model *m, int target_sm, sinter_error *err);
/* The steps a cpu compile of m (as it stands: no passes) would run, one
 * line each, and how many of them fall back to the reference interpreter;
 * m must be fully shaped and its weights need not be loaded. NULL with
 * err set when the cpu device is not built or the plan cannot be made.
 * Free with sinter_free. */
char *sinter_model_print_cpu_plan(const sinter_model *m, sinter_error *err);
/* The structural hash (XXH3-128) as 32 lowercase hex digits plus NUL. */
void sinter_model_hash(const sinter_model *m, char hex[33]);
size_t sinter_model_num_nodes(const sinter_model *m);
/* Symbols left unbound (0 when the model is fully shaped); name of the i-th. */
size_t sinter_model_num_symbols(const sinter_model *m);
const char *sinter_model_symbol(const sinter_model *m, size_t i);

size_t sinter_model_num_inputs(const sinter_model *m);
size_t sinter_model_num_outputs(const sinter_model *m);
/* Describes input/output i (data NULL; name owned by the model). */
sinter_status sinter_model_input(const sinter_model *m, size_t i, sinter_tensor *desc);
sinter_status sinter_model_output(const sinter_model *m, size_t i, sinter_tensor *desc);

/* The symbol at dim `dim` of input i, or NULL when that dim is a number. */
const char *sinter_model_input_symbol(const sinter_model *m, size_t i, int dim);

/* ---- graph passes ---- */
typedef enum sinter_precision {
	SINTER_PREC_FP32, /* as declared */
	SINTER_PREC_TF32, /* fp32 values; fp32 contractions may use TF32 tensor cores */
	SINTER_PREC_BF16, /* weights and activations bf16; accumulation and statistics fp32 */
	SINTER_PREC_FP16,
	SINTER_PREC_FP8,  /* bf16, with e4m3 matmul/linear weights (sm_89 and newer) */
} sinter_precision;

/* Rewrites the model with graph passes: the comma list `passes`, or when
 * it is NULL the pipeline of `mode` ("default", "reduce-overhead",
 * "max-autotune"). With weights loaded, derived weights (folded batch
 * norms, channels-last kernels, converted dtypes) are computed in fp64 and
 * stored in the weights' dtype; without, only the graph changes (for
 * printing). target_sm: 0 when unknown (fp8 checks it). dump_dir (or NULL)
 * receives the IR after each pass. */
sinter_status sinter_model_optimize(sinter_model *m, const char *mode, const char *passes,
				    sinter_precision precision, int target_sm, const char *dump_dir,
				    sinter_error *err);
/* The precision named by s ("fp32", "tf32", "bf16", "fp16", "fp8"); -1 if none. */
int sinter_precision_parse(const char *s);

/* ---- weights ---- */
/* Reads every param from a .safetensors file (or a sharded checkpoint's
 * index, as below): path, or when NULL the file named by the model's
 * `weights` line (relative to the model's file). Tensors are matched by
 * key (a key prefix guessed as below); floats convert to a float param's
 * dtype with correct rounding, integers to an integer param's exactly; a
 * missing key, a shape mismatch or a conversion between float and integer
 * is SINTER_E_INPUT; extra tensors in the file are ignored. */
sinter_status sinter_model_load_weights(sinter_model *m, const char *path, sinter_error *err);
/* The same from several files read as one set of keys, as checkpoints
 * ship: each of paths[0..n) a .safetensors file or a sharded checkpoint's
 * index (a .json such as model.safetensors.index.json, whose "weight_map"
 * names each key's shard beside it). A key in two files is SINTER_E_INPUT
 * ("duplicate key K in A and B"). prefix: a key prefix one side carries
 * and the other lacks ("transformer.", "model."): a param K reads
 * prefix+K, or K less prefix, or K; NULL guesses it when no param's key is
 * in the files as it is but all are under one prefix (said on stderr
 * through the log); "" matches keys as they are. Floats convert among
 * floats, integers among integers when the value fits; a conversion
 * between the two, or an integer that does not fit, is SINTER_E_INPUT.
 * n == 0 is sinter_model_load_weights(m, NULL, err). */
sinter_status sinter_model_load_weights_files(sinter_model *m, const char *const *paths, size_t n,
					      const char *prefix, sinter_error *err);
/* Fills every param deterministically from seed and the param's key, with
 * PyTorch-like default scales: conv/linear weights and biases uniform in
 * +-1/sqrt(fan_in), norm weights and running variances 1, norm biases and
 * running means 0, embedding tables N(0, 1). */
sinter_status sinter_model_init_random(sinter_model *m, uint64_t seed, sinter_error *err);

/* ---- running ---- */
/* Random inputs for the model (floats N(0, 1); indices of a gather in
 * range; other integers in [0, 10)), none for an input with a default
 * (an ONNX graph input that has an initializer: a run that gives no
 * tensor for it takes the initializer, docs/ONNX.md). The model must be
 * fully shaped. The caller frees them with sinter_tensors_free. */
sinter_status sinter_random_inputs(const sinter_model *m, uint64_t seed,
				   sinter_tensor **inputs, size_t *n, sinter_error *err);
/* Random tensors shaped as the descriptions descs[0..n) (floats N(0, 1),
 * integers in [0, 10), bools 0 or 1), named alike. Free with
 * sinter_tensors_free. */
sinter_status sinter_random_tensors(const sinter_tensor *descs, size_t n, uint64_t seed, sinter_tensor **out,
				    sinter_error *err);
/* Runs the model on the reference interpreter (plain C, fp64
 * accumulation): the oracle for every backend. inputs are matched to the
 * graph's inputs by name (or by position when unnamed); weights must be
 * loaded. *outputs (n = num_outputs) is freed with sinter_tensors_free.
 * A model with state runs once from zeroed state (to keep state across
 * runs, compile it with device "ref"). */
sinter_status sinter_run_ref(sinter_model *m, const sinter_tensor *inputs, size_t ninputs,
			     sinter_tensor **outputs, sinter_error *err);

/* ---- compiling for a device ---- */
/* Whether a CUDA device can be used; when not, why (into why[cap]). */
bool sinter_cuda_available(char *why, size_t cap);
/* Whether this build has the cpu device (LLVM 16 and OpenBLAS found when
 * it was built); into why[cap]: the host CPU, or why not. */
bool sinter_cpu_available(char *why, size_t cap);

/* Everything that decides how a model is compiled and run, in one struct;
 * the modes' meaning is decided by the library, not by its callers.
 * Zeroed (sinter_compile_options_init) means: mode "default", fp32, the
 * present GPU, the default cache directory, plan cache on. */
typedef struct sinter_compile_options {
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
	const char *device;    /* "cuda" (NULL), "ref" (the reference interpreter on the model as
				* written, no passes; the model must outlive the handle) or
				* "cpu": fused groups JIT-compiled with LLVM for
				* the host CPU, products and convolutions through OpenBLAS, other
				* steps on the reference interpreter (docs/DESIGN.md, The cpu device).
				* cpu takes fp32, modes default and reduce-overhead (the same there),
				* fully shaped models; no packages, no run_device, no profile */
	int threads;           /* cpu: worker threads (0: the cores this process may use). sinter's
				* own pool splits the work and OpenBLAS runs each call on one
				* thread: compiling for cpu sets OpenBLAS's thread count to 1 for
				* the whole process (openblas_set_num_threads), which an
				* application that also calls OpenBLAS will see */
} sinter_compile_options;
enum { SINTER_TUNE_AUTO, SINTER_TUNE_BAR, SINTER_TUNE_SUMMARY, SINTER_TUNE_JSON, SINTER_TUNE_QUIET };

/* Zeroes o: the defaults above. */
void sinter_compile_options_init(sinter_compile_options *o);

typedef struct sinter_compile_stats {
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

/* Runs the passes o asks for on a copy of m, then renders and compiles every
 * kernel of the model for sm o->target_sm (90 when 0) with NVRTC, without a
 * GPU (nothing is loaded). The model must be fully shaped. When package is
 * not NULL, writes the plan, its cubins and the weight image (the weights
 * must be loaded) there as one file that runs where NVRTC is absent
 * (sinter_load_package); its matrix products pick their cuBLASLt algorithm
 * when loaded. */
sinter_status sinter_compile_kernels(const sinter_model *m, const sinter_compile_options *o,
				     const char *package, sinter_compile_stats *stats, sinter_error *err);

/* A model compiled and loaded on the CUDA device, weights uploaded (they
 * must be loaded in m first: file weights are read only on a plan-cache
 * miss). The passes o asks for run on a copy: m is not changed. The plan
 * comes from the plan cache when it holds it (no passes, rendering, NVRTC
 * or cuBLASLt heuristic then); else it is built and stored there.
 * A model with unbound symbols (a symbolic batch) compiles lazily: each
 * run binds them from its inputs' shapes and uses the plan for those
 * values, built (or read from the plan cache) on first use and kept loaded,
 * up to o->max_plans at once; m must come from a file (sinter_model_load).
 * Free with sinter_compiled_free. */
typedef struct sinter_compiled sinter_compiled;
sinter_status sinter_compile(const sinter_model *m, const sinter_compile_options *o,
			     sinter_compiled **out, sinter_compile_stats *stats, sinter_error *err);
/* Loads an AOT package (sinter compile -o FILE.sinterpkg) on the present
 * GPU: no NVRTC needed. A package for another arch is refused naming both.
 * A cpu package (compiled with device "cpu") loads on the cpu device: its
 * objects are linked as they are (no LLVM, no cache), refused (exit
 * category 3) on a CPU without the features they were compiled for.
 * o->device "cpu" with a CUDA package, or "cuda" with a cpu one, is
 * SINTER_E_USAGE. o may be NULL (only device, threads, poison and mode
 * matter). Free with sinter_compiled_free. */
sinter_status sinter_load_package(const char *path, const sinter_compile_options *o,
				  sinter_compiled **out, sinter_compile_stats *stats, sinter_error *err);
/* The device a compiled model (or package) runs on: "cuda", "cpu" or "ref". */
const char *sinter_compiled_device(const sinter_compiled *c);
/* Inputs and outputs of a compiled model (or package), as for a model's. */
size_t sinter_compiled_num_inputs(const sinter_compiled *c);
size_t sinter_compiled_num_outputs(const sinter_compiled *c);
sinter_status sinter_compiled_input(const sinter_compiled *c, size_t i, sinter_tensor *desc);
void sinter_compiled_free(sinter_compiled *c);
/* Runs on the device; inputs as for sinter_run_ref; *outputs (host) is
 * freed with sinter_tensors_free. */
sinter_status sinter_compiled_run(sinter_compiled *c, const sinter_tensor *inputs, size_t ninputs,
				  sinter_tensor **outputs, sinter_error *err);
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
/* Output i of a compiled model: its name, dtype and shape (a symbolic dim
 * of a lazily compiled model is -1). */
sinter_status sinter_compiled_output(const sinter_compiled *c, size_t i, sinter_tensor *desc);
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
 * reused or freed in stream order. */
sinter_status sinter_compiled_run_device(sinter_compiled *c, const sinter_tensor *inputs, size_t ninputs,
					 const sinter_tensor *outputs, size_t noutputs, void *stream,
					 sinter_error *err);
/* Device time of `iters` calls (CUDA events) after `warmup` calls, with the
 * inputs of the last run in place: ms[0..iters). */
sinter_status sinter_compiled_bench(sinter_compiled *c, int warmup, int iters, double *ms,
				    sinter_error *err);

/* A per-step profile: each step of the plan launched and timed alone
 * (CUDA events) over `iters` calls. Entries are per step, in plan order;
 * free the array with sinter_free. */
typedef struct sinter_profile_entry {
	const char *kernel; /* kernel name, or "cublasLt"; owned by c */
	const char *op;     /* the IR op it computes */
	double ms;          /* device time per call */
	double bytes;       /* operands read once, output written once */
	double flops;       /* for contractions and convolutions, else 0 */
} sinter_profile_entry;
sinter_status sinter_compiled_profile(sinter_compiled *c, int iters, sinter_profile_entry **entries,
				      size_t *n, sinter_error *err);

/* ---- caches ---- */
/* Entries and bytes of the kernel cache in dir (NULL: the default). */
sinter_status sinter_cache_stats(const char *dir, size_t *entries, uint64_t *bytes, sinter_error *err);
/* Entries and bytes of the plan cache in dir (NULL: the default). */
sinter_status sinter_plan_cache_stats(const char *dir, size_t *entries, uint64_t *bytes, sinter_error *err);
/* Deletes the kernel cache's and the plan cache's entries; *removed counts them. */
sinter_status sinter_cache_clear(const char *dir, size_t *removed, sinter_error *err);
/* Tuning records (max-autotune's decisions; docs/CACHE.md) in dir's local
 * store (NULL: the default dir). stats: *valid records, *rejected entries
 * that fail a check. export: every valid record into a record file (*n).
 * import: a record file's valid records into the store, the faster winning
 * per kernel and device (*read, *written, *rejected lines). merge: a and b
 * into out, one record per kernel and device, the faster (*n, *rejected).
 * clear: deletes the records and the plan cache's tuning lists and key files. */
sinter_status sinter_tuning_stats(const char *dir, size_t *valid, size_t *rejected, sinter_error *err);
sinter_status sinter_tuning_export(const char *dir, const char *file, size_t *n, sinter_error *err);
sinter_status sinter_tuning_import(const char *dir, const char *file, size_t *read, size_t *written,
				   size_t *rejected, sinter_error *err);
sinter_status sinter_tuning_merge(const char *a, const char *b, const char *out, size_t *n, size_t *rejected,
				  sinter_error *err);
sinter_status sinter_tuning_clear(const char *dir, size_t *removed, sinter_error *err);
/* Why a compile of m with o would or would not hit the caches, as text
 * (free with sinter_free): the plan entry (hit, or the nearest stored plan
 * and each key component that differs: options, device, versions, weights,
 * model, shapes, tuning records), max-autotune's records, and how many of
 * the plan's kernels the kernel cache holds. Needs the GPU (its name and
 * versions are part of the key); m's weights as for sinter_compile. */
sinter_status sinter_cache_explain(const sinter_model *m, const sinter_compile_options *o, char **report,
				   sinter_error *err);
/* The default cache directory into out[cap]. */
sinter_status sinter_cache_dir(char *out, size_t cap, sinter_error *err);

/* ---- tensor files ---- */
/* Reads every tensor of a .safetensors file (F64 is converted to F32), or
 * of NumPy's .npz (named as its entries) or .npy (one tensor, named "":
 * it matches an input by position); NumPy's float64 becomes f32, int16 and
 * uint16 i32, uint32 i64; Fortran-ordered and big-endian arrays are
 * reordered. Free with sinter_tensors_free. */
sinter_status sinter_tensors_read(const char *path, sinter_tensor **ts, size_t *n, sinter_error *err);
/* Checks, before any work, that path can be written as an output: it is
 * not a directory, its folder exists and is writable, and it is not the
 * same file (device and inode) as m's source file, the weights file m's
 * weights line names, or any of the n paths in inputs (NULL entries are
 * skipped). m may be NULL. SINTER_E_INPUT for a path that cannot work as
 * given, SINTER_E_ENV for a folder that refuses writes. */
sinter_status sinter_output_check(const sinter_model *m, const char *path, const char *const *inputs,
				  size_t n, sinter_error *err);
/* Writes tensors to a .safetensors file, atomically (a unique temp file in
 * the same folder, fsync, rename: a failure leaves the old file); or, by
 * extension, a .npz (np.savez's layout, one NAME.npy per tensor) or a .npy
 * (exactly one tensor). NumPy has no bf16 or fp8: they are written as
 * float32, exactly. */
sinter_status sinter_tensors_write(const char *path, const sinter_tensor *ts, size_t n, sinter_error *err);
/* Frees n tensors, their data and names, and the array. */
void sinter_tensors_free(sinter_tensor *ts, size_t n);
/* Removes the temp file of every write in progress in this process (an
 * output, a package, a cache entry: ".NAME.tmp-..." beside NAME), which
 * an interrupted process would leave behind. Async-signal-safe (unlink
 * only): for a SIGINT or SIGTERM handler that then re-raises the signal,
 * as the sinter command's does. A write whose temp file it removed fails
 * or writes nothing. */
void sinter_remove_temp_files(void);

void sinter_free(void *p);

/* ---- logging, traces, graphs ---- */
/* Log levels: warnings by default; $SINTER_LOG (quiet|warn|info|debug)
 * sets the level a process starts with. info: compile stages with their
 * times, plan-cache and kernel-cache results with reasons; debug: every
 * kernel's cache lookup, per-pass detail. */
typedef enum sinter_log_level {
	SINTER_LOG_QUIET, SINTER_LOG_WARN, SINTER_LOG_INFO, SINTER_LOG_DEBUG,
} sinter_log_level;
/* Process-wide; any thread. */
void sinter_log_set_level(sinter_log_level level);
sinter_log_level sinter_log_get_level(void);
/* Where messages go (one line each, no newline): fn, or NULL for stderr
 * ("sinter: info: ..."). fn may be called from any thread, one call at a
 * time. */
void sinter_log_set_handler(void (*fn)(void *ctx, sinter_log_level level, const char *msg), void *ctx);
/* A progress line on stderr for work that lasts over two seconds (the
 * reference interpreter's nodes, NVRTC's kernels); off by default (the
 * sinter command turns it on when stderr is a terminal). */
void sinter_progress_enable(bool on);
/* Records a Chrome trace (JSON Object Format; Perfetto and chrome://tracing
 * open it) from now on: host spans of the compile stages, loads and runs
 * on one track per thread, and, on a device track, each step's device time
 * measured by sinter_compiled_profile (named "op kernel"). Process-wide. */
void sinter_trace_start(void);
/* Writes what was recorded since sinter_trace_start to path (atomically)
 * and stops recording. */
sinter_status sinter_trace_write(const char *path, sinter_error *err);
/* The model's graph as Graphviz dot text (`dot -Tsvg`): one box per node
 * with its op, name and type, edges from operands. Free with sinter_free;
 * NULL when out of memory. */
char *sinter_model_dot(const sinter_model *m);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
