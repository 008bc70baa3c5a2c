/* fuzz_safetensors.c: libFuzzer target for the safetensors reader. On a
 * successful parse every entry's bytes are read (so ASan sees any pointer
 * outside the input) and small entries are converted with st_read_as. */
#include "frontend/safetensors.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes, so reading one past the end is caught. */
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);
	st_file *f;
	sn_err e = {0};
	if (st_parse(buf, size, "fuzz", &f, &e) == SN_OK) {
		static double scratch[4096];
		volatile unsigned sum = 0;
		for (size_t i = 0; i < st_count(f); i++) {
			const st_entry *en = st_get(f, i);
			const uint8_t *p = en->data;
			for (size_t k = 0; k < en->nbytes; k++)
				sum += p[k];
			if (st_find(f, en->name) != en)
				abort();
			if (st_numel(en) <= 512) {
				for (int t = 0; t < IR_NDTYPES; t++) {
					sn_err e2 = {0};
					if (st_read_as(en, (ir_dtype)t, scratch, &e2) != SN_OK)
						abort();
				}
			}
		}
		for (size_t i = 0; i < st_meta_count(f); i++)
			sum += (unsigned)strlen(st_meta_key(f, i)) + (unsigned)strlen(st_meta_value(f, i));
		(void)sum;
		st_close(f);
	} else if (e.code != SN_EINPUT || !e.msg[0]) {
		abort();
	}
	free(buf);
	return 0;
}
