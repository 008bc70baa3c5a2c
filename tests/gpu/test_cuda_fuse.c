/* test_cuda_fuse.c: fused kernels on CUDA against the reference
 * interpreter, on seeded random graphs: chains and DAGs of elementwise ops
 * with broadcasting, scalar consts, casts between float dtypes, index-only
 * ops (transpose, reshape, expand, slice, split), masks computed from
 * iotas with where, some values read twice, ending now and then in a
 * softmax or layer_norm (a prologue) or starting from a matrix product
 * with bias, residual and activation (cuBLASLt's epilogue). Inputs are
 * fresh random values in [-1, 1) (gpu_check.c); every intermediate the
 * plan stores is poisoned first. Bounds per dtype: f32 1e-5 relative L2,
 * f16 and bf16 2e-2 (values round at every node as unfused kernels store
 * them, the reference rounds at the same places from double).
 * Then the row groups: RMSNorm, layer norm (two ways), softmax,
 * log_softmax and group norm as exporters write them (decomposed, in f32 or in bf16 with
 * casts to f32 and back), over rows of 64, 200 (two axes), 1000, 4096 and
 * 20000, a warp or a block per row, the row in registers or read again:
 * each must lower to one kernel and match the reference (f32 1e-5, bf16
 * 2e-2).
 * Usage: gpu_test_cuda_fuse [COUNT [FIRST_SEED [SM]]] (default 1000
 * graphs), or gpu_test_cuda_fuse rows [SM] for the row groups alone. With
 * SM (e.g. 90) the graphs are only lowered and every kernel
 * NVRTC-compiled for sm_SM, no GPU needed: CI's codegen.nvrtc.fuse_random. */
#include "gpu_check.h"
#include "codegen/cg.h"
#include "runtime/cuda_nvrtc.h"
#include "frontend/sir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sn_err err;

typedef struct gen {
	ir_graph *g;
	uint64_t rng;
	ir_dtype t;
	ir_ref pool[64];
	int n;
} gen;

static uint64_t next(gen *s)
{
	uint64_t z = (s->rng += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static int rnd(gen *s, int n)
{
	return (int)(next(s) % (uint64_t)n);
}

static void push(gen *s, ir_ref r)
{
	if (r != IR_NONE && s->n < 64)
		s->pool[s->n++] = r;
	err = (sn_err){0}; /* a refused op is simply not taken */
}

static ir_ref recent(gen *s)
{
	return s->pool[s->n - 1 - rnd(s, s->n < 3 ? s->n : 3)];
}

static ir_ref scalar(gen *s, double v)
{
	uint64_t bits = 0;
	ir_store(s->t, &bits, 0, v);
	ir_shape sh = {0, {0}};
	return ir_add_const(s->g, s->t, &sh, &bits, &err);
}

static ir_ref op(gen *s, ir_op o, ir_ref a, ir_ref b, const ir_attrs *at)
{
	ir_ref v[2] = {a, b};
	return ir_add(s->g, o, v, b == IR_NONE ? 1 : 2, at, &err);
}

/* A float value of the graph's dtype that broadcasts with x. */
static ir_ref partner(gen *s, ir_ref x)
{
	for (int t = 0; t < 6; t++) {
		ir_ref y = s->pool[rnd(s, s->n)];
		const ir_node *a = &s->g->nodes[x], *b = &s->g->nodes[y];
		if (b->dtype != a->dtype)
			continue;
		ir_ref r = op(s, IR_OP_add, x, y, NULL); /* probe: broadcastable? */
		err = (sn_err){0};
		if (r != IR_NONE)
			return y;
	}
	return scalar(s, 0.5 + rnd(s, 4) * 0.25);
}

static void step(gen *s)
{
	ir_ref x = recent(s);
	const ir_node *xn = &s->g->nodes[x];
	int rk = xn->shape.rank;
	ir_attrs at;
	switch (rnd(s, 14)) {
	case 0: {
		static const ir_op u[] = {IR_OP_neg, IR_OP_abs, IR_OP_tanh, IR_OP_sigmoid, IR_OP_relu,
					  IR_OP_silu, IR_OP_sin, IR_OP_cos, IR_OP_gelu};
		ir_op o = u[rnd(s, SN_COUNT(u))];
		ir_attrs_init(o, &at);
		if (o == IR_OP_gelu && rnd(s, 2))
			at.approximate = IR_GELU_TANH;
		push(s, op(s, o, x, IR_NONE, &at));
		break;
	}
	case 1:
	case 2:
	case 3: {
		static const ir_op b[] = {IR_OP_add, IR_OP_sub, IR_OP_mul, IR_OP_max, IR_OP_min};
		push(s, op(s, b[rnd(s, SN_COUNT(b))], x, partner(s, x), NULL));
		break;
	}
	case 4: { /* where over a comparison */
		ir_ref y = partner(s, x);
		ir_ref c = op(s, rnd(s, 2) ? IR_OP_greater : IR_OP_less, x, y, NULL);
		if (c == IR_NONE)
			break;
		ir_ref v[3] = {c, x, rnd(s, 2) ? y : scalar(s, -0.75)};
		push(s, ir_add(s->g, IR_OP_where, v, 3, NULL, &err));
		break;
	}
	case 5: { /* a mask from iotas over the last two dims */
		if (rk < 2)
			break;
		ir_shape m = {2, {xn->shape.d[rk - 2], xn->shape.d[rk - 1]}};
		ir_ref r = ir_add_iota(s->g, IR_I64, &m, 0, &err), c = ir_add_iota(s->g, IR_I64, &m, 1, &err);
		ir_ref cm = op(s, IR_OP_greater, c, r, NULL);
		if (cm == IR_NONE)
			break;
		ir_ref v[3] = {cm, scalar(s, -1.5), x};
		push(s, ir_add(s->g, IR_OP_where, v, 3, NULL, &err));
		break;
	}
	case 6: { /* through another float dtype and back */
		static const ir_dtype ts[] = {IR_F32, IR_F16, IR_BF16};
		ir_attrs_init(IR_OP_cast, &at);
		at.dtype = ts[rnd(s, 3)];
		ir_ref c = op(s, IR_OP_cast, x, IR_NONE, &at);
		at.dtype = s->t;
		push(s, c == IR_NONE ? IR_NONE : op(s, IR_OP_cast, c, IR_NONE, &at));
		break;
	}
	case 7: { /* transpose */
		if (rk < 2)
			break;
		ir_attrs_init(IR_OP_transpose, &at);
		at.perm.n = rk;
		for (int d = 0; d < rk; d++)
			at.perm.v[d] = d;
		for (int d = rk - 1; d > 0; d--) {
			int j = rnd(s, d + 1);
			int64_t t = at.perm.v[d];
			at.perm.v[d] = at.perm.v[j];
			at.perm.v[j] = t;
		}
		push(s, op(s, IR_OP_transpose, x, IR_NONE, &at));
		break;
	}
	case 8: { /* reshape: merge the last two dims, or flatten all */
		ir_attrs_init(IR_OP_reshape, &at);
		if (rk >= 2 && rnd(s, 2)) {
			at.shape.n = rk - 1;
			for (int d = 0; d < rk - 2; d++)
				at.shape.v[d] = xn->shape.d[d];
			at.shape.v[rk - 2] = xn->shape.d[rk - 2] * xn->shape.d[rk - 1];
		} else {
			at.shape.n = 1;
			at.shape.v[0] = ir_numel(&xn->shape);
		}
		push(s, op(s, IR_OP_reshape, x, IR_NONE, &at));
		break;
	}
	case 9: { /* slice the first dim longer than 2 */
		for (int d = 0; d < rk; d++)
			if (xn->shape.d[d] > 2) {
				ir_attrs_init(IR_OP_slice, &at);
				at.starts.n = at.ends.n = at.axes.n = at.steps.n = 1;
				at.axes.v[0] = d;
				at.starts.v[0] = 1;
				at.ends.v[0] = xn->shape.d[d];
				at.steps.v[0] = rnd(s, 2) + 1;
				push(s, op(s, IR_OP_slice, x, IR_NONE, &at));
				break;
			}
		break;
	}
	case 10: { /* split the last dim in two */
		if (!rk || xn->shape.d[rk - 1] < 2)
			break;
		int64_t a = xn->shape.d[rk - 1] / 2;
		ir_attrs_init(IR_OP_split, &at);
		at.axis = rk - 1;
		at.sizes.n = 2;
		at.sizes.v[0] = a;
		at.sizes.v[1] = xn->shape.d[rk - 1] - a;
		at.index = rnd(s, 2);
		push(s, op(s, IR_OP_split, x, IR_NONE, &at));
		break;
	}
	case 11: { /* expand a dim of size 1, else add a leading one */
		ir_attrs_init(IR_OP_expand, &at);
		at.shape.n = rk + 1;
		at.shape.v[0] = 2;
		for (int d = 0; d < rk; d++)
			at.shape.v[d + 1] = xn->shape.d[d] == 1 ? 3 : xn->shape.d[d];
		push(s, op(s, IR_OP_expand, x, IR_NONE, &at));
		break;
	}
	default: /* a value read twice: combine two recent ones */
		push(s, op(s, IR_OP_mul, x, recent(s), NULL));
		break;
	}
}

static ir_shape rand_shape(gen *s)
{
	static const int64_t dims[] = {1, 2, 3, 5, 8, 17, 32};
	ir_shape sh = {1 + rnd(s, 4), {0}};
	for (int d = 0; d < sh.rank; d++)
		sh.d[d] = dims[rnd(s, SN_COUNT(dims))];
	return sh;
}

static int compile_sm, compile_fail;
static rt_nvrtc *nvrtc;

/* Lowers g (fused) and compiles every kernel of the plan. */
static bool compile_only(ir_graph *g, const char *label)
{
	cg_target t = {.sm = compile_sm};
	cg_plan *p = NULL;
	sn_err e = {0};
	if (getenv("SINTER_FUSE_PRINT")) { /* the graph, to look into a seed */
		sn_buf gb = {0};
		ir_print(g, &gb);
		printf("%s\n%s", label, gb.s ? gb.s : "");
		sn_buf_free(&gb);
	}
	bool ok = cg_lower(g, NULL, &t, &p, &e) == SN_OK;
	for (uint32_t k = 0; ok && k < p->nkerns; k++) {
		void *cubin = NULL;
		size_t size = 0;
		ok = rt_nvrtc_compile(nvrtc, p->kerns[k].name, p->kerns[k].src, compile_sm, &cubin, &size, NULL, &e) == SN_OK;
		free(cubin);
	}
	if (!ok) {
		printf("%-40s FAIL: %s\n", label, e.msg);
		compile_fail++;
	}
	cg_plan_free(p);
	ir_graph_free(g);
	return ok;
}

/* Graph seed: a random DAG, or a matrix product with its epilogue. */
static bool one(uint64_t seed)
{
	static const ir_dtype ts[] = {IR_F32, IR_BF16, IR_F16};
	gen s = {.g = ir_graph_new(), .rng = seed};
	if (!s.g)
		return false;
	s.t = ts[rnd(&s, 3)];
	char label[96];
	ir_ref out = IR_NONE;
	if (rnd(&s, 5) == 0) {
		/* act(x @ w + bias [+ residual]) */
		int64_t m = 1 + rnd(&s, 40), k = 8 * (1 + rnd(&s, 8)), n = 8 * (1 + rnd(&s, 8));
		ir_shape xs = {2, {m, k}}, ws = {2, {k, n}}, bs = {1, {n}}, rs = {2, {m, n}};
		ir_ref x = ir_add_input(s.g, "x", s.t, &xs, &err), w = ir_add_input(s.g, "w", s.t, &ws, &err);
		ir_ref b = ir_add_input(s.g, "b", s.t, &bs, &err);
		ir_ref y = op(&s, IR_OP_add, op(&s, IR_OP_matmul, x, w, NULL), b, NULL);
		if (rnd(&s, 2)) {
			ir_ref r = ir_add_input(s.g, "r", s.t, &rs, &err);
			y = rnd(&s, 2) ? op(&s, IR_OP_add, r, y, NULL) : op(&s, IR_OP_add, y, r, NULL);
		}
		ir_attrs at;
		int a = rnd(&s, 3);
		ir_attrs_init(IR_OP_gelu, &at);
		at.approximate = IR_GELU_TANH;
		out = a == 0 ? y : a == 1 ? op(&s, IR_OP_relu, y, IR_NONE, NULL) : op(&s, IR_OP_gelu, y, IR_NONE, &at);
		snprintf(label, sizeof label, "seed %llu gemm %s", (unsigned long long)seed, ir_dtype_name(s.t));
	} else {
		ir_shape sh = rand_shape(&s);
		int nin = 1 + rnd(&s, 3);
		for (int i = 0; i < nin; i++) {
			ir_shape si = sh;
			for (int d = 0; d < si.rank; d++)
				if (i && rnd(&s, 3) == 0)
					si.d[d] = 1; /* broadcasts */
			char name[16];
			snprintf(name, sizeof name, "x%d", i);
			push(&s, ir_add_input(s.g, name, s.t, &si, &err));
		}
		int steps = 3 + rnd(&s, 10);
		for (int i = 0; i < steps; i++)
			step(&s);
		out = s.pool[s.n - 1];
		int tail = rnd(&s, 6);
		if (tail == 0)
			out = op(&s, IR_OP_softmax, out, IR_NONE, NULL);
		else if (tail == 1 && out != IR_NONE) {
			/* a row of equal values (a broadcast scalar) would make
			 * layer_norm's x - mean rounding noise over sqrt(eps), which
			 * no tolerance compares: a full-shaped input is added first */
			ir_shape so = s.g->nodes[out].shape;
			ir_ref xn = ir_add_input(s.g, "xn", s.t, &so, &err);
			out = op(&s, IR_OP_layer_norm, op(&s, IR_OP_add, out, xn, NULL), IR_NONE, NULL);
		}
		if (out != IR_NONE && rnd(&s, 4) == 0 && s.n > 2)
			ir_add_output(s.g, s.pool[s.n - 2]); /* an intermediate is an output too */
		snprintf(label, sizeof label, "seed %llu %d ops %s", (unsigned long long)seed, s.n, ir_dtype_name(s.t));
	}
	if (out == IR_NONE || err.code) {
		printf("%-40s FAIL: builder: %s\n", label, err.msg);
		err = (sn_err){0};
		ir_graph_free(s.g);
		return false;
	}
	ir_add_output(s.g, out);
	if (compile_sm)
		return compile_only(s.g, label);
	return gpu_compare(s.g, s.t == IR_F32 ? 1e-5 : 2e-2, label);
}

/* ---- row groups: decomposed norms ---- */

/* $T: the dtype, $S: x's shape, $W: the reduced dims' shape, $A: axes */
static const char *const norm_srcs[][2] = {
	{"rms_norm", "func @main(%x: $T[$S], %w: $T[$W]) -> ($T[$S]) {\n"
		     "%two = const f32[] 2.0\n%eps = const f32[] 1e-06\n%h = cast(%x) dtype=f32\n"
		     "%p = pow(%h, %two)\n%v = reduce_mean(%p) axes=$A keepdims=true\n%a = add(%v, %eps)\n"
		     "%r = rsqrt(%a)\n%m = mul(%h, %r)\n%c = cast(%m) dtype=$T\n%y = mul(%w, %c)\nreturn %y\n}\n"},
	{"layer_norm", "func @main(%x: $T[$S], %w: $T[$W], %b: $T[$W]) -> ($T[$S]) {\n"
		       "%two = const f32[] 2.0\n%eps = const f32[] 1e-05\n%h = cast(%x) dtype=f32\n"
		       "%m = reduce_mean(%h) axes=$A keepdims=true\n%d = sub(%h, %m)\n%p = pow(%d, %two)\n"
		       "%v = reduce_mean(%p) axes=$A keepdims=true\n%a = add(%v, %eps)\n%r = rsqrt(%a)\n"
		       "%n = mul(%d, %r)\n%c = cast(%n) dtype=$T\n%cw = mul(%c, %w)\n%y = add(%cw, %b)\n"
		       "return %y\n}\n"},
	{"layer_norm_div", "func @main(%x: $T[$S]) -> ($T[$S]) {\n"
			   "%eps = const f32[] 1e-05\n%h = cast(%x) dtype=f32\n"
			   "%m = reduce_mean(%h) axes=$A keepdims=true\n%d = sub(%h, %m)\n%q = mul(%d, %d)\n"
			   "%v = reduce_mean(%q) axes=$A keepdims=true\n%a = add(%v, %eps)\n%r = sqrt(%a)\n"
			   "%n = div(%d, %r)\n%y = cast(%n) dtype=$T\nreturn %y\n}\n"},
	{"softmax", "func @main(%x: $T[$S]) -> ($T[$S]) {\n"
		    "%h = cast(%x) dtype=f32\n%m = reduce_max(%h) axes=$A keepdims=true\n%d = sub(%h, %m)\n"
		    "%e = exp(%d)\n%s = reduce_sum(%e) axes=$A keepdims=true\n%q = div(%e, %s)\n"
		    "%y = cast(%q) dtype=$T\nreturn %y\n}\n"},
	{"log_softmax", "func @main(%x: $T[$S]) -> ($T[$S]) {\n"
			"%h = cast(%x) dtype=f32\n%m = reduce_max(%h) axes=$A keepdims=true\n%d = sub(%h, %m)\n"
			"%e = exp(%d)\n%s = reduce_sum(%e) axes=$A keepdims=true\n%l = log(%s)\n%q = sub(%d, %l)\n"
			"%y = cast(%q) dtype=$T\nreturn %y\n}\n"},
	/* $S: x (NCHW), $W: its rows [N, groups, C/groups*H*W], $A: the
	 * channels' weight and bias shape [C,1,1] */
	{"group_norm", "func @main(%x: $T[$S], %w: f32[$A], %b: f32[$A]) -> ($T[$S]) {\n"
		       "%eps = const f32[] 1e-05\n%h = cast(%x) dtype=f32\n%g = reshape(%h) shape=[$W]\n"
		       "%m = reduce_mean(%g) axes=[-1] keepdims=true\n%d = sub(%g, %m)\n%q = mul(%d, %d)\n"
		       "%v = reduce_mean(%q) axes=[-1] keepdims=true\n%a = add(%v, %eps)\n%r = rsqrt(%a)\n"
		       "%n = mul(%d, %r)\n%n4 = reshape(%n) shape=[$S]\n%nw = mul(%n4, %w)\n%nb = add(%nw, %b)\n"
		       "%y = cast(%nb) dtype=$T\nreturn %y\n}\n"},
};

static int rows_fail;

/* tmpl with $T, $S, $W, $A replaced, behind the header. */
static char *norm_text(const char *tmpl, const char *const val[4])
{
	sn_buf b = {0};
	sn_buf_puts(&b, "sinter 1\n");
	for (const char *p = tmpl; *p; p++) {
		const char *k = p[0] == '$' ? strchr("TSWA", p[1]) : NULL;
		if (k && p[1]) {
			sn_buf_puts(&b, val[k - "TSWA"]);
			p++;
		} else {
			sn_buf_printf(&b, "%c", *p);
		}
	}
	return b.oom ? (sn_buf_free(&b), NULL) : b.s;
}

/* One decomposed norm: one kernel, then compiled (compile_sm) or compared. */
static void norm_case(int which, ir_dtype t, const char *shape, const char *wshape, const char *axes)
{
	const char *val[4] = {ir_dtype_name(t), shape, wshape, axes};
	char *src = norm_text(norm_srcs[which][1], val);
	char label[128];
	snprintf(label, sizeof label, "%s %s[%s] axes=%s", norm_srcs[which][0], val[0], shape, axes);
	ir_graph *g = NULL;
	sn_err e = {0};
	if (!src || sir_parse(src, strlen(src), "norm.sir", NULL, 0, &g, &e) != SN_OK) {
		printf("%-40s FAIL: %s\n", label, src ? e.msg : "out of memory");
		free(src);
		rows_fail++;
		return;
	}
	free(src);
	cg_target tg = {.sm = compile_sm ? compile_sm : gpu_device_sm()};
	cg_plan *p = NULL;
	uint32_t steps = cg_lower(g, NULL, &tg, &p, &e) == SN_OK ? p->nsteps : 0;
	cg_plan_free(p);
	if (steps != 1) {
		printf("%-40s FAIL: %u steps, not one row-group kernel %s\n", label, steps, e.msg);
		rows_fail++;
		ir_graph_free(g);
		return;
	}
	if (compile_sm) {
		if (compile_only(g, label))
			printf("%-40s compiled\n", label);
		return;
	}
	gpu_compare(g, t == IR_F32 ? 1e-5 : 2e-2, label);
}

static void norm_cases(void)
{
	static const char *const shapes[][3] = {
		{"2,7,64", "64", "[-1]"},       /* a warp per row, in registers */
		{"2,3,5,40", "5,40", "[-2,-1]"}, /* two axes */
		{"3,33,1000", "1000", "[-1]"},  /* a warp per row, read again */
		{"2,5,4096", "4096", "[-1]"},   /* a block per row, in registers */
		{"3,20000", "20000", "[-1]"},   /* a block per row, read again */
		{"1,1,777", "777", "[2]"},      /* one row */
	};
	static const char *const gn_shapes[][3] = {
		{"2,32,8,8", "2,4,512", "32,1,1"},       /* a warp per row, in registers */
		{"2,64,32,32", "2,8,8192", "64,1,1"},    /* a block per row, in registers */
		{"1,6,100,100", "1,3,20000", "6,1,1"},   /* a block per row, read again */
	};
	size_t gn = SN_COUNT(norm_srcs) - 1;
	for (size_t w = 0; w < gn; w++)
		for (size_t k = 0; k < SN_COUNT(shapes); k++)
			for (int d = 0; d < 2; d++)
				norm_case((int)w, d ? IR_BF16 : IR_F32, shapes[k][0], shapes[k][1], shapes[k][2]);
	for (size_t k = 0; k < SN_COUNT(gn_shapes); k++)
		for (int d = 0; d < 2; d++)
			norm_case((int)gn, d ? IR_BF16 : IR_F32, gn_shapes[k][0], gn_shapes[k][1], gn_shapes[k][2]);
}

int main(int argc, char **argv)
{
	bool rows_only = argc > 1 && !strcmp(argv[1], "rows");
	if (rows_only) {
		argv++;
		argc--;
	}
	long count = rows_only ? 0 : argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
	unsigned long long first = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
	compile_sm = rows_only ? (argc > 1 ? atoi(argv[1]) : 0) : argc > 3 ? atoi(argv[3]) : 0;
	if (compile_sm) {
		sn_err e = {0};
		if (rt_nvrtc_open(&nvrtc, &e) != SN_OK) {
			printf("skipped: no NVRTC (%s)\n", e.msg);
			return GPU_SKIP;
		}
		for (long i = 0; i < count; i++)
			one(first + (unsigned long long)i);
		if (rows_only)
			norm_cases();
		printf("fused random graphs: %ld compiled for sm_%d, %d failed\n", count, compile_sm, compile_fail);
		return compile_fail != 0 || rows_fail != 0;
	}
	if (!gpu_available())
		return GPU_SKIP;
	for (long i = 0; i < count; i++)
		one(first + (unsigned long long)i);
	norm_cases();
	return gpu_done() || rows_fail;
}
