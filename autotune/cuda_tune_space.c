/* cuda_tune_space.c: the autotuner's search spaces (at_tune.h), by kernel
 * family. at_space is asked of every generated kernel, one config at a
 * time, in this order (most promising first); each renderer takes the
 * configs of its own family and refuses the rest, so the families are
 * listed one after another. at_gemm_space is asked of every product
 * cuBLASLt runs. */
#include "autotune/at_tune.h"

/* Pointwise, reduction and movement kernels: threads per block x vector
 * width, blocks near 256 and the widest vectors before extremes. */
#define AT_SPACE_ELEM                                                                                              \
	{.block = 256, .vec = 8}, {.block = 128, .vec = 8}, {.block = 512, .vec = 8}, {.block = 256, .vec = 4},    \
	{.block = 128, .vec = 4}, {.block = 512, .vec = 4}, {.block = 1024, .vec = 8}, {.block = 1024, .vec = 4},  \
	{.block = 256, .vec = 2}, {.block = 128, .vec = 2}, {.block = 512, .vec = 2}, {.block = 64, .vec = 8},     \
	{.block = 64, .vec = 4}, {.block = 256, .vec = 1}, {.block = 128, .vec = 1}, {.block = 512, .vec = 1},     \
	{.block = 1024, .vec = 1}, {.block = 64, .vec = 1}, {.block = 1024, .vec = 2}, {.block = 64, .vec = 2}

/* The tensor-core convolution's tiles (tile_k and the variant stay its own). */
#define AT_SPACE_CONV_MMA                                                                                          \
	{.tile_m = 128, .tile_n = 128, .warps = 8, .stages = 3}, {.tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4}, \
	{.tile_m = 128, .tile_n = 64, .warps = 4, .stages = 3}, {.tile_m = 128, .tile_n = 64, .warps = 4, .stages = 4},  \
	{.tile_m = 64, .tile_n = 64, .warps = 4, .stages = 3}, {.tile_m = 64, .tile_n = 64, .warps = 4, .stages = 4},    \
	{.tile_m = 64, .tile_n = 128, .warps = 4, .stages = 3}, {.tile_m = 256, .tile_n = 64, .warps = 8, .stages = 3},  \
	{.tile_m = 128, .tile_n = 128, .warps = 4, .stages = 3}, {.tile_m = 64, .tile_n = 64, .warps = 2, .stages = 4}

/* The wgmma convolution on sm_90 (variant 7; tile_k stays its own): the
 * default's shapes at other depths, taller and narrower tiles, and k
 * groups of warpgroups (split_k) for grids too small for the SMs; then
 * with a producer warpgroup (variant 8, f16/bf16; warps are the
 * consumers'): the default's shapes at other depths. */
#define AT_SPACE_CONV_WGMMA                                                                                        \
	{.variant = 7, .tile_m = 128, .tile_n = 256, .warps = 8, .stages = 3},                                     \
	{.variant = 7, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4},                                     \
	{.variant = 7, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 6},                                     \
	{.variant = 7, .tile_m = 256, .tile_n = 128, .warps = 8, .stages = 3},                                     \
	{.variant = 7, .tile_m = 128, .tile_n = 64, .warps = 8, .stages = 4},                                      \
	{.variant = 7, .tile_m = 128, .tile_n = 64, .warps = 4, .stages = 6},                                      \
	{.variant = 7, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6},                                      \
	{.variant = 7, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 4},                                       \
	{.variant = 7, .tile_m = 64, .tile_n = 128, .warps = 8, .stages = 5, .split_k = 2},                        \
	{.variant = 7, .tile_m = 64, .tile_n = 64, .warps = 8, .stages = 6, .split_k = 2},                         \
	{.variant = 7, .tile_m = 128, .tile_n = 128, .warps = 16, .stages = 4, .split_k = 2},                      \
	{.variant = 8, .tile_m = 256, .tile_n = 128, .warps = 8, .stages = 3},                                     \
	{.variant = 8, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4},                                     \
	{.variant = 8, .tile_m = 192, .tile_n = 128, .warps = 12, .stages = 4},                                    \
	{.variant = 8, .tile_m = 128, .tile_n = 64, .warps = 4, .stages = 3}

/* Attention's wgmma kernels on sm_90 (variant 3; 4 with a producer
 * warpgroup), beside the defaults: the best tiles of the kernel
 * benchmark's sweep (docs/PERF.md). */
#define AT_SPACE_ATTENTION                                                                                         \
	{.variant = 3, .tile_m = 192, .tile_n = 80}, {.variant = 3, .tile_m = 128, .tile_n = 128},                 \
	{.variant = 4, .tile_m = 128, .tile_n = 96}, {.variant = 3, .tile_m = 128, .tile_n = 64}

/* The GEMM template (cg_gemm_tc.c) where the plan runs it: wgmma fed by
 * TMA on sm_90 (variant 3, its default there), wgmma fed by cp.async
 * (variant 2), mma.sync (variant 1; in two k groups of 8 warps, a 64x64
 * tile spilled on an untransposed B); the tiles above without a variant
 * apply to its default variant; then split-K over a cluster of blocks
 * (wgmma), for small grids (the products' configs against cuBLASLt,
 * at_gemm_space, too). */
#define AT_SPACE_GEMM                                                                                              \
	{.variant = 3, .tile_m = 128, .tile_n = 256, .warps = 12, .stages = 4},                                    \
	{.variant = 3, .tile_m = 128, .tile_n = 128, .warps = 12, .stages = 6},                                    \
	{.variant = 3, .tile_m = 64, .tile_n = 128, .warps = 8, .stages = 8},                                      \
	{.variant = 2, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4},                                     \
	{.variant = 2, .tile_m = 128, .tile_n = 256, .warps = 8, .stages = 3},                                     \
	{.variant = 2, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 8},                                       \
	{.variant = 1, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 4},                                       \
	{.variant = 2, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6},                                      \
	{.variant = 2, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6, .split_k = 2},                        \
	{.variant = 2, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6, .split_k = 3},                        \
	{.variant = 2, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 8, .split_k = 2},                         \
	{.variant = 2, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 8, .split_k = 4},                         \
	{.variant = 2, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4, .split_k = 2}

/* The skinny products (cg_gemv.c, variant 16; its default is a rule):
 * columns per block, warps and units in flight, split-K by its rule. */
#define AT_SPACE_GEMV                                                                                              \
	{.variant = 16, .tile_n = 16, .warps = 4, .stages = 4}, {.variant = 16, .tile_n = 8, .warps = 8, .stages = 2}, \
	{.variant = 16, .tile_n = 32, .warps = 4, .stages = 2}, {.variant = 16, .tile_n = 16, .warps = 8, .stages = 8}

const cg_config at_space[] = {AT_SPACE_ELEM,	  AT_SPACE_CONV_MMA, AT_SPACE_CONV_WGMMA,
			      AT_SPACE_ATTENTION, AT_SPACE_GEMM,     AT_SPACE_GEMV};
const size_t at_space_n = SN_COUNT(at_space);

/* The GEMM template's configs asked of every product cuBLASLt runs (its
 * candidates against cuBLASLt's algorithms): its own default first, then
 * wgmma tiles (sm_90), split-K over clusters of 2-4 blocks for grids
 * too small for the SMs (GPT-2's and the MLP's products at small
 * batch), wgmma fed by TMA (variant 3), mma.sync tiles (sm_80+;
 * variants 2 and 3 are refused there), and the skinny-product family's
 * (variant 16: off by default, so only here is it timed against
 * cuBLASLt; refused by products of more than 16 rows). */
const cg_config at_gemm_space[] = {
	{0},
	{.variant = 2, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4},
	{.variant = 2, .tile_m = 128, .tile_n = 256, .warps = 8, .stages = 3},
	{.variant = 2, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6},
	{.variant = 2, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 8},
	{.variant = 2, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6, .split_k = 2},
	{.variant = 2, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6, .split_k = 3},
	{.variant = 2, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 8, .split_k = 2},
	{.variant = 2, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 8, .split_k = 4},
	{.variant = 2, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4, .split_k = 2},
	{.variant = 3, .tile_m = 128, .tile_n = 256, .warps = 12, .stages = 4},
	{.variant = 3, .tile_m = 128, .tile_n = 128, .warps = 12, .stages = 6},
	{.variant = 3, .tile_m = 64, .tile_n = 128, .warps = 8, .stages = 8},
	{.variant = 1, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 3},
	{.variant = 1, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 4},
	AT_SPACE_GEMV, /* products of 1-16 rows: the skinny family, off by default (cg_gemv.h) */
};
const size_t at_gemm_space_n = SN_COUNT(at_gemm_space);
