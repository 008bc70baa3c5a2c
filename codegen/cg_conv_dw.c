/* cg_conv_dw.c: the depthwise conv2d kernels (one input channel per group).
 *
 * Variant 10, the tiled kernel (channel multiplier 1, floats): a block owns
 * a tile of TH output rows x TW = RW x NCX output columns and, in NHWC, a
 * slice of NV channel vectors (VEC channels of 16 bytes where the channel
 * count allows, fewer otherwise), in NCHW PB whole (n, c) planes. The
 * block loads its input tile with its halo ((TH - 1) x SH + (KH - 1) x DH
 * + 1 rows by (TW - 1) x SW + (KW - 1) x DW + 1 columns) once into shared
 * memory, zero in the padding (NHWC: one vector load per pixel and vector,
 * coalesced along the channels; NCHW: coalesced along W, kept as floats),
 * and its filter slice transposed to [tap][channel] as floats. Each thread
 * computes RW (8, or 4 for wide filters) consecutive outputs along W for
 * its VEC channels (NHWC) or
 * its plane (NCHW): per filter row, the row's KW x VEC weights in
 * registers, then every input column of the RW outputs' window read once
 * from shared memory and multiplied into each output it reaches (register
 * blocking: (RW - 1) x SW + (KW - 1) x DW + 1 reads for RW x KW taps), fp32
 * accumulation. Threads are numbered channel vector fastest (NHWC), then
 * output row, then column group, and a shared row holds an odd number of
 * vectors (NHWC) or floats (NCHW), so that the reads of a quarter warp
 * (16-byte vectors) or a warp (floats) fall in distinct banks. The way out
 * adds the bias, and stores vectors (without a fusion epilogue: NHWC a
 * thread's VEC channels, NCHW its RW outputs where W is a multiple of RW)
 * or applies the epilogue element by element. The tiles come
 * from the shape (cg_conv_dw_plan) or from the config (tile_m rows,
 * tile_n columns, tile_k outputs per thread along W, vec channel vectors
 * or planes per block; up to 99 KB of shared memory), the threads rounded up to whole warps
 * (the extra ones only load), launched asking for 2 resident blocks per SM
 * (a bound on the registers, under which ptxas stops spilling the few it
 * spilled on some shapes without one); where the filter is too wide for its
 * row in registers (KW x VEC over 64 floats) the weights are read from
 * shared memory at each use instead.
 *
 * Variant 5, the simple kernel (any multiplier): a thread computes `vec`
 * consecutive output channels of one output pixel (NHWC; 16-byte input
 * loads when the channel multiplier is 1), fp32 accumulation over the
 * window with the taps unrolled. */
#include "codegen/cg_conv.h"

#include <stdio.h>

/* the blocks a grid should hold at least: two waves of a 132-SM part
 * (H100 SXM, H200); fewer and the tiles shrink */
enum { DW_MIN_BLOCKS = 264, DW_SMEM_MAX = 48 * 1024, DW_SMEM_ASKED = 99 * 1024, DW_MAX_TAPS = 31 };

static int64_t cdiv(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/* Rows per tile near th0 that split ho evenly. */
static int balance(int64_t ho, int th0)
{
	if (th0 < 1)
		th0 = 1;
	if (th0 >= ho)
		return (int)ho;
	int64_t n = cdiv(ho, th0);
	return (int)cdiv(ho, n);
}

static void dw_sizes(const cg_conv *cv, cg_conv_dw *p)
{
	int64_t ih = (int64_t)(p->th - 1) * cv->sh + (cv->kh - 1) * cv->dh + 1;
	int64_t iw = (int64_t)(p->rw * p->ncx - 1) * cv->sw + (cv->kw - 1) * cv->dw + 1;
	int64_t taps = cv->kh * cv->kw;
	p->ih = (int)ih;
	p->iw = (int)iw;
	p->tiles_h = cdiv(cv->ho, p->th);
	p->tiles_w = cdiv(cv->wo, (int64_t)p->rw * p->ncx);
	if (cv->nhwc) {
		int vb = p->vec * (int)ir_dtype_size(cv->t);
		int64_t rs = iw * p->nv;
		p->rs = (int)(rs % 2 ? rs : rs + 1);
		int64_t sx = (ih * p->rs * vb + 15) / 16 * 16;
		p->smem = (unsigned)(sx + taps * p->nv * p->vec * 4);
		p->active = (unsigned)(p->nv * p->th * p->ncx);
		p->grid[0] = (unsigned)(cv->n * p->tiles_h * p->tiles_w);
		p->grid[1] = (unsigned)(cv->c / p->vec / p->nv);
	} else {
		p->rs = (int)(iw % 2 ? iw : iw + 1);
		p->smem = (unsigned)((int64_t)p->pb * (ih * p->rs + taps) * 4);
		p->active = (unsigned)(p->pb * p->th * p->ncx);
		p->grid[0] = (unsigned)cdiv(cv->n * cv->c, p->pb);
		p->grid[1] = (unsigned)(p->tiles_h * p->tiles_w);
	}
	p->threads = (p->active + 31) / 32 * 32;
}

const char *cg_conv_dw_cannot(const cg_conv *cv)
{
	if (cv->t != IR_F32 && cv->t != IR_F16 && cv->t != IR_BF16)
		return "it takes f32, f16 and bf16";
	if (cv->cg != 1 || cv->groups < 2 || cv->og != 1)
		return "it needs one input channel per group and a channel multiplier of 1";
	if (cv->kh > DW_MAX_TAPS || cv->kw > DW_MAX_TAPS)
		return "its filter rows are unrolled: at most 31 x 31";
	if (cv->ho < 1 || cv->wo < 1 || cv->n < 1)
		return "the output is empty";
	if ((int64_t)(cv->kh - 1) * cv->dh + 1 > 512 || (int64_t)(cv->kw - 1) * cv->dw + 1 > 512 || cv->sh > 64 ||
	    cv->sw > 64)
		return "its window (with dilation and stride) is over 512 pixels wide";
	cg_conv_dw p;
	if (!cg_conv_dw_plan(cv, NULL, &p))
		return "its tile does not fit in 48 KB of shared memory or one launch";
	return NULL;
}

/* The tiles asked for in want (tile_m rows, tile_n columns, tile_k
 * outputs per thread along W, vec channel vectors or planes per block),
 * the rest as the rule has them; false when they do not fit. */
static bool asked(const cg_conv *cv, const cg_config *want, cg_conv_dw *p)
{
	if (want->tile_k) {
		if (want->tile_k < 1 || want->tile_k > 8)
			return false;
		p->rw = (int)(cv->wo < want->tile_k ? cv->wo : want->tile_k);
		int64_t ncx = cdiv(cv->wo, p->rw), mcx = (cv->nhwc ? 16 : 64) / p->rw;
		p->ncx = (int)(ncx < mcx ? ncx : mcx < 1 ? 1 : mcx);
	}
	if (want->tile_n) {
		if (want->tile_n < 1 || want->tile_n > 256)
			return false;
		int64_t tw = want->tile_n < cv->wo ? want->tile_n : cv->wo;
		p->ncx = (int)cdiv(tw, p->rw);
	}
	if (want->tile_m) {
		if (want->tile_m < 1 || want->tile_m > 256)
			return false;
		p->th = (int)(want->tile_m < cv->ho ? want->tile_m : cv->ho);
	}
	if (want->vec) {
		if (want->vec < 1 || want->vec > 64 || (cv->nhwc && (cv->c / p->vec) % want->vec))
			return false;
		if (cv->nhwc)
			p->nv = want->vec;
		else
			p->pb = want->vec;
	}
	dw_sizes(cv, p);
	return p->smem <= DW_SMEM_ASKED && p->threads <= 1024;
}

bool cg_conv_dw_plan(const cg_conv *cv, const cg_config *want, cg_conv_dw *p)
{
	*p = (cg_conv_dw){0};
	p->vec = 1;
	if (cv->nhwc) {
		p->vec = 16 / (int)ir_dtype_size(cv->t);
		while (p->vec > 1 && cv->c % p->vec)
			p->vec /= 2;
	}
	/* outputs per thread along W: 8 where their accumulators and a
	 * filter row fit in about 128 registers (fewer instructions that are
	 * not FMAs per output: the filter row and the window's overlap are
	 * read once for more outputs), else 4 */
	int rw = cv->wo >= 8 && (8 + cv->kw) * p->vec <= 128 ? 8 : 4;
	p->rw = (int)(cv->wo < rw ? cv->wo : rw);
	if (cv->nhwc) {
		int64_t nvec = cv->c / p->vec;
		for (p->nv = 8; nvec % p->nv; p->nv--)
			;
		int64_t ncx = cdiv(cv->wo, p->rw), mcx = 16 / p->rw;
		p->ncx = (int)(ncx < mcx ? ncx : mcx);
		p->th = balance(cv->ho, 256 / (p->nv * p->ncx));
		dw_sizes(cv, p);
		/* shared memory: fewer rows, then fewer channels */
		while (p->smem > DW_SMEM_MAX && (p->th > 1 || p->nv > 1)) {
			if (p->th > 1)
				p->th = balance(cv->ho, (p->th + 1) / 2);
			else
				for (p->nv--; nvec % p->nv; p->nv--)
					;
			dw_sizes(cv, p);
		}
		/* a grid of too few blocks: narrower channel slices (down to 2
		 * vectors: 32 bytes, a sector), then fewer rows, while a block
		 * keeps a warp's work */
		while ((int64_t)p->grid[0] * p->grid[1] < DW_MIN_BLOCKS && (p->nv > 2 || p->th > 1)) {
			cg_conv_dw q = *p;
			if (q.nv > 2)
				for (q.nv--; nvec % q.nv; q.nv--)
					;
			else
				q.th = balance(cv->ho, q.th / 2);
			dw_sizes(cv, &q);
			if (q.active < 32)
				break;
			*p = q;
		}
	} else {
		int64_t ncx = cdiv(cv->wo, p->rw), mcx = 64 / p->rw;
		p->ncx = (int)(ncx < mcx ? ncx : mcx);
		p->th = balance(cv->ho, 128 / p->ncx);
		int64_t pb = 128 / (p->th * p->ncx);
		p->pb = (int)(pb < 1 ? 1 : pb > cv->n * cv->c ? cv->n * cv->c : pb);
		dw_sizes(cv, p);
		while (p->smem > DW_SMEM_MAX && (p->pb > 1 || p->th > 1)) {
			if (p->pb > 1)
				p->pb /= 2;
			else
				p->th = balance(cv->ho, (p->th + 1) / 2);
			dw_sizes(cv, p);
		}
		while ((int64_t)p->grid[0] * p->grid[1] < DW_MIN_BLOCKS && p->pb > 1) {
			cg_conv_dw q = *p;
			q.pb /= 2;
			dw_sizes(cv, &q);
			if (q.active < 32)
				break;
			*p = q;
		}
	}
	bool any = want && (want->tile_m || want->tile_n || want->tile_k || want->vec);
	if (any && !asked(cv, want, p))
		return false;
	int64_t blocks0 = cv->nhwc ? cv->n * p->tiles_h * p->tiles_w : cdiv(cv->n * cv->c, p->pb);
	int64_t blocks1 = cv->nhwc ? cv->c / p->vec / p->nv : p->tiles_h * p->tiles_w;
	return p->smem <= (any ? DW_SMEM_ASKED : DW_SMEM_MAX) && p->threads >= 1 && p->threads <= 1024 &&
	       blocks0 <= 0x7fffffff && blocks1 <= 65535;
}

/* unpk(raw, f): the VEC values of a vector as floats; pk(f): back. */
static void emit_vec_fns(sn_buf *b, ir_dtype t, int vb)
{
	static const char *const vt[] = {"", "", "unsigned short", "", "unsigned", "", "", "", "uint2", "", "", "",
					 "", "", "", "", "uint4"};
	static const char *const wd[] = {"r.x", "r.y", "r.z", "r.w"};
	int nw = vb / 4;
	sn_buf_printf(b, "typedef %s vt;\n", vt[vb]);
	sn_buf_puts(b, "static __device__ __forceinline__ void unpk(vt r, float *f)\n{\n");
	if (vb == 2) {
		if (t == IR_BF16)
			sn_buf_puts(b, "\tf[0] = __uint_as_float((unsigned)r << 16);\n");
		else
			sn_buf_puts(b, "\tasm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f[0]) : \"h\"(r));\n");
	}
	for (int i = 0; i < nw; i++) {
		const char *w = nw == 1 ? "r" : wd[i];
		if (t == IR_F32)
			sn_buf_printf(b, "\tf[%d] = __uint_as_float(%s);\n", i, w);
		else if (t == IR_BF16)
			sn_buf_printf(b, "\tf[%d] = __uint_as_float(%s << 16);\n\tf[%d] = __uint_as_float(%s & 0xffff0000u);\n",
				      2 * i, w, 2 * i + 1, w);
		else
			sn_buf_printf(b, "\tasm(\"cvt.f32.f16 %%0, %%1;\" : \"=f\"(f[%d]) : \"h\"((unsigned short)(%s & 0xffffu)));\n"
					 "\tasm(\"cvt.f32.f16 %%0, %%1;\" : \"=f\"(f[%d]) : \"h\"((unsigned short)(%s >> 16)));\n",
				      2 * i, w, 2 * i + 1, w);
	}
	sn_buf_puts(b, "}\n");
	const char *cvt = t == IR_BF16 ? "cvt.rn.bf16.f32" : "cvt.rn.f16.f32";
	sn_buf_puts(b, "static __device__ __forceinline__ vt pk(const float *f)\n{\n\tvt r;\n");
	if (t != IR_F32)
		sn_buf_puts(b, "\tunsigned short h0, h1;\n");
	if (vb == 2)
		sn_buf_printf(b, "\tasm(\"%s %%0, %%1;\" : \"=h\"(h0) : \"f\"(f[0]));\n\tr = h0;\n", cvt);
	for (int i = 0; i < nw; i++) {
		const char *w = nw == 1 ? "r" : wd[i];
		if (t == IR_F32)
			sn_buf_printf(b, "\t%s = __float_as_uint(f[%d]);\n", w, i);
		else
			sn_buf_printf(b, "\tasm(\"%s %%0, %%1;\" : \"=h\"(h0) : \"f\"(f[%d]));\n"
					 "\tasm(\"%s %%0, %%1;\" : \"=h\"(h1) : \"f\"(f[%d]));\n"
					 "\t%s = (unsigned)h0 | (unsigned)h1 << 16;\n",
				      cvt, 2 * i, cvt, 2 * i + 1, w);
	}
	sn_buf_puts(b, "\treturn r;\n}\n\n");
}

/* The taps loop shared by both layouts: acc[k][e] over the RW outputs of
 * the thread, srow(r) the shared row of filter row r at the thread's first
 * column, X(j, e) the e-th value of column j, W(r, s, e) the weight. */
static void emit_taps(sn_buf *b, const cg_conv *cv, int vec, bool wreg, const char *row, const char *ld_x,
		      const char *ld_w)
{
	sn_buf_puts(b, "#pragma unroll 2\n\tfor (int r = 0; r < KH; r++) {\n");
	if (wreg)
		sn_buf_printf(b, "\t\tfloat wr[KW][%d];\n"
				 "#pragma unroll\n\t\tfor (int s = 0; s < KW; s++)\n"
				 "#pragma unroll\n\t\t\tfor (int e = 0; e < %d; e++)\n\t\t\t\twr[s][e] = %s;\n",
			      vec, vec, ld_w);
	sn_buf_printf(b, "\t\t%s\n"
			 "#pragma unroll\n\t\tfor (int j = 0; j < JW; j++) {\n"
			 "\t\t\tfloat xf[%d];\n\t\t\t%s\n"
			 "#pragma unroll\n\t\t\tfor (int k = 0; k < RW; k++) {\n"
			 "\t\t\t\tconst int d = j - k * SW;\n"
			 "\t\t\t\tif (d >= 0 && d %% DW == 0 && d / DW < KW) {\n"
			 "\t\t\t\t\tconst int s = d / DW;\n"
			 "#pragma unroll\n\t\t\t\t\tfor (int e = 0; e < %d; e++)\n"
			 "\t\t\t\t\t\tacc[k][e] = fmaf(xf[e], %s, acc[k][e]);\n"
			 "\t\t\t\t}\n\t\t\t}\n\t\t}\n\t}\n",
		      row, vec, ld_x, vec, wreg ? "wr[s][e]" : "WSM(r, s, e)");
}

void cg_conv_emit_dw(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, const cg_conv_dw *p)
{
	const char *tn = ir_dtype_name(cv->t);
	int vec = p->vec;
	bool wreg = cv->kw * vec <= 64;
	int jw = (p->rw - 1) * (int)cv->sw + (int)((cv->kw - 1) * cv->dw) + 1;
	sn_buf_printf(b, "#define RW %d\n#define NCX %d\n#define TH %d\n#define TW %d\n#define IH %d\n#define IW %d\n"
			 "#define RS %d\n#define JW %d\n#define TILES_H %lld\n#define TILES_W %lld\n#define NT %u\n#define NA %u\n",
		      p->rw, p->ncx, p->th, p->rw * p->ncx, p->ih, p->iw, p->rs, jw, (long long)p->tiles_h,
		      (long long)p->tiles_w, p->threads, p->active);
	if (cv->nhwc) {
		int vb = vec * (int)ir_dtype_size(cv->t);
		int64_t sx = ((int64_t)p->ih * p->rs * vb + 15) / 16 * 16;
		sn_buf_printf(b, "#define VEC %d\n#define NV %d\n#define SXB %lld\n", vec, p->nv, (long long)sx);
		emit_vec_fns(b, cv->t, vb);
		cg_conv_head_min(b, cv, epi, (int)p->threads, p->threads <= 512 ? 2 : 0);
		sn_buf_printf(b, "\textern __shared__ __align__(16) unsigned char smem[];\n"
				 "\tvt *sx = (vt *)smem;\n"
				 "\tfloat *sw = (float *)(smem + SXB); /* [tap][NV x VEC] */\n"
				 "#define WSM(r, s, e) sw[((r) * KW + (s)) * (NV * VEC) + v * VEC + (e)]\n"
				 "\tconst int tid = threadIdx.x, c0 = blockIdx.y * (NV * VEC);\n"
				 "\tint t = blockIdx.x;\n"
				 "\tconst int tw = t %% TILES_W;\n\tt /= TILES_W;\n"
				 "\tconst int th = t %% TILES_H, n = t / TILES_H;\n"
				 "\tconst int ho0 = th * TH, wo0 = tw * TW, hi0 = ho0 * SH - PT, wi0 = wo0 * SW - PL;\n"
				 "\tfor (int i = tid; i < KH * KW * NV * VEC; i += NT) {\n"
				 "\t\tint tap = i %% (KH * KW), c = i / (KH * KW);\n"
				 "\t\tsw[tap * (NV * VEC) + c] = ld_%s(wt, (ix)c0 * (KH * KW) + i);\n\t}\n"
				 "\tfor (int i = tid; i < IH * IW * NV; i += NT) {\n"
				 "\t\tint v = i %% NV, q = i / NV, col = q %% IW, row = q / IW;\n"
				 "\t\tint h = hi0 + row, w = wi0 + col;\n"
				 "\t\tvt val = vt();\n"
				 "\t\tif ((unsigned)h < (unsigned)CH && (unsigned)w < (unsigned)CW)\n"
				 "\t\t\tval = *(const vt *)(x + (((ix)n * CH + h) * CW + w) * CC + c0 + v * VEC);\n"
				 "\t\tsx[row * RS + col * NV + v] = val;\n\t}\n"
				 "\t__syncthreads();\n"
				 "\tif (NA < NT && tid >= NA)\n\t\treturn;\n"
				 "\tconst int v = tid %% NV, ty = tid / NV %% TH, cx = tid / (NV * TH);\n"
				 "\tconst vt *base = sx + ty * SH * RS + cx * (RW * SW * NV) + v;\n"
				 "\tfloat acc[RW][VEC];\n"
				 "#pragma unroll\n\tfor (int k = 0; k < RW; k++)\n"
				 "#pragma unroll\n\t\tfor (int e = 0; e < VEC; e++)\n\t\t\tacc[k][e] = 0.0f;\n",
			      tn);
		emit_taps(b, cv, vec, wreg, "const vt *srow = base + r * DH * RS;", "unpk(srow[j * NV], xf);",
			  "WSM(r, s, e)");
		sn_buf_puts(b, "\tconst int ho = ho0 + ty;\n"
			       "\tif (ho >= HO)\n\t\treturn;\n");
		if (cv->bias)
			sn_buf_printf(b, "\tfloat bv[VEC];\n#pragma unroll\n\tfor (int e = 0; e < VEC; e++)\n"
					 "\t\tbv[e] = ld_%s(bias, c0 + v * VEC + e);\n",
				      tn);
		sn_buf_puts(b, 
			       "#pragma unroll\n\tfor (int k = 0; k < RW; k++) {\n"
			       "\t\tconst int wo = wo0 + cx * RW + k;\n"
			       "\t\tif (wo >= WO)\n\t\t\tbreak;\n"
			       "\t\tconst ix o = (((ix)n * HO + ho) * WO + wo) * CO + c0 + v * VEC;\n");
		if (cv->bias)
			sn_buf_puts(b, "#pragma unroll\n\t\tfor (int e = 0; e < VEC; e++)\n\t\t\tacc[k][e] += bv[e];\n");
		if (epi) {
			sn_buf_puts(b, "#pragma unroll\n\t\tfor (int e = 0; e < VEC; e++)\n");
			cg_conv_store(b, cv, epi, "\t\t\t", "o + e", "acc[k][e]");
		} else {
			sn_buf_puts(b, "\t\t*(vt *)(y + o) = pk(acc[k]);\n");
		}
		sn_buf_puts(b, "\t}\n#undef WSM\n}\n");
		return;
	}
	sn_buf_printf(b, "#define PB %d\n", p->pb);
	cg_conv_head_min(b, cv, epi, (int)p->threads, p->threads <= 512 ? 2 : 0);
	sn_buf_printf(b, "\textern __shared__ __align__(16) unsigned char smem[];\n"
			 "\tfloat *sx = (float *)smem; /* [PB][IH][RS] */\n"
			 "\tfloat *sw = sx + PB * IH * RS; /* [PB][KH x KW] */\n"
			 "\tconst int tid = threadIdx.x;\n"
			 "\tconst ix pl0 = (ix)blockIdx.x * PB;\n"
			 "\tconst int tw = blockIdx.y %% TILES_W, th = blockIdx.y / TILES_W;\n"
			 "\tconst int ho0 = th * TH, wo0 = tw * TW, hi0 = ho0 * SH - PT, wi0 = wo0 * SW - PL;\n"
			 "\tfor (int i = tid; i < PB * KH * KW; i += NT) {\n"
			 "\t\tix pl = pl0 + i / (KH * KW);\n"
			 "\t\tsw[i] = pl < (ix)CN * CC ? ld_%s(wt, (ix)(pl %% CC) * (KH * KW) + i %% (KH * KW)) : 0.0f;\n\t}\n"
			 "\tfor (int i = tid; i < PB * IH * IW; i += NT) {\n"
			 "\t\tint col = i %% IW, row = i / IW %% IH, q = i / (IW * IH);\n"
			 "\t\tint h = hi0 + row, w = wi0 + col;\n"
			 "\t\tix pl = pl0 + q;\n"
			 "\t\tfloat val = 0.0f;\n"
			 "\t\tif (pl < (ix)CN * CC && (unsigned)h < (unsigned)CH && (unsigned)w < (unsigned)CW)\n"
			 "\t\t\tval = ld_%s(x, (pl * CH + h) * CW + w);\n"
			 "\t\tsx[(q * IH + row) * RS + col] = val;\n\t}\n"
			 "\t__syncthreads();\n"
			 "\tif (NA < NT && tid >= NA)\n\t\treturn;\n"
			 "\tconst int ty = tid %% TH, cx = tid / TH %% NCX, q = tid / (TH * NCX);\n"
			 "\tconst float *base = sx + (q * IH + ty * SH) * RS + cx * (RW * SW);\n"
			 "\tconst float *wq = sw + q * (KH * KW);\n"
			 "#define WSM(r, s, e) wq[(r) * KW + (s)]\n"
			 "\tfloat acc[RW][1];\n"
			 "#pragma unroll\n\tfor (int k = 0; k < RW; k++)\n\t\tacc[k][0] = 0.0f;\n",
		      tn, tn);
	emit_taps(b, cv, 1, wreg, "const float *srow = base + r * DH * RS;", "xf[0] = srow[j];", "WSM(r, s, e)");
	sn_buf_puts(b, "\tconst ix pl = pl0 + q;\n"
		       "\tconst int ho = ho0 + ty;\n"
		       "\tif (ho >= HO || pl >= (ix)CN * CC)\n\t\treturn;\n");
	if (cv->bias)
		sn_buf_printf(b, "\tconst float bv = ld_%s(bias, (int)(pl %% CC));\n", tn);
	/* the thread's RW outputs are contiguous: one to two vector stores
	 * where W is a multiple of RW (so they are aligned and all inside) */
	int es = (int)ir_dtype_size(cv->t), bytes = p->rw * es;
	if (!epi && cv->wo % p->rw == 0 && bytes % 4 == 0 && bytes <= 32) {
		const char *cvt = cv->t == IR_BF16 ? "cvt.rn.bf16.f32" : "cvt.rn.f16.f32";
		sn_buf_puts(b, "\tif (wo0 + cx * RW >= WO)\n\t\treturn;\n");
		if (cv->bias)
			sn_buf_puts(b, "#pragma unroll\n\tfor (int k = 0; k < RW; k++)\n\t\tacc[k][0] += bv;\n");
		if (es == 2)
			sn_buf_puts(b, "\tunsigned short h0, h1;\n");
		for (int i = 0; i < bytes / 4; i++) {
			if (es == 4)
				sn_buf_printf(b, "\tconst unsigned w%d = __float_as_uint(acc[%d][0]);\n", i, i);
			else
				sn_buf_printf(b, "\tasm(\"%s %%0, %%1;\" : \"=h\"(h0) : \"f\"(acc[%d][0]));\n"
						 "\tasm(\"%s %%0, %%1;\" : \"=h\"(h1) : \"f\"(acc[%d][0]));\n"
						 "\tconst unsigned w%d = (unsigned)h0 | (unsigned)h1 << 16;\n",
					      cvt, 2 * i, cvt, 2 * i + 1, i);
		}
		sn_buf_puts(b, "\tconst ix o = (pl * HO + ho) * WO + wo0 + cx * RW;\n");
		int cs = bytes % 16 == 0 ? 16 : bytes % 8 == 0 ? 8 : 4;
		for (int off = 0; off < bytes; off += cs) {
			int w = off / 4;
			if (cs == 16)
				sn_buf_printf(b, "\t{\n\t\tuint4 v_ = {w%d, w%d, w%d, w%d};\n\t\t*(uint4 *)(y + o + %d) = v_;\n\t}\n", w,
					      w + 1, w + 2, w + 3, off / es);
			else if (cs == 8)
				sn_buf_printf(b, "\t{\n\t\tuint2 v_ = {w%d, w%d};\n\t\t*(uint2 *)(y + o + %d) = v_;\n\t}\n", w, w + 1,
					      off / es);
			else
				sn_buf_printf(b, "\t*(unsigned *)(y + o + %d) = w%d;\n", off / es, w);
		}
		sn_buf_puts(b, "#undef WSM\n}\n");
		return;
	}
	sn_buf_puts(b, "#pragma unroll\n\tfor (int k = 0; k < RW; k++) {\n"
		       "\t\tconst int wo = wo0 + cx * RW + k;\n"
		       "\t\tif (wo >= WO)\n\t\t\tbreak;\n");
	cg_conv_store(b, cv, epi, "\t\t", "(pl * HO + ho) * WO + wo", cv->bias ? "acc[k][0] + bv" : "acc[k][0]");
	sn_buf_puts(b, "\t}\n#undef WSM\n}\n");
}

void cg_conv_emit_depthwise(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, int vec)
{
	const char *tn = ir_dtype_name(cv->t), *ct = cg_ctype(cv->t);
	bool vload = cv->nhwc && cv->og == 1 && vec > 1;
	sn_buf_printf(b, "#define VC %d\n", vec);
	cg_conv_head(b, cv, epi, 256);
	/* thread i: output pixel m, channels o .. o + VC - 1 (NHWC), or one
	 * output element (NCHW, VC = 1) */
	if (cv->nhwc)
		sn_buf_puts(b, "\tfor (ix i = (ix)blockIdx.x * 256 + threadIdx.x; i < (ix)MM * (CO / VC); i += (ix)gridDim.x * 256) {\n"
			       "\t\tint o = (int)(i % (CO / VC)) * VC;\n\t\tix m = i / (CO / VC);\n");
	else
		sn_buf_puts(b, "\tfor (ix i = (ix)blockIdx.x * 256 + threadIdx.x; i < (ix)MM * CO; i += (ix)gridDim.x * 256) {\n"
			       "\t\tix q = i % ((ix)HO * WO), nn = i / ((ix)HO * WO * CO);\n"
			       "\t\tint o = (int)(i / ((ix)HO * WO) % CO);\n\t\tix m = nn * HO * WO + q;\n");
	sn_buf_puts(b, "\t\tix n = m / (HO * WO);\n"
		       "\t\tint p = (int)(m % (HO * WO)), hi0 = p / WO * SH - PT, wi0 = p % WO * SW - PL;\n"
		       "\t\tfloat acc[VC];\n"
		       "#pragma unroll\n\t\tfor (int v = 0; v < VC; v++)\n\t\t\tacc[v] = 0.0f;\n"
		       "#pragma unroll\n\t\tfor (int r = 0; r < KH; r++) {\n"
		       "\t\t\tint h = hi0 + r * DH;\n"
		       "\t\t\tif ((unsigned)h >= (unsigned)CH)\n\t\t\t\tcontinue;\n"
		       "#pragma unroll\n\t\t\tfor (int s = 0; s < KW; s++) {\n"
		       "\t\t\t\tint w = wi0 + s * DW;\n"
		       "\t\t\t\tif ((unsigned)w >= (unsigned)CW)\n\t\t\t\t\tcontinue;\n");
	if (cv->nhwc)
		sn_buf_puts(b, "\t\t\t\tix xo = ((n * CH + h) * CW + w) * CC;\n");
	else
		sn_buf_puts(b, "\t\t\t\tix xo = ((n * CC + o / OG) * CH + h) * CW + w;\n");
	if (vload) {
		sn_buf_printf(b, "\t\t\t\tuint4 raw = *(const uint4 *)(x + xo + o);\n"
				 "\t\t\t\tconst %s *xv = (const %s *)&raw;\n"
				 "#pragma unroll\n\t\t\t\tfor (int v = 0; v < VC; v++)\n"
				 "\t\t\t\t\tacc[v] = fmaf(ld_%s(xv, v), ld_%s(wt, ((ix)(o + v) * KH + r) * KW + s), acc[v]);\n",
			      ct, ct, tn, tn);
	} else if (cv->nhwc) {
		sn_buf_printf(b, "#pragma unroll\n\t\t\t\tfor (int v = 0; v < VC; v++)\n"
				 "\t\t\t\t\tacc[v] = fmaf(ld_%s(x, xo + (o + v) / OG), ld_%s(wt, ((ix)(o + v) * KH + r) * KW + s), acc[v]);\n",
			      tn, tn);
	} else {
		sn_buf_printf(b, "\t\t\t\tacc[0] = fmaf(ld_%s(x, xo), ld_%s(wt, ((ix)o * KH + r) * KW + s), acc[0]);\n", tn, tn);
	}
	sn_buf_puts(b, "\t\t\t}\n\t\t}\n"
		       "#pragma unroll\n\t\tfor (int v = 0; v < VC; v++) {\n");
	if (cv->bias)
		sn_buf_printf(b, "\t\t\tfloat val = acc[v] + ld_%s(bias, o + v);\n", tn);
	else
		sn_buf_puts(b, "\t\t\tfloat val = acc[v];\n");
	cg_conv_store(b, cv, epi, "\t\t\t", cv->nhwc ? "m * CO + o + v" : "i", "val");
	sn_buf_puts(b, "\t\t}\n\t}\n}\n");
}
