/* cg_render_util.h: the harness of the renderer tests test_cg_render_*.c:
 * NVRTC loaded by hand (the tests include no CUDA header; without it the
 * compile checks are skipped and said so), a queue of rendered kernels
 * compiled at the end for sm_80 and sm_90 on every core (each distinct
 * source once), a graph builder, and render/build, which check a kernel's
 * launch shape and queue it. SINTER_DUMP_DIR=dir writes every source there. */
#ifndef SINTER_TEST_CG_RENDER_UTIL_H
#define SINTER_TEST_CG_RENDER_UTIL_H

#include "check.h"
#include "codegen/cg_render.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- NVRTC, loaded by hand (the test includes no CUDA header) ---- */
typedef void *nvrtc_prog;
static struct {
	void *lib;
	int (*create)(nvrtc_prog *, const char *, const char *, int, const char *const *, const char *const *);
	int (*compile)(nvrtc_prog, int, const char *const *);
	int (*log_size)(nvrtc_prog, size_t *);
	int (*log)(nvrtc_prog, char *);
	int (*destroy)(nvrtc_prog *);
} nv;

static inline bool nvrtc_open(void)
{
	const char *paths[] = {"libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.13",
			       "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"};
	for (size_t i = 0; i < SN_COUNT(paths) && !nv.lib; i++)
		nv.lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
	if (!nv.lib)
		return false;
	*(void **)&nv.create = dlsym(nv.lib, "nvrtcCreateProgram");
	*(void **)&nv.compile = dlsym(nv.lib, "nvrtcCompileProgram");
	*(void **)&nv.log_size = dlsym(nv.lib, "nvrtcGetProgramLogSize");
	*(void **)&nv.log = dlsym(nv.lib, "nvrtcGetProgramLog");
	*(void **)&nv.destroy = dlsym(nv.lib, "nvrtcDestroyProgram");
	return nv.create && nv.compile && nv.log_size && nv.log && nv.destroy;
}

static bool have_nvrtc;
static int ncompiled;

/* Kernels wait in a list and compile at the end on every core; each
 * distinct source (by its content-derived name) compiles once. */
typedef struct job {
	char *src, *label, name[64];
	bool ok;
} job;
static job *jobs;
static int njobs, capjobs, next_job;
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;

static inline void queue(const cg_kernel *k, const char *label)
{
	for (int i = 0; i < njobs; i++)
		if (strcmp(jobs[i].name, k->name) == 0)
			return;
	if (njobs == capjobs) {
		capjobs = capjobs ? 2 * capjobs : 256;
		jobs = realloc(jobs, (size_t)capjobs * sizeof *jobs);
		CHECK(jobs != NULL);
		if (!jobs)
			exit(1);
	}
	job *j = &jobs[njobs++];
	j->src = strdup(k->src);
	j->label = strdup(label);
	snprintf(j->name, sizeof j->name, "%s", k->name);
	j->ok = false;
}

/* Compiles src for sm; prints the log and the source's name on failure. */
static inline bool nvrtc_build(const char *src, const char *name, int sm)
{
	nvrtc_prog p = NULL;
	if (nv.create(&p, src, name, 0, NULL, NULL) != 0)
		return false;
	char arch[48];
	/* sm_90 as the runtime compiles it: sm_90a, for wgmma */
	snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%s", sm, sm == 90 ? "a" : "");
	const char *opts[] = {arch, "--std=c++17", "-default-device"};
	int rc = nv.compile(p, 3, opts);
	if (rc != 0) {
		size_t n = 0;
		nv.log_size(p, &n);
		char *log = malloc(n + 1);
		if (log) {
			log[0] = 0;
			nv.log(p, log);
			fprintf(stderr, "nvrtc sm_%d %s:\n%s\n", sm, name, log);
			free(log);
		}
	}
	nv.destroy(&p);
	return rc == 0;
}

static inline void *compile_worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&job_lock);
		int i = next_job < njobs ? next_job++ : -1;
		pthread_mutex_unlock(&job_lock);
		if (i < 0)
			return NULL;
		job *j = &jobs[i];
		/* a kernel rendered with wgmma or clusters (for sm_90) exists on
		 * sm_90 only, one with fp8 mma.sync (the GEMM template) on sm_89+ */
		bool hopper = strstr(j->src, "wgmma.") != NULL || strstr(j->src, ".e4m3.e4m3.") != NULL ||
			      strstr(j->src, "__cluster_dims__") != NULL;
		j->ok = (hopper || nvrtc_build(j->src, j->label, 80)) && nvrtc_build(j->src, j->label, 90);
	}
}

/* Compiles every queued kernel for sm_80 and sm_90 (wgmma kernels for
 * sm_90 only); each must compile. */
static inline void compile_all(void)
{
	if (have_nvrtc) {
		long nt = sysconf(_SC_NPROCESSORS_ONLN);
		nt = nt < 1 ? 1 : nt > 32 ? 32 : nt;
		pthread_t th[32];
		int started = 0;
		for (long i = 0; i < nt; i++)
			started += pthread_create(&th[started], NULL, compile_worker, NULL) == 0;
		compile_worker(NULL);
		for (int i = 0; i < started; i++)
			pthread_join(th[i], NULL);
		for (int i = 0; i < njobs; i++) {
			if (!jobs[i].ok)
				fprintf(stderr, "%s: kernel %s does not compile\n", jobs[i].label, jobs[i].name);
			CHECK(jobs[i].ok);
		}
		ncompiled = njobs;
	}
	for (int i = 0; i < njobs; i++) {
		free(jobs[i].src);
		free(jobs[i].label);
	}
	free(jobs);
}

static inline void dump(const cg_kernel *k)
{
	const char *dir = getenv("SINTER_DUMP_DIR");
	if (!dir)
		return;
	char path[512];
	snprintf(path, sizeof path, "%s/%s.cu", dir, k->name);
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(k->src, f);
		fclose(f);
	}
}

/* ---- graph building ---- */
static inline ir_shape mk_shape(const int64_t *d, int rank)
{
	ir_shape s = {rank, {0}};
	for (int i = 0; i < rank; i++)
		s.d[i] = d[i];
	return s;
}
#define SHAPE(...) mk_shape((const int64_t[]){__VA_ARGS__}, \
			    (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define INTS(...) ((ir_ints){(int32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}})

static ir_graph *G;
static sn_err E;

static inline void fresh(void)
{
	if (G)
		ir_graph_free(G);
	G = ir_graph_new();
	memset(&E, 0, sizeof E);
}

static inline ir_ref in(ir_dtype t, ir_shape s)
{
	char name[16];
	snprintf(name, sizeof name, "x%u", G->nnodes);
	ir_ref r = ir_add_input(G, name, t, &s, &E);
	CHECK(r != IR_NONE);
	return r;
}

static inline ir_ref op(ir_op o, const ir_ref *ins, uint32_t nin, const ir_attrs *a)
{
	ir_ref r = ir_add(G, o, ins, nin, a, &E);
	if (r == IR_NONE)
		fprintf(stderr, "builder: %s\n", E.msg);
	CHECK(r != IR_NONE);
	return r;
}

static inline ir_attrs attrs(ir_op o)
{
	ir_attrs a;
	ir_attrs_init(o, &a);
	return a;
}

/* Renders node r with fn into *st, checks the result is sane and, for a
 * kernel, that it compiles for sm_80 and sm_90. */
/* Renders node r for target t with config want (NULL: the default) and
 * epilogue epi (NULL: none), checks the kernel's shape and queues it. */
static inline bool render_with(cg_render_fn *fn, ir_ref r, const cg_target *t, const cg_config *want, const cg_epilogue *epi,
			       cg_step *st, const char *label)
{
	memset(st, 0, sizeof *st);
	st->node = r;
	st->epi = epi;
	if (r == IR_NONE)
		return false;
	sn_err e = {0};
	int rc = fn(G, r, t, want, st, &e);
	if (rc != SN_OK)
		fprintf(stderr, "%s: render failed: %s\n", label, e.msg);
	CHECK(rc == SN_OK);
	if (rc != SN_OK)
		return false;
	if (st->kind != CG_STEP_KERNEL)
		return true;
	const cg_kernel *k = &st->k;
	CHECK(k->src && k->name[0]);
	CHECK(k->grid[0] >= 1 && k->grid[1] >= 1 && k->grid[2] >= 1);
	CHECK(k->block[0] * k->block[1] * k->block[2] >= 32 && k->block[0] * k->block[1] * k->block[2] <= 1024);
	CHECK(k->nbufs >= 2 && k->nbufs <= CG_MAX_BUFS && k->bufs[k->nbufs - 1] == (epi ? epi->out : r));
	CHECK(k->smem <= (t->sm >= 90 ? 227 : 163) * 1024);
	CHECK(strstr(k->src, k->name) != NULL);
	CHECK(strstr(k->src, "#include") == NULL);
	if (!k->src)
		return false;
	dump(k);
	queue(k, label);
	return true;
}

static inline bool render(cg_render_fn *fn, ir_ref r, cg_step *st, const char *label)
{
	cg_target t = {.sm = 90};
	return render_with(fn, r, &t, NULL, NULL, st, label);
}

static inline void step_free(cg_step *st)
{
	free(st->k.src);
	st->k.src = NULL;
}

/* Renders and compiles, for cases where only compiling matters. */
static inline void build(cg_render_fn *fn, ir_ref r, const char *label)
{
	cg_step st;
	render(fn, r, &st, label);
	step_free(&st);
}

static const ir_dtype fdt[] __attribute__((unused)) = {IR_F32, IR_F16, IR_BF16};

/* Compiles what the tests queued and prints what was done: name is the
 * test's (check_done's). */
static inline int cg_render_finish(const char *name)
{
	if (G)
		ir_graph_free(G);
	compile_all();
	printf("%s: %d distinct kernels compiled for sm_80 and sm_90\n", name, ncompiled);
	return check_done(name);
}

/* Opens NVRTC for the test called name. */
static inline void cg_render_start(const char *name)
{
	have_nvrtc = nvrtc_open();
	if (!have_nvrtc)
		printf("%s: NVRTC not found, kernels are rendered but not compiled\n", name);
}

#endif
