/* embed.c: sinter embedded in a C program. Loads a .sir model, fills its
 * params and inputs deterministically, compiles it for the GPU when one is
 * usable (else runs the reference interpreter), runs it and prints every
 * output's first values.
 *
 *   embed MODEL.sir [SYM=VALUE ...]        e.g. embed samples/resblock.sir N=2
 *
 * include/sinter.h (the core) and include/sinter_tools.h (random weights
 * and inputs) are used; link with the sinter library. */
#include <sinter.h>
#include <sinter_tools.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const sinter_error *err)
{
	fprintf(stderr, "embed: %s\n", err->message);
	return (int)err->status;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: embed MODEL.sir [SYM=VALUE ...]\n");
		return 2;
	}
	sinter_shape_binding binds[8];
	size_t nb = 0;
	for (int i = 2; i < argc && nb < 8; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq) {
			fprintf(stderr, "embed: expected SYM=VALUE, got %s\n", argv[i]);
			return 2;
		}
		*eq = 0;
		binds[nb].name = argv[i];
		binds[nb++].value = strtoll(eq + 1, NULL, 10);
	}
	sinter_load_options opt;
	sinter_load_options_init(&opt);
	opt.shapes = binds;
	opt.nshapes = nb;

	sinter_error err;
	sinter_model *m = NULL;                 /* freed by sinter_model_free */
	if (sinter_model_load(argv[1], &opt, &m, &err))
		return fail(&err);
	sinter_tensor *in = NULL, *out = NULL;  /* freed by sinter_tensors_free */
	size_t nin = 0;
	if (sinter_model_init_random(m, 1, &err) || sinter_model_random_inputs(m, 1, &in, &nin, &err)) {
		sinter_model_free(m);
		return fail(&err);
	}

	char why[256];
	sinter_compiled *c = NULL;              /* freed by sinter_compiled_free */
	int rc = 0;
	if (sinter_device_available(SINTER_DEVICE_CUDA, why, sizeof why, NULL) == SINTER_OK) {
		printf("running on %s\n", why);
		if (sinter_model_compile(m, NULL, &c, NULL, &err) || sinter_compiled_run(c, in, nin, &out, &err))
			rc = fail(&err);
	} else {
		printf("no GPU (%s): running on the reference interpreter\n", why);
		if (sinter_model_run_ref(m, in, nin, &out, &err))
			rc = fail(&err);
	}
	for (size_t i = 0; !rc && i < sinter_model_num_outputs(m); i++) {
		const sinter_tensor *t = &out[i];
		printf("%s: %s[", t->name, sinter_dtype_name(t->dtype));
		for (int k = 0; k < t->rank; k++)
			printf("%s%lld", k ? "," : "", (long long)t->shape[k]);
		printf("]");
		if (t->dtype == SINTER_F32)
			for (size_t k = 0; k < t->nbytes / 4 && k < 4; k++)
				printf(" %g", (double)((const float *)t->data)[k]);
		printf("\n");
	}
	if (out)
		sinter_tensors_free(out, sinter_model_num_outputs(m));
	sinter_tensors_free(in, nin);
	sinter_compiled_free(c);
	sinter_model_free(m);
	return rc;
}
