/* test_api_conventions.c: the public API's shared rules (docs/API.md,
 * issue 31 item 18). Sized structs: an options struct of size 0 is
 * refused; an older, shorter one gets the defaults for the fields it lacks;
 * a newer, longer one is taken when its extra bytes are zero and refused
 * when one is set; stats are filled only as far as the caller's size. One
 * error convention: printing hands text through char ** with a status,
 * precision_parse and the input/output descriptions fail with a status and
 * a message, NULL err is taken. The device enum: names, availability, out
 * of range refused, ref makes no package, a compiled model's device. The compile checks run on
 * the cpu device (skipped, saying so, without it). */
#include "sinter.h"
#include "sinter_tools.h"

#include "check.h"

#include <stdlib.h>
#include <string.h>

static const char model[] = "sinter 1\n"
			    "func @main(%x: f32[N,3]) -> (f32[N,3]) {\n"
			    "  %y = relu(%x)\n"
			    "  %z = mul(%y, %x)\n"
			    "  return %z\n"
			    "}\n";

static sinter_status parse(const sinter_load_options *o, sinter_model **m, sinter_error *err)
{
	return sinter_model_parse(model, strlen(model), "conventions.sir", o, m, err);
}

static void load_options(void)
{
	sinter_shape_binding b = {"N", 2};
	sinter_error err;
	sinter_model *m = NULL;

	sinter_load_options o;
	sinter_load_options_init(&o);
	CHECK(o.size == sizeof o);
	o.shapes = &b;
	o.nshapes = 1;
	CHECK(parse(&o, &m, &err) == SINTER_OK && sinter_model_num_symbols(m) == 0);
	sinter_model_free(m);
	m = NULL;

	/* never initialized: size 0 */
	sinter_load_options z = {.shapes = &b, .nshapes = 1};
	CHECK(parse(&z, &m, &err) == SINTER_E_USAGE && !m && strstr(err.message, "sinter_load_options_init"));

	/* an older caller's struct, which ends before shapes: the defaults */
	sinter_load_options old = o;
	old.size = offsetof(sinter_load_options, shapes);
	CHECK(parse(&old, &m, &err) == SINTER_OK && sinter_model_num_symbols(m) == 1);
	sinter_model_free(m);
	m = NULL;

	/* a newer caller's struct: its extra field zero is taken, set is refused */
	struct {
		sinter_load_options o;
		uint64_t later;
	} newer;
	memset(&newer, 0, sizeof newer);
	newer.o.size = sizeof newer;
	newer.o.shapes = &b;
	newer.o.nshapes = 1;
	CHECK(parse(&newer.o, &m, &err) == SINTER_OK && sinter_model_num_symbols(m) == 0);
	sinter_model_free(m);
	m = NULL;
	newer.later = 1;
	CHECK(parse(&newer.o, &m, NULL) == SINTER_E_USAGE && !m); /* err may be NULL */
	CHECK(parse(&newer.o, &m, &err) == SINTER_E_USAGE && err.status == SINTER_E_USAGE &&
	      strstr(err.message, "newer"));
}

static void errors_and_printing(void)
{
	sinter_shape_binding b = {"N", 4};
	sinter_load_options o;
	sinter_load_options_init(&o);
	o.shapes = &b;
	o.nshapes = 1;
	sinter_error err;
	sinter_model *m = NULL;
	CHECK(parse(&o, &m, &err) == SINTER_OK);
	if (!m)
		return;

	char *text = NULL;
	CHECK(sinter_model_print(m, &text, &err) == SINTER_OK && text && strstr(text, "relu("));
	sinter_free(text);
	text = NULL;
	CHECK(sinter_model_print_dot(m, &text, NULL) == SINTER_OK && text && !strncmp(text, "digraph", 7));
	sinter_free(text);
	text = NULL;
	/* the fusion groups a CUDA compile would make: relu and mul in one */
	CHECK(sinter_model_print_plan(m, SINTER_DEVICE_CUDA, 90, &text, &err) == SINTER_OK && text &&
	      strstr(text, "relu") && strstr(text, "mul"));
	sinter_free(text);
	text = (char *)"x";
	CHECK(sinter_model_print_plan(m, (sinter_device)9, 0, &text, &err) == SINTER_E_USAGE && !text);

	sinter_precision p = SINTER_PREC_FP32;
	CHECK(sinter_precision_parse("bf16", &p, &err) == SINTER_OK && p == SINTER_PREC_BF16);
	CHECK(sinter_precision_parse("fp12", &p, &err) == SINTER_E_USAGE && strstr(err.message, "fp12") &&
	      p == SINTER_PREC_BF16);

	sinter_tensor d;
	CHECK(sinter_model_input(m, 0, &d, &err) == SINTER_OK && d.rank == 2 && d.shape[0] == 4 && d.shape[1] == 3);
	CHECK(sinter_model_output(m, 1, &d, &err) == SINTER_E_USAGE && strstr(err.message, "no output 1"));
	CHECK(sinter_model_input(m, 7, &d, NULL) == SINTER_E_USAGE);
	sinter_model_free(m);
}

static void devices(void)
{
	CHECK_STR(sinter_device_name(SINTER_DEVICE_CUDA), "cuda");
	CHECK_STR(sinter_device_name(SINTER_DEVICE_CPU), "cpu");
	CHECK_STR(sinter_device_name(SINTER_DEVICE_REF), "ref");
	CHECK_STR(sinter_device_name(SINTER_DEVICE_DEFAULT), "default");
	CHECK_STR(sinter_device_name((sinter_device)42), "?");
	char info[256] = "";
	sinter_error err;
	CHECK(sinter_device_available(SINTER_DEVICE_DEFAULT, info, sizeof info, &err) == SINTER_E_USAGE);
	CHECK(sinter_device_available((sinter_device)-1, NULL, 0, NULL) == SINTER_E_USAGE);
	/* available or not, info says something, and a failure is an environment one with the same text */
	CHECK(sinter_device_available(SINTER_DEVICE_REF, info, sizeof info, &err) == SINTER_OK && info[0]);
	for (int d = SINTER_DEVICE_CUDA; d <= SINTER_DEVICE_CPU; d++) {
		info[0] = 0;
		sinter_status st = sinter_device_available((sinter_device)d, info, sizeof info, &err);
		printf("%s: %s (%s)\n", sinter_device_name((sinter_device)d), st ? "absent" : "present", info);
		CHECK(info[0] && (st == SINTER_OK || (st == SINTER_E_ENV && !strcmp(err.message, info))));
	}
}

/* Compiles and runs on cpu: options and stats by size, the device enum. */
static void compile_cpu(void)
{
	char why[256];
	if (sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) != SINTER_OK) {
		printf("compile checks skipped: %s\n", why);
		return;
	}
	sinter_shape_binding b = {"N", 5};
	sinter_load_options lo;
	sinter_load_options_init(&lo);
	lo.shapes = &b;
	lo.nshapes = 1;
	sinter_error err;
	sinter_model *m = NULL;
	CHECK(parse(&lo, &m, &err) == SINTER_OK);
	if (!m)
		return;
	CHECK(sinter_model_init_random(m, 1, &err) == SINTER_OK);
	sinter_tensor *ins = NULL, *want = NULL;
	size_t nin = 0;
	CHECK(sinter_model_random_inputs(m, 17, &ins, &nin, &err) == SINTER_OK && nin == 1);
	CHECK(sinter_model_run_ref(m, ins, nin, &want, &err) == SINTER_OK);

	sinter_compile_options o;
	sinter_compile_options_init(&o);
	CHECK(o.size == sizeof o && o.device == SINTER_DEVICE_DEFAULT);
	o.device = SINTER_DEVICE_CPU;
	o.cache_dir = ""; /* no cache: nothing written */
	sinter_compiled *c = NULL;

	/* options of size 0, stats of size 0, a device out of range: usage errors */
	sinter_compile_options z = o;
	z.size = 0;
	CHECK(sinter_model_compile(m, &z, &c, NULL, &err) == SINTER_E_USAGE && !c &&
	      strstr(err.message, "sinter_compile_options_init"));
	sinter_compile_stats zs;
	memset(&zs, 0, sizeof zs);
	CHECK(sinter_model_compile(m, &o, &c, &zs, &err) == SINTER_E_USAGE && !c &&
	      strstr(err.message, "sinter_compile_stats_init"));
	sinter_compile_options bad = o;
	bad.device = (sinter_device)(SINTER_DEVICE_REF + 1);
	CHECK(sinter_model_compile(m, &bad, &c, NULL, &err) == SINTER_E_USAGE && !c);
	/* ref: a compiled handle on the reference interpreter, but no package */
	bad.device = SINTER_DEVICE_REF;
	CHECK(sinter_model_compile_kernels(m, &bad, NULL, NULL, &err) == SINTER_E_USAGE && strstr(err.message, "ref"));
	CHECK(sinter_model_compile(m, &bad, &c, NULL, &err) == SINTER_OK && c && sinter_compiled_device(c) == SINTER_DEVICE_REF);
	sinter_compiled_free(c);
	c = NULL;

	/* an older caller's options end before device: the default, cuda, which
	 * a model with no GPU then refuses as an environment error or compiles */
	sinter_compile_options old = o;
	old.size = offsetof(sinter_compile_options, device);
	sinter_status st = sinter_model_compile(m, &old, &c, NULL, &err);
	CHECK(st == SINTER_OK ? sinter_compiled_device(c) == SINTER_DEVICE_CUDA : st == SINTER_E_ENV);
	sinter_compiled_free(c);
	c = NULL;

	/* stats filled as far as the caller's size: a shorter one keeps what lies past it */
	struct {
		sinter_compile_stats s;
	} part;
	memset(&part, 0x5a, sizeof part);
	part.s.size = offsetof(sinter_compile_stats, kernels);
	size_t sentinel = part.s.steps;
	CHECK(sinter_model_compile(m, &o, &c, &part.s, &err) == SINTER_OK && c);
	CHECK(part.s.steps == sentinel && part.s.size == offsetof(sinter_compile_stats, kernels));
	CHECK(part.s.passes_s >= 0 && part.s.passes_s < 60); /* written: 0x5a bytes are not a small double */
	sinter_compiled_free(c);
	c = NULL;

	sinter_compile_stats s;
	sinter_compile_stats_init(&s);
	CHECK(sinter_model_compile(m, &o, &c, &s, &err) == SINTER_OK && c && s.steps >= 1 && s.size == sizeof s);
	if (!c) {
		printf("compile: %s\n", err.message);
	} else {
		CHECK(sinter_compiled_device(c) == SINTER_DEVICE_CPU);
		sinter_tensor d;
		CHECK(sinter_compiled_output(c, 0, &d, &err) == SINTER_OK && d.shape[0] == 5);
		CHECK(sinter_compiled_input(c, 3, &d, &err) == SINTER_E_USAGE && strstr(err.message, "no input 3"));
		sinter_tensor *got = NULL;
		CHECK(sinter_compiled_run(c, ins, nin, &got, &err) == SINTER_OK && got);
		/* relu(x) * x, fused on cpu, against the reference interpreter */
		for (size_t i = 0; got && want && i < 15; i++) {
			float a = ((const float *)got[0].data)[i], e = ((const float *)want[0].data)[i];
			CHECK_NEAR(a, e, 1e-6 * (1 + fabs(e)));
		}
		sinter_tensors_free(got, 1);
	}
	sinter_compiled_free(c);
	sinter_tensors_free(ins, nin);
	sinter_tensors_free(want, 1);
	sinter_model_free(m);
}

int main(void)
{
	load_options();
	errors_and_printing();
	devices();
	compile_cpu();
	return check_done("api_conventions");
}
