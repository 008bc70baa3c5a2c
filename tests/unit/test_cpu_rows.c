/* test_cpu_rows.c: row groups on the cpu device (FU_ROWS; codegen/cl_emit.c,
 * emit_row_group) against the reference interpreter, on random inputs:
 *  - tests/rows/norms.sir as written (RMSNorm, two layer norms, softmax,
 *    log_softmax and a group norm as the dynamo exporter writes them, in
 *    bf16 with their casts) and the same graph in f32: each norm is one
 *    kernel (6 steps, none on the reference interpreter; 32 before row
 *    groups), every output within a relative L2 error of 1e-6 (f32) or
 *    2e-3 (bf16, about one rounding of 8 bits in a few elements);
 *  - the shapes and forms norms.sir leaves out: a softmax over two axes
 *    (the row's offset taken apart), a log-sum-exp of rows of 7 (shorter
 *    than one vector: the tail alone) whose root is a per-row value, max
 *    and min of rows holding a NaN (it must win, as in the reference), a
 *    softmax-weighted mean whose exp is read by two later passes (the
 *    row's scratch), and a softmax over rows of 17000 (too long for the
 *    scratch: the exp computed again);
 *  - a plan with row groups goes through the plan cache and back.
 * Built only with the cpu device (skipped otherwise, saying so). */
#include "sinter.h"
#include "sinter_tools.h"

#include "check.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sinter_compile_options opts;

static double elem(const sinter_tensor *t, size_t i)
{
	if (t->dtype == SINTER_BF16) {
		uint16_t h;
		memcpy(&h, (const char *)t->data + 2 * i, 2);
		uint32_t u = (uint32_t)h << 16;
		float f;
		memcpy(&f, &u, 4);
		return f;
	}
	return ((const float *)t->data)[i];
}

/* Relative L2 error of got against want; NaN where the places of NaN
 * differ (or on a dtype other than f32 and bf16). */
static double rel_l2(const sinter_tensor *got, const sinter_tensor *want)
{
	if (got->dtype != want->dtype || got->nbytes != want->nbytes ||
	    (got->dtype != SINTER_F32 && got->dtype != SINTER_BF16))
		return NAN;
	size_t n = got->nbytes / (got->dtype == SINTER_F32 ? 4 : 2);
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		double a = elem(got, i), b = elem(want, i);
		if (isnan(a) != isnan(b))
			return NAN;
		if (isnan(a))
			continue;
		num += (a - b) * (a - b);
		den += b * b;
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Compiles text for cpu (N bound to n, when n > 0), requires want_steps steps with
 * none on the reference interpreter, runs it and the reference on the
 * same random inputs (nan_at: a NaN put there in input nan_in first, when
 * nan_in >= 0) and compares every output within tol. */
static void check_model(const char *label, const char *text, int64_t n, size_t want_steps, double tol, int nan_in,
			const size_t *nan_at, size_t nnan)
{
	sinter_shape_binding bind = {"N", n};
	sinter_load_options lo = {.size = sizeof(sinter_load_options), .shapes = &bind, .nshapes = n > 0};
	sinter_model *m = NULL;
	sinter_error err;
	if (sinter_model_parse(text, strlen(text), label, &lo, &m, &err) != SINTER_OK ||
	    sinter_model_init_random(m, 1, &err) != SINTER_OK) {
		fprintf(stderr, "%s: %s\n", label, err.message);
		CHECK(0);
		sinter_model_free(m);
		return;
	}
	sinter_compiled *c = NULL;
	sinter_compile_stats st;
	sinter_compile_stats_init(&st);
	if (sinter_model_compile(m, &opts, &c, &st, &err) != SINTER_OK) {
		fprintf(stderr, "%s: compile: %s\n", label, err.message);
		CHECK(0);
		sinter_model_free(m);
		return;
	}
	printf("%-14s %zu steps, %zu on the reference interpreter\n", label, st.steps, st.ref_steps);
	CHECK(st.steps == want_steps);
	CHECK(st.ref_steps == 0);
	sinter_tensor *in = NULL, *got = NULL, *want = NULL;
	size_t nin = 0;
	CHECK(sinter_model_random_inputs(m, 7, &in, &nin, &err) == SINTER_OK);
	if (in && nan_in >= 0 && (size_t)nan_in < nin && in[nan_in].dtype == SINTER_F32)
		for (size_t i = 0; i < nnan; i++)
			if (nan_at[i] < in[nan_in].nbytes / 4)
				((float *)in[nan_in].data)[nan_at[i]] = NAN;
	CHECK(in && sinter_compiled_run(c, in, nin, &got, &err) == SINTER_OK);
	CHECK(in && sinter_model_run_ref(m, in, nin, &want, &err) == SINTER_OK);
	size_t nout = sinter_model_num_outputs(m), nans = 0;
	for (size_t k = 0; got && want && k < nout; k++) {
		double r = rel_l2(&got[k], &want[k]);
		printf("  %-12s rel L2 %.3g\n", got[k].name ? got[k].name : "?", r);
		CHECK(r <= tol); /* false for NaN */
		for (size_t i = 0; got[k].dtype == SINTER_F32 && i < got[k].nbytes / 4; i++)
			nans += isnan(elem(&got[k], i));
	}
	/* the NaN put in reached the outputs (and, by rel_l2, at the
	 * reference's places) */
	CHECK(!nnan || nans > 0);
	if (got)
		sinter_tensors_free(got, nout);
	if (want)
		sinter_tensors_free(want, nout);
	if (in)
		sinter_tensors_free(in, nin);
	sinter_compiled_free(c);
	sinter_model_free(m);
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *s = NULL;
	if (fseek(f, 0, SEEK_END) == 0) {
		long n = ftell(f);
		if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (s = malloc((size_t)n + 1))) {
			if (fread(s, 1, (size_t)n, f) != (size_t)n) {
				free(s);
				s = NULL;
			} else {
				s[n] = 0;
			}
		}
	}
	fclose(f);
	return s;
}

static void norms(void)
{
	char *text = read_text(SINTER_SOURCE_DIR "/tests/rows/norms.sir");
	CHECK(text != NULL);
	if (!text)
		return;
	check_model("norms bf16", text, 2, 6, 2e-3, -1, NULL, 0);
	/* the same graph in f32 (its casts to f32 are then no-ops) */
	for (char *p = text; (p = strstr(p, "bf16"));)
		memmove(p, "f32", 3), memmove(p + 3, p + 4, strlen(p + 4) + 1);
	check_model("norms f32", text, 3, 6, 1e-6, -1, NULL, 0);
	free(text);
}

/* A plan with row groups stored in the plan cache is read back (the
 * reader once refused fusion groups past FU_ATTENTION: every run rebuilt
 * the plan, warning of a bad entry) and runs alike. */
static void cached(void)
{
	char *text = read_text(SINTER_SOURCE_DIR "/tests/rows/norms.sir");
	char dir[] = "/tmp/sinter_cpu_rows_XXXXXX";
	CHECK(text != NULL);
	CHECK(mkdtemp(dir) != NULL);
	sinter_shape_binding bind = {"N", 2};
	sinter_load_options lo = {.size = sizeof(sinter_load_options), .shapes = &bind, .nshapes = 1};
	sinter_compile_options o = opts;
	o.cache_dir = dir;
	sinter_model *m = NULL;
	sinter_error err;
	sinter_tensor *in = NULL, *out[2] = {NULL, NULL};
	size_t nin = 0, nout = 0;
	bool hit[2] = {false, false};
	if (text && sinter_model_parse(text, strlen(text), "norms.sir", &lo, &m, &err) == SINTER_OK &&
	    sinter_model_init_random(m, 1, &err) == SINTER_OK && sinter_model_random_inputs(m, 3, &in, &nin, &err) == SINTER_OK) {
		nout = sinter_model_num_outputs(m);
		for (int k = 0; k < 2; k++) {
			sinter_compiled *c = NULL;
			sinter_compile_stats st;
			sinter_compile_stats_init(&st);
			CHECK(sinter_model_compile(m, &o, &c, &st, &err) == SINTER_OK);
			hit[k] = st.plan_hit;
			CHECK(c && st.steps == 6 && sinter_compiled_run(c, in, nin, &out[k], &err) == SINTER_OK);
			sinter_compiled_free(c);
		}
	} else {
		CHECK(0);
	}
	printf("cache: first compile hit %d, second hit %d\n", hit[0], hit[1]);
	CHECK(!hit[0] && hit[1]);
	for (size_t k = 0; out[0] && out[1] && k < nout; k++)
		CHECK(out[0][k].nbytes == out[1][k].nbytes && !memcmp(out[0][k].data, out[1][k].data, out[0][k].nbytes));
	for (int k = 0; k < 2; k++)
		if (out[k])
			sinter_tensors_free(out[k], nout);
	if (in)
		sinter_tensors_free(in, nin);
	sinter_model_free(m);
	free(text);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

static void forms(void)
{
	static const char *text =
		"sinter 1\n"
		"func @main(%x: f32[3,4,5,37], %y: f32[6,7], %z: f32[4,100], %w: f32[5,300], %v: f32[2,17000]) ->\n"
		"          (f32[3,4,5,37], f32[6,1], f32[4,1], f32[4,1], f32[5,300], f32[2,17000]) {\n"
		"  %m = reduce_max(%x) axes=[-2,-1] keepdims=true\n"
		"  %d = sub(%x, %m)\n"
		"  %e = exp(%d)\n"
		"  %s = reduce_sum(%e) axes=[2,3] keepdims=true\n"
		"  %sm = div(%e, %s)\n"
		"  %ymn = reduce_min(%y) axes=[-1] keepdims=true\n"
		"  %yd = sub(%ymn, %y)\n"
		"  %ye = exp(%yd)\n"
		"  %ys = reduce_sum(%ye) axes=[-1] keepdims=true\n"
		"  %yl = log(%ys)\n"
		"  %lse = sub(%yl, %ymn)\n"
		"  %two = const f32[] 2.0\n"
		"  %zx = reduce_max(%z) axes=[-1] keepdims=true\n"
		"  %zmax = mul(%zx, %two)\n"
		"  %zn = reduce_min(%z) axes=[-1] keepdims=true\n"
		"  %zmin = mul(%zn, %two)\n"
		"  %wm = reduce_max(%w) axes=[-1] keepdims=true\n"
		"  %wd = sub(%w, %wm)\n"
		"  %we = exp(%wd)\n"
		"  %ws = reduce_sum(%we) axes=[-1] keepdims=true\n"
		"  %wx = mul(%we, %w)\n"
		"  %wt = reduce_sum(%wx) axes=[-1] keepdims=true\n"
		"  %wr = div(%wt, %ws)\n"
		"  %wo = mul(%we, %wr)\n"
		"  %vm = reduce_max(%v) axes=[-1] keepdims=true\n"
		"  %vd = sub(%v, %vm)\n"
		"  %ve = exp(%vd)\n"
		"  %vs = reduce_sum(%ve) axes=[-1] keepdims=true\n"
		"  %vo = div(%ve, %vs)\n"
		"  return %sm, %lse, %zmax, %zmin, %wo, %vo\n"
		"}\n";
	/* NaN in rows 1 and 3 of z: their max and min are NaN */
	static const size_t nan_at[] = {150, 399};
	check_model("forms f32", text, 0, 6, 1e-6, 2, nan_at, 2);
}

int main(void)
{
	char why[256];
	if (sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) != SINTER_OK) {
		printf("skipped: %s\n", why);
		return 0;
	}
	sinter_compile_options_init(&opts);
	opts.device = SINTER_DEVICE_CPU;
	opts.cache_dir = ""; /* no cache: every plan and kernel made now */
	opts.threads = 2;
	norms();
	forms();
	cached();
	return check_done("cpu_rows");
}
