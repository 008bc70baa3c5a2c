/* ref_linalg.c: matmul, linear and scaled dot-product attention. Operands
 * are converted to double once; products run in i-k-j order so the inner
 * loop walks contiguous rows, accumulating in double; each output element
 * rounds once at the store. */
#include "ir/ref/ref_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* c = a @ b (m x k times k x n): zeroed, then accumulated (ref_impl.h). */
static void gemm(const double *a, const double *b, double *c, int64_t m, int64_t k, int64_t n)
{
	for (int64_t i = 0; i < m * n; i++)
		c[i] = 0;
	ref_gemm_acc(c, a, b, m, k, n);
}

/* The leading (batch) dims [0, r - keep) of s as a shape of their own. */
static ir_shape lead(const ir_shape *s, int keep)
{
	ir_shape b = {s->rank > keep ? s->rank - keep : 0, {0}};
	for (int d = 0; d < b.rank; d++)
		b.d[d] = s->d[d];
	return b;
}

int ref_matmul(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_shape *as = &in[0].shape, *bs = &in[1].shape;
	if (as->rank < 1 || bs->rank < 1)
		return sn_errf(e, SN_EINPUT, "matmul: operands must have rank 1 or more");
	/* numpy: a 1-D a is a row [1,K], a 1-D b a column [K,1]; those dims
	 * are dropped from the output. */
	int64_t m = as->rank == 1 ? 1 : as->d[as->rank - 2];
	int64_t k = as->d[as->rank - 1];
	int64_t nn = bs->rank == 1 ? 1 : bs->d[bs->rank - 1];
	int64_t kb = bs->rank == 1 ? bs->d[0] : bs->d[bs->rank - 2];
	if (k != kb)
		return sn_errf(e, SN_EINPUT, "matmul: inner dims %lld and %lld differ", (long long)k, (long long)kb);
	ir_shape ab = lead(as, 2), bb = lead(bs, 2);
	int obr = out->shape.rank - (as->rank > 1) - (bs->rank > 1);
	ir_shape ob = lead(&out->shape, out->shape.rank - obr);
	ref_iter it;
	ref_iter_init(&it, &ob);
	if (ref_iter_bcast(&it, &ab) < 0 || ref_iter_bcast(&it, &bb) < 0)
		return ref_bcast_fail(n, e);
	double *a = ref_to_double(&in[0], e);
	double *b = a ? ref_to_double(&in[1], e) : NULL;
	double *c = b ? ref_malloc((size_t)(m * nn) * sizeof *c, e) : NULL;
	if (!c) {
		free(a);
		free(b);
		return e->code;
	}
	int64_t nb = ref_numel(&ob);
	for (int64_t t = 0; t < nb; t++, ref_iter_next(&it)) {
		gemm(a + it.off[0] * m * k, b + it.off[1] * k * nn, c, m, k, nn);
		for (int64_t i = 0; i < m * nn; i++)
			ir_store(out->dtype, out->data, (size_t)(t * m * nn + i), c[i]);
	}
	free(a);
	free(b);
	free(c);
	return SN_OK;
}

int ref_linear(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_shape *xs = &in[0].shape, *ws = &in[1].shape;
	if (xs->rank < 1 || ws->rank != 2)
		return sn_errf(e, SN_EINPUT, "linear: expects x [..., in] and w [out, in]");
	int64_t k = xs->d[xs->rank - 1], nn = ws->d[0];
	if (ws->d[1] != k)
		return sn_errf(e, SN_EINPUT, "linear: x has %lld features, w expects %lld",
			       (long long)k, (long long)ws->d[1]);
	int64_t m = k ? ref_numel(xs) / k : ref_numel(&out->shape) / (nn ? nn : 1);
	double *x = ref_to_double(&in[0], e);
	double *wt = x ? ref_malloc((size_t)(k * nn) * sizeof *wt, e) : NULL;
	double *c = wt ? ref_malloc((size_t)(m * nn) * sizeof *c, e) : NULL;
	if (!c) {
		free(x);
		free(wt);
		return e->code;
	}
	for (int64_t j = 0; j < nn; j++) /* w^T as [in, out] */
		for (int64_t p = 0; p < k; p++)
			wt[p * nn + j] = ir_load(in[1].dtype, in[1].data, (size_t)(j * k + p));
	gemm(x, wt, c, m, k, nn);
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < nn; j++) {
			double v = c[i * nn + j];
			if (n->nin > 2)
				v += ir_load(in[2].dtype, in[2].data, (size_t)j);
			ir_store(out->dtype, out->data, (size_t)(i * nn + j), v);
		}
	free(x);
	free(wt);
	free(c);
	return SN_OK;
}

/* The matrix index in x (batch dims xb) of output batch index t (batch
 * dims ob): numpy broadcasting, and GQA on the last batch dim (x's count a
 * divisor of the output's: index h reads h / (out count / x count)). */
static int64_t batch_index(const ir_shape *ob, const ir_shape *xb, int64_t t)
{
	int64_t idx = 0, st = 1;
	for (int d = ob->rank - 1; d >= 0; d--) {
		int64_t c = t % ob->d[d];
		t /= ob->d[d];
		int j = d - (ob->rank - xb->rank);
		if (j < 0)
			continue;
		int64_t xd = xb->d[j];
		idx += (xd == 1 ? 0 : xd == ob->d[d] ? c : c / (ob->d[d] / xd)) * st;
		st *= xd;
	}
	return idx;
}

/* softmax(q k^T * scale + mask) v over the last two dims; batch dims
 * broadcast, k and v may have fewer heads than q (GQA, IR.md).
 * causal masks j > i (top-left aligned, as PyTorch is_causal);
 * a bool mask keeps true, a float mask is added. A row with every score
 * masked is NaN, as in PyTorch. */
int ref_attention(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_shape *qs = &in[0].shape, *ks = &in[1].shape, *vs = &in[2].shape;
	if (qs->rank < 2 || ks->rank < 2 || vs->rank < 2)
		return sn_errf(e, SN_EINPUT, "scaled_dot_product_attention: q, k and v need rank 2 or more");
	int64_t l = qs->d[qs->rank - 2], ed = qs->d[qs->rank - 1];
	int64_t s = ks->d[ks->rank - 2], ev = vs->d[vs->rank - 1];
	if (ks->d[ks->rank - 1] != ed || vs->d[vs->rank - 2] != s)
		return sn_errf(e, SN_EINPUT, "scaled_dot_product_attention: q, k and v do not agree");
	double scale = n->attrs->scale != 0 ? n->attrs->scale : 1 / sqrt((double)ed);
	ir_shape ob = lead(&out->shape, 2), qb = lead(qs, 2), kb = lead(ks, 2), vb = lead(vs, 2);
	/* The mask walks (batch..., L, S) in step with the loops below. */
	ir_shape ms = ob;
	ms.rank += 2;
	ms.d[ms.rank - 2] = l;
	ms.d[ms.rank - 1] = s;
	ref_iter mi;
	ref_iter_init(&mi, &ms);
	const ir_tensor *mask = n->nin > 3 ? &in[3] : NULL;
	if (mask && ref_iter_bcast(&mi, &mask->shape) < 0)
		return ref_bcast_fail(n, e);
	double *q = ref_to_double(&in[0], e);
	double *k = q ? ref_to_double(&in[1], e) : NULL;
	double *v = k ? ref_to_double(&in[2], e) : NULL;
	double *p = v ? ref_malloc((size_t)(s + ev) * sizeof *p, e) : NULL;
	if (!p) {
		free(q);
		free(k);
		free(v);
		return e->code;
	}
	double *acc = p + s;
	int64_t nb = ref_numel(&ob);
	for (int64_t t = 0; t < nb; t++) {
		const double *qm = q + batch_index(&ob, &qb, t) * l * ed, *km = k + batch_index(&ob, &kb, t) * s * ed;
		const double *vm = v + batch_index(&ob, &vb, t) * s * ev;
		for (int64_t i = 0; i < l; i++) {
			double mx = -INFINITY, sum = 0;
			for (int64_t j = 0; j < s; j++, ref_iter_next(&mi)) {
				double dot = 0;
				for (int64_t c = 0; c < ed; c++)
					dot += qm[i * ed + c] * km[j * ed + c];
				double sc = dot * scale;
				if (mask) {
					if (mask->dtype == IR_BOOL)
						sc = ((const uint8_t *)mask->data)[mi.off[0]] ? sc : -INFINITY;
					else
						sc += ir_load(mask->dtype, mask->data, (size_t)mi.off[0]);
				}
				if (n->attrs->causal && j > i)
					sc = -INFINITY;
				p[j] = sc;
				if (sc > mx || isnan(sc))
					mx = isnan(mx) ? mx : sc;
			}
			for (int64_t j = 0; j < s; j++) {
				p[j] = exp(p[j] - mx); /* mx = -inf: NaN, as PyTorch */
				sum += p[j];
			}
			for (int64_t c = 0; c < ev; c++)
				acc[c] = 0;
			for (int64_t j = 0; j < s; j++) {
				double w = p[j] / sum;
				for (int64_t c = 0; c < ev; c++)
					acc[c] += w * vm[j * ev + c];
			}
			for (int64_t c = 0; c < ev; c++)
				ir_store(out->dtype, out->data, (size_t)((t * l + i) * ev + c), acc[c]);
		}
	}
	free(q);
	free(k);
	free(v);
	free(p);
	return SN_OK;
}
