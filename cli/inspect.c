/* inspect.c: sinter check, print and hash. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

int cli_cmd_check(cli_opts *o)
{
	sinter_model *m;
	int rc = cli_load(o, &m);
	if (rc)
		return rc;
	if (o->json) {
		char hex[33];
		sinter_model_hash(m, hex);
		printf("{\"ok\": true, \"file\": ");
		cli_json_str(o->file);
		printf(", \"nodes\": %zu, \"hash\": \"%s\", \"symbols\": [", sinter_model_num_nodes(m), hex);
		for (size_t i = 0; i < sinter_model_num_symbols(m); i++) {
			printf("%s", i ? ", " : "");
			cli_json_str(sinter_model_symbol(m, i));
		}
		printf("],\n \"inputs\": [");
		for (size_t i = 0; i < sinter_model_num_inputs(m); i++) {
			sinter_tensor d;
			sinter_model_input(m, i, &d, NULL);
			printf("%s", i ? ", " : "");
			cli_json_desc(&d, m, (int)i);
		}
		printf("],\n \"outputs\": [");
		for (size_t i = 0; i < sinter_model_num_outputs(m); i++) {
			sinter_tensor d;
			sinter_model_output(m, i, &d, NULL);
			printf("%s", i ? ", " : "");
			cli_json_desc(&d, NULL, 0);
		}
		printf("]}\n");
	} else {
		printf("%s: ok: %zu nodes, %zu inputs, %zu outputs\n", o->file, sinter_model_num_nodes(m),
		       sinter_model_num_inputs(m), sinter_model_num_outputs(m));
	}
	sinter_model_free(m);
	return 0;
}

int cli_cmd_print(cli_opts *o)
{
	bool cpu = o->device && !strcmp(o->device, "cpu");
	if (o->device && !cpu)
		return cli_usage_error("print", "--device takes cpu (its plan's steps), got '%s'", o->device);
	/* --device cpu shows the plan run --device cpu executes: the cpu
	 * device's rules (sinter_model_compile's, which sinter_model_print_plan skips) */
	if (cpu && o->mode && !strcmp(o->mode, "max-autotune"))
		return cli_usage_error("print", "mode '%s' on cpu: the cpu device takes default or reduce-overhead",
				       o->mode);
	if (cpu && o->precision && strcmp(o->precision, "fp32") && strcmp(o->precision, "bf16"))
		return cli_usage_error("print", "the cpu device takes fp32 and bf16: precision %s is not built for it",
				       o->precision);
	if (cpu && o->no_fusion)
		return cli_usage_error("print", "%s", "--device cpu lists the fused plan: --no-fusion is not taken");
	sinter_model *m;
	int rc = cli_load(o, &m);
	/* the groups and the cpu plan are what a compile makes: the default
	 * pipeline when no mode or pass list is named, as compile and run do
	 * (--passes '' shows them for the graph as written) */
	if (!rc && (rc = cli_optimize(o, m, o->groups || cpu, 0)))
		sinter_model_free(m);
	if (rc)
		return rc;
	sinter_error err = {0};
	char *text = NULL;
	sinter_status st = cpu || o->groups ? sinter_model_print_plan(m, cpu ? SINTER_DEVICE_CPU : SINTER_DEVICE_CUDA, 0,
								      &text, &err)
			   : o->dot ? sinter_model_print_dot(m, &text, &err)
				    : sinter_model_print(m, &text, &err);
	sinter_model_free(m);
	if (st) {
		fprintf(stderr, "sinter print: %s\n", err.message);
		return st;
	}
	fputs(text, stdout);
	sinter_free(text);
	return 0;
}

int cli_cmd_hash(cli_opts *o)
{
	sinter_model *m;
	int rc = cli_load(o, &m);
	if (rc)
		return rc;
	char hex[33];
	sinter_model_hash(m, hex);
	printf("%s\n", hex);
	sinter_model_free(m);
	return 0;
}
