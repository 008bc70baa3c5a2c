/* gpu_check.c: the GPU tests' harness (gpu_check.h). */
#include "gpu_check.h"

#include "runtime/cuda_exec.h"
#include "runtime/cuda_nvrtc.h"
#include "ir/ref/ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static rt_cuda *dev;
static int opened, failures, passes;
static uint64_t rng;
bool gpu_tf32, gpu_plain_plan;
int (*gpu_plan_hook)(const ir_graph *g, struct cg_plan *p, sn_err *e);
bool (*gpu_pick)(void *ctx, const uint8_t spec[16], const struct cg_config *def, struct cg_config *want);

struct rt_cuda *gpu_device(void)
{
	return dev;
}

int gpu_device_sm(void)
{
	return dev ? dev->sm : 0;
}

static int time_iters;
static double *time_out;

void gpu_set_timing(int iters, double *median_ms)
{
	time_iters = iters;
	time_out = median_ms;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int gpu_build_run(struct rt_cuda *dv, const ir_graph *g, const ir_tensor *vals, const ir_tensor *ins, bool tf32,
		  ir_tensor *outs, sn_err *e)
{
	cg_target t = {.sm = dv->sm, .tf32 = tf32, .unfused = gpu_plain_plan, .conv_kernels = gpu_plain_plan, .pick = gpu_pick};
	cg_plan *p = NULL;
	rt_model *m = NULL;
	rt_nvrtc *nv = NULL;
	rt_job *jobs = NULL;
	const void **in = calloc(g->ninputs + 1, sizeof *in);
	void **out = calloc(g->noutputs + 1, sizeof *out);
	int rc = in && out ? cg_lower(g, vals, &t, &p, e) : sn_errf(e, SN_EINTERNAL, "out of memory");
	if (!rc && gpu_plan_hook)
		rc = gpu_plan_hook(g, p, e);
	if (!rc && !(jobs = calloc(p->nkerns + 1, sizeof *jobs)))
		rc = sn_errf(e, SN_EINTERNAL, "out of memory");
	for (uint32_t i = 0; !rc && i < p->nkerns; i++)
		jobs[i] = (rt_job){.name = p->kerns[i].name, .src = p->kerns[i].src};
	if (!rc)
		rc = rt_nvrtc_open(&nv, e);
	if (!rc)
		rc = rt_compile_all(nv, jobs, p->nkerns, dv->sm, NULL, 0, NULL, NULL, NULL, NULL, e);
	for (uint32_t i = 0; !rc && i < p->nkerns; i++) {
		p->kerns[i].cubin = jobs[i].cubin;
		p->kerns[i].cubin_size = jobs[i].size;
		jobs[i].cubin = NULL;
	}
	rt_load_opts lo = {.poison = true};
	if (!rc)
		rc = rt_model_load(dv, p, &lo, &m, NULL, e);
	for (uint32_t i = 0; !rc && i < g->ninputs; i++)
		in[i] = ins[i].data;
	memset(outs, 0, g->noutputs * sizeof *outs);
	for (uint32_t i = 0; !rc && i < g->noutputs; i++) {
		const ir_node *n = &g->nodes[g->outputs[i]];
		size_t nb = (size_t)ir_numel(&n->shape) * ir_dtype_size(n->dtype);
		outs[i] = (ir_tensor){n->dtype, n->shape, malloc(nb ? nb : 1), nb};
		out[i] = outs[i].data;
		if (!out[i])
			rc = sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	if (!rc)
		rc = rt_model_run(m, in, out, e);
	if (!rc && time_iters > 0) {
		double *ms = calloc((size_t)time_iters, sizeof *ms);
		rc = ms ? rt_model_time(m, 10, time_iters, ms, e) : sn_errf(e, SN_EINTERNAL, "out of memory");
		if (!rc) {
			qsort(ms, (size_t)time_iters, sizeof *ms, cmp_double);
			*time_out = ms[time_iters / 2];
		}
		free(ms);
	}
	rt_model_free(m);
	if (jobs && p)
		rt_jobs_free(jobs, p->nkerns);
	free(jobs);
	rt_nvrtc_close(nv);
	cg_plan_free(p);
	free(in);
	free(out);
	return rc;
}

bool gpu_available(void)
{
	if (!opened) {
		opened = 1;
		sn_err e = {0};
		if (rt_cuda_open(0, &dev, &e) != SN_OK) {
			printf("skipped: no CUDA device (%s)\n", e.msg);
			dev = NULL;
		} else {
			printf("device: %s (sm_%d)\n", dev->name, dev->sm);
			rng = gpu_seed();
		}
	}
	return dev != NULL;
}

uint64_t gpu_seed(void)
{
	static bool drawn;
	static uint64_t seed;
	if (!drawn) {
		drawn = true;
		const char *env = getenv("SINTER_TEST_SEED");
		char *end = NULL;
		unsigned long long v = env && *env ? strtoull(env, &end, 10) : 0;
		seed = end && !*end ? (uint64_t)v : (uint64_t)time(NULL);
		printf("seed %llu (SINTER_TEST_SEED=%llu replays it)\n", (unsigned long long)seed,
		       (unsigned long long)seed);
	}
	return seed;
}

double gpu_tol(ir_dtype t)
{
	switch (t) {
	case IR_F16: return 2e-3;
	case IR_BF16: return 1e-2;
	case IR_F8E4M3:
	case IR_F8E5M2: return 1e-1;
	default: return 1e-5;
	}
}

static double uniform(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) * 0x1.0p-53;
}

/* Fills a fresh tensor for node n: floats in [-1, 1) (norm variances and
 * the like positive), integers in [0, hi). */
static int fill(const ir_graph *g, ir_ref r, ir_tensor *t)
{
	const ir_node *n = &g->nodes[r];
	t->dtype = n->dtype;
	t->shape = n->shape;
	size_t count = (size_t)ir_numel(&n->shape);
	t->nbytes = count * ir_dtype_size(n->dtype);
	t->data = malloc(t->nbytes ? t->nbytes : 1);
	if (!t->data)
		return -1;
	int64_t hi = 4;
	bool positive = false;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *u = &g->nodes[i];
		for (uint32_t k = 0; k < u->nin; k++) {
			if (u->in[k] != r)
				continue;
			if (u->op == IR_OP_gather && k == 1) {
				const ir_shape *d = &g->nodes[u->in[0]].shape;
				hi = d->d[ir_axis(u->attrs->axis, d->rank)];
			}
			if (u->op == IR_OP_batch_norm && k == 4)
				positive = true;
		}
	}
	for (size_t i = 0; i < count; i++) {
		double x = 2 * uniform() - 1;
		if (positive)
			x = 0.5 + uniform();
		if (n->dtype == IR_BOOL)
			x = uniform() < 0.5;
		else if (!ir_dtype_is_float(n->dtype))
			x = floor(uniform() * (double)hi);
		ir_store(n->dtype, t->data, i, x);
	}
	return 0;
}

bool gpu_compare(ir_graph *g, double tol, const char *label)
{
	if (!gpu_available()) {
		ir_graph_free(g);
		return true;
	}
	sn_err e = {0};
	bool ok = false;
	ir_tensor *vals = calloc(g->nnodes, sizeof *vals);
	ir_tensor *ins = calloc(g->ninputs + 1, sizeof *ins);
	ir_tensor *ref = calloc(g->noutputs, sizeof *ref);
	ir_tensor *got = calloc(g->noutputs, sizeof *got);
	rt_model *m = NULL;
	if (!vals || !ins || !ref || !got)
		goto done;
	if (ir_verify(g, &e) != SN_OK)
		goto done;
	for (uint32_t i = 0; i < g->nnodes; i++)
		if ((g->nodes[i].op == IR_OP_input || g->nodes[i].op == IR_OP_param) && fill(g, i, &vals[i]))
			goto done;
	for (uint32_t i = 0; i < g->ninputs; i++)
		ins[i] = vals[g->inputs[i]];
	if (ref_run(g, vals, ref, &e) != SN_OK)
		goto done;
	if (gpu_build_run(dev, g, vals, ins, gpu_tf32, got, &e) != SN_OK)
		goto done;
	double worst = 0;
	for (uint32_t k = 0; k < g->noutputs; k++) {
		size_t count = (size_t)ir_numel(&ref[k].shape);
		double num = 0, den = 0;
		for (size_t i = 0; i < count; i++) {
			double a = ir_load(ref[k].dtype, ref[k].data, i), b = ir_load(got[k].dtype, got[k].data, i);
			if (isnan(a) && isnan(b))
				continue; /* both NaN: the same answer (a fully masked row) */
			if (isnan(a) != isnan(b) || isinf(a) != isinf(b)) {
				num = NAN;
				break;
			}
			if (isinf(a) && a == b)
				continue;
			num += (a - b) * (a - b);
			den += a * a;
		}
		double rel = isnan(num) ? NAN : den > 0 ? sqrt(num / den) : sqrt(num);
		if (isnan(rel) || rel > worst)
			worst = rel;
		if (isnan(rel))
			break;
	}
	ok = !isnan(worst) && worst <= tol;
	printf("%-48s rel L2 %.3g (tol %.3g) %s\n", label, worst, tol, ok ? "ok" : "FAIL");
done:
	if (e.code != SN_OK)
		printf("%-48s FAIL: %s\n", label, e.msg);
	rt_model_free(m);
	for (uint32_t i = 0; g && vals && i < g->nnodes; i++)
		free(vals[i].data);
	for (uint32_t k = 0; g && ref && got && k < g->noutputs; k++) {
		free(ref[k].data);
		free(got[k].data);
	}
	free(vals);
	free(ins);
	free(ref);
	free(got);
	ir_graph_free(g);
	if (ok)
		passes++;
	else
		failures++;
	return ok;
}

static int build_failures;

int gpu_done(void)
{
	if (!dev)
		return GPU_SKIP;
	if (build_failures)
		printf("%d graphs could not be built\n", build_failures);
	printf("%d passed, %d failed\n", passes, failures);
	rt_cuda_close(dev);
	dev = NULL;
	return failures || build_failures ? 1 : 0;
}

sn_err gpu_err;

ir_shape gpu_shape(int rank, const int64_t *d)
{
	ir_shape s = {rank, {0}};
	for (int i = 0; i < rank; i++)
		s.d[i] = d[i];
	return s;
}

ir_ref gpu_in(ir_graph *g, const char *name, ir_dtype t, ir_shape s)
{
	return ir_add_input(g, name, t, &s, &gpu_err);
}

ir_ref gpu_op1(ir_graph *g, ir_op op, ir_ref a, const ir_attrs *at)
{
	return ir_add(g, op, &a, 1, at, &gpu_err);
}

ir_ref gpu_op2(ir_graph *g, ir_op op, ir_ref a, ir_ref b)
{
	ir_ref v[2] = {a, b};
	return ir_add(g, op, v, 2, NULL, &gpu_err);
}

bool gpu_built(ir_graph *g, ir_ref r, const char *label)
{
	if (r != IR_NONE && !gpu_err.code)
		return true;
	printf("%-56s FAIL: builder: %s\n", label, gpu_err.msg);
	gpu_err = (sn_err){0};
	ir_graph_free(g);
	build_failures++;
	return false;
}

void gpu_run(ir_graph *g, ir_ref r, double tol, const char *label)
{
	if (!gpu_built(g, r, label))
		return;
	ir_add_output(g, r);
	gpu_compare(g, tol, label);
}
