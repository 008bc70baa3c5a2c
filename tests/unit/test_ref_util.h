/* test_ref_util.h: a small harness for the reference interpreter's tests:
 * build a graph with the builder API, run it with ref_run, compare the one
 * output with expected values. Included by tests/unit/test_ref_*.c. */
#ifndef SINTER_TEST_REF_UTIL_H
#define SINTER_TEST_REF_UTIL_H

#include "check.h"
#include "ir/ref/ref.h"

#include <stdarg.h>
#include <stdlib.h>

typedef struct tg {
	ir_graph *g;
	ir_tensor vals[256];
	sn_err e;
	ir_tensor out;
} tg;

static ir_shape mk_shape(const int64_t *d, int rank)
{
	ir_shape s = {rank, {0}};
	for (int i = 0; i < rank; i++)
		s.d[i] = d[i];
	return s;
}
#define SHAPE(...) mk_shape((const int64_t[]){__VA_ARGS__}, \
			    (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define SCALAR ((ir_shape){0, {0}})
#define INTS(...) ((ir_ints){(int32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}})

static void tg_init(tg *t)
{
	memset(t, 0, sizeof *t);
	t->g = ir_graph_new();
}

static void tg_free(tg *t)
{
	free(t->out.data);
	ir_graph_free(t->g);
	memset(t, 0, sizeof *t);
}

static ir_ref report(tg *t, ir_ref r, const char *what)
{
	check_count++;
	if (r == IR_NONE) {
		fprintf(stderr, "building %s failed: %s\n", what, t->e.msg);
		check_failures++;
		t->e.code = SN_OK;
	}
	return r;
}

static ir_ref tin(tg *t, const char *name, ir_dtype dt, ir_shape s, const void *data)
{
	ir_ref r = report(t, ir_add_input(t->g, name, dt, &s, &t->e), name);
	if (r != IR_NONE)
		t->vals[r] = (ir_tensor){dt, s, (void *)data, 0};
	return r;
}

static inline ir_ref tparam(tg *t, const char *key, ir_dtype dt, ir_shape s, const void *data)
{
	ir_ref r = report(t, ir_add_param(t->g, key, dt, &s, &t->e), key);
	if (r != IR_NONE)
		t->vals[r] = (ir_tensor){dt, s, (void *)data, 0};
	return r;
}

/* top(t, op, attrs or NULL, nin, operand refs...) */
static ir_ref top(tg *t, ir_op op, const ir_attrs *a, uint32_t nin, ...)
{
	ir_ref in[8];
	va_list ap;
	va_start(ap, nin);
	for (uint32_t i = 0; i < nin && i < 8; i++)
		in[i] = va_arg(ap, ir_ref);
	va_end(ap);
	return report(t, ir_add(t->g, op, in, nin, a, &t->e), ir_ops[op].name);
}

/* Runs the graph with r as its only output; false (and a failed check)
 * when ref_run fails. */
static bool trun(tg *t, ir_ref r)
{
	check_count++;
	if (r == IR_NONE || ir_add_output(t->g, r) != SN_OK) {
		check_failures++;
		return false;
	}
	if (ref_run(t->g, t->vals, &t->out, &t->e) != SN_OK) {
		fprintf(stderr, "ref_run failed: %s\n", t->e.msg);
		check_failures++;
		return false;
	}
	return true;
}

/* The output's elements equal want (NaN matches NaN) within
 * tol * max(1, |want|). */
static void expect_at(tg *t, const double *want, int64_t n, double tol, const char *what,
		      const char *file, int line)
{
	check_count++;
	int64_t have = ir_numel(&t->out.shape);
	if (have != n) {
		fprintf(stderr, "%s:%d: %s: %lld elements, expected %lld\n", file, line, what,
			(long long)have, (long long)n);
		check_failures++;
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		double got = ir_load(t->out.dtype, t->out.data, (size_t)i), w = want[i];
		bool ok = isnan(w) ? isnan(got) : fabs(got - w) <= tol * (fabs(w) > 1 ? fabs(w) : 1);
		if (!ok) {
			fprintf(stderr, "%s:%d: %s: element %lld is %.10g, expected %.10g\n", file, line,
				what, (long long)i, got, w);
			check_failures++;
			return;
		}
	}
}
#define EXPECT(t, want, n, tol, what) expect_at(t, want, n, tol, what, __FILE__, __LINE__)

/* Deterministic, non-trivial test data: values in (-2, 2), none zero. */
static inline void fill(float *p, int n, int seed)
{
	for (int i = 0; i < n; i++) {
		double v = 2 * sin(1.7 * i + 0.3 * seed + 0.1);
		p[i] = (float)(fabs(v) < 0.05 ? 0.5 : v);
	}
}

#endif
