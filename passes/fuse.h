/* fuse.h: the fusion partition. Groups the nodes of a graph into fusion
 * groups, each of which becomes one step of the plan (one kernel or one
 * cuBLASLt product); the values that cross groups are the only ones that
 * get memory (DESIGN.md, Fusion). Prefix: fu_.
 *
 * Kinds of nodes:
 *   pointwise   UNARY, BINARY and TERNARY ops (cast, clamp and where too)
 *   index-only  transpose, reshape, flatten, squeeze, unsqueeze, expand,
 *               slice, split: where an element comes from, no arithmetic
 *   free        computable from indices alone: iota, scalar consts, and
 *               pointwise or index-only nodes over free operands only (the
 *               causal mask); never stored when every consumer can inline
 *               it, recomputed in each instead
 *   cores       contractions, convolutions, reductions and norms
 * Rules (greedy, from the graph's outputs back):
 *   - a pointwise or index-only producer joins its consumers' group when
 *     all its consumers are in that group and it is not a graph output (so
 *     nothing is computed twice but free nodes);
 *   - a group is capped in size and in the buffers its kernel reads;
 *   - a norm or softmax core (when the renderer takes a prologue) pulls in
 *     its operand 0's pointwise producers: scale + mask + softmax is one
 *     kernel;
 *   - a convolution (when the renderer takes an epilogue) is absorbed by a
 *     group of same-shaped elementwise consumers: conv + residual add +
 *     relu is one kernel;
 *   - a matrix product that cuBLASLt runs absorbs the epilogue it can
 *     express: [act]([+ residual]([+ bias[n]](matmul))), act relu or tanh
 *     gelu, in either order of the two adds; so does a 1x1 conv that
 *     cuBLASLt runs (FU_CAN_BLAS_EPI), its own bias counting as the bias;
 *     where two products meet in one add, the first takes it;
 *   - a product that takes a generic epilogue (the GEMM template) is
 *     absorbed as a convolution is, when its chain of consumers goes on
 *     past what cuBLASLt expresses (an erf GELU, a scale, a cast);
 *   - reshape and friends left outside groups are views of their operand;
 *   - row groups (when the renderer takes them, FU_CAN_ROWS): reductions
 *     over the same trailing axes of the same shape S (R rows of L) with
 *     the pointwise and reshape-like nodes of their iteration space,
 *     decided by element count as Inductor's scheduler does: a node of
 *     R*L elements (S's shape, or a reshape of it) runs inside the row
 *     loop (a prologue such as pow, x - max, exp, a cast; or an epilogue
 *     that reads per-row values broadcast, such as the final muls of a
 *     norm or the / sum of a softmax), a node of R elements
 *     whose dims line up with S's row dims runs once per row (+ eps,
 *     rsqrt). Grown from the first such reduction to a fixed point:
 *     producers whose consumers are all in the group, consumers whose
 *     other operands are computed before it; kept when exactly one member
 *     is read outside (the root) and the kernel reads at most 6 buffers.
 * Groups come out in an order that runs (by their root's node index). */
#ifndef SINTER_FUSE_H
#define SINTER_FUSE_H

#include "ir/ir.h"

typedef enum fu_kind {
	FU_NODE,      /* one node, its own renderer */
	FU_VIEW,      /* a reshape-like node over a stored value: no step */
	FU_POINTWISE, /* pointwise and index-only nodes: one generated kernel */
	FU_REDUCE,    /* a norm/softmax core with a pointwise prologue on operand 0 */
	FU_CONV,      /* a convolution or a template product with a pointwise epilogue */
	FU_GEMM,      /* a cuBLASLt product with bias / residual / activation */
	FU_ATTENTION, /* attention reading q, k, v and writing its output through
		       * layouts: index-only chains around it cost nothing */
	FU_ROWS,      /* row reductions with their prologues, per-row values and
		       * epilogue: one generated kernel (core: the first reduction) */
} fu_kind;

typedef enum fu_act { FU_ACT_NONE, FU_ACT_RELU, FU_ACT_GELU } fu_act;

typedef struct fu_group {
	fu_kind kind;
	ir_ref root;       /* the value the group's step stores */
	ir_ref core;       /* the core node (IR_NONE for pointwise and views) */
	uint32_t first, n; /* members: fu_plan.members[first .. first + n), ascending */
	/* FU_GEMM: the epilogue, in cuBLASLt's terms */
	ir_ref bias, residual; /* IR_NONE when absent */
	fu_act act;
} fu_group;

/* What the renderers can take (codegen answers; passes do not include it). */
enum {
	FU_CAN_PROLOGUE = 1,   /* core: a prologue on operand 0 (norms, softmax) */
	FU_CAN_EPILOGUE = 2,   /* core: a generic pointwise epilogue (conv) */
	FU_CAN_BLAS_EPI = 4,   /* core: a cuBLASLt product (bias, residual, act) */
	FU_CAN_LAYOUT = 8,     /* core: strided operands and output (attention) */
	FU_CAN_ROWS = 16,      /* reduction: may join a row group (FU_ROWS) */
};
typedef unsigned fu_caps_fn(const ir_graph *g, ir_ref r, void *ctx);

typedef struct fu_opts {
	fu_caps_fn *caps; /* NULL: no core takes anything */
	void *ctx;
	uint32_t max_nodes; /* per group; 0: 64 */
	uint32_t max_loads; /* distinct stored values a pointwise kernel reads; 0: 6 */
	const uint8_t *nofuse; /* per node, or NULL: nodes that stay a group of their own */
} fu_opts;

typedef struct fu_plan {
	fu_group *groups;
	uint32_t ngroups;
	ir_ref *members;
	uint32_t nmembers;
	uint32_t *group_of; /* per node: its group, FU_NO_GROUP for sources and free nodes */
	uint8_t *stored;    /* per node: has a buffer (sources, roots, views) */
	uint8_t *free_;     /* per node: computable from indices alone */
} fu_plan;
#define FU_NO_GROUP UINT32_MAX

/* Partitions g (verified, concrete shapes). disable: every node its own
 * group (FU_NODE / FU_VIEW), as before fusion. Free with fu_plan_free. */
int fu_partition(const ir_graph *g, const fu_opts *o, bool disable, fu_plan *out, sn_err *e);
void fu_plan_free(fu_plan *p);

/* A row group's (FU_ROWS) members, in their order: red_of[k], member k's
 * index among the group's reductions (-1 when it is none); need[k], a bit
 * per reduction that member k reads, directly or through other members.
 * Returns the count of reductions. need and red_of hold the group's
 * members (at most 64, the partition's cap). */
uint32_t fu_rows_needs(const ir_graph *g, const fu_plan *p, const fu_group *gr, uint64_t *need, int *red_of);

/* One line per group that has a step: "group 3 pointwise root %x: %a %b %x";
 * appended to b (sinter print --groups, golden tests). */
void fu_plan_print(const ir_graph *g, const fu_plan *p, sn_buf *b);

/* A value's place inside a stored buffer: element offset and a stride
 * per dim of the value's shape (0: broadcast). */
typedef struct fu_layout {
	int rank;
	int64_t shape[IR_MAX_RANK];
	int64_t offset;
	int64_t strides[IR_MAX_RANK];
} fu_layout;
/* The layout of a stored value: contiguous, offset 0. */
void fu_layout_whole(const ir_node *n, fu_layout *l);
/* l becomes the layout of index-only node n's result, l having been its
 * operand's (transpose, split, slice, expand, and reshape-likes where the
 * strides allow). false when n cannot be a layout. */
bool fu_layout_apply(const ir_node *n, fu_layout *l);
/* The inverse, for an output chain: l, the layout of n's result, becomes
 * its operand's (transpose and reshape-likes). */
bool fu_layout_unapply(const ir_graph *g, const ir_node *n, fu_layout *l);
/* The layout of value v read through the chain of index-only group
 * members above it, up to the stored value *top (gid's members). */
bool fu_layout_of(const ir_graph *g, const fu_plan *p, uint32_t gid, ir_ref v, ir_ref *top, fu_layout *l);
/* The layout, in group gid's root buffer, of its core's output. */
bool fu_layout_out(const ir_graph *g, const fu_plan *p, uint32_t gid, fu_layout *l);

/* Whether n is pointwise or index-only (may be fused into a kernel). */
bool fu_fusible(const ir_node *n);
/* Whether n is a view of operand 0 when stored (reshape and friends). */
bool fu_is_view(const ir_node *n);

#endif
