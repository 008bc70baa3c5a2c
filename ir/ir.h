/* ir.h: the sinter IR. A graph is SSA: nodes in topological order in one
 * array, referenced by 32-bit ids; everything a node points to lives in the
 * graph's arena and dies with it. Prefix: ir_. */
#ifndef SINTER_IR_H
#define SINTER_IR_H

#include "base.h"

/* ---- dtypes ------------------------------------------------------------ */
/* X(id, text name, bytes, is_float) */
#define IR_DTYPES(X)                   \
	X(F32, "f32", 4, 1)            \
	X(F16, "f16", 2, 1)            \
	X(BF16, "bf16", 2, 1)          \
	X(F8E4M3, "f8e4m3", 1, 1)      \
	X(F8E5M2, "f8e5m2", 1, 1)      \
	X(I64, "i64", 8, 0)            \
	X(I32, "i32", 4, 0)            \
	X(I8, "i8", 1, 0)              \
	X(U8, "u8", 1, 0)              \
	X(BOOL, "bool", 1, 0)

typedef enum ir_dtype {
#define X(id, name, size, isf) IR_##id,
	IR_DTYPES(X)
#undef X
	IR_NDTYPES
} ir_dtype;

const char *ir_dtype_name(ir_dtype t);
int ir_dtype_parse(const char *s, size_t n); /* -1 if unknown */
size_t ir_dtype_size(ir_dtype t);
bool ir_dtype_is_float(ir_dtype t);

/* Element access in any dtype through double. Stores round correctly
 * (round to nearest even) for f32, f16, bf16 and both fp8s; integers
 * truncate toward zero and saturate; bool stores x != 0.
 * f8e4m3 is the "fn" variant (no inf; overflow and NaN give NaN). */
double ir_load(ir_dtype t, const void *base, size_t i);
void ir_store(ir_dtype t, void *base, size_t i, double x);
/* The bit patterns, exposed for tests and codegen. */
uint16_t ir_f16_from_double(double x);
uint16_t ir_bf16_from_double(double x);
uint8_t ir_f8e4m3_from_double(double x);
uint8_t ir_f8e5m2_from_double(double x);
double ir_f16_to_double(uint16_t h);
double ir_bf16_to_double(uint16_t h);
double ir_f8e4m3_to_double(uint8_t b);
double ir_f8e5m2_to_double(uint8_t b);

/* ---- shapes ------------------------------------------------------------ */
#define IR_MAX_RANK 8
#define IR_MAX_SYMS 16
/* The most bytes one value may hold (256 TiB): ir_verify refuses a value
 * larger than this as one that cannot exist. */
#define IR_MAX_BYTES ((uint64_t)1 << 48)
/* A dim >= 0 is a number; a negative dim names a symbol of the graph. */
#define IR_SYM(k) (-(int64_t)(k) - 1)
#define IR_DIM_INFER INT64_MIN /* reshape's -1 in an attribute */
#define IR_IS_SYM(d) ((d) < 0 && (d) != IR_DIM_INFER)
#define IR_SYM_ID(d) ((int)(-(d) - 1))

typedef struct ir_shape {
	int32_t rank;
	int64_t d[IR_MAX_RANK];
} ir_shape;

bool ir_shape_eq(const ir_shape *a, const ir_shape *b);
bool ir_shape_concrete(const ir_shape *s);
int64_t ir_numel(const ir_shape *s); /* -1 if any dim is a symbol */

/* ---- op kinds, ops and attributes --------------------------------------- */
typedef enum ir_kind {
	IR_K_SOURCE, IR_K_UNARY, IR_K_BINARY, IR_K_TERNARY, IR_K_REDUCE,
	IR_K_NORM, IR_K_CONTRACT, IR_K_CONV, IR_K_ATTENTION, IR_K_POOL, IR_K_MOVE,
} ir_kind;

typedef enum ir_op {
#define OP(id, kind, mn, mx, attrs, req, rule) IR_OP_##id,
#include "ops.def"
#undef OP
	IR_NOPS
} ir_op;

typedef enum ir_attr_id {
#define ATTR(id, type) IR_ATTR_##id,
#include "attrs.def"
#undef ATTR
	IR_NATTRS
} ir_attr_id;

#define IR_A(id) (UINT64_C(1) << IR_ATTR_##id)
#define IR_VARIADIC UINT32_MAX
#define IR_MAX_LIST 16

typedef enum ir_attr_type {
	IR_AT_INT, IR_AT_INTS, IR_AT_DIMS, IR_AT_BOOL, IR_AT_FLOAT, IR_AT_DTYPE,
	IR_AT_LAYOUT, IR_AT_GELU, IR_AT_PADMODE, IR_AT_SCATTER,
} ir_attr_type;

typedef enum ir_layout { IR_NCHW, IR_NHWC } ir_layout;
typedef enum ir_gelu { IR_GELU_NONE, IR_GELU_TANH } ir_gelu;
typedef enum ir_padmode { IR_PAD_CONSTANT, IR_PAD_REFLECT, IR_PAD_EDGE } ir_padmode;
/* How a scatter combines an update with the value already there. */
typedef enum ir_scatter { IR_SCATTER_NONE, IR_SCATTER_ADD, IR_SCATTER_MUL, IR_SCATTER_MAX, IR_SCATTER_MIN } ir_scatter;

typedef struct ir_ints {
	int32_t n;
	int64_t v[IR_MAX_LIST];
} ir_ints;

/* The C type of each attribute type. */
typedef int64_t ir_at_INT;
typedef ir_ints ir_at_INTS;
typedef ir_ints ir_at_DIMS; /* dims encoded as in ir_shape, IR_DIM_INFER for -1 */
typedef bool ir_at_BOOL;
typedef double ir_at_FLOAT;
typedef ir_dtype ir_at_DTYPE;
typedef ir_layout ir_at_LAYOUT;
typedef ir_gelu ir_at_GELU;
typedef ir_padmode ir_at_PADMODE;
typedef ir_scatter ir_at_SCATTER;

/* One typed field per attribute in attrs.def; an op reads the fields its
 * row in ops.def allows. Defaults: ir_attrs_init. */
typedef struct ir_attrs {
#define ATTR(id, type) ir_at_##type id;
#include "attrs.def"
#undef ATTR
} ir_attrs;

typedef struct ir_op_info {
	const char *name;
	ir_kind kind;
	uint32_t min_in, max_in;
	uint64_t attrs, required;
} ir_op_info;

typedef struct ir_attr_info {
	const char *name;
	ir_attr_type type;
	size_t offset; /* in ir_attrs */
} ir_attr_info;

extern const ir_op_info ir_ops[IR_NOPS];
extern const ir_attr_info ir_attr_table[IR_NATTRS];
int ir_op_parse(const char *s, size_t n);   /* -1 if unknown */
int ir_attr_parse(const char *s, size_t n); /* -1 if unknown */
const char *ir_layout_name(ir_layout l);
const char *ir_gelu_name(ir_gelu g);
const char *ir_padmode_name(ir_padmode m);
const char *ir_scatter_name(ir_scatter m);
int ir_enum_parse(ir_attr_type t, const char *s, size_t n); /* -1 if unknown */

/* The defaults of op's attributes (the values the printer leaves out):
 * stride/dilation [1,1], pad [0,0,0,0], groups 1, eps 1e-5, axis -1 for
 * softmax/log_softmax/layer_norm/rms_norm, 1 for flatten (end -1), 0 for
 * concat/split/gather/iota; clamp min -inf max +inf; mode constant,
 * value 0; scale 0 (default scale); alpha 0.01 for leaky_relu, 1 for
 * elu; reduction none; lists empty otherwise. */
void ir_attrs_init(ir_op op, ir_attrs *a);
/* Whether attribute id of a differs from its default for op. */
bool ir_attr_is_default(ir_op op, const ir_attrs *a, ir_attr_id id);

/* ---- nodes and graphs ---------------------------------------------------- */
typedef uint32_t ir_ref;
#define IR_NONE UINT32_MAX

typedef struct ir_node {
	ir_op op;
	ir_dtype dtype;
	ir_shape shape;
	uint32_t nin;
	ir_ref *in;        /* operands, earlier nodes */
	ir_attrs *attrs;   /* never NULL */
	const char *name;  /* value name without '%'; NULL if unnamed */
	const char *pname; /* param: the key in the weights file */
	void *data;        /* const: numel * dtype size bytes, row-major */
	uint32_t line, col; /* where it was written, 0 if nowhere */
} ir_node;

typedef struct ir_graph {
	sn_arena *arena;
	ir_node *nodes; /* heap, grows; ids are stable */
	uint32_t nnodes, cap;
	ir_ref *inputs; /* nodes of op input, in signature order (heap) */
	uint32_t ninputs;
	ir_ref *outputs; /* heap */
	uint32_t noutputs;
	const char *func;    /* function name without '@' */
	const char *weights; /* weights file as written in the source, or NULL */
	const char *path;    /* source file, or NULL */
	const char *syms[IR_MAX_SYMS];
	uint32_t nsyms;
	/* State (docs/IR.md, State): values kept across runs and updated in
	 * place. The last nstates inputs are the states, in declaration order,
	 * and the last nstates outputs their new values, in the same order:
	 * state k is input ninputs - nstates + k, its update output
	 * noutputs - nstates + k. Every pass keeps inputs and outputs in order,
	 * so the count is all a graph carries. */
	uint32_t nstates;
} ir_graph;

/* Created by ir_graph_new, freed by ir_graph_free. NULL on OOM. */
ir_graph *ir_graph_new(void);
void ir_graph_free(ir_graph *g);
/* A deep copy. Freed by ir_graph_free. */
ir_graph *ir_graph_clone(const ir_graph *g, sn_err *e);

/* The id of symbol name, added if new; -1 if the table is full. */
int ir_sym(ir_graph *g, const char *name, size_t n);

/* Builder. Each call checks operands and attributes with the op's shape
 * rule and returns the new node's id, or IR_NONE with e set (the message
 * has no location: callers that know one add it). attrs may be NULL for
 * the op's defaults; it is copied. */
ir_ref ir_add(ir_graph *g, ir_op op, const ir_ref *in, uint32_t nin,
	      const ir_attrs *attrs, sn_err *e);
ir_ref ir_add_input(ir_graph *g, const char *name, ir_dtype t, const ir_shape *s, sn_err *e);
ir_ref ir_add_param(ir_graph *g, const char *pname, ir_dtype t, const ir_shape *s, sn_err *e);
/* data: numel * size bytes, copied. The shape must be concrete. */
ir_ref ir_add_const(ir_graph *g, ir_dtype t, const ir_shape *s, const void *data, sn_err *e);
ir_ref ir_add_iota(ir_graph *g, ir_dtype t, const ir_shape *s, int64_t axis, sn_err *e);
int ir_set_name(ir_graph *g, ir_ref r, const char *name);
int ir_add_output(ir_graph *g, ir_ref r);

/* Shape and dtype inference for one node: reads n's op, operands and
 * attributes, writes *t and *s. Dispatches to ir_rule_<rule> (ops.def). */
int ir_infer(const ir_graph *g, const ir_node *n, ir_dtype *t, ir_shape *s, sn_err *e);
/* Normalizes a possibly negative axis against rank; -1 if out of range. */
int ir_axis(int64_t axis, int rank);
/* ONNX Slice on one axis of size d (step != 0): negative start/end count
 * from the end and are clamped to [0, d] (step > 0) or [-1, d-1] (step <
 * 0). Returns how many elements are taken and sets *first to the first
 * index taken. The shape rule, the reference and codegen all use it. */
int64_t ir_slice_axis(int64_t d, int64_t start, int64_t end, int64_t step, int64_t *first);

/* Checks the whole graph: operands precede their users, operand counts and
 * required attributes, every node's type equals what inference gives,
 * graph inputs/outputs are sane, value names are unique. Messages name
 * the node (and its source location when it has one). */
int ir_verify(const ir_graph *g, sn_err *e);
/* Node i's value could exist: its bytes fit IR_MAX_BYTES (ir_verify checks
 * every node with it; the .sir parser as it builds, so that a graph that
 * parses verifies). SN_EINPUT naming the node and the bytes it needs. */
int ir_check_size(const ir_graph *g, ir_ref i, sn_err *e);

/* Canonical text (docs/IR.md). Appends to b. */
void ir_print(const ir_graph *g, sn_buf *b);
/* " name=value" for attribute id of a, as the printer writes it (the
 * printer and codegen's kernel comments share it). */
void ir_print_attr(sn_buf *b, const ir_graph *g, const ir_attrs *a, ir_attr_id id);
/* "f32[N,3,224,224]" into out (at least 160 bytes). */
void ir_type_str(const ir_graph *g, ir_dtype t, const ir_shape *s, char *out, size_t cap);

/* Structural hash (XXH3-128): topology, ops, attributes, shapes, dtypes,
 * symbol names, output order; not value names, param keys, nor
 * weight values. Const node data is included (it is part of the program). */
void ir_hash(const ir_graph *g, uint8_t out[16]);

/* ---- host tensors --------------------------------------------------------- */
typedef struct ir_tensor {
	ir_dtype dtype;
	ir_shape shape; /* concrete */
	void *data;
	size_t nbytes;
} ir_tensor;

#endif
