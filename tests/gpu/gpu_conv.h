/* gpu_conv.h: the conv GPU tests' shared cases (test_cuda_conv.c,
 * test_cuda_conv_tc.c, test_cuda_conv_wg.c): a conv2d graph from a spec,
 * optionally followed by add(conv, residual) and relu; the conv rendered
 * again with a config and, when fused, the hand-written epilogue
 * relu(v + e0[i]) storing into the relu's buffer; and that step put in
 * place of a plan's first. Builder errors land in gpu_err (gpu_check.h). */
#ifndef SINTER_GPU_CONV_H
#define SINTER_GPU_CONV_H

#include "gpu_check.h"

#include "codegen/cg_render.h"

typedef struct gpu_conv_spec {
	int64_t n, c, h, w, o, kh, kw, sh, sw, pad[4], dil, groups;
	bool bias;
} gpu_conv_spec;

#define GPU_P4(p) {p, p, p, p}

/* conv2d(x, w[, b]) of c in dtype t and layout lay (inputs x, w, b), then
 * relu(conv + res) when fuse (input res); returns the last node, or
 * IR_NONE when the builder refused (gpu_err says why). */
ir_ref gpu_conv_graph(ir_graph *g, const gpu_conv_spec *c, ir_dtype t, ir_layout lay, bool fuse);

/* Renders g's conv for tg with want (NULL: the default); when fuse, with
 * the epilogue relu(v + e0[i]) (e0 the residual) into the relu's buffer.
 * st->k.src is malloc'ed. */
int gpu_conv_render(const ir_graph *g, const cg_target *tg, const cg_config *want, bool fuse, cg_step *st,
		    sn_err *e);

/* Puts st's kernel in place of plan p's first step (buffer i is node i's,
 * as gpu_plain_plan makes them); when fused, the steps after it (the add
 * and the relu, now in its store) are dropped. Takes st->k.src. */
int gpu_conv_patch(cg_plan *p, cg_step *st, bool fuse, sn_err *e);

#endif
