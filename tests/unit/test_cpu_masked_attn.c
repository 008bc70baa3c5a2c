/* test_cpu_masked_attn.c: masked attention (the four-input form every
 * Hugging Face encoder and decoder export has) through the cpu plan cache
 * and a cpu package, by the public API. A model with an additive f32 mask
 * (broadcast over heads) and a bool mask (broadcast over batch and rows),
 * with grouped-query heads, is compiled for --device cpu into a fresh cache
 * folder and run on fresh random inputs against sinter_model_run_ref; a second
 * compile must be a plan hit with no warning at all (the plan reader once
 * refused the masked form as "a bad attention step", deleted the entry and
 * rebuilt it on every run) and give the same bits; a package written from
 * it must load and give the same bits again. Skipped (saying so) without
 * the cpu device. */
#include "sinter.h"
#include "sinter_tools.h"

#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *model =
	"sinter 1\n"
	"func @main(%q: f32[2,4,8,16], %k: f32[2,2,8,16], %v: f32[2,2,8,16], %m: f32[2,1,8,8], %b: bool[4,1,8])"
	" -> (f32[2,4,8,16], f32[2,4,8,16]) {\n"
	"  %a = scaled_dot_product_attention(%q, %k, %v, %m)\n"
	"  %c = scaled_dot_product_attention(%q, %k, %v, %b) scale=0.3\n"
	"  return %a, %c\n"
	"}\n";

#define NOUT 2

static int warnings;
static void on_warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "warning: %s\n", msg);
	warnings++;
}

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

/* Compiles m for cpu into cache; runs it on ins; *hit: a plan-cache hit.
 * NULL when it failed (reported). */
static sinter_tensor *compile_run(sinter_model *m, const char *cache, const sinter_tensor *ins, size_t nin, bool *hit)
{
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.device = SINTER_DEVICE_CPU;
	o.cache_dir = cache;
	o.threads = 2;
	o.warn = on_warn;
	sinter_error err;
	sinter_compiled *c = NULL;
	sinter_compile_stats st;
	sinter_compile_stats_init(&st);
	sinter_tensor *out = NULL;
	*hit = false;
	if (sinter_model_compile(m, &o, &c, &st, &err) != SINTER_OK) {
		fprintf(stderr, "compile: %s\n", err.message);
		CHECK(0);
		return NULL;
	}
	*hit = st.plan_hit;
	CHECK(st.ref_steps == 0); /* both attentions are CL_ATTN steps */
	if (sinter_compiled_run(c, ins, nin, &out, &err) != SINTER_OK) {
		fprintf(stderr, "run: %s\n", err.message);
		CHECK(0);
	}
	sinter_compiled_free(c);
	return out;
}

static bool same_bits(const sinter_tensor *a, const sinter_tensor *b)
{
	bool same = a && b;
	for (int k = 0; same && k < NOUT; k++)
		same = a[k].nbytes == b[k].nbytes && !memcmp(a[k].data, b[k].data, a[k].nbytes);
	return same;
}

int main(void)
{
	char why[256];
	if (sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) != SINTER_OK) {
		printf("skipped: %s\n", why);
		return 0;
	}
	char dir[] = "/tmp/sinter-cpu-mattn-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char cache[600], pkg[600], cmd[700];
	snprintf(cache, sizeof cache, "%s/cache", dir);
	snprintf(pkg, sizeof pkg, "%s/mattn.sinterpkg", dir);
	sinter_error err;
	sinter_model *m = NULL;
	if (sinter_model_parse(model, strlen(model), "mattn.sir", NULL, &m, &err) != SINTER_OK) {
		fprintf(stderr, "parse: %s\n", err.message);
		CHECK(0);
		return check_done("cpu_masked_attn");
	}
	CHECK(sinter_model_init_random(m, 7, &err) == SINTER_OK); /* no params: marks the weights loaded */
	sinter_tensor *ins = NULL, *want = NULL;
	size_t nin = 0;
	/* $SINTER_TEST_SEED replays a run (its seed is printed) */
	const char *env = getenv("SINTER_TEST_SEED");
	uint64_t seed = env && *env ? strtoull(env, NULL, 10) : (uint64_t)getpid();
	printf("seed %llu\n", (unsigned long long)seed);
	CHECK(sinter_model_random_inputs(m, seed, &ins, &nin, &err) == SINTER_OK && nin == 5);
	if (nin != 5)
		return check_done("cpu_masked_attn");
	/* key 0 is kept in every row of the bool mask: no row is all masked
	 * (NaN in both, which the comparison would not see through) */
	uint8_t *keep = ins[4].data;
	for (int h = 0; h < 4; h++)
		keep[h * 8] = 1;
	CHECK(sinter_model_run_ref(m, ins, nin, &want, &err) == SINTER_OK);

	bool hit = false;
	sinter_tensor *a = compile_run(m, cache, ins, nin, &hit);
	CHECK(!hit);
	for (int k = 0; a && want && k < NOUT; k++) {
		double e = rel_l2(&a[k], &want[k]);
		printf("output %d: relative L2 %.3g against the reference\n", k, e);
		CHECK(e < 2e-5);
	}
	/* the cache's entry is read back: a hit, no warning, the same bits */
	sinter_tensor *b = compile_run(m, cache, ins, nin, &hit);
	CHECK(hit);
	CHECK(same_bits(a, b));
	CHECK(warnings == 0);
	printf("plan cache: second compile %s, %d warnings, %s bits\n", hit ? "a hit" : "a MISS", warnings,
	       same_bits(a, b) ? "the same" : "OTHER");

	/* a package round trip */
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.device = SINTER_DEVICE_CPU;
	o.cache_dir = cache;
	o.threads = 2;
	o.warn = on_warn;
	CHECK(sinter_model_compile_kernels(m, &o, pkg, NULL, &err) == SINTER_OK);
	sinter_compile_options lo;
	sinter_compile_options_init(&lo);
	lo.threads = 2;
	lo.warn = on_warn;
	sinter_compiled *pc = NULL;
	sinter_tensor *p = NULL;
	if (sinter_package_load(pkg, &lo, &pc, NULL, &err) != SINTER_OK) {
		fprintf(stderr, "load package: %s\n", err.message);
		CHECK(0);
	} else {
		CHECK(sinter_compiled_device(pc) == SINTER_DEVICE_CPU);
		CHECK(sinter_compiled_run(pc, ins, nin, &p, &err) == SINTER_OK);
	}
	CHECK(same_bits(a, p));
	CHECK(warnings == 0);
	printf("package: %s bits\n", same_bits(a, p) ? "the same" : "OTHER");

	sinter_compiled_free(pc);
	sinter_tensors_free(p, p ? NOUT : 0);
	sinter_tensors_free(a, a ? NOUT : 0);
	sinter_tensors_free(b, b ? NOUT : 0);
	sinter_tensors_free(want, want ? NOUT : 0);
	sinter_tensors_free(ins, nin);
	sinter_model_free(m);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
	return check_done("cpu_masked_attn");
}
