/* state_case.h: the state model and its checks, shared by
 * tests/state/test_state.c (ref, cpu) and tests/gpu/test_cuda_state.c
 * (cuda, default and reduce-overhead): three runs against the running
 * mean and cache rows worked out by hand, then state_read, _reset,
 * _write and a bad write (test_state.c says more). */
#ifndef SINTER_STATE_CASE_H
#define SINTER_STATE_CASE_H

#include "sinter.h"
#include "sinter_tools.h"

#include "../unit/check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *model =
	"sinter 1\n"
	"func @main(%x: f32[2,3], %pos: i64[], %row: f32[1,3], state %acc: f32[2,3], state %n: f32[],\n"
	"           state %cache: f32[4,3]) -> (f32[2,3], f32[3]) {\n"
	"  %one = const f32[] 1\n"
	"  %sum = add(%acc, %x)\n"
	"  %cnt = add(%n, %one)\n"
	"  %mean = div(%sum, %cnt)\n"
	"  %i0 = iota i64[1,3] axis=0\n"
	"  %idx = add(%i0, %pos)\n"
	"  %cache.next = scatter_elements(%cache, %idx, %row) axis=0\n"
	"  %rows = reduce_sum(%cache.next) axes=[0]\n"
	"  update %acc = %sum\n"
	"  update %n = %cnt\n"
	"  update %cache = %cache.next\n"
	"  return %mean, %rows\n"
	"}\n";

static uint64_t rng = 0x9e3779b97f4a7c15u;
static float frand(void)
{
	rng = rng * 6364136223846793005u + 1442695040888963407u;
	return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0) + 0.25f; /* never all zero */
}

typedef struct inputs {
	float x[6], row[3];
	int64_t pos;
	sinter_tensor t[3];
} inputs;

static void make_inputs(inputs *in, int64_t pos)
{
	for (int i = 0; i < 6; i++)
		in->x[i] = frand();
	for (int i = 0; i < 3; i++)
		in->row[i] = frand();
	in->pos = pos;
	in->t[0] = (sinter_tensor){.name = "x", .dtype = SINTER_F32, .rank = 2, .shape = {2, 3}, .data = in->x,
				   .nbytes = sizeof in->x};
	in->t[1] = (sinter_tensor){.name = "pos", .dtype = SINTER_I64, .rank = 0, .data = &in->pos, .nbytes = 8};
	in->t[2] = (sinter_tensor){.name = "row", .dtype = SINTER_F32, .rank = 2, .shape = {1, 3}, .data = in->row,
				   .nbytes = sizeof in->row};
}

static void check_outputs(const char *dev, sinter_tensor *o, const double *mean, const double *rows)
{
	const float *m = o[0].data, *r = o[1].data;
	for (int i = 0; i < 6; i++)
		CHECK_NEAR(m[i], mean[i], 1e-5);
	for (int i = 0; i < 3; i++)
		CHECK_NEAR(r[i], rows[i], 1e-5);
	(void)dev;
}

static void on_device(sinter_model *m, const char *dev, const char *mode)
{
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.device = !strcmp(dev, "cpu") ? SINTER_DEVICE_CPU : !strcmp(dev, "ref") ? SINTER_DEVICE_REF : SINTER_DEVICE_CUDA;
	o.mode = mode;
	o.cache_dir = "";
	sinter_compiled *c = NULL;
	sinter_error err;
	if (sinter_model_compile(m, &o, &c, NULL, &err) != SINTER_OK) {
		fprintf(stderr, "%s: compile: %s\n", dev, err.message);
		CHECK(0);
		return;
	}
	CHECK_STR(sinter_device_name(sinter_compiled_device(c)), dev);
	CHECK(sinter_compiled_num_inputs(c) == 3);
	CHECK(sinter_compiled_num_outputs(c) == 2);

	/* three runs: the mean of every x so far, the rows written so far */
	double sum[6] = {0}, rows[3] = {0}, mean[6], written[4][3] = {{0}};
	for (int k = 0; k < 3; k++) {
		inputs in;
		make_inputs(&in, k);
		sinter_tensor *out = NULL;
		CHECK(sinter_compiled_run(c, in.t, 3, &out, &err) == SINTER_OK);
		if (!out) {
			fprintf(stderr, "%s: run %d: %s\n", dev, k, err.message);
			break;
		}
		for (int i = 0; i < 6; i++)
			sum[i] += in.x[i], mean[i] = sum[i] / (k + 1);
		for (int i = 0; i < 3; i++)
			rows[i] += in.row[i], written[k][i] = in.row[i];
		check_outputs(dev, out, mean, rows);
		sinter_tensors_free(out, 2);
	}

	/* the states as they stand: the sum, the count, the rows at 0, 1, 2 */
	sinter_tensor *st = NULL;
	size_t n = 0;
	CHECK(sinter_compiled_state_read(c, &st, &n, &err) == SINTER_OK);
	CHECK(n == 3);
	if (n == 3) {
		CHECK_STR(st[0].name, "acc");
		CHECK_STR(st[2].name, "cache");
		CHECK(st[2].rank == 2 && st[2].shape[0] == 4 && st[2].shape[1] == 3);
		for (int i = 0; i < 6; i++)
			CHECK_NEAR(((float *)st[0].data)[i], sum[i], 1e-5);
		CHECK_NEAR(*(float *)st[1].data, 3, 0);
		for (int r = 0; r < 4; r++)
			for (int i = 0; i < 3; i++)
				CHECK_NEAR(((float *)st[2].data)[r * 3 + i], written[r][i], 0);
	}

	/* reset: the next run starts from zeros */
	CHECK(sinter_compiled_state_reset(c, &err) == SINTER_OK);
	inputs in;
	make_inputs(&in, 3);
	sinter_tensor *out = NULL;
	CHECK(sinter_compiled_run(c, in.t, 3, &out, &err) == SINTER_OK);
	if (out) {
		double x[6], r[3];
		for (int i = 0; i < 6; i++)
			x[i] = in.x[i];
		for (int i = 0; i < 3; i++)
			r[i] = in.row[i];
		check_outputs(dev, out, x, r);
		sinter_tensors_free(out, 2);
	}

	/* write: a sum of 10 * st[0] and a count of 1 */
	if (n == 3) {
		float *a = st[0].data;
		for (int i = 0; i < 6; i++)
			a[i] = 10.0f * (float)i - 7.5f;
		*(float *)st[1].data = 1;
		CHECK(sinter_compiled_state_write(c, st, 2, &err) == SINTER_OK);
		make_inputs(&in, 0);
		CHECK(sinter_compiled_run(c, in.t, 3, &out, &err) == SINTER_OK);
		if (out) {
			const float *mm = out[0].data;
			for (int i = 0; i < 6; i++)
				CHECK_NEAR(mm[i], ((double)a[i] + in.x[i]) / 2, 1e-5);
			sinter_tensors_free(out, 2);
		}
		sinter_tensor bad = st[0];
		bad.name = "nope";
		CHECK(sinter_compiled_state_write(c, &bad, 1, &err) == SINTER_E_INPUT);
		CHECK(strstr(err.message, "no state named 'nope'") != NULL);
		bad = st[2];
		bad.shape[0] = 3;
		CHECK(sinter_compiled_state_write(c, &bad, 1, &err) == SINTER_E_INPUT);
	}
	sinter_tensors_free(st, n);
	sinter_compiled_free(c);
	printf("%s (%s): runs accumulate, read, reset and write checked\n", dev, mode ? mode : "default");
}

#endif
