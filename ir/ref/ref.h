/* ref.h: the reference interpreter. Every op in plain C loops on the CPU,
 * one op at a time: elementwise ops compute in double and round once at the
 * store (ir_store: correct rounding for f16, bf16 and the fp8s); integer
 * arithmetic is exact in int64; reductions, norms, contractions, conv and
 * attention accumulate in double. It is the oracle every backend is tested
 * against, so it favours plain, checkable code over speed (but keeps inner
 * loops contiguous: batch-1 ResNet-50 runs in seconds). Prefix: ref_. */
#ifndef SINTER_REF_H
#define SINTER_REF_H

#include "ir/ir.h"

/* Runs g on the CPU, one op at a time. vals has g->nnodes entries: the
 * caller fills those of input and param nodes (dtype and shape equal to the
 * node's; data borrowed, never written; nbytes may be 0 for "not given",
 * else it must be the tensor's size); the others are ignored. On success
 * outs[0 .. g->noutputs) receive malloc'ed tensors that the caller owns
 * (free(outs[i].data)); on failure outs holds nothing to free. The graph
 * must have no symbolic dims (SN_EINPUT otherwise). Intermediates are freed
 * after their last reader. */
int ref_run(const ir_graph *g, const ir_tensor *vals, ir_tensor *outs, sn_err *e);

/* Evaluates one node of g given its operands' tensors ops[0 .. n->nin),
 * which must have the operands' dtypes and shapes. *out receives a
 * malloc'ed tensor of n's type (free(out->data)). Sources: const copies its
 * data, iota computes; input and param cannot be evaluated (SN_EINPUT).
 * Used by ref_run and by constant folding. */
int ref_eval_node(const ir_graph *g, const ir_node *n, const ir_tensor *ops, ir_tensor *out, sn_err *e);

/* scatter_elements or scatter_nd node n applied in place: the updates are
 * written into ops[0].data (the data operand's own storage), nothing else
 * is copied; every index is checked before any is written. How the cpu
 * device writes a state at a position (docs/DESIGN.md, State).
 * SN_EINPUT for another op or a bad index. */
int ref_scatter_in_place(const ir_node *n, const ir_tensor *ops, sn_err *e);

#endif
