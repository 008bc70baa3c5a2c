/* test_kcache.c: the kernel cache: key, layout, round trip, every kind of
 * corruption detected, reported, deleted and rebuilt, concurrent writers
 * and readers in several processes, stats and clear, a directory in an
 * entry's place. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "runtime/kcache.h"

#include "check.h"

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char root[256];

/* Deterministic, non-trivial bytes (no zero runs) for key index i. */
static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 12345;
	for (size_t j = 0; j < n; j++) {
		x = x * 1664525u + 1013904223u;
		p[j] = (uint8_t)(x >> 24);
	}
}

static size_t file_size(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 ? (size_t)sb.st_size : (size_t)-1;
}

static bool exists(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0;
}

static void key_of(int i, uint8_t key[KC_KEY_SIZE])
{
	char src[64];
	snprintf(src, sizeof src, "__global__ void k%d() {}", i);
	kc_key(src, 13000, 90, "-default-device", key);
}

/* The key, recomputed from its definition with a one-shot hash. */
static void test_key(void)
{
	const char *src = "extern \"C\" __global__ void f(float *x) { x[0] = 1; }";
	const char *flags = "-default-device --std=c++17";
	uint8_t buf[512];
	size_t n = 0;
	int64_t fields_i[] = {KC_SCHEMA_VERSION, KC_RENDERER_VERSION};
#define PUT_LEN(v)                                         \
	do {                                               \
		uint64_t v_ = (v);                         \
		for (int b_ = 0; b_ < 8; b_++)             \
			buf[n++] = (uint8_t)(v_ >> (8 * b_)); \
	} while (0)
	for (int i = 0; i < 2; i++) {
		PUT_LEN(8);
		PUT_LEN((uint64_t)fields_i[i]);
	}
	PUT_LEN(strlen(src));
	memcpy(buf + n, src, strlen(src));
	n += strlen(src);
	PUT_LEN(8);
	PUT_LEN(12080);
	PUT_LEN(8);
	PUT_LEN(80);
	PUT_LEN(strlen(flags));
	memcpy(buf + n, flags, strlen(flags));
	n += strlen(flags);
#undef PUT_LEN
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits(buf, n));
	uint8_t key[KC_KEY_SIZE], k2[KC_KEY_SIZE];
	kc_key(src, 12080, 80, flags, key);
	CHECK(memcmp(key, c.digest, KC_KEY_SIZE) == 0);

	/* every field matters */
	kc_key(src, 12090, 80, flags, k2);
	CHECK(memcmp(key, k2, KC_KEY_SIZE) != 0);
	kc_key(src, 12080, 90, flags, k2);
	CHECK(memcmp(key, k2, KC_KEY_SIZE) != 0);
	kc_key(src, 12080, 80, "-default-device", k2);
	CHECK(memcmp(key, k2, KC_KEY_SIZE) != 0);
	kc_key("extern \"C\" __global__ void f(float *x) { x[0] = 2; }", 12080, 80, flags, k2);
	CHECK(memcmp(key, k2, KC_KEY_SIZE) != 0);
	/* NULL flags mean "" */
	kc_key(src, 12080, 80, NULL, key);
	kc_key(src, 12080, 80, "", k2);
	CHECK(memcmp(key, k2, KC_KEY_SIZE) == 0);

	uint8_t ramp[KC_KEY_SIZE];
	for (int i = 0; i < KC_KEY_SIZE; i++)
		ramp[i] = (uint8_t)(i * 17 + 10);
	char hex[33];
	kc_key_hex(ramp, hex);
	CHECK_STR(hex, "0a1b2c3d4e5f708192a3b4c5d6e7f809");
	char path[512];
	sn_err e = {0};
	CHECK(kc_entry_path("/c", ramp, path, sizeof path, &e) == SN_OK);
	CHECK_STR(path, "/c/kernels/0a/1b2c3d4e5f708192a3b4c5d6e7f809.cubin");
	CHECK(kc_entry_path("/c", ramp, path, 20, &e) == SN_EENV);
}

static void test_default_dir(void)
{
	char *saved[3];
	const char *names[3] = {"SINTER_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
	for (int i = 0; i < 3; i++) {
		const char *v = getenv(names[i]);
		saved[i] = v ? strdup(v) : NULL;
	}
	char out[256];
	setenv("SINTER_CACHE_DIR", "/a/b", 1);
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	setenv("HOME", "/home/u", 1);
	CHECK(kc_default_dir(out, sizeof out) == SN_OK);
	CHECK_STR(out, "/a/b");
	unsetenv("SINTER_CACHE_DIR");
	CHECK(kc_default_dir(out, sizeof out) == SN_OK);
	CHECK_STR(out, "/xdg/sinter");
	setenv("XDG_CACHE_HOME", "relative", 1); /* ignored, as XDG says */
	CHECK(kc_default_dir(out, sizeof out) == SN_OK);
	CHECK_STR(out, "/home/u/.cache/sinter");
	unsetenv("XDG_CACHE_HOME");
	CHECK(kc_default_dir(out, sizeof out) == SN_OK);
	CHECK_STR(out, "/home/u/.cache/sinter");
	CHECK(kc_default_dir(out, 8) == SN_EENV);
	unsetenv("HOME");
	CHECK(kc_default_dir(out, sizeof out) == SN_EENV);
	for (int i = 0; i < 3; i++) {
		if (saved[i])
			setenv(names[i], saved[i], 1);
		else
			unsetenv(names[i]);
		free(saved[i]);
	}
}

static void test_round_trip(const char *dir)
{
	uint8_t key[KC_KEY_SIZE], payload[5000];
	key_of(1, key);
	fill(payload, sizeof payload, 1);
	sn_err e = {0};
	kc_status st;
	void *data = (void *)1;
	size_t size = 7;
	CHECK(kc_get(dir, key, &data, &size, &st, &e) == SN_OK);
	CHECK(st.state == KC_MISS && data == NULL && size == 0);
	CHECK(kc_put(dir, key, payload, sizeof payload, &e) == SN_OK);
	char path[512];
	kc_entry_path(dir, key, path, sizeof path, &e);
	CHECK(file_size(path) == KC_HEADER_SIZE + sizeof payload);
	CHECK(kc_get(dir, key, &data, &size, &st, &e) == SN_OK);
	CHECK(st.state == KC_HIT && size == sizeof payload && data && memcmp(data, payload, size) == 0);
	free(data);
	/* overwrite with different content: the last writer wins */
	fill(payload, 3000, 99);
	CHECK(kc_put(dir, key, payload, 3000, &e) == SN_OK);
	CHECK(kc_get(dir, key, &data, &size, &st, &e) == SN_OK);
	CHECK(st.state == KC_HIT && size == 3000 && data && memcmp(data, payload, 3000) == 0);
	free(data);
	/* an empty payload is a valid entry */
	uint8_t k0[KC_KEY_SIZE];
	key_of(0, k0);
	CHECK(kc_put(dir, k0, "", 0, &e) == SN_OK);
	CHECK(kc_get(dir, k0, &data, &size, &st, &e) == SN_OK);
	CHECK(st.state == KC_HIT && size == 0);
	free(data);
	CHECK(e.code == SN_OK);
}

/* Damage kinds applied to an entry file. */
enum { FLIP, TRUNC_PAYLOAD, TRUNC_HEADER, MAGIC, SWAP, EXTRA, VERSION };

static void damage(const char *path, const char *other, int how)
{
	FILE *f;
	size_t n = file_size(path);
	switch (how) {
	case FLIP: /* one bit of the payload's 100th byte */
		f = fopen(path, "r+b");
		fseek(f, KC_HEADER_SIZE + 100, SEEK_SET);
		int c = fgetc(f);
		fseek(f, KC_HEADER_SIZE + 100, SEEK_SET);
		fputc(c ^ 0x10, f);
		fclose(f);
		break;
	case TRUNC_PAYLOAD:
		CHECK(truncate(path, (off_t)n - 1) == 0);
		break;
	case TRUNC_HEADER:
		CHECK(truncate(path, 20) == 0);
		break;
	case MAGIC:
		f = fopen(path, "r+b");
		fputc('X', f);
		fclose(f);
		break;
	case SWAP: /* a valid entry of another key, renamed here */
		CHECK(rename(other, path) == 0);
		break;
	case EXTRA:
		f = fopen(path, "ab");
		fputs("junk", f);
		fclose(f);
		break;
	case VERSION:
		f = fopen(path, "r+b");
		fseek(f, 8, SEEK_SET);
		fputc(7, f);
		fclose(f);
		break;
	}
}

static void test_corruption(const char *dir)
{
	static const struct {
		int how;
		const char *why;
	} cases[] = {
		{FLIP, "checksum mismatch"},
		{TRUNC_PAYLOAD, "truncated"},
		{TRUNC_HEADER, "truncated"},
		{MAGIC, "bad magic"},
		{SWAP, "key mismatch"},
		{EXTRA, "size mismatch"},
		{VERSION, "format version 7, expected 1"},
	};
	for (size_t i = 0; i < SN_COUNT(cases); i++) {
		uint8_t key[KC_KEY_SIZE], other[KC_KEY_SIZE], payload[4096];
		key_of(100 + (int)i, key);
		key_of(200 + (int)i, other);
		fill(payload, sizeof payload, 100 + (uint32_t)i);
		sn_err e = {0};
		char path[512], opath[512], want[4608];
		kc_entry_path(dir, key, path, sizeof path, &e);
		kc_entry_path(dir, other, opath, sizeof opath, &e);
		CHECK(kc_put(dir, key, payload, sizeof payload, &e) == SN_OK);
		CHECK(kc_put(dir, other, payload, sizeof payload, &e) == SN_OK);
		damage(path, opath, cases[i].how);

		kc_status st;
		void *data;
		size_t size;
		CHECK(kc_get(dir, key, &data, &size, &st, &e) == SN_OK);
		CHECK(st.state == KC_CORRUPT && data == NULL && size == 0);
		snprintf(want, sizeof want, "kernel cache: corrupt entry %s (%s): deleted", path, cases[i].why);
		CHECK_STR(st.msg, want);
		CHECK(!exists(path));
		/* then a miss, and a put rebuilds it */
		CHECK(kc_get(dir, key, &data, &size, &st, &e) == SN_OK);
		CHECK(st.state == KC_MISS);
		CHECK(kc_put(dir, key, payload, sizeof payload, &e) == SN_OK);
		CHECK(kc_get(dir, key, &data, &size, &st, &e) == SN_OK);
		CHECK(st.state == KC_HIT && size == sizeof payload && data && memcmp(data, payload, size) == 0);
		free(data);
		CHECK(e.code == SN_OK);
	}
}

/* Six processes hammer the same eight keys with puts and gets: every get is
 * a miss or a hit with exactly the right bytes, never a corrupt entry. */
static void test_concurrent(const char *dir)
{
	enum { PROCS = 6, KEYS = 8, ROUNDS = 60 };
	pid_t pids[PROCS];
	for (int p = 0; p < PROCS; p++) {
		pids[p] = fork();
		if (pids[p] == 0) {
			int bad = 0;
			static uint8_t want[KEYS * 7000 + 1000];
			for (int r = 0; r < ROUNDS; r++) {
				for (int k = 0; k < KEYS; k++) {
					int i = (k + p + r) % KEYS;
					uint8_t key[KC_KEY_SIZE];
					key_of(1000 + i, key);
					size_t n = 1000 + 7000 * (size_t)i;
					fill(want, n, 1000 + (uint32_t)i);
					sn_err e = {0};
					kc_status st;
					void *data;
					size_t size;
					if (kc_get(dir, key, &data, &size, &st, &e) != SN_OK || st.state == KC_CORRUPT)
						bad++;
					if (st.state == KC_HIT && (size != n || memcmp(data, want, n) != 0))
						bad++;
					free(data);
					if ((r + p) % 2 == 0 && kc_put(dir, key, want, n, &e) != SN_OK)
						bad++;
				}
			}
			_exit(bad ? 1 : 0);
		}
	}
	int ok = 0;
	for (int p = 0; p < PROCS; p++) {
		int status = 0;
		if (pids[p] > 0 && waitpid(pids[p], &status, 0) == pids[p] && WIFEXITED(status) &&
		    WEXITSTATUS(status) == 0)
			ok++;
	}
	CHECK(ok == PROCS);
	size_t entries = 0;
	uint64_t bytes = 0;
	sn_err e = {0};
	CHECK(kc_stats(dir, &entries, &bytes, &e) == SN_OK);
	CHECK(entries == KEYS);
	uint64_t want_bytes = 0;
	for (int i = 0; i < KEYS; i++)
		want_bytes += KC_HEADER_SIZE + 1000 + 7000 * (uint64_t)i;
	CHECK(bytes == want_bytes);
}

static void test_stats_clear(const char *dir)
{
	sn_err e = {0};
	size_t entries = 99, removed = 99;
	uint64_t bytes = 99;
	CHECK(kc_stats(dir, &entries, &bytes, &e) == SN_OK); /* no such dir yet */
	CHECK(entries == 0 && bytes == 0);
	uint8_t payload[3000];
	uint64_t want = 0;
	char path[512];
	for (int i = 0; i < 5; i++) {
		uint8_t key[KC_KEY_SIZE];
		key_of(300 + i, key);
		fill(payload, 500 * (size_t)(i + 1), 300 + (uint32_t)i);
		CHECK(kc_put(dir, key, payload, 500 * (size_t)(i + 1), &e) == SN_OK);
		want += KC_HEADER_SIZE + 500 * (uint64_t)(i + 1);
		kc_entry_path(dir, key, path, sizeof path, &e);
	}
	/* path is now the last entry: put a temp file and a stranger beside it */
	char tmp[600], other[600], top[600];
	char *slash = strrchr(path, '/');
	snprintf(tmp, sizeof tmp, "%.*s/.tmp-abc-123456", (int)(slash - path), path);
	snprintf(other, sizeof other, "%.*s/notes.txt", (int)(slash - path), path);
	snprintf(top, sizeof top, "%s/kernels/README", dir);
	FILE *f = fopen(tmp, "w");
	fputs("partial", f);
	fclose(f);
	f = fopen(other, "w");
	fputs("keep me", f);
	fclose(f);
	f = fopen(top, "w");
	fputs("keep me too", f);
	fclose(f);
	CHECK(kc_stats(dir, &entries, &bytes, &e) == SN_OK);
	CHECK(entries == 5 && bytes == want);
	CHECK(kc_clear(dir, &removed, &e) == SN_OK);
	CHECK(removed == 5);
	CHECK(!exists(tmp) && !exists(path));
	CHECK(exists(other) && exists(top));
	CHECK(kc_stats(dir, &entries, &bytes, &e) == SN_OK);
	CHECK(entries == 0 && bytes == 0);
	CHECK(kc_clear(dir, &removed, &e) == SN_OK);
	CHECK(removed == 0);
	CHECK(e.code == SN_OK);
}

/* An entry's path taken by a directory (path, made empty by the caller):
 * it was an I/O error on every read and every put failed (rename cannot
 * replace a directory), so the kernel was never cached again. Now an
 * empty directory, or one holding only sinter's names, is removed on the
 * read (a corrupt entry, a miss), the put stores, the next read hits; one
 * holding a user's file is left alone with it, and the put says why. */
static void test_dir_entry(const char *dir, const uint8_t key[KC_KEY_SIZE], const char *path)
{
	sn_err e = {0};
	kc_status st;
	void *data = NULL;
	size_t size = 0;
	CHECK(kc_get(dir, key, &data, &size, &st, &e) == SN_OK && st.state == KC_CORRUPT);
	CHECK(strstr(st.msg, "(a directory: removed)") != NULL);
	CHECK(!exists(path));
	CHECK(kc_put(dir, key, "abc", 3, &e) == SN_OK);
	CHECK(kc_get(dir, key, &data, &size, &st, &e) == SN_OK && st.state == KC_HIT && size == 3);
	free(data);
	/* holding a temp file and an entry name of sinter's: removed on the put */
	char in[800];
	CHECK(unlink(path) == 0 && mkdir(path, 0700) == 0);
	snprintf(in, sizeof in, "%s/.tmp-x", path);
	FILE *f = fopen(in, "w");
	CHECK(f && fclose(f) == 0);
	snprintf(in, sizeof in, "%s/0123456789abcdef0123456789abcd.cubin", path);
	CHECK((f = fopen(in, "w")) && fclose(f) == 0);
	CHECK(kc_put(dir, key, "abcd", 4, &e) == SN_OK);
	CHECK(kc_get(dir, key, &data, &size, &st, &e) == SN_OK && st.state == KC_HIT && size == 4);
	free(data);
	/* holding a user's file: left alone, the file kept, a miss; the put
	 * fails saying so */
	CHECK(unlink(path) == 0 && mkdir(path, 0700) == 0);
	snprintf(in, sizeof in, "%s/notes.txt", path);
	CHECK((f = fopen(in, "w")) && fputs("mine", f) >= 0 && fclose(f) == 0);
	CHECK(kc_get(dir, key, &data, &size, &st, &e) == SN_OK && st.state == KC_CORRUPT && !data);
	CHECK(strstr(st.msg, "holding notes.txt, which sinter did not write: left alone") != NULL);
	CHECK(exists(in));
	sn_err e2 = {0};
	CHECK(kc_put(dir, key, "abc", 3, &e2) == SN_EENV && strstr(e2.msg, "notes.txt") && exists(in));
	unlink(in);
	rmdir(path);
	/* the plan cache's path, made for a write, removes an empty one */
	char plan[700];
	CHECK(kc_plan_path(dir, key, true, plan, sizeof plan, &e) == SN_OK);
	CHECK(mkdir(plan, 0700) == 0);
	CHECK(kc_plan_path(dir, key, true, plan, sizeof plan, &e) == SN_OK && !exists(plan));
	CHECK(mkdir(plan, 0700) == 0);
	snprintf(in, sizeof in, "%s/keep", plan);
	CHECK((f = fopen(in, "w")) && fclose(f) == 0);
	sn_err e3 = {0};
	CHECK(kc_plan_path(dir, key, true, plan, sizeof plan, &e3) == SN_EENV && strstr(e3.msg, "keep") && exists(in));
	unlink(in);
	rmdir(plan);
}

static void test_io_errors(const char *dir)
{
	/* a cache dir below a regular file cannot be created */
	char file[512], sub[600];
	snprintf(file, sizeof file, "%s/plainfile", dir);
	FILE *f = fopen(file, "w");
	fputs("x", f);
	fclose(f);
	snprintf(sub, sizeof sub, "%s/cache", file);
	uint8_t key[KC_KEY_SIZE];
	key_of(5, key);
	sn_err e = {0};
	CHECK(kc_put(sub, key, "abc", 3, &e) == SN_EENV);
	char want[4608];
	snprintf(want, sizeof want, "kernel cache: cannot create directory %s: %s", sub, strerror(ENOTDIR));
	CHECK_STR(e.msg, want);
	/* a get there is simply a miss */
	sn_err e2 = {0};
	kc_status st;
	void *data;
	size_t size;
	CHECK(kc_get(sub, key, &data, &size, &st, &e2) == SN_OK && st.state == KC_MISS);
	/* an entry that is a directory cannot be read */
	char path[700];
	kc_entry_path(dir, key, path, sizeof path, &e2);
	char *slash = strrchr(path, '/');
	*slash = 0;
	mkdir(dir, 0755);
	snprintf(sub, sizeof sub, "%s/kernels", dir);
	mkdir(sub, 0755);
	mkdir(path, 0755);
	*slash = '/';
	CHECK(mkdir(path, 0755) == 0);
	/* no directory at all is refused, never taken as the root */
	sn_err e3 = {0}, e4 = {0};
	size_t cnt;
	CHECK(kc_put("", key, "abc", 3, &e3) == SN_EENV);
	CHECK_STR(e3.msg, "kernel cache: no directory given");
	CHECK(kc_clear("", &cnt, &e4) == SN_EENV);
	test_dir_entry(dir, key, path);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

int main(void)
{
	snprintf(root, sizeof root, "/tmp/sinter-kcache-XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	char d1[300], d2[300], d3[300], d4[300], d5[300];
	snprintf(d1, sizeof d1, "%s/rt", root);
	snprintf(d2, sizeof d2, "%s/corrupt", root);
	snprintf(d3, sizeof d3, "%s/concurrent", root);
	snprintf(d4, sizeof d4, "%s/stats/deeper", root);
	snprintf(d5, sizeof d5, "%s/io", root);
	test_key();
	test_default_dir();
	test_round_trip(d1);
	test_corruption(d2);
	test_concurrent(d3);
	test_stats_clear(d4);
	mkdir(d5, 0755);
	test_io_errors(d5);
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return check_done("kcache");
}
