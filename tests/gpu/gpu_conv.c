/* gpu_conv.c: the conv GPU tests' shared cases (gpu_conv.h). */
#include "gpu_conv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ir_ref gpu_conv_graph(ir_graph *g, const gpu_conv_spec *c, ir_dtype t, ir_layout lay, bool fuse)
{
	bool nhwc = lay == IR_NHWC;
	int64_t cg = c->c / c->groups;
	ir_shape xs = nhwc ? (ir_shape){4, {c->n, c->h, c->w, c->c}} : (ir_shape){4, {c->n, c->c, c->h, c->w}};
	ir_shape ws = nhwc ? (ir_shape){4, {c->o, c->kh, c->kw, cg}} : (ir_shape){4, {c->o, cg, c->kh, c->kw}};
	ir_shape bs = {1, {c->o}};
	ir_ref ins[3] = {ir_add_input(g, "x", t, &xs, &gpu_err), ir_add_input(g, "w", t, &ws, &gpu_err),
			 ir_add_input(g, "b", t, &bs, &gpu_err)};
	ir_attrs a;
	ir_attrs_init(IR_OP_conv2d, &a);
	a.layout = lay;
	a.stride = (ir_ints){2, {c->sh, c->sw}};
	a.pad = (ir_ints){4, {c->pad[0], c->pad[1], c->pad[2], c->pad[3]}};
	a.dilation = (ir_ints){2, {c->dil, c->dil}};
	a.groups = c->groups;
	ir_ref r = ir_add(g, IR_OP_conv2d, ins, c->bias ? 3 : 2, &a, &gpu_err);
	if (fuse && r != IR_NONE) {
		ir_ref res = ir_add_input(g, "res", t, &g->nodes[r].shape, &gpu_err);
		ir_ref s = ir_add(g, IR_OP_add, (ir_ref[]){r, res}, 2, NULL, &gpu_err);
		r = s == IR_NONE ? IR_NONE : ir_add(g, IR_OP_relu, &s, 1, NULL, &gpu_err);
	}
	return gpu_err.code ? IR_NONE : r;
}

int gpu_conv_render(const ir_graph *g, const cg_target *tg, const cg_config *want, bool fuse, cg_step *st,
		    sn_err *e)
{
	ir_ref conv = IR_NONE, relu = IR_NONE, res = IR_NONE;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		if (n->op == IR_OP_conv2d)
			conv = i;
		else if (n->op == IR_OP_add)
			res = n->in[1];
		else if (n->op == IR_OP_relu)
			relu = i;
	}
	if (conv == IR_NONE || (fuse && (relu == IR_NONE || res == IR_NONE)))
		return sn_errf(e, SN_EINTERNAL, "test: no conv (and add, relu) in the graph");
	ir_dtype t = g->nodes[conv].dtype;
	sn_buf fn = {0};
	cg_epilogue epi = {0};
	*st = (cg_step){.node = conv};
	char params[128];
	if (fuse) {
		cg_emit_dtype_helpers(&fn, t);
		sn_buf_printf(&fn, "__device__ __forceinline__ float sn_epi(float v, long i, const %s *__restrict__ e0)\n"
				   "{\n\treturn fmaxf(v + ld_%s(e0, i), 0.0f);\n}\n",
			      cg_ctype(t), ir_dtype_name(t));
		snprintf(params, sizeof params, ", const %s *__restrict__ e0", cg_ctype(t));
		epi = (cg_epilogue){.fn = fn.s, .params = params, .args = ", e0", .nex = 1, .out = relu, .dtype = t};
		epi.ex[0] = res;
		st->epi = &epi;
	}
	int rc = cg_render_conv(g, conv, tg, want, st, e);
	st->epi = NULL;
	sn_buf_free(&fn);
	return rc;
}

int gpu_conv_patch(cg_plan *p, cg_step *st, bool fuse, sn_err *e)
{
	if (p->nsteps < 1 || p->steps[0].kind != CG_LAUNCH) {
		free(st->k.src);
		return sn_errf(e, SN_EINTERNAL, "test: the plan's first step is not the conv");
	}
	cg_pstep *ps = &p->steps[0];
	cg_kern *k = &p->kerns[ps->kern];
	free(k->src);
	k->src = st->k.src;
	memcpy(k->name, st->k.name, sizeof k->name);
	k->cfg = st->k.cfg;
	memcpy(ps->grid, st->k.grid, sizeof ps->grid);
	memcpy(ps->block, st->k.block, sizeof ps->block);
	ps->smem = st->k.smem;
	ps->nargs = st->k.nbufs;
	for (uint32_t a = 0; a < st->k.nbufs; a++)
		ps->args[a] = st->k.bufs[a]; /* buffer i is node i's */
	if (fuse)
		p->nsteps = 1; /* the add and the relu are in the conv's store */
	return SN_OK;
}
