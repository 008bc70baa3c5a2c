/* test_fuse.c: the fusion partition's rules (passes/fuse.c) on small graphs
 * written out by hand, each with the groups it must give; the attention
 * rewrite (passes/attention.c) equivalent on the reference interpreter;
 * and every sample's fused plan lowers for sm_80 and sm_90 with fewer
 * steps than its unfused one and no more arena. (That fused kernels
 * compute what the unfused ones do is checked on the GPU:
 * tests/gpu/test_cuda_fuse.c, scripts/gpu-fuse-check.) */
#include "check.h"
#include "pass_equiv.h"
#include "ir/ref/ref.h"
#include "api/model.h"
#include "codegen/cg.h"
#include "frontend/sir.h"
#include "passes/fuse.h"
#include "passes/pass.h"

#include <stdlib.h>
#include <string.h>

static ir_graph *parse(const char *src)
{
	sn_err e = {0};
	ir_graph *g = NULL;
	if (sir_parse(src, strlen(src), "test.sir", NULL, 0, &g, &e) != SN_OK)
		fprintf(stderr, "%s\n", e.msg);
	return g;
}

/* Caps as codegen answers them for these tests: norms and softmax take a
 * prologue, convolutions an epilogue, matmul is a cuBLASLt product, linear
 * a cuBLASLt product that the GEMM template could also run (an epilogue). */
static unsigned caps(const ir_graph *g, ir_ref r, void *ctx)
{
	(void)ctx;
	switch (g->nodes[r].op) {
	case IR_OP_softmax:
	case IR_OP_layer_norm: return FU_CAN_PROLOGUE;
	case IR_OP_conv2d: return FU_CAN_EPILOGUE;
	case IR_OP_matmul: return FU_CAN_BLAS_EPI;
	case IR_OP_linear: return FU_CAN_BLAS_EPI | FU_CAN_EPILOGUE;
	case IR_OP_scaled_dot_product_attention: return ctx ? FU_CAN_LAYOUT : 0;
	case IR_OP_reduce_sum:
	case IR_OP_reduce_mean:
	case IR_OP_reduce_max:
	case IR_OP_reduce_min: return ctx == (void *)2 ? FU_CAN_ROWS : 0;
	default: return 0;
	}
}

static void groups_are_ctx(const char *label, const char *src, const char *want, void *ctx);

/* The groups of src, as fu_plan_print writes them, must equal want. */
static void groups_are(const char *label, const char *src, const char *want)
{
	groups_are_ctx(label, src, want, (void *)1);
}

/* The same with reductions that take row groups (as CUDA's renderer). */
static void rows_are(const char *label, const char *src, const char *want)
{
	groups_are_ctx(label, src, want, (void *)2);
}

static void groups_are_ctx(const char *label, const char *src, const char *want, void *ctx)
{
	ir_graph *g = parse(src);
	CHECK(g != NULL);
	if (!g)
		return;
	fu_plan p;
	sn_err e = {0};
	fu_opts o = {.caps = caps, .ctx = ctx};
	CHECK(fu_partition(g, &o, false, &p, &e) == SN_OK);
	sn_buf b = {0};
	fu_plan_print(g, &p, &b);
	bool same = b.s && !strcmp(b.s, want);
	if (!same)
		fprintf(stderr, "%s: groups\n%s-- want\n%s", label, b.s ? b.s : "", want);
	CHECK(same);
	/* every stored value that is not a source is some group's root */
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		bool src_ = n->op == IR_OP_input || n->op == IR_OP_param || n->op == IR_OP_const;
		if (src_ || !p.stored[i])
			continue;
		CHECK(p.group_of[i] != FU_NO_GROUP && p.groups[p.group_of[i]].root == i);
	}
	sn_buf_free(&b);
	fu_plan_free(&p);
	/* disabled: one group per node */
	CHECK(fu_partition(g, &o, true, &p, &e) == SN_OK);
	uint32_t computed = 0;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		computed += !(n->op == IR_OP_input || n->op == IR_OP_param || n->op == IR_OP_const);
	}
	CHECK(p.ngroups == computed);
	fu_plan_free(&p);
	ir_graph_free(g);
}

static void rules(void)
{
	groups_are("chain",
		   "sinter 1\nfunc @main(%x: f32[4,8], %b: f32[8]) -> (f32[4,8]) {\n"
		   "  %a = add(%x, %b)\n  %r = relu(%a)\n  %c = const f32[] 2\n  %m = mul(%r, %c)\n"
		   "  return %m\n}\n",
		   "group 0 pointwise %m: %a(add) %r(relu) %m(mul)\n");
	/* a value read twice outside one group is stored once */
	groups_are("shared",
		   "sinter 1\nfunc @main(%x: f32[4,8]) -> (f32[4,8], f32[4,8]) {\n"
		   "  %e = exp(%x)\n  %a = neg(%e)\n  %b = abs(%e)\n  return %a, %b\n}\n",
		   "group 0 pointwise %e: %e(exp)\ngroup 1 pointwise %a: %a(neg)\ngroup 2 pointwise %b: %b(abs)\n");
	/* index-only producers become indexing; a causal mask is computed
	 * in place (its iotas never stored), the scale and mask go into the
	 * softmax */
	groups_are("softmax prologue",
		   "sinter 1\nfunc @main(%s: f32[2,8,8]) -> (f32[2,8,8]) {\n"
		   "  %row = iota i64[8,8]\n  %col = iota i64[8,8] axis=1\n  %cm = greater(%col, %row)\n"
		   "  %c = const f32[] 0.125\n  %x = mul(%s, %c)\n  %ninf = const f32[] -inf\n"
		   "  %y = where(%cm, %ninf, %x)\n  %p = softmax(%y)\n  return %p\n}\n",
		   "group 0 reduce %p: %x(mul) %y(where) %p(softmax)\n");
	groups_are("transposes",
		   "sinter 1\nfunc @main(%x: f32[2,6,4]) -> (f32[2,4,3]) {\n"
		   "  %s = split(%x) axis=1 sizes=[3,3] index=1\n  %t = transpose(%s) perm=[0,2,1]\n"
		   "  %u = tanh(%t)\n  return %u\n}\n",
		   "group 0 pointwise %u: %s(split) %t(transpose) %u(tanh)\n");
	/* matmul + bias + residual + gelu(tanh) is one cuBLASLt product */
	groups_are("gemm epilogue",
		   "sinter 1\nfunc @main(%x: f32[4,8], %w: f32[8,16], %b: f32[16], %r: f32[4,16]) -> (f32[4,16]) {\n"
		   "  %m = matmul(%x, %w)\n  %a = add(%m, %b)\n  %s = add(%r, %a)\n"
		   "  %g = gelu(%s) approximate=tanh\n  return %g\n}\n",
		   "group 0 gemm %g: %m(matmul) %a(add) %s(add) %g(gelu) bias=%b residual=%r gelu\n");
	/* gelu with erf is not cuBLASLt's: the product keeps bias only */
	groups_are("gemm erf",
		   "sinter 1\nfunc @main(%x: f32[4,8], %w: f32[8,16], %b: f32[16]) -> (f32[4,16]) {\n"
		   "  %m = matmul(%x, %w)\n  %a = add(%m, %b)\n  %g = gelu(%a)\n  return %g\n}\n",
		   "group 0 gemm %a: %m(matmul) %a(add) bias=%b\ngroup 1 pointwise %g: %g(gelu)\n");
	/* a product the template runs takes the whole chain instead */
	groups_are("template erf",
		   "sinter 1\nfunc @main(%x: f32[4,8], %w: f32[16,8], %b: f32[16]) -> (f32[4,16]) {\n"
		   "  %m = linear(%x, %w)\n  %a = add(%m, %b)\n  %g = gelu(%a)\n  return %g\n}\n",
		   "group 0 conv %g: %m(linear) %a(add) %g(gelu)\n");
	groups_are("template scale",
		   "sinter 1\nfunc @main(%x: f32[4,8], %w: f32[16,8], %b: f32[16]) -> (f32[4,16]) {\n"
		   "  %m = linear(%x, %w, %b)\n  %c = const f32[] 0.5\n  %s = mul(%m, %c)\n  return %s\n}\n",
		   "group 0 conv %s: %m(linear) %s(mul)\n");
	/* what cuBLASLt expresses stays cuBLASLt's */
	groups_are("template not needed",
		   "sinter 1\nfunc @main(%x: f32[4,8], %w: f32[16,8], %b: f32[16]) -> (f32[4,16]) {\n"
		   "  %m = linear(%x, %w)\n  %a = add(%m, %b)\n  %g = relu(%a)\n  return %g\n}\n",
		   "group 0 gemm %g: %m(linear) %a(add) %g(relu) bias=%b relu\n");
	/* a product read elsewhere keeps its own step */
	groups_are("gemm shared",
		   "sinter 1\nfunc @main(%x: f32[4,8], %w: f32[8,16], %b: f32[16]) -> (f32[4,16], f32[4,16]) {\n"
		   "  %m = matmul(%x, %w)\n  %a = add(%m, %b)\n  return %a, %m\n}\n",
		   "group 0 node %m: %m(matmul)\ngroup 1 pointwise %a: %a(add)\n");
	/* conv + residual add + relu: one kernel */
	groups_are("conv epilogue",
		   "sinter 1\nfunc @main(%x: f32[1,4,8,8], %w: f32[4,4,3,3], %r: f32[1,4,8,8]) -> (f32[1,4,8,8]) {\n"
		   "  %c = conv2d(%x, %w) pad=[1,1,1,1]\n  %a = add(%c, %r)\n  %y = relu(%a)\n  return %y\n}\n",
		   "group 0 conv %y: %c(conv2d) %a(add) %y(relu)\n");
	/* EfficientNetV2's residual blocks: the conv's own input, a silu
	 * of the same shape that the epilogue's residual add also reads,
	 * stays stored (a member cannot be the core's operand: the kernel
	 * reads its operands from buffers) */
	groups_are("conv operand read by its epilogue",
		   "sinter 1\nfunc @main(%x: f32[1,4,8,8], %w: f32[4,4,3,3]) -> (f32[1,4,8,8]) {\n"
		   "  %s = sigmoid(%x)\n  %u = mul(%x, %s)\n  %c = conv2d(%u, %w) pad=[1,1,1,1]\n"
		   "  %a = add(%c, %u)\n  return %a\n}\n",
		   "group 0 pointwise %u: %s(sigmoid) %u(mul)\ngroup 1 conv %a: %c(conv2d) %a(add)\n");
	/* reshape of a stored value stays a view (no step) */
	groups_are("view",
		   "sinter 1\nfunc @main(%x: f32[4,8], %w: f32[8,16]) -> (f32[64]) {\n"
		   "  %m = matmul(%x, %w)\n  %v = reshape(%m) shape=[64]\n  return %v\n}\n",
		   "group 0 node %m: %m(matmul)\n");
}

/* Row groups: reductions over the same trailing axes with the pointwise
 * nodes of their iteration space, decided by element count. */
static const char *const rms_src =
	"sinter 1\nfunc @main(%x: bf16[2,5,64], %w: bf16[64]) -> (bf16[2,5,64]) {\n"
	"  %two = const f32[] 2.0\n  %eps = const f32[] 1e-06\n  %h = cast(%x) dtype=f32\n"
	"  %p = pow(%h, %two)\n  %v = reduce_mean(%p) axes=[-1] keepdims=true\n  %a = add(%v, %eps)\n"
	"  %r = rsqrt(%a)\n  %m = mul(%h, %r)\n  %c = cast(%m) dtype=bf16\n  %y = mul(%w, %c)\n  return %y\n}\n";

static void rows(void)
{
	/* RMSNorm as the dynamo exporter writes it, bf16 casts included: the
	 * prologue (cast, pow), the per-row add and rsqrt and the epilogue
	 * (muls, cast) in one group */
	rows_are("rms_norm", rms_src,
		 "group 0 rows %y: %h(cast) %p(pow) %v(reduce_mean) %a(add) %r(rsqrt) %m(mul) %c(cast) %y(mul)\n");
	/* the cpu's caps (no FU_CAN_ROWS): the partition of before */
	groups_are("rms_norm, no rows", rms_src,
		   "group 0 pointwise %h: %h(cast)\ngroup 1 pointwise %p: %p(pow)\ngroup 2 node %v: %v(reduce_mean)\n"
		   "group 3 pointwise %y: %a(add) %r(rsqrt) %m(mul) %c(cast) %y(mul)\n");
	/* two reductions, the second reading the first's value: softmax
	 * (max, then the sum of exp(x - max)) and layer norm (mean, then the
	 * mean of (x - mean)^2) */
	rows_are("softmax",
		 "sinter 1\nfunc @main(%x: f32[3,7,40]) -> (f32[3,7,40]) {\n"
		 "  %m = reduce_max(%x) axes=[-1] keepdims=true\n  %d = sub(%x, %m)\n  %e = exp(%d)\n"
		 "  %s = reduce_sum(%e) axes=[2] keepdims=true\n  %y = div(%e, %s)\n  return %y\n}\n",
		 "group 0 rows %y: %m(reduce_max) %d(sub) %e(exp) %s(reduce_sum) %y(div)\n");
	rows_are("layer_norm",
		 "sinter 1\nfunc @main(%x: f32[6,40], %w: f32[40], %b: f32[40]) -> (f32[6,40]) {\n"
		 "  %m = reduce_mean(%x) axes=[-1] keepdims=true\n  %d = sub(%x, %m)\n  %q = mul(%d, %d)\n"
		 "  %v = reduce_mean(%q) axes=[-1] keepdims=true\n  %eps = const f32[] 1e-05\n  %a = add(%v, %eps)\n"
		 "  %s = sqrt(%a)\n  %n = div(%d, %s)\n  %nw = mul(%n, %w)\n  %y = add(%nw, %b)\n  return %y\n}\n",
		 "group 0 rows %y: %m(reduce_mean) %d(sub) %q(mul) %v(reduce_mean) %a(add) %s(sqrt) %n(div) %nw(mul) "
		 "%y(add)\n");
	/* over two trailing axes; a per-row root (the reduction itself) */
	rows_are("two axes, per-row root",
		 "sinter 1\nfunc @main(%x: f32[4,3,5]) -> (f32[4,1,1]) {\n"
		 "  %e = exp(%x)\n  %s = reduce_sum(%e) axes=[1,2] keepdims=true\n  return %s\n}\n",
		 "group 0 rows %s: %e(exp) %s(reduce_sum)\n");
	/* not a row group: a reduction over a leading axis, one that drops
	 * its dims, a lone reduction, an intermediate read elsewhere too */
	rows_are("leading axis",
		 "sinter 1\nfunc @main(%x: f32[4,8]) -> (f32[4,8]) {\n"
		 "  %m = reduce_max(%x) axes=[0] keepdims=true\n  %d = sub(%x, %m)\n  return %d\n}\n",
		 "group 0 node %m: %m(reduce_max)\ngroup 1 pointwise %d: %d(sub)\n");
	rows_are("dims dropped",
		 "sinter 1\nfunc @main(%x: f32[4,8]) -> (f32[4]) {\n"
		 "  %e = exp(%x)\n  %s = reduce_sum(%e) axes=[-1]\n  return %s\n}\n",
		 "group 0 pointwise %e: %e(exp)\ngroup 1 node %s: %s(reduce_sum)\n");
	rows_are("lone",
		 "sinter 1\nfunc @main(%x: f32[4,8]) -> (f32[4,1]) {\n"
		 "  %s = reduce_sum(%x) axes=[-1] keepdims=true\n  return %s\n}\n",
		 "group 0 node %s: %s(reduce_sum)\n");
	/* (the sum and the division still make one: %e is loaded) */
	rows_are("read elsewhere",
		 "sinter 1\nfunc @main(%x: f32[4,8]) -> (f32[4,8], f32[4,8]) {\n"
		 "  %m = reduce_max(%x) axes=[-1] keepdims=true\n  %d = sub(%x, %m)\n  %e = exp(%d)\n"
		 "  %s = reduce_sum(%e) axes=[-1] keepdims=true\n  %y = div(%e, %s)\n  return %y, %e\n}\n",
		 "group 0 node %m: %m(reduce_max)\ngroup 1 pointwise %e: %d(sub) %e(exp)\ngroup 2 rows %y: %s(reduce_sum) "
		 "%y(div)\n");
	/* reductions of different rows do not share a group: the second
	 * reads the first's output transposed (stored: index-only nodes are
	 * not members of row groups yet) */
	rows_are("two row groups",
		 "sinter 1\nfunc @main(%x: f32[4,8]) -> (f32[8,4]) {\n"
		 "  %m = reduce_max(%x) axes=[-1] keepdims=true\n  %d = sub(%x, %m)\n"
		 "  %e = exp(%d)\n  %s = reduce_sum(%e) axes=[-1] keepdims=true\n  %y = div(%e, %s)\n"
		 "  %t = transpose(%y) perm=[1,0]\n  %m2 = reduce_max(%t) axes=[-1] keepdims=true\n"
		 "  %d2 = sub(%t, %m2)\n  return %d2\n}\n",
		 "group 0 rows %y: %m(reduce_max) %d(sub) %e(exp) %s(reduce_sum) %y(div)\n"
		 "group 1 pointwise %t: %t(transpose)\ngroup 2 rows %d2: %m2(reduce_max) %d2(sub)\n");
}

/* GPT-2's attention block, small: q, k, v split from one tensor and
 * transposed into heads, the output transposed and merged back. */
static const char *const attn_block =
	"sinter 1\nfunc @main(%qkv: f32[2,5,24]) -> (f32[2,5,8]) {\n"
	"  %q = split(%qkv) axis=2 sizes=[8,8,8] index=0\n  %qh = reshape(%q) shape=[2,5,2,4]\n"
	"  %qt = transpose(%qh) perm=[0,2,1,3]\n"
	"  %k = split(%qkv) axis=2 sizes=[8,8,8] index=1\n  %kh = reshape(%k) shape=[2,5,2,4]\n"
	"  %kt = transpose(%kh) perm=[0,2,1,3]\n"
	"  %v = split(%qkv) axis=2 sizes=[8,8,8] index=2\n  %vh = reshape(%v) shape=[2,5,2,4]\n"
	"  %vt = transpose(%vh) perm=[0,2,1,3]\n"
	"  %a = scaled_dot_product_attention(%qt, %kt, %vt) causal=true\n"
	"  %at = transpose(%a) perm=[0,2,1,3]\n  %m = reshape(%at) shape=[2,5,8]\n  return %m\n}\n";

/* Evaluates the chain of single-operand nodes from `from` (exclusive) down
 * to `to` on the reference interpreter, from data x (from's type). */
static bool eval_chain(const ir_graph *g, ir_ref from, ir_ref to, const ir_tensor *x, ir_tensor *out)
{
	ir_ref path[16];
	int n = 0;
	for (ir_ref c = to; c != from && n < 16; c = g->nodes[c].in[0])
		path[n++] = c;
	ir_tensor cur = *x;
	bool own = false;
	sn_err e = {0};
	while (n-- > 0) {
		ir_tensor nx;
		if (ref_eval_node(g, &g->nodes[path[n]], &cur, &nx, &e) != SN_OK) {
			fprintf(stderr, "%s\n", e.msg);
			return false;
		}
		if (own)
			free(cur.data);
		cur = nx;
		own = true;
	}
	*out = cur;
	return own;
}

static ir_tensor iota_tensor(const ir_node *n)
{
	ir_tensor t = {.dtype = IR_F32, .shape = n->shape};
	int64_t k = ir_numel(&n->shape);
	float *d = malloc((size_t)k * sizeof *d);
	for (int64_t i = 0; d && i < k; i++)
		d[i] = (float)i;
	t.data = d;
	t.nbytes = (size_t)k * sizeof *d;
	return t;
}

/* The element of a value at its linear index i through layout l. */
static int64_t at_layout(const fu_layout *l, int64_t i)
{
	int64_t pos = l->offset;
	for (int d = l->rank - 1; d >= 0; d--) {
		pos += i % l->shape[d] * l->strides[d];
		i /= l->shape[d];
	}
	return pos;
}

static void layouts(void)
{
	groups_are("attention layouts", attn_block,
		   "group 0 attention %m: %q(split) %qh(reshape) %qt(transpose) %k(split) %kh(reshape) %kt(transpose) "
		   "%v(split) %vh(reshape) %vt(transpose) %a(scaled_dot_product_attention) %at(transpose) %m(reshape)\n");
	ir_graph *g = parse(attn_block);
	CHECK(g != NULL);
	if (!g)
		return;
	fu_plan p;
	sn_err e = {0};
	fu_opts o = {.caps = caps, .ctx = (void *)1};
	CHECK(fu_partition(g, &o, false, &p, &e) == SN_OK && p.ngroups == 1);
	const ir_node *core = &g->nodes[p.groups[0].core];
	/* operands: qkv holds its own linear index, so what the chain reads
	 * at each element is where the layout must point */
	for (uint32_t k = 0; k < 3; k++) {
		ir_ref top;
		fu_layout l;
		CHECK(fu_layout_of(g, &p, 0, core->in[k], &top, &l));
		ir_tensor x = iota_tensor(&g->nodes[top]), y;
		CHECK(eval_chain(g, top, core->in[k], &x, &y));
		const float *yd = y.data;
		bool ok = true;
		for (int64_t i = 0; i < ir_numel(&y.shape); i++)
			ok &= (int64_t)yd[i] == at_layout(&l, i);
		CHECK(ok);
		free(x.data);
		free(y.data);
	}
	/* output: where element i of the core's output lands in the root */
	fu_layout l;
	CHECK(fu_layout_out(g, &p, 0, &l));
	ir_tensor x = iota_tensor(core), y;
	CHECK(eval_chain(g, p.groups[0].core, p.groups[0].root, &x, &y));
	const float *yd = y.data;
	bool ok = true;
	for (int64_t i = 0; i < ir_numel(&x.shape); i++)
		ok &= yd[at_layout(&l, i)] == (float)i;
	CHECK(ok);
	free(x.data);
	free(y.data);
	fu_plan_free(&p);
	ir_graph_free(g);
}

static int count_op(const ir_graph *g, ir_op op)
{
	int n = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		n += g->nodes[i].op == op;
	return n;
}

static void attention_rewrite(void)
{
	sn_err e = {0};
	ir_graph *a = NULL;
	CHECK(sir_parse_file(SINTER_SOURCE_DIR "/tests/passes/attention.sir", NULL, 0, &a, &e) == SN_OK);
	if (!a)
		return;
	ir_graph *b = ir_graph_clone(a, &e);
	pass_ctx ctx = {0};
	CHECK(b && pass_run_list(&b, "attention,canonicalize", &ctx, &e) == SN_OK);
	if (!b) {
		ir_graph_free(a);
		return;
	}
	CHECK(count_op(b, IR_OP_scaled_dot_product_attention) == 5);
	CHECK(count_op(b, IR_OP_softmax) == 1); /* the one whose scores are an output */
	ir_wstore *ws = ir_ws_new();
	CHECK(ws != NULL);
	equiv_fill_params(a, ws, 7); /* (it has none: a no-op) */
	CHECK(equiv_check(a, b, ws, 1e-5, "attention rewrite"));
	ir_ws_free(ws);
	ir_graph_free(a);
	ir_graph_free(b);
}

/* The mask as ONNX imports it: an initializer, so a bool param whose values
 * are in the weights. Triangular values (true where j > i) make the causal
 * kernel, equivalent on the reference; any other values, or no weights,
 * leave the graph as written. */
static const char attn_param[] =
	"sinter 1\n"
	"func @main(%q: f32[1,2,6,8], %k: f32[1,2,6,8], %v: f32[1,2,6,8]) -> (f32[1,2,6,8]) {\n"
	"  %kt = transpose(%k) perm=[0,1,3,2]\n"
	"  %s = matmul(%q, %kt)\n"
	"  %c = const f32[] 0.5\n"
	"  %x = mul(%s, %c)\n"
	"  %mask = param bool[6,6] \"mask\"\n"
	"  %ninf = const f32[] -inf\n"
	"  %y = where(%mask, %ninf, %x)\n"
	"  %p = softmax(%y)\n"
	"  %a = matmul(%p, %v)\n"
	"  return %a\n"
	"}\n";

static void attention_param_mask(int form) /* 0 triangular, 1 another, 2 no weights */
{
	sn_err e = {0};
	ir_graph *a = NULL;
	CHECK(sir_parse(attn_param, sizeof attn_param - 1, "attn_param", NULL, 0, &a, &e) == SN_OK);
	if (!a)
		return;
	ir_wstore *ws = ir_ws_new();
	uint8_t *m = malloc(36);
	CHECK(ws && m);
	if (!ws || !m) {
		free(m);
		ir_ws_free(ws);
		ir_graph_free(a);
		return;
	}
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < 6; j++)
			m[i * 6 + j] = j > i || (form == 1 && i == 5 && j == 0);
	ir_tensor t = {.dtype = IR_BOOL, .shape = {.rank = 2, .d = {6, 6}}, .data = m, .nbytes = 36};
	CHECK(ir_ws_put(ws, "mask", t, &e) == SN_OK);
	ir_graph *b = ir_graph_clone(a, &e);
	pass_ctx ctx = {.ws = form == 2 ? NULL : ws};
	CHECK(b && pass_run_list(&b, "attention,canonicalize", &ctx, &e) == SN_OK);
	if (b) {
		/* triangular: the causal kernel; else the param negated as
		 * the bool mask (where(mask, false, true): its values stay
		 * out of the graph) */
		CHECK(count_op(b, IR_OP_scaled_dot_product_attention) == 1);
		for (uint32_t i = 0; i < b->nnodes; i++)
			if (b->nodes[i].op == IR_OP_scaled_dot_product_attention)
				CHECK(form == 0 ? b->nodes[i].attrs->causal && b->nodes[i].nin == 3
						: !b->nodes[i].attrs->causal && b->nodes[i].nin == 4);
		CHECK(equiv_check(a, b, ws, 1e-5, form == 0 ? "attention, triangular param mask" : "attention, param mask negated"));
	}
	ir_ws_free(ws);
	ir_graph_free(a);
	ir_graph_free(b);
}

/* Every sample, fused, for sm_80 and sm_90: fewer steps, no more arena. */
static void samples(void)
{
	static const char *const names[] = {"mlp", "resblock", "resnet50", "gpt2"};
	for (size_t i = 0; i < SN_COUNT(names); i++)
		for (int prec = 0; prec <= 2; prec += 2) { /* fp32, bf16 */
			char path[512];
			snprintf(path, sizeof path, "%s/samples/%s.sir", SINTER_SOURCE_DIR, names[i]);
			sinter_shape_binding bind = {"N", 2};
			sinter_load_options o = {.size = sizeof(sinter_load_options), .shapes = &bind, .nshapes = 1};
			sinter_model *m = NULL;
			sinter_error err = {0};
			CHECK(sinter_model_load(path, &o, &m, &err) == SINTER_OK &&
			      sinter_model_optimize(m, "default", NULL, (sinter_precision)prec, 90, NULL, &err) ==
				      SINTER_OK);
			if (!m)
				continue;
			for (int sm = 80; sm <= 90; sm += 10) {
				cg_plan *f = NULL, *u = NULL;
				cg_target tf = {.sm = sm}, tu = {.sm = sm, .unfused = true};
				sn_err e = {0};
				CHECK(cg_lower(m->g, NULL, &tf, &f, &e) == SN_OK);
				CHECK(cg_lower(m->g, NULL, &tu, &u, &e) == SN_OK);
				if (f && u) {
					printf("%s %s sm_%d: %u steps fused, %u unfused; arena %llu / %llu bytes\n",
					       names[i], prec ? "bf16" : "fp32", sm, f->nsteps, u->nsteps,
					       (unsigned long long)f->arena_bytes, (unsigned long long)u->arena_bytes);
					CHECK(f->nsteps <= u->nsteps);
					CHECK(f->arena_bytes <= u->arena_bytes);
				}
				cg_plan_free(f);
				cg_plan_free(u);
			}
			sinter_model_free(m);
		}
}

int main(void)
{
	rules();
	rows();
	layouts();
	attention_rewrite();
	for (int form = 0; form < 3; form++)
		attention_param_mask(form);
	samples();
	printf("fuse: %d checks, %d failures\n", check_count, check_failures);
	return check_failures != 0;
}
