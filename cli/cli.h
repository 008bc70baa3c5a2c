/* cli.h: what the sinter command's files share. The command is a client
 * of include/sinter.h like any embedding application; nothing here is
 * part of the library. One file per concept: args.c (the command line,
 * errors), help.c (--help texts), json.c (output summaries, JSON), model.c
 * (a model loaded and made ready), inspect.c (check, print, hash), run.c,
 * compile.c (compile, import), bench.c, cache.c, cache_records.c and
 * generate.c. */
#ifndef SINTER_CLI_H
#define SINTER_CLI_H

#include "sinter.h"
#include "sinter_tools.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_COUNT(a) (sizeof(a) / sizeof((a)[0]))

enum { CLI_EXIT_USAGE = SINTER_E_USAGE };

/* A command's options, as parse_args fills them. */
typedef struct cli_opts {
	const char *file;
	const char *target, *dump_dir, *dir;
	const char *mode, *passes, *precision;
	int iters, warmup, profile;
	bool json, no_cache, no_fusion, groups, dot;
	sinter_shape_binding shapes[16];
	size_t nshapes;
	char *shape_text[16];
	const char *device, *inputs, *init, *weights, *out, *cache_dir;
	const char *weight_files[16]; /* every --weights, in order (weights is the first) */
	size_t nweights;
	const char *weights_prefix;   /* --weights-prefix, or NULL (guessed) */
	double tune_budget;
	int tune_progress;
	const char *cache_remote;
	uint64_t seed;
	bool help;
	double child_t0; /* bench's warm-start child: the parent's clock at spawn */
	int threads;     /* --threads (cpu) */
	double duration; /* bench --duration S: timed calls for S seconds instead of --iters */
	bool own_weights; /* set by cli_prepare: bench runs the model's own weights */
	sinter_state_binding states[16]; /* --state OUT=IN (repeatable) */
	size_t nstates;
	char *state_text[16];
	/* generate */
	const char *prompt_ids; /* --prompt-ids 1,2,3 */
	int max_new;            /* --max-new (0: 16) */
	double temperature;     /* --temperature (0: greedy) */
	int top_k;              /* --top-k (0: every token) */
} cli_opts;

/* A model ready to run: loaded (symbols bound from --inputs if needed),
 * weights loaded or random, inputs read or random. */
typedef struct cli_prepared {
	sinter_model *m;
	sinter_tensor *ins;
	size_t nins;
	double load_s, parse_s;
} cli_prepared;

/* args.c */
extern char cli_last_error[4096]; /* the last error reported, for --json's error object */
extern bool cli_tracing;           /* --trace: a run on cuda adds each step's device time */
/* Prints "sinter CMD: FMT" (FMT takes one %s, ARG) and a pointer to --help;
 * returns the usage exit code. */
int cli_usage_error(const char *cmd, const char *fmt, const char *arg);
/* Prints err's message; returns its status (the exit code). */
int cli_report(const sinter_error *err);
int cli_parse_int(const char *s, int64_t *v);
/* Parses argv after the command (check, print, hash, run, compile, bench,
 * import or "cache explain") into o. Free o with cli_free_opts, whatever it
 * returns. */
int cli_parse_args(const char *cmd, int argc, char **argv, cli_opts *o);
/* The options cmd takes, one a line ("NAME=" when it takes a value): what
 * the shell completion scripts ask for (sinter --list-options CMD). */
void cli_list_options(const char *cmd, FILE *f);
/* -o of run or bench: .safetensors, .npz or .npy (the library writes
 * safetensors for any other name); a usage error otherwise. */
int cli_check_tensors_ext(const char *cmd, const char *out);
/* Levenshtein distance (SIZE_MAX for names of 64 characters or more). */
size_t cli_edit_distance(const char *a, const char *b);
/* Whether cand is near enough to word to be offered as "did you mean". */
bool cli_near(const char *word, const char *cand);
/* The candidate nearest to word when one is near enough, else NULL. */
const char *cli_suggest(const char *word, const char *const *cands, size_t n);
void cli_free_opts(cli_opts *o);
int cli_global_options(int *argc, char **argv, const char **trace);

/* help.c */
extern const char cli_main_help[], cli_shape_help[], cli_check_help[], cli_print_help[], cli_passes_help[],
	cli_hash_help[], cli_run_help[], cli_compile_help[], cli_bench_help[], cli_tune_help[], cli_import_help[],
	cli_cache_help[];

/* json.c */
void cli_json_str(const char *s);
void cli_json_desc(const sinter_tensor *d, const sinter_model *m, int input);
void cli_json_outputs(const sinter_tensor *outs, size_t n);
double cli_json_num(const char *line, const char *key);
void cli_summarize(const sinter_tensor *t);

/* model.c */
int cli_load(const cli_opts *o, sinter_model **m); /* free *m with sinter_model_free */
int cli_optimize(const cli_opts *o, sinter_model *m, bool always, int sm);
double cli_now(void);  /* monotonic seconds */
double cli_wall(void); /* wall-clock seconds (shared with a child process) */
/* Free p with cli_prepared_free (also done here on failure). */
int cli_prepare(cli_opts *o, bool default_random, cli_prepared *p);
/* --weights (every one, as one set of keys) and --weights-prefix into m;
 * with no --weights, the model's weights line's file. */
sinter_status cli_load_weights(const cli_opts *o, sinter_model *m, sinter_error *err);
/* The files a run reads, for sinter_output_check: the model, every
 * --weights, --inputs (NULL entries skipped); returns how many into ins[18]. */
size_t cli_input_files(const cli_opts *o, const char *ins[18]);
void cli_prepared_free(cli_prepared *p);
bool cli_is_package(const char *file);
void cli_compile_opts(const cli_opts *o, sinter_compile_options *co);
/* The library's device for a --device value: "cpu", "cuda", "ref", else DEFAULT. */
sinter_device cli_device(const char *name);
int cli_package_inputs(sinter_compiled *c, const cli_opts *o, sinter_tensor **ins, size_t *n, sinter_error *err);

/* the commands */
int cli_cmd_check(cli_opts *o);
int cli_cmd_print(cli_opts *o);
int cli_cmd_hash(cli_opts *o);
int cli_cmd_run(cli_opts *o);
int cli_cmd_compile(cli_opts *o);
int cli_cmd_import(cli_opts *o);
int cli_cmd_bench(cli_opts *o);
int cli_cmd_cache(int argc, char **argv);
int cli_cache_records(int argc, char **argv); /* cache_records.c: export, import, merge */
int cli_cmd_generate(cli_opts *o);           /* generate.c */
extern const char cli_generate_help[];       /* generate.c */

#endif
