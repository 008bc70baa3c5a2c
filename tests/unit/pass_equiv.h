/* pass_equiv.h: numeric equivalence of a graph before and after passes, on
 * the reference interpreter. Header-only (static functions): include it in
 * a unit test. Graphs must be concrete (bind symbols when parsing).
 *
 *   equiv_fill_params(g, ws, seed)  random values for every param of g that
 *       ws lacks: uniform in [-1, 1] scaled by 1/sqrt(fan in) for rank >= 2
 *       (fan in = numel / dim 0), uniform in [-1, 1] for vectors, and in
 *       [0.5, 1.5] for batch_norm weights and variances;
 *   equiv_check(before, after, ws, tol, label)  runs both graphs with the
 *       same fresh random inputs (matched by position: floats uniform in
 *       [-1, 1], integers in [0, 4), bools 0/1) and params from ws
 *       (converted to each param's dtype), and checks that every output's
 *       relative L2 error ||after - before|| / ||before|| is <= tol. Prints
 *       one line; returns whether it holds. */
#ifndef SINTER_PASS_EQUIV_H
#define SINTER_PASS_EQUIV_H

#include "ir/ir.h"
#include "ir/wstore.h"
#include "ir/ref/ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t equiv_rng_next(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double equiv_rng_unit(uint64_t *s)
{
	return (double)(equiv_rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* Fills t (allocated here) with random values of its dtype in [lo, hi)
 * (integers: [0, 4); bools: 0/1). */
static bool equiv_random_tensor(ir_tensor *t, ir_dtype dt, const ir_shape *s, double lo, double hi,
				uint64_t *rng)
{
	int64_t n = ir_numel(s);
	if (n < 0)
		return false;
	t->dtype = dt;
	t->shape = *s;
	t->nbytes = (size_t)n * ir_dtype_size(dt);
	t->data = malloc(t->nbytes ? t->nbytes : 1);
	if (!t->data)
		return false;
	for (int64_t i = 0; i < n; i++) {
		double u = equiv_rng_unit(rng), v;
		if (dt == IR_BOOL)
			v = u < 0.5 ? 0 : 1;
		else if (!ir_dtype_is_float(dt))
			v = floor(u * 4);
		else
			v = lo + (hi - lo) * u;
		ir_store(dt, t->data, (size_t)i, v);
	}
	return true;
}

static void equiv_fill_params(const ir_graph *g, ir_wstore *ws, uint64_t seed)
{
	uint64_t rng = seed;
	bool *positive = calloc(g->nnodes ? g->nnodes : 1, sizeof *positive);
	if (!positive)
		return;
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].op == IR_OP_batch_norm) {
			positive[g->nodes[i].in[1]] = true;
			positive[g->nodes[i].in[4]] = true;
		}
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		if (n->op != IR_OP_param || !n->pname || ir_ws_get(ws, n->pname))
			continue;
		double lo = -1, hi = 1;
		if (positive[i]) {
			lo = 0.5, hi = 1.5;
		} else if (n->shape.rank >= 2 && n->shape.d[0] > 0) {
			double fan = (double)ir_numel(&n->shape) / (double)n->shape.d[0];
			lo = -1 / sqrt(fan), hi = 1 / sqrt(fan);
		}
		ir_tensor t;
		sn_err e = {0};
		if (!equiv_random_tensor(&t, n->dtype, &n->shape, lo, hi, &rng) ||
		    ir_ws_put(ws, n->pname, t, &e) != SN_OK)
			fprintf(stderr, "equiv_fill_params: cannot fill %s: %s\n", n->pname, e.msg);
	}
	free(positive);
}

/* vals for g: params read from ws as their dtype, inputs copied (converted)
 * from ins. Every entry owns its data. */
static ir_tensor *equiv_vals(const ir_graph *g, ir_wstore *ws, const ir_tensor *ins, sn_err *e)
{
	ir_tensor *v = calloc(g->nnodes ? g->nnodes : 1, sizeof *v);
	if (!v) {
		sn_errf(e, SN_EINTERNAL, "out of memory");
		return NULL;
	}
	for (uint32_t i = 0; i < g->nnodes && !e->code; i++) {
		const ir_node *n = &g->nodes[i];
		v[i].dtype = n->dtype;
		v[i].shape = n->shape;
		if (n->op != IR_OP_param)
			continue;
		int64_t k = ir_numel(&n->shape);
		if (k < 0) {
			sn_errf(e, SN_EINPUT, "param %s has a symbolic shape", n->pname);
			break;
		}
		v[i].nbytes = (size_t)k * ir_dtype_size(n->dtype);
		if (!(v[i].data = malloc(v[i].nbytes ? v[i].nbytes : 1)))
			sn_errf(e, SN_EINTERNAL, "out of memory");
		else
			ir_ws_read_as(ws, n->pname, n->dtype, &n->shape, v[i].data, e);
	}
	for (uint32_t k = 0; k < g->ninputs && !e->code; k++) {
		const ir_node *n = &g->nodes[g->inputs[k]];
		ir_tensor *t = &v[g->inputs[k]];
		if (!ir_shape_eq(&n->shape, &ins[k].shape)) {
			sn_errf(e, SN_EINPUT, "input %u has another shape after the passes", k);
			break;
		}
		int64_t cnt = ir_numel(&n->shape);
		t->nbytes = (size_t)cnt * ir_dtype_size(n->dtype);
		if (!(t->data = malloc(t->nbytes ? t->nbytes : 1))) {
			sn_errf(e, SN_EINTERNAL, "out of memory");
			break;
		}
		for (int64_t j = 0; j < cnt; j++)
			ir_store(n->dtype, t->data, (size_t)j, ir_load(ins[k].dtype, ins[k].data, (size_t)j));
	}
	if (e->code) {
		for (uint32_t i = 0; i < g->nnodes; i++)
			free(v[i].data);
		free(v);
		return NULL;
	}
	return v;
}

static bool equiv_run(const ir_graph *g, ir_wstore *ws, const ir_tensor *ins, ir_tensor *outs, sn_err *e)
{
	ir_tensor *v = equiv_vals(g, ws, ins, e);
	if (!v)
		return false;
	int rc = ref_run(g, v, outs, e);
	for (uint32_t i = 0; i < g->nnodes; i++)
		free(v[i].data);
	free(v);
	return rc == SN_OK;
}

static bool equiv_check(const ir_graph *before, const ir_graph *after, ir_wstore *ws, double tol,
			const char *label)
{
	uint64_t rng = UINT64_C(0x5eed) ^ (uint64_t)before->nnodes;
	sn_err e = {0};
	bool ok = false;
	double worst = 0;
	ir_tensor *ins = calloc(before->ninputs + 1, sizeof *ins);
	ir_tensor *o1 = calloc(before->noutputs + 1, sizeof *o1);
	ir_tensor *o2 = calloc(after->noutputs + 1, sizeof *o2);
	bool ran1 = false, ran2 = false;
	if (!ins || !o1 || !o2) {
		sn_errf(&e, SN_EINTERNAL, "out of memory");
		goto done;
	}
	if (before->ninputs != after->ninputs || before->noutputs != after->noutputs) {
		sn_errf(&e, SN_EINPUT, "inputs %u -> %u, outputs %u -> %u", before->ninputs, after->ninputs,
			before->noutputs, after->noutputs);
		goto done;
	}
	for (uint32_t k = 0; k < before->ninputs; k++) {
		const ir_node *n = &before->nodes[before->inputs[k]];
		if (!equiv_random_tensor(&ins[k], n->dtype, &n->shape, -1, 1, &rng)) {
			sn_errf(&e, SN_EINPUT, "input %u: symbolic shape or out of memory", k);
			goto done;
		}
	}
	if (!(ran1 = equiv_run(before, ws, ins, o1, &e)) || !(ran2 = equiv_run(after, ws, ins, o2, &e)))
		goto done;
	ok = true;
	for (uint32_t k = 0; k < before->noutputs; k++) {
		if (!ir_shape_eq(&o1[k].shape, &o2[k].shape)) {
			sn_errf(&e, SN_EINPUT, "output %u changed shape", k);
			ok = false;
			break;
		}
		int64_t n = ir_numel(&o1[k].shape);
		double num = 0, den = 0;
		bool nan_ok = true;
		for (int64_t i = 0; i < n; i++) {
			double a = ir_load(o1[k].dtype, o1[k].data, (size_t)i);
			double b = ir_load(o2[k].dtype, o2[k].data, (size_t)i);
			if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) {
				nan_ok &= (isnan(a) && isnan(b)) || a == b;
				continue;
			}
			num += (a - b) * (a - b);
			den += a * a;
		}
		double rel = den > 0 ? sqrt(num / den) : sqrt(num);
		if (!nan_ok)
			rel = INFINITY;
		worst = rel > worst ? rel : worst;
		ok &= rel <= tol;
	}
done:
	if (e.code)
		printf("equiv %s: FAILED: %s\n", label, e.msg);
	else
		printf("equiv %s: %u output%s, worst relative L2 %.3g (tol %g) %s\n", label, before->noutputs,
		       before->noutputs == 1 ? "" : "s", worst, tol, ok ? "ok" : "FAILED");
	for (uint32_t k = 0; ins && k < before->ninputs; k++)
		free(ins[k].data);
	for (uint32_t k = 0; ran1 && k < before->noutputs; k++)
		free(o1[k].data);
	for (uint32_t k = 0; ran2 && k < after->noutputs; k++)
		free(o2[k].data);
	free(ins);
	free(o1);
	free(o2);
	return ok && !e.code;
}

#endif
