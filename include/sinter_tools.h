/* sinter_tools.h: the rest of sinter's public C API, beside the core of
 * sinter.h: what tools such as the sinter command use. Model inspection
 * and printing, graph passes, random weights and inputs, tensor files,
 * benches and profiles, the caches and tuning records, logging, traces and
 * progress. The conventions, linking and thread rules are sinter.h's. */
#ifndef SINTER_TOOLS_H
#define SINTER_TOOLS_H

#include "sinter.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(default)
#endif

/* ---- models: inspection and printing ---- */
/* Writes the model as sir_path (a .sir) plus its weights beside it
 * (the same name with .safetensors; the .sir's weights line names it):
 * how `sinter import` turns an ONNX file into sinter IR. */
sinter_status sinter_model_save(const sinter_model *m, const char *sir_path, sinter_error *err);
/* The canonical text of the model into *text; free it with sinter_free. */
sinter_status sinter_model_print(const sinter_model *m, char **text, sinter_error *err);
/* The plan a compile of m (as it stands: no passes; its symbolic dims
 * bound) for device d would make, one line per step, into *text (free
 * with sinter_free). CUDA (or DEFAULT): the fusion groups for sm_<target_sm>
 * (90 when 0), no GPU needed. CPU: the steps and how many fall back to the
 * reference interpreter (m fully shaped; SINTER_E_ENV when the cpu device
 * is not built). Weights need not be loaded. */
sinter_status sinter_model_print_plan(const sinter_model *m, sinter_device d, int target_sm, char **text,
				      sinter_error *err);
/* The model's graph as Graphviz dot text (`dot -Tsvg`) into *text: one box
 * per node with its op, name and type, edges from operands. Free with
 * sinter_free. */
sinter_status sinter_model_print_dot(const sinter_model *m, char **text, sinter_error *err);
/* The structural hash (XXH3-128) as 32 lowercase hex digits plus NUL. */
void sinter_model_hash(const sinter_model *m, char hex[33]);
size_t sinter_model_num_nodes(const sinter_model *m);
/* Symbols left unbound (0 when the model is fully shaped); name of the i-th. */
size_t sinter_model_num_symbols(const sinter_model *m);
const char *sinter_model_symbol(const sinter_model *m, size_t i);
/* The symbol at dim `dim` of input i, or NULL when that dim is a number. */
const char *sinter_model_input_symbol(const sinter_model *m, size_t i, int dim);

/* ---- graph passes ---- */
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
/* The precision named by s ("fp32", "tf32", "bf16", "fp16", "fp8") into
 * *out; SINTER_E_USAGE for another name. */
sinter_status sinter_precision_parse(const char *s, sinter_precision *out, sinter_error *err);

/* ---- random weights and inputs ---- */
/* Fills every param deterministically from seed and the param's key, with
 * PyTorch-like default scales: conv/linear weights and biases uniform in
 * +-1/sqrt(fan_in), norm weights and running variances 1, norm biases and
 * running means 0, embedding tables N(0, 1). */
sinter_status sinter_model_init_random(sinter_model *m, uint64_t seed, sinter_error *err);
/* Random inputs for the model (floats N(0, 1); indices of a gather in
 * range; other integers in [0, 10)), none for an input with a default
 * (an ONNX graph input that has an initializer: a run that gives no
 * tensor for it takes the initializer, docs/ONNX.md). The model must be
 * fully shaped. The caller frees them with sinter_tensors_free. */
sinter_status sinter_model_random_inputs(const sinter_model *m, uint64_t seed, sinter_tensor **inputs, size_t *n,
					 sinter_error *err);
/* Random tensors shaped as the descriptions descs[0..n) (floats N(0, 1),
 * integers in [0, 10), bools 0 or 1), named alike. Free with
 * sinter_tensors_free. */
sinter_status sinter_tensors_random(const sinter_tensor *descs, size_t n, uint64_t seed, sinter_tensor **out,
				    sinter_error *err);

/* ---- tensor files ---- */
/* Reads every tensor of a .safetensors file (F64 is converted to F32), or
 * of NumPy's .npz (named as its entries) or .npy (one tensor, named "":
 * it matches an input by position); NumPy's float64 becomes f32, int16 and
 * uint16 i32, uint32 i64; Fortran-ordered and big-endian arrays are
 * reordered. Free with sinter_tensors_free. */
sinter_status sinter_tensors_read(const char *path, sinter_tensor **ts, size_t *n, sinter_error *err);
/* Writes tensors to a .safetensors file, atomically (a unique temp file in
 * the same folder, fsync, rename: a failure leaves the old file); or, by
 * extension, a .npz (np.savez's layout, one NAME.npy per tensor) or a .npy
 * (exactly one tensor). NumPy has no bf16 or fp8: they are written as
 * float32, exactly. */
sinter_status sinter_tensors_write(const char *path, const sinter_tensor *ts, size_t n, sinter_error *err);
/* Checks, before any work, that path can be written as an output: it is
 * not a directory, its folder exists and is writable, and it is not the
 * same file (device and inode) as m's source file, the weights file m's
 * weights line names, or any of the n paths in inputs (NULL entries are
 * skipped). m may be NULL. SINTER_E_INPUT for a path that cannot work as
 * given, SINTER_E_ENV for a folder that refuses writes. */
sinter_status sinter_output_check(const sinter_model *m, const char *path, const char *const *inputs, size_t n,
				  sinter_error *err);
/* Removes the temp file of every write in progress in this process (an
 * output, a package, a cache entry: ".NAME.tmp-..." beside NAME), which
 * an interrupted process would leave behind. Async-signal-safe (unlink
 * only): for a SIGINT or SIGTERM handler that then re-raises the signal,
 * as the sinter command's does. A write whose temp file it removed fails
 * or writes nothing. */
void sinter_temp_files_remove(void);

/* ---- benches and profiles ---- */
/* Device time of `iters` calls (CUDA events; on cpu, wall time) after
 * `warmup` calls, with the inputs of the last run in place: ms[0..iters). */
sinter_status sinter_compiled_bench(sinter_compiled *c, int warmup, int iters, double *ms, sinter_error *err);
/* A per-step profile over `iters` calls: on cuda each step of the plan
 * launched and timed alone (CUDA events); on cpu each step timed where it
 * runs. Entries are per step, in plan order; free the array with
 * sinter_free. */
typedef struct sinter_profile_entry {
	const char *kernel; /* kernel name, or "cublasLt"; owned by c */
	const char *op;     /* the IR op it computes */
	double ms;          /* device time per call */
	double bytes;       /* operands read once, output written once */
	double flops;       /* for contractions and convolutions, else 0 */
} sinter_profile_entry;
sinter_status sinter_compiled_profile(sinter_compiled *c, int iters, sinter_profile_entry **entries, size_t *n,
				      sinter_error *err);

/* ---- caches ---- */
/* The default cache directory into out[cap]. */
sinter_status sinter_cache_dir(char *out, size_t cap, sinter_error *err);
/* Entries and bytes of the kernel cache in dir (NULL: the default). */
sinter_status sinter_cache_kernel_stats(const char *dir, size_t *entries, uint64_t *bytes, sinter_error *err);
/* Entries and bytes of the plan cache in dir (NULL: the default). */
sinter_status sinter_cache_plan_stats(const char *dir, size_t *entries, uint64_t *bytes, sinter_error *err);
/* Deletes the kernel cache's and the plan cache's entries; *removed counts them. */
sinter_status sinter_cache_clear(const char *dir, size_t *removed, sinter_error *err);
/* Why a compile of m with o would or would not hit the caches, as text
 * (free with sinter_free): the plan entry (hit, or the nearest stored plan
 * and each key component that differs: options, device, versions, weights,
 * model, shapes, tuning records), max-autotune's records, and how many of
 * the plan's kernels the kernel cache holds. On cuda it needs the GPU (its
 * name and versions are part of the key); on cpu (o->device CPU) no GPU.
 * m's weights as for sinter_model_compile. */
sinter_status sinter_cache_explain(const sinter_model *m, const sinter_compile_options *o, char **report,
				   sinter_error *err);
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

/* ---- logging, progress, traces ---- */
/* Log levels: warnings by default; $SINTER_LOG (quiet|warn|info|debug)
 * sets the level a process starts with. info: compile stages with their
 * times, plan-cache and kernel-cache results with reasons; debug: every
 * kernel's cache lookup, per-pass detail. */
typedef enum sinter_log_level {
	SINTER_LOG_QUIET, SINTER_LOG_WARN, SINTER_LOG_INFO, SINTER_LOG_DEBUG,
} sinter_log_level;
/* Process-wide; any thread. */
void sinter_log_set_level(sinter_log_level level);
/* Where messages go (one line each, no newline): fn, or NULL for stderr
 * ("sinter: info: ..."). fn may be called from any thread, one call at a
 * time. */
void sinter_log_set_handler(void (*fn)(void *ctx, sinter_log_level level, const char *msg), void *ctx);
sinter_log_level sinter_log_get_level(void);
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

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
