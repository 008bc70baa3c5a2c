/* cuda_tune_impl.h: what the autotuner's two halves share, internal to
 * autotune/: cuda_tune.c decides (items, candidates from records and from
 * lowering again, the winner patched into the plan and recorded) and
 * cuda_measure.c measures (random buffers, the numeric check against the
 * default, timing, NVRTC batches). Prefix: at_. */
#ifndef SINTER_CUDA_TUNE_IMPL_H
#define SINTER_CUDA_TUNE_IMPL_H

#include "autotune/at_tune.h"
#include "autotune/cuda_check.h"

#include "codegen/cg_render.h"
#include "runtime/cuda_blas.h"
#include "runtime/cuda_nvrtc.h"
#include "runtime/cuda_time.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct at_cand {
	cg_config asked;   /* AT_KERNEL: the config asked for (all zero: the default) */
	cg_config cfg;     /* AT_KERNEL: the config the renderer reports */
	cg_blas_algo algo; /* AT_BLAS */
	char name[64];
	char *src;
	unsigned grid[3], block[3], smem;
	uint32_t nargs;
	uint32_t args[CG_MAX_ARGS]; /* plan buffer ids */
	uint32_t ntmaps;            /* tensor maps over args (cg_kern's) */
	cg_tmap tmaps[CG_MAX_TMAPS];
	void *cubin;
	size_t cubin_size;
	double ms;
	bool ok; /* compiled, matched, timed (or, for a record, checked) */
	bool kern; /* AT_BLAS: the GEMM template's kernel (src, cubin, launch) instead of an algorithm */
} at_cand;

typedef struct at_item {
	at_kind kind;
	uint8_t spec[16];
	uint32_t kern; /* AT_KERNEL: the plan's kernel */
	uint32_t step; /* a plan step running it */
	uint32_t uses;
	double est;
	at_cand *c; /* c[0]: the default */
	size_t nc;
	bool record; /* c[1] (if any) is a stored record's choice: check it, do not time */
	bool want;   /* candidates wanted (no record) */
	bool rec_bad; /* the record's config is not one the renderer takes here */
	at_record rec;
	int chosen;  /* index into c, -1: none yet */
} at_item;

typedef struct at_tuner {
	const ir_graph *g;
	const cg_target *t;
	cg_plan *p;
	rt_cuda *c;
	at_store *st;
	const at_tune_opts *o;
	at_tune_stats *s;
	at_device dev;
	rt_nvrtc *nv;
	rt_timer *tm;
	rt_blas *blas;
	at_check *chk;   /* fill and compare on the device; NULL: on the host */
	void *chk_cubin; /* compiled with the first batch */
	size_t chk_size;
	double t0, budget, cap;
	uint64_t seed;
	size_t done, total;
	bool tty;
} at_tuner;

static inline bool at_same_algo(const cg_blas_algo *a, const cg_blas_algo *b)
{
	return a->id == b->id && a->tile == b->tile && a->stages == b->stages && a->splitk == b->splitk &&
	       a->reduction == b->reduction && a->swizzle == b->swizzle && a->custom == b->custom &&
	       a->inner == b->inner && a->cluster == b->cluster;
}

/* Measures item x's candidates, compiled (at_compile): each checked
 * against the default's output on random inputs, then timed unless a
 * record decides x. Only an unusable device is an error. */
int at_measure_kernel(at_tuner *tu, at_item *x, sn_err *e);
int at_measure_blas(at_tuner *tu, at_item *x, sn_err *e);
/* Compiles items[0..n)'s candidates that have no cubin yet in one NVRTC
 * batch (all of an item's when all[i], else its default; with plan, the
 * plan's other kernels and the check kernels too). */
void at_compile(at_tuner *tu, at_item *items, size_t n, const bool *all, bool plan);
/* Whether e is a device error that leaves the context unusable. */
bool at_fatal(const sn_err *e);

#endif
