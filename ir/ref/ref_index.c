/* ref_index.c: indexing by tensors: gather_elements, scatter_elements and
 * scatter_nd (ONNX GatherElements, ScatterElements, ScatterND). An index i
 * along a dim of size d must lie in [-d, d) (negative counts from the
 * end); others are a run-time error. Values move bit for bit, except under
 * a scatter reduction, which computes in double (floats, rounded once at
 * the store) or exactly in int64 (integers, wrapping like PyTorch). */
#include "ir/ref/ref_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Index v along a dim of size d, normalized; -1 (and e set) if out of range. */
static int64_t norm_index(const ir_node *n, int64_t v, int64_t d, sn_err *e)
{
	if (v < -d || v >= d) {
		sn_errf(e, SN_EINPUT, "%s: index %lld out of range [%lld, %lld)", ir_ops[n->op].name,
			(long long)v, (long long)-d, (long long)d);
		return -1;
	}
	return v < 0 ? v + d : v;
}

int ref_gather_elements(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_shape *xs = &in[0].shape, *is = &in[1].shape;
	int a = ir_axis(n->attrs->axis, xs->rank);
	if (a < 0 || is->rank != xs->rank)
		return sn_errf(e, SN_EINPUT, "gather_elements: bad axis or rank");
	int64_t xst[IR_MAX_RANK], st[IR_MAX_RANK];
	ref_strides(xs, xst);
	memcpy(st, xst, sizeof st);
	st[a] = 0; /* the axis comes from the index */
	ref_iter it;
	ref_iter_init(&it, is);
	ref_iter_view(&it, 0, st);
	size_t es = ir_dtype_size(out->dtype);
	int64_t total = ref_numel(is);
	for (int64_t i = 0; i < total; i++, ref_iter_next(&it)) {
		int64_t k = norm_index(n, ref_load_int(in[1].dtype, in[1].data, (size_t)i), xs->d[a], e);
		if (k < 0)
			return e->code;
		ref_copy_elem(out->data, (size_t)i, in[0].data, (size_t)(it.off[0] + k * xst[a]), es);
	}
	return SN_OK;
}

/* out[o] combined with update u[ui] under the node's reduction. */
static void combine(const ir_node *n, ir_tensor *out, int64_t o, const ir_tensor *u, int64_t ui)
{
	ir_scatter red = n->attrs->reduction;
	ir_dtype t = out->dtype;
	if (red == IR_SCATTER_NONE) {
		ref_copy_elem(out->data, (size_t)o, u->data, (size_t)ui, ir_dtype_size(t));
		return;
	}
	if (ref_is_int(t)) {
		int64_t x = ref_load_int(t, out->data, (size_t)o), y = ref_load_int(t, u->data, (size_t)ui), r;
		switch (red) {
		case IR_SCATTER_ADD: r = (int64_t)((uint64_t)x + (uint64_t)y); break;
		case IR_SCATTER_MUL: r = (int64_t)((uint64_t)x * (uint64_t)y); break;
		case IR_SCATTER_MAX: r = x > y ? x : y; break;
		default: r = x < y ? x : y; break;
		}
		ref_store_int(t, out->data, (size_t)o, r);
		return;
	}
	double x = ir_load(t, out->data, (size_t)o), y = ir_load(t, u->data, (size_t)ui), r;
	switch (red) {
	case IR_SCATTER_ADD: r = x + y; break;
	case IR_SCATTER_MUL: r = x * y; break;
	case IR_SCATTER_MAX: r = isnan(x) || isnan(y) ? NAN : x > y ? x : y; break;
	default: r = isnan(x) || isnan(y) ? NAN : x < y ? x : y; break;
	}
	ir_store(t, out->data, (size_t)o, r);
}

/* Updates apply in row-major order of the indices, so with reduction none
 * the last of duplicate indices wins (ONNX leaves that order undefined). */
int ref_scatter_elements(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_shape *xs = &in[0].shape, *is = &in[1].shape;
	int a = ir_axis(n->attrs->axis, xs->rank);
	if (a < 0 || is->rank != xs->rank || !ir_shape_eq(is, &in[2].shape))
		return sn_errf(e, SN_EINPUT, "scatter_elements: bad axis or shapes");
	if (out->nbytes)
		memcpy(out->data, in[0].data, out->nbytes);
	int64_t xst[IR_MAX_RANK], st[IR_MAX_RANK];
	ref_strides(xs, xst);
	memcpy(st, xst, sizeof st);
	st[a] = 0;
	ref_iter it;
	ref_iter_init(&it, is);
	ref_iter_view(&it, 0, st);
	int64_t total = ref_numel(is);
	for (int64_t i = 0; i < total; i++) { /* check every index first: no partial result */
		if (norm_index(n, ref_load_int(in[1].dtype, in[1].data, (size_t)i), xs->d[a], e) < 0)
			return e->code;
	}
	for (int64_t i = 0; i < total; i++, ref_iter_next(&it)) {
		int64_t k = norm_index(n, ref_load_int(in[1].dtype, in[1].data, (size_t)i), xs->d[a], e);
		combine(n, out, it.off[0] + k * xst[a], &in[2], i);
	}
	return SN_OK;
}

int ref_scatter_nd(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_shape *xs = &in[0].shape, *is = &in[1].shape;
	int q = is->rank;
	int64_t k = q ? is->d[q - 1] : 0;
	if (q < 1 || k < 1 || k > xs->rank)
		return sn_errf(e, SN_EINPUT, "scatter_nd: bad indices shape");
	if (out->nbytes)
		memcpy(out->data, in[0].data, out->nbytes);
	int64_t xst[IR_MAX_RANK];
	ref_strides(xs, xst);
	int64_t m = ref_numel(is) / k, slice = ref_span(xs, (int)k, xs->rank);
	for (int pass = 0; pass < 2; pass++) /* the first pass checks every index */
		for (int64_t t = 0; t < m; t++) {
			int64_t base = 0;
			for (int64_t j = 0; j < k; j++) {
				int64_t v = norm_index(n, ref_load_int(in[1].dtype, in[1].data, (size_t)(t * k + j)),
						       xs->d[j], e);
				if (v < 0)
					return e->code;
				base += v * xst[j];
			}
			for (int64_t s = 0; pass && s < slice; s++)
				combine(n, out, base + s, &in[2], t * slice + s);
		}
	return SN_OK;
}
