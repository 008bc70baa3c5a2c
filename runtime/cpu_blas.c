/* cpu_blas.c: OpenBLAS, loaded when the cpu device first needs it
 * (cpu_int.h, rt_cpu_blas_quiet in cpu_exec.h).
 *
 * sinter is not linked with OpenBLAS: a library linked in starts its
 * worker threads when the process starts, before main, and each worker
 * maps a 128 MiB buffer at once, retrying for ever when it cannot. Under
 * `ulimit -v` of 300 MB every sinter command, --help included, then spun
 * at 100 % CPU and hung at exit, waiting for that thread (issue 31). The
 * cpu device calls BLAS on one thread per call (its own pool splits the
 * work), so OpenBLAS is opened here, once, with OPENBLAS_NUM_THREADS=1
 * in the environment it reads as it loads: no workers at all. Commands
 * that never compile or run a cpu plan never load it.
 *
 * The functions the cpu runtime calls (cblas_sgemm, cblas_sgemv,
 * openblas_get_config) are defined here under their own names, forwarding
 * to OpenBLAS's; like everything in libsinter they are hidden (the shared
 * library exports sinter_ only), so the process's other users of BLAS
 * are not affected. */
#include "runtime/cpu_int.h"

#include <cblas.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#ifndef SINTER_OPENBLAS
#define SINTER_OPENBLAS "libopenblas.so"
#endif

typedef void sgemm_fn(OPENBLAS_CONST enum CBLAS_ORDER, OPENBLAS_CONST enum CBLAS_TRANSPOSE,
		      OPENBLAS_CONST enum CBLAS_TRANSPOSE, OPENBLAS_CONST blasint, OPENBLAS_CONST blasint,
		      OPENBLAS_CONST blasint, OPENBLAS_CONST float, OPENBLAS_CONST float *, OPENBLAS_CONST blasint,
		      OPENBLAS_CONST float *, OPENBLAS_CONST blasint, OPENBLAS_CONST float, float *,
		      OPENBLAS_CONST blasint);
typedef void sgemv_fn(OPENBLAS_CONST enum CBLAS_ORDER, OPENBLAS_CONST enum CBLAS_TRANSPOSE, OPENBLAS_CONST blasint,
		      OPENBLAS_CONST blasint, OPENBLAS_CONST float, OPENBLAS_CONST float *, OPENBLAS_CONST blasint,
		      OPENBLAS_CONST float *, OPENBLAS_CONST blasint, OPENBLAS_CONST float, float *,
		      OPENBLAS_CONST blasint);

static struct {
	void *h;
	sgemm_fn *sgemm;
	sgemv_fn *sgemv;
	char *(*config)(void);
	char why[256]; /* why it is not loaded */
} blas;
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_open(void)
{
	/* OpenBLAS reads its thread count from the environment while it
	 * loads (its constructor); the caller's setting is put back after.
	 * Once per process: setenv is not safe against another thread's
	 * getenv, and this is the only place the library writes the
	 * environment. */
	const char *old = getenv("OPENBLAS_NUM_THREADS");
	char keep[64]; /* a thread count; no allocation to fail here */
	bool had = old && strlen(old) < sizeof keep;
	if (had)
		strcpy(keep, old);
	setenv("OPENBLAS_NUM_THREADS", "1", 1);
	/* the runtime's name first (Debian's alternatives choose it), then
	 * the file found at configure time */
	const char *names[] = {"libopenblas.so.0", SINTER_OPENBLAS};
	for (size_t i = 0; i < sizeof names / sizeof *names && !blas.h; i++)
		blas.h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (had)
		setenv("OPENBLAS_NUM_THREADS", keep, 1);
	else
		unsetenv("OPENBLAS_NUM_THREADS");
	if (!blas.h) {
		const char *m = dlerror();
		snprintf(blas.why, sizeof blas.why, "cannot load OpenBLAS (%s)", m ? m : SINTER_OPENBLAS);
		return;
	}
	blas.sgemm = (sgemm_fn *)(uintptr_t)dlsym(blas.h, "cblas_sgemm");
	blas.sgemv = (sgemv_fn *)(uintptr_t)dlsym(blas.h, "cblas_sgemv");
	blas.config = (char *(*)(void))(uintptr_t)dlsym(blas.h, "openblas_get_config");
	void (*threads)(int) = (void (*)(int))(uintptr_t)dlsym(blas.h, "openblas_set_num_threads");
	if (!blas.sgemm || !blas.sgemv) {
		snprintf(blas.why, sizeof blas.why, "%s has no cblas_sgemm or cblas_sgemv", SINTER_OPENBLAS);
		blas.sgemm = NULL;
		return;
	}
	if (threads)
		threads(1); /* a build that does not read the environment */
}

void rt_cpu_blas_quiet(void)
{
	pthread_once(&blas_once, blas_open);
}

bool cpu_plan_blas(const cl_plan *p)
{
	for (uint32_t i = 0; i < p->nsteps; i++)
		if (p->steps[i].kind == CL_GEMM || p->steps[i].kind == CL_CONV || p->steps[i].kind == CL_ATTN)
			return true;
	return false;
}

/* OpenBLAS's work buffer: mapped by each thread on its first call
 * (BUFFER_SIZE of its x86-64 builds, plus a page), and retried for ever
 * when the map fails. */
#define BLAS_BUFFER ((size_t)128 << 20)

int cpu_blas_ready(int threads, sn_err *e)
{
	rt_cpu_blas_quiet();
	if (!blas.sgemm)
		return sn_errf(e, SN_EENV, "cpu: %s", blas.why);
	/* room for each calling thread's buffer, and its stack and some
	 * more besides, in the address space (RLIMIT_AS counts a reserved
	 * range as much as a used one): refused here rather than hung in
	 * OpenBLAS later */
	size_t need = (size_t)(threads > 0 ? threads : 1) * (BLAS_BUFFER + ((size_t)16 << 20));
	void *m = mmap(NULL, need, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return sn_errf(e, SN_EENV,
			       "cpu: not enough address space for OpenBLAS (%zu MiB for %d thread%s; ulimit -v?): "
			       "try fewer threads (--threads 1)",
			       need >> 20, threads, threads == 1 ? "" : "s");
	munmap(m, need);
	return SN_OK;
}

void cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER Order, OPENBLAS_CONST enum CBLAS_TRANSPOSE TransA,
		 OPENBLAS_CONST enum CBLAS_TRANSPOSE TransB, OPENBLAS_CONST blasint M, OPENBLAS_CONST blasint N,
		 OPENBLAS_CONST blasint K, OPENBLAS_CONST float alpha, OPENBLAS_CONST float *A,
		 OPENBLAS_CONST blasint lda, OPENBLAS_CONST float *B, OPENBLAS_CONST blasint ldb,
		 OPENBLAS_CONST float beta, float *C, OPENBLAS_CONST blasint ldc)
{
	/* loaded: rt_cpu_load succeeded (cpu_blas_ready) */
	blas.sgemm(Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void cblas_sgemv(OPENBLAS_CONST enum CBLAS_ORDER order, OPENBLAS_CONST enum CBLAS_TRANSPOSE trans,
		 OPENBLAS_CONST blasint m, OPENBLAS_CONST blasint n, OPENBLAS_CONST float alpha,
		 OPENBLAS_CONST float *a, OPENBLAS_CONST blasint lda, OPENBLAS_CONST float *x,
		 OPENBLAS_CONST blasint incx, OPENBLAS_CONST float beta, float *y, OPENBLAS_CONST blasint incy)
{
	blas.sgemv(order, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
}

char *openblas_get_config(void)
{
	rt_cpu_blas_quiet();
	return blas.config ? blas.config() : (char *)(blas.sgemm ? "unknown" : "none");
}
