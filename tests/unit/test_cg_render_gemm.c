/* test_cg_render_gemm.c: matmul and linear (cuBLASLt descriptions) and
 * the GEMM template (cg_gemm_tc.c): its variants, configs, epilogues and
 * refusals. Every kernel is compiled with NVRTC for sm_80 and sm_90
 * (cg_render_util.h); cuBLASLt descriptions and launch shapes are checked
 * against values worked out by hand. Numerics are the GPU tests' job
 * (tests/gpu/test_cuda_gemm.c). */
#include "cg_render_util.h"

/* ---- matmul and linear ---- */
static bool gemm_is(const cg_step *st, int64_t batch, int64_t m, int64_t n, int64_t k, int64_t sa, int64_t sb,
		    int64_t sc, bool tb)
{
	const cg_gemm *q = &st->g;
	bool ok = st->kind == CG_STEP_GEMM && q->batch == batch && q->m == m && q->n == n && q->k == k &&
		  q->trans_b == tb && (batch == 1 || (q->stride_a == sa && q->stride_b == sb && q->stride_c == sc));
	if (!ok)
		fprintf(stderr, "gemm: kind %d batch %lld m %lld n %lld k %lld strides %lld %lld %lld trans %d\n",
			(int)st->kind, (long long)q->batch, (long long)q->m, (long long)q->n, (long long)q->k,
			(long long)q->stride_a, (long long)q->stride_b, (long long)q->stride_c, (int)q->trans_b);
	return ok;
}

static void test_gemm(void)
{
	cg_step st;
	fresh();
	ir_ref ab[2] = {in(IR_F32, SHAPE(2, 3, 4, 5)), in(IR_F32, SHAPE(2, 3, 5, 6))};
	ir_ref r = op(IR_OP_matmul, ab, 2, NULL);
	render(cg_render_gemm, r, &st, "batched");
	CHECK(gemm_is(&st, 6, 4, 6, 5, 20, 30, 24, false));
	CHECK(st.g.a == ab[0] && st.g.b == ab[1] && st.g.out == r && st.g.bias == IR_NONE && st.g.dtype == IR_F32);
	/* a shared b folds the batch into m: [8,16,32] @ [32,64] is 128x32 @ 32x64 */
	ir_ref fo[2] = {in(IR_F16, SHAPE(8, 16, 32)), in(IR_F16, SHAPE(32, 64))};
	render(cg_render_gemm, op(IR_OP_matmul, fo, 2, NULL), &st, "folded");
	CHECK(gemm_is(&st, 1, 128, 64, 32, 0, 0, 0, false));
	/* a shared a cannot fold: [1,16,32] @ [4,32,8] is 4 products with stride_a 0 */
	ir_ref sh[2] = {in(IR_BF16, SHAPE(1, 16, 32)), in(IR_BF16, SHAPE(4, 32, 8))};
	render(cg_render_gemm, op(IR_OP_matmul, sh, 2, NULL), &st, "shared a");
	CHECK(gemm_is(&st, 4, 16, 8, 32, 0, 256, 128, false));
	/* 1-D operands: [32] @ [4,32,10] is 4 products of 1x32 @ 32x10 */
	ir_ref v1[2] = {in(IR_BF16, SHAPE(32)), in(IR_BF16, SHAPE(4, 32, 10))};
	render(cg_render_gemm, op(IR_OP_matmul, v1, 2, NULL), &st, "vector a");
	CHECK(gemm_is(&st, 4, 1, 10, 32, 0, 320, 10, false));
	ir_ref v2[2] = {in(IR_F32, SHAPE(3, 7, 5)), in(IR_F32, SHAPE(5))}; /* [3,7] = 21x5 @ 5x1 */
	render(cg_render_gemm, op(IR_OP_matmul, v2, 2, NULL), &st, "vector b");
	CHECK(gemm_is(&st, 1, 21, 1, 5, 0, 0, 0, false));
	ir_ref v3[2] = {in(IR_F32, SHAPE(5)), in(IR_F32, SHAPE(5))};
	render(cg_render_gemm, op(IR_OP_matmul, v3, 2, NULL), &st, "dot");
	CHECK(gemm_is(&st, 1, 1, 1, 5, 0, 0, 0, false));
	/* linear: x [4,7,16] @ w[32,16]^T + b is 28x16 @ (32x16)^T */
	ir_ref li[3] = {in(IR_F16, SHAPE(4, 7, 16)), in(IR_F16, SHAPE(32, 16)), in(IR_F16, SHAPE(32))};
	render(cg_render_gemm, op(IR_OP_linear, li, 3, NULL), &st, "linear");
	CHECK(gemm_is(&st, 1, 28, 32, 16, 0, 0, 0, true) && st.g.bias == li[2] && st.g.b == li[1]);
	render(cg_render_gemm, op(IR_OP_linear, li, 2, NULL), &st, "linear no bias");
	CHECK(gemm_is(&st, 1, 28, 32, 16, 0, 0, 0, true) && st.g.bias == IR_NONE);

	/* a batch broadcast one stride cannot express: a kernel whose batch
	 * offsets are a: 20 per index of dim 0, b: 30 per index of dim 1 */
	for (size_t d = 0; d < SN_COUNT(fdt); d++) {
		ir_ref bb[2] = {in(fdt[d], SHAPE(2, 1, 4, 5)), in(fdt[d], SHAPE(1, 3, 5, 6))};
		if (render(cg_render_gemm, op(IR_OP_matmul, bb, 2, NULL), &st, "broadcast kernel")) {
			CHECK(st.kind == CG_STEP_KERNEL);
			CHECK(st.k.grid[0] == 6 && st.k.block[0] == 256 && st.k.nbufs == 3);
			CHECK(st.k.src && strstr(st.k.src, "a += q * 20L") && strstr(st.k.src, "b += q * 30L"));
			CHECK(st.k.src && strstr(st.k.src, "fmaf(") != NULL);
		}
		step_free(&st);
	}
	/* integers and fp8 take the kernel too; e4m3 on sm_89+ the GEMM
	 * template (mma.sync here: K = 33 is no 16-byte multiple) */
	static const ir_dtype kdt[] = {IR_I32, IR_I64, IR_I8, IR_U8, IR_F8E4M3, IR_F8E5M2};
	for (size_t d = 0; d < SN_COUNT(kdt); d++) {
		char label[64];
		bool tc = kdt[d] == IR_F8E4M3;
		snprintf(label, sizeof label, "matmul %s", ir_dtype_name(kdt[d]));
		ir_ref mm[2] = {in(kdt[d], SHAPE(3, 70, 33)), in(kdt[d], SHAPE(33, 65))};
		if (render(cg_render_gemm, op(IR_OP_matmul, mm, 2, NULL), &st, label)) /* 2x2 tiles x 3 */
			CHECK(st.kind == CG_STEP_KERNEL &&
			      (tc ? st.k.cfg.variant == 1 && strstr(st.k.src, "m16n8k32.row.col.f32.e4m3") != NULL
				  : st.k.grid[0] == 12));
		step_free(&st);
		ir_ref lk[3] = {in(kdt[d], SHAPE(9, 33)), in(kdt[d], SHAPE(65, 33)), in(kdt[d], SHAPE(65))};
		if (render(cg_render_gemm, op(IR_OP_linear, lk, 3, NULL), &st, label))
			CHECK(st.kind == CG_STEP_KERNEL && st.k.nbufs == 4 && (tc || st.k.grid[0] == 2));
		step_free(&st);
		if (tc) { /* sm_80: the SIMT kernel */
			cg_target t80 = {.sm = 80};
			ir_ref m8[2] = {in(kdt[d], SHAPE(3, 70, 33)), in(kdt[d], SHAPE(33, 65))};
			if (render_with(cg_render_gemm, op(IR_OP_matmul, m8, 2, NULL), &t80, NULL, NULL, &st, label))
				CHECK(st.kind == CG_STEP_KERNEL && st.k.grid[0] == 12 && strstr(st.k.src, "SIMT tiled"));
			step_free(&st);
		}
	}
}

/* ---- the GEMM template (cg_gemm_tc.c) ---- */
static int render_gemm_cfg(ir_ref r, const cg_config *want, int sm, const cg_epilogue *epi, cg_step *st, sn_err *e)
{
	memset(st, 0, sizeof *st);
	st->node = r;
	st->epi = epi;
	cg_target t = {.sm = sm};
	return cg_render_gemm(G, r, &t, want, st, e);
}

static void test_gemm_tc(void)
{
	cg_step st;
	sn_err e = {0};
	fresh();
	/* bf16 linear [64,96] x [192,96]^T with a generic epilogue: the
	 * template, the epilogue's buffer before the output */
	ir_ref li[3] = {in(IR_BF16, SHAPE(64, 96)), in(IR_BF16, SHAPE(192, 96)), in(IR_BF16, SHAPE(192))};
	ir_ref r = op(IR_OP_linear, li, 3, NULL);
	ir_ref ex = in(IR_BF16, SHAPE(64, 192));
	sn_buf fn = {0};
	cg_emit_dtype_helpers(&fn, IR_BF16);
	sn_buf_puts(&fn, "__device__ __forceinline__ float sn_epi(float v, long i, const unsigned short *__restrict__ e0)\n"
			 "{\n\treturn v * ld_bf16(e0, i);\n}\n");
	cg_epilogue epi = {.fn = fn.s, .params = (char *)", const unsigned short *__restrict__ e0", .args = (char *)", e0",
			   .nex = 1, .out = ex + 1, .dtype = IR_BF16};
	epi.ex[0] = ex;
	for (int sm = 80; sm <= 90; sm += 10) {
		cg_target t = {.sm = sm};
		if (render_with(cg_render_gemm, r, &t, NULL, &epi, &st, "gemm_tc epilogue")) {
			CHECK(st.kind == CG_STEP_KERNEL && st.k.cfg.variant == (sm == 90 ? 3 : 1));
			/* sm_90: TMA tensor maps over A (bufs[0]) and B (bufs[1]), after the buffers */
			CHECK(st.k.ntmaps == (sm == 90 ? 2u : 0u));
			if (sm == 90) {
				CHECK(st.k.tmaps[0].arg == 0 && st.k.tmaps[0].rank == 2 && st.k.tmaps[0].dims[0] == 96 &&
				      st.k.tmaps[0].dims[1] == 64 && st.k.tmaps[0].strides[1] == 192 &&
				      st.k.tmaps[0].box[0] == 64 && st.k.tmaps[0].dtype == 9 && st.k.tmaps[0].swizzle == 3);
				CHECK(st.k.tmaps[1].arg == 1 && st.k.tmaps[1].dims[0] == 96 && st.k.tmaps[1].dims[1] == 192);
				CHECK(st.k.src && strstr(st.k.src, "const __grid_constant__ sn_tmap tb)") != NULL);
				CHECK(st.k.src && strstr(st.k.src, "cp.async.bulk.tensor.2d") != NULL);
			}
			CHECK(st.k.nbufs == 5 && st.k.bufs[2] == li[2] && st.k.bufs[3] == ex && st.k.bufs[4] == ex + 1);
			CHECK(st.k.src && strstr(st.k.src, "sn_epi(v0, o, e0)") != NULL);
			CHECK(st.k.src && strstr(st.k.src, sm == 90 ? "wgmma.mma_async" : "mma.sync.aligned.m16n8k16") != NULL);
		}
		step_free(&st);
	}
	sn_buf_free(&fn);
	/* without an epilogue a bf16 product is cuBLASLt's; with a config, the template's */
	CHECK(render_gemm_cfg(r, NULL, 90, NULL, &st, &e) == SN_OK && st.kind == CG_STEP_GEMM);
	cg_config ok = {.variant = 1, .tile_m = 64, .tile_n = 64, .warps = 8, .stages = 3, .split_k = 2};
	CHECK(render_gemm_cfg(r, &ok, 90, NULL, &st, &e) == SN_OK && st.kind == CG_STEP_KERNEL &&
	      st.k.cfg.split_k == 2 && st.k.cfg.warps == 8 && st.k.block[0] == 256);
	step_free(&st);
	/* configs it cannot build are refused, naming what */
	static const struct {
		cg_config c;
		int sm;
		const char *what;
	} bad[] = {
		{{.variant = 4}, 90, "variant 4 is not 1"},
		{{.variant = 3}, 80, "wgmma needs sm_90"},
		{{.variant = 3, .tile_m = 256}, 90, "tile_m 256 is not 64 or 128"},
		{{.variant = 3, .tile_m = 128, .warps = 8}, 90, "warps 8: tile_m 128 takes 12"},
		{{.variant = 3, .stages = 9}, 90, "stages 9 is not in [2, 8]"},
		{{.variant = 2}, 80, "wgmma needs sm_90"},
		{{.variant = 3, .split_k = 2}, 90, "split_k is not built for the TMA variant"},
		{{.variant = 2, .tile_m = 128, .warps = 4}, 90, "tile_m 128 must be 64 rows per warpgroup"},
		{{.variant = 1, .tile_k = 48}, 90, "tile_k 48"},
		{{.variant = 1, .tile_m = 256, .tile_n = 256, .warps = 2}, 90, "cannot split a 256x256 tile"},
		{{.variant = 1, .stages = 9}, 90, "stages 9 is not in [2, 8]"},
		{{.block = 128}, 90, "block is not a config field of the GEMM template"},
	};
	for (size_t i = 0; i < SN_COUNT(bad); i++) {
		e = (sn_err){0};
		int rc = render_gemm_cfg(r, &bad[i].c, bad[i].sm, NULL, &st, &e);
		if (rc != SN_EUSAGE || !strstr(e.msg, bad[i].what))
			fprintf(stderr, "gemm_tc refusal %zu: wanted \"%s\", got %d \"%s\"\n", i, bad[i].what, rc, e.msg);
		CHECK(rc == SN_EUSAGE && strstr(e.msg, bad[i].what) != NULL);
		step_free(&st);
	}
	/* f32 takes the template only under TF32; f32 with a config and no TF32 is refused */
	ir_ref fl[2] = {in(IR_F32, SHAPE(8, 16)), in(IR_F32, SHAPE(16, 24))};
	ir_ref fr = op(IR_OP_matmul, fl, 2, NULL);
	e = (sn_err){0};
	CHECK(render_gemm_cfg(fr, &ok, 90, NULL, &st, &e) == SN_EUSAGE);
	step_free(&st);
}

int main(void)
{
	cg_render_start("cg_render_gemm");
	test_gemm();
	test_gemm_tc();
	return cg_render_finish("cg_render_gemm");
}
