/* infer_move.c: shape rules of data movement: reshape, transpose,
 * flatten, squeeze, unsqueeze, expand, concat, split, slice, gather, pad. */
#include "infer_impl.h"

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

int ir_rule_reshape(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
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

int ir_rule_transpose(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
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
int ir_rule_flatten(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
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

int ir_rule_squeeze(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
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
int ir_rule_unsqueeze(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
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
int ir_rule_expand(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
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

int ir_rule_concat(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
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

int ir_rule_split(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
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

int ir_rule_slice(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
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
int ir_rule_gather(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
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
int ir_rule_pad(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
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
