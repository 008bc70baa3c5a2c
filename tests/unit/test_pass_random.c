/* test_pass_random.c: random valid graphs (seeded) through canonicalize
 * and through canonicalize,layout. Each graph mixes elementwise ops with
 * broadcasting, the identities the rules look for (x+0, x*1, neg neg,
 * transpose and reshape chains, casts, identity slices/pads/expands,
 * concat of one), constant subgraphs, duplicates for CSE, dead values,
 * reductions, softmax, matmul, conv2d, concat, slice, pad and expand. The
 * builder checks every node, so only valid graphs are built. Every result
 * must verify and be equivalent to its input on the reference interpreter
 * within 1e-5 relative L2. Usage: test_pass_random [COUNT [FIRST_SEED [print]]]
 * (print: each input graph and its canonical form on stderr). */
#include "check.h"
#include "pass_equiv.h"
#include "passes/pass.h"

#include <stdlib.h>
#include <string.h>

typedef struct gen {
	ir_graph *g;
	uint64_t rng;
	ir_ref pool[256];
	int n;
	int nparams;
	ir_ref zero, one;
	bool dep[4096]; /* by node id: depends on a graph input */
} gen;

static int rnd(gen *s, int n)
{
	return (int)(equiv_rng_next(&s->rng) % (uint64_t)n);
}

static ir_ref pick(gen *s)
{
	/* Prefer recent values so chains form, and values that depend on the
	 * inputs so that little is constant or dead. */
	ir_ref r = IR_NONE;
	for (int t = 0; t < 4; t++) {
		int k = rnd(s, 3) ? s->n - 1 - rnd(s, s->n < 4 ? s->n : 4) : rnd(s, s->n);
		r = s->pool[k];
		if (r < SN_COUNT(s->dep) && s->dep[r])
			break;
	}
	return r;
}

static const ir_node *node(gen *s, ir_ref r) { return &s->g->nodes[r]; }

static void push(gen *s, ir_ref r)
{
	if (r == IR_NONE || r >= SN_COUNT(s->dep))
		return;
	const ir_node *n = &s->g->nodes[r];
	s->dep[r] = n->op == IR_OP_input;
	for (uint32_t k = 0; k < n->nin; k++)
		s->dep[r] |= s->dep[n->in[k]];
	if (s->n < (int)SN_COUNT(s->pool))
		s->pool[s->n++] = r;
}

/* Adds a node; a combination the builder refuses is simply dropped. */
static ir_ref add(gen *s, ir_op op, const ir_ref *in, uint32_t nin, const ir_attrs *a)
{
	sn_err e = {0};
	ir_ref r = ir_add(s->g, op, in, nin, a, &e);
	push(s, r);
	return r;
}

static ir_ref add1(gen *s, ir_op op, ir_ref x, const ir_attrs *a) { return add(s, op, &x, 1, a); }
static ir_ref add2(gen *s, ir_op op, ir_ref x, ir_ref y) { return add(s, op, (ir_ref[]){x, y}, 2, NULL); }

static ir_ref rand_const(gen *s, const ir_shape *sh, double fill)
{
	int64_t n = ir_numel(sh);
	float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
	if (!v)
		return IR_NONE;
	for (int64_t i = 0; i < n; i++)
		v[i] = fill == fill ? (float)fill : (float)(equiv_rng_unit(&s->rng) * 2 - 0.9);
	sn_err e = {0};
	ir_ref r = ir_add_const(s->g, IR_F32, sh, v, &e);
	free(v);
	return r;
}

static ir_ref new_param(gen *s, const ir_shape *sh)
{
	char key[32];
	snprintf(key, sizeof key, "p%d", s->nparams++);
	sn_err e = {0};
	return ir_add_param(s->g, key, IR_F32, sh, &e);
}

/* A shape x broadcasts against: a suffix of x's with some dims set to 1. */
static ir_shape bshape(gen *s, const ir_shape *x)
{
	ir_shape b = {0};
	b.rank = x->rank ? rnd(s, x->rank + 1) : 0;
	for (int i = 0; i < b.rank; i++)
		b.d[i] = rnd(s, 3) ? x->d[x->rank - b.rank + i] : 1;
	return b;
}

static void step(gen *s)
{
	ir_ref x = pick(s);
	const ir_shape xs = node(s, x)->shape;
	int rank = xs.rank;
	ir_attrs a;
	static const ir_op un[] = {IR_OP_neg, IR_OP_abs, IR_OP_tanh, IR_OP_sigmoid, IR_OP_relu, IR_OP_exp};
	static const ir_op bin[] = {IR_OP_add, IR_OP_sub, IR_OP_mul, IR_OP_max, IR_OP_min};
	switch (rnd(s, 20)) {
	case 0: add1(s, un[rnd(s, 6)], node(s, x)->op == IR_OP_exp ? add1(s, IR_OP_tanh, x, NULL) : x, NULL); break;
	case 1: add2(s, bin[rnd(s, 5)], x, pick(s)); break;
	case 2: {
		ir_shape b = bshape(s, &xs);
		ir_ref y = rnd(s, 2) ? rand_const(s, &b, NAN) : new_param(s, &b);
		if (rnd(s, 2))
			add2(s, bin[rnd(s, 5)], x, y);
		else
			add2(s, bin[rnd(s, 5)], y, x);
		break;
	}
	case 3: { /* identities, sometimes with a broadcasting identity const */
		ir_shape b = bshape(s, &xs);
		if (rnd(s, 3) == 0)
			b.rank = rank + 1, b.d[rank] = 0, memmove(b.d + 1, xs.d, sizeof(int64_t) * (size_t)rank), b.d[0] = 2;
		int k = rnd(s, 4);
		ir_ref c = rnd(s, 2) ? rand_const(s, &b, k % 2 ? 1 : 0) : (k % 2 ? s->one : s->zero);
		ir_op op = (ir_op[]){IR_OP_add, IR_OP_mul, IR_OP_sub, IR_OP_div}[k];
		if (k < 2 && rnd(s, 2))
			add2(s, op, c, x);
		else
			add2(s, op, x, c);
		break;
	}
	case 4: if (rank > 0) {
		static const ir_op red[] = {IR_OP_reduce_sum, IR_OP_reduce_mean, IR_OP_reduce_max};
		ir_attrs_init(red[rnd(s, 3)], &a);
		a.axes.n = 1 + rnd(s, rank);
		for (int i = 0; i < a.axes.n; i++)
			a.axes.v[i] = (i + rnd(s, rank)) % rank; /* may repeat: refused */
		a.keepdims = rnd(s, 2);
		add1(s, red[rnd(s, 3)], x, &a);
		break;
	}
	/* fallthrough */
	case 5: case 6: if (rank > 1) { /* a transpose, sometimes a chain */
		for (int t = 0, nt = 1 + rnd(s, 3); t < nt; t++) {
			ir_attrs_init(IR_OP_transpose, &a);
			a.perm.n = rank;
			for (int i = 0; i < rank; i++)
				a.perm.v[i] = i;
			for (int i = rank - 1; i > 0; i--) {
				int j = rnd(s, i + 1);
				int64_t tmp = a.perm.v[i];
				a.perm.v[i] = a.perm.v[j], a.perm.v[j] = tmp;
			}
			x = add1(s, IR_OP_transpose, x, &a);
			if (x == IR_NONE)
				break;
		}
		break;
	}
	/* fallthrough */
	case 7: { /* views: reshape, flatten, squeeze, unsqueeze, chains */
		for (int t = 0, nt = 1 + rnd(s, 3); t < nt && x != IR_NONE; t++) {
			ir_shape cur = node(s, x)->shape;
			switch (rnd(s, 4)) {
			case 0:
				ir_attrs_init(IR_OP_reshape, &a);
				a.shape.n = cur.rank > 1 ? cur.rank - 1 : 1;
				if (cur.rank > 1) {
					a.shape.v[0] = cur.d[0] * cur.d[1];
					for (int i = 2; i < cur.rank; i++)
						a.shape.v[i - 1] = cur.d[i];
					if (rnd(s, 2))
						a.shape.v[0] = IR_DIM_INFER;
				} else {
					a.shape.v[0] = ir_numel(&cur);
				}
				x = add1(s, IR_OP_reshape, x, &a);
				break;
			case 1:
				ir_attrs_init(IR_OP_flatten, &a);
				a.axis = cur.rank ? rnd(s, cur.rank) : 0;
				x = add1(s, IR_OP_flatten, x, &a);
				break;
			case 2:
				ir_attrs_init(IR_OP_unsqueeze, &a);
				a.axes = (ir_ints){1, {rnd(s, cur.rank + 1)}};
				x = add1(s, IR_OP_unsqueeze, x, &a);
				break;
			default:
				ir_attrs_init(IR_OP_squeeze, &a);
				x = add1(s, IR_OP_squeeze, x, &a);
			}
		}
		break;
	}
	case 8: { /* casts: same dtype, exact and narrowing round trips */
		ir_attrs_init(IR_OP_cast, &a);
		a.dtype = (ir_dtype[]){IR_F32, IR_F16, IR_BF16, IR_F32}[rnd(s, 4)];
		ir_ref m = add1(s, IR_OP_cast, x, &a);
		a.dtype = rnd(s, 4) ? IR_F32 : IR_F16;
		ir_ref y = add1(s, IR_OP_cast, m, &a);
		if (y != IR_NONE && node(s, y)->dtype != IR_F32) {
			a.dtype = IR_F32;
			add1(s, IR_OP_cast, y, &a);
		}
		break;
	}
	case 9: if (rank >= 1) { /* matmul / linear with a param or const weight */
		int64_t k = xs.d[rank - 1], j = 1 + rnd(s, 4);
		ir_shape ws = rnd(s, 2) ? (ir_shape){2, {k, j}} : (ir_shape){2, {j, k}};
		ir_ref w = rnd(s, 3) ? new_param(s, &ws) : rand_const(s, &ws, NAN);
		if (ws.d[0] == k && ws.d[1] == j && rank >= 2)
			add2(s, IR_OP_matmul, x, w);
		else if (ws.d[1] == k)
			add2(s, IR_OP_linear, x, w);
		break;
	}
	/* fallthrough */
	case 10: if (rank == 4) { /* conv2d, NCHW */
		ir_attrs_init(IR_OP_conv2d, &a);
		int64_t kh = 1 + rnd(s, 3 < xs.d[2] ? 3 : (int)xs.d[2]), kw = 1 + rnd(s, 3 < xs.d[3] ? 3 : (int)xs.d[3]);
		int p = rnd(s, 2);
		a.pad = (ir_ints){4, {p, p, p, p}};
		ir_shape ws = {4, {1 + rnd(s, 4), xs.d[1], kh, kw}};
		ir_ref w = new_param(s, &ws);
		if (rnd(s, 2)) {
			ir_shape bs = {1, {ws.d[0]}};
			add(s, IR_OP_conv2d, (ir_ref[]){x, w, new_param(s, &bs)}, 3, &a);
		} else {
			add(s, IR_OP_conv2d, (ir_ref[]){x, w}, 2, &a);
		}
		break;
	}
	/* fallthrough */
	case 11: if (rank == 4 && xs.d[2] >= 2 && xs.d[3] >= 2) { /* pooling */
		ir_attrs_init(IR_OP_max_pool2d, &a);
		a.kernel = (ir_ints){2, {2, 2}};
		add1(s, rnd(s, 2) ? IR_OP_max_pool2d : IR_OP_avg_pool2d, x, &a);
		break;
	}
	/* fallthrough */
	case 12: if (rank > 0) { /* concat */
		ir_attrs_init(IR_OP_concat, &a);
		a.axis = rnd(s, rank);
		int n = 1 + rnd(s, 3);
		ir_ref in[3] = {x, rnd(s, 2) ? x : pick(s), pick(s)};
		add(s, IR_OP_concat, in, (uint32_t)n, &a);
		break;
	}
	/* fallthrough */
	case 13: if (rank > 0) { /* slice: whole or part */
		ir_attrs_init(IR_OP_slice, &a);
		int ax = rnd(s, rank);
		bool whole = rnd(s, 2);
		a.axes = (ir_ints){1, {ax}};
		a.starts = (ir_ints){1, {whole ? 0 : rnd(s, (int)xs.d[ax])}};
		a.ends = (ir_ints){1, {whole ? (rnd(s, 2) ? xs.d[ax] : 1000) : xs.d[ax]}};
		if (!whole && rnd(s, 2))
			a.steps = (ir_ints){1, {2}};
		add1(s, IR_OP_slice, x, &a);
		break;
	}
	/* fallthrough */
	case 14: { /* pad: zeros or real */
		ir_attrs_init(IR_OP_pad, &a);
		a.pad.n = 2 * rank;
		bool real = rnd(s, 2);
		for (int i = 0; i < 2 * rank; i++)
			a.pad.v[i] = real ? rnd(s, 2) : 0;
		a.value = real ? 0.5 : 0;
		add1(s, IR_OP_pad, x, &a);
		break;
	}
	case 15: { /* expand: same shape, or a 1 dim to 3 */
		ir_attrs_init(IR_OP_expand, &a);
		a.shape.n = rank;
		for (int i = 0; i < rank; i++)
			a.shape.v[i] = xs.d[i] == 1 && rnd(s, 2) ? 3 : xs.d[i];
		add1(s, IR_OP_expand, x, &a);
		break;
	}
	case 16: { /* a duplicate of an earlier node (CSE) */
		const ir_node *d = node(s, pick(s));
		if (ir_ops[d->op].kind != IR_K_SOURCE) {
			ir_ref in[8];
			uint32_t n = d->nin < 8 ? d->nin : 8;
			memcpy(in, d->in, n * sizeof *in);
			ir_attrs copy = *d->attrs;
			add(s, d->op, in, n, &copy);
		}
		break;
	}
	case 17: { /* a constant subgraph (folded), used by x */
		ir_shape b = bshape(s, &xs);
		ir_ref c1 = rand_const(s, &b, NAN), c2 = rand_const(s, &b, NAN);
		ir_ref c = add2(s, rnd(s, 2) ? IR_OP_mul : IR_OP_sub, c1, c2);
		if (c != IR_NONE)
			c = add1(s, IR_OP_exp, c, NULL);
		if (c != IR_NONE && b.rank > 0 && rnd(s, 2)) {
			sn_err e = {0};
			ir_ref io = ir_add_iota(s->g, IR_F32, &b, rnd(s, b.rank), &e);
			if (io != IR_NONE)
				c = add2(s, IR_OP_add, c, io);
		}
		if (c != IR_NONE)
			add2(s, IR_OP_mul, x, c);
		break;
	}
	case 18: add1(s, IR_OP_neg, add1(s, IR_OP_neg, x, NULL), NULL); break;
	default: if (rank > 0) {
		ir_attrs_init(IR_OP_softmax, &a);
		a.axis = rnd(s, rank);
		add1(s, IR_OP_softmax, x, &a);
	}
	}
}

static ir_graph *generate(uint64_t seed)
{
	gen s = {.g = ir_graph_new(), .rng = seed * UINT64_C(0x2545f4914f6cdd1d) + 1};
	if (!s.g)
		return NULL;
	s.g->func = sn_strdup(s.g->arena, "main");
	sn_err e = {0};
	int nin = 1 + rnd(&s, 2);
	for (int i = 0; i < nin; i++) {
		ir_shape sh = {0};
		sh.rank = i == 0 && rnd(&s, 2) ? 4 : 1 + rnd(&s, 3);
		for (int d = 0; d < sh.rank; d++)
			sh.d[d] = 1 + rnd(&s, 4);
		char name[16];
		snprintf(name, sizeof name, "in%d", i);
		push(&s, ir_add_input(s.g, name, IR_F32, &sh, &e));
	}
	ir_shape scalar = {0};
	s.zero = rand_const(&s, &scalar, 0);
	s.one = rand_const(&s, &scalar, 1);
	for (int k = 0, n = 8 + rnd(&s, 16); k < n; k++)
		step(&s);
	/* Outputs: the last value and one or two others (maybe the same),
	 * mostly values that depend on the inputs. */
	ir_add_output(s.g, s.pool[s.n - 1]);
	for (int k = 0, n = rnd(&s, 3); k < n; k++)
		ir_add_output(s.g, pick(&s));
	if (e.code || ir_verify(s.g, &e) != SN_OK) {
		fprintf(stderr, "seed %llu: generator made an invalid graph: %s\n", (unsigned long long)seed, e.msg);
		CHECK(0);
	}
	return s.g;
}

static void dump_graph(const ir_graph *g, const char *what)
{
	sn_buf b = {0};
	ir_print(g, &b);
	fprintf(stderr, "%s:\n%s\n", what, b.s ? b.s : "");
	sn_buf_free(&b);
}

/* Runs list on a copy of g: it must verify and agree with g. */
static bool try_list(const ir_graph *g, ir_wstore *ws, const char *list, uint64_t seed, uint32_t *nodes,
		     bool *missing)
{
	sn_err e = {0};
	ir_graph *c = ir_graph_clone(g, &e);
	pass_ctx ctx = {.ws = ws};
	int rc = c ? pass_run_list(&c, list, &ctx, &e) : SN_EINTERNAL;
	if (rc == SN_EUSAGE && strstr(e.msg, "unknown pass")) {
		*missing = true;
		ir_graph_free(c);
		return true;
	}
	bool ok = rc == SN_OK && ir_verify(c, &e) == SN_OK;
	char label[96];
	snprintf(label, sizeof label, "seed %llu %s", (unsigned long long)seed, list);
	if (!ok)
		fprintf(stderr, "%s: %s\n", label, e.msg);
	else
		ok = equiv_check(g, c, ws, 1e-5, label);
	if (!ok) {
		dump_graph(g, "input");
		if (c && rc == SN_OK)
			dump_graph(c, "result");
	}
	if (ok && nodes)
		*nodes += c->nnodes;
	ir_graph_free(c);
	return ok;
}

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 1000;
	uint64_t first = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
	uint32_t before = 0, after = 0, failed = 0;
	bool no_layout = false, print = argc > 3 && strcmp(argv[3], "print") == 0;
	for (uint64_t seed = first; seed < first + (uint64_t)count; seed++) {
		ir_graph *g = generate(seed);
		CHECK(g != NULL);
		if (!g)
			continue;
		ir_wstore *ws = ir_ws_new();
		equiv_fill_params(g, ws, seed);
		before += g->nnodes;
		if (print) {
			sn_err e = {0};
			ir_graph *c = ir_graph_clone(g, &e);
			dump_graph(g, "input");
			if (c && pass_run_list(&c, "canonicalize", NULL, &e) == SN_OK)
				dump_graph(c, "canonicalize");
			ir_graph_free(c);
		}
		bool ok = try_list(g, ws, "canonicalize", seed, &after, &no_layout);
		ok &= try_list(g, ws, "canonicalize,layout", seed, NULL, &no_layout);
		ok &= try_list(g, ws, "layout,canonicalize", seed, NULL, &no_layout);
		CHECK(ok);
		failed += !ok;
		ir_ws_free(ws);
		ir_graph_free(g);
	}
	printf("%d random graphs: %u nodes before canonicalize, %u after; %u failed\n", count, before, after,
	       failed);
	/* The generator plants identities, duplicates and dead values: the
	 * pass must find some of them. */
	CHECK(after < before);
	if (no_layout)
		printf("NOTE: the layout pass is not in pass_table: only canonicalize was checked\n");
	return check_done("pass_random");
}
