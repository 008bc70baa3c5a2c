/* cg_index.c: indexing by tensors: gather_elements, scatter_elements and
 * scatter_nd, as in ir/ref/ref_index.c. Every kernel walks its output
 * contiguously, one element per thread (grid-stride loop), so no two
 * threads write one element and no kernel needs a second pass:
 *   gather_elements   the element of data that the index names
 *   scatter_elements  data's element, then each update aimed at it, in
 *                     the order of the index along the axis (the
 *                     reference's row-major order)
 *   scatter_nd        data's element, then each update whose index tuple
 *                     names its slice, in tuple order
 * A scatter costs one read of the indices along the axis (scatter_nd: all
 * index tuples) per output element: right for the small index tensors of
 * masks and caches, slow for large ones. Out-of-range indices, an error on
 * the reference, are clamped (gather) or never match (scatter), so a bad
 * index never reaches memory out of bounds. Reductions compute in float
 * (integers in long long, wrapping) and store with the dtype's rounding. */
#include "codegen/cg_render.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config); /* cg_common.c */

static void strides_of(const ir_shape *s, int64_t *st)
{
	int64_t acc = 1;
	for (int d = s->rank - 1; d >= 0; d--) {
		st[d] = acc;
		acc *= s->d[d];
	}
}

static void open_kernel(sn_buf *b, const ir_graph *g, ir_ref r, const char *config, int block)
{
	const ir_node *n = &g->nodes[r];
	cg_emit_spec(b, g, r, config);
	if (n->op != IR_OP_gather_elements && n->attrs->reduction != IR_SCATTER_NONE)
		cg_emit_dtype_helpers(b, n->dtype);
	sn_buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d) " CG_NAME "(", block);
	for (uint32_t k = 0; k < n->nin; k++) {
		const ir_node *x = &g->nodes[n->in[k]];
		sn_buf_printf(b, "const %s *__restrict__ in%u, ", cg_ctype(x->dtype), k);
	}
	sn_buf_printf(b, "%s *__restrict__ out)\n{\n", cg_ctype(n->dtype));
	sn_buf_printf(b, "\tfor (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < %" PRId64 "L; "
			 "i += (long)gridDim.x * blockDim.x) {\n",
		      ir_numel(&n->shape));
}

static int close_kernel(sn_buf *b, const ir_graph *g, ir_ref r, cg_step *st, int block, int max_grid, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	sn_buf_puts(b, "\t}\n}\n");
	st->kind = CG_STEP_KERNEL;
	cg_kernel *k = &st->k;
	int64_t blocks = (ir_numel(&n->shape) + block - 1) / block;
	k->grid[0] = (unsigned)(blocks < 1 ? 1 : blocks > max_grid ? max_grid : blocks);
	k->grid[1] = k->grid[2] = 1;
	k->block[0] = (unsigned)block;
	k->block[1] = k->block[2] = 1;
	k->smem = 0;
	k->cfg = (cg_config){.block = block};
	k->nbufs = n->nin + 1;
	for (uint32_t i = 0; i < n->nin; i++)
		k->bufs[i] = n->in[i];
	k->bufs[n->nin] = r;
	return cg_finish(k, ir_ops[n->op].name, b, e);
}

/* The statement combining update in2[UI] into the local `v` (the output
 * element's value so far). */
static void emit_combine(sn_buf *b, const ir_node *n, const char *ui, const char *ind)
{
	ir_scatter red = n->attrs->reduction;
	if (red == IR_SCATTER_NONE) {
		sn_buf_printf(b, "%sv = in2[%s];\n", ind, ui);
		return;
	}
	const char *dn = ir_dtype_name(n->dtype);
	bool fl = ir_dtype_is_float(n->dtype);
	const char *ty = fl ? "float" : "long long";
	sn_buf_printf(b, "%s{\n%s\t%s x = ld_%s(&v, 0), y = ld_%s(in2, %s);\n", ind, ind, ty, dn, dn, ui);
	const char *expr;
	switch (red) {
	case IR_SCATTER_ADD: expr = fl ? "x + y" : "(long long)((unsigned long long)x + (unsigned long long)y)"; break;
	case IR_SCATTER_MUL: expr = fl ? "x * y" : "(long long)((unsigned long long)x * (unsigned long long)y)"; break;
	case IR_SCATTER_MAX:
		expr = fl ? "(x != x || y != y) ? __uint_as_float(0x7fc00000u) : (x > y ? x : y)" : "x > y ? x : y";
		break;
	default:
		expr = fl ? "(x != x || y != y) ? __uint_as_float(0x7fc00000u) : (x < y ? x : y)" : "x < y ? x : y";
		break;
	}
	sn_buf_printf(b, "%s\tst_%s(&v, 0, %s);\n%s}\n", ind, dn, expr, ind);
}

/* The output index i decomposed into coordinates c0.. over shape s. */
static void emit_coords(sn_buf *b, const ir_shape *s)
{
	sn_buf_puts(b, "\t\tlong rem = i;\n");
	for (int d = s->rank - 1; d >= 0; d--) {
		if (d > 0)
			sn_buf_printf(b, "\t\tlong c%d = rem %% %" PRId64 "L;\n\t\trem /= %" PRId64 "L;\n", d,
				      s->d[d] ? s->d[d] : 1, s->d[d] ? s->d[d] : 1);
		else
			sn_buf_puts(b, "\t\tlong c0 = rem;\n");
	}
}

static int render_gather_elements(const ir_graph *g, ir_ref r, int block, cg_step *stp, sn_err *e)
{
	const int max_grid = 8192;
	const ir_node *n = &g->nodes[r];
	const ir_shape *xs = &g->nodes[n->in[0]].shape;
	int a = ir_axis(n->attrs->axis, xs->rank);
	if (a < 0)
		return sn_errf(e, SN_EINPUT, "gather_elements: axis out of range");
	int64_t xst[IR_MAX_RANK];
	strides_of(xs, xst);
	sn_buf b = {0};
	char config[64];
	snprintf(config, sizeof config, "block=%d out-of-range indices clamp", block);
	open_kernel(&b, g, r, config, block);
	if (ir_numel(xs) == 0) {
		sn_buf_puts(&b, "\t\t(void)in0;\n\t\t(void)in1;\n");
		return close_kernel(&b, g, r, stp, block, max_grid, e);
	}
	emit_coords(&b, &n->shape);
	int64_t len = xs->d[a];
	sn_buf_printf(&b, "\t\tlong long ix = in1[i];\n\t\tif (ix < 0)\n\t\t\tix += %" PRId64 "LL;\n"
			  "\t\tix = ix < 0 ? 0 : ix > %" PRId64 "LL ? %" PRId64 "LL : ix;\n\t\tlong src = 0;\n",
		      len, len - 1, len - 1);
	for (int d = 0; d < xs->rank; d++) {
		if (d == a)
			sn_buf_printf(&b, "\t\tsrc += (long)ix * %" PRId64 "L;\n\t\t(void)c%d;\n", xst[d], d);
		else
			sn_buf_printf(&b, "\t\tsrc += c%d * %" PRId64 "L;\n", d, xst[d]);
	}
	sn_buf_puts(&b, "\t\tout[i] = in0[src];\n");
	return close_kernel(&b, g, r, stp, block, max_grid, e);
}

static int render_scatter_elements(const ir_graph *g, ir_ref r, int block, cg_step *stp, sn_err *e)
{
	const int max_grid = 8192;
	const ir_node *n = &g->nodes[r];
	const ir_shape *xs = &n->shape, *is = &g->nodes[n->in[1]].shape;
	int a = ir_axis(n->attrs->axis, xs->rank);
	if (a < 0)
		return sn_errf(e, SN_EINPUT, "scatter_elements: axis out of range");
	int64_t ist[IR_MAX_RANK];
	strides_of(is, ist);
	sn_buf b = {0};
	char config[64];
	snprintf(config, sizeof config, "block=%d per-output scan", block);
	open_kernel(&b, g, r, config, block);
	emit_coords(&b, xs);
	sn_buf_printf(&b, "\t\t%s v = in0[i];\n", cg_ctype(n->dtype));
	bool any = ir_numel(is) > 0;
	/* the updates that can reach this element: those at the same
	 * coordinates outside the axis, inside the indices' shape */
	if (any) {
		sn_buf_puts(&b, "\t\tif (1");
		for (int d = 0; d < xs->rank; d++)
			if (d != a && is->d[d] < xs->d[d])
				sn_buf_printf(&b, " && c%d < %" PRId64 "L", d, is->d[d]);
		sn_buf_puts(&b, ") {\n\t\t\tlong base = 0");
		for (int d = 0; d < xs->rank; d++)
			if (d != a)
				sn_buf_printf(&b, " + c%d * %" PRId64 "L", d, ist[d]);
		sn_buf_printf(&b, ";\n\t\t\tfor (long j = 0; j < %" PRId64 "L; j++) {\n"
				  "\t\t\t\tlong k = base + j * %" PRId64 "L;\n"
				  "\t\t\t\tlong long ix = in1[k];\n"
				  "\t\t\t\tif (ix < 0)\n\t\t\t\t\tix += %" PRId64 "LL;\n"
				  "\t\t\t\tif (ix != c%d)\n\t\t\t\t\tcontinue;\n",
			      is->d[a], ist[a], xs->d[a], a);
		emit_combine(&b, n, "k", "\t\t\t\t");
		sn_buf_puts(&b, "\t\t\t}\n\t\t}\n");
	} else {
		sn_buf_puts(&b, "\t\t(void)in1;\n\t\t(void)in2;\n");
	}
	for (int d = 0; d < xs->rank; d++)
		sn_buf_printf(&b, "\t\t(void)c%d;\n", d);
	sn_buf_puts(&b, "\t\tout[i] = v;\n");
	return close_kernel(&b, g, r, stp, block, max_grid, e);
}

static int render_scatter_nd(const ir_graph *g, ir_ref r, int block, cg_step *stp, sn_err *e)
{
	const int max_grid = 8192;
	const ir_node *n = &g->nodes[r];
	const ir_shape *xs = &n->shape, *is = &g->nodes[n->in[1]].shape;
	int q = is->rank;
	int64_t k = q ? is->d[q - 1] : 0;
	if (q < 1 || k < 1 || k > xs->rank)
		return sn_errf(e, SN_EINPUT, "scatter_nd: bad indices shape");
	int64_t m = ir_numel(is) / k, slice = 1;
	for (int d = (int)k; d < xs->rank; d++)
		slice *= xs->d[d];
	sn_buf b = {0};
	char config[64];
	snprintf(config, sizeof config, "block=%d per-output scan", block);
	open_kernel(&b, g, r, config, block);
	emit_coords(&b, xs);
	sn_buf_printf(&b, "\t\t%s v = in0[i];\n", cg_ctype(n->dtype));
	if (m > 0 && slice > 0) {
		sn_buf_printf(&b, "\t\tlong s = i %% %" PRId64 "L;\n"
				  "\t\tfor (long t = 0; t < %" PRId64 "L; t++) {\n"
				  "\t\t\tlong long ix;\n",
			      slice, m);
		for (int64_t j = 0; j < k; j++)
			sn_buf_printf(&b, "\t\t\tix = in1[t * %" PRId64 "L + %" PRId64 "L];\n"
					  "\t\t\tif (ix < 0)\n\t\t\t\tix += %" PRId64 "LL;\n"
					  "\t\t\tif (ix != c%" PRId64 ")\n\t\t\t\tcontinue;\n",
				      k, j, xs->d[j], j);
		sn_buf_printf(&b, "\t\t\tlong u = t * %" PRId64 "L + s;\n", slice);
		emit_combine(&b, n, "u", "\t\t\t");
		sn_buf_puts(&b, "\t\t}\n");
	} else {
		sn_buf_puts(&b, "\t\t(void)in1;\n\t\t(void)in2;\n");
	}
	for (int d = 0; d < xs->rank; d++)
		sn_buf_printf(&b, "\t\t(void)c%d;\n", d);
	sn_buf_puts(&b, "\t\tout[i] = v;\n");
	return close_kernel(&b, g, r, stp, block, max_grid, e);
}

/* The threads per block a config asks for (default 256); SN_EUSAGE for
 * one that is not a multiple of 32 in [32, 1024]. Shared with cg_scan.c. */
int cg_block_of(const ir_graph *g, ir_ref r, const cg_config *want, int def, int *block, sn_err *e)
{
	*block = def;
	if (!want || !want->block)
		return SN_OK;
	if (want->block < 32 || want->block > 1024 || want->block % 32)
		return sn_errf(e, SN_EUSAGE, "%s: block %d is not a multiple of 32 in [32, 1024]",
			       ir_ops[g->nodes[r].op].name, (int)want->block);
	*block = want->block;
	return SN_OK;
}

int cg_render_index(const ir_graph *g, ir_ref r, const cg_target *t, const cg_config *want, cg_step *st, sn_err *e)
{
	int block;
	(void)t;
	if (cg_block_of(g, r, want, 256, &block, e))
		return e->code;
	switch (g->nodes[r].op) {
	case IR_OP_gather_elements: return render_gather_elements(g, r, block, st, e);
	case IR_OP_scatter_elements: return render_scatter_elements(g, r, block, st, e);
	case IR_OP_scatter_nd: return render_scatter_nd(g, r, block, st, e);
	default: return sn_errf(e, SN_EINPUT, "%s is not an indexing op", ir_ops[g->nodes[r].op].name);
	}
}
