/* ref_conv.c: conv2d and pooling. Both layouts run one NCHW kernel on
 * double buffers: NHWC inputs (and OHWI weights) are transposed into NCHW
 * doubles once, the result is written back in the node's layout. A conv
 * is im2col plus a GEMM whose inner loop adds a scaled im2col row (all
 * output positions, contiguous) into an output channel's row, in double. */
#include "ir/ref/ref_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* dims of a rank-4 tensor as N, C, H, W whatever its layout */
typedef struct dims4 {
	int64_t n, c, h, w;
} dims4;

static dims4 nchw_dims(const ir_shape *s, bool nhwc)
{
	return nhwc ? (dims4){s->d[0], s->d[3], s->d[1], s->d[2]}
		    : (dims4){s->d[0], s->d[1], s->d[2], s->d[3]};
}

/* The tensor as NCHW doubles (from NCHW, or NHWC when nhwc). */
static double *load_nchw(const ir_tensor *t, bool nhwc, sn_err *e)
{
	if (!nhwc)
		return ref_to_double(t, e);
	dims4 d = nchw_dims(&t->shape, true);
	double *p = ref_malloc((size_t)(d.n * d.c * d.h * d.w) * sizeof *p, e);
	if (!p)
		return NULL;
	size_t i = 0; /* source order: n, h, w, c */
	for (int64_t n = 0; n < d.n; n++)
		for (int64_t h = 0; h < d.h; h++)
			for (int64_t w = 0; w < d.w; w++)
				for (int64_t c = 0; c < d.c; c++)
					p[((n * d.c + c) * d.h + h) * d.w + w] = ir_load(t->dtype, t->data, i++);
	return p;
}

/* Stores NCHW doubles into out in its layout. */
static void store_nchw(ir_tensor *out, bool nhwc, const double *p)
{
	dims4 d = nchw_dims(&out->shape, nhwc);
	size_t i = 0; /* NCHW order */
	for (int64_t n = 0; n < d.n; n++)
		for (int64_t c = 0; c < d.c; c++)
			for (int64_t h = 0; h < d.h; h++)
				for (int64_t w = 0; w < d.w; w++, i++) {
					size_t o = nhwc ? (size_t)(((n * d.h + h) * d.w + w) * d.c + c) : i;
					ir_store(out->dtype, out->data, o, p[i]);
				}
}

/* The range [*lo, *hi) of outputs o with 0 <= o*st + off < in. */
static void valid_range(int64_t in, int64_t off, int64_t st, int64_t nout, int64_t *lo, int64_t *hi)
{
	/* o*st + off >= 0  <=>  o >= ceil(-off / st) */
	int64_t a = off >= 0 ? 0 : (-off + st - 1) / st;
	/* o*st + off <= in - 1  <=>  o <= floor((in - 1 - off) / st) */
	int64_t b = in - 1 - off < 0 ? -1 : (in - 1 - off) / st;
	*lo = a;
	*hi = b + 1 < nout ? b + 1 : nout;
	if (*hi < *lo)
		*hi = *lo;
}

static int window_attrs(const ir_node *n, const ir_ints *st, const ir_ints *dil, sn_err *e)
{
	const char *name = ir_ops[n->op].name;
	if (st->n != 2 || dil->n != 2 || n->attrs->pad.n != 4 || st->v[0] < 1 || st->v[1] < 1 ||
	    dil->v[0] < 1 || dil->v[1] < 1)
		return sn_errf(e, SN_EINPUT, "%s: stride and dilation need 2 entries > 0 and pad 4", name);
	return SN_OK;
}

/* The im2col rows of one group: for each (ic, kh, kw), the input values
 * that tap meets at every output position (0 in the padding), so the conv
 * becomes y[O, P] += w[O, K] col[K, P] with P = OH*OW contiguous. */
static void im2col(const double *xp, dims4 x, dims4 y, int64_t cg, int64_t kh, int64_t kw,
		   const int64_t st[2], const int64_t dil[2], const int64_t pad[2], double *col)
{
	int64_t plane = y.h * y.w;
	for (int64_t ic = 0; ic < cg; ic++)
		for (int64_t i = 0; i < kh; i++) {
			int64_t oh0, oh1, offh = i * dil[0] - pad[0];
			valid_range(x.h, offh, st[0], y.h, &oh0, &oh1);
			for (int64_t j = 0; j < kw; j++, col += plane) {
				int64_t ow0, ow1, offw = j * dil[1] - pad[1];
				valid_range(x.w, offw, st[1], y.w, &ow0, &ow1);
				memset(col, 0, (size_t)plane * sizeof *col);
				for (int64_t oh = oh0; oh < oh1; oh++) {
					const double *xr = xp + (ic * x.h + oh * st[0] + offh) * x.w + offw;
					double *cr = col + oh * y.w;
					for (int64_t ow = ow0; ow < ow1; ow++)
						cr[ow] = xr[ow * st[1]];
				}
			}
		}
}

void ref_gemm_acc(double *y, const double *w, const double *col, int64_t m, int64_t k, int64_t p)
{
	int64_t r = 0;
	for (; r + 4 <= m; r += 4) {
		double *y0 = y + r * p, *y1 = y0 + p, *y2 = y1 + p, *y3 = y2 + p;
		const double *w0 = w + r * k, *w1 = w0 + k, *w2 = w1 + k, *w3 = w2 + k;
		for (int64_t q = 0; q < k; q++) {
			const double *c = col + q * p;
			double a0 = w0[q], a1 = w1[q], a2 = w2[q], a3 = w3[q];
			for (int64_t i = 0; i < p; i++) {
				double v = c[i];
				y0[i] += a0 * v;
				y1[i] += a1 * v;
				y2[i] += a2 * v;
				y3[i] += a3 * v;
			}
		}
	}
	for (; r < m; r++) {
		double *yr = y + r * p;
		for (int64_t q = 0; q < k; q++) {
			const double *c = col + q * p;
			double a = w[r * k + q];
			for (int64_t i = 0; i < p; i++)
				yr[i] += a * c[i];
		}
	}
}

int ref_conv2d(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_attrs *at = n->attrs;
	bool nhwc = at->layout == IR_NHWC;
	if (in[0].shape.rank != 4 || in[1].shape.rank != 4 || window_attrs(n, &at->stride, &at->dilation, e))
		return e->code ? e->code : sn_errf(e, SN_EINPUT, "conv2d: x and weight need rank 4");
	dims4 x = nchw_dims(&in[0].shape, nhwc), y = nchw_dims(&out->shape, nhwc);
	/* weight: OIHW, or OHWI in NHWC; nchw_dims reads OHWI as O, I, H, W */
	dims4 w = nchw_dims(&in[1].shape, nhwc);
	int64_t groups = at->groups;
	if (groups < 1 || x.c % groups || w.n % groups || w.c != x.c / groups || y.c != w.n)
		return sn_errf(e, SN_EINPUT, "conv2d: channels do not agree with groups %lld", (long long)groups);
	const int64_t st[2] = {at->stride.v[0], at->stride.v[1]};
	const int64_t dil[2] = {at->dilation.v[0], at->dilation.v[1]};
	const int64_t pad[2] = {at->pad.v[0], at->pad.v[1]};
	int64_t cg = w.c, og = w.n / groups, plane = y.h * y.w, k = cg * w.h * w.w;
	/* A 1x1, stride 1, unpadded conv reads the input planes as they are. */
	bool direct = w.h == 1 && w.w == 1 && st[0] == 1 && st[1] == 1 && pad[0] == 0 && pad[1] == 0 &&
		      at->pad.v[2] == 0 && at->pad.v[3] == 0;
	double *xd = load_nchw(&in[0], nhwc, e);
	double *wd = xd ? load_nchw(&in[1], nhwc, e) : NULL; /* OIHW: row oc is K long */
	double *yd = wd ? ref_malloc((size_t)(y.n * y.c * plane) * sizeof *yd, e) : NULL;
	double *col = yd && !direct ? ref_malloc((size_t)(k * plane) * sizeof *col, e) : NULL;
	if (!yd || (!direct && !col)) {
		free(xd);
		free(wd);
		free(yd);
		return e->code;
	}
	for (int64_t oc = 0; oc < y.c; oc++) {
		double bias = n->nin > 2 ? ir_load(in[2].dtype, in[2].data, (size_t)oc) : 0;
		for (int64_t b = 0; b < y.n; b++)
			for (int64_t i = 0; i < plane; i++)
				yd[(b * y.c + oc) * plane + i] = bias;
	}
	for (int64_t b = 0; b < y.n; b++)
		for (int64_t g = 0; g < groups; g++) {
			const double *xp = xd + (b * x.c + g * cg) * x.h * x.w;
			if (!direct)
				im2col(xp, x, y, cg, w.h, w.w, st, dil, pad, col);
			ref_gemm_acc(yd + (b * y.c + g * og) * plane, wd + g * og * k, direct ? xp : col, og, k, plane);
		}
	store_nchw(out, nhwc, yd);
	free(xd);
	free(wd);
	free(yd);
	free(col);
	return SN_OK;
}

/* max_pool2d pads with -inf (padding never wins); avg_pool2d divides by the
 * window clipped to the padded input when count_include_pad (PyTorch's
 * rule), else by the number of real elements. ceil_mode windows that run
 * past the padding are clipped. */
int ref_pool(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	const ir_attrs *at = n->attrs;
	bool nhwc = at->layout == IR_NHWC, is_max = n->op == IR_OP_max_pool2d;
	const ir_ints *st = at->stride.n ? &at->stride : &at->kernel;
	ir_ints one = {2, {1, 1}};
	const ir_ints *dil = is_max ? &at->dilation : &one;
	if (in[0].shape.rank != 4 || at->kernel.n != 2 || window_attrs(n, st, dil, e))
		return e->code ? e->code : sn_errf(e, SN_EINPUT, "%s: needs rank 4 and a 2-d kernel", ir_ops[n->op].name);
	dims4 x = nchw_dims(&in[0].shape, nhwc), y = nchw_dims(&out->shape, nhwc);
	int64_t kh = at->kernel.v[0], kw = at->kernel.v[1], sh = st->v[0], sw = st->v[1];
	int64_t dh = dil->v[0], dw = dil->v[1];
	int64_t pt = at->pad.v[0], pl = at->pad.v[1], pb = at->pad.v[2], pr = at->pad.v[3];
	double *xd = load_nchw(&in[0], nhwc, e);
	double *yd = xd ? ref_malloc((size_t)(y.n * y.c * y.h * y.w) * sizeof *yd, e) : NULL;
	if (!yd) {
		free(xd);
		return e->code;
	}
	double *yp = yd;
	for (int64_t p = 0; p < x.n * x.c; p++) {
		const double *xp = xd + p * x.h * x.w;
		for (int64_t oh = 0; oh < y.h; oh++) {
			for (int64_t ow = 0; ow < y.w; ow++) {
				int64_t h0 = oh * sh - pt, w0 = ow * sw - pl;
				if (is_max) {
					double m = -INFINITY;
					for (int64_t i = 0; i < kh; i++) {
						int64_t h = h0 + i * dh;
						for (int64_t j = 0; h >= 0 && h < x.h && j < kw; j++) {
							int64_t w = w0 + j * dw;
							if (w < 0 || w >= x.w)
								continue;
							double v = xp[h * x.w + w];
							if ((v > m || isnan(v)) && !isnan(m))
								m = v; /* NaN wins, as PyTorch */
						}
					}
					*yp++ = m;
					continue;
				}
				int64_t h1 = h0 + kh < x.h + pb ? h0 + kh : x.h + pb;
				int64_t w1 = w0 + kw < x.w + pr ? w0 + kw : x.w + pr;
				int64_t full = (h1 - h0) * (w1 - w0);
				int64_t ha = h0 < 0 ? 0 : h0, hb = h1 < x.h ? h1 : x.h;
				int64_t wa = w0 < 0 ? 0 : w0, wb = w1 < x.w ? w1 : x.w;
				double sum = 0;
				for (int64_t h = ha; h < hb; h++)
					for (int64_t w = wa; w < wb; w++)
						sum += xp[h * x.w + w];
				int64_t real = (hb > ha ? hb - ha : 0) * (wb > wa ? wb - wa : 0);
				*yp++ = sum / (double)(at->count_include_pad ? full : real);
			}
		}
	}
	store_nchw(out, nhwc, yd);
	free(xd);
	free(yd);
	return SN_OK;
}

int ref_global_pool(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e)
{
	if (in[0].shape.rank != 4)
		return sn_errf(e, SN_EINPUT, "global_avg_pool: x needs rank 4");
	bool nhwc = n->attrs->layout == IR_NHWC;
	dims4 x = nchw_dims(&in[0].shape, nhwc);
	int64_t hw = x.h * x.w;
	/* The output [N,C,1,1] or [N,1,1,C] has element n*C + c either way. */
	for (int64_t b = 0; b < x.n; b++)
		for (int64_t c = 0; c < x.c; c++) {
			double sum = 0;
			for (int64_t i = 0; i < hw; i++) {
				size_t idx = nhwc ? (size_t)((b * hw + i) * x.c + c) : (size_t)((b * x.c + c) * hw + i);
				sum += ir_load(in[0].dtype, in[0].data, idx);
			}
			ir_store(out->dtype, out->data, (size_t)(b * x.c + c), sum / (double)hw);
		}
	return SN_OK;
}
