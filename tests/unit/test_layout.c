/* test_layout.c: the NHWC layout pass, and numeric equivalence of the
 * pass golden files. Checked here:
 *   - derived params: "<key>@OHWI" holds w[o,i,h,w] at [o,h,w,i] (checked
 *     against the index formula), "<key>@NHWC" of a [C,1,1] and a [W] param;
 *   - where transposes go (one per value entering or leaving a region, none
 *     for a flatten of [N,1,1,C]), remapped axes, a graph without conv
 *     left alone;
 *   - every tests/passes/{fold_bn,layout}_*.sir through the passes named on
 *     its first line, samples/resblock.sir (N=2) and samples/resnet50.sir
 *     (N=1) through canonicalize,fold-bn,layout,canonicalize: the reference
 *     interpreter gives the same outputs before and after within 1e-5
 *     relative L2, with random weights whose norm statistics are not
 *     trivial (pass_equiv.h: gamma, var in [0.5, 1.5], beta, mean in
 *     [-1, 1]);
 *   - ResNet-50 comes out with no batch_norm and at most 2 transposes that
 *     are not fed by params. */
#include "check.h"

#include "frontend/sir.h"
#include "ir/wstore.h"
#include "passes/passes.h"
#include "pass_equiv.h"

#include <dirent.h>
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

static int count_op(const ir_graph *g, ir_op op)
{
	int c = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		c += g->nodes[i].op == op;
	return c;
}

static const ir_node *node(const ir_graph *g, const char *name)
{
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0)
			return &g->nodes[i];
	return NULL;
}

/* Parses path with N bound to n, runs the passes in list with random
 * weights (equiv_fill_params), and checks the outputs before and after on
 * the reference (equiv_check). Returns the rewritten graph (the caller
 * frees it), or NULL. */
static ir_graph *check_equiv(const char *path, int64_t n, const char *list, uint64_t seed)
{
	sir_bind bind = {"N", n};
	ir_graph *g = NULL;
	sn_err e = {0};
	if (sir_parse_file(path, &bind, 1, &g, &e) != SN_OK) {
		e = (sn_err){0}; /* a graph without the symbol N */
		if (sir_parse_file(path, NULL, 0, &g, &e) != SN_OK) {
			fprintf(stderr, "%s: %s\n", path, e.msg);
			CHECK(0);
			return NULL;
		}
	}
	ir_wstore *ws = ir_ws_new();
	equiv_fill_params(g, ws, seed);
	ir_graph *before = ir_graph_clone(g, &e);
	pass_ctx ctx = {.ws = ws};
	if (!before || pass_run_list(&g, list, &ctx, &e) != SN_OK || ir_verify(g, &e) != SN_OK) {
		fprintf(stderr, "%s: %s: %s\n", path, list, e.msg);
		CHECK(0);
	} else {
		CHECK(equiv_check(before, g, ws, 1e-5, path));
	}
	ir_graph_free(before);
	ir_ws_free(ws);
	return g;
}

/* The pass list on the first line of a golden file ("# passes: a,b"). */
static bool golden_list(const char *path, char *list, size_t cap)
{
	FILE *f = fopen(path, "r");
	char line[256] = "";
	bool ok = f && fgets(line, sizeof line, f) && strncmp(line, "# passes: ", 10) == 0;
	if (f)
		fclose(f);
	if (!ok)
		return false;
	line[strcspn(line, "\r\n")] = 0;
	snprintf(list, cap, "%s", line + 10);
	return true;
}

static void test_goldens(void)
{
	char dir[1024], path[2048], list[256];
	snprintf(dir, sizeof dir, "%s/tests/passes", SINTER_SOURCE_DIR);
	DIR *d = opendir(dir);
	CHECK(d != NULL);
	if (!d)
		return;
	int count = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t k = strlen(de->d_name);
		if (k < 5 || strcmp(de->d_name + k - 4, ".sir") != 0 ||
		    (strncmp(de->d_name, "fold_bn_", 8) != 0 && strncmp(de->d_name, "layout_", 7) != 0))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		CHECK(golden_list(path, list, sizeof list));
		ir_graph *g = check_equiv(path, 2, list, 1000 + (uint64_t)count);
		ir_graph_free(g);
		count++;
	}
	closedir(d);
	CHECK(count >= 9);
}

/* Transposes whose operand does not come (through data movement) from a
 * param or a const. */
static int live_transposes(const ir_graph *g)
{
	int c = 0;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		if (g->nodes[i].op != IR_OP_transpose)
			continue;
		ir_ref r = g->nodes[i].in[0];
		while (ir_ops[g->nodes[r].op].kind == IR_K_MOVE && g->nodes[r].nin)
			r = g->nodes[r].in[0];
		c += g->nodes[r].op != IR_OP_param && g->nodes[r].op != IR_OP_const;
	}
	return c;
}

static void test_samples(void)
{
	const char *list = "canonicalize,fold-bn,layout,canonicalize";
	ir_graph *g = check_equiv(SINTER_SOURCE_DIR "/samples/resblock.sir", 2, list, 7);
	if (g) {
		CHECK(count_op(g, IR_OP_batch_norm) == 0);
		CHECK(live_transposes(g) == 2); /* at the input, at the output */
		ir_graph_free(g);
	}
	g = check_equiv(SINTER_SOURCE_DIR "/samples/resnet50.sir", 1, list, 8);
	if (g) {
		CHECK(count_op(g, IR_OP_batch_norm) == 0);
		CHECK(count_op(g, IR_OP_conv2d) == 53);
		int t = live_transposes(g);
		printf("  resnet50: %d transposes not fed by params\n", t);
		CHECK(t >= 1 && t <= 2);
		for (uint32_t i = 0; i < g->nnodes; i++)
			if (g->nodes[i].op == IR_OP_conv2d || g->nodes[i].op == IR_OP_max_pool2d ||
			    g->nodes[i].op == IR_OP_global_avg_pool)
				CHECK(g->nodes[i].attrs->layout == IR_NHWC);
		ir_graph_free(g);
	}
}

/* ---- the rewritten graphs, by hand --------------------------------------- */

static ir_graph *layout(const char *text, ir_wstore *ws)
{
	ir_graph *g = parse(text);
	sn_err e = {0};
	pass_ctx ctx = {.ws = ws};
	CHECK(g != NULL);
	if (g && (pass_layout(&g, &ctx, &e) != SN_OK || ir_verify(g, &e) != SN_OK)) {
		fprintf(stderr, "layout: %s\n", e.msg);
		CHECK(0);
	}
	return g;
}

static void put_iota(ir_wstore *ws, const char *key, ir_shape s)
{
	sn_err e = {0};
	ir_tensor t = {.dtype = IR_F32, .shape = s, .nbytes = (size_t)ir_numel(&s) * 4};
	t.data = malloc(t.nbytes);
	for (int64_t i = 0; i < ir_numel(&s); i++)
		((float *)t.data)[i] = (float)(i + 1);
	CHECK(ir_ws_put(ws, key, t, &e) == SN_OK);
}

static void test_params(void)
{
	const char *src = "sinter 1\n"
		"func @main(%x: f32[1,3,4,5]) -> (f32[1,2,3,5]) {\n"
		"  %w = param f32[2,3,2,1] \"w\"\n"
		"  %c = conv2d(%x, %w)\n"
		"  %s = param f32[2,1,1] \"s\"\n"
		"  %r = param f32[5] \"r\"\n"
		"  %m = mul(%c, %s)\n"
		"  %a = add(%m, %r)\n"
		"  return %a\n"
		"}\n";
	ir_wstore *ws = ir_ws_new();
	put_iota(ws, "w", (ir_shape){4, {2, 3, 2, 1}});
	put_iota(ws, "s", (ir_shape){3, {2, 1, 1}});
	put_iota(ws, "r", (ir_shape){1, {5}});
	ir_graph *g = layout(src, ws);
	if (g) {
		CHECK(count_op(g, IR_OP_transpose) == 2);
		CHECK(count_op(g, IR_OP_param) == 3); /* the originals are gone */
		const ir_node *c = node(g, "c");
		CHECK(c && c->attrs->layout == IR_NHWC && c->shape.d[3] == 2 && c->shape.d[1] == 3);
		const ir_node *a = &g->nodes[g->outputs[0]];
		CHECK(a->op == IR_OP_transpose && a->name && strcmp(a->name, "a") == 0);
		CHECK(a->shape.d[1] == 2 && a->shape.d[2] == 3 && a->shape.d[3] == 5);
		ir_graph_free(g);
	}
	/* OHWI [2,2,1,3]: [o,h,w,i] = w[o,i,h,w] = 1 + o*6 + i*2 + h (w = 0) */
	const ir_tensor *w = ir_ws_get(ws, "w@OHWI");
	CHECK(w && w->shape.rank == 4 && w->shape.d[1] == 2 && w->shape.d[2] == 1 && w->shape.d[3] == 3);
	for (int o = 0; w && o < 2; o++)
		for (int h = 0; h < 2; h++)
			for (int i = 0; i < 3; i++)
				CHECK(((float *)w->data)[(o * 2 + h) * 3 + i] == (float)(1 + o * 6 + i * 2 + h));
	const ir_tensor *s = ir_ws_get(ws, "s@NHWC"), *r = ir_ws_get(ws, "r@NHWC");
	CHECK(s && s->shape.rank == 4 && s->shape.d[3] == 2 && ((float *)s->data)[1] == 2.0f);
	CHECK(r && r->shape.rank == 4 && r->shape.d[2] == 5 && r->shape.d[3] == 1 &&
	      ((float *)r->data)[4] == 5.0f);
	ir_ws_free(ws);
}

static void test_structure(void)
{
	/* no conv: unchanged */
	const char *plain = "sinter 1\nfunc @main(%x: f32[1,2,3,3]) -> (f32[1,2,1,1]) {\n"
		"  %p = max_pool2d(%x) kernel=[3,3]\n  return %p\n}\n";
	ir_graph *g = layout(plain, NULL);
	CHECK(g && g->nnodes == 2 && g->nodes[1].attrs->layout == IR_NCHW);
	ir_graph_free(g);

	/* a conv whose result a layer_norm and a matmul read: one transpose back
	 * serves both; a computed weight is transposed, not re-keyed; a
	 * reduction over H,W without keepdims needs no transpose ([N,C]) */
	const char *src = "sinter 1\nfunc @main(%x: f32[1,2,3,3], %w: f32[2,2,1,1]) -> "
		"(f32[1,2,3,3], f32[1,2,3,3], f32[1,2]) {\n"
		"  %wn = neg(%w)\n  %c = conv2d(%x, %wn)\n"
		"  %ln = layer_norm(%c)\n  %mm = matmul(%c, %c)\n"
		"  %mean = reduce_mean(%c) axes=[2,3]\n"
		"  return %ln, %mm, %mean\n}\n";
	g = layout(src, NULL);
	if (g) {
		CHECK(count_op(g, IR_OP_transpose) == 3); /* x in, wn as OHWI, c back */
		const ir_node *b = node(g, "c.nchw"), *wo = node(g, "wn.ohwi");
		CHECK(b && b->op == IR_OP_transpose && b->attrs->perm.v[1] == 3);
		CHECK(wo && wo->op == IR_OP_transpose && wo->attrs->perm.v[3] == 1);
		const ir_node *m = node(g, "mean");
		CHECK(m && m->op == IR_OP_reduce_mean && m->attrs->axes.v[0] == 1 && m->attrs->axes.v[1] == 2);
		ir_graph_free(g);
	}
}

int main(void)
{
	test_params();
	test_structure();
	test_goldens();
	test_samples();
	return check_done("layout");
}
