/* onnx_ops_conv_transpose.c: ONNX ConvTranspose, which sinter has no IR op
 * for, written as a convolution of the zero-stuffed input with the
 * flipped weight. */
#include "onnx_build.h"

/* ---- ConvTranspose ---- */

static ir_ref pad_op(ox_ctx *c, const onnx_node *nd, ir_ref x, const int64_t *pb, const int64_t *pe)
{
	/* negative pads crop (a slice), positive ones pad with zeros */
	ir_shape s = shape_of(c, x);
	int r = s.rank;
	ir_attrs pa, sa;
	ir_attrs_init(IR_OP_pad, &pa);
	ir_attrs_init(IR_OP_slice, &sa);
	pa.pad.n = 2 * r;
	bool anypad = false;
	for (int i = 0; i < r; i++) {
		pa.pad.v[i] = pb[i] > 0 ? pb[i] : 0;
		pa.pad.v[r + i] = pe[i] > 0 ? pe[i] : 0;
		anypad |= pb[i] > 0 || pe[i] > 0;
		if (pb[i] < 0 || pe[i] < 0) {
			sa.axes.v[sa.axes.n] = i;
			sa.starts.v[sa.axes.n] = pb[i] < 0 ? -pb[i] : 0;
			sa.ends.v[sa.axes.n] = pe[i] < 0 ? s.d[i] + pe[i] : INT64_MAX;
			sa.axes.n++;
		}
	}
	sa.starts.n = sa.ends.n = sa.axes.n;
	if (sa.axes.n)
		x = emit1(c, nd, IR_OP_slice, x, &sa);
	if (anypad)
		x = emit1(c, nd, IR_OP_pad, x, &pa);
	return x;
}

/* ConvTranspose (1-d and 2-d): the input zero-stuffed by the stride (a
 * unit dim after each spatial dim, padded with stride - 1 zeros, folded),
 * padded by dilation * (kernel - 1) - pad on each side (plus
 * output_padding at the end), then a stride-1 convolution with the weight
 * [C, O/g, kh, kw] regrouped to [O, C/g, kh, kw] and flipped in space. */
int ox_tr_conv_transpose(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0), w = ox_need(c, nd, 1), b = ox_in(c, nd, 2);
	if (x == IR_NONE || w == IR_NONE || c->e->code)
		return c->e->code;
	int nsp = shape_of(c, x).rank - 2;
	if (nsp == 3)
		return ox_tr_conv3d(c, nd); /* onnx_ops_conv3d.c */
	if ((nsp != 1 && nsp != 2) || shape_of(c, w).rank != nsp + 2)
		return ox_fail(c, nd, "only 1-d, 2-d and 3-d transposed convolutions are supported");
	ir_attrs ua;
	ir_attrs_init(IR_OP_unsqueeze, &ua);
	ua.axes = (ir_ints){1, {2}};
	if (nsp == 1 && ((x = emit1(c, nd, IR_OP_unsqueeze, x, &ua)) == IR_NONE ||
			 (w = emit1(c, nd, IR_OP_unsqueeze, w, &ua)) == IR_NONE))
		return c->e->code;
	ir_shape xs = shape_of(c, x), ws = shape_of(c, w);
	int64_t G = ox_ai(nd, "group", 1), C = xs.d[1];
	if (C < 0 || xs.d[2] < 0 || xs.d[3] < 0)
		return ox_fail(c, nd, "channel and spatial dims must be known; bind them to values when loading the model");
	if (G < 1 || C % G || ws.d[0] != C)
		return ox_fail(c, nd, "the weight [C, O/group, kh, kw] does not match the input's %lld channels",
			       (long long)C);
	int64_t k[2] = {ws.d[2], ws.d[3]}, s[2] = {1, 1}, d[2] = {1, 1}, op[2] = {0, 0}, p[4] = {0, 0, 0, 0};
	ir_ints v;
	const char *names[] = {"strides", "dilations", "output_padding"};
	int64_t *dst[] = {s, d, op};
	for (int i = 0; i < 3; i++) {
		int got = ox_aints(c, nd, names[i], &v);
		if (got < 0)
			return c->e->code;
		if (got && v.n != nsp)
			return ox_fail(c, nd, "%s has %d entries, expected %d", names[i], v.n, nsp);
		for (int j = 0; got && j < nsp; j++)
			dst[i][j + 2 - nsp] = v.v[j];
	}
	for (int j = 0; j < 2; j++)
		if (s[j] < 1 || d[j] < 1 || op[j] < 0 || s[j] > 4096 || d[j] > 4096 || op[j] >= (s[j] > d[j] ? s[j] : d[j]))
			return ox_fail(c, nd, "strides, dilations or output_padding out of range");
	bool same_upper = ox_as_is(nd, "auto_pad", "NOTSET", "SAME_UPPER"),
	     same_lower = ox_as_is(nd, "auto_pad", "NOTSET", "SAME_LOWER");
	int got_os = ox_aints(c, nd, "output_shape", &v);
	if (got_os < 0)
		return c->e->code;
	if (got_os)
		for (int j = 0; j < v.n; j++)
			if (v.v[j] < 0 || v.v[j] > ((int64_t)1 << 30))
				return ox_fail(c, nd, "output_shape entry %lld is out of range", (long long)v.v[j]);
	if (xs.d[2] > ((int64_t)1 << 30) || xs.d[3] > ((int64_t)1 << 30) || k[0] > 4096 || k[1] > 4096)
		return ox_fail(c, nd, "spatial dims or kernel too large");
	if (got_os || same_upper || same_lower) {
		for (int j = 0; j < 2; j++) {
			int64_t in = xs.d[2 + j];
			int64_t want = got_os ? (j + nsp >= 2 ? v.v[v.n - 2 + j] : 1) : in * s[j];
			if (got_os && v.n < nsp)
				return ox_fail(c, nd, "output_shape has %d entries, expected %d", v.n, nsp);
			/* a negative total (a larger output) pads the end: floor division */
			int64_t total = s[j] * (in - 1) + op[j] + ((k[j] - 1) * d[j] + 1) - want;
			int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
			p[j] = same_upper ? half : total - half;
			p[j + 2] = total - p[j];
		}
	} else if (!ox_as_is(nd, "auto_pad", "NOTSET", "NOTSET") && !ox_as_is(nd, "auto_pad", "NOTSET", "VALID")) {
		return ox_fail(c, nd, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID");
	} else {
		int got = ox_aints(c, nd, "pads", &v);
		if (got < 0)
			return c->e->code;
		if (got && v.n != 2 * nsp)
			return ox_fail(c, nd, "pads has %d entries, expected %d", v.n, 2 * nsp);
		for (int j = 0; got && j < 2 * nsp; j++)
			if (v.v[j] < -((int64_t)1 << 30) || v.v[j] > ((int64_t)1 << 30))
				return ox_fail(c, nd, "pads entry %lld is out of range", (long long)v.v[j]);
		for (int j = 0; got && j < nsp; j++) {
			p[j + 2 - nsp] = v.v[j];
			p[j + 4 - nsp] = v.v[j + nsp];
		}
	}
	/* zero-stuff: [N,C,H,W] -> [N,C,H,1,W,1] -> pad -> [N,C,H*sh,W*sw] */
	ir_shape s6 = {6, {xs.d[0], C, xs.d[2], 1, xs.d[3], 1}};
	ir_ref z = x;
	if (s[0] > 1 || s[1] > 1) {
		ir_attrs pa;
		ir_attrs_init(IR_OP_pad, &pa);
		pa.pad = (ir_ints){12, {0, 0, 0, 0, 0, 0, 0, 0, 0, s[0] - 1, 0, s[1] - 1}};
		ir_shape s4 = {4, {xs.d[0], C, xs.d[2] * s[0], xs.d[3] * s[1]}};
		z = reshape(c, nd, emit1(c, nd, IR_OP_pad, reshape(c, nd, x, &s6), &pa), &s4);
	}
	/* the stuffed size is (in - 1) * s + 1: the trailing s - 1 zeros go */
	int64_t pb[4] = {0, 0, d[0] * (k[0] - 1) - p[0], d[1] * (k[1] - 1) - p[1]};
	int64_t pe[4] = {0, 0, d[0] * (k[0] - 1) - p[2] + op[0] - (s[0] - 1),
			 d[1] * (k[1] - 1) - p[3] + op[1] - (s[1] - 1)};
	if (z != IR_NONE)
		z = pad_op(c, nd, z, pb, pe);
	/* weight: [C, O/g, kh, kw] -> [g, C/g, O/g, kh, kw] -> [g, O/g, C/g, kh, kw] -> [O, C/g, kh, kw], flipped */
	int64_t og = ws.d[1];
	ir_shape w5 = {5, {G, C / G, og, k[0], k[1]}}, w4 = {4, {G * og, C / G, k[0], k[1]}};
	int perm[5] = {0, 2, 1, 3, 4};
	ir_ref wt = reshape(c, nd, transpose(c, nd, reshape(c, nd, w, &w5), perm, 5), &w4);
	ir_attrs fa;
	ir_attrs_init(IR_OP_slice, &fa);
	fa.axes = (ir_ints){2, {2, 3}};
	fa.starts = (ir_ints){2, {-1, -1}};
	fa.ends = (ir_ints){2, {INT64_MIN, INT64_MIN}};
	fa.steps = (ir_ints){2, {-1, -1}};
	wt = emit1(c, nd, IR_OP_slice, wt, &fa);
	if (z == IR_NONE || wt == IR_NONE)
		return c->e->code;
	ir_attrs ca;
	ir_attrs_init(IR_OP_conv2d, &ca);
	ca.groups = G;
	ca.dilation = (ir_ints){2, {d[0], d[1]}};
	ir_ref in[3] = {z, wt, b};
	ir_ref y = ox_emit(c, nd, IR_OP_conv2d, in, b == IR_NONE ? 2 : 3, &ca);
	if (nsp == 1 && y != IR_NONE) {
		ir_attrs sq;
		ir_attrs_init(IR_OP_squeeze, &sq);
		sq.axes = (ir_ints){1, {2}};
		y = emit1(c, nd, IR_OP_squeeze, y, &sq);
	}
	return bind(c, nd, y);
}
