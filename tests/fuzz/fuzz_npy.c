/* fuzz_npy.c: libFuzzer target for the .npy and .npz readers (inflate and
 * the ZIP directory included). Inputs starting with a ZIP signature go to
 * npz_parse, the rest to npy_parse; a parsed array's bytes are all read
 * (so ASan sees a pointer outside its buffer) and its size is checked
 * against its shape. */
#include "frontend/npy.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void touch(const npy_array *a)
{
	uint64_t numel = 1;
	for (int d = 0; d < a->rank; d++)
		numel *= (uint64_t)a->shape[d];
	if (numel * ir_dtype_size(a->dtype) != a->nbytes)
		abort();
	volatile unsigned sum = 0;
	for (size_t k = 0; k < a->nbytes; k++)
		sum += ((const uint8_t *)a->data)[k];
	(void)sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes, so reading one past the end is caught. */
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);
	sn_err e = {0};
	if (size >= 2 && buf[0] == 'P' && buf[1] == 'K') {
		npy_array *a;
		size_t n;
		if (npz_parse(buf, size, "fuzz", &a, &n, &e) == SN_OK) {
			for (size_t i = 0; i < n; i++)
				touch(&a[i]);
			npy_free(a, n);
		}
	} else {
		npy_array a;
		if (npy_parse(buf, size, "fuzz", &a, &e) == SN_OK) {
			touch(&a);
			free(a.data);
		}
	}
	if (e.code && !e.msg[0])
		abort(); /* every refusal says why */
	free(buf);
	return 0;
}
