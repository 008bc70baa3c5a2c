/* cpu_cputime.c: CPU time (user + sys) and wall time per call of a model
 * on the cpu device, measured in-process around the calls only (no
 * compile, no weight reading), which other load on the machine moves far
 * less than latency. Used by cpu_cmp.py.
 *
 * build: cc -O2 -std=c11 -Iinclude benchmarks/cpu_cputime.c -o cpu_cputime -Lbuild -lsinter -Wl,-rpath,$PWD/build
 * usage: cpu_cputime FILE.sir WEIGHTS INPUTS THREADS ITERS
 * prints one JSON line: cpu_ms (per call), wall_ms (mean), min_ms. */
#define _POSIX_C_SOURCE 200809L
#include "sinter.h"
#include "sinter_tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu(void)
{
	struct rusage r;
	getrusage(RUSAGE_SELF, &r);
	return (double)r.ru_utime.tv_sec + (double)r.ru_utime.tv_usec * 1e-6 + (double)r.ru_stime.tv_sec +
	       (double)r.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: cpu_cputime FILE.sir WEIGHTS INPUTS THREADS ITERS\n");
		return 2;
	}
	sinter_error err;
	sinter_model *m = NULL;
	sinter_tensor *in = NULL;
	size_t nin = 0;
	if (sinter_model_load(argv[1], NULL, &m, &err) || sinter_model_load_weights(m, (const char *const[]){argv[2]}, 1, NULL, &err) ||
	    sinter_tensors_read(argv[3], &in, &nin, &err)) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.device = SINTER_DEVICE_CPU;
	o.threads = atoi(argv[4]);
	o.cache_dir = "";
	sinter_compiled *c = NULL;
	sinter_compile_stats st;
	sinter_compile_stats_init(&st);
	if (sinter_model_compile(m, &o, &c, &st, &err)) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	int iters = atoi(argv[5]);
	if (iters < 1)
		iters = 1;
	sinter_tensor *out = NULL;
	for (int i = 0; i < 3 + iters; i++) {
		if (i == 3) {
			double c0 = cpu(), t0 = now(), mn = 1e30;
			for (int k = 0; k < iters; k++) {
				double a = now();
				if (sinter_compiled_run(c, in, nin, &out, &err)) {
					fprintf(stderr, "%s\n", err.message);
					return 1;
				}
				double w = now() - a;
				mn = w < mn ? w : mn;
				sinter_tensors_free(out, sinter_compiled_num_outputs(c));
			}
			printf("{\"file\": \"%s\", \"threads\": %d, \"cpu_ms\": %.2f, \"wall_ms\": %.2f, \"min_ms\": %.2f}\n",
			       argv[1], o.threads, (cpu() - c0) / iters * 1e3, (now() - t0) / iters * 1e3, mn * 1e3);
			break;
		}
		if (sinter_compiled_run(c, in, nin, &out, &err)) { /* warmup: the first run packs weights */
			fprintf(stderr, "%s\n", err.message);
			return 1;
		}
		sinter_tensors_free(out, sinter_compiled_num_outputs(c));
	}
	sinter_compiled_free(c);
	sinter_tensors_free(in, nin);
	sinter_model_free(m);
	return 0;
}
