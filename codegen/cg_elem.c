/* cg_elem.c: elementwise kernels (every UNARY, BINARY and TERNARY op, cast
 * and clamp included) with numpy broadcasting.
 *
 * Semantics follow the reference interpreter (ir/ref/ref_elem.c): float
 * dtypes compute in f32 and round once at the store with the output dtype's
 * rounding; integer dtypes (and bool) compute in long long and wrap to the
 * output's width; casts to integers truncate and saturate (NaN gives 0);
 * casts between integers saturate; where moves bits. One difference:
 * integer division by zero, an error on the reference, gives 0 here (a
 * kernel cannot report it).
 *
 * Shapes are compile-time constants. Each operand gets a stride per output
 * dim (0 where it broadcasts); dims where every operand is contiguous
 * across the boundary are merged, so a broadcast kernel decomposes the
 * flat index over as few dims as possible. When no operand broadcasts, the
 * kernel moves 16 bytes per load/store of its widest dtype (float4 for f32,
 * 8 x 16-bit, ...) and finishes the remainder element by element: the
 * executor starts every buffer 256-byte aligned, and vector j of a buffer
 * starts at byte j * V * size, a multiple of the vector's own size. */
#include "codegen/cg_render.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config); /* cg_common.c */

#define BLOCK 256
#define MAX_GRID 8192

/* A float literal for CUDA C: shortest text that reads back as the float,
 * with an f suffix; infinities and NaN as bit patterns. */
void cg_flit(char *out, size_t cap, double v)
{
	float f = (float)v;
	if (isnan(f)) {
		snprintf(out, cap, "__uint_as_float(0x7fc00000u)");
		return;
	}
	if (isinf(f)) {
		snprintf(out, cap, "__uint_as_float(%s)", f < 0 ? "0xff800000u" : "0x7f800000u");
		return;
	}
	char num[32];
	sn_fmt_float(num, f);
	bool dot = strpbrk(num, ".eE") != NULL;
	snprintf(out, cap, "%s%sf", num, dot ? "" : ".0");
}

/* The float expression of op over x (and y). */
int cg_float_expr(const ir_node *n, char *o, size_t cap)
{
	const char *s = NULL;
	switch (n->op) {
	case IR_OP_neg: s = "-x"; break;
	case IR_OP_abs: s = "fabsf(x)"; break;
	case IR_OP_exp: s = "expf(x)"; break;
	case IR_OP_log: s = "logf(x)"; break;
	case IR_OP_sqrt: s = "sqrtf(x)"; break;
	case IR_OP_rsqrt: s = "1.0f / sqrtf(x)"; break;
	case IR_OP_tanh: s = "tanhf(x)"; break;
	case IR_OP_sigmoid: s = "sn_xsigmoidf(1.0f, x)"; break;
	case IR_OP_erf: s = "erff(x)"; break;
	case IR_OP_relu: s = "x < 0.0f ? 0.0f : x"; break; /* relu(NaN) is NaN */
	case IR_OP_gelu:
		/* tanh: 0.5 x (1 + tanh(u)) = x sigmoid(2u), which does not
		 * cancel where tanh(u) is near -1 (x below about -3) */
		s = n->attrs->approximate == IR_GELU_TANH
			    ? "sn_xsigmoidf(x, 1.5957691216057308f * (x + 0.044715f * x * x * x))"
			    : "0.5f * x * (1.0f + erff(x * 0.7071067811865476f))";
		break;
	case IR_OP_silu: s = "sn_xsigmoidf(x, x)"; break;
	/* x hardsigmoid(x): the factor is in [0, 1], so no overflow where
	 * x relu6(x + 3) would (hardswish(3e38) = 3e38) */
	case IR_OP_hardswish: s = "x * (sn_relu6f(x + 3.0f) / 6.0f)"; break;
	case IR_OP_hardsigmoid: s = "sn_relu6f(x + 3.0f) / 6.0f"; break;
	case IR_OP_clamp: {
		char lo[48], hi[48];
		cg_flit(lo, sizeof lo, n->attrs->min);
		cg_flit(hi, sizeof hi, n->attrs->max);
		snprintf(o, cap, "sn_clampf(x, %s, %s)", lo, hi);
		return SN_OK;
	}
	case IR_OP_add: s = "x + y"; break;
	case IR_OP_sub: s = "x - y"; break;
	case IR_OP_mul: s = "x * y"; break;
	case IR_OP_div: s = "x / y"; break;
	case IR_OP_pow: s = "powf(x, y)"; break;
	/* torch.minimum/maximum: NaN in either operand gives NaN */
	case IR_OP_min: s = "(x != x || y != y) ? __uint_as_float(0x7fc00000u) : (x < y ? x : y)"; break;
	case IR_OP_max: s = "(x != x || y != y) ? __uint_as_float(0x7fc00000u) : (x > y ? x : y)"; break;
	case IR_OP_equal: s = "(long long)(x == y)"; break;
	case IR_OP_less: s = "(long long)(x < y)"; break;
	case IR_OP_greater: s = "(long long)(x > y)"; break;
	case IR_OP_sin: s = "sinf(x)"; break;
	case IR_OP_cos: s = "cosf(x)"; break;
	case IR_OP_floor: s = "floorf(x)"; break;
	case IR_OP_ceil: s = "ceilf(x)"; break;
	case IR_OP_round: s = "rintf(x)"; break; /* ties to even */
	case IR_OP_softplus: s = "sn_softplusf(x)"; break;
	case IR_OP_mish: s = "x * tanhf(sn_softplusf(x))"; break;
	case IR_OP_isnan: s = "(long long)(x != x)"; break;
	case IR_OP_isinf: s = "(long long)(fabsf(x) == __uint_as_float(0x7f800000u))"; break;
	case IR_OP_mod: s = n->attrs->fmod ? "fmodf(x, y)" : "sn_modf(x, y)"; break;
	case IR_OP_elu:
	case IR_OP_leaky_relu: {
		char al[48];
		cg_flit(al, sizeof al, n->attrs->alpha);
		if (n->op == IR_OP_elu)
			snprintf(o, cap, "x > 0.0f ? x : %s * expm1f(x)", al);
		else
			snprintf(o, cap, "x < 0.0f ? %s * x : x", al);
		return SN_OK;
	}
	default: return -1;
	}
	snprintf(o, cap, "%s", s);
	return SN_OK;
}

/* Integer clamp bounds, as the reference: a bound between two integers
 * rounds inward; an infinite bound is no bound. */
static void int_bounds(const ir_attrs *a, char *lo, char *hi, size_t cap)
{
	if (a->min > 9.2e18)
		snprintf(lo, cap, "9223372036854775807LL");
	else if (a->min < -9.2e18)
		snprintf(lo, cap, "(-9223372036854775807LL - 1)");
	else
		snprintf(lo, cap, "%" PRId64 "LL", (int64_t)ceil(a->min));
	if (a->max < -9.2e18)
		snprintf(hi, cap, "(-9223372036854775807LL - 1)");
	else if (a->max > 9.2e18)
		snprintf(hi, cap, "9223372036854775807LL");
	else
		snprintf(hi, cap, "%" PRId64 "LL", (int64_t)floor(a->max));
}

/* The integer expression of op over x (and y); arithmetic wraps through
 * unsigned long long, so there is no undefined behaviour. */
int cg_int_expr(const ir_node *n, char *o, size_t cap)
{
	const char *s = NULL;
	switch (n->op) {
	case IR_OP_neg: s = "(long long)(0ull - (unsigned long long)x)"; break;
	case IR_OP_abs: s = "x < 0 ? (long long)(0ull - (unsigned long long)x) : x"; break;
	case IR_OP_relu: s = "x < 0 ? 0ll : x"; break;
	case IR_OP_clamp: {
		char lo[48], hi[48];
		int_bounds(n->attrs, lo, hi, sizeof lo);
		/* first the lower bound, then the upper, as the reference */
		snprintf(o, cap, "sn_clampll(x, %s, %s)", lo, hi);
		return SN_OK;
	}
	case IR_OP_add: s = "(long long)((unsigned long long)x + (unsigned long long)y)"; break;
	case IR_OP_sub: s = "(long long)((unsigned long long)x - (unsigned long long)y)"; break;
	case IR_OP_mul: s = "(long long)((unsigned long long)x * (unsigned long long)y)"; break;
	case IR_OP_div:
		s = "y == 0 ? 0ll : y == -1 ? (long long)(0ull - (unsigned long long)x) : x / y";
		break;
	case IR_OP_pow: s = "(long long)pow((double)x, (double)y)"; break;
	case IR_OP_min: s = "x < y ? x : y"; break;
	case IR_OP_max: s = "x > y ? x : y"; break;
	case IR_OP_equal: s = "(long long)(x == y)"; break;
	case IR_OP_less: s = "(long long)(x < y)"; break;
	case IR_OP_greater: s = "(long long)(x > y)"; break;
	/* C's % has the dividend's sign; x % -1 is 0 (INT64_MIN % -1 traps) */
	case IR_OP_mod: s = n->attrs->fmod ? "y == 0 || y == -1 ? 0ll : x % y" : "sn_modll(x, y)"; break;
	default: return -1;
	}
	snprintf(o, cap, "%s", s);
	return SN_OK;
}

/* The saturation range of an integer dtype, as C literals; false for i64
 * and bool (no clamp needed). */
bool cg_int_range(ir_dtype t, const char **lo, const char **hi)
{
	switch (t) {
	case IR_I32: *lo = "-2147483648LL", *hi = "2147483647LL"; return true;
	case IR_I8: *lo = "-128LL", *hi = "127LL"; return true;
	case IR_U8: *lo = "0LL", *hi = "255LL"; return true;
	default: return false;
	}
}

typedef struct elem {
	const ir_graph *g;
	const ir_node *n;
	uint32_t nin;
	ir_dtype it[3], ot;   /* operand and output dtypes */
	bool fdom;            /* the value operands compute in float */
	char expr[512];       /* the result over x, y (not for cast/where) */
} elem;

/* Emits the statements computing one output element: operands are read
 * from pointers P<k> at index I<k>, the result goes to PO at IO. */
static void emit_element(sn_buf *b, const elem *el, const char *const *ptr, const char *const *idx,
			 const char *optr, const char *oidx, const char *ind)
{
	const ir_node *n = el->n;
	if (n->op == IR_OP_where) { /* bits move unchanged */
		sn_buf_printf(b, "%s%s[%s] = ld_bool(%s, %s) ? %s[%s] : %s[%s];\n", ind, optr, oidx,
			      ptr[0], idx[0], ptr[1], idx[1], ptr[2], idx[2]);
		return;
	}
	const char *vt = el->fdom ? "float" : "long long";
	static const char *const var[] = {"x", "y", "z"};
	for (uint32_t k = 0; k < el->nin; k++)
		sn_buf_printf(b, "%s%s %s = ld_%s(%s, %s);\n", ind, vt, var[k], ir_dtype_name(el->it[k]),
			      ptr[k], idx[k]);
	const char *on = ir_dtype_name(el->ot);
	if (n->op != IR_OP_cast) {
		sn_buf_printf(b, "%sst_%s(%s, %s, %s);\n", ind, on, optr, oidx, el->expr);
		return;
	}
	bool ofloat = ir_dtype_is_float(el->ot);
	const char *lo, *hi;
	if (ofloat)
		sn_buf_printf(b, "%sst_%s(%s, %s, (float)x);\n", ind, on, optr, oidx);
	else if (el->ot == IR_BOOL)
		sn_buf_printf(b, "%sst_bool(%s, %s, (long long)(x != 0));\n", ind, optr, oidx);
	else if (el->fdom && el->ot == IR_I64)
		sn_buf_printf(b, "%sst_i64(%s, %s, sn_f2ll(x));\n", ind, optr, oidx);
	else if (cg_int_range(el->ot, &lo, &hi))
		sn_buf_printf(b, "%sst_%s(%s, %s, sn_clampll(%s, %s, %s));\n", ind, on, optr, oidx,
			      el->fdom ? "sn_f2ll(x)" : "x", lo, hi);
	else
		sn_buf_printf(b, "%sst_%s(%s, %s, x);\n", ind, on, optr, oidx);
}

/* A dim of the iteration space: its size and each operand's stride. */
typedef struct dim {
	int64_t size, st[3];
} dim;

/* Output dims with size > 1, adjacent ones merged where every operand
 * walks them as one; returns the count (0 for a single element). */
static int iter_dims(const elem *el, dim *dims)
{
	const ir_shape *os = &el->n->shape;
	int nd = 0;
	int64_t st[3][IR_MAX_RANK];
	for (uint32_t k = 0; k < el->nin; k++) {
		const ir_shape *s = &el->g->nodes[el->n->in[k]].shape;
		int64_t acc = 1;
		for (int d = os->rank - 1; d >= 0; d--) {
			int sd = d - (os->rank - s->rank);
			int64_t sz = sd >= 0 ? s->d[sd] : 1;
			st[k][d] = sz == 1 ? 0 : acc;
			acc *= sz;
		}
	}
	for (int d = 0; d < os->rank; d++) {
		if (os->d[d] == 1)
			continue;
		bool merge = nd > 0;
		for (uint32_t k = 0; k < el->nin && merge; k++)
			merge = dims[nd - 1].st[k] == st[k][d] * os->d[d];
		if (merge) {
			dims[nd - 1].size *= os->d[d];
			for (uint32_t k = 0; k < el->nin; k++)
				dims[nd - 1].st[k] = st[k][d];
			continue;
		}
		dims[nd].size = os->d[d];
		for (uint32_t k = 0; k < el->nin; k++)
			dims[nd].st[k] = st[k][d];
		nd++;
	}
	return nd;
}

/* Bytes per 16-byte access of the widest dtype, as a CUDA type. */
static const char *vec_type(size_t bytes)
{
	switch (bytes) {
	case 2: return "unsigned short";
	case 4: return "unsigned int";
	case 8: return "uint2";
	case 16: return "uint4";
	default: return NULL;
	}
}

/* Appends text unless b already holds the function it defines (named by
 * its signature's head, e.g. "float sn_relu6f("). */
static void once(sn_buf *b, const char *head, const char *text)
{
	/* guarded by the function's name, for pasted prologues/epilogues */
	const char *name = strstr(head, "sn_");
	size_t n = strcspn(name, "(");
	char guard[64];
	snprintf(guard, sizeof guard, "#ifndef SN_FN_%.*s\n", (int)n, name);
	if (b->s && strstr(b->s, guard))
		return;
	sn_buf_printf(b, "%s#define SN_FN_%.*s\n%s#endif\n", guard, (int)n, name, text);
}

void cg_emit_op_helpers(sn_buf *b, ir_op op, bool fdom)
{
	switch (op) {
	case IR_OP_hardswish:
	case IR_OP_hardsigmoid:
		once(b, "float sn_relu6f(", "__device__ __forceinline__ float sn_relu6f(float v) "
			       "{ return v < 0.0f ? 0.0f : v > 6.0f ? 6.0f : v; }\n");
		break;
	case IR_OP_clamp:
		once(b, "float sn_clampf(", "__device__ __forceinline__ float sn_clampf(float v, float lo, float hi)\n"
			       "{\n\tif (v < lo)\n\t\tv = lo;\n\tif (v > hi)\n\t\tv = hi;\n\treturn v;\n}\n");
		break;
	case IR_OP_sigmoid:
	case IR_OP_silu:
	case IR_OP_gelu:
		/* a sigmoid(z) for every z: a / (1 + e^-z) for z >= 0 and
		 * a e^z / (1 + e^z) below, so e^z never overflows (1 / (1 +
		 * e^-z) is 0 below z = -88.7); where e^z is subnormal, a e^z is
		 * taken in double and rounded once (sigmoid(-100) = 3.7e-44,
		 * silu(-90) = -7.4e-38, a normal float that a subnormal e^z
		 * would give to 6 digits only). NaN gives NaN. (The erf GELU
		 * gets it too, unused: op alone does not tell them apart.) */
		if (fdom)
			once(b, "float sn_xsigmoidf(", "__device__ __forceinline__ float sn_xsigmoidf(float a, float z)\n"
				       "{\n\tfloat e = expf(-fabsf(z));\n"
				       "\tif (z >= 0.0f)\n\t\treturn a / (1.0f + e);\n"
				       "\tfloat n = z < -87.0f ? (float)((double)a * exp((double)z)) : a * e;\n"
				       "\treturn n / (1.0f + e);\n}\n");
		break;
	case IR_OP_softplus:
	case IR_OP_mish:
		/* log(1 + e^x) without overflow */
		once(b, "float sn_softplusf(", "__device__ __forceinline__ float sn_softplusf(float v) "
			       "{ return v > 0.0f ? v + log1pf(expf(-v)) : log1pf(expf(v)); }\n");
		break;
	case IR_OP_mod:
		/* the divisor's sign (Python's %, torch.remainder); integer
		 * division by zero gives 0, as div */
		if (fdom)
			once(b, "float sn_modf(", "__device__ __forceinline__ float sn_modf(float x, float y)\n"
				       "{\n\tfloat r = fmodf(x, y);\n"
				       "\tif (r != 0.0f && (r < 0.0f) != (y < 0.0f))\n\t\tr += y;\n\treturn r;\n}\n");
		else
			once(b, "long long sn_modll(", "__device__ __forceinline__ long long sn_modll(long long x, long long y)\n"
				       "{\n\tif (y == 0 || y == -1)\n\t\treturn 0;\n\tlong long r = x % y;\n"
				       "\tif (r != 0 && (r < 0) != (y < 0))\n\t\tr += y;\n\treturn r;\n}\n");
		break;
	default: break;
	}
	if (op == IR_OP_clamp || op == IR_OP_cast)
		once(b, "long long sn_clampll(", "__device__ __forceinline__ long long sn_clampll(long long v, long long lo, long long hi)\n"
			       "{\n\tif (v < lo)\n\t\tv = lo;\n\tif (v > hi)\n\t\tv = hi;\n\treturn v;\n}\n");
	if (op == IR_OP_cast && fdom)
		/* truncation toward zero, saturating, NaN to 0; the top is the
		 * largest double below 2^63, as ir_store */
		once(b, "long long sn_f2ll(", "__device__ __forceinline__ long long sn_f2ll(float v)\n"
			       "{\n\tif (v != v)\n\t\treturn 0;\n"
			       "\tif (v <= -9.2233720368547758e18f)\n\t\treturn -9223372036854775807LL - 1;\n"
			       "\tif (v >= 9.2233720368547758e18f)\n\t\treturn 9223372036854774784LL;\n"
			       "\treturn (long long)v;\n}\n");
}

static void emit_helpers(sn_buf *b, const elem *el)
{
	for (uint32_t k = 0; k < el->nin; k++)
		cg_emit_dtype_helpers(b, el->it[k]);
	cg_emit_dtype_helpers(b, el->ot);
	cg_emit_op_helpers(b, el->n->op, el->fdom);
}

int cg_render_elementwise(const ir_graph *g, ir_ref r, const cg_target *t, const cg_config *want, cg_step *st, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	const char *opname = ir_ops[n->op].name;
	elem el = {.g = g, .n = n, .nin = n->nin, .ot = n->dtype};
	ir_kind kind = ir_ops[n->op].kind;
	if ((kind != IR_K_UNARY && kind != IR_K_BINARY && kind != IR_K_TERNARY) || n->nin < 1 || n->nin > 3)
		return sn_errf(e, SN_EINTERNAL, "%s: not an elementwise op", opname);
	for (uint32_t k = 0; k < n->nin; k++)
		el.it[k] = g->nodes[n->in[k]].dtype;
	el.fdom = ir_dtype_is_float(el.it[n->op == IR_OP_where ? 1 : 0]);
	if (n->op != IR_OP_cast && n->op != IR_OP_where &&
	    (el.fdom ? cg_float_expr(n, el.expr, sizeof el.expr) : cg_int_expr(n, el.expr, sizeof el.expr)) != SN_OK)
		return sn_errf(e, SN_EINPUT, "%s on %s is not supported by the CUDA backend", opname,
			       ir_dtype_name(el.it[0]));

	int64_t total = ir_numel(&n->shape);
	if (total < 0)
		return sn_errf(e, SN_EINPUT, "%s: shape has unbound symbols", opname);
	dim dims[IR_MAX_RANK];
	int nd = iter_dims(&el, dims);
	/* An operand that broadcasts has a stride that differs from the
	 * contiguous walk of the output; with none, index i serves all. */
	bool bcast = false;
	for (uint32_t k = 0; k < n->nin; k++) {
		const ir_node *x = &g->nodes[n->in[k]];
		if (ir_numel(&x->shape) != total)
			bcast = true;
	}
	size_t widest = ir_dtype_size(n->dtype);
	for (uint32_t k = 0; k < n->nin; k++)
		if (ir_dtype_size(el.it[k]) > widest)
			widest = ir_dtype_size(el.it[k]);
	int vec = bcast ? 1 : (int)(16 / widest);
	if (total < vec)
		vec = 1;
	/* the config: block and vector width may be asked for; the default is
	 * 256 threads and the widest 16-byte vector the dtypes allow */
	int block = BLOCK;
	if (want && want->block) {
		if (want->block < 32 || want->block > 1024 || want->block % 32)
			return sn_errf(e, SN_EUSAGE, "%s: block %d is not a multiple of 32 in [32, 1024]", opname,
				       (int)want->block);
		block = want->block;
	}
	if (want && want->vec) {
		if (want->vec > vec || (want->vec & (want->vec - 1)))
			return sn_errf(e, SN_EUSAGE, "%s: vector width %d is not a power of two up to %d", opname,
				       (int)want->vec, vec);
		vec = want->vec;
	}
	int64_t nvec = vec > 1 ? total / vec : 0;
	st->k.cfg = (cg_config){.block = block, .vec = vec};

	sn_buf b = {0};
	char config[128];
	snprintf(config, sizeof config, "block=%d vec=%d%s", block, vec, bcast ? " broadcast" : "");
	cg_emit_spec(&b, g, r, config);
	emit_helpers(&b, &el);
	sn_buf_printf(&b, "extern \"C\" __global__ void __launch_bounds__(%d) " CG_NAME "(", block);
	for (uint32_t k = 0; k < n->nin; k++)
		sn_buf_printf(&b, "const %s *__restrict__ in%u, ", cg_ctype(el.it[k]), k);
	sn_buf_printf(&b, "%s *__restrict__ out)\n{\n", cg_ctype(el.ot));
	sn_buf_printf(&b, "\tlong gid = (long)blockIdx.x * blockDim.x + threadIdx.x, step = (long)gridDim.x * blockDim.x;\n");

	const char *ptr[3] = {"in0", "in1", "in2"};
	if (vec > 1) {
		sn_buf_printf(&b, "\tfor (long j = gid; j < %" PRId64 "L; j += step) {\n", nvec);
		static const char *const vptr[] = {"v0", "v1", "v2"}, *const kidx[] = {"k", "k", "k"};
		for (uint32_t k = 0; k < n->nin; k++) {
			size_t sz = ir_dtype_size(el.it[k]);
			const char *vt = vec_type(sz * (size_t)vec);
			if (vt)
				sn_buf_printf(&b, "\t\talignas(16) %s v%u[%d];\n\t\t*(%s *)v%u = ((const %s *)in%u)[j];\n",
					      cg_ctype(el.it[k]), k, vec, vt, k, vt, k);
			else
				sn_buf_printf(&b, "\t\t%s v%u[%d];\n\t\tfor (int k = 0; k < %d; k++)\n\t\t\tv%u[k] = in%u[j * %d + k];\n",
					      cg_ctype(el.it[k]), k, vec, vec, k, k, vec);
		}
		sn_buf_printf(&b, "\t\talignas(16) %s vo[%d];\n\t\t#pragma unroll\n\t\tfor (int k = 0; k < %d; k++) {\n",
			      cg_ctype(el.ot), vec, vec);
		emit_element(&b, &el, vptr, kidx, "vo", "k", "\t\t\t");
		const char *ovt = vec_type(ir_dtype_size(el.ot) * (size_t)vec);
		if (ovt)
			sn_buf_printf(&b, "\t\t}\n\t\t((%s *)out)[j] = *(const %s *)vo;\n\t}\n", ovt, ovt);
		else
			sn_buf_printf(&b, "\t\t}\n\t\tfor (int k = 0; k < %d; k++)\n\t\t\tout[j * %d + k] = vo[k];\n\t}\n",
				      vec, vec);
	}
	/* the scalar loop: everything, or the remainder after the vectors */
	if (nvec * vec == total) {
		sn_buf_puts(&b, "}\n");
		goto done;
	}
	sn_buf_printf(&b, "\tfor (long i = %" PRId64 "L + gid; i < %" PRId64 "L; i += step) {\n", nvec * vec, total);
	char idx[3][16];
	const char *idxp[3];
	for (uint32_t k = 0; k < n->nin; k++) {
		snprintf(idx[k], sizeof idx[k], bcast ? "o%u" : "i", k);
		idxp[k] = idx[k];
	}
	if (bcast) {
		sn_buf_puts(&b, "\t\tlong rem = i, q;\n");
		for (uint32_t k = 0; k < n->nin; k++)
			sn_buf_printf(&b, "\t\tlong o%u = 0;\n", k);
		for (int d = nd - 1; d >= 0; d--) {
			if (d > 0)
				sn_buf_printf(&b, "\t\tq = rem %% %" PRId64 "L;\n\t\trem /= %" PRId64 "L;\n",
					      dims[d].size, dims[d].size);
			else
				sn_buf_puts(&b, "\t\tq = rem;\n");
			for (uint32_t k = 0; k < n->nin; k++)
				if (dims[d].st[k])
					sn_buf_printf(&b, "\t\to%u += q * %" PRId64 "L;\n", k, dims[d].st[k]);
		}
		sn_buf_puts(&b, "\t\t(void)q;\n");
	}
	emit_element(&b, &el, ptr, idxp, "out", "i", "\t\t");
	sn_buf_puts(&b, "\t}\n}\n");
done:
	st->kind = CG_STEP_KERNEL;
	cg_kernel *k = &st->k;
	int64_t work = vec > 1 ? nvec + (total - nvec * vec) : total;
	int64_t blocks = (work + block - 1) / block;
	k->grid[0] = (unsigned)(blocks < 1 ? 1 : blocks > MAX_GRID ? MAX_GRID : blocks);
	k->grid[1] = k->grid[2] = 1;
	k->block[0] = (unsigned)block;
	k->block[1] = k->block[2] = 1;
	k->smem = 0;
	k->nbufs = n->nin + 1;
	for (uint32_t i = 0; i < n->nin; i++)
		k->bufs[i] = n->in[i];
	k->bufs[n->nin] = r;
	(void)t;
	return cg_finish(k, opname, &b, e);
}
