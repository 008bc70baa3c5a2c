/* test_cuda_gemm_tc.c: the tensor-core GEMM template (codegen/cg_gemm_tc.c)
 * on CUDA against the reference interpreter, fresh random inputs, the
 * arena poisoned with NaN bytes (gpu_check.c). Graphs are lowered with
 * fusion as a user's would be: a product followed by an epilogue cuBLASLt
 * cannot express (erf GELU, a scale, a residual then an erf GELU, tanh, a
 * cast to f32) is one template kernel; fp8 (e4m3) products take the
 * template without one. Shapes: odd M/N/K (not tile multiples, gathered
 * loads), batch 1, batched with strides, a B shared by the batch (folded
 * into M), an A shared (stride 0), B transposed (linear) and not (matmul).
 * Dtypes: bf16, f16, f32 as TF32, f8e4m3 (sm_89+). Each case runs with its
 * default config and (bf16; the others with three) every config of `cfgs` (mma.sync tiles, stages,
 * both slice depths, k groups; wgmma tiles on sm_90, fed by cp.async and by
 * TMA with a producer warpgroup, and split-K over clusters of 2-4 blocks,
 * also over shapes of its own: small M and N, deep K shared unevenly, fewer
 * k slices than blocks, batched): the plan hook checks
 * that a template kernel ran with the config asked for (a config the
 * renderer refuses for a product leaves its default, and is counted). */
#include "gpu_check.h"

#include "codegen/cg.h"

#include <stdio.h>
#include <string.h>

static int failures, refused, ran;
#define SHAPE GPU_SHAPE

static const cg_config cfgs[] = {
	{0},
	{.variant = 1, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 3},
	{.variant = 1, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 3, .split_k = 2},
	{.variant = 1, .tile_m = 32, .tile_n = 64, .warps = 2, .stages = 2},
	{.variant = 1, .tile_m = 64, .tile_n = 128, .warps = 8, .stages = 4, .split_k = 4},
	{.variant = 1, .tile_m = 128, .tile_n = 64, .warps = 4, .stages = 3, .tile_k = -1}, /* 128-byte slices */
	{.variant = 2, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4},
	{.variant = 2, .tile_m = 64, .tile_n = 256, .warps = 4, .stages = 3},
	{.variant = 2, .tile_m = 128, .tile_n = 64, .warps = 8, .stages = 6},
	{.variant = 3, .tile_m = 128, .tile_n = 128, .warps = 12, .stages = 5},
	{.variant = 3, .tile_m = 64, .tile_n = 256, .warps = 8, .stages = 4},
	{.variant = 3, .tile_m = 128, .tile_n = 64, .warps = 12, .stages = 2},
	/* split-K over a cluster of blocks (wgmma): 2, 3 and 4 blocks */
	{.variant = 2, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 6, .split_k = 2},
	{.variant = 2, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 8, .split_k = 3},
	{.variant = 2, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 4, .split_k = 4},
};

static const cg_config *asked;
static cg_config asked_cfg;

static bool pick(void *ctx, const uint8_t spec[16], const cg_config *def, cg_config *want)
{
	(void)ctx;
	(void)spec;
	(void)def;
	if (!asked)
		return false;
	*want = *asked;
	return true;
}

static int tc_kernels;
static bool cfg_taken;

static int check_plan(const ir_graph *g, cg_plan *p, sn_err *e)
{
	(void)g;
	(void)e;
	tc_kernels = 0;
	cfg_taken = false;
	for (uint32_t i = 0; i < p->nkerns; i++) {
		if (strncmp(p->kerns[i].name, "gemm_tc_", 8))
			continue;
		tc_kernels++;
		const cg_config *c = &p->kerns[i].cfg;
		cfg_taken |= asked && c->variant == asked_cfg.variant && c->tile_m == asked_cfg.tile_m &&
			     c->tile_n == asked_cfg.tile_n && c->warps == asked_cfg.warps && c->stages == asked_cfg.stages &&
			     c->split_k == asked_cfg.split_k;
	}
	return SN_OK;
}

typedef enum epi { E_NONE, E_GELU, E_SCALE_GELU, E_RES_GELU, E_TANH, E_GELU_F32 } epi;
static const char *const epi_names[] = {"", " gelu", " *0.5 gelu", " +res gelu", " tanh", " gelu f32"};

static ir_ref unary(ir_graph *g, ir_op op, ir_ref x)
{
	return gpu_op1(g, op, x, NULL);
}

/* The epilogue chain over product r. */
static ir_ref chain(ir_graph *g, ir_ref r, epi ep)
{
	if (r == IR_NONE)
		return r;
	const ir_node *n = &g->nodes[r];
	ir_dtype t = n->dtype;
	ir_shape s = n->shape;
	switch (ep) {
	case E_NONE: return r;
	case E_GELU: return unary(g, IR_OP_gelu, r);
	case E_TANH: return unary(g, IR_OP_tanh, r);
	case E_SCALE_GELU: {
		ir_shape one = {0, {0}};
		uint64_t bits = 0;
		ir_store(t, &bits, 0, 0.5);
		ir_ref c = ir_add_const(g, t, &one, &bits, &gpu_err);
		return unary(g, IR_OP_gelu, gpu_op2(g, IR_OP_mul, r, c));
	}
	case E_RES_GELU: {
		return unary(g, IR_OP_gelu, gpu_op2(g, IR_OP_add, r, gpu_in(g, "res", t, s)));
	}
	case E_GELU_F32: {
		ir_attrs a;
		ir_attrs_init(IR_OP_cast, &a);
		a.dtype = IR_F32;
		return gpu_op1(g, IR_OP_cast, unary(g, IR_OP_gelu, r), &a);
	}
	}
	return IR_NONE;
}

static void shape_str(const ir_shape *s, char *out, size_t cap)
{
	size_t n = (size_t)snprintf(out, cap, "[");
	for (int i = 0; i < s->rank && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s%lld", i ? "," : "", (long long)s->d[i]);
	if (n < cap)
		snprintf(out + n, cap - n, "]");
}

/* a @ b (linear: b is w [out, in], with bias when bias) then ep, in t,
 * with every config. */
static bool all_cfgs, only_split;

static void product(ir_dtype t, bool lin, ir_shape as, ir_shape bs, bool bias, epi ep)
{
	for (size_t ci = 0; ci < SN_COUNT(cfgs); ci++) {
		if (only_split ? !cfgs[ci].split_k || cfgs[ci].variant != 2
			       : !all_cfgs && ci != 0 && ci != 2 && ci != 6 && ci != 9 && ci != 12)
			continue; /* the default, k groups, wgmma, wgmma with TMA, split-K */
		cg_config want = cfgs[ci];
		bool is_cfg = want.variant != 0;
		if (want.tile_k < 0) /* 128-byte slices of this dtype */
			want.tile_k = t == IR_F32 ? 32 : t == IR_F8E4M3 ? 128 : 64;
		if (want.variant >= 2 && gpu_device_sm() != 90)
			continue;
		ir_graph *g = ir_graph_new();
		ir_ref a = gpu_in(g, "a", t, as), b = gpu_in(g, "b", t, bs), r;
		if (lin) {
			ir_ref bb = bias ? gpu_in(g, "bias", t, SHAPE(bs.d[0])) : IR_NONE;
			r = ir_add(g, IR_OP_linear, (ir_ref[]){a, b, bb}, bias ? 3 : 2, NULL, &gpu_err);
		} else {
			r = gpu_op2(g, IR_OP_matmul, a, b);
		}
		r = chain(g, r, ep);
		char label[320], s1[48], s2[48], cs[96] = "default";
		shape_str(&as, s1, sizeof s1);
		shape_str(&bs, s2, sizeof s2);
		if (is_cfg)
			cg_config_str(&want, cs, sizeof cs);
		snprintf(label, sizeof label, "%s %s %s %s%s%s [%s]", lin ? "linear" : "matmul",
			 t == IR_F32 ? "f32-tf32" : ir_dtype_name(t), s1, s2, bias ? " +bias" : "", epi_names[ep], cs);
		if (!gpu_built(g, r, label))
			continue;
		ir_add_output(g, r);
		asked = is_cfg ? &want : NULL;
		asked_cfg = want;
		gpu_tf32 = t == IR_F32;
		gpu_pick = pick;
		gpu_plan_hook = check_plan;
		double tol = t == IR_F32 ? 5e-3 : gpu_tol(t);
		if (!gpu_compare(g, tol, label))
			failures++;
		gpu_pick = NULL;
		gpu_plan_hook = NULL;
		gpu_tf32 = false;
		ran++;
		if (tc_kernels != 1) {
			printf("%-90s FAIL: %d template kernels in the plan, want 1\n", label, tc_kernels);
			failures++;
		} else if (is_cfg && !cfg_taken) {
			refused++; /* the renderer does not take this config for this product */
		}
	}
}

static void products(ir_dtype t)
{
	epi e = t == IR_F8E4M3 ? E_NONE : E_GELU;
	product(t, true, SHAPE(1, 7, 33), SHAPE(65, 33), true, e);                         /* odd, batch 1 */
	product(t, true, SHAPE(64, 768), SHAPE(3072, 768), true, e);                      /* GPT-2's MLP */
	product(t, true, SHAPE(2, 50, 96), SHAPE(130, 96), false, t == IR_F8E4M3 ? E_NONE : E_TANH);
	product(t, false, SHAPE(2, 3, 40, 72), SHAPE(2, 3, 72, 64), false,
		t == IR_F8E4M3 ? E_NONE : E_SCALE_GELU);                                  /* batched strides */
	product(t, false, SHAPE(37, 129), SHAPE(129, 71), false, t == IR_F8E4M3 ? E_NONE : E_GELU_F32); /* odd */
	product(t, false, SHAPE(4, 50, 64), SHAPE(64, 96), false, t == IR_F8E4M3 ? E_NONE : E_RES_GELU); /* B shared */
	product(t, false, SHAPE(16, 32), SHAPE(4, 32, 8), false, e);                      /* A shared */
	product(t, false, SHAPE(300, 512), SHAPE(512, 192), false, e);                    /* deep K */
}

/* split-K (wgmma, sm_90) over odd shapes: small M and N, deep K that the
 * blocks of a cluster share unevenly, fewer slices than blocks, batches */
static void split_products(ir_dtype t)
{
	only_split = true;
	product(t, true, SHAPE(1, 9, 3072), SHAPE(776, 3072), true, E_GELU);     /* GPT-2's proj, 9 tokens */
	product(t, false, SHAPE(33, 1000), SHAPE(1000, 136), false, E_RES_GELU); /* 16 slices over 3 */
	product(t, true, SHAPE(5, 40), SHAPE(24, 40), true, E_TANH);             /* 1 slice over 2-4 blocks */
	product(t, false, SHAPE(3, 17, 264), SHAPE(3, 264, 64), false, E_TANH);  /* batched */
	only_split = false;
}

int main(void)
{
	if (!gpu_available())
		return gpu_done();
	if (gpu_device_sm() == 90) {
		split_products(IR_BF16);
		split_products(IR_F16);
		split_products(IR_F32);
	}
	all_cfgs = true;
	products(IR_BF16);
	all_cfgs = false;
	products(IR_F16);
	products(IR_F32);
	if (gpu_device_sm() >= 89)
		products(IR_F8E4M3);
	printf("gemm_tc: %d graphs, %d configs refused for their product, %d failures\n", ran, refused, failures);
	return failures ? 1 : gpu_done();
}
