/* cg_gemv.h: inside codegen. The skinny-product family (cg_gemv.c):
 * out (m x n) = epi(A (m x k) @ op(B) (k x n) [+ bias]) for 1 <= m <= 16,
 * the products of a decode step, written to stream B (the weights) once at
 * the memory's bandwidth: every block owns a slice of output columns and
 * reads its rows of B with 16-byte loads, each weight used for all m rows
 * of A, fp32 accumulation, the k range shared by the warps of a block and,
 * on sm_90, by the blocks of a cluster (split-K added in shared memory
 * through the cluster, in rank order: deterministic, no workspace). Three
 * kernels, by layout and dtype:
 *   - B n x k (linear's weight), f16/bf16, m > 4: mma.sync m16n8k16, A's
 *     rows as the 16 rows of the tile (zero past m), both operands'
 *     fragments straight from 16-byte loads (k permuted alike in A and B);
 *   - B n x k, f32, and f16/bf16 with m <= 4: fp32 FMA per lane (halves
 *     converted), warp-shuffle reduction;
 *   - B k x n (matmul's), any: 16 bytes of a row of B per thread, k rows
 *     shared by the threads of a block.
 * cg_gemm.c takes it for a config of variant CG_GEMV_VARIANT, and by a
 * fixed rule (cg_gemv_fits) only under SINTER_GEMV=1 (cg_gemv_by_default;
 * DESIGN.md, Skinny products). */
#ifndef SINTER_CG_GEMV_H
#define SINTER_CG_GEMV_H

#include "codegen/cg_render.h"

#define CG_GEMV_VARIANT 16
#define CG_GEMV_MAX_M 16

typedef struct cg_gemv_spec {
	ir_dtype t;   /* A, B and bias: f32, f16 or bf16 */
	int64_t m, n, k;
	bool trans_b; /* B stored n x k */
	bool bias;    /* a bias [n] of dtype t, added before the epilogue */
} cg_gemv_spec;

/* Whether the family computes s (a config may still be refused); why not
 * in why. big: also whether the lowering should choose it by default (the
 * product is large enough to be bandwidth-bound, k * n >= 2^20, with
 * columns enough to spread over the device, n >= 128). */
bool cg_gemv_fits(const cg_gemv_spec *s, bool big, char *why, size_t cap);

/* Whether the lowering applies the family's default rule (cg_gemv_fits
 * with big) to products rendered without a config: only when the developer
 * knob SINTER_GEMV is "1" (read from the environment on each call, so a
 * test may set it first); off by default, where configs of its variant
 * (max-autotune's) are the only way in. */
bool cg_gemv_by_default(void);

/* Renders node r (matmul or linear: A in[0], B in[1], the bias in[2] when
 * s->bias) with config want (NULL: the default for s and tg; else its
 * variant must be CG_GEMV_VARIANT), honouring st->epi. SN_EUSAGE for a
 * config it does not take, naming the field. */
int cg_gemv_render(const ir_graph *g, ir_ref r, const cg_gemv_spec *s, const cg_target *tg, const cg_config *want,
		   cg_step *st, sn_err *e);

#endif
