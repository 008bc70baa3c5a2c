/* test_state.c: state kept across runs (docs/DESIGN.md, State), through
 * the public API, on ref and cpu. The model keeps a running sum and a
 * count (its output: the mean of every x so far) and a 4-row cache that
 * each run writes one row of, at the position an input gives (a scatter,
 * as a KV cache is written); its second output sums the cache's rows.
 * Three runs on random x and rows are checked against the sums worked
 * out here; then state_read (the rows where they were written, zeros
 * beyond), state_reset (the next run sees zeros), state_write (a given
 * sum and count), a write naming no state, the model API's one-shot run
 * from zeroed state, the I/O counts that leave states out, the printer's
 * fixed point, the parser's errors for misused state, and an ONNX
 * graph's input made a state (sinter_load_options.states) with its errors. */
#include "state_case.h"
#include "../unit/onnx_writer.h"

#include <unistd.h>

/* An ONNX graph that takes its state as an input and returns the new one
 * (y = relu(past + x), present = past + x), the state input first: made a
 * state with sinter_load_options.states (sinter --state present=past). */
static void onnx_state(void)
{
	pbw g = {0};
	w_node(&g, "Add", "add", L("past", "x"), L("present"), NULL);
	w_node(&g, "Relu", "relu", L("present"), L("y"), NULL);
	w_value(&g, 11, "past", W_FLOAT, L("2", "3"));
	w_value(&g, 11, "x", W_FLOAT, L("2", "3"));
	w_value(&g, 12, "present", W_FLOAT, L("2", "3"));
	w_value(&g, 12, "y", W_FLOAT, L("2", "3"));
	pbw mb = w_model(&g, 17);
	char path[] = "/tmp/sinter-state-XXXXXX.onnx";
	int fd = mkstemps(path, 5);
	CHECK(fd >= 0 && write(fd, mb.p, mb.n) == (ssize_t)mb.n);
	close(fd);
	free(mb.p);

	sinter_state_binding sb[] = {{"present", "past"}};
	sinter_load_options so;
	sinter_load_options_init(&so);
	so.states = sb;
	so.nstates = 1;
	sinter_model *m = NULL;
	sinter_error err;
	CHECK(sinter_model_load(path, &so, &m, &err) == SINTER_OK);
	if (!m) {
		fprintf(stderr, "%s\n", err.message);
		unlink(path);
		return;
	}
	CHECK(sinter_model_num_inputs(m) == 1 && sinter_model_num_outputs(m) == 1);
	sinter_tensor d;
	CHECK(!sinter_model_input(m, 0, &d, NULL) && !strcmp(d.name, "x"));
	CHECK(!sinter_model_output(m, 0, &d, NULL) && !strcmp(d.name, "y"));
	char *text = NULL;
	(void)sinter_model_print(m, &text, NULL);
	CHECK(text && strstr(text, "state %past: f32[2,3]") && strstr(text, "update %past = %present"));
	sinter_free(text);
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.device = SINTER_DEVICE_REF;
	sinter_compiled *c = NULL;
	CHECK(sinter_model_compile(m, &o, &c, NULL, &err) == SINTER_OK);
	double sum[6] = {0};
	for (int k = 0; c && k < 3; k++) {
		float x[6];
		for (int i = 0; i < 6; i++)
			x[i] = frand(), sum[i] += x[i];
		sinter_tensor in = {.name = "x", .dtype = SINTER_F32, .rank = 2, .shape = {2, 3}, .data = x, .nbytes = sizeof x};
		sinter_tensor *out = NULL;
		CHECK(sinter_compiled_run(c, &in, 1, &out, &err) == SINTER_OK);
		for (int i = 0; out && i < 6; i++)
			CHECK_NEAR(((float *)out[0].data)[i], sum[i] > 0 ? sum[i] : 0, 1e-5);
		sinter_tensors_free(out, 1);
	}
	sinter_compiled_free(c);
	sinter_model_free(m);

	/* what a binding may not name */
	struct {
		sinter_state_binding b[2];
		size_t n;
		const char *want;
	} bad[] = {
		{{{"present", "nope"}}, 1, "the model has no input nope"},
		{{{"nope", "past"}}, 1, "the model has no output nope"},
		{{{"present", "past"}, {"y", "past"}}, 2, "past is named by two states"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		so.states = bad[i].b;
		so.nstates = bad[i].n;
		m = NULL;
		CHECK(sinter_model_load(path, &so, &m, &err) == SINTER_E_INPUT && !m);
		if (!strstr(err.message, bad[i].want)) {
			fprintf(stderr, "want '%s' in: %s\n", bad[i].want, err.message);
			CHECK(0);
		}
	}
	unlink(path);
	printf("onnx: --state present=past accumulates on ref\n");
}

/* On cpu a KV cache is written in place (cl_lower.c): the decode step of
 * tests/state/tiny_llama.sir keeps none of its four 8 KiB caches in the
 * arena (it held all the updated caches, 16 KiB at least at once, when
 * the scatter wrote a copy). */
static void cpu_in_place(void)
{
	sinter_shape_binding b[2] = {{"N", 1}, {"T", 1}};
	sinter_load_options so = {.size = sizeof(sinter_load_options), .shapes = b, .nshapes = 2};
	sinter_model *m = NULL;
	sinter_error err;
	CHECK(sinter_model_load(SINTER_SOURCE_DIR "/tests/state/tiny_llama.sir", &so, &m, &err) == SINTER_OK);
	if (!m)
		return;
	CHECK(sinter_model_init_random(m, 1, &err) == SINTER_OK);
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.device = SINTER_DEVICE_CPU;
	o.cache_dir = "";
	sinter_compiled *c = NULL;
	sinter_compile_stats cs;
	sinter_compile_stats_init(&cs);
	CHECK(sinter_model_compile(m, &o, &c, &cs, &err) == SINTER_OK);
	printf("cpu: tiny_llama's decode step: arena %zu bytes\n", cs.arena_bytes);
	CHECK(c && cs.arena_bytes < 8192);
	sinter_compiled_free(c);
	sinter_model_free(m);
}

static void parse_error(const char *text, const char *want)
{
	sinter_model *m = NULL;
	sinter_error err = {0};
	CHECK(sinter_model_parse(text, strlen(text), "bad.sir", NULL, &m, &err) == SINTER_E_INPUT);
	if (!strstr(err.message, want)) {
		fprintf(stderr, "want '%s' in: %s\n", want, err.message);
		CHECK(0);
	}
	sinter_model_free(m);
}

int main(void)
{
	sinter_model *m = NULL;
	sinter_error err;
	if (sinter_model_parse(model, strlen(model), "state.sir", NULL, &m, &err) != SINTER_OK) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	CHECK(sinter_model_num_inputs(m) == 3);
	CHECK(sinter_model_num_outputs(m) == 2);
	CHECK(sinter_model_init_random(m, 1, &err) == SINTER_OK); /* no params: nothing drawn */

	/* the printer writes the states back: a fixed point */
	char *p1 = NULL;
	CHECK(sinter_model_print(m, &p1, &err) == SINTER_OK);
	CHECK(p1 && strstr(p1, "state %cache: f32[4,3]") && strstr(p1, "update %cache = %cache.next"));
	sinter_model *m2 = NULL;
	CHECK(p1 && sinter_model_parse(p1, strlen(p1), "p1.sir", NULL, &m2, &err) == SINTER_OK);
	char *p2 = NULL;
	if (m2)
		CHECK(sinter_model_print(m2, &p2, &err) == SINTER_OK);
	CHECK(p1 && p2 && !strcmp(p1, p2));
	char h1[33], h2[33];
	sinter_model_hash(m, h1);
	if (m2)
		sinter_model_hash(m2, h2);
	CHECK(m2 && !strcmp(h1, h2));
	sinter_free(p1);
	sinter_free(p2);
	sinter_model_free(m2);

	/* the model API: one run from zeroed state */
	inputs in;
	make_inputs(&in, 1);
	sinter_tensor *out = NULL;
	CHECK(sinter_model_run_ref(m, in.t, 3, &out, &err) == SINTER_OK);
	if (out) {
		double x[6], r[3];
		for (int i = 0; i < 6; i++)
			x[i] = in.x[i];
		for (int i = 0; i < 3; i++)
			r[i] = in.row[i];
		check_outputs("sinter_model_run_ref", out, x, r);
		sinter_tensors_free(out, 2);
	}

	on_device(m, "ref", NULL);
	char why[256];
	if (sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) == SINTER_OK) {
		on_device(m, "cpu", NULL);
		cpu_in_place();
	} else {
		printf("cpu: skipped (%s)\n", why);
	}
	sinter_model_free(m);
	onnx_state();

	parse_error("sinter 1\nfunc @main(%x: f32[2], state %s: f32[2]) -> (f32[2]) {\n  %y = add(%x, %s)\n"
		    "  return %y\n}\n",
		    "state %s is never updated");
	parse_error("sinter 1\nfunc @main(%x: f32[2], state %s: f32[2]) -> (f32[2]) {\n  %y = add(%x, %s)\n"
		    "  update %x = %y\n  update %s = %y\n  return %y\n}\n",
		    "%x is not a state");
	parse_error("sinter 1\nfunc @main(%x: f32[2], state %s: f32[2]) -> (f32[2]) {\n  %y = add(%x, %s)\n"
		    "  update %s = %y\n  update %s = %y\n  return %y\n}\n",
		    "state %s is updated twice");
	parse_error("sinter 1\nfunc @main(state %s: f32[2], %x: f32[2]) -> (f32[2]) {\n  %y = add(%x, %s)\n"
		    "  update %s = %y\n  return %y\n}\n",
		    "input %x follows a state");
	parse_error("sinter 1\nfunc @main(%x: f32[3], state %s: f32[2]) -> (f32[3]) {\n  %y = neg(%x)\n"
		    "  update %s = %y\n  return %y\n}\n",
		    "update: %y is f32[3] but state %s is f32[2]");
	parse_error("sinter 1\nfunc @main(%x: f32[2], state %s: f32[2]) -> (f32[2]) {\n  %y = add(%x, %s)\n"
		    "  update %s = %s\n  return %y\n}\n",
		    "updated with itself");
	return check_done("state");
}
