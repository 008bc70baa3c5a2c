/* cg_render.h: the renderers cg_lower dispatches to, one per op family.
 * Each fills *st for node id r of g (st->node is already r): a kernel
 * (st->kind = CG_STEP_KERNEL, st->k), a cuBLASLt product (CG_STEP_GEMM,
 * st->g) or an alias. Inputs are guaranteed verified and fully shaped. */
#ifndef SINTER_CG_RENDER_H
#define SINTER_CG_RENDER_H

#include "codegen/cg.h"

typedef int cg_render_fn(const ir_graph *g, ir_ref r, const cg_target *t, cg_step *st, sn_err *e);

/* codegen/cg_elem.c: unary, binary, ternary ops, cast, clamp, with numpy
 * broadcasting; 16-byte vectorized when shapes allow */
cg_render_fn cg_render_elementwise;
/* codegen/cg_move.c: transpose, expand, concat, split, slice, gather, pad,
 * iota, and copies; reshape/flatten/squeeze/unsqueeze are aliases */
cg_render_fn cg_render_move;
/* codegen/cg_reduce.c: reduce_sum/mean/max/min */
cg_render_fn cg_render_reduce;
/* codegen/cg_norm.c: softmax, log_softmax, layer_norm, rms_norm, batch_norm */
cg_render_fn cg_render_norm;
/* codegen/cg_pool.c: max_pool2d, avg_pool2d, global_avg_pool */
cg_render_fn cg_render_pool;
/* codegen/cg_conv.c: conv2d (implicit GEMM; tensor cores for f16/bf16) */
cg_render_fn cg_render_conv;
/* codegen/cg_gemm.c: matmul and linear as cuBLASLt steps (a kernel where
 * cuBLASLt cannot express the broadcast) */
cg_render_fn cg_render_gemm;
/* codegen/cg_attn.c: scaled_dot_product_attention */
cg_render_fn cg_render_attention;

#endif
