/* infer_linalg.c: shape rules of matmul, linear and scaled dot-product
 * attention. */
#include "infer_impl.h"

/* ---- contractions ---------------------------------------------------------- */

int ir_rule_matmul(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
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
int ir_rule_linear(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
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

/* scaled_dot_product_attention(q [..., L, E], k [..., S, E], v [..., S, Ev], mask?) */
int ir_rule_attention(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e)
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
