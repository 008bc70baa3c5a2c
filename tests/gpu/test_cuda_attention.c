/* test_cuda_attention.c: scaled_dot_product_attention on CUDA against the
 * reference interpreter, fresh random inputs and a NaN-poisoned arena for
 * every graph (gpu_check.c). The grid: sequence lengths 1, 7, 64, 100, 512
 * and 1000 (L = S, plus L != S), head dims 64 and 128 (the flash kernel)
 * and 80 (the flash kernel's odd k-step count), batch 1 and 3, every mask kind (none,
 * causal, additive float broadcast over heads, bool [L, S]), GQA (6 query
 * heads on 2 and on 1 key/value heads), bf16 and f16. Then the flash
 * kernels under explicit configs, and every kernel reading q, k and v as
 * strided views of one [B, L, 3*H*D] qkv buffer and writing [B, L, H*D]
 * (fusion's layouts, as GPT-2's), with the plan patched by hand so that
 * only the attention step runs. The grid runs the default variant (on
 * sm_90 the wgmma flash kernel, variant 3; else mma.sync, variant 1);
 * `--variant N` runs it with every attention kernel asked for variant N
 * (checked in the plan), e.g. 1 for the mma.sync kernel on an H100.
 * Then head dims 32 to 256 (dims(); `--dims` runs only those, and times
 * Swin-T's window attention under the flash and the SIMT kernels). */
#include "gpu_check.h"

#include "codegen/cg_render.h"
#include "frontend/sir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sn_err err;
static int build_failures;
static int forced_variant; /* 0: the default */
static int part_k, part_n = 1, nchecks; /* --part K N: only checks K, K + N, ... */

/* gpu_pick: every kernel (the graphs hold attention only) is asked for
 * forced_variant with its default tiles. */
static bool pick_variant(void *ctx, const uint8_t spec[16], const cg_config *def, cg_config *want)
{
	(void)ctx, (void)spec;
	if (def->variant == forced_variant || def->variant == 2) /* the SIMT kernel: head dims no flash kernel takes */
		return false;
	if (forced_variant >= 3 && def->variant == 1) /* head dims the wgmma kernel does not take (80) */
		return false;
	*want = (cg_config){.variant = forced_variant};
	return true;
}

/* gpu_plan_hook while a variant is forced: the pick must have taken. */
static int check_variant(const ir_graph *g, struct cg_plan *pl, sn_err *e)
{
	(void)g;
	for (uint32_t i = 0; i < pl->nkerns; i++)
		if (pl->kerns[i].cfg.variant != forced_variant && pl->kerns[i].cfg.variant != 2 &&
		    !(forced_variant >= 3 && pl->kerns[i].cfg.variant == 1))
			return sn_errf(e, SN_EINTERNAL, "kernel %s has variant %d, not the forced %d", pl->kerns[i].name,
				       (int)pl->kerns[i].cfg.variant, forced_variant);
	return SN_OK;
}

enum { M_NONE, M_CAUSAL, M_FLOAT, M_BOOL, M_KINDS };
static const char *const mask_name[] = {"none", "causal", "float mask", "bool mask"};

static ir_shape shape4(int64_t a, int64_t b, int64_t c, int64_t d)
{
	return (ir_shape){4, {a, b, c, d}};
}

/* q [B, hq, L, D], k/v [B, hkv, S, D]; float mask [B, 1, L, S], bool [L, S]. */
static ir_ref add_attention(ir_graph *g, ir_dtype t, int64_t B, int64_t hq, int64_t hkv, int64_t L, int64_t S,
			    int64_t D, int mask)
{
	ir_shape qs = shape4(B, hq, L, D), ks = shape4(B, hkv, S, D);
	char nm[4][24];
	for (int i = 0; i < 4; i++)
		snprintf(nm[i], sizeof nm[i], "%c%u", "qkvm"[i], g->nnodes);
	ir_ref in[4] = {ir_add_input(g, nm[0], t, &qs, &err), ir_add_input(g, nm[1], t, &ks, &err),
			ir_add_input(g, nm[2], t, &ks, &err), IR_NONE};
	uint32_t nin = 3;
	if (mask == M_FLOAT) {
		ir_shape ms = shape4(B, 1, L, S);
		in[nin++] = ir_add_input(g, nm[3], t, &ms, &err);
	} else if (mask == M_BOOL) {
		ir_shape ms = {2, {L, S}};
		in[nin++] = ir_add_input(g, nm[3], IR_BOOL, &ms, &err);
	}
	ir_attrs a;
	ir_attrs_init(IR_OP_scaled_dot_product_attention, &a);
	a.causal = mask == M_CAUSAL;
	return ir_add(g, IR_OP_scaled_dot_product_attention, in, nin, &a, &err);
}

static void check(ir_graph *g, ir_dtype t, const char *label)
{
	if (nchecks++ % part_n != part_k) {
		ir_graph_free(g);
		err = (sn_err){0};
		return;
	}
	if (err.code) {
		printf("%-64s FAIL: builder: %s\n", label, err.msg);
		err = (sn_err){0};
		ir_graph_free(g);
		build_failures++;
		return;
	}
	if (forced_variant) {
		gpu_pick = pick_variant;
		gpu_plan_hook = check_variant;
	}
	gpu_compare(g, gpu_tol(t), label);
	if (forced_variant) {
		gpu_pick = NULL;
		gpu_plan_hook = NULL;
	}
}

/* One graph per dtype, head dim, mask kind and batch, holding every
 * sequence length (kernels compile in parallel). */
static void grid(void)
{
	static const ir_dtype dts[] = {IR_BF16, IR_F16};
	static const int64_t seqs[] = {1, 7, 64, 100, 512, 1000}, dims[] = {64, 128, 80}, batches[] = {1, 3};
	char label[160];
	for (size_t a = 0; a < SN_COUNT(dts); a++)
		for (size_t d = 0; d < SN_COUNT(dims); d++)
			for (int m = 0; m < M_KINDS; m++)
				for (size_t b = 0; b < SN_COUNT(batches); b++) {
					ir_graph *g = ir_graph_new();
					for (size_t s = 0; s < SN_COUNT(seqs); s++)
						ir_add_output(g, add_attention(g, dts[a], batches[b], 2, 2, seqs[s], seqs[s],
									       dims[d], m));
					/* queries and keys of different lengths */
					ir_add_output(g, add_attention(g, dts[a], batches[b], 2, 2, 100, 64, dims[d], m));
					ir_add_output(g, add_attention(g, dts[a], batches[b], 2, 2, 64, 100, dims[d], m));
					snprintf(label, sizeof label, "attention %s D=%lld %s B=%lld, L=S 1..1000 and 100x64",
						 ir_dtype_name(dts[a]), (long long)dims[d], mask_name[m],
						 (long long)batches[b]);
					check(g, dts[a], label);
				}
	/* GQA: 6 query heads on 2 key/value heads (3 each), and on 1 */
	for (size_t a = 0; a < SN_COUNT(dts); a++)
		for (int m = 0; m < M_KINDS; m++) {
			ir_graph *g = ir_graph_new();
			ir_add_output(g, add_attention(g, dts[a], 3, 6, 2, 100, 100, 64, m));
			ir_add_output(g, add_attention(g, dts[a], 1, 6, 2, 512, 512, 128, m));
			ir_add_output(g, add_attention(g, dts[a], 2, 6, 1, 77, 77, 64, m));
			ir_add_output(g, add_attention(g, dts[a], 2, 6, 3, 64, 33, 80, m));
			snprintf(label, sizeof label, "attention GQA %s %s (6 on 2, 6 on 1)", ir_dtype_name(dts[a]),
				 mask_name[m]);
			check(g, dts[a], label);
		}
}

/* ---- re-rendering the attention step by hand ---- */

typedef struct patch {
	cg_config want;
	bool use_want;
	cg_layout lay[3], lay_out;
	char got[160]; /* the config the kernel was rendered with */
} patch;

static patch *cur_patch;

/* The plan's buffer for node x: a graph input's or output's (fusion
 * stores only the values it must, so buffers are not one per node). */
static int buf_of_node(const ir_graph *g, const struct cg_plan *pl, ir_ref x, uint32_t *out, sn_err *e)
{
	for (uint32_t k = 0; k < g->ninputs && k < pl->ninputs; k++)
		if (g->inputs[k] == x)
			return *out = pl->inputs[k].buf, SN_OK;
	for (uint32_t k = 0; k < g->noutputs && k < pl->noutputs; k++)
		if (g->outputs[k] == x)
			return *out = pl->outputs[k].buf, SN_OK;
	return sn_errf(e, SN_EINTERNAL, "patch: node %u is neither a graph input nor an output", x);
}

/* gpu_plan_hook: re-renders the graph's attention node with cur_patch's
 * config and layouts and makes it the plan's only step (its operands and
 * output must be graph inputs and outputs). */
static int patch_plan(const ir_graph *g, struct cg_plan *pl, sn_err *e)
{
	patch *pc = cur_patch;
	ir_ref r = IR_NONE;
	for (ir_ref i = 0; i < g->nnodes; i++)
		if (g->nodes[i].op == IR_OP_scaled_dot_product_attention)
			r = i;
	uint32_t at = 0;
	while (at < pl->nsteps && strncmp(pl->steps[at].op, "scaled_dot_product_attention", 28) /* "+N" when fused */)
		at++;
	if (r == IR_NONE || at == pl->nsteps)
		return sn_errf(e, SN_EINTERNAL, "patch: no attention step");
	cg_step st;
	memset(&st, 0, sizeof st);
	st.node = r;
	memcpy(st.lay, pc->lay, sizeof pc->lay);
	st.lay_out = pc->lay_out;
	cg_target t = {.sm = pl->sm};
	if (cg_render_attention(g, r, &t, pc->use_want ? &pc->want : NULL, &st, e) != SN_OK)
		return e->code;
	cg_config_str(&st.k.cfg, pc->got, sizeof pc->got);
	cg_kern *nk = realloc(pl->kerns, (pl->nkerns + 1) * sizeof *nk);
	if (!nk) {
		free(st.k.src);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	pl->kerns = nk;
	cg_kern *k = &pl->kerns[pl->nkerns];
	memset(k, 0, sizeof *k);
	memcpy(k->name, st.k.name, sizeof k->name);
	k->src = st.k.src;
	k->cfg = st.k.cfg;
	cg_pstep ps = pl->steps[at];
	ps.kern = pl->nkerns++;
	memcpy(ps.grid, st.k.grid, sizeof ps.grid);
	memcpy(ps.block, st.k.block, sizeof ps.block);
	ps.smem = st.k.smem;
	ps.nargs = st.k.nbufs;
	for (uint32_t i = 0; i < st.k.nbufs; i++)
		if (buf_of_node(g, pl, st.k.bufs[i], &ps.args[i], e))
			return e->code;
	pl->steps[0] = ps;
	pl->nsteps = 1;
	return SN_OK;
}

static void run_patched(ir_graph *g, ir_dtype t, patch *pc, const char *what)
{
	char label[200];
	cur_patch = pc;
	gpu_plan_hook = patch_plan;
	snprintf(label, sizeof label, "attention %s", what);
	check(g, t, label);
	gpu_plan_hook = NULL;
	if (pc->got[0])
		printf("    rendered with: %s\n", pc->got);
}

/* The flash kernel under configs other than the default. */
static void configs(void)
{
	static const cg_config cfgs[] = {
		{.variant = 1, .tile_m = 128, .tile_n = 64, .warps = 4, .stages = 2},
		{.variant = 1, .tile_m = 64, .tile_n = 128, .warps = 4, .stages = 3},
		{.variant = 1, .tile_m = 32, .tile_n = 32, .warps = 2, .stages = 1},
		{.variant = 1, .tile_m = 128, .tile_n = 128, .warps = 8, .stages = 2},
		{.variant = 1, .tile_m = 128, .tile_n = 32, .warps = 8, .stages = 4},
		{.variant = 2, .rows = 4},
		{.variant = 3, .warps = 4, .tile_n = 64, .stages = 3},
		{.variant = 3, .warps = 12, .tile_n = 64, .stages = 4},
		{.variant = 3, .warps = 8, .tile_n = 176, .stages = 3},
		{.variant = 3, .warps = 8, .tile_n = 16, .stages = 6},
		{.variant = 3, .warps = 4, .tile_n = 96, .stages = 3},
		{.variant = 4, .warps = 4, .tile_n = 128, .stages = 2},
		{.variant = 4, .warps = 8, .tile_n = 64, .stages = 4},
		{.variant = 4, .warps = 8, .tile_n = 96, .stages = 3},
		{.variant = 4, .warps = 12, .tile_n = 32, .stages = 5},
		{.variant = 3, .warps = 12, .tile_n = 64, .stages = 3}, /* the non-causal head-dim-128 default */
		{.variant = 1, .tile_m = 128, .tile_n = 64, .warps = 8, .stages = 2}, /* mma.sync's default there */
	};
	static const int64_t dims[] = {128, 64, 128, 128, 64, 128, 128, 64, 64, 128, 128, 128, 64, 128, 64, 128, 128};
	for (size_t c = 0; c < SN_COUNT(cfgs); c++)
		for (int m = 0; m < M_KINDS; m++) {
			int64_t D = dims[c];
			if (cfgs[c].variant >= 3 && gpu_device_sm() != 90)
				continue;
			ir_graph *g = ir_graph_new();
			ir_add_output(g, add_attention(g, IR_BF16, 2, 3, 3, 300, 300, D, m));
			patch pc = {.want = cfgs[c], .use_want = true};
			char what[120];
			snprintf(what, sizeof what, "config %zu bf16 D=%lld %s L=S=300", c, (long long)D, mask_name[m]);
			run_patched(g, IR_BF16, &pc, what);
		}
}

/* Variant 4 with two consumer warpgroups: their products alternate
 * through named barriers (ping-pong) and the producer copies with
 * per-thread strides; at head dim 128 with 128 keys the warpgroups
 * rebalance registers (setmaxnreg). Query and key lengths that are not
 * tile multiples and differ from each other, GQA, both dtypes, every
 * mask. */
static void pingpong(void)
{
	static const ir_dtype dts[] = {IR_BF16, IR_F16};
	static const cg_config cfgs[] = {
		{.variant = 4, .warps = 8, .tile_n = 96, .stages = 4},
		{.variant = 4, .warps = 8, .tile_n = 128, .stages = 3},
		{.variant = 4, .warps = 8, .tile_n = 64, .stages = 4},
	};
	static const int64_t dims[] = {128, 128, 64}, lens[][2] = {{333, 517}, {517, 333}};
	if (gpu_device_sm() != 90)
		return;
	/* 20 batch indices of 2,048 keys: 20 MB of K/V, so blocks go in groups
	 * of 8 batch indices (8 MB), the last group of 4 (GROUP < NB in the
	 * kernel): the default (one warpgroup here) and ping-pong */
	for (int c = 0; c < 2; c++)
		for (int m = M_NONE; m <= M_CAUSAL; m++) {
			ir_graph *g = ir_graph_new();
			ir_add_output(g, add_attention(g, IR_BF16, 2, 10, 5, 200, 2048, 128, m));
			patch pc = {.want = cfgs[1], .use_want = c == 1};
			char what[120];
			snprintf(what, sizeof what, "grouped blocks %s bf16 D=128 %s B=2 H=10 on 5 L=200 S=2048",
				 c ? "ping-pong" : "default", mask_name[m]);
			run_patched(g, IR_BF16, &pc, what);
		}
	for (size_t c = 0; c < SN_COUNT(cfgs); c++)
		for (size_t a = 0; a < SN_COUNT(dts); a++)
			for (size_t n = 0; n < SN_COUNT(lens); n++)
				for (int m = 0; m < M_KINDS; m++) {
					ir_graph *g = ir_graph_new();
					ir_add_output(g, add_attention(g, dts[a], 1, 4, 2, lens[n][0], lens[n][1], dims[c], m));
					patch pc = {.want = cfgs[c], .use_want = true};
					char what[120];
					snprintf(what, sizeof what, "ping-pong config %zu %s D=%lld %s L=%lld S=%lld GQA 4 on 2",
						 c, ir_dtype_name(dts[a]), (long long)dims[c], mask_name[m],
						 (long long)lens[n][0], (long long)lens[n][1]);
					run_patched(g, dts[a], &pc, what);
				}
}

/* GPT-2's attention as fusion lays it out: q, k, v strided in the qkv
 * matmul's output [B, L, 3*H*D], the output written straight into
 * [B, L, H*D]. The graph spells the split, reshapes and transposes out
 * for the reference; on the GPU only the attention step runs, reading
 * qkv (an input) and writing the final reshape's buffer. */
static void strided(void)
{
	static const ir_dtype dts[] = {IR_BF16, IR_F16};
	const int64_t B = 2, L = 200, H = 4;
	for (size_t a = 0; a < SN_COUNT(dts); a++)
		for (int D = 64; D <= 128; D += 64)
			for (int variant = 1; variant <= 4; variant++) {
				if (variant >= 3 && gpu_device_sm() != 90)
					continue;
				char src[2048];
				const char *tn = ir_dtype_name(dts[a]);
				int64_t hd = H * D;
				snprintf(src, sizeof src,
					 "sinter 1\n"
					 "func @main(%%qkv: %s[%lld,%lld,%lld]) -> (%s[%lld,%lld,%lld]) {\n"
					 "  %%q, %%k, %%v = split(%%qkv) axis=2 sizes=[%lld,%lld,%lld]\n"
					 "  %%qh = reshape(%%q) shape=[%lld,%lld,%lld,%d]\n"
					 "  %%qt = transpose(%%qh) perm=[0,2,1,3]\n"
					 "  %%kh = reshape(%%k) shape=[%lld,%lld,%lld,%d]\n"
					 "  %%kt = transpose(%%kh) perm=[0,2,1,3]\n"
					 "  %%vh = reshape(%%v) shape=[%lld,%lld,%lld,%d]\n"
					 "  %%vt = transpose(%%vh) perm=[0,2,1,3]\n"
					 "  %%a = scaled_dot_product_attention(%%qt, %%kt, %%vt) causal=true\n"
					 "  %%at = transpose(%%a) perm=[0,2,1,3]\n"
					 "  %%o = reshape(%%at) shape=[%lld,%lld,%lld]\n"
					 "  return %%o\n}\n",
					 tn, (long long)B, (long long)L, (long long)(3 * hd), tn, (long long)B, (long long)L,
					 (long long)hd, (long long)hd, (long long)hd, (long long)hd, (long long)B,
					 (long long)L, (long long)H, D, (long long)B, (long long)L, (long long)H, D,
					 (long long)B, (long long)L, (long long)H, D, (long long)B, (long long)L,
					 (long long)hd);
				ir_graph *g = NULL;
				if (sir_parse(src, strlen(src), "strided.sir", NULL, 0, &g, &err) != SN_OK) {
					printf("strided: FAIL: %s\n", err.msg);
					err = (sn_err){0};
					build_failures++;
					continue;
				}
				ir_ref qkv = g->inputs[0], out = g->outputs[0];
				patch pc = {.want = {.variant = variant}, .use_want = true};
				for (int i = 0; i < 3; i++) /* [B, H, L, D] inside [B, L, 3HD] */
					pc.lay[i] = (cg_layout){.set = true, .root = qkv, .offset = i * hd,
								.strides = {L * 3 * hd, D, 3 * hd, 1}};
				pc.lay_out = (cg_layout){.set = true, .root = out, .offset = 0,
							 .strides = {L * hd, D, hd, 1}};
				char what[120];
				snprintf(what, sizeof what, "strided qkv %s D=%d causal (%s)", tn, D,
					 variant == 1 ? "flash" : variant == 2 ? "simt" : variant == 3 ? "flash wgmma" : "flash wgmma ws");
				run_patched(g, dts[a], &pc, what);
			}
}

/* ---- head dims other than 64 and 128 (issue 26, item 2) ---- */

/* Parses src (a .sir graph) and checks it against the reference. */
static void check_sir(const char *src, ir_dtype t, const char *label)
{
	ir_graph *g = NULL;
	if (sir_parse(src, strlen(src), "dims.sir", NULL, 0, &g, &err) != SN_OK) {
		printf("%-64s FAIL: parse: %s\n", label, err.msg);
		err = (sn_err){0};
		build_failures++;
		return;
	}
	check(g, t, label);
}

/* Times the attention of g (its inputs random, its one step re-rendered
 * with want) and prints ms and TFLOP/s for flop operations. */
static void time_attn(ir_graph *g, const cg_config *want, const char *name, double flop)
{
	ir_tensor *vals = calloc(g->nnodes, sizeof *vals), ins[4], outs[1];
	uint64_t seed = 777;
	for (uint32_t k = 0; k < g->ninputs; k++) {
		const ir_node *n = &g->nodes[g->inputs[k]];
		size_t cnt = (size_t)ir_numel(&n->shape);
		ins[k] = (ir_tensor){n->dtype, n->shape, malloc(cnt * 2), cnt * 2};
		for (size_t x = 0; x < cnt; x++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			ir_store(n->dtype, ins[k].data, x, (double)(seed >> 11) * 0x1.0p-53 * 2 - 1);
		}
		vals[g->inputs[k]] = ins[k];
	}
	patch pc = {.want = *want, .use_want = true};
	double ms = 0;
	sn_err e = {0};
	cur_patch = &pc;
	gpu_plan_hook = patch_plan;
	gpu_set_timing(50, &ms);
	int rc = gpu_build_run(gpu_device(), g, vals, ins, false, outs, &e);
	gpu_set_timing(0, NULL);
	gpu_plan_hook = NULL;
	if (rc)
		printf("time %-28s %-60s FAIL %s\n", name, pc.got, e.msg);
	else
		printf("time %-28s %-60s %.4f ms %.2f TFLOP/s\n", name, pc.got, ms, flop / ms / 1e9);
	fflush(stdout);
	if (!rc)
		free(outs[0].data);
	for (uint32_t k = 0; k < g->ninputs; k++)
		free(ins[k].data);
	free(vals);
}

/* The mma.sync flash kernel at head dims 32 to 256 (48 and 80: an odd
 * count of k-steps; 32, 48, 80, 96, 160 and 224: padded rows; past 128:
 * 16 rows a warp): Swin-T's windows
 * (batch 8, 64 windows of 49 tokens, 3 heads of 32, a relative-position
 * bias [3, 49, 49] plus a window mask [64, 49, 49] added to the scores,
 * the sum broadcast over the batch), ViT's 197 tokens, cross-attention,
 * causal, bool masks; against the reference. Then Swin's attention (its
 * four stages) timed under the flash kernel (variant 1) and the SIMT one
 * (variant 2). */
static void dims(void)
{
	static const ir_dtype dts[] = {IR_BF16, IR_F16};
	static const int64_t ds[] = {32, 48, 80, 96, 160, 192, 224, 256};
	char label[160], src[2048];
	for (size_t a = 0; a < SN_COUNT(dts); a++) {
		const char *tn = ir_dtype_name(dts[a]);
		snprintf(src, sizeof src,
			 "sinter 1\n"
			 "func @main(%%q: %s[8,64,3,49,32], %%k: %s[8,64,3,49,32], %%v: %s[8,64,3,49,32], "
			 "%%bias: %s[1,1,3,49,49], %%win: %s[1,64,1,49,49]) -> (%s[8,64,3,49,32]) {\n"
			 "  %%m = add(%%bias, %%win)\n"
			 "  %%a = scaled_dot_product_attention(%%q, %%k, %%v, %%m)\n"
			 "  return %%a\n}\n",
			 tn, tn, tn, tn, tn, tn);
		snprintf(label, sizeof label, "attention %s Swin-T windows [8,64,3,49,32] bias + window mask", tn);
		check_sir(src, dts[a], label);
		for (size_t d = 0; d < SN_COUNT(ds); d++)
			for (int m = 0; m < M_KINDS; m++) {
				if (a && ds[d] != 32 && ds[d] != 80 && ds[d] != 256) /* f16: a few, to keep the time */
					continue;
				ir_graph *g = ir_graph_new();
				ir_add_output(g, add_attention(g, dts[a], 2, 3, 3, 197, 197, ds[d], m));
				ir_add_output(g, add_attention(g, dts[a], 2, 2, 2, 50, 77, ds[d], m)); /* cross */
				ir_add_output(g, add_attention(g, dts[a], 3, 2, 1, 49, 49, ds[d], m)); /* GQA */
				ir_add_output(g, add_attention(g, dts[a], 1, 2, 2, 300, 129, ds[d], m));
				snprintf(label, sizeof label, "attention %s D=%lld %s L=S=197, 50x77, 49 (GQA), 300x129", tn,
					 (long long)ds[d], mask_name[m]);
				check(g, dts[a], label);
			}
	}
	/* ViT-B: 197 tokens at head dim 64, and the bigger ones at 256 */
	for (int m = 0; m < M_KINDS; m++) {
		ir_graph *g = ir_graph_new();
		ir_add_output(g, add_attention(g, IR_BF16, 4, 12, 12, 197, 197, 64, m));
		ir_add_output(g, add_attention(g, IR_BF16, 1, 4, 4, 600, 600, 256, m));
		snprintf(label, sizeof label, "attention bf16 ViT 197/64 and 600/256 %s", mask_name[m]);
		check(g, IR_BF16, label);
	}
	/* Swin-T's four stages, timed (batch 8): 64, 16, 4 and 1 windows of 49
	 * tokens with 3, 6, 12 and 24 heads of 32, the mask [1, W, H, 49, 49] */
	static const int64_t win[] = {64, 16, 4, 1}, heads[] = {3, 6, 12, 24};
	for (int k = 0; k < 4; k++) {
		snprintf(src, sizeof src,
			 "sinter 1\n"
			 "func @main(%%q: bf16[8,%lld,%lld,49,32], %%k: bf16[8,%lld,%lld,49,32], "
			 "%%v: bf16[8,%lld,%lld,49,32], %%m: bf16[1,%lld,%lld,49,49]) -> (bf16[8,%lld,%lld,49,32]) {\n"
			 "  %%a = scaled_dot_product_attention(%%q, %%k, %%v, %%m)\n"
			 "  return %%a\n}\n",
			 (long long)win[k], (long long)heads[k], (long long)win[k], (long long)heads[k],
			 (long long)win[k], (long long)heads[k], (long long)win[k], (long long)heads[k],
			 (long long)win[k], (long long)heads[k]);
		double flop = 4.0 * 8 * (double)win[k] * (double)heads[k] * 49 * 49 * 32;
		for (int v = 1; v <= 2; v++) {
			ir_graph *g = NULL;
			if (sir_parse(src, strlen(src), "swin.sir", NULL, 0, &g, &err) != SN_OK) {
				printf("swin: FAIL: %s\n", err.msg);
				err = (sn_err){0};
				build_failures++;
				return;
			}
			char name[64];
			snprintf(name, sizeof name, "swin-t stage %d %s", k + 1, v == 1 ? "flash" : "simt");
			time_attn(g, &(cg_config){.variant = v}, name, flop);
			ir_graph_free(g);
		}
	}
}

/* --sweep: times the flash kernel under configs on the benchmark's shapes
 * (no reference check: the configs' numerics are the grid's and
 * configs()'s job). For choosing the default heuristic. */
static void sweep(const char *only)
{
	static const struct {
		const char *name;
		int64_t b, h, s, d;
		bool causal;
	} shapes[] = {
		{"gpt2 bs1", 1, 12, 512, 64, true},
		{"gpt2 bs8", 8, 12, 512, 64, true},
		{"4096/128 bs1", 1, 16, 4096, 128, true},
		{"4096/128 bs4", 4, 16, 4096, 128, true},
		{"4096/128 bs4 nc", 4, 16, 4096, 128, false},
	};
	/* variant, tile_m, tile_n, warps, stages (all 0: the default) */
	static const int cfg64[][5] = {{0, 0, 0, 0, 0},     {1, 64, 64, 4, 3},    {3, 64, 64, 4, 4},
				       {3, 64, 128, 4, 4},  {3, 128, 64, 8, 4},   {4, 64, 64, 4, 4},
				       {4, 64, 128, 4, 3},  {4, 128, 64, 8, 4},   {4, 128, 128, 8, 3},
				       {4, 64, 64, 4, 2},   {4, 128, 96, 8, 4},   {3, 192, 64, 12, 4}};
	static const int cfg128[][5] = {{0, 0, 0, 0, 0},     {1, 128, 128, 8, 2},  {3, 128, 128, 8, 3},
					{3, 128, 64, 8, 5},  {3, 192, 96, 12, 3},  {4, 128, 64, 8, 4},
					{4, 128, 96, 8, 3},  {4, 128, 64, 8, 6},   {4, 128, 96, 8, 4},
					{4, 128, 128, 8, 3}, {4, 128, 80, 8, 4},   {4, 128, 112, 8, 3}};
	uint64_t seed = 12345;
	for (size_t i = 0; i < SN_COUNT(shapes); i++)
		for (int c = 0; c < (int)SN_COUNT(cfg64); c++) {
			const int *cf = shapes[i].d == 64 ? cfg64[c] : cfg128[c];
			if (only && !strstr(shapes[i].name, only))
				continue;
			if (cf[0] >= 3 && gpu_device_sm() != 90)
				continue;
			ir_graph *g = ir_graph_new();
			ir_ref r = add_attention(g, IR_BF16, shapes[i].b, shapes[i].h, shapes[i].h, shapes[i].s, shapes[i].s,
						 shapes[i].d, shapes[i].causal ? M_CAUSAL : M_NONE);
			ir_add_output(g, r);
			ir_tensor *vals = calloc(g->nnodes, sizeof *vals), ins[3], outs[1];
			for (uint32_t k = 0; k < 3; k++) {
				const ir_node *n = &g->nodes[g->inputs[k]];
				size_t cnt = (size_t)ir_numel(&n->shape);
				ins[k] = (ir_tensor){n->dtype, n->shape, malloc(cnt * 2), cnt * 2};
				for (size_t x = 0; x < cnt; x++) {
					seed = seed * 6364136223846793005ull + 1442695040888963407ull;
					ir_store(IR_BF16, ins[k].data, x, (double)(seed >> 11) * 0x1.0p-53 * 2 - 1);
				}
				vals[g->inputs[k]] = ins[k];
			}
			patch pc = {.want = {.variant = cf[0], .tile_m = cf[1], .tile_n = cf[2], .warps = cf[3],
					     .stages = cf[4]},
				    .use_want = cf[0] != 0};
			double ms = 0;
			sn_err e = {0};
			cur_patch = &pc;
			gpu_plan_hook = patch_plan;
			gpu_set_timing(50, &ms);
			int rc = gpu_build_run(gpu_device(), g, vals, ins, false, outs, &e);
			gpu_set_timing(0, NULL);
			gpu_plan_hook = NULL;
			double f = 4.0 * shapes[i].b * shapes[i].h * shapes[i].s * shapes[i].s * shapes[i].d;
			if (shapes[i].causal)
				f /= 2;
			if (rc)
				printf("sweep %-16s %-60s FAIL %s\n", shapes[i].name, pc.got, e.msg);
			else
				printf("sweep %-16s %-60s %.4f ms %.1f TFLOP/s\n", shapes[i].name, pc.got, ms, f / ms / 1e9);
			fflush(stdout);
			if (!rc)
				free(outs[0].data);
			for (int k = 0; k < 3; k++)
				free(ins[k].data);
			free(vals);
			ir_graph_free(g);
		}
}

int main(int argc, char **argv)
{
	if (!gpu_available())
		return GPU_SKIP;
	if (argc > 1 && !strcmp(argv[1], "--sweep")) {
		sweep(argc > 2 ? argv[2] : NULL); /* --sweep [SHAPE]: shapes whose name holds SHAPE */
		return gpu_done();
	}
	if (argc > 3 && !strcmp(argv[1], "--part")) { /* --part K N [args]: a share of the checks, to run N side by side */
		part_k = atoi(argv[2]);
		part_n = atoi(argv[3]);
		if (part_n < 1 || part_k < 0 || part_k >= part_n) {
			fprintf(stderr, "--part K N: 0 <= K < N\n");
			return 2;
		}
		argc -= 3;
		argv += 3;
	}
	if (argc > 1 && !strcmp(argv[1], "--dims")) { /* --dims: only head dims other than 64 and 128 */
		dims();
		return gpu_done() || build_failures ? 1 : 0;
	}
	if (argc > 2 && !strcmp(argv[1], "--variant")) {
		forced_variant = atoi(argv[2]);
		grid();
		forced_variant = 0;
		return gpu_done() || build_failures ? 1 : 0;
	}
	grid();
	configs();
	pingpong();
	strided();
	dims();
	int rc = gpu_done();
	return rc || build_failures ? 1 : 0;
}
