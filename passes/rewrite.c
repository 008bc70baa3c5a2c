/* rewrite.c: rebuilding a graph node by node (rewrite.h). */
#include "passes/rewrite.h"

#include <stdlib.h>
#include <string.h>

int rw_begin(rw *r, const ir_graph *src, sn_err *e)
{
	r->src = src;
	r->dst = ir_graph_new();
	r->map = malloc((src->nnodes ? src->nnodes : 1) * sizeof *r->map);
	if (!r->dst || !r->map)
		goto oom;
	for (uint32_t i = 0; i < src->nnodes; i++)
		r->map[i] = IR_NONE;
	ir_graph *d = r->dst;
	d->func = sn_strdup(d->arena, src->func ? src->func : "main");
	d->weights = src->weights ? sn_strdup(d->arena, src->weights) : NULL;
	d->path = src->path ? sn_strdup(d->arena, src->path) : NULL;
	if (!d->func || (src->weights && !d->weights) || (src->path && !d->path))
		goto oom;
	for (uint32_t k = 0; k < src->nsyms; k++)
		if (!(d->syms[k] = sn_strdup(d->arena, src->syms[k])))
			goto oom;
	d->nsyms = src->nsyms;
	return SN_OK;
oom:
	rw_abort(r);
	return sn_errf(e, SN_EINTERNAL, "out of memory");
}

void rw_abort(rw *r)
{
	ir_graph_free(r->dst);
	free(r->map);
	r->dst = NULL;
	r->map = NULL;
}

/* Whether some node of g already carries value name s. */
static bool name_used(const ir_graph *g, const char *s)
{
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].name && strcmp(g->nodes[i].name, s) == 0)
			return true;
	return false;
}

ir_ref rw_copy(rw *r, ir_ref old, sn_err *e)
{
	const ir_graph *s = r->src;
	ir_graph *d = r->dst;
	if (old >= s->nnodes) {
		sn_errf(e, SN_EINTERNAL, "rewrite: node %u is not in the graph", old);
		return IR_NONE;
	}
	const ir_node *n = &s->nodes[old];
	const char *name = n->name && !name_used(d, n->name) ? n->name : NULL;
	ir_ref nr;
	switch (n->op) {
	case IR_OP_input:
		nr = ir_add_input(d, name, n->dtype, &n->shape, e);
		name = NULL; /* already set */
		break;
	case IR_OP_param:
		nr = ir_add_param(d, n->pname ? n->pname : "", n->dtype, &n->shape, e);
		break;
	case IR_OP_const:
		if (!n->data) {
			sn_errf(e, SN_EINTERNAL, "rewrite: const node %u has no data", old);
			return IR_NONE;
		}
		nr = ir_add_const(d, n->dtype, &n->shape, n->data, e);
		break;
	case IR_OP_iota:
		nr = ir_add_iota(d, n->dtype, &n->shape, n->attrs->axis, e);
		break;
	default: {
		ir_ref stack[8] = {0}, *in = n->nin <= 8 ? stack : malloc(n->nin * sizeof *in);
		if (!in) {
			sn_errf(e, SN_EINTERNAL, "out of memory");
			return IR_NONE;
		}
		nr = 0;
		for (uint32_t k = 0; k < n->nin; k++) {
			ir_ref o = n->in[k];
			if (o >= s->nnodes || r->map[o] == IR_NONE) {
				sn_errf(e, SN_EINTERNAL, "rewrite: operand %u of node %u (%s) is not mapped",
					k, old, ir_ops[n->op].name);
				nr = IR_NONE;
				break;
			}
			in[k] = r->map[o];
		}
		if (nr != IR_NONE)
			nr = ir_add(d, n->op, in, n->nin, n->attrs, e);
		if (in != stack)
			free(in);
	}
	}
	if (nr == IR_NONE)
		return IR_NONE;
	if (name && ir_set_name(d, nr, name) != SN_OK) {
		sn_errf(e, SN_EINTERNAL, "out of memory");
		return IR_NONE;
	}
	d->nodes[nr].line = n->line;
	d->nodes[nr].col = n->col;
	r->map[old] = nr;
	return nr;
}

ir_graph *rw_finish(rw *r, sn_err *e)
{
	const ir_graph *s = r->src;
	for (uint32_t k = 0; k < s->noutputs; k++) {
		ir_ref o = s->outputs[k];
		if (o >= s->nnodes || r->map[o] == IR_NONE) {
			sn_errf(e, SN_EINTERNAL, "rewrite: output %u (node %u) is not mapped", k, o);
			rw_abort(r);
			return NULL;
		}
		if (ir_add_output(r->dst, r->map[o]) != SN_OK) {
			sn_errf(e, SN_EINTERNAL, "out of memory");
			rw_abort(r);
			return NULL;
		}
	}
	ir_graph *d = r->dst;
	free(r->map);
	r->map = NULL;
	r->dst = NULL;
	return d;
}

ir_graph *rw_map(const ir_graph *src, rw_fn *fn, void *ctx, sn_err *e)
{
	rw r;
	if (rw_begin(&r, src, e) != SN_OK)
		return NULL;
	for (uint32_t i = 0; i < src->nnodes; i++) {
		ir_ref nr = fn ? fn(&r, i, ctx, e) : IR_NONE;
		if (e->code != SN_OK) {
			rw_abort(&r);
			return NULL;
		}
		if (nr == IR_NONE)
			nr = rw_copy(&r, i, e);
		else if (nr >= r.dst->nnodes)
			sn_errf(e, SN_EINTERNAL, "rewrite: replacement of node %u is not a node", i);
		if (nr == IR_NONE || e->code != SN_OK) {
			rw_abort(&r);
			return NULL;
		}
		r.map[i] = nr;
	}
	return rw_finish(&r, e);
}

uint32_t *rw_uses(const ir_graph *g)
{
	uint32_t *u = calloc(g->nnodes ? g->nnodes : 1, sizeof *u);
	if (!u)
		return NULL;
	for (uint32_t i = 0; i < g->nnodes; i++)
		for (uint32_t k = 0; k < g->nodes[i].nin; k++)
			if (g->nodes[i].in[k] < g->nnodes)
				u[g->nodes[i].in[k]]++;
	for (uint32_t k = 0; k < g->noutputs; k++)
		if (g->outputs[k] < g->nnodes)
			u[g->outputs[k]]++;
	return u;
}
