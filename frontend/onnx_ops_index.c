/* onnx_ops_index.c: ONNX indexing ops (GatherND, OneHot, NonZero,
 * GatherElements, ScatterElements, ScatterND), scans and arg reductions
 * (CumSum, ArgMax, ArgMin, TopK), Tile (an expand between reshapes), and
 * Range with a symbolic limit (an iota). */
#include "onnx_build.h"

#include <stdlib.h>
#include <string.h>

/* ---- indexing ---- */

/* GatherND: data's batch dims and the k indexed dims after them folded
 * into one, each index tuple turned into an offset into it (negative
 * components wrapped; the batch position from an iota), one gather. */
int ox_tr_gather_nd(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0), ix = ox_need(c, nd, 1);
	if (x == IR_NONE || ix == IR_NONE)
		return c->e->code;
	ir_shape xs = shape_of(c, x), is = shape_of(c, ix);
	int q = is.rank;
	int64_t bd = ox_ai(nd, "batch_dims", 0), k = q ? is.d[q - 1] : -1;
	if (bd < 0 || bd >= q || bd > xs.rank)
		return ox_fail(c, nd, "batch_dims %lld is out of range", (long long)bd);
	if (q < 1 || k < 1 || bd + k > xs.rank)
		return ox_fail(c, nd, "indices must be [..., k] with 1 <= k <= %lld", (long long)(xs.rank - bd));
	ir_dtype it = dtype_of(c, ix);
	if (it != IR_I64 && it != IR_I32)
		return ox_fail(c, nd, "indices must be int64 or int32");
	int64_t prod = 1; /* the folded dims: batch and indexed */
	for (int i = 0; i < bd + k; i++) {
		if (xs.d[i] < 0 || (i < bd && is.d[i] != xs.d[i]))
			return ox_fail(c, nd, "the batch and indexed dims must be known and agree; bind them to values when loading the model");
		if (__builtin_mul_overflow(prod, xs.d[i], &prod))
			return ox_fail(c, nd, "the indexed dims are too large");
	}
	ir_shape os = {q - 1, {0}}; /* an offset per index tuple */
	for (int i = 0; i < q - 1; i++)
		os.d[i] = is.d[i];
	ir_ref off = IR_NONE;
	int64_t stride = prod;
	for (int64_t j = 0; j < bd + k; j++) {
		stride /= xs.d[j] ? xs.d[j] : 1;
		ir_ref v;
		if (j < bd) {
			v = ox_iota(c, nd, it, &os, j);
		} else {
			ir_attrs sa;
			ir_attrs_init(IR_OP_slice, &sa);
			sa.axes = (ir_ints){1, {q - 1}};
			sa.starts = (ir_ints){1, {j - bd}};
			sa.ends = (ir_ints){1, {j - bd + 1}};
			v = reshape(c, nd, emit1(c, nd, IR_OP_slice, ix, &sa), &os);
			ir_ref wrapped = emit2(c, nd, IR_OP_add, v, ox_scalar(c, it, (double)xs.d[j]));
			v = where3(c, nd, emit2(c, nd, IR_OP_less, v, ox_scalar(c, it, 0)), wrapped, v);
		}
		if (stride != 1)
			v = emit2(c, nd, IR_OP_mul, v, ox_scalar(c, it, (double)stride));
		off = off == IR_NONE ? v : emit2(c, nd, IR_OP_add, off, v);
		if (off == IR_NONE)
			return c->e->code;
	}
	ir_shape fs = {1 + xs.rank - (int)(bd + k), {prod}};
	for (int i = (int)(bd + k); i < xs.rank; i++)
		fs.d[1 + i - bd - k] = xs.d[i];
	ir_ref flat = reshape(c, nd, x, &fs);
	ir_attrs ga;
	ir_attrs_init(IR_OP_gather, &ga);
	ir_ref in[2] = {flat, off};
	if (flat == IR_NONE)
		return c->e->code;
	return bind(c, nd, ox_emit(c, nd, IR_OP_gather, in, 2, &ga));
}

/* OneHot: where(unsqueeze(indices) == iota along the new axis, on, off);
 * depth must be known; negative indices count from the end, others out of
 * range give a row of off. */
int ox_tr_one_hot(ox_ctx *c, const onnx_node *nd)
{
	ir_ref ix = ox_need(c, nd, 0), vals = ox_need(c, nd, 2);
	double depthf;
	if (ix == IR_NONE || vals == IR_NONE || ox_num(c, nd, 1, "depth", &depthf))
		return c->e->code;
	if (!(depthf >= 1) || depthf > (double)(1 << 24))
		return ox_fail(c, nd, "depth %g is out of range", depthf);
	int64_t depth = (int64_t)depthf;
	ir_shape is = shape_of(c, ix), vs = shape_of(c, vals);
	if (vs.rank != 1 || vs.d[0] != 2)
		return ox_fail(c, nd, "values must be [off, on]");
	int r = is.rank + 1;
	if (r > IR_MAX_RANK)
		return ox_fail(c, nd, "the output would have rank above %d", IR_MAX_RANK);
	int ax = ir_axis(ox_ai(nd, "axis", -1), r);
	if (ax < 0)
		return ox_fail(c, nd, "axis is out of range");
	if (dtype_of(c, ix) != IR_I64) {
		ir_attrs ca;
		ir_attrs_init(IR_OP_cast, &ca);
		ca.dtype = IR_I64;
		ix = emit1(c, nd, IR_OP_cast, ix, &ca);
	}
	ir_ref wrapped = emit2(c, nd, IR_OP_add, ix, ox_scalar(c, IR_I64, (double)depth));
	ix = where3(c, nd, emit2(c, nd, IR_OP_less, ix, ox_scalar(c, IR_I64, 0)), wrapped, ix);
	ir_attrs ua;
	ir_attrs_init(IR_OP_unsqueeze, &ua);
	ua.axes = (ir_ints){1, {ax}};
	ix = emit1(c, nd, IR_OP_unsqueeze, ix, &ua);
	ir_shape ios = {r, {0}};
	for (int i = 0; i < r; i++)
		ios.d[i] = i == ax ? depth : 1;
	ir_ref pos = ox_iota(c, nd, IR_I64, &ios, ax);
	ir_ref hit = emit2(c, nd, IR_OP_equal, ix, pos);
	ir_ref pick[2];
	for (int k = 0; k < 2; k++) {
		ir_attrs sa;
		ir_attrs_init(IR_OP_slice, &sa);
		sa.starts = (ir_ints){1, {k}};
		sa.ends = (ir_ints){1, {k + 1}};
		ir_shape sc = {0, {0}};
		pick[k] = reshape(c, nd, emit1(c, nd, IR_OP_slice, vals, &sa), &sc);
	}
	return bind(c, nd, where3(c, nd, hit, pick[1], pick[0]));
}

/* NonZero: its result's shape depends on the values, so only a known input
 * is supported (evaluated here). */
int ox_tr_nonzero(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	const ir_tensor *t = ox_known(c, x);
	if (!t)
		return ox_fail(c, nd, "its output shape depends on the input's values: the input must be known at "
				      "import time");
	int r = t->shape.rank ? t->shape.rank : 1;
	int64_t n = 1;
	for (int i = 0; i < t->shape.rank; i++)
		n *= t->shape.d[i];
	int64_t cnt = 0;
	for (int64_t i = 0; i < n; i++)
		cnt += ir_load(t->dtype, t->data, (size_t)i) != 0;
	ir_tensor o = {IR_I64, {2, {r, cnt}}, malloc((size_t)(r * cnt) * 8 + 1), (size_t)(r * cnt) * 8};
	if (!o.data)
		return OOM(c);
	int64_t *p = o.data, col = 0;
	for (int64_t i = 0; i < n; i++) {
		if (ir_load(t->dtype, t->data, (size_t)i) == 0)
			continue;
		int64_t rem = i;
		for (int d = t->shape.rank - 1; d >= 0; d--) {
			p[d * cnt + col] = rem % t->shape.d[d];
			rem /= t->shape.d[d];
		}
		if (!t->shape.rank)
			p[col] = 0;
		col++;
	}
	return bind(c, nd, ox_value(c, o));
}



static int reduction_of(ox_ctx *c, const onnx_node *nd, ir_scatter *out)
{
	static const char *const names[] = {"none", "add", "mul", "max", "min"};
	for (int i = 0; i < 5; i++)
		if (ox_as_is(nd, "reduction", "none", names[i])) {
			*out = (ir_scatter)i;
			return SN_OK;
		}
	return ox_fail(c, nd, "reduction must be none, add, mul, max or min");
}

int ox_tr_gather_elements(ox_ctx *c, const onnx_node *nd)
{
	ir_ref in[2] = {ox_need(c, nd, 0), ox_need(c, nd, 1)};
	if (in[0] == IR_NONE || in[1] == IR_NONE)
		return c->e->code;
	ir_attrs a;
	ir_attrs_init(IR_OP_gather_elements, &a);
	a.axis = ox_ai(nd, "axis", 0);
	return bind(c, nd, ox_emit(c, nd, IR_OP_gather_elements, in, 2, &a));
}

/* ScatterElements, ScatterND */
int ox_tr_scatter(ox_ctx *c, const onnx_node *nd)
{
	bool elems = strcmp(nd->op_type, "ScatterElements") == 0;
	ir_op op = elems ? IR_OP_scatter_elements : IR_OP_scatter_nd;
	ir_ref in[3] = {ox_need(c, nd, 0), ox_need(c, nd, 1), ox_need(c, nd, 2)};
	if (in[0] == IR_NONE || in[1] == IR_NONE || in[2] == IR_NONE)
		return c->e->code;
	ir_attrs a;
	ir_attrs_init(op, &a);
	if (elems)
		a.axis = ox_ai(nd, "axis", 0);
	if (reduction_of(c, nd, &a.reduction))
		return c->e->code;
	return bind(c, nd, ox_emit(c, nd, op, in, 3, &a));
}

/* ---- scans and arg reductions ---- */

int ox_tr_cumsum(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	ir_ints ax;
	if (x == IR_NONE || ox_ints(c, nd, 1, "axis", false, &ax))
		return c->e->code;
	if (ax.n != 1)
		return ox_fail(c, nd, "axis must hold one value");
	ir_attrs a;
	ir_attrs_init(IR_OP_cumsum, &a);
	a.axis = ax.v[0];
	a.exclusive = ox_ai(nd, "exclusive", 0) != 0;
	a.reverse = ox_ai(nd, "reverse", 0) != 0;
	return bind(c, nd, emit1(c, nd, IR_OP_cumsum, x, &a));
}

int ox_tr_arg(ox_ctx *c, const onnx_node *nd)
{
	ir_op op = strcmp(nd->op_type, "ArgMax") == 0 ? IR_OP_argmax : IR_OP_argmin;
	ir_attrs a;
	ir_attrs_init(op, &a);
	a.axis = ox_ai(nd, "axis", 0);
	a.keepdims = ox_ai(nd, "keepdims", 1) != 0;
	a.select_last = ox_ai(nd, "select_last_index", 0) != 0;
	return bind(c, nd, emit1(c, nd, op, ox_need(c, nd, 0), &a));
}

/* TopK: values and indices as two topk nodes (index 0 and 1), each made
 * only when the graph names that output; always sorted (sorted=0 leaves
 * the order to the implementation). */
int ox_tr_topk(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	ir_ints k;
	if (x == IR_NONE || ox_ints(c, nd, 1, "K", false, &k))
		return c->e->code;
	if (k.n != 1)
		return ox_fail(c, nd, "K must hold one value");
	ir_attrs a;
	ir_attrs_init(IR_OP_topk, &a);
	a.axis = ox_ai(nd, "axis", -1);
	a.k = k.v[0];
	a.smallest = ox_ai(nd, "largest", 1) == 0;
	for (size_t i = 0; i < 2 && i < nd->noutputs; i++) {
		if (!nd->outputs[i][0])
			continue;
		a.index = (int64_t)i;
		if (ox_out(c, nd, i, emit1(c, nd, IR_OP_topk, x, &a)))
			return c->e->code;
	}
	return SN_OK;
}

/* ---- Tile: a unit dim before each repeated dim, expanded, folded ---- */

int ox_tr_tile(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0);
	ir_ints rep;
	if (x == IR_NONE || ox_ints(c, nd, 1, "repeats", false, &rep))
		return c->e->code;
	ir_shape xs = shape_of(c, x);
	if (rep.n != xs.rank)
		return ox_fail(c, nd, "repeats has %d entries for an input of rank %d", rep.n, xs.rank);
	ir_shape mid = {0}, out = {0};
	ir_attrs ea;
	ir_attrs_init(IR_OP_expand, &ea);
	for (int i = 0; i < xs.rank; i++) {
		int64_t d = xs.d[i], r = rep.v[i];
		if (r < 0)
			return ox_fail(c, nd, "repeats must not be negative");
		if (r != 1) {
			if (d < 0)
				return ox_fail(c, nd, "a repeated dim must be known; bind it to a value when loading the model");
			if (r > 0 && d > INT64_MAX / r)
				return ox_fail(c, nd, "repeats %lld of a dim of %lld overflow", (long long)r, (long long)d);
			if (mid.rank >= IR_MAX_RANK)
				return ox_fail(c, nd, "too many repeated dims");
			mid.d[mid.rank] = 1;
			ea.shape.v[mid.rank++] = r;
		}
		if (mid.rank >= IR_MAX_RANK)
			return ox_fail(c, nd, "too many repeated dims");
		mid.d[mid.rank] = d;
		ea.shape.v[mid.rank++] = d;
		out.d[out.rank++] = r != 1 ? r * d : d;
	}
	ea.shape.n = mid.rank;
	ir_ref y = reshape(c, nd, emit1(c, nd, IR_OP_expand, reshape(c, nd, x, &mid), &ea), &out);
	return bind(c, nd, y);
}

/* ---- Range with a symbolic limit: iota ---- */

int ox_tr_range_sym(ox_ctx *c, const onnx_node *nd, int64_t sym)
{
	double st, de;
	if (ox_num(c, nd, 0, "start", &st) || ox_num(c, nd, 2, "delta", &de))
		return c->e->code;
	if (st != 0 || de != 1)
		return ox_fail(c, nd, "a limit that depends on symbolic dim %s needs start 0 and delta 1",
			       c->w->syms[sym]);
	ir_dtype t = dtype_of(c, ox_in(c, nd, 0));
	ir_shape s = {1, {IR_SYM(sym)}};
	return bind(c, nd, ox_iota(c, nd, t, &s, 0));
}
