/* fuzz_sir.c: libFuzzer target for the .sir parser. Any input must parse or
 * fail with a message, never crash; a graph that parses must verify, print,
 * parse back, and print to the same text (the printer's fixed point). A
 * broken property aborts: this is a test. */
#include "frontend/sir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_sir: %s\n%s\n", what, detail);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ir_graph *g = NULL;
	sn_err e = {0};
	/* One binding now and then, to exercise substitution. */
	sir_bind bind = {"N", 3};
	size_t nb = size % 3 == 0 ? 1 : 0;
	int rc = sir_parse((const char *)data, size, "f.sir", &bind, nb, &g, &e);
	if (rc != SN_OK) {
		if (g || e.code != rc || !e.msg[0])
			die("a failed parse must return no graph and set a message", e.msg);
		if (rc == SN_EINPUT && strncmp(e.msg, "f.sir:", 6) != 0)
			die("an input error has no location", e.msg);
		return 0;
	}
	if (ir_verify(g, &e) != SN_OK)
		die("a parsed graph does not verify", e.msg);
	sn_buf a = {0}, b = {0};
	ir_print(g, &a);
	ir_graph *g2 = NULL;
	sn_err e2 = {0};
	if (sir_parse(a.s, a.len, "printed.sir", NULL, 0, &g2, &e2) != SN_OK)
		die("the printed text does not parse", e2.msg);
	ir_print(g2, &b);
	if (a.len != b.len || memcmp(a.s, b.s, a.len) != 0) {
		fprintf(stderr, "first print:\n%s\nsecond print:\n%s\n", a.s, b.s);
		die("print is not a fixed point", "");
	}
	sn_buf_free(&a);
	sn_buf_free(&b);
	ir_graph_free(g2);
	ir_graph_free(g);
	return 0;
}
