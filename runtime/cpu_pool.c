/* cpu_pool.c: the cpu runtime's thread pool (cpu_int.h).
 *
 * A round (cpu_pool_for) is published as one 64-bit word, job: the
 * round's number, its count of chunks and the next chunk to take. Every
 * thread, the caller included, takes chunks by a compare-and-swap on that
 * word, which succeeds only while the round is the one it saw and chunks
 * are left; so a chunk is run once, by whichever thread gets to it, and a
 * worker that wakes late finds nothing to do and never runs a chunk of a
 * round it did not see published. The caller waits for the chunks taken,
 * counted in ndone, and never for a worker that has not taken one: on a
 * host whose cores are shared, a descheduled worker costs the round
 * nothing (the caller runs its chunks), where a pool that waits for every
 * worker to check in waits for the scheduler (issue 31, docs/PERF.md).
 *
 * Waiting is bounded spinning, then sleeping: a worker looks for the next
 * round for POOL_SPIN_NS (longer while a run is in progress, cpu_pool_hot,
 * since the next step is usually microseconds away and waking a halted
 * virtual CPU costs tens of them), then sleeps on a condition variable;
 * the caller does the same for the last chunks. Nobody spins without
 * bound, so a spinning thread cannot keep the thread that holds the work
 * off a shared core for longer than that.
 *
 * What is left comes from sharing the cores: a worker descheduled while
 * it holds a chunk (the caller waits for the scheduler to run it again,
 * milliseconds on a host with more runnable threads than cores), and the
 * caller preempted by the workers it wakes. So the pool watches for an
 * oversubscribed host: a worker's chunk outstanding for much longer than
 * the caller's own chunks of the round (POOL_LATE_X), or the caller
 * preempted during a short run (its involuntary context switches, counted
 * by the kernel; POOL_SHORT_RUN_NS). Either makes the caller run the rounds alone for a while
 * (solo: 10 ms at first, doubling while it recurs, up to 2 s; shrinking
 * slowly again on rounds that end in time), waking nobody: as one thread,
 * which a shared host delays no more than any thread (issue 31). */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include "runtime/cpu_int.h"

#include <errno.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <time.h>

/* A build that includes a header before this file's _GNU_SOURCE (the
 * fault-injection build's -include ir/fault.h) sees no RUSAGE_THREAD:
 * Linux's value, getrusage(2). */
#ifndef RUSAGE_THREAD
#define RUSAGE_THREAD 1
#endif

/* Spin bounds (ns) before sleeping: between rounds of one run (hot), and
 * otherwise. A run's steps are a few to a few hundred microseconds
 * apart. */
#define POOL_SPIN_HOT_NS 100000
#define POOL_SPIN_NS 20000

/* A worker's chunk is late when the caller has waited for it more than
 * POOL_LATE_X times its own longest chunk of the round plus
 * POOL_LATE_NS; the solo spells that follow (ns). */
#define POOL_LATE_X 3
#define POOL_LATE_NS 100000
#define POOL_SOLO_MIN_NS 10000000
#define POOL_SOLO_MAX_NS 2000000000
/* A run shorter than this, whose caller was preempted, was delayed by the
 * host's load by as much as it took (a time slice is milliseconds); on a
 * longer one a preemption costs a share, and only late chunks count. */
#define POOL_SHORT_RUN_NS 5000000

/* job's fields: [round:32][nchunks:16][next:16] */
#define JOB_ROUND(w) ((uint32_t)((w) >> 32))
#define JOB_N(w) ((unsigned)(((w) >> 16) & 0xffff))
#define JOB_NEXT(w) ((unsigned)((w) & 0xffff))
#define JOB_MAXCHUNKS 0xffff

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A bounded spin: true while fewer than ns have passed since *t0 (set on
 * the first call, *t0 == 0); reads the clock every 64 calls. */
static bool spin_on(int64_t *t0, unsigned *i, int64_t ns)
{
	cpu_relax();
	if ((++*i & 63) != 0)
		return true;
	int64_t t = now_ns();
	if (!*t0)
		*t0 = t;
	return t - *t0 < ns;
}

static int64_t spin_ns(pool *p)
{
	return atomic_load_explicit(&p->hot, memory_order_relaxed) > 0 ? POOL_SPIN_HOT_NS : POOL_SPIN_NS;
}

/* Take and run the chunks of round `round` while there are any; w is the
 * job word last read. The caller's (longest: *cmax, ns) are timed. */
static void run_chunks(pool *p, uint64_t w, uint32_t round, int tid, int64_t *cmax)
{
	while (JOB_ROUND(w) == round && JOB_NEXT(w) < JOB_N(w)) {
		if (!atomic_compare_exchange_weak_explicit(&p->job, &w, w + 1, memory_order_acq_rel,
							   memory_order_acquire))
			continue; /* w reread */
		/* chunk JOB_NEXT(w) is ours: the round cannot end without it,
		 * so its fields stay put until we count it done */
		unsigned n = JOB_N(w);
		int64_t lo = (int64_t)JOB_NEXT(w) * p->chunk;
		int64_t hi = lo + p->chunk < p->total ? lo + p->chunk : p->total;
		int64_t t0 = cmax ? now_ns() : 0;
		p->fn(p->ctx, lo, hi, tid);
		if (cmax && now_ns() - t0 > *cmax)
			*cmax = now_ns() - t0;
		if (atomic_fetch_add(&p->ndone, 1) + 1 == (int)n && tid != 0 && atomic_load(&p->caller_waits)) {
			pthread_mutex_lock(&p->mu);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->mu);
		}
		w = atomic_load_explicit(&p->job, memory_order_acquire);
	}
}

static void *worker(void *arg)
{
	pool *p = arg;
	int tid = atomic_fetch_add(&p->nworker, 1) + 1;
	uint32_t seen = 0;
	for (;;) {
		uint64_t w = atomic_load_explicit(&p->job, memory_order_acquire);
		int64_t t0 = 0;
		unsigned i = 0;
		while (JOB_ROUND(w) == seen && !atomic_load_explicit(&p->quit, memory_order_relaxed) &&
		       spin_on(&t0, &i, spin_ns(p)))
			w = atomic_load_explicit(&p->job, memory_order_acquire);
		if (JOB_ROUND(w) == seen) {
			pthread_mutex_lock(&p->mu);
			atomic_fetch_add(&p->sleepers, 1); /* before the check: cpu_pool_for reads it after publishing */
			unsigned g = atomic_load(&p->wake_gen);
			while (!atomic_load(&p->quit) && JOB_ROUND(w = atomic_load(&p->job)) == seen &&
			       atomic_load(&p->wake_gen) == g)
				pthread_cond_wait(&p->cv, &p->mu);
			atomic_fetch_sub(&p->sleepers, 1);
			pthread_mutex_unlock(&p->mu);
		}
		if (atomic_load(&p->quit))
			break;
		if (JOB_ROUND(w) == seen)
			continue; /* woken for a run's start (cpu_pool_hot): spin for its first round */
		seen = JOB_ROUND(w);
		run_chunks(p, w, seen, tid, NULL);
	}
	return NULL;
}

void cpu_pool_free(pool *p)
{
	if (!p)
		return;
	if (p->th) {
		pthread_mutex_lock(&p->mu);
		atomic_store(&p->quit, true);
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		for (int i = 0; i < p->n - 1; i++)
			if (p->th[i])
				pthread_join(p->th[i], NULL);
	}
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	pthread_cond_destroy(&p->done);
	free(p->th);
	free(p);
}

pool *cpu_pool_new(int n)
{
	pool *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->n = n < 1 ? 1 : n;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	pthread_condattr_t ca; /* done's timed wait: on the clock now_ns reads */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->done, &ca);
	pthread_condattr_destroy(&ca);
	if (p->n > 1) {
		p->th = calloc((size_t)p->n - 1, sizeof *p->th);
		if (!p->th) {
			cpu_pool_free(p);
			return NULL;
		}
		for (int i = 0; i < p->n - 1; i++)
			if (pthread_create(&p->th[i], NULL, worker, p) != 0) {
				p->n = i + 1; /* fewer workers than asked */
				break;
			}
	}
	return p;
}

/* A worker's chunk came late: the caller runs alone for a while. */
static void pool_late(pool *p)
{
	if (p->solo_ns < POOL_SOLO_MIN_NS)
		p->solo_ns = POOL_SOLO_MIN_NS;
	p->solo_until = now_ns() + p->solo_ns;
	p->solo_ns = p->solo_ns * 2 < POOL_SOLO_MAX_NS ? p->solo_ns * 2 : POOL_SOLO_MAX_NS;
	p->nlate++;
}

void cpu_pool_for(pool *p, int64_t total, int64_t min_chunk, task_fn *fn, void *ctx)
{
	if (total <= 0)
		return;
	int64_t chunk = (total + 4 * p->n - 1) / (4 * p->n);
	if (chunk < min_chunk)
		chunk = min_chunk;
	if (chunk < 1)
		chunk = 1;
	if (p->n == 1 || chunk >= total || (p->solo_until && now_ns() < p->solo_until)) {
		fn(ctx, 0, total, 0);
		return;
	}
	int64_t nc = (total + chunk - 1) / chunk;
	if (nc > JOB_MAXCHUNKS) { /* not with 4 chunks a thread, but the word has 16 bits */
		chunk = (total + JOB_MAXCHUNKS - 1) / JOB_MAXCHUNKS;
		nc = (total + chunk - 1) / chunk;
	}
	/* the last round has ended (all its chunks counted): nobody reads
	 * these until they take a chunk of the round published below */
	p->fn = fn;
	p->ctx = ctx;
	p->total = total;
	p->chunk = chunk;
	atomic_store_explicit(&p->ndone, 0, memory_order_relaxed);
	uint32_t round = JOB_ROUND(atomic_load_explicit(&p->job, memory_order_relaxed)) + 1;
	if (round == 0)
		round = 1; /* the workers start having seen round 0 */
	uint64_t w = (uint64_t)round << 32 | (uint64_t)nc << 16;
	atomic_store(&p->job, w); /* seq_cst: ordered before the sleepers' load */
	if (atomic_load(&p->sleepers) > 0) {
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	int64_t cmax = 0;
	run_chunks(p, w, round, 0, &cmax);
	/* the chunks the workers took: spin a while, then sleep */
	int64_t t0 = 0, late = POOL_LATE_X * cmax + POOL_LATE_NS;
	unsigned i = 0;
	while (atomic_load_explicit(&p->ndone, memory_order_acquire) < nc && spin_on(&t0, &i, spin_ns(p)))
		;
	bool waited = t0 && cmax;
	if (atomic_load_explicit(&p->ndone, memory_order_acquire) < nc) {
		/* asleep (the core is the worker's, if it wants it) until the
		 * chunks are done or, the first time, until they are late (a
		 * wait within the spin never is: POOL_LATE_NS >= the spins) */
		bool judged = !cmax;
		int64_t dl = t0 + late;
		struct timespec ts = {.tv_sec = dl / 1000000000, .tv_nsec = dl % 1000000000};
		atomic_store(&p->caller_waits, true); /* seq_cst: before the ndone check, as run_chunks' after its add */
		pthread_mutex_lock(&p->mu);
		while (atomic_load(&p->ndone) < nc) {
			if (judged) {
				pthread_cond_wait(&p->done, &p->mu);
			} else if (pthread_cond_timedwait(&p->done, &p->mu, &ts) == ETIMEDOUT) {
				judged = true;
				if (atomic_load(&p->ndone) < nc)
					pool_late(p);
			}
		}
		pthread_mutex_unlock(&p->mu);
		atomic_store(&p->caller_waits, false);
	} else if (waited && p->solo_ns > POOL_SOLO_MIN_NS) {
		p->solo_ns -= p->solo_ns / 1024; /* a round in time: the spells shrink slowly */
	}
}

/* the calling thread's involuntary context switches */
static long preempted(void)
{
	struct rusage u;
	return getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_nivcsw : 0;
}

void cpu_pool_hot(pool *p, bool on)
{
	if (p->n <= 1)
		return;
	atomic_fetch_add(&p->hot, on ? 1 : -1);
	if (on) {
		p->nivcsw = preempted();
		p->run_t0 = now_ns();
	} else if (preempted() != p->nivcsw && now_ns() - p->run_t0 < POOL_SHORT_RUN_NS) {
		pool_late(p); /* the caller was preempted during a short run */
	}
	if (on && atomic_load(&p->sleepers) > 0 && !(p->solo_until && now_ns() < p->solo_until)) {
		/* a run begins: the sleeping workers spin for its first round,
		 * which is then found by a thread already awake */
		pthread_mutex_lock(&p->mu);
		atomic_fetch_add(&p->wake_gen, 1);
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
}
