/* hash.c: the structural hash, XXH3-128 over an explicit serialization
 * (never raw structs: their padding bytes are garbage). Ops, dtypes and
 * attributes are hashed by name, so reordering ops.def or attrs.def does
 * not change hashes. Value names, param keys, the function name and the
 * weights file are not hashed; const data is (it is part of the program). */
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include "ir.h"

#include <math.h>
#include <string.h>
#include <xxhash.h>

/* Bumped whenever the serialization below changes. */
static const char schema[] = "sinter-ir-hash-1";

static void put(XXH3_state_t *st, const void *p, size_t n) { XXH3_128bits_update(st, p, n); }

static void put_u64(XXH3_state_t *st, uint64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i)); /* little-endian on every host */
	put(st, b, 8);
}

static void put_i64(XXH3_state_t *st, int64_t v) { put_u64(st, (uint64_t)v); }

/* Length-prefixed, so that "ab","c" and "a","bc" differ. */
static void put_str(XXH3_state_t *st, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	put_u64(st, n);
	put(st, s, n);
}

static void put_f64(XXH3_state_t *st, double x)
{
	uint64_t bits;
	if (isnan(x))
		x = NAN; /* one NaN */
	memcpy(&bits, &x, 8);
	put_u64(st, bits);
}

static void put_ints(XXH3_state_t *st, const ir_ints *v)
{
	int32_t k = v->n < 0 ? 0 : v->n > IR_MAX_LIST ? IR_MAX_LIST : v->n;
	put_u64(st, (uint64_t)k);
	for (int i = 0; i < k; i++)
		put_i64(st, v->v[i]);
}

static void put_attrs(XXH3_state_t *st, const ir_node *n)
{
	uint64_t allowed = ir_ops[n->op].attrs;
	for (int a = 0; a < IR_NATTRS; a++) {
		if (!(allowed & (UINT64_C(1) << a)))
			continue; /* the verifier keeps these at their defaults */
		const ir_attr_info *ai = &ir_attr_table[a];
		const void *p = (const char *)n->attrs + ai->offset;
		put_str(st, ai->name);
		switch (ai->type) {
		case IR_AT_INT: put_i64(st, *(const int64_t *)p); break;
		case IR_AT_INTS:
		case IR_AT_DIMS: put_ints(st, p); break;
		case IR_AT_BOOL: put_u64(st, *(const bool *)p); break;
		case IR_AT_FLOAT: put_f64(st, *(const double *)p); break;
		case IR_AT_DTYPE: put_str(st, ir_dtype_name(*(const ir_dtype *)p)); break;
		case IR_AT_LAYOUT: put_u64(st, (uint64_t)*(const ir_layout *)p); break;
		case IR_AT_GELU: put_u64(st, (uint64_t)*(const ir_gelu *)p); break;
		case IR_AT_PADMODE: put_u64(st, (uint64_t)*(const ir_padmode *)p); break;
		case IR_AT_SCATTER: put_u64(st, (uint64_t)*(const ir_scatter *)p); break;
		}
	}
}

static void put_node(XXH3_state_t *st, const ir_node *n)
{
	bool op_ok = (unsigned)n->op < IR_NOPS;
	put_str(st, op_ok ? ir_ops[n->op].name : "?");
	put_str(st, ir_dtype_name(n->dtype));
	int r = n->shape.rank < 0 ? 0 : n->shape.rank > IR_MAX_RANK ? IR_MAX_RANK : n->shape.rank;
	put_u64(st, (uint64_t)r);
	for (int i = 0; i < r; i++)
		put_i64(st, n->shape.d[i]);
	put_u64(st, n->nin);
	for (uint32_t i = 0; i < n->nin && n->in; i++)
		put_u64(st, n->in[i]);
	if (op_ok && n->attrs)
		put_attrs(st, n);
	if (n->op == IR_OP_const && n->data && (unsigned)n->dtype < IR_NDTYPES) {
		int64_t k = ir_numel(&n->shape);
		size_t nb = k < 0 ? 0 : (size_t)k * ir_dtype_size(n->dtype);
		put_u64(st, nb);
		put(st, n->data, nb);
	}
}

void ir_hash(const ir_graph *g, uint8_t out[16])
{
	XXH3_state_t st;
	XXH3_INITSTATE(&st);
	XXH3_128bits_reset(&st);
	put_str(&st, schema);
	put_u64(&st, g->nsyms);
	for (uint32_t i = 0; i < g->nsyms && i < IR_MAX_SYMS; i++)
		put_str(&st, g->syms[i]);
	put_u64(&st, g->nnodes);
	for (uint32_t i = 0; i < g->nnodes; i++)
		put_node(&st, &g->nodes[i]);
	put_u64(&st, g->ninputs);
	for (uint32_t i = 0; i < g->ninputs; i++)
		put_u64(&st, g->inputs[i]);
	put_u64(&st, g->noutputs);
	for (uint32_t i = 0; i < g->noutputs; i++)
		put_u64(&st, g->outputs[i]);
	if (g->nstates) /* hashes of graphs without state stay as they were */
		put_u64(&st, UINT64_C(0x5354415445000000) | g->nstates);
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
	memcpy(out, c.digest, 16);
}
