/* test_cg_render_conv.c: the conv2d renderers (direct, tensor-core,
 * wgmma), their configs, layouts, epilogues and refusals. Every kernel is
 * compiled with NVRTC for sm_80 and sm_90 (cg_render_util.h); launch
 * shapes are checked against values worked out by hand. Numerics are the
 * GPU tests' job (tests/gpu/test_cuda_conv.c). */
#include "cg_render_util.h"

/* ---- conv2d ---- */
typedef struct cspec {
	int64_t n, c, h, w, o, k, stride, pad, dil, groups;
	bool bias;
} cspec;

/* conv2d of x [n,c,h,w] (or NHWC) with o filters of k x k */
static ir_ref conv_node(const cspec *c, ir_dtype t, ir_layout lay)
{
	bool nhwc = lay == IR_NHWC;
	ir_ref ins[3];
	ins[0] = in(t, nhwc ? SHAPE(c->n, c->h, c->w, c->c) : SHAPE(c->n, c->c, c->h, c->w));
	int64_t cg = c->c / c->groups;
	ins[1] = in(t, nhwc ? SHAPE(c->o, c->k, c->k, cg) : SHAPE(c->o, cg, c->k, c->k));
	ins[2] = in(t, SHAPE(c->o));
	ir_attrs a = attrs(IR_OP_conv2d);
	a.layout = lay;
	a.stride = INTS(c->stride, c->stride);
	a.pad = INTS(c->pad, c->pad, c->pad, c->pad);
	a.dilation = INTS(c->dil, c->dil);
	a.groups = c->groups;
	return op(IR_OP_conv2d, ins, c->bias ? 3 : 2, &a);
}

/* A conv's render refused with SN_EUSAGE whose message names `field`. */
static void refused(ir_ref r, const cg_target *t, cg_config want, const char *field)
{
	cg_step st;
	memset(&st, 0, sizeof st);
	st.node = r;
	sn_err e = {0};
	int rc = cg_render_conv(G, r, t, &want, &st, &e);
	if (rc != SN_EUSAGE || !strstr(e.msg, field))
		fprintf(stderr, "conv config refusal: wanted SN_EUSAGE naming %s, got %d \"%s\"\n", field, rc, e.msg);
	CHECK(rc == SN_EUSAGE && strstr(e.msg, field) != NULL);
	step_free(&st);
}

/* The hand-written fusion epilogue of the tests: relu(v) + e0[i], e0 of
 * dtype t, stored as t. */
static cg_epilogue relu_add_epi(ir_dtype t, ir_ref e0, ir_ref out)
{
	sn_buf fn = {0};
	cg_emit_dtype_helpers(&fn, t);
	sn_buf_printf(&fn, "__device__ __forceinline__ float sn_epi(float v, long i, const %s *__restrict__ e0)\n"
			   "{\n\treturn fmaxf(v, 0.0f) + ld_%s(e0, i);\n}\n",
		      cg_ctype(t), ir_dtype_name(t));
	char params[128];
	snprintf(params, sizeof params, ", const %s *__restrict__ e0", cg_ctype(t));
	cg_epilogue epi = {.fn = fn.s, .params = strdup(params), .args = strdup(", e0"), .nex = 1, .out = out,
			   .dtype = t};
	epi.ex[0] = e0;
	return epi;
}

static void epi_free(cg_epilogue *epi)
{
	free(epi->fn);
	free(epi->params);
	free(epi->args);
}

static void test_conv(void)
{
	static const cspec cases[] = {
		{1, 3, 224, 224, 64, 7, 2, 3, 1, 1, false},  /* ResNet stem: K = 147 */
		{1, 64, 56, 56, 256, 1, 1, 0, 1, 1, false},  /* 1x1 expand */
		{1, 128, 28, 28, 128, 3, 1, 1, 1, 1, false}, /* 3x3 */
		{1, 256, 56, 56, 512, 1, 2, 0, 1, 1, false}, /* 1x1 stride-2 downsample */
		{2, 20, 9, 11, 36, 3, 2, 1, 2, 2, true},     /* groups, dilation, bias, odd sizes */
		{1, 16, 10, 10, 16, 3, 1, 1, 1, 16, true},   /* depthwise */
		{1, 1, 5, 5, 70, 2, 1, 0, 1, 1, true},       /* C = 1, edge tiles in N */
		{3, 128, 9, 7, 200, 3, 2, 2, 2, 4, true},    /* 4 groups of 32 -> 50, dilated, odd sizes */
		{1, 24, 13, 13, 40, 5, 1, 2, 1, 1, true},    /* C = 24 (no multiple of the 32-wide k slice), 5x5 */
		{2, 20, 11, 9, 30, 3, 1, 1, 1, 1, true},     /* C = 20: no multiple of 8 */
	};
	char label[128];
	cg_target h90 = {.sm = 90}, h80 = {.sm = 80}, t90 = {.sm = 90, .tf32 = true};
	for (size_t c = 0; c < SN_COUNT(cases); c++)
		for (size_t d = 0; d < SN_COUNT(fdt); d++)
			for (int l = 0; l < 2; l++) {
				fresh();
				ir_layout lay = l ? IR_NHWC : IR_NCHW;
				snprintf(label, sizeof label, "conv2d case %zu %s %s", c, ir_dtype_name(fdt[d]),
					 ir_layout_name(lay));
				build(cg_render_conv, conv_node(&cases[c], fdt[d], lay), label);
			}
	cg_step st;
	/* the tensor-core pipeline, every config shape the heuristics and
	 * the autotuner may ask for, f16/bf16 and tf32, sm_80 and sm_90 */
	static const cg_config tcs[] = {
		{.variant = 4, .tile_m = 128, .tile_n = 128, .tile_k = 32, .warps = 8, .stages = 4},
		{.variant = 4, .tile_m = 128, .tile_n = 64, .tile_k = 64, .warps = 4, .stages = 3},
		{.variant = 4, .tile_m = 256, .tile_n = 128, .tile_k = 32, .warps = 8, .stages = 3},
		{.variant = 4, .tile_m = 64, .tile_n = 32, .tile_k = 32, .warps = 2, .stages = 2},
		{.variant = 4, .tile_m = 32, .tile_n = 256, .tile_k = 64, .warps = 8, .stages = 2},
		{.variant = 4, .tile_m = 64, .tile_n = 64, .tile_k = 64, .warps = 8, .stages = 3, .split_k = 2},
		{.variant = 4, .tile_m = 128, .tile_n = 64, .tile_k = 64, .warps = 16, .stages = 3, .split_k = 4},
	};
	static const size_t tc_cases[] = {1, 2, 3, 7, 8};
	for (size_t ci = 0; ci < SN_COUNT(tc_cases); ci++)
		for (size_t d = 0; d < SN_COUNT(fdt); d++)
			for (size_t k = 0; k < SN_COUNT(tcs); k++) {
				fresh();
				ir_ref r = conv_node(&cases[tc_cases[ci]], fdt[d], IR_NHWC);
				cg_config want = tcs[k];
				if (fdt[d] == IR_F32)
					want.tile_k /= 2; /* the same bytes per row */
				snprintf(label, sizeof label, "conv2d tc case %zu %s %dx%dx%d w%d s%d", tc_cases[ci],
					 fdt[d] == IR_F32 ? "tf32" : ir_dtype_name(fdt[d]), want.tile_m, want.tile_n, want.tile_k,
					 want.warps, want.stages);
				if (render_with(cg_render_conv, r, fdt[d] == IR_F32 ? &t90 : k % 2 ? &h80 : &h90, &want, NULL,
						&st, label)) {
					CHECK(strstr(st.k.src, "cp.async.cg.shared.global") && strstr(st.k.src, "ldmatrix"));
					CHECK(strstr(st.k.src, fdt[d] == IR_F32 ? "m16n8k8.row.col.f32.tf32" : "m16n8k16") != NULL);
					CHECK(st.k.cfg.tile_m == want.tile_m && st.k.cfg.stages == want.stages &&
					      st.k.block[0] == 32u * (unsigned)want.warps && st.k.cfg.split_k == want.split_k);
					/* k groups: each its share of a slice's k-steps, sums added in shared memory */
					CHECK(!want.split_k == !strstr(st.k.src, "const int kg = warp / "));
					CHECK(!want.split_k == !strstr(st.k.src, "float2 o_ = *p_;"));
				}
				step_free(&st);
			}
	/* the 3x3 case by default: M = 784 pixels, too few 128x128 tiles to
	 * fill 132 SMs, so 64x64: 13 x 2 blocks of 4 warps, 3 stages of
	 * (64 + 64) rows x (128 + 16) bytes */
	fresh();
	ir_ref r = conv_node(&cases[2], IR_F16, IR_NHWC);
	const cg_config v4 = {.variant = 4};
	if (render_with(cg_render_conv, r, &h90, &v4, NULL, &st, "conv tc")) {
		CHECK(st.k.grid[0] == 13 && st.k.grid[1] == 2 && st.k.grid[2] == 1 && st.k.block[0] == 128);
		CHECK(st.k.smem == 3 * 128 * 144 && st.k.cfg.variant == 4 && st.k.cfg.tile_k == 64);
		CHECK(strstr(st.k.src, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") != NULL);
		CHECK(strstr(st.k.src, "#define KK 1152") != NULL); /* K = 128 * 3 * 3 */
		CHECK(st.k.nbufs == 3 && st.k.bufs[2] == r);
	}
	step_free(&st);
	/* sm_90's wgmma kernel's own default for it (variant 7 asked for; the
	 * default is split over clusters, below); M = 784 fills few SMs
	 * with any tile, so the most blocks: 13 x 2 tiles of 64x64 (one
	 * warpgroup of m64n64), 6 stages of 128 rows x 128 bytes in the
	 * 128-byte swizzle, 1024 bytes for its alignment */
	const cg_config v7 = {.variant = 7};
	if (render_with(cg_render_conv, r, &h90, &v7, NULL, &st, "conv wg")) {
		CHECK(st.k.cfg.variant == 7 && st.k.cfg.tile_m == 64 && st.k.cfg.tile_n == 64 && st.k.cfg.tile_k == 64);
		CHECK(st.k.grid[0] == 13 && st.k.grid[1] == 2 && st.k.block[0] == 128 && st.k.smem == 6 * 128 * 128 + 1024);
		CHECK(strstr(st.k.src, "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16") != NULL);
		CHECK(strstr(st.k.src, "#define DESC_K ((1ull << 62) | (64ull << 32) | (1ull << 16))") != NULL);
		CHECK(strstr(st.k.src, "fence.proxy.async.shared::cta") && strstr(st.k.src, "__shfl_sync(0xffffffffu, tid >> 7, 0)"));
		CHECK(!strstr(st.k.src, "mma.sync") && !strstr(st.k.src, "float2 o_ = *p_;"));
	}
	step_free(&st);
	/* k groups of warpgroups add their sums in shared memory */
	const cg_config wk = {.variant = 7, .tile_m = 64, .tile_n = 128, .warps = 8, .stages = 4, .split_k = 2};
	if (render_with(cg_render_conv, r, &h90, &wk, NULL, &st, "conv wg k groups")) {
		CHECK(st.k.cfg.split_k == 2 && st.k.cfg.tile_m == 64 && st.k.block[0] == 256 && st.k.grid[0] == 13);
		CHECK(strstr(st.k.src, "float2 o_ = *p_;") && strstr(st.k.src, "#define KPG 2"));
	}
	step_free(&st);
	/* ResNet-50's 3x3 convs at batch 32 by default (the sweep in
	 * PERF.md): layer 2 (M = 25088) 256x128 tiles of 8 warps, 3 stages
	 * (162 KB: they fit sm_80 too); layer 4 (M = 1568) 128x64 of 8 warps in two
	 * k groups */
	{
		const struct {
			cspec c;
			const cg_target *t;
			int tm, tn, warps, stages, wk;
		} dflt[] = {
			{{32, 128, 28, 28, 128, 3, 1, 1, 1, 1, true}, &h90, 256, 128, 8, 3, 0},
			{{32, 128, 28, 28, 128, 3, 1, 1, 1, 1, true}, &h80, 256, 128, 8, 3, 0},
			{{32, 256, 14, 14, 256, 3, 1, 1, 1, 1, true}, &h90, 128, 128, 8, 4, 0},
			{{32, 512, 7, 7, 512, 3, 1, 1, 1, 1, true}, &h90, 128, 64, 8, 3, 2},
			{{32, 64, 56, 56, 64, 3, 1, 1, 1, 1, true}, &h90, 128, 64, 4, 3, 0},
		};
		for (size_t i = 0; i < SN_COUNT(dflt); i++) {
			fresh();
			r = conv_node(&dflt[i].c, IR_BF16, IR_NHWC);
			snprintf(label, sizeof label, "conv tc default %zu", i);
			if (render_with(cg_render_conv, r, dflt[i].t, &v4, NULL, &st, label))
				CHECK(st.k.cfg.tile_m == dflt[i].tm && st.k.cfg.tile_n == dflt[i].tn &&
				      st.k.cfg.warps == dflt[i].warps && st.k.cfg.stages == dflt[i].stages &&
				      st.k.cfg.split_k == dflt[i].wk);
			step_free(&st);
		}
		fresh();
	}
	/* ResNet-50's convs at batch 32 on sm_90 by default (the sweeps in
	 * PERF.md, 2026-11-23 sessions 2 and 3): layer 2's 3x3 (M = 25088)
	 * 192x128 of three consumer warpgroups and a producer (131 blocks);
	 * layer 3's (M = 6272) 128x128 of two; layer 4's (M = 1568) variant 7's
	 * 64x128 of one warpgroup (100 blocks); layer 1's 64 channels 128x64
	 * of one consumer warpgroup (two blocks per SM). Variant 8's blocks
	 * are the consumers' warps and the producer's 128 threads */
	{
		const struct {
			cspec c;
			int variant, tm, tn, warps, stages;
		} dflt[] = {
			{{32, 128, 28, 28, 128, 3, 1, 1, 1, 1, true}, 8, 192, 128, 12, 3},
			{{32, 256, 14, 14, 256, 3, 1, 1, 1, 1, true}, 8, 128, 128, 8, 6},
			{{32, 512, 7, 7, 512, 3, 1, 1, 1, 1, true}, 7, 64, 128, 4, 4},
			{{32, 64, 56, 56, 64, 3, 1, 1, 1, 1, true}, 8, 128, 64, 4, 4},
		};
		for (size_t i = 0; i < SN_COUNT(dflt); i++) {
			fresh();
			r = conv_node(&dflt[i].c, IR_BF16, IR_NHWC);
			snprintf(label, sizeof label, "conv wg default %zu", i);
			if (render_with(cg_render_conv, r, &h90, NULL, NULL, &st, label)) {
				CHECK(st.k.cfg.variant == dflt[i].variant && st.k.cfg.tile_m == dflt[i].tm &&
				      st.k.cfg.tile_n == dflt[i].tn && st.k.cfg.warps == dflt[i].warps &&
				      st.k.cfg.stages == dflt[i].stages && !st.k.cfg.split_k);
				CHECK(st.k.block[0] == 32u * (unsigned)dflt[i].warps + (dflt[i].variant == 8 ? 128u : 0u));
				/* variant 8: the producer's copies complete on mbarriers */
				CHECK((dflt[i].variant == 8) == !!strstr(st.k.src, "cp.async.mbarrier.arrive.noinc"));
			}
			step_free(&st);
		}
		/* in f32 under TF32 variant 8 is refused (its producer cannot round
		 * what it does not see land): variant 7 stays the default */
		fresh();
		r = conv_node(&dflt[0].c, IR_F32, IR_NHWC);
		cg_target h90t = h90;
		h90t.tf32 = true;
		if (render_with(cg_render_conv, r, &h90t, NULL, NULL, &st, "conv wg default tf32"))
			CHECK(st.k.cfg.variant == 7);
		step_free(&st);
		refused(r, &h90t, (cg_config){.variant = 8}, "f16 and bf16");
		fresh();
	}
	/* ResNet-50 at batch 1 on sm_90 (PERF.md, 2026-11-23 session 4): where
	 * the batch-32 default fills under half the SMs, narrow tiles of one
	 * warpgroup, split over the k of clusters (variant 9) where the
	 * estimate says so; the small 1x1 products stay kernels (no cuBLASLt) */
	{
		const struct {
			cspec c;
			int variant, tm, tn, sk;
		} one[] = {
			{{1, 512, 7, 7, 512, 3, 1, 1, 1, 1, true}, 9, 64, 32, 8},	  /* layer 4's 3x3: 72 slices, 128 blocks */
			{{1, 256, 14, 14, 256, 3, 1, 1, 1, 1, true}, 9, 64, 64, 6},	  /* layer 3's: 36, 96 */
			{{1, 128, 28, 28, 128, 3, 1, 1, 1, 1, true}, 9, 64, 64, 5},	  /* layer 2's: 18, 130 */
			{{1, 64, 56, 56, 64, 3, 1, 1, 1, 1, true}, 7, 64, 32, 0},	  /* layer 1's: 9, 98 blocks of one */
			{{1, 2048, 7, 7, 512, 1, 1, 0, 1, 1, true}, 9, 64, 32, 8},	  /* layer 4's 1x1 2048-512 */
			{{1, 1024, 14, 14, 256, 1, 1, 0, 1, 1, true}, 9, 64, 32, 4},   /* layer 3's 1x1 1024-256 */
			{{1, 1024, 14, 14, 2048, 1, 2, 0, 1, 1, true}, 9, 64, 64, 4},  /* layer 4's 1x1/2 */
			{{1, 512, 7, 7, 2048, 1, 1, 0, 1, 1, true}, 7, 64, 32, 0},	  /* layer 4's 1x1 512-2048: 64 blocks */
		};
		for (size_t i = 0; i < SN_COUNT(one); i++) {
			fresh();
			r = conv_node(&one[i].c, IR_BF16, IR_NHWC);
			CHECK(!cg_conv_is_gemm(G, r, &h90));
			snprintf(label, sizeof label, "conv wg batch 1 default %zu", i);
			if (render_with(cg_render_conv, r, &h90, NULL, NULL, &st, label)) {
				CHECK(st.k.cfg.variant == one[i].variant && st.k.cfg.tile_m == one[i].tm &&
				      st.k.cfg.tile_n == one[i].tn && st.k.cfg.split_k == one[i].sk);
				/* a cluster of split_k blocks along x, summed through DSMEM */
				CHECK((one[i].sk > 1) == !!strstr(st.k.src, "__cluster_dims__"));
				CHECK((one[i].sk > 1) == !!strstr(st.k.src, "ld.shared::cluster.v4.f32"));
				int64_t mt = (one[i].c.n * (one[i].c.h / one[i].c.stride) * (one[i].c.w / one[i].c.stride) + 63) / 64;
				CHECK(st.k.grid[0] == (unsigned)(mt * (one[i].sk > 1 ? one[i].sk : 1)));
			}
			step_free(&st);
		}
		/* at batch 32 the same 1x1 is a cuBLASLt product, and f32 (no
		 * wgmma without tf32) stays one at batch 1 */
		cspec b32 = one[4].c;
		b32.n = 32;
		fresh();
		CHECK(cg_conv_is_gemm(G, conv_node(&b32, IR_BF16, IR_NHWC), &h90));
		fresh();
		CHECK(cg_conv_is_gemm(G, conv_node(&one[4].c, IR_F32, IR_NHWC), &h90));
		/* variant 9 asked for: bf16, f16 and f32 under TF32, the scalar
		 * way out (odd channels), a fusion-free partial tile; refused
		 * outside 2 to 8 blocks */
		cg_target h90t = h90;
		h90t.tf32 = true;
		const struct {
			cspec c;
			ir_dtype t;
			cg_config want;
		} ask[] = {
			{{1, 256, 14, 14, 256, 3, 1, 1, 1, 1, true},
			 IR_BF16,
			 {.variant = 9, .tile_m = 64, .tile_n = 64, .warps = 4, .stages = 4, .split_k = 4}},
			{{2, 64, 9, 9, 96, 3, 1, 1, 1, 1, false},
			 IR_F16,
			 {.variant = 9, .tile_m = 128, .tile_n = 96, .warps = 8, .stages = 3, .split_k = 3}},
			{{1, 128, 7, 9, 204, 3, 2, 1, 1, 4, true}, IR_BF16, {.variant = 9, .split_k = 2}},
			{{1, 512, 7, 7, 512, 3, 1, 1, 1, 1, true}, IR_F32, {.variant = 9}},
			{{1, 256, 14, 14, 256, 1, 1, 0, 1, 1, true},
			 IR_F32,
			 {.variant = 9, .tile_m = 64, .tile_n = 32, .warps = 4, .stages = 6, .split_k = 8}},
		};
		for (size_t i = 0; i < SN_COUNT(ask); i++) {
			fresh();
			r = conv_node(&ask[i].c, ask[i].t, IR_NHWC);
			snprintf(label, sizeof label, "conv wg split asked %zu", i);
			if (render_with(cg_render_conv, r, ask[i].t == IR_F32 ? &h90t : &h90, &ask[i].want, NULL, &st, label))
				CHECK(st.k.cfg.variant == 9 && st.k.cfg.split_k >= 2 && st.k.cfg.split_k <= 8 &&
				      (!ask[i].want.split_k || st.k.cfg.split_k == ask[i].want.split_k) &&
				      strstr(st.k.src, "__cluster_dims__") != NULL);
			step_free(&st);
		}
		fresh();
		r = conv_node(&ask[0].c, IR_BF16, IR_NHWC);
		refused(r, &h90, (cg_config){.variant = 9, .split_k = 9}, "[2, 8]");
		refused(r, &h90, (cg_config){.variant = 9, .split_k = 1}, "split_k 1");
		refused(r, &h80, (cg_config){.variant = 9}, "sm_90");
		fresh();
	}
	/* ResNet-50's 1x1 expand at batch 32 is a cuBLASLt product by
	 * default: [100352, 64] x [256, 64]^T with its bias */
	cspec big = cases[1];
	big.n = 32;
	r = conv_node(&big, IR_BF16, IR_NHWC);
	memset(&st, 0, sizeof st);
	st.node = r;
	sn_err ge = {0};
	CHECK(cg_render_conv(G, r, &h90, NULL, &st, &ge) == SN_OK && st.kind == CG_STEP_GEMM);
	CHECK(st.g.m == 100352 && st.g.n == 256 && st.g.k == 64 && st.g.trans_b && st.g.batch == 1 &&
	      st.g.a == G->nodes[r].in[0] && st.g.b == G->nodes[r].in[1] && st.g.out == r && st.g.c == IR_NONE &&
	      st.g.dtype == IR_BF16 && st.g.bias == (G->nodes[r].nin > 2 ? G->nodes[r].in[2] : IR_NONE));
	CHECK(cg_conv_is_gemm(G, r, &h90));
	step_free(&st);
	/* as the tensor-core kernel (a config asked for): 784 x 2 tiles of
	 * 128x128, 8 warps; a 1x1 conv: 4 stages of 256 rows x (64 + 16) bytes */
	if (render_with(cg_render_conv, r, &h90, &v4, NULL, &st, "conv tc big"))
		CHECK(st.k.grid[0] == 784 && st.k.grid[1] == 2 && st.k.block[0] == 256 && st.k.smem == 4 * 256 * 80);
	step_free(&st);
	/* not products: stride 2, padding, a 3x3 window, NCHW, groups; and
	 * any 1x1 conv once the target keeps convs on kernels */
	CHECK(!cg_conv_is_gemm(G, conv_node(&cases[3], IR_BF16, IR_NHWC), &h90));
	CHECK(!cg_conv_is_gemm(G, conv_node(&cases[2], IR_BF16, IR_NHWC), &h90));
	CHECK(!cg_conv_is_gemm(G, conv_node(&cases[1], IR_BF16, IR_NCHW), &h90));
	CHECK(!cg_conv_is_gemm(G, conv_node(&cases[7], IR_BF16, IR_NHWC), &h90));
	cg_target keep = {.sm = 90, .conv_kernels = true};
	CHECK(!cg_conv_is_gemm(G, r, &keep));
	/* NCHW: the register-double-buffered mma kernel, 16-byte B loads */
	r = conv_node(&cases[2], IR_BF16, IR_NCHW);
	if (render(cg_render_conv, r, &st, "conv mma bf16")) {
		CHECK(strstr(st.k.src, "m16n8k16.row.col.f32.bf16.bf16.f32") != NULL && !strstr(st.k.src, "cp.async"));
		CHECK(strstr(st.k.src, "uint4") != NULL && st.k.cfg.variant == 3);
	}
	step_free(&st);
	/* f32: SIMT, exact FMA, unless the target says tf32 (then the
	 * pipeline in NHWC); grouped: grid z = groups, tiles per group */
	r = conv_node(&cases[4], IR_F32, IR_NCHW);
	if (render(cg_render_conv, r, &st, "conv simt")) {
		/* Ho = (9 + 2 - 5) / 2 + 1 = 4, Wo = (11 + 2 - 5) / 2 + 1 = 5: M = 40 -> 1 tile; 18 channels per group -> 1 tile; 2 groups */
		CHECK(st.k.grid[0] == 1 && st.k.grid[1] == 1 && st.k.grid[2] == 2 && st.k.block[0] == 256);
		CHECK(strstr(st.k.src, "fmaf(") && !strstr(st.k.src, "mma.sync"));
		CHECK(st.k.nbufs == 4 && strstr(st.k.src, "#define KK 90") != NULL); /* 10 * 3 * 3 */
	}
	step_free(&st);
	r = conv_node(&cases[2], IR_F32, IR_NHWC);
	if (render_with(cg_render_conv, r, &t90, &v4, NULL, &st, "conv tf32"))
		CHECK(strstr(st.k.src, "cvt.rna.tf32.f32") && strstr(st.k.src, "m16n8k8") && st.k.cfg.tile_k == 32);
	step_free(&st);
	/* sm_90's default under TF32: wgmma's tf32 form, operands rounded in
	 * shared memory; M = 784 fills few SMs: split over a cluster (variant 9) */
	if (render_with(cg_render_conv, r, &t90, NULL, NULL, &st, "conv wg tf32"))
		CHECK(strstr(st.k.src, "cvt.rna.tf32.f32") && strstr(st.k.src, "k8.f32.tf32.tf32") && st.k.cfg.tile_k == 32 &&
		      st.k.cfg.variant == 9 && strstr(st.k.src, "__cluster_dims__"));
	step_free(&st);
	/* B (the weights) is rounded in the kernel unless the weight image
	 * holds it rounded: an f32 param whose every use is a conv's weight */
	for (int p = 0; p < 2; p++) {
		ir_graph *g2 = ir_graph_new();
		sn_err e2 = {0};
		ir_shape xs = {4, {2, 9, 9, 16}}, ws = {4, {32, 3, 3, 16}};
		ir_ref x2 = ir_add_input(g2, "x", IR_F32, &xs, &e2);
		ir_ref w2 = p ? ir_add_param(g2, "w", IR_F32, &ws, &e2) : ir_add_input(g2, "w", IR_F32, &ws, &e2);
		ir_attrs a2 = attrs(IR_OP_conv2d);
		a2.layout = IR_NHWC;
		a2.stride = INTS(1, 1);
		a2.pad = INTS(1, 1, 1, 1);
		a2.dilation = INTS(1, 1);
		a2.groups = 1;
		ir_ref y2 = ir_add(g2, IR_OP_conv2d, (ir_ref[]){x2, w2}, 2, &a2, &e2);
		cg_step s2 = {.node = y2};
		CHECK(y2 != IR_NONE && cg_render_conv(g2, y2, &t90, NULL, &s2, &e2) == SN_OK && s2.k.cfg.variant == 7);
		CHECK(s2.k.src && strstr(s2.k.src, "tf32_round(sa_ + (r0") &&
		      !strstr(s2.k.src, "tf32_round(sa_ + TM * 128") == (p == 1));
		free(s2.k.src);
		ir_graph_free(g2);
	}
	if (render(cg_render_conv, r, &st, "conv f32 no tf32"))
		CHECK(!strstr(st.k.src, "mma.sync"));
	step_free(&st);
	/* depthwise: by default the tiled kernel (variant 10; cg_conv_dw.c):
	 * 16 channels of bf16 are 2 vectors of 8, one slice; 10 x 10 outputs
	 * in one tile of 10 rows x 8 x 2 = 16 columns (5 rows would make more
	 * blocks, but of under a warp): 2 x 10 x 2 = 40 threads (64 launched),
	 * 12 x 18 input pixels in shared rows of 18 x 2 + 1 vectors, then 9
	 * taps x 16 floats */
	r = conv_node(&cases[5], IR_BF16, IR_NHWC);
	if (render(cg_render_conv, r, &st, "conv depthwise")) {
		CHECK(strstr(st.k.src, "depthwise, tiled") && strstr(st.k.src, "#define VEC 8") &&
		      strstr(st.k.src, "#define NV 2") && strstr(st.k.src, "#define RS 37") && st.k.cfg.variant == 10);
		CHECK(st.k.grid[0] == 1 && st.k.grid[1] == 1 && st.k.block[0] == 64 && strstr(st.k.src, "#define NA 40") &&
		      strstr(st.k.src, "#define RW 8") && st.k.smem == 12 * 37 * 16 + 9 * 16 * 4);
	}
	step_free(&st);
	/* the simple kernel (variant 5) when asked: 16-byte loads of 8
	 * channels */
	{
		cg_config want = {.variant = 5};
		if (render_with(cg_render_conv, r, &h90, &want, NULL, &st, "conv depthwise variant 5")) {
			CHECK(strstr(st.k.src, "#define VC 8") && st.k.cfg.variant == 5);
			CHECK(st.k.grid[0] == (100 * 2 + 255) / 256); /* 100 pixels x 16 / 8 */
		}
		step_free(&st);
	}
	/* variant 10's tiles when asked: 4 rows x 8 columns of 4 outputs a
	 * thread, one channel vector a block: 3 x 1 x 2 x 2 blocks of 8
	 * threads (32 launched), 6 x 10 input pixels in rows of 11 vectors;
	 * the config says what was taken; what does not fit is refused */
	{
		cg_config want = {.variant = 10, .tile_m = 4, .tile_n = 8, .tile_k = 4, .vec = 1};
		if (render_with(cg_render_conv, r, &h90, &want, NULL, &st, "conv depthwise asked")) {
			CHECK(st.k.cfg.variant == 10 && st.k.cfg.tile_m == 4 && st.k.cfg.tile_n == 8 && st.k.cfg.tile_k == 4 &&
			      st.k.cfg.vec == 1);
			CHECK(st.k.grid[0] == 3 * 2 && st.k.grid[1] == 2 && st.k.block[0] == 32 &&
			      strstr(st.k.src, "#define NA 8") && st.k.smem == 6 * 11 * 16 + 9 * 8 * 4);
		}
		step_free(&st);
		refused(r, &h90, (cg_config){.variant = 10, .tile_k = 9}, "tile_k 9");
		refused(r, &h90, (cg_config){.variant = 10, .vec = 3}, "vec 3");
		refused(r, &h90, (cg_config){.variant = 10, .warps = 4}, "warps");
		refused(r, &h90, (cg_config){.vec = 2}, "vec");
	}
	cspec dm2 = {2, 24, 10, 10, 48, 3, 2, 1, 1, 24, false};
	for (int l = 0; l < 2; l++) {
		r = conv_node(&dm2, IR_F32, l ? IR_NHWC : IR_NCHW);
		if (render(cg_render_conv, r, &st, "conv depthwise x2"))
			CHECK(strstr(st.k.src, "depthwise") && strstr(st.k.src, "#define VC 1"));
		step_free(&st);
	}
	/* integers: the direct kernel, one thread per output */
	static const ir_dtype idt[] = {IR_I32, IR_I8, IR_I64};
	for (size_t d = 0; d < SN_COUNT(idt); d++) {
		r = conv_node(&cases[4], idt[d], d ? IR_NHWC : IR_NCHW);
		if (render(cg_render_conv, r, &st, "conv int"))
			CHECK(strstr(st.k.src, "direct") != NULL && st.k.grid[0] == (2 * 36 * 4 * 5 + 255) / 256);
		step_free(&st);
	}
	/* before sm_80 there is no bf16 mma: the SIMT kernel */
	r = conv_node(&cases[1], IR_BF16, IR_NCHW);
	memset(&st, 0, sizeof st);
	cg_target old = {.sm = 75};
	sn_err e = {0};
	CHECK(cg_render_conv(G, r, &old, NULL, &st, &e) == SN_OK && st.k.src && !strstr(st.k.src, "mma.sync"));
	step_free(&st);
	/* configs that cannot be honoured are refused, naming the field */
	fresh();
	r = conv_node(&cases[2], IR_BF16, IR_NHWC);
	refused(r, &h80, (cg_config){.variant = 4, .tile_k = 48}, "tile_k");
	refused(r, &h80, (cg_config){.tile_m = 96}, "tile_m");
	refused(r, &h80, (cg_config){.tile_n = 512}, "tile_n");
	refused(r, &h80, (cg_config){.warps = 3}, "warps");
	refused(r, &h80, (cg_config){.tile_m = 32, .tile_n = 32, .warps = 16}, "warps");
	refused(r, &h80, (cg_config){.stages = 9}, "stages");
	refused(r, &h80, (cg_config){.tile_m = 256, .tile_n = 256, .tile_k = 64, .warps = 16, .stages = 8}, "stages");
	refused(r, &h80, (cg_config){.tile_m = 256, .tile_n = 128, .tile_k = 64, .warps = 8, .stages = 4}, "stages");
	refused(r, &h80, (cg_config){.block = 256}, "block");
	refused(r, &h80, (cg_config){.split_k = 3}, "split_k");
	refused(r, &h80, (cg_config){.warps = 2, .split_k = 4}, "split_k");
	refused(r, &h80, (cg_config){.tile_k = 32, .split_k = 4}, "split_k");
	refused(r, &h80, (cg_config){.tile_m = 32, .tile_n = 32, .warps = 16, .split_k = 2}, "warps");
	/* the wgmma kernel's (sm_90's default for these convs) */
	refused(r, &h90, (cg_config){.tile_k = 32}, "tile_k");
	refused(r, &h90, (cg_config){.warps = 2}, "warps");
	refused(r, &h90, (cg_config){.tile_m = 96}, "tile_m");
	refused(r, &h90, (cg_config){.tile_m = 128, .warps = 16}, "tile_m");
	refused(r, &h90, (cg_config){.tile_n = 40}, "tile_n");
	refused(r, &h90, (cg_config){.tile_n = 512}, "tile_n");
	refused(r, &h90, (cg_config){.tile_m = 256, .tile_n = 256, .warps = 8}, "accumulators");
	refused(r, &h90, (cg_config){.stages = 2}, "stages");
	refused(r, &h90, (cg_config){.tile_m = 128, .tile_n = 256, .warps = 8, .stages = 6}, "shared memory");
	refused(r, &h90, (cg_config){.warps = 8, .split_k = 3}, "split_k");
	refused(r, &h90, (cg_config){.warps = 4, .split_k = 2}, "split_k");
	refused(r, &h80, (cg_config){.variant = 7}, "sm_90");
	refused(r, &h80, (cg_config){.variant = 8}, "sm_90");
	refused(r, &h90, (cg_config){.variant = 8, .split_k = 2, .warps = 8}, "split_k");
	refused(r, &h90, (cg_config){.variant = 8, .warps = 16}, "warps");
	refused(r, &h90, (cg_config){.variant = 8, .stages = 1}, "stages");
	refused(conv_node(&cases[2], IR_BF16, IR_NCHW), &h90, (cg_config){.variant = 7}, "NHWC");
	refused(conv_node(&cases[2], IR_F32, IR_NHWC), &h90, (cg_config){.variant = 7}, "tf32");
	refused(r, &h90, (cg_config){.variant = 5}, "variant 5");
	refused(r, &h90, (cg_config){.variant = 10}, "variant 10");
	refused(r, &h90, (cg_config){.variant = 1, .tile_m = 64}, "tile_m");
	refused(conv_node(&cases[2], IR_BF16, IR_NCHW), &h90, (cg_config){.variant = 4}, "variant 4");
	refused(conv_node(&cases[9], IR_BF16, IR_NHWC), &h90, (cg_config){.variant = 4}, "multiple of 8");
	refused(conv_node(&cases[2], IR_F32, IR_NHWC), &h90, (cg_config){.variant = 4}, "tf32");
	/* every older variant still renders when asked for */
	for (int v = 1; v <= 3; v++) {
		cg_config want = {.variant = v};
		snprintf(label, sizeof label, "conv2d variant %d", v);
		if (render_with(cg_render_conv, r, &h90, &want, NULL, &st, label))
			CHECK(st.k.cfg.variant == v);
		step_free(&st);
	}
	/* the fusion epilogue, relu(v) + e0[i], on every kernel: the
	 * epilogue's buffers follow the operands, its output replaces the
	 * conv's, its function appears once; the tensor-core kernel applies
	 * it to each staged element before its 16-byte store where the
	 * channels allow (v16), else per element in the store */
	static const struct {
		size_t c;
		ir_dtype t;
		ir_layout lay;
		int variant;
		bool v16;
	} ep[] = {
		{2, IR_BF16, IR_NHWC, 4, true}, {7, IR_F16, IR_NHWC, 4, false}, {2, IR_F32, IR_NHWC, 4, true},
		{2, IR_BF16, IR_NCHW, 3, false}, {4, IR_F32, IR_NCHW, 2, false}, {6, IR_BF16, IR_NHWC, 1, false},
		{5, IR_BF16, IR_NHWC, 5, false}, {5, IR_F32, IR_NCHW, 5, false}, {5, IR_BF16, IR_NHWC, 10, false},
		{5, IR_F16, IR_NCHW, 10, false},
	};
	for (size_t i = 0; i < SN_COUNT(ep); i++) {
		fresh();
		r = conv_node(&cases[ep[i].c], ep[i].t, ep[i].lay);
		ir_ref res = in(ep[i].t, G->nodes[r].shape);
		ir_ref sum = op(IR_OP_add, (ir_ref[]){r, res}, 2, NULL);
		cg_epilogue epi = relu_add_epi(ep[i].t, res, sum);
		cg_config want = {.variant = ep[i].variant};
		snprintf(label, sizeof label, "conv2d epilogue case %zu %s %s variant %d", ep[i].c, ir_dtype_name(ep[i].t),
			 ir_layout_name(ep[i].lay), ep[i].variant);
		if (render_with(cg_render_conv, r, ep[i].t == IR_F32 ? &t90 : &h90, &want, &epi, &st, label)) {
			uint32_t nin = G->nodes[r].nin;
			CHECK(st.k.nbufs == nin + 2 && st.k.bufs[nin] == res && st.k.bufs[nin + 1] == sum);
			const char *fn = strstr(st.k.src, "float sn_epi(");
			CHECK(fn && !strstr(fn + 1, "float sn_epi(") && strstr(st.k.src, "sn_epi(v0, (long)i_, e0)") ==
									 (ep[i].variant == 4 ? strstr(st.k.src, "sn_epi(v0") : NULL));
			if (ep[i].v16)
				CHECK(strstr(st.k.src, "v[e] = sn_epi(v[e], (long)y_off(m, o) + e, e0);") &&
				      !strstr(st.k.src, ", e0));") &&
				      strstr(st.k.src, ep[i].t == IR_F32 ? "*(float4 *)(y + y_off(m, o))" : "*(uint4 *)(y + y_off(m, o))"));
			else
				CHECK(strstr(st.k.src, ", e0));") != NULL && !strstr(st.k.src, "sn_epi(v[e]"));
		}
		step_free(&st);
		epi_free(&epi);
	}
}

int main(void)
{
	cg_render_start("cg_render_conv");
	test_conv();
	return cg_render_finish("cg_render_conv");
}
