/* cache.c: sinter cache stats|clear|explain (export, import and merge:
 * cache_records.c). */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* sinter cache explain FILE [run's options]: why a compile with these
 * options would hit or miss the caches. */
static int cmd_explain(int argc, char **argv)
{
	cli_opts o;
	int rc = cli_parse_args("cache explain", argc, argv, &o);
	if (rc || o.help) {
		if (o.help)
			fputs(cli_cache_help, stdout);
		cli_free_opts(&o);
		return rc;
	}
	cli_prepared p;
	if ((rc = cli_prepare(&o, false, &p))) {
		cli_free_opts(&o);
		return rc;
	}
	sinter_compile_options co;
	cli_compile_opts(&o, &co);
	sinter_error err;
	char *text = NULL;
	if (sinter_cache_explain(p.m, &co, &text, &err))
		rc = cli_report(&err);
	else
		fputs(text, stdout);
	sinter_free(text);
	cli_prepared_free(&p);
	cli_free_opts(&o);
	return rc;
}

int cli_cmd_cache(int argc, char **argv)
{
	if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
		fputs(cli_cache_help, argc < 1 ? stderr : stdout);
		return argc < 1 ? CLI_EXIT_USAGE : 0;
	}
	if (!strcmp(argv[0], "export") || !strcmp(argv[0], "import") || !strcmp(argv[0], "merge"))
		return cli_cache_records(argc, argv);
	if (!strcmp(argv[0], "explain"))
		return cmd_explain(argc - 1, argv + 1);
	static const char *const subs[] = {"stats", "clear", "export", "import", "merge", "explain"};
	if (strcmp(argv[0], "stats") && strcmp(argv[0], "clear")) {
		const char *near = cli_suggest(argv[0], subs, CLI_COUNT(subs));
		char msg[256];
		snprintf(msg, sizeof msg, "unknown cache command '%s'%s%s%s", argv[0], near ? " (did you mean '" : "",
			 near ? near : "", near ? "'?)" : " (stats, clear, export, import, merge or explain)");
		return cli_usage_error("cache", "%s", msg);
	}
	const char *dir = NULL;
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") && !strcmp(argv[0], "stats"))
			json = true;
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc && !dir)
			dir = argv[++i];
		else if (!strncmp(argv[i], "--dir=", 6) && !dir)
			dir = argv[i] + 6;
		else
			return cli_usage_error("cache", "%s", "expected: stats [--dir DIR] [--json] | clear [--dir DIR]");
	}
	sinter_error err;
	char def[4096];
	if (!dir) {
		if (sinter_cache_dir(def, sizeof def, &err))
			return cli_report(&err);
		dir = def;
	}
	if (!strcmp(argv[0], "stats")) {
		size_t n;
		uint64_t bytes;
		size_t pn;
		uint64_t pbytes;
		if (sinter_cache_kernel_stats(dir, &n, &bytes, &err) || sinter_cache_plan_stats(dir, &pn, &pbytes, &err))
			return cli_report(&err);
		size_t rej, nrec;
		if (sinter_tuning_stats(dir, &nrec, &rej, &err))
			return cli_report(&err);
		if (json) {
			printf("{\"dir\": ");
			cli_json_str(dir);
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
	/* clear: everything it can, each failure reported, exit non-zero
	 * after (the library warns for each file it cannot delete) */
	size_t n = 0, nr = 0;
	int rc = 0;
	if (sinter_cache_clear(dir, &n, &err))
		rc = cli_report(&err);
	if (sinter_tuning_clear(dir, &nr, &err)) {
		int trc = cli_report(&err);
		rc = rc ? rc : trc;
	}
	printf("caches %s: removed %zu entries (kernels, plans and tuning records)%s\n", dir, n + nr,
	       rc ? "; some could not be removed (above)" : "");
	return rc;
}
