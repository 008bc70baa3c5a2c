/* test_threads.c: the thread-safety promises of sinter.h, exercised by
 * concurrent calls (meant to run under ThreadSanitizer: -DSINTER_TSAN=ON,
 * where a data race fails the test; in other builds it checks the results).
 *  - threads with models of their own: load, random weights and inputs,
 *    the reference interpreter, print, hash, free, all at once;
 *  - one model shared by threads that only read it: its weights are drawn
 *    on first use (under the model's lock) by whichever thread comes first;
 *  - the cache functions on one folder from every thread, and when NVRTC is
 *    present sinter_model_compile_kernels of one model into one kernel cache;
 *  - logging at info level into a handler, and a trace recording, while
 *    all of that runs (the trace then holds every thread's runs);
 *  - one compiled cpu model run by two threads at once, many times (the
 *    runs take turns; they shared its arena and gave wrong outputs).
 * Every thread's outputs must equal, bit for bit, the same call made alone. */
#include "check.h"

#include <sinter.h>
#include <sinter_tools.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NTHREADS 4

static const char *resblock = SINTER_SOURCE_DIR "/samples/resblock.sir";
static char cache_dir[256];
static bool have_nvrtc;
static atomic_int log_lines, log_runs;

static void on_log(void *ctx, sinter_log_level level, const char *msg)
{
	(void)ctx;
	atomic_fetch_add(&log_lines, 1);
	if (level == SINTER_LOG_INFO && !strncmp(msg, "run (ref):", 10))
		atomic_fetch_add(&log_runs, 1);
}

/* One run of resblock (N=1) on ref: weights from seed, inputs from seed + 1. */
static sinter_status run_own(uint64_t seed, sinter_tensor **out, char hash[33], sinter_error *err)
{
	sinter_shape_binding b = {"N", 1};
	sinter_load_options o = {.size = sizeof(sinter_load_options), .shapes = &b, .nshapes = 1};
	sinter_model *m = NULL;
	sinter_tensor *in = NULL;
	size_t nin = 0;
	sinter_status st = sinter_model_load(resblock, &o, &m, err);
	if (!st)
		st = sinter_model_init_random(m, seed, err);
	if (!st)
		st = sinter_model_random_inputs(m, seed + 1, &in, &nin, err);
	if (!st)
		st = sinter_model_run_ref(m, in, nin, out, err);
	if (!st) {
		char *text = NULL;
		(void)sinter_model_print(m, &text, NULL);
		st = text ? SINTER_OK : SINTER_E_INTERNAL;
		sinter_free(text);
		sinter_model_hash(m, hash);
	}
	sinter_tensors_free(in, nin);
	sinter_model_free(m);
	return st;
}

typedef struct job {
	int id;
	const sinter_model *shared;
	sinter_tensor *shared_in;
	sinter_status st;
	sinter_error err;
	sinter_tensor *own_out, *shared_out;
	char hash[33];
	size_t entries;
	uint64_t bytes;
} job;

static void *worker(void *arg)
{
	job *j = arg;
	j->st = run_own(100 + (uint64_t)j->id, &j->own_out, j->hash, &j->err);
	if (!j->st)
		j->st = sinter_model_run_ref((sinter_model *)j->shared, j->shared_in, 1, &j->shared_out, &j->err);
	if (!j->st && have_nvrtc) {
		sinter_compile_options co;
		sinter_compile_options_init(&co);
		co.target_sm = 90;
		co.cache_dir = cache_dir;
		j->st = sinter_model_compile_kernels(j->shared, &co, NULL, NULL, &j->err);
	}
	if (!j->st)
		j->st = sinter_cache_kernel_stats(cache_dir, &j->entries, &j->bytes, &j->err);
	char why[128];
	(void)sinter_device_available(SINTER_DEVICE_CUDA, why, sizeof why, NULL);
	(void)sinter_version();
	return NULL;
}

static bool same(const sinter_tensor *a, const sinter_tensor *b)
{
	return a && b && a->nbytes == b->nbytes && !memcmp(a->data, b->data, a->nbytes);
}

#define CPU_RUNS 60

typedef struct cpu_job {
	sinter_compiled *c;
	sinter_tensor *in;
	size_t nin;
	sinter_tensor *want;
	sinter_status st;
	int wrong;
} cpu_job;

static void *cpu_worker(void *arg)
{
	cpu_job *j = arg;
	for (int i = 0; i < CPU_RUNS && !j->st; i++) {
		sinter_tensor *out = NULL;
		sinter_error err;
		j->st = sinter_compiled_run(j->c, j->in, j->nin, &out, &err);
		j->wrong += !j->st && !same(out, j->want);
		sinter_tensors_free(out, 1);
	}
	return NULL;
}

/* Two threads run one compiled cpu model, each on inputs of its own;
 * every output must be the one a run alone gives. */
static void shared_cpu_model(void)
{
	char why[128];
	if (sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) != SINTER_OK) {
		printf("no cpu device: one compiled cpu model shared, skipped\n");
		return;
	}
	static const char *text = "sinter 1\n"
				  "func @main(%x: f32[64,96]) -> (f32[64,96]) {\n"
				  "  %w = param f32[96,96] \"w\"\n"
				  "  %a = linear(%x, %w)\n"
				  "  %t = tanh(%a)\n"
				  "  %s = softmax(%t) axis=-1\n"
				  "  %r = mul(%s, %x)\n"
				  "  return %r\n"
				  "}\n";
	sinter_error err;
	sinter_model *m = NULL;
	CHECK(sinter_model_parse(text, strlen(text), "shared_cpu.sir", NULL, &m, &err) == SINTER_OK);
	CHECK(m && sinter_model_init_random(m, 3, &err) == SINTER_OK);
	sinter_compile_options co;
	sinter_compile_options_init(&co);
	co.device = SINTER_DEVICE_CPU;
	co.cache_dir = "";
	co.threads = 2;
	sinter_compiled *c = NULL;
	CHECK(m && sinter_model_compile(m, &co, &c, NULL, &err) == SINTER_OK);
	cpu_job jobs[2] = {{0}};
	pthread_t th[2];
	for (int i = 0; c && i < 2; i++) {
		jobs[i].c = c;
		CHECK(sinter_model_random_inputs(m, 300 + (uint64_t)i, &jobs[i].in, &jobs[i].nin, &err) == SINTER_OK);
		CHECK(sinter_compiled_run(c, jobs[i].in, jobs[i].nin, &jobs[i].want, &err) == SINTER_OK);
	}
	for (int i = 0; c && i < 2; i++)
		CHECK(pthread_create(&th[i], NULL, cpu_worker, &jobs[i]) == 0);
	for (int i = 0; c && i < 2; i++) {
		pthread_join(th[i], NULL);
		CHECK(jobs[i].st == SINTER_OK);
		CHECK(jobs[i].wrong == 0);
	}
	printf("one compiled cpu model, 2 threads x %d runs: %d and %d wrong outputs\n", CPU_RUNS, jobs[0].wrong,
	       jobs[1].wrong);
	for (int i = 0; i < 2; i++) {
		sinter_tensors_free(jobs[i].want, 1);
		sinter_tensors_free(jobs[i].in, jobs[i].nin);
	}
	sinter_compiled_free(c);
	sinter_model_free(m);
}

int main(void)
{
	snprintf(cache_dir, sizeof cache_dir, "/tmp/sinter-threads-%d", (int)getpid());
	sinter_error err;
	sinter_shape_binding b = {"N", 1};
	sinter_load_options o = {.size = sizeof(sinter_load_options), .shapes = &b, .nshapes = 1};
	sinter_model *shared = NULL;
	CHECK(sinter_model_load(resblock, &o, &shared, &err) == SINTER_OK);
	if (!shared) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	/* drawn lazily: the first run_ref of whichever thread reads them */
	CHECK(sinter_model_init_random(shared, 7, &err) == SINTER_OK);
	sinter_tensor *ins[NTHREADS];
	size_t nin;
	for (int i = 0; i < NTHREADS; i++)
		CHECK(sinter_model_random_inputs(shared, 200 + (uint64_t)i, &ins[i], &nin, &err) == SINTER_OK);

	/* NVRTC present? One compile alone says (it also warms nothing: the
	 * threads compile into a fresh cache folder of their own). */
	{
		sinter_compile_options co;
		sinter_compile_options_init(&co);
		co.target_sm = 90;
		co.cache_dir = "";
		have_nvrtc = sinter_model_compile_kernels(shared, &co, NULL, NULL, &err) == SINTER_OK;
		printf("NVRTC %s\n", have_nvrtc ? "present: concurrent compiles into one cache" : "absent");
	}

	sinter_log_set_handler(on_log, NULL);
	sinter_log_set_level(SINTER_LOG_INFO);
	sinter_trace_start();
	job jobs[NTHREADS];
	pthread_t th[NTHREADS];
	memset(jobs, 0, sizeof jobs);
	for (int i = 0; i < NTHREADS; i++) {
		jobs[i].id = i;
		jobs[i].shared = shared;
		jobs[i].shared_in = ins[i];
		CHECK(pthread_create(&th[i], NULL, worker, &jobs[i]) == 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	char trace[300];
	snprintf(trace, sizeof trace, "%s.trace.json", cache_dir);
	CHECK(sinter_trace_write(trace, &err) == SINTER_OK);
	sinter_log_set_level(SINTER_LOG_WARN);
	sinter_log_set_handler(NULL, NULL);
	/* each thread ran ref twice (its own model, the shared one) */
	CHECK(atomic_load(&log_runs) == 2 * NTHREADS);
	FILE *tf = fopen(trace, "r");
	char tbuf[1 << 16];
	size_t tn = tf ? fread(tbuf, 1, sizeof tbuf - 1, tf) : 0;
	tbuf[tn] = 0;
	if (tf)
		fclose(tf);
	int spans = 0;
	for (const char *q = tbuf; (q = strstr(q, "\"run (ref)\"")); q++)
		spans++;
	CHECK(spans == 2 * NTHREADS);
	unlink(trace);

	/* the same calls, one at a time */
	for (int i = 0; i < NTHREADS; i++) {
		job *j = &jobs[i];
		if (j->st)
			fprintf(stderr, "thread %d: %s\n", i, j->err.message);
		CHECK(j->st == SINTER_OK);
		sinter_tensor *own = NULL, *sh = NULL;
		char hash[33];
		CHECK(run_own(100 + (uint64_t)i, &own, hash, &err) == SINTER_OK);
		CHECK(sinter_model_run_ref(shared, ins[i], 1, &sh, &err) == SINTER_OK);
		CHECK(same(j->own_out, own));
		CHECK(same(j->shared_out, sh));
		CHECK_STR(j->hash, hash);
		/* the inputs differ, so the shared model's outputs do too */
		if (i)
			CHECK(!same(jobs[0].shared_out, j->shared_out));
		sinter_tensors_free(own, 1);
		sinter_tensors_free(sh, 1);
	}
	for (int i = 0; i < NTHREADS; i++) {
		sinter_tensors_free(jobs[i].own_out, 1);
		sinter_tensors_free(jobs[i].shared_out, 1);
		sinter_tensors_free(ins[i], nin);
	}
	if (have_nvrtc) {
		size_t entries = 0;
		uint64_t bytes = 0;
		CHECK(sinter_cache_kernel_stats(cache_dir, &entries, &bytes, &err) == SINTER_OK);
		CHECK(entries > 0);
		size_t removed = 0;
		CHECK(sinter_cache_clear(cache_dir, &removed, &err) == SINTER_OK);
		printf("kernel cache after %d concurrent compiles: %zu entries\n", NTHREADS, entries);
	}
	rmdir(cache_dir);
	sinter_model_free(shared);
	shared_cpu_model();
	return check_done("threads");
}
