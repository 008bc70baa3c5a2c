/* cg_gemm_tc.h: inside codegen. The tensor-core GEMM template
 * (cg_gemm_tc.c): out[z] = epi(A[z] (m x k) @ op(B[z]) (k x n) [+ bias]),
 * generated CUDA C in two variants, chosen by cg_config.variant:
 *   1  mma.sync (sm_80+; fp8 e4m3 on sm_89+): a cp.async ring of `stages`
 *      slices, ldmatrix fragments, k groups reduced in shared memory;
 *   2  wgmma (sm_90a): cp.async into the 128-byte swizzle, one warpgroup
 *      per 64 rows, one wgmma group in flight.
 * cg_gemm.c renders products through it: fp8 products, and products that
 * carry a fusion epilogue cuBLASLt cannot express. */
#ifndef SINTER_CG_GEMM_TC_H
#define SINTER_CG_GEMM_TC_H

#include "codegen/cg_render.h"

/* What the template computes, in row-major terms. A is m x k with rows k
 * apart; B is k x n (rows n apart) or, trans_b, n x k (rows k apart);
 * batch z of A and B starts at z * sa, z * sb elements (0: shared), of
 * the output at z * m * n. */
typedef struct cg_gemm_tc_spec {
	ir_dtype t;   /* operands and bias: bf16, f16, f32 (as TF32) or f8e4m3 */
	int64_t batch, m, n, k;
	int64_t sa, sb;
	bool trans_b;
	bool bias;    /* a bias [n] of dtype t, added before the epilogue */
} cg_gemm_tc_spec;

/* Whether the template computes s on tg (tf32: f32 operands may round
 * to TF32); otherwise why not, in why. */
bool cg_gemm_tc_fits(const cg_gemm_tc_spec *s, const cg_target *tg, bool tf32, char *why, size_t cap);

/* Renders node r (matmul or linear, operands in[0], in[1] and the bias
 * in[2] when s->bias) as the template with config want (NULL: the
 * default for s and tg), honouring st->epi. SN_EUSAGE for a config it
 * does not take, naming the field. */
int cg_gemm_tc_render(const ir_graph *g, ir_ref r, const cg_gemm_tc_spec *s, const cg_target *tg,
		      const cg_config *want, cg_step *st, sn_err *e);

#endif
