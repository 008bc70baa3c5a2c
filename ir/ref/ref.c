/* ref.c: the reference interpreter's driver (ref_run, ref_eval_node), the
 * op dispatch and the helpers its kernels share. */
#include "ir/ref/ref_impl.h"
#include "ir/log.h"

#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

void ref_strides(const ir_shape *s, int64_t *st)
{
	int64_t m = 1;
	for (int d = s->rank - 1; d >= 0; d--) {
		st[d] = m;
		m *= s->d[d];
	}
}

int64_t ref_numel(const ir_shape *s)
{
	return ref_span(s, 0, s->rank);
}

int64_t ref_span(const ir_shape *s, int from, int to)
{
	int64_t m = 1;
	for (int d = from; d < to; d++)
		m *= s->d[d];
	return m;
}

void ref_iter_init(ref_iter *it, const ir_shape *out)
{
	memset(it, 0, sizeof *it);
	it->rank = out->rank;
	for (int d = 0; d < out->rank; d++)
		it->dims[d] = out->d[d];
}

int ref_iter_view(ref_iter *it, int64_t base, const int64_t *st)
{
	int k = it->nop++;
	it->off[k] = base;
	for (int d = 0; d < it->rank; d++)
		it->st[k][d] = st[d];
	return k;
}

int ref_iter_bcast(ref_iter *it, const ir_shape *s)
{
	int64_t own[IR_MAX_RANK], st[IR_MAX_RANK] = {0};
	int shift = it->rank - s->rank;
	if (shift < 0 || it->nop == REF_MAX_OPS)
		return -1;
	ref_strides(s, own);
	for (int d = 0; d < s->rank; d++) {
		if (s->d[d] != it->dims[d + shift] && s->d[d] != 1)
			return -1;
		st[d + shift] = s->d[d] == 1 && it->dims[d + shift] != 1 ? 0 : own[d];
	}
	return ref_iter_view(it, 0, st);
}

int ref_bcast_fail(const ir_node *n, sn_err *e)
{
	return sn_errf(e, SN_EINPUT, "%s: operand shapes do not broadcast to the result", ir_ops[n->op].name);
}

void *ref_malloc(size_t n, sn_err *e)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		sn_errf(e, SN_EINTERNAL, "out of memory (%zu bytes)", n);
	return p;
}

double *ref_to_double(const ir_tensor *t, sn_err *e)
{
	int64_t n = ref_numel(&t->shape);
	double *p = ref_malloc((size_t)n * sizeof *p, e);
	if (!p)
		return NULL;
	if (t->dtype == IR_F32) {
		const float *f = t->data;
		for (int64_t i = 0; i < n; i++)
			p[i] = f[i];
	} else {
		for (int64_t i = 0; i < n; i++)
			p[i] = ir_load(t->dtype, t->data, (size_t)i);
	}
	return p;
}

int64_t ref_load_int(ir_dtype t, const void *base, size_t i)
{
	switch (t) {
	case IR_I64: return ((const int64_t *)base)[i];
	case IR_I32: return ((const int32_t *)base)[i];
	case IR_I8: return ((const int8_t *)base)[i];
	case IR_U8: return ((const uint8_t *)base)[i];
	case IR_BOOL: return ((const uint8_t *)base)[i] != 0;
	default: return (int64_t)ir_load(t, base, i);
	}
}

void ref_store_int(ir_dtype t, void *base, size_t i, int64_t v)
{
	switch (t) {
	case IR_I64: ((int64_t *)base)[i] = v; break;
	/* Conversions to narrower unsigned types wrap (defined); the signed
	 * ones take the bits of the unsigned value, two's complement. */
	case IR_I32: ((int32_t *)base)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
	case IR_I8: ((int8_t *)base)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
	case IR_U8: ((uint8_t *)base)[i] = (uint8_t)(uint64_t)v; break;
	case IR_BOOL: ((uint8_t *)base)[i] = v != 0; break;
	default: ir_store(t, base, i, (double)v); break;
	}
}

/* ---- dispatch ---- */

static ref_kernel *const kernels[IR_NOPS] = {
	[IR_OP_neg] = ref_unary, [IR_OP_abs] = ref_unary, [IR_OP_exp] = ref_unary,
	[IR_OP_log] = ref_unary, [IR_OP_sqrt] = ref_unary, [IR_OP_rsqrt] = ref_unary,
	[IR_OP_tanh] = ref_unary, [IR_OP_sigmoid] = ref_unary, [IR_OP_erf] = ref_unary,
	[IR_OP_relu] = ref_unary, [IR_OP_gelu] = ref_unary, [IR_OP_silu] = ref_unary,
	[IR_OP_hardswish] = ref_unary, [IR_OP_hardsigmoid] = ref_unary,
	[IR_OP_clamp] = ref_unary, [IR_OP_cast] = ref_cast,
	[IR_OP_sin] = ref_unary, [IR_OP_cos] = ref_unary, [IR_OP_floor] = ref_unary,
	[IR_OP_ceil] = ref_unary, [IR_OP_round] = ref_unary, [IR_OP_softplus] = ref_unary,
	[IR_OP_mish] = ref_unary, [IR_OP_elu] = ref_unary, [IR_OP_leaky_relu] = ref_unary,
	[IR_OP_isnan] = ref_unary, [IR_OP_isinf] = ref_unary, [IR_OP_mod] = ref_binary,
	[IR_OP_add] = ref_binary, [IR_OP_sub] = ref_binary, [IR_OP_mul] = ref_binary,
	[IR_OP_div] = ref_binary, [IR_OP_pow] = ref_binary, [IR_OP_min] = ref_binary,
	[IR_OP_max] = ref_binary, [IR_OP_equal] = ref_binary, [IR_OP_less] = ref_binary,
	[IR_OP_greater] = ref_binary, [IR_OP_where] = ref_where,
	[IR_OP_reduce_sum] = ref_reduce, [IR_OP_reduce_mean] = ref_reduce,
	[IR_OP_reduce_max] = ref_reduce, [IR_OP_reduce_min] = ref_reduce,
	[IR_OP_softmax] = ref_softmax, [IR_OP_log_softmax] = ref_softmax,
	[IR_OP_layer_norm] = ref_layer_norm, [IR_OP_rms_norm] = ref_layer_norm,
	[IR_OP_batch_norm] = ref_batch_norm, [IR_OP_group_norm] = ref_group_norm,
	[IR_OP_cumsum] = ref_cumsum, [IR_OP_argmax] = ref_arg_reduce, [IR_OP_argmin] = ref_arg_reduce,
	[IR_OP_topk] = ref_topk,
	[IR_OP_gather_elements] = ref_gather_elements, [IR_OP_scatter_elements] = ref_scatter_elements,
	[IR_OP_scatter_nd] = ref_scatter_nd,
	[IR_OP_matmul] = ref_matmul, [IR_OP_linear] = ref_linear,
	[IR_OP_conv2d] = ref_conv2d,
	[IR_OP_scaled_dot_product_attention] = ref_attention,
	[IR_OP_max_pool2d] = ref_pool, [IR_OP_avg_pool2d] = ref_pool,
	[IR_OP_global_avg_pool] = ref_global_pool,
	[IR_OP_reshape] = ref_copy, [IR_OP_flatten] = ref_copy, [IR_OP_squeeze] = ref_copy,
	[IR_OP_unsqueeze] = ref_copy, [IR_OP_transpose] = ref_transpose,
	[IR_OP_expand] = ref_expand, [IR_OP_concat] = ref_concat, [IR_OP_split] = ref_split,
	[IR_OP_slice] = ref_slice, [IR_OP_gather] = ref_gather, [IR_OP_pad] = ref_pad,
};

/* Bytes of a value of type (t, s), refusing symbols and sizes that do not
 * fit in memory; -1 with e set. */
static int64_t type_bytes(const ir_graph *g, const ir_node *n, sn_err *e)
{
	const ir_shape *s = &n->shape;
	char ty[160];
	if (!ir_shape_concrete(s)) {
		ir_type_str(g, n->dtype, s, ty, sizeof ty);
		sn_errf(e, SN_EINPUT, "ref: %s%s%s has symbolic type %s; bind its symbols first",
			ir_ops[n->op].name, n->name ? " %" : "", n->name ? n->name : "", ty);
		return -1;
	}
	const int64_t limit = INT64_C(1) << 46; /* 64 TiB: nothing real is larger */
	int64_t b = (int64_t)ir_dtype_size(n->dtype);
	for (int d = 0; d < s->rank; d++) {
		if (s->d[d] != 0 && b > limit / s->d[d]) {
			ir_type_str(g, n->dtype, s, ty, sizeof ty);
			sn_errf(e, SN_EINPUT, "ref: %s: value of type %s is too large", ir_ops[n->op].name, ty);
			return -1;
		}
		b *= s->d[d];
	}
	return b;
}

static bool same_type(const ir_node *n, const ir_tensor *t)
{
	return t->dtype == n->dtype && ir_shape_eq(&t->shape, &n->shape) &&
	       (t->data || ref_numel(&t->shape) == 0);
}

static int eval_source(const ir_graph *g, const ir_node *n, ir_tensor *out, sn_err *e)
{
	switch (n->op) {
	case IR_OP_const:
		if (!n->data && out->nbytes)
			return sn_errf(e, SN_EINTERNAL, "ref: const without data");
		if (out->nbytes)
			memcpy(out->data, n->data, out->nbytes);
		return SN_OK;
	case IR_OP_iota: {
		int ax = ir_axis(n->attrs->axis, n->shape.rank);
		if (ax < 0)
			return sn_errf(e, SN_EINPUT, "iota: axis %lld out of range for rank %d",
				       (long long)n->attrs->axis, n->shape.rank);
		int64_t len = n->shape.d[ax], inner = ref_span(&n->shape, ax + 1, n->shape.rank);
		int64_t total = ref_numel(&n->shape);
		for (int64_t i = 0; i < total; i++) {
			int64_t v = i / inner % len;
			if (ir_dtype_is_float(n->dtype))
				ir_store(n->dtype, out->data, (size_t)i, (double)v);
			else
				ref_store_int(n->dtype, out->data, (size_t)i, v);
		}
		return SN_OK;
	}
	default:
		return sn_errf(e, SN_EINPUT, "ref: %s %s%s has no value to evaluate", ir_ops[n->op].name,
			       n->name ? "%" : "", n->name ? n->name : (n->pname ? n->pname : "?"));
	}
}

int ref_scatter_in_place(const ir_node *n, const ir_tensor *ops, sn_err *e)
{
	/* the kernels copy data into out first when out has bytes: none here */
	ir_tensor out = {.dtype = ops[0].dtype, .shape = ops[0].shape, .data = ops[0].data, .nbytes = 0};
	if (n->op == IR_OP_scatter_elements)
		return ref_scatter_elements(n, ops, &out, e);
	if (n->op == IR_OP_scatter_nd)
		return ref_scatter_nd(n, ops, &out, e);
	return sn_errf(e, SN_EINPUT, "%s cannot scatter in place", ir_ops[n->op].name);
}

int ref_eval_node(const ir_graph *g, const ir_node *n, const ir_tensor *ops, ir_tensor *out, sn_err *e)
{
	memset(out, 0, sizeof *out);
	int64_t nb = type_bytes(g, n, e);
	if (nb < 0)
		return e->code;
	if ((unsigned)n->op >= IR_NOPS)
		return sn_errf(e, SN_EINTERNAL, "ref: bad op %d", (int)n->op);
	for (uint32_t i = 0; i < n->nin; i++) {
		const ir_node *o = &g->nodes[n->in[i]];
		if (!same_type(o, &ops[i])) {
			char want[160], got[160];
			ir_type_str(g, o->dtype, &o->shape, want, sizeof want);
			ir_type_str(g, ops[i].dtype, &ops[i].shape, got, sizeof got);
			return sn_errf(e, SN_EINPUT, "ref: %s: operand %u should be %s, got %s%s",
				       ir_ops[n->op].name, i, want, got, ops[i].data ? "" : " without data");
		}
	}
	ref_kernel *k = kernels[n->op];
	if (ir_ops[n->op].kind != IR_K_SOURCE && !k)
		return sn_errf(e, SN_EINTERNAL, "ref: %s has no reference kernel", ir_ops[n->op].name);
	out->dtype = n->dtype;
	out->shape = n->shape;
	out->nbytes = (size_t)nb;
	out->data = ref_malloc((size_t)nb, e);
	if (!out->data)
		return e->code;
	/* An empty result has nothing to compute; its kernel may still walk
	 * the dims around the empty one (softmax over [2^40, 0] would spin) */
	if (!nb && k)
		return SN_OK;
	int rc = k ? k(n, ops, out, e) : eval_source(g, n, out, e);
	if (rc != SN_OK) {
		free(out->data);
		memset(out, 0, sizeof *out);
	}
	return rc;
}

/* ---- the whole graph ---- */

typedef struct slot {
	ir_tensor t;
	bool owned;    /* t.data is ours to free */
	uint32_t last; /* index of the last node reading it; UINT32_MAX: an output */
} slot;

static int check_given(const ir_graph *g, const ir_node *n, const ir_tensor *v, sn_err *e)
{
	if (same_type(n, v) && (v->nbytes == 0 ||
				v->nbytes == (size_t)ref_numel(&n->shape) * ir_dtype_size(n->dtype)))
		return SN_OK;
	char want[160], got[160];
	ir_type_str(g, n->dtype, &n->shape, want, sizeof want);
	ir_type_str(g, v->dtype, &v->shape, got, sizeof got);
	const char *what = n->op == IR_OP_input ? "input" : "param";
	const char *name = n->op == IR_OP_input ? n->name : n->pname;
	if (!v->data && ref_numel(&n->shape) != 0)
		return sn_errf(e, SN_EINPUT, "ref: %s %s%s has no data", what,
			       n->op == IR_OP_input ? "%" : "", name ? name : "?");
	return sn_errf(e, SN_EINPUT, "ref: %s %s%s should be %s, got %s%s", what,
		       n->op == IR_OP_input ? "%" : "", name ? name : "?", want, got,
		       same_type(n, v) ? " with a wrong byte count" : "");
}

int ref_run(const ir_graph *g, const ir_tensor *vals, ir_tensor *outs, sn_err *e)
{
	for (uint32_t i = 0; i < g->noutputs; i++)
		memset(&outs[i], 0, sizeof outs[i]);
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (type_bytes(g, &g->nodes[i], e) < 0)
			return e->code;
	for (uint32_t i = 0; i < g->noutputs; i++)
		if (g->outputs[i] >= g->nnodes)
			return sn_errf(e, SN_EINTERNAL, "ref: output %u is not a node", i);
	ir_tensor ops[64], *opv = ops, *big = NULL;
	slot *s = calloc(g->nnodes ? g->nnodes : 1, sizeof *s);
	if (!s)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		for (uint32_t k = 0; k < n->nin; k++) {
			if (n->in[k] >= i) {
				sn_errf(e, SN_EINTERNAL, "ref: node %u reads node %u, not an earlier one", i, n->in[k]);
				goto fail;
			}
			s[n->in[k]].last = i;
		}
	}
	for (uint32_t i = 0; i < g->noutputs; i++)
		s[g->outputs[i]].last = UINT32_MAX;

	double t0 = sn_now();
	for (uint32_t i = 0; i < g->nnodes; i++) {
		sn_progress("ref: nodes", i, g->nnodes, t0);
		const ir_node *n = &g->nodes[i];
		if (n->op == IR_OP_input || n->op == IR_OP_param) {
			if (check_given(g, n, &vals[i], e) != SN_OK)
				goto fail;
			s[i].t = vals[i];
			s[i].t.nbytes = (size_t)ref_numel(&n->shape) * ir_dtype_size(n->dtype);
			continue;
		}
		if (n->op == IR_OP_const && n->data) {
			/* Borrow the graph's bytes: constants can be large tables. */
			s[i].t = (ir_tensor){n->dtype, n->shape, n->data,
					     (size_t)ref_numel(&n->shape) * ir_dtype_size(n->dtype)};
			continue;
		}
		if (n->nin > SN_COUNT(ops)) {
			free(big);
			big = malloc(n->nin * sizeof *big);
			if (!big) {
				sn_errf(e, SN_EINTERNAL, "out of memory");
				goto fail;
			}
			opv = big;
		} else {
			opv = ops;
		}
		for (uint32_t k = 0; k < n->nin; k++)
			opv[k] = s[n->in[k]].t;
		if (ref_eval_node(g, n, opv, &s[i].t, e) != SN_OK)
			goto fail;
		s[i].owned = true;
		if (s[i].last == 0) { /* nobody reads it (node 0 reads nothing) */
			free(s[i].t.data);
			s[i].t.data = NULL;
			s[i].owned = false;
		}
		for (uint32_t k = 0; k < n->nin; k++) {
			slot *o = &s[n->in[k]];
			if (o->last == i && o->owned) {
				free(o->t.data);
				o->t.data = NULL;
				o->owned = false;
			}
		}
	}
	free(big);
	big = NULL;
	sn_progress_end();
	for (uint32_t i = 0; i < g->noutputs; i++) {
		slot *o = &s[g->outputs[i]];
		outs[i] = o->t;
		if (o->owned) {
			o->owned = false; /* handed over; a repeated output gets a copy */
			continue;
		}
		outs[i].data = NULL;
		void *copy = ref_malloc(o->t.nbytes, e);
		if (!copy)
			goto fail;
		if (o->t.nbytes)
			memcpy(copy, o->t.data, o->t.nbytes);
		outs[i].data = copy;
	}
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (s[i].owned) /* an output's second listing took a copy */
			free(s[i].t.data);
	free(s);
	return SN_OK;
fail:
	sn_progress_end();
	free(big);
	/* outs holds only handed-over slots (no longer owned) and copies. */
	for (uint32_t i = 0; i < g->noutputs; i++) {
		free(outs[i].data);
		memset(&outs[i], 0, sizeof outs[i]);
	}
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (s[i].owned)
			free(s[i].t.data);
	free(s);
	return e->code ? e->code : SN_EINTERNAL;
}
