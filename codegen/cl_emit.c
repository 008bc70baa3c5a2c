/* cl_emit.c: fusion groups as LLVM IR, built with the LLVM-C API (the CPU
 * counterpart of cg_fuse.c's element emitter).
 *
 * Every kernel has one signature, void f(ptr bufs, i64 lo, i64 hi, i64 c0,
 * i64 c1): bufs is the array of its buffers' addresses (args of its step,
 * args[0] the one it writes), [lo, hi) the rows the thread pool gave this
 * call, [c0, c1) the columns of each row a convolution's epilogue computes
 * (a task's output channels: the epilogue runs on that task's block);
 * other kernels run whole rows and ignore c0 and c1.
 *
 * Pointwise groups: a row is every dim of the root but the last; the
 * inner loop walks the last dim (from c0 to c1 in an epilogue), so loads
 * of operands contiguous along it are unit-stride and the loop vectorizes.
 * Each member is a value at an index vector (one i64 per dim), memoized
 * per (node, index); index-only members rewrite the index (transpose, expand, slice, split, reshape and
 * friends), free nodes (iota, scalar consts) are computed where used,
 * stored values outside the group are loaded. Values are f32, or i64 for
 * integers and bools (0/1); bf16 values are f32 rounded to bf16 (as the
 * unfused kernel would store them, and cg_fuse.c does), loads widen them
 * and stores keep their 16 top bits, rounded to nearest even; members of
 * other dtypes make the group fall back to the reference interpreter. A convolution's epilogue is the same
 * kernel with the convolution's value read from the root buffer in place.
 *
 * Row kernels and row groups: cl_rows.c. The emitter's state and the
 * helpers both files use: cl_emit.h. */
#include "codegen/cl_emit.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cl_emit_new(cl_emitter **out, sn_err *e)
{
	cl_emitter *m = calloc(1, sizeof *m);
	if (!m)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	for (int k = 0; k < CL_NMOD; k++) {
		part *p = &m->parts[k];
		char name[32];
		snprintf(name, sizeof name, "sinter_cpu%d", k);
		p->ctx = LLVMContextCreate();
		p->mod = LLVMModuleCreateWithNameInContext(name, p->ctx);
		p->b = LLVMCreateBuilderInContext(p->ctx);
		p->f32 = LLVMFloatTypeInContext(p->ctx);
		p->i64 = LLVMInt64TypeInContext(p->ctx);
		p->i32 = LLVMInt32TypeInContext(p->ctx);
		p->i8 = LLVMInt8TypeInContext(p->ctx);
		p->ptr = LLVMPointerTypeInContext(p->ctx, 0);
		p->v8 = LLVMVectorType(p->f32, VW);
		p->vd = LLVMVoidTypeInContext(p->ctx);
		LLVMTypeRef ps[5] = {p->ptr, p->i64, p->i64, p->i64, p->i64};
		p->fnty = LLVMFunctionType(p->vd, ps, 5, 0);
	}
	*out = m;
	return SN_OK;
}

/* The next kernel goes to part k. */
static void use_part(cl_emitter *m, int k)
{
	const part *p = &m->parts[k];
	m->ctx = p->ctx;
	m->mod = p->mod;
	m->b = p->b;
	m->f32 = p->f32;
	m->i64 = p->i64;
	m->i32 = p->i32;
	m->i8 = p->i8;
	m->ptr = p->ptr;
	m->v8 = p->v8;
	m->fnty = p->fnty;
	m->vd = p->vd;
}

void cl_emit_free(cl_emitter *m)
{
	if (!m)
		return;
	for (int k = 0; k < CL_NMOD; k++) {
		LLVMDisposeBuilder(m->parts[k].b);
		cl_module_dispose(m->parts[k].ctx, m->parts[k].mod);
	}
	free(m->memo);
	for (uint32_t i = 0; i < m->ntexts; i++)
		free(m->texts[i]);
	free(m->texts);
	free(m->tfn);
	free(m);
}

/* Function f (just emitted as st->fn) replaced by an identical earlier
 * one when there is one: twelve GPT-2 layers compile their kernels once. */
void cle_dedupe(cl_emitter *m, LLVMValueRef f, cl_step *st, char **fns, uint32_t *nfns)
{
	char *t = LLVMPrintValueToString(f);
	if (!t)
		return;
	const char *body = strchr(t, '(');
	body = body ? body : t;
	for (uint32_t i = 0; i < m->ntexts; i++)
		if (!strcmp(m->texts[i], body)) {
			LLVMDisposeMessage(t);
			LLVMDeleteFunction(f);
			free(fns[--*nfns]);
			st->fn = m->tfn[i];
			return;
		}
	if (m->ntexts == m->captexts) {
		uint32_t cap = m->captexts ? 2 * m->captexts : 32;
		char **nt = realloc(m->texts, cap * sizeof *nt);
		if (nt)
			m->texts = nt;
		int32_t *nf = realloc(m->tfn, cap * sizeof *nf);
		if (nf)
			m->tfn = nf;
		if (!nt || !nf) {
			LLVMDisposeMessage(t);
			return;
		}
		m->captexts = cap;
	}
	m->texts[m->ntexts] = strdup(body);
	m->tfn[m->ntexts] = st->fn;
	if (m->texts[m->ntexts])
		m->ntexts++;
	LLVMDisposeMessage(t);
}

void cl_emit_finish(cl_emitter *m, cl_plan *p)
{
	for (int k = 0; k < CL_NMOD; k++) {
		p->llctx[k] = m->parts[k].ctx;
		p->llmod[k] = m->parts[k].mod;
		m->parts[k].ctx = NULL;
		m->parts[k].mod = NULL;
	}
}

bool cl_emit_oom(const cl_emitter *m)
{
	return m->oom;
}

void cl_module_dispose(void *ctx, void *mod)
{
	if (mod)
		LLVMDisposeModule(mod);
	if (ctx)
		LLVMContextDispose(ctx);
}

/* ---- small helpers ---- */

LLVMValueRef cle_ci(cl_emitter *m, int64_t v)
{
	return LLVMConstInt(m->i64, (unsigned long long)v, 1);
}

LLVMValueRef cle_cf(cl_emitter *m, double v)
{
	return LLVMConstReal(m->f32, v);
}

/* A call of a function of one or two floats (libm or an intrinsic),
 * declared on first use; ty is the float or vector type. */
LLVMValueRef cle_callf(cl_emitter *m, const char *name, LLVMTypeRef ty, LLVMValueRef x, LLVMValueRef y)
{
	LLVMTypeRef ps[2] = {ty, ty};
	LLVMTypeRef ft = LLVMFunctionType(ty, ps, y ? 2 : 1, 0);
	LLVMValueRef f = LLVMGetNamedFunction(m->mod, name);
	if (!f)
		f = LLVMAddFunction(m->mod, name, ft);
	LLVMValueRef as[2] = {x, y};
	return LLVMBuildCall2(m->b, ft, f, as, y ? 2 : 1, "");
}

LLVMValueRef cle_call1(cl_emitter *m, const char *name, LLVMValueRef x)
{
	return cle_callf(m, name, m->f32, x, NULL);
}

LLVMValueRef cle_gep(cl_emitter *m, LLVMTypeRef t, LLVMValueRef p, LLVMValueRef i)
{
	return LLVMBuildGEP2(m->b, t, p, &i, 1, "");
}

LLVMValueRef cle_loadf(cl_emitter *m, LLVMTypeRef t, LLVMValueRef p)
{
	LLVMValueRef v = LLVMBuildLoad2(m->b, t, p, "");
	LLVMSetAlignment(v, t == m->v8 ? 4 : (unsigned)(LLVMGetTypeKind(t) == LLVMIntegerTypeKind
								  ? LLVMGetIntTypeWidth(t) / 8 : 4));
	return v;
}

void cle_storef(cl_emitter *m, LLVMValueRef v, LLVMValueRef p)
{
	LLVMValueRef s = LLVMBuildStore(m->b, v, p);
	LLVMTypeRef t = LLVMTypeOf(v);
	LLVMSetAlignment(s, t == m->v8 ? 4 : (unsigned)(LLVMGetTypeKind(t) == LLVMIntegerTypeKind
								  ? LLVMGetIntTypeWidth(t) / 8 : 4));
}

/* A dtype the emitter computes in (bf16: stored as bf16, computed in
 * f32), and its value type. */
bool cle_ok_dtype(ir_dtype t)
{
	return t == IR_F32 || t == IR_BF16 || t == IR_I64 || t == IR_BOOL;
}

bool cle_is_f(ir_dtype t)
{
	return t == IR_F32 || t == IR_BF16;
}

/* bf16 is the top half of an f32: widening is exact. v: i16 or <8 x i16>. */
LLVMValueRef cle_bf16_widen(cl_emitter *m, LLVMValueRef v)
{
	bool vec = LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind;
	LLVMTypeRef it = vec ? LLVMVectorType(m->i32, VW) : m->i32;
	LLVMValueRef sh = LLVMConstInt(m->i32, 16, 0);
	if (vec) {
		LLVMValueRef e[VW];
		for (int i = 0; i < VW; i++)
			e[i] = sh;
		sh = LLVMConstVector(e, VW);
	}
	LLVMValueRef w = LLVMBuildShl(m->b, LLVMBuildZExt(m->b, v, it, ""), sh, "");
	return LLVMBuildBitCast(m->b, w, vec ? m->v8 : m->f32, "");
}

/* f32 f to bf16 bits (i16), rounded to nearest, ties to even, on the
 * bits: adding 0x7fff plus the kept part's lowest bit carries into the
 * kept half exactly when the dropped half is above the tie, or at the tie
 * with the kept half odd; overflow carries into the exponent and gives
 * infinity, as it should. Subnormals round the same way (bf16 has f32's
 * exponent range). A NaN keeps its sign and top payload bits and is made
 * quiet (rounding could carry a NaN into an infinity). As the weights'
 * conversion (ir/wstore.c) and ir_store. */
LLVMValueRef cle_bf16_bits(cl_emitter *m, LLVMValueRef f)
{
	LLVMBuilderRef b = m->b;
	LLVMValueRef u = LLVMBuildBitCast(b, f, m->i32, "");
	LLVMValueRef hi = LLVMBuildLShr(b, u, LLVMConstInt(m->i32, 16, 0), "");
	LLVMValueRef lsb = LLVMBuildAnd(b, hi, LLVMConstInt(m->i32, 1, 0), "");
	LLVMValueRef r = LLVMBuildAdd(b, u, LLVMBuildAdd(b, lsb, LLVMConstInt(m->i32, 0x7fff, 0), ""), "");
	r = LLVMBuildLShr(b, r, LLVMConstInt(m->i32, 16, 0), "");
	LLVMValueRef q = LLVMBuildOr(b, hi, LLVMConstInt(m->i32, 0x40, 0), "");
	r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, f, f, ""), q, r, "");
	return LLVMBuildTrunc(b, r, LLVMInt16TypeInContext(m->ctx), "");
}

/* f rounded to bf16 and widened back: a bf16 value as the unfused kernel
 * would store and the next load it (every bf16 node's value). */
LLVMValueRef cle_bf16_round(cl_emitter *m, LLVMValueRef f)
{
	return cle_bf16_widen(m, cle_bf16_bits(m, f));
}

static bool ok_load(ir_dtype t)
{
	return t == IR_F32 || t == IR_I64 || t == IR_BOOL || t == IR_I32 || t == IR_U8 || t == IR_I8 || t == IR_BF16;
}

LLVMTypeRef cle_mem_type(cl_emitter *m, ir_dtype t)
{
	switch (t) {
	case IR_F32: return m->f32;
	case IR_I64: return m->i64;
	case IR_I32: return m->i32;
	case IR_BF16: return LLVMInt16TypeInContext(m->ctx);
	default: return m->i8;
	}
}

/* A value of dtype t loaded from p (as f32 or i64). */
static LLVMValueRef load_val(cl_emitter *m, ir_dtype t, LLVMValueRef base, LLVMValueRef i)
{
	LLVMTypeRef mt = cle_mem_type(m, t);
	LLVMValueRef v = cle_loadf(m, mt, cle_gep(m, mt, base, i));
	switch (t) {
	case IR_F32:
	case IR_I64: return v;
	case IR_BF16: return cle_bf16_widen(m, v);
	case IR_U8:
	case IR_BOOL: return LLVMBuildZExt(m->b, v, m->i64, "");
	default: return LLVMBuildSExt(m->b, v, m->i64, "");
	}
}

void cle_store_val(cl_emitter *m, ir_dtype t, LLVMValueRef v, LLVMValueRef base, LLVMValueRef i)
{
	LLVMTypeRef mt = cle_mem_type(m, t);
	if (t == IR_BOOL)
		v = LLVMBuildTrunc(m->b, v, m->i8, "");
	if (t == IR_BF16)
		v = cle_bf16_bits(m, v);
	cle_storef(m, v, cle_gep(m, mt, base, i));
}

static bool is_scalar_const(const ir_node *n)
{
	return n->op == IR_OP_const && ir_numel(&n->shape) == 1 && n->data;
}

/* The buffer slot of stored value r, added to the step's args. */
static LLVMValueRef buf_of(cl_emitter *m, ir_ref r)
{
	for (uint32_t k = 0; k < *m->nargs; k++)
		if (m->args[k] == r)
			return m->bufs[k];
	m->fail = true; /* the caller collected the loads first */
	return NULL;
}

/* ---- the element emitter ---- */

static LLVMValueRef memo_get(cl_emitter *m, ir_ref r, const LLVMValueRef *x, int rank)
{
	for (uint32_t i = 0; i < m->nmemo; i++) {
		struct memo *e = &m->memo[i];
		if (e->r != r || e->rank != rank)
			continue;
		bool same = true;
		for (int d = 0; d < rank && same; d++)
			same = e->ix[d] == x[d];
		if (same)
			return e->v;
	}
	return NULL;
}

static void memo_put(cl_emitter *m, ir_ref r, const LLVMValueRef *x, int rank, LLVMValueRef v)
{
	if (m->nmemo == m->capmemo) {
		uint32_t cap = m->capmemo ? 2 * m->capmemo : 64;
		struct memo *n = realloc(m->memo, cap * sizeof *n);
		if (!n) {
			m->fail = m->oom = true;
			return;
		}
		m->memo = n;
		m->capmemo = cap;
	}
	struct memo *e = &m->memo[m->nmemo++];
	e->r = r;
	e->rank = rank;
	memcpy(e->ix, x, (size_t)rank * sizeof *x);
	e->v = v;
}

/* The linear index of x over shape s (size-1 dims skipped). */
static LLVMValueRef linear(cl_emitter *m, const ir_shape *s, const LLVMValueRef *x)
{
	LLVMValueRef l = cle_ci(m, 0);
	if (ir_numel(s) == 0) /* no element to index; its dims' product may not fit */
		return l;
	int64_t st = 1;
	for (int d = s->rank - 1; d >= 0; d--) {
		if (s->d[d] != 1)
			l = LLVMBuildAdd(m->b, l, LLVMBuildMul(m->b, x[d], cle_ci(m, st), ""), "");
		st *= s->d[d];
	}
	return l;
}

static LLVMValueRef load_node(cl_emitter *m, ir_ref r, const LLVMValueRef *x)
{
	const ir_node *n = &m->g->nodes[r];
	if (!ok_load(n->dtype)) {
		m->fail = true;
		return NULL;
	}
	LLVMValueRef base = buf_of(m, r);
	if (!base)
		return NULL;
	return load_val(m, n->dtype, base, linear(m, &n->shape, x));
}

static LLVMValueRef fbool(cl_emitter *m, LLVMValueRef c)
{
	return LLVMBuildZExt(m->b, c, m->i64, "");
}

LLVMValueRef cle_sel(cl_emitter *m, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildSelect(m->b, c, a, b, "");
}

/* A float constant of type ty (f32, or <8 x float> splat). */
static LLVMValueRef cv(cl_emitter *m, LLVMTypeRef ty, double v)
{
	if (ty != m->v8)
		return cle_cf(m, v);
	LLVMValueRef e[VW];
	for (int i = 0; i < VW; i++)
		e[i] = cle_cf(m, v);
	return LLVMConstVector(e, VW);
}

/* An i32 constant of the integer type matching ty (f32: i32, v8: <8 x i32>). */
static LLVMValueRef ciw(cl_emitter *m, LLVMTypeRef ty, int v)
{
	LLVMValueRef c = LLVMConstInt(m->i32, (unsigned long long)(long long)v, 1);
	if (ty != m->v8)
		return c;
	LLVMValueRef e[VW];
	for (int i = 0; i < VW; i++)
		e[i] = c;
	return LLVMConstVector(e, VW);
}

/* 2^k as a float of type ty, k an i32 (vector) in the normal range. */
static LLVMValueRef pow2i(cl_emitter *m, LLVMValueRef k, LLVMTypeRef ty)
{
	LLVMValueRef bits = LLVMBuildShl(m->b, LLVMBuildAdd(m->b, k, ciw(m, ty, 127), ""), ciw(m, ty, 23), "");
	return LLVMBuildBitCast(m->b, bits, ty, "");
}

/* a b + c, fused where the host has FMA (llvm.fmuladd); ty f32 or v8. */
static LLVMValueRef fmuladd(cl_emitter *m, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c, LLVMTypeRef ty)
{
	const char *name = ty == m->v8 ? "llvm.fmuladd.v8f32" : "llvm.fmuladd.f32";
	LLVMTypeRef ps[3] = {ty, ty, ty};
	LLVMTypeRef ft = LLVMFunctionType(ty, ps, 3, 0);
	LLVMValueRef fn = LLVMGetNamedFunction(m->mod, name);
	if (!fn)
		fn = LLVMAddFunction(m->mod, name, ft);
	LLVMValueRef as[3] = {a, b, c};
	return LLVMBuildCall2(m->b, ft, fn, as, 3, "");
}

/* a e^x without a libm call, so loops over it vectorize: x = n ln2 + r
 * (Cody-Waite, |r| <= ln2/2), e^r by Cephes' expf polynomial (y, within
 * 2 ulp of expf), and 2^n applied as two normal powers of two,
 * ((a y) 2^(n>>1)) 2^(n - (n>>1)): the first scaling is exact, so the
 * second product rounds once, into the subnormals (exp(-100) = 3.7e-44, a
 * multiple of the smallest subnormal, correctly rounded up to y's error)
 * or past the largest float (exp(89) = inf). x is clamped to [-150, 89]
 * first (n stays in [-217, 128], each half a normal exponent), so e^inf =
 * inf; below -150 the result is 0 (a 0 with a: e^-150 = 7e-66, and no
 * caller's |a| reaches 1e20 there), so e^-inf = 0. NaN stays NaN. a
 * (NULL: 1) lets a e^x be rounded once where e^x alone would be subnormal
 * (silu's x e^x / (1 + e^x) for x < -87). ty: f32 or v8. */
static LLVMValueRef fexp_mul(cl_emitter *m, LLVMValueRef x, LLVMValueRef a, LLVMTypeRef ty)
{
	LLVMBuilderRef b = m->b;
	bool vec = ty == m->v8;
	LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
	LLVMValueRef low = LLVMBuildFCmp(b, LLVMRealOLT, x, cv(m, ty, -150.0), "");
	LLVMValueRef c = cle_sel(m, LLVMBuildFCmp(b, LLVMRealOGT, x, cv(m, ty, 89.0), ""), cv(m, ty, 89.0), x);
	c = cle_sel(m, low, cv(m, ty, -150.0), c);
	c = cle_sel(m, nan, cv(m, ty, 0), c);
	LLVMValueRef n = cle_callf(m, vec ? "llvm.rint.v8f32" : "llvm.rint.f32", ty,
			       LLVMBuildFMul(b, c, cv(m, ty, 1.44269504088896341), ""), NULL);
	/* n ln2's high part has 9 bits: n C1 is exact, fused or not */
	LLVMValueRef r = fmuladd(m, n, cv(m, ty, -0.693359375), c, ty);
	r = fmuladd(m, n, cv(m, ty, 2.12194440e-4), r, ty);
	static const double k[] = {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1};
	LLVMValueRef p = cv(m, ty, 1.9875691500e-4);
	for (size_t i = 0; i < SN_COUNT(k); i++)
		p = fmuladd(m, p, r, cv(m, ty, k[i]), ty);
	LLVMValueRef y = LLVMBuildFAdd(b, fmuladd(m, p, LLVMBuildFMul(b, r, r, ""), r, ty), cv(m, ty, 1.0), "");
	if (a)
		y = LLVMBuildFMul(b, a, y, "");
	LLVMValueRef ni = LLVMBuildFPToSI(b, n, vec ? LLVMVectorType(m->i32, VW) : m->i32, "");
	LLVMValueRef n1 = LLVMBuildAShr(b, ni, ciw(m, ty, 1), "");
	LLVMValueRef n2 = LLVMBuildSub(b, ni, n1, "");
	y = LLVMBuildFMul(b, LLVMBuildFMul(b, y, pow2i(m, n1, ty), ""), pow2i(m, n2, ty), "");
	if (a)
		y = cle_sel(m, low, LLVMBuildFMul(b, a, cv(m, ty, 0), ""), y);
	return cle_sel(m, nan, x, y);
}

LLVMValueRef cle_fexp(cl_emitter *m, LLVMValueRef x, LLVMTypeRef ty)
{
	return fexp_mul(m, x, NULL, ty);
}

static LLVMValueRef relu6(cl_emitter *m, LLVMValueRef v)
{
	v = cle_sel(m, LLVMBuildFCmp(m->b, LLVMRealOLT, v, cle_cf(m, 0), ""), cle_cf(m, 0), v);
	return cle_sel(m, LLVMBuildFCmp(m->b, LLVMRealOGT, v, cle_cf(m, 6), ""), cle_cf(m, 6), v);
}

static LLVMValueRef softplus(cl_emitter *m, LLVMValueRef x)
{
	LLVMValueRef pos = LLVMBuildFAdd(m->b, x, cle_call1(m, "log1pf", cle_call1(m, "llvm.exp.f32", LLVMBuildFNeg(m->b, x, ""))), "");
	LLVMValueRef neg = cle_call1(m, "log1pf", cle_call1(m, "llvm.exp.f32", x));
	return cle_sel(m, LLVMBuildFCmp(m->b, LLVMRealOGT, x, cle_cf(m, 0), ""), pos, neg);
}

/* a sigmoid(z) (a NULL: 1), for every z: a / (1 + e^-z) for z >= 0,
 * a e^z / (1 + e^z) below, so that e^z never overflows and a e^z is
 * rounded once where e^z alone is subnormal (z < -87: sigmoid(-100) =
 * 3.7e-44, silu(-100) = -3.7e-42, not 0). The two exponentials of -|z|
 * share their instructions (LLVM's CSE merges them). */
static LLVMValueRef xsigmoid(cl_emitter *m, LLVMValueRef a, LLVMValueRef z)
{
	LLVMValueRef t = LLVMBuildFNeg(m->b, cle_call1(m, "llvm.fabs.f32", z), "");
	LLVMValueRef e = cle_fexp(m, t, m->f32);
	LLVMValueRef neg = a ? fexp_mul(m, t, a, m->f32) : e;
	LLVMValueRef num = cle_sel(m, LLVMBuildFCmp(m->b, LLVMRealOLT, z, cle_cf(m, 0), ""), neg, a ? a : cle_cf(m, 1));
	return LLVMBuildFDiv(m->b, num, LLVMBuildFAdd(m->b, cle_cf(m, 1), e, ""), "");
}

/* A float op on x (and y); NULL when not taken. */
static LLVMValueRef float_op(cl_emitter *m, const ir_node *n, LLVMValueRef x, LLVMValueRef y)
{
	LLVMBuilderRef b = m->b;
	const ir_attrs *a = n->attrs;
	switch (n->op) {
	case IR_OP_neg: return LLVMBuildFNeg(b, x, "");
	case IR_OP_abs: return cle_call1(m, "llvm.fabs.f32", x);
	case IR_OP_exp: return cle_fexp(m, x, m->f32);
	case IR_OP_log: return cle_call1(m, "llvm.log.f32", x);
	case IR_OP_sqrt: return cle_call1(m, "llvm.sqrt.f32", x);
	case IR_OP_rsqrt: return LLVMBuildFDiv(b, cle_cf(m, 1), cle_call1(m, "llvm.sqrt.f32", x), "");
	case IR_OP_tanh: return cle_call1(m, "tanhf", x);
	case IR_OP_sigmoid: return xsigmoid(m, NULL, x);
	case IR_OP_erf: return cle_call1(m, "erff", x);
	case IR_OP_relu: return cle_sel(m, LLVMBuildFCmp(b, LLVMRealOLT, x, cle_cf(m, 0), ""), cle_cf(m, 0), x);
	case IR_OP_gelu:
		if (a->approximate == IR_GELU_TANH) {
			LLVMValueRef x3 = LLVMBuildFMul(b, LLVMBuildFMul(b, x, x, ""), x, "");
			LLVMValueRef in = LLVMBuildFMul(b, cle_cf(m, 0.7978845608028654),
							LLVMBuildFAdd(b, x, LLVMBuildFMul(b, cle_cf(m, 0.044715), x3, ""), ""), "");
			/* 0.5 x (1 + tanh(u)) = x sigmoid(2u): no tanhf call, no cancellation */
			return xsigmoid(m, x, LLVMBuildFMul(b, cle_cf(m, 2), in, ""));
		} else {
			LLVMValueRef t = LLVMBuildFAdd(b, cle_cf(m, 1), cle_call1(m, "erff", LLVMBuildFMul(b, x, cle_cf(m, 0.7071067811865476), "")), "");
			return LLVMBuildFMul(b, LLVMBuildFMul(b, cle_cf(m, 0.5), x, ""), t, "");
		}
	case IR_OP_silu: return xsigmoid(m, x, x);
	case IR_OP_hardswish:
		/* x hardsigmoid(x): the factor is in [0, 1], so no overflow where
		 * x relu6(x + 3) would (hardswish(3e38) = 3e38) */
		return LLVMBuildFMul(b, x, LLVMBuildFDiv(b, relu6(m, LLVMBuildFAdd(b, x, cle_cf(m, 3), "")), cle_cf(m, 6), ""), "");
	case IR_OP_hardsigmoid: return LLVMBuildFDiv(b, relu6(m, LLVMBuildFAdd(b, x, cle_cf(m, 3), "")), cle_cf(m, 6), "");
	case IR_OP_clamp: {
		LLVMValueRef lo = cle_cf(m, a->min), hi = cle_cf(m, a->max);
		x = cle_sel(m, LLVMBuildFCmp(b, LLVMRealOLT, x, lo, ""), lo, x);
		return cle_sel(m, LLVMBuildFCmp(b, LLVMRealOGT, x, hi, ""), hi, x);
	}
	case IR_OP_sin: return cle_call1(m, "llvm.sin.f32", x);
	case IR_OP_cos: return cle_call1(m, "llvm.cos.f32", x);
	case IR_OP_floor: return cle_call1(m, "llvm.floor.f32", x);
	case IR_OP_ceil: return cle_call1(m, "llvm.ceil.f32", x);
	case IR_OP_round: return cle_call1(m, "llvm.rint.f32", x);
	case IR_OP_softplus: return softplus(m, x);
	case IR_OP_mish: return LLVMBuildFMul(b, x, cle_call1(m, "tanhf", softplus(m, x)), "");
	case IR_OP_elu:
		return cle_sel(m, LLVMBuildFCmp(b, LLVMRealOGT, x, cle_cf(m, 0), ""), x,
			   LLVMBuildFMul(b, cle_cf(m, a->alpha), cle_call1(m, "expm1f", x), ""));
	case IR_OP_leaky_relu:
		return cle_sel(m, LLVMBuildFCmp(b, LLVMRealOLT, x, cle_cf(m, 0), ""), LLVMBuildFMul(b, cle_cf(m, a->alpha), x, ""), x);
	case IR_OP_isnan: return fbool(m, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""));
	case IR_OP_isinf: return fbool(m, LLVMBuildFCmp(b, LLVMRealOEQ, cle_call1(m, "llvm.fabs.f32", x), cle_cf(m, INFINITY), ""));
	case IR_OP_add: return LLVMBuildFAdd(b, x, y, "");
	case IR_OP_sub: return LLVMBuildFSub(b, x, y, "");
	case IR_OP_mul: return LLVMBuildFMul(b, x, y, "");
	case IR_OP_div: return LLVMBuildFDiv(b, x, y, "");
	case IR_OP_pow: return cle_callf(m, "powf", m->f32, x, y);
	case IR_OP_min:
	case IR_OP_max: {
		LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, y, "");
		LLVMValueRef c = LLVMBuildFCmp(b, n->op == IR_OP_min ? LLVMRealOLT : LLVMRealOGT, x, y, "");
		return cle_sel(m, nan, cle_cf(m, NAN), cle_sel(m, c, x, y));
	}
	case IR_OP_equal: return fbool(m, LLVMBuildFCmp(b, LLVMRealOEQ, x, y, ""));
	case IR_OP_less: return fbool(m, LLVMBuildFCmp(b, LLVMRealOLT, x, y, ""));
	case IR_OP_greater: return fbool(m, LLVMBuildFCmp(b, LLVMRealOGT, x, y, ""));
	case IR_OP_mod: {
		LLVMValueRef r = LLVMBuildFRem(b, x, y, "");
		if (a->fmod)
			return r;
		LLVMValueRef nz = LLVMBuildFCmp(b, LLVMRealONE, r, cle_cf(m, 0), "");
		LLVMValueRef sr = LLVMBuildFCmp(b, LLVMRealOLT, r, cle_cf(m, 0), "");
		LLVMValueRef sy = LLVMBuildFCmp(b, LLVMRealOLT, y, cle_cf(m, 0), "");
		LLVMValueRef fix = LLVMBuildAnd(b, nz, LLVMBuildICmp(b, LLVMIntNE, sr, sy, ""), "");
		return cle_sel(m, fix, LLVMBuildFAdd(b, r, y, ""), r);
	}
	default: return NULL;
	}
}

/* An integer op on x (and y), wrapping, as cg_int_expr; NULL when not taken. */
static LLVMValueRef int_op(cl_emitter *m, const ir_node *n, LLVMValueRef x, LLVMValueRef y)
{
	LLVMBuilderRef b = m->b;
	switch (n->op) {
	case IR_OP_neg: return LLVMBuildSub(b, cle_ci(m, 0), x, "");
	case IR_OP_abs: return cle_sel(m, LLVMBuildICmp(b, LLVMIntSLT, x, cle_ci(m, 0), ""), LLVMBuildSub(b, cle_ci(m, 0), x, ""), x);
	case IR_OP_relu: return cle_sel(m, LLVMBuildICmp(b, LLVMIntSLT, x, cle_ci(m, 0), ""), cle_ci(m, 0), x);
	case IR_OP_add: return LLVMBuildAdd(b, x, y, "");
	case IR_OP_sub: return LLVMBuildSub(b, x, y, "");
	case IR_OP_mul: return LLVMBuildMul(b, x, y, "");
	case IR_OP_div: {
		LLVMValueRef z = LLVMBuildICmp(b, LLVMIntEQ, y, cle_ci(m, 0), "");
		LLVMValueRef m1 = LLVMBuildICmp(b, LLVMIntEQ, y, cle_ci(m, -1), "");
		LLVMValueRef safe = cle_sel(m, LLVMBuildOr(b, z, m1, ""), cle_ci(m, 1), y);
		LLVMValueRef q = LLVMBuildSDiv(b, x, safe, "");
		return cle_sel(m, z, cle_ci(m, 0), cle_sel(m, m1, LLVMBuildSub(b, cle_ci(m, 0), x, ""), q));
	}
	case IR_OP_min: return cle_sel(m, LLVMBuildICmp(b, LLVMIntSLT, x, y, ""), x, y);
	case IR_OP_max: return cle_sel(m, LLVMBuildICmp(b, LLVMIntSGT, x, y, ""), x, y);
	case IR_OP_equal: return fbool(m, LLVMBuildICmp(b, LLVMIntEQ, x, y, ""));
	case IR_OP_less: return fbool(m, LLVMBuildICmp(b, LLVMIntSLT, x, y, ""));
	case IR_OP_greater: return fbool(m, LLVMBuildICmp(b, LLVMIntSGT, x, y, ""));
	default: return NULL;
	}
}

static LLVMValueRef compute(cl_emitter *m, ir_ref r, const LLVMValueRef *x, int rank)
{
	const ir_node *n = &m->g->nodes[r];
	LLVMValueRef a[3] = {0};
	for (uint32_t k = 0; k < n->nin && k < 3; k++) {
		const ir_shape *s = &m->g->nodes[n->in[k]].shape;
		LLVMValueRef ox[IR_MAX_RANK];
		for (int od = 0; od < s->rank; od++) {
			int d = od + (rank - s->rank);
			ox[od] = s->d[od] == 1 || d < 0 ? cle_ci(m, 0) : x[d];
		}
		if (!(a[k] = cle_value(m, n->in[k], ox, s->rank)))
			return NULL;
	}
	ir_dtype it = m->g->nodes[n->in[0]].dtype;
	bool fdom = ir_dtype_is_float(it);
	if (n->op == IR_OP_where)
		return cle_sel(m, LLVMBuildICmp(m->b, LLVMIntNE, a[0], cle_ci(m, 0), ""), a[1], a[2]);
	if (n->op == IR_OP_cast) {
		ir_dtype ot = n->dtype;
		if (cle_is_f(ot)) {
			LLVMValueRef v = fdom ? a[0] : LLVMBuildSIToFP(m->b, a[0], m->f32, "");
			return ot == IR_BF16 ? cle_bf16_round(m, v) : v;
		}
		if (ot == IR_BOOL)
			return fbool(m, fdom ? LLVMBuildFCmp(m->b, LLVMRealUNE, a[0], cle_cf(m, 0), "")
					     : LLVMBuildICmp(m->b, LLVMIntNE, a[0], cle_ci(m, 0), ""));
		if (ot == IR_I64 && !fdom)
			return a[0];
		return NULL;
	}
	if (!fdom && n->op == IR_OP_div) {
		/* a kernel cannot report integer division by zero, which the
		 * reference interpreter refuses ("div: integer division by
		 * zero"): only a nonzero constant divisor is taken here, others
		 * fall back to the reference and its error */
		const ir_node *d = &m->g->nodes[n->in[1]];
		if (!is_scalar_const(d) || ir_load(d->dtype, d->data, 0) == 0)
			return NULL;
	}
	LLVMValueRef v = fdom ? float_op(m, n, a[0], a[1]) : int_op(m, n, a[0], a[1]);
	return v && n->dtype == IR_BF16 ? cle_bf16_round(m, v) : v;
}

LLVMValueRef cle_value(cl_emitter *m, ir_ref r, const LLVMValueRef *x, int rank)
{
	if (m->fail)
		return NULL;
	const ir_graph *g = m->g;
	const ir_node *n = &g->nodes[r];
	if (!cle_ok_dtype(n->dtype)) {
		m->fail = true;
		return NULL;
	}
	if (r == m->core)
		return load_val(m, n->dtype, m->bufs[0], m->rootlin);
	if (is_scalar_const(n)) {
		double v = ir_load(n->dtype, n->data, 0);
		return cle_is_f(n->dtype) ? cle_cf(m, v) : cle_ci(m, (int64_t)v);
	}
	if (m->rows_n && m->fp->group_of[r] == m->gid && ir_numel(&n->shape) == m->rows_n)
		for (uint32_t i = 0; i < m->nrowv; i++)
			if (m->rowr[i] == r)
				return m->rowv[i];
	LLVMValueRef hit = memo_get(m, r, x, rank);
	if (hit)
		return hit;
	int si = -1;
	for (uint32_t i = 0; i < m->nscr; i++)
		if (m->scr_r[i] == r)
			si = (int)i;
	if (si >= 0 && m->pass > m->scr_pass[si]) {
		LLVMValueRef v = cle_loadf(m, m->f32, cle_gep(m, m->f32, m->scr_p[si], m->lane));
		memo_put(m, r, x, rank, v);
		return v;
	}
	bool here = m->fp->group_of[r] == m->gid || m->fp->free_[r];
	LLVMValueRef v = NULL;
	if (!here) {
		v = m->fp->stored[r] ? load_node(m, r, x) : NULL;
		goto done;
	}
	ir_kind kind = ir_ops[n->op].kind;
	if (kind == IR_K_UNARY || kind == IR_K_BINARY || kind == IR_K_TERNARY) {
		v = compute(m, r, x, rank);
		goto done;
	}
	if (n->op == IR_OP_iota) {
		int ax = ir_axis(n->attrs->axis, n->shape.rank);
		if (ax >= 0)
			v = cle_is_f(n->dtype) ? LLVMBuildSIToFP(m->b, x[ax], m->f32, "") : x[ax];
		if (v && n->dtype == IR_BF16)
			v = cle_bf16_round(m, v);
		goto done;
	}
	{
		const ir_shape *is = &g->nodes[n->in[0]].shape;
		const ir_attrs *at = n->attrs;
		LLVMValueRef ox[IR_MAX_RANK];
		for (int d = 0; d < is->rank; d++)
			ox[d] = d < rank ? x[d] : cle_ci(m, 0);
		switch (n->op) {
		case IR_OP_transpose:
			for (int d = 0; d < at->perm.n && d < rank; d++)
				ox[at->perm.v[d]] = x[d];
			break;
		case IR_OP_expand:
			for (int od = 0; od < is->rank; od++) {
				int d = od + (rank - is->rank);
				ox[od] = is->d[od] == 1 || d < 0 ? cle_ci(m, 0) : x[d];
			}
			break;
		case IR_OP_split: {
			int ax = ir_axis(at->axis, is->rank);
			int64_t start = 0;
			for (int64_t i = 0; i < at->index && i < at->sizes.n; i++)
				start += at->sizes.v[i];
			if (ax < 0)
				goto done;
			ox[ax] = LLVMBuildAdd(m->b, x[ax], cle_ci(m, start), "");
			break;
		}
		case IR_OP_slice:
			for (int i = 0; i < at->starts.n; i++) {
				int ax = ir_axis(at->axes.n ? at->axes.v[i] : i, is->rank);
				int64_t step = at->steps.n ? at->steps.v[i] : 1, first = 0;
				if (ax < 0 || step == 0)
					goto done;
				ir_slice_axis(is->d[ax], at->starts.v[i], at->ends.v[i], step, &first);
				ox[ax] = LLVMBuildAdd(m->b, LLVMBuildMul(m->b, x[ax], cle_ci(m, step), ""), cle_ci(m, first), "");
			}
			break;
		default: {
			if (!fu_is_view(n))
				goto done;
			/* through the linear index; an empty operand has none (and
			 * its dims' product may not fit) */
			LLVMValueRef lin = linear(m, &n->shape, x);
			bool empty = ir_numel(is) == 0;
			int64_t st = 1;
			for (int d = is->rank - 1; d >= 0; d--) {
				if (is->d[d] == 1 || empty)
					ox[d] = cle_ci(m, 0);
				else
					ox[d] = LLVMBuildURem(m->b, st == 1 ? lin : LLVMBuildUDiv(m->b, lin, cle_ci(m, st), ""),
							      cle_ci(m, is->d[d]), "");
				st = empty ? 1 : st * is->d[d];
			}
			break;
		}
		}
		v = cle_value(m, n->in[0], ox, is->rank);
	}
done:
	if (!v) {
		m->fail = true;
		return NULL;
	}
	if (si >= 0)
		cle_storef(m, v, cle_gep(m, m->f32, m->scr_p[si], m->lane));
	memo_put(m, r, x, rank, v);
	return v;
}

/* ---- kernels ---- */

LLVMValueRef cle_new_fn(cl_emitter *m, char **fns, uint32_t *nfns, cl_step *st, LLVMValueRef *lo, LLVMValueRef *hi)
{
	char name[32];
	use_part(m, (int)(m->nfn % CL_NMOD));
	snprintf(name, sizeof name, "k%u", m->nfn++);
	LLVMValueRef f = LLVMAddFunction(m->mod, name, m->fnty);
	fns[*nfns] = strdup(name);
	if (!fns[*nfns])
		m->fail = m->oom = true;
	st->fn = (int32_t)(*nfns)++;
	LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(m->ctx, f, "entry");
	LLVMPositionBuilderAtEnd(m->b, entry);
	LLVMValueRef bufs = LLVMGetParam(f, 0);
	LLVMSetValueName2(bufs, "bufs", 4);
	for (uint32_t k = 0; k < st->nargs; k++)
		m->bufs[k] = cle_loadf(m, m->ptr, cle_gep(m, m->ptr, bufs, cle_ci(m, k)));
	*lo = LLVMGetParam(f, 1);
	*hi = LLVMGetParam(f, 2);
	return f;
}

void cle_loop_begin(cl_emitter *m, LLVMValueRef f, LLVMValueRef from, LLVMValueRef to, loop *l)
{
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(m->b);
	l->head = LLVMAppendBasicBlockInContext(m->ctx, f, "head");
	l->body = LLVMAppendBasicBlockInContext(m->ctx, f, "body");
	l->exit = LLVMAppendBasicBlockInContext(m->ctx, f, "exit");
	l->to = to;
	LLVMBuildBr(m->b, l->head);
	LLVMPositionBuilderAtEnd(m->b, l->head);
	l->iv = LLVMBuildPhi(m->b, m->i64, "i");
	LLVMAddIncoming(l->iv, &from, &pre, 1);
	LLVMBuildCondBr(m->b, LLVMBuildICmp(m->b, LLVMIntSLT, l->iv, to, ""), l->body, l->exit);
	LLVMPositionBuilderAtEnd(m->b, l->body);
}

void cle_loop_end(cl_emitter *m, loop *l, int64_t step)
{
	LLVMValueRef next = LLVMBuildAdd(m->b, l->iv, cle_ci(m, step), "");
	LLVMBasicBlockRef cur = LLVMGetInsertBlock(m->b);
	LLVMAddIncoming(l->iv, &next, &cur, 1);
	LLVMBuildBr(m->b, l->head);
	LLVMPositionBuilderAtEnd(m->b, l->exit);
}

/* A loop-carried value (a phi in l's head), updated by loop_set. */
LLVMValueRef cle_carried(cl_emitter *m, loop *l, LLVMValueRef init, LLVMBasicBlockRef pre)
{
	LLVMBasicBlockRef here = LLVMGetInsertBlock(m->b);
	LLVMValueRef first = LLVMGetFirstInstruction(l->head);
	LLVMPositionBuilderBefore(m->b, first);
	LLVMValueRef p = LLVMBuildPhi(m->b, LLVMTypeOf(init), "acc");
	LLVMAddIncoming(p, &init, &pre, 1);
	LLVMPositionBuilderAtEnd(m->b, here);
	return p;
}

static void add_arg(cl_step *st, ir_ref r, bool *ok)
{
	for (uint32_t k = 0; k < st->nargs; k++)
		if (st->args[k] == r)
			return;
	if (st->nargs >= CL_MAX_ARGS) {
		*ok = false;
		return;
	}
	st->args[st->nargs++] = r;
}

/* The stored values group gid reads (its loads), into st->args after the root. */
bool cle_collect_loads(const ir_graph *g, const fu_plan *fp, uint32_t gid, ir_ref core, cl_step *st)
{
	const fu_group *gr = &fp->groups[gid];
	bool ok = true;
	/* free nodes reached through members may read stored values too: walk */
	ir_ref stack[256];
	uint32_t ns = 0;
	for (uint32_t k = 0; k < gr->n && ns < SN_COUNT(stack); k++)
		stack[ns++] = fp->members[gr->first + k];
	uint32_t guard = 0;
	while (ns && ok && guard++ < 4096) {
		ir_ref r = stack[--ns];
		const ir_node *n = &g->nodes[r];
		if (r == core)
			continue;
		for (uint32_t k = 0; k < n->nin; k++) {
			ir_ref q = n->in[k];
			if (fp->group_of[q] == gid || is_scalar_const(&g->nodes[q]))
				continue;
			if (fp->free_[q] && !fp->stored[q]) {
				if (ns < SN_COUNT(stack))
					stack[ns++] = q;
				else
					ok = false;
				continue;
			}
			if (!fp->stored[q])
				return false;
			add_arg(st, q, &ok);
		}
	}
	return ok && guard < 4096;
}

/* A pointwise group (or a conv's epilogue, core read in place). */
static bool emit_pointwise(cl_emitter *m, const ir_graph *g, const fu_plan *fp, uint32_t gid, ir_ref core,
			   cl_step *st, char **fns, uint32_t *nfns)
{
	const fu_group *gr = &fp->groups[gid];
	const ir_node *rn = &g->nodes[gr->root];
	if (!cle_ok_dtype(rn->dtype))
		return false;
	/* the core is read in place from the root's buffer: same element size
	 * (a bf16 convolution whose epilogue ends in a cast to f32 falls back) */
	if (core != IR_NONE && g->nodes[core].dtype != rn->dtype)
		return false;
	if (core != IR_NONE && (g->nodes[core].shape.rank != rn->shape.rank ||
				memcmp(g->nodes[core].shape.d, rn->shape.d, sizeof rn->shape.d[0] * (size_t)rn->shape.rank)))
		return false;
	st->nargs = 0;
	st->args[st->nargs++] = gr->root;
	if (!cle_collect_loads(g, fp, gid, core, st))
		return false;
	int R = rn->shape.rank;
	int64_t inner = R ? rn->shape.d[R - 1] : 1, numel = ir_numel(&rn->shape);
	int64_t rows = inner ? numel / inner : 0;
	m->g = g;
	m->fp = fp;
	m->gid = gid;
	m->core = core;
	m->args = st->args;
	m->nargs = &st->nargs;
	m->nmemo = 0;
	m->rows_n = 0;
	m->nscr = 0;
	m->fail = false;
	LLVMValueRef lo, hi;
	LLVMValueRef f = cle_new_fn(m, fns, nfns, st, &lo, &hi);
	/* an epilogue's columns are its task's channels; a kernel of its own
	 * runs whole rows, its loop bounds constant (a transpose's strided
	 * loads measured 2x slower with them taken from c0 and c1) */
	LLVMValueRef c0 = core != IR_NONE ? LLVMGetParam(f, 3) : cle_ci(m, 0);
	LLVMValueRef c1 = core != IR_NONE ? LLVMGetParam(f, 4) : cle_ci(m, inner);
	loop lr, lj;
	cle_loop_begin(m, f, lo, hi, &lr);
	LLVMValueRef x[IR_MAX_RANK];
	LLVMValueRef rem = lr.iv;
	for (int d = R - 2; d >= 0; d--) {
		if (d == 0) {
			x[d] = rem;
		} else {
			x[d] = LLVMBuildURem(m->b, rem, cle_ci(m, rn->shape.d[d]), "");
			rem = LLVMBuildUDiv(m->b, rem, cle_ci(m, rn->shape.d[d]), "");
		}
	}
	LLVMValueRef rowbase = LLVMBuildMul(m->b, lr.iv, cle_ci(m, inner), "");
	cle_loop_begin(m, f, c0, c1, &lj);
	if (R)
		x[R - 1] = lj.iv;
	m->nmemo = 0;
	m->rootlin = LLVMBuildAdd(m->b, rowbase, lj.iv, "");
	LLVMValueRef v = cle_value(m, gr->root, x, R);
	if (!m->fail && v)
		cle_store_val(m, rn->dtype, v, m->bufs[0], m->rootlin);
	cle_loop_end(m, &lj, 1);
	cle_loop_end(m, &lr, 1);
	LLVMBuildRetVoid(m->b);
	if (m->fail || !v) {
		LLVMDeleteFunction(f);
		free(fns[--*nfns]);
		st->fn = -1;
		return false;
	}
	st->rows = rows;
	st->inner = inner;
	cle_dedupe(m, f, st, fns, nfns);
	return true;
}

bool cl_emit_group(cl_emitter *m, const ir_graph *g, const fu_plan *fp, uint32_t gid, cl_step *st, char **fns,
		   uint32_t *nfns)
{
	const fu_group *gr = &fp->groups[gid];
	st->fn = -1;
	switch (gr->kind) {
	case FU_POINTWISE: return emit_pointwise(m, g, fp, gid, IR_NONE, st, fns, nfns);
	case FU_CONV: return emit_pointwise(m, g, fp, gid, gr->core, st, fns, nfns);
	case FU_ROWS: return cle_emit_row_group(m, g, fp, gid, st, fns, nfns);
	case FU_NODE: {
		const ir_node *n = &g->nodes[gr->root];
		ir_kind k = ir_ops[n->op].kind;
		if (k == IR_K_UNARY || k == IR_K_BINARY || k == IR_K_TERNARY || fu_fusible(n) || n->op == IR_OP_iota)
			return emit_pointwise(m, g, fp, gid, IR_NONE, st, fns, nfns);
		return cle_emit_rows(m, g, gr->root, st, fns, nfns);
	}
	default: return false;
	}
}
