/* test_concat_many.c: concat has no operand cap (issue 26), through the
 * public API. For 1, 8, 33 and 200 operands of several dtypes and axes
 * (one operand empty where there are more than two): the reference
 * interpreter's result against the concat worked out here on the same
 * random inputs (each output element's operand found by walking the
 * operands' columns), bit for bit; then the cpu device against the
 * reference, fused and unfused, bit for bit (concat moves values). An
 * ONNX Concat of 40 inputs imports and runs the same way. A decode step
 * returning its caches stacked (per layer: a linear, the new key appended
 * to the past keys, unsqueezed; all layers' caches concatenated along a
 * new axis 0), for 8 and 16 layers, on cpu against the reference: the
 * caches within 2e-5 relative L2 (tests/cpu_ref.py's bound: the products
 * round differently) and the past keys' slices of the stack equal to the
 * inputs bit for bit. The cpu parts are skipped, saying so, in a build
 * without the cpu device. */
#include "sinter.h"
#include "sinter_tools.h"

#include "check.h"
#include "onnx_writer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool have_cpu;
static sinter_error err;

typedef struct {
	char *s;
	size_t n, cap;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int k = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
		va_end(ap);
		if (k >= 0 && t->s && t->n + (size_t)k < t->cap) {
			t->n += (size_t)k;
			return;
		}
		t->cap = (t->cap + (size_t)k + 1) * 2;
		t->s = realloc(t->s, t->cap);
	}
}

/* The concat of ins[0..n) along axis a of shape os, worked out here. */
static void *concat_by_hand(const sinter_tensor *ins, size_t n, int a, const sinter_tensor *o)
{
	size_t es = sinter_dtype_size(o->dtype);
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < a; d++)
		outer *= o->shape[d];
	for (int d = a + 1; d < o->rank; d++)
		inner *= o->shape[d];
	int64_t orow = o->shape[a] * inner;
	unsigned char *r = malloc(o->nbytes ? o->nbytes : 1);
	for (int64_t i = 0; i < outer * orow; i++) {
		int64_t row = i / orow, j = i % orow, at = 0;
		size_t k = 0;
		while (k < n && j >= at + ins[k].shape[a] * inner)
			at += ins[k++].shape[a] * inner;
		int64_t w = ins[k].shape[a] * inner;
		memcpy(r + (size_t)i * es, (const unsigned char *)ins[k].data + (size_t)(row * w + j - at) * es, es);
	}
	return r;
}

static bool any_nonzero(const sinter_tensor *t, size_t n)
{
	for (size_t k = 0; k < n; k++)
		for (size_t b = 0; b < t[k].nbytes; b++)
			if (((const unsigned char *)t[k].data)[b])
				return true;
	return false;
}

/* Runs m on cpu (fused, or one step per node) into *out; false and a
 * message when it fails. */
static bool run_cpu(sinter_model *m, bool no_fusion, const sinter_tensor *ins, size_t nin, sinter_tensor **out)
{
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.device = SINTER_DEVICE_CPU;
	o.cache_dir = "";
	o.threads = 2;
	o.no_fusion = no_fusion;
	sinter_compiled *c = NULL;
	if (sinter_model_compile(m, &o, &c, NULL, &err) != SINTER_OK || sinter_compiled_run(c, ins, nin, out, &err) != SINTER_OK) {
		fprintf(stderr, "cpu: %s\n", err.message);
		sinter_compiled_free(c);
		return false;
	}
	sinter_compiled_free(c);
	return true;
}

/* ref against the hand-worked concat, then cpu against ref, for model m
 * whose output 0 is the concat of all its inputs along axis a. */
static void check_model(sinter_model *m, int a, const char *label)
{
	sinter_tensor *ins = NULL, *ref = NULL;
	size_t nin = 0;
	CHECK(sinter_model_random_inputs(m, 1000 + (uint64_t)getpid(), &ins, &nin, &err) == SINTER_OK);
	CHECK(ins && any_nonzero(ins, nin));
	CHECK(sinter_model_run_ref(m, ins, nin, &ref, &err) == SINTER_OK);
	if (!ins || !ref) {
		fprintf(stderr, "%s: %s\n", label, err.message);
		sinter_tensors_free(ins, nin);
		return;
	}
	void *want = concat_by_hand(ins, nin, a < 0 ? a + ref[0].rank : a, &ref[0]);
	bool ok = !memcmp(ref[0].data, want, ref[0].nbytes);
	CHECK(ok);
	printf("%s: ref %s the hand-worked concat (%zu bytes)", label, ok ? "equals" : "DIFFERS FROM", ref[0].nbytes);
	for (int nf = 0; have_cpu && nf < 2; nf++) {
		sinter_tensor *got = NULL;
		CHECK(run_cpu(m, nf == 1, ins, nin, &got));
		bool same = got && got[0].nbytes == ref[0].nbytes && !memcmp(got[0].data, ref[0].data, ref[0].nbytes);
		CHECK(same);
		printf("; cpu%s %s", nf ? " unfused" : "", same ? "equals ref" : "DIFFERS");
		sinter_tensors_free(got, 1);
	}
	printf("\n");
	free(want);
	sinter_tensors_free(ref, 1);
	sinter_tensors_free(ins, nin);
}

/* concat of n inputs xk of dtype dt, shaped [3, 2, 4] with dim `a` of
 * operand k 1 + k % 3 long (0 for operand 1 when n > 2). */
static void concat_case(size_t n, const char *dt, int a)
{
	int ax = a < 0 ? a + 3 : a;
	text t = {0};
	int64_t total = 0;
	put(&t, "sinter 1\nfunc @main(");
	for (size_t k = 0; k < n; k++) {
		int64_t s[3] = {3, 2, 4};
		s[ax] = n > 2 && k == 1 ? 0 : 1 + (int64_t)(k % 3);
		total += s[ax];
		put(&t, "%s%%x%zu: %s[%lld,%lld,%lld]", k ? ", " : "", k, dt, (long long)s[0], (long long)s[1],
		    (long long)s[2]);
	}
	int64_t os[3] = {3, 2, 4};
	os[ax] = total;
	put(&t, ") -> (%s[%lld,%lld,%lld]) {\n  %%c = concat(", dt, (long long)os[0], (long long)os[1], (long long)os[2]);
	for (size_t k = 0; k < n; k++)
		put(&t, "%s%%x%zu", k ? ", " : "", k);
	put(&t, ") axis=%d\n  return %%c\n}\n", a);
	char label[64];
	snprintf(label, sizeof label, "concat of %zu %s axis %d", n, dt, a);
	sinter_model *m = NULL;
	CHECK(sinter_model_parse(t.s, t.n, label, NULL, &m, &err) == SINTER_OK);
	CHECK(!m || sinter_model_init_random(m, 1, &err) == SINTER_OK); /* no params: an empty weight set */
	if (m)
		check_model(m, a, label);
	else
		fprintf(stderr, "%s: %s\n", label, err.message);
	sinter_model_free(m);
	free(t.s);
}

/* An ONNX Concat of 40 inputs [2, 1 + k % 4, 3] along axis 1. */
static void onnx_case(const char *dir)
{
	enum { N = 40 };
	pbw g = {0};
	const char *ins[N + 1];
	char names[N][16];
	int64_t total = 0;
	for (int k = 0; k < N; k++) {
		snprintf(names[k], sizeof names[k], "x%d", k);
		ins[k] = names[k];
		char w[16];
		snprintf(w, sizeof w, "%d", 1 + k % 4);
		total += 1 + k % 4;
		w_value(&g, 11, names[k], W_FLOAT, L("2", w, "3"));
	}
	ins[N] = NULL;
	pbw at = {0};
	w_attr_i(&at, "axis", 1);
	w_node(&g, "Concat", "cat", ins, L("y"), &at);
	char tot[24];
	snprintf(tot, sizeof tot, "%lld", (long long)total);
	w_value(&g, 12, "y", W_FLOAT, L("2", tot, "3"));
	pbw mb = w_model(&g, 17);
	char path[512];
	snprintf(path, sizeof path, "%s/concat40.onnx", dir);
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(mb.p, 1, mb.n, f) == mb.n);
	if (f)
		fclose(f);
	free(mb.p);
	sinter_model *m = NULL;
	CHECK(sinter_model_load(path, NULL, &m, &err) == SINTER_OK);
	if (m)
		check_model(m, 1, "onnx Concat of 40");
	else
		fprintf(stderr, "onnx: %s\n", err.message);
	sinter_model_free(m);
	unlink(path);
}

/* An L-layer decode step returning its caches stacked: hidden h [1,1,32]
 * (one token), per layer past keys pk<l> [1,2,5,16] (2 heads, 5 past
 * positions); the layer's new key linear(h) as [1,2,1,16] is appended
 * (concat along 2), unsqueezed into [1,1,2,6,16]; h goes on through
 * tanh(linear(h)); the L caches are concatenated along axis 0 into
 * [L,1,2,6,16] and returned with h. */
static void stacked_caches(int L)
{
	text t = {0};
	put(&t, "sinter 1\nfunc @main(%%h0: f32[1,1,32]");
	for (int l = 0; l < L; l++)
		put(&t, ", %%pk%d: f32[1,2,5,16]", l);
	put(&t, ") -> (f32[1,1,32], f32[%d,1,2,6,16]) {\n", L);
	for (int l = 0; l < L; l++) {
		put(&t, "  %%wk%d = param f32[32,32] \"wk%d\"\n  %%wo%d = param f32[32,32] \"wo%d\"\n", l, l, l, l);
		put(&t, "  %%kn%d = linear(%%h%d, %%wk%d)\n", l, l, l);
		put(&t, "  %%kr%d = reshape(%%kn%d) shape=[1,1,2,16]\n", l, l);
		put(&t, "  %%kt%d = transpose(%%kr%d) perm=[0,2,1,3]\n", l, l);
		put(&t, "  %%k%d = concat(%%pk%d, %%kt%d) axis=2\n", l, l, l);
		put(&t, "  %%u%d = unsqueeze(%%k%d) axes=[0]\n", l, l);
		put(&t, "  %%o%d = linear(%%h%d, %%wo%d)\n", l, l, l);
		put(&t, "  %%h%d = tanh(%%o%d)\n", l + 1, l);
	}
	put(&t, "  %%caches = concat(");
	for (int l = 0; l < L; l++)
		put(&t, "%s%%u%d", l ? ", " : "", l);
	put(&t, ") axis=0\n  return %%h%d, %%caches\n}\n", L);
	char label[64];
	snprintf(label, sizeof label, "stacked caches of %d layers", L);
	sinter_model *m = NULL;
	CHECK(sinter_model_parse(t.s, t.n, label, NULL, &m, &err) == SINTER_OK);
	free(t.s);
	if (!m) {
		fprintf(stderr, "%s: %s\n", label, err.message);
		return;
	}
	CHECK(sinter_model_init_random(m, 11, &err) == SINTER_OK);
	sinter_tensor *ins = NULL, *ref = NULL;
	size_t nin = 0;
	CHECK(sinter_model_random_inputs(m, 2000 + (uint64_t)getpid(), &ins, &nin, &err) == SINTER_OK);
	CHECK(sinter_model_run_ref(m, ins, nin, &ref, &err) == SINTER_OK);
	CHECK(ref && ref[1].rank == 5 && ref[1].shape[0] == L && ref[1].shape[3] == 6);
	/* the past keys sit in the stack as they came: [l, 0, h, 0..5, :] */
	bool past_ok = ref != NULL;
	for (int l = 0; ref && l < L; l++)
		for (int hd = 0; hd < 2; hd++)
			past_ok &= !memcmp((const float *)ref[1].data + ((size_t)l * 2 + hd) * 6 * 16,
					   (const float *)ins[1 + l].data + (size_t)hd * 5 * 16, 5 * 16 * 4);
	CHECK(past_ok);
	printf("%s: ref keeps the past keys in the stack: %s", label, past_ok ? "yes" : "NO");
	sinter_tensor *got = NULL;
	if (have_cpu && ref && run_cpu(m, false, ins, nin, &got)) {
		for (int k = 0; k < 2; k++) {
			const float *x = got[k].data, *y = ref[k].data;
			double num = 0, den = 0;
			for (size_t i = 0; i < ref[k].nbytes / 4; i++) {
				num += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
				den += (double)y[i] * y[i];
			}
			double e = sqrt(num) / (sqrt(den) + 1e-30);
			CHECK(got[k].nbytes == ref[k].nbytes && e < 2e-5);
			printf("; cpu output %d rel L2 %.3g", k, e);
		}
		bool same = true;
		for (int l = 0; l < L; l++)
			for (int hd = 0; hd < 2; hd++)
				same &= !memcmp((const float *)got[1].data + ((size_t)l * 2 + hd) * 6 * 16,
						(const float *)ins[1 + l].data + (size_t)hd * 5 * 16, 5 * 16 * 4);
		CHECK(same);
		printf(", past keys %s", same ? "kept" : "NOT KEPT");
		sinter_tensors_free(got, 2);
	} else {
		CHECK(!have_cpu);
	}
	printf("\n");
	sinter_tensors_free(ref, 2);
	sinter_tensors_free(ins, nin);
	sinter_model_free(m);
}

int main(void)
{
	char why[256];
	have_cpu = sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) == SINTER_OK;
	if (!have_cpu)
		printf("cpu device: skipped: %s\n", why);
	concat_case(1, "f32", 0);
	concat_case(8, "f16", 1);
	concat_case(8, "i64", -1);
	concat_case(33, "bf16", 0);
	concat_case(33, "bool", 2);
	concat_case(200, "f32", 1);
	concat_case(200, "u8", -1);
	char dir[] = "/tmp/sinter-concat-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	onnx_case(dir);
	rmdir(dir);
	stacked_caches(8);
	stacked_caches(16);
	return check_done("concat_many");
}
