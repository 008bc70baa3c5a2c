/* infer.c: shape and dtype inference. ir_infer dispatches through a table
 * expanded from ops.def's rule column to one ir_rule_<rule> per row.
 * Semantics are PyTorch's or ONNX's (docs/IR.md, The ops); every rule checks its
 * operands and attributes and fails with SN_EINPUT and a message that starts
 * with the op's name. Dim arithmetic is checked: an overflow is an error.
 * The rules are in infer_<family>.c by op family (infer_impl.h). */
#include "infer_impl.h"

/* ---- dispatch ------------------------------------------------------------------ */

typedef int (*rule_fn)(const ir_graph *, const ir_node *, ir_dtype *, ir_shape *, sn_err *);

static const rule_fn rules[IR_NOPS] = {
#define OP(id, kind, mn, mx, attrs, req, rule) [IR_OP_##id] = ir_rule_##rule,
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
