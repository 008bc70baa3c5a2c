/* test_onnx.c: ONNX import of small models spelled out with onnx_writer.h:
 * the graph that results (printed) and its values on ref, against numbers
 * worked out by hand or by loops written here; and the error messages.
 * `test_onnx --write-corpus DIR` writes the valid models as fuzz seeds. */
#include "frontend/onnx.h"
#include "ir/ref/ref.h"
#include "check.h"
#include "onnx_writer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *corpus_dir;

typedef struct loaded {
	ir_graph *g;
	ir_wstore *ws;
	sn_err e;
	int rc;
} loaded;

static void save(const char *name, const pbw *m)
{
	if (!corpus_dir)
		return;
	char path[512];
	snprintf(path, sizeof path, "%s/%s.onnx", corpus_dir, name);
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(m->p, 1, m->n, f);
		fclose(f);
	}
}

static loaded load(pbw *m, const char *seed, const sir_bind *b, size_t nb)
{
	loaded l = {0};
	l.ws = ir_ws_new();
	l.rc = onnx_load_buffer(m->p, m->n, "m.onnx", b, nb, &l.g, l.ws, &l.e);
	if (l.rc == SN_OK) {
		/* what sinter import writes must read back as the same graph */
		sn_buf a = {0}, b = {0};
		ir_print(l.g, &a);
		ir_graph *g2 = NULL;
		sn_err e2 = {0};
		CHECK(sir_parse(a.s, a.len, "printed.sir", NULL, 0, &g2, &e2) == SN_OK);
		if (g2)
			ir_print(g2, &b);
		CHECK_STR(a.s, b.s);
		if (getenv("ONNX_TEST_PRINT"))
			printf("%s", a.s);
		sn_buf_free(&a);
		sn_buf_free(&b);
		ir_graph_free(g2);
		if (seed)
			save(seed, m);
	}
	if (l.rc && seed)
		fprintf(stderr, "%s: %s\n", seed, l.e.msg);
	free(m->p);
	*m = (pbw){0};
	return l;
}

static void unload(loaded *l)
{
	ir_graph_free(l->g);
	ir_ws_free(l->ws);
}

static char *text(const ir_graph *g)
{
	sn_buf b = {0};
	ir_print(g, &b);
	return b.s;
}

/* Runs l's graph on ref with f32 inputs in[i] (graph input order); the
 * outputs go to out (caller frees data). */
static int run(loaded *l, const float *const *in, ir_tensor *out)
{
	ir_graph *g = l->g;
	ir_tensor *vals = calloc(g->nnodes, sizeof *vals);
	for (uint32_t i = 0; i < g->ninputs; i++) {
		const ir_node *n = &g->nodes[g->inputs[i]];
		vals[g->inputs[i]] = (ir_tensor){n->dtype, n->shape, (void *)in[i],
						 (size_t)ir_numel(&n->shape) * ir_dtype_size(n->dtype)};
	}
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].op == IR_OP_param) {
			const ir_tensor *t = ir_ws_get(l->ws, g->nodes[i].pname);
			CHECK(t != NULL);
			if (t)
				vals[i] = *t;
		}
	sn_err e = {0};
	int rc = ref_run(g, vals, out, &e);
	if (rc)
		fprintf(stderr, "ref_run: %s\n", e.msg);
	free(vals);
	return rc;
}

static const float *F(const ir_tensor *t) { return t->data; }

#define I64(...) ((const int64_t[]){__VA_ARGS__}), (int)(sizeof((const int64_t[]){__VA_ARGS__}) / 8)

static void init_f(pbw *g, const char *name, const int64_t *dims, int nd, const float *v, size_t n)
{
	pbw t = w_tensor_f(name, dims, nd, v, n);
	pbw_msg(g, 5, &t);
}

static void init_i64(pbw *g, const char *name, const int64_t *dims, int nd, const int64_t *v, size_t n)
{
	pbw t = w_tensor_i64(name, dims, nd, v, n);
	pbw_msg(g, 5, &t);
}

/* ---- a small conv net: Conv(pads 1) -> Relu -> GlobalAveragePool ->
 * Flatten -> Gemm(transB), batch symbolic ---- */
static void test_convnet(void)
{
	static const float w[18] = {1, 0, -1, 2, 0.5f, -2, 1, 1, 1, -1, 2, 0, 0, 1, 0, 3, -1, 0.25f};
	static const float b[2] = {0.5f, -1};
	static const float fw[6] = {1, 2, -1, 0.5f, 3, -3};
	static const float fb[3] = {0.1f, 0.2f, 0.3f};
	pbw g = {0}, at = {0};
	init_f(&g, "conv.weight", I64(2, 1, 3, 3), w, 18);
	pbw tb = w_tensor_raw("conv.bias", W_FLOAT, I64(2), b, sizeof b);
	pbw_msg(&g, 5, &tb);
	init_f(&g, "fc.weight", I64(3, 2), fw, 6);
	init_f(&g, "fc.bias", I64(3), fb, 3);
	w_attr_ints(&at, "pads", I64(1, 1, 1, 1));
	w_attr_ints(&at, "kernel_shape", I64(3, 3));
	w_node(&g, "Conv", "/conv/Conv", L("input.1", "conv.weight", "conv.bias"), L("/conv/Conv_output_0"), &at);
	w_node(&g, "Relu", "/relu/Relu", L("/conv/Conv_output_0"), L("onnx::Relu_7"), NULL);
	w_node(&g, "GlobalAveragePool", "gap", L("onnx::Relu_7"), L("8"), NULL);
	w_node(&g, "Flatten", "flat", L("8"), L("flat"), NULL);
	w_attr_i(&at, "transB", 1);
	w_attr_f(&at, "alpha", 1);
	w_node(&g, "Gemm", "fc", L("flat", "fc.weight", "fc.bias"), L("logits"), &at);
	w_value(&g, 11, "input.1", W_FLOAT, L("batch", "1", "4", "4"));
	w_value(&g, 12, "logits", W_FLOAT, L("batch", "3"));
	pbw m = w_model(&g, 17);
	pbw m2 = {0};
	pbw_put(&m2, m.p, m.n);
	loaded l = load(&m, "convnet", NULL, 0);
	CHECK(l.rc == SN_OK);
	if (l.rc) {
		unload(&l);
		return;
	}
	char *s = text(l.g);
	CHECK_STR(s, "sinter 1\n\n"
		     "func @main(%input.1: f32[batch,1,4,4]) -> (f32[batch,3]) {\n"
		     "  %conv.weight = param f32[2,1,3,3] \"conv.weight\"\n"
		     "  %conv.bias = param f32[2] \"conv.bias\"\n"
		     "  %_conv_Conv_output_0 = conv2d(%input.1, %conv.weight, %conv.bias) pad=[1,1,1,1]\n"
		     "  %onnx__Relu_7 = relu(%_conv_Conv_output_0)\n"
		     "  %v8 = global_avg_pool(%onnx__Relu_7)\n"
		     "  %flat = flatten(%v8)\n"
		     "  %fc.weight = param f32[3,2] \"fc.weight\"\n"
		     "  %fc.bias = param f32[3] \"fc.bias\"\n"
		     "  %logits = linear(%flat, %fc.weight, %fc.bias)\n"
		     "  return %logits\n"
		     "}\n");
	free(s);
	unload(&l);

	/* bound batch = 2: values against direct loops */
	sir_bind bind = {"batch", 2};
	l = load(&m2, NULL, &bind, 1);
	CHECK(l.rc == SN_OK);
	if (l.rc) {
		unload(&l);
		return;
	}
	float x[32];
	for (int i = 0; i < 32; i++)
		x[i] = (float)((i * 7) % 11) - 5;
	ir_tensor out[1];
	const float *in[] = {x};
	CHECK(run(&l, in, out) == SN_OK);
	for (int n = 0; n < 2; n++) {
		double pooled[2];
		for (int o = 0; o < 2; o++) {
			double sum = 0;
			for (int i = 0; i < 4; i++)
				for (int j = 0; j < 4; j++) {
					double acc = b[o];
					for (int p = 0; p < 3; p++)
						for (int q = 0; q < 3; q++) {
							int y = i + p - 1, z = j + q - 1;
							if (y >= 0 && y < 4 && z >= 0 && z < 4)
								acc += x[n * 16 + y * 4 + z] * w[o * 9 + p * 3 + q];
						}
					sum += acc > 0 ? acc : 0;
				}
			pooled[o] = sum / 16;
		}
		for (int k = 0; k < 3; k++)
			CHECK_NEAR(F(&out[0])[n * 3 + k], fb[k] + pooled[0] * fw[k * 2] + pooled[1] * fw[k * 2 + 1], 1e-5);
	}
	free(out[0].data);
	unload(&l);
}

/* ---- Shape -> Gather -> Unsqueeze -> Concat -> Reshape folds into one
 * reshape with the symbolic batch ---- */
static void test_shape_subgraph(void)
{
	pbw g = {0}, at = {0};
	init_i64(&g, "zero", NULL, 0, I64(0));
	init_i64(&g, "axes0", I64(1), I64(0));
	init_i64(&g, "twelve", I64(1), I64(12));
	w_node(&g, "Shape", "s", L("x"), L("shape"), NULL);
	w_node(&g, "Gather", "g0", L("shape", "zero"), L("n"), NULL);
	w_node(&g, "Unsqueeze", "u", L("n", "axes0"), L("n1"), NULL);
	w_attr_i(&at, "axis", 0);
	w_node(&g, "Concat", "c", L("n1", "twelve"), L("target"), &at);
	w_node(&g, "Reshape", "r", L("x", "target"), L("y"), NULL);
	w_node(&g, "Identity", "id", L("y"), L("out"), NULL);
	w_value(&g, 11, "x", W_FLOAT, L("N", "3", "4"));
	w_value(&g, 12, "out", W_FLOAT, NULL);
	pbw m = w_model(&g, 13);
	loaded l = load(&m, "shape_subgraph", NULL, 0);
	CHECK(l.rc == SN_OK);
	if (l.rc) {
		unload(&l);
		return;
	}
	char *s = text(l.g);
	CHECK_STR(s, "sinter 1\n\n"
		     "func @main(%x: f32[N,3,4]) -> (f32[N,12]) {\n"
		     "  %out = reshape(%x) shape=[N,12]\n"
		     "  return %out\n"
		     "}\n");
	CHECK(ir_ws_count(l.ws) == 0);
	free(s);
	unload(&l);
}

/* ---- a dynamic-batch Reshape whose -1 stands for the batch symbol (the
 * numbers cancel) imports; one whose -1 would be batch*16 says so, naming
 * the node and the symbol to bind ---- */
static void expect(pbw *m, const char *msg, int code);

static void test_reshape_sym(void)
{
	for (int k = 0; k < 2; k++) {
		pbw g = {0};
		init_i64(&g, "target", I64(2), (const int64_t[]){-1, k ? 4 : 12}, 2);
		w_node(&g, "Reshape", "rs", L("x", "target"), L("y"), NULL);
		w_value(&g, 11, "x", W_FLOAT, L("batch", k ? "16" : "2", k ? "4" : "6"));
		w_value(&g, 12, "y", W_FLOAT, NULL);
		pbw m = w_model(&g, 18);
		if (k) {
			expect(&m, "m.onnx: node 'rs' (Reshape): reshape: the -1 of [-1,4] for f32[batch,16,4] would be batch*16, "
				   "which no dim can hold (a dim is a number or one symbol); bind batch to a value when loading the model",
			       SN_EINPUT);
			continue;
		}
		loaded l = load(&m, "reshape_sym", NULL, 0);
		CHECK(l.rc == SN_OK);
		if (l.rc) {
			unload(&l);
			continue;
		}
		CHECK(l.g->nodes[l.g->outputs[0]].shape.rank == 2 && l.g->nodes[l.g->outputs[0]].shape.d[0] == IR_SYM(0) &&
		      l.g->nodes[l.g->outputs[0]].shape.d[1] == 12);
		unload(&l);
		/* bound, it runs: the values move unchanged */
		g = (pbw){0};
		init_i64(&g, "target", I64(2), I64(-1, 12));
		w_node(&g, "Reshape", "rs", L("x", "target"), L("y"), NULL);
		w_value(&g, 11, "x", W_FLOAT, L("batch", "2", "6"));
		w_value(&g, 12, "y", W_FLOAT, NULL);
		m = w_model(&g, 18);
		sir_bind b = {"batch", 3};
		l = load(&m, NULL, &b, 1);
		CHECK(l.rc == SN_OK);
		float x[36];
		for (int i = 0; i < 36; i++)
			x[i] = (float)(i * 7 % 11) - 4.5f;
		const float *in[] = {x};
		ir_tensor out[1];
		if (l.rc == SN_OK && run(&l, in, out) == SN_OK) {
			CHECK(out[0].shape.rank == 2 && out[0].shape.d[0] == 3 && out[0].shape.d[1] == 12);
			CHECK(memcmp(out[0].data, x, sizeof x) == 0);
			free(out[0].data);
		}
		unload(&l);
	}
}

/* ---- Split (num_outputs), Slice with a negative step, Concat, Transpose ---- */
static void test_moves(void)
{
	pbw g = {0}, at = {0};
	w_attr_i(&at, "axis", 1);
	w_attr_i(&at, "num_outputs", 3);
	w_node(&g, "Split", "sp", L("x"), L("a", "b", "c"), &at);
	init_i64(&g, "st", I64(1), I64(5));
	init_i64(&g, "en", I64(1), I64(-7));
	init_i64(&g, "ax", I64(1), I64(-1));
	init_i64(&g, "stp", I64(1), I64(-2));
	w_node(&g, "Slice", "sl", L("x", "st", "en", "ax", "stp"), L("odd_rev"), NULL);
	w_attr_i(&at, "axis", 1);
	w_node(&g, "Concat", "cat", L("c", "a", "odd_rev"), L("cat"), &at);
	w_node(&g, "Transpose", "tr", L("cat"), L("t"), NULL);
	w_value(&g, 11, "x", W_FLOAT, L("2", "6"));
	w_value(&g, 12, "t", W_FLOAT, NULL);
	w_value(&g, 12, "b", W_FLOAT, NULL);
	pbw m = w_model(&g, 18);
	loaded l = load(&m, "moves", NULL, 0);
	CHECK(l.rc == SN_OK);
	if (l.rc) {
		unload(&l);
		return;
	}
	float x[12];
	for (int i = 0; i < 12; i++)
		x[i] = (float)(10 * (i / 6) + i % 6); /* x[r][c] = 10r + c */
	ir_tensor out[2];
	const float *in[] = {x};
	CHECK(run(&l, in, out) == SN_OK);
	/* cat = [c | a | x[:, 5:-7:-2]] = columns 4,5 | 0,1 | 5,3,1; t = cat^T [7,2] */
	static const int cols[7] = {4, 5, 0, 1, 5, 3, 1};
	CHECK(out[0].shape.rank == 2 && out[0].shape.d[0] == 7 && out[0].shape.d[1] == 2);
	for (int i = 0; i < 7; i++)
		for (int r = 0; r < 2; r++)
			CHECK(F(&out[0])[i * 2 + r] == (float)(10 * r + cols[i]));
	CHECK(out[1].shape.d[1] == 2 && F(&out[1])[0] == 2 && F(&out[1])[3] == 13);
	free(out[0].data);
	free(out[1].data);
	unload(&l);
}

/* ---- Gemm with transA, alpha and beta: y = 0.5 A^T B + 2 C ---- */
static void test_gemm(void)
{
	static const float B[12] = {1, 2, 3, 4, -1, 0, 1, 2, 0.5f, -0.5f, 2, 1};
	static const float C[4] = {1, -1, 0.25f, 2};
	pbw g = {0}, at = {0};
	init_f(&g, "B", I64(3, 4), B, 12);
	init_f(&g, "C", I64(4), C, 4);
	w_attr_i(&at, "transA", 1);
	w_attr_f(&at, "alpha", 0.5f);
	w_attr_f(&at, "beta", 2);
	w_node(&g, "Gemm", "gemm", L("A", "B", "C"), L("y"), &at);
	w_value(&g, 11, "A", W_FLOAT, L("3", "2"));
	w_value(&g, 12, "y", W_FLOAT, NULL);
	pbw m = w_model(&g, 13);
	loaded l = load(&m, "gemm", NULL, 0);
	CHECK(l.rc == SN_OK);
	if (l.rc) {
		unload(&l);
		return;
	}
	static const float A[6] = {1, 2, 3, -1, 0.5f, 4};
	ir_tensor out[1];
	const float *in[] = {A};
	CHECK(run(&l, in, out) == SN_OK);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 4; j++) {
			double acc = 0;
			for (int k = 0; k < 3; k++)
				acc += A[k * 2 + i] * B[k * 4 + j];
			CHECK_NEAR(F(&out[0])[i * 4 + j], 0.5 * acc + 2 * C[j], 1e-6);
		}
	free(out[0].data);
	unload(&l);
}

/* ---- a causal mask built from ConstantOfShape -> Trilu -> Equal, folded
 * to an inline constant; Where + Softmax on the input ---- */
static void test_mask(void)
{
	pbw g = {0}, at = {0};
	init_i64(&g, "sz", I64(2), I64(3, 3));
	float one = 1;
	pbw v = w_tensor_raw(NULL, W_FLOAT, I64(1), &one, 4);
	w_attr_t(&at, "value", &v);
	w_node(&g, "ConstantOfShape", "cos", L("sz"), L("ones"), &at);
	w_attr_i(&at, "upper", 0);
	w_node(&g, "Trilu", "tril", L("ones"), L("tril"), &at);
	float zero = 0, neg = -1e4f;
	pbw z = w_tensor_raw(NULL, W_FLOAT, NULL, 0, &zero, 4);
	w_attr_t(&at, "value", &z);
	w_node(&g, "Constant", "k0", NULL, L("zero"), &at);
	pbw nn = w_tensor_raw(NULL, W_FLOAT, NULL, 0, &neg, 4);
	w_attr_t(&at, "value", &nn);
	w_node(&g, "Constant", "kneg", NULL, L("neg"), &at);
	w_node(&g, "Equal", "eq", L("tril", "zero"), L("masked"), NULL);
	w_node(&g, "Where", "wh", L("masked", "neg", "x"), L("scores"), NULL);
	w_attr_i(&at, "axis", -1);
	w_node(&g, "Softmax", "sm", L("scores"), L("p"), &at);
	/* the same mask from Trilu on a graph input (iota path): upper, k = 1 */
	init_i64(&g, "k1", NULL, 0, I64(1));
	w_node(&g, "Trilu", "triu", L("x", "k1"), L("up"), NULL);
	w_value(&g, 11, "x", W_FLOAT, L("3", "3"));
	w_value(&g, 12, "p", W_FLOAT, NULL);
	w_value(&g, 12, "up", W_FLOAT, NULL);
	pbw m = w_model(&g, 17);
	loaded l = load(&m, "mask", NULL, 0);
	CHECK(l.rc == SN_OK);
	if (l.rc) {
		unload(&l);
		return;
	}
	char *s = text(l.g);
	CHECK(strstr(s, "= const bool[3,3] [false, true, true, false, false, true, false, false, false]") != NULL);
	CHECK(strstr(s, "Shape") == NULL && strstr(s, "expand") == NULL);
	free(s);
	static const float x[9] = {1, 2, 3, 0.5f, -1, 4, 2, 2, -3};
	ir_tensor out[2];
	const float *in[] = {x};
	CHECK(run(&l, in, out) == SN_OK);
	for (int i = 0; i < 3; i++) {
		double den = 0;
		for (int j = 0; j <= i; j++)
			den += exp(x[i * 3 + j]);
		for (int j = 0; j < 3; j++) {
			CHECK_NEAR(F(&out[0])[i * 3 + j], j <= i ? exp(x[i * 3 + j]) / den : 0, 1e-6);
			CHECK(F(&out[1])[i * 3 + j] == (j - i >= 1 ? x[i * 3 + j] : 0));
		}
	}
	free(out[0].data);
	free(out[1].data);
	unload(&l);
}

/* ---- LayerNormalization, Pow/ReduceMean (opset 18 axes input), Clip with
 * a tensor bound, Pad reflect ---- */
static void test_norms(void)
{
	static const float gamma[4] = {1, 2, 0.5f, -1}, beta[4] = {0, 1, -1, 0.5f};
	pbw g = {0}, at = {0};
	init_f(&g, "ln.weight", I64(4), gamma, 4);
	init_f(&g, "ln.bias", I64(4), beta, 4);
	w_attr_f(&at, "epsilon", 1e-3f);
	w_node(&g, "LayerNormalization", "ln", L("x", "ln.weight", "ln.bias"), L("ln"), &at);
	init_i64(&g, "axes", I64(1), I64(-1));
	float two = 2;
	pbw t2 = w_tensor_raw("two", W_FLOAT, NULL, 0, &two, 4);
	pbw_msg(&g, 5, &t2);
	w_node(&g, "Pow", "pw", L("x", "two"), L("sq"), NULL);
	w_attr_i(&at, "keepdims", 0);
	w_node(&g, "ReduceMean", "rm", L("sq", "axes"), L("ms"), &at);
	static const float hi[2] = {5, 0.5f};
	init_f(&g, "hi", I64(2), hi, 2);
	w_node(&g, "Clip", "clip", L("ms", "", "hi"), L("clipped"), NULL);
	init_i64(&g, "pads", I64(4), I64(0, 2, 0, 1));
	w_attr_s(&at, "mode", "reflect");
	w_node(&g, "Pad", "pad", L("x", "pads"), L("padded"), &at);
	w_value(&g, 11, "x", W_FLOAT, L("2", "4"));
	w_value(&g, 12, "ln", W_FLOAT, NULL);
	w_value(&g, 12, "clipped", W_FLOAT, NULL);
	w_value(&g, 12, "padded", W_FLOAT, NULL);
	pbw m = w_model(&g, 18);
	loaded l = load(&m, "norms", NULL, 0);
	CHECK(l.rc == SN_OK);
	if (l.rc) {
		unload(&l);
		return;
	}
	static const float x[8] = {1, 2, 3, 4, -2, 0.5f, 0, 3};
	ir_tensor out[3];
	const float *in[] = {x};
	CHECK(run(&l, in, out) == SN_OK);
	for (int r = 0; r < 2; r++) {
		double mean = 0, var = 0, ms = 0;
		for (int k = 0; k < 4; k++)
			mean += x[r * 4 + k] / 4.0, ms += x[r * 4 + k] * x[r * 4 + k] / 4.0;
		for (int k = 0; k < 4; k++)
			var += (x[r * 4 + k] - mean) * (x[r * 4 + k] - mean) / 4.0;
		for (int k = 0; k < 4; k++)
			CHECK_NEAR(F(&out[0])[r * 4 + k], (x[r * 4 + k] - mean) / sqrt(var + 1e-3) * gamma[k] + beta[k], 1e-5);
		CHECK_NEAR(F(&out[1])[r], ms < hi[r] ? ms : hi[r], 1e-6);
	}
	/* row 0 = 1 2 3 4 reflect-padded by 2 before, 1 after: 3 2 1 2 3 4 3 */
	static const float p0[7] = {3, 2, 1, 2, 3, 4, 3};
	CHECK(out[2].shape.d[1] == 7);
	for (int k = 0; k < 7; k++)
		CHECK(F(&out[2])[k] == p0[k]);
	for (int i = 0; i < 3; i++)
		free(out[i].data);
	unload(&l);
}

/* ---- errors ---- */

static void expect(pbw *m, const char *msg, int code)
{
	loaded l = load(m, NULL, NULL, 0);
	CHECK(l.rc == code);
	CHECK(l.g == NULL);
	CHECK_STR(l.e.msg, msg);
	unload(&l);
}

/* ---- graph outputs keep their ONNX names: a pass-through of a graph
 * input gets a reshape view, a pass-through of a computed value renames it,
 * a value listed twice gets a copy; Dropout's mask is all true ---- */
static const char *out_name(const loaded *l, uint32_t i) { return l->g->nodes[l->g->outputs[i]].name; }

static void test_output_names(void)
{
	pbw g = {0};
	w_node(&g, "Identity", "id", L("x"), L("y"), NULL);
	w_node(&g, "Relu", "r", L("x"), L("a"), NULL);
	w_node(&g, "Dropout", "dr", L("a"), L("b", "mask"), NULL);
	w_value(&g, 11, "x", W_FLOAT, L("2", "3"));
	w_value(&g, 12, "y", W_FLOAT, NULL);
	w_value(&g, 12, "b", W_FLOAT, NULL);
	w_value(&g, 12, "mask", W_BOOL, NULL);
	w_value(&g, 12, "a", W_FLOAT, NULL);
	pbw m = w_model(&g, 17);
	loaded l = load(&m, "output_names", NULL, 0);
	CHECK(l.rc == SN_OK);
	if (l.rc) {
		unload(&l);
		return;
	}
	char *s = text(l.g);
	CHECK_STR(s, "sinter 1\n\n"
		     "func @main(%x: f32[2,3]) -> (f32[2,3], f32[2,3], bool[2,3], f32[2,3]) {\n"
		     "  %a = relu(%x)\n"
		     "  %2 = const bool[] true\n"
		     "  %mask = expand(%2) shape=[2,3]\n"
		     "  %y = reshape(%x) shape=[2,3]\n"
		     "  %b = reshape(%a) shape=[2,3]\n"
		     "  return %y, %b, %mask, %a\n"
		     "}\n");
	free(s);
	static const float x[6] = {-1, 2, -3, 4, 0.5f, -0.25f};
	ir_tensor out[4];
	const float *in[] = {x};
	CHECK(run(&l, in, out) == SN_OK);
	for (int k = 0; k < 6; k++) {
		CHECK(F(&out[0])[k] == x[k]);
		CHECK(F(&out[1])[k] == (x[k] > 0 ? x[k] : 0));
		CHECK(((const uint8_t *)out[2].data)[k] == 1);
	}
	CHECK_STR(out_name(&l, 3), "a");
	for (int i = 0; i < 4; i++)
		free(out[i].data);
	unload(&l);

	/* an output renamed: Relu's value is only reached through Identity;
	 * the name is kept as ONNX spells it (quoted in .sir) */
	g = (pbw){0};
	w_node(&g, "Relu", "r", L("x"), L("a"), NULL);
	w_node(&g, "Identity", "id", L("a"), L("out:0"), NULL);
	w_value(&g, 11, "x", W_FLOAT, L("2"));
	w_value(&g, 12, "out:0", W_FLOAT, NULL);
	m = w_model(&g, 17);
	l = load(&m, NULL, NULL, 0);
	CHECK(l.rc == SN_OK);
	if (l.rc == SN_OK) {
		s = text(l.g);
		CHECK_STR(s, "sinter 1\n\nfunc @main(%x: f32[2]) -> (f32[2]) {\n  %\"out:0\" = relu(%x)\n  return %\"out:0\"\n}\n");
		free(s);
	}
	unload(&l);

	/* training mode draws a random mask: refused unless the ratio is 0 */
	g = (pbw){0};
	float half = 0.5f;
	uint8_t yes = 1;
	pbw t = w_tensor_raw("ratio", W_FLOAT, NULL, 0, &half, 4);
	pbw_msg(&g, 5, &t);
	t = w_tensor_raw("train", W_BOOL, NULL, 0, &yes, 1);
	pbw_msg(&g, 5, &t);
	w_node(&g, "Dropout", "dr", L("x", "ratio", "train"), L("y"), NULL);
	w_value(&g, 11, "x", W_FLOAT, L("2"));
	w_value(&g, 12, "y", W_FLOAT, NULL);
	m = w_model(&g, 17);
	expect(&m, "m.onnx: node 'dr' (Dropout): training mode with ratio 0.5 draws a random mask; "
		   "only inference is supported", SN_EINPUT);
}

/* ---- LayerNormalization's Mean and InvStdDev, zero-size Split parts,
 * wrap Pad, bool ReduceMax/ReduceMin ---- */
static void test_more_ops(void)
{
	pbw g = {0}, at = {0};
	static const float ones[3] = {1, 1, 1};
	init_f(&g, "w", I64(3), ones, 3);
	w_attr_f(&at, "epsilon", 0.25f);
	w_node(&g, "LayerNormalization", "ln", L("x", "w"), L("y", "mean", "inv"), &at);
	init_i64(&g, "sizes", I64(2), I64(3, 0));
	w_attr_i(&at, "axis", 1);
	w_node(&g, "Split", "sp", L("x", "sizes"), L("s0", "s1"), &at);
	init_i64(&g, "pads", I64(4), I64(0, 1, 0, 2));
	w_attr_s(&at, "mode", "wrap");
	w_node(&g, "Pad", "pad", L("x", "pads"), L("wrapped"), &at);
	w_value(&g, 11, "x", W_FLOAT, L("2", "3"));
	w_value(&g, 12, "mean", W_FLOAT, NULL);
	w_value(&g, 12, "inv", W_FLOAT, NULL);
	w_value(&g, 12, "s1", W_FLOAT, NULL);
	w_value(&g, 12, "wrapped", W_FLOAT, NULL);
	pbw m = w_model(&g, 18);
	loaded l = load(&m, "more_ops", NULL, 0);
	CHECK(l.rc == SN_OK);
	if (l.rc == SN_OK) {
		/* rows 1 2 3 (mean 2, var 2/3) and 4 6 8 (mean 6, var 8/3) */
		static const float x[6] = {1, 2, 3, 4, 6, 8};
		ir_tensor out[4];
		const float *in[] = {x};
		CHECK(run(&l, in, out) == SN_OK);
		CHECK(out[0].shape.rank == 2 && out[0].shape.d[0] == 2 && out[0].shape.d[1] == 1);
		CHECK_NEAR(F(&out[0])[0], 2, 1e-6);
		CHECK_NEAR(F(&out[0])[1], 6, 1e-6);
		CHECK_NEAR(F(&out[1])[0], 1 / sqrt(2.0 / 3 + 0.25), 1e-6);
		CHECK_NEAR(F(&out[1])[1], 1 / sqrt(8.0 / 3 + 0.25), 1e-6);
		CHECK(out[2].shape.rank == 2 && out[2].shape.d[0] == 2 && out[2].shape.d[1] == 0);
		/* wrap: 1 before, 2 after along axis 1 */
		static const float wr[12] = {3, 1, 2, 3, 1, 2, 8, 4, 6, 8, 4, 6};
		CHECK(out[3].shape.d[1] == 6);
		for (int k = 0; k < 12; k++)
			CHECK(F(&out[3])[k] == wr[k]);
		for (int i = 0; i < 4; i++)
			free(out[i].data);
	}
	unload(&l);

	g = (pbw){0};
	init_i64(&g, "axes", I64(1), I64(1));
	w_attr_i(&at, "keepdims", 0);
	w_node(&g, "ReduceMax", "any", L("b", "axes"), L("any"), &at);
	w_attr_i(&at, "keepdims", 0);
	w_node(&g, "ReduceMin", "all", L("b", "axes"), L("all"), &at);
	w_value(&g, 11, "b", W_BOOL, L("3", "3"));
	w_value(&g, 12, "any", W_BOOL, NULL);
	w_value(&g, 12, "all", W_BOOL, NULL);
	m = w_model(&g, 18);
	l = load(&m, "bool_reduce", NULL, 0);
	CHECK(l.rc == SN_OK);
	if (l.rc == SN_OK) {
		static const uint8_t b[9] = {0, 1, 0, 0, 0, 0, 1, 1, 1};
		ir_tensor out[2];
		const float *in[] = {(const float *)(const void *)b};
		CHECK(run(&l, in, out) == SN_OK);
		CHECK(out[0].dtype == IR_BOOL && out[1].dtype == IR_BOOL);
		static const uint8_t any[3] = {1, 0, 1}, all[3] = {0, 0, 1};
		for (int k = 0; k < 3; k++) {
			CHECK(((const uint8_t *)out[0].data)[k] == any[k]);
			CHECK(((const uint8_t *)out[1].data)[k] == all[k]);
		}
		free(out[0].data);
		free(out[1].data);
	}
	unload(&l);
}

/* ---- pools with pads above half the kernel (an explicit pad first), and
 * 1-d convolution and pooling (run as 2-d of height 1) ---- */
static void test_pools(void)
{
	pbw g = {0}, at = {0};
	const char *ops[3] = {"MaxPool", "AveragePool", "AveragePool"};
	const char *outs[3] = {"mx", "avg", "avg_pad"};
	for (int i = 0; i < 3; i++) {
		w_attr_ints(&at, "kernel_shape", I64(3, 3));
		w_attr_ints(&at, "pads", I64(2, 2, 2, 2));
		if (i == 2)
			w_attr_i(&at, "count_include_pad", 1);
		w_node(&g, ops[i], outs[i], L("x"), L(outs[i]), &at);
	}
	w_value(&g, 11, "x", W_FLOAT, L("1", "1", "2", "2"));
	for (int i = 0; i < 3; i++)
		w_value(&g, 12, outs[i], W_FLOAT, NULL);
	pbw m = w_model(&g, 17);
	loaded l = load(&m, "wide_pads", NULL, 0);
	CHECK(l.rc == SN_OK);
	if (l.rc == SN_OK) {
		/* x[r][c] = 1 + 2r + c; output (i, j) sees rows max(0, i-2)..min(1, i) */
		static const float x[4] = {1, 2, 3, 4};
		ir_tensor out[3];
		const float *in[] = {x};
		CHECK(run(&l, in, out) == SN_OK);
		static const int lo[4] = {0, 0, 0, 1}, hi[4] = {0, 1, 1, 1};
		for (int i = 0; i < 3; i++)
			CHECK(out[i].shape.d[2] == 4 && out[i].shape.d[3] == 4);
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 4; j++) {
				double sum = 0;
				int n = 0;
				for (int r = lo[i]; r <= hi[i]; r++)
					for (int c = lo[j]; c <= hi[j]; c++)
						sum += x[r * 2 + c], n++;
				CHECK(F(&out[0])[i * 4 + j] == 1 + 2 * hi[i] + hi[j]);
				CHECK_NEAR(F(&out[1])[i * 4 + j], sum / n, 1e-6);
				CHECK_NEAR(F(&out[2])[i * 4 + j], sum / 9, 1e-6);
			}
		for (int i = 0; i < 3; i++)
			free(out[i].data);
	}
	unload(&l);

	g = (pbw){0};
	static const float w[3] = {1, 0, -1};
	init_f(&g, "w", I64(1, 1, 3), w, 3);
	w_attr_ints(&at, "pads", I64(1, 1));
	w_attr_ints(&at, "strides", I64(2));
	w_node(&g, "Conv", "conv", L("x", "w"), L("y"), &at);
	w_attr_ints(&at, "kernel_shape", I64(2));
	w_node(&g, "MaxPool", "mp", L("x"), L("p"), &at);
	w_value(&g, 11, "x", W_FLOAT, L("1", "1", "5"));
	w_value(&g, 12, "y", W_FLOAT, NULL);
	w_value(&g, 12, "p", W_FLOAT, NULL);
	m = w_model(&g, 17);
	l = load(&m, "conv1d", NULL, 0);
	CHECK(l.rc == SN_OK);
	if (l.rc == SN_OK) {
		static const float x[5] = {1, 2, 3, 4, 5};
		ir_tensor out[2];
		const float *in[] = {x};
		CHECK(run(&l, in, out) == SN_OK);
		/* windows start at -1, 1, 3: 0 - 2, 2 - 4, 4 - 0 */
		CHECK(out[0].shape.rank == 3 && out[0].shape.d[2] == 3);
		CHECK(F(&out[0])[0] == -2 && F(&out[0])[1] == -2 && F(&out[0])[2] == 4);
		CHECK(out[1].shape.rank == 3 && out[1].shape.d[2] == 4);
		for (int k = 0; k < 4; k++)
			CHECK(F(&out[1])[k] == k + 2);
		free(out[0].data);
		free(out[1].data);
	}
	unload(&l);
}

static void test_errors(void)
{
	pbw g = {0};
	w_node(&g, "Hardmax", "hm1", L("x", "i"), L("a"), NULL);
	w_node(&g, "Relu", "r", L("a"), L("b"), NULL);
	w_node(&g, "Hardmax", "hm2", L("b", "i"), L("c"), NULL);
	w_node(&g, "Compress", NULL, L("c"), L("d"), NULL);
	pbw n = {0};
	pbw_str(&n, 1, "d"), pbw_str(&n, 2, "e"), pbw_str(&n, 3, "fm"), pbw_str(&n, 4, "FusedMatMul");
	pbw_str(&n, 7, "com.microsoft");
	pbw_msg(&g, 1, &n);
	w_value(&g, 11, "x", W_FLOAT, L("2"));
	pbw m = w_model(&g, 17);
	expect(&m, "m.onnx: unsupported ops: Hardmax (2 nodes, first 'hm1'), Compress (1 node, first node #3), "
		   "com.microsoft.FusedMatMul (1 node, first 'fm'); docs/ONNX.md lists the supported ops",
	       SN_EINPUT);

	g = (pbw){0};
	w_node(&g, "Relu", "r", L("x"), L("y"), NULL);
	w_value(&g, 11, "x", W_FLOAT, L("2"));
	w_value(&g, 12, "y", W_FLOAT, NULL);
	m = w_model(&g, 10);
	expect(&m, "m.onnx: opset 10 is not supported (sinter reads opsets 11 to 22)", SN_EINPUT);

	g = (pbw){0};
	w_node(&g, "Add", "add", L("x", "nope"), L("y"), NULL);
	w_value(&g, 11, "x", W_FLOAT, L("2"));
	w_value(&g, 12, "y", W_FLOAT, NULL);
	m = w_model(&g, 17);
	expect(&m, "m.onnx: node 'add' (Add): input 'nope' is not defined before this node", SN_EINPUT);

	g = (pbw){0};
	float three[3] = {1, 2, 3};
	pbw t = w_tensor_raw("w", W_FLOAT, I64(2, 2), three, sizeof three);
	pbw_msg(&g, 5, &t);
	w_node(&g, "Add", "add", L("x", "w"), L("y"), NULL);
	w_value(&g, 11, "x", W_FLOAT, L("2", "2"));
	w_value(&g, 12, "y", W_FLOAT, NULL);
	m = w_model(&g, 17);
	expect(&m, "m.onnx: initializer 'w': raw_data holds 12 bytes, the shape needs 16", SN_EINPUT);

	g = (pbw){0};
	w_node(&g, "Add", "add", L("x", "x"), L("y"), NULL);
	w_value(&g, 11, "x", W_FLOAT, L("3", "2"));
	w_value(&g, 12, "y", W_FLOAT, NULL);
	m = w_model(&g, 17);
	sir_bind bind = {"M", 4};
	loaded l = load(&m, NULL, &bind, 1);
	CHECK(l.rc == SN_EUSAGE && !l.g);
	CHECK_STR(l.e.msg, "symbol M is bound but m.onnx has no symbol M");
	unload(&l);

	g = (pbw){0};
	w_node(&g, "MatMul", "mm", L("x", "x"), L("y"), NULL);
	w_value(&g, 11, "x", W_FLOAT, L("3", "2"));
	w_value(&g, 12, "y", W_FLOAT, NULL);
	m = w_model(&g, 17);
	expect(&m, "m.onnx: node 'mm' (MatMul): matmul: contraction dims of f32[3,2] and f32[3,2] differ (2 vs 3)", SN_EINPUT);

	g = (pbw){0};
	w_node(&g, "Reshape", "rs", L("x", "x"), L("y"), NULL);
	w_value(&g, 11, "x", W_FLOAT, L("2"));
	w_value(&g, 12, "y", W_FLOAT, NULL);
	m = w_model(&g, 17);
	expect(&m, "m.onnx: node 'rs' (Reshape): shape (input 1) must be known at import time; it depends on a graph input",
	       SN_EINPUT);

	/* Resize: a scale too large and a negative size each say what is wrong */
	for (int k = 0; k < 3; k++) {
		g = (pbw){0};
		static const float big[4] = {1, 1, 1e9f, 1}, neg[4] = {1, 1, -2, 1};
		if (k < 2) {
			init_f(&g, "sc", I64(4), k ? neg : big, 4);
			w_node(&g, "Resize", "rz", L("x", "", "sc"), L("y"), NULL);
		} else {
			init_i64(&g, "sz", I64(4), (const int64_t[]){1, 1, -4, 2}, 4);
			w_node(&g, "Resize", "rz", L("x", "", "", "sz"), L("y"), NULL);
		}
		w_value(&g, 11, "x", W_FLOAT, L("1", "1", "2", "2"));
		w_value(&g, 12, "y", W_FLOAT, NULL);
		m = w_model(&g, 17);
		static const char *const want[] = {
			"m.onnx: node 'rz' (Resize): scale 1e+09 makes axis 2 2e+09 long (at most 65536)",
			"m.onnx: node 'rz' (Resize): scales must be > 0, got -2 (entry 2)",
			"m.onnx: node 'rz' (Resize): sizes must be >= 0, got -4 (entry 2)"};
		expect(&m, want[k], SN_EINPUT);
	}

	/* a truncated file */
	g = (pbw){0};
	w_node(&g, "Relu", "r", L("x"), L("y"), NULL);
	m = w_model(&g, 17);
	m.n -= 3;
	expect(&m, "m.onnx: malformed protobuf: length 23 runs past the end (20 bytes left) at byte 20 in ModelProto",
	       SN_EINPUT);
}

/* ---- external data beside the model file ---- */
static void test_external(void)
{
	char dir[] = "/tmp/sinter_onnx_XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	char mpath[256], dpath[256];
	snprintf(mpath, sizeof mpath, "%s/m.onnx", dir);
	snprintf(dpath, sizeof dpath, "%s/m.onnx.data", dir);
	static const float wv[4] = {0.5f, -2, 4, 8};
	FILE *f = fopen(dpath, "wb");
	fwrite("PADDING!", 1, 8, f); /* the tensor starts at offset 8 */
	fwrite(wv, 4, 4, f);
	fclose(f);
	for (int bad = 0; bad < 3; bad++) { /* 1: a location outside the folder; 2: a negative offset */
		pbw g = {0}, t = {0};
		pbw_int(&t, 1, 4);
		pbw_int(&t, 2, W_FLOAT);
		pbw_str(&t, 8, "w");
		const char *kv[3][2] = {{"location", bad == 1 ? "../m.onnx.data" : "m.onnx.data"},
					{"offset", bad == 2 ? "-8" : "8"}, {"length", "16"}};
		for (int i = 0; i < 3; i++) {
			pbw en = {0};
			pbw_str(&en, 1, kv[i][0]);
			pbw_str(&en, 2, kv[i][1]);
			pbw_msg(&t, 13, &en);
		}
		pbw_int(&t, 14, 1);
		pbw_msg(&g, 5, &t);
		w_node(&g, "Mul", "mul", L("x", "w"), L("y"), NULL);
		w_value(&g, 11, "x", W_FLOAT, L("4"));
		w_value(&g, 12, "y", W_FLOAT, NULL);
		pbw m = w_model(&g, 17);
		f = fopen(mpath, "wb");
		fwrite(m.p, 1, m.n, f);
		fclose(f);
		free(m.p);
		loaded l = {0};
		l.ws = ir_ws_new();
		l.rc = onnx_load(mpath, NULL, 0, &l.g, l.ws, &l.e);
		if (bad) {
			char want[512];
			if (bad == 1)
				snprintf(want, sizeof want, "%s: initializer 'w': external data location '../m.onnx.data' is not a relative path inside the model's directory", mpath);
			else
				snprintf(want, sizeof want, "%s: initializer 'w': external data offset '-8' is negative", mpath);
			CHECK(l.rc == SN_EINPUT);
			CHECK_STR(l.e.msg, want);
		} else {
			CHECK(l.rc == SN_OK);
			static const float x[4] = {1, 2, 3, -1};
			ir_tensor out[1];
			const float *in[] = {x};
			if (l.rc == SN_OK && run(&l, in, out) == SN_OK) {
				for (int i = 0; i < 4; i++)
					CHECK(F(&out[0])[i] == x[i] * wv[i]);
				free(out[0].data);
			}
		}
		unload(&l);
	}
	unlink(mpath);
	unlink(dpath);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0)
		corpus_dir = argv[2];
	test_convnet();
	test_shape_subgraph();
	test_reshape_sym();
	test_moves();
	test_gemm();
	test_mask();
	test_norms();
	test_output_names();
	test_more_ops();
	test_pools();
	test_errors();
	test_external();
	return check_done("onnx");
}
