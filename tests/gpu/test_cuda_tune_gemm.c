/* test_cuda_tune_gemm.c: the GEMM template against cuBLASLt in
 * max-autotune, through the public API. A bf16 model whose two products
 * are cuBLASLt groups (bias + relu; bias + a residual) is tuned cold (the
 * template's configs are candidates beside cuBLASLt's algorithms; outputs
 * against the reference interpreter). Then the template is made to win:
 * the cold run's product records are rewritten as "gemm_template"
 * records (on sm_90 split-K over a cluster for one, the template's
 * default for the other) and imported into an empty cache dir; the
 * compile takes them with zero timing runs, its profile shows no
 * cuBLASLt step left (each product is a template kernel applying the
 * group's bias, relu and residual), and its outputs on fresh random
 * inputs match the reference. A second compile is a plan-cache hit with
 * bit-identical outputs; a record naming a config the template refuses
 * is rejected, counted, and the product tuned again. */
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
	"func @main(%x: bf16[96,512], %res: bf16[96,768]) -> (bf16[96,768]) {\n"
	"  %w1 = param bf16[2048,512] \"w1\"\n"
	"  %b1 = param bf16[2048] \"b1\"\n"
	"  %w2 = param bf16[768,2048] \"w2\"\n"
	"  %b2 = param bf16[768] \"b2\"\n"
	"  %h = linear(%x, %w1, %b1)\n"
	"  %a = relu(%h)\n"
	"  %y = linear(%a, %w2, %b2)\n"
	"  %o = add(%y, %res)\n"
	"  return %o\n"
	"}\n";

/* Compiles and runs m; *cublas: the plan's cuBLASLt steps (profile). */
static sinter_tensor *compile_run(const sinter_model *m, const sinter_compile_options *o, const sinter_tensor *in,
				  size_t nin, sinter_compile_stats *st, int *cublas, int *kernels)
{
	sinter_compiled *c = NULL;
	sinter_tensor *out = NULL;
	sinter_error err;
	memset(st, 0, sizeof *st);
	*cublas = *kernels = -1;
	if (sinter_model_compile(m, o, &c, st, &err) || sinter_compiled_run(c, in, nin, &out, &err)) {
		fprintf(stderr, "compile/run: %s\n", err.message);
		out = NULL;
	} else {
		sinter_profile_entry *pe = NULL;
		size_t np = 0;
		if (!sinter_compiled_profile(c, 2, &pe, &np, &err)) {
			*cublas = *kernels = 0;
			for (size_t i = 0; i < np; i++) {
				bool bl = !strcmp(pe[i].kernel, "cublasLt");
				*cublas += bl;
				*kernels += !bl && !strncmp(pe[i].kernel, "gemm_tc_", 8);
			}
		}
		sinter_free(pe);
	}
	sinter_compiled_free(c);
	return out;
}

static float bf16f(const void *p, size_t i)
{
	uint16_t h;
	memcpy(&h, (const char *)p + 2 * i, 2);
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static double rel_l2(const sinter_tensor *a, const sinter_tensor *b)
{
	if (!a || !b || a->nbytes != b->nbytes)
		return INFINITY;
	double num = 0, den = 0;
	for (size_t i = 0; i < a->nbytes / 2; i++) {
		double x = bf16f(a->data, i), y = bf16f(b->data, i);
		num += (x - y) * (x - y);
		den += y * y;
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void show(const char *what, const sinter_compile_stats *s, int cublas, int tk)
{
	printf("%s: plan %s, %zu tunable, %zu from records, %zu tuned, %zu candidates, %zu timing runs, %zu rejected, "
	       "%.2fx; steps: %d cuBLASLt, %d GEMM template\n",
	       what, s->plan_hit ? "hit" : "built", s->tune_kernels, s->tune_from_records, s->tune_tuned,
	       s->tune_candidates, s->tune_timings, s->tune_rejected, s->tune_speedup, cublas, tk);
}

int main(void)
{
	char why[512];
	if (sinter_device_available(SINTER_DEVICE_CUDA, why, sizeof why, NULL) != SINTER_OK) {
		printf("skipped: no CUDA device (%s)\n", why);
		return GPU_SKIP;
	}
	char dir[] = "/tmp/sinter-tune-gemm-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char d1[256], d2[256], d3[256], rec[256], forced[256], bad[256];
	snprintf(d1, sizeof d1, "%s/one", dir);
	snprintf(d2, sizeof d2, "%s/two", dir);
	snprintf(d3, sizeof d3, "%s/three", dir);
	snprintf(rec, sizeof rec, "%s/records.jsonl", dir);
	snprintf(forced, sizeof forced, "%s/forced.jsonl", dir);
	snprintf(bad, sizeof bad, "%s/bad.jsonl", dir);
	sinter_error err;
	sinter_model *m = NULL;
	sinter_tensor *in = NULL, *ref = NULL, *in2 = NULL, *ref2 = NULL;
	size_t nin = 0;
	if (sinter_model_parse(model_text, sizeof model_text - 1, "tune_gemm.sir", NULL, &m, &err) ||
	    sinter_model_init_random(m, 5, &err) || sinter_model_random_inputs(m, 23, &in, &nin, &err) ||
	    sinter_model_run_ref(m, in, nin, &ref, &err) || sinter_model_random_inputs(m, 977, &in2, &nin, &err) ||
	    sinter_model_run_ref(m, in2, nin, &ref2, &err)) {
		fprintf(stderr, "setup: %s\n", err.message);
		return 1;
	}
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.mode = "max-autotune";
	o.precision = SINTER_PREC_BF16;
	o.cache_dir = d1;
	o.cache_remote = "";
	o.warn = quiet;
	o.tune_budget_s = 20;
	o.tune_progress = SINTER_TUNE_SUMMARY;
	const double tol = 1e-2;

	/* cold: the template's configs timed beside cuBLASLt's algorithms */
	sinter_compile_stats s1, s2, s3, s4;
	sinter_compile_stats_init(&s1);
	sinter_compile_stats_init(&s2);
	sinter_compile_stats_init(&s3);
	sinter_compile_stats_init(&s4);
	int bl, tk;
	sinter_tensor *a = compile_run(m, &o, in, nin, &s1, &bl, &tk);
	show("cold", &s1, bl, tk);
	double e1 = rel_l2(a, ref);
	printf("cold: rel L2 against the reference %.3g\n", e1);
	CHECK(a && e1 < tol);
	CHECK(!s1.plan_hit && s1.tune_kernels >= 2 && s1.tune_candidates > 0);
	CHECK(bl + tk == 2); /* two products, each cuBLASLt's or the template's */

	/* the template made to win: every product record rewritten */
	size_t n, nr, nw, rej;
	CHECK(!sinter_tuning_export(d1, rec, &n, &err) && n == s1.tune_kernels);
	at_record *rs = NULL;
	size_t nrs = 0, rrej = 0, products = 0, won = 0;
	sn_err e = {0};
	CHECK(at_file_read(rec, &rs, &nrs, &rrej, &e) == SN_OK && rrej == 0);
	int sm = nrs ? rs[0].dev.sm : 0; /* the device the records were measured on */
	for (size_t i = 0; i < nrs; i++) {
		if (rs[i].kind != AT_BLAS && rs[i].kind != AT_GEMM)
			continue;
		won += rs[i].kind == AT_GEMM;
		rs[i].kind = AT_GEMM;
		memset(&rs[i].algo, 0, sizeof rs[i].algo);
		memset(&rs[i].cfg, 0, sizeof rs[i].cfg); /* the template's default */
		if (products++ == 0)
			rs[i].cfg = sm == 90 ? (cg_config){.variant = 2, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6,
							   .split_k = 2}
					     : (cg_config){.variant = 1, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 4};
	}
	printf("cold: %zu products, the template won %zu\n", products, won);
	CHECK(products == 2);
	CHECK(at_file_write(forced, rs, nrs, &e) == SN_OK);
	CHECK(!sinter_tuning_import(d2, forced, &nr, &nw, &rej, &err) && nr == nrs && rej == 0);
	o.cache_dir = d2;
	sinter_tensor *b = compile_run(m, &o, in2, nin, &s2, &bl, &tk);
	show("template forced", &s2, bl, tk);
	double e2 = rel_l2(b, ref2);
	printf("template forced: rel L2 against the reference (fresh inputs) %.3g\n", e2);
	CHECK(b && e2 < tol);
	CHECK(s2.tune_timings == 0 && s2.tune_from_records == s2.tune_kernels && s2.tune_rejected == 0);
	CHECK(bl == 0 && tk == 2);

	/* the plan cache: a hit, the same bits, still no cuBLASLt step */
	sinter_tensor *c = compile_run(m, &o, in2, nin, &s3, &bl, &tk);
	show("warm", &s3, bl, tk);
	CHECK(c && s3.plan_hit && s3.tune_timings == 0 && bl == 0 && tk == 2);
	CHECK(b && c && !memcmp(b->data, c->data, b->nbytes));

	/* a template config the template refuses: rejected, tuned again */
	for (size_t i = 0; i < nrs; i++)
		if (rs[i].kind == AT_GEMM)
			rs[i].cfg = (cg_config){.variant = 2, .tile_m = 48, .tile_n = 24, .warps = 3, .stages = 9};
	CHECK(at_file_write(bad, rs, nrs, &e) == SN_OK);
	free(rs);
	CHECK(!sinter_tuning_import(d3, bad, &nr, &nw, &rej, &err));
	o.cache_dir = d3;
	sinter_tensor *d = compile_run(m, &o, in2, nin, &s4, &bl, &tk);
	show("refused records", &s4, bl, tk);
	CHECK(d && s4.tune_rejected >= 2 && s4.tune_tuned >= 2);
	CHECK(d && rel_l2(d, ref2) < tol);

	size_t nout = sinter_model_num_outputs(m);
	sinter_tensors_free(a, nout);
	sinter_tensors_free(b, nout);
	sinter_tensors_free(c, nout);
	sinter_tensors_free(d, nout);
	sinter_tensors_free(ref, nout);
	sinter_tensors_free(ref2, nout);
	sinter_tensors_free(in, nin);
	sinter_tensors_free(in2, nin);
	sinter_model_free(m);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	printf("tune_gemm: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
