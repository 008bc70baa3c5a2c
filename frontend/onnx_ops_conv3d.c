/* onnx_ops_conv3d.c: ONNX Conv and ConvTranspose with 3-d kernels (input
 * NCDHW), which sinter has no IR op for, as one 2-d convolution: the kd
 * depth taps of every output depth are sliced out of the (depth-padded)
 * input, stacked into the channels and the output depths folded into the
 * batch, so that the weight's depth taps become input channels. A
 * transposed one is first a stride-1 convolution of the zero-stuffed input
 * with the flipped weight, as in 2-d. */
#include "onnx_build.h"

#include <stdlib.h>

/* Pads [begin0..2, end0..2] of a 3-d convolution from pads/auto_pad. */
static int pads3(ox_ctx *c, const onnx_node *nd, const int64_t *in, const int64_t *k, const int64_t *s,
		 const int64_t *d, int64_t *p)
{
	for (int i = 0; i < 6; i++)
		p[i] = 0;
	bool upper = ox_as_is(nd, "auto_pad", "NOTSET", "SAME_UPPER");
	bool lower = ox_as_is(nd, "auto_pad", "NOTSET", "SAME_LOWER");
	if (upper || lower) {
		for (int i = 0; i < 3; i++) {
			int64_t out = (in[i] + s[i] - 1) / s[i];
			int64_t total = (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in[i];
			if (total < 0)
				total = 0;
			int64_t small = total / 2, big = total - small;
			p[i] = upper ? small : big;
			p[i + 3] = upper ? big : small;
		}
		return SN_OK;
	}
	if (!ox_as_is(nd, "auto_pad", "NOTSET", "NOTSET") && !ox_as_is(nd, "auto_pad", "NOTSET", "VALID"))
		return ox_fail(c, nd, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID");
	if (ox_as_is(nd, "auto_pad", "NOTSET", "VALID"))
		return SN_OK;
	ir_ints v;
	int got = ox_aints(c, nd, "pads", &v);
	if (got < 0)
		return c->e->code;
	if (got && v.n != 6)
		return ox_fail(c, nd, "pads has %d entries, expected 6", v.n);
	for (int i = 0; got && i < 6; i++) {
		if (v.v[i] < 0 || v.v[i] > ((int64_t)1 << 20))
			return ox_fail(c, nd, "pads entry %lld is out of range", (long long)v.v[i]);
		p[i] = v.v[i];
	}
	return SN_OK;
}

/* Conv of x [N, C, D, H, W] with w [O, C/g, kd, kh, kw]: the depth-padded
 * input's slices x[:, :, k*dd :: sd] (Do each) for k < kd, stacked as
 * [N, g, kd, C/g, Do, H, W], become [N*Do, g*kd*C/g, H, W]; the weight
 * [O, C/g, kd, kh, kw] becomes [O, kd*C/g, kh, kw] (tap-major within a
 * group, as the stacked channels); a 2-d convolution with the spatial
 * pads, strides, dilations and groups gives [N*Do, O, Ho, Wo], which is
 * unfolded to [N, O, Do, Ho, Wo]. The bias goes to the one convolution.
 * A symbolic batch cannot be multiplied by Do: then each output depth is a
 * conv2d of its own taps [N, g*kd*C/g, H, W], and the Do results are
 * concatenated. The other dims are known and checked by the caller. */
static ir_ref conv3d(ox_ctx *c, const onnx_node *nd, ir_ref x, ir_ref w, ir_ref b, const int64_t *s,
		     const int64_t *d, const int64_t *p, int64_t G)
{
	ir_shape xs = shape_of(c, x), ws = shape_of(c, w);
	int64_t N = xs.d[0], C = xs.d[1], O = ws.d[0], k[3] = {ws.d[2], ws.d[3], ws.d[4]};
	int64_t Dp = xs.d[2] + p[0] + p[3], span = (k[0] - 1) * d[0] + 1;
	if (Dp < span) {
		ox_fail(c, nd, "the padded depth %lld is smaller than the kernel's extent %lld", (long long)Dp,
			(long long)span);
		return IR_NONE;
	}
	int64_t Do = (Dp - span) / s[0] + 1, H = xs.d[3], W = xs.d[4], Cg = C / G;
	if ((N >= 0 ? N : 1) * Do * k[0] > ((int64_t)1 << 24)) {
		ox_fail(c, nd, "batch x output depth x kernel depth %lld is too large",
			(long long)((N >= 0 ? N : 1) * Do * k[0]));
		return IR_NONE;
	}
	ir_ref xp = x;
	if (p[0] || p[3]) {
		ir_attrs pa;
		ir_attrs_init(IR_OP_pad, &pa);
		pa.pad = (ir_ints){10, {0, 0, p[0], 0, 0, 0, 0, p[3], 0, 0}};
		xp = emit1(c, nd, IR_OP_pad, x, &pa);
	}
	/* [O, C/g, kd, kh, kw] -> [O, kd, C/g, kh, kw] -> [O, kd*C/g, kh, kw] */
	static const int pw[5] = {0, 2, 1, 3, 4};
	ir_shape w4 = {4, {O, k[0] * Cg, k[1], k[2]}};
	ir_ref w2 = reshape(c, nd, transpose(c, nd, w, pw, 5), &w4);
	ir_attrs a;
	ir_attrs_init(IR_OP_conv2d, &a);
	a.groups = G;
	a.stride = (ir_ints){2, {s[1], s[2]}};
	a.dilation = (ir_ints){2, {d[1], d[2]}};
	a.pad = (ir_ints){4, {p[1], p[2], p[4], p[5]}};
	/* a known batch: every output depth in one conv2d (taps[t] holds tap
	 * t of all of them); a symbolic one, which cannot be multiplied by Do:
	 * one conv2d per output depth (taps[o*kd + t]), concatenated */
	bool fold = N >= 0;
	size_t ntaps = (size_t)k[0] * (fold ? 1 : (size_t)Do);
	ir_ref *taps = malloc((ntaps + (size_t)Do) * sizeof *taps);
	if (!taps) {
		OOM(c);
		return IR_NONE;
	}
	ir_ref *outs = taps + ntaps;
	ir_shape s7 = {7, {N, G, 1, Cg, Do, H, W}}, s6 = {6, {N, G, 1, Cg, H, W}};
	bool ok = w2 != IR_NONE;
	for (size_t i = 0; i < ntaps; i++) {
		int64_t t = (int64_t)i % k[0], o = (int64_t)i / k[0], z = o * s[0] + t * d[0];
		ir_attrs sa;
		ir_attrs_init(IR_OP_slice, &sa);
		sa.axes = (ir_ints){1, {2}};
		sa.starts = (ir_ints){1, {fold ? t * d[0] : z}};
		sa.ends = (ir_ints){1, {fold ? t * d[0] + (Do - 1) * s[0] + 1 : z + 1}};
		sa.steps = (ir_ints){1, {fold ? s[0] : 1}};
		taps[i] = reshape(c, nd, emit1(c, nd, IR_OP_slice, xp, &sa), fold ? &s7 : &s6);
		ok &= taps[i] != IR_NONE;
	}
	ir_attrs ca;
	ir_attrs_init(IR_OP_concat, &ca);
	ca.axis = 2;
	ir_ref in[3] = {IR_NONE, w2, b}, y = IR_NONE;
	uint32_t nin = b == IR_NONE ? 2 : 3;
	if (ok && fold) {
		ir_ref st = k[0] == 1 ? taps[0] : ox_emit(c, nd, IR_OP_concat, taps, (uint32_t)k[0], &ca);
		/* [N, g, kd, C/g, Do, H, W] -> [N, Do, g, kd, C/g, H, W] -> [N*Do, C*kd, H, W] */
		static const int px[7] = {0, 4, 1, 2, 3, 5, 6};
		ir_shape s4 = {4, {N * Do, C * k[0], H, W}};
		in[0] = reshape(c, nd, transpose(c, nd, st, px, 7), &s4);
		y = in[0] == IR_NONE ? IR_NONE : ox_emit(c, nd, IR_OP_conv2d, in, nin, &a);
		if (y != IR_NONE) {
			ir_shape ys = shape_of(c, y);
			ir_shape y5 = {5, {N, Do, O, ys.d[2], ys.d[3]}};
			static const int py[5] = {0, 2, 1, 3, 4};
			y = transpose(c, nd, reshape(c, nd, y, &y5), py, 5);
		}
	} else if (ok) {
		ir_shape s4 = {4, {N, C * k[0], H, W}};
		for (int64_t o = 0; o < Do && ok; o++) {
			/* [N, g, kd, C/g, H, W] -> [N, g*kd*C/g, H, W] -> conv2d -> [N, O, 1, Ho, Wo] */
			ir_ref *t = taps + o * k[0];
			ir_ref st = k[0] == 1 ? t[0] : ox_emit(c, nd, IR_OP_concat, t, (uint32_t)k[0], &ca);
			in[0] = reshape(c, nd, st, &s4);
			ir_ref yo = in[0] == IR_NONE ? IR_NONE : ox_emit(c, nd, IR_OP_conv2d, in, nin, &a);
			ir_attrs ua;
			ir_attrs_init(IR_OP_unsqueeze, &ua);
			ua.axes = (ir_ints){1, {2}};
			outs[o] = emit1(c, nd, IR_OP_unsqueeze, yo, &ua);
			ok = outs[o] != IR_NONE;
		}
		y = !ok ? IR_NONE : Do == 1 ? outs[0] : ox_emit(c, nd, IR_OP_concat, outs, (uint32_t)Do, &ca);
	}
	free(taps);
	return y;
}

/* Reads the attributes both ops share (kernel_shape checked against the
 * weight's k, strides, dilations and, for ConvTranspose, output_padding)
 * into the 3-entry arrays. */
static int attrs3(ox_ctx *c, const onnx_node *nd, const int64_t *k, int64_t *s, int64_t *d, int64_t *op)
{
	ir_ints v;
	const char *names[] = {"kernel_shape", "strides", "dilations", "output_padding"};
	int64_t *dst[] = {NULL, s, d, op};
	for (int j = 0; j < 3; j++)
		s[j] = d[j] = 1, op[j] = 0;
	for (int i = 0; i < 4; i++) {
		int got = ox_aints(c, nd, names[i], &v);
		if (got < 0)
			return c->e->code;
		if (got && v.n != 3)
			return ox_fail(c, nd, "%s has %d entries, expected 3", names[i], v.n);
		for (int j = 0; got && j < 3; j++) {
			if (i == 0 && v.v[j] != k[j])
				return ox_fail(c, nd, "kernel_shape differs from the weight's spatial dims");
			if (i > 0 && (v.v[j] < (i == 3 ? 0 : 1) || v.v[j] > (1 << 20)))
				return ox_fail(c, nd, "%s entry %lld is out of range", names[i], (long long)v.v[j]);
			if (i > 0)
				dst[i][j] = v.v[j];
		}
	}
	return SN_OK;
}

/* Checks x and w of rank 5 with known dims but the batch's. */
static int dims3(ox_ctx *c, const onnx_node *nd, ir_ref x, ir_ref w)
{
	ir_shape xs = shape_of(c, x), ws = shape_of(c, w);
	if (xs.rank != 5 || ws.rank != 5)
		return ox_fail(c, nd, "a 3-d convolution needs an input and a weight of rank 5");
	if (xs.d[0] > ((int64_t)1 << 30))
		return ox_fail(c, nd, "batch %lld is too large", (long long)xs.d[0]);
	for (int i = 1; i < 5; i++)
		if (xs.d[i] < 0 || ws.d[i] < 0 || xs.d[i] > ((int64_t)1 << 30) || ws.d[i] > ((int64_t)1 << 20))
			return ox_fail(c, nd, "a 3-d convolution needs known channel and spatial dims (bind them to "
					      "values when loading the model) of at most 2^30");
	return SN_OK;
}

static int tr_conv_transpose3d(ox_ctx *c, const onnx_node *nd);

int ox_tr_conv3d(ox_ctx *c, const onnx_node *nd)
{
	if (strcmp(nd->op_type, "ConvTranspose") == 0)
		return tr_conv_transpose3d(c, nd);
	ir_ref x = ox_need(c, nd, 0), w = ox_need(c, nd, 1), b = ox_in(c, nd, 2);
	if (x == IR_NONE || w == IR_NONE || c->e->code || dims3(c, nd, x, w))
		return c->e->code;
	ir_shape xs = shape_of(c, x), ws = shape_of(c, w);
	int64_t C = xs.d[1], O = ws.d[0], G = ox_ai(nd, "group", 1);
	if (G < 1 || C % G || O % G || ws.d[1] * G != C)
		return ox_fail(c, nd, "the weight [O, C/group, kd, kh, kw] does not match the input's %lld channels "
				      "and group %lld",
			       (long long)C, (long long)G);
	int64_t k[3] = {ws.d[2], ws.d[3], ws.d[4]}, s[3], d[3], op[3], p[6];
	if (ox_attr(nd, "output_padding"))
		return ox_fail(c, nd, "output_padding is an attribute of ConvTranspose, not Conv");
	if (attrs3(c, nd, k, s, d, op) || pads3(c, nd, xs.d + 2, k, s, d, p))
		return c->e->code;
	return bind(c, nd, conv3d(c, nd, x, w, b, s, d, p, G));
}

/* ConvTranspose of x [N, C, D, H, W] with w [C, O/g, kd, kh, kw], as the
 * 2-d one (onnx_ops_conv_transpose.c): the input zero-stuffed by the
 * strides (a unit dim after each spatial dim, padded with stride - 1
 * zeros, folded), padded by dilation * (kernel - 1) - pad on each side
 * (plus output_padding at the end; a negative amount crops), then a
 * stride-1 3-d convolution with the weight regrouped to [O, C/g, kd, kh,
 * kw] and flipped in space. */
static int tr_conv_transpose3d(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0), w = ox_need(c, nd, 1), b = ox_in(c, nd, 2);
	if (x == IR_NONE || w == IR_NONE || c->e->code || dims3(c, nd, x, w))
		return c->e->code;
	ir_shape xs = shape_of(c, x), ws = shape_of(c, w);
	int64_t N = xs.d[0], C = xs.d[1], G = ox_ai(nd, "group", 1), og = ws.d[1];
	if (G < 1 || C % G || ws.d[0] != C)
		return ox_fail(c, nd, "the weight [C, O/group, kd, kh, kw] does not match the input's %lld channels",
			       (long long)C);
	int64_t k[3] = {ws.d[2], ws.d[3], ws.d[4]}, s[3], d[3], op[3], p[6] = {0, 0, 0, 0, 0, 0};
	if (attrs3(c, nd, k, s, d, op))
		return c->e->code;
	for (int j = 0; j < 3; j++)
		if (op[j] >= (s[j] > d[j] ? s[j] : d[j]) || s[j] > 4096 || d[j] > 4096)
			return ox_fail(c, nd, "strides, dilations or output_padding out of range");
	bool upper = ox_as_is(nd, "auto_pad", "NOTSET", "SAME_UPPER"), lower = ox_as_is(nd, "auto_pad", "NOTSET", "SAME_LOWER");
	ir_ints v;
	int got_os = ox_aints(c, nd, "output_shape", &v);
	if (got_os < 0)
		return c->e->code;
	if (got_os && v.n < 3)
		return ox_fail(c, nd, "output_shape has %d entries, expected 3", v.n);
	if (got_os || upper || lower) {
		for (int j = 0; j < 3; j++) {
			int64_t want = got_os ? v.v[v.n - 3 + j] : xs.d[2 + j] * s[j];
			if (want < 0 || want > ((int64_t)1 << 30))
				return ox_fail(c, nd, "output_shape entry %lld is out of range", (long long)want);
			/* a negative total (a larger output) pads the end: floor division */
			int64_t total = s[j] * (xs.d[2 + j] - 1) + op[j] + ((k[j] - 1) * d[j] + 1) - want;
			int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
			p[j] = upper ? half : total - half;
			p[j + 3] = total - p[j];
		}
	} else if (!ox_as_is(nd, "auto_pad", "NOTSET", "NOTSET") && !ox_as_is(nd, "auto_pad", "NOTSET", "VALID")) {
		return ox_fail(c, nd, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID");
	} else {
		int got = ox_aints(c, nd, "pads", &v);
		if (got < 0)
			return c->e->code;
		if (got && v.n != 6)
			return ox_fail(c, nd, "pads has %d entries, expected 6", v.n);
		for (int j = 0; got && j < 6; j++) {
			if (v.v[j] < -((int64_t)1 << 30) || v.v[j] > ((int64_t)1 << 30))
				return ox_fail(c, nd, "pads entry %lld is out of range", (long long)v.v[j]);
			p[j] = v.v[j];
		}
	}
	/* zero-stuff: [N,C,D,H,W] -> [N,C,D,1,H,1,W,1] -> pad -> [N,C,D*sd,H*sh,W*sw] */
	ir_ref z = x;
	if (s[0] > 1 || s[1] > 1 || s[2] > 1) {
		ir_shape s8 = {8, {N, C, xs.d[2], 1, xs.d[3], 1, xs.d[4], 1}};
		ir_attrs pa;
		ir_attrs_init(IR_OP_pad, &pa);
		pa.pad = (ir_ints){16, {0}};
		for (int j = 0; j < 3; j++)
			pa.pad.v[8 + 3 + 2 * j] = s[j] - 1;
		ir_shape s5 = {5, {N, C, xs.d[2] * s[0], xs.d[3] * s[1], xs.d[4] * s[2]}};
		z = reshape(c, nd, emit1(c, nd, IR_OP_pad, reshape(c, nd, x, &s8), &pa), &s5);
	}
	/* the stuffed size is (in - 1) * s + 1: the trailing s - 1 zeros go;
	 * negative amounts crop (a slice), positive ones pad with zeros */
	ir_attrs pa, sa;
	ir_attrs_init(IR_OP_pad, &pa);
	ir_attrs_init(IR_OP_slice, &sa);
	pa.pad.n = 10;
	bool anypad = false;
	int64_t stuffed[3];
	for (int j = 0; j < 3; j++) {
		stuffed[j] = xs.d[2 + j] * s[j];
		int64_t pb = d[j] * (k[j] - 1) - p[j], pe = d[j] * (k[j] - 1) - p[j + 3] + op[j] - (s[j] - 1);
		pa.pad.v[2 + j] = pb > 0 ? pb : 0;
		pa.pad.v[7 + j] = pe > 0 ? pe : 0;
		anypad |= pb > 0 || pe > 0;
		if (pb < 0 || pe < 0) {
			if ((pb < 0 ? -pb : 0) + (pe < 0 ? -pe : 0) >= stuffed[j])
				return ox_fail(c, nd, "pads leave no output");
			sa.axes.v[sa.axes.n] = 2 + j;
			sa.starts.v[sa.axes.n] = pb < 0 ? -pb : 0;
			sa.ends.v[sa.axes.n] = pe < 0 ? stuffed[j] + pe : INT64_MAX;
			sa.axes.n++;
		}
	}
	sa.starts.n = sa.ends.n = sa.axes.n;
	if (sa.axes.n)
		z = emit1(c, nd, IR_OP_slice, z, &sa);
	if (anypad)
		z = emit1(c, nd, IR_OP_pad, z, &pa);
	/* weight: [C, O/g, k..] -> [g, C/g, O/g, k..] -> [g, O/g, C/g, k..] -> [O, C/g, k..], flipped */
	ir_shape w6 = {6, {G, C / G, og, k[0], k[1], k[2]}}, w5 = {5, {G * og, C / G, k[0], k[1], k[2]}};
	static const int perm[6] = {0, 2, 1, 3, 4, 5};
	ir_ref wt = reshape(c, nd, transpose(c, nd, reshape(c, nd, w, &w6), perm, 6), &w5);
	ir_attrs fa;
	ir_attrs_init(IR_OP_slice, &fa);
	fa.axes = (ir_ints){3, {2, 3, 4}};
	fa.starts = (ir_ints){3, {-1, -1, -1}};
	fa.ends = (ir_ints){3, {INT64_MIN, INT64_MIN, INT64_MIN}};
	fa.steps = (ir_ints){3, {-1, -1, -1}};
	wt = emit1(c, nd, IR_OP_slice, wt, &fa);
	if (z == IR_NONE || wt == IR_NONE)
		return c->e->code;
	static const int64_t one[3] = {1, 1, 1}, nopad[6] = {0, 0, 0, 0, 0, 0};
	return bind(c, nd, conv3d(c, nd, z, wt, b, one, d, nopad, G));
}
