/* test_ref_index.c: the reference interpreter's scans, arg reductions
 * and indexing by tensors against values worked out by hand (the
 * arithmetic is in the comments): cumsum, argmax/argmin, topk,
 * gather_elements, scatter_elements and scatter_nd (every reduction); then
 * the shape rules' errors of these ops and of isnan, mod and group_norm. */
#include "test_ref_util.h"

static void test_cumsum(void)
{
	/* x = [[1, 2, 3], [4, 5, 6]] */
	const float x[6] = {1, 2, 3, 4, 5, 6};
	const int64_t xi[6] = {1, 2, 3, 4, 5, 6};
	static const struct {
		int64_t axis;
		bool excl, rev;
		double want[6];
	} cases[] = {
		{1, false, false, {1, 3, 6, 4, 9, 15}},
		{1, true, false, {0, 1, 3, 0, 4, 9}},
		{1, false, true, {6, 5, 3, 15, 11, 6}},
		{1, true, true, {5, 3, 0, 11, 6, 0}},
		{0, false, false, {1, 2, 3, 5, 7, 9}},
		{-2, true, true, {4, 5, 6, 0, 0, 0}},
	};
	for (size_t i = 0; i < SN_COUNT(cases); i++)
		for (int isint = 0; isint < 2; isint++) {
			tg t;
			tg_init(&t);
			ir_attrs a;
			ir_attrs_init(IR_OP_cumsum, &a);
			a.axis = cases[i].axis;
			a.exclusive = cases[i].excl;
			a.reverse = cases[i].rev;
			ir_ref r = top(&t, IR_OP_cumsum, &a, 1,
				       tin(&t, "x", isint ? IR_I64 : IR_F32, SHAPE(2, 3), isint ? (const void *)xi : x));
			char what[64];
			snprintf(what, sizeof what, "cumsum case %zu %s", i, isint ? "i64" : "f32");
			if (trun(&t, r)) {
				CHECK(t.out.dtype == (isint ? IR_I64 : IR_F32));
				EXPECT(&t, cases[i].want, 6, 0, what);
			}
			tg_free(&t);
		}
}

static void test_arg(void)
{
	/* x = [[3, 1, 3, 0], [NaN, 2, 5, 5]] */
	const float x[8] = {3, 1, 3, 0, NAN, 2, 5, 5};
	static const struct {
		ir_op op;
		int64_t axis;
		bool keep, last;
		int n;
		double want[4];
	} cases[] = {
		{IR_OP_argmax, 1, false, false, 2, {0, 0}}, /* NaN wins */
		{IR_OP_argmax, 1, false, true, 2, {2, 0}},  /* ties: the last 3 */
		{IR_OP_argmin, 1, true, false, 2, {3, 0}},  /* NaN wins for min too */
		{IR_OP_argmax, 0, false, false, 4, {1, 1, 1, 1}},
		{IR_OP_argmin, 0, false, false, 4, {1, 0, 0, 0}},
	};
	for (size_t i = 0; i < SN_COUNT(cases); i++) {
		tg t;
		tg_init(&t);
		ir_attrs a;
		ir_attrs_init(cases[i].op, &a);
		a.axis = cases[i].axis;
		a.keepdims = cases[i].keep;
		a.select_last = cases[i].last;
		ir_ref r = top(&t, cases[i].op, &a, 1, tin(&t, "x", IR_F32, SHAPE(2, 4), x));
		char what[64];
		snprintf(what, sizeof what, "%s case %zu", ir_ops[cases[i].op].name, i);
		if (trun(&t, r)) {
			CHECK(t.out.dtype == IR_I64 && t.out.shape.rank == (cases[i].keep ? 2 : 1));
			EXPECT(&t, cases[i].want, cases[i].n, 0, what);
		}
		tg_free(&t);
	}
}

static void test_topk(void)
{
	/* x = [[3, 1, NaN, 3, 0], [2, 5, 5, -1, 4]], k 3 along axis 1:
	 * largest: [NaN, 3, 3] at [2, 0, 3] (NaN the largest; ties by index),
	 *          [5, 5, 4] at [1, 2, 4]; smallest: [0, 1, 3] at [4, 1, 0],
	 *          [-1, 2, 4] at [3, 0, 4] */
	const float x[10] = {3, 1, NAN, 3, 0, 2, 5, 5, -1, 4};
	static const struct {
		bool small;
		int64_t index;
		double want[6];
	} cases[] = {
		{false, 0, {NAN, 3, 3, 5, 5, 4}},
		{false, 1, {2, 0, 3, 1, 2, 4}},
		{true, 0, {0, 1, 3, -1, 2, 4}},
		{true, 1, {4, 1, 0, 3, 0, 4}},
	};
	for (size_t i = 0; i < SN_COUNT(cases); i++) {
		tg t;
		tg_init(&t);
		ir_attrs a;
		ir_attrs_init(IR_OP_topk, &a);
		a.k = 3;
		a.smallest = cases[i].small;
		a.index = cases[i].index;
		ir_ref r = top(&t, IR_OP_topk, &a, 1, tin(&t, "x", IR_F32, SHAPE(2, 5), x));
		char what[48];
		snprintf(what, sizeof what, "topk case %zu", i);
		if (trun(&t, r)) {
			CHECK(t.out.dtype == (cases[i].index ? IR_I64 : IR_F32) && t.out.shape.d[1] == 3);
			EXPECT(&t, cases[i].want, 6, 0, what);
		}
		tg_free(&t);
	}
	/* along axis 0 of a [3, 2] integer tensor, k 2: columns (7, 7, 9) and (1, 8, 8) */
	const int32_t xi[6] = {7, 1, 7, 8, 9, 8};
	tg t;
	tg_init(&t);
	ir_attrs a;
	ir_attrs_init(IR_OP_topk, &a);
	a.k = 2;
	a.axis = 0;
	a.index = 1;
	if (trun(&t, top(&t, IR_OP_topk, &a, 1, tin(&t, "x", IR_I32, SHAPE(3, 2), xi))))
		EXPECT(&t, ((double[]){2, 1, 0, 2}), 4, 0, "topk int axis 0");
	tg_free(&t);
	a.k = 4;
	{
		ir_graph *g = ir_graph_new();
		sn_err e = {0};
		ir_shape s = SHAPE(3, 2);
		ir_ref in = ir_add_input(g, "x", IR_F32, &s, &e);
		CHECK(ir_add(g, IR_OP_topk, &in, 1, &a, &e) == IR_NONE && strstr(e.msg, "k 4 is out of range"));
		ir_graph_free(g);
	}
}

static void test_gather_elements(void)
{
	/* torch.gather's example: x = [[1, 2], [3, 4]], index [[0, 0], [1, 0]],
	 * dim 1 -> [[1, 1], [4, 3]]; dim 0 with index [[1, 0], [0, -1]] ->
	 * [[3, 2], [1, 4]] (-1 is the last row) */
	const float x[4] = {1, 2, 3, 4};
	const int64_t i1[4] = {0, 0, 1, 0}, i0[4] = {1, 0, 0, -1};
	for (int axis = 0; axis < 2; axis++) {
		tg t;
		tg_init(&t);
		ir_attrs a;
		ir_attrs_init(IR_OP_gather_elements, &a);
		a.axis = axis;
		ir_ref r = top(&t, IR_OP_gather_elements, &a, 2, tin(&t, "x", IR_F32, SHAPE(2, 2), x),
			       tin(&t, "i", IR_I64, SHAPE(2, 2), axis ? i1 : i0));
		if (trun(&t, r))
			EXPECT(&t, (axis ? (double[]){1, 1, 4, 3} : (double[]){3, 2, 1, 4}), 4, 0, "gather_elements");
		tg_free(&t);
	}
	/* a smaller index tensor: x [2, 3], index [1, 2] along axis 1 = [[2, 0]] -> [[x02, x00]] */
	tg t;
	tg_init(&t);
	const float y[6] = {10, 11, 12, 13, 14, 15};
	const int32_t iy[2] = {2, 0};
	ir_attrs a;
	ir_attrs_init(IR_OP_gather_elements, &a);
	a.axis = 1;
	ir_ref r = top(&t, IR_OP_gather_elements, &a, 2, tin(&t, "x", IR_F32, SHAPE(2, 3), y),
		       tin(&t, "i", IR_I32, SHAPE(1, 2), iy));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){12, 10}), 2, 0, "gather_elements smaller");
	tg_free(&t);
	/* out of range is a run-time error */
	tg_init(&t);
	const int64_t bad[4] = {0, 2, 0, 0};
	r = top(&t, IR_OP_gather_elements, &a, 2, tin(&t, "x", IR_F32, SHAPE(2, 2), x), tin(&t, "i", IR_I64, SHAPE(2, 2), bad));
	ir_add_output(t.g, r);
	CHECK(ref_run(t.g, t.vals, &t.out, &t.e) == SN_EINPUT && strstr(t.e.msg, "out of range"));
	tg_free(&t);
}

static void test_scatter(void)
{
	/* ONNX's ScatterElements example with axis 1: data [[1,2,3,4,5]],
	 * indices [[1, 3]], updates [[1.1, 2.1]] -> [[1, 1.1, 3, 2.1, 5]];
	 * with duplicates [[1, 1]] and updates [[1.1, 2.1]]: none -> 2.1 (the
	 * last), add -> 2 + 1.1 + 2.1 = 5.2, mul -> 2 * 1.1 * 2.1 = 4.62,
	 * max -> 2.1, min -> 1.1 */
	const float d[5] = {1, 2, 3, 4, 5}, u[2] = {1.1f, 2.1f};
	const int64_t i1[2] = {1, -2}, dup[2] = {1, 1};
	tg t;
	tg_init(&t);
	ir_attrs a;
	ir_attrs_init(IR_OP_scatter_elements, &a);
	a.axis = 1;
	ir_ref r = top(&t, IR_OP_scatter_elements, &a, 3, tin(&t, "d", IR_F32, SHAPE(1, 5), d),
		       tin(&t, "i", IR_I64, SHAPE(1, 2), i1), tin(&t, "u", IR_F32, SHAPE(1, 2), u));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){1, 1.1f, 3, 2.1f, 5}), 5, 0, "scatter_elements");
	tg_free(&t);
	const double second[5] = {2.1f, 2 + (double)1.1f + 2.1f, 2 * (double)1.1f * 2.1f, 2.1f, 1.1f};
	for (int red = 0; red < 5; red++) {
		tg_init(&t);
		a.reduction = (ir_scatter)red;
		r = top(&t, IR_OP_scatter_elements, &a, 3, tin(&t, "d", IR_F32, SHAPE(1, 5), d),
			tin(&t, "i", IR_I64, SHAPE(1, 2), dup), tin(&t, "u", IR_F32, SHAPE(1, 2), u));
		double want[5] = {1, second[red], 3, 4, 5};
		if (trun(&t, r))
			EXPECT(&t, want, 5, 1e-7, ir_scatter_name((ir_scatter)red));
		tg_free(&t);
	}
	/* ScatterND: data [4, 2] = 0..7, indices [[2], [0]] (rows), updates
	 * [[10, 11], [12, 13]] -> rows 2 and 0 replaced; with reduction add on
	 * indices [[1, 1], [1, 1]] (one element twice), updates [5, 6] -> 3 + 11 */
	const float nd[8] = {0, 1, 2, 3, 4, 5, 6, 7}, nu[4] = {10, 11, 12, 13}, nu2[2] = {5, 6};
	const int64_t ni[2] = {2, 0}, ni2[4] = {1, 1, 1, 1};
	tg_init(&t);
	ir_attrs_init(IR_OP_scatter_nd, &a);
	r = top(&t, IR_OP_scatter_nd, &a, 3, tin(&t, "d", IR_F32, SHAPE(4, 2), nd), tin(&t, "i", IR_I64, SHAPE(2, 1), ni),
		tin(&t, "u", IR_F32, SHAPE(2, 2), nu));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){12, 13, 2, 3, 10, 11, 6, 7}), 8, 0, "scatter_nd rows");
	tg_free(&t);
	tg_init(&t);
	a.reduction = IR_SCATTER_ADD;
	r = top(&t, IR_OP_scatter_nd, &a, 3, tin(&t, "d", IR_F32, SHAPE(4, 2), nd), tin(&t, "i", IR_I64, SHAPE(2, 2), ni2),
		tin(&t, "u", IR_F32, SHAPE(2), nu2));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){0, 1, 2, 14, 4, 5, 6, 7}), 8, 0, "scatter_nd add");
	tg_free(&t);
}

/* A graph with one node of op over inputs of the given types fails to
 * build with a message containing msg. */
static void shape_error(ir_op op, const ir_attrs *a, int nin, const ir_dtype *ts, const ir_shape *ss, const char *msg)
{
	ir_graph *g = ir_graph_new();
	sn_err e = {0};
	ir_ref in[4];
	for (int i = 0; i < nin; i++) {
		char name[16];
		snprintf(name, sizeof name, "x%d", i);
		in[i] = ir_add_input(g, name, ts[i], &ss[i], &e);
	}
	ir_ref r = ir_add(g, op, in, (uint32_t)nin, a, &e);
	CHECK(r == IR_NONE);
	if (!strstr(e.msg, msg)) {
		fprintf(stderr, "expected '%s' in: %s\n", msg, e.msg);
		CHECK(false);
	}
	ir_graph_free(g);
}

static void test_infer(void)
{
	ir_attrs a;
	shape_error(IR_OP_isnan, NULL, 1, (ir_dtype[]){IR_I32}, (ir_shape[]){SHAPE(2)}, "expects a float operand");
	ir_attrs_init(IR_OP_gather_elements, &a);
	a.axis = 1;
	shape_error(IR_OP_gather_elements, &a, 2, (ir_dtype[]){IR_F32, IR_I64}, (ir_shape[]){SHAPE(2, 3), SHAPE(2)},
		    "must have the rank of data");
	shape_error(IR_OP_gather_elements, &a, 2, (ir_dtype[]){IR_F32, IR_I64}, (ir_shape[]){SHAPE(2, 3), SHAPE(3, 3)},
		    "dim 0 of indices");
	shape_error(IR_OP_gather_elements, &a, 2, (ir_dtype[]){IR_F32, IR_F32}, (ir_shape[]){SHAPE(2, 3), SHAPE(2, 3)},
		    "must be i32 or i64");
	ir_attrs_init(IR_OP_scatter_nd, &a);
	shape_error(IR_OP_scatter_nd, &a, 3, (ir_dtype[]){IR_F32, IR_I64, IR_F32},
		    (ir_shape[]){SHAPE(4, 2), SHAPE(3, 1), SHAPE(3, 3)}, "updates f32[3,3] must have the shape f32[3,2]");
	shape_error(IR_OP_scatter_nd, &a, 3, (ir_dtype[]){IR_F32, IR_I64, IR_F32},
		    (ir_shape[]){SHAPE(4, 2), SHAPE(3, 3), SHAPE(3)}, "1 <= k <= 2");
	a.reduction = IR_SCATTER_ADD;
	shape_error(IR_OP_scatter_nd, &a, 3, (ir_dtype[]){IR_BOOL, IR_I64, IR_BOOL},
		    (ir_shape[]){SHAPE(4), SHAPE(1, 1), SHAPE(1)}, "reduction add needs numeric data");
	ir_attrs_init(IR_OP_scatter_elements, &a);
	shape_error(IR_OP_scatter_elements, &a, 3, (ir_dtype[]){IR_F32, IR_I64, IR_F32},
		    (ir_shape[]){SHAPE(4, 2), SHAPE(2, 2), SHAPE(2, 1)}, "must have one shape");
	ir_attrs_init(IR_OP_group_norm, &a);
	a.groups = 3;
	shape_error(IR_OP_group_norm, &a, 3, (ir_dtype[]){IR_F32, IR_F32, IR_F32},
		    (ir_shape[]){SHAPE(1, 4, 2), SHAPE(4), SHAPE(4)}, "groups 3 must be >= 1 and divide the 4 channels");
	a.groups = 2;
	shape_error(IR_OP_group_norm, &a, 3, (ir_dtype[]){IR_F32, IR_F32, IR_F32},
		    (ir_shape[]){SHAPE(1, 4, 2), SHAPE(2), SHAPE(4)}, "weight f32[2] must be [4]");
	ir_attrs_init(IR_OP_argmax, &a);
	a.axis = 1;
	shape_error(IR_OP_argmax, &a, 1, (ir_dtype[]){IR_F32}, (ir_shape[]){SHAPE(3, 0)}, "is empty");
	ir_attrs_init(IR_OP_cumsum, &a);
	a.axis = 2;
	shape_error(IR_OP_cumsum, &a, 1, (ir_dtype[]){IR_F32}, (ir_shape[]){SHAPE(3, 2)}, "axis 2 is out of range");
	shape_error(IR_OP_mod, NULL, 2, (ir_dtype[]){IR_F32, IR_I32}, (ir_shape[]){SHAPE(3), SHAPE(3)}, "different dtypes");
}

int main(void)
{
	test_cumsum();
	test_arg();
	test_topk();
	test_gather_elements();
	test_scatter();
	test_infer();
	return check_done("ref_index");
}
