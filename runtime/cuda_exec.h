/* cuda_exec.h: a compiled model on a CUDA device: its plan, loaded kernels,
 * cuBLASLt products, one arena sized by the memory planner, and weights
 * uploaded once. Prefix: rt_. */
#ifndef SINTER_RT_CUDA_EXEC_H
#define SINTER_RT_CUDA_EXEC_H

#include "codegen/cg.h"
#include "runtime/cuda.h"

typedef struct rt_build_opts {
	const char *cache_dir; /* kernel cache; NULL: none */
	const char *dump_dir;  /* write every kernel's source here; NULL: no */
	int nthreads;          /* NVRTC threads; 0: all cores */
	bool poison;           /* fill the arena with NaN bytes before each run */
	bool tf32;             /* fp32 contractions may use TF32 */
	bool graphs;           /* capture the plan once as a CUDA graph and replay it */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
} rt_build_opts;

typedef struct rt_times {
	double lower, nvrtc, load, upload; /* seconds */
	size_t kernels, unique, cache_hits;
	size_t arena_bytes, weight_bytes;
} rt_times;

typedef struct rt_model rt_model;

/* Lowers g (verified, fully shaped), compiles its kernels (kernel cache),
 * loads them, plans and allocates the arena and uploads params/consts.
 * vals: g->nnodes entries with params filled (as for ref_run). Free with
 * rt_model_free. */
int rt_model_build(rt_cuda *c, const ir_graph *g, const ir_tensor *vals, const rt_build_opts *o,
		   rt_model **out, rt_times *times, sn_err *e);
void rt_model_free(rt_model *m);

/* Runs once: copies inputs (g->ninputs, in order) in, launches every step on
 * the stream, copies outputs out into malloc'ed outs[0..noutputs). */
int rt_model_run(rt_model *m, const ir_tensor *inputs, ir_tensor *outs, sn_err *e);
/* Launches the plan n times with inputs already in place and returns the
 * per-call device times in ms (CUDA events), after `warmup` untimed calls. */
int rt_model_time(rt_model *m, int warmup, int n, double *ms, sn_err *e);

/* One step's share of a profile: device time summed over the profiled
 * calls (CUDA events around each step, launched one by one), and what the
 * step must move and compute, for achieved GB/s and TFLOP/s. */
typedef struct rt_prof {
	const char *name; /* kernel name, or "cublasLt" */
	const char *op;   /* the IR op */
	double ms;        /* per call */
	double bytes;     /* operands read once and the output written once */
	double flops;     /* contractions and convolutions; 0 otherwise */
} rt_prof;

/* Times every step of the plan separately over `iters` calls; prof gets
 * one entry per step (malloc'ed, *n of them; free with free()). */
int rt_model_profile(rt_model *m, int iters, rt_prof **prof, size_t *n, sn_err *e);

#endif
