/* onnx_impl.h: what the ONNX importer's files share (frontend/onnx*.c
 * only). onnx.c owns the import context: the value table, the work graph
 * and the values known at import time; onnx_ops*.c translate one ONNX op
 * each through the helpers below.
 *
 * Translation builds a work graph in which every value the ONNX graph names
 * is one node. A node whose operands are all known (initializers,
 * constants, shapes) is evaluated at once with ref_eval_node and its value
 * kept beside it; the final graph keeps only the nodes a graph output needs
 * that are not known, and turns the known values they read into params
 * (initializers, large folded values) or inline constants. Integer shape
 * values may hold a symbolic dim: such an element is stored as OX_SYMV(k)
 * and survives only data movement (Gather, Concat, Slice, Unsqueeze, ...),
 * which is what Shape -> Gather -> Concat -> Reshape needs. */
#ifndef SINTER_ONNX_IMPL_H
#define SINTER_ONNX_IMPL_H

#include "frontend/onnx.h"
#include "frontend/onnx_pb.h"

#define OX_SYMV(k) (INT64_MIN + 64 + (int64_t)(k))
#define OX_IS_SYMV(v) ((v) >= OX_SYMV(0) && (v) < OX_SYMV(IR_MAX_SYMS))

typedef struct ox_slot ox_slot;

typedef struct ox_ctx {
	const char *name;      /* the model's name in messages */
	const char *dir;       /* directory of external data; NULL: refused */
	const onnx_graph *og;
	int64_t opset;         /* default domain */
	ir_graph *w;           /* the work graph */
	ir_tensor *kt;         /* per work node: its value, if kflag */
	uint8_t *kflag;        /* per work node: 0 unknown, 1 known, 2 initializer */
	uint32_t kcap;
	ox_slot *slots;        /* ONNX value name -> work node (open addressing) */
	size_t nslots, slotcap;
	const char **used;     /* sanitized value names taken (open addressing) */
	size_t nused, usedcap;
	const sir_bind *binds;
	size_t nbinds;
	bool *bind_used;
	uint32_t nunk;         /* fresh symbols made */
	char **files;          /* external data files read (real paths, heap), or NULL: not kept */
	size_t nfiles;
	bool keep_files;
	sn_err *e;
	/* Graph inputs with an initializer (docs/ONNX.md): from IR version 4
	 * an input whose default is the initializer (ONNX, onnxruntime: a feed
	 * overrides it). One whose value an op needs at import (a Reshape's
	 * shape) is pinned: the import starts again with it an initializer. */
	bool overridable;      /* IR version >= 4 */
	char **pinned;         /* the pinned inputs' names (the caller's) */
	size_t npinned;
	const char *pin;       /* set, with a failure, when one more must be pinned */
} ox_ctx;

/* A translator: reads nd's inputs and attributes, adds nodes, binds every
 * output with ox_out. Returns SN_OK or the error code (c->e set). */
typedef int ox_tr(ox_ctx *c, const onnx_node *nd);

typedef struct ox_op {
	const char *name;
	ox_tr *fn;
	uint32_t min_in, max_in; /* inputs, counting absent optional ones ("") */
} ox_op;

/* onnx_ops.c: the table of supported ops; NULL if op_type is not one. */
const ox_op *ox_find_op(const char *op_type);
/* onnx_ops_move.c: shapes, constants and data movement. */
ox_tr ox_tr_identity, ox_tr_dropout, ox_tr_constant, ox_tr_constant_of_shape, ox_tr_range, ox_tr_shape,
	ox_tr_size, ox_tr_reshape, ox_tr_flatten, ox_tr_transpose, ox_tr_concat, ox_tr_split,
	ox_tr_slice, ox_tr_gather, ox_tr_unsqueeze, ox_tr_squeeze, ox_tr_expand, ox_tr_cast,
	ox_tr_cast_like, ox_tr_pad, ox_tr_trilu;
/* The ops of current exports beyond the basic set: onnx_ops_elem.c,
 * onnx_ops_index.c, onnx_ops_einsum.c, onnx_ops_conv_transpose.c,
 * onnx_ops_resize.c. */
ox_tr ox_tr_simple_unary, ox_tr_alpha_unary, ox_tr_isinf, ox_tr_mod, ox_tr_prelu, ox_tr_xor,
	ox_tr_gather_elements, ox_tr_scatter, ox_tr_cumsum, ox_tr_arg, ox_tr_group_norm,
	ox_tr_reduce_more, ox_tr_tile, ox_tr_einsum, ox_tr_conv_transpose, ox_tr_resize, ox_tr_topk,
	ox_tr_sum_mean, ox_tr_sign, ox_tr_more_act, ox_tr_gather_nd, ox_tr_nonzero, ox_tr_one_hot;
/* Recurrences, sampling and 3-d convolution written with the IR's ops:
 * onnx_ops_rnn.c (LSTM, GRU, RNN: the time loop unrolled), onnx_ops_grid.c
 * (GridSample), onnx_ops_conv3d.c (Conv and ConvTranspose of rank-5 inputs,
 * from tr_conv and ox_tr_conv_transpose). */
ox_tr ox_tr_lstm, ox_tr_gru, ox_tr_rnn, ox_tr_grid_sample, ox_tr_conv3d;
/* Range whose limit is symbolic dim sym (start 0, delta 1): an iota. */
int ox_tr_range_sym(ox_ctx *c, const onnx_node *nd, int64_t sym);
/* A dim of a shape value: OX_SYMV(k) becomes IR_SYM(k). */
int64_t ox_dim_of(int64_t v);

/* ---- onnx.c ---- */

/* "NAME: node 'n' (Op): message", SN_EINPUT. */
int ox_fail(ox_ctx *c, const onnx_node *nd, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Input i: its work node; IR_NONE when absent (no error) or on error (c->e set). */
ir_ref ox_in(ox_ctx *c, const onnx_node *nd, size_t i);
bool ox_has(const onnx_node *nd, size_t i);
/* Input i, which must be present. */
ir_ref ox_need(ox_ctx *c, const onnx_node *nd, size_t i);
const ir_node *ox_node(const ox_ctx *c, ir_ref r);
/* r's value if known at import time, else NULL. */
const ir_tensor *ox_known(const ox_ctx *c, ir_ref r);
/* Adds an op to the work graph (folding it when its operands are known);
 * an error names nd. */
ir_ref ox_emit(ox_ctx *c, const onnx_node *nd, ir_op op, const ir_ref *in, uint32_t nin,
	       const ir_attrs *a);
/* The same, never folded: the node stays a computation (a value that is
 * cheap to compute and would be large to store, such as an all-true mask). */
ir_ref ox_emit_live(ox_ctx *c, const onnx_node *nd, ir_op op, const ir_ref *in, uint32_t nin,
		    const ir_attrs *a);
/* A known value; takes t.data (malloc'ed) in every case. */
ir_ref ox_value(ox_ctx *c, ir_tensor t);
ir_ref ox_scalar(ox_ctx *c, ir_dtype t, double v);
/* An iota node (never folded: it stays a computation). */
ir_ref ox_iota(ox_ctx *c, const onnx_node *nd, ir_dtype t, const ir_shape *s, int64_t axis);
/* Input i as a list of ints (known 0-d or 1-d integer tensor; at most
 * IR_MAX_LIST entries). Symbolic elements stay OX_SYMV(k) when syms, else
 * they are an error naming `what`. */
int ox_ints(ox_ctx *c, const onnx_node *nd, size_t i, const char *what, bool syms, ir_ints *out);
/* Input i as one number (known, one element). */
int ox_num(ox_ctx *c, const onnx_node *nd, size_t i, const char *what, double *out);
/* Binds output k of nd (if named) to r. */
int ox_out(ox_ctx *c, const onnx_node *nd, size_t k, ir_ref r);
/* Converts a TensorProto (attribute or Constant) to a host tensor. */
int ox_tensor(ox_ctx *c, const onnx_tensor *tp, const char *what, ir_tensor *out);
/* The IR dtype of ONNX data type t: 0, or -1 when sinter has none. */
int ox_map_dtype(int64_t t, ir_dtype *out);
int ox_dtype(ox_ctx *c, const onnx_node *nd, int64_t onnx_type, ir_dtype *out);
const char *ox_onnx_type_name(int64_t t);

/* Attributes. */
const onnx_attr *ox_attr(const onnx_node *nd, const char *name);
int64_t ox_ai(const onnx_node *nd, const char *name, int64_t def);
double ox_af(const onnx_node *nd, const char *name, double def);
/* The string attribute equals s (def when absent). */
bool ox_as_is(const onnx_node *nd, const char *name, const char *def, const char *s);
/* INTS attribute into out; 0 if absent, 1 if read, -1 on error (too long). */
int ox_aints(ox_ctx *c, const onnx_node *nd, const char *name, ir_ints *out);
/* A Reduce* node's keepdims and axes (input 1 from opset 18, else the
 * attribute) into a; *noop when it has none and noop_with_empty_axes (the
 * node is its input). Nonzero with c->e set on a bad axes list. */
int ox_reduce_axes(ox_ctx *c, const onnx_node *nd, ir_attrs *a, bool *noop);

#endif
