/* cg_gemv.c: skinny products (1 <= m <= 16), the family of cg_gemv.h.
 *
 * A block owns TN output columns and a share of k; its NW warps split that
 * share in groups of U consecutive units (a unit: 32 k for mma.sync, 32
 * 16-byte vectors of k for the f32 kernel, one row of B for B k x n). On
 * sm_90 the SK blocks of a cluster (grid x, rank = blockIdx.x) split k
 * further. Each warp's fp32 partial sums go to shared memory, the warps'
 * are added in order, then the cluster's blocks' (rank 0 reads the others'
 * through distributed shared memory, in rank order) and block 0 stores
 * with bias and the fusion epilogue: one launch, no workspace, no atomics,
 * the same sum on every run.
 *
 * mma.sync m16n8k16 (B n x k, f16/bf16): lane (g = lane / 4, t = lane % 4)
 * loads 16 bytes (k0 + 8t .. k0 + 8t + 7) of A's rows g and g + 8 (zero
 * past m) and of B's row n0 + 8j + g for each 8-column tile j. The
 * instruction's logical k of thread t (2t, 2t + 1 | 2t + 8, 2t + 9) in step
 * s of the 32-k unit is taken as physical k0 + 8t + 4s + (0, 1 | 2, 3):
 * a bijection onto the unit's 32 k, the same for A and B (it depends on t
 * alone), so the sum is the product's and every fragment register is one
 * 32-bit word of a 16-byte load. */
#include "codegen/cg_gemv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum gv_kind { GV_MMA, GV_SIMT_T, GV_SIMT_N } gv_kind;

#define GV_FMA_MAX_M 4 /* f16/bf16 B n x k: the FMA kernel up to this m */

typedef struct gv_cfg {
	gv_kind kind;
	int tn, nw, u, sk;
	int vec;       /* elements per 16 bytes */
	int64_t units; /* k units in all */
	int per_iter;  /* units one block takes per iteration */
} gv_cfg;

static bool gv_dtype(ir_dtype t)
{
	return t == IR_F32 || t == IR_F16 || t == IR_BF16;
}

/* f16/bf16 with B n x k take mma.sync from 5 rows on; up to 4 rows the
 * FMA kernel (16-byte loads of a row along a warp's lanes, whole 128-byte
 * lines per instruction, no rows of the tile wasted), which read f32's
 * lm_head at 96 % of the copy bandwidth on the H200 where mma.sync's
 * 64-byte pieces of 8 rows per instruction and 15 of 16 rows zero at
 * m = 1 reached 56-63 %. */
static gv_kind kind_of(const cg_gemv_spec *s)
{
	if (!s->trans_b)
		return GV_SIMT_N;
	return s->t == IR_F32 || s->m <= GV_FMA_MAX_M ? GV_SIMT_T : GV_MMA;
}

bool cg_gemv_fits(const cg_gemv_spec *s, bool big, char *why, size_t cap)
{
	int es = gv_dtype(s->t) ? (int)ir_dtype_size(s->t) : 1;
	int64_t row = s->trans_b ? s->k : s->n;
	const char *no = NULL;
	if (!gv_dtype(s->t))
		no = "dtype is not f32, f16 or bf16";
	else if (s->m < 1 || s->m > CG_GEMV_MAX_M)
		no = "m is not in [1, 16]";
	else if (s->n < 1 || s->k < 1)
		no = "an empty product";
	else if (row * es % 16)
		no = "rows of B are not a multiple of 16 bytes";
	else if (!s->trans_b && s->m * (16 / es) > 64)
		no = "m > 8 with B k x n in f16/bf16";
	else if (big && s->k * s->n < ((int64_t)1 << 20))
		no = "too small to be bandwidth-bound (k * n < 2^20)";
	else if (big && s->n < 128)
		no = "too few columns to spread over the device (n < 128)";
	if (no)
		snprintf(why, cap, "%s", no);
	return !no;
}

bool cg_gemv_by_default(void)
{
	const char *v = getenv("SINTER_GEMV");
	return v && strcmp(v, "1") == 0;
}

/* The default for s on tg, then want's fields over it. */
static int config_of(const cg_gemv_spec *s, const cg_target *tg, const cg_config *want, gv_cfg *c, sn_err *e)
{
	int es = (int)ir_dtype_size(s->t);
	memset(c, 0, sizeof *c);
	c->kind = kind_of(s);
	c->vec = 16 / es;
	switch (c->kind) {
	case GV_MMA:
		/* more columns per block as m grows: a lane's 16 bytes of A (rows
		 * g and g + 8, past m not loaded) serve all of them */
		c->tn = s->m <= 2 ? 8 : s->m <= 8 ? 16 : 32;
		if (s->n >= 16384 && c->tn < 16)
			c->tn = 16;
		c->nw = 4;
		c->u = 4;
		break;
	case GV_SIMT_T: {
		c->tn = (int)(64 / s->m);
		if (c->tn > 8)
			c->tn = 8;
		c->nw = 4;
		c->u = (int)(96 / ((s->m + c->tn) * 4));
		c->u = c->u < 1 ? 1 : c->u > 4 ? 4 : c->u;
		break;
	}
	case GV_SIMT_N:
		c->tn = 8 * c->vec;
		c->nw = 8;
		c->u = 2;
		break;
	}
	if (want) {
		if (want->variant != CG_GEMV_VARIANT)
			return sn_errf(e, SN_EUSAGE, "gemv: variant %d is not the skinny-product family's (%d)",
				       (int)want->variant, CG_GEMV_VARIANT);
		if (want->block || want->tile_m || want->tile_k || want->vec || want->rows)
			return sn_errf(e, SN_EUSAGE, "gemv: takes tile_n, warps, stages and split_k only");
		if (want->tile_n)
			c->tn = want->tile_n;
		if (want->warps)
			c->nw = want->warps;
		if (want->stages)
			c->u = want->stages;
		if (want->split_k)
			c->sk = want->split_k;
	}
	if (c->nw < 1 || c->nw > 16)
		return sn_errf(e, SN_EUSAGE, "gemv: warps %d is not in [1, 16]", c->nw);
	if (c->u < 1 || c->u > 8)
		return sn_errf(e, SN_EUSAGE, "gemv: stages %d is not in [1, 8]", c->u);
	switch (c->kind) {
	case GV_MMA:
		if (c->tn < 8 || c->tn > 32 || c->tn % 8)
			return sn_errf(e, SN_EUSAGE, "gemv: tile_n %d is not 8, 16, 24 or 32 (mma.sync)", c->tn);
		c->units = (s->k + 31) / 32;
		c->per_iter = c->nw * c->u;
		break;
	case GV_SIMT_T:
		if (c->tn < 1 || c->tn * s->m > 64)
			return sn_errf(e, SN_EUSAGE, "gemv: tile_n %d is not in [1, 64 / m]", c->tn);
		c->units = (s->k + 32 * c->vec - 1) / (32 * c->vec);
		c->per_iter = c->nw * c->u;
		break;
	case GV_SIMT_N: {
		int cg = c->tn / c->vec;
		if (c->tn % c->vec || cg < 1 || cg > 32 || (cg & (cg - 1)))
			return sn_errf(e, SN_EUSAGE, "gemv: tile_n %d is not %d times a power of two up to 32", c->tn,
				       c->vec);
		c->units = s->k;
		c->per_iter = c->nw * 32 / cg * c->u;
		break;
	}
	}
	if ((int64_t)c->nw * s->m * c->tn * 4 > 48 * 1024)
		return sn_errf(e, SN_EUSAGE, "gemv: warps x m x tile_n takes more than 48 KiB of shared memory");
	int64_t nb = (s->n + c->tn - 1) / c->tn;
	if (!c->sk) { /* split-K over a cluster where the columns give too few blocks (sm_90) */
		/* while every split keeps a whole iteration of every warp: a
		 * split of half an iteration left half the warps idle behind a
		 * cluster barrier (bf16 m = 1 k 2048 n 8192: 2 x 1024 blocks,
		 * 2 of 4 warps with work, 37.9 % of the copy bandwidth) */
		c->sk = 1;
		while (tg->sm >= 90 && c->sk < 8 && nb * c->sk < 1056 && c->units / (2 * c->sk) >= c->per_iter)
			c->sk *= 2;
	}
	if (c->sk < 1 || c->sk > 8)
		return sn_errf(e, SN_EUSAGE, "gemv: split_k %d is not in [1, 8] (blocks of one cluster)", c->sk);
	if (c->sk > 1 && tg->sm < 90)
		return sn_errf(e, SN_EUSAGE, "gemv: split_k %d needs clusters (sm_90)", c->sk);
	if (nb > 65535)
		return sn_errf(e, SN_EUSAGE, "gemv: %lld column blocks of tile_n %d are more than one launch takes",
			       (long long)nb, c->tn);
	return SN_OK;
}

/* 16 bytes as VEC floats: unpack(w, f) for dtype t. */
static void emit_unpack(sn_buf *b, ir_dtype t)
{
	if (t == IR_F32)
		sn_buf_puts(b, "static __device__ __forceinline__ void unpack(uint4 w, float *f)\n{\n"
			       "\tf[0] = __uint_as_float(w.x);\n\tf[1] = __uint_as_float(w.y);\n"
			       "\tf[2] = __uint_as_float(w.z);\n\tf[3] = __uint_as_float(w.w);\n}\n\n");
	else if (t == IR_BF16)
		sn_buf_puts(b, "static __device__ __forceinline__ void unpack2(unsigned w, float *f)\n{\n"
			       "\tf[0] = __uint_as_float(w << 16);\n\tf[1] = __uint_as_float(w & 0xffff0000u);\n}\n\n");
	else
		sn_buf_puts(b, "static __device__ __forceinline__ void unpack2(unsigned w, float *f)\n{\n"
			       "\tasm(\"{ .reg .f16 a, b; mov.b32 {a, b}, %2; cvt.f32.f16 %0, a; cvt.f32.f16 %1, b; }\" "
			       ": \"=f\"(f[0]), \"=f\"(f[1]) : \"r\"(w));\n}\n\n");
	if (t != IR_F32)
		sn_buf_puts(b, "static __device__ __forceinline__ void unpack(uint4 w, float *f)\n{\n"
			       "\tunpack2(w.x, f);\n\tunpack2(w.y, f + 2);\n\tunpack2(w.z, f + 4);\n\tunpack2(w.w, f + 6);\n"
			       "}\n\n");
}

static void emit_prims(sn_buf *b, const cg_gemv_spec *s, const gv_cfg *c)
{
	/* A: small and read by every block (kept in cache); B: read once */
	sn_buf_puts(b, "static __device__ __forceinline__ uint4 lda16(const void *p)\n{\n"
		       "\treturn __ldg((const uint4 *)p);\n}\n\n"
		       "static __device__ __forceinline__ uint4 ldb16(const void *p)\n{\n\tuint4 v;\n"
		       "\tasm volatile(\"ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\" : \"=r\"(v.x), "
		       "\"=r\"(v.y), \"=r\"(v.z), \"=r\"(v.w) : \"l\"(p));\n\treturn v;\n}\n\n");
	if (c->kind == GV_MMA)
		sn_buf_printf(b, "static __device__ __forceinline__ void mma(float *d, unsigned a0, unsigned a1, unsigned a2, "
				 "unsigned a3, unsigned b0, unsigned b1)\n{\n"
				 "\tasm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {%%0,%%1,%%2,%%3}, "
				 "{%%4,%%5,%%6,%%7}, {%%8,%%9}, {%%0,%%1,%%2,%%3};\"\n"
				 "\t\t     : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
				 "\t\t     : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n}\n\n",
			      s->t == IR_BF16 ? "bf16" : "f16", s->t == IR_BF16 ? "bf16" : "f16");
	else
		emit_unpack(b, s->t);
	if (c->sk > 1)
		sn_buf_puts(b, "static __device__ __forceinline__ void cluster_sync()\n{\n"
			       "\tasm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;\" ::: "
			       "\"memory\");\n}\n\n"
			       "static __device__ __forceinline__ float ld_peer(const float *p, unsigned rank)\n{\n"
			       "\tunsigned a, q;\n\tfloat v;\n"
			       "\tasm(\"{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }\" : \"=r\"(a) : \"l\"(p));\n"
			       "\tasm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\" : \"=r\"(q) : \"r\"(a), \"r\"(rank));\n"
			       "\tasm volatile(\"ld.shared::cluster.f32 %0, [%1];\" : \"=f\"(v) : \"r\"(q) : \"memory\");\n"
			       "\treturn v;\n}\n\n");
}

static void emit_mma_body(sn_buf *b)
{
	sn_buf_puts(b, "\tconst int g = lane >> 2, t = lane & 3;\n"
		       "\tconst uint4 zero = make_uint4(0u, 0u, 0u, 0u);\n"
		       "\tfloat acc[TN / 8][4];\n"
		       "#pragma unroll\n\tfor (int j = 0; j < TN / 8; j++)\n\t\tacc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;\n"
		       "\tfor (long c = u0 + warp * U; c < u1; c += NW * U) {\n"
		       "\t\tuint4 xa[U], xb[U], wv[U][TN / 8];\n"
		       "#pragma unroll\n\t\tfor (int u = 0; u < U; u++) {\n"
		       "\t\t\tconst long k = (c + u) * 32 + t * 8;\n"
		       "\t\t\tconst bool ok = c + u < u1 && k < GK;\n"
		       "\t\t\txa[u] = ok && g < GM ? lda16(A + g * GK + k) : zero;\n"
		       "\t\t\txb[u] = ok && g + 8 < GM ? lda16(A + (g + 8) * GK + k) : zero;\n"
		       "#pragma unroll\n\t\t\tfor (int j = 0; j < TN / 8; j++) {\n"
		       "\t\t\t\tconst long n = n0 + j * 8 + g;\n"
		       "\t\t\t\twv[u][j] = ok && n < GN ? ldb16(B + n * GK + k) : zero;\n"
		       "\t\t\t}\n\t\t}\n"
		       "#pragma unroll\n\t\tfor (int u = 0; u < U; u++)\n"
		       "#pragma unroll\n\t\t\tfor (int j = 0; j < TN / 8; j++) {\n"
		       "\t\t\t\tmma(acc[j], xa[u].x, xb[u].x, xa[u].y, xb[u].y, wv[u][j].x, wv[u][j].y);\n"
		       "\t\t\t\tmma(acc[j], xa[u].z, xb[u].z, xa[u].w, xb[u].w, wv[u][j].z, wv[u][j].w);\n"
		       "\t\t\t}\n\t}\n"
		       "#pragma unroll\n\tfor (int j = 0; j < TN / 8; j++) {\n"
		       "\t\tconst int col = j * 8 + t * 2;\n"
		       "\t\tif (g < GM) {\n\t\t\tred[warp][g][col] = acc[j][0];\n\t\t\tred[warp][g][col + 1] = acc[j][1];\n\t\t}\n"
		       "\t\tif (g + 8 < GM) {\n\t\t\tred[warp][g + 8][col] = acc[j][2];\n"
		       "\t\t\tred[warp][g + 8][col + 1] = acc[j][3];\n\t\t}\n\t}\n");
}

static void emit_simt_t_body(sn_buf *b)
{
	sn_buf_puts(b, "\tconst uint4 zero = make_uint4(0u, 0u, 0u, 0u);\n"
		       "\tfloat acc[TN][GM];\n"
		       "#pragma unroll\n\tfor (int j = 0; j < TN; j++)\n"
		       "#pragma unroll\n\t\tfor (int m = 0; m < GM; m++)\n\t\t\tacc[j][m] = 0.f;\n"
		       "\tfor (long c = u0 + warp * U; c < u1; c += NW * U) {\n"
		       "\t\tuint4 xv[U][GM], wv[U][TN];\n"
		       "#pragma unroll\n\t\tfor (int u = 0; u < U; u++) {\n"
		       "\t\t\tconst long k = (c + u) * (32 * VEC) + lane * VEC;\n"
		       "\t\t\tconst bool ok = c + u < u1 && k < GK;\n"
		       "#pragma unroll\n\t\t\tfor (int m = 0; m < GM; m++)\n"
		       "\t\t\t\txv[u][m] = ok ? lda16(A + m * GK + k) : zero;\n"
		       "#pragma unroll\n\t\t\tfor (int j = 0; j < TN; j++)\n"
		       "\t\t\t\twv[u][j] = ok && n0 + j < GN ? ldb16(B + (n0 + j) * GK + k) : zero;\n"
		       "\t\t}\n"
		       "#pragma unroll\n\t\tfor (int u = 0; u < U; u++)\n"
		       "#pragma unroll\n\t\t\tfor (int m = 0; m < GM; m++) {\n"
		       "\t\t\t\tfloat x[VEC];\n\t\t\t\tunpack(xv[u][m], x);\n"
		       "#pragma unroll\n\t\t\t\tfor (int j = 0; j < TN; j++) {\n"
		       "\t\t\t\t\tfloat w[VEC];\n\t\t\t\t\tunpack(wv[u][j], w);\n"
		       "#pragma unroll\n\t\t\t\t\tfor (int e = 0; e < VEC; e++)\n"
		       "\t\t\t\t\t\tacc[j][m] = fmaf(x[e], w[e], acc[j][m]);\n"
		       "\t\t\t\t}\n\t\t\t}\n\t}\n"
		       "#pragma unroll\n\tfor (int j = 0; j < TN; j++)\n"
		       "#pragma unroll\n\t\tfor (int m = 0; m < GM; m++) {\n"
		       "\t\t\tfloat v = acc[j][m];\n"
		       "#pragma unroll\n\t\t\tfor (int o = 16; o > 0; o >>= 1)\n"
		       "\t\t\t\tv += __shfl_xor_sync(0xffffffffu, v, o);\n"
		       "\t\t\tif (lane == 0)\n\t\t\t\tred[warp][m][j] = v;\n\t\t}\n");
}

static void emit_simt_n_body(sn_buf *b, const cg_gemv_spec *s)
{
	sn_buf_printf(b, "\tconst int cg = tid %% CG, kg = tid / CG;\n"
			 "\tconst long n = n0 + cg * VEC;\n"
			 "\tconst uint4 zero = make_uint4(0u, 0u, 0u, 0u);\n"
			 "\tfloat acc[VEC][GM];\n"
			 "#pragma unroll\n\tfor (int e = 0; e < VEC; e++)\n"
			 "#pragma unroll\n\t\tfor (int m = 0; m < GM; m++)\n\t\t\tacc[e][m] = 0.f;\n"
			 "\tfor (long r = u0 + kg; r < u1; r += KG * U) {\n"
			 "\t\tuint4 wv[U];\n\t\tfloat xv[U][GM];\n"
			 "#pragma unroll\n\t\tfor (int u = 0; u < U; u++) {\n"
			 "\t\t\tconst long kr = r + u * KG;\n"
			 "\t\t\twv[u] = kr < u1 && n < GN ? ldb16(B + kr * GN + n) : zero;\n"
			 "#pragma unroll\n\t\t\tfor (int m = 0; m < GM; m++)\n"
			 "\t\t\t\txv[u][m] = kr < u1 ? ld_%s(A, m * GK + kr) : 0.f;\n"
			 "\t\t}\n"
			 "#pragma unroll\n\t\tfor (int u = 0; u < U; u++) {\n"
			 "\t\t\tfloat w[VEC];\n\t\t\tunpack(wv[u], w);\n"
			 "#pragma unroll\n\t\t\tfor (int e = 0; e < VEC; e++)\n"
			 "#pragma unroll\n\t\t\t\tfor (int m = 0; m < GM; m++)\n"
			 "\t\t\t\t\tacc[e][m] = fmaf(xv[u][m], w[e], acc[e][m]);\n"
			 "\t\t}\n\t}\n"
			 "#pragma unroll\n\tfor (int e = 0; e < VEC; e++)\n"
			 "#pragma unroll\n\t\tfor (int m = 0; m < GM; m++) {\n"
			 "\t\t\tfloat v = acc[e][m];\n"
			 "#pragma unroll\n\t\t\tfor (int o = 16; o >= CG; o >>= 1)\n"
			 "\t\t\t\tv += __shfl_xor_sync(0xffffffffu, v, o);\n"
			 "\t\t\tif (lane < CG)\n\t\t\t\tred[warp][m][cg * VEC + e] = v;\n\t\t}\n",
		      ir_dtype_name(s->t));
}

int cg_gemv_render(const ir_graph *g, ir_ref r, const cg_gemv_spec *s, const cg_target *tg, const cg_config *want,
		   cg_step *st, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	char why[160];
	cg_target t0 = {.sm = 80};
	if (!tg)
		tg = &t0;
	if (!cg_gemv_fits(s, false, why, sizeof why))
		return sn_errf(e, SN_EUSAGE, "%s: the skinny-product kernel cannot run this product: %s", ir_ops[n->op].name,
			       why);
	gv_cfg c;
	int rc = config_of(s, tg, want, &c, e);
	if (rc)
		return rc;
	const cg_epilogue *epi = st->epi;
	ir_dtype ot = epi ? epi->dtype : s->t;
	const char *tn = ir_dtype_name(s->t), *ct = cg_ctype(s->t);
	static const char *const kinds[] = {"mma.sync m16n8k16 from 16-byte loads", "fp32 FMA, warp-shuffle sums",
					    "fp32 FMA, B k x n rows across threads"};
	char cfg[240];
	snprintf(cfg, sizeof cfg, "skinny product (%s): %lldx%lld @ %lldx%lld%s; %d columns per block, %d warps, "
		 "%d units in flight, split-K over %d blocks", kinds[c.kind], (long long)s->m, (long long)s->k,
		 (long long)s->k, (long long)s->n, s->trans_b ? " (B transposed)" : "", c.tn, c.nw, c.u, c.sk);
	sn_buf b = {0};
	cg_emit_spec_st(&b, g, r, cfg, st);
	sn_buf_puts(&b, "\n");
	cg_emit_dtype_helpers(&b, s->t);
	if (epi) {
		cg_emit_dtype_helpers(&b, epi->dtype);
		sn_buf_puts(&b, epi->fn);
		sn_buf_puts(&b, "\n");
	}
	emit_prims(&b, s, &c);
	sn_buf_printf(&b, "#define GM %lld\n#define GN %lldL\n#define GK %lldL\n#define TN %d\n#define NW %d\n#define U %d\n"
			  "#define SK %d\n#define VEC %d\n#define KU %lldL\n",
		      (long long)s->m, (long long)s->n, (long long)s->k, c.tn, c.nw, c.u, c.sk, c.vec, (long long)c.units);
	if (c.kind == GV_SIMT_N)
		sn_buf_printf(&b, "#define CG %d\n#define KG %d\n", c.tn / c.vec, c.nw * 32 / (c.tn / c.vec));
	sn_buf_printf(&b, "\nextern \"C\" __global__ void __launch_bounds__(%d)%s\n"
			  "%s(const %s *__restrict__ A, const %s *__restrict__ B, ",
		      c.nw * 32, c.sk > 1 ? " __cluster_dims__(SK, 1, 1)" : "", CG_NAME, ct, ct);
	if (s->bias)
		sn_buf_printf(&b, "const %s *__restrict__ bias, ", ct);
	if (epi)
		sn_buf_printf(&b, "%s%s", epi->params[0] == ',' ? epi->params + 1 : epi->params, epi->params[0] ? ", " : "");
	sn_buf_printf(&b, "%s *__restrict__ Y)\n{\n"
			  "\t__shared__ float red[NW][GM][TN];\n"
			  "\tconst int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;\n"
			  "\tconst int rank = %s;\n"
			  "\tconst long n0 = (long)blockIdx.y * TN;\n"
			  "\tconst long u0 = KU * rank / SK, u1 = KU * (rank + 1) / SK;\n",
		      cg_ctype(ot), c.sk > 1 ? "(int)blockIdx.x" : "0");
	switch (c.kind) {
	case GV_MMA: emit_mma_body(&b); break;
	case GV_SIMT_T: emit_simt_t_body(&b); break;
	case GV_SIMT_N: emit_simt_n_body(&b, s); break;
	}
	/* the warps' sums in order, then the cluster's, then the store */
	char store[400];
	sn_buf lines = {0};
	if (s->bias)
		sn_buf_printf(&lines, "\t\t\t\tv += ld_%s(bias, on);\n", tn);
	if (epi)
		sn_buf_printf(&lines, "\t\t\t\tv = sn_epi(v, m * GN + on%s);\n", epi->args);
	snprintf(store, sizeof store,
		 "\t\t\tconst long on = n0 + c;\n"
		 "\t\t\tif (on < GN) {\n%s"
		 "\t\t\t\tst_%s(Y, m * GN + on, v);\n\t\t\t}\n",
		 lines.s ? lines.s : "", ir_dtype_name(ot));
	free(lines.s);
	sn_buf_puts(&b, "\t__syncthreads();\n"
			"\tfor (int i = tid; i < GM * TN; i += NW * 32) {\n"
			"\t\tconst int m = i / TN, c = i % TN;\n"
			"\t\tfloat v = 0.f;\n"
			"#pragma unroll\n\t\tfor (int w = 0; w < NW; w++)\n\t\t\tv += red[w][m][c];\n");
	if (c.sk > 1) {
		sn_buf_puts(&b, "\t\tred[0][m][c] = v;\n\t}\n"
				"\tcluster_sync();\n"
				"\tif (rank == 0)\n"
				"\t\tfor (int i = tid; i < GM * TN; i += NW * 32) {\n"
				"\t\t\tconst int m = i / TN, c = i % TN;\n"
				"\t\t\tfloat v = red[0][m][c];\n"
				"#pragma unroll 1\n\t\t\tfor (unsigned q = 1; q < SK; q++)\n"
				"\t\t\t\tv += ld_peer(&red[0][m][c], q);\n");
		sn_buf_puts(&b, store);
		sn_buf_puts(&b, "\t\t}\n"
				"\tcluster_sync(); /* the others' shared memory lives until block 0 has read it */\n}\n");
	} else {
		sn_buf_puts(&b, store);
		sn_buf_puts(&b, "\t}\n}\n");
	}
	st->kind = CG_STEP_KERNEL;
	cg_kernel *kk = &st->k;
	kk->grid[0] = (unsigned)c.sk;
	kk->grid[1] = (unsigned)((s->n + c.tn - 1) / c.tn);
	kk->grid[2] = 1;
	kk->block[0] = (unsigned)(c.nw * 32);
	kk->block[1] = kk->block[2] = 1;
	kk->smem = 0;
	kk->nbufs = 0;
	kk->ntmaps = 0;
	kk->cfg = (cg_config){.variant = CG_GEMV_VARIANT, .tile_n = c.tn, .warps = c.nw, .stages = c.u, .split_k = c.sk};
	kk->bufs[kk->nbufs++] = n->in[0];
	kk->bufs[kk->nbufs++] = n->in[1];
	if (s->bias)
		kk->bufs[kk->nbufs++] = n->in[2];
	if (epi)
		for (uint32_t i = 0; i < epi->nex; i++)
			kk->bufs[kk->nbufs++] = epi->ex[i];
	kk->bufs[kk->nbufs++] = epi ? epi->out : r;
	return cg_finish(kk, "gemv", &b, e);
}
