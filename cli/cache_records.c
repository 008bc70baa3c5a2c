/* cache_records.c: sinter cache export|import|merge, tuning records moved
 * between machines (docs/CACHE.md). A client of sinter.h. */
#include "sinter.h"
#include "sinter_tools.h"

#include <stdio.h>
#include <string.h>

int cli_cache_records(int argc, char **argv);

static int usage(const char *msg)
{
	fprintf(stderr, "sinter cache: %s\n(see 'sinter cache --help')\n", msg);
	return SINTER_E_USAGE;
}

static int fail(const sinter_error *err)
{
	fprintf(stderr, "%s\n", err->message);
	return err->status ? (int)err->status : SINTER_E_INTERNAL;
}

int cli_cache_records(int argc, char **argv)
{
	const char *cmd = argv[0], *dir = NULL, *out = NULL, *files[2] = {NULL, NULL};
	int nf = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strncmp(argv[i], "--dir=", 6))
			dir = argv[i] + 6;
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else if (argv[i][0] == '-' && argv[i][1])
			return usage("unknown option or missing value");
		else if (nf < 2)
			files[nf++] = argv[i];
		else
			return usage("too many files");
	}
	sinter_error err;
	if (!strcmp(cmd, "merge")) {
		if (nf != 2 || !out || dir)
			return usage("expected: merge A B -o C");
		size_t n, rej;
		if (sinter_tuning_merge(files[0], files[1], out, &n, &rej, &err))
			return fail(&err);
		printf("merged %s and %s into %s: %zu records (%zu rejected)\n", files[0], files[1], out, n, rej);
		return 0;
	}
	if (nf != 1 || out)
		return usage(!strcmp(cmd, "export") ? "expected: export FILE [--dir DIR]" : "expected: import FILE [--dir DIR]");
	if (!strcmp(cmd, "export")) {
		size_t n;
		if (sinter_tuning_export(dir, files[0], &n, &err))
			return fail(&err);
		printf("exported %zu tuning records to %s\n", n, files[0]);
		return 0;
	}
	size_t nr, nw, rej;
	if (sinter_tuning_import(dir, files[0], &nr, &nw, &rej, &err))
		return fail(&err);
	printf("imported %s: %zu records read, %zu stored (others: a record at least as fast was there), %zu rejected\n",
	       files[0], nr, nw, rej);
	return 0;
}
