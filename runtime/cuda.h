/* cuda.h: the CUDA driver, loaded at run time with dlopen so that a binary
 * built with the toolkit runs (on the CPU) where no driver is installed.
 * The only place that talks to the GPU. Prefix: rt_. */
#ifndef SINTER_RT_CUDA_H
#define SINTER_RT_CUDA_H

#include "ir/base.h"

#include <cuda.h>

/* The driver entry points sinter uses, resolved once by rt_cuda_open. */
typedef struct rt_driver {
	CUresult (*Init)(unsigned);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
	CUresult (*DeviceTotalMem)(size_t *, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*CtxSynchronize)(void);
	CUresult (*StreamCreate)(CUstream *, unsigned);
	CUresult (*StreamDestroy)(CUstream);
	CUresult (*StreamSynchronize)(CUstream);
	CUresult (*EventCreate)(CUevent *, unsigned);
	CUresult (*EventDestroy)(CUevent);
	CUresult (*EventRecord)(CUevent, CUstream);
	CUresult (*EventSynchronize)(CUevent);
	CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
	CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemAllocHost)(void **, size_t);
	CUresult (*MemFreeHost)(void *);
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
	CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
	CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
	CUresult (*ModuleLoadData)(CUmodule *, const void *);
	CUresult (*ModuleUnload)(CUmodule);
	CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
	CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
				 unsigned, unsigned, CUstream, void **, void **);
	CUresult (*StreamBeginCapture)(CUstream, CUstreamCaptureMode);
	CUresult (*StreamEndCapture)(CUstream, CUgraph *);
	CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
	CUresult (*GraphLaunch)(CUgraphExec, CUstream);
	CUresult (*GraphExecDestroy)(CUgraphExec);
	CUresult (*GraphDestroy)(CUgraph);
	CUresult (*GetErrorName)(CUresult, const char **);
	CUresult (*GetErrorString)(CUresult, const char **);
	/* optional (CUDA 12+): NULL when the driver lacks it */
	CUresult (*TensorMapEncodeTiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
					 const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
					 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
} rt_driver;

/* An open device: driver table, primary context, one stream. */
typedef struct rt_cuda {
	void *lib;
	rt_driver d;
	CUdevice dev;
	CUcontext ctx;
	CUstream stream;
	int sm;          /* compute capability as 10 * major + minor, e.g. 90 */
	int num_sms;
	int driver_version;
	size_t total_mem;
	char name[128];
} rt_cuda;

/* Loads libcuda.so.1 and opens device `ordinal`. SN_EENV with the reason
 * (no driver library, no device, driver error) when CUDA cannot be used.
 * Close with rt_cuda_close. */
int rt_cuda_open(int ordinal, rt_cuda **out, sn_err *e);
void rt_cuda_close(rt_cuda *c);

/* Turns a failed driver call into an error: "what: CUDA_ERROR_X (text)".
 * Returns SN_OK when r is CUDA_SUCCESS. */
int rt_check(const rt_cuda *c, CUresult r, const char *what, sn_err *e);

/* Encodes tensor map t (codegen/cg.h, cg_tmap) over the buffer at base,
 * of `bytes` bytes, into out. SN_EINPUT when the map would reach past the
 * buffer or is not one sinter writes (a plan from a hostile file), SN_EENV
 * when the driver has no cuTensorMapEncodeTiled. */
struct cg_tmap;
/* The checks alone (no driver needed): SN_EINPUT as above. */
int rt_tmap_check(const struct cg_tmap *t, CUdeviceptr base, uint64_t bytes, sn_err *e);
int rt_tmap_encode(const rt_cuda *c, const struct cg_tmap *t, CUdeviceptr base, uint64_t bytes, CUtensorMap *out,
		   sn_err *e);

#endif
