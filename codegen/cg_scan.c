/* cg_scan.c: ops that walk one axis per output line: cumsum, argmax and
 * argmin, as in ir/ref/ref_reduce.c; and topk, one thread per element,
 * which counts the elements of its line that sort before it (the same
 * total order as the reference: the better value, NaN the largest, then
 * the lower index) and, when that rank is below k, writes itself there. Each thread owns one line (an outer
 * and inner position) and walks the axis in order, so neighbouring threads
 * read neighbouring inner positions (coalesced when inner > 1). cumsum
 * accumulates in f32 (long long for integers, wrapping) and rounds each
 * prefix once at the store; argmax/argmin keep the first extreme (the last
 * with select_last), NaN winning both, and write i64. A long axis with
 * few lines leaves most of the GPU idle: right for masks and positions
 * (cumsum over a [batch, seq] mask), not for large scans. */
#include "codegen/cg_render.h"

#include <inttypes.h>
#include <stdio.h>

void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config); /* cg_common.c */

static int64_t span(const ir_shape *s, int a, int z)
{
	int64_t p = 1;
	for (int d = a; d < z; d++)
		p *= s->d[d];
	return p;
}

/* topk: a thread per input element; its rank among its line, by the
 * reference's order, places it (ranks below k only). O(len) per element:
 * right for the short lines of detection heads and sampling over small
 * vocabularies. */
static int render_topk(const ir_graph *g, ir_ref r, int block, int max_grid, cg_step *st, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const ir_node *x = &g->nodes[n->in[0]];
	const ir_shape *xs = &x->shape;
	int ax = ir_axis(n->attrs->axis, xs->rank);
	if (ax < 0)
		return sn_errf(e, SN_EINPUT, "topk: axis out of range");
	int64_t outer = span(xs, 0, ax), len = xs->d[ax], inner = span(xs, ax + 1, xs->rank), k = n->attrs->k;
	int64_t total = outer * len * inner;
	const char *xn = ir_dtype_name(x->dtype);
	bool fl = ir_dtype_is_float(x->dtype);
	sn_buf b = {0};
	char config[64];
	snprintf(config, sizeof config, "block=%d element per thread", block);
	cg_emit_spec(&b, g, r, config);
	cg_emit_dtype_helpers(&b, x->dtype);
	sn_buf_printf(&b, "extern \"C\" __global__ void __launch_bounds__(%d) " CG_NAME
			  "(const %s *__restrict__ in0, %s *__restrict__ out)\n{\n",
		      block, cg_ctype(x->dtype), cg_ctype(n->dtype));
	sn_buf_printf(&b, "\tfor (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < %" PRId64 "L; "
			  "i += (long)gridDim.x * blockDim.x) {\n",
		      k > 0 ? total : 0);
	sn_buf_printf(&b, "\t\tlong j = i %% %" PRId64 "L, s = i / %" PRId64 "L %% %" PRId64 "L, o = i / %" PRId64 "L;\n"
			  "\t\tlong base = o * %" PRId64 "L + j, rank = 0;\n"
			  "\t\t%s v = ld_%s(in0, i);\n"
			  "\t\tfor (long t = 0; t < %" PRId64 "L; t++) {\n"
			  "\t\t\t%s w = ld_%s(in0, base + t * %" PRId64 "L);\n",
		      inner ? inner : 1, inner ? inner : 1, len ? len : 1, len * inner != 0 ? len * inner : 1, len * inner,
		      fl ? "float" : "long long", xn, len, fl ? "float" : "long long", xn, inner);
	if (fl)
		sn_buf_puts(&b, "\t\t\tbool nw = w != w, nv = v != v;\n"
				"\t\t\tint c = nw && nv ? 0 : nw ? -1 : nv ? 1 : w > v ? -1 : w < v ? 1 : 0;\n");
	else
		sn_buf_puts(&b, "\t\t\tint c = w > v ? -1 : w < v ? 1 : 0;\n");
	sn_buf_printf(&b, "\t\t\tc = %sc;\n"
			  "\t\t\trank += c ? c < 0 : t < s;\n"
			  "\t\t}\n"
			  "\t\tif (rank < %" PRId64 "L)\n"
			  "\t\t\tout[(o * %" PRId64 "L + rank) * %" PRId64 "L + j] = %s;\n"
			  "\t}\n}\n",
		      n->attrs->smallest ? "-" : "", k, k, inner, n->attrs->index ? "(long long)s" : "in0[i]");
	st->kind = CG_STEP_KERNEL;
	cg_kernel *kk = &st->k;
	int64_t blocks = (total + block - 1) / block;
	kk->grid[0] = (unsigned)(blocks < 1 ? 1 : blocks > max_grid ? max_grid : blocks);
	kk->grid[1] = kk->grid[2] = 1;
	kk->block[0] = (unsigned)block;
	kk->block[1] = kk->block[2] = 1;
	kk->smem = 0;
	kk->cfg = (cg_config){.block = block};
	kk->nbufs = 2;
	kk->bufs[0] = n->in[0];
	kk->bufs[1] = r;
	return cg_finish(kk, "topk", &b, e);
}

int cg_render_scan(const ir_graph *g, ir_ref r, const cg_target *t, const cg_config *want, cg_step *st, sn_err *e)
{
	const int max_grid = 8192;
	int block;
	if (cg_block_of(g, r, want, 256, &block, e))
		return e->code;
	const ir_node *n = &g->nodes[r];
	const ir_node *x = &g->nodes[n->in[0]];
	const ir_shape *xs = &x->shape;
	const char *opname = ir_ops[n->op].name;
	(void)t;
	bool scan = n->op == IR_OP_cumsum;
	if (n->op == IR_OP_topk)
		return render_topk(g, r, block, max_grid, st, e);
	if (!scan && n->op != IR_OP_argmax && n->op != IR_OP_argmin)
		return sn_errf(e, SN_EINPUT, "%s is not a scan", opname);
	int ax = ir_axis(n->attrs->axis, xs->rank);
	if (ax < 0)
		return sn_errf(e, SN_EINPUT, "%s: axis out of range", opname);
	int64_t outer = span(xs, 0, ax), len = xs->d[ax], inner = span(xs, ax + 1, xs->rank);
	int64_t lines = outer * inner;
	const char *xn = ir_dtype_name(x->dtype);
	bool fl = ir_dtype_is_float(x->dtype);
	const char *ty = fl ? "float" : "long long";

	sn_buf b = {0};
	char config[64];
	snprintf(config, sizeof config, "block=%d line per thread", block);
	cg_emit_spec(&b, g, r, config);
	cg_emit_dtype_helpers(&b, x->dtype);
	sn_buf_printf(&b, "extern \"C\" __global__ void __launch_bounds__(%d) " CG_NAME
			  "(const %s *__restrict__ in0, %s *__restrict__ out)\n{\n",
		      block, cg_ctype(x->dtype), cg_ctype(n->dtype));
	sn_buf_printf(&b, "\tfor (long l = (long)blockIdx.x * blockDim.x + threadIdx.x; l < %" PRId64 "L; "
			  "l += (long)gridDim.x * blockDim.x) {\n",
		      len > 0 ? lines : 0);
	sn_buf_printf(&b, "\t\tlong base = l / %" PRId64 "L * %" PRId64 "L + l %% %" PRId64 "L;\n",
		      inner ? inner : 1, len * inner, inner ? inner : 1);
	if (scan) {
		bool excl = n->attrs->exclusive, rev = n->attrs->reverse;
		sn_buf_printf(&b, "\t\t%s acc = 0;\n\t\tfor (long s = 0; s < %" PRId64 "L; s++) {\n", ty, len);
		if (rev)
			sn_buf_printf(&b, "\t\t\tlong at = base + (%" PRId64 "L - s) * %" PRId64 "L;\n", len - 1, inner);
		else
			sn_buf_printf(&b, "\t\t\tlong at = base + s * %" PRId64 "L;\n", inner);
		sn_buf_printf(&b, "\t\t\t%s v = ld_%s(in0, at);\n", ty, xn);
		const char *add = fl ? "acc += v;" : "acc = (long long)((unsigned long long)acc + (unsigned long long)v);";
		if (!excl)
			sn_buf_printf(&b, "\t\t\t%s\n", add);
		sn_buf_printf(&b, "\t\t\tst_%s(out, at, acc);\n", xn);
		if (excl)
			sn_buf_printf(&b, "\t\t\t%s\n", add);
		sn_buf_puts(&b, "\t\t}\n");
	} else {
		bool mx = n->op == IR_OP_argmax, last = n->attrs->select_last;
		sn_buf_printf(&b, "\t\t%s best = ld_%s(in0, base);\n\t\tlong long bi = 0;\n"
				  "\t\tfor (long k = 1; k < %" PRId64 "L; k++) {\n"
				  "\t\t\t%s v = ld_%s(in0, base + k * %" PRId64 "L);\n",
			      ty, xn, len, ty, xn, inner);
		const char *cmp = mx ? ">" : "<";
		if (fl)
			sn_buf_printf(&b, "\t\t\tbool win = best != best ? false : (v != v || v %s best);\n"
					  "\t\t\tbool tie = v == best || (v != v && best != best);\n", cmp);
		else
			sn_buf_printf(&b, "\t\t\tbool win = v %s best, tie = v == best;\n", cmp);
		sn_buf_printf(&b, "\t\t\tif (win%s) {\n\t\t\t\tbest = v;\n\t\t\t\tbi = k;\n\t\t\t}\n", last ? " || tie" : "");
		if (!last)
			sn_buf_puts(&b, "\t\t\t(void)tie;\n");
		sn_buf_printf(&b, "\t\t}\n\t\tout[l] = bi;\n");
	}
	sn_buf_puts(&b, "\t}\n}\n");
	st->kind = CG_STEP_KERNEL;
	cg_kernel *k = &st->k;
	int64_t blocks = (lines + block - 1) / block;
	k->grid[0] = (unsigned)(blocks < 1 ? 1 : blocks > max_grid ? max_grid : blocks);
	k->grid[1] = k->grid[2] = 1;
	k->block[0] = (unsigned)block;
	k->block[1] = k->block[2] = 1;
	k->smem = 0;
	k->cfg = (cg_config){.block = block};
	k->nbufs = 2;
	k->bufs[0] = n->in[0];
	k->bufs[1] = r;
	return cg_finish(k, opname, &b, e);
}
