/* cg_flash_wg.c: flash attention forward with wgmma (sm_90a), for f16/bf16
 * q, k, v with head dims E = Ev in {64, 128}: attention's variant 3.
 *
 * A block takes TM = 64 * NWG query rows of one batch index: NWG
 * warpgroups of 4 warps, 64 rows each (wgmma's M). Q, K and V tiles sit in
 * shared memory in the 128-byte swizzle that wgmma's descriptors name:
 * rows of 64 elements (128 bytes; a head dim of 128 is two such column
 * blocks, one after the other), 16-byte chunk c of row r at c ^ (r & 7),
 * 8-row atoms of 1024 bytes on 1024-byte boundaries. Per key tile of TN:
 *   S = Q K^T: wgmma m64nTNk16, A (Q) and B (K, K-major) from shared memory,
 *     fp32 accumulators in registers;
 *   masks and an online softmax on S in registers (running max and sum in
 *     fp32, one FFMA per score into exp2's domain, exp2 on the SFU);
 *   O += P V: wgmma m64nDk16 with A = P from registers (S's accumulator
 *     layout is the A-fragment layout, so P is S rounded to the input dtype
 *     and never leaves registers), B = V from shared memory MN-major
 *     (transposed by the descriptor).
 * The products are asynchronous: tile t's S product is issued, then tile
 * t-1's P V, and softmax of tile t runs while P V is in flight (its O
 * rescale waits for it). K/V tiles arrive through cp.async (16 bytes per
 * thread, rows past S zero-filled) in a ring of STAGES slots: one being
 * read by S, one by the lagging P V, the rest in flight; each thread
 * fences its copies into the async proxy before the barrier that hands
 * the slot to wgmma. Causal blocks stop at their last row's key and
 * start with the longest (the last rows), within groups of a few batch
 * indices whose K/V fit in L2 together (at 4,096 tokens and head dim 128,
 * 64 batch indices' K/V are 128 MB: block order by tile alone made every
 * block read its K/V from DRAM). A fully masked row gives NaN, as
 * PyTorch.
 *
 * Variant 4 is the same kernel with a producer warpgroup after the
 * consumer warpgroups: it alone copies Q and the K/V tiles (cp.async, completion
 * signalled on a per-slot "full" mbarrier), and waits on a per-slot "empty"
 * mbarrier that the consumers arrive on once their P V of the slot is
 * done, so consumers never meet at a block barrier (PERF.md). The
 * producer's thread keeps one 16-byte column of the rows it copies, so a
 * copy costs two adds. With two consumer warpgroups (warps = 8) they take
 * turns issuing their products (ping-pong, two named barriers), so one's
 * softmax runs under the other's products, and the producer hands its
 * registers to them (setmaxnreg: 40 for the producer, 232 for each
 * consumer, of 168 each at launch): at head dim 128 that fits 128 keys.
 * With three (512 threads, 128 registers each) it takes at most 96 keys.
 *
 * Configs (cg_config, variant 3 or 4): warps (consumer warps, 4, 8 or 12:
 * NWG = warps / 4; tile_m = 16 * warps), tile_n (a multiple of 16), stages
 * (3..6; 2..6 for variant 4).
 * Operands as for the mma.sync kernel (cg_flash.c): rows contiguous and
 * 16-byte aligned. */
#include "codegen/cg_attn.h"
#include "codegen/cg_wgmma.h"

#include <stdio.h>
#include <string.h>

bool cg_flash_wg_fits(const cg_attn_spec *sp, const cg_target *t, char *why, size_t cap)
{
	if (t->sm != 90) {
		snprintf(why, cap, "it needs sm_90 (wgmma, compiled for sm_90a)");
		return false;
	}
	if (sp->E != 64 && sp->E != 128) { /* the mma.sync kernel takes the others */
		snprintf(why, cap, "it takes head dims 64 and 128 only");
		return false;
	}
	return cg_flash_fits(sp, t, why, cap);
}

static const char body[] =
	"#define NT (TN / 8)   /* 8-key column groups of S */\n"
	"#define DK (D / 16)   /* k-steps of Q K^T */\n"
	"#define KT (TN / 16)  /* k-steps of P V */\n"
	"#define CH (D / 8)    /* 16-byte chunks per row */\n"
	"#if WS /* a producer warpgroup after the consumers */\n"
	"#define THREADS (NWG * 128 + 128)\n"
	"#define LOADERS 128\n"
	"#else\n"
	"#define THREADS (NWG * 128)\n"
	"#define LOADERS THREADS\n"
	"#endif\n"
	"#define NEG_INF (-__int_as_float(0x7f800000))\n"
	"#if MASK && !MASK_BOOL\n"
	"#define PRE SCALE_LOG2\n"
	"#define POST 1.0f\n"
	"#else\n"
	"#define PRE 1.0f\n"
	"#define POST SCALE_LOG2\n"
	"#endif\n"
	"/* descriptors: 128-byte swizzle; K-major (Q, K): 8-row groups 1024 bytes\n"
	" * apart; MN-major (V): the same along keys, column blocks TN * 128 apart */\n"
	"#define DESC_K ((1ull << 62) | (64ull << 32) | (1ull << 16))\n"
	"#define DESC_V ((1ull << 62) | (64ull << 32) | ((unsigned long long)(TN * 8) << 16))\n\n"
	"/* rows [row0, row0 + ROWS) into a swizzled tile of ROWS-row column blocks;\n"
	" * rows at or past nvalid are zero-filled (src-size 0) */\n"
	"template <int ROWS>\n"
	"static __device__ __forceinline__ void load_tile(int lt, unsigned dst, const unsigned short *g, long base, long rs, long row0, long nvalid)\n{\n"
	"#pragma unroll\n"
	"\tfor (int it = 0; it < (ROWS * CH + LOADERS - 1) / LOADERS; it++) {\n"
	"\t\tint x = lt + it * LOADERS, r = x / CH, c = x % CH;\n"
	"\t\tif ((ROWS * CH) % LOADERS && x >= ROWS * CH)\n"
	"\t\t\tbreak;\n"
	"\t\tbool ok = row0 + r < nvalid;\n"
	"\t\tconst unsigned short *src = g + (ok ? base + (row0 + r) * rs + c * 8 : 0);\n"
	"\t\tunsigned d = dst + (c >> 3) * (ROWS * 128) + r * 128 + (((c & 7) ^ (r & 7)) << 4);\n"
	"\t\tasm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"(d), \"l\"(src), \"r\"(ok ? 16 : 0) : \"memory\");\n"
	"\t}\n}\n\n"
	"#if WS\n"
	"/* the producer's copy of a tile, the same placement: LOADERS (128) is a\n"
	" * multiple of CH, so a thread keeps one chunk column c\n"
	" * and takes rows r0, r0 + RSTEP, ...; RSTEP is a multiple of 8, so the\n"
	" * swizzle (c ^ (r & 7)) is the same for all of them: one add per copy for\n"
	" * each address, a bound test only in a tile that crosses nvalid */\n"
	"#define RSTEP (LOADERS / CH)\n"
	"template <int ROWS>\n"
	"static __device__ __forceinline__ void load_rows(int lt, unsigned dst, const unsigned short *g, long base, long rs, long row0, long nvalid)\n{\n"
	"\tconst int c = lt % CH, r0 = lt / CH;\n"
	"\tunsigned d = dst + (c >> 3) * (ROWS * 128) + r0 * 128 + (((c & 7) ^ (r0 & 7)) << 4);\n"
	"\tconst unsigned short *src = g + base + (row0 + r0) * rs + c * 8;\n"
	"\tconst long left = nvalid - row0 - r0; /* this thread's rows below nvalid: r < left */\n"
	"\tif (left >= ROWS) {\n"
	"#pragma unroll 4\n"
	"\t\tfor (int r = 0; r < ROWS; r += RSTEP, d += RSTEP * 128, src += RSTEP * rs)\n"
	"\t\t\tasm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: \"r\"(d), \"l\"(src) : \"memory\");\n"
	"\t} else {\n"
	"\t\tfor (int r = 0; r < ROWS; r += RSTEP, d += RSTEP * 128, src += RSTEP * rs) {\n"
	"\t\t\tconst bool ok = r < left;\n"
	"\t\t\tasm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"(d), \"l\"(ok ? src : g), \"r\"(ok ? 16 : 0) : \"memory\");\n"
	"\t\t}\n"
	"\t}\n}\n"
	"#if PP\n"
	"/* ping-pong between the two consumer warpgroups: named barrier 1 + w is\n"
	" * warpgroup w's turn to issue its products; it waits there (bar.sync,\n"
	" * 128 threads) and the other warpgroup arrives there (bar.arrive, 128)\n"
	" * once it has issued its own, so their products alternate on the tensor\n"
	" * cores and each one's softmax runs under the other's products */\n"
	"static __device__ __forceinline__ void turn_wait(int w)\n{\n"
	"\tasm volatile(\"bar.sync %0, 256;\" :: \"r\"(1 + w) : \"memory\");\n}\n\n"
	"static __device__ __forceinline__ void turn_pass(int w)\n{\n"
	"\tasm volatile(\"bar.arrive %0, 256;\" :: \"r\"(2 - w) : \"memory\");\n}\n"
	"#endif\n"
	"#endif\n\n"
	"#if !WS\n"
	"static __device__ __forceinline__ void commit(void)\n{\n"
	"\tasm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n}\n\n"
	"template <int N>\n"
	"static __device__ __forceinline__ void wait_groups(void)\n{\n"
	"\tasm volatile(\"cp.async.wait_group %0;\" :: \"n\"(N) : \"memory\");\n}\n"
	"#endif\n\n"
	"template <int N>\n"
	"static __device__ __forceinline__ void hold_u(unsigned (&d)[N][4])\n{\n"
	"#pragma unroll\n"
	"\tfor (int i = 0; i < N; i++)\n"
	"#pragma unroll\n"
	"\t\tfor (int x = 0; x < 4; x++)\n"
	"\t\t\tasm volatile(\"\" : \"+r\"(d[i][x]) :: \"memory\");\n}\n\n"
	"/* two floats as one register of the input dtype, lo in the low half */\n"
	"static __device__ __forceinline__ unsigned pack(float lo, float hi)\n{\n"
	"\tunsigned r;\n"
	"\tasm(\"cvt.rn.\" MMA_T \"x2.f32 %0, %1, %2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo));\n"
	"\treturn r;\n}\n\n"
	"static __device__ __forceinline__ float ex2(float x)\n{\n"
	"\tfloat r;\n"
	"\tasm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(r) : \"f\"(x));\n"
	"\treturn r;\n}\n\n"
	"extern \"C\" __global__ void __launch_bounds__(THREADS, 1)\n"
	"KERNEL_NAME(const unsigned short *__restrict__ qp, const unsigned short *__restrict__ kp,\n"
	"\t    const unsigned short *__restrict__ vp,\n"
	"#if MASK\n"
	"\t    const MASK_T *__restrict__ mp,\n"
	"#endif\n"
	"\t    unsigned short *__restrict__ out)\n{\n"
	"\textern __shared__ __align__(1024) unsigned char smem[];\n"
	"\tconst unsigned sq = (smem_u32(smem) + 1023u) & ~1023u, sk = sq + TM * D * 2, sv = sk + STAGES * TN * D * 2;\n"
	"\tconst int tid = threadIdx.x, lane = tid & 31;\n"
	"\tconst int wg = __shfl_sync(0xffffffffu, tid >> 7, 0); /* provably warp-uniform for ptxas */\n"
	"#if GROUP < NB\n"
	"\t/* blocks in groups of GROUP batch indices, each group's longest rows\n"
	"\t * (the last tiles) first: z = g0 + r % gn, tile TILES - 1 - r / gn */\n"
	"\tconst long g0 = (long)blockIdx.x / (GROUP * TILES) * GROUP, gn = min(GROUP, NB - g0);\n"
	"\tconst long r = (long)blockIdx.x - g0 * TILES;\n"
	"\tconst long z = g0 + r % gn, i0 = (TILES - 1 - r / gn) * TM;\n"
	"#else /* one group: the longest rows of every batch index first */\n"
	"\tconst long z = blockIdx.x % NB, i0 = (TILES - 1 - (long)blockIdx.x / NB) * TM;\n"
	"#endif\n"
	"\tconst offs o = batch_offs(z);\n"
	"#if CAUSAL\n"
	"\tconst long send = min(S, i0 + TM); /* keys past the block's last row are hidden from all */\n"
	"#else\n"
	"\tconst long send = S;\n"
	"#endif\n"
	"\tconst int ntile = (int)((send + TN - 1) / TN);\n"
	"#if WS\n"
	"\t/* slot s: full[s] at bars + 8 s (completes when the producers' copies of\n"
	"\t * its tile have landed), empty[s] at bars + 8 (STAGES + s) (when every\n"
	"\t * consumer thread is done with it) */\n"
	"\tconst unsigned bars = sv + STAGES * TN * D * 2;\n"
	"\tif (tid == 0)\n"
	"\t\tfor (int s = 0; s < STAGES; s++) {\n"
	"\t\t\tasm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"(bars + 8 * s), \"r\"(LOADERS) : \"memory\");\n"
	"\t\t\tasm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"(bars + 8 * (STAGES + s)), \"r\"(NWG * 128) : \"memory\");\n"
	"\t\t}\n"
	"\t__syncthreads();\n"
	"\tif (wg == NWG) { /* the producer: Q, then K/V tiles as slots free up */\n"
	"#if MAXNREG\n"
	"\t\tasm volatile(\"setmaxnreg.dec.sync.aligned.u32 40;\" ::: \"memory\");\n"
	"#endif\n"
	"\t\tconst int lt = tid - NWG * 128;\n"
	"\t\tload_rows<TM>(lt, sq, qp, o.q, Q_RS, i0, L);\n"
	"\t\tfor (int t = 0; t < ntile; t++) {\n"
	"\t\t\tconst int s = t % STAGES;\n"
	"\t\t\tif (t >= STAGES)\n"
	"\t\t\t\tmbar_wait(bars + 8 * (STAGES + s), (t / STAGES - 1) & 1);\n"
	"\t\t\tload_rows<TN>(lt, sk + s * TN * D * 2, kp, o.k, K_RS, (long)t * TN, S);\n"
	"\t\t\tload_rows<TN>(lt, sv + s * TN * D * 2, vp, o.v, V_RS, (long)t * TN, S);\n"
	"\t\t\tasm volatile(\"cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\" :: \"r\"(bars + 8 * s) : \"memory\");\n"
	"\t\t}\n"
	"\t\tasm volatile(\"cp.async.wait_all;\" ::: \"memory\");\n"
	"\t} else {\n"
	"#if MAXNREG\n"
	"\t\tasm volatile(\"setmaxnreg.inc.sync.aligned.u32 232;\" ::: \"memory\");\n"
	"#endif\n"
	"#else\n"
	"\tload_tile<TM>(tid, sq, qp, o.q, Q_RS, i0, L);\n"
	"#pragma unroll\n"
	"\tfor (int s = 0; s < STAGES - 2; s++) {\n"
	"\t\tif (s < ntile) {\n"
	"\t\t\tload_tile<TN>(tid, sk + s * TN * D * 2, kp, o.k, K_RS, (long)s * TN, S);\n"
	"\t\t\tload_tile<TN>(tid, sv + s * TN * D * 2, vp, o.v, V_RS, (long)s * TN, S);\n"
	"\t\t}\n"
	"\t\tcommit();\n"
	"\t}\n"
	"\t{\n"
	"#endif\n"
	"\tconst int wr = wg * 64 + ((tid >> 5) & 3) * 16; /* the warp's first row in the tile */\n"
	"\tconst unsigned qa = sq + wg * 64 * 128;\n"
	"\tfloat oacc[D / 2], sacc[TN / 2], mrow[2], lrow[2];\n"
	"\tunsigned pa[KT][4];\n"
	"#pragma unroll\n"
	"\tfor (int x = 0; x < D / 2; x++)\n"
	"\t\toacc[x] = 0.0f;\n"
	"#pragma unroll\n"
	"\tfor (int x = 0; x < TN / 2; x++)\n"
	"\t\tsacc[x] = 0.0f;\n"
	"#pragma unroll\n"
	"\tfor (int kt = 0; kt < KT; kt++)\n"
	"\t\tpa[kt][0] = pa[kt][1] = pa[kt][2] = pa[kt][3] = 0u;\n"
	"\tmrow[0] = mrow[1] = NEG_INF;\n"
	"\tlrow[0] = lrow[1] = 0.0f;\n"
	"#if PP\n"
	"\tif (wg == 1) /* warpgroup 0 takes the first turn */\n"
	"\t\tturn_pass(1);\n"
	"#endif\n"
	"\tfor (int t = 0; t < ntile; t++) {\n"
	"\t\t/* tile t has landed (this thread's copies), fenced into the async proxy;\n"
	"\t\t * after the barrier every thread's have, and every warpgroup is done\n"
	"\t\t * with tile t - 2, whose slot the next copy takes */\n"
	"#if WS\n"
	"\t\tmbar_wait(bars + 8 * (t % STAGES), (t / STAGES) & 1);\n"
	"\t\tasm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
	"#if PP\n"
	"\t\tturn_wait(wg);\n"
	"#endif\n"
	"#else\n"
	"\t\twait_groups<STAGES - 3>();\n"
	"\t\tasm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
	"\t\t__syncthreads();\n"
	"\t\tconst int tl = t + STAGES - 2;\n"
	"\t\tif (tl < ntile) {\n"
	"\t\t\tload_tile<TN>(tid, sk + (tl % STAGES) * TN * D * 2, kp, o.k, K_RS, (long)tl * TN, S);\n"
	"\t\t\tload_tile<TN>(tid, sv + (tl % STAGES) * TN * D * 2, vp, o.v, V_RS, (long)tl * TN, S);\n"
	"\t\t}\n"
	"\t\tcommit();\n"
	"#endif\n"
	"\t\tconst unsigned kb = sk + (t % STAGES) * TN * D * 2;\n"
	"\t\t/* S = Q K^T */\n"
	"\t\twg_fence();\n"
	"#pragma unroll\n"
	"\t\tfor (int kk = 0; kk < DK; kk++)\n"
	"\t\t\twg_s(sacc, desc(DESC_K, qa + (kk >> 2) * (TM * 128) + (kk & 3) * 32),\n"
	"\t\t\t     desc(DESC_K, kb + (kk >> 2) * (TN * 128) + (kk & 3) * 32), kk);\n"
	"\t\twg_commit();\n"
	"\t\tif (t > 0) {\n"
	"\t\t\t/* O += P V for tile t - 1, in flight while tile t's softmax runs */\n"
	"\t\t\tconst unsigned vb = sv + ((t - 1) % STAGES) * TN * D * 2;\n"
	"\t\t\twg_fence();\n"
	"#pragma unroll\n"
	"\t\t\tfor (int kt = 0; kt < KT; kt++)\n"
	"\t\t\t\twg_pv(oacc, pa[kt], desc(DESC_V, vb + kt * 2048));\n"
	"\t\t}\n"
	"\t\twg_commit(); /* (empty at t = 0) */\n"
	"#if PP\n"
	"\t\tturn_pass(wg);\n"
	"#endif\n"
	"\t\twg_wait<1>(); /* S is done; unconditional waits keep ptxas's pipeline analysis exact */\n"
	"\t\thold(sacc);\n"
	"\t\tconst long j0 = (long)t * TN;\n"
	"\t\t/* scores in the log2 domain, masks applied; only edge tiles test bounds */\n"
	"\t\tconst bool edge = j0 + TN > S\n"
	"#if CAUSAL\n"
	"\t\t\t|| j0 + TN - 1 > i0 + wg * 64\n"
	"#endif\n"
	"\t\t\t;\n"
	"\t\t/* key j = j0 + c + (lane & 3) * 2 exists while c < clim and is visible to\n"
	"\t\t * row i0 + wr + lane / 4 + 8 h while c <= rlim + 8 h */\n"
	"\t\tconst int clim = (int)min(S - j0, (long)TN) - (lane & 3) * 2;\n"
	"#if CAUSAL\n"
	"\t\tconst int rlim = (int)max(min(i0 + wr - j0, (long)TN), -2L * TN) + (lane >> 2) - (lane & 3) * 2;\n"
	"#endif\n"
	"#pragma unroll\n"
	"\t\tfor (int nt = 0; nt < NT; nt++)\n"
	"#pragma unroll\n"
	"\t\t\tfor (int x = 0; x < 4; x++) {\n"
	"\t\t\t\tfloat s = sacc[nt * 4 + x] * PRE;\n"
	"#if MASK\n"
	"\t\t\t\t{\n"
	"\t\t\t\t\tlong i = i0 + wr + (lane >> 2) + (x >> 1) * 8;\n"
	"\t\t\t\t\tlong j = j0 + nt * 8 + (lane & 3) * 2 + (x & 1);\n"
	"\t\t\t\t\tif (i < L && j < S) {\n"
	"#if MASK_BOOL\n"
	"\t\t\t\t\t\tif (!mp[o.m + i * M_RS + j * M_CS])\n"
	"\t\t\t\t\t\t\ts = NEG_INF;\n"
	"#else\n"
	"\t\t\t\t\t\ts += ld_mask(mp, o.m + i * M_RS + j * M_CS) * 1.4426950408889634f;\n"
	"#endif\n"
	"\t\t\t\t\t}\n"
	"\t\t\t\t}\n"
	"#endif\n"
	"\t\t\t\t/* column c = nt * 8 + (x & 1) (a constant) against two per-thread limits */\n"
	"\t\t\t\tif (edge && (nt * 8 + (x & 1) >= clim\n"
	"#if CAUSAL\n"
	"\t\t\t\t\t     || nt * 8 + (x & 1) > rlim + (x >> 1) * 8\n"
	"#endif\n"
	"\t\t\t\t\t     ))\n"
	"\t\t\t\t\ts = NEG_INF;\n"
	"\t\t\t\tsacc[nt * 4 + x] = s;\n"
	"\t\t\t}\n"
	"\t\t/* online softmax: a thread holds rows lane/4 and lane/4 + 8 of its warp's 16;\n"
	"\t\t * the 4 threads of a quad share a row */\n"
	"\t\tfloat corr[2];\n"
	"#pragma unroll\n"
	"\t\tfor (int h = 0; h < 2; h++) {\n"
	"\t\t\tfloat mx = mrow[h];\n"
	"#pragma unroll\n"
	"\t\t\tfor (int nt = 0; nt < NT; nt++)\n"
	"\t\t\t\tmx = fmaxf(mx, fmaxf(sacc[nt * 4 + 2 * h], sacc[nt * 4 + 2 * h + 1]));\n"
	"\t\t\tmx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));\n"
	"\t\t\tmx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));\n"
	"\t\t\tconst float base = mx == NEG_INF ? 0.0f : mx * POST; /* all -inf so far: p = 0 */\n"
	"\t\t\tcorr[h] = ex2(fmaf(mrow[h], POST, -base));\n"
	"\t\t\tmrow[h] = mx;\n"
	"\t\t\tfloat sum = 0.0f;\n"
	"#pragma unroll\n"
	"\t\t\tfor (int nt = 0; nt < NT; nt++) {\n"
	"\t\t\t\tsacc[nt * 4 + 2 * h] = ex2(fmaf(sacc[nt * 4 + 2 * h], POST, -base));\n"
	"\t\t\t\tsacc[nt * 4 + 2 * h + 1] = ex2(fmaf(sacc[nt * 4 + 2 * h + 1], POST, -base));\n"
	"\t\t\t\tsum += sacc[nt * 4 + 2 * h] + sacc[nt * 4 + 2 * h + 1];\n"
	"\t\t\t}\n"
	"\t\t\tlrow[h] = lrow[h] * corr[h] + sum;\n"
	"\t\t}\n"
	"\t\t/* P V of tile t - 1 done: O and P may change */\n"
	"\t\twg_wait<0>();\n"
	"#if WS\n"
	"\t\tif (t > 0) /* tile t - 1's slot is free for the producer */\n"
	"\t\t\tmbar_arrive(bars + 8 * (STAGES + (t - 1) % STAGES));\n"
	"#endif\n"
	"\t\thold(oacc);\n"
	"\t\thold_u(pa);\n"
	"#pragma unroll\n"
	"\t\tfor (int dt = 0; dt < D / 8; dt++) {\n"
	"\t\t\toacc[dt * 4] *= corr[0];\n"
	"\t\t\toacc[dt * 4 + 1] *= corr[0];\n"
	"\t\t\toacc[dt * 4 + 2] *= corr[1];\n"
	"\t\t\toacc[dt * 4 + 3] *= corr[1];\n"
	"\t\t}\n"
	"\t\t/* S's accumulator columns 16 kt .. 16 kt + 15 are P's A fragment kt */\n"
	"#pragma unroll\n"
	"\t\tfor (int kt = 0; kt < KT; kt++) {\n"
	"\t\t\tpa[kt][0] = pack(sacc[kt * 8 + 0], sacc[kt * 8 + 1]);\n"
	"\t\t\tpa[kt][1] = pack(sacc[kt * 8 + 2], sacc[kt * 8 + 3]);\n"
	"\t\t\tpa[kt][2] = pack(sacc[kt * 8 + 4], sacc[kt * 8 + 5]);\n"
	"\t\t\tpa[kt][3] = pack(sacc[kt * 8 + 6], sacc[kt * 8 + 7]);\n"
	"\t\t}\n"
	"\t}\n"
	"\t{ /* ntile >= 1: send >= 1 */\n"
	"\t\tconst unsigned vb = sv + ((ntile - 1) % STAGES) * TN * D * 2;\n"
	"#if PP\n"
	"\t\tturn_wait(wg);\n"
	"#endif\n"
	"\t\twg_fence();\n"
	"#pragma unroll\n"
	"\t\tfor (int kt = 0; kt < KT; kt++)\n"
	"\t\t\twg_pv(oacc, pa[kt], desc(DESC_V, vb + kt * 2048));\n"
	"\t\twg_commit();\n"
	"#if PP\n"
	"\t\tif (wg == 0) /* warpgroup 1's last turn; every arrival is matched */\n"
	"\t\t\tturn_pass(0);\n"
	"#endif\n"
	"\t\twg_wait<0>();\n"
	"\t\thold(oacc);\n"
	"\t}\n"
	"#if !WS\n"
	"\twait_groups<0>();\n"
	"#endif\n"
	"#pragma unroll\n"
	"\tfor (int h = 0; h < 2; h++) {\n"
	"\t\tfloat l = lrow[h];\n"
	"\t\tl += __shfl_xor_sync(0xffffffffu, l, 1);\n"
	"\t\tl += __shfl_xor_sync(0xffffffffu, l, 2);\n"
	"\t\tconst float inv = l == 0.0f ? __int_as_float(0x7fc00000) : 1.0f / l; /* fully masked: NaN */\n"
	"\t\tconst long i = i0 + wr + (lane >> 2) + h * 8;\n"
	"\t\tif (i >= L)\n"
	"\t\t\tcontinue;\n"
	"#pragma unroll\n"
	"\t\tfor (int dt = 0; dt < D / 8; dt++) {\n"
	"\t\t\tconst long c = dt * 8 + (lane & 3) * 2, at = o.o + i * O_RS + c * O_CS;\n"
	"\t\t\tconst float v0 = oacc[dt * 4 + 2 * h] * inv, v1 = oacc[dt * 4 + 2 * h + 1] * inv;\n"
	"#if O_PAIR\n"
	"\t\t\t*(unsigned *)(out + at) = pack(v0, v1);\n"
	"#else\n"
	"\t\t\tunsigned pr = pack(v0, v1);\n"
	"\t\t\tout[at] = (unsigned short)(pr & 0xffffu);\n"
	"\t\t\tout[at + O_CS] = (unsigned short)(pr >> 16);\n"
	"#endif\n"
	"\t\t}\n"
	"\t}\n"
	"\t}\n"
	"}\n";

typedef struct wg_cfg {
	int warps, tn, stages;
	bool ws; /* variant 4: a producer warpgroup */
} wg_cfg;

static unsigned wg_smem(const wg_cfg *c, int64_t d, bool ws)
{
	return (unsigned)((c->warps * 16 + 2 * c->stages * c->tn) * d * 2 + 1024 + (ws ? 16 * c->stages : 0));
}

/* Measured on the H100 (PERF.md, 2026-11-23 and session 3,
 * gpu_test_cuda_attention --sweep): head dim 64 (GPT-2, 512 tokens) runs
 * best with one warpgroup and 64 keys per step (128 where the 64-row
 * blocks do not fill the 132 SMs); head dim 128, causal or unmasked, with
 * two ping-ponging consumer warpgroups, a producer warpgroup and 128 keys
 * (464 causal, 544 unmasked TFLOP/s in session 3's sweep, against 447 and
 * 445 with 96 keys and 414 for the earlier unmasked default of three
 * warpgroups and 64 keys); with a mask (unmeasured there) as before; one
 * warpgroup of 64 keys where bigger blocks would leave most SMs idle. */
static wg_cfg default_wg(const cg_attn_spec *sp)
{
	int64_t blocks64 = (sp->L + 63) / 64 * sp->nb;
	if (sp->E == 64)
		return (wg_cfg){4, blocks64 < 132 ? 128 : 64, 4, false};
	if ((sp->L + 127) / 128 * sp->nb < 132)
		return (wg_cfg){4, 64, 4, false}; /* 128 keys would need 255 registers with a causal mask, and spill */
	if (sp->causal || !sp->has_mask)
		return (wg_cfg){8, 128, 3, true};
	return (wg_cfg){8, 128, 3, false};
}

int cg_render_flash_wg(const ir_graph *g, ir_ref r, const cg_target *tg, const cg_attn_spec *sp,
		       const cg_config *want, cg_step *st, sn_err *e)
{
	wg_cfg c = default_wg(sp);
	bool ws = want && want->variant ? want->variant == 4 : c.ws;
	if (ws != c.ws && sp->E == 128) { /* asked for the other variant: its default shape */
		bool small = (sp->L + 127) / 128 * sp->nb < 132;
		c = ws ? (wg_cfg){small ? 4 : 8, small ? 96 : 128, small ? 4 : 3, true}
		       : (wg_cfg){small ? 4 : 8, small ? 64 : 128, small ? 4 : 3, false};
	}
	int producer = ws ? 128 : 0; /* threads */
	if (ws && sp->E == 128) { /* 384 threads, 168 registers, setmaxnreg: at most 128 keys, two warpgroups */
		c.tn = c.tn > 128 ? 128 : c.tn;
		c.warps = c.warps > 8 ? 8 : c.warps;
	}
	if (want) {
		if (want->tile_k || want->vec || want->rows || want->split_k)
			return sn_errf(e, SN_EUSAGE, "attention (flash wgmma): only tile_m, tile_n, warps, stages and "
				       "block are configurable (tile_k, vec, rows and split_k are not)");
		if (want->warps)
			c.warps = want->warps;
		else if (want->tile_m)
			c.warps = want->tile_m / 16;
		if (want->tile_n)
			c.tn = want->tile_n;
		if (want->stages)
			c.stages = want->stages;
		if (c.warps != 4 && c.warps != 8 && c.warps != 12)
			return sn_errf(e, SN_EUSAGE, "attention (flash wgmma): warps=%d is not 4, 8 or 12 (1 to 3 "
				       "warpgroups)", c.warps);
		if (want->tile_m && want->tile_m != c.warps * 16)
			return sn_errf(e, SN_EUSAGE, "attention (flash wgmma): tile_m=%d must be 64 rows per "
				       "warpgroup, %d with warps=%d", (int)want->tile_m, c.warps * 16, c.warps);
		if (want->block && want->block != c.warps * 32 + producer)
			return sn_errf(e, SN_EUSAGE, "attention (flash wgmma): block=%d must be warps * 32%s = %d",
				       (int)want->block, ws ? " + 128 (the producer)" : "", c.warps * 32 + producer);
	}
	int64_t D = sp->E;
	if (c.tn < 16 || c.tn > 256 || c.tn % 16)
		return sn_errf(e, SN_EUSAGE, "attention (flash wgmma): tile_n=%d must be a multiple of 16 in "
			       "[16, 256]", c.tn);
	if (ws && D == 128 && c.tn > (c.warps == 8 ? 128 : c.warps > 8 ? 96 : 256))
		return sn_errf(e, SN_EUSAGE, "attention (flash wgmma, producer warpgroup): tile_n=%d with warps=%d "
			       "at head dim 128 spills (%d threads leave %d registers): at most %d", c.tn, c.warps,
			       c.warps * 32 + producer, 65536 / (c.warps * 32 + producer) / 8 * 8, c.warps == 8 ? 128 : 96);
	/* fp32 registers per thread: S (tn / 2), O (D / 2) and P (tn / 4) */
	int regs = c.tn / 2 + (int)D / 2 + c.tn / 4;
	if (regs > 192)
		return sn_errf(e, SN_EUSAGE, "attention (flash wgmma): tile_n=%d with head dim %lld needs %d "
			       "accumulator registers per thread (at most 192)", c.tn, (long long)D, regs);
	if (c.stages < (ws ? 2 : 3) || c.stages > 6)
		return sn_errf(e, SN_EUSAGE, "attention (flash wgmma): stages=%d is not in [%d, 6] (a slot for "
			       "S, one for the lagging P V%s)", c.stages, ws ? 2 : 3, ws ? "" : ", one or more in flight");
	unsigned smem = wg_smem(&c, D, ws);
	if (smem > 227 * 1024)
		return sn_errf(e, SN_EUSAGE, "attention (flash wgmma): warps=%d, tile_n=%d and stages=%d need %u "
			       "bytes of shared memory, more than sm_90's %u", c.warps, c.tn, c.stages, smem,
			       227 * 1024);
	int tm = c.warps * 16;
	int64_t tiles = (sp->L + tm - 1) / tm, blocks = tiles * sp->nb;
	if (blocks > 0x7fffffff)
		return sn_errf(e, SN_EINPUT, "scaled_dot_product_attention: too many rows for one launch");

	bool pair = cg_attn_out_pairs(sp);
	/* two consumer warpgroups take turns (ping-pong) and trade registers
	 * with the producer (setmaxnreg: 40 + 2 x 232 of 3 x 168) */
	int pp = ws && c.warps == 8, maxnreg = pp;
	/* batch indices per group of blocks: the blocks of a few (b, h) at a
	 * time, so that the K/V they stream stay in L2 (8 MB a group; all of
	 * them at once where everything fits in 16 MB) */
	int64_t kvb = sp->S * D * 4, group = kvb * sp->nb <= (16 << 20) ? sp->nb : (8 << 20) / kvb;
	group = group < 1 ? 1 : group > sp->nb ? sp->nb : group;

	char cfg[240], scl[48];
	snprintf(cfg, sizeof cfg, "flash (wgmma m64, 128-byte swizzle, cp.async ring%s, P from registers): %lld "
		 "batches, L=%lld S=%lld D=%lld; warps=%d (tile_m=%d) tile_n=%d stages=%d%s",
		 ws ? " filled by a producer warpgroup" : "", (long long)sp->nb,
		 (long long)sp->L, (long long)sp->S, (long long)D, c.warps, tm, c.tn, c.stages,
		 sp->laid ? "; strided operands" : "");
	cg_attn_float(scl, sp->scale * 1.4426950408889634);
	const char *ty = sp->t == IR_BF16 ? "bf16" : "f16";
	sn_buf b = {0};
	cg_emit_spec_st(&b, g, r, cfg, st);
	sn_buf_puts(&b, "\n");
	cg_attn_emit_mask_load(&b, sp);
	sn_buf_printf(&b, "#define KERNEL_NAME %s\n#define MMA_T \"%s\"\n"
			  "#define L %lldL\n#define S %lldL\n#define D %lld\n#define NB %lldL\n#define TILES %lldL\n"
			  "#define TM %d\n#define TN %d\n#define NWG %d\n#define STAGES %d\n#define WS %d\n#define PP %d\n"
			  "#define MAXNREG %d\n#define GROUP %lldL\n"

			  "#define CAUSAL %d\n#define MASK %d\n#define MASK_BOOL %d\n"
			  "#define MASK_T %s\n#define O_PAIR %d\n#define SCALE_LOG2 %s\n",
		      CG_NAME, ty, (long long)sp->L, (long long)sp->S, (long long)D, (long long)sp->nb,
		      (long long)tiles, tm, c.tn, c.warps / 4, c.stages, ws, pp, maxnreg, (long long)group, sp->causal, sp->has_mask,
		      sp->has_mask && sp->mt == IR_BOOL, sp->has_mask ? cg_ctype(sp->mt) : "void", pair, scl);
	cg_attn_emit_rows(&b, sp);
	cg_wgmma_emit_prims(&b);
	cg_wgmma_emit_mma(&b, "wg_s", c.tn, ty, false);
	cg_wgmma_emit_mma(&b, "wg_pv", (int)D, ty, true);
	sn_buf_puts(&b, body);

	st->kind = CG_STEP_KERNEL;
	cg_kernel *kk = &st->k;
	kk->grid[0] = (unsigned)blocks;
	kk->grid[1] = kk->grid[2] = 1;
	kk->block[0] = (unsigned)(c.warps * 32 + producer);
	kk->block[1] = kk->block[2] = 1;
	kk->smem = smem;
	kk->cfg = (cg_config){.variant = ws ? 4 : 3, .block = c.warps * 32 + producer, .tile_m = tm, .tile_n = c.tn,
			      .warps = c.warps, .stages = c.stages};
	cg_attn_bufs(kk, sp);
	return cg_finish(kk, "flash_attention_wg", &b, e);
}
