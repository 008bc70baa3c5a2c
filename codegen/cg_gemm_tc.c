/* cg_gemm_tc.c: the tensor-core GEMM template (cg_gemm_tc.h).
 *
 * Both variants: a block computes a TM x TN tile of one batch's output
 * (grid x: n tiles, y: m tiles, z: batches), fp32 accumulators in
 * registers, operand slices of TK k-values moved by cp.async in 16-byte
 * chunks, zero-filled past the matrix edges (cp.async's source size 0).
 * When a row's length in bytes is not a multiple of 16 (odd K, or odd N
 * for an untransposed B) the chunks are gathered element by element with
 * ordinary loads into the same places instead: slower, same layout.
 *
 * Variant 1, mma.sync (sm_80+): `stages` slices in a ring, slice t +
 * stages - 1 in flight while slice t is multiplied, one barrier per
 * slice; shared rows padded by 16 bytes so that the 8 row addresses of an
 * ldmatrix phase hit distinct banks. A (and a transposed B) are K-major
 * rows read with ldmatrix.x4; an untransposed 16-bit B is read with
 * ldmatrix.x4.trans from k-rows; TF32 and fp8 B in k-rows are gathered
 * with 32-bit or byte loads. The fragment layouts of m16n8k16 (bf16/f16),
 * m16n8k8 (tf32) and m16n8k32 (e4m3) agree in bytes: a k-step is 32 bytes
 * of a row, so one address scheme serves all. Warps form a wm x wn grid,
 * times split_k k groups that each take a share of every slice's k-steps;
 * the groups' sums are added in shared memory before the store.
 *
 * Variant 2, wgmma (sm_90a): NWG = warps / 4 warpgroups of 64 rows each
 * (TM = 64 NWG), B's TN columns as wgmma's N. Slices are 128 bytes of k
 * (64 bf16/f16, 32 tf32, 128 e4m3) in the 128-byte swizzle (16-byte chunk
 * c of row r at c ^ (r & 7), 8-row atoms of 1024 bytes): A and a
 * transposed B K-major, an untransposed 16-bit B MN-major (k-rows of 64
 * columns per 128-byte block, transposed by the descriptor). Per slice
 * the barrier hands it to wgmma (each thread fences its copies into the
 * async proxy first), the next copy goes into the slot two slices back,
 * the products are issued and committed, and the wait leaves this slice's
 * group in flight. TF32 and fp8 need a transposed B (wgmma transposes
 * 16-bit operands only); products it cannot take use variant 1.
 *
 * The store: from the accumulators (rows gid, gid + 8 of each 16, columns
 * 2 tig, 2 tig + 1 of each 8: the same for both variants), bias added,
 * then the fusion epilogue sn_epi at the output's row-major index, two
 * columns per store where they are adjacent and aligned. */
#include "codegen/cg_gemm_tc.h"
#include "codegen/cg_wgmma.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct tc_cfg {
	int variant; /* 1 mma.sync, 2 wgmma, 3 wgmma fed by TMA */
	int tm, tn, tk, warps, stages, wk;
	int wm, wn; /* variant 1: the warp grid of a k group */
} tc_cfg;

static int esize(ir_dtype t)
{
	return t == IR_F32 ? 4 : t == IR_F8E4M3 ? 1 : 2;
}

static unsigned smem_limit(int sm)
{
	if (sm >= 90)
		return 227 * 1024;
	if (sm == 80 || sm == 87)
		return 163 * 1024;
	return 99 * 1024;
}

static bool pow2_in(int v, int lo, int hi)
{
	return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

/* Rows of A and B whose bytes are multiples of 16: cp.async chunks. */
static bool aligned_a(const cg_gemm_tc_spec *s)
{
	return s->k * esize(s->t) % 16 == 0;
}

static bool aligned_b(const cg_gemm_tc_spec *s)
{
	return (s->trans_b ? s->k : s->n) * esize(s->t) % 16 == 0;
}

bool cg_gemm_tc_fits(const cg_gemm_tc_spec *s, const cg_target *tg, bool tf32, char *why, size_t cap)
{
	if (tg->sm < 80) {
		snprintf(why, cap, "it needs sm_80 or later");
		return false;
	}
	switch (s->t) {
	case IR_BF16:
	case IR_F16: break;
	case IR_F32:
		if (!tf32) {
			snprintf(why, cap, "f32 runs on tensor cores as TF32 only (--precision tf32)");
			return false;
		}
		break;
	case IR_F8E4M3:
		if (tg->sm < 89) {
			snprintf(why, cap, "fp8 (e4m3) tensor cores need sm_89 or later");
			return false;
		}
		break;
	default: snprintf(why, cap, "%s has no tensor-core path", ir_dtype_name(s->t)); return false;
	}
	if (s->m < 1 || s->n < 1 || s->k < 1) {
		snprintf(why, cap, "an empty product");
		return false;
	}
	return true;
}

/* variant 1's smem: the ring, or the k groups' sums when larger */
static unsigned smem1(const cg_gemm_tc_spec *s, const tc_cfg *c)
{
	int es = esize(s->t);
	unsigned rsa = (unsigned)(c->tk * es + 16);
	unsigned bsz = s->trans_b ? (unsigned)c->tn * rsa : (unsigned)c->tk * (unsigned)(c->tn * es + 16);
	unsigned ring = (unsigned)c->stages * ((unsigned)c->tm * rsa + bsz);
	unsigned red = c->wk > 1 ? (unsigned)(c->wk - 1) * (unsigned)c->tm * (unsigned)c->tn * 4 : 0;
	return ring > red ? ring : red;
}

/* variant 2's smem: the ring, or (split-K) the tile's fp32 partial sums
 * when larger */
static unsigned smem2(const tc_cfg *c)
{
	unsigned ring = (unsigned)c->stages * (unsigned)(c->tm + c->tn) * 128;
	unsigned red = c->wk > 1 ? (unsigned)c->tm * (unsigned)c->tn * 4 : 0;
	return (ring > red ? ring : red) + 1024;
}

static int check1(const cg_gemm_tc_spec *s, const cg_target *tg, tc_cfg *c, sn_err *e)
{
	int es = esize(s->t);
	if (c->tk * es != 64 && c->tk * es != 128)
		return sn_errf(e, SN_EUSAGE, "gemm (mma.sync): tile_k %d: takes %d or %d for %s", c->tk, 64 / es, 128 / es,
			       ir_dtype_name(s->t));
	if (!pow2_in(c->tm, 16, 256))
		return sn_errf(e, SN_EUSAGE, "gemm (mma.sync): tile_m %d is not a power of two in [16, 256]", c->tm);
	if (!pow2_in(c->tn, 16, 256))
		return sn_errf(e, SN_EUSAGE, "gemm (mma.sync): tile_n %d is not a power of two in [16, 256]", c->tn);
	if (!pow2_in(c->warps, 2, 16))
		return sn_errf(e, SN_EUSAGE, "gemm (mma.sync): warps %d is not a power of two in [2, 16]", c->warps);
	if (c->wk < 1)
		c->wk = 1;
	int ks = c->tk * es / 32;
	if (!pow2_in(c->wk, 1, 4) || c->wk > c->warps / 2 || ks % c->wk)
		return sn_errf(e, SN_EUSAGE,
			       "gemm (mma.sync): split_k %d: the k groups must be 1, 2 or 4, at most half the warps (%d), "
			       "and divide the %d k-steps of a slice",
			       c->wk, c->warps, ks);
	int best = -1, ws = c->warps / c->wk;
	for (int wm = 1; wm <= ws; wm *= 2) {
		int wn = ws / wm, wtm = c->tm / wm, wtn = c->tn / wn;
		if (c->tm % wm || c->tn % wn || wtm % 16 || wtn % 16 || wtm * wtn > 4096)
			continue;
		int score = wtm >= wtn ? wtm / wtn : 4 * wtn / wtm;
		if (best < 0 || score < best) {
			best = score;
			c->wm = wm;
			c->wn = wn;
		}
	}
	if (best < 0)
		return sn_errf(e, SN_EUSAGE,
			       "gemm (mma.sync): %d warps per k group cannot split a %dx%d tile (warp tiles of 16x16 "
			       "multiples, at most 4096 outputs each)",
			       ws, c->tm, c->tn);
	int nt = 32 * c->warps;
	if (!s->trans_b && c->tn * es / 16 > nt)
		return sn_errf(e, SN_EUSAGE, "gemm (mma.sync): tile_n %d is too wide for %d warps", c->tn, c->warps);
	if (c->stages < 2 || c->stages > 8)
		return sn_errf(e, SN_EUSAGE, "gemm (mma.sync): stages %d is not in [2, 8]", c->stages);
	unsigned sm = smem1(s, c), lim = smem_limit(tg->sm);
	if (sm > lim)
		return sn_errf(e, SN_EUSAGE, "gemm (mma.sync): %dx%dx%d in %d stages needs %u bytes of shared memory, over "
			       "sm_%d's %u",
			       c->tm, c->tn, c->tk, c->stages, sm, tg->sm, lim);
	return SN_OK;
}

static bool fits2(const cg_gemm_tc_spec *s, const cg_target *tg, char *why, size_t cap)
{
	if (tg->sm != 90) {
		snprintf(why, cap, "wgmma needs sm_90 (compiled for sm_90a)");
		return false;
	}
	if (!aligned_a(s) || !aligned_b(s)) {
		snprintf(why, cap, "its rows are not multiples of 16 bytes (cp.async into the swizzle)");
		return false;
	}
	if (!s->trans_b && esize(s->t) != 2) {
		snprintf(why, cap, "wgmma transposes 16-bit operands only: %s needs B transposed (n x k)",
			 ir_dtype_name(s->t));
		return false;
	}
	return true;
}

static int check2(const cg_gemm_tc_spec *s, const cg_target *tg, tc_cfg *c, sn_err *e)
{
	char why[160];
	if (!fits2(s, tg, why, sizeof why))
		return sn_errf(e, SN_EUSAGE, "gemm (wgmma): %s", why);
	c->tk = 128 / esize(s->t);
	if (c->warps != 4 && c->warps != 8)
		return sn_errf(e, SN_EUSAGE, "gemm (wgmma): warps %d is not 4 or 8 (one or two warpgroups)", c->warps);
	if (c->tm != 16 * c->warps)
		return sn_errf(e, SN_EUSAGE, "gemm (wgmma): tile_m %d must be 64 rows per warpgroup, %d with warps=%d", c->tm,
			       16 * c->warps, c->warps);
	if (c->tn < 16 || c->tn > 256 || c->tn % 16 || (!s->trans_b && c->tn % 64))
		return sn_errf(e, SN_EUSAGE, "gemm (wgmma): tile_n %d must be a multiple of 16 in [16, 256]%s", c->tn,
			       s->trans_b ? "" : " (of 64 for an untransposed B)");
	if (c->wk < 1)
		c->wk = 1;
	if (c->wk > 8)
		return sn_errf(e, SN_EUSAGE, "gemm (wgmma): split_k %d is not in [1, 8] (blocks of one cluster)", c->wk);
	if (c->stages < 3 || c->stages > 8)
		return sn_errf(e, SN_EUSAGE, "gemm (wgmma): stages %d is not in [3, 8] (one slot read by wgmma, one "
			       "by the group in flight, one or more loading)", c->stages);
	if (smem2(c) > 227 * 1024)
		return sn_errf(e, SN_EUSAGE, "gemm (wgmma): %dx%d in %d stages needs %u bytes of shared memory, over sm_90's "
			       "%u", c->tm, c->tn, c->stages, smem2(c), 227 * 1024);
	return SN_OK;
}

/* variant 3: the ring, then the full and empty mbarriers */
static unsigned smem3(const tc_cfg *c)
{
	return (unsigned)c->stages * (unsigned)(c->tm + c->tn) * 128 + 1024 + 16 * (unsigned)c->stages;
}

/* TMA's strides are multiples of 16 bytes below 2^40, its coordinates
 * int32. */
static bool fits3(const cg_gemm_tc_spec *s, const cg_target *tg, char *why, size_t cap)
{
	if (!fits2(s, tg, why, cap))
		return false;
	int es = esize(s->t);
	if (s->batch > 1 && ((s->sa * es) % 16 || (s->sb * es) % 16)) {
		snprintf(why, cap, "its batch strides are not multiples of 16 bytes (TMA)");
		return false;
	}
	if (s->m > INT32_MAX || s->n > INT32_MAX || s->k > INT32_MAX || s->batch > INT32_MAX ||
	    s->sa * es >= (INT64_C(1) << 40) || s->sb * es >= (INT64_C(1) << 40)) {
		snprintf(why, cap, "it is too large for TMA's coordinates");
		return false;
	}
	return true;
}

static int check3(const cg_gemm_tc_spec *s, const cg_target *tg, tc_cfg *c, sn_err *e)
{
	char why[160];
	if (!fits3(s, tg, why, sizeof why))
		return sn_errf(e, SN_EUSAGE, "gemm (wgmma, TMA): %s", why);
	c->tk = 128 / esize(s->t);
	if (c->tm != 64 && c->tm != 128)
		return sn_errf(e, SN_EUSAGE, "gemm (wgmma, TMA): tile_m %d is not 64 or 128 (one or two consumer "
			       "warpgroups)", c->tm);
	if (c->warps != c->tm / 16 + 4)
		return sn_errf(e, SN_EUSAGE, "gemm (wgmma, TMA): warps %d: tile_m %d takes %d (its consumers and a "
			       "producer warpgroup)", c->warps, c->tm, c->tm / 16 + 4);
	if (c->tn < 16 || c->tn > 256 || c->tn % 16 || (!s->trans_b && c->tn % 64))
		return sn_errf(e, SN_EUSAGE, "gemm (wgmma, TMA): tile_n %d must be a multiple of 16 in [16, 256]%s", c->tn,
			       s->trans_b ? "" : " (of 64 for an untransposed B)");
	if (c->wk > 1)
		return sn_errf(e, SN_EUSAGE, "gemm (wgmma, TMA): split_k is not built for the TMA variant");
	if (c->stages < 2 || c->stages > 8)
		return sn_errf(e, SN_EUSAGE, "gemm (wgmma, TMA): stages %d is not in [2, 8]", c->stages);
	if (smem3(c) > 227 * 1024)
		return sn_errf(e, SN_EUSAGE, "gemm (wgmma, TMA): %dx%d in %d stages needs %u bytes of shared memory, over "
			       "sm_90's %u", c->tm, c->tn, c->stages, smem3(c), 227 * 1024);
	return SN_OK;
}

/* The default: wgmma fed by TMA on sm_90 where it fits, else wgmma, else mma.sync; the first
 * tile whose grid gives every SM a block (about), else the smallest. */
static tc_cfg default_cfg(const cg_gemm_tc_spec *s, const cg_target *tg)
{
	int es = esize(s->t), sms = tg->sm >= 90 ? 132 : 108;
	char why[160];
	tc_cfg c;
	if (fits3(s, tg, why, sizeof why)) {
		/* tile_m, tile_n, stages: two consumer warpgroups where the grid fills the GPU */
		static const int cand[][3] = {{128, 256, 4}, {128, 128, 6}, {128, 64, 8}, {64, 128, 8}, {64, 64, 8}};
		for (size_t i = 0; i < SN_COUNT(cand); i++) {
			if (!s->trans_b && cand[i][1] % 64)
				continue;
			c = (tc_cfg){.variant = 3, .tm = cand[i][0], .tn = cand[i][1], .warps = cand[i][0] / 16 + 4,
				     .stages = cand[i][2], .tk = 128 / es, .wk = 1};
			int64_t blocks = (s->m + c.tm - 1) / c.tm * ((s->n + c.tn - 1) / c.tn) * s->batch;
			if (blocks >= sms)
				break;
		}
		return c;
	}
	if (fits2(s, tg, why, sizeof why)) {
		static const int cand[][4] = {{128, 256, 8, 3}, {128, 128, 8, 5}, {128, 64, 8, 6}, {64, 64, 4, 8}, {64, 32, 4, 8}};
		for (size_t i = 0; i < SN_COUNT(cand); i++) {
			if (!s->trans_b && cand[i][1] % 64)
				continue; /* B in k-rows: 64-column blocks */
			c = (tc_cfg){.variant = 2, .tm = cand[i][0], .tn = cand[i][1], .warps = cand[i][2], .stages = cand[i][3],
				     .tk = 128 / es, .wk = 1};
			int64_t blocks = (s->m + c.tm - 1) / c.tm * ((s->n + c.tn - 1) / c.tn) * s->batch;
			if (blocks >= sms)
				break;
		}
		return c;
	}
	static const int cand[][5] = {{128, 128, 8, 4, 1}, {128, 64, 4, 4, 1}, {64, 64, 4, 4, 1}, {64, 64, 8, 4, 2}};
	for (size_t i = 0; i < SN_COUNT(cand); i++) {
		c = (tc_cfg){.variant = 1, .tm = cand[i][0], .tn = cand[i][1], .warps = cand[i][2], .stages = cand[i][3],
			     .wk = cand[i][4], .tk = 64 / es};
		while (c.stages > 2 && smem1(s, &c) > smem_limit(tg->sm))
			c.stages--;
		int64_t blocks = (s->m + c.tm - 1) / c.tm * ((s->n + c.tn - 1) / c.tn) * s->batch;
		if (blocks >= sms)
			break;
	}
	return c;
}

/* ---- shared pieces of the source ---- */

static const char *mma_ty(ir_dtype t)
{
	return t == IR_BF16 ? "bf16" : t == IR_F16 ? "f16" : t == IR_F32 ? "tf32" : "e4m3";
}

/* A chunk of VE elements gathered with ordinary loads (rows that are not
 * 16-byte multiples), stored as cp.async would have. */
static void emit_gather(sn_buf *b, const char *ct)
{
	sn_buf_printf(b, "static __device__ __forceinline__ void gather16(unsigned dst, const %s *p, long off, int nv)\n{\n"
			 "\tunion { uint4 u; %s e[16 / sizeof(%s)]; } c;\n"
			 "#pragma unroll\n\tfor (int i = 0; i < (int)(16 / sizeof(%s)); i++)\n"
			 "\t\tc.e[i] = i < nv ? p[off + i] : (%s)0;\n"
			 "\tasm volatile(\"st.shared.v4.u32 [%%0], {%%1,%%2,%%3,%%4};\" :: \"r\"(dst), \"r\"(c.u.x), \"r\"(c.u.y), "
			 "\"r\"(c.u.z), \"r\"(c.u.w) : \"memory\");\n}\n\n",
		      ct, ct, ct, ct, ct);
}

/* One chunk: 16 bytes at element offset off of p into dst, nv of its VE
 * elements valid (0: none, zero-filled). */
static void emit_chunk(sn_buf *b, bool aligned)
{
	if (aligned)
		sn_buf_puts(b, "#define CHUNK(dst, p, off, nv) cp16((dst), (p) + ((nv) > 0 ? (off) : 0), (nv) > 0)\n");
	else
		sn_buf_puts(b, "#define CHUNK(dst, p, off, nv) gather16((dst), (p), (off), (nv))\n");
}

static void emit_head(sn_buf *b, const cg_gemm_tc_spec *s, const cg_epilogue *epi, int threads, bool one_block,
		      int cluster, const char *tail)
{
	const char *ct = cg_ctype(s->t);
	char cl[48] = "";
	if (cluster > 1)
		snprintf(cl, sizeof cl, " __cluster_dims__(1, 1, %d)", cluster);
	sn_buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d%s)%s\n"
			 "%s(const %s *__restrict__ A, const %s *__restrict__ B, ",
		      threads, one_block ? ", 1" : "", cl, CG_NAME, ct, ct);
	if (s->bias)
		sn_buf_printf(b, "const %s *__restrict__ bias, ", ct);
	if (epi)
		sn_buf_printf(b, "%s%s", epi->params[0] == ',' ? epi->params + 1 : epi->params, epi->params[0] ? ", " : "");
	sn_buf_printf(b, "%s *__restrict__ Y%s)\n{\n", cg_ctype(epi ? epi->dtype : s->t), tail);
}

/* The store, from ACC(i, j, q) (fragment i of 16 rows, j of 8 columns),
 * rows m0 + WR + ..., columns n0 + WC + .... */
static void emit_store(sn_buf *b, const cg_gemm_tc_spec *s, const cg_epilogue *epi, int fm, int fn)
{
	ir_dtype ot = epi ? epi->dtype : s->t;
	const char *on = ir_dtype_name(ot), *tn = ir_dtype_name(s->t);
	bool pair = s->n % 2 == 0 && (ot == IR_F32 || ot == IR_BF16 || ot == IR_F16);
	sn_buf_printf(b, "#pragma unroll\n\tfor (int i = 0; i < %d; i++)\n"
			 "#pragma unroll\n\t\tfor (int j = 0; j < %d; j++)\n"
			 "#pragma unroll\n\t\t\tfor (int h = 0; h < 2; h++) {\n"
			 "\t\t\t\tconst long m = m0 + WR + i * 16 + (lane >> 2) + h * 8;\n"
			 "\t\t\t\tconst int n = n0 + WC + j * 8 + (lane & 3) * 2;\n"
			 "\t\t\t\tif (m >= M || n >= N)\n\t\t\t\t\tcontinue;\n"
			 "\t\t\t\tconst bool two = n + 1 < N;\n"
			 "\t\t\t\tfloat v0 = ACC(i, j, 2 * h), v1 = ACC(i, j, 2 * h + 1);\n",
		      fm, fn);
	if (s->bias)
		sn_buf_printf(b, "\t\t\t\tv0 += ld_%s(bias, n);\n\t\t\t\tif (two)\n\t\t\t\t\tv1 += ld_%s(bias, n + 1);\n", tn, tn);
	sn_buf_puts(b, "\t\t\t\tconst long o = ((long)z * M + m) * N + n;\n");
	if (epi)
		sn_buf_printf(b, "\t\t\t\tv0 = sn_epi(v0, o%s);\n\t\t\t\tif (two)\n\t\t\t\t\tv1 = sn_epi(v1, o + 1%s);\n",
			      epi->args, epi->args);
	if (pair && ot == IR_F32)
		sn_buf_puts(b, "\t\t\t\t*(float2 *)(Y + o) = make_float2(v0, v1);\n");
	else if (pair)
		sn_buf_printf(b, "\t\t\t\tunsigned short h0, h1;\n"
				 "\t\t\t\tasm(\"cvt.rn.%s.f32 %%0, %%1;\" : \"=h\"(h0) : \"f\"(v0));\n"
				 "\t\t\t\tasm(\"cvt.rn.%s.f32 %%0, %%1;\" : \"=h\"(h1) : \"f\"(v1));\n"
				 "\t\t\t\t*(unsigned *)(Y + o) = (unsigned)h0 | (unsigned)h1 << 16;\n",
			      ot == IR_BF16 ? "bf16" : "f16", ot == IR_BF16 ? "bf16" : "f16");
	else
		sn_buf_printf(b, "\t\t\t\tst_%s(Y, o, v0);\n\t\t\t\tif (two)\n\t\t\t\t\tst_%s(Y, o + 1, v1);\n", on, on);
	sn_buf_puts(b, "\t\t\t}\n}\n");
}

/* ---- variant 1: mma.sync ---- */

static void emit_mma_sync(sn_buf *b, const cg_gemm_tc_spec *s, const cg_epilogue *epi, const tc_cfg *c)
{
	int es = esize(s->t), ve = 16 / es, nt = 32 * c->warps;
	int kch = c->tk * es / 16, ra = nt / kch;              /* A (and B^T): chunks per row, rows per pass */
	int rsa = c->tk * es + 16;
	int nch = c->tn * es / 16, rb = s->trans_b ? ra : nt / nch; /* B in k-rows: chunks per k-row, rows per pass */
	int rsb = s->trans_b ? rsa : c->tn * es + 16;
	int sab = c->tm * rsa, sbb = s->trans_b ? c->tn * rsb : c->tk * rsb;
	int ai = (c->tm + ra - 1) / ra, bi = s->trans_b ? (c->tn + ra - 1) / ra : (c->tk + rb - 1) / rb;
	int wtm = c->tm / c->wm, wtn = c->tn / c->wn, fm = wtm / 16, fn = wtn / 8, ks = c->tk * es / 32;
	int wk = c->wk > 1 ? c->wk : 1, kpg = ks / wk;
	const char *ct = cg_ctype(s->t), *ty = mma_ty(s->t);
	int mk = s->t == IR_F32 ? 8 : s->t == IR_F8E4M3 ? 32 : 16; /* k of one mma */
	bool al = aligned_a(s) && aligned_b(s);
	sn_buf_printf(b, "#define TM %d\n#define TN %d\n#define TK %d\n#define ST %d\n#define VE %d\n"
			 "#define RSA %d\n#define RSB %d\n#define SLOT %d\n\n",
		      c->tm, c->tn, c->tk, c->stages, ve, rsa, rsb, sab + sbb);
	sn_buf_puts(b, "static __device__ __forceinline__ unsigned smem_u32(const void *p)\n{\n"
		       "\tunsigned s;\n"
		       "\tasm(\"{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }\" : \"=r\"(s) : \"l\"(p));\n"
		       "\treturn s;\n}\n\n"
		       "static __device__ __forceinline__ void cp16(unsigned s, const void *g, bool ok)\n{\n"
		       "\tasm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"(s), \"l\"(g), \"r\"(ok ? 16 : 0) : \"memory\");\n"
		       "}\n\n"
		       "static __device__ __forceinline__ void ldsm4(unsigned *r, unsigned a)\n{\n"
		       "\tasm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\"\n"
		       "\t\t     : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));\n}\n\n"
		       "static __device__ __forceinline__ void ldsm4t(unsigned *r, unsigned a)\n{\n"
		       "\tasm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\"\n"
		       "\t\t     : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));\n}\n\n"
		       "static __device__ __forceinline__ unsigned lds32(unsigned a)\n{\n"
		       "\tunsigned r;\n\tasm volatile(\"ld.shared.u32 %0, [%1];\" : \"=r\"(r) : \"r\"(a));\n\treturn r;\n}\n\n"
		       "static __device__ __forceinline__ unsigned lds8(unsigned a)\n{\n"
		       "\tunsigned short r;\n\tasm volatile(\"ld.shared.u8 %0, [%1];\" : \"=h\"(r) : \"r\"(a));\n\treturn r;\n}\n\n");
	if (!al)
		emit_gather(b, ct);
	emit_chunk(b, al);
	if (s->t == IR_F32)
		sn_buf_puts(b, "static __device__ __forceinline__ unsigned tf32(unsigned v)\n{\n"
			       "\tunsigned r;\n\tasm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(__uint_as_float(v)));\n"
			       "\treturn r;\n}\n\n");
	sn_buf_printf(b, "static __device__ __forceinline__ void mma(float *c, const unsigned *a, const unsigned *b)\n{\n"
			 "\tasm(\"mma.sync.aligned.m16n8k%d.row.col.f32.%s.%s.f32 "
			 "{%%0,%%1,%%2,%%3}, {%%4,%%5,%%6,%%7}, {%%8,%%9}, {%%0,%%1,%%2,%%3};\"\n"
			 "\t\t     : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
			 "\t\t     : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n}\n\n",
		      mk, ty, ty);
	emit_head(b, s, epi, nt, false, 1, "");
	sn_buf_printf(b, "\textern __shared__ __align__(128) unsigned char smem[];\n"
			 "\tconst unsigned sbase = smem_u32(smem);\n"
			 "\tconst int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, z = blockIdx.z;\n"
			 "\tconst long m0 = (long)blockIdx.y * TM;\n\tconst int n0 = blockIdx.x * TN;\n"
			 "\tconst %s *ag = A + (long)z * %lldL;\n\tconst %s *bg = B + (long)z * %lldL;\n"
			 "\tconst int ch = tid %% %d, r0 = tid / %d;\n",
		      ct, (long long)s->sa, ct, (long long)s->sb, kch, kch);
	if (!s->trans_b)
		sn_buf_printf(b, "\tconst int chb = tid %% %d, rb0 = tid / %d;\n", nch, nch);
	/* slice kt into slot: A rows m0 + r, 16-byte chunk ch of k */
	sn_buf_printf(b, "#define LOAD(slot, kt) do { \\\n"
			 "\t\tconst unsigned sa_ = sbase + (slot) * SLOT, sb_ = sa_ + %d; \\\n"
			 "\t\tconst long k_ = (long)(kt) * TK + ch * VE; \\\n"
			 "\t\t_Pragma(\"unroll\") for (int i = 0; i < %d; i++) { \\\n"
			 "\t\t\tconst int r_ = r0 + i * %d; \\\n"
			 "\t\t\t%s{ \\\n"
			 "\t\t\t\tconst long m_ = m0 + r_; \\\n"
			 "\t\t\t\tconst int nv_ = m_ < M ? (int)min((long)VE, max(K - k_, 0L)) : 0; \\\n"
			 "\t\t\t\tCHUNK(sa_ + r_ * RSA + ch * 16, ag, m_ * K + k_, nv_); \\\n"
			 "\t\t\t} \\\n"
			 "\t\t} \\\n",
		      sab, ai, ra, c->tm % ra ? "if (r_ < TM) " : "");
	if (s->trans_b)
		sn_buf_printf(b, "\t\t_Pragma(\"unroll\") for (int j = 0; j < %d; j++) { \\\n"
				 "\t\t\tconst int r_ = r0 + j * %d; \\\n"
				 "\t\t\t%s{ \\\n"
				 "\t\t\t\tconst long n_ = n0 + r_; \\\n"
				 "\t\t\t\tconst int nv_ = n_ < N ? (int)min((long)VE, max(K - k_, 0L)) : 0; \\\n"
				 "\t\t\t\tCHUNK(sb_ + r_ * RSB + ch * 16, bg, n_ * K + k_, nv_); \\\n"
				 "\t\t\t} \\\n"
				 "\t\t} \\\n",
			      bi, ra, c->tn % ra ? "if (r_ < TN) " : "");
	else
		sn_buf_printf(b, "\t\t_Pragma(\"unroll\") for (int j = 0; j < %d; j++) { \\\n"
				 "\t\t\tconst int r_ = rb0 + j * %d; \\\n"
				 "\t\t\t%s{ \\\n"
				 "\t\t\t\tconst long kr_ = (long)(kt) * TK + r_, n_ = n0 + chb * VE; \\\n"
				 "\t\t\t\tconst int nv_ = kr_ < K ? (int)min((long)VE, max(N - n_, 0L)) : 0; \\\n"
				 "\t\t\t\tCHUNK(sb_ + r_ * RSB + chb * 16, bg, kr_ * N + n_, nv_); \\\n"
				 "\t\t\t} \\\n"
				 "\t\t} \\\n",
			      bi, rb, c->tk % rb ? "if (r_ < TK) " : "");
	sn_buf_puts(b, "\t} while (0)\n");
	if (wk > 1)
		sn_buf_printf(b, "\tconst int kg = warp / %d, wq = warp %% %d;\n", c->wm * c->wn, c->wm * c->wn);
	else
		sn_buf_puts(b, "\tconst int wq = warp;\n");
	sn_buf_printf(b, "\tconst int wm0 = (wq / %d) * %d, wn0 = (wq %% %d) * %d;\n"
			 "\tfloat acc[%d][%d][4];\n"
			 "#pragma unroll\n\tfor (int i = 0; i < %d; i++)\n"
			 "#pragma unroll\n\t\tfor (int j = 0; j < %d; j++)\n"
			 "#pragma unroll\n\t\t\tfor (int q = 0; q < 4; q++)\n\t\t\t\tacc[i][j][q] = 0.0f;\n"
			 "\tunsigned af[2][%d][4], bf[2][%d][2];\n",
		      c->wn, wtm, c->wn, wtn, fm, fn, fm, fn, fm, fn);
	/* fragments of k-step kq of the slice at sa/sb into buffer u */
	sn_buf_printf(b, "#define FRAG(u, kq) do { \\\n"
			 "\t\t_Pragma(\"unroll\") for (int i = 0; i < %d; i++) \\\n"
			 "\t\t\tldsm4(af[u][i], sa + (wm0 + i * 16 + (lane & 15)) * RSA + (kq) * 32 + (lane >> 4) * 16); \\\n",
		      fm);
	if (s->trans_b)
		sn_buf_printf(b, "\t\t_Pragma(\"unroll\") for (int j = 0; j < %d; j++) { \\\n"
				 "\t\t\tunsigned r[4]; \\\n"
				 "\t\t\tldsm4(r, sb + (wn0 + j * 16 + (lane & 7) + ((lane >> 4) << 3)) * RSB + (kq) * 32 + ((lane >> 3) & 1) * 16); \\\n"
				 "\t\t\tbf[u][2 * j][0] = r[0]; \\\n\t\t\tbf[u][2 * j][1] = r[1]; \\\n"
				 "\t\t\tbf[u][2 * j + 1][0] = r[2]; \\\n\t\t\tbf[u][2 * j + 1][1] = r[3]; \\\n"
				 "\t\t} \\\n",
			      fn / 2);
	else if (es == 2)
		sn_buf_printf(b, "\t\t_Pragma(\"unroll\") for (int j = 0; j < %d; j++) { \\\n"
				 "\t\t\tunsigned r[4]; \\\n"
				 "\t\t\tldsm4t(r, sb + ((kq) * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * RSB + (wn0 + j * 16 + (lane >> 4) * 8) * 2); \\\n"
				 "\t\t\tbf[u][2 * j][0] = r[0]; \\\n\t\t\tbf[u][2 * j][1] = r[1]; \\\n"
				 "\t\t\tbf[u][2 * j + 1][0] = r[2]; \\\n\t\t\tbf[u][2 * j + 1][1] = r[3]; \\\n"
				 "\t\t} \\\n",
			      fn / 2);
	else if (es == 4)
		sn_buf_printf(b, "\t\t_Pragma(\"unroll\") for (int j = 0; j < %d; j++) { \\\n"
				 "\t\t\tconst unsigned p_ = sb + ((kq) * 8 + (lane & 3)) * RSB + (wn0 + j * 8 + (lane >> 2)) * 4; \\\n"
				 "\t\t\tbf[u][j][0] = lds32(p_); \\\n\t\t\tbf[u][j][1] = lds32(p_ + 4 * RSB); \\\n"
				 "\t\t} \\\n",
			      fn);
	else
		sn_buf_printf(b, "\t\t_Pragma(\"unroll\") for (int j = 0; j < %d; j++) { \\\n"
				 "\t\t\tconst unsigned p_ = sb + ((kq) * 32 + (lane & 3) * 4) * RSB + wn0 + j * 8 + (lane >> 2); \\\n"
				 "\t\t\t_Pragma(\"unroll\") for (int h_ = 0; h_ < 2; h_++) \\\n"
				 "\t\t\t\tbf[u][j][h_] = lds8(p_ + (16 * h_) * RSB) | lds8(p_ + (16 * h_ + 1) * RSB) << 8 | \\\n"
				 "\t\t\t\t\t\tlds8(p_ + (16 * h_ + 2) * RSB) << 16 | lds8(p_ + (16 * h_ + 3) * RSB) << 24; \\\n"
				 "\t\t} \\\n",
			      fn);
	if (s->t == IR_F32)
		sn_buf_printf(b, "\t\t_Pragma(\"unroll\") for (int i = 0; i < %d; i++) \\\n"
				 "\t\t\t_Pragma(\"unroll\") for (int q = 0; q < 4; q++) \\\n\t\t\t\taf[u][i][q] = tf32(af[u][i][q]); \\\n"
				 "\t\t_Pragma(\"unroll\") for (int j = 0; j < %d; j++) \\\n"
				 "\t\t\t_Pragma(\"unroll\") for (int q = 0; q < 2; q++) \\\n\t\t\t\tbf[u][j][q] = tf32(bf[u][j][q]); \\\n",
			      fm, fn);
	char kb[32] = "";
	if (wk > 1)
		snprintf(kb, sizeof kb, "kg * %d + ", kpg);
	sn_buf_printf(b, "\t} while (0)\n"
			 "\tconst int tiles = (int)((K + TK - 1) / TK);\n"
			 "#pragma unroll\n\tfor (int s = 0; s < ST - 1; s++) {\n"
			 "\t\tif (s < tiles)\n\t\t\tLOAD(s, s);\n"
			 "\t\tasm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n\t}\n"
			 "\tfor (int t = 0; t < tiles; t++) {\n"
			 "\t\tasm volatile(\"cp.async.wait_group %%0;\" :: \"n\"(ST - 2) : \"memory\");\n"
			 "\t\t__syncthreads();\n"
			 "\t\tconst int nx = t + ST - 1;\n"
			 "\t\tif (nx < tiles)\n\t\t\tLOAD(nx %% ST, nx);\n"
			 "\t\tasm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n"
			 "\t\tconst unsigned sa = sbase + (t %% ST) * SLOT, sb = sa + %d;\n"
			 "\t\tFRAG(0, %s0);\n"
			 "#pragma unroll\n\t\tfor (int kq = 0; kq < %d; kq++) {\n"
			 "\t\t\tif (kq + 1 < %d)\n\t\t\t\tFRAG((kq + 1) & 1, %skq + 1);\n"
			 "#pragma unroll\n\t\t\tfor (int i = 0; i < %d; i++)\n"
			 "#pragma unroll\n\t\t\t\tfor (int j = 0; j < %d; j++)\n"
			 "\t\t\t\t\tmma(acc[i][j], af[kq & 1][i], bf[kq & 1][j]);\n"
			 "\t\t}\n\t}\n"
			 "#undef LOAD\n#undef FRAG\n",
		      sab, kb, kpg, kpg, kb, fm, fn);
	if (wk > 1) {
		/* groups 1.. put their sums in shared memory, group 0 adds them */
		int per = fm * fn * 4; /* floats per thread */
		sn_buf_printf(b, "\tasm volatile(\"cp.async.wait_group 0;\" ::: \"memory\");\n"
				 "\t__syncthreads();\n"
				 "\tfloat *red = (float *)smem;\n"
				 "\tif (kg > 0) {\n"
				 "#pragma unroll\n\t\tfor (int i = 0; i < %d; i++)\n"
				 "#pragma unroll\n\t\t\tfor (int j = 0; j < %d; j++)\n"
				 "#pragma unroll\n\t\t\t\tfor (int q = 0; q < 4; q++)\n"
				 "\t\t\t\t\tred[(((kg - 1) * %d + wq) * %d + (i * %d + j) * 4 + q) * 32 + lane] = acc[i][j][q];\n"
				 "\t}\n"
				 "\t__syncthreads();\n"
				 "\tif (kg > 0)\n\t\treturn;\n"
				 "#pragma unroll\n\tfor (int g = 1; g < %d; g++)\n"
				 "#pragma unroll\n\t\tfor (int i = 0; i < %d; i++)\n"
				 "#pragma unroll\n\t\t\tfor (int j = 0; j < %d; j++)\n"
				 "#pragma unroll\n\t\t\t\tfor (int q = 0; q < 4; q++)\n"
				 "\t\t\t\t\tacc[i][j][q] += red[(((g - 1) * %d + wq) * %d + (i * %d + j) * 4 + q) * 32 + lane];\n",
			      fm, fn, c->wm * c->wn, per, fn, wk, fm, fn, c->wm * c->wn, per, fn);
	}
	sn_buf_puts(b, "#define WR wm0\n#define WC wn0\n#define ACC(i, j, q) acc[i][j][q]\n");
	emit_store(b, s, epi, fm, fn);
}

/* ---- variant 2: wgmma ---- */

static void emit_wgmma(sn_buf *b, const cg_gemm_tc_spec *s, const cg_epilogue *epi, const tc_cfg *c)
{
	int es = esize(s->t), nt = 32 * c->warps, nwg = c->warps / 4;
	const char *ct = cg_ctype(s->t), *ty = cg_wgmma_type(s->t, true);
	int ksteps = 128 / 32; /* 32 bytes of k per wgmma */
	sn_buf_printf(b, "#define TM %d\n#define TN %d\n#define TK %d\n#define ST %d\n#define VE %d\n#define NWG %d\n"
			 "#define NT %d\n#define SLOT %d\n#define SK %d\n"
			 "/* 128-byte swizzle; K-major: 8-row atoms 1024 bytes apart; MN-major B:\n"
			 " * the same along k, 64-column blocks TK * 128 bytes apart */\n"
			 "#define DESC_K ((1ull << 62) | (64ull << 32) | (1ull << 16))\n"
			 "#define DESC_B ((1ull << 62) | (64ull << 32) | ((unsigned long long)(TK * 8) << 16))\n\n",
		      c->tm, c->tn, c->tk, c->stages, 16 / es, nwg, nt, (c->tm + c->tn) * 128, c->wk > 1 ? c->wk : 1);
	cg_wgmma_emit_mma_tb(b, "wg_mma", c->tn, ty, !s->trans_b);
	int sk = c->wk > 1 ? c->wk : 1;
	if (sk > 1)
		sn_buf_puts(b, "static __device__ __forceinline__ unsigned cta_rank()\n{\n"
			       "\tunsigned r;\n\tasm volatile(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(r));\n\treturn r;\n}\n\n"
			       "static __device__ __forceinline__ void cluster_sync()\n{\n"
			       "\tasm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;\" ::: "
			       "\"memory\");\n}\n\n"
			       "static __device__ __forceinline__ float4 ld_peer4(unsigned a, unsigned rank)\n{\n"
			       "\tunsigned p;\n\tfloat4 v;\n"
			       "\tasm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\" : \"=r\"(p) : \"r\"(a), \"r\"(rank));\n"
			       "\tasm volatile(\"ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];\" : \"=f\"(v.x), \"=f\"(v.y), "
			       "\"=f\"(v.z), \"=f\"(v.w) : \"r\"(p) : \"memory\");\n"
			       "\treturn v;\n}\n\n");
	emit_head(b, s, epi, nt, true, sk, "");
	sn_buf_printf(b, "\textern __shared__ __align__(1024) unsigned char smem[];\n"
			 "\tconst unsigned sbase = (smem_u32(smem) + 1023u) & ~1023u;\n"
			 "\tconst int tid = threadIdx.x, lane = tid & 31, z = blockIdx.z%s;\n"
			 "\tconst int wg = __shfl_sync(0xffffffffu, tid >> 7, 0); /* provably warp-uniform for ptxas */\n"
			 "\tconst long m0 = (long)blockIdx.y * TM;\n\tconst int n0 = blockIdx.x * TN;\n"
			 "\tconst %s *ag = A + (long)z * %lldL;\n\tconst %s *bg = B + (long)z * %lldL;\n",
		      sk > 1 ? " / SK" : "", ct, (long long)s->sa, ct, (long long)s->sb);
	/* a slice: A rows (and B^T rows) of 8 chunks; B in k-rows: TK rows of TN / 8 chunks */
	sn_buf_printf(b, "#define LOAD(slot, kt) do { \\\n"
			 "\t\tconst unsigned sa_ = sbase + (slot) * SLOT, sb_ = sa_ + TM * 128; \\\n"
			 "\t\t_Pragma(\"unroll\") for (int it = 0; it < %d; it++) { \\\n"
			 "\t\t\tconst int x_ = tid + it * NT, r_ = x_ >> 3, c_ = x_ & 7; \\\n"
			 "\t\t\tconst long m_ = m0 + r_, k_ = (long)(kt) * TK + c_ * VE; \\\n"
			 "\t\t\tconst bool ok_ = m_ < M && k_ < K; \\\n"
			 "\t\t\tcp_async16(sa_ + r_ * 128 + ((c_ ^ (r_ & 7)) << 4), ag + (ok_ ? m_ * K + k_ : 0), ok_); \\\n"
			 "\t\t} \\\n",
		      c->tm * 8 / nt);
	if (s->trans_b)
		sn_buf_printf(b, "\t\t_Pragma(\"unroll\") for (int it = 0; it < %d; it++) { \\\n"
				 "\t\t\tconst int x_ = tid + it * NT, r_ = x_ >> 3, c_ = x_ & 7; \\\n"
				 "\t\t\tif (%d && x_ >= TN * 8) \\\n\t\t\t\tbreak; \\\n"
				 "\t\t\tconst long n_ = n0 + r_, k_ = (long)(kt) * TK + c_ * VE; \\\n"
				 "\t\t\tconst bool ok_ = n_ < N && k_ < K; \\\n"
				 "\t\t\tcp_async16(sb_ + r_ * 128 + ((c_ ^ (r_ & 7)) << 4), bg + (ok_ ? n_ * K + k_ : 0), ok_); \\\n"
				 "\t\t} \\\n",
			      (c->tn * 8 + nt - 1) / nt, (c->tn * 8) % nt != 0);
	else
		sn_buf_printf(b, "\t\t_Pragma(\"unroll\") for (int it = 0; it < %d; it++) { \\\n"
				 "\t\t\tconst int x_ = tid + it * NT, r_ = x_ / (TN / 8), c_ = x_ %% (TN / 8); \\\n"
				 "\t\t\tif (%d && x_ >= TK * (TN / 8)) \\\n\t\t\t\tbreak; \\\n"
				 "\t\t\tconst long k_ = (long)(kt) * TK + r_, n_ = n0 + c_ * VE; \\\n"
				 "\t\t\tconst bool ok_ = k_ < K && n_ < N; \\\n"
				 "\t\t\tcp_async16(sb_ + (c_ >> 3) * (TK * 128) + r_ * 128 + (((c_ & 7) ^ (r_ & 7)) << 4), "
				 "bg + (ok_ ? k_ * N + n_ : 0), ok_); \\\n"
				 "\t\t} \\\n",
			      (c->tk * c->tn / 8 + nt - 1) / nt, (c->tk * c->tn / 8) % nt != 0);
	sn_buf_printf(b, "\t} while (0)\n"
			 "\tfloat acc[TN / 2];\n"
			 "#pragma unroll\n\tfor (int x = 0; x < TN / 2; x++)\n\t\tacc[x] = 0.0f;\n"
			 "\tconst int kt_all = (int)((K + TK - 1) / TK);\n"
			 "\t/* split-K: block r of a cluster takes slices [kt_all r / SK, kt_all (r + 1) / SK) */\n"
			 "\tconst int rank = %s;\n"
			 "\tconst int kt0 = (int)((long)kt_all * rank / SK), tiles = (int)((long)kt_all * (rank + 1) / SK) - kt0;\n"
			 "#pragma unroll\n\tfor (int s = 0; s < ST - 2; s++) {\n"
			 "\t\tif (s < tiles)\n\t\t\tLOAD(s, kt0 + s);\n"
			 "\t\tcp_commit();\n\t}\n"
			 "\tfor (int t = 0; t < tiles; t++) {\n"
			 "\t\t/* slice t has landed (this thread's copies), fenced into the async proxy;\n"
			 "\t\t * after the barrier everyone's have, and slice t - 2's products are done */\n"
			 "\t\tcp_wait<ST - 3>();\n"
			 "\t\tasm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
			 "\t\t__syncthreads();\n"
			 "\t\tconst int nx = t + ST - 2;\n"
			 "\t\tif (nx < tiles)\n\t\t\tLOAD(nx %% ST, kt0 + nx);\n"
			 "\t\tcp_commit();\n"
			 "\t\tconst unsigned sa = sbase + (t %% ST) * SLOT, sb = sa + TM * 128;\n"
			 "\t\twg_fence();\n"
			 "#pragma unroll\n\t\tfor (int kk = 0; kk < %d; kk++)\n"
			 "\t\t\twg_mma(acc, desc(DESC_K, sa + wg * 64 * 128 + kk * 32), %s, 1);\n"
			 "\t\twg_commit();\n"
			 "\t\twg_wait<1>();\n"
			 "\t\thold(acc);\n"
			 "\t}\n"
			 "\twg_wait<0>();\n"
			 "\thold(acc);\n"
			 "#undef LOAD\n",
		      sk > 1 ? "(int)cta_rank()" : "0", ksteps,
		      s->trans_b ? "desc(DESC_K, sb + kk * 32)" : "desc(DESC_B, sb + kk * 2048)");
	if (sk > 1)
		/* every block's fp32 partial tile into its own shared memory
		 * (the ring is done with), then block 0 of the cluster adds
		 * the others' in rank order (deterministic) and stores; the
		 * second barrier keeps the others' shared memory alive until
		 * it has read */
		sn_buf_puts(b, "\tcp_wait<0>();\n"
			       "\t__syncthreads();\n"
			       "#pragma unroll\n\tfor (int x = 0; x < TN / 8; x++)\n"
			       "\t\tasm volatile(\"st.shared.v4.f32 [%0], {%1,%2,%3,%4};\" :: \"r\"(sbase + (x * NT + tid) * 16), "
			       "\"f\"(acc[4 * x]), \"f\"(acc[4 * x + 1]), \"f\"(acc[4 * x + 2]), \"f\"(acc[4 * x + 3]) : \"memory\");\n"
			       "\tcluster_sync();\n"
			       "\tif (rank == 0) {\n"
			       "#pragma unroll 1\n\t\tfor (unsigned r = 1; r < SK; r++)\n"
			       "#pragma unroll\n\t\t\tfor (int x = 0; x < TN / 8; x++) {\n"
			       "\t\t\t\tconst float4 v = ld_peer4(sbase + (x * NT + tid) * 16, r);\n"
			       "\t\t\t\tacc[4 * x] += v.x;\n\t\t\t\tacc[4 * x + 1] += v.y;\n"
			       "\t\t\t\tacc[4 * x + 2] += v.z;\n\t\t\t\tacc[4 * x + 3] += v.w;\n"
			       "\t\t\t}\n\t}\n"
			       "\tcluster_sync();\n"
			       "\tif (rank != 0)\n\t\treturn;\n");
	sn_buf_puts(b, "#define WR (wg * 64 + ((tid >> 5) & 3) * 16)\n#define WC 0\n#define ACC(i, j, q) acc[(j) * 4 + (q)]\n");
	emit_store(b, s, epi, 1, c->tn / 8);
}

/* ---- variant 3: wgmma fed by TMA, a producer warpgroup ----
 *
 * Warpgroups 0 .. NC-1 (NC = TM / 64) consume, warpgroup NC produces:
 * one of its threads waits for a slot's `empty` barrier, arms its `full`
 * barrier with the slot's bytes and issues the slot's TMA boxes (A: TK x
 * TM, B: TK x TN transposed or TN / 64 boxes of 64 x TK in k-rows), which
 * land in the same 128-byte swizzle as variant 2's copies, zero-filled
 * past the edges. A consumer waits for `full`, issues its 64 rows'
 * products, keeps one group in flight and releases the slot before it
 * (every consumer thread arrives on `empty`). With two consumers the
 * producer gives its registers to them (setmaxnreg 40 / 232). */

/* The tensor map of one operand: rank 2 (inner, outer), or 3 with the
 * batch when the operand has a batch stride. */
static void tmap_of(cg_tmap *m, uint32_t arg, ir_dtype t, int64_t inner, int64_t outer, int64_t batch, int64_t stride,
		    uint32_t box0, uint32_t box1)
{
	int es = esize(t);
	*m = (cg_tmap){.arg = arg, .swizzle = 3 /* CU_TENSOR_MAP_SWIZZLE_128B */};
	/* CUtensorMapDataType: 9 BFLOAT16, 6 FLOAT16, 7 FLOAT32 (read as TF32 by wgmma), 0 UINT8 (e4m3's bytes) */
	m->dtype = t == IR_BF16 ? 9 : t == IR_F16 ? 6 : t == IR_F32 ? 7 : 0;
	m->rank = batch > 1 && stride ? 3 : 2;
	m->dims[0] = (uint64_t)inner;
	m->dims[1] = (uint64_t)outer;
	m->strides[1] = (uint64_t)(inner * es);
	m->box[0] = box0;
	m->box[1] = box1;
	if (m->rank == 3) {
		m->dims[2] = (uint64_t)batch;
		m->strides[2] = (uint64_t)(stride * es);
		m->box[2] = 1;
	}
}

static void emit_tma(sn_buf *b, const cg_gemm_tc_spec *s, const cg_epilogue *epi, const tc_cfg *c, const cg_tmap *ta,
		     const cg_tmap *tb)
{
	int nc = c->tm / 64, nt = 128 * (nc + 1);
	const char *ty = cg_wgmma_type(s->t, true);
	sn_buf_printf(b, "#define TM %d\n#define TN %d\n#define TK %d\n#define ST %d\n#define NC %d\n#define SLOT %d\n"
			 "/* tensor maps: A rank %u, box %ux%u; B rank %u, box %ux%u; 128-byte swizzle */\n"
			 "#define DESC_K ((1ull << 62) | (64ull << 32) | (1ull << 16))\n"
			 "#define DESC_B ((1ull << 62) | (64ull << 32) | ((unsigned long long)(TK * 8) << 16))\n\n",
		      c->tm, c->tn, c->tk, c->stages, nc, (c->tm + c->tn) * 128, ta->rank, ta->box[0], ta->box[1], tb->rank,
		      tb->box[0], tb->box[1]);
	cg_wgmma_emit_mma_tb(b, "wg_mma", c->tn, ty, !s->trans_b);
	emit_head(b, s, epi, nt, true, 1, ", const __grid_constant__ sn_tmap ta, const __grid_constant__ sn_tmap tb");
	sn_buf_puts(b, "\textern __shared__ __align__(1024) unsigned char smem[];\n"
		       "\tconst unsigned sbase = (smem_u32(smem) + 1023u) & ~1023u;\n"
		       "\tconst unsigned full = sbase + ST * SLOT, empty = full + 8 * ST;\n"
		       "\tconst int tid = threadIdx.x, lane = tid & 31, z = blockIdx.z;\n"
		       "\tconst int wg = __shfl_sync(0xffffffffu, tid >> 7, 0); /* provably warp-uniform for ptxas */\n"
		       "\tconst long m0 = (long)blockIdx.y * TM;\n\tconst int n0 = blockIdx.x * TN;\n"
		       "\tconst int tiles = (int)((K + TK - 1) / TK);\n"
		       "\tif (tid == 0) {\n"
		       "\t\ttma_prefetch(&ta);\n\t\ttma_prefetch(&tb);\n"
		       "#pragma unroll\n\t\tfor (int s = 0; s < ST; s++) {\n"
		       "\t\t\tmbar_init(full + 8 * s, 1);\n\t\t\tmbar_init(empty + 8 * s, NC * 128);\n\t\t}\n"
		       "\t\tmbar_fence_init();\n\t}\n"
		       "\t__syncthreads();\n"
		       "\tif (wg == NC) {\n");
	if (nc == 2)
		sn_buf_puts(b, "\t\tregs_dec<40>();\n");
	sn_buf_puts(b, "\t\tif (tid == NC * 128) {\n"
		       "\t\t\tfor (int t = 0; t < tiles; t++) {\n"
		       "\t\t\t\tconst int s = t % ST;\n"
		       "\t\t\t\tmbar_wait(empty + 8 * s, ((t / ST) & 1) ^ 1); /* the first round passes */\n"
		       "\t\t\t\tconst unsigned sa = sbase + s * SLOT, sb = sa + TM * 128, bar = full + 8 * s;\n"
		       "\t\t\t\tmbar_expect_tx(bar, SLOT);\n");
	if (ta->rank == 3)
		sn_buf_puts(b, "\t\t\t\ttma_load3(sa, &ta, t * TK, (int)m0, z, bar);\n");
	else
		sn_buf_puts(b, "\t\t\t\ttma_load2(sa, &ta, t * TK, (int)m0, bar);\n");
	const char *zc = tb->rank == 3 ? ", z" : "";
	const char *ld = tb->rank == 3 ? "tma_load3" : "tma_load2";
	if (s->trans_b)
		sn_buf_printf(b, "\t\t\t\t%s(sb, &tb, t * TK, n0%s, bar);\n", ld, zc);
	else
		sn_buf_printf(b, "#pragma unroll\n\t\t\t\tfor (int j = 0; j < TN / 64; j++)\n"
				 "\t\t\t\t\t%s(sb + j * (TK * 128), &tb, n0 + 64 * j, t * TK%s, bar);\n",
			      ld, zc);
	sn_buf_puts(b, "\t\t\t}\n\t\t}\n\t\treturn;\n\t}\n");
	if (nc == 2)
		sn_buf_puts(b, "\tregs_inc<232>();\n");
	sn_buf_printf(b, "\tfloat acc[TN / 2];\n"
			 "#pragma unroll\n\tfor (int x = 0; x < TN / 2; x++)\n\t\tacc[x] = 0.0f;\n"
			 "\tfor (int t = 0; t < tiles; t++) {\n"
			 "\t\tconst int s = t %% ST;\n"
			 "\t\tmbar_wait(full + 8 * s, (t / ST) & 1);\n"
			 "\t\tconst unsigned sa = sbase + s * SLOT, sb = sa + TM * 128;\n"
			 "\t\twg_fence();\n"
			 "#pragma unroll\n\t\tfor (int kk = 0; kk < 4; kk++)\n"
			 "\t\t\twg_mma(acc, desc(DESC_K, sa + wg * 64 * 128 + kk * 32), %s, 1);\n"
			 "\t\twg_commit();\n"
			 "\t\twg_wait<1>();\n"
			 "\t\thold(acc);\n"
			 "\t\tif (t > 0) /* slice t - 1's products are done: its slot may refill */\n"
			 "\t\t\tmbar_arrive(empty + 8 * ((t - 1) %% ST));\n"
			 "\t}\n"
			 "\twg_wait<0>();\n"
			 "\thold(acc);\n",
		      s->trans_b ? "desc(DESC_K, sb + kk * 32)" : "desc(DESC_B, sb + kk * 2048)");
	sn_buf_puts(b, "#define WR (wg * 64 + ((tid >> 5) & 3) * 16)\n#define WC 0\n#define ACC(i, j, q) acc[(j) * 4 + (q)]\n");
	emit_store(b, s, epi, 1, c->tn / 8);
}

/* ---- rendering ---- */

int cg_gemm_tc_render(const ir_graph *g, ir_ref r, const cg_gemm_tc_spec *s, const cg_target *tg,
		      const cg_config *want, cg_step *st, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	char why[200];
	if (!cg_gemm_tc_fits(s, tg, s->t == IR_F32, why, sizeof why))
		return sn_errf(e, SN_EUSAGE, "gemm: the tensor-core template cannot run this product: %s", why);
	tc_cfg c = default_cfg(s, tg);
	if (want) {
		if (want->block || want->vec || want->rows)
			return sn_errf(e, SN_EUSAGE, "gemm: %s is not a config field of the GEMM template (variant, tile_m, "
				       "tile_n, tile_k, warps, stages, split_k)",
				       want->block ? "block" : want->vec ? "vec" : "rows");
		if (want->variant && (want->variant < 1 || want->variant > 3))
			return sn_errf(e, SN_EUSAGE, "gemm: variant %d is not 1 (mma.sync), 2 (wgmma) or 3 (wgmma, TMA)",
				       (int)want->variant);
		if (want->variant == 2 && c.variant != 2 && !fits2(s, tg, why, sizeof why))
			return sn_errf(e, SN_EUSAGE, "gemm: variant 2 (wgmma) cannot run this product: %s", why);
		if (want->variant == 3 && c.variant != 3 && !fits3(s, tg, why, sizeof why))
			return sn_errf(e, SN_EUSAGE, "gemm: variant 3 (wgmma, TMA) cannot run this product: %s", why);
		if (want->variant && want->variant != c.variant) {
			int es = esize(s->t);
			c = want->variant == 3	 ? (tc_cfg){.variant = 3, .tm = 128, .tn = 128, .warps = 12, .stages = 5, .tk = 128 / es}
			    : want->variant == 2 ? (tc_cfg){.variant = 2, .tm = 128, .tn = 128, .warps = 8, .stages = 4, .tk = 128 / es}
						 : (tc_cfg){.variant = 1, .tm = 128, .tn = 128, .warps = 8, .stages = 3, .tk = 64 / es};
		}
		if (want->tile_m)
			c.tm = want->tile_m;
		if (c.variant == 3 && want->tile_m && !want->warps)
			c.warps = c.tm / 16 + 4; /* the consumers and the producer */
		if (want->tile_n)
			c.tn = want->tile_n;
		if (want->warps)
			c.warps = want->warps;
		if (want->stages)
			c.stages = want->stages;
		if (want->split_k)
			c.wk = want->split_k;
		else if (want->warps || want->tile_m || want->tile_n)
			c.wk = 1; /* one k group unless asked */
		if (want->tile_k) {
			if (c.variant >= 2 && want->tile_k != 128 / esize(s->t))
				return sn_errf(e, SN_EUSAGE, "gemm (wgmma): tile_k is 128 bytes of k (%d for %s)",
					       128 / esize(s->t), ir_dtype_name(s->t));
			c.tk = want->tile_k;
		}
	}
	int rc = c.variant == 3 ? check3(s, tg, &c, e) : c.variant == 2 ? check2(s, tg, &c, e) : check1(s, tg, &c, e);
	if (rc)
		return rc;
	int64_t gx = (s->n + c.tn - 1) / c.tn, gy = (s->m + c.tm - 1) / c.tm;
	int64_t gz = s->batch * (c.variant == 2 && c.wk > 1 ? c.wk : 1);
	if (gy > 65535 || gz > 65535 || gx > 0x7fffffff)
		return sn_errf(e, SN_EINPUT, "%s: the product is too large for one launch", ir_ops[n->op].name);
	const cg_epilogue *epi = st->epi;
	char cfg[240];
	snprintf(cfg, sizeof cfg, "GEMM template (%s): %lld batches of %lldx%lld @ %lldx%lld%s%s; %dx%dx%d tiles, "
		 "%d warps, %d stages%s%s%s",
		 c.variant == 3	  ? "wgmma, 128-byte swizzle, TMA ring, producer warpgroup"
		 : c.variant == 2 ? "wgmma, 128-byte swizzle, cp.async ring"
				  : "mma.sync, ldmatrix, cp.async ring",
		 (long long)s->batch, (long long)s->m, (long long)s->k, (long long)s->k, (long long)s->n,
		 s->trans_b ? " (B transposed)" : "", s->t == IR_F32 ? " as tf32" : "", c.tm, c.tn, c.tk, c.warps,
		 c.stages, c.wk > 1 ? (c.variant == 2 ? ", split-K over a cluster of " : ", k groups ") : "",
		 c.wk > 1 ? (char[]){(char)('0' + c.wk), 0} : "", c.wk > 1 && c.variant == 2 ? " blocks" : "");
	sn_buf b = {0};
	cg_emit_spec_st(&b, g, r, cfg, st);
	sn_buf_puts(&b, "\n");
	cg_emit_dtype_helpers(&b, s->t);
	if (epi) {
		cg_emit_dtype_helpers(&b, epi->dtype);
		sn_buf_puts(&b, epi->fn);
		sn_buf_puts(&b, "\n");
	}
	if (c.variant >= 2)
		cg_wgmma_emit_prims(&b); /* before M, N, K: its templates name a parameter N */
	if (c.variant == 3)
		cg_wgmma_emit_tma(&b);
	sn_buf_printf(&b, "#define M %lldL\n#define N %lldL\n#define K %lldL\n", (long long)s->m, (long long)s->n,
		      (long long)s->k);
	cg_tmap tmaps[2];
	if (c.variant == 3) {
		tmap_of(&tmaps[0], 0, s->t, s->k, s->m, s->batch, s->sa, (uint32_t)c.tk, (uint32_t)c.tm);
		if (s->trans_b)
			tmap_of(&tmaps[1], 1, s->t, s->k, s->n, s->batch, s->sb, (uint32_t)c.tk, (uint32_t)c.tn);
		else
			tmap_of(&tmaps[1], 1, s->t, s->n, s->k, s->batch, s->sb, 64, (uint32_t)c.tk);
		emit_tma(&b, s, epi, &c, &tmaps[0], &tmaps[1]);
	} else if (c.variant == 2) {
		emit_wgmma(&b, s, epi, &c);
	} else {
		emit_mma_sync(&b, s, epi, &c);
	}

	st->kind = CG_STEP_KERNEL;
	cg_kernel *kk = &st->k;
	kk->grid[0] = (unsigned)gx;
	kk->grid[1] = (unsigned)gy;
	kk->grid[2] = (unsigned)gz;
	kk->block[0] = (unsigned)(32 * c.warps);
	kk->block[1] = kk->block[2] = 1;
	kk->smem = c.variant == 3 ? smem3(&c) : c.variant == 2 ? smem2(&c) : smem1(s, &c);
	kk->ntmaps = c.variant == 3 ? 2 : 0;
	if (kk->ntmaps)
		memcpy(kk->tmaps, tmaps, sizeof tmaps);
	kk->nbufs = 0;
	kk->bufs[kk->nbufs++] = n->in[0];
	kk->bufs[kk->nbufs++] = n->in[1];
	if (s->bias)
		kk->bufs[kk->nbufs++] = n->in[2];
	if (epi)
		for (uint32_t i = 0; i < epi->nex; i++)
			kk->bufs[kk->nbufs++] = epi->ex[i];
	kk->bufs[kk->nbufs++] = epi ? epi->out : r;
	kk->cfg = (cg_config){.variant = c.variant, .block = 32 * c.warps, .tile_m = c.tm, .tile_n = c.tn,
			      .tile_k = c.tk, .warps = c.warps, .stages = c.stages, .split_k = c.wk > 1 ? c.wk : 0};
	return cg_finish(kk, "gemm_tc", &b, e);
}
