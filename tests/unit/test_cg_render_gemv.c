/* test_cg_render_gemv.c: the skinny-product family (codegen/cg_gemv.c).
 * Off by default (a decode product and a lowered linear + GELU keep
 * cuBLASLt and the template unless SINTER_GEMV=1 or a config asks); under
 * the knob, the lowering's rule (m <= 16 and k * n >= 2^20 take it, tiny
 * products and m = 17 do not, a fused epilogue rides along), launch shapes and
 * split-K worked out by hand, refusals of configs it cannot take, and its
 * kernels over dtypes, m, layouts, bias, epilogues and configs compiled with
 * NVRTC for sm_80 and sm_90 (cg_render_util.h). Numerics are the GPU
 * test's (tests/gpu/test_cuda_gemv.c). */
#include "cg_render_util.h"

#include "codegen/cg_gemv.h"

static bool is_gemv(const cg_step *st)
{
	return st->kind == CG_STEP_KERNEL && strncmp(st->k.name, "gemv_", 5) == 0 &&
	       st->k.cfg.variant == CG_GEMV_VARIANT;
}

static ir_ref linear(ir_dtype t, int64_t m, int64_t k, int64_t n, bool bias)
{
	ir_ref li[3] = {in(t, SHAPE(m, k)), in(t, SHAPE(n, k)), bias ? in(t, SHAPE(n)) : IR_NONE};
	return op(IR_OP_linear, li, bias ? 3 : 2, NULL);
}

static ir_ref matmul(ir_dtype t, int64_t m, int64_t k, int64_t n)
{
	ir_ref mm[2] = {in(t, SHAPE(m, k)), in(t, SHAPE(k, n))};
	return op(IR_OP_matmul, mm, 2, NULL);
}

/* The lowering's choice and the default launch shapes. */
static void test_choice(void)
{
	cg_step st;
	cg_target t90 = {.sm = 90}, t80 = {.sm = 80};
	fresh();
	/* x[1,2048] @ w[8192,2048]^T bf16 on sm_90: m <= 4, the FMA kernel
	 * (not mma.sync); 64 / 1 columns, at most 8, per block (1024 blocks),
	 * 96 / ((1 + 8) x 4) = 2 units in flight; 8 units of 32 lanes x 8 k;
	 * no split (two splits of 4 units would be under 4 warps x 2) */
	ir_ref r = linear(IR_BF16, 1, 2048, 8192, true);
	render_with(cg_render_gemm, r, &t90, NULL, NULL, &st, "decode up bf16");
	CHECK(is_gemv(&st));
	CHECK(st.k.grid[0] == 1 && st.k.grid[1] == 1024 && st.k.grid[2] == 1 && st.k.block[0] == 128);
	CHECK(st.k.cfg.tile_n == 8 && st.k.cfg.stages == 2 && st.k.cfg.split_k == 1);
	CHECK(st.k.nbufs == 4 && st.k.bufs[2] == G->nodes[r].in[2]);
	CHECK(st.k.src && !strstr(st.k.src, "mma.sync") && strstr(st.k.src, "__shfl_xor_sync") &&
	      strstr(st.k.src, "unpack2(w.x, f)") && !strstr(st.k.src, "cluster"));
	step_free(&st);
	/* the down projection, k 8192 n 2048: 256 blocks, 32 units; split-K 4
	 * (1024 blocks; 32 / 4 = 8 units per split = 4 warps x 2; 8 would
	 * leave 4) */
	render_with(cg_render_gemm, linear(IR_BF16, 1, 8192, 2048, false), &t90, NULL, NULL, &st, "decode down bf16");
	CHECK(is_gemv(&st) && st.k.grid[0] == 4 && st.k.grid[1] == 256 && st.k.src &&
	      strstr(st.k.src, "__cluster_dims__(SK, 1, 1)") && strstr(st.k.src, "ld_peer("));
	step_free(&st);
	/* m = 5 in bf16: mma.sync, 16 columns per block */
	render_with(cg_render_gemm, linear(IR_BF16, 5, 2048, 8192, true), &t90, NULL, NULL, &st, "decode up bf16 m5");
	CHECK(is_gemv(&st) && st.k.cfg.tile_n == 16 && st.k.grid[1] == 512 && st.k.src &&
	      strstr(st.k.src, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
	step_free(&st);
	/* the same on sm_80: no clusters, one block per column slice */
	render_with(cg_render_gemm, r, &t80, NULL, NULL, &st, "decode up bf16 sm_80");
	CHECK(is_gemv(&st) && st.k.grid[0] == 1 && st.k.grid[1] == 1024 && st.k.cfg.split_k == 1);
	CHECK(st.k.src && !strstr(st.k.src, "cluster"));
	step_free(&st);
	/* the lm_head: 128256 columns; m = 4 the FMA kernel, 8 per block; m = 8
	 * mma.sync, 16 per block; no split */
	render_with(cg_render_gemm, linear(IR_F16, 4, 2048, 128256, false), &t90, NULL, NULL, &st, "lm_head f16");
	CHECK(is_gemv(&st) && st.k.grid[0] == 1 && st.k.grid[1] == 16032 && st.k.cfg.tile_n == 8 && st.k.src &&
	      !strstr(st.k.src, "mma.sync"));
	step_free(&st);
	render_with(cg_render_gemm, linear(IR_F16, 8, 2048, 128256, false), &t90, NULL, NULL, &st, "lm_head f16 m8");
	CHECK(is_gemv(&st) && st.k.grid[0] == 1 && st.k.grid[1] == 8016 && st.k.cfg.tile_n == 16 && st.k.src &&
	      strstr(st.k.src, "mma.sync"));
	step_free(&st);
	/* f32, m = 16: the FMA kernel, 4 columns per block, 1 unit in flight;
	 * 2048 / 4 = 512 blocks, split 4 (units: 8192 / 128 = 64; 64 / 8 = 8
	 * per split and iteration >= 4 warps x 1) */
	render_with(cg_render_gemm, linear(IR_F32, 16, 8192, 2048, true), &t90, NULL, NULL, &st, "f32 m16");
	CHECK(is_gemv(&st) && st.k.cfg.tile_n == 4 && st.k.cfg.stages == 1 && st.k.grid[0] == 4 &&
	      st.k.grid[1] == 512 && st.k.src && strstr(st.k.src, "__shfl_xor_sync"));
	step_free(&st);
	/* matmul with B k x n (bf16, m = 8): 64 columns per block (8 threads
	 * of 16 bytes), 32 blocks, split 8 (k rows: 2048 / 16 = 128 >= 32 row
	 * groups x 2 per iteration) */
	render_with(cg_render_gemm, matmul(IR_BF16, 8, 2048, 2048), &t90, NULL, NULL, &st, "matmul kn");
	CHECK(is_gemv(&st) && st.k.cfg.tile_n == 64 && st.k.grid[0] == 8 && st.k.grid[1] == 32 &&
	      st.k.block[0] == 256);
	step_free(&st);
	/* a batch folded into m: [2,3,4096] @ [4096,1024] is 6 x 4096 @ 4096 x 1024 */
	ir_ref fo[2] = {in(IR_F16, SHAPE(2, 3, 4096)), in(IR_F16, SHAPE(4096, 1024))};
	render_with(cg_render_gemm, op(IR_OP_matmul, fo, 2, NULL), &t90, NULL, NULL, &st, "folded");
	CHECK(is_gemv(&st) && st.k.src && strstr(st.k.src, "#define GM 6\n"));
	step_free(&st);

	/* not taken: tiny, m = 17, rows not 16-byte multiples, m > 8 with B
	 * k x n in bf16, batched B, one column, integers */
	render_with(cg_render_gemm, linear(IR_BF16, 1, 256, 256, true), &t90, NULL, NULL, &st, "tiny");
	CHECK(st.kind == CG_STEP_GEMM);
	render_with(cg_render_gemm, linear(IR_BF16, 17, 2048, 2048, true), &t90, NULL, NULL, &st, "m17");
	CHECK(st.kind == CG_STEP_GEMM);
	render_with(cg_render_gemm, linear(IR_BF16, 1, 2054, 2048, true), &t90, NULL, NULL, &st, "odd k");
	CHECK(st.kind == CG_STEP_GEMM);
	render_with(cg_render_gemm, matmul(IR_BF16, 9, 2048, 2048), &t90, NULL, NULL, &st, "kn m9");
	CHECK(st.kind == CG_STEP_GEMM);
	ir_ref bb[2] = {in(IR_BF16, SHAPE(4, 1, 2048)), in(IR_BF16, SHAPE(4, 2048, 2048))};
	render_with(cg_render_gemm, op(IR_OP_matmul, bb, 2, NULL), &t90, NULL, NULL, &st, "batched b");
	CHECK(st.kind == CG_STEP_GEMM);
	/* a long dot product: 2^20 weights in one column are no gemv's */
	render_with(cg_render_gemm, linear(IR_BF16, 1, 1 << 20, 1, false), &t90, NULL, NULL, &st, "one column");
	CHECK(st.kind == CG_STEP_GEMM);
	render_with(cg_render_gemm, matmul(IR_I32, 1, 2048, 2048), &t90, NULL, NULL, &st, "i32");
	CHECK(!is_gemv(&st));
	step_free(&st);
}

/* Without the knob the family is taken only by a config of its variant:
 * the decode products keep cuBLASLt, a lowered linear + GELU the
 * template. */
static void test_off(void)
{
	cg_step st;
	cg_target t90 = {.sm = 90};
	CHECK(unsetenv("SINTER_GEMV") == 0 && !cg_gemv_by_default());
	CHECK(setenv("SINTER_GEMV", "0", 1) == 0 && !cg_gemv_by_default());
	fresh();
	ir_ref r = linear(IR_BF16, 1, 2048, 8192, true);
	render_with(cg_render_gemm, r, &t90, NULL, NULL, &st, "decode up bf16, off");
	CHECK(st.kind == CG_STEP_GEMM);
	step_free(&st);
	render_with(cg_render_gemm, matmul(IR_F32, 4, 4096, 2048), &t90, NULL, NULL, &st, "matmul f32, off");
	CHECK(st.kind == CG_STEP_GEMM);
	step_free(&st);
	static const cg_config gv = {.variant = CG_GEMV_VARIANT};
	render_with(cg_render_gemm, r, &t90, &gv, NULL, &st, "decode up bf16, config");
	CHECK(is_gemv(&st));
	step_free(&st);
	/* linear + erf GELU lowers to the template's kernel, not a gemv */
	fresh();
	ir_ref x = ir_add_input(G, "x", IR_BF16, &(ir_shape){2, {1, 2048}}, &E);
	ir_ref w = ir_add_input(G, "w", IR_BF16, &(ir_shape){2, {8192, 2048}}, &E);
	ir_ref l = op(IR_OP_linear, (ir_ref[]){x, w}, 2, NULL);
	ir_ref y = op(IR_OP_gelu, &l, 1, NULL);
	CHECK(ir_add_output(G, y) == SN_OK);
	cg_target t = {.sm = 90};
	cg_plan *p = NULL;
	sn_err e = {0};
	CHECK(cg_lower(G, NULL, &t, &p, &e) == SN_OK);
	if (p) {
		CHECK(p->nkerns >= 1);
		for (uint32_t i = 0; i < p->nkerns; i++)
			CHECK(strncmp(p->kerns[i].name, "gemv_", 5) != 0);
		cg_plan_free(p);
	}
	/* the knob on */
	CHECK(setenv("SINTER_GEMV", "1", 1) == 0 && cg_gemv_by_default());
}

/* A whole lowering: linear then an erf GELU is one gemv kernel carrying
 * the GELU (fusion's epilogue), the bias its own. */
static void test_lowered(void)
{
	fresh();
	ir_ref x = ir_add_input(G, "x", IR_BF16, &(ir_shape){2, {1, 2048}}, &E);
	ir_ref w = ir_add_input(G, "w", IR_BF16, &(ir_shape){2, {8192, 2048}}, &E);
	ir_ref bi = ir_add_input(G, "b", IR_BF16, &(ir_shape){1, {8192}}, &E);
	ir_ref l = op(IR_OP_linear, (ir_ref[]){x, w, bi}, 3, NULL);
	ir_ref y = op(IR_OP_gelu, &l, 1, NULL);
	CHECK(ir_add_output(G, y) == SN_OK);
	for (int sm = 80; sm <= 90; sm += 10) {
		cg_target t = {.sm = sm};
		cg_plan *p = NULL;
		sn_err e = {0};
		int rc = cg_lower(G, NULL, &t, &p, &e);
		if (rc)
			fprintf(stderr, "lower: %s\n", e.msg);
		CHECK(rc == SN_OK);
		if (rc)
			continue;
		CHECK(p->nsteps == 1 && p->nkerns == 1);
		CHECK(p->nkerns == 1 && strncmp(p->kerns[0].name, "gemv_", 5) == 0 && p->kerns[0].src &&
		      strstr(p->kerns[0].src, "sn_epi(v, m * GN + on") && strstr(p->kerns[0].src, "v += ld_bf16(bias, on)"));
		if (p->nkerns == 1) {
			cg_kernel k = {.src = p->kerns[0].src};
			snprintf(k.name, sizeof k.name, "%s", p->kerns[0].name);
			queue(&k, sm == 80 ? "lowered gelu sm_80" : "lowered gelu sm_90");
		}
		cg_plan_free(p);
	}
}

/* Configs: the ones it takes render, the others are refused by name. */
static void test_configs(void)
{
	cg_step st;
	cg_target t90 = {.sm = 90}, t80 = {.sm = 80};
	fresh();
	ir_ref r = linear(IR_BF16, 6, 4096, 4096, true); /* mma.sync (m > 4) */
	static const cg_config ok[] = {
		{.variant = CG_GEMV_VARIANT, .tile_n = 32, .warps = 8, .stages = 2, .split_k = 4},
		{.variant = CG_GEMV_VARIANT, .tile_n = 16, .warps = 2, .stages = 8, .split_k = 1},
		{.variant = CG_GEMV_VARIANT, .tile_n = 8, .warps = 16, .stages = 1, .split_k = 8},
	};
	for (size_t i = 0; i < SN_COUNT(ok); i++) {
		render_with(cg_render_gemm, r, &t90, &ok[i], NULL, &st, "config");
		CHECK(is_gemv(&st) && st.k.cfg.tile_n == ok[i].tile_n && st.k.cfg.warps == ok[i].warps &&
		      st.k.cfg.stages == ok[i].stages && st.k.cfg.split_k == ok[i].split_k &&
		      st.k.grid[0] == (unsigned)ok[i].split_k && st.k.block[0] == 32u * (unsigned)ok[i].warps);
		step_free(&st);
	}
	static const cg_config bad[] = {
		{.variant = CG_GEMV_VARIANT, .tile_n = 12},  /* not a multiple of 8 (mma.sync) */
		{.variant = CG_GEMV_VARIANT, .warps = 17},
		{.variant = CG_GEMV_VARIANT, .stages = 9},
		{.variant = CG_GEMV_VARIANT, .split_k = 9},
		{.variant = CG_GEMV_VARIANT, .tile_m = 16},  /* not its field */
	};
	for (size_t i = 0; i < SN_COUNT(bad); i++) {
		memset(&st, 0, sizeof st);
		st.node = r;
		sn_err e = {0};
		CHECK(cg_render_gemm(G, r, &t90, &bad[i], &st, &e) == SN_EUSAGE && strstr(e.msg, "gemv"));
		step_free(&st);
	}
	/* split-K needs clusters: refused on sm_80 */
	memset(&st, 0, sizeof st);
	st.node = r;
	sn_err e = {0};
	CHECK(cg_render_gemm(G, r, &t80, &ok[0], &st, &e) == SN_EUSAGE && strstr(e.msg, "sm_90"));
	step_free(&st);
}

/* Every kernel over dtypes, m, layouts, bias and epilogues, compiled. */
static void test_compile(void)
{
	cg_step st;
	cg_target t90 = {.sm = 90}, t80 = {.sm = 80};
	static const int ms[] = {1, 9, 16, 4}; /* one row, past A's first 8 rows, all 16; the FMA kernel's last */
	char fn[300], params[80];
	cg_epilogue epi = {.fn = fn, .params = params, .args = (char *)", e0", .nex = 1, .dtype = IR_F32};
	fresh();
	for (size_t d = 0; d < SN_COUNT(fdt); d++)
		for (size_t mi = 0; mi < SN_COUNT(ms); mi++) {
			/* silu times an operand of the product's dtype, stored as f32 */
			snprintf(params, sizeof params, ", const %s *__restrict__ e0", cg_ctype(fdt[d]));
			snprintf(fn, sizeof fn, "static __device__ __forceinline__ float sn_epi(float v, long i%s)\n{\n"
				 "\treturn v / (1.f + __expf(-v)) * ld_%s(e0, i);\n}\n", params, ir_dtype_name(fdt[d]));
			int m = ms[mi];
			char label[96];
			snprintf(label, sizeof label, "linear %s m=%d", ir_dtype_name(fdt[d]), m);
			ir_ref r = linear(fdt[d], m, 2048, 1000, mi % 2 == 0);
			cg_gemv_spec gs = {.t = fdt[d], .m = m, .n = 1000, .k = 2048, .trans_b = true, .bias = mi % 2 == 0};
			render_with(cg_render_gemm, r, &t90, NULL, NULL, &st, label); /* n = 1000: a tail block */
			CHECK(is_gemv(&st));
			step_free(&st);
			if (mi == 0) { /* sm_80: no clusters (the split-K ones are sm_90's) */
				render_with(cg_render_gemm, r, &t80, NULL, NULL, &st, label);
				CHECK(is_gemv(&st) && st.k.grid[0] == 1);
				step_free(&st);
			}
			if (mi != 1 && (mi != 3 || fdt[d] == IR_F32))
				continue;
			/* with the epilogue: an f32 output and an operand (mma.sync at
			 * m = 9, the FMA kernel at m = 4 in f16/bf16) */
			epi.ex[0] = in(fdt[d], SHAPE(m, 1000));
			epi.out = r;
			memset(&st, 0, sizeof st);
			st.node = r;
			st.epi = &epi;
			sn_err e = {0};
			CHECK(cg_gemv_render(G, r, &gs, &t90, NULL, &st, &e) == SN_OK && is_gemv(&st) &&
			      st.k.nbufs == (gs.bias ? 5u : 4u) && st.k.bufs[st.k.nbufs - 2] == epi.ex[0]);
			if (st.k.src)
				queue(&st.k, label);
			step_free(&st);
			for (int mk = 1; mi == 1 && mk <= (fdt[d] == IR_F32 ? 16 : 8); mk *= fdt[d] == IR_F32 ? 16 : 8) {
				snprintf(label, sizeof label, "matmul %s m=%d", ir_dtype_name(fdt[d]), mk);
				ir_ref q = matmul(fdt[d], mk, 1024, 1032);
				render_with(cg_render_gemm, q, &t90, NULL, NULL, &st, label);
				CHECK(is_gemv(&st));
				step_free(&st);
			}
		}
	/* configs of each kernel */
	static const cg_config cfgs[] = {
		{.variant = CG_GEMV_VARIANT, .tile_n = 32, .warps = 8, .stages = 2, .split_k = 4},
		{.variant = CG_GEMV_VARIANT, .tile_n = 2, .warps = 2, .stages = 4, .split_k = 2},
	};
	for (size_t d = 0; d < SN_COUNT(fdt); d++)
		for (size_t ci = 0; ci < SN_COUNT(cfgs); ci++) {
			char label[96];
			snprintf(label, sizeof label, "config %zu %s", ci, ir_dtype_name(fdt[d]));
			cg_config c = cfgs[ci];
			if (c.tile_n > 16) /* m = 4, the FMA kernel: tile_n x m <= 64 */
				c.tile_n = 16;
			render_with(cg_render_gemm, linear(fdt[d], 4, 2048, 2048, true), &t90, &c, NULL, &st, label);
			CHECK(is_gemv(&st));
			step_free(&st);
			c = cfgs[ci];
			if (fdt[d] != IR_F32 && c.tile_n % 8) /* m = 12: mma.sync in f16/bf16 */
				c.tile_n = 8;
			if (fdt[d] == IR_F32 && c.tile_n > 4) /* tile_n x m <= 64 */
				c.tile_n = 4;
			render_with(cg_render_gemm, linear(fdt[d], 12, 2048, 2048, true), &t90, &c, NULL, &st, label);
			CHECK(is_gemv(&st));
			step_free(&st);
			c = cfgs[ci];
			c.tile_n = fdt[d] == IR_F32 ? 16 : 32;
			render_with(cg_render_gemm, matmul(fdt[d], 4, 2048, 2048), &t90, &c, NULL, &st, label);
			CHECK(is_gemv(&st));
			step_free(&st);
		}
}

int main(void)
{
	cg_render_start("cg_render_gemv");
	test_off(); /* leaves SINTER_GEMV=1 for the rule's tests below */
	test_choice();
	test_lowered();
	test_configs();
	test_compile();
	return cg_render_finish("cg_render_gemv");
}
