/* test_cpu_observe.c: what the cpu device shows of its work (issue 31,
 * item 10), through the public API. A model of three steps (a generated
 * kernel for add and tanh, a product with its relu through sgemm, cumsum
 * on the reference interpreter):
 * - sinter_compiled_profile: refused before a run, then one entry per
 *   step in plan order, each named by what runs it and its op, the
 *   product's flops (2 m n k) and bytes (its operands and output, once)
 *   worked out here, times that add up to no more than a run's;
 * - a trace records one span per step of each run ("op name", category
 *   "cpu step") and the profile's steps on a track of their own;
 * - the progress line of the LLVM compile (drawn at once here:
 *   sn_progress_set_after(0)) reaches stderr, and nothing does with the
 *   line off;
 * - the plan cache's miss and the object cache's say why at info level,
 *   and sinter_cache_explain with device "cpu" (no GPU needed) says miss
 *   with nothing to compare, then hit after a compile, then, for the
 *   model at another batch size, miss naming the shapes that differ.
 * Skipped (saying so) without the cpu device. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "sinter.h"
#include "sinter_tools.h"

#include "check.h"
#include "ir/log.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *model_text =
	"sinter 1\n"
	"func @main(%%x: f32[%d,37], %%y: f32[37]) -> (f32[%d,16], f32[%d,37]) {\n"
	"  %%w = param f32[16,37] \"w\"\n"
	"  %%b = param f32[16] \"b\"\n"
	"  %%a = add(%%x, %%y)\n"
	"  %%t = tanh(%%a)\n"
	"  %%l = linear(%%t, %%w, %%b)\n"
	"  %%r = relu(%%l)\n"
	"  %%cs = cumsum(%%x) axis=1\n"
	"  return %%r, %%cs\n"
	"}\n";

static sinter_model *model(int rows)
{
	char text[1024];
	snprintf(text, sizeof text, model_text, rows, rows, rows);
	sinter_model *m = NULL;
	sinter_error err;
	CHECK(sinter_model_parse(text, strlen(text), "observe.sir", NULL, &m, &err) == SINTER_OK);
	CHECK(m && sinter_model_init_random(m, 3, &err) == SINTER_OK);
	return m;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb, (void)flag, (void)f;
	return remove(p);
}

/* The whole of a file, NUL-terminated (free it). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = calloc((size_t)(n > 0 ? n : 0) + 1, 1);
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n)
		s[0] = 0;
	fclose(f);
	return s;
}

static int count(const char *s, const char *what)
{
	int n = 0;
	for (const char *p = s; p && (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static char logged[8192];
static void on_log(void *ctx, sinter_log_level level, const char *msg)
{
	(void)ctx, (void)level;
	size_t n = strlen(logged);
	snprintf(logged + n, sizeof logged - n, "%s\n", msg);
}

/* A compile of m into dir with stderr in the file err_path. */
static sinter_compiled *compile_to(sinter_model *m, const char *dir, bool plans, const char *err_path)
{
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.device = SINTER_DEVICE_CPU;
	o.cache_dir = dir;
	o.threads = 2;
	o.no_plan_cache = !plans;
	fflush(stderr);
	int saved = dup(2);
	FILE *f = fopen(err_path, "w");
	CHECK(f != NULL && saved >= 0);
	if (f) {
		dup2(fileno(f), 2);
		fclose(f);
	}
	sinter_compiled *c = NULL;
	sinter_error err;
	sinter_status st = sinter_model_compile(m, &o, &c, NULL, &err);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	if (st != SINTER_OK)
		fprintf(stderr, "compile: %s\n", err.message);
	CHECK(st == SINTER_OK);
	return c;
}

static char *explain(sinter_model *m, const char *dir)
{
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.device = SINTER_DEVICE_CPU;
	o.cache_dir = dir;
	char *text = NULL;
	sinter_error err;
	sinter_status st = sinter_cache_explain(m, &o, &text, &err);
	if (st != SINTER_OK)
		fprintf(stderr, "explain: %s\n", err.message);
	CHECK(st == SINTER_OK && text);
	return text;
}

int main(void)
{
	char why[256];
	if (!(sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) == SINTER_OK)) {
		printf("skipped: %s\n", why);
		return 0;
	}
	char dir[] = "/tmp/sinter-cpu-observe-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char kdir[128], pdir[128], errf[128], trace[128];
	snprintf(kdir, sizeof kdir, "%s/objects", dir);
	snprintf(pdir, sizeof pdir, "%s/plans-dir", dir);
	snprintf(errf, sizeof errf, "%s/stderr.txt", dir);
	snprintf(trace, sizeof trace, "%s/trace.json", dir);
	sinter_error err;
	sinter_model *m = model(4);

	/* ---- the progress line: none when off, the LLVM compile's when on ---- */
	sn_progress_set_after(0);
	sinter_compiled *c = compile_to(m, kdir, false, errf);
	char *s = slurp(errf);
	CHECK(s && !strstr(s, "LLVM"));
	free(s);
	sinter_compiled_free(c);
	sinter_progress_enable(true);
	nftw(kdir, rm_one, 16, FTW_DEPTH | FTW_PHYS); /* LLVM runs again */
	c = compile_to(m, kdir, false, errf);
	sinter_progress_enable(false);
	s = slurp(errf);
	CHECK(s && strstr(s, "sinter: cpu: LLVM -O3 of the plan's modules: ") && strstr(s, "(100%)"));
	if (s && !strstr(s, "(100%)"))
		fprintf(stderr, "stderr of the compile: %s\n", s);
	free(s);

	/* ---- the profile ---- */
	sinter_profile_entry *p = NULL;
	size_t n = 0;
	CHECK(sinter_compiled_profile(c, 5, &p, &n, &err) == SINTER_E_USAGE); /* no run yet */
	sinter_tensor *ins = NULL, *outs = NULL;
	size_t nin = 0;
	CHECK(sinter_model_random_inputs(m, 11, &ins, &nin, &err) == SINTER_OK);
	CHECK(sinter_compiled_run(c, ins, nin, &outs, &err) == SINTER_OK);
	sinter_tensors_free(outs, 2);
	sinter_trace_start();
	double t0 = sn_now();
	CHECK(sinter_compiled_run(c, ins, nin, &outs, &err) == SINTER_OK);
	double run_ms = (sn_now() - t0) * 1e3;
	sinter_tensors_free(outs, 2);
	double bench_ms[20];
	CHECK(sinter_compiled_bench(c, 2, 20, bench_ms, &err) == SINTER_OK); /* timed calls: no spans */
	sinter_status st = sinter_compiled_profile(c, 5, &p, &n, &err);
	if (st)
		fprintf(stderr, "profile: %s\n", err.message);
	CHECK(st == SINTER_OK && n == 3);
	double total = 0;
	int seen = 0;
	for (size_t i = 0; st == SINTER_OK && i < n; i++) {
		printf("profile step %zu: %s %s %.4f ms, %.0f bytes, %.0f flops\n", i, p[i].op, p[i].kernel, p[i].ms,
		       p[i].bytes, p[i].flops);
		CHECK(p[i].ms >= 0);
		total += p[i].ms;
		if (!strcmp(p[i].op, "linear")) {
			seen |= 1;
			CHECK_STR(p[i].kernel, "sgemm");
			CHECK_NEAR(p[i].flops, 2.0 * 4 * 16 * 37, 0);
			/* t [4,37], w [16,37], b [16], r [4,16] */
			CHECK_NEAR(p[i].bytes, 4.0 * (4 * 37 + 16 * 37 + 16 + 4 * 16), 0);
		} else if (!strcmp(p[i].op, "cumsum")) {
			seen |= 2;
			CHECK_STR(p[i].kernel, "ref interpreter");
			CHECK_NEAR(p[i].flops, 0, 0);
			CHECK_NEAR(p[i].bytes, 4.0 * 2 * 4 * 37, 0);
		} else {
			seen |= 4;
			CHECK(p[i].kernel[0] == 'k'); /* a generated kernel */
			CHECK(!strcmp(p[i].op, "add") || !strcmp(p[i].op, "tanh"));
		}
	}
	CHECK(seen == 7);
	CHECK(total > 0 && total <= run_ms * 50); /* in ms, per call: not seconds, not a sum of calls */
	sinter_free(p);
	CHECK(sinter_trace_write(trace, &err) == SINTER_OK);
	s = slurp(trace);
	/* one span per step of the run, none from the bench's or the
	 * profile's calls; the profile on a track of its own */
	CHECK(s && count(s, "\"cat\": \"cpu step\"") == 3);
	CHECK(s && strstr(s, "\"name\": \"linear sgemm\", \"cat\": \"cpu step\""));
	CHECK(s && strstr(s, "cpu: steps (each timed where it runs, mean of 5 calls)"));
	CHECK(s && count(s, "\"cat\": \"device\"") == 3);
	free(s);
	sinter_compiled_free(c);

	/* ---- the plan cache: why it misses, sinter cache explain ---- */
	char *text = explain(m, pdir);
	CHECK(text && strstr(text, "plan: miss\n") && strstr(text, "no stored plan to compare with"));
	sinter_free(text);
	sinter_log_set_handler(on_log, NULL);
	sinter_log_set_level(SINTER_LOG_INFO);
	c = compile_to(m, pdir, true, errf);
	sinter_log_set_level(SINTER_LOG_WARN);
	sinter_log_set_handler(NULL, NULL);
	CHECK(strstr(logged, "plan cache (cpu): miss (no entry for this model, shapes, mode, precision, fusion, host and "
			     "weights"));
	CHECK(strstr(logged, "cpu: object cache miss (no entry for this module's text, LLVM, target, CPU and features)"));
	sinter_compiled_free(c);
	text = explain(m, pdir);
	CHECK(text && strstr(text, "plan: hit ") && strstr(text, "objects: 1 of the 1 compiled modules"));
	sinter_free(text);
	sinter_model *m8 = model(8);
	text = explain(m8, pdir);
	CHECK(text && strstr(text, "plan: miss\n") && strstr(text, "differs in 2 components:"));
	CHECK(text && strstr(text, "shapes    this compile: x:[8,37] y:[37]\n              the entry:    x:[4,37] y:[37]"));
	if (text)
		printf("%s", text);
	sinter_free(text);

	sinter_model_free(m8);
	sinter_tensors_free(ins, nin);
	sinter_model_free(m);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return check_done("cpu_observe");
}
