/* onnx_pb.h: a protobuf wire-format decoder for the ONNX messages
 * (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
 * ValueInfoProto, TypeProto, TensorShapeProto, OperatorSetIdProto,
 * StringStringEntryProto), written against the field numbers of the
 * published onnx.proto. Everything decoded lives in one arena; raw byte
 * fields (raw_data, attribute strings) point into the caller's buffer,
 * which must outlive the model. Every length and offset is checked against
 * the bytes that are left: hostile input gives SN_EINPUT with a message
 * that names the message type and the byte offset, never a read out of
 * bounds. Unknown fields are skipped (after checking their length); groups
 * (wire types 3 and 4) and wire types 6 and 7 are refused. Prefix: onnx_pb_
 * for functions, onnx_ for the decoded types. */
#ifndef SINTER_ONNX_PB_H
#define SINTER_ONNX_PB_H

#include "ir/base.h"

/* TensorProto.DataType */
enum {
	ONNX_UNDEFINED = 0, ONNX_FLOAT = 1, ONNX_UINT8 = 2, ONNX_INT8 = 3, ONNX_UINT16 = 4,
	ONNX_INT16 = 5, ONNX_INT32 = 6, ONNX_INT64 = 7, ONNX_STRING = 8, ONNX_BOOL = 9,
	ONNX_FLOAT16 = 10, ONNX_DOUBLE = 11, ONNX_UINT32 = 12, ONNX_UINT64 = 13,
	ONNX_COMPLEX64 = 14, ONNX_COMPLEX128 = 15, ONNX_BFLOAT16 = 16,
	ONNX_FLOAT8E4M3FN = 17, ONNX_FLOAT8E4M3FNUZ = 18, ONNX_FLOAT8E5M2 = 19,
	ONNX_FLOAT8E5M2FNUZ = 20, ONNX_UINT4 = 21, ONNX_INT4 = 22,
};

/* AttributeProto.AttributeType */
enum {
	ONNX_AT_UNDEFINED = 0, ONNX_AT_FLOAT = 1, ONNX_AT_INT = 2, ONNX_AT_STRING = 3,
	ONNX_AT_TENSOR = 4, ONNX_AT_GRAPH = 5, ONNX_AT_FLOATS = 6, ONNX_AT_INTS = 7,
	ONNX_AT_STRINGS = 8, ONNX_AT_TENSORS = 9, ONNX_AT_GRAPHS = 10,
	ONNX_AT_SPARSE_TENSOR = 11, ONNX_AT_SPARSE_TENSORS = 12, ONNX_AT_TYPE_PROTO = 13,
	ONNX_AT_TYPE_PROTOS = 14,
};

/* Bytes borrowed from the decoded buffer. */
typedef struct onnx_bytes {
	const uint8_t *p;
	size_t n;
} onnx_bytes;

typedef struct onnx_tensor {
	const char *name;      /* "" if absent */
	int32_t data_type;
	size_t ndims;
	int64_t *dims;
	bool has_raw;
	onnx_bytes raw;        /* raw_data, little-endian */
	size_t nfloat, nint32, nint64, ndouble, nuint64, nstring;
	float *float_data;
	int64_t *int32_data;   /* int32 field (int32, int16, int8, uint16, uint8, bool,
	                        * float16/bf16/fp8 bits), each value already cut to 32 bits */
	int64_t *int64_data;
	double *double_data;
	int64_t *uint64_data;  /* the uint64 bits */
	bool has_segment;
	/* data_location EXTERNAL and external_data entries */
	bool external;
	const char *location;  /* NULL if absent */
	int64_t offset;        /* 0 if absent */
	int64_t length;        /* -1 if absent */
	const char *bad_ext;   /* "offset" or "length" when it is not a decimal integer >= 0, else NULL */
	const char *bad_ext_val; /* its text */
} onnx_tensor;

typedef struct onnx_attr {
	const char *name;
	const char *ref_attr_name; /* NULL if absent */
	int32_t type;
	float f;
	int64_t i;
	onnx_bytes s;
	onnx_tensor *t;        /* NULL if absent */
	bool has_g;            /* a subgraph (not decoded: sinter has no control flow) */
	size_t nfloats, nints, nstrings, ntensors, ngraphs;
	float *floats;
	int64_t *ints;
	onnx_bytes *strings;
} onnx_attr;

typedef struct onnx_node {
	const char *name, *op_type, *domain; /* "" if absent */
	size_t ninputs, noutputs, nattrs;
	const char **inputs;   /* "" for an absent optional input */
	const char **outputs;
	onnx_attr *attrs;
} onnx_node;

typedef struct onnx_dim {
	bool has_value;
	int64_t value;
	const char *param;     /* dim_param, NULL if absent */
} onnx_dim;

typedef struct onnx_value_info {
	const char *name;
	bool has_type;         /* a tensor_type was given */
	bool other_type;       /* a sequence, map, optional or sparse type */
	int32_t elem_type;
	bool has_shape;
	size_t rank;
	onnx_dim *dims;
} onnx_value_info;

typedef struct onnx_graph {
	const char *name;
	size_t nnodes, ninit, ninputs, noutputs, nvalue_info, nsparse_init;
	onnx_node *nodes;
	onnx_tensor *inits;
	onnx_value_info *inputs, *outputs, *value_info;
} onnx_graph;

typedef struct onnx_opset {
	const char *domain;    /* "" or "ai.onnx" for the default domain */
	int64_t version;
} onnx_opset;

typedef struct onnx_model {
	int64_t ir_version;
	const char *producer_name, *producer_version;
	size_t nopsets, nfunctions;
	onnx_opset *opsets;
	onnx_graph *graph;     /* NULL if absent */
} onnx_model;

/* Decodes a serialized ModelProto from buf[0 .. len) into *out, allocated
 * in a (which the caller frees). name prefixes messages:
 * "NAME: malformed protobuf: truncated varint at byte 3 in ModelProto". */
int onnx_pb_decode(const void *buf, size_t len, const char *name, sn_arena *a, onnx_model **out,
		   sn_err *e);

/* The wire-level reader, exposed for tests. */
typedef struct onnx_pb_reader {
	const uint8_t *base, *p, *end;
	const char *name;      /* file name for messages */
	const char *msg;       /* the message type being read, for messages */
	sn_arena *a;
	int depth;
} onnx_pb_reader;

/* Reads one varint at r->p (at most 10 bytes, the 10th holding at most
 * one bit). */
int onnx_pb_varint(onnx_pb_reader *r, uint64_t *v, sn_err *e);

#endif
