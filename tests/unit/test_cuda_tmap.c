/* test_cuda_tmap.c: the checks a plan's TMA tensor maps pass before the
 * driver encodes them (runtime/cuda.c, rt_tmap_check): no GPU needed. */
#include "check.h"
#include "codegen/cg.h"
#include "runtime/cuda.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Tensor maps from a plan are checked against their buffer before the
 * driver sees them (runtime/cuda.c): what sinter writes passes, a map that
 * reaches one element past, a misaligned base, a bad stride, rank, box or
 * dtype are refused. */
static sn_err e;

/* rt_tmap_check with a fresh error (sn_errf keeps the first message) */
static int chk(const cg_tmap *t, CUdeviceptr base, uint64_t bytes, sn_err *unused)
{
	(void)unused;
	e = (sn_err){0};
	return rt_tmap_check(t, base, bytes, &e);
}

static void test_tmap_checks(void)
{
	/* A: K=96, M=64 bf16 rows, batch 5 of 6144 elements */
	cg_tmap ok = {.arg = 0, .dtype = 9, .rank = 3, .swizzle = 3, .dims = {96, 64, 5}, .strides = {0, 192, 12288},
		      .box = {64, 128, 1}};
	uint64_t need = (uint64_t)5 * 12288; /* bytes of 5 batches */
	CHECK(chk(&ok, 4096, need, &e) == SN_OK);
	CHECK(chk(&ok, 4096, need - 1, &e) == SN_EINPUT && strstr(e.msg, "past its buffer") != NULL);
	CHECK(chk(&ok, 4104, need, &e) == SN_EINPUT && strstr(e.msg, "aligned") != NULL);
	cg_tmap t = ok;
	t.strides[1] = 200; /* not a multiple of 16 */
	CHECK(chk(&t, 4096, need * 2, &e) == SN_EINPUT && strstr(e.msg, "malformed") != NULL);
	t = ok;
	t.rank = 6;
	CHECK(chk(&t, 4096, need, &e) == SN_EINPUT);
	t = ok;
	t.box[1] = 512;
	CHECK(chk(&t, 4096, need, &e) == SN_EINPUT);
	t = ok;
	t.dtype = 99;
	CHECK(chk(&t, 4096, need, &e) == SN_EINPUT);
	t = ok;
	t.dims[2] = 0;
	CHECK(chk(&t, 4096, need, &e) == SN_EINPUT);
	t = ok;
	t.dims[0] = UINT64_MAX; /* no overflow into a small extent */
	CHECK(chk(&t, 4096, need, &e) == SN_EINPUT);
}

int main(void)
{
	test_tmap_checks();
	return check_done("cuda_tmap");
}
