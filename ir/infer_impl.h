/* infer_impl.h: what the shape rules share, internal to ir/infer*.c:
 * messages naming types and dims, operand checks, broadcasting, axes and
 * windows, and one declaration per rule of ops.def's rule column. The
 * rules live by op family, as the reference interpreter's kernels do
 * (ir/ref/): infer_elem.c, infer_reduce.c, infer_linalg.c, infer_conv.c,
 * infer_move.c, infer_index.c; infer.c dispatches. */
#ifndef SINTER_IR_INFER_IMPL_H
#define SINTER_IR_INFER_IMPL_H

#include "ir.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define LL(x) ((long long)(x))
#define IN(i) (&g->nodes[n->in[i]])

/* ---- messages ---------------------------------------------------------- */

/* A short text returned by value, so that a call can sit in a printf
 * argument list (C11 keeps the temporary alive for the full expression). */
typedef struct tbuf {
	char s[256];
} tbuf;

static inline void bput(tbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void bput(tbuf *b, const char *fmt, ...)
{
	size_t k = strlen(b->s);
	if (k + 1 >= sizeof b->s)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->s + k, sizeof b->s - k, fmt, ap);
	va_end(ap);
}

static inline int64_t sym_id(int64_t d) { return -(d + 1); } /* d a symbol */

static inline void bput_dim(tbuf *b, const ir_graph *g, int64_t d)
{
	if (d >= 0)
		bput(b, "%lld", LL(d));
	else if (d == IR_DIM_INFER)
		bput(b, "-1");
	else if (sym_id(d) < (int64_t)g->nsyms && g->syms[sym_id(d)])
		bput(b, "%s", g->syms[sym_id(d)]);
	else
		bput(b, "?%lld", LL(sym_id(d)));
}

static inline tbuf dim_s(const ir_graph *g, int64_t d)
{
	tbuf b = {""};
	bput_dim(&b, g, d);
	return b;
}

/* "[2,N,3]" */
static inline tbuf dims_s(const ir_graph *g, const int64_t *d, int n)
{
	tbuf b = {"["};
	for (int i = 0; i < n; i++) {
		if (i)
			bput(&b, ",");
		bput_dim(&b, g, d[i]);
	}
	bput(&b, "]");
	return b;
}

/* "f32[2,N,3]" */
static inline tbuf type_s(const ir_graph *g, ir_dtype t, const ir_shape *s)
{
	int r = s->rank < 0 ? 0 : s->rank > IR_MAX_RANK ? IR_MAX_RANK : s->rank;
	tbuf d = dims_s(g, s->d, r), b = {""};
	bput(&b, "%s%s", ir_dtype_name(t), d.s);
	return b;
}

/* a plain integer list "[1,-2]" */
static inline tbuf ints_s(const ir_ints *v)
{
	tbuf b = {"["};
	for (int i = 0; i < v->n; i++)
		bput(&b, "%s%lld", i ? "," : "", LL(v->v[i]));
	bput(&b, "]");
	return b;
}

#define TY(x) type_s(g, (x)->dtype, &(x)->shape).s
#define DIM(d) dim_s(g, (d)).s

static inline int fail(sn_err *e, const ir_node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline int fail(sn_err *e, const ir_node *n, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return sn_errf(e, SN_EINPUT, "%s: %s", ir_ops[n->op].name, msg);
}

/* ---- helpers ------------------------------------------------------------- */

static inline bool dim_ok(const ir_graph *g, int64_t d)
{
	return d >= 0 || (d != IR_DIM_INFER && sym_id(d) < (int64_t)g->nsyms);
}

static inline bool is_float(ir_dtype t) { return ir_dtype_is_float(t); }

static inline int need_float(const ir_graph *g, const ir_node *n, const ir_node *x, const char *what, sn_err *e)
{
	if (is_float(x->dtype))
		return SN_OK;
	return fail(e, n, "expects a float %s, got %s", what, TY(x));
}

static inline int need_numeric(const ir_graph *g, const ir_node *n, const ir_node *x, const char *what, sn_err *e)
{
	if (x->dtype != IR_BOOL)
		return SN_OK;
	return fail(e, n, "expects a numeric %s, got %s", what, TY(x));
}

/* y (named what) must have x's dtype. */
static inline int same_dtype(const ir_graph *g, const ir_node *n, const ir_node *x, const char *xname,
			     const ir_node *y, const char *what, sn_err *e)
{
	if (x->dtype == y->dtype)
		return SN_OK;
	return fail(e, n, "%s %s must have the dtype of %s (%s; no implicit promotion)",
		    what, TY(y), xname, ir_dtype_name(x->dtype));
}

/* numpy broadcasting: dims align from the right; equal dims (the same
 * symbol included) stay, a 1 stretches; anything else does not broadcast. */
static inline bool bcast(const ir_shape *a, const ir_shape *b, ir_shape *r)
{
	ir_shape o = {0};
	o.rank = a->rank > b->rank ? a->rank : b->rank;
	for (int i = 0; i < o.rank; i++) {
		int ia = i - (o.rank - a->rank), ib = i - (o.rank - b->rank);
		int64_t x = ia >= 0 ? a->d[ia] : 1, y = ib >= 0 ? b->d[ib] : 1;
		if (x == y || y == 1)
			o.d[i] = x;
		else if (x == 1)
			o.d[i] = y;
		else
			return false;
	}
	*r = o;
	return true;
}

/* The first k dims of s, as a shape. */
static inline ir_shape head(const ir_shape *s, int k)
{
	ir_shape h = {0};
	h.rank = k < 0 ? 0 : k;
	for (int i = 0; i < h.rank; i++)
		h.d[i] = s->d[i];
	return h;
}

static inline bool push_dim(ir_shape *s, int64_t d)
{
	if (s->rank >= IR_MAX_RANK)
		return false;
	s->d[s->rank++] = d;
	return true;
}

static inline int axis_of(const ir_graph *g, const ir_node *n, int64_t axis, const ir_node *x, int *out, sn_err *e)
{
	*out = ir_axis(axis, x->shape.rank);
	if (*out < 0)
		return fail(e, n, "axis %lld is out of range for %s", LL(axis), TY(x));
	return SN_OK;
}

/* A bit mask of the axes in v, normalized against rank; duplicates and
 * axes out of range are errors. ctx names what the rank belongs to. */
static inline int axes_mask(const ir_graph *g, const ir_node *n, const ir_ints *v, int rank,
			    const char *ctx, unsigned *mask, sn_err *e)
{
	*mask = 0;
	for (int i = 0; i < v->n; i++) {
		int a = ir_axis(v->v[i], rank);
		if (a < 0)
			return fail(e, n, "axis %lld is out of range for %s", LL(v->v[i]), ctx);
		if (*mask & (1u << a))
			return fail(e, n, "axis %lld appears twice in axes %s", LL(v->v[i]), ints_s(v).s);
		*mask |= 1u << a;
	}
	return SN_OK;
}

/* Whether v has exactly k entries, all > 0 (or >= 0 if zero_ok). */
static inline bool ints_ok(const ir_ints *v, int k, bool zero_ok)
{
	if (v->n != k)
		return false;
	for (int i = 0; i < k; i++)
		if (v->v[i] < (zero_ok ? 0 : 1))
			return false;
	return true;
}

/* The output size of a sliding window along one dim (PyTorch's
 * pooling_output_shape): floor or ceil of
 * (in + p0 + p1 - dil*(k-1) - 1) / st + 1; with ceil_mode the last window
 * must start inside the input or the left padding. *out is 0 when the
 * window does not fit. False on overflow. */
static inline bool window(int64_t in, int64_t p0, int64_t p1, int64_t k, int64_t dil, int64_t st,
			  bool ceil_mode, int64_t *out)
{
	int64_t span, num;
	if (__builtin_mul_overflow(dil, k - 1, &span) || __builtin_add_overflow(in, p0, &num) ||
	    __builtin_add_overflow(num, p1, &num) || __builtin_sub_overflow(num, span, &num))
		return false;
	num -= 1; /* cannot overflow: num >= INT64_MIN + span + 1 */
	if (num < 0) {
		*out = 0;
		return true;
	}
	if (ceil_mode && __builtin_add_overflow(num, st - 1, &num))
		return false;
	*out = num / st + 1;
	if (ceil_mode && (*out - 1) * st >= in + p0)
		(*out)--;
	return true;
}

/* ---- the rules ------------------------------------------------------------ */

/* Each writes the result's dtype and shape of node n of g, or fails with
 * SN_EINPUT and a message that starts with the op's name. */
#define OP(id, kind, mn, mx, attrs, req, rule) \
	int ir_rule_##rule(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e);
#include "ops.def"
#undef OP

#endif
