/* test_empty_edges.c: the paths UBSan caught on empty things (issue 31,
 * item 17), each run here so that the sanitizer build (scripts/test) sees
 * them, and each answer checked:
 *  - ir_numel of [2^40, 2^40, 0] is 0 (the product overflowed before the
 *    zero came);
 *  - ir_add_const of no elements from NULL data (memcpy from NULL);
 *  - ir_graph_clone of a graph without inputs (memcpy from the NULL
 *    input list): the cpu device clones every graph it compiles, so a
 *    model of constants alone runs on cpu, against the reference;
 *  - a cpu convolution over 0 input channels is its bias (im2col wrote 0
 *    bytes into a NULL scratch), against the reference;
 *  - cpu kernels over [0, 2^40, 2^40], through a transpose and a reshape
 *    (the linear index's strides overflowed in codegen/cl_emit.c), give
 *    empty outputs.
 * The cpu parts are skipped, saying so, without the cpu device. */
#include "sinter.h"
#include "sinter_tools.h"
#include "ir/ir.h"

#include "check.h"

#include <stdlib.h>

static void ir_edges(void)
{
	ir_shape big = {3, {INT64_C(1) << 40, INT64_C(1) << 40, 0}};
	CHECK(ir_numel(&big) == 0);
	ir_shape sym = {2, {0, -1}};
	CHECK(ir_numel(&sym) == -1);
	ir_shape some = {2, {3, 5}};
	CHECK(ir_numel(&some) == 15);

	ir_graph *g = ir_graph_new();
	sn_err e = {0};
	ir_shape none = {1, {0}}, one = {1, {2}};
	ir_ref c0 = g ? ir_add_const(g, IR_F32, &none, NULL, &e) : IR_NONE;
	CHECK(c0 != IR_NONE && e.code == SN_OK);
	float v[2] = {1.5f, -2.0f};
	ir_ref c1 = g ? ir_add_const(g, IR_F32, &one, v, &e) : IR_NONE;
	ir_ref s = c1 != IR_NONE ? ir_add(g, IR_OP_neg, &c1, 1, NULL, &e) : IR_NONE;
	CHECK(s != IR_NONE && ir_add_output(g, s) == SN_OK);
	/* no inputs: the clone's input list comes from none */
	ir_graph *k = g ? ir_graph_clone(g, &e) : NULL;
	CHECK(k && k->ninputs == 0 && k->noutputs == 1 && k->nnodes == g->nnodes);
	if (k)
		CHECK(ir_load(IR_F32, k->nodes[c1].data, 1) == -2.0 && ir_numel(&k->nodes[c0].shape) == 0);
	ir_graph_free(k);
	ir_graph_free(g);
}

/* Runs text on cpu and on the reference with the given inputs; checks
 * the outputs are the same (exactly: no arithmetic but copies and one
 * rounding here), nout of them. */
static void cpu_vs_ref(const char *what, const char *text, const sinter_tensor *in, size_t nin, size_t nout)
{
	sinter_model *m = NULL;
	sinter_error err;
	sinter_compile_options o;
	sinter_compile_options_init(&o);
	o.device = SINTER_DEVICE_CPU;
	o.cache_dir = "";
	o.threads = 2;
	sinter_compiled *c = NULL;
	sinter_tensor *got = NULL, *want = NULL;
	bool ok = sinter_model_parse(text, strlen(text), "edges.sir", NULL, &m, &err) == SINTER_OK &&
		  sinter_model_init_random(m, 3, &err) == SINTER_OK && sinter_model_compile(m, &o, &c, NULL, &err) == SINTER_OK &&
		  sinter_compiled_run(c, in, nin, &got, &err) == SINTER_OK &&
		  sinter_model_run_ref(m, in, nin, &want, &err) == SINTER_OK;
	if (!ok)
		fprintf(stderr, "%s: %s\n", what, err.message);
	CHECK(ok);
	for (size_t i = 0; ok && i < nout; i++) {
		CHECK(got[i].nbytes == want[i].nbytes);
		CHECK(got[i].nbytes == 0 || memcmp(got[i].data, want[i].data, got[i].nbytes) == 0);
	}
	printf("%-40s %s\n", what, ok ? "ran on cpu and ref" : "failed");
	sinter_tensors_free(got, got ? nout : 0);
	sinter_tensors_free(want, want ? nout : 0);
	sinter_compiled_free(c);
	sinter_model_free(m);
}

static void cpu_edges(void)
{
	/* constants alone: no inputs */
	cpu_vs_ref("a model without inputs",
		   "sinter 1\nfunc @main() -> (f32[3]) {\n  %c = const f32[3] [1.5, -2, 3]\n  %d = add(%c, %c)\n"
		   "  return %d\n}\n",
		   NULL, 0, 1);
	/* 0 input channels: the bias alone (a param, filled randomly) */
	float x = 0, w = 0;
	sinter_tensor in[2] = {{.name = "x", .dtype = SINTER_F32, .rank = 4, .shape = {2, 0, 8, 8}, .data = &x},
			       {.name = "w", .dtype = SINTER_F32, .rank = 4, .shape = {4, 0, 3, 3}, .data = &w}};
	cpu_vs_ref("conv2d over 0 channels",
		   "sinter 1\nfunc @main(%x: f32[2,0,8,8], %w: f32[4,0,3,3]) -> (f32[2,4,8,8], f32[2,4,8,8]) {\n"
		   "  %b = param f32[4] \"b\"\n"
		   "  %c = conv2d(%x, %w, %b) pad=[1,1,1,1]\n  %d = conv2d(%x, %w) pad=[1,1,1,1]\n  return %c, %d\n}\n",
		   in, 2, 2);
	/* empty, with dims whose product does not fit */
	sinter_tensor e = {.name = "x", .dtype = SINTER_F32, .rank = 3, .shape = {0, INT64_C(1) << 40, INT64_C(1) << 40},
			   .data = &x};
	cpu_vs_ref("kernels over [0, 2^40, 2^40]",
		   "sinter 1\nfunc @main(%x: f32[0,1099511627776,1099511627776]) -> (f32[0,1099511627776,1099511627776], "
		   "f32[1099511627776,0,1099511627776], f32[1099511627776,0,1099511627776]) {\n  %e = exp(%x)\n"
		   "  %t = transpose(%e) perm=[1,0,2]\n  %r = neg(%t)\n"
		   "  %s = reshape(%e) shape=[1099511627776,0,1099511627776]\n  %q = neg(%s)\n  return %e, %r, %q\n}\n",
		   &e, 1, 3);
}

int main(void)
{
	ir_edges();
	char why[256];
	if (sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) == SINTER_OK)
		cpu_edges();
	else
		printf("cpu parts skipped: %s\n", why);
	return check_done("empty_edges");
}
