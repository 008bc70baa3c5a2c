/* test_cuda_gemm.c: matmul, linear and scaled_dot_product_attention on
 * CUDA against the reference. Matrix products cover cuBLASLt steps (plain,
 * batched, a shared operand with stride 0, a batch folded into M, numpy's
 * 1-D operands, linear with and without bias) and the generated SIMT kernel
 * (batch dims that broadcast partly, integer dtypes, fp8 on sm_80 and e5m2,
 * edge tiles); fp8 e4m3 products on sm_89+ run the GEMM template
 * (test_cuda_gemm_tc.c covers it).
 * Attention covers causal, bool and float masks, explicit scales, batch
 * broadcasting (k/v shared by query heads), head dims up to 256 and
 * sequences up to 1024. Inputs are fresh random values (gpu_check.c):
 * floats in [-1, 1), integers in [0, 4). */
#include "gpu_check.h"

#include <stdio.h>
#include <string.h>

static sn_err err;
static int build_failures;

static ir_shape shp(int rank, const int64_t *d)
{
	ir_shape s = {rank, {0}};
	for (int i = 0; i < rank; i++)
		s.d[i] = d[i];
	return s;
}
#define SHAPE(...) shp((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

static void shape_str(const ir_shape *s, char *out, size_t cap)
{
	size_t n = (size_t)snprintf(out, cap, "[");
	for (int i = 0; i < s->rank && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s%lld", i ? "," : "", (long long)s->d[i]);
	if (n < cap)
		snprintf(out + n, cap - n, "]");
}

static void run(ir_graph *g, ir_ref r, double tol, const char *label)
{
	if (r == IR_NONE || err.code) {
		printf("%-64s FAIL: builder: %s\n", label, err.msg);
		err = (sn_err){0};
		ir_graph_free(g);
		build_failures++;
		return;
	}
	ir_add_output(g, r);
	gpu_compare(g, tol, label);
}

static double tol_of(ir_dtype t)
{
	return ir_dtype_is_float(t) ? gpu_tol(t) : 0; /* integers are exact */
}

static void matmul(ir_dtype t, ir_shape as, ir_shape bs)
{
	ir_graph *g = ir_graph_new();
	ir_ref ab[2] = {ir_add_input(g, "a", t, &as, &err), ir_add_input(g, "b", t, &bs, &err)};
	char label[160], s1[64], s2[64];
	shape_str(&as, s1, sizeof s1);
	shape_str(&bs, s2, sizeof s2);
	snprintf(label, sizeof label, "matmul %s %s @ %s", ir_dtype_name(t), s1, s2);
	run(g, ir_add(g, IR_OP_matmul, ab, 2, NULL, &err), tol_of(t), label);
}

static void linear(ir_dtype t, ir_shape xs, int64_t out, bool bias)
{
	ir_graph *g = ir_graph_new();
	ir_shape ws = {2, {out, xs.d[xs.rank - 1]}}, bs = {1, {out}};
	ir_ref ins[3] = {ir_add_input(g, "x", t, &xs, &err), ir_add_input(g, "w", t, &ws, &err),
			 ir_add_input(g, "b", t, &bs, &err)};
	char label[160], s1[64];
	shape_str(&xs, s1, sizeof s1);
	snprintf(label, sizeof label, "linear %s %s -> %lld%s", ir_dtype_name(t), s1, (long long)out,
		 bias ? " + bias" : "");
	run(g, ir_add(g, IR_OP_linear, ins, bias ? 3 : 2, NULL, &err), tol_of(t), label);
}

static void products(void)
{
	static const ir_dtype fdt[] = {IR_F32, IR_F16, IR_BF16};
	for (size_t d = 0; d < SN_COUNT(fdt); d++) {
		ir_dtype t = fdt[d];
		matmul(t, SHAPE(64, 4096), SHAPE(4096, 4096));       /* the MLP sample's shape */
		matmul(t, SHAPE(37, 129), SHAPE(129, 71));           /* odd sizes */
		matmul(t, SHAPE(2, 3, 40, 50), SHAPE(2, 3, 50, 60)); /* batched */
		matmul(t, SHAPE(8, 16, 32), SHAPE(32, 64));          /* b shared: folds into M */
		matmul(t, SHAPE(16, 32), SHAPE(4, 32, 8));           /* a shared: stride 0 */
		matmul(t, SHAPE(1, 12, 64, 64), SHAPE(1, 12, 64, 128)); /* attention-like */
		matmul(t, SHAPE(32), SHAPE(4, 32, 10));              /* 1-D a */
		matmul(t, SHAPE(3, 7, 5), SHAPE(5));                 /* 1-D b */
		matmul(t, SHAPE(300), SHAPE(300));                   /* dot */
		matmul(t, SHAPE(2, 1, 40, 33), SHAPE(1, 3, 33, 70)); /* partial broadcast: kernel */
		matmul(t, SHAPE(3, 1, 2, 65, 17), SHAPE(4, 1, 17, 66)); /* kernel, edge tiles */
		linear(t, SHAPE(64, 768), 3072, true);               /* GPT-2's MLP */
		linear(t, SHAPE(2, 7, 100), 30, false);
		linear(t, SHAPE(100), 30, true);                     /* 1-D x */
	}
	static const ir_dtype kdt[] = {IR_I32, IR_I64, IR_I8, IR_F8E4M3, IR_F8E5M2};
	for (size_t d = 0; d < SN_COUNT(kdt); d++) {
		ir_dtype t = kdt[d];
		matmul(t, SHAPE(3, 70, 33), SHAPE(33, 65));
		matmul(t, SHAPE(2, 1, 5, 9), SHAPE(1, 3, 9, 4));
		linear(t, SHAPE(9, 33), 65, true);
	}
}

/* q [batch..., L, E], k [kbatch..., S, E], v [kbatch..., S, Ev]; mask:
 * 0 none, 1 bool [L, S], 2 float [1, 1, L, S]. */
static void attention(ir_dtype t, ir_shape qs, ir_shape ks, int64_t ev, bool causal, int mask, double scale)
{
	ir_graph *g = ir_graph_new();
	ir_shape vs = ks;
	vs.d[vs.rank - 1] = ev;
	int64_t l = qs.d[qs.rank - 2], s = ks.d[ks.rank - 2];
	ir_shape ms = mask == 1 ? SHAPE(l, s) : SHAPE(1, 1, l, s);
	ir_ref ins[4] = {ir_add_input(g, "q", t, &qs, &err), ir_add_input(g, "k", t, &ks, &err),
			 ir_add_input(g, "v", t, &vs, &err), IR_NONE};
	if (mask)
		ins[3] = ir_add_input(g, "mask", mask == 1 ? IR_BOOL : t, &ms, &err);
	ir_attrs a;
	ir_attrs_init(IR_OP_scaled_dot_product_attention, &a);
	a.causal = causal;
	a.scale = scale;
	char label[192], s1[64], s2[64];
	shape_str(&qs, s1, sizeof s1);
	shape_str(&ks, s2, sizeof s2);
	snprintf(label, sizeof label, "attention %s q%s k%s ev%lld%s%s", ir_dtype_name(t), s1, s2, (long long)ev,
		 causal ? " causal" : "", mask == 1 ? " bool mask" : mask == 2 ? " float mask" : "");
	run(g, ir_add(g, IR_OP_scaled_dot_product_attention, ins, mask ? 4 : 3, &a, &err), gpu_tol(t), label);
}

static void attentions(void)
{
	static const ir_dtype fdt[] = {IR_F32, IR_F16, IR_BF16};
	for (size_t d = 0; d < SN_COUNT(fdt); d++) {
		ir_dtype t = fdt[d];
		attention(t, SHAPE(1, 12, 512, 64), SHAPE(1, 12, 512, 64), 64, true, 0, 0); /* GPT-2 */
		attention(t, SHAPE(2, 3, 100, 80), SHAPE(2, 3, 70, 80), 40, false, 1, 0.3);
		attention(t, SHAPE(2, 3, 100, 80), SHAPE(2, 3, 70, 80), 40, false, 2, 0);
		attention(t, SHAPE(2, 4, 1024, 128), SHAPE(2, 1, 1024, 128), 128, false, 0, 0); /* shared k/v */
		attention(t, SHAPE(2, 4, 1024, 128), SHAPE(2, 4, 1024, 128), 128, true, 0, 0);
		attention(t, SHAPE(5, 200), SHAPE(9, 200), 256, false, 0, 0);     /* chunks of 16 keys */
		attention(t, SHAPE(3, 33, 16), SHAPE(3, 1, 16), 24, false, 0, 0); /* one key */
		attention(t, SHAPE(1, 2, 9, 32), SHAPE(1, 2, 9, 32), 32, true, 0, 0.5);
	}
}

int main(void)
{
	if (!gpu_available())
		return gpu_done();
	products();
	attentions();
	if (build_failures)
		printf("%d graphs could not be built\n", build_failures);
	return build_failures ? 1 : gpu_done();
}
