/* args.c: the command line: options into a cli_opts, the global flags
 * (-v, --trace), and the two ways a command fails (usage, or a library
 * error), which --json reports. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char cli_last_error[4096]; /* the last error reported, for --json's error object */

int cli_usage_error(const char *cmd, const char *fmt, const char *arg)
{
	snprintf(cli_last_error, sizeof cli_last_error, fmt, arg);
	fprintf(stderr, "sinter%s%s: ", cmd ? " " : "", cmd ? cmd : "");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(see 'sinter %s%s--help')\n", cmd ? cmd : "", cmd ? " " : "");
	return CLI_EXIT_USAGE;
}

bool cli_tracing; /* --trace: a run on cuda adds each step's device time */

int cli_report(const sinter_error *err)
{
	snprintf(cli_last_error, sizeof cli_last_error, "%s", err->message);
	fprintf(stderr, "%s\n", err->message);
	return err->status ? (int)err->status : SINTER_E_INTERNAL;
}

/* A decimal integer, strictly: an optional '-' and digits, nothing else
 * (no spaces, no '+', no trailing text), within int64. */
int cli_parse_int(const char *s, int64_t *v)
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
static int add_shapes(const char *cmd, cli_opts *o, const char *arg)
{
	char *dup = strdup(arg);
	if (!dup)
		return SINTER_E_INTERNAL;
	if (o->nshapes < 16)
		o->shape_text[o->nshapes] = dup;
	else
		free(dup);
	if (o->nshapes == 16)
		return cli_usage_error(cmd, "too many --shape bindings at '%s'", arg);
	for (char *tok = dup, *next; tok; tok = next) {
		char *comma = strchr(tok, ',');
		next = comma ? comma + 1 : NULL;
		if (comma)
			*comma = 0;
		char *eq = strchr(tok, '=');
		int64_t v;
		if (!eq || !is_ident(tok, (size_t)(eq - tok)) || cli_parse_int(eq + 1, &v) || v < 1 ||
		    eq[1] == '-')
			return cli_usage_error(cmd, "--shape wants SYM=VALUE with VALUE >= 1 (digits only), got '%s'",
					   *tok ? tok : arg);
		if (o->nshapes == 16)
			return cli_usage_error(cmd, "too many --shape bindings at '%s'", tok);
		*eq = 0;
		for (size_t i = 0; i < o->nshapes; i++)
			if (!strcmp(o->shapes[i].name, tok))
				return cli_usage_error(cmd, "--shape binds %s twice", tok);
		o->shapes[o->nshapes].name = tok;
		o->shapes[o->nshapes++].value = v;
		if (o->nshapes < 16)
			o->shape_text[o->nshapes] = NULL;
	}
	return 0;
}

/* Parses argv after the command. allow: which value options this command
 * takes ("shape" always). */
int cli_parse_args(const char *cmd, int argc, char **argv, cli_opts *o, bool run)
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
			return cli_usage_error(cmd, "option %s needs a value", a);   \
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
			if (cli_parse_int(val, &v) || v < 1 || v > 1024)
				return cli_usage_error(cmd, "--threads wants a count >= 1, got '%s'", val);
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
				return cli_usage_error(cmd, "--tune-budget wants seconds > 0, got '%s'", val);
			o->tune_budget = v;
		} else if (run && !strcmp(a, "--tune-progress")) {
			VALUE();
			static const char *const names[] = {"auto", "bar", "summary", "json", "quiet"};
			int k = 0;
			while (k < 5 && strcmp(names[k], val))
				k++;
			if (k == 5)
				return cli_usage_error(cmd, "--tune-progress takes bar, summary, json or quiet, got '%s'", val);
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
			if (cli_parse_int(val, &s) || s < 0)
				return cli_usage_error(cmd, "--seed wants a number >= 0, got '%s'", val);
			o->seed = (uint64_t)s;
		} else if (passes_ok && (!strcmp(a, "--mode") || !strcmp(a, "--passes") || !strcmp(a, "--precision"))) {
			VALUE();
			if (a[2] == 'm' && strcmp(val, "default") && strcmp(val, "reduce-overhead") &&
			    strcmp(val, "max-autotune"))
				return cli_usage_error(cmd, "unknown mode '%s' (default, reduce-overhead or max-autotune)", val);
			else if (a[2] == 'm')
				o->mode = val;
			else if (a[4] == 's')
				o->passes = val;
			else if (sinter_precision_parse(val) < 0)
				return cli_usage_error(cmd, "--precision takes fp32, tf32, bf16, fp16 or fp8, got '%s'", val);
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
			if (cli_parse_int(val, &v) || v < (a[2] == 'i' ? 1 : 0) || v > 100000)
				return cli_usage_error(cmd, "--iters and --warmup want a count (iters >= 1), got '%s'", val);
			*(a[2] == 'i' ? &o->iters : &o->warmup) = (int)v;
		} else if (a[0] == '-' && a[1]) {
			return cli_usage_error(cmd, "unknown option '%s'", a);
		} else if (o->file) {
			return cli_usage_error(cmd, "one model file only; '%s' is extra", a);
		} else {
			o->file = a;
		}
#undef VALUE
	}
	if (!o->help && !o->file)
		return cli_usage_error(cmd, "%s", "no model file given");
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
		return cli_usage_error(cmd, "%s", "--mode and --passes exclude each other");
	return 0;
}

void cli_free_opts(cli_opts *o)
{
	for (size_t i = 0; i < 16; i++)
		free(o->shape_text[i]);
}

/* -v, -vv, -vvv and --trace FILE, wherever they are: taken out of argv
 * (the commands never see them). */
int cli_global_options(int *argc, char **argv, const char **trace)
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
				return cli_usage_error(NULL, "option %s needs a value", a);
			}
			if (!**trace)
				return cli_usage_error(NULL, "%s", "--trace needs a file name");
		} else {
			argv[n++] = argv[i];
		}
	}
	*argc = n;
	if (verbose)
		sinter_log_set_level(verbose >= 2 ? SINTER_LOG_DEBUG : SINTER_LOG_INFO);
	return 0;
}
