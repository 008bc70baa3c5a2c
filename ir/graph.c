/* graph.c: op and attribute tables (expanded from ops.def/attrs.def),
 * attribute defaults, the graph and its builder. */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const ir_op_info ir_ops[IR_NOPS] = {
#define OP(id, kind, mn, mx, attrs, req, rule) [IR_OP_##id] = {#id, IR_K_##kind, mn, mx, attrs, req},
#include "ops.def"
#undef OP
};

const ir_attr_info ir_attr_table[IR_NATTRS] = {
#define ATTR(id, type) [IR_ATTR_##id] = {#id, IR_AT_##type, offsetof(ir_attrs, id)},
#include "attrs.def"
#undef ATTR
};

static int find_name(const char *const *names, int count, const char *s, size_t n)
{
	for (int i = 0; i < count; i++)
		if (names[i] && strlen(names[i]) == n && memcmp(names[i], s, n) == 0)
			return i;
	return -1;
}

int ir_op_parse(const char *s, size_t n)
{
	for (int i = 0; i < IR_NOPS; i++)
		if (strlen(ir_ops[i].name) == n && memcmp(ir_ops[i].name, s, n) == 0)
			return i;
	return -1;
}

int ir_attr_parse(const char *s, size_t n)
{
	for (int i = 0; i < IR_NATTRS; i++)
		if (strlen(ir_attr_table[i].name) == n && memcmp(ir_attr_table[i].name, s, n) == 0)
			return i;
	return -1;
}

static const char *const layout_names[] = {"NCHW", "NHWC"};
static const char *const gelu_names[] = {"none", "tanh"};
static const char *const padmode_names[] = {"constant", "reflect", "edge"};
static const char *const scatter_names[] = {"none", "add", "mul", "max", "min"};

const char *ir_layout_name(ir_layout l) { return layout_names[l]; }
const char *ir_gelu_name(ir_gelu g) { return gelu_names[g]; }
const char *ir_padmode_name(ir_padmode m) { return padmode_names[m]; }
const char *ir_scatter_name(ir_scatter m) { return scatter_names[m]; }

int ir_enum_parse(ir_attr_type t, const char *s, size_t n)
{
	switch (t) {
	case IR_AT_LAYOUT: return find_name(layout_names, 2, s, n);
	case IR_AT_GELU: return find_name(gelu_names, 2, s, n);
	case IR_AT_PADMODE: return find_name(padmode_names, 3, s, n);
	case IR_AT_SCATTER: return find_name(scatter_names, 5, s, n);
	case IR_AT_DTYPE: return ir_dtype_parse(s, n);
	default: return -1;
	}
}

static ir_ints ints2(int64_t a, int64_t b) { return (ir_ints){2, {a, b}}; }

void ir_attrs_init(ir_op op, ir_attrs *a)
{
	memset(a, 0, sizeof *a);
	a->stride = ints2(1, 1);
	a->dilation = ints2(1, 1);
	a->groups = 1;
	a->eps = 1e-5;
	a->min = -INFINITY;
	a->max = INFINITY;
	a->end = -1;
	a->dtype = IR_F32;
	switch (op) {
	case IR_OP_conv2d:
	case IR_OP_max_pool2d:
	case IR_OP_avg_pool2d:
		a->pad = (ir_ints){4, {0, 0, 0, 0}};
		break;
	case IR_OP_softmax:
	case IR_OP_log_softmax:
	case IR_OP_layer_norm:
	case IR_OP_rms_norm:
		a->axis = -1;
		break;
	case IR_OP_flatten:
		a->axis = 1;
		break;
	case IR_OP_leaky_relu:
		a->alpha = 0.01;
		break;
	case IR_OP_elu:
		a->alpha = 1;
		break;
	case IR_OP_topk:
		a->axis = -1;
		break;
	default:
		break;
	}
	/* Pooling's stride defaults to the kernel, which the parser and the
	 * shape rule resolve: an empty stride here means "kernel". */
	if (op == IR_OP_max_pool2d || op == IR_OP_avg_pool2d)
		a->stride.n = 0;
}

static bool ints_eq(const ir_ints *x, const ir_ints *y)
{
	if (x->n != y->n)
		return false;
	for (int i = 0; i < x->n; i++)
		if (x->v[i] != y->v[i])
			return false;
	return true;
}

bool ir_attr_is_default(ir_op op, const ir_attrs *a, ir_attr_id id)
{
	/* Callers ask about every attribute of a node in turn (the verifier,
	 * ir_add, the printer): the defaults of the last op asked about are
	 * kept, so a graph's check is linear, not 29 struct inits per node. */
	static _Thread_local ir_attrs d;
	static _Thread_local int d_op = -1;
	if (d_op != (int)op) {
		ir_attrs_init(op, &d);
		d_op = (int)op;
	}
	const ir_attr_info *ai = &ir_attr_table[id];
	const char *p = (const char *)a + ai->offset, *q = (const char *)&d + ai->offset;
	switch (ai->type) {
	case IR_AT_INTS:
	case IR_AT_DIMS:
		return ints_eq((const ir_ints *)p, (const ir_ints *)q);
	case IR_AT_FLOAT: {
		double x = *(const double *)p, y = *(const double *)q;
		return x == y || (isnan(x) && isnan(y));
	}
	case IR_AT_INT: return *(const int64_t *)p == *(const int64_t *)q;
	case IR_AT_BOOL: return *(const bool *)p == *(const bool *)q;
	case IR_AT_DTYPE: return *(const ir_dtype *)p == *(const ir_dtype *)q;
	case IR_AT_LAYOUT: return *(const ir_layout *)p == *(const ir_layout *)q;
	case IR_AT_GELU: return *(const ir_gelu *)p == *(const ir_gelu *)q;
	case IR_AT_PADMODE: return *(const ir_padmode *)p == *(const ir_padmode *)q;
	case IR_AT_SCATTER: return *(const ir_scatter *)p == *(const ir_scatter *)q;
	}
	return true;
}

/* ---- shapes ---- */

bool ir_shape_eq(const ir_shape *a, const ir_shape *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->d[i] != b->d[i])
			return false;
	return true;
}

bool ir_shape_concrete(const ir_shape *s)
{
	for (int i = 0; i < s->rank; i++)
		if (s->d[i] < 0)
			return false;
	return true;
}

int64_t ir_numel(const ir_shape *s)
{
	/* a zero dim first: the others of an empty tensor need not have a
	 * product that fits ([2^40, 2^40, 0]) */
	bool empty = false;
	for (int i = 0; i < s->rank; i++) {
		if (s->d[i] < 0)
			return -1;
		empty |= s->d[i] == 0;
	}
	if (empty)
		return 0;
	int64_t n = 1;
	for (int i = 0; i < s->rank; i++)
		n *= s->d[i];
	return n;
}

int ir_axis(int64_t axis, int rank)
{
	if (axis < 0)
		axis += rank;
	return axis < 0 || axis >= rank ? -1 : (int)axis;
}

int64_t ir_slice_axis(int64_t d, int64_t start, int64_t end, int64_t step, int64_t *first)
{
	if (start < 0)
		start = start < -d ? 0 : start + d;
	if (end < 0)
		end = end < -d ? -1 : end + d;
	if (step > 0) {
		start = start > d ? d : start;
		end = end < 0 ? 0 : end > d ? d : end;
		*first = start;
		if (end <= start)
			return 0;
		return (int64_t)(((uint64_t)(end - start) - 1) / (uint64_t)step + 1);
	}
	start = start > d - 1 ? d - 1 : start;
	end = end > d - 1 ? d - 1 : end;
	*first = start;
	if (start <= end)
		return 0;
	return (int64_t)(((uint64_t)(start - end) - 1) / ((uint64_t)0 - (uint64_t)step) + 1);
}

/* ---- graph ---- */

ir_graph *ir_graph_new(void)
{
	ir_graph *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	g->arena = sn_arena_new();
	if (!g->arena) {
		free(g);
		return NULL;
	}
	g->func = "main";
	return g;
}

void ir_graph_free(ir_graph *g)
{
	if (!g)
		return;
	sn_arena_free(g->arena);
	free(g->nodes);
	free(g->inputs);
	free(g->outputs);
	free(g);
}

int ir_sym(ir_graph *g, const char *name, size_t n)
{
	for (uint32_t i = 0; i < g->nsyms; i++)
		if (strlen(g->syms[i]) == n && memcmp(g->syms[i], name, n) == 0)
			return (int)i;
	if (g->nsyms == IR_MAX_SYMS)
		return -1;
	g->syms[g->nsyms] = sn_strndup(g->arena, name, n);
	return g->syms[g->nsyms] ? (int)g->nsyms++ : -1;
}

/* Appends a node (not yet typed); NULL on OOM. */
static ir_node *push(ir_graph *g, ir_op op, sn_err *e)
{
	if (g->nnodes == g->cap) {
		uint32_t cap = g->cap ? g->cap * 2 : 64;
		ir_node *n = realloc(g->nodes, cap * sizeof *n);
		if (!n) {
			sn_errf(e, SN_EINTERNAL, "out of memory");
			return NULL;
		}
		g->nodes = n;
		g->cap = cap;
	}
	ir_node *n = &g->nodes[g->nnodes];
	memset(n, 0, sizeof *n);
	n->op = op;
	n->attrs = sn_alloc(g->arena, sizeof *n->attrs);
	if (!n->attrs) {
		sn_errf(e, SN_EINTERNAL, "out of memory");
		return NULL;
	}
	ir_attrs_init(op, n->attrs);
	return n;
}

ir_ref ir_add(ir_graph *g, ir_op op, const ir_ref *in, uint32_t nin,
	      const ir_attrs *attrs, sn_err *e)
{
	const ir_op_info *oi = &ir_ops[op];
	if (oi->kind == IR_K_SOURCE) {
		sn_errf(e, SN_EINTERNAL, "%s: sources are added with their own builder call", oi->name);
		return IR_NONE;
	}
	if (nin < oi->min_in || nin > oi->max_in) {
		if (oi->min_in == oi->max_in)
			sn_errf(e, SN_EINPUT, "%s takes %u operand%s, got %u", oi->name,
				oi->min_in, oi->min_in == 1 ? "" : "s", nin);
		else if (oi->max_in == IR_VARIADIC)
			sn_errf(e, SN_EINPUT, "%s takes at least %u operand%s, got %u", oi->name,
				oi->min_in, oi->min_in == 1 ? "" : "s", nin);
		else
			sn_errf(e, SN_EINPUT, "%s takes %u to %u operands, got %u", oi->name,
				oi->min_in, oi->max_in, nin);
		return IR_NONE;
	}
	for (uint32_t i = 0; i < nin; i++)
		if (in[i] >= g->nnodes) {
			sn_errf(e, SN_EINTERNAL, "%s: operand %u is not a node", oi->name, i);
			return IR_NONE;
		}
	if (attrs)
		for (int i = 0; i < IR_NATTRS; i++)
			if (!(oi->attrs >> i & 1) && !ir_attr_is_default(op, attrs, (ir_attr_id)i)) {
				sn_errf(e, SN_EINPUT, "%s does not take attribute %s", oi->name,
					ir_attr_table[i].name);
				return IR_NONE;
			}
	ir_node *n = push(g, op, e);
	if (!n)
		return IR_NONE;
	if (attrs)
		*n->attrs = *attrs;
	n->nin = nin;
	n->in = sn_alloc(g->arena, (nin ? nin : 1) * sizeof *n->in);
	if (!n->in)
		return sn_errf(e, SN_EINTERNAL, "out of memory"), IR_NONE;
	memcpy(n->in, in, nin * sizeof *in);
	if (ir_infer(g, n, &n->dtype, &n->shape, e) != SN_OK)
		return IR_NONE; /* the node stays unpublished: nnodes unchanged */
	return g->nnodes++;
}

static ir_ref add_source(ir_graph *g, ir_op op, ir_dtype t, const ir_shape *s, sn_err *e)
{
	if (s->rank < 0 || s->rank > IR_MAX_RANK) {
		sn_errf(e, SN_EINPUT, "rank %d is out of range (0 to %d)", s->rank, IR_MAX_RANK);
		return IR_NONE;
	}
	ir_node *n = push(g, op, e);
	if (!n)
		return IR_NONE;
	n->dtype = t;
	n->shape = *s;
	n->in = NULL;
	if (ir_infer(g, n, &n->dtype, &n->shape, e) != SN_OK)
		return IR_NONE;
	return g->nnodes++;
}

ir_ref ir_add_input(ir_graph *g, const char *name, ir_dtype t, const ir_shape *s, sn_err *e)
{
	ir_ref r = add_source(g, IR_OP_input, t, s, e);
	if (r == IR_NONE)
		return r;
	ir_ref *in = realloc(g->inputs, (g->ninputs + 1) * sizeof *in);
	if (!in || ir_set_name(g, r, name) != SN_OK) {
		if (in)
			g->inputs = in;
		g->nnodes--;
		sn_errf(e, SN_EINTERNAL, "out of memory");
		return IR_NONE;
	}
	g->inputs = in;
	g->inputs[g->ninputs++] = r;
	return r;
}

ir_ref ir_add_param(ir_graph *g, const char *pname, ir_dtype t, const ir_shape *s, sn_err *e)
{
	ir_ref r = add_source(g, IR_OP_param, t, s, e);
	if (r == IR_NONE)
		return r;
	g->nodes[r].pname = sn_strdup(g->arena, pname);
	if (!g->nodes[r].pname) {
		g->nnodes--;
		sn_errf(e, SN_EINTERNAL, "out of memory");
		return IR_NONE;
	}
	return r;
}

ir_ref ir_add_const(ir_graph *g, ir_dtype t, const ir_shape *s, const void *data, sn_err *e)
{
	int64_t n = ir_numel(s);
	if (n < 0) {
		sn_errf(e, SN_EINPUT, "a constant's shape must be concrete");
		return IR_NONE;
	}
	ir_ref r = add_source(g, IR_OP_const, t, s, e);
	if (r == IR_NONE)
		return r;
	size_t nb = (size_t)n * ir_dtype_size(t);
	void *p = sn_alloc(g->arena, nb);
	if (!p) {
		g->nnodes--;
		sn_errf(e, SN_EINTERNAL, "out of memory");
		return IR_NONE;
	}
	if (nb) /* data may be NULL for no elements */
		memcpy(p, data, nb);
	g->nodes[r].data = p;
	return r;
}

ir_ref ir_add_iota(ir_graph *g, ir_dtype t, const ir_shape *s, int64_t axis, sn_err *e)
{
	ir_node *n = push(g, IR_OP_iota, e);
	if (!n)
		return IR_NONE;
	n->dtype = t;
	n->shape = *s;
	n->attrs->axis = axis;
	if (ir_infer(g, n, &n->dtype, &n->shape, e) != SN_OK)
		return IR_NONE;
	return g->nnodes++;
}

int ir_set_name(ir_graph *g, ir_ref r, const char *name)
{
	if (!name) {
		g->nodes[r].name = NULL;
		return SN_OK;
	}
	g->nodes[r].name = sn_strdup(g->arena, name);
	return g->nodes[r].name ? SN_OK : SN_EINTERNAL;
}

int ir_add_output(ir_graph *g, ir_ref r)
{
	ir_ref *o = realloc(g->outputs, (g->noutputs + 1) * sizeof *o);
	if (!o)
		return SN_EINTERNAL;
	g->outputs = o;
	g->outputs[g->noutputs++] = r;
	return SN_OK;
}

ir_graph *ir_graph_clone(const ir_graph *src, sn_err *e)
{
	ir_graph *g = ir_graph_new();
	if (!g) {
		sn_errf(e, SN_EINTERNAL, "out of memory");
		return NULL;
	}
	g->nodes = malloc((src->cap ? src->cap : 1) * sizeof *g->nodes);
	g->inputs = malloc((src->ninputs + 1) * sizeof *g->inputs);
	g->outputs = malloc((src->noutputs + 1) * sizeof *g->outputs);
	if (!g->nodes || !g->inputs || !g->outputs)
		goto oom;
	g->cap = src->cap ? src->cap : 1;
	g->nnodes = src->nnodes;
	g->ninputs = src->ninputs;
	g->noutputs = src->noutputs;
	/* a graph without inputs (or outputs) has no array: NULL */
	if (src->ninputs)
		memcpy(g->inputs, src->inputs, src->ninputs * sizeof *g->inputs);
	if (src->noutputs)
		memcpy(g->outputs, src->outputs, src->noutputs * sizeof *g->outputs);
	g->func = sn_strdup(g->arena, src->func);
	g->weights = src->weights ? sn_strdup(g->arena, src->weights) : NULL;
	g->path = src->path ? sn_strdup(g->arena, src->path) : NULL;
	if (!g->func || (src->weights && !g->weights) || (src->path && !g->path))
		goto oom;
	g->nsyms = src->nsyms;
	g->nstates = src->nstates;
	for (uint32_t i = 0; i < src->nsyms; i++)
		if (!(g->syms[i] = sn_strdup(g->arena, src->syms[i])))
			goto oom;
	for (uint32_t i = 0; i < src->nnodes; i++) {
		const ir_node *s = &src->nodes[i];
		ir_node *d = &g->nodes[i];
		*d = *s;
		d->attrs = sn_alloc(g->arena, sizeof *d->attrs);
		d->in = sn_alloc(g->arena, (s->nin ? s->nin : 1) * sizeof *d->in);
		if (!d->attrs || !d->in)
			goto oom;
		*d->attrs = *s->attrs;
		if (s->nin)
			memcpy(d->in, s->in, s->nin * sizeof *d->in);
		if (s->name && !(d->name = sn_strdup(g->arena, s->name)))
			goto oom;
		if (s->pname && !(d->pname = sn_strdup(g->arena, s->pname)))
			goto oom;
		if (s->data) {
			size_t nb = (size_t)ir_numel(&s->shape) * ir_dtype_size(s->dtype);
			if (!(d->data = sn_alloc(g->arena, nb)))
				goto oom;
			memcpy(d->data, s->data, nb);
		}
	}
	return g;
oom:
	ir_graph_free(g);
	sn_errf(e, SN_EINTERNAL, "out of memory");
	return NULL;
}
