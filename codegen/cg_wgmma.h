/* cg_wgmma.h: inside codegen. The CUDA C that every wgmma kernel (sm_90a)
 * shares: the wgmma statement over a whole accumulator array, shared
 * memory descriptors, the fence/commit/wait trio, mbarriers and cp.async
 * groups. Kernels: cg_flash_wg.c (attention); the GEMM template and the
 * wgmma convolution build on the same pieces. */
#ifndef SINTER_CG_WGMMA_H
#define SINTER_CG_WGMMA_H

#include "ir/ir.h"

#include <stdbool.h>

/* Element type names as wgmma spells them, and the k of one instruction
 * for that type (16 for f16/bf16, 8 for tf32, 32 for e4m3/e5m2); 0 for a
 * dtype wgmma does not take. */
const char *cg_wgmma_type(ir_dtype t, bool tf32);
int cg_wgmma_k(const char *ty);

/* Emits `static __device__ void fn(float (&d)[n/2], ...)`: one
 * wgmma.mma_async m64 n k(ty) with f32 accumulation over the whole
 * accumulator array of one thread. areg: A from registers
 * (`const unsigned (&a)[4]`, f16/bf16 only) and B's descriptor, B read
 * transposed (MN-major); otherwise A's and B's descriptors, both K-major,
 * and an `int acc` (0: D = A B, 1: D += A B). */
void cg_wgmma_emit_mma(sn_buf *b, const char *fn, int n, const char *ty, bool areg);

/* The same with A and B from descriptors, B K-major or, tnsp_b (f16/bf16
 * only), MN-major (transposed by the instruction): the GEMM template. */
void cg_wgmma_emit_mma_tb(sn_buf *b, const char *fn, int n, const char *ty, bool tnsp_b);

/* Emits the device helpers: smem_u32 (a generic pointer's shared address),
 * desc(base, addr) (a descriptor from base bits and a shared address),
 * wg_fence, wg_commit, wg_wait<N>, hold<N> (pins an accumulator array
 * across a wait), mbar_init, mbar_wait, mbar_arrive, cp_async16 (16 bytes,
 * zero-filled when !ok), cp_commit and cp_wait<N>. */
void cg_wgmma_emit_prims(sn_buf *b);

/* Emits the TMA helpers (after the prims): struct sn_tmap (a CUtensorMap
 * taken as `const __grid_constant__ sn_tmap`), mbar_expect_tx,
 * mbar_fence_init, tma_prefetch, tma_load2/tma_load3 (a box of the map at
 * the given coordinates, innermost first, into shared memory, completing
 * on an mbarrier) and regs_dec<R>/regs_inc<R> (setmaxnreg). */
void cg_wgmma_emit_tma(sn_buf *b);

#endif
