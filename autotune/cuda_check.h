/* cuda_check.h: the tuner's numeric check on the device. A candidate's
 * buffers are filled with random values there (no host buffer, no
 * upload), the default's results are kept there, and a candidate's are
 * compared with them there: only a count comes back. On a second machine
 * whose tuning records decide every kernel, checking each recorded choice
 * against the default is what is left of tuning, and doing it on the
 * host (fill, upload, download, compare tens of millions of elements per
 * kernel) took seconds for ResNet-50 batch 32. Prefix: at_. */
#ifndef SINTER_AT_CUDA_CHECK_H
#define SINTER_AT_CUDA_CHECK_H

#include "ir/ir.h"
#include "runtime/cuda_time.h"

/* The kernels' CUDA C (header-free, as every generated kernel): compiled
 * with the tuner's first NVRTC batch, under this job name. */
#define AT_CHECK_JOB "sn_at_check"
const char *at_check_src(void);

/* The kernels loaded from their cubin. Free with at_check_close. */
typedef struct at_check at_check;
int at_check_open(rt_cuda *c, const void *cubin, at_check **out, sn_err *e);
void at_check_close(at_check *k);

/* Whether dtype t can be filled and compared on the device (every dtype
 * but those of 16 bytes or more, which the tuner never sees). */
bool at_check_takes(ir_dtype t);
/* Fills n elements of t at p with values that make every op well defined:
 * floats of either sign in [2^-5, 2) (no zeros, no subnormals), integers
 * 1..9, bools 0 or 1; the same seed gives the same values. */
int at_check_fill(at_check *k, CUdeviceptr p, ir_dtype t, size_t n, uint64_t seed, sn_err *e);
/* How many of n elements of t differ between want and got: bit for bit
 * when rtol < 0; else as floats within rtol of each value (of the largest
 * |want| when scale), NaN matching NaN, infinities only themselves.
 * Non-float types compare bit for bit. Waits for the device. */
int at_check_diff(at_check *k, CUdeviceptr want, CUdeviceptr got, ir_dtype t, size_t n, double rtol, bool scale,
		  uint64_t *bad, sn_err *e);

#endif
