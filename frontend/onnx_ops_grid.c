/* onnx_ops_grid.c: ONNX GridSample (4-d and 5-d), which sinter has no IR op
 * for, as index arithmetic on the grid, a gather_elements of each corner
 * from the input seen as [N, C, H*W] (or [N, C, D*H*W]), and a weighted
 * sum. The arithmetic follows onnxruntime's (grid_sample.cc) step for
 * step, in f32 (16-bit inputs are cast to it and the result back). */
#include "onnx_build.h"

typedef enum { PAD_ZEROS, PAD_BORDER, PAD_REFLECTION } grid_pad;

typedef struct grid {
	ir_dtype t;
	grid_pad pad;
	bool align;
	int nsp;                 /* spatial dims: 2 or 3 */
	int64_t N, C;            /* N may be a symbol */
	int64_t len[3];          /* input size along coordinate k: W, H, D (the grid's order) */
	int64_t in_px, out_px;   /* input and output pixels (voxels) per channel */
	ir_shape out;            /* [N, C, (Do,) Ho, Wo] */
	ir_ref xf;               /* the input as [N, C, in_px] */
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

/* A [N, (Do,) Ho, Wo] value as [N, 1, (Do,) Ho, Wo]. */
static ir_ref wt(ox_ctx *c, const onnx_node *nd, ir_ref w)
{
	ir_attrs ua;
	ir_attrs_init(IR_OP_unsqueeze, &ua);
	ua.axes = (ir_ints){1, {1}};
	return emit1(c, nd, IR_OP_unsqueeze, w, &ua);
}

/* The pixel at integral coordinates co[k] ([N, (Do,) Ho, Wo] each, x
 * first): [N, C, (Do,) Ho, Wo], zero where the zeros padding finds it
 * outside. Border and reflection coordinates are in range already. */
static ir_ref pixel(ox_ctx *c, const onnx_node *nd, const grid *g, const ir_ref *co)
{
	ir_ref valid = IR_NONE, no = ox_scalar(c, IR_BOOL, 0), flat = IR_NONE;
	for (int k = g->nsp - 1; k >= 0; k--) {
		double L = (double)g->len[k];
		if (g->pad == PAD_ZEROS) {
			ir_ref ok = where3(c, nd, bin(c, nd, IR_OP_less, co[k], num(c, g, 0)), no,
					   bin(c, nd, IR_OP_less, co[k], num(c, g, L)));
			valid = valid == IR_NONE ? ok : where3(c, nd, valid, ok, no);
		}
		/* in range for the gather in every mode (the zeros mode masks after) */
		ir_ref i = clamp(c, nd, co[k], 0, L - 1);
		flat = flat == IR_NONE ? i : bin(c, nd, IR_OP_add, bin(c, nd, IR_OP_mul, flat, num(c, g, L)), i);
	}
	ir_attrs ca;
	ir_attrs_init(IR_OP_cast, &ca);
	ca.dtype = IR_I64;
	flat = emit1(c, nd, IR_OP_cast, flat, &ca);
	ir_shape s3 = {3, {g->N, 1, g->out_px}};
	flat = reshape(c, nd, flat, &s3);
	ir_attrs ea;
	ir_attrs_init(IR_OP_expand, &ea);
	ea.shape = (ir_ints){3, {g->N, g->C, g->out_px}};
	flat = emit1(c, nd, IR_OP_expand, flat, &ea);
	ir_attrs ga;
	ir_attrs_init(IR_OP_gather_elements, &ga);
	ga.axis = 2;
	ir_ref p = IR_NONE;
	if (flat != IR_NONE && g->xf != IR_NONE)
		p = ox_emit(c, nd, IR_OP_gather_elements, (ir_ref[2]){g->xf, flat}, 2, &ga);
	p = reshape(c, nd, p, &g->out);
	if (valid != IR_NONE)
		p = where3(c, nd, wt(c, nd, valid), p, num(c, g, 0));
	return p;
}

/* The (bi/tri)linear blend over coordinates k..0 of the corners whose
 * coordinates above k are fixed in pick: d2 * (blend at the low corner) +
 * d1 * (blend at the high corner), innermost along x, as onnxruntime
 * writes it. */
static ir_ref blend(ox_ctx *c, const onnx_node *nd, const grid *g, int k, ir_ref (*corner)[2], ir_ref (*d)[2],
		    ir_ref *pick)
{
	ir_ref v[2];
	for (int s = 0; s < 2; s++) {
		pick[k] = corner[k][s];
		v[s] = k == 0 ? pixel(c, nd, g, pick) : blend(c, nd, g, k - 1, corner, d, pick);
	}
	return bin(c, nd, IR_OP_add, bin(c, nd, IR_OP_mul, d[k][1], v[0]), bin(c, nd, IR_OP_mul, d[k][0], v[1]));
}

/* Keys' cubic convolution weights (a = -0.75, onnxruntime's
 * GsGetCubicCoeffs) of the taps at -1, 0, 1, 2 from the fraction t. */
static void cubic_coeffs(ox_ctx *c, const onnx_node *nd, const grid *g, ir_ref t, ir_ref *w)
{
	const double A = -0.75;
	ir_ref one = num(c, g, 1), two = num(c, g, 2);
	/* the outer taps: ((A u - 5A) u + 8A) u - 4A at u = t + 1 and 2 - t */
	ir_ref u[2] = {bin(c, nd, IR_OP_add, t, one), bin(c, nd, IR_OP_sub, two, t)};
	for (int k = 0; k < 2; k++) {
		ir_ref v = bin(c, nd, IR_OP_sub, bin(c, nd, IR_OP_mul, num(c, g, A), u[k]), num(c, g, 5 * A));
		v = bin(c, nd, IR_OP_add, bin(c, nd, IR_OP_mul, v, u[k]), num(c, g, 8 * A));
		w[k ? 3 : 0] = bin(c, nd, IR_OP_sub, bin(c, nd, IR_OP_mul, v, u[k]), num(c, g, 4 * A));
	}
	/* the inner ones: ((A + 2) v - (A + 3)) v v + 1 at v = t and 1 - t */
	ir_ref v[2] = {t, bin(c, nd, IR_OP_sub, one, t)};
	for (int k = 0; k < 2; k++) {
		ir_ref q = bin(c, nd, IR_OP_sub, bin(c, nd, IR_OP_mul, num(c, g, A + 2), v[k]), num(c, g, A + 3));
		q = bin(c, nd, IR_OP_mul, bin(c, nd, IR_OP_mul, q, v[k]), v[k]);
		w[k ? 2 : 1] = bin(c, nd, IR_OP_add, q, one);
	}
}

/* Bicubic (4-d): the 4 x 4 taps around floor(x), floor(y), each padded as
 * onnxruntime's PixelAtGrid pads (zeros: masked; border: clamped;
 * reflection: the index reflected), blended along x per row, then along y. */
static ir_ref bicubic(ox_ctx *c, const onnx_node *nd, const grid *g, const ir_ref *co)
{
	ir_ref tap[2][4], w[2][4];
	for (int k = 0; k < 2; k++) {
		double L = (double)g->len[k];
		ir_ref f = emit1(c, nd, IR_OP_floor, co[k], NULL);
		ir_ref t = bin(c, nd, IR_OP_sub, co[k], f);
		cubic_coeffs(c, nd, g, t, w[k]);
		for (int j = 0; j < 4; j++) {
			w[k][j] = wt(c, nd, w[k][j]);
			tap[k][j] = j == 1 ? f : bin(c, nd, IR_OP_add, f, num(c, g, j - 1));
			if (g->pad == PAD_REFLECTION)
				tap[k][j] = reflect(c, nd, g, tap[k][j], g->align ? 0 : -0.5, g->align ? L - 1 : L - 0.5);
		}
	}
	ir_ref y = IR_NONE;
	for (int i = 0; i < 4; i++) {
		ir_ref row = IR_NONE;
		for (int j = 0; j < 4; j++) {
			ir_ref p = bin(c, nd, IR_OP_mul, w[0][j], pixel(c, nd, g, (ir_ref[2]){tap[0][j], tap[1][i]}));
			row = row == IR_NONE ? p : bin(c, nd, IR_OP_add, row, p);
		}
		ir_ref v = bin(c, nd, IR_OP_mul, w[1][i], row);
		y = y == IR_NONE ? v : bin(c, nd, IR_OP_add, y, v);
	}
	return y;
}

/* y cast to t (nothing when it is of t already). */
static ir_ref as_type(ox_ctx *c, const onnx_node *nd, ir_ref y, ir_dtype t)
{
	if (y == IR_NONE || dtype_of(c, y) == t)
		return y;
	ir_attrs ca;
	ir_attrs_init(IR_OP_cast, &ca);
	ca.dtype = t;
	return emit1(c, nd, IR_OP_cast, y, &ca);
}

int ox_tr_grid_sample(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0), gr = ox_need(c, nd, 1);
	if (x == IR_NONE || gr == IR_NONE || c->e->code)
		return c->e->code;
	ir_shape xs = shape_of(c, x), gs = shape_of(c, gr);
	int nsp = xs.rank - 2;
	if ((nsp != 2 && nsp != 3) || gs.rank != xs.rank || gs.d[nsp + 1] != nsp)
		return ox_fail(c, nd, "expects X [N, C, H, W] and grid [N, H_out, W_out, 2], or X [N, C, D, H, W] "
				      "and grid [N, D_out, H_out, W_out, 3]");
	bool nearest = false, cubic = false;
	if (ox_as_is(nd, "mode", "linear", "nearest"))
		nearest = true;
	else if (ox_as_is(nd, "mode", "linear", "cubic") || ox_as_is(nd, "mode", "linear", "bicubic"))
		cubic = true;
	else if (!ox_as_is(nd, "mode", "linear", "linear") && !ox_as_is(nd, "mode", "linear", "bilinear"))
		return ox_fail(c, nd, "mode must be linear (bilinear), nearest or cubic");
	if (cubic && nsp == 3)
		return ox_fail(c, nd, "mode cubic is defined for 4-d inputs only (onnxruntime refuses it for 5-d)");
	grid g = {.t = dtype_of(c, x), .align = ox_ai(nd, "align_corners", 0) != 0, .nsp = nsp};
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
	g.N = xs.d[0], g.C = xs.d[1];
	if (gs.d[0] != g.N)
		return ox_fail(c, nd, "grid's batch differs from X's");
	g.in_px = g.out_px = 1;
	g.out = (ir_shape){xs.rank, {g.N, g.C}};
	bool known = g.C >= 0;
	for (int k = 0; k < nsp; k++) {
		g.len[k] = xs.d[xs.rank - 1 - k];
		g.out.d[2 + k] = gs.d[1 + k];
		known &= g.len[k] >= 0 && gs.d[1 + k] >= 0;
	}
	if (!known)
		return ox_fail(c, nd, "needs known channel and spatial dims of X and grid; bind them to values when "
				      "loading the model");
	for (int k = 0; k < nsp; k++) { /* each factor below 2^24 and each product checked: no overflow */
		if (g.len[k] == 0 || g.len[k] > ((int64_t)1 << 24) || g.out.d[2 + k] > ((int64_t)1 << 24))
			return ox_fail(c, nd, "a spatial dim of %lld: between 1 and 2^24 are supported",
				       (long long)g.len[k]);
		g.in_px *= g.len[k];
		g.out_px *= g.out.d[2 + k];
		if (g.in_px > ((int64_t)1 << 24) || g.out_px > ((int64_t)1 << 31))
			return ox_fail(c, nd, "an input of more than 2^24 pixels or an output of more than 2^31: not "
					      "supported (the flat index is computed in f32)");
	}
	/* 16-bit floats hold integers exactly only up to 2^11 (f16) or 2^8
	 * (bf16): coordinates, indices, weights and the blend are computed in
	 * f32, and the result is cast back */
	ir_dtype out_t = g.t;
	if (g.t != IR_F32) {
		ir_attrs ca;
		ir_attrs_init(IR_OP_cast, &ca);
		ca.dtype = g.t = IR_F32;
		x = emit1(c, nd, IR_OP_cast, x, &ca);
	}
	if (dtype_of(c, gr) != g.t) {
		ir_attrs ca;
		ir_attrs_init(IR_OP_cast, &ca);
		ca.dtype = g.t;
		gr = emit1(c, nd, IR_OP_cast, gr, &ca);
	}
	ir_shape xf = {3, {g.N, g.C, g.in_px}};
	g.xf = reshape(c, nd, x, &xf);
	/* grid[..., k] is the coordinate along the input's spatial dim
	 * counted from the last: x (W), y (H), z (D) */
	ir_ref co[3];
	for (int k = 0; k < nsp; k++) {
		ir_attrs sa;
		ir_attrs_init(IR_OP_slice, &sa);
		sa.axes = (ir_ints){1, {nsp + 1}};
		sa.starts = (ir_ints){1, {k}};
		sa.ends = (ir_ints){1, {k + 1}};
		ir_attrs qa;
		ir_attrs_init(IR_OP_squeeze, &qa);
		qa.axes = (ir_ints){1, {nsp + 1}};
		ir_ref v = emit1(c, nd, IR_OP_squeeze, emit1(c, nd, IR_OP_slice, gr, &sa), &qa);
		double L = (double)g.len[k];
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
		if (cubic)
			; /* each tap is padded (PixelAtGrid), not the coordinate */
		else if (g.pad == PAD_BORDER)
			v = clamp(c, nd, v, 0, L - 1);
		else if (g.pad == PAD_REFLECTION)
			v = reflect(c, nd, &g, v, lo, hi);
		co[k] = v;
		if (v == IR_NONE)
			return c->e->code;
	}
	if (nearest)
		return bind(c, nd, as_type(c, nd, pixel(c, nd, &g, co), out_t));
	if (cubic)
		return bind(c, nd, as_type(c, nd, bicubic(c, nd, &g, co), out_t));
	/* corners x1 = floor(x), x2 = x1 + 1; weights dx1 = x - x1, dx2 = x2 - x */
	ir_ref corner[3][2], d[3][2], pick[3];
	for (int k = 0; k < nsp; k++) {
		double L = (double)g.len[k];
		corner[k][0] = emit1(c, nd, IR_OP_floor, co[k], NULL);
		corner[k][1] = bin(c, nd, IR_OP_add, corner[k][0], num(c, &g, 1));
		d[k][0] = wt(c, nd, bin(c, nd, IR_OP_sub, co[k], corner[k][0]));
		d[k][1] = wt(c, nd, bin(c, nd, IR_OP_sub, corner[k][1], co[k]));
		if (g.pad == PAD_REFLECTION) { /* PixelAtGrid reflects the corners too */
			double rlo = g.align ? 0 : -0.5, rhi = g.align ? L - 1 : L - 0.5;
			for (int s = 0; s < 2; s++)
				corner[k][s] = reflect(c, nd, &g, corner[k][s], rlo, rhi);
		}
	}
	/* dy2 * (dx2 * p11 + dx1 * p12) + dy1 * (dx2 * p21 + dx1 * p22) in 2-d */
	return bind(c, nd, as_type(c, nd, blend(c, nd, &g, nsp - 1, corner, d, pick), out_t));
}
