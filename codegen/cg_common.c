/* cg_common.c: what every CUDA C renderer shares: the storage type of each
 * dtype, device load/store helpers that convert to and from the compute
 * type with the IR's rounding rules (ir/dtype.c), the spec comment, and
 * cg_finish, which names a kernel after a hash of its source. */
#include "codegen/cg_render.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

const char *cg_ctype(ir_dtype t)
{
	switch (t) {
	case IR_F32: return "float";
	case IR_F16:
	case IR_BF16: return "unsigned short";
	case IR_F8E4M3:
	case IR_F8E5M2:
	case IR_U8:
	case IR_BOOL: return "unsigned char";
	case IR_I64: return "long long";
	case IR_I32: return "int";
	case IR_I8: return "signed char";
	default: return "void";
	}
}

/* The float formats narrower than f32 that have no PTX conversion on every
 * arch we target: a software encoder that mirrors ir/dtype.c's
 * mini_from_double (round to nearest even by rintf on an exact scaling;
 * overflow gives inf, or NaN for the e4m3fn variant). Bit tests instead of
 * isnan/signbit keep the source free of headers. */
static const char mini_src[] =
	"__device__ __forceinline__ unsigned sn_mini_from_float(float x, int eb, int mb, int fn)\n"
	"{\n"
	"\tint bias = (1 << (eb - 1)) - 1;\n"
	"\tunsigned sign = (__float_as_uint(x) >> 31) ? 1u << (eb + mb) : 0u;\n"
	"\tunsigned em = (1u << eb) - 1;\n"
	"\tunsigned nan = fn ? (em << mb) | ((1u << mb) - 1) : (em << mb) | (1u << (mb - 1));\n"
	"\tunsigned inf = fn ? nan : em << mb;\n"
	"\tint emin = 1 - bias;\n"
	"\tint emax = fn ? (int)em - bias : (int)em - 1 - bias;\n"
	"\tfloat maxv = fn ? ldexpf(2.0f - ldexpf(1.0f, 1 - mb), emax) : ldexpf(2.0f - ldexpf(1.0f, -mb), emax);\n"
	"\tif (x != x)\n"
	"\t\treturn sign | nan;\n"
	"\tfloat a = fabsf(x);\n"
	"\tif (a > 3.402823466e38f)\n"
	"\t\treturn sign | inf;\n"
	"\tif (a == 0.0f)\n"
	"\t\treturn sign;\n"
	"\tint k;\n"
	"\tfrexpf(a, &k);\n"
	"\tint e = k - 1 < emin ? emin : k - 1;\n"
	"\tfloat q = ldexpf(1.0f, e - mb);\n"
	"\tfloat v = rintf(a / q) * q;\n"
	"\tif (v > maxv)\n"
	"\t\treturn sign | inf;\n"
	"\tif (v == 0.0f)\n"
	"\t\treturn sign;\n"
	"\tfrexpf(v, &k);\n"
	"\te = k - 1;\n"
	"\tif (e < emin)\n"
	"\t\treturn sign | (unsigned)(v / ldexpf(1.0f, emin - mb));\n"
	"\treturn sign | ((unsigned)(e + bias) << mb) | ((unsigned)(v / ldexpf(1.0f, e - mb)) - (1u << mb));\n"
	"}\n";

/* Whether the source in b already has the block that starts with marker. */
static bool has_marker(const sn_buf *b, const char *marker)
{
	return b->s && strstr(b->s, marker);
}

/* An fp8 format: decoding is exact in software; encoding uses the sm_89
 * PTX instruction where the arch has it. satfinite clamps overflow to the
 * largest finite value, but the IR (like ir_store) makes it inf (e5m2) or
 * NaN (e4m3fn), so magnitudes that round past the largest finite value
 * are caught first: above 464 for e4m3 (448 + half a quantum, where the
 * tie rounds down to even 448), from 61440 for e5m2 (the tie rounds up to
 * an even 65536, which overflows). */
static void emit_fp8(sn_buf *b, const char *name, int eb, int mb, bool fn)
{
	int bias = (1 << (eb - 1)) - 1;
	if (!has_marker(b, "sn_mini_from_float("))
		sn_buf_puts(b, mini_src);
	sn_buf_printf(b,
		      "__device__ __forceinline__ float ld_%s(const unsigned char *p, long i)\n"
		      "{\n"
		      "\tunsigned v = p[i], s = v >> %d, ex = (v >> %d) & %du, m = v & %du;\n"
		      "\tfloat r;\n",
		      name, eb + mb, mb, (1 << eb) - 1, (1 << mb) - 1);
	if (fn)
		sn_buf_printf(b, "\tif (ex == %du && m == %du)\n\t\treturn __uint_as_float(0x7fc00000u);\n",
			      (1 << eb) - 1, (1 << mb) - 1);
	else
		sn_buf_printf(b, "\tif (ex == %du)\n\t\treturn m ? __uint_as_float(0x7fc00000u) : "
				 "__uint_as_float(s ? 0xff800000u : 0x7f800000u);\n",
			      (1 << eb) - 1);
	sn_buf_printf(b,
		      "\tif (ex == 0)\n\t\tr = ldexpf((float)m, %d);\n"
		      "\telse\n\t\tr = ldexpf((float)(m | %du), (int)ex - %d);\n"
		      "\treturn s ? -r : r;\n"
		      "}\n",
		      1 - bias - mb, 1u << mb, bias + mb);
	sn_buf_printf(b,
		      "__device__ __forceinline__ void st_%s(unsigned char *p, long i, float v)\n"
		      "{\n"
		      "#if __CUDA_ARCH__ >= 890\n"
		      "\tfloat a = fabsf(v);\n"
		      "\tif (%s)\n"
		      "\t\tp[i] = (unsigned char)sn_mini_from_float(v, %d, %d, %d);\n"
		      "\telse {\n"
		      "\t\tunsigned short h;\n"
		      "\t\tasm(\"cvt.rn.satfinite.%sx2.f32 %%0, %%1, %%2;\" : \"=h\"(h) : \"f\"(0.0f), \"f\"(v));\n"
		      "\t\tp[i] = (unsigned char)(h & 0xffu);\n"
		      "\t}\n"
		      "#else\n"
		      "\tp[i] = (unsigned char)sn_mini_from_float(v, %d, %d, %d);\n"
		      "#endif\n"
		      "}\n",
		      name, fn ? "a > 464.0f" : "a >= 61440.0f", eb, mb, fn, fn ? "e4m3" : "e5m2", eb, mb, fn);
}

void cg_emit_dtype_helpers(sn_buf *b, ir_dtype t)
{
	/* guarded, so a fused prologue or epilogue that brings its own
	 * helpers may be pasted into a kernel that has them too */
	char marker[48];
	snprintf(marker, sizeof marker, "#ifndef SN_DT_%s\n", ir_dtype_name(t));
	if ((unsigned)t >= IR_NDTYPES || has_marker(b, marker))
		return;
	sn_buf_printf(b, "%s#define SN_DT_%s\n", marker, ir_dtype_name(t));
	const char *n = ir_dtype_name(t), *c = cg_ctype(t);
	switch (t) {
	case IR_F32:
		sn_buf_puts(b, "__device__ __forceinline__ float ld_f32(const float *p, long i) { return p[i]; }\n"
			       "__device__ __forceinline__ void st_f32(float *p, long i, float v) { p[i] = v; }\n");
		break;
	case IR_F16:
		sn_buf_puts(b, "__device__ __forceinline__ float ld_f16(const unsigned short *p, long i)\n"
			       "{\n\tfloat f;\n\tasm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(p[i]));\n\treturn f;\n}\n"
			       "__device__ __forceinline__ void st_f16(unsigned short *p, long i, float v)\n"
			       "{\n\tunsigned short h;\n\tasm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(v));\n\tp[i] = h;\n}\n");
		break;
	case IR_BF16:
		/* cvt.rn.bf16.f32 (sm_80+) rounds to nearest even, NaN stays NaN. */
		sn_buf_puts(b, "__device__ __forceinline__ float ld_bf16(const unsigned short *p, long i)\n"
			       "{\n\treturn __uint_as_float((unsigned)p[i] << 16);\n}\n"
			       "__device__ __forceinline__ void st_bf16(unsigned short *p, long i, float v)\n"
			       "{\n\tunsigned short h;\n\tasm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(v));\n\tp[i] = h;\n}\n");
		break;
	case IR_F8E4M3: emit_fp8(b, n, 4, 3, true); break;
	case IR_F8E5M2: emit_fp8(b, n, 5, 2, false); break;
	case IR_BOOL:
		sn_buf_puts(b, "__device__ __forceinline__ long long ld_bool(const unsigned char *p, long i) { return p[i] != 0; }\n"
			       "__device__ __forceinline__ void st_bool(unsigned char *p, long i, long long v) { p[i] = v != 0; }\n");
		break;
	default:
		/* Integers load as long long and store wrapping to their width
		 * (two's complement), as the reference does. */
		sn_buf_printf(b, "__device__ __forceinline__ long long ld_%s(const %s *p, long i) { return p[i]; }\n"
				 "__device__ __forceinline__ void st_%s(%s *p, long i, long long v) "
				 "{ p[i] = (%s)(unsigned long long)v; }\n",
			      n, c, n, c, c);
		break;
	}
	sn_buf_puts(b, "#endif\n");
}

/* The spec comment that opens a kernel: op, operand and result types, the
 * op's attributes, and the renderer's config. It names no value or node,
 * so identical specs give identical sources (and one compiled kernel).
 * Not in cg.h yet: renderers that use it declare it themselves.
 * cg_emit_spec_part: the same for one of several kernels that compute a
 * node together (cg_step.more), part saying which share this one
 * computes; it is part of the spec key, so the parts' keys differ. */
void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config);
void cg_emit_spec_part(sn_buf *b, const ir_graph *g, ir_ref r, const char *part, const char *config);
static void emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config, const cg_epilogue *pro,
		      const cg_epilogue *epi, const cg_step *st, const char *part)
{
	const ir_node *n = &g->nodes[r];
	char ty[160];
	sn_buf_printf(b, "/* sinter kernel: %s(", ir_ops[n->op].name);
	for (uint32_t i = 0; i < n->nin; i++) {
		const ir_node *x = &g->nodes[n->in[i]];
		ir_type_str(g, x->dtype, &x->shape, ty, sizeof ty);
		sn_buf_printf(b, "%s%s", i ? ", " : "", ty);
	}
	ir_type_str(g, n->dtype, &n->shape, ty, sizeof ty);
	sn_buf_printf(b, ") -> %s\n *", ty);
	const ir_op_info *oi = &ir_ops[n->op];
	bool any = false;
	for (int id = 0; id < IR_NATTRS; id++)
		if (oi->attrs & (UINT64_C(1) << id)) {
			if (!any)
				sn_buf_puts(b, " attrs:");
			any = true;
			ir_print_attr(b, g, n->attrs, (ir_attr_id)id);
		}
	if (!any)
		sn_buf_puts(b, " no attrs");
	/* a fused prologue or epilogue is part of the spec: its code's hash */
	if (pro)
		sn_buf_printf(b, "\n * prologue %016llx", (unsigned long long)XXH3_64bits(pro->fn, strlen(pro->fn)));
	if (epi)
		sn_buf_printf(b, "\n * epilogue %016llx -> %s", (unsigned long long)XXH3_64bits(epi->fn, strlen(epi->fn)),
			      ir_dtype_name(epi->dtype));
	/* and so are fusion's layouts: where operands and output live */
	for (int i = 0; st && i <= CG_MAX_BUFS; i++) {
		const cg_layout *l = i < CG_MAX_BUFS ? &st->lay[i] : &st->lay_out;
		if (!l->set)
			continue;
		const ir_node *v = i < CG_MAX_BUFS ? (i < (int)n->nin ? &g->nodes[n->in[i]] : NULL) : n;
		if (!v)
			continue;
		if (i < CG_MAX_BUFS)
			sn_buf_printf(b, "\n * operand %d at %lld strides", i, (long long)l->offset);
		else
			sn_buf_printf(b, "\n * output at %lld strides", (long long)l->offset);
		for (int d = 0; d < v->shape.rank; d++)
			sn_buf_printf(b, " %lld", (long long)l->strides[d]);
	}
	if (part)
		sn_buf_printf(b, "\n * part: %s", part);
	sn_buf_printf(b, "\n * config: %s */\n", config && *config ? config : "default");
}

void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config)
{
	emit_spec(b, g, r, config, NULL, NULL, NULL, NULL);
}

void cg_emit_spec_part(sn_buf *b, const ir_graph *g, ir_ref r, const char *part, const char *config)
{
	emit_spec(b, g, r, config, NULL, NULL, NULL, part);
}

void cg_emit_spec_st(sn_buf *b, const ir_graph *g, ir_ref r, const char *config, const cg_step *st)
{
	emit_spec(b, g, r, config, st ? st->pro : NULL, st ? st->epi : NULL, st, NULL);
}

int cg_finish(cg_kernel *k, const char *prefix, sn_buf *b, sn_err *e)
{
	if (b->oom || !b->s) {
		sn_buf_free(b);
		return sn_errf(e, SN_EINTERNAL, "%s: out of memory rendering a kernel", prefix);
	}
	size_t plen = strlen(prefix);
	if (plen + 1 + 12 >= sizeof k->name) {
		sn_buf_free(b);
		return sn_errf(e, SN_EINTERNAL, "%s: kernel name prefix too long", prefix);
	}
	/* The hash covers the prefix and the source with the placeholder, so
	 * the name depends on nothing else. */
	XXH3_state_t *st = XXH3_createState();
	if (!st) {
		sn_buf_free(b);
		return sn_errf(e, SN_EINTERNAL, "%s: out of memory hashing a kernel", prefix);
	}
	XXH3_64bits_reset(st);
	XXH3_64bits_update(st, prefix, plen + 1);
	XXH3_64bits_update(st, b->s, b->len);
	uint64_t h = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	snprintf(k->name, sizeof k->name, "%s_%012" PRIx64, prefix, h & UINT64_C(0xffffffffffff));

	size_t nlen = strlen(k->name), mlen = strlen(CG_NAME), count = 0;
	for (const char *p = strstr(b->s, CG_NAME); p; p = strstr(p + mlen, CG_NAME))
		count++;
	size_t size = b->len + count * nlen + 1; /* nlen < mlen + 64: no underflow, a bound */
	char *out = malloc(size);
	if (!out) {
		sn_buf_free(b);
		return sn_errf(e, SN_EINTERNAL, "%s: out of memory rendering a kernel", prefix);
	}
	char *o = out;
	const char *s = b->s;
	for (const char *p = strstr(s, CG_NAME); p; s = p + mlen, p = strstr(s, CG_NAME)) {
		memcpy(o, s, (size_t)(p - s));
		o += p - s;
		memcpy(o, k->name, nlen);
		o += nlen;
	}
	size_t rest = strlen(s);
	memcpy(o, s, rest + 1);
	free(k->src);
	k->src = out;
	sn_buf_free(b);
	return SN_OK;
}

/* Uses of node q as seen by the TF32 weight rule: 1 a conv2d's weight, 2
 * anything else (another operand, another op, a graph output). */
static void tf32_uses(const ir_graph *g, ir_ref only, uint8_t *use)
{
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		for (uint32_t j = 0; j < n->nin; j++) {
			ir_ref q = n->in[j];
			if (q < g->nnodes && (only == IR_NONE || q == only))
				use[only == IR_NONE ? q : 0] |= n->op == IR_OP_conv2d && j == 1 ? 1 : 2;
		}
	}
	for (uint32_t k = 0; k < g->noutputs; k++)
		if (only == IR_NONE || g->outputs[k] == only)
			use[only == IR_NONE ? g->outputs[k] : 0] |= 2;
}

static bool tf32_candidate(const ir_graph *g, ir_ref r, const cg_target *t)
{
	return t && t->tf32 && r < g->nnodes && g->nodes[r].op == IR_OP_param && g->nodes[r].dtype == IR_F32;
}

bool cg_tf32_weight(const ir_graph *g, ir_ref r, const cg_target *t)
{
	if (!tf32_candidate(g, r, t))
		return false;
	uint8_t use = 0;
	tf32_uses(g, r, &use);
	return use == 1;
}

int cg_tf32_weights(const ir_graph *g, const cg_target *t, uint8_t **out)
{
	*out = NULL;
	if (!t || !t->tf32 || !g->nnodes)
		return SN_OK;
	uint8_t *use = calloc(g->nnodes, 1);
	if (!use)
		return SN_EINTERNAL;
	tf32_uses(g, IR_NONE, use);
	bool any = false;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		use[i] = use[i] == 1 && tf32_candidate(g, i, t);
		any |= use[i];
	}
	if (!any)
		free(use);
	else
		*out = use;
	return SN_OK;
}

void cg_round_tf32(void *p, size_t n)
{
	unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		uint32_t v;
		memcpy(&v, b + 4 * i, 4);
		if ((v & 0x7f800000u) == 0x7f800000u)
			continue; /* NaN, infinity */
		v = (v + 0x1000u) & ~0x1fffu;
		memcpy(b + 4 * i, &v, 4);
	}
}
