/* fuzz_kcache.c: libFuzzer target for the kernel cache's entry reader
 * (kc_get), which reads what any member of a shared cache may have
 * written. The input is written as the entry of the key its header names
 * (bytes 32-47; zeros when shorter) and looked up. Any content must be a
 * hit, a miss or a corrupt entry, never a crash; a hit must be exactly the
 * payload the header describes (size and XXH3-64 checked again here), and
 * a corrupt entry is reported and deleted. A broken property aborts. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "runtime/kcache.h"

#include <xxhash.h>

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb, (void)flag, (void)f;
	return remove(p), 0;
}

/* the folder goes at exit, whatever it holds */
static void cleanup(void)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "/tmp/sinter-fuzz-kcache-XXXXXX");
		if (!mkdtemp(dir))
			abort();
		atexit(cleanup);
	}
	uint8_t key[KC_KEY_SIZE] = {0};
	if (size >= KC_HEADER_SIZE)
		memcpy(key, data + 32, KC_KEY_SIZE);
	char path[4096], sub[4096];
	sn_err e = {0};
	if (kc_entry_path(dir, key, path, sizeof path, &e) != SN_OK)
		abort();
	/* the entry's folders, as kc_put makes them */
	snprintf(sub, sizeof sub, "%s/kernels", dir);
	mkdir(sub, 0700);
	snprintf(sub, sizeof sub, "%s", path);
	*strrchr(sub, '/') = 0;
	mkdir(sub, 0700);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	void *out = NULL;
	size_t n = 0;
	kc_status st;
	int rc = kc_get(dir, key, &out, &n, &st, &e);
	if (rc != SN_OK)
		abort(); /* a regular file of ours is always readable */
	if (st.state == KC_HIT) {
		if (size < KC_HEADER_SIZE || !out || le64(data + 16) != n || size != KC_HEADER_SIZE + n ||
		    memcmp(out, data + KC_HEADER_SIZE, n) != 0 || XXH3_64bits(out, n) != le64(data + 24))
			abort();
	} else if (st.state == KC_CORRUPT) {
		if (out || !st.msg[0] || access(path, F_OK) == 0)
			abort(); /* reported and deleted */
	} else {
		abort(); /* the entry is there: never a miss */
	}
	free(out);
	unlink(path);
	return 0;
}
