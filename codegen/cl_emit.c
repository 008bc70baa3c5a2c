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
 * Row kernels (softmax, log_softmax, layer_norm, rms_norm, reductions over
 * trailing axes): one row per iteration, statistics accumulated in
 * vectors of 8 (LLVM 16's C API sets no fast-math flags, so a scalar
 * reduction would not vectorize), then a scalar tail: sums in double, as
 * the reference interpreter's, max and min in f32, NaN propagating.
 *
 * Row groups (FU_ROWS: a decomposed norm or softmax): one row per
 * iteration too, their members from the element emitter above, a pass
 * per reduction with the same accumulation rules (emit_row_group). */
#include "codegen/cl.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VW 8

/* One LLVM context and module with its builder and types. */
typedef struct part {
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	LLVMTypeRef f32, i64, i32, i8, ptr, v8, fnty, vd;
} part;

struct cl_emitter {
	part parts[CL_NMOD];
	/* the part the current kernel goes to */
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	LLVMTypeRef f32, i64, i32, i8, ptr, v8, fnty, vd;
	/* per kernel */
	const ir_graph *g;
	const fu_plan *fp;
	uint32_t gid;
	ir_ref core; /* read in place from the root buffer (a conv epilogue) */
	LLVMValueRef bufs[CL_MAX_ARGS];
	ir_ref *args;
	uint32_t *nargs;
	LLVMValueRef rootlin; /* the root's linear index at the current element */
	struct memo {
		ir_ref r;
		int rank;
		LLVMValueRef ix[IR_MAX_RANK];
		LLVMValueRef v;
	} *memo;
	uint32_t nmemo, capmemo;
	/* a row group's (emit_row_group) values of one per row, its members
	 * of rows_n elements: each is the row's value wherever it is read
	 * from (a reshape's index need not be the row's), set in order */
	int64_t rows_n; /* 0: not a row group */
	uint32_t nrowv;
	ir_ref rowr[64];
	LLVMValueRef rowv[64];
	/* and the members of R*L elements one pass computes and later passes
	 * read back (scr_r, in pass scr_pass, stored in the row's scratch
	 * scr_p at the current element's offset in the row, lane) */
	int pass;
	LLVMValueRef lane;
	uint32_t nscr;
	ir_ref scr_r[8];
	int scr_pass[8];
	LLVMValueRef scr_p[8];
	bool fail;
	bool oom; /* an allocation failed: the lowering fails (not a fallback) */
	uint32_t nfn;
	/* emitted functions' bodies as text (without the name), for dedupe */
	char **texts;
	int32_t *tfn; /* the plan function index of texts[i] */
	uint32_t ntexts, captexts;
};

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
static void dedupe(cl_emitter *m, LLVMValueRef f, cl_step *st, char **fns, uint32_t *nfns)
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

static LLVMValueRef ci(cl_emitter *m, int64_t v)
{
	return LLVMConstInt(m->i64, (unsigned long long)v, 1);
}

static LLVMValueRef cf(cl_emitter *m, double v)
{
	return LLVMConstReal(m->f32, v);
}

/* A call of a function of one or two floats (libm or an intrinsic),
 * declared on first use; ty is the float or vector type. */
static LLVMValueRef callf(cl_emitter *m, const char *name, LLVMTypeRef ty, LLVMValueRef x, LLVMValueRef y)
{
	LLVMTypeRef ps[2] = {ty, ty};
	LLVMTypeRef ft = LLVMFunctionType(ty, ps, y ? 2 : 1, 0);
	LLVMValueRef f = LLVMGetNamedFunction(m->mod, name);
	if (!f)
		f = LLVMAddFunction(m->mod, name, ft);
	LLVMValueRef as[2] = {x, y};
	return LLVMBuildCall2(m->b, ft, f, as, y ? 2 : 1, "");
}

static LLVMValueRef call1(cl_emitter *m, const char *name, LLVMValueRef x)
{
	return callf(m, name, m->f32, x, NULL);
}

static LLVMValueRef gep(cl_emitter *m, LLVMTypeRef t, LLVMValueRef p, LLVMValueRef i)
{
	return LLVMBuildGEP2(m->b, t, p, &i, 1, "");
}

static LLVMValueRef loadf(cl_emitter *m, LLVMTypeRef t, LLVMValueRef p)
{
	LLVMValueRef v = LLVMBuildLoad2(m->b, t, p, "");
	LLVMSetAlignment(v, t == m->v8 ? 4 : (unsigned)(LLVMGetTypeKind(t) == LLVMIntegerTypeKind
								  ? LLVMGetIntTypeWidth(t) / 8 : 4));
	return v;
}

static void storef(cl_emitter *m, LLVMValueRef v, LLVMValueRef p)
{
	LLVMValueRef s = LLVMBuildStore(m->b, v, p);
	LLVMTypeRef t = LLVMTypeOf(v);
	LLVMSetAlignment(s, t == m->v8 ? 4 : (unsigned)(LLVMGetTypeKind(t) == LLVMIntegerTypeKind
								  ? LLVMGetIntTypeWidth(t) / 8 : 4));
}

/* A dtype the emitter computes in (bf16: stored as bf16, computed in
 * f32), and its value type. */
static bool ok_dtype(ir_dtype t)
{
	return t == IR_F32 || t == IR_BF16 || t == IR_I64 || t == IR_BOOL;
}

static bool is_f(ir_dtype t)
{
	return t == IR_F32 || t == IR_BF16;
}

/* bf16 is the top half of an f32: widening is exact. v: i16 or <8 x i16>. */
static LLVMValueRef bf16_widen(cl_emitter *m, LLVMValueRef v)
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
static LLVMValueRef bf16_bits(cl_emitter *m, LLVMValueRef f)
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
static LLVMValueRef bf16_round(cl_emitter *m, LLVMValueRef f)
{
	return bf16_widen(m, bf16_bits(m, f));
}

static bool ok_load(ir_dtype t)
{
	return t == IR_F32 || t == IR_I64 || t == IR_BOOL || t == IR_I32 || t == IR_U8 || t == IR_I8 || t == IR_BF16;
}

static LLVMTypeRef mem_type(cl_emitter *m, ir_dtype t)
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
	LLVMTypeRef mt = mem_type(m, t);
	LLVMValueRef v = loadf(m, mt, gep(m, mt, base, i));
	switch (t) {
	case IR_F32:
	case IR_I64: return v;
	case IR_BF16: return bf16_widen(m, v);
	case IR_U8:
	case IR_BOOL: return LLVMBuildZExt(m->b, v, m->i64, "");
	default: return LLVMBuildSExt(m->b, v, m->i64, "");
	}
}

static void store_val(cl_emitter *m, ir_dtype t, LLVMValueRef v, LLVMValueRef base, LLVMValueRef i)
{
	LLVMTypeRef mt = mem_type(m, t);
	if (t == IR_BOOL)
		v = LLVMBuildTrunc(m->b, v, m->i8, "");
	if (t == IR_BF16)
		v = bf16_bits(m, v);
	storef(m, v, gep(m, mt, base, i));
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

static LLVMValueRef value(cl_emitter *m, ir_ref r, const LLVMValueRef *x, int rank);

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
	LLVMValueRef l = ci(m, 0);
	if (ir_numel(s) == 0) /* no element to index; its dims' product may not fit */
		return l;
	int64_t st = 1;
	for (int d = s->rank - 1; d >= 0; d--) {
		if (s->d[d] != 1)
			l = LLVMBuildAdd(m->b, l, LLVMBuildMul(m->b, x[d], ci(m, st), ""), "");
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

static LLVMValueRef sel(cl_emitter *m, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildSelect(m->b, c, a, b, "");
}

/* A float constant of type ty (f32, or <8 x float> splat). */
static LLVMValueRef cv(cl_emitter *m, LLVMTypeRef ty, double v)
{
	if (ty != m->v8)
		return cf(m, v);
	LLVMValueRef e[VW];
	for (int i = 0; i < VW; i++)
		e[i] = cf(m, v);
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
	LLVMValueRef c = sel(m, LLVMBuildFCmp(b, LLVMRealOGT, x, cv(m, ty, 89.0), ""), cv(m, ty, 89.0), x);
	c = sel(m, low, cv(m, ty, -150.0), c);
	c = sel(m, nan, cv(m, ty, 0), c);
	LLVMValueRef n = callf(m, vec ? "llvm.rint.v8f32" : "llvm.rint.f32", ty,
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
		y = sel(m, low, LLVMBuildFMul(b, a, cv(m, ty, 0), ""), y);
	return sel(m, nan, x, y);
}

static LLVMValueRef fexp(cl_emitter *m, LLVMValueRef x, LLVMTypeRef ty)
{
	return fexp_mul(m, x, NULL, ty);
}

static LLVMValueRef relu6(cl_emitter *m, LLVMValueRef v)
{
	v = sel(m, LLVMBuildFCmp(m->b, LLVMRealOLT, v, cf(m, 0), ""), cf(m, 0), v);
	return sel(m, LLVMBuildFCmp(m->b, LLVMRealOGT, v, cf(m, 6), ""), cf(m, 6), v);
}

static LLVMValueRef softplus(cl_emitter *m, LLVMValueRef x)
{
	LLVMValueRef pos = LLVMBuildFAdd(m->b, x, call1(m, "log1pf", call1(m, "llvm.exp.f32", LLVMBuildFNeg(m->b, x, ""))), "");
	LLVMValueRef neg = call1(m, "log1pf", call1(m, "llvm.exp.f32", x));
	return sel(m, LLVMBuildFCmp(m->b, LLVMRealOGT, x, cf(m, 0), ""), pos, neg);
}

/* a sigmoid(z) (a NULL: 1), for every z: a / (1 + e^-z) for z >= 0,
 * a e^z / (1 + e^z) below, so that e^z never overflows and a e^z is
 * rounded once where e^z alone is subnormal (z < -87: sigmoid(-100) =
 * 3.7e-44, silu(-100) = -3.7e-42, not 0). The two exponentials of -|z|
 * share their instructions (LLVM's CSE merges them). */
static LLVMValueRef xsigmoid(cl_emitter *m, LLVMValueRef a, LLVMValueRef z)
{
	LLVMValueRef t = LLVMBuildFNeg(m->b, call1(m, "llvm.fabs.f32", z), "");
	LLVMValueRef e = fexp(m, t, m->f32);
	LLVMValueRef neg = a ? fexp_mul(m, t, a, m->f32) : e;
	LLVMValueRef num = sel(m, LLVMBuildFCmp(m->b, LLVMRealOLT, z, cf(m, 0), ""), neg, a ? a : cf(m, 1));
	return LLVMBuildFDiv(m->b, num, LLVMBuildFAdd(m->b, cf(m, 1), e, ""), "");
}

/* A float op on x (and y); NULL when not taken. */
static LLVMValueRef float_op(cl_emitter *m, const ir_node *n, LLVMValueRef x, LLVMValueRef y)
{
	LLVMBuilderRef b = m->b;
	const ir_attrs *a = n->attrs;
	switch (n->op) {
	case IR_OP_neg: return LLVMBuildFNeg(b, x, "");
	case IR_OP_abs: return call1(m, "llvm.fabs.f32", x);
	case IR_OP_exp: return fexp(m, x, m->f32);
	case IR_OP_log: return call1(m, "llvm.log.f32", x);
	case IR_OP_sqrt: return call1(m, "llvm.sqrt.f32", x);
	case IR_OP_rsqrt: return LLVMBuildFDiv(b, cf(m, 1), call1(m, "llvm.sqrt.f32", x), "");
	case IR_OP_tanh: return call1(m, "tanhf", x);
	case IR_OP_sigmoid: return xsigmoid(m, NULL, x);
	case IR_OP_erf: return call1(m, "erff", x);
	case IR_OP_relu: return sel(m, LLVMBuildFCmp(b, LLVMRealOLT, x, cf(m, 0), ""), cf(m, 0), x);
	case IR_OP_gelu:
		if (a->approximate == IR_GELU_TANH) {
			LLVMValueRef x3 = LLVMBuildFMul(b, LLVMBuildFMul(b, x, x, ""), x, "");
			LLVMValueRef in = LLVMBuildFMul(b, cf(m, 0.7978845608028654),
							LLVMBuildFAdd(b, x, LLVMBuildFMul(b, cf(m, 0.044715), x3, ""), ""), "");
			/* 0.5 x (1 + tanh(u)) = x sigmoid(2u): no tanhf call, no cancellation */
			return xsigmoid(m, x, LLVMBuildFMul(b, cf(m, 2), in, ""));
		} else {
			LLVMValueRef t = LLVMBuildFAdd(b, cf(m, 1), call1(m, "erff", LLVMBuildFMul(b, x, cf(m, 0.7071067811865476), "")), "");
			return LLVMBuildFMul(b, LLVMBuildFMul(b, cf(m, 0.5), x, ""), t, "");
		}
	case IR_OP_silu: return xsigmoid(m, x, x);
	case IR_OP_hardswish:
		/* x hardsigmoid(x): the factor is in [0, 1], so no overflow where
		 * x relu6(x + 3) would (hardswish(3e38) = 3e38) */
		return LLVMBuildFMul(b, x, LLVMBuildFDiv(b, relu6(m, LLVMBuildFAdd(b, x, cf(m, 3), "")), cf(m, 6), ""), "");
	case IR_OP_hardsigmoid: return LLVMBuildFDiv(b, relu6(m, LLVMBuildFAdd(b, x, cf(m, 3), "")), cf(m, 6), "");
	case IR_OP_clamp: {
		LLVMValueRef lo = cf(m, a->min), hi = cf(m, a->max);
		x = sel(m, LLVMBuildFCmp(b, LLVMRealOLT, x, lo, ""), lo, x);
		return sel(m, LLVMBuildFCmp(b, LLVMRealOGT, x, hi, ""), hi, x);
	}
	case IR_OP_sin: return call1(m, "llvm.sin.f32", x);
	case IR_OP_cos: return call1(m, "llvm.cos.f32", x);
	case IR_OP_floor: return call1(m, "llvm.floor.f32", x);
	case IR_OP_ceil: return call1(m, "llvm.ceil.f32", x);
	case IR_OP_round: return call1(m, "llvm.rint.f32", x);
	case IR_OP_softplus: return softplus(m, x);
	case IR_OP_mish: return LLVMBuildFMul(b, x, call1(m, "tanhf", softplus(m, x)), "");
	case IR_OP_elu:
		return sel(m, LLVMBuildFCmp(b, LLVMRealOGT, x, cf(m, 0), ""), x,
			   LLVMBuildFMul(b, cf(m, a->alpha), call1(m, "expm1f", x), ""));
	case IR_OP_leaky_relu:
		return sel(m, LLVMBuildFCmp(b, LLVMRealOLT, x, cf(m, 0), ""), LLVMBuildFMul(b, cf(m, a->alpha), x, ""), x);
	case IR_OP_isnan: return fbool(m, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""));
	case IR_OP_isinf: return fbool(m, LLVMBuildFCmp(b, LLVMRealOEQ, call1(m, "llvm.fabs.f32", x), cf(m, INFINITY), ""));
	case IR_OP_add: return LLVMBuildFAdd(b, x, y, "");
	case IR_OP_sub: return LLVMBuildFSub(b, x, y, "");
	case IR_OP_mul: return LLVMBuildFMul(b, x, y, "");
	case IR_OP_div: return LLVMBuildFDiv(b, x, y, "");
	case IR_OP_pow: return callf(m, "powf", m->f32, x, y);
	case IR_OP_min:
	case IR_OP_max: {
		LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, y, "");
		LLVMValueRef c = LLVMBuildFCmp(b, n->op == IR_OP_min ? LLVMRealOLT : LLVMRealOGT, x, y, "");
		return sel(m, nan, cf(m, NAN), sel(m, c, x, y));
	}
	case IR_OP_equal: return fbool(m, LLVMBuildFCmp(b, LLVMRealOEQ, x, y, ""));
	case IR_OP_less: return fbool(m, LLVMBuildFCmp(b, LLVMRealOLT, x, y, ""));
	case IR_OP_greater: return fbool(m, LLVMBuildFCmp(b, LLVMRealOGT, x, y, ""));
	case IR_OP_mod: {
		LLVMValueRef r = LLVMBuildFRem(b, x, y, "");
		if (a->fmod)
			return r;
		LLVMValueRef nz = LLVMBuildFCmp(b, LLVMRealONE, r, cf(m, 0), "");
		LLVMValueRef sr = LLVMBuildFCmp(b, LLVMRealOLT, r, cf(m, 0), "");
		LLVMValueRef sy = LLVMBuildFCmp(b, LLVMRealOLT, y, cf(m, 0), "");
		LLVMValueRef fix = LLVMBuildAnd(b, nz, LLVMBuildICmp(b, LLVMIntNE, sr, sy, ""), "");
		return sel(m, fix, LLVMBuildFAdd(b, r, y, ""), r);
	}
	default: return NULL;
	}
}

/* An integer op on x (and y), wrapping, as cg_int_expr; NULL when not taken. */
static LLVMValueRef int_op(cl_emitter *m, const ir_node *n, LLVMValueRef x, LLVMValueRef y)
{
	LLVMBuilderRef b = m->b;
	switch (n->op) {
	case IR_OP_neg: return LLVMBuildSub(b, ci(m, 0), x, "");
	case IR_OP_abs: return sel(m, LLVMBuildICmp(b, LLVMIntSLT, x, ci(m, 0), ""), LLVMBuildSub(b, ci(m, 0), x, ""), x);
	case IR_OP_relu: return sel(m, LLVMBuildICmp(b, LLVMIntSLT, x, ci(m, 0), ""), ci(m, 0), x);
	case IR_OP_add: return LLVMBuildAdd(b, x, y, "");
	case IR_OP_sub: return LLVMBuildSub(b, x, y, "");
	case IR_OP_mul: return LLVMBuildMul(b, x, y, "");
	case IR_OP_div: {
		LLVMValueRef z = LLVMBuildICmp(b, LLVMIntEQ, y, ci(m, 0), "");
		LLVMValueRef m1 = LLVMBuildICmp(b, LLVMIntEQ, y, ci(m, -1), "");
		LLVMValueRef safe = sel(m, LLVMBuildOr(b, z, m1, ""), ci(m, 1), y);
		LLVMValueRef q = LLVMBuildSDiv(b, x, safe, "");
		return sel(m, z, ci(m, 0), sel(m, m1, LLVMBuildSub(b, ci(m, 0), x, ""), q));
	}
	case IR_OP_min: return sel(m, LLVMBuildICmp(b, LLVMIntSLT, x, y, ""), x, y);
	case IR_OP_max: return sel(m, LLVMBuildICmp(b, LLVMIntSGT, x, y, ""), x, y);
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
			ox[od] = s->d[od] == 1 || d < 0 ? ci(m, 0) : x[d];
		}
		if (!(a[k] = value(m, n->in[k], ox, s->rank)))
			return NULL;
	}
	ir_dtype it = m->g->nodes[n->in[0]].dtype;
	bool fdom = ir_dtype_is_float(it);
	if (n->op == IR_OP_where)
		return sel(m, LLVMBuildICmp(m->b, LLVMIntNE, a[0], ci(m, 0), ""), a[1], a[2]);
	if (n->op == IR_OP_cast) {
		ir_dtype ot = n->dtype;
		if (is_f(ot)) {
			LLVMValueRef v = fdom ? a[0] : LLVMBuildSIToFP(m->b, a[0], m->f32, "");
			return ot == IR_BF16 ? bf16_round(m, v) : v;
		}
		if (ot == IR_BOOL)
			return fbool(m, fdom ? LLVMBuildFCmp(m->b, LLVMRealUNE, a[0], cf(m, 0), "")
					     : LLVMBuildICmp(m->b, LLVMIntNE, a[0], ci(m, 0), ""));
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
	return v && n->dtype == IR_BF16 ? bf16_round(m, v) : v;
}

static LLVMValueRef value(cl_emitter *m, ir_ref r, const LLVMValueRef *x, int rank)
{
	if (m->fail)
		return NULL;
	const ir_graph *g = m->g;
	const ir_node *n = &g->nodes[r];
	if (!ok_dtype(n->dtype)) {
		m->fail = true;
		return NULL;
	}
	if (r == m->core)
		return load_val(m, n->dtype, m->bufs[0], m->rootlin);
	if (is_scalar_const(n)) {
		double v = ir_load(n->dtype, n->data, 0);
		return is_f(n->dtype) ? cf(m, v) : ci(m, (int64_t)v);
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
		LLVMValueRef v = loadf(m, m->f32, gep(m, m->f32, m->scr_p[si], m->lane));
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
			v = is_f(n->dtype) ? LLVMBuildSIToFP(m->b, x[ax], m->f32, "") : x[ax];
		if (v && n->dtype == IR_BF16)
			v = bf16_round(m, v);
		goto done;
	}
	{
		const ir_shape *is = &g->nodes[n->in[0]].shape;
		const ir_attrs *at = n->attrs;
		LLVMValueRef ox[IR_MAX_RANK];
		for (int d = 0; d < is->rank; d++)
			ox[d] = d < rank ? x[d] : ci(m, 0);
		switch (n->op) {
		case IR_OP_transpose:
			for (int d = 0; d < at->perm.n && d < rank; d++)
				ox[at->perm.v[d]] = x[d];
			break;
		case IR_OP_expand:
			for (int od = 0; od < is->rank; od++) {
				int d = od + (rank - is->rank);
				ox[od] = is->d[od] == 1 || d < 0 ? ci(m, 0) : x[d];
			}
			break;
		case IR_OP_split: {
			int ax = ir_axis(at->axis, is->rank);
			int64_t start = 0;
			for (int64_t i = 0; i < at->index && i < at->sizes.n; i++)
				start += at->sizes.v[i];
			if (ax < 0)
				goto done;
			ox[ax] = LLVMBuildAdd(m->b, x[ax], ci(m, start), "");
			break;
		}
		case IR_OP_slice:
			for (int i = 0; i < at->starts.n; i++) {
				int ax = ir_axis(at->axes.n ? at->axes.v[i] : i, is->rank);
				int64_t step = at->steps.n ? at->steps.v[i] : 1, first = 0;
				if (ax < 0 || step == 0)
					goto done;
				ir_slice_axis(is->d[ax], at->starts.v[i], at->ends.v[i], step, &first);
				ox[ax] = LLVMBuildAdd(m->b, LLVMBuildMul(m->b, x[ax], ci(m, step), ""), ci(m, first), "");
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
					ox[d] = ci(m, 0);
				else
					ox[d] = LLVMBuildURem(m->b, st == 1 ? lin : LLVMBuildUDiv(m->b, lin, ci(m, st), ""),
							      ci(m, is->d[d]), "");
				st = empty ? 1 : st * is->d[d];
			}
			break;
		}
		}
		v = value(m, n->in[0], ox, is->rank);
	}
done:
	if (!v) {
		m->fail = true;
		return NULL;
	}
	if (si >= 0)
		storef(m, v, gep(m, m->f32, m->scr_p[si], m->lane));
	memo_put(m, r, x, rank, v);
	return v;
}

/* ---- kernels ---- */

static LLVMValueRef new_fn(cl_emitter *m, char **fns, uint32_t *nfns, cl_step *st, LLVMValueRef *lo, LLVMValueRef *hi)
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
		m->bufs[k] = loadf(m, m->ptr, gep(m, m->ptr, bufs, ci(m, k)));
	*lo = LLVMGetParam(f, 1);
	*hi = LLVMGetParam(f, 2);
	return f;
}

/* A counted loop: *iv runs over [from, to); body goes where the builder is
 * left; loop_end closes it. */
typedef struct loop {
	LLVMBasicBlockRef head, body, exit;
	LLVMValueRef iv, to;
} loop;

static void loop_begin(cl_emitter *m, LLVMValueRef f, LLVMValueRef from, LLVMValueRef to, loop *l)
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

static void loop_end(cl_emitter *m, loop *l, int64_t step)
{
	LLVMValueRef next = LLVMBuildAdd(m->b, l->iv, ci(m, step), "");
	LLVMBasicBlockRef cur = LLVMGetInsertBlock(m->b);
	LLVMAddIncoming(l->iv, &next, &cur, 1);
	LLVMBuildBr(m->b, l->head);
	LLVMPositionBuilderAtEnd(m->b, l->exit);
}

/* A loop-carried value (a phi in l's head), updated by loop_set. */
static LLVMValueRef carried(cl_emitter *m, loop *l, LLVMValueRef init, LLVMBasicBlockRef pre)
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
static bool collect_loads(const ir_graph *g, const fu_plan *fp, uint32_t gid, ir_ref core, cl_step *st)
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
	if (!ok_dtype(rn->dtype))
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
	if (!collect_loads(g, fp, gid, core, st))
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
	LLVMValueRef f = new_fn(m, fns, nfns, st, &lo, &hi);
	/* an epilogue's columns are its task's channels; a kernel of its own
	 * runs whole rows, its loop bounds constant (a transpose's strided
	 * loads measured 2x slower with them taken from c0 and c1) */
	LLVMValueRef c0 = core != IR_NONE ? LLVMGetParam(f, 3) : ci(m, 0);
	LLVMValueRef c1 = core != IR_NONE ? LLVMGetParam(f, 4) : ci(m, inner);
	loop lr, lj;
	loop_begin(m, f, lo, hi, &lr);
	LLVMValueRef x[IR_MAX_RANK];
	LLVMValueRef rem = lr.iv;
	for (int d = R - 2; d >= 0; d--) {
		if (d == 0) {
			x[d] = rem;
		} else {
			x[d] = LLVMBuildURem(m->b, rem, ci(m, rn->shape.d[d]), "");
			rem = LLVMBuildUDiv(m->b, rem, ci(m, rn->shape.d[d]), "");
		}
	}
	LLVMValueRef rowbase = LLVMBuildMul(m->b, lr.iv, ci(m, inner), "");
	loop_begin(m, f, c0, c1, &lj);
	if (R)
		x[R - 1] = lj.iv;
	m->nmemo = 0;
	m->rootlin = LLVMBuildAdd(m->b, rowbase, lj.iv, "");
	LLVMValueRef v = value(m, gr->root, x, R);
	if (!m->fail && v)
		store_val(m, rn->dtype, v, m->bufs[0], m->rootlin);
	loop_end(m, &lj, 1);
	loop_end(m, &lr, 1);
	LLVMBuildRetVoid(m->b);
	if (m->fail || !v) {
		LLVMDeleteFunction(f);
		free(fns[--*nfns]);
		st->fn = -1;
		return false;
	}
	st->rows = rows;
	st->inner = inner;
	dedupe(m, f, st, fns, nfns);
	return true;
}

typedef enum rkind { R_SUM, R_MAX, R_MIN } rkind;

/* Element i of p (dtype t: f32 or bf16), as f32 or, vec, the <8 x float>
 * from i on. */
static LLVMValueRef ld(cl_emitter *m, ir_dtype t, LLVMValueRef p, LLVMValueRef i, bool vec)
{
	if (t != IR_BF16)
		return loadf(m, vec ? m->v8 : m->f32, gep(m, m->f32, p, i));
	LLVMTypeRef et = LLVMInt16TypeInContext(m->ctx);
	LLVMValueRef v = LLVMBuildLoad2(m->b, vec ? LLVMVectorType(et, VW) : et, gep(m, et, p, i), "");
	LLVMSetAlignment(v, 2);
	return bf16_widen(m, v);
}

/* f32 x stored as element i of p (dtype t), rounded when t is bf16. */
static void st_f(cl_emitter *m, ir_dtype t, LLVMValueRef x, LLVMValueRef p, LLVMValueRef i)
{
	if (t == IR_BF16)
		storef(m, bf16_bits(m, x), gep(m, LLVMInt16TypeInContext(m->ctx), p, i));
	else
		storef(m, x, gep(m, m->f32, p, i));
}

/* The larger (max) or smaller of acc and x, NaN when either is: acc
 * once NaN stays, x NaN is taken (ref_reduce's "NaN sticks"; LLVM's
 * maxnum/minnum would drop it). f32 or v8. */
static LLVMValueRef fmaxp(cl_emitter *m, LLVMValueRef acc, LLVMValueRef x, bool max)
{
	LLVMValueRef take = LLVMBuildFCmp(m->b, max ? LLVMRealUGT : LLVMRealULT, x, acc, "");
	LLVMValueRef r = sel(m, take, x, acc);
	return sel(m, LLVMBuildFCmp(m->b, LLVMRealUNO, acc, acc, ""), acc, r);
}

/* f(x) of a reduction (row_reduce), x f32 or v8 loaded; a double (or
 * <8 x double>) for a sum. */
static LLVMValueRef reduce_term(cl_emitter *m, LLVMValueRef x, bool vec, bool sum, int fx, LLVMValueRef c)
{
	LLVMTypeRef f64 = LLVMDoubleTypeInContext(m->ctx);
	if (fx == 2)
		x = fexp(m, LLVMBuildFSub(m->b, x, c, ""), vec ? m->v8 : m->f32);
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
	loop_begin(m, f, ci(m, 0), ci(m, nu), &l);
	LLVMValueRef acc[RU], nacc[RU];
	for (int j = 0; j < RU; j++)
		acc[j] = carried(m, &l, vinit, pre);
	for (int j = 0; j < RU; j++) {
		LLVMValueRef x = ld(m, t, p, LLVMBuildAdd(m->b, l.iv, ci(m, j * VW), ""), true);
		x = reduce_term(m, x, true, sum, fx, vc);
		nacc[j] = sum ? LLVMBuildFAdd(m->b, acc[j], x, "") : fmaxp(m, acc[j], x, max);
	}
	LLVMBasicBlockRef cur = LLVMGetInsertBlock(m->b);
	for (int j = 0; j < RU; j++)
		LLVMAddIncoming(acc[j], &nacc[j], &cur, 1);
	loop_end(m, &l, RU * VW);
	for (int w = RU / 2; w >= 1; w /= 2)
		for (int j = 0; j < w; j++)
			acc[j] = sum ? LLVMBuildFAdd(m->b, acc[j], acc[j + w], "") : fmaxp(m, acc[j], acc[j + w], max);
	/* the vectors left */
	pre = LLVMGetInsertBlock(m->b);
	loop vl;
	loop_begin(m, f, ci(m, nu), ci(m, nv), &vl);
	LLVMValueRef vacc = carried(m, &vl, acc[0], pre);
	LLVMValueRef x = reduce_term(m, ld(m, t, p, vl.iv, true), true, sum, fx, vc);
	LLVMValueRef nv_acc = sum ? LLVMBuildFAdd(m->b, vacc, x, "") : fmaxp(m, vacc, x, max);
	cur = LLVMGetInsertBlock(m->b);
	LLVMAddIncoming(vacc, &nv_acc, &cur, 1);
	loop_end(m, &vl, VW);
	LLVMValueRef s = LLVMBuildExtractElement(m->b, vacc, LLVMConstInt(m->i32, 0, 0), "");
	for (int i = 1; i < VW; i++) {
		LLVMValueRef e = LLVMBuildExtractElement(m->b, vacc, LLVMConstInt(m->i32, (unsigned)i, 0), "");
		s = sum ? LLVMBuildFAdd(m->b, s, e, "") : fmaxp(m, s, e, max);
	}
	/* the scalar tail */
	pre = LLVMGetInsertBlock(m->b);
	loop tl;
	loop_begin(m, f, ci(m, nv), ci(m, cols), &tl);
	LLVMValueRef sacc = carried(m, &tl, s, pre);
	LLVMValueRef y = reduce_term(m, ld(m, t, p, tl.iv, false), false, sum, fx, c);
	LLVMValueRef ns = sum ? LLVMBuildFAdd(m->b, sacc, y, "") : fmaxp(m, sacc, y, max);
	cur = LLVMGetInsertBlock(m->b);
	LLVMAddIncoming(sacc, &ns, &cur, 1);
	loop_end(m, &tl, 1);
	return sacc;
}

/* A norm, softmax or reduction node over its trailing axes, f32 rows. */
static bool emit_rows(cl_emitter *m, const ir_graph *g, ir_ref r, cl_step *st, char **fns, uint32_t *nfns)
{
	const ir_node *n = &g->nodes[r];
	const ir_node *xn = &g->nodes[n->in[0]];
	if (!is_f(n->dtype) || !is_f(xn->dtype))
		return false;
	for (uint32_t k = 1; k < n->nin; k++)
		if (!is_f(g->nodes[n->in[k]].dtype))
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
	LLVMValueRef f = new_fn(m, fns, nfns, st, &lo, &hi);
	loop lr;
	loop_begin(m, f, lo, hi, &lr);
	LLVMValueRef base = LLVMBuildMul(m->b, lr.iv, ci(m, cols), "");
	LLVMValueRef xp = gep(m, mem_type(m, xt), m->bufs[1], base);
	bool is_red = ir_ops[n->op].kind == IR_K_REDUCE;
	LLVMValueRef op = gep(m, mem_type(m, ot), m->bufs[0], is_red ? lr.iv : base);
	LLVMTypeRef f64 = LLVMDoubleTypeInContext(m->ctx);
	LLVMValueRef fc = LLVMConstReal(f64, (double)cols);
	if (is_red) {
		LLVMValueRef s = row_reduce(m, f, xt, xp, cols, rk, 0, NULL);
		if (mean)
			s = LLVMBuildFDiv(m->b, s, fc, "");
		if (rk == R_SUM)
			s = LLVMBuildFPTrunc(m->b, s, m->f32, "");
		st_f(m, ot, s, op, ci(m, 0));
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
				mul = LLVMBuildFDiv(m->b, cf(m, 1), s, "");
			else
				addl = call1(m, "llvm.log.f32", s);
		} else {
			LLVMValueRef var;
			if (n->op == IR_OP_layer_norm) {
				mu = LLVMBuildFDiv(m->b, row_reduce(m, f, xt, xp, cols, R_SUM, 0, NULL), fc, "");
				var = LLVMBuildFDiv(m->b, row_reduce(m, f, xt, xp, cols, R_SUM, 1, mu), fc, "");
			} else {
				var = LLVMBuildFDiv(m->b, row_reduce(m, f, xt, xp, cols, R_SUM, 3, NULL), fc, "");
			}
			rstd = LLVMBuildFDiv(m->b, LLVMConstReal(f64, 1),
					     callf(m, "llvm.sqrt.f64", f64, LLVMBuildFAdd(m->b, var, eps, ""), NULL), "");
		}
		loop lc;
		loop_begin(m, f, ci(m, 0), ci(m, cols), &lc);
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
			x = fexp(m, x, m->f32);
		if (mul)
			x = LLVMBuildFMul(m->b, x, mul, "");
		if (addl)
			x = LLVMBuildFSub(m->b, x, addl, "");
		if (w)
			x = LLVMBuildFMul(m->b, x, ld(m, wt, w, lc.iv, false), "");
		if (bb)
			x = LLVMBuildFAdd(m->b, x, ld(m, bt, bb, lc.iv, false), "");
		st_f(m, ot, x, op, lc.iv);
		loop_end(m, &lc, 1);
	}
	loop_end(m, &lr, 1);
	LLVMBuildRetVoid(m->b);
	if (m->fail) {
		LLVMDeleteFunction(f);
		free(fns[--*nfns]);
		st->fn = -1;
		return false;
	}
	st->rows = rows;
	st->inner = cols;
	dedupe(m, f, st, fns, nfns);
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
			x[d] = ci(m, 0);
		} else if (nz == 1) {
			x[d] = i;
		} else {
			x[d] = LLVMBuildURem(m->b, rem, ci(m, S->d[d]), "");
			rem = LLVMBuildUDiv(m->b, rem, ci(m, S->d[d]), "");
		}
	}
}

/* Lin taken apart over shape s into x (size-1 dims 0). */
static void unlinear(cl_emitter *m, const ir_shape *s, LLVMValueRef lin, LLVMValueRef *x)
{
	LLVMValueRef rem = lin;
	for (int d = s->rank - 1; d >= 0; d--) {
		if (s->d[d] == 1) {
			x[d] = ci(m, 0);
			continue;
		}
		x[d] = LLVMBuildURem(m->b, rem, ci(m, s->d[d]), "");
		rem = LLVMBuildUDiv(m->b, rem, ci(m, s->d[d]), "");
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
	LLVMValueRef init = sum ? LLVMConstReal(f64, 0) : cf(m, max ? -INFINITY : INFINITY);
	LLVMValueRef ie[RL_SUM];
	for (int j = 0; j < vl; j++)
		ie[j] = init;
	int64_t nu = L / RLANES * RLANES;
	LLVMValueRef x[IR_MAX_RANK];
	uint32_t mark = m->nmemo;
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(m->b);
	loop l;
	loop_begin(m, f, ci(m, 0), ci(m, nu), &l);
	LLVMValueRef acc[RLANES / RL_SUM > RLANES / RL_MAX ? RLANES / RL_SUM : RLANES / RL_MAX], nacc[SN_COUNT(acc)];
	for (int u = 0; u < nv; u++)
		acc[u] = carried(m, &l, LLVMConstVector(ie, (unsigned)vl), pre);
	for (int u = 0; u < nv; u++) {
		LLVMValueRef vec = LLVMGetUndef(vf);
		for (int j = 0; j < vl; j++) {
			int off = u * vl + j;
			m->lane = off ? LLVMBuildAdd(m->b, l.iv, ci(m, off), "") : l.iv;
			row_ix(m, S, a, rx, m->lane, x);
			LLVMValueRef v = value(m, rn->in[0], x, S->rank);
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
	loop_end(m, &l, RLANES);
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
	loop_begin(m, f, ci(m, nu), ci(m, L), &tl);
	LLVMValueRef t = carried(m, &tl, s, pre);
	m->lane = tl.iv;
	row_ix(m, S, a, rx, tl.iv, x);
	LLVMValueRef v = value(m, rn->in[0], x, S->rank);
	if (!v)
		return NULL;
	LLVMValueRef nt = sum ? LLVMBuildFAdd(m->b, t, LLVMBuildFPExt(m->b, v, f64, ""), "") : fmaxp(m, t, v, max);
	cur = LLVMGetInsertBlock(m->b);
	LLVMAddIncoming(t, &nt, &cur, 1);
	loop_end(m, &tl, 1);
	m->nmemo = mark;
	if (rn->op == IR_OP_reduce_mean)
		t = LLVMBuildFDiv(m->b, t, LLVMConstReal(f64, (double)L), "");
	if (sum)
		t = LLVMBuildFPTrunc(m->b, t, m->f32, "");
	return rn->dtype == IR_BF16 ? bf16_round(m, t) : t;
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
			if (first[k] >= 0 && !cheap_op(n->op) && is_f(n->dtype) && m->nscr < SN_COUNT(m->scr_r) &&
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
static bool emit_row_group(cl_emitter *m, const ir_graph *g, const fu_plan *fp, uint32_t gid, cl_step *st,
			   char **fns, uint32_t *nfns)
{
	const fu_group *gr = &fp->groups[gid];
	const ir_node *root = &g->nodes[gr->root], *c0 = &g->nodes[gr->core];
	if (gr->n > SN_COUNT(m->rowr) || ir_ops[c0->op].kind != IR_K_REDUCE || !ok_dtype(root->dtype))
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
		    ir_numel(&n->shape) != R || !is_f(n->dtype) || !is_f(g->nodes[n->in[0]].dtype))
			return false;
	}
	st->nargs = 0;
	st->args[st->nargs++] = gr->root;
	if (!collect_loads(g, fp, gid, IR_NONE, st))
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
	LLVMValueRef f = new_fn(m, fns, nfns, st, &lo, &hi);
	for (uint32_t i = 0; i < m->nscr; i++)
		m->scr_p[i] = LLVMBuildArrayAlloca(m->b, m->f32, ci(m, L), "");
	loop lr;
	loop_begin(m, f, lo, hi, &lr);
	/* the row dims of row lr.iv */
	LLVMValueRef rx[IR_MAX_RANK], x[IR_MAX_RANK], px[IR_MAX_RANK];
	LLVMValueRef rem = lr.iv;
	for (int d = a - 1; d >= 0; d--) {
		if (S->d[d] == 1) {
			rx[d] = ci(m, 0);
			continue;
		}
		bool outer = true;
		for (int k = 0; k < d; k++)
			outer &= S->d[k] == 1;
		rx[d] = outer ? rem : LLVMBuildURem(m->b, rem, ci(m, S->d[d]), "");
		if (!outer)
			rem = LLVMBuildUDiv(m->b, rem, ci(m, S->d[d]), "");
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
				px[d] = n->shape.d[d] == 1 || d + off < 0 ? ci(m, 0) : rx[d + off];
			LLVMValueRef v = value(m, mem[k], px, n->shape.rank);
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
		LLVMValueRef base = LLVMBuildMul(m->b, lr.iv, ci(m, L), "");
		loop lc;
		loop_begin(m, f, ci(m, 0), ci(m, L), &lc);
		m->pass = (int)nred;
		m->lane = lc.iv;
		LLVMValueRef lin = LLVMBuildAdd(m->b, base, lc.iv, "");
		bool same = root->shape.rank == S->rank &&
			    !memcmp(root->shape.d, S->d, sizeof S->d[0] * (size_t)S->rank);
		if (same)
			row_ix(m, S, a, rx, lc.iv, x);
		else
			unlinear(m, &root->shape, lin, x);
		LLVMValueRef v = value(m, gr->root, x, root->shape.rank);
		if (v)
			store_val(m, root->dtype, v, m->bufs[0], lin);
		loop_end(m, &lc, 1);
		m->nmemo = mark;
	} else if (!m->fail) {
		/* a per-row value, computed by now (the last member) */
		LLVMValueRef v = NULL;
		for (uint32_t i = 0; i < m->nrowv; i++)
			if (m->rowr[i] == gr->root)
				v = m->rowv[i];
		if (v)
			store_val(m, root->dtype, v, m->bufs[0], lr.iv);
		else
			m->fail = true;
	}
	loop_end(m, &lr, 1);
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
	dedupe(m, f, st, fns, nfns);
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
	case FU_ROWS: return emit_row_group(m, g, fp, gid, st, fns, nfns);
	case FU_NODE: {
		const ir_node *n = &g->nodes[gr->root];
		ir_kind k = ir_ops[n->op].kind;
		if (k == IR_K_UNARY || k == IR_K_BINARY || k == IR_K_TERNARY || fu_fusible(n) || n->op == IR_OP_iota)
			return emit_pointwise(m, g, fp, gid, IR_NONE, st, fns, nfns);
		return emit_rows(m, g, gr->root, st, fns, nfns);
	}
	default: return false;
	}
}
