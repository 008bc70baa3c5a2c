/* main.c: the sinter command. A client of include/sinter.h like any
 * embedding application; exit codes are the API's status codes. The
 * commands live in one file each (docs/CLI.md); this one dispatches. */
#include "cli.h"
#include "sinter_rev.h" /* made at build time by cmake/rev.cmake */

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int run_command(int argc, char **argv);

int main(int argc, char **argv)
{
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

static int run_command(int argc, char **argv)
{
	if (argc < 2) {
		fputs(cli_main_help, stderr);
		return CLI_EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		fputs(cli_main_help, stdout);
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
		{"check", cli_check_help, false},
		{"print", cli_print_help, false},
		{"hash", cli_hash_help, false},
		{"run", cli_run_help, true},
		{"compile", cli_compile_help, false},
		{"bench", cli_bench_help, true},
		{"import", cli_import_help, false},
	};
	if (!strcmp(cmd, "cache"))
		return cli_cmd_cache(argc - 2, argv + 2);
	for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
		if (strcmp(cmd, cmds[c].name))
			continue;
		cli_opts o;
		int rc = cli_parse_args(cmd, argc - 2, argv + 2, &o, cmds[c].run);
		if (!rc && o.help) {
			if (c == 3 || c == 5)
				printf(cmds[c].help, cli_tune_help);
			else
				fputs(cmds[c].help, stdout);
			fputs(cli_shape_help, stdout);
			if (c != 0 && c != 2 && c != 6)
				fputs(cli_passes_help, stdout);
		} else if (!rc) {
			rc = c == 0 ? cli_cmd_check(&o) : c == 1 ? cli_cmd_print(&o) : c == 2 ? cli_cmd_hash(&o)
			   : c == 3 ? cli_cmd_run(&o) : c == 4 ? cli_cmd_compile(&o) : c == 5 ? cli_cmd_bench(&o)
			   : cli_cmd_import(&o);
		}
		if (rc && o.json && c != 5) {
			/* the message went to stderr too */
			printf("{\"ok\": false, \"status\": %d, \"error\": ", rc);
			cli_json_str(cli_last_error[0] ? cli_last_error : "see stderr");
			printf("}\n");
		}
		cli_free_opts(&o);
		return rc;
	}
	return cli_usage_error(NULL, "unknown command '%s'", cmd);
}
