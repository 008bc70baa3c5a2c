/* cuda_exec.c: builds and runs a compiled model on a CUDA device:
 * lower (codegen) -> compile (NVRTC through the kernel cache) -> load ->
 * plan memory -> upload weights; then launch the plan on the stream. */
#include "runtime/cuda_exec.h"

#include "passes/memplan.h"
#include "runtime/cuda_blas.h"
#include "runtime/cuda_nvrtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ALIGN = 256 };

struct rt_model {
	rt_cuda *c;
	ir_graph *g;      /* a copy: the model outlives the caller's graph */
	cg_plan *plan;
	CUfunction *fn;   /* per step (kernel steps) */
	CUmodule *mods;   /* one per unique kernel */
	uint32_t nmods;
	rt_blas *blas;
	rt_gemm **gemm;   /* per step (gemm steps) */
	CUdeviceptr arena, weights;
	size_t arena_bytes, weight_bytes;
	CUdeviceptr *in;  /* per graph input */
	CUdeviceptr *ptr; /* per node */
	bool poison;
	CUevent ev[2];
	CUgraph graph;     /* the plan captured once (reduce-overhead) */
	CUgraphExec exec;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t node_bytes(const ir_node *n)
{
	return (size_t)ir_numel(&n->shape) * ir_dtype_size(n->dtype);
}

static size_t align_up(size_t x)
{
	return (x + ALIGN - 1) / ALIGN * ALIGN;
}

void rt_model_free(rt_model *m)
{
	if (!m)
		return;
	rt_driver *d = &m->c->d;
	d->CtxSetCurrent(m->c->ctx);
	if (m->gemm)
		for (uint32_t i = 0; i < m->plan->nsteps; i++)
			rt_gemm_free(m->gemm[i]);
	free(m->gemm);
	rt_blas_close(m->blas);
	for (uint32_t i = 0; i < m->nmods; i++)
		d->ModuleUnload(m->mods[i]);
	free(m->mods);
	free(m->fn);
	if (m->in) {
		for (uint32_t i = 0; i < m->g->ninputs; i++)
			if (m->in[i])
				d->MemFree(m->in[i]);
		free(m->in);
	}
	if (m->arena)
		d->MemFree(m->arena);
	if (m->weights)
		d->MemFree(m->weights);
	for (int i = 0; i < 2; i++)
		if (m->ev[i])
			d->EventDestroy(m->ev[i]);
	if (m->exec)
		d->GraphExecDestroy(m->exec);
	if (m->graph)
		d->GraphDestroy(m->graph);
	free(m->ptr);
	cg_plan_free(m->plan);
	ir_graph_free(m->g);
	free(m);
}

/* Compiles every kernel step and loads one module per unique kernel. */
static int load_kernels(rt_model *m, const rt_build_opts *o, rt_times *t, sn_err *e)
{
	cg_plan *p = m->plan;
	rt_cuda *c = m->c;
	size_t nk = 0;
	for (uint32_t i = 0; i < p->nsteps; i++)
		nk += p->steps[i].kind == CG_STEP_KERNEL;
	t->kernels = nk;
	if (!nk)
		return SN_OK;
	rt_job *jobs = calloc(nk, sizeof *jobs);
	uint32_t *step_of = calloc(nk, sizeof *step_of);
	m->mods = calloc(nk, sizeof *m->mods);
	if (!jobs || !step_of || !m->mods) {
		free(jobs);
		free(step_of);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	for (uint32_t i = 0, j = 0; i < p->nsteps; i++)
		if (p->steps[i].kind == CG_STEP_KERNEL) {
			jobs[j].name = p->steps[i].k.name;
			jobs[j].src = p->steps[i].k.src;
			step_of[j++] = i;
		}
	rt_nvrtc *nv = NULL;
	rt_compile_stats cs = {0};
	double t0 = now();
	int rc = rt_nvrtc_open(&nv, e);
	if (rc == SN_OK)
		rc = rt_compile_all(nv, jobs, nk, c->sm, o ? o->cache_dir : NULL, o ? o->nthreads : 0,
				    o ? o->dump_dir : NULL, o ? o->warn : NULL, o ? o->warn_ctx : NULL, &cs, e);
	rt_nvrtc_close(nv);
	t->nvrtc = now() - t0;
	t->unique = cs.unique;
	t->cache_hits = cs.hits;
	t0 = now();
	/* One module per unique kernel name: identical names mean identical sources. */
	for (size_t j = 0; rc == SN_OK && j < nk; j++) {
		cg_step *st = &p->steps[step_of[j]];
		size_t prev = j;
		for (size_t q = 0; q < j; q++)
			if (!strcmp(jobs[q].name, jobs[j].name)) {
				prev = q;
				break;
			}
		if (prev != j) {
			m->fn[step_of[j]] = m->fn[step_of[prev]];
			continue;
		}
		CUmodule mod;
		char what[128];
		snprintf(what, sizeof what, "loading kernel %s", st->k.name);
		rc = rt_check(c, c->d.ModuleLoadData(&mod, jobs[j].cubin), what, e);
		if (rc)
			break;
		m->mods[m->nmods++] = mod;
		rc = rt_check(c, c->d.ModuleGetFunction(&m->fn[step_of[j]], mod, st->k.name), what, e);
		if (!rc && st->k.smem > 48 * 1024)
			rc = rt_check(c, c->d.FuncSetAttribute(m->fn[step_of[j]],
				CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)st->k.smem), what, e);
	}
	t->load = now() - t0;
	rt_jobs_free(jobs, nk);
	free(jobs);
	free(step_of);
	return rc;
}

/* Params and consts go to one weights buffer, each 256-byte aligned. */
static int upload_weights(rt_model *m, const ir_tensor *vals, sn_err *e)
{
	const ir_graph *g = m->g;
	rt_cuda *c = m->c;
	size_t total = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].op == IR_OP_param || g->nodes[i].op == IR_OP_const)
			total += align_up(node_bytes(&g->nodes[i]));
	m->weight_bytes = total;
	if (!total)
		return SN_OK;
	if (rt_check(c, c->d.MemAlloc(&m->weights, total), "allocating weights", e))
		return e->code;
	size_t off = 0;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		if (n->op != IR_OP_param && n->op != IR_OP_const)
			continue;
		const void *src = n->op == IR_OP_const ? n->data : vals[i].data;
		size_t nb = node_bytes(n);
		if (!src && nb)
			return sn_errf(e, SN_EINTERNAL, "param \"%s\" has no data", n->pname);
		m->ptr[i] = m->weights + off;
		/* in stream order, for the reason rt_model_run gives; the build
		 * synchronizes the stream before it returns */
		if (nb && rt_check(c, c->d.MemcpyHtoDAsync(m->ptr[i], src, nb, c->stream), "uploading weights", e))
			return e->code;
		off += align_up(nb);
	}
	return SN_OK;
}

static int plan_memory(rt_model *m, sn_err *e)
{
	const ir_graph *g = m->g;
	rt_cuda *c = m->c;
	mp_plan_t mp;
	if (mp_plan(g, cg_is_alias, ALIGN, &mp, e) != SN_OK)
		return e->code;
	m->arena_bytes = mp.peak;
	int rc = SN_OK;
	if (m->arena_bytes)
		rc = rt_check(c, c->d.MemAlloc(&m->arena, m->arena_bytes), "allocating the arena", e);
	for (uint32_t i = 0; rc == SN_OK && i < g->ninputs; i++) {
		size_t nb = node_bytes(&g->nodes[g->inputs[i]]);
		rc = rt_check(c, c->d.MemAlloc(&m->in[i], nb ? nb : 1), "allocating inputs", e);
		m->ptr[g->inputs[i]] = m->in[i];
	}
	/* Nodes in order: an alias takes its operand's pointer, which is set. */
	for (uint32_t i = 0; rc == SN_OK && i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		if (n->op == IR_OP_input || n->op == IR_OP_param || n->op == IR_OP_const)
			continue;
		if (cg_is_alias(g, n))
			m->ptr[i] = m->ptr[n->in[0]];
		else
			m->ptr[i] = m->arena + mp.offset[i];
	}
	mp_plan_free(&mp);
	return rc;
}

static int capture(rt_model *m, sn_err *e);

int rt_model_build(rt_cuda *c, const ir_graph *g, const ir_tensor *vals, const rt_build_opts *o,
		   rt_model **out, rt_times *times, sn_err *e)
{
	*out = NULL;
	rt_times tm = {0};
	rt_model *m = calloc(1, sizeof *m);
	if (!m)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	m->c = c;
	m->poison = o && o->poison;
	int rc = c->d.CtxSetCurrent(c->ctx) == CUDA_SUCCESS ? SN_OK
		 : sn_errf(e, SN_EENV, "cannot make the CUDA context current");
	if (!rc && !(m->g = ir_graph_clone(g, e)))
		rc = e->code;
	if (!rc) {
		m->ptr = calloc(g->nnodes ? g->nnodes : 1, sizeof *m->ptr);
		m->in = calloc(g->ninputs ? g->ninputs : 1, sizeof *m->in);
		if (!m->ptr || !m->in)
			rc = sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	double t0 = now();
	cg_target tgt = {.sm = c->sm, .tf32 = o && o->tf32};
	if (!rc)
		rc = cg_lower(m->g, &tgt, &m->plan, e);
	tm.lower = now() - t0;
	if (!rc) {
		m->fn = calloc(m->plan->nsteps ? m->plan->nsteps : 1, sizeof *m->fn);
		m->gemm = calloc(m->plan->nsteps ? m->plan->nsteps : 1, sizeof *m->gemm);
		if (!m->fn || !m->gemm)
			rc = sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	if (!rc)
		rc = load_kernels(m, o, &tm, e);
	t0 = now();
	if (!rc)
		rc = plan_memory(m, e);
	if (!rc)
		rc = upload_weights(m, vals, e);
	tm.upload = now() - t0;
	for (uint32_t i = 0; !rc && i < m->plan->nsteps; i++) {
		cg_step *st = &m->plan->steps[i];
		if (st->kind != CG_STEP_GEMM)
			continue;
		if (!m->blas)
			rc = rt_blas_open(c, &m->blas, e);
		if (!rc)
			rc = rt_gemm_prepare(m->blas, &st->g, &m->gemm[i], e);
	}
	for (int i = 0; !rc && i < 2; i++)
		rc = rt_check(c, c->d.EventCreate(&m->ev[i], CU_EVENT_DEFAULT), "cuEventCreate", e);
	if (!rc)
		rc = rt_check(c, c->d.StreamSynchronize(c->stream), "uploading weights", e);
	if (!rc && o && o->graphs)
		rc = capture(m, e);
	tm.arena_bytes = m->arena_bytes;
	tm.weight_bytes = m->weight_bytes;
	if (times)
		*times = tm;
	if (rc) {
		rt_model_free(m);
		return rc;
	}
	*out = m;
	return SN_OK;
}

/* Launches every step once on the stream (no synchronization). */
static int launch_steps(rt_model *m, sn_err *e)
{
	rt_cuda *c = m->c;
	const cg_plan *p = m->plan;
	if (m->poison && m->arena_bytes &&
	    rt_check(c, c->d.MemsetD8Async(m->arena, 0xff, m->arena_bytes, c->stream), "poisoning the arena", e))
		return e->code;
	for (uint32_t i = 0; i < p->nsteps; i++) {
		const cg_step *st = &p->steps[i];
		if (st->kind == CG_STEP_KERNEL) {
			const cg_kernel *k = &st->k;
			CUdeviceptr args[CG_MAX_BUFS];
			void *argp[CG_MAX_BUFS];
			for (uint32_t a = 0; a < k->nbufs; a++) {
				args[a] = m->ptr[k->bufs[a]];
				argp[a] = &args[a];
			}
			CUresult r = c->d.LaunchKernel(m->fn[i], k->grid[0], k->grid[1], k->grid[2], k->block[0],
						       k->block[1], k->block[2], k->smem, c->stream, argp, NULL);
			if (r != CUDA_SUCCESS) {
				char what[128];
				snprintf(what, sizeof what, "launching %s", k->name);
				return rt_check(c, r, what, e);
			}
		} else if (st->kind == CG_STEP_GEMM) {
			const cg_gemm *gm = &st->g;
			if (rt_gemm_run(m->blas, m->gemm[i], m->ptr[gm->a], m->ptr[gm->b],
					gm->bias == IR_NONE ? 0 : m->ptr[gm->bias], m->ptr[gm->out], c->stream, e))
				return e->code;
		}
	}
	return SN_OK;
}

/* What step st must move through memory and compute. */
static void step_cost(const rt_model *m, const cg_step *st, double *bytes, double *flops)
{
	const ir_graph *g = m->g;
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

int rt_model_profile(rt_model *m, int iters, rt_prof **prof, size_t *np, sn_err *e)
{
	rt_cuda *c = m->c;
	const cg_plan *p = m->plan;
	c->d.CtxSetCurrent(c->ctx);
	rt_prof *pr = calloc(p->nsteps ? p->nsteps : 1, sizeof *pr);
	CUevent *ev = calloc(p->nsteps + 1, sizeof *ev);
	int rc = pr && ev ? SN_OK : sn_errf(e, SN_EINTERNAL, "out of memory");
	uint32_t made = 0;
	for (; !rc && made <= p->nsteps; made++)
		rc = rt_check(c, c->d.EventCreate(&ev[made], CU_EVENT_DEFAULT), "cuEventCreate", e);
	bool poison = m->poison;
	m->poison = false;
	for (int it = 0; !rc && it < iters; it++) {
		rc = rt_check(c, c->d.EventRecord(ev[0], c->stream), "cuEventRecord", e);
		for (uint32_t i = 0; !rc && i < p->nsteps; i++) {
			/* one step at a time: launch_steps on a one-step view */
			cg_plan one = {.steps = &p->steps[i], .nsteps = 1};
			cg_plan *all = m->plan;
			CUfunction f0 = m->fn[0];
			rt_gemm *g0 = m->gemm[0];
			m->plan = &one;
			m->fn[0] = m->fn[i];
			m->gemm[0] = m->gemm[i];
			rc = launch_steps(m, e);
			m->fn[0] = f0;
			m->gemm[0] = g0;
			m->plan = all;
			if (!rc)
				rc = rt_check(c, c->d.EventRecord(ev[i + 1], c->stream), "cuEventRecord", e);
		}
		if (!rc)
			rc = rt_check(c, c->d.EventSynchronize(ev[p->nsteps]), "profiling", e);
		for (uint32_t i = 0; !rc && i < p->nsteps; i++) {
			float t = 0;
			rc = rt_check(c, c->d.EventElapsedTime(&t, ev[i], ev[i + 1]), "cuEventElapsedTime", e);
			pr[i].ms += t / iters;
		}
	}
	m->poison = poison;
	for (uint32_t i = 0; i < made && ev; i++)
		c->d.EventDestroy(ev[i]);
	free(ev);
	for (uint32_t i = 0; !rc && i < p->nsteps; i++) {
		const cg_step *st = &p->steps[i];
		pr[i].name = st->kind == CG_STEP_KERNEL ? st->k.name : st->kind == CG_STEP_GEMM ? "cublasLt" : "alias";
		pr[i].op = ir_ops[m->g->nodes[st->node].op].name;
		step_cost(m, st, &pr[i].bytes, &pr[i].flops);
	}
	if (rc) {
		free(pr);
		return rc;
	}
	*prof = pr;
	*np = p->nsteps;
	return SN_OK;
}

/* One call of the plan: the captured graph when there is one. */
static int launch(rt_model *m, sn_err *e)
{
	if (m->exec)
		return rt_check(m->c, m->c->d.GraphLaunch(m->exec, m->c->stream), "cuGraphLaunch", e);
	return launch_steps(m, e);
}

/* Captures the plan into a CUDA graph: every kernel, cuBLASLt product and
 * the poisoning memset become nodes replayed with one launch. Inputs live at
 * static addresses (m->in), so the graph stays valid across runs. */
static int capture(rt_model *m, sn_err *e)
{
	rt_cuda *c = m->c;
	if (rt_check(c, c->d.StreamBeginCapture(c->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
		     "cuStreamBeginCapture", e))
		return e->code;
	int rc = launch_steps(m, e);
	CUgraph g = NULL;
	CUresult r = c->d.StreamEndCapture(c->stream, &g);
	if (rc) {
		if (g)
			c->d.GraphDestroy(g);
		return rc;
	}
	if (rt_check(c, r, "cuStreamEndCapture", e))
		return e->code;
	m->graph = g;
	return rt_check(c, c->d.GraphInstantiate(&m->exec, g, 0), "cuGraphInstantiate", e);
}

int rt_model_run(rt_model *m, const ir_tensor *inputs, ir_tensor *outs, sn_err *e)
{
	rt_cuda *c = m->c;
	const ir_graph *g = m->g;
	c->d.CtxSetCurrent(c->ctx);
	/* On our stream, not the legacy one: a synchronous cuMemcpyHtoD from
	 * pageable memory may return before its DMA lands, and our stream is
	 * non-blocking, so kernels could read the input half-copied. In-stream
	 * order makes the kernels wait for the copy. */
	for (uint32_t i = 0; i < g->ninputs; i++) {
		size_t nb = node_bytes(&g->nodes[g->inputs[i]]);
		if (nb && rt_check(c, c->d.MemcpyHtoDAsync(m->in[i], inputs[i].data, nb, c->stream),
				   "copying inputs", e))
			return e->code;
	}
	if (launch(m, e) || rt_check(c, c->d.StreamSynchronize(c->stream), "running the model", e))
		return e->code;
	memset(outs, 0, g->noutputs * sizeof *outs);
	for (uint32_t i = 0; i < g->noutputs; i++) {
		const ir_node *n = &g->nodes[g->outputs[i]];
		size_t nb = node_bytes(n);
		outs[i].dtype = n->dtype;
		outs[i].shape = n->shape;
		outs[i].nbytes = nb;
		outs[i].data = malloc(nb ? nb : 1);
		if (!outs[i].data) {
			for (uint32_t k = 0; k < i; k++)
				free(outs[k].data);
			return sn_errf(e, SN_EINTERNAL, "out of memory");
		}
		if (nb && rt_check(c, c->d.MemcpyDtoH(outs[i].data, m->ptr[g->outputs[i]], nb), "copying outputs", e)) {
			for (uint32_t k = 0; k <= i; k++)
				free(outs[k].data);
			return e->code;
		}
	}
	return SN_OK;
}

int rt_model_time(rt_model *m, int warmup, int n, double *ms, sn_err *e)
{
	rt_cuda *c = m->c;
	c->d.CtxSetCurrent(c->ctx);
	bool poison = m->poison;
	m->poison = false;
	int rc = SN_OK;
	for (int i = 0; !rc && i < warmup; i++)
		rc = launch(m, e);
	if (!rc)
		rc = rt_check(c, c->d.StreamSynchronize(c->stream), "warming up", e);
	for (int i = 0; !rc && i < n; i++) {
		float t = 0;
		rc = rt_check(c, c->d.EventRecord(m->ev[0], c->stream), "cuEventRecord", e);
		if (!rc)
			rc = launch(m, e);
		if (!rc)
			rc = rt_check(c, c->d.EventRecord(m->ev[1], c->stream), "cuEventRecord", e);
		if (!rc)
			rc = rt_check(c, c->d.EventSynchronize(m->ev[1]), "timing", e);
		if (!rc)
			rc = rt_check(c, c->d.EventElapsedTime(&t, m->ev[0], m->ev[1]), "cuEventElapsedTime", e);
		ms[i] = t;
	}
	m->poison = poison;
	return rc;
}
