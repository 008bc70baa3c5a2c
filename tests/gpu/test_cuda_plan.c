/* test_cuda_plan.c: the compiled plan as an artifact, through the public
 * API on the GPU: a plan-cache hit gives bit-identical outputs without
 * building anything; corrupt, truncated and stale entries are reported
 * and rebuilt; an AOT package runs and matches; a model with a symbolic
 * batch runs at batch 1, 3 and 17 from one compiled object, each batch
 * against the reference interpreter on fresh random inputs. */
#include "sinter.h"
#include "sinter_tools.h"

#include "gpu_check.h"

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

static char warned[4096];
static int nwarn;
static void on_warn(void *ctx, const char *msg)
{
	(void)ctx;
	snprintf(warned, sizeof warned, "%s", msg);
	nwarn++;
}

static sinter_model *load(const char *path, int64_t n)
{
	sinter_shape_binding b = {"N", n};
	sinter_load_options o = {.size = sizeof(sinter_load_options), .shapes = &b, .nshapes = n > 0};
	sinter_model *m = NULL;
	sinter_error err;
	if (sinter_model_load(path, &o, &m, &err)) {
		fprintf(stderr, "%s\n", err.message);
		return NULL;
	}
	return m;
}

/* Compiles m and runs it on in; *hit says whether the plan was cached. */
static sinter_tensor *compile_run(const sinter_model *m, const sinter_compile_options *o, const sinter_tensor *in,
				  size_t nin, bool *hit)
{
	sinter_compiled *c = NULL;
	sinter_compile_stats st;
	sinter_compile_stats_init(&st);
	sinter_tensor *out = NULL;
	sinter_error err;
	if (sinter_model_compile(m, o, &c, &st, &err) || sinter_compiled_run(c, in, nin, &out, &err)) {
		fprintf(stderr, "compile/run: %s\n", err.message);
		out = NULL;
	}
	if (hit)
		*hit = st.plan_hit;
	sinter_compiled_free(c);
	return out;
}

static bool same(const sinter_tensor *a, const sinter_tensor *b, size_t n)
{
	if (!a || !b)
		return false;
	for (size_t i = 0; i < n; i++)
		if (a[i].nbytes != b[i].nbytes || memcmp(a[i].data, b[i].data, a[i].nbytes))
			return false;
	return true;
}

static double rel_l2(const sinter_tensor *a, const sinter_tensor *b)
{
	if (!a || !b || a->dtype != SINTER_F32 || a->nbytes != b->nbytes)
		return INFINITY;
	const float *x = a->data, *y = b->data;
	double num = 0, den = 0;
	for (size_t i = 0; i < a->nbytes / 4; i++) {
		num += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
		den += (double)x[i] * x[i];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void corrupt_plans(const char *dir, int how)
{
	char cmd[1024];
	/* how 0: flip a byte in the middle; 1: cut the file in half */
	snprintf(cmd, sizeof cmd,
		 how ? "for f in %s/plans/*/*.plan; do s=$(stat -c %%s $f); truncate -s $((s/2)) $f; done"
		     : "for f in %s/plans/*/*.plan; do s=$(stat -c %%s $f); printf '\\x5a' | dd of=$f bs=1 seek=$((s/2)) conv=notrunc 2>/dev/null; done",
		 dir);
	CHECK(system(cmd) == 0);
}

int main(void)
{
	char why[512];
	if (sinter_device_available(SINTER_DEVICE_CUDA, why, sizeof why, NULL) != SINTER_OK) {
		printf("skipped: no CUDA device (%s)\n", why);
		return GPU_SKIP;
	}
	char dir[] = "/tmp/sinter-plan-test-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char sir[600], pkg[600];
	snprintf(sir, sizeof sir, "%s/mlp.sir", dir);
	snprintf(pkg, sizeof pkg, "%s/mlp.sinterpkg", dir);
	sinter_error err;

	/* a model with a weights file of its own, so that stale weights can be made */
	sinter_model *m0 = load("samples/mlp.sir", 0);
	CHECK(m0 && !sinter_model_init_random(m0, 5, &err) && !sinter_model_save(m0, sir, &err));
	sinter_model_free(m0);
	sinter_model *m = load(sir, 8);
	sinter_tensor *in = NULL;
	size_t nin = 0;
	CHECK(m && !sinter_model_load_weights(m, NULL, 0, NULL, &err) && !sinter_model_random_inputs(m, 11, &in, &nin, &err));
	if (!m || !in)
		return 1;
	size_t nout = sinter_model_num_outputs(m);

	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.cache_dir = dir;
	o.warn = on_warn;
	o.precision = SINTER_PREC_BF16;
	bool hit = true;
	sinter_tensor *a = compile_run(m, &o, in, nin, &hit);
	CHECK(a && !hit);
	sinter_tensor *b = compile_run(m, &o, in, nin, &hit);
	CHECK(b && hit && same(a, b, nout));
	printf("plan cache: miss then hit, outputs bit-identical: %s\n", hit && same(a, b, nout) ? "ok" : "FAIL");
	sinter_tensors_free(b, nout);

	for (int how = 0; how < 2; how++) {
		corrupt_plans(dir, how);
		nwarn = 0;
		b = compile_run(m, &o, in, nin, &hit);
		CHECK(b && !hit && nwarn == 1 && strstr(warned, "corrupt"));
		CHECK(same(a, b, nout));
		printf("plan cache: %s entry: \"%s\", rebuilt, same outputs: %s\n", how ? "truncated" : "corrupt", warned,
		       !hit && same(a, b, nout) ? "ok" : "FAIL");
		sinter_tensors_free(b, nout);
		b = compile_run(m, &o, in, nin, &hit);
		CHECK(b && hit && same(a, b, nout));
		sinter_tensors_free(b, nout);
	}

	/* stale: other weights under the same file name */
	sleep(1);
	m0 = load("samples/mlp.sir", 0);
	CHECK(m0 && !sinter_model_init_random(m0, 6, &err) && !sinter_model_save(m0, sir, &err));
	sinter_model_free(m0);
	sinter_model *m2 = load(sir, 8);
	CHECK(m2 && !sinter_model_load_weights(m2, NULL, 0, NULL, &err));
	nwarn = 0;
	b = compile_run(m2, &o, in, nin, &hit);
	sinter_tensor *r = NULL;
	CHECK(!sinter_model_run_ref(m2, in, nin, &r, &err));
	double e2 = b && r ? rel_l2(&r[0], &b[0]) : INFINITY;
	CHECK(b && !hit && nwarn == 1 && strstr(warned, "stale") && !same(a, b, nout) && e2 < 2e-2);
	printf("plan cache: stale weights: \"%s\", rebuilt, new outputs vs ref %.3g: %s\n", warned, e2,
	       !hit && e2 < 2e-2 ? "ok" : "FAIL");
	sinter_tensors_free(b, nout);
	sinter_tensors_free(r, nout);

	/* AOT package: the same plan from one file */
	sinter_compile_stats st;
	sinter_compile_stats_init(&st);
	CHECK(!sinter_model_compile_kernels(m2, &o, pkg, &st, &err));
	sinter_compiled *c = NULL;
	sinter_tensor *p1 = NULL, *p2 = NULL;
	CHECK(!sinter_package_load(pkg, &o, &c, &st, &err) && !sinter_compiled_run(c, in, nin, &p1, &err));
	sinter_compiled_free(c);
	p2 = compile_run(m2, &o, in, nin, &hit);
	CHECK(hit && same(p1, p2, nout));
	printf("package: runs, outputs bit-identical to the compiled model: %s\n", same(p1, p2, nout) ? "ok" : "FAIL");
	/* where NVRTC cannot be loaded: compiling fails, the package runs */
	setenv("SINTER_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so", 1);
	sinter_tensors_free(p1, nout);
	p1 = NULL;
	c = NULL;
	sinter_compile_options nc = o;
	nc.no_plan_cache = true;
	nc.cache_dir = "";
	sinter_status cst = sinter_model_compile(m2, &nc, &c, &st, &err);
	CHECK(cst == SINTER_E_ENV && strstr(err.message, "NVRTC"));
	sinter_compiled_free(c);
	c = NULL;
	bool pkg_ok = !sinter_package_load(pkg, &o, &c, &st, &err) && !sinter_compiled_run(c, in, nin, &p1, &err);
	CHECK(pkg_ok && same(p1, p2, nout));
	printf("package with NVRTC unloadable: compile refused (exit %d), package runs, same outputs: %s\n", (int)cst,
	       pkg_ok && same(p1, p2, nout) ? "ok" : "FAIL");
	sinter_compiled_free(c);
	c = NULL;
	unsetenv("SINTER_NVRTC_LIBRARY");
	/* a package for another arch is refused, naming both */
	char pkg80[700], want[32];
	snprintf(pkg80, sizeof pkg80, "%s/mlp80.sinterpkg", dir);
	sinter_compile_options o80 = o;
	o80.target_sm = 80;
	CHECK(!sinter_model_compile_kernels(m2, &o80, pkg80, &st, &err));
	sinter_status lst = sinter_package_load(pkg80, &o, &c, &st, &err);
	snprintf(want, sizeof want, "sm_%d", 80);
	CHECK(lst == SINTER_E_ENV && strstr(err.message, want) && strstr(err.message, "the GPU") && !c);
	printf("package for sm_80: \"%s\": %s\n", err.message, lst == SINTER_E_ENV ? "ok" : "FAIL");
	sinter_compiled_free(c);
	sinter_tensors_free(p1, nout);
	sinter_tensors_free(p2, nout);
	sinter_model_free(m2);

	/* dynamic batch: one compiled object, batches 1, 3, 17, 3 */
	sinter_model *dyn = load(sir, 0);
	CHECK(dyn && sinter_model_num_symbols(dyn) == 1 && !sinter_model_load_weights(dyn, NULL, 0, NULL, &err));
	o.precision = SINTER_PREC_FP32;
	c = NULL;
	CHECK(dyn && !sinter_model_compile(dyn, &o, &c, &st, &err));
	const int64_t batches[] = {1, 3, 17, 3};
	for (int k = 0; c && k < 4; k++) {
		sinter_model *mb = load(sir, batches[k]);
		sinter_tensor *bi = NULL, *got = NULL, *want = NULL;
		size_t nb = 0;
		bool ok = mb && !sinter_model_load_weights(mb, NULL, 0, NULL, &err) &&
			  !sinter_model_random_inputs(mb, 100 + (uint64_t)k, &bi, &nb, &err) &&
			  !sinter_compiled_run(c, bi, nb, &got, &err) && !sinter_model_run_ref(mb, bi, nb, &want, &err);
		double e = ok ? rel_l2(&want[0], &got[0]) : INFINITY;
		CHECK(ok && got[0].shape[0] == batches[k] && e < 1e-5);
		printf("dynamic batch %lld: rel L2 vs ref %.3g: %s\n", (long long)batches[k], e, e < 1e-5 ? "ok" : "FAIL");
		if (!ok)
			fprintf(stderr, "%s\n", err.message);
		sinter_tensors_free(bi, nb);
		sinter_tensors_free(got, nout);
		sinter_tensors_free(want, nout);
		sinter_model_free(mb);
	}
	sinter_compiled_free(c);
	sinter_model_free(dyn);

	sinter_tensors_free(a, nout);
	sinter_tensors_free(in, nin);
	sinter_model_free(m);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	printf("plan: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
