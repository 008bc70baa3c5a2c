/* cg_conv_wg.c: the wgmma implicit-GEMM conv2d (sm_90, compiled for
 * sm_90a): NHWC, f16/bf16 with fp32 accumulation, or f32 operands
 * rounded to TF32 (wgmma's k8 tf32 form). cg_conv.c's variant 7.
 *
 * The GEMM is cg_conv.c's: per group, M output pixels, N = the group's
 * output channels, K = (r, s, c) with c fastest. In NHWC both operands are
 * K-major: A[m][k] (the im2col rows, gathered on the fly) and the weights
 * B[o][k] = w[o][r][s][c]. A block computes a TM x TN tile of Y.
 *
 * Shared memory: a ring of ST slots, each a slice of 128 bytes of k (64
 * f16/bf16 or 32 f32 values) for the block's TM rows of A and TN rows of
 * B, in the 128-byte swizzle that wgmma's descriptors name (16-byte chunk
 * c of row r at r * 128 + ((c ^ (r & 7)) << 4), 8-row atoms of 1024 bytes
 * on 1024-byte boundaries). Slices arrive through cp.async, 16 bytes per
 * copy (8 channels, or 4 f32, of one (r, s) tap: channels per group must
 * be a multiple of it); padding, rows past M, channels past N and k past K
 * are zero-filled by cp.async's source size 0. Under TF32 each thread
 * rounds the chunks it copied (cvt.rna, as the mma.sync kernel does)
 * before the slice is handed over, A's only when the weights are stored
 * rounded (cg_tf32_weight: the weight image holds them so under TF32,
 * and rounding again is the identity): the tensor cores would truncate, which
 * ran 1.2x faster but put ResNet-50 at 7.4e-3 from fp32 against 6.8e-4
 * (PERF.md, 2026-11-23 session 2); rounding slice t + 1 while slice t's
 * products run gained nothing (bound by shared memory bandwidth, not
 * latency). Each thread fences its copies into the async proxy before
 * the barrier that hands the slot to wgmma.
 *
 * Warpgroups (4 consecutive warps, 128 threads): mwg m groups x kg k
 * groups. Warpgroup (m group q, k group p) multiplies rows
 * [q * mi * 64, (q + 1) * mi * 64) of the tile (mi m64 tiles) against all
 * TN columns (one wgmma m64nTNk16, or k8 for tf32, per m64 tile and
 * k-step; A and B from shared memory, K-major), over k-steps
 * [p, p + 1) x 4 / kg of every slice (a slice is 4 k-steps of 32 bytes).
 * Per slice t: wait for this thread's copies of slice t, fence, barrier
 * (every thread's copies have landed, and every warpgroup's products of
 * slice t - 2 are done), copy slice t + ST - 2 into slice t - 2's slot,
 * issue slice t's products, and wait until at most one group of products
 * (slice t's) is in flight: slice t - 1's products overlap slice t's
 * issue. ST - 2 slices are in flight at a time. The warpgroup index is
 * made provably warp-uniform (__shfl_sync) and no wait sits under a
 * condition, so that ptxas keeps the wgmma pipeline (no C7510).
 *
 * The epilogue stages the tile in shared memory as fp32 (k group p > 0
 * adds its sums to those before it, one barrier each), then the shared
 * way out of cg_conv_tc.c: bias, the fusion epilogue, the cast, 16-byte
 * stores where the channel counts allow.
 *
 * Configs (cg_config, variant 7): tile_m (64 x m groups x mi, mi 1 or 2),
 * tile_n (a multiple of 16 up to 256), warps (4 per warpgroup: 4, 8, 12
 * or 16), stages (3 to 8), split_k (k groups: 1, 2 or 4); tile_k is 64
 * (32 for f32) or unset. */
#include "codegen/cg_conv.h"
#include "codegen/cg_wgmma.h"

#include <stdio.h>

#define WG_SMEM_LIMIT (227u * 1024u)

const char *cg_conv_wg_cannot(const cg_conv *cv, const cg_target *tg)
{
	bool half = cv->t == IR_F16 || cv->t == IR_BF16;
	if (!half && !(cv->t == IR_F32 && tg->tf32))
		return "it takes f16, bf16, and f32 under --precision tf32";
	if (tg->sm != 90)
		return "it needs sm_90 (wgmma, compiled for sm_90a)";
	if (!cv->nhwc)
		return "it takes NHWC";
	if (cv->cg % (half ? 8 : 4) || cv->c % (half ? 8 : 4))
		return "its 16-byte copies need channels per group that are a multiple of 8 (4 for f32)";
	return NULL;
}

unsigned cg_conv_wg_smem(const cg_conv_wg *c)
{
	unsigned ring = (unsigned)(c->stages * (c->tm + c->tn) * 128), out = (unsigned)(c->tm * (c->tn + 4) * 4);
	return (ring > out ? ring : out) + 1024;
}

int cg_conv_wg_check(const cg_conv *cv, cg_conv_wg *c, sn_err *e)
{
	(void)cv;
	if (c->warps != 4 && c->warps != 8 && c->warps != 12 && c->warps != 16)
		return sn_errf(e, SN_EUSAGE, "conv2d (wgmma): warps %d is not 4, 8, 12 or 16 (1 to 4 warpgroups)",
			       c->warps);
	int nwg = c->warps / 4;
	if (c->kg < 1)
		c->kg = 1;
	if ((c->kg != 1 && c->kg != 2 && c->kg != 4) || nwg % c->kg)
		return sn_errf(e, SN_EUSAGE,
			       "conv2d (wgmma): split_k %d: the k groups must be 1, 2 or 4 and divide the %d warpgroups",
			       c->kg, nwg);
	c->mwg = nwg / c->kg;
	if (c->tm < 64 || c->tm % (64 * c->mwg) || (c->tm / (64 * c->mwg) != 1 && c->tm / (64 * c->mwg) != 2))
		return sn_errf(e, SN_EUSAGE,
			       "conv2d (wgmma): tile_m %d must be 64 or 128 rows per m group of warpgroups (%d m groups: "
			       "%d or %d)",
			       c->tm, c->mwg, 64 * c->mwg, 128 * c->mwg);
	c->mi = c->tm / (64 * c->mwg);
	if (c->tn < 16 || c->tn > 256 || c->tn % 16)
		return sn_errf(e, SN_EUSAGE, "conv2d (wgmma): tile_n %d is not a multiple of 16 in [16, 256]", c->tn);
	/* fp32 accumulators per thread against the registers the block's
	 * threads may have, with room for addresses and indices */
	int acc = c->mi * c->tn / 2, cap = 65536 / (c->warps * 32);
	cap = cap > 255 ? 255 : cap;
	if (acc + 64 > cap)
		return sn_errf(e, SN_EUSAGE,
			       "conv2d (wgmma): %d accumulators per thread (tile_m %d, tile_n %d) do not fit the %d registers "
			       "of %d threads with room to spare (at most %d)",
			       acc, c->tm, c->tn, cap, c->warps * 32, cap - 64);
	if (c->stages < 3 || c->stages > 8)
		return sn_errf(e, SN_EUSAGE,
			       "conv2d (wgmma): stages %d is not in [3, 8] (a slot being multiplied, one lagging, one or more "
			       "in flight)",
			       c->stages);
	unsigned smem = cg_conv_wg_smem(c);
	if (smem > WG_SMEM_LIMIT)
		return sn_errf(e, SN_EUSAGE,
			       "conv2d (wgmma): stages %d of a %dx%d tile need %u bytes of shared memory, over sm_90's %u",
			       c->stages, c->tm, c->tn, smem, WG_SMEM_LIMIT);
	return SN_OK;
}

/* The default: among six shapes, the best estimate of the time on the
 * busiest SM, from each shape's rate at full occupancy (q, relative:
 * measured on the H100 over ResNet-50 batch 32's convs, PERF.md
 * 2026-11-23 session 2: 256x128 in two m64 tiles per warpgroup and
 * 128x256 fastest, 128x128 0.94 of them, 64x128 0.71, 128x64 0.45, 64x64
 * 0.49: narrow wgmma N reads A from shared memory too often) and the
 * grid: blocks over whole rounds of the 132 SMs, 0.85 when an SM holds a
 * single warpgroup. Tiles no wider than a group of at most 64 (128)
 * channels needs; on a tie the earlier shape. */
cg_conv_wg cg_conv_wg_default(const cg_conv *cv, bool tf32)
{
	static const struct {
		int tm, tn, warps, stages;
		double q;
	} cand[] = {{256, 128, 8, 3, 1.0},  {128, 256, 8, 4, 1.0}, {128, 128, 8, 5, 0.94},
		    {64, 128, 4, 4, 0.71}, {128, 64, 8, 6, 0.45}, {64, 64, 4, 6, 0.49}};
	cg_conv_wg best = {0};
	double best_score = -1;
	for (size_t i = 0; i < SN_COUNT(cand); i++) {
		cg_conv_wg c = {.tm = cand[i].tm, .tn = cand[i].tn, .warps = cand[i].warps, .stages = cand[i].stages,
				.kg = 1, .tf32 = tf32};
		if ((cv->og <= 64 && c.tn > 64) || (cv->og <= 128 && c.tn > 128))
			continue;
		sn_err e = {0};
		if (cg_conv_wg_check(cv, &c, &e) != SN_OK)
			continue;
		int regs = c.mi * c.tn / 2 + 70, threads = c.warps * 32;
		int bps = (int)(WG_SMEM_LIMIT / (cg_conv_wg_smem(&c) + 1024));
		int bpr = 65536 / (threads * (regs > 255 ? 255 : regs));
		bps = bps < bpr ? bps : bpr;
		bps = bps < 1 ? 1 : bps;
		int64_t blocks = (cv->m + c.tm - 1) / c.tm * ((cv->og + c.tn - 1) / c.tn) * cv->groups;
		int64_t per_sm = (blocks + 131) / 132; /* blocks on the busiest SM */
		int64_t resident = (per_sm < bps ? per_sm : bps) * (c.warps / 4);
		double score = (double)blocks / (double)(132 * per_sm) * cand[i].q * (resident > 1 ? 1.0 : 0.85);
		if (score > best_score) {
			best_score = score;
			best = c;
		}
	}
	return best;
}

/* f32 chunks rounded to TF32 in place (this thread's copies, landed) */
static const char round_fn[] =
	"static __device__ __forceinline__ void tf32_round(unsigned a)\n{\n"
	"\tunsigned v[4];\n"
	"\tasm volatile(\"ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\" : \"=r\"(v[0]), \"=r\"(v[1]), \"=r\"(v[2]), \"=r\"(v[3]) : \"r\"(a) : \"memory\");\n"
	"#pragma unroll\n"
	"\tfor (int i = 0; i < 4; i++)\n"
	"\t\tasm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(v[i]) : \"f\"(__uint_as_float(v[i])));\n"
	"\tasm volatile(\"st.shared.v4.b32 [%0], {%1,%2,%3,%4};\" :: \"r\"(a), \"r\"(v[0]), \"r\"(v[1]), \"r\"(v[2]), \"r\"(v[3]) : \"memory\");\n"
	"}\n\n";

void cg_conv_emit_wg(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, const cg_conv_wg *c)
{
	int es = c->tf32 ? 4 : 2, nwg = c->warps / 4, nt = 128 * nwg, ra = nt / 8;
	int ai = c->tm / ra, bi = (c->tn + ra - 1) / ra, kpg = 4 / c->kg;
	const char *ty = c->tf32 ? "tf32" : cv->t == IR_BF16 ? "bf16" : "f16";
	sn_buf_printf(b, "#define TM %d\n#define TN %d\n#define ST %d\n#define MI %d\n#define MWG %d\n#define KPG %d\n"
			 "#define TKE %d\n#define VE %d\n#define RA %d\n#define SLOT %d\n"
			 "/* K-major, 128-byte swizzle: 8-row atoms 1024 bytes apart */\n"
			 "#define DESC_K ((1ull << 62) | (64ull << 32) | (1ull << 16))\n\n",
		      c->tm, c->tn, c->stages, c->mi, c->mwg, kpg, 128 / es, 16 / es, ra, (c->tm + c->tn) * 128);
	cg_wgmma_emit_prims(b);
	cg_wgmma_emit_mma(b, "wg_mma", c->tn, ty, false);
	if (c->tf32)
		sn_buf_puts(b, round_fn);
	cg_conv_head(b, cv, epi, nt);
	sn_buf_printf(b, "\textern __shared__ __align__(1024) unsigned char smem[];\n"
			 "\tconst unsigned sbase = (smem_u32(smem) + 1023u) & ~1023u;\n"
			 "\tconst int tid = threadIdx.x, g = blockIdx.z;\n"
			 "\tconst int wg = __shfl_sync(0xffffffffu, tid >> 7, 0); /* provably warp-uniform for ptxas */\n"
			 "\tconst int mg = wg %% MWG, kg = wg / MWG;\n"
			 "\tconst ix m0 = (ix)blockIdx.x * TM;\n\tconst int n0 = blockIdx.y * TN;\n"
			 "\tconst int ch = tid & 7, r0 = tid >> 3; /* chunk ch of rows r0 + i * RA */\n"
			 "\tconst unsigned sw = (unsigned)((ch ^ (r0 & 7)) << 4); /* RA is a multiple of 8 */\n"
			 "\tpix px[%d];\n"
			 "#pragma unroll\n\tfor (int i = 0; i < %d; i++)\n\t\tpx[i] = pixel(m0 + r0 + i * RA, g);\n"
			 "\tconst %s *bp[%d];\n\tbool bok[%d];\n"
			 "#pragma unroll\n\tfor (int j = 0; j < %d; j++) {\n"
			 "\t\tint o = n0 + r0 + j * RA;\n"
			 "\t\tbok[j] = o < OG;\n"
			 "\t\tbp[j] = wt + ((ix)g * OG + (bok[j] ? o : 0)) * KK + ch * VE;\n\t}\n",
		      ai, ai, cg_ctype(cv->t), bi, bi, bi);
	const char *bguard = c->tn % ra ? "if (r0 + j * RA < TN) " : "";
	sn_buf_printf(b, "#define LOAD(slot, kt) do { \\\n"
			 "\t\tunsigned sa_ = sbase + (slot) * SLOT, sb_ = sa_ + TM * 128; \\\n"
			 "\t\tint k_ = (kt) * TKE + ch * VE; \\\n"
			 "\t\t_Pragma(\"unroll\") for (int i = 0; i < %d; i++) { \\\n"
			 "\t\t\tbool ok; \\\n"
			 "\t\t\tix off = a_off(px[i], k_, &ok); \\\n"
			 "\t\t\tcp_async16(sa_ + (r0 + i * RA) * 128 + sw, x + (ok ? off : 0), ok); \\\n"
			 "\t\t} \\\n"
			 "\t\t_Pragma(\"unroll\") for (int j = 0; j < %d; j++) { \\\n"
			 "\t\t\tbool ok = bok[j] && k_ < KK; \\\n"
			 "\t\t\t%scp_async16(sb_ + (r0 + j * RA) * 128 + sw, bp[j] + (ok ? (ix)(kt) * TKE : 0), ok); \\\n"
			 "\t\t} \\\n"
			 "\t} while (0)\n",
		      ai, bi, bguard);
	if (c->tf32) {
		sn_buf_printf(b, "#define ROUND(slot) do { \\\n"
				 "\t\tunsigned sa_ = sbase + (slot) * SLOT; \\\n"
				 "\t\t_Pragma(\"unroll\") for (int i = 0; i < %d; i++) \\\n"
				 "\t\t\ttf32_round(sa_ + (r0 + i * RA) * 128 + sw); \\\n",
			      ai);
		if (!c->b_rounded) /* B too, unless the weight image holds it rounded */
			sn_buf_printf(b, "\t\t_Pragma(\"unroll\") for (int j = 0; j < %d; j++) \\\n"
					 "\t\t\t%stf32_round(sa_ + TM * 128 + (r0 + j * RA) * 128 + sw); \\\n",
				      bi, bguard);
		sn_buf_puts(b, "\t} while (0)\n");
	}
	sn_buf_printf(b, "\tfloat acc[MI][TN / 2];\n"
			 "#pragma unroll\n\tfor (int i = 0; i < MI; i++)\n"
			 "#pragma unroll\n\t\tfor (int x_ = 0; x_ < TN / 2; x_++)\n\t\t\tacc[i][x_] = 0.0f;\n"
			 "\tconst int tiles = (KK + TKE - 1) / TKE;\n"
			 "#pragma unroll\n\tfor (int s = 0; s < ST - 2; s++) {\n"
			 "\t\tif (s < tiles)\n\t\t\tLOAD(s, s);\n"
			 "\t\tcp_commit();\n\t}\n"
			 "\tconst unsigned aoff = (unsigned)(mg * MI * 64 * 128), koff = (unsigned)(kg * KPG * 32);\n"
			 "\tfor (int t = 0; t < tiles; t++) {\n"
			 "\t\tcp_wait<ST - 3>(); /* this thread's copies of slice t */\n"
			 "%s"
			 "\t\tasm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
			 "\t\t__syncthreads(); /* every thread's; slice t - 2's products done */\n"
			 "\t\tconst int nx = t + ST - 2;\n"
			 "\t\tif (nx < tiles)\n\t\t\tLOAD(nx %% ST, nx);\n"
			 "\t\tcp_commit();\n"
			 "\t\tconst unsigned sa = sbase + (t %% ST) * SLOT + aoff + koff, sb = sbase + (t %% ST) * SLOT + TM * 128 + koff;\n"
			 "\t\twg_fence();\n"
			 "#pragma unroll\n\t\tfor (int kk = 0; kk < KPG; kk++)\n"
			 "#pragma unroll\n\t\t\tfor (int i = 0; i < MI; i++)\n"
			 "\t\t\t\twg_mma(acc[i], desc(DESC_K, sa + i * 8192 + kk * 32), desc(DESC_K, sb + kk * 32), 1);\n"
			 "\t\twg_commit();\n"
			 "\t\twg_wait<1>(); /* slice t - 1's products are done */\n"
			 "\t}\n"
			 "\twg_wait<0>();\n"
			 "#pragma unroll\n\tfor (int i = 0; i < MI; i++)\n\t\thold(acc[i]);\n"
			 "\tcp_wait<0>();\n"
			 "\t__syncthreads();\n"
			 "#undef LOAD\n",
		      c->tf32 ? "\t\tROUND(t % ST);\n" : "");
	if (c->tf32)
		sn_buf_puts(b, "#undef ROUND\n");
	/* the accumulators, staged: d[j * 4 + h * 2 + q] of the warpgroup's
	 * m64 tile i at row (warp % 4) * 16 + lane / 4 + 8 h, column 8 j +
	 * (lane % 4) * 2 + q */
	sn_buf_puts(b, "\tfloat *cs = (float *)smem;\n"
		       "\tconst int lane = tid & 31, wr = mg * MI * 64 + ((tid >> 5) & 3) * 16 + (lane >> 2);\n");
	for (int q = 0; q < c->kg; q++) {
		if (c->kg > 1)
			sn_buf_printf(b, "\tif (kg == %d)\n", q);
		sn_buf_printf(b, "#pragma unroll\n\tfor (int i = 0; i < MI; i++)\n"
				 "#pragma unroll\n\t\tfor (int j = 0; j < TN / 8; j++)\n"
				 "#pragma unroll\n\t\t\tfor (int h = 0; h < 2; h++) {\n"
				 "\t\t\t\tfloat2 *p_ = (float2 *)&cs[(wr + i * 64 + h * 8) * (TN + 4) + j * 8 + (lane & 3) * 2];\n"
				 "\t\t\t\t%s\n"
				 "\t\t\t}\n"
				 "\t__syncthreads();\n",
			      q == 0 ? "*p_ = make_float2(acc[i][j * 4 + h * 2], acc[i][j * 4 + h * 2 + 1]);"
				     : "float2 o_ = *p_;\n\t\t\t\t*p_ = make_float2(o_.x + acc[i][j * 4 + h * 2], "
				       "o_.y + acc[i][j * 4 + h * 2 + 1]);");
	}
	cg_conv_emit_staged_out(b, cv, epi, nt);
}
