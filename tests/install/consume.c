/* consume.c: a program built against an installed sinter (find_package or
 * pkg-config; tests/run_install.sh). Parses y = relu(x @ w^T + b) * 2 from
 * text, sets its weights from a safetensors file it writes itself, runs it
 * on the reference interpreter on random inputs and checks every output
 * against the same sum worked out here in double. Prints "consume: ok". */
#include <sinter.h>
#include <sinter_tools.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char model[] = "sinter 1\n"
			    "func @main(%x: f32[4,3]) -> (f32[4,2]) {\n"
			    "  %w = param f32[2,3] \"fc.weight\"\n"
			    "  %b = param f32[2] \"fc.bias\"\n"
			    "  %two = const f32[] 2\n"
			    "  %h = linear(%x, %w, %b)\n"
			    "  %r = relu(%h)\n"
			    "  %y = mul(%r, %two)\n"
			    "  return %y\n"
			    "}\n";

static int fail(const sinter_error *err)
{
	fprintf(stderr, "consume: %s\n", err->message);
	return (int)err->status;
}

int main(int argc, char **argv)
{
	const char *wpath = argc > 1 ? argv[1] : "consume.safetensors";
	float w[6] = {0.5f, -1.0f, 0.25f, 2.0f, 0.125f, -0.75f}, b[2] = {0.1f, -0.2f};
	sinter_tensor ws[2] = {
		{.name = "fc.weight", .dtype = SINTER_F32, .rank = 2, .shape = {2, 3}, .data = w, .nbytes = sizeof w},
		{.name = "fc.bias", .dtype = SINTER_F32, .rank = 1, .shape = {2}, .data = b, .nbytes = sizeof b},
	};
	sinter_error err;
	sinter_model *m = NULL;                /* freed by sinter_model_free */
	sinter_tensor *in = NULL, *out = NULL; /* freed by sinter_tensors_free */
	size_t nin = 0;
	if (sinter_tensors_write(wpath, ws, 2, &err) ||
	    sinter_model_parse(model, strlen(model), "consume", NULL, &m, &err))
		return fail(&err);
	int rc = 0;
	if (sinter_model_load_weights(m, &wpath, 1, NULL, &err) || sinter_model_random_inputs(m, 7, &in, &nin, &err) ||
	    sinter_model_run_ref(m, in, nin, &out, &err))
		rc = fail(&err);
	int bad = 0;
	for (int i = 0; !rc && i < 4; i++)
		for (int j = 0; j < 2; j++) {
			const float *x = (const float *)in[0].data + 3 * i;
			double h = b[j];
			for (int k = 0; k < 3; k++)
				h += (double)x[k] * w[3 * j + k];
			double want = 2 * (h > 0 ? h : 0), got = ((const float *)out[0].data)[2 * i + j];
			if (fabs(got - want) > 1e-5 * (1 + fabs(want))) {
				fprintf(stderr, "consume: y[%d,%d] = %g, want %g\n", i, j, got, want);
				bad++;
			}
		}
	if (out)
		sinter_tensors_free(out, 1);
	sinter_tensors_free(in, nin);
	sinter_model_free(m);
	if (!rc && !bad)
		printf("consume: ok (sinter %s)\n", sinter_version());
	return rc ? rc : bad ? 1 : 0;
}
