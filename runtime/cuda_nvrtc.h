/* cuda_nvrtc.h: NVRTC, loaded at run time with dlopen, turns generated CUDA
 * C into cubins for one arch; works with no GPU present. rt_compile_all is
 * the batch entry point: deduplication of identical sources, the kernel
 * cache (runtime/kcache.h) and parallel compilation. Prefix: rt_. */
#ifndef SINTER_RT_CUDA_NVRTC_H
#define SINTER_RT_CUDA_NVRTC_H

#include "ir/base.h"

/* The fixed NVRTC options besides the arch (one string: it is part of the
 * kernel cache key). Sources are self-contained, so no include paths. */
#define RT_NVRTC_FLAGS "-default-device --std=c++17 -lineinfo"

typedef struct rt_nvrtc rt_nvrtc;

/* Loads NVRTC (libnvrtc.so.13, .12, libnvrtc.so, then the same under
 * /usr/local/cuda/lib64). SN_EENV with the reason when it cannot be
 * loaded. Close with rt_nvrtc_close. */
int rt_nvrtc_open(rt_nvrtc **out, sn_err *e);
void rt_nvrtc_close(rt_nvrtc *n);
void rt_nvrtc_version(const rt_nvrtc *n, int *major, int *minor);
/* The version as one number for cache keys: 1000 * major + 10 * minor. */
int rt_nvrtc_version_code(const rt_nvrtc *n);
/* The version code of the NVRTC rt_nvrtc_open would load, without
 * opening it for use (cheap; cached); 0 when there is none. */
int rt_nvrtc_lib_version(void);
/* The path of the library that was loaded (for messages). */
const char *rt_nvrtc_path(const rt_nvrtc *n);

/* Compiles one source (named `name`, which must be a plain file name:
 * letters, digits, '_', '-', '.') to a cubin for sm_<sm>. On success
 * *cubin is malloc'ed (free it) and *size its length. A compile error is
 * SN_EINTERNAL (generated code that does not compile is a bug of sinter):
 * "nvrtc: kernel NAME failed to compile for sm_XX; source written to
 * PATH\n<NVRTC log>", PATH being dump_dir/NAME.cu, or a fresh
 * /tmp/sinter-NAME-XXXXXX.cu when dump_dir is NULL. Thread safe. */
int rt_nvrtc_compile(rt_nvrtc *n, const char *name, const char *src, int sm, void **cubin, size_t *size,
		     const char *dump_dir, sn_err *e);

/* Whether SINTER_NVRTC_STRICT is set (not "0"): every compile also asks
 * ptxas for its resource report and fails (SN_EINTERNAL, naming the
 * kernel) when the kernel spills registers or ptxas serialized its wgmma
 * (C7510). CI's compile tests run so; users' compiles do not pay for it. */
bool rt_nvrtc_strict(void);

typedef struct rt_job {
	const char *name; /* in: the kernel's name (see rt_nvrtc_compile) */
	const char *src;  /* in: its CUDA C source */
	void *cubin;      /* out: malloc'ed, freed by rt_jobs_free */
	size_t size;      /* out */
	bool hit;         /* out: came from the kernel cache */
} rt_job;

typedef struct rt_compile_stats {
	size_t unique;   /* distinct sources */
	size_t hits;     /* of those, found in the kernel cache */
	size_t compiled; /* of those, compiled by NVRTC */
	size_t corrupt;  /* cache entries found corrupt (deleted, recompiled) */
	double seconds;  /* wall time of the whole call */
} rt_compile_stats;

/* Compiles every job for sm: identical sources compile once and each job
 * gets its own malloc'ed copy of the cubin; through the kernel cache in
 * cache_dir (NULL or "": no cache); in parallel on nthreads pthreads (0: all
 * cores). dump_dir (or NULL): every job's source is also written there as
 * NAME.cu. warn(ctx, msg) (may be NULL) receives, on the calling thread
 * after the work is done, each cache corruption report and cache I/O
 * failure (the cache is then bypassed: an unusable cache never fails a
 * compile). On error the first failing job's message is returned and no
 * job holds a cubin. stats may be NULL. */
int rt_compile_all(rt_nvrtc *n, rt_job *jobs, size_t njobs, int sm, const char *cache_dir, int nthreads,
		   const char *dump_dir, void (*warn)(void *, const char *), void *ctx, rt_compile_stats *stats,
		   sn_err *e);
/* Frees the jobs' cubins (not the array) and clears them. */
void rt_jobs_free(rt_job *jobs, size_t njobs);

#endif
