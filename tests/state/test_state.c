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
 * fixed point, and the parser's errors for misused state. */
#include "state_case.h"

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
	char *p1 = sinter_model_print(m);
	CHECK(p1 && strstr(p1, "state %cache: f32[4,3]") && strstr(p1, "update %cache = %cache.next"));
	sinter_model *m2 = NULL;
	CHECK(p1 && sinter_model_parse(p1, strlen(p1), "p1.sir", NULL, &m2, &err) == SINTER_OK);
	char *p2 = m2 ? sinter_model_print(m2) : NULL;
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
	CHECK(sinter_run_ref(m, in.t, 3, &out, &err) == SINTER_OK);
	if (out) {
		double x[6], r[3];
		for (int i = 0; i < 6; i++)
			x[i] = in.x[i];
		for (int i = 0; i < 3; i++)
			r[i] = in.row[i];
		check_outputs("sinter_run_ref", out, x, r);
		sinter_tensors_free(out, 2);
	}

	on_device(m, "ref", NULL);
	char why[256];
	if (sinter_cpu_available(why, sizeof why))
		on_device(m, "cpu", NULL);
	else
		printf("cpu: skipped (%s)\n", why);
	sinter_model_free(m);

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
