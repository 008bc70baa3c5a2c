/* cl_lower.c: graph to CPU plan. The fusion partition with what the CPU
 * steps take (a product through BLAS takes bias, residual and relu/tanh
 * gelu; an NHWC f32 convolution a pointwise epilogue; a float reduction
 * keeping its dims a row group), one step per group
 * (cl.h), the arena placed over the groups' stored values with the same
 * placement as the CUDA plan (mp_place), and the weight image. */
#include "codegen/cl.h"
#include "passes/memplan.h"
#include "passes/rewrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* n and its operands all f32, or all bf16 (--precision bf16: stored as
 * bf16, computed in f32 by the runtime, runtime/cpu_*.c). */
static bool f32_all(const ir_graph *g, const ir_node *n)
{
	if (n->dtype != IR_F32 && n->dtype != IR_BF16)
		return false;
	for (uint32_t k = 0; k < n->nin; k++)
		if (g->nodes[n->in[k]].dtype != n->dtype)
			return false;
	return true;
}

/* A conv2d the BLAS path runs: f32 (or bf16), NHWC, one group. */
static bool conv_ok(const ir_graph *g, const ir_node *n)
{
	return n->op == IR_OP_conv2d && f32_all(g, n) && n->attrs->layout == IR_NHWC &&
	       (n->attrs->groups == 0 || n->attrs->groups == 1);
}

/* The product's shape as BLAS sees it; false when it is not one sgemm
 * (per batch) over contiguous operands. */
static bool gemm_shape(const ir_graph *g, const ir_node *n, cl_step *s)
{
	if (!f32_all(g, n))
		return false;
	const ir_shape *a = &g->nodes[n->in[0]].shape, *b = &g->nodes[n->in[1]].shape, *o = &n->shape;
	if (a->rank < 2 || b->rank < 2 || o->rank < 2)
		return false;
	s->a = n->in[0];
	s->b = n->in[1];
	if (n->op == IR_OP_linear) {
		if (b->rank != 2)
			return false;
		s->k = a->d[a->rank - 1];
		s->n = b->d[0];
		s->m = ir_numel(a) / (s->k ? s->k : 1);
		s->batch = 1;
		s->trans_b = true;
		s->sa = s->sb = s->sc = 0;
		return s->k > 0;
	}
	s->m = a->d[a->rank - 2];
	s->k = a->d[a->rank - 1];
	s->n = b->d[b->rank - 1];
	s->trans_b = false;
	if (s->m == 0 || s->k == 0 || s->n == 0)
		return false;
	int64_t ba = ir_numel(a) / (s->m * s->k), bb = ir_numel(b) / (s->k * s->n), bo = ir_numel(o) / (s->m * s->n);
	if (bb == 1 && ba == bo) {
		/* the batch folds into the rows */
		s->m *= ba;
		s->batch = 1;
		s->sa = s->sb = s->sc = 0;
		return true;
	}
	if ((ba != bo && ba != 1) || (bb != bo && bb != 1))
		return false;
	/* equal batch dims (or one operand unbatched), no finer broadcast */
	if (ba == bo && a->rank != o->rank)
		return false;
	if (bb == bo && b->rank != o->rank)
		return false;
	s->batch = bo;
	s->sa = ba == 1 ? 0 : s->m * s->k;
	s->sb = bb == 1 ? 0 : s->k * s->n;
	s->sc = s->m * s->n;
	return true;
}

/* Attention the runtime runs (cl.h): q, k, v of rank 4 (GQA allowed),
 * all f32 or all bf16, and an optional mask broadcast to the scores
 * (batch, heads, L, S) from its own shape: of their dtype (added), or
 * bool (true keeps) with f32 (bf16 steps widen every operand as bf16).
 * The plan reader (cl_io.c) checks a step read from a file with it too. */
bool cl_attn_fits(const ir_graph *g, const ir_node *n)
{
	if (n->op != IR_OP_scaled_dot_product_attention || (n->nin != 3 && n->nin != 4))
		return false;
	if (n->nin == 4) {
		const ir_node *m = &g->nodes[n->in[3]];
		if (m->shape.rank > 4)
			return false;
		if (m->dtype == IR_BOOL) {
			if (n->dtype != IR_F32)
				return false;
			for (uint32_t i = 0; i < 3; i++)
				if (g->nodes[n->in[i]].dtype != IR_F32)
					return false;
		} else if (!f32_all(g, n)) {
			return false;
		}
	} else if (!f32_all(g, n)) {
		return false;
	}
	const ir_shape *q = &g->nodes[n->in[0]].shape, *k = &g->nodes[n->in[1]].shape, *v = &g->nodes[n->in[2]].shape;
	if (q->rank != 4 || k->rank != 4 || v->rank != 4)
		return false;
	return q->d[0] == k->d[0] && k->d[0] == v->d[0] && k->d[1] == v->d[1] && k->d[1] && q->d[1] % k->d[1] == 0 &&
	       k->d[2] == v->d[2] && q->d[3] == k->d[3];
}

/* Attention lowered to a CL_ATTN step: it fits, and its mask is stored. */
static bool attn_ok(const ir_graph *g, const fu_plan *fp, const ir_node *n)
{
	return cl_attn_fits(g, n) && (n->nin == 3 || fp->stored[n->in[3]]);
}

/* A gather the runtime copies: its data stored, its indices i64 or i32,
 * stored or a 1-D iota (0..n-1) computed from nothing. */
static bool gather_ok(const ir_graph *g, const fu_plan *fp, const ir_node *n)
{
	if (n->op != IR_OP_gather || n->nin != 2 || !fp->stored[n->in[0]])
		return false;
	const ir_node *ix = &g->nodes[n->in[1]];
	if (ix->dtype != IR_I64 && ix->dtype != IR_I32)
		return false;
	return fp->stored[n->in[1]] || (ix->op == IR_OP_iota && ix->shape.rank == 1);
}

/* A reduction a row group may take (FU_CAN_ROWS; cl_rows.c's
 * emit_row_group): sum, mean, max or min of f32 or bf16 with its dims
 * kept (the partition checks the axes are trailing). */
static bool rows_ok(const ir_graph *g, const ir_node *n)
{
	bool red = n->op == IR_OP_reduce_sum || n->op == IR_OP_reduce_mean || n->op == IR_OP_reduce_max ||
		   n->op == IR_OP_reduce_min;
	ir_dtype it = n->nin == 1 ? g->nodes[n->in[0]].dtype : IR_I64;
	return red && n->attrs->keepdims && (it == IR_F32 || it == IR_BF16) && (n->dtype == IR_F32 || n->dtype == IR_BF16);
}

static unsigned caps(const ir_graph *g, ir_ref r, void *ctx)
{
	(void)ctx;
	const ir_node *n = &g->nodes[r];
	if (rows_ok(g, n))
		return FU_CAN_ROWS;
	if (n->op == IR_OP_matmul || n->op == IR_OP_linear) {
		cl_step s;
		return gemm_shape(g, n, &s) ? FU_CAN_BLAS_EPI : 0;
	}
	if (conv_ok(g, n))
		return FU_CAN_EPILOGUE;
	return 0;
}

int cl_fusion_groups(const ir_graph *g, sn_buf *b, sn_err *e)
{
	for (ir_ref r = 0; r < g->nnodes; r++)
		if (!ir_shape_concrete(&g->nodes[r].shape))
			return sn_errf(e, SN_EUSAGE, "fusion groups need every symbolic dim bound (--shape SYM=VALUE)");
	fu_plan fp;
	fu_opts fo = {.caps = caps};
	if (fu_partition(g, &fo, false, &fp, e) != SN_OK)
		return e->code;
	fu_plan_print(g, &fp, b);
	fu_plan_free(&fp);
	return b->oom ? sn_errf(e, SN_EINTERNAL, "out of memory") : SN_OK;
}

void cl_plan_free(cl_plan *p)
{
	if (!p)
		return;
	ir_graph_free(p->g);
	fu_plan_free(&p->fp);
	free(p->vals);
	free(p->steps);
	if (p->map)
		munmap(p->map, p->map_size);
	else if (!p->borrowed)
		free(p->weights);
	for (uint32_t i = 0; p->fns && i < p->nfns; i++)
		free(p->fns[i]);
	free(p->fns);
	for (int k = 0; k < CL_NMOD; k++) {
		cl_module_dispose(p->llctx[k], p->llmod[k]);
		free(p->obj[k]);
	}
	free(p->host);
	free(p);
}

static const char *kind_name(cl_kind k)
{
	static const char *const n[] = {"kernel", "gemm", "conv", "attention", "ref", "view", "pool", "gather"};
	return (unsigned)k < SN_COUNT(n) ? n[k] : "?";
}

void cl_plan_list(const cl_plan *p, sn_buf *b)
{
	for (uint32_t i = 0; i < p->nsteps; i++) {
		const cl_step *s = &p->steps[i];
		if (s->kind == CL_SKIP)
			continue;
		sn_buf_printf(b, "%s %s", kind_name(s->kind), s->op);
		if (s->kind == CL_KERNEL)
			sn_buf_printf(b, " %s rows=%lld inner=%lld nodes=%u", p->fns[s->fn], (long long)s->rows,
				      (long long)s->inner, p->fp.groups[s->group].n);
		if (s->kind == CL_GEMM)
			sn_buf_printf(b, " batch=%lld m=%lld n=%lld k=%lld trans_b=%d bias=%d residual=%d act=%d",
				      (long long)s->batch, (long long)s->m, (long long)s->n, (long long)s->k, s->trans_b,
				      s->bias != IR_NONE, s->c != IR_NONE, s->act);
		if ((s->kind == CL_GEMM || s->kind == CL_CONV) && s->fn >= 0)
			sn_buf_printf(b, " epilogue=%s", p->fns[s->fn]);
		sn_buf_puts(b, "\n");
	}
	sn_buf_printf(b, "%u steps: %u kernels, %u gemm, %u conv, %u attention, %u pool, %u gather, %u on the reference "
		      "interpreter\n",
		      p->nkernel + p->ngemm + p->nconv + p->nattn + p->npool + p->ngather + p->nref, p->nkernel, p->ngemm,
		      p->nconv, p->nattn, p->npool, p->ngather, p->nref);
}

static uint64_t up(uint64_t x)
{
	return (x + CL_ALIGN - 1) / CL_ALIGN * CL_ALIGN;
}

/* The node whose storage r uses (through views). */
static ir_ref storage_of(const cl_plan *p, ir_ref r)
{
	while (p->vals[r].where == CL_VIEW)
		r = p->vals[r].index;
	return r;
}

/* Marks every stored value group gid reads (through free nodes) with
 * step s as a reader: last[storage] = s. */
static void mark_reads(const cl_plan *p, uint32_t gid, uint32_t s, uint32_t *last, ir_ref *stack, uint32_t cap)
{
	const ir_graph *g = p->g;
	const fu_plan *fp = &p->fp;
	const fu_group *gr = &fp->groups[gid];
	uint32_t ns = 0;
	for (uint32_t k = 0; k < gr->n && ns < cap; k++)
		stack[ns++] = fp->members[gr->first + k];
	while (ns) {
		ir_ref r = stack[--ns];
		const ir_node *n = &g->nodes[r];
		for (uint32_t k = 0; k < n->nin; k++) {
			ir_ref q = n->in[k];
			if (fp->group_of[q] == gid)
				continue;
			if (!fp->stored[q]) {
				if (ns < cap)
					stack[ns++] = q;
				continue;
			}
			ir_ref st = storage_of(p, q);
			if (last[st] == UINT32_MAX || last[st] < s)
				last[st] = s;
		}
	}
}

int cl_lower(ir_graph *g, const ir_tensor *vals, bool no_fusion, cl_plan **out, sn_err *e)
{
	*out = NULL;
	cl_plan *p = calloc(1, sizeof *p);
	if (!p)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	p->g = g;
	uint32_t n = g->nnodes, cnt = n ? n : 1;
	for (ir_ref r = 0; r < n; r++)
		if (!ir_shape_concrete(&g->nodes[r].shape)) {
			p->g = NULL; /* the caller's still */
			cl_plan_free(p);
			return sn_errf(e, SN_EINPUT, "node %u: shape has unbound symbols (bind them first)", r);
		}
	fu_opts fo = {.caps = caps};
	int rc = fu_partition(g, &fo, no_fusion, &p->fp, e);
	if (rc) {
		p->g = NULL;
		cl_plan_free(p);
		return rc;
	}
	const fu_plan *fp = &p->fp;
	uint32_t ng = fp->ngroups;
	p->vals = calloc(cnt, sizeof *p->vals);
	p->steps = calloc(ng ? ng : 1, sizeof *p->steps);
	p->fns = calloc(ng ? ng : 1, sizeof *p->fns);
	uint32_t *first = malloc(cnt * sizeof *first), *last = malloc(cnt * sizeof *last);
	ir_ref *stack = malloc(4096 * sizeof *stack);
	mp_item *items = malloc(cnt * sizeof *items);
	size_t *off = malloc(cnt * sizeof *off);
	cl_emitter *em = NULL;
	if (!p->vals || !p->steps || !p->fns || !first || !last || !stack || !items || !off) {
		rc = sn_errf(e, SN_EINTERNAL, "out of memory");
		goto done;
	}
	if ((rc = cl_emit_new(&em, e)))
		goto done;
	/* sources: inputs, and params and consts in the weight image */
	uint64_t wbytes = 0;
	for (uint32_t i = 0; i < g->ninputs; i++)
		p->vals[g->inputs[i]] = (cl_val){.where = CL_INPUT, .index = i};
	for (ir_ref r = 0; r < n; r++) {
		const ir_node *nd = &g->nodes[r];
		if (nd->op == IR_OP_param || nd->op == IR_OP_const) {
			p->vals[r] = (cl_val){.where = CL_WEIGHT, .offset = wbytes};
			wbytes += up((uint64_t)ir_numel(&nd->shape) * ir_dtype_size(nd->dtype));
		}
	}
	p->weight_bytes = wbytes;
	if (wbytes && !(p->weights = aligned_alloc(CL_ALIGN, wbytes))) {
		rc = sn_errf(e, SN_EINTERNAL, "out of memory (weights, %llu bytes)", (unsigned long long)wbytes);
		goto done;
	}
	for (ir_ref r = 0; r < n; r++) {
		const ir_node *nd = &g->nodes[r];
		uint64_t nb = (uint64_t)ir_numel(&nd->shape) * ir_dtype_size(nd->dtype);
		char *dst = (char *)p->weights + p->vals[r].offset;
		if (nd->op == IR_OP_const && nd->data)
			memcpy(dst, nd->data, nb);
		else if (nd->op == IR_OP_param && vals && vals[r].data && vals[r].nbytes >= nb)
			memcpy(dst, vals[r].data, nb);
		else if (nd->op == IR_OP_param || nd->op == IR_OP_const)
			memset(dst, 0, nb);
	}
	/* views share their operand's storage */
	for (uint32_t gi = 0; gi < ng; gi++)
		if (fp->groups[gi].kind == FU_VIEW) {
			ir_ref r = fp->groups[gi].root;
			p->vals[r] = (cl_val){.where = CL_VIEW, .index = g->nodes[r].in[0]};
		}
	/* steps */
	for (uint32_t gi = 0; gi < ng; gi++) {
		const fu_group *gr = &fp->groups[gi];
		cl_step *st = &p->steps[p->nsteps++];
		st->group = gi;
		st->node = gr->core != IR_NONE ? gr->core : gr->root;
		st->fn = -1;
		st->bias = st->c = st->a = st->b = IR_NONE;
		st->out = gr->root;
		snprintf(st->op, sizeof st->op, "%s", ir_ops[g->nodes[st->node].op].name);
		const ir_node *core = &g->nodes[st->node];
		if (gr->kind == FU_VIEW) {
			st->kind = CL_SKIP;
			continue;
		}
		if (gr->kind == FU_GEMM || (gr->kind == FU_NODE && (core->op == IR_OP_matmul || core->op == IR_OP_linear) &&
					    gemm_shape(g, core, st))) {
			if (gr->kind == FU_GEMM && !gemm_shape(g, core, st)) {
				rc = sn_errf(e, SN_EINTERNAL, "cpu: product of group %u has no BLAS shape", gi);
				goto done;
			}
			st->kind = CL_GEMM;
			st->bias = gr->kind == FU_GEMM && gr->bias != IR_NONE ? gr->bias
				   : core->op == IR_OP_linear && core->nin > 2 ? core->in[2] : IR_NONE;
			st->c = gr->kind == FU_GEMM ? gr->residual : IR_NONE;
			st->act = gr->kind != FU_GEMM ? 0 : gr->act == FU_ACT_RELU ? 1 : gr->act == FU_ACT_GELU ? 2 : 0;
			p->ngemm++;
			continue;
		}
		if ((gr->kind == FU_CONV || gr->kind == FU_NODE) && conv_ok(g, core)) {
			st->kind = CL_CONV;
			if (gr->kind == FU_CONV && !cl_emit_group(em, g, fp, gi, st, p->fns, &p->nfns)) {
				if (cl_emit_oom(em)) {
					rc = sn_errf(e, SN_EINTERNAL, "out of memory");
					goto done;
				}
				st->kind = CL_REF; /* the epilogue has something the emitter does not take */
				p->nref++;
				continue;
			}
			p->nconv++;
			continue;
		}
		if (gr->kind == FU_NODE && f32_all(g, core) && core->attrs->layout == IR_NHWC &&
		    (core->op == IR_OP_max_pool2d || core->op == IR_OP_global_avg_pool)) {
			st->kind = CL_POOL;
			p->npool++;
			continue;
		}
		if (gr->kind == FU_NODE && gather_ok(g, fp, core)) {
			st->kind = CL_GATHER;
			st->b = core->in[0];
			st->a = g->nodes[core->in[1]].op == IR_OP_iota && !fp->stored[core->in[1]] ? IR_NONE : core->in[1];
			st->out = gr->root;
			p->ngather++;
			continue;
		}
		if (gr->kind == FU_NODE && attn_ok(g, fp, core)) {
			st->kind = CL_ATTN;
			p->nattn++;
			continue;
		}
		if (cl_emit_group(em, g, fp, gi, st, p->fns, &p->nfns)) {
			st->kind = CL_KERNEL;
			p->nkernel++;
		} else if (cl_emit_oom(em)) {
			rc = sn_errf(e, SN_EINTERNAL, "out of memory");
			goto done;
		} else {
			st->kind = CL_REF;
			p->nref++;
		}
	}
	/* a state written at a position in place (docs/DESIGN.md, State): a
	 * scatter on the reference interpreter's code whose data is a state
	 * input it alone reads, and whose result is that state's update,
	 * shares the state's buffer (no arena); run_ref writes only the
	 * updates into it */
	uint32_t *uses = g->nstates ? rw_uses(g) : NULL;
	for (uint32_t s = 0; uses && s < p->nsteps; s++) {
		const cl_step *st = &p->steps[s];
		ir_ref r = fp->groups[st->group].root;
		const ir_node *u = &g->nodes[r];
		if (st->kind != CL_REF || (u->op != IR_OP_scatter_elements && u->op != IR_OP_scatter_nd) ||
		    u->attrs->reduction != IR_SCATTER_NONE || uses[u->in[0]] != 1)
			continue;
		for (uint32_t k = 0; k < g->nstates; k++)
			if (u->in[0] == g->inputs[g->ninputs - g->nstates + k] &&
			    r == g->outputs[g->noutputs - g->nstates + k])
				p->vals[r] = (cl_val){.where = CL_VIEW, .index = u->in[0]};
	}
	free(uses);
	/* the arena: group roots, live from their step to their last reader */
	for (uint32_t i = 0; i < n; i++)
		first[i] = last[i] = UINT32_MAX;
	for (uint32_t s = 0; s < p->nsteps; s++) {
		const cl_step *st = &p->steps[s];
		if (st->kind == CL_SKIP)
			continue;
		ir_ref r = fp->groups[st->group].root;
		if (first[r] == UINT32_MAX)
			first[r] = s;
		mark_reads(p, st->group, s, last, stack, 4096);
	}
	for (uint32_t k = 0; k < g->noutputs; k++)
		last[storage_of(p, g->outputs[k])] = p->nsteps;
	uint32_t ni = 0;
	for (uint32_t r = 0; r < n; r++) {
		if (first[r] == UINT32_MAX || p->vals[r].where != CL_NOWHERE)
			continue;
		const ir_node *nd = &g->nodes[r];
		uint64_t nb = (uint64_t)ir_numel(&nd->shape) * ir_dtype_size(nd->dtype);
		items[ni] = (mp_item){.size = up(nb ? nb : 1), .first = first[r],
				      .last = last[r] == UINT32_MAX || last[r] < first[r] ? first[r] : last[r], .id = r};
		ni++;
	}
	size_t peak = 0;
	if ((rc = mp_place(items, ni, p->nsteps, off, &peak, e)))
		goto done;
	for (uint32_t i = 0; i < ni; i++)
		p->vals[items[i].id] = (cl_val){.where = CL_ARENA, .offset = off[i]};
	p->arena_bytes = peak;
	/* every value a step names has a place */
	for (uint32_t r = 0; r < n; r++)
		if (fp->stored[r] && p->vals[r].where == CL_NOWHERE && g->nodes[r].op != IR_OP_input) {
			rc = sn_errf(e, SN_EINTERNAL, "cpu: stored value %u has no buffer", r);
			goto done;
		}
	cl_emit_finish(em, p);
done:
	cl_emit_free(em);
	free(first);
	free(last);
	free(stack);
	free(items);
	free(off);
	if (rc) {
		p->g = NULL;
		cl_plan_free(p);
		return rc;
	}
	*out = p;
	return SN_OK;
}
