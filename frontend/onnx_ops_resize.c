/* onnx_ops_resize.c: ONNX Resize, which sinter has no IR op for, written
 * as gathers along each resized axis with index and weight tables
 * computed at import time. */
#include "onnx_build.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Resize ---- */

/* Bounds: a resized dim of at most 65536 (4K frames need 3840), and a
 * resized constant (folded here, at import time) of at most 4M elements:
 * models resize activations; a larger constant would only be slow. */
enum { RESIZE_MAX = 1 << 16, RESIZE_KNOWN_MAX = 1 << 22 };

/* The input coordinate of output coordinate o along an axis of size in
 * resized to out with scale s (ONNX's coordinate_transformation_mode), in
 * float arithmetic as onnxruntime computes it: the spec leaves the
 * precision open, and a coordinate on a tie of the nearest modes (x.5)
 * lands by it. The resized length is the output length out (so
 * pytorch_half_pixel and align_corners use the integer length, not in * s). */
static float resize_coord(int mode, float o, int64_t in, int64_t out, float s)
{
	float lo = (float)in, lr = (float)out;
	switch (mode) {
	case 1: return (o + 0.5f) / s - 0.5f;                         /* half_pixel */
	case 2: return lr > 1 ? (o + 0.5f) / s - 0.5f : 0.0f;          /* pytorch_half_pixel */
	case 3: return lr == 1 ? 0.0f : o * (lo - 1) / (lr - 1);       /* align_corners */
	case 4: return o / s;                                         /* asymmetric */
	case 5: return (o + 0.5f) / s;                                /* tf_half_pixel_for_nn */
	default: {                                                    /* half_pixel_symmetric */
		float width = s * lo, adj = lr / width, center = lo / 2, off = center * (1 - adj);
		return (float)((double)off + ((double)o + 0.5) / (double)s - 0.5);
	}
	}
}

static int64_t clampi(int64_t v, int64_t hi) { return v < 0 ? 0 : v > hi ? hi : v; }

/* y gathered along axis by the index table idx[out], times the weight
 * table wt[out] (NULL: no weight) broadcast over the dims after axis. */
static ir_ref resize_term(ox_ctx *c, const onnx_node *nd, ir_ref y, int axis, const int64_t *idx,
			  const double *wt, int64_t out)
{
	ir_shape ys = shape_of(c, y);
	ir_tensor it = {IR_I64, {1, {out}}, malloc((size_t)out * 8 + 1), (size_t)out * 8};
	if (!it.data)
		return OOM(c), IR_NONE;
	memcpy(it.data, idx, (size_t)out * 8);
	ir_attrs ga;
	ir_attrs_init(IR_OP_gather, &ga);
	ga.axis = axis;
	ir_ref in[2] = {y, ox_value(c, it)};
	if (in[1] == IR_NONE)
		return IR_NONE;
	ir_ref g = ox_emit(c, nd, IR_OP_gather, in, 2, &ga);
	if (!wt || g == IR_NONE)
		return g;
	ir_dtype t = ys.rank ? dtype_of(c, y) : IR_F32;
	ir_shape ws = {ys.rank - axis, {0}};
	ws.d[0] = out;
	for (int i = 1; i < ws.rank; i++)
		ws.d[i] = 1;
	size_t es = ir_dtype_size(t);
	ir_tensor w = {t, ws, malloc((size_t)out * es + 1), (size_t)out * es};
	if (!w.data)
		return OOM(c), IR_NONE;
	for (int64_t i = 0; i < out; i++)
		ir_store(t, w.data, (size_t)i, wt[i]);
	return emit2(c, nd, IR_OP_mul, g, ox_value(c, w));
}

/* Resize along one axis from in to out: nearest (one gather), linear (two
 * weighted gathers) or cubic (four), with the tables computed here. */
static ir_ref resize_axis(ox_ctx *c, const onnx_node *nd, ir_ref y, int axis, int64_t in, int64_t out,
			  float s, int mode, int coord, int nearest, double ca, bool excl)
{
	int taps = mode == 0 ? 1 : mode == 1 ? 2 : 4;
	int64_t *idx = malloc((size_t)(out * taps + 1) * sizeof *idx);
	double *wt = malloc((size_t)(out * taps + 1) * sizeof *wt);
	if (!idx || !wt) {
		free(idx);
		free(wt);
		return OOM(c), IR_NONE;
	}
	bool ident = out == in;
	for (int64_t o = 0; o < out; o++) {
		double x = resize_coord(coord, (float)o, in, out, s);
		if (mode == 0) {
			double f = floor(x), r;
			switch (nearest) {
			case 0: r = x - f == 0.5 ? f : round(x); break; /* round_prefer_floor */
			case 1: r = x - f == 0.5 ? f + 1 : round(x); break;
			case 2: r = f; break;
			default: r = ceil(x); break;
			}
			idx[o] = clampi(!(r > -1e18) ? 0 : r > 1e18 ? in : (int64_t)r, in - 1);
			wt[o] = 1;
			ident &= idx[o] == o;
			continue;
		}
		double f = floor(x), r = x - f;
		int64_t b = !(f > -1e18) ? 0 : f > 1e18 ? in : (int64_t)f;
		double cw[4];
		if (mode == 1) {
			cw[0] = 1 - r, cw[1] = r;
		} else {
			cw[0] = ((ca * (r + 1) - 5 * ca) * (r + 1) + 8 * ca) * (r + 1) - 4 * ca;
			cw[1] = ((ca + 2) * r - (ca + 3)) * r * r + 1;
			cw[2] = ((ca + 2) * (1 - r) - (ca + 3)) * (1 - r) * (1 - r) + 1;
			cw[3] = ((ca * (2 - r) - 5 * ca) * (2 - r) + 8 * ca) * (2 - r) - 4 * ca;
			b -= 1;
		}
		double sum = 0;
		for (int k = 0; k < taps; k++) {
			int64_t j = b + k;
			if (excl && (j < 0 || j >= in))
				cw[k] = 0;
			sum += cw[k];
		}
		for (int k = 0; k < taps; k++) {
			idx[k * out + o] = clampi(b + k, in - 1);
			wt[k * out + o] = excl && sum != 0 ? cw[k] / sum : cw[k];
			/* the identity: all the weight on o itself */
			ident &= wt[k * out + o] == (b + k == o ? 1.0 : 0.0);
		}
	}
	ir_ref acc = y;
	if (!ident) {
		acc = IR_NONE;
		for (int k = 0; k < taps; k++) {
			bool zero = true;
			for (int64_t o = 0; o < out; o++)
				zero &= wt[k * out + o] == 0;
			if (zero && !(k == taps - 1 && acc == IR_NONE))
				continue;
			ir_ref t = resize_term(c, nd, y, axis, idx + k * out, mode == 0 ? NULL : wt + k * out, out);
			acc = acc == IR_NONE ? t : emit2(c, nd, IR_OP_add, acc, t);
			if (t == IR_NONE)
				break;
		}
	}
	free(idx);
	free(wt);
	return acc;
}

static int str_choice(const onnx_node *nd, const char *name, const char *def, const char *const *opts, int n)
{
	for (int i = 0; i < n; i++)
		if (ox_as_is(nd, name, def, opts[i]))
			return i;
	return -1;
}

int ox_tr_resize(ox_ctx *c, const onnx_node *nd)
{
	static const char *const modes[] = {"nearest", "linear", "cubic"};
	static const char *const coords[] = {"half_pixel_symmetric", "half_pixel", "pytorch_half_pixel",
					     "align_corners", "asymmetric", "tf_half_pixel_for_nn"};
	static const char *const nears[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
	ir_ref x = ox_need(c, nd, 0);
	if (x == IR_NONE)
		return c->e->code;
	int mode = str_choice(nd, "mode", "nearest", modes, 3);
	int coord = str_choice(nd, "coordinate_transformation_mode", "half_pixel", coords, 6);
	int nearest = str_choice(nd, "nearest_mode", "round_prefer_floor", nears, 4);
	if (mode < 0)
		return ox_fail(c, nd, "mode must be nearest, linear or cubic");
	if (coord < 0)
		return ox_fail(c, nd, "coordinate_transformation_mode tf_crop_and_resize is not supported");
	if (nearest < 0)
		return ox_fail(c, nd, "nearest_mode must be round_prefer_floor, round_prefer_ceil, floor or ceil");
	static const char *const policies[] = {"stretch", "not_larger", "not_smaller"};
	int policy = str_choice(nd, "keep_aspect_ratio_policy", "stretch", policies, 3);
	if (policy < 0)
		return ox_fail(c, nd, "keep_aspect_ratio_policy must be stretch, not_larger or not_smaller");
	if (mode != 0 && !ir_dtype_is_float(dtype_of(c, x)))
		return ox_fail(c, nd, "linear and cubic resizing need a float input");
	ir_shape xs = shape_of(c, x);
	int r = xs.rank;
	ir_ints axes = {r, {0}};
	for (int i = 0; i < r; i++)
		axes.v[i] = i;
	int got = ox_aints(c, nd, "axes", &axes);
	if (got < 0)
		return c->e->code;
	/* Per resized axis: its scale (float, as onnxruntime keeps it) and, from
	 * sizes, its output length (-1: from the scale). */
	float scale[IR_MAX_LIST];
	int64_t size[IR_MAX_LIST];
	if (ox_has(nd, 3)) {
		ir_ints sz;
		if (ox_ints(c, nd, 3, "sizes", false, &sz))
			return c->e->code;
		if (sz.n != axes.n)
			return ox_fail(c, nd, "sizes has %d entries for %d axes", sz.n, axes.n);
		for (int i = 0; i < axes.n; i++) {
			if (sz.v[i] < 0)
				return ox_fail(c, nd, "sizes must be >= 0, got %lld (entry %d)", (long long)sz.v[i], i);
			size[i] = sz.v[i], scale[i] = -1;
		}
		if (policy) { /* one scale for every axis: the smallest or the largest */
			float k = policy == 1 ? INFINITY : 0;
			for (int i = 0; i < axes.n; i++) {
				int a = ir_axis(axes.v[i], r);
				if (a < 0 || xs.d[a] <= 0)
					return ox_fail(c, nd, "keep_aspect_ratio_policy needs known, non-empty resized dims");
				float q = (float)size[i] / (float)xs.d[a];
				k = policy == 1 ? (q < k ? q : k) : (q > k ? q : k);
			}
			for (int i = 0; i < axes.n; i++) {
				float o = roundf(k * (float)xs.d[ir_axis(axes.v[i], r)]);
				if (!(o >= 0 && o <= (float)RESIZE_MAX))
					return ox_fail(c, nd, "output size %g is out of range (at most %d)", (double)o,
						       RESIZE_MAX);
				scale[i] = k;
				size[i] = (int64_t)o;
			}
		}
	} else if (ox_has(nd, 2)) {
		ir_ref sr = ox_need(c, nd, 2);
		const ir_tensor *st = sr != IR_NONE ? ox_known(c, sr) : NULL;
		if (!st)
			return c->e->code ? c->e->code : ox_fail(c, nd, "scales must be known at import time");
		size_t ns = st->nbytes / ir_dtype_size(st->dtype);
		if (ns != (size_t)axes.n)
			return ox_fail(c, nd, "scales has %zu entries for %d axes", ns, axes.n);
		for (int i = 0; i < axes.n; i++) {
			scale[i] = (float)ir_load(st->dtype, st->data, (size_t)i), size[i] = -1;
			if (!(scale[i] > 0))
				return ox_fail(c, nd, "scales must be > 0, got %g (entry %d)", (double)scale[i], i);
		}
	} else {
		return ox_fail(c, nd, "scales or sizes is required");
	}
	if (ox_known(c, x)) {
		double total = 1;
		for (int i = 0; i < r; i++)
			total *= xs.d[i] > 0 ? (double)xs.d[i] : 1;
		for (int i = 0; i < axes.n; i++) {
			int a = ir_axis(axes.v[i], r);
			double o = size[i] >= 0 ? (double)size[i] : scale[i] * (a >= 0 && xs.d[a] > 0 ? (double)xs.d[a] : 1);
			total *= (a >= 0 && xs.d[a] > 0) ? o / (double)xs.d[a] : o;
		}
		if (!(total <= RESIZE_KNOWN_MAX))
			return ox_fail(c, nd, "resizing a constant to %g elements (more than %d) is not supported", total,
				       RESIZE_KNOWN_MAX);
	}
	double ca = ox_af(nd, "cubic_coeff_a", -0.75);
	bool excl = ox_ai(nd, "exclude_outside", 0) != 0;
	/* Each axis's output length and scale first: onnxruntime copies the
	 * input when no length changes, whatever the scales. */
	int64_t outv[IR_MAX_LIST];
	bool same = true;
	for (int i = 0; i < axes.n; i++) {
		int a = ir_axis(axes.v[i], r);
		if (a < 0)
			return ox_fail(c, nd, "axis %lld is out of range", (long long)axes.v[i]);
		int64_t in = xs.d[a];
		float s = scale[i];
		int64_t out = size[i];
		if (out < 0) { /* from the scale: onnxruntime's (int64)(scale * in), in float */
			if (in < 0) {
				if (s != 1)
					return ox_fail(c, nd, "a resized dim must be known; bind it to a value when loading the model");
				out = in;
			} else {
				float o = s * (float)in;
				if (!(o <= (float)RESIZE_MAX))
					return ox_fail(c, nd, "scale %g makes axis %d %g long (at most %d)", (double)s, a,
						       (double)o, RESIZE_MAX);
				out = (int64_t)o;
			}
		} else {
			if (in < 0 && out != in)
				return ox_fail(c, nd, "a resized dim must be known; bind it to a value when loading the model");
			if (in >= 0 && s <= 0) /* onnxruntime's scale from sizes, in float */
				s = in ? (float)out / (float)in : 1;
		}
		if (in >= 0 && out > RESIZE_MAX)
			return ox_fail(c, nd, "output size %lld is out of range (at most %d)", (long long)out, RESIZE_MAX);
		if (in >= 0 && ox_ai(nd, "antialias", 0) && s < 1 && mode != 0)
			return ox_fail(c, nd, "antialias when downsampling is not supported");
		if ((in == 0 || out == 0) && out != in)
			return ox_fail(c, nd, "resizing an empty dim is not supported");
		outv[i] = out, scale[i] = s;
		same &= out == in;
	}
	ir_ref y = x;
	for (int i = 0; i < axes.n && y != IR_NONE && !same; i++) {
		int a = ir_axis(axes.v[i], r);
		int64_t in = xs.d[a];
		if (in <= 0)
			continue; /* symbolic with scale 1, or empty */
		y = resize_axis(c, nd, y, a, in, outv[i], scale[i], mode, coord, nearest, ca, excl);
	}
	return bind(c, nd, y);
}
