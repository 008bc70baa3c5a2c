/* cg_attn.c: scaled_dot_product_attention(q, k, v, mask?) as one kernel.
 *
 *   out[b, i, :] = softmax_j(q[b, i, :] . k[b, j, :] * scale + mask[b, i, j]) @ v[b, j, :]
 *
 * f16/bf16 with head dims 32 to 256 in steps of 16 (not 240) on sm_80+
 * go to the tensor-core flash kernel (cg_flash.c); everything else to the
 * SIMT kernel here, the fallback. Both address operands through cg_attn_spec (cg_attn.h): batch
 * broadcasting, GQA (k/v heads shared by Hq / Hkv query heads) and
 * fusion's layouts (an operand or the output strided inside another
 * value's buffer).
 *
 * SIMT kernel: a block of ROWS warps (default 8, config `rows`) takes ROWS
 * consecutive query rows of one batch index, a
 * warp per row. Keys and values stream through shared memory in chunks of
 * KC rows (converted to fp32 once per block); each lane scores one key of
 * the chunk, and the warp keeps an online softmax (running max m, running
 * sum l, the weighted sum of v rows spread over the lanes), all in fp32.
 * So any sequence length works with fixed shared memory. A bool mask keeps
 * the true positions, a float mask is added; causal hides j > i (and skips
 * whole chunks past the block's last row). A row whose scores are all -inf
 * ends with l = 0 and gives NaN, as PyTorch does. Batch dims broadcast. */
#include "codegen/cg_attn.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config); /* cg_common.c */

#define ROWS 8 /* default query rows (warps) per block */

/* Where operand x (layout lay, or its own contiguous buffer) is against the
 * full index space full[0..fr): numpy broadcasting from the right, and GQA
 * (x's dim a divisor of full's) on the dim just before the matrix. */
static int addr_of(const ir_graph *g, ir_ref x, const cg_layout *lay, const int64_t *full, int fr, cg_attn_addr *a,
		   sn_err *e)
{
	const ir_shape *s = &g->nodes[x].shape;
	int xr = s->rank;
	if (xr > fr)
		return sn_errf(e, SN_EINPUT, "scaled_dot_product_attention: an operand has too many dims");
	int64_t own[IR_MAX_RANK];
	if (lay && lay->set) {
		a->buf = lay->root;
		a->off = lay->offset;
		memcpy(own, lay->strides, sizeof own);
	} else {
		a->buf = x;
		a->off = 0;
		int64_t st = 1;
		for (int d = xr - 1; d >= 0; d--) {
			own[d] = st;
			st *= s->d[d];
		}
	}
	for (int i = 0; i < fr; i++) {
		int j = i - (fr - xr);
		int64_t d = j >= 0 ? s->d[j] : 1;
		a->st[i] = j < 0 || (d == 1 && full[i] != 1) ? 0 : own[j];
		a->div[i] = 1;
		if (j >= 0 && d != full[i] && d != 1) {
			if (d <= 0 || full[i] % d || i != fr - 3)
				return sn_errf(e, SN_EINPUT, "scaled_dot_product_attention: operand dim %d (%lld) "
					       "does not broadcast to %lld", j, (long long)d, (long long)full[i]);
			a->div[i] = full[i] / d; /* GQA */
		}
	}
	return SN_OK;
}

int cg_attn_spec_of(const ir_graph *g, ir_ref r, const cg_step *st, cg_attn_spec *sp, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_node *q = &g->nodes[n->in[0]], *k = &g->nodes[n->in[1]], *v = &g->nodes[n->in[2]];
	const ir_node *mk = n->nin > 3 ? &g->nodes[n->in[3]] : NULL;
	memset(sp, 0, sizeof *sp);
	if (q->shape.rank < 2 || k->shape.rank < 2 || v->shape.rank < 2 || n->shape.rank < 2)
		return sn_errf(e, SN_EINPUT, "scaled_dot_product_attention: q, k and v need rank 2 or more");
	sp->L = q->shape.d[q->shape.rank - 2];
	sp->E = q->shape.d[q->shape.rank - 1];
	sp->S = k->shape.d[k->shape.rank - 2];
	sp->Ev = v->shape.d[v->shape.rank - 1];
	sp->br = n->shape.rank - 2;
	sp->nb = 1;
	for (int i = 0; i < sp->br; i++) {
		sp->bd[i] = n->shape.d[i];
		sp->nb *= sp->bd[i];
	}
	sp->causal = n->attrs->causal;
	sp->has_mask = mk != NULL;
	sp->t = q->dtype;
	sp->mt = mk ? mk->dtype : q->dtype;
	sp->scale = n->attrs->scale != 0 ? n->attrs->scale : 1 / sqrt((double)sp->E);
	for (int i = 0; i < 4; i++)
		sp->laid |= st->lay[i].set;
	sp->laid |= st->lay_out.set;
	int64_t full[IR_MAX_RANK + 2];
	memcpy(full, sp->bd, sizeof sp->bd);
	int fr = sp->br + 2;
	full[sp->br] = sp->L, full[sp->br + 1] = sp->E;
	if (addr_of(g, n->in[0], &st->lay[0], full, fr, &sp->q, e))
		return e->code;
	full[sp->br] = sp->S;
	if (addr_of(g, n->in[1], &st->lay[1], full, fr, &sp->k, e))
		return e->code;
	full[sp->br + 1] = sp->Ev;
	if (addr_of(g, n->in[2], &st->lay[2], full, fr, &sp->v, e))
		return e->code;
	full[sp->br] = sp->L;
	if (addr_of(g, r, &st->lay_out, full, fr, &sp->o, e))
		return e->code;
	full[sp->br + 1] = sp->S;
	if (mk && addr_of(g, n->in[3], &st->lay[3], full, fr, &sp->m, e))
		return e->code;
	if (!mk)
		sp->m.buf = IR_NONE;
	return SN_OK;
}

bool cg_attn_out_pairs(const cg_attn_spec *sp)
{
	const cg_attn_addr *o = &sp->o;
	bool pair = o->st[sp->br + 1] == 1 && o->off % 2 == 0;
	for (int i = 0; i <= sp->br; i++)
		pair = pair && o->st[i] % 2 == 0;
	return pair;
}

void cg_attn_emit_mask_load(sn_buf *b, const cg_attn_spec *sp)
{
	if (sp->has_mask && sp->mt != IR_BOOL) {
		cg_emit_dtype_helpers(b, sp->mt);
		sn_buf_printf(b, "#define ld_mask ld_%s\n", ir_dtype_name(sp->mt));
	}
}

void cg_attn_emit_rows(sn_buf *b, const cg_attn_spec *sp)
{
	const cg_attn_addr *o = &sp->o;
	int br = sp->br;
	sn_buf_printf(b, "#define Q_RS %lldL\n#define K_RS %lldL\n#define V_RS %lldL\n#define O_RS %lldL\n"
			 "#define O_CS %lldL\n#define M_RS %lldL\n#define M_CS %lldL\n\n",
		      (long long)sp->q.st[br], (long long)sp->k.st[br], (long long)sp->v.st[br],
		      (long long)o->st[br], (long long)o->st[br + 1], (long long)sp->m.st[br],
		      (long long)sp->m.st[br + 1]);
	cg_attn_emit_offs(b, sp);
}

void cg_attn_emit_offs(sn_buf *b, const cg_attn_spec *sp)
{
	const cg_attn_addr *as[] = {&sp->q, &sp->k, &sp->v, &sp->m, &sp->o};
	const char *nm[] = {"q", "k", "v", "m", "o"};
	sn_buf_printf(b, "struct offs {\n\tlong q, k, v, m, o;\n};\n\n"
			 "static __device__ __forceinline__ offs batch_offs(long z)\n{\n"
			 "\toffs o = {%lldL, %lldL, %lldL, %lldL, %lldL};\n",
		      (long long)sp->q.off, (long long)sp->k.off, (long long)sp->v.off, (long long)sp->m.off,
		      (long long)sp->o.off);
	for (int i = sp->br - 1; i >= 0; i--) {
		if (sp->bd[i] == 1)
			continue;
		sn_buf_printf(b, "\t{\n\t\tlong c = z %% %lldL;\n\t\tz /= %lldL;\n", (long long)sp->bd[i],
			      (long long)sp->bd[i]);
		for (int a = 0; a < 5; a++) {
			if (as[a]->st[i] == 0)
				continue;
			if (as[a]->div[i] > 1)
				sn_buf_printf(b, "\t\to.%s += c / %lldL * %lldL;\n", nm[a], (long long)as[a]->div[i],
					      (long long)as[a]->st[i]);
			else
				sn_buf_printf(b, "\t\to.%s += c * %lldL;\n", nm[a], (long long)as[a]->st[i]);
		}
		sn_buf_puts(b, "\t}\n");
	}
	sn_buf_puts(b, "\treturn o;\n}\n\n");
}

void cg_attn_float(char *out, double x)
{
	sn_fmt_float(out, (float)x);
	if (!strchr(out, '.') && !strchr(out, 'e') && !strchr(out, 'n'))
		strcat(out, ".0");
	strcat(out, "f");
}

void cg_attn_bufs(cg_kernel *k, const cg_attn_spec *sp)
{
	k->nbufs = 0;
	k->bufs[k->nbufs++] = sp->q.buf;
	k->bufs[k->nbufs++] = sp->k.buf;
	k->bufs[k->nbufs++] = sp->v.buf;
	if (sp->has_mask)
		k->bufs[k->nbufs++] = sp->m.buf;
	k->bufs[k->nbufs++] = sp->o.buf;
}

/* #define NAME_RS / NAME_CS: an operand's row and column strides. */
static void emit_rc(sn_buf *b, const char *name, const cg_attn_addr *a, int br)
{
	sn_buf_printf(b, "#define %s_RS %lldL\n#define %s_CS %lldL\n", name, (long long)a->st[br], name,
		      (long long)a->st[br + 1]);
}

/* The SIMT kernel. want: rows (warps per block, 1..32) and block
 * (= rows * 32); other fields refused. */
static int render_simt(const ir_graph *g, ir_ref r, const cg_attn_spec *sp, const cg_config *want, cg_step *st,
		       sn_err *e)
{
	int rows = ROWS;
	if (want) {
		if (want->tile_m || want->tile_n || want->tile_k || want->warps || want->stages || want->vec ||
		    want->split_k)
			return sn_errf(e, SN_EUSAGE, "attention (simt): only rows and block are configurable "
				       "(tile_m, tile_n, warps and stages are the flash kernel's, variant=1)");
		if (want->rows && (want->rows < 1 || want->rows > 32))
			return sn_errf(e, SN_EUSAGE, "attention (simt): rows=%d is not in [1, 32]", (int)want->rows);
		if (want->rows)
			rows = want->rows;
		if (want->block && want->block != rows * 32)
			return sn_errf(e, SN_EUSAGE, "attention (simt): block=%d must be rows * 32 = %d",
				       (int)want->block, rows * 32);
	}
	const ir_node *n = &g->nodes[r];
	int64_t L = sp->L, E = sp->E, S = sp->S, Ev = sp->Ev;
	int kc = E <= 128 && Ev <= 128 ? 32 : 16;
	if (E > 256 || Ev > 256)
		return sn_errf(e, SN_EINPUT, "scaled_dot_product_attention: head dims %lld and %lld exceed 256, "
			       "the CUDA kernel's limit", (long long)E, (long long)Ev);
	int br = sp->br;
	int64_t tiles = (L + rows - 1) / rows, blocks = tiles * sp->nb;
	if (blocks > 0x7fffffff)
		return sn_errf(e, SN_EINPUT, "scaled_dot_product_attention: too many rows for one launch");
	char scl[40];
	cg_attn_float(scl, sp->scale);
	int evl = (int)((Ev + 31) / 32); /* output columns per lane */

	ir_dtype t = sp->t;
	const char *tn = ir_dtype_name(t), *ct = cg_ctype(t);
	char cfg[240];
	snprintf(cfg, sizeof cfg, "%lld batches, L=%lld S=%lld E=%lld Ev=%lld; %d rows per block (a warp each), "
		 "key chunks of %d in shared memory; online softmax in fp32%s", (long long)sp->nb, (long long)L,
		 (long long)S, (long long)E, (long long)Ev, rows, kc, sp->laid ? "; strided operands" : "");
	sn_buf b = {0};
	cg_emit_spec_st(&b, g, r, cfg, st);
	sn_buf_puts(&b, "\n");
	cg_emit_dtype_helpers(&b, t);
	if (sp->has_mask)
		cg_emit_dtype_helpers(&b, sp->mt);
	sn_buf_printf(&b, "\n#define L %lldL\n#define S %lldL\n#define E %lld\n#define EV %lld\n#define KC %d\n"
			  "#define EVL %d\n#define ROWS %d\n#define NEG_INF (-__int_as_float(0x7f800000))\n",
		      (long long)L, (long long)S, (long long)E, (long long)Ev, kc, evl, rows);
	emit_rc(&b, "Q", &sp->q, br);
	emit_rc(&b, "K", &sp->k, br);
	emit_rc(&b, "V", &sp->v, br);
	emit_rc(&b, "O", &sp->o, br);
	if (sp->has_mask)
		emit_rc(&b, "M", &sp->m, br);
	sn_buf_puts(&b, "\n");
	cg_attn_emit_offs(&b, sp);
	sn_buf_puts(&b, "static __device__ __forceinline__ float warp_max(float a)\n{\n"
			"\tfor (int s = 16; s > 0; s >>= 1) {\n"
			"\t\tfloat v = __shfl_xor_sync(0xffffffffu, a, s);\n"
			"\t\ta = (v > a || v != v) ? v : a;\n\t}\n\treturn a;\n}\n\n"
			"static __device__ __forceinline__ float warp_sum(float a)\n{\n"
			"\tfor (int s = 16; s > 0; s >>= 1)\n"
			"\t\ta += __shfl_xor_sync(0xffffffffu, a, s);\n\treturn a;\n}\n\n");
	sn_buf_printf(&b, "extern \"C\" __global__ void __launch_bounds__(%d, 1)\n"
			  "%s(const %s *__restrict__ qp, const %s *__restrict__ kp, const %s *__restrict__ vp, ",
		      rows * 32, CG_NAME, ct, ct, ct);
	if (sp->has_mask)
		sn_buf_printf(&b, "const %s *__restrict__ mp, ", cg_ctype(sp->mt));
	sn_buf_printf(&b, "%s *__restrict__ out)\n{\n"
			  "\t__shared__ float Qs[ROWS][E], Ks[KC][E + 1], Vs[KC][EV];\n"
			  "\tint tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;\n"
			  "\tlong z = blockIdx.x / %lldL, i0 = blockIdx.x %% %lldL * ROWS, i = i0 + warp;\n"
			  "\tbool live = i < L;\n"
			  "\toffs o = batch_offs(z);\n"
			  "\tfor (int c = lane; c < E; c += 32)\n"
			  "\t\tQs[warp][c] = live ? ld_%s(qp, o.q + i * Q_RS + c * Q_CS) : 0.0f;\n"
			  "\tfloat m = NEG_INF, l = 0.0f, acc[EVL];\n"
			  "#pragma unroll\n\tfor (int u = 0; u < EVL; u++)\n\t\tacc[u] = 0.0f;\n",
		      ct, (long long)tiles, (long long)tiles, tn);
	if (sp->causal)
		sn_buf_puts(&b, "\tlong send = min(S, min(L, i0 + ROWS)); /* causal: later keys are hidden from every row */\n");
	else
		sn_buf_puts(&b, "\tlong send = S;\n");
	sn_buf_printf(&b, "\tfor (long j0 = 0; j0 < send; j0 += KC) {\n"
			  "\t\t__syncthreads(); /* the previous chunk is consumed (and Qs written) */\n"
			  "\t\tfor (int x = tid; x < KC * E; x += ROWS * 32) {\n"
			  "\t\t\tint jl = x / E, c = x %% E;\n"
			  "\t\t\tKs[jl][c] = j0 + jl < S ? ld_%s(kp, o.k + (j0 + jl) * K_RS + c * K_CS) : 0.0f;\n\t\t}\n"
			  "\t\tfor (int x = tid; x < KC * EV; x += ROWS * 32) {\n"
			  "\t\t\tint jl = x / EV, c = x %% EV;\n"
			  "\t\t\tVs[jl][c] = j0 + jl < S ? ld_%s(vp, o.v + (j0 + jl) * V_RS + c * V_CS) : 0.0f;\n\t\t}\n"
			  "\t\t__syncthreads();\n"
			  "\t\tlong j = j0 + lane;\n"
			  "\t\tfloat sc = NEG_INF;\n"
			  "\t\tif (lane < KC && j < S) {\n"
			  "\t\t\tfloat d = 0.0f;\n"
			  "#pragma unroll 8\n\t\t\tfor (int c = 0; c < E; c++)\n"
			  "\t\t\t\td = fmaf(Qs[warp][c], Ks[lane][c], d);\n"
			  "\t\t\tsc = d * %s;\n",
		      tn, tn, scl);
	if (sp->has_mask && sp->mt == IR_BOOL)
		sn_buf_puts(&b, "\t\t\tif (live && !mp[o.m + i * M_RS + j * M_CS])\n\t\t\t\tsc = NEG_INF;\n");
	else if (sp->has_mask)
		sn_buf_printf(&b, "\t\t\tif (live)\n\t\t\t\tsc += ld_%s(mp, o.m + i * M_RS + j * M_CS);\n",
			      ir_dtype_name(sp->mt));
	if (sp->causal)
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
	sn_buf_printf(&b, "\t\t\tst_%s(out, o.o + i * O_RS + c * O_CS, l == 0.0f ? __int_as_float(0x7fc00000) : acc[u] * inv);\n\t}\n}\n",
		      ir_dtype_name(n->dtype));

	st->kind = CG_STEP_KERNEL;
	cg_kernel *kk = &st->k;
	kk->grid[0] = (unsigned)(blocks > 0 ? blocks : 1);
	kk->grid[1] = kk->grid[2] = 1;
	kk->block[0] = (unsigned)rows * 32;
	kk->block[1] = kk->block[2] = 1;
	kk->smem = 0;
	kk->cfg = (cg_config){.variant = 2, .block = rows * 32, .rows = rows};
	cg_attn_bufs(kk, sp);
	return cg_finish(kk, "attention", &b, e);
}

/* want->variant: 0 the default (on sm_90 the wgmma flash kernel where it
 * fits, else the mma.sync flash kernel where it fits, else SIMT), 1 flash
 * mma.sync, 3 flash wgmma (SN_EUSAGE saying why when they do not fit), 2
 * the SIMT kernel. */
int cg_render_attention(const ir_graph *g, ir_ref r, const cg_target *tg, const cg_config *want, cg_step *st, sn_err *e)
{
	cg_attn_spec sp;
	if (cg_attn_spec_of(g, r, st, &sp, e))
		return e->code;
	int variant = want ? want->variant : 0;
	if (variant < 0 || variant > 4)
		return sn_errf(e, SN_EUSAGE, "attention: variant=%d is not 0 (default), 1 (flash), 2 (simt), 3 "
			       "(flash wgmma) or 4 (flash wgmma with a producer warpgroup)", (int)variant);
	char why[160];
	if (variant >= 3 || variant == 0) {
		bool wg = cg_flash_wg_fits(&sp, tg, why, sizeof why);
		if (variant >= 3 && !wg)
			return sn_errf(e, SN_EUSAGE, "attention: variant=%d (flash wgmma) does not fit: %s", variant, why);
		if (wg)
			return cg_render_flash_wg(g, r, tg, &sp, want, st, e);
	}
	bool fits = cg_flash_fits(&sp, tg, why, sizeof why);
	if (variant == 1 && !fits)
		return sn_errf(e, SN_EUSAGE, "attention: variant=1 (flash) does not fit: %s", why);
	if (variant == 1 || (variant == 0 && fits))
		return cg_render_flash(g, r, tg, &sp, want, st, e);
	return render_simt(g, r, &sp, want, st, e);
}
