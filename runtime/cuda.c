/* cuda.c: dlopen'ed CUDA driver, device and context. */
#include "runtime/cuda.h"
#include "codegen/cg.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

int rt_check(const rt_cuda *c, CUresult r, const char *what, sn_err *e)
{
	if (r == CUDA_SUCCESS)
		return SN_OK;
	const char *name = "CUDA_ERROR_?", *text = "";
	if (c && c->d.GetErrorName)
		c->d.GetErrorName(r, &name);
	if (c && c->d.GetErrorString)
		c->d.GetErrorString(r, &text);
	return sn_errf(e, SN_EENV, "%s: %s (%s)", what, name ? name : "?", text ? text : "");
}

/* Each entry: where in rt_driver, and the versioned symbol to bind. The _v2
 * names are the ABI that cuda.h's macros select. */
#define ENTRY(field, sym) {offsetof(rt_driver, field), sym}
static const struct {
	size_t off;
	const char *sym;
} entries[] = {
	ENTRY(Init, "cuInit"),
	ENTRY(DriverGetVersion, "cuDriverGetVersion"),
	ENTRY(DeviceGetCount, "cuDeviceGetCount"),
	ENTRY(DeviceGet, "cuDeviceGet"),
	ENTRY(DeviceGetName, "cuDeviceGetName"),
	ENTRY(DeviceGetAttribute, "cuDeviceGetAttribute"),
	ENTRY(DeviceTotalMem, "cuDeviceTotalMem_v2"),
	ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
	ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
	ENTRY(CtxSetCurrent, "cuCtxSetCurrent"),
	ENTRY(CtxSynchronize, "cuCtxSynchronize"),
	ENTRY(StreamCreate, "cuStreamCreate"),
	ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
	ENTRY(StreamSynchronize, "cuStreamSynchronize"),
	ENTRY(EventCreate, "cuEventCreate"),
	ENTRY(EventDestroy, "cuEventDestroy_v2"),
	ENTRY(EventRecord, "cuEventRecord"),
	ENTRY(EventSynchronize, "cuEventSynchronize"),
	ENTRY(EventElapsedTime, "cuEventElapsedTime_v2"),
	ENTRY(StreamWaitEvent, "cuStreamWaitEvent"),
	ENTRY(MemAlloc, "cuMemAlloc_v2"),
	ENTRY(MemFree, "cuMemFree_v2"),
	ENTRY(MemAllocHost, "cuMemAllocHost_v2"),
	ENTRY(MemFreeHost, "cuMemFreeHost"),
	ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
	ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
	ENTRY(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
	ENTRY(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
	ENTRY(MemsetD8Async, "cuMemsetD8Async"),
	ENTRY(ModuleLoadData, "cuModuleLoadData"),
	ENTRY(ModuleUnload, "cuModuleUnload"),
	ENTRY(ModuleGetFunction, "cuModuleGetFunction"),
	ENTRY(FuncSetAttribute, "cuFuncSetAttribute"),
	ENTRY(LaunchKernel, "cuLaunchKernel"),
	ENTRY(StreamBeginCapture, "cuStreamBeginCapture_v2"),
	ENTRY(StreamEndCapture, "cuStreamEndCapture"),
	ENTRY(GraphInstantiate, "cuGraphInstantiateWithFlags"),
	ENTRY(GraphLaunch, "cuGraphLaunch"),
	ENTRY(GraphExecDestroy, "cuGraphExecDestroy"),
	ENTRY(GraphDestroy, "cuGraphDestroy"),
	ENTRY(GetErrorName, "cuGetErrorName"),
	ENTRY(GetErrorString, "cuGetErrorString"),
};
#undef ENTRY

#ifdef SINTER_FAULT
/* Fault injection (ir/fault.h): every driver call that acquires or
 * computes something goes through a wrapper that may fail it, without
 * making it, the way a driver out of memory or a lost device would.
 * Releases are never failed (a failed cuMemFree would only leak). The
 * real entry points are the same for every open (one libcuda.so.1). */
#include "ir/fault.h"

#define FW_RET(f, fail)                                             \
	if (sn_fault_cuda_hit())                                    \
		return fail;
#define FW1(f, fail, T1)                                            \
	static CUresult (*real_##f)(T1);                            \
	static CUresult fw_##f(T1 a)                                \
	{                                                           \
		FW_RET(f, fail)                                     \
		return real_##f(a);                                 \
	}
#define FW2(f, fail, T1, T2)                                        \
	static CUresult (*real_##f)(T1, T2);                        \
	static CUresult fw_##f(T1 a, T2 b)                          \
	{                                                           \
		FW_RET(f, fail)                                     \
		return real_##f(a, b);                              \
	}
#define FW3(f, fail, T1, T2, T3)                                    \
	static CUresult (*real_##f)(T1, T2, T3);                    \
	static CUresult fw_##f(T1 a, T2 b, T3 c)                    \
	{                                                           \
		FW_RET(f, fail)                                     \
		return real_##f(a, b, c);                           \
	}
#define FW4(f, fail, T1, T2, T3, T4)                                \
	static CUresult (*real_##f)(T1, T2, T3, T4);                \
	static CUresult fw_##f(T1 a, T2 b, T3 c, T4 d)              \
	{                                                           \
		FW_RET(f, fail)                                     \
		return real_##f(a, b, c, d);                        \
	}
#define OOM CUDA_ERROR_OUT_OF_MEMORY
#define UNK CUDA_ERROR_UNKNOWN
FW1(Init, UNK, unsigned)
FW1(DriverGetVersion, UNK, int *)
FW1(DeviceGetCount, UNK, int *)
FW2(DeviceGet, UNK, CUdevice *, int)
FW3(DeviceGetName, UNK, char *, int, CUdevice)
FW3(DeviceGetAttribute, UNK, int *, CUdevice_attribute, CUdevice)
FW2(DeviceTotalMem, UNK, size_t *, CUdevice)
FW2(DevicePrimaryCtxRetain, OOM, CUcontext *, CUdevice)
FW1(CtxSetCurrent, UNK, CUcontext)
static CUresult (*real_CtxSynchronize)(void);
static CUresult fw_CtxSynchronize(void)
{
	FW_RET(CtxSynchronize, UNK)
	return real_CtxSynchronize();
}
FW2(StreamCreate, OOM, CUstream *, unsigned)
FW1(StreamSynchronize, UNK, CUstream)
FW2(EventCreate, OOM, CUevent *, unsigned)
FW2(EventRecord, UNK, CUevent, CUstream)
FW1(EventSynchronize, UNK, CUevent)
FW3(EventElapsedTime, UNK, float *, CUevent, CUevent)
FW2(MemAlloc, OOM, CUdeviceptr *, size_t)
FW2(MemAllocHost, OOM, void **, size_t)
FW3(MemcpyHtoD, UNK, CUdeviceptr, const void *, size_t)
FW3(MemcpyDtoH, UNK, void *, CUdeviceptr, size_t)
FW4(MemcpyDtoDAsync, UNK, CUdeviceptr, CUdeviceptr, size_t, CUstream)
FW4(MemcpyHtoDAsync, UNK, CUdeviceptr, const void *, size_t, CUstream)
FW4(MemsetD8Async, UNK, CUdeviceptr, unsigned char, size_t, CUstream)
FW2(ModuleLoadData, OOM, CUmodule *, const void *)
FW3(ModuleGetFunction, UNK, CUfunction *, CUmodule, const char *)
FW3(FuncSetAttribute, UNK, CUfunction, CUfunction_attribute, int)
static CUresult (*real_LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				     unsigned, CUstream, void **, void **);
static CUresult fw_LaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
				unsigned bz, unsigned smem, CUstream s, void **args, void **extra)
{
	FW_RET(LaunchKernel, UNK)
	return real_LaunchKernel(f, gx, gy, gz, bx, by, bz, smem, s, args, extra);
}
FW2(StreamBeginCapture, UNK, CUstream, CUstreamCaptureMode)
FW2(StreamEndCapture, UNK, CUstream, CUgraph *)
FW3(GraphInstantiate, OOM, CUgraphExec *, CUgraph, unsigned long long)
FW2(GraphLaunch, UNK, CUgraphExec, CUstream)
#undef OOM
#undef UNK

static void fault_wrap(rt_driver *d)
{
#define W(f)                      \
	do {                      \
		real_##f = d->f;  \
		d->f = fw_##f;    \
	} while (0)
	W(Init); W(DriverGetVersion); W(DeviceGetCount); W(DeviceGet); W(DeviceGetName);
	W(DeviceGetAttribute); W(DeviceTotalMem); W(DevicePrimaryCtxRetain); W(CtxSetCurrent);
	W(CtxSynchronize); W(StreamCreate); W(StreamSynchronize); W(EventCreate); W(EventRecord);
	W(EventSynchronize); W(EventElapsedTime); W(MemAlloc); W(MemAllocHost); W(MemcpyHtoD);
	W(MemcpyDtoH); W(MemcpyDtoDAsync); W(MemcpyHtoDAsync); W(MemsetD8Async); W(ModuleLoadData);
	W(ModuleGetFunction); W(FuncSetAttribute); W(LaunchKernel); W(StreamBeginCapture);
	W(StreamEndCapture); W(GraphInstantiate); W(GraphLaunch);
#undef W
}
#endif

int rt_cuda_open(int ordinal, rt_cuda **out, sn_err *e)
{
	*out = NULL;
	rt_cuda *c = calloc(1, sizeof *c);
	if (!c)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!c->lib) {
		const char *why = dlerror();
		free(c);
		return sn_errf(e, SN_EENV, "no CUDA driver: cannot load libcuda.so.1 (%s)",
			       why ? why : "not found");
	}
	for (size_t i = 0; i < SN_COUNT(entries); i++) {
		void *f = dlsym(c->lib, entries[i].sym);
		/* cuEventElapsedTime_v2 is recent; older drivers have the plain one */
		if (!f && !strcmp(entries[i].sym, "cuEventElapsedTime_v2"))
			f = dlsym(c->lib, "cuEventElapsedTime");
		if (!f) {
			sn_errf(e, SN_EENV, "the CUDA driver is too old: libcuda.so.1 lacks %s", entries[i].sym);
			rt_cuda_close(c);
			return SN_EENV;
		}
		memcpy((char *)&c->d + entries[i].off, &f, sizeof f);
	}
	c->d.TensorMapEncodeTiled = (CUresult(*)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
						  const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
						  CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
						  CUtensorMapFloatOOBfill))(uintptr_t)dlsym(c->lib, "cuTensorMapEncodeTiled");
#ifdef SINTER_FAULT
	fault_wrap(&c->d);
#endif
	int count = 0;
	if (rt_check(c, c->d.Init(0), "cuInit", e) ||
	    rt_check(c, c->d.DeviceGetCount(&count), "cuDeviceGetCount", e))
		goto fail;
	if (ordinal < 0 || ordinal >= count) {
		sn_errf(e, SN_EENV, count ? "no CUDA device %d (this machine has %d)" : "no CUDA device",
			ordinal, count);
		goto fail;
	}
	int major = 0, minor = 0;
	if (rt_check(c, c->d.DeviceGet(&c->dev, ordinal), "cuDeviceGet", e) ||
	    rt_check(c, c->d.DeviceGetName(c->name, sizeof c->name, c->dev), "cuDeviceGetName", e) ||
	    rt_check(c, c->d.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev),
		     "cuDeviceGetAttribute", e) ||
	    rt_check(c, c->d.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev),
		     "cuDeviceGetAttribute", e) ||
	    rt_check(c, c->d.DeviceGetAttribute(&c->num_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, c->dev),
		     "cuDeviceGetAttribute", e) ||
	    rt_check(c, c->d.DeviceTotalMem(&c->total_mem, c->dev), "cuDeviceTotalMem", e) ||
	    rt_check(c, c->d.DriverGetVersion(&c->driver_version), "cuDriverGetVersion", e))
		goto fail;
	c->sm = 10 * major + minor;
	if (rt_check(c, c->d.DevicePrimaryCtxRetain(&c->ctx, c->dev), "cuDevicePrimaryCtxRetain", e))
		goto fail;
	if (rt_check(c, c->d.CtxSetCurrent(c->ctx), "cuCtxSetCurrent", e) ||
	    rt_check(c, c->d.StreamCreate(&c->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate", e))
		goto fail;
	*out = c;
	return SN_OK;
fail:
	rt_cuda_close(c);
	return e->code;
}

void rt_cuda_close(rt_cuda *c)
{
	if (!c)
		return;
	if (c->stream)
		c->d.StreamDestroy(c->stream);
	if (c->ctx)
		c->d.DevicePrimaryCtxRelease(c->dev);
	if (c->lib)
		dlclose(c->lib);
	free(c);
}

/* Bytes of an element of each CUtensorMapDataType sinter writes. */
static unsigned tmap_esize(uint32_t t)
{
	switch (t) {
	case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 1;
	case CU_TENSOR_MAP_DATA_TYPE_UINT16:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
	case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 2;
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
	case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32: return 4;
	default: return 0;
	}
}

int rt_tmap_check(const cg_tmap *t, CUdeviceptr base, uint64_t bytes, sn_err *e)
{
	unsigned es = tmap_esize(t->dtype);
	if (!es || t->rank < 1 || t->rank > CG_TMAP_RANK || t->swizzle > CU_TENSOR_MAP_SWIZZLE_128B)
		return sn_errf(e, SN_EINPUT, "plan: a tensor map of a kind sinter does not write");
	/* the last byte the map can reach, with every dim at its extent */
	uint64_t last = 0;
	for (uint32_t d = 0; d < t->rank; d++) {
		uint64_t stride = d ? t->strides[d] : es;
		if (!t->dims[d] || t->dims[d] > (UINT64_C(1) << 32) || !t->box[d] || t->box[d] > 256 ||
		    (d && (stride % 16 || stride >= (UINT64_C(1) << 40))))
			return sn_errf(e, SN_EINPUT, "plan: a malformed tensor map (dim %u)", d);
		uint64_t span;
		if (__builtin_mul_overflow(t->dims[d] - 1, stride, &span) || __builtin_add_overflow(last, span, &last))
			return sn_errf(e, SN_EINPUT, "plan: a malformed tensor map (dim %u)", d);
	}
	if (last > bytes || bytes - last < es)
		return sn_errf(e, SN_EINPUT, "plan: a tensor map reaches past its buffer (%llu of %llu bytes)",
			       (unsigned long long)(last + es), (unsigned long long)bytes);
	if (base % 16)
		return sn_errf(e, SN_EINPUT, "plan: a tensor map over a buffer that is not 16-byte aligned");
	return SN_OK;
}

int rt_tmap_encode(const rt_cuda *c, const cg_tmap *t, CUdeviceptr base, uint64_t bytes, CUtensorMap *out, sn_err *e)
{
	if (rt_tmap_check(t, base, bytes, e))
		return e->code;
	if (!c->d.TensorMapEncodeTiled)
		return sn_errf(e, SN_EENV, "the CUDA driver is too old for TMA kernels: libcuda.so.1 lacks "
			       "cuTensorMapEncodeTiled (CUDA 12 or later)");
	cuuint64_t dims[CG_TMAP_RANK], strides[CG_TMAP_RANK];
	cuuint32_t box[CG_TMAP_RANK], one[CG_TMAP_RANK];
	for (uint32_t d = 0; d < t->rank; d++) {
		dims[d] = t->dims[d];
		strides[d] = d + 1 < t->rank ? t->strides[d + 1] : 0;
		box[d] = t->box[d];
		one[d] = 1;
	}
	return rt_check(c,
			c->d.TensorMapEncodeTiled(out, (CUtensorMapDataType)t->dtype, t->rank, (void *)(uintptr_t)base, dims,
						  strides, box, one, CU_TENSOR_MAP_INTERLEAVE_NONE,
						  (CUtensorMapSwizzle)t->swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
						  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
			"cuTensorMapEncodeTiled", e);
}
