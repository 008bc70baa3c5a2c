/* cg_conv_stem.c: the tensor-core conv2d for few input channels (a
 * network's stem: 3 channels of an image, 7x7 stride 2 in ResNet-50), NHWC,
 * one group, no dilation along W; bf16/f16 with m16n8k16, or f32 operands
 * rounded to TF32 with m16n8k8; fp32 accumulation.
 *
 * The pipelined kernel (cg_conv_tc.c) moves 16-byte chunks of one tap and
 * so needs 8 channels (4 in f32); with 3 its GEMM would be padded to 8
 * channels per tap, 2.7x the work. Here K is ordered (r, j) with j = s*C + c:
 * in NHWC the KW taps of one filter row are KW*C consecutive elements of an
 * input row, so a filter row is one contiguous run and K needs padding only
 * to an even length per row (a pair of halves per 32-bit register).
 *
 * Each block computes TR output rows x QT output columns (QT a multiple of
 * 16: one m16 fragment never straddles two rows) for 64 output channels.
 * It stages, once, the input rows its window covers (zero outside the
 * image) and the 64 channels' weights, padded in K with zeros, in shared
 * memory; then every warp builds its A fragments straight from the input
 * rows: A[l][k] sits at (row(l) * SH + r * DH) * ROWLEN + col(l) * SW * C + j.
 * Padded k (j >= KW*C, or past the last filter row) is masked to zero in
 * the fragment, so padding never multiplies input data (a NaN outside a
 * window stays outside). The grid is persistent, two blocks per SM
 * (__launch_bounds__ holds the kernel to it): a block stages its 64
 * channels' weights once and then takes tiles strided by the grid,
 * staging each tile's input rows. No pipeline inside a block: the other
 * block on the SM overlaps its loads with these products. The epilogue adds the bias and stores two channels at a time
 * (or applies the fusion epilogue per element). */
#include "codegen/cg_conv.h"

#include <stdio.h>

/* The block's shape for cv; false when the kernel does not fit. */
typedef struct stem {
	int es, kstep, jp, ke, ks, wrow, rowlen, ri, tr, qt, qseg, mq, mt, warps, prows;
	unsigned smem;
} stem;

static int round_up(int v, int m)
{
	return (v + m - 1) / m * m;
}

static bool stem_shape(const cg_conv *cv, bool tf32, stem *s)
{
	if (cv->kw * cv->c > 64 || cv->kh > 11 || cv->sw > 4 || cv->sh > 4 || cv->dh > 4 || cv->wo < 1 || cv->ho < 1)
		return false;
	int j = (int)(cv->kw * cv->c);
	s->es = tf32 ? 4 : 2;
	s->kstep = tf32 ? 8 : 16;
	s->jp = tf32 ? j : round_up(j, 2);
	s->ke = (int)cv->kh * s->jp;
	s->ks = (s->ke + s->kstep - 1) / s->kstep;
	/* weight rows: every k-step, and a row length in 32-bit words that
	 * puts the 8 rows of a B fragment in distinct banks */
	int words = s->ks * s->kstep * s->es / 4;
	while (words % 32 != 4 && words % 32 != 12 && words % 32 != 20 && words % 32 != 28)
		words++;
	s->wrow = words * 4 / s->es;
	int wop = round_up((int)(cv->wo < 128 ? cv->wo : 128), 16);
	s->qt = wop;
	s->qseg = (int)((cv->wo + s->qt - 1) / s->qt);
	s->mq = s->qt / 16;
	s->tr = s->mq % 2 && cv->ho >= 2 ? 2 : 1;
	s->mt = s->tr * s->mq % 2 ? 1 : 2;
	s->warps = s->tr * s->mq / s->mt;
	s->prows = (int)((cv->ho + s->tr - 1) / s->tr);
	s->ri = (s->tr - 1) * (int)cv->sh + ((int)cv->kh - 1) * (int)cv->dh + 1;
	s->rowlen = round_up(((s->qt - 1) * (int)cv->sw + (int)cv->kw) * (int)cv->c + (s->jp - j), 2);
	unsigned xs = (unsigned)round_up(s->ri * s->rowlen * s->es, 16);
	s->smem = xs + (unsigned)(64 * s->wrow * s->es);
	return s->smem <= 96 * 1024;
}

const char *cg_conv_stem_cannot(const cg_conv *cv, const cg_target *tg)
{
	bool half = cv->t == IR_F16 || cv->t == IR_BF16;
	if (!half && !(cv->t == IR_F32 && tg->tf32))
		return "it takes f16, bf16, and f32 under --precision tf32";
	if (tg->sm < 80)
		return "it needs sm_80";
	if (!cv->nhwc || cv->groups != 1 || cv->dw != 1)
		return "it takes NHWC, one group and no dilation along W";
	stem s;
	if (!stem_shape(cv, !half, &s))
		return "its window (KW x channels at most 64, KH at most 11, strides and dilation at most 4) or its "
		       "shared memory (96 KiB) does not fit";
	if ((int64_t)s.prows * s.qseg * cv->n > 0x7fffffff || (cv->o + 63) / 64 > 65535)
		return "it is too large for one launch";
	return NULL;
}

/* Blocks per channel block: two per SM (the register budget of 224-256
 * threads at ~128 registers), fewer when there are fewer tiles. */
static int64_t stem_blocks(const cg_conv *cv, const stem *s, const cg_target *tg)
{
	int64_t tiles = (int64_t)s->prows * s->qseg * cv->n, sms = tg->sm >= 90 ? 132 : 108;
	return tiles < 2 * sms ? tiles : 2 * sms;
}

int cg_conv_stem_block(const cg_conv *cv, const cg_target *tg, bool tf32, unsigned grid[3], unsigned *threads,
		       unsigned *smem)
{
	stem s;
	if (!stem_shape(cv, tf32, &s))
		return -1;
	grid[0] = (unsigned)stem_blocks(cv, &s, tg);
	grid[1] = (unsigned)((cv->o + 63) / 64);
	grid[2] = 1;
	*threads = (unsigned)(32 * s.warps);
	*smem = s.smem;
	return 0;
}

void cg_conv_emit_stem(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, const cg_target *tg, bool tf32)
{
	stem s;
	if (!stem_shape(cv, tf32, &s))
		return;
	(void)stem_blocks(cv, &s, tg); /* the grid is cg_conv_stem_block's; the kernel strides by gridDim.x */
	const char *tn = ir_dtype_name(cv->t);
	int nt = 32 * s.warps;
	/* 32-bit loads of a pair of halves need even offsets */
	bool aligned = (cv->sw * cv->c) % 2 == 0;
	sn_buf_printf(b, "#define TR %d\n#define QT %d\n#define QSEG %d\n#define PROWS %d\n#define MT %d\n"
			 "#define RI %d\n#define ROWLEN %d\n#define JJ %lld\n#define JP %d\n#define KE %d\n#define KS %d\n"
			 "#define WROW %d\n#define XS %d\n\n",
		      s.tr, s.qt, s.qseg, s.prows, s.mt, s.ri, s.rowlen, (long long)(cv->kw * cv->c), s.jp, s.ke, s.ks,
		      s.wrow, round_up(s.ri * s.rowlen * s.es, 16) / s.es);
	cg_conv_emit_mma(b, cv->t, tf32);
	cg_conv_head_min(b, cv, epi, nt, 2); /* the grid's two blocks per SM */
	/* staging: shared words hold raw halves, or TF32-rounded floats */
	const char *su = tf32 ? "unsigned" : "unsigned short";
	int nx = s.ri * s.rowlen, nit = (nx + nt - 1) / nt;
	sn_buf_printf(b, "\textern __shared__ __align__(16) unsigned char smem[];\n"
			 "\t%s *xs = (%s *)smem, *ws = xs + XS;\n"
			 "\tconst int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, o0 = blockIdx.y * 64;\n"
			 "\tfor (int e = tid; e < 64 * WROW; e += %d) {\n"
			 "\t\tint ol = e / WROW, k = e %% WROW, r = k / JP, j = k %% JP, o = o0 + ol;\n"
			 "\t\t%s v = 0;\n"
			 "\t\tif (o < CO && k < KE && j < JJ)\n"
			 "\t\t\tv = %s;\n"
			 "\t\tws[e] = v;\n\t}\n",
		      su, su, nt, su, tf32 ? "tf32(__float_as_uint(wt[(ix)o * KK + r * JJ + j]))" : "wt[(ix)o * KK + r * JJ + j]");
	/* the tiles: the weights stay, the input rows are staged per tile,
	 * four loads of a thread in flight before their stores (all of them
	 * would keep 28 registers live and push the kernel past two blocks
	 * per SM) */
	sn_buf_printf(b, "\tfor (ix tile = blockIdx.x; tile < (ix)PROWS * QSEG * CN; tile += gridDim.x) {\n"
			 "\tconst int qs = (int)(tile %% QSEG), pr = (int)(tile / QSEG %% PROWS);\n"
			 "\tconst ix n = tile / QSEG / PROWS;\n"
			 "\tconst int p0 = pr * TR, q0 = qs * QT;\n"
			 "\tconst int h0 = p0 * SH - PT, w0 = q0 * SW - PL;\n"
			 "\t__syncthreads(); /* the previous tile's fragments are read */\n"
			 "#pragma unroll 1\n\tfor (int i0 = 0; i0 < %d; i0 += 4) {\n"
			 "\t\t%s v[4];\n"
			 "#pragma unroll\n\t\tfor (int it = 0; it < 4; it++) {\n"
			 "\t\t\tint e = tid + (i0 + it) * %d, rr = e / ROWLEN, c = e %% ROWLEN, h = h0 + rr, w = w0 + c / CC;\n"
			 "\t\t\tv[it] = 0;\n"
			 "\t\t\tif (e < %d && (unsigned)h < (unsigned)CH && (unsigned)w < (unsigned)CW)\n"
			 "\t\t\t\tv[it] = %s;\n\t\t}\n"
			 "#pragma unroll\n\t\tfor (int it = 0; it < 4; it++)\n"
			 "\t\t\tif (tid + (i0 + it) * %d < %d)\n\t\t\t\txs[tid + (i0 + it) * %d] = v[it];\n"
			 "\t}\n"
			 "\t__syncthreads();\n",
		      nit, su, nt, nx,
		      tf32 ? "tf32(__float_as_uint(x[((n * CH + h) * CW + w) * CC + c % CC]))" : "x[((n * CH + h) * CW + w) * CC + c % CC]",
		      nt, nx, nt);
	/* A's rows: l = (warp * MT + i) * 16 + g + 8 h */
	/* the lane read again per tile (volatile): the per-k-step offsets and
	 * masks derived from it are computed in the tile, not hoisted out of
	 * the tile loop into 40 live registers */
	sn_buf_puts(b, "\tint lid;\n\tasm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(lid));\n"
		       "\tconst int g = lid >> 2, t = lid & 3;\n"
		       "\tint ab[MT][2];\n"
		       "#pragma unroll\n\tfor (int i = 0; i < MT; i++)\n"
		       "#pragma unroll\n\t\tfor (int h = 0; h < 2; h++) {\n"
		       "\t\t\tint l = (warp * MT + i) * 16 + g + h * 8;\n"
		       "\t\t\tab[i][h] = l / QT * SH * ROWLEN + l % QT * SW * CC;\n\t\t}\n"
		       "\tfloat acc[MT][8][4];\n"
		       "#pragma unroll\n\tfor (int i = 0; i < MT; i++)\n"
		       "#pragma unroll\n\t\tfor (int j = 0; j < 8; j++)\n"
		       "#pragma unroll\n\t\t\tfor (int v = 0; v < 4; v++)\n\t\t\t\tacc[i][j][v] = 0.0f;\n"
		       "#pragma unroll\n\tfor (int ks = 0; ks < KS; ks++) {\n"
		       "\t\tunsigned a[MT][4], bb[2];\n"
		       "#pragma unroll\n\t\tfor (int hk = 0; hk < 2; hk++) {\n");
	if (tf32)
		/* m16n8k8 tf32: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4) */
		sn_buf_puts(b, "\t\t\tint k = ks * 8 + t + hk * 4, r = k / JP, j = k - r * JP;\n"
			       "\t\t\tbool ok = k < KE;\n"
			       "\t\t\tint ko = ok ? r * DH * ROWLEN + j : 0;\n"
			       "#pragma unroll\n\t\t\tfor (int i = 0; i < MT; i++)\n"
			       "#pragma unroll\n\t\t\t\tfor (int h = 0; h < 2; h++)\n"
			       "\t\t\t\t\ta[i][h + 2 * hk] = ok ? xs[ab[i][h] + ko] : 0u;\n"
			       "\t\t}\n");
	else {
		/* m16n8k16: a0 (g, 2t..2t+1), a1 (g + 8, 2t), a2 (g, 2t + 8), a3 (g + 8, 2t + 8);
		 * the low half of a register is the lower k */
		sn_buf_puts(b, "\t\t\tint k = ks * 16 + 2 * t + hk * 8, r = k / JP, j = k - r * JP;\n"
			       "\t\t\tunsigned msk = (k < KE && j < JJ ? 0xffffu : 0u) | (k + 1 < KE && j + 1 < JJ ? 0xffff0000u : 0u);\n"
			       "\t\t\tint ko = k < KE ? r * DH * ROWLEN + j : 0;\n"
			       "#pragma unroll\n\t\t\tfor (int i = 0; i < MT; i++)\n"
			       "#pragma unroll\n\t\t\t\tfor (int h = 0; h < 2; h++) {\n"
			       "\t\t\t\t\tint o_ = ab[i][h] + ko;\n");
		if (aligned)
			sn_buf_puts(b, "\t\t\t\t\ta[i][h + 2 * hk] = *(const unsigned *)(xs + o_) & msk;\n");
		else
			sn_buf_puts(b, "\t\t\t\t\ta[i][h + 2 * hk] = ((unsigned)xs[o_] | (unsigned)xs[o_ + 1] << 16) & msk;\n");
		sn_buf_puts(b, "\t\t\t\t}\n\t\t}\n");
	}
	/* B: b0 (k = 2t..2t+1 or t, n = g), b1 (k + 8 or k + 4) from [n][k] rows */
	sn_buf_printf(b, "#pragma unroll\n\t\tfor (int nj = 0; nj < 8; nj++) {\n"
			 "\t\t\tconst %s *wr = ws + (nj * 8 + g) * WROW + ks * %d + %s;\n",
		      su, s.kstep, tf32 ? "t" : "2 * t");
	if (tf32)
		sn_buf_puts(b, "\t\t\tbb[0] = wr[0];\n\t\t\tbb[1] = wr[4];\n");
	else
		sn_buf_puts(b, "\t\t\tbb[0] = *(const unsigned *)wr;\n\t\t\tbb[1] = *(const unsigned *)(wr + 8);\n");
	sn_buf_puts(b, "#pragma unroll\n\t\t\tfor (int i = 0; i < MT; i++)\n"
		       "\t\t\t\tmma(acc[i][nj], a[i], bb);\n"
		       "\t\t}\n\t}\n");
	/* the epilogue: two channels per fragment row, stored as one word
	 * where the output dtype and channel count allow */
	ir_dtype ot = epi ? epi->dtype : cv->t;
	bool pair = cv->o % 2 == 0 && (ot == IR_F32 || ot == IR_BF16 || ot == IR_F16);
	sn_buf_puts(b, "#pragma unroll\n\tfor (int i = 0; i < MT; i++)\n"
		       "#pragma unroll\n\t\tfor (int h = 0; h < 2; h++) {\n"
		       "\t\t\tint l = (warp * MT + i) * 16 + g + h * 8, p = p0 + l / QT, q = q0 + l % QT;\n"
		       "\t\t\tif (p >= HO || q >= WO)\n\t\t\t\tcontinue;\n"
		       "\t\t\tix m = (n * HO + p) * WO + q;\n"
		       "#pragma unroll\n\t\t\tfor (int nj = 0; nj < 8; nj++) {\n"
		       "\t\t\t\tint o = o0 + nj * 8 + 2 * t;\n"
		       "\t\t\t\tif (o >= CO)\n\t\t\t\t\tcontinue;\n"
		       "\t\t\t\tfloat v0 = acc[i][nj][h * 2], v1 = acc[i][nj][h * 2 + 1];\n");
	if (cv->bias)
		sn_buf_printf(b, "\t\t\t\tv0 += ld_%s(bias, o);\n"
				 "\t\t\t\tif (o + 1 < CO)\n\t\t\t\t\tv1 += ld_%s(bias, o + 1);\n",
			      tn, tn);
	if (pair) {
		if (epi)
			sn_buf_printf(b, "\t\t\t\tv0 = sn_epi(v0, (long)(m * CO + o)%s);\n"
					 "\t\t\t\tv1 = sn_epi(v1, (long)(m * CO + o + 1)%s);\n",
				      epi->args, epi->args);
		if (ot == IR_F32)
			sn_buf_puts(b, "\t\t\t\t*(float2 *)(y + m * CO + o) = make_float2(v0, v1);\n");
		else
			sn_buf_printf(b, "\t\t\t\tunsigned short h0, h1;\n"
					 "\t\t\t\tasm(\"cvt.rn.%s.f32 %%0, %%1;\" : \"=h\"(h0) : \"f\"(v0));\n"
					 "\t\t\t\tasm(\"cvt.rn.%s.f32 %%0, %%1;\" : \"=h\"(h1) : \"f\"(v1));\n"
					 "\t\t\t\t*(unsigned *)(y + m * CO + o) = (unsigned)h0 | (unsigned)h1 << 16;\n",
				      ir_dtype_name(ot), ir_dtype_name(ot));
	} else {
		cg_conv_store(b, cv, epi, "\t\t\t\t", "m * CO + o", "v0");
		sn_buf_puts(b, "\t\t\t\tif (o + 1 < CO)\n");
		cg_conv_store(b, cv, epi, "\t\t\t\t\t", "m * CO + o + 1", "v1");
	}
	sn_buf_puts(b, "\t\t\t}\n\t\t}\n\t}\n}\n");
}
