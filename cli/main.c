/* main.c: the sinter command. A client of include/sinter.h like any
 * embedding application; exit codes are the API's status codes. The
 * commands live in one file each (docs/CLI.md); this one dispatches. */
#include "cli.h"
#include "sinter_rev.h" /* made at build time by cmake/rev.cmake */

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int run_command(int argc, char **argv);

/* Ctrl-C, SIGTERM or a closed terminal while an output (-o, a package, a
 * cache entry) is being written: its temp file goes too, then the signal
 * does what it would have done (SA_RESETHAND: the default action, once
 * the handler returns and the re-raised signal is unblocked). */
static void on_signal(int sig)
{
	sinter_temp_files_remove();
	raise(sig);
}

static void catch_signals(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < CLI_COUNT(sigs); i++) {
		struct sigaction old;
		/* a signal the parent ignores (nohup, a shell's background job)
		 * stays ignored */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
	}
}

int main(int argc, char **argv)
{
	catch_signals();
	const char *trace = NULL;
	int rc = cli_global_options(&argc, argv, &trace);
	if (rc)
		return rc;
	sinter_progress_enable(isatty(2));
	if (trace) {
		/* -o's rule for the trace file: found before any work */
		sinter_error err;
		if (sinter_output_check(NULL, trace, NULL, 0, &err))
			return cli_report(&err);
		sinter_trace_start();
		cli_tracing = true;
	}
	rc = run_command(argc, argv);
	if (trace) {
		sinter_error err;
		if (sinter_trace_write(trace, &err)) {
			int wrc = cli_report(&err);
			if (!rc)
				rc = wrc;
		}
	}
	return rc;
}

/* The commands that take a model, in the order of docs/CLI.md. */
static const struct {
	const char *name, *help;
	int (*fn)(cli_opts *o);
	bool tune, passes; /* their help adds the tuning or the passes options */
} cmds[] = {
	{"check", cli_check_help, cli_cmd_check, false, false},
	{"print", cli_print_help, cli_cmd_print, false, true},
	{"hash", cli_hash_help, cli_cmd_hash, false, false},
	{"run", cli_run_help, cli_cmd_run, true, true},
	{"compile", cli_compile_help, cli_cmd_compile, false, true},
	{"bench", cli_bench_help, cli_cmd_bench, true, true},
	{"generate", cli_generate_help, cli_cmd_generate, false, true},
	{"import", cli_import_help, cli_cmd_import, false, false},
};

static void command_help(size_t c)
{
	if (cmds[c].tune)
		printf(cmds[c].help, cli_tune_help);
	else
		fputs(cmds[c].help, stdout);
	fputs(cli_shape_help, stdout);
	if (cmds[c].passes)
		fputs(cli_passes_help, stdout);
}

/* "unknown command 'X'", with the nearest command when one is near. */
static int unknown_command(const char *cmd)
{
	const char *names[CLI_COUNT(cmds) + 2];
	for (size_t c = 0; c < CLI_COUNT(cmds); c++)
		names[c] = cmds[c].name;
	names[CLI_COUNT(cmds)] = "cache";
	names[CLI_COUNT(cmds) + 1] = "help";
	const char *near = cli_suggest(cmd, names, CLI_COUNT(names));
	char msg[256];
	if (near)
		snprintf(msg, sizeof msg, "unknown command '%s' (did you mean '%s'?)", cmd, near);
	else
		snprintf(msg, sizeof msg, "unknown command '%s'", cmd);
	return cli_usage_error(NULL, "%s", msg);
}

/* sinter help [CMD]: CMD's --help, or the commands. */
static int help(int argc, char **argv)
{
	if (argc < 1) {
		fputs(cli_main_help, stdout);
		return 0;
	}
	if (argc > 1)
		return cli_usage_error("help", "%s", "one command at a time: sinter help COMMAND");
	if (!strcmp(argv[0], "cache")) {
		fputs(cli_cache_help, stdout);
		return 0;
	}
	for (size_t c = 0; c < CLI_COUNT(cmds); c++)
		if (!strcmp(argv[0], cmds[c].name)) {
			command_help(c);
			return 0;
		}
	return unknown_command(argv[0]);
}

static int run_command(int argc, char **argv)
{
	if (argc < 2) {
		fputs(cli_main_help, stderr);
		return CLI_EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h"))
		return help(0, NULL);
	if (!strcmp(cmd, "help"))
		return help(argc - 2, argv + 2);
	if (!strcmp(cmd, "--version")) {
		printf("sinter %s (git %s)\n", sinter_version(), SINTER_REV);
		return 0;
	}
	if (!strcmp(cmd, "--list-options")) {
		/* for the shell completion scripts (cli/completion/) */
		if (argc != 3)
			return cli_usage_error(NULL, "%s", "--list-options takes one command");
		cli_list_options(argv[2], stdout);
		return 0;
	}
	if (!strcmp(cmd, "cache"))
		return cli_cmd_cache(argc - 2, argv + 2);
	for (size_t c = 0; c < CLI_COUNT(cmds); c++) {
		if (strcmp(cmd, cmds[c].name))
			continue;
		cli_opts o;
		int rc = cli_parse_args(cmd, argc - 2, argv + 2, &o);
		if (!rc && o.help)
			command_help(c);
		else if (!rc)
			rc = cmds[c].fn(&o);
		if (rc && o.json && cmds[c].fn != cli_cmd_bench) {
			/* the message went to stderr too */
			printf("{\"ok\": false, \"status\": %d, \"error\": ", rc);
			cli_json_str(cli_last_error[0] ? cli_last_error : "see stderr");
			printf("}\n");
		}
		cli_free_opts(&o);
		return rc;
	}
	return unknown_command(cmd);
}
