/* cuda_exec.h: a plan (codegen/cg.h) loaded on a CUDA device: its kernels
 * loaded from their cubins, its matrix products prepared for cuBLASLt, one
 * arena, the inputs at static addresses, and the weight image uploaded in
 * one copy. The runtime holds no IR and calls no codegen or passes: it only
 * loads and runs plans. Prefix: rt_. */
#ifndef SINTER_RT_CUDA_EXEC_H
#define SINTER_RT_CUDA_EXEC_H

#include "codegen/cg.h"
#include "runtime/cuda.h"

typedef struct rt_load_opts {
	bool poison; /* fill the arena with NaN bytes before each run */
	bool graphs; /* capture the plan once as a CUDA graph and replay it */
	CUdeviceptr weights; /* nonzero: the plan's weight image is already there
			      * (rt_weights_upload; shared by plans of one model at
			      * several batch sizes): not uploaded, not freed */
} rt_load_opts;

/* Uploads plan p's weight image into new device memory at *out (0 when the
 * image is empty). Free with rt_weights_free. */
int rt_weights_upload(rt_cuda *c, const cg_plan *p, CUdeviceptr *out, sn_err *e);
void rt_weights_free(rt_cuda *c, CUdeviceptr w);

typedef struct rt_times {
	double load, upload, blas, capture; /* seconds: modules, weights and arena, cuBLASLt, graph */
} rt_times;

typedef struct rt_model rt_model;

/* Loads plan p on c: every kernel from its cubin (p->kerns[i].cubin must be
 * set), the arena, input buffers, the weight image (one copy), and each
 * matrix product's cuBLASLt algorithm: the one the plan records when
 * cuBLASLt accepts it, else the heuristic's, written back into p's step
 * (so the caller can store the plan with its choices). p must outlive the
 * model; its host weight image may be freed once this returns. Free with
 * rt_model_free. */
int rt_model_load(rt_cuda *c, cg_plan *p, const rt_load_opts *o, rt_model **out, rt_times *times, sn_err *e);
void rt_model_free(rt_model *m);

/* Runs once: copies inputs[i] (p->inputs[i]'s bytes each) in, launches
 * every step on the stream, copies each output into outputs[i] (caller's
 * memory, p->outputs[i]'s bytes). */
int rt_model_run(rt_model *m, const void *const *inputs, void *const *outputs, sn_err *e);
/* Runs once on device memory, asynchronously: after the work queued on
 * `user` (a stream of the same context; 0: the legacy default stream),
 * copies inputs[i] into the plan's input buffers, launches every step and
 * copies each output into outputs[i], all on the device and on the model's
 * stream; work queued on `user` afterwards waits for it. Returns without
 * waiting for the device. */
int rt_model_run_device(rt_model *m, const CUdeviceptr *inputs, const CUdeviceptr *outputs, CUstream user,
			sn_err *e);
/* Launches the plan n times with inputs already in place and returns the
 * per-call device times in ms (CUDA events), after `warmup` untimed calls. */
int rt_model_time(rt_model *m, int warmup, int n, double *ms, sn_err *e);

/* One step's share of a profile: device time per call (CUDA events around
 * each step, launched one by one), and what the step must move and
 * compute, for achieved GB/s and TFLOP/s. */
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
