/* test_cpu_api.c: the cpu device through the public API only. A model with
 * a fused pointwise chain, a layer_norm, a softmax, a linear with its
 * epilogue and an op that falls back (cumsum) is compiled with
 * sinter_compile_options.device = SINTER_DEVICE_CPU and run on fresh random inputs;
 * its outputs are compared with sinter_model_run_ref's (relative L2 < 2e-5, as
 * tests/cpu_ref.py argues). The object cache: a second compile into the
 * same folder runs no LLVM pass (cache_hits = kernels); an entry
 * overwritten with garbage is reported, rebuilt, and the results stay the
 * same. sinter_compiled_bench reuses the last inputs. A Winograd
 * convolution whose weights are an input is right on each run with new
 * ones. Built only with the
 * cpu device (skipped otherwise, saying so). */
#include "sinter.h"
#include "sinter_tools.h"

#include "check.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *model =
	"sinter 1\n"
	"func @main(%x: f32[4,37], %y: f32[37]) -> (f32[4,16], f32[4,37], f32[4,37]) {\n"
	"  %w = param f32[16,37] \"w\"\n"
	"  %b = param f32[16] \"b\"\n"
	"  %g = param f32[37] \"g\"\n"
	"  %a = add(%x, %y)\n"
	"  %t = tanh(%a)\n"
	"  %s = sigmoid(%t)\n"
	"  %ln = layer_norm(%s, %g) axis=-1\n"
	"  %l = linear(%ln, %w, %b)\n"
	"  %r = relu(%l)\n"
	"  %sm = softmax(%a) axis=-1\n"
	"  %cs = cumsum(%x) axis=1\n"
	"  return %r, %sm, %cs\n"
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

static int warnings;
static void on_warn(void *ctx, const char *msg)
{
	(void)ctx;
	if (strstr(msg, "corrupt"))
		warnings++;
}

/* Overwrites every cache entry under dir/kernels with garbage. */
static int spoil(const char *dir)
{
	char sub[512];
	snprintf(sub, sizeof sub, "%s/kernels", dir);
	DIR *d = opendir(sub);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[1024];
		snprintf(p, sizeof p, "%s/%s", sub, e->d_name);
		DIR *d2 = opendir(p);
		struct dirent *f;
		while (d2 && (f = readdir(d2))) {
			if (f->d_name[0] == '.')
				continue;
			char q[1536];
			snprintf(q, sizeof q, "%s/%s", p, f->d_name);
			FILE *fp = fopen(q, "r+b");
			if (fp) {
				fseek(fp, 100, SEEK_SET);
				fputs("garbage garbage garbage", fp);
				fclose(fp);
				n++;
			}
		}
		if (d2)
			closedir(d2);
	}
	if (d)
		closedir(d);
	return n;
}

int main(void)
{
	char why[256];
	if (sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) != SINTER_OK) {
		printf("skipped: %s\n", why);
		return 0;
	}
	char dir[] = "/tmp/sinter-cpu-api-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	sinter_error err;
	sinter_model *m = NULL;
	CHECK(sinter_model_parse(model, strlen(model), "cpu_api.sir", NULL, &m, &err) == SINTER_OK);
	CHECK(sinter_model_init_random(m, 7, &err) == SINTER_OK);
	sinter_tensor *ins = NULL, *want = NULL;
	size_t nin = 0;
	CHECK(sinter_model_random_inputs(m, (uint64_t)getpid(), &ins, &nin, &err) == SINTER_OK);
	CHECK(sinter_model_run_ref(m, ins, nin, &want, &err) == SINTER_OK);

	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.device = SINTER_DEVICE_CPU;
	o.cache_dir = dir;
	o.threads = 2;
	o.warn = on_warn;
	o.no_plan_cache = true; /* the object cache alone (test_cpu_plan_cache.c: the plan cache) */
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 2)
			CHECK(spoil(dir) > 0);
		sinter_compiled *c = NULL;
		sinter_compile_stats st;
		sinter_compile_stats_init(&st);
		if (sinter_model_compile(m, &o, &c, &st, &err) != SINTER_OK) {
			fprintf(stderr, "compile: %s\n", err.message);
			CHECK(0);
			break;
		}
		CHECK(st.kernels >= 2);     /* the fused chain, layer_norm, softmax */
		CHECK(st.ref_steps == 1);   /* cumsum */
		CHECK(sinter_compiled_num_inputs(c) == 2 && sinter_compiled_num_outputs(c) == 3);
		/* the second compile finds the object; the third finds it spoiled */
		CHECK(pass == 1 ? st.cache_hits == st.kernels : st.cache_hits == 0);
		sinter_tensor *got = NULL;
		CHECK(sinter_compiled_run(c, ins, nin, &got, &err) == SINTER_OK);
		for (int k = 0; got && k < 3; k++) {
			double e = rel_l2(&got[k], &want[k]);
			printf("pass %d output %d: relative L2 %.3g\n", pass, k, e);
			CHECK(e < 2e-5);
		}
		double ms[3];
		CHECK(sinter_compiled_bench(c, 1, 3, ms, &err) == SINTER_OK);
		CHECK(ms[0] >= 0 && ms[2] >= 0);
		/* the profile (test_cpu_observe.c checks its entries): nowhere to put it is a usage error */
		CHECK(sinter_compiled_profile(c, 1, NULL, NULL, &err) == SINTER_E_USAGE);
		sinter_profile_entry *prof = NULL;
		size_t nprof = 0;
		CHECK(sinter_compiled_profile(c, 1, &prof, &nprof, &err) == SINTER_OK && nprof >= 4);
		sinter_free(prof);
		sinter_tensors_free(got, 3);
		sinter_compiled_free(c);
	}
	CHECK(warnings >= 1);
	/* a gather runs natively: an index out of range is the input's error
	 * (exit 1), as on the reference interpreter, never a stray read */
	{
		static const char *gm = "sinter 1\n"
					"func @main(%i: i64[3]) -> (f32[3,4]) {\n"
					"  %t = param f32[5,4] \"t\"\n"
					"  %g = gather(%t, %i)\n"
					"  return %g\n"
					"}\n";
		sinter_model *g = NULL;
		CHECK(sinter_model_parse(gm, strlen(gm), "gather.sir", NULL, &g, &err) == SINTER_OK);
		CHECK(sinter_model_init_random(g, 3, &err) == SINTER_OK);
		sinter_compiled *gc = NULL;
		sinter_compile_stats gs;
		sinter_compile_stats_init(&gs);
		CHECK(sinter_model_compile(g, &o, &gc, &gs, &err) == SINTER_OK && gs.ref_steps == 0);
		int64_t idx[3] = {4, -5, 2};
		int64_t shape[1] = {3};
		sinter_tensor in = {.name = "i", .dtype = SINTER_I64, .rank = 1, .data = idx, .nbytes = sizeof idx};
		memcpy(in.shape, shape, sizeof shape);
		sinter_tensor *got = NULL, *want = NULL;
		CHECK(gc && sinter_compiled_run(gc, &in, 1, &got, &err) == SINTER_OK);
		CHECK(sinter_model_run_ref(g, &in, 1, &want, &err) == SINTER_OK);
		CHECK(got && want && !memcmp(got[0].data, want[0].data, 48));
		sinter_tensors_free(got, 1);
		sinter_tensors_free(want, 1);
		idx[1] = 5;
		got = NULL;
		CHECK(gc && sinter_compiled_run(gc, &in, 1, &got, &err) == SINTER_E_INPUT && !got);
		CHECK(strstr(err.message, "out of range") != NULL);
		sinter_compiled_free(gc);
		sinter_model_free(g);
	}
	/* a 3x3 convolution whose weights are an input (not a weight of the
	 * plan) on the Winograd path: two runs with other weights each match
	 * the reference (the transformed weights are made again per run) */
	{
		static const char *wm = "sinter 1\n"
					"func @main(%x: f32[1,20,20,20], %w: f32[24,20,3,3]) -> (f32[1,24,20,20]) {\n"
					"  %y = conv2d(%x, %w) pad=[1,1,1,1]\n"
					"  return %y\n"
					"}\n";
		sinter_model *wg = NULL;
		CHECK(sinter_model_parse(wm, strlen(wm), "winograd_input.sir", NULL, &wg, &err) == SINTER_OK);
		CHECK(sinter_model_init_random(wg, 5, &err) == SINTER_OK); /* no params: an empty weight set */
		sinter_compiled *wc = NULL;
		if (sinter_model_compile(wg, &o, &wc, NULL, &err) != SINTER_OK)
			fprintf(stderr, "compile: %s\n", err.message);
		CHECK(wc != NULL);
		for (int run = 0; wc && run < 2; run++) {
			sinter_tensor *wi = NULL, *got = NULL, *want = NULL;
			size_t nwi = 0;
			CHECK(sinter_model_random_inputs(wg, (uint64_t)getpid() + 11u * (uint64_t)run, &wi, &nwi, &err) == SINTER_OK);
			CHECK(sinter_compiled_run(wc, wi, nwi, &got, &err) == SINTER_OK);
			CHECK(sinter_model_run_ref(wg, wi, nwi, &want, &err) == SINTER_OK);
			double e = got && want ? rel_l2(&got[0], &want[0]) : 1;
			printf("winograd, weights as an input, run %d: relative L2 %.3g\n", run, e);
			CHECK(e < 2e-5);
			sinter_tensors_free(got, 1);
			sinter_tensors_free(want, 1);
			sinter_tensors_free(wi, nwi);
		}
		sinter_compiled_free(wc);
		sinter_model_free(wg);
	}
	/* what the cpu device does not take is a usage error */
	o.precision = SINTER_PREC_FP16; /* bf16 is taken: test_cpu_bf16.c */
	sinter_compiled *c = NULL;
	CHECK(sinter_model_compile(m, &o, &c, NULL, &err) == SINTER_E_USAGE && !c);
	o.precision = SINTER_PREC_FP32;
	o.device = (sinter_device)7; /* no such device */
	CHECK(sinter_model_compile(m, &o, &c, NULL, &err) == SINTER_E_USAGE && !c);
	size_t removed;
	sinter_cache_clear(dir, &removed, NULL);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	sinter_tensors_free(ins, nin);
	sinter_tensors_free(want, 3);
	sinter_model_free(m);
	return check_done("cpu_api");
}
