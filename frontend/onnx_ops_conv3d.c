/* onnx_ops_conv3d.c: ONNX Conv with 3-d kernels (input NCDHW), which sinter
 * has no IR op for, as one 2-d convolution: the kd depth taps of every
 * output depth are sliced out of the (depth-padded) input, stacked into the
 * channels and the output depths folded into the batch, so that the
 * weight's depth taps become input channels. */
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
 * unfolded to [N, O, Do, Ho, Wo]. The bias goes to the one convolution. */
int ox_tr_conv3d(ox_ctx *c, const onnx_node *nd)
{
	ir_ref x = ox_need(c, nd, 0), w = ox_need(c, nd, 1), b = ox_in(c, nd, 2);
	if (x == IR_NONE || w == IR_NONE || c->e->code)
		return c->e->code;
	ir_shape xs = shape_of(c, x), ws = shape_of(c, w);
	if (xs.rank != 5 || ws.rank != 5)
		return ox_fail(c, nd, "a 3-d convolution needs an input and a weight of rank 5");
	int64_t N = xs.d[0], C = xs.d[1], O = ws.d[0], G = ox_ai(nd, "group", 1);
	if (N < 0)
		return ox_fail(c, nd, "a 3-d convolution folds the output depths into the batch, which must be known; "
				      "bind %s to a value when loading the model",
			       c->w->syms[IR_SYM_ID(N)]);
	for (int i = 1; i < 5; i++)
		if (xs.d[i] < 0 || ws.d[i] < 0)
			return ox_fail(c, nd, "a 3-d convolution needs known channel and spatial dims; bind them to "
					      "values when loading the model");
	if (G < 1 || C % G || O % G || ws.d[1] * G != C)
		return ox_fail(c, nd, "the weight [O, C/group, kd, kh, kw] does not match the input's %lld channels "
				      "and group %lld",
			       (long long)C, (long long)G);
	int64_t k[3] = {ws.d[2], ws.d[3], ws.d[4]}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, p[6];
	ir_ints v;
	const char *names[] = {"kernel_shape", "strides", "dilations"};
	int64_t *dst[] = {NULL, s, d};
	for (int i = 0; i < 3; i++) {
		int got = ox_aints(c, nd, names[i], &v);
		if (got < 0)
			return c->e->code;
		if (got && v.n != 3)
			return ox_fail(c, nd, "%s has %d entries, expected 3", names[i], v.n);
		for (int j = 0; got && j < 3; j++) {
			if (i == 0 && v.v[j] != k[j])
				return ox_fail(c, nd, "kernel_shape differs from the weight's spatial dims");
			if (i > 0 && (v.v[j] < 1 || v.v[j] > (1 << 20)))
				return ox_fail(c, nd, "%s entry %lld is out of range", names[i], (long long)v.v[j]);
			if (i > 0)
				dst[i][j] = v.v[j];
		}
	}
	if (pads3(c, nd, xs.d + 2, k, s, d, p))
		return c->e->code;
	int64_t Dp = xs.d[2] + p[0] + p[3], span = (k[0] - 1) * d[0] + 1;
	if (Dp < span)
		return ox_fail(c, nd, "the padded depth %lld is smaller than the kernel's extent %lld", (long long)Dp,
			       (long long)span);
	int64_t Do = (Dp - span) / s[0] + 1, H = xs.d[3], W = xs.d[4], Cg = C / G;
	if (N * Do * k[0] > ((int64_t)1 << 24))
		return ox_fail(c, nd, "batch x output depth x kernel depth %lld is too large",
			       (long long)(N * Do * k[0]));
	ir_ref xp = x;
	if (p[0] || p[3]) {
		ir_attrs pa;
		ir_attrs_init(IR_OP_pad, &pa);
		pa.pad = (ir_ints){10, {0, 0, p[0], 0, 0, 0, 0, p[3], 0, 0}};
		xp = emit1(c, nd, IR_OP_pad, x, &pa);
	}
	ir_ref *taps = malloc((size_t)k[0] * sizeof *taps);
	if (!taps)
		return OOM(c);
	ir_shape s7 = {7, {N, G, 1, Cg, Do, H, W}};
	for (int64_t t = 0; t < k[0]; t++) {
		ir_attrs sa;
		ir_attrs_init(IR_OP_slice, &sa);
		sa.axes = (ir_ints){1, {2}};
		sa.starts = (ir_ints){1, {t * d[0]}};
		sa.ends = (ir_ints){1, {t * d[0] + (Do - 1) * s[0] + 1}};
		sa.steps = (ir_ints){1, {s[0]}};
		taps[t] = reshape(c, nd, emit1(c, nd, IR_OP_slice, xp, &sa), &s7);
	}
	ir_ref st = IR_NONE;
	bool ok = true;
	for (int64_t t = 0; t < k[0]; t++)
		ok &= taps[t] != IR_NONE;
	if (ok && k[0] == 1) {
		st = taps[0];
	} else if (ok) {
		ir_attrs ca;
		ir_attrs_init(IR_OP_concat, &ca);
		ca.axis = 2;
		st = ox_emit(c, nd, IR_OP_concat, taps, (uint32_t)k[0], &ca);
	}
	free(taps);
	/* [N, g, kd, C/g, Do, H, W] -> [N, Do, g, kd, C/g, H, W] -> [N*Do, C*kd, H, W] */
	static const int px[7] = {0, 4, 1, 2, 3, 5, 6};
	ir_shape s4 = {4, {N * Do, C * k[0], H, W}};
	ir_ref x2 = reshape(c, nd, transpose(c, nd, st, px, 7), &s4);
	/* [O, C/g, kd, kh, kw] -> [O, kd, C/g, kh, kw] -> [O, kd*C/g, kh, kw] */
	static const int pw[5] = {0, 2, 1, 3, 4};
	ir_shape w4 = {4, {O, k[0] * Cg, k[1], k[2]}};
	ir_ref w2 = reshape(c, nd, transpose(c, nd, w, pw, 5), &w4);
	if (x2 == IR_NONE || w2 == IR_NONE)
		return c->e->code;
	ir_attrs a;
	ir_attrs_init(IR_OP_conv2d, &a);
	a.groups = G;
	a.stride = (ir_ints){2, {s[1], s[2]}};
	a.dilation = (ir_ints){2, {d[1], d[2]}};
	a.pad = (ir_ints){4, {p[1], p[2], p[4], p[5]}};
	ir_ref in[3] = {x2, w2, b};
	ir_ref y = ox_emit(c, nd, IR_OP_conv2d, in, b == IR_NONE ? 2 : 3, &a);
	if (y == IR_NONE)
		return c->e->code;
	ir_shape ys = shape_of(c, y);
	ir_shape y5 = {5, {N, Do, O, ys.d[2], ys.d[3]}};
	static const int py[5] = {0, 2, 1, 3, 4};
	return bind(c, nd, transpose(c, nd, reshape(c, nd, y, &y5), py, 5));
}
