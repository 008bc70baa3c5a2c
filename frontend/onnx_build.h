/* onnx_build.h: small builders over ox_emit that the ONNX translators of
 * onnx_ops_elem.c, onnx_ops_index.c, onnx_ops_einsum.c,
 * onnx_ops_conv_transpose.c and onnx_ops_resize.c share: one- and two-operand
 * nodes, where, reshape and transpose (skipped when they change nothing),
 * and binding a node's output. Each passes IR_NONE through. */
#ifndef SINTER_ONNX_BUILD_H
#define SINTER_ONNX_BUILD_H

#include "onnx_impl.h"

#include <string.h>

#define OOM(c) sn_errf((c)->e, SN_EINTERNAL, "out of memory")

static inline int bind(ox_ctx *c, const onnx_node *nd, ir_ref r) { return ox_out(c, nd, 0, r); }

static inline ir_ref emit1(ox_ctx *c, const onnx_node *nd, ir_op op, ir_ref x, const ir_attrs *a)
{
	return x == IR_NONE ? IR_NONE : ox_emit(c, nd, op, &x, 1, a);
}

static inline ir_ref emit2(ox_ctx *c, const onnx_node *nd, ir_op op, ir_ref a, ir_ref b)
{
	if (a == IR_NONE || b == IR_NONE)
		return IR_NONE;
	ir_ref in[2] = {a, b};
	return ox_emit(c, nd, op, in, 2, NULL);
}

static inline ir_ref where3(ox_ctx *c, const onnx_node *nd, ir_ref k, ir_ref x, ir_ref y)
{
	if (k == IR_NONE || x == IR_NONE || y == IR_NONE)
		return IR_NONE;
	ir_ref in[3] = {k, x, y};
	return ox_emit(c, nd, IR_OP_where, in, 3, NULL);
}

static inline ir_dtype dtype_of(ox_ctx *c, ir_ref r) { return ox_node(c, r)->dtype; }
static inline ir_shape shape_of(ox_ctx *c, ir_ref r) { return ox_node(c, r)->shape; }

static inline ir_ref reshape(ox_ctx *c, const onnx_node *nd, ir_ref x, const ir_shape *s)
{
	if (x == IR_NONE)
		return IR_NONE;
	if (ir_shape_eq(&ox_node(c, x)->shape, s))
		return x;
	ir_attrs a;
	ir_attrs_init(IR_OP_reshape, &a);
	a.shape.n = s->rank;
	memcpy(a.shape.v, s->d, (size_t)s->rank * sizeof *s->d);
	return emit1(c, nd, IR_OP_reshape, x, &a);
}

static inline ir_ref transpose(ox_ctx *c, const onnx_node *nd, ir_ref x, const int *perm, int rank)
{
	bool id = true;
	for (int i = 0; i < rank; i++)
		id &= perm[i] == i;
	if (x == IR_NONE || id)
		return x;
	ir_attrs a;
	ir_attrs_init(IR_OP_transpose, &a);
	a.perm.n = rank;
	for (int i = 0; i < rank; i++)
		a.perm.v[i] = perm[i];
	return emit1(c, nd, IR_OP_transpose, x, &a);
}

#endif
