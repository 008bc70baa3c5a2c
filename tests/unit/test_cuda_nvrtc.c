/* test_cuda_nvrtc.c: NVRTC without a GPU: cubins for sm_80 and sm_90, the
 * compile error message, and rt_compile_all's dedup, kernel cache hits and
 * corruption recovery. Skipped (exit 0) where NVRTC cannot be loaded. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "runtime/cuda_nvrtc.h"
#include "runtime/kcache.h"

#include "check.h"

#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	fclose(f);
	if (s) {
		s[n] = 0;
		if (len)
			*len = (size_t)n;
	}
	return s;
}

/* A cubin is an ELF file for machine EM_CUDA (190). */
static bool is_cuda_elf(const void *p, size_t n)
{
	const unsigned char *b = p;
	return p && n > 64 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F' &&
	       (b[18] | b[19] << 8) == 190;
}

static bool contains(const void *hay, size_t n, const char *needle)
{
	size_t m = strlen(needle);
	for (size_t i = 0; i + m <= n; i++)
		if (memcmp((const char *)hay + i, needle, m) == 0)
			return true;
	return false;
}

static char *kernel_src(const char *name, int variant)
{
	char *s = malloc(512);
	snprintf(s, 512,
		 "/* test kernel %d */\n"
		 "extern \"C\" __global__ void %s(float *x, int n)\n"
		 "{\n"
		 "\tint i = blockIdx.x * blockDim.x + threadIdx.x;\n"
		 "\tif (i < n)\n"
		 "\t\tx[i] = x[i] * %d.5f + 1.0f;\n"
		 "}\n",
		 variant, name, variant + 2);
	return s;
}

static void test_single(rt_nvrtc *n, const char *tmp)
{
	char *src = kernel_src("scale_add", 1);
	void *c80 = NULL, *c90 = NULL;
	size_t s80 = 0, s90 = 0;
	sn_err e = {0};
	CHECK(rt_nvrtc_compile(n, "scale_add", src, 80, &c80, &s80, NULL, &e) == SN_OK);
	CHECK(rt_nvrtc_compile(n, "scale_add", src, 90, &c90, &s90, NULL, &e) == SN_OK);
	if (e.code)
		fprintf(stderr, "%s\n", e.msg);
	CHECK(is_cuda_elf(c80, s80) && is_cuda_elf(c90, s90));
	CHECK(contains(c80, s80, "scale_add") && contains(c90, s90, "scale_add"));
	CHECK(s80 != s90 || (c80 && c90 && memcmp(c80, c90, s80) != 0));
	free(c80);
	free(c90);
	free(src);

	/* a syntax error: the name, the arch, where the source is, the log */
	const char *bad = "extern \"C\" __global__ void bad_kernel(float *x)\n{\n\tx[0] = 1.0f\n}\n";
	void *c = (void *)1;
	size_t size = 1;
	sn_err e2 = {0};
	CHECK(rt_nvrtc_compile(n, "bad_kernel", bad, 90, &c, &size, NULL, &e2) == SN_EINTERNAL);
	CHECK(c == NULL && size == 0);
	const char *head = "nvrtc: kernel bad_kernel failed to compile for sm_90; source written to ";
	CHECK(strncmp(e2.msg, head, strlen(head)) == 0);
	char path[1024] = "";
	const char *nl = strchr(e2.msg, '\n');
	if (nl && strncmp(e2.msg, head, strlen(head)) == 0)
		snprintf(path, sizeof path, "%.*s", (int)(nl - e2.msg - strlen(head)), e2.msg + strlen(head));
	CHECK(strncmp(path, "/tmp/sinter-bad_kernel-", 23) == 0);
	char *dumped = read_all(path, NULL);
	CHECK_STR(dumped, bad);
	free(dumped);
	unlink(path);
	CHECK(nl && strstr(nl, "bad_kernel") && strstr(nl, "error") && strstr(nl, "expected a \";\""));

	/* with a dump directory, the source goes there */
	char ddir[512], want[1024];
	snprintf(ddir, sizeof ddir, "%s/dump1", tmp);
	mkdir(ddir, 0755);
	sn_err e3 = {0};
	CHECK(rt_nvrtc_compile(n, "bad_kernel", bad, 80, &c, &size, ddir, &e3) == SN_EINTERNAL);
	snprintf(want, sizeof want,
		 "nvrtc: kernel bad_kernel failed to compile for sm_80; source written to %s/bad_kernel.cu\n", ddir);
	CHECK(strncmp(e3.msg, want, strlen(want)) == 0);
	snprintf(path, sizeof path, "%s/bad_kernel.cu", ddir);
	dumped = read_all(path, NULL);
	CHECK_STR(dumped, bad);
	free(dumped);

	/* an arch NVRTC does not know is the user's mistake */
	sn_err e4 = {0};
	CHECK(rt_nvrtc_compile(n, "scale_add", bad, 35, &c, &size, NULL, &e4) == SN_EINPUT);
	CHECK(strstr(e4.msg, "nvrtc: sm_35 is not a target of NVRTC ") == e4.msg);
	CHECK(strstr(e4.msg, "sm_90") != NULL);
	/* a name that is not a plain file name */
	sn_err e5 = {0};
	CHECK(rt_nvrtc_compile(n, "../evil", bad, 90, &c, &size, NULL, &e5) == SN_EINTERNAL);
	CHECK_STR(e5.msg, "nvrtc: bad kernel name \"../evil\"");
}

typedef struct warnings {
	int count;
	char last[4608];
} warnings;

static void on_warn(void *ctx, const char *msg)
{
	warnings *w = ctx;
	w->count++;
	snprintf(w->last, sizeof w->last, "%s", msg);
}

static void test_batch(rt_nvrtc *n, const char *tmp)
{
	enum { NJ = 6 };
	char names[NJ][32];
	char *srcs[NJ];
	rt_job jobs[NJ];
	for (int i = 0; i < NJ; i++) {
		snprintf(names[i], sizeof names[i], "k%d", i);
		srcs[i] = kernel_src(names[i], i);
	}
	/* job 4 has job 1's source (under another name): 5 unique sources */
	free(srcs[4]);
	srcs[4] = strdup(srcs[1]);
	for (int i = 0; i < NJ; i++)
		jobs[i] = (rt_job){.name = names[i], .src = srcs[i]};

	char cache[512], dump[512];
	snprintf(cache, sizeof cache, "%s/cache", tmp);
	snprintf(dump, sizeof dump, "%s/dump2/sub", tmp);
	rt_compile_stats st;
	warnings w = {0};
	sn_err e = {0};
	CHECK(rt_compile_all(n, jobs, NJ, 90, cache, 0, dump, on_warn, &w, &st, &e) == SN_OK);
	if (e.code)
		fprintf(stderr, "%s\n", e.msg);
	CHECK(st.unique == 5 && st.compiled == 5 && st.hits == 0 && st.corrupt == 0 && w.count == 0);
	CHECK(st.seconds > 0);
	void *first[NJ];
	size_t fsize[NJ];
	for (int i = 0; i < NJ; i++) {
		CHECK(is_cuda_elf(jobs[i].cubin, jobs[i].size) && !jobs[i].hit);
		first[i] = jobs[i].cubin;
		fsize[i] = jobs[i].size;
		jobs[i].cubin = NULL; /* keep the first results */
		char path[600];
		snprintf(path, sizeof path, "%s/%s.cu", dump, names[i]);
		char *d = read_all(path, NULL);
		CHECK_STR(d, srcs[i]);
		free(d);
	}
	/* the shared source's job gets its own copy */
	CHECK(first[1] != first[4] && fsize[1] == fsize[4] && memcmp(first[1], first[4], fsize[1]) == 0);
	CHECK(contains(first[0], fsize[0], "k0") && contains(first[3], fsize[3], "k3"));
	size_t entries = 0;
	uint64_t bytes = 0;
	CHECK(kc_stats(cache, &entries, &bytes, &e) == SN_OK && entries == 5);

	/* again, on one thread: all from the cache, the same bytes */
	CHECK(rt_compile_all(n, jobs, NJ, 90, cache, 1, NULL, on_warn, &w, &st, &e) == SN_OK);
	CHECK(st.unique == 5 && st.hits == 5 && st.compiled == 0 && st.corrupt == 0 && w.count == 0);
	for (int i = 0; i < NJ; i++)
		CHECK(jobs[i].hit && jobs[i].size == fsize[i] && memcmp(jobs[i].cubin, first[i], fsize[i]) == 0);
	rt_jobs_free(jobs, NJ);
	CHECK(jobs[0].cubin == NULL && jobs[0].size == 0);

	/* corrupt job 2's entry: reported through warn, recompiled, rebuilt */
	uint8_t key[KC_KEY_SIZE];
	char path[600], want[4608];
	kc_key(srcs[2], rt_nvrtc_version_code(n), 90, RT_NVRTC_FLAGS, key);
	kc_entry_path(cache, key, path, sizeof path, &e);
	FILE *f = fopen(path, "r+b");
	CHECK(f != NULL);
	if (f) {
		fseek(f, KC_HEADER_SIZE + 40, SEEK_SET);
		int c = fgetc(f);
		fseek(f, KC_HEADER_SIZE + 40, SEEK_SET);
		fputc(c ^ 0x01, f);
		fclose(f);
	}
	CHECK(rt_compile_all(n, jobs, NJ, 90, cache, 3, NULL, on_warn, &w, &st, &e) == SN_OK);
	CHECK(st.unique == 5 && st.hits == 4 && st.compiled == 1 && st.corrupt == 1);
	CHECK(w.count == 1);
	snprintf(want, sizeof want, "kernel cache: corrupt entry %s (checksum mismatch): deleted", path);
	CHECK_STR(w.last, want);
	CHECK(!jobs[2].hit && jobs[1].hit && is_cuda_elf(jobs[2].cubin, jobs[2].size));
	CHECK(jobs[2].size == fsize[2] && memcmp(jobs[2].cubin, first[2], fsize[2]) == 0);
	rt_jobs_free(jobs, NJ);
	CHECK(rt_compile_all(n, jobs, NJ, 90, cache, 0, NULL, on_warn, &w, &st, &e) == SN_OK);
	CHECK(st.hits == 5 && st.compiled == 0 && w.count == 1);
	rt_jobs_free(jobs, NJ);

	/* another arch is another key: compiled, not a hit */
	CHECK(rt_compile_all(n, jobs, NJ, 80, cache, 0, NULL, on_warn, &w, &st, &e) == SN_OK);
	CHECK(st.hits == 0 && st.compiled == 5);
	rt_jobs_free(jobs, NJ);

	/* without a cache: everything compiles, nothing is written */
	CHECK(rt_compile_all(n, jobs, NJ, 90, NULL, 2, NULL, on_warn, &w, &st, &e) == SN_OK);
	CHECK(st.hits == 0 && st.compiled == 5);
	rt_jobs_free(jobs, NJ);
	CHECK(e.code == SN_OK);

	/* one bad kernel fails the batch with its own message; no cubins left */
	free(srcs[3]);
	srcs[3] = strdup("extern \"C\" __global__ void k3(float *x) { x[0] = undefined_thing; }\n");
	jobs[3].src = srcs[3];
	sn_err e2 = {0};
	CHECK(rt_compile_all(n, jobs, NJ, 90, cache, 0, NULL, on_warn, &w, &st, &e2) == SN_EINTERNAL);
	CHECK(strstr(e2.msg, "nvrtc: kernel k3 failed to compile for sm_90; source written to /tmp/") == e2.msg);
	CHECK(strstr(e2.msg, "undefined_thing") != NULL);
	for (int i = 0; i < NJ; i++)
		CHECK(jobs[i].cubin == NULL);
	if (strstr(e2.msg, "/tmp/") && strchr(e2.msg, '\n')) {
		char p[600];
		const char *s = strstr(e2.msg, "/tmp/");
		snprintf(p, sizeof p, "%.*s", (int)(strchr(s, '\n') - s), s);
		unlink(p);
	}

	/* an unwritable cache is a warning, never a failure */
	char blocked[600];
	snprintf(blocked, sizeof blocked, "%s/plainfile", tmp);
	f = fopen(blocked, "w");
	fputs("x", f);
	fclose(f);
	free(srcs[3]);
	srcs[3] = kernel_src(names[3], 3);
	jobs[3].src = srcs[3];
	warnings w2 = {0};
	sn_err e3 = {0};
	CHECK(rt_compile_all(n, jobs, NJ, 90, blocked, 0, NULL, on_warn, &w2, &st, &e3) == SN_OK);
	CHECK(w2.count == 1 && st.compiled == 5);
	CHECK(strstr(w2.last, "kernel cache: cannot ") == w2.last);
	CHECK(strstr(w2.last, "; continuing without the kernel cache") != NULL);
	rt_jobs_free(jobs, NJ);

	for (int i = 0; i < NJ; i++) {
		free(first[i]);
		free(srcs[i]);
	}
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

/* Strict mode (SINTER_NVRTC_STRICT): a kernel that spills registers is
 * refused naming it; the same kernel compiles without strict mode, and a
 * kernel that does not spill compiles in both. */
static void test_strict(rt_nvrtc *n)
{
	/* 64 accumulators live across a loop, at most 32 registers a thread */
	static const char spill[] =
		"extern \"C\" __global__ void __launch_bounds__(1024, 2) sp(float *o, const float *x, int n)\n"
		"{\n"
		"\tfloat a[64];\n"
		"#pragma unroll\n"
		"\tfor (int j = 0; j < 64; j++) a[j] = x[j * 1024 + threadIdx.x];\n"
		"\tfor (int i = 0; i < n; i++) {\n"
		"#pragma unroll\n"
		"\t\tfor (int j = 0; j < 64; j++) a[j] = a[j] * a[(j + 1) & 63] + x[i * 64 + j];\n"
		"\t}\n"
		"#pragma unroll\n"
		"\tfor (int j = 0; j < 64; j++) o[j * 1024 + threadIdx.x] = a[j];\n"
		"}\n";
	static const char lean[] = "extern \"C\" __global__ void ln(float *o) { o[threadIdx.x] = 2.0f * threadIdx.x; }\n";
	void *cubin = NULL;
	size_t size = 0;
	sn_err e = {0};
	setenv("SINTER_NVRTC_STRICT", "1", 1);
	CHECK(rt_nvrtc_strict());
	CHECK(rt_nvrtc_compile(n, "sp", spill, 80, &cubin, &size, NULL, &e) == SN_EINTERNAL && !cubin);
	CHECK(strstr(e.msg, "kernel sp for sm_80 spills registers") != NULL);
	e = (sn_err){0};
	CHECK(rt_nvrtc_compile(n, "ln", lean, 80, &cubin, &size, NULL, &e) == SN_OK && cubin);
	free(cubin);
	cubin = NULL;
	setenv("SINTER_NVRTC_STRICT", "0", 1);
	CHECK(!rt_nvrtc_strict());
	e = (sn_err){0};
	CHECK(rt_nvrtc_compile(n, "sp", spill, 80, &cubin, &size, NULL, &e) == SN_OK && cubin);
	free(cubin);
	unsetenv("SINTER_NVRTC_STRICT");
}

int main(void)
{
	rt_nvrtc *n = NULL;
	sn_err e = {0};
	if (rt_nvrtc_open(&n, &e) != SN_OK) {
		printf("skipped: no NVRTC (%s)\n", e.msg);
		return 0;
	}
	int major = 0, minor = 0;
	rt_nvrtc_version(n, &major, &minor);
	printf("NVRTC %d.%d from %s\n", major, minor, rt_nvrtc_path(n));
	CHECK(major >= 11);
	CHECK(rt_nvrtc_version_code(n) == 1000 * major + 10 * minor);
	char tmp[] = "/tmp/sinter-nvrtc-XXXXXX";
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	test_single(n, tmp);
	test_batch(n, tmp);
	test_strict(n);
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	rt_nvrtc_close(n);
	return check_done("cuda_nvrtc");
}
