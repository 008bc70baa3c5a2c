/* cg_attn.h: inside codegen, shared by the two attention renderers
 * (cg_attn.c: the SIMT fp32 kernel that covers everything; cg_flash.c: the
 * tensor-core flash kernel for f16/bf16, head dims 32 to 256 in steps of
 * 16 but 240, sm_80+;
 * cg_flash_wg.c: its wgmma variant for sm_90).
 * Both address their operands through one description, so batch
 * broadcasting, GQA and fusion's layouts (cg_render.h, cg_layout) are
 * worked out once. */
#ifndef SINTER_CG_ATTN_H
#define SINTER_CG_ATTN_H

#include "codegen/cg_render.h"

/* Where one operand (or the output) lives: element (b..., r, c) of it, b
 * the output's batch coordinates, is at
 *   off + sum_d (b_d / div[d]) * st[d] + r * st[br] + c * st[br + 1]
 * in buf's buffer (st 0: broadcast; div > 1: GQA's shared heads). */
typedef struct cg_attn_addr {
	ir_ref buf;
	int64_t off;
	int64_t st[IR_MAX_RANK + 2];
	int64_t div[IR_MAX_RANK + 2];
} cg_attn_addr;

typedef struct cg_attn_spec {
	int br;                  /* output batch dims */
	int64_t bd[IR_MAX_RANK]; /* their sizes */
	int64_t nb;              /* their product */
	int64_t L, S, E, Ev;
	bool causal, has_mask, laid; /* laid: some operand has a fusion layout */
	ir_dtype t, mt;          /* q/k/v/out dtype; the mask's */
	double scale;
	cg_attn_addr q, k, v, m, o;
} cg_attn_spec;

/* Fills *sp for node r with the layouts of st (lay[0..3], lay_out). */
int cg_attn_spec_of(const ir_graph *g, ir_ref r, const cg_step *st, cg_attn_spec *sp, sn_err *e);
/* Appends `struct offs { long q, k, v, m, o; }` and
 * `offs batch_offs(long z)`: the element offsets of batch index z (row-major
 * over the output's batch dims) in each operand's buffer. */
void cg_attn_emit_offs(sn_buf *b, const cg_attn_spec *sp);
/* The flash kernels' shared text: ld_mask for a float mask (nothing for a
 * bool one or none), and the row strides of q, k, v, the output and the
 * mask (Q_RS ... M_CS) followed by the batch offsets (cg_attn_emit_offs). */
void cg_attn_emit_mask_load(sn_buf *b, const cg_attn_spec *sp);
void cg_attn_emit_rows(sn_buf *b, const cg_attn_spec *sp);
/* Whether the output's elements can be stored two at a time (O_PAIR):
 * contiguous rows, an even offset and even batch strides. */
bool cg_attn_out_pairs(const cg_attn_spec *sp);
/* The scale as a CUDA float literal ("0.125f"), into out[40]. */
void cg_attn_float(char *out, double x);
/* Pushes q, k, v (mask) buffers then the output's onto k->bufs. */
void cg_attn_bufs(cg_kernel *k, const cg_attn_spec *sp);

/* cg_flash.c: whether the flash kernel covers *sp on t (why not, into
 * why[cap], when it does not), and its renderer. want: NULL or a config
 * with variant 0 or 1. */
bool cg_flash_fits(const cg_attn_spec *sp, const cg_target *t, char *why, size_t cap);
int cg_render_flash(const ir_graph *g, ir_ref r, const cg_target *t, const cg_attn_spec *sp, const cg_config *want,
		    cg_step *st, sn_err *e);
/* cg_flash_wg.c: the wgmma flash kernel (sm_90 only, compiled for sm_90a):
 * whether it covers *sp on t, and its renderer (want: NULL or variant 0/3). */
bool cg_flash_wg_fits(const cg_attn_spec *sp, const cg_target *t, char *why, size_t cap);
int cg_render_flash_wg(const ir_graph *g, ir_ref r, const cg_target *t, const cg_attn_spec *sp,
		       const cg_config *want, cg_step *st, sn_err *e);

#endif
