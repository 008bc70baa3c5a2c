/* cg_gemm.c: matmul and linear.
 *
 * f32, f16 and bf16 products whose batch dims one stride per operand can
 * express go to cuBLASLt (CG_STEP_GEMM): each operand's batch dims either
 * equal the output's (stride = its matrix size) or are all 1 (stride 0).
 * When b is shared by every batch and a is not, the batch folds into M (one
 * larger product). numpy's 1-D operands need no copy: a [K] is a 1 x K row,
 * b [K] a K x 1 column, both already row-major.
 *
 * Everything else (batch dims that broadcast partly, e.g. [2,1,M,K] @
 * [1,3,K,N]; integer and fp8 dtypes) is a generated tiled SIMT kernel:
 * 64x64 output tiles, 16-deep K slices in shared memory, 4x4 outputs per
 * thread, fp32 FMA accumulation for floats (no TF32: cg_target.tf32 only
 * reaches cuBLASLt) and exact 64-bit
 * accumulation for integers, stored as the reference does.
 *
 * The tensor-core template (cg_gemm_tc.c) takes, where it fits (bf16, f16,
 * f32 under TF32, fp8 e4m3 on sm_89+; one stride per operand): products
 * that carry a fusion epilogue (st->epi: what cuBLASLt cannot express, such
 * as the erf GELU), fp8 products (the SIMT kernel stays for sm_80 and
 * e5m2), and any product rendered with a config (the autotuner's).
 *
 * The skinny-product family (cg_gemv.c) renders a product when a config
 * of its variant asks (max-autotune times it against the others and keeps
 * it where it measures faster). Its default rule (products of 1 to 16 rows
 * large enough to be bandwidth-bound, k * n >= 2^20: a decode step's, with
 * their epilogue, before both paths above) is off unless the developer knob
 * SINTER_GEMV=1 turns it on (cg_gemv_by_default): it measured slower than
 * cuBLASLt and the template on the H200 (DESIGN.md, Skinny products). */
#include "codegen/cg_gemm_tc.h"
#include "codegen/cg_gemv.h"
#include "codegen/cg_render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config); /* cg_common.c */

/* The batch description of a product: the output's batch dims and, per
 * dim, each operand's element stride (0 where it broadcasts). */
typedef struct bdesc {
	int rank;
	int64_t d[IR_MAX_RANK], sa[IR_MAX_RANK], sb[IR_MAX_RANK];
	int64_t count;
} bdesc;

/* Strides of operand batch dims s (rank sr, right-aligned against out's
 * rank) for matrices of mat elements; 0 where s has 1 and out does not. */
static void bstrides(const int64_t *s, int sr, const bdesc *bd, int64_t mat, int64_t *out)
{
	int64_t st = mat;
	for (int i = bd->rank - 1; i >= 0; i--) {
		int j = i - (bd->rank - sr);
		int64_t dim = j >= 0 ? s[j] : 1;
		out[i] = dim == 1 && bd->d[i] != 1 ? 0 : st;
		st *= dim;
	}
}

/* One stride for the whole batch when the operand's batch equals the
 * output's (mat) or is a single matrix (0); -1 when it is neither. */
static int64_t one_stride(const int64_t *s, int sr, const bdesc *bd, int64_t mat)
{
	int64_t cnt = 1;
	for (int j = 0; j < sr; j++)
		cnt *= s[j];
	if (cnt == 1)
		return 0;
	return cnt == bd->count ? mat : -1;
}

static bool lt_dtype(ir_dtype t)
{
	return t == IR_F32 || t == IR_F16 || t == IR_BF16;
}

/* ---- the SIMT kernel ---- */

/* Renders out[b] = A[b] @ op(B[b]) (+ bias) for any batch broadcast. */
static int render_kernel(const ir_graph *g, ir_ref r, cg_step *st, const bdesc *bd, int64_t m, int64_t nn,
			 int64_t k, bool trans_b, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	ir_dtype t = n->dtype;
	bool isf = ir_dtype_is_float(t), bias = n->op == IR_OP_linear && n->nin > 2;
	const char *tn = ir_dtype_name(t), *ct = cg_ctype(t);
	int64_t tm = (m + 63) / 64, tn_ = (nn + 63) / 64;
	int64_t blocks = tm * tn_ * bd->count;
	if (blocks > 0x7fffffff)
		return sn_errf(e, SN_EINPUT, "%s: the product is too large for one launch", ir_ops[n->op].name);
	char cfg[200];
	snprintf(cfg, sizeof cfg, "SIMT tiled: %lld batches of %lldx%lld @ %lldx%lld%s; 64x64x16 tiles, "
		 "256 threads, 4x4 per thread; %s accumulation", (long long)bd->count, (long long)m,
		 (long long)k, (long long)k, (long long)nn, trans_b ? " (B transposed)" : "",
		 isf ? "fp32" : "64-bit integer");
	sn_buf b = {0};
	cg_emit_spec(&b, g, r, cfg);
	sn_buf_puts(&b, "\n");
	cg_emit_dtype_helpers(&b, t);
	sn_buf_printf(&b, "\ntypedef %s acc_t;\n#define M %lldL\n#define N %lldL\n#define K %lldL\n\n",
		      isf ? "float" : "long long", (long long)m, (long long)nn, (long long)k);
	/* batch offsets: decompose the batch index over the output's dims */
	sn_buf_puts(&b, "static __device__ __forceinline__ void batch_off(long z, long *oa, long *ob)\n{\n"
			"\tlong a = 0, b = 0;\n");
	for (int i = bd->rank - 1; i >= 0; i--) {
		if (bd->d[i] == 1)
			continue;
		sn_buf_printf(&b, "\t{\n\t\tlong q = z %% %lldL;\n\t\tz /= %lldL;\n"
				  "\t\ta += q * %lldL;\n\t\tb += q * %lldL;\n\t}\n",
			      (long long)bd->d[i], (long long)bd->d[i], (long long)bd->sa[i], (long long)bd->sb[i]);
	}
	sn_buf_puts(&b, "\t*oa = a;\n\t*ob = b;\n}\n\n");
	if (!isf) {
		const char *lo = "(-9223372036854775807LL - 1)", *hi = "9223372036854775807LL";
		switch (t) {
		case IR_I32: lo = "(-2147483647LL - 1)"; hi = "2147483647LL"; break;
		case IR_I8: lo = "-128LL"; hi = "127LL"; break;
		case IR_U8: lo = "0LL"; hi = "255LL"; break;
		default: break;
		}
		/* the reference rounds through double and saturates */
		sn_buf_printf(&b, "static __device__ __forceinline__ long long sat(long long v)\n{\n"
				  "\treturn v < %s ? %s : v > %s ? %s : v;\n}\n\n", lo, lo, hi, hi);
	}
	sn_buf_printf(&b, "extern \"C\" __global__ void __launch_bounds__(256)\n"
			  "%s(const %s *__restrict__ A, const %s *__restrict__ B, ", CG_NAME, ct, ct);
	if (bias)
		sn_buf_printf(&b, "const %s *__restrict__ bias, ", ct);
	sn_buf_printf(&b, "%s *__restrict__ Y)\n{\n"
			  "\t__shared__ acc_t As[16][68], Bs[16][68];\n"
			  "\tlong bid = blockIdx.x;\n"
			  "\tlong tnb = bid %% %lldL, tmb = bid / %lldL %% %lldL, z = bid / %lldL;\n"
			  "\tlong oa, ob;\n\tbatch_off(z, &oa, &ob);\n"
			  "\tconst %s *a = A + oa;\n\tconst %s *bm = B + ob;\n"
			  "\tlong m0 = tmb * 64, n0 = tnb * 64;\n"
			  "\tint tid = threadIdx.x, tx = tid %% 16, ty = tid / 16;\n"
			  "\tacc_t acc[4][4];\n"
			  "#pragma unroll\n\tfor (int i = 0; i < 4; i++)\n"
			  "#pragma unroll\n\t\tfor (int j = 0; j < 4; j++)\n\t\t\tacc[i][j] = 0;\n"
			  "\tfor (long k0 = 0; k0 < K; k0 += 16) {\n"
			  "#pragma unroll\n\t\tfor (int i = 0; i < 4; i++) {\n"
			  "\t\t\tint e = tid + 256 * i;\n"
			  "\t\t\tint row = e / 16, kk = e %% 16;\n"
			  "\t\t\tlong gm = m0 + row, gk = k0 + kk;\n"
			  "\t\t\tAs[kk][row] = gm < M && gk < K ? (acc_t)ld_%s(a, gm * K + gk) : (acc_t)0;\n",
		      ct, (long long)tn_, (long long)tn_, (long long)tm, (long long)(tn_ * tm), ct, ct, tn);
	if (trans_b)
		sn_buf_printf(&b, "\t\t\tint col = e / 16, kb = e %% 16;\n"
				  "\t\t\tlong gn = n0 + col, gkb = k0 + kb;\n"
				  "\t\t\tBs[kb][col] = gn < N && gkb < K ? (acc_t)ld_%s(bm, gn * K + gkb) : (acc_t)0;\n",
			      tn);
	else
		sn_buf_printf(&b, "\t\t\tint col = e %% 64, kb = e / 64;\n"
				  "\t\t\tlong gn = n0 + col, gkb = k0 + kb;\n"
				  "\t\t\tBs[kb][col] = gn < N && gkb < K ? (acc_t)ld_%s(bm, gkb * N + gn) : (acc_t)0;\n",
			      tn);
	sn_buf_puts(&b, "\t\t}\n\t\t__syncthreads();\n"
			"#pragma unroll\n\t\tfor (int kk = 0; kk < 16; kk++) {\n"
			"\t\t\tacc_t av[4], bv[4];\n"
			"#pragma unroll\n\t\t\tfor (int i = 0; i < 4; i++) {\n"
			"\t\t\t\tav[i] = As[kk][ty * 4 + i];\n\t\t\t\tbv[i] = Bs[kk][tx * 4 + i];\n\t\t\t}\n"
			"#pragma unroll\n\t\t\tfor (int i = 0; i < 4; i++)\n"
			"#pragma unroll\n\t\t\t\tfor (int j = 0; j < 4; j++)\n");
	if (isf)
		sn_buf_puts(&b, "\t\t\t\t\tacc[i][j] = fmaf(av[i], bv[j], acc[i][j]);\n");
	else
		sn_buf_puts(&b, "\t\t\t\t\tacc[i][j] = (acc_t)((unsigned long long)acc[i][j] +"
				" (unsigned long long)av[i] * (unsigned long long)bv[j]);\n");
	sn_buf_puts(&b, "\t\t}\n\t\t__syncthreads();\n\t}\n"
			"#pragma unroll\n\tfor (int i = 0; i < 4; i++)\n"
			"#pragma unroll\n\t\tfor (int j = 0; j < 4; j++) {\n"
			"\t\t\tlong gm = m0 + ty * 4 + i, gn = n0 + tx * 4 + j;\n"
			"\t\t\tif (gm >= M || gn >= N)\n\t\t\t\tcontinue;\n"
			"\t\t\tacc_t v = acc[i][j];\n");
	if (bias)
		sn_buf_printf(&b, "\t\t\tv += (acc_t)ld_%s(bias, gn);\n", tn);
	sn_buf_printf(&b, "\t\t\tst_%s(Y, (z * M + gm) * N + gn, %s);\n\t\t}\n}\n", tn, isf ? "v" : "sat(v)");

	st->kind = CG_STEP_KERNEL;
	cg_kernel *kk = &st->k;
	kk->grid[0] = (unsigned)(blocks > 0 ? blocks : 1);
	kk->grid[1] = kk->grid[2] = 1;
	kk->block[0] = 256;
	kk->block[1] = kk->block[2] = 1;
	kk->smem = 0;
	kk->nbufs = 0;
	for (uint32_t i = 0; i < n->nin; i++)
		kk->bufs[kk->nbufs++] = n->in[i];
	kk->bufs[kk->nbufs++] = r;
	return cg_finish(kk, ir_ops[n->op].name, &b, e);
}

static bool tc_fits(const cg_gemm_tc_spec *sp, const cg_target *tg)
{
	char why[160];
	cg_target t0 = {.sm = 80};
	return cg_gemm_tc_fits(sp, tg ? tg : &t0, tg && tg->tf32, why, sizeof why);
}

/* Whether the template renders this product: an epilogue, fp8, or a config. */
static bool use_tc(const cg_gemm_tc_spec *sp, const cg_target *tg, const cg_step *st, const cg_config *want)
{
	return tc_fits(sp, tg) && (st->epi || want || sp->t == IR_F8E4M3);
}

static int render_tc(const ir_graph *g, ir_ref r, const cg_gemm_tc_spec *sp, const cg_target *tg,
		     const cg_config *want, cg_step *st, sn_err *e)
{
	cg_target t0 = {.sm = 80};
	return cg_gemm_tc_render(g, r, sp, tg ? tg : &t0, want, st, e);
}

/* Whether the skinny-product family (cg_gemv.c) renders this product:
 * asked for by its variant; with no config only under SINTER_GEMV=1 and
 * where it fits and the product is large enough to be bandwidth-bound
 * (1 <= m <= 16, k * n >= 2^20, n >= 128). */
static bool use_gemv(const cg_gemv_spec *sp, const cg_config *want)
{
	char why[160];
	if (want)
		return want->variant == CG_GEMV_VARIANT;
	return cg_gemv_by_default() && cg_gemv_fits(sp, true, why, sizeof why);
}

static int render_linear(const ir_graph *g, ir_ref r, const cg_target *tg, const cg_config *want, cg_step *st,
			 sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_node *x = &g->nodes[n->in[0]], *w = &g->nodes[n->in[1]];
	if (x->shape.rank < 1 || w->shape.rank != 2)
		return sn_errf(e, SN_EINPUT, "linear: expects x [..., in] and w [out, in]");
	int64_t k = x->shape.d[x->shape.rank - 1], nn = w->shape.d[0];
	int64_t m = 1;
	for (int i = 0; i < x->shape.rank - 1; i++)
		m *= x->shape.d[i];
	cg_gemm_tc_spec sp = {.t = n->dtype, .batch = 1, .m = m, .n = nn, .k = k, .trans_b = true, .bias = n->nin > 2};
	cg_gemv_spec gv = {.t = n->dtype, .m = m, .n = nn, .k = k, .trans_b = true, .bias = n->nin > 2};
	if (use_gemv(&gv, want))
		return cg_gemv_render(g, r, &gv, tg, want, st, e);
	if (use_tc(&sp, tg, st, want))
		return render_tc(g, r, &sp, tg, want, st, e);
	if (want || st->epi)
		return sn_errf(e, SN_EUSAGE, "linear: only the default config is built for this product (no tensor-core "
			       "template for it here)");
	if (!lt_dtype(n->dtype)) {
		bdesc bd = {.rank = 0, .count = 1};
		return render_kernel(g, r, st, &bd, m, nn, k, true, e);
	}
	st->kind = CG_STEP_GEMM;
	st->g = (cg_gemm){
		.a = n->in[0], .b = n->in[1], .bias = n->nin > 2 ? n->in[2] : IR_NONE, .out = r, .c = IR_NONE,
		.batch = 1, .m = m, .n = nn, .k = k,
		.stride_a = m * k, .stride_b = 0, .stride_c = m * nn,
		.trans_b = true, .dtype = n->dtype, .act = CG_ACT_NONE,
		.tf32 = tg && tg->tf32 && n->dtype == IR_F32,
	};
	return SN_OK;
}

static int render_matmul(const ir_graph *g, ir_ref r, const cg_target *tg, const cg_config *want, cg_step *st,
			 sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_node *a = &g->nodes[n->in[0]], *bn = &g->nodes[n->in[1]];
	int ra = a->shape.rank, rb = bn->shape.rank;
	if (ra < 1 || rb < 1)
		return sn_errf(e, SN_EINPUT, "matmul: operands must have rank 1 or more");
	int64_t m = ra == 1 ? 1 : a->shape.d[ra - 2], k = a->shape.d[ra - 1];
	int64_t nn = rb == 1 ? 1 : bn->shape.d[rb - 1];
	int sra = ra > 2 ? ra - 2 : 0, srb = rb > 2 ? rb - 2 : 0;
	bdesc bd = {.rank = n->shape.rank - (ra > 1) - (rb > 1), .count = 1};
	if (bd.rank < 0 || bd.rank < sra || bd.rank < srb)
		return sn_errf(e, SN_EINTERNAL, "matmul: output rank disagrees with the operands");
	for (int i = 0; i < bd.rank; i++) {
		bd.d[i] = n->shape.d[i];
		bd.count *= bd.d[i];
	}
	bstrides(a->shape.d, sra, &bd, m * k, bd.sa);
	bstrides(bn->shape.d, srb, &bd, k * nn, bd.sb);
	int64_t sa = one_stride(a->shape.d, sra, &bd, m * k), sb = one_stride(bn->shape.d, srb, &bd, k * nn);
	if (sa >= 0 && sb >= 0) {
		cg_gemm_tc_spec sp = {.t = n->dtype, .batch = bd.count, .m = m, .n = nn, .k = k, .sa = sa, .sb = sb};
		if (bd.count > 1 && sb == 0 && sa != 0) { /* one shared B: fold the batch into M */
			sp.m = bd.count * m;
			sp.batch = 1;
			sp.sa = 0;
		}
		cg_gemv_spec gv = {.t = n->dtype, .m = sp.m, .n = nn, .k = k};
		if (sp.batch == 1 && use_gemv(&gv, want))
			return cg_gemv_render(g, r, &gv, tg, want, st, e);
		if (use_tc(&sp, tg, st, want))
			return render_tc(g, r, &sp, tg, want, st, e);
	}
	if (want || st->epi)
		return sn_errf(e, SN_EUSAGE, "matmul: only the default config is built for this product (no tensor-core "
			       "template for it here)");
	if (!lt_dtype(n->dtype) || sa < 0 || sb < 0)
		return render_kernel(g, r, st, &bd, m, nn, k, false, e);
	st->kind = CG_STEP_GEMM;
	st->g = (cg_gemm){
		.a = n->in[0], .b = n->in[1], .bias = IR_NONE, .out = r, .c = IR_NONE,
		.batch = bd.count, .m = m, .n = nn, .k = k,
		.stride_a = sa, .stride_b = sb, .stride_c = m * nn,
		.trans_b = false, .dtype = n->dtype, .act = CG_ACT_NONE,
		.tf32 = tg && tg->tf32 && n->dtype == IR_F32,
	};
	if (bd.count > 1 && sb == 0 && sa != 0) { /* one shared B: fold the batch into M */
		st->g.m = bd.count * m;
		st->g.batch = 1;
		st->g.stride_a = st->g.m * k;
		st->g.stride_c = st->g.m * nn;
	}
	return SN_OK;
}

int cg_render_gemm(const ir_graph *g, ir_ref r, const cg_target *tg, const cg_config *want, cg_step *st, sn_err *e)
{
	switch (g->nodes[r].op) {
	case IR_OP_linear: return render_linear(g, r, tg, want, st, e);
	case IR_OP_matmul: return render_matmul(g, r, tg, want, st, e);
	default: return sn_errf(e, SN_EINTERNAL, "%s: not a matrix product", ir_ops[g->nodes[r].op].name);
	}
}

bool cg_gemm_takes_epilogue(const ir_graph *g, ir_ref r, const cg_target *tg)
{
	const ir_node *n = &g->nodes[r];
	if ((n->op != IR_OP_matmul && n->op != IR_OP_linear) || !ir_dtype_is_float(n->dtype))
		return false;
	/* rendered as if it had one: a template kernel it is, or not */
	cg_epilogue dummy = {0};
	cg_step st;
	memset(&st, 0, sizeof st);
	st.node = r;
	st.epi = &dummy;
	dummy.fn = dummy.params = dummy.args = (char *)"";
	dummy.out = r;
	dummy.dtype = n->dtype;
	sn_err e = {0};
	bool ok = cg_render_gemm(g, r, tg, NULL, &st, &e) == SN_OK && st.kind == CG_STEP_KERNEL;
	free(st.k.src);
	return ok;
}

int cg_render_gemm_as_tc(const ir_graph *g, ir_ref r, const cg_gemm *gg, const cg_target *tg, const cg_config *want,
			 cg_step *st, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	if ((n->op != IR_OP_matmul && n->op != IR_OP_linear && n->op != IR_OP_conv2d) || n->nin < 2 ||
	    gg->a != n->in[0] || gg->b != n->in[1] || gg->stride_c != gg->m * gg->n)
		return sn_errf(e, SN_EUSAGE, "%s: the GEMM template takes this product's operands in another order",
			       ir_ops[n->op].name);
	/* linear's and the conv's own bias is the template's; a bias that
	 * fusion added is part of the epilogue */
	cg_gemm_tc_spec sp = {.t = gg->dtype, .batch = gg->batch, .m = gg->m, .n = gg->n, .k = gg->k,
			      .sa = gg->batch > 1 ? gg->stride_a : 0, .sb = gg->batch > 1 ? gg->stride_b : 0,
			      .trans_b = gg->trans_b, .bias = n->op != IR_OP_matmul && n->nin > 2};
	char why[160];
	if (gg->dtype == IR_F32 && !gg->tf32)
		return sn_errf(e, SN_EUSAGE, "%s: f32 runs on the GEMM template as TF32 only", ir_ops[n->op].name);
	if (!cg_gemm_tc_fits(&sp, tg, gg->tf32, why, sizeof why))
		return sn_errf(e, SN_EUSAGE, "%s: the GEMM template cannot run this product: %s", ir_ops[n->op].name, why);
	return cg_gemm_tc_render(g, r, &sp, tg, want, st, e);
}
