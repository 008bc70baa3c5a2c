/* cuda_time.h: one step alone on the device, for the autotuner: device
 * buffers filled with random data, a kernel loaded from a cubin and
 * launched with given buffers, and a timer that takes the median of
 * several runs, each after flushing the L2 cache (so a candidate is not
 * flattered by its inputs staying in cache from the last run). The
 * runtime never calls the autotuner; the autotuner calls these. Prefix: rt_. */
#ifndef SINTER_RT_CUDA_TIME_H
#define SINTER_RT_CUDA_TIME_H

#include "runtime/cuda.h"

#define RT_TIME_MAX_REPS 32

/* Device memory of n bytes (256-byte aligned). Free with rt_dev_free. */
int rt_dev_alloc(rt_cuda *c, size_t n, CUdeviceptr *out, sn_err *e);
void rt_dev_free(rt_cuda *c, CUdeviceptr p);
/* Synchronous copies. */
int rt_dev_upload(rt_cuda *c, CUdeviceptr dst, const void *src, size_t n, sn_err *e);
int rt_dev_download(rt_cuda *c, void *dst, CUdeviceptr src, size_t n, sn_err *e);

/* Copies n bytes on the device (on c's stream). */
int rt_dev_copy(rt_cuda *c, CUdeviceptr dst, CUdeviceptr src, size_t n, sn_err *e);
/* Sets n bytes at p to byte v (on c's stream). */
int rt_dev_fill(rt_cuda *c, CUdeviceptr p, unsigned char v, size_t n, sn_err *e);

/* A kernel loaded from its cubin. Free with rt_kfn_free. */
typedef struct rt_kfn rt_kfn;
int rt_kfn_load(rt_cuda *c, const void *cubin, const char *name, unsigned smem, rt_kfn **out, sn_err *e);
void rt_kfn_free(rt_kfn *k);
/* Enqueues one launch on c's stream with args[0..nargs) as its pointer
 * parameters. */
int rt_kfn_launch(rt_kfn *k, const unsigned grid[3], const unsigned block[3], unsigned smem,
		  const CUdeviceptr *args, unsigned nargs, sn_err *e);
/* The same with the tensor maps tm[0..ntm) after the pointers. */
int rt_kfn_launch_tm(rt_kfn *k, const unsigned grid[3], const unsigned block[3], unsigned smem,
		     const CUdeviceptr *args, unsigned nargs, const CUtensorMap *tm, unsigned ntm, sn_err *e);

/* The timer: events and an L2-flush buffer (twice the L2 cache). Free
 * with rt_timer_close. */
typedef struct rt_timer rt_timer;
int rt_timer_open(rt_cuda *c, rt_timer **out, sn_err *e);
void rt_timer_close(rt_timer *t);
/* Runs launch(ctx) reps times (at most RT_TIME_MAX_REPS) on c's stream,
 * each after an L2 flush and between two events, then waits: *median_ms
 * is the median device time, *max_ms the slowest. An error from launch or
 * from the device (a crash) is returned. */
int rt_time(rt_timer *t, int (*launch)(void *ctx, sn_err *e), void *ctx, int reps, double *median_ms,
	    double *max_ms, sn_err *e);
/* Waits for c's stream. */
int rt_sync(rt_cuda *c, sn_err *e);

#endif
