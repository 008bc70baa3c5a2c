/* cuda_time.c: one step alone on the device (cuda_time.h). */
#include "runtime/cuda_time.h"

#include <stdlib.h>
#include <string.h>

int rt_dev_alloc(rt_cuda *c, size_t n, CUdeviceptr *out, sn_err *e)
{
	*out = 0;
	return rt_check(c, c->d.MemAlloc(out, n ? n : 256), "cuMemAlloc (autotuning buffer)", e);
}

void rt_dev_free(rt_cuda *c, CUdeviceptr p)
{
	if (p)
		c->d.MemFree(p);
}

/* On sinter's stream, then waited for: a plain cuMemcpyHtoD from pageable
 * memory returns once the bytes are staged, before the DMA lands, and is not
 * ordered with the (non-blocking) stream's next kernel, which could read the
 * old contents (seen as gpu.check's one changed element not counted). */
int rt_dev_upload(rt_cuda *c, CUdeviceptr dst, const void *src, size_t n, sn_err *e)
{
	if (n && rt_check(c, c->d.MemcpyHtoDAsync(dst, src, n, c->stream), "cuMemcpyHtoDAsync", e))
		return e->code;
	return rt_check(c, c->d.StreamSynchronize(c->stream), "cuStreamSynchronize", e);
}

int rt_dev_download(rt_cuda *c, void *dst, CUdeviceptr src, size_t n, sn_err *e)
{
	if (rt_check(c, c->d.StreamSynchronize(c->stream), "cuStreamSynchronize", e))
		return e->code;
	return n ? rt_check(c, c->d.MemcpyDtoH(dst, src, n), "cuMemcpyDtoH", e) : SN_OK;
}

int rt_dev_copy(rt_cuda *c, CUdeviceptr dst, CUdeviceptr src, size_t n, sn_err *e)
{
	return n ? rt_check(c, c->d.MemcpyDtoDAsync(dst, src, n, c->stream), "cuMemcpyDtoDAsync", e) : SN_OK;
}

int rt_dev_fill(rt_cuda *c, CUdeviceptr p, unsigned char v, size_t n, sn_err *e)
{
	return n ? rt_check(c, c->d.MemsetD8Async(p, v, n, c->stream), "cuMemsetD8Async", e) : SN_OK;
}

int rt_sync(rt_cuda *c, sn_err *e)
{
	return rt_check(c, c->d.StreamSynchronize(c->stream), "cuStreamSynchronize", e);
}

struct rt_kfn {
	rt_cuda *c;
	CUmodule mod;
	CUfunction fn;
};

int rt_kfn_load(rt_cuda *c, const void *cubin, const char *name, unsigned smem, rt_kfn **out, sn_err *e)
{
	*out = NULL;
	rt_kfn *k = calloc(1, sizeof *k);
	if (!k)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	k->c = c;
	if (rt_check(c, c->d.ModuleLoadData(&k->mod, cubin), "cuModuleLoadData", e)) {
		free(k);
		return e->code;
	}
	if (rt_check(c, c->d.ModuleGetFunction(&k->fn, k->mod, name), "cuModuleGetFunction", e) ||
	    (smem > 48 * 1024 &&
	     rt_check(c, c->d.FuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem),
		      "cuFuncSetAttribute", e))) {
		rt_kfn_free(k);
		return e->code;
	}
	*out = k;
	return SN_OK;
}

void rt_kfn_free(rt_kfn *k)
{
	if (!k)
		return;
	if (k->mod)
		k->c->d.ModuleUnload(k->mod);
	free(k);
}

int rt_kfn_launch_tm(rt_kfn *k, const unsigned grid[3], const unsigned block[3], unsigned smem,
		     const CUdeviceptr *args, unsigned nargs, const CUtensorMap *tm, unsigned ntm, sn_err *e)
{
	void *params[16];
	CUdeviceptr copy[16];
	if (nargs + ntm > 16)
		return sn_errf(e, SN_EINTERNAL, "a kernel with %u parameters", nargs + ntm);
	for (unsigned i = 0; i < nargs; i++) {
		copy[i] = args[i];
		params[i] = &copy[i];
	}
	for (unsigned i = 0; i < ntm; i++)
		params[nargs + i] = (void *)&tm[i];
	return rt_check(k->c,
			k->c->d.LaunchKernel(k->fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem,
					     k->c->stream, params, NULL),
			"cuLaunchKernel", e);
}

int rt_kfn_launch(rt_kfn *k, const unsigned grid[3], const unsigned block[3], unsigned smem,
		  const CUdeviceptr *args, unsigned nargs, sn_err *e)
{
	return rt_kfn_launch_tm(k, grid, block, smem, args, nargs, NULL, 0, e);
}

struct rt_timer {
	rt_cuda *c;
	CUevent ev[2 * RT_TIME_MAX_REPS];
	CUdeviceptr flush;
	size_t flush_bytes;
};

void rt_timer_close(rt_timer *t)
{
	if (!t)
		return;
	for (int i = 0; i < 2 * RT_TIME_MAX_REPS; i++)
		if (t->ev[i])
			t->c->d.EventDestroy(t->ev[i]);
	rt_dev_free(t->c, t->flush);
	free(t);
}

int rt_timer_open(rt_cuda *c, rt_timer **out, sn_err *e)
{
	*out = NULL;
	rt_timer *t = calloc(1, sizeof *t);
	if (!t)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	t->c = c;
	int l2 = 0;
	c->d.DeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, c->dev);
	t->flush_bytes = l2 > 0 ? 2 * (size_t)l2 : (size_t)128 << 20;
	if (rt_dev_alloc(c, t->flush_bytes, &t->flush, e)) {
		free(t);
		return e->code;
	}
	for (int i = 0; i < 2 * RT_TIME_MAX_REPS; i++)
		if (rt_check(c, c->d.EventCreate(&t->ev[i], CU_EVENT_DEFAULT), "cuEventCreate", e)) {
			t->ev[i] = NULL;
			rt_timer_close(t);
			return e->code;
		}
	*out = t;
	return SN_OK;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

int rt_time(rt_timer *t, int (*launch)(void *ctx, sn_err *e), void *ctx, int reps, double *median_ms,
	    double *max_ms, sn_err *e)
{
	rt_cuda *c = t->c;
	if (reps < 1)
		reps = 1;
	if (reps > RT_TIME_MAX_REPS)
		reps = RT_TIME_MAX_REPS;
	for (int i = 0; i < reps; i++) {
		/* the flush writes twice the L2: whatever the step reads
		 * comes from device memory, as in a real run of the model */
		if (rt_check(c, c->d.MemsetD8Async(t->flush, (unsigned char)i, t->flush_bytes, c->stream),
			     "cuMemsetD8Async (L2 flush)", e) ||
		    rt_check(c, c->d.EventRecord(t->ev[2 * i], c->stream), "cuEventRecord", e) || launch(ctx, e) ||
		    rt_check(c, c->d.EventRecord(t->ev[2 * i + 1], c->stream), "cuEventRecord", e))
			return e->code ? e->code : SN_EINTERNAL;
	}
	if (rt_check(c, c->d.StreamSynchronize(c->stream), "cuStreamSynchronize (timing)", e))
		return e->code;
	float ms[RT_TIME_MAX_REPS];
	for (int i = 0; i < reps; i++)
		if (rt_check(c, c->d.EventElapsedTime(&ms[i], t->ev[2 * i], t->ev[2 * i + 1]), "cuEventElapsedTime", e))
			return e->code;
	qsort(ms, (size_t)reps, sizeof *ms, cmp_float);
	*median_ms = reps % 2 ? ms[reps / 2] : 0.5 * ((double)ms[reps / 2 - 1] + ms[reps / 2]);
	*max_ms = ms[reps - 1];
	return SN_OK;
}
