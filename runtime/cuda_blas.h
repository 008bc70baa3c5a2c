/* cuda_blas.h: cuBLASLt, loaded at run time with dlopen, runs the plan's
 * cg_mm steps (codegen/cg.h): row-major out = A @ op(B) [+ bias] [act],
 * batched with element strides (0 broadcasts). Prefix: rt_. */
#ifndef SINTER_RT_CUDA_BLAS_H
#define SINTER_RT_CUDA_BLAS_H

#include "codegen/cg.h"
#include "runtime/cuda.h"

/* Operands handed to rt_gemm_run must be aligned to this many bytes (the
 * executor's arena aligns every buffer to it); cuBLASLt's fastest kernels
 * assume it, and algorithms are chosen for it in rt_gemm_prepare. */
#define RT_GEMM_ALIGN 256
/* The workspace rt_blas_open allocates on the device, shared by every
 * product run through the handle (so products on one handle run in
 * stream order, never concurrently). */
#define RT_BLAS_WORKSPACE ((size_t)32 << 20)

typedef struct rt_blas rt_blas;
typedef struct rt_gemm rt_gemm;

/* Loads cuBLASLt (libcublasLt.so.13, .12, then /usr/local/cuda/lib64),
 * creates a handle in c's context (current on the calling thread) and
 * allocates the workspace. SN_EENV with the reason when cuBLASLt is
 * missing or fails to start. Close with rt_blas_close (before c). */
int rt_blas_open(rt_cuda *c, rt_blas **out, sn_err *e);
void rt_blas_close(rt_blas *b);
/* cublasLtGetVersion(): 10000 * major + 100 * minor + patch. */
int rt_blas_version(const rt_blas *b);
/* The same without a handle (0 when cuBLASLt cannot be loaded). */
int rt_blas_lib_version(void);


/* Describes g for cuBLASLt (f32 with f32 compute, on TF32 tensor cores
 * when g->tf32; f16 and bf16 with f32 accumulation; the epilogue for
 * bias/relu/gelu) and picks an algorithm with
 * cublasLtMatmulAlgoGetHeuristic for RT_GEMM_ALIGN-aligned operands, unless
 * g->algo records one that cublasLtMatmulAlgoCheck accepts (no heuristic
 * then: a warm start). *chosen (may be NULL) receives the algorithm used,
 * as data for the plan. CG_ACT_GELU is cuBLASLt's GELU, the tanh approximation.
 * SN_EINPUT for a dtype or size cuBLASLt cannot take, SN_EINTERNAL when no
 * algorithm fits. Free with rt_gemm_free (before closing b). */
int rt_gemm_prepare(rt_blas *b, const cg_mm *g, rt_gemm **out, cg_blas_algo *chosen, sn_err *e);
/* Enqueues the product on stream s: out = a @ op(bm) [+ bias] [act]; bias
 * is ignored (may be 0) when g->bias was CG_NO_BUF. Sets the bias pointer
 * in gm's descriptor, so one gm is not run from two threads at once. */
/* rt_gemm_run_c: the same with C (g->c; 0 when it has none). */
int rt_gemm_run_c(rt_blas *b, rt_gemm *gm, CUdeviceptr a, CUdeviceptr bm, CUdeviceptr bias, CUdeviceptr c,
		  CUdeviceptr out, CUstream s, sn_err *e);
int rt_gemm_run(rt_blas *b, rt_gemm *gm, CUdeviceptr a, CUdeviceptr bm, CUdeviceptr bias, CUdeviceptr out,
		CUstream s, sn_err *e);
void rt_gemm_free(rt_gemm *gm);

/* The autotuner's candidates for g: up to max algorithms from
 * cublasLtMatmulAlgoGetHeuristic, best first (out[0] is the one
 * rt_gemm_prepare picks without a recorded algorithm), each as data that
 * fits the workspace; *n of them. Run one by setting it as g->algo. */
int rt_gemm_candidates(rt_blas *b, const cg_mm *g, cg_blas_algo *out, int max, int *n, sn_err *e);


#endif
