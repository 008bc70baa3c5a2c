/* fuzz_record.c: libFuzzer target for the tuning-record reader
 * (autotune/at.h): one record, and the same bytes as a record file's
 * body. A record that parses must write back to text that parses to the
 * same record (the checksum is over that canonical text). */
#include "autotune/at.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);
	at_record r;
	sn_err e = {0};
	if (at_record_parse(buf, size, &r, &e) == SN_OK) {
		sn_buf b = {0};
		at_record_write(&r, &b);
		at_record back;
		sn_err e2 = {0};
		if (!b.oom && (at_record_parse(b.s, b.len, &back, &e2) != SN_OK || back.ms != r.ms ||
			       memcmp(back.spec, r.spec, 16) || !at_device_eq(&back.dev, &r.dev)))
			abort(); /* the canonical text must read back */
		sn_buf_free(&b);
	}
	free(buf);
	return 0;
}
