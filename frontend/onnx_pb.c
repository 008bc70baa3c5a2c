/* onnx_pb.c: the protobuf wire-format decoder for the ONNX messages. Field
 * numbers are those of onnx.proto (IR version 10). Each message has one
 * decoder: a loop over (key, value) pairs that checks every length against
 * the bytes left before it reads them. */
#include "onnx_pb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static int perr(const onnx_pb_reader *r, const uint8_t *at, sn_err *e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int perr(const onnx_pb_reader *r, const uint8_t *at, sn_err *e, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return sn_errf(e, SN_EINPUT, "%s: malformed protobuf: %s at byte %zu in %s", r->name, msg,
		       (size_t)(at - r->base), r->msg);
}

static int oom(sn_err *e) { return sn_errf(e, SN_EINTERNAL, "out of memory"); }

int onnx_pb_varint(onnx_pb_reader *r, uint64_t *v, sn_err *e)
{
	const uint8_t *at = r->p;
	uint64_t x = 0;
	*v = 0; /* set on every path: callers read it only on success */
	for (int i = 0; i < 10; i++) {
		if (r->p >= r->end)
			return perr(r, at, e, "truncated varint");
		uint8_t b = *r->p++;
		if (i == 9 && b > 1)
			return perr(r, at, e, "varint overflows 64 bits");
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = x;
			return SN_OK;
		}
	}
	return perr(r, at, e, "varint longer than 10 bytes");
}

/* Reads a key: field number and wire type. */
static int rd_key(onnx_pb_reader *r, uint32_t *field, int *wt, sn_err *e)
{
	const uint8_t *at = r->p;
	uint64_t k;
	*field = 0;
	*wt = 0;
	if (onnx_pb_varint(r, &k, e))
		return e->code;
	uint64_t f = k >> 3;
	*wt = (int)(k & 7);
	if (f == 0 || f > 536870911u)
		return perr(r, at, e, "invalid field number %llu", (unsigned long long)f);
	*field = (uint32_t)f;
	if (*wt == 3 || *wt == 4)
		return perr(r, at, e, "field %u is a group (wire type %d), which ONNX does not use",
			    *field, *wt);
	if (*wt == 6 || *wt == 7)
		return perr(r, at, e, "field %u has invalid wire type %d", *field, *wt);
	return SN_OK;
}

/* A length-delimited value: *sub reads exactly its bytes. */
static int rd_len(onnx_pb_reader *r, onnx_pb_reader *sub, const char *msg, sn_err *e)
{
	const uint8_t *at = r->p;
	uint64_t n;
	*sub = *r;
	sub->end = sub->p;
	if (onnx_pb_varint(r, &n, e))
		return e->code;
	size_t left = (size_t)(r->end - r->p);
	if (n > left)
		return perr(r, at, e, "length %llu runs past the end (%zu bytes left)",
			    (unsigned long long)n, left);
	*sub = *r;
	sub->end = r->p + n;
	if (msg)
		sub->msg = msg;
	r->p += n;
	return SN_OK;
}

static int rd_fixed(onnx_pb_reader *r, int bytes, uint64_t *v, sn_err *e)
{
	*v = 0;
	if (r->end - r->p < bytes)
		return perr(r, r->p, e, "truncated %d-byte value", bytes);
	uint64_t x = 0;
	for (int i = 0; i < bytes; i++)
		x |= (uint64_t)r->p[i] << (8 * i);
	r->p += bytes;
	*v = x;
	return SN_OK;
}

static int skip(onnx_pb_reader *r, int wt, sn_err *e)
{
	uint64_t v;
	onnx_pb_reader sub;
	switch (wt) {
	case WT_VARINT: return onnx_pb_varint(r, &v, e);
	case WT_I64: return rd_fixed(r, 8, &v, e);
	case WT_I32: return rd_fixed(r, 4, &v, e);
	default: return rd_len(r, &sub, NULL, e);
	}
}

static int want(onnx_pb_reader *r, const uint8_t *at, uint32_t field, int wt, int expect, sn_err *e)
{
	if (wt == expect)
		return SN_OK;
	return perr(r, at, e, "field %u has wire type %d, expected %d", field, wt, expect);
}

/* A string field copied into the arena, NUL-terminated. */
static int rd_str(onnx_pb_reader *r, const uint8_t *at, uint32_t field, int wt, const char **out,
		  sn_err *e)
{
	onnx_pb_reader s;
	if (want(r, at, field, wt, WT_LEN, e) || rd_len(r, &s, NULL, e))
		return e->code;
	size_t n = (size_t)(s.end - s.p);
	if (memchr(s.p, 0, n))
		return perr(r, at, e, "string field %u contains a NUL byte", field);
	char *p = sn_strndup(r->a, (const char *)s.p, n);
	if (!p)
		return oom(e);
	*out = p;
	return SN_OK;
}

static int rd_bytes(onnx_pb_reader *r, const uint8_t *at, uint32_t field, int wt, onnx_bytes *out,
		    sn_err *e)
{
	onnx_pb_reader s;
	if (want(r, at, field, wt, WT_LEN, e) || rd_len(r, &s, NULL, e))
		return e->code;
	out->p = s.p;
	out->n = (size_t)(s.end - s.p);
	return SN_OK;
}

static int rd_varint_field(onnx_pb_reader *r, const uint8_t *at, uint32_t field, int wt, int64_t *out,
			   sn_err *e)
{
	uint64_t v;
	if (want(r, at, field, wt, WT_VARINT, e) || onnx_pb_varint(r, &v, e))
		return e->code;
	*out = (int64_t)v;
	return SN_OK;
}

/* Makes room for one more element of size sz in *arr (n used, *cap held). */
static int grow(onnx_pb_reader *r, void **arr, size_t n, size_t *cap, size_t sz, sn_err *e)
{
	if (n < *cap)
		return SN_OK;
	size_t nc = *cap ? *cap * 2 : 4;
	if (nc > SIZE_MAX / sz)
		return oom(e);
	void *p = sn_alloc(r->a, nc * sz);
	if (!p)
		return oom(e);
	if (n)
		memcpy(p, *arr, n * sz);
	*arr = p;
	*cap = nc;
	return SN_OK;
}

#define PUSH(r, arr, n, cap, e) grow((r), (void **)&(arr), (n), &(cap), sizeof *(arr), (e))

/* A repeated varint field, packed (wire type 2) or one value per key.
 * bits32: each value is an int32 (cut to 32 bits and sign-extended). */
static int rd_varints(onnx_pb_reader *r, const uint8_t *at, uint32_t field, int wt, int64_t **arr,
		      size_t *n, size_t *cap, bool bits32, sn_err *e)
{
	uint64_t v;
	if (wt == WT_VARINT) {
		if (onnx_pb_varint(r, &v, e) || PUSH(r, *arr, *n, *cap, e))
			return e->code;
		(*arr)[(*n)++] = bits32 ? (int32_t)(uint32_t)v : (int64_t)v;
		return SN_OK;
	}
	if (wt != WT_LEN)
		return perr(r, at, e, "field %u has wire type %d, expected 0 or 2", field, wt);
	onnx_pb_reader s;
	if (rd_len(r, &s, NULL, e))
		return e->code;
	while (s.p < s.end) {
		if (onnx_pb_varint(&s, &v, e) || PUSH(r, *arr, *n, *cap, e))
			return e->code;
		(*arr)[(*n)++] = bits32 ? (int32_t)(uint32_t)v : (int64_t)v;
	}
	return SN_OK;
}

/* A repeated fixed-width field (4: float, 8: double), packed or not. */
static int push_fixed(onnx_pb_reader *r, onnx_pb_reader *s, int bytes, void **arr, size_t *n,
		      size_t *cap, sn_err *e)
{
	uint64_t v;
	if (rd_fixed(s, bytes, &v, e) || grow(r, arr, *n, cap, (size_t)bytes, e))
		return e->code;
	if (bytes == 4) {
		uint32_t b = (uint32_t)v;
		memcpy((float *)*arr + (*n)++, &b, 4);
	} else {
		memcpy((double *)*arr + (*n)++, &v, 8);
	}
	return SN_OK;
}

static int rd_fixeds(onnx_pb_reader *r, const uint8_t *at, uint32_t field, int wt, int bytes,
		     void **arr, size_t *n, size_t *cap, sn_err *e)
{
	int one = bytes == 4 ? WT_I32 : WT_I64;
	if (wt == one)
		return push_fixed(r, r, bytes, arr, n, cap, e);
	if (wt != WT_LEN)
		return perr(r, at, e, "field %u has wire type %d, expected %d or 2", field, wt, one);
	onnx_pb_reader s;
	if (rd_len(r, &s, NULL, e))
		return e->code;
	if ((s.end - s.p) % bytes)
		return perr(r, at, e, "packed field %u has length %zu, not a multiple of %d", field,
			    (size_t)(s.end - s.p), bytes);
	while (s.p < s.end)
		if (push_fixed(r, &s, bytes, arr, n, cap, e))
			return e->code;
	return SN_OK;
}

/* ---- messages --------------------------------------------------------- */

#define MAX_DEPTH 32

typedef int decode_fn(onnx_pb_reader *r, void *out, sn_err *e);

/* Decodes a nested message field with fn. */
static int rd_msg(onnx_pb_reader *r, const uint8_t *at, uint32_t field, int wt, const char *msg,
		  decode_fn *fn, void *out, sn_err *e)
{
	onnx_pb_reader s;
	if (want(r, at, field, wt, WT_LEN, e) || rd_len(r, &s, msg, e))
		return e->code;
	if (++s.depth > MAX_DEPTH)
		return perr(r, at, e, "messages nested deeper than %d", MAX_DEPTH);
	return fn(&s, out, e);
}

/* Parses a decimal integer >= 0 (external data offset/length). */
static bool parse_u63(const char *s, int64_t *out)
{
	if (!*s)
		return false;
	int64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return true;
}

typedef struct entry {
	const char *key, *value;
} entry;

static int dec_entry(onnx_pb_reader *r, void *out, sn_err *e)
{
	entry *en = out;
	while (r->p < r->end) {
		const uint8_t *at = r->p;
		uint32_t f;
		int wt;
		if (rd_key(r, &f, &wt, e))
			return e->code;
		int rc = f == 1 ? rd_str(r, at, f, wt, &en->key, e)
		       : f == 2 ? rd_str(r, at, f, wt, &en->value, e)
				: skip(r, wt, e);
		if (rc)
			return rc;
	}
	return SN_OK;
}

static int dec_tensor(onnx_pb_reader *r, void *out, sn_err *e)
{
	onnx_tensor *t = out;
	size_t cdims = 0, cf = 0, ci32 = 0, ci64 = 0, cd = 0, cu64 = 0;
	int64_t v = 0;
	t->name = "";
	t->length = -1;
	while (r->p < r->end) {
		const uint8_t *at = r->p;
		uint32_t f;
		int wt, rc;
		if (rd_key(r, &f, &wt, e))
			return e->code;
		switch (f) {
		case 1: rc = rd_varints(r, at, f, wt, &t->dims, &t->ndims, &cdims, false, e); break;
		case 2:
			rc = rd_varint_field(r, at, f, wt, &v, e);
			t->data_type = (int32_t)v;
			break;
		case 3:
			t->has_segment = true;
			rc = want(r, at, f, wt, WT_LEN, e) ? e->code : skip(r, wt, e);
			break;
		case 4: rc = rd_fixeds(r, at, f, wt, 4, (void **)&t->float_data, &t->nfloat, &cf, e); break;
		case 5: rc = rd_varints(r, at, f, wt, &t->int32_data, &t->nint32, &ci32, true, e); break;
		case 6:
			rc = want(r, at, f, wt, WT_LEN, e) ? e->code : skip(r, wt, e);
			t->nstring++;
			break;
		case 7: rc = rd_varints(r, at, f, wt, &t->int64_data, &t->nint64, &ci64, false, e); break;
		case 8: rc = rd_str(r, at, f, wt, &t->name, e); break;
		case 9:
			rc = rd_bytes(r, at, f, wt, &t->raw, e);
			t->has_raw = true;
			break;
		case 10: rc = rd_fixeds(r, at, f, wt, 8, (void **)&t->double_data, &t->ndouble, &cd, e); break;
		case 11:
			rc = rd_varints(r, at, f, wt, &t->uint64_data, &t->nuint64, &cu64, false, e);
			break;
		case 13: {
			entry en = {NULL, NULL};
			rc = rd_msg(r, at, f, wt, "StringStringEntryProto", dec_entry, &en, e);
			if (rc || !en.key)
				break;
			const char *val = en.value ? en.value : "";
			if (strcmp(en.key, "location") == 0)
				t->location = val;
			else if ((strcmp(en.key, "offset") == 0 && !parse_u63(val, &t->offset)) ||
				 (strcmp(en.key, "length") == 0 && !parse_u63(val, &t->length)))
				t->bad_ext = en.key, t->bad_ext_val = val;
			break;
		}
		case 14:
			rc = rd_varint_field(r, at, f, wt, &v, e);
			t->external = v == 1;
			break;
		default: rc = skip(r, wt, e); break;
		}
		if (rc)
			return rc;
	}
	return SN_OK;
}

static int dec_attr(onnx_pb_reader *r, void *out, sn_err *e)
{
	onnx_attr *a = out;
	size_t cf = 0, ci = 0, cs = 0;
	int64_t v = 0;
	uint64_t u = 0;
	a->name = "";
	while (r->p < r->end) {
		const uint8_t *at = r->p;
		uint32_t f;
		int wt, rc;
		if (rd_key(r, &f, &wt, e))
			return e->code;
		switch (f) {
		case 1: rc = rd_str(r, at, f, wt, &a->name, e); break;
		case 2:
			rc = want(r, at, f, wt, WT_I32, e) ? e->code : rd_fixed(r, 4, &u, e);
			if (!rc) {
				uint32_t b = (uint32_t)u;
				memcpy(&a->f, &b, 4);
			}
			break;
		case 3: rc = rd_varint_field(r, at, f, wt, &a->i, e); break;
		case 4: rc = rd_bytes(r, at, f, wt, &a->s, e); break;
		case 5:
			if (!(a->t = sn_alloc(r->a, sizeof *a->t)))
				return oom(e);
			rc = rd_msg(r, at, f, wt, "TensorProto", dec_tensor, a->t, e);
			break;
		case 6:
			a->has_g = true;
			rc = want(r, at, f, wt, WT_LEN, e) ? e->code : skip(r, wt, e);
			break;
		case 7: rc = rd_fixeds(r, at, f, wt, 4, (void **)&a->floats, &a->nfloats, &cf, e); break;
		case 8: rc = rd_varints(r, at, f, wt, &a->ints, &a->nints, &ci, false, e); break;
		case 9:
			rc = PUSH(r, a->strings, a->nstrings, cs, e);
			if (!rc)
				rc = rd_bytes(r, at, f, wt, &a->strings[a->nstrings++], e);
			break;
		case 10:
		case 11:
			rc = want(r, at, f, wt, WT_LEN, e) ? e->code : skip(r, wt, e);
			if (f == 10)
				a->ntensors++;
			else
				a->ngraphs++;
			break;
		case 20:
			rc = rd_varint_field(r, at, f, wt, &v, e);
			a->type = (int32_t)v;
			break;
		case 21: rc = rd_str(r, at, f, wt, &a->ref_attr_name, e); break;
		default: rc = skip(r, wt, e); break;
		}
		if (rc)
			return rc;
	}
	return SN_OK;
}

static int dec_node(onnx_pb_reader *r, void *out, sn_err *e)
{
	onnx_node *n = out;
	size_t ci = 0, co = 0, ca = 0;
	n->name = n->op_type = n->domain = "";
	while (r->p < r->end) {
		const uint8_t *at = r->p;
		uint32_t f;
		int wt, rc;
		if (rd_key(r, &f, &wt, e))
			return e->code;
		switch (f) {
		case 1:
			rc = PUSH(r, n->inputs, n->ninputs, ci, e);
			if (!rc)
				rc = rd_str(r, at, f, wt, &n->inputs[n->ninputs++], e);
			break;
		case 2:
			rc = PUSH(r, n->outputs, n->noutputs, co, e);
			if (!rc)
				rc = rd_str(r, at, f, wt, &n->outputs[n->noutputs++], e);
			break;
		case 3: rc = rd_str(r, at, f, wt, &n->name, e); break;
		case 4: rc = rd_str(r, at, f, wt, &n->op_type, e); break;
		case 5:
			rc = PUSH(r, n->attrs, n->nattrs, ca, e);
			if (!rc) {
				memset(&n->attrs[n->nattrs], 0, sizeof *n->attrs);
				rc = rd_msg(r, at, f, wt, "AttributeProto", dec_attr, &n->attrs[n->nattrs++], e);
			}
			break;
		case 7: rc = rd_str(r, at, f, wt, &n->domain, e); break;
		default: rc = skip(r, wt, e); break;
		}
		if (rc)
			return rc;
	}
	return SN_OK;
}

typedef struct shape_out {
	onnx_value_info *vi;
	size_t cap;
} shape_out;

static int dec_dim(onnx_pb_reader *r, void *out, sn_err *e)
{
	onnx_dim *d = out;
	while (r->p < r->end) {
		const uint8_t *at = r->p;
		uint32_t f;
		int wt, rc;
		if (rd_key(r, &f, &wt, e))
			return e->code;
		if (f == 1) {
			rc = rd_varint_field(r, at, f, wt, &d->value, e);
			d->has_value = true;
			d->param = NULL;
		} else if (f == 2) {
			rc = rd_str(r, at, f, wt, &d->param, e);
			d->has_value = false;
		} else {
			rc = skip(r, wt, e);
		}
		if (rc)
			return rc;
	}
	return SN_OK;
}

static int dec_shape(onnx_pb_reader *r, void *out, sn_err *e)
{
	shape_out *so = out;
	onnx_value_info *vi = so->vi;
	vi->has_shape = true;
	while (r->p < r->end) {
		const uint8_t *at = r->p;
		uint32_t f;
		int wt, rc;
		if (rd_key(r, &f, &wt, e))
			return e->code;
		if (f == 1) {
			rc = PUSH(r, vi->dims, vi->rank, so->cap, e);
			if (!rc) {
				memset(&vi->dims[vi->rank], 0, sizeof *vi->dims);
				rc = rd_msg(r, at, f, wt, "TensorShapeProto.Dimension", dec_dim,
					    &vi->dims[vi->rank++], e);
			}
		} else {
			rc = skip(r, wt, e);
		}
		if (rc)
			return rc;
	}
	return SN_OK;
}

static int dec_tensor_type(onnx_pb_reader *r, void *out, sn_err *e)
{
	onnx_value_info *vi = out;
	vi->has_type = true;
	int64_t v = 0;
	while (r->p < r->end) {
		const uint8_t *at = r->p;
		uint32_t f;
		int wt, rc;
		if (rd_key(r, &f, &wt, e))
			return e->code;
		if (f == 1) {
			rc = rd_varint_field(r, at, f, wt, &v, e);
			vi->elem_type = (int32_t)v;
		} else if (f == 2) {
			shape_out so = {vi, 0};
			vi->rank = 0; /* a repeated shape field starts over */
			rc = rd_msg(r, at, f, wt, "TensorShapeProto", dec_shape, &so, e);
		} else {
			rc = skip(r, wt, e);
		}
		if (rc)
			return rc;
	}
	return SN_OK;
}

static int dec_type(onnx_pb_reader *r, void *out, sn_err *e)
{
	onnx_value_info *vi = out;
	while (r->p < r->end) {
		const uint8_t *at = r->p;
		uint32_t f;
		int wt, rc;
		if (rd_key(r, &f, &wt, e))
			return e->code;
		if (f == 1) {
			rc = rd_msg(r, at, f, wt, "TypeProto.Tensor", dec_tensor_type, vi, e);
		} else if (f == 4 || f == 5 || f == 8 || f == 9) {
			vi->other_type = true;
			rc = want(r, at, f, wt, WT_LEN, e) ? e->code : skip(r, wt, e);
		} else {
			rc = skip(r, wt, e);
		}
		if (rc)
			return rc;
	}
	return SN_OK;
}

static int dec_value_info(onnx_pb_reader *r, void *out, sn_err *e)
{
	onnx_value_info *vi = out;
	vi->name = "";
	while (r->p < r->end) {
		const uint8_t *at = r->p;
		uint32_t f;
		int wt, rc;
		if (rd_key(r, &f, &wt, e))
			return e->code;
		if (f == 1)
			rc = rd_str(r, at, f, wt, &vi->name, e);
		else if (f == 2)
			rc = rd_msg(r, at, f, wt, "TypeProto", dec_type, vi, e);
		else
			rc = skip(r, wt, e);
		if (rc)
			return rc;
	}
	return SN_OK;
}

static int dec_graph(onnx_pb_reader *r, void *out, sn_err *e)
{
	onnx_graph *g = out;
	size_t cn = 0, ct = 0, ci = 0, co = 0, cv = 0;
	g->name = "";
	while (r->p < r->end) {
		const uint8_t *at = r->p;
		uint32_t f;
		int wt, rc;
		if (rd_key(r, &f, &wt, e))
			return e->code;
		switch (f) {
		case 1:
			rc = PUSH(r, g->nodes, g->nnodes, cn, e);
			if (!rc) {
				memset(&g->nodes[g->nnodes], 0, sizeof *g->nodes);
				rc = rd_msg(r, at, f, wt, "NodeProto", dec_node, &g->nodes[g->nnodes++], e);
			}
			break;
		case 2: rc = rd_str(r, at, f, wt, &g->name, e); break;
		case 5:
			rc = PUSH(r, g->inits, g->ninit, ct, e);
			if (!rc) {
				memset(&g->inits[g->ninit], 0, sizeof *g->inits);
				rc = rd_msg(r, at, f, wt, "TensorProto", dec_tensor, &g->inits[g->ninit++], e);
			}
			break;
		case 11:
		case 12:
		case 13: {
			onnx_value_info **arr = f == 11 ? &g->inputs : f == 12 ? &g->outputs : &g->value_info;
			size_t *n = f == 11 ? &g->ninputs : f == 12 ? &g->noutputs : &g->nvalue_info;
			size_t *cap = f == 11 ? &ci : f == 12 ? &co : &cv;
			rc = grow(r, (void **)arr, *n, cap, sizeof **arr, e);
			if (!rc) {
				memset(&(*arr)[*n], 0, sizeof **arr);
				rc = rd_msg(r, at, f, wt, "ValueInfoProto", dec_value_info, &(*arr)[(*n)++], e);
			}
			break;
		}
		case 15:
			g->nsparse_init++;
			rc = want(r, at, f, wt, WT_LEN, e) ? e->code : skip(r, wt, e);
			break;
		default: rc = skip(r, wt, e); break;
		}
		if (rc)
			return rc;
	}
	return SN_OK;
}

static int dec_opset(onnx_pb_reader *r, void *out, sn_err *e)
{
	onnx_opset *o = out;
	o->domain = "";
	while (r->p < r->end) {
		const uint8_t *at = r->p;
		uint32_t f;
		int wt, rc;
		if (rd_key(r, &f, &wt, e))
			return e->code;
		if (f == 1)
			rc = rd_str(r, at, f, wt, &o->domain, e);
		else if (f == 2)
			rc = rd_varint_field(r, at, f, wt, &o->version, e);
		else
			rc = skip(r, wt, e);
		if (rc)
			return rc;
	}
	return SN_OK;
}

static int dec_model(onnx_pb_reader *r, void *out, sn_err *e)
{
	onnx_model *m = out;
	size_t co = 0;
	m->producer_name = m->producer_version = "";
	while (r->p < r->end) {
		const uint8_t *at = r->p;
		uint32_t f;
		int wt, rc;
		if (rd_key(r, &f, &wt, e))
			return e->code;
		switch (f) {
		case 1: rc = rd_varint_field(r, at, f, wt, &m->ir_version, e); break;
		case 2: rc = rd_str(r, at, f, wt, &m->producer_name, e); break;
		case 3: rc = rd_str(r, at, f, wt, &m->producer_version, e); break;
		case 7:
			if (!m->graph && !(m->graph = sn_alloc(r->a, sizeof *m->graph)))
				return oom(e);
			memset(m->graph, 0, sizeof *m->graph); /* the last occurrence wins */
			rc = rd_msg(r, at, f, wt, "GraphProto", dec_graph, m->graph, e);
			break;
		case 8:
			rc = PUSH(r, m->opsets, m->nopsets, co, e);
			if (!rc) {
				memset(&m->opsets[m->nopsets], 0, sizeof *m->opsets);
				rc = rd_msg(r, at, f, wt, "OperatorSetIdProto", dec_opset,
					    &m->opsets[m->nopsets++], e);
			}
			break;
		case 25:
			m->nfunctions++;
			rc = want(r, at, f, wt, WT_LEN, e) ? e->code : skip(r, wt, e);
			break;
		default: rc = skip(r, wt, e); break;
		}
		if (rc)
			return rc;
	}
	return SN_OK;
}

int onnx_pb_decode(const void *buf, size_t len, const char *name, sn_arena *a, onnx_model **out,
		   sn_err *e)
{
	*out = NULL;
	onnx_pb_reader r = {buf, buf, (const uint8_t *)buf + len, name ? name : "<input>",
			    "ModelProto", a, 0};
	if (!buf)
		r.base = r.p = r.end = (const uint8_t *)"";
	onnx_model *m = sn_alloc(a, sizeof *m);
	if (!m)
		return oom(e);
	if (dec_model(&r, m, e))
		return e->code;
	*out = m;
	return SN_OK;
}
