/* main.c: the sinter command. A client of include/sinter.h like any
 * embedding application; exit codes are the API's status codes. */
#include "sinter.h"
#include "sinter_rev.h" /* made at build time by cmake/rev.cmake */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#define SN_COUNT_CLI(a) (sizeof(a) / sizeof((a)[0]))

enum { EXIT_USAGE = SINTER_E_USAGE };

static char last_error[4096]; /* the last error reported, for --json's error object */

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
	snprintf(last_error, sizeof last_error, fmt, arg);
	fprintf(stderr, "sinter%s%s: ", cmd ? " " : "", cmd ? cmd : "");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(see 'sinter %s%s--help')\n", cmd ? cmd : "", cmd ? " " : "");
	return EXIT_USAGE;
}

static bool tracing; /* --trace: a run on cuda adds each step's device time */

static int report(const sinter_error *err)
{
	snprintf(last_error, sizeof last_error, "%s", err->message);
	fprintf(stderr, "%s\n", err->message);
	return err->status ? (int)err->status : SINTER_E_INTERNAL;
}

static const char *const main_help =
	"usage: sinter COMMAND [ARGS]\n"
	"\n"
	"sinter is a graph compiler for neural networks. Commands:\n"
	"  check FILE.sir     parse, verify, infer shapes\n"
	"  print FILE.sir     print the canonical IR\n"
	"  hash  FILE.sir     print the structural hash (XXH3-128)\n"
	"  run   FILE.sir     run the model and summarize its outputs\n"
	"  compile FILE.sir   generate and compile the model's kernels\n"
	"  bench FILE.sir     compile times, warm start, memory and latency on the GPU\n"
	"  cache stats|clear|export|import|merge  inspect, empty or share the caches\n"
	"  import FILE.onnx -o FILE.sir   ONNX to sinter IR plus its weights\n"
	"\n"
	"Options every command takes (docs/CLI.md):\n"
	"  -v, -vv            log compile stages and cache results (info), and each\n"
	"                     kernel's cache lookup (debug); also SINTER_LOG=warn|info|debug\n"
	"  --trace FILE.json  write a Chrome trace (Perfetto opens it): host stages and,\n"
	"                     for a run on cuda, each step's device time\n"
	"'sinter COMMAND --help' describes a command's options.\n"
	"Exit codes: 0 ok, 1 bad input, 2 usage, 3 environment, 4 internal error.\n";

static const char *const shape_help =
	"  --shape SYM=VALUE  bind a symbolic dim, e.g. --shape N=32 (repeatable;\n"
	"                     also N=32,M=4)\n";

static const char *const check_help =
	"usage: sinter check FILE.sir [--shape SYM=VALUE]...\n"
	"\n"
	"Parses FILE, verifies it and infers every shape; prints a one-line summary.\n"
	"  --json             one JSON object: nodes, inputs, outputs, symbols, hash\n";
static const char *const print_help =
	"usage: sinter print FILE.sir [--passes a,b | --mode M] [--precision P] [--dump-dir D] [--shape SYM=VALUE]... [--groups]\n"
	"\n"
	"Prints the canonical text of FILE (parse, print, parse, print is a fixed point),\n"
	"after the graph passes asked for. --groups prints instead the fusion groups a\n"
	"CUDA compile would make (symbolic dims bound with --shape).\n"
	"  --dot              Graphviz dot instead of text (sinter print --dot F | dot -Tsvg)\n"
	"  --device cpu       the cpu plan's steps instead, with how many fall back to the\n"
	"                     reference interpreter (after the passes asked for)\n"
	"  --dump-dir D       write the IR after each pass to D (made if missing)\n";
static const char *const passes_help =
	"  --passes a,b,c     run these graph passes (canonicalize, fold-bn, layout, precision, attention)\n"
	"  --mode M           run mode M's pipeline: default, reduce-overhead, max-autotune\n"
	"  --precision P      fp32 (default), tf32, bf16, fp16 or fp8\n"
	"  --no-fusion        (compile, run, bench on cuda or cpu) one kernel or product per node\n";
static const char *const hash_help =
	"usage: sinter hash FILE.sir [--shape SYM=VALUE]...\n"
	"\n"
	"Prints the structural hash: topology, ops, attributes, shapes and dtypes;\n"
	"not value names, param keys or weight values.\n";
static const char *const run_help =
	"usage: sinter run FILE.sir [options]\n"
	"\n"
	"Runs the model and prints, per output, its type, mean, abs-max and first values.\n"
	"  --device D         ref (the reference interpreter), cpu (LLVM-compiled for\n"
	"                     this CPU) or cuda; default: cuda when a GPU is usable,\n"
	"                     else cpu when this build has it, else ref\n"
	"  --threads N        cpu: worker threads (default: the cores)\n"
	"  --inputs FILE      inputs from a .safetensors or NumPy .npz file, matched by\n"
	"                     input name, or a .npy for a model with one input\n"
	"                     (symbolic dims are bound from their shapes)\n"
	"  --init random      fill every param (and, without --inputs, every input)\n"
	"                     deterministically instead of reading the weights file\n"
	"  --seed S           seed for --init random (default 0)\n"
	"  --weights FILE     read params from FILE instead of the model's weights line\n"
	"  -o FILE            write the outputs to a .safetensors or .npz file, named by\n"
	"                     output (.npy: a model with one output)\n"
	"  --cache-dir DIR    kernel and plan caches' folder instead of the default\n"
	"  --json             one JSON object: device, times, each output's summary\n"
	"%s"
	"FILE may be an AOT package (sinter compile -o FILE.sinterpkg): a CUDA one\n"
	"runs on cuda with no NVRTC, a cpu one (compile --device cpu) on cpu with no\n"
	"LLVM; inputs from --inputs or random (--seed).\n";

static const char *const compile_help =
	"usage: sinter compile FILE.sir [--target sm_XX | --device cpu] [--dump-dir DIR] [-o FILE.sinterpkg]\n"
	"                      [--shape SYM=VALUE]...\n"
	"\n"
	"Generates CUDA C for every kernel of the model and compiles it with NVRTC\n"
	"through the kernel cache. With --target no GPU is needed; without it the\n"
	"present GPU's arch is used. With --device cpu: the cpu plan, its kernels\n"
	"compiled by LLVM for this machine's CPU (through the kernel cache).\n"
	"  --target sm_XX     compile for this arch (e.g. sm_80, sm_90)\n"
	"  --device cpu       compile for the cpu device (--precision fp32 or bf16)\n"
	"  --dump-dir DIR     write every kernel's source to DIR (made if missing)\n"
	"  --no-cache         do not read or write the kernel cache\n"
	"  --cache-dir DIR    the kernel cache's folder instead of the default\n"
	"  --json             one JSON object: steps, kernels, cache hits, times, arena\n"
	"  -o FILE.sinterpkg  write an AOT package: plan, cubins and weights in one\n"
	"                     file that 'sinter run' and 'sinter bench' take where\n"
	"                     NVRTC is absent (weights: --weights, --init random\n"
	"                     and --seed as for run, else the model's); with\n"
	"                     --device cpu: plan, compiled objects and weights, which\n"
	"                     'sinter run' runs on a CPU with this one's features\n";
static const char *const bench_help =
	"usage: sinter bench FILE.sir [options]\n"
	"\n"
	"On the GPU: cold compile (empty kernel cache) split into parse, codegen,\n"
	"NVRTC, load and upload; warm start (kernel cache hit); device memory;\n"
	"latency median and min over --iters calls timed with CUDA events after\n"
	"--warmup calls. Weights and inputs: as for run (default --init random).\n"
	"  --iters N          timed calls (default 50)\n"
	"  --warmup N         untimed calls first (default 5)\n"
	"  --json             one JSON object instead of text\n"
	"  --profile          also time each kernel alone and list the top ones\n"
	"  -o FILE            write the outputs of the first run to a .safetensors file\n"
	"  --device cpu       the cpu device instead of the GPU (latency timed by the\n"
	"                     wall clock); --threads N: its worker threads\n"
	"  --inputs, --weights, --seed: as for run\n"
	"%s";
static const char *const tune_help =
	"  --tune-budget S    max-autotune: seconds of tuning for the whole model (default 20)\n"
	"  --tune-progress P  max-autotune progress on stderr: bar, summary, json or quiet\n"
	"                     (default: a bar on a terminal, else one summary line)\n"
	"  --cache-remote URL tuning records also in Redis (redis://HOST:PORT; default\n"
	"                     $SINTER_CACHE_REMOTE)\n";
static const char *const import_help =
	"usage: sinter import MODEL.onnx -o MODEL.sir [--shape SYM=VALUE]...\n"
	"\n"
	"Translates an ONNX model to sinter IR: writes MODEL.sir and, beside it,\n"
	"MODEL.safetensors with the initializers (the .sir's weights line names it).\n"
	"Every command that takes a .sir also takes a .onnx directly.\n";
static const char *const cache_help =
	"usage: sinter cache stats|clear [--dir DIR]\n"
	"       sinter cache export FILE [--dir DIR]    tuning records into FILE\n"
	"       sinter cache import FILE [--dir DIR]    tuning records from FILE (faster wins)\n"
	"       sinter cache merge A B -o C             one record per kernel and device: the faster\n"
	"       sinter cache explain FILE [run's options: --shape, --mode, --precision, --weights,\n"
	"                            --init random --seed S, --cache-dir]   why a compile hits or misses\n"
	"       sinter cache stats [--dir DIR] --json     one JSON object\n"
	"\n"
	"The kernel and plan caches live in $SINTER_CACHE_DIR, else $XDG_CACHE_HOME/sinter,\n"
	"else ~/.cache/sinter (docs/CACHE.md).\n";

typedef struct opts {
	const char *file;
	const char *target, *dump_dir, *dir;
	const char *mode, *passes, *precision;
	int iters, warmup, profile;
	bool json, no_cache, no_fusion, groups, dot;
	sinter_shape_binding shapes[16];
	size_t nshapes;
	char *shape_text[16];
	const char *device, *inputs, *init, *weights, *out, *cache_dir;
	double tune_budget;
	int tune_progress;
	const char *cache_remote;
	uint64_t seed;
	bool help;
	double child_t0; /* bench's warm-start child: the parent's clock at spawn */
	int threads;     /* --threads (cpu) */
} opts;

/* A decimal integer, strictly: an optional '-' and digits, nothing else
 * (no spaces, no '+', no trailing text), within int64. */
static int parse_int(const char *s, int64_t *v)
{
	const char *d = s[0] == '-' ? s + 1 : s;
	if (!*d)
		return -1;
	for (const char *p = d; *p; p++)
		if (*p < '0' || *p > '9')
			return -1;
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -1;
	*v = x;
	return 0;
}

static bool is_ident(const char *s, size_t n)
{
	if (!n || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/* SYM=VALUE[,SYM=VALUE]...: every item non-empty, SYM an identifier,
 * VALUE digits only (>= 1), no symbol bound twice. */
static int add_shapes(const char *cmd, opts *o, const char *arg)
{
	char *dup = strdup(arg);
	if (!dup)
		return SINTER_E_INTERNAL;
	if (o->nshapes < 16)
		o->shape_text[o->nshapes] = dup;
	else
		free(dup);
	if (o->nshapes == 16)
		return usage_error(cmd, "too many --shape bindings at '%s'", arg);
	for (char *tok = dup, *next; tok; tok = next) {
		char *comma = strchr(tok, ',');
		next = comma ? comma + 1 : NULL;
		if (comma)
			*comma = 0;
		char *eq = strchr(tok, '=');
		int64_t v;
		if (!eq || !is_ident(tok, (size_t)(eq - tok)) || parse_int(eq + 1, &v) || v < 1 ||
		    eq[1] == '-')
			return usage_error(cmd, "--shape wants SYM=VALUE with VALUE >= 1 (digits only), got '%s'",
					   *tok ? tok : arg);
		if (o->nshapes == 16)
			return usage_error(cmd, "too many --shape bindings at '%s'", tok);
		*eq = 0;
		for (size_t i = 0; i < o->nshapes; i++)
			if (!strcmp(o->shapes[i].name, tok))
				return usage_error(cmd, "--shape binds %s twice", tok);
		o->shapes[o->nshapes].name = tok;
		o->shapes[o->nshapes++].value = v;
		if (o->nshapes < 16)
			o->shape_text[o->nshapes] = NULL;
	}
	return 0;
}

/* Parses argv after the command. allow: which value options this command
 * takes ("shape" always). */
static int parse_args(const char *cmd, int argc, char **argv, opts *o, bool run)
{
	memset(o, 0, sizeof *o);
	o->iters = 50;
	o->warmup = 5;
	bool is_compile = !strcmp(cmd, "compile"), is_bench = !strcmp(cmd, "bench");
	bool is_print = !strcmp(cmd, "print");
	bool passes_ok = is_print || is_compile || is_bench || run;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char *val = NULL;
#define VALUE()                                                                  \
	do {                                                                     \
		if (i + 1 >= argc)                                               \
			return usage_error(cmd, "option %s needs a value", a);   \
		val = argv[++i];                                                 \
	} while (0)
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			o->help = true;
		} else if (!strcmp(a, "--shape")) {
			VALUE();
			int rc = add_shapes(cmd, o, val);
			if (rc)
				return rc;
		} else if (!strncmp(a, "--shape=", 8)) {
			int rc = add_shapes(cmd, o, a + 8);
			if (rc)
				return rc;
		} else if ((run || is_print || is_compile) && !strcmp(a, "--device")) {
			VALUE();
			o->device = val;
		} else if (run && !strcmp(a, "--threads")) {
			VALUE();
			int64_t v;
			if (parse_int(val, &v) || v < 1 || v > 1024)
				return usage_error(cmd, "--threads wants a count >= 1, got '%s'", val);
			o->threads = (int)v;
		} else if (run && !strcmp(a, "--inputs")) {
			VALUE();
			o->inputs = val;
		} else if (run && !strcmp(a, "--init")) {
			VALUE();
			o->init = val;
		} else if (run && !strcmp(a, "--weights")) {
			VALUE();
			o->weights = val;
		} else if (is_compile && (!strcmp(a, "--init") || !strcmp(a, "--weights"))) {
			VALUE();
			*(a[2] == 'i' ? &o->init : &o->weights) = val;
		} else if ((run || is_compile) && !strcmp(a, "--cache-dir")) {
			VALUE();
			o->cache_dir = val;
		} else if (run && !strcmp(a, "--tune-budget")) {
			VALUE();
			char *end;
			double v = strtod(val, &end);
			if (!*val || *end || !(v > 0) || v > 1e6)
				return usage_error(cmd, "--tune-budget wants seconds > 0, got '%s'", val);
			o->tune_budget = v;
		} else if (run && !strcmp(a, "--tune-progress")) {
			VALUE();
			static const char *const names[] = {"auto", "bar", "summary", "json", "quiet"};
			int k = 0;
			while (k < 5 && strcmp(names[k], val))
				k++;
			if (k == 5)
				return usage_error(cmd, "--tune-progress takes bar, summary, json or quiet, got '%s'", val);
			o->tune_progress = k;
		} else if (run && !strcmp(a, "--cache-remote")) {
			VALUE();
			o->cache_remote = val;
		} else if (run && !strcmp(a, "--warm-start-child")) {
			VALUE();
			o->child_t0 = strtod(val, NULL);
		} else if ((run || is_compile || !strcmp(cmd, "import")) && !strcmp(a, "-o")) {
			VALUE();
			o->out = val;
		} else if ((run || is_compile) && !strcmp(a, "--seed")) {
			VALUE();
			int64_t s;
			if (parse_int(val, &s) || s < 0)
				return usage_error(cmd, "--seed wants a number >= 0, got '%s'", val);
			o->seed = (uint64_t)s;
		} else if (passes_ok && (!strcmp(a, "--mode") || !strcmp(a, "--passes") || !strcmp(a, "--precision"))) {
			VALUE();
			if (a[2] == 'm' && strcmp(val, "default") && strcmp(val, "reduce-overhead") &&
			    strcmp(val, "max-autotune"))
				return usage_error(cmd, "unknown mode '%s' (default, reduce-overhead or max-autotune)", val);
			else if (a[2] == 'm')
				o->mode = val;
			else if (a[4] == 's')
				o->passes = val;
			else if (sinter_precision_parse(val) < 0)
				return usage_error(cmd, "--precision takes fp32, tf32, bf16, fp16 or fp8, got '%s'", val);
			else
				o->precision = val;
		} else if (is_print && !strcmp(a, "--dot")) {
			o->dot = true;
		} else if ((is_compile || is_print) && !strcmp(a, "--dump-dir")) {
			VALUE();
			o->dump_dir = val;
		} else if (is_compile && !strcmp(a, "--target")) {
			VALUE();
			o->target = val;
		} else if (is_print && !strcmp(a, "--groups")) {
			o->groups = true;
		} else if (passes_ok && !strcmp(a, "--no-fusion")) {
			o->no_fusion = true;
		} else if (is_compile && !strcmp(a, "--no-cache")) {
			o->no_cache = true;
		} else if (is_bench && !strcmp(a, "--profile")) {
			o->profile = 1;
		} else if ((is_bench || run || is_compile || !strcmp(cmd, "check")) && !strcmp(a, "--json")) {
			o->json = true;
		} else if (is_bench && (!strcmp(a, "--iters") || !strcmp(a, "--warmup"))) {
			VALUE();
			int64_t v;
			if (parse_int(val, &v) || v < (a[2] == 'i' ? 1 : 0) || v > 100000)
				return usage_error(cmd, "--iters and --warmup want a count (iters >= 1), got '%s'", val);
			*(a[2] == 'i' ? &o->iters : &o->warmup) = (int)v;
		} else if (a[0] == '-' && a[1]) {
			return usage_error(cmd, "unknown option '%s'", a);
		} else if (o->file) {
			return usage_error(cmd, "one model file only; '%s' is extra", a);
		} else {
			o->file = a;
		}
#undef VALUE
	}
	if (!o->help && !o->file)
		return usage_error(cmd, "%s", "no model file given");
	if (!o->help && o->dump_dir) {
		/* A bad path is bad input (1) whatever writes there later: a
		 * folder that exists, or one made here in an existing folder. */
		struct stat sb;
		if (stat(o->dump_dir, &sb) == 0 ? !S_ISDIR(sb.st_mode)
						: mkdir(o->dump_dir, 0777) != 0 && errno != EEXIST) {
			int err = stat(o->dump_dir, &sb) == 0 ? ENOTDIR : errno;
			fprintf(stderr, "sinter %s: --dump-dir %s: %s\n", cmd, o->dump_dir, strerror(err));
			return err == EACCES || err == EROFS || err == ENOSPC ? SINTER_E_ENV : SINTER_E_INPUT;
		}
	}
	if (o->mode && o->passes)
		return usage_error(cmd, "%s", "--mode and --passes exclude each other");
	return 0;
}

static void free_opts(opts *o)
{
	for (size_t i = 0; i < 16; i++)
		free(o->shape_text[i]);
}

static int load(const opts *o, sinter_model **m)
{
	sinter_options so;
	sinter_options_init(&so);
	so.shapes = o->shapes;
	so.nshapes = o->nshapes;
	sinter_error err;
	if (sinter_model_load(o->file, &so, m, &err) != SINTER_OK)
		return report(&err);
	return 0;
}

/* A JSON string. */
static void json_str(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* {"name", "dtype", "shape"}: a symbolic dim as its symbol's name when m
 * (and the input's index) says which, else null. */
static void json_desc_open(const sinter_tensor *d, const sinter_model *m, int input)
{
	printf("{\"name\": ");
	json_str(d->name ? d->name : "");
	printf(", \"dtype\": \"%s\", \"shape\": [", sinter_dtype_name(d->dtype));
	for (int k = 0; k < d->rank; k++) {
		const char *sym = m && d->shape[k] < 0 ? sinter_model_input_symbol(m, (size_t)input, k) : NULL;
		printf("%s", k ? ", " : "");
		if (sym)
			json_str(sym);
		else if (d->shape[k] < 0)
			printf("null");
		else
			printf("%" PRId64, d->shape[k]);
	}
	printf("]");
}

static void json_desc(const sinter_tensor *d, const sinter_model *m, int input)
{
	json_desc_open(d, m, input);
	printf("}");
}

static int cmd_check(const opts *o)
{
	sinter_model *m;
	int rc = load(o, &m);
	if (rc)
		return rc;
	if (o->json) {
		char hex[33];
		sinter_model_hash(m, hex);
		printf("{\"ok\": true, \"file\": ");
		json_str(o->file);
		printf(", \"nodes\": %zu, \"hash\": \"%s\", \"symbols\": [", sinter_model_num_nodes(m), hex);
		for (size_t i = 0; i < sinter_model_num_symbols(m); i++) {
			printf("%s", i ? ", " : "");
			json_str(sinter_model_symbol(m, i));
		}
		printf("],\n \"inputs\": [");
		for (size_t i = 0; i < sinter_model_num_inputs(m); i++) {
			sinter_tensor d;
			sinter_model_input(m, i, &d);
			printf("%s", i ? ", " : "");
			json_desc(&d, m, (int)i);
		}
		printf("],\n \"outputs\": [");
		for (size_t i = 0; i < sinter_model_num_outputs(m); i++) {
			sinter_tensor d;
			sinter_model_output(m, i, &d);
			printf("%s", i ? ", " : "");
			json_desc(&d, NULL, 0);
		}
		printf("]}\n");
	} else {
		printf("%s: ok: %zu nodes, %zu inputs, %zu outputs\n", o->file, sinter_model_num_nodes(m),
		       sinter_model_num_inputs(m), sinter_model_num_outputs(m));
	}
	sinter_model_free(m);
	return 0;
}

/* Runs the passes the options ask for: --passes, --mode, --precision.
 * `always`: the default mode's pipeline even when none was named. */
static int optimize(const opts *o, sinter_model *m, bool always, int sm)
{
	if (!always && !o->mode && !o->passes && !o->precision)
		return 0;
	sinter_error err;
	int prec = o->precision ? sinter_precision_parse(o->precision) : SINTER_PREC_FP32;
	if (sinter_model_optimize(m, o->mode, o->passes, (sinter_precision)prec, sm,
				  o->passes || o->mode ? o->dump_dir : NULL, &err))
		return report(&err);
	return 0;
}

static int cmd_print(const opts *o)
{
	sinter_model *m;
	int rc = load(o, &m);
	if (!rc && (rc = optimize(o, m, false, 0)))
		sinter_model_free(m);
	if (rc)
		return rc;
	sinter_error err = {0};
	bool cpu = o->device && !strcmp(o->device, "cpu");
	if (o->device && !cpu) {
		sinter_model_free(m);
		return usage_error("print", "--device takes cpu (its plan's steps), got '%s'", o->device);
	}
	char *text = cpu ? sinter_model_print_cpu_plan(m, &err)
		   : o->groups ? sinter_model_print_groups(m, 0, &err)
		   : o->dot    ? sinter_model_dot(m)
			       : sinter_model_print(m);
	sinter_model_free(m);
	if (!text && (o->groups || cpu)) {
		fprintf(stderr, "sinter print: %s\n", err.message);
		return err.status;
	}
	if (!text) {
		fprintf(stderr, "sinter print: out of memory\n");
		return SINTER_E_INTERNAL;
	}
	fputs(text, stdout);
	sinter_free(text);
	return 0;
}

static int cmd_hash(const opts *o)
{
	sinter_model *m;
	int rc = load(o, &m);
	if (rc)
		return rc;
	char hex[33];
	sinter_model_hash(m, hex);
	printf("%s\n", hex);
	sinter_model_free(m);
	return 0;
}

static void type_str(const sinter_tensor *t, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s[", sinter_dtype_name(t->dtype));
	for (int i = 0; i < t->rank && n > 0 && (size_t)n < cap; i++)
		n += snprintf(out + n, cap - (size_t)n, "%s%" PRId64, i ? "," : "", t->shape[i]);
	if (n > 0 && (size_t)n < cap)
		snprintf(out + n, cap - (size_t)n, "]");
}

static double elem(const sinter_tensor *t, size_t i);

static void summarize(const sinter_tensor *t)
{
	char type[200];
	type_str(t, type, sizeof type);
	size_t n = t->nbytes / (sinter_dtype_size(t->dtype) ? sinter_dtype_size(t->dtype) : 1);
	double sum = 0, amax = 0;
	for (size_t i = 0; i < n; i++) {
		double x = elem(t, i);
		sum += x;
		if (fabs(x) > amax || isnan(x))
			amax = isnan(x) ? x : fabs(x);
	}
	printf("%%%s: %s  mean %.6g  abs-max %.6g  first:", t->name, type, n ? sum / (double)n : 0.0, amax);
	for (size_t i = 0; i < n && i < 6; i++)
		printf(" %.6g", elem(t, i));
	printf("%s\n", n > 6 ? " ..." : "");
}

/* summarize's numbers as a JSON object. */
static void json_output(const sinter_tensor *t)
{
	size_t n = t->nbytes / (sinter_dtype_size(t->dtype) ? sinter_dtype_size(t->dtype) : 1);
	double sum = 0, amax = 0;
	for (size_t i = 0; i < n; i++) {
		double x = elem(t, i);
		sum += x;
		if (fabs(x) > amax || isnan(x))
			amax = isnan(x) ? x : fabs(x);
	}
	json_desc_open(t, NULL, 0);
	double mean = n ? sum / (double)n : 0.0;
	printf(", \"mean\": ");
	isfinite(mean) ? printf("%.9g", mean) : printf("null");
	printf(", \"abs_max\": ");
	isfinite(amax) ? printf("%.9g", amax) : printf("null");
	printf(", \"first\": [");
	for (size_t i = 0; i < n && i < 6; i++)
		isfinite(elem(t, i)) ? printf("%s%.9g", i ? ", " : "", elem(t, i)) : printf("%snull", i ? ", " : "");
	printf("]}");
}

/* The run object's last member and its close: each output's summary. */
static void json_outputs(const sinter_tensor *outs, size_t n)
{
	printf(",\n \"outputs\": [");
	for (size_t i = 0; i < n; i++) {
		printf("%s", i ? ",\n  " : "");
		json_output(&outs[i]);
	}
	printf("]}\n");
}

/* Element i as a double, for the summary (via the bit layouts of the dtypes). */
static double elem(const sinter_tensor *t, size_t i)
{
	const unsigned char *p = t->data;
	switch (t->dtype) {
	case SINTER_F32: { float f; memcpy(&f, p + 4 * i, 4); return f; }
	case SINTER_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
	case SINTER_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
	case SINTER_I8: return (int8_t)p[i];
	case SINTER_U8: return p[i];
	case SINTER_BOOL: return p[i] != 0;
	case SINTER_BF16: {
		uint32_t u = (uint32_t)(p[2 * i] | p[2 * i + 1] << 8) << 16;
		float f;
		memcpy(&f, &u, 4);
		return f;
	}
	case SINTER_F16: {
		unsigned h = (unsigned)(p[2 * i] | p[2 * i + 1] << 8);
		int ex = (h >> 10) & 31, man = h & 1023;
		double v = ex == 0 ? ldexp(man, -24) : ex == 31 ? (man ? NAN : INFINITY)
								  : ldexp(man | 1024, ex - 25);
		return h & 0x8000 ? -v : v;
	}
	default: return NAN; /* fp8 summaries are not needed yet */
	}
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Binds the symbols of the model's inputs from the shapes of the given
 * tensors, adding to o->shapes; returns 1 if any binding was added. */
static int bind_from_inputs(sinter_model *m, const sinter_tensor *ts, size_t n, opts *o)
{
	int added = 0;
	for (size_t i = 0; i < sinter_model_num_inputs(m); i++) {
		sinter_tensor d;
		sinter_model_input(m, i, &d);
		const sinter_tensor *t = NULL;
		for (size_t k = 0; k < n; k++)
			if (d.name && !strcmp(ts[k].name, d.name))
				t = &ts[k];
		if (!t && n == 1 && !ts[0].name[0] && sinter_model_num_inputs(m) == 1)
			t = &ts[0]; /* a .npy's one unnamed array */
		if (!t || t->rank != d.rank)
			continue; /* the run reports the mismatch */
		for (int k = 0; k < d.rank; k++) {
			const char *sym = sinter_model_input_symbol(m, i, k);
			bool known = false;
			for (size_t j = 0; sym && j < o->nshapes; j++)
				known |= !strcmp(o->shapes[j].name, sym);
			if (sym && !known && o->nshapes < 16) {
				o->shapes[o->nshapes].name = sym;
				o->shapes[o->nshapes++].value = t->shape[k];
				added = 1;
			}
		}
	}
	return added;
}

/* A model ready to run: loaded (symbols bound from --inputs if needed),
 * weights loaded or random, inputs read or random. */
typedef struct prepared {
	sinter_model *m;
	sinter_tensor *ins;
	size_t nins;
	double load_s, parse_s;
} prepared;

static void prepared_free(prepared *p)
{
	sinter_tensors_free(p->ins, p->nins);
	sinter_model_free(p->m);
	memset(p, 0, sizeof *p);
}

static int prepare(opts *o, bool default_random, prepared *p)
{
	memset(p, 0, sizeof *p);
	const char *init = o->init ? o->init : default_random && !o->weights ? "random" : NULL;
	if (init && strcmp(init, "random"))
		return usage_error("run", "--init takes 'random', got '%s'", init);
	if (o->init && o->weights)
		return usage_error("run", "%s", "--init random and --weights exclude each other");
	sinter_error err;
	const char *ins0[] = {o->file, o->weights, o->inputs};
	if (o->out && sinter_output_check(NULL, o->out, ins0, 3, &err) != SINTER_OK)
		return report(&err);
	if (o->inputs && sinter_tensors_read(o->inputs, &p->ins, &p->nins, &err) != SINTER_OK)
		return report(&err);
	double t0 = now();
	int rc = load(o, &p->m);
	if (!rc && p->ins && sinter_model_num_symbols(p->m) && bind_from_inputs(p->m, p->ins, p->nins, o)) {
		sinter_model *bound;
		/* names in o->shapes point into p->m: load the bound model first */
		rc = load(o, &bound);
		for (size_t i = 0; i < o->nshapes; i++)
			o->shapes[i].name = NULL;
		sinter_model_free(p->m);
		p->m = rc ? NULL : bound;
	}
	p->parse_s = now() - t0;
	if (rc) {
		prepared_free(p);
		return rc;
	}
	/* -o: never one of the inputs (the weights line's file included),
	 * checked before the weights are read or anything runs */
	const char *ins[] = {o->file, o->weights, o->inputs};
	if (o->out && sinter_output_check(p->m, o->out, ins, 3, &err) != SINTER_OK)
		goto fail;
	t0 = now();
	if (init ? sinter_model_init_random(p->m, o->seed, &err)
		 : sinter_model_load_weights(p->m, o->weights, &err))
		goto fail;
	if (!p->ins && !init) {
		err.status = SINTER_E_USAGE;
		snprintf(err.message, sizeof err.message,
			 "sinter run: no inputs: pass --inputs FILE (.safetensors, .npz, .npy) or --init random");
		goto fail;
	}
	if (!p->ins && sinter_random_inputs(p->m, o->seed, &p->ins, &p->nins, &err))
		goto fail;
	p->load_s = now() - t0;
	return 0;
fail:
	prepared_free(p);
	return report(&err);
}

static bool is_package(const char *file)
{
	size_t n = strlen(file);
	return n > 10 && !strcmp(file + n - 10, ".sinterpkg");
}

/* The library's one options struct from the flags; the library decides
 * what the mode and precision mean. */
static void compile_opts(const opts *o, sinter_compile_options *co)
{
	sinter_compile_options_init(co);
	co->mode = o->mode;
	co->passes = o->passes;
	co->precision = (sinter_precision)(o->precision ? sinter_precision_parse(o->precision) : 0);
	co->cache_dir = o->no_cache ? "" : o->cache_dir;
	co->dump_dir = o->dump_dir;
	co->no_fusion = o->no_fusion;
	co->tune_budget_s = o->tune_budget;
	co->tune_progress = o->tune_progress;
	co->cache_remote = o->cache_remote;
	co->device = o->device && !strcmp(o->device, "cpu") ? "cpu" : NULL;
	co->threads = o->threads;
}

/* Random inputs for a compiled model (packages carry no model). */
static int package_inputs(sinter_compiled *c, const opts *o, sinter_tensor **ins, size_t *n, sinter_error *err)
{
	size_t k = sinter_compiled_num_inputs(c);
	sinter_tensor *d = calloc(k ? k : 1, sizeof *d);
	if (!d)
		return SINTER_E_INTERNAL;
	for (size_t i = 0; i < k; i++)
		sinter_compiled_input(c, i, &d[i]);
	int rc = sinter_random_tensors(d, k, o->seed, ins, err);
	*n = k;
	free(d);
	return rc;
}

static int run_package(opts *o)
{
	sinter_compile_options co;
	compile_opts(o, &co);
	co.device = o->device; /* the library refuses a package for another device than the one named */
	sinter_error err;
	sinter_compiled *c = NULL;
	sinter_tensor *ins = NULL, *outs = NULL;
	size_t nins = 0, nout = 0;
	const char *srcs[] = {o->file, o->inputs};
	if (o->out && sinter_output_check(NULL, o->out, srcs, 2, &err)) /* before the package loads */
		return report(&err);
	double t0 = now();
	if (sinter_load_package(o->file, &co, &c, NULL, &err))
		return report(&err);
	double load_s = now() - t0;
	if (o->inputs ? (int)sinter_tensors_read(o->inputs, &ins, &nins, &err) : package_inputs(c, o, &ins, &nins, &err))
		goto fail;
	t0 = now();
	if (sinter_compiled_run(c, ins, nins, &outs, &err))
		goto fail;
	double run_s = now() - t0;
	nout = sinter_compiled_num_outputs(c);
	if (o->json) {
		printf("{\"ok\": true, \"file\": ");
		json_str(o->file);
		printf(", \"device\": \"%s\", \"package\": true, \"run_s\": %.6f, \"load_s\": %.6f",
		       sinter_compiled_device(c), run_s, load_s);
		json_outputs(outs, nout);
	} else {
		for (size_t i = 0; i < nout; i++)
			summarize(&outs[i]);
		printf("ran %s on %s in %.3f s (package loaded in %.3f s)\n", o->file, sinter_compiled_device(c), run_s,
		       load_s);
	}
	if (o->out && sinter_tensors_write(o->out, outs, nout, &err))
		goto fail;
	sinter_tensors_free(outs, nout);
	sinter_tensors_free(ins, nins);
	sinter_compiled_free(c);
	return 0;
fail:
	sinter_tensors_free(outs, nout);
	sinter_tensors_free(ins, nins);
	sinter_compiled_free(c);
	return report(&err);
}

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmd_run(opts *o)
{
	char why[512] = "";
	const char *device = o->device;
	if (device && strcmp(device, "ref") && strcmp(device, "cpu") && strcmp(device, "cuda"))
		return usage_error("run", "unknown device '%s' (ref, cpu or cuda)", device);
	if (is_package(o->file)) {
		if (device && strcmp(device, "cuda") && strcmp(device, "cpu"))
			return usage_error("run", "%s", "a package runs on cuda or cpu (the one it was compiled for)");
		return run_package(o);
	}
	/* no device named: cuda when a GPU is usable, else the compiled cpu
	 * device when this build has it, else the reference interpreter */
	if (!device)
		device = sinter_cuda_available(why, sizeof why) ? "cuda" : sinter_cpu_available(why, sizeof why) ? "cpu" : "ref";
	o->device = device;
	bool cuda = strcmp(device, "ref") != 0; /* compiled: cuda or cpu */
	prepared p;
	int rc = prepare(o, false, &p);
	if (rc)
		return rc;
	sinter_error err;
	sinter_tensor *outs = NULL;
	sinter_compiled *c = NULL;
	double t1 = now(), t2, t0c = t1;
	sinter_compile_stats cs = {0};
	if (!cuda && (rc = optimize(o, p.m, false, 0))) {
		prepared_free(&p);
		return rc;
	}
	if (cuda) {
		/* the passes run inside compile, where the plan cache can skip them */
		sinter_compile_options co;
		compile_opts(o, &co);
		if (sinter_compile(p.m, &co, &c, &cs, &err))
			goto fail;
		t1 = now();
		if (sinter_compiled_run(c, p.ins, p.nins, &outs, &err))
			goto fail;
	} else if (sinter_run_ref(p.m, p.ins, p.nins, &outs, &err)) {
		goto fail;
	}
	t2 = now();
	size_t nout = sinter_model_num_outputs(p.m);
	if (o->child_t0 > 0) {
		/* bench's warm-start child: one line for the parent, nothing else */
		printf("{\"first_output_s\": %.6f, \"context_s\": %.6f, \"parse_s\": %.6f, \"weights_s\": %.6f, "
		       "\"key_s\": %.6f, \"plan_s\": %.6f, \"load_s\": %.6f, \"blas_s\": %.6f, \"upload_s\": %.6f, "
		       "\"capture_s\": %.6f, \"run_s\": %.6f, \"plan_hit\": %s, \"tune_timings\": %zu, "
		       "\"tune_candidates\": %zu, \"compile_s\": %.6f, \"cache_hits\": %zu, \"passes_s\": %.6f, "
		       "\"codegen_s\": %.6f}\n",
		       wall() - o->child_t0, cs.context_s, p.parse_s, p.load_s, cs.key_s, cs.plan_s, cs.load_s, cs.blas_s,
		       cs.upload_s, cs.capture_s, t2 - t1, cs.plan_hit ? "true" : "false", cs.tune_timings,
		       cs.tune_candidates, t1 - t0c, cs.cache_hits, cs.passes_s, cs.codegen_s);
	} else if (o->json) {
		printf("{\"ok\": true, \"file\": ");
		json_str(o->file);
		printf(", \"device\": \"%s\", \"run_s\": %.6f, \"weights_and_inputs_s\": %.6f", device,
		       t2 - t1, p.load_s);
		if (cuda)
			printf(",\n \"compile\": {\"plan_hit\": %s, \"context_s\": %.6f, \"passes_s\": %.6f, "
			       "\"codegen_s\": %.6f, \"nvrtc_s\": %.6f, \"load_s\": %.6f, \"upload_s\": %.6f, "
			       "\"plan_s\": %.6f, \"key_s\": %.6f, \"blas_s\": %.6f, \"tune_s\": %.6f, \"compile_s\": %.6f, "
			       "\"steps\": %zu, \"kernels\": %zu, \"cache_hits\": %zu, "
			       "\"arena_bytes\": %zu, \"weight_bytes\": %zu, \"tune_timings\": %zu, \"ref_steps\": %zu}",
			       cs.plan_hit ? "true" : "false", cs.context_s, cs.passes_s, cs.codegen_s, cs.nvrtc_s, cs.load_s,
			       cs.upload_s, cs.plan_s, cs.key_s, cs.blas_s, cs.tune_s, t1 - t0c, cs.steps, cs.kernels,
			       cs.cache_hits, cs.arena_bytes, cs.weight_bytes, cs.tune_timings, cs.ref_steps);
		json_outputs(outs, nout);
	} else {
		for (size_t i = 0; i < nout; i++)
			summarize(&outs[i]);
		printf("ran %s on %s in %.3f s (weights and inputs %.3f s)\n", o->file, device, t2 - t1, p.load_s);
	}
	if (tracing && c && !strcmp(device, "cuda")) {
		/* each step's device time, on the trace's device track */
		sinter_profile_entry *pe = NULL;
		size_t npe = 0;
		if (sinter_compiled_profile(c, 1, &pe, &npe, &err) == SINTER_OK)
			sinter_free(pe);
		else
			fprintf(stderr, "sinter run: no device times in the trace: %s\n", err.message);
	}
	if (o->out && sinter_tensors_write(o->out, outs, nout, &err)) {
		sinter_tensors_free(outs, nout);
		goto fail;
	}
	sinter_tensors_free(outs, nout);
	sinter_compiled_free(c);
	prepared_free(&p);
	return 0;
fail:
	sinter_compiled_free(c);
	prepared_free(&p);
	return report(&err);
}

static int parse_target(const char *t, int *sm)
{
	int64_t v;
	if (!t || strncmp(t, "sm_", 3) || parse_int(t + 3, &v) || v < 50 || v > 200)
		return -1;
	*sm = (int)v;
	return 0;
}

static int cmd_compile(opts *o)
{
	sinter_compile_options co;
	compile_opts(o, &co);
	char why[512];
	bool cpu = o->device && !strcmp(o->device, "cpu");
	if (o->device && !cpu && strcmp(o->device, "cuda"))
		return usage_error("compile", "unknown device '%s' (cuda or cpu)", o->device);
	if (cpu && (o->target || o->dump_dir))
		return usage_error("compile", "%s", "--device cpu compiles for this machine's CPU: no --target or --dump-dir");
	if (cpu && !sinter_cpu_available(why, sizeof why)) {
		fprintf(stderr, "sinter compile: %s\n", why);
		return SINTER_E_ENV;
	}
	if (o->target && parse_target(o->target, &co.target_sm))
		return usage_error("compile", "--target wants sm_XX (e.g. sm_90), got '%s'", o->target);
	if (!cpu && !o->target && !sinter_cuda_available(why, sizeof why)) {
		fprintf(stderr, "sinter compile: %s; pass --target sm_XX to compile without a GPU\n", why);
		return SINTER_E_ENV;
	}
	if (o->out && !is_package(o->out))
		return usage_error("compile", "-o writes a package: FILE.sinterpkg, got '%s'", o->out);
	if (o->init && strcmp(o->init, "random"))
		return usage_error("compile", "--init takes 'random', got '%s'", o->init);
	if (o->init && o->weights)
		return usage_error("compile", "%s", "--init random and --weights exclude each other");
	sinter_model *m;
	double t0 = now();
	int rc = load(o, &m);
	if (rc)
		return rc;
	sinter_error err;
	const char *ins[1] = {o->weights};
	if (o->out && (sinter_output_check(m, o->out, ins, 1, &err) ||
		       (o->init ? sinter_model_init_random(m, o->seed, &err) : sinter_model_load_weights(m, o->weights, &err)))) {
		sinter_model_free(m);
		return report(&err);
	}
	double parse_s = now() - t0;
	sinter_compile_stats st;
	if (!co.target_sm && !cpu) {
		/* the present GPU's arch: sinter_cuda_available says "NAME (sm_XX)" */
		const char *p = strstr(why, "(sm_");
		co.target_sm = p ? atoi(p + 4) : 0;
	}
	if (sinter_compile_kernels(m, &co, o->out, &st, &err)) {
		sinter_model_free(m);
		return report(&err);
	}
	if (o->json) {
		printf("{\"ok\": true, \"file\": ");
		json_str(o->file);
		if (cpu)
			printf(", \"target\": \"cpu\"");
		else
			printf(", \"target\": \"sm_%d\"", co.target_sm);
		printf(", \"steps\": %zu, \"kernels\": %zu, \"unique_kernels\": %zu, "
		       "\"cache_hits\": %zu, \"parse_s\": %.6f, \"passes_s\": %.6f, \"codegen_s\": %.6f, "
		       "\"nvrtc_s\": %.6f, \"arena_bytes\": %zu, \"weight_bytes\": %zu, \"dump_dir\": ",
		       st.steps, st.kernels, st.unique_kernels, st.cache_hits, parse_s, st.passes_s,
		       st.codegen_s, st.nvrtc_s, st.arena_bytes, st.weight_bytes);
		o->dump_dir ? json_str(o->dump_dir) : (void)printf("null");
		printf(", \"package\": ");
		o->out ? json_str(o->out) : (void)printf("null");
		printf("}\n");
		sinter_model_free(m);
		return 0;
	}
	if (cpu) {
		printf("%s: %zu steps (%zu kernels, %zu on the reference interpreter), %zu kernels from the cache, for "
		       "this CPU\n",
		       o->file, st.steps, st.kernels, st.ref_steps, st.cache_hits);
		printf("time: parse %.3f s, passes %.3f s, lowering %.3f s, LLVM %.3f s\n", parse_s, st.passes_s,
		       st.codegen_s, st.nvrtc_s);
	} else {
		printf("%s: %zu steps (%zu kernels, %zu matrix products), %zu unique kernels (%zu from the cache) for %s\n",
		       o->file, st.steps, st.kernels, st.steps - st.kernels, st.unique_kernels, st.cache_hits,
		       o->target ? o->target : "the GPU");
		printf("time: parse %.3f s, passes %.3f s, codegen %.3f s, nvrtc %.3f s\n", parse_s, st.passes_s,
		       st.codegen_s, st.nvrtc_s);
	}
	printf("peak arena: %.1f MiB (%zu bytes)\n", (double)st.arena_bytes / 1048576.0, st.arena_bytes);
	if (o->dump_dir)
		printf("sources written to %s\n", o->dump_dir);
	if (o->out)
		printf("package written to %s (%.1f MiB of weights)\n", o->out, (double)st.weight_bytes / 1048576.0);
	sinter_model_free(m);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int cmp_prof(const void *a, const void *b)
{
	double x = ((const sinter_profile_entry *)a)->ms, y = ((const sinter_profile_entry *)b)->ms;
	return (x < y) - (x > y);
}

/* The top kernels by device time, steps of one kernel added together. */
static int print_profile(sinter_compiled *c, sinter_error *err)
{
	sinter_profile_entry *p;
	size_t n;
	if (sinter_compiled_profile(c, 20, &p, &n, err))
		return report(err);
	double total = 0;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		total += p[i].ms;
		size_t j = 0;
		while (j < k && (strcmp(p[j].kernel, p[i].kernel) || strcmp(p[j].op, p[i].op)))
			j++;
		if (j == k) {
			p[k++] = p[i];
		} else {
			p[j].ms += p[i].ms;
			p[j].bytes += p[i].bytes;
			p[j].flops += p[i].flops;
		}
	}
	qsort(p, k, sizeof *p, cmp_prof);
	printf("profile: %zu steps, %.4f ms launched one by one (each kernel timed alone)\n", n, total);
	printf("  %-34s %-12s %9s %6s %9s %9s\n", "kernel", "op", "ms", "%", "GB/s", "TFLOP/s");
	for (size_t i = 0; i < k && i < 12; i++)
		printf("  %-34s %-12s %9.4f %5.1f%% %9.1f %9.2f\n", p[i].kernel, p[i].op, p[i].ms,
		       100 * p[i].ms / (total > 0 ? total : 1), p[i].bytes / (p[i].ms * 1e6),
		       p[i].flops / (p[i].ms * 1e9));
	sinter_free(p);
	return 0;
}

/* The warm start as a user sees it: a second process that finds the plan
 * in the cache dir the cold compile filled, from its start to its first
 * output ready; it reports its CUDA context creation apart. */
static int warm_start_child(const opts *o, const char *dir, const char *inputs, char *line, size_t cap)
{
	char t0[64], seed[32];
	const char *av[64];
	int n = 0;
	av[n++] = "sinter";
	av[n++] = "run";
	av[n++] = o->file;
	av[n++] = "--device";
	av[n++] = o->device && !strcmp(o->device, "cpu") ? "cpu" : "cuda";
	char threads[16];
	if (o->threads) {
		snprintf(threads, sizeof threads, "%d", o->threads);
		av[n++] = "--threads";
		av[n++] = threads;
	}
	av[n++] = "--cache-dir";
	av[n++] = dir;
	char shapes[16][96];
	for (size_t i = 0; i < o->nshapes && i < 16; i++) {
		if (!o->shapes[i].name)
			continue; /* bound from --inputs, which the child reads too */
		snprintf(shapes[i], sizeof shapes[i], "%s=%lld", o->shapes[i].name, (long long)o->shapes[i].value);
		av[n++] = "--shape";
		av[n++] = shapes[i];
	}
	/* the inputs ready in a file, as a user's would be */
	const char *pairs[][2] = {{"--mode", o->mode}, {"--passes", o->passes}, {"--precision", o->precision},
				  {"--weights", o->weights}, {"--inputs", inputs}, {"--cache-remote", o->cache_remote}};
	for (size_t i = 0; i < SN_COUNT_CLI(pairs); i++)
		if (pairs[i][1]) {
			av[n++] = pairs[i][0];
			av[n++] = pairs[i][1];
		}
	if (o->no_fusion)
		av[n++] = "--no-fusion";
	if (!o->weights && (!o->init || !strcmp(o->init, "random"))) {
		snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
		av[n++] = "--init";
		av[n++] = "random";
		av[n++] = "--seed";
		av[n++] = seed;
	}
	av[n++] = "--warm-start-child";
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	snprintf(t0, sizeof t0, "%.6f", wall());
	av[n++] = t0;
	av[n] = NULL;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execv("/proc/self/exe", (char *const *)av);
		_exit(127);
	}
	close(fd[1]);
	size_t got = 0;
	ssize_t k;
	while (pid > 0 && got + 1 < cap && (k = read(fd[0], line + got, cap - 1 - got)) > 0)
		got += (size_t)k;
	line[got] = 0;
	close(fd[0]);
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return strstr(line, "first_output_s") ? 0 : -1;
}

/* The number after "key": in a one-line JSON object; -1 when absent. */
static double json_num(const char *line, const char *key)
{
	char q[64];
	snprintf(q, sizeof q, "\"%s\": ", key);
	const char *p = strstr(line, q);
	return p ? strtod(p + strlen(q), NULL) : -1;
}

static void remove_tree(const char *dir)
{
	size_t removed;
	sinter_cache_clear(dir, &removed, NULL);
	sinter_tuning_clear(dir, &removed, NULL);
	char sub[128];
	static const char *const kinds[] = {"kernels", "plans", "tuning"};
	for (int k = 0; k < 3; k++) {
		for (int i = 0; i < 256; i++) {
			snprintf(sub, sizeof sub, "%s/%s/%02x", dir, kinds[k], i);
			rmdir(sub);
		}
		snprintf(sub, sizeof sub, "%s/%s", dir, kinds[k]);
		rmdir(sub);
	}
	rmdir(dir);
}

static int cmd_bench(opts *o)
{
	char why[512];
	bool cpu = o->device && !strcmp(o->device, "cpu");
	if (o->device && strcmp(o->device, "cpu") && strcmp(o->device, "cuda"))
		return usage_error("bench", "unknown device '%s' (cpu or cuda)", o->device);
	/* a package runs on the device it was compiled for (the library
	 * refuses another one named): asked once it is loaded */
	if (!is_package(o->file) && (cpu ? !sinter_cpu_available(why, sizeof why) : !sinter_cuda_available(why, sizeof why))) {
		fprintf(stderr, "sinter bench: %s\n", why);
		return SINTER_E_ENV;
	}
	/* Cold: empty kernel and plan caches of our own; warm: a second
	 * process over the same caches. */
	char dir[] = "/tmp/sinter-bench-XXXXXX";
	if (!mkdtemp(dir)) {
		fprintf(stderr, "sinter bench: cannot make a temporary cache directory: %s\n", strerror(errno));
		return SINTER_E_ENV;
	}
	bool pkg = is_package(o->file);
	prepared p = {0};
	int rc = pkg ? 0 : prepare(o, true, &p);
	if (rc) {
		remove_tree(dir);
		return rc;
	}
	sinter_error err;
	sinter_compile_options co;
	compile_opts(o, &co);
	co.cache_dir = dir;
	sinter_compile_stats cold = {0};
	sinter_compiled *c = NULL;
	double *ms = calloc((size_t)o->iters, sizeof *ms);
	sinter_tensor *outs = NULL, *ins = NULL;
	size_t nins = 0, nout = 0;
	char line[1024] = "";
	if (!ms) {
		rc = SINTER_E_INTERNAL;
		goto out;
	}
	double t0 = now();
	if (pkg)
		co.device = o->device;
	if (pkg ? sinter_load_package(o->file, &co, &c, &cold, &err) : sinter_compile(p.m, &co, &c, &cold, &err))
		goto fail;
	if (pkg) {
		cpu = !strcmp(sinter_compiled_device(c), "cpu");
		if (cpu ? !sinter_cpu_available(why, sizeof why) : !sinter_cuda_available(why, sizeof why))
			snprintf(why, sizeof why, "%s", sinter_compiled_device(c));
	}
	double cold_s = p.parse_s + (now() - t0);
	char inpath[64];
	snprintf(inpath, sizeof inpath, "%s/inputs.safetensors", dir);
	bool warm_ok = !pkg && sinter_tensors_write(inpath, p.ins, p.nins, &err) == SINTER_OK &&
		       warm_start_child(o, dir, inpath, line, sizeof line) == 0;
	unlink(inpath);
	if (pkg && (o->inputs ? (int)sinter_tensors_read(o->inputs, &ins, &nins, &err) : package_inputs(c, o, &ins, &nins, &err)))
		goto fail;
	if (sinter_compiled_run(c, pkg ? ins : p.ins, pkg ? nins : p.nins, &outs, &err))
		goto fail;
	nout = sinter_compiled_num_outputs(c);
	/* -o: the outputs of this compiled model, so a harness can check them
	 * without a second process */
	if (o->out && sinter_tensors_write(o->out, outs, nout, &err))
		goto fail;
	if (sinter_compiled_bench(c, o->warmup, o->iters, ms, &err))
		goto fail;
	qsort(ms, (size_t)o->iters, sizeof *ms, cmp_double);
	double med = o->iters % 2 ? ms[o->iters / 2] : 0.5 * (ms[o->iters / 2 - 1] + ms[o->iters / 2]);
	double warm_s = warm_ok ? json_num(line, "first_output_s") : -1, ctx_s = warm_ok ? json_num(line, "context_s") : -1;
	bool warm_hit = warm_ok && strstr(line, "\"plan_hit\": true");
	if (o->json) {
		printf("{\"file\": \"%s\", \"device\": \"%s\", \"cold_compile_s\": %.4f, \"parse_s\": %.4f, "
		       "\"passes_s\": %.4f, \"weights_s\": %.4f, \"codegen_s\": %.4f, \"nvrtc_s\": %.4f, \"load_s\": %.4f, \"upload_s\": %.4f, "
		       "\"context_s\": %.4f, \"plan_store_s\": %.4f, "
		       "\"warm_start_s\": %.4f, \"warm_context_s\": %.4f, \"warm_after_context_s\": %.4f, \"warm_plan_hit\": %s, "
		       "\"warm_run_s\": %.4f, "
		       "\"steps\": %zu, \"kernels\": %zu, \"unique_kernels\": %zu, "
		       "\"arena_bytes\": %zu, \"weight_bytes\": %zu, \"median_ms\": %.4f, \"min_ms\": %.4f, "
		       "\"iters\": %d, \"tune_s\": %.4f, \"tune_kernels\": %zu, \"tune_from_records\": %zu, "
		       "\"tune_tuned\": %zu, \"tune_candidates\": %zu, \"tune_timings\": %zu, \"tune_failed\": %zu, "
		       "\"tune_rejected\": %zu, \"tune_speedup\": %.4f, \"warm_tune_timings\": %.0f}\n",
		       o->file, why, cold_s, p.parse_s, cold.passes_s, p.load_s, cold.codegen_s, cold.nvrtc_s, cold.load_s,
		       cold.upload_s, cold.context_s, cold.plan_s, warm_s, ctx_s, warm_ok ? warm_s - ctx_s : -1,
		       warm_hit ? "true" : "false", warm_ok ? json_num(line, "run_s") : -1, cold.steps, cold.kernels, cold.unique_kernels, cold.arena_bytes, cold.weight_bytes,
		       med, ms[0], o->iters, cold.tune_s, cold.tune_kernels, cold.tune_from_records, cold.tune_tuned,
		       cold.tune_candidates, cold.tune_timings, cold.tune_failed, cold.tune_rejected, cold.tune_speedup,
		       warm_ok ? json_num(line, "tune_timings") : -1);
	} else {
		printf("%s on %s\n", o->file, why);
		if (pkg)
			printf("package load: %.3f s (read %.3f, load %.3f, upload %.3f); %zu kernels\n", cold_s, cold.plan_s,
			       cold.load_s, cold.upload_s, cold.kernels);
		else if (cpu)
			printf("cold compile: %.3f s (parse %.3f, weights and the rest %.3f, passes %.3f, lowering %.3f, LLVM %.3f, "
			       "JIT %.3f); %zu steps, %zu kernels, %zu on the reference interpreter; peak arena %.1f MiB\n",
			       cold_s, p.parse_s, cold_s - p.parse_s - cold.passes_s - cold.codegen_s - cold.nvrtc_s - cold.load_s,
			       cold.passes_s, cold.codegen_s, cold.nvrtc_s, cold.load_s, cold.steps, cold.kernels, cold.ref_steps,
			       (double)cold.arena_bytes / 1048576.0);
		else
			printf("cold compile: %.3f s (parse %.3f, passes %.3f, codegen %.3f, nvrtc %.3f, load %.3f, upload %.3f, plan store %.3f); "
			       "%zu steps (%zu kernels, %zu matrix products), %zu unique kernels; peak arena %.1f MiB\n",
			       cold_s, p.parse_s, cold.passes_s, cold.codegen_s, cold.nvrtc_s, cold.load_s, cold.upload_s,
			       cold.plan_s, cold.steps, cold.kernels, cold.steps - cold.kernels, cold.unique_kernels,
			       (double)cold.arena_bytes / 1048576.0);
		if (cold.tune_kernels)
			printf("tuning:       %.3f s: %zu tunable kernels (%zu from records, %zu tuned), %zu candidates timed, "
			       "%zu timing runs, %zu scored out, %zu records rejected; %.2fx on the tuned steps\n",
			       cold.tune_s, cold.tune_kernels, cold.tune_from_records, cold.tune_tuned, cold.tune_candidates,
			       cold.tune_timings, cold.tune_failed, cold.tune_rejected, cold.tune_speedup);
		if (warm_ok && cpu)
			printf("warm start:   %.3f s in a new process to the first output (plan cache %s: key %.3f, plan read "
			       "%.3f; object cache: %.0f of %zu kernels, JIT %.3f; weights %.3f, passes %.3f, lowering %.3f; "
			       "first run %.3f)\n",
			       warm_s, warm_hit ? "hit" : "MISS", json_num(line, "key_s"), json_num(line, "plan_s"),
			       json_num(line, "cache_hits"), cold.kernels, json_num(line, "load_s"),
			       json_num(line, "weights_s"), json_num(line, "passes_s"), json_num(line, "codegen_s"),
			       json_num(line, "run_s"));
		else if (warm_ok)
			printf("warm start:   %.3f s in a new process to the first output (CUDA context %.3f s, after it %.3f s; plan cache %s)\n"
			       "              after the context: plan key %.3f, plan read %.3f, modules %.3f, cuBLASLt %.3f, upload %.3f, graph %.3f, first run %.3f\n",
			       warm_s, ctx_s, warm_s - ctx_s, warm_hit ? "hit" : "MISS", json_num(line, "key_s"),
			       json_num(line, "plan_s"), json_num(line, "load_s"), json_num(line, "blas_s"),
			       json_num(line, "upload_s"), json_num(line, "capture_s"), json_num(line, "run_s"));
		else if (!pkg)
			printf("warm start:   the second process failed\n");
		printf("memory:       arena %.1f MiB, weights %.1f MiB\n", (double)cold.arena_bytes / 1048576.0,
		       (double)cold.weight_bytes / 1048576.0);
		printf("latency:      median %.4f ms, min %.4f ms over %d calls (%d warm-up)\n", med, ms[0],
		       o->iters, o->warmup);
	}
	if (o->profile && (rc = print_profile(c, &err)))
		goto out;
	rc = 0;
	goto out;
fail:
	rc = report(&err);
out:
	sinter_tensors_free(outs, nout);
	sinter_tensors_free(ins, nins);
	sinter_compiled_free(c);
	prepared_free(&p);
	free(ms);
	remove_tree(dir);
	return rc;
}

static int cmd_import(const opts *o)
{
	if (!o->out)
		return usage_error("import", "%s", "-o FILE.sir is required");
	sinter_error err;
	const char *ins[] = {o->file};
	if (sinter_output_check(NULL, o->out, ins, 1, &err) != SINTER_OK)
		return report(&err);
	sinter_model *m;
	int rc = load(o, &m);
	if (rc)
		return rc;
	if (sinter_model_save(m, o->out, &err)) {
		sinter_model_free(m);
		return report(&err);
	}
	printf("%s: %zu nodes, %zu inputs, %zu outputs written to %s\n", o->file, sinter_model_num_nodes(m),
	       sinter_model_num_inputs(m), sinter_model_num_outputs(m), o->out);
	sinter_model_free(m);
	return 0;
}

/* sinter cache explain FILE [run's options]: why a compile with these
 * options would hit or miss the caches. */
static int cmd_explain(int argc, char **argv)
{
	opts o;
	int rc = parse_args("cache explain", argc, argv, &o, true);
	if (rc || o.help) {
		if (o.help)
			fputs(cache_help, stdout);
		free_opts(&o);
		return rc;
	}
	prepared p;
	if ((rc = prepare(&o, false, &p))) {
		free_opts(&o);
		return rc;
	}
	sinter_compile_options co;
	compile_opts(&o, &co);
	sinter_error err;
	char *text = NULL;
	if (sinter_cache_explain(p.m, &co, &text, &err))
		rc = report(&err);
	else
		fputs(text, stdout);
	sinter_free(text);
	prepared_free(&p);
	free_opts(&o);
	return rc;
}

/* cli/cache_records.c: sinter cache export|import|merge */
int cli_cache_records(int argc, char **argv);

static int cmd_cache(int argc, char **argv)
{
	if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
		fputs(cache_help, argc < 1 ? stderr : stdout);
		return argc < 1 ? EXIT_USAGE : 0;
	}
	if (!strcmp(argv[0], "export") || !strcmp(argv[0], "import") || !strcmp(argv[0], "merge"))
		return cli_cache_records(argc, argv);
	if (!strcmp(argv[0], "explain"))
		return cmd_explain(argc - 1, argv + 1);
	const char *dir = NULL;
	bool json = argc >= 2 && !strcmp(argv[argc - 1], "--json") && !strcmp(argv[0], "stats");
	argc -= json;
	if (argc == 3 && !strcmp(argv[1], "--dir"))
		dir = argv[2];
	else if (argc != 1)
		return usage_error("cache", "%s", "expected: stats [--dir DIR] [--json] | clear [--dir DIR]");
	sinter_error err;
	char def[4096];
	if (!dir) {
		if (sinter_cache_dir(def, sizeof def, &err))
			return report(&err);
		dir = def;
	}
	if (!strcmp(argv[0], "stats")) {
		size_t n;
		uint64_t bytes;
		size_t pn;
		uint64_t pbytes;
		if (sinter_cache_stats(dir, &n, &bytes, &err) || sinter_plan_cache_stats(dir, &pn, &pbytes, &err))
			return report(&err);
		size_t rej, nrec;
		if (sinter_tuning_stats(dir, &nrec, &rej, &err))
			return report(&err);
		if (json) {
			printf("{\"dir\": ");
			json_str(dir);
			printf(", \"kernels\": {\"entries\": %zu, \"bytes\": %" PRIu64 "}, "
			       "\"plans\": {\"entries\": %zu, \"bytes\": %" PRIu64 "}, "
			       "\"tuning_records\": {\"valid\": %zu, \"rejected\": %zu}}\n",
			       n, bytes, pn, pbytes, nrec, rej);
			return 0;
		}
		printf("kernel cache %s: %zu entries, %.1f MiB\n", dir, n, (double)bytes / 1048576.0);
		printf("plan cache %s: %zu entries, %.1f MiB\n", dir, pn, (double)pbytes / 1048576.0);
		printf("tuning records %s: %zu valid, %zu rejected (malformed, checksum or key mismatch)\n", dir, nrec, rej);
		return 0;
	}
	if (!strcmp(argv[0], "clear")) {
		size_t n;
		size_t nr;
		if (sinter_cache_clear(dir, &n, &err) || sinter_tuning_clear(dir, &nr, &err))
			return report(&err);
		n += nr;
		printf("caches %s: removed %zu entries (kernels, plans and tuning records)\n", dir, n);
		return 0;
	}
	return usage_error("cache", "unknown cache command '%s' (stats or clear)", argv[0]);
}

/* -v, -vv, -vvv and --trace FILE, wherever they are: taken out of argv
 * (the commands never see them). */
static int global_options(int *argc, char **argv, const char **trace)
{
	int n = 1, verbose = 0;
	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-v") || !strcmp(a, "-vv") || !strcmp(a, "-vvv") || !strcmp(a, "--verbose")) {
			verbose += a[1] == '-' ? 1 : (int)strlen(a) - 1;
		} else if (!strcmp(a, "--trace") || !strncmp(a, "--trace=", 8)) {
			if (a[7] == '=') {
				*trace = a + 8;
			} else if (i + 1 < *argc) {
				*trace = argv[++i];
			} else {
				return usage_error(NULL, "option %s needs a value", a);
			}
			if (!**trace)
				return usage_error(NULL, "%s", "--trace needs a file name");
		} else {
			argv[n++] = argv[i];
		}
	}
	*argc = n;
	if (verbose)
		sinter_log_set_level(verbose >= 2 ? SINTER_LOG_DEBUG : SINTER_LOG_INFO);
	return 0;
}

static int run_command(int argc, char **argv);

int main(int argc, char **argv)
{
	const char *trace = NULL;
	int rc = global_options(&argc, argv, &trace);
	if (rc)
		return rc;
	sinter_progress_enable(isatty(2));
	if (trace) {
		/* -o's rule for the trace file: found before any work */
		sinter_error err;
		if (sinter_output_check(NULL, trace, NULL, 0, &err))
			return report(&err);
		sinter_trace_start();
		tracing = true;
	}
	rc = run_command(argc, argv);
	if (trace) {
		sinter_error err;
		if (sinter_trace_write(trace, &err)) {
			int wrc = report(&err);
			if (!rc)
				rc = wrc;
		}
	}
	return rc;
}

static int run_command(int argc, char **argv)
{
	if (argc < 2) {
		fputs(main_help, stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		fputs(main_help, stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version")) {
		printf("sinter %s (git %s)\n", sinter_version(), SINTER_REV);
		return 0;
	}
	static const struct {
		const char *name, *help;
		bool run;
	} cmds[] = {
		{"check", check_help, false},
		{"print", print_help, false},
		{"hash", hash_help, false},
		{"run", run_help, true},
		{"compile", compile_help, false},
		{"bench", bench_help, true},
		{"import", import_help, false},
	};
	if (!strcmp(cmd, "cache"))
		return cmd_cache(argc - 2, argv + 2);
	for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
		if (strcmp(cmd, cmds[c].name))
			continue;
		opts o;
		int rc = parse_args(cmd, argc - 2, argv + 2, &o, cmds[c].run);
		if (!rc && o.help) {
			if (c == 3 || c == 5)
				printf(cmds[c].help, tune_help);
			else
				fputs(cmds[c].help, stdout);
			fputs(shape_help, stdout);
			if (c != 0 && c != 2 && c != 6)
				fputs(passes_help, stdout);
		} else if (!rc) {
			rc = c == 0 ? cmd_check(&o) : c == 1 ? cmd_print(&o) : c == 2 ? cmd_hash(&o)
			   : c == 3 ? cmd_run(&o) : c == 4 ? cmd_compile(&o) : c == 5 ? cmd_bench(&o)
			   : cmd_import(&o);
		}
		if (rc && o.json && c != 5) {
			/* the message went to stderr too */
			printf("{\"ok\": false, \"status\": %d, \"error\": ", rc);
			json_str(last_error[0] ? last_error : "see stderr");
			printf("}\n");
		}
		free_opts(&o);
		return rc;
	}
	return usage_error(NULL, "unknown command '%s'", cmd);
}
