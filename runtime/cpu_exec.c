/* cpu_exec.c: the CPU runtime (cpu_exec.h): LLVM optimization and ORC
 * LLJIT, object cache, and the executor (with the reference-interpreter
 * fallback and the bf16 staging). The steps' own code is in cpu_gemm.c,
 * cpu_conv.c and cpu_ops.c, the thread pool in cpu_pool.c (cpu_int.h). */
#include "runtime/cpu_int.h"

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

#include <math.h>
#include <pthread.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the loaded plan ---- */

int cpu_scratch(rt_cpu *c, size_t need, const char *what, sn_err *e)
{
	if (need <= c->scratch_n)
		return SN_OK;
	for (int i = 0; i < c->pool->n; i++) {
		free(c->scratch[i]);
		if (!(c->scratch[i] = malloc((need ? need : 1) * sizeof(float)))) {
			c->scratch_n = 0; /* the threads before i have theirs: all made again */
			return sn_errf(e, SN_EINTERNAL, "out of memory (%s)", what);
		}
	}
	c->scratch_n = need;
	return SN_OK;
}

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
	cpu_pool_free(c->pool);
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

static pthread_once_t llvm_once = PTHREAD_ONCE_INIT;
/* LLVM's statics that it makes lazily on first use (the codegen passes'
 * timer groups, registries) made here, once, on one thread: a module of
 * one empty function through the same -O3 and code generation as a plan's
 * modules (under warm_once, before object_of's first -O3). The plan's
 * modules compile in parallel (rt_cpu_load), and their first uses are
 * ordered after this by pthread_once, which
 * ThreadSanitizer sees (libLLVM's own atomics it cannot: two modules
 * making a TimerGroup at once were reported as a race). A failure here
 * only leaves that order to LLVM; the real compile reports its own. */
static void llvm_warm(void)
{
	char *triple = LLVMGetDefaultTargetTriple();
	char *cpu = LLVMGetHostCPUName();
	char *feat = LLVMGetHostCPUFeatures();
	LLVMTargetRef target;
	char *msg = NULL;
	if (!LLVMGetTargetFromTriple(triple, &target, &msg)) {
		LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, cpu, feat, LLVMCodeGenLevelAggressive,
								  LLVMRelocPIC, LLVMCodeModelSmall);
		LLVMContextRef ctx = LLVMContextCreate();
		LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("sinter-warm", ctx);
		LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), NULL, 0, 0);
		LLVMValueRef f = LLVMAddFunction(mod, "sinter_warm", fty);
		LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
		LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, f, "entry"));
		LLVMBuildRetVoid(b);
		LLVMDisposeBuilder(b);
		if (tm) {
			LLVMSetTarget(mod, triple);
			LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
			LLVMErrorRef err = LLVMRunPasses(mod, "default<O3>", tm, po);
			LLVMDisposePassBuilderOptions(po);
			if (err)
				LLVMConsumeError(err);
			LLVMMemoryBufferRef obj = NULL;
			char *emsg = NULL;
			if (!LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &emsg, &obj))
				LLVMDisposeMemoryBuffer(obj);
			if (emsg)
				LLVMDisposeMessage(emsg);
			LLVMDisposeTargetMachine(tm);
		}
		LLVMDisposeModule(mod);
		LLVMContextDispose(ctx);
	}
	if (msg)
		LLVMDisposeMessage(msg);
	LLVMDisposeMessage(triple);
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(feat);
}

static void llvm_init(void)
{
	LLVMInitializeNativeTarget();
	LLVMInitializeNativeAsmPrinter();
}

/* llvm_warm, once, before the first module is optimized: only a compile
 * pays for it (3-5 ms), not a load whose objects come from the cache. */
static pthread_once_t warm_once = PTHREAD_ONCE_INIT;

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

/* The modules' compilations going on: how many are done, for the load's
 * progress line. */
typedef struct objwait {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
} objwait;

/* One module's compilation, on a thread of its own. */
typedef struct objjob {
	objwait *w;
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
	pthread_mutex_lock(&j->w->mu);
	j->w->done++;
	pthread_cond_signal(&j->w->cv);
	pthread_mutex_unlock(&j->w->mu);
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
		/* why, as the CUDA kernel cache's lookups say it */
		sn_log(SN_LOG_INFO, "cpu: object cache miss (%s): LLVM -O3",
		       ks.state == KC_CORRUPT ? "the entry was corrupt or refused: see the warning"
		       : sub.code	      ? sub.msg
					      : "no entry for this module's text, LLVM, target, CPU and features");
	}
	pthread_once(&warm_once, llvm_warm);
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
	c->pool = cpu_pool_new(n);
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
	/* our pool splits the work; OpenBLAS runs each call on one thread,
	 * and is loaded now if the plan calls it (cpu_blas.c) */
	if (cpu_plan_blas(p) && (rc = cpu_blas_ready(c->pool->n, e)))
		goto fail;
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
		/* the modules optimized and compiled in parallel, one thread
		 * each, while this one draws the progress line (sn_progress: on
		 * a terminal, once they take over two seconds, as NVRTC's kernels) */
		objjob jobs[CL_NMOD];
		pthread_t th[CL_NMOD];
		bool started[CL_NMOD] = {0};
		objwait w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
		int total = 0;
		double tl = sn_now();
		memset(jobs, 0, sizeof jobs);
		for (int k = 0; k < CL_NMOD; k++) {
			jobs[k] = (objjob){.w = &w, .mod = p->llmod[k], .want = p->has_obj[k] ? p->objkey[k] : NULL,
					   .cache_dir = cache_dir, .warn = warn, .wctx = warn_ctx};
			if (p->obj[k]) { /* an AOT package's: linked as it is */
				jobs[k].obj = LLVMCreateMemoryBufferWithMemoryRangeCopy(p->obj[k], (size_t)p->obj_size[k],
											"sinter-cpu.o");
				jobs[k].st.obj_hit = true;
				continue;
			}
			if (jobs[k].mod ? !has_code(jobs[k].mod) : !jobs[k].want)
				continue;
			total++;
			if (pthread_create(&th[k], NULL, object_thread, &jobs[k]) == 0)
				started[k] = true;
			else
				object_thread(&jobs[k]);
		}
		const char *what = "cpu: LLVM -O3 of the plan's modules";
		pthread_mutex_lock(&w.mu);
		while (w.done < total) {
			int done = w.done;
			pthread_mutex_unlock(&w.mu);
			sn_progress(what, (size_t)done, (size_t)total, tl);
			pthread_mutex_lock(&w.mu);
			if (w.done > done)
				continue;
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100000000; /* redrawn ten times a second */
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&w.cv, &w.mu, &ts);
		}
		pthread_mutex_unlock(&w.mu);
		for (int k = 0; k < CL_NMOD; k++)
			if (started[k])
				pthread_join(th[k], NULL);
		if (total) {
			sn_progress(what, (size_t)total, (size_t)total, tl);
			sn_progress_end();
		}
		pthread_mutex_destroy(&w.mu);
		pthread_cond_destroy(&w.cv);
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

void cpu_kern_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	kjob *j = ctx;
	j->fn(j->bufs, lo, hi, 0, j->cols);
}

/* ---- bf16 staging (cpu_int.h: bf16 storage) ---- */

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
		cpu_pool_for(c->pool, n, 16384, cvt_task, &j);
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
	case CL_CONV: rc = cpu_run_conv(c, &t, bufs, e); break;
	case CL_ATTN: rc = cpu_run_attn(c, &t, e); break;
	case CL_POOL: cpu_run_pool(c, &t); break;
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
		kjob k = {.fn = c->fns[s->fn], .bufs = bufs, .cols = s->inner};
		cpu_pool_for(c->pool, s->rows, 64, cpu_kern_task, &k);
	}
	return SN_OK;
}

/* ---- fallback: the reference interpreter over a group's members ---- */

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
		if (r == gr->root && p->vals[r].where == CL_VIEW) /* a state's scatter, in place (cl_lower.c) */
			rc = ref_scatter_in_place(nd, opv, e);
		else
			rc = ref_eval_node(g, nd, opv, &tmp[r], e);
		if (opv != ops)
			free(opv);
	}
	if (!rc && p->vals[gr->root].where != CL_VIEW) {
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

static const char *const kind_names[] = {"kernel", "gemm", "conv", "attention", "ref", "view", "pool", "gather"};

/* What runs step s, for profiles and traces: its LLVM function, or the
 * runtime's code for the kind (owned by the plan, or static). */
static const char *step_name(const cl_plan *p, const cl_step *s)
{
	if (s->kind == CL_KERNEL && s->fn >= 0 && (uint32_t)s->fn < p->nfns)
		return p->fns[s->fn];
	switch (s->kind) {
	case CL_GEMM: return "sgemm";
	case CL_CONV: return "conv";
	case CL_ATTN: return "attention";
	case CL_POOL: return "pool";
	case CL_GATHER: return "gather";
	case CL_REF: return "ref interpreter";
	default: return kind_names[s->kind];
	}
}

static double val_bytes(const ir_graph *g, ir_ref r)
{
	const ir_node *n = &g->nodes[r];
	return (double)ir_numel(&n->shape) * (double)ir_dtype_size(n->dtype);
}

/* What step s moves through memory (each buffer it names once: its
 * function's arguments, a product's operands, else its core's operands
 * and its output) and the flops of its core (products, convolutions,
 * attention), as the CUDA plan counts them (codegen/cg_lower.c). */
static void step_cost(const cl_plan *p, const cl_step *s, double *bytes, double *flops)
{
	const ir_graph *g = p->g;
	const ir_node *n = &g->nodes[s->node];
	ir_ref seen[CL_MAX_ARGS + IR_MAX_LIST + 8];
	uint32_t ns = 0;
	if (s->kind == CL_KERNEL) {
		for (uint32_t k = 0; k < s->nargs; k++)
			seen[ns++] = s->args[k];
	} else if (s->kind == CL_GEMM) {
		const ir_ref ops[] = {s->a, s->b, s->bias, s->c, s->out};
		for (size_t k = 0; k < SN_COUNT(ops); k++)
			if (ops[k] != IR_NONE)
				seen[ns++] = ops[k];
	} else {
		for (uint32_t k = 0; k < n->nin && ns < IR_MAX_LIST; k++)
			seen[ns++] = n->in[k];
		seen[ns++] = s->kind == CL_REF ? p->fp.groups[s->group].root : s->out;
	}
	double b = 0;
	for (uint32_t i = 0; i < ns; i++) {
		bool dup = seen[i] >= g->nnodes;
		for (uint32_t j = 0; j < i && !dup; j++)
			dup = seen[j] == seen[i];
		if (!dup)
			b += val_bytes(g, seen[i]);
	}
	double f = 0;
	if (s->kind == CL_GEMM) {
		f = 2.0 * (double)s->batch * (double)s->m * (double)s->n * (double)s->k;
	} else if (n->op == IR_OP_conv2d) {
		const ir_shape *w = &g->nodes[n->in[1]].shape;
		f = w->d[0] ? 2.0 * (double)ir_numel(&n->shape) * (double)(ir_numel(w) / w->d[0]) : 0;
	} else if (n->op == IR_OP_scaled_dot_product_attention) {
		const ir_shape *k = &g->nodes[n->in[1]].shape, *q = &g->nodes[n->in[0]].shape;
		double per = 2.0 * (double)k->d[k->rank - 2] * (double)(q->d[q->rank - 1] + n->shape.d[n->shape.rank - 1]);
		int64_t last = n->shape.d[n->shape.rank - 1];
		f = last ? (double)ir_numel(&n->shape) / (double)last * per : 0;
		if (n->attrs && n->attrs->causal)
			f /= 2;
	} else if (n->op == IR_OP_matmul || n->op == IR_OP_linear) {
		const ir_shape *a = &g->nodes[n->in[0]].shape;
		f = 2.0 * (double)ir_numel(&n->shape) * (double)a->d[a->rank - 1];
	}
	*bytes = b;
	*flops = f;
}

/* The plan over inputs into outputs. step_s (a profile; NULL else)
 * accumulates each step's seconds; otherwise, while a trace records, each
 * step is a span "op name" on the calling thread's track. */
static int run_plan(rt_cpu *c, const void *const *inputs, void *const *outputs, bool poison, double *step_s, sn_err *e)
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
	bool debug = sn_log_level() >= SN_LOG_DEBUG, trace = !step_s && !c->no_spans && sn_trace_on();
	bool timed = debug || trace || step_s;
	for (uint32_t i = 0; i < p->nsteps; i++) {
		const cl_step *s = &p->steps[i];
		double t0 = timed ? sn_now() : 0;
		for (uint32_t k = 0; k < s->nargs; k++)
			bufs[k] = c->addr[s->args[k]];
		int rc = SN_OK;
		switch (s->kind) {
		case CL_SKIP: break;
		case CL_KERNEL: {
			kjob j = {.fn = c->fns[s->fn], .bufs = bufs, .cols = s->inner};
			int64_t min = s->inner > 0 ? (16384 + s->inner - 1) / s->inner : 1;
			cpu_pool_for(c->pool, s->rows, min, cpu_kern_task, &j);
			break;
		}
		case CL_GEMM: rc = cpu_run_product(c, s, e); break;
		case CL_CONV:
		case CL_ATTN:
		case CL_POOL:
			if (g->nodes[s->out].dtype == IR_BF16)
				rc = run_staged(c, s, bufs, e);
			else if (s->kind == CL_CONV)
				rc = cpu_run_conv(c, s, bufs, e);
			else if (s->kind == CL_ATTN)
				rc = cpu_run_attn(c, s, e);
			else
				cpu_run_pool(c, s);
			break;
		case CL_GATHER: rc = cpu_run_gather(c, s, e); break;
		case CL_REF: rc = run_ref(c, s, e); break;
		}
		if (rc)
			return rc;
		if (!timed || s->kind == CL_SKIP)
			continue;
		double t1 = sn_now();
		if (step_s)
			step_s[i] += t1 - t0;
		if (debug)
			sn_log(SN_LOG_DEBUG, "cpu step %u: %s %s %.3f ms", i, kind_names[s->kind], s->op, (t1 - t0) * 1e3);
		if (trace) {
			char name[160], args[128];
			snprintf(name, sizeof name, "%s %s", s->op, step_name(p, s));
			snprintf(args, sizeof args, "\"step\": %u, \"kind\": \"%s\"", i, kind_names[s->kind]);
			sn_trace_span("cpu step", name, t0, t1, args);
		}
	}
	for (uint32_t k = 0; k < g->noutputs; k++) {
		const ir_node *on = &g->nodes[g->outputs[k]];
		size_t nb = (size_t)ir_numel(&on->shape) * ir_dtype_size(on->dtype);
		if (nb && outputs[k] != c->addr[g->outputs[k]]) /* a state updated in place is there already */
			memcpy(outputs[k], c->addr[g->outputs[k]], nb);
	}
	return SN_OK;
}

void rt_cpu_trace_steps(rt_cpu *c, bool on)
{
	c->no_spans = !on;
}

int rt_cpu_run(rt_cpu *c, const void *const *inputs, void *const *outputs, bool poison, sn_err *e)
{
	cpu_pool_hot(c->pool, true);
	int rc = run_plan(c, inputs, outputs, poison, NULL, e);
	cpu_pool_hot(c->pool, false);
	return rc;
}

int rt_cpu_profile(rt_cpu *c, const void *const *inputs, void *const *outputs, int iters, rt_cpu_prof **prof,
		   size_t *n, sn_err *e)
{
	*prof = NULL;
	*n = 0;
	if (iters < 1)
		return sn_errf(e, SN_EINPUT, "a profile needs at least one call, got %d", iters);
	const cl_plan *p = c->p;
	double *sec = calloc(p->nsteps ? p->nsteps : 1, sizeof *sec);
	rt_cpu_prof *pr = calloc(p->nsteps ? p->nsteps : 1, sizeof *pr);
	if (!sec || !pr) {
		free(sec);
		free(pr);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	int rc = SN_OK;
	cpu_pool_hot(c->pool, true);
	/* one call untimed (caches, the pool's threads awake), then iters */
	for (int it = 0; it <= iters && !rc; it++) {
		if (it == 1)
			memset(sec, 0, p->nsteps * sizeof *sec);
		rc = run_plan(c, inputs, outputs, false, sec, e);
	}
	cpu_pool_hot(c->pool, false);
	size_t k = 0;
	for (uint32_t i = 0; !rc && i < p->nsteps; i++) {
		const cl_step *s = &p->steps[i];
		if (s->kind == CL_SKIP)
			continue; /* a view: no work */
		pr[k] = (rt_cpu_prof){.name = step_name(p, s), .op = s->op, .ms = sec[i] * 1e3 / iters, .step = i};
		step_cost(p, s, &pr[k].bytes, &pr[k].flops);
		k++;
	}
	free(sec);
	if (rc) {
		free(pr);
		return rc;
	}
	*prof = pr;
	*n = k;
	return SN_OK;
}
