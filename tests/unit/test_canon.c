/* test_canon.c: the canonicalize pass (passes/canon.c, canon_rules.c).
 *   - every tests/passes/NAME.sir marked "# passes: canonicalize": the result
 *     verifies, prints exactly NAME.expected, is a fixed point (a second
 *     run changes nothing) and is equivalent to the input on the reference
 *     interpreter within 1e-5 relative L2 (symbols bound to 2, random
 *     params);
 *   - folded values worked out by hand (fold.sir), what CSE keeps;
 *   - the samples: resblock (N=1), mlp (N=2) and resnet50 (N=1) stay
 *     equivalent within 1e-5 and do not grow; gpt2 (N=1) verifies and is a
 *     fixed point (too slow on the reference under ASan to run);
 *   - the default pipeline on resblock, with weights, within 1e-5. */
#include "check.h"
#include "pass_equiv.h"
#include "frontend/sir.h"
#include "passes/pass.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s)
		s[n] = 0;
	fclose(f);
	return s;
}

static char *print_graph(const ir_graph *g)
{
	sn_buf b = {0};
	ir_print(g, &b);
	return b.s;
}

/* g's symbols all bound to v (none when g has none). */
static ir_graph *parse(const char *path, int64_t v)
{
	sn_err e = {0};
	ir_graph *g = NULL;
	if (sir_parse_file(path, NULL, 0, &g, &e) != SN_OK) {
		fprintf(stderr, "%s\n", e.msg);
		return NULL;
	}
	if (!g->nsyms || v <= 0)
		return g;
	sir_bind b[IR_MAX_SYMS];
	for (uint32_t k = 0; k < g->nsyms; k++)
		b[k] = (sir_bind){g->syms[k], v};
	ir_graph *h = NULL;
	if (sir_parse_file(path, b, g->nsyms, &h, &e) != SN_OK)
		fprintf(stderr, "%s\n", e.msg);
	ir_graph_free(g);
	return h;
}

/* A canonicalized copy of g (NULL on failure, reported). */
static ir_graph *canon_copy(const ir_graph *g, const char *list, ir_wstore *ws)
{
	sn_err e = {0};
	ir_graph *c = ir_graph_clone(g, &e);
	pass_ctx ctx = {.ws = ws};
	if (!c || pass_run_list(&c, list, &ctx, &e) != SN_OK || ir_verify(c, &e) != SN_OK) {
		fprintf(stderr, "%s on %s: %s\n", list, g->path ? g->path : "graph", e.msg);
		ir_graph_free(c);
		return NULL;
	}
	return c;
}

static void golden(const char *dir, const char *name)
{
	char path[2048], exp[2048];
	snprintf(path, sizeof path, "%s/%s.sir", dir, name);
	snprintf(exp, sizeof exp, "%s/%s.expected", dir, name);
	ir_graph *g = parse(path, 0);
	CHECK(g != NULL);
	if (!g)
		return;
	ir_graph *c = canon_copy(g, "canonicalize", NULL);
	CHECK(c != NULL);
	char *want = slurp(exp), *got = c ? print_graph(c) : NULL;
	CHECK(want && got && strcmp(want, got) == 0);
	if (want && got && strcmp(want, got) != 0)
		fprintf(stderr, "%s: got\n%s\n", name, got);
	/* A fixed point: once more changes nothing. */
	ir_graph *c2 = c ? canon_copy(c, "canonicalize", NULL) : NULL;
	char *got2 = c2 ? print_graph(c2) : NULL;
	CHECK(got && got2 && strcmp(got, got2) == 0);
	free(want), free(got), free(got2);
	ir_graph_free(c), ir_graph_free(c2), ir_graph_free(g);

	/* Equivalence on concrete shapes. */
	ir_graph *b = parse(path, 2);
	ir_graph *a = b ? canon_copy(b, "canonicalize", NULL) : NULL;
	ir_wstore *ws = ir_ws_new();
	CHECK(a != NULL && ws != NULL);
	if (a && ws) {
		equiv_fill_params(b, ws, 7);
		CHECK(equiv_check(b, a, ws, 1e-5, name));
	}
	ir_ws_free(ws);
	ir_graph_free(a), ir_graph_free(b);
}

static int golden_files(void)
{
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/tests/passes", SINTER_SOURCE_DIR);
	DIR *d = opendir(dir);
	CHECK(d != NULL);
	int n = 0;
	for (struct dirent *de; d && (de = readdir(d));) {
		size_t len = strlen(de->d_name);
		if (len < 5 || strcmp(de->d_name + len - 4, ".sir") != 0)
			continue;
		char path[2048], name[512];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		snprintf(name, sizeof name, "%.*s", (int)(len - 4), de->d_name);
		char *text = slurp(path);
		bool mine = text && strncmp(text, "# passes: canonicalize\n", 23) == 0;
		free(text);
		if (mine) {
			golden(dir, name);
			n++;
		}
	}
	if (d)
		closedir(d);
	return n;
}

static const ir_node *named(const ir_graph *g, const char *name)
{
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0)
			return &g->nodes[i];
	return NULL;
}

static int count_op(const ir_graph *g, ir_op op)
{
	int n = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		n += g->nodes[i].op == op;
	return n;
}

/* fold.sir: e = exp(2 * [0.5, -1.5, 3]) and shape = [4,3,7] * iota + 14,
 * worked out by hand; the 8192-element neg is not folded. */
static void test_fold_values(void)
{
	ir_graph *g = parse(SINTER_SOURCE_DIR "/tests/passes/fold.sir", 0);
	ir_graph *c = g ? canon_copy(g, "canonicalize", NULL) : NULL;
	CHECK(c != NULL);
	if (!c) {
		ir_graph_free(g);
		return;
	}
	const ir_node *e = named(c, "e"), *s = named(c, "shape"), *big = named(c, "bigneg");
	CHECK(e && e->op == IR_OP_const && e->dtype == IR_F32);
	if (e && e->data) {
		const float *v = e->data;
		CHECK(v[0] == (float)exp(1.0) && v[1] == (float)exp(-3.0) && v[2] == (float)exp(6.0));
	}
	CHECK(s && s->op == IR_OP_const && s->dtype == IR_I64);
	if (s && s->data) {
		const int64_t *v = s->data;
		CHECK(v[0] == 14 && v[1] == 17 && v[2] == 28);
	}
	CHECK(big && big->op == IR_OP_neg);
	CHECK(count_op(c, IR_OP_mul) == 0 && count_op(c, IR_OP_reduce_sum) == 0);
	ir_graph_free(c), ir_graph_free(g);

	/* cse.sir: one param "w", two consts (one per distinct value), one
	 * mul, the two gelus (different approximations) kept. */
	g = parse(SINTER_SOURCE_DIR "/tests/passes/cse.sir", 0);
	c = g ? canon_copy(g, "canonicalize", NULL) : NULL;
	CHECK(c != NULL);
	if (c) {
		CHECK(count_op(c, IR_OP_param) == 1 && count_op(c, IR_OP_const) == 2);
		CHECK(count_op(c, IR_OP_mul) == 1 && count_op(c, IR_OP_gelu) == 2);
		CHECK(count_op(c, IR_OP_transpose) == 1);
	}
	ir_graph_free(c), ir_graph_free(g);
}

static void sample(const char *name, int64_t n, bool run, const char *list, double tol)
{
	char path[1024], label[128];
	snprintf(path, sizeof path, "%s/samples/%s.sir", SINTER_SOURCE_DIR, name);
	snprintf(label, sizeof label, "%s N=%lld %s", name, (long long)n, list);
	ir_graph *b = parse(path, n);
	CHECK(b != NULL);
	if (!b)
		return;
	ir_wstore *ws = ir_ws_new();
	if (run)
		equiv_fill_params(b, ws, 11);
	const char *pipe = pass_pipeline(list);
	ir_graph *a = canon_copy(b, pipe ? pipe : list, run ? ws : NULL);
	CHECK(a != NULL);
	if (a) {
		CHECK(a->nnodes <= b->nnodes || strcmp(list, "canonicalize") != 0);
		if (run)
			CHECK(equiv_check(b, a, ws, tol, label));
		ir_graph *a2 = canon_copy(a, "canonicalize", NULL);
		char *p1 = print_graph(a), *p2 = a2 ? print_graph(a2) : NULL;
		CHECK(p1 && p2 && strcmp(p1, p2) == 0); /* canonical: a fixed point */
		printf("%s: %u -> %u nodes\n", label, b->nnodes, a->nnodes);
		free(p1), free(p2);
		ir_graph_free(a2);
	}
	ir_ws_free(ws);
	ir_graph_free(a), ir_graph_free(b);
}

/* The checker itself can fail: relu against abs, and a changed constant. */
static void test_equiv_detects(void)
{
	static const char *src[2] = {
		"sinter 1\nfunc @main(%x: f32[4,4]) -> (f32[4,4]) {\n  %y = relu(%x)\n  return %y\n}\n",
		"sinter 1\nfunc @main(%x: f32[4,4]) -> (f32[4,4]) {\n  %y = abs(%x)\n  return %y\n}\n",
	};
	ir_graph *g[2] = {0};
	sn_err e = {0};
	for (int i = 0; i < 2; i++)
		CHECK(sir_parse(src[i], strlen(src[i]), NULL, NULL, 0, &g[i], &e) == SN_OK);
	ir_wstore *ws = ir_ws_new();
	if (g[0] && g[1]) {
		CHECK(!equiv_check(g[0], g[1], ws, 1e-5, "relu vs abs (must fail)"));
		CHECK(equiv_check(g[0], g[0], ws, 0, "relu vs itself"));
	}
	ir_ws_free(ws);
	ir_graph_free(g[0]), ir_graph_free(g[1]);
}

int main(int argc, char **argv)
{
	test_equiv_detects();
	bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
	int n = golden_files();
	CHECK(n >= 15);
	test_fold_values();
	sample("resblock", 1, true, "canonicalize", 1e-5);
	sample("resblock", 2, true, "default", 1e-5);
	sample("gpt2", 1, false, "canonicalize", 0);
	if (!quick) {
		sample("mlp", 2, true, "canonicalize", 1e-5);
		sample("resnet50", 1, true, "canonicalize", 1e-5);
	}
	return check_done("canon");
}
