/* cpu_exec.c: the CPU runtime (cpu_exec.h): thread pool, LLVM
 * optimization and ORC LLJIT, object cache, and the executor. */
#include "runtime/cpu_exec.h"

#include "ir/log.h"
#include "ir/ref/ref.h"
#include "runtime/kcache.h"

#include <llvm-c/Core.h>
#include <llvm/Config/llvm-config.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <cblas.h>

#include <dlfcn.h>
#include <sys/mman.h>
#include <math.h>
#include <pthread.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void kern_fn(void **bufs, int64_t lo, int64_t hi);

/* ---- thread pool ----
 * n - 1 workers and the caller share each job's chunks through an atomic
 * counter; a job is announced by bumping gen under the lock. */
typedef void task_fn(void *ctx, int64_t lo, int64_t hi, int tid);

typedef struct pool {
	int n;
	pthread_t *th;
	pthread_mutex_t mu;
	pthread_cond_t cv, done;
	atomic_ullong gen;  /* written under mu, read by spinning workers too */
	atomic_int busy;    /* workers still in this round */
	atomic_bool quit;
	task_fn *fn;
	void *ctx;
	int64_t total, chunk;
	atomic_llong next;
	atomic_int nworker; /* worker ids */
} pool;

/* How long a worker looks for the next round, and the caller for the
 * workers' end, before sleeping on the condition variable: about 2^12
 * pause instructions, tens of microseconds. */
#define POOL_SPIN 4096

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static void run_chunks(pool *p, int tid)
{
	for (;;) {
		int64_t lo = atomic_fetch_add(&p->next, p->chunk);
		if (lo >= p->total)
			break;
		int64_t hi = lo + p->chunk < p->total ? lo + p->chunk : p->total;
		p->fn(p->ctx, lo, hi, tid);
	}
}

static void *worker(void *arg)
{
	pool *p = arg;
	int tid = atomic_fetch_add(&p->nworker, 1) + 1;
	uint64_t seen = 0;
	for (;;) {
		/* the next step is usually a few microseconds away: look for
		 * it a while before sleeping (a wake-up costs tens of them) */
		for (int i = 0; i < POOL_SPIN && atomic_load(&p->gen) == seen && !atomic_load(&p->quit); i++)
			cpu_relax();
		pthread_mutex_lock(&p->mu);
		while (!atomic_load(&p->quit) && atomic_load(&p->gen) == seen)
			pthread_cond_wait(&p->cv, &p->mu);
		pthread_mutex_unlock(&p->mu);
		if (atomic_load(&p->quit))
			break;
		seen = atomic_load(&p->gen);
		run_chunks(p, tid);
		if (atomic_fetch_sub(&p->busy, 1) == 1) {
			pthread_mutex_lock(&p->mu);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->mu);
		}
	}
	return NULL;
}

static void pool_free(pool *p)
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

static pool *pool_new(int n)
{
	pool *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->n = n < 1 ? 1 : n;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	pthread_cond_init(&p->done, NULL);
	if (p->n > 1) {
		p->th = calloc((size_t)p->n - 1, sizeof *p->th);
		if (!p->th) {
			pool_free(p);
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

/* fn over [0, total) in chunks of at least min_chunk. */
static void pool_for(pool *p, int64_t total, int64_t min_chunk, task_fn *fn, void *ctx)
{
	if (total <= 0)
		return;
	int64_t chunk = (total + 4 * p->n - 1) / (4 * p->n);
	if (chunk < min_chunk)
		chunk = min_chunk;
	if (chunk < 1)
		chunk = 1;
	if (p->n == 1 || chunk >= total) {
		fn(ctx, 0, total, 0);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->ctx = ctx;
	p->total = total;
	p->chunk = chunk;
	atomic_store(&p->next, 0);
	atomic_store(&p->busy, p->n - 1);
	atomic_fetch_add(&p->gen, 1); /* after the round's fields: a spinning worker reads them once it sees gen move */
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	run_chunks(p, 0);
	for (int i = 0; i < POOL_SPIN && atomic_load(&p->busy); i++)
		cpu_relax();
	if (atomic_load(&p->busy)) {
		pthread_mutex_lock(&p->mu);
		while (atomic_load(&p->busy))
			pthread_cond_wait(&p->done, &p->mu);
		pthread_mutex_unlock(&p->mu);
	}
}

/* ---- the loaded plan ---- */

struct rt_cpu {
	cl_plan *p;
	LLVMOrcLLJITRef jit;
	kern_fn **fns;
	pool *pool;
	void *arena;
	void **addr;      /* per node, this run's */
	float **scratch;  /* per thread: im2col tiles, attention scores */
	size_t scratch_n;
	float **wino;     /* per step: a Winograd convolution's transformed weights, or a product's
			   * weights packed for pk_kernel (first run) */
	bool no_pack;     /* SINTER_CPU_PACK=0: products on weights by OpenBLAS (measurements) */
	bool no_wino;     /* SINTER_CPU_WINOGRAD=0: 3x3 convolutions by im2col (measurements) */
	int wino_m;       /* SINTER_CPU_WINOGRAD=2 or 4: that output block only (measurements); 0: by the map */
	float *stage;     /* bf16 steps: f32 copies of their operands and output (grown) */
	size_t stage_n;
};

const cl_plan *rt_cpu_plan(const rt_cpu *c)
{
	return c->p;
}

void rt_cpu_free(rt_cpu *c)
{
	if (!c)
		return;
	for (size_t i = 0; c->scratch && c->pool && i < (size_t)c->pool->n; i++)
		free(c->scratch[i]);
	free(c->scratch);
	for (uint32_t i = 0; c->wino && i < c->p->nsteps; i++)
		free(c->wino[i]);
	free(c->wino);
	free(c->stage);
	pool_free(c->pool);
	if (c->jit)
		LLVMOrcDisposeLLJIT(c->jit);
	free(c->fns);
	free(c->arena);
	free(c->addr);
	cl_plan_free(c->p);
	free(c);
}

static int llvm_fail(sn_err *e, const char *what, LLVMErrorRef err)
{
	char *msg = LLVMGetErrorMessage(err);
	int rc = sn_errf(e, SN_EINTERNAL, "cpu: %s: %s", what, msg ? msg : "?");
	LLVMDisposeErrorMessage(msg);
	return rc;
}

static int cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* OpenBLAS (the pthreads build) starts its worker threads when it is
 * loaded, and an idle worker spins on sched_yield for about 2^28 cycles
 * before it sleeps: a tenth of a second of a core taken from our pool at
 * every process start, the warm start's first run included. We call
 * BLAS on one thread only, so those workers are stopped once, through
 * OpenBLAS's own shutdown (the one it runs before a fork), looked up at
 * run time so that another BLAS build without it is left alone. */
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_quiet(void)
{
	openblas_set_num_threads(1);
	void (*shutdown)(void) = (void (*)(void))(uintptr_t)dlsym(RTLD_DEFAULT, "blas_thread_shutdown_");
	if (shutdown)
		shutdown();
}

void rt_cpu_blas_quiet(void)
{
	pthread_once(&blas_once, blas_quiet);
}

static pthread_once_t llvm_once = PTHREAD_ONCE_INIT;
static void llvm_init(void)
{
	LLVMInitializeNativeTarget();
	LLVMInitializeNativeAsmPrinter();
}

void rt_cpu_host(sn_buf *b)
{
	char *triple = LLVMGetDefaultTargetTriple();
	char *cpu = LLVMGetHostCPUName();
	char *feat = LLVMGetHostCPUFeatures();
	sn_buf_printf(b, "llvm %d %s %s %s openblas %s", LLVM_VERSION_MAJOR, triple, cpu, feat, openblas_get_config());
	LLVMDisposeMessage(triple);
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(feat);
}

/* Token i (from 0) of a host text (rt_cpu_host: "llvm V TRIPLE CPU
 * FEATURES openblas ..."), into out[cap]; "" when there is none. */
static void host_token(const char *h, int i, char *out, size_t cap)
{
	out[0] = 0;
	for (int k = 0; *h; k++) {
		while (*h == ' ')
			h++;
		size_t n = strcspn(h, " ");
		if (k == i) {
			snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), h);
			return;
		}
		h += n;
	}
}

int rt_cpu_host_check(const char *objects_host, sn_err *e)
{
	sn_buf b = {0};
	rt_cpu_host(&b);
	if (b.oom) {
		sn_buf_free(&b);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	char want[256], have[256];
	host_token(objects_host, 2, want, sizeof want);
	host_token(b.s, 2, have, sizeof have);
	int rc = SN_OK;
	if (strncmp(objects_host, "llvm ", 5) || !want[0] || strcmp(want, have)) {
		rc = sn_errf(e, SN_EENV, "the package's code is for %s, this machine is %s", want[0] ? want : "an unknown host",
			     have);
		sn_buf_free(&b);
		return rc;
	}
	size_t wn = strlen(objects_host) + 1, hn = b.len + 1;
	char *wf = malloc(wn), *hf = malloc(hn);
	if (!wf || !hf) {
		free(wf);
		free(hf);
		sn_buf_free(&b);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	host_token(objects_host, 4, wf, wn);
	host_token(b.s, 4, hf, hn);
	/* every feature the objects were compiled with, this CPU has */
	for (const char *f = wf; *f && !rc;) {
		size_t n = strcspn(f, ",");
		if (*f == '+') {
			bool found = false;
			for (const char *g = hf; *g && !found;) {
				size_t m = strcspn(g, ",");
				found = m == n && !memcmp(f, g, n);
				g += m + (g[m] == ',');
			}
			if (!found)
				rc = sn_errf(e, SN_EENV,
					     "the package's code was compiled for a CPU with %.*s, which this one (%s) lacks: "
					     "compile it here",
					     (int)(n > 64 ? 64 : n - 1), f + 1, have);
		}
		f += n + (f[n] == ',');
	}
	free(wf);
	free(hf);
	sn_buf_free(&b);
	return rc;
}

/* One module's compilation, on a thread of its own. */
typedef struct objjob {
	LLVMModuleRef mod;
	const uint8_t *want; /* no module: the object's key (a plan from a file) */
	uint8_t key[KC_KEY_SIZE];
	const char *cache_dir;
	void (*warn)(void *, const char *);
	void *wctx;
	rt_cpu_stats st;
	LLVMMemoryBufferRef obj;
	int rc;
	sn_err e;
} objjob;

static int object_of(LLVMModuleRef mod, const char *cache_dir, void (*warn)(void *, const char *), void *wctx,
		     rt_cpu_stats *st, LLVMMemoryBufferRef *obj, uint8_t key[KC_KEY_SIZE], sn_err *e);

/* The object under key want, from the kernel cache (a plan read from a
 * file carries no module to compile again): SN_EINPUT when it is not
 * there or not usable. */
static int object_by_key(const uint8_t *want, const char *cache_dir, void (*warn)(void *, const char *), void *wctx,
			 rt_cpu_stats *st, LLVMMemoryBufferRef *obj, sn_err *e)
{
	if (!cache_dir)
		return sn_errf(e, SN_EINPUT, "cpu: a plan without modules needs the kernel cache");
	void *data = NULL;
	size_t size = 0;
	kc_status ks;
	sn_err sub = {0};
	if (kc_get(cache_dir, want, &data, &size, &ks, &sub) != SN_OK || ks.state != KC_HIT) {
		free(data);
		if (ks.state == KC_CORRUPT && warn)
			warn(wctx, ks.msg);
		return sn_errf(e, SN_EINPUT, "cpu: the plan's object is not in the kernel cache");
	}
	*obj = LLVMCreateMemoryBufferWithMemoryRangeCopy(data, size, "sinter-cpu.o");
	free(data);
	st->obj_hit = true;
	return SN_OK;
}

static void *object_thread(void *arg)
{
	objjob *j = arg;
	j->rc = j->mod ? object_of(j->mod, j->cache_dir, j->warn, j->wctx, &j->st, &j->obj, j->key, &j->e)
		       : object_by_key(j->want, j->cache_dir, j->warn, j->wctx, &j->st, &j->obj, &j->e);
	return NULL;
}

/* Whether mod defines a function (a module may hold only declarations). */
static bool has_code(LLVMModuleRef mod)
{
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
		if (!LLVMIsDeclaration(f))
			return true;
	return false;
}

/* The module optimized and compiled for the host, or the cached object. */
static int object_of(LLVMModuleRef mod, const char *cache_dir, void (*warn)(void *, const char *), void *wctx,
		     rt_cpu_stats *st, LLVMMemoryBufferRef *obj, uint8_t key[KC_KEY_SIZE], sn_err *e)
{
	char *triple = LLVMGetDefaultTargetTriple();
	char *cpu = LLVMGetHostCPUName();
	char *feat = LLVMGetHostCPUFeatures();
	LLVMTargetRef target;
	char *msg = NULL;
	LLVMTargetMachineRef tm = NULL;
	int rc = SN_OK;
	char *text = NULL;
	if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
		rc = sn_errf(e, SN_EENV, "cpu: no LLVM target for %s: %s", triple, msg ? msg : "?");
		goto done;
	}
	tm = LLVMCreateTargetMachine(target, triple, cpu, feat, LLVMCodeGenLevelAggressive, LLVMRelocPIC,
				     LLVMCodeModelSmall);
	if (!tm) {
		rc = sn_errf(e, SN_EINTERNAL, "cpu: LLVM made no target machine for %s", cpu);
		goto done;
	}
	LLVMSetTarget(mod, triple);
	LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(mod, dl);
	LLVMDisposeTargetData(dl);
	/* key: the module as text, the host CPU and its features */
	double tk = sn_now();
	text = LLVMPrintModuleToString(mod);
	size_t flen = strlen(triple) + strlen(cpu) + strlen(feat) + 64;
	char *flags = malloc(flen);
	if (!flags) {
		rc = sn_errf(e, SN_EINTERNAL, "out of memory");
		goto done;
	}
	snprintf(flags, flen, "cpu-object llvm16 O3 %s %s %s", triple, cpu, feat);
	kc_key(text, 0, 0, flags, key);
	free(flags);
	sn_log(SN_LOG_DEBUG, "cpu: module key in %.3f s (%zu bytes of IR)", sn_now() - tk, strlen(text));
	if (cache_dir) {
		void *data = NULL;
		size_t size = 0;
		kc_status ks;
		sn_err sub = {0};
		if (kc_get(cache_dir, key, &data, &size, &ks, &sub) == SN_OK && ks.state == KC_HIT) {
			*obj = LLVMCreateMemoryBufferWithMemoryRangeCopy(data, size, "sinter-cpu.o");
			free(data);
			st->obj_hit = true;
			sn_log(SN_LOG_INFO, "cpu: object cache hit (%zu bytes)", size);
			goto done;
		}
		free(data);
		if (ks.state == KC_CORRUPT && warn)
			warn(wctx, ks.msg);
	}
	double t0 = sn_now();
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
	LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
	LLVMPassBuilderOptionsSetLoopUnrolling(po, 1);
	LLVMErrorRef err = LLVMRunPasses(mod, "default<O3>", tm, po);
	LLVMDisposePassBuilderOptions(po);
	if (err) {
		rc = llvm_fail(e, "LLVM passes", err);
		goto done;
	}
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, obj)) {
		rc = sn_errf(e, SN_EINTERNAL, "cpu: LLVM code generation: %s", msg ? msg : "?");
		goto done;
	}
	st->opt_s = sn_now() - t0;
	if (cache_dir) {
		sn_err sub = {0};
		if (kc_put(cache_dir, key, LLVMGetBufferStart(*obj), LLVMGetBufferSize(*obj), &sub) != SN_OK)
			sn_log(SN_LOG_WARN, "cpu: object not cached: %s", sub.msg);
	}
done:
	if (msg)
		LLVMDisposeMessage(msg);
	if (text)
		LLVMDisposeMessage(text);
	if (tm)
		LLVMDisposeTargetMachine(tm);
	LLVMDisposeMessage(triple);
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(feat);
	return rc;
}

int rt_cpu_load(cl_plan *p, const char *cache_dir, int threads, void (*warn)(void *, const char *), void *warn_ctx,
		rt_cpu_stats *st, rt_cpu **out, sn_err *e)
{
	*out = NULL;
	memset(st, 0, sizeof *st);
	rt_cpu *c = calloc(1, sizeof *c);
	if (!c) {
		cl_plan_free(p);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	c->p = p;
	int rc = SN_OK;
	int n = threads > 0 ? threads : cores();
	st->threads = n;
	/* our pool splits the work; OpenBLAS runs each call on one thread
	 * (and setting its thread count again would restart its workers) */
	rt_cpu_blas_quiet();
	c->pool = pool_new(n);
	c->fns = calloc(p->nfns ? p->nfns : 1, sizeof *c->fns);
	c->addr = calloc(p->g->nnodes ? p->g->nnodes : 1, sizeof *c->addr);
	c->arena = p->arena_bytes ? aligned_alloc(CL_ALIGN, (p->arena_bytes + CL_ALIGN - 1) / CL_ALIGN * CL_ALIGN) : NULL;
	c->scratch = c->pool ? calloc((size_t)c->pool->n, sizeof *c->scratch) : NULL;
	c->wino = calloc(p->nsteps ? p->nsteps : 1, sizeof *c->wino);
	const char *wv = getenv("SINTER_CPU_WINOGRAD");
	c->no_wino = wv && !strcmp(wv, "0");
	c->wino_m = wv && !strcmp(wv, "2") ? 2 : wv && !strcmp(wv, "4") ? 4 : 0;
	const char *pv = getenv("SINTER_CPU_PACK");
	c->no_pack = pv && !strcmp(pv, "0");
	if (!c->pool || !c->fns || !c->addr || (p->arena_bytes && !c->arena) || !c->scratch || !c->wino) {
		rc = sn_errf(e, SN_EINTERNAL, "out of memory (cpu arena, %llu bytes)", (unsigned long long)p->arena_bytes);
		goto fail;
	}
	bool packaged = false;
	for (int k = 0; k < CL_NMOD; k++)
		packaged |= p->obj[k] != NULL;
	if (packaged) { /* compiled elsewhere: for a CPU this one can run? */
		if ((rc = rt_cpu_host_check(p->host ? p->host : "", e)))
			goto fail;
	} else {
		sn_buf hb = {0};
		rt_cpu_host(&hb);
		free(p->host);
		p->host = hb.s; /* what the objects are compiled for (NULL when out of memory: "") */
	}
	if (p->nfns) {
		pthread_once(&llvm_once, llvm_init);
		/* the modules optimized and compiled in parallel, one thread each */
		objjob jobs[CL_NMOD];
		pthread_t th[CL_NMOD];
		bool started[CL_NMOD] = {0};
		memset(jobs, 0, sizeof jobs);
		for (int k = 0; k < CL_NMOD; k++) {
			jobs[k] = (objjob){.mod = p->llmod[k], .want = p->has_obj[k] ? p->objkey[k] : NULL,
					   .cache_dir = cache_dir, .warn = warn, .wctx = warn_ctx};
			if (p->obj[k]) { /* an AOT package's: linked as it is */
				jobs[k].obj = LLVMCreateMemoryBufferWithMemoryRangeCopy(p->obj[k], (size_t)p->obj_size[k],
											"sinter-cpu.o");
				jobs[k].st.obj_hit = true;
				continue;
			}
			if (jobs[k].mod ? !has_code(jobs[k].mod) : !jobs[k].want)
				continue;
			if (k > 0 && pthread_create(&th[k], NULL, object_thread, &jobs[k]) == 0)
				started[k] = true;
			else
				object_thread(&jobs[k]);
		}
		for (int k = 1; k < CL_NMOD; k++)
			if (started[k])
				pthread_join(th[k], NULL);
		st->obj_hit = true;
		for (int k = 0; k < CL_NMOD; k++) {
			if (jobs[k].rc && !rc) {
				rc = jobs[k].rc;
				*e = jobs[k].e;
			}
			if (jobs[k].st.opt_s > st->opt_s)
				st->opt_s = jobs[k].st.opt_s;
			if (jobs[k].obj && !jobs[k].st.obj_hit)
				st->obj_hit = false;
			if (jobs[k].obj && jobs[k].mod) { /* for a plan file */
				memcpy(p->objkey[k], jobs[k].key, KC_KEY_SIZE);
				p->has_obj[k] = true;
			}
			if (jobs[k].obj && p->keep_obj && !p->obj[k]) { /* for a package */
				size_t n = LLVMGetBufferSize(jobs[k].obj);
				if (!(p->obj[k] = malloc(n ? n : 1)) && !rc) {
					rc = sn_errf(e, SN_EINTERNAL, "out of memory");
				} else if (p->obj[k]) {
					memcpy(p->obj[k], LLVMGetBufferStart(jobs[k].obj), n);
					p->obj_size[k] = n;
				}
			}
		}
		double t0 = sn_now();
		for (int k = 0; k < CL_NMOD; k++) {
			cl_module_dispose(p->llctx[k], p->llmod[k]);
			p->llctx[k] = p->llmod[k] = NULL;
		}
		LLVMErrorRef err = rc ? NULL : LLVMOrcCreateLLJIT(&c->jit, LLVMOrcCreateLLJITBuilder());
		if (rc || err) {
			for (int k = 0; k < CL_NMOD; k++)
				if (jobs[k].obj)
					LLVMDisposeMemoryBuffer(jobs[k].obj);
			if (err)
				rc = llvm_fail(e, "ORC LLJIT", err);
			goto fail;
		}
		LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(c->jit);
		LLVMOrcDefinitionGeneratorRef gen = NULL;
		err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(c->jit), NULL,
									   NULL);
		if (err) {
			for (int k = 0; k < CL_NMOD; k++)
				if (jobs[k].obj)
					LLVMDisposeMemoryBuffer(jobs[k].obj);
			rc = llvm_fail(e, "ORC process symbols", err);
			goto fail;
		}
		LLVMOrcJITDylibAddGenerator(jd, gen);
		for (int k = 0; k < CL_NMOD; k++) {
			if (!jobs[k].obj)
				continue;
			/* takes the buffer, also on failure */
			if ((err = LLVMOrcLLJITAddObjectFile(c->jit, jd, jobs[k].obj))) {
				for (int j = k + 1; j < CL_NMOD; j++)
					if (jobs[j].obj)
						LLVMDisposeMemoryBuffer(jobs[j].obj);
				rc = llvm_fail(e, "ORC object", err);
				goto fail;
			}
		}
		for (uint32_t i = 0; i < p->nfns; i++) {
			LLVMOrcExecutorAddress a = 0;
			if ((err = LLVMOrcLLJITLookup(c->jit, &a, p->fns[i]))) {
				rc = llvm_fail(e, "ORC lookup", err);
				goto fail;
			}
			c->fns[i] = (kern_fn *)(uintptr_t)a;
		}
		st->jit_s = sn_now() - t0;
	} else {
		/* no kernel (products and steps of the runtime's own only): the
		 * empty modules go, so the plan can be written */
		for (int k = 0; k < CL_NMOD; k++) {
			cl_module_dispose(p->llctx[k], p->llmod[k]);
			p->llctx[k] = p->llmod[k] = NULL;
		}
	}
	*out = c;
	return SN_OK;
fail:
	rt_cpu_free(c);
	return rc;
}

/* ---- steps ---- */

typedef struct kjob {
	kern_fn *fn;
	void **bufs;
} kjob;

static void kern_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	kjob *j = ctx;
	j->fn(j->bufs, lo, hi);
}

static void *addr_of(rt_cpu *c, ir_ref r)
{
	return r == IR_NONE ? NULL : c->addr[r];
}

/* e^x for the tanh-GELU epilogue: Cody-Waite reduction and Cephes' expf
 * polynomial (as cl_emit.c's fexp), no libm call, so the loop vectorizes:
 * rint(x log2 e) by adding and taking away 1.5 * 2^23 (exact for
 * |x log2 e| < 2^22, the same round to nearest even as rintf; the build's
 * ISO C keeps the sum from being folded or fused). */
static inline float fast_exp(float x)
{
	float c = x > 88.0f ? 88.0f : x < -87.33654f ? -87.33654f : x == x ? x : 0.0f;
	float n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
	float r = c - n * 0.693359375f - n * -2.12194440e-4f;
	float p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	float y = p * r * r + r + 1.0f;
	int32_t bits = ((int32_t)n + 127) * 8388608; /* << 23, n in [-126, 127] */
	float e;
	memcpy(&e, &bits, sizeof e);
	return x != x ? x : y * e;
}

/* 0.5 v (1 + tanh(u)) written as v / (1 + e^(-2u)) */
static inline float gelu_tanh(float v)
{
	float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
	return v / (1.0f + fast_exp(-2.0f * u));
}

/* A product's activation over one row of a tile, o[0..n): relu (act 1)
 * or tanh-GELU (act 2). Built for the baseline and, on x86-64, again for
 * AVX2 (8 lanes; no FMA contraction under ISO C, so both give the same
 * floats), picked once by what the host has. */
#define ACT_ROW_BODY                                                                                                   \
	{                                                                                                              \
		if (act == 1)                                                                                          \
			for (int64_t i = 0; i < n; i++)                                                                \
				o[i] = o[i] < 0.0f ? 0.0f : o[i];                                                      \
		else if (act == 2)                                                                                     \
			for (int64_t i = 0; i < n; i++)                                                                \
				o[i] = gelu_tanh(o[i]);                                                                \
	}

static void act_row_base(float *restrict o, int act, int64_t n) ACT_ROW_BODY

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void act_row_avx2(float *restrict o, int act, int64_t n) ACT_ROW_BODY
#endif

typedef void act_row_fn(float *restrict o, int act, int64_t n);
static act_row_fn *act_row = act_row_base;
static pthread_once_t act_once = PTHREAD_ONCE_INIT;
static void act_pick(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		act_row = act_row_avx2;
#endif
}

typedef struct gjob {
	rt_cpu *c;
	const cl_step *s;
	const float *a, *b, *bias;
	const float *res;
	float *out;
	bool by_rows;
	int64_t tile;
} gjob;

static void gemm_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	gjob *j = ctx;
	const cl_step *s = j->s;
	for (int64_t t = lo; t < hi; t++) {
		int64_t per = j->by_rows ? (s->m + j->tile - 1) / j->tile : (s->n + j->tile - 1) / j->tile;
		int64_t b = t / per, q = t % per;
		const float *A = j->a + b * s->sa, *B = j->b + b * s->sb;
		float *C = j->out + b * s->sc;
		const float *R = j->res ? j->res + b * s->sc : NULL;
		int64_t r0 = 0, r1 = s->m, c0 = 0, c1 = s->n;
		if (j->by_rows) {
			r0 = q * j->tile;
			r1 = r0 + j->tile < s->m ? r0 + j->tile : s->m;
		} else {
			c0 = q * j->tile;
			c1 = c0 + j->tile < s->n ? c0 + j->tile : s->n;
		}
		const float *Bt = s->trans_b ? B + c0 * s->k : B + c0;
		/* the bias (and the residual) first, the product added to it
		 * (beta 1): OpenBLAS's zeroing pass over C becomes this one, and
		 * no second pass reads the tile back for them */
		float beta = 0.0f;
		if (j->bias || R) {
			for (int64_t i = r0; i < r1; i++) {
				float *o = C + i * s->n + c0;
				const float *rr = R ? R + i * s->n + c0 : NULL;
				if (j->bias && rr)
					for (int64_t jj = 0; jj < c1 - c0; jj++)
						o[jj] = j->bias[c0 + jj] + rr[jj];
				else if (j->bias)
					memcpy(o, j->bias + c0, (size_t)(c1 - c0) * sizeof *o);
				else if (rr != o)
					memcpy(o, rr, (size_t)(c1 - c0) * sizeof *o);
			}
			beta = 1.0f;
		}
		if (r1 - r0 == 1) {
			/* one row: a matrix-vector product, bound by reading B once */
			if (s->trans_b)
				cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)(c1 - c0), (blasint)s->k, 1.0f, Bt,
					    (blasint)s->k, A + r0 * s->k, 1, beta, C + r0 * s->n + c0, 1);
			else
				cblas_sgemv(CblasRowMajor, CblasTrans, (blasint)s->k, (blasint)(c1 - c0), 1.0f, Bt,
					    (blasint)s->n, A + r0 * s->k, 1, beta, C + r0 * s->n + c0, 1);
		} else
			cblas_sgemm(CblasRowMajor, CblasNoTrans, s->trans_b ? CblasTrans : CblasNoTrans, (blasint)(r1 - r0),
				    (blasint)(c1 - c0), (blasint)s->k, 1.0f, A + r0 * s->k, (blasint)s->k, Bt,
				    (blasint)(s->trans_b ? s->k : s->n), beta, C + r0 * s->n + c0, (blasint)s->n);
		if (s->act)
			for (int64_t i = r0; i < r1; i++)
				act_row(C + i * s->n + c0, s->act, c1 - c0);
	}
}

/* ---- products on weights packed once (the first run): B in panels of
 * 16 columns, [N/16][K][16], zero padded, so no call packs it again
 * (OpenBLAS packs B on every call: a pass over the weights, which GPT-2
 * reads from memory each time); C in 6 x 16 tiles by an AVX2/FMA
 * micro-kernel (12 accumulators), A packed per task in [K/256][M/6][kc][6]
 * blocks, C blocks of 8 panels kept in cache across the K blocks. ---- */

#define PK_MR 6
#define PK_NR 16
#define PK_KC 256
#define PK_NCP 8
/* products of more rows (and convolutions of more pixels) stay on
 * OpenBLAS: measured slower here on ResNet-50's 56x56 and 28x28 maps
 * (3136 and 784 pixels), faster on 14x14 and 7x7 and GPT-2's 128 tokens */
#define PK_MAX_ROWS 256
#define PK_MC 192 /* rows per block (a product task's rows at most): whole 6-row tiles */

static bool pk_host; /* the host has AVX2 and FMA */
static pthread_once_t pk_once = PTHREAD_ONCE_INIT;
static void pk_pick(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	pk_host = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* c (mr x nr of a 6 x 16 tile, row stride ldc) = or += a (kc x 6) b (kc x 16) */
__attribute__((target("avx2,fma"))) static void pk_kernel(int64_t kc, const float *a, const float *b, float *c,
							    int64_t ldc, bool add, int64_t mr, int64_t nr)
{
	__m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
	       c40 = c00, c41 = c00, c50 = c00, c51 = c00;
	for (int64_t k = 0; k < kc; k++) {
		__m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8), t;
		t = _mm256_broadcast_ss(a + 0);
		c00 = _mm256_fmadd_ps(t, b0, c00);
		c01 = _mm256_fmadd_ps(t, b1, c01);
		t = _mm256_broadcast_ss(a + 1);
		c10 = _mm256_fmadd_ps(t, b0, c10);
		c11 = _mm256_fmadd_ps(t, b1, c11);
		t = _mm256_broadcast_ss(a + 2);
		c20 = _mm256_fmadd_ps(t, b0, c20);
		c21 = _mm256_fmadd_ps(t, b1, c21);
		t = _mm256_broadcast_ss(a + 3);
		c30 = _mm256_fmadd_ps(t, b0, c30);
		c31 = _mm256_fmadd_ps(t, b1, c31);
		t = _mm256_broadcast_ss(a + 4);
		c40 = _mm256_fmadd_ps(t, b0, c40);
		c41 = _mm256_fmadd_ps(t, b1, c41);
		t = _mm256_broadcast_ss(a + 5);
		c50 = _mm256_fmadd_ps(t, b0, c50);
		c51 = _mm256_fmadd_ps(t, b1, c51);
		a += PK_MR;
		b += PK_NR;
	}
	__m256 acc[12] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
	if (mr == PK_MR && nr == PK_NR) {
		for (int r = 0; r < PK_MR; r++) {
			float *cr = c + r * ldc;
			if (add) {
				acc[2 * r] = _mm256_add_ps(_mm256_loadu_ps(cr), acc[2 * r]);
				acc[2 * r + 1] = _mm256_add_ps(_mm256_loadu_ps(cr + 8), acc[2 * r + 1]);
			}
			_mm256_storeu_ps(cr, acc[2 * r]);
			_mm256_storeu_ps(cr + 8, acc[2 * r + 1]);
		}
		return;
	}
	float t[PK_MR * PK_NR];
	for (int r = 0; r < PK_MR; r++) {
		_mm256_storeu_ps(t + r * PK_NR, acc[2 * r]);
		_mm256_storeu_ps(t + r * PK_NR + 8, acc[2 * r + 1]);
	}
	for (int64_t r = 0; r < mr; r++)
		for (int64_t q = 0; q < nr; q++)
			c[r * ldc + q] = add ? c[r * ldc + q] + t[r * PK_NR + q] : t[r * PK_NR + q];
}
#else
static void pk_kernel(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, bool add, int64_t mr,
		      int64_t nr)
{
	(void)kc, (void)a, (void)b, (void)c, (void)ldc, (void)add, (void)mr, (void)nr; /* pk_host is false */
}
#endif

/* A buffer for weights packed or transformed on the first run (free()
 * frees it): aligned for pk_kernel's loads, and from 2 MiB on in 2 MiB
 * pages where the kernel gives them on request (a 17 MB Winograd U took
 * 4,000 page faults on its first write). */
static void *weights_alloc(size_t n)
{
	size_t huge = (size_t)2 << 20;
	if (n < huge)
		return aligned_alloc(CL_ALIGN, (n + CL_ALIGN - 1) / CL_ALIGN * CL_ALIGN);
	size_t sz = (n + huge - 1) / huge * huge;
	void *p = aligned_alloc(huge, sz);
#ifdef MADV_HUGEPAGE
	if (p)
		(void)madvise(p, sz, MADV_HUGEPAGE); /* advice: fine to be refused */
#endif
	return p;
}

typedef struct pkjob {
	const float *b; /* B as the graph has it: k x n, or n x k (trans) */
	float *bp;
	int64_t k, n;
	bool trans;
} pkjob;

/* panels [lo, hi) of B packed */
static void pk_pack_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	pkjob *j = ctx;
	for (int64_t p = lo; p < hi; p++) {
		float *d = j->bp + p * j->k * PK_NR;
		int64_t c0 = p * PK_NR, w = j->n - c0 < PK_NR ? j->n - c0 : PK_NR;
		if (!j->trans) {
			for (int64_t k = 0; k < j->k; k++) {
				memcpy(d + k * PK_NR, j->b + k * j->n + c0, (size_t)w * sizeof *d);
				for (int64_t q = w; q < PK_NR; q++)
					d[k * PK_NR + q] = 0.0f;
			}
			continue;
		}
		/* column q of the panel is row c0 + q of B: the panel written in
		 * order, its 16 rows read side by side */
		const float *r[PK_NR];
		for (int64_t q = 0; q < PK_NR; q++)
			r[q] = q < w ? j->b + (c0 + q) * j->k : NULL;
		for (int64_t k = 0; k < j->k; k++, d += PK_NR)
			for (int64_t q = 0; q < PK_NR; q++)
				d[q] = r[q] ? r[q][k] : 0.0f;
	}
}

/* rows [i0, i1) (whole 6-row tiles but the last) of A's rows [0, m) (row
 * stride lda) packed into ap, which holds all m: [K/256][ceil(m/6)][kc][6] */
static void pk_pack_rows(const float *A, int64_t lda, int64_t m, int64_t K, float *ap, int64_t i0, int64_t i1)
{
	int64_t mp = (m + PK_MR - 1) / PK_MR * PK_MR;
	for (int64_t k0 = 0; k0 < K; k0 += PK_KC) {
		int64_t kc = K - k0 < PK_KC ? K - k0 : PK_KC;
		float *blk = ap + k0 * mp;
		for (int64_t i = i0; i < i1; i += PK_MR) {
			float *d = blk + i / PK_MR * kc * PK_MR;
			int64_t mr = m - i < PK_MR ? m - i : PK_MR;
			const float *r0 = A + i * lda + k0;
			if (mr == PK_MR) {
				const float *r1 = r0 + lda, *r2 = r1 + lda, *r3 = r2 + lda, *r4 = r3 + lda, *r5 = r4 + lda;
				for (int64_t k = 0; k < kc; k++, d += PK_MR) {
					d[0] = r0[k];
					d[1] = r1[k];
					d[2] = r2[k];
					d[3] = r3[k];
					d[4] = r4[k];
					d[5] = r5[k];
				}
				continue;
			}
			for (int64_t k = 0; k < kc; k++)
				for (int64_t r = 0; r < PK_MR; r++)
					d[k * PK_MR + r] = r < mr ? r0[r * lda + k] : 0.0f;
		}
	}
}

static void pk_pack_a(const float *A, int64_t lda, int64_t m, int64_t K, float *ap)
{
	pk_pack_rows(A, lda, m, K, ap, 0, m);
}

/* C (rows [0, m), row stride ldc) columns of panels [p0, p1) of bp (K x
 * N packed) = or += (add) A (m x K, row stride lda) times them, then the
 * activation on each block of panels while it is in cache; ap holds A
 * packed (m rounded up to 6, times K), by pk_tile itself when A is not
 * NULL, else by the caller. */
static void pk_tile(const float *A, int64_t lda, int64_t m, int64_t K, const float *bp, int64_t N, int64_t p0,
		    int64_t p1, float *C, int64_t ldc, bool add, int act, float *ap)
{
	if (A)
		pk_pack_a(A, lda, m, K, ap);
	int64_t mp = (m + PK_MR - 1) / PK_MR * PK_MR;
	/* blocks of PK_MC rows: a block's packed A (PK_MC x 256) stays in
	 * L2 while the panels go by */
	for (int64_t i0 = 0; i0 < m; i0 += PK_MC) {
		int64_t i1 = i0 + PK_MC < m ? i0 + PK_MC : m, mb = i1 - i0;
		for (int64_t jc = p0; jc < p1; jc += PK_NCP) {
			int64_t je = jc + PK_NCP < p1 ? jc + PK_NCP : p1;
			for (int64_t k0 = 0; k0 < K; k0 += PK_KC) {
				int64_t kc = K - k0 < PK_KC ? K - k0 : PK_KC;
				const float *a = ap + k0 * mp;
				for (int64_t p = jc; p < je; p++) {
					const float *b = bp + (p * K + k0) * PK_NR;
					int64_t nr = N - p * PK_NR < PK_NR ? N - p * PK_NR : PK_NR;
					/* the next panel's block fetched from memory while
					 * this one is used: a share of its lines per tile */
					const char *nb = (const char *)(p + 1 < p1 ? bp + ((p + 1) * K + k0) * PK_NR : b);
					int64_t lines = kc * PK_NR * 4 / 64, per = (lines * PK_MR + mb - 1) / mb, l = 0;
					for (int64_t i = i0; i < i1; i += PK_MR) {
						for (int64_t q = 0; q < per && l < lines; q++, l++)
							__builtin_prefetch(nb + l * 64, 0, 3);
						pk_kernel(kc, a + i / PK_MR * kc * PK_MR, b, C + i * ldc + p * PK_NR, ldc,
							  add || k0 > 0, i1 - i < PK_MR ? i1 - i : PK_MR, nr);
					}
				}
			}
			if (act) {
				int64_t a0 = jc * PK_NR, a1 = je * PK_NR < N ? je * PK_NR : N;
				for (int64_t i = i0; i < i1; i++)
					act_row(C + i * ldc + a0, act, a1 - a0);
			}
		}
	}
}

typedef struct pgjob {
	rt_cpu *c;
	const cl_step *s;
	const float *a, *bp, *bias, *res;
	float *out;
	int64_t rb, nrb, pchunk, nchunk; /* rows per task, row blocks; panels per task, panel chunks */
	float *ap;                       /* one row block: A packed once for every task (else NULL) */
} pgjob;

/* 6-row tiles [lo, hi) of a one-block product's A packed into j->ap */
static void pgemm_pack_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	pgjob *j = ctx;
	int64_t m = j->s->m, i1 = hi * PK_MR < m ? hi * PK_MR : m;
	pk_pack_rows(j->a, j->s->k, m, j->s->k, j->ap, lo * PK_MR, i1);
}

static void pgemm_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	pgjob *j = ctx;
	const cl_step *s = j->s;
	int64_t K = s->k, N = s->n, np = (N + PK_NR - 1) / PK_NR;
	float *ap = j->ap ? j->ap : j->c->scratch[tid];
	for (int64_t t = lo; t < hi; t++) {
		int64_t rbi = t / j->nchunk, ch = t % j->nchunk;
		int64_t r0 = rbi * j->rb, r1 = r0 + j->rb < s->m ? r0 + j->rb : s->m, m = r1 - r0;
		int64_t p0 = ch * j->pchunk, p1 = p0 + j->pchunk < np ? p0 + j->pchunk : np;
		int64_t c0 = p0 * PK_NR, c1 = p1 * PK_NR < N ? p1 * PK_NR : N;
		float *C = j->out + r0 * N;
		/* the bias and the residual first, as run_gemm's */
		bool add = j->bias || j->res;
		for (int64_t i = 0; add && i < m; i++) {
			float *o = C + i * N + c0;
			const float *rr = j->res ? j->res + (r0 + i) * N + c0 : NULL;
			if (j->bias && rr)
				for (int64_t q = 0; q < c1 - c0; q++)
					o[q] = j->bias[c0 + q] + rr[q];
			else if (j->bias)
				memcpy(o, j->bias + c0, (size_t)(c1 - c0) * sizeof *o);
			else if (rr != o)
				memcpy(o, rr, (size_t)(c1 - c0) * sizeof *o);
		}
		pk_tile(j->ap ? NULL : j->a + r0 * K, K, m, K, j->bp, N, p0, p1, C, N, add, s->act, ap);
	}
}

/* Whether the product runs on packed weights: B a weight (not batched),
 * 2 to PK_MAX_ROWS rows, and a host with AVX2 and FMA. */
static bool is_weight(const rt_cpu *c, ir_ref r)
{
	if (r == IR_NONE)
		return false;
	while (c->p->vals[r].where == CL_VIEW)
		r = c->p->vals[r].index;
	return c->p->vals[r].where == CL_WEIGHT;
}

static bool pk_ok(const rt_cpu *c, const cl_step *s)
{
	return !c->no_pack && pk_host && s->batch == 1 && s->m >= 2 && s->m <= PK_MAX_ROWS && is_weight(c, s->b);
}

static int run_pgemm(rt_cpu *c, const cl_step *s, sn_err *e)
{
	size_t si = (size_t)(s - c->p->steps);
	int n = c->pool->n;
	int64_t np = (s->n + PK_NR - 1) / PK_NR;
	if (!c->wino[si]) {
		if (!(c->wino[si] = weights_alloc((size_t)(np * s->k * PK_NR) * sizeof(float))))
			return sn_errf(e, SN_EINTERNAL, "out of memory (packed weights)");
		pkjob pj = {.b = addr_of(c, s->b), .bp = c->wino[si], .k = s->k, .n = s->n, .trans = s->trans_b};
		pool_for(c->pool, np, 1, pk_pack_task, &pj);
	}
	pgjob j = {.c = c, .s = s, .a = addr_of(c, s->a), .bp = c->wino[si], .bias = addr_of(c, s->bias),
		   .res = addr_of(c, s->c), .out = addr_of(c, s->out)};
	/* row blocks of up to PK_MC rows (whole 6-row tiles), then chunks of
	 * panels for two tasks per thread at least; each task packs its rows
	 * of A, which costs little next to B's panels it streams */
	j.nrb = (s->m + PK_MC - 1) / PK_MC;
	j.rb = ((s->m + j.nrb - 1) / j.nrb + PK_MR - 1) / PK_MR * PK_MR;
	j.nrb = (s->m + j.rb - 1) / j.rb;
	j.nchunk = (2 * n + j.nrb - 1) / j.nrb;
	if (j.nchunk > np)
		j.nchunk = np;
	j.pchunk = (np + j.nchunk - 1) / j.nchunk;
	j.nchunk = (np + j.pchunk - 1) / j.pchunk;
	/* one row block split over panel chunks: A packed once, on the pool,
	 * into the first thread's scratch (every task packed all of it, 5 %
	 * of GPT-2's time on 2 threads) */
	size_t need = (size_t)j.rb * (size_t)s->k;
	if (need > c->scratch_n) {
		for (int i = 0; i < n; i++) {
			free(c->scratch[i]);
			if (!(c->scratch[i] = malloc(need * sizeof(float))))
				return sn_errf(e, SN_EINTERNAL, "out of memory (packed rows)");
		}
		c->scratch_n = need;
	}
	if (j.nrb == 1 && j.nchunk > 1) {
		j.ap = c->scratch[0];
		pool_for(c->pool, (s->m + PK_MR - 1) / PK_MR, 1, pgemm_pack_task, &j);
	}
	pool_for(c->pool, j.nrb * j.nchunk, 1, pgemm_task, &j);
	return SN_OK;
}

static void run_gemm(rt_cpu *c, const cl_step *s)
{
	gjob j = {.c = c, .s = s, .a = addr_of(c, s->a), .b = addr_of(c, s->b), .bias = addr_of(c, s->bias),
		  .res = addr_of(c, s->c), .out = addr_of(c, s->out)};
	int n = c->pool->n;
	/* split the dim whose repeated packing costs less: each task of rows
	 * packs all of B (k x n), each task of columns all of its rows of A
	 * (m x k); so rows when m > n (and enough of them), else columns */
	j.by_rows = s->m > s->n && s->m >= 8 * n;
	int64_t dim = j.by_rows ? s->m : s->n;
	int64_t parts = s->batch >= n ? 1 : 2 * n;
	int64_t tile = (dim + parts - 1) / parts;
	if (j.by_rows && tile < 8)
		tile = 8;
	if (!j.by_rows)
		tile = (tile + 15) / 16 * 16;
	if (tile < 1)
		tile = 1;
	j.tile = tile;
	int64_t per = (dim + tile - 1) / tile;
	pthread_once(&act_once, act_pick);
	pool_for(c->pool, s->batch * per, 1, gemm_task, &j);
}

/* ---- convolutions: im2col by tiles of output pixels into sgemm ---- */


typedef struct cjob {
	rt_cpu *c;
	const cl_step *s;
	const ir_node *n;
	const float *x, *w, *bias;
	float *out;
	int64_t N, H, W, C, O, KH, KW, Ho, Wo, sh, sw, pt, pl, dh, dw, K, M;
	bool direct; /* 1x1, stride 1, no pad: x is the patch matrix */
	void **ebufs;
	kern_fn *epi;
	int64_t ctile, nct; /* output channels per task, tasks per pixel tile */
	int64_t tile;       /* output pixels per task */
	const float *wp;    /* the weights packed for pk_kernel, or NULL (OpenBLAS) */
	size_t apoff;       /* where a task's packed rows start in its scratch */
} cjob;

static void conv_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	cjob *j = ctx;
	float *col = j->c->scratch[tid];
	for (int64_t t = lo; t < hi; t++) {
		int64_t ct = t % j->nct, pt_ = t / j->nct;
		int64_t p0 = pt_ * j->tile, p1 = p0 + j->tile < j->M ? p0 + j->tile : j->M;
		int64_t o0 = ct * j->ctile, o1 = o0 + j->ctile < j->O ? o0 + j->ctile : j->O;
		const float *A;
		if (j->direct) {
			A = j->x + p0 * j->C;
		} else {
			for (int64_t p = p0; p < p1; p++) {
				int64_t wo = p % j->Wo, ho = p / j->Wo % j->Ho, nb = p / (j->Wo * j->Ho);
				float *row = col + (p - p0) * j->K;
				for (int64_t kh = 0; kh < j->KH; kh++) {
					int64_t hi_ = ho * j->sh - j->pt + kh * j->dh;
					if (j->dw == 1) {
						/* the row's taps are adjacent pixels: one run of
						 * KW * C floats in NHWC, zeros where it leaves x */
						int64_t wi0 = wo * j->sw - j->pl;
						int64_t k0 = wi0 < 0 ? -wi0 : 0, k1 = j->W - wi0 < j->KW ? j->W - wi0 : j->KW;
						float *dst = row + kh * j->KW * j->C;
						if (hi_ < 0 || hi_ >= j->H || k1 <= k0) {
							memset(dst, 0, (size_t)(j->KW * j->C) * sizeof *dst);
							continue;
						}
						if (k0 > 0)
							memset(dst, 0, (size_t)(k0 * j->C) * sizeof *dst);
						memcpy(dst + k0 * j->C, j->x + ((nb * j->H + hi_) * j->W + wi0 + k0) * j->C,
						       (size_t)((k1 - k0) * j->C) * sizeof *dst);
						if (k1 < j->KW)
							memset(dst + k1 * j->C, 0, (size_t)((j->KW - k1) * j->C) * sizeof *dst);
						continue;
					}
					for (int64_t kw = 0; kw < j->KW; kw++) {
						int64_t wi = wo * j->sw - j->pl + kw * j->dw;
						float *dst = row + (kh * j->KW + kw) * j->C;
						if (hi_ < 0 || hi_ >= j->H || wi < 0 || wi >= j->W)
							memset(dst, 0, (size_t)j->C * sizeof *dst);
						else
							memcpy(dst, j->x + ((nb * j->H + hi_) * j->W + wi) * j->C,
							       (size_t)j->C * sizeof *dst);
					}
				}
			}
			A = col;
		}
		float *C = j->out + p0 * j->O;
		/* the bias first and the product added to it (beta 1): one pass
		 * over the tile instead of OpenBLAS's zeroing and a bias pass */
		float beta = 0.0f;
		if (j->bias) {
			for (int64_t p = p0; p < p1; p++)
				memcpy(C + (p - p0) * j->O + o0, j->bias + o0, (size_t)(o1 - o0) * sizeof *C);
			beta = 1.0f;
		}
		if (j->wp)
			pk_tile(A, j->K, p1 - p0, j->K, j->wp, j->O, o0 / PK_NR, (o1 + PK_NR - 1) / PK_NR, C, j->O, beta != 0.0f,
				0, col + j->apoff);
		else
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)(p1 - p0), (blasint)(o1 - o0),
				    (blasint)j->K, 1.0f, A, (blasint)j->K, j->w + o0 * j->K, (blasint)j->K, beta, C + o0,
				    (blasint)j->O);
		/* the fused epilogue on the tile while it is in cache: its rows
		 * are output pixels of O channels (after the whole conv when
		 * the channels are split) */
		if (j->epi && j->nct == 1)
			j->epi(j->ebufs, p0, p1);
	}
}

/* ---- Winograd F(m x m, 3x3), m = 2 or 4 (Lavin and Gray, "Fast
 * Algorithms for Convolutional Neural Networks", 2016), for 3x3 stride-1
 * undilated convolutions: each m x m block of output pixels from an
 * (m + 2)^2 input patch, V = B^T d B per channel, (m + 2)^2 products
 * (tiles x C) by (C x O) on the transformed weights U = G g G^T, then
 * Y = A^T M A. Multiplies per output: 36 / 4 = 9 direct, 16 / 4 = 4 with
 * m = 2, 36 / 16 = 2.25 with m = 4 (whose transforms take larger
 * coefficients: its error in fp32 is about 10x m = 2's, still within the
 * cpu device's 2e-5 against the reference; measured in tests/cpu_ref.py).
 * U is made on the first run (every run when the weights are not a weight
 * of the plan), in panels for pk_kernel on an AVX2/FMA host (no packing
 * of U per task), else [slots][O][C] for cblas_sgemm. ---- */

typedef struct wjob {
	rt_cpu *c;
	const float *x, *w, *bias;
	float *u;    /* panels: [slots][ceil(O/16)][C][16]; else [slots][O][C] */
	bool panels;
	int m, al;   /* output block m x m, patch al x al (al = m + 2): al^2 slots */
	float *out;
	int64_t H, W, C, O, Ho, Wo, pt, pl, th, tw, T;
	int64_t nt, nco, ocw; /* tiles per task, channel tasks, channels per task */
} wjob;

/* g (3 taps) -> u (al values) = G g. m = 2: G = [1 0 0; .5 .5 .5; .5 -.5
 * .5; 0 0 1]; m = 4: G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24
 * 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]. */
static void wino_g(int m, const float g[3], float *u)
{
	if (m == 2) {
		u[0] = g[0];
		u[1] = 0.5f * (g[0] + g[1] + g[2]);
		u[2] = 0.5f * (g[0] - g[1] + g[2]);
		u[3] = g[2];
		return;
	}
	u[0] = g[0] / 4.0f;
	u[1] = -(g[0] + g[1] + g[2]) / 6.0f;
	u[2] = -(g[0] - g[1] + g[2]) / 6.0f;
	u[3] = g[0] / 24.0f + g[1] / 12.0f + g[2] / 6.0f;
	u[4] = g[0] / 24.0f - g[1] / 12.0f + g[2] / 6.0f;
	u[5] = g[2];
}

/* u (al x al) = G g G^T for output channel o, input channel ci. */
static void wino_u(const wjob *j, int64_t o, int64_t ci, float u[6][6])
{
	int64_t C = j->C;
	float t[6][3], v[6];
	for (int q = 0; q < 3; q++) { /* columns: t = G g */
		float g[3] = {j->w[((o * 3 + 0) * 3 + q) * C + ci], j->w[((o * 3 + 1) * 3 + q) * C + ci],
			      j->w[((o * 3 + 2) * 3 + q) * C + ci]};
		wino_g(j->m, g, v);
		for (int a = 0; a < j->al; a++)
			t[a][q] = v[a];
	}
	for (int a = 0; a < j->al; a++) /* rows: t G^T */
		wino_g(j->m, t[a], u[a]);
}

/* U for output channels [lo, hi) ([slots][O][C], each row written in order). */
static void wino_weight_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	wjob *j = ctx;
	int64_t C = j->C, O = j->O;
	float u[6][6];
	for (int64_t o = lo; o < hi; o++)
		for (int64_t ci = 0; ci < C; ci++) {
			wino_u(j, o, ci, u);
			for (int a = 0; a < j->al; a++)
				for (int b = 0; b < j->al; b++)
					j->u[((int64_t)(a * j->al + b) * O + o) * C + ci] = u[a][b];
		}
}

/* U in panels for panels [lo, hi) of 16 output channels: each slot's
 * 16 columns of an input channel side by side, one cache line (written
 * one channel at a time, the 16 or 36 slots' lines were each touched 16
 * times: 22 ms for a 512-channel layer's 17 MB on the first run) */
static void wino_panel_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	wjob *j = ctx;
	int64_t C = j->C, O = j->O, np = (O + PK_NR - 1) / PK_NR;
	int ns = j->al * j->al;
	float u[6][6], line[36][PK_NR];
	for (int64_t p = lo; p < hi; p++)
		for (int64_t ci = 0; ci < C; ci++) {
			for (int q = 0; q < PK_NR; q++) {
				int64_t o = p * PK_NR + q;
				if (o < O)
					wino_u(j, o, ci, u);
				for (int xi = 0; xi < ns; xi++)
					line[xi][q] = o < O ? u[xi / j->al][xi % j->al] : 0.0f;
			}
			for (int xi = 0; xi < ns; xi++)
				memcpy(j->u + (((int64_t)xi * np + p) * C + ci) * PK_NR, line[xi], sizeof line[xi]);
		}
}

/* F(4x4, 3x3)'s transforms, 8 channels at a time: m = 4 runs only on a
 * host with AVX2 and FMA (its products are pk_kernel's), and GCC left
 * these six-way loops scalar. B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4
 * -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]; A^T = [1 1 1 1 1
 * 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]. */
#define WINO4_BT(L, S, ADD, SUB, MUL, FMA, FNMA, K)                                                              \
	do {                                                                                                       \
		float *y0_ = y + (i), *y1_ = y0_ + ys, *y2_ = y1_ + ys, *y3_ = y2_ + ys, *y4_ = y3_ + ys,             \
		      *y5_ = y4_ + ys;                                                                             \
		__typeof__(L(x[0] + (i))) a = L(x[0] + (i)), b = L(x[1] + (i)), c = L(x[2] + (i)),                    \
					  d = L(x[3] + (i)), e = L(x[4] + (i)), f = L(x[5] + (i));                    \
		__typeof__(a) p = FNMA(K(4.0f), c, e), q = FNMA(K(4.0f), b, d), r = SUB(e, c),                       \
			      s_ = MUL(K(2.0f), SUB(d, b));                                                         \
		S(y0_, ADD(FNMA(K(5.0f), c, MUL(K(4.0f), a)), e));                                                  \
		S(y1_, ADD(p, q));                                                                                 \
		S(y2_, SUB(p, q));                                                                                 \
		S(y3_, ADD(r, s_));                                                                                \
		S(y4_, SUB(r, s_));                                                                                \
		S(y5_, ADD(FNMA(K(5.0f), d, MUL(K(4.0f), b)), f));                                                  \
	} while (0)
#define WINO4_AT(L, S, ADD, SUB, MUL, FMA, FNMA, K, B0)                                                          \
	do {                                                                                                       \
		__typeof__(L(x[0] + (i))) x1_ = L(x[1] + (i)), x2_ = L(x[2] + (i)), x3_ = L(x[3] + (i)),            \
					  x4_ = L(x[4] + (i)), b0 = (B0);                                           \
		__typeof__(x1_) s1 = ADD(x1_, x2_), d1 = SUB(x1_, x2_), s2 = ADD(x3_, x4_), d2 = SUB(x3_, x4_);       \
		S(y[0] + (i), ADD(ADD(L(x[0] + (i)), ADD(s1, s2)), b0));                                            \
		S(y[1] + (i), ADD(FMA(K(2.0f), d2, d1), b0));                                                      \
		S(y[2] + (i), ADD(FMA(K(4.0f), s2, s1), b0));                                                      \
		S(y[3] + (i), ADD(ADD(FMA(K(8.0f), d2, d1), L(x[5] + (i))), b0));                                   \
	} while (0)
#define SC_L(p) (*(p))
#define SC_S(p, v) (*(p) = (v))
#define SC_ADD(a, b) ((a) + (b))
#define SC_SUB(a, b) ((a) - (b))
#define SC_MUL(a, b) ((a) * (b))
#define SC_FMA(a, b, c) ((a) * (b) + (c))
#define SC_FNMA(a, b, c) ((c) - (a) * (b))
#define SC_K(v) (v)

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) static void wino4_bt(const float *const *x, float *y, int64_t ys, int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		WINO4_BT(_mm256_loadu_ps, _mm256_storeu_ps, _mm256_add_ps, _mm256_sub_ps, _mm256_mul_ps, _mm256_fmadd_ps,
			 _mm256_fnmadd_ps, _mm256_set1_ps);
	for (; i < n; i++)
		WINO4_BT(SC_L, SC_S, SC_ADD, SC_SUB, SC_MUL, SC_FMA, SC_FNMA, SC_K);
}

__attribute__((target("avx2,fma"))) static void wino4_at(const float *const *x, float *const *y, const float *bias,
							   int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		WINO4_AT(_mm256_loadu_ps, _mm256_storeu_ps, _mm256_add_ps, _mm256_sub_ps, _mm256_mul_ps, _mm256_fmadd_ps,
			 _mm256_fnmadd_ps, _mm256_set1_ps, bias ? _mm256_loadu_ps(bias + i) : _mm256_setzero_ps());
	for (; i < n; i++)
		WINO4_AT(SC_L, SC_S, SC_ADD, SC_SUB, SC_MUL, SC_FMA, SC_FNMA, SC_K, bias ? bias[i] : 0.0f);
}
#else
static void wino4_bt(const float *const *x, float *y, int64_t ys, int64_t n)
{
	(void)x, (void)y, (void)ys, (void)n; /* m = 4 needs pk_host, false here */
}
static void wino4_at(const float *const *x, float *const *y, const float *bias, int64_t n)
{
	(void)x, (void)y, (void)bias, (void)n;
}
#endif

/* One B^T step over n channels: y[i] = (B^T x)[i], x and y al vectors of
 * n channels (y's at stride ys floats), vectorized over the channels. */
static void wino_bt(int m, const float *const *x, float *restrict y, int64_t ys, int64_t n)
{
	if (m == 2) {
		const float *restrict x0 = x[0], *restrict x1 = x[1], *restrict x2 = x[2], *restrict x3 = x[3];
		float *restrict y0 = y, *restrict y1 = y + ys, *restrict y2 = y + 2 * ys, *restrict y3 = y + 3 * ys;
		for (int64_t i = 0; i < n; i++) {
			float a = x0[i], b = x1[i], c = x2[i], d = x3[i];
			y0[i] = a - c;
			y1[i] = b + c;
			y2[i] = c - b;
			y3[i] = b - d;
		}
		return;
	}
	wino4_bt(x, y, ys, n);
}

/* One A^T step over n channels: y[k] = (A^T x)[k] (+ bias), x al vectors,
 * y m pointers. m = 2: A^T = [1 1 1 0; 0 1 -1 -1]; m = 4: A^T = [1 1 1 1
 * 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]. */
static void wino_at(int m, const float *const *x, float *const *y, const float *restrict bias, int64_t n)
{
	if (m == 2) {
		const float *restrict x0 = x[0], *restrict x1 = x[1], *restrict x2 = x[2], *restrict x3 = x[3];
		float *restrict y0 = y[0], *restrict y1 = y[1];
		if (bias)
			for (int64_t i = 0; i < n; i++) {
				y0[i] = x0[i] + x1[i] + x2[i] + bias[i];
				y1[i] = x1[i] - x2[i] - x3[i] + bias[i];
			}
		else
			for (int64_t i = 0; i < n; i++) {
				y0[i] = x0[i] + x1[i] + x2[i];
				y1[i] = x1[i] - x2[i] - x3[i];
			}
		return;
	}
	wino4_at(x, y, bias, n);
}

static void wino_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	wjob *j = ctx;
	int64_t C = j->C, O = j->O, nt = j->nt, ocw = j->ocw;
	int m = j->m, al = j->al, ns = al * al;
	int64_t es = C > ocw ? C : ocw;
	float *V = j->c->scratch[tid];  /* [slots][nt][C] */
	float *Mb = V + ns * nt * C;    /* [slots][nt][ocw] */
	float *E = Mb + ns * nt * ocw;  /* [slots][es]: a tile's rows between the two steps */
	float *zero = E + ns * es;      /* C zeros */
	float *ap = zero + C;           /* pk_tile's packed rows */
	for (int64_t t = lo; t < hi; t++) {
		int64_t tc = t / j->nco, oc = t % j->nco;
		int64_t t0 = tc * nt, t1 = t0 + nt < j->T ? t0 + nt : j->T, n = t1 - t0;
		int64_t o0 = oc * ocw, o1 = o0 + ocw < O ? o0 + ocw : O, ow = o1 - o0;
		/* V = B^T d B: rows first (into E), then columns (into V) */
		for (int64_t ti = 0; ti < n; ti++) {
			int64_t tt = t0 + ti, tx = tt % j->tw, ty = tt / j->tw % j->th, nb = tt / (j->tw * j->th);
			const float *d[6];
			for (int r = 0; r < al; r++) {
				int64_t hi_ = ty * m - j->pt + r;
				for (int q = 0; q < al; q++) {
					int64_t wi = tx * m - j->pl + q;
					d[q] = hi_ < 0 || hi_ >= j->H || wi < 0 || wi >= j->W ? zero
											      : j->x + ((nb * j->H + hi_) * j->W + wi) * C;
				}
				wino_bt(m, d, E + r * al * es, es, C);
			}
			int64_t vs = nt * C;
			for (int b = 0; b < al; b++) {
				for (int r = 0; r < al; r++)
					d[r] = E + (r * al + b) * es;
				wino_bt(m, d, V + b * vs + ti * C, al * vs, C);
			}
		}
		if (j->panels) {
			int64_t np = (O + PK_NR - 1) / PK_NR, op = (ow + PK_NR - 1) / PK_NR;
			for (int xi = 0; xi < ns; xi++)
				pk_tile(V + xi * nt * C, C, n, C, j->u + ((int64_t)xi * np + o0 / PK_NR) * C * PK_NR, ow, 0, op,
					Mb + xi * nt * ow, ow, false, 0, ap);
		} else {
			for (int xi = 0; xi < ns; xi++)
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)ow, (blasint)C, 1.0f,
					    V + xi * nt * C, (blasint)C, j->u + ((int64_t)xi * O + o0) * C, (blasint)C, 0.0f,
					    Mb + xi * nt * ow, (blasint)ow);
		}
		/* Y = A^T M A (+ bias): rows into E (f[a][k]), then columns */
		for (int64_t ti = 0; ti < n; ti++) {
			int64_t tt = t0 + ti, tx = tt % j->tw, ty = tt / j->tw % j->th, nb = tt / (j->tw * j->th);
			int64_t y0 = ty * m, x0 = tx * m, ms = nt * ow;
			const float *x[6];
			float *y[4];
			for (int a = 0; a < al; a++) {
				for (int b = 0; b < al; b++)
					x[b] = Mb + ti * ow + (a * al + b) * ms;
				for (int k = 0; k < m; k++)
					y[k] = E + (a * m + k) * es;
				wino_at(m, x, y, NULL, ow);
			}
			for (int k = 0; k < m; k++) {
				for (int a = 0; a < al; a++)
					x[a] = E + (a * m + k) * es;
				for (int i = 0; i < m; i++) /* past the edge: a scratch row */
					y[i] = y0 + i < j->Ho && x0 + k < j->Wo
						       ? j->out + ((nb * j->Ho + y0 + i) * j->Wo + x0 + k) * O + o0
						       : E + (al * m + i) * es;
				wino_at(m, x, y, j->bias ? j->bias + o0 : NULL, ow);
			}
		}
	}
}

/* Whether the convolution in j takes the Winograd path: on maps of 7x7
 * and more with pk_kernel's products (ResNet-50's layer 4: 3.7 -> 3.0 ms
 * for its two 3x3s on 2 threads), of 10x10 and more on OpenBLAS's (7x7
 * measured faster by im2col there). */
static bool wino_ok(const rt_cpu *c, const cjob *j)
{
	pthread_once(&pk_once, pk_pick);
	int64_t least = pk_host && !c->no_pack ? 49 : 100;
	return !c->no_wino && j->KH == 3 && j->KW == 3 && j->sh == 1 && j->sw == 1 && j->dh == 1 && j->dw == 1 &&
	       j->C >= 16 && j->O >= 16 && j->Ho * j->Wo >= least;
}

static int run_wino(rt_cpu *c, const cl_step *s, const cjob *cj, sn_err *e)
{
	int n = c->pool->n;
	wjob j = {.c = c, .x = cj->x, .w = cj->w, .bias = cj->bias, .out = cj->out, .H = cj->H, .W = cj->W,
		  .C = cj->C, .O = cj->O, .Ho = cj->Ho, .Wo = cj->Wo, .pt = cj->pt, .pl = cj->pl};
	pthread_once(&pk_once, pk_pick);
	j.panels = pk_host && !c->no_pack;
	/* m = 4 on maps of 20x20 and more (ResNet-50's 56x56 and 28x28),
	 * where its blocks are little padding; SINTER_CPU_WINOGRAD=2 or 4
	 * asks for one (measurements) */
	j.m = !j.panels ? 2 : c->wino_m ? c->wino_m : j.Ho * j.Wo >= 400 ? 4 : 2;
	j.al = j.m + 2;
	int ns = j.al * j.al;
	j.th = (j.Ho + j.m - 1) / j.m, j.tw = (j.Wo + j.m - 1) / j.m;
	j.T = cj->N * j.th * j.tw;
	int64_t np = (j.O + PK_NR - 1) / PK_NR, ucols = j.panels ? np * PK_NR : j.O;
	size_t si = (size_t)(s - c->p->steps);
	bool fresh = !c->wino[si];
	if (fresh) { /* aligned for pk_kernel's loads; every float written below (zeros past O) */
		size_t ub = (size_t)(ns * ucols * j.C) * sizeof(float);
		if (!(c->wino[si] = weights_alloc(ub)))
			return sn_errf(e, SN_EINTERNAL, "out of memory (Winograd weights)");
	}
	j.u = c->wino[si];
	/* the weights transformed on the first run, on every run when they
	 * are not a weight of the plan (an input or computed) */
	if ((fresh || !is_weight(c, cj->n->in[1])) && j.panels)
		pool_for(c->pool, np, 1, wino_panel_task, &j);
	else if (fresh || !is_weight(c, cj->n->in[1]))
		pool_for(c->pool, j.O, 8, wino_weight_task, &j);
	/* The split: each task transforms its tiles' inputs and streams its
	 * channels' U. Where U fits a core's L2 (1 MiB), tiles: a share of
	 * them for two tasks per thread, in whole 6-row tiles of pk_kernel.
	 * Where it does not (ResNet-50's 14x14 layers: 4 MiB), every task
	 * streaming all of U from memory cost more than the products: all
	 * tiles a task can hold, and output channels split instead (each
	 * channel task transforms the tiles again, which costs less). Tiles
	 * per task at most what V holds within 1 MiB. */
	int64_t cap = 262144 / ns / j.C, share = (j.T + 2 * n - 1) / (2 * n);
	bool big = (double)ns * (double)ucols * (double)j.C * 4.0 > 1048576.0;
	j.nt = big ? j.T : share;
	if (j.nt > cap)
		j.nt = cap;
	if (j.panels && j.nt < j.T)
		j.nt = j.nt / PK_MR * PK_MR;
	if (j.nt < 6)
		j.nt = 6;
	int64_t tchunks = (j.T + j.nt - 1) / j.nt;
	j.nco = 1;
	j.ocw = j.O;
	int64_t want = big ? n : 2 * n; /* (2 n channel tasks measured 20 % slower on the 14x14 layers) */
	if (tchunks < want && j.O >= 64) {
		j.nco = (want + tchunks - 1) / tchunks;
		j.ocw = ((j.O + j.nco - 1) / j.nco + 15) / 16 * 16;
		j.nco = (j.O + j.ocw - 1) / j.ocw;
	}
	int64_t es = j.C > j.ocw ? j.C : j.ocw;
	size_t zoff = (size_t)(ns * j.nt * (j.C + j.ocw) + ns * es);
	size_t need = zoff + (size_t)j.C + (j.panels ? (size_t)((j.nt + PK_MR - 1) / PK_MR * PK_MR * j.C) : 0);
	if (need > c->scratch_n) {
		for (int i = 0; i < n; i++) {
			free(c->scratch[i]);
			if (!(c->scratch[i] = malloc(need * sizeof(float))))
				return sn_errf(e, SN_EINTERNAL, "out of memory (Winograd tiles)");
		}
		c->scratch_n = need;
	}
	for (int i = 0; i < n; i++) /* the zero row past the tile rows */
		memset(c->scratch[i] + zoff, 0, (size_t)j.C * sizeof(float));
	sn_log(SN_LOG_DEBUG, "cpu winograd: F(%dx%d, 3x3), %lld tiles, %lld per task, %lld channel tasks", j.m, j.m,
	       (long long)j.T, (long long)j.nt, (long long)j.nco);
	pool_for(c->pool, tchunks * j.nco, 1, wino_task, &j);
	if (cj->epi) {
		kjob k = {.fn = cj->epi, .bufs = cj->ebufs};
		pool_for(c->pool, cj->M, 64, kern_task, &k);
	}
	return SN_OK;
}

static int run_conv(rt_cpu *c, const cl_step *s, void **ebufs, sn_err *e)
{
	const ir_graph *g = c->p->g;
	const ir_node *n = &g->nodes[s->node];
	const ir_shape *xs = &g->nodes[n->in[0]].shape, *ws = &g->nodes[n->in[1]].shape;
	const ir_attrs *a = n->attrs;
	cjob j = {.c = c, .s = s, .n = n, .x = addr_of(c, n->in[0]), .w = addr_of(c, n->in[1]),
		  .bias = n->nin > 2 ? addr_of(c, n->in[2]) : NULL, .out = addr_of(c, s->out)};
	j.N = xs->d[0], j.H = xs->d[1], j.W = xs->d[2], j.C = xs->d[3];
	j.O = ws->d[0], j.KH = ws->d[1], j.KW = ws->d[2];
	j.Ho = n->shape.d[1], j.Wo = n->shape.d[2];
	j.sh = a->stride.n > 0 ? a->stride.v[0] : 1, j.sw = a->stride.n > 1 ? a->stride.v[1] : 1;
	j.pt = a->pad.n > 0 ? a->pad.v[0] : 0, j.pl = a->pad.n > 1 ? a->pad.v[1] : 0;
	j.dh = a->dilation.n > 0 ? a->dilation.v[0] : 1, j.dw = a->dilation.n > 1 ? a->dilation.v[1] : 1;
	j.K = j.KH * j.KW * j.C;
	j.M = j.N * j.Ho * j.Wo;
	j.direct = j.KH == 1 && j.KW == 1 && j.sh == 1 && j.sw == 1 && j.pt == 0 && j.pl == 0 && j.Ho == j.H && j.Wo == j.W;
	j.epi = s->fn >= 0 ? c->fns[s->fn] : NULL;
	j.ebufs = ebufs;
	if (s->fn >= 0 && s->out != s->args[0])
		return sn_errf(e, SN_EINTERNAL, "cpu: convolution epilogue writes another buffer");
	sn_log(SN_LOG_DEBUG, "cpu conv: %s pixels=%lld k=%lld out=%lld (%lldx%lld stride %lld)",
	       wino_ok(c, &j) ? "winograd" : j.direct ? "direct" : "im2col", (long long)j.M, (long long)j.K,
	       (long long)j.O, (long long)j.KH, (long long)j.KW, (long long)j.sh);
	if (wino_ok(c, &j))
		return run_wino(c, s, &j, e);
	/* tasks: pixel tiles by output-channel tiles, two per thread at least.
	 * Each task's sgemm packs its channels' weights (ctile x K) and its
	 * pixels' rows (tile x K, copied by im2col first where not direct),
	 * so of the splits that make enough tasks, the one packing least:
	 * K (ntiles O + nct M) (twice the rows' part with im2col). Pixel
	 * tiles' im2col rows within 1 MiB (a core's L2), 16 rows at least. */
	int n2 = 2 * c->pool->n;
	int64_t cap = (int64_t)(262144 / (j.K ? j.K : 1));
	if (cap < 16)
		cap = 16;
	double best = -1;
	int64_t ntiles = 1;
	for (int64_t nct = 1; nct <= n2; nct++) {
		int64_t ctile = ((j.O + nct - 1) / nct + 15) / 16 * 16;
		if (nct > 1 && (ctile >= j.O || (j.O + ctile - 1) / ctile != nct))
			continue; /* not a split of its own */
		int64_t nt = (n2 + nct - 1) / nct;
		if (!j.direct && (j.M + nt - 1) / nt > cap)
			nt = (j.M + cap - 1) / cap;
		int64_t tile = (j.M + nt - 1) / nt;
		if (tile < 16)
			tile = 16;
		nt = (j.M + tile - 1) / tile;
		double cost = (double)nt * (double)j.O + (j.direct ? 1.0 : 2.0) * (double)nct * (double)j.M;
		if (best < 0 || cost < best) {
			best = cost;
			j.nct = nct;
			j.ctile = nct == 1 ? j.O : ctile;
			j.tile = tile;
			ntiles = nt;
		}
	}
	/* the weights packed once (first run) for pk_kernel when they are a
	 * weight of the plan: output-channel tiles are whole panels */
	size_t si = (size_t)(s - c->p->steps);
	pthread_once(&pk_once, pk_pick);
	if (pk_host && !c->no_pack && j.M <= PK_MAX_ROWS && (j.nct == 1 || j.ctile % PK_NR == 0) &&
	    is_weight(c, n->in[1])) {
		int64_t np = (j.O + PK_NR - 1) / PK_NR;
		if (!c->wino[si]) {
			if (!(c->wino[si] = weights_alloc((size_t)(np * j.K * PK_NR) * sizeof(float))))
				return sn_errf(e, SN_EINTERNAL, "out of memory (packed weights)");
			pkjob pj = {.b = j.w, .bp = c->wino[si], .k = j.K, .n = j.O, .trans = true};
			pool_for(c->pool, np, 1, pk_pack_task, &pj);
		}
		j.wp = c->wino[si];
	}
	j.apoff = j.direct ? 0 : (size_t)j.tile * (size_t)j.K;
	size_t need = j.apoff + (j.wp ? (size_t)((j.tile + PK_MR - 1) / PK_MR * PK_MR) * (size_t)j.K : 0);
	if (need > c->scratch_n) {
		for (int i = 0; i < c->pool->n; i++) {
			free(c->scratch[i]);
			if (!(c->scratch[i] = malloc(need * sizeof(float))))
				return sn_errf(e, SN_EINTERNAL, "out of memory (im2col tiles)");
		}
		c->scratch_n = need;
	}
	pool_for(c->pool, ntiles * j.nct, 1, conv_task, &j);
	if (j.epi && j.nct > 1) {
		kjob k = {.fn = j.epi, .bufs = ebufs};
		pool_for(c->pool, j.M, 64, kern_task, &k);
	}
	return SN_OK;
}

/* ---- attention: per (batch, head) scores = q k^T (sgemm), the causal
 * mask or a mask tensor (bool: false masks out; f32: added), softmax,
 * then p v (sgemm). A row with every score masked is NaN, as the
 * reference's (and PyTorch's). ---- */

typedef struct ajob {
	rt_cpu *c;
	const float *q, *k, *v;
	float *out;
	int64_t B, H, Hk, L, S, D, Dv;
	float scale;
	bool causal;
	const void *mask; /* NULL: none */
	bool mbool;
	int64_t msb, msh, msl, mss; /* the mask's strides over (batch, head, L, S); 0 where broadcast */
} ajob;

static void attn_rows(const ajob *j, int64_t b, int64_t h, const float *Q, const float *K, const float *V, float *O,
		      float *sc, int64_t i0, int64_t i1);

static void attn_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	ajob *j = ctx;
	float *sc = j->c->scratch[tid];
	for (int64_t t = lo; t < hi; t++) {
		int64_t b = t / j->H, h = t % j->H, hk = h / (j->H / j->Hk);
		const float *Q = j->q + (b * j->H + h) * j->L * j->D;
		const float *K = j->k + (b * j->Hk + hk) * j->S * j->D;
		const float *V = j->v + (b * j->Hk + hk) * j->S * j->Dv;
		float *O = j->out + (b * j->H + h) * j->L * j->Dv;
		/* causal: blocks of 32 rows, each with the keys its last row
		 * sees (GPT-2's 128 tokens: 62 % of the scores and products) */
		int64_t rb = j->causal ? 32 : j->L;
		for (int64_t i0 = 0; i0 < j->L; i0 += rb)
			attn_rows(j, b, h, Q, K, V, O, sc, i0, i0 + rb < j->L ? i0 + rb : j->L);
	}
}

/* Rows [i0, i1) of one (batch, head): the scores (sc, row stride S) of
 * the keys they see, softmax, times V into O. */
static void attn_rows(const ajob *j, int64_t b, int64_t h, const float *Q, const float *K, const float *V, float *O,
		      float *sc, int64_t i0, int64_t i1)
{
	int64_t ns = j->causal && i1 < j->S ? i1 : j->S;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)(i1 - i0), (blasint)ns, (blasint)j->D, j->scale,
		    Q + i0 * j->D, (blasint)j->D, K, (blasint)j->D, 0.0f, sc + i0 * j->S, (blasint)j->S);
	for (int64_t i = i0; i < i1; i++) {
		float *r = sc + i * j->S;
		int64_t valid = j->causal ? (i + 1 < j->S ? i + 1 : j->S) : j->S;
		if (j->mask) {
			int64_t mo = b * j->msb + h * j->msh + i * j->msl, ms = j->mss;
			if (j->mbool) {
				const uint8_t *m = (const uint8_t *)j->mask + mo;
				for (int64_t s = 0; s < ns; s++)
					r[s] = m[s * ms] ? r[s] : -INFINITY;
			} else {
				const float *m = (const float *)j->mask + mo;
				for (int64_t s = 0; s < ns; s++)
					r[s] += m[s * ms];
			}
		}
		float mx = -INFINITY;
		for (int64_t s = 0; s < valid; s++)
			mx = r[s] > mx || r[s] != r[s] ? r[s] : mx;
		/* every score masked: mx is -inf and e^(-inf - -inf) NaN */
		float sum = 0;
		for (int64_t s = 0; s < valid; s++) {
			r[s] = expf(r[s] - mx);
			sum += r[s];
		}
		float inv = 1.0f / sum;
		for (int64_t s = 0; s < valid; s++)
			r[s] *= inv;
		for (int64_t s = valid; s < ns; s++)
			r[s] = 0;
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)(i1 - i0), (blasint)j->Dv, (blasint)ns, 1.0f,
		    sc + i0 * j->S, (blasint)j->S, V, (blasint)j->Dv, 0.0f, O + i0 * j->Dv, (blasint)j->Dv);
}

static int run_attn(rt_cpu *c, const cl_step *s, sn_err *e)
{
	const ir_graph *g = c->p->g;
	const ir_node *n = &g->nodes[s->node];
	const ir_shape *qs = &g->nodes[n->in[0]].shape, *ks = &g->nodes[n->in[1]].shape, *vs = &g->nodes[n->in[2]].shape;
	ajob j = {.c = c, .q = addr_of(c, n->in[0]), .k = addr_of(c, n->in[1]), .v = addr_of(c, n->in[2]),
		  .out = addr_of(c, s->out)};
	j.B = qs->d[0], j.H = qs->d[1], j.Hk = ks->d[1], j.L = qs->d[2], j.S = ks->d[2], j.D = qs->d[3], j.Dv = vs->d[3];
	j.scale = (float)(n->attrs->scale != 0 ? n->attrs->scale : 1 / sqrt((double)j.D));
	j.causal = n->attrs->causal;
	if (n->nin > 3) {
		/* the mask's dims line up with (B, H, L, S) from the right */
		const ir_node *mn = &g->nodes[n->in[3]];
		const ir_shape *m = &mn->shape;
		int64_t *st[4] = {&j.msb, &j.msh, &j.msl, &j.mss}, full[4] = {j.B, j.H, j.L, j.S}, stride = 1;
		for (int d = 3; d >= 0; d--) {
			int md = d - (4 - m->rank);
			int64_t ext = md >= 0 ? m->d[md] : 1;
			if (ext != 1 && ext != full[d])
				return sn_errf(e, SN_EINTERNAL, "cpu: attention mask dim %lld does not broadcast to %lld",
					       (long long)ext, (long long)full[d]);
			*st[d] = ext == 1 ? 0 : stride;
			stride *= ext;
		}
		j.mask = addr_of(c, n->in[3]);
		j.mbool = mn->dtype == IR_BOOL;
	}
	size_t need = (size_t)j.L * (size_t)j.S;
	if (need > c->scratch_n) {
		for (int i = 0; i < c->pool->n; i++) {
			free(c->scratch[i]);
			if (!(c->scratch[i] = malloc((need ? need : 1) * sizeof(float))))
				return sn_errf(e, SN_EINTERNAL, "out of memory (attention scores)");
		}
		c->scratch_n = need;
	}
	pool_for(c->pool, j.B * j.H, 1, attn_task, &j);
	return SN_OK;
}

/* ---- pooling, NHWC f32: max over the window (padding never wins), and
 * the mean over H and W ---- */

typedef struct pjob {
	const ir_node *n;
	const ir_shape *xs;
	const float *x;
	float *out;
} pjob;

static void pool_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	pjob *j = ctx;
	const ir_attrs *a = j->n->attrs;
	int64_t H = j->xs->d[1], W = j->xs->d[2], C = j->xs->d[3];
	int64_t Ho = j->n->shape.d[1], Wo = j->n->shape.d[2];
	if (j->n->op == IR_OP_global_avg_pool) {
		for (int64_t b = lo; b < hi; b++) {
			float *o = j->out + b * C;
			for (int64_t c = 0; c < C; c++)
				o[c] = 0;
			for (int64_t p = 0; p < H * W; p++) {
				const float *x = j->x + (b * H * W + p) * C;
				for (int64_t c = 0; c < C; c++)
					o[c] += x[c];
			}
			for (int64_t c = 0; c < C; c++)
				o[c] /= (float)(H * W);
		}
		return;
	}
	int64_t kh = a->kernel.v[0], kw = a->kernel.n > 1 ? a->kernel.v[1] : kh;
	int64_t sh = a->stride.n > 0 ? a->stride.v[0] : kh, sw = a->stride.n > 1 ? a->stride.v[1] : kw;
	int64_t pt = a->pad.n > 0 ? a->pad.v[0] : 0, pl = a->pad.n > 1 ? a->pad.v[1] : 0;
	int64_t dh = a->dilation.n > 0 ? a->dilation.v[0] : 1, dw = a->dilation.n > 1 ? a->dilation.v[1] : 1;
	for (int64_t r = lo; r < hi; r++) { /* r: (n, ho) */
		int64_t b = r / Ho, ho = r % Ho;
		for (int64_t wo = 0; wo < Wo; wo++) {
			float *o = j->out + ((b * Ho + ho) * Wo + wo) * C;
			for (int64_t c = 0; c < C; c++)
				o[c] = -INFINITY;
			for (int64_t p = 0; p < kh; p++) {
				int64_t hi_ = ho * sh - pt + p * dh;
				if (hi_ < 0 || hi_ >= H)
					continue;
				for (int64_t q = 0; q < kw; q++) {
					int64_t wi = wo * sw - pl + q * dw;
					if (wi < 0 || wi >= W)
						continue;
					const float *x = j->x + ((b * H + hi_) * W + wi) * C;
					for (int64_t c = 0; c < C; c++)
						o[c] = x[c] > o[c] || x[c] != x[c] ? x[c] : o[c];
				}
			}
		}
	}
}

static void run_pool(rt_cpu *c, const cl_step *s)
{
	const ir_graph *g = c->p->g;
	const ir_node *n = &g->nodes[s->node];
	pjob j = {.n = n, .xs = &g->nodes[n->in[0]].shape, .x = addr_of(c, n->in[0]), .out = addr_of(c, s->out)};
	int64_t rows = n->op == IR_OP_global_avg_pool ? j.xs->d[0] : n->shape.d[0] * n->shape.d[1];
	pool_for(c->pool, rows, 1, pool_task, &j);
}

/* ---- fallback: the reference interpreter over a group's members ---- */

/* ---- gather: rows of the data copied by index, over the pool ---- */

typedef struct gjob2 {
	const char *x;
	char *out;
	const void *ix; /* NULL: 0..ni-1 */
	bool i32;
	int64_t len, ni;
	size_t chunk; /* bytes per row */
} gjob2;

static int64_t gather_index(const gjob2 *j, int64_t t)
{
	int64_t v = !j->ix ? t : j->i32 ? ((const int32_t *)j->ix)[t] : ((const int64_t *)j->ix)[t];
	return v < 0 ? v + j->len : v;
}

static void gather_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	gjob2 *j = ctx;
	for (int64_t r = lo; r < hi; r++) { /* r = o * ni + t */
		int64_t o = r / j->ni, t = r % j->ni;
		memcpy(j->out + (size_t)r * j->chunk, j->x + (size_t)(o * j->len + gather_index(j, t)) * j->chunk,
		       j->chunk);
	}
}

static int run_gather(rt_cpu *c, const cl_step *s, sn_err *e)
{
	const ir_graph *g = c->p->g;
	const ir_node *n = &g->nodes[s->node];
	const ir_shape *xs = &g->nodes[n->in[0]].shape;
	const ir_node *in = &g->nodes[n->in[1]];
	int a = ir_axis(n->attrs->axis, xs->rank);
	if (a < 0)
		return sn_errf(e, SN_EINPUT, "gather: axis %lld out of range", (long long)n->attrs->axis);
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < a; d++)
		outer *= xs->d[d];
	for (int d = a + 1; d < xs->rank; d++)
		inner *= xs->d[d];
	gjob2 j = {.x = addr_of(c, s->b), .out = addr_of(c, s->out), .ix = s->a == IR_NONE ? NULL : addr_of(c, s->a),
		   .i32 = in->dtype == IR_I32, .len = xs->d[a], .ni = ir_numel(&in->shape),
		   .chunk = (size_t)inner * ir_dtype_size(n->dtype)};
	for (int64_t t = 0; t < j.ni; t++) { /* every index checked first, as the reference does */
		int64_t v = !j.ix ? t : j.i32 ? ((const int32_t *)j.ix)[t] : ((const int64_t *)j.ix)[t];
		if (v < -j.len || v >= j.len)
			return sn_errf(e, SN_EINPUT, "gather: index %lld out of range [%lld, %lld)", (long long)v,
				       (long long)-j.len, (long long)j.len);
	}
	if (j.chunk && outer > 0 && j.ni > 0)
		pool_for(c->pool, outer * j.ni, (int64_t)(65536 / j.chunk) + 1, gather_task, &j);
	return SN_OK;
}

/* ---- bf16 storage (--precision bf16): values are stored as bf16 and
 * computed in f32. Products convert their operands by tiles
 * (gemm_bf16_task); convolutions, attention and pooling run their f32 code
 * on f32 copies of their bf16 operands, staged for the step and rounded
 * back (run_staged). Debian's OpenBLAS declares cblas_sbgemm but is not
 * built with it (BUILD_BFLOAT16), and this host has no AVX512-BF16 to make
 * it pay: the arithmetic is sgemm's. Rounding: to nearest, ties to even,
 * NaN kept quiet, as cl_emit.c's stores and ir/wstore.c. ---- */

static inline float bf16_f(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static inline uint16_t f_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40u);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

typedef struct vjob {
	const void *src;
	void *dst;
	bool widen; /* bf16 -> f32, else f32 -> bf16 */
} vjob;

static void cvt_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	const vjob *j = ctx;
	if (j->widen) {
		const uint16_t *x = j->src;
		float *y = j->dst;
		for (int64_t i = lo; i < hi; i++)
			y[i] = bf16_f(x[i]);
	} else {
		const float *x = j->src;
		uint16_t *y = j->dst;
		for (int64_t i = lo; i < hi; i++)
			y[i] = f_bf16(x[i]);
	}
}

static void convert(rt_cpu *c, const void *src, void *dst, int64_t n, bool widen)
{
	vjob j = {.src = src, .dst = dst, .widen = widen};
	if (n > 0)
		pool_for(c->pool, n, 16384, cvt_task, &j);
}

typedef struct bjob {
	const cl_step *s;
	const uint16_t *a, *b, *bias, *res;
	uint16_t *out;
	float **scratch;
	int64_t rb, nb, nrb, ncb; /* rows and columns per task, tasks along each */
} bjob;

/* One (batch, row block, column block) of a bf16 product: the A rows and
 * the B columns widened into the thread's scratch, sgemm (sgemv for one
 * row), then bias, residual and activation in f32 and one rounding. */
static void gemm_bf16_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	const bjob *j = ctx;
	const cl_step *s = j->s;
	float *A = j->scratch[tid], *B = A + j->rb * s->k, *C = B + j->nb * s->k;
	for (int64_t t = lo; t < hi; t++) {
		int64_t cb = t % j->ncb, rbk = t / j->ncb % j->nrb, b = t / (j->ncb * j->nrb);
		int64_t r0 = rbk * j->rb, r1 = r0 + j->rb < s->m ? r0 + j->rb : s->m;
		int64_t c0 = cb * j->nb, c1 = c0 + j->nb < s->n ? c0 + j->nb : s->n;
		int64_t mr = r1 - r0, nc = c1 - c0;
		const uint16_t *Ab = j->a + b * s->sa + r0 * s->k, *Bb = j->b + b * s->sb;
		for (int64_t i = 0; i < mr * s->k; i++)
			A[i] = bf16_f(Ab[i]);
		if (s->trans_b) { /* B is n x k: columns c0..c1 are rows, one run */
			const uint16_t *src = Bb + c0 * s->k;
			for (int64_t i = 0; i < nc * s->k; i++)
				B[i] = bf16_f(src[i]);
		} else { /* B is k x n: each of its rows gives nc floats */
			for (int64_t kk = 0; kk < s->k; kk++)
				for (int64_t q = 0; q < nc; q++)
					B[kk * nc + q] = bf16_f(Bb[kk * s->n + c0 + q]);
		}
		if (mr == 1)
			cblas_sgemv(CblasRowMajor, s->trans_b ? CblasNoTrans : CblasTrans, (blasint)(s->trans_b ? nc : s->k),
				    (blasint)(s->trans_b ? s->k : nc), 1.0f, B, (blasint)(s->trans_b ? s->k : nc), A, 1, 0.0f,
				    C, 1);
		else
			cblas_sgemm(CblasRowMajor, CblasNoTrans, s->trans_b ? CblasTrans : CblasNoTrans, (blasint)mr,
				    (blasint)nc, (blasint)s->k, 1.0f, A, (blasint)s->k, B, (blasint)(s->trans_b ? s->k : nc),
				    0.0f, C, (blasint)nc);
		uint16_t *O = j->out + b * s->sc;
		const uint16_t *R = j->res ? j->res + b * s->sc : NULL;
		for (int64_t i = 0; i < mr; i++)
			for (int64_t q = 0; q < nc; q++) {
				float v = C[i * nc + q];
				if (j->bias)
					v += bf16_f(j->bias[c0 + q]);
				if (R)
					v += bf16_f(R[(r0 + i) * s->n + c0 + q]);
				if (s->act == 1)
					v = v < 0.0f ? 0.0f : v;
				else if (s->act == 2)
					v = gelu_tanh(v);
				O[(r0 + i) * s->n + c0 + q] = f_bf16(v);
			}
	}
}

static int run_gemm_bf16(rt_cpu *c, const cl_step *s, sn_err *e)
{
	bjob j = {.s = s, .a = addr_of(c, s->a), .b = addr_of(c, s->b), .bias = addr_of(c, s->bias),
		  .res = addr_of(c, s->c), .out = addr_of(c, s->out), .scratch = c->scratch};
	/* the widened blocks within about 2 MiB (A) and 1 MiB (B) */
	int64_t k = s->k ? s->k : 1;
	j.rb = 524288 / k;
	j.rb = j.rb < 16 ? 16 : j.rb > 256 ? 256 : j.rb;
	j.rb = j.rb > s->m ? s->m : j.rb;
	j.nb = 262144 / k / 16 * 16;
	j.nb = j.nb < 16 ? 16 : j.nb > 128 ? 128 : j.nb;
	j.nb = j.nb > s->n ? s->n : j.nb;
	if (j.rb < 1 || j.nb < 1)
		return SN_OK;
	j.nrb = (s->m + j.rb - 1) / j.rb;
	j.ncb = (s->n + j.nb - 1) / j.nb;
	size_t need = (size_t)((j.rb + j.nb) * k + j.rb * j.nb);
	if (need > c->scratch_n) {
		for (int i = 0; i < c->pool->n; i++) {
			free(c->scratch[i]);
			if (!(c->scratch[i] = malloc(need * sizeof(float))))
				return sn_errf(e, SN_EINTERNAL, "out of memory (bf16 product tiles)");
		}
		c->scratch_n = need;
	}
	pool_for(c->pool, s->batch * j.nrb * j.ncb, 1, gemm_bf16_task, &j);
	return SN_OK;
}

/* A convolution, attention or pool step over bf16 values: its bf16
 * operands widened into the stage, c->addr pointed there, the f32 code
 * run (a convolution without Winograd, whose transformed weights it would
 * keep in f32, and without its epilogue), the output rounded into its
 * buffer, then the epilogue over the whole output (it reads and writes
 * bf16). */
static int run_staged(rt_cpu *c, const cl_step *s, void **bufs, sn_err *e)
{
	const ir_graph *g = c->p->g;
	const ir_node *n = &g->nodes[s->node];
	ir_ref nodes[IR_MAX_LIST + 1];
	uint32_t nn = 0;
	nodes[nn++] = s->out;
	for (uint32_t k = 0; k < n->nin && nn < SN_COUNT(nodes); k++) {
		bool dup = false;
		for (uint32_t q = 0; q < nn; q++)
			dup |= nodes[q] == n->in[k];
		if (!dup && g->nodes[n->in[k]].dtype == IR_BF16)
			nodes[nn++] = n->in[k];
	}
	size_t need = 0;
	for (uint32_t q = 0; q < nn; q++)
		need += ((size_t)ir_numel(&g->nodes[nodes[q]].shape) + 15) / 16 * 16;
	if (need > c->stage_n) {
		free(c->stage);
		c->stage_n = 0;
		if (!(c->stage = malloc(need * sizeof(float))))
			return sn_errf(e, SN_EINTERNAL, "out of memory (bf16 staging, %zu floats)", need);
		c->stage_n = need;
	}
	void *saved[IR_MAX_LIST + 1];
	float *at = c->stage;
	for (uint32_t q = 0; q < nn; q++) {
		int64_t cnt = ir_numel(&g->nodes[nodes[q]].shape);
		saved[q] = c->addr[nodes[q]];
		if (q > 0)
			convert(c, saved[q], at, cnt, true);
		c->addr[nodes[q]] = at;
		at += (cnt + 15) / 16 * 16;
	}
	cl_step t = *s;
	t.fn = -1;
	int rc = SN_OK;
	bool nw = c->no_wino, np = c->no_pack;
	c->no_wino = true;
	c->no_pack = true; /* nor packed f32 weights */
	switch (s->kind) {
	case CL_CONV: rc = run_conv(c, &t, bufs, e); break;
	case CL_ATTN: rc = run_attn(c, &t, e); break;
	case CL_POOL: run_pool(c, &t); break;
	default: rc = sn_errf(e, SN_EINTERNAL, "cpu: step kind %d has no bf16 path", (int)s->kind); break;
	}
	c->no_wino = nw;
	c->no_pack = np;
	for (uint32_t q = 0; q < nn; q++)
		c->addr[nodes[q]] = saved[q];
	if (rc)
		return rc;
	convert(c, c->stage, c->addr[s->out], ir_numel(&g->nodes[s->out].shape), false);
	if (s->fn >= 0) {
		kjob k = {.fn = c->fns[s->fn], .bufs = bufs};
		pool_for(c->pool, s->rows, 64, kern_task, &k);
	}
	return SN_OK;
}

static int run_ref(rt_cpu *c, const cl_step *s, sn_err *e)
{
	const cl_plan *p = c->p;
	const ir_graph *g = p->g;
	const fu_plan *fp = &p->fp;
	const fu_group *gr = &fp->groups[s->group];
	uint32_t n = g->nnodes;
	/* the nodes to evaluate: members and the free nodes they reach */
	uint8_t *need = calloc(n ? n : 1, 1);
	ir_tensor *tmp = calloc(n ? n : 1, sizeof *tmp);
	ir_ref *stack = malloc((n ? n : 1) * sizeof *stack);
	int rc = SN_OK;
	if (!need || !tmp || !stack) {
		rc = sn_errf(e, SN_EINTERNAL, "out of memory");
		goto done;
	}
	uint32_t ns = 0;
	for (uint32_t k = 0; k < gr->n; k++) {
		need[fp->members[gr->first + k]] = 1;
		stack[ns++] = fp->members[gr->first + k];
	}
	while (ns) {
		ir_ref r = stack[--ns];
		for (uint32_t k = 0; k < g->nodes[r].nin; k++) {
			ir_ref q = g->nodes[r].in[k];
			if (!need[q] && !fp->stored[q]) {
				need[q] = 1;
				stack[ns++] = q;
			}
		}
	}
	for (ir_ref r = 0; r < n && !rc; r++) {
		if (!need[r])
			continue;
		const ir_node *nd = &g->nodes[r];
		ir_tensor ops[IR_MAX_LIST];
		ir_tensor *opv = nd->nin <= IR_MAX_LIST ? ops : malloc(nd->nin * sizeof *opv);
		if (!opv) {
			rc = sn_errf(e, SN_EINTERNAL, "out of memory");
			break;
		}
		for (uint32_t k = 0; k < nd->nin; k++) {
			ir_ref q = nd->in[k];
			const ir_node *qn = &g->nodes[q];
			if (need[q]) {
				opv[k] = tmp[q];
			} else {
				opv[k] = (ir_tensor){.dtype = qn->dtype, .shape = qn->shape, .data = c->addr[q],
						     .nbytes = (size_t)ir_numel(&qn->shape) * ir_dtype_size(qn->dtype)};
			}
		}
		rc = ref_eval_node(g, nd, opv, &tmp[r], e);
		if (opv != ops)
			free(opv);
	}
	if (!rc) {
		const ir_node *rn = &g->nodes[gr->root];
		memcpy(c->addr[gr->root], tmp[gr->root].data, (size_t)ir_numel(&rn->shape) * ir_dtype_size(rn->dtype));
	}
done:
	for (uint32_t r = 0; tmp && r < n; r++)
		free(tmp[r].data);
	free(tmp);
	free(need);
	free(stack);
	return rc;
}

int rt_cpu_run(rt_cpu *c, const void *const *inputs, void *const *outputs, bool poison, sn_err *e)
{
	const cl_plan *p = c->p;
	const ir_graph *g = p->g;
	if (poison && c->arena) {
		float *f = c->arena;
		for (uint64_t i = 0; i < p->arena_bytes / 4; i++)
			f[i] = NAN;
	}
	for (ir_ref r = 0; r < g->nnodes; r++) {
		const cl_val *v = &p->vals[r];
		switch (v->where) {
		case CL_ARENA: c->addr[r] = (char *)c->arena + v->offset; break;
		case CL_WEIGHT: c->addr[r] = (char *)p->weights + v->offset; break;
		case CL_INPUT: c->addr[r] = (void *)inputs[v->index]; break;
		case CL_VIEW: c->addr[r] = c->addr[v->index]; break;
		default: c->addr[r] = NULL; break;
		}
	}
	void *bufs[CL_MAX_ARGS];
	bool timed = sn_log_level() >= SN_LOG_DEBUG;
	for (uint32_t i = 0; i < p->nsteps; i++) {
		const cl_step *s = &p->steps[i];
		double t0 = timed ? sn_now() : 0;
		for (uint32_t k = 0; k < s->nargs; k++)
			bufs[k] = c->addr[s->args[k]];
		int rc = SN_OK;
		switch (s->kind) {
		case CL_SKIP: break;
		case CL_KERNEL: {
			kjob j = {.fn = c->fns[s->fn], .bufs = bufs};
			int64_t min = s->inner > 0 ? (16384 + s->inner - 1) / s->inner : 1;
			pool_for(c->pool, s->rows, min, kern_task, &j);
			break;
		}
		case CL_GEMM:
			pthread_once(&pk_once, pk_pick);
			pthread_once(&act_once, act_pick);
			if (g->nodes[s->out].dtype == IR_BF16)
				rc = run_gemm_bf16(c, s, e);
			else if (pk_ok(c, s))
				rc = run_pgemm(c, s, e);
			else
				run_gemm(c, s);
			break;
		case CL_CONV:
		case CL_ATTN:
		case CL_POOL:
			if (g->nodes[s->out].dtype == IR_BF16)
				rc = run_staged(c, s, bufs, e);
			else if (s->kind == CL_CONV)
				rc = run_conv(c, s, bufs, e);
			else if (s->kind == CL_ATTN)
				rc = run_attn(c, s, e);
			else
				run_pool(c, s);
			break;
		case CL_GATHER: rc = run_gather(c, s, e); break;
		case CL_REF: rc = run_ref(c, s, e); break;
		}
		if (rc)
			return rc;
		if (timed && s->kind != CL_SKIP)
			sn_log(SN_LOG_DEBUG, "cpu step %u: %s %s %.3f ms", i,
			       (const char *[]){"kernel", "gemm", "conv", "attention", "ref", "view", "pool", "gather"}[s->kind], s->op,
			       (sn_now() - t0) * 1e3);
	}
	for (uint32_t k = 0; k < g->noutputs; k++) {
		const ir_node *on = &g->nodes[g->outputs[k]];
		size_t nb = (size_t)ir_numel(&on->shape) * ir_dtype_size(on->dtype);
		if (nb)
			memcpy(outputs[k], c->addr[g->outputs[k]], nb);
	}
	return SN_OK;
}
