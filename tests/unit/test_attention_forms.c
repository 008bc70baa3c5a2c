/* test_attention_forms.c: attention in the forms exporters write becomes
 * one scaled_dot_product_attention (passes/attention.c), in fp32 and bf16,
 * and computes what the graph as written does (issue 26, item 2).
 *
 * Each form is a tiny ONNX export under tests/onnx/attention/ (written by
 * its export.py: Hugging Face Llama eager, sdpa and bf16 with GQA, ViT's
 * sdpa path (a zero mask and the isnan guard), Llama and Mistral as the
 * suite exports them (the causal and sliding-window masks initializers:
 * the causal one becomes the causal flag); torch's
 * MultiheadAttention; the scale on q and k, masked_fill, repeat_interleave,
 * Tile and Gather repeats, integer and bool masks, a T5-style bias) or a
 * .sir text here (a scale above the mask, causal with a bias, multi-query
 * through casts, Swin's shifted windows, torch's isnan guard, and forms
 * that must stay). Per form and precision (fp32, bf16):
 *   - the default pipeline leaves `sdpa` attention nodes and no softmax
 *     (a form that must not match keeps its softmax), and for GQA forms no
 *     repeat of the keys and values (the op reads the KV heads);
 *   - the reference interpreter on the rewritten graph matches it on the
 *     graph as written (no passes, fp32 as declared) on random inputs;
 *   - so does the cpu device (its own default pipeline), when built.
 * And every attention layer of the exports under tests/onnx/models is one
 * node, in fp32 and bf16. Padding masks keep key 0, so that no row is wholly hidden (NaN or a
 * uniform average, which a comparison would not see through). */
#include "sinter.h"
#include "sinter_tools.h"

#include "check.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct form {
	const char *name; /* onnx/attention/NAME.onnx, or a text here (sir_of) */
	int sdpa;         /* attention nodes after the default pipeline */
	const char *gone; /* an op that must not be left (the GQA repeat) */
	double tol;       /* fp32: relative L2 against the graph as written */
	const char *has;  /* text the rewritten graph must have, or NULL */
} form;

/* (S + M) * c: the scale above the mask scales the mask too */
static const char *scale_above_mask =
	"sinter 1\n"
	"func @main(%q: f32[2,4,8,16], %k: f32[2,4,8,16], %v: f32[2,4,8,16], %m: f32[2,1,8,8]) -> (f32[2,4,8,16]) {\n"
	"  %kt = transpose(%k) perm=[0,1,3,2]\n"
	"  %s = matmul(%q, %kt)\n"
	"  %x = add(%s, %m)\n"
	"  %c = const f32[] 0.5\n"
	"  %y = mul(%x, %c)\n"
	"  %p = softmax(%y)\n"
	"  %a = matmul(%p, %v)\n"
	"  return %a\n"
	"}\n";

/* a causal where over iotas and a bias added below it: one additive mask */
static const char *causal_and_bias =
	"sinter 1\n"
	"func @main(%q: f32[2,4,8,16], %k: f32[2,4,8,16], %v: f32[2,4,8,16], %b: f32[1,4,8,8]) -> (f32[2,4,8,16]) {\n"
	"  %kt = transpose(%k) perm=[0,1,3,2]\n"
	"  %s = matmul(%q, %kt)\n"
	"  %c = const f32[] 0.25\n"
	"  %x = mul(%s, %c)\n"
	"  %y = add(%x, %b)\n"
	"  %row = iota i64[8,8]\n"
	"  %col = iota i64[8,8] axis=1\n"
	"  %causal = greater(%col, %row)\n"
	"  %ninf = const f32[] -inf\n"
	"  %z = where(%causal, %ninf, %y)\n"
	"  %p = softmax(%z)\n"
	"  %a = matmul(%p, %v)\n"
	"  return %a\n"
	"}\n";

/* multi-query: one KV head expanded to four, a div scale on k, casts
 * between the scores and the softmax (read through: the scores' rounding
 * to f16 is not kept, 2e-4 here) */
static const char *mqa_casts =
	"sinter 1\n"
	"func @main(%q: f32[2,4,8,16], %k: f32[2,1,8,16], %v: f32[2,1,8,16]) -> (f32[2,4,8,16]) {\n"
	"  %k5 = reshape(%k) shape=[2,1,1,8,16]\n"
	"  %ke = expand(%k5) shape=[2,1,4,8,16]\n"
	"  %kr = reshape(%ke) shape=[2,4,8,16]\n"
	"  %v5 = reshape(%v) shape=[2,1,1,8,16]\n"
	"  %ve = expand(%v5) shape=[2,1,4,8,16]\n"
	"  %vr = reshape(%ve) shape=[2,4,8,16]\n"
	"  %c = const f32[] 4\n"
	"  %kd = div(%kr, %c)\n"
	"  %kt = transpose(%kd) perm=[0,1,3,2]\n"
	"  %s = matmul(%q, %kt)\n"
	"  %s16 = cast(%s) dtype=f16\n"
	"  %s32 = cast(%s16) dtype=f32\n"
	"  %p = softmax(%s32)\n"
	"  %a = matmul(%p, %vr)\n"
	"  return %a\n"
	"}\n";

/* Swin's shifted windows, 2 images of 2 windows: the scores of the four
 * windows with a bias, reshaped to [images, windows, ...], a mask per
 * window added, and reshaped back */
static const char *shifted_windows =
	"sinter 1\n"
	"func @main(%q: f32[4,2,8,16], %k: f32[4,2,8,16], %v: f32[4,2,8,16], %bias: f32[1,2,8,8], %m: f32[1,2,1,8,8]) -> (f32[4,2,8,16]) {\n"
	"  %c = const f32[] 0.25\n"
	"  %qs = mul(%q, %c)\n"
	"  %kt = transpose(%k) perm=[0,1,3,2]\n"
	"  %s = matmul(%qs, %kt)\n"
	"  %x = add(%s, %bias)\n"
	"  %x5 = reshape(%x) shape=[2,2,2,8,8]\n"
	"  %y5 = add(%x5, %m)\n"
	"  %y = reshape(%y5) shape=[4,2,8,8]\n"
	"  %p = softmax(%y)\n"
	"  %a = matmul(%p, %v)\n"
	"  return %a\n"
	"}\n";

/* torch's SDPA decomposition with a -inf keep mask and the isnan guard:
 * matched with the fill made finite (no row is NaN, so none is zeroed) */
static const char *guard_inf =
	"sinter 1\n"
	"func @main(%q: f32[2,4,8,16], %k: f32[2,4,8,16], %v: f32[2,4,8,16], %mask: bool[2,8]) -> (f32[2,4,8,16]) {\n"
	"  %m = unsqueeze(%mask) axes=[1,2]\n"
	"  %c = const f32[] 0.5\n"
	"  %qs = mul(%q, %c)\n"
	"  %ks = mul(%k, %c)\n"
	"  %kt = transpose(%ks) perm=[0,1,3,2]\n"
	"  %s = matmul(%qs, %kt)\n"
	"  %ninf = const f32[] -inf\n"
	"  %x = where(%m, %s, %ninf)\n"
	"  %p = softmax(%x)\n"
	"  %n = isnan(%p)\n"
	"  %z = const f32[] 0\n"
	"  %g = where(%n, %z, %p)\n"
	"  %a = matmul(%g, %v)\n"
	"  return %a\n"
	"}\n";

/* must stay: the guard over an additive mask of unknown values (a row it
 * hides wholly with -inf is 0 here, NaN in the kernel) */
static const char *guard_unknown =
	"sinter 1\n"
	"func @main(%q: f32[2,4,8,16], %k: f32[2,4,8,16], %v: f32[2,4,8,16], %m: f32[2,1,8,8]) -> (f32[2,4,8,16]) {\n"
	"  %kt = transpose(%k) perm=[0,1,3,2]\n"
	"  %s = matmul(%q, %kt)\n"
	"  %x = add(%s, %m)\n"
	"  %p = softmax(%x)\n"
	"  %n = isnan(%p)\n"
	"  %z = const f32[] 0\n"
	"  %g = where(%n, %z, %p)\n"
	"  %a = matmul(%g, %v)\n"
	"  return %a\n"
	"}\n";

/* must stay: a where whose fill (-1) does not hide a score */
static const char *fill_keeps =
	"sinter 1\n"
	"func @main(%q: f32[2,4,8,16], %k: f32[2,4,8,16], %v: f32[2,4,8,16], %m: f32[2,1,8,8]) -> (f32[2,4,8,16]) {\n"
	"  %kt = transpose(%k) perm=[0,1,3,2]\n"
	"  %s = matmul(%q, %kt)\n"
	"  %z = const f32[] 0\n"
	"  %h = greater(%m, %z)\n"
	"  %f = const f32[] -1\n"
	"  %y = where(%h, %f, %s)\n"
	"  %p = softmax(%y)\n"
	"  %a = matmul(%p, %v)\n"
	"  return %a\n"
	"}\n";

static const form forms[] = {
	{"llama_eager", 1, " = expand(", 1e-5, NULL},
	{"llama_sdpa", 1, " = expand(", 1e-5, NULL},
	{"llama_eager_bf16", 1, " = expand(", 2e-2, NULL},
	{"mha", 1, NULL, 1e-5, NULL},
	{"qk_scale_masked_fill", 1, NULL, 1e-5, NULL},
	{"repeat_interleave_where", 1, " = expand(", 1e-5, NULL},
	{"tile_int_mask", 1, " = expand(", 1e-5, NULL},
	{"gather_causal_arange", 1, " = gather(", 1e-5, NULL},
	{"bias_and_mask", 1, NULL, 1e-5, NULL},
	{"cast_softmax_bf16", 1, NULL, 2e-2, NULL},
	{"vit_sdpa", 1, NULL, 1e-5, NULL},
	{"llama_causal", 1, " = expand(", 1e-5, "causal=true"},
	{"mistral_sliding_window", 1, " = expand(", 1e-5, NULL},
	{"scale_above_mask", 1, NULL, 1e-5, NULL},
	{"causal_and_bias", 1, NULL, 1e-5, NULL},
	{"mqa_casts", 1, " = expand(", 1e-3, NULL}, /* the scores' f16 rounding is not kept */
	{"shifted_windows", 1, NULL, 1e-5, NULL},
	{"guard_inf", 1, NULL, 1e-5, NULL},
	{"guard_unknown", 0, NULL, 1e-5, NULL},
	{"fill_keeps", 0, NULL, 1e-5, NULL},
};

static const char *sir_of(const char *name)
{
	if (!strcmp(name, "scale_above_mask"))
		return scale_above_mask;
	if (!strcmp(name, "causal_and_bias"))
		return causal_and_bias;
	if (!strcmp(name, "mqa_casts"))
		return mqa_casts;
	if (!strcmp(name, "shifted_windows"))
		return shifted_windows;
	if (!strcmp(name, "guard_inf"))
		return guard_inf;
	if (!strcmp(name, "guard_unknown"))
		return guard_unknown;
	if (!strcmp(name, "fill_keeps"))
		return fill_keeps;
	return NULL;
}

/* The form's model with its weights (an export's own, else random). NULL
 * when it cannot be read (reported). Free with sinter_model_free. */
static sinter_model *load(const form *f)
{
	sinter_error err;
	sinter_model *m = NULL;
	const char *sir = sir_of(f->name);
	char path[256];
	snprintf(path, sizeof path, "onnx/attention/%s.onnx", f->name);
	sinter_status rc = sir ? sinter_model_parse(sir, strlen(sir), f->name, NULL, &m, &err)
			       : sinter_model_load(path, NULL, &m, &err);
	if (rc == SINTER_OK && sir)
		rc = sinter_model_init_random(m, 7, &err);
	if (rc != SINTER_OK) {
		fprintf(stderr, "%s: %s\n", f->name, err.message);
		CHECK(0);
		sinter_model_free(m);
		return NULL;
	}
	return m;
}

static int count(const char *text, const char *s)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, s)); p += strlen(s))
		n++;
	return n;
}

static double value(const sinter_tensor *t, size_t i)
{
	if (t->dtype == SINTER_BF16) {
		uint32_t b = (uint32_t)((const uint16_t *)t->data)[i] << 16;
		float x;
		memcpy(&x, &b, 4);
		return x;
	}
	return ((const float *)t->data)[i];
}

/* ||a - b|| / ||b||; NaN when either has a NaN */
static double rel_l2(const sinter_tensor *a, const sinter_tensor *b)
{
	size_t n = b->nbytes / sinter_dtype_size(b->dtype);
	if (a->nbytes / sinter_dtype_size(a->dtype) != n)
		return NAN;
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		double x = value(a, i), y = value(b, i);
		num += (x - y) * (x - y);
		den += y * y;
	}
	return sqrt(num) / (sqrt(den) + 1e-30);
}

/* Padding masks (inputs named mask): 0/1, key 0 kept. */
static void fix_masks(sinter_tensor *ins, size_t nin, uint64_t seed)
{
	for (size_t i = 0; i < nin; i++) {
		sinter_tensor *t = &ins[i];
		if (!t->name || strcmp(t->name, "mask") || t->rank != 2)
			continue;
		int64_t b = t->shape[0], l = t->shape[1];
		for (int64_t r = 0; r < b; r++)
			for (int64_t c = 0; c < l; c++) {
				seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
				int keep = c == 0 || (seed >> 33) % 4 != 0;
				if (t->dtype == SINTER_BOOL)
					((uint8_t *)t->data)[r * l + c] = (uint8_t)keep;
				else if (t->dtype == SINTER_I64)
					((int64_t *)t->data)[r * l + c] = keep;
			}
	}
}

static void compare(const char *what, const form *f, const sinter_tensor *got, const sinter_tensor *want,
		    size_t nout, double tol)
{
	for (size_t k = 0; got && want && k < nout; k++) {
		double e = rel_l2(&got[k], &want[k]);
		printf("  %s %s: relative L2 %.3g (tol %g)\n", f->name, what, e, tol);
		CHECK(e <= tol);
	}
}

static void run_form(const form *f, bool cpu, uint64_t seed)
{
	sinter_error err;
	sinter_model *m0 = load(f);
	if (!m0)
		return;
	sinter_tensor *ins = NULL, *want = NULL;
	size_t nin = 0, nout = sinter_model_num_outputs(m0);
	CHECK(sinter_model_random_inputs(m0, seed, &ins, &nin, &err) == SINTER_OK);
	fix_masks(ins, nin, seed);
	if (sinter_model_run_ref(m0, ins, nin, &want, &err) != SINTER_OK) {
		fprintf(stderr, "%s: ref: %s\n", f->name, err.message);
		CHECK(0);
	}
	static const sinter_precision precs[] = {SINTER_PREC_FP32, SINTER_PREC_BF16};
	for (int pi = 0; pi < 2; pi++) {
		sinter_precision prec = precs[pi];
		const char *pn = prec == SINTER_PREC_FP32 ? "fp32" : "bf16";
		double tol = prec == SINTER_PREC_FP32 ? f->tol : 3e-2;
		char what[64];
		sinter_model *m = load(f);
		if (!m)
			continue;
		if (sinter_model_optimize(m, "default", NULL, prec, 0, NULL, &err) != SINTER_OK) {
			fprintf(stderr, "%s %s: passes: %s\n", f->name, pn, err.message);
			CHECK(0);
		}
		char *text = NULL;
		(void)sinter_model_print(m, &text, NULL);
		int na = text ? count(text, " = scaled_dot_product_attention(") : -1;
		int ns = text ? count(text, " = softmax(") : -1;
		int ng = text && f->gone ? count(text, f->gone) : 0;
		CHECK(!f->has || (text && strstr(text, f->has)));
		printf("%s %s: %d attention, %d softmax%s\n", f->name, pn, na, ns,
		       f->gone ? (ng ? ", the repeat left" : ", no repeat") : "");
		CHECK(na == f->sdpa);
		CHECK(ns == (f->sdpa ? 0 : 1));
		CHECK(ng == 0);
		sinter_free(text);
		sinter_tensor *got = NULL;
		if (sinter_model_run_ref(m, ins, nin, &got, &err) != SINTER_OK) {
			fprintf(stderr, "%s %s: ref: %s\n", f->name, pn, err.message);
			CHECK(0);
		}
		snprintf(what, sizeof what, "%s ref", pn);
		compare(what, f, got, want, nout, tol);
		sinter_tensors_free(got, got ? nout : 0);
		sinter_model_free(m);
		if (!cpu)
			continue;
		sinter_compile_options o;
		sinter_compile_options_init(&o);
		o.device = SINTER_DEVICE_CPU;
		o.precision = prec;
		o.cache_dir = "";
		o.threads = 2;
		sinter_compiled *c = NULL;
		got = NULL;
		if (sinter_model_compile(m0, &o, &c, NULL, &err) != SINTER_OK ||
		    sinter_compiled_run(c, ins, nin, &got, &err) != SINTER_OK) {
			fprintf(stderr, "%s %s: cpu: %s\n", f->name, pn, err.message);
			CHECK(0);
		}
		snprintf(what, sizeof what, "%s cpu", pn);
		compare(what, f, got, want, nout, prec == SINTER_PREC_FP32 ? fmax(tol, 1e-4) : tol);
		sinter_tensors_free(got, got ? nout : 0);
		sinter_compiled_free(c);
	}
	sinter_tensors_free(want, want ? nout : 0);
	sinter_tensors_free(ins, nin);
	sinter_model_free(m0);
}

/* The committed exports of tests/onnx/models (scripts/coverage.py
 * --save-small): every attention layer one node, in fp32 and bf16, and
 * no repeat of the keys and values left (Llama, Mistral and Qwen2 have
 * grouped-query heads). Their numbers are checked by onnx.models. */
static void models(void)
{
	static const struct {
		const char *name;
		int layers;
	} ms[] = {
		{"bert", 2}, {"clip_text", 2}, {"clip_vision", 2}, {"distilbert", 2}, {"gpt2", 2},
		{"llama", 2}, {"mistral", 2}, {"qwen2", 2}, {"roberta", 2}, {"swin", 4},
		{"t5_encoder", 2}, {"unet_block", 1}, {"vit", 2}, {"vit_hf", 2}, {"whisper_encoder", 2},
	};
	for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
		for (int pi = 0; pi < 2; pi++) {
			char path[256];
			snprintf(path, sizeof path, "onnx/models/%s/model.onnx", ms[i].name);
			sinter_error err;
			sinter_model *m = NULL;
			if (sinter_model_load(path, NULL, &m, &err) != SINTER_OK ||
			    sinter_model_optimize(m, "default", NULL, pi ? SINTER_PREC_BF16 : SINTER_PREC_FP32, 0, NULL,
						  &err) != SINTER_OK) {
				fprintf(stderr, "%s: %s\n", path, err.message);
				CHECK(0);
				sinter_model_free(m);
				continue;
			}
			char *text = NULL;
			(void)sinter_model_print(m, &text, NULL);
			int na = text ? count(text, " = scaled_dot_product_attention(") : -1;
			int ns = text ? count(text, " = softmax(") : -1;
			int ne = text ? count(text, " = expand(") : -1;
			printf("models/%s %s: %d attention layers, %d attention nodes, %d softmax, %d expand\n",
			       ms[i].name, pi ? "bf16" : "fp32", ms[i].layers, na, ns, ne);
			CHECK(na == ms[i].layers && ns == 0 && ne == 0);
			sinter_free(text);
			sinter_model_free(m);
		}
}

int main(void)
{
	char why[256];
	bool cpu = sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) == SINTER_OK;
	if (!cpu)
		printf("cpu device: skipped: %s\n", why);
	/* $SINTER_TEST_SEED replays a run (its seed is printed) */
	const char *env = getenv("SINTER_TEST_SEED");
	uint64_t seed = env && *env ? strtoull(env, NULL, 10) : 20261128;
	printf("seed %llu\n", (unsigned long long)seed);
	for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
		run_form(&forms[i], cpu, seed + i);
	models();
	return check_done("attention_forms");
}
