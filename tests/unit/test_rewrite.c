/* test_rewrite.c: graph rebuilding (passes/rewrite.c) and the pass manager
 * (passes/pass.c): rw_copy keeps everything a node carries, rw_map
 * replaces nodes, rw_uses counts readers; pass lists are checked before
 * anything runs, the pipelines are what docs say, and --dump-dir files
 * hold the IR after each pass. */
#include "check.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 0 %x input f32[N,3] (line 3 col 9), 1 %w param f32[3] "layer.w",
 * 2 %c const f32[2] [0.25, -7], 3 %i iota i64[2,3] axis=1, 4 %m mul(x, w),
 * 5 %t transpose(m) perm=[1,0] (line 6), 6 %r relu(m), 7 %s reduce_sum(c)
 * axes=[0] keepdims; outputs %t, %m */
static ir_graph *base(void)
{
	sn_err e = {0};
	ir_graph *g = ir_graph_new();
	g->func = sn_strdup(g->arena, "f");
	g->weights = sn_strdup(g->arena, "w.safetensors");
	g->path = sn_strdup(g->arena, "dir/f.sir");
	int64_t n = IR_SYM(ir_sym(g, "N", 1));
	ir_shape xs = {2, {n, 3}}, ws = {1, {3}}, cs = {1, {2}}, is = {2, {2, 3}};
	float cv[2] = {0.25f, -7};
	ir_ref x = ir_add_input(g, "x", IR_F32, &xs, &e);
	g->nodes[x].line = 3, g->nodes[x].col = 9;
	ir_ref w = ir_add_param(g, "layer.w", IR_F32, &ws, &e);
	ir_set_name(g, w, "w");
	ir_ref c = ir_add_const(g, IR_F32, &cs, cv, &e);
	ir_set_name(g, c, "c");
	ir_ref i = ir_add_iota(g, IR_I64, &is, 1, &e);
	ir_set_name(g, i, "i");
	ir_ref m = ir_add(g, IR_OP_mul, (ir_ref[]){x, w}, 2, NULL, &e);
	ir_set_name(g, m, "m");
	ir_attrs a;
	ir_attrs_init(IR_OP_transpose, &a);
	a.perm = (ir_ints){2, {1, 0}};
	ir_ref t = ir_add(g, IR_OP_transpose, &m, 1, &a, &e);
	ir_set_name(g, t, "t");
	g->nodes[t].line = 6, g->nodes[t].col = 2;
	ir_ref r = ir_add(g, IR_OP_relu, &m, 1, NULL, &e);
	ir_set_name(g, r, "r");
	ir_attrs_init(IR_OP_reduce_sum, &a);
	a.axes = (ir_ints){1, {0}};
	a.keepdims = true;
	ir_ref s = ir_add(g, IR_OP_reduce_sum, &c, 1, &a, &e);
	ir_set_name(g, s, "s");
	ir_add_output(g, t);
	ir_add_output(g, m);
	if (e.code)
		fprintf(stderr, "setup: %s\n", e.msg);
	CHECK(e.code == SN_OK && g->nnodes == 8 && ir_verify(g, &e) == SN_OK);
	return g;
}

static void test_copy(void)
{
	ir_graph *g = base();
	sn_err e = {0};
	rw r;
	CHECK(rw_begin(&r, g, &e) == SN_OK);
	CHECK_STR(r.dst->func, "f");
	CHECK_STR(r.dst->weights, "w.safetensors");
	CHECK_STR(r.dst->path, "dir/f.sir");
	CHECK(r.dst->nsyms == 1 && strcmp(r.dst->syms[0], "N") == 0);
	CHECK(r.map[0] == IR_NONE && r.map[7] == IR_NONE);
	/* Copy in reverse-friendly order: x, w, c, i, then m, t, r, s. */
	for (uint32_t i = 0; i < g->nnodes; i++)
		CHECK(rw_copy(&r, i, &e) == i);
	const ir_graph *d = r.dst;
	CHECK(d->ninputs == 1 && d->inputs[0] == 0);
	CHECK_STR(d->nodes[0].name, "x");
	CHECK(d->nodes[0].line == 3 && d->nodes[0].col == 9);
	CHECK(d->nodes[0].shape.d[0] == IR_SYM(0));
	CHECK(d->nodes[1].op == IR_OP_param);
	CHECK_STR(d->nodes[1].pname, "layer.w");
	CHECK(d->nodes[1].pname != g->nodes[1].pname);
	CHECK(d->nodes[2].op == IR_OP_const && d->nodes[2].data != g->nodes[2].data);
	CHECK(((const float *)d->nodes[2].data)[0] == 0.25f && ((const float *)d->nodes[2].data)[1] == -7);
	CHECK(d->nodes[3].op == IR_OP_iota && d->nodes[3].attrs->axis == 1);
	CHECK(d->nodes[4].in[0] == 0 && d->nodes[4].in[1] == 1);
	CHECK(d->nodes[5].attrs->perm.n == 2 && d->nodes[5].attrs->perm.v[0] == 1);
	CHECK(d->nodes[5].line == 6 && d->nodes[5].col == 2);
	CHECK(d->nodes[5].shape.d[0] == 3 && d->nodes[5].shape.d[1] == IR_SYM(0));
	CHECK(d->nodes[7].attrs->keepdims && d->nodes[7].attrs->axes.v[0] == 0);
	CHECK_STR(d->nodes[7].name, "s");
	ir_graph *out = rw_finish(&r, &e);
	CHECK(out && out->noutputs == 2 && out->outputs[0] == 5 && out->outputs[1] == 4);
	CHECK(out && ir_verify(out, &e) == SN_OK);
	/* The same text: nothing was lost. */
	sn_buf b1 = {0}, b2 = {0};
	ir_print(g, &b1);
	if (out)
		ir_print(out, &b2);
	CHECK(b1.s && b2.s && strcmp(b1.s, b2.s) == 0);
	sn_buf_free(&b1);
	sn_buf_free(&b2);
	ir_graph_free(out);
	ir_graph_free(g);
}

/* A name already used in dst is not given twice; an unmapped operand is an
 * internal error, not a crash. */
static void test_copy_names_and_errors(void)
{
	ir_graph *g = base();
	sn_err e = {0};
	rw r;
	CHECK(rw_begin(&r, g, &e) == SN_OK);
	CHECK(rw_copy(&r, 0, &e) == 0);
	CHECK(rw_copy(&r, 1, &e) == 1);
	ir_ref k = rw_copy(&r, 2, &e);
	rw_set_name(&r, k, "m"); /* takes the name %m would get */
	CHECK(rw_name_used(&r, "m"));
	ir_ref m = rw_copy(&r, 4, &e);
	CHECK(m == 3 && r.dst->nodes[m].name == NULL);
	/* renaming frees the old name; a node named before it is counted is seen */
	rw_set_name(&r, k, "k2");
	CHECK(!rw_name_used(&r, "m") && rw_name_used(&r, "k2"));
	rw_set_name(&r, k, "m");
	CHECK(!rw_name_used(&r, "k2") && rw_name_used(&r, "m"));
	CHECK(e.code == SN_OK);
	CHECK(rw_copy(&r, 6, &e) == 4); /* relu reads m: mapped */
	CHECK(rw_copy(&r, 7, &e) == 5); /* reduce_sum reads c, renamed %m in dst */
	CHECK(r.dst->nodes[5].in[0] == k && e.code == SN_OK);
	rw_abort(&r);

	/* An operand that is not mapped yet. */
	CHECK(rw_begin(&r, g, &e) == SN_OK);
	sn_err e3 = {0};
	CHECK(rw_copy(&r, 4, &e3) == IR_NONE);
	CHECK(e3.code == SN_EINTERNAL && strstr(e3.msg, "not mapped") != NULL);
	sn_err e4 = {0};
	CHECK(rw_copy(&r, 99, &e4) == IR_NONE && e4.code == SN_EINTERNAL);
	/* An output that was never mapped: rw_finish fails and frees dst. */
	sn_err e5 = {0};
	CHECK(rw_finish(&r, &e5) == NULL && e5.code == SN_EINTERNAL);
	ir_graph_free(g);
}

/* relu becomes tanh; everything else is copied. */
static ir_ref relu_to_tanh(rw *r, ir_ref old, void *ctx, sn_err *e)
{
	int *count = ctx;
	const ir_node *n = &r->src->nodes[old];
	if (n->op != IR_OP_relu)
		return IR_NONE;
	++*count;
	ir_ref in = r->map[n->in[0]];
	return ir_add(r->dst, IR_OP_tanh, &in, 1, NULL, e);
}

static ir_ref fail_on_mul(rw *r, ir_ref old, void *ctx, sn_err *e)
{
	(void)ctx;
	if (r->src->nodes[old].op == IR_OP_mul)
		sn_errf(e, SN_EINPUT, "mul: refused");
	return IR_NONE;
}

static void test_map_and_uses(void)
{
	ir_graph *g = base();
	/* relu is not an output: make it one so the replacement is visible. */
	ir_add_output(g, 6);
	sn_err e = {0};
	int count = 0;
	ir_graph *out = rw_map(g, relu_to_tanh, &count, &e);
	CHECK(out && count == 1);
	if (out) {
		CHECK(out->nnodes == 8 && out->nodes[6].op == IR_OP_tanh && out->nodes[6].in[0] == 4);
		CHECK(out->noutputs == 3 && out->outputs[2] == 6);
		CHECK(ir_verify(out, &e) == SN_OK);
	}
	ir_graph_free(out);
	sn_err e2 = {0};
	CHECK(rw_map(g, fail_on_mul, NULL, &e2) == NULL);
	CHECK(e2.code == SN_EINPUT && strcmp(e2.msg, "mul: refused") == 0);

	/* Readers: x by m; w by m; c by s; i none; m by t, r and output 1;
	 * t by output 0; r by output 2; s none. */
	uint32_t *u = rw_uses(g);
	uint32_t want[8] = {1, 1, 1, 0, 3, 1, 1, 0};
	CHECK(u != NULL);
	for (int i = 0; u && i < 8; i++)
		CHECK(u[i] == want[i]);
	free(u);
	ir_graph_free(g);
}

static void test_pipelines(void)
{
	CHECK_STR(pass_pipeline("default"), "canonicalize,fold-bn,layout,precision,attention,canonicalize");
	CHECK(pass_pipeline("reduce-overhead") != NULL);
	CHECK(pass_pipeline("max-autotune") != NULL);
	CHECK(pass_pipeline("fast") == NULL);
	CHECK(pass_pipeline(NULL) == NULL);
	const char *names[] = {"canonicalize", "fold-bn", "layout", "precision", "attention"};
	CHECK(pass_count == 5);
	for (size_t i = 0; i < 5 && i < pass_count; i++) {
		CHECK_STR(pass_table[i].name, names[i]);
		CHECK(pass_table[i].fn != NULL && pass_table[i].doc && pass_table[i].doc[0]);
	}
}

static void test_run_list(void)
{
	ir_graph *g = base();
	ir_graph *orig = g;
	sn_err e = {0};
	CHECK(pass_run_list(&g, "canonicalize,nope", NULL, &e) == SN_EUSAGE);
	CHECK(strstr(e.msg, "unknown pass 'nope'") && strstr(e.msg, "canonicalize, fold-bn, layout, precision"));
	CHECK(g == orig); /* nothing ran */
	sn_err e2 = {0};
	CHECK(pass_run_list(&g, "canonicalize,", NULL, &e2) == SN_EUSAGE && strstr(e2.msg, "empty pass name"));
	sn_err e3 = {0};
	CHECK(pass_run_list(&g, ",canonicalize", NULL, &e3) == SN_EUSAGE);
	sn_err e4 = {0};
	CHECK(pass_run_list(&g, "", NULL, &e4) == SN_OK && g == orig);

	/* Two passes with a dump directory: 00-input, 01-canonicalize,
	 * 02-canonicalize; the last holds the final graph. */
	char dir[] = "/tmp/sinter-dump-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	pass_ctx ctx = {.dump_dir = dir};
	sn_err e5 = {0};
	CHECK(pass_run_list(&g, "canonicalize,canonicalize", &ctx, &e5) == SN_OK);
	if (e5.code)
		fprintf(stderr, "%s\n", e5.msg);
	/* canonicalize dropped the dead relu, reduce_sum, const and iota: x, w, m, t. */
	CHECK(g->nnodes == 4);
	const char *files[] = {"00-input.sir", "01-canonicalize.sir", "02-canonicalize.sir"};
	sn_buf want = {0};
	ir_print(g, &want);
	for (int i = 0; i < 3; i++) {
		char path[512];
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		FILE *f = fopen(path, "r");
		CHECK(f != NULL);
		if (!f)
			continue;
		char buf[4096];
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		buf[n] = 0;
		fclose(f);
		if (i == 0)
			CHECK(strstr(buf, "relu(") != NULL);
		else
			CHECK(want.s && strcmp(buf, want.s) == 0);
		remove(path);
	}
	sn_buf_free(&want);
	rmdir(dir);

	/* A graph that is invalid before any pass is bad input, not blamed on
	 * a pass. */
	ir_graph *bad_g = base();
	bad_g->noutputs = 0;
	sn_err e7 = {0};
	CHECK(pass_run_list(&bad_g, "canonicalize", NULL, &e7) == SN_EINPUT);
	CHECK(strstr(e7.msg, "invalid before the passes") && strstr(e7.msg, "no outputs"));
	ir_graph_free(bad_g);

	/* A dump directory that does not exist is bad input (docs/CLI.md's
	 * exit codes: a folder the user named that is not there) naming the
	 * file; nothing is created. */
	pass_ctx bad = {.dump_dir = "/nonexistent/sinter-dump"};
	sn_err e6 = {0};
	CHECK(pass_run_list(&g, "canonicalize", &bad, &e6) == SN_EINPUT);
	CHECK(strstr(e6.msg, "/nonexistent/sinter-dump/00-input.sir") != NULL);
	ir_graph_free(g);
}

int main(void)
{
	test_copy();
	test_copy_names_and_errors();
	test_map_and_uses();
	test_pipelines();
	test_run_list();
	return check_done("rewrite");
}
