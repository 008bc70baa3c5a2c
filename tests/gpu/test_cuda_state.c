/* test_cuda_state.c: state on the cuda device (docs/DESIGN.md, State).
 * tests/state's state model on cuda in modes default and reduce-overhead
 * (the plan a CUDA graph replayed: each run's position and states reach
 * the graph's fixed input buffers) against the sums worked out by hand,
 * with read, reset and write; then generation on tests/state/tiny_llama.sir
 * (random params): a prefill of 5 tokens and 8 decode steps on cuda
 * (reduce-overhead) and on ref, the cache copied from the prefill model
 * into the decode model, each step's logits within 1e-4 (relative L2) of
 * ref's and the same greedy token. Prints "skipped: no CUDA device" and
 * exits 77 without a GPU. */
#include "../state/state_case.h"
#include "gpu_check.h"

#include <math.h>

enum { PROMPT = 5, NEW = 8 };

static sinter_model *tiny(int64_t T)
{
	sinter_shape_binding b[2] = {{"N", 1}, {"T", T}};
	sinter_load_options so = {.size = sizeof(sinter_load_options), .shapes = b, .nshapes = 2};
	sinter_model *m = NULL;
	sinter_error err;
	if (sinter_model_load("tests/state/tiny_llama.sir", &so, &m, &err) ||
	    sinter_model_init_random(m, 7, &err)) {
		fprintf(stderr, "%s\n", err.message);
		sinter_model_free(m);
		return NULL;
	}
	return m;
}

static sinter_compiled *compile(sinter_model *m, const char *dev)
{
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.device = !strcmp(dev, "cpu") ? SINTER_DEVICE_CPU : !strcmp(dev, "ref") ? SINTER_DEVICE_REF : SINTER_DEVICE_CUDA;
	o.mode = !strcmp(dev, "cuda") ? "reduce-overhead" : NULL;
	sinter_compiled *c = NULL;
	sinter_error err;
	if (sinter_model_compile(m, &o, &c, NULL, &err))
		fprintf(stderr, "%s: %s\n", dev, err.message);
	return c;
}

/* logits of the last position of one call on ids[0..n) at pos */
static sinter_tensor *step(sinter_compiled *c, const int64_t *ids, size_t n, int64_t pos)
{
	sinter_tensor in[2] = {
		{.name = "input_ids", .dtype = SINTER_I64, .rank = 2, .shape = {1, (int64_t)n}, .data = (void *)ids,
		 .nbytes = n * 8},
		{.name = "pos", .dtype = SINTER_I64, .rank = 0, .data = &pos, .nbytes = 8},
	};
	sinter_tensor *out = NULL;
	sinter_error err;
	if (sinter_compiled_run(c, in, 2, &out, &err))
		fprintf(stderr, "%s\n", err.message);
	return out;
}

static int64_t argmax_last(const sinter_tensor *t)
{
	int64_t V = t->shape[t->rank - 1], rows = (int64_t)(t->nbytes / 4) / V;
	const float *x = (const float *)t->data + (rows - 1) * V;
	int64_t best = 0;
	for (int64_t i = 1; i < V; i++)
		if (x[i] > x[best])
			best = i;
	return best;
}

static double rel_l2(const sinter_tensor *a, const sinter_tensor *b)
{
	const float *x = a->data, *y = b->data;
	double num = 0, den = 0;
	for (size_t i = 0; i < a->nbytes / 4; i++) {
		num += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
		den += (double)y[i] * y[i];
	}
	return sqrt(num) / (sqrt(den) + 1e-30);
}

static void generate(void)
{
	const char *devs[2] = {"cuda", "ref"};
	sinter_model *mp = tiny(PROMPT), *md = tiny(1);
	sinter_compiled *cp[2] = {0}, *cd[2] = {0};
	CHECK(mp && md);
	if (!mp || !md)
		goto out;
	for (int d = 0; d < 2; d++) {
		cp[d] = compile(mp, devs[d]);
		cd[d] = compile(md, devs[d]);
		CHECK(cp[d] && cd[d]);
		if (!cp[d] || !cd[d])
			goto out;
	}
	int64_t ids[2][PROMPT + NEW] = {{3, 1, 4, 1, 5}, {3, 1, 4, 1, 5}};
	for (int k = 0; k < NEW; k++) {
		sinter_tensor *lg[2];
		for (int d = 0; d < 2; d++) {
			sinter_compiled *c = k == 0 ? cp[d] : cd[d];
			lg[d] = k == 0 ? step(c, ids[d], PROMPT, 0) : step(c, &ids[d][PROMPT + k - 1], 1, PROMPT + k - 1);
			CHECK(lg[d] != NULL);
		}
		if (!lg[0] || !lg[1])
			break;
		double e = rel_l2(lg[0], lg[1]);
		printf("step %d: cuda against ref rel L2 %.3g\n", k, e);
		CHECK(e < 1e-4);
		ids[0][PROMPT + k] = argmax_last(lg[0]);
		ids[1][PROMPT + k] = argmax_last(lg[1]);
		CHECK(ids[0][PROMPT + k] == ids[1][PROMPT + k]);
		sinter_tensors_free(lg[0], 1);
		sinter_tensors_free(lg[1], 1);
		if (k == 0)
			for (int d = 0; d < 2; d++) { /* the cache into the decode model */
				sinter_tensor *st = NULL;
				size_t n = 0;
				sinter_error err;
				CHECK(!sinter_compiled_state_read(cp[d], &st, &n, &err) && n == 4);
				CHECK(!sinter_compiled_state_write(cd[d], st, n, &err));
				sinter_tensors_free(st, n);
			}
	}
	printf("generate on cuda: %d greedy tokens, each equal to ref's\n", NEW);
out:
	for (int d = 0; d < 2; d++) {
		sinter_compiled_free(cp[d]);
		sinter_compiled_free(cd[d]);
	}
	sinter_model_free(mp);
	sinter_model_free(md);
}

int main(void)
{
	char why[512];
	if (sinter_device_available(SINTER_DEVICE_CUDA, why, sizeof why, NULL) != SINTER_OK) {
		printf("skipped: no CUDA device (%s)\n", why);
		return GPU_SKIP;
	}
	sinter_model *m = NULL;
	sinter_error err;
	if (sinter_model_parse(model, strlen(model), "state.sir", NULL, &m, &err) ||
	    sinter_model_init_random(m, 1, &err)) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	on_device(m, "cuda", "default");
	on_device(m, "cuda", "reduce-overhead");
	sinter_model_free(m);
	generate();
	return check_done("cuda state");
}
