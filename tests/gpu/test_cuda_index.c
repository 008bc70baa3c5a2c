/* test_cuda_index.c: the ops that index by tensors or walk an axis, on
 * CUDA against the reference: gather_elements (each axis, negative
 * indices, indices smaller than data), scatter_elements and scatter_nd
 * (every reduction, duplicate indices, float and integer data), cumsum
 * (every axis, exclusive, reverse, integers), argmax/argmin (each axis,
 * keepdims, select_last on ties of integer data), topk (values and
 * indices, largest and smallest, ties) and group_norm (f32, f16,
 * bf16; instance norm as groups = C). Inputs are fresh random values
 * (gpu_check.c): floats in [-1, 1), integers in [0, 4); index operands
 * are those integers minus 2, so both signs occur. */
#include "gpu_check.h"

#include <stdio.h>
#include <string.h>

#define EXACT 1e-12

static ir_ref opn(ir_graph *g, ir_op op, const ir_attrs *at, uint32_t nin, ir_ref a, ir_ref b, ir_ref c)
{
	ir_ref v[3] = {a, b, c};
	return ir_add(g, op, v, nin, at, &gpu_err);
}

/* Random indices in [-2, 2) of dtype t and shape s. */
static ir_ref indices(ir_graph *g, ir_dtype t, ir_shape s)
{
	uint64_t two = 0;
	ir_store(t, &two, 0, 2);
	ir_shape sc = {0, {0}};
	ir_ref k = ir_add_const(g, t, &sc, &two, &gpu_err);
	return opn(g, IR_OP_sub, NULL, 2, gpu_in(g, "i", t, s), k, 0);
}

static void gather_elements(void)
{
	for (int axis = 0; axis < 3; axis++)
		for (int it = 0; it < 2; it++) {
			ir_graph *g = ir_graph_new();
			ir_attrs a;
			ir_attrs_init(IR_OP_gather_elements, &a);
			a.axis = axis - (it ? 3 : 0);
			ir_ref x = gpu_in(g, "x", IR_F32, GPU_SHAPE(5, 6, 7));
			ir_shape is = GPU_SHAPE(4, 6, 5);
			is.d[axis] = 9; /* longer than data along the axis */
			char label[64];
			snprintf(label, sizeof label, "gather_elements axis %lld %s", (long long)a.axis, it ? "i32" : "i64");
			gpu_run(g, opn(g, IR_OP_gather_elements, &a, 2, x, indices(g, it ? IR_I32 : IR_I64, is), 0), EXACT,
			    label);
		}
}

static void scatters(void)
{
	const ir_dtype ts[] = {IR_F32, IR_BF16, IR_I32};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++)
		for (int red = 0; red < 5; red++) {
			ir_graph *g = ir_graph_new();
			ir_attrs a;
			ir_attrs_init(IR_OP_scatter_elements, &a);
			a.axis = 1;
			a.reduction = (ir_scatter)red;
			ir_ref x = gpu_in(g, "x", ts[ti], GPU_SHAPE(6, 5, 7));
			ir_ref u = gpu_in(g, "u", ts[ti], GPU_SHAPE(4, 8, 7)); /* 8 updates into 5 rows: duplicates */
			char label[80];
			snprintf(label, sizeof label, "scatter_elements %s %s", ir_scatter_name(a.reduction),
				 ir_dtype_name(ts[ti]));
			gpu_run(g, opn(g, IR_OP_scatter_elements, &a, 3, x, indices(g, IR_I64, GPU_SHAPE(4, 8, 7)), u),
			    ts[ti] == IR_BF16 ? gpu_tol(IR_BF16) : 1e-6, label);

			g = ir_graph_new();
			ir_attrs_init(IR_OP_scatter_nd, &a);
			a.reduction = (ir_scatter)red;
			x = gpu_in(g, "x", ts[ti], GPU_SHAPE(4, 3, 9));
			/* 10 tuples of 2 indices into [4, 3]: slices of 9, duplicates */
			u = gpu_in(g, "u", ts[ti], GPU_SHAPE(10, 9));
			snprintf(label, sizeof label, "scatter_nd %s %s", ir_scatter_name(a.reduction), ir_dtype_name(ts[ti]));
			gpu_run(g, opn(g, IR_OP_scatter_nd, &a, 3, x, indices(g, IR_I64, GPU_SHAPE(10, 2)), u),
			    ts[ti] == IR_BF16 ? gpu_tol(IR_BF16) : 1e-6, label);
		}
}

static void cumsum(void)
{
	const ir_dtype ts[] = {IR_F32, IR_F16, IR_I64};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++)
		for (int axis = 0; axis < 3; axis++)
			for (int mode = 0; mode < 4; mode++) {
				ir_graph *g = ir_graph_new();
				ir_attrs a;
				ir_attrs_init(IR_OP_cumsum, &a);
				a.axis = axis;
				a.exclusive = mode & 1;
				a.reverse = mode & 2;
				char label[80];
				snprintf(label, sizeof label, "cumsum %s axis %d%s%s", ir_dtype_name(ts[ti]), axis,
					 a.exclusive ? " exclusive" : "", a.reverse ? " reverse" : "");
				ir_ref x = gpu_in(g, "x", ts[ti], GPU_SHAPE(3, 300, 5));
				gpu_run(g, opn(g, IR_OP_cumsum, &a, 1, x, 0, 0), ts[ti] == IR_F16 ? gpu_tol(IR_F16) : 1e-5, label);
			}
}

static void args(void)
{
	const ir_dtype ts[] = {IR_F32, IR_I32};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++)
		for (int op = 0; op < 2; op++)
			for (int axis = 0; axis < 3; axis++)
				for (int last = 0; last < 2; last++) {
					ir_graph *g = ir_graph_new();
					ir_op o = op ? IR_OP_argmin : IR_OP_argmax;
					ir_attrs a;
					ir_attrs_init(o, &a);
					a.axis = axis;
					a.keepdims = axis == 1;
					a.select_last = last; /* integers in [0, 4) tie often */
					char label[80];
					snprintf(label, sizeof label, "%s %s axis %d%s", ir_ops[o].name, ir_dtype_name(ts[ti]),
						 axis, last ? " select_last" : "");
					gpu_run(g, opn(g, o, &a, 1, gpu_in(g, "x", ts[ti], GPU_SHAPE(7, 65, 9)), 0, 0), EXACT, label);
				}
}

static void topk(void)
{
	const ir_dtype ts[] = {IR_F32, IR_BF16, IR_I32};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++)
		for (int axis = 0; axis < 3; axis++)
			for (int mode = 0; mode < 4; mode++) {
				ir_graph *g = ir_graph_new();
				ir_attrs a;
				ir_attrs_init(IR_OP_topk, &a);
				a.axis = axis;
				a.k = axis == 1 ? 17 : 3;
				a.smallest = mode & 1;
				a.index = mode >> 1; /* integers in [0, 4) tie often: the index order shows */
				char label[80];
				snprintf(label, sizeof label, "topk %s axis %d k %lld%s%s", ir_dtype_name(ts[ti]), axis,
					 (long long)a.k, a.smallest ? " smallest" : "", a.index ? " indices" : "");
				gpu_run(g, opn(g, IR_OP_topk, &a, 1, gpu_in(g, "x", ts[ti], GPU_SHAPE(5, 65, 7)), 0, 0), EXACT, label);
			}
}

static void group_norm(void)
{
	const ir_dtype ts[] = {IR_F32, IR_F16, IR_BF16};
	const int64_t groups[] = {1, 4, 32};
	for (size_t ti = 0; ti < SN_COUNT(ts); ti++)
		for (size_t gi = 0; gi < SN_COUNT(groups); gi++) {
			ir_graph *g = ir_graph_new();
			ir_attrs a;
			ir_attrs_init(IR_OP_group_norm, &a);
			a.groups = groups[gi];
			ir_ref x = gpu_in(g, "x", ts[ti], GPU_SHAPE(2, 32, 17, 19));
			ir_ref w = gpu_in(g, "w", ts[ti], GPU_SHAPE(32)), b = gpu_in(g, "b", ts[ti], GPU_SHAPE(32));
			char label[80];
			snprintf(label, sizeof label, "group_norm %s groups %lld", ir_dtype_name(ts[ti]), (long long)a.groups);
			gpu_run(g, opn(g, IR_OP_group_norm, &a, 3, x, w, b), gpu_tol(ts[ti]) * 2, label);
		}
}

int main(void)
{
	if (!gpu_available())
		return gpu_done();
	gather_elements();
	scatters();
	cumsum();
	args();
	topk();
	group_norm();
	return gpu_done();
}
