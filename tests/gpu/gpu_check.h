/* gpu_check.h: the GPU tests' harness. gpu_compare runs a graph on the
 * reference interpreter and on CUDA with the same fresh random inputs and
 * params, the CUDA arena poisoned with NaN bytes first, and checks the
 * relative L2 error of every output (NaN in either fails). */
#ifndef SINTER_GPU_CHECK_H
#define SINTER_GPU_CHECK_H

#include "ir/ir.h"

/* The exit code of a GPU test that was skipped (no device, no NVRTC, a
 * device the test does not apply to): ctest's SKIP_RETURN_CODE for every
 * GPU test (tests/gpu.cmake), so a skip is counted as one, not as a pass.
 * The test prints "skipped: why" first. */
#define GPU_SKIP 77
/* Opens the device once; false (after printing "skipped: no CUDA device
 * (reason)") when there is none. With a device it prints the seed of the
 * random inputs: $SINTER_TEST_SEED when set (a failure is replayed with
 * the seed it printed), else the time. */
bool gpu_available(void);
/* The seed of the test's random draws: $SINTER_TEST_SEED when set, else
 * the time; drawn and printed once ("seed N (SINTER_TEST_SEED=N replays
 * it)"), the same value after. */
uint64_t gpu_seed(void);
/* Compares; prints one line "label: rel L2 x (tol y) ok|FAIL"; returns
 * true when within tol. Takes ownership of g. */
bool gpu_compare(ir_graph *g, double tol, const char *label);
/* Relative L2 bound per dtype for a single op: f32 1e-5, f16 2e-3, bf16 1e-2. */
double gpu_tol(ir_dtype t);
/* The stages a compile runs, for a graph: lowering into a plan (vals as for
 * ref_run), NVRTC, load on dev (arena poisoned), one run with ins (the
 * graph's inputs in order); outs[i].data is malloc'ed. */
struct rt_cuda;
int gpu_build_run(struct rt_cuda *dev, const ir_graph *g, const ir_tensor *vals, const ir_tensor *ins, bool tf32,
		  ir_tensor *outs, sn_err *e);
/* Set by a test, read by gpu_compare and gpu_build_run: the target's tf32
 * flag (fp32 contractions may round operands to TF32), and a hook called
 * on every plan after lowering and before NVRTC (NULL: none), where a test
 * may re-render steps with a config or a fusion epilogue. Buffer i of a
 * plan is node i's. */
struct cg_plan;
extern bool gpu_tf32;
/* the plans gpu_compare builds are unfused (buffer i is node i's, for a
 * gpu_plan_hook that re-renders a step) and keep 1x1 convs on kernels */
extern bool gpu_plain_plan;
extern int (*gpu_plan_hook)(const ir_graph *g, struct cg_plan *p, sn_err *e);
/* Set by a test (NULL: none): the target's pick hook (cg_target.pick), so
 * a test may ask every kernel for a config while lowering. */
struct cg_config;
extern bool (*gpu_pick)(void *ctx, const uint8_t spec[16], const struct cg_config *def, struct cg_config *want);
/* The device gpu_available opened (NULL: none). */
struct rt_cuda *gpu_device(void);
/* Its compute capability as 80, 90, ... (0: none). */
int gpu_device_sm(void);
/* Makes gpu_build_run also time the plan: `iters` launches after 10 of
 * warm-up, the median into *median_ms (0 iters: off). */
void gpu_set_timing(int iters, double *median_ms);
/* Exit code of a GPU test: 0 when everything passed (and every graph was
 * built), GPU_SKIP when there was no device. */
int gpu_done(void);

/* Graph building for the tests. Every builder call takes &gpu_err; a graph
 * the builder refused (a bug of the test) is reported by gpu_built or
 * gpu_run, freed, and counted, which fails gpu_done. */
extern sn_err gpu_err;
ir_shape gpu_shape(int rank, const int64_t *d);
#define GPU_SHAPE(...) gpu_shape((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define GPU_INTS(...) ((ir_ints){(int32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}})
ir_ref gpu_in(ir_graph *g, const char *name, ir_dtype t, ir_shape s);
ir_ref gpu_op1(ir_graph *g, ir_op op, ir_ref a, const ir_attrs *at);
ir_ref gpu_op2(ir_graph *g, ir_op op, ir_ref a, ir_ref b);
/* True when r was built; otherwise prints "label FAIL: builder: why",
 * frees g, clears gpu_err and counts the failure. */
bool gpu_built(ir_graph *g, ir_ref r, const char *label);
/* gpu_built, then g with output r to gpu_compare. */
void gpu_run(ir_graph *g, ir_ref r, double tol, const char *label);

#endif
