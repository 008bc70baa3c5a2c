/* bench.c: sinter bench: cold compile, warm start in a second process,
 * memory, latency, and the per-kernel profile. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The q-quantile of n sorted samples, linearly interpolated between the
 * two nearest ranks (NumPy's default): q = 0.5 is the median. */
static double quantile(const double *s, int n, double q)
{
	double pos = q * (n - 1);
	int lo = (int)pos;
	return lo + 1 < n ? s[lo] + (pos - lo) * (s[lo + 1] - s[lo]) : s[n - 1];
}

/* The timed calls: --iters of them after --warmup, or, with --duration S,
 * as many as S seconds take (in batches sized from the calls so far, so
 * the clock is read rarely). *ms (free it) holds one time per call. */
static int timed_calls(sinter_compiled *c, const cli_opts *o, double **ms, int *n, sinter_error *err)
{
	enum { MAX_CALLS = 2000000 }; /* 16 MB of samples */
	int cap = o->duration > 0 ? 1024 : o->iters;
	*n = 0;
	*ms = calloc((size_t)cap, sizeof **ms);
	if (!*ms) {
		err->status = SINTER_E_INTERNAL;
		snprintf(err->message, sizeof err->message, "out of memory");
		return SINTER_E_INTERNAL;
	}
	if (!(o->duration > 0)) {
		*n = o->iters;
		return sinter_compiled_bench(c, o->warmup, o->iters, *ms, err);
	}
	double t0 = cli_now(), elapsed = 0;
	int batch = 1, warmup = o->warmup;
	while (*n < MAX_CALLS && (*n == 0 || elapsed < o->duration)) {
		if (*n + batch > cap) {
			int ncap = cap * 2 < *n + batch ? *n + batch : cap * 2;
			double *grown = realloc(*ms, (size_t)ncap * sizeof **ms);
			if (!grown) {
				err->status = SINTER_E_INTERNAL;
				snprintf(err->message, sizeof err->message, "out of memory");
				return SINTER_E_INTERNAL;
			}
			*ms = grown;
			cap = ncap;
		}
		int rc = sinter_compiled_bench(c, warmup, batch, *ms + *n, err);
		if (rc)
			return rc;
		if (warmup)
			t0 = cli_now() - 1e-3 * (*ms)[0]; /* the warm-up calls are not the duration's */
		warmup = 0;
		*n += batch;
		elapsed = cli_now() - t0;
		/* about 1/20 of the duration per batch, never past its end */
		double per = elapsed / *n, left = o->duration - elapsed;
		double want = (left < o->duration / 20 ? left : o->duration / 20) / (per > 0 ? per : 1e-6);
		batch = want < 1 ? 1 : want > 100000 ? 100000 : (int)want;
		if (*n + batch > MAX_CALLS)
			batch = MAX_CALLS - *n;
	}
	return 0;
}

static int cmp_prof(const void *a, const void *b)
{
	double x = ((const sinter_profile_entry *)a)->ms, y = ((const sinter_profile_entry *)b)->ms;
	return (x < y) - (x > y);
}

/* The top kernels by device time, steps of one kernel added together
 * (on cpu, by time where each step runs: the steps run one after another). */
static int print_profile(sinter_compiled *c, bool cpu, sinter_error *err)
{
	sinter_profile_entry *p;
	size_t n;
	if (sinter_compiled_profile(c, 20, &p, &n, err))
		return cli_report(err);
	double total = 0;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		total += p[i].ms;
		size_t j = 0;
		while (j < k && (strcmp(p[j].kernel, p[i].kernel) || strcmp(p[j].op, p[i].op)))
			j++;
		if (j == k) {
			p[k++] = p[i];
		} else {
			p[j].ms += p[i].ms;
			p[j].bytes += p[i].bytes;
			p[j].flops += p[i].flops;
		}
	}
	qsort(p, k, sizeof *p, cmp_prof);
	if (cpu)
		printf("profile: %zu steps, %.4f ms in all (each step timed where it runs, mean of 20 calls)\n", n, total);
	else
		printf("profile: %zu steps, %.4f ms launched one by one (each kernel timed alone)\n", n, total);
	printf("  %-34s %-12s %9s %6s %9s %9s\n", "kernel", "op", "ms", "%", "GB/s", "TFLOP/s");
	for (size_t i = 0; i < k && i < 12; i++)
		printf("  %-34s %-12s %9.4f %5.1f%% %9.1f %9.2f\n", p[i].kernel, p[i].op, p[i].ms,
		       100 * p[i].ms / (total > 0 ? total : 1), p[i].bytes / (p[i].ms * 1e6),
		       p[i].flops / (p[i].ms * 1e9));
	sinter_free(p);
	return 0;
}

/* The warm start as a user sees it: a second process that finds the plan
 * in the cache dir the cold compile filled, from its start to its first
 * output ready; it reports its CUDA context creation apart. */
static int warm_start_child(const cli_opts *o, const char *dir, const char *inputs, char *line, size_t cap)
{
	char t0[64], seed[32];
	const char *av[128]; /* 16 shapes and 16 --weights at most */
	int n = 0;
	av[n++] = "sinter";
	av[n++] = "run";
	av[n++] = o->file;
	av[n++] = "--device";
	av[n++] = o->device && !strcmp(o->device, "cpu") ? "cpu" : "cuda";
	char threads[16];
	if (o->threads) {
		snprintf(threads, sizeof threads, "%d", o->threads);
		av[n++] = "--threads";
		av[n++] = threads;
	}
	av[n++] = "--cache-dir";
	av[n++] = dir;
	char shapes[16][96];
	for (size_t i = 0; i < o->nshapes && i < 16; i++) {
		if (!o->shapes[i].name)
			continue; /* bound from --inputs, which the child reads too */
		snprintf(shapes[i], sizeof shapes[i], "%s=%lld", o->shapes[i].name, (long long)o->shapes[i].value);
		av[n++] = "--shape";
		av[n++] = shapes[i];
	}
	/* the inputs ready in a file, as a user's would be */
	const char *pairs[][2] = {{"--mode", o->mode}, {"--passes", o->passes}, {"--precision", o->precision},
				  {"--weights-prefix", o->weights_prefix}, {"--inputs", inputs},
				  {"--cache-remote", o->cache_remote}};
	for (size_t i = 0; i < o->nweights; i++) {
		av[n++] = "--weights";
		av[n++] = o->weight_files[i];
	}
	for (size_t i = 0; i < CLI_COUNT(pairs); i++)
		if (pairs[i][1]) {
			av[n++] = pairs[i][0];
			av[n++] = pairs[i][1];
		}
	if (o->no_fusion)
		av[n++] = "--no-fusion";
	if (!o->weights && !o->own_weights && (!o->init || !strcmp(o->init, "random"))) {
		snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
		av[n++] = "--init";
		av[n++] = "random";
		av[n++] = "--seed";
		av[n++] = seed;
	}
	av[n++] = "--warm-start-child";
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	snprintf(t0, sizeof t0, "%.6f", cli_wall());
	av[n++] = t0;
	av[n] = NULL;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execv("/proc/self/exe", (char *const *)av);
		_exit(127);
	}
	close(fd[1]);
	size_t got = 0;
	ssize_t k;
	while (pid > 0 && got + 1 < cap && (k = read(fd[0], line + got, cap - 1 - got)) > 0)
		got += (size_t)k;
	line[got] = 0;
	close(fd[0]);
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return strstr(line, "first_output_s") ? 0 : -1;
}

static void remove_tree(const char *dir)
{
	size_t removed;
	sinter_cache_clear(dir, &removed, NULL);
	sinter_tuning_clear(dir, &removed, NULL);
	char sub[128];
	static const char *const kinds[] = {"kernels", "plans", "tuning"};
	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < 256; i++) {
			snprintf(sub, sizeof sub, "%s/%s/%02x", dir, kinds[k], i);
			rmdir(sub);
		}
		snprintf(sub, sizeof sub, "%s/%s", dir, kinds[k]);
		rmdir(sub);
	}
	rmdir(dir);
}

int cli_cmd_bench(cli_opts *o)
{
	char why[512];
	bool cpu = o->device && !strcmp(o->device, "cpu");
	if (o->device && strcmp(o->device, "cpu") && strcmp(o->device, "cuda"))
		return cli_usage_error("bench", "unknown device '%s' (cpu or cuda)", o->device);
	/* a package runs on the device it was compiled for (the library
	 * refuses another one named): asked once it is loaded */
	if (!cli_is_package(o->file) &&
	    sinter_device_available(cpu ? SINTER_DEVICE_CPU : SINTER_DEVICE_CUDA, why, sizeof why, NULL) != SINTER_OK) {
		fprintf(stderr, "sinter bench: %s\n", why);
		return SINTER_E_ENV;
	}
	/* Cold: empty kernel and plan caches of our own; warm: a second
	 * process over the same caches. */
	char dir[] = "/tmp/sinter-bench-XXXXXX";
	if (!mkdtemp(dir)) {
		fprintf(stderr, "sinter bench: cannot make a temporary cache directory: %s\n", strerror(errno));
		return SINTER_E_ENV;
	}
	bool pkg = cli_is_package(o->file);
	if (pkg && o->out && cli_check_tensors_ext("bench", o->out)) { /* prepare checks a model's */
		remove_tree(dir);
		return CLI_EXIT_USAGE;
	}
	cli_prepared p = {0};
	int rc = pkg ? 0 : cli_prepare(o, true, &p);
	if (rc) {
		remove_tree(dir);
		return rc;
	}
	sinter_error err;
	sinter_compile_options co;
	cli_compile_opts(o, &co);
	co.cache_dir = dir;
	sinter_compile_stats cold;
	sinter_compile_stats_init(&cold);
	sinter_compiled *c = NULL;
	double *ms = NULL;
	int iters = 0;
	sinter_tensor *outs = NULL, *ins = NULL;
	size_t nins = 0, nout = 0;
	char line[1024] = "";
	double t0 = cli_now();
	if (pkg)
		co.device = cli_device(o->device);
	if (pkg ? sinter_package_load(o->file, &co, &c, &cold, &err) : sinter_model_compile(p.m, &co, &c, &cold, &err))
		goto fail;
	if (pkg) {
		sinter_device dev = sinter_compiled_device(c);
		cpu = dev == SINTER_DEVICE_CPU;
		if (sinter_device_available(dev, why, sizeof why, NULL) != SINTER_OK)
			snprintf(why, sizeof why, "%s", sinter_device_name(dev));
	}
	double cold_s = p.parse_s + (cli_now() - t0);
	char inpath[64];
	snprintf(inpath, sizeof inpath, "%s/inputs.safetensors", dir);
	bool warm_ok = !pkg && sinter_tensors_write(inpath, p.ins, p.nins, &err) == SINTER_OK &&
		       warm_start_child(o, dir, inpath, line, sizeof line) == 0;
	unlink(inpath);
	if (pkg && (o->inputs ? (int)sinter_tensors_read(o->inputs, &ins, &nins, &err) : cli_package_inputs(c, o, &ins, &nins, &err)))
		goto fail;
	if (sinter_compiled_run(c, pkg ? ins : p.ins, pkg ? nins : p.nins, &outs, &err))
		goto fail;
	nout = sinter_compiled_num_outputs(c);
	/* -o: the outputs of this compiled model, so a harness can check them
	 * without a second process */
	if (o->out && sinter_tensors_write(o->out, outs, nout, &err))
		goto fail;
	if (timed_calls(c, o, &ms, &iters, &err))
		goto fail;
	double sum = 0;
	for (int i = 0; i < iters; i++)
		sum += ms[i];
	qsort(ms, (size_t)iters, sizeof *ms, cmp_double);
	double med = quantile(ms, iters, 0.5), mean = sum / iters, p90 = quantile(ms, iters, 0.9),
	       p99 = quantile(ms, iters, 0.99), per_s = sum > 0 ? 1e3 * iters / sum : 0;
	double warm_s = warm_ok ? cli_json_num(line, "first_output_s") : -1, ctx_s = warm_ok ? cli_json_num(line, "context_s") : -1;
	bool warm_hit = warm_ok && strstr(line, "\"plan_hit\": true");
	if (o->json) {
		char dur[32] = "null"; /* --duration as asked, else null */
		if (o->duration > 0)
			snprintf(dur, sizeof dur, "%.6g", o->duration);
		printf("{\"file\": ");
		cli_json_str(o->file);
		printf(", \"device\": ");
		cli_json_str(why);
		printf(", \"cold_compile_s\": %.4f, \"parse_s\": %.4f, "
		       "\"passes_s\": %.4f, \"weights_s\": %.4f, \"codegen_s\": %.4f, \"nvrtc_s\": %.4f, \"load_s\": %.4f, \"upload_s\": %.4f, "
		       "\"context_s\": %.4f, \"plan_store_s\": %.4f, "
		       "\"warm_start_s\": %.4f, \"warm_context_s\": %.4f, \"warm_after_context_s\": %.4f, \"warm_plan_hit\": %s, "
		       "\"warm_run_s\": %.4f, "
		       "\"steps\": %zu, \"kernels\": %zu, \"unique_kernels\": %zu, "
		       "\"arena_bytes\": %zu, \"weight_bytes\": %zu, \"median_ms\": %.6g, \"min_ms\": %.6g, "
		       "\"mean_ms\": %.6g, \"p90_ms\": %.6g, \"p99_ms\": %.6g, \"max_ms\": %.6g, "
		       "\"throughput_per_s\": %.6g, \"timed_s\": %.6g, \"duration_s\": %s, "
		       "\"iters\": %d, \"warmup\": %d, \"tune_s\": %.4f, \"tune_kernels\": %zu, \"tune_from_records\": %zu, "
		       "\"tune_tuned\": %zu, \"tune_candidates\": %zu, \"tune_timings\": %zu, \"tune_failed\": %zu, "
		       "\"tune_rejected\": %zu, \"tune_speedup\": %.4f, \"warm_tune_timings\": %.0f}\n",
		       cold_s, p.parse_s, cold.passes_s, p.load_s, cold.codegen_s, cold.nvrtc_s, cold.load_s,
		       cold.upload_s, cold.context_s, cold.plan_s, warm_s, ctx_s, warm_ok ? warm_s - ctx_s : -1,
		       warm_hit ? "true" : "false", warm_ok ? cli_json_num(line, "run_s") : -1, cold.steps, cold.kernels, cold.unique_kernels, cold.arena_bytes, cold.weight_bytes,
		       med, ms[0], mean, p90, p99, ms[iters - 1], per_s, 1e-3 * sum, dur, iters, o->warmup,
		       cold.tune_s, cold.tune_kernels, cold.tune_from_records, cold.tune_tuned,
		       cold.tune_candidates, cold.tune_timings, cold.tune_failed, cold.tune_rejected, cold.tune_speedup,
		       warm_ok ? cli_json_num(line, "tune_timings") : -1);
	} else {
		printf("%s on %s\n", o->file, why);
		if (pkg)
			printf("package load: %.3f s (read %.3f, load %.3f, upload %.3f); %zu kernels\n", cold_s, cold.plan_s,
			       cold.load_s, cold.upload_s, cold.kernels);
		else if (cpu)
			printf("cold compile: %.3f s (parse %.3f, weights and the rest %.3f, passes %.3f, lowering %.3f, LLVM %.3f, "
			       "JIT %.3f); %zu steps, %zu kernels, %zu on the reference interpreter; peak arena %.1f MiB\n",
			       cold_s, p.parse_s, cold_s - p.parse_s - cold.passes_s - cold.codegen_s - cold.nvrtc_s - cold.load_s,
			       cold.passes_s, cold.codegen_s, cold.nvrtc_s, cold.load_s, cold.steps, cold.kernels, cold.ref_steps,
			       (double)cold.arena_bytes / 1048576.0);
		else
			printf("cold compile: %.3f s (parse %.3f, passes %.3f, codegen %.3f, nvrtc %.3f, load %.3f, upload %.3f, plan store %.3f); "
			       "%zu steps (%zu kernels, %zu matrix products), %zu unique kernels; peak arena %.1f MiB\n",
			       cold_s, p.parse_s, cold.passes_s, cold.codegen_s, cold.nvrtc_s, cold.load_s, cold.upload_s,
			       cold.plan_s, cold.steps, cold.kernels, cold.steps - cold.kernels, cold.unique_kernels,
			       (double)cold.arena_bytes / 1048576.0);
		if (cold.tune_kernels)
			printf("tuning:       %.3f s: %zu tunable kernels (%zu from records, %zu tuned), %zu candidates timed, "
			       "%zu timing runs, %zu scored out, %zu records rejected; %.2fx on the tuned steps\n",
			       cold.tune_s, cold.tune_kernels, cold.tune_from_records, cold.tune_tuned, cold.tune_candidates,
			       cold.tune_timings, cold.tune_failed, cold.tune_rejected, cold.tune_speedup);
		if (warm_ok && cpu)
			printf("warm start:   %.3f s in a new process to the first output (plan cache %s: key %.3f, plan read "
			       "%.3f; object cache: %.0f of %zu kernels, JIT %.3f; weights %.3f, passes %.3f, lowering %.3f; "
			       "first run %.3f)\n",
			       warm_s, warm_hit ? "hit" : "MISS", cli_json_num(line, "key_s"), cli_json_num(line, "plan_s"),
			       cli_json_num(line, "cache_hits"), cold.kernels, cli_json_num(line, "load_s"),
			       cli_json_num(line, "weights_s"), cli_json_num(line, "passes_s"), cli_json_num(line, "codegen_s"),
			       cli_json_num(line, "run_s"));
		else if (warm_ok)
			printf("warm start:   %.3f s in a new process to the first output (CUDA context %.3f s, after it %.3f s; plan cache %s)\n"
			       "              after the context: plan key %.3f, plan read %.3f, modules %.3f, cuBLASLt %.3f, upload %.3f, graph %.3f, first run %.3f\n",
			       warm_s, ctx_s, warm_s - ctx_s, warm_hit ? "hit" : "MISS", cli_json_num(line, "key_s"),
			       cli_json_num(line, "plan_s"), cli_json_num(line, "load_s"), cli_json_num(line, "blas_s"),
			       cli_json_num(line, "upload_s"), cli_json_num(line, "capture_s"), cli_json_num(line, "run_s"));
		else if (!pkg)
			printf("warm start:   the second process failed\n");
		printf("memory:       arena %.1f MiB, weights %.1f MiB\n", (double)cold.arena_bytes / 1048576.0,
		       (double)cold.weight_bytes / 1048576.0);
		printf("latency:      median %.4f ms, min %.4f ms, mean %.4f ms, p90 %.4f ms, p99 %.4f ms, max %.4f ms\n"
		       "              over %d calls (%d warm-up) in %.3f s: %.1f inferences/s\n",
		       med, ms[0], mean, p90, p99, ms[iters - 1], iters, o->warmup, 1e-3 * sum, per_s);
	}
	if (o->profile && (rc = print_profile(c, cpu, &err)))
		goto out;
	rc = 0;
	goto out;
fail:
	rc = cli_report(&err);
out:
	sinter_tensors_free(outs, nout);
	sinter_tensors_free(ins, nins);
	sinter_compiled_free(c);
	cli_prepared_free(&p);
	free(ms);
	remove_tree(dir);
	return rc;
}
