/* rewrite.c: rebuilding a graph node by node (rewrite.h). */
#include "passes/rewrite.h"

#include <stdlib.h>
#include <string.h>

static void names_free(rw *r)
{
	free(r->nkey);
	free(r->ncnt);
	r->nkey = NULL;
	r->ncnt = NULL;
	r->ncap = r->nlen = 0;
	r->nupto = 0;
}

int rw_begin(rw *r, const ir_graph *src, sn_err *e)
{
	memset(r, 0, sizeof *r);
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
	d->nstates = src->nstates; /* inputs and outputs keep their order */
	return SN_OK;
oom:
	rw_abort(r);
	return sn_errf(e, SN_EINTERNAL, "out of memory");
}

void rw_abort(rw *r)
{
	names_free(r);
	ir_graph_free(r->dst);
	free(r->map);
	r->dst = NULL;
	r->map = NULL;
}

/* ---- the names dst holds ---- */

static uint64_t str_hash(const char *s)
{
	uint64_t h = UINT64_C(1469598103934665603);
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
	return h;
}

/* The slot of s: where it is, or the empty slot where it would go. */
static size_t name_slot(const rw *r, const char *s)
{
	size_t h = (size_t)str_hash(s) & (r->ncap - 1);
	while (r->nkey[h] && strcmp(r->nkey[h], s) != 0)
		h = (h + 1) & (r->ncap - 1);
	return h;
}

/* count += d for name s (which lives in dst's arena). */
static int name_add(rw *r, const char *s, int d)
{
	if (2 * (r->nlen + 1) > r->ncap) {
		size_t cap = r->ncap ? 2 * r->ncap : 64;
		const char **k = calloc(cap, sizeof *k);
		uint32_t *c = calloc(cap, sizeof *c);
		if (!k || !c) {
			free(k), free(c);
			return SN_EINTERNAL;
		}
		const char **ok = r->nkey;
		uint32_t *oc = r->ncnt;
		size_t ocap = r->ncap;
		r->nkey = k, r->ncnt = c, r->ncap = cap;
		for (size_t i = 0; i < ocap; i++)
			if (ok[i]) {
				size_t h = name_slot(r, ok[i]);
				r->nkey[h] = ok[i];
				r->ncnt[h] = oc[i];
			}
		free(ok), free(oc);
	}
	size_t h = name_slot(r, s);
	if (!r->nkey[h]) {
		if (d <= 0)
			return SN_OK;
		r->nkey[h] = s;
		r->nlen++;
	}
	r->ncnt[h] = (uint32_t)((int64_t)r->ncnt[h] + d);
	return SN_OK;
}

static int name_sync(rw *r)
{
	const ir_graph *d = r->dst;
	for (; r->nupto < d->nnodes; r->nupto++)
		if (d->nodes[r->nupto].name && name_add(r, d->nodes[r->nupto].name, 1))
			return SN_EINTERNAL;
	return SN_OK;
}

bool rw_name_used(rw *r, const char *s)
{
	if (name_sync(r) != SN_OK) { /* out of memory: answer by a scan */
		for (uint32_t i = 0; i < r->dst->nnodes; i++)
			if (r->dst->nodes[i].name && strcmp(r->dst->nodes[i].name, s) == 0)
				return true;
		return false;
	}
	if (!r->ncap)
		return false;
	size_t h = name_slot(r, s);
	return r->nkey[h] && r->ncnt[h] > 0;
}

int rw_set_name(rw *r, ir_ref id, const char *name)
{
	if (name_sync(r) != SN_OK)
		return SN_EINTERNAL;
	ir_node *n = &r->dst->nodes[id];
	if (n->name && name_add(r, n->name, -1))
		return SN_EINTERNAL;
	if (ir_set_name(r->dst, id, name) != SN_OK)
		return SN_EINTERNAL;
	return n->name ? name_add(r, n->name, 1) : SN_OK;
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
	const char *name = n->name && !rw_name_used(r, n->name) ? n->name : NULL;
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
	if (name && rw_set_name(r, nr, name) != SN_OK) {
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
	names_free(r);
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
