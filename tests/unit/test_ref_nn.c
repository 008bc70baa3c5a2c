/* test_ref_nn.c: the reference interpreter's neural-network ops (norms,
 * matmul, linear, conv2d, pools, attention) against values worked out by
 * hand (arithmetic in the comments) or against direct textbook loops
 * written here, independent of the interpreter's loop orders and layouts. */
#include "test_ref_util.h"

static const double TOL = 2e-6;

static void test_norms(void)
{
	/* layer_norm over the last axis of [[1,2,3,4],[2,2,2,6]] with weight
	 * [1,2,1,2] and bias [0,0,1,1]. Row 0: mean 2.5, var (2.25+0.25+0.25+2.25)/4
	 * = 1.25; row 1: mean 3, var (1+1+1+9)/4 = 3. */
	const float x[8] = {1, 2, 3, 4, 2, 2, 2, 6}, w[4] = {1, 2, 1, 2}, b[4] = {0, 0, 1, 1};
	double want[8];
	const double mean[2] = {2.5, 3}, var[2] = {1.25, 3};
	for (int i = 0; i < 8; i++)
		want[i] = (x[i] - mean[i / 4]) / sqrt(var[i / 4] + 1e-5) * w[i % 4] + b[i % 4];
	CHECK_NEAR(want[0], -1.5 / sqrt(1.25 + 1e-5), 1e-15);
	tg t;
	tg_init(&t);
	ir_ref r = top(&t, IR_OP_layer_norm, NULL, 3, tin(&t, "x", IR_F32, SHAPE(2, 4), x),
		       tin(&t, "w", IR_F32, SHAPE(4), w), tin(&t, "b", IR_F32, SHAPE(4), b));
	if (trun(&t, r))
		EXPECT(&t, want, 8, TOL, "layer_norm");
	tg_free(&t);
	/* over the last two axes of [1,2,4] with no weight: the 8 values as one
	 * group: mean 22/8 = 2.75, var = (sum x^2)/8 - mean^2 = 78/8 - 7.5625 = 2.1875 */
	ir_attrs a;
	ir_attrs_init(IR_OP_layer_norm, &a);
	a.axis = 1;
	a.eps = 1e-3;
	for (int i = 0; i < 8; i++)
		want[i] = (x[i] - 2.75) / sqrt(2.1875 + 1e-3);
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_layer_norm, &a, 1, tin(&t, "x", IR_F32, SHAPE(1, 2, 4), x))))
		EXPECT(&t, want, 8, TOL, "layer_norm two axes");
	tg_free(&t);
	/* rms_norm: row 0 mean(x^2) = 30/4 = 7.5, row 1 = (4+4+4+36)/4 = 12 */
	const double ms[2] = {7.5, 12};
	for (int i = 0; i < 8; i++)
		want[i] = x[i] / sqrt(ms[i / 4] + 1e-5) * w[i % 4];
	tg_init(&t);
	r = top(&t, IR_OP_rms_norm, NULL, 2, tin(&t, "x", IR_F32, SHAPE(2, 4), x), tin(&t, "w", IR_F32, SHAPE(4), w));
	if (trun(&t, r))
		EXPECT(&t, want, 8, TOL, "rms_norm");
	tg_free(&t);
	/* batch_norm, eps 0, 2 channels: weight [1,3], bias [1,-1], mean [1,2],
	 * var [4, 0.25]: channel 0: (x-1)/2 + 1; channel 1: (x-2)/0.5*3 - 1 = 6x - 13 */
	const float bw[2] = {1, 3}, bb[2] = {1, -1}, bm[2] = {1, 2}, bv[2] = {4, 0.25f};
	const float xc[8] = {1, 3, 5, -1, 2, 3, 0.5f, 4}; /* NCHW [1,2,2,2] */
	const double wc[8] = {1, 2, 3, 0, -1, 5, -10, 11};
	for (int layout = 0; layout < 2; layout++) {
		float xl[8];
		double wl[8];
		for (int i = 0; i < 8; i++) { /* NHWC [1,2,2,1... C last]: element (h,w,c) */
			int c = i / 4, hw = i % 4, j = layout ? hw * 2 + c : i;
			xl[j] = xc[i];
			wl[j] = wc[i];
		}
		ir_attrs_init(IR_OP_batch_norm, &a);
		a.eps = 0;
		a.layout = layout ? IR_NHWC : IR_NCHW;
		tg_init(&t);
		ir_shape xs = layout ? SHAPE(1, 2, 2, 2) : SHAPE(1, 2, 2, 2);
		r = top(&t, IR_OP_batch_norm, &a, 5, tin(&t, "x", IR_F32, xs, xl), tparam(&t, "w", IR_F32, SHAPE(2), bw),
			tparam(&t, "b", IR_F32, SHAPE(2), bb), tparam(&t, "m", IR_F32, SHAPE(2), bm),
			tparam(&t, "v", IR_F32, SHAPE(2), bv));
		if (trun(&t, r))
			EXPECT(&t, wl, 8, TOL, layout ? "batch_norm NHWC" : "batch_norm NCHW");
		tg_free(&t);
	}
}

static void test_group_norm(void)
{
	/* x [1, 4, 2] = channels (1,3) (2,6) (0,4) (-1,-1); 2 groups:
	 * group 0 = {1,3,2,6}: mean 3, var (4+0+1+9)/4 = 3.5;
	 * group 1 = {0,4,-1,-1}: mean 0.5, var (0.25+12.25+2.25+2.25)/4 = 4.25.
	 * eps 0; weight (1, 2, 1, 1), bias (0, 0, 1, 0). */
	const float x[8] = {1, 3, 2, 6, 0, 4, -1, -1}, w[4] = {1, 2, 1, 1}, b[4] = {0, 0, 1, 0};
	tg t;
	tg_init(&t);
	ir_attrs a;
	ir_attrs_init(IR_OP_group_norm, &a);
	a.groups = 2;
	a.eps = 0;
	ir_ref r = top(&t, IR_OP_group_norm, &a, 3, tin(&t, "x", IR_F32, SHAPE(1, 4, 2), x),
		       tin(&t, "w", IR_F32, SHAPE(4), w), tin(&t, "b", IR_F32, SHAPE(4), b));
	double s0 = 1 / sqrt(3.5), s1 = 1 / sqrt(4.25);
	double want[8] = {-2 * s0, 0, 2 * -1 * s0, 2 * 3 * s0,
			  -0.5 * s1 + 1, 3.5 * s1 + 1, -1.5 * s1, -1.5 * s1};
	if (trun(&t, r))
		EXPECT(&t, want, 8, 1e-6, "group_norm");
	tg_free(&t);
}

static void test_matmul(void)
{
	/* [[1,2,3],[4,5,6]] @ [[1,-1],[0,2],[2,0.5]] = [[1+0+6, -1+4+1.5], [4+0+12, -4+10+3]] */
	const float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, -1, 0, 2, 2, 0.5f};
	tg t;
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_matmul, NULL, 2, tin(&t, "a", IR_F32, SHAPE(2, 3), a),
			 tin(&t, "b", IR_F32, SHAPE(3, 2), b))))
		EXPECT(&t, ((double[]){7, 4.5, 16, 9}), 4, TOL, "matmul 2-d");
	tg_free(&t);
	/* 1-D @ 1-D is a dot product of rank 0: 1*1 + 2*-1 + 3*0 = -1 */
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_matmul, NULL, 2, tin(&t, "a", IR_F32, SHAPE(3), a),
			 tin(&t, "b", IR_F32, SHAPE(3), b)))) {
		CHECK(t.out.shape.rank == 0);
		EXPECT(&t, ((double[]){-1}), 1, TOL, "matmul dot");
	}
	tg_free(&t);
	/* 1-D [2] @ [3,2,3] -> [3,3]: row vector [1,2] times each [2,3] matrix */
	float m3[18];
	fill(m3, 18, 1);
	double w3[9];
	for (int k = 0; k < 3; k++)
		for (int j = 0; j < 3; j++)
			w3[k * 3 + j] = 1.0 * m3[k * 6 + j] + 2.0 * m3[k * 6 + 3 + j];
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_matmul, NULL, 2, tin(&t, "a", IR_F32, SHAPE(2), a),
			 tin(&t, "b", IR_F32, SHAPE(3, 2, 3), m3))))
		EXPECT(&t, w3, 9, TOL, "matmul vector @ batch");
	tg_free(&t);
	/* batch broadcast: [2,1,2,3] @ [3,3,2] -> [2,3,2,2], each by the textbook sum */
	float x[12], y[18];
	fill(x, 12, 2);
	fill(y, 18, 3);
	double want[24];
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			for (int r = 0; r < 2; r++)
				for (int c = 0; c < 2; c++) {
					double s = 0;
					for (int k = 0; k < 3; k++)
						s += (double)x[i * 6 + r * 3 + k] * y[j * 6 + k * 2 + c];
					want[((i * 3 + j) * 2 + r) * 2 + c] = s;
				}
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_matmul, NULL, 2, tin(&t, "a", IR_F32, SHAPE(2, 1, 2, 3), x),
			 tin(&t, "b", IR_F32, SHAPE(3, 3, 2), y))))
		EXPECT(&t, want, 24, TOL, "matmul batch broadcast");
	tg_free(&t);
	/* linear: x [2,3] @ w[2,3]^T + b: w = [[1,0,-1],[0.5,0.5,0.5]], b = [10, -1]:
	 * row [1,2,3]: 1-3+10 = 8, 3-1 = 2; row [4,5,6]: 4-6+10 = 8, 7.5-1 = 6.5 */
	const float lw[6] = {1, 0, -1, 0.5f, 0.5f, 0.5f}, lb[2] = {10, -1};
	tg_init(&t);
	ir_ref r = top(&t, IR_OP_linear, NULL, 3, tin(&t, "x", IR_F32, SHAPE(2, 3), a),
		       tparam(&t, "w", IR_F32, SHAPE(2, 3), lw), tparam(&t, "b", IR_F32, SHAPE(2), lb));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){8, 2, 8, 6.5}), 4, TOL, "linear");
	tg_free(&t);
	/* without bias, x [1,1,3]: [1-3, 3] */
	tg_init(&t);
	r = top(&t, IR_OP_linear, NULL, 2, tin(&t, "x", IR_F32, SHAPE(1, 1, 3), a), tparam(&t, "w", IR_F32, SHAPE(2, 3), lw));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){-2, 3}), 2, TOL, "linear no bias");
	tg_free(&t);
}

/* Textbook conv2d on NCHW/OIHW, one output element at a time. */
static double conv_at(const float *x, const float *w, const float *b, int C, int H, int W, int O,
		      int KH, int KW, int G, const int st[2], const int pad[4], const int dil[2],
		      int n, int o, int oh, int ow)
{
	int cg = C / G, g = o / (O / G);
	double s = b ? b[o] : 0;
	for (int c = 0; c < cg; c++)
		for (int i = 0; i < KH; i++)
			for (int j = 0; j < KW; j++) {
				int ih = oh * st[0] - pad[0] + i * dil[0], iw = ow * st[1] - pad[1] + j * dil[1];
				if (ih < 0 || ih >= H || iw < 0 || iw >= W)
					continue;
				s += (double)x[((n * C + g * cg + c) * H + ih) * W + iw] * w[((o * cg + c) * KH + i) * KW + j];
			}
	return s;
}

static void conv_case(int N, int C, int H, int W, int O, int KH, int KW, int G, const int st[2],
		      const int pad[4], const int dil[2], bool bias, const char *what)
{
	int cg = C / G;
	int OH = (H + pad[0] + pad[2] - dil[0] * (KH - 1) - 1) / st[0] + 1;
	int OW = (W + pad[1] + pad[3] - dil[1] * (KW - 1) - 1) / st[1] + 1;
	int nx = N * C * H * W, nw = O * cg * KH * KW, ny = N * O * OH * OW;
	float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), *b = malloc(O * sizeof *b);
	float *xh = malloc(nx * sizeof *x), *wh = malloc(nw * sizeof *w);
	double *y = malloc(ny * sizeof *y), *yh = malloc(ny * sizeof *y);
	fill(x, nx, 11);
	fill(w, nw, 12);
	fill(b, O, 13);
	/* NHWC copies: x (n,h,w,c), w (o,kh,kw,i), y (n,oh,ow,o) */
	for (int n = 0; n < N; n++)
		for (int c = 0; c < C; c++)
			for (int h = 0; h < H; h++)
				for (int v = 0; v < W; v++)
					xh[((n * H + h) * W + v) * C + c] = x[((n * C + c) * H + h) * W + v];
	for (int o = 0; o < O; o++)
		for (int c = 0; c < cg; c++)
			for (int i = 0; i < KH; i++)
				for (int j = 0; j < KW; j++)
					wh[((o * KH + i) * KW + j) * cg + c] = w[((o * cg + c) * KH + i) * KW + j];
	for (int n = 0; n < N; n++)
		for (int o = 0; o < O; o++)
			for (int i = 0; i < OH; i++)
				for (int j = 0; j < OW; j++) {
					double v = conv_at(x, w, bias ? b : NULL, C, H, W, O, KH, KW, G, st, pad, dil, n, o, i, j);
					y[((n * O + o) * OH + i) * OW + j] = v;
					yh[((n * OH + i) * OW + j) * O + o] = v;
				}
	for (int layout = 0; layout < 2; layout++) {
		ir_attrs a;
		ir_attrs_init(IR_OP_conv2d, &a);
		a.stride = INTS(st[0], st[1]);
		a.pad = INTS(pad[0], pad[1], pad[2], pad[3]);
		a.dilation = INTS(dil[0], dil[1]);
		a.groups = G;
		a.layout = layout ? IR_NHWC : IR_NCHW;
		tg t;
		tg_init(&t);
		ir_ref xi = layout ? tin(&t, "x", IR_F32, SHAPE(N, H, W, C), xh) : tin(&t, "x", IR_F32, SHAPE(N, C, H, W), x);
		ir_ref wi = layout ? tparam(&t, "w", IR_F32, SHAPE(O, KH, KW, cg), wh)
				   : tparam(&t, "w", IR_F32, SHAPE(O, cg, KH, KW), w);
		ir_ref r = bias ? top(&t, IR_OP_conv2d, &a, 3, xi, wi, tparam(&t, "b", IR_F32, SHAPE(O), b))
				: top(&t, IR_OP_conv2d, &a, 2, xi, wi);
		char name[128];
		snprintf(name, sizeof name, "%s %s", what, layout ? "NHWC" : "NCHW");
		if (trun(&t, r))
			EXPECT(&t, layout ? yh : y, ny, TOL, name);
		tg_free(&t);
	}
	free(x), free(w), free(b), free(xh), free(wh), free(y), free(yh);
}

static void test_conv(void)
{
	/* By hand: x = [[1,2,3],[4,5,6],[7,8,9]], w = [[1,2],[3,4]], stride 2,
	 * pad 1 all round, output 2x2 (floor((3+2-2)/2)+1 = 2):
	 *   (0,0): rows -1,0 cols -1,0: only x[0][0]*w[1][1] = 4
	 *   (0,1): rows -1,0 cols 1,2: x[0][1]*w[1][0] + x[0][2]*w[1][1] = 6+12 = 18
	 *   (1,0): rows 1,2 cols -1,0: x[1][0]*w[0][1] + x[2][0]*w[1][1] = 8+28 = 36
	 *   (1,1): rows 1,2 cols 1,2: 5*1 + 6*2 + 8*3 + 9*4 = 77 */
	const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 2, 3, 4};
	ir_attrs a;
	ir_attrs_init(IR_OP_conv2d, &a);
	a.stride = INTS(2, 2);
	a.pad = INTS(1, 1, 1, 1);
	tg t;
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_conv2d, &a, 2, tin(&t, "x", IR_F32, SHAPE(1, 1, 3, 3), x),
			 tparam(&t, "w", IR_F32, SHAPE(1, 1, 2, 2), w))))
		EXPECT(&t, ((double[]){4, 18, 36, 77}), 4, 0, "conv2d by hand");
	tg_free(&t);
	/* against the textbook loop, in both layouts */
	conv_case(1, 3, 5, 5, 4, 3, 3, 1, (int[]){1, 1}, (int[]){1, 1, 1, 1}, (int[]){1, 1}, true, "conv 3x3 same");
	conv_case(2, 4, 7, 6, 6, 3, 2, 2, (int[]){2, 1}, (int[]){1, 0, 2, 1}, (int[]){2, 1}, true,
		  "conv groups stride asym pad dilation");
	conv_case(1, 6, 6, 5, 6, 3, 3, 6, (int[]){2, 2}, (int[]){1, 1, 1, 1}, (int[]){1, 1}, false, "conv depthwise");
	conv_case(1, 8, 4, 4, 5, 1, 1, 1, (int[]){1, 1}, (int[]){0, 0, 0, 0}, (int[]){1, 1}, true, "conv 1x1");
	conv_case(1, 2, 9, 9, 3, 3, 3, 1, (int[]){3, 2}, (int[]){2, 0, 0, 2}, (int[]){2, 3}, false,
		  "conv wide stride and dilation");
}

static void test_pools(void)
{
	/* x [1,1,4,4] = 1..16, x[r][c] = 4r + c + 1; kernel 3, stride 2, pad 1,
	 * ceil_mode: ceil((4+2-3)/2)+1 = 3 outputs per axis (the last window
	 * starts at 3, inside the input). Window rows: [-1,1], [1,3], [3,5]. */
	float x[16];
	for (int i = 0; i < 16; i++)
		x[i] = (float)(i + 1);
	ir_attrs a;
	ir_attrs_init(IR_OP_max_pool2d, &a);
	a.kernel = INTS(3, 3);
	a.stride = INTS(2, 2);
	a.pad = INTS(1, 1, 1, 1);
	a.ceil_mode = true;
	/* max: the bottom-right real element of each window: rows 1,3,3 cols 1,3,3 */
	tg t;
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_max_pool2d, &a, 1, tin(&t, "x", IR_F32, SHAPE(1, 1, 4, 4), x))))
		EXPECT(&t, ((double[]){6, 8, 8, 14, 16, 16, 14, 16, 16}), 9, 0, "max_pool2d pad ceil");
	tg_free(&t);
	/* avg, count_include_pad (PyTorch): windows clipped to the padded input
	 * [-1,5): sizes 3,3,2 per axis; sums of the real elements, with rows R
	 * and cols C: |C| * sum(4r) + |R| * sum(c+1):
	 *   R={0,1}:   C={0,1}: 8+6 = 14   C={1,2,3}: 12+18 = 30   C={3}: 4+8 = 12
	 *   R={1,2,3}: C={0,1}: 48+9 = 57  C={1,2,3}: 72+27 = 99   C={3}: 24+12 = 36
	 *   R={3}:     C={0,1}: 24+3 = 27  C={1,2,3}: 36+9 = 45    C={3}: 12+4 = 16 */
	ir_attrs_init(IR_OP_avg_pool2d, &a);
	a.kernel = INTS(3, 3);
	a.stride = INTS(2, 2);
	a.pad = INTS(1, 1, 1, 1);
	a.ceil_mode = true;
	a.count_include_pad = true;
	double inc[9] = {14.0 / 9, 30.0 / 9, 12.0 / 6, 57.0 / 9, 99.0 / 9, 36.0 / 6, 27.0 / 6, 45.0 / 6, 16.0 / 4};
	double exc[9] = {14.0 / 4, 30.0 / 6, 12.0 / 2, 57.0 / 6, 99.0 / 9, 36.0 / 3, 27.0 / 2, 45.0 / 3, 16.0 / 1};
	for (int cip = 1; cip >= 0; cip--) {
		a.count_include_pad = cip;
		for (int layout = 0; layout < 2; layout++) {
			/* channel 1 is channel 0 negated; its averages are negated */
			float x2[32];
			double want[18];
			for (int i = 0; i < 16; i++) {
				x2[layout ? 2 * i : i] = x[i];
				x2[layout ? 2 * i + 1 : 16 + i] = -x[i];
			}
			for (int i = 0; i < 9; i++) {
				double v = cip ? inc[i] : exc[i];
				want[layout ? 2 * i : i] = v;
				want[layout ? 2 * i + 1 : 9 + i] = -v;
			}
			a.layout = layout ? IR_NHWC : IR_NCHW;
			tg_init(&t);
			ir_ref xi = tin(&t, "x", IR_F32, layout ? SHAPE(1, 4, 4, 2) : SHAPE(1, 2, 4, 4), x2);
			char name[96];
			snprintf(name, sizeof name, "avg_pool2d count_include_pad=%d %s", cip, layout ? "NHWC" : "NCHW");
			if (trun(&t, top(&t, IR_OP_avg_pool2d, &a, 1, xi)))
				EXPECT(&t, want, 18, TOL, name);
			tg_free(&t);
		}
	}
	/* max with dilation [1,2] over one row [1,5,2,4,3], kernel [1,2], stride 1:
	 * windows (0,2) (1,3) (2,4): max(1,2) = 2, max(5,4) = 5, max(2,3) = 3 */
	const float row[5] = {1, 5, 2, 4, 3};
	ir_attrs_init(IR_OP_max_pool2d, &a);
	a.kernel = INTS(1, 2);
	a.stride = INTS(1, 1);
	a.dilation = INTS(1, 2);
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_max_pool2d, &a, 1, tin(&t, "x", IR_F32, SHAPE(1, 1, 1, 5), row))))
		EXPECT(&t, ((double[]){2, 5, 3}), 3, 0, "max_pool2d dilation");
	tg_free(&t);
	/* stride left empty means stride = kernel: kernel 2 over 1..16 gives the
	 * bottom-right of each 2x2 block: 6 8 14 16 */
	ir_attrs_init(IR_OP_max_pool2d, &a);
	a.kernel = INTS(2, 2);
	tg_init(&t);
	if (trun(&t, top(&t, IR_OP_max_pool2d, &a, 1, tin(&t, "x", IR_F32, SHAPE(1, 1, 4, 4), x))))
		EXPECT(&t, ((double[]){6, 8, 14, 16}), 4, 0, "max_pool2d default stride");
	tg_free(&t);
	/* global_avg_pool: 2 channels 1..16 and -(1..16): means 8.5 and -8.5 */
	for (int layout = 0; layout < 2; layout++) {
		float x2[32];
		for (int i = 0; i < 16; i++) {
			x2[layout ? 2 * i : i] = x[i];
			x2[layout ? 2 * i + 1 : 16 + i] = -x[i];
		}
		ir_attrs_init(IR_OP_global_avg_pool, &a);
		a.layout = layout ? IR_NHWC : IR_NCHW;
		tg_init(&t);
		ir_ref xi = tin(&t, "x", IR_F32, layout ? SHAPE(1, 4, 4, 2) : SHAPE(1, 2, 4, 4), x2);
		if (trun(&t, top(&t, IR_OP_global_avg_pool, &a, 1, xi)))
			EXPECT(&t, ((double[]){8.5, -8.5}), 2, TOL, "global_avg_pool");
		tg_free(&t);
	}
}

/* Textbook attention for one [L,E] x [S,E] x [S,Ev] problem. kind: 0 none,
 * 1 causal, 2 bool mask, 3 float mask. */
static void attention_ref(const float *q, const float *k, const float *v, const void *mask, int kind,
			  int L, int S, int E, int Ev, double scale, double *out)
{
	for (int i = 0; i < L; i++) {
		double sc[16], mx = -INFINITY, sum = 0;
		for (int j = 0; j < S; j++) {
			double d = 0;
			for (int c = 0; c < E; c++)
				d += (double)q[i * E + c] * k[j * E + c];
			d *= scale;
			if (kind == 1 && j > i)
				d = -INFINITY;
			if (kind == 2 && !((const uint8_t *)mask)[i * S + j])
				d = -INFINITY;
			if (kind == 3)
				d += ((const float *)mask)[i * S + j];
			sc[j] = d;
			mx = d > mx ? d : mx;
		}
		for (int j = 0; j < S; j++)
			sum += exp(sc[j] - mx);
		for (int c = 0; c < Ev; c++) {
			double acc = 0;
			for (int j = 0; j < S; j++)
				acc += exp(sc[j] - mx) / sum * v[j * Ev + c];
			out[i * Ev + c] = acc;
		}
	}
}

static void test_attention(void)
{
	enum { H = 2, L = 3, S = 4, E = 2, EV = 3 };
	float q[H * L * E], k[H * S * E], v[H * S * EV], fm[L * S];
	fill(q, H * L * E, 21);
	fill(k, H * S * E, 22);
	fill(v, H * S * EV, 23);
	fill(fm, L * S, 24);
	const uint8_t bm[L * S] = {1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1};
	const char *names[] = {"attention plain", "attention causal", "attention bool mask", "attention float mask"};
	for (int kind = 0; kind < 4; kind++) {
		ir_attrs a;
		ir_attrs_init(IR_OP_scaled_dot_product_attention, &a);
		a.causal = kind == 1;
		a.scale = kind == 3 ? 0.25 : 0; /* 0: 1/sqrt(E) */
		double scale = kind == 3 ? 0.25 : 1 / sqrt(2.0), want[H * L * EV];
		for (int h = 0; h < H; h++)
			attention_ref(q + h * L * E, k + h * S * E, v + h * S * EV, kind == 2 ? (const void *)bm : fm,
				      kind, L, S, E, EV, scale, want + h * L * EV);
		tg t;
		tg_init(&t);
		ir_ref qi = tin(&t, "q", IR_F32, SHAPE(H, L, E), q), ki = tin(&t, "k", IR_F32, SHAPE(H, S, E), k);
		ir_ref vi = tin(&t, "v", IR_F32, SHAPE(H, S, EV), v), r;
		if (kind == 2) /* [L,S] broadcast over heads */
			r = top(&t, IR_OP_scaled_dot_product_attention, &a, 4, qi, ki, vi,
				tin(&t, "m", IR_BOOL, SHAPE(L, S), bm));
		else if (kind == 3)
			r = top(&t, IR_OP_scaled_dot_product_attention, &a, 4, qi, ki, vi,
				tin(&t, "m", IR_F32, SHAPE(1, L, S), fm));
		else
			r = top(&t, IR_OP_scaled_dot_product_attention, &a, 3, qi, ki, vi);
		if (trun(&t, r))
			EXPECT(&t, want, H * L * EV, TOL, names[kind]);
		tg_free(&t);
	}
	/* causal by hand: L = S = 2, q . k = 0 everywhere, so row 0 sees only
	 * v[0] and row 1 averages v[0] and v[1]: [1, 10] -> row 0: 1, row 1: 5.5 */
	const float zq[2] = {0, 0}, zk[2] = {1, 2}, zv[2] = {1, 10};
	ir_attrs a;
	ir_attrs_init(IR_OP_scaled_dot_product_attention, &a);
	a.causal = true;
	tg t;
	tg_init(&t);
	ir_ref r = top(&t, IR_OP_scaled_dot_product_attention, &a, 3, tin(&t, "q", IR_F32, SHAPE(2, 1), zq),
		       tin(&t, "k", IR_F32, SHAPE(2, 1), zk), tin(&t, "v", IR_F32, SHAPE(2, 1), zv));
	/* q = 0, so every score is 0 regardless of k */
	if (trun(&t, r))
		EXPECT(&t, ((double[]){1, 5.5}), 2, TOL, "attention causal by hand");
	tg_free(&t);
	/* a row whose scores are all masked is NaN, as in PyTorch; the other
	 * row (mask [1,0]) takes v[0] */
	const uint8_t m2[4] = {1, 0, 0, 0};
	ir_attrs_init(IR_OP_scaled_dot_product_attention, &a);
	tg_init(&t);
	r = top(&t, IR_OP_scaled_dot_product_attention, &a, 4, tin(&t, "q", IR_F32, SHAPE(2, 1), zq),
		tin(&t, "k", IR_F32, SHAPE(2, 1), zk), tin(&t, "v", IR_F32, SHAPE(2, 1), zv),
		tin(&t, "m", IR_BOOL, SHAPE(2, 2), m2));
	if (trun(&t, r))
		EXPECT(&t, ((double[]){1, NAN}), 2, 0, "attention fully masked row");
	tg_free(&t);
	/* GQA: 4 query heads on 2 key/value heads; query head h reads head h / 2 */
	{
		enum { HQ = 4, HK = 2 };
		float gq[HQ * L * E], gk[HK * S * E], gv[HK * S * EV];
		fill(gq, HQ * L * E, 31);
		fill(gk, HK * S * E, 32);
		fill(gv, HK * S * EV, 33);
		double want[HQ * L * EV];
		for (int h = 0; h < HQ; h++)
			attention_ref(gq + h * L * E, gk + h / 2 * S * E, gv + h / 2 * S * EV, NULL, 1, L, S, E, EV,
				      1 / sqrt(2.0), want + h * L * EV);
		ir_attrs_init(IR_OP_scaled_dot_product_attention, &a);
		a.causal = true;
		tg_init(&t);
		r = top(&t, IR_OP_scaled_dot_product_attention, &a, 3, tin(&t, "q", IR_F32, SHAPE(1, HQ, L, E), gq),
			tin(&t, "k", IR_F32, SHAPE(1, HK, S, E), gk), tin(&t, "v", IR_F32, SHAPE(1, HK, S, EV), gv));
		if (trun(&t, r))
			EXPECT(&t, want, HQ * L * EV, TOL, "attention GQA causal");
		tg_free(&t);
	}
}

int main(void)
{
	test_norms();
	test_group_norm();
	test_matmul();
	test_conv();
	test_pools();
	test_attention();
	return check_done("ref_nn");
}
