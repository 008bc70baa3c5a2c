/* cg_conv.c: conv2d as an implicit GEMM.
 *
 * Per group g: Y[m][o] = sum_k A[m][k] * B[k][o] (+ bias[o]) with
 *   m = (n, ho, wo)                   M = N*Ho*Wo output pixels
 *   o in [0, O/groups)                the group's output channels
 *   k = (c, r, s) in NCHW (OIHW weights), (r, s, c) in NHWC (OHWI weights),
 *   so that B[k][o] = w[(g*Og + o)*K + k] is contiguous in k for both;
 *   A[m][k] = x[n][g*Cg + c][ho*sh - pt + r*dh][wo*sw - pl + s*dw] or 0 in
 *   the padding (gathered on the fly, never materialized).
 * NHWC 1x1 convs of stride 1 without padding or groups are a plain matrix
 * product, [N*H*W, C] x [O, C]^T: a cuBLASLt step (CG_STEP_GEMM) with
 * their bias, unless a config is asked for or a fusion epilogue is set
 * (cuBLASLt's own epilogues come through fusion's gemm groups), or the
 * product is small (under 2^29 flops) and variant 7 can take it.
 * Kernels (cg_config.variant; the default is the first that applies):
 *  7 wgmma (cg_conv_wg.c), on sm_90 (compiled for sm_90a): what variant 4
 *    takes, with both operands from 128-byte-swizzled shared memory;
 *    tile_m/n, warps (4 per warpgroup), stages, split_k (k groups of
 *    warpgroups) from cg_config, default by shape;
 *  8 variant 7 with a producer warpgroup (cg_conv_wg.c; f16/bf16): the
 *    consumers only wait on mbarriers and multiply; warps counts the
 *    consumers' (4, 8 or 12), the producer's 128 threads come on top;
 *    the default instead of 7 where its own default tile has at least
 *    128 rows;
 *  9 variant 7 split over K across a thread-block cluster (cg_conv_wg.c):
 *    split_k blocks (2 to 8) of a cluster each take a share of the k
 *    slices, stage their fp32 partial tile, and each stores a share of
 *    the tile summed over the cluster through DSMEM (in rank order);
 *    tile_m/n, warps and stages as variant 7's. Where 7's or 8's default
 *    grid fills under half the SMs (batch 1), the default is the best of
 *    narrower tiles and 1 to 8 blocks per cluster by an estimate of the
 *    time (cg_conv_wg_split_default): variant 9, or 7 when one block;
 *  4 the tensor-core pipeline (cg_conv_tc.c): NHWC, f16/bf16, or f32 under
 *    --precision tf32 (m16n8k8 on operands rounded to TF32), channels per
 *    group a multiple of 8 (4 for f32); cp.async stages, ldmatrix, tiles
 *    and warps from cg_config (tile_m/n/k, warps, stages), default by shape;
 * 10 depthwise, tiled (cg_conv_dw.c): one input channel per group and a
 *    channel multiplier of 1, floats, filters up to 31x31: a block's
 *    output tile x channel slice (NHWC, 16-byte vectors) or planes (NCHW)
 *    computed from its input tile (with the halo) and filter slice staged
 *    once in shared memory, several outputs along W per thread; tiles by a
 *    rule from the shape (cg_conv_dw_plan);
 *  5 depthwise, simple (cg_conv_dw.c): one input channel per group (any
 *    multiplier), floats, a thread per output pixel and channel vector;
 *  6 few input channels (cg_conv_stem.c; fewer than 8, so not variant 4):
 *    NHWC, one group, f16/bf16 or f32 under tf32, K as (filter row, KW x C)
 *    with a filter row's KW*C elements contiguous in the input row; the
 *    block's input rows and weights staged once in shared memory;
 *  3 f16/bf16 on sm_80+ elsewhere (NCHW, odd channel counts): mma.sync
 *    m16n8k16 (fp32 accumulate), 64x64x32 tiles, 4 warps of 32x32, 16-byte
 *    loads where channels allow;
 *  2 other floats: SIMT, 64x64x16 tiles, 256 threads of 4x4 outputs, exact
 *    fp32 FMA; loads converted to fp32 on the way to shared memory;
 *  1 integers, and groups too narrow for a tile: a direct kernel, one
 *    thread per output element.
 * Kernels 3 and 2 stage the next K slice in registers while the current
 * one is multiplied from shared memory (double-buffered, one barrier per
 * slice). Every float kernel honours a fusion epilogue (cg_render.h): its
 * store becomes sn_epi(acc + bias, i) into the epilogue's output. Buffers
 * must be 16-byte aligned (the arena guarantees it). */
#include "codegen/cg_conv.h"

#include <stdio.h>
#include <string.h>

void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config); /* cg_common.c */

static int conv_dims(const ir_graph *g, const ir_node *nd, cg_conv *cv, sn_err *e)
{
	const ir_node *x = &g->nodes[nd->in[0]], *w = &g->nodes[nd->in[1]];
	const ir_attrs *at = nd->attrs;
	if (x->shape.rank != 4 || w->shape.rank != 4 || at->stride.n != 2 || at->dilation.n != 2 || at->pad.n != 4)
		return sn_errf(e, SN_EINPUT, "conv2d: needs rank-4 x and weight, 2 strides, 2 dilations, 4 pads");
	bool nhwc = at->layout == IR_NHWC;
	const int64_t *xd = x->shape.d, *wd = w->shape.d, *yd = nd->shape.d;
	*cv = (cg_conv){
		.nhwc = nhwc, .n = xd[0], .c = xd[nhwc ? 3 : 1], .h = xd[nhwc ? 1 : 2], .w = xd[nhwc ? 2 : 3],
		.o = yd[nhwc ? 3 : 1], .ho = yd[nhwc ? 1 : 2], .wo = yd[nhwc ? 2 : 3],
		.kh = wd[nhwc ? 1 : 2], .kw = wd[nhwc ? 2 : 3], .groups = at->groups, .cg = wd[nhwc ? 3 : 1],
		.sh = at->stride.v[0], .sw = at->stride.v[1], .pt = at->pad.v[0], .pl = at->pad.v[1],
		.dh = at->dilation.v[0], .dw = at->dilation.v[1], .bias = nd->nin > 2, .t = nd->dtype,
	};
	if (cv->groups < 1 || cv->c != cv->cg * cv->groups || cv->o % cv->groups)
		return sn_errf(e, SN_EINPUT, "conv2d: channels do not agree with groups %lld", (long long)cv->groups);
	cv->og = cv->o / cv->groups;
	cv->m = cv->n * cv->ho * cv->wo;
	cv->k = cv->cg * cv->kh * cv->kw;
	return SN_OK;
}

/* The compile-time constants every conv kernel uses, and the index type:
 * int when every buffer has fewer than 2^31 elements. */
void cg_conv_consts(sn_buf *b, const cg_conv *cv)
{
	int64_t big = cv->n * cv->c * cv->h * cv->w;
	if (cv->m * cv->o > big)
		big = cv->m * cv->o;
	sn_buf_printf(b, "typedef %s ix;\n", big < 0x7fffffffLL ? "int" : "long");
	sn_buf_printf(b, "#define CN %lld\n#define CC %lld\n#define CH %lld\n#define CW %lld\n"
			 "#define CO %lld\n#define HO %lld\n#define WO %lld\n#define KH %lld\n#define KW %lld\n"
			 "#define CG %lld\n#define OG %lld\n#define SH %lld\n#define SW %lld\n#define PT %lld\n"
			 "#define PL %lld\n#define DH %lld\n#define DW %lld\n#define MM %lld\n#define KK %lld\n\n",
		      (long long)cv->n, (long long)cv->c, (long long)cv->h, (long long)cv->w, (long long)cv->o,
		      (long long)cv->ho, (long long)cv->wo, (long long)cv->kh, (long long)cv->kw,
		      (long long)cv->cg, (long long)cv->og, (long long)cv->sh, (long long)cv->sw,
		      (long long)cv->pt, (long long)cv->pl, (long long)cv->dh, (long long)cv->dw,
		      (long long)cv->m, (long long)cv->k);
}

/* Device helpers of the tiled kernels:
 *   pixel(m, g, &p): where output pixel m of group g reads its input (an
 *     invalid m gets a window that is all padding);
 *   a_off(p, k, &ok): the offset of A[m][k], ok false in the padding;
 *   y_off(m, o): the offset of Y[m][o] (o a channel of the whole tensor). */
void cg_conv_index_fns(sn_buf *b, bool nhwc)
{
	sn_buf_puts(b, "struct pix {\n\tix base;\n\tint hi0, wi0;\n};\n\n"
		       "static __device__ __forceinline__ pix pixel(ix m, int g)\n{\n"
		       "\tpix p;\n"
		       "\tix n = m / (HO * WO);\n"
		       "\tint q = (int)(m % (HO * WO)), ho = q / WO, wo = q % WO;\n"
		       "\tp.hi0 = m < MM ? ho * SH - PT : -(1 << 29);\n"
		       "\tp.wi0 = wo * SW - PL;\n");
	if (nhwc)
		sn_buf_puts(b, "\tp.base = (m < MM ? n : 0) * ((ix)CH * CW * CC) + (ix)g * CG;\n");
	else
		sn_buf_puts(b, "\tp.base = (m < MM ? n : 0) * ((ix)CC * CH * CW) + (ix)g * CG * CH * CW;\n");
	sn_buf_puts(b, "\treturn p;\n}\n\n"
		       "static __device__ __forceinline__ ix a_off(pix p, int k, bool *ok)\n{\n");
	if (nhwc)
		sn_buf_puts(b, "\tint rs = k / CG, c = k % CG, r = rs / KW, s = rs % KW;\n");
	else
		sn_buf_puts(b, "\tint c = k / (KH * KW), rs = k % (KH * KW), r = rs / KW, s = rs % KW;\n");
	sn_buf_puts(b, "\tint h = p.hi0 + r * DH, w = p.wi0 + s * DW;\n"
		       "\t*ok = k < KK && (unsigned)h < (unsigned)CH && (unsigned)w < (unsigned)CW;\n");
	if (nhwc)
		sn_buf_puts(b, "\treturn p.base + ((ix)h * CW + w) * CC + c;\n}\n\n");
	else
		sn_buf_puts(b, "\treturn p.base + ((ix)c * CH + h) * CW + w;\n}\n\n");
	sn_buf_puts(b, "static __device__ __forceinline__ ix y_off(ix m, int o)\n{\n");
	if (nhwc)
		sn_buf_puts(b, "\treturn m * CO + o;\n}\n\n");
	else
		sn_buf_puts(b, "\treturn (m / (HO * WO) * CO + o) * ((ix)HO * WO) + m % (HO * WO);\n}\n\n");
}

void cg_conv_head(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, int threads)
{
	cg_conv_head_min(b, cv, epi, threads, 0);
}

static void head(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, int threads, int min_blocks, int cluster)
{
	const char *ct = cg_ctype(cv->t);
	char cl[48] = "";
	if (cluster > 1)
		snprintf(cl, sizeof cl, " __cluster_dims__(%d, 1, 1)", cluster);
	if (min_blocks > 0)
		sn_buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d, %d)%s\n", threads, min_blocks, cl);
	else
		sn_buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d)%s\n", threads, cl);
	sn_buf_printf(b, "%s(const %s *__restrict__ x, const %s *__restrict__ wt, ", CG_NAME, ct, ct);
	if (cv->bias)
		sn_buf_printf(b, "const %s *__restrict__ bias, ", ct);
	if (epi)
		sn_buf_printf(b, "%s%s", epi->params[0] == ',' ? epi->params + 1 : epi->params, epi->params[0] ? ", " : "");
	sn_buf_printf(b, "%s *__restrict__ y)\n{\n", cg_ctype(epi ? epi->dtype : cv->t));
}

void cg_conv_head_min(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, int threads, int min_blocks)
{
	head(b, cv, epi, threads, min_blocks, 0);
}

void cg_conv_head_cluster(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, int threads, int cluster)
{
	head(b, cv, epi, threads, 0, cluster);
}

void cg_conv_store(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, const char *ind, const char *idx,
		   const char *val)
{
	if (!epi)
		sn_buf_printf(b, "%sst_%s(y, %s, %s);\n", ind, ir_dtype_name(cv->t), idx, val);
	else
		sn_buf_printf(b, "%s{\n%s\tix i_ = %s;\n%s\tst_%s(y, i_, sn_epi(%s, (long)i_%s));\n%s}\n", ind, ind, idx,
			      ind, ir_dtype_name(epi->dtype), val, epi->args, ind);
}

/* ---- SIMT fp32 kernel ---- */
static void emit_simt(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi)
{
	const char *tn = ir_dtype_name(cv->t);
	cg_conv_head(b, cv, epi, 256);
	sn_buf_puts(b, "\t__shared__ __align__(16) float As[2][16][68], Bs[2][16][68];\n"
		       "\tint tid = threadIdx.x, g = blockIdx.z;\n"
		       "\tix m0 = (ix)blockIdx.x * 64;\n\tint n0 = blockIdx.y * 64;\n"
		       "\tconst float zero = 0.0f;\n");
	/* A loads: NCHW walks m across threads (coalesced along W), NHWC walks
	 * k (coalesced along C). */
	if (cv->nhwc)
		sn_buf_puts(b, "\tint ak = tid % 16, am = tid / 16; /* rows am + 16*i */\n"
			       "\tpix px[4];\n"
			       "#pragma unroll\n\tfor (int i = 0; i < 4; i++)\n\t\tpx[i] = pixel(m0 + am + 16 * i, g);\n");
	else
		sn_buf_puts(b, "\tint am = tid % 64, ak = tid / 64; /* k slices ak + 4*i */\n"
			       "\tpix px0 = pixel(m0 + am, g);\n");
	sn_buf_puts(b, "\tint bk = tid % 16, bn = tid / 16; /* channels bn + 16*i */\n"
		       "\tfloat ra[4], rb[4];\n"
		       "#define LOAD(k0) do { \\\n"
		       "\t\t_Pragma(\"unroll\") for (int i = 0; i < 4; i++) { \\\n"
		       "\t\t\tbool ok; \\\n");
	if (cv->nhwc)
		sn_buf_printf(b, "\t\t\tix off = a_off(px[i], (k0) + ak, &ok); \\\n"
				 "\t\t\tra[i] = ok ? ld_%s(x, off) : zero; \\\n", tn);
	else
		sn_buf_printf(b, "\t\t\tix off = a_off(px0, (k0) + ak + 4 * i, &ok); \\\n"
				 "\t\t\tra[i] = ok ? ld_%s(x, off) : zero; \\\n", tn);
	sn_buf_printf(b, "\t\t\tint o = n0 + bn + 16 * i, kb = (k0) + bk; \\\n"
			 "\t\t\trb[i] = o < OG && kb < KK ? ld_%s(wt, ((ix)g * OG + o) * KK + kb) : zero; \\\n"
			 "\t\t} \\\n\t} while (0)\n", tn);
	sn_buf_puts(b, "#define STORE(buf) do { \\\n"
		       "\t\t_Pragma(\"unroll\") for (int i = 0; i < 4; i++) { \\\n");
	if (cv->nhwc)
		sn_buf_puts(b, "\t\t\tAs[buf][ak][am + 16 * i] = ra[i]; \\\n");
	else
		sn_buf_puts(b, "\t\t\tAs[buf][ak + 4 * i][am] = ra[i]; \\\n");
	sn_buf_puts(b, "\t\t\tBs[buf][bk][bn + 16 * i] = rb[i]; \\\n"
		       "\t\t} \\\n\t} while (0)\n");
	/* the thread's 4x4 outputs: in NCHW consecutive threads take
	 * consecutive pixels (coalesced stores), in NHWC channels */
	if (cv->nhwc)
		sn_buf_puts(b, "\tint tm = (tid / 16) * 4, tn = (tid % 16) * 4;\n");
	else
		sn_buf_puts(b, "\tint tm = (tid % 16) * 4, tn = (tid / 16) * 4;\n");
	sn_buf_puts(b, "\tfloat acc[4][4];\n"
		       "#pragma unroll\n\tfor (int i = 0; i < 4; i++)\n"
		       "#pragma unroll\n\t\tfor (int j = 0; j < 4; j++)\n\t\t\tacc[i][j] = 0.0f;\n"
		       "\tconst int tiles = (KK + 15) / 16;\n"
		       "\tLOAD(0);\n\tSTORE(0);\n\t__syncthreads();\n"
		       "\tfor (int t = 0; t < tiles; t++) {\n"
		       "\t\tint cur = t & 1;\n"
		       "\t\tif (t + 1 < tiles)\n\t\t\tLOAD((t + 1) * 16);\n"
		       "#pragma unroll\n\t\tfor (int kk = 0; kk < 16; kk++) {\n"
		       "\t\t\tfloat4 av = *(const float4 *)&As[cur][kk][tm];\n"
		       "\t\t\tfloat4 bv = *(const float4 *)&Bs[cur][kk][tn];\n"
		       "\t\t\tfloat a4[4] = {av.x, av.y, av.z, av.w}, b4[4] = {bv.x, bv.y, bv.z, bv.w};\n"
		       "#pragma unroll\n\t\t\tfor (int i = 0; i < 4; i++)\n"
		       "#pragma unroll\n\t\t\t\tfor (int j = 0; j < 4; j++)\n"
		       "\t\t\t\t\tacc[i][j] = fmaf(a4[i], b4[j], acc[i][j]);\n"
		       "\t\t}\n"
		       "\t\tif (t + 1 < tiles)\n\t\t\tSTORE(cur ^ 1);\n"
		       "\t\t__syncthreads();\n\t}\n"
		       "#undef LOAD\n#undef STORE\n"
		       "#pragma unroll\n\tfor (int j = 0; j < 4; j++) {\n"
		       "\t\tint o = n0 + tn + j;\n\t\tif (o >= OG)\n\t\t\tcontinue;\n"
		       "\t\to += g * OG;\n");
	if (cv->bias)
		sn_buf_printf(b, "\t\tfloat bv = ld_%s(bias, o);\n", tn);
	sn_buf_puts(b, "#pragma unroll\n\t\tfor (int i = 0; i < 4; i++) {\n"
		       "\t\t\tix m = m0 + tm + i;\n"
		       "\t\t\tif (m < MM)\n");
	cg_conv_store(b, cv, epi, "\t\t\t\t", "y_off(m, o)", cv->bias ? "acc[i][j] + bv" : "acc[i][j]");
	sn_buf_puts(b, "\t\t}\n\t}\n}\n");
}

/* ---- tensor-core f16/bf16 kernel ---- */

/* vec_a: A in 16-byte vectors of 8 channels (NHWC with CG % 8 == 0);
 * vec_b: weights in 16-byte vectors (K % 8 == 0). */
static void emit_mma(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, bool vec_a, bool vec_b)
{
	const char *tn = ir_dtype_name(cv->t);
	const char *mt = cv->t == IR_BF16 ? "bf16" : "f16";
	sn_buf_printf(b, "static __device__ __forceinline__ void mma(float *c, const unsigned *a, const unsigned *b)\n{\n"
			 "\tasm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 "
			 "{%%0,%%1,%%2,%%3}, {%%4,%%5,%%6,%%7}, {%%8,%%9}, {%%0,%%1,%%2,%%3};\"\n"
			 "\t\t     : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
			 "\t\t     : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n}\n\n",
		      mt, mt);
	cg_conv_head(b, cv, epi, 128);
	/* rows of 32 k values padded to 40 halves (80 bytes): the fragment
	 * reads of a warp hit 32 distinct banks */
	sn_buf_puts(b, "\t__shared__ __align__(16) unsigned short As[2][64][40], Bs[2][64][40];\n"
		       "\tint tid = threadIdx.x, g = blockIdx.z, lane = tid & 31, warp = tid >> 5;\n"
		       "\tix m0 = (ix)blockIdx.x * 64;\n\tint n0 = blockIdx.y * 64;\n");
	/* staging registers and the loads of one K slice */
	if (vec_a)
		sn_buf_puts(b, "\t/* A: 64 rows x 4 vectors of 8 channels, 2 per thread */\n"
			       "\tint akv = tid % 4, am = tid / 4; /* rows am + 32*i */\n"
			       "\tpix px[2];\n\tpx[0] = pixel(m0 + am, g);\n\tpx[1] = pixel(m0 + am + 32, g);\n"
			       "\tuint4 ra[2];\n");
	else if (cv->nhwc)
		sn_buf_puts(b, "\t/* A: 64 rows x 32 k, 16 per thread, k across threads */\n"
			       "\tint ak = tid % 32, am = tid / 32; /* rows am + 4*i */\n"
			       "\tunsigned short ra[16];\n");
	else
		sn_buf_puts(b, "\t/* A: 64 rows x 32 k, 16 per thread, rows across threads */\n"
			       "\tint am = tid % 64, ak = tid / 64; /* k slices ak + 2*i */\n"
			       "\tpix px0 = pixel(m0 + am, g);\n"
			       "\tunsigned short ra[16];\n");
	if (vec_b)
		sn_buf_puts(b, "\tint bkv = tid % 4, bn = tid / 4; /* channels bn + 32*i */\n\tuint4 rb[2];\n");
	else
		sn_buf_puts(b, "\tint bk = tid % 32, bn = tid / 32; /* channels bn + 4*i */\n\tunsigned short rb[16];\n");
	sn_buf_puts(b, "#define LOAD(k0) do { \\\n");
	if (vec_a)
		sn_buf_puts(b, "\t\t_Pragma(\"unroll\") for (int i = 0; i < 2; i++) { \\\n"
			       "\t\t\tbool ok; \\\n"
			       "\t\t\tix off = a_off(px[i], (k0) + akv * 8, &ok); \\\n"
			       "\t\t\tra[i] = ok ? *(const uint4 *)(x + off) : make_uint4(0, 0, 0, 0); \\\n"
			       "\t\t} \\\n");
	else if (cv->nhwc)
		sn_buf_puts(b, "\t\t_Pragma(\"unroll\") for (int i = 0; i < 16; i++) { \\\n"
			       "\t\t\tbool ok; \\\n"
			       "\t\t\tix off = a_off(pixel(m0 + am + 4 * i, g), (k0) + ak, &ok); \\\n"
			       "\t\t\tra[i] = ok ? x[off] : (unsigned short)0; \\\n"
			       "\t\t} \\\n");
	else
		sn_buf_puts(b, "\t\t_Pragma(\"unroll\") for (int i = 0; i < 16; i++) { \\\n"
			       "\t\t\tbool ok; \\\n"
			       "\t\t\tix off = a_off(px0, (k0) + ak + 2 * i, &ok); \\\n"
			       "\t\t\tra[i] = ok ? x[off] : (unsigned short)0; \\\n"
			       "\t\t} \\\n");
	if (vec_b)
		sn_buf_puts(b, "\t\t_Pragma(\"unroll\") for (int i = 0; i < 2; i++) { \\\n"
			       "\t\t\tint o = n0 + bn + 32 * i, kb = (k0) + bkv * 8; \\\n"
			       "\t\t\trb[i] = o < OG && kb < KK ? *(const uint4 *)(wt + ((ix)g * OG + o) * KK + kb) \\\n"
			       "\t\t\t\t\t\t : make_uint4(0, 0, 0, 0); \\\n"
			       "\t\t} \\\n");
	else
		sn_buf_puts(b, "\t\t_Pragma(\"unroll\") for (int i = 0; i < 16; i++) { \\\n"
			       "\t\t\tint o = n0 + bn + 4 * i, kb = (k0) + bk; \\\n"
			       "\t\t\trb[i] = o < OG && kb < KK ? wt[((ix)g * OG + o) * KK + kb] : (unsigned short)0; \\\n"
			       "\t\t} \\\n");
	sn_buf_puts(b, "\t} while (0)\n#define STORE(buf) do { \\\n");
	if (vec_a)
		sn_buf_puts(b, "\t\t*(uint4 *)&As[buf][am][akv * 8] = ra[0]; \\\n"
			       "\t\t*(uint4 *)&As[buf][am + 32][akv * 8] = ra[1]; \\\n");
	else if (cv->nhwc)
		sn_buf_puts(b, "\t\t_Pragma(\"unroll\") for (int i = 0; i < 16; i++) \\\n"
			       "\t\t\tAs[buf][am + 4 * i][ak] = ra[i]; \\\n");
	else
		sn_buf_puts(b, "\t\t_Pragma(\"unroll\") for (int i = 0; i < 16; i++) \\\n"
			       "\t\t\tAs[buf][am][ak + 2 * i] = ra[i]; \\\n");
	if (vec_b)
		sn_buf_puts(b, "\t\t*(uint4 *)&Bs[buf][bn][bkv * 8] = rb[0]; \\\n"
			       "\t\t*(uint4 *)&Bs[buf][bn + 32][bkv * 8] = rb[1]; \\\n");
	else
		sn_buf_puts(b, "\t\t_Pragma(\"unroll\") for (int i = 0; i < 16; i++) \\\n"
			       "\t\t\tBs[buf][bn + 4 * i][bk] = rb[i]; \\\n");
	sn_buf_puts(b, "\t} while (0)\n");
	/* warps 2x2, each 32 rows x 32 channels: 2 m16 x 4 n8 fragments */
	sn_buf_puts(b, "\tint wm = (warp >> 1) * 32, wn = (warp & 1) * 32, gid = lane >> 2, tig = lane & 3;\n"
		       "\tfloat acc[2][4][4];\n"
		       "#pragma unroll\n\tfor (int i = 0; i < 2; i++)\n"
		       "#pragma unroll\n\t\tfor (int j = 0; j < 4; j++)\n"
		       "#pragma unroll\n\t\t\tfor (int q = 0; q < 4; q++)\n\t\t\t\tacc[i][j][q] = 0.0f;\n"
		       "\tconst int tiles = (KK + 31) / 32;\n"
		       "\tLOAD(0);\n\tSTORE(0);\n\t__syncthreads();\n"
		       "\tfor (int t = 0; t < tiles; t++) {\n"
		       "\t\tint cur = t & 1;\n"
		       "\t\tif (t + 1 < tiles)\n\t\t\tLOAD((t + 1) * 32);\n"
		       "#pragma unroll\n\t\tfor (int kk = 0; kk < 32; kk += 16) {\n"
		       "\t\t\tunsigned af[2][4], bf[4][2];\n"
		       "#pragma unroll\n\t\t\tfor (int i = 0; i < 2; i++) {\n"
		       "\t\t\t\tint row = wm + i * 16 + gid;\n"
		       "\t\t\t\taf[i][0] = *(const unsigned *)&As[cur][row][kk + tig * 2];\n"
		       "\t\t\t\taf[i][1] = *(const unsigned *)&As[cur][row + 8][kk + tig * 2];\n"
		       "\t\t\t\taf[i][2] = *(const unsigned *)&As[cur][row][kk + tig * 2 + 8];\n"
		       "\t\t\t\taf[i][3] = *(const unsigned *)&As[cur][row + 8][kk + tig * 2 + 8];\n"
		       "\t\t\t}\n"
		       "#pragma unroll\n\t\t\tfor (int j = 0; j < 4; j++) {\n"
		       "\t\t\t\tint col = wn + j * 8 + gid;\n"
		       "\t\t\t\tbf[j][0] = *(const unsigned *)&Bs[cur][col][kk + tig * 2];\n"
		       "\t\t\t\tbf[j][1] = *(const unsigned *)&Bs[cur][col][kk + tig * 2 + 8];\n"
		       "\t\t\t}\n"
		       "#pragma unroll\n\t\t\tfor (int i = 0; i < 2; i++)\n"
		       "#pragma unroll\n\t\t\t\tfor (int j = 0; j < 4; j++)\n"
		       "\t\t\t\t\tmma(acc[i][j], af[i], bf[j]);\n"
		       "\t\t}\n"
		       "\t\tif (t + 1 < tiles)\n\t\t\tSTORE(cur ^ 1);\n"
		       "\t\t__syncthreads();\n\t}\n"
		       "#undef LOAD\n#undef STORE\n");
	/* accumulator fragment: c0,c1 at (gid, 2*tig + {0,1}), c2,c3 at row gid + 8 */
	sn_buf_puts(b, "#pragma unroll\n\tfor (int j = 0; j < 4; j++)\n"
		       "#pragma unroll\n\t\tfor (int q = 0; q < 2; q++) {\n"
		       "\t\t\tint o = n0 + wn + j * 8 + tig * 2 + q;\n"
		       "\t\t\tif (o >= OG)\n\t\t\t\tcontinue;\n"
		       "\t\t\to += g * OG;\n");
	if (cv->bias)
		sn_buf_printf(b, "\t\t\tfloat bv = ld_%s(bias, o);\n", tn);
	sn_buf_puts(b, "#pragma unroll\n\t\t\tfor (int i = 0; i < 2; i++)\n"
		       "#pragma unroll\n\t\t\t\tfor (int h = 0; h < 2; h++) {\n"
		       "\t\t\t\t\tix m = m0 + wm + i * 16 + gid + h * 8;\n"
		       "\t\t\t\t\tif (m < MM)\n");
	cg_conv_store(b, cv, epi, "\t\t\t\t\t\t", "y_off(m, o)",
		      cv->bias ? "acc[i][j][h * 2 + q] + bv" : "acc[i][j][h * 2 + q]");
	sn_buf_puts(b, "\t\t\t\t}\n\t\t}\n}\n");
}

/* ---- direct kernel: a thread per output ---- */
static void emit_direct(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi)
{
	const char *tn = ir_dtype_name(cv->t);
	bool isf = ir_dtype_is_float(cv->t);
	if (!isf) {
		const char *lo = "(-9223372036854775807LL - 1)", *hi = "9223372036854775807LL";
		switch (cv->t) {
		case IR_I32: lo = "(-2147483647LL - 1)"; hi = "2147483647LL"; break;
		case IR_I8: lo = "-128LL"; hi = "127LL"; break;
		case IR_U8: lo = "0LL"; hi = "255LL"; break;
		default: break;
		}
		/* the reference rounds through double and saturates */
		sn_buf_printf(b, "static __device__ __forceinline__ long long sat(long long v)\n{\n"
				 "\treturn v < %s ? %s : v > %s ? %s : v;\n}\n\n", lo, lo, hi, hi);
	}
	cg_conv_head(b, cv, epi, 256);
	sn_buf_printf(b, "\ttypedef %s acc_t;\n", isf ? "float" : "long long");
	sn_buf_puts(b, "\tfor (ix i = (ix)blockIdx.x * 256 + threadIdx.x; i < (ix)MM * CO; i += (ix)gridDim.x * 256) {\n");
	if (cv->nhwc)
		sn_buf_puts(b, "\t\tint o = (int)(i % CO);\n\t\tix m = i / CO;\n");
	else
		sn_buf_puts(b, "\t\tix q = i % ((ix)HO * WO), nn = i / ((ix)HO * WO * CO);\n"
			       "\t\tint o = (int)(i / ((ix)HO * WO) % CO);\n\t\tix m = nn * HO * WO + q;\n");
	sn_buf_puts(b, "\t\tint g = o / OG;\n"
		       "\t\tix n = m / (HO * WO);\n"
		       "\t\tint p = (int)(m % (HO * WO)), hi0 = p / WO * SH - PT, wi0 = p % WO * SW - PL;\n"
		       "\t\tacc_t acc = 0;\n"
		       "\t\tfor (int r = 0; r < KH; r++) {\n"
		       "\t\t\tint h = hi0 + r * DH;\n"
		       "\t\t\tif ((unsigned)h >= (unsigned)CH)\n\t\t\t\tcontinue;\n"
		       "\t\t\tfor (int s = 0; s < KW; s++) {\n"
		       "\t\t\t\tint w = wi0 + s * DW;\n"
		       "\t\t\t\tif ((unsigned)w >= (unsigned)CW)\n\t\t\t\t\tcontinue;\n"
		       "\t\t\t\tfor (int c = 0; c < CG; c++) {\n");
	if (cv->nhwc)
		sn_buf_puts(b, "\t\t\t\t\tix xo = ((n * CH + h) * CW + w) * CC + g * CG + c;\n"
			       "\t\t\t\t\tix wo_ = (((ix)o * KH + r) * KW + s) * CG + c;\n");
	else
		sn_buf_puts(b, "\t\t\t\t\tix xo = ((n * CC + g * CG + c) * CH + h) * CW + w;\n"
			       "\t\t\t\t\tix wo_ = (((ix)o * CG + c) * KH + r) * KW + s;\n");
	if (isf)
		sn_buf_printf(b, "\t\t\t\t\tacc = fmaf(ld_%s(x, xo), ld_%s(wt, wo_), acc);\n", tn, tn);
	else
		sn_buf_printf(b, "\t\t\t\t\tacc = (acc_t)((unsigned long long)acc + (unsigned long long)ld_%s(x, xo) *"
				 " (unsigned long long)ld_%s(wt, wo_));\n", tn, tn);
	sn_buf_puts(b, "\t\t\t\t}\n\t\t\t}\n\t\t}\n");
	if (cv->bias)
		sn_buf_printf(b, "\t\tacc += (acc_t)ld_%s(bias, o);\n", tn);
	if (isf)
		cg_conv_store(b, cv, epi, "\t\t", "i", "acc");
	else
		sn_buf_printf(b, "\t\tst_%s(y, i, sat(acc));\n", tn);
	sn_buf_puts(b, "\t}\n}\n");
}

/* variants (cg_config.variant) */
enum { V_DEFAULT, V_DIRECT, V_SIMT, V_MMA, V_TC, V_DW, V_STEM, V_WG, V_WGP, V_WGC, V_DWT, V_COUNT };
static const char *const vnames[V_COUNT] = {"default", "direct", "SIMT", "mma.sync (register double buffer)",
					    "tensor-core pipeline", "depthwise", "few input channels (stem)", "wgmma",
					    "wgmma with a producer warpgroup", "wgmma split-K over a cluster",
					    "depthwise, tiled in shared memory"};

/* Why variant v cannot compute cv on tg, or NULL when it can. */
static const char *cannot(int v, const cg_conv *cv, const cg_target *tg)
{
	bool isf = ir_dtype_is_float(cv->t), half = cv->t == IR_F16 || cv->t == IR_BF16;
	switch (v) {
	case V_DIRECT: return NULL;
	case V_SIMT: return isf ? NULL : "it takes floats";
	case V_MMA: return !half ? "it takes f16 and bf16" : tg->sm < 80 ? "it needs sm_80" : NULL;
	case V_TC:
		if (!half && !(cv->t == IR_F32 && tg->tf32))
			return "it takes f16, bf16, and f32 under --precision tf32";
		if (tg->sm < 80)
			return "it needs sm_80";
		if (!cv->nhwc)
			return "it takes NHWC";
		if (cv->cg % (half ? 8 : 4) || cv->c % (half ? 8 : 4))
			return "its 16-byte loads need channels per group that are a multiple of 8 (4 for f32)";
		return NULL;
	case V_DW:
		if (cv->t != IR_F32 && !half)
			return "it takes f32, f16 and bf16";
		return cv->cg == 1 && cv->groups > 1 ? NULL : "it needs one input channel per group";
	case V_STEM: return cg_conv_stem_cannot(cv, tg);
	case V_WG: return cg_conv_wg_cannot(cv, tg);
	case V_WGP: return cg_conv_wg_ws_cannot(cv, tg);
	case V_WGC: return cg_conv_wg_cannot(cv, tg);
	case V_DWT: return cg_conv_dw_cannot(cv);
	default: return "there is no such variant";
	}
}

bool cg_conv_is_gemm(const ir_graph *g, ir_ref r, const cg_target *tg)
{
	const ir_node *nd = &g->nodes[r];
	cg_conv cv = {0};
	sn_err e = {0};
	if (nd->op != IR_OP_conv2d || (tg && tg->conv_kernels) || conv_dims(g, nd, &cv, &e) != SN_OK)
		return false;
	bool pad0 = true;
	for (int i = 0; i < 4; i++)
		pad0 &= nd->attrs->pad.v[i] == 0;
	bool product = cv.nhwc && cv.kh == 1 && cv.kw == 1 && cv.sh == 1 && cv.sw == 1 && pad0 && cv.groups == 1 &&
		       cv.ho == cv.h && cv.wo == cv.w && (cv.t == IR_F32 || cv.t == IR_F16 || cv.t == IR_BF16) &&
		       cv.m > 0 && cv.o > 0 && cv.c > 0;
	/* a small product (under 2^29 flops: ResNet-50's 1x1s at batch 1,
	 * 0.1 to 0.2 GFLOP, against 3.3 and up at batch 32) stays on the
	 * wgmma kernel where it applies: cuBLASLt took 8 to 13 us on each of
	 * those on the H100, the kernel 4 to 7 (PERF.md, 2026-11-23 session 4) */
	if (product && tg && 2.0 * (double)cv.m * (double)cv.o * (double)cv.c < 536870912.0 && !cg_conv_wg_cannot(&cv, tg))
		return false;
	return product;
}

int cg_render_conv(const ir_graph *g, ir_ref r, const cg_target *tg, const cg_config *want, cg_step *st, sn_err *e)
{
	const ir_node *nd = &g->nodes[r];
	cg_conv cv = {0};
	if (conv_dims(g, nd, &cv, e) != SN_OK)
		return e->code;
	if (!want && !st->epi && cg_conv_is_gemm(g, r, tg)) {
		/* Y[m][o] = X[m][:] . W[o][:] (+ bias[o]): the layout of linear */
		st->kind = CG_STEP_GEMM;
		st->g = (cg_gemm){
			.a = nd->in[0], .b = nd->in[1], .bias = nd->nin > 2 ? nd->in[2] : IR_NONE, .out = r, .c = IR_NONE,
			.batch = 1, .m = cv.m, .n = cv.o, .k = cv.c,
			.stride_a = cv.m * cv.c, .stride_b = 0, .stride_c = cv.m * cv.o,
			.trans_b = true, .dtype = cv.t, .act = CG_ACT_NONE,
			.tf32 = tg && tg->tf32 && cv.t == IR_F32,
		};
		return SN_OK;
	}
	const cg_epilogue *epi = st->epi;
	bool isf = ir_dtype_is_float(cv.t);
	bool half = cv.t == IR_F16 || cv.t == IR_BF16;
	if (epi && !isf)
		return sn_errf(e, SN_EINTERNAL, "conv2d: an epilogue on an integer conv");
	/* the default: the pipelined tensor-core kernel wherever it applies,
	 * depthwise for one channel per group (tiled where it applies), then
	 * the older kernels */
	int kind = !cannot(V_WG, &cv, tg)		  ? V_WG
		 : !cannot(V_TC, &cv, tg)		  ? V_TC
		 : !cannot(V_DWT, &cv, tg)		  ? V_DWT
		 : !cannot(V_DW, &cv, tg)		  ? V_DW
		 : !isf || cv.og < 16			  ? V_DIRECT
		 : cv.c < 8 && !cannot(V_STEM, &cv, tg) ? V_STEM
		 : half && tg->sm >= 80 ? V_MMA
					: V_SIMT;
	cg_conv_tc tc = {0};
	if (want) {
		static const char *const other[] = {"block", "vec", "rows"};
		const int32_t vals[] = {want->block, want->vec, want->rows};
		for (size_t i = 0; i < SN_COUNT(other); i++)
			if (vals[i] && !(i == 1 && want->variant == V_DWT)) /* vec: variant 10's vectors a block */
				return sn_errf(e, SN_EUSAGE,
					       "conv2d: %s is not a conv2d config field (variant, tile_m, tile_n, tile_k, warps, stages, split_k)",
					       other[i]);
		if (want->variant) {
			const char *why = cannot(want->variant, &cv, tg);
			if (why)
				return sn_errf(e, SN_EUSAGE, "conv2d: variant %d (%s) cannot run this conv: %s", (int)want->variant,
					       want->variant > 0 && want->variant < V_COUNT ? vnames[want->variant] : "?", why);
			kind = want->variant;
		}
		bool tiles = want->tile_m || want->tile_n || want->tile_k || want->warps || want->stages || want->split_k;
		if (kind == V_DWT && (want->warps || want->stages || want->split_k))
			return sn_errf(e, SN_EUSAGE, "conv2d: variant 10 (%s) takes tile_m, tile_n, tile_k and vec, not %s",
				       vnames[V_DWT], want->warps ? "warps" : want->stages ? "stages" : "split_k");
		if (tiles && kind != V_DWT && kind != V_TC && kind != V_WG && kind != V_WGP && kind != V_WGC)
			return sn_errf(e, SN_EUSAGE,
				       "conv2d: %s applies to variants %d (%s), %d (%s), %d (%s) and %d (%s) only, not to %s",
				       want->tile_m ? "tile_m" : want->tile_n ? "tile_n" : want->tile_k ? "tile_k"
				       : want->warps ? "warps" : want->stages ? "stages" : "split_k",
				       V_TC, vnames[V_TC], V_WG, vnames[V_WG], V_WGP, vnames[V_WGP], V_WGC, vnames[V_WGC],
				       vnames[kind]);
	}
	/* the default on sm_90 for f16/bf16: variant 8 where its own default
	 * takes a tile of at least 128 rows (10-20 % faster than variant 7 on
	 * ResNet-50's 3x3s of layers 1 to 3 and its stride-2 1x1s, PERF.md
	 * 2026-11-23 session 3); variant 7 on grids too small for those
	 * (layer 4's 1568 rows: 64x128 of one warpgroup), where 7 won */
	bool asked = want && (want->variant || want->tile_m || want->tile_n || want->tile_k || want->warps ||
			      want->stages || want->split_k);
	if (kind == V_WG && !asked && !cannot(V_WGP, &cv, tg)) {
		cg_conv_wg ws = cg_conv_wg_ws_default(&cv);
		if (ws.tm >= 128)
			kind = V_WGP;
	}
	/* where that default's grid fills under half the SMs (batch 1):
	 * narrower tiles, split over the k of a cluster where the estimate
	 * says so (variant 9; cg_conv_wg_split_default); asked for alone,
	 * variant 9 takes that, or variant 7's default over 2 blocks */
	cg_conv_wg split = {0};
	bool have_split = false;
	if ((kind == V_WG || kind == V_WGP) && !asked) {
		cg_conv_wg d = kind == V_WGP ? cg_conv_wg_ws_default(&cv) : cg_conv_wg_default(&cv, !half);
		if ((have_split = cg_conv_wg_split_default(&cv, !half, &d, &split)))
			kind = split.cl > 1 ? V_WGC : V_WG;
	} else if (kind == V_WGC) {
		cg_conv_wg d = cg_conv_wg_default(&cv, !half);
		if (!cg_conv_wg_split_default(&cv, !half, &d, &split) || split.cl < 2) {
			split = d;
			split.cl = 2;
		}
		have_split = true;
	}
	cg_conv_wg wgc = {0};
	if (kind == V_WG || kind == V_WGP || kind == V_WGC) {
		wgc = have_split ? split : kind == V_WGP ? cg_conv_wg_ws_default(&cv) : cg_conv_wg_default(&cv, !half);
		wgc.b_rounded = !half && cg_tf32_weight(g, nd->in[1], tg);
		if (want && (want->tile_m || want->tile_n || want->tile_k || want->warps || want->stages || want->split_k)) {
			int tke = half ? 64 : 32;
			if (want->tile_k && want->tile_k != tke)
				return sn_errf(e, SN_EUSAGE, "conv2d (wgmma): tile_k %d: its slices are 128 bytes, tile_k %d for %s",
					       (int)want->tile_k, tke, half ? "f16/bf16" : "tf32");
			if (kind == V_WGC && want->split_k == 1)
				return sn_errf(e, SN_EUSAGE, "conv2d (wgmma, split-K over a cluster): split_k 1: 2 to 8 blocks "
					       "(variant 7 is the kernel of one)");
			/* variant 9: split_k blocks of a cluster (the default's
			 * unless asked); 7: k groups, one unless asked */
			wgc.kg = kind == V_WGC ? 1 : want->split_k;
			wgc.cl = kind == V_WGC ? (want->split_k ? want->split_k : wgc.cl) : 0;
			wgc.ws = kind == V_WGP;
			if (want->tile_m)
				wgc.tm = want->tile_m;
			if (want->tile_n)
				wgc.tn = want->tile_n;
			if (want->warps)
				wgc.warps = want->warps;
			if (want->stages)
				wgc.stages = want->stages;
			if (cg_conv_wg_check(&cv, &wgc, e) != SN_OK)
				return e->code;
		}
	}
	if (kind == V_TC) {
		tc = cg_conv_tc_default(&cv, tg, !half);
		if (want && (want->tile_m || want->tile_n || want->tile_k || want->warps || want->stages || want->split_k)) {
			tc.wk = want->split_k; /* one k group unless asked */
			if (want->tile_m)
				tc.tm = want->tile_m;
			if (want->tile_n)
				tc.tn = want->tile_n;
			if (want->tile_k)
				tc.tk = want->tile_k;
			if (want->warps)
				tc.warps = want->warps;
			if (want->stages)
				tc.stages = want->stages;
			if (cg_conv_tc_check(&cv, tg, &tc, e) != SN_OK)
				return e->code;
		}
	}
	bool vec_a = kind == V_MMA && cv.nhwc && cv.cg % 8 == 0 && cv.c % 8 == 0;
	bool vec_b = kind == V_MMA && cv.k % 8 == 0;
	bool wgk = kind == V_WG || kind == V_WGP || kind == V_WGC;
	int tm = kind == V_TC ? tc.tm : wgk ? wgc.tm : 64, tn = kind == V_TC ? tc.tn : wgk ? wgc.tn : 64;
	int dwv = 1; /* depthwise: channels per thread */
	if (kind == V_DW && cv.nhwc) {
		int v16 = (int)(16 / ir_dtype_size(cv.t));
		dwv = cv.og == 1 && cv.c % v16 == 0 ? v16 : 1;
	}
	cg_conv_dw dwp = {0};
	if (kind == V_DWT && !cg_conv_dw_plan(&cv, want, &dwp))
		return want && (want->tile_m || want->tile_n || want->tile_k || want->vec)
			       ? sn_errf(e, SN_EUSAGE, "conv2d: variant 10 (%s): tile_m %d, tile_n %d, tile_k %d, vec %d do not "
					 "fit (tile_k 1 to 8, vec dividing the channel vectors, 99 KB of shared memory, "
					 "1024 threads)",
					 vnames[V_DWT], (int)want->tile_m, (int)want->tile_n, (int)want->tile_k, (int)want->vec)
			       : sn_errf(e, SN_EINTERNAL, "conv2d: the tiled depthwise kernel does not fit");
	int64_t mt = (cv.m + tm - 1) / tm, nt = (cv.og + tn - 1) / tn;
	bool tiled = kind == V_SIMT || kind == V_MMA || kind == V_TC || wgk;
	if (tiled && (mt * (kind == V_WGC ? 8 : 1) > 0x7fffffff || nt > 65535 || cv.groups > 65535))
		return sn_errf(e, SN_EINPUT, "conv2d: too large for one launch");
	if (cv.k > 0x7fffffff / 2 || cv.og > 0x7fffffff / 2)
		return sn_errf(e, SN_EINPUT, "conv2d: reduction too large");
	char cfg[256];
	switch (kind) {
	case V_DIRECT:
		snprintf(cfg, sizeof cfg, "direct: a thread per output, %s accumulation", isf ? "fp32" : "64-bit integer");
		break;
	case V_STEM:
		snprintf(cfg, sizeof cfg, "implicit GEMM, K as (filter row, KW x C): M=%lld N=%lld K=%lld; %s, input rows and "
			 "weights staged in shared memory",
			 (long long)cv.m, (long long)cv.og, (long long)cv.k, half ? "mma.sync m16n8k16" : "mma.sync m16n8k8 tf32");
		break;
	case V_DW:
		snprintf(cfg, sizeof cfg, "depthwise: a thread per output pixel and %d channel%s, fp32 accumulation", dwv,
			 dwv > 1 ? "s" : "");
		break;
	case V_DWT:
		if (cv.nhwc)
			snprintf(cfg, sizeof cfg,
				 "depthwise, tiled: %dx%d outputs x %d channels a block (%u threads of %d outputs x %d "
				 "channels), input tile and filter in shared memory, fp32 accumulation",
				 dwp.th, dwp.rw * dwp.ncx, dwp.nv * dwp.vec, dwp.threads, dwp.rw, dwp.vec);
		else
			snprintf(cfg, sizeof cfg,
				 "depthwise, tiled: %dx%d outputs x %d planes a block (%u threads of %d outputs), input "
				 "tile and filter in shared memory, fp32 accumulation",
				 dwp.th, dwp.rw * dwp.ncx, dwp.pb, dwp.threads, dwp.rw);
		break;
	case V_TC:
		snprintf(cfg, sizeof cfg,
			 "implicit GEMM per group: M=%lld N=%lld K=%lld; %s, %dx%dx%d tiles, %d warps (%dx%dx%d), %d stages, "
			 "cp.async + ldmatrix",
			 (long long)cv.m, (long long)cv.og, (long long)cv.k,
			 tc.tf32 ? "mma.sync m16n8k8 tf32" : "mma.sync m16n8k16", tc.tm, tc.tn, tc.tk, tc.warps, tc.wm, tc.wn,
			 tc.wk > 1 ? tc.wk : 1, tc.stages);
		break;
	case V_WG:
		snprintf(cfg, sizeof cfg,
			 "implicit GEMM per group: M=%lld N=%lld K=%lld; wgmma m64n%dk%d %s, %dx%d tiles of 128-byte k slices, "
			 "%d warpgroups (%d m x %d k, %d m64 each), %d stages, cp.async, 128-byte swizzle",
			 (long long)cv.m, (long long)cv.og, (long long)cv.k, wgc.tn, half ? 16 : 8,
			 half ? (cv.t == IR_BF16 ? "bf16" : "f16") : "tf32", wgc.tm, wgc.tn, wgc.warps / 4, wgc.mwg, wgc.kg,
			 wgc.mi, wgc.stages);
		break;
	case V_WGC:
		snprintf(cfg, sizeof cfg,
			 "implicit GEMM per group: M=%lld N=%lld K=%lld; wgmma m64n%dk%d %s, %dx%d tiles of 128-byte k slices, "
			 "%d warpgroups, %d stages, cp.async, 128-byte swizzle; K split over clusters of %d blocks, summed "
			 "through DSMEM",
			 (long long)cv.m, (long long)cv.og, (long long)cv.k, wgc.tn, half ? 16 : 8,
			 half ? (cv.t == IR_BF16 ? "bf16" : "f16") : "tf32", wgc.tm, wgc.tn, wgc.warps / 4, wgc.stages, wgc.cl);
		break;
	case V_WGP:
		snprintf(cfg, sizeof cfg,
			 "implicit GEMM per group: M=%lld N=%lld K=%lld; wgmma m64n%dk16 %s, %dx%d tiles of 128-byte k slices, "
			 "%d consumer warpgroups (%d m64 each) and a producer (cp.async, mbarriers), %d stages, 128-byte swizzle",
			 (long long)cv.m, (long long)cv.og, (long long)cv.k, wgc.tn, cv.t == IR_BF16 ? "bf16" : "f16", wgc.tm,
			 wgc.tn, wgc.warps / 4, wgc.mi, wgc.stages);
		break;
	default:
		snprintf(cfg, sizeof cfg, "implicit GEMM per group: M=%lld N=%lld K=%lld; %s%s%s",
			 (long long)cv.m, (long long)cv.og, (long long)cv.k,
			 kind == V_MMA ? "mma.sync m16n8k16, 64x64x32 tiles, 4 warps" : "SIMT fp32 FMA, 64x64x16 tiles, 4x4 per thread",
			 vec_a ? ", 16-byte A loads" : "", vec_b ? ", 16-byte B loads" : "");
	}
	sn_buf b = {0};
	cg_emit_spec_st(&b, g, r, cfg, st);
	sn_buf_puts(&b, "\n");
	/* the epilogue's function first: it carries its own dtype helpers,
	 * which then are not emitted twice */
	if (epi) {
		sn_buf_puts(&b, epi->fn);
		sn_buf_puts(&b, "\n");
	}
	cg_emit_dtype_helpers(&b, cv.t);
	if (epi)
		cg_emit_dtype_helpers(&b, epi->dtype);
	sn_buf_puts(&b, "\n");
	cg_conv_consts(&b, &cv);
	cg_kernel *k = &st->k;
	memset(k->grid, 0, sizeof k->grid);
	k->smem = 0;
	if (kind == V_STEM) {
		unsigned threads = 0;
		if (cg_conv_stem_block(&cv, tg, !half, k->grid, &threads, &k->smem) != 0) {
			sn_buf_free(&b);
			return sn_errf(e, SN_EINTERNAL, "conv2d: the stem kernel does not fit");
		}
		cg_conv_emit_stem(&b, &cv, epi, tg, !half);
		k->block[0] = threads;
		k->cfg = (cg_config){.variant = V_STEM, .block = (int32_t)threads};
	} else if (kind == V_DWT) {
		cg_conv_emit_dw(&b, &cv, epi, &dwp);
		k->grid[0] = dwp.grid[0];
		k->grid[1] = dwp.grid[1];
		k->grid[2] = 1;
		k->block[0] = dwp.threads;
		k->smem = dwp.smem;
		k->cfg = (cg_config){.variant = V_DWT, .block = (int32_t)dwp.threads, .tile_m = dwp.th,
				     .tile_n = dwp.rw * dwp.ncx, .tile_k = dwp.rw, .vec = cv.nhwc ? dwp.nv : dwp.pb};
	} else if (kind == V_DIRECT || kind == V_DW) {
		int64_t work = kind == V_DW && cv.nhwc ? cv.m * (cv.o / dwv) : cv.m * cv.o;
		if (kind == V_DIRECT)
			emit_direct(&b, &cv, epi);
		else
			cg_conv_emit_depthwise(&b, &cv, epi, dwv);
		int64_t blocks = (work + 255) / 256;
		k->grid[0] = (unsigned)(blocks < 1 ? 1 : blocks < (1 << 20) ? blocks : (1 << 20));
		k->grid[1] = k->grid[2] = 1;
		k->block[0] = 256;
		k->cfg = (cg_config){.variant = kind, .block = 256};
	} else {
		cg_conv_index_fns(&b, cv.nhwc);
		if (wgk) {
			int thr = 32 * wgc.warps + (wgc.ws ? 128 : 0);
			cg_conv_emit_wg(&b, &cv, epi, &wgc);
			k->smem = cg_conv_wg_smem(&wgc);
			k->block[0] = (unsigned)thr;
			k->cfg = (cg_config){.variant = kind, .block = thr, .tile_m = wgc.tm, .tile_n = wgc.tn,
					     .tile_k = half ? 64 : 32, .warps = wgc.warps, .stages = wgc.stages,
					     .split_k = kind == V_WGC ? wgc.cl : wgc.kg > 1 ? wgc.kg : 0};
		} else if (kind == V_TC) {
			cg_conv_emit_tc(&b, &cv, epi, &tc);
			k->smem = cg_conv_tc_smem(&tc, tc.tf32 ? 4 : 2);
			k->block[0] = (unsigned)(32 * tc.warps);
			k->cfg = (cg_config){.variant = V_TC, .block = 32 * tc.warps, .tile_m = tc.tm, .tile_n = tc.tn,
					     .tile_k = tc.tk, .warps = tc.warps, .stages = tc.stages,
					     .split_k = tc.wk > 1 ? tc.wk : 0};
		} else if (kind == V_MMA) {
			emit_mma(&b, &cv, epi, vec_a, vec_b);
			k->block[0] = 128;
			k->cfg = (cg_config){.variant = V_MMA, .block = 128, .tile_m = 64, .tile_n = 64, .tile_k = 32, .warps = 4,
					     .stages = 2};
		} else {
			emit_simt(&b, &cv, epi);
			k->block[0] = 256;
			k->cfg = (cg_config){.variant = V_SIMT, .block = 256, .tile_m = 64, .tile_n = 64, .tile_k = 16, .stages = 2};
		}
		k->grid[0] = (unsigned)(mt > 0 ? mt : 1) * (unsigned)(kind == V_WGC ? wgc.cl : 1);
		k->grid[1] = (unsigned)(nt > 0 ? nt : 1);
		k->grid[2] = (unsigned)cv.groups;
	}
	k->block[1] = k->block[2] = 1;
	k->nbufs = 0;
	for (uint32_t i = 0; i < nd->nin; i++)
		k->bufs[k->nbufs++] = nd->in[i];
	if (epi) {
		for (uint32_t i = 0; i < epi->nex; i++)
			k->bufs[k->nbufs++] = epi->ex[i];
		k->bufs[k->nbufs++] = epi->out;
	} else {
		k->bufs[k->nbufs++] = r;
	}
	st->kind = CG_STEP_KERNEL;
	return cg_finish(k, "conv2d", &b, e);
}
