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
 * (32 for f32) or unset.
 *
 * Variant 8 (emit_ws; f16/bf16) is the same product with a producer
 * warpgroup after warps / 4 consumer warpgroups (128 threads on top of
 * the consumers' warps; 2 to 8 stages, one k group): the producer alone
 * gathers the slices into the ring, the consumers wait on per-slot
 * mbarriers instead of a block barrier per slice and keep the previous
 * slice's products in flight (wait_group 1) while they issue the next. */
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
	unsigned ring = (unsigned)(c->stages * ((c->tm + c->tn) * 128 + (c->ws ? 16 : 0))),
		 out = (unsigned)(c->tm * (c->tn + 4) * 4);
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
	if (c->ws && c->kg != 1)
		return sn_errf(e, SN_EUSAGE, "conv2d (wgmma, producer warpgroup): split_k %d: k groups are variant 7's only",
			       c->kg);
	if (c->ws && c->warps > 12)
		return sn_errf(e, SN_EUSAGE,
			       "conv2d (wgmma, producer warpgroup): warps %d: 4, 8 or 12 consumer warps (the producer's 4 "
			       "come on top)",
			       c->warps);
	if (c->cl < 1)
		c->cl = 1;
	if (c->cl > 8)
		return sn_errf(e, SN_EUSAGE, "conv2d (wgmma, split-K over a cluster): split_k %d is not in [2, 8] (blocks of "
			       "one cluster)", c->cl);
	if (c->cl > 1 && (c->ws || c->kg != 1))
		return sn_errf(e, SN_EUSAGE, "conv2d (wgmma, split-K over a cluster): no producer warpgroup and no k groups "
			       "beside the cluster's blocks");
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
	int acc = c->mi * c->tn / 2, cap = 65536 / (c->warps * 32 + (c->ws ? 128 : 0));
	cap = cap > 255 ? 255 : cap;
	int room = c->ws ? 40 : 64; /* the producer holds the addresses when there is one */
	if (acc + room > cap)
		return sn_errf(e, SN_EUSAGE,
			       "conv2d (wgmma): %d accumulators per thread (tile_m %d, tile_n %d) do not fit the %d registers "
			       "of %d threads with room to spare (at most %d)",
			       acc, c->tm, c->tn, cap, c->warps * 32 + (c->ws ? 128 : 0), cap - room);
	if (c->ws && (c->stages < 2 || c->stages > 8))
		return sn_errf(e, SN_EUSAGE,
			       "conv2d (wgmma, producer warpgroup): stages %d is not in [2, 8] (a slot being multiplied, one "
			       "lagging or being filled)",
			       c->stages);
	if (!c->ws && (c->stages < 3 || c->stages > 8))
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

/* split-K over a cluster (variant 9; SK defined): the block's rank, the
 * cluster barrier (release / acquire: the staged partial tiles are seen
 * by every block after it), and the sum over the cluster's blocks, in
 * rank order, of the float(s) at the same shared address in each */
static const char cluster_fns[] =
	"static __device__ __forceinline__ unsigned cta_rank()\n{\n"
	"\tunsigned r;\n\tasm volatile(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(r));\n\treturn r;\n}\n\n"
	"static __device__ __forceinline__ void cluster_sync()\n{\n"
	"\tasm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;\" ::: \"memory\");\n}\n\n"
	"static __device__ __forceinline__ float4 peer_sum4(const float *p)\n{\n"
	"\tconst unsigned a = smem_u32(p);\n"
	"\tfloat4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);\n"
	"#pragma unroll\n\tfor (unsigned r = 0; r < SK; r++) {\n"
	"\t\tunsigned q;\n\t\tfloat4 v;\n"
	"\t\tasm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\" : \"=r\"(q) : \"r\"(a), \"r\"(r));\n"
	"\t\tasm volatile(\"ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];\" : \"=f\"(v.x), \"=f\"(v.y), \"=f\"(v.z), "
	"\"=f\"(v.w) : \"r\"(q) : \"memory\");\n"
	"\t\ts.x += v.x;\n\t\ts.y += v.y;\n\t\ts.z += v.z;\n\t\ts.w += v.w;\n"
	"\t}\n\treturn s;\n}\n\n"
	"static __device__ __forceinline__ float peer_sum1(const float *p)\n{\n"
	"\tconst unsigned a = smem_u32(p);\n"
	"\tfloat s = 0.0f;\n"
	"#pragma unroll\n\tfor (unsigned r = 0; r < SK; r++) {\n"
	"\t\tunsigned q;\n\t\tfloat v;\n"
	"\t\tasm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\" : \"=r\"(q) : \"r\"(a), \"r\"(r));\n"
	"\t\tasm volatile(\"ld.shared::cluster.f32 %0, [%1];\" : \"=f\"(v) : \"r\"(q) : \"memory\");\n"
	"\t\ts += v;\n"
	"\t}\n\treturn s;\n}\n\n";

static void emit_ws(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, const cg_conv_wg *c);

void cg_conv_emit_wg(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, const cg_conv_wg *c)
{
	if (c->ws) {
		emit_ws(b, cv, epi, c);
		return;
	}
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
	if (c->cl > 1) {
		sn_buf_printf(b, "#define SK %d\n", c->cl);
		sn_buf_puts(b, cluster_fns);
	}
	cg_conv_head_cluster(b, cv, epi, nt, c->cl);
	sn_buf_printf(b, "\textern __shared__ __align__(1024) unsigned char smem[];\n"
			 "\tconst unsigned sbase = (smem_u32(smem) + 1023u) & ~1023u;\n"
			 "\tconst int tid = threadIdx.x, g = blockIdx.z;\n"
			 "\tconst int wg = __shfl_sync(0xffffffffu, tid >> 7, 0); /* provably warp-uniform for ptxas */\n"
			 "\tconst int mg = wg %% MWG, kg = wg / MWG;\n"
			 "\tconst ix m0 = (ix)blockIdx.x%s * TM;\n\tconst int n0 = blockIdx.y * TN;\n"
			 "\tconst int ch = tid & 7, r0 = tid >> 3; /* chunk ch of rows r0 + i * RA */\n"
			 "\tconst unsigned sw = (unsigned)((ch ^ (r0 & 7)) << 4); /* RA is a multiple of 8 */\n"
			 "\tpix px[%d];\n"
			 "#pragma unroll\n\tfor (int i = 0; i < %d; i++)\n\t\tpx[i] = pixel(m0 + r0 + i * RA, g);\n"
			 "\tconst %s *bp[%d];\n\tbool bok[%d];\n"
			 "#pragma unroll\n\tfor (int j = 0; j < %d; j++) {\n"
			 "\t\tint o = n0 + r0 + j * RA;\n"
			 "\t\tbok[j] = o < OG;\n"
			 "\t\tbp[j] = wt + ((ix)g * OG + (bok[j] ? o : 0)) * KK + ch * VE;\n\t}\n",
		      c->cl > 1 ? " / SK" : "", ai, ai, cg_ctype(cv->t), bi, bi, bi);
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
			 "%s"
			 "#pragma unroll\n\tfor (int s = 0; s < ST - 2; s++) {\n"
			 "\t\tif (s < tiles)\n\t\t\tLOAD(s, %ss);\n"
			 "\t\tcp_commit();\n\t}\n"
			 "\tconst unsigned aoff = (unsigned)(mg * MI * 64 * 128), koff = (unsigned)(kg * KPG * 32);\n"
			 "\tfor (int t = 0; t < tiles; t++) {\n"
			 "\t\tcp_wait<ST - 3>(); /* this thread's copies of slice t */\n"
			 "%s"
			 "\t\tasm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
			 "\t\t__syncthreads(); /* every thread's; slice t - 2's products done */\n"
			 "\t\tconst int nx = t + ST - 2;\n"
			 "\t\tif (nx < tiles)\n\t\t\tLOAD(nx %% ST, %snx);\n"
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
		      c->cl > 1 ? "\t/* split-K: block rank of the cluster takes slices [all rank / SK, all (rank + 1) / SK) */\n"
				  "\tconst int all = (KK + TKE - 1) / TKE, rank = (int)cta_rank();\n"
				  "\tconst int kt0 = (int)((long)all * rank / SK), tiles = (int)((long)all * (rank + 1) / SK) - kt0;\n"
				: "\tconst int tiles = (KK + TKE - 1) / TKE;\n",
		      c->cl > 1 ? "kt0 + " : "", c->tf32 ? "\t\tROUND(t % ST);\n" : "", c->cl > 1 ? "kt0 + " : "");
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
	if (c->cl > 1) /* every block's partial tile is staged */
		sn_buf_puts(b, "\tcluster_sync();\n");
	cg_conv_emit_staged_out(b, cv, epi, nt, c->cl);
}

const char *cg_conv_wg_ws_cannot(const cg_conv *cv, const cg_target *tg)
{
	if (cv->t != IR_F16 && cv->t != IR_BF16)
		return "it takes f16 and bf16 (the producer cannot round to TF32 what it does not see land)";
	return cg_conv_wg_cannot(cv, tg);
}

/* Variant 8's default: the variant 7 scoring (blocks over whole rounds
 * of the 132 SMs times a relative rate q), times the share of the tiles
 * that is not padding, over shapes with a producer warpgroup. q from the H100 sweep over ResNet-50 batch 32 (PERF.md,
 * 2026-11-23 session 3): 192x128 of three consumer warpgroups 0.9 (1.13x
 * 256x128 on layer 2's 3x3s, where its 131 blocks fill the SMs and
 * 256x128's 98 do not), 128x64 of one consumer warpgroup in two m64 tiles
 * 0.6 (two blocks per SM: 1.18x variant 7 on layer 1's 64-channel 3x3,
 * whose 9 slices per tile leave the epilogue exposed in one block). */
cg_conv_wg cg_conv_wg_ws_default(const cg_conv *cv)
{
	static const struct {
		int tm, tn, warps, stages;
		double q;
	} cand[] = {{256, 128, 8, 4, 1.0},  {128, 256, 8, 4, 1.0}, {128, 128, 8, 6, 0.94}, {192, 128, 12, 3, 0.9},
		    {64, 128, 4, 6, 0.71}, {128, 64, 4, 4, 0.6},   {128, 64, 8, 8, 0.45},  {64, 64, 4, 8, 0.49}};
	cg_conv_wg best = {0};
	double best_score = -1;
	for (size_t i = 0; i < SN_COUNT(cand); i++) {
		cg_conv_wg c = {.tm = cand[i].tm, .tn = cand[i].tn, .warps = cand[i].warps, .stages = cand[i].stages,
				.kg = 1, .ws = true};
		if ((cv->og <= 64 && c.tn > 64) || (cv->og <= 128 && c.tn > 128))
			continue;
		sn_err e = {0};
		if (cg_conv_wg_check(cv, &c, &e) != SN_OK)
			continue;
		int64_t mt = (cv->m + c.tm - 1) / c.tm, nt = (cv->og + c.tn - 1) / c.tn;
		int64_t blocks = mt * nt * cv->groups;
		int64_t per_sm = (blocks + 131) / 132;
		/* and the share of the tiles' rows and columns that are real:
		 * a 128-row tile over 40 rows does a third of its products */
		double used = (double)cv->m / (double)(mt * c.tm) * ((double)cv->og / (double)(nt * c.tn));
		double score = (double)blocks / (double)(132 * per_sm) * cand[i].q * used;
		if (score > best_score) {
			best_score = score;
			best = c;
		}
	}
	return best;
}

/* Variant 8: the producer warpgroup (the last) copies every slice
 * (cp.async, completion counted on the slot's "full" mbarrier through
 * cp.async.mbarrier.arrive.noinc) into a ring of ST slots as soon as the
 * consumers have released the slot (its "empty" mbarrier, one arrival per
 * consumer warp once wgmma.wait_group has retired the slot's products);
 * the consumer warpgroups never meet at a block barrier in the main loop
 * and keep the previous slice's products in flight while they issue the
 * next (wait_group 1). Every consumer thread fences the async proxy after
 * its wait on "full" (the copies are generic-proxy writes that wgmma
 * reads through the async proxy). */
static void emit_ws(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, const cg_conv_wg *c)
{
	int nc = c->warps / 4, nt = 128 * (nc + 1), ai = c->tm / 16, bi = (c->tn + 15) / 16;
	const char *ty = cv->t == IR_BF16 ? "bf16" : "f16";
	sn_buf_printf(b, "#define TM %d\n#define TN %d\n#define ST %d\n#define MI %d\n#define NC %d\n"
			 "#define TKE 64\n#define VE 8\n#define SLOT %d\n"
			 "/* K-major, 128-byte swizzle: 8-row atoms 1024 bytes apart */\n"
			 "#define DESC_K ((1ull << 62) | (64ull << 32) | (1ull << 16))\n\n",
		      c->tm, c->tn, c->stages, c->mi, nc, (c->tm + c->tn) * 128);
	cg_wgmma_emit_prims(b);
	cg_wgmma_emit_mma(b, "wg_mma", c->tn, ty, false);
	cg_conv_head_min(b, cv, epi, nt, 1);
	sn_buf_printf(b, "\textern __shared__ __align__(1024) unsigned char smem[];\n"
			 "\tconst unsigned sbase = (smem_u32(smem) + 1023u) & ~1023u, bars = sbase + ST * SLOT;\n"
			 "\tconst int tid = threadIdx.x, g = blockIdx.z, lane = tid & 31;\n"
			 "\tconst int wg = __shfl_sync(0xffffffffu, tid >> 7, 0); /* provably warp-uniform for ptxas */\n"
			 "\tconst ix m0 = (ix)blockIdx.x * TM;\n\tconst int n0 = blockIdx.y * TN;\n"
			 "\tconst int tiles = (KK + TKE - 1) / TKE;\n"
			 "\tfloat *cs = (float *)smem;\n"
			 "\t/* slot s: full[s] at bars + 8 s (the producer's 128 threads' copies\n"
			 "\t * landed), empty[s] at bars + 8 (ST + s) (every consumer warp is done) */\n"
			 "\tif (tid == 0)\n"
			 "\t\tfor (int s = 0; s < ST; s++) {\n"
			 "\t\t\tmbar_init(bars + 8 * s, 128);\n"
			 "\t\t\tmbar_init(bars + 8 * (ST + s), NC * 4);\n"
			 "\t\t}\n"
			 "\t__syncthreads();\n"
			 "\tif (wg == NC) { /* the producer */\n"
			 "\t\tconst int lt = tid - NC * 128, ch = lt & 7, r0 = lt >> 3; /* chunk ch of rows r0 + 16 i */\n"
			 "\t\tconst unsigned sw = (unsigned)((ch ^ (r0 & 7)) << 4);\n"
			 "\t\tpix px[%d];\n"
			 "#pragma unroll\n\t\tfor (int i = 0; i < %d; i++)\n\t\t\tpx[i] = pixel(m0 + r0 + i * 16, g);\n"
			 "\t\tconst %s *bp = wt + ((ix)g * OG + n0 + r0) * KK + ch * VE;\n"
			 "\t\tfor (int t = 0; t < tiles; t++) {\n"
			 "\t\t\tconst int s = t %% ST;\n"
			 "\t\t\tif (t >= ST) /* the consumers are done with slice t - ST */\n"
			 "\t\t\t\tmbar_wait(bars + 8 * (ST + s), (t / ST - 1) & 1);\n"
			 "\t\t\tconst unsigned sa = sbase + s * SLOT, sb = sa + TM * 128;\n"
			 "\t\t\tconst int k_ = t * TKE + ch * VE;\n"
			 "#pragma unroll\n\t\t\tfor (int i = 0; i < %d; i++) {\n"
			 "\t\t\t\tbool ok;\n"
			 "\t\t\t\tix off = a_off(px[i], k_, &ok);\n"
			 "\t\t\t\tcp_async16(sa + (r0 + i * 16) * 128 + sw, x + (ok ? off : 0), ok);\n"
			 "\t\t\t}\n"
			 "#pragma unroll\n\t\t\tfor (int j = 0; j < %d; j++) {\n"
			 "\t\t\t\tbool ok = n0 + r0 + j * 16 < OG && k_ < KK;\n"
			 "\t\t\t\t%scp_async16(sb + (r0 + j * 16) * 128 + sw, ok ? bp + (ix)j * 16 * KK + t * TKE : wt, ok);\n"
			 "\t\t\t}\n"
			 "\t\t\tasm volatile(\"cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%%0];\" :: \"r\"(bars + 8 * s) : \"memory\");\n"
			 "\t\t}\n"
			 "\t\tasm volatile(\"cp.async.wait_all;\" ::: \"memory\");\n"
			 "\t} else { /* consumer warpgroup wg: rows [wg * MI * 64, (wg + 1) * MI * 64) */\n"
			 "\t\tfloat acc[MI][TN / 2];\n"
			 "#pragma unroll\n\t\tfor (int i = 0; i < MI; i++)\n"
			 "#pragma unroll\n\t\t\tfor (int x_ = 0; x_ < TN / 2; x_++)\n\t\t\t\tacc[i][x_] = 0.0f;\n"
			 "\t\tconst unsigned aoff = (unsigned)(wg * MI * 64 * 128);\n"
			 "\t\tfor (int t = 0; t < tiles; t++) {\n"
			 "\t\t\tconst int s = t %% ST;\n"
			 "\t\t\tmbar_wait(bars + 8 * s, (t / ST) & 1);\n"
			 "\t\t\tasm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
			 "\t\t\tconst unsigned sa = sbase + s * SLOT + aoff, sb = sbase + s * SLOT + TM * 128;\n"
			 "\t\t\twg_fence();\n"
			 "#pragma unroll\n\t\t\tfor (int kk = 0; kk < 4; kk++)\n"
			 "#pragma unroll\n\t\t\t\tfor (int i = 0; i < MI; i++)\n"
			 "\t\t\t\t\twg_mma(acc[i], desc(DESC_K, sa + i * 8192 + kk * 32), desc(DESC_K, sb + kk * 32), 1);\n"
			 "\t\t\twg_commit();\n"
			 "\t\t\twg_wait<1>(); /* slice t - 1's products are done: its slot is free */\n"
			 "\t\t\tif (t > 0 && lane == 0)\n"
			 "\t\t\t\tmbar_arrive(bars + 8 * (ST + (t - 1) %% ST));\n"
			 "\t\t}\n"
			 "\t\twg_wait<0>();\n"
			 "#pragma unroll\n\t\tfor (int i = 0; i < MI; i++)\n\t\t\thold(acc[i]);\n"
			 "\t\t/* every consumer is done with the ring before the tile is staged over it */\n"
			 "\t\tasm volatile(\"bar.sync 1, %d;\" ::: \"memory\");\n"
			 "\t\tconst int wr = wg * MI * 64 + ((tid >> 5) & 3) * 16 + (lane >> 2);\n"
			 "#pragma unroll\n\t\tfor (int i = 0; i < MI; i++)\n"
			 "#pragma unroll\n\t\t\tfor (int j = 0; j < TN / 8; j++)\n"
			 "#pragma unroll\n\t\t\t\tfor (int h = 0; h < 2; h++)\n"
			 "\t\t\t\t\t*(float2 *)&cs[(wr + i * 64 + h * 8) * (TN + 4) + j * 8 + (lane & 3) * 2] =\n"
			 "\t\t\t\t\t\tmake_float2(acc[i][j * 4 + h * 2], acc[i][j * 4 + h * 2 + 1]);\n"
			 "\t}\n"
			 "\t__syncthreads();\n",
		      ai, ai, cg_ctype(cv->t), ai, bi, c->tn % 16 ? "if (r0 + j * 16 < TN) " : "", nc * 128);
	cg_conv_emit_staged_out(b, cv, epi, nt, 1);
}

/* Variant 9's default: an estimate of each config's time in us on the
 * H100, fitted to ResNet-50's convs at batch 1 (PERF.md, 2026-11-23
 * session 4; variant 7 alone, one block per SM): about 3 for the launch,
 * the pipeline's fill and the store, and per slice of a block 0.22 + TM
 * x TN x 1.9e-5 (64x32 0.26, 64x64 0.30, 64x128 0.37, 256x128 0.84: a
 * block that has an SM to itself waits on its copies more than it
 * multiplies), times the blocks on the busiest SM; a cluster's two
 * barriers and its sum through DSMEM 1 + 0.2 per block (clusters of 2
 * to 8 of 64x32 and 64x64 tiles came out 1 to 2 over the rest). */
static double split_est(int tm, int tn, int64_t blocks, int64_t slices, int sk)
{
	int64_t per_sm = (blocks + 131) / 132;
	return 3.0 + (double)per_sm * (double)slices * (0.22 + tm * tn * 1.9e-5) + (sk > 1 ? 1.0 + 0.2 * sk : 0.0);
}

/* Where d's grid fills under half the SMs (ResNet-50 at batch 1 from
 * layer 1's 3x3 on: 4 to 64 blocks), narrow tiles of one warpgroup, 6
 * stages (4 slices in flight: a block with an SM to itself waits on its
 * copies), 64x32 and 64x64 split over the k of clusters of up to 8
 * blocks, each block at least 2 slices (64x128 alone: split, its sum
 * through DSMEM cost 3 to 4 more than the estimate); taken where the
 * estimate beats d's by 5 %. */
bool cg_conv_wg_split_default(const cg_conv *cv, bool tf32, const cg_conv_wg *d, cg_conv_wg *out)
{
	static const struct {
		int tm, tn, warps, stages, max_sk;
	} cand[] = {{64, 32, 4, 6, 8}, {64, 64, 4, 6, 8}, {64, 128, 4, 4, 1}};
	int tke = tf32 ? 32 : 64;
	int64_t slices = (cv->k + tke - 1) / tke;
	int64_t dblocks = (cv->m + d->tm - 1) / d->tm * ((cv->og + d->tn - 1) / d->tn) * cv->groups;
	if (dblocks > 66 || d->tm <= 0 || d->tn <= 0)
		return false;
	double best = 0.95 * split_est(d->tm, d->tn, dblocks, slices, 1);
	bool found = false;
	for (size_t i = 0; i < SN_COUNT(cand); i++) {
		if ((cv->og <= 64 && cand[i].tn > 64) || (cv->og <= 128 && cand[i].tn > 128))
			continue;
		for (int sk = 1; sk <= cand[i].max_sk && (sk == 1 || 2 * sk <= slices); sk++) {
			cg_conv_wg c = {.tm = cand[i].tm, .tn = cand[i].tn, .warps = cand[i].warps,
					.stages = cand[i].stages, .kg = 1, .cl = sk, .tf32 = tf32};
			sn_err e = {0};
			if (cg_conv_wg_check(cv, &c, &e) != SN_OK)
				continue;
			int64_t blocks = (cv->m + c.tm - 1) / c.tm * ((cv->og + c.tn - 1) / c.tn) * cv->groups * sk;
			double t = split_est(c.tm, c.tn, blocks, (slices + sk - 1) / sk, sk);
			if (t < best) {
				best = t;
				*out = c;
				found = true;
			}
		}
	}
	return found;
}
