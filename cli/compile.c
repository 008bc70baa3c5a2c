/* compile.c: sinter compile (kernels, and an AOT package with -o) and
 * sinter import (ONNX to .sir). */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* sm_XX, or sm_XXa as NVRTC users write it. The codegen compiles sm_90
 * as sm_90a already (its wgmma kernels need the arch-specific features)
 * and uses no arch-specific feature elsewhere, so sm_XXa is sm_XX. */
static int parse_target(const char *t, int *sm)
{
	char digits[8];
	size_t n = t ? strlen(t) : 0;
	if (n > 3 && t[n - 1] == 'a')
		n--;
	int64_t v;
	if (n < 4 || n - 3 >= sizeof digits || strncmp(t, "sm_", 3))
		return -1;
	memcpy(digits, t + 3, n - 3);
	digits[n - 3] = 0;
	if (cli_parse_int(digits, &v) || v < 50 || v > 200)
		return -1;
	*sm = (int)v;
	return 0;
}

int cli_cmd_compile(cli_opts *o)
{
	sinter_compile_options co;
	cli_compile_opts(o, &co);
	char why[512];
	bool cpu = o->device && !strcmp(o->device, "cpu");
	if (o->device && !cpu && strcmp(o->device, "cuda"))
		return cli_usage_error("compile", "unknown device '%s' (cuda or cpu)", o->device);
	if (cpu && (o->target || o->dump_dir))
		return cli_usage_error("compile", "%s", "--device cpu compiles for this machine's CPU: no --target or --dump-dir");
	if (cpu && sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) != SINTER_OK) {
		fprintf(stderr, "sinter compile: %s\n", why);
		return SINTER_E_ENV;
	}
	if (o->target && parse_target(o->target, &co.target_sm))
		return cli_usage_error("compile", "--target wants sm_XX or sm_XXa (e.g. sm_90), got '%s'", o->target);
	if (!cpu && !o->target && sinter_device_available(SINTER_DEVICE_CUDA, why, sizeof why, NULL) != SINTER_OK) {
		fprintf(stderr, "sinter compile: %s; pass --target sm_XX to compile without a GPU\n", why);
		return SINTER_E_ENV;
	}
	if (o->init && strcmp(o->init, "random"))
		return cli_usage_error("compile", "--init takes 'random', got '%s'", o->init);
	if (o->init && o->weights)
		return cli_usage_error("compile", "%s", "--init random and --weights exclude each other");
	sinter_model *m;
	double t0 = cli_now();
	int rc = cli_load(o, &m);
	if (rc)
		return rc;
	sinter_error err;
	const char *ins[18];
	size_t nins = cli_input_files(o, ins);
	if (o->out && (sinter_output_check(m, o->out, ins + 1, nins - 2, &err) ||
		       (o->init ? sinter_model_init_random(m, o->seed, &err) : cli_load_weights(o, m, &err)))) {
		sinter_model_free(m);
		return cli_report(&err);
	}
	double parse_s = cli_now() - t0;
	sinter_compile_stats st;
	sinter_compile_stats_init(&st);
	if (!co.target_sm && !cpu) {
		/* the present GPU's arch: sinter_device_available says "NAME (sm_XX)" */
		const char *p = strstr(why, "(sm_");
		co.target_sm = p ? atoi(p + 4) : 0;
	}
	if (sinter_model_compile_kernels(m, &co, o->out, &st, &err)) {
		sinter_model_free(m);
		return cli_report(&err);
	}
	if (o->json) {
		printf("{\"ok\": true, \"file\": ");
		cli_json_str(o->file);
		if (cpu)
			printf(", \"target\": \"cpu\"");
		else
			printf(", \"target\": \"sm_%d\"", co.target_sm);
		printf(", \"steps\": %zu, \"kernels\": %zu, \"unique_kernels\": %zu, "
		       "\"cache_hits\": %zu, \"parse_s\": %.6f, \"passes_s\": %.6f, \"codegen_s\": %.6f, "
		       "\"nvrtc_s\": %.6f, \"arena_bytes\": %zu, \"weight_bytes\": %zu, \"dump_dir\": ",
		       st.steps, st.kernels, st.unique_kernels, st.cache_hits, parse_s, st.passes_s,
		       st.codegen_s, st.nvrtc_s, st.arena_bytes, st.weight_bytes);
		o->dump_dir ? cli_json_str(o->dump_dir) : (void)printf("null");
		printf(", \"package\": ");
		o->out ? cli_json_str(o->out) : (void)printf("null");
		printf("}\n");
		sinter_model_free(m);
		return 0;
	}
	if (cpu) {
		printf("%s: %zu steps (%zu kernels, %zu on the reference interpreter), %zu kernels from the cache, for "
		       "this CPU\n",
		       o->file, st.steps, st.kernels, st.ref_steps, st.cache_hits);
		printf("time: parse %.3f s, passes %.3f s, lowering %.3f s, LLVM %.3f s\n", parse_s, st.passes_s,
		       st.codegen_s, st.nvrtc_s);
	} else {
		printf("%s: %zu steps (%zu kernels, %zu matrix products), %zu unique kernels (%zu from the cache) for %s\n",
		       o->file, st.steps, st.kernels, st.steps - st.kernels, st.unique_kernels, st.cache_hits,
		       o->target ? o->target : "the GPU");
		printf("time: parse %.3f s, passes %.3f s, codegen %.3f s, nvrtc %.3f s\n", parse_s, st.passes_s,
		       st.codegen_s, st.nvrtc_s);
	}
	printf("peak arena: %.1f MiB (%zu bytes)\n", (double)st.arena_bytes / 1048576.0, st.arena_bytes);
	if (o->dump_dir)
		printf("sources written to %s\n", o->dump_dir);
	if (o->out)
		printf("package written to %s (%.1f MiB of weights)\n", o->out, (double)st.weight_bytes / 1048576.0);
	sinter_model_free(m);
	return 0;
}

int cli_cmd_import(cli_opts *o)
{
	if (!o->out)
		return cli_usage_error("import", "%s", "-o FILE.sir is required");
	sinter_error err;
	const char *ins[] = {o->file};
	if (sinter_output_check(NULL, o->out, ins, 1, &err) != SINTER_OK)
		return cli_report(&err);
	sinter_model *m;
	int rc = cli_load(o, &m);
	if (rc)
		return rc;
	if (sinter_model_save(m, o->out, &err)) {
		sinter_model_free(m);
		return cli_report(&err);
	}
	printf("%s: %zu nodes, %zu inputs, %zu outputs written to %s\n", o->file, sinter_model_num_nodes(m),
	       sinter_model_num_inputs(m), sinter_model_num_outputs(m), o->out);
	sinter_model_free(m);
	return 0;
}
