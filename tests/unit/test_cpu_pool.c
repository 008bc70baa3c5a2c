/* test_cpu_pool.c: the cpu runtime's thread pool (runtime/cpu_pool.c).
 *  - every index of every round is run exactly once, by a valid thread
 *    id, over random sizes and chunk minima, with the pool hot and cold,
 *    and with rounds spaced so that the workers fall asleep between them;
 *  - a caller never waits for a worker that is not running: with the
 *    whole process on one CPU (the workers can run only when the caller
 *    is preempted or sleeps) 2000 rounds of a tiny task must still take
 *    well under a second. A pool whose caller waits for every worker to
 *    check in spins there until its time slice ends, every round (92 s
 *    for 2000 rounds here; issue 31);
 *  - in a solo spell (after the host looked oversubscribed) every round
 *    runs on the caller alone, whole, and is still right;
 *  - a worker's chunk that takes far longer than the caller's (a worker
 *    sleeping in it, as a descheduled one would) starts a solo spell.
 * Runs under TSan too (the unit tests' -DSINTER_TSAN build). */
#define _GNU_SOURCE
#include "check.h"

#include "runtime/cpu_int.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef struct {
	atomic_int *hits;
	int nthreads;
	atomic_int bad_tid;
	atomic_llong sum;
} job;

static void count(void *ctx, int64_t lo, int64_t hi, int tid)
{
	job *j = ctx;
	if (tid < 0 || tid >= j->nthreads)
		atomic_fetch_add(&j->bad_tid, 1);
	for (int64_t i = lo; i < hi; i++)
		atomic_fetch_add_explicit(&j->hits[i], 1, memory_order_relaxed);
	atomic_fetch_add(&j->sum, hi - lo);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* rounds of random sizes on a pool of n: each index once */
static void coverage(int n, bool hot, int rounds, unsigned seed)
{
	pool *p = cpu_pool_new(n);
	CHECK(p != NULL);
	enum { MAXT = 5000 };
	atomic_int *hits = calloc(MAXT, sizeof *hits);
	CHECK(hits != NULL);
	srand(seed);
	if (hot)
		cpu_pool_hot(p, true);
	for (int r = 0; r < rounds; r++) {
		int64_t total = 1 + rand() % MAXT;
		int64_t min = 1 + rand() % 64;
		for (int64_t i = 0; i < total; i++)
			atomic_store_explicit(&hits[i], 0, memory_order_relaxed);
		job j = {.hits = hits, .nthreads = p->n};
		cpu_pool_for(p, total, min, count, &j);
		CHECK(atomic_load(&j.sum) == total);
		CHECK(atomic_load(&j.bad_tid) == 0);
		int64_t wrong = -1;
		for (int64_t i = 0; i < total && wrong < 0; i++)
			if (atomic_load_explicit(&hits[i], memory_order_relaxed) != 1)
				wrong = i;
		if (wrong >= 0)
			fprintf(stderr, "pool of %d, round %d: index %lld of %lld run %d times\n", n, r, (long long)wrong,
				(long long)total, atomic_load(&hits[wrong]));
		CHECK(wrong < 0);
		if (r % 97 == 0)
			usleep(300); /* the workers' spin runs out: they sleep, and are woken */
	}
	if (hot)
		cpu_pool_hot(p, false);
	cpu_pool_free(p);
	free(hits);
}

/* tid 1's chunks sleep 3 ms (a worker held off its core); the caller's
 * take 20 us of its CPU, long enough for the worker to join the round */
static void slow_worker(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)lo;
	(void)hi;
	if (tid == 1) {
		atomic_store((atomic_int *)ctx, 1);
		usleep(3000);
		return;
	}
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 20000);
}

static void tiny(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	atomic_fetch_add((atomic_llong *)ctx, hi - lo);
}

int main(void)
{
	/* a pool of 1 and a pool that cannot split: the caller alone */
	coverage(1, false, 50, 1);
	for (int n = 2; n <= 5; n++) {
		coverage(n, false, 400, 10 + (unsigned)n);
		coverage(n, true, 400, 20 + (unsigned)n);
	}
	/* a solo spell: the caller alone, every index once */
	{
		pool *p = cpu_pool_new(3);
		CHECK(p != NULL);
		p->solo_until = INT64_MAX;
		atomic_int hits[1000];
		job j = {.hits = hits, .nthreads = 1}; /* tid 0 only */
		for (int r = 0; r < 50; r++) {
			for (int i = 0; i < 1000; i++)
				atomic_store(&hits[i], 0);
			atomic_store(&j.sum, 0);
			cpu_pool_for(p, 1000, 1, count, &j);
			int wrong = 0;
			for (int i = 0; i < 1000; i++)
				wrong += atomic_load(&hits[i]) != 1;
			CHECK(wrong == 0 && atomic_load(&j.sum) == 1000);
		}
		CHECK(atomic_load(&j.bad_tid) == 0);
		cpu_pool_free(p);
	}
	/* a late chunk starts a spell */
	{
		pool *p = cpu_pool_new(2);
		CHECK(p != NULL);
		cpu_pool_hot(p, true);
		atomic_int took = 0;
		/* On a loaded host the caller's own 20 us chunk can be preempted
		 * for longer than the worker's sleep, which then is not late by
		 * the caller's measure: a few tries, until a round saw it. */
		for (int t = 0; t < 8 && p->nlate == 0; t++) {
			atomic_store(&took, 0);
			for (int r = 0; r < 2000 && !atomic_load(&took); r++)
				cpu_pool_for(p, 16, 1, slow_worker, &took); /* until the worker takes a chunk */
		}
		if (!atomic_load(&took))
			fprintf(stderr, "the worker took no chunk in 2000 rounds\n");
		CHECK(atomic_load(&took));
		/* seen by the round (cpu_pool_hot's own check comes after) */
		CHECK(p->nlate >= 1 && p->solo_until > 0 && p->solo_ns > 0);
		cpu_pool_hot(p, false);
		cpu_pool_free(p);
	}
	/* pools made and freed at once, workers still starting */
	for (int i = 0; i < 20; i++)
		cpu_pool_free(cpu_pool_new(4));

	/* one CPU: the caller must not wait for workers that cannot run */
	cpu_set_t one;
	CPU_ZERO(&one);
	cpu_set_t all;
	CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
	int first = 0;
	while (!CPU_ISSET(first, &all))
		first++;
	CPU_SET(first, &one);
	CHECK(sched_setaffinity(0, sizeof one, &one) == 0); /* the workers made below inherit it */
	pool *p = cpu_pool_new(4);
	CHECK(p != NULL);
	cpu_pool_hot(p, true);
	atomic_llong sum = 0;
	double t0 = now_s();
	enum { ROUNDS = 2000 };
	for (int r = 0; r < ROUNDS; r++)
		cpu_pool_for(p, 64, 1, tiny, &sum);
	double dt = now_s() - t0;
	cpu_pool_hot(p, false);
	cpu_pool_free(p);
	CHECK(sched_setaffinity(0, sizeof all, &all) == 0);
	CHECK(atomic_load(&sum) == 64LL * ROUNDS);
	printf("one CPU, pool of 4, hot: %d rounds in %.3f s\n", ROUNDS, dt);
	if (dt > 1.0)
		fprintf(stderr, "%d rounds took %.3f s on one CPU: the caller waits for workers that are not running\n",
			ROUNDS, dt);
	CHECK(dt <= 1.0);
	return check_done("cpu_pool");
}
