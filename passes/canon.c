/* canon.c: the canonicalize pass. Each sweep rebuilds the graph once:
 *   - DCE: nodes no output depends on are not copied (graph inputs stay);
 *   - constant folding: a node whose operands are all const or iota nodes
 *     is evaluated by the reference interpreter (ref_eval_node) and becomes
 *     a const node, when its result has at most CANON_FOLD_MAX elements (big
 *     tensors are not inlined into the IR); params are never folded;
 *   - algebraic rules (canon_rules.c), first match wins;
 *   - CSE by hash-consing: a node identical to an earlier one (op, dtype,
 *     shape, operands, attributes, param key, const data) is that node.
 * Sweeps repeat until one changes nothing. A node replaced by another loses
 * its name, except that a graph output's name moves to its new node when
 * that node is not an input and its own name is no output's name. */
#include "passes/canon.h"
#include "passes/passes.h"
#include "ir/ref/ref.h"

#include <stdlib.h>
#include <string.h>

#define CANON_FOLD_MAX 4096
#define CANON_MAX_SWEEPS 100

/* ---- hash-consing ---- */

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
	return h * UINT64_C(0xff51afd7ed558ccd);
}

static uint64_t mix_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * UINT64_C(0x100000001b3);
	return mix(h, n);
}

static size_t data_bytes(const ir_node *n)
{
	int64_t k = ir_numel(&n->shape);
	return k < 0 ? 0 : (size_t)k * ir_dtype_size(n->dtype);
}

/* Attribute values field by field (struct padding is never read). */
static uint64_t attr_hash(uint64_t h, ir_op op, const ir_attrs *a)
{
	for (int i = 0; i < IR_NATTRS; i++) {
		if (!(ir_ops[op].attrs >> i & 1))
			continue;
		const char *p = (const char *)a + ir_attr_table[i].offset;
		switch (ir_attr_table[i].type) {
		case IR_AT_INT: h = mix(h, (uint64_t)*(const int64_t *)p); break;
		case IR_AT_INTS:
		case IR_AT_DIMS: {
			const ir_ints *l = (const ir_ints *)p;
			int32_t n = l->n < 0 ? 0 : l->n > IR_MAX_LIST ? IR_MAX_LIST : l->n;
			h = mix(h, (uint64_t)n);
			for (int32_t k = 0; k < n; k++)
				h = mix(h, (uint64_t)l->v[k]);
			break;
		}
		case IR_AT_BOOL: h = mix(h, *(const bool *)p); break;
		case IR_AT_FLOAT: {
			uint64_t u;
			memcpy(&u, p, sizeof u);
			h = mix(h, u);
			break;
		}
		case IR_AT_DTYPE: h = mix(h, (uint64_t)*(const ir_dtype *)p); break;
		case IR_AT_LAYOUT: h = mix(h, (uint64_t)*(const ir_layout *)p); break;
		case IR_AT_GELU: h = mix(h, (uint64_t)*(const ir_gelu *)p); break;
		case IR_AT_PADMODE: h = mix(h, (uint64_t)*(const ir_padmode *)p); break;
		case IR_AT_SCATTER: h = mix(h, (uint64_t)*(const ir_scatter *)p); break;
		}
	}
	return h;
}

static bool attr_eq(ir_op op, const ir_attrs *a, const ir_attrs *b)
{
	return attr_hash(0, op, a) == attr_hash(0, op, b) && attr_hash(1, op, a) == attr_hash(1, op, b);
}

static uint64_t node_hash(const ir_node *n)
{
	uint64_t h = mix(mix(1, (uint64_t)n->op), (uint64_t)n->dtype);
	h = mix(h, (uint64_t)n->shape.rank);
	for (int32_t d = 0; d < n->shape.rank; d++)
		h = mix(h, (uint64_t)n->shape.d[d]);
	h = mix(h, n->nin);
	for (uint32_t k = 0; k < n->nin; k++)
		h = mix(h, n->in[k]);
	h = attr_hash(h, n->op, n->attrs);
	if (n->pname)
		h = mix_bytes(h, n->pname, strlen(n->pname));
	if (n->op == IR_OP_const && n->data)
		h = mix_bytes(h, n->data, data_bytes(n));
	return h;
}

static bool node_eq(const ir_node *a, const ir_node *b)
{
	if (a->op != b->op || a->dtype != b->dtype || !ir_shape_eq(&a->shape, &b->shape) || a->nin != b->nin)
		return false;
	for (uint32_t k = 0; k < a->nin; k++)
		if (a->in[k] != b->in[k])
			return false;
	if (!attr_eq(a->op, a->attrs, b->attrs))
		return false;
	if (a->op == IR_OP_param && strcmp(a->pname ? a->pname : "", b->pname ? b->pname : "") != 0)
		return false;
	if (a->op == IR_OP_const && (!a->data || !b->data || memcmp(a->data, b->data, data_bytes(a)) != 0))
		return false;
	return true;
}

static ir_ref lookup(const canon *c, const ir_node *n)
{
	const ir_graph *d = c->r.dst;
	for (size_t h = (size_t)node_hash(n) & (c->cap - 1);; h = (h + 1) & (c->cap - 1)) {
		ir_ref id = c->tab[h];
		if (id == IR_NONE)
			return IR_NONE;
		if (node_eq(&d->nodes[id], n))
			return id;
	}
}

static int insert(canon *c, ir_ref id, sn_err *e)
{
	const ir_graph *d = c->r.dst;
	if (2 * (c->cnt + 1) > c->cap) {
		size_t cap = c->cap * 2;
		ir_ref *t = malloc(cap * sizeof *t);
		if (!t)
			return sn_errf(e, SN_EINTERNAL, "out of memory");
		for (size_t i = 0; i < cap; i++)
			t[i] = IR_NONE;
		for (size_t i = 0; i < c->cap; i++) {
			if (c->tab[i] == IR_NONE)
				continue;
			size_t h = (size_t)node_hash(&d->nodes[c->tab[i]]) & (cap - 1);
			while (t[h] != IR_NONE)
				h = (h + 1) & (cap - 1);
			t[h] = c->tab[i];
		}
		free(c->tab);
		c->tab = t;
		c->cap = cap;
	}
	size_t h = (size_t)node_hash(&d->nodes[id]) & (c->cap - 1);
	while (c->tab[h] != IR_NONE)
		h = (h + 1) & (c->cap - 1);
	c->tab[h] = id;
	c->cnt++;
	return SN_OK;
}

static int take_name(canon *c, ir_ref id, const ir_node *like, sn_err *e)
{
	ir_graph *d = c->r.dst;
	if (!like)
		return SN_OK;
	if (like->name && !d->nodes[id].name && !rw_name_used(&c->r, like->name) &&
	    rw_set_name(&c->r, id, like->name) != SN_OK)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	d->nodes[id].line = like->line;
	d->nodes[id].col = like->col;
	return SN_OK;
}

ir_ref canon_emit(canon *c, const ir_node *n, const ir_node *like, sn_err *e)
{
	ir_graph *d = c->r.dst;
	ir_node t = *n;
	if (t.op != IR_OP_const && t.op != IR_OP_param && ir_infer(d, &t, &t.dtype, &t.shape, e) != SN_OK)
		return IR_NONE;
	ir_ref id = lookup(c, &t);
	if (id != IR_NONE)
		return id;
	switch (t.op) {
	case IR_OP_const: id = ir_add_const(d, t.dtype, &t.shape, t.data, e); break;
	case IR_OP_param: id = ir_add_param(d, t.pname ? t.pname : "", t.dtype, &t.shape, e); break;
	case IR_OP_iota: id = ir_add_iota(d, t.dtype, &t.shape, t.attrs->axis, e); break;
	case IR_OP_input:
		sn_errf(e, SN_EINTERNAL, "canonicalize: an input cannot be emitted");
		return IR_NONE;
	default: id = ir_add(d, t.op, t.in, t.nin, t.attrs, e); break;
	}
	if (id == IR_NONE || take_name(c, id, like, e) != SN_OK || insert(c, id, e) != SN_OK)
		return IR_NONE;
	return id;
}

/* ---- constant folding ---- */

static bool foldable(const ir_graph *d, const ir_node *n)
{
	if (ir_ops[n->op].kind == IR_K_SOURCE || n->nin == 0)
		return false;
	int64_t k = ir_numel(&n->shape);
	if (k < 0 || k > CANON_FOLD_MAX)
		return false;
	for (uint32_t i = 0; i < n->nin; i++) {
		ir_op o = d->nodes[n->in[i]].op;
		if (o != IR_OP_const && o != IR_OP_iota)
			return false;
	}
	return true;
}

/* Evaluates n (operands all const/iota in dst) into a const; IR_NONE when
 * the interpreter refuses it (the node is then kept as it is). */
static ir_ref fold(canon *c, const ir_node *n, const ir_node *like, sn_err *e)
{
	const ir_graph *d = c->r.dst;
	ir_tensor *ops = calloc(n->nin, sizeof *ops);
	bool *owned = calloc(n->nin, sizeof *owned);
	ir_ref id = IR_NONE;
	sn_err le = {0};
	if (!ops || !owned) {
		sn_errf(e, SN_EINTERNAL, "out of memory");
		goto done;
	}
	for (uint32_t i = 0; i < n->nin && !le.code; i++) {
		const ir_node *o = &d->nodes[n->in[i]];
		if (o->op == IR_OP_const) {
			ops[i] = (ir_tensor){o->dtype, o->shape, o->data, data_bytes(o)};
		} else if (ref_eval_node(d, o, NULL, &ops[i], &le) == SN_OK) {
			owned[i] = true;
		}
	}
	ir_tensor out = {0};
	if (!le.code && ref_eval_node(d, n, ops, &out, &le) == SN_OK) {
		ir_attrs a;
		ir_attrs_init(IR_OP_const, &a);
		ir_node k = {.op = IR_OP_const, .dtype = out.dtype, .shape = out.shape, .attrs = &a,
			     .data = out.data};
		id = canon_emit(c, &k, like, e);
		free(out.data);
	} else if (le.code == SN_EINTERNAL) {
		sn_errf(e, SN_EINTERNAL, "%s", le.msg);
	}
done:
	for (uint32_t i = 0; ops && owned && i < n->nin; i++)
		if (owned[i])
			free(ops[i].data);
	free(ops);
	free(owned);
	return id;
}

/* ---- one sweep ---- */

static bool *live_nodes(const ir_graph *g)
{
	bool *live = calloc(g->nnodes ? g->nnodes : 1, sizeof *live);
	if (!live)
		return NULL;
	for (uint32_t k = 0; k < g->noutputs; k++)
		live[g->outputs[k]] = true;
	for (uint32_t k = 0; k < g->ninputs; k++)
		live[g->inputs[k]] = true;
	for (uint32_t i = g->nnodes; i-- > 0;)
		for (uint32_t k = 0; live[i] && k < g->nodes[i].nin; k++)
			live[g->nodes[i].in[k]] = true;
	return live;
}

static bool same_type(const ir_node *a, const ir_node *b)
{
	return a->dtype == b->dtype && ir_shape_eq(&a->shape, &b->shape);
}

/* The dst node for src node i (a non-source node). */
static ir_ref sweep_node(canon *c, uint32_t i, ir_ref *in, sn_err *e)
{
	const ir_node *s = &c->r.src->nodes[i];
	ir_graph *d = c->r.dst;
	ir_node n = *s;
	n.in = in;
	for (uint32_t k = 0; k < s->nin; k++)
		in[k] = c->r.map[s->in[k]];
	if (ir_infer(d, &n, &n.dtype, &n.shape, e) != SN_OK)
		return IR_NONE;
	if (!same_type(&n, s)) {
		sn_errf(e, SN_EINTERNAL, "canonicalize: node %u (%s) changed type", i, ir_ops[s->op].name);
		return IR_NONE;
	}
	if (foldable(d, &n)) {
		ir_ref id = fold(c, &n, s, e);
		if (id != IR_NONE || e->code)
			return c->changes++, id;
	}
	for (size_t k = 0; k < canon_nrules; k++) {
		const canon_rule *ru = &canon_rules[k];
		if (ru->root != n.op || !ru->match(d, &n))
			continue;
		sn_err le = {0};
		ir_ref id = ru->rewrite(c, &n, s, &le);
		if (id == IR_NONE) {
			if (le.code == SN_EINTERNAL)
				return sn_errf(e, le.code, "%s", le.msg), IR_NONE;
			continue; /* the rewrite does not type-check here: skip the rule */
		}
		if (!same_type(&d->nodes[id], s)) {
			sn_errf(e, SN_EINTERNAL, "canonicalize: rule %s changed the type of node %u", ru->name, i);
			return IR_NONE;
		}
		c->changes++;
		return id;
	}
	uint32_t before = d->nnodes;
	ir_ref id = canon_emit(c, &n, s, e);
	if (id != IR_NONE && d->nnodes == before)
		c->changes++; /* merged with an identical node */
	return id;
}

/* A graph output's name moves to the node now standing for it. */
static int keep_output_names(canon *c, sn_err *e)
{
	const ir_graph *s = c->r.src;
	ir_graph *d = c->r.dst;
	for (uint32_t k = 0; k < s->noutputs; k++) {
		const char *want = s->nodes[s->outputs[k]].name;
		ir_ref id = c->r.map[s->outputs[k]];
		const char *have = d->nodes[id].name;
		if (!want || (have && strcmp(have, want) == 0) || d->nodes[id].op == IR_OP_input)
			continue;
		bool is_out = false;
		for (uint32_t j = 0; have && j < s->noutputs; j++)
			is_out |= s->nodes[s->outputs[j]].name && strcmp(s->nodes[s->outputs[j]].name, have) == 0;
		if (is_out || rw_name_used(&c->r, want))
			continue;
		if (rw_set_name(&c->r, id, want) != SN_OK)
			return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	return SN_OK;
}

static ir_graph *sweep(const ir_graph *g, unsigned *changes, sn_err *e)
{
	canon c = {.cap = 64};
	bool *live = live_nodes(g);
	uint32_t maxin = 1;
	for (uint32_t i = 0; i < g->nnodes; i++)
		maxin = g->nodes[i].nin > maxin ? g->nodes[i].nin : maxin;
	ir_ref *in = malloc(maxin * sizeof *in);
	c.tab = malloc(c.cap * sizeof *c.tab);
	if (!live || !in || !c.tab) {
		free(live), free(in), free(c.tab);
		sn_errf(e, SN_EINTERNAL, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < c.cap; i++)
		c.tab[i] = IR_NONE;
	ir_graph *out = NULL;
	if (rw_begin(&c.r, g, e) != SN_OK)
		goto done;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *s = &g->nodes[i];
		ir_ref id;
		if (!live[i]) {
			c.changes++;
			continue;
		}
		if (s->op == IR_OP_input) {
			id = rw_copy(&c.r, i, e);
		} else if (ir_ops[s->op].kind == IR_K_SOURCE) {
			uint32_t before = c.r.dst->nnodes;
			id = canon_emit(&c, s, s, e);
			if (id != IR_NONE && c.r.dst->nnodes == before)
				c.changes++;
		} else {
			id = sweep_node(&c, i, in, e);
		}
		if (id == IR_NONE) {
			if (!e->code)
				sn_errf(e, SN_EINTERNAL, "canonicalize: node %u was not rebuilt", i);
			rw_abort(&c.r);
			goto done;
		}
		c.r.map[i] = id;
	}
	if (keep_output_names(&c, e) != SN_OK) {
		rw_abort(&c.r);
		goto done;
	}
	out = rw_finish(&c.r, e);
done:
	*changes = c.changes;
	free(live);
	free(in);
	free(c.tab);
	return out;
}

int pass_canonicalize(ir_graph **g, pass_ctx *ctx, sn_err *e)
{
	(void)ctx;
	for (int k = 0; k < CANON_MAX_SWEEPS; k++) {
		unsigned changes = 0;
		ir_graph *n = sweep(*g, &changes, e);
		if (!n)
			return e->code ? e->code : sn_errf(e, SN_EINTERNAL, "canonicalize failed");
		if (!changes) {
			ir_graph_free(n);
			return SN_OK;
		}
		ir_graph_free(*g);
		*g = n;
	}
	return SN_OK; /* a fixpoint was not reached in CANON_MAX_SWEEPS: still a valid graph */
}
