/* test_cpu_plan_cache.c: the plan cache's cpu entries (docs/CACHE.md)
 * through the public API. A model with a fused chain, a layer_norm, a
 * product with its epilogue, a convolution with its epilogue, a pooling
 * and an op that falls back (cumsum) is compiled for --device cpu into a
 * fresh cache folder; every compiled handle runs fresh random inputs and
 * its outputs are compared with sinter_model_run_ref's (the convolution, 3x3
 * stride 1 on a 5x5 map, takes the Winograd path with edge tiles). Checked: a second
 * compile is a plan hit that JIT-compiles nothing; another fusion flag,
 * another model text or other weights miss; an entry with a flipped
 * table byte, a flipped weight-image byte, a truncated weight image or
 * garbage is reported as corrupt, deleted and rebuilt (the next compile
 * hits again); an entry others may write is refused and left alone; an
 * entry whose objects left the kernel cache is rebuilt; an entry
 * truncated under a compiled plan leaves it running (read, not mapped);
 * a directory in an entry's place is removed and the plan stored again.
 * Skipped (saying
 * so) without the cpu device. */
#include "sinter.h"
#include "sinter_tools.h"

#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *model_a =
	"sinter 1\n"
	"func @main(%x: f32[2,5,5,16], %y: f32[4,37]) -> (f32[2,2,2,16], f32[4,16], f32[4,37]) {\n"
	"  %cw = param f32[16,3,3,16] \"cw\"\n"
	"  %cb = param f32[16] \"cb\"\n"
	"  %w = param f32[16,37] \"w\"\n"
	"  %b = param f32[16] \"b\"\n"
	"  %g = param f32[37] \"g\"\n"
	"  %c = conv2d(%x, %cw, %cb) stride=[1,1] pad=[1,1,1,1] layout=NHWC\n"
	"  %cr = relu(%c)\n"
	"  %p = max_pool2d(%cr) kernel=[2,2] stride=[2,2] layout=NHWC\n"
	"  %t = tanh(%y)\n"
	"  %s = sigmoid(%t)\n"
	"  %ln = layer_norm(%s, %g) axis=-1\n"
	"  %l = linear(%ln, %w, %b)\n"
	"  %r = relu(%l)\n"
	"  %cs = cumsum(%y) axis=1\n"
	"  return %p, %r, %cs\n"
	"}\n";

static double rel_l2(const sinter_tensor *a, const sinter_tensor *b)
{
	const float *x = a->data, *y = b->data;
	size_t n = a->nbytes / 4;
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		num += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
		den += (double)y[i] * y[i];
	}
	return sqrt(num) / (sqrt(den) + 1e-30);
}

static int n_corrupt, n_refused, n_rebuild;
static void on_warn(void *ctx, const char *msg)
{
	(void)ctx;
	if (strstr(msg, "plan cache: corrupt entry"))
		n_corrupt++;
	else if (strstr(msg, "plan cache: refused entry"))
		n_refused++;
	else if (strstr(msg, "plan cache: entry") && strstr(msg, "rebuilding"))
		n_rebuild++;
	else
		fprintf(stderr, "warning: %s\n", msg);
}

static char dir[] = "/tmp/sinter-cpu-plan-XXXXXX";
static unsigned seq = 100;

/* The one entry under dir/sub with suffix ext into out (false if not exactly one). */
static bool find_one(const char *sub, const char *ext, char *out, size_t cap)
{
	char top[512];
	snprintf(top, sizeof top, "%s/%s", dir, sub);
	DIR *d = opendir(top);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[1024];
		snprintf(p, sizeof p, "%s/%s", top, e->d_name);
		DIR *d2 = opendir(p);
		struct dirent *f;
		while (d2 && (f = readdir(d2))) {
			size_t l = strlen(f->d_name), le = strlen(ext);
			if (f->d_name[0] == '.' || l < le || strcmp(f->d_name + l - le, ext))
				continue;
			snprintf(out, cap, "%s/%s", p, f->d_name);
			n++;
		}
		if (d2)
			closedir(d2);
	}
	if (d)
		closedir(d);
	return n == 1;
}

/* Compiles m with o, runs it on fresh inputs against the reference;
 * *hit: whether the plan came from the cache. */
static void compile_run(sinter_model *m, const sinter_compile_options *o, bool *hit, size_t *cache_hits,
			size_t *kernels)
{
	sinter_error err;
	sinter_compiled *c = NULL;
	sinter_compile_stats st;
	sinter_compile_stats_init(&st);
	*hit = false;
	if (sinter_model_compile(m, o, &c, &st, &err) != SINTER_OK) {
		fprintf(stderr, "compile: %s\n", err.message);
		CHECK(0);
		return;
	}
	*hit = st.plan_hit;
	if (cache_hits)
		*cache_hits = st.cache_hits;
	if (kernels)
		*kernels = st.kernels;
	CHECK(st.ref_steps == 1); /* cumsum */
	sinter_tensor *ins = NULL, *want = NULL, *got = NULL;
	size_t nin = 0;
	CHECK(sinter_model_random_inputs(m, (uint64_t)getpid() * 1000 + seq++, &ins, &nin, &err) == SINTER_OK);
	CHECK(sinter_model_run_ref(m, ins, nin, &want, &err) == SINTER_OK);
	CHECK(sinter_compiled_run(c, ins, nin, &got, &err) == SINTER_OK);
	for (int k = 0; got && want && k < 3; k++) {
		double e = rel_l2(&got[k], &want[k]);
		if (!(e < 2e-5))
			fprintf(stderr, "output %d: relative L2 %.3g\n", k, e);
		CHECK(e < 2e-5);
	}
	sinter_tensors_free(got, 3);
	sinter_tensors_free(want, 3);
	sinter_tensors_free(ins, nin);
	sinter_compiled_free(c);
}

/* Overwrites 8 bytes of path at off (from the end when off < 0). */
static void spoil(const char *path, long off)
{
	FILE *f = fopen(path, "r+b");
	CHECK(f != NULL);
	if (!f)
		return;
	fseek(f, off, off < 0 ? SEEK_END : SEEK_SET);
	unsigned char b[8];
	size_t n = fread(b, 1, 8, f);
	for (size_t i = 0; i < n; i++)
		b[i] ^= 0x5a;
	fseek(f, off, off < 0 ? SEEK_END : SEEK_SET);
	fwrite(b, 1, n, f);
	fclose(f);
}

static long file_size(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

int main(void)
{
	char why[256];
	if (sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) != SINTER_OK) {
		printf("skipped: %s\n", why);
		return 0;
	}
	CHECK(mkdtemp(dir) != NULL);
	sinter_error err;
	sinter_model *m = NULL;
	CHECK(sinter_model_parse(model_a, strlen(model_a), "cpu_plan.sir", NULL, &m, &err) == SINTER_OK);
	if (!m) {
		fprintf(stderr, "parse: %s\n", err.message);
		return check_done("cpu_plan_cache");
	}
	CHECK(sinter_model_init_random(m, 7, &err) == SINTER_OK);
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.device = SINTER_DEVICE_CPU;
	o.cache_dir = dir;
	o.threads = 2;
	o.warn = on_warn;
	bool hit;
	size_t hits = 0, kernels = 0;
	char path[2048], p2[2100];

	/* miss, then hit: the second compile runs no LLVM pass */
	compile_run(m, &o, &hit, NULL, NULL);
	CHECK(!hit);
	CHECK(find_one("plans", ".plan", path, sizeof path));
	compile_run(m, &o, &hit, &hits, &kernels);
	CHECK(hit && kernels >= 2 && hits == kernels);

	/* the entry truncated while a compiled plan holds it: the plan runs
	 * on (it was read, not mapped: a mapped page cut off the file is a
	 * SIGBUS when the run touches the weights), and the next compile
	 * finds the entry corrupt and rebuilds it */
	{
		long full = file_size(path);
		sinter_compiled *c = NULL;
		sinter_compile_stats st;
		sinter_compile_stats_init(&st);
		CHECK(sinter_model_compile(m, &o, &c, &st, &err) == SINTER_OK && st.plan_hit);
		CHECK(truncate(path, 4096) == 0);
		sinter_tensor *ins = NULL, *want = NULL, *got = NULL;
		size_t nin = 0;
		CHECK(sinter_model_random_inputs(m, (uint64_t)getpid() * 1000 + seq++, &ins, &nin, &err) == SINTER_OK);
		CHECK(sinter_model_run_ref(m, ins, nin, &want, &err) == SINTER_OK);
		CHECK(c && sinter_compiled_run(c, ins, nin, &got, &err) == SINTER_OK);
		for (int k = 0; got && want && k < 3; k++)
			CHECK(rel_l2(&got[k], &want[k]) < 2e-5);
		sinter_tensors_free(got, 3);
		sinter_tensors_free(want, 3);
		sinter_tensors_free(ins, nin);
		sinter_compiled_free(c);
		int before = n_corrupt;
		compile_run(m, &o, &hit, NULL, NULL);
		CHECK(!hit && n_corrupt == before + 1 && file_size(path) == full);
	}

	/* another fusion flag, other weights, another model: misses */
	o.no_fusion = true;
	compile_run(m, &o, &hit, NULL, NULL);
	CHECK(!hit);
	o.no_fusion = false;
	sinter_model *m2 = NULL;
	CHECK(sinter_model_parse(model_a, strlen(model_a), "cpu_plan.sir", NULL, &m2, &err) == SINTER_OK);
	CHECK(sinter_model_init_random(m2, 8, &err) == SINTER_OK);
	compile_run(m2, &o, &hit, NULL, NULL);
	CHECK(!hit);
	sinter_model_free(m2);
	char *text_b = strdup(model_a);
	char *at = strstr(text_b, "relu(%l)");
	memcpy(at, "gelu(%l)", 8);
	CHECK(sinter_model_parse(text_b, strlen(text_b), "cpu_plan.sir", NULL, &m2, &err) == SINTER_OK);
	CHECK(sinter_model_init_random(m2, 7, &err) == SINTER_OK);
	compile_run(m2, &o, &hit, NULL, NULL);
	CHECK(!hit);
	sinter_model_free(m2);
	free(text_b);
	compile_run(m, &o, &hit, NULL, NULL);
	CHECK(hit); /* the first entry is still there */

	/* damaged entries: reported, deleted, rebuilt; then a hit again */
	long size = file_size(path);
	CHECK(size > 8192);
	const long offs[] = {200, -100, 0};
	for (int k = 0; k < 4; k++) {
		int before = n_corrupt;
		if (k < 3) {
			spoil(path, offs[k]); /* a table byte, a weight byte, the magic */
		} else {
			CHECK(truncate(path, size - 4096) == 0); /* the weight image cut short */
		}
		compile_run(m, &o, &hit, NULL, NULL);
		CHECK(!hit && n_corrupt == before + 1);
		CHECK(file_size(path) == size); /* rebuilt and stored again */
		compile_run(m, &o, &hit, NULL, NULL);
		CHECK(hit);
	}

	/* an entry others may write: refused, left alone, compiled afresh */
	CHECK(chmod(path, 0666) == 0);
	int before = n_refused;
	compile_run(m, &o, &hit, NULL, NULL);
	CHECK(!hit && n_refused == before + 1);
	CHECK(file_size(path) == size);
	/* the rebuilt entry replaced it (by rename, with a private mode) */
	struct stat sb;
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0022) == 0);
	compile_run(m, &o, &hit, NULL, NULL);
	CHECK(hit);

	/* a symlink in its place: corrupt (never followed), rebuilt */
	snprintf(p2, sizeof p2, "%s.moved", path);
	CHECK(rename(path, p2) == 0);
	CHECK(symlink(p2, path) == 0);
	before = n_corrupt;
	compile_run(m, &o, &hit, NULL, NULL);
	CHECK(!hit && n_corrupt == before + 1);
	unlink(p2);

	/* an empty directory in its place: removed, rebuilt, stored, and the
	 * next compile hits (it was "deleted, rebuilding" on every run) */
	CHECK(unlink(path) == 0 && mkdir(path, 0700) == 0);
	before = n_corrupt;
	compile_run(m, &o, &hit, NULL, NULL);
	CHECK(!hit && n_corrupt == before + 1 && file_size(path) == size);
	compile_run(m, &o, &hit, NULL, NULL);
	CHECK(hit);

	/* the entry's objects gone from the kernel cache: rebuilt */
	size_t removed = 0;
	char kd[600];
	snprintf(kd, sizeof kd, "rm -rf %s/kernels", dir);
	CHECK(system(kd) == 0);
	before = n_rebuild;
	compile_run(m, &o, &hit, NULL, NULL);
	CHECK(!hit && n_rebuild == before + 1);
	compile_run(m, &o, &hit, &hits, &kernels);
	CHECK(hit && hits == kernels);

	/* no_plan_cache: built, whatever is stored */
	o.no_plan_cache = true;
	compile_run(m, &o, &hit, NULL, NULL);
	CHECK(!hit);

	sinter_cache_clear(dir, &removed, NULL);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	sinter_model_free(m);
	return check_done("cpu_plan_cache");
}
