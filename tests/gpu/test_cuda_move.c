/* test_cuda_move.c: data movement on CUDA against the reference:
 * transpose (several permutations, a large last-two-dims swap), expand,
 * concat (1 to 7 operands, each axis; 8 and 40, one kernel per 7
 * operands, with an empty operand and operands computed by kernels; the
 * caches of 8 and 16 layers unsqueezed and stacked), split (every piece), slice
 * (negative and strided steps, clamped bounds), gather (both index
 * dtypes, negative indices), pad (constant, reflect, edge),
 * iota, and the views (reshape, flatten, squeeze, unsqueeze) including a
 * view that is itself a graph output. Values move bit for bit, so the
 * comparisons are exact except where a float kernel takes part. */
#include "gpu_check.h"

#include <stdio.h>
#include <string.h>

#define EXACT 1e-12

static void run(ir_graph *g, ir_ref r, const char *label)
{
	gpu_run(g, r, EXACT, label);
}

static const ir_dtype dts[] = {IR_F32, IR_F16, IR_BF16, IR_I64, IR_I32, IR_U8, IR_BOOL};

static void transposes(void)
{
	const ir_ints perms[] = {GPU_INTS(3, 2, 1, 0), GPU_INTS(0, 2, 1, 3), GPU_INTS(0, 1, 3, 2), GPU_INTS(2, 0, 3, 1)};
	for (size_t t = 0; t < SN_COUNT(dts); t++)
		for (size_t p = 0; p < SN_COUNT(perms); p++) {
			ir_graph *g = ir_graph_new();
			ir_attrs at;
			ir_attrs_init(IR_OP_transpose, &at);
			at.perm = perms[p];
			char label[96];
			snprintf(label, sizeof label, "transpose %s [2,3,5,7] perm %lld%lld%lld%lld", ir_dtype_name(dts[t]),
				 (long long)at.perm.v[0], (long long)at.perm.v[1], (long long)at.perm.v[2],
				 (long long)at.perm.v[3]);
			run(g, gpu_op1(g, IR_OP_transpose, gpu_in(g, "x", dts[t], GPU_SHAPE(2, 3, 5, 7)), &at), label);
		}
	/* a large batched last-two-dims swap (odd sizes) and a 2-D one */
	ir_graph *g = ir_graph_new();
	ir_attrs at;
	ir_attrs_init(IR_OP_transpose, &at);
	at.perm = GPU_INTS(0, 2, 1);
	run(g, gpu_op1(g, IR_OP_transpose, gpu_in(g, "x", IR_F32, GPU_SHAPE(12, 197, 130)), &at), "transpose f32 [12,197,130] 021");
	g = ir_graph_new();
	at.perm = GPU_INTS(1, 0);
	run(g, gpu_op1(g, IR_OP_transpose, gpu_in(g, "x", IR_F16, GPU_SHAPE(1000, 33)), &at), "transpose f16 [1000,33] 10");
}

static void expands(void)
{
	const struct {
		ir_shape from;
		ir_ints to;
	} cases[] = {
		{{2, {3, 1}}, GPU_INTS(2, 3, 4)},
		{{1, {1}}, GPU_INTS(5, 7)},
		{{1, {4}}, GPU_INTS(3, 2, 4)},
		{{3, {1, 5, 1}}, GPU_INTS(6, 5, 3)},
	};
	for (size_t t = 0; t < SN_COUNT(dts); t++)
		for (size_t c = 0; c < SN_COUNT(cases); c++) {
			ir_graph *g = ir_graph_new();
			ir_attrs at;
			ir_attrs_init(IR_OP_expand, &at);
			at.shape = cases[c].to;
			char label[64];
			snprintf(label, sizeof label, "expand %s case %zu", ir_dtype_name(dts[t]), c);
			run(g, gpu_op1(g, IR_OP_expand, gpu_in(g, "x", dts[t], cases[c].from), &at), label);
		}
}

static void concats(void)
{
	for (size_t t = 0; t < SN_COUNT(dts); t++)
		for (int axis = -1; axis < 3; axis++)
			for (uint32_t n = 1; n <= 7; n += 2) {
				ir_graph *g = ir_graph_new();
				ir_ref v[7];
				for (uint32_t k = 0; k < n; k++) {
					/* operand k is 2+k long along the axis */
					ir_shape s = GPU_SHAPE(3, 4, 5);
					s.d[axis < 0 ? 2 : axis] = 2 + k;
					char nm[8];
					snprintf(nm, sizeof nm, "x%u", k);
					v[k] = gpu_in(g, nm, dts[t], s);
				}
				ir_attrs at;
				ir_attrs_init(IR_OP_concat, &at);
				at.axis = axis;
				char label[64];
				snprintf(label, sizeof label, "concat %s axis %d of %u", ir_dtype_name(dts[t]), axis, n);
				run(g, ir_add(g, IR_OP_concat, v, n, &at, &gpu_err), label);
			}
}

/* n operands of dtype t, operand k [3, 4, 5] but 1 + k % 3 long along
 * axis (operand 1 empty when empty), every third one computed by a kernel
 * (neg; bool operands are all inputs) so that the operands live in the arena across
 * the concat's kernels; the concat is the output. */
static void concat_many(ir_dtype t, int axis, uint32_t n, bool empty)
{
	ir_graph *g = ir_graph_new();
	ir_ref v[40];
	for (uint32_t k = 0; k < n; k++) {
		ir_shape s = GPU_SHAPE(3, 4, 5);
		s.d[axis < 0 ? axis + 3 : axis] = empty && k == 1 ? 0 : 1 + k % 3;
		char nm[16];
		snprintf(nm, sizeof nm, "x%u", k);
		v[k] = gpu_in(g, nm, t, s);
		if (k % 3 == 2 && t != IR_BOOL)
			v[k] = gpu_op1(g, IR_OP_neg, v[k], NULL);
	}
	ir_attrs at;
	ir_attrs_init(IR_OP_concat, &at);
	at.axis = axis;
	char label[80];
	snprintf(label, sizeof label, "concat %s axis %d of %u%s", ir_dtype_name(t), axis, n,
		 empty ? ", operand 1 empty" : "");
	run(g, ir_add(g, IR_OP_concat, v, n, &at, &gpu_err), label);
}

/* A decode step's caches stacked: L layers' keys [1, 2, 6, 16] (each
 * exp of its input, so in the arena), unsqueezed at axis 0 and
 * concatenated into [L, 1, 2, 6, 16]. */
static void stacked(ir_dtype t, uint32_t L)
{
	ir_graph *g = ir_graph_new();
	ir_ref v[16];
	for (uint32_t l = 0; l < L; l++) {
		char nm[16];
		snprintf(nm, sizeof nm, "k%u", l);
		ir_attrs at;
		ir_attrs_init(IR_OP_unsqueeze, &at);
		at.axes = GPU_INTS(0);
		v[l] = gpu_op1(g, IR_OP_unsqueeze, gpu_op1(g, IR_OP_exp, gpu_in(g, nm, t, GPU_SHAPE(1, 2, 6, 16)), NULL),
			       &at);
	}
	ir_attrs at;
	ir_attrs_init(IR_OP_concat, &at);
	at.axis = 0;
	char label[64];
	snprintf(label, sizeof label, "stacked caches %s of %u layers", ir_dtype_name(t), L);
	gpu_run(g, ir_add(g, IR_OP_concat, v, L, &at, &gpu_err), gpu_tol(t), label);
}

static void concats_many(void)
{
	const ir_dtype ts[] = {IR_F32, IR_F16, IR_BF16, IR_I64, IR_U8, IR_BOOL};
	for (size_t t = 0; t < SN_COUNT(ts); t++)
		for (int axis = -1; axis < 3; axis++) {
			concat_many(ts[t], axis, 8, false);
			concat_many(ts[t], axis, 40, axis == 1);
		}
	stacked(IR_F32, 8);
	stacked(IR_F16, 16);
	stacked(IR_BF16, 16);
}

static void splits(void)
{
	for (size_t t = 0; t < SN_COUNT(dts); t++) {
		/* every piece of [2,6,4] along axis 1 by sizes [1,2,3], as three
		 * outputs of one graph */
		ir_graph *g = ir_graph_new();
		ir_ref x = gpu_in(g, "x", dts[t], GPU_SHAPE(2, 6, 4)), r = IR_NONE;
		for (int k = 0; k < 3; k++) {
			ir_attrs at;
			ir_attrs_init(IR_OP_split, &at);
			at.axis = 1;
			at.sizes = GPU_INTS(1, 2, 3);
			at.index = k;
			r = gpu_op1(g, IR_OP_split, x, &at);
			if (r != IR_NONE && k < 2)
				ir_add_output(g, r);
		}
		char label[64];
		snprintf(label, sizeof label, "split %s 3 pieces", ir_dtype_name(dts[t]));
		run(g, r, label);
		g = ir_graph_new();
		ir_attrs at;
		ir_attrs_init(IR_OP_split, &at);
		at.axis = -1;
		at.sizes = GPU_INTS(5, 8);
		at.index = 1;
		snprintf(label, sizeof label, "split %s last axis", ir_dtype_name(dts[t]));
		run(g, gpu_op1(g, IR_OP_split, gpu_in(g, "x", dts[t], GPU_SHAPE(3, 13)), &at), label);
	}
}

static void slices(void)
{
	const struct {
		ir_ints axes, starts, ends, steps;
	} cases[] = {
		{GPU_INTS(0, 1), GPU_INTS(-1, 1), GPU_INTS(-100, 5), GPU_INTS(-2, 2)},    /* rows 4,2,0; cols 1,3 */
		{GPU_INTS(1), GPU_INTS(0), GPU_INTS(1000), GPU_INTS(3)},                  /* clamped end */
		{GPU_INTS(-1), GPU_INTS(5), GPU_INTS(0), GPU_INTS(-1)},                   /* reversed 5..1 */
		{GPU_INTS(0, 1, 2), GPU_INTS(1, -3, 0), GPU_INTS(4, 6, 7), GPU_INTS(1, 1, 2)},
		{GPU_INTS(2), GPU_INTS(100), GPU_INTS(-100), GPU_INTS(-3)},               /* clamped start, long negative */
	};
	for (size_t t = 0; t < SN_COUNT(dts); t++)
		for (size_t c = 0; c < SN_COUNT(cases); c++) {
			ir_graph *g = ir_graph_new();
			ir_attrs at;
			ir_attrs_init(IR_OP_slice, &at);
			at.axes = cases[c].axes;
			at.starts = cases[c].starts;
			at.ends = cases[c].ends;
			at.steps = cases[c].steps;
			char label[64];
			snprintf(label, sizeof label, "slice %s case %zu", ir_dtype_name(dts[t]), c);
			run(g, gpu_op1(g, IR_OP_slice, gpu_in(g, "x", dts[t], GPU_SHAPE(5, 6, 7)), &at), label);
		}
}

static void gathers(void)
{
	const ir_dtype ts[] = {IR_F32, IR_F16, IR_BF16, IR_I64, IR_BOOL};
	for (size_t t = 0; t < SN_COUNT(ts); t++) {
		/* an embedding lookup: [50,16] table, [4,7] i64 token ids */
		ir_graph *g = ir_graph_new();
		ir_ref v[2] = {gpu_in(g, "table", ts[t], GPU_SHAPE(50, 16)), gpu_in(g, "ids", IR_I64, GPU_SHAPE(4, 7))};
		char label[64];
		snprintf(label, sizeof label, "gather %s embedding", ir_dtype_name(ts[t]));
		run(g, ir_add(g, IR_OP_gather, v, 2, NULL, &gpu_err), label);
		/* axis 1 with i32 indices */
		g = ir_graph_new();
		ir_ref w[2] = {gpu_in(g, "x", ts[t], GPU_SHAPE(3, 9, 5)), gpu_in(g, "ix", IR_I32, GPU_SHAPE(11))};
		ir_attrs at;
		ir_attrs_init(IR_OP_gather, &at);
		at.axis = 1;
		snprintf(label, sizeof label, "gather %s axis 1 i32", ir_dtype_name(ts[t]));
		run(g, ir_add(g, IR_OP_gather, w, 2, &at, &gpu_err), label);
		/* negative indices: -[0,4) counts from the end of the axis */
		g = ir_graph_new();
		ir_ref ix = gpu_op1(g, IR_OP_neg, gpu_in(g, "ix", IR_I64, GPU_SHAPE(2, 6)), NULL);
		ir_ref u[2] = {gpu_in(g, "x", ts[t], GPU_SHAPE(7, 3)), ix};
		at.axis = -2;
		snprintf(label, sizeof label, "gather %s negative indices", ir_dtype_name(ts[t]));
		run(g, ir_add(g, IR_OP_gather, u, 2, &at, &gpu_err), label);
	}
}

static void pads(void)
{
	const ir_dtype ts[] = {IR_F32, IR_F16, IR_BF16, IR_I64, IR_I8};
	const ir_ints pv[] = {GPU_INTS(0, 1, 2, 1, 2, 3), GPU_INTS(1, 0, 0, 0, 2, 1), GPU_INTS(0, 2, 4, 0, 2, 4)};
	for (size_t t = 0; t < SN_COUNT(ts); t++)
		for (int m = 0; m < 3; m++)
			for (size_t p = 0; p < SN_COUNT(pv); p++) {
				ir_graph *g = ir_graph_new();
				ir_attrs at;
				ir_attrs_init(IR_OP_pad, &at);
				at.pad = pv[p];
				at.mode = (ir_padmode)m;
				at.value = -2.5;
				char label[64];
				snprintf(label, sizeof label, "pad %s %s case %zu", ir_dtype_name(ts[t]),
					 ir_padmode_name(at.mode), p);
				run(g, gpu_op1(g, IR_OP_pad, gpu_in(g, "x", ts[t], GPU_SHAPE(2, 3, 5)), &at), label);
			}
}

static void iotas(void)
{
	const ir_dtype ts[] = {IR_F32, IR_F16, IR_I64, IR_I32};
	for (size_t t = 0; t < SN_COUNT(ts); t++)
		for (int axis = 0; axis < 3; axis++) {
			ir_graph *g = ir_graph_new();
			ir_shape s = GPU_SHAPE(3, 5, 4);
			ir_ref io = ir_add_iota(g, ts[t], &s, axis, &gpu_err);
			/* added to an input, so the graph has one */
			ir_ref v[2] = {gpu_in(g, "x", ts[t], s), io};
			char label[64];
			snprintf(label, sizeof label, "iota %s axis %d", ir_dtype_name(ts[t]), axis);
			gpu_run(g, ir_add(g, IR_OP_add, v, 2, NULL, &gpu_err), gpu_tol(ts[t]), label);
		}
	ir_graph *g = ir_graph_new();
	ir_shape s = GPU_SHAPE(6, 7);
	gpu_in(g, "x", IR_F32, s);
	run(g, ir_add_iota(g, IR_I64, &s, 1, &gpu_err), "iota i64 as an output");
}

static void views(void)
{
	/* views between kernels: exp -> reshape -> squeeze -> neg */
	ir_graph *g = ir_graph_new();
	ir_ref x = gpu_op1(g, IR_OP_exp, gpu_in(g, "x", IR_F32, GPU_SHAPE(2, 3, 1, 4)), NULL);
	ir_attrs at;
	ir_attrs_init(IR_OP_reshape, &at);
	at.shape = GPU_INTS(6, 1, 4);
	ir_ref r = gpu_op1(g, IR_OP_reshape, x, &at);
	ir_attrs_init(IR_OP_squeeze, &at);
	at.axes = GPU_INTS(1);
	ir_ref s = gpu_op1(g, IR_OP_squeeze, r, &at);
	gpu_run(g, gpu_op1(g, IR_OP_neg, s, NULL), gpu_tol(IR_F32), "exp reshape squeeze neg");
	/* a view as the graph's output, and a view of an input */
	g = ir_graph_new();
	x = gpu_in(g, "x", IR_F16, GPU_SHAPE(4, 5, 6));
	ir_attrs_init(IR_OP_flatten, &at);
	ir_ref f = gpu_op1(g, IR_OP_flatten, gpu_op1(g, IR_OP_abs, x, NULL), &at);
	if (f != IR_NONE)
		ir_add_output(g, f);
	ir_attrs_init(IR_OP_unsqueeze, &at);
	at.axes = GPU_INTS(0, 3);
	run(g, gpu_op1(g, IR_OP_unsqueeze, x, &at), "flatten output, unsqueeze of input");
	/* a view read after a later kernel: the planner must keep its root */
	g = ir_graph_new();
	x = gpu_in(g, "x", IR_BF16, GPU_SHAPE(8, 8));
	ir_ref a = gpu_op1(g, IR_OP_exp, x, NULL);
	ir_attrs_init(IR_OP_reshape, &at);
	at.shape = GPU_INTS(64);
	ir_ref ra = gpu_op1(g, IR_OP_reshape, a, &at);
	ir_ref b = gpu_op1(g, IR_OP_tanh, gpu_op1(g, IR_OP_neg, gpu_op1(g, IR_OP_exp, x, NULL), NULL), NULL);
	ir_ref rb = gpu_op1(g, IR_OP_reshape, b, &at);
	ir_ref v[2] = {ra, rb};
	gpu_run(g, ir_add(g, IR_OP_add, v, 2, NULL, &gpu_err), gpu_tol(IR_BF16), "views live across kernels");
}

int main(void)
{
	if (!gpu_available())
		return gpu_done();
	transposes();
	expands();
	concats();
	concats_many();
	splits();
	slices();
	gathers();
	pads();
	iotas();
	views();
	return gpu_done();
}
