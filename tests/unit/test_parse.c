/* test_parse.c: the .sir parser (frontend/sir_*.c) and printer (ir/print.c):
 * what a parsed graph holds, constant rounding, symbol bindings, located
 * messages, and the printer's naming of unnamed nodes. */
#include "check.h"
#include "frontend/sir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static ir_graph *parse(const char *src, const sir_bind *b, size_t nb, sn_err *e)
{
	ir_graph *g = NULL;
	memset(e, 0, sizeof *e);
	int rc = sir_parse(src, strlen(src), "t.sir", b, nb, &g, e);
	CHECK(rc == e->code);
	CHECK((rc == SN_OK) == (g != NULL));
	return g;
}

static char *print(const ir_graph *g)
{
	sn_buf b = {0};
	ir_print(g, &b);
	CHECK(!b.oom);
	return b.s;
}

static const ir_node *by_name(const ir_graph *g, const char *name)
{
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0)
			return &g->nodes[i];
	return NULL;
}

static const char *const prog =
	"# comment\n"
	"sinter 1\n"
	"weights \"w.safetensors\"\n"
	"func @net(%x: f32[N,3,8,8]) -> (f32[N,4,4,4], f32[N,256]) {\n"
	"  %w = param f32[4,3,3,3] \"conv.weight\"\n"
	"  %c = conv2d(%x, %w) stride=[2,2] pad=[1,1,1,1]\n"
	"  %a, %b = split(%c) axis=1 sizes=[1,3]\n"
	"  %r = reshape(%c) shape=[N,-1]\n"
	"  return %c, %r\n"
	"}\n";

static void test_structure(void)
{
	sn_err e;
	ir_graph *g = parse(prog, NULL, 0, &e);
	if (!g)
		return;
	CHECK_STR(g->func, "net");
	CHECK_STR(g->weights, "w.safetensors");
	CHECK_STR(g->path, "t.sir");
	CHECK(g->nsyms == 1 && strcmp(g->syms[0], "N") == 0);
	CHECK(g->nnodes == 6); /* x, w, c, a, b, r */
	CHECK(g->ninputs == 1 && g->noutputs == 2);
	const ir_node *c = by_name(g, "c");
	CHECK(c && c->op == IR_OP_conv2d && c->nin == 2);
	/* (8 + 1 + 1 - 3) / 2 + 1 = 4 */
	CHECK(c && c->shape.rank == 4 && c->shape.d[0] == IR_SYM(0) && c->shape.d[1] == 4 &&
	      c->shape.d[2] == 4 && c->shape.d[3] == 4);
	CHECK(c && c->attrs->stride.n == 2 && c->attrs->stride.v[0] == 2 && c->attrs->pad.v[3] == 1);
	CHECK(c && c->line == 6 && c->col == 8);
	const ir_node *a = by_name(g, "a"), *b = by_name(g, "b");
	CHECK(a && b && a->attrs->index == 0 && b->attrs->index == 1);
	CHECK(a && a->shape.d[1] == 1 && b && b->shape.d[1] == 3);
	CHECK(b && b->line == 7 && b->col == 13);
	const ir_node *r = by_name(g, "r");
	CHECK(r && r->attrs->shape.n == 2 && r->attrs->shape.v[0] == IR_SYM(0) &&
	      r->attrs->shape.v[1] == IR_DIM_INFER);
	CHECK(r && r->shape.d[1] == 64); /* 4 * 4 * 4 */
	const ir_node *w = by_name(g, "w");
	CHECK(w && w->op == IR_OP_param && strcmp(w->pname, "conv.weight") == 0);
	CHECK(g->nodes[g->inputs[0]].line == 4 && g->nodes[g->inputs[0]].col == 11);
	char ty[160];
	ir_type_str(g, c->dtype, &c->shape, ty, sizeof ty);
	CHECK_STR(ty, "f32[N,4,4,4]");
	ir_shape sc = {0};
	ir_type_str(g, IR_BF16, &sc, ty, sizeof ty);
	CHECK_STR(ty, "bf16[]");
	CHECK(ir_verify(g, &e) == SN_OK);
	ir_graph_free(g);
}

static void test_bindings(void)
{
	sn_err e;
	sir_bind b = {"N", 5};
	ir_graph *g = parse(prog, &b, 1, &e);
	if (!g)
		return;
	CHECK(g->nsyms == 0);
	const ir_node *r = by_name(g, "r");
	CHECK(r && r->attrs->shape.v[0] == 5 && r->shape.d[0] == 5 && r->shape.d[1] == 64);
	CHECK(g->nodes[g->inputs[0]].shape.d[0] == 5);
	char *t = print(g);
	CHECK(t && strstr(t, "func @net(%x: f32[5,3,8,8]) -> (f32[5,4,4,4], f32[5,256]) {\n"));
	CHECK(t && strstr(t, "  %r = reshape(%c) shape=[5,-1]\n"));
	free(t);
	ir_graph_free(g);

	sir_bind two[2] = {{"N", 5}, {"M", 2}};
	CHECK(!parse(prog, two, 2, &e));
	CHECK(e.code == SN_EUSAGE);
	CHECK_STR(e.msg, "symbol M is bound but t.sir has no symbol M");
}

static uint16_t bits16(const ir_node *n, int i)
{
	uint16_t v;
	memcpy(&v, (const char *)n->data + 2 * i, 2);
	return v;
}

static void test_consts(void)
{
	sn_err e;
	ir_graph *g = parse("sinter 1\nfunc @main(%x: f32[1]) -> (f32[1]) {\n"
			    "  %f = const f32[3] [16777217, 1.00000005960464477539062500001, -0]\n"
			    "  %h = const f16[2] [0.1, 65519]\n"
			    "  %b = const bf16[3] [3.14159, 1.00390625, 1.01171875]\n"
			    "  %i = const i64[2] [-9223372036854775808, 9007199254740993]\n"
			    "  %u = const u8[2,1] [255, 7]\n"
			    "  %q = const bool[] true\n"
			    "  return %x\n}\n",
			    NULL, 0, &e);
	if (!g) {
		fprintf(stderr, "%s\n", e.msg);
		CHECK(0);
		return;
	}
	const ir_node *f = by_name(g, "f");
	float fv[3];
	memcpy(fv, f->data, sizeof fv);
	CHECK(fv[0] == 16777216.0f);           /* 2^24 + 1 ties to even */
	CHECK(fv[1] == 1.0f + 0x1p-23f);       /* just above the tie: one rounding, up */
	CHECK(fv[2] == 0 && signbit(fv[2]));
	const ir_node *h = by_name(g, "h");
	CHECK(bits16(h, 0) == 0x2E66);         /* f16(0.1) */
	CHECK(bits16(h, 1) == 0x7BFF);         /* 65519 rounds down to 65504 */
	const ir_node *b = by_name(g, "b");
	CHECK(bits16(b, 0) == 0x4049);         /* 3.140625 */
	CHECK(bits16(b, 1) == 0x3F80);         /* 1 + 2^-8: tie to even, 1.0 */
	CHECK(bits16(b, 2) == 0x3F82);         /* 1 + 3*2^-8: tie to even, 1 + 2^-6 */
	const ir_node *i = by_name(g, "i");
	int64_t iv[2];
	memcpy(iv, i->data, sizeof iv);
	CHECK(iv[0] == INT64_MIN && iv[1] == 9007199254740993); /* not rounded through double */
	const ir_node *u = by_name(g, "u");
	CHECK(((const uint8_t *)u->data)[0] == 255 && ((const uint8_t *)u->data)[1] == 7);
	CHECK(*(const uint8_t *)by_name(g, "q")->data == 1);
	char *t = print(g);
	CHECK(t && strstr(t, "  %f = const f32[3] [16777216, 1.0000001, -0]\n"));
	CHECK(t && strstr(t, "  %h = const f16[2] [0.0999755859375, 65504]\n"));
	CHECK(t && strstr(t, "  %b = const bf16[3] [3.140625, 1, 1.015625]\n"));
	CHECK(t && strstr(t, "  %i = const i64[2] [-9223372036854775808, 9007199254740993]\n"));
	CHECK(t && strstr(t, "  %q = const bool[] true\n"));
	/* the printout parses back to the same text */
	ir_graph *g2 = parse(t, NULL, 0, &e);
	char *t2 = g2 ? print(g2) : NULL;
	CHECK(t2 && t && strcmp(t, t2) == 0);
	free(t);
	free(t2);
	ir_graph_free(g2);
	ir_graph_free(g);
}

static void test_errors(void)
{
	sn_err e;
	CHECK(!parse("sinter 1\nfunc @main(%x: f32[2]) -> (f32[2]) {\n\t%y = relu(%q)\n  return %y\n}\n",
		     NULL, 0, &e));
	CHECK(e.code == SN_EINPUT);
	CHECK_STR(e.msg, "t.sir:3:12: error: undefined value %q\n\t%y = relu(%q)\n\t          ^");
	CHECK(!parse("sinter 1\nfunc @main(%x: f32[2]) -> (f32[2]) {\n  %y = add(%x, %x) beta=2\n",
		     NULL, 0, &e));
	CHECK_STR(e.msg, "t.sir:3:20: error: unknown attribute 'beta'\n  %y = add(%x, %x) beta=2\n"
			 "                   ^");
	CHECK(!parse("  \n# only a comment\n", NULL, 0, &e));
	CHECK_STR(e.msg, "t.sir:3:1: error: empty file (expected 'sinter 1')\n\n^");
	/* the text is not NUL-terminated: only len bytes count */
	const char *src = "sinter 1\nfunc @main(%x: f32[2]) -> (f32[2]) {\n  return %x\n}\nGARBAGE";
	ir_graph *g = NULL;
	memset(&e, 0, sizeof e);
	CHECK(sir_parse(src, strlen(src) - 7, NULL, NULL, 0, &g, &e) == SN_OK);
	ir_graph_free(g);
	CHECK(sir_parse(src, strlen(src), NULL, NULL, 0, &g, &e) == SN_EINPUT && !g);
	CHECK_STR(e.msg, "<input>:5:1: error: text after the end of the function\nGARBAGE\n^");
	memset(&e, 0, sizeof e);
	CHECK(sir_parse_file("/nonexistent/m.sir", NULL, 0, &g, &e) == SN_EINPUT && !g);
	CHECK_STR(e.msg, "cannot read /nonexistent/m.sir: No such file or directory");
}

/* Nodes made through the builder have no names; the printer numbers them
 * by id and never reuses a name a user gave. */
static void test_printer_names(void)
{
	sn_err e = {0};
	ir_graph *g = ir_graph_new();
	ir_shape s = {1, {3}};
	ir_ref x = ir_add_input(g, "1", IR_F32, &s, &e);    /* a user name that looks generated */
	ir_ref n1 = ir_add(g, IR_OP_neg, &x, 1, NULL, &e);  /* id 1, unnamed: "1" is taken */
	ir_ref in2[2] = {x, n1};
	ir_ref n2 = ir_add(g, IR_OP_add, in2, 2, NULL, &e); /* id 2 */
	ir_ref n3 = ir_add(g, IR_OP_relu, &n2, 1, NULL, &e);
	CHECK(e.code == SN_OK && n3 == 3);
	ir_set_name(g, n3, "2");                            /* the name id 2 would get */
	ir_attrs a;
	ir_attrs_init(IR_OP_clamp, &a);
	a.max = 0.25;
	ir_ref n4 = ir_add(g, IR_OP_clamp, &n3, 1, &a, &e);
	ir_add_output(g, n4);
	char *t = print(g);
	CHECK_STR(t, "sinter 1\n\nfunc @main(%1: f32[3]) -> (f32[3]) {\n"
		     "  %1_1 = neg(%1)\n"
		     "  %2_1 = add(%1, %1_1)\n"
		     "  %2 = relu(%2_1)\n"
		     "  %4 = clamp(%2) max=0.25\n"
		     "  return %4\n}\n");
	ir_graph *g2 = t ? parse(t, NULL, 0, &e) : NULL;
	char *t2 = g2 ? print(g2) : NULL;
	CHECK(t2 && strcmp(t, t2) == 0);
	free(t);
	free(t2);
	ir_graph_free(g2);
	ir_graph_free(g);
}

/* The attributes of elu, leaky_relu, mod, cumsum, argmin, scatter_elements
 * and group_norm print and parse back (parse -> print is a fixed point);
 * quoted names too. */
static void test_attr_text(void)
{
	const char *src =
		"sinter 1\n\n"
		"func @main(%x: f32[2,4,3], %i: i64[2,4,3]) -> (f32[2,4,3], f32[2,4,3], i64[2,1,3], f32[2,4,3]) {\n"
		"  %w = const f32[4] [1, 2, 3, 4]\n"
		"  %e = elu(%x) alpha=0.5\n"
		"  %l = leaky_relu(%e) alpha=0.2\n"
		"  %m = mod(%l, %x) fmod=true\n"
		"  %c = cumsum(%m) axis=1 exclusive=true reverse=true\n"
		"  %a = argmin(%c) axis=1 keepdims=true select_last=true\n"
		"  %s = scatter_elements(%x, %i, %c) axis=2 reduction=mul\n"
		"  %g = group_norm(%s, %w, %w) groups=2\n"
		"  return %c, %s, %a, %g\n"
		"}\n";
	ir_graph *g = NULL;
	sn_err e = {0};
	CHECK(sir_parse(src, strlen(src), "t.sir", NULL, 0, &g, &e) == SN_OK);
	if (!g) {
		fprintf(stderr, "%s\n", e.msg);
		return;
	}
	sn_buf b = {0};
	ir_print(g, &b);
	CHECK_STR(b.s, src);
	sn_buf_free(&b);
	ir_graph_free(g);
	/* names kept as ONNX spells them: quoted, and the printer quotes them */
	const char *quoted = "sinter 1\n\nfunc @main(%\"input:0\": f32[2]) -> (f32[2]) {\n"
			     "  %\"out/relu:0\" = relu(%\"input:0\")\n  return %\"out/relu:0\"\n}\n";
	g = NULL;
	sn_err eq = {0};
	CHECK(sir_parse(quoted, strlen(quoted), "t.sir", NULL, 0, &g, &eq) == SN_OK);
	if (g) {
		CHECK_STR(g->nodes[g->inputs[0]].name, "input:0");
		sn_buf qb = {0};
		ir_print(g, &qb);
		CHECK_STR(qb.s, quoted);
		sn_buf_free(&qb);
		ir_graph_free(g);
	}
	static const char *const bad_names[] = {
		"sinter 1\nfunc @main(%\"a\\b\": f32[2]) -> (f32[2]) {\n  return %\"a\\b\"\n}\n",
		"sinter 1\nfunc @main(%\"\": f32[2]) -> (f32[2]) {\n  return %x\n}\n",
		"sinter 1\nfunc @main(%\"x: f32[2]) -> (f32[2]) {\n  return %x\n}\n",
	};
	static const char *const bad_msgs[] = {"unterminated quoted name", "empty quoted name", "unterminated quoted name"};
	for (int i = 0; i < 3; i++) {
		sn_err eb = {0};
		g = NULL;
		CHECK(sir_parse(bad_names[i], strlen(bad_names[i]), "t.sir", NULL, 0, &g, &eb) == SN_EINPUT);
		CHECK(g == NULL && strstr(eb.msg, bad_msgs[i]) != NULL);
	}
	/* a bad enum value names the choices */
	const char *bad = "sinter 1\nfunc @main(%x: f32[2], %i: i64[1], %u: f32[1]) -> (f32[2]) {\n"
			  "  %s = scatter_elements(%x, %i, %u) reduction=sum\n  return %s\n}\n";
	sn_err e2 = {0};
	CHECK(sir_parse(bad, strlen(bad), "t.sir", NULL, 0, &g, &e2) != SN_OK);
	CHECK(strstr(e2.msg, "none, add, mul, max or min") != NULL);
}

int main(void)
{
	test_structure();
	test_bindings();
	test_consts();
	test_errors();
	test_printer_names();
	test_attr_text();
	return check_done("parse");
}
