/* cg_move.c: data movement kernels. Values move bit for bit (no
 * conversion), as in ir/ref/ref_move.c. Each kernel walks the output
 * contiguously (grid-stride loop, one element per iteration) and computes
 * where the element comes from:
 *   transpose, expand, split, slice  a strided view of the operand: a base
 *                                    offset and a stride per output dim
 *                                    (0 for expand's broadcast dims,
 *                                    negative for slice's negative steps);
 *                                    adjacent dims that walk as one merge
 *   concat                           which operand by the position along
 *                                    the axis (one kernel, up to 7 operands)
 *   gather                           the index operand picks the row
 *   pad                              per dim, the source index or the
 *                                    constant (reflect and edge modes)
 *   iota                             the index along the axis
 * reshape, flatten, squeeze and unsqueeze are aliases (views that move no
 * data): the executor gives them their operand's buffer. */
#include "codegen/cg_render.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config); /* cg_common.c */

#define BLOCK 256
#define MAX_GRID 8192

static void strides_of(const ir_shape *s, int64_t *st)
{
	int64_t acc = 1;
	for (int d = s->rank - 1; d >= 0; d--) {
		st[d] = acc;
		acc *= s->d[d];
	}
}

/* Opens the kernel: spec comment, signature (operands then out) and the
 * grid-stride loop over the output's `total` elements with index i. */
static void open_kernel(sn_buf *b, const ir_graph *g, ir_ref r, const char *config, uint32_t nin)
{
	const ir_node *n = &g->nodes[r];
	cg_emit_spec(b, g, r, config);
	if (n->op == IR_OP_iota)
		cg_emit_dtype_helpers(b, n->dtype);
	sn_buf_puts(b, "extern \"C\" __global__ void __launch_bounds__(256) " CG_NAME "(");
	for (uint32_t k = 0; k < nin; k++) {
		const ir_node *x = &g->nodes[n->in[k]];
		sn_buf_printf(b, "const %s *__restrict__ in%u, ", cg_ctype(x->dtype), k);
	}
	sn_buf_printf(b, "%s *__restrict__ out)\n{\n", cg_ctype(n->dtype));
	sn_buf_printf(b, "\tfor (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < %" PRId64 "L; "
			 "i += (long)gridDim.x * blockDim.x) {\n",
		      ir_numel(&n->shape));
}

static int close_kernel(sn_buf *b, const ir_graph *g, ir_ref r, uint32_t nin, cg_step *st, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	sn_buf_puts(b, "\t}\n}\n");
	st->kind = CG_STEP_KERNEL;
	cg_kernel *k = &st->k;
	int64_t blocks = (ir_numel(&n->shape) + BLOCK - 1) / BLOCK;
	k->grid[0] = (unsigned)(blocks < 1 ? 1 : blocks > MAX_GRID ? MAX_GRID : blocks);
	k->grid[1] = k->grid[2] = 1;
	k->block[0] = BLOCK;
	k->block[1] = k->block[2] = 1;
	k->smem = 0;
	k->nbufs = nin + 1;
	for (uint32_t i = 0; i < nin; i++)
		k->bufs[i] = n->in[i];
	k->bufs[nin] = r;
	return cg_finish(k, ir_ops[n->op].name, b, e);
}

/* A strided view: out[i] = in0[base + sum_d idx_d * st_d]. */
static int render_view(const ir_graph *g, ir_ref r, int64_t base, const int64_t *st, cg_step *stp, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_shape *os = &n->shape;
	int64_t size[IR_MAX_RANK], str[IR_MAX_RANK];
	int nd = 0;
	for (int d = 0; d < os->rank; d++) {
		if (os->d[d] == 1)
			continue;
		if (nd > 0 && str[nd - 1] == st[d] * os->d[d]) { /* walks as one with the dim before */
			size[nd - 1] *= os->d[d];
			str[nd - 1] = st[d];
			continue;
		}
		size[nd] = os->d[d];
		str[nd] = st[d];
		nd++;
	}
	sn_buf b = {0};
	char config[64 + 24 * IR_MAX_RANK];
	int off = snprintf(config, sizeof config, "block=%d view base=%" PRId64 " strides=[", BLOCK, base);
	for (int d = 0; d < nd; d++)
		off += snprintf(config + off, sizeof config - (size_t)off, "%s%" PRId64 "x%" PRId64,
				d ? "," : "", size[d], str[d]);
	snprintf(config + off, sizeof config - (size_t)off, "]");
	open_kernel(&b, g, r, config, 1);
	sn_buf_printf(&b, "\t\tlong rem = i, src = %" PRId64 "L;\n", base);
	for (int d = nd - 1; d >= 0; d--) {
		if (d > 0)
			sn_buf_printf(&b, "\t\tsrc += rem %% %" PRId64 "L * %" PRId64 "L;\n\t\trem /= %" PRId64 "L;\n",
				      size[d], str[d], size[d]);
		else
			sn_buf_printf(&b, "\t\tsrc += rem * %" PRId64 "L;\n", str[d]);
	}
	sn_buf_puts(&b, "\t\tout[i] = in0[src];\n");
	return close_kernel(&b, g, r, 1, stp, e);
}

static int render_slice(const ir_graph *g, ir_ref r, cg_step *stp, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_attrs *at = n->attrs;
	const ir_shape *xs = &g->nodes[n->in[0]].shape;
	int64_t ist[IR_MAX_RANK], st[IR_MAX_RANK], base = 0;
	strides_of(xs, ist);
	memcpy(st, ist, sizeof st);
	int k = at->starts.n;
	if (at->ends.n != k || (at->axes.n && at->axes.n != k) || (at->steps.n && at->steps.n != k))
		return sn_errf(e, SN_EINPUT, "slice: starts, ends, axes and steps differ in length");
	for (int i = 0; i < k; i++) {
		int a = ir_axis(at->axes.n ? at->axes.v[i] : i, xs->rank);
		int64_t step = at->steps.n ? at->steps.v[i] : 1, first;
		if (a < 0 || step == 0)
			return sn_errf(e, SN_EINPUT, "slice: bad axis or zero step");
		int64_t len = ir_slice_axis(xs->d[a], at->starts.v[i], at->ends.v[i], step, &first);
		if (len != n->shape.d[a])
			return sn_errf(e, SN_EINTERNAL, "slice: axis %d takes %" PRId64 " elements, the type says %" PRId64,
				       a, len, n->shape.d[a]);
		if (len > 0)
			base += first * ist[a];
		st[a] = ist[a] * step;
	}
	return render_view(g, r, base, st, stp, e);
}

static int render_transpose(const ir_graph *g, ir_ref r, cg_step *stp, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_ints *p = &n->attrs->perm;
	const ir_shape *xs = &g->nodes[n->in[0]].shape;
	int64_t ist[IR_MAX_RANK], st[IR_MAX_RANK];
	if (p->n != xs->rank)
		return sn_errf(e, SN_EINPUT, "transpose: perm does not match the rank");
	strides_of(xs, ist);
	for (int d = 0; d < p->n; d++) {
		if (p->v[d] < 0 || p->v[d] >= p->n)
			return sn_errf(e, SN_EINPUT, "transpose: perm entry %" PRId64 " out of range", p->v[d]);
		st[d] = ist[p->v[d]];
	}
	return render_view(g, r, 0, st, stp, e);
}

static int render_expand(const ir_graph *g, ir_ref r, cg_step *stp, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_shape *xs = &g->nodes[n->in[0]].shape, *os = &n->shape;
	int64_t st[IR_MAX_RANK] = {0};
	if (xs->rank > os->rank)
		return sn_errf(e, SN_EINPUT, "expand: target has fewer dims than the operand");
	int64_t acc = 1;
	for (int d = os->rank - 1; d >= 0; d--) {
		int sd = d - (os->rank - xs->rank);
		int64_t sz = sd >= 0 ? xs->d[sd] : 1;
		if (sz != 1 && sz != os->d[d])
			return sn_errf(e, SN_EINPUT, "expand: dim %d of size %" PRId64 " does not broadcast to %" PRId64,
				       sd, sz, os->d[d]);
		st[d] = sz == 1 ? 0 : acc;
		acc *= sz;
	}
	return render_view(g, r, 0, st, stp, e);
}

static int render_split(const ir_graph *g, ir_ref r, cg_step *stp, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_attrs *at = n->attrs;
	const ir_shape *xs = &g->nodes[n->in[0]].shape;
	int a = ir_axis(at->axis, xs->rank);
	if (a < 0 || at->index < 0 || at->index >= at->sizes.n)
		return sn_errf(e, SN_EINPUT, "split: axis or index out of range");
	int64_t start = 0, ist[IR_MAX_RANK];
	for (int64_t i = 0; i < at->index; i++)
		start += at->sizes.v[i];
	if (start + n->shape.d[a] > xs->d[a])
		return sn_errf(e, SN_EINPUT, "split: sizes exceed axis %d", a);
	strides_of(xs, ist);
	return render_view(g, r, start * ist[a], ist, stp, e);
}

static int64_t span(const ir_shape *s, int from, int to)
{
	int64_t p = 1;
	for (int d = from; d < to; d++)
		p *= s->d[d];
	return p;
}

/* Along the flattened (outer, axis * inner) layout, operand k owns the
 * columns [at_k, at_k + row_k) of each output row. */
static int render_concat(const ir_graph *g, ir_ref r, cg_step *stp, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_shape *os = &n->shape;
	if (n->nin > CG_MAX_BUFS - 1)
		return sn_errf(e, SN_EINPUT, "concat of %u operands is not supported by the CUDA backend yet "
			       "(at most %d)", n->nin, CG_MAX_BUFS - 1);
	int a = ir_axis(n->attrs->axis, os->rank);
	if (a < 0)
		return sn_errf(e, SN_EINPUT, "concat: axis %" PRId64 " out of range", n->attrs->axis);
	int64_t inner = span(os, a + 1, os->rank), orow = os->d[a] * inner;
	sn_buf b = {0};
	char config[48];
	snprintf(config, sizeof config, "block=%d operands=%u", BLOCK, n->nin);
	open_kernel(&b, g, r, config, n->nin);
	if (orow > 0)
		sn_buf_printf(&b, "\t\tlong o = i / %" PRId64 "L, j = i - o * %" PRId64 "L;\n", orow, orow);
	int64_t at = 0;
	bool first = true;
	for (uint32_t k = 0; k < n->nin; k++) {
		const ir_shape *xs = &g->nodes[n->in[k]].shape;
		int64_t row = xs->d[a] * inner;
		if (row == 0)
			continue;
		if (at + row > orow) {
			sn_buf_free(&b);
			return sn_errf(e, SN_EINTERNAL, "concat: operands overflow the output");
		}
		bool last = at + row == orow;
		if (last)
			sn_buf_printf(&b, "\t\t%s\n", first ? "{" : "else");
		else
			sn_buf_printf(&b, "\t\t%sif (j < %" PRId64 "L)\n", first ? "" : "else ", at + row);
		sn_buf_printf(&b, "\t\t\tout[i] = in%u[o * %" PRId64 "L + j - %" PRId64 "L];\n", k, row, at);
		if (last && first)
			sn_buf_puts(&b, "\t\t}\n");
		first = false;
		at += row;
	}
	return close_kernel(&b, g, r, n->nin, stp, e);
}

/* ONNX Gather. A negative index counts from the end; an index still out of
 * range (the reference refuses it, a kernel cannot) is clamped to the axis,
 * so a bad index reads a valid row instead of memory out of bounds. */
static int render_gather(const ir_graph *g, ir_ref r, cg_step *stp, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_shape *xs = &g->nodes[n->in[0]].shape, *is = &g->nodes[n->in[1]].shape;
	int a = ir_axis(n->attrs->axis, xs->rank);
	if (a < 0)
		return sn_errf(e, SN_EINPUT, "gather: axis %" PRId64 " out of range", n->attrs->axis);
	ir_dtype it = g->nodes[n->in[1]].dtype;
	if (it != IR_I32 && it != IR_I64)
		return sn_errf(e, SN_EINPUT, "gather: indices must be i32 or i64");
	int64_t len = xs->d[a], inner = span(xs, a + 1, xs->rank), ni = ir_numel(is);
	sn_buf b = {0};
	char config[64];
	snprintf(config, sizeof config, "block=%d out-of-range indices clamp", BLOCK);
	open_kernel(&b, g, r, config, 2);
	if (len == 0 || ni == 0 || inner == 0) {
		sn_buf_puts(&b, "\t\t(void)in0;\n\t\t(void)in1;\n"); /* nothing to read: the output is empty */
		return close_kernel(&b, g, r, 2, stp, e);
	}
	sn_buf_printf(&b,
		      "\t\tlong c = i %% %" PRId64 "L, t = i / %" PRId64 "L %% %" PRId64 "L, o = i / %" PRId64 "L;\n"
		      "\t\tlong long ix = in1[t];\n"
		      "\t\tif (ix < 0)\n\t\t\tix += %" PRId64 "LL;\n"
		      "\t\tix = ix < 0 ? 0 : ix > %" PRId64 "LL ? %" PRId64 "LL : ix;\n"
		      "\t\tout[i] = in0[(o * %" PRId64 "L + (long)ix) * %" PRId64 "L + c];\n",
		      inner, inner, ni, inner * ni, len, len - 1, len - 1, len, inner);
	return close_kernel(&b, g, r, 2, stp, e);
}

/* The constant in the output dtype's storage, as a C literal of its
 * bits (so that f16/bf16/fp8 need no conversion code). */
static void pad_const(ir_dtype t, double v, char *out, size_t cap)
{
	uint64_t bits = 0;
	ir_store(t, &bits, 0, v);
	switch (t) {
	case IR_F32: {
		uint32_t u;
		memcpy(&u, &bits, 4);
		snprintf(out, cap, "__uint_as_float(0x%08" PRIx32 "u)", u);
		return;
	}
	case IR_I64: {
		int64_t x;
		memcpy(&x, &bits, 8);
		if (x == INT64_MIN)
			snprintf(out, cap, "(-9223372036854775807LL - 1)");
		else
			snprintf(out, cap, "%" PRId64 "LL", x);
		return;
	}
	case IR_I32: {
		int32_t x;
		memcpy(&x, &bits, 4);
		snprintf(out, cap, "(int)%" PRId64 "LL", (int64_t)x);
		return;
	}
	case IR_I8: {
		int8_t x;
		memcpy(&x, &bits, 1);
		snprintf(out, cap, "(signed char)%d", x);
		return;
	}
	case IR_F16:
	case IR_BF16: {
		uint16_t x;
		memcpy(&x, &bits, 2);
		snprintf(out, cap, "(unsigned short)0x%04x", x);
		return;
	}
	default: {
		uint8_t x;
		memcpy(&x, &bits, 1);
		snprintf(out, cap, "(unsigned char)0x%02x", x);
		return;
	}
	}
}

static int render_pad(const ir_graph *g, ir_ref r, cg_step *stp, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_attrs *at = n->attrs;
	const ir_shape *xs = &g->nodes[n->in[0]].shape, *os = &n->shape;
	int rk = xs->rank;
	if (at->pad.n != 2 * rk)
		return sn_errf(e, SN_EINPUT, "pad: needs %d entries", 2 * rk);
	int64_t ist[IR_MAX_RANK];
	strides_of(xs, ist);
	sn_buf b = {0};
	char config[64];
	snprintf(config, sizeof config, "block=%d", BLOCK);
	cg_emit_spec(&b, g, r, config);
	/* the source index along a dim of size d for output index o padded
	 * by lo in front; -1 for the constant (ref_move.c's pad_src) */
	sn_buf_puts(&b, "__device__ __forceinline__ long sn_pad_src(long o, long lo, long d, int mode)\n"
			"{\n"
			"\tlong i = o - lo;\n"
			"\tif (i >= 0 && i < d)\n\t\treturn i;\n"
			"\tif (mode == 0 || d == 0)\n\t\treturn -1;\n"
			"\tif (mode == 2)\n\t\treturn i < 0 ? 0 : d - 1;\n"
			"\tif (d == 1)\n\t\treturn 0;\n"
			"\tlong period = 2 * (d - 1);\n"
			"\ti %= period;\n"
			"\tif (i < 0)\n\t\ti += period;\n"
			"\treturn i < d ? i : period - i;\n"
			"}\n");
	/* open_kernel without a second spec comment */
	sn_buf_printf(&b, "extern \"C\" __global__ void __launch_bounds__(256) " CG_NAME
			  "(const %s *__restrict__ in0, %s *__restrict__ out)\n{\n",
		      cg_ctype(n->dtype), cg_ctype(n->dtype));
	char cval[64];
	pad_const(n->dtype, at->value, cval, sizeof cval);
	int mode = at->mode == IR_PAD_CONSTANT ? 0 : at->mode == IR_PAD_REFLECT ? 1 : 2;
	sn_buf_printf(&b, "\tfor (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < %" PRId64 "L; "
			  "i += (long)gridDim.x * blockDim.x) {\n"
			  "\t\tlong rem = i, src = 0, s;\n",
		      ir_numel(os));
	for (int d = rk - 1; d >= 0; d--) {
		sn_buf_printf(&b, "\t\ts = sn_pad_src(rem %% %" PRId64 "L, %" PRId64 "L, %" PRId64 "L, %d);\n",
			      os->d[d] ? os->d[d] : 1, at->pad.v[d], xs->d[d], mode);
		sn_buf_printf(&b, "\t\tsrc = s < 0 || src < 0 ? -1 : src + s * %" PRId64 "L;\n", ist[d]);
		if (d > 0)
			sn_buf_printf(&b, "\t\trem /= %" PRId64 "L;\n", os->d[d] ? os->d[d] : 1);
	}
	sn_buf_printf(&b, "\t\tout[i] = src < 0 ? %s : in0[src];\n", cval);
	return close_kernel(&b, g, r, 1, stp, e);
}

static int render_iota(const ir_graph *g, ir_ref r, cg_step *stp, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_shape *os = &n->shape;
	int a = ir_axis(n->attrs->axis, os->rank);
	if (a < 0)
		return sn_errf(e, SN_EINPUT, "iota: axis %" PRId64 " out of range", n->attrs->axis);
	int64_t inner = span(os, a + 1, os->rank), len = os->d[a];
	sn_buf b = {0};
	char config[32];
	snprintf(config, sizeof config, "block=%d", BLOCK);
	open_kernel(&b, g, r, config, 0);
	const char *dn = ir_dtype_name(n->dtype);
	if (inner == 0 || len == 0)
		sn_buf_puts(&b, "\t\t(void)out;\n");
	else
		sn_buf_printf(&b, "\t\tlong v = i / %" PRId64 "L %% %" PRId64 "L;\n\t\tst_%s(out, i, (%s)v);\n",
			      inner, len, dn, ir_dtype_is_float(n->dtype) ? "float" : "long long");
	return close_kernel(&b, g, r, 0, stp, e);
}

int cg_render_move(const ir_graph *g, ir_ref r, const cg_target *t, const cg_config *want, cg_step *st, sn_err *e)
{
	if (want)
		return sn_errf(e, SN_EUSAGE, "only the default config is built for this kernel family yet");
	const ir_node *n = &g->nodes[r];
	(void)t;
	if (cg_is_alias(g, n)) {
		st->kind = CG_STEP_ALIAS;
		return SN_OK;
	}
	switch (n->op) {
	case IR_OP_transpose: return render_transpose(g, r, st, e);
	case IR_OP_expand: return render_expand(g, r, st, e);
	case IR_OP_concat: return render_concat(g, r, st, e);
	case IR_OP_split: return render_split(g, r, st, e);
	case IR_OP_slice: return render_slice(g, r, st, e);
	case IR_OP_gather: return render_gather(g, r, st, e);
	case IR_OP_pad: return render_pad(g, r, st, e);
	case IR_OP_iota: return render_iota(g, r, st, e);
	case IR_OP_gather_elements:
	case IR_OP_scatter_elements:
	case IR_OP_scatter_nd: return cg_render_index(g, r, t, want, st, e);
	default: return sn_errf(e, SN_EINPUT, "%s is not supported by the CUDA backend", ir_ops[n->op].name);
	}
}
