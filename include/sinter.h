/* sinter.h: the public C API of sinter, a graph compiler for neural networks.
 *
 * Handles are opaque. Every function that can fail returns a sinter_status
 * and, when err is not NULL, fills it with a message (with file:line:col and
 * the source line where there is a source). The library never exits or
 * aborts on bad input. Strings and arrays handed to the caller say who frees
 * them. The sinter command (cli/) uses nothing but this header. */
#ifndef SINTER_H
#define SINTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
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

typedef struct sinter_options {
	const sinter_shape_binding *shapes; /* symbols bound at load time */
	size_t nshapes;
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
/* Reads every param from a .safetensors file: path, or when NULL the file
 * named by the model's `weights` line (relative to the model's file).
 * Tensors are matched by key; floats convert to the param's dtype with
 * correct rounding; a missing key or a shape mismatch is SINTER_E_INPUT;
 * extra tensors in the file are ignored. */
sinter_status sinter_model_load_weights(sinter_model *m, const char *path, sinter_error *err);
/* Fills every param deterministically from seed and the param's key, with
 * PyTorch-like default scales: conv/linear weights and biases uniform in
 * +-1/sqrt(fan_in), norm weights and running variances 1, norm biases and
 * running means 0, embedding tables N(0, 1). */
sinter_status sinter_model_init_random(sinter_model *m, uint64_t seed, sinter_error *err);

/* ---- running ---- */
/* Random inputs for the model (floats N(0, 1); indices of a gather in
 * range; other integers in [0, 10)). The model must be fully shaped.
 * The caller frees them with sinter_tensors_free. */
sinter_status sinter_random_inputs(const sinter_model *m, uint64_t seed,
				   sinter_tensor **inputs, size_t *n, sinter_error *err);
/* Runs the model on the reference interpreter (plain C, fp64
 * accumulation): the oracle for every backend. inputs are matched to the
 * graph's inputs by name (or by position when unnamed); weights must be
 * loaded. *outputs (n = num_outputs) is freed with sinter_tensors_free. */
sinter_status sinter_run_ref(sinter_model *m, const sinter_tensor *inputs, size_t ninputs,
			     sinter_tensor **outputs, sinter_error *err);

/* ---- compiling for a device ---- */
/* Whether a CUDA device can be used; when not, why (into why[cap]). */
bool sinter_cuda_available(char *why, size_t cap);

typedef struct sinter_compile_options {
	int target_sm;         /* 0: the present GPU's; else e.g. 90 (no GPU needed) */
	const char *dump_dir;  /* write every kernel's CUDA C source here; NULL: no */
	const char *cache_dir; /* kernel cache; NULL: the default directory
				* ($SINTER_CACHE_DIR, $XDG_CACHE_HOME/sinter, ~/.cache/sinter); "": none */
	bool poison;           /* fill intermediates with NaN before each run (tests) */
	bool tf32;             /* fp32 contractions may use TF32 tensor cores */
	bool cuda_graphs;      /* reduce-overhead: capture the plan once as a CUDA graph, replay it */
	void (*warn)(void *ctx, const char *msg); /* cache corruption reports; NULL: stderr */
	void *warn_ctx;
} sinter_compile_options;

typedef struct sinter_compile_stats {
	double codegen_s, nvrtc_s, load_s, upload_s; /* seconds */
	size_t kernels, unique_kernels, cache_hits, steps;
	size_t arena_bytes, weight_bytes; /* device memory: intermediates, weights */
} sinter_compile_stats;

/* Renders and compiles every kernel of the model for sm o->target_sm with
 * NVRTC, without a GPU (nothing is loaded). The model must be fully shaped. */
sinter_status sinter_compile_kernels(const sinter_model *m, const sinter_compile_options *o,
				     sinter_compile_stats *stats, sinter_error *err);

/* A model compiled and loaded on the CUDA device, weights uploaded (they
 * must be loaded in m first). Free with sinter_compiled_free. */
typedef struct sinter_compiled sinter_compiled;
sinter_status sinter_compile(const sinter_model *m, const sinter_compile_options *o,
			     sinter_compiled **out, sinter_compile_stats *stats, sinter_error *err);
void sinter_compiled_free(sinter_compiled *c);
/* Runs on the device; inputs as for sinter_run_ref; *outputs (host) is
 * freed with sinter_tensors_free. */
sinter_status sinter_compiled_run(sinter_compiled *c, const sinter_tensor *inputs, size_t ninputs,
				  sinter_tensor **outputs, sinter_error *err);
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
/* Deletes the kernel cache's entries; *removed counts them. */
sinter_status sinter_cache_clear(const char *dir, size_t *removed, sinter_error *err);
/* The default cache directory into out[cap]. */
sinter_status sinter_cache_dir(char *out, size_t cap, sinter_error *err);

/* ---- tensor files ---- */
/* Reads every tensor of a .safetensors file (F64 is converted to F32).
 * Free with sinter_tensors_free. */
sinter_status sinter_tensors_read(const char *path, sinter_tensor **ts, size_t *n, sinter_error *err);
/* Writes tensors to a .safetensors file, atomically. */
sinter_status sinter_tensors_write(const char *path, const sinter_tensor *ts, size_t n, sinter_error *err);
/* Frees n tensors, their data and names, and the array. */
void sinter_tensors_free(sinter_tensor *ts, size_t n);

void sinter_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
