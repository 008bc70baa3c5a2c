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
 * written but for a state's, which a scatter updates in place: cl_lower.c,
 * docs/DESIGN.md, State), outputs[i] receive output i's bytes (not copied
 * when outputs[i] is where the value lies already). poison: intermediates
 * filled with NaN first (tests). */
int rt_cpu_run(rt_cpu *c, const void *const *inputs, void *const *outputs, bool poison, sn_err *e);
/* While a trace records (sn_trace_on), rt_cpu_run records each step that
 * computes as a span "op name" (name: rt_cpu_prof's) on the calling
 * thread's track, with the step's index and kind as arguments, unless
 * turned off here (a bench's timed calls: thousands of runs). */
void rt_cpu_trace_steps(rt_cpu *c, bool on);

/* One step of a profile (rt_cpu_profile), as sinter_profile_entry has it. */
typedef struct rt_cpu_prof {
	const char *name; /* what runs it: its LLVM function ("k12"), or "sgemm", "conv", "attention",
			   * "pool", "gather", "ref interpreter"; owned by the plan or static */
	const char *op;   /* the IR op of its core or root (owned by the plan) */
	double ms;        /* per call */
	double bytes;     /* each buffer it names, once */
	double flops;     /* products, convolutions and attention; else 0 */
	uint32_t step;    /* its index in the plan */
} rt_cpu_prof;
/* A per-step profile: the plan run once untimed, then iters times with
 * each step timed where it runs (the steps of a cpu plan run one after
 * another, each whole before the next starts: timed in place, a step is
 * timed alone). *prof (free it) gets one entry per step that computes
 * (views are left out), in plan order, times averaged over the calls; *n
 * their count. inputs and outputs as for rt_cpu_run. */
int rt_cpu_profile(rt_cpu *c, const void *const *inputs, void *const *outputs, int iters, rt_cpu_prof **prof,
		   size_t *n, sn_err *e);

#endif
