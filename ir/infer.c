/* infer.c: shape and dtype inference. ir_infer dispatches through a table
 * expanded from ops.def's rule column to one static rule_<rule> per row.
 * Semantics are PyTorch's or ONNX's (docs/IR.md, The ops); every rule checks its
 * operands and attributes and fails with SN_EINPUT and a message that starts
 * with the op's name. Dim arithmetic is checked: an overflow is an error. */
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

static void bput(tbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bput(tbuf *b, const char *fmt, ...)
{
	size_t k = strlen(b->s);
	if (k + 1 >= sizeof b->s)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->s + k, sizeof b->s - k, fmt, ap);
	va_end(ap);
}

static int64_t sym_id(int64_t d) { return -(d + 1); } /* d a symbol */

static void bput_dim(tbuf *b, const ir_graph *g, int64_t d)
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

static tbuf dim_s(const ir_graph *g, int64_t d)
{
	tbuf b = {""};
	bput_dim(&b, g, d);
	return b;
}

/* "[2,N,3]" */
static tbuf dims_s(const ir_graph *g, const int64_t *d, int n)
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
static tbuf type_s(const ir_graph *g, ir_dtype t, const ir_shape *s)
{
	int r = s->rank < 0 ? 0 : s->rank > IR_MAX_RANK ? IR_MAX_RANK : s->rank;
	tbuf d = dims_s(g, s->d, r), b = {""};
	bput(&b, "%s%s", ir_dtype_name(t), d.s);
	return b;
}

/* a plain integer list "[1,-2]" */
static tbuf ints_s(const ir_ints *v)
{
	tbuf b = {"["};
	for (int i = 0; i < v->n; i++)
		bput(&b, "%s%lld", i ? "," : "", LL(v->v[i]));
	bput(&b, "]");
	return b;
}

#define TY(x) type_s(g, (x)->dtype, &(x)->shape).s
#define DIM(d) dim_s(g, (d)).s

static int fail(sn_err *e, const ir_node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(sn_err *e, const ir_node *n, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return sn_errf(e, SN_EINPUT, "%s: %s", ir_ops[n->op].name, msg);
}

/* ---- helpers ------------------------------------------------------------- */

static bool dim_ok(const ir_graph *g, int64_t d)
{
	return d >= 0 || (d != IR_DIM_INFER && sym_id(d) < (int64_t)g->nsyms);
}

static bool is_float(ir_dtype t) { return ir_dtype_is_float(t); }

static int need_float(const ir_graph *g, const ir_node *n, const ir_node *x, const char *what, sn_err *e)
{
	if (is_float(x->dtype))
		return SN_OK;
	return fail(e, n, "expects a float %s, got %s", what, TY(x));
}

static int need_numeric(const ir_graph *g, const ir_node *n, const ir_node *x, const char *what, sn_err *e)
{
	if (x->dtype != IR_BOOL)
		return SN_OK;
	return fail(e, n, "expects a numeric %s, got %s", what, TY(x));
}

/* y (named what) must have x's dtype. */
static int same_dtype(const ir_graph *g, const ir_node *n, const ir_node *x, const char *xname,
		      const ir_node *y, const char *what, sn_err *e)
{
	if (x->dtype == y->dtype)
		return SN_OK;
	return fail(e, n, "%s %s must have the dtype of %s (%s; no implicit promotion)",
		    what, TY(y), xname, ir_dtype_name(x->dtype));
}

/* numpy broadcasting: dims align from the right; equal dims (the same
 * symbol included) stay, a 1 stretches; anything else does not broadcast. */
static bool bcast(const ir_shape *a, const ir_shape *b, ir_shape *r)
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
static ir_shape head(const ir_shape *s, int k)
{
	ir_shape h = {0};
	h.rank = k < 0 ? 0 : k;
	for (int i = 0; i < h.rank; i++)
		h.d[i] = s->d[i];
	return h;
}

static bool push_dim(ir_shape *s, int64_t d)
{
	if (s->rank >= IR_MAX_RANK)
		return false;
	s->d[s->rank++] = d;
	return true;
}

static int axis_of(const ir_graph *g, const ir_node *n, int64_t axis, const ir_node *x, int *out, sn_err *e)
{
	*out = ir_axis(axis, x->shape.rank);
	if (*out < 0)
		return fail(e, n, "axis %lld is out of range for %s", LL(axis), TY(x));
	return SN_OK;
}

/* A bit mask of the axes in v, normalized against rank; duplicates and
 * axes out of range are errors. ctx names what the rank belongs to. */
static int axes_mask(const ir_graph *g, const ir_node *n, const ir_ints *v, int rank,
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
static bool ints_ok(const ir_ints *v, int k, bool zero_ok)
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
static bool window(int64_t in, int64_t p0, int64_t p1, int64_t k, int64_t dil, int64_t st,
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

/* ---- sources ------------------------------------------------------------- */

static int rule_source(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	if ((unsigned)n->dtype >= IR_NDTYPES)
		return fail(e, n, "invalid dtype %d", (int)n->dtype);
	if (n->shape.rank < 0 || n->shape.rank > IR_MAX_RANK)
		return fail(e, n, "rank %d is out of range (0 to %d)", n->shape.rank, IR_MAX_RANK);
	for (int i = 0; i < n->shape.rank; i++) {
		int64_t d = n->shape.d[i];
		if (d == IR_DIM_INFER)
			return fail(e, n, "dim %d is -1, not a size or a symbol", i);
		if (!dim_ok(g, d))
			return fail(e, n, "dim %d names symbol %lld, which the graph does not have",
				    i, LL(sym_id(d)));
	}
	*t = n->dtype;
	*s = n->shape;
	return SN_OK;
}

static int rule_iota(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	int a;
	if (rule_source(g, n, t, s, e) != SN_OK || axis_of(g, n, n->attrs->axis, n, &a, e) != SN_OK)
		return e->code;
	return need_numeric(g, n, n, "dtype", e);
}

/* ---- elementwise ---------------------------------------------------------- */

static int rule_unary(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	if (need_numeric(g, n, IN(0), "operand", e) != SN_OK)
		return e->code;
	*t = IN(0)->dtype;
	*s = IN(0)->shape;
	return SN_OK;
}

static int rule_unary_float(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	if (need_float(g, n, IN(0), "operand", e) != SN_OK)
		return e->code;
	*t = IN(0)->dtype;
	*s = IN(0)->shape;
	return SN_OK;
}

static int rule_cast(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	*t = n->attrs->dtype;
	*s = IN(0)->shape;
	return SN_OK;
}

/* Same dtype and broadcast shapes; the dtype class is checked by callers. */
static int binary_common(const ir_graph *g, const ir_node *n, ir_shape *s, sn_err *e)
{
	const ir_node *a = IN(0), *b = IN(1);
	if (a->dtype != b->dtype)
		return fail(e, n, "operands %s and %s have different dtypes (no implicit promotion)",
			    TY(a), TY(b));
	if (!bcast(&a->shape, &b->shape, s))
		return fail(e, n, "shapes %s and %s do not broadcast", TY(a), TY(b));
	return SN_OK;
}

static int rule_binary(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	if (binary_common(g, n, s, e) != SN_OK || need_numeric(g, n, IN(0), "operand", e) != SN_OK)
		return e->code;
	*t = IN(0)->dtype;
	return SN_OK;
}

static int rule_binary_float(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	if (binary_common(g, n, s, e) != SN_OK || need_float(g, n, IN(0), "operand", e) != SN_OK)
		return e->code;
	*t = IN(0)->dtype;
	return SN_OK;
}

static int rule_compare(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	if (binary_common(g, n, s, e) != SN_OK)
		return e->code;
	*t = IR_BOOL;
	return SN_OK;
}

static int rule_where(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *c = IN(0), *x = IN(1), *y = IN(2);
	if (c->dtype != IR_BOOL)
		return fail(e, n, "condition %s must be bool", TY(c));
	if (x->dtype != y->dtype)
		return fail(e, n, "operands %s and %s have different dtypes (no implicit promotion)",
			    TY(x), TY(y));
	ir_shape r;
	if (!bcast(&c->shape, &x->shape, &r) || !bcast(&r, &y->shape, s))
		return fail(e, n, "shapes %s, %s and %s do not broadcast", TY(c), TY(x), TY(y));
	*t = x->dtype;
	return SN_OK;
}

/* ---- reductions and normalizations --------------------------------------- */

static int rule_reduce(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	const ir_attrs *at = n->attrs;
	unsigned mask;
	if (need_numeric(g, n, x, "operand", e) != SN_OK ||
	    axes_mask(g, n, &at->axes, x->shape.rank, TY(x), &mask, e) != SN_OK)
		return e->code;
	if (at->axes.n == 0)
		mask = (1u << x->shape.rank) - 1;
	ir_shape r = {0};
	for (int i = 0; i < x->shape.rank; i++)
		if (!(mask & (1u << i)))
			r.d[r.rank++] = x->shape.d[i];
		else if (at->keepdims)
			r.d[r.rank++] = 1;
	*t = x->dtype;
	*s = r;
	return SN_OK;
}

static int rule_axis_float(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	int a;
	if (need_float(g, n, IN(0), "operand", e) != SN_OK ||
	    axis_of(g, n, n->attrs->axis, IN(0), &a, e) != SN_OK)
		return e->code;
	*t = IN(0)->dtype;
	*s = IN(0)->shape;
	return SN_OK;
}

/* layer_norm(x, weight?, bias?) and rms_norm(x, weight?): normalized over
 * the dims [axis, rank); weight and bias have exactly those dims. */
static int rule_layer_norm(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	static const char *const names[] = {"x", "weight", "bias"};
	const ir_node *x = IN(0);
	int a;
	if (need_float(g, n, x, "operand", e) != SN_OK ||
	    axis_of(g, n, n->attrs->axis, x, &a, e) != SN_OK)
		return e->code;
	double eps = n->attrs->eps;
	if (!(eps > 0) || isinf(eps)) {
		char b[32];
		sn_fmt_double(b, eps);
		return fail(e, n, "eps must be a finite number > 0, got %s", b);
	}
	int k = x->shape.rank - a;
	for (uint32_t i = 1; i < n->nin; i++) {
		const ir_node *w = IN(i);
		if (need_float(g, n, w, names[i], e) != SN_OK)
			return e->code;
		bool ok = w->shape.rank == k;
		for (int j = 0; ok && j < k; j++)
			ok = w->shape.d[j] == x->shape.d[a + j];
		if (!ok)
			return fail(e, n, "%s %s must have the shape %s of x's dims from axis %d",
				    names[i], TY(w), dims_s(g, x->shape.d + a, k).s, a);
	}
	*t = x->dtype;
	*s = x->shape;
	return SN_OK;
}

static int rule_batch_norm(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	static const char *const names[] = {"x", "weight", "bias", "mean", "var"};
	const ir_node *x = IN(0);
	if (need_float(g, n, x, "operand", e) != SN_OK)
		return e->code;
	if (x->shape.rank < 2)
		return fail(e, n, "x %s must have rank >= 2", TY(x));
	double eps = n->attrs->eps;
	if (!(eps >= 0) || isinf(eps)) {
		char b[32];
		sn_fmt_double(b, eps);
		return fail(e, n, "eps must be a finite number >= 0, got %s", b);
	}
	int64_t c = x->shape.d[n->attrs->layout == IR_NHWC ? x->shape.rank - 1 : 1];
	for (int i = 1; i < 5; i++) {
		const ir_node *w = IN(i);
		if (need_float(g, n, w, names[i], e) != SN_OK)
			return e->code;
		if (w->shape.rank != 1 || w->shape.d[0] != c)
			return fail(e, n, "%s %s must be [%s], the channels of x %s (%s)",
				    names[i], TY(w), DIM(c), TY(x), ir_layout_name(n->attrs->layout));
	}
	*t = x->dtype;
	*s = x->shape;
	return SN_OK;
}

/* ---- contractions ---------------------------------------------------------- */

static int rule_matmul(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *a = IN(0), *b = IN(1);
	if (a->dtype != b->dtype)
		return fail(e, n, "operands %s and %s have different dtypes (no implicit promotion)",
			    TY(a), TY(b));
	if (need_numeric(g, n, a, "operand", e) != SN_OK)
		return e->code;
	int ra = a->shape.rank, rb = b->shape.rank;
	if (ra < 1 || rb < 1)
		return fail(e, n, "operands %s and %s must have rank >= 1", TY(a), TY(b));
	int64_t ka = a->shape.d[ra - 1], kb = b->shape.d[rb == 1 ? 0 : rb - 2];
	if (ka != kb)
		return fail(e, n, "contraction dims of %s and %s differ (%s vs %s)",
			    TY(a), TY(b), DIM(ka), DIM(kb));
	ir_shape ba = head(&a->shape, ra - 2), bb = head(&b->shape, rb - 2), r;
	if (!bcast(&ba, &bb, &r))
		return fail(e, n, "batch dims of %s and %s do not broadcast", TY(a), TY(b));
	if (ra >= 2)
		r.d[r.rank++] = a->shape.d[ra - 2];
	if (rb >= 2)
		r.d[r.rank++] = b->shape.d[rb - 1];
	*t = a->dtype;
	*s = r;
	return SN_OK;
}

/* linear(x, w, b?): x [..., in] @ w[out, in]^T + b[out] */
static int rule_linear(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0), *w = IN(1);
	if (need_numeric(g, n, x, "operand", e) != SN_OK ||
	    same_dtype(g, n, x, "x", w, "weight", e) != SN_OK ||
	    (n->nin > 2 && same_dtype(g, n, x, "x", IN(2), "bias", e) != SN_OK))
		return e->code;
	int r = x->shape.rank;
	if (r < 1)
		return fail(e, n, "x %s must have rank >= 1", TY(x));
	if (w->shape.rank != 2)
		return fail(e, n, "weight %s must have rank 2 ([out, in])", TY(w));
	if (w->shape.d[1] != x->shape.d[r - 1])
		return fail(e, n, "x %s and weight %s disagree on in features (%s vs %s)", TY(x), TY(w),
			    DIM(x->shape.d[r - 1]), DIM(w->shape.d[1]));
	if (n->nin > 2 && (IN(2)->shape.rank != 1 || IN(2)->shape.d[0] != w->shape.d[0]))
		return fail(e, n, "bias %s must be [%s], the out features of weight %s",
			    TY(IN(2)), DIM(w->shape.d[0]), TY(w));
	*t = x->dtype;
	*s = x->shape;
	s->d[r - 1] = w->shape.d[0];
	return SN_OK;
}

static int check_window_attrs(const ir_graph *g, const ir_node *n, const ir_ints *stride,
			      const ir_ints *dil, sn_err *e)
{
	const ir_attrs *at = n->attrs;
	if (!ints_ok(stride, 2, false))
		return fail(e, n, "stride must have 2 entries > 0, got %s", ints_s(stride).s);
	if (!ints_ok(dil, 2, false))
		return fail(e, n, "dilation must have 2 entries > 0, got %s", ints_s(dil).s);
	if (!ints_ok(&at->pad, 4, true))
		return fail(e, n, "pad must have 4 entries >= 0 ([top, left, bottom, right]), got %s",
			    ints_s(&at->pad).s);
	return SN_OK;
}

/* Output H, W of a conv or pool window over x's spatial dims hw[2]. */
static int window_hw(const ir_graph *g, const ir_node *n, const ir_node *x, const int64_t hw[2],
		     const int64_t k[2], const int64_t dil[2], const int64_t st[2], bool ceil_mode,
		     int64_t out[2], sn_err *e)
{
	const int64_t *p = n->attrs->pad.v;
	for (int i = 0; i < 2; i++)
		if (!window(hw[i], p[i], p[i + 2], k[i], dil[i], st[i], ceil_mode, &out[i]))
			return fail(e, n, "output size of %s overflows", TY(x));
	if (out[0] < 1 || out[1] < 1)
		return fail(e, n, "input %s is too small for kernel %lldx%lld (output %lldx%lld)",
			    TY(x), LL(k[0]), LL(k[1]), LL(out[0]), LL(out[1]));
	return SN_OK;
}

static int rule_conv2d(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0), *w = IN(1), *b = n->nin > 2 ? IN(2) : NULL;
	const ir_attrs *at = n->attrs;
	if (x->shape.rank != 4)
		return fail(e, n, "x %s must have rank 4", TY(x));
	if (w->shape.rank != 4)
		return fail(e, n, "weight %s must have rank 4", TY(w));
	if (need_numeric(g, n, x, "operand", e) != SN_OK ||
	    same_dtype(g, n, x, "x", w, "weight", e) != SN_OK ||
	    (b && same_dtype(g, n, x, "x", b, "bias", e) != SN_OK))
		return e->code;
	if (at->groups < 1)
		return fail(e, n, "groups must be >= 1, got %lld", LL(at->groups));
	if (check_window_attrs(g, n, &at->stride, &at->dilation, e) != SN_OK)
		return e->code;
	bool nhwc = at->layout == IR_NHWC;
	const int64_t *xd = x->shape.d, *wd = w->shape.d;
	int64_t c = xd[nhwc ? 3 : 1], hw[2] = {xd[nhwc ? 1 : 2], xd[nhwc ? 2 : 3]};
	int64_t o = wd[0], cg = wd[nhwc ? 3 : 1], k[2] = {wd[nhwc ? 1 : 2], wd[nhwc ? 2 : 3]};
	if (c < 0 || hw[0] < 0 || hw[1] < 0)
		return fail(e, n, "x %s must have concrete channel and spatial dims (%s)", TY(x),
			    ir_layout_name(at->layout));
	if (!ir_shape_concrete(&w->shape))
		return fail(e, n, "weight %s must be concrete", TY(w));
	if (c % at->groups)
		return fail(e, n, "channels %lld of x %s are not divisible by groups %lld",
			    LL(c), TY(x), LL(at->groups));
	if (o % at->groups)
		return fail(e, n, "output channels %lld of weight %s are not divisible by groups %lld",
			    LL(o), TY(w), LL(at->groups));
	if (cg != c / at->groups)
		return fail(e, n, "weight %s has %lld input channels per group, expected %lld (%lld / %lld groups)",
			    TY(w), LL(cg), LL(c / at->groups), LL(c), LL(at->groups));
	if (k[0] < 1 || k[1] < 1)
		return fail(e, n, "weight %s has an empty kernel", TY(w));
	if (b && (b->shape.rank != 1 || b->shape.d[0] != o))
		return fail(e, n, "bias %s must be [%lld], the output channels of weight %s",
			    TY(b), LL(o), TY(w));
	int64_t out[2];
	if (window_hw(g, n, x, hw, k, at->dilation.v, at->stride.v, false, out, e) != SN_OK)
		return e->code;
	ir_shape r = {4, {xd[0], o, out[0], out[1]}};
	if (nhwc)
		r = (ir_shape){4, {xd[0], out[0], out[1], o}};
	*t = x->dtype;
	*s = r;
	return SN_OK;
}

/* scaled_dot_product_attention(q [..., L, E], k [..., S, E], v [..., S, Ev], mask?) */
static int rule_attention(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *q = IN(0), *k = IN(1), *v = IN(2);
	if (need_float(g, n, q, "query", e) != SN_OK ||
	    same_dtype(g, n, q, "query", k, "key", e) != SN_OK ||
	    same_dtype(g, n, q, "query", v, "value", e) != SN_OK)
		return e->code;
	int rq = q->shape.rank, rk = k->shape.rank, rv = v->shape.rank;
	if (rq < 2 || rk < 2 || rv < 2)
		return fail(e, n, "query %s, key %s and value %s must have rank >= 2", TY(q), TY(k), TY(v));
	int64_t l = q->shape.d[rq - 2], dq = q->shape.d[rq - 1];
	int64_t sk = k->shape.d[rk - 2], dk = k->shape.d[rk - 1], sv = v->shape.d[rv - 2];
	if (dq != dk)
		return fail(e, n, "query %s and key %s disagree on the embedding dim (%s vs %s)",
			    TY(q), TY(k), DIM(dq), DIM(dk));
	if (sk != sv)
		return fail(e, n, "key %s and value %s disagree on the sequence length (%s vs %s)",
			    TY(k), TY(v), DIM(sk), DIM(sv));
	ir_shape hq = head(&q->shape, rq - 2), hk = head(&k->shape, rk - 2), hv = head(&v->shape, rv - 2);
	/* GQA: k and v may have fewer heads (the last batch dim) than q, a
	 * divisor of q's; query head h reads key/value head h / (Hq / Hkv). */
	if (hq.rank && hk.rank && hv.rank) {
		int64_t nq = hq.d[hq.rank - 1], nk = hk.d[hk.rank - 1], nv = hv.d[hv.rank - 1];
		if (nq > 1 && nk > 1 && nk == nv && nq != nk && nq % nk == 0)
			hk.d[hk.rank - 1] = hv.d[hv.rank - 1] = nq;
	}
	ir_shape bt;
	if (!bcast(&hq, &hk, &bt) || !bcast(&bt, &hv, &bt))
		return fail(e, n, "batch dims of query %s, key %s and value %s do not broadcast",
			    TY(q), TY(k), TY(v));
	double sc = n->attrs->scale;
	if (!(sc >= 0) || isinf(sc)) {
		char b[32];
		sn_fmt_double(b, sc);
		return fail(e, n, "scale must be a finite number >= 0 (0: 1/sqrt(E)), got %s", b);
	}
	if (n->nin > 3) {
		const ir_node *m = IN(3);
		if (n->attrs->causal)
			return fail(e, n, "causal and an explicit mask cannot be combined");
		if (m->dtype != IR_BOOL && m->dtype != q->dtype)
			return fail(e, n, "mask %s must be bool or the query's dtype %s", TY(m),
				    ir_dtype_name(q->dtype));
		ir_shape sc_shape = bt, r;
		sc_shape.d[sc_shape.rank++] = l;
		sc_shape.d[sc_shape.rank++] = sk;
		if (!bcast(&m->shape, &sc_shape, &r) || !ir_shape_eq(&r, &sc_shape))
			return fail(e, n, "mask %s does not broadcast to the scores' shape %s", TY(m),
				    dims_s(g, sc_shape.d, sc_shape.rank).s);
	}
	bt.d[bt.rank++] = l;
	bt.d[bt.rank++] = v->shape.d[rv - 1];
	*t = q->dtype;
	*s = bt;
	return SN_OK;
}

/* ---- pooling ----------------------------------------------------------------- */

static int rule_pool(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	const ir_attrs *at = n->attrs;
	bool is_max = n->op == IR_OP_max_pool2d, nhwc = at->layout == IR_NHWC;
	if (x->shape.rank != 4)
		return fail(e, n, "x %s must have rank 4", TY(x));
	if ((is_max ? need_numeric(g, n, x, "operand", e) : need_float(g, n, x, "operand", e)) != SN_OK)
		return e->code;
	if (!ints_ok(&at->kernel, 2, false))
		return fail(e, n, "kernel must have 2 entries > 0, got %s", ints_s(&at->kernel).s);
	const ir_ints *st = at->stride.n ? &at->stride : &at->kernel;
	ir_ints one = {2, {1, 1}};
	const ir_ints *dil = is_max ? &at->dilation : &one;
	if (check_window_attrs(g, n, st, dil, e) != SN_OK)
		return e->code;
	/* PyTorch: pad <= ((k - 1) * dilation + 1) / 2 */
	for (int i = 0; i < 4; i++) {
		int64_t span;
		if (__builtin_mul_overflow(at->kernel.v[i % 2] - 1, dil->v[i % 2], &span) ||
		    at->pad.v[i] > span / 2 + span % 2)
			return fail(e, n, "pad %s must be at most half the effective kernel (kernel %s, dilation %s)",
				    ints_s(&at->pad).s, ints_s(&at->kernel).s, ints_s(dil).s);
	}
	const int64_t *xd = x->shape.d;
	int64_t hw[2] = {xd[nhwc ? 1 : 2], xd[nhwc ? 2 : 3]}, out[2];
	if (hw[0] < 0 || hw[1] < 0)
		return fail(e, n, "x %s must have concrete spatial dims (%s)", TY(x), ir_layout_name(at->layout));
	if (window_hw(g, n, x, hw, at->kernel.v, dil->v, st->v, at->ceil_mode, out, e) != SN_OK)
		return e->code;
	ir_shape r = x->shape;
	r.d[nhwc ? 1 : 2] = out[0];
	r.d[nhwc ? 2 : 3] = out[1];
	*t = x->dtype;
	*s = r;
	return SN_OK;
}

static int rule_global_pool(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	if (x->shape.rank != 4)
		return fail(e, n, "x %s must have rank 4", TY(x));
	if (need_float(g, n, x, "operand", e) != SN_OK)
		return e->code;
	bool nhwc = n->attrs->layout == IR_NHWC;
	ir_shape r = x->shape;
	r.d[nhwc ? 1 : 2] = 1;
	r.d[nhwc ? 2 : 3] = 1;
	*t = x->dtype;
	*s = r;
	return SN_OK;
}

/* ---- data movement ------------------------------------------------------------ */

/* The product of the concrete dims of d; symbols are counted into cnt
 * (which may be NULL when d has none). False on overflow. */
static bool num_product(const int64_t *d, int k, int *cnt, int64_t *prod)
{
	*prod = 1;
	for (int i = 0; i < k; i++) {
		if (d[i] >= 0) {
			if (__builtin_mul_overflow(*prod, d[i], prod))
				return false;
		} else if (cnt && d[i] != IR_DIM_INFER)
			cnt[sym_id(d[i])]++;
	}
	return true;
}

static int rule_reshape(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	const ir_ints *sh = &n->attrs->shape;
	tbuf target = dims_s(g, sh->v, sh->n);
	if (sh->n > IR_MAX_RANK)
		return fail(e, n, "target %s has %d dims (at most %d)", target.s, sh->n, IR_MAX_RANK);
	int infer = -1;
	for (int i = 0; i < sh->n; i++) {
		if (sh->v[i] == IR_DIM_INFER) {
			if (infer >= 0)
				return fail(e, n, "target %s has more than one -1", target.s);
			infer = i;
		} else if (!dim_ok(g, sh->v[i]))
			return fail(e, n, "target %s names an unknown symbol", target.s);
	}
	int cin[IR_MAX_SYMS] = {0}, cout[IR_MAX_SYMS] = {0};
	int64_t pin, pout;
	if (!num_product(x->shape.d, x->shape.rank, cin, &pin) || !num_product(sh->v, sh->n, cout, &pout))
		return fail(e, n, "element count of %s or %s overflows", TY(x), target.s);
	/* With a -1, the symbols x has beyond the target's go into the -1: it
	 * is that one symbol when the numbers match (f32[N,3,4] to [-1,12] is
	 * [N,12]); N*3 is no dim (a dim is a number or one symbol). */
	int extra = -1, nextra = 0;
	bool fewer = false;
	for (int k = 0; k < IR_MAX_SYMS; k++) {
		fewer |= cin[k] < cout[k];
		if (cin[k] > cout[k])
			nextra += cin[k] - cout[k], extra = k;
	}
	if (fewer || (nextra && infer < 0))
		return fail(e, n, "%s cannot become %s (the symbols differ)", TY(x), target.s);
	ir_shape r = {0};
	r.rank = sh->n;
	memcpy(r.d, sh->v, sh->n * sizeof *r.d);
	if (nextra) {
		if (nextra == 1 && pout != 0 && pin == pout) {
			r.d[infer] = IR_SYM(extra);
		} else {
			char what[200] = "", *w = what;
			for (int k = 0; k < IR_MAX_SYMS; k++)
				for (int j = 0; j < cin[k] - cout[k] && w < what + sizeof what - 40; j++)
					w += snprintf(w, (size_t)(what + sizeof what - w), "%s%s", w == what ? "" : "*", g->syms[k]);
			if (pout != 0 && pin % pout == 0 && pin / pout != 1)
				snprintf(w, (size_t)(what + sizeof what - w), "*%lld", LL(pin / pout));
			else if (pout == 0 || pin % pout)
				snprintf(w, (size_t)(what + sizeof what - w), "*%lld/%lld", LL(pin), LL(pout));
			return fail(e, n, "the -1 of %s for %s would be %s, which no dim can hold (a dim is a number or one "
				    "symbol); bind %s to a value when loading the model", target.s, TY(x), what,
				    g->syms[extra]);
		}
	} else if (infer >= 0) {
		if (pout == 0)
			return fail(e, n, "cannot infer the -1 of %s from %s: the other dims include a 0",
				    target.s, TY(x));
		if (pin % pout)
			return fail(e, n, "%s cannot become %s (%lld elements are not a multiple of %lld)",
				    TY(x), target.s, LL(pin), LL(pout));
		r.d[infer] = pin / pout;
	} else if (pin != pout)
		return fail(e, n, "%s cannot become %s (the element counts differ)", TY(x), target.s);
	*t = x->dtype;
	*s = r;
	return SN_OK;
}

static int rule_transpose(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	const ir_ints *p = &n->attrs->perm;
	unsigned seen = 0;
	bool ok = p->n == x->shape.rank;
	for (int i = 0; ok && i < p->n; i++) {
		ok = p->v[i] >= 0 && p->v[i] < p->n && !(seen & (1u << p->v[i]));
		if (ok)
			seen |= 1u << p->v[i];
	}
	if (!ok)
		return fail(e, n, "perm %s is not a permutation of the %d axes of %s", ints_s(p).s,
			    x->shape.rank, TY(x));
	ir_shape r = {0};
	r.rank = p->n;
	for (int i = 0; i < p->n; i++)
		r.d[i] = x->shape.d[p->v[i]];
	*t = x->dtype;
	*s = r;
	return SN_OK;
}

/* flatten(start_dim=axis, end_dim=end), both inclusive (PyTorch). */
static int rule_flatten(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	int r = x->shape.rank;
	int a0 = ir_axis(n->attrs->axis, r ? r : 1), a1 = ir_axis(n->attrs->end, r ? r : 1);
	if (a0 < 0 || a1 < 0)
		return fail(e, n, "%s %lld is out of range for %s", a0 < 0 ? "axis" : "end",
			    LL(a0 < 0 ? n->attrs->axis : n->attrs->end), TY(x));
	if (a0 > a1)
		return fail(e, n, "start axis %lld comes after end axis %lld for %s",
			    LL(n->attrs->axis), LL(n->attrs->end), TY(x));
	*t = x->dtype;
	if (r == 0) { /* PyTorch: a 0-d tensor flattens to [1] */
		*s = (ir_shape){1, {1}};
		return SN_OK;
	}
	int64_t prod = 1, sym = 0;
	int nsym = 0;
	for (int i = a0; i <= a1; i++) {
		int64_t d = x->shape.d[i];
		if (d < 0) {
			nsym++;
			sym = d;
		} else if (__builtin_mul_overflow(prod, d, &prod))
			return fail(e, n, "element count of %s overflows", TY(x));
	}
	if (nsym > 1 || (nsym == 1 && prod != 1 && a1 > a0))
		return fail(e, n, "cannot fold dims %d to %d of %s into one: they include a symbol",
			    a0, a1, TY(x));
	ir_shape o = {0};
	for (int i = 0; i < a0; i++)
		o.d[o.rank++] = x->shape.d[i];
	o.d[o.rank++] = nsym ? sym : prod;
	for (int i = a1 + 1; i < r; i++)
		o.d[o.rank++] = x->shape.d[i];
	*s = o;
	return SN_OK;
}

static int rule_squeeze(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	const ir_ints *axes = &n->attrs->axes;
	unsigned mask;
	if (axes_mask(g, n, axes, x->shape.rank, TY(x), &mask, e) != SN_OK)
		return e->code;
	ir_shape r = {0};
	for (int i = 0; i < x->shape.rank; i++) {
		int64_t d = x->shape.d[i];
		if (axes->n && (mask & (1u << i)) && d != 1)
			return fail(e, n, "axis %d of %s has size %s, not 1", i, TY(x), DIM(d));
		if (axes->n ? !(mask & (1u << i)) : d != 1)
			r.d[r.rank++] = d;
	}
	*t = x->dtype;
	*s = r;
	return SN_OK;
}

/* unsqueeze: axes index the output (ONNX Unsqueeze). */
static int rule_unsqueeze(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	const ir_ints *axes = &n->attrs->axes;
	int ro = x->shape.rank + axes->n;
	if (axes->n == 0)
		return fail(e, n, "axes must not be empty");
	if (ro > IR_MAX_RANK)
		return fail(e, n, "result would have rank %d (at most %d)", ro, IR_MAX_RANK);
	char ctx[64];
	snprintf(ctx, sizeof ctx, "the output rank %d", ro);
	unsigned mask;
	if (axes_mask(g, n, axes, ro, ctx, &mask, e) != SN_OK)
		return e->code;
	ir_shape r = {0};
	r.rank = ro;
	for (int i = 0, j = 0; i < ro; i++)
		r.d[i] = mask & (1u << i) ? 1 : x->shape.d[j++];
	*t = x->dtype;
	*s = r;
	return SN_OK;
}

/* expand: broadcast x to the target (PyTorch Tensor.expand); -1 keeps x's dim. */
static int rule_expand(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	const ir_ints *sh = &n->attrs->shape;
	tbuf target = dims_s(g, sh->v, sh->n);
	int rx = x->shape.rank, lead = sh->n - rx;
	if (sh->n > IR_MAX_RANK)
		return fail(e, n, "target %s has %d dims (at most %d)", target.s, sh->n, IR_MAX_RANK);
	if (lead < 0)
		return fail(e, n, "target %s has fewer dims than %s", target.s, TY(x));
	ir_shape r = {0};
	r.rank = sh->n;
	for (int i = 0; i < sh->n; i++) {
		int64_t tv = sh->v[i], d = i >= lead ? x->shape.d[i - lead] : 1;
		if (tv == IR_DIM_INFER && i < lead)
			return fail(e, n, "target %s has a -1 in a new leading dim", target.s);
		if (tv != IR_DIM_INFER && !dim_ok(g, tv))
			return fail(e, n, "target %s names an unknown symbol", target.s);
		if (tv == IR_DIM_INFER)
			tv = d;
		if (d != tv && d != 1)
			return fail(e, n, "%s does not broadcast to %s", TY(x), target.s);
		r.d[i] = tv;
	}
	*t = x->dtype;
	*s = r;
	return SN_OK;
}

static int rule_concat(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	int a;
	if (axis_of(g, n, n->attrs->axis, x, &a, e) != SN_OK)
		return e->code;
	ir_shape r = x->shape;
	for (uint32_t i = 1; i < n->nin; i++) {
		const ir_node *y = IN(i);
		if (y->dtype != x->dtype)
			return fail(e, n, "operand %u %s has a different dtype from operand 0 %s", i, TY(y), TY(x));
		bool ok = y->shape.rank == x->shape.rank;
		for (int j = 0; ok && j < x->shape.rank; j++)
			ok = j == a || y->shape.d[j] == x->shape.d[j];
		if (!ok)
			return fail(e, n, "operand %u %s does not match operand 0 %s outside axis %d",
				    i, TY(y), TY(x), a);
	}
	if (n->nin > 1) {
		int64_t sum = 0;
		for (uint32_t i = 0; i < n->nin; i++) {
			int64_t d = IN(i)->shape.d[a];
			if (d < 0)
				return fail(e, n, "axis %d of operand %u %s is symbolic", a, i, TY(IN(i)));
			if (__builtin_add_overflow(sum, d, &sum))
				return fail(e, n, "the size along axis %d overflows", a);
		}
		r.d[a] = sum;
	}
	*t = x->dtype;
	*s = r;
	return SN_OK;
}

static int rule_split(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	const ir_attrs *at = n->attrs;
	int a;
	if (axis_of(g, n, at->axis, x, &a, e) != SN_OK)
		return e->code;
	if (at->sizes.n == 0)
		return fail(e, n, "sizes must not be empty");
	int64_t d = x->shape.d[a], sum = 0;
	if (d < 0)
		return fail(e, n, "axis %d of %s is symbolic", a, TY(x));
	for (int i = 0; i < at->sizes.n; i++)
		if (at->sizes.v[i] < 1 || __builtin_add_overflow(sum, at->sizes.v[i], &sum))
			return fail(e, n, "sizes %s must be > 0 and sum to %lld", ints_s(&at->sizes).s, LL(d));
	if (sum != d)
		return fail(e, n, "sizes %s sum to %lld, but axis %d of %s is %lld",
			    ints_s(&at->sizes).s, LL(sum), a, TY(x), LL(d));
	if (at->index < 0 || at->index >= at->sizes.n)
		return fail(e, n, "index %lld is out of range for %d sizes", LL(at->index), at->sizes.n);
	*t = x->dtype;
	*s = x->shape;
	s->d[a] = at->sizes.v[at->index];
	return SN_OK;
}

static int rule_slice(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	const ir_attrs *at = n->attrs;
	int k = at->starts.n;
	if (k == 0)
		return fail(e, n, "starts and ends must not be empty");
	if (at->ends.n != k || (at->axes.n && at->axes.n != k) || (at->steps.n && at->steps.n != k))
		return fail(e, n, "starts, ends, axes and steps must have equal lengths (%d, %d, %d, %d)",
			    k, at->ends.n, at->axes.n, at->steps.n);
	ir_ints axes = at->axes;
	if (!axes.n)
		for (axes.n = 0; axes.n < k; axes.n++)
			axes.v[axes.n] = axes.n;
	unsigned mask;
	if (axes_mask(g, n, &axes, x->shape.rank, TY(x), &mask, e) != SN_OK)
		return e->code;
	ir_shape r = x->shape;
	for (int i = 0; i < k; i++) {
		int a = ir_axis(axes.v[i], x->shape.rank);
		int64_t step = at->steps.n ? at->steps.v[i] : 1, d = x->shape.d[a];
		if (step == 0)
			return fail(e, n, "steps %s must not contain 0", ints_s(&at->steps).s);
		if (d < 0)
			return fail(e, n, "axis %d of %s is symbolic", a, TY(x));
		int64_t first;
		r.d[a] = ir_slice_axis(d, at->starts.v[i], at->ends.v[i], step, &first);
	}
	*t = x->dtype;
	*s = r;
	return SN_OK;
}

/* ONNX Gather: data.shape[:axis] + indices.shape + data.shape[axis+1:] */
static int rule_gather(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0), *ix = IN(1);
	int a;
	if (ix->dtype != IR_I32 && ix->dtype != IR_I64)
		return fail(e, n, "indices %s must be i32 or i64", TY(ix));
	if (axis_of(g, n, n->attrs->axis, x, &a, e) != SN_OK)
		return e->code;
	int ro = x->shape.rank - 1 + ix->shape.rank;
	if (ro > IR_MAX_RANK)
		return fail(e, n, "result would have rank %d (at most %d)", ro, IR_MAX_RANK);
	ir_shape r = {0};
	for (int i = 0; i < a; i++)
		push_dim(&r, x->shape.d[i]);
	for (int i = 0; i < ix->shape.rank; i++)
		push_dim(&r, ix->shape.d[i]);
	for (int i = a + 1; i < x->shape.rank; i++)
		push_dim(&r, x->shape.d[i]);
	*t = x->dtype;
	*s = r;
	return SN_OK;
}

/* pad: [begin_0..begin_{r-1}, end_0..end_{r-1}] (ONNX Pad's order). */
static int rule_pad(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	const ir_ints *p = &n->attrs->pad;
	int r = x->shape.rank;
	if (p->n != 2 * r)
		return fail(e, n, "pad must have %d entries (begins then ends) for %s, got %s",
			    2 * r, TY(x), ints_s(p).s);
	ir_shape o = x->shape;
	for (int i = 0; i < r; i++) {
		int64_t b = p->v[i], en = p->v[r + i], d = x->shape.d[i];
		if (b < 0 || en < 0)
			return fail(e, n, "pad %s must not be negative", ints_s(p).s);
		if (b == 0 && en == 0)
			continue;
		if (d < 0)
			return fail(e, n, "axis %d of %s is symbolic but padded", i, TY(x));
		if (n->attrs->mode == IR_PAD_REFLECT && (b >= d || en >= d))
			return fail(e, n, "reflect padding on axis %d of %s must be less than %lld, got %s",
				    i, TY(x), LL(d), ints_s(p).s);
		if (n->attrs->mode == IR_PAD_EDGE && d == 0)
			return fail(e, n, "edge padding needs a non-empty axis %d in %s", i, TY(x));
		if (__builtin_add_overflow(d, b, &o.d[i]) || __builtin_add_overflow(o.d[i], en, &o.d[i]))
			return fail(e, n, "padded size of axis %d of %s overflows", i, TY(x));
	}
	*t = x->dtype;
	*s = o;
	return SN_OK;
}

/* ---- ops of issue 13: tests, scans, arg reductions, group norm, indexing ---- */

/* isnan, isinf: a float operand, a bool result of its shape. */
static int rule_unary_test(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	if (need_float(g, n, IN(0), "operand", e) != SN_OK)
		return e->code;
	*t = IR_BOOL;
	*s = IN(0)->shape;
	return SN_OK;
}

/* cumsum: numeric, same type, along axis. */
static int rule_cumsum(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	int a;
	if (need_numeric(g, n, IN(0), "operand", e) != SN_OK ||
	    axis_of(g, n, n->attrs->axis, IN(0), &a, e) != SN_OK)
		return e->code;
	*t = IN(0)->dtype;
	*s = IN(0)->shape;
	return SN_OK;
}

/* argmax, argmin: i64 indices along axis, which is dropped (or kept as 1);
 * the axis must not be empty. */
static int rule_arg_reduce(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	int a;
	if (need_numeric(g, n, x, "operand", e) != SN_OK || axis_of(g, n, n->attrs->axis, x, &a, e) != SN_OK)
		return e->code;
	if (x->shape.d[a] == 0)
		return fail(e, n, "axis %d of %s is empty", a, TY(x));
	ir_shape r = {0};
	for (int i = 0; i < x->shape.rank; i++)
		if (i != a)
			r.d[r.rank++] = x->shape.d[i];
		else if (n->attrs->keepdims)
			r.d[r.rank++] = 1;
	*t = IR_I64;
	*s = r;
	return SN_OK;
}

/* topk: the k largest (or smallest) along axis, sorted; index 0 gives the
 * values (x's dtype), 1 their i64 indices. 0 <= k <= the axis, concrete. */
static int rule_topk(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0);
	int a;
	if (need_numeric(g, n, x, "operand", e) != SN_OK || axis_of(g, n, n->attrs->axis, x, &a, e) != SN_OK)
		return e->code;
	int64_t d = x->shape.d[a], k = n->attrs->k;
	if (d < 0)
		return fail(e, n, "axis %d of %s is symbolic", a, TY(x));
	if (k < 0 || k > d)
		return fail(e, n, "k %lld is out of range for axis %d of %s", LL(k), a, TY(x));
	if (n->attrs->index != 0 && n->attrs->index != 1)
		return fail(e, n, "index %lld must be 0 (values) or 1 (indices)", LL(n->attrs->index));
	*t = n->attrs->index ? IR_I64 : x->dtype;
	*s = x->shape;
	s->d[a] = k;
	return SN_OK;
}

/* group_norm(x, weight, bias): x float [N, C, ...] (rank >= 3), C concrete
 * and divisible by groups; weight and bias [C] of x's dtype. */
static int rule_group_norm(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	static const char *const names[] = {"x", "weight", "bias"};
	const ir_node *x = IN(0);
	if (need_float(g, n, x, "operand", e) != SN_OK)
		return e->code;
	if (x->shape.rank < 3)
		return fail(e, n, "x %s must have rank >= 3 ([N, C, spatial...])", TY(x));
	double eps = n->attrs->eps;
	if (!(eps >= 0) || isinf(eps)) {
		char b[32];
		sn_fmt_double(b, eps);
		return fail(e, n, "eps must be a finite number >= 0, got %s", b);
	}
	int64_t c = x->shape.d[1], gr = n->attrs->groups;
	if (c < 0)
		return fail(e, n, "the channels of x %s must be known", TY(x));
	if (gr < 1 || c % gr != 0)
		return fail(e, n, "groups %lld must be >= 1 and divide the %lld channels of x %s", LL(gr), LL(c), TY(x));
	for (int i = 1; i < 3; i++) {
		const ir_node *w = IN(i);
		if (same_dtype(g, n, x, "x", w, names[i], e) != SN_OK)
			return e->code;
		if (w->shape.rank != 1 || w->shape.d[0] != c)
			return fail(e, n, "%s %s must be [%lld], the channels of x %s", names[i], TY(w), LL(c), TY(x));
	}
	*t = x->dtype;
	*s = x->shape;
	return SN_OK;
}

static int need_index(const ir_graph *g, const ir_node *n, const ir_node *ix, sn_err *e)
{
	if (ix->dtype == IR_I32 || ix->dtype == IR_I64)
		return SN_OK;
	return fail(e, n, "indices %s must be i32 or i64", TY(ix));
}

/* gather_elements(data, indices), ONNX GatherElements / torch.gather:
 * indices has data's rank; the result has the indices' shape; outside
 * axis, each dim of indices is at most data's. */
static int rule_gather_elements(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0), *ix = IN(1);
	int a;
	if (need_index(g, n, ix, e) != SN_OK || axis_of(g, n, n->attrs->axis, x, &a, e) != SN_OK)
		return e->code;
	if (ix->shape.rank != x->shape.rank)
		return fail(e, n, "indices %s must have the rank of data %s", TY(ix), TY(x));
	for (int i = 0; i < x->shape.rank; i++) {
		int64_t di = ix->shape.d[i], dx = x->shape.d[i];
		if (i != a && di != dx && (di < 0 || dx < 0 || di > dx))
			return fail(e, n, "dim %d of indices %s exceeds that of data %s", i, TY(ix), TY(x));
	}
	*t = x->dtype;
	*s = ix->shape;
	return SN_OK;
}

static int scatter_red_ok(const ir_graph *g, const ir_node *n, const ir_node *x, sn_err *e)
{
	if (n->attrs->reduction != IR_SCATTER_NONE && x->dtype == IR_BOOL)
		return fail(e, n, "reduction %s needs numeric data, got %s",
			    ir_scatter_name(n->attrs->reduction), TY(x));
	return SN_OK;
}

/* scatter_elements(data, indices, updates), ONNX ScatterElements /
 * torch.scatter: indices and updates have one shape, of data's rank, each
 * dim at most data's outside axis; the result has data's type. */
static int rule_scatter_elements(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0), *ix = IN(1), *u = IN(2);
	int a;
	if (need_index(g, n, ix, e) != SN_OK || axis_of(g, n, n->attrs->axis, x, &a, e) != SN_OK ||
	    same_dtype(g, n, x, "data", u, "updates", e) != SN_OK || scatter_red_ok(g, n, x, e) != SN_OK)
		return e->code;
	if (!ir_shape_eq(&ix->shape, &u->shape))
		return fail(e, n, "indices %s and updates %s must have one shape", TY(ix), TY(u));
	if (ix->shape.rank != x->shape.rank)
		return fail(e, n, "indices %s must have the rank of data %s", TY(ix), TY(x));
	for (int i = 0; i < x->shape.rank; i++) {
		int64_t di = ix->shape.d[i], dx = x->shape.d[i];
		if (i != a && di != dx && (di < 0 || dx < 0 || di > dx))
			return fail(e, n, "dim %d of indices %s exceeds that of data %s", i, TY(ix), TY(x));
	}
	*t = x->dtype;
	*s = x->shape;
	return SN_OK;
}

/* scatter_nd(data, indices, updates), ONNX ScatterND: indices [..., k]
 * with k <= rank(data), concrete; updates = indices.shape[:-1] +
 * data.shape[k:]. */
static int rule_scatter_nd(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	const ir_node *x = IN(0), *ix = IN(1), *u = IN(2);
	if (need_index(g, n, ix, e) != SN_OK || same_dtype(g, n, x, "data", u, "updates", e) != SN_OK ||
	    scatter_red_ok(g, n, x, e) != SN_OK)
		return e->code;
	int q = ix->shape.rank;
	int64_t k = q ? ix->shape.d[q - 1] : -1;
	if (q < 1 || k < 1 || k > x->shape.rank)
		return fail(e, n, "indices %s must be [..., k] with 1 <= k <= %d (the rank of data %s)",
			    TY(ix), x->shape.rank, TY(x));
	ir_shape want = head(&ix->shape, q - 1);
	for (int i = (int)k; i < x->shape.rank; i++)
		if (!push_dim(&want, x->shape.d[i]))
			return fail(e, n, "updates would have rank above %d", IR_MAX_RANK);
	if (!ir_shape_eq(&want, &u->shape))
		return fail(e, n, "updates %s must have the shape %s", TY(u), type_s(g, u->dtype, &want).s);
	*t = x->dtype;
	*s = x->shape;
	return SN_OK;
}

/* ---- dispatch ------------------------------------------------------------------ */

typedef int (*rule_fn)(const ir_graph *, const ir_node *, ir_dtype *, ir_shape *, sn_err *);

static const rule_fn rules[IR_NOPS] = {
#define OP(id, kind, mn, mx, attrs, req, rule) [IR_OP_##id] = rule_##rule,
#include "ops.def"
#undef OP
};

/* The allowed attributes hold values their types can hold (a hand-built or
 * corrupted node may not), so rules can index lists and name enums. */
static int check_attrs(const ir_node *n, sn_err *e)
{
	static const int enum_count[] = {
		[IR_AT_DTYPE] = IR_NDTYPES, [IR_AT_LAYOUT] = 2, [IR_AT_GELU] = 2, [IR_AT_PADMODE] = 3,
		[IR_AT_SCATTER] = 5,
	};
	uint64_t allowed = ir_ops[n->op].attrs;
	for (int i = 0; i < IR_NATTRS; i++) {
		if (!(allowed & (UINT64_C(1) << i)))
			continue;
		const ir_attr_info *ai = &ir_attr_table[i];
		const char *p = (const char *)n->attrs + ai->offset;
		int v = -1;
		switch (ai->type) {
		case IR_AT_INTS:
		case IR_AT_DIMS: {
			int32_t k = ((const ir_ints *)p)->n;
			if (k < 0 || k > IR_MAX_LIST)
				return fail(e, n, "attribute %s has %d entries (0 to %d allowed)", ai->name, k, IR_MAX_LIST);
			continue;
		}
		case IR_AT_DTYPE: v = (int)*(const ir_dtype *)p; break;
		case IR_AT_LAYOUT: v = (int)*(const ir_layout *)p; break;
		case IR_AT_GELU: v = (int)*(const ir_gelu *)p; break;
		case IR_AT_PADMODE: v = (int)*(const ir_padmode *)p; break;
		case IR_AT_SCATTER: v = (int)*(const ir_scatter *)p; break;
		default: continue;
		}
		if (v < 0 || v >= enum_count[ai->type])
			return fail(e, n, "attribute %s has an invalid value %d", ai->name, v);
	}
	return SN_OK;
}

int ir_infer(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
{
	if ((unsigned)n->op >= IR_NOPS)
		return sn_errf(e, SN_EINPUT, "invalid op %d", (int)n->op);
	const ir_op_info *oi = &ir_ops[n->op];
	if (n->nin < oi->min_in || n->nin > oi->max_in || (n->nin && !n->in))
		return fail(e, n, "wrong number of operands (%u)", n->nin);
	for (uint32_t i = 0; i < n->nin; i++) {
		if (n->in[i] >= g->nnodes)
			return fail(e, n, "operand %u is not a node", i);
		const ir_node *x = IN(i);
		if ((unsigned)x->dtype >= IR_NDTYPES || x->shape.rank < 0 || x->shape.rank > IR_MAX_RANK)
			return fail(e, n, "operand %u has an invalid type", i);
	}
	if (!n->attrs)
		return fail(e, n, "node has no attributes");
	if (check_attrs(n, e) != SN_OK)
		return e->code;
	/* Rules write to locals: for sources, t and s may alias n's own type. */
	ir_dtype rt = IR_F32;
	ir_shape rs = {0};
	if (rules[n->op](g, n, &rt, &rs, e) != SN_OK)
		return e->code;
	int64_t count = (int64_t)ir_dtype_size(rt);
	for (int i = 0; i < rs.rank; i++)
		if (rs.d[i] >= 0 && __builtin_mul_overflow(count, rs.d[i], &count))
			return fail(e, n, "%s has too many elements", type_s(g, rt, &rs).s);
	*t = rt;
	*s = rs;
	return SN_OK;
}
