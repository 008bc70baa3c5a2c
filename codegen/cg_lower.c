/* cg_lower.c: graph to plan. First one step per non-source node, in graph
 * order, from the renderer of the node's op family (cg_render.h); then the
 * plan: a buffer per value that owns storage (views share their root's),
 * the arena planned over the buffers' lifetimes, unique kernels, and the
 * weight image. */
#include "codegen/cg_render.h"
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
	(void)t;
	switch (ir_ops[g->nodes[r].op].kind) {
	/* one line per family as it learns layouts or epilogues */
	default: return 0;
	}
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

void cg_rplan_free(cg_rplan *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->nsteps; i++)
		free(p->steps[i].k.src);
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
		if (st->kind == CG_STEP_KERNEL && (!st->k.src || !st->k.name[0] || st->k.nbufs > CG_MAX_BUFS)) {
			cg_rplan_free(p);
			return sn_errf(e, SN_EINTERNAL, "%s: renderer returned an incomplete kernel", label);
		}
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
static void spec_key(const char *src, uint8_t key[16])
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

/* What a step must move through memory and compute. */
static void step_cost(const ir_graph *g, const cg_step *st, double *bytes, double *flops)
{
	const ir_node *n = &g->nodes[st->node];
	double b = (double)node_bytes(n);
	for (uint32_t i = 0; i < n->nin; i++)
		b += (double)node_bytes(&g->nodes[n->in[i]]);
	double f = 0;
	if (st->kind == CG_STEP_GEMM) {
		f = 2.0 * (double)st->g.batch * (double)st->g.m * (double)st->g.n * (double)st->g.k;
	} else if (n->op == IR_OP_conv2d) {
		const ir_shape *w = &g->nodes[n->in[1]].shape;
		f = 2.0 * (double)ir_numel(&n->shape) * (double)(ir_numel(w) / w->d[0]);
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

int cg_lower(const ir_graph *g, const ir_tensor *vals, const cg_target *t, cg_plan **out, sn_err *e)
{
	*out = NULL;
	cg_rplan *rp = NULL;
	if (cg_render_graph(g, t, &rp, e) != SN_OK)
		return e->code;
	mp_plan_t mp;
	if (mp_plan(g, cg_is_alias, CG_ALIGN, &mp, e) != SN_OK) {
		cg_rplan_free(rp);
		return e->code;
	}
	uint32_t n = g->nnodes;
	cg_plan *p = calloc(1, sizeof *p);
	uint32_t *buf_of = malloc((n ? n : 1) * sizeof *buf_of);
	int rc = SN_OK;
	if (!p || !buf_of ||
	    !(p->bufs = calloc(n ? n : 1, sizeof *p->bufs)) ||
	    !(p->steps = calloc(rp->nsteps ? rp->nsteps : 1, sizeof *p->steps)) ||
	    !(p->kerns = calloc(rp->nsteps ? rp->nsteps : 1, sizeof *p->kerns)) ||
	    !(p->inputs = calloc(g->ninputs ? g->ninputs : 1, sizeof *p->inputs)) ||
	    !(p->outputs = calloc(g->noutputs ? g->noutputs : 1, sizeof *p->outputs))) {
		rc = sn_errf(e, SN_EINTERNAL, "codegen: out of memory");
		goto done;
	}
	p->sm = t->sm;
	p->arena_bytes = mp.peak;

	/* Buffers: one per value that owns storage, in node order; a view
	 * (reshape and friends) is a buffer viewing its root's. */
	uint64_t woff = 0;
	for (uint32_t i = 0; i < n; i++) {
		const ir_node *nd = &g->nodes[i];
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
		} else if (cg_is_alias(g, nd)) {
			b->where = CG_IN_VIEW;
			b->index = buf_of[nd->in[0]];
			b->offset = 0;
		} else {
			b->where = CG_IN_ARENA;
			b->offset = mp.offset[i];
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
		snprintf(ps->op, sizeof ps->op, "%s", ir_ops[g->nodes[st->node].op].name);
		step_cost(g, st, &ps->bytes, &ps->flops);
		if (st->kind == CG_STEP_GEMM) {
			const cg_gemm *gg = &st->g;
			ps->kind = CG_MATMUL;
			ps->mm = (cg_mm){
				.a = buf_of[gg->a], .b = buf_of[gg->b],
				.bias = gg->bias == IR_NONE ? CG_NO_BUF : buf_of[gg->bias], .out = buf_of[gg->out],
				.batch = gg->batch, .m = gg->m, .n = gg->n, .k = gg->k,
				.stride_a = gg->stride_a, .stride_b = gg->stride_b, .stride_c = gg->stride_c,
				.trans_b = gg->trans_b, .dtype = gg->dtype, .act = gg->act, .tf32 = gg->tf32,
			};
			continue;
		}
		cg_kernel *k = &st->k;
		ps->kind = CG_LAUNCH;
		memcpy(ps->grid, k->grid, sizeof ps->grid);
		memcpy(ps->block, k->block, sizeof ps->block);
		ps->smem = k->smem;
		ps->nargs = k->nbufs;
		for (uint32_t a = 0; a < k->nbufs; a++)
			ps->args[a] = buf_of[k->bufs[a]];
		uint32_t kk = 0;
		while (kk < p->nkerns && strcmp(p->kerns[kk].name, k->name))
			kk++;
		if (kk == p->nkerns) {
			cg_kern *ck = &p->kerns[p->nkerns++];
			memcpy(ck->name, k->name, sizeof ck->name);
			ck->src = k->src;
			k->src = NULL; /* moved */
			spec_key(ck->src, ck->spec);
			ck->cfg = k->cfg;
			if (!ck->cfg.block)
				ck->cfg.block = (int32_t)k->block[0];
		}
		ps->kern = kk;
	}
done:
	mp_plan_free(&mp);
	cg_rplan_free(rp);
	free(buf_of);
	if (rc) {
		cg_plan_free(p);
		return rc;
	}
	*out = p;
	return SN_OK;
}
