/* cg_lower.c: graph to launch plan. One step per non-source node, in graph
 * order, from the renderer of the node's op family (cg_render.h). */
#include "codegen/cg_render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The renderer of each op kind; iota, a source with a computed value, is
 * rendered by cg_render_move. A NULL entry means the kind has no step. */
static cg_render_fn *const by_kind[] = {
	[IR_K_SOURCE] = NULL,
	[IR_K_UNARY] = cg_render_elementwise,
	[IR_K_BINARY] = cg_render_elementwise,
	[IR_K_TERNARY] = cg_render_elementwise,
	[IR_K_REDUCE] = cg_render_reduce,
	[IR_K_NORM] = cg_render_norm,
	[IR_K_CONTRACT] = cg_render_gemm,
	[IR_K_CONV] = cg_render_conv,
	[IR_K_ATTENTION] = cg_render_attention,
	[IR_K_POOL] = cg_render_pool,
	[IR_K_MOVE] = cg_render_move,
};

static cg_render_fn *renderer_of(ir_op op)
{
	if (op == IR_OP_iota)
		return cg_render_move;
	ir_kind k = ir_ops[op].kind;
	return (unsigned)k < SN_COUNT(by_kind) ? by_kind[k] : NULL;
}

bool cg_is_alias(const ir_graph *g, const ir_node *n)
{
	(void)g;
	switch (n->op) {
	case IR_OP_reshape:
	case IR_OP_flatten:
	case IR_OP_squeeze:
	case IR_OP_unsqueeze: return n->nin == 1;
	default: return false;
	}
}

/* "node 12 (%c1, conv2d)" */
static void node_label(const ir_graph *g, ir_ref r, char *out, size_t cap)
{
	const ir_node *n = &g->nodes[r];
	if (n->name)
		snprintf(out, cap, "node %u (%%%s, %s)", r, n->name, ir_ops[n->op].name);
	else
		snprintf(out, cap, "node %u (%s)", r, ir_ops[n->op].name);
}

void cg_plan_free(cg_plan *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->nsteps; i++)
		free(p->steps[i].k.src);
	free(p->steps);
	free(p);
}

int cg_lower(const ir_graph *g, const cg_target *t, cg_plan **out, sn_err *e)
{
	*out = NULL;
	cg_plan *p = calloc(1, sizeof *p);
	if (!p || !(p->steps = calloc(g->nnodes ? g->nnodes : 1, sizeof *p->steps))) {
		free(p);
		return sn_errf(e, SN_EINTERNAL, "codegen: out of memory");
	}
	char label[256];
	for (ir_ref r = 0; r < g->nnodes; r++) {
		const ir_node *n = &g->nodes[r];
		if (n->op == IR_OP_input || n->op == IR_OP_param || n->op == IR_OP_const)
			continue;
		node_label(g, r, label, sizeof label);
		if (!ir_shape_concrete(&n->shape)) {
			cg_plan_free(p);
			return sn_errf(e, SN_EINPUT, "%s: shape has unbound symbols (bind them with --shape)", label);
		}
		cg_render_fn *fn = renderer_of(n->op);
		if (!fn) {
			cg_plan_free(p);
			return sn_errf(e, SN_EINPUT, "%s: not supported by the CUDA backend", label);
		}
		cg_step *st = &p->steps[p->nsteps];
		memset(st, 0, sizeof *st);
		st->node = r;
		sn_err sub = {0};
		int rc = fn(g, r, t, st, &sub);
		p->nsteps++; /* counted even on failure, so its source is freed */
		if (rc != SN_OK) {
			cg_plan_free(p);
			return sn_errf(e, rc ? rc : SN_EINTERNAL, "%s: %s", label, sub.msg);
		}
		if (st->kind == CG_STEP_KERNEL && (!st->k.src || !st->k.name[0] || st->k.nbufs > CG_MAX_BUFS)) {
			cg_plan_free(p);
			return sn_errf(e, SN_EINTERNAL, "%s: renderer returned an incomplete kernel", label);
		}
	}
	*out = p;
	return SN_OK;
}
