/* ref_reduce.c: reductions, softmax/log_softmax and the norms. Every
 * statistic accumulates in double (two passes for variance) and the result
 * rounds once at the store. Integer reduce_sum/max/min are exact in int64. */
#include "ir/ref/ref_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Marks the reduced axes of an input of rank r: the listed ones, or all of
 * them when the list is empty (ONNX's default). */
static int reduced_axes(const ir_node *n, int r, bool *red, sn_err *e)
{
	const ir_ints *ax = &n->attrs->axes;
	for (int d = 0; d < r; d++)
		red[d] = ax->n == 0;
	for (int i = 0; i < ax->n; i++) {
		int d = ir_axis(ax->v[i], r);
		if (d < 0)
			return sn_errf(e, SN_EINPUT, "%s: axis %lld out of range for rank %d",
				       ir_ops[n->op].name, (long long)ax->v[i], r);
		red[d] = true;
	}
	return SN_OK;
}

int ref_reduce(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_shape *xs = &in[0].shape;
	bool red[IR_MAX_RANK];
	if (reduced_axes(n, xs->rank, red, e) != SN_OK)
		return e->code;
	/* Walk the input in order; slot 0 is the output element it folds into
	 * (the keepdims shape has the output's element order either way). */
	ir_shape ks = *xs;
	for (int d = 0; d < xs->rank; d++)
		if (red[d])
			ks.d[d] = 1;
	int64_t kst[IR_MAX_RANK];
	ref_strides(&ks, kst);
	for (int d = 0; d < xs->rank; d++)
		if (red[d])
			kst[d] = 0;
	int64_t total = ref_numel(xs), nout = ref_numel(&ks);
	int64_t count = nout ? total / nout : 0;
	if (ref_numel(&out->shape) != nout)
		return sn_errf(e, SN_EINTERNAL, "%s: output size disagrees with the axes", ir_ops[n->op].name);
	ir_op op = n->op;
	ir_dtype xt = in[0].dtype;
	ref_iter it;
	ref_iter_init(&it, xs);
	ref_iter_view(&it, 0, kst);
	if (ref_is_int(xt) && op != IR_OP_reduce_mean) {
		int64_t *acc = ref_malloc((size_t)nout * sizeof *acc, e);
		if (!acc)
			return e->code;
		for (int64_t o = 0; o < nout; o++)
			acc[o] = op == IR_OP_reduce_max ? INT64_MIN : op == IR_OP_reduce_min ? INT64_MAX : 0;
		for (int64_t i = 0; i < total; i++, ref_iter_next(&it)) {
			int64_t v = ref_load_int(xt, in[0].data, (size_t)i), *a = &acc[it.off[0]];
			if (op == IR_OP_reduce_sum)
				*a = (int64_t)((uint64_t)*a + (uint64_t)v);
			else if (op == IR_OP_reduce_max ? v > *a : v < *a)
				*a = v;
		}
		for (int64_t o = 0; o < nout; o++)
			ref_store_int(out->dtype, out->data, (size_t)o, acc[o]);
		free(acc);
		return SN_OK;
	}
	double *acc = ref_malloc((size_t)nout * sizeof *acc, e);
	if (!acc)
		return e->code;
	for (int64_t o = 0; o < nout; o++)
		acc[o] = op == IR_OP_reduce_max ? -INFINITY : op == IR_OP_reduce_min ? INFINITY : 0;
	for (int64_t i = 0; i < total; i++, ref_iter_next(&it)) {
		double v = ir_load(xt, in[0].data, (size_t)i), *a = &acc[it.off[0]];
		if (op == IR_OP_reduce_sum || op == IR_OP_reduce_mean)
			*a += v;
		else if (isnan(v) || (op == IR_OP_reduce_max ? v > *a : v < *a))
			*a = isnan(*a) ? *a : v; /* NaN sticks */
	}
	for (int64_t o = 0; o < nout; o++)
		ir_store(out->dtype, out->data, (size_t)o,
			 op == IR_OP_reduce_mean ? acc[o] / (double)count : acc[o]);
	free(acc);
	return SN_OK;
}

int ref_softmax(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_shape *xs = &in[0].shape;
	int ax = ir_axis(n->attrs->axis, xs->rank);
	if (ax < 0)
		return sn_errf(e, SN_EINPUT, "%s: axis %lld out of range for rank %d", ir_ops[n->op].name,
			       (long long)n->attrs->axis, xs->rank);
	int64_t outer = ref_span(xs, 0, ax), len = xs->d[ax], inner = ref_span(xs, ax + 1, xs->rank);
	double *x = ref_to_double(&in[0], e);
	if (!x)
		return e->code;
	bool logsm = n->op == IR_OP_log_softmax;
	for (int64_t o = 0; o < outer; o++) {
		for (int64_t j = 0; j < inner; j++) {
			double *row = x + o * len * inner + j;
			double m = -INFINITY, sum = 0;
			for (int64_t k = 0; k < len; k++)
				if (row[k * inner] > m || isnan(row[k * inner]))
					m = isnan(m) ? m : row[k * inner];
			/* A row of -inf has m = -inf and gives NaN, as PyTorch. */
			for (int64_t k = 0; k < len; k++)
				sum += exp(row[k * inner] - m);
			double ls = log(sum);
			for (int64_t k = 0; k < len; k++) {
				double v = row[k * inner] - m;
				size_t idx = (size_t)((o * len + k) * inner + j);
				ir_store(out->dtype, out->data, idx, logsm ? v - ls : exp(v) / sum);
			}
		}
	}
	free(x);
	return SN_OK;
}

/* An optional per-element operand of the normalized block (the dims
 * [ax, rank) of x), broadcast to that block, as doubles; NULL with e unset
 * when absent. */
static double *block_operand(const ir_tensor *t, const ir_shape *xs, int ax, double fill, sn_err *e)
{
	ir_shape bs = {xs->rank - ax, {0}};
	for (int d = ax; d < xs->rank; d++)
		bs.d[d - ax] = xs->d[d];
	int64_t m = ref_numel(&bs);
	double *p = ref_malloc((size_t)m * sizeof *p, e);
	if (!p)
		return NULL;
	if (!t) {
		for (int64_t i = 0; i < m; i++)
			p[i] = fill;
		return p;
	}
	ref_iter it;
	ref_iter_init(&it, &bs);
	if (ref_iter_bcast(&it, &t->shape) < 0) {
		free(p);
		sn_errf(e, SN_EINPUT, "norm: weight or bias does not match the normalized dims");
		return NULL;
	}
	for (int64_t i = 0; i < m; i++, ref_iter_next(&it))
		p[i] = ir_load(t->dtype, t->data, (size_t)it.off[0]);
	return p;
}

int ref_layer_norm(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_shape *xs = &in[0].shape;
	int ax = ir_axis(n->attrs->axis, xs->rank);
	if (ax < 0)
		return sn_errf(e, SN_EINPUT, "%s: axis %lld out of range for rank %d", ir_ops[n->op].name,
			       (long long)n->attrs->axis, xs->rank);
	bool rms = n->op == IR_OP_rms_norm;
	int64_t outer = ref_span(xs, 0, ax), m = ref_span(xs, ax, xs->rank);
	double eps = n->attrs->eps;
	double *x = ref_to_double(&in[0], e);
	double *w = x ? block_operand(n->nin > 1 ? &in[1] : NULL, xs, ax, 1, e) : NULL;
	double *b = w ? block_operand(n->nin > 2 ? &in[2] : NULL, xs, ax, 0, e) : NULL;
	if (!b) {
		free(x);
		free(w);
		return e->code;
	}
	for (int64_t o = 0; o < outer; o++) {
		const double *r = x + o * m;
		double mean = 0, var = 0;
		if (!rms) {
			for (int64_t i = 0; i < m; i++)
				mean += r[i];
			mean /= (double)m;
		}
		for (int64_t i = 0; i < m; i++)
			var += (r[i] - mean) * (r[i] - mean);
		var /= (double)m; /* biased; for rms_norm this is mean(x^2) */
		double inv = 1 / sqrt(var + eps);
		for (int64_t i = 0; i < m; i++)
			ir_store(out->dtype, out->data, (size_t)(o * m + i), (r[i] - mean) * inv * w[i] + b[i]);
	}
	free(x);
	free(w);
	free(b);
	return SN_OK;
}

int ref_batch_norm(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_shape *xs = &in[0].shape;
	int cax = n->attrs->layout == IR_NHWC || xs->rank < 2 ? xs->rank - 1 : 1;
	if (cax < 0)
		return sn_errf(e, SN_EINPUT, "batch_norm: input must have a channel axis");
	int64_t c = xs->d[cax], inner = ref_span(xs, cax + 1, xs->rank), total = ref_numel(xs);
	for (int k = 1; k < 5; k++)
		if (ref_numel(&in[k].shape) != c)
			return sn_errf(e, SN_EINPUT, "batch_norm: operand %d has %lld elements, expected %lld channels",
				       k, (long long)ref_numel(&in[k].shape), (long long)c);
	double *p = ref_malloc((size_t)c * 3 * sizeof *p, e);
	if (!p)
		return e->code;
	double *mean = p, *scale = p + c, *shift = p + 2 * c;
	for (int64_t j = 0; j < c; j++) {
		mean[j] = ir_load(in[3].dtype, in[3].data, (size_t)j);
		scale[j] = ir_load(in[1].dtype, in[1].data, (size_t)j) /
			   sqrt(ir_load(in[4].dtype, in[4].data, (size_t)j) + n->attrs->eps);
		shift[j] = ir_load(in[2].dtype, in[2].data, (size_t)j);
	}
	for (int64_t i = 0; i < total; i++) {
		int64_t j = i / inner % c;
		double x = ir_load(in[0].dtype, in[0].data, (size_t)i);
		ir_store(out->dtype, out->data, (size_t)i, (x - mean[j]) * scale[j] + shift[j]);
	}
	free(p);
	return SN_OK;
}

/* cumsum: a running sum along the axis, in double (floats) or exactly in
 * int64 (integers); exclusive leaves the element itself out, reverse runs
 * from the end. */
int ref_cumsum(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_shape *xs = &in[0].shape;
	int ax = ir_axis(n->attrs->axis, xs->rank);
	if (ax < 0)
		return sn_errf(e, SN_EINPUT, "cumsum: axis %lld out of range for rank %d",
			       (long long)n->attrs->axis, xs->rank);
	int64_t outer = ref_span(xs, 0, ax), len = xs->d[ax], inner = ref_span(xs, ax + 1, xs->rank);
	bool excl = n->attrs->exclusive, rev = n->attrs->reverse, isint = ref_is_int(in[0].dtype);
	ir_dtype t = in[0].dtype;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < inner; j++) {
			double acc = 0;
			int64_t iacc = 0;
			for (int64_t s = 0; s < len; s++) {
				int64_t k = rev ? len - 1 - s : s;
				size_t idx = (size_t)((o * len + k) * inner + j);
				if (isint) {
					int64_t v = ref_load_int(t, in[0].data, idx);
					if (!excl)
						iacc = (int64_t)((uint64_t)iacc + (uint64_t)v);
					ref_store_int(t, out->data, idx, iacc);
					if (excl)
						iacc = (int64_t)((uint64_t)iacc + (uint64_t)v);
				} else {
					double v = ir_load(t, in[0].data, idx);
					if (!excl)
						acc += v;
					ir_store(t, out->data, idx, acc);
					if (excl)
						acc += v;
				}
			}
		}
	return SN_OK;
}

/* argmax, argmin: the index of the first extreme along the axis (the last
 * with select_last); NaN counts as the extreme of both (torch, numpy). */
int ref_arg_reduce(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_shape *xs = &in[0].shape;
	int ax = ir_axis(n->attrs->axis, xs->rank);
	if (ax < 0 || xs->d[ax] == 0)
		return sn_errf(e, SN_EINPUT, "%s: bad or empty axis", ir_ops[n->op].name);
	int64_t outer = ref_span(xs, 0, ax), len = xs->d[ax], inner = ref_span(xs, ax + 1, xs->rank);
	bool mx = n->op == IR_OP_argmax, last = n->attrs->select_last, isint = ref_is_int(in[0].dtype);
	ir_dtype t = in[0].dtype;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < inner; j++) {
			int64_t best = 0;
			for (int64_t k = 1; k < len; k++) {
				size_t ib = (size_t)((o * len + best) * inner + j), ik = (size_t)((o * len + k) * inner + j);
				bool win, tie;
				if (isint) {
					int64_t b = ref_load_int(t, in[0].data, ib), v = ref_load_int(t, in[0].data, ik);
					win = mx ? v > b : v < b;
					tie = v == b;
				} else {
					double b = ir_load(t, in[0].data, ib), v = ir_load(t, in[0].data, ik);
					win = isnan(b) ? false : isnan(v) || (mx ? v > b : v < b);
					tie = v == b || (isnan(v) && isnan(b));
				}
				if (win || (tie && last))
					best = k;
			}
			((int64_t *)out->data)[o * inner + j] = best;
		}
	return SN_OK;
}

/* group_norm: per sample and group of C/groups channels, the mean and
 * biased variance over the group's channels and spatial positions (two
 * passes in double), then a per-channel weight and bias. */
int ref_group_norm(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_shape *xs = &in[0].shape;
	int64_t N = xs->d[0], C = xs->d[1], G = n->attrs->groups, hw = ref_span(xs, 2, xs->rank);
	if (G < 1 || C % G != 0)
		return sn_errf(e, SN_EINPUT, "group_norm: groups do not divide the channels");
	double *x = ref_to_double(&in[0], e);
	if (!x)
		return e->code;
	int64_t m = C / G * hw;
	for (int64_t b = 0; b < N; b++)
		for (int64_t g = 0; g < G; g++) {
			int64_t base = (b * C + g * (C / G)) * hw;
			const double *r = x + base;
			double mean = 0, var = 0;
			for (int64_t i = 0; i < m; i++)
				mean += r[i];
			mean /= (double)(m ? m : 1);
			for (int64_t i = 0; i < m; i++)
				var += (r[i] - mean) * (r[i] - mean);
			var /= (double)(m ? m : 1);
			double inv = 1 / sqrt(var + n->attrs->eps);
			for (int64_t i = 0; i < m; i++) {
				int64_t c = g * (C / G) + i / (hw ? hw : 1);
				double w = ir_load(in[1].dtype, in[1].data, (size_t)c);
				double bb = ir_load(in[2].dtype, in[2].data, (size_t)c);
				ir_store(out->dtype, out->data, (size_t)(base + i), (r[i] - mean) * inv * w + bb);
			}
		}
	free(x);
	return SN_OK;
}

/* One candidate of a topk line. */
typedef struct tk_item {
	double v;
	int64_t iv, i;
} tk_item;

/* Whether a goes before b: the better value first (NaN the largest, as
 * torch.topk), ties by the lower index, so the order is total. */
static bool tk_before(const tk_item *a, const tk_item *b, bool small, bool isint)
{
	int c;
	if (isint) {
		c = a->iv > b->iv ? -1 : a->iv < b->iv ? 1 : 0;
	} else {
		bool na = isnan(a->v), nb = isnan(b->v);
		c = na && nb ? 0 : na ? -1 : nb ? 1 : a->v > b->v ? -1 : a->v < b->v ? 1 : 0;
	}
	if (small)
		c = -c;
	return c ? c < 0 : a->i < b->i;
}

/* A merge sort (stable, no global state: the reference is reentrant). */
static void tk_sort(tk_item *v, tk_item *tmp, int64_t n, bool small, bool isint)
{
	for (int64_t w = 1; w < n; w *= 2) {
		for (int64_t lo = 0; lo < n; lo += 2 * w) {
			int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			int64_t p = lo, q = mid, o = lo;
			while (p < mid && q < hi)
				tmp[o++] = tk_before(&v[q], &v[p], small, isint) ? v[q++] : v[p++];
			while (p < mid)
				tmp[o++] = v[p++];
			while (q < hi)
				tmp[o++] = v[q++];
		}
		memcpy(v, tmp, (size_t)n * sizeof *v);
	}
}

/* topk: each line sorted, the first k kept. */
int ref_topk(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_shape *xs = &in[0].shape;
	int ax = ir_axis(n->attrs->axis, xs->rank);
	if (ax < 0)
		return sn_errf(e, SN_EINPUT, "topk: axis out of range");
	int64_t outer = ref_span(xs, 0, ax), len = xs->d[ax], inner = ref_span(xs, ax + 1, xs->rank);
	int64_t k = n->attrs->k;
	tk_item *it = ref_malloc((size_t)len * 2 * sizeof *it, e);
	if (!it)
		return e->code;
	ir_dtype t = in[0].dtype;
	bool small = n->attrs->smallest, isint = ref_is_int(t);
	size_t es = ir_dtype_size(t);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < inner; j++) {
			for (int64_t s = 0; s < len; s++) {
				size_t idx = (size_t)((o * len + s) * inner + j);
				it[s] = (tk_item){isint ? 0 : ir_load(t, in[0].data, idx),
						  isint ? ref_load_int(t, in[0].data, idx) : 0, s};
			}
			tk_sort(it, it + len, len, small, isint);
			for (int64_t r = 0; r < k; r++) {
				size_t dst = (size_t)((o * k + r) * inner + j);
				if (n->attrs->index)
					((int64_t *)out->data)[dst] = it[r].i;
				else
					ref_copy_elem(out->data, dst, in[0].data, (size_t)((o * len + it[r].i) * inner + j), es);
			}
		}
	free(it);
	return SN_OK;
}
