/* run.c: sinter run, of a model or of an AOT package. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static int run_package(cli_opts *o)
{
	sinter_compile_options co;
	cli_compile_opts(o, &co);
	co.device = cli_device(o->device); /* the library refuses a package for another device than the one named */
	sinter_error err;
	sinter_compiled *c = NULL;
	sinter_tensor *ins = NULL, *outs = NULL;
	size_t nins = 0, nout = 0;
	const char *srcs[] = {o->file, o->inputs};
	if (o->out && sinter_output_check(NULL, o->out, srcs, 2, &err)) /* before the package loads */
		return cli_report(&err);
	if (o->out && cli_check_tensors_ext("run", o->out))
		return CLI_EXIT_USAGE;
	double t0 = cli_now();
	if (sinter_package_load(o->file, &co, &c, NULL, &err))
		return cli_report(&err);
	double load_s = cli_now() - t0;
	if (o->inputs ? (int)sinter_tensors_read(o->inputs, &ins, &nins, &err) : cli_package_inputs(c, o, &ins, &nins, &err))
		goto fail;
	t0 = cli_now();
	if (sinter_compiled_run(c, ins, nins, &outs, &err))
		goto fail;
	double run_s = cli_now() - t0;
	nout = sinter_compiled_num_outputs(c);
	if (o->json) {
		printf("{\"ok\": true, \"file\": ");
		cli_json_str(o->file);
		printf(", \"device\": \"%s\", \"package\": true, \"run_s\": %.6f, \"load_s\": %.6f",
		       sinter_device_name(sinter_compiled_device(c)), run_s, load_s);
		cli_json_outputs(outs, nout);
	} else {
		for (size_t i = 0; i < nout; i++)
			cli_summarize(&outs[i]);
		printf("ran %s on %s in %.3f s (package loaded in %.3f s)\n", o->file, sinter_device_name(sinter_compiled_device(c)), run_s,
		       load_s);
	}
	if (o->out && sinter_tensors_write(o->out, outs, nout, &err))
		goto fail;
	sinter_tensors_free(outs, nout);
	sinter_tensors_free(ins, nins);
	sinter_compiled_free(c);
	return 0;
fail:
	sinter_tensors_free(outs, nout);
	sinter_tensors_free(ins, nins);
	sinter_compiled_free(c);
	return cli_report(&err);
}

int cli_cmd_run(cli_opts *o)
{
	char why[512] = "";
	const char *device = o->device;
	if (device && strcmp(device, "ref") && strcmp(device, "cpu") && strcmp(device, "cuda"))
		return cli_usage_error("run", "unknown device '%s' (ref, cpu or cuda)", device);
	if (cli_is_package(o->file)) {
		if (device && strcmp(device, "cuda") && strcmp(device, "cpu"))
			return cli_usage_error("run", "%s", "a package runs on cuda or cpu (the one it was compiled for)");
		return run_package(o);
	}
	/* no device named: cuda when a GPU is usable, else the compiled cpu
	 * device when this build has it, else the reference interpreter */
	if (!device)
		device = !sinter_device_available(SINTER_DEVICE_CUDA, why, sizeof why, NULL)  ? "cuda"
			 : !sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) ? "cpu"
											: "ref";
	o->device = device;
	bool cuda = strcmp(device, "ref") != 0; /* compiled: cuda or cpu */
	cli_prepared p;
	int rc = cli_prepare(o, false, &p);
	if (rc)
		return rc;
	sinter_error err;
	sinter_tensor *outs = NULL;
	sinter_compiled *c = NULL;
	double t1 = cli_now(), t2, t0c = t1;
	sinter_compile_stats cs;
	sinter_compile_stats_init(&cs);
	if (!cuda && (rc = cli_optimize(o, p.m, false, 0))) {
		cli_prepared_free(&p);
		return rc;
	}
	if (cuda) {
		/* the passes run inside compile, where the plan cache can skip them */
		sinter_compile_options co;
		cli_compile_opts(o, &co);
		if (sinter_model_compile(p.m, &co, &c, &cs, &err))
			goto fail;
		t1 = cli_now();
		if (sinter_compiled_run(c, p.ins, p.nins, &outs, &err))
			goto fail;
	} else if (sinter_model_run_ref(p.m, p.ins, p.nins, &outs, &err)) {
		goto fail;
	}
	t2 = cli_now();
	size_t nout = sinter_model_num_outputs(p.m);
	if (o->child_t0 > 0) {
		/* bench's warm-start child: one line for the parent, nothing else */
		printf("{\"first_output_s\": %.6f, \"context_s\": %.6f, \"parse_s\": %.6f, \"weights_s\": %.6f, "
		       "\"key_s\": %.6f, \"plan_s\": %.6f, \"load_s\": %.6f, \"blas_s\": %.6f, \"upload_s\": %.6f, "
		       "\"capture_s\": %.6f, \"run_s\": %.6f, \"plan_hit\": %s, \"tune_timings\": %zu, "
		       "\"tune_candidates\": %zu, \"compile_s\": %.6f, \"cache_hits\": %zu, \"passes_s\": %.6f, "
		       "\"codegen_s\": %.6f}\n",
		       cli_wall() - o->child_t0, cs.context_s, p.parse_s, p.load_s, cs.key_s, cs.plan_s, cs.load_s, cs.blas_s,
		       cs.upload_s, cs.capture_s, t2 - t1, cs.plan_hit ? "true" : "false", cs.tune_timings,
		       cs.tune_candidates, t1 - t0c, cs.cache_hits, cs.passes_s, cs.codegen_s);
	} else if (o->json) {
		printf("{\"ok\": true, \"file\": ");
		cli_json_str(o->file);
		printf(", \"device\": \"%s\", \"run_s\": %.6f, \"weights_and_inputs_s\": %.6f", device,
		       t2 - t1, p.load_s);
		if (cuda)
			printf(",\n \"compile\": {\"plan_hit\": %s, \"context_s\": %.6f, \"passes_s\": %.6f, "
			       "\"codegen_s\": %.6f, \"nvrtc_s\": %.6f, \"load_s\": %.6f, \"upload_s\": %.6f, "
			       "\"plan_s\": %.6f, \"key_s\": %.6f, \"blas_s\": %.6f, \"tune_s\": %.6f, \"compile_s\": %.6f, "
			       "\"steps\": %zu, \"kernels\": %zu, \"cache_hits\": %zu, "
			       "\"arena_bytes\": %zu, \"weight_bytes\": %zu, \"tune_timings\": %zu, \"ref_steps\": %zu}",
			       cs.plan_hit ? "true" : "false", cs.context_s, cs.passes_s, cs.codegen_s, cs.nvrtc_s, cs.load_s,
			       cs.upload_s, cs.plan_s, cs.key_s, cs.blas_s, cs.tune_s, t1 - t0c, cs.steps, cs.kernels,
			       cs.cache_hits, cs.arena_bytes, cs.weight_bytes, cs.tune_timings, cs.ref_steps);
		cli_json_outputs(outs, nout);
	} else {
		for (size_t i = 0; i < nout; i++)
			cli_summarize(&outs[i]);
		printf("ran %s on %s in %.3f s (weights and inputs %.3f s)\n", o->file, device, t2 - t1, p.load_s);
	}
	if (cli_tracing && c && !strcmp(device, "cuda")) {
		/* each step's device time, on the trace's device track */
		sinter_profile_entry *pe = NULL;
		size_t npe = 0;
		if (sinter_compiled_profile(c, 1, &pe, &npe, &err) == SINTER_OK)
			sinter_free(pe);
		else
			fprintf(stderr, "sinter run: no device times in the trace: %s\n", err.message);
	}
	if (o->out && sinter_tensors_write(o->out, outs, nout, &err)) {
		sinter_tensors_free(outs, nout);
		goto fail;
	}
	sinter_tensors_free(outs, nout);
	sinter_compiled_free(c);
	cli_prepared_free(&p);
	return 0;
fail:
	sinter_compiled_free(c);
	cli_prepared_free(&p);
	return cli_report(&err);
}
