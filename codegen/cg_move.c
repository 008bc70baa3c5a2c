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
 *                                    the axis (one kernel up to 7 operands;
 *                                    more: one kernel per 7, each over its
 *                                    own columns of the output); 16 bytes
 *                                    at a time where the rows allow
 *   gather                           the index operand picks the row
 *   pad                              per dim, the source index or the
 *                                    constant (reflect and edge modes)
 *   iota                             the index along the axis
 * reshape, flatten, squeeze and unsqueeze are aliases (views that move no
 * data): the executor gives them their operand's buffer. */
#include "codegen/cg_render.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config); /* cg_common.c */
void cg_emit_spec_part(sn_buf *b, const ir_graph *g, ir_ref r, const char *part, const char *config);

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

/* Opens the kernel: spec comment (with part, when not NULL: which share of
 * the node it computes), signature (operands then out) and the
 * grid-stride loop over `total` elements with index i. The operands are
 * the node's which[0..nin), or its first nin when which is NULL. */
static void open_kernel_of(sn_buf *b, const ir_graph *g, ir_ref r, const char *part, const char *config,
			   uint32_t nin, const uint32_t *which, int64_t total)
{
	const ir_node *n = &g->nodes[r];
	if (part)
		cg_emit_spec_part(b, g, r, part, config);
	else
		cg_emit_spec(b, g, r, config);
	if (n->op == IR_OP_iota)
		cg_emit_dtype_helpers(b, n->dtype);
	sn_buf_puts(b, "extern \"C\" __global__ void __launch_bounds__(256) " CG_NAME "(");
	for (uint32_t k = 0; k < nin; k++) {
		const ir_node *x = &g->nodes[n->in[which ? which[k] : k]];
		sn_buf_printf(b, "const %s *__restrict__ in%u, ", cg_ctype(x->dtype), k);
	}
	sn_buf_printf(b, "%s *__restrict__ out)\n{\n", cg_ctype(n->dtype));
	sn_buf_printf(b, "\tfor (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < %" PRId64 "L; "
			 "i += (long)gridDim.x * blockDim.x) {\n",
		      total);
}

/* The whole output: spec without a part, the node's operands in order. */
static void open_kernel(sn_buf *b, const ir_graph *g, ir_ref r, const char *config, uint32_t nin)
{
	open_kernel_of(b, g, r, NULL, config, nin, NULL, ir_numel(&g->nodes[r].shape));
}

/* Closes the loop and fills k: a launch over `total` elements with the
 * buffers of operands which[0..nin) (NULL: the first nin) and r's own. */
static int finish_kernel(sn_buf *b, const ir_graph *g, ir_ref r, uint32_t nin, const uint32_t *which,
			 int64_t total, cg_kernel *k, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	sn_buf_puts(b, "\t}\n}\n");
	int64_t blocks = (total + BLOCK - 1) / BLOCK;
	k->grid[0] = (unsigned)(blocks < 1 ? 1 : blocks > MAX_GRID ? MAX_GRID : blocks);
	k->grid[1] = k->grid[2] = 1;
	k->block[0] = BLOCK;
	k->block[1] = k->block[2] = 1;
	k->smem = 0;
	k->nbufs = nin + 1;
	for (uint32_t i = 0; i < nin; i++)
		k->bufs[i] = n->in[which ? which[i] : i];
	k->bufs[nin] = r;
	return cg_finish(k, ir_ops[n->op].name, b, e);
}

static int close_kernel(sn_buf *b, const ir_graph *g, ir_ref r, uint32_t nin, cg_step *st, sn_err *e)
{
	st->kind = CG_STEP_KERNEL;
	return finish_kernel(b, g, r, nin, NULL, ir_numel(&g->nodes[r].shape), &st->k, e);
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

/* Concat's operands per kernel: each kernel takes them and the output. */
#define CAT_PER (CG_MAX_BUFS - 1)

/* The body of a concat kernel, after `o` (the row) and `j` (the column
 * within the kernel's columns) are set: the operand whose columns hold j,
 * an if-chain over items 0..cnt) (parameter in<param[t]>, row[t] columns
 * from column at[t] on), written to out[dst]. vec: a column is 16 bytes
 * (a uint4) instead of an element. */
static void emit_cat_chain(sn_buf *b, uint32_t cnt, const uint32_t *param, const int64_t *row, const int64_t *at,
			   int64_t width, const char *dst, bool vec)
{
	for (uint32_t t = 0; t < cnt; t++) {
		bool first = t == 0, last = at[t] + row[t] == width;
		if (last)
			sn_buf_printf(b, "\t\t%s\n", first ? "{" : "else");
		else
			sn_buf_printf(b, "\t\t%sif (j < %" PRId64 "L)\n", first ? "" : "else ", at[t] + row[t]);
		if (vec)
			sn_buf_printf(b, "\t\t\t((uint4 *)out)[%s] = ((const uint4 *)in%u)[o * %" PRId64 "L + j - %" PRId64 "L];\n",
				      dst, param[t], row[t], at[t]);
		else
			sn_buf_printf(b, "\t\t\tout[%s] = in%u[o * %" PRId64 "L + j - %" PRId64 "L];\n", dst, param[t],
				      row[t], at[t]);
		if (last && first)
			sn_buf_puts(b, "\t\t}\n");
	}
}

/* Elements per 16-byte access when the output's rows and every
 * operand's are whole numbers of 16 bytes (every buffer starts 256-byte
 * aligned, so every row and operand column then starts on a vector);
 * else 1. */
static int64_t cat_vec(size_t es, int64_t orow, const int64_t *row, uint32_t m)
{
	if (es == 0 || es >= 16 || 16 % es)
		return 1;
	int64_t v = 16 / (int64_t)es;
	if (orow % v)
		return 1;
	for (uint32_t t = 0; t < m; t++)
		if (row[t] % v)
			return 1;
	return v;
}

static void cat_config(char *config, size_t cap, uint32_t nops, int64_t v)
{
	int off = snprintf(config, cap, "block=%d operands=%u", BLOCK, nops);
	if (v > 1)
		snprintf(config + off, cap - (size_t)off, " vec=%" PRId64, v);
}

/* One kernel of a concat of many operands: the non-empty operands
 * ops[0..cnt) (their columns of each output row: row[t] from at[t] on,
 * together [c0, c0 + width), in columns of v elements, of orow) copied
 * into their columns of the output, a grid-stride loop over outer * width
 * columns. part/nparts: which. */
static int render_concat_part(const ir_graph *g, ir_ref r, const uint32_t *ops, uint32_t cnt, const int64_t *row,
			      const int64_t *at, int64_t outer, int64_t orow, int64_t v, uint32_t part,
			      uint32_t nparts, cg_kernel *k, sn_err *e)
{
	int64_t c0 = cnt ? at[0] : 0, width = cnt ? at[cnt - 1] + row[cnt - 1] - c0 : 0;
	char what[64 + 12 * CAT_PER], config[64];
	int off = snprintf(what, sizeof what, "%u of %u, columns [%" PRId64 ", %" PRId64 ") from operands", part + 1,
			   nparts, c0 * v, (c0 + width) * v);
	for (uint32_t t = 0; t < cnt; t++)
		off += snprintf(what + off, sizeof what - (size_t)off, " %u", ops[t]);
	if (!cnt)
		snprintf(what + off, sizeof what - (size_t)off, " none");
	cat_config(config, sizeof config, cnt, v);
	sn_buf b = {0};
	open_kernel_of(&b, g, r, what, config, cnt, ops, outer * width);
	if (cnt && width > 0) {
		uint32_t param[CAT_PER];
		int64_t rel[CAT_PER];
		for (uint32_t t = 0; t < cnt; t++) {
			param[t] = t;
			rel[t] = at[t] - c0;
		}
		sn_buf_printf(&b, "\t\tlong o = i / %" PRId64 "L, j = i - o * %" PRId64 "L;\n", width, width);
		char dst[64];
		snprintf(dst, sizeof dst, "o * %" PRId64 "L + j + %" PRId64 "L", orow, c0);
		emit_cat_chain(&b, cnt, param, row, rel, width, dst, v > 1);
	} else {
		sn_buf_puts(&b, "\t\t(void)out;\n"); /* an empty output: nothing to copy */
	}
	return finish_kernel(&b, g, r, cnt, ops, outer * width, k, e);
}

/* Along the flattened (outer, axis * inner) layout, operand k owns the
 * columns [at_k, at_k + row_k) of each output row; 16 bytes per column
 * (uint4 loads and stores) where every row is whole vectors. Up to CAT_PER operands:
 * one kernel, each element picking its operand. More: one kernel per
 * CAT_PER non-empty operands (st->k, then st->more), each over its own
 * columns only, so the output is written once in all and every kernel
 * is a plain copy with no cap on the operand count; the launches are few
 * (8 operands: 2, 200: 29) and each moves its share of the bytes. */
static int render_concat(const ir_graph *g, ir_ref r, cg_step *stp, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_shape *os = &n->shape;
	int a = ir_axis(n->attrs->axis, os->rank);
	if (a < 0)
		return sn_errf(e, SN_EINPUT, "concat: axis %" PRId64 " out of range", n->attrs->axis);
	int64_t inner = span(os, a + 1, os->rank), orow = os->d[a] * inner, outer = span(os, 0, a);
	uint32_t *ops = malloc((n->nin ? n->nin : 1) * sizeof *ops);
	int64_t *row = malloc((n->nin ? n->nin : 1) * sizeof *row), *at = malloc((n->nin ? n->nin : 1) * sizeof *at);
	if (!ops || !row || !at) {
		free(ops);
		free(row);
		free(at);
		return sn_errf(e, SN_EINTERNAL, "concat: out of memory");
	}
	/* the non-empty operands and their columns */
	uint32_t m = 0;
	int64_t col = 0;
	for (uint32_t k = 0; k < n->nin; k++) {
		int64_t w = g->nodes[n->in[k]].shape.d[a] * inner;
		if (w == 0)
			continue;
		if (col + w > orow) {
			free(ops);
			free(row);
			free(at);
			return sn_errf(e, SN_EINTERNAL, "concat: operands overflow the output");
		}
		ops[m] = k, row[m] = w, at[m] = col;
		m++;
		col += w;
	}
	/* in columns of v elements from here on */
	int64_t v = cat_vec(ir_dtype_size(n->dtype), orow, row, m);
	orow /= v;
	for (uint32_t t = 0; t < m; t++)
		row[t] /= v, at[t] /= v;
	int rc = SN_OK;
	stp->kind = CG_STEP_KERNEL;
	if (n->nin <= CAT_PER) {
		/* one kernel taking every operand, empty ones too */
		uint32_t param[CAT_PER];
		for (uint32_t t = 0; t < m; t++)
			param[t] = ops[t];
		sn_buf b = {0};
		char config[64];
		cat_config(config, sizeof config, n->nin, v);
		open_kernel_of(&b, g, r, NULL, config, n->nin, NULL, outer * orow);
		if (orow > 0)
			sn_buf_printf(&b, "\t\tlong o = i / %" PRId64 "L, j = i - o * %" PRId64 "L;\n", orow, orow);
		emit_cat_chain(&b, m, param, row, at, orow, "i", v > 1);
		rc = finish_kernel(&b, g, r, n->nin, NULL, outer * orow, &stp->k, e);
	} else {
		if (outer == 0)
			m = 0; /* an empty output: one kernel that copies nothing */
		uint32_t nparts = m ? (m + CAT_PER - 1) / CAT_PER : 1;
		cg_kernel *more = nparts > 1 ? calloc(nparts - 1, sizeof *more) : NULL;
		if (nparts > 1 && !more)
			rc = sn_errf(e, SN_EINTERNAL, "concat: out of memory");
		uint32_t done = 0;
		for (; !rc && done < nparts; done++) {
			uint32_t t0 = done * CAT_PER, cnt = m - t0 < CAT_PER ? m - t0 : CAT_PER;
			cg_kernel *k = done ? &more[done - 1] : &stp->k;
			rc = render_concat_part(g, r, ops + t0, m ? cnt : 0, row + t0, at + t0, outer, orow, v, done,
						nparts, k, e);
		}
		if (rc) {
			for (uint32_t i = 0; more && i + 1 < nparts; i++)
				free(more[i].src);
			free(more);
		} else {
			stp->more = more;
			stp->nmore = nparts - 1;
		}
	}
	free(ops);
	free(row);
	free(at);
	return rc;
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
