/* cpu_exec.h: the CPU runtime (--device cpu). Loads a CPU plan
 * (codegen/cl.h): its LLVM module optimized for the host CPU with the new
 * pass manager (default<O3>), compiled to an object file and linked by ORC
 * LLJIT, the object kept in the kernel cache keyed by the module's text and
 * the host's CPU and features (so a second process runs no LLVM pass);
 * then runs it: an arena of plan->arena_bytes, the steps in order, each
 * split over a thread pool sized to the cores, products through OpenBLAS
 * (cblas_sgemm), fallback steps on the reference interpreter. Unlike the
 * CUDA runtime it reads the plan's graph: fallback steps and convolutions
 * take their nodes from it. Prefix: rt_cpu_. */
#ifndef SINTER_CPU_EXEC_H
#define SINTER_CPU_EXEC_H

#include "codegen/cl.h"

typedef struct rt_cpu rt_cpu;

typedef struct rt_cpu_stats {
	double opt_s;   /* LLVM passes and code generation (0 on a cache hit) */
	double jit_s;   /* LLJIT: linking the object, looking functions up */
	bool obj_hit;   /* the object came from the cache */
	int threads;
} rt_cpu_stats;

/* Loads p (taken: freed by rt_cpu_free, or here on failure). A plan from
 * an AOT package (p->obj) links its objects: no LLVM pass, no cache; its
 * host is checked first (rt_cpu_host_check). p->keep_obj: the objects'
 * bytes are kept in p->obj (to write a package). cache_dir
 * may be NULL (no object cache). threads: 0 for the cores this process
 * may use. warn (may be NULL) receives cache corruption reports. Free
 * with rt_cpu_free. LLVM's failures are SN_EINTERNAL with its message. */
int rt_cpu_load(cl_plan *p, const char *cache_dir, int threads, void (*warn)(void *, const char *), void *warn_ctx,
		rt_cpu_stats *st, rt_cpu **out, sn_err *e);
void rt_cpu_free(rt_cpu *c);
/* Loads OpenBLAS with one thread (runtime/cpu_blas.c: sinter is not
 * linked with it, so that no command starts its worker threads; the cpu
 * device calls BLAS on one thread): first thing in a cpu compile, and in
 * rt_cpu_load. Idempotent; a failure to load is reported by rt_cpu_load. */
void rt_cpu_blas_quiet(void);
/* What the host's compiled code depends on, for the plan cache's key:
 * "llvm 16 TRIPLE CPU FEATURES openblas CONFIG", appended to b. */
void rt_cpu_host(sn_buf *b);
const cl_plan *rt_cpu_plan(const rt_cpu *c);
/* Whether objects compiled for objects_host (rt_cpu_host's text, from an
 * AOT package) run here: the same target triple, and every CPU feature
 * they were compiled with present on this CPU. SN_EENV with both hosts
 * named when not. rt_cpu_load checks a plan with objects of its own. */
int rt_cpu_host_check(const char *objects_host, sn_err *e);

/* Runs the plan: inputs[i] the model's input i (borrowed, never
 * written), outputs[i] receive output i's bytes. poison: intermediates
 * filled with NaN first (tests). */
int rt_cpu_run(rt_cpu *c, const void *const *inputs, void *const *outputs, bool poison, sn_err *e);

#endif
