/* fuzz_onnx.c: libFuzzer target for ONNX import (protobuf decoder and
 * translation). Any input must import or fail with a message, never crash;
 * a graph that imports must verify, and its printed text must parse back
 * (what `sinter import` writes). A broken property aborts: this is a test.
 * Mutations are structure-aware (onnx_mutator.h) three times in four. */
#include "frontend/onnx.h"
#include "onnx_mutator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_onnx: %s\n%s\n", what, detail);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ir_graph *g = NULL;
	ir_wstore *ws = ir_ws_new();
	sn_err e = {0};
	if (!ws)
		return 0;
	int rc = onnx_load_buffer(data, size, "f.onnx", NULL, 0, &g, ws, &e);
	if (rc != SN_OK) {
		if (g || e.code != rc || !e.msg[0])
			die("a failed import must return no graph and set a message", e.msg);
		if (rc == SN_EINPUT && strncmp(e.msg, "f.onnx: ", 8) != 0)
			die("an input error does not name the file", e.msg);
		ir_ws_free(ws);
		return 0;
	}
	if (ir_verify(g, &e) != SN_OK)
		die("an imported graph does not verify", e.msg);
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].op == IR_OP_param && !ir_ws_get(ws, g->nodes[i].pname))
			die("a param has no value in the weight store", g->nodes[i].pname);
	sn_buf a = {0};
	ir_print(g, &a);
	ir_graph *g2 = NULL;
	sn_err e2 = {0};
	if (sir_parse(a.s, a.len, "printed.sir", NULL, 0, &g2, &e2) != SN_OK) {
		fprintf(stderr, "%s\n", a.s);
		die("the printed text does not parse", e2.msg);
	}
	sn_buf_free(&a);
	ir_graph_free(g2);
	ir_graph_free(g);
	ir_ws_free(ws);
	return 0;
}

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/* Three times in four a mutation of the model's fields (dims, dtypes,
 * attribute values, value names, op types, initializer sizes, fields
 * deleted or duplicated); otherwise, or when the input is not protobuf,
 * libFuzzer's byte mutations. */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	if (seed % 4 != 0) {
		size_t n = om_mutate(data, size, max_size, seed, -1);
		if (n)
			return n;
	}
	return LLVMFuzzerMutate(data, size, max_size);
}
