/* fault.h: fault injection for tests, in the manner of SQLite's and Lua's
 * harnesses. Built only with -DSINTER_FAULT=ON, which force-includes this
 * header into every library source: malloc, calloc, realloc, strdup and
 * strndup then go through sn_fault_alloc_hit(), ir/file.c asks
 * sn_fault_file_hit() before every system call it makes, and the tables
 * of dlopen'ed entry points (runtime/cuda.c, cuda_blas.c, cuda_nvrtc.c) get
 * wrappers that ask sn_fault_cuda_hit() / sn_fault_nvrtc_hit() before
 * every call that acquires or computes something (never before a release:
 * cuMemFree, cuModuleUnload, nvrtcDestroyProgram, ... and the error-string
 * lookups always run).
 *
 * Environment (read once, here and nowhere else):
 *   SINTER_FAULT_ALLOC=N   the N-th allocation fails (returns NULL)
 *   SINTER_FAULT_FILE=N    the N-th file operation fails with EIO
 *   SINTER_FAULT_CUDA=N    the N-th CUDA driver or cuBLASLt call fails (CUDA_ERROR_OUT_OF_MEMORY
 *                          for allocations, CUDA_ERROR_UNKNOWN otherwise; cuBLASLt:
 *                          CUBLAS_STATUS_ALLOC_FAILED, EXECUTION_FAILED for a matmul), not made
 *   SINTER_FAULT_NVRTC=N   the N-th NVRTC call fails (NVRTC_ERROR_OUT_OF_MEMORY), not made
 *   SINTER_FAULT_COUNT=1   print the counts at exit: "sinter-fault: A allocations,
 *                          F file operations, C CUDA calls, V NVRTC calls"
 *   SINTER_FAULT_TRACE=1   print the stack where the failure is injected (ASan builds)
 * A failure is injected once; later calls succeed (the code must handle
 * one failure cleanly wherever it lands). Prefix: sn_fault_. */
#ifndef SINTER_FAULT_H
#define SINTER_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

bool sn_fault_alloc_hit(void);
bool sn_fault_file_hit(void);
bool sn_fault_cuda_hit(void);
bool sn_fault_nvrtc_hit(void);

void *sn_fault_malloc(size_t n);
void *sn_fault_calloc(size_t n, size_t k);
void *sn_fault_realloc(void *p, size_t n);
char *sn_fault_strdup(const char *s);
char *sn_fault_strndup(const char *s, size_t n);

#ifdef SINTER_FAULT
#define malloc(n) sn_fault_malloc(n)
#define calloc(n, k) sn_fault_calloc(n, k)
#define realloc(p, n) sn_fault_realloc(p, n)
#define strdup(s) sn_fault_strdup(s)
#define strndup(s, n) sn_fault_strndup(s, n)
#endif

#endif
