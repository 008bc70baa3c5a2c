/* cg_conv.h: inside codegen, shared by the conv2d renderers (cg_conv.c, the
 * dispatcher and the fallback kernels; cg_conv_tc.c, the pipelined
 * tensor-core kernel; cg_conv_dw.c, the depthwise kernels; cg_conv_stem.c,
 * the tensor-core kernel for few input channels). */
#ifndef SINTER_CG_CONV_H
#define SINTER_CG_CONV_H

#include "codegen/cg_render.h"

typedef struct cg_conv {
	bool nhwc;
	int64_t n, c, h, w, o, ho, wo, kh, kw, groups, cg, og;
	int64_t sh, sw, pt, pl, dh, dw;
	int64_t m, k; /* GEMM dims per group */
	bool bias;
	ir_dtype t;
} cg_conv;

/* The pipelined tensor-core kernel's shape: tk in elements of the operand
 * type; wm x wn warps, each of (tm / wm) x (tn / wn) outputs. */
typedef struct cg_conv_tc {
	int tm, tn, tk, warps, stages, wm, wn;
	int wk; /* k groups (cg_config.split_k; 0 or 1: one): warps = wm x wn x wk,
		 * group q takes k-steps [q, q + 1) x ks / wk of every slice, the
		 * groups' sums added through shared memory before the store */
	bool tf32; /* f32 operands rounded to TF32, m16n8k8 */
} cg_conv_tc;

/* Compile-time constants of every conv kernel, and the index type. */
void cg_conv_consts(sn_buf *b, const cg_conv *cv);
/* pixel(), a_off(), y_off() of the tiled kernels. */
void cg_conv_index_fns(sn_buf *b, bool nhwc);
/* The kernel's signature: x, wt[, bias], the epilogue's params, y (the
 * epilogue's output when epi is set). */
void cg_conv_head(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, int threads);
/* The same, asking for min_blocks resident blocks per SM (0: no bound). */
void cg_conv_head_min(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, int threads, int min_blocks);
/* The same, for blocks launched in clusters of cluster blocks along x
 * (__cluster_dims__; 0 or 1: no cluster). */
void cg_conv_head_cluster(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, int threads, int cluster);
/* One store of float expression val at linear output element idx (an ix
 * expression): st_<t>(y, ...) or the epilogue's st_<dtype>(y, i,
 * sn_epi(val, i args)). ind: the indentation. */
void cg_conv_store(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, const char *ind, const char *idx,
		   const char *val);

/* cg_conv_tc.c. Shared memory bytes of config c for element size esize. */
unsigned cg_conv_tc_smem(const cg_conv_tc *c, int esize);
/* Fills c's warp grid (wm, wn) and checks c against cv and the target:
 * SN_EUSAGE naming the field that does not fit. */
int cg_conv_tc_check(const cg_conv *cv, const cg_target *tg, cg_conv_tc *c, sn_err *e);
/* The default config for cv (valid by cg_conv_tc_check). */
cg_conv_tc cg_conv_tc_default(const cg_conv *cv, const cg_target *tg, bool tf32);
/* tf32(bits) when tf32, and mma(c, a, b): m16n8k8 tf32 or m16n8k16 in t. */
void cg_conv_emit_mma(sn_buf *b, ir_dtype t, bool tf32);
void cg_conv_emit_tc(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, const cg_conv_tc *c);
/* The way out of a tile staged in shared memory as fp32 (cs: TM rows of
 * TN + 4 floats; m0, n0, g, tid in scope): bias, the fusion epilogue, the
 * cast, 16-byte stores where the channel counts allow; nt threads. Closes
 * the kernel's body. sk > 1: the tile is split over the k of a cluster of
 * sk blocks (rank, peer_sum4 and peer_sum1 in scope, every block's
 * partial tile staged and the cluster synchronized): block rank stores
 * every sk-th piece of the tile, each the sum of the sk blocks' partial
 * sums in rank order, then the cluster meets once more so that no block
 * leaves while the others read its shared memory. */
void cg_conv_emit_staged_out(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, int nt, int sk);

/* cg_conv_wg.c: the wgmma implicit GEMM (sm_90, compiled for sm_90a).
 * tm = 64 x mwg x mi rows: mwg m groups of warpgroups, each of mi m64
 * tiles; kg k groups (cg_config.split_k) split each slice's k-steps;
 * warps = 4 x mwg x kg; slices of 128 bytes of k (64 f16/bf16, 32
 * f32 under TF32). */
typedef struct cg_conv_wg {
	int tm, tn, warps, stages, kg;
	int mwg, mi; /* filled by cg_conv_wg_check */
	bool tf32;
	bool b_rounded; /* tf32: the weights are stored rounded (cg_tf32_weight): B is taken as it lands */
	bool ws;	/* variant 8: a producer warpgroup beside warps / 4 consumer ones (kg 1) */
	int cl;		/* variant 9: split-K over a cluster of cl blocks (2 to 8; 0 or 1: none; kg 1, not ws) */
} cg_conv_wg;

/* Why the wgmma kernel cannot compute cv on tg at all, or NULL. */
const char *cg_conv_wg_cannot(const cg_conv *cv, const cg_target *tg);
/* Checks c (filling mwg, mi): SN_EUSAGE naming the field that does not fit. */
int cg_conv_wg_check(const cg_conv *cv, cg_conv_wg *c, sn_err *e);
/* Shared memory bytes of config c (the ring, with its mbarriers when ws,
 * or the staged output tile, whichever is larger, and 1024 for the
 * swizzle's alignment). */
unsigned cg_conv_wg_smem(const cg_conv_wg *c);
/* The default config for cv (valid by cg_conv_wg_check). */
cg_conv_wg cg_conv_wg_default(const cg_conv *cv, bool tf32);
void cg_conv_emit_wg(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, const cg_conv_wg *c);
/* Variant 8 (the same kernel with a producer warpgroup, c->ws): why it
 * cannot compute cv on tg, or NULL; its default config. */
const char *cg_conv_wg_ws_cannot(const cg_conv *cv, const cg_target *tg);
cg_conv_wg cg_conv_wg_ws_default(const cg_conv *cv);
/* Variant 9 (variant 7 split over the k of a cluster, c->cl blocks) for
 * a conv whose default config d (variant 7 or 8) fills under half the
 * SMs: true and *out when a split config is estimated faster than d. */
bool cg_conv_wg_split_default(const cg_conv *cv, bool tf32, const cg_conv_wg *d, cg_conv_wg *out);
/* cg_conv_dw.c: the depthwise kernels (one input channel per group).
 * Variant 5: threads over output pixels x channel vectors; vec channels
 * per thread (NHWC), 1 for NCHW. */
void cg_conv_emit_depthwise(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, int vec);
/* Variant 10, tiled in shared memory (channel multiplier 1): a block's
 * tile of th output rows x rw x ncx columns x (NHWC) nv vectors of vec
 * channels or (NCHW) pb planes; ih x iw input pixels with the halo, rs
 * vectors (floats) per shared row; active computing threads; the launch:
 * grid (x, y), threads, dynamic shared memory. */
typedef struct cg_conv_dw {
	int vec, nv, rw, ncx, th, pb, ih, iw, rs;
	int64_t tiles_h, tiles_w;
	unsigned active, threads, smem, grid[2]; /* threads: active ones rounded up to warps */
} cg_conv_dw;
/* Why variant 10 cannot compute cv, or NULL. */
const char *cg_conv_dw_cannot(const cg_conv *cv);
/* The tiles by a rule from the shape, with what want (NULL: nothing) asks
 * for: tile_m rows, tile_n columns, tile_k outputs per thread along W (1
 * to 8), vec channel vectors (NHWC, dividing theirs) or planes (NCHW) per
 * block; false when they do not fit (48 KB of shared memory by the rule,
 * 99 KB asked, 1024 threads, one launch). */
bool cg_conv_dw_plan(const cg_conv *cv, const cg_config *want, cg_conv_dw *p);
void cg_conv_emit_dw(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, const cg_conv_dw *p);

/* cg_conv_stem.c: the tensor-core kernel for few input channels. Why it
 * cannot compute cv on tg, or NULL; its launch (grid, threads, dynamic
 * shared memory; -1 when it does not fit); its source. */
const char *cg_conv_stem_cannot(const cg_conv *cv, const cg_target *tg);
int cg_conv_stem_block(const cg_conv *cv, const cg_target *tg, bool tf32, unsigned grid[3], unsigned *threads,
		       unsigned *smem);
void cg_conv_emit_stem(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, const cg_target *tg, bool tf32);

#endif
