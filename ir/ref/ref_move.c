/* ref_move.c: data movement. Values move bit for bit (no conversion);
 * transpose, expand and slice are strided views walked by ref_iter. */
#include "ir/ref/ref_impl.h"

#include <stdlib.h>
#include <string.h>

/* reshape, flatten, squeeze, unsqueeze: the same bytes, a new shape. */
int ref_copy(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	if (in[0].nbytes != out->nbytes)
		return sn_errf(e, SN_EINTERNAL, "%s: sizes differ", ir_ops[n->op].name);
	if (out->nbytes)
		memcpy(out->data, in[0].data, out->nbytes);
	return SN_OK;
}

/* Copies the view (base, strides per output dim) of src into out. */
static void copy_view(ir_tensor *out, const ir_tensor *src, int64_t base, const int64_t *st)
{
	ref_iter it;
	ref_iter_init(&it, &out->shape);
	ref_iter_view(&it, base, st);
	size_t es = ir_dtype_size(out->dtype);
	int64_t total = ref_numel(&out->shape);
	for (int64_t i = 0; i < total; i++, ref_iter_next(&it))
		ref_copy_elem(out->data, (size_t)i, src->data, (size_t)it.off[0], es);
}

int ref_transpose(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_ints *p = &n->attrs->perm;
	if (p->n != in[0].shape.rank)
		return sn_errf(e, SN_EINPUT, "transpose: perm does not match the rank");
	int64_t ist[IR_MAX_RANK], st[IR_MAX_RANK];
	ref_strides(&in[0].shape, ist);
	for (int d = 0; d < p->n; d++) {
		if (p->v[d] < 0 || p->v[d] >= p->n)
			return sn_errf(e, SN_EINPUT, "transpose: perm entry %lld out of range", (long long)p->v[d]);
		st[d] = ist[p->v[d]];
	}
	copy_view(out, &in[0], 0, st);
	return SN_OK;
}

int ref_expand(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	ref_iter it;
	ref_iter_init(&it, &out->shape);
	if (in[0].shape.rank > out->shape.rank)
		return sn_errf(e, SN_EINPUT, "expand: target has fewer dims than the operand");
	if (ref_iter_bcast(&it, &in[0].shape) < 0)
		return ref_bcast_fail(n, e);
	copy_view(out, &in[0], 0, it.st[0]);
	return SN_OK;
}

int ref_concat(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	int a = ir_axis(n->attrs->axis, out->shape.rank);
	if (a < 0)
		return sn_errf(e, SN_EINPUT, "concat: axis %lld out of range", (long long)n->attrs->axis);
	size_t es = ir_dtype_size(out->dtype);
	int64_t outer = ref_span(&out->shape, 0, a), inner = ref_span(&out->shape, a + 1, out->shape.rank);
	int64_t orow = out->shape.d[a] * inner, at = 0;
	for (uint32_t k = 0; k < n->nin; k++) {
		int64_t row = in[k].shape.d[a] * inner;
		if (at + row > orow)
			return sn_errf(e, SN_EINTERNAL, "concat: operands overflow the output");
		for (int64_t o = 0; o < outer && row; o++)
			memcpy((char *)out->data + (size_t)(o * orow + at) * es,
			       (const char *)in[k].data + (size_t)(o * row) * es, (size_t)row * es);
		at += row;
	}
	return SN_OK;
}

int ref_split(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_attrs *at = n->attrs;
	int a = ir_axis(at->axis, in[0].shape.rank);
	if (a < 0 || at->index < 0 || at->index >= at->sizes.n)
		return sn_errf(e, SN_EINPUT, "split: axis or index out of range");
	int64_t start = 0;
	for (int64_t i = 0; i < at->index; i++)
		start += at->sizes.v[i];
	int64_t ist[IR_MAX_RANK];
	ref_strides(&in[0].shape, ist);
	if (start + out->shape.d[a] > in[0].shape.d[a])
		return sn_errf(e, SN_EINPUT, "split: sizes exceed axis %d", a);
	copy_view(out, &in[0], start * ist[a], ist);
	return SN_OK;
}

int ref_slice(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_attrs *at = n->attrs;
	const ir_shape *xs = &in[0].shape;
	int64_t ist[IR_MAX_RANK], st[IR_MAX_RANK], base = 0;
	ref_strides(xs, ist);
	memcpy(st, ist, sizeof st);
	int k = at->starts.n;
	if (at->ends.n != k || (at->axes.n && at->axes.n != k) || (at->steps.n && at->steps.n != k))
		return sn_errf(e, SN_EINPUT, "slice: starts, ends, axes and steps differ in length");
	for (int i = 0; i < k; i++) {
		int a = ir_axis(at->axes.n ? at->axes.v[i] : i, xs->rank);
		int64_t step = at->steps.n ? at->steps.v[i] : 1, first;
		if (a < 0 || step == 0)
			return sn_errf(e, SN_EINPUT, "slice: bad axis or zero step");
		int64_t len = ir_slice_axis(xs->d[a], at->starts.v[i], at->ends.v[i], step, &first);
		if (len != out->shape.d[a])
			return sn_errf(e, SN_EINTERNAL, "slice: axis %d takes %lld elements, the type says %lld",
				       a, (long long)len, (long long)out->shape.d[a]);
		if (len > 0)
			base += first * ist[a];
		st[a] = ist[a] * step;
	}
	copy_view(out, &in[0], base, st);
	return SN_OK;
}

int ref_gather(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_shape *xs = &in[0].shape;
	int a = ir_axis(n->attrs->axis, xs->rank);
	if (a < 0)
		return sn_errf(e, SN_EINPUT, "gather: axis %lld out of range", (long long)n->attrs->axis);
	if (ref_is_int(in[1].dtype) == false)
		return sn_errf(e, SN_EINPUT, "gather: indices must be integers");
	size_t es = ir_dtype_size(out->dtype);
	int64_t outer = ref_span(xs, 0, a), len = xs->d[a], inner = ref_span(xs, a + 1, xs->rank);
	int64_t ni = ref_numel(&in[1].shape);
	size_t chunk = (size_t)inner * es;
	char *dst = out->data;
	for (int64_t t = 0; t < ni; t++) { /* check every index first */
		int64_t ix = ref_load_int(in[1].dtype, in[1].data, (size_t)t);
		if (ix < -len || ix >= len)
			return sn_errf(e, SN_EINPUT, "gather: index %lld out of range [%lld, %lld)",
				       (long long)ix, (long long)-len, (long long)len);
	}
	for (int64_t o = 0; o < outer; o++)
		for (int64_t t = 0; t < ni; t++, dst += chunk) {
			int64_t ix = ref_load_int(in[1].dtype, in[1].data, (size_t)t);
			if (ix < 0)
				ix += len;
			if (chunk)
				memcpy(dst, (const char *)in[0].data + (size_t)((o * len + ix) * inner) * es, chunk);
		}
	return SN_OK;
}

/* The source index along an axis of size d for output index o padded by
 * b in front; -1 for the constant. */
static int64_t pad_src(ir_padmode m, int64_t o, int64_t b, int64_t d)
{
	int64_t i = o - b;
	if (i >= 0 && i < d)
		return i;
	if (m == IR_PAD_CONSTANT || d == 0)
		return -1;
	if (m == IR_PAD_EDGE)
		return i < 0 ? 0 : d - 1;
	if (d == 1)
		return 0;
	int64_t period = 2 * (d - 1); /* reflect: ... 2 1 | 0 1 2 .. d-1 | d-2 ... */
	i %= period;
	if (i < 0)
		i += period;
	return i < d ? i : period - i;
}

int ref_pad(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_attrs *at = n->attrs;
	const ir_shape *xs = &in[0].shape;
	int r = xs->rank;
	if (at->pad.n != 2 * r)
		return sn_errf(e, SN_EINPUT, "pad: needs %d entries", 2 * r);
	/* Per axis, a table from output index to source index (or -1). */
	int64_t *map[IR_MAX_RANK] = {0}, ist[IR_MAX_RANK];
	ref_strides(xs, ist);
	int rc = SN_OK;
	for (int d = 0; d < r && rc == SN_OK; d++) {
		map[d] = ref_malloc((size_t)out->shape.d[d] * sizeof **map, e);
		if (!map[d])
			rc = e->code;
		for (int64_t o = 0; map[d] && o < out->shape.d[d]; o++)
			map[d][o] = pad_src(at->mode, o, at->pad.v[d], xs->d[d]);
	}
	if (rc == SN_OK) {
		size_t es = ir_dtype_size(out->dtype);
		uint64_t cval = 0; /* the constant in the output dtype */
		ir_store(out->dtype, &cval, 0, at->value);
		ref_iter it;
		ref_iter_init(&it, &out->shape);
		int64_t total = ref_numel(&out->shape);
		for (int64_t i = 0; i < total; i++, ref_iter_next(&it)) {
			int64_t off = 0;
			for (int d = 0; d < r && off >= 0; d++) {
				int64_t s = map[d][it.idx[d]];
				off = s < 0 ? -1 : off + s * ist[d];
			}
			if (off < 0)
				ref_copy_elem(out->data, (size_t)i, &cval, 0, es);
			else
				ref_copy_elem(out->data, (size_t)i, in[0].data, (size_t)off, es);
		}
	}
	for (int d = 0; d < r; d++)
		free(map[d]);
	return rc;
}
