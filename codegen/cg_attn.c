/* cg_attn.c: scaled_dot_product_attention(q, k, v, mask?) as one kernel.
 *
 *   out[b, i, :] = softmax_j(q[b, i, :] . k[b, j, :] * scale + mask[b, i, j]) @ v[b, j, :]
 *
 * A block of 8 warps takes 8 consecutive query rows of one batch index, a
 * warp per row. Keys and values stream through shared memory in chunks of
 * KC rows (converted to fp32 once per block); each lane scores one key of
 * the chunk, and the warp keeps an online softmax (running max m, running
 * sum l, the weighted sum of v rows spread over the lanes), all in fp32.
 * So any sequence length works with fixed shared memory. A bool mask keeps
 * the true positions, a float mask is added; causal hides j > i (and skips
 * whole chunks past the block's last row). A row whose scores are all -inf
 * ends with l = 0 and gives NaN, as PyTorch does. Batch dims broadcast. */
#include "codegen/cg_render.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config); /* cg_common.c */

#define ROWS 8 /* query rows (warps) per block */

/* Element strides of operand shape s (whose last two dims are a matrix)
 * against the output batch dims bd[0..br): 0 where s broadcasts. */
static void batch_strides(const ir_shape *s, const int64_t *bd, int br, int64_t *out)
{
	int sr = s->rank - 2;
	int64_t st = s->d[s->rank - 2] * s->d[s->rank - 1];
	for (int i = br - 1; i >= 0; i--) {
		int j = i - (br - sr);
		int64_t d = j >= 0 ? s->d[j] : 1;
		out[i] = d == 1 && bd[i] != 1 ? 0 : st;
		st *= d;
	}
}

int cg_render_attention(const ir_graph *g, ir_ref r, const cg_target *tg, const cg_config *want, cg_step *st, sn_err *e)
{
	if (want)
		return sn_errf(e, SN_EUSAGE, "only the default config is built for this kernel family yet");
	const ir_node *n = &g->nodes[r];
	const ir_node *q = &g->nodes[n->in[0]], *k = &g->nodes[n->in[1]], *v = &g->nodes[n->in[2]];
	const ir_node *mk = n->nin > 3 ? &g->nodes[n->in[3]] : NULL;
	(void)tg;
	if (q->shape.rank < 2 || k->shape.rank < 2 || v->shape.rank < 2 || n->shape.rank < 2)
		return sn_errf(e, SN_EINPUT, "scaled_dot_product_attention: q, k and v need rank 2 or more");
	int64_t L = q->shape.d[q->shape.rank - 2], E = q->shape.d[q->shape.rank - 1];
	int64_t S = k->shape.d[k->shape.rank - 2], Ev = v->shape.d[v->shape.rank - 1];
	int kc = E <= 128 && Ev <= 128 ? 32 : 16;
	if (E > 256 || Ev > 256)
		return sn_errf(e, SN_EINPUT, "scaled_dot_product_attention: head dims %lld and %lld exceed 256, "
			       "the CUDA kernel's limit", (long long)E, (long long)Ev);
	int br = n->shape.rank - 2;
	int64_t bd[IR_MAX_RANK] = {0}, sq[IR_MAX_RANK], sk[IR_MAX_RANK], sv[IR_MAX_RANK], nb = 1;
	for (int i = 0; i < br; i++) {
		bd[i] = n->shape.d[i];
		nb *= bd[i];
	}
	batch_strides(&q->shape, bd, br, sq);
	batch_strides(&k->shape, bd, br, sk);
	batch_strides(&v->shape, bd, br, sv);
	/* the mask against (batch..., L, S): per-dim strides, 0 where it broadcasts */
	int64_t sm[IR_MAX_RANK + 2] = {0};
	if (mk) {
		int64_t full[IR_MAX_RANK + 2];
		for (int i = 0; i < br; i++)
			full[i] = bd[i];
		full[br] = L;
		full[br + 1] = S;
		int fr = br + 2, mr = mk->shape.rank;
		if (mr > fr)
			return sn_errf(e, SN_EINPUT, "scaled_dot_product_attention: mask has too many dims");
		int64_t stv = 1;
		for (int i = fr - 1; i >= 0; i--) {
			int j = i - (fr - mr);
			int64_t d = j >= 0 ? mk->shape.d[j] : 1;
			sm[i] = d == 1 && full[i] != 1 ? 0 : stv;
			stv *= d;
		}
	}
	int64_t tiles = (L + ROWS - 1) / ROWS, blocks = tiles * nb;
	if (blocks > 0x7fffffff)
		return sn_errf(e, SN_EINPUT, "scaled_dot_product_attention: too many rows for one launch");
	double scale = n->attrs->scale != 0 ? n->attrs->scale : 1 / sqrt((double)E);
	char scl[40];
	sn_fmt_float(scl, (float)scale);
	if (!strchr(scl, '.') && !strchr(scl, 'e'))
		strcat(scl, ".0");
	int evl = (int)((Ev + 31) / 32); /* output columns per lane */

	ir_dtype t = q->dtype;
	const char *tn = ir_dtype_name(t), *ct = cg_ctype(t);
	char cfg[200];
	snprintf(cfg, sizeof cfg, "%lld batches, L=%lld S=%lld E=%lld Ev=%lld; %d rows per block (a warp each), "
		 "key chunks of %d in shared memory; online softmax in fp32", (long long)nb, (long long)L,
		 (long long)S, (long long)E, (long long)Ev, ROWS, kc);
	sn_buf b = {0};
	cg_emit_spec(&b, g, r, cfg);
	sn_buf_puts(&b, "\n");
	cg_emit_dtype_helpers(&b, t);
	if (mk)
		cg_emit_dtype_helpers(&b, mk->dtype);
	sn_buf_printf(&b, "\n#define L %lldL\n#define S %lldL\n#define E %lld\n#define EV %lld\n#define KC %d\n"
			  "#define EVL %d\n#define NEG_INF (-__int_as_float(0x7f800000))\n\n",
		      (long long)L, (long long)S, (long long)E, (long long)Ev, kc, evl);
	sn_buf_puts(&b, "struct offs {\n\tlong q, k, v, m;\n};\n\n"
			"static __device__ __forceinline__ offs batch_offs(long z)\n{\n"
			"\toffs o = {0, 0, 0, 0};\n");
	for (int i = br - 1; i >= 0; i--) {
		if (bd[i] == 1)
			continue;
		sn_buf_printf(&b, "\t{\n\t\tlong c = z %% %lldL;\n\t\tz /= %lldL;\n"
				  "\t\to.q += c * %lldL;\n\t\to.k += c * %lldL;\n\t\to.v += c * %lldL;\n"
				  "\t\to.m += c * %lldL;\n\t}\n",
			      (long long)bd[i], (long long)bd[i], (long long)sq[i], (long long)sk[i],
			      (long long)sv[i], (long long)sm[i]);
	}
	sn_buf_puts(&b, "\treturn o;\n}\n\n"
			"static __device__ __forceinline__ float warp_max(float a)\n{\n"
			"\tfor (int s = 16; s > 0; s >>= 1) {\n"
			"\t\tfloat v = __shfl_xor_sync(0xffffffffu, a, s);\n"
			"\t\ta = (v > a || v != v) ? v : a;\n\t}\n\treturn a;\n}\n\n"
			"static __device__ __forceinline__ float warp_sum(float a)\n{\n"
			"\tfor (int s = 16; s > 0; s >>= 1)\n"
			"\t\ta += __shfl_xor_sync(0xffffffffu, a, s);\n\treturn a;\n}\n\n");
	sn_buf_printf(&b, "extern \"C\" __global__ void __launch_bounds__(%d)\n"
			  "%s(const %s *__restrict__ qp, const %s *__restrict__ kp, const %s *__restrict__ vp, ",
		      ROWS * 32, CG_NAME, ct, ct, ct);
	if (mk)
		sn_buf_printf(&b, "const %s *__restrict__ mp, ", cg_ctype(mk->dtype));
	sn_buf_printf(&b, "%s *__restrict__ out)\n{\n"
			  "\t__shared__ float Qs[%d][E], Ks[KC][E + 1], Vs[KC][EV];\n"
			  "\tint tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;\n"
			  "\tlong z = blockIdx.x / %lldL, i0 = blockIdx.x %% %lldL * %d, i = i0 + warp;\n"
			  "\tbool live = i < L;\n"
			  "\toffs o = batch_offs(z);\n"
			  "\tfor (int c = lane; c < E; c += 32)\n"
			  "\t\tQs[warp][c] = live ? ld_%s(qp, o.q + i * E + c) : 0.0f;\n"
			  "\tfloat m = NEG_INF, l = 0.0f, acc[EVL];\n"
			  "#pragma unroll\n\tfor (int u = 0; u < EVL; u++)\n\t\tacc[u] = 0.0f;\n",
		      ct, ROWS, (long long)tiles, (long long)tiles, ROWS, tn);
	if (n->attrs->causal)
		sn_buf_printf(&b, "\tlong send = min(S, min(L, i0 + %d)); /* causal: later keys are hidden from every row */\n",
			      ROWS);
	else
		sn_buf_puts(&b, "\tlong send = S;\n");
	sn_buf_printf(&b, "\tfor (long j0 = 0; j0 < send; j0 += KC) {\n"
			  "\t\t__syncthreads(); /* the previous chunk is consumed (and Qs written) */\n"
			  "\t\tfor (int x = tid; x < KC * E; x += %d) {\n"
			  "\t\t\tint jl = x / E, c = x %% E;\n"
			  "\t\t\tKs[jl][c] = j0 + jl < S ? ld_%s(kp, o.k + (j0 + jl) * E + c) : 0.0f;\n\t\t}\n"
			  "\t\tfor (int x = tid; x < KC * EV; x += %d) {\n"
			  "\t\t\tint jl = x / EV, c = x %% EV;\n"
			  "\t\t\tVs[jl][c] = j0 + jl < S ? ld_%s(vp, o.v + (j0 + jl) * EV + c) : 0.0f;\n\t\t}\n"
			  "\t\t__syncthreads();\n"
			  "\t\tlong j = j0 + lane;\n"
			  "\t\tfloat sc = NEG_INF;\n"
			  "\t\tif (lane < KC && j < S) {\n"
			  "\t\t\tfloat d = 0.0f;\n"
			  "#pragma unroll 8\n\t\t\tfor (int c = 0; c < E; c++)\n"
			  "\t\t\t\td = fmaf(Qs[warp][c], Ks[lane][c], d);\n"
			  "\t\t\tsc = d * %sf;\n",
		      ROWS * 32, tn, ROWS * 32, tn, scl);
	if (mk && mk->dtype == IR_BOOL)
		sn_buf_printf(&b, "\t\t\tif (live && !mp[o.m + i * %lldL + j * %lldL])\n\t\t\t\tsc = NEG_INF;\n",
			      (long long)sm[br], (long long)sm[br + 1]);
	else if (mk)
		sn_buf_printf(&b, "\t\t\tif (live)\n\t\t\t\tsc += ld_%s(mp, o.m + i * %lldL + j * %lldL);\n",
			      ir_dtype_name(mk->dtype), (long long)sm[br], (long long)sm[br + 1]);
	if (n->attrs->causal)
		sn_buf_puts(&b, "\t\t\tif (j > i)\n\t\t\t\tsc = NEG_INF;\n");
	sn_buf_puts(&b, "\t\t}\n"
			"\t\tfloat mn = warp_max(sc);\n"
			"\t\tmn = (m > mn || m != m) ? m : mn;\n"
			"\t\t/* nothing seen yet but -inf: keep everything at zero */\n"
			"\t\tfloat p = mn == NEG_INF ? 0.0f : expf(sc - mn);\n"
			"\t\tfloat corr = mn == NEG_INF ? 1.0f : expf(m - mn);\n"
			"\t\tl = l * corr + warp_sum(p);\n"
			"\t\tm = mn;\n"
			"#pragma unroll\n\t\tfor (int u = 0; u < EVL; u++)\n\t\t\tacc[u] *= corr;\n"
			"\t\tfor (int jl = 0; jl < KC; jl++) {\n"
			"\t\t\tfloat pj = __shfl_sync(0xffffffffu, p, jl);\n"
			"#pragma unroll\n\t\t\tfor (int u = 0; u < EVL; u++) {\n"
			"\t\t\t\tint c = lane + 32 * u;\n"
			"\t\t\t\tif (c < EV)\n\t\t\t\t\tacc[u] = fmaf(pj, Vs[jl][c], acc[u]);\n"
			"\t\t\t}\n\t\t}\n\t}\n"
			"\tif (!live)\n\t\treturn;\n"
			"\tfloat inv = 1.0f / l; /* l = 0: a fully masked row, NaN as PyTorch */\n"
			"#pragma unroll\n\tfor (int u = 0; u < EVL; u++) {\n"
			"\t\tint c = lane + 32 * u;\n"
			"\t\tif (c < EV)\n");
	sn_buf_printf(&b, "\t\t\tst_%s(out, (z * L + i) * EV + c, l == 0.0f ? __int_as_float(0x7fc00000) : acc[u] * inv);\n\t}\n}\n",
		      ir_dtype_name(n->dtype));

	st->kind = CG_STEP_KERNEL;
	cg_kernel *kk = &st->k;
	kk->grid[0] = (unsigned)(blocks > 0 ? blocks : 1);
	kk->grid[1] = kk->grid[2] = 1;
	kk->block[0] = ROWS * 32;
	kk->block[1] = kk->block[2] = 1;
	kk->smem = 0;
	kk->nbufs = 0;
	for (uint32_t i = 0; i < n->nin; i++)
		kk->bufs[kk->nbufs++] = n->in[i];
	kk->bufs[kk->nbufs++] = r;
	return cg_finish(kk, "attention", &b, e);
}
