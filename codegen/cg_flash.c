/* cg_flash.c: flash attention forward on the tensor cores (sm_80+), for
 * f16/bf16 q, k, v with head dims E = Ev of 32 to 256 in steps of 16.
 *
 * A block takes TM query rows of one batch index (WARPS warps, TM / WARPS
 * rows each, MT = TM / WARPS / 16 row tiles of 16 per warp) and walks the
 * keys TN at a time: S = Q K^T with mma.sync m16n8k16 (fp32 accumulators),
 * masked, an online softmax per row (running max and sum in fp32; one FFMA
 * scales a score into exp2's domain and subtracts the max, exp2 on the SFU), then O += P V with P rounded to
 * the input dtype as the A operand (the C fragment of S is laid out as the
 * A fragment of P, so P never leaves registers). Q, K and V tiles sit in
 * shared memory with their 16-byte chunks XOR-swizzled by row (chunk c of
 * row r at c ^ (r & 7)), so that ldmatrix (and ldmatrix.trans for V) reads
 * 8 rows without bank conflicts; K/V tiles arrive through cp.async in a
 * ring of STAGES buffers, the next tiles' copies in flight while the
 * current one is used. Rows and keys past L and S are zero-filled by
 * cp.async and masked; causal blocks stop at their last row's key, a warp
 * skips key tiles wholly after its rows, and blocks start with the longest
 * (the last rows) so the tail is short.
 * A fully masked row has sum 0 and gives NaN, as PyTorch.
 *
 * Configs (cg_config): tile_m, tile_n, warps, stages (block = warps * 32).
 * Operands may be strided (fusion's layouts) as long as each row is
 * contiguous and 16-byte aligned: cg_flash_fits says. */
#include "codegen/cg_attn.h"

#include <stdio.h>
#include <string.h>

void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config); /* cg_common.c */

/* Whether every row of a is contiguous and starts on 16 bytes (8
 * elements): cp.async copies 16 bytes. */
static bool rows_aligned(const cg_attn_addr *a, int br)
{
	if (a->st[br + 1] != 1 || a->off % 8)
		return false;
	for (int i = 0; i <= br; i++)
		if (a->st[i] % 8)
			return false;
	return true;
}

bool cg_flash_fits(const cg_attn_spec *sp, const cg_target *t, char *why, size_t cap)
{
	const char *w = NULL;
	if (t->sm < 80)
		w = "it needs sm_80 or newer";
	else if (sp->t != IR_F16 && sp->t != IR_BF16)
		w = "it takes f16 and bf16 only";
	else if (sp->E != sp->Ev || sp->E % 16 || sp->E < 32 || sp->E > 256)
		w = "it takes head dims 32 to 256 in steps of 16 (E = Ev) only";
	else if (sp->E == 240)
		w = "head dim 240 spills registers (strict NVRTC refuses it)";
	else if (!rows_aligned(&sp->q, sp->br) || !rows_aligned(&sp->k, sp->br) || !rows_aligned(&sp->v, sp->br))
		w = "q, k and v rows must be contiguous and 16-byte aligned";
	else if (sp->L * sp->nb == 0 || sp->S == 0)
		w = "empty";
	if (w)
		snprintf(why, cap, "%s", w);
	return w == NULL;
}

/* Shared memory a block may have on sm (opt-in maximum). */
static unsigned smem_limit(int sm)
{
	if (sm == 80 || sm == 87)
		return 163 * 1024;
	if (sm >= 90 && sm < 100)
		return 227 * 1024;
	return 99 * 1024;
}

/* Bytes per row of a tile in shared memory (the kernel's ROWB). */
static unsigned flash_rowb(int64_t E)
{
	return (unsigned)(E % 64 ? E * 2 + 16 : E * 2);
}

/* The fixed part of the kernel: everything below is specialized by the
 * #defines the renderer writes before it. */
static const char body[] =
	"#define NT (TN / 8)   /* 8-key column tiles of S */\n"
	"#define DT (D / 8)    /* 8-wide column tiles of O */\n"
	"#define DK (D / 16)   /* k-steps of Q K^T */\n"
	"#define KT (TN / 16)  /* k-steps of P V */\n"
	"#define CH (D / 8)    /* 16-byte chunks per row */\n"
	"#define THREADS (WARPS * 32)\n"
	"/* a 16-byte chunk's place in a row of shared memory: rows of 8k chunks\n"
	" * XOR-swizzle chunk c of row r to c ^ (r & 7); others (head dims 32, 48,\n"
	" * 80, 96, ...) pad each row by one chunk, an odd stride of chunks, so 8 rows\n"
	" * at one chunk still fall in 8 distinct bank groups */\n"
	"#if CH % 8 == 0\n"
	"#define ROWB (D * 2)  /* bytes per row in shared memory */\n"
	"#define SWZ(r, c) (((c) ^ ((r) & 7)) << 4)\n"
	"#else\n"
	"#define ROWB (D * 2 + 16)\n"
	"#define SWZ(r, c) ((c) << 4)\n"
	"#endif\n"
	"#define NEG_INF (-__int_as_float(0x7f800000))\n"
	"/* scores stay unscaled up to the max, then one FFMA scales them into\n"
	" * exp2's domain (scale > 0 keeps the max); an additive mask needs them\n"
	" * scaled first */\n"
	"#if MASK && !MASK_BOOL\n"
	"#define PRE SCALE_LOG2\n"
	"#define POST 1.0f\n"
	"#else\n"
	"#define PRE 1.0f\n"
	"#define POST SCALE_LOG2\n"
	"#endif\n\n"
	"static __device__ __forceinline__ unsigned smem_u32(const void *p)\n{\n"
	"\tunsigned r;\n"
	"\tasm(\"{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }\" : \"=r\"(r) : \"l\"(p));\n"
	"\treturn r;\n}\n\n"
	"/* rows [row0, row0 + ROWS) of a row-contiguous operand into a swizzled\n"
	" * tile; rows at or past nvalid are zero-filled (src-size 0) */\n"
	"template <int ROWS>\n"
	"static __device__ __forceinline__ void load_tile(unsigned dst, const unsigned short *g, long base, long rs, long row0, long nvalid)\n{\n"
	"#pragma unroll\n"
	"\tfor (int it = 0; it < (ROWS * CH + THREADS - 1) / THREADS; it++) {\n"
	"\t\tint x = threadIdx.x + it * THREADS, r = x / CH, c = x % CH;\n"
	"\t\tif ((ROWS * CH) % THREADS && x >= ROWS * CH)\n"
	"\t\t\tbreak;\n"
	"\t\tbool ok = row0 + r < nvalid;\n"
	"\t\tconst unsigned short *src = g + (ok ? base + (row0 + r) * rs + c * 8 : 0);\n"
	"\t\tunsigned d = dst + r * ROWB + SWZ(r, c);\n"
	"\t\tasm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"(d), \"l\"(src), \"r\"(ok ? 16 : 0) : \"memory\");\n"
	"\t}\n}\n\n"
	"static __device__ __forceinline__ void commit(void)\n{\n"
	"\tasm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n}\n\n"
	"template <int N>\n"
	"static __device__ __forceinline__ void wait_groups(void)\n{\n"
	"\tasm volatile(\"cp.async.wait_group %0;\" :: \"n\"(N) : \"memory\");\n}\n\n"
	"static __device__ __forceinline__ void ldsm4(unsigned *r, unsigned a)\n{\n"
	"\tasm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\"\n"
	"\t\t     : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));\n}\n\n"
	"static __device__ __forceinline__ void ldsm4t(unsigned *r, unsigned a)\n{\n"
	"\tasm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\"\n"
	"\t\t     : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));\n}\n\n"
	"#if DK % 2\n"
	"static __device__ __forceinline__ void ldsm2(unsigned *r, unsigned a)\n{\n"
	"\tasm volatile(\"ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\"\n"
	"\t\t     : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"(a));\n}\n"
	"#endif\n\n"
	"/* c += a (16x16, row) * b (16x8, col), fp32 accumulators */\n"
	"static __device__ __forceinline__ void mma(float *c, const unsigned *a, unsigned b0, unsigned b1)\n{\n"
	"\tasm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.\" MMA_T \".\" MMA_T \".f32 \"\n"
	"\t\t     \"{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n"
	"\t\t     : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
	"\t\t     : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b0), \"r\"(b1));\n}\n\n"
	"/* two floats as one register of the input dtype, lo in the low half */\n"
	"static __device__ __forceinline__ unsigned pack(float lo, float hi)\n{\n"
	"\tunsigned r;\n"
	"\tasm(\"cvt.rn.\" MMA_T \"x2.f32 %0, %1, %2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo));\n"
	"\treturn r;\n}\n\n"
	"static __device__ __forceinline__ float ex2(float x)\n{\n"
	"\tfloat r;\n"
	"\tasm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(r) : \"f\"(x));\n"
	"\treturn r;\n}\n\n"
	"extern \"C\" __global__ void __launch_bounds__(THREADS)\n"
	"KERNEL_NAME(const unsigned short *__restrict__ qp, const unsigned short *__restrict__ kp,\n"
	"\t    const unsigned short *__restrict__ vp,\n"
	"#if MASK\n"
	"\t    const MASK_T *__restrict__ mp,\n"
	"#endif\n"
	"\t    unsigned short *__restrict__ out)\n{\n"
	"\textern __shared__ __align__(128) unsigned char smem[];\n"
	"\tconst unsigned sq = smem_u32(smem), sk = sq + TM * ROWB, sv = sk + STAGES * TN * ROWB;\n"
	"\tconst int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;\n"
	"\tconst long z = blockIdx.x % NB, i0 = (TILES - 1 - (long)blockIdx.x / NB) * TM;\n"
	"\tconst offs o = batch_offs(z);\n"
	"#if CAUSAL\n"
	"\tconst long send = min(S, i0 + TM); /* keys past the block's last row are hidden from all */\n"
	"#else\n"
	"\tconst long send = S;\n"
	"#endif\n"
	"\tconst int ntile = (int)((send + TN - 1) / TN);\n"
	"\tload_tile<TM>(sq, qp, o.q, Q_RS, i0, L);\n"
	"\tcommit();\n"
	"#pragma unroll\n"
	"\tfor (int s = 0; s < STAGES - 1; s++) {\n"
	"\t\tif (s < ntile) {\n"
	"\t\t\tload_tile<TN>(sk + s * TN * ROWB, kp, o.k, K_RS, (long)s * TN, S);\n"
	"\t\t\tload_tile<TN>(sv + s * TN * ROWB, vp, o.v, V_RS, (long)s * TN, S);\n"
	"\t\t}\n"
	"\t\tcommit();\n"
	"\t}\n"
	"\tconst int wr = warp * MT * 16; /* the warp's first row in the tile */\n"
	"#if QREG\n"
	"\twait_groups<STAGES - 1>();\n"
	"\t__syncthreads();\n"
	"\tunsigned qf[MT][DK][4];\n"
	"#pragma unroll\n"
	"\tfor (int mt = 0; mt < MT; mt++)\n"
	"#pragma unroll\n"
	"\t\tfor (int kk = 0; kk < DK; kk++) {\n"
	"\t\t\tint r = wr + mt * 16 + (lane & 15), c = kk * 2 + (lane >> 4);\n"
	"\t\t\tldsm4(qf[mt][kk], sq + r * ROWB + SWZ(r, c));\n"
	"\t\t}\n"
	"#endif\n"
	"\tfloat oacc[MT][DT][4], mrow[MT][2], lrow[MT][2];\n"
	"#pragma unroll\n"
	"\tfor (int mt = 0; mt < MT; mt++) {\n"
	"#pragma unroll\n"
	"\t\tfor (int dt = 0; dt < DT; dt++)\n"
	"#pragma unroll\n"
	"\t\t\tfor (int x = 0; x < 4; x++)\n"
	"\t\t\t\toacc[mt][dt][x] = 0.0f;\n"
	"\t\tmrow[mt][0] = mrow[mt][1] = NEG_INF;\n"
	"\t\tlrow[mt][0] = lrow[mt][1] = 0.0f;\n"
	"\t}\n"
	"\tfor (int t = 0; t < ntile; t++) {\n"
	"\t\tconst int tl = t + STAGES - 1, slot = t % STAGES;\n"
	"\t\tif (tl < ntile) {\n"
	"\t\t\tload_tile<TN>(sk + (tl % STAGES) * TN * ROWB, kp, o.k, K_RS, (long)tl * TN, S);\n"
	"\t\t\tload_tile<TN>(sv + (tl % STAGES) * TN * ROWB, vp, o.v, V_RS, (long)tl * TN, S);\n"
	"\t\t}\n"
	"\t\tcommit();\n"
	"\t\twait_groups<STAGES - 1>();\n"
	"\t\t__syncthreads();\n"
	"\t\tconst unsigned kb = sk + slot * TN * ROWB, vb = sv + slot * TN * ROWB;\n"
	"\t\tconst long j0 = (long)t * TN;\n"
	"#if CAUSAL\n"
	"\t\tif (j0 <= i0 + wr + MT * 16 - 1) { /* else every key is after every row of this warp */\n"
	"#else\n"
	"\t\t{\n"
	"#endif\n"
	"\t\tfloat sacc[MT][NT][4];\n"
	"#pragma unroll\n"
	"\t\tfor (int mt = 0; mt < MT; mt++)\n"
	"#pragma unroll\n"
	"\t\t\tfor (int nt = 0; nt < NT; nt++)\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int x = 0; x < 4; x++)\n"
	"\t\t\t\t\tsacc[mt][nt][x] = 0.0f;\n"
	"\t\t/* S = Q K^T: per 8 keys, one ldmatrix.x4 gives K's B fragments for 32 of d */\n"
	"#pragma unroll\n"
	"\t\tfor (int k2 = 0; k2 < DK / 2; k2++) {\n"
	"#if !QREG\n"
	"\t\t\tunsigned qf[MT][2][4];\n"
	"#pragma unroll\n"
	"\t\t\tfor (int mt = 0; mt < MT; mt++)\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int h = 0; h < 2; h++) {\n"
	"\t\t\t\t\tint r = wr + mt * 16 + (lane & 15), c = (k2 * 2 + h) * 2 + (lane >> 4);\n"
	"\t\t\t\t\tldsm4(qf[mt][h], sq + r * ROWB + SWZ(r, c));\n"
	"\t\t\t\t}\n"
	"#define QF(mt, kk) qf[mt][(kk) & 1]\n"
	"#else\n"
	"#define QF(mt, kk) qf[mt][kk]\n"
	"#endif\n"
	"#pragma unroll\n"
	"\t\t\tfor (int nt = 0; nt < NT; nt++) {\n"
	"\t\t\t\tunsigned bk[4];\n"
	"\t\t\t\tint r = nt * 8 + (lane & 7), c = k2 * 4 + (lane >> 3);\n"
	"\t\t\t\tldsm4(bk, kb + r * ROWB + SWZ(r, c));\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int mt = 0; mt < MT; mt++) {\n"
	"\t\t\t\t\tmma(sacc[mt][nt], QF(mt, k2 * 2), bk[0], bk[1]);\n"
	"\t\t\t\t\tmma(sacc[mt][nt], QF(mt, k2 * 2 + 1), bk[2], bk[3]);\n"
	"\t\t\t\t}\n"
	"\t\t\t}\n"
	"\t\t}\n"
	"#if DK % 2\n"
	"\t\t/* an odd count of 16-wide k-steps (head dims 48, 80, ...): the last\n"
	"\t\t * with one ldmatrix.x2 of K per 8 keys */\n"
	"\t\t{\n"
	"#if !QREG\n"
	"\t\t\tunsigned qt[MT][4];\n"
	"#pragma unroll\n"
	"\t\t\tfor (int mt = 0; mt < MT; mt++) {\n"
	"\t\t\t\tint r = wr + mt * 16 + (lane & 15), c = (DK - 1) * 2 + (lane >> 4);\n"
	"\t\t\t\tldsm4(qt[mt], sq + r * ROWB + SWZ(r, c));\n"
	"\t\t\t}\n"
	"#define QT(mt) qt[mt]\n"
	"#else\n"
	"#define QT(mt) qf[mt][DK - 1]\n"
	"#endif\n"
	"#pragma unroll\n"
	"\t\t\tfor (int nt = 0; nt < NT; nt++) {\n"
	"\t\t\t\tunsigned bk[2];\n"
	"\t\t\t\tint r = nt * 8 + (lane & 7), c = (DK - 1) * 2 + ((lane >> 3) & 1);\n"
	"\t\t\t\tldsm2(bk, kb + r * ROWB + SWZ(r, c));\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int mt = 0; mt < MT; mt++)\n"
	"\t\t\t\t\tmma(sacc[mt][nt], QT(mt), bk[0], bk[1]);\n"
	"\t\t\t}\n"
	"#undef QT\n"
	"\t\t}\n"
	"#endif\n"
	"\t\t/* scores in the log2 domain, masks applied; only edge tiles test bounds */\n"
	"\t\tconst bool edge = j0 + TN > S\n"
	"#if CAUSAL\n"
	"\t\t\t|| j0 + TN - 1 > i0 + wr\n"
	"#endif\n"
	"\t\t\t;\n"
	"#pragma unroll\n"
	"\t\tfor (int mt = 0; mt < MT; mt++)\n"
	"#pragma unroll\n"
	"\t\t\tfor (int nt = 0; nt < NT; nt++)\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int x = 0; x < 4; x++) {\n"
	"\t\t\t\t\tfloat s = sacc[mt][nt][x] * PRE;\n"
	"#if MASK\n"
	"\t\t\t\t\t{\n"
	"\t\t\t\t\t\tlong i = i0 + wr + mt * 16 + (lane >> 2) + (x >> 1) * 8;\n"
	"\t\t\t\t\t\tlong j = j0 + nt * 8 + (lane & 3) * 2 + (x & 1);\n"
	"\t\t\t\t\t\tif (i < L && j < S) {\n"
	"#if MASK_BOOL\n"
	"\t\t\t\t\t\t\tif (!mp[o.m + i * M_RS + j * M_CS])\n"
	"\t\t\t\t\t\t\t\ts = NEG_INF;\n"
	"#else\n"
	"\t\t\t\t\t\t\ts += ld_mask(mp, o.m + i * M_RS + j * M_CS) * 1.4426950408889634f;\n"
	"#endif\n"
	"\t\t\t\t\t\t}\n"
	"\t\t\t\t\t}\n"
	"#endif\n"
	"\t\t\t\t\tif (edge) {\n"
	"\t\t\t\t\t\tlong j = j0 + nt * 8 + (lane & 3) * 2 + (x & 1);\n"
	"\t\t\t\t\t\tif (j >= S)\n"
	"\t\t\t\t\t\t\ts = NEG_INF;\n"
	"#if CAUSAL\n"
	"\t\t\t\t\t\tif (j > i0 + wr + mt * 16 + (lane >> 2) + (x >> 1) * 8)\n"
	"\t\t\t\t\t\t\ts = NEG_INF;\n"
	"#endif\n"
	"\t\t\t\t\t}\n"
	"\t\t\t\t\tsacc[mt][nt][x] = s;\n"
	"\t\t\t\t}\n"
	"\t\t/* online softmax: a thread holds rows lane/4 and lane/4 + 8 of each row tile;\n"
	"\t\t * the 4 threads of a quad share a row */\n"
	"#pragma unroll\n"
	"\t\tfor (int mt = 0; mt < MT; mt++)\n"
	"#pragma unroll\n"
	"\t\t\tfor (int h = 0; h < 2; h++) {\n"
	"\t\t\t\tfloat mx = mrow[mt][h];\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int nt = 0; nt < NT; nt++)\n"
	"\t\t\t\t\tmx = fmaxf(mx, fmaxf(sacc[mt][nt][2 * h], sacc[mt][nt][2 * h + 1]));\n"
	"\t\t\t\tmx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));\n"
	"\t\t\t\tmx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));\n"
	"\t\t\t\tconst float base = mx == NEG_INF ? 0.0f : mx * POST; /* all -inf so far: p = 0 */\n"
	"\t\t\t\tconst float corr = ex2(fmaf(mrow[mt][h], POST, -base));\n"
	"\t\t\t\tmrow[mt][h] = mx;\n"
	"\t\t\t\tfloat sum = 0.0f;\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int nt = 0; nt < NT; nt++) {\n"
	"\t\t\t\t\tsacc[mt][nt][2 * h] = ex2(fmaf(sacc[mt][nt][2 * h], POST, -base));\n"
	"\t\t\t\t\tsacc[mt][nt][2 * h + 1] = ex2(fmaf(sacc[mt][nt][2 * h + 1], POST, -base));\n"
	"\t\t\t\t\tsum += sacc[mt][nt][2 * h] + sacc[mt][nt][2 * h + 1];\n"
	"\t\t\t\t}\n"
	"\t\t\t\tlrow[mt][h] = lrow[mt][h] * corr + sum;\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int dt = 0; dt < DT; dt++) {\n"
	"\t\t\t\t\toacc[mt][dt][2 * h] *= corr;\n"
	"\t\t\t\t\toacc[mt][dt][2 * h + 1] *= corr;\n"
	"\t\t\t\t}\n"
	"\t\t\t}\n"
	"\t\t/* O += P V: S's C fragments of key tiles 2kt and 2kt+1 are P's A fragment;\n"
	"\t\t * one ldmatrix.x4.trans gives V's B fragments for 16 keys and 16 of d */\n"
	"#pragma unroll\n"
	"\t\tfor (int kt = 0; kt < KT; kt++) {\n"
	"\t\t\tunsigned pa[MT][4];\n"
	"#pragma unroll\n"
	"\t\t\tfor (int mt = 0; mt < MT; mt++) {\n"
	"\t\t\t\tpa[mt][0] = pack(sacc[mt][2 * kt][0], sacc[mt][2 * kt][1]);\n"
	"\t\t\t\tpa[mt][1] = pack(sacc[mt][2 * kt][2], sacc[mt][2 * kt][3]);\n"
	"\t\t\t\tpa[mt][2] = pack(sacc[mt][2 * kt + 1][0], sacc[mt][2 * kt + 1][1]);\n"
	"\t\t\t\tpa[mt][3] = pack(sacc[mt][2 * kt + 1][2], sacc[mt][2 * kt + 1][3]);\n"
	"\t\t\t}\n"
	"#pragma unroll\n"
	"\t\t\tfor (int d2 = 0; d2 < DT / 2; d2++) {\n"
	"\t\t\t\tunsigned bv[4];\n"
	"\t\t\t\tint r = kt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, c = d2 * 2 + (lane >> 4);\n"
	"\t\t\t\tldsm4t(bv, vb + r * ROWB + SWZ(r, c));\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int mt = 0; mt < MT; mt++) {\n"
	"\t\t\t\t\tmma(oacc[mt][2 * d2], pa[mt], bv[0], bv[1]);\n"
	"\t\t\t\t\tmma(oacc[mt][2 * d2 + 1], pa[mt], bv[2], bv[3]);\n"
	"\t\t\t\t}\n"
	"\t\t\t}\n"
	"\t\t}\n"
	"\t\t}\n"
	"\t\t__syncthreads(); /* the slot is free for the copy issued next round */\n"
	"\t}\n"
	"\twait_groups<0>();\n"
	"#pragma unroll\n"
	"\tfor (int mt = 0; mt < MT; mt++)\n"
	"#pragma unroll\n"
	"\t\tfor (int h = 0; h < 2; h++) {\n"
	"\t\t\tfloat l = lrow[mt][h];\n"
	"\t\t\tl += __shfl_xor_sync(0xffffffffu, l, 1);\n"
	"\t\t\tl += __shfl_xor_sync(0xffffffffu, l, 2);\n"
	"\t\t\tconst float inv = l == 0.0f ? __int_as_float(0x7fc00000) : 1.0f / l; /* fully masked: NaN */\n"
	"\t\t\tconst long i = i0 + wr + mt * 16 + (lane >> 2) + h * 8;\n"
	"\t\t\tif (i >= L)\n"
	"\t\t\t\tcontinue;\n"
	"#pragma unroll\n"
	"\t\t\tfor (int dt = 0; dt < DT; dt++) {\n"
	"\t\t\t\tconst long c = dt * 8 + (lane & 3) * 2, at = o.o + i * O_RS + c * O_CS;\n"
	"\t\t\t\tconst float v0 = oacc[mt][dt][2 * h] * inv, v1 = oacc[mt][dt][2 * h + 1] * inv;\n"
	"#if O_PAIR\n"
	"\t\t\t\t*(unsigned *)(out + at) = pack(v0, v1);\n"
	"#else\n"
	"\t\t\t\tunsigned pr = pack(v0, v1);\n"
	"\t\t\t\tout[at] = (unsigned short)(pr & 0xffffu);\n"
	"\t\t\t\tout[at + O_CS] = (unsigned short)(pr >> 16);\n"
	"#endif\n"
	"\t\t\t}\n"
	"\t\t}\n"
	"}\n";

/* The config a block uses: want's fields where set, else the default. */
typedef struct flash_cfg {
	int tm, tn, warps, stages;
} flash_cfg;

/* Measured on the H100 (PERF.md, 2026-11-22, gpu_test_cuda_attention
 * --sweep): head dim 64 (GPT-2) runs best with 64 rows of 4 warps and a
 * 3-deep ring at 512 tokens, batch 1 and 8; head dim 128 with 128 rows of 8
 * warps and 64 keys per step (128 keys ran 7 % faster but spill 64 bytes of
 * registers, which the strict NVRTC mode refuses), or 64 rows of 4 warps
 * when 128-row blocks would leave most of a 132-SM H100 idle. On sm_90 the
 * wgmma kernel (cg_flash_wg.c) is the default at 64 and 128. Head dims
 * past 128 take 16 rows a warp and 32 keys a step, 16 from 224 (more
 * spill registers under strict NVRTC, some masks and causal; not yet
 * measured); up to 128, 64 keys or fewer (Swin's windows of 49) one step
 * of 64 keys, with no ring. */
static flash_cfg default_cfg(const cg_attn_spec *sp, int sm)
{
	flash_cfg c;
	int64_t blocks = (sp->L + 127) / 128 * sp->nb;
	if (sp->E > 128) /* 16 rows a warp: O alone is E / 2 registers; 64 keys spill at 192 and up */
		c = (flash_cfg){64, sp->E >= 224 ? 16 : 32, 4, 2}; /* 224 and 256 spill at 32 keys */
	else if (sp->E <= 64 || sp->S <= 64)
		c = (flash_cfg){64, 64, 4, 3};
	else if (blocks < 2 * 132)
		c = (flash_cfg){64, 64, 4, 2};
	else
		c = (flash_cfg){128, 64, 8, 2};
	/* few keys (Swin's windows of 49): one step of 64 keys takes them all,
	 * and a ring deeper than the steps only costs shared memory */
	int steps = (int)((sp->S + c.tn - 1) / c.tn);
	if (c.stages > steps)
		c.stages = steps;
	/* big head dims on parts with less shared memory (sm_86: 99 KB) */
	while (c.tn > 16 && (unsigned)(c.tm + 2 * c.stages * c.tn) * flash_rowb(sp->E) > smem_limit(sm))
		c.tn /= 2;
	return c;
}

int cg_render_flash(const ir_graph *g, ir_ref r, const cg_target *tg, const cg_attn_spec *sp, const cg_config *want,
		    cg_step *st, sn_err *e)
{
	flash_cfg c = default_cfg(sp, tg->sm), d = c;
	if (want) {
		if (want->tile_k || want->vec || want->rows || want->split_k)
			return sn_errf(e, SN_EUSAGE, "attention (flash): only tile_m, tile_n, warps, stages and block "
				       "are configurable (tile_k, vec, rows and split_k are not)");
		if (want->warps && (want->warps < 1 || want->warps > 16))
			return sn_errf(e, SN_EUSAGE, "attention (flash): warps=%d is not in [1, 16]", (int)want->warps);
		if (want->warps)
			c.warps = want->warps;
		if (want->tile_m)
			c.tm = want->tile_m;
		else if (want->warps)
			c.tm = c.warps * (d.tm / d.warps); /* the default's rows per warp */
		if (want->tile_n)
			c.tn = want->tile_n;
		if (want->stages)
			c.stages = want->stages;
		if (want->block && want->block != c.warps * 32)
			return sn_errf(e, SN_EUSAGE, "attention (flash): block=%d must be warps * 32 = %d",
				       (int)want->block, c.warps * 32);
	}
	int rows_w = c.tm / c.warps;
	if (c.tm < 16 || c.tm % c.warps || rows_w % 16 || rows_w / 16 > 4)
		return sn_errf(e, SN_EUSAGE, "attention (flash): tile_m=%d must be warps (%d) x 16, 32, 48 or 64 rows",
			       c.tm, c.warps);
	if (c.tn < 16 || c.tn > 128 || c.tn % 16)
		return sn_errf(e, SN_EUSAGE, "attention (flash): tile_n=%d must be a multiple of 16 in [16, 128]", c.tn);
	if (c.stages < 1 || c.stages > 4)
		return sn_errf(e, SN_EUSAGE, "attention (flash): stages=%d is not in [1, 4]", c.stages);
	int mt = rows_w / 16;
	/* fp32 registers per thread for O and S, and Q kept in registers when it is small */
	int oregs = mt * (int)sp->E / 8 * 4, sregs = mt * c.tn / 8 * 4, qregs = mt * (int)sp->E / 16 * 4;
	bool qreg = qregs <= 32;
	if (oregs + sregs + (qreg ? qregs : 0) > 200)
		return sn_errf(e, SN_EUSAGE, "attention (flash): tile_m=%d with warps=%d and tile_n=%d needs %d "
			       "accumulator registers per thread (at most 200)", c.tm, c.warps, c.tn,
			       oregs + sregs + (qreg ? qregs : 0));
	unsigned smem = (unsigned)(c.tm + 2 * c.stages * c.tn) * flash_rowb(sp->E);
	if (smem > smem_limit(tg->sm))
		return sn_errf(e, SN_EUSAGE, "attention (flash): tile_m=%d, tile_n=%d and stages=%d need %u bytes "
			       "of shared memory, more than sm_%d's %u", c.tm, c.tn, c.stages, smem, tg->sm,
			       smem_limit(tg->sm));
	int64_t tiles = (sp->L + c.tm - 1) / c.tm, blocks = tiles * sp->nb;
	if (blocks > 0x7fffffff)
		return sn_errf(e, SN_EINPUT, "scaled_dot_product_attention: too many rows for one launch");

	bool pair = cg_attn_out_pairs(sp);

	char cfg[240], scl[48];
	snprintf(cfg, sizeof cfg, "flash (mma.sync m16n8k16, ldmatrix, cp.async): %lld batches, L=%lld S=%lld "
		 "D=%lld; tile_m=%d tile_n=%d warps=%d stages=%d%s%s", (long long)sp->nb, (long long)sp->L,
		 (long long)sp->S, (long long)sp->E, c.tm, c.tn, c.warps, c.stages, qreg ? ", Q in registers" : "",
		 sp->laid ? "; strided operands" : "");
	cg_attn_float(scl, sp->scale * 1.4426950408889634);
	sn_buf b = {0};
	cg_emit_spec_st(&b, g, r, cfg, st);
	sn_buf_puts(&b, "\n");
	cg_attn_emit_mask_load(&b, sp);
	sn_buf_printf(&b, "#define KERNEL_NAME %s\n#define MMA_T \"%s\"\n"
			  "#define L %lldL\n#define S %lldL\n#define D %lld\n#define NB %lldL\n#define TILES %lldL\n"
			  "#define TM %d\n#define TN %d\n#define WARPS %d\n#define MT %d\n#define STAGES %d\n"
			  "#define QREG %d\n#define CAUSAL %d\n#define MASK %d\n#define MASK_BOOL %d\n"
			  "#define MASK_T %s\n#define O_PAIR %d\n#define SCALE_LOG2 %s\n",
		      CG_NAME, sp->t == IR_BF16 ? "bf16" : "f16", (long long)sp->L, (long long)sp->S,
		      (long long)sp->E, (long long)sp->nb, (long long)tiles, c.tm, c.tn, c.warps, mt, c.stages, qreg,
		      sp->causal, sp->has_mask, sp->has_mask && sp->mt == IR_BOOL,
		      sp->has_mask ? cg_ctype(sp->mt) : "void", pair, scl);
	cg_attn_emit_rows(&b, sp);
	sn_buf_puts(&b, body);

	st->kind = CG_STEP_KERNEL;
	cg_kernel *kk = &st->k;
	kk->grid[0] = (unsigned)blocks;
	kk->grid[1] = kk->grid[2] = 1;
	kk->block[0] = (unsigned)c.warps * 32;
	kk->block[1] = kk->block[2] = 1;
	kk->smem = smem;
	kk->cfg = (cg_config){.variant = 1, .block = c.warps * 32, .tile_m = c.tm, .tile_n = c.tn,
			      .warps = c.warps, .stages = c.stages};
	cg_attn_bufs(kk, sp);
	return cg_finish(kk, "flash_attention", &b, e);
}
