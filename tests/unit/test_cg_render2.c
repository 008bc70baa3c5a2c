/* test_cg_render2.c: the reduction, normalization, pooling, convolution,
 * GEMM and attention renderers (flash attention's variants, configs and
 * layouts too). Every kernel they produce is compiled with
 * NVRTC for sm_80 and sm_90 (NVRTC is loaded with dlopen; without it the
 * compile checks are skipped and said so); launch shapes and cuBLASLt
 * descriptions are checked against values worked out by hand. Numerics are
 * the GPU tests' job (tests/gpu/test_cuda_{reduce,conv,gemm}.c).
 * SINTER_DUMP_DIR=dir writes every source there. */
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

static bool nvrtc_open(void)
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

static void queue(const cg_kernel *k, const char *label)
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
static bool nvrtc_build(const char *src, const char *name, int sm)
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

static void *compile_worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&job_lock);
		int i = next_job < njobs ? next_job++ : -1;
		pthread_mutex_unlock(&job_lock);
		if (i < 0)
			return NULL;
		job *j = &jobs[i];
		/* a kernel rendered with wgmma (for sm_90) exists on sm_90 only,
		 * one with fp8 mma.sync (the GEMM template) on sm_89+ */
		bool hopper = strstr(j->src, "wgmma.") != NULL || strstr(j->src, ".e4m3.e4m3.") != NULL;
		j->ok = (hopper || nvrtc_build(j->src, j->label, 80)) && nvrtc_build(j->src, j->label, 90);
	}
}

/* Compiles every queued kernel for sm_80 and sm_90 (wgmma kernels for
 * sm_90 only); each must compile. */
static void compile_all(void)
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

static void dump(const cg_kernel *k)
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
static ir_shape mk_shape(const int64_t *d, int rank)
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

static void fresh(void)
{
	if (G)
		ir_graph_free(G);
	G = ir_graph_new();
	memset(&E, 0, sizeof E);
}

static ir_ref in(ir_dtype t, ir_shape s)
{
	char name[16];
	snprintf(name, sizeof name, "x%u", G->nnodes);
	ir_ref r = ir_add_input(G, name, t, &s, &E);
	CHECK(r != IR_NONE);
	return r;
}

static ir_ref op(ir_op o, const ir_ref *ins, uint32_t nin, const ir_attrs *a)
{
	ir_ref r = ir_add(G, o, ins, nin, a, &E);
	if (r == IR_NONE)
		fprintf(stderr, "builder: %s\n", E.msg);
	CHECK(r != IR_NONE);
	return r;
}

static ir_attrs attrs(ir_op o)
{
	ir_attrs a;
	ir_attrs_init(o, &a);
	return a;
}

/* Renders node r with fn into *st, checks the result is sane and, for a
 * kernel, that it compiles for sm_80 and sm_90. */
/* Renders node r for target t with config want (NULL: the default) and
 * epilogue epi (NULL: none), checks the kernel's shape and queues it. */
static bool render_with(cg_render_fn *fn, ir_ref r, const cg_target *t, const cg_config *want, const cg_epilogue *epi,
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

static bool render(cg_render_fn *fn, ir_ref r, cg_step *st, const char *label)
{
	cg_target t = {.sm = 90};
	return render_with(fn, r, &t, NULL, NULL, st, label);
}

static void step_free(cg_step *st)
{
	free(st->k.src);
	st->k.src = NULL;
}

/* Renders and compiles, for cases where only compiling matters. */
static void build(cg_render_fn *fn, ir_ref r, const char *label)
{
	cg_step st;
	render(fn, r, &st, label);
	step_free(&st);
}

static const ir_dtype fdt[] = {IR_F32, IR_F16, IR_BF16};

/* ---- reductions ---- */
static void test_reduce(void)
{
	static const ir_op ops[] = {IR_OP_reduce_sum, IR_OP_reduce_mean, IR_OP_reduce_max, IR_OP_reduce_min};
	struct {
		ir_shape s;
		ir_ints axes;
		bool keep;
	} cases[] = {
		{SHAPE(8, 300), INTS(1), false},          /* short rows: warp per row */
		{SHAPE(3, 5000), INTS(-1), true},         /* long rows: block per row */
		{SHAPE(4, 7, 33), INTS(1), false},        /* columns */
		{SHAPE(2, 3, 4, 5), INTS(0, 2), true},    /* non-contiguous axes */
		{SHAPE(6, 70000), INTS(), false},         /* everything, one output */
		{SHAPE(2, 64, 56, 56), INTS(2, 3), true}, /* global pooling shape */
	};
	char label[96];
	for (size_t c = 0; c < SN_COUNT(cases); c++)
		for (size_t o = 0; o < SN_COUNT(ops); o++)
			for (size_t d = 0; d < SN_COUNT(fdt); d++) {
				if (d > 0 && (o > 1 || c > 2))
					continue; /* the narrow dtypes on a few shapes are enough */
				fresh();
				ir_attrs a = attrs(ops[o]);
				a.axes = cases[c].axes;
				a.keepdims = cases[c].keep;
				ir_ref x = in(fdt[d], cases[c].s);
				snprintf(label, sizeof label, "%s case %zu %s", ir_ops[ops[o]].name, c,
					 ir_dtype_name(fdt[d]));
				build(cg_render_reduce, op(ops[o], &x, 1, &a), label);
			}
	/* integers: sum and max in i32, a mean in i64 */
	static const ir_dtype idt[] = {IR_I32, IR_I64, IR_I8};
	for (size_t d = 0; d < SN_COUNT(idt); d++) {
		fresh();
		ir_attrs a = attrs(IR_OP_reduce_sum);
		a.axes = INTS(1);
		ir_ref x = in(idt[d], SHAPE(5, 100, 3));
		build(cg_render_reduce, op(IR_OP_reduce_sum, &x, 1, &a), "reduce_sum int");
		build(cg_render_reduce, op(IR_OP_reduce_max, &x, 1, &a), "reduce_max int");
		build(cg_render_reduce, op(IR_OP_reduce_mean, &x, 1, &a), "reduce_mean int");
	}

	/* The launch shape follows the strategy, worked out by hand. */
	cg_step st;
	fresh();
	ir_attrs a = attrs(IR_OP_reduce_sum);
	a.axes = INTS(1);
	ir_ref x = in(IR_F32, SHAPE(100, 300));
	if (render(cg_render_reduce, op(IR_OP_reduce_sum, &x, 1, &a), &st, "rows")) {
		/* 100 rows of 300: a warp each, 8 per block of 256 -> 13 blocks */
		CHECK(st.k.grid[0] == 13 && st.k.block[0] == 256);
		CHECK(st.k.nbufs == 2 && st.k.bufs[0] == x);
		CHECK(strstr(st.k.name, "reduce_sum_") == st.k.name);
	}
	step_free(&st);
	x = in(IR_F32, SHAPE(3, 5000));
	if (render(cg_render_reduce, op(IR_OP_reduce_sum, &x, 1, &a), &st, "long rows")) /* a block per row */
		CHECK(st.k.grid[0] == 3 && st.k.block[0] == 256);
	step_free(&st);
	x = in(IR_F32, SHAPE(64, 10, 128)); /* columns: 8192 outputs, a thread each */
	if (render(cg_render_reduce, op(IR_OP_reduce_sum, &x, 1, &a), &st, "columns"))
		CHECK(st.k.grid[0] == 32 && st.k.block[0] == 256);
	step_free(&st);
	/* identical specs give identical kernels */
	cg_step s1, s2;
	ir_ref x1 = in(IR_F16, SHAPE(4, 4000)), x2 = in(IR_F16, SHAPE(4, 4000));
	render(cg_render_reduce, op(IR_OP_reduce_mean, &x1, 1, &a), &s1, "same 1");
	render(cg_render_reduce, op(IR_OP_reduce_mean, &x2, 1, &a), &s2, "same 2");
	CHECK(s1.k.src && s2.k.src && strcmp(s1.k.name, s2.k.name) == 0 && strcmp(s1.k.src, s2.k.src) == 0);
	step_free(&s1);
	step_free(&s2);
}

/* ---- softmax and the norms ---- */
static void test_norm(void)
{
	char label[96];
	struct {
		ir_shape s;
		int axis;
	} sm[] = {
		{SHAPE(4, 100), -1},      /* warp per row, in registers */
		{SHAPE(2, 3000), 1},      /* block per row, in registers */
		{SHAPE(2, 50257), -1},    /* long rows, re-read */
		{SHAPE(2, 5, 7), 1},      /* an inner axis: columns */
		{SHAPE(3, 1, 12, 64), 0}, /* outer 1 */
	};
	for (size_t c = 0; c < SN_COUNT(sm); c++)
		for (size_t d = 0; d < SN_COUNT(fdt); d++)
			for (int lg = 0; lg < 2; lg++) {
				if (lg && d == 2)
					continue;
				fresh();
				ir_op o = lg ? IR_OP_log_softmax : IR_OP_softmax;
				ir_attrs a = attrs(o);
				a.axis = sm[c].axis;
				ir_ref x = in(fdt[d], sm[c].s);
				snprintf(label, sizeof label, "%s case %zu %s", ir_ops[o].name, c, ir_dtype_name(fdt[d]));
				build(cg_render_norm, op(o, &x, 1, &a), label);
			}
	for (size_t d = 0; d < SN_COUNT(fdt); d++) {
		fresh();
		ir_attrs a = attrs(IR_OP_layer_norm);
		ir_ref x = in(fdt[d], SHAPE(2, 16, 768));
		ir_ref ins[3] = {x, in(fdt[d], SHAPE(768)), in(IR_F32, SHAPE(768))}; /* mixed dtypes */
		snprintf(label, sizeof label, "layer_norm %s", ir_dtype_name(fdt[d]));
		build(cg_render_norm, op(IR_OP_layer_norm, ins, 3, &a), label);
		build(cg_render_norm, op(IR_OP_layer_norm, ins, 1, &a), label);
		a.axis = 1;
		ir_ref x2 = in(fdt[d], SHAPE(3, 4, 9000));
		ir_ref ins2[2] = {x2, in(fdt[d], SHAPE(4, 9000))};
		build(cg_render_norm, op(IR_OP_layer_norm, ins2, 2, &a), label);
		a = attrs(IR_OP_rms_norm);
		a.eps = 1e-6;
		ins[2] = ins[1];
		snprintf(label, sizeof label, "rms_norm %s", ir_dtype_name(fdt[d]));
		build(cg_render_norm, op(IR_OP_rms_norm, ins, 2, &a), label);
		build(cg_render_norm, op(IR_OP_rms_norm, &x, 1, &a), label);
		for (int l = 0; l < 2; l++) {
			a = attrs(IR_OP_batch_norm);
			a.layout = l ? IR_NHWC : IR_NCHW;
			ir_ref bx = in(fdt[d], l ? SHAPE(2, 7, 7, 64) : SHAPE(2, 64, 7, 7));
			ir_ref bn[5] = {bx, in(fdt[d], SHAPE(64)), in(fdt[d], SHAPE(64)), in(IR_F32, SHAPE(64)),
					in(IR_F32, SHAPE(64))};
			snprintf(label, sizeof label, "batch_norm %s %s", ir_layout_name(a.layout), ir_dtype_name(fdt[d]));
			build(cg_render_norm, op(IR_OP_batch_norm, bn, 5, &a), label);
		}
	}
	fresh();
	ir_attrs a = attrs(IR_OP_batch_norm);
	ir_ref bx = in(IR_F32, SHAPE(4, 10));
	ir_ref bn[5] = {bx, in(IR_F32, SHAPE(10)), in(IR_F32, SHAPE(10)), in(IR_F32, SHAPE(10)), in(IR_F32, SHAPE(10))};
	cg_step st;
	if (render(cg_render_norm, op(IR_OP_batch_norm, bn, 5, &a), &st, "batch_norm rank 2")) {
		CHECK(st.k.nbufs == 6 && st.k.bufs[0] == bx && st.k.bufs[4] == bn[4]);
		CHECK(strstr(st.k.src, "i % 10L") != NULL); /* channel = i % C for [N, C] */
	}
	step_free(&st);
	a = attrs(IR_OP_softmax);
	ir_ref x = in(IR_F16, SHAPE(100, 300));
	if (render(cg_render_norm, op(IR_OP_softmax, &x, 1, &a), &st, "softmax launch"))
		CHECK(st.k.grid[0] == 13 && st.k.block[0] == 256); /* a warp per row, 8 rows per block */
	step_free(&st);
	a = attrs(IR_OP_layer_norm);
	x = in(IR_F32, SHAPE(3, 5000));
	if (render(cg_render_norm, op(IR_OP_layer_norm, &x, 1, &a), &st, "layer_norm launch"))
		CHECK(st.k.grid[0] == 3 && st.k.block[0] == 512 && st.k.nbufs == 2);
	step_free(&st);
}

/* ---- pooling ---- */
static void test_pool(void)
{
	char label[96];
	for (size_t d = 0; d < SN_COUNT(fdt); d++)
		for (int l = 0; l < 2; l++) {
			fresh();
			ir_layout lay = l ? IR_NHWC : IR_NCHW;
			ir_ref x = in(fdt[d], l ? SHAPE(2, 17, 19, 8) : SHAPE(2, 8, 17, 19));
			ir_attrs a = attrs(IR_OP_max_pool2d);
			a.layout = lay;
			a.kernel = INTS(3, 3);
			a.stride = INTS(2, 2);
			a.pad = INTS(1, 1, 1, 1);
			snprintf(label, sizeof label, "max_pool2d %s %s", ir_layout_name(lay), ir_dtype_name(fdt[d]));
			build(cg_render_pool, op(IR_OP_max_pool2d, &x, 1, &a), label);
			a.ceil_mode = true;
			a.dilation = INTS(2, 1);
			a.pad = INTS(2, 0, 1, 1);
			build(cg_render_pool, op(IR_OP_max_pool2d, &x, 1, &a), label);
			ir_attrs v = attrs(IR_OP_avg_pool2d);
			v.layout = lay;
			v.kernel = INTS(3, 2);
			v.pad = INTS(1, 1, 1, 0);
			v.ceil_mode = true;
			snprintf(label, sizeof label, "avg_pool2d %s %s", ir_layout_name(lay), ir_dtype_name(fdt[d]));
			build(cg_render_pool, op(IR_OP_avg_pool2d, &x, 1, &v), label);
			v.count_include_pad = true;
			build(cg_render_pool, op(IR_OP_avg_pool2d, &x, 1, &v), label);
			ir_attrs ga = attrs(IR_OP_global_avg_pool);
			ga.layout = lay;
			snprintf(label, sizeof label, "global_avg_pool %s %s", ir_layout_name(lay), ir_dtype_name(fdt[d]));
			build(cg_render_pool, op(IR_OP_global_avg_pool, &x, 1, &ga), label);
			ir_ref big = in(fdt[d], l ? SHAPE(1, 80, 80, 3) : SHAPE(1, 3, 80, 80));
			build(cg_render_pool, op(IR_OP_global_avg_pool, &big, 1, &ga), label);
		}
	static const ir_dtype idt[] = {IR_I32, IR_U8, IR_I64};
	for (size_t d = 0; d < SN_COUNT(idt); d++) {
		fresh();
		ir_ref x = in(idt[d], SHAPE(1, 3, 9, 9));
		ir_attrs a = attrs(IR_OP_max_pool2d);
		a.kernel = INTS(2, 2);
		build(cg_render_pool, op(IR_OP_max_pool2d, &x, 1, &a), "max_pool2d int");
	}
	/* ResNet-50's stem pool: 64x112x112 -> 64x56x56 = 200704 outputs per image */
	fresh();
	ir_ref x = in(IR_F32, SHAPE(1, 64, 112, 112));
	ir_attrs a = attrs(IR_OP_max_pool2d);
	a.kernel = INTS(3, 3);
	a.stride = INTS(2, 2);
	a.pad = INTS(1, 1, 1, 1);
	cg_step st;
	if (render(cg_render_pool, op(IR_OP_max_pool2d, &x, 1, &a), &st, "stem pool"))
		CHECK(st.k.grid[0] == 200704 / 256 && st.k.block[0] == 256 && st.k.bufs[0] == x);
	step_free(&st);
	ir_attrs ga = attrs(IR_OP_global_avg_pool);
	x = in(IR_F16, SHAPE(2, 2048, 7, 7)); /* 4096 planes, a warp each, 8 per block */
	if (render(cg_render_pool, op(IR_OP_global_avg_pool, &x, 1, &ga), &st, "head pool"))
		CHECK(st.k.grid[0] == 512 && strstr(st.k.src, "/ 49.0f") != NULL);
	step_free(&st);
}

/* ---- matmul and linear ---- */
static bool gemm_is(const cg_step *st, int64_t batch, int64_t m, int64_t n, int64_t k, int64_t sa, int64_t sb,
		    int64_t sc, bool tb)
{
	const cg_gemm *q = &st->g;
	bool ok = st->kind == CG_STEP_GEMM && q->batch == batch && q->m == m && q->n == n && q->k == k &&
		  q->trans_b == tb && (batch == 1 || (q->stride_a == sa && q->stride_b == sb && q->stride_c == sc));
	if (!ok)
		fprintf(stderr, "gemm: kind %d batch %lld m %lld n %lld k %lld strides %lld %lld %lld trans %d\n",
			(int)st->kind, (long long)q->batch, (long long)q->m, (long long)q->n, (long long)q->k,
			(long long)q->stride_a, (long long)q->stride_b, (long long)q->stride_c, (int)q->trans_b);
	return ok;
}

static void test_gemm(void)
{
	cg_step st;
	fresh();
	ir_ref ab[2] = {in(IR_F32, SHAPE(2, 3, 4, 5)), in(IR_F32, SHAPE(2, 3, 5, 6))};
	ir_ref r = op(IR_OP_matmul, ab, 2, NULL);
	render(cg_render_gemm, r, &st, "batched");
	CHECK(gemm_is(&st, 6, 4, 6, 5, 20, 30, 24, false));
	CHECK(st.g.a == ab[0] && st.g.b == ab[1] && st.g.out == r && st.g.bias == IR_NONE && st.g.dtype == IR_F32);
	/* a shared b folds the batch into m: [8,16,32] @ [32,64] is 128x32 @ 32x64 */
	ir_ref fo[2] = {in(IR_F16, SHAPE(8, 16, 32)), in(IR_F16, SHAPE(32, 64))};
	render(cg_render_gemm, op(IR_OP_matmul, fo, 2, NULL), &st, "folded");
	CHECK(gemm_is(&st, 1, 128, 64, 32, 0, 0, 0, false));
	/* a shared a cannot fold: [1,16,32] @ [4,32,8] is 4 products with stride_a 0 */
	ir_ref sh[2] = {in(IR_BF16, SHAPE(1, 16, 32)), in(IR_BF16, SHAPE(4, 32, 8))};
	render(cg_render_gemm, op(IR_OP_matmul, sh, 2, NULL), &st, "shared a");
	CHECK(gemm_is(&st, 4, 16, 8, 32, 0, 256, 128, false));
	/* 1-D operands: [32] @ [4,32,10] is 4 products of 1x32 @ 32x10 */
	ir_ref v1[2] = {in(IR_BF16, SHAPE(32)), in(IR_BF16, SHAPE(4, 32, 10))};
	render(cg_render_gemm, op(IR_OP_matmul, v1, 2, NULL), &st, "vector a");
	CHECK(gemm_is(&st, 4, 1, 10, 32, 0, 320, 10, false));
	ir_ref v2[2] = {in(IR_F32, SHAPE(3, 7, 5)), in(IR_F32, SHAPE(5))}; /* [3,7] = 21x5 @ 5x1 */
	render(cg_render_gemm, op(IR_OP_matmul, v2, 2, NULL), &st, "vector b");
	CHECK(gemm_is(&st, 1, 21, 1, 5, 0, 0, 0, false));
	ir_ref v3[2] = {in(IR_F32, SHAPE(5)), in(IR_F32, SHAPE(5))};
	render(cg_render_gemm, op(IR_OP_matmul, v3, 2, NULL), &st, "dot");
	CHECK(gemm_is(&st, 1, 1, 1, 5, 0, 0, 0, false));
	/* linear: x [4,7,16] @ w[32,16]^T + b is 28x16 @ (32x16)^T */
	ir_ref li[3] = {in(IR_F16, SHAPE(4, 7, 16)), in(IR_F16, SHAPE(32, 16)), in(IR_F16, SHAPE(32))};
	render(cg_render_gemm, op(IR_OP_linear, li, 3, NULL), &st, "linear");
	CHECK(gemm_is(&st, 1, 28, 32, 16, 0, 0, 0, true) && st.g.bias == li[2] && st.g.b == li[1]);
	render(cg_render_gemm, op(IR_OP_linear, li, 2, NULL), &st, "linear no bias");
	CHECK(gemm_is(&st, 1, 28, 32, 16, 0, 0, 0, true) && st.g.bias == IR_NONE);

	/* a batch broadcast one stride cannot express: a kernel whose batch
	 * offsets are a: 20 per index of dim 0, b: 30 per index of dim 1 */
	for (size_t d = 0; d < SN_COUNT(fdt); d++) {
		ir_ref bb[2] = {in(fdt[d], SHAPE(2, 1, 4, 5)), in(fdt[d], SHAPE(1, 3, 5, 6))};
		if (render(cg_render_gemm, op(IR_OP_matmul, bb, 2, NULL), &st, "broadcast kernel")) {
			CHECK(st.kind == CG_STEP_KERNEL);
			CHECK(st.k.grid[0] == 6 && st.k.block[0] == 256 && st.k.nbufs == 3);
			CHECK(st.k.src && strstr(st.k.src, "a += q * 20L") && strstr(st.k.src, "b += q * 30L"));
			CHECK(st.k.src && strstr(st.k.src, "fmaf(") != NULL);
		}
		step_free(&st);
	}
	/* integers and fp8 take the kernel too; e4m3 on sm_89+ the GEMM
	 * template (mma.sync here: K = 33 is no 16-byte multiple) */
	static const ir_dtype kdt[] = {IR_I32, IR_I64, IR_I8, IR_U8, IR_F8E4M3, IR_F8E5M2};
	for (size_t d = 0; d < SN_COUNT(kdt); d++) {
		char label[64];
		bool tc = kdt[d] == IR_F8E4M3;
		snprintf(label, sizeof label, "matmul %s", ir_dtype_name(kdt[d]));
		ir_ref mm[2] = {in(kdt[d], SHAPE(3, 70, 33)), in(kdt[d], SHAPE(33, 65))};
		if (render(cg_render_gemm, op(IR_OP_matmul, mm, 2, NULL), &st, label)) /* 2x2 tiles x 3 */
			CHECK(st.kind == CG_STEP_KERNEL &&
			      (tc ? st.k.cfg.variant == 1 && strstr(st.k.src, "m16n8k32.row.col.f32.e4m3") != NULL
				  : st.k.grid[0] == 12));
		step_free(&st);
		ir_ref lk[3] = {in(kdt[d], SHAPE(9, 33)), in(kdt[d], SHAPE(65, 33)), in(kdt[d], SHAPE(65))};
		if (render(cg_render_gemm, op(IR_OP_linear, lk, 3, NULL), &st, label))
			CHECK(st.kind == CG_STEP_KERNEL && st.k.nbufs == 4 && (tc || st.k.grid[0] == 2));
		step_free(&st);
		if (tc) { /* sm_80: the SIMT kernel */
			cg_target t80 = {.sm = 80};
			ir_ref m8[2] = {in(kdt[d], SHAPE(3, 70, 33)), in(kdt[d], SHAPE(33, 65))};
			if (render_with(cg_render_gemm, op(IR_OP_matmul, m8, 2, NULL), &t80, NULL, NULL, &st, label))
				CHECK(st.kind == CG_STEP_KERNEL && st.k.grid[0] == 12 && strstr(st.k.src, "SIMT tiled"));
			step_free(&st);
		}
	}
}

/* ---- the GEMM template (cg_gemm_tc.c) ---- */
static int render_gemm_cfg(ir_ref r, const cg_config *want, int sm, const cg_epilogue *epi, cg_step *st, sn_err *e)
{
	memset(st, 0, sizeof *st);
	st->node = r;
	st->epi = epi;
	cg_target t = {.sm = sm};
	return cg_render_gemm(G, r, &t, want, st, e);
}

static void test_gemm_tc(void)
{
	cg_step st;
	sn_err e = {0};
	fresh();
	/* bf16 linear [64,96] x [192,96]^T with a generic epilogue: the
	 * template, the epilogue's buffer before the output */
	ir_ref li[3] = {in(IR_BF16, SHAPE(64, 96)), in(IR_BF16, SHAPE(192, 96)), in(IR_BF16, SHAPE(192))};
	ir_ref r = op(IR_OP_linear, li, 3, NULL);
	ir_ref ex = in(IR_BF16, SHAPE(64, 192));
	sn_buf fn = {0};
	cg_emit_dtype_helpers(&fn, IR_BF16);
	sn_buf_puts(&fn, "__device__ __forceinline__ float sn_epi(float v, long i, const unsigned short *__restrict__ e0)\n"
			 "{\n\treturn v * ld_bf16(e0, i);\n}\n");
	cg_epilogue epi = {.fn = fn.s, .params = (char *)", const unsigned short *__restrict__ e0", .args = (char *)", e0",
			   .nex = 1, .out = ex + 1, .dtype = IR_BF16};
	epi.ex[0] = ex;
	for (int sm = 80; sm <= 90; sm += 10) {
		cg_target t = {.sm = sm};
		if (render_with(cg_render_gemm, r, &t, NULL, &epi, &st, "gemm_tc epilogue")) {
			CHECK(st.kind == CG_STEP_KERNEL && st.k.cfg.variant == (sm == 90 ? 3 : 1));
			/* sm_90: TMA tensor maps over A (bufs[0]) and B (bufs[1]), after the buffers */
			CHECK(st.k.ntmaps == (sm == 90 ? 2u : 0u));
			if (sm == 90) {
				CHECK(st.k.tmaps[0].arg == 0 && st.k.tmaps[0].rank == 2 && st.k.tmaps[0].dims[0] == 96 &&
				      st.k.tmaps[0].dims[1] == 64 && st.k.tmaps[0].strides[1] == 192 &&
				      st.k.tmaps[0].box[0] == 64 && st.k.tmaps[0].dtype == 9 && st.k.tmaps[0].swizzle == 3);
				CHECK(st.k.tmaps[1].arg == 1 && st.k.tmaps[1].dims[0] == 96 && st.k.tmaps[1].dims[1] == 192);
				CHECK(st.k.src && strstr(st.k.src, "const __grid_constant__ sn_tmap tb)") != NULL);
				CHECK(st.k.src && strstr(st.k.src, "cp.async.bulk.tensor.2d") != NULL);
			}
			CHECK(st.k.nbufs == 5 && st.k.bufs[2] == li[2] && st.k.bufs[3] == ex && st.k.bufs[4] == ex + 1);
			CHECK(st.k.src && strstr(st.k.src, "sn_epi(v0, o, e0)") != NULL);
			CHECK(st.k.src && strstr(st.k.src, sm == 90 ? "wgmma.mma_async" : "mma.sync.aligned.m16n8k16") != NULL);
		}
		step_free(&st);
	}
	sn_buf_free(&fn);
	/* without an epilogue a bf16 product is cuBLASLt's; with a config, the template's */
	CHECK(render_gemm_cfg(r, NULL, 90, NULL, &st, &e) == SN_OK && st.kind == CG_STEP_GEMM);
	cg_config ok = {.variant = 1, .tile_m = 64, .tile_n = 64, .warps = 8, .stages = 3, .split_k = 2};
	CHECK(render_gemm_cfg(r, &ok, 90, NULL, &st, &e) == SN_OK && st.kind == CG_STEP_KERNEL &&
	      st.k.cfg.split_k == 2 && st.k.cfg.warps == 8 && st.k.block[0] == 256);
	step_free(&st);
	/* configs it cannot build are refused, naming what */
	static const struct {
		cg_config c;
		int sm;
		const char *what;
	} bad[] = {
		{{.variant = 4}, 90, "variant 4 is not 1"},
		{{.variant = 3}, 80, "wgmma needs sm_90"},
		{{.variant = 3, .tile_m = 256}, 90, "tile_m 256 is not 64 or 128"},
		{{.variant = 3, .tile_m = 128, .warps = 8}, 90, "warps 8: tile_m 128 takes 12"},
		{{.variant = 3, .stages = 9}, 90, "stages 9 is not in [2, 8]"},
		{{.variant = 2}, 80, "wgmma needs sm_90"},
		{{.variant = 3, .split_k = 2}, 90, "split_k is not built for the TMA variant"},
		{{.variant = 2, .tile_m = 128, .warps = 4}, 90, "tile_m 128 must be 64 rows per warpgroup"},
		{{.variant = 1, .tile_k = 48}, 90, "tile_k 48"},
		{{.variant = 1, .tile_m = 256, .tile_n = 256, .warps = 2}, 90, "cannot split a 256x256 tile"},
		{{.variant = 1, .stages = 9}, 90, "stages 9 is not in [2, 8]"},
		{{.block = 128}, 90, "block is not a config field of the GEMM template"},
	};
	for (size_t i = 0; i < SN_COUNT(bad); i++) {
		e = (sn_err){0};
		int rc = render_gemm_cfg(r, &bad[i].c, bad[i].sm, NULL, &st, &e);
		if (rc != SN_EUSAGE || !strstr(e.msg, bad[i].what))
			fprintf(stderr, "gemm_tc refusal %zu: wanted \"%s\", got %d \"%s\"\n", i, bad[i].what, rc, e.msg);
		CHECK(rc == SN_EUSAGE && strstr(e.msg, bad[i].what) != NULL);
		step_free(&st);
	}
	/* f32 takes the template only under TF32; f32 with a config and no TF32 is refused */
	ir_ref fl[2] = {in(IR_F32, SHAPE(8, 16)), in(IR_F32, SHAPE(16, 24))};
	ir_ref fr = op(IR_OP_matmul, fl, 2, NULL);
	e = (sn_err){0};
	CHECK(render_gemm_cfg(fr, &ok, 90, NULL, &st, &e) == SN_EUSAGE);
	step_free(&st);
}

/* ---- conv2d ---- */
typedef struct cspec {
	int64_t n, c, h, w, o, k, stride, pad, dil, groups;
	bool bias;
} cspec;

/* conv2d of x [n,c,h,w] (or NHWC) with o filters of k x k */
static ir_ref conv_node(const cspec *c, ir_dtype t, ir_layout lay)
{
	bool nhwc = lay == IR_NHWC;
	ir_ref ins[3];
	ins[0] = in(t, nhwc ? SHAPE(c->n, c->h, c->w, c->c) : SHAPE(c->n, c->c, c->h, c->w));
	int64_t cg = c->c / c->groups;
	ins[1] = in(t, nhwc ? SHAPE(c->o, c->k, c->k, cg) : SHAPE(c->o, cg, c->k, c->k));
	ins[2] = in(t, SHAPE(c->o));
	ir_attrs a = attrs(IR_OP_conv2d);
	a.layout = lay;
	a.stride = INTS(c->stride, c->stride);
	a.pad = INTS(c->pad, c->pad, c->pad, c->pad);
	a.dilation = INTS(c->dil, c->dil);
	a.groups = c->groups;
	return op(IR_OP_conv2d, ins, c->bias ? 3 : 2, &a);
}

/* A conv's render refused with SN_EUSAGE whose message names `field`. */
static void refused(ir_ref r, const cg_target *t, cg_config want, const char *field)
{
	cg_step st;
	memset(&st, 0, sizeof st);
	st.node = r;
	sn_err e = {0};
	int rc = cg_render_conv(G, r, t, &want, &st, &e);
	if (rc != SN_EUSAGE || !strstr(e.msg, field))
		fprintf(stderr, "conv config refusal: wanted SN_EUSAGE naming %s, got %d \"%s\"\n", field, rc, e.msg);
	CHECK(rc == SN_EUSAGE && strstr(e.msg, field) != NULL);
	step_free(&st);
}

/* The hand-written fusion epilogue of the tests: relu(v) + e0[i], e0 of
 * dtype t, stored as t. */
static cg_epilogue relu_add_epi(ir_dtype t, ir_ref e0, ir_ref out)
{
	sn_buf fn = {0};
	cg_emit_dtype_helpers(&fn, t);
	sn_buf_printf(&fn, "__device__ __forceinline__ float sn_epi(float v, long i, const %s *__restrict__ e0)\n"
			   "{\n\treturn fmaxf(v, 0.0f) + ld_%s(e0, i);\n}\n",
		      cg_ctype(t), ir_dtype_name(t));
	char params[128];
	snprintf(params, sizeof params, ", const %s *__restrict__ e0", cg_ctype(t));
	cg_epilogue epi = {.fn = fn.s, .params = strdup(params), .args = strdup(", e0"), .nex = 1, .out = out,
			   .dtype = t};
	epi.ex[0] = e0;
	return epi;
}

static void epi_free(cg_epilogue *epi)
{
	free(epi->fn);
	free(epi->params);
	free(epi->args);
}

static void test_conv(void)
{
	static const cspec cases[] = {
		{1, 3, 224, 224, 64, 7, 2, 3, 1, 1, false},  /* ResNet stem: K = 147 */
		{1, 64, 56, 56, 256, 1, 1, 0, 1, 1, false},  /* 1x1 expand */
		{1, 128, 28, 28, 128, 3, 1, 1, 1, 1, false}, /* 3x3 */
		{1, 256, 56, 56, 512, 1, 2, 0, 1, 1, false}, /* 1x1 stride-2 downsample */
		{2, 20, 9, 11, 36, 3, 2, 1, 2, 2, true},     /* groups, dilation, bias, odd sizes */
		{1, 16, 10, 10, 16, 3, 1, 1, 1, 16, true},   /* depthwise */
		{1, 1, 5, 5, 70, 2, 1, 0, 1, 1, true},       /* C = 1, edge tiles in N */
		{3, 128, 9, 7, 200, 3, 2, 2, 2, 4, true},    /* 4 groups of 32 -> 50, dilated, odd sizes */
		{1, 24, 13, 13, 40, 5, 1, 2, 1, 1, true},    /* C = 24 (no multiple of the 32-wide k slice), 5x5 */
		{2, 20, 11, 9, 30, 3, 1, 1, 1, 1, true},     /* C = 20: no multiple of 8 */
	};
	char label[128];
	cg_target h90 = {.sm = 90}, h80 = {.sm = 80}, t90 = {.sm = 90, .tf32 = true};
	for (size_t c = 0; c < SN_COUNT(cases); c++)
		for (size_t d = 0; d < SN_COUNT(fdt); d++)
			for (int l = 0; l < 2; l++) {
				fresh();
				ir_layout lay = l ? IR_NHWC : IR_NCHW;
				snprintf(label, sizeof label, "conv2d case %zu %s %s", c, ir_dtype_name(fdt[d]),
					 ir_layout_name(lay));
				build(cg_render_conv, conv_node(&cases[c], fdt[d], lay), label);
			}
	cg_step st;
	/* the tensor-core pipeline, every config shape the heuristics and
	 * the autotuner may ask for, f16/bf16 and tf32, sm_80 and sm_90 */
	static const cg_config tcs[] = {
		{.variant = 4, .tile_m = 128, .tile_n = 128, .tile_k = 32, .warps = 8, .stages = 4},
		{.variant = 4, .tile_m = 128, .tile_n = 64, .tile_k = 64, .warps = 4, .stages = 3},
		{.variant = 4, .tile_m = 256, .tile_n = 128, .tile_k = 32, .warps = 8, .stages = 3},
		{.variant = 4, .tile_m = 64, .tile_n = 32, .tile_k = 32, .warps = 2, .stages = 2},
		{.variant = 4, .tile_m = 32, .tile_n = 256, .tile_k = 64, .warps = 8, .stages = 2},
		{.variant = 4, .tile_m = 64, .tile_n = 64, .tile_k = 64, .warps = 8, .stages = 3, .split_k = 2},
		{.variant = 4, .tile_m = 128, .tile_n = 64, .tile_k = 64, .warps = 16, .stages = 3, .split_k = 4},
	};
	static const size_t tc_cases[] = {1, 2, 3, 7, 8};
	for (size_t ci = 0; ci < SN_COUNT(tc_cases); ci++)
		for (size_t d = 0; d < SN_COUNT(fdt); d++)
			for (size_t k = 0; k < SN_COUNT(tcs); k++) {
				fresh();
				ir_ref r = conv_node(&cases[tc_cases[ci]], fdt[d], IR_NHWC);
				cg_config want = tcs[k];
				if (fdt[d] == IR_F32)
					want.tile_k /= 2; /* the same bytes per row */
				snprintf(label, sizeof label, "conv2d tc case %zu %s %dx%dx%d w%d s%d", tc_cases[ci],
					 fdt[d] == IR_F32 ? "tf32" : ir_dtype_name(fdt[d]), want.tile_m, want.tile_n, want.tile_k,
					 want.warps, want.stages);
				if (render_with(cg_render_conv, r, fdt[d] == IR_F32 ? &t90 : k % 2 ? &h80 : &h90, &want, NULL,
						&st, label)) {
					CHECK(strstr(st.k.src, "cp.async.cg.shared.global") && strstr(st.k.src, "ldmatrix"));
					CHECK(strstr(st.k.src, fdt[d] == IR_F32 ? "m16n8k8.row.col.f32.tf32" : "m16n8k16") != NULL);
					CHECK(st.k.cfg.tile_m == want.tile_m && st.k.cfg.stages == want.stages &&
					      st.k.block[0] == 32u * (unsigned)want.warps && st.k.cfg.split_k == want.split_k);
					/* k groups: each its share of a slice's k-steps, sums added in shared memory */
					CHECK(!want.split_k == !strstr(st.k.src, "const int kg = warp / "));
					CHECK(!want.split_k == !strstr(st.k.src, "float2 o_ = *p_;"));
				}
				step_free(&st);
			}
	/* the 3x3 case by default: M = 784 pixels, too few 128x128 tiles to
	 * fill 132 SMs, so 64x64: 13 x 2 blocks of 4 warps, 3 stages of
	 * (64 + 64) rows x (128 + 16) bytes */
	fresh();
	ir_ref r = conv_node(&cases[2], IR_F16, IR_NHWC);
	const cg_config v4 = {.variant = 4};
	if (render_with(cg_render_conv, r, &h90, &v4, NULL, &st, "conv tc")) {
		CHECK(st.k.grid[0] == 13 && st.k.grid[1] == 2 && st.k.grid[2] == 1 && st.k.block[0] == 128);
		CHECK(st.k.smem == 3 * 128 * 144 && st.k.cfg.variant == 4 && st.k.cfg.tile_k == 64);
		CHECK(strstr(st.k.src, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") != NULL);
		CHECK(strstr(st.k.src, "#define KK 1152") != NULL); /* K = 128 * 3 * 3 */
		CHECK(st.k.nbufs == 3 && st.k.bufs[2] == r);
	}
	step_free(&st);
	/* sm_90's wgmma kernel's own default for it (variant 7 asked for; the
	 * default is split over clusters, below); M = 784 fills few SMs
	 * with any tile, so the most blocks: 13 x 2 tiles of 64x64 (one
	 * warpgroup of m64n64), 6 stages of 128 rows x 128 bytes in the
	 * 128-byte swizzle, 1024 bytes for its alignment */
	const cg_config v7 = {.variant = 7};
	if (render_with(cg_render_conv, r, &h90, &v7, NULL, &st, "conv wg")) {
		CHECK(st.k.cfg.variant == 7 && st.k.cfg.tile_m == 64 && st.k.cfg.tile_n == 64 && st.k.cfg.tile_k == 64);
		CHECK(st.k.grid[0] == 13 && st.k.grid[1] == 2 && st.k.block[0] == 128 && st.k.smem == 6 * 128 * 128 + 1024);
		CHECK(strstr(st.k.src, "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16") != NULL);
		CHECK(strstr(st.k.src, "#define DESC_K ((1ull << 62) | (64ull << 32) | (1ull << 16))") != NULL);
		CHECK(strstr(st.k.src, "fence.proxy.async.shared::cta") && strstr(st.k.src, "__shfl_sync(0xffffffffu, tid >> 7, 0)"));
		CHECK(!strstr(st.k.src, "mma.sync") && !strstr(st.k.src, "float2 o_ = *p_;"));
	}
	step_free(&st);
	/* k groups of warpgroups add their sums in shared memory */
	const cg_config wk = {.variant = 7, .tile_m = 64, .tile_n = 128, .warps = 8, .stages = 4, .split_k = 2};
	if (render_with(cg_render_conv, r, &h90, &wk, NULL, &st, "conv wg k groups")) {
		CHECK(st.k.cfg.split_k == 2 && st.k.cfg.tile_m == 64 && st.k.block[0] == 256 && st.k.grid[0] == 13);
		CHECK(strstr(st.k.src, "float2 o_ = *p_;") && strstr(st.k.src, "#define KPG 2"));
	}
	step_free(&st);
	/* ResNet-50's 3x3 convs at batch 32 by default (the sweep in
	 * PERF.md): layer 2 (M = 25088) 256x128 tiles of 8 warps, 3 stages
	 * (162 KB: they fit sm_80 too); layer 4 (M = 1568) 128x64 of 8 warps in two
	 * k groups */
	{
		const struct {
			cspec c;
			const cg_target *t;
			int tm, tn, warps, stages, wk;
		} dflt[] = {
			{{32, 128, 28, 28, 128, 3, 1, 1, 1, 1, true}, &h90, 256, 128, 8, 3, 0},
			{{32, 128, 28, 28, 128, 3, 1, 1, 1, 1, true}, &h80, 256, 128, 8, 3, 0},
			{{32, 256, 14, 14, 256, 3, 1, 1, 1, 1, true}, &h90, 128, 128, 8, 4, 0},
			{{32, 512, 7, 7, 512, 3, 1, 1, 1, 1, true}, &h90, 128, 64, 8, 3, 2},
			{{32, 64, 56, 56, 64, 3, 1, 1, 1, 1, true}, &h90, 128, 64, 4, 3, 0},
		};
		for (size_t i = 0; i < SN_COUNT(dflt); i++) {
			fresh();
			r = conv_node(&dflt[i].c, IR_BF16, IR_NHWC);
			snprintf(label, sizeof label, "conv tc default %zu", i);
			if (render_with(cg_render_conv, r, dflt[i].t, &v4, NULL, &st, label))
				CHECK(st.k.cfg.tile_m == dflt[i].tm && st.k.cfg.tile_n == dflt[i].tn &&
				      st.k.cfg.warps == dflt[i].warps && st.k.cfg.stages == dflt[i].stages &&
				      st.k.cfg.split_k == dflt[i].wk);
			step_free(&st);
		}
		fresh();
	}
	/* ResNet-50's convs at batch 32 on sm_90 by default (the sweeps in
	 * PERF.md, 2026-11-23 sessions 2 and 3): layer 2's 3x3 (M = 25088)
	 * 192x128 of three consumer warpgroups and a producer (131 blocks);
	 * layer 3's (M = 6272) 128x128 of two; layer 4's (M = 1568) variant 7's
	 * 64x128 of one warpgroup (100 blocks); layer 1's 64 channels 128x64
	 * of one consumer warpgroup (two blocks per SM). Variant 8's blocks
	 * are the consumers' warps and the producer's 128 threads */
	{
		const struct {
			cspec c;
			int variant, tm, tn, warps, stages;
		} dflt[] = {
			{{32, 128, 28, 28, 128, 3, 1, 1, 1, 1, true}, 8, 192, 128, 12, 3},
			{{32, 256, 14, 14, 256, 3, 1, 1, 1, 1, true}, 8, 128, 128, 8, 6},
			{{32, 512, 7, 7, 512, 3, 1, 1, 1, 1, true}, 7, 64, 128, 4, 4},
			{{32, 64, 56, 56, 64, 3, 1, 1, 1, 1, true}, 8, 128, 64, 4, 4},
		};
		for (size_t i = 0; i < SN_COUNT(dflt); i++) {
			fresh();
			r = conv_node(&dflt[i].c, IR_BF16, IR_NHWC);
			snprintf(label, sizeof label, "conv wg default %zu", i);
			if (render_with(cg_render_conv, r, &h90, NULL, NULL, &st, label)) {
				CHECK(st.k.cfg.variant == dflt[i].variant && st.k.cfg.tile_m == dflt[i].tm &&
				      st.k.cfg.tile_n == dflt[i].tn && st.k.cfg.warps == dflt[i].warps &&
				      st.k.cfg.stages == dflt[i].stages && !st.k.cfg.split_k);
				CHECK(st.k.block[0] == 32u * (unsigned)dflt[i].warps + (dflt[i].variant == 8 ? 128u : 0u));
				/* variant 8: the producer's copies complete on mbarriers */
				CHECK((dflt[i].variant == 8) == !!strstr(st.k.src, "cp.async.mbarrier.arrive.noinc"));
			}
			step_free(&st);
		}
		/* in f32 under TF32 variant 8 is refused (its producer cannot round
		 * what it does not see land): variant 7 stays the default */
		fresh();
		r = conv_node(&dflt[0].c, IR_F32, IR_NHWC);
		cg_target h90t = h90;
		h90t.tf32 = true;
		if (render_with(cg_render_conv, r, &h90t, NULL, NULL, &st, "conv wg default tf32"))
			CHECK(st.k.cfg.variant == 7);
		step_free(&st);
		refused(r, &h90t, (cg_config){.variant = 8}, "f16 and bf16");
		fresh();
	}
	/* ResNet-50 at batch 1 on sm_90 (PERF.md, 2026-11-23 session 4): where
	 * the batch-32 default fills under half the SMs, narrow tiles of one
	 * warpgroup, split over the k of clusters (variant 9) where the
	 * estimate says so; the small 1x1 products stay kernels (no cuBLASLt) */
	{
		const struct {
			cspec c;
			int variant, tm, tn, sk;
		} one[] = {
			{{1, 512, 7, 7, 512, 3, 1, 1, 1, 1, true}, 9, 64, 32, 8},	  /* layer 4's 3x3: 72 slices, 128 blocks */
			{{1, 256, 14, 14, 256, 3, 1, 1, 1, 1, true}, 9, 64, 64, 6},	  /* layer 3's: 36, 96 */
			{{1, 128, 28, 28, 128, 3, 1, 1, 1, 1, true}, 9, 64, 64, 5},	  /* layer 2's: 18, 130 */
			{{1, 64, 56, 56, 64, 3, 1, 1, 1, 1, true}, 7, 64, 32, 0},	  /* layer 1's: 9, 98 blocks of one */
			{{1, 2048, 7, 7, 512, 1, 1, 0, 1, 1, true}, 9, 64, 32, 8},	  /* layer 4's 1x1 2048-512 */
			{{1, 1024, 14, 14, 256, 1, 1, 0, 1, 1, true}, 9, 64, 32, 4},   /* layer 3's 1x1 1024-256 */
			{{1, 1024, 14, 14, 2048, 1, 2, 0, 1, 1, true}, 9, 64, 64, 4},  /* layer 4's 1x1/2 */
			{{1, 512, 7, 7, 2048, 1, 1, 0, 1, 1, true}, 7, 64, 32, 0},	  /* layer 4's 1x1 512-2048: 64 blocks */
		};
		for (size_t i = 0; i < SN_COUNT(one); i++) {
			fresh();
			r = conv_node(&one[i].c, IR_BF16, IR_NHWC);
			CHECK(!cg_conv_is_gemm(G, r, &h90));
			snprintf(label, sizeof label, "conv wg batch 1 default %zu", i);
			if (render_with(cg_render_conv, r, &h90, NULL, NULL, &st, label)) {
				CHECK(st.k.cfg.variant == one[i].variant && st.k.cfg.tile_m == one[i].tm &&
				      st.k.cfg.tile_n == one[i].tn && st.k.cfg.split_k == one[i].sk);
				/* a cluster of split_k blocks along x, summed through DSMEM */
				CHECK((one[i].sk > 1) == !!strstr(st.k.src, "__cluster_dims__"));
				CHECK((one[i].sk > 1) == !!strstr(st.k.src, "ld.shared::cluster.v4.f32"));
				int64_t mt = (one[i].c.n * (one[i].c.h / one[i].c.stride) * (one[i].c.w / one[i].c.stride) + 63) / 64;
				CHECK(st.k.grid[0] == (unsigned)(mt * (one[i].sk > 1 ? one[i].sk : 1)));
			}
			step_free(&st);
		}
		/* at batch 32 the same 1x1 is a cuBLASLt product, and f32 (no
		 * wgmma without tf32) stays one at batch 1 */
		cspec b32 = one[4].c;
		b32.n = 32;
		fresh();
		CHECK(cg_conv_is_gemm(G, conv_node(&b32, IR_BF16, IR_NHWC), &h90));
		fresh();
		CHECK(cg_conv_is_gemm(G, conv_node(&one[4].c, IR_F32, IR_NHWC), &h90));
		/* variant 9 asked for: bf16, f16 and f32 under TF32, the scalar
		 * way out (odd channels), a fusion-free partial tile; refused
		 * outside 2 to 8 blocks */
		cg_target h90t = h90;
		h90t.tf32 = true;
		const struct {
			cspec c;
			ir_dtype t;
			cg_config want;
		} ask[] = {
			{{1, 256, 14, 14, 256, 3, 1, 1, 1, 1, true},
			 IR_BF16,
			 {.variant = 9, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 4, .split_k = 4}},
			{{2, 64, 9, 9, 96, 3, 1, 1, 1, 1, false},
			 IR_F16,
			 {.variant = 9, .tile_m = 128, .tile_n = 96, .warps = 8, .stages = 3, .split_k = 3}},
			{{1, 128, 7, 9, 204, 3, 2, 1, 1, 4, true}, IR_BF16, {.variant = 9, .split_k = 2}},
			{{1, 512, 7, 7, 512, 3, 1, 1, 1, 1, true}, IR_F32, {.variant = 9}},
			{{1, 256, 14, 14, 256, 1, 1, 0, 1, 1, true},
			 IR_F32,
			 {.variant = 9, .tile_m = 64, .tile_n = 32, .warps = 4, .stages = 6, .split_k = 8}},
		};
		for (size_t i = 0; i < SN_COUNT(ask); i++) {
			fresh();
			r = conv_node(&ask[i].c, ask[i].t, IR_NHWC);
			snprintf(label, sizeof label, "conv wg split asked %zu", i);
			if (render_with(cg_render_conv, r, ask[i].t == IR_F32 ? &h90t : &h90, &ask[i].want, NULL, &st, label))
				CHECK(st.k.cfg.variant == 9 && st.k.cfg.split_k >= 2 && st.k.cfg.split_k <= 8 &&
				      (!ask[i].want.split_k || st.k.cfg.split_k == ask[i].want.split_k) &&
				      strstr(st.k.src, "__cluster_dims__") != NULL);
			step_free(&st);
		}
		fresh();
		r = conv_node(&ask[0].c, IR_BF16, IR_NHWC);
		refused(r, &h90, (cg_config){.variant = 9, .split_k = 9}, "[2, 8]");
		refused(r, &h90, (cg_config){.variant = 9, .split_k = 1}, "split_k 1");
		refused(r, &h80, (cg_config){.variant = 9}, "sm_90");
		fresh();
	}
	/* ResNet-50's 1x1 expand at batch 32 is a cuBLASLt product by
	 * default: [100352, 64] x [256, 64]^T with its bias */
	cspec big = cases[1];
	big.n = 32;
	r = conv_node(&big, IR_BF16, IR_NHWC);
	memset(&st, 0, sizeof st);
	st.node = r;
	sn_err ge = {0};
	CHECK(cg_render_conv(G, r, &h90, NULL, &st, &ge) == SN_OK && st.kind == CG_STEP_GEMM);
	CHECK(st.g.m == 100352 && st.g.n == 256 && st.g.k == 64 && st.g.trans_b && st.g.batch == 1 &&
	      st.g.a == G->nodes[r].in[0] && st.g.b == G->nodes[r].in[1] && st.g.out == r && st.g.c == IR_NONE &&
	      st.g.dtype == IR_BF16 && st.g.bias == (G->nodes[r].nin > 2 ? G->nodes[r].in[2] : IR_NONE));
	CHECK(cg_conv_is_gemm(G, r, &h90));
	step_free(&st);
	/* as the tensor-core kernel (a config asked for): 784 x 2 tiles of
	 * 128x128, 8 warps; a 1x1 conv: 4 stages of 256 rows x (64 + 16) bytes */
	if (render_with(cg_render_conv, r, &h90, &v4, NULL, &st, "conv tc big"))
		CHECK(st.k.grid[0] == 784 && st.k.grid[1] == 2 && st.k.block[0] == 256 && st.k.smem == 4 * 256 * 80);
	step_free(&st);
	/* not products: stride 2, padding, a 3x3 window, NCHW, groups; and
	 * any 1x1 conv once the target keeps convs on kernels */
	CHECK(!cg_conv_is_gemm(G, conv_node(&cases[3], IR_BF16, IR_NHWC), &h90));
	CHECK(!cg_conv_is_gemm(G, conv_node(&cases[2], IR_BF16, IR_NHWC), &h90));
	CHECK(!cg_conv_is_gemm(G, conv_node(&cases[1], IR_BF16, IR_NCHW), &h90));
	CHECK(!cg_conv_is_gemm(G, conv_node(&cases[7], IR_BF16, IR_NHWC), &h90));
	cg_target keep = {.sm = 90, .conv_kernels = true};
	CHECK(!cg_conv_is_gemm(G, r, &keep));
	/* NCHW: the register-double-buffered mma kernel, 16-byte B loads */
	r = conv_node(&cases[2], IR_BF16, IR_NCHW);
	if (render(cg_render_conv, r, &st, "conv mma bf16")) {
		CHECK(strstr(st.k.src, "m16n8k16.row.col.f32.bf16.bf16.f32") != NULL && !strstr(st.k.src, "cp.async"));
		CHECK(strstr(st.k.src, "uint4") != NULL && st.k.cfg.variant == 3);
	}
	step_free(&st);
	/* f32: SIMT, exact FMA, unless the target says tf32 (then the
	 * pipeline in NHWC); grouped: grid z = groups, tiles per group */
	r = conv_node(&cases[4], IR_F32, IR_NCHW);
	if (render(cg_render_conv, r, &st, "conv simt")) {
		/* Ho = (9 + 2 - 5) / 2 + 1 = 4, Wo = (11 + 2 - 5) / 2 + 1 = 5: M = 40 -> 1 tile; 18 channels per group -> 1 tile; 2 groups */
		CHECK(st.k.grid[0] == 1 && st.k.grid[1] == 1 && st.k.grid[2] == 2 && st.k.block[0] == 256);
		CHECK(strstr(st.k.src, "fmaf(") && !strstr(st.k.src, "mma.sync"));
		CHECK(st.k.nbufs == 4 && strstr(st.k.src, "#define KK 90") != NULL); /* 10 * 3 * 3 */
	}
	step_free(&st);
	r = conv_node(&cases[2], IR_F32, IR_NHWC);
	if (render_with(cg_render_conv, r, &t90, &v4, NULL, &st, "conv tf32"))
		CHECK(strstr(st.k.src, "cvt.rna.tf32.f32") && strstr(st.k.src, "m16n8k8") && st.k.cfg.tile_k == 32);
	step_free(&st);
	/* sm_90's default under TF32: wgmma's tf32 form, operands rounded in
	 * shared memory; M = 784 fills few SMs: split over a cluster (variant 9) */
	if (render_with(cg_render_conv, r, &t90, NULL, NULL, &st, "conv wg tf32"))
		CHECK(strstr(st.k.src, "cvt.rna.tf32.f32") && strstr(st.k.src, "k8.f32.tf32.tf32") && st.k.cfg.tile_k == 32 &&
		      st.k.cfg.variant == 9 && strstr(st.k.src, "__cluster_dims__"));
	step_free(&st);
	/* B (the weights) is rounded in the kernel unless the weight image
	 * holds it rounded: an f32 param whose every use is a conv's weight */
	for (int p = 0; p < 2; p++) {
		ir_graph *g2 = ir_graph_new();
		sn_err e2 = {0};
		ir_shape xs = {4, {2, 9, 9, 16}}, ws = {4, {32, 3, 3, 16}};
		ir_ref x2 = ir_add_input(g2, "x", IR_F32, &xs, &e2);
		ir_ref w2 = p ? ir_add_param(g2, "w", IR_F32, &ws, &e2) : ir_add_input(g2, "w", IR_F32, &ws, &e2);
		ir_attrs a2 = attrs(IR_OP_conv2d);
		a2.layout = IR_NHWC;
		a2.stride = INTS(1, 1);
		a2.pad = INTS(1, 1, 1, 1);
		a2.dilation = INTS(1, 1);
		a2.groups = 1;
		ir_ref y2 = ir_add(g2, IR_OP_conv2d, (ir_ref[]){x2, w2}, 2, &a2, &e2);
		cg_step s2 = {.node = y2};
		CHECK(y2 != IR_NONE && cg_render_conv(g2, y2, &t90, NULL, &s2, &e2) == SN_OK && s2.k.cfg.variant == 7);
		CHECK(s2.k.src && strstr(s2.k.src, "tf32_round(sa_ + (r0") &&
		      !strstr(s2.k.src, "tf32_round(sa_ + TM * 128") == (p == 1));
		free(s2.k.src);
		ir_graph_free(g2);
	}
	if (render(cg_render_conv, r, &st, "conv f32 no tf32"))
		CHECK(!strstr(st.k.src, "mma.sync"));
	step_free(&st);
	/* depthwise: NHWC with 16-byte loads of 8 channels; multiplier 2 and
	 * NCHW a channel per thread */
	r = conv_node(&cases[5], IR_BF16, IR_NHWC);
	if (render(cg_render_conv, r, &st, "conv depthwise")) {
		CHECK(strstr(st.k.src, "depthwise") && strstr(st.k.src, "#define VC 8") && st.k.cfg.variant == 5);
		CHECK(st.k.grid[0] == (100 * 2 + 255) / 256); /* 100 pixels x 16 / 8 */
	}
	step_free(&st);
	cspec dm2 = {2, 24, 10, 10, 48, 3, 2, 1, 1, 24, false};
	for (int l = 0; l < 2; l++) {
		r = conv_node(&dm2, IR_F32, l ? IR_NHWC : IR_NCHW);
		if (render(cg_render_conv, r, &st, "conv depthwise x2"))
			CHECK(strstr(st.k.src, "depthwise") && strstr(st.k.src, "#define VC 1"));
		step_free(&st);
	}
	/* integers: the direct kernel, one thread per output */
	static const ir_dtype idt[] = {IR_I32, IR_I8, IR_I64};
	for (size_t d = 0; d < SN_COUNT(idt); d++) {
		r = conv_node(&cases[4], idt[d], d ? IR_NHWC : IR_NCHW);
		if (render(cg_render_conv, r, &st, "conv int"))
			CHECK(strstr(st.k.src, "direct") != NULL && st.k.grid[0] == (2 * 36 * 4 * 5 + 255) / 256);
		step_free(&st);
	}
	/* before sm_80 there is no bf16 mma: the SIMT kernel */
	r = conv_node(&cases[1], IR_BF16, IR_NCHW);
	memset(&st, 0, sizeof st);
	cg_target old = {.sm = 75};
	sn_err e = {0};
	CHECK(cg_render_conv(G, r, &old, NULL, &st, &e) == SN_OK && st.k.src && !strstr(st.k.src, "mma.sync"));
	step_free(&st);
	/* configs that cannot be honoured are refused, naming the field */
	fresh();
	r = conv_node(&cases[2], IR_BF16, IR_NHWC);
	refused(r, &h80, (cg_config){.variant = 4, .tile_k = 48}, "tile_k");
	refused(r, &h80, (cg_config){.tile_m = 96}, "tile_m");
	refused(r, &h80, (cg_config){.tile_n = 512}, "tile_n");
	refused(r, &h80, (cg_config){.warps = 3}, "warps");
	refused(r, &h80, (cg_config){.tile_m = 32, .tile_n = 32, .warps = 16}, "warps");
	refused(r, &h80, (cg_config){.stages = 9}, "stages");
	refused(r, &h80, (cg_config){.tile_m = 256, .tile_n = 256, .tile_k = 64, .warps = 16, .stages = 8}, "stages");
	refused(r, &h80, (cg_config){.tile_m = 256, .tile_n = 128, .tile_k = 64, .warps = 8, .stages = 4}, "stages");
	refused(r, &h80, (cg_config){.block = 256}, "block");
	refused(r, &h80, (cg_config){.split_k = 3}, "split_k");
	refused(r, &h80, (cg_config){.warps = 2, .split_k = 4}, "split_k");
	refused(r, &h80, (cg_config){.tile_k = 32, .split_k = 4}, "split_k");
	refused(r, &h80, (cg_config){.tile_m = 32, .tile_n = 32, .warps = 16, .split_k = 2}, "warps");
	/* the wgmma kernel's (sm_90's default for these convs) */
	refused(r, &h90, (cg_config){.tile_k = 32}, "tile_k");
	refused(r, &h90, (cg_config){.warps = 2}, "warps");
	refused(r, &h90, (cg_config){.tile_m = 96}, "tile_m");
	refused(r, &h90, (cg_config){.tile_m = 128, .warps = 16}, "tile_m");
	refused(r, &h90, (cg_config){.tile_n = 40}, "tile_n");
	refused(r, &h90, (cg_config){.tile_n = 512}, "tile_n");
	refused(r, &h90, (cg_config){.tile_m = 256, .tile_n = 256, .warps = 8}, "accumulators");
	refused(r, &h90, (cg_config){.stages = 2}, "stages");
	refused(r, &h90, (cg_config){.tile_m = 128, .tile_n = 256, .warps = 8, .stages = 6}, "shared memory");
	refused(r, &h90, (cg_config){.warps = 8, .split_k = 3}, "split_k");
	refused(r, &h90, (cg_config){.warps = 4, .split_k = 2}, "split_k");
	refused(r, &h80, (cg_config){.variant = 7}, "sm_90");
	refused(r, &h80, (cg_config){.variant = 8}, "sm_90");
	refused(r, &h90, (cg_config){.variant = 8, .split_k = 2, .warps = 8}, "split_k");
	refused(r, &h90, (cg_config){.variant = 8, .warps = 16}, "warps");
	refused(r, &h90, (cg_config){.variant = 8, .stages = 1}, "stages");
	refused(conv_node(&cases[2], IR_BF16, IR_NCHW), &h90, (cg_config){.variant = 7}, "NHWC");
	refused(conv_node(&cases[2], IR_F32, IR_NHWC), &h90, (cg_config){.variant = 7}, "tf32");
	refused(r, &h90, (cg_config){.variant = 5}, "variant 5");
	refused(r, &h90, (cg_config){.variant = 10}, "variant 10");
	refused(r, &h90, (cg_config){.variant = 1, .tile_m = 64}, "tile_m");
	refused(conv_node(&cases[2], IR_BF16, IR_NCHW), &h90, (cg_config){.variant = 4}, "variant 4");
	refused(conv_node(&cases[9], IR_BF16, IR_NHWC), &h90, (cg_config){.variant = 4}, "multiple of 8");
	refused(conv_node(&cases[2], IR_F32, IR_NHWC), &h90, (cg_config){.variant = 4}, "tf32");
	/* every older variant still renders when asked for */
	for (int v = 1; v <= 3; v++) {
		cg_config want = {.variant = v};
		snprintf(label, sizeof label, "conv2d variant %d", v);
		if (render_with(cg_render_conv, r, &h90, &want, NULL, &st, label))
			CHECK(st.k.cfg.variant == v);
		step_free(&st);
	}
	/* the fusion epilogue, relu(v) + e0[i], on every kernel: the
	 * epilogue's buffers follow the operands, its output replaces the
	 * conv's, its function appears once; the tensor-core kernel applies
	 * it to each staged element before its 16-byte store where the
	 * channels allow (v16), else per element in the store */
	static const struct {
		size_t c;
		ir_dtype t;
		ir_layout lay;
		int variant;
		bool v16;
	} ep[] = {
		{2, IR_BF16, IR_NHWC, 4, true}, {7, IR_F16, IR_NHWC, 4, false}, {2, IR_F32, IR_NHWC, 4, true},
		{2, IR_BF16, IR_NCHW, 3, false}, {4, IR_F32, IR_NCHW, 2, false}, {6, IR_BF16, IR_NHWC, 1, false},
		{5, IR_BF16, IR_NHWC, 5, false}, {5, IR_F32, IR_NCHW, 5, false},
	};
	for (size_t i = 0; i < SN_COUNT(ep); i++) {
		fresh();
		r = conv_node(&cases[ep[i].c], ep[i].t, ep[i].lay);
		ir_ref res = in(ep[i].t, G->nodes[r].shape);
		ir_ref sum = op(IR_OP_add, (ir_ref[]){r, res}, 2, NULL);
		cg_epilogue epi = relu_add_epi(ep[i].t, res, sum);
		cg_config want = {.variant = ep[i].variant};
		snprintf(label, sizeof label, "conv2d epilogue case %zu %s %s variant %d", ep[i].c, ir_dtype_name(ep[i].t),
			 ir_layout_name(ep[i].lay), ep[i].variant);
		if (render_with(cg_render_conv, r, ep[i].t == IR_F32 ? &t90 : &h90, &want, &epi, &st, label)) {
			uint32_t nin = G->nodes[r].nin;
			CHECK(st.k.nbufs == nin + 2 && st.k.bufs[nin] == res && st.k.bufs[nin + 1] == sum);
			const char *fn = strstr(st.k.src, "float sn_epi(");
			CHECK(fn && !strstr(fn + 1, "float sn_epi(") && strstr(st.k.src, "sn_epi(v0, (long)i_, e0)") ==
									 (ep[i].variant == 4 ? strstr(st.k.src, "sn_epi(v0") : NULL));
			if (ep[i].v16)
				CHECK(strstr(st.k.src, "v[e] = sn_epi(v[e], (long)y_off(m, o) + e, e0);") &&
				      !strstr(st.k.src, ", e0));") &&
				      strstr(st.k.src, ep[i].t == IR_F32 ? "*(float4 *)(y + y_off(m, o))" : "*(uint4 *)(y + y_off(m, o))"));
			else
				CHECK(strstr(st.k.src, ", e0));") != NULL && !strstr(st.k.src, "sn_epi(v[e]"));
		}
		step_free(&st);
		epi_free(&epi);
	}
}

/* ---- attention ---- */
static void test_attention(void)
{
	char label[96];
	cg_step st;
	for (size_t d = 0; d < SN_COUNT(fdt); d++) {
		ir_dtype t = fdt[d];
		fresh();
		/* GPT-2 small: 12 heads of 64, causal */
		ir_ref qkv[4] = {in(t, SHAPE(1, 12, 512, 64)), in(t, SHAPE(1, 12, 512, 64)), in(t, SHAPE(1, 12, 512, 64))};
		ir_attrs a = attrs(IR_OP_scaled_dot_product_attention);
		a.causal = true;
		snprintf(label, sizeof label, "attention causal %s", ir_dtype_name(t));
		ir_ref r = op(IR_OP_scaled_dot_product_attention, qkv, 3, &a);
		/* on sm_80 (sm_90 takes the wgmma kernel, test_flash_wg) */
		cg_target t80 = {.sm = 80};
		if (render_with(cg_render_attention, r, &t80, NULL, NULL, &st, label) && t == IR_F32) {
			/* the SIMT kernel: 512 rows / 8 per block = 64 blocks per head, 12 heads */
			CHECK(st.k.grid[0] == 768 && st.k.block[0] == 256 && st.k.nbufs == 4 && st.k.bufs[3] == r);
			CHECK(strstr(st.k.src, "0.125f") != NULL); /* 1 / sqrt(64) */
		} else if (st.k.src) {
			/* flash, head dim 64: 64 rows (4 warps of 16), 8 tiles x 12 heads; Q 64 rows
			 * + 3 stages of K and V 64 rows */
			CHECK(st.k.grid[0] == 96 && st.k.block[0] == 128 && st.k.nbufs == 4 && st.k.bufs[3] == r);
			CHECK(st.k.smem == (64 + 2 * 3 * 64) * 64 * 2);
			CHECK(st.k.cfg.variant == 1 && st.k.cfg.tile_m == 64 && st.k.cfg.tile_n == 64 &&
			      st.k.cfg.warps == 4 && st.k.cfg.stages == 3);
			CHECK(strstr(st.k.src, "#define SCALE_LOG2 0.18033688f") != NULL); /* log2(e) / sqrt(64) */
			CHECK(strstr(st.k.src, "mma.sync.aligned.m16n8k16") && strstr(st.k.src, "ldmatrix") &&
			      strstr(st.k.src, "cp.async.cg"));
		}
		step_free(&st);
		/* sm_90: f16 and bf16 take the wgmma kernel (variant 3 at head dim 64) */
		if (t != IR_F32) {
			cg_target t90 = {.sm = 90};
			snprintf(label, sizeof label, "attention causal %s sm_90", ir_dtype_name(t));
			if (render_with(cg_render_attention, r, &t90, NULL, NULL, &st, label))
				CHECK(st.k.cfg.variant == 3 && strstr(st.k.src, "wgmma.mma_async") != NULL);
			step_free(&st);
		}
		/* a bool mask [L, S] and a float mask [1, 1, L, S], explicit scale */
		a = attrs(IR_OP_scaled_dot_product_attention);
		a.scale = 0.3;
		ir_ref q2[4] = {in(t, SHAPE(2, 3, 100, 80)), in(t, SHAPE(2, 3, 70, 80)), in(t, SHAPE(2, 3, 70, 40)),
				in(IR_BOOL, SHAPE(100, 70))};
		snprintf(label, sizeof label, "attention bool mask %s", ir_dtype_name(t));
		r = op(IR_OP_scaled_dot_product_attention, q2, 4, &a);
		if (render(cg_render_attention, r, &st, label)) {
			CHECK(st.k.grid[0] == 13 * 6 && st.k.nbufs == 5);
			CHECK(strstr(st.k.src, "#define M_RS 70L\n#define M_CS 1L") != NULL); /* the mask's row stride S */
		}
		step_free(&st);
		q2[3] = in(t, SHAPE(1, 1, 100, 70));
		snprintf(label, sizeof label, "attention float mask %s", ir_dtype_name(t));
		build(cg_render_attention, op(IR_OP_scaled_dot_product_attention, q2, 4, &a), label);
		/* k and v shared by 4 query heads; head dim 128, long sequences */
		a = attrs(IR_OP_scaled_dot_product_attention);
		ir_ref q3[3] = {in(t, SHAPE(2, 4, 1024, 128)), in(t, SHAPE(2, 1, 1024, 128)), in(t, SHAPE(2, 1, 1024, 128))};
		snprintf(label, sizeof label, "attention broadcast %s", ir_dtype_name(t));
		r = op(IR_OP_scaled_dot_product_attention, q3, 3, &a);
		if (render(cg_render_attention, r, &st, label)) /* q: 131072 per head; k and v: 0 across heads */
			CHECK(strstr(st.k.src, "o.q += c * 131072L;\n\t\to.o += c * 131072L;") != NULL);
		step_free(&st);
		ir_ref q4[3] = {in(t, SHAPE(5, 200)), in(t, SHAPE(9, 200)), in(t, SHAPE(9, 256))}; /* chunks of 16 */
		snprintf(label, sizeof label, "attention rank 2 %s", ir_dtype_name(t));
		build(cg_render_attention, op(IR_OP_scaled_dot_product_attention, q4, 3, &a), label);
	}
	/* head dims past 256 are refused with a message */
	fresh();
	ir_ref q5[3] = {in(IR_F32, SHAPE(4, 300)), in(IR_F32, SHAPE(4, 300)), in(IR_F32, SHAPE(4, 8))};
	ir_ref r = op(IR_OP_scaled_dot_product_attention, q5, 3, NULL);
	memset(&st, 0, sizeof st);
	cg_target t90 = {.sm = 90};
	sn_err e = {0};
	CHECK(cg_render_attention(G, r, &t90, NULL, &st, &e) == SN_EINPUT);
	CHECK_STR(e.msg, "scaled_dot_product_attention: head dims 300 and 8 exceed 256, the CUDA kernel's limit");
	step_free(&st);
}

/* ---- flash attention (cg_flash.c) ---- */
/* Renders node r with config want (NULL: default) and layouts; queues the
 * kernel for NVRTC. Returns the renderer's status; st keeps the kernel. */
static int render_cfg(ir_ref r, const cg_config *want, int sm, const cg_layout *lay, const cg_layout *lay_out,
		      cg_step *st, sn_err *e, const char *label)
{
	memset(st, 0, sizeof *st);
	st->node = r;
	if (lay)
		memcpy(st->lay, lay, 3 * sizeof *lay);
	if (lay_out)
		st->lay_out = *lay_out;
	cg_target t = {.sm = sm};
	int rc = cg_render_attention(G, r, &t, want, st, e);
	if (rc == SN_OK && st->k.src) {
		dump(&st->k);
		queue(&st->k, label);
	}
	return rc;
}

static void test_flash(void)
{
	static const ir_dtype hdt[] = {IR_BF16, IR_F16};
	char label[128];
	cg_step st;
	sn_err e = {0};
	/* every variant: dtypes, head dims, masks, causal, GQA, lengths off the tile */
	for (size_t d = 0; d < SN_COUNT(hdt); d++)
		for (int64_t D = 64; D <= 128; D += 64)
			for (int m = 0; m < 5; m++) {
				ir_dtype t = hdt[d];
				fresh();
				int64_t hk = m == 4 ? 2 : 6;
				ir_ref ins[4] = {in(t, SHAPE(2, 6, 100, D)), in(t, SHAPE(2, hk, 77, D)),
						 in(t, SHAPE(2, hk, 77, D)), IR_NONE};
				ir_attrs a = attrs(IR_OP_scaled_dot_product_attention);
				a.causal = m == 1;
				if (m == 2)
					ins[3] = in(t, SHAPE(2, 1, 100, 77));
				if (m == 3)
					ins[3] = in(IR_BOOL, SHAPE(100, 77));
				ir_ref r = op(IR_OP_scaled_dot_product_attention, ins, ins[3] == IR_NONE ? 3 : 4, &a);
				snprintf(label, sizeof label, "flash %s D=%lld kind %d", ir_dtype_name(t), (long long)D, m);
				CHECK(render_cfg(r, NULL, 80, NULL, NULL, &st, &e, label) == SN_OK);
				CHECK(st.k.src && strstr(st.k.src, "mma.sync") && st.k.cfg.variant == 1);
				CHECK(st.k.nbufs == (ins[3] == IR_NONE ? 4u : 5u));
				if (m == 4 && st.k.src) /* GQA: query head h reads key/value head h / 3 */
					CHECK(strstr(st.k.src, "o.k += c / 3L * ") != NULL);
				step_free(&st);
			}
	/* configs the autotuner may ask for, each compiled */
	fresh();
	ir_ref q[3] = {in(IR_BF16, SHAPE(1, 4, 300, 128)), in(IR_BF16, SHAPE(1, 4, 300, 128)),
		       in(IR_BF16, SHAPE(1, 4, 300, 128))};
	ir_attrs ca = attrs(IR_OP_scaled_dot_product_attention);
	ca.causal = true;
	ir_ref r = op(IR_OP_scaled_dot_product_attention, q, 3, &ca);
	CHECK(cg_caps(G, r, &(cg_target){.sm = 90}) == (CG_CAN_LAYOUT_IN | CG_CAN_LAYOUT_OUT));
	/* the mma.sync kernel's (variant 1: on sm_90 variant 0 is the wgmma
	 * kernel's default) */
	static const cg_config good[] = {
		{.variant = 1, .tile_m = 128, .tile_n = 64, .warps = 4, .stages = 2},
		{.variant = 1, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 3},
		{.variant = 1, .tile_m = 32, .tile_n = 32, .warps = 2, .stages = 1},
		{.variant = 1, .tile_m = 128, .tile_n = 32, .warps = 8, .stages = 4, .block = 256},
		{.variant = 1, .warps = 2},
		{.variant = 2, .rows = 4},
	};
	for (size_t i = 0; i < SN_COUNT(good); i++) {
		snprintf(label, sizeof label, "flash config %zu", i);
		e = (sn_err){0};
		CHECK(render_cfg(r, &good[i], 90, NULL, NULL, &st, &e, label) == SN_OK);
		if (!e.code && good[i].tile_m)
			CHECK(st.k.cfg.tile_m == good[i].tile_m && st.k.cfg.tile_n == good[i].tile_n &&
			      st.k.cfg.warps == good[i].warps && st.k.cfg.stages == good[i].stages &&
			      st.k.block[0] == (unsigned)good[i].warps * 32);
		if (i == 4) /* warps alone: the default's 16 rows per warp */
			CHECK(st.k.cfg.tile_m == 32 && st.k.block[0] == 64);
		if (i == 5)
			CHECK(st.k.src && !strstr(st.k.src, "mma.sync") && st.k.block[0] == 128);
		step_free(&st);
	}
	/* configs that cannot be built are refused, naming the field */
	static const struct {
		cg_config c;
		const char *msg;
	} bad[] = {
		{{.variant = 1, .tile_m = 48, .warps = 4}, "attention (flash): tile_m=48 must be warps (4) x 16, 32, 48 or 64 rows"},
		{{.variant = 1, .tile_n = 24}, "attention (flash): tile_n=24 must be a multiple of 16 in [16, 128]"},
		{{.variant = 1, .stages = 5}, "attention (flash): stages=5 is not in [1, 4]"},
		{{.variant = 1, .warps = 4, .block = 256}, "attention (flash): block=256 must be warps * 32 = 128"},
		{{.variant = 1, .tile_k = 32}, "attention (flash): only tile_m, tile_n, warps, stages and block are configurable "
				 "(tile_k, vec, rows and split_k are not)"},
		{{.variant = 1, .tile_m = 256, .warps = 4}, "attention (flash): tile_m=256 with warps=4 and tile_n=64 needs 384 "
					      "accumulator registers per thread (at most 200)"},
		{{.variant = 1, .tile_m = 64, .tile_n = 128, .stages = 4},
		 "attention (flash): tile_m=64, tile_n=128 and stages=4 need 278528 bytes of shared memory, "
		 "more than sm_90's 232448"},
		{{.variant = 5}, "attention: variant=5 is not 0 (default), 1 (flash), 2 (simt), 3 (flash wgmma) or 4 "
				    "(flash wgmma with a producer warpgroup)"},
		{{.variant = 2, .tile_m = 64}, "attention (simt): only rows and block are configurable (tile_m, "
					       "tile_n, warps and stages are the flash kernel's, variant=1)"},
		{{.variant = 2, .rows = 33}, "attention (simt): rows=33 is not in [1, 32]"},
	};
	for (size_t i = 0; i < SN_COUNT(bad); i++) {
		e = (sn_err){0};
		CHECK(render_cfg(r, &bad[i].c, 90, NULL, NULL, &st, &e, "bad") == SN_EUSAGE);
		CHECK_STR(e.msg, bad[i].msg);
		step_free(&st);
	}
	/* head dim 128 on a large problem, per arch */
	{
		fresh();
		ir_ref big[3] = {in(IR_BF16, SHAPE(4, 16, 4096, 128)), in(IR_BF16, SHAPE(4, 16, 4096, 128)),
				 in(IR_BF16, SHAPE(4, 16, 4096, 128))};
		ir_ref rb = op(IR_OP_scaled_dot_product_attention, big, 3, &ca);
		e = (sn_err){0};
		CHECK(render_cfg(rb, NULL, 90, NULL, NULL, &st, &e, "flash 4096/128") == SN_OK);
		/* sm_90: the wgmma kernel with a producer warpgroup (variant 4), two
		 * consumer warpgroups of 64 rows taking turns (named barriers) with
		 * the producer's registers (setmaxnreg), 128 keys per step, 3
		 * stages; blocks in groups of 4 batch indices (8 MB of K/V) */
		CHECK(st.k.cfg.variant == 4 && st.k.cfg.tile_m == 128 && st.k.cfg.tile_n == 128 && st.k.cfg.warps == 8 &&
		      st.k.cfg.stages == 3 && st.k.grid[0] == 32 * 64 && strstr(st.k.src, "wgmma.mma_async"));
		CHECK(st.k.src && strstr(st.k.src, "#define PP 1\n") && strstr(st.k.src, "#define MAXNREG 1\n") &&
		      strstr(st.k.src, "#define GROUP 4L\n") && strstr(st.k.src, "bar.arrive %0, 256;") &&
		      strstr(st.k.src, "setmaxnreg.inc.sync.aligned.u32 232;"));
		step_free(&st);
		/* unmasked: the same kernel (variant 3's 192x64 before) */
		ir_attrs na = attrs(IR_OP_scaled_dot_product_attention);
		ir_ref rn = op(IR_OP_scaled_dot_product_attention, big, 3, &na);
		e = (sn_err){0};
		CHECK(render_cfg(rn, NULL, 90, NULL, NULL, &st, &e, "flash 4096/128 unmasked") == SN_OK);
		CHECK(st.k.cfg.variant == 4 && st.k.cfg.tile_n == 128 && st.k.cfg.warps == 8 && st.k.cfg.stages == 3);
		step_free(&st);
		/* 129 keys with two consumer warpgroups do not fit; 96 with three */
		CHECK(render_cfg(rn, &(cg_config){.variant = 4, .warps = 8, .tile_n = 144}, 90, NULL, NULL, &st, &e,
				 "bad") == SN_EUSAGE);
		CHECK_STR(e.msg, "attention (flash wgmma, producer warpgroup): tile_n=144 with warps=8 at head dim 128 "
				 "spills (384 threads leave 168 registers): at most 128");
		step_free(&st);
		e = (sn_err){0};
		/* sm_80: the mma.sync kernel, 128 rows of 8 warps, 64 keys per step
		 * (128 spilled), 96 KiB of shared memory */
		CHECK(render_cfg(rb, NULL, 80, NULL, NULL, &st, &e, "flash 4096/128 sm_80") == SN_OK);
		CHECK(st.k.cfg.variant == 1 && st.k.cfg.tile_m == 128 && st.k.cfg.tile_n == 64 && st.k.cfg.warps == 8 &&
		      st.k.cfg.stages == 2 && st.k.smem == 96 * 1024 && st.k.grid[0] == 32 * 64);
		step_free(&st);
		CHECK(render_cfg(rb, NULL, 86, NULL, NULL, &st, &e, "flash 4096/128 sm_86") == SN_OK);
		CHECK(st.k.cfg.tile_n == 64 && st.k.smem == 96 * 1024);
		step_free(&st);
		fresh();
		ir_ref q2[3] = {in(IR_BF16, SHAPE(1, 4, 300, 128)), in(IR_BF16, SHAPE(1, 4, 300, 128)),
				in(IR_BF16, SHAPE(1, 4, 300, 128))};
		r = op(IR_OP_scaled_dot_product_attention, q2, 3, &ca);
	}
	/* before sm_80, and for f32, the SIMT kernel; asking for flash says why not */
	e = (sn_err){0};
	CHECK(render_cfg(r, NULL, 75, NULL, NULL, &st, &e, "simt sm_75") == SN_OK);
	CHECK(st.k.src && !strstr(st.k.src, "mma.sync") && st.k.cfg.variant == 2);
	step_free(&st);
	e = (sn_err){0};
	CHECK(render_cfg(r, &(cg_config){.variant = 1}, 75, NULL, NULL, &st, &e, "bad") == SN_EUSAGE);
	CHECK_STR(e.msg, "attention: variant=1 (flash) does not fit: it needs sm_80 or newer");
	step_free(&st);

	/* fusion's layouts, GPT-2's way: q, k, v [1, 12, 512, 64] strided in
	 * the qkv matmul's output [1, 512, 2304], the output straight into
	 * [1, 512, 768]; the kernel's buffers are the roots */
	fresh();
	ir_ref qkv = in(IR_BF16, SHAPE(1, 512, 2304)), merged = in(IR_BF16, SHAPE(1, 512, 768));
	ir_ref g3[3] = {in(IR_BF16, SHAPE(1, 12, 512, 64)), in(IR_BF16, SHAPE(1, 12, 512, 64)),
			in(IR_BF16, SHAPE(1, 12, 512, 64))};
	r = op(IR_OP_scaled_dot_product_attention, g3, 3, &ca);
	cg_layout lay[3], lay_out = {.set = true, .root = merged, .offset = 0, .strides = {512 * 768, 64, 768, 1}};
	for (int i = 0; i < 3; i++)
		lay[i] = (cg_layout){.set = true, .root = qkv, .offset = i * 768, .strides = {512 * 2304, 64, 2304, 1}};
	e = (sn_err){0};
	CHECK(render_cfg(r, NULL, 80, lay, &lay_out, &st, &e, "flash strided") == SN_OK);
	if (st.k.src) {
		CHECK(st.k.nbufs == 4 && st.k.bufs[0] == qkv && st.k.bufs[1] == qkv && st.k.bufs[2] == qkv &&
		      st.k.bufs[3] == merged);
		CHECK(strstr(st.k.src, "mma.sync") != NULL);
		CHECK(strstr(st.k.src, "offs o = {0L, 768L, 1536L, 0L, 0L};") != NULL);
		CHECK(strstr(st.k.src, "o.q += c * 64L;\n\t\to.k += c * 64L;\n\t\to.v += c * 64L;\n\t\to.o += c * 64L;") != NULL);
		CHECK(strstr(st.k.src, "#define Q_RS 2304L\n#define K_RS 2304L\n#define V_RS 2304L\n#define O_RS 768L\n#define O_CS 1L") != NULL);
		CHECK(strstr(st.k.src, "#define O_PAIR 1") != NULL);
	}
	step_free(&st);
	/* a row that does not start on 16 bytes: the SIMT kernel, also strided */
	lay[1].offset = 772;
	e = (sn_err){0};
	CHECK(render_cfg(r, NULL, 90, lay, &lay_out, &st, &e, "simt strided") == SN_OK);
	if (st.k.src) {
		CHECK(!strstr(st.k.src, "mma.sync") && st.k.bufs[1] == qkv && st.k.bufs[3] == merged);
		CHECK(strstr(st.k.src, "offs o = {0L, 772L, 1536L, 0L, 0L};") != NULL);
		CHECK(strstr(st.k.src, "ld_bf16(kp, o.k + (j0 + jl) * K_RS + c * K_CS)") != NULL);
	}
	step_free(&st);
	e = (sn_err){0};
	CHECK(render_cfg(r, &(cg_config){.variant = 1}, 90, lay, &lay_out, &st, &e, "bad") == SN_EUSAGE);
	CHECK_STR(e.msg, "attention: variant=1 (flash) does not fit: q, k and v rows must be contiguous and "
			 "16-byte aligned");
	step_free(&st);
}

int main(void)
{
	have_nvrtc = nvrtc_open();
	if (!have_nvrtc)
		printf("cg_render2: NVRTC not found, kernels are rendered but not compiled\n");
	test_reduce();
	test_norm();
	test_pool();
	test_gemm();
	test_gemm_tc();
	test_conv();
	test_attention();
	test_flash();
	if (G)
		ir_graph_free(G);
	compile_all();
	printf("cg_render2: %d distinct kernels compiled for sm_80 and sm_90\n", ncompiled);
	return check_done("cg_render2");
}
