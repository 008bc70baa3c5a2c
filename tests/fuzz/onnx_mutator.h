/* onnx_mutator.h: a structure-aware mutator for ONNX models, for
 * fuzz_onnx.c's LLVMFuzzerCustomMutator (and tests/unit/test_onnx_mutator.c).
 *
 * A model is parsed as a tree of protobuf fields, knowing from the field
 * numbers of the published onnx.proto which length-delimited fields are
 * messages (and of which type) and which are packed numbers; one to three
 * mutations are applied to the tree, which is written back (packed numbers
 * unpacked, which protobuf readers accept). The mutations are the ones that
 * reach the importer's checks rather than the decoder's: numbers set to
 * boundary values (dims, dtypes, attribute ints and floats, opset versions,
 * offsets), a value name replaced by another name of the model (rewiring
 * the graph), an op type replaced by another op, raw_data resized, a field
 * deleted or duplicated (a node, a dim, an initializer, an attribute).
 * Anything that does not parse as protobuf falls back to the byte mutator.
 * Everything here is static: one translation unit includes it. Prefix: om_. */
#ifndef SINTER_ONNX_MUTATOR_H
#define SINTER_ONNX_MUTATOR_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SN_OM_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* message types */
enum {
	OM_BYTES, /* not a message */
	OM_MODEL, OM_OPSET, OM_GRAPH, OM_NODE, OM_ATTR, OM_TENSOR, OM_VALUE, OM_TYPE, OM_TTYPE,
	OM_SHAPE, OM_DIM, OM_ENTRY,
};

/* What a length-delimited field of a message holds. */
static int om_child(int msg, uint32_t f)
{
	switch (msg) {
	case OM_MODEL: return f == 7 ? OM_GRAPH : f == 8 ? OM_OPSET : f == 14 ? OM_ENTRY : OM_BYTES;
	case OM_GRAPH:
		return f == 1 ? OM_NODE : (f == 5) ? OM_TENSOR : (f == 11 || f == 12 || f == 13) ? OM_VALUE : OM_BYTES;
	case OM_NODE: return f == 5 ? OM_ATTR : OM_BYTES;
	case OM_ATTR: return f == 5 || f == 10 ? OM_TENSOR : f == 6 || f == 11 ? OM_GRAPH : f == 14 || f == 15 ? OM_TYPE : OM_BYTES;
	case OM_TENSOR: return f == 13 ? OM_ENTRY : OM_BYTES;
	case OM_VALUE: return f == 2 ? OM_TYPE : OM_BYTES;
	case OM_TYPE: return f == 1 ? OM_TTYPE : OM_BYTES;
	case OM_TTYPE: return f == 2 ? OM_SHAPE : OM_BYTES;
	case OM_SHAPE: return f == 1 ? OM_DIM : OM_BYTES;
	default: return OM_BYTES;
	}
}

/* Packed repeated numbers: the wire type of one element (0 varint, 1
 * fixed64, 5 fixed32), or -1. */
static int om_packed(int msg, uint32_t f)
{
	if (msg == OM_TENSOR)
		return f == 1 || f == 5 || f == 7 || f == 11 ? 0 : f == 4 ? 5 : f == 10 ? 1 : -1;
	if (msg == OM_ATTR)
		return f == 8 ? 0 : f == 7 ? 5 : -1;
	return -1;
}

/* Strings that name values: node inputs and outputs, value infos' and
 * initializers' names. */
static bool om_is_name(int msg, uint32_t f)
{
	return (msg == OM_NODE && (f == 1 || f == 2)) || (msg == OM_VALUE && f == 1) || (msg == OM_TENSOR && f == 8);
}

typedef struct om_node {
	uint32_t field;
	uint8_t wt;     /* 0 varint, 1 fixed64, 2 bytes, 5 fixed32 */
	uint8_t msg;    /* wt 2: OM_BYTES, or the message type of the children */
	uint8_t parent_msg;
	uint64_t v;     /* wt 0, 1, 5 */
	uint8_t *bytes; /* wt 2 and OM_BYTES: malloc'ed */
	size_t n;
	int kid, next;  /* first child, next sibling: indices, -1 none */
} om_node;

typedef struct om_tree {
	om_node *nd;
	int count, cap;
	bool oom;
} om_tree;

typedef struct om_rng {
	uint64_t s;
} om_rng;

static uint64_t om_next(om_rng *r)
{
	/* splitmix64 */
	uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}
static uint32_t om_below(om_rng *r, uint32_t n) { return n ? (uint32_t)(om_next(r) % n) : 0; }

static int om_new(om_tree *t)
{
	if (t->count == t->cap) {
		int cap = t->cap ? t->cap * 2 : 64;
		om_node *p = realloc(t->nd, (size_t)cap * sizeof *p);
		if (!p) {
			t->oom = true;
			return -1;
		}
		t->nd = p;
		t->cap = cap;
	}
	om_node *x = &t->nd[t->count];
	memset(x, 0, sizeof *x);
	x->kid = x->next = -1;
	return t->count++;
}

static void om_free(om_tree *t)
{
	for (int i = 0; i < t->count; i++)
		free(t->nd[i].bytes);
	free(t->nd);
	memset(t, 0, sizeof *t);
}

static bool om_varint(const uint8_t *p, size_t n, size_t *at, uint64_t *v)
{
	uint64_t x = 0;
	for (int s = 0; s < 64; s += 7) {
		if (*at >= n)
			return false;
		uint8_t c = p[(*at)++];
		x |= (uint64_t)(c & 0x7f) << s;
		if (!(c & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

/* Parses p[0, n) as message msg; appends the fields as children chained
 * from *first. False: not protobuf (or too deep). */
static bool om_parse(om_tree *t, const uint8_t *p, size_t n, int msg, int depth, int *first)
{
	*first = -1;
	if (depth > 24)
		return false;
	int last = -1;
	size_t at = 0;
	while (at < n) {
		uint64_t key, v = 0;
		if (!om_varint(p, n, &at, &key) || (key >> 3) == 0 || (key >> 3) > 536870911u)
			return false;
		uint32_t f = (uint32_t)(key >> 3);
		int wt = (int)(key & 7);
		const uint8_t *b = NULL;
		size_t bn = 0;
		if (wt == 0) {
			if (!om_varint(p, n, &at, &v))
				return false;
		} else if (wt == 1 || wt == 5) {
			size_t k = wt == 1 ? 8 : 4;
			if (n - at < k)
				return false;
			for (size_t i = 0; i < k; i++)
				v |= (uint64_t)p[at + i] << (8 * i);
			at += k;
		} else if (wt == 2) {
			if (!om_varint(p, n, &at, &v) || v > n - at)
				return false;
			b = p + at;
			bn = (size_t)v;
			at += bn;
		} else {
			return false;
		}
		int pk = wt == 2 ? om_packed(msg, f) : -1;
		if (pk >= 0) { /* one node per element */
			size_t q = 0;
			while (q < bn) {
				uint64_t e = 0;
				if (pk == 0) {
					if (!om_varint(b, bn, &q, &e))
						return false;
				} else {
					size_t k = pk == 1 ? 8 : 4;
					if (bn - q < k)
						return false;
					for (size_t i = 0; i < k; i++)
						e |= (uint64_t)b[q + i] << (8 * i);
					q += k;
				}
				int id = om_new(t);
				if (id < 0)
					return false;
				t->nd[id].field = f, t->nd[id].wt = (uint8_t)pk, t->nd[id].v = e;
				t->nd[id].parent_msg = (uint8_t)msg;
				if (last < 0)
					*first = id;
				else
					t->nd[last].next = id;
				last = id;
			}
			continue;
		}
		int id = om_new(t);
		if (id < 0)
			return false;
		t->nd[id].field = f, t->nd[id].wt = (uint8_t)wt, t->nd[id].v = v;
		t->nd[id].parent_msg = (uint8_t)msg;
		if (last < 0)
			*first = id;
		else
			t->nd[last].next = id;
		last = id;
		if (wt == 2) {
			int child = om_child(msg, f);
			int kid = -1;
			if (child != OM_BYTES && om_parse(t, b, bn, child, depth + 1, &kid)) {
				t->nd[id].msg = (uint8_t)child;
				t->nd[id].kid = kid;
			} else { /* kept as bytes (a message that does not parse is data too) */
				t->nd[id].bytes = malloc(bn ? bn : 1);
				if (!t->nd[id].bytes) {
					t->oom = true;
					return false;
				}
				memcpy(t->nd[id].bytes, b, bn);
				t->nd[id].n = bn;
			}
		}
	}
	return true;
}

typedef struct om_buf {
	uint8_t *p;
	size_t n, cap;
	bool bad;
} om_buf;

static void om_put(om_buf *b, const void *d, size_t n)
{
	if (b->bad || !n)
		return;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n)
			cap *= 2;
		uint8_t *q = realloc(b->p, cap);
		if (!q) {
			b->bad = true;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void om_put_varint(om_buf *b, uint64_t v)
{
	uint8_t c[10];
	int k = 0;
	do {
		c[k] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			c[k] |= 0x80;
		k++;
	} while (v);
	om_put(b, c, (size_t)k);
}

static void om_write(const om_tree *t, int first, om_buf *b)
{
	for (int i = first; i >= 0 && !b->bad; i = t->nd[i].next) {
		const om_node *x = &t->nd[i];
		om_put_varint(b, (uint64_t)x->field << 3 | x->wt);
		if (x->wt == 0) {
			om_put_varint(b, x->v);
		} else if (x->wt == 1 || x->wt == 5) {
			uint8_t c[8];
			for (int k = 0; k < 8; k++)
				c[k] = (uint8_t)(x->v >> (8 * k));
			om_put(b, c, x->wt == 1 ? 8 : 4);
		} else if (x->msg == OM_BYTES) {
			om_put_varint(b, x->n);
			om_put(b, x->bytes, x->n);
		} else {
			om_buf sub = {0};
			om_write(t, x->kid, &sub);
			b->bad |= sub.bad;
			om_put_varint(b, sub.n);
			om_put(b, sub.p, sub.n);
			free(sub.p);
		}
	}
}

/* ---- mutations ---- */

static const int64_t om_ints[] = {0, 1, 2, 3, 4, 7, 8, 16, 17, 23, 24, 64, 127, 128, 255, 256, 1024, 65535,
				  65536, 2147483647LL, 2147483648LL, 4294967296LL, 8589934592LL,
				  1099511627776LL, INT64_MAX, INT64_MIN, -1, -2, -3, -7, -2147483648LL};
static const float om_floats[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 1e-5f, 1e30f, -1e30f, 3.4e38f, 1e-40f};
static const char *const om_ops[] = {
	"Add", "Sub", "Mul", "Div", "Pow", "MatMul", "Gemm", "Conv", "ConvTranspose", "Relu", "Gelu", "Erf",
	"Sigmoid", "Tanh", "Softmax", "LogSoftmax", "Reshape", "Transpose", "Concat", "Split", "Slice",
	"Gather", "GatherElements", "Squeeze", "Unsqueeze", "Expand", "Where", "Cast", "Shape", "Size",
	"Range", "ConstantOfShape", "Constant", "Identity", "Flatten", "ReduceMean", "ReduceSum", "ReduceMax",
	"LayerNormalization", "BatchNormalization", "InstanceNormalization", "GroupNormalization", "MaxPool",
	"AveragePool", "GlobalAveragePool", "Resize", "Pad", "Tile", "Einsum", "TopK", "CumSum", "Equal",
	"Less", "Not", "And", "Sqrt", "Neg", "Abs", "Clip", "Min", "Max", "Dropout", "Trilu", "ArgMax", "NoSuchOp"};

/* Nodes matching pred, into out (at most cap); returns the count. */
typedef bool om_pred(const om_node *x);
static int om_pick_all(const om_tree *t, om_pred *pred, int *out, int cap)
{
	int k = 0;
	for (int i = 0; i < t->count && k < cap; i++)
		if (t->nd[i].field && pred(&t->nd[i]))
			out[k++] = i;
	return k;
}
static bool om_is_number(const om_node *x) { return x->wt != 2; }
static bool om_is_name_node(const om_node *x) { return x->wt == 2 && x->msg == OM_BYTES && om_is_name(x->parent_msg, x->field); }
static bool om_is_op_type(const om_node *x) { return x->wt == 2 && x->parent_msg == OM_NODE && x->field == 4; }
static bool om_is_raw(const om_node *x) { return x->wt == 2 && x->parent_msg == OM_TENSOR && x->field == 9; }
static bool om_is_any(const om_node *x) { return true; }

static bool om_set_bytes(om_node *x, const void *p, size_t n)
{
	uint8_t *b = malloc(n ? n : 1);
	if (!b)
		return false;
	memcpy(b, p, n);
	free(x->bytes);
	x->bytes = b;
	x->n = n;
	x->msg = OM_BYTES;
	x->kid = -1;
	return true;
}

/* The sibling before node i in its parent's chain, or -1 (first), via a scan. */
static void om_unlink(om_tree *t, int i)
{
	for (int j = 0; j < t->count; j++) {
		if (t->nd[j].kid == i) {
			t->nd[j].kid = t->nd[i].next;
			break;
		}
		if (t->nd[j].next == i) {
			t->nd[j].next = t->nd[i].next;
			break;
		}
	}
	t->nd[i].field = 0; /* unreachable from now on */
}

/* A deep copy of node i (and its children), linked after i. */
static int om_copy(om_tree *t, int i, int depth)
{
	if (depth > 24)
		return -1;
	int c = om_new(t);
	if (c < 0)
		return -1;
	om_node x = t->nd[i];
	x.next = -1;
	x.kid = -1;
	x.bytes = NULL;
	if (t->nd[i].bytes && !(x.bytes = malloc(t->nd[i].n ? t->nd[i].n : 1))) {
		t->oom = true;
		return -1;
	}
	if (x.bytes)
		memcpy(x.bytes, t->nd[i].bytes, t->nd[i].n);
	t->nd[c] = x;
	int last = -1;
	for (int k = t->nd[i].kid; k >= 0; k = t->nd[k].next) {
		int ck = om_copy(t, k, depth + 1);
		if (ck < 0)
			return -1;
		if (last < 0)
			t->nd[c].kid = ck;
		else
			t->nd[last].next = ck;
		last = ck;
	}
	return c;
}

static bool om_mutate_once(om_tree *t, om_rng *r)
{
	int cap = t->count, *ids = malloc((size_t)(cap ? cap : 1) * sizeof *ids);
	if (!ids)
		return false;
	bool done = false;
	for (int tries = 0; tries < 8 && !done; tries++) {
		int k;
		switch (om_below(r, 10)) {
		case 0: case 1: case 2: /* a number: a boundary value, or near the old one */
			if ((k = om_pick_all(t, om_is_number, ids, cap))) {
				om_node *x = &t->nd[ids[om_below(r, (uint32_t)k)]];
				if (x->wt == 5) {
					float f;
					uint32_t bits = (uint32_t)x->v;
					memcpy(&f, &bits, 4);
					switch (om_below(r, 3)) {
					case 0: f = om_floats[om_below(r, SN_OM_COUNT(om_floats))]; break;
					case 1: f = om_below(r, 2) ? NAN : INFINITY; break;
					default: f = f * (float)om_below(r, 7) - 3.0f; break;
					}
					memcpy(&bits, &f, 4);
					x->v = bits;
				} else {
					/* in uint64_t: wrapping, never signed overflow */
					uint64_t v = x->v;
					switch (om_below(r, 4)) {
					case 0: case 1: v = (uint64_t)om_ints[om_below(r, SN_OM_COUNT(om_ints))]; break;
					case 2: v += (uint64_t)om_below(r, 9) - 4u; break;
					default: v = om_below(r, 2) ? v * 2u : (uint64_t)((int64_t)v / 2); break;
					}
					x->v = v;
				}
				done = true;
			}
			break;
		case 3: case 4: /* a value name: another name of the model, or none */
			if ((k = om_pick_all(t, om_is_name_node, ids, cap))) {
				om_node *x = &t->nd[ids[om_below(r, (uint32_t)k)]];
				om_node *y = &t->nd[ids[om_below(r, (uint32_t)k)]];
				if (om_below(r, 8) == 0)
					done = om_set_bytes(x, "", 0);
				else if (x != y)
					done = om_set_bytes(x, y->bytes, y->n);
			}
			break;
		case 5: /* an op type */
			if ((k = om_pick_all(t, om_is_op_type, ids, cap))) {
				om_node *x = &t->nd[ids[om_below(r, (uint32_t)k)]];
				const char *op = om_ops[om_below(r, SN_OM_COUNT(om_ops))];
				done = om_set_bytes(x, op, strlen(op));
			}
			break;
		case 6: /* raw_data resized: cut, or grown with bytes of its own */
			if ((k = om_pick_all(t, om_is_raw, ids, cap))) {
				om_node *x = &t->nd[ids[om_below(r, (uint32_t)k)]];
				size_t n = om_below(r, 2) ? x->n / (1 + om_below(r, 4)) : x->n + 1 + om_below(r, 64);
				uint8_t *b = calloc(n ? n : 1, 1);
				if (b) {
					for (size_t i = 0; i < n; i++)
						b[i] = x->n ? x->bytes[i % x->n] : (uint8_t)om_next(r);
					free(x->bytes);
					x->bytes = b;
					x->n = n;
					done = true;
				}
			}
			break;
		case 7: /* a field deleted */
			if ((k = om_pick_all(t, om_is_any, ids, cap)) > 1) {
				om_unlink(t, ids[1 + om_below(r, (uint32_t)k - 1)]);
				done = true;
			}
			break;
		default: /* a field duplicated (a node, a dim, an initializer, an attribute) */
			if ((k = om_pick_all(t, om_is_any, ids, cap))) {
				int i = ids[om_below(r, (uint32_t)k)];
				int c = om_copy(t, i, 0);
				if (c >= 0) {
					t->nd[c].next = t->nd[i].next;
					t->nd[i].next = c;
					done = true;
				}
			}
			break;
		}
	}
	free(ids);
	return done;
}

/* Mutates data[0, size) in place (capacity max_size) as an ONNX model
 * with nmut mutations (-1: one to three, chosen by seed; 0: the model is
 * only parsed and written back); returns the new size, or 0 when the
 * input is not protobuf or the result does not fit (the caller then
 * mutates bytes). */
static size_t om_mutate(uint8_t *data, size_t size, size_t max_size, unsigned seed, int nmut)
{
	om_tree t = {0};
	int root = -1;
	size_t out = 0;
	om_rng r = {seed * 0x2545F4914F6CDD1Dull + 1};
	if (size && om_parse(&t, data, size, OM_MODEL, 0, &root) && !t.oom && root >= 0) {
		int n = nmut >= 0 ? nmut : 1 + (int)om_below(&r, 3);
		for (int i = 0; i < n; i++)
			om_mutate_once(&t, &r);
		om_buf b = {0};
		om_write(&t, root, &b);
		if (!b.bad && !t.oom && b.n <= max_size && b.n) {
			memcpy(data, b.p, b.n);
			out = b.n;
		}
		free(b.p);
	}
	om_free(&t);
	return out;
}

#endif
