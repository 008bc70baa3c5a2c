/* onnx_ops_move.c: ONNX shape, constant and data-movement ops. Inputs that
 * ONNX passes as tensors but sinter takes as attributes (Reshape's shape,
 * Slice's starts, Pad's pads, ...) must be known at import time. */
#include "onnx_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t ox_dim_of(int64_t v) { return OX_IS_SYMV(v) ? IR_SYM(v - OX_SYMV(0)) : v; }

static int bind(ox_ctx *c, const onnx_node *nd, ir_ref r) { return ox_out(c, nd, 0, r); }

int ox_tr_identity(ox_ctx *c, const onnx_node *nd) { return bind(c, nd, ox_need(c, nd, 0)); }

/* Dropout at inference: the output is the input and the mask is all true.
 * training_mode (input 2) must be known; in training mode only a ratio of 0
 * is supported (any other draws a random mask). */
int ox_tr_dropout(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	double training = 0, ratio = 0.5;
	if (ox_has(nd, 2) && ox_num(c, nd, 2, "training_mode", &training))
		return c->e->code;
	if (training != 0) {
		if (ox_has(nd, 1) && ox_num(c, nd, 1, "ratio", &ratio))
			return c->e->code;
		if (ratio != 0)
			return ox_fail(c, nd, "training mode with ratio %g draws a random mask; only inference is supported",
				       ratio);
	}
	if (bind(c, nd, x))
		return c->e->code;
	if (nd->noutputs < 2 || !nd->outputs[1][0])
		return SN_OK;
	const ir_shape s = ox_node(c, x)->shape; /* a copy: ox_scalar may move the node array */
	ir_ref t = ox_scalar(c, IR_BOOL, 1);
	if (t == IR_NONE)
		return c->e->code;
	ir_attrs a;
	ir_attrs_init(IR_OP_expand, &a);
	a.shape.n = s.rank;
	memcpy(a.shape.v, s.d, (size_t)s.rank * sizeof *a.shape.v);
	return ox_out(c, nd, 1, ox_emit_live(c, nd, IR_OP_expand, &t, 1, &a));
}

int ox_tr_constant(ox_ctx *c, const onnx_node *nd)
{
	if (nd->nattrs != 1)
		return ox_fail(c, nd, "expects exactly one attribute, got %zu", nd->nattrs);
	const onnx_attr *a = &nd->attrs[0];
	ir_tensor t = {0};
	const char *n = a->name;
	if (strcmp(n, "value") == 0 && a->t) {
		if (ox_tensor(c, a->t, "Constant value", &t))
			return c->e->code;
	} else if (strcmp(n, "value_float") == 0 || strcmp(n, "value_int") == 0) {
		bool f = n[6] == 'f';
		t = (ir_tensor){f ? IR_F32 : IR_I64, {0, {0}}, malloc(8), f ? 4 : 8};
		if (!t.data)
			return sn_errf(c->e, SN_EINTERNAL, "out of memory");
		ir_store(t.dtype, t.data, 0, f ? (double)a->f : 0);
		if (!f)
			memcpy(t.data, &a->i, 8);
	} else if (strcmp(n, "value_floats") == 0 || strcmp(n, "value_ints") == 0) {
		bool f = n[6] == 'f';
		size_t cnt = f ? a->nfloats : a->nints;
		t = (ir_tensor){f ? IR_F32 : IR_I64, {1, {(int64_t)cnt}}, malloc(cnt * 8 + 1), cnt * (f ? 4 : 8)};
		if (!t.data)
			return sn_errf(c->e, SN_EINTERNAL, "out of memory");
		if (cnt)
			memcpy(t.data, f ? (void *)a->floats : (void *)a->ints, t.nbytes);
	} else {
		return ox_fail(c, nd, "attribute %s is not supported", n);
	}
	return bind(c, nd, ox_value(c, t));
}

/* The shape input i as dims (symbols allowed). */
static int dims_in(ox_ctx *c, const onnx_node *nd, size_t i, const char *what, ir_ints *d)
{
	if (ox_ints(c, nd, i, what, true, d))
		return c->e->code;
	if (d->n > IR_MAX_RANK)
		return ox_fail(c, nd, "%s has %d entries, above rank %d", what, d->n, IR_MAX_RANK);
	return SN_OK;
}

int ox_tr_constant_of_shape(ox_ctx *c, const onnx_node *nd)
{
	ir_ints d;
	if (dims_in(c, nd, 0, "shape", &d))
		return c->e->code;
	ir_tensor v = {IR_F32, {0, {0}}, calloc(1, 8), 4};
	if (!v.data)
		return sn_errf(c->e, SN_EINTERNAL, "out of memory");
	const onnx_attr *a = ox_attr(nd, "value");
	if (a && a->t) {
		free(v.data);
		if (ox_tensor(c, a->t, "ConstantOfShape value", &v))
			return c->e->code;
		if (v.nbytes != ir_dtype_size(v.dtype)) {
			free(v.data);
			return ox_fail(c, nd, "value must hold one element");
		}
		v.shape.rank = 0;
	}
	ir_ref s = ox_value(c, v);
	if (s == IR_NONE)
		return c->e->code;
	ir_attrs at;
	ir_attrs_init(IR_OP_expand, &at);
	at.shape.n = d.n;
	for (int k = 0; k < d.n; k++) {
		if (d.v[k] < 0 && !OX_IS_SYMV(d.v[k]))
			return ox_fail(c, nd, "negative dim %lld in shape", (long long)d.v[k]);
		at.shape.v[k] = ox_dim_of(d.v[k]);
	}
	return bind(c, nd, ox_emit(c, nd, IR_OP_expand, &s, 1, &at));
}

int ox_tr_range(ox_ctx *c, const onnx_node *nd)
{
	double st, li, de;
	ir_ref lim = ox_need(c, nd, 1);
	const ir_tensor *lk = lim != IR_NONE ? ox_known(c, lim) : NULL;
	if (lk && lk->dtype == IR_I64 && lk->nbytes == 8 && OX_IS_SYMV(*(const int64_t *)lk->data))
		return ox_tr_range_sym(c, nd, *(const int64_t *)lk->data - OX_SYMV(0));
	if (ox_num(c, nd, 0, "start", &st) || ox_num(c, nd, 1, "limit", &li) ||
	    ox_num(c, nd, 2, "delta", &de))
		return c->e->code;
	ir_dtype t = ox_known(c, ox_in(c, nd, 0))->dtype;
	if (de == 0)
		return ox_fail(c, nd, "delta is 0");
	double nf = ceil((li - st) / de);
	if (!(nf <= (double)(1 << 28)))
		return ox_fail(c, nd, "%g elements are too many", nf);
	int64_t n = nf > 0 ? (int64_t)nf : 0;
	ir_tensor out = {t, {1, {n}}, malloc((size_t)n * ir_dtype_size(t) + 1), (size_t)n * ir_dtype_size(t)};
	if (!out.data)
		return sn_errf(c->e, SN_EINTERNAL, "out of memory");
	for (int64_t i = 0; i < n; i++)
		ir_store(t, out.data, (size_t)i, st + (double)i * de);
	return bind(c, nd, ox_value(c, out));
}

int ox_tr_shape(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	const ir_shape *s = &ox_node(c, x)->shape;
	int64_t r = s->rank, b = ox_ai(nd, "start", 0), en = ox_ai(nd, "end", r);
	b = b < 0 ? b + r : b;
	en = en < 0 ? en + r : en;
	b = b < 0 ? 0 : b > r ? r : b;
	en = en < 0 ? 0 : en > r ? r : en;
	int64_t n = en > b ? en - b : 0;
	ir_tensor t = {IR_I64, {1, {n}}, malloc((size_t)n * 8 + 1), (size_t)n * 8};
	if (!t.data)
		return sn_errf(c->e, SN_EINTERNAL, "out of memory");
	for (int64_t i = 0; i < n; i++) {
		int64_t d = s->d[b + i];
		((int64_t *)t.data)[i] = IR_IS_SYM(d) ? OX_SYMV(IR_SYM_ID(d)) : d;
	}
	return bind(c, nd, ox_value(c, t));
}

int ox_tr_size(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	int64_t n = ir_numel(&ox_node(c, x)->shape);
	if (n < 0)
		return ox_fail(c, nd, "the input's shape has a symbolic dim; bind it to a value when loading the model");
	return bind(c, nd, ox_scalar(c, IR_I64, (double)n));
}

int ox_tr_reshape(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	ir_ints d;
	if (x == IR_NONE || dims_in(c, nd, 1, "shape", &d))
		return c->e->code;
	const ir_shape *xs = &ox_node(c, x)->shape;
	bool allowzero = ox_ai(nd, "allowzero", 0) != 0;
	ir_attrs a;
	ir_attrs_init(IR_OP_reshape, &a);
	a.shape.n = d.n;
	for (int i = 0; i < d.n; i++) {
		int64_t v = d.v[i];
		if (v == 0 && !allowzero) {
			if (i >= xs->rank)
				return ox_fail(c, nd, "shape entry %d is 0 (copy) but the input has rank %d", i, xs->rank);
			v = xs->d[i];
		} else if (v == -1) {
			v = IR_DIM_INFER;
		} else if (OX_IS_SYMV(v)) {
			v = ox_dim_of(v);
		} else if (v < 0) {
			return ox_fail(c, nd, "shape entry %d is %lld", i, (long long)v);
		}
		a.shape.v[i] = v;
	}
	return bind(c, nd, ox_emit(c, nd, IR_OP_reshape, &x, 1, &a));
}

int ox_tr_flatten(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	int r = ox_node(c, x)->shape.rank;
	int64_t ax = ox_ai(nd, "axis", 1);
	if (ax < 0)
		ax += r;
	if (ax < 0 || ax > r)
		return ox_fail(c, nd, "axis %lld is out of range for rank %d", (long long)ox_ai(nd, "axis", 1), r);
	ir_attrs a;
	if (ax == 0) { /* [1, all] */
		ir_attrs_init(IR_OP_unsqueeze, &a);
		a.axes = (ir_ints){1, {0}};
		x = ox_emit(c, nd, IR_OP_unsqueeze, &x, 1, &a);
		ax = 1;
		r++;
	} else if (ax > 1) {
		ir_attrs_init(IR_OP_flatten, &a);
		a.axis = 0;
		a.end = ax - 1;
		x = ox_emit(c, nd, IR_OP_flatten, &x, 1, &a);
		r -= (int)ax - 1;
	}
	if (x == IR_NONE)
		return c->e->code;
	if (r == 1) { /* axis == rank: [all, 1] */
		ir_attrs_init(IR_OP_unsqueeze, &a);
		a.axes = (ir_ints){1, {1}};
		return bind(c, nd, ox_emit(c, nd, IR_OP_unsqueeze, &x, 1, &a));
	}
	if (r > 2) {
		ir_attrs_init(IR_OP_flatten, &a);
		a.axis = 1;
		a.end = -1;
		x = ox_emit(c, nd, IR_OP_flatten, &x, 1, &a);
	}
	return bind(c, nd, x);
}

int ox_tr_transpose(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	int r = ox_node(c, x)->shape.rank;
	ir_attrs a;
	ir_attrs_init(IR_OP_transpose, &a);
	int got = ox_aints(c, nd, "perm", &a.perm);
	if (got < 0)
		return c->e->code;
	if (!got) {
		a.perm.n = r;
		for (int i = 0; i < r; i++)
			a.perm.v[i] = r - 1 - i;
	}
	return bind(c, nd, ox_emit(c, nd, IR_OP_transpose, &x, 1, &a));
}

int ox_tr_concat(ox_ctx *c, const onnx_node *nd)
{
	if (!ox_attr(nd, "axis"))
		return ox_fail(c, nd, "attribute axis is required");
	ir_ref *in = malloc(nd->ninputs * sizeof *in + 1);
	if (!in)
		return sn_errf(c->e, SN_EINTERNAL, "out of memory");
	uint32_t n = 0;
	for (size_t i = 0; i < nd->ninputs; i++) {
		ir_ref r = ox_need(c, nd, i);
		if (r == IR_NONE) {
			free(in);
			return c->e->code;
		}
		in[n++] = r;
	}
	ir_attrs a;
	ir_attrs_init(IR_OP_concat, &a);
	a.axis = ox_ai(nd, "axis", 0);
	ir_ref r = ox_emit(c, nd, IR_OP_concat, in, n, &a);
	free(in);
	return bind(c, nd, r);
}

int ox_tr_split(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	const ir_shape *s = &ox_node(c, x)->shape;
	int64_t axis0 = ox_ai(nd, "axis", 0);
	int ax = ir_axis(axis0, s->rank);
	if (ax < 0)
		return ox_fail(c, nd, "axis %lld is out of range for rank %d", (long long)axis0, s->rank);
	int64_t d = s->d[ax];
	ir_attrs a;
	ir_attrs_init(IR_OP_split, &a);
	a.axis = ax;
	if (ox_has(nd, 1)) {
		if (ox_ints(c, nd, 1, "split", false, &a.sizes))
			return c->e->code;
	} else if (ox_aints(c, nd, "split", &a.sizes) != 0) {
		if (c->e->code)
			return c->e->code;
	} else {
		if (d < 0)
			return ox_fail(c, nd, "the split axis has symbolic size; bind it to a value when loading the model");
		int64_t n = ox_attr(nd, "num_outputs") ? ox_ai(nd, "num_outputs", 1) : (int64_t)nd->noutputs;
		if (n < 1 || n > IR_MAX_LIST)
			return ox_fail(c, nd, "%lld outputs (1 to %d are supported)", (long long)n, IR_MAX_LIST);
		bool given = ox_attr(nd, "num_outputs") != NULL;
		int64_t each = given ? (d + n - 1) / n : d / n;
		if (!given && d % n)
			return ox_fail(c, nd, "dim %lld does not split into %lld equal parts", (long long)d, (long long)n);
		a.sizes.n = 0;
		for (int64_t left = d; left > 0 && a.sizes.n < n; left -= each)
			a.sizes.v[a.sizes.n++] = left < each ? left : each;
	}
	if ((size_t)a.sizes.n != nd->noutputs)
		return ox_fail(c, nd, "%d pieces for %zu outputs", a.sizes.n, nd->noutputs);
	/* sinter's split takes pieces of size >= 1: the others are empty
	 * slices, and split takes the rest */
	ir_ints sizes = a.sizes;
	int32_t at[IR_MAX_LIST];
	a.sizes.n = 0;
	for (int i = 0; i < sizes.n; i++) {
		if (sizes.v[i] < 0)
			return ox_fail(c, nd, "split size %lld is negative", (long long)sizes.v[i]);
		at[i] = sizes.v[i] ? a.sizes.n : -1;
		if (sizes.v[i])
			a.sizes.v[a.sizes.n++] = sizes.v[i];
	}
	ir_attrs sa;
	ir_attrs_init(IR_OP_slice, &sa);
	sa.axes = (ir_ints){1, {ax}};
	sa.starts = (ir_ints){1, {0}};
	sa.ends = (ir_ints){1, {0}};
	for (int i = 0; i < sizes.n; i++) {
		a.index = at[i];
		ir_ref r = at[i] < 0 ? ox_emit(c, nd, IR_OP_slice, &x, 1, &sa)
				     : ox_emit(c, nd, IR_OP_split, &x, 1, &a);
		if (ox_out(c, nd, (size_t)i, r))
			return c->e->code;
	}
	return SN_OK;
}

int ox_tr_slice(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	int r = ox_node(c, x)->shape.rank;
	ir_attrs a;
	ir_attrs_init(IR_OP_slice, &a);
	if (ox_ints(c, nd, 1, "starts", false, &a.starts) || ox_ints(c, nd, 2, "ends", false, &a.ends))
		return c->e->code;
	if (ox_has(nd, 3)) {
		if (ox_ints(c, nd, 3, "axes", false, &a.axes))
			return c->e->code;
		for (int i = 0; i < a.axes.n; i++) {
			int ax = ir_axis(a.axes.v[i], r);
			if (ax < 0)
				return ox_fail(c, nd, "axis %lld is out of range for rank %d", (long long)a.axes.v[i], r);
			a.axes.v[i] = ax;
		}
	}
	if (ox_has(nd, 4) && ox_ints(c, nd, 4, "steps", false, &a.steps))
		return c->e->code;
	return bind(c, nd, ox_emit(c, nd, IR_OP_slice, &x, 1, &a));
}

int ox_tr_gather(ox_ctx *c, const onnx_node *nd)
{
	ir_ref in[2] = {ox_need(c, nd, 0), ox_need(c, nd, 1)};
	if (in[0] == IR_NONE || in[1] == IR_NONE)
		return c->e->code;
	ir_attrs a;
	ir_attrs_init(IR_OP_gather, &a);
	a.axis = ox_ai(nd, "axis", 0);
	return bind(c, nd, ox_emit(c, nd, IR_OP_gather, in, 2, &a));
}

/* Axes from input 1 (opset 13) or the attribute; 0 if neither. */
static int axes_of(ox_ctx *c, const onnx_node *nd, ir_ints *axes)
{
	axes->n = 0;
	if (ox_has(nd, 1))
		return ox_ints(c, nd, 1, "axes", false, axes) ? -1 : 1;
	int got = ox_aints(c, nd, "axes", axes);
	return got;
}

int ox_tr_unsqueeze(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	ir_attrs a;
	ir_attrs_init(IR_OP_unsqueeze, &a);
	int got = axes_of(c, nd, &a.axes);
	if (got < 0)
		return c->e->code;
	if (!got)
		return ox_fail(c, nd, "axes are required");
	return bind(c, nd, ox_emit(c, nd, IR_OP_unsqueeze, &x, 1, &a));
}

int ox_tr_squeeze(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	ir_attrs a;
	ir_attrs_init(IR_OP_squeeze, &a);
	if (axes_of(c, nd, &a.axes) < 0)
		return c->e->code;
	return bind(c, nd, ox_emit(c, nd, IR_OP_squeeze, &x, 1, &a));
}

int ox_tr_expand(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	ir_ints d;
	if (x == IR_NONE || dims_in(c, nd, 1, "shape", &d))
		return c->e->code;
	/* ONNX broadcasts both ways: a 1 in the target keeps x's dim. */
	const ir_shape *xs = &ox_node(c, x)->shape;
	int r = d.n > xs->rank ? d.n : xs->rank;
	ir_attrs a;
	ir_attrs_init(IR_OP_expand, &a);
	a.shape.n = r;
	for (int i = 0; i < r; i++) {
		int ti = i - (r - d.n), xi = i - (r - xs->rank);
		int64_t t = ti >= 0 ? ox_dim_of(d.v[ti]) : 1;
		int64_t xd = xi >= 0 ? xs->d[xi] : 1;
		if (t < 0 && !IR_IS_SYM(t))
			return ox_fail(c, nd, "shape entry %d is %lld", ti, (long long)d.v[ti]);
		if (t == 1)
			t = xd;
		else if (xd != 1 && xd != t)
			return ox_fail(c, nd, "input dim %d does not broadcast to the target", xi);
		a.shape.v[i] = t;
	}
	return bind(c, nd, ox_emit(c, nd, IR_OP_expand, &x, 1, &a));
}

static int cast_to(ox_ctx *c, const onnx_node *nd, ir_dtype t)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	if (ox_node(c, x)->dtype == t)
		return bind(c, nd, x);
	ir_attrs a;
	ir_attrs_init(IR_OP_cast, &a);
	a.dtype = t;
	return bind(c, nd, ox_emit(c, nd, IR_OP_cast, &x, 1, &a));
}

int ox_tr_cast(ox_ctx *c, const onnx_node *nd)
{
	ir_dtype t;
	if (!ox_attr(nd, "to"))
		return ox_fail(c, nd, "attribute to is required");
	if (ox_dtype(c, nd, ox_ai(nd, "to", 0), &t))
		return c->e->code;
	return cast_to(c, nd, t);
}

int ox_tr_cast_like(ox_ctx *c, const onnx_node *nd)
{
	ir_ref y = ox_need(c, nd, 1);
	if (y == IR_NONE)
		return c->e->code;
	return cast_to(c, nd, ox_node(c, y)->dtype);
}

/* Pad mode wrap (circular) along each padded axis: concat(x[d-b:],
 * x, x[:e]); pads up to the axis size. */
static ir_ref pad_wrap(ox_ctx *c, const onnx_node *nd, ir_ref x, const ir_ints *pad)
{
	int r = pad->n / 2;
	for (int ax = 0; ax < r && x != IR_NONE; ax++) {
		int64_t b = pad->v[ax], e = pad->v[r + ax], d = ox_node(c, x)->shape.d[ax];
		if (!b && !e)
			continue;
		if (d < 0 || b > d || e > d)
			return ox_fail(c, nd, "wrap pads must be at most the (known) axis size"), IR_NONE;
		ir_ref in[3];
		uint32_t n = 0;
		ir_attrs sa;
		ir_attrs_init(IR_OP_slice, &sa);
		sa.axes = (ir_ints){1, {ax}};
		if (b) {
			sa.starts = (ir_ints){1, {d - b}};
			sa.ends = (ir_ints){1, {d}};
			in[n++] = ox_emit(c, nd, IR_OP_slice, &x, 1, &sa);
		}
		in[n++] = x;
		if (e) {
			sa.starts = (ir_ints){1, {0}};
			sa.ends = (ir_ints){1, {e}};
			in[n++] = ox_emit(c, nd, IR_OP_slice, &x, 1, &sa);
		}
		for (uint32_t k = 0; k < n; k++)
			if (in[k] == IR_NONE)
				return IR_NONE;
		ir_attrs ca;
		ir_attrs_init(IR_OP_concat, &ca);
		ca.axis = ax;
		x = ox_emit(c, nd, IR_OP_concat, in, n, &ca);
	}
	return x;
}

int ox_tr_pad(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	int r = ox_node(c, x)->shape.rank;
	ir_attrs a;
	ir_attrs_init(IR_OP_pad, &a);
	if (ox_as_is(nd, "mode", "constant", "constant"))
		a.mode = IR_PAD_CONSTANT;
	else if (ox_as_is(nd, "mode", "constant", "reflect"))
		a.mode = IR_PAD_REFLECT;
	else if (ox_as_is(nd, "mode", "constant", "edge"))
		a.mode = IR_PAD_EDGE;
	else if (!ox_as_is(nd, "mode", "constant", "wrap"))
		return ox_fail(c, nd, "mode is not constant, reflect, edge or wrap");
	ir_ints p, axes = {0, {0}};
	if (ox_ints(c, nd, 1, "pads", false, &p))
		return c->e->code;
	if (ox_has(nd, 3)) {
		if (ox_ints(c, nd, 3, "axes", false, &axes))
			return c->e->code;
	} else {
		axes.n = r;
		for (int i = 0; i < r; i++)
			axes.v[i] = i;
	}
	if (p.n != 2 * axes.n)
		return ox_fail(c, nd, "%d pads for %d axes", p.n, axes.n);
	if (2 * r > IR_MAX_LIST)
		return ox_fail(c, nd, "rank %d is too high for pad", r);
	a.pad.n = 2 * r;
	for (int i = 0; i < 2 * r; i++)
		a.pad.v[i] = 0;
	for (int i = 0; i < axes.n; i++) {
		int ax = ir_axis(axes.v[i], r);
		if (ax < 0)
			return ox_fail(c, nd, "axis %lld is out of range for rank %d", (long long)axes.v[i], r);
		if (p.v[i] < 0 || p.v[axes.n + i] < 0)
			return ox_fail(c, nd, "negative pads (cropping) are not supported");
		a.pad.v[ax] = p.v[i];
		a.pad.v[r + ax] = p.v[axes.n + i];
	}
	if (ox_has(nd, 2) && ox_num(c, nd, 2, "constant_value", &a.value))
		return c->e->code;
	if (ox_as_is(nd, "mode", "constant", "wrap"))
		return bind(c, nd, pad_wrap(c, nd, x, &a.pad));
	return bind(c, nd, ox_emit(c, nd, IR_OP_pad, &x, 1, &a));
}

int ox_tr_trilu(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	double kd = 0;
	if (ox_has(nd, 1) && ox_num(c, nd, 1, "k", &kd))
		return c->e->code;
	int64_t k = kd < -(1 << 30) ? -(1 << 30) : kd > (1 << 30) ? (1 << 30) : (int64_t)kd;
	bool upper = ox_ai(nd, "upper", 1) != 0;
	const ir_node *xn = ox_node(c, x);
	int r = xn->shape.rank;
	if (r < 2)
		return ox_fail(c, nd, "the input must have rank >= 2");
	int64_t m = xn->shape.d[r - 2], n = xn->shape.d[r - 1];
	if (m < 0 || n < 0)
		return ox_fail(c, nd, "the last two dims must be known; bind them to values when loading the model");
	const ir_tensor *kt = ox_known(c, x);
	if (kt) { /* fold here: iota is never folded */
		ir_tensor t = *kt;
		if (!(t.data = malloc(kt->nbytes + 1)))
			return sn_errf(c->e, SN_EINTERNAL, "out of memory");
		memcpy(t.data, kt->data, kt->nbytes);
		size_t es = ir_dtype_size(t.dtype), total = t.nbytes / es;
		for (size_t i = 0; i < total; i++) {
			int64_t col = (int64_t)(i % (size_t)n), row = (int64_t)(i / (size_t)n % (size_t)m);
			bool keep = upper ? col - row >= k : col - row <= k;
			if (!keep)
				memset((char *)t.data + i * es, 0, es);
		}
		return bind(c, nd, ox_value(c, t));
	}
	ir_shape s = {2, {m, n}};
	ir_ref row = ox_iota(c, nd, IR_I64, &s, 0), col = ox_iota(c, nd, IR_I64, &s, 1);
	if (row == IR_NONE || col == IR_NONE)
		return c->e->code;
	ir_ref in[3] = {col, row};
	ir_ref diff = ox_emit(c, nd, IR_OP_sub, in, 2, NULL);
	ir_ref kk = ox_scalar(c, IR_I64, (double)(upper ? k - 1 : k + 1));
	if (diff == IR_NONE || kk == IR_NONE)
		return c->e->code;
	in[0] = diff, in[1] = kk;
	ir_ref mask = ox_emit(c, nd, upper ? IR_OP_greater : IR_OP_less, in, 2, NULL);
	ir_ref zero = ox_scalar(c, xn->dtype, 0);
	if (mask == IR_NONE || zero == IR_NONE)
		return c->e->code;
	in[0] = mask, in[1] = x, in[2] = zero;
	return bind(c, nd, ox_emit(c, nd, IR_OP_where, in, 3, NULL));
}
