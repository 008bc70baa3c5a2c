/* cg_render.h: inside codegen. The renderers cg_lower dispatches to, one
 * per op family, and the per-node steps they produce (operands named by IR
 * node, before cg_lower turns them into the plan's buffers). Each renderer
 * fills *st for node id r of g (st->node is already r): a kernel
 * (st->kind = CG_STEP_KERNEL, st->k), a cuBLASLt product (CG_STEP_GEMM,
 * st->g) or an alias. Inputs are guaranteed verified and fully shaped. */
#ifndef SINTER_CG_RENDER_H
#define SINTER_CG_RENDER_H

#include "codegen/cg.h"

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
	cg_config cfg; /* the config it was rendered with (set by the renderer;
			* cg_lower fills block[0] when it left it zero) */
	uint32_t ntmaps; /* TMA tensor maps over bufs[tmaps[i].arg], passed after
			  * the buffers (cg.h, cg_tmap); the source states them */
	cg_tmap tmaps[CG_MAX_TMAPS];
} cg_kernel;

/* A matrix product for cuBLASLt, in row-major terms:
 * out[b] (m x n) = act(A[b] (m x k) @ op(B[b]) (k x n) [+ C[b]] [+ bias (n)])
 * where op(B) = B^T when trans_b (B stored n x k, as linear's weight), and
 * batch b of A/B/out starts at b * stride_{a,b,c} elements (a stride of 0
 * broadcasts). All operands are contiguous row-major; C is laid out as out. */
typedef struct cg_gemm {
	ir_ref a, b, bias, out, c; /* bias, c: IR_NONE when absent */
	int64_t batch, m, n, k;
	int64_t stride_a, stride_b, stride_c;
	bool trans_b;
	ir_dtype dtype; /* of A, B, bias and out */
	cg_act act;
	bool tf32; /* f32 only: cuBLASLt may round operands to TF32 (CUBLAS_COMPUTE_32F_FAST_TF32) */
} cg_gemm;

typedef enum cg_rstep_kind {
	CG_STEP_KERNEL,
	CG_STEP_GEMM,
	CG_STEP_ALIAS, /* the node's buffer is its operand 0's buffer (a view) */
} cg_rstep_kind;

/* ---- fusion's contract with the renderers (DESIGN.md, Fusion) ----
 * Where a renderer finds a value in memory. Unset (set == false): the
 * value's own buffer, contiguous row-major, offset 0. Set by fusion when
 * index-only producers (split, slice, transpose, reshape) become a layout
 * instead of a kernel: the value lives in root's buffer at element offset
 * `offset`, dim d of the value's own shape advancing `strides[d]` elements
 * (0: broadcast). A renderer that reads a set layout must put root (not
 * the value) into its kernel's bufs. */
typedef struct cg_layout {
	bool set;
	ir_ref root;
	int64_t offset;
	int64_t strides[IR_MAX_RANK];
} cg_layout;

/* A pointwise epilogue fused into a kernel's store (conv, attention,
 * generated GEMMs, reductions). fn is CUDA C defining
 *   __device__ __forceinline__ float sn_epi(float v, long i <params>)
 * where v is the kernel's result for output element i (row-major linear
 * index over the fused node's own output shape, bias already added) and the
 * return value is what is stored, as dtype `dtype`, at element i of the
 * buffer of node `out` (same shape). params is the text of its extra
 * parameters (", const unsigned short *__restrict__ e0, ..." or ""), args
 * the matching arguments (", e0, ..."). The renderer appends params to its
 * kernel's parameters after the operands it needs, pushes ex[0..nex) onto
 * its bufs in the same order, then `out` as the last buffer, and calls
 * sn_epi(v, i args) before each store. dtype helpers for ex's dtypes are
 * emitted by fn itself. */
#define CG_MAX_EPI 4
typedef struct cg_epilogue {
	char *fn, *params, *args; /* malloc'ed by the fusion lowering */
	uint32_t nex;
	ir_ref ex[CG_MAX_EPI];
	ir_ref out;
	ir_dtype dtype;
} cg_epilogue;

typedef struct cg_step {
	cg_rstep_kind kind;
	ir_ref node; /* the IR node this step computes */
	cg_kernel k; /* CG_STEP_KERNEL */
	/* CG_STEP_KERNEL: further kernels launched after k, in order, that
	 * compute the node with it (a concat of more operands than one
	 * kernel's CG_MAX_BUFS takes: each writes its own columns of the
	 * output). malloc'ed with their sources; NULL when nmore is 0. Free
	 * with cg_step_free_kernels (cg_rplan_free does). */
	cg_kernel *more;
	uint32_t nmore;
	cg_gemm g;   /* CG_STEP_GEMM */
	/* inputs to the renderer, filled by the caller before the call (zero:
	 * unfused). lay[i]: operand i of node; lay_out: the node's own output;
	 * epi: an epilogue to apply before the store. A renderer honours them
	 * only where cg_caps says it can; the caller asks for no more. */
	cg_layout lay[CG_MAX_BUFS];
	cg_layout lay_out;
	const cg_epilogue *epi;
	/* pro: a prologue computing operand 0 instead of loading it: fn
	 * defines __device__ __forceinline__ float sn_pro(long i <params>),
	 * the operand's element i (row-major over its shape); the renderer
	 * takes params/args/ex in place of operand 0's buffer (out, dtype
	 * unused). */
	const cg_epilogue *pro;
} cg_step;

/* What node r's renderer accepts beyond its default (a mask of CG_CAN_*):
 * a table in cg_lower.c, one line per family, updated with the family. */
enum {
	CG_CAN_LAYOUT_IN = 1,  /* lay[] of its operands (strided, offset, in root's buffer) */
	CG_CAN_LAYOUT_OUT = 2, /* lay_out */
	CG_CAN_EPILOGUE = 4,   /* epi */
	CG_CAN_PROLOGUE = 8,   /* pro */
};
unsigned cg_caps(const ir_graph *g, ir_ref r, const cg_target *t);


/* The per-node steps of g, in graph order (cg_lower's first half): one per
 * non-source node, views as CG_STEP_ALIAS. Free with cg_rplan_free. */
typedef struct cg_rplan {
	cg_step *steps;
	uint32_t nsteps;
	cg_epilogue *xs; /* fused: step i's prologue xs[2i] and epilogue xs[2i+1] */
} cg_rplan;
int cg_render_graph(const ir_graph *g, const cg_target *t, cg_rplan **out, sn_err *e);
void cg_rplan_free(cg_rplan *p);
/* Frees st's kernel sources (k's and the chain in more) and the chain;
 * the step's other fields stay. */
void cg_step_free_kernels(cg_step *st);

/* The steps of fusion plan fp (passes/fuse.h), one per group in its
 * order (views as CG_STEP_ALIAS): a group of one node through its op's
 * renderer, a pointwise group through the element emitter, a norm with its
 * prologue, a convolution with its epilogue, a cuBLASLt product with bias,
 * C and activation. */
struct fu_plan;
int cg_render_groups(const ir_graph *g, const cg_target *t, const struct fu_plan *fp, cg_rplan **out, sn_err *e);

/* codegen/cg_fuse.c: fused kernels (the element emitter). */
bool cg_group_needs_emitter(const ir_graph *g, const struct fu_plan *fp, uint32_t gid);
int cg_render_pointwise_group(const ir_graph *g, const struct fu_plan *fp, uint32_t gid, const cg_target *t,
			      const cg_config *want, cg_step *st, sn_err *e);
/* Fills x (free with cg_epilogue_free) with group gid's epilogue over its
 * core (sn_epi) or its core's prologue (sn_pro). */
int cg_make_epilogue(const ir_graph *g, const struct fu_plan *fp, uint32_t gid, cg_epilogue *x, sn_err *e);
int cg_make_prologue(const ir_graph *g, const struct fu_plan *fp, uint32_t gid, cg_epilogue *x, sn_err *e);
void cg_epilogue_free(cg_epilogue *x);
/* The spec comment that opens a kernel (cg_common.c), with what fusion
 * asked of this step: its prologue's and epilogue's code (hashed) and its
 * layouts, so that they are part of the spec key. */
void cg_emit_spec_st(sn_buf *b, const ir_graph *g, ir_ref r, const char *config, const cg_step *st);
/* cg_norm.c: what the norm family takes (CG_CAN_*). */
unsigned cg_norm_caps(const ir_graph *g, ir_ref r);
/* cg_norm.c: pieces of the row kernels, shared with the row groups:
 * cg_emit_group_fn emits `float name(float a)` (`double name(double a)`
 * for CG_RED_SUM: sums accumulate in double), the reduction of a over a
 * group of g threads (1, 32, or a whole block of g, a multiple of 32),
 * every thread getting the result (max and min let NaN win);
 * cg_row_groups gives threads per row and rows per block for rows of len. */
typedef enum cg_red { CG_RED_SUM, CG_RED_MAX, CG_RED_MIN } cg_red;
void cg_emit_group_fn(sn_buf *b, const char *name, int g, cg_red red);
void cg_row_groups(int64_t len, int *g, int *gpb);
/* cg_fuse.c: row group gid (FU_ROWS) as one kernel (only the default
 * config); and whether reduction r may join a row group (FU_CAN_ROWS). */
int cg_render_row_group(const ir_graph *g, const struct fu_plan *fp, uint32_t gid, const cg_config *want,
			cg_step *st, sn_err *e);
bool cg_rows_takes(const ir_graph *g, ir_ref r);

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

/* Under --precision tf32 (t->tf32): whether node r is an f32 param whose
 * every use is a conv2d's weight operand. Its values are then stored in
 * the weight image already rounded to TF32 (cg_lower; cvt.rna's rounding),
 * so a conv kernel may take them as rounded (rounding again is the
 * identity). */
bool cg_tf32_weight(const ir_graph *g, ir_ref r, const cg_target *t);
/* The same for every node at once: *out a malloc'ed array of g->nnodes
 * flags, or NULL when none is set; SN_EINTERNAL when memory ran out. */
int cg_tf32_weights(const ir_graph *g, const cg_target *t, uint8_t **out);
/* Rounds n f32 values in place as cvt.rna.tf32.f32 does (to nearest, ties
 * away from zero, 10 mantissa bits kept; NaN and infinity unchanged). */
void cg_round_tf32(void *p, size_t n);

/* Finishes a kernel: names it from a hash of its source (prefix + "_" +
 * 12 hex digits; the source must spell the name as the placeholder
 * CG_NAME, which is replaced), sets src (taking b's buffer). */
#define CG_NAME "__SINTER_KERNEL__"
int cg_finish(cg_kernel *k, const char *prefix, sn_buf *b, sn_err *e);

/* want: the config asked for, or NULL for the family's default. A family
 * that cannot honour a field returns SN_EUSAGE naming it. */
typedef int cg_render_fn(const ir_graph *g, ir_ref r, const cg_target *t, const cg_config *want, cg_step *st,
			 sn_err *e);

/* Shared by the elementwise renderer and fused kernels (cg_elem.c):
 * cg_float_expr / cg_int_expr: op n's result as a C expression over x (and
 * y), in float or in long long (-1: the op has none in that domain);
 * cg_flit: a float literal (inf and NaN as bit patterns); cg_int_range: an
 * integer dtype's saturation range (false for i64 and bool);
 * cg_emit_op_helpers: the device functions op's expression calls, once per
 * source. */
int cg_float_expr(const ir_node *n, char *o, size_t cap);
int cg_int_expr(const ir_node *n, char *o, size_t cap);
void cg_flit(char *out, size_t cap, double v);
bool cg_int_range(ir_dtype t, const char **lo, const char **hi);
void cg_emit_op_helpers(sn_buf *b, ir_op op, bool fdom);

/* codegen/cg_elem.c: unary, binary, ternary ops, cast, clamp, with numpy
 * broadcasting; 16-byte vectorized when shapes allow */
cg_render_fn cg_render_elementwise;
/* codegen/cg_move.c: transpose, expand, concat, split, slice, gather, pad,
 * iota, and copies; reshape/flatten/squeeze/unsqueeze are aliases */
cg_render_fn cg_render_move;
/* codegen/cg_reduce.c: reduce_sum/mean/max/min */
cg_render_fn cg_render_reduce;
/* codegen/cg_norm.c: softmax, log_softmax, layer_norm, rms_norm, batch_norm */
cg_render_fn cg_render_norm;
/* codegen/cg_pool.c: max_pool2d, avg_pool2d, global_avg_pool */
cg_render_fn cg_render_pool;
/* codegen/cg_conv.c: conv2d (implicit GEMM; tensor cores for f16/bf16) */
cg_render_fn cg_render_conv;
/* Whether conv2d node r (unfused, default config) is a cuBLASLt product:
 * NHWC, 1x1, stride 1, no padding, one group, f32/f16/bf16, so that it is
 * [N*H*W, C] x [O, C]^T (OHWI weights) with its bias; a fusion epilogue
 * cuBLASLt cannot express keeps the generated kernel. */
bool cg_conv_is_gemm(const ir_graph *g, ir_ref r, const cg_target *tg);
/* codegen/cg_gemm.c: matmul and linear as cuBLASLt steps (a kernel where
 * cuBLASLt cannot express the broadcast) */
cg_render_fn cg_render_gemm;
/* Whether matmul/linear node r takes a fusion epilogue on tg (its product
 * fits the tensor-core template, cg_gemm_tc.h). */
bool cg_gemm_takes_epilogue(const ir_graph *g, ir_ref r, const cg_target *tg);
/* The product gg (a cuBLASLt step of node r: matmul, linear or a 1x1
 * conv, A and B its operands 0 and 1) rendered instead as the GEMM
 * template with config want (NULL: its default), honouring st->epi (the
 * group's epilogue past the product: bias adds, residual, activation);
 * the template adds r's own bias (operand 2). SN_EUSAGE when the
 * template cannot run it or does not take want. */
int cg_render_gemm_as_tc(const ir_graph *g, ir_ref r, const cg_gemm *gg, const cg_target *tg, const cg_config *want,
			 cg_step *st, sn_err *e);
/* codegen/cg_attn.c: scaled_dot_product_attention */
cg_render_fn cg_render_attention;
/* codegen/cg_index.c: gather_elements, scatter_elements, scatter_nd
 * (reached through cg_render_move) */
cg_render_fn cg_render_index;
/* codegen/cg_scan.c: cumsum (through cg_render_norm), argmax and argmin
 * (through cg_render_reduce) */
cg_render_fn cg_render_scan;
/* codegen/cg_norm.c: group_norm (through cg_render_norm) */
cg_render_fn cg_render_group_norm;
/* The threads per block want asks for (def when it asks for none), or
 * SN_EUSAGE for one that is not a multiple of 32 in [32, 1024]. */
int cg_block_of(const ir_graph *g, ir_ref r, const cg_config *want, int def, int *block, sn_err *e);

#endif
