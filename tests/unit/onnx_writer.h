/* onnx_writer.h: a tiny ONNX protobuf writer for the tests (field numbers of
 * onnx.proto), so that models are spelled out in the test that uses them.
 * Every builder appends to a growable byte buffer; nested messages are
 * built in their own buffer and then appended with their length. */
#ifndef SINTER_ONNX_WRITER_H
#define SINTER_ONNX_WRITER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct pbw {
	uint8_t *p;
	size_t n, cap;
} pbw;

static inline void pbw_put(pbw *b, const void *d, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
	}
	if (n)
		memcpy(b->p + b->n, d, n);
	b->n += n;
}

static inline void pbw_varint(pbw *b, uint64_t v)
{
	do {
		uint8_t c = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			c |= 0x80;
		pbw_put(b, &c, 1);
	} while (v);
}

static inline void pbw_key(pbw *b, unsigned f, unsigned wt) { pbw_varint(b, (uint64_t)f << 3 | wt); }
static inline void pbw_int(pbw *b, unsigned f, int64_t v) { pbw_key(b, f, 0), pbw_varint(b, (uint64_t)v); }
static inline void pbw_bytes(pbw *b, unsigned f, const void *d, size_t n)
{
	pbw_key(b, f, 2);
	pbw_varint(b, n);
	pbw_put(b, d, n);
}
static inline void pbw_str(pbw *b, unsigned f, const char *s) { pbw_bytes(b, f, s, strlen(s)); }
/* Appends m as field f and frees it. */
static inline void pbw_msg(pbw *b, unsigned f, pbw *m)
{
	pbw_bytes(b, f, m->p, m->n);
	free(m->p);
	*m = (pbw){0};
}

/* ---- ONNX messages ---- */

enum { W_FLOAT = 1, W_UINT8 = 2, W_INT32 = 6, W_INT64 = 7, W_BOOL = 9, W_FLOAT16 = 10, W_DOUBLE = 11 };

/* TensorProto with raw little-endian data. */
static inline pbw w_tensor_raw(const char *name, int dtype, const int64_t *dims, int nd,
			       const void *data, size_t nbytes)
{
	pbw t = {0};
	for (int i = 0; i < nd; i++)
		pbw_int(&t, 1, dims[i]);
	pbw_int(&t, 2, dtype);
	if (name)
		pbw_str(&t, 8, name);
	pbw_bytes(&t, 9, data, nbytes);
	return t;
}

/* TensorProto of floats in float_data (packed). */
static inline pbw w_tensor_f(const char *name, const int64_t *dims, int nd, const float *v, size_t n)
{
	pbw t = {0};
	for (int i = 0; i < nd; i++)
		pbw_int(&t, 1, dims[i]);
	pbw_int(&t, 2, W_FLOAT);
	pbw_str(&t, 8, name);
	pbw_bytes(&t, 4, v, n * 4);
	return t;
}

/* TensorProto of int64 in int64_data (one key per value, unpacked). */
static inline pbw w_tensor_i64(const char *name, const int64_t *dims, int nd, const int64_t *v, size_t n)
{
	pbw t = {0};
	for (int i = 0; i < nd; i++)
		pbw_int(&t, 1, dims[i]);
	pbw_int(&t, 2, W_INT64);
	pbw_str(&t, 8, name);
	for (size_t i = 0; i < n; i++)
		pbw_int(&t, 7, v[i]);
	return t;
}

/* Attributes, appended to a node's attribute buffer list. */
static inline void w_attr_i(pbw *node, const char *name, int64_t v)
{
	pbw a = {0};
	pbw_str(&a, 1, name);
	pbw_int(&a, 3, v);
	pbw_int(&a, 20, 2);
	pbw_msg(node, 5, &a);
}

static inline void w_attr_f(pbw *node, const char *name, float v)
{
	pbw a = {0};
	pbw_str(&a, 1, name);
	pbw_key(&a, 2, 5);
	pbw_put(&a, &v, 4);
	pbw_int(&a, 20, 1);
	pbw_msg(node, 5, &a);
}

static inline void w_attr_s(pbw *node, const char *name, const char *s)
{
	pbw a = {0};
	pbw_str(&a, 1, name);
	pbw_str(&a, 4, s);
	pbw_int(&a, 20, 3);
	pbw_msg(node, 5, &a);
}

static inline void w_attr_ints(pbw *node, const char *name, const int64_t *v, int n)
{
	pbw a = {0}, packed = {0};
	pbw_str(&a, 1, name);
	for (int i = 0; i < n; i++)
		pbw_varint(&packed, (uint64_t)v[i]);
	pbw_msg(&a, 8, &packed);
	pbw_int(&a, 20, 7);
	pbw_msg(node, 5, &a);
}

static inline void w_attr_t(pbw *node, const char *name, pbw *t)
{
	pbw a = {0};
	pbw_str(&a, 1, name);
	pbw_msg(&a, 5, t);
	pbw_int(&a, 20, 4);
	pbw_msg(node, 5, &a);
}

/* A node: ins and outs are NULL-terminated lists; attrs (may be NULL) is a
 * buffer of attribute fields made with w_attr_*. Appended to graph g. */
static inline void w_node(pbw *g, const char *op, const char *name, const char *const *ins,
			  const char *const *outs, pbw *attrs)
{
	pbw n = {0};
	for (; ins && *ins; ins++)
		pbw_str(&n, 1, *ins);
	for (; outs && *outs; outs++)
		pbw_str(&n, 2, *outs);
	if (name)
		pbw_str(&n, 3, name);
	pbw_str(&n, 4, op);
	if (attrs && attrs->n) {
		pbw_put(&n, attrs->p, attrs->n);
		free(attrs->p);
		*attrs = (pbw){0};
	}
	pbw_msg(g, 1, &n);
}

#define L(...) ((const char *const[]){__VA_ARGS__, NULL})

/* A ValueInfoProto for a graph input (field 11) or output (12): dims as
 * text, each a number or a symbol name ("" for neither). */
static inline void w_value(pbw *g, unsigned field, const char *name, int elem, const char *const *dims)
{
	pbw vi = {0}, ty = {0}, tt = {0}, sh = {0};
	pbw_str(&vi, 1, name);
	pbw_int(&tt, 1, elem);
	for (; dims && *dims; dims++) {
		pbw d = {0};
		const char *s = *dims;
		if (s[0] >= '0' && s[0] <= '9')
			pbw_int(&d, 1, strtoll(s, NULL, 10));
		else if (s[0])
			pbw_str(&d, 2, s);
		pbw_msg(&sh, 1, &d);
	}
	if (dims)
		pbw_msg(&tt, 2, &sh);
	pbw_msg(&ty, 1, &tt);
	pbw_msg(&vi, 2, &ty);
	pbw_msg(g, field, &vi);
}

/* ModelProto around graph g (freed) with the default domain at opset. */
static inline pbw w_model(pbw *g, int64_t opset)
{
	pbw m = {0}, o = {0};
	pbw_int(&m, 1, 8);
	pbw_str(&m, 2, "sinter-test");
	pbw_int(&o, 2, opset);
	pbw_msg(&m, 8, &o);
	pbw_str(g, 2, "test");
	pbw_msg(&m, 7, g);
	return m;
}

#endif
