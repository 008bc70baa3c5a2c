/* verify.c: whole-graph checks. Every message names the node at fault:
 * "node 12 (%c1, conv2d, line 7): ...". The checks that need types are the
 * shape rules themselves (ir_infer), re-run and compared with what each
 * node stores. */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "node 12 (%c1, conv2d, line 7)" */
static void node_where(const ir_graph *g, uint32_t i, char *out, size_t cap)
{
	const ir_node *n = &g->nodes[i];
	char op[32];
	if ((unsigned)n->op < IR_NOPS)
		snprintf(op, sizeof op, "%s", ir_ops[n->op].name);
	else
		snprintf(op, sizeof op, "op %d", (int)n->op);
	int k = snprintf(out, cap, "node %u (", i);
	if (n->name && k >= 0 && (size_t)k < cap)
		k += snprintf(out + k, cap - k, "%%%s, ", n->name);
	if (k >= 0 && (size_t)k < cap)
		k += snprintf(out + k, cap - k, "%s", op);
	if (n->line && k >= 0 && (size_t)k < cap)
		k += snprintf(out + k, cap - k, ", line %u", n->line);
	if (k >= 0 && (size_t)k < cap)
		snprintf(out + k, cap - k, ")");
}

static int node_err(const ir_graph *g, uint32_t i, sn_err *e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int node_err(const ir_graph *g, uint32_t i, sn_err *e, const char *fmt, ...)
{
	char where[512], msg[3072];
	node_where(g, i, where, sizeof where);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return sn_errf(e, SN_EINPUT, "%s: %s", where, msg);
}

static void type_str(const ir_graph *g, ir_dtype t, const ir_shape *s, char *out, size_t cap)
{
	size_t k = 0;
	int r = s->rank < 0 ? 0 : s->rank > IR_MAX_RANK ? IR_MAX_RANK : s->rank;
	k += (size_t)snprintf(out, cap, "%s[", ir_dtype_name(t));
	for (int i = 0; i < r && k < cap; i++) {
		int64_t d = s->d[i];
		const char *sep = i ? "," : "";
		if (d >= 0)
			k += (size_t)snprintf(out + k, cap - k, "%s%lld", sep, (long long)d);
		else if (d != IR_DIM_INFER && -(d + 1) < (int64_t)g->nsyms && g->syms[-(d + 1)])
			k += (size_t)snprintf(out + k, cap - k, "%s%s", sep, g->syms[-(d + 1)]);
		else
			k += (size_t)snprintf(out + k, cap - k, "%s?", sep);
	}
	if (k < cap)
		snprintf(out + k, cap - k, "]");
}

/* Lists the shape rules check for their length (an empty list can be valid
 * there: a reshape to a scalar, a rank-0 transpose or pad). */
static bool rule_checks_length(ir_op op)
{
	return op == IR_OP_reshape || op == IR_OP_expand || op == IR_OP_transpose || op == IR_OP_pad;
}

static int check_attrs(const ir_graph *g, uint32_t i, sn_err *e)
{
	const ir_node *n = &g->nodes[i];
	const ir_op_info *oi = &ir_ops[n->op];
	for (int a = 0; a < IR_NATTRS; a++) {
		uint64_t bit = UINT64_C(1) << a;
		const ir_attr_info *ai = &ir_attr_table[a];
		if (!(oi->attrs & bit)) {
			if (!ir_attr_is_default(n->op, n->attrs, (ir_attr_id)a))
				return node_err(g, i, e, "%s does not take attribute %s", oi->name, ai->name);
			continue;
		}
		/* A required attribute cannot be told from one written with its
		 * default value (cast's dtype=f32), so "required" means valid:
		 * lists are non-empty, enums in range (ir_infer checks those). */
		if ((oi->required & bit) && (ai->type == IR_AT_INTS || ai->type == IR_AT_DIMS) &&
		    !rule_checks_length(n->op)) {
			const ir_ints *v = (const ir_ints *)((const char *)n->attrs + ai->offset);
			if (v->n == 0)
				return node_err(g, i, e, "required attribute %s is missing or empty", ai->name);
		}
	}
	return SN_OK;
}

static int check_node(const ir_graph *g, uint32_t i, const uint32_t *listed, sn_err *e)
{
	const ir_node *n = &g->nodes[i];
	if ((unsigned)n->op >= IR_NOPS)
		return node_err(g, i, e, "invalid op %d", (int)n->op);
	const ir_op_info *oi = &ir_ops[n->op];
	if (!n->attrs)
		return node_err(g, i, e, "node has no attributes");
	if (n->nin < oi->min_in || n->nin > oi->max_in) {
		if (oi->min_in == oi->max_in)
			return node_err(g, i, e, "%s takes %u operand%s, got %u", oi->name, oi->min_in,
					oi->min_in == 1 ? "" : "s", n->nin);
		if (oi->max_in == IR_VARIADIC)
			return node_err(g, i, e, "%s takes at least %u operand%s, got %u", oi->name,
					oi->min_in, oi->min_in == 1 ? "" : "s", n->nin);
		return node_err(g, i, e, "%s takes %u to %u operands, got %u", oi->name, oi->min_in,
				oi->max_in, n->nin);
	}
	if (n->nin && !n->in)
		return node_err(g, i, e, "node has no operand list");
	for (uint32_t k = 0; k < n->nin; k++)
		if (n->in[k] >= i)
			return node_err(g, i, e, "operand %u refers to node %u, which does not precede it",
					k, n->in[k]);
	if (check_attrs(g, i, e) != SN_OK)
		return e->code;

	sn_err ie = {0};
	ir_dtype t;
	ir_shape s;
	if (ir_infer(g, n, &t, &s, &ie) != SN_OK) {
		/* ir_infer's message starts with the op's name, which the node
		 * prefix already says. */
		const char *m = ie.msg;
		size_t k = strlen(oi->name);
		if (strncmp(m, oi->name, k) == 0 && m[k] == ':' && m[k + 1] == ' ')
			m += k + 2;
		return node_err(g, i, e, "%s", m);
	}
	if (t != n->dtype || !ir_shape_eq(&s, &n->shape)) {
		char have[256], want[256];
		type_str(g, n->dtype, &n->shape, have, sizeof have);
		type_str(g, t, &s, want, sizeof want);
		return node_err(g, i, e, "stored type %s differs from the inferred type %s", have, want);
	}
	if (n->op == IR_OP_param && (!n->pname || !n->pname[0]))
		return node_err(g, i, e, "param has no key");
	if (n->op == IR_OP_const && !n->data)
		return node_err(g, i, e, "const has no data");
	if (n->op == IR_OP_input && listed[i] == 0)
		return node_err(g, i, e, "input is not listed among the graph's inputs");
	if (n->op == IR_OP_input && listed[i] > 1)
		return node_err(g, i, e, "input is listed %u times among the graph's inputs", listed[i]);
	return SN_OK;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

/* Value names are unique: an open-addressing table of node ids. */
static int check_names(const ir_graph *g, sn_err *e)
{
	size_t cap = 16;
	while (cap < 2 * (size_t)g->nnodes)
		cap *= 2;
	uint32_t *tab = malloc(cap * sizeof *tab);
	if (!tab)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	memset(tab, 0xff, cap * sizeof *tab);
	int rc = SN_OK;
	for (uint32_t i = 0; i < g->nnodes && rc == SN_OK; i++) {
		const char *name = g->nodes[i].name;
		if (!name)
			continue;
		size_t h = (size_t)str_hash(name) & (cap - 1);
		for (; tab[h] != IR_NONE; h = (h + 1) & (cap - 1))
			if (strcmp(g->nodes[tab[h]].name, name) == 0) {
				rc = node_err(g, i, e, "value name %%%s is already used by node %u", name, tab[h]);
				break;
			}
		tab[h] = i;
	}
	free(tab);
	return rc;
}

/* A value no machine could hold (its element count overflows, or its
 * bytes exceed IR_MAX_BYTES; a symbol counts as 1) is refused here, so
 * that `check` reports it and nothing later computes or allocates it. */
int ir_check_size(const ir_graph *g, ir_ref i, sn_err *e)
{
	const ir_node *n = &g->nodes[i];
	if (n->shape.rank < 0 || n->shape.rank > IR_MAX_RANK || (unsigned)n->dtype >= IR_NDTYPES)
		return SN_OK; /* check_node reports it */
	uint64_t bytes = ir_dtype_size(n->dtype);
	bool over = false;
	for (int k = 0; k < n->shape.rank; k++) {
		int64_t d = n->shape.d[k];
		if (d <= 0)
			continue; /* a symbol, or empty (then so is the value) */
		if (bytes > IR_MAX_BYTES / (uint64_t)d)
			over = true;
		else
			bytes *= (uint64_t)d;
	}
	for (int k = 0; k < n->shape.rank; k++)
		if (n->shape.d[k] == 0)
			return SN_OK;
	if (!over)
		return SN_OK;
	double need = (double)ir_dtype_size(n->dtype);
	for (int k = 0; k < n->shape.rank; k++)
		if (n->shape.d[k] > 0)
			need *= (double)n->shape.d[k];
	char ts[256];
	type_str(g, n->dtype, &n->shape, ts, sizeof ts);
	return node_err(g, i, e, "%s needs %.4g bytes, more than the %llu (256 TiB) any machine can hold",
			ts, need, (unsigned long long)IR_MAX_BYTES);
}

int ir_verify(const ir_graph *g, sn_err *e)
{
	if (g->nsyms > IR_MAX_SYMS)
		return sn_errf(e, SN_EINPUT, "the graph has %u symbols (at most %d)", g->nsyms, IR_MAX_SYMS);
	for (uint32_t k = 0; k < g->nsyms; k++)
		if (!g->syms[k] || !g->syms[k][0])
			return sn_errf(e, SN_EINPUT, "symbol %u has no name", k);
	uint32_t *listed = calloc(g->nnodes ? g->nnodes : 1, sizeof *listed);
	if (!listed)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	int rc = SN_OK;
	for (uint32_t k = 0; k < g->ninputs && rc == SN_OK; k++) {
		ir_ref r = g->inputs[k];
		if (r >= g->nnodes)
			rc = sn_errf(e, SN_EINPUT, "graph input %u refers to node %u, but the graph has %u nodes",
				     k, r, g->nnodes);
		else if (g->nodes[r].op != IR_OP_input)
			rc = sn_errf(e, SN_EINPUT, "graph input %u refers to node %u, which is not an input", k, r);
		else
			listed[r]++;
	}
	for (uint32_t i = 0; i < g->nnodes && rc == SN_OK; i++)
		if (!(rc = ir_check_size(g, i, e)))
			rc = check_node(g, i, listed, e);
	free(listed);
	if (rc != SN_OK)
		return rc;
	if (g->noutputs == 0)
		return sn_errf(e, SN_EINPUT, "the graph has no outputs");
	for (uint32_t k = 0; k < g->noutputs; k++)
		if (g->outputs[k] >= g->nnodes)
			return sn_errf(e, SN_EINPUT, "output %u refers to node %u, but the graph has %u nodes",
				       k, g->outputs[k], g->nnodes);
	if (g->nstates > g->ninputs || g->nstates > g->noutputs)
		return sn_errf(e, SN_EINPUT, "the graph has %u states but %u inputs and %u outputs (each state is an "
			       "input and an output)",
			       g->nstates, g->ninputs, g->noutputs);
	for (uint32_t k = 0; k < g->nstates; k++) {
		const ir_node *s = &g->nodes[g->inputs[g->ninputs - g->nstates + k]];
		const ir_node *u = &g->nodes[g->outputs[g->noutputs - g->nstates + k]];
		if (s->dtype != u->dtype || !ir_shape_eq(&s->shape, &u->shape)) {
			char a[160], b[160];
			ir_type_str(g, s->dtype, &s->shape, a, sizeof a);
			ir_type_str(g, u->dtype, &u->shape, b, sizeof b);
			return sn_errf(e, SN_EINPUT, "state %%%s is %s but its update is %s", s->name ? s->name : "?", a, b);
		}
	}
	return check_names(g, e);
}
