/* test_memplan.c: the memory planner. Hand-built graphs whose peak is
 * worked out by hand (a chain reuses, a diamond keeps both branches live,
 * views extend their root's life, outputs live to the end), then random
 * graphs checked for the planner's promises: no two buffers live at the
 * same time share a byte, every operand is live when read, offsets are
 * aligned, and the peak lies between the most bytes live at one time and
 * the sum of all buffers. */
#include "check.h"
#include "codegen/cg.h"
#include "passes/memplan.h"

#include <stdio.h>
#include <stdlib.h>

static sn_err err;

static ir_ref un(ir_graph *g, ir_op op, ir_ref a)
{
	return ir_add(g, op, &a, 1, NULL, &err);
}

static ir_ref bin(ir_graph *g, ir_op op, ir_ref a, ir_ref b)
{
	ir_ref v[2] = {a, b};
	return ir_add(g, op, v, 2, NULL, &err);
}

static ir_ref reshape(ir_graph *g, ir_ref a, int rank, const int64_t *d)
{
	ir_attrs at;
	ir_attrs_init(IR_OP_reshape, &at);
	at.shape.n = rank;
	for (int i = 0; i < rank; i++)
		at.shape.v[i] = d[i];
	return ir_add(g, IR_OP_reshape, &a, 1, &at, &err);
}

/* 256 f32 = 1024 bytes per value throughout */
static const ir_shape S256 = {1, {256}};

static void test_chain(void)
{
	/* x -> a -> b -> c -> d: live a[1,2] b[2,3] c[3,4] d[4,end]; two
	 * buffers suffice, c reuses a's and d reuses b's: peak 2048 */
	ir_graph *g = ir_graph_new();
	ir_ref x = ir_add_input(g, "x", IR_F32, &S256, &err);
	ir_ref a = un(g, IR_OP_exp, x), b = un(g, IR_OP_exp, a), c = un(g, IR_OP_exp, b), d = un(g, IR_OP_exp, c);
	ir_add_output(g, d);
	mp_plan_t p;
	CHECK(mp_plan(g, cg_is_alias, 256, &p, &err) == SN_OK);
	CHECK(p.peak == 2048);
	CHECK(p.offset[x] == MP_NONE && p.size[x] == 0);
	CHECK(p.size[a] == 1024 && p.size[d] == 1024);
	CHECK(p.offset[a] != p.offset[b]);
	CHECK(p.offset[c] == p.offset[a]);
	CHECK(p.offset[d] == p.offset[b]);
	CHECK(p.first[b] == b && p.last[b] == c);
	CHECK(p.last[d] == g->nnodes);
	mp_plan_free(&p);
	ir_graph_free(g);
}

static void test_diamond(void)
{
	/* a feeds b and c, which d joins: at node c, a, b and c are live:
	 * peak 3072; d reuses a's bytes (a died at c) */
	ir_graph *g = ir_graph_new();
	ir_ref x = ir_add_input(g, "x", IR_F32, &S256, &err);
	ir_ref a = un(g, IR_OP_exp, x), b = un(g, IR_OP_neg, a), c = un(g, IR_OP_abs, a);
	ir_ref d = bin(g, IR_OP_add, b, c);
	ir_add_output(g, d);
	mp_plan_t p;
	CHECK(mp_plan(g, cg_is_alias, 256, &p, &err) == SN_OK);
	CHECK(p.peak == 3072);
	CHECK(p.offset[a] != p.offset[b] && p.offset[a] != p.offset[c] && p.offset[b] != p.offset[c]);
	CHECK(p.offset[d] == p.offset[a]);
	CHECK(p.last[a] == c);
	mp_plan_free(&p);
	ir_graph_free(g);
}

static void test_alias(void)
{
	/* r = reshape(a) is a view: it shares a's bytes, and c reading r
	 * keeps a alive until c: a[1,5], b[4,5], c[5,end]: peak 3072.
	 * Without the extension a would die at node 2 and c could take its
	 * bytes, which would corrupt r while c reads it. */
	ir_graph *g = ir_graph_new();
	ir_shape s2 = {2, {2, 128}};
	ir_ref x2 = ir_add_input(g, "x2", IR_F32, &s2, &err);
	ir_ref a = un(g, IR_OP_exp, x2);
	ir_ref r = reshape(g, a, 1, (int64_t[]){256});
	ir_ref x = ir_add_input(g, "x", IR_F32, &S256, &err);
	ir_ref b = un(g, IR_OP_exp, x);
	ir_ref c = bin(g, IR_OP_add, r, b);
	/* a view of a graph input lives outside the arena */
	ir_ref rx = reshape(g, x, 2, (int64_t[]){16, 16});
	ir_ref e = un(g, IR_OP_neg, rx);
	ir_add_output(g, c);
	ir_add_output(g, e);
	CHECK(e != IR_NONE);
	mp_plan_t p;
	CHECK(mp_plan(g, cg_is_alias, 256, &p, &err) == SN_OK);
	CHECK(p.root[r] == a && p.offset[r] == p.offset[a] && p.size[r] == 0);
	CHECK(p.last[a] == c);
	CHECK(p.offset[c] != p.offset[a] && p.offset[c] != p.offset[b] && p.offset[a] != p.offset[b]);
	CHECK(p.root[rx] == x && p.offset[rx] == MP_NONE);
	/* e [7,end] and c [5,end] are outputs; a and b are dead by then, so
	 * e reuses one of them: peak is still 3 buffers */
	CHECK(p.peak == 3072);
	CHECK(p.offset[e] != p.offset[c]);
	mp_plan_free(&p);

	/* with no alias predicate, the reshape is a copy with its own bytes:
	 * a[1,2], r[2,5]: a dies at r */
	CHECK(mp_plan(g, NULL, 256, &p, &err) == SN_OK);
	CHECK(p.root[r] == r && p.size[r] == 1024 && p.last[a] == r);
	mp_plan_free(&p);
	ir_graph_free(g);
}

static void test_outputs_live(void)
{
	/* a is an output: it lives to the end, so c cannot reuse it: a[1,end],
	 * b[2,3], c[3,end]: peak 3072 (2048 if a could die at b) */
	ir_graph *g = ir_graph_new();
	ir_ref x = ir_add_input(g, "x", IR_F32, &S256, &err);
	ir_ref a = un(g, IR_OP_exp, x), b = un(g, IR_OP_exp, a), c = un(g, IR_OP_exp, b);
	ir_add_output(g, a);
	ir_add_output(g, c);
	mp_plan_t p;
	CHECK(mp_plan(g, cg_is_alias, 256, &p, &err) == SN_OK);
	CHECK(p.peak == 3072);
	CHECK(p.last[a] == g->nnodes);
	CHECK(p.offset[c] != p.offset[a]);
	mp_plan_free(&p);
	ir_graph_free(g);
}

static void test_sizes_and_errors(void)
{
	/* 3 f32 = 12 bytes round up to 256; the f16 cast of 600 elements is
	 * 1200 bytes, 1280 aligned. Largest first: h (1280) at 0, then a. */
	ir_graph *g = ir_graph_new();
	ir_shape s3 = {1, {3}}, s600 = {1, {600}};
	ir_ref x = ir_add_input(g, "x", IR_F32, &s3, &err);
	ir_ref y = ir_add_input(g, "y", IR_F32, &s600, &err);
	ir_ref a = un(g, IR_OP_exp, x);
	ir_attrs at;
	ir_attrs_init(IR_OP_cast, &at);
	at.dtype = IR_F16;
	ir_ref h = ir_add(g, IR_OP_cast, &y, 1, &at, &err);
	ir_add_output(g, a);
	ir_add_output(g, h);
	mp_plan_t p;
	CHECK(mp_plan(g, cg_is_alias, 256, &p, &err) == SN_OK);
	CHECK(p.size[a] == 256 && p.size[h] == 1280);
	CHECK(p.offset[h] == 0 && p.offset[a] == 1280 && p.peak == 1536);
	mp_plan_free(&p);
	/* align 1: exact sizes */
	CHECK(mp_plan(g, cg_is_alias, 0, &p, &err) == SN_OK);
	CHECK(p.size[a] == 12 && p.peak == 1212);
	mp_plan_free(&p);

	sn_err e = {0};
	CHECK(mp_plan(g, cg_is_alias, 48, &p, &e) == SN_EINPUT);
	CHECK_STR(e.msg, "memplan: alignment 48 is not a power of two");
	CHECK(p.offset == NULL);
	ir_graph_free(g);

	g = ir_graph_new();
	int n = ir_sym(g, "N", 1);
	ir_shape ss = {1, {IR_SYM(n)}};
	x = ir_add_input(g, "x", IR_F32, &ss, &err);
	a = un(g, IR_OP_exp, x);
	e = (sn_err){0};
	CHECK(mp_plan(g, cg_is_alias, 256, &p, &e) == SN_EINPUT);
	char want[128];
	snprintf(want, sizeof want, "memplan: node %u (exp) has unbound symbols in its shape", a);
	CHECK_STR(e.msg, want);
	ir_graph_free(g);
}

/* ---- random graphs ---- */

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* Values are [k] or [1,k] for k in a few sizes; ops: exp, cast (other
 * byte sizes), add of two values of the same k, reshape views. */
static ir_graph *random_graph(void)
{
	static const int64_t ks[] = {8, 64, 100, 1000};
	ir_graph *g = ir_graph_new();
	uint32_t nin = 1 + rnd(3), total = 8 + rnd(40);
	for (uint32_t i = 0; i < nin; i++) {
		char nm[16];
		snprintf(nm, sizeof nm, "x%u", i);
		ir_shape s = {1, {ks[rnd(4)]}};
		ir_add_input(g, nm, IR_F32, &s, &err);
	}
	while (g->nnodes < total) {
		ir_ref a = rnd(g->nnodes);
		const ir_node *na = &g->nodes[a];
		int64_t k = na->shape.d[na->shape.rank - 1];
		switch (rnd(4)) {
		case 0: un(g, na->dtype == IR_F32 ? IR_OP_exp : IR_OP_neg, a); break;
		case 1: {
			ir_attrs at;
			ir_attrs_init(IR_OP_cast, &at);
			at.dtype = na->dtype == IR_F32 ? IR_F16 : IR_F32;
			ir_add(g, IR_OP_cast, &a, 1, &at, &err);
			break;
		}
		case 2: {
			ir_ref b = IR_NONE; /* a partner with the same k and dtype */
			for (uint32_t t = 0; t < 8 && b == IR_NONE; t++) {
				ir_ref c = rnd(g->nnodes);
				const ir_node *nc = &g->nodes[c];
				if (nc->dtype == na->dtype && nc->shape.d[nc->shape.rank - 1] == k)
					b = c;
			}
			bin(g, IR_OP_add, a, b == IR_NONE ? a : b);
			break;
		}
		default:
			if (na->shape.rank == 1)
				reshape(g, a, 2, (int64_t[]){1, k});
			else
				reshape(g, a, 1, (int64_t[]){k});
			break;
		}
	}
	ir_add_output(g, g->nnodes - 1);
	for (uint32_t i = 0; i < 2; i++)
		ir_add_output(g, rnd(g->nnodes));
	return g;
}

static void test_random(void)
{
	int bad_overlap = 0, bad_live = 0, bad_align = 0, bad_peak = 0, reused = 0, views = 0;
	for (int iter = 0; iter < 300; iter++) {
		ir_graph *g = random_graph();
		if (err.code) {
			fprintf(stderr, "builder: %s\n", err.msg);
			CHECK(err.code == SN_OK);
			ir_graph_free(g);
			return;
		}
		mp_plan_t p;
		size_t align = (size_t)1 << rnd(9);
		CHECK(mp_plan(g, cg_is_alias, align, &p, &err) == SN_OK);
		uint32_t n = g->nnodes;
		size_t sum = 0, most = 0;
		for (uint32_t i = 0; i < n; i++) {
			if (p.root[i] != i || p.offset[i] == MP_NONE)
				continue;
			sum += p.size[i];
			if (p.offset[i] % align)
				bad_align++;
			if (p.offset[i] + p.size[i] > p.peak)
				bad_peak++;
			for (uint32_t j = i + 1; j < n; j++) {
				if (p.root[j] != j || p.offset[j] == MP_NONE)
					continue;
				bool live = p.first[i] <= p.last[j] && p.first[j] <= p.last[i];
				bool overlap = p.offset[i] < p.offset[j] + p.size[j] && p.offset[j] < p.offset[i] + p.size[i];
				if (live && overlap)
					bad_overlap++;
			}
		}
		/* every operand (through views) is live when its reader runs;
		 * outputs to the end */
		for (uint32_t j = 0; j < n; j++)
			for (uint32_t k = 0; k < g->nodes[j].nin; k++) {
				ir_ref r = p.root[g->nodes[j].in[k]];
				if (p.offset[r] != MP_NONE && !(p.first[r] <= j && j <= p.last[r]))
					bad_live++;
			}
		for (uint32_t k = 0; k < g->noutputs; k++) {
			ir_ref r = p.root[g->outputs[k]];
			if (p.offset[r] != MP_NONE && p.last[r] != n)
				bad_live++;
		}
		/* the bytes live at any one time bound the peak from below */
		for (uint32_t t = 0; t <= n; t++) {
			size_t at = 0;
			for (uint32_t i = 0; i < n; i++)
				if (p.root[i] == i && p.offset[i] != MP_NONE && p.first[i] <= t && t <= p.last[i])
					at += p.size[i];
			if (at > most)
				most = at;
		}
		if (p.peak < most || p.peak > sum)
			bad_peak++;
		reused += p.peak < sum;
		for (uint32_t i = 0; i < n; i++)
			views += p.root[i] != i;
		mp_plan_free(&p);
		ir_graph_free(g);
	}
	CHECK(bad_overlap == 0);
	CHECK(bad_live == 0);
	CHECK(bad_align == 0);
	CHECK(bad_peak == 0);
	/* the graphs exercise what is promised: reuse happens, views occur */
	CHECK(reused > 100);
	CHECK(views > 100);
}

int main(void)
{
	test_chain();
	test_diamond();
	test_alias();
	test_outputs_live();
	test_sizes_and_errors();
	test_random();
	return check_done("memplan");
}
