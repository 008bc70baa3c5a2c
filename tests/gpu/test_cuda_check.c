/* test_cuda_check.c: the tuner's device-side fill and compare
 * (autotune/cuda_check.h), per dtype: the fill is deterministic in its
 * seed and draws from the documented ranges (read back and checked on the
 * host), an identical copy compares equal, and a copy with one element
 * changed (at a random place) is counted as one difference, bit for bit
 * and within a tolerance; a change below the tolerance is not counted. */
#include "autotune/cuda_check.h"
#include "gpu_check.h"
#include "runtime/cuda_nvrtc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;
#define EXPECT(c)                                                                  \
	do {                                                                       \
		if (!(c)) {                                                        \
			fails++;                                                   \
			printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);        \
		}                                                                  \
	} while (0)

int main(void)
{
	if (!gpu_available())
		return GPU_SKIP;
	rt_cuda *c = gpu_device();
	rt_nvrtc *nv = NULL;
	sn_err e = {0};
	void *cubin = NULL;
	size_t size = 0;
	at_check *k = NULL;
	if (rt_nvrtc_open(&nv, &e) || rt_nvrtc_compile(nv, AT_CHECK_JOB, at_check_src(), c->sm, &cubin, &size, NULL, &e) ||
	    at_check_open(c, cubin, &k, &e)) {
		printf("FAIL: %s\n", e.msg);
		return 1;
	}
	srand((unsigned)gpu_seed());
	const size_t n = 100003; /* not a multiple of a block */
	for (int t = 0; t < IR_NDTYPES; t++) {
		ir_dtype dt = (ir_dtype)t;
		EXPECT(at_check_takes(dt));
		size_t es = ir_dtype_size(dt), bytes = n * es;
		CUdeviceptr a = 0, b = 0;
		unsigned char *h = malloc(bytes), *h2 = malloc(bytes);
		uint64_t seed = ((uint64_t)rand() << 32) ^ (uint64_t)rand();
		if (!h || !h2 || rt_dev_alloc(c, bytes, &a, &e) || rt_dev_alloc(c, bytes, &b, &e) ||
		    at_check_fill(k, a, dt, n, seed, &e) || at_check_fill(k, b, dt, n, seed, &e) ||
		    rt_dev_download(c, h, a, bytes, &e) || rt_dev_download(c, h2, b, bytes, &e)) {
			printf("FAIL %s: %s\n", ir_dtype_name(dt), e.msg);
			return 1;
		}
		/* deterministic, in range, and not constant */
		EXPECT(!memcmp(h, h2, bytes));
		double lo = INFINITY, hi = 0;
		size_t distinct_first = 0;
		for (size_t i = 0; i < n; i++) {
			double v = ir_load(dt, h, i);
			if (ir_dtype_is_float(dt)) {
				EXPECT(fabs(v) >= 0x1p-5 && fabs(v) < 2);
			} else if (dt == IR_BOOL) {
				EXPECT(v == 0 || v == 1);
			} else {
				EXPECT(v >= 1 && v <= 9 && v == floor(v));
			}
			if (fabs(v) < lo)
				lo = fabs(v);
			if (fabs(v) > hi)
				hi = fabs(v);
			distinct_first += memcmp(h + i * es, h, es) != 0;
		}
		EXPECT(distinct_first > n / 3);
		uint64_t bad = 99;
		EXPECT(at_check_diff(k, a, b, dt, n, -1, false, &bad, &e) == SN_OK && bad == 0);
		EXPECT(at_check_diff(k, a, b, dt, n, 1e-2, true, &bad, &e) == SN_OK && bad == 0);
		/* one element changed: counted bit for bit and beyond a tolerance */
		size_t at = (size_t)rand() % n;
		double v = ir_load(dt, h, at);
		ir_store(dt, h2, at, ir_dtype_is_float(dt) ? -v : dt == IR_BOOL ? 1 - v : v == 1 ? 2 : 1);
		EXPECT(rt_dev_upload(c, b, h2, bytes, &e) == SN_OK);
		EXPECT(at_check_diff(k, a, b, dt, n, -1, false, &bad, &e) == SN_OK && bad == 1);
		EXPECT(at_check_diff(k, a, b, dt, n, 0.1, false, &bad, &e) == SN_OK && bad == 1);
		if (dt == IR_F32 || dt == IR_BF16 || dt == IR_F16) {
			/* a change of one unit in the last place is within 2e-2, not bit for bit */
			memcpy(h2, h, bytes);
			if (es == 4) {
				uint32_t u;
				memcpy(&u, h2 + at * 4, 4);
				u ^= 1;
				memcpy(h2 + at * 4, &u, 4);
			} else {
				uint16_t u;
				memcpy(&u, h2 + at * 2, 2);
				u ^= 1;
				memcpy(h2 + at * 2, &u, 2);
			}
			EXPECT(rt_dev_upload(c, b, h2, bytes, &e) == SN_OK);
			EXPECT(at_check_diff(k, a, b, dt, n, -1, false, &bad, &e) == SN_OK && bad == 1);
			EXPECT(at_check_diff(k, a, b, dt, n, 2e-2, false, &bad, &e) == SN_OK && bad == 0);
			EXPECT(at_check_diff(k, a, b, dt, n, 2e-2, true, &bad, &e) == SN_OK && bad == 0);
			/* NaN against a number differs; NaN against NaN does not */
			ir_store(dt, h2, at, NAN);
			EXPECT(rt_dev_upload(c, b, h2, bytes, &e) == SN_OK);
			EXPECT(at_check_diff(k, a, b, dt, n, 2e-2, false, &bad, &e) == SN_OK && bad == 1);
			EXPECT(rt_dev_upload(c, a, h2, bytes, &e) == SN_OK);
			EXPECT(at_check_diff(k, a, b, dt, n, 2e-2, false, &bad, &e) == SN_OK && bad == 0);
		}
		printf("%-7s fill |x| in [%g, %g], compare ok\n", ir_dtype_name(dt), lo, hi);
		rt_dev_free(c, a);
		rt_dev_free(c, b);
		free(h);
		free(h2);
	}
	at_check_close(k);
	free(cubin);
	rt_nvrtc_close(nv);
	printf("check: %s\n", fails ? "FAIL" : "all passed");
	return fails != 0;
}
