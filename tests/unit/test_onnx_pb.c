/* test_onnx_pb.c: the ONNX protobuf decoder on hand-assembled bytes:
 * varints, nested messages, packed and unpacked repeated fields, and the
 * exact messages for truncated, overlong and malformed input. */
#include "frontend/onnx_pb.h"
#include "check.h"

#include <stdlib.h>

#define B(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})

static int varint(const uint8_t *p, size_t n, uint64_t *v, sn_err *e)
{
	onnx_pb_reader r = {p, p, p + n, "t", "test", NULL, 0};
	return onnx_pb_varint(&r, v, e);
}

static void test_varints(void)
{
	uint64_t v = 0;
	sn_err e = {0};
	CHECK(varint(B(0x00), &v, &e) == SN_OK && v == 0);
	CHECK(varint(B(0x96, 0x01), &v, &e) == SN_OK && v == 150);
	CHECK(varint(B(0xac, 0x02), &v, &e) == SN_OK && v == 300);
	/* -1 as an int64: ten bytes, the last holding one bit */
	CHECK(varint(B(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), &v, &e) == SN_OK &&
	      v == UINT64_MAX);
	CHECK(varint(B(0x80, 0x80, 0x80, 0x80, 0x08), &v, &e) == SN_OK && v == (UINT64_C(1) << 31));

	sn_err e1 = {0};
	CHECK(varint(B(0x96), &v, &e1) == SN_EINPUT);
	CHECK_STR(e1.msg, "t: malformed protobuf: truncated varint at byte 0 in test");
	sn_err e2 = {0};
	CHECK(varint(B(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02), &v, &e2) == SN_EINPUT);
	CHECK_STR(e2.msg, "t: malformed protobuf: varint overflows 64 bits at byte 0 in test");
	sn_err e3 = {0};
	CHECK(varint(B(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00), &v, &e3) == SN_EINPUT);
	CHECK_STR(e3.msg, "t: malformed protobuf: varint overflows 64 bits at byte 0 in test");
}

static int decode(const uint8_t *p, size_t n, sn_arena *a, onnx_model **m, sn_err *e)
{
	return onnx_pb_decode(p, n, "m.onnx", a, m, e);
}

/* A model with one node and one initializer, fields out of order, repeated
 * ints both packed and one per key, floats packed and unpacked. */
static void test_model(void)
{
	/* Lengths worked out by hand: attribute 12 bytes, node 27, initializer
	 * 22, graph 29 + 24 + 3 + 10 = 66, model 10 + 68 = 78. */
	static const uint8_t m2[] = {
		0x08, 0x08,                          /* ModelProto.ir_version (1) = 8 */
		0x12, 0x02, 'p', 't',                /* producer_name (2) = "pt" */
		0x42, 0x02, 0x10, 0x11,              /* opset_import (8) { version (2) = 17 } */
		0x3a, 66,                            /* graph (7) */
		0x0a, 27,                            /*  node (1) */
		0x0a, 0x01, 'x',                     /*   input (1) "x" */
		0x0a, 0x00,                          /*   input (1) "" (absent optional) */
		0x12, 0x01, 'y',                     /*   output (2) "y" */
		0x22, 0x03, 'T', 'o', 'p',           /*   op_type (4) "Top" */
		0x2a, 12,                            /*   attribute (5) */
		0x0a, 0x01, 'k',                     /*    name (1) "k" */
		0x42, 0x02, 0x03, 0x7f,              /*    ints (8) packed [3, 127] */
		0x40, 0x05,                          /*    ints (8) one value: 5 */
		0xa0, 0x01, 0x07,                    /*    type (20) = INTS */
		0x2a, 22,                            /*  initializer (5) */
		0x0a, 0x02, 0x02, 0x03,              /*   dims (1) packed [2, 3] */
		0x08, 0x04,                          /*   dims (1) one value: 4 */
		0x10, 0x01,                          /*   data_type (2) = FLOAT */
		0x42, 0x01, 'w',                     /*   name (8) "w" */
		0x22, 0x04, 0x00, 0x00, 0x80, 0x3f,  /*   float_data (4) packed [1.0] */
		0x25, 0x00, 0x00, 0x00, 0xc0,        /*   float_data (4) one value: -2.0 */
		0x12, 0x01, 'g',                     /*  name (2) "g" */
		0x99, 0x01, 1, 2, 3, 4, 5, 6, 7, 8,  /*  unknown field 19, fixed64: skipped */
	};
	CHECK(sizeof m2 == 78);
	sn_arena *a = sn_arena_new();
	onnx_model *m = NULL;
	sn_err e = {0};
	CHECK(decode(m2, sizeof m2, a, &m, &e) == SN_OK);
	if (e.code)
		fprintf(stderr, "%s\n", e.msg);
	if (m && m->graph) {
		CHECK(m->ir_version == 8);
		CHECK_STR(m->producer_name, "pt");
		CHECK(m->nopsets == 1 && m->opsets[0].version == 17 && m->opsets[0].domain[0] == 0);
		const onnx_graph *g = m->graph;
		CHECK_STR(g->name, "g");
		CHECK(g->nnodes == 1 && g->ninit == 1);
		const onnx_node *n = &g->nodes[0];
		CHECK(n->ninputs == 2 && n->noutputs == 1);
		CHECK_STR(n->inputs[0], "x");
		CHECK_STR(n->inputs[1], "");
		CHECK_STR(n->op_type, "Top");
		CHECK(n->nattrs == 1 && n->attrs[0].type == ONNX_AT_INTS && n->attrs[0].nints == 3);
		if (n->nattrs == 1 && n->attrs[0].nints == 3)
			CHECK(n->attrs[0].ints[0] == 3 && n->attrs[0].ints[1] == 127 && n->attrs[0].ints[2] == 5);
		const onnx_tensor *t = &g->inits[0];
		CHECK_STR(t->name, "w");
		CHECK(t->data_type == ONNX_FLOAT && t->ndims == 3);
		if (t->ndims == 3)
			CHECK(t->dims[0] == 2 && t->dims[1] == 3 && t->dims[2] == 4);
		CHECK(t->nfloat == 2);
		if (t->nfloat == 2)
			CHECK(t->float_data[0] == 1.0f && t->float_data[1] == -2.0f);
	} else {
		CHECK(!"model decoded");
	}

	/* Each truncation of the model is refused; none reads past the end
	 * (ASan watches the heap copy). A cut right after a whole top-level
	 * field (at 2, 6 and 10 bytes) is a valid, shorter model. */
	int refused = 0;
	for (size_t n = 1; n < sizeof m2; n++) {
		uint8_t *cut = malloc(n);
		memcpy(cut, m2, n);
		sn_err ec = {0};
		onnx_model *mc;
		if (decode(cut, n, a, &mc, &ec) == SN_EINPUT && strstr(ec.msg, "m.onnx: malformed protobuf: "))
			refused++;
		free(cut);
	}
	CHECK(refused == (int)sizeof m2 - 1 - 3);
	sn_arena_free(a);
}

static void expect_err(const uint8_t *p, size_t n, const char *msg)
{
	sn_arena *a = sn_arena_new();
	onnx_model *m = NULL;
	sn_err e = {0};
	CHECK(decode(p, n, a, &m, &e) == SN_EINPUT);
	CHECK(m == NULL);
	CHECK_STR(e.msg, msg);
	sn_arena_free(a);
}

static void test_errors(void)
{
	expect_err(B(0x3a, 0x05, 0x0a), "m.onnx: malformed protobuf: length 5 runs past the end (1 bytes left) at byte 1 in ModelProto");
	expect_err(B(0x38, 0x01), "m.onnx: malformed protobuf: field 7 has wire type 0, expected 2 at byte 0 in ModelProto");
	expect_err(B(0x0b), "m.onnx: malformed protobuf: field 1 is a group (wire type 3), which ONNX does not use at byte 0 in ModelProto");
	expect_err(B(0x0e), "m.onnx: malformed protobuf: field 1 has invalid wire type 6 at byte 0 in ModelProto");
	expect_err(B(0x00, 0x01), "m.onnx: malformed protobuf: invalid field number 0 at byte 0 in ModelProto");
	/* graph { node { input "a\0" } } */
	expect_err(B(0x3a, 0x06, 0x0a, 0x04, 0x0a, 0x02, 'a', 0x00),
		   "m.onnx: malformed protobuf: string field 1 contains a NUL byte at byte 4 in NodeProto");
	/* graph { initializer { float_data packed, 3 bytes } } */
	expect_err(B(0x3a, 0x07, 0x2a, 0x05, 0x22, 0x03, 1, 2, 3),
		   "m.onnx: malformed protobuf: packed field 4 has length 3, not a multiple of 4 at byte 4 in TensorProto");
	/* graph { initializer { double_data fixed64 cut short } } */
	expect_err(B(0x3a, 0x05, 0x2a, 0x03, 0x51, 1, 2),
		   "m.onnx: malformed protobuf: truncated 8-byte value at byte 5 in TensorProto");
	/* a nested length that fits the file but not its parent */
	expect_err(B(0x3a, 0x02, 0x0a, 0x05, 0, 0, 0, 0, 0),
		   "m.onnx: malformed protobuf: length 5 runs past the end (0 bytes left) at byte 3 in GraphProto");
	/* an unknown field of each wire type is skipped */
	sn_arena *a = sn_arena_new();
	onnx_model *m = NULL;
	sn_err e = {0};
	CHECK(decode(B(0x98, 0x06, 0x05, 0x9d, 0x06, 1, 2, 3, 4, 0x9a, 0x06, 0x01, 'z', 0x08, 0x07), a, &m, &e) == SN_OK);
	CHECK(m && m->ir_version == 7 && !m->graph);
	/* the empty buffer is an empty model */
	CHECK(decode(NULL, 0, a, &m, &e) == SN_OK && m && !m->graph);
	sn_arena_free(a);
}

int main(void)
{
	test_varints();
	test_model();
	test_errors();
	return check_done("onnx_pb");
}
