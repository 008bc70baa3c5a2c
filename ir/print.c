/* print.c: the canonical text of a graph (docs/IR.md, "Canonical form"),
 * which the .sir parser reads back: parse, print, parse, print is a fixed
 * point, and every constant's value round-trips exactly. */
#include "ir.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void dim_str(const ir_graph *g, int64_t d, char *out, size_t cap)
{
	if (d == IR_DIM_INFER)
		snprintf(out, cap, "-1");
	else if (d >= 0)
		snprintf(out, cap, "%" PRId64, d);
	else if (IR_SYM_ID(d) < (int)g->nsyms)
		snprintf(out, cap, "%s", g->syms[IR_SYM_ID(d)]);
	else
		snprintf(out, cap, "?");
}

void ir_type_str(const ir_graph *g, ir_dtype t, const ir_shape *s, char *out, size_t cap)
{
	if (!cap)
		return;
	size_t n = (size_t)snprintf(out, cap, "%s[", ir_dtype_name(t));
	for (int i = 0; i < s->rank && i < IR_MAX_RANK && n < cap; i++) {
		char d[48];
		dim_str(g, s->d[i], d, sizeof d);
		n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? "," : "", d);
	}
	if (n < cap)
		snprintf(out + n, cap - n, "]");
}

/* ---- value names: every node gets a unique printable name ---- */

typedef struct names {
	const char **slot; /* open addressing; strings owned by tab or the graph */
	size_t cap;
	char **owned;      /* generated names (heap) */
	const char **of;   /* the name printed for each node */
	bool oom;
} names;

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

/* Adds s; false if it was there already. */
static bool name_add(names *t, const char *s)
{
	size_t i = hash_str(s) & (t->cap - 1);
	for (; t->slot[i]; i = (i + 1) & (t->cap - 1))
		if (strcmp(t->slot[i], s) == 0)
			return false;
	t->slot[i] = s;
	return true;
}

/* A name written as is: [A-Za-z0-9_.]+. */
static bool plain_name(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || *s == '.'))
			return false;
	return true;
}

/* A name the text can hold: plain, or quoted (%"input:0") when it has no
 * control character, quote or backslash. */
static bool valid_name(const char *s)
{
	if (!s || !*s)
		return false;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == '"' || *p == '\\' || *p == 0x7f)
			return false;
	return true;
}

/* "%name" or "%\"name\"" */
static void put_name(sn_buf *b, const char *s)
{
	sn_buf_printf(b, plain_name(s) ? "%%%s" : "%%\"%s\"", s);
}

/* User names are kept; a node without one (made by a pass), or whose name
 * is taken or unprintable, gets its id, or id_1, id_2, ... if that is
 * taken too. User names are reserved first so no generated name shadows a
 * later one. */
static void names_build(names *t, const ir_graph *g)
{
	memset(t, 0, sizeof *t);
	t->cap = 64;
	while (t->cap < 2 * (size_t)g->nnodes + 2)
		t->cap *= 2;
	t->slot = calloc(t->cap, sizeof *t->slot);
	t->owned = calloc(g->nnodes + 1, sizeof *t->owned);
	t->of = calloc(g->nnodes + 1, sizeof *t->of);
	if (!t->slot || !t->owned || !t->of) {
		t->oom = true;
		return;
	}
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (valid_name(g->nodes[i].name) && name_add(t, g->nodes[i].name))
			t->of[i] = g->nodes[i].name;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		if (t->of[i])
			continue;
		const char *base = valid_name(g->nodes[i].name) ? g->nodes[i].name : NULL;
		size_t blen = base ? strlen(base) : 0;
		char *s = malloc(blen + 48);
		if (!s) {
			t->oom = true;
			return;
		}
		if (base)
			snprintf(s, blen + 48, "%s_1", base);
		else
			snprintf(s, blen + 48, "%u", i);
		for (unsigned k = 1; !name_add(t, s); k++) {
			if (base)
				snprintf(s, blen + 48, "%s_%u", base, k + 1);
			else
				snprintf(s, blen + 48, "%u_%u", i, k);
		}
		t->owned[i] = s;
		t->of[i] = s;
	}
}

static void names_free(names *t, uint32_t n)
{
	if (t->owned)
		for (uint32_t i = 0; i < n; i++)
			free(t->owned[i]);
	free(t->owned);
	free(t->slot);
	free(t->of);
}

/* ---- pieces ---- */

static void put_string(sn_buf *b, const char *s)
{
	sn_buf_puts(b, "\"");
	for (; *s; s++) {
		char c[3] = {*s, 0, 0};
		if (*s == '"' || *s == '\\')
			c[0] = '\\', c[1] = *s;
		sn_buf_puts(b, c);
	}
	sn_buf_puts(b, "\"");
}

static void put_type(sn_buf *b, const ir_graph *g, ir_dtype t, const ir_shape *s)
{
	char ty[400];
	ir_type_str(g, t, s, ty, sizeof ty);
	sn_buf_puts(b, ty);
}

static void put_value(sn_buf *b, ir_dtype t, const void *data, size_t i)
{
	char num[32];
	switch (t) {
	case IR_F32: {
		float f;
		memcpy(&f, (const char *)data + 4 * i, 4);
		sn_fmt_float(num, f);
		sn_buf_puts(b, num);
		return;
	}
	case IR_I64: {
		int64_t v;
		memcpy(&v, (const char *)data + 8 * i, 8);
		sn_buf_printf(b, "%" PRId64, v);
		return;
	}
	case IR_I32: {
		int32_t v;
		memcpy(&v, (const char *)data + 4 * i, 4);
		sn_buf_printf(b, "%" PRId32, v);
		return;
	}
	case IR_I8: sn_buf_printf(b, "%d", ((const int8_t *)data)[i]); return;
	case IR_U8: sn_buf_printf(b, "%u", ((const uint8_t *)data)[i]); return;
	case IR_BOOL: sn_buf_puts(b, ((const uint8_t *)data)[i] ? "true" : "false"); return;
	default:
		sn_fmt_double(num, ir_load(t, data, i));
		sn_buf_puts(b, num);
		return;
	}
}

void ir_print_attr(sn_buf *b, const ir_graph *g, const ir_attrs *a, ir_attr_id id)
{
	const ir_attr_info *ai = &ir_attr_table[id];
	const void *p = (const char *)a + ai->offset;
	char num[48];
	sn_buf_printf(b, " %s=", ai->name);
	switch (ai->type) {
	case IR_AT_INT: sn_buf_printf(b, "%" PRId64, *(const int64_t *)p); break;
	case IR_AT_INTS:
	case IR_AT_DIMS: {
		const ir_ints *v = p;
		sn_buf_puts(b, "[");
		for (int i = 0; i < v->n && i < IR_MAX_LIST; i++) {
			if (ai->type == IR_AT_DIMS)
				dim_str(g, v->v[i], num, sizeof num);
			else
				snprintf(num, sizeof num, "%" PRId64, v->v[i]);
			sn_buf_printf(b, "%s%s", i ? "," : "", num);
		}
		sn_buf_puts(b, "]");
		break;
	}
	case IR_AT_BOOL: sn_buf_puts(b, *(const bool *)p ? "true" : "false"); break;
	case IR_AT_FLOAT:
		sn_fmt_double(num, *(const double *)p);
		sn_buf_puts(b, num);
		break;
	case IR_AT_DTYPE: sn_buf_puts(b, ir_dtype_name(*(const ir_dtype *)p)); break;
	case IR_AT_LAYOUT: sn_buf_puts(b, ir_layout_name(*(const ir_layout *)p)); break;
	case IR_AT_GELU: sn_buf_puts(b, ir_gelu_name(*(const ir_gelu *)p)); break;
	case IR_AT_PADMODE: sn_buf_puts(b, ir_padmode_name(*(const ir_padmode *)p)); break;
	case IR_AT_SCATTER: sn_buf_puts(b, ir_scatter_name(*(const ir_scatter *)p)); break;
	}
}

/* Attributes in attrs.def order: required ones always, others when they
 * differ from the op's default; split always shows its index. */
static void put_attrs(sn_buf *b, const ir_graph *g, const ir_node *n)
{
	const ir_op_info *oi = &ir_ops[n->op];
	for (int id = 0; id < IR_NATTRS; id++) {
		uint64_t bit = UINT64_C(1) << id;
		if (!(oi->attrs & bit))
			continue;
		bool show = (oi->required & bit) || !ir_attr_is_default(n->op, n->attrs, (ir_attr_id)id) ||
			    (n->op == IR_OP_split && id == IR_ATTR_index);
		if (show)
			ir_print_attr(b, g, n->attrs, (ir_attr_id)id);
	}
}

static void put_node(sn_buf *b, const ir_graph *g, const names *nm, uint32_t i)
{
	const ir_node *n = &g->nodes[i];
	sn_buf_puts(b, "  ");
	put_name(b, nm->of[i]);
	sn_buf_printf(b, " = %s", ir_ops[n->op].name);
	switch (n->op) {
	case IR_OP_param:
		sn_buf_puts(b, " ");
		put_type(b, g, n->dtype, &n->shape);
		sn_buf_puts(b, " ");
		put_string(b, n->pname ? n->pname : "");
		break;
	case IR_OP_const: {
		sn_buf_puts(b, " ");
		put_type(b, g, n->dtype, &n->shape);
		int64_t numel = ir_numel(&n->shape);
		if (n->shape.rank == 0 && n->data) {
			sn_buf_puts(b, " ");
			put_value(b, n->dtype, n->data, 0);
			break;
		}
		sn_buf_puts(b, " [");
		for (int64_t k = 0; n->data && k < numel; k++) {
			if (k)
				sn_buf_puts(b, ", ");
			put_value(b, n->dtype, n->data, (size_t)k);
		}
		sn_buf_puts(b, "]");
		break;
	}
	case IR_OP_iota:
		sn_buf_puts(b, " ");
		put_type(b, g, n->dtype, &n->shape);
		put_attrs(b, g, n);
		break;
	default:
		sn_buf_puts(b, "(");
		for (uint32_t k = 0; k < n->nin; k++) {
			sn_buf_puts(b, k ? ", " : "");
			put_name(b, n->in[k] < g->nnodes ? nm->of[n->in[k]] : "?");
		}
		sn_buf_puts(b, ")");
		put_attrs(b, g, n);
		break;
	}
	sn_buf_puts(b, "\n");
}

void ir_print(const ir_graph *g, sn_buf *b)
{
	names nm;
	names_build(&nm, g);
	if (nm.oom) {
		names_free(&nm, g->nnodes);
		b->oom = true;
		return;
	}
	sn_buf_puts(b, "sinter 1\n");
	if (g->weights) {
		sn_buf_puts(b, "weights ");
		put_string(b, g->weights);
		sn_buf_puts(b, "\n");
	}
	sn_buf_printf(b, "\nfunc @%s(", g->func && *g->func ? g->func : "main");
	uint32_t nres = g->noutputs - g->nstates; /* the results; then the states' updates */
	for (uint32_t k = 0; k < g->ninputs; k++) {
		const ir_node *n = &g->nodes[g->inputs[k]];
		sn_buf_puts(b, k ? ", " : "");
		if (k >= g->ninputs - g->nstates)
			sn_buf_puts(b, "state ");
		put_name(b, nm.of[g->inputs[k]]);
		sn_buf_puts(b, ": ");
		put_type(b, g, n->dtype, &n->shape);
	}
	sn_buf_puts(b, ") -> (");
	for (uint32_t k = 0; k < nres; k++) {
		const ir_node *n = &g->nodes[g->outputs[k]];
		if (k)
			sn_buf_puts(b, ", ");
		put_type(b, g, n->dtype, &n->shape);
	}
	sn_buf_puts(b, ") {\n");
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].op != IR_OP_input)
			put_node(b, g, &nm, i);
	for (uint32_t k = 0; k < g->nstates; k++) {
		sn_buf_puts(b, "  update ");
		put_name(b, nm.of[g->inputs[g->ninputs - g->nstates + k]]);
		sn_buf_puts(b, " = ");
		put_name(b, nm.of[g->outputs[nres + k]]);
		sn_buf_puts(b, "\n");
	}
	sn_buf_puts(b, "  return");
	for (uint32_t k = 0; k < nres; k++) {
		sn_buf_puts(b, k ? ", " : " ");
		put_name(b, nm.of[g->outputs[k]]);
	}
	sn_buf_puts(b, "\n}\n");
	names_free(&nm, g->nnodes);
}
