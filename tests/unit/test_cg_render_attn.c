/* test_cg_render_attn.c: the attention renderers, flash attention's
 * variants, configs and layouts (cg_flash.c) included. Every kernel is
 * compiled with NVRTC for sm_80 and sm_90 (cg_render_util.h); launch
 * shapes are checked against values worked out by hand. Numerics are the
 * GPU tests' job. */
#include "cg_render_util.h"

/* ---- attention ---- */
static void test_attention(void)
{
	char label[96];
	cg_step st;
	for (size_t d = 0; d < SN_COUNT(fdt); d++) {
		ir_dtype t = fdt[d];
		fresh();
		/* GPT-2 small: 12 heads of 64, causal */
		ir_ref qkv[4] = {in(t, SHAPE(1, 12, 512, 64)), in(t, SHAPE(1, 12, 512, 64)), in(t, SHAPE(1, 12, 512, 64))};
		ir_attrs a = attrs(IR_OP_scaled_dot_product_attention);
		a.causal = true;
		snprintf(label, sizeof label, "attention causal %s", ir_dtype_name(t));
		ir_ref r = op(IR_OP_scaled_dot_product_attention, qkv, 3, &a);
		/* on sm_80 (sm_90 takes the wgmma kernel, test_flash_wg) */
		cg_target t80 = {.sm = 80};
		if (render_with(cg_render_attention, r, &t80, NULL, NULL, &st, label) && t == IR_F32) {
			/* the SIMT kernel: 512 rows / 8 per block = 64 blocks per head, 12 heads */
			CHECK(st.k.grid[0] == 768 && st.k.block[0] == 256 && st.k.nbufs == 4 && st.k.bufs[3] == r);
			CHECK(strstr(st.k.src, "0.125f") != NULL); /* 1 / sqrt(64) */
		} else if (st.k.src) {
			/* flash, head dim 64: 64 rows (4 warps of 16), 8 tiles x 12 heads; Q 64 rows
			 * + 3 stages of K and V 64 rows */
			CHECK(st.k.grid[0] == 96 && st.k.block[0] == 128 && st.k.nbufs == 4 && st.k.bufs[3] == r);
			CHECK(st.k.smem == (64 + 2 * 3 * 64) * 64 * 2);
			CHECK(st.k.cfg.variant == 1 && st.k.cfg.tile_m == 64 && st.k.cfg.tile_n == 64 &&
			      st.k.cfg.warps == 4 && st.k.cfg.stages == 3);
			CHECK(strstr(st.k.src, "#define SCALE_LOG2 0.18033688f") != NULL); /* log2(e) / sqrt(64) */
			CHECK(strstr(st.k.src, "mma.sync.aligned.m16n8k16") && strstr(st.k.src, "ldmatrix") &&
			      strstr(st.k.src, "cp.async.cg"));
		}
		step_free(&st);
		/* sm_90: f16 and bf16 take the wgmma kernel (variant 3 at head dim 64) */
		if (t != IR_F32) {
			cg_target t90 = {.sm = 90};
			snprintf(label, sizeof label, "attention causal %s sm_90", ir_dtype_name(t));
			if (render_with(cg_render_attention, r, &t90, NULL, NULL, &st, label))
				CHECK(st.k.cfg.variant == 3 && strstr(st.k.src, "wgmma.mma_async") != NULL);
			step_free(&st);
		}
		/* a bool mask [L, S] and a float mask [1, 1, L, S], explicit scale */
		a = attrs(IR_OP_scaled_dot_product_attention);
		a.scale = 0.3;
		ir_ref q2[4] = {in(t, SHAPE(2, 3, 100, 80)), in(t, SHAPE(2, 3, 70, 80)), in(t, SHAPE(2, 3, 70, 40)),
				in(IR_BOOL, SHAPE(100, 70))};
		snprintf(label, sizeof label, "attention bool mask %s", ir_dtype_name(t));
		r = op(IR_OP_scaled_dot_product_attention, q2, 4, &a);
		if (render(cg_render_attention, r, &st, label)) {
			CHECK(st.k.grid[0] == 13 * 6 && st.k.nbufs == 5);
			CHECK(strstr(st.k.src, "#define M_RS 70L\n#define M_CS 1L") != NULL); /* the mask's row stride S */
		}
		step_free(&st);
		q2[3] = in(t, SHAPE(1, 1, 100, 70));
		snprintf(label, sizeof label, "attention float mask %s", ir_dtype_name(t));
		build(cg_render_attention, op(IR_OP_scaled_dot_product_attention, q2, 4, &a), label);
		/* k and v shared by 4 query heads; head dim 128, long sequences */
		a = attrs(IR_OP_scaled_dot_product_attention);
		ir_ref q3[3] = {in(t, SHAPE(2, 4, 1024, 128)), in(t, SHAPE(2, 1, 1024, 128)), in(t, SHAPE(2, 1, 1024, 128))};
		snprintf(label, sizeof label, "attention broadcast %s", ir_dtype_name(t));
		r = op(IR_OP_scaled_dot_product_attention, q3, 3, &a);
		if (render(cg_render_attention, r, &st, label)) /* q: 131072 per head; k and v: 0 across heads */
			CHECK(strstr(st.k.src, "o.q += c * 131072L;\n\t\to.o += c * 131072L;") != NULL);
		step_free(&st);
		ir_ref q4[3] = {in(t, SHAPE(5, 200)), in(t, SHAPE(9, 200)), in(t, SHAPE(9, 256))}; /* chunks of 16 */
		snprintf(label, sizeof label, "attention rank 2 %s", ir_dtype_name(t));
		build(cg_render_attention, op(IR_OP_scaled_dot_product_attention, q4, 3, &a), label);
	}
	/* head dims past 256 are refused with a message */
	fresh();
	ir_ref q5[3] = {in(IR_F32, SHAPE(4, 300)), in(IR_F32, SHAPE(4, 300)), in(IR_F32, SHAPE(4, 8))};
	ir_ref r = op(IR_OP_scaled_dot_product_attention, q5, 3, NULL);
	memset(&st, 0, sizeof st);
	cg_target t90 = {.sm = 90};
	sn_err e = {0};
	CHECK(cg_render_attention(G, r, &t90, NULL, &st, &e) == SN_EINPUT);
	CHECK_STR(e.msg, "scaled_dot_product_attention: head dims 300 and 8 exceed 256, the CUDA kernel's limit");
	step_free(&st);
}

/* ---- flash attention (cg_flash.c) ---- */
/* Renders node r with config want (NULL: default) and layouts; queues the
 * kernel for NVRTC. Returns the renderer's status; st keeps the kernel. */
static int render_cfg(ir_ref r, const cg_config *want, int sm, const cg_layout *lay, const cg_layout *lay_out,
		      cg_step *st, sn_err *e, const char *label)
{
	memset(st, 0, sizeof *st);
	st->node = r;
	if (lay)
		memcpy(st->lay, lay, 3 * sizeof *lay);
	if (lay_out)
		st->lay_out = *lay_out;
	cg_target t = {.sm = sm};
	int rc = cg_render_attention(G, r, &t, want, st, e);
	if (rc == SN_OK && st->k.src) {
		dump(&st->k);
		queue(&st->k, label);
	}
	return rc;
}

static void test_flash(void)
{
	static const ir_dtype hdt[] = {IR_BF16, IR_F16};
	char label[128];
	cg_step st;
	sn_err e = {0};
	/* every variant: dtypes, head dims, masks, causal, GQA, lengths off the tile */
	for (size_t d = 0; d < SN_COUNT(hdt); d++)
		for (int64_t D = 64; D <= 128; D += 64)
			for (int m = 0; m < 5; m++) {
				ir_dtype t = hdt[d];
				fresh();
				int64_t hk = m == 4 ? 2 : 6;
				ir_ref ins[4] = {in(t, SHAPE(2, 6, 100, D)), in(t, SHAPE(2, hk, 77, D)),
						 in(t, SHAPE(2, hk, 77, D)), IR_NONE};
				ir_attrs a = attrs(IR_OP_scaled_dot_product_attention);
				a.causal = m == 1;
				if (m == 2)
					ins[3] = in(t, SHAPE(2, 1, 100, 77));
				if (m == 3)
					ins[3] = in(IR_BOOL, SHAPE(100, 77));
				ir_ref r = op(IR_OP_scaled_dot_product_attention, ins, ins[3] == IR_NONE ? 3 : 4, &a);
				snprintf(label, sizeof label, "flash %s D=%lld kind %d", ir_dtype_name(t), (long long)D, m);
				CHECK(render_cfg(r, NULL, 80, NULL, NULL, &st, &e, label) == SN_OK);
				CHECK(st.k.src && strstr(st.k.src, "mma.sync") && st.k.cfg.variant == 1);
				CHECK(st.k.nbufs == (ins[3] == IR_NONE ? 4u : 5u));
				if (m == 4 && st.k.src) /* GQA: query head h reads key/value head h / 3 */
					CHECK(strstr(st.k.src, "o.k += c / 3L * ") != NULL);
				step_free(&st);
			}
	/* configs the autotuner may ask for, each compiled */
	fresh();
	ir_ref q[3] = {in(IR_BF16, SHAPE(1, 4, 300, 128)), in(IR_BF16, SHAPE(1, 4, 300, 128)),
		       in(IR_BF16, SHAPE(1, 4, 300, 128))};
	ir_attrs ca = attrs(IR_OP_scaled_dot_product_attention);
	ca.causal = true;
	ir_ref r = op(IR_OP_scaled_dot_product_attention, q, 3, &ca);
	CHECK(cg_caps(G, r, &(cg_target){.sm = 90}) == (CG_CAN_LAYOUT_IN | CG_CAN_LAYOUT_OUT));
	/* the mma.sync kernel's (variant 1: on sm_90 variant 0 is the wgmma
	 * kernel's default) */
	static const cg_config good[] = {
		{.variant = 1, .tile_m = 128, .tile_n = 64, .warps = 4, .stages = 2},
		{.variant = 1, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 3},
		{.variant = 1, .tile_m = 32, .tile_n = 32, .warps = 2, .stages = 1},
		{.variant = 1, .tile_m = 128, .tile_n = 32, .warps = 8, .stages = 4, .block = 256},
		{.variant = 1, .warps = 2},
		{.variant = 2, .rows = 4},
	};
	for (size_t i = 0; i < SN_COUNT(good); i++) {
		snprintf(label, sizeof label, "flash config %zu", i);
		e = (sn_err){0};
		CHECK(render_cfg(r, &good[i], 90, NULL, NULL, &st, &e, label) == SN_OK);
		if (!e.code && good[i].tile_m)
			CHECK(st.k.cfg.tile_m == good[i].tile_m && st.k.cfg.tile_n == good[i].tile_n &&
			      st.k.cfg.warps == good[i].warps && st.k.cfg.stages == good[i].stages &&
			      st.k.block[0] == (unsigned)good[i].warps * 32);
		if (i == 4) /* warps alone: the default's 16 rows per warp */
			CHECK(st.k.cfg.tile_m == 32 && st.k.block[0] == 64);
		if (i == 5)
			CHECK(st.k.src && !strstr(st.k.src, "mma.sync") && st.k.block[0] == 128);
		step_free(&st);
	}
	/* configs that cannot be built are refused, naming the field */
	static const struct {
		cg_config c;
		const char *msg;
	} bad[] = {
		{{.variant = 1, .tile_m = 48, .warps = 4}, "attention (flash): tile_m=48 must be warps (4) x 16, 32, 48 or 64 rows"},
		{{.variant = 1, .tile_n = 24}, "attention (flash): tile_n=24 must be a multiple of 16 in [16, 128]"},
		{{.variant = 1, .stages = 5}, "attention (flash): stages=5 is not in [1, 4]"},
		{{.variant = 1, .warps = 4, .block = 256}, "attention (flash): block=256 must be warps * 32 = 128"},
		{{.variant = 1, .tile_k = 32}, "attention (flash): only tile_m, tile_n, warps, stages and block are configurable "
				 "(tile_k, vec, rows and split_k are not)"},
		{{.variant = 1, .tile_m = 256, .warps = 4}, "attention (flash): tile_m=256 with warps=4 and tile_n=64 needs 384 "
					      "accumulator registers per thread (at most 200)"},
		{{.variant = 1, .tile_m = 64, .tile_n = 128, .stages = 4},
		 "attention (flash): tile_m=64, tile_n=128 and stages=4 need 278528 bytes of shared memory, "
		 "more than sm_90's 232448"},
		{{.variant = 5}, "attention: variant=5 is not 0 (default), 1 (flash), 2 (simt), 3 (flash wgmma) or 4 "
				    "(flash wgmma with a producer warpgroup)"},
		{{.variant = 2, .tile_m = 64}, "attention (simt): only rows and block are configurable (tile_m, "
					       "tile_n, warps and stages are the flash kernel's, variant=1)"},
		{{.variant = 2, .rows = 33}, "attention (simt): rows=33 is not in [1, 32]"},
	};
	for (size_t i = 0; i < SN_COUNT(bad); i++) {
		e = (sn_err){0};
		CHECK(render_cfg(r, &bad[i].c, 90, NULL, NULL, &st, &e, "bad") == SN_EUSAGE);
		CHECK_STR(e.msg, bad[i].msg);
		step_free(&st);
	}
	/* head dim 128 on a large problem, per arch */
	{
		fresh();
		ir_ref big[3] = {in(IR_BF16, SHAPE(4, 16, 4096, 128)), in(IR_BF16, SHAPE(4, 16, 4096, 128)),
				 in(IR_BF16, SHAPE(4, 16, 4096, 128))};
		ir_ref rb = op(IR_OP_scaled_dot_product_attention, big, 3, &ca);
		e = (sn_err){0};
		CHECK(render_cfg(rb, NULL, 90, NULL, NULL, &st, &e, "flash 4096/128") == SN_OK);
		/* sm_90: the wgmma kernel with a producer warpgroup (variant 4), two
		 * consumer warpgroups of 64 rows taking turns (named barriers) with
		 * the producer's registers (setmaxnreg), 128 keys per step, 3
		 * stages; blocks in groups of 4 batch indices (8 MB of K/V) */
		CHECK(st.k.cfg.variant == 4 && st.k.cfg.tile_m == 128 && st.k.cfg.tile_n == 128 && st.k.cfg.warps == 8 &&
		      st.k.cfg.stages == 3 && st.k.grid[0] == 32 * 64 && strstr(st.k.src, "wgmma.mma_async"));
		CHECK(st.k.src && strstr(st.k.src, "#define PP 1\n") && strstr(st.k.src, "#define MAXNREG 1\n") &&
		      strstr(st.k.src, "#define GROUP 4L\n") && strstr(st.k.src, "bar.arrive %0, 256;") &&
		      strstr(st.k.src, "setmaxnreg.inc.sync.aligned.u32 232;"));
		step_free(&st);
		/* unmasked: the same kernel (variant 3's 192x64 before) */
		ir_attrs na = attrs(IR_OP_scaled_dot_product_attention);
		ir_ref rn = op(IR_OP_scaled_dot_product_attention, big, 3, &na);
		e = (sn_err){0};
		CHECK(render_cfg(rn, NULL, 90, NULL, NULL, &st, &e, "flash 4096/128 unmasked") == SN_OK);
		CHECK(st.k.cfg.variant == 4 && st.k.cfg.tile_n == 128 && st.k.cfg.warps == 8 && st.k.cfg.stages == 3);
		step_free(&st);
		/* 129 keys with two consumer warpgroups do not fit; 96 with three */
		CHECK(render_cfg(rn, &(cg_config){.variant = 4, .warps = 8, .tile_n = 144}, 90, NULL, NULL, &st, &e,
				 "bad") == SN_EUSAGE);
		CHECK_STR(e.msg, "attention (flash wgmma, producer warpgroup): tile_n=144 with warps=8 at head dim 128 "
				 "spills (384 threads leave 168 registers): at most 128");
		step_free(&st);
		e = (sn_err){0};
		/* sm_80: the mma.sync kernel, 128 rows of 8 warps, 64 keys per step
		 * (128 spilled), 96 KiB of shared memory */
		CHECK(render_cfg(rb, NULL, 80, NULL, NULL, &st, &e, "flash 4096/128 sm_80") == SN_OK);
		CHECK(st.k.cfg.variant == 1 && st.k.cfg.tile_m == 128 && st.k.cfg.tile_n == 64 && st.k.cfg.warps == 8 &&
		      st.k.cfg.stages == 2 && st.k.smem == 96 * 1024 && st.k.grid[0] == 32 * 64);
		step_free(&st);
		CHECK(render_cfg(rb, NULL, 86, NULL, NULL, &st, &e, "flash 4096/128 sm_86") == SN_OK);
		CHECK(st.k.cfg.tile_n == 64 && st.k.smem == 96 * 1024);
		step_free(&st);
		fresh();
		ir_ref q2[3] = {in(IR_BF16, SHAPE(1, 4, 300, 128)), in(IR_BF16, SHAPE(1, 4, 300, 128)),
				in(IR_BF16, SHAPE(1, 4, 300, 128))};
		r = op(IR_OP_scaled_dot_product_attention, q2, 3, &ca);
	}
	/* before sm_80, and for f32, the SIMT kernel; asking for flash says why not */
	e = (sn_err){0};
	CHECK(render_cfg(r, NULL, 75, NULL, NULL, &st, &e, "simt sm_75") == SN_OK);
	CHECK(st.k.src && !strstr(st.k.src, "mma.sync") && st.k.cfg.variant == 2);
	step_free(&st);
	e = (sn_err){0};
	CHECK(render_cfg(r, &(cg_config){.variant = 1}, 75, NULL, NULL, &st, &e, "bad") == SN_EUSAGE);
	CHECK_STR(e.msg, "attention: variant=1 (flash) does not fit: it needs sm_80 or newer");
	step_free(&st);

	/* fusion's layouts, GPT-2's way: q, k, v [1, 12, 512, 64] strided in
	 * the qkv matmul's output [1, 512, 2304], the output straight into
	 * [1, 512, 768]; the kernel's buffers are the roots */
	fresh();
	ir_ref qkv = in(IR_BF16, SHAPE(1, 512, 2304)), merged = in(IR_BF16, SHAPE(1, 512, 768));
	ir_ref g3[3] = {in(IR_BF16, SHAPE(1, 12, 512, 64)), in(IR_BF16, SHAPE(1, 12, 512, 64)),
			in(IR_BF16, SHAPE(1, 12, 512, 64))};
	r = op(IR_OP_scaled_dot_product_attention, g3, 3, &ca);
	cg_layout lay[3], lay_out = {.set = true, .root = merged, .offset = 0, .strides = {512 * 768, 64, 768, 1}};
	for (int i = 0; i < 3; i++)
		lay[i] = (cg_layout){.set = true, .root = qkv, .offset = i * 768, .strides = {512 * 2304, 64, 2304, 1}};
	e = (sn_err){0};
	CHECK(render_cfg(r, NULL, 80, lay, &lay_out, &st, &e, "flash strided") == SN_OK);
	if (st.k.src) {
		CHECK(st.k.nbufs == 4 && st.k.bufs[0] == qkv && st.k.bufs[1] == qkv && st.k.bufs[2] == qkv &&
		      st.k.bufs[3] == merged);
		CHECK(strstr(st.k.src, "mma.sync") != NULL);
		CHECK(strstr(st.k.src, "offs o = {0L, 768L, 1536L, 0L, 0L};") != NULL);
		CHECK(strstr(st.k.src, "o.q += c * 64L;\n\t\to.k += c * 64L;\n\t\to.v += c * 64L;\n\t\to.o += c * 64L;") != NULL);
		CHECK(strstr(st.k.src, "#define Q_RS 2304L\n#define K_RS 2304L\n#define V_RS 2304L\n#define O_RS 768L\n#define O_CS 1L") != NULL);
		CHECK(strstr(st.k.src, "#define O_PAIR 1") != NULL);
	}
	step_free(&st);
	/* a row that does not start on 16 bytes: the SIMT kernel, also strided */
	lay[1].offset = 772;
	e = (sn_err){0};
	CHECK(render_cfg(r, NULL, 90, lay, &lay_out, &st, &e, "simt strided") == SN_OK);
	if (st.k.src) {
		CHECK(!strstr(st.k.src, "mma.sync") && st.k.bufs[1] == qkv && st.k.bufs[3] == merged);
		CHECK(strstr(st.k.src, "offs o = {0L, 772L, 1536L, 0L, 0L};") != NULL);
		CHECK(strstr(st.k.src, "ld_bf16(kp, o.k + (j0 + jl) * K_RS + c * K_CS)") != NULL);
	}
	step_free(&st);
	e = (sn_err){0};
	CHECK(render_cfg(r, &(cg_config){.variant = 1}, 90, lay, &lay_out, &st, &e, "bad") == SN_EUSAGE);
	CHECK_STR(e.msg, "attention: variant=1 (flash) does not fit: q, k and v rows must be contiguous and "
			 "16-byte aligned");
	step_free(&st);
}

/* Head dims other than 64 and 128 (issue 26, item 2): 32 to 256 in steps
 * of 16 take the mma.sync flash kernel on sm_80 and sm_90 (the wgmma one
 * takes 64 and 128 only), rows padded where they are not 64k elements;
 * Swin's windows (49 tokens, a float mask broadcast over the batch) one
 * step of 64 keys, no ring; 40 and 240 (it spills) stay on the SIMT
 * kernel. */
static void test_flash_dims(void)
{
	static const struct {
		int64_t D;
		int sm, variant, tn, stages;
		const char *cfg; /* in the kernel's comment, or NULL */
	} cases[] = {
		{32, 80, 1, 64, 1, "D=32; tile_m=64 tile_n=64 warps=4 stages=1, Q in registers */"},
		{32, 90, 1, 64, 1, "D=32; tile_m=64 tile_n=64 warps=4 stages=1, Q in registers */"},
		{96, 80, 1, 64, 1, "D=96; tile_m=64 tile_n=64 warps=4 stages=1, Q in registers */"},
		{192, 80, 1, 32, 2, "D=192; tile_m=64 tile_n=32 warps=4 stages=2 */"},
		{256, 90, 1, 16, 2, "D=256; tile_m=64 tile_n=16 warps=4 stages=2 */"},
		{256, 86, 1, 16, 2, "D=256; tile_m=64 tile_n=16 warps=4 stages=2 */"},
		{80, 90, 1, 64, 1, "D=80; tile_m=64 tile_n=64 warps=4 stages=1, Q in registers */"},
		{48, 80, 1, 64, 1, "D=48; tile_m=64 tile_n=64 warps=4 stages=1, Q in registers */"},
		{40, 90, 2, 0, 0, NULL},
		{240, 80, 2, 0, 0, NULL},
	};
	char label[96];
	cg_step st;
	for (size_t i = 0; i < SN_COUNT(cases); i++) {
		sn_err e = {0};
		int64_t D = cases[i].D;
		fresh();
		ir_ref ins[4] = {in(IR_BF16, SHAPE(8, 64, 3, 49, D)), in(IR_BF16, SHAPE(8, 64, 3, 49, D)),
				 in(IR_BF16, SHAPE(8, 64, 3, 49, D)), in(IR_BF16, SHAPE(1, 64, 3, 49, 49))};
		ir_attrs a = attrs(IR_OP_scaled_dot_product_attention);
		ir_ref r = op(IR_OP_scaled_dot_product_attention, ins, 4, &a);
		snprintf(label, sizeof label, "flash swin D=%lld sm_%d", (long long)D, cases[i].sm);
		CHECK(render_cfg(r, NULL, cases[i].sm, NULL, NULL, &st, &e, label) == SN_OK);
		CHECK(st.k.src && st.k.cfg.variant == cases[i].variant);
		if (st.k.src && cases[i].cfg) {
			CHECK(strstr(st.k.src, cases[i].cfg) != NULL);
			CHECK(st.k.grid[0] == 8 * 64 * 3); /* one block per window and head */
			/* the mask: batch index 8 broadcast (stride 0), windows and heads not */
			const char *m1 = strstr(st.k.src, "o.m += c * 2401L;"), *m2 = strstr(st.k.src, "o.m += c * 7203L;");
			CHECK(m1 && m2 && !strstr(m2 + 1, "o.m +="));
			CHECK(st.k.smem == (unsigned)(64 + 2 * cases[i].stages * cases[i].tn) *
						   (unsigned)(D % 64 ? D * 2 + 16 : D * 2));
		}
		step_free(&st);
	}
	/* cross-attention 50 x 77 at head dim 256, causal: 16 keys a step */
	fresh();
	ir_ref x[3] = {in(IR_F16, SHAPE(2, 4, 50, 256)), in(IR_F16, SHAPE(2, 4, 77, 256)),
		       in(IR_F16, SHAPE(2, 4, 77, 256))};
	ir_attrs ca = attrs(IR_OP_scaled_dot_product_attention);
	ca.causal = true;
	ir_ref r = op(IR_OP_scaled_dot_product_attention, x, 3, &ca);
	sn_err e = {0};
	CHECK(render_cfg(r, NULL, 80, NULL, NULL, &st, &e, "flash cross 256") == SN_OK);
	CHECK(st.k.src && st.k.cfg.variant == 1 && strstr(st.k.src, "tile_m=64 tile_n=16 warps=4 stages=2 */"));
	step_free(&st);
	/* head dim 72: variant 1 refused, saying why */
	e = (sn_err){0};
	fresh();
	ir_ref y[3] = {in(IR_BF16, SHAPE(1, 2, 64, 72)), in(IR_BF16, SHAPE(1, 2, 64, 72)),
		       in(IR_BF16, SHAPE(1, 2, 64, 72))};
	ir_attrs ya = attrs(IR_OP_scaled_dot_product_attention);
	r = op(IR_OP_scaled_dot_product_attention, y, 3, &ya);
	CHECK(render_cfg(r, &(cg_config){.variant = 1}, 80, NULL, NULL, &st, &e, "bad") == SN_EUSAGE);
	CHECK_STR(e.msg, "attention: variant=1 (flash) does not fit: it takes head dims 32 to 256 in steps of 16 "
			 "(E = Ev) only");
	step_free(&st);
}

int main(void)
{
	cg_render_start("cg_render_attn");
	test_attention();
	test_flash();
	test_flash_dims();
	return cg_render_finish("cg_render_attn");
}
