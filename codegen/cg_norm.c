/* cg_norm.c: softmax, log_softmax, layer_norm, rms_norm and batch_norm
 * (inference).
 *
 * Row ops (softmax along the last axis, the norms over [axis, rank)) give
 * each row to a group of G threads: a warp for short rows, a block for long
 * ones. A row of at most 16 values per thread is read once into registers;
 * a longer one is read again for each pass (it stays in L2). Sums
 * accumulate in double, as the reference's (a float sum of a long row
 * drifts): softmax subtracts the row max and sums e^(x - max) in double;
 * layer_norm takes the mean first and then the mean of squared deviations
 * (two passes, no cancellation), rms_norm the mean of squares, and both
 * normalize in double, so that a row such as [1e30, -1e30, 0], whose
 * squares overflow a float, normalizes as on the reference. The row's
 * values stay floats: the double work is a few instructions per element
 * of a memory-bound kernel.
 * softmax along an inner axis gives each column to one thread, coalesced
 * across threads. batch_norm is elementwise with a per-channel scale. */
#include "codegen/cg_render.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config); /* cg_common.c */

#define MAX_CACHED 16 /* values per thread kept in registers */

static int64_t span(const ir_shape *s, int a, int z)
{
	int64_t p = 1;
	for (int d = a; d < z; d++)
		p *= s->d[d];
	return p;
}

/* A float literal that reads back as the float nearest to x. */
static void flit(char *out, double x)
{
	sn_fmt_float(out, (float)x);
	if (!strchr(out, '.') && !strchr(out, 'e') && !strchr(out, 'n'))
		strcat(out, ".0");
	strcat(out, "f");
}

void cg_emit_group_fn(sn_buf *b, const char *name, int g, cg_red red)
{
	const char *comb = red == CG_RED_MAX ? "(v > a || v != v) ? v : a"
			   : red == CG_RED_MIN ? "(v < a || v != v) ? v : a"
					       : "a + v";
	const char *t = red == CG_RED_SUM ? "double" : "float"; /* sums in double */
	sn_buf_printf(b, "static __device__ __forceinline__ %s %s_combine(%s a, %s v) { return %s; }\n\n", t,
		      name, t, t, comb);
	sn_buf_printf(b, "static __device__ __forceinline__ %s %s(%s a)\n{\n", t, name, t);
	if (g >= 32)
		sn_buf_printf(b, "\tfor (int m = 16; m > 0; m >>= 1)\n"
				 "\t\ta = %s_combine(a, __shfl_xor_sync(0xffffffffu, a, m));\n", name);
	if (g > 32)
		sn_buf_printf(b, "\t__shared__ %s part[%d];\n"
				 "\tint w = threadIdx.x >> 5, lane = threadIdx.x & 31;\n"
				 "\t__syncthreads(); /* part may still be read by a previous call */\n"
				 "\tif (lane == 0)\n\t\tpart[w] = a;\n"
				 "\t__syncthreads();\n"
				 "\ta = part[0];\n"
				 "\tfor (int k = 1; k < %d; k++)\n\t\ta = %s_combine(a, part[k]);\n",
			      t, g / 32, g / 32, name);
	sn_buf_puts(b, "\treturn a;\n}\n\n");
}

void cg_row_groups(int64_t len, int *g, int *gpb)
{
	if (len <= 1024) {
		*g = 32, *gpb = 8;
	} else {
		*g = len <= 4096 ? 256 : len <= 8192 ? 512 : 1024;
		*gpb = 1;
	}
}

static void set_launch(cg_kernel *k, int64_t blocks, int threads)
{
	k->grid[0] = (unsigned)(blocks > 0 ? blocks : 1);
	k->grid[1] = k->grid[2] = 1;
	k->block[0] = (unsigned)threads;
	k->block[1] = k->block[2] = 1;
	k->smem = 0;
}

/* The loop head over a row's elements of this thread: `i` is the index in
 * the row, `c` the slot in the register cache. */
static void row_loop(sn_buf *b, int64_t len, int g, int vpt)
{
	if (vpt <= MAX_CACHED)
		sn_buf_printf(b, "#pragma unroll\n\tfor (int c = 0; c < %d; c++) {\n"
				 "\t\tlong i = lane + (long)c * %d;\n\t\tif (i >= %lldL)\n\t\t\tbreak;\n",
			      vpt, g, (long long)len);
	else
		sn_buf_printf(b, "\tfor (long i = lane; i < %lldL; i += %d) {\n", (long long)len, g);
}

/* The value at index i of the row: from the cache or from memory. */
static const char *row_val(int vpt)
{
	return vpt <= MAX_CACHED ? "v[c]" : "X(i)";
}

/* With a prologue: its function, and the kernel's first parameters in
 * place of x (the prologue's, then ", "). */
static void pro_head(sn_buf *b, const cg_epilogue *pro)
{
	if (pro)
		sn_buf_printf(b, "%s\n", pro->fn);
}

static const char *pro_params(const cg_epilogue *pro)
{
	return pro->params[0] ? pro->params + 2 : ""; /* past the leading ", " */
}

/* The kernel's x parameter and, in the body, the row's X(i). */
static void x_param(sn_buf *b, const cg_epilogue *pro, const char *ct)
{
	if (!pro)
		sn_buf_printf(b, "const %s *__restrict__ x, ", ct);
	else if (pro->params[0])
		sn_buf_printf(b, "%s, ", pro_params(pro));
}

static void x_define(sn_buf *b, const cg_epilogue *pro, const char *ct, const char *tn, long long len)
{
	if (!pro)
		sn_buf_printf(b, "\tconst %s *xr = x + row * %lldL;\n#define X(i) ld_%s(xr, (i))\n", ct, len, tn);
	else
		sn_buf_printf(b, "#define X(i) sn_pro(row * %lldL + (i)%s)\n", len, pro->args);
}

static void x_bufs(cg_kernel *k, const cg_epilogue *pro, ir_ref x)
{
	if (!pro) {
		k->bufs[k->nbufs++] = x;
		return;
	}
	for (uint32_t i = 0; i < pro->nex; i++)
		k->bufs[k->nbufs++] = pro->ex[i];
}

unsigned cg_norm_caps(const ir_graph *g, ir_ref r)
{
	const ir_node *n = &g->nodes[r];
	const ir_shape *xs = &n->shape;
	int ax = ir_axis(n->attrs->axis, xs->rank);
	switch (n->op) {
	case IR_OP_softmax:
	case IR_OP_log_softmax: return ax == xs->rank - 1 ? CG_CAN_PROLOGUE : 0;
	case IR_OP_layer_norm:
	case IR_OP_rms_norm: return ax >= 0 ? CG_CAN_PROLOGUE : 0;
	default: return 0;
	}
}

static int render_softmax_rows(const ir_graph *g, ir_ref r, cg_step *st, int64_t rows, int64_t len, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	ir_dtype t = n->dtype;
	const char *tn = ir_dtype_name(t), *ct = cg_ctype(t);
	bool logsm = n->op == IR_OP_log_softmax;
	int gs, gpb;
	cg_row_groups(len, &gs, &gpb);
	int64_t vpt = (len + gs - 1) / gs;
	char cfg[200];
	snprintf(cfg, sizeof cfg, "%lld rows of %lld; %d threads per row, %d rows per block; %s",
		 (long long)rows, (long long)len, gs, gpb,
		 vpt <= MAX_CACHED ? "row held in registers" : "row re-read per pass");
	const cg_epilogue *pro = st->pro;
	sn_buf b = {0};
	cg_emit_spec_st(&b, g, r, cfg, st);
	sn_buf_puts(&b, "\n");
	cg_emit_dtype_helpers(&b, t);
	sn_buf_puts(&b, "\n");
	pro_head(&b, pro);
	cg_emit_group_fn(&b, "group_max", gs, CG_RED_MAX);
	cg_emit_group_fn(&b, "group_sum", gs, CG_RED_SUM);
	sn_buf_printf(&b, "extern \"C\" __global__ void __launch_bounds__(%d)\n%s(", gs * gpb, CG_NAME);
	x_param(&b, pro, ct);
	sn_buf_printf(&b, "%s *__restrict__ y)\n{\n"
			  "\tlong row = (long)blockIdx.x * %d + threadIdx.x / %d;\n"
			  "\tint lane = threadIdx.x %% %d;\n"
			  "\tif (row >= %lldL)\n\t\treturn; /* uniform per group */\n"
			  "\t%s *yr = y + row * %lldL;\n",
		      ct, gpb, gs, gs, (long long)rows, ct, (long long)len);
	x_define(&b, pro, ct, tn, (long long)len);
	const char *val = row_val((int)(vpt <= MAX_CACHED ? vpt : MAX_CACHED + 1));
	sn_buf_puts(&b, "\tfloat m = -__int_as_float(0x7f800000);\n");
	if (vpt <= MAX_CACHED)
		sn_buf_printf(&b, "\tfloat v[%lld];\n", (long long)vpt);
	row_loop(&b, len, gs, (int)(vpt <= MAX_CACHED ? vpt : MAX_CACHED + 1));
	if (vpt <= MAX_CACHED)
		sn_buf_puts(&b, "\t\tv[c] = X(i);\n");
	sn_buf_printf(&b, "\t\tfloat t = %s;\n\t\tm = (t > m || t != t) ? t : m;\n\t}\n"
			  "\tm = group_max(m); /* a row of -inf gives NaN, as PyTorch */\n"
			  "\tdouble s = 0.0;\n", val);
	row_loop(&b, len, gs, (int)(vpt <= MAX_CACHED ? vpt : MAX_CACHED + 1));
	sn_buf_printf(&b, "\t\ts += (double)expf(%s - m);\n\t}\n\ts = group_sum(s);\n", val);
	if (logsm)
		sn_buf_puts(&b, "\tfloat ls = (float)log(s);\n");
	else
		sn_buf_puts(&b, "\tfloat inv = (float)(1.0 / s);\n");
	row_loop(&b, len, gs, (int)(vpt <= MAX_CACHED ? vpt : MAX_CACHED + 1));
	if (logsm)
		sn_buf_printf(&b, "\t\tst_%s(yr, i, (%s - m) - ls);\n\t}\n", tn, val);
	else
		sn_buf_printf(&b, "\t\tst_%s(yr, i, expf(%s - m) * inv);\n\t}\n", tn, val);
	sn_buf_puts(&b, "#undef X\n}\n");
	st->kind = CG_STEP_KERNEL;
	set_launch(&st->k, (rows + gpb - 1) / gpb, gs * gpb);
	st->k.nbufs = 0;
	x_bufs(&st->k, pro, n->in[0]);
	st->k.bufs[st->k.nbufs++] = r;
	return cg_finish(&st->k, ir_ops[n->op].name, &b, e);
}

/* softmax along an axis that is not the last: a thread per column. */
static int render_softmax_cols(const ir_graph *g, ir_ref r, cg_step *st, int64_t outer, int64_t len,
			       int64_t inner, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	ir_dtype t = n->dtype;
	const char *tn = ir_dtype_name(t), *ct = cg_ctype(t);
	bool logsm = n->op == IR_OP_log_softmax;
	int64_t cols = outer * inner;
	char cfg[200];
	snprintf(cfg, sizeof cfg, "%lld columns of %lld with stride %lld; a thread per column",
		 (long long)cols, (long long)len, (long long)inner);
	sn_buf b = {0};
	cg_emit_spec(&b, g, r, cfg);
	sn_buf_puts(&b, "\n");
	cg_emit_dtype_helpers(&b, t);
	sn_buf_printf(&b, "\nextern \"C\" __global__ void __launch_bounds__(256)\n"
			  "%s(const %s *__restrict__ x, %s *__restrict__ y)\n{\n"
			  "\tlong col = (long)blockIdx.x * 256 + threadIdx.x;\n"
			  "\tif (col >= %lldL)\n\t\treturn;\n"
			  "\tlong base = (col / %lldL) * %lldL + col %% %lldL;\n"
			  "\tfloat m = -__int_as_float(0x7f800000);\n\tdouble s = 0.0;\n"
			  "\tfor (long k = 0; k < %lldL; k++) {\n"
			  "\t\tfloat t = ld_%s(x, base + k * %lldL);\n"
			  "\t\tm = (t > m || t != t) ? t : m;\n\t}\n"
			  "\tfor (long k = 0; k < %lldL; k++)\n"
			  "\t\ts += (double)expf(ld_%s(x, base + k * %lldL) - m);\n",
		      CG_NAME, ct, ct, (long long)cols, (long long)inner, (long long)(len * inner),
		      (long long)inner, (long long)len, tn, (long long)inner, (long long)len, tn,
		      (long long)inner);
	sn_buf_printf(&b, "\t%s\n\tfor (long k = 0; k < %lldL; k++) {\n"
			  "\t\tfloat d = ld_%s(x, base + k * %lldL) - m;\n"
			  "\t\tst_%s(y, base + k * %lldL, %s);\n\t}\n}\n",
		      logsm ? "float ls = (float)log(s);" : "float inv = (float)(1.0 / s);", (long long)len, tn,
		      (long long)inner, tn, (long long)inner, logsm ? "d - ls" : "expf(d) * inv");
	st->kind = CG_STEP_KERNEL;
	set_launch(&st->k, (cols + 255) / 256, 256);
	st->k.nbufs = 2;
	st->k.bufs[0] = n->in[0];
	st->k.bufs[1] = r;
	return cg_finish(&st->k, ir_ops[n->op].name, &b, e);
}

static int render_layer_norm(const ir_graph *g, ir_ref r, cg_step *st, int64_t rows, int64_t len, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	ir_dtype t = n->dtype;
	const char *tn = ir_dtype_name(t), *ct = cg_ctype(t);
	bool rms = n->op == IR_OP_rms_norm;
	bool hw = n->nin > 1, hb = n->nin > 2;
	const ir_node *w = hw ? &g->nodes[n->in[1]] : NULL, *bi = hb ? &g->nodes[n->in[2]] : NULL;
	int gs, gpb;
	cg_row_groups(len, &gs, &gpb);
	int64_t vpt = (len + gs - 1) / gs;
	int cv = (int)(vpt <= MAX_CACHED ? vpt : MAX_CACHED + 1);
	char cfg[200], eps[40];
	snprintf(cfg, sizeof cfg, "%lld rows of %lld; %d threads per row, %d rows per block; %s",
		 (long long)rows, (long long)len, gs, gpb,
		 vpt <= MAX_CACHED ? "row held in registers" : "row re-read per pass");
	snprintf(eps, sizeof eps, "%.17g", n->attrs->eps); /* a double, as the reference's */
	const cg_epilogue *pro = st->pro;
	sn_buf b = {0};
	cg_emit_spec_st(&b, g, r, cfg, st);
	sn_buf_puts(&b, "\n");
	cg_emit_dtype_helpers(&b, t);
	if (w)
		cg_emit_dtype_helpers(&b, w->dtype);
	if (bi)
		cg_emit_dtype_helpers(&b, bi->dtype);
	sn_buf_puts(&b, "\n");
	pro_head(&b, pro);
	cg_emit_group_fn(&b, "group_sum", gs, CG_RED_SUM);
	sn_buf_printf(&b, "extern \"C\" __global__ void __launch_bounds__(%d)\n%s(", gs * gpb, CG_NAME);
	x_param(&b, pro, ct);
	if (w)
		sn_buf_printf(&b, "const %s *__restrict__ w, ", cg_ctype(w->dtype));
	if (bi)
		sn_buf_printf(&b, "const %s *__restrict__ bias, ", cg_ctype(bi->dtype));
	sn_buf_printf(&b, "%s *__restrict__ y)\n{\n"
			  "\tlong row = (long)blockIdx.x * %d + threadIdx.x / %d;\n"
			  "\tint lane = threadIdx.x %% %d;\n"
			  "\tif (row >= %lldL)\n\t\treturn; /* uniform per group */\n"
			  "\t%s *yr = y + row * %lldL;\n",
		      ct, gpb, gs, gs, (long long)rows, ct, (long long)len);
	x_define(&b, pro, ct, tn, (long long)len);
	const char *val = row_val(cv);
	if (vpt <= MAX_CACHED) {
		sn_buf_printf(&b, "\tfloat v[%lld];\n", (long long)vpt);
		row_loop(&b, len, gs, cv);
		sn_buf_puts(&b, "\t\tv[c] = X(i);\n\t}\n");
	}
	sn_buf_puts(&b, "\tdouble mean = 0.0, var = 0.0;\n");
	if (!rms) {
		row_loop(&b, len, gs, cv);
		sn_buf_printf(&b, "\t\tmean += (double)%s;\n\t}\n\tmean = group_sum(mean) / %lld.0;\n", val,
			      (long long)len);
	}
	row_loop(&b, len, gs, cv);
	sn_buf_printf(&b, "\t\tdouble d = (double)%s - mean;\n\t\tvar += d * d;\n\t}\n"
			  "\tvar = group_sum(var) / %lld.0; /* biased; mean(x^2) for rms_norm */\n"
			  "\tdouble inv = 1.0 / sqrt(var + %s);\n",
		      val, (long long)len, eps);
	row_loop(&b, len, gs, cv);
	sn_buf_printf(&b, "\t\tfloat o = (float)(((double)%s - mean) * inv);\n", val);
	if (w)
		sn_buf_printf(&b, "\t\to *= ld_%s(w, i);\n", ir_dtype_name(w->dtype));
	if (bi)
		sn_buf_printf(&b, "\t\to += ld_%s(bias, i);\n", ir_dtype_name(bi->dtype));
	sn_buf_printf(&b, "\t\tst_%s(yr, i, o);\n\t}\n#undef X\n}\n", tn);
	st->kind = CG_STEP_KERNEL;
	set_launch(&st->k, (rows + gpb - 1) / gpb, gs * gpb);
	st->k.nbufs = 0;
	x_bufs(&st->k, pro, n->in[0]);
	for (uint32_t i = 1; i < n->nin; i++)
		st->k.bufs[st->k.nbufs++] = n->in[i];
	st->k.bufs[st->k.nbufs++] = r;
	return cg_finish(&st->k, ir_ops[n->op].name, &b, e);
}

static int render_batch_norm(const ir_graph *g, ir_ref r, cg_step *st, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_shape *xs = &n->shape;
	int cax = n->attrs->layout == IR_NHWC ? xs->rank - 1 : 1;
	int64_t c = xs->d[cax], inner = span(xs, cax + 1, xs->rank), total = span(xs, 0, xs->rank);
	ir_dtype t = n->dtype;
	static const char *const pn[] = {"w", "bias", "mean", "var"};
	char cfg[160], eps[40];
	snprintf(cfg, sizeof cfg, "%lld elements, %lld channels (every %lld elements); grid-stride",
		 (long long)total, (long long)c, (long long)inner);
	flit(eps, n->attrs->eps);
	sn_buf b = {0};
	cg_emit_spec(&b, g, r, cfg);
	sn_buf_puts(&b, "\n");
	cg_emit_dtype_helpers(&b, t);
	for (int i = 1; i < 5; i++)
		cg_emit_dtype_helpers(&b, g->nodes[n->in[i]].dtype);
	sn_buf_printf(&b, "\nextern \"C\" __global__ void __launch_bounds__(256)\n%s(const %s *__restrict__ x",
		      CG_NAME, cg_ctype(t));
	for (int i = 1; i < 5; i++)
		sn_buf_printf(&b, ", const %s *__restrict__ %s", cg_ctype(g->nodes[n->in[i]].dtype), pn[i - 1]);
	char chan[96];
	if (inner == 1)
		snprintf(chan, sizeof chan, c == total ? "i" : "i %% %lldL", (long long)c);
	else
		snprintf(chan, sizeof chan, "i / %lldL %% %lldL", (long long)inner, (long long)c);
	sn_buf_printf(&b, ", %s *__restrict__ y)\n{\n"
			  "\tfor (long i = (long)blockIdx.x * 256 + threadIdx.x; i < %lldL; i += (long)gridDim.x * 256) {\n"
			  "\t\tlong c = %s;\n",
		      cg_ctype(t), (long long)total, chan);
	sn_buf_printf(&b, "\t\tfloat scale = ld_%s(w, c) / sqrtf(ld_%s(var, c) + %s);\n"
			  "\t\tst_%s(y, i, (ld_%s(x, i) - ld_%s(mean, c)) * scale + ld_%s(bias, c));\n\t}\n}\n",
		      ir_dtype_name(g->nodes[n->in[1]].dtype), ir_dtype_name(g->nodes[n->in[4]].dtype), eps,
		      ir_dtype_name(t), ir_dtype_name(t), ir_dtype_name(g->nodes[n->in[3]].dtype),
		      ir_dtype_name(g->nodes[n->in[2]].dtype));
	int64_t blocks = (total + 255) / 256;
	st->kind = CG_STEP_KERNEL;
	set_launch(&st->k, blocks < 65536 ? blocks : 65536, 256);
	st->k.nbufs = 0;
	for (uint32_t i = 0; i < 5; i++)
		st->k.bufs[st->k.nbufs++] = n->in[i];
	st->k.bufs[st->k.nbufs++] = r;
	return cg_finish(&st->k, "batch_norm", &b, e);
}

int cg_render_norm(const ir_graph *g, ir_ref r, const cg_target *tg, const cg_config *want, cg_step *st, sn_err *e)
{
	if (want)
		return sn_errf(e, SN_EUSAGE, "only the default config is built for this kernel family yet");
	const ir_node *n = &g->nodes[r];
	const ir_shape *xs = &n->shape;
	const char *opname = ir_ops[n->op].name;
	(void)tg;
	if (n->op == IR_OP_cumsum)
		return cg_render_scan(g, r, tg, want, st, e);
	if (n->op == IR_OP_group_norm)
		return cg_render_group_norm(g, r, tg, want, st, e);
	if (n->op == IR_OP_batch_norm) {
		if (xs->rank < 2)
			return sn_errf(e, SN_EINPUT, "batch_norm: x must have rank >= 2");
		return render_batch_norm(g, r, st, e);
	}
	int ax = ir_axis(n->attrs->axis, xs->rank);
	if (ax < 0)
		return sn_errf(e, SN_EINPUT, "%s: axis %lld out of range for rank %d", opname,
			       (long long)n->attrs->axis, xs->rank);
	int64_t outer = span(xs, 0, ax), len = xs->d[ax], inner = span(xs, ax + 1, xs->rank);
	if (outer * len * inner > 0 && (outer * inner + 7) / 8 > 0x7fffffff)
		return sn_errf(e, SN_EINPUT, "%s: too many rows for one launch", opname);
	switch (n->op) {
	case IR_OP_softmax:
	case IR_OP_log_softmax:
		if (inner == 1)
			return render_softmax_rows(g, r, st, outer, len, e);
		return render_softmax_cols(g, r, st, outer, len, inner, e);
	case IR_OP_layer_norm:
	case IR_OP_rms_norm:
		return render_layer_norm(g, r, st, outer, len * inner, e);
	default:
		return sn_errf(e, SN_EINTERNAL, "%s: not a normalization", opname);
	}
}

/* group_norm (NCHW, rank >= 3): one block per (sample, group), whose
 * C/groups * spatial values are contiguous: the mean, then the mean of
 * squared deviations (two passes over the group, in double as the row
 * norms'), then the per-channel weight and bias. */
int cg_render_group_norm(const ir_graph *g, ir_ref r, const cg_target *tg, const cg_config *want, cg_step *st,
			 sn_err *e)
{
	int block;
	if (cg_block_of(g, r, want, 256, &block, e))
		return e->code;
	const ir_node *n = &g->nodes[r];
	const ir_shape *xs = &n->shape;
	const ir_node *w = &g->nodes[n->in[1]];
	(void)tg;
	int64_t N = xs->d[0], C = xs->d[1], G = n->attrs->groups, hw = span(xs, 2, xs->rank);
	if (G < 1 || C % G != 0 || N * G > 0x7fffffff)
		return sn_errf(e, SN_EINPUT, "group_norm: bad groups or too many groups for one launch");
	int64_t m = C / G * hw;
	const char *xn = ir_dtype_name(n->dtype), *wn = ir_dtype_name(w->dtype);
	char eps[48];
	snprintf(eps, sizeof eps, "%.17g", n->attrs->eps); /* a double, as the reference's */
	sn_buf b = {0};
	char config[64];
	snprintf(config, sizeof config, "block=%d group per block", block);
	cg_emit_spec(&b, g, r, config);
	cg_emit_dtype_helpers(&b, n->dtype);
	cg_emit_dtype_helpers(&b, w->dtype);
	cg_emit_group_fn(&b, "sn_block_sum", block, CG_RED_SUM);
	sn_buf_printf(&b, "extern \"C\" __global__ void __launch_bounds__(%d) " CG_NAME
			  "(const %s *__restrict__ in0, const %s *__restrict__ in1, const %s *__restrict__ in2, "
			  "%s *__restrict__ out)\n{\n",
		      block, cg_ctype(n->dtype), cg_ctype(w->dtype), cg_ctype(w->dtype), cg_ctype(n->dtype));
	sn_buf_printf(&b, "\tlong base = (long)blockIdx.x * %" PRId64 "L;\n"
			  "\tlong c0 = (long)blockIdx.x %% %" PRId64 "L * %" PRId64 "L;\n"
			  "\tdouble s = 0.0;\n"
			  "\tfor (long i = threadIdx.x; i < %" PRId64 "L; i += %d)\n\t\ts += (double)ld_%s(in0, base + i);\n"
			  "\tdouble mean = sn_block_sum(s) / %" PRId64 ".0;\n"
			  "\tdouble v = 0.0;\n"
			  "\tfor (long i = threadIdx.x; i < %" PRId64 "L; i += %d) {\n"
			  "\t\tdouble d = (double)ld_%s(in0, base + i) - mean;\n\t\tv += d * d;\n\t}\n"
			  "\tdouble inv = 1.0 / sqrt(sn_block_sum(v) / %" PRId64 ".0 + %s);\n"
			  "\tfor (long i = threadIdx.x; i < %" PRId64 "L; i += %d) {\n"
			  "\t\tlong c = c0 + i / %" PRId64 "L;\n"
			  "\t\tfloat o = (float)(((double)ld_%s(in0, base + i) - mean) * inv);\n"
			  "\t\tst_%s(out, base + i, o * ld_%s(in1, c) + ld_%s(in2, c));\n"
			  "\t}\n}\n",
		      m, G, C / G, m, block, xn, m ? m : 1, m, block, xn, m ? m : 1, eps, m, block,
		      hw ? hw : 1, xn, xn, wn, wn);
	st->kind = CG_STEP_KERNEL;
	cg_kernel *k = &st->k;
	k->grid[0] = (unsigned)(N * G < 1 ? 1 : N * G);
	k->grid[1] = k->grid[2] = 1;
	k->block[0] = (unsigned)block;
	k->block[1] = k->block[2] = 1;
	k->smem = 0;
	k->cfg = (cg_config){.block = block};
	k->nbufs = 4;
	for (uint32_t i = 0; i < 3; i++)
		k->bufs[i] = n->in[i];
	k->bufs[3] = r;
	return cg_finish(k, "group_norm", &b, e);
}
