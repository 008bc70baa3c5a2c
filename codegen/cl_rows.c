/* cl_rows.c: row kernels and row groups as LLVM IR (the CPU counterpart
 * of cg_norm.c and cg_fuse.c's row groups), with cl_emit.c's element
 * emitter.
 *
 * Row kernels (softmax, log_softmax, layer_norm, rms_norm, reductions over
 * trailing axes): one row per iteration, statistics accumulated in
 * vectors of 8 (LLVM 16's C API sets no fast-math flags, so a scalar
 * reduction would not vectorize), then a scalar tail: sums in double, as
 * the reference interpreter's, max and min in f32, NaN propagating.
 *
 * Row groups (FU_ROWS: a decomposed norm or softmax): one row per
 * iteration too, their members from the element emitter (cl_emit.c), a pass
 * per reduction with the same accumulation rules (emit_row_group). */
#include "codegen/cl_emit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum rkind { R_SUM, R_MAX, R_MIN } rkind;

/* Element i of p (dtype t: f32 or bf16), as f32 or, vec, the <8 x float>
 * from i on. */
static LLVMValueRef ld(cl_emitter *m, ir_dtype t, LLVMValueRef p, LLVMValueRef i, bool vec)
{
	if (t != IR_BF16)
		return cle_loadf(m, vec ? m->v8 : m->f32, cle_gep(m, m->f32, p, i));
	LLVMTypeRef et = LLVMInt16TypeInContext(m->ctx);
	LLVMValueRef v = LLVMBuildLoad2(m->b, vec ? LLVMVectorType(et, VW) : et, cle_gep(m, et, p, i), "");
	LLVMSetAlignment(v, 2);
	return cle_bf16_widen(m, v);
}

/* f32 x stored as element i of p (dtype t), rounded when t is bf16. */
static void st_f(cl_emitter *m, ir_dtype t, LLVMValueRef x, LLVMValueRef p, LLVMValueRef i)
{
	if (t == IR_BF16)
		cle_storef(m, cle_bf16_bits(m, x), cle_gep(m, LLVMInt16TypeInContext(m->ctx), p, i));
	else
		cle_storef(m, x, cle_gep(m, m->f32, p, i));
}

/* The larger (max) or smaller of acc and x, NaN when either is: acc
 * once NaN stays, x NaN is taken (ref_reduce's "NaN sticks"; LLVM's
 * maxnum/minnum would drop it). f32 or v8. */
static LLVMValueRef fmaxp(cl_emitter *m, LLVMValueRef acc, LLVMValueRef x, bool max)
{
	LLVMValueRef take = LLVMBuildFCmp(m->b, max ? LLVMRealUGT : LLVMRealULT, x, acc, "");
	LLVMValueRef r = cle_sel(m, take, x, acc);
	return cle_sel(m, LLVMBuildFCmp(m->b, LLVMRealUNO, acc, acc, ""), acc, r);
}

/* f(x) of a reduction (row_reduce), x f32 or v8 loaded; a double (or
 * <8 x double>) for a sum. */
static LLVMValueRef reduce_term(cl_emitter *m, LLVMValueRef x, bool vec, bool sum, int fx, LLVMValueRef c)
{
	LLVMTypeRef f64 = LLVMDoubleTypeInContext(m->ctx);
	if (fx == 2)
		x = cle_fexp(m, LLVMBuildFSub(m->b, x, c, ""), vec ? m->v8 : m->f32);
	if (sum)
		x = LLVMBuildFPExt(m->b, x, vec ? LLVMVectorType(f64, VW) : f64, "");
	if (fx == 1)
		x = LLVMBuildFSub(m->b, x, c, "");
	if (fx == 1 || fx == 3)
		x = LLVMBuildFMul(m->b, x, x, "");
	return x;
}

#define RU 4 /* accumulators of row_reduce's main loop */

/* A reduction over row p[0..cols) of f(x): RU vectors of 8 at a time into
 * RU accumulators (the loop is then bound by throughput, not by one add's
 * latency), vectors of 8, then a scalar tail. fx: 0 x, 1 (x - c)^2,
 * 2 exp(x - c), 3 x^2. Max and min are f32 (exact, NaN propagating);
 * sums accumulate in double (<8 x double>, as ref_reduce does: a
 * 2^24-element sum of floats in 8 float lanes was far off), the squares
 * of fx 1 and 3 computed in double too (layer_norm of [1e30, -1e30, 0]
 * squares 1e30), and return a double; c is an f32 for fx 2, a double for
 * fx 1. */
static LLVMValueRef row_reduce(cl_emitter *m, LLVMValueRef f, ir_dtype t, LLVMValueRef p, int64_t cols, rkind k, int fx,
			       LLVMValueRef c)
{
	LLVMTypeRef f64 = LLVMDoubleTypeInContext(m->ctx);
	bool sum = k == R_SUM, max = k == R_MAX;
	LLVMTypeRef sty = sum ? f64 : m->f32;
	double init = sum ? 0.0 : max ? -INFINITY : INFINITY;
	int64_t nu = cols / (RU * VW) * (RU * VW), nv = cols / VW * VW;
	LLVMValueRef ie[VW];
	for (int i = 0; i < VW; i++)
		ie[i] = LLVMConstReal(sty, init);
	LLVMValueRef vinit = LLVMConstVector(ie, VW);
	LLVMValueRef vc = NULL;
	if (c) {
		LLVMTypeRef cvt = LLVMVectorType(LLVMTypeOf(c), VW);
		LLVMValueRef u = LLVMGetUndef(cvt);
		vc = LLVMBuildInsertElement(m->b, u, c, LLVMConstInt(m->i32, 0, 0), "");
		vc = LLVMBuildShuffleVector(m->b, vc, u, LLVMConstNull(LLVMVectorType(m->i32, VW)), "");
	}
	/* RU vectors per iteration */
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(m->b);
	loop l;
	cle_loop_begin(m, f, cle_ci(m, 0), cle_ci(m, nu), &l);
	LLVMValueRef acc[RU], nacc[RU];
	for (int j = 0; j < RU; j++)
		acc[j] = cle_carried(m, &l, vinit, pre);
	for (int j = 0; j < RU; j++) {
		LLVMValueRef x = ld(m, t, p, LLVMBuildAdd(m->b, l.iv, cle_ci(m, j * VW), ""), true);
		x = reduce_term(m, x, true, sum, fx, vc);
		nacc[j] = sum ? LLVMBuildFAdd(m->b, acc[j], x, "") : fmaxp(m, acc[j], x, max);
	}
	LLVMBasicBlockRef cur = LLVMGetInsertBlock(m->b);
	for (int j = 0; j < RU; j++)
		LLVMAddIncoming(acc[j], &nacc[j], &cur, 1);
	cle_loop_end(m, &l, RU * VW);
	for (int w = RU / 2; w >= 1; w /= 2)
		for (int j = 0; j < w; j++)
			acc[j] = sum ? LLVMBuildFAdd(m->b, acc[j], acc[j + w], "") : fmaxp(m, acc[j], acc[j + w], max);
	/* the vectors left */
	pre = LLVMGetInsertBlock(m->b);
	loop vl;
	cle_loop_begin(m, f, cle_ci(m, nu), cle_ci(m, nv), &vl);
	LLVMValueRef vacc = cle_carried(m, &vl, acc[0], pre);
	LLVMValueRef x = reduce_term(m, ld(m, t, p, vl.iv, true), true, sum, fx, vc);
	LLVMValueRef nv_acc = sum ? LLVMBuildFAdd(m->b, vacc, x, "") : fmaxp(m, vacc, x, max);
	cur = LLVMGetInsertBlock(m->b);
	LLVMAddIncoming(vacc, &nv_acc, &cur, 1);
	cle_loop_end(m, &vl, VW);
	LLVMValueRef s = LLVMBuildExtractElement(m->b, vacc, LLVMConstInt(m->i32, 0, 0), "");
	for (int i = 1; i < VW; i++) {
		LLVMValueRef e = LLVMBuildExtractElement(m->b, vacc, LLVMConstInt(m->i32, (unsigned)i, 0), "");
		s = sum ? LLVMBuildFAdd(m->b, s, e, "") : fmaxp(m, s, e, max);
	}
	/* the scalar tail */
	pre = LLVMGetInsertBlock(m->b);
	loop tl;
	cle_loop_begin(m, f, cle_ci(m, nv), cle_ci(m, cols), &tl);
	LLVMValueRef sacc = cle_carried(m, &tl, s, pre);
	LLVMValueRef y = reduce_term(m, ld(m, t, p, tl.iv, false), false, sum, fx, c);
	LLVMValueRef ns = sum ? LLVMBuildFAdd(m->b, sacc, y, "") : fmaxp(m, sacc, y, max);
	cur = LLVMGetInsertBlock(m->b);
	LLVMAddIncoming(sacc, &ns, &cur, 1);
	cle_loop_end(m, &tl, 1);
	return sacc;
}

/* A norm, softmax or reduction node over its trailing axes, f32 rows. */
bool cle_emit_rows(cl_emitter *m, const ir_graph *g, ir_ref r, cl_step *st, char **fns, uint32_t *nfns)
{
	const ir_node *n = &g->nodes[r];
	const ir_node *xn = &g->nodes[n->in[0]];
	if (!cle_is_f(n->dtype) || !cle_is_f(xn->dtype))
		return false;
	for (uint32_t k = 1; k < n->nin; k++)
		if (!cle_is_f(g->nodes[n->in[k]].dtype))
			return false;
	ir_dtype xt = xn->dtype, ot = n->dtype;
	ir_dtype wt = n->nin > 1 ? g->nodes[n->in[1]].dtype : IR_F32, bt = n->nin > 2 ? g->nodes[n->in[2]].dtype : IR_F32;
	int R = xn->shape.rank;
	int64_t cols = 1;
	rkind rk = R_SUM;
	bool mean = false;
	switch (n->op) {
	case IR_OP_softmax:
	case IR_OP_log_softmax:
	case IR_OP_layer_norm:
	case IR_OP_rms_norm: {
		int ax = ir_axis(n->attrs->axis, R);
		if (ax != R - 1 || R == 0)
			return false;
		cols = xn->shape.d[R - 1];
		/* layer_norm's weight and bias span the last dim */
		for (uint32_t k = 1; k < n->nin; k++)
			if (ir_numel(&g->nodes[n->in[k]].shape) != cols)
				return false;
		break;
	}
	case IR_OP_reduce_sum:
	case IR_OP_reduce_mean:
	case IR_OP_reduce_max:
	case IR_OP_reduce_min: {
		/* the axes reduced must be the trailing ones */
		bool red[IR_MAX_RANK] = {0};
		const ir_ints *ax = &n->attrs->axes;
		if (ax->n == 0) {
			for (int d = 0; d < R; d++)
				red[d] = true;
		}
		for (int i = 0; i < ax->n; i++) {
			int a = ir_axis(ax->v[i], R);
			if (a < 0)
				return false;
			red[a] = true;
		}
		int first = R;
		while (first > 0 && red[first - 1])
			first--;
		for (int d = 0; d < first; d++)
			if (red[d])
				return false;
		for (int d = first; d < R; d++)
			cols *= xn->shape.d[d];
		rk = n->op == IR_OP_reduce_max ? R_MAX : n->op == IR_OP_reduce_min ? R_MIN : R_SUM;
		mean = n->op == IR_OP_reduce_mean;
		if (cols == 0)
			return false;
		break;
	}
	default: return false;
	}
	int64_t numel = ir_numel(&xn->shape);
	int64_t rows = cols ? numel / cols : 0;
	st->nargs = 0;
	st->args[st->nargs++] = r;
	for (uint32_t k = 0; k < n->nin; k++)
		st->args[st->nargs++] = n->in[k];
	LLVMValueRef lo, hi;
	m->fail = false;
	LLVMValueRef f = cle_new_fn(m, fns, nfns, st, &lo, &hi);
	loop lr;
	cle_loop_begin(m, f, lo, hi, &lr);
	LLVMValueRef base = LLVMBuildMul(m->b, lr.iv, cle_ci(m, cols), "");
	LLVMValueRef xp = cle_gep(m, cle_mem_type(m, xt), m->bufs[1], base);
	bool is_red = ir_ops[n->op].kind == IR_K_REDUCE;
	LLVMValueRef op = cle_gep(m, cle_mem_type(m, ot), m->bufs[0], is_red ? lr.iv : base);
	LLVMTypeRef f64 = LLVMDoubleTypeInContext(m->ctx);
	LLVMValueRef fc = LLVMConstReal(f64, (double)cols);
	if (is_red) {
		LLVMValueRef s = row_reduce(m, f, xt, xp, cols, rk, 0, NULL);
		if (mean)
			s = LLVMBuildFDiv(m->b, s, fc, "");
		if (rk == R_SUM)
			s = LLVMBuildFPTrunc(m->b, s, m->f32, "");
		st_f(m, ot, s, op, cle_ci(m, 0));
	} else {
		/* softmax: out = (x - sub) * mul [- addl] in f32; the norms:
		 * (x - mu) * rstd in double (mu and rstd of any row of floats
		 * are finite there, and x - mu is: [3e38, -3e38]), then
		 * rounded, then the weight and the bias */
		LLVMValueRef mul = NULL, sub = NULL, addl = NULL, mu = NULL, rstd = NULL;
		LLVMValueRef w = n->nin > 1 ? m->bufs[2] : NULL, bb = n->nin > 2 ? m->bufs[3] : NULL;
		LLVMValueRef eps = LLVMConstReal(f64, n->attrs->eps);
		if (n->op == IR_OP_softmax || n->op == IR_OP_log_softmax) {
			LLVMValueRef mx = row_reduce(m, f, xt, xp, cols, R_MAX, 0, NULL);
			LLVMValueRef s = LLVMBuildFPTrunc(m->b, row_reduce(m, f, xt, xp, cols, R_SUM, 2, mx), m->f32, "");
			sub = mx;
			if (n->op == IR_OP_softmax)
				mul = LLVMBuildFDiv(m->b, cle_cf(m, 1), s, "");
			else
				addl = cle_call1(m, "llvm.log.f32", s);
		} else {
			LLVMValueRef var;
			if (n->op == IR_OP_layer_norm) {
				mu = LLVMBuildFDiv(m->b, row_reduce(m, f, xt, xp, cols, R_SUM, 0, NULL), fc, "");
				var = LLVMBuildFDiv(m->b, row_reduce(m, f, xt, xp, cols, R_SUM, 1, mu), fc, "");
			} else {
				var = LLVMBuildFDiv(m->b, row_reduce(m, f, xt, xp, cols, R_SUM, 3, NULL), fc, "");
			}
			rstd = LLVMBuildFDiv(m->b, LLVMConstReal(f64, 1),
					     cle_callf(m, "llvm.sqrt.f64", f64, LLVMBuildFAdd(m->b, var, eps, ""), NULL), "");
		}
		loop lc;
		cle_loop_begin(m, f, cle_ci(m, 0), cle_ci(m, cols), &lc);
		LLVMValueRef x = ld(m, xt, xp, lc.iv, false);
		if (rstd) {
			x = LLVMBuildFPExt(m->b, x, f64, "");
			if (mu)
				x = LLVMBuildFSub(m->b, x, mu, "");
			x = LLVMBuildFPTrunc(m->b, LLVMBuildFMul(m->b, x, rstd, ""), m->f32, "");
		}
		if (sub)
			x = LLVMBuildFSub(m->b, x, sub, "");
		if (n->op == IR_OP_softmax)
			x = cle_fexp(m, x, m->f32);
		if (mul)
			x = LLVMBuildFMul(m->b, x, mul, "");
		if (addl)
			x = LLVMBuildFSub(m->b, x, addl, "");
		if (w)
			x = LLVMBuildFMul(m->b, x, ld(m, wt, w, lc.iv, false), "");
		if (bb)
			x = LLVMBuildFAdd(m->b, x, ld(m, bt, bb, lc.iv, false), "");
		st_f(m, ot, x, op, lc.iv);
		cle_loop_end(m, &lc, 1);
	}
	cle_loop_end(m, &lr, 1);
	LLVMBuildRetVoid(m->b);
	if (m->fail) {
		LLVMDeleteFunction(f);
		free(fns[--*nfns]);
		st->fn = -1;
		return false;
	}
	st->rows = rows;
	st->inner = cols;
	cle_dedupe(m, f, st, fns, nfns);
	return true;
}

/* ---- row groups ---- */

/* A reduction pass takes RLANES elements per iteration, gathered into
 * vectors of RL_SUM lanes for a sum (16: the SLP vectorizer makes an exp
 * of them one AVX-512 vector) and RL_MAX for max and min (8: four
 * accumulators, each a chain of a compare and a select; with two a max
 * pass was 15 % slower). More lanes per iteration than 32 and the SLP
 * vectorizer gave up: scalar code, 50x slower. */
#define RLANES 32
#define RL_SUM 16
#define RL_MAX 8

/* The index of S's element (row dims rx, reduced dims [a, rank) at
 * offset i of the row) into x: i itself where one reduced dim is not 1,
 * else taken apart (size-1 dims are 0 throughout, so memo keys match). */
static void row_ix(cl_emitter *m, const ir_shape *S, int a, const LLVMValueRef *rx, LLVMValueRef i, LLVMValueRef *x)
{
	int nz = 0;
	for (int d = a; d < S->rank; d++)
		nz += S->d[d] != 1;
	LLVMValueRef rem = i;
	for (int d = S->rank - 1; d >= 0; d--) {
		if (d < a) {
			x[d] = rx[d];
		} else if (S->d[d] == 1) {
			x[d] = cle_ci(m, 0);
		} else if (nz == 1) {
			x[d] = i;
		} else {
			x[d] = LLVMBuildURem(m->b, rem, cle_ci(m, S->d[d]), "");
			rem = LLVMBuildUDiv(m->b, rem, cle_ci(m, S->d[d]), "");
		}
	}
}

/* Lin taken apart over shape s into x (size-1 dims 0). */
static void unlinear(cl_emitter *m, const ir_shape *s, LLVMValueRef lin, LLVMValueRef *x)
{
	LLVMValueRef rem = lin;
	for (int d = s->rank - 1; d >= 0; d--) {
		if (s->d[d] == 1) {
			x[d] = cle_ci(m, 0);
			continue;
		}
		x[d] = LLVMBuildURem(m->b, rem, cle_ci(m, s->d[d]), "");
		rem = LLVMBuildUDiv(m->b, rem, cle_ci(m, s->d[d]), "");
	}
}

/* One reduction pass over a row of L: the reduction's operand at element
 * i of the row (row_ix), RLANES lanes per iteration gathered into vector
 * accumulators (the lanes' code is alike, and the SLP vectorizer packs it
 * from the gather; LLVM 16's C API sets no fast-math flags, so a scalar
 * reduction would not vectorize), then a scalar tail. Sums accumulate in
 * double (the reference interpreter's), max and min in f32, NaN
 * propagating (fmaxp). The result as a float: a mean divided by L in
 * double first; rounded to bf16 for a bf16 reduction. */
static LLVMValueRef row_pass(cl_emitter *m, LLVMValueRef f, const ir_node *rn, const ir_shape *S, int a,
			     const LLVMValueRef *rx, int64_t L)
{
	rkind k = rn->op == IR_OP_reduce_max ? R_MAX : rn->op == IR_OP_reduce_min ? R_MIN : R_SUM;
	bool sum = k == R_SUM, max = k == R_MAX;
	int vl = sum ? RL_SUM : RL_MAX, nv = RLANES / vl;
	LLVMTypeRef f64 = LLVMDoubleTypeInContext(m->ctx), vd = LLVMVectorType(f64, (unsigned)vl),
		    vf = LLVMVectorType(m->f32, (unsigned)vl);
	LLVMValueRef init = sum ? LLVMConstReal(f64, 0) : cle_cf(m, max ? -INFINITY : INFINITY);
	LLVMValueRef ie[RL_SUM];
	for (int j = 0; j < vl; j++)
		ie[j] = init;
	int64_t nu = L / RLANES * RLANES;
	LLVMValueRef x[IR_MAX_RANK];
	uint32_t mark = m->nmemo;
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(m->b);
	loop l;
	cle_loop_begin(m, f, cle_ci(m, 0), cle_ci(m, nu), &l);
	LLVMValueRef acc[RLANES / RL_SUM > RLANES / RL_MAX ? RLANES / RL_SUM : RLANES / RL_MAX], nacc[SN_COUNT(acc)];
	for (int u = 0; u < nv; u++)
		acc[u] = cle_carried(m, &l, LLVMConstVector(ie, (unsigned)vl), pre);
	for (int u = 0; u < nv; u++) {
		LLVMValueRef vec = LLVMGetUndef(vf);
		for (int j = 0; j < vl; j++) {
			int off = u * vl + j;
			m->lane = off ? LLVMBuildAdd(m->b, l.iv, cle_ci(m, off), "") : l.iv;
			row_ix(m, S, a, rx, m->lane, x);
			LLVMValueRef v = cle_value(m, rn->in[0], x, S->rank);
			if (!v)
				return NULL;
			vec = LLVMBuildInsertElement(m->b, vec, v, LLVMConstInt(m->i32, (unsigned)j, 0), "");
		}
		nacc[u] = sum ? LLVMBuildFAdd(m->b, acc[u], LLVMBuildFPExt(m->b, vec, vd, ""), "")
			      : fmaxp(m, acc[u], vec, max);
	}
	LLVMBasicBlockRef cur = LLVMGetInsertBlock(m->b);
	for (int u = 0; u < nv; u++)
		LLVMAddIncoming(acc[u], &nacc[u], &cur, 1);
	cle_loop_end(m, &l, RLANES);
	m->nmemo = mark; /* values made in the loop stay there */
	for (int w = nv / 2; w >= 1; w /= 2)
		for (int u = 0; u < w; u++)
			acc[u] = sum ? LLVMBuildFAdd(m->b, acc[u], acc[u + w], "") : fmaxp(m, acc[u], acc[u + w], max);
	LLVMValueRef s = LLVMBuildExtractElement(m->b, acc[0], LLVMConstInt(m->i32, 0, 0), "");
	for (int j = 1; j < vl; j++) {
		LLVMValueRef e = LLVMBuildExtractElement(m->b, acc[0], LLVMConstInt(m->i32, (unsigned)j, 0), "");
		s = sum ? LLVMBuildFAdd(m->b, s, e, "") : fmaxp(m, s, e, max);
	}
	pre = LLVMGetInsertBlock(m->b);
	loop tl;
	cle_loop_begin(m, f, cle_ci(m, nu), cle_ci(m, L), &tl);
	LLVMValueRef t = cle_carried(m, &tl, s, pre);
	m->lane = tl.iv;
	row_ix(m, S, a, rx, tl.iv, x);
	LLVMValueRef v = cle_value(m, rn->in[0], x, S->rank);
	if (!v)
		return NULL;
	LLVMValueRef nt = sum ? LLVMBuildFAdd(m->b, t, LLVMBuildFPExt(m->b, v, f64, ""), "") : fmaxp(m, t, v, max);
	cur = LLVMGetInsertBlock(m->b);
	LLVMAddIncoming(t, &nt, &cur, 1);
	cle_loop_end(m, &tl, 1);
	m->nmemo = mark;
	if (rn->op == IR_OP_reduce_mean)
		t = LLVMBuildFDiv(m->b, t, LLVMConstReal(f64, (double)L), "");
	if (sum)
		t = LLVMBuildFPTrunc(m->b, t, m->f32, "");
	return rn->dtype == IR_BF16 ? cle_bf16_round(m, t) : t;
}

/* Whether a member is cheaper computed again than stored and read back. */
static bool cheap_op(ir_op op)
{
	switch (op) {
	case IR_OP_add:
	case IR_OP_sub:
	case IR_OP_mul:
	case IR_OP_neg:
	case IR_OP_abs:
	case IR_OP_relu:
	case IR_OP_cast:
	case IR_OP_min:
	case IR_OP_max:
	case IR_OP_where: return true;
	default: return false;
	}
}

/* The members of R*L elements pass p (reduction p's operand; the root's
 * pass last, nred, when full) computes that a later pass reads again and
 * that cost more than a store and a load (an exp read by a softmax's sum
 * and its division): into m->scr_r with the pass that stores them. A
 * walk in emission order, as value descends: per-row members and values
 * outside the group end it, and so does a member a pass reads back.
 * Row scratch is on the stack: at most 64 KiB of it. */
static void row_scratch(cl_emitter *m, const ir_graph *g, const fu_plan *fp, uint32_t gid, const ir_ref *mem,
			uint32_t nm, const int *red_of, bool full, int64_t R, int64_t L)
{
	int first[64], seen[64];
	uint32_t nred = 0;
	for (uint32_t k = 0; k < nm; k++) {
		first[k] = seen[k] = -1;
		nred += red_of[k] >= 0;
	}
	m->nscr = 0;
	for (uint32_t p = 0; p <= nred; p++) {
		ir_ref start = IR_NONE;
		for (uint32_t k = 0; k < nm; k++)
			if (p < nred && red_of[k] == (int)p)
				start = g->nodes[mem[k]].in[0];
		if (p == nred)
			start = full ? fp->groups[gid].root : IR_NONE;
		ir_ref stack[64];
		uint32_t ns = 0;
		if (start != IR_NONE)
			stack[ns++] = start;
		while (ns) {
			ir_ref q = stack[--ns];
			uint32_t k = 0;
			while (k < nm && mem[k] != q)
				k++;
			const ir_node *n = &g->nodes[q];
			if (k == nm || fp->group_of[q] != gid || ir_numel(&n->shape) == R || seen[k] == (int)p)
				continue;
			seen[k] = (int)p;
			bool read_back = false;
			for (uint32_t i = 0; i < m->nscr; i++)
				read_back |= m->scr_r[i] == q;
			if (read_back)
				continue;
			if (first[k] >= 0 && !cheap_op(n->op) && cle_is_f(n->dtype) && m->nscr < SN_COUNT(m->scr_r) &&
			    (int64_t)(m->nscr + 1) * L * 4 <= 65536) {
				m->scr_r[m->nscr] = q;
				m->scr_pass[m->nscr++] = first[k];
				continue;
			}
			if (first[k] < 0)
				first[k] = (int)p;
			for (uint32_t i = 0; i < n->nin && ns < SN_COUNT(stack); i++)
				stack[ns++] = n->in[i];
		}
	}
}

/* A row group (FU_ROWS, passes/fuse.h): reductions over the trailing axes
 * [a, rank) of one shape S, R rows of L, with their prologues, per-row
 * values and epilogue, as one kernel called over a range of rows. Per row,
 * in stages (as cg_fuse.c's cg_render_row_group): the per-row members
 * (R elements) whose reductions are done, then the next reduction's pass
 * (row_pass) in node order; the root last, a pass over the row storing
 * element row * L + i at its own index (a reshape of S takes that apart),
 * or one store when it is a per-row value. Members come from the same
 * element emitter as pointwise groups (value), a per-row member read
 * wherever it is read from at the row's value (rowr/rowv). */
bool cle_emit_row_group(cl_emitter *m, const ir_graph *g, const fu_plan *fp, uint32_t gid, cl_step *st,
			   char **fns, uint32_t *nfns)
{
	const fu_group *gr = &fp->groups[gid];
	const ir_node *root = &g->nodes[gr->root], *c0 = &g->nodes[gr->core];
	if (gr->n > SN_COUNT(m->rowr) || ir_ops[c0->op].kind != IR_K_REDUCE || !cle_ok_dtype(root->dtype))
		return false;
	const ir_shape *S = &g->nodes[c0->in[0]].shape;
	int a = c0->attrs->axes.n ? S->rank : 0;
	for (int i = 0; i < c0->attrs->axes.n; i++) {
		int d = ir_axis(c0->attrs->axes.v[i], S->rank);
		if (d < 0)
			return false;
		a = d < a ? d : a;
	}
	int64_t R = 1, L = 1;
	for (int d = 0; d < S->rank; d++)
		*(d < a ? &R : &L) *= S->d[d];
	if (L <= 1 || R < 1)
		return false;
	/* the members in node order; what each reads of the reductions
	 * (need: a bit per reduction, through members) */
	const ir_ref *mem = fp->members + gr->first;
	uint32_t nm = gr->n;
	uint64_t need[64];
	int red_of[64];
	uint32_t nred = fu_rows_needs(g, fp, gr, need, red_of);
	for (uint32_t k = 0; k < nm; k++) {
		const ir_node *n = &g->nodes[mem[k]];
		if (red_of[k] < 0)
			continue;
		/* the same rows as the core's (the partition's rule) */
		const ir_shape *is = &g->nodes[n->in[0]].shape;
		if (is->rank != S->rank || memcmp(is->d, S->d, sizeof S->d[0] * (size_t)S->rank) ||
		    ir_numel(&n->shape) != R || !cle_is_f(n->dtype) || !cle_is_f(g->nodes[n->in[0]].dtype))
			return false;
	}
	st->nargs = 0;
	st->args[st->nargs++] = gr->root;
	if (!cle_collect_loads(g, fp, gid, IR_NONE, st))
		return false;
	m->g = g;
	m->fp = fp;
	m->gid = gid;
	m->core = IR_NONE;
	m->args = st->args;
	m->nargs = &st->nargs;
	m->nmemo = 0;
	m->rows_n = R;
	m->nrowv = 0;
	m->fail = false;
	bool full = ir_numel(&root->shape) != R;
	row_scratch(m, g, fp, gid, mem, nm, red_of, full, R, L);
	LLVMValueRef lo, hi;
	LLVMValueRef f = cle_new_fn(m, fns, nfns, st, &lo, &hi);
	for (uint32_t i = 0; i < m->nscr; i++)
		m->scr_p[i] = LLVMBuildArrayAlloca(m->b, m->f32, cle_ci(m, L), "");
	loop lr;
	cle_loop_begin(m, f, lo, hi, &lr);
	/* the row dims of row lr.iv */
	LLVMValueRef rx[IR_MAX_RANK], x[IR_MAX_RANK], px[IR_MAX_RANK];
	LLVMValueRef rem = lr.iv;
	for (int d = a - 1; d >= 0; d--) {
		if (S->d[d] == 1) {
			rx[d] = cle_ci(m, 0);
			continue;
		}
		bool outer = true;
		for (int k = 0; k < d; k++)
			outer &= S->d[k] == 1;
		rx[d] = outer ? rem : LLVMBuildURem(m->b, rem, cle_ci(m, S->d[d]), "");
		if (!outer)
			rem = LLVMBuildUDiv(m->b, rem, cle_ci(m, S->d[d]), "");
	}
	bool done_[64] = {0};
	for (uint32_t s = 0; s <= nred && !m->fail; s++) {
		/* the per-row members that read reductions < s only */
		uint64_t have = s >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << s) - 1;
		for (uint32_t k = 0; k < nm && !m->fail; k++) {
			const ir_node *n = &g->nodes[mem[k]];
			if (done_[k] || red_of[k] >= 0 || ir_numel(&n->shape) != R || (need[k] & ~have))
				continue;
			done_[k] = true;
			/* its index: S's row dims, aligned to S's last */
			int off = S->rank - n->shape.rank;
			for (int d = 0; d < n->shape.rank; d++)
				px[d] = n->shape.d[d] == 1 || d + off < 0 ? cle_ci(m, 0) : rx[d + off];
			LLVMValueRef v = cle_value(m, mem[k], px, n->shape.rank);
			if (v) {
				m->rowr[m->nrowv] = mem[k];
				m->rowv[m->nrowv++] = v;
			}
		}
		if (s == nred || m->fail)
			break;
		uint32_t k = 0;
		while (red_of[k] != (int)s)
			k++;
		m->pass = (int)s;
		LLVMValueRef v = row_pass(m, f, &g->nodes[mem[k]], S, a, rx, L);
		if (!v)
			m->fail = true;
		else {
			m->rowr[m->nrowv] = mem[k];
			m->rowv[m->nrowv++] = v;
		}
	}
	/* the root: a last pass over the row, or one store */
	if (!m->fail && full) {
		uint32_t mark = m->nmemo;
		LLVMValueRef base = LLVMBuildMul(m->b, lr.iv, cle_ci(m, L), "");
		loop lc;
		cle_loop_begin(m, f, cle_ci(m, 0), cle_ci(m, L), &lc);
		m->pass = (int)nred;
		m->lane = lc.iv;
		LLVMValueRef lin = LLVMBuildAdd(m->b, base, lc.iv, "");
		bool same = root->shape.rank == S->rank &&
			    !memcmp(root->shape.d, S->d, sizeof S->d[0] * (size_t)S->rank);
		if (same)
			row_ix(m, S, a, rx, lc.iv, x);
		else
			unlinear(m, &root->shape, lin, x);
		LLVMValueRef v = cle_value(m, gr->root, x, root->shape.rank);
		if (v)
			cle_store_val(m, root->dtype, v, m->bufs[0], lin);
		cle_loop_end(m, &lc, 1);
		m->nmemo = mark;
	} else if (!m->fail) {
		/* a per-row value, computed by now (the last member) */
		LLVMValueRef v = NULL;
		for (uint32_t i = 0; i < m->nrowv; i++)
			if (m->rowr[i] == gr->root)
				v = m->rowv[i];
		if (v)
			cle_store_val(m, root->dtype, v, m->bufs[0], lr.iv);
		else
			m->fail = true;
	}
	cle_loop_end(m, &lr, 1);
	LLVMBuildRetVoid(m->b);
	m->rows_n = 0;
	m->nscr = 0;
	if (m->fail) {
		LLVMDeleteFunction(f);
		free(fns[--*nfns]);
		st->fn = -1;
		return false;
	}
	st->rows = R;
	st->inner = L;
	cle_dedupe(m, f, st, fns, nfns);
	return true;
}
