/* at_tune.h: the autotuner (max-autotune). Driven by the API, it drives
 * codegen (rendering a kernel again with another cg_config) and the
 * runtime (compiling candidates with NVRTC in parallel, timing them alone
 * on the device); neither calls it. For every kernel of a plan that has a
 * search space (generated kernels' configs, at_space; cuBLASLt products'
 * algorithms from the heuristic's top candidates and, against them, the
 * GEMM template's configs, at_gemm_space), the choice
 * comes from a tuning record when one is stored for this device, else from
 * timing the candidates within a time budget; the winner goes into the
 * plan and into a record. Prefix: at_. */
#ifndef SINTER_AT_TUNE_H
#define SINTER_AT_TUNE_H

#include <stdio.h>

#include "autotune/at.h"
#include "runtime/cuda.h"

/* The whole model's default budget (seconds of tuning), and each kernel's. */
#define AT_DEFAULT_BUDGET_S 20.0
#define AT_DEFAULT_KERNEL_CAP_S 2.0

enum {
	AT_PROGRESS_AUTO,    /* a bar when `out` is a terminal, else one summary line */
	AT_PROGRESS_BAR,
	AT_PROGRESS_SUMMARY,
	AT_PROGRESS_JSON,    /* one JSON object per line: progress, then the summary */
	AT_PROGRESS_NONE,
};

typedef struct at_tune_opts {
	double budget_s;     /* 0: AT_DEFAULT_BUDGET_S */
	double kernel_cap_s; /* 0: AT_DEFAULT_KERNEL_CAP_S */
	int progress;        /* AT_PROGRESS_* */
	FILE *out;           /* progress goes here; NULL: stderr */
	const char *cache_dir; /* the kernel cache for candidates' cubins (NULL: none) */
	void (*warn)(void *, const char *);
	void *ctx;
} at_tune_opts;

typedef struct at_tune_stats {
	size_t tunable;      /* unique kernels and products with a search space */
	size_t from_records; /* decided by a stored record: no timing */
	size_t tuned;        /* decided by timing now */
	size_t untuned;      /* left at the default: budget spent, or no candidate */
	size_t candidates;   /* candidates timed */
	size_t timings;      /* timing runs (each the median of several launches) */
	size_t failed;       /* candidates scored out: compile, launch, numeric check, too slow */
	size_t rejected;     /* records rejected: unreadable, or a choice this build cannot make */
	double seconds;
	double default_ms, tuned_ms; /* device time of the tunable steps, default and chosen */
	bool budget_out;
	uint8_t (*specs)[16]; /* the tunable specs, each once (malloc'ed: at_tune_stats_free) */
	size_t nspecs;
} at_tune_stats;
void at_tune_stats_free(at_tune_stats *s);

/* The generated kernels' search space, most promising first: every
 * kernel is asked for each of these configs (cg_target.pick) and its
 * renderer takes what it can. */
extern const cg_config at_space[];
extern const size_t at_space_n;
/* The GEMM template's configs, asked of every product cuBLASLt runs: its
 * kernels are candidates against cuBLASLt's algorithms (a winner is a
 * record of kind AT_GEMM, and the plan's product step becomes a launch). */
extern const cg_config at_gemm_space[];
extern const size_t at_gemm_space_n;

/* The device key of c: name, SM, driver, NVRTC and cuBLASLt versions. */
void at_device_of(const rt_cuda *c, at_device *d);

/* Tunes plan p, lowered from g for t on device c: each tunable kernel's
 * config and each product's algorithm, from records in st or by timing.
 * Patches p (kernels' sources, names and configs; launches' geometry;
 * products' algorithms) and writes records for what it timed. Candidates
 * that fail are scored out; only an unusable device is an error. */
int at_tune_plan(const ir_graph *g, const cg_target *t, cg_plan *p, rt_cuda *c, at_store *st,
		 const at_tune_opts *o, at_tune_stats *s, sn_err *e);

#endif
