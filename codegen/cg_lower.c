/* cg_lower.c: graph to plan. First one step per non-source node, in graph
 * order, from the renderer of the node's op family (cg_render.h); then the
 * plan: a buffer per value that owns storage (views share their root's),
 * the arena planned over the buffers' lifetimes, unique kernels, and the
 * weight image. */
#include "codegen/cg_render.h"
#include "passes/fuse.h"
#include "passes/memplan.h"

#include <inttypes.h>
#include <sys/mman.h>
#include <xxhash.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The renderer of each op kind; iota, a source with a computed value, is
 * rendered by cg_render_move. A NULL entry means the kind has no step. */
static cg_render_fn *const by_kind[] = {
	[IR_K_SOURCE] = NULL,
	[IR_K_UNARY] = cg_render_elementwise,
	[IR_K_BINARY] = cg_render_elementwise,
	[IR_K_TERNARY] = cg_render_elementwise,
	[IR_K_REDUCE] = cg_render_reduce,
	[IR_K_NORM] = cg_render_norm,
	[IR_K_CONTRACT] = cg_render_gemm,
	[IR_K_CONV] = cg_render_conv,
	[IR_K_ATTENTION] = cg_render_attention,
	[IR_K_POOL] = cg_render_pool,
	[IR_K_MOVE] = cg_render_move,
};

static cg_render_fn *renderer_of(ir_op op)
{
	if (op == IR_OP_iota)
		return cg_render_move;
	ir_kind k = ir_ops[op].kind;
	return (unsigned)k < SN_COUNT(by_kind) ? by_kind[k] : NULL;
}

unsigned cg_caps(const ir_graph *g, ir_ref r, const cg_target *t)
{
	const ir_node *n = &g->nodes[r];
	switch (ir_ops[n->op].kind) {
	/* one line per family as it learns layouts or epilogues */
	case IR_K_NORM: return cg_norm_caps(g, r);
	case IR_K_CONV: return ir_dtype_is_float(g->nodes[r].dtype) ? CG_CAN_EPILOGUE : 0;
	case IR_K_ATTENTION: return CG_CAN_LAYOUT_IN | CG_CAN_LAYOUT_OUT; /* both kernels (cg_attn.h) */
	case IR_K_CONTRACT: return t && cg_gemm_takes_epilogue(g, r, t) ? CG_CAN_EPILOGUE : 0; /* the GEMM template */
	default: return 0;
	}
}

/* What fusion may ask of node r's renderer (passes/fuse.h). */
static unsigned fuse_caps(const ir_graph *g, ir_ref r, void *ctx)
{
	const cg_target *t = ctx;
	unsigned c = cg_caps(g, r, t), f = 0;
	if (c & CG_CAN_PROLOGUE)
		f |= FU_CAN_PROLOGUE;
	if (c & CG_CAN_EPILOGUE)
		f |= FU_CAN_EPILOGUE;
	if ((c & CG_CAN_LAYOUT_IN) && (c & CG_CAN_LAYOUT_OUT))
		f |= FU_CAN_LAYOUT;
	const ir_node *n = &g->nodes[r];
	if (n->op == IR_OP_matmul || n->op == IR_OP_linear) {
		/* a product cuBLASLt runs takes its epilogues */
		cg_step st;
		memset(&st, 0, sizeof st);
		st.node = r;
		sn_err e = {0};
		if (cg_render_gemm(g, r, t, NULL, &st, &e) == SN_OK && st.kind == CG_STEP_GEMM &&
		    (st.g.dtype == IR_F32 || st.g.dtype == IR_F16 || st.g.dtype == IR_BF16))
			f |= FU_CAN_BLAS_EPI;
		free(st.k.src);
	}
	if (n->op == IR_OP_conv2d && cg_conv_is_gemm(g, r, t))
		f |= FU_CAN_BLAS_EPI; /* a 1x1 conv is a cuBLASLt product */
	if (ir_ops[n->op].kind == IR_K_REDUCE && cg_rows_takes(g, r))
		f |= FU_CAN_ROWS;
	return f;
}

bool cg_is_alias(const ir_graph *g, const ir_node *n)
{
	(void)g;
	switch (n->op) {
	case IR_OP_reshape:
	case IR_OP_flatten:
	case IR_OP_squeeze:
	case IR_OP_unsqueeze: return n->nin == 1;
	default: return false;
	}
}

/* "node 12 (%c1, conv2d)" */
static void node_label(const ir_graph *g, ir_ref r, char *out, size_t cap)
{
	const ir_node *n = &g->nodes[r];
	if (n->name)
		snprintf(out, cap, "node %u (%%%s, %s)", r, n->name, ir_ops[n->op].name);
	else
		snprintf(out, cap, "node %u (%s)", r, ir_ops[n->op].name);
}

void cg_step_free_kernels(cg_step *st)
{
	free(st->k.src);
	st->k.src = NULL;
	for (uint32_t i = 0; i < st->nmore; i++)
		free(st->more[i].src);
	free(st->more);
	st->more = NULL;
	st->nmore = 0;
}

/* Whether step st, a kernel, has every kernel complete. */
static bool kernels_ok(const cg_step *st)
{
	for (uint32_t i = 0; i <= st->nmore; i++) {
		const cg_kernel *k = i ? &st->more[i - 1] : &st->k;
		if (!k->src || !k->name[0] || k->nbufs > CG_MAX_BUFS)
			return false;
	}
	return true;
}

void cg_rplan_free(cg_rplan *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->nsteps; i++)
		cg_step_free_kernels(&p->steps[i]);
	for (uint32_t i = 0; p->xs && i < 2 * p->nsteps; i++)
		cg_epilogue_free(&p->xs[i]);
	free(p->xs);
	free(p->steps);
	free(p);
}

int cg_render_graph(const ir_graph *g, const cg_target *t, cg_rplan **out, sn_err *e)
{
	*out = NULL;
	cg_rplan *p = calloc(1, sizeof *p);
	if (!p || !(p->steps = calloc(g->nnodes ? g->nnodes : 1, sizeof *p->steps))) {
		free(p);
		return sn_errf(e, SN_EINTERNAL, "codegen: out of memory");
	}
	char label[256];
	for (ir_ref r = 0; r < g->nnodes; r++) {
		const ir_node *n = &g->nodes[r];
		if (n->op == IR_OP_input || n->op == IR_OP_param || n->op == IR_OP_const)
			continue;
		node_label(g, r, label, sizeof label);
		if (!ir_shape_concrete(&n->shape)) {
			cg_rplan_free(p);
			return sn_errf(e, SN_EINPUT, "%s: shape has unbound symbols (bind them first)", label);
		}
		cg_render_fn *fn = renderer_of(n->op);
		if (!fn) {
			cg_rplan_free(p);
			return sn_errf(e, SN_EINPUT, "%s: not supported by the CUDA backend", label);
		}
		cg_step *st = &p->steps[p->nsteps];
		memset(st, 0, sizeof *st);
		st->node = r;
		sn_err sub = {0};
		int rc = fn(g, r, t, NULL, st, &sub);
		p->nsteps++; /* counted even on failure, so its source is freed */
		if (rc != SN_OK) {
			cg_rplan_free(p);
			return sn_errf(e, rc ? rc : SN_EINTERNAL, "%s: %s", label, sub.msg);
		}
		if (st->kind == CG_STEP_KERNEL && !kernels_ok(st)) {
			cg_rplan_free(p);
			return sn_errf(e, SN_EINTERNAL, "%s: renderer returned an incomplete kernel", label);
		}
	}
	*out = p;
	return SN_OK;
}

/* Renders one node's step through its op's renderer (st->node set). */
static int render_node(const ir_graph *g, ir_ref r, const cg_target *t, cg_step *st, sn_err *e)
{
	const ir_node *n = &g->nodes[r];
	char label[256];
	node_label(g, r, label, sizeof label);
	if (!ir_shape_concrete(&n->shape))
		return sn_errf(e, SN_EINPUT, "%s: shape has unbound symbols (bind them first)", label);
	cg_render_fn *fn = renderer_of(n->op);
	if (!fn)
		return sn_errf(e, SN_EINPUT, "%s: not supported by the CUDA backend", label);
	sn_err sub = {0};
	int rc = fn(g, r, t, NULL, st, &sub);
	if (rc != SN_OK)
		return sn_errf(e, rc ? rc : SN_EINTERNAL, "%s: %s", label, sub.msg);
	return SN_OK;
}

/* The autotuner's hook (cg_target.pick): group gi's kernel rendered again
 * with the config pick asks for; a config outside the renderer's space
 * leaves the default. */
static void pick_config(const ir_graph *g, const cg_target *t, const fu_plan *fp, uint32_t gi, cg_step *st)
{
	uint8_t spec[16];
	cg_config want;
	if (st->nmore)
		return; /* a node of several kernels (a concat's parts): one config, the default */
	cg_spec_key(st->k.src, spec);
	if (!t->pick(t->pick_ctx, spec, &st->k.cfg, &want))
		return;
	cg_step alt = *st; /* node, layouts, prologue and epilogue as they were */
	memset(&alt.k, 0, sizeof alt.k);
	sn_err sub = {0};
	cg_render_fn *fn = renderer_of(g->nodes[alt.node].op);
	int rc = fp->groups[gi].kind == FU_POINTWISE && cg_group_needs_emitter(g, fp, gi)
			 ? cg_render_pointwise_group(g, fp, gi, t, &want, &alt, &sub)
		 : fp->groups[gi].kind == FU_ROWS ? cg_render_row_group(g, fp, gi, &want, &alt, &sub)
		 : fn ? fn(g, alt.node, t, &want, &alt, &sub)
		      : SN_EUSAGE;
	if (rc || alt.kind != CG_STEP_KERNEL || !alt.k.src || !alt.k.name[0] || alt.k.nbufs > CG_MAX_BUFS) {
		free(alt.k.src);
		return;
	}
	free(st->k.src);
	*st = alt;
}

/* The autotuner's other hook (cg_target.pick_mm): group gi's cuBLASLt
 * product rendered instead as the GEMM template with the config pick_mm
 * asks for, its group's members past the product (bias, residual,
 * activation) as the template's epilogue x; a product the template does
 * not take stays cuBLASLt's. */
static void pick_gemm(const ir_graph *g, const cg_target *t, const fu_plan *fp, uint32_t gi, cg_epilogue *x,
		      cg_step *st)
{
	const cg_gemm *gg = &st->g;
	cg_mm mm = {.a = 0, .b = 0, .out = 0, .bias = gg->bias == IR_NONE ? CG_NO_BUF : 0,
		    .c = gg->c == IR_NONE ? CG_NO_BUF : 0, .batch = gg->batch, .m = gg->m, .n = gg->n, .k = gg->k,
		    .stride_a = gg->stride_a, .stride_b = gg->stride_b, .stride_c = gg->stride_c, .trans_b = gg->trans_b,
		    .dtype = gg->dtype, .act = gg->act, .tf32 = gg->tf32};
	cg_config want;
	if (!t->pick_mm(t->pick_ctx, &mm, &want))
		return;
	const fu_group *gr = &fp->groups[gi];
	sn_err sub = {0};
	cg_step alt;
	memset(&alt, 0, sizeof alt);
	alt.node = st->node;
	if (gr->root != st->node) {
		if (!x->fn && cg_make_epilogue(g, fp, gi, x, &sub) != SN_OK)
			return;
		alt.epi = x;
	}
	if (cg_render_gemm_as_tc(g, st->node, gg, t, &want, &alt, &sub) != SN_OK || alt.kind != CG_STEP_KERNEL ||
	    !alt.k.src || !alt.k.name[0] || alt.k.nbufs > CG_MAX_BUFS) {
		free(alt.k.src);
		return;
	}
	*st = alt;
}

int cg_render_groups(const ir_graph *g, const cg_target *t, const fu_plan *fp, cg_rplan **out, sn_err *e)
{
	*out = NULL;
	cg_rplan *p = calloc(1, sizeof *p);
	uint32_t n = fp->ngroups ? fp->ngroups : 1;
	if (!p || !(p->steps = calloc(n, sizeof *p->steps)) || !(p->xs = calloc(2 * (size_t)n, sizeof *p->xs))) {
		cg_rplan_free(p);
		return sn_errf(e, SN_EINTERNAL, "codegen: out of memory");
	}
	char label[256];
	for (uint32_t gi = 0; gi < fp->ngroups; gi++) {
		const fu_group *gr = &fp->groups[gi];
		cg_step *st = &p->steps[p->nsteps++]; /* counted first, so its source is freed */
		memset(st, 0, sizeof *st);
		st->node = gr->core != IR_NONE ? gr->core : gr->root;
		int rc = SN_OK;
		sn_err sub = {0};
		if (!ir_shape_concrete(&g->nodes[gr->root].shape)) {
			node_label(g, gr->root, label, sizeof label);
			rc = sn_errf(&sub, SN_EINPUT, "%s: shape has unbound symbols (bind them first)", label);
			cg_rplan_free(p);
			return sn_errf(e, rc, "%s", sub.msg);
		}
		switch (gr->kind) {
		case FU_VIEW: st->kind = CG_STEP_ALIAS; break;
		case FU_NODE: rc = render_node(g, gr->root, t, st, e); break;
		case FU_POINTWISE:
			if (!cg_group_needs_emitter(g, fp, gi)) {
				rc = render_node(g, gr->root, t, st, e);
				break;
			}
			rc = cg_render_pointwise_group(g, fp, gi, t, NULL, st, &sub);
			if (rc) {
				node_label(g, gr->root, label, sizeof label);
				rc = sn_errf(e, rc, "fused group at %s: %s", label, sub.msg);
			}
			break;
		case FU_ROWS:
			rc = cg_render_row_group(g, fp, gi, NULL, st, &sub);
			if (rc) {
				node_label(g, gr->root, label, sizeof label);
				rc = sn_errf(e, rc, "fused group at %s: %s", label, sub.msg);
			}
			break;
		case FU_REDUCE:
		case FU_CONV: {
			cg_epilogue *x = &p->xs[2 * gi + (gr->kind == FU_CONV)];
			rc = gr->kind == FU_CONV ? cg_make_epilogue(g, fp, gi, x, &sub) : cg_make_prologue(g, fp, gi, x, &sub);
			if (rc) {
				node_label(g, gr->root, label, sizeof label);
				rc = sn_errf(e, rc, "fused group at %s: %s", label, sub.msg);
				break;
			}
			if (gr->kind == FU_CONV)
				st->epi = x;
			else
				st->pro = x;
			rc = render_node(g, gr->core, t, st, e);
			break;
		}
		case FU_ATTENTION: {
			/* q, k, v where they are, the output where it goes */
			for (uint32_t k = 0; k < 3; k++) {
				ir_ref top;
				fu_layout l;
				ir_ref v = g->nodes[gr->core].in[k];
				if (fp->group_of[v] != gi)
					continue;
				if (!fu_layout_of(g, fp, gi, v, &top, &l)) {
					rc = sn_errf(e, SN_EINTERNAL, "fusion: attention operand %u has no layout", k);
					break;
				}
				st->lay[k] = (cg_layout){.set = true, .root = top, .offset = l.offset};
				memcpy(st->lay[k].strides, l.strides, sizeof l.strides);
			}
			if (!rc && gr->root != gr->core) {
				fu_layout l;
				if (!fu_layout_out(g, fp, gi, &l)) {
					rc = sn_errf(e, SN_EINTERNAL, "fusion: attention's output has no layout");
					break;
				}
				st->lay_out = (cg_layout){.set = true, .root = gr->root, .offset = l.offset};
				memcpy(st->lay_out.strides, l.strides, sizeof l.strides);
			}
			if (!rc)
				rc = render_node(g, gr->core, t, st, e);
			break;
		}
		case FU_GEMM:
			rc = render_node(g, gr->core, t, st, e);
			if (rc)
				break;
			if (st->kind != CG_STEP_GEMM) {
				rc = sn_errf(e, SN_EINTERNAL, "fusion: the product of group %u is not a cuBLASLt step", gi);
				break;
			}
			if (gr->bias != IR_NONE)
				st->g.bias = gr->bias;
			st->g.c = gr->residual;
			st->g.act = gr->act == FU_ACT_RELU ? CG_ACT_RELU : gr->act == FU_ACT_GELU ? CG_ACT_GELU : CG_ACT_NONE;
			st->g.out = gr->root;
			break;
		}
		if (rc != SN_OK) {
			cg_rplan_free(p);
			return rc;
		}
		if (st->kind == CG_STEP_KERNEL && !kernels_ok(st)) {
			node_label(g, gr->root, label, sizeof label);
			cg_rplan_free(p);
			return sn_errf(e, SN_EINTERNAL, "%s: renderer returned an incomplete kernel", label);
		}
		if (t->pick && st->kind == CG_STEP_KERNEL)
			pick_config(g, t, fp, gi, st);
		else if (t->pick_mm && st->kind == CG_STEP_GEMM && (gr->kind == FU_GEMM || gr->kind == FU_NODE))
			pick_gemm(g, t, fp, gi, &p->xs[2 * gi + 1], st);
	}
	*out = p;
	return SN_OK;
}

/* ---- the plan ---- */

void cg_config_str(const cg_config *c, char *out, size_t cap)
{
	static const char *const names[] = {"variant", "block", "tile_m", "tile_n", "tile_k", "warps",
					     "stages", "vec", "rows", "split_k"};
	const int32_t v[] = {c->variant, c->block, c->tile_m, c->tile_n, c->tile_k,
			     c->warps, c->stages, c->vec, c->rows, c->split_k};
	size_t k = 0;
	out[0] = 0;
	for (size_t i = 0; i < SN_COUNT(names) && k < cap; i++)
		if (v[i])
			k += (size_t)snprintf(out + k, cap - k, "%s%s=%d", k ? " " : "", names[i], (int)v[i]);
	if (!k)
		snprintf(out, cap, "default");
}

static const char *act_name(cg_act a)
{
	return a == CG_ACT_RELU ? "relu" : a == CG_ACT_GELU ? "gelu" : "none";
}

void cg_mm_describe(const cg_mm *g, char *out, size_t cap)
{
	snprintf(out, cap, "matmul %lldx%lldx%lld %s%s batch %lld%s%s%s%s", (long long)g->m, (long long)g->n,
		 (long long)g->k, ir_dtype_name(g->dtype), g->tf32 && g->dtype == IR_F32 ? " (tf32)" : "",
		 (long long)g->batch, g->trans_b ? ", B transposed" : "", g->bias != CG_NO_BUF ? ", bias" : "",
		 g->act != CG_ACT_NONE ? ", " : "", g->act != CG_ACT_NONE ? act_name(g->act) : "");
}

void cg_plan_free(cg_plan *p)
{
	if (!p)
		return;
	/* a plan a reader gave up on may have counts without arrays */
	for (uint32_t i = 0; p->kerns && i < p->nkerns; i++) {
		free(p->kerns[i].src);
		if (!p->map && !p->borrowed)
			free(p->kerns[i].cubin);
	}
	for (uint32_t i = 0; p->inputs && i < p->ninputs; i++)
		free(p->inputs[i].name);
	for (uint32_t i = 0; p->outputs && i < p->noutputs; i++)
		free(p->outputs[i].name);
	if (!p->map && !p->borrowed)
		free(p->weights);
	free(p->bufs);
	free(p->kerns);
	free(p->steps);
	free(p->inputs);
	free(p->outputs);
	if (p->map)
		munmap(p->map, p->map_size);
	free(p);
}

void cg_plan_list(const cg_plan *p, sn_buf *b)
{
	for (uint32_t i = 0; i < p->nsteps; i++) {
		const cg_pstep *s = &p->steps[i];
		if (s->kind == CG_LAUNCH) {
			sn_buf_printf(b, "kernel %s %s grid=%u,%u,%u block=%u,%u,%u smem=%u\n", s->op,
				      p->kerns[s->kern].name, s->grid[0], s->grid[1], s->grid[2], s->block[0],
				      s->block[1], s->block[2], s->smem);
		} else {
			const cg_mm *g = &s->mm;
			sn_buf_printf(b, "gemm %s batch=%lld m=%lld n=%lld k=%lld strides=%lld,%lld,%lld trans_b=%d %s act=%d bias=%d tf32=%d\n",
				      s->op, (long long)g->batch, (long long)g->m, (long long)g->n, (long long)g->k,
				      (long long)g->stride_a, (long long)g->stride_b, (long long)g->stride_c,
				      g->trans_b, ir_dtype_name(g->dtype), (int)g->act, g->bias != CG_NO_BUF, g->tf32);
		}
	}
}

static uint64_t node_bytes(const ir_node *n)
{
	return (uint64_t)ir_numel(&n->shape) * ir_dtype_size(n->dtype);
}

static uint64_t align_up(uint64_t x)
{
	return (x + CG_ALIGN - 1) / CG_ALIGN * CG_ALIGN;
}

/* The spec key: what a kernel computes without how. Renderers open every
 * source with the spec comment (cg_emit_spec), whose last line states the
 * config; the key hashes the renderer version and the text before it. */
#define CG_RENDERER_VERSION 1
void cg_spec_key(const char *src, uint8_t key[16])
{
	const char *end = strstr(src, "\n * config:");
	size_t n = end ? (size_t)(end - src) : strlen(src);
	XXH3_state_t *st = XXH3_createState();
	XXH128_hash_t h = {0, 0};
	if (st) {
		uint32_t v = CG_RENDERER_VERSION;
		XXH3_128bits_reset(st);
		XXH3_128bits_update(st, &v, sizeof v);
		XXH3_128bits_update(st, src, n);
		h = XXH3_128bits_digest(st);
		XXH3_freeState(st);
	}
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, h);
	memcpy(key, c.digest, 16);
}

/* What a step's kernel k (a launch; NULL for a product) must move
 * through memory and compute: every buffer it names once, and the flops
 * of its core. A kernel that writes part of its output (one of several
 * of a concat) counts the part: what it reads, as much again written. */
static void step_cost(const ir_graph *g, const cg_step *st, const cg_kernel *k, double *bytes, double *flops)
{
	const ir_node *n = &g->nodes[st->node];
	ir_ref seen[CG_MAX_BUFS + 4];
	uint32_t ns = 0;
	if (st->kind == CG_STEP_GEMM) {
		const ir_ref ops[] = {st->g.a, st->g.b, st->g.bias, st->g.c, st->g.out};
		for (size_t i = 0; i < SN_COUNT(ops); i++)
			if (ops[i] != IR_NONE)
				seen[ns++] = ops[i];
	} else {
		for (uint32_t i = 0; i < k->nbufs; i++)
			seen[ns++] = k->bufs[i];
	}
	double b = 0;
	for (uint32_t i = 0; i < ns; i++) {
		bool dup = false;
		for (uint32_t j = 0; j < i; j++)
			dup |= seen[j] == seen[i];
		if (!dup)
			b += (double)node_bytes(&g->nodes[seen[i]]);
	}
	if (st->kind == CG_STEP_KERNEL && st->nmore) {
		double rd = b - (double)node_bytes(n); /* the output is the last buffer, named once */
		b = 2 * rd;
	}
	double f = 0;
	if (st->kind == CG_STEP_GEMM) {
		f = 2.0 * (double)st->g.batch * (double)st->g.m * (double)st->g.n * (double)st->g.k;
	} else if (n->op == IR_OP_conv2d) {
		const ir_shape *w = &g->nodes[n->in[1]].shape;
		f = 2.0 * (double)ir_numel(&n->shape) * (double)(ir_numel(w) / w->d[0]);
	} else if (n->op == IR_OP_scaled_dot_product_attention) {
		/* q k^T and p v; causal does about half (FlashAttention's count) */
		const ir_shape *k = &g->nodes[n->in[1]].shape, *q = &g->nodes[n->in[0]].shape;
		double per = 2.0 * (double)k->d[k->rank - 2] * (double)(q->d[q->rank - 1] + n->shape.d[n->shape.rank - 1]);
		f = (double)ir_numel(&n->shape) / (double)n->shape.d[n->shape.rank - 1] * per;
		if (n->attrs->causal)
			f /= 2;
	} else if (n->op == IR_OP_matmul || n->op == IR_OP_linear) {
		const ir_shape *a = &g->nodes[n->in[0]].shape;
		f = 2.0 * (double)ir_numel(&n->shape) * (double)a->d[a->rank - 1];
	}
	*bytes = b;
	*flops = f;
}

static void set_shape(cg_buf *b, const ir_node *n)
{
	b->dtype = n->dtype;
	b->rank = n->shape.rank;
	int64_t st = 1;
	for (int d = n->shape.rank - 1; d >= 0; d--) {
		b->shape[d] = n->shape.d[d];
		b->strides[d] = st;
		st *= n->shape.d[d];
	}
	b->bytes = node_bytes(n);
}

static int set_io(cg_io *io, const ir_node *n, uint32_t buf)
{
	io->name = strdup(n->name ? n->name : "");
	io->dtype = n->dtype;
	io->rank = n->shape.rank;
	memcpy(io->shape, n->shape.d, sizeof io->shape);
	io->buf = buf;
	return io->name ? SN_OK : SN_EINTERNAL;
}

int cg_fusion_groups(const ir_graph *g, const cg_target *t, sn_buf *b, sn_err *e)
{
	for (ir_ref r = 0; r < g->nnodes; r++)
		if (!ir_shape_concrete(&g->nodes[r].shape))
			return sn_errf(e, SN_EUSAGE, "fusion groups need every symbolic dim bound (--shape SYM=VALUE)");
	fu_plan fp;
	fu_opts fo = {.caps = fuse_caps, .ctx = (void *)t};
	if (fu_partition(g, &fo, t->unfused, &fp, e) != SN_OK)
		return e->code;
	fu_plan_print(g, &fp, b);
	fu_plan_free(&fp);
	return b->oom ? sn_errf(e, SN_EINTERNAL, "out of memory") : SN_OK;
}

/* The arena: every stored value that is not a source or a view gets an
 * offset, live from the step of its group to the last step that reads it
 * (through views too); outputs live to the end. */
static int plan_arena(const ir_graph *g, const fu_plan *fp, const cg_rplan *rp, const ir_ref *mroot,
		      uint64_t *offset, uint64_t *peak, uint32_t *hot, sn_err *e)
{
	uint32_t n = g->nnodes, ns = fp->ngroups;
	uint32_t *first = malloc((n ? n : 1) * sizeof *first), *last = malloc((n ? n : 1) * sizeof *last);
	mp_item *items = malloc((n ? n : 1) * sizeof *items);
	size_t *off = malloc((n ? n : 1) * sizeof *off);
	int rc = SN_OK;
	if (!first || !last || !items || !off) {
		rc = sn_errf(e, SN_EINTERNAL, "codegen: out of memory");
		goto done;
	}
	for (uint32_t i = 0; i < n; i++)
		first[i] = last[i] = UINT32_MAX;
	for (uint32_t s = 0; s < ns; s++) {
		const fu_group *gr = &fp->groups[s];
		ir_ref w = mroot[gr->root];
		if (first[w] == UINT32_MAX)
			first[w] = s;
		last[w] = s;
		const cg_step *st = &rp->steps[s];
		ir_ref reads[CG_MAX_BUFS + 4];
		uint32_t nr = 0;
		if (st->kind == CG_STEP_KERNEL) {
			for (uint32_t k = 0; k < st->k.nbufs; k++)
				reads[nr++] = st->k.bufs[k];
			for (uint32_t j = 0; j < st->nmore; j++) /* the rest of the node's kernels */
				for (uint32_t k = 0; k < st->more[j].nbufs; k++) {
					ir_ref q = mroot[st->more[j].bufs[k]];
					if (last[q] == UINT32_MAX || last[q] < s)
						last[q] = s;
				}
		} else if (st->kind == CG_STEP_GEMM) {
			const ir_ref ops[] = {st->g.a, st->g.b, st->g.bias, st->g.c};
			for (size_t k = 0; k < SN_COUNT(ops); k++)
				if (ops[k] != IR_NONE)
					reads[nr++] = ops[k];
		} else {
			reads[nr++] = g->nodes[gr->root].in[0];
		}
		for (uint32_t k = 0; k < nr; k++) {
			ir_ref q = mroot[reads[k]];
			if (last[q] == UINT32_MAX || last[q] < s)
				last[q] = s;
		}
	}
	for (uint32_t k = 0; k < g->noutputs; k++)
		last[mroot[g->outputs[k]]] = ns;
	uint32_t ni = 0;
	for (uint32_t i = 0; i < n; i++) {
		const ir_node *nd = &g->nodes[i];
		offset[i] = UINT64_MAX;
		if (!fp->stored[i] || mroot[i] != i || nd->op == IR_OP_input || nd->op == IR_OP_param ||
		    nd->op == IR_OP_const || first[i] == UINT32_MAX)
			continue;
		uint64_t bytes = align_up(node_bytes(nd));
		if (bytes < node_bytes(nd) || bytes > SIZE_MAX) {
			rc = sn_errf(e, SN_EINPUT, "memplan: node %u (%s) is too large", i, ir_ops[nd->op].name);
			goto done;
		}
		items[ni++] = (mp_item){(size_t)bytes, first[i], last[i], i};
	}
	/* the step where the most bytes are live (fusion's memory guard) */
	{
		int64_t *d = calloc((size_t)ns + 2, sizeof *d);
		if (!d) {
			rc = sn_errf(e, SN_EINTERNAL, "codegen: out of memory");
			goto done;
		}
		for (uint32_t k = 0; k < ni; k++) {
			d[items[k].first] += (int64_t)items[k].size;
			d[items[k].last + 1] -= (int64_t)items[k].size;
		}
		int64_t live = 0, best = -1;
		*hot = 0;
		for (uint32_t t = 0; t <= ns; t++) {
			live += d[t];
			if (live > best)
				best = live, *hot = t;
		}
		free(d);
	}
	size_t pk = 0;
	rc = mp_place(items, ni, ns, off, &pk, e);
	for (uint32_t k = 0; k < ni && !rc; k++)
		offset[items[k].id] = off[k];
	*peak = pk;
done:
	free(first);
	free(last);
	free(items);
	free(off);
	return rc;
}

/* Lowers g with the groups fusion makes (none when t->unfused; nodes in
 * nofuse stay alone). hot, when given, gets the members of the fused group
 * at the step where the most bytes are live (*hot_any: there is one). */
static int lower_once(const ir_graph *g, const ir_tensor *vals, const cg_target *t, const uint8_t *nofuse,
		      uint8_t *hot, bool *hot_any, cg_plan **out, sn_err *e)
{
	*out = NULL;
	fu_plan fp;
	fu_opts fo = {.caps = fuse_caps, .ctx = (void *)t, .nofuse = nofuse};
	if (fu_partition(g, &fo, t->unfused, &fp, e) != SN_OK)
		return e->code;
	cg_rplan *rp = NULL;
	if (cg_render_groups(g, t, &fp, &rp, e) != SN_OK) {
		fu_plan_free(&fp);
		return e->code;
	}
	uint32_t n = g->nnodes;
	uint8_t *tf32w = NULL; /* params stored rounded to TF32 (NULL: none) */
	if (vals && cg_tf32_weights(g, t, &tf32w) != SN_OK) {
		fu_plan_free(&fp);
		cg_rplan_free(rp);
		return sn_errf(e, SN_EINTERNAL, "codegen: out of memory");
	}
	size_t nlaunch = 0; /* plan steps: one per step, one more per further kernel */
	for (uint32_t i = 0; i < rp->nsteps; i++)
		nlaunch += 1 + (rp->steps[i].kind == CG_STEP_KERNEL ? rp->steps[i].nmore : 0);
	cg_plan *p = calloc(1, sizeof *p);
	uint32_t *buf_of = malloc((n ? n : 1) * sizeof *buf_of);
	ir_ref *mroot = malloc((n ? n : 1) * sizeof *mroot);
	uint64_t *aoff = malloc((n ? n : 1) * sizeof *aoff);
	int rc = SN_OK;
	if (!p || !buf_of || !mroot || !aoff ||
	    !(p->bufs = calloc(n ? n : 1, sizeof *p->bufs)) ||
	    !(p->steps = calloc(nlaunch ? nlaunch : 1, sizeof *p->steps)) ||
	    !(p->kerns = calloc(nlaunch ? nlaunch : 1, sizeof *p->kerns)) ||
	    !(p->inputs = calloc(g->ninputs ? g->ninputs : 1, sizeof *p->inputs)) ||
	    !(p->outputs = calloc(g->noutputs ? g->noutputs : 1, sizeof *p->outputs))) {
		rc = sn_errf(e, SN_EINTERNAL, "codegen: out of memory");
		goto done;
	}
	p->sm = t->sm;
	/* a view's storage is its operand's root's */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t gi = fp.group_of[i];
		bool view = gi != FU_NO_GROUP && fp.groups[gi].kind == FU_VIEW && fp.groups[gi].root == i;
		mroot[i] = view ? mroot[g->nodes[i].in[0]] : i;
	}
	uint32_t hs = 0;
	if (plan_arena(g, &fp, rp, mroot, aoff, &p->arena_bytes, &hs, e) != SN_OK) {
		rc = e->code;
		goto done;
	}
	if (hot) {
		*hot_any = false;
		/* the hottest step, or the nearest fused group before it */
		for (uint32_t k = hs < fp.ngroups ? hs + 1 : fp.ngroups; k-- > 0 && !*hot_any;) {
			const fu_group *gr = &fp.groups[k];
			if (gr->n < 2)
				continue;
			for (uint32_t j = 0; j < gr->n; j++)
				hot[fp.members[gr->first + j]] = 1;
			*hot_any = true;
		}
	}

	/* Buffers: one per stored value, in node order; a view is a buffer
	 * viewing its operand's. */
	uint64_t woff = 0;
	for (uint32_t i = 0; i < n; i++) {
		const ir_node *nd = &g->nodes[i];
		buf_of[i] = CG_NO_BUF;
		if (!fp.stored[i])
			continue;
		cg_buf *b = &p->bufs[p->nbufs];
		set_shape(b, nd);
		if (nd->op == IR_OP_input) {
			b->where = CG_IN_INPUT;
			for (uint32_t k = 0; k < g->ninputs; k++)
				if (g->inputs[k] == i)
					b->index = k;
		} else if (nd->op == IR_OP_param || nd->op == IR_OP_const) {
			b->where = CG_IN_WEIGHT;
			b->offset = woff;
			woff += align_up(b->bytes);
		} else if (mroot[i] != i) {
			b->where = CG_IN_VIEW;
			b->index = buf_of[nd->in[0]];
			b->offset = 0;
		} else {
			b->where = CG_IN_ARENA;
			b->offset = aoff[i] == UINT64_MAX ? 0 : aoff[i];
		}
		buf_of[i] = p->nbufs++;
	}
	p->weight_bytes = woff;
	if (woff && !(p->weights = calloc(1, woff))) {
		rc = sn_errf(e, SN_EINTERNAL, "codegen: out of memory for a %" PRIu64 "-byte weight image", woff);
		goto done;
	}
	for (uint32_t i = 0; i < n; i++) {
		const ir_node *nd = &g->nodes[i];
		if (buf_of[i] == CG_NO_BUF)
			continue;
		const cg_buf *b = &p->bufs[buf_of[i]];
		if (b->where != CG_IN_WEIGHT || !b->bytes)
			continue;
		const void *src = nd->op == IR_OP_const ? nd->data : vals ? vals[i].data : NULL;
		if (nd->op == IR_OP_param && vals && !src) {
			rc = sn_errf(e, SN_EINTERNAL, "param \"%s\" has no data", nd->pname);
			goto done;
		}
		if (src)
			memcpy((char *)p->weights + b->offset, src, b->bytes);
		if (src && tf32w && tf32w[i])
			cg_round_tf32((char *)p->weights + b->offset, b->bytes / 4);
	}

	for (uint32_t i = 0; i < g->ninputs; i++)
		if (set_io(&p->inputs[i], &g->nodes[g->inputs[i]], buf_of[g->inputs[i]]) != SN_OK)
			rc = sn_errf(e, SN_EINTERNAL, "codegen: out of memory");
	p->ninputs = g->ninputs;
	for (uint32_t i = 0; i < g->noutputs; i++)
		if (set_io(&p->outputs[i], &g->nodes[g->outputs[i]], buf_of[g->outputs[i]]) != SN_OK)
			rc = sn_errf(e, SN_EINTERNAL, "codegen: out of memory");
	p->noutputs = g->noutputs;
	if (rc)
		goto done;

	/* Steps; kernels deduplicated by name (same name, same source). */
	for (uint32_t i = 0; i < rp->nsteps; i++) {
		cg_step *st = &rp->steps[i];
		if (st->kind == CG_STEP_ALIAS)
			continue;
		cg_pstep *ps = &p->steps[p->nsteps++];
		const fu_group *gr = &fp.groups[i];
		bool fused = gr->n > 1 || (gr->kind == FU_POINTWISE && cg_group_needs_emitter(g, &fp, i));
		snprintf(ps->op, sizeof ps->op, "%s%s", fused && gr->kind == FU_POINTWISE ? "fused:" : "",
			 ir_ops[g->nodes[st->node].op].name);
		if (fused && gr->kind != FU_POINTWISE)
			snprintf(ps->op + strlen(ps->op), sizeof ps->op - strlen(ps->op), "+%u", gr->n - 1);
		if (st->kind == CG_STEP_GEMM) {
			step_cost(g, st, NULL, &ps->bytes, &ps->flops);
			const cg_gemm *gg = &st->g;
			ps->kind = CG_MATMUL;
			ps->mm = (cg_mm){
				.a = buf_of[gg->a], .b = buf_of[gg->b],
				.bias = gg->bias == IR_NONE ? CG_NO_BUF : buf_of[gg->bias], .out = buf_of[gg->out],
				.c = gg->c == IR_NONE ? CG_NO_BUF : buf_of[gg->c],
				.batch = gg->batch, .m = gg->m, .n = gg->n, .k = gg->k,
				.stride_a = gg->stride_a, .stride_b = gg->stride_b, .stride_c = gg->stride_c,
				.trans_b = gg->trans_b, .dtype = gg->dtype, .act = gg->act, .tf32 = gg->tf32,
			};
			if (ps->mm.a == CG_NO_BUF || ps->mm.b == CG_NO_BUF || ps->mm.out == CG_NO_BUF) {
				rc = sn_errf(e, SN_EINTERNAL, "codegen: a matrix product names a value with no buffer");
				goto done;
			}
			continue;
		}
		for (uint32_t j = 0; j <= st->nmore; j++) {
			cg_kernel *k = j ? &st->more[j - 1] : &st->k;
			if (j) { /* a further kernel of the node: a step of its own */
				cg_pstep *prev = ps;
				ps = &p->steps[p->nsteps++];
				memcpy(ps->op, prev->op, sizeof ps->op);
			}
			step_cost(g, st, k, &ps->bytes, &ps->flops);
			ps->kind = CG_LAUNCH;
			memcpy(ps->grid, k->grid, sizeof ps->grid);
			memcpy(ps->block, k->block, sizeof ps->block);
			ps->smem = k->smem;
			ps->nargs = k->nbufs;
			for (uint32_t a = 0; a < k->nbufs; a++) {
				ps->args[a] = buf_of[k->bufs[a]];
				if (ps->args[a] == CG_NO_BUF) {
					rc = sn_errf(e, SN_EINTERNAL, "codegen: kernel %s names node %u, which has no buffer",
						     k->name, k->bufs[a]);
					goto done;
				}
			}
			uint32_t kk = 0;
			while (kk < p->nkerns && strcmp(p->kerns[kk].name, k->name))
				kk++;
			if (kk == p->nkerns) {
				cg_kern *ck = &p->kerns[p->nkerns++];
				memcpy(ck->name, k->name, sizeof ck->name);
				ck->src = k->src;
				k->src = NULL; /* moved */
				cg_spec_key(ck->src, ck->spec);
				ck->cfg = k->cfg;
				ck->ntmaps = k->ntmaps;
				memcpy(ck->tmaps, k->tmaps, sizeof ck->tmaps);
				if (!ck->cfg.block)
					ck->cfg.block = (int32_t)k->block[0];
			}
			ps->kern = kk;
		}
	}
done:
	fu_plan_free(&fp);
	cg_rplan_free(rp);
	free(buf_of);
	free(mroot);
	free(aoff);
	free(tf32w);
	if (rc) {
		cg_plan_free(p);
		return rc;
	}
	*out = p;
	return SN_OK;
}

int cg_lower(const ir_graph *g, const ir_tensor *vals, const cg_target *t, cg_plan **out, sn_err *e)
{
	*out = NULL;
	for (ir_ref r = 0; r < g->nnodes; r++)
		if (!ir_shape_concrete(&g->nodes[r].shape)) {
			char label[256];
			node_label(g, r, label, sizeof label);
			return sn_errf(e, SN_EINPUT, "%s: shape has unbound symbols (bind them first)", label);
		}
	if (t->unfused)
		return lower_once(g, vals, t, NULL, NULL, NULL, out, e);
	/* Fusion never raises the peak arena: while the fused plan needs more
	 * than the unfused one, the fused group where the most bytes are live
	 * is split back into single nodes (planned without weights, then
	 * lowered once more with them). */
	cg_target tu = *t;
	tu.unfused = true;
	cg_plan *p = NULL;
	if (lower_once(g, NULL, &tu, NULL, NULL, NULL, &p, e) != SN_OK)
		return e->code;
	uint64_t limit = p->arena_bytes;
	cg_plan_free(p);
	uint32_t n = g->nnodes ? g->nnodes : 1;
	uint8_t *nofuse = calloc(n, 1), *hot = calloc(n, 1);
	if (!nofuse || !hot) {
		free(nofuse);
		free(hot);
		return sn_errf(e, SN_EINTERNAL, "codegen: out of memory");
	}
	bool fits = false;
	for (int round = 0; round < 16 && !fits; round++) {
		bool any = false;
		memset(hot, 0, n);
		if (lower_once(g, NULL, t, nofuse, hot, &any, &p, e) != SN_OK)
			break;
		fits = p->arena_bytes <= limit;
		cg_plan_free(p);
		p = NULL;
		if (!any)
			break;
		for (uint32_t i = 0; i < n && !fits; i++)
			nofuse[i] |= hot[i];
	}
	int rc = e->code ? e->code : lower_once(g, vals, fits ? t : &tu, nofuse, NULL, NULL, out, e);
	free(nofuse);
	free(hot);
	return rc;
}
