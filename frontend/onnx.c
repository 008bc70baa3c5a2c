/* onnx.c: ONNX import: the import context, the value table, constant
 * folding, and the final graph (onnx_impl.h says how they fit; tensors,
 * inline and external, in onnx_tensor.c). */
#include "onnx_impl.h"

#include "ir/file.h"
#include "ir/log.h"
#include "ir/ref/ref.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FOLD_MAX_BYTES ((int64_t)1 << 29) /* larger results stay computations */
#define INLINE_MAX 64                     /* folded values up to this many elements stay inline */

struct ox_slot {
	const char *name;              /* ONNX value name (arena) */
	ir_ref ref;                    /* work node, IR_NONE until an initializer is used */
	const onnx_tensor *init;       /* initializer, or NULL */
	bool named;                    /* the work node was named after this value */
};

static int oom(sn_err *e) { return sn_errf(e, SN_EINTERNAL, "out of memory"); }

/* ---- messages ---- */

static const char *node_label(const onnx_node *nd, char *buf, size_t cap)
{
	if (nd->name[0])
		snprintf(buf, cap, "node '%s' (%s)", nd->name, nd->op_type);
	else
		snprintf(buf, cap, "node of type %s", nd->op_type);
	return buf;
}

int ox_fail(ox_ctx *c, const onnx_node *nd, const char *fmt, ...)
{
	char msg[2048], lab[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (!nd)
		return sn_errf(c->e, SN_EINPUT, "%s: %s", c->name, msg);
	return sn_errf(c->e, SN_EINPUT, "%s: %s: %s", c->name, node_label(nd, lab, sizeof lab), msg);
}

const char *ox_onnx_type_name(int64_t t)
{
	static const char *const names[] = {
		"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64",
		"STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64",
		"COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
		"FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1",
	};
	return t >= 0 && t < (int64_t)SN_COUNT(names) ? names[t] : "UNKNOWN";
}

int ox_map_dtype(int64_t t, ir_dtype *out)
{
	switch (t) {
	case ONNX_FLOAT: *out = IR_F32; return 0;
	case ONNX_FLOAT16: *out = IR_F16; return 0;
	case ONNX_BFLOAT16: *out = IR_BF16; return 0;
	case ONNX_FLOAT8E4M3FN: *out = IR_F8E4M3; return 0;
	case ONNX_FLOAT8E5M2: *out = IR_F8E5M2; return 0;
	case ONNX_INT64: *out = IR_I64; return 0;
	case ONNX_INT32: *out = IR_I32; return 0;
	case ONNX_INT8: *out = IR_I8; return 0;
	case ONNX_UINT8: *out = IR_U8; return 0;
	case ONNX_BOOL: *out = IR_BOOL; return 0;
	default: return -1;
	}
}

int ox_dtype(ox_ctx *c, const onnx_node *nd, int64_t t, ir_dtype *out)
{
	if (ox_map_dtype(t, out) == 0)
		return SN_OK;
	return ox_fail(c, nd, "data type %s (%lld) is not supported", ox_onnx_type_name(t), (long long)t);
}

/* ---- string sets and names ---- */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603u;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211u;
	return h;
}

static ox_slot *slot_find(ox_ctx *c, const char *name)
{
	if (!c->slotcap)
		return NULL;
	for (size_t i = hash_str(name) & (c->slotcap - 1);; i = (i + 1) & (c->slotcap - 1)) {
		if (!c->slots[i].name)
			return NULL;
		if (strcmp(c->slots[i].name, name) == 0)
			return &c->slots[i];
	}
}

/* Adds name (not present) and returns its slot. */
static ox_slot *slot_add(ox_ctx *c, const char *name)
{
	if ((c->nslots + 1) * 2 > c->slotcap) {
		size_t cap = c->slotcap ? c->slotcap * 2 : 256;
		ox_slot *s = calloc(cap, sizeof *s);
		if (!s)
			return NULL;
		for (size_t i = 0; i < c->slotcap; i++) {
			if (!c->slots[i].name)
				continue;
			size_t j = hash_str(c->slots[i].name) & (cap - 1);
			while (s[j].name)
				j = (j + 1) & (cap - 1);
			s[j] = c->slots[i];
		}
		free(c->slots);
		c->slots = s;
		c->slotcap = cap;
	}
	size_t i = hash_str(name) & (c->slotcap - 1);
	while (c->slots[i].name)
		i = (i + 1) & (c->slotcap - 1);
	c->slots[i].name = name;
	c->slots[i].ref = IR_NONE;
	c->nslots++;
	return &c->slots[i];
}

static bool used_has(const ox_ctx *c, const char *s)
{
	if (!c->usedcap)
		return false;
	for (size_t i = hash_str(s) & (c->usedcap - 1);; i = (i + 1) & (c->usedcap - 1)) {
		if (!c->used[i])
			return false;
		if (strcmp(c->used[i], s) == 0)
			return true;
	}
}

static int used_add(ox_ctx *c, const char *s)
{
	if ((c->nused + 1) * 2 > c->usedcap) {
		size_t cap = c->usedcap ? c->usedcap * 2 : 256;
		const char **u = calloc(cap, sizeof *u);
		if (!u)
			return oom(c->e);
		for (size_t i = 0; i < c->usedcap; i++) {
			if (!c->used[i])
				continue;
			size_t j = hash_str(c->used[i]) & (cap - 1);
			while (u[j])
				j = (j + 1) & (cap - 1);
			u[j] = c->used[i];
		}
		free(c->used);
		c->used = u;
		c->usedcap = cap;
	}
	size_t i = hash_str(s) & (c->usedcap - 1);
	while (c->used[i])
		i = (i + 1) & (c->usedcap - 1);
	c->used[i] = s;
	c->nused++;
	return SN_OK;
}

static bool name_char(char ch, bool dot)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || (dot && ch == '.');
}

/* name in the charset [A-Za-z0-9_] (plus '.' when dot), not starting with a
 * digit (prefix), into the arena. */
static char *sanitize(ox_ctx *c, const char *name, bool dot, char prefix)
{
	size_t n = strlen(name);
	char *s = sn_alloc(c->w->arena, n + 2);
	if (!s)
		return NULL;
	size_t k = 0;
	if (n == 0 || (name[0] >= '0' && name[0] <= '9'))
		s[k++] = prefix;
	for (size_t i = 0; i < n; i++)
		s[k++] = name_char(name[i], dot) ? name[i] : '_';
	s[k] = 0;
	return s;
}

/* Names work node r after the ONNX value name, unique among value names. */
static int name_node(ox_ctx *c, ir_ref r, const char *onnx_name)
{
	char *base = sanitize(c, onnx_name, true, 'v');
	if (!base)
		return oom(c->e);
	const char *s = base;
	char *buf = NULL;
	for (unsigned k = 1; used_has(c, s); k++) {
		size_t n = strlen(base) + 16;
		if (!buf && !(buf = sn_alloc(c->w->arena, n)))
			return oom(c->e);
		snprintf(buf, n, "%s_%u", base, k);
		s = buf;
	}
	if (s == buf && !(s = sn_strdup(c->w->arena, buf)))
		return oom(c->e);
	c->w->nodes[r].name = s;
	return used_add(c, s);
}

/* Whether a name can be written verbatim in .sir, quoted (%"input:0"):
 * no control characters, quote or backslash. */
static bool quotable(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == '"' || *s == '\\' || *s == 0x7f)
			return false;
	return true;
}

/* Names work node r exactly as ONNX names the value (graph inputs and
 * outputs: the names a user sees and writes in inputs files), when the
 * name can be written and is free; otherwise as name_node does. */
static int name_node_exact(ox_ctx *c, ir_ref r, const char *onnx_name)
{
	if (!quotable(onnx_name) || used_has(c, onnx_name))
		return name_node(c, r, onnx_name);
	const char *s = sn_strdup(c->w->arena, onnx_name);
	if (!s)
		return oom(c->e);
	c->w->nodes[r].name = s;
	return used_add(c, s);
}

/* ---- known values ---- */

static int sync(ox_ctx *c)
{
	if (c->w->nnodes <= c->kcap)
		return SN_OK;
	uint32_t cap = c->w->cap > c->w->nnodes ? c->w->cap : c->w->nnodes;
	ir_tensor *kt = realloc(c->kt, cap * sizeof *kt);
	if (!kt)
		return oom(c->e);
	c->kt = kt;
	uint8_t *kf = realloc(c->kflag, cap);
	if (!kf)
		return oom(c->e);
	c->kflag = kf;
	memset(c->kflag + c->kcap, 0, cap - c->kcap);
	memset(c->kt + c->kcap, 0, (cap - c->kcap) * sizeof *kt);
	c->kcap = cap;
	return SN_OK;
}

const ir_node *ox_node(const ox_ctx *c, ir_ref r) { return &c->w->nodes[r]; }

const ir_tensor *ox_known(const ox_ctx *c, ir_ref r)
{
	return r < c->kcap && c->kflag[r] ? &c->kt[r] : NULL;
}

static size_t tensor_bytes(ir_dtype t, const ir_shape *s)
{
	return (size_t)ir_numel(s) * ir_dtype_size(t);
}

/* A work param node standing for a known value; takes t.data. */
static ir_ref add_known(ox_ctx *c, ir_tensor t, const char *key, uint8_t flag)
{
	sn_err le = {0};
	ir_ref r = ir_add_param(c->w, key, t.dtype, &t.shape, &le);
	if (r == IR_NONE || sync(c)) {
		free(t.data);
		if (r == IR_NONE)
			sn_errf(c->e, le.code, "%s: %s", c->name, le.msg);
		return IR_NONE;
	}
	c->kt[r] = t;
	c->kflag[r] = flag;
	return r;
}

ir_ref ox_value(ox_ctx *c, ir_tensor t) { return add_known(c, t, "", 1); }

ir_ref ox_iota(ox_ctx *c, const onnx_node *nd, ir_dtype t, const ir_shape *s, int64_t axis)
{
	sn_err le = {0};
	ir_ref r = ir_add_iota(c->w, t, s, axis, &le);
	if (r == IR_NONE) {
		ox_fail(c, nd, "%s", le.msg);
		return IR_NONE;
	}
	return sync(c) ? IR_NONE : r;
}

ir_ref ox_scalar(ox_ctx *c, ir_dtype t, double v)
{
	void *p = malloc(8);
	if (!p)
		return oom(c->e), IR_NONE;
	ir_store(t, p, 0, v);
	return ox_value(c, (ir_tensor){t, {0, {0}}, p, ir_dtype_size(t)});
}

static bool has_symv(const ir_tensor *t)
{
	if (t->dtype != IR_I64)
		return false;
	const int64_t *v = t->data;
	for (size_t i = 0; i < t->nbytes / 8; i++)
		if (OX_IS_SYMV(v[i]))
			return true;
	return false;
}

static ir_ref emit(ox_ctx *c, const onnx_node *nd, ir_op op, const ir_ref *in, uint32_t nin,
		   const ir_attrs *a, bool fold)
{
	sn_err le = {0};
	ir_ref r = ir_add(c->w, op, in, nin, a, &le);
	if (r == IR_NONE) {
		if (le.code == SN_EINPUT)
			ox_fail(c, nd, "%s", le.msg);
		else
			sn_errf(c->e, le.code, "%s", le.msg);
		return IR_NONE;
	}
	if (sync(c))
		return IR_NONE;
	const ir_node *n = &c->w->nodes[r];
	if (!fold || nin == 0 || ir_numel(&n->shape) < 0 ||
	    (int64_t)tensor_bytes(n->dtype, &n->shape) > FOLD_MAX_BYTES)
		return r;
	for (uint32_t i = 0; i < nin; i++) {
		const ir_tensor *t = ox_known(c, in[i]);
		if (!t)
			return r;
		if (has_symv(t) && ir_ops[op].kind != IR_K_MOVE)
			return r; /* arithmetic on a symbolic dim: not known */
	}
	ir_tensor *ops = malloc(nin * sizeof *ops), out;
	if (!ops)
		return oom(c->e), IR_NONE;
	for (uint32_t i = 0; i < nin; i++)
		ops[i] = c->kt[in[i]];
	int rc = ref_eval_node(c->w, n, ops, &out, &le);
	free(ops);
	if (rc != SN_OK) {
		if (le.code == SN_EINPUT)
			ox_fail(c, nd, "%s", le.msg);
		else
			sn_errf(c->e, le.code, "%s", le.msg);
		return IR_NONE;
	}
	c->kt[r] = out;
	c->kflag[r] = 1;
	return r;
}

ir_ref ox_emit(ox_ctx *c, const onnx_node *nd, ir_op op, const ir_ref *in, uint32_t nin,
	       const ir_attrs *a)
{
	return emit(c, nd, op, in, nin, a, true);
}

ir_ref ox_emit_live(ox_ctx *c, const onnx_node *nd, ir_op op, const ir_ref *in, uint32_t nin,
		    const ir_attrs *a)
{
	return emit(c, nd, op, in, nin, a, false);
}

/* ---- values ---- */

static ir_ref slot_ref(ox_ctx *c, ox_slot *sl)
{
	if (sl->ref != IR_NONE || !sl->init)
		return sl->ref;
	char what[600];
	snprintf(what, sizeof what, "initializer '%s'", sl->name);
	ir_tensor t;
	if (ox_tensor(c, sl->init, what, &t))
		return IR_NONE;
	ir_ref r = add_known(c, t, sl->name, 2);
	if (r == IR_NONE || name_node(c, r, sl->name))
		return IR_NONE;
	sl->named = true;
	return sl->ref = r;
}

bool ox_has(const onnx_node *nd, size_t i) { return i < nd->ninputs && nd->inputs[i][0]; }

ir_ref ox_in(ox_ctx *c, const onnx_node *nd, size_t i)
{
	if (!ox_has(nd, i))
		return IR_NONE;
	ox_slot *sl = slot_find(c, nd->inputs[i]);
	if (!sl) {
		ox_fail(c, nd, "input '%s' is not defined before this node", nd->inputs[i]);
		return IR_NONE;
	}
	return slot_ref(c, sl);
}

ir_ref ox_need(ox_ctx *c, const onnx_node *nd, size_t i)
{
	if (!ox_has(nd, i)) {
		ox_fail(c, nd, "input %zu is required", i);
		return IR_NONE;
	}
	return ox_in(c, nd, i);
}

int ox_out(ox_ctx *c, const onnx_node *nd, size_t k, ir_ref r)
{
	if (r == IR_NONE)
		return c->e->code ? c->e->code : ox_fail(c, nd, "output %zu has no value", k);
	if (k >= nd->noutputs || !nd->outputs[k][0])
		return SN_OK;
	const char *name = nd->outputs[k];
	if (slot_find(c, name))
		return ox_fail(c, nd, "value '%s' is defined twice", name);
	ox_slot *sl = slot_add(c, name);
	if (!sl)
		return oom(c->e);
	sl->ref = r;
	if (c->w->nodes[r].name)
		return SN_OK;
	sl->named = true;
	return name_node(c, r, name);
}

/* r is a graph input with a default (an initializer) whose value an op
 * needs now: the import fails and starts again with it pinned (an
 * initializer, as before IR version 4). */
static bool pin(ox_ctx *c, ir_ref r)
{
	const ir_node *n = &c->w->nodes[r];
	if (n->op != IR_OP_input || !n->name)
		return false;
	for (size_t k = 0; k < c->og->ninputs; k++) {
		ox_slot *sl = slot_find(c, c->og->inputs[k].name);
		if (sl && sl->ref == r && sl->init) {
			c->pin = sl->name;
			return true;
		}
	}
	return false;
}

int ox_ints(ox_ctx *c, const onnx_node *nd, size_t i, const char *what, bool syms, ir_ints *out)
{
	ir_ref r = ox_need(c, nd, i);
	if (r == IR_NONE)
		return c->e->code;
	const ir_tensor *t = ox_known(c, r);
	if (!t && pin(c, r))
		return ox_fail(c, nd, "%s (input %zu): graph input '%s' has an initializer: pinned", what, i, c->pin);
	if (!t)
		return ox_fail(c, nd, "%s (input %zu) must be known at import time; it depends on a graph input", what, i);
	if (t->dtype != IR_I64 && t->dtype != IR_I32)
		return ox_fail(c, nd, "%s (input %zu) must be int64 or int32, got %s", what, i,
			       ir_dtype_name(t->dtype));
	if (t->shape.rank > 1)
		return ox_fail(c, nd, "%s (input %zu) must be 0-d or 1-d", what, i);
	size_t n = t->nbytes / ir_dtype_size(t->dtype);
	if (n > IR_MAX_LIST)
		return ox_fail(c, nd, "%s (input %zu) has %zu entries, more than %d", what, i, n, IR_MAX_LIST);
	out->n = (int32_t)n;
	for (size_t k = 0; k < n; k++) {
		int64_t v;
		if (t->dtype == IR_I64)
			memcpy(&v, (const char *)t->data + 8 * k, 8);
		else
			v = (int64_t)ir_load(t->dtype, t->data, k); /* i32: exact */
		if (OX_IS_SYMV(v) && !syms)
			return ox_fail(c, nd, "%s (input %zu) depends on symbolic dim %s; bind it to a value when loading the model",
				       what, i, c->w->syms[v - OX_SYMV(0)]);
		out->v[k] = v;
	}
	return SN_OK;
}

int ox_num(ox_ctx *c, const onnx_node *nd, size_t i, const char *what, double *out)
{
	ir_ref r = ox_need(c, nd, i);
	if (r == IR_NONE)
		return c->e->code;
	const ir_tensor *t = ox_known(c, r);
	if (!t && pin(c, r))
		return ox_fail(c, nd, "%s (input %zu): graph input '%s' has an initializer: pinned", what, i, c->pin);
	if (!t)
		return ox_fail(c, nd, "%s (input %zu) must be known at import time; it depends on a graph input", what, i);
	if (t->nbytes != ir_dtype_size(t->dtype))
		return ox_fail(c, nd, "%s (input %zu) must hold one element", what, i);
	if (has_symv(t))
		return ox_fail(c, nd, "%s (input %zu) depends on a symbolic dim; bind it to a value when loading the model", what, i);
	*out = ir_load(t->dtype, t->data, 0);
	return SN_OK;
}

/* ---- attributes ---- */

const onnx_attr *ox_attr(const onnx_node *nd, const char *name)
{
	for (size_t i = 0; i < nd->nattrs; i++)
		if (strcmp(nd->attrs[i].name, name) == 0)
			return &nd->attrs[i];
	return NULL;
}

int64_t ox_ai(const onnx_node *nd, const char *name, int64_t def)
{
	const onnx_attr *a = ox_attr(nd, name);
	return a ? a->i : def;
}

double ox_af(const onnx_node *nd, const char *name, double def)
{
	const onnx_attr *a = ox_attr(nd, name);
	if (!a)
		return def;
	/* the decimal the exporter wrote (1e-5, not 9.99999974737875e-06) */
	char buf[32];
	sn_fmt_float(buf, a->f);
	return strtod(buf, NULL);
}

bool ox_as_is(const onnx_node *nd, const char *name, const char *def, const char *s)
{
	const onnx_attr *a = ox_attr(nd, name);
	if (!a)
		return strcmp(def, s) == 0;
	return a->s.n == strlen(s) && memcmp(a->s.p, s, a->s.n) == 0;
}

int ox_aints(ox_ctx *c, const onnx_node *nd, const char *name, ir_ints *out)
{
	const onnx_attr *a = ox_attr(nd, name);
	if (!a)
		return 0;
	if (a->nints > IR_MAX_LIST)
		return ox_fail(c, nd, "attribute %s has %zu entries, more than %d", name, a->nints,
			       IR_MAX_LIST), -1;
	out->n = (int32_t)a->nints;
	for (size_t i = 0; i < a->nints; i++)
		out->v[i] = a->ints[i];
	return 1;
}

int ox_reduce_axes(ox_ctx *c, const onnx_node *nd, ir_attrs *a, bool *noop)
{
	a->keepdims = ox_ai(nd, "keepdims", 1) != 0;
	if (ox_has(nd, 1)) {
		if (ox_ints(c, nd, 1, "axes", false, &a->axes))
			return c->e->code;
	} else if (ox_aints(c, nd, "axes", &a->axes) < 0) {
		return c->e->code;
	}
	*noop = a->axes.n == 0 && ox_ai(nd, "noop_with_empty_axes", 0);
	return SN_OK;
}

/* ---- graph inputs ---- */

static int input_dim(ox_ctx *c, const onnx_value_info *vi, const onnx_dim *d, int64_t *out)
{
	if (d->has_value) {
		if (d->value < 0)
			return ox_fail(c, NULL, "input '%s' has negative dim %lld", vi->name, (long long)d->value);
		*out = d->value;
		return SN_OK;
	}
	char fresh[32];
	const char *raw = d->param && d->param[0] ? d->param : NULL;
	if (!raw) {
		snprintf(fresh, sizeof fresh, "unk%u", c->nunk++);
		raw = fresh;
	}
	const char *s = sanitize(c, raw, false, 's');
	if (!s)
		return oom(c->e);
	for (size_t i = 0; i < c->nbinds; i++)
		if (strcmp(c->binds[i].name, raw) == 0 || strcmp(c->binds[i].name, s) == 0) {
			c->bind_used[i] = true;
			*out = c->binds[i].value;
			return SN_OK;
		}
	int k = ir_sym(c->w, s, strlen(s));
	if (k < 0)
		return ox_fail(c, NULL, "input '%s': more than %d symbolic dims", vi->name, IR_MAX_SYMS);
	*out = IR_SYM(k);
	return SN_OK;
}

static bool pinned(const ox_ctx *c, const char *name)
{
	for (size_t i = 0; i < c->npinned; i++)
		if (!strcmp(c->pinned[i], name))
			return true;
	return false;
}

/* Graph input vi with initializer sl->init, from IR version 4: an input
 * of the initializer's dtype and shape (the initializer is its default:
 * finish stores it in the weights under the input's name). */
static int add_default_input(ox_ctx *c, const onnx_value_info *vi, ox_slot *sl)
{
	const onnx_tensor *tp = sl->init;
	ir_dtype t;
	if (ox_map_dtype(tp->data_type, &t))
		return ox_fail(c, NULL, "graph input '%s': its initializer's data type %s (%d) is not supported", vi->name,
			       ox_onnx_type_name(tp->data_type), (int)tp->data_type);
	if (vi->has_type && vi->elem_type != tp->data_type)
		return ox_fail(c, NULL, "graph input '%s' is %s and its initializer %s", vi->name,
			       ox_onnx_type_name(vi->elem_type), ox_onnx_type_name(tp->data_type));
	if (tp->ndims > IR_MAX_RANK)
		return ox_fail(c, NULL, "graph input '%s' has rank %zu, above %d", vi->name, (size_t)tp->ndims, IR_MAX_RANK);
	ir_shape s = {(int32_t)tp->ndims, {0}};
	for (size_t k = 0; k < tp->ndims; k++)
		s.d[k] = tp->dims[k];
	if (vi->has_shape) {
		bool same = vi->rank == tp->ndims;
		for (size_t k = 0; same && k < vi->rank; k++)
			same = !vi->dims[k].has_value || vi->dims[k].value == tp->dims[k];
		if (!same)
			return ox_fail(c, NULL, "graph input '%s': its declared shape is not its initializer's", vi->name);
	}
	sn_err le = {0};
	ir_ref r = ir_add_input(c->w, "x", t, &s, &le);
	if (r == IR_NONE)
		return sn_errf(c->e, le.code, "%s: graph input '%s': %s", c->name, vi->name, le.msg);
	if (sync(c) || name_node_exact(c, r, vi->name))
		return c->e->code;
	sl->ref = r;
	sl->named = true;
	return SN_OK;
}

static int add_inputs(ox_ctx *c)
{
	const onnx_graph *og = c->og;
	for (size_t i = 0; i < og->ninputs; i++) {
		const onnx_value_info *vi = &og->inputs[i];
		ox_slot *sl = slot_find(c, vi->name);
		if (sl && sl->init && sl->ref == IR_NONE && c->overridable && !pinned(c, vi->name)) {
			if (add_default_input(c, vi, sl))
				return c->e->code;
			continue;
		}
		if (sl && sl->init)
			continue; /* before IR version 4 every initializer is listed as an input: a weight (or one pinned) */
		if (!vi->name[0])
			return ox_fail(c, NULL, "graph input %zu has no name", i);
		if (sl)
			return ox_fail(c, NULL, "graph input '%s' is listed twice", vi->name);
		if (!vi->has_type)
			return ox_fail(c, NULL, "graph input '%s' is not a tensor", vi->name);
		if (!vi->has_shape)
			return ox_fail(c, NULL, "graph input '%s' has no shape", vi->name);
		if (vi->rank > IR_MAX_RANK)
			return ox_fail(c, NULL, "graph input '%s' has rank %zu, above %d", vi->name, vi->rank, IR_MAX_RANK);
		ir_dtype t;
		if (ox_map_dtype(vi->elem_type, &t))
			return ox_fail(c, NULL, "graph input '%s': data type %s (%d) is not supported",
				       vi->name, ox_onnx_type_name(vi->elem_type), vi->elem_type);
		ir_shape s = {(int32_t)vi->rank, {0}};
		for (size_t k = 0; k < vi->rank; k++)
			if (input_dim(c, vi, &vi->dims[k], &s.d[k]))
				return c->e->code;
		sn_err le = {0};
		ir_ref r = ir_add_input(c->w, "x", t, &s, &le);
		if (r == IR_NONE)
			return sn_errf(c->e, le.code, "%s: graph input '%s': %s", c->name, vi->name, le.msg);
		if (sync(c) || name_node_exact(c, r, vi->name))
			return c->e->code;
		if (!(sl = slot_add(c, vi->name)))
			return oom(c->e);
		sl->ref = r;
		sl->named = true;
	}
	return SN_OK;
}

/* ---- supported ops ---- */

static bool default_domain(const char *d) { return !d[0] || strcmp(d, "ai.onnx") == 0; }

/* Every unsupported op type with its count and first node, in one message. */
static int check_ops(ox_ctx *c)
{
	typedef struct bad {
		const char *domain, *op, *first;
		size_t count, index;
	} bad;
	const onnx_graph *og = c->og;
	bad *b = NULL;
	size_t nb = 0;
	for (size_t i = 0; i < og->nnodes; i++) {
		const onnx_node *nd = &og->nodes[i];
		if (default_domain(nd->domain) && ox_find_op(nd->op_type))
			continue;
		size_t k = 0;
		while (k < nb && !(strcmp(b[k].op, nd->op_type) == 0 && strcmp(b[k].domain, nd->domain) == 0))
			k++;
		if (k == nb) {
			bad *nbp = realloc(b, (nb + 1) * sizeof *b);
			if (!nbp) {
				free(b);
				return oom(c->e);
			}
			b = nbp;
			b[nb++] = (bad){nd->domain, nd->op_type, nd->name, 0, i};
		}
		b[k].count++;
	}
	if (!nb)
		return SN_OK;
	sn_buf m = {0};
	for (size_t k = 0; k < nb; k++) {
		sn_buf_printf(&m, "%s%s%s%s (%zu node%s, first ", k ? ", " : "",
			      default_domain(b[k].domain) ? "" : b[k].domain,
			      default_domain(b[k].domain) ? "" : ".", b[k].op[0] ? b[k].op : "(empty op_type)",
			      b[k].count, b[k].count == 1 ? "" : "s");
		if (b[k].first[0])
			sn_buf_printf(&m, "'%s')", b[k].first);
		else
			sn_buf_printf(&m, "node #%zu)", b[k].index);
	}
	int rc = m.oom ? oom(c->e)
		       : sn_errf(c->e, SN_EINPUT,
				 "%s: unsupported op%s: %s; docs/ONNX.md lists the supported ops",
				 c->name, nb == 1 ? "" : "s", m.s);
	sn_buf_free(&m);
	free(b);
	return rc;
}

/* ---- the final graph ---- */

/* Copies the work graph's live part into a new graph: nodes that a graph
 * output needs and that are not known; known values they read become
 * params (initializers by their name; folded values over INLINE_MAX
 * elements by their value name) or inline constants (folded values up to
 * INLINE_MAX elements, single-element initializers: the scalars exporters
 * store as initializers are constants that passes can fold). */
static int finish(ox_ctx *c, const ir_ref *outs, size_t nouts, ir_wstore *ws, ir_graph **out)
{
	ir_graph *w = c->w;
	uint8_t *live = calloc(w->nnodes + 1, 1);
	ir_ref *map = malloc((w->nnodes + 1) * sizeof *map);
	ir_graph *g = ir_graph_new();
	sn_err le = {0};
	int rc = SN_OK;
	if (!live || !map || !g) {
		rc = oom(c->e);
		goto done;
	}
	for (size_t i = 0; i < nouts; i++)
		live[outs[i]] = 1;
	for (uint32_t i = w->nnodes; i-- > 0;)
		if (live[i] && !ox_known(c, i))
			for (uint32_t k = 0; k < w->nodes[i].nin; k++)
				live[w->nodes[i].in[k]] = 1;
	for (uint32_t i = 0; i < w->nsyms; i++)
		if (ir_sym(g, w->syms[i], strlen(w->syms[i])) < 0) {
			rc = oom(c->e);
			goto done;
		}
	for (uint32_t i = 0; i < w->ninputs; i++) {
		const ir_node *n = &w->nodes[w->inputs[i]];
		map[w->inputs[i]] = ir_add_input(g, n->name, n->dtype, &n->shape, &le);
		if (map[w->inputs[i]] == IR_NONE)
			goto fail;
	}
	/* an input's default (its initializer) in the weights under its name */
	for (size_t i = 0; i < c->og->ninputs; i++) {
		ox_slot *sl = slot_find(c, c->og->inputs[i].name);
		if (!sl || !sl->init || sl->ref == IR_NONE || w->nodes[sl->ref].op != IR_OP_input)
			continue;
		char what[600];
		snprintf(what, sizeof what, "initializer '%s' (the default of graph input '%s')", sl->name, sl->name);
		ir_tensor t;
		if ((rc = ox_tensor(c, sl->init, what, &t)))
			goto done;
		if (ir_ws_put(ws, w->nodes[sl->ref].name, t, &le) != SN_OK) {
			free(t.data);
			goto fail;
		}
		sn_log(SN_LOG_INFO, "%s: graph input '%s' has an initializer: an input with it as its default (a run may "
				    "give another value)", c->name, sl->name);
	}
	for (uint32_t i = 0; i < w->nnodes; i++) {
		const ir_node *n = &w->nodes[i];
		if (!live[i] || n->op == IR_OP_input)
			continue;
		ir_tensor *t = ox_known(c, i) ? &c->kt[i] : NULL;
		ir_ref r;
		if (t && has_symv(t)) {
			rc = sn_errf(c->e, SN_EINPUT, "%s: value '%s' depends on a symbolic dim; bind it to a value when loading the model",
				     c->name, n->name ? n->name : "?");
			goto done;
		} else if (t && ir_numel(&t->shape) <= (c->kflag[i] == 1 ? INLINE_MAX : 1)) {
			r = ir_add_const(g, t->dtype, &t->shape, t->data, &le);
		} else if (t) {
			char key[300];
			const char *k = c->kflag[i] == 2 ? n->pname : n->name ? n->name : "folded";
			snprintf(key, sizeof key, "%s", k);
			for (unsigned s = 1; c->kflag[i] == 1 && ir_ws_get(ws, key); s++)
				snprintf(key, sizeof key, "%s.%u", k, s);
			r = ir_add_param(g, key, t->dtype, &t->shape, &le);
			if (r != IR_NONE) {
				ir_tensor mv = *t;
				t->data = NULL;
				c->kflag[i] = 0;
				if (ir_ws_put(ws, key, mv, &le) != SN_OK)
					goto fail;
			}
		} else if (n->op == IR_OP_iota) {
			r = ir_add_iota(g, n->dtype, &n->shape, n->attrs->axis, &le);
		} else {
			ir_ref *in = malloc((n->nin + 1) * sizeof *in);
			if (!in) {
				rc = oom(c->e);
				goto done;
			}
			for (uint32_t k = 0; k < n->nin; k++)
				in[k] = map[n->in[k]];
			r = ir_add(g, n->op, in, n->nin, n->attrs, &le);
			free(in);
		}
		if (r == IR_NONE)
			goto fail;
		if (n->name && ir_set_name(g, r, n->name)) {
			rc = oom(c->e);
			goto done;
		}
		map[i] = r;
	}
	for (size_t i = 0; i < nouts; i++)
		if (ir_add_output(g, map[outs[i]])) {
			rc = oom(c->e);
			goto done;
		}
	if (ir_verify(g, &le) != SN_OK)
		goto fail;
	*out = g;
	g = NULL;
	goto done;
fail:
	rc = sn_errf(c->e, le.code ? le.code : SN_EINTERNAL, "%s: %s", c->name, le.msg);
done:
	ir_graph_free(g);
	free(live);
	free(map);
	return rc;
}

/* ---- driver ---- */

/* Graph output i carries its ONNX name. A value that passed through
 * Identity, Dropout, a bound-less Clip, ... is the node of another value:
 * that node is renamed after the output when it is computed here and is no
 * other output; a graph input (which keeps its name) or a node that is
 * several outputs gets a node of its own instead: a reshape to its own
 * shape (a view; folded when the value is known), named after the output. */
static int output_name(ox_ctx *c, const ox_slot *sl, ir_ref *outs, size_t nouts, size_t i)
{
	size_t same = 0;
	for (size_t k = 0; k < nouts; k++)
		same += outs[k] == outs[i];
	bool first = true;
	for (size_t k = 0; k < i; k++)
		first &= outs[k] != outs[i];
	const ir_node *n = ox_node(c, outs[i]);
	/* the node named after this value takes its exact name (the first of
	 * several outputs keeps the node); a graph input has its own already */
	if (sl->named && (same == 1 || first)) {
		if (n->op == IR_OP_input || (n->name && strcmp(n->name, sl->name) == 0))
			return SN_OK;
		return name_node_exact(c, outs[i], sl->name);
	}
	if (same == 1 && n->op != IR_OP_input)
		return name_node_exact(c, outs[i], sl->name);
	ir_attrs a;
	ir_attrs_init(IR_OP_reshape, &a);
	a.shape.n = n->shape.rank;
	memcpy(a.shape.v, n->shape.d, (size_t)n->shape.rank * sizeof *a.shape.v);
	ir_ref r = ox_emit(c, NULL, IR_OP_reshape, &outs[i], 1, &a);
	if (r == IR_NONE || name_node_exact(c, r, sl->name))
		return c->e->code ? c->e->code : SN_EINTERNAL;
	outs[i] = r;
	return SN_OK;
}

static int translate(ox_ctx *c, const onnx_model *m, ir_wstore *ws, ir_graph **out)
{
	if (!m->graph)
		return ox_fail(c, NULL, "the model has no graph");
	c->og = m->graph;
	const onnx_graph *og = c->og;
	c->opset = -1;
	for (size_t i = 0; i < m->nopsets; i++)
		if (default_domain(m->opsets[i].domain))
			c->opset = m->opsets[i].version;
	if (c->opset < 0)
		return ox_fail(c, NULL, "the model imports no opset of the default domain");
	if (c->opset < 11 || c->opset > 22)
		return ox_fail(c, NULL, "opset %lld is not supported (sinter reads opsets 11 to 22)",
			       (long long)c->opset);
	if (og->nsparse_init)
		return ox_fail(c, NULL, "sparse initializers are not supported");
	c->overridable = m->ir_version >= 4;
	if (check_ops(c))
		return c->e->code;
	for (size_t i = 0; i < og->ninit; i++) {
		const onnx_tensor *tp = &og->inits[i];
		if (!tp->name[0])
			return ox_fail(c, NULL, "initializer %zu has no name", i);
		if (slot_find(c, tp->name))
			return ox_fail(c, NULL, "initializer '%s' is defined twice", tp->name);
		ox_slot *sl = slot_add(c, tp->name);
		if (!sl)
			return oom(c->e);
		sl->init = tp;
	}
	if (add_inputs(c))
		return c->e->code;
	for (size_t i = 0; i < og->nnodes; i++) {
		const onnx_node *nd = &og->nodes[i];
		const ox_op *op = ox_find_op(nd->op_type);
		if (nd->ninputs < op->min_in || nd->ninputs > op->max_in) {
			if (op->min_in == op->max_in)
				return ox_fail(c, nd, "takes %u inputs, got %zu", op->min_in, nd->ninputs);
			return ox_fail(c, nd, "takes %u to %u inputs, got %zu", op->min_in, op->max_in,
				       nd->ninputs);
		}
		for (size_t k = 0; k < nd->nattrs; k++)
			if (nd->attrs[k].ref_attr_name)
				return ox_fail(c, nd, "attribute %s refers to a function attribute", nd->attrs[k].name);
		if (op->fn(c, nd))
			return c->e->code ? c->e->code : ox_fail(c, nd, "translation failed");
		for (size_t k = 0; k < nd->noutputs; k++)
			if (nd->outputs[k][0] && !slot_find(c, nd->outputs[k]))
				return ox_fail(c, nd, "output %zu ('%s') is not supported", k, nd->outputs[k]);
	}
	if (!og->noutputs)
		return ox_fail(c, NULL, "the graph has no outputs");
	ir_ref *outs = malloc(og->noutputs * sizeof *outs);
	if (!outs)
		return oom(c->e);
	for (size_t i = 0; i < og->noutputs; i++) {
		ox_slot *sl = slot_find(c, og->outputs[i].name);
		outs[i] = sl ? slot_ref(c, sl) : IR_NONE;
		if (outs[i] == IR_NONE) {
			free(outs);
			return c->e->code ? c->e->code
					  : ox_fail(c, NULL, "graph output '%s' is not defined", og->outputs[i].name);
		}
	}
	ir_ref *given = malloc(og->noutputs * sizeof *given);
	if (!given) {
		free(outs);
		return oom(c->e);
	}
	memcpy(given, outs, og->noutputs * sizeof *given);
	for (size_t i = 0; i < og->noutputs; i++)
		if (output_name(c, slot_find(c, og->outputs[i].name), given, og->noutputs, i)) {
			free(outs);
			free(given);
			return c->e->code;
		}
	free(outs);
	outs = given;
	int rc = finish(c, outs, og->noutputs, ws, out);
	free(outs);
	return rc;
}

/* One import with the inputs pinned so far; *pin (free it) names one more
 * to pin when that is why it failed. */
static int load_once(const void *buf, size_t len, const char *name, const char *dir, const sir_bind *binds,
		     size_t nbinds, ir_graph **out, ir_wstore *ws, char ***files, size_t *nfiles, char **pinned,
		     size_t npinned, char **pin, sn_err *e)
{
	*out = NULL;
	*pin = NULL;
	ox_ctx c = {0};
	c.pinned = pinned;
	c.npinned = npinned;
	c.keep_files = files != NULL;
	c.name = name ? name : "<input>";
	c.dir = dir;
	c.binds = binds;
	c.nbinds = nbinds;
	c.e = e;
	sn_arena *a = sn_arena_new();
	c.w = ir_graph_new();
	c.bind_used = calloc(nbinds + 1, sizeof *c.bind_used);
	int rc;
	onnx_model *m;
	if (!a || !c.w || !c.bind_used)
		rc = oom(e);
	else if ((rc = onnx_pb_decode(buf, len, c.name, a, &m, e)) == SN_OK)
		rc = translate(&c, m, ws, out);
	if (rc != SN_OK && c.pin && !(*pin = strdup(c.pin)))
		rc = oom(e);
	for (size_t i = 0; rc == SN_OK && i < nbinds; i++)
		if (!c.bind_used[i])
			rc = sn_errf(e, SN_EUSAGE, "symbol %s is bound but %s has no symbol %s",
				     binds[i].name, c.name, binds[i].name);
	if (rc != SN_OK) {
		ir_graph_free(*out);
		*out = NULL;
	} else if (!((*out)->path = sn_strdup((*out)->arena, c.name))) {
		ir_graph_free(*out);
		*out = NULL;
		rc = oom(e);
	}
	for (uint32_t i = 0; i < c.kcap; i++)
		if (c.kflag[i])
			free(c.kt[i].data);
	free(c.kt);
	free(c.kflag);
	free(c.slots);
	free(c.used);
	free(c.bind_used);
	ir_graph_free(c.w);
	sn_arena_free(a);
	if (files && rc == SN_OK) {
		*files = c.files;
		*nfiles = c.nfiles;
	} else {
		onnx_files_free(c.files, c.nfiles);
	}
	return rc;
}

/* load_once until no input is left to pin (each pinned at most once). */
static int load(const void *buf, size_t len, const char *name, const char *dir, const sir_bind *binds,
		size_t nbinds, ir_graph **out, ir_wstore *ws, char ***files, size_t *nfiles, sn_err *e)
{
	char **pinned = NULL;
	size_t npinned = 0;
	int rc;
	for (;;) {
		char *pin = NULL;
		rc = load_once(buf, len, name, dir, binds, nbinds, out, ws, files, nfiles, pinned, npinned, &pin, e);
		if (rc == SN_OK || !pin)
			break;
		char **more = realloc(pinned, (npinned + 1) * sizeof *more);
		if (!more) {
			free(pin);
			rc = oom(e);
			break;
		}
		pinned = more;
		pinned[npinned++] = pin;
		*e = (sn_err){0};
		sn_log(SN_LOG_INFO, "%s: graph input '%s' has an initializer and sets a value the import needs (a shape, "
				    "an axis): it is that initializer, not an input",
		       name ? name : "<input>", pin);
	}
	for (size_t i = 0; i < npinned; i++)
		free(pinned[i]);
	free(pinned);
	return rc;
}

void onnx_files_free(char **files, size_t n)
{
	for (size_t i = 0; files && i < n; i++)
		free(files[i]);
	free(files);
}

int onnx_load_buffer(const void *buf, size_t len, const char *name, const sir_bind *binds,
		     size_t nbinds, ir_graph **out, ir_wstore *ws, sn_err *e)
{
	return load(buf, len, name, NULL, binds, nbinds, out, ws, NULL, NULL, e);
}

int onnx_load(const char *path, const sir_bind *binds, size_t nbinds, ir_graph **out,
	      ir_wstore *ws, sn_err *e)
{
	return onnx_load_files(path, binds, nbinds, out, ws, NULL, NULL, e);
}

int onnx_load_files(const char *path, const sir_bind *binds, size_t nbinds, ir_graph **out,
		    ir_wstore *ws, char ***files, size_t *nfiles, sn_err *e)
{
	*out = NULL;
	if (files) {
		*files = NULL;
		*nfiles = 0;
	}
	void *buf;
	size_t len;
	int rc = sn_read_file(path, 0, ONNX_MAX_FILE, NULL, &buf, &len, e);
	if (rc)
		return rc;
	char *dir = sn_dirname(path);
	if (!dir) {
		free(buf);
		return oom(e);
	}
	rc = load(buf, len, path, dir, binds, nbinds, out, ws, files, nfiles, e);
	free(dir);
	free(buf);
	return rc;
}
