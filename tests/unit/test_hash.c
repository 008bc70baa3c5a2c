/* test_hash.c: the structural hash ignores value names, param keys, the
 * function name and the weights file, and changes with any one change of
 * an attribute, a dim, a dtype, operand order, a const value, the output
 * order or a symbol name. */
#include "ir/ir.h"
#include "check.h"

enum variant {
	BASE, NAMES, KEYS, ATTR, DIM, DTYPE, OPERANDS, CONSTVAL, OUTPUTS, SYMBOL, FLOATATTR, NVARIANTS
};
static const char *const vname[] = {
	"base", "names", "keys", "attr", "dim", "dtype", "operands", "constval", "outputs", "symbol", "floatattr",
};

/* x: T[N,3,8,W] -> conv2d(x, w, b) stride s -> y; z = sub(y, c) with a
 * const c: T[1,4,1,1]; softmax(z) and y are the outputs. */
static ir_graph *build(enum variant v)
{
	sn_err e = {0};
	ir_graph *g = ir_graph_new();
	ir_dtype t = v == DTYPE ? IR_F16 : IR_F32;
	int64_t n = IR_SYM(ir_sym(g, v == SYMBOL ? "B" : "N", 1));
	ir_shape xs = {4, {n, 3, 8, v == DIM ? 9 : 8}}, ws = {4, {4, 3, 3, 3}}, bs = {1, {4}}, cs = {4, {1, 4, 1, 1}};
	uint16_t ch[4] = {0x3c00, 0x4000, 0x4200, 0x4400}; /* f16 1, 2, 3, 4 */
	float cf[4] = {1, 2, 3, v == CONSTVAL ? 5.0f : 4.0f};
	bool named = v == NAMES;
	ir_ref x = ir_add_input(g, named ? "image" : "x", t, &xs, &e);
	ir_ref w = ir_add_param(g, v == KEYS ? "features.0.weight" : "conv.weight", t, &ws, &e);
	ir_ref b = ir_add_param(g, v == KEYS ? "features.0.bias" : "conv.bias", t, &bs, &e);
	ir_attrs a;
	ir_attrs_init(IR_OP_conv2d, &a);
	a.stride = (ir_ints){2, {1, v == ATTR ? 2 : 1}};
	ir_ref y = ir_add(g, IR_OP_conv2d, (ir_ref[]){x, w, b}, 3, &a, &e);
	ir_set_name(g, y, named ? "conv_out" : "y");
	ir_ref c = ir_add_const(g, t, &cs, t == IR_F16 ? (const void *)ch : (const void *)cf, &e);
	ir_set_name(g, c, named ? "k" : NULL);
	ir_ref z = ir_add(g, IR_OP_sub, v == OPERANDS ? (ir_ref[]){c, y} : (ir_ref[]){y, c}, 2, NULL, &e);
	ir_attrs_init(IR_OP_softmax, &a);
	a.axis = 1;
	ir_ref s = ir_add(g, IR_OP_softmax, &z, 1, &a, &e);
	ir_set_name(g, s, named ? "probs" : "s");
	if (v == FLOATATTR) {
		ir_attrs_init(IR_OP_clamp, &a);
		a.min = 0;
		s = ir_add(g, IR_OP_clamp, &s, 1, &a, &e);
	} else {
		ir_attrs_init(IR_OP_clamp, &a);
		s = ir_add(g, IR_OP_clamp, &s, 1, &a, &e);
	}
	ir_add_output(g, v == OUTPUTS ? y : s);
	ir_add_output(g, v == OUTPUTS ? s : y);
	if (named) {
		g->func = "forward";
		g->weights = "other.safetensors";
	} else {
		g->weights = "model.safetensors";
	}
	if (e.code)
		fprintf(stderr, "%s: test setup: %s\n", vname[v], e.msg);
	CHECK(e.code == SN_OK);
	CHECK(ir_verify(g, &e) == SN_OK);
	return g;
}

static void hash_of(enum variant v, uint8_t out[16])
{
	ir_graph *g = build(v);
	ir_hash(g, out);
	ir_graph_free(g);
}

int main(void)
{
	uint8_t h[NVARIANTS][16], again[16];
	for (int v = 0; v < NVARIANTS; v++)
		hash_of((enum variant)v, h[v]);

	/* deterministic, and a deep copy hashes the same */
	hash_of(BASE, again);
	CHECK(memcmp(h[BASE], again, 16) == 0);
	ir_graph *g = build(BASE);
	sn_err e = {0};
	ir_graph *c = ir_graph_clone(g, &e);
	ir_hash(c, again);
	CHECK(memcmp(h[BASE], again, 16) == 0);
	/* a value name or param key changed in place: same hash */
	ir_set_name(c, 0, "renamed");
	c->nodes[1].pname = "elsewhere";
	ir_hash(c, again);
	CHECK(memcmp(h[BASE], again, 16) == 0);
	/* a disallowed attribute is not hashed (the verifier rejects it) */
	c->nodes[g->nnodes - 1].attrs->axis = 3;
	ir_hash(c, again);
	CHECK(memcmp(h[BASE], again, 16) == 0);
	ir_graph_free(c);
	ir_graph_free(g);

	/* not covered: value names, param keys, function name, weights file */
	CHECK(memcmp(h[BASE], h[NAMES], 16) == 0);
	CHECK(memcmp(h[BASE], h[KEYS], 16) == 0);
	/* covered: each of the others differs from the base and from each other */
	for (int v = ATTR; v < NVARIANTS; v++) {
		check_count++;
		if (memcmp(h[BASE], h[v], 16) == 0) {
			fprintf(stderr, "%s:%d: variant %s hashes like the base\n", __FILE__, __LINE__, vname[v]);
			check_failures++;
		}
		for (int u = ATTR; u < v; u++)
			CHECK(memcmp(h[u], h[v], 16) != 0);
	}
	/* the hash is not degenerate: bytes vary */
	int distinct = 0;
	for (int i = 1; i < 16; i++)
		distinct += h[BASE][i] != h[BASE][0];
	CHECK(distinct > 0);
	return check_done("hash");
}
