/* test_cpu_bf16.c: bf16 storage on the cpu device, bit by bit.
 *
 * The rounding f32 -> bf16 (to nearest, ties to even, NaN kept quiet) is
 * done in two places: the LLVM IR that cl_emit.c generates for every bf16
 * store and cast, and the runtime's C for the products, convolutions,
 * attention and pooling (cpu_gemm.c, cpu_exec.c's staging). Both are
 * checked here against bits worked out by hand:
 *   - a cast f32 -> bf16 stored as an output (the generated store), and
 *     the same value negated and cast back to f32 (the generated cast);
 *   - a matmul of bf16 rows by a column of ones whose sums land exactly
 *     on ties, above them and on infinity (the runtime's rounding; a sum
 *     of two bf16 values is exact in f32, so the only rounding is the
 *     store's).
 * Then --precision bf16 on a model with a 256 x 256 weight: accepted on
 * cpu, the weight image about half the fp32 one, the output within 2e-2
 * relative L2 of the fp32 reference (the CUDA bf16 tests' tolerance);
 * a second compile is a plan-cache hit with the same bits out (the
 * fp32 plan's entry is not taken for it; two inputs, whose casts the
 * precision pass puts between them, so the stored graph's node order
 * must be its text's); fp16 is refused (a usage
 * error). A timestep embedding with timesteps up to 1000 within 2e-2 in
 * bf16 (its angles stay f32). Skipped without the cpu device. */
#include "sinter.h"
#include "sinter_tools.h"

#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static float f_of(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* Inputs (f32 bits) and the bf16 bits a correct rounding gives. */
static const struct {
	uint32_t in;
	uint16_t want;
	const char *what;
} cases[] = {
	{0x3F800000u, 0x3F80, "1.0, exact"},
	{0x3F808000u, 0x3F80, "1 + 2^-8: a tie, the kept half even: down"},
	{0x3F818000u, 0x3F82, "1 + 2^-7 + 2^-8: a tie, the kept half odd: up to even"},
	{0x3F808001u, 0x3F81, "just above a tie: up"},
	{0x3F817FFFu, 0x3F81, "just below a tie: down"},
	{0xBF818000u, 0xBF82, "-(1 + 2^-7 + 2^-8): ties to even by magnitude"},
	{0x7F800000u, 0x7F80, "+inf"},
	{0xFF800000u, 0xFF80, "-inf"},
	{0x7F7FFFFFu, 0x7F80, "the largest float rounds up to +inf"},
	{0x7F7F7FFFu, 0x7F7F, "below the tie under the largest bf16: stays finite"},
	{0x7FC00000u, 0x7FC0, "a quiet NaN"},
	{0x7F800001u, 0x7FC0, "a NaN with only low payload bits: quiet NaN, not inf"},
	{0xFFFFFFFFu, 0xFFFF, "a NaN with every bit set: no carry out of the sign"},
	{0x00008000u, 0x0000, "a subnormal tie, even: down to +0"},
	{0x00018000u, 0x0002, "a subnormal tie, odd: up"},
	{0x00000001u, 0x0000, "the smallest subnormal: +0"},
	{0x80000000u, 0x8000, "-0"},
	{0x80008001u, 0x8001, "a negative subnormal above a tie: away from zero"},
};

static const char *cast_model = "sinter 1\n"
				"func @main(%x: f32[18]) -> (bf16[18], f32[18]) {\n"
				"  %b = cast(%x) dtype=bf16\n"
				"  %n = neg(%b)\n"
				"  %c = cast(%n) dtype=f32\n"
				"  return %b, %c\n"
				"}\n";

static const char *gemm_model = "sinter 1\n"
				"func @main(%x: bf16[5,2]) -> (bf16[5,1]) {\n"
				"  %w = const bf16[2,1] [1, 1]\n"
				"  %y = matmul(%x, %w)\n"
				"  return %y\n"
				"}\n";

static const char *big_model = "sinter 1\n"
			       "func @main(%x: f32[8,256], %z: f32[256]) -> (f32[8,256]) {\n"
			       "  %w = param f32[256,256] \"w\"\n"
			       "  %b = param f32[256] \"b\"\n"
			       "  %l = linear(%x, %w, %b)\n"
			       "  %a = add(%l, %z)\n"
			       "  %t = tanh(%a)\n"
			       "  %s = softmax(%t) axis=-1\n"
			       "  return %s\n"
			       "}\n";

static sinter_compiled *compile(sinter_model *m, const char *dir, sinter_precision p, sinter_compile_stats *st)
{
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.device = SINTER_DEVICE_CPU;
	o.cache_dir = dir;
	o.threads = 2;
	o.precision = p;
	o.passes = p == SINTER_PREC_FP32 ? "" : NULL; /* the graph as written unless a precision is asked for */
	sinter_compiled *c = NULL;
	sinter_error err;
	if (sinter_model_compile(m, &o, &c, st, &err) != SINTER_OK)
		fprintf(stderr, "compile: %s\n", err.message);
	return c;
}

static sinter_model *parse(const char *text, const char *name)
{
	sinter_model *m = NULL;
	sinter_error err;
	if (sinter_model_parse(text, strlen(text), name, NULL, &m, &err) != SINTER_OK ||
	    sinter_model_init_random(m, 11, &err) != SINTER_OK) /* the cpu device wants weights, even none */
		fprintf(stderr, "%s: %s\n", name, err.message);
	return m;
}

static void test_cast(const char *dir)
{
	size_t n = COUNT(cases);
	sinter_model *m = parse(cast_model, "cast.sir");
	CHECK(m != NULL);
	if (!m)
		return;
	sinter_compile_stats st;
	sinter_compile_stats_init(&st);
	sinter_compiled *c = compile(m, dir, SINTER_PREC_FP32, &st);
	CHECK(c != NULL && st.ref_steps == 0); /* generated code, not the reference interpreter */
	float x[COUNT(cases)];
	for (size_t i = 0; i < n; i++)
		x[i] = f_of(cases[i].in);
	sinter_tensor in = {.name = "x", .dtype = SINTER_F32, .rank = 1, .shape = {(int64_t)n}, .data = x,
			    .nbytes = sizeof x};
	sinter_tensor *got = NULL;
	sinter_error err;
	CHECK(c && sinter_compiled_run(c, &in, 1, &got, &err) == SINTER_OK);
	for (size_t i = 0; got && i < n; i++) {
		uint16_t b = ((const uint16_t *)got[0].data)[i];
		uint32_t cb;
		memcpy(&cb, (const float *)got[1].data + i, 4);
		/* neg flips the sign bit; cast to f32 widens exactly */
		uint32_t want_c = ((uint32_t)(cases[i].want ^ 0x8000u)) << 16;
		bool ok = b == cases[i].want && cb == want_c;
		if (!ok)
			printf("cast %08x: stored %04x (want %04x), -x as f32 %08x (want %08x): %s\n", cases[i].in, b,
			       cases[i].want, cb, want_c, cases[i].what);
		CHECK(ok);
	}
	sinter_tensors_free(got, 2);
	sinter_compiled_free(c);
	sinter_model_free(m);
}

static void test_gemm(const char *dir)
{
	sinter_model *m = parse(gemm_model, "gemm.sir");
	CHECK(m != NULL);
	if (!m)
		return;
	sinter_compile_stats st;
	sinter_compile_stats_init(&st);
	sinter_compiled *c = compile(m, dir, SINTER_PREC_FP32, &st);
	CHECK(c != NULL && st.ref_steps == 0);
	/* rows of bf16 bits: 1 = 3F80, 1 + 2^-7 = 3F81, 2^-8 = 3B80,
	 * 2^-8 + 2^-9 = 3BC0, +inf = 7F80, qNaN = 7FC0, the largest bf16 7F7F */
	uint16_t x[5][2] = {{0x3F80, 0x3B80}, {0x3F81, 0x3B80}, {0x3F80, 0x3BC0}, {0x7F80, 0x3F80}, {0x7FC0, 0x3F80}};
	uint16_t want[5] = {
		0x3F80, /* 1 + 2^-8: a tie, even: down */
		0x3F82, /* 1 + 2^-7 + 2^-8: a tie, odd: up */
		0x3F81, /* 1 + 2^-8 + 2^-9: above the tie: up */
		0x7F80, /* inf + 1 */
		0x7FC0, /* NaN (any NaN: checked as one) */
	};
	sinter_tensor in = {.name = "x", .dtype = SINTER_BF16, .rank = 2, .shape = {5, 2}, .data = x, .nbytes = sizeof x};
	sinter_tensor *got = NULL;
	sinter_error err;
	CHECK(c && sinter_compiled_run(c, &in, 1, &got, &err) == SINTER_OK);
	for (int i = 0; got && i < 5; i++) {
		uint16_t b = ((const uint16_t *)got[0].data)[i];
		bool nan = (want[i] & 0x7FFF) > 0x7F80;
		bool ok = nan ? (b & 0x7FFF) > 0x7F80 : b == want[i];
		if (!ok)
			printf("gemm row %d: %04x, want %04x\n", i, b, want[i]);
		CHECK(ok);
	}
	sinter_tensors_free(got, 1);
	sinter_compiled_free(c);
	sinter_model_free(m);
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

static void test_precision(const char *dir)
{
	sinter_model *m = parse(big_model, "big.sir");
	CHECK(m != NULL);
	if (!m)
		return;
	sinter_error err;
	sinter_tensor *ins = NULL, *want = NULL, *got = NULL;
	size_t nin = 0;
	CHECK(sinter_model_random_inputs(m, (uint64_t)getpid(), &ins, &nin, &err) == SINTER_OK);
	CHECK(sinter_model_run_ref(m, ins, nin, &want, &err) == SINTER_OK);
	sinter_compile_stats s32, s16;
	sinter_compile_stats_init(&s32);
	sinter_compile_stats_init(&s16);
	sinter_compiled *c32 = compile(m, dir, SINTER_PREC_FP32, &s32);
	sinter_compiled *c16 = compile(m, dir, SINTER_PREC_BF16, &s16);
	CHECK(c32 && c16);
	printf("weight image: fp32 %llu bytes, bf16 %llu bytes; bf16 steps on the reference interpreter: %zu\n",
	       (unsigned long long)s32.weight_bytes, (unsigned long long)s16.weight_bytes, s16.ref_steps);
	CHECK(s16.weight_bytes * 2 <= s32.weight_bytes + 256 && s16.weight_bytes * 2 >= s32.weight_bytes - 256);
	CHECK(s16.ref_steps == 0);
	CHECK(!s16.plan_hit); /* the fp32 plan's entry is not the bf16 plan's */
	CHECK(c16 && sinter_compiled_run(c16, ins, nin, &got, &err) == SINTER_OK);
	/* the plan cache carries bf16 plans: a second compile is a hit (no
	 * pass, no LLVM), same bits out */
	sinter_compile_stats s2;
	sinter_compile_stats_init(&s2);
	sinter_compiled *c2 = compile(m, dir, SINTER_PREC_BF16, &s2);
	sinter_tensor *got2 = NULL;
	CHECK(c2 && s2.plan_hit && s2.weight_bytes == s16.weight_bytes);
	CHECK(c2 && sinter_compiled_run(c2, ins, nin, &got2, &err) == SINTER_OK);
	CHECK(got && got2 && !memcmp(got[0].data, got2[0].data, got[0].nbytes));
	sinter_tensors_free(got2, 1);
	sinter_compiled_free(c2);
	if (got && want) {
		double e = rel_l2(&got[0], &want[0]);
		printf("bf16 against the fp32 reference: relative L2 %.3g\n", e);
		CHECK(e > 0 && e < 2e-2); /* not zero: the weights really were rounded */
	}
	sinter_tensors_free(got, 1);
	sinter_compiled_free(c32);
	sinter_compiled_free(c16);
	sinter_compiled *c = compile(m, dir, SINTER_PREC_FP16, NULL);
	CHECK(c == NULL);
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.device = SINTER_DEVICE_CPU;
	o.cache_dir = dir;
	o.precision = SINTER_PREC_FP16;
	CHECK(sinter_model_compile(m, &o, &c, NULL, &err) == SINTER_E_USAGE && strstr(err.message, "fp16") != NULL);
	sinter_tensors_free(ins, nin);
	sinter_tensors_free(want, 1);
	sinter_model_free(m);
}

/* A DDPM timestep embedding (issue 26): sin and cos of t * freqs for t up
 * to 1000 stay f32 under --precision bf16 (the precision pass); rounding
 * the angles to bf16 (spacing 4 there) made them noise: 0.4 relative L2
 * against the fp32 reference, now about 3e-3. */
static const char *temb_model = "sinter 1\n"
				"func @main(%t: i64[32]) -> (f32[32,16]) {\n"
				"  %f = const f32[1,8] [1, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001, 0.0003]\n"
				"  %tf = cast(%t) dtype=f32\n"
				"  %tu = unsqueeze(%tf) axes=[1]\n"
				"  %a = mul(%tu, %f)\n"
				"  %c = cos(%a)\n"
				"  %s = sin(%a)\n"
				"  %e = concat(%c, %s) axis=-1\n"
				"  %w = param f32[16,16] \"t1.weight\"\n"
				"  %b = param f32[16] \"t1.bias\"\n"
				"  %y = linear(%e, %w, %b)\n"
				"  return %y\n"
				"}\n";

static void test_timestep(const char *dir)
{
	sinter_model *m = parse(temb_model, "temb.sir");
	CHECK(m != NULL);
	if (!m)
		return;
	int64_t t[32];
	uint64_t z = (uint64_t)getpid();
	for (size_t i = 0; i < COUNT(t); i++) { /* timesteps in [0, 1000) */
		z = z * 6364136223846793005ull + 1442695040888963407ull;
		t[i] = (int64_t)((z >> 33) % 1000);
	}
	sinter_tensor in = {.name = "t", .dtype = SINTER_I64, .rank = 1, .shape = {32}, .data = t, .nbytes = sizeof t};
	sinter_tensor *want = NULL, *got = NULL;
	sinter_error err;
	CHECK(sinter_model_run_ref(m, &in, 1, &want, &err) == SINTER_OK);
	sinter_compiled *c = compile(m, dir, SINTER_PREC_BF16, NULL);
	CHECK(c && sinter_compiled_run(c, &in, 1, &got, &err) == SINTER_OK);
	if (got && want) {
		double e = rel_l2(&got[0], &want[0]);
		printf("timestep embedding, bf16 against the fp32 reference: relative L2 %.3g\n", e);
		CHECK(e > 0 && e < 2e-2);
	}
	sinter_tensors_free(got, 1);
	sinter_tensors_free(want, 1);
	sinter_compiled_free(c);
	sinter_model_free(m);
}

int main(void)
{
	char why[256];
	if (sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) != SINTER_OK) {
		printf("skipped: %s\n", why);
		return 0;
	}
	char dir[] = "/tmp/sinter-cpu-bf16-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	test_cast(dir);
	test_gemm(dir);
	test_precision(dir);
	test_timestep(dir);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	return check_done("cpu_bf16");
}
