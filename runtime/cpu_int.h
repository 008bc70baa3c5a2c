/* cpu_int.h: internal to the cpu runtime (runtime/cpu_*.c; not installed,
 * never included outside it): what its files share. cpu_pool.c holds the
 * thread pool; cpu_exec.c LLVM and ORC LLJIT loading, the loaded plan and
 * the executor (with the reference-interpreter fallback and the bf16
 * staging); cpu_gemm.c the products (OpenBLAS, the packed-weights
 * micro-kernel, bf16 products); cpu_conv.c the convolutions (im2col and
 * Winograd); cpu_ops.c attention, pooling and gather. Prefix of what is
 * not static: cpu_. */
#ifndef SINTER_CPU_INT_H
#define SINTER_CPU_INT_H

#include "runtime/cpu_exec.h"

#include <llvm-c/LLJIT.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* A generated kernel (codegen/cl_emit.c): rows [lo, hi); a convolution's
 * epilogue computes the columns [c0, c1) of each, other kernels whole rows */
typedef void kern_fn(void **bufs, int64_t lo, int64_t hi, int64_t c0, int64_t c1);

/* ---- thread pool (cpu_pool.c) ----
 * n - 1 workers and the caller take each round's chunks from one atomic
 * word (round, chunks, next chunk); the caller waits only for chunks
 * taken, never for a worker that has not taken one (a descheduled worker
 * costs the round nothing). Every wait spins for a bounded time (longer
 * while a run is in progress: cpu_pool_hot), then sleeps on a condition
 * variable (docs/PERF.md, "the pool under load"). One caller at a time. */
typedef void task_fn(void *ctx, int64_t lo, int64_t hi, int tid);

typedef struct pool {
	int n;               /* threads, the caller's included (tid 0; workers 1 .. n-1) */
	pthread_t *th;
	pthread_mutex_t mu;
	pthread_cond_t cv;   /* sleeping workers: a round published, a run begun, quit */
	pthread_cond_t done; /* the sleeping caller: the round's last chunk done */
	atomic_ullong job;   /* [round:32][chunks:16][next:16] */
	atomic_int ndone;    /* chunks of this round done */
	atomic_int sleepers; /* workers on cv */
	atomic_uint wake_gen;  /* bumped by cpu_pool_hot(on) */
	atomic_bool caller_waits; /* the caller is on done */
	atomic_bool quit;
	atomic_int nworker;  /* worker ids */
	atomic_int hot;      /* runs in progress (cpu_pool_hot) */
	/* the round's task: written before job publishes it */
	task_fn *fn;
	void *ctx;
	int64_t total, chunk;
	/* the caller's alone: a worker's chunk came late (cpu_pool.c) */
	int64_t solo_until; /* CLOCK_MONOTONIC ns: rounds until then run on the caller alone */
	int64_t solo_ns;    /* the next solo spell */
	int64_t nlate;      /* oversubscription seen: late chunks, a preempted caller */
	long nivcsw;        /* the caller's involuntary context switches at the run's start */
	int64_t run_t0;     /* the run's start (ns) */
} pool;

/* A pool of n threads (n - 1 workers; fewer if threads cannot be made).
 * NULL when out of memory. Free with cpu_pool_free. */
pool *cpu_pool_new(int n);
void cpu_pool_free(pool *p);

/* fn over [0, total) in chunks of at least min_chunk; returns when all
 * are done. */
void cpu_pool_for(pool *p, int64_t total, int64_t min_chunk, task_fn *fn, void *ctx);

/* A run begins (on: sleeping workers wake and spin for its first round;
 * between its rounds they spin longer before sleeping) or ends. */
void cpu_pool_hot(pool *p, bool on);

/* ---- OpenBLAS (cpu_blas.c) ----
 * Opened on first use with one thread (rt_cpu_blas_quiet); the runtime's
 * calls go through cblas_sgemm, cblas_sgemv and openblas_get_config,
 * defined there. */

/* Whether p has steps that call BLAS (products, convolutions, attention). */
bool cpu_plan_blas(const cl_plan *p);

/* OpenBLAS loaded, and the address space for the work buffers of
 * `threads` threads calling it (128 MiB each): else SN_EENV. */
int cpu_blas_ready(int threads, sn_err *e);

/* ---- the loaded plan ---- */

struct rt_cpu {
	cl_plan *p;
	LLVMOrcLLJITRef jit;
	kern_fn **fns;
	pool *pool;
	void *arena;
	void **addr;      /* per node, this run's */
	float **scratch;  /* per thread: im2col tiles, attention scores */
	size_t scratch_n;
	float **wino;     /* per step: a Winograd convolution's transformed weights, or a product's
			   * weights packed for pk_kernel (first run) */
	bool no_pack;     /* SINTER_CPU_PACK=0: products on weights by OpenBLAS (measurements) */
	bool no_wino;     /* SINTER_CPU_WINOGRAD=0: 3x3 convolutions by im2col (measurements) */
	bool no_spans;    /* runs record no trace span per step (rt_cpu_trace_steps) */
	int wino_m;       /* SINTER_CPU_WINOGRAD=2 or 4: that output block only (measurements); 0: by the map */
	float *stage;     /* bf16 steps: f32 copies of their operands and output (grown) */
	size_t stage_n;
};

/* ---- steps ---- */

/* A generated kernel over rows [lo, hi) (cpu_kern_task, on the pool). */
typedef struct kjob {
	kern_fn *fn;
	void **bufs;
	int64_t cols; /* a row's length (the step's inner) */
} kjob;

void cpu_kern_task(void *ctx, int64_t lo, int64_t hi, int tid);

static inline void *addr_of(rt_cpu *c, ir_ref r)
{
	return r == IR_NONE ? NULL : c->addr[r];
}

/* Whether r is a weight of the plan (through views). */
static inline bool is_weight(const rt_cpu *c, ir_ref r)
{
	if (r == IR_NONE)
		return false;
	while (c->p->vals[r].where == CL_VIEW)
		r = c->p->vals[r].index;
	return c->p->vals[r].where == CL_WEIGHT;
}

/* ---- weights packed once for pk_kernel (cpu_gemm.c): B in panels of
 * PK_NR columns, [N/16][K][16], C in PK_MR x PK_NR tiles, K blocks of
 * PK_KC, C blocks of PK_NCP panels. ---- */

#define PK_MR 6
#define PK_NR 16
#define PK_KC 256
#define PK_NCP 8
/* products of more rows (and convolutions of more pixels) stay on
 * OpenBLAS: measured slower here on ResNet-50's 56x56 and 28x28 maps
 * (3136 and 784 pixels), faster on 14x14 and 7x7 and GPT-2's 128 tokens */
#define PK_MAX_ROWS 256
#define PK_MC 192 /* rows per block (a product task's rows at most): whole 6-row tiles */

/* Whether the host has AVX2 and FMA (pk_kernel runs), found once. */
bool cpu_pk_host(void);

/* A buffer for weights packed or transformed on the first run (free()
 * frees it): aligned for pk_kernel's loads, and from 2 MiB on in 2 MiB
 * pages where the kernel gives them on request (a 17 MB Winograd U took
 * 4,000 page faults on its first write). */
void *cpu_weights_alloc(size_t n);

/* Each thread's scratch (c->scratch[i]) grown to need floats at least;
 * its contents are not kept. SN_EINTERNAL (out of memory, saying for
 * what) leaves every thread's scratch to be made again on the next call. */
int cpu_scratch(rt_cpu *c, size_t need, const char *what, sn_err *e);

typedef struct pkjob {
	const float *b; /* B as the graph has it: k x n, or n x k (trans) */
	float *bp;
	int64_t k, n;
	bool trans;
} pkjob;

/* panels [lo, hi) of B packed */
void cpu_pk_pack_task(void *ctx, int64_t lo, int64_t hi, int tid);

/* C (rows [0, m), row stride ldc) columns of panels [p0, p1) of bp (K x
 * N packed) = or += (add) A (m x K, row stride lda) times them, then the
 * activation on each block of panels while it is in cache; ap holds A
 * packed (m rounded up to 6, times K), by cpu_pk_tile itself when A is not
 * NULL, else by the caller. */
void cpu_pk_tile(const float *A, int64_t lda, int64_t m, int64_t K, const float *bp, int64_t N, int64_t p0,
		 int64_t p1, float *C, int64_t ldc, bool add, int act, float *ap);

/* ---- bf16 storage (--precision bf16): values are stored as bf16 and
 * computed in f32. Products convert their operands by tiles
 * (gemm_bf16_task, cpu_gemm.c); convolutions, attention and pooling run
 * their f32 code on f32 copies of their bf16 operands, staged for the
 * step and rounded back (run_staged, cpu_exec.c). Debian's OpenBLAS
 * declares cblas_sbgemm but is not built with it (BUILD_BFLOAT16), and
 * this host has no AVX512-BF16 to make it pay: the arithmetic is sgemm's.
 * Rounding: to nearest, ties to even, NaN kept quiet, as cl_emit.c's
 * stores and ir/wstore.c. ---- */

static inline float bf16_f(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static inline uint16_t f_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40u);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* ---- the steps the executor runs (rt_cpu_run, run_staged) ---- */

/* A product step (cpu_gemm.c): bf16 values by tiles, on weights packed
 * once (pk_ok), else by OpenBLAS. */
int cpu_run_product(rt_cpu *c, const cl_step *s, sn_err *e);
/* A convolution step (cpu_conv.c): Winograd, or im2col into products;
 * ebufs are its fused epilogue's buffers. */
int cpu_run_conv(rt_cpu *c, const cl_step *s, void **ebufs, sn_err *e);
/* Attention, pooling and gather steps (cpu_ops.c). */
int cpu_run_attn(rt_cpu *c, const cl_step *s, sn_err *e);
void cpu_run_pool(rt_cpu *c, const cl_step *s);
int cpu_run_gather(rt_cpu *c, const cl_step *s, sn_err *e);

#endif
