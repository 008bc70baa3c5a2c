/* cg.h: codegen. Turns a verified, fully shaped IR graph into a launch plan:
 * a list of steps, each a generated CUDA C kernel, a cuBLASLt matrix
 * product, or an alias (a view that moves no data). codegen never calls the
 * driver; runtime/ executes plans. Prefix: cg_. */
#ifndef SINTER_CG_H
#define SINTER_CG_H

#include "ir/ir.h"

#define CG_MAX_BUFS 8

/* A generated kernel. Its source is self-contained CUDA C (no #include:
 * f16/bf16/fp8 go through inline PTX or bit operations), one
 * `extern "C" __global__` function named `name`, preceded by a comment that
 * states the spec. Shapes are compile-time constants in the source. The
 * kernel's parameters are device pointers to the buffers of bufs[0..nbufs),
 * in that order: the node's operands as the renderer needs them, then the
 * node's own output buffer. The name is derived from the source's content,
 * so identical kernels have identical names and sources (compiled once). */
typedef struct cg_kernel {
	char name[64];
	char *src; /* malloc'ed */
	unsigned grid[3], block[3];
	unsigned smem; /* dynamic shared memory bytes */
	uint32_t nbufs;
	ir_ref bufs[CG_MAX_BUFS];
} cg_kernel;

/* A matrix product for cuBLASLt, in row-major terms:
 * out[b] (m x n) = A[b] (m x k) @ op(B[b]) (k x n) [+ bias (n)] [then act]
 * where op(B) = B^T when trans_b (B stored n x k, as linear's weight), and
 * batch b of A/B/out starts at b * stride_{a,b,c} elements (a stride of 0
 * broadcasts). All operands are contiguous row-major. */
typedef enum cg_act { CG_ACT_NONE, CG_ACT_RELU, CG_ACT_GELU } cg_act;
typedef struct cg_gemm {
	ir_ref a, b, bias, out; /* bias: IR_NONE when absent */
	int64_t batch, m, n, k;
	int64_t stride_a, stride_b, stride_c;
	bool trans_b;
	ir_dtype dtype; /* of A, B, bias and out */
	cg_act act;
	bool tf32; /* f32 only: cuBLASLt may round operands to TF32 (CUBLAS_COMPUTE_32F_FAST_TF32) */
} cg_gemm;

typedef enum cg_step_kind {
	CG_STEP_KERNEL,
	CG_STEP_GEMM,
	CG_STEP_ALIAS, /* the node's buffer is its operand 0's buffer (a view) */
} cg_step_kind;

typedef struct cg_step {
	cg_step_kind kind;
	ir_ref node; /* the IR node this step computes */
	cg_kernel k; /* CG_STEP_KERNEL */
	cg_gemm g;   /* CG_STEP_GEMM */
} cg_step;

typedef struct cg_plan {
	cg_step *steps;
	uint32_t nsteps;
} cg_plan;

typedef struct cg_target {
	int sm;    /* 80, 90, ...: the arch the sources are written for */
	bool tf32; /* fp32 contractions may use TF32 (--precision tf32) */
} cg_target;

/* Lowers every non-source node of g (which must be verified and have no
 * symbols) to steps, in graph order. Free the plan with cg_plan_free. An
 * op the CUDA backend cannot handle is SN_EINPUT naming the op and node. */
int cg_lower(const ir_graph *g, const cg_target *t, cg_plan **out, sn_err *e);
void cg_plan_free(cg_plan *p);

/* Whether node n is a view of its operand 0 (reshape, flatten, squeeze,
 * unsqueeze): the memory planner lets it share that buffer. */
bool cg_is_alias(const ir_graph *g, const ir_node *n);

/* ---- renderer helpers shared by codegen/cg_*.c ---- */
/* CUDA C type used to store dtype t in memory ("float", "unsigned short"
 * for f16/bf16, "unsigned char" for fp8/bool/u8, ...). */
const char *cg_ctype(ir_dtype t);
/* Appends CUDA C device functions that load/store dtype t as float
 * (ld_<dtype>(const T*, long), st_<dtype>(T*, long, float)), once per
 * source: call for each dtype the kernel uses. */
void cg_emit_dtype_helpers(sn_buf *b, ir_dtype t);
/* Appends the comment that opens every kernel: the op, dtypes, shapes and
 * attributes of node r, and the renderer's config text. It names no value,
 * so identical specs give identical sources. */
void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config);
/* Finishes a kernel: names it from a hash of its source (prefix + "_" +
 * 12 hex digits; the source must spell the name as the placeholder
 * CG_NAME, which is replaced), sets src (taking b's buffer). */
#define CG_NAME "__SINTER_KERNEL__"
int cg_finish(cg_kernel *k, const char *prefix, sn_buf *b, sn_err *e);

#endif
