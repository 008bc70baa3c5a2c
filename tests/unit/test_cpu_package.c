/* test_cpu_package.c: AOT packages of cpu plans (sinter_model_compile_kernels
 * with device "cpu", sinter_package_load).
 *   - round trip: a model with a fused pointwise chain, a layer_norm, a
 *     linear with its epilogue, a softmax and a fallback (cumsum) is
 *     compiled to a package; the package, loaded with no cache at all
 *     (it must JIT-compile nothing: no LLVM time, no cache), gives the
 *     same bits as the compiled plan on the same fresh random inputs, and
 *     matches the reference interpreter (relative L2 < 2e-5); the same in
 *     bf16 (same bits as the bf16 plan, within 2e-2 of the reference);
 *   - damage: a flipped byte in the tables or in the weight image, every
 *     truncation point of a set, an empty file, garbage: SINTER_E_INPUT
 *     naming the file, never a crash; a plan-cache entry is not a package;
 *   - foreign: a package whose code is for another target triple, or for
 *     a CPU feature this one lacks, is refused (SINTER_E_ENV) naming it;
 *     a CUDA package asked for on cpu, and a cpu package asked for on
 *     cuda, are usage errors naming the device each runs on.
 * Skipped without the cpu device. */
#include "sinter.h"
#include "sinter_tools.h"

#include "check.h"
#include "codegen/cl.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *model =
	"sinter 1\n"
	"func @main(%x: f32[4,37], %y: f32[37]) -> (f32[4,16], f32[4,37], f32[4,37]) {\n"
	"  %w = param f32[16,37] \"w\"\n"
	"  %b = param f32[16] \"b\"\n"
	"  %g = param f32[37] \"g\"\n"
	"  %a = add(%x, %y)\n"
	"  %t = tanh(%a)\n"
	"  %s = sigmoid(%t)\n"
	"  %ln = layer_norm(%s, %g) axis=-1\n"
	"  %l = linear(%ln, %w, %b)\n"
	"  %r = relu(%l)\n"
	"  %sm = softmax(%a) axis=-1\n"
	"  %cs = cumsum(%x) axis=1\n"
	"  return %r, %sm, %cs\n"
	"}\n";

static char dir[] = "/tmp/sinter-cpu-pkg-XXXXXX";

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

static void opts(sinter_compile_options *o, sinter_precision p, const char *cache)
{
	sinter_compile_options_init(o);
	o->device = SINTER_DEVICE_CPU;
	o->cache_dir = cache;
	o->threads = 2;
	o->precision = p;
	o->no_plan_cache = true;
}

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)len + 1);
	if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*n = (size_t)len;
	return b;
}

static void spit(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (f) {
		if (n)
			fwrite(b, 1, n, f);
		fclose(f);
	}
}

/* Loading path on cpu fails with want, the message naming the file and
 * holding what when it is not NULL. */
static void refused(const char *path, sinter_device device, sinter_status want, const char *what)
{
	sinter_compile_options o;
	opts(&o, SINTER_PREC_FP32, "");
	o.device = device;
	sinter_compiled *c = NULL;
	sinter_error err = {0};
	sinter_status st = sinter_package_load(path, &o, &c, NULL, &err);
	bool ok = st == want && !c && strstr(err.message, path) && (!what || strstr(err.message, what));
	if (!ok)
		printf("load %s (device %s): status %d (want %d): %s\n", path, sinter_device_name(device), (int)st, (int)want,
		       err.message);
	CHECK(ok);
	sinter_compiled_free(c);
}

/* Compiles m to a package in precision p and checks its round trip. */
static void round_trip(sinter_model *m, sinter_precision p, const sinter_tensor *ins, size_t nin,
		       const sinter_tensor *want, double tol, const char *pkg)
{
	char cache[600];
	snprintf(cache, sizeof cache, "%s/cache", dir);
	sinter_compile_options o;
	opts(&o, p, cache);
	sinter_error err;
	sinter_compile_stats cs;
	sinter_compile_stats_init(&cs);
	if (sinter_model_compile_kernels(m, &o, pkg, &cs, &err) != SINTER_OK) {
		printf("compile_kernels: %s\n", err.message);
		CHECK(0);
	}
	CHECK(cs.kernels >= 2 && cs.ref_steps == 1);
	sinter_compiled *c = NULL, *pc = NULL;
	CHECK(sinter_model_compile(m, &o, &c, NULL, &err) == SINTER_OK);
	/* the package: no cache at all, nothing compiled */
	sinter_compile_options lo;
	opts(&lo, SINTER_PREC_FP32, "");
	lo.device = SINTER_DEVICE_DEFAULT; /* routed by its contents */
	sinter_compile_stats ls;
	sinter_compile_stats_init(&ls);
	CHECK(sinter_package_load(pkg, &lo, &pc, &ls, &err) == SINTER_OK);
	if (!c || !pc) {
		printf("%s\n", err.message);
		sinter_compiled_free(c);
		return;
	}
	CHECK(sinter_compiled_device(pc) == SINTER_DEVICE_CPU);
	CHECK(ls.plan_hit && ls.nvrtc_s == 0 && ls.kernels == cs.kernels && ls.weight_bytes == cs.weight_bytes);
	CHECK(sinter_compiled_num_inputs(pc) == 2 && sinter_compiled_num_outputs(pc) == 3);
	sinter_tensor d;
	CHECK(sinter_compiled_input(pc, 0, &d, NULL) == SINTER_OK && d.dtype == SINTER_F32 && d.rank == 2 && d.shape[1] == 37);
	sinter_tensor *a = NULL, *b = NULL;
	CHECK(sinter_compiled_run(c, ins, nin, &a, &err) == SINTER_OK);
	CHECK(sinter_compiled_run(pc, ins, nin, &b, &err) == SINTER_OK);
	for (int k = 0; a && b && k < 3; k++) {
		CHECK(a[k].nbytes == b[k].nbytes && !memcmp(a[k].data, b[k].data, a[k].nbytes));
		double e = rel_l2(&b[k], &want[k]);
		printf("%s output %d: same bits as the compiled plan, relative L2 %.3g against the reference\n",
		       p == SINTER_PREC_BF16 ? "bf16" : "fp32", k, e);
		CHECK(e < tol);
	}
	sinter_tensors_free(a, 3);
	sinter_tensors_free(b, 3);
	sinter_compiled_free(c);
	sinter_compiled_free(pc);
}

/* The first *.plan under dir/plans (a plan-cache entry), into out. */
static bool find_entry(const char *cache, char *out, size_t cap)
{
	char sub[700];
	snprintf(sub, sizeof sub, "%s/plans", cache);
	DIR *d = opendir(sub);
	struct dirent *e;
	bool found = false;
	while (d && !found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[1000];
		snprintf(p, sizeof p, "%s/%s", sub, e->d_name);
		DIR *d2 = opendir(p);
		struct dirent *f;
		while (d2 && !found && (f = readdir(d2))) {
			size_t n = strlen(f->d_name);
			if (n > 5 && !strcmp(f->d_name + n - 5, ".plan")) {
				/* a path that does not fit is not found */
				found = snprintf(out, cap, "%s/%s", p, f->d_name) < (int)cap;
			}
		}
		if (d2)
			closedir(d2);
	}
	if (d)
		closedir(d);
	return found;
}

/* A copy of package pkg whose code claims another host. */
static bool rehost(const char *pkg, const char *host, const char *out)
{
	cl_plan *p = NULL;
	cg_plan_info info;
	sn_err e = {0};
	if (cl_package_read(pkg, &p, &info, &e) != SN_OK)
		return false;
	free(p->host);
	p->host = strdup(host);
	bool ok = p->host && cl_package_write(out, p, &info, &e) == SN_OK;
	cl_plan_free(p);
	return ok;
}

int main(void)
{
	char why[256];
	if (sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) != SINTER_OK) {
		printf("skipped: %s\n", why);
		return 0;
	}
	CHECK(mkdtemp(dir) != NULL);
	sinter_error err;
	sinter_model *m = NULL;
	CHECK(sinter_model_parse(model, strlen(model), "pkg.sir", NULL, &m, &err) == SINTER_OK);
	CHECK(sinter_model_init_random(m, 5, &err) == SINTER_OK);
	sinter_tensor *ins = NULL, *want = NULL;
	size_t nin = 0;
	CHECK(sinter_model_random_inputs(m, (uint64_t)getpid(), &ins, &nin, &err) == SINTER_OK);
	CHECK(sinter_model_run_ref(m, ins, nin, &want, &err) == SINTER_OK);
	char pkg[600], pkg16[600], bad[600];
	snprintf(pkg, sizeof pkg, "%s/m.sinterpkg", dir);
	snprintf(pkg16, sizeof pkg16, "%s/m16.sinterpkg", dir);
	snprintf(bad, sizeof bad, "%s/bad.sinterpkg", dir);
	round_trip(m, SINTER_PREC_FP32, ins, nin, want, 2e-5, pkg);
	round_trip(m, SINTER_PREC_BF16, ins, nin, want, 2e-2, pkg16);

	/* damage */
	size_t n = 0;
	char *bytes = slurp(pkg, &n);
	CHECK(bytes && n > 8192);
	if (bytes && n > 8192) {
		char *b = malloc(n);
		memcpy(b, bytes, n);
		b[200] ^= 0x10; /* in the tables */
		spit(bad, b, n);
		refused(bad, SINTER_DEVICE_CPU, SINTER_E_INPUT, "checksum mismatch");
		refused(bad, SINTER_DEVICE_DEFAULT, SINTER_E_INPUT, "checksum mismatch");
		memcpy(b, bytes, n);
		b[n - 3] ^= 0x01; /* in the weight image, at the end */
		spit(bad, b, n);
		refused(bad, SINTER_DEVICE_DEFAULT, SINTER_E_INPUT, "weight image checksum mismatch");
		const size_t cuts[] = {0, 7, 8, 63, 64, 65, 200, 4096, n / 2, n - 4096, n - 1};
		for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
			spit(bad, bytes, cuts[i]);
			refused(bad, SINTER_DEVICE_CPU, SINTER_E_INPUT, NULL);
		}
		spit(bad, "not a plan at all", 17);
		refused(bad, SINTER_DEVICE_CPU, SINTER_E_INPUT, "not a sinter cpu plan");
		free(b);
	}
	free(bytes);
	/* a plan-cache entry is not a package (its objects are elsewhere) */
	{
		char cache[600], entry[1200];
		snprintf(cache, sizeof cache, "%s/pc", dir);
		sinter_compile_options o;
		opts(&o, SINTER_PREC_FP32, cache);
		o.no_plan_cache = false;
		sinter_compiled *c = NULL;
		CHECK(sinter_model_compile(m, &o, &c, NULL, &err) == SINTER_OK);
		sinter_compiled_free(c);
		CHECK(find_entry(cache, entry, sizeof entry));
		refused(entry, SINTER_DEVICE_CPU, SINTER_E_INPUT, "not a package");
	}
	/* foreign code */
	CHECK(rehost(pkg, "llvm 16 riscv64-unknown-linux-gnu generic-rv64 +m,+a,+f,+d,+c,+v openblas x", bad));
	refused(bad, SINTER_DEVICE_DEFAULT, SINTER_E_ENV, "riscv64-unknown-linux-gnu");
	{
		/* this machine's own triple, with a feature no CPU has */
		cl_plan *p = NULL;
		cg_plan_info info;
		sn_err e = {0};
		CHECK(cl_package_read(pkg, &p, &info, &e) == SN_OK && p && p->host);
		if (p && p->host) {
			char host[4096];
			/* "llvm V TRIPLE CPU FEATURES openblas ...": the features get one more */
			char llvm[16], ver[16], triple[256], cpu[128];
			CHECK(sscanf(p->host, "%15s %15s %255s %127s", llvm, ver, triple, cpu) == 4);
			snprintf(host, sizeof host, "llvm 16 %s %s +sinter-imaginary-feature openblas x", triple, cpu);
			cl_plan_free(p);
			CHECK(rehost(pkg, host, bad));
			refused(bad, SINTER_DEVICE_DEFAULT, SINTER_E_ENV, "sinter-imaginary-feature");
		}
	}
	/* the wrong device */
	refused(pkg, SINTER_DEVICE_CUDA, SINTER_E_USAGE, "runs on cpu, not on cuda");
	{
		/* a CUDA package: written by NVRTC where there is one, else its header */
		sinter_compile_options o;
		sinter_compile_options_init(&o);
		o.target_sm = 90;
		o.cache_dir = "";
		if (sinter_model_compile_kernels(m, &o, bad, NULL, &err) != SINTER_OK)
			spit(bad, "SINTPLAN and then nothing a plan needs", 38);
		refused(bad, SINTER_DEVICE_CPU, SINTER_E_USAGE, "a CUDA package");
	}
	sinter_tensors_free(ins, nin);
	sinter_tensors_free(want, 3);
	sinter_model_free(m);
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	return check_done("cpu_package");
}
