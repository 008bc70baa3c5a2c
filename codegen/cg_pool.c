/* cg_pool.c: max_pool2d, avg_pool2d and global_avg_pool, NCHW or NHWC.
 *
 * The windowed pools give each output element to one thread (consecutive
 * threads take consecutive outputs, so loads are coalesced along W in NCHW
 * and along C in NHWC). Padding never wins a max (it is skipped; integer
 * maxima start at the dtype's minimum, as the reference's -inf saturates).
 * avg_pool2d divides exactly as the reference does: by the window clipped
 * to the padded input with count_include_pad, else by the number of real
 * elements; ceil_mode windows that run past the padding are clipped.
 * global_avg_pool reduces each plane: a warp per plane in NCHW (the plane
 * is contiguous), a thread per (n, c) in NHWC (coalesced across c). */
#include "codegen/cg_render.h"

#include <stdio.h>
#include <string.h>

void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config); /* cg_common.c */

static void set_launch(cg_kernel *k, int64_t blocks, int threads, ir_ref x, ir_ref r)
{
	k->grid[0] = (unsigned)(blocks < 1 ? 1 : blocks < 65536 * 4 ? blocks : 65536 * 4);
	k->grid[1] = k->grid[2] = 1;
	k->block[0] = (unsigned)threads;
	k->block[1] = k->block[2] = 1;
	k->smem = 0;
	k->nbufs = 2;
	k->bufs[0] = x;
	k->bufs[1] = r;
}

/* The smallest value of integer dtype t, as a C literal. */
static const char *int_min(ir_dtype t)
{
	switch (t) {
	case IR_I32: return "(-2147483647LL - 1)";
	case IR_I8: return "-128LL";
	case IR_U8: return "0LL";
	default: return "(-9223372036854775807LL - 1)";
	}
}

static int render_window(const ir_graph *g, ir_ref r, cg_step *st, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_node *x = &g->nodes[n->in[0]];
	const ir_attrs *at = n->attrs;
	const char *opname = ir_ops[n->op].name;
	bool is_max = n->op == IR_OP_max_pool2d, nhwc = at->layout == IR_NHWC;
	const ir_ints *stv = at->stride.n ? &at->stride : &at->kernel;
	if (x->shape.rank != 4 || at->kernel.n != 2 || stv->n != 2 || at->pad.n != 4 ||
	    (is_max && at->dilation.n != 2))
		return sn_errf(e, SN_EINPUT, "%s: needs rank 4, a 2-d kernel, stride and dilation, and 4 pads", opname);
	const int64_t *xd = x->shape.d, *yd = n->shape.d;
	int64_t N = xd[0], C = xd[nhwc ? 3 : 1], H = xd[nhwc ? 1 : 2], W = xd[nhwc ? 2 : 3];
	int64_t Ho = yd[nhwc ? 1 : 2], Wo = yd[nhwc ? 2 : 3];
	int64_t kh = at->kernel.v[0], kw = at->kernel.v[1], sh = stv->v[0], sw = stv->v[1];
	int64_t dh = is_max ? at->dilation.v[0] : 1, dw = is_max ? at->dilation.v[1] : 1;
	int64_t pt = at->pad.v[0], pl = at->pad.v[1], pb = at->pad.v[2], pr = at->pad.v[3];
	int64_t total = N * C * Ho * Wo;
	ir_dtype t = x->dtype;
	bool isf = ir_dtype_is_float(t);
	const char *tn = ir_dtype_name(t), *ct = cg_ctype(t);

	char cfg[96];
	snprintf(cfg, sizeof cfg, "%lld outputs, a thread each", (long long)total);
	sn_buf b = {0};
	cg_emit_spec(&b, g, r, cfg);
	sn_buf_puts(&b, "\n");
	cg_emit_dtype_helpers(&b, t);
	sn_buf_printf(&b, "\n#define XN %lldL\n#define XC %lldL\n#define XH %lldL\n#define XW %lldL\n"
			  "#define HO %lldL\n#define WO %lldL\n\n",
		      (long long)N, (long long)C, (long long)H, (long long)W, (long long)Ho, (long long)Wo);
	sn_buf_printf(&b, "extern \"C\" __global__ void __launch_bounds__(256)\n"
			  "%s(const %s *__restrict__ x, %s *__restrict__ y)\n{\n"
			  "\tfor (long i = (long)blockIdx.x * 256 + threadIdx.x; i < %lldL; i += (long)gridDim.x * 256) {\n",
		      CG_NAME, ct, ct, (long long)total);
	if (nhwc)
		sn_buf_puts(&b, "\t\tlong c = i % XC, ow = i / XC % WO, oh = i / (XC * WO) % HO, n = i / (XC * WO * HO);\n"
				"#define AT(h, w) (((n * XH + (h)) * XW + (w)) * XC + c)\n");
	else
		sn_buf_puts(&b, "\t\tlong ow = i % WO, oh = i / WO % HO, nc = i / (WO * HO);\n"
				"#define AT(h, w) ((nc * XH + (h)) * XW + (w))\n");
	sn_buf_printf(&b, "\t\tlong h0 = oh * %lldL - %lldL, w0 = ow * %lldL - %lldL;\n",
		      (long long)sh, (long long)pt, (long long)sw, (long long)pl);
	if (is_max) {
		if (isf)
			sn_buf_puts(&b, "\t\tfloat m = -__int_as_float(0x7f800000);\n");
		else
			sn_buf_printf(&b, "\t\tlong long m = %s;\n", int_min(t));
		sn_buf_printf(&b, "\t\tfor (int a = 0; a < %lld; a++) {\n"
				  "\t\t\tlong h = h0 + a * %lldL;\n"
				  "\t\t\tif (h < 0 || h >= XH)\n\t\t\t\tcontinue;\n"
				  "\t\t\tfor (int c2 = 0; c2 < %lld; c2++) {\n"
				  "\t\t\t\tlong w = w0 + c2 * %lldL;\n"
				  "\t\t\t\tif (w < 0 || w >= XW)\n\t\t\t\t\tcontinue;\n"
				  "\t\t\t\t%s v = ld_%s(x, AT(h, w));\n",
			      (long long)kh, (long long)dh, (long long)kw, (long long)dw,
			      isf ? "float" : "long long", tn);
		if (isf)
			sn_buf_puts(&b, "\t\t\t\tif ((v > m || v != v) && m == m)\n\t\t\t\t\tm = v; /* NaN wins, as PyTorch */\n");
		else
			sn_buf_puts(&b, "\t\t\t\tm = v > m ? v : m;\n");
		sn_buf_printf(&b, "\t\t\t}\n\t\t}\n\t\tst_%s(y, i, m);\n", tn);
	} else {
		sn_buf_printf(&b, "\t\tlong h1 = min(h0 + %lldL, XH + %lldL), w1 = min(w0 + %lldL, XW + %lldL);\n"
				  "\t\tlong full = (h1 - h0) * (w1 - w0);\n"
				  "\t\tlong ha = max(h0, 0L), hb = min(h1, XH), wa = max(w0, 0L), wb = min(w1, XW);\n"
				  "\t\tfloat s = 0.0f;\n"
				  "\t\tfor (long h = ha; h < hb; h++)\n"
				  "\t\t\tfor (long w = wa; w < wb; w++)\n"
				  "\t\t\t\ts += ld_%s(x, AT(h, w));\n",
			      (long long)kh, (long long)pb, (long long)kw, (long long)pr, tn);
		if (at->count_include_pad)
			sn_buf_puts(&b, "\t\tfloat cnt = (float)full;\n");
		else
			sn_buf_puts(&b, "\t\tfloat cnt = (float)((hb > ha ? hb - ha : 0) * (wb > wa ? wb - wa : 0));\n"
					"\t\t(void)full;\n");
		sn_buf_printf(&b, "\t\tst_%s(y, i, s / cnt);\n", tn);
	}
	sn_buf_puts(&b, "#undef AT\n\t}\n}\n");
	st->kind = CG_STEP_KERNEL;
	set_launch(&st->k, (total + 255) / 256, 256, n->in[0], r);
	return cg_finish(&st->k, opname, &b, e);
}

static int render_global(const ir_graph *g, ir_ref r, cg_step *st, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_node *x = &g->nodes[n->in[0]];
	bool nhwc = n->attrs->layout == IR_NHWC;
	if (x->shape.rank != 4)
		return sn_errf(e, SN_EINPUT, "global_avg_pool: x needs rank 4");
	const int64_t *xd = x->shape.d;
	int64_t N = xd[0], C = xd[nhwc ? 3 : 1], hw = xd[nhwc ? 1 : 2] * xd[nhwc ? 2 : 3];
	int64_t planes = N * C;
	if (planes / (nhwc ? 256 : 8) >= 65536 * 4)
		return sn_errf(e, SN_EINPUT, "global_avg_pool: %lld planes are too many for one launch",
			       (long long)planes);
	ir_dtype t = x->dtype;
	const char *tn = ir_dtype_name(t), *ct = cg_ctype(t);
	/* NCHW: a group of gs threads per contiguous plane; NHWC: a thread
	 * per (n, c), walking the plane with stride C. */
	int gs = nhwc ? 1 : hw > 4096 ? 256 : 32, gpb = 256 / gs;
	char cfg[128];
	snprintf(cfg, sizeof cfg, "%lld planes of %lld; %d threads per plane", (long long)planes,
		 (long long)hw, gs);
	sn_buf b = {0};
	cg_emit_spec(&b, g, r, cfg);
	sn_buf_puts(&b, "\n");
	cg_emit_dtype_helpers(&b, t);
	sn_buf_printf(&b, "\nextern \"C\" __global__ void __launch_bounds__(256)\n"
			  "%s(const %s *__restrict__ x, %s *__restrict__ y)\n{\n"
			  "\tlong p = (long)blockIdx.x * %d + threadIdx.x / %d; /* n * C + c */\n"
			  "\tint lane = threadIdx.x %% %d;\n"
			  "\tfloat s = 0.0f;\n",
		      CG_NAME, ct, ct, gpb, gs, gs);
	if (nhwc)
		sn_buf_printf(&b, "\tif (p >= %lldL)\n\t\treturn;\n"
				  "\tconst %s *xp = x + (p / %lldL) * %lldL + p %% %lldL;\n"
				  "\tfor (long i = 0; i < %lldL; i++)\n\t\ts += ld_%s(xp, i * %lldL);\n",
			      (long long)planes, ct, (long long)C, (long long)(hw * C), (long long)C,
			      (long long)hw, tn, (long long)C);
	else
		sn_buf_printf(&b, "\tbool live = p < %lldL; /* all threads reach the block barrier */\n"
				  "\tconst %s *xp = x + (live ? p : 0) * %lldL;\n"
				  "\tfor (long i = lane; live && i < %lldL; i += %d)\n\t\ts += ld_%s(xp, i);\n"
				  "\tfor (int m = 16; m > 0; m >>= 1)\n"
				  "\t\ts += __shfl_xor_sync(0xffffffffu, s, m);\n",
			      (long long)planes, ct, (long long)hw, (long long)hw, gs, tn);
	if (gs > 32)
		sn_buf_printf(&b, "\t__shared__ float part[%d];\n"
				  "\tif ((threadIdx.x & 31) == 0)\n\t\tpart[threadIdx.x >> 5] = s;\n"
				  "\t__syncthreads();\n"
				  "\ts = 0.0f;\n\tfor (int k = 0; k < %d; k++)\n\t\ts += part[k];\n",
			      gs / 32, gs / 32);
	if (!nhwc)
		sn_buf_puts(&b, "\tif (live && lane == 0)\n\t");
	sn_buf_printf(&b, "\tst_%s(y, p, s / %lld.0f);\n}\n", tn, (long long)hw);
	st->kind = CG_STEP_KERNEL;
	set_launch(&st->k, (planes + gpb - 1) / gpb, 256, n->in[0], r);
	return cg_finish(&st->k, "global_avg_pool", &b, e);
}

int cg_render_pool(const ir_graph *g, ir_ref r, const cg_target *tg, const cg_config *want, cg_step *st, sn_err *e)
{
	if (want)
		return sn_errf(e, SN_EUSAGE, "only the default config is built for this kernel family yet");
	(void)tg;
	if (g->nodes[r].op == IR_OP_global_avg_pool)
		return render_global(g, r, st, e);
	return render_window(g, r, st, e);
}
