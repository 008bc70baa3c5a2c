/* cuda_exec.c: loads a plan on a CUDA device (modules from cubins, arena,
 * inputs, weight image in one copy, cuBLASLt algorithms) and launches its
 * steps on the stream, or replays them as one CUDA graph. */
#include "runtime/cuda_exec.h"

#include "ir/log.h"
#include "runtime/cuda_blas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rt_model {
	rt_cuda *c;
	cg_plan *plan;     /* borrowed */
	CUfunction *fn;    /* per kernel of the plan */
	CUmodule *mods;    /* per kernel of the plan */
	uint32_t nmods;
	rt_blas *blas;
	rt_gemm **gemm;    /* per step (matmul steps) */
	CUdeviceptr arena, weights;
	bool own_weights;  /* weights were uploaded by this model (not shared) */
	CUdeviceptr *in;   /* per input */
	CUdeviceptr *ptr;  /* per buffer */
	CUtensorMap (*tmap)[CG_MAX_TMAPS]; /* per step: its kernel's tensor maps, encoded (NULL: none in the plan) */
	bool poison;
	CUevent ev[2];
	CUgraph graph;     /* the plan captured once (reduce-overhead) */
	CUgraphExec exec;
};

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
	free(m->tmap);
	if (m->in) {
		for (uint32_t i = 0; i < m->plan->ninputs; i++)
			if (m->in[i])
				d->MemFree(m->in[i]);
		free(m->in);
	}
	if (m->arena)
		d->MemFree(m->arena);
	if (m->weights && m->own_weights)
		d->MemFree(m->weights);
	for (int i = 0; i < 2; i++)
		if (m->ev[i])
			d->EventDestroy(m->ev[i]);
	if (m->exec)
		d->GraphExecDestroy(m->exec);
	if (m->graph)
		d->GraphDestroy(m->graph);
	free(m->ptr);
	free(m);
}

/* One module per kernel of the plan, from its cubin. */
static int load_kernels(rt_model *m, sn_err *e)
{
	const cg_plan *p = m->plan;
	rt_cuda *c = m->c;
	for (uint32_t i = 0; i < p->nkerns; i++) {
		const cg_kern *k = &p->kerns[i];
		char what[128];
		snprintf(what, sizeof what, "loading kernel %s", k->name);
		if (!k->cubin)
			return sn_errf(e, SN_EINTERNAL, "%s: the plan holds no cubin", what);
		CUmodule mod;
		if (rt_check(c, c->d.ModuleLoadData(&mod, k->cubin), what, e))
			return e->code;
		m->mods[m->nmods++] = mod;
		if (rt_check(c, c->d.ModuleGetFunction(&m->fn[i], mod, k->name), what, e))
			return e->code;
	}
	/* a kernel asking for more than 48 KiB of dynamic shared memory must
	 * be allowed to, once, with the largest any of its launches asks */
	for (uint32_t s = 0; s < p->nsteps; s++) {
		const cg_pstep *st = &p->steps[s];
		if (st->kind == CG_LAUNCH && st->smem > 48 * 1024 &&
		    rt_check(c, c->d.FuncSetAttribute(m->fn[st->kern], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
						      (int)st->smem), p->kerns[st->kern].name, e))
			return e->code;
	}
	return SN_OK;
}

/* Uploads n bytes from pageable src through two pinned staging buffers:
 * the copy into one overlaps the DMA out of the other, several times
 * faster than a pageable copy (which the driver stages chunk by chunk,
 * synchronously). Falls back to a plain copy when pinned memory is short. */
enum { STAGE = 8 << 20 };
static int upload(rt_cuda *c, CUdeviceptr dst, const void *src, size_t n, sn_err *e)
{
	void *buf[2] = {NULL, NULL};
	CUevent done[2] = {NULL, NULL};
	if (n < 2 * STAGE || c->d.MemAllocHost(&buf[0], STAGE) != CUDA_SUCCESS ||
	    c->d.MemAllocHost(&buf[1], STAGE) != CUDA_SUCCESS ||
	    c->d.EventCreate(&done[0], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS ||
	    c->d.EventCreate(&done[1], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
		for (int i = 0; i < 2; i++) {
			if (buf[i])
				c->d.MemFreeHost(buf[i]);
			if (done[i])
				c->d.EventDestroy(done[i]);
		}
		return rt_check(c, c->d.MemcpyHtoDAsync(dst, src, n, c->stream), "uploading weights", e);
	}
	int rc = SN_OK;
	for (size_t off = 0, k = 0; !rc && off < n; off += STAGE, k++) {
		size_t len = n - off < STAGE ? n - off : STAGE;
		int b = (int)(k & 1);
		if (k >= 2)
			rc = rt_check(c, c->d.EventSynchronize(done[b]), "uploading weights", e);
		if (rc)
			break;
		memcpy(buf[b], (const char *)src + off, len);
		rc = rt_check(c, c->d.MemcpyHtoDAsync(dst + off, buf[b], len, c->stream), "uploading weights", e);
		if (!rc)
			rc = rt_check(c, c->d.EventRecord(done[b], c->stream), "uploading weights", e);
	}
	if (rt_check(c, c->d.StreamSynchronize(c->stream), "uploading weights", e) && !rc)
		rc = e->code;
	for (int i = 0; i < 2; i++) {
		c->d.MemFreeHost(buf[i]);
		c->d.EventDestroy(done[i]);
	}
	return rc;
}

/* The arena, the inputs, the weight image (one copy) and every buffer's
 * address. */
int rt_weights_upload(rt_cuda *c, const cg_plan *p, CUdeviceptr *out, sn_err *e)
{
	*out = 0;
	if (!p->weight_bytes)
		return SN_OK;
	if (!p->weights)
		return sn_errf(e, SN_EINTERNAL, "the plan holds no weight image");
	c->d.CtxSetCurrent(c->ctx);
	if (rt_check(c, c->d.MemAlloc(out, p->weight_bytes), "allocating weights", e))
		return e->code;
	if (upload(c, *out, p->weights, p->weight_bytes, e) ||
	    rt_check(c, c->d.StreamSynchronize(c->stream), "uploading weights", e)) {
		c->d.MemFree(*out);
		*out = 0;
		return e->code;
	}
	return SN_OK;
}

void rt_weights_free(rt_cuda *c, CUdeviceptr w)
{
	if (w) {
		c->d.CtxSetCurrent(c->ctx);
		c->d.MemFree(w);
	}
}

static int place_buffers(rt_model *m, CUdeviceptr shared, sn_err *e)
{
	const cg_plan *p = m->plan;
	rt_cuda *c = m->c;
	if (p->arena_bytes && rt_check(c, c->d.MemAlloc(&m->arena, p->arena_bytes), "allocating the arena", e))
		return e->code;
	if (shared) {
		m->weights = shared;
	} else if (p->weight_bytes) {
		m->own_weights = true;
		if (rt_check(c, c->d.MemAlloc(&m->weights, p->weight_bytes), "allocating weights", e))
			return e->code;
		if (!p->weights)
			return sn_errf(e, SN_EINTERNAL, "the plan holds no weight image");
		/* in stream order, for the reason rt_model_run gives; the load
		 * synchronizes the stream before it returns */
		if (upload(c, m->weights, p->weights, p->weight_bytes, e))
			return e->code;
	}
	for (uint32_t i = 0; i < p->ninputs; i++) {
		uint64_t nb = p->bufs[p->inputs[i].buf].bytes;
		if (rt_check(c, c->d.MemAlloc(&m->in[i], nb ? nb : 1), "allocating inputs", e))
			return e->code;
	}
	/* a view comes after the buffer it views (the plan reader checks) */
	for (uint32_t b = 0; b < p->nbufs; b++) {
		const cg_buf *bf = &p->bufs[b];
		switch (bf->where) {
		case CG_IN_ARENA: m->ptr[b] = m->arena + bf->offset; break;
		case CG_IN_WEIGHT: m->ptr[b] = m->weights + bf->offset; break;
		case CG_IN_INPUT: m->ptr[b] = m->in[bf->index]; break;
		case CG_IN_VIEW: m->ptr[b] = m->ptr[bf->index] + bf->offset; break;
		}
	}
	return SN_OK;
}

/* Encodes every launch's tensor maps over the buffers it was given: the
 * addresses are fixed from here on. */
static int encode_tmaps(rt_model *m, sn_err *e)
{
	const cg_plan *p = m->plan;
	bool any = false;
	for (uint32_t k = 0; k < p->nkerns; k++)
		any |= p->kerns[k].ntmaps > 0;
	if (!any)
		return SN_OK;
	/* CUtensorMap is 128-byte aligned: aligned_alloc keeps that */
	size_t bytes = (p->nsteps ? p->nsteps : 1) * sizeof *m->tmap;
	if (!(m->tmap = aligned_alloc(128, bytes)))
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	memset(m->tmap, 0, bytes);
	for (uint32_t i = 0; i < p->nsteps; i++) {
		const cg_pstep *st = &p->steps[i];
		if (st->kind != CG_LAUNCH)
			continue;
		const cg_kern *k = &p->kerns[st->kern];
		for (uint32_t t = 0; t < k->ntmaps; t++) {
			uint32_t b = st->args[k->tmaps[t].arg]; /* arg < nargs: the plan reader checks */
			if (rt_tmap_encode(m->c, &k->tmaps[t], m->ptr[b], p->bufs[b].bytes, &m->tmap[i][t], e))
				return e->code;
		}
	}
	return SN_OK;
}

static int capture(rt_model *m, sn_err *e);

int rt_model_load(rt_cuda *c, cg_plan *p, const rt_load_opts *o, rt_model **out, rt_times *times, sn_err *e)
{
	*out = NULL;
	rt_times tm = {0};
	rt_model *m = calloc(1, sizeof *m);
	if (!m)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	m->c = c;
	m->plan = p;
	m->poison = o && o->poison;
	int rc = c->d.CtxSetCurrent(c->ctx) == CUDA_SUCCESS ? SN_OK
		 : sn_errf(e, SN_EENV, "cannot make the CUDA context current");
	if (!rc && p->sm != c->sm)
		rc = sn_errf(e, SN_EINPUT, "the plan was compiled for sm_%d, the GPU %s is sm_%d", p->sm, c->name, c->sm);
	if (!rc) {
		m->fn = calloc(p->nkerns ? p->nkerns : 1, sizeof *m->fn);
		m->mods = calloc(p->nkerns ? p->nkerns : 1, sizeof *m->mods);
		m->gemm = calloc(p->nsteps ? p->nsteps : 1, sizeof *m->gemm);
		m->ptr = calloc(p->nbufs ? p->nbufs : 1, sizeof *m->ptr);
		m->in = calloc(p->ninputs ? p->ninputs : 1, sizeof *m->in);
		if (!m->fn || !m->mods || !m->gemm || !m->ptr || !m->in)
			rc = sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	double t0 = sn_now();
	if (!rc)
		rc = load_kernels(m, e);
	tm.load = sn_now() - t0;
	t0 = sn_now();
	if (!rc)
		rc = place_buffers(m, o ? o->weights : 0, e);
	if (!rc)
		rc = encode_tmaps(m, e);
	tm.upload = sn_now() - t0;
	t0 = sn_now();
	for (uint32_t i = 0; !rc && i < p->nsteps; i++) {
		cg_pstep *st = &p->steps[i];
		if (st->kind != CG_MATMUL)
			continue;
		if (!m->blas)
			rc = rt_blas_open(c, &m->blas, e);
		cg_blas_algo used;
		if (!rc)
			rc = rt_gemm_prepare(m->blas, &st->mm, &m->gemm[i], &used, e);
		if (!rc)
			st->mm.algo = used;
	}
	tm.blas = sn_now() - t0;
	for (int i = 0; !rc && i < 2; i++)
		rc = rt_check(c, c->d.EventCreate(&m->ev[i], CU_EVENT_DEFAULT), "cuEventCreate", e);
	t0 = sn_now();
	if (!rc)
		rc = rt_check(c, c->d.StreamSynchronize(c->stream), "uploading weights", e);
	tm.upload += sn_now() - t0;
	t0 = sn_now();
	if (!rc && o && o->graphs)
		rc = capture(m, e);
	tm.capture = sn_now() - t0;
	if (times)
		*times = tm;
	if (rc) {
		rt_model_free(m);
		return rc;
	}
	*out = m;
	return SN_OK;
}

/* Launches steps [from, to) on the stream (no synchronization). */
static int launch_range(rt_model *m, uint32_t from, uint32_t to, sn_err *e)
{
	rt_cuda *c = m->c;
	const cg_plan *p = m->plan;
	for (uint32_t i = from; i < to; i++) {
		const cg_pstep *st = &p->steps[i];
		if (st->kind == CG_LAUNCH) {
			CUdeviceptr args[CG_MAX_ARGS];
			void *argp[CG_MAX_ARGS + CG_MAX_TMAPS];
			for (uint32_t a = 0; a < st->nargs; a++) {
				args[a] = m->ptr[st->args[a]];
				argp[a] = &args[a];
			}
			for (uint32_t t = 0; t < p->kerns[st->kern].ntmaps; t++)
				argp[st->nargs + t] = &m->tmap[i][t];
			CUresult r = c->d.LaunchKernel(m->fn[st->kern], st->grid[0], st->grid[1], st->grid[2],
						       st->block[0], st->block[1], st->block[2], st->smem, c->stream,
						       argp, NULL);
			if (r != CUDA_SUCCESS) {
				char what[128];
				snprintf(what, sizeof what, "launching %s", p->kerns[st->kern].name);
				return rt_check(c, r, what, e);
			}
		} else {
			const cg_mm *gm = &st->mm;
			if (rt_gemm_run_c(m->blas, m->gemm[i], m->ptr[gm->a], m->ptr[gm->b],
					  gm->bias == CG_NO_BUF ? 0 : m->ptr[gm->bias],
					  gm->c == CG_NO_BUF ? 0 : m->ptr[gm->c], m->ptr[gm->out], c->stream, e))
				return e->code;
		}
	}
	return SN_OK;
}

/* Launches every step once on the stream (no synchronization). */
static int launch_steps(rt_model *m, sn_err *e)
{
	rt_cuda *c = m->c;
	const cg_plan *p = m->plan;
	if (m->poison && p->arena_bytes &&
	    rt_check(c, c->d.MemsetD8Async(m->arena, 0xff, p->arena_bytes, c->stream), "poisoning the arena", e))
		return e->code;
	return launch_range(m, 0, p->nsteps, e);
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
			rc = launch_range(m, i, i + 1, e);
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
		const cg_pstep *st = &p->steps[i];
		pr[i].name = st->kind == CG_LAUNCH ? p->kerns[st->kern].name : "cublasLt";
		pr[i].op = st->op;
		pr[i].bytes = st->bytes;
		pr[i].flops = st->flops;
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

int rt_model_run(rt_model *m, const void *const *inputs, void *const *outputs, sn_err *e)
{
	rt_cuda *c = m->c;
	const cg_plan *p = m->plan;
	c->d.CtxSetCurrent(c->ctx);
	/* On our stream, not the legacy one: a synchronous cuMemcpyHtoD from
	 * pageable memory may return before its DMA lands, and our stream is
	 * non-blocking, so kernels could read the input half-copied. In-stream
	 * order makes the kernels wait for the copy. */
	for (uint32_t i = 0; i < p->ninputs; i++) {
		uint64_t nb = p->bufs[p->inputs[i].buf].bytes;
		if (nb && rt_check(c, c->d.MemcpyHtoDAsync(m->in[i], inputs[i], nb, c->stream), "copying inputs", e))
			return e->code;
	}
	if (launch(m, e) || rt_check(c, c->d.StreamSynchronize(c->stream), "running the model", e))
		return e->code;
	for (uint32_t i = 0; i < p->noutputs; i++) {
		uint32_t b = p->outputs[i].buf;
		uint64_t nb = p->bufs[b].bytes;
		if (nb && rt_check(c, c->d.MemcpyDtoH(outputs[i], m->ptr[b], nb), "copying outputs", e))
			return e->code;
	}
	return SN_OK;
}

int rt_model_run_device(rt_model *m, const CUdeviceptr *inputs, const CUdeviceptr *outputs, CUstream user,
			sn_err *e)
{
	rt_cuda *c = m->c;
	const cg_plan *p = m->plan;
	c->d.CtxSetCurrent(c->ctx);
	/* ev[0]: the caller's work so far; ev[1]: ours (both are re-recorded by
	 * every call; a wait takes the event's state when it is queued) */
	if (rt_check(c, c->d.EventRecord(m->ev[0], user), "cuEventRecord", e) ||
	    rt_check(c, c->d.StreamWaitEvent(c->stream, m->ev[0], 0), "cuStreamWaitEvent", e))
		return e->code;
	for (uint32_t i = 0; i < p->ninputs; i++) {
		uint64_t nb = p->bufs[p->inputs[i].buf].bytes;
		if (nb && rt_check(c, c->d.MemcpyDtoDAsync(m->in[i], inputs[i], nb, c->stream), "copying inputs", e))
			return e->code;
	}
	if (launch(m, e))
		return e->code;
	for (uint32_t i = 0; i < p->noutputs; i++) {
		uint32_t b = p->outputs[i].buf;
		uint64_t nb = p->bufs[b].bytes;
		if (nb && rt_check(c, c->d.MemcpyDtoDAsync(outputs[i], m->ptr[b], nb, c->stream), "copying outputs", e))
			return e->code;
	}
	if (rt_check(c, c->d.EventRecord(m->ev[1], c->stream), "cuEventRecord", e) ||
	    rt_check(c, c->d.StreamWaitEvent(user, m->ev[1], 0), "cuStreamWaitEvent", e))
		return e->code;
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
