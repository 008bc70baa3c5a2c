/* test_fold_bn.c: conv-BN folding. Folded weights and biases worked out by
 * hand (NCHW conv with a bias, NHWC conv with an OHWI weight, linear), the
 * derived keys, the cases that must not fold, a missing weight, single
 * rounding into bf16, and the reference interpreter before and after on the
 * same inputs. */
#include "check.h"

#include "frontend/sir.h"
#include "ir/wstore.h"
#include "passes/passes.h"
#include "ir/ref/ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ir_graph *parse(const char *text)
{
	ir_graph *g = NULL;
	sn_err e = {0};
	if (sir_parse(text, strlen(text), "test.sir", NULL, 0, &g, &e) != SN_OK)
		fprintf(stderr, "parse: %s\n", e.msg);
	return g;
}

/* Puts key = vals (n of them) with shape s, stored as dtype t. */
static void put(ir_wstore *ws, const char *key, ir_dtype t, ir_shape s, const double *vals)
{
	sn_err e = {0};
	int64_t n = ir_numel(&s);
	ir_tensor x = {.dtype = t, .shape = s, .nbytes = (size_t)n * ir_dtype_size(t)};
	x.data = malloc(x.nbytes);
	for (int64_t i = 0; i < n; i++)
		ir_store(t, x.data, (size_t)i, vals[i]);
	CHECK(ir_ws_put(ws, key, x, &e) == SN_OK);
}

static const ir_node *param(const ir_graph *g, const char *key)
{
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].op == IR_OP_param && strcmp(g->nodes[i].pname, key) == 0)
			return &g->nodes[i];
	return NULL;
}

static int count_op(const ir_graph *g, ir_op op)
{
	int c = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		c += g->nodes[i].op == op;
	return c;
}

/* Checks that ws holds key with exactly the values want (n of them). */
static void check_values(const ir_wstore *ws, const char *key, const double *want, int n)
{
	const ir_tensor *t = ir_ws_get(ws, key);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(ir_numel(&t->shape) == n);
	for (int i = 0; i < n && i < ir_numel(&t->shape); i++)
		CHECK_NEAR(ir_load(t->dtype, t->data, (size_t)i), want[i], 1e-6);
}

/* Runs g on the reference with input x (f32 values) and params from ws;
 * returns output 0's values as doubles (malloc'ed), *n their count. */
static double *run_ref(const ir_graph *g, const ir_wstore *ws, const double *x, int64_t *n)
{
	sn_err e = {0};
	ir_tensor *vals = calloc(g->nnodes, sizeof *vals);
	const ir_node *in = &g->nodes[g->inputs[0]];
	size_t xn = (size_t)ir_numel(&in->shape);
	float *xd = malloc(xn * sizeof *xd);
	for (size_t i = 0; i < xn; i++)
		xd[i] = (float)x[i];
	vals[g->inputs[0]] = (ir_tensor){in->dtype, in->shape, xd, xn * 4};
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].op == IR_OP_param) {
			const ir_tensor *t = ir_ws_get(ws, g->nodes[i].pname);
			CHECK(t != NULL);
			if (t)
				vals[i] = *t;
		}
	ir_tensor out[4] = {{0}};
	double *r = NULL;
	if (ref_run(g, vals, out, &e) != SN_OK) {
		fprintf(stderr, "ref_run: %s\n", e.msg);
		CHECK(0);
	} else {
		*n = ir_numel(&out[0].shape);
		r = malloc((size_t)*n * sizeof *r);
		for (int64_t i = 0; i < *n; i++)
			r[i] = ir_load(out[0].dtype, out[0].data, (size_t)i);
		for (uint32_t i = 0; i < g->noutputs; i++)
			free(out[i].data);
	}
	free(xd);
	free(vals);
	return r;
}

/* Folds text's graph with ws and checks that the reference gives the same
 * output before and after for input x; returns the folded graph. */
static ir_graph *fold_same(const char *text, ir_wstore *ws, const double *x)
{
	ir_graph *g = parse(text);
	CHECK(g != NULL);
	if (!g)
		return NULL;
	int64_t n0 = 0, n1 = 0;
	double *before = run_ref(g, ws, x, &n0);
	sn_err e = {0};
	pass_ctx ctx = {.ws = ws};
	CHECK(pass_fold_bn(&g, &ctx, &e) == SN_OK);
	CHECK(ir_verify(g, &e) == SN_OK);
	if (e.code)
		fprintf(stderr, "fold: %s\n", e.msg);
	double *after = run_ref(g, ws, x, &n1);
	CHECK(n0 == n1 && before && after);
	for (int64_t i = 0; before && after && i < n0 && i < n1; i++)
		CHECK_NEAR(after[i], before[i], 1e-5 * (1 + fabs(before[i])));
	free(before);
	free(after);
	return g;
}

/* The norm's vectors used below: eps = 1, so scale = gamma / sqrt(var + 1)
 * = [3 / 1, 1 / 2] = [3, 0.5]. */
static void put_bn(ir_wstore *ws)
{
	ir_shape s2 = {1, {2}};
	put(ws, "g", IR_F32, s2, (double[]){3, 1});
	put(ws, "beta", IR_F32, s2, (double[]){0.5, 4});
	put(ws, "mean", IR_F32, s2, (double[]){1, -2});
	put(ws, "var", IR_F32, s2, (double[]){0, 3});
}

static void test_conv_bias(void)
{
	const char *src = "sinter 1\n"
		"func @main(%x: f32[1,1,2,3]) -> (f32[1,2,2,2]) {\n"
		"  %w = param f32[2,1,1,2] \"w\"\n"
		"  %cb = param f32[2] \"cb\"\n"
		"  %c = conv2d(%x, %w, %cb)\n"
		"  %g = param f32[2] \"g\"\n"
		"  %b = param f32[2] \"beta\"\n"
		"  %m = param f32[2] \"mean\"\n"
		"  %v = param f32[2] \"var\"\n"
		"  %y = batch_norm(%c, %g, %b, %m, %v) eps=1\n"
		"  return %y\n"
		"}\n";
	ir_wstore *ws = ir_ws_new();
	put_bn(ws);
	put(ws, "w", IR_F32, (ir_shape){4, {2, 1, 1, 2}}, (double[]){1, 2, -4, 6});
	put(ws, "cb", IR_F32, (ir_shape){1, {2}}, (double[]){2, 1});
	ir_graph *g = fold_same(src, ws, (double[]){1, -2, 3, 0.5, 4, -1});
	if (g) {
		CHECK(count_op(g, IR_OP_batch_norm) == 0);
		CHECK(count_op(g, IR_OP_conv2d) == 1);
		CHECK(count_op(g, IR_OP_param) == 2); /* the old ones are gone */
		const ir_node *c = &g->nodes[g->outputs[0]];
		CHECK(c->op == IR_OP_conv2d && c->nin == 3);
		CHECK_STR(c->name, "y");
		CHECK_STR(g->nodes[c->in[1]].pname, "w+bn(g)");
		CHECK_STR(g->nodes[c->in[2]].pname, "beta+fold(w)");
		CHECK_STR(g->nodes[c->in[1]].name, "w.fold");
		CHECK_STR(g->nodes[c->in[2]].name, "b.fold");
		ir_graph_free(g);
	}
	/* w' = w * [3, 0.5] per output channel; b' = (cb - mean) * scale + beta */
	check_values(ws, "w+bn(g)", (double[]){3, 6, -2, 3}, 4);
	check_values(ws, "beta+fold(w)", (double[]){(2 - 1) * 3 + 0.5, (1 + 2) * 0.5 + 4}, 2);
	ir_ws_free(ws);
}

static void test_conv_nhwc(void)
{
	const char *src = "sinter 1\n"
		"func @main(%x: f32[1,2,2,3]) -> (f32[1,2,2,2]) {\n"
		"  %w = param f32[2,1,1,3] \"w\"\n"
		"  %c = conv2d(%x, %w) layout=NHWC\n"
		"  %g = param f32[2] \"g\"\n"
		"  %b = param f32[2] \"beta\"\n"
		"  %m = param f32[2] \"mean\"\n"
		"  %v = param f32[2] \"var\"\n"
		"  %y = batch_norm(%c, %g, %b, %m, %v) eps=1 layout=NHWC\n"
		"  %r = relu(%y)\n"
		"  return %r\n"
		"}\n";
	ir_wstore *ws = ir_ws_new();
	put_bn(ws);
	put(ws, "w", IR_F32, (ir_shape){4, {2, 1, 1, 3}}, (double[]){1, 2, 3, 4, 5, 6});
	ir_graph *g = fold_same(src, ws, (double[]){1, -2, 3, 0.5, 4, -1, 2, 2, -3, 1, 0.25, 5});
	if (g) {
		CHECK(count_op(g, IR_OP_batch_norm) == 0);
		const ir_node *w = param(g, "w+bn(g)");
		CHECK(w && w->shape.rank == 4 && w->shape.d[3] == 3);
		CHECK(param(g, "beta+fold(w)") != NULL);
		ir_graph_free(g);
	}
	/* OHWI: output channel is still dim 0 */
	check_values(ws, "w+bn(g)", (double[]){3, 6, 9, 2, 2.5, 3}, 6);
	check_values(ws, "beta+fold(w)", (double[]){(0 - 1) * 3 + 0.5, (0 + 2) * 0.5 + 4}, 2);
	ir_ws_free(ws);
}

static void test_linear(void)
{
	const char *src = "sinter 1\n"
		"func @main(%x: f32[2,3]) -> (f32[2,2]) {\n"
		"  %w = param f32[2,3] \"w\"\n"
		"  %h = linear(%x, %w)\n"
		"  %g = param f32[2] \"g\"\n"
		"  %b = param f32[2] \"beta\"\n"
		"  %m = param f32[2] \"mean\"\n"
		"  %v = param f32[2] \"var\"\n"
		"  %y = batch_norm(%h, %g, %b, %m, %v) eps=1\n"
		"  return %y\n"
		"}\n";
	ir_wstore *ws = ir_ws_new();
	ir_shape s2 = {1, {2}};
	/* scale = [2 / sqrt(4), -1 / sqrt(1)] = [1, -1] */
	put(ws, "g", IR_F32, s2, (double[]){2, -1});
	put(ws, "beta", IR_F32, s2, (double[]){1, 0.25});
	put(ws, "mean", IR_F32, s2, (double[]){0.5, 1});
	put(ws, "var", IR_F32, s2, (double[]){3, 0});
	put(ws, "w", IR_F32, (ir_shape){2, {2, 3}}, (double[]){1, 2, 3, 4, 5, 6});
	ir_graph *g = fold_same(src, ws, (double[]){1, -2, 3, 0.5, 4, -1});
	if (g) {
		CHECK(count_op(g, IR_OP_batch_norm) == 0);
		const ir_node *l = &g->nodes[g->outputs[0]];
		CHECK(l->op == IR_OP_linear && l->nin == 3);
		ir_graph_free(g);
	}
	check_values(ws, "w+bn(g)", (double[]){1, 2, 3, -4, -5, -6}, 6);
	check_values(ws, "beta+fold(w)", (double[]){(0 - 0.5) * 1 + 1, (0 - 1) * -1 + 0.25}, 2);
	ir_ws_free(ws);
}

/* Graphs that must come out unchanged. */
static void test_no_fold(void)
{
	static const char *const srcs[] = {
		/* the conv's output has a second reader */
		"sinter 1\nfunc @main(%x: f32[1,2,3,3]) -> (f32[1,2,3,3]) {\n"
		"  %w = param f32[2,2,1,1] \"w\"\n  %c = conv2d(%x, %w)\n"
		"  %g = param f32[2] \"g\"\n  %y = batch_norm(%c, %g, %g, %g, %g)\n"
		"  %s = add(%y, %c)\n  return %s\n}\n",
		/* the conv's output is a graph output */
		"sinter 1\nfunc @main(%x: f32[1,2,3,3]) -> (f32[1,2,3,3], f32[1,2,3,3]) {\n"
		"  %w = param f32[2,2,1,1] \"w\"\n  %c = conv2d(%x, %w)\n"
		"  %g = param f32[2] \"g\"\n  %y = batch_norm(%c, %g, %g, %g, %g)\n"
		"  return %y, %c\n}\n",
		/* a statistic is computed */
		"sinter 1\nfunc @main(%x: f32[1,2,3,3]) -> (f32[1,2,3,3]) {\n"
		"  %w = param f32[2,2,1,1] \"w\"\n  %c = conv2d(%x, %w)\n"
		"  %g = param f32[2] \"g\"\n  %v = exp(%g)\n  %y = batch_norm(%c, %g, %g, %g, %v)\n"
		"  return %y\n}\n",
		/* the conv's weight is computed */
		"sinter 1\nfunc @main(%x: f32[1,2,3,3]) -> (f32[1,2,3,3]) {\n"
		"  %w = param f32[2,2,1,1] \"w\"\n  %w2 = neg(%w)\n  %c = conv2d(%x, %w2)\n"
		"  %g = param f32[2] \"g\"\n  %y = batch_norm(%c, %g, %g, %g, %g)\n"
		"  return %y\n}\n",
		/* NCHW conv, NHWC norm: the norm's channels are W */
		"sinter 1\nfunc @main(%x: f32[1,2,3,2]) -> (f32[1,2,3,2]) {\n"
		"  %w = param f32[2,2,1,1] \"w\"\n  %c = conv2d(%x, %w)\n"
		"  %g = param f32[2] \"g\"\n  %y = batch_norm(%c, %g, %g, %g, %g) layout=NHWC\n"
		"  return %y\n}\n",
		/* rank-3 linear, norm over dim 1 */
		"sinter 1\nfunc @main(%x: f32[1,2,3]) -> (f32[1,2,2]) {\n"
		"  %w = param f32[2,3] \"w\"\n  %c = linear(%x, %w)\n"
		"  %g = param f32[2] \"g\"\n  %y = batch_norm(%c, %g, %g, %g, %g)\n"
		"  return %y\n}\n",
	};
	for (size_t i = 0; i < SN_COUNT(srcs); i++) {
		ir_graph *g = parse(srcs[i]);
		CHECK(g != NULL);
		if (!g)
			continue;
		uint32_t n = g->nnodes;
		sn_err e = {0};
		pass_ctx ctx = {0};
		CHECK(pass_fold_bn(&g, &ctx, &e) == SN_OK);
		CHECK(g->nnodes == n);
		CHECK(count_op(g, IR_OP_batch_norm) == 1);
		ir_graph_free(g);
	}
}

static const char *const simple = "sinter 1\n"
	"func @main(%x: bf16[1,1,2,2]) -> (bf16[1,1,2,2]) {\n"
	"  %w = param bf16[1,1,1,1] \"w\"\n"
	"  %c = conv2d(%x, %w)\n"
	"  %g = param f32[1] \"g\"\n"
	"  %b = param f32[1] \"beta\"\n"
	"  %m = param f32[1] \"mean\"\n"
	"  %v = param f32[1] \"var\"\n"
	"  %y = batch_norm(%c, %g, %b, %m, %v) eps=0\n"
	"  return %y\n"
	"}\n";

/* Without a store only the graph changes; with one that lacks a weight the
 * pass fails naming it; the values are rounded once into the weight's
 * dtype (bf16: w' = 1 * 1/sqrt(9) = 1/3 -> 0x3eab). */
static void test_store(void)
{
	ir_graph *g = parse(simple);
	sn_err e = {0};
	pass_ctx ctx = {0};
	CHECK(g && pass_fold_bn(&g, &ctx, &e) == SN_OK);
	CHECK(g && param(g, "w+bn(g)") && param(g, "w+bn(g)")->dtype == IR_BF16);
	CHECK(g && param(g, "beta+fold(w)") && param(g, "beta+fold(w)")->dtype == IR_BF16);
	ir_graph_free(g);

	ir_wstore *ws = ir_ws_new();
	ir_shape s1 = {1, {1}};
	put(ws, "g", IR_F32, s1, (double[]){1});
	put(ws, "beta", IR_F32, s1, (double[]){0});
	put(ws, "mean", IR_F32, s1, (double[]){3});
	g = parse(simple);
	ctx.ws = ws;
	CHECK(g && pass_fold_bn(&g, &ctx, &e) == SN_EINPUT);
	CHECK_STR(e.msg, "fold-bn: no weight \"var\" for %y");
	ir_graph_free(g);

	put(ws, "var", IR_F32, s1, (double[]){9});
	put(ws, "w", IR_BF16, (ir_shape){4, {1, 1, 1, 1}}, (double[]){1});
	g = parse(simple);
	sn_err e2 = {0};
	CHECK(g && pass_fold_bn(&g, &ctx, &e2) == SN_OK);
	const ir_tensor *w = ir_ws_get(ws, "w+bn(g)"), *b = ir_ws_get(ws, "beta+fold(w)");
	CHECK(w && w->dtype == IR_BF16 && *(uint16_t *)w->data == 0x3eab);
	/* b' = (0 - 3) / 3 + 0 = -1 exactly */
	CHECK(b && b->dtype == IR_BF16 && ir_load(IR_BF16, b->data, 0) == -1.0);
	ir_graph_free(g);
	ir_ws_free(ws);
}

/* Two norms sharing their params after two convs sharing a weight get
 * distinct derived keys. */
static void test_keys(void)
{
	const char *src = "sinter 1\n"
		"func @main(%x: f32[1,2,2,2]) -> (f32[1,2,2,2]) {\n"
		"  %w = param f32[2,2,1,1] \"w\"\n"
		"  %c1 = conv2d(%x, %w)\n"
		"  %c2 = conv2d(%x, %w) pad=[1,1,0,0]\n"
		"  %g = param f32[2] \"g\"\n"
		"  %y1 = batch_norm(%c1, %g, %g, %g, %g)\n"
		"  %y2 = batch_norm(%c2, %g, %g, %g, %g)\n"
		"  %s2 = slice(%y2) axes=[2,3] starts=[0,0] ends=[2,2]\n"
		"  %o = add(%y1, %s2)\n"
		"  return %o\n"
		"}\n";
	ir_graph *g = parse(src);
	sn_err e = {0};
	pass_ctx ctx = {0};
	CHECK(g && pass_fold_bn(&g, &ctx, &e) == SN_OK && ir_verify(g, &e) == SN_OK);
	CHECK(g && param(g, "w+bn(g)") && param(g, "w+bn(g)#2"));
	CHECK(g && param(g, "g+fold(w)") && param(g, "g+fold(w)#2"));
	CHECK(g && count_op(g, IR_OP_batch_norm) == 0);
	ir_graph_free(g);
}

int main(void)
{
	test_conv_bias();
	test_conv_nhwc();
	test_linear();
	test_no_fold();
	test_store();
	test_keys();
	return check_done("fold_bn");
}
