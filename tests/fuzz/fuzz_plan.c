/* fuzz_plan.c: libFuzzer target for the plan-file reader (plan-cache
 * entries and AOT packages). On a successful parse every cubin and the
 * weight image are read through (ASan sees any pointer outside the input)
 * and the plan is listed. The fuzz build skips the checksum
 * (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION), so mutations reach the
 * tables behind it. */
#include "codegen/cg.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);
	cg_plan *p = NULL;
	cg_plan_info info;
	sn_err e = {0};
	if (cg_plan_parse(buf, size, &p, &info, &e) == SN_OK) {
		volatile unsigned sum = 0;
		for (uint32_t i = 0; i < p->nkerns; i++)
			for (uint64_t k = 0; k < p->kerns[i].cubin_size; k++)
				sum += ((const uint8_t *)p->kerns[i].cubin)[k];
		for (uint64_t k = 0; k < p->weight_bytes; k++)
			sum += ((const uint8_t *)p->weights)[k];
		sn_buf b = {0};
		cg_plan_list(p, &b);
		sn_buf_free(&b);
		cg_plan_free(p);
	}
	free(buf);
	return 0;
}
