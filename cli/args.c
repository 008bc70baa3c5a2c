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

/* The commands that take an option, as bits. */
enum {
	K_CHECK = 1, K_PRINT = 2, K_HASH = 4, K_RUN = 8, K_COMPILE = 16, K_BENCH = 32, K_IMPORT = 64, K_EXPLAIN = 128,
	K_GENERATE = 256, K_ALL = 511,
	K_RUNLIKE = K_RUN | K_BENCH | K_EXPLAIN, /* run's model, weights and inputs options */
	K_GENLIKE = K_RUNLIKE | K_GENERATE,      /* ... but --inputs, -o and the bench options */
	K_PASSES = K_PRINT | K_COMPILE | K_RUNLIKE,
};
static const char *const cmd_names[] = {"check", "print", "hash", "run", "compile", "bench", "import", "cache explain",
					"generate"};

typedef enum {
	O_HELP, O_SHAPE, O_DEVICE, O_THREADS, O_INPUTS, O_INIT, O_WEIGHTS, O_CACHE_DIR, O_TUNE_BUDGET,
	O_TUNE_PROGRESS, O_CACHE_REMOTE, O_WARM_CHILD, O_OUT, O_SEED, O_MODE, O_PASSES, O_PRECISION, O_DOT,
	O_DUMP_DIR, O_TARGET, O_WEIGHTS_PREFIX, O_GROUPS, O_NO_FUSION, O_NO_CACHE, O_PROFILE, O_JSON, O_ITERS, O_WARMUP, O_DURATION,
	O_PROMPT_IDS, O_MAX_NEW, O_TEMPERATURE, O_TOP_K, O_STATE,
} opt_id;

/* Every option of the commands that take a model, one row each: its name,
 * whether it takes a value (as the next argument or after '='), and which
 * commands take it. Unknown options get the nearest name as a hint. */
static const struct {
	const char *name;
	opt_id id;
	bool value, hidden;
	unsigned cmds;
} options[] = {
	{"--help", O_HELP, false, false, K_ALL},
	{"-h", O_HELP, false, true, K_ALL},
	{"--shape", O_SHAPE, true, false, K_ALL},
	{"--state", O_STATE, true, false, K_ALL},
	{"--device", O_DEVICE, true, false, K_GENLIKE | K_PRINT | K_COMPILE},
	{"--threads", O_THREADS, true, false, K_GENLIKE},
	{"--inputs", O_INPUTS, true, false, K_RUNLIKE},
	{"--init", O_INIT, true, false, K_GENLIKE | K_COMPILE},
	{"--weights", O_WEIGHTS, true, false, K_GENLIKE | K_COMPILE},
	{"--weights-prefix", O_WEIGHTS_PREFIX, true, false, K_GENLIKE | K_COMPILE},
	{"--seed", O_SEED, true, false, K_GENLIKE | K_COMPILE},
	{"--cache-dir", O_CACHE_DIR, true, false, K_RUN | K_EXPLAIN | K_COMPILE | K_GENERATE}, /* bench: caches of its own */
	{"--tune-budget", O_TUNE_BUDGET, true, false, K_RUNLIKE},
	{"--tune-progress", O_TUNE_PROGRESS, true, false, K_RUNLIKE},
	{"--cache-remote", O_CACHE_REMOTE, true, false, K_RUNLIKE},
	{"--warm-start-child", O_WARM_CHILD, true, true, K_RUNLIKE},
	{"-o", O_OUT, true, false, K_RUNLIKE | K_COMPILE | K_IMPORT},
	{"--mode", O_MODE, true, false, K_PASSES | K_GENERATE},
	{"--passes", O_PASSES, true, false, K_PASSES | K_GENERATE},
	{"--precision", O_PRECISION, true, false, K_PASSES | K_GENERATE},
	{"--no-fusion", O_NO_FUSION, false, false, K_PASSES | K_GENERATE},
	{"--dot", O_DOT, false, false, K_PRINT},
	{"--groups", O_GROUPS, false, false, K_PRINT},
	{"--dump-dir", O_DUMP_DIR, true, false, K_PRINT | K_COMPILE},
	{"--target", O_TARGET, true, false, K_COMPILE},
	{"--no-cache", O_NO_CACHE, false, false, K_COMPILE},
	{"--json", O_JSON, false, false, K_CHECK | K_COMPILE | K_GENLIKE},
	{"--profile", O_PROFILE, false, false, K_BENCH},
	{"--iters", O_ITERS, true, false, K_BENCH},
	{"--warmup", O_WARMUP, true, false, K_BENCH},
	{"--duration", O_DURATION, true, false, K_BENCH},
	{"--prompt-ids", O_PROMPT_IDS, true, false, K_GENERATE},
	{"--max-new", O_MAX_NEW, true, false, K_GENERATE},
	{"--temperature", O_TEMPERATURE, true, false, K_GENERATE},
	{"--top-k", O_TOP_K, true, false, K_GENERATE},
};

size_t cli_edit_distance(const char *a, const char *b)
{
	/* Levenshtein, one row; names are short (longer ones are far anyway) */
	size_t n = strlen(b), row[64];
	if (n >= CLI_COUNT(row) || strlen(a) >= CLI_COUNT(row))
		return (size_t)-1;
	for (size_t j = 0; j <= n; j++)
		row[j] = j;
	for (size_t i = 1; a[i - 1]; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= n; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[n];
}

bool cli_near(const char *word, const char *cand)
{
	size_t d = cli_edit_distance(word, cand), n = strlen(word);
	return d <= (n <= 4 ? 1u : n <= 8 ? 2u : 3u);
}

const char *cli_suggest(const char *word, const char *const *cands, size_t n)
{
	const char *best = NULL;
	size_t bd = (size_t)-1;
	for (size_t i = 0; i < n; i++) {
		size_t d = cands[i] ? cli_edit_distance(word, cands[i]) : (size_t)-1;
		if (d < bd && cli_near(word, cands[i])) {
			bd = d;
			best = cands[i];
		}
	}
	return best;
}

/* "unknown option 'A'" and a hint: the nearest option of this command, or
 * the commands that take A. */
static int unknown_option(const char *cmd, unsigned k, const char *a)
{
	char msg[512], takers[128] = "";
	const char *names[CLI_COUNT(options)];
	size_t nn = 0;
	for (size_t r = 0; r < CLI_COUNT(options); r++) {
		if (options[r].hidden)
			continue;
		if (options[r].cmds & k)
			names[nn++] = options[r].name;
		else if (!strcmp(options[r].name, a))
			for (size_t c = 0, len = 0; c < CLI_COUNT(cmd_names); c++)
				if (options[r].cmds & (1u << c) && len < sizeof takers)
					len += (size_t)snprintf(takers + len, sizeof takers - len, "%s%s", len ? ", " : "",
								cmd_names[c]);
	}
	const char *near = cli_suggest(a, names, nn);
	if (takers[0])
		snprintf(msg, sizeof msg, "unknown option '%s' for %s (%s takes it)", a, cmd, takers);
	else if (near)
		snprintf(msg, sizeof msg, "unknown option '%s' (did you mean '%s'?)", a, near);
	else
		snprintf(msg, sizeof msg, "unknown option '%s'", a);
	return cli_usage_error(cmd, "%s", msg);
}

void cli_list_options(const char *cmd, FILE *f)
{
	for (size_t c = 0; c < CLI_COUNT(cmd_names); c++)
		if (!strcmp(cmd, cmd_names[c]))
			for (size_t r = 0; r < CLI_COUNT(options); r++)
				if (!options[r].hidden && options[r].cmds & (1u << c))
					fprintf(f, "%s%s\n", options[r].name, options[r].value && options[r].name[1] == '-' ? "=" : "");
}

int cli_check_tensors_ext(const char *cmd, const char *out)
{
	static const char *const exts[] = {".safetensors", ".npz", ".npy"};
	size_t n = strlen(out);
	for (size_t i = 0; i < CLI_COUNT(exts); i++) {
		size_t e = strlen(exts[i]);
		if (n > e && !strcmp(out + n - e, exts[i]))
			return 0;
	}
	return cli_usage_error(cmd, "-o FILE: the format is chosen by the extension, .safetensors, .npz or .npy; got '%s'",
			       out);
}

/* compile's and import's -o by its extension: refused before any work
 * (run's and bench's: cli_check_tensors_ext, after the checks of the path
 * itself). */
static int check_out_ext(const char *cmd, unsigned k, const char *out)
{
	size_t n = strlen(out);
	if (k & K_COMPILE)
		return n > 10 && !strcmp(out + n - 10, ".sinterpkg")
			       ? 0
			       : cli_usage_error(cmd, "-o writes a package: FILE.sinterpkg, got '%s'", out);
	if (k & K_IMPORT)
		return n > 4 && !strcmp(out + n - 4, ".sir")
			       ? 0
			       : cli_usage_error(cmd, "-o names the .sir to write (its weights go beside it as "
						      ".safetensors), got '%s'", out);
	return 0;
}

/* Parses argv after the command (cmd: "check", ..., "cache explain"). An
 * option's value is the next argument or follows '=' (--inputs=FILE). */
int cli_parse_args(const char *cmd, int argc, char **argv, cli_opts *o)
{
	memset(o, 0, sizeof *o);
	o->iters = 50;
	o->warmup = 5;
	unsigned k = 0;
	for (size_t c = 0; c < CLI_COUNT(cmd_names); c++)
		if (!strcmp(cmd, cmd_names[c]))
			k = 1u << c;
	bool iters_set = false;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		char name[64];
		const char *eq = a[0] == '-' && a[1] == '-' ? strchr(a, '=') : NULL;
		if (eq) {
			/* --opt=value: the name before '=', the value after it */
			snprintf(name, sizeof name, "%.*s", (int)(eq - a < 63 ? eq - a : 63), a);
			a = name;
		}
		size_t r = 0;
		while (r < CLI_COUNT(options) && strcmp(options[r].name, a))
			r++;
		if (r == CLI_COUNT(options) || !(options[r].cmds & k)) {
			if (a[0] == '-' && a[1])
				return unknown_option(cmd, k, a);
			if (o->file)
				return cli_usage_error(cmd, "one model file only; '%s' is extra", a);
			o->file = a;
			continue;
		}
		if (options[r].value && eq) {
			val = eq + 1;
		} else if (options[r].value) {
			if (i + 1 >= argc)
				return cli_usage_error(cmd, "option %s needs a value", a);
			val = argv[++i];
		} else if (eq) {
			return cli_usage_error(cmd, "option %s takes no value", a);
		}
		int64_t v;
		switch (options[r].id) {
		case O_HELP: o->help = true; break;
		case O_SHAPE: {
			int rc = add_shapes(cmd, o, val);
			if (rc)
				return rc;
			break;
		}
		case O_DEVICE: o->device = val; break;
		case O_THREADS:
			if (cli_parse_int(val, &v) || v < 1 || v > 1024)
				return cli_usage_error(cmd, "--threads wants a count >= 1, got '%s'", val);
			o->threads = (int)v;
			break;
		case O_INPUTS: o->inputs = val; break;
		case O_INIT: o->init = val; break;
		case O_WEIGHTS:
			/* repeatable: the files are read as one set of keys */
			if (o->nweights == CLI_COUNT(o->weight_files))
				return cli_usage_error(cmd, "--weights: at most 16 files (name a sharded checkpoint by its "
							    "index, %s)", "model.safetensors.index.json");
			o->weight_files[o->nweights++] = val;
			o->weights = o->weight_files[0];
			break;
		case O_WEIGHTS_PREFIX: o->weights_prefix = val; break;
		case O_CACHE_DIR: o->cache_dir = val; break;
		case O_TUNE_BUDGET: {
			char *end;
			double d = strtod(val, &end);
			if (!*val || *end || !(d > 0) || d > 1e6)
				return cli_usage_error(cmd, "--tune-budget wants seconds > 0, got '%s'", val);
			o->tune_budget = d;
			break;
		}
		case O_TUNE_PROGRESS: {
			static const char *const names[] = {"auto", "bar", "summary", "json", "quiet"};
			int p = 0;
			while (p < 5 && strcmp(names[p], val))
				p++;
			if (p == 5)
				return cli_usage_error(cmd, "--tune-progress takes bar, summary, json or quiet, got '%s'", val);
			o->tune_progress = p;
			break;
		}
		case O_CACHE_REMOTE: o->cache_remote = val; break;
		case O_WARM_CHILD: o->child_t0 = strtod(val, NULL); break;
		case O_OUT: o->out = val; break;
		case O_SEED:
			if (cli_parse_int(val, &v) || v < 0)
				return cli_usage_error(cmd, "--seed wants a number >= 0, got '%s'", val);
			o->seed = (uint64_t)v;
			break;
		case O_MODE:
			if (strcmp(val, "default") && strcmp(val, "reduce-overhead") && strcmp(val, "max-autotune"))
				return cli_usage_error(cmd, "unknown mode '%s' (default, reduce-overhead or max-autotune)", val);
			o->mode = val;
			break;
		case O_PASSES: o->passes = val; break;
		case O_PRECISION:
			if (sinter_precision_parse(val, &(sinter_precision){0}, NULL))
				return cli_usage_error(cmd, "--precision takes fp32, tf32, bf16, fp16 or fp8, got '%s'", val);
			o->precision = val;
			break;
		case O_DOT: o->dot = true; break;
		case O_DUMP_DIR: o->dump_dir = val; break;
		case O_TARGET: o->target = val; break;
		case O_GROUPS: o->groups = true; break;
		case O_NO_FUSION: o->no_fusion = true; break;
		case O_NO_CACHE: o->no_cache = true; break;
		case O_PROFILE: o->profile = 1; break;
		case O_JSON: o->json = true; break;
		case O_ITERS:
		case O_WARMUP: {
			bool it = options[r].id == O_ITERS;
			if (cli_parse_int(val, &v) || v < (it ? 1 : 0) || v > 100000)
				return cli_usage_error(cmd, "--iters and --warmup want a count (iters >= 1), got '%s'", val);
			*(it ? &o->iters : &o->warmup) = (int)v;
			iters_set |= it;
			break;
		}
		case O_DURATION: {
			char *end;
			double d = strtod(val, &end);
			if (!*val || *end || !(d > 0) || d > 86400)
				return cli_usage_error(cmd, "--duration wants seconds > 0, got '%s'", val);
			o->duration = d;
			break;
		}
		case O_PROMPT_IDS: o->prompt_ids = val; break;
		case O_STATE: {
			/* OUT=IN: output OUT is input IN's value for the next run */
			const char *eq = strchr(val, '=');
			if (!eq || eq == val || !eq[1])
				return cli_usage_error(cmd, "--state wants OUTPUT=INPUT (the output that updates the input), got '%s'",
						       val);
			if (o->nstates == CLI_COUNT(o->states))
				return cli_usage_error(cmd, "too many --state bindings at '%s'", val);
			char *dup = strdup(val);
			if (!dup)
				return SINTER_E_INTERNAL;
			o->state_text[o->nstates] = dup;
			dup[eq - val] = 0;
			o->states[o->nstates++] = (sinter_state_binding){dup, dup + (eq - val) + 1};
			break;
		}
		case O_MAX_NEW:
			if (cli_parse_int(val, &v) || v < 1 || v > 1000000)
				return cli_usage_error(cmd, "--max-new wants a count >= 1, got '%s'", val);
			o->max_new = (int)v;
			break;
		case O_TEMPERATURE: {
			char *end;
			double t = strtod(val, &end);
			if (!*val || *end || !(t >= 0) || t > 1e6)
				return cli_usage_error(cmd, "--temperature wants a number >= 0 (0: greedy), got '%s'", val);
			o->temperature = t;
			break;
		}
		case O_TOP_K:
			if (cli_parse_int(val, &v) || v < 0 || v > 100000000)
				return cli_usage_error(cmd, "--top-k wants a count >= 0 (0: every token), got '%s'", val);
			o->top_k = (int)v;
			break;
		}
	}
	if (iters_set && o->duration > 0)
		return cli_usage_error(cmd, "%s", "--iters and --duration exclude each other");
	if (!o->help && o->out && (k & (K_COMPILE | K_IMPORT)) && check_out_ext(cmd, k, o->out))
		return CLI_EXIT_USAGE;
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
		free(o->shape_text[i]), free(o->state_text[i]);
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
