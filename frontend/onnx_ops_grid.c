/* onnx_ops_grid.c: ONNX GridSample (4-d), which sinter has no IR op for,
 * as index arithmetic on the grid, a gather_elements of each corner from
 * the input seen as [N, C, H*W], and a weighted sum. The arithmetic follows
 * onnxruntime's (grid_sample.cc) step for step, in the input's type. */
#include "onnx_build.h"

typedef enum { PAD_ZEROS, PAD_BORDER, PAD_REFLECTION } grid_pad;

typedef struct grid {
	ir_dtype t;
	grid_pad pad;
	bool align;
	int64_t N, C, H, W, Ho, Wo; /* N may be a symbol */
	ir_ref xf;                  /* the input as [N, C, H*W] */
} grid;

static ir_ref num(ox_ctx *c, const grid *g, double v) { return ox_scalar(c, g->t, v); }

static ir_ref bin(ox_ctx *c, const onnx_node *nd, ir_op op, ir_ref a, ir_ref b) { return emit2(c, nd, op, a, b); }

static ir_ref clamp(ox_ctx *c, const onnx_node *nd, ir_ref x, double lo, double hi)
{
	ir_attrs a;
	ir_attrs_init(IR_OP_clamp, &a);
	a.min = lo;
	a.max = hi;
	return emit1(c, nd, IR_OP_clamp, x, &a);
}

/* onnxruntime's GsReflect: v outside [lo, hi] folded back into it by
 * reflections at the ends (v inside is kept exactly). */
static ir_ref reflect(ox_ctx *c, const onnx_node *nd, const grid *g, ir_ref v, double lo, double hi)
{
	double r = hi - lo;
	if (r <= 0)
		return emit2(c, nd, IR_OP_add, emit2(c, nd, IR_OP_mul, v, num(c, g, 0)), num(c, g, lo));
	/* y = (v - lo) mod 2r in [0, 2r); 2r - y past r; plus lo */
	ir_attrs ma;
	ir_attrs_init(IR_OP_mod, &ma);
	ir_ref in[2] = {bin(c, nd, IR_OP_sub, v, num(c, g, lo)), num(c, g, 2 * r)};
	ir_ref y = in[0] == IR_NONE || in[1] == IR_NONE ? IR_NONE : ox_emit(c, nd, IR_OP_mod, in, 2, &ma);
	y = where3(c, nd, bin(c, nd, IR_OP_greater, y, num(c, g, r)), bin(c, nd, IR_OP_sub, num(c, g, 2 * r), y), y);
	ir_ref f = bin(c, nd, IR_OP_add, y, num(c, g, lo));
	ir_ref out = where3(c, nd, bin(c, nd, IR_OP_less, v, num(c, g, lo)), ox_scalar(c, IR_BOOL, 1),
			    bin(c, nd, IR_OP_greater, v, num(c, g, hi)));
	return where3(c, nd, out, f, v);
}

/* The corner or nearest pixel at integral coordinates (yi, xi) [N, Ho, Wo]:
 * [N, C, Ho, Wo], zero where the zeros padding finds it outside. Border and
 * reflection coordinates are in range already. */
static ir_ref pixel(ox_ctx *c, const onnx_node *nd, const grid *g, ir_ref yi, ir_ref xi)
{
	ir_ref valid = IR_NONE;
	if (g->pad == PAD_ZEROS) {
		ir_ref no = ox_scalar(c, IR_BOOL, 0);
		ir_ref okx = where3(c, nd, bin(c, nd, IR_OP_less, xi, num(c, g, 0)), no,
				    bin(c, nd, IR_OP_less, xi, num(c, g, (double)g->W)));
		ir_ref oky = where3(c, nd, bin(c, nd, IR_OP_less, yi, num(c, g, 0)), no,
				    bin(c, nd, IR_OP_less, yi, num(c, g, (double)g->H)));
		valid = where3(c, nd, okx, oky, no);
	}
	/* in range for the gather in every mode (the zeros mode masks after) */
	xi = clamp(c, nd, xi, 0, (double)(g->W - 1));
	yi = clamp(c, nd, yi, 0, (double)(g->H - 1));
	ir_ref flat = bin(c, nd, IR_OP_add, bin(c, nd, IR_OP_mul, yi, num(c, g, (double)g->W)), xi);
	ir_attrs ca;
	ir_attrs_init(IR_OP_cast, &ca);
	ca.dtype = IR_I64;
	flat = emit1(c, nd, IR_OP_cast, flat, &ca);
	ir_shape s3 = {3, {g->N, 1, g->Ho * g->Wo}};
	flat = reshape(c, nd, flat, &s3);
	ir_attrs ea;
	ir_attrs_init(IR_OP_expand, &ea);
	ea.shape = (ir_ints){3, {g->N, g->C, g->Ho * g->Wo}};
	flat = emit1(c, nd, IR_OP_expand, flat, &ea);
	ir_attrs ga;
	ir_attrs_init(IR_OP_gather_elements, &ga);
	ga.axis = 2;
	ir_ref p = IR_NONE;
	if (flat != IR_NONE && g->xf != IR_NONE)
		p = ox_emit(c, nd, IR_OP_gather_elements, (ir_ref[2]){g->xf, flat}, 2, &ga);
	ir_shape s4 = {4, {g->N, g->C, g->Ho, g->Wo}};
	p = reshape(c, nd, p, &s4);
	if (valid != IR_NONE) {
		ir_attrs ua;
		ir_attrs_init(IR_OP_unsqueeze, &ua);
		ua.axes = (ir_ints){1, {1}};
		p = where3(c, nd, emit1(c, nd, IR_OP_unsqueeze, valid, &ua), p, num(c, g, 0));
	}
	return p;
}

/* A [N, Ho, Wo] weight as [N, 1, Ho, Wo]. */
static ir_ref wt(ox_ctx *c, const onnx_node *nd, ir_ref w)
{
	ir_attrs ua;
	ir_attrs_init(IR_OP_unsqueeze, &ua);
	ua.axes = (ir_ints){1, {1}};
	return emit1(c, nd, IR_OP_unsqueeze, w, &ua);
}

int ox_tr_grid_sample(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0), gr = ox_need(c, nd, 1);
	if (x == IR_NONE || gr == IR_NONE || c->e->code)
		return c->e->code;
	ir_shape xs = shape_of(c, x), gs = shape_of(c, gr);
	if (xs.rank == 5)
		return ox_fail(c, nd, "volumetric (5-d) GridSample is not supported, only 4-d inputs");
	if (xs.rank != 4 || gs.rank != 4 || gs.d[3] != 2)
		return ox_fail(c, nd, "expects X [N, C, H, W] and grid [N, H_out, W_out, 2]");
	bool nearest = false;
	if (ox_as_is(nd, "mode", "linear", "nearest"))
		nearest = true;
	else if (ox_as_is(nd, "mode", "linear", "cubic") || ox_as_is(nd, "mode", "linear", "bicubic"))
		return ox_fail(c, nd, "mode cubic (bicubic) is not supported; linear (bilinear) and nearest are");
	else if (!ox_as_is(nd, "mode", "linear", "linear") && !ox_as_is(nd, "mode", "linear", "bilinear"))
		return ox_fail(c, nd, "mode must be linear (bilinear), nearest or cubic");
	grid g = {.t = dtype_of(c, x), .align = ox_ai(nd, "align_corners", 0) != 0};
	if (ox_as_is(nd, "padding_mode", "zeros", "zeros"))
		g.pad = PAD_ZEROS;
	else if (ox_as_is(nd, "padding_mode", "zeros", "border"))
		g.pad = PAD_BORDER;
	else if (ox_as_is(nd, "padding_mode", "zeros", "reflection"))
		g.pad = PAD_REFLECTION;
	else
		return ox_fail(c, nd, "padding_mode must be zeros, border or reflection");
	if (!ir_dtype_is_float(g.t) || !ir_dtype_is_float(dtype_of(c, gr)))
		return ox_fail(c, nd, "X and grid must be floating-point");
	g.N = xs.d[0], g.C = xs.d[1], g.H = xs.d[2], g.W = xs.d[3], g.Ho = gs.d[1], g.Wo = gs.d[2];
	if (g.C < 0 || g.H < 0 || g.W < 0 || g.Ho < 0 || g.Wo < 0)
		return ox_fail(c, nd, "needs known channel and spatial dims of X and grid; bind them to values when "
				      "loading the model");
	if (gs.d[0] != g.N)
		return ox_fail(c, nd, "grid's batch differs from X's");
	if (g.H == 0 || g.W == 0 || g.H * g.W > ((int64_t)1 << 24) || g.Ho * g.Wo > ((int64_t)1 << 31))
		return ox_fail(c, nd, "input of %lld x %lld pixels: between 1 and 2^24 are supported", (long long)g.H,
			       (long long)g.W);
	if (dtype_of(c, gr) != g.t) {
		ir_attrs ca;
		ir_attrs_init(IR_OP_cast, &ca);
		ca.dtype = g.t;
		gr = emit1(c, nd, IR_OP_cast, gr, &ca);
	}
	ir_shape xf = {3, {g.N, g.C, g.H * g.W}};
	g.xf = reshape(c, nd, x, &xf);
	/* grid[..., 0] is x (along W), grid[..., 1] is y (along H) */
	ir_ref co[2];
	int64_t len[2] = {g.W, g.H};
	for (int k = 0; k < 2; k++) {
		ir_attrs sa;
		ir_attrs_init(IR_OP_slice, &sa);
		sa.axes = (ir_ints){1, {3}};
		sa.starts = (ir_ints){1, {k}};
		sa.ends = (ir_ints){1, {k + 1}};
		ir_attrs qa;
		ir_attrs_init(IR_OP_squeeze, &qa);
		qa.axes = (ir_ints){1, {3}};
		ir_ref v = emit1(c, nd, IR_OP_squeeze, emit1(c, nd, IR_OP_slice, gr, &sa), &qa);
		double L = (double)len[k];
		/* GsDenormalize: ((v + 1) / 2) * (L - 1), or ((v + 1) * L - 1) / 2 */
		ir_ref v1 = bin(c, nd, IR_OP_add, v, num(c, &g, 1));
		if (g.align)
			v = bin(c, nd, IR_OP_mul, bin(c, nd, IR_OP_div, v1, num(c, &g, 2)), num(c, &g, L - 1));
		else
			v = bin(c, nd, IR_OP_div, bin(c, nd, IR_OP_sub, bin(c, nd, IR_OP_mul, v1, num(c, &g, L)), num(c, &g, 1)),
				num(c, &g, 2));
		if (nearest)
			v = emit1(c, nd, IR_OP_round, v, NULL); /* nearbyint: ties to even */
		double lo = g.align ? 0 : -0.5, hi = g.align ? L - 1 : L - 0.5;
		if (g.pad == PAD_BORDER)
			v = clamp(c, nd, v, 0, L - 1);
		else if (g.pad == PAD_REFLECTION)
			v = reflect(c, nd, &g, v, lo, hi);
		co[k] = v;
	}
	if (co[0] == IR_NONE || co[1] == IR_NONE)
		return c->e->code;
	if (nearest)
		return bind(c, nd, pixel(c, nd, &g, co[1], co[0]));
	/* corners x1 = floor(x), x2 = x1 + 1; weights dx1 = x - x1, dx2 = x2 - x */
	ir_ref lo[2], hi[2], d1[2], d2[2];
	for (int k = 0; k < 2; k++) {
		double L = (double)len[k];
		lo[k] = emit1(c, nd, IR_OP_floor, co[k], NULL);
		hi[k] = bin(c, nd, IR_OP_add, lo[k], num(c, &g, 1));
		d1[k] = wt(c, nd, bin(c, nd, IR_OP_sub, co[k], lo[k]));
		d2[k] = wt(c, nd, bin(c, nd, IR_OP_sub, hi[k], co[k]));
		if (g.pad == PAD_REFLECTION) { /* PixelAtGrid reflects the corners too */
			double rlo = g.align ? 0 : -0.5, rhi = g.align ? L - 1 : L - 0.5;
			lo[k] = reflect(c, nd, &g, lo[k], rlo, rhi);
			hi[k] = reflect(c, nd, &g, hi[k], rlo, rhi);
		}
	}
	ir_ref p11 = pixel(c, nd, &g, lo[1], lo[0]), p12 = pixel(c, nd, &g, lo[1], hi[0]),
	       p21 = pixel(c, nd, &g, hi[1], lo[0]), p22 = pixel(c, nd, &g, hi[1], hi[0]);
	/* dy2 * (dx2 * p11 + dx1 * p12) + dy1 * (dx2 * p21 + dx1 * p22) */
	ir_ref top = bin(c, nd, IR_OP_add, bin(c, nd, IR_OP_mul, d2[0], p11), bin(c, nd, IR_OP_mul, d1[0], p12));
	ir_ref bot = bin(c, nd, IR_OP_add, bin(c, nd, IR_OP_mul, d2[0], p21), bin(c, nd, IR_OP_mul, d1[0], p22));
	return bind(c, nd, bin(c, nd, IR_OP_add, bin(c, nd, IR_OP_mul, d2[1], top), bin(c, nd, IR_OP_mul, d1[1], bot)));
}
