/* test_cuda_tune.c: max-autotune end to end on the GPU, through the public
 * API. A model with elementwise kernels and a cuBLASLt product is tuned
 * cold (candidates timed, records written) and its outputs match the
 * reference interpreter; a second compile on the same cache is a plan hit
 * with zero timing runs and bit-identical outputs; an empty cache dir
 * with the exported records imported ("a second machine") builds the plan
 * with zero timing runs, every decision from a record, same outputs;
 * records whose config this build cannot render are rejected, counted,
 * and the kernels tuned again. */
#include "sinter.h"
#include "sinter_tools.h"

#include "gpu_check.h"

#include "autotune/at.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures, checks;
#define CHECK(c)                                                                          \
	do {                                                                              \
		checks++;                                                                 \
		if (!(c)) {                                                               \
			failures++;                                                       \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
		}                                                                         \
	} while (0)

static void quiet(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg;
}

static const char model_text[] =
	"sinter 1\n"
	"func @main(%x: f32[64,1024], %y: f32[64,1024]) -> (f32[64,512]) {\n"
	"  %w = param f32[512,1024] \"w\"\n"
	"  %b = param f32[512] \"b\"\n"
	"  %a = add(%x, %y)\n"
	"  %r = relu(%a)\n"
	"  %l = linear(%r, %w, %b)\n"
	"  %t = tanh(%l)\n"
	"  %m = mul(%t, %l)\n"
	"  return %m\n"
	"}\n";

static sinter_tensor *compile_run(const sinter_model *m, const sinter_compile_options *o, const sinter_tensor *in,
				  size_t nin, sinter_compile_stats *st)
{
	sinter_compiled *c = NULL;
	sinter_tensor *out = NULL;
	sinter_error err;
	memset(st, 0, sizeof *st);
	if (sinter_model_compile(m, o, &c, st, &err) || sinter_compiled_run(c, in, nin, &out, &err)) {
		fprintf(stderr, "compile/run: %s\n", err.message);
		out = NULL;
	}
	sinter_compiled_free(c);
	return out;
}

static double rel_l2(const sinter_tensor *a, const sinter_tensor *b)
{
	if (!a || !b || a->nbytes != b->nbytes)
		return INFINITY;
	const float *x = a->data, *y = b->data;
	double num = 0, den = 0;
	for (size_t i = 0; i < a->nbytes / 4; i++) {
		num += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
		den += (double)y[i] * y[i];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void show(const char *what, const sinter_compile_stats *s)
{
	printf("%s: plan %s, %zu tunable, %zu from records, %zu tuned, %zu candidates, %zu timing runs, %zu scored out, "
	       "%zu rejected, %.2f s, %.2fx\n",
	       what, s->plan_hit ? "hit" : "built", s->tune_kernels, s->tune_from_records, s->tune_tuned,
	       s->tune_candidates, s->tune_timings, s->tune_failed, s->tune_rejected, s->tune_s, s->tune_speedup);
}

int main(void)
{
	char why[512];
	if (sinter_device_available(SINTER_DEVICE_CUDA, why, sizeof why, NULL) != SINTER_OK) {
		printf("skipped: no CUDA device (%s)\n", why);
		return GPU_SKIP;
	}
	char dir[] = "/tmp/sinter-tune-test-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char d1[256], d2[256], d3[256], rec[256], bad[256];
	snprintf(d1, sizeof d1, "%s/one", dir);
	snprintf(d2, sizeof d2, "%s/two", dir);
	snprintf(d3, sizeof d3, "%s/three", dir);
	snprintf(rec, sizeof rec, "%s/records.jsonl", dir);
	snprintf(bad, sizeof bad, "%s/bad.jsonl", dir);
	sinter_error err;
	sinter_model *m = NULL;
	sinter_tensor *in = NULL, *ref = NULL;
	size_t nin = 0;
	if (sinter_model_parse(model_text, sizeof model_text - 1, "tune.sir", NULL, &m, &err) ||
	    sinter_model_init_random(m, 3, &err) || sinter_model_random_inputs(m, 17, &in, &nin, &err) ||
	    sinter_model_run_ref(m, in, nin, &ref, &err)) {
		fprintf(stderr, "setup: %s\n", err.message);
		return 1;
	}
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.mode = "max-autotune";
	o.cache_dir = d1;
	o.cache_remote = "";
	o.warn = quiet;
	o.tune_budget_s = 20;
	o.tune_progress = SINTER_TUNE_SUMMARY;

	/* cold: tuned now */
	sinter_compile_stats s1, s2, s3, s4;
	sinter_compile_stats_init(&s1);
	sinter_compile_stats_init(&s2);
	sinter_compile_stats_init(&s3);
	sinter_compile_stats_init(&s4);
	sinter_tensor *a = compile_run(m, &o, in, nin, &s1);
	show("cold", &s1);
	double e1 = rel_l2(a, ref);
	printf("cold: rel L2 against the reference %.3g\n", e1);
	CHECK(a && e1 < 1e-5);
	/* fused: add+relu, tanh*l, and the product with its bias */
	CHECK(!s1.plan_hit && s1.tune_kernels >= 3);
	CHECK(s1.tune_tuned == s1.tune_kernels && s1.tune_from_records == 0);
	CHECK(s1.tune_timings > s1.tune_kernels && s1.tune_candidates > 0);

	/* warm: the plan cache, no timing */
	sinter_tensor *b = compile_run(m, &o, in, nin, &s2);
	show("warm", &s2);
	CHECK(b && s2.plan_hit && s2.tune_timings == 0);
	CHECK(a && b && !memcmp(a->data, b->data, a->nbytes));

	/* explain: the same options hit; another precision misses, naming it */
	char *ex = NULL;
	CHECK(!sinter_cache_explain(m, &o, &ex, &err) && ex && strstr(ex, "plan: hit"));
	if (ex)
		printf("explain (same options):\n%s", ex);
	sinter_free(ex);
	o.precision = SINTER_PREC_TF32;
	ex = NULL;
	CHECK(!sinter_cache_explain(m, &o, &ex, &err) && ex && strstr(ex, "plan: miss") && strstr(ex, "precision"));
	if (ex)
		printf("explain (tf32):\n%s", ex);
	sinter_free(ex);
	o.precision = SINTER_PREC_FP32;

	/* a second machine: an empty cache dir with the records imported */
	size_t n, nr, nw, rej;
	CHECK(!sinter_tuning_export(d1, rec, &n, &err) && n == s1.tune_kernels);
	CHECK(!sinter_tuning_import(d2, rec, &nr, &nw, &rej, &err) && nr == n && nw == n && rej == 0);
	o.cache_dir = d2;
	sinter_tensor *c = compile_run(m, &o, in, nin, &s3);
	show("imported", &s3);
	CHECK(c && !s3.plan_hit && s3.tune_timings == 0 && s3.tune_from_records == s3.tune_kernels);
	CHECK(a && c && !memcmp(a->data, c->data, a->nbytes));

	/* records naming configs this build cannot render: rejected, counted, tuned again */
	at_record *rs = NULL;
	size_t nrs = 0, rrej = 0;
	sn_err e = {0};
	CHECK(at_file_read(rec, &rs, &nrs, &rrej, &e) == SN_OK);
	size_t kernels = 0;
	for (size_t i = 0; i < nrs; i++)
		if (rs[i].kind == AT_KERNEL) {
			rs[i].cfg.vec = 64; /* plausible as data, never rendered */
			kernels++;
		}
	CHECK(at_file_write(bad, rs, nrs, &e) == SN_OK);
	free(rs);
	CHECK(!sinter_tuning_import(d3, bad, &nr, &nw, &rej, &err));
	o.cache_dir = d3;
	sinter_tensor *d = compile_run(m, &o, in, nin, &s4);
	show("bad records", &s4);
	CHECK(d && s4.tune_rejected >= kernels && s4.tune_tuned >= kernels);
	CHECK(d && rel_l2(d, ref) < 1e-5);

	/* a budget too small for anything: defaults kept, no records, the
	 * plan not stored (the next compile tunes), outputs still right */
	char d4[256];
	snprintf(d4, sizeof d4, "%s/four", dir);
	o.cache_dir = d4;
	o.tune_budget_s = 1e-6;
	sinter_compile_stats s5, s6;
	sinter_compile_stats_init(&s5);
	sinter_compile_stats_init(&s6);
	sinter_tensor *f = compile_run(m, &o, in, nin, &s5);
	show("no budget", &s5);
	CHECK(f && !s5.plan_hit && s5.tune_tuned + s5.tune_from_records < s5.tune_kernels);
	CHECK(f && rel_l2(f, ref) < 1e-5);
	size_t valid = 0;
	CHECK(!sinter_tuning_stats(d4, &valid, &rej, &err) && valid == s5.tune_tuned);
	sinter_tensor *g2 = compile_run(m, &o, in, nin, &s6);
	CHECK(g2 && !s6.plan_hit);

	size_t nout = sinter_model_num_outputs(m);
	sinter_tensors_free(f, nout);
	sinter_tensors_free(g2, nout);
	sinter_tensors_free(a, nout);
	sinter_tensors_free(b, nout);
	sinter_tensors_free(c, nout);
	sinter_tensors_free(d, nout);
	sinter_tensors_free(ref, nout);
	sinter_tensors_free(in, nin);
	sinter_model_free(m);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	printf("tune: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
