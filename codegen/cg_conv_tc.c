/* cg_conv_tc.c: the pipelined tensor-core implicit-GEMM conv2d (NHWC,
 * bf16/f16 with fp32 accumulation, or f32 operands rounded to TF32).
 *
 * Tensor-core kernel. Each block computes a tm x tn tile of Y for one group
 * (the GEMM of cg_conv.c: M output pixels, N = the group's output channels,
 * K = (r, s, c) with c fastest). Operand slices of tk k-values move from
 * global to shared memory with cp.async in 16-byte chunks (a chunk is 8
 * halves or 4 floats of one (r, s) tap, so CG and C must be multiples of
 * it; the padding and the tails are zero-filled by cp.async's source size
 * 0), `stages` slices deep: slice t + stages - 1 is in flight while slice t
 * is multiplied, one barrier per slice. Shared rows are tk elements plus 16
 * bytes of padding, so that the 8 row addresses of an ldmatrix phase fall
 * in distinct banks. Warps are a wm x wn grid; each warp's tile is
 * fragments of 16 x 8, loaded with ldmatrix.x4 (A: one 16x16-byte-pair per
 * m16, B: two n8 per instruction) and multiplied with mma.sync m16n8k16
 * (bf16/f16) or m16n8k8 (tf32). In bytes, the fragment layouts of both
 * shapes are the same, so one address scheme serves both: a k-step is 32
 * bytes of a row. The epilogue adds the bias and stores (or applies the
 * fusion epilogue) straight from the accumulators, two channels at a time
 * where the output allows. (The depthwise kernels are in cg_conv_dw.c.) */
#include "codegen/cg_conv.h"

#include <stdio.h>

unsigned cg_conv_tc_smem(const cg_conv_tc *c, int esize)
{
	return (unsigned)(c->stages * (c->tm + c->tn) * (c->tk * esize + 16));
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

int cg_conv_tc_check(const cg_conv *cv, const cg_target *tg, cg_conv_tc *c, sn_err *e)
{
	int es = c->tf32 ? 4 : 2;
	(void)cv;
	if (c->tk * es != 64 && c->tk * es != 128)
		return sn_errf(e, SN_EUSAGE, "conv2d: tile_k %d: the tensor-core kernel takes tile_k %d or %d for %s", c->tk,
			       64 / es, 128 / es, c->tf32 ? "tf32" : "f16/bf16");
	if (!pow2_in(c->tm, 32, 256))
		return sn_errf(e, SN_EUSAGE, "conv2d: tile_m %d is not a power of two in [32, 256]", c->tm);
	if (!pow2_in(c->tn, 32, 256))
		return sn_errf(e, SN_EUSAGE, "conv2d: tile_n %d is not a power of two in [32, 256]", c->tn);
	if (!pow2_in(c->warps, 1, 16))
		return sn_errf(e, SN_EUSAGE, "conv2d: warps %d is not a power of two in [1, 16]", c->warps);
	if (c->wk < 1)
		c->wk = 1;
	if (!pow2_in(c->wk, 1, 4) || c->wk > c->warps || (c->tk * es / 32) % c->wk)
		return sn_errf(e, SN_EUSAGE,
			       "conv2d: split_k %d: the k groups must be 1, 2 or 4, at most the warps (%d), and divide "
			       "the %d k-steps of a slice",
			       c->wk, c->warps, c->tk * es / 32);
	if (c->wk > 1 && (unsigned)(c->tm * (c->tn + 4) * 4) > cg_conv_tc_smem(c, es))
		return sn_errf(e, SN_EUSAGE,
			       "conv2d: split_k %d adds the k groups' sums in shared memory: a %dx%d fp32 tile does not fit "
			       "%d stages",
			       c->wk, c->tm, c->tn, c->stages);
	/* the warp grid: warp tiles of 16 x 16 multiples, at most 4096
	 * accumulators per warp (128 registers a thread), closest to square
	 * with the longer side along m */
	int best = -1, ws = c->warps / c->wk;
	for (int wm = 1; wm <= ws; wm *= 2) {
		int wn = ws / wm, wtm = c->tm / wm, wtn = c->tn / wn;
		if (c->tm % wm || c->tn % wn || wtm % 16 || wtn % 16 || wtm * wtn > 4096)
			continue;
		int score = (wtm >= wtn ? wtm / wtn : 4 * wtn / wtm);
		if (best < 0 || score < best) {
			best = score;
			c->wm = wm;
			c->wn = wn;
		}
	}
	if (best < 0)
		return sn_errf(e, SN_EUSAGE,
			       "conv2d: %d warps per k group cannot split a %dx%d tile (warp tiles must be multiples of "
			       "16x16, at most 4096 outputs each)",
			       ws, c->tm, c->tn);
	if (c->stages < 2 || c->stages > 8)
		return sn_errf(e, SN_EUSAGE, "conv2d: stages %d is not in [2, 8]", c->stages);
	unsigned smem = cg_conv_tc_smem(c, es), lim = smem_limit(tg->sm);
	if (smem > lim)
		return sn_errf(e, SN_EUSAGE, "conv2d: stages %d of a %dx%dx%d tile need %u bytes of shared memory, over sm_%d's %u",
			       c->stages, c->tm, c->tn, c->tk, smem, tg->sm, lim);
	return SN_OK;
}

/* Measured on the H100 over ResNet-50's convs (docs/PERF.md): 1x1 convs
 * run best on 64-byte slices (tile_k 32, 16 for tf32) in 4 stages, wider
 * windows on 128-byte slices; the first tile whose grid holds about 5
 * warps per SM wins (fewer idle SMs do not pay for smaller tiles' lower
 * reuse): for wider windows 256x128 of 8 warps in 3 stages, 128x128 of 8
 * in 4, 128x64 of 4 in 3, then 128x64 of 8 warps in two k groups (twice
 * the warps on a grid too small for the SMs), then 64x64 of 4; 1x1
 * convs 128x128 of 8, 128x64 of 4, 64x64 of 4, all in 4 stages. A group
 * of at most 64 channels skips the tiles wider than 64; stages drop to
 * what the target's shared memory holds. */
cg_conv_tc cg_conv_tc_default(const cg_conv *cv, const cg_target *tg, bool tf32)
{
	int es = tf32 ? 4 : 2, sms = tg->sm >= 90 ? 132 : 108;
	bool one = cv->kh == 1 && cv->kw == 1;
	/* tm, tn, warps, stages, k groups */
	static const int wide[][5] = {{256, 128, 8, 3, 1}, {128, 128, 8, 4, 1}, {128, 64, 4, 3, 1}, {128, 64, 8, 3, 2},
				      {64, 64, 4, 3, 1}};
	static const int narrow[][5] = {{128, 128, 8, 4, 1}, {128, 64, 4, 4, 1}, {64, 64, 4, 4, 1}};
	const int(*cand)[5] = one ? narrow : wide;
	size_t nc = one ? SN_COUNT(narrow) : SN_COUNT(wide);
	cg_conv_tc c = {0};
	for (size_t i = 0; i < nc; i++) {
		c = (cg_conv_tc){.tm = cand[i][0], .tn = cand[i][1], .tk = (one ? 64 : 128) / es, .warps = cand[i][2],
				 .stages = cand[i][3], .wk = cand[i][4], .tf32 = tf32};
		while (c.stages > 2 && cg_conv_tc_smem(&c, es) > smem_limit(tg->sm))
			c.stages--; /* 163 KB on sm_80, 99 KB on sm_86/89 */
		if ((cv->og <= 64 && c.tn > 64) || (i + 1 < nc && cg_conv_tc_smem(&c, es) > smem_limit(tg->sm)))
			continue;
		int64_t blocks = (cv->m + c.tm - 1) / c.tm * ((cv->og + c.tn - 1) / c.tn) * cv->groups;
		if (blocks * c.warps >= 5 * sms)
			break;
	}
	sn_err e = {0};
	(void)cg_conv_tc_check(cv, tg, &c, &e); /* valid by construction: fills wm, wn */
	return c;
}

/* The staged tile's way out (cg_conv.h): rows of TN + 4 floats at cs. */
void cg_conv_emit_staged_out(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, int nt, int sk)
{
	/* split over a cluster: block rank takes every sk-th piece, each the
	 * sum of the cluster's partial tiles (read through DSMEM) */
	char first[32] = "tid", step[32];
	if (sk > 1)
		snprintf(first, sizeof first, "tid + rank * %d", nt);
	snprintf(step, sizeof step, "%d", sk > 1 ? nt * sk : nt);
	const char *tn = ir_dtype_name(cv->t);
	int vo = 16 / (int)ir_dtype_size(cv->t);
	/* an epilogue storing the conv's own dtype applies to each staged
	 * element before the 16-byte store */
	bool v16 = (!epi || epi->dtype == cv->t) && cv->og % vo == 0 && cv->o % vo == 0;
	if (v16) {
		sn_buf_printf(b, "#pragma unroll 4\n\tfor (int q = %s; q < TM * (TN / %d); q += %s) {\n"
				 "\t\tint row = q / (TN / %d), col = q %% (TN / %d) * %d;\n"
				 "\t\tix m = m0 + row;\n\t\tint o = n0 + col;\n"
				 "\t\tif (m >= MM || o >= OG)\n\t\t\tcontinue;\n"
				 "\t\to += g * OG;\n"
				 "\t\tfloat4 f[%d];\n"
				 "#pragma unroll\n\t\tfor (int e = 0; e < %d; e++)\n"
				 "\t\t\tf[e] = %s&cs[row * (TN + 4) + col + 4 * e]%s;\n"
				 "\t\tfloat *v = (float *)f;\n",
			      first, vo, step, vo, vo, vo, vo / 4, vo / 4, sk > 1 ? "peer_sum4(" : "*(const float4 *)",
			      sk > 1 ? ")" : "");
		if (cv->bias)
			sn_buf_printf(b, "#pragma unroll\n\t\tfor (int e = 0; e < %d; e++)\n\t\t\tv[e] += ld_%s(bias, o + e);\n",
				      vo, tn);
		if (epi)
			sn_buf_printf(b, "#pragma unroll\n\t\tfor (int e = 0; e < %d; e++)\n"
					 "\t\t\tv[e] = sn_epi(v[e], (long)y_off(m, o) + e%s);\n",
				      vo, epi->args);
		if (cv->t == IR_F32)
			sn_buf_puts(b, "\t\t*(float4 *)(y + y_off(m, o)) = f[0];\n");
		else
			sn_buf_printf(b, "\t\tunsigned u[4];\n"
					 "#pragma unroll\n\t\tfor (int e = 0; e < 4; e++) {\n"
					 "\t\t\tunsigned short h0, h1;\n"
					 "\t\t\tasm(\"cvt.rn.%s.f32 %%0, %%1;\" : \"=h\"(h0) : \"f\"(v[2 * e]));\n"
					 "\t\t\tasm(\"cvt.rn.%s.f32 %%0, %%1;\" : \"=h\"(h1) : \"f\"(v[2 * e + 1]));\n"
					 "\t\t\tu[e] = (unsigned)h0 | (unsigned)h1 << 16;\n"
					 "\t\t}\n"
					 "\t\t*(uint4 *)(y + y_off(m, o)) = make_uint4(u[0], u[1], u[2], u[3]);\n",
				      cv->t == IR_BF16 ? "bf16" : "f16", cv->t == IR_BF16 ? "bf16" : "f16");
		sn_buf_puts(b, "\t}\n");
	} else {
		sn_buf_printf(b, "#pragma unroll 4\n\tfor (int q = %s; q < TM * TN; q += %s) {\n"
				 "\t\tint row = q / TN, col = q %% TN;\n"
				 "\t\tix m = m0 + row;\n\t\tint o = n0 + col;\n"
				 "\t\tif (m >= MM || o >= OG)\n\t\t\tcontinue;\n"
				 "\t\to += g * OG;\n"
				 "\t\tfloat v = %s;\n",
			      first, step, sk > 1 ? "peer_sum1(&cs[row * (TN + 4) + col])" : "cs[row * (TN + 4) + col]");
		if (cv->bias)
			sn_buf_printf(b, "\t\tv += ld_%s(bias, o);\n", tn);
		cg_conv_store(b, cv, epi, "\t\t", "y_off(m, o)", "v");
		sn_buf_puts(b, "\t}\n");
	}
	if (sk > 1) /* the peers' shared memory stays until every block has read it */
		sn_buf_puts(b, "\tcluster_sync();\n");
	sn_buf_puts(b, "}\n");
}

/* The epilogue of the tensor-core kernel. Accumulator fragments: c0,c1 at
 * (row gid, channels 2*tig, 2*tig + 1), c2,c3 at row gid + 8. Staged
 * (when TM x (TN + 4) floats fit the pipeline's shared memory): the tile
 * goes through shared memory as fp32, then out row-major by consecutive
 * threads: VO channels (16 bytes) per thread when the channel counts
 * allow (a fusion epilogue applied to each of them first, when it stores
 * the conv's own dtype), else one element per thread, still coalesced. Otherwise straight from the fragments, a pair of
 * channels per store where aligned. */
static void emit_tc_store(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, const cg_conv_tc *c, int fm, int fn,
			  int nt)
{
	const char *tn = ir_dtype_name(cv->t);
	int es = c->tf32 ? 4 : 2;
	if ((unsigned)(c->tm * (c->tn + 4) * 4) <= cg_conv_tc_smem(c, es)) {
		sn_buf_puts(b, "\tasm volatile(\"cp.async.wait_group 0;\" ::: \"memory\");\n"
			       "\t__syncthreads();\n"
			       "\tfloat *cs = (float *)smem;\n");
		/* k group q > 0 adds its sums to those of the groups before */
		for (int q = 0; q < (c->wk > 1 ? c->wk : 1); q++) {
			if (c->wk > 1)
				sn_buf_printf(b, "\tif (kg == %d)\n", q);
			sn_buf_printf(b, "#pragma unroll\n\tfor (int i = 0; i < %d; i++)\n"
					 "#pragma unroll\n\t\tfor (int j = 0; j < %d; j++)\n"
					 "#pragma unroll\n\t\t\tfor (int h = 0; h < 2; h++) {\n"
					 "\t\t\t\tfloat2 *p_ = (float2 *)&cs[(wm0 + i * 16 + (lane >> 2) + h * 8) * (TN + 4) + wn0 + j * 8 + (lane & 3) * 2];\n",
				      fm, fn);
			if (q == 0)
				sn_buf_puts(b, "\t\t\t\t*p_ = make_float2(acc[i][j][h * 2], acc[i][j][h * 2 + 1]);\n\t\t\t}\n");
			else
				sn_buf_puts(b, "\t\t\t\tfloat2 o_ = *p_;\n"
					       "\t\t\t\t*p_ = make_float2(o_.x + acc[i][j][h * 2], o_.y + acc[i][j][h * 2 + 1]);\n\t\t\t}\n");
			sn_buf_puts(b, "\t__syncthreads();\n");
		}
		cg_conv_emit_staged_out(b, cv, epi, nt, 1);
		return;
	}
	bool pair = !epi && cv->og % 2 == 0 && cv->o % 2 == 0 && (cv->t == IR_BF16 || cv->t == IR_F16 || cv->t == IR_F32);
	sn_buf_printf(b, "#pragma unroll\n\tfor (int j = 0; j < %d; j++) {\n"
			 "\t\tint o = n0 + wn0 + j * 8 + (lane & 3) * 2;\n"
			 "\t\tif (o >= OG)\n\t\t\tcontinue;\n"
			 "\t\to += g * OG;\n",
		      fn);
	if (cv->bias)
		sn_buf_printf(b, "\t\tfloat bv0 = ld_%s(bias, o), bv1 = o + 1 < (g + 1) * OG ? ld_%s(bias, o + 1) : 0.0f;\n", tn,
			      tn);
	else
		sn_buf_puts(b, "\t\tconst float bv0 = 0.0f, bv1 = 0.0f;\n");
	sn_buf_printf(b, "#pragma unroll\n\t\tfor (int i = 0; i < %d; i++)\n"
			 "#pragma unroll\n\t\t\tfor (int h = 0; h < 2; h++) {\n"
			 "\t\t\t\tix m = m0 + wm0 + i * 16 + (lane >> 2) + h * 8;\n"
			 "\t\t\t\tif (m >= MM)\n\t\t\t\t\tcontinue;\n"
			 "\t\t\t\tfloat v0 = acc[i][j][h * 2] + bv0, v1 = acc[i][j][h * 2 + 1] + bv1;\n",
		      fm);
	if (pair && cv->t == IR_F32)
		sn_buf_puts(b, "\t\t\t\t*(float2 *)(y + y_off(m, o)) = make_float2(v0, v1);\n");
	else if (pair)
		sn_buf_printf(b, "\t\t\t\tunsigned short h0, h1;\n"
				 "\t\t\t\tasm(\"cvt.rn.%s.f32 %%0, %%1;\" : \"=h\"(h0) : \"f\"(v0));\n"
				 "\t\t\t\tasm(\"cvt.rn.%s.f32 %%0, %%1;\" : \"=h\"(h1) : \"f\"(v1));\n"
				 "\t\t\t\t*(unsigned *)(y + y_off(m, o)) = (unsigned)h0 | (unsigned)h1 << 16;\n",
			      cv->t == IR_BF16 ? "bf16" : "f16", cv->t == IR_BF16 ? "bf16" : "f16");
	else {
		cg_conv_store(b, cv, epi, "\t\t\t\t", "y_off(m, o)", "v0");
		sn_buf_puts(b, "\t\t\t\tif (o + 1 < (g + 1) * OG)\n");
		cg_conv_store(b, cv, epi, "\t\t\t\t\t", "y_off(m, o + 1)", "v1");
	}
	sn_buf_puts(b, "\t\t\t}\n\t}\n}\n");
}

/* tf32(bits) (round to TF32) when tf32, and mma(c, a, b): one mma.sync
 * m16n8k8 tf32, or m16n8k16 in t (f16/bf16), fp32 accumulation in place */
void cg_conv_emit_mma(sn_buf *b, ir_dtype t, bool tf32)
{
	if (tf32)
		sn_buf_puts(b, "static __device__ __forceinline__ unsigned tf32(unsigned v)\n{\n"
			       "\tunsigned r;\n\tasm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(__uint_as_float(v)));\n"
			       "\treturn r;\n}\n\n"
			       "static __device__ __forceinline__ void mma(float *c, const unsigned *a, const unsigned *b)\n{\n"
			       "\tasm(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
			       "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\"\n"
			       "\t\t     : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
			       "\t\t     : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n}\n\n");
	else {
		const char *mt = t == IR_BF16 ? "bf16" : "f16";
		sn_buf_printf(b, "static __device__ __forceinline__ void mma(float *c, const unsigned *a, const unsigned *b)\n{\n"
				 "\tasm(\"mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 "
				 "{%%0,%%1,%%2,%%3}, {%%4,%%5,%%6,%%7}, {%%8,%%9}, {%%0,%%1,%%2,%%3};\"\n"
				 "\t\t     : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
				 "\t\t     : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n}\n\n",
			      mt, mt);
	}
}

void cg_conv_emit_tc(sn_buf *b, const cg_conv *cv, const cg_epilogue *epi, const cg_conv_tc *c)
{
	int es = c->tf32 ? 4 : 2, ve = 16 / es, ch = c->tk * es / 16, rs = c->tk * es + 16;
	int nt = 32 * c->warps, ra = nt / ch; /* chunk rows per pass */
	int ai = (c->tm + ra - 1) / ra, bi = (c->tn + ra - 1) / ra;
	int wtm = c->tm / c->wm, wtn = c->tn / c->wn, fm = wtm / 16, fn = wtn / 8, ks = c->tk * es / 32;
	int wk = c->wk > 1 ? c->wk : 1, kpg = ks / wk; /* k-steps of a slice per k group */
	char kb[32] = ""; /* the group's first k-step */
	if (wk > 1)
		snprintf(kb, sizeof kb, "kg * %d + ", kpg);
	sn_buf_printf(b, "#define TM %d\n#define TN %d\n#define TK %d\n#define ST %d\n#define RS %d\n#define KCH %d\n"
			 "#define RA %d\n#define SB %d\n\n",
		      c->tm, c->tn, c->tk, c->stages, rs, ch, ra, (c->tm + c->tn) * rs);
	sn_buf_puts(b, "static __device__ __forceinline__ unsigned smem_u32(const void *p)\n{\n"
		       "\tunsigned s;\n"
		       "\tasm(\"{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }\" : \"=r\"(s) : \"l\"(p));\n"
		       "\treturn s;\n}\n\n"
		       "static __device__ __forceinline__ void cp16(unsigned s, const void *g, bool ok)\n{\n"
		       "\tasm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"(s), \"l\"(g), \"r\"(ok ? 16 : 0));\n"
		       "}\n\n"
		       "static __device__ __forceinline__ void ldsm4(unsigned *r, unsigned a)\n{\n"
		       "\tasm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\"\n"
		       "\t\t     : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));\n}\n\n");
	cg_conv_emit_mma(b, cv->t, c->tf32);
	cg_conv_head(b, cv, epi, nt);
	sn_buf_printf(b, "\textern __shared__ __align__(128) unsigned char smem[];\n"
			 "\tconst unsigned sbase = smem_u32(smem);\n"
			 "\tint tid = threadIdx.x, g = blockIdx.z, lane = tid & 31, warp = tid >> 5;\n"
			 "\tix m0 = (ix)blockIdx.x * TM;\n\tint n0 = blockIdx.y * TN;\n"
			 "\tconst int ch = tid %% KCH, r0 = tid / KCH;\n"
			 "\tpix px[%d];\n"
			 "#pragma unroll\n\tfor (int i = 0; i < %d; i++)\n\t\tpx[i] = pixel(m0 + r0 + i * RA, g);\n"
			 "\tconst %s *bp[%d];\n\tbool bok[%d];\n"
			 "#pragma unroll\n\tfor (int j = 0; j < %d; j++) {\n"
			 "\t\tint o = n0 + r0 + j * RA;\n"
			 "\t\tbok[j] = o < OG;\n"
			 "\t\tbp[j] = wt + ((ix)g * OG + (bok[j] ? o : 0)) * KK + ch * %d;\n\t}\n",
		      ai, ai, cg_ctype(cv->t), bi, bi, bi, ve);
	/* a slice: rows beyond the tile (when a pass covers more rows than
	 * the tile has) are skipped */
	sn_buf_printf(b, "#define LOAD(slot, kt) do { \\\n"
			 "\t\tunsigned sa_ = sbase + (slot) * SB, sb_ = sa_ + TM * RS; \\\n"
			 "\t\tint k_ = (kt) * TK + ch * %d; \\\n"
			 "\t\t_Pragma(\"unroll\") for (int i = 0; i < %d; i++) { \\\n"
			 "\t\t\tbool ok; \\\n"
			 "\t\t\tix off = a_off(px[i], k_, &ok); \\\n"
			 "\t\t\t%scp16(sa_ + (r0 + i * RA) * RS + ch * 16, x + (ok ? off : 0), ok); \\\n"
			 "\t\t} \\\n"
			 "\t\t_Pragma(\"unroll\") for (int j = 0; j < %d; j++) { \\\n"
			 "\t\t\tbool ok = bok[j] && k_ < KK; \\\n"
			 "\t\t\t%scp16(sb_ + (r0 + j * RA) * RS + ch * 16, bp[j] + (ok ? (ix)(kt) * TK : 0), ok); \\\n"
			 "\t\t} \\\n"
			 "\t} while (0)\n",
		      ve, ai, c->tm % ra ? "if (r0 + i * RA < TM) " : "", bi, c->tn % ra ? "if (r0 + j * RA < TN) " : "");
	if (c->wk > 1)
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
	/* the fragments of k-step kq of the slice at sa/sb into buffer u
	 * (fragments of the next k-step load while this one multiplies) */
	sn_buf_printf(b, "#define FRAG(u, kq) do { \\\n"
			 "\t\t_Pragma(\"unroll\") for (int i = 0; i < %d; i++) \\\n"
			 "\t\t\tldsm4(af[u][i], sa + (wm0 + i * 16 + (lane & 15)) * RS + (kq) * 32 + (lane >> 4) * 16); \\\n"
			 "\t\t_Pragma(\"unroll\") for (int j = 0; j < %d; j++) { \\\n"
			 "\t\t\tunsigned r[4]; \\\n"
			 "\t\t\tldsm4(r, sb + (wn0 + j * 16 + (lane & 7) + ((lane >> 4) << 3)) * RS + (kq) * 32 + ((lane >> 3) & 1) * 16); \\\n"
			 "\t\t\tbf[u][2 * j][0] = r[0]; \\\n\t\t\tbf[u][2 * j][1] = r[1]; \\\n"
			 "\t\t\tbf[u][2 * j + 1][0] = r[2]; \\\n\t\t\tbf[u][2 * j + 1][1] = r[3]; \\\n"
			 "\t\t} \\\n",
		      fm, fn / 2);
	if (c->tf32)
		sn_buf_printf(b, "\t\t_Pragma(\"unroll\") for (int i = 0; i < %d; i++) \\\n"
				 "\t\t\t_Pragma(\"unroll\") for (int q = 0; q < 4; q++) \\\n\t\t\t\taf[u][i][q] = tf32(af[u][i][q]); \\\n"
				 "\t\t_Pragma(\"unroll\") for (int j = 0; j < %d; j++) \\\n"
				 "\t\t\t_Pragma(\"unroll\") for (int q = 0; q < 2; q++) \\\n\t\t\t\tbf[u][j][q] = tf32(bf[u][j][q]); \\\n",
			      fm, fn);
	sn_buf_printf(b, "\t} while (0)\n"
			 "\tconst int tiles = (KK + TK - 1) / TK;\n"
			 "#pragma unroll\n\tfor (int s = 0; s < ST - 1; s++) {\n"
			 "\t\tif (s < tiles)\n\t\t\tLOAD(s, s);\n"
			 "\t\tasm volatile(\"cp.async.commit_group;\");\n\t}\n"
			 "\tfor (int t = 0; t < tiles; t++) {\n"
			 "\t\tasm volatile(\"cp.async.wait_group %%0;\" :: \"n\"(ST - 2) : \"memory\");\n"
			 "\t\t__syncthreads();\n"
			 "\t\tint nx = t + ST - 1;\n"
			 "\t\tif (nx < tiles)\n\t\t\tLOAD(nx %% ST, nx);\n"
			 "\t\tasm volatile(\"cp.async.commit_group;\");\n"
			 "\t\tunsigned sa = sbase + (t %% ST) * SB, sb = sa + TM * RS;\n"
			 "\t\tFRAG(0, %s0);\n"
			 "#pragma unroll\n\t\tfor (int kq = 0; kq < %d; kq++) {\n"
			 "\t\t\tif (kq + 1 < %d)\n\t\t\t\tFRAG((kq + 1) & 1, %skq + 1);\n"
			 "#pragma unroll\n\t\t\tfor (int i = 0; i < %d; i++)\n"
			 "#pragma unroll\n\t\t\t\tfor (int j = 0; j < %d; j++)\n"
			 "\t\t\t\t\tmma(acc[i][j], af[kq & 1][i], bf[kq & 1][j]);\n"
			 "\t\t}\n\t}\n"
			 "#undef LOAD\n#undef FRAG\n",
		      kb, kpg, kpg, kb, fm, fn);
	emit_tc_store(b, cv, epi, c, fm, fn, nt);
}
