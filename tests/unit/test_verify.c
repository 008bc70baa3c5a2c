/* test_verify.c: a valid graph passes; copies of it corrupted by hand in
 * one way each fail with a message that names the node at fault. */
#include "ir/ir.h"
#include "check.h"

#include <stdlib.h>

static ir_shape shp4(int64_t a, int64_t b, int64_t c, int64_t d) { return (ir_shape){4, {a, b, c, d}}; }

/* x: f32[N,4,8,8]
 * 0 %x input, 1 param w f32[4,4,3,3], 2 %c1 conv2d (line 7), 3 %r relu,
 * 4 %y add(%r, %x), 5 const f32[4], 6 %u unsqueeze axes [0] -> [1,4],
 * 7 %t transpose [1,0] -> [4,1]; outputs %y, %t */
static ir_graph *base(void)
{
	sn_err e = {0};
	ir_graph *g = ir_graph_new();
	int64_t n = IR_SYM(ir_sym(g, "N", 1));
	ir_shape xs = shp4(n, 4, 8, 8), ws = shp4(4, 4, 3, 3), cs = {1, {4}};
	float cv[4] = {0.5f, -1.25f, 3, 7};
	ir_ref x = ir_add_input(g, "x", IR_F32, &xs, &e);
	ir_ref w = ir_add_param(g, "layer1.0.conv1.weight", IR_F32, &ws, &e);
	ir_attrs a;
	ir_attrs_init(IR_OP_conv2d, &a);
	a.pad = (ir_ints){4, {1, 1, 1, 1}};
	ir_ref c = ir_add(g, IR_OP_conv2d, (ir_ref[]){x, w}, 2, &a, &e);
	ir_set_name(g, c, "c1");
	g->nodes[c].line = 7;
	ir_ref r = ir_add(g, IR_OP_relu, &c, 1, NULL, &e);
	ir_set_name(g, r, "r");
	ir_ref y = ir_add(g, IR_OP_add, (ir_ref[]){r, x}, 2, NULL, &e);
	ir_set_name(g, y, "y");
	ir_ref k = ir_add_const(g, IR_F32, &cs, cv, &e);
	ir_attrs_init(IR_OP_unsqueeze, &a);
	a.axes = (ir_ints){1, {0}};
	ir_ref u = ir_add(g, IR_OP_unsqueeze, &k, 1, &a, &e);
	ir_set_name(g, u, "u");
	ir_attrs_init(IR_OP_transpose, &a);
	a.perm = (ir_ints){2, {1, 0}};
	ir_ref t = ir_add(g, IR_OP_transpose, &u, 1, &a, &e);
	ir_set_name(g, t, "t");
	ir_add_output(g, y);
	ir_add_output(g, t);
	if (e.code)
		fprintf(stderr, "test setup: %s\n", e.msg);
	CHECK(e.code == SN_OK && g->nnodes == 8);
	return g;
}

static ir_graph *orig;

/* A fresh copy of the valid graph to corrupt. */
static ir_graph *copy(void)
{
	sn_err e = {0};
	ir_graph *g = ir_graph_clone(orig, &e);
	CHECK(g != NULL);
	return g;
}

#define EXPECT(g, want) expect_at((g), (want), __LINE__)
static void expect_at(ir_graph *g, const char *want, int line)
{
	sn_err e = {0};
	int rc = ir_verify(g, &e);
	check_count++;
	if (rc != SN_EINPUT || e.code != SN_EINPUT || strcmp(e.msg, want) != 0) {
		fprintf(stderr, "%s:%d: ir_verify gave %d \"%s\", want \"%s\"\n", __FILE__, line, rc, e.msg, want);
		check_failures++;
	}
	ir_graph_free(g);
}

int main(void)
{
	orig = base();
	sn_err e = {0};
	CHECK(ir_verify(orig, &e) == SN_OK);
	CHECK_STR(e.msg, "");

	ir_graph *g = copy(); /* an operand that comes later */
	g->nodes[2].in[0] = 4;
	EXPECT(g, "node 2 (%c1, conv2d, line 7): operand 0 refers to node 4, which does not precede it");
	g = copy(); /* a node that uses itself */
	g->nodes[3].in[0] = 3;
	EXPECT(g, "node 3 (%r, relu): operand 0 refers to node 3, which does not precede it");

	g = copy(); /* wrong stored shape */
	g->nodes[3].shape.d[1] = 5;
	EXPECT(g, "node 3 (%r, relu): stored type f32[N,5,8,8] differs from the inferred type f32[N,4,8,8]");
	g = copy(); /* wrong stored dtype */
	g->nodes[6].dtype = IR_F16;
	EXPECT(g, "node 6 (%u, unsqueeze): stored type f16[1,4] differs from the inferred type f32[1,4]");

	g = copy(); /* a shape rule that now fails: its message, with the node's prefix */
	g->nodes[2].attrs->groups = 3;
	EXPECT(g, "node 2 (%c1, conv2d, line 7): channels 4 of x f32[N,4,8,8] are not divisible by groups 3");

	g = copy(); /* an attribute relu does not take */
	g->nodes[3].attrs->stride = (ir_ints){2, {2, 2}};
	EXPECT(g, "node 3 (%r, relu): relu does not take attribute stride");
	g = copy();
	g->nodes[4].attrs->eps = 0.25;
	EXPECT(g, "node 4 (%y, add): add does not take attribute eps");

	g = copy(); /* a required attribute emptied */
	g->nodes[6].attrs->axes.n = 0;
	EXPECT(g, "node 6 (%u, unsqueeze): required attribute axes is missing or empty");

	g = copy(); /* operand count */
	g->nodes[4].nin = 1;
	EXPECT(g, "node 4 (%y, add): add takes 2 operands, got 1");
	g = copy();
	g->nodes[2].nin = 1;
	EXPECT(g, "node 2 (%c1, conv2d, line 7): conv2d takes 2 to 3 operands, got 1");

	g = copy(); /* duplicate value names */
	ir_set_name(g, 7, "c1");
	EXPECT(g, "node 7 (%c1, transpose): value name %c1 is already used by node 2");
	g = copy();
	ir_set_name(g, 1, "x");
	EXPECT(g, "node 1 (%x, param): value name %x is already used by node 0");

	g = copy(); /* param without a key, const without data */
	g->nodes[1].pname = NULL;
	EXPECT(g, "node 1 (param): param has no key");
	g = copy();
	g->nodes[5].data = NULL;
	EXPECT(g, "node 5 (const): const has no data");

	g = copy(); /* inputs: not listed, listed twice, a non-input listed */
	g->ninputs = 0;
	EXPECT(g, "node 0 (%x, input): input is not listed among the graph's inputs");
	g = copy();
	g->inputs = realloc(g->inputs, 2 * sizeof *g->inputs);
	g->inputs[1] = 0;
	g->ninputs = 2;
	EXPECT(g, "node 0 (%x, input): input is listed 2 times among the graph's inputs");
	g = copy();
	g->inputs[0] = 1;
	EXPECT(g, "graph input 0 refers to node 1, which is not an input");
	g = copy();
	g->inputs[0] = 99;
	EXPECT(g, "graph input 0 refers to node 99, but the graph has 8 nodes");

	g = copy(); /* outputs */
	g->noutputs = 0;
	EXPECT(g, "the graph has no outputs");
	g = copy();
	g->outputs[1] = 8;
	EXPECT(g, "output 1 refers to node 8, but the graph has 8 nodes");

	g = copy(); /* a symbol the graph does not have */
	g->nodes[0].shape.d[0] = IR_SYM(3);
	EXPECT(g, "node 0 (%x, input): dim 0 names symbol 3, which the graph does not have");
	g = copy(); /* an op out of the table */
	g->nodes[3].op = (ir_op)IR_NOPS;
	char want[128];
	snprintf(want, sizeof want, "node 3 (%%r, op %d): invalid op %d", (int)IR_NOPS, (int)IR_NOPS);
	EXPECT(g, want);

	ir_graph_free(orig);
	return check_done("verify");
}
