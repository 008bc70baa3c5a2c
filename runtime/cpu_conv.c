/* cpu_conv.c: the cpu runtime's convolutions (cpu_int.h), NHWC f32:
 * im2col by tiles of output pixels into products (OpenBLAS, or
 * cpu_pk_tile on weights packed once), and Winograd F(2x2) and F(4x4)
 * for 3x3 stride-1 ones. */
#include "runtime/cpu_int.h"

#include "ir/log.h"

#include <cblas.h>

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

/* ---- convolutions: im2col by tiles of output pixels into sgemm ---- */


typedef struct cjob {
	rt_cpu *c;
	const cl_step *s;
	const ir_node *n;
	const float *x, *w, *bias;
	float *out;
	int64_t N, H, W, C, O, KH, KW, Ho, Wo, sh, sw, pt, pl, dh, dw, K, M;
	bool direct; /* 1x1, stride 1, no pad: x is the patch matrix */
	void **ebufs;
	kern_fn *epi;
	int64_t ctile, nct; /* output channels per task, tasks per pixel tile */
	int64_t tile;       /* output pixels per task */
	const float *wp;    /* the weights packed for pk_kernel, or NULL (OpenBLAS) */
	size_t apoff;       /* where a task's packed rows start in its scratch */
} cjob;

static void conv_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	cjob *j = ctx;
	float *col = j->c->scratch[tid];
	for (int64_t t = lo; t < hi; t++) {
		int64_t ct = t % j->nct, pt_ = t / j->nct;
		int64_t p0 = pt_ * j->tile, p1 = p0 + j->tile < j->M ? p0 + j->tile : j->M;
		int64_t o0 = ct * j->ctile, o1 = o0 + j->ctile < j->O ? o0 + j->ctile : j->O;
		float *C = j->out + p0 * j->O;
		if (j->K == 0) {
			/* no input channels: the bias (or 0) alone; x and the
			 * scratch hold nothing (NULL), so nothing is gathered or
			 * multiplied */
			for (int64_t p = p0; p < p1; p++) {
				if (j->bias)
					memcpy(C + (p - p0) * j->O + o0, j->bias + o0, (size_t)(o1 - o0) * sizeof *C);
				else
					memset(C + (p - p0) * j->O + o0, 0, (size_t)(o1 - o0) * sizeof *C);
			}
			if (j->epi)
				j->epi(j->ebufs, p0, p1, o0, o1);
			continue;
		}
		const float *A;
		if (j->direct) {
			A = j->x + p0 * j->C;
		} else {
			for (int64_t p = p0; p < p1; p++) {
				int64_t wo = p % j->Wo, ho = p / j->Wo % j->Ho, nb = p / (j->Wo * j->Ho);
				float *row = col + (p - p0) * j->K;
				for (int64_t kh = 0; kh < j->KH; kh++) {
					int64_t hi_ = ho * j->sh - j->pt + kh * j->dh;
					if (j->dw == 1) {
						/* the row's taps are adjacent pixels: one run of
						 * KW * C floats in NHWC, zeros where it leaves x */
						int64_t wi0 = wo * j->sw - j->pl;
						int64_t k0 = wi0 < 0 ? -wi0 : 0, k1 = j->W - wi0 < j->KW ? j->W - wi0 : j->KW;
						float *dst = row + kh * j->KW * j->C;
						if (hi_ < 0 || hi_ >= j->H || k1 <= k0) {
							memset(dst, 0, (size_t)(j->KW * j->C) * sizeof *dst);
							continue;
						}
						if (k0 > 0)
							memset(dst, 0, (size_t)(k0 * j->C) * sizeof *dst);
						memcpy(dst + k0 * j->C, j->x + ((nb * j->H + hi_) * j->W + wi0 + k0) * j->C,
						       (size_t)((k1 - k0) * j->C) * sizeof *dst);
						if (k1 < j->KW)
							memset(dst + k1 * j->C, 0, (size_t)((j->KW - k1) * j->C) * sizeof *dst);
						continue;
					}
					for (int64_t kw = 0; kw < j->KW; kw++) {
						int64_t wi = wo * j->sw - j->pl + kw * j->dw;
						float *dst = row + (kh * j->KW + kw) * j->C;
						if (hi_ < 0 || hi_ >= j->H || wi < 0 || wi >= j->W)
							memset(dst, 0, (size_t)j->C * sizeof *dst);
						else
							memcpy(dst, j->x + ((nb * j->H + hi_) * j->W + wi) * j->C,
							       (size_t)j->C * sizeof *dst);
					}
				}
			}
			A = col;
		}
		/* the bias first and the product added to it (beta 1): one pass
		 * over the tile instead of OpenBLAS's zeroing and a bias pass */
		float beta = 0.0f;
		if (j->bias) {
			for (int64_t p = p0; p < p1; p++)
				memcpy(C + (p - p0) * j->O + o0, j->bias + o0, (size_t)(o1 - o0) * sizeof *C);
			beta = 1.0f;
		}
		if (j->wp)
			cpu_pk_tile(A, j->K, p1 - p0, j->K, j->wp, j->O, o0 / PK_NR, (o1 + PK_NR - 1) / PK_NR, C, j->O, beta != 0.0f,
				0, col + j->apoff);
		else
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)(p1 - p0), (blasint)(o1 - o0),
				    (blasint)j->K, 1.0f, A, (blasint)j->K, j->w + o0 * j->K, (blasint)j->K, beta, C + o0,
				    (blasint)j->O);
		/* the fused epilogue on the tile while it is in cache: its rows
		 * are output pixels, its columns this task's output channels */
		if (j->epi)
			j->epi(j->ebufs, p0, p1, o0, o1);
	}
}

/* ---- Winograd F(m x m, 3x3), m = 2 or 4 (Lavin and Gray, "Fast
 * Algorithms for Convolutional Neural Networks", 2016), for 3x3 stride-1
 * undilated convolutions: each m x m block of output pixels from an
 * (m + 2)^2 input patch, V = B^T d B per channel, (m + 2)^2 products
 * (tiles x C) by (C x O) on the transformed weights U = G g G^T, then
 * Y = A^T M A. Multiplies per output: 36 / 4 = 9 direct, 16 / 4 = 4 with
 * m = 2, 36 / 16 = 2.25 with m = 4 (whose transforms take larger
 * coefficients: its error in fp32 is about 10x m = 2's, still within the
 * cpu device's 2e-5 against the reference; measured in tests/cpu_ref.py).
 * U is made on the first run (every run when the weights are not a weight
 * of the plan), in panels for pk_kernel on an AVX2/FMA host (no packing
 * of U per task), else [slots][O][C] for cblas_sgemm. ---- */

typedef struct wjob {
	rt_cpu *c;
	const float *x, *w, *bias;
	float *u;    /* panels: [slots][ceil(O/16)][C][16]; else [slots][O][C] */
	bool panels;
	int m, al;   /* output block m x m, patch al x al (al = m + 2): al^2 slots */
	float *out;
	int64_t H, W, C, O, Ho, Wo, pt, pl, th, tw, T;
	int64_t nt, nco, ocw; /* tiles per task, channel tasks, channels per task */
	kern_fn *epi;         /* the fused epilogue, or NULL */
	void **ebufs;
} wjob;

/* g (3 taps) -> u (al values) = G g. m = 2: G = [1 0 0; .5 .5 .5; .5 -.5
 * .5; 0 0 1]; m = 4: G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24
 * 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]. */
static void wino_g(int m, const float g[3], float *u)
{
	if (m == 2) {
		u[0] = g[0];
		u[1] = 0.5f * (g[0] + g[1] + g[2]);
		u[2] = 0.5f * (g[0] - g[1] + g[2]);
		u[3] = g[2];
		return;
	}
	u[0] = g[0] / 4.0f;
	u[1] = -(g[0] + g[1] + g[2]) / 6.0f;
	u[2] = -(g[0] - g[1] + g[2]) / 6.0f;
	u[3] = g[0] / 24.0f + g[1] / 12.0f + g[2] / 6.0f;
	u[4] = g[0] / 24.0f - g[1] / 12.0f + g[2] / 6.0f;
	u[5] = g[2];
}

/* u (al x al) = G g G^T for output channel o, input channel ci. */
static void wino_u(const wjob *j, int64_t o, int64_t ci, float u[6][6])
{
	int64_t C = j->C;
	float t[6][3], v[6];
	for (int q = 0; q < 3; q++) { /* columns: t = G g */
		float g[3] = {j->w[((o * 3 + 0) * 3 + q) * C + ci], j->w[((o * 3 + 1) * 3 + q) * C + ci],
			      j->w[((o * 3 + 2) * 3 + q) * C + ci]};
		wino_g(j->m, g, v);
		for (int a = 0; a < j->al; a++)
			t[a][q] = v[a];
	}
	for (int a = 0; a < j->al; a++) /* rows: t G^T */
		wino_g(j->m, t[a], u[a]);
}

/* U for output channels [lo, hi) ([slots][O][C], each row written in order). */
static void wino_weight_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	wjob *j = ctx;
	int64_t C = j->C, O = j->O;
	float u[6][6];
	for (int64_t o = lo; o < hi; o++)
		for (int64_t ci = 0; ci < C; ci++) {
			wino_u(j, o, ci, u);
			for (int a = 0; a < j->al; a++)
				for (int b = 0; b < j->al; b++)
					j->u[((int64_t)(a * j->al + b) * O + o) * C + ci] = u[a][b];
		}
}

/* U in panels for panels [lo, hi) of 16 output channels: each slot's
 * 16 columns of an input channel side by side, one cache line (written
 * one channel at a time, the 16 or 36 slots' lines were each touched 16
 * times: 22 ms for a 512-channel layer's 17 MB on the first run) */
static void wino_panel_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	wjob *j = ctx;
	int64_t C = j->C, O = j->O, np = (O + PK_NR - 1) / PK_NR;
	int ns = j->al * j->al;
	float u[6][6], line[36][PK_NR];
	for (int64_t p = lo; p < hi; p++)
		for (int64_t ci = 0; ci < C; ci++) {
			for (int q = 0; q < PK_NR; q++) {
				int64_t o = p * PK_NR + q;
				if (o < O)
					wino_u(j, o, ci, u);
				for (int xi = 0; xi < ns; xi++)
					line[xi][q] = o < O ? u[xi / j->al][xi % j->al] : 0.0f;
			}
			for (int xi = 0; xi < ns; xi++)
				memcpy(j->u + (((int64_t)xi * np + p) * C + ci) * PK_NR, line[xi], sizeof line[xi]);
		}
}

/* F(4x4, 3x3)'s transforms, 8 channels at a time: m = 4 runs only on a
 * host with AVX2 and FMA (its products are pk_kernel's), and GCC left
 * these six-way loops scalar. B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4
 * -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]; A^T = [1 1 1 1 1
 * 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]. */
#define WINO4_BT(L, S, ADD, SUB, MUL, FMA, FNMA, K)                                                              \
	do {                                                                                                       \
		float *y0_ = y + (i), *y1_ = y0_ + ys, *y2_ = y1_ + ys, *y3_ = y2_ + ys, *y4_ = y3_ + ys,             \
		      *y5_ = y4_ + ys;                                                                             \
		__typeof__(L(x[0] + (i))) a = L(x[0] + (i)), b = L(x[1] + (i)), c = L(x[2] + (i)),                    \
					  d = L(x[3] + (i)), e = L(x[4] + (i)), f = L(x[5] + (i));                    \
		__typeof__(a) p = FNMA(K(4.0f), c, e), q = FNMA(K(4.0f), b, d), r = SUB(e, c),                       \
			      s_ = MUL(K(2.0f), SUB(d, b));                                                         \
		S(y0_, ADD(FNMA(K(5.0f), c, MUL(K(4.0f), a)), e));                                                  \
		S(y1_, ADD(p, q));                                                                                 \
		S(y2_, SUB(p, q));                                                                                 \
		S(y3_, ADD(r, s_));                                                                                \
		S(y4_, SUB(r, s_));                                                                                \
		S(y5_, ADD(FNMA(K(5.0f), d, MUL(K(4.0f), b)), f));                                                  \
	} while (0)
#define WINO4_AT(L, S, ADD, SUB, MUL, FMA, FNMA, K, B0)                                                          \
	do {                                                                                                       \
		__typeof__(L(x[0] + (i))) x1_ = L(x[1] + (i)), x2_ = L(x[2] + (i)), x3_ = L(x[3] + (i)),            \
					  x4_ = L(x[4] + (i)), b0 = (B0);                                           \
		__typeof__(x1_) s1 = ADD(x1_, x2_), d1 = SUB(x1_, x2_), s2 = ADD(x3_, x4_), d2 = SUB(x3_, x4_);       \
		S(y[0] + (i), ADD(ADD(L(x[0] + (i)), ADD(s1, s2)), b0));                                            \
		S(y[1] + (i), ADD(FMA(K(2.0f), d2, d1), b0));                                                      \
		S(y[2] + (i), ADD(FMA(K(4.0f), s2, s1), b0));                                                      \
		S(y[3] + (i), ADD(ADD(FMA(K(8.0f), d2, d1), L(x[5] + (i))), b0));                                   \
	} while (0)
#define SC_L(p) (*(p))
#define SC_S(p, v) (*(p) = (v))
#define SC_ADD(a, b) ((a) + (b))
#define SC_SUB(a, b) ((a) - (b))
#define SC_MUL(a, b) ((a) * (b))
#define SC_FMA(a, b, c) ((a) * (b) + (c))
#define SC_FNMA(a, b, c) ((c) - (a) * (b))
#define SC_K(v) (v)

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) static void wino4_bt(const float *const *x, float *y, int64_t ys, int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		WINO4_BT(_mm256_loadu_ps, _mm256_storeu_ps, _mm256_add_ps, _mm256_sub_ps, _mm256_mul_ps, _mm256_fmadd_ps,
			 _mm256_fnmadd_ps, _mm256_set1_ps);
	for (; i < n; i++)
		WINO4_BT(SC_L, SC_S, SC_ADD, SC_SUB, SC_MUL, SC_FMA, SC_FNMA, SC_K);
}

__attribute__((target("avx2,fma"))) static void wino4_at(const float *const *x, float *const *y, const float *bias,
							   int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		WINO4_AT(_mm256_loadu_ps, _mm256_storeu_ps, _mm256_add_ps, _mm256_sub_ps, _mm256_mul_ps, _mm256_fmadd_ps,
			 _mm256_fnmadd_ps, _mm256_set1_ps, bias ? _mm256_loadu_ps(bias + i) : _mm256_setzero_ps());
	for (; i < n; i++)
		WINO4_AT(SC_L, SC_S, SC_ADD, SC_SUB, SC_MUL, SC_FMA, SC_FNMA, SC_K, bias ? bias[i] : 0.0f);
}
#else
static void wino4_bt(const float *const *x, float *y, int64_t ys, int64_t n)
{
	(void)x, (void)y, (void)ys, (void)n; /* m = 4 needs cpu_pk_host(), false here */
}
static void wino4_at(const float *const *x, float *const *y, const float *bias, int64_t n)
{
	(void)x, (void)y, (void)bias, (void)n;
}
#endif

/* One B^T step over n channels: y[i] = (B^T x)[i], x and y al vectors of
 * n channels (y's at stride ys floats), vectorized over the channels. */
static void wino_bt(int m, const float *const *x, float *restrict y, int64_t ys, int64_t n)
{
	if (m == 2) {
		const float *restrict x0 = x[0], *restrict x1 = x[1], *restrict x2 = x[2], *restrict x3 = x[3];
		float *restrict y0 = y, *restrict y1 = y + ys, *restrict y2 = y + 2 * ys, *restrict y3 = y + 3 * ys;
		for (int64_t i = 0; i < n; i++) {
			float a = x0[i], b = x1[i], c = x2[i], d = x3[i];
			y0[i] = a - c;
			y1[i] = b + c;
			y2[i] = c - b;
			y3[i] = b - d;
		}
		return;
	}
	wino4_bt(x, y, ys, n);
}

/* One A^T step over n channels: y[k] = (A^T x)[k] (+ bias), x al vectors,
 * y m pointers. m = 2: A^T = [1 1 1 0; 0 1 -1 -1]; m = 4: A^T = [1 1 1 1
 * 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]. */
static void wino_at(int m, const float *const *x, float *const *y, const float *restrict bias, int64_t n)
{
	if (m == 2) {
		const float *restrict x0 = x[0], *restrict x1 = x[1], *restrict x2 = x[2], *restrict x3 = x[3];
		float *restrict y0 = y[0], *restrict y1 = y[1];
		if (bias)
			for (int64_t i = 0; i < n; i++) {
				y0[i] = x0[i] + x1[i] + x2[i] + bias[i];
				y1[i] = x1[i] - x2[i] - x3[i] + bias[i];
			}
		else
			for (int64_t i = 0; i < n; i++) {
				y0[i] = x0[i] + x1[i] + x2[i];
				y1[i] = x1[i] - x2[i] - x3[i];
			}
		return;
	}
	wino4_at(x, y, bias, n);
}

static void wino_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	wjob *j = ctx;
	int64_t C = j->C, O = j->O, nt = j->nt, ocw = j->ocw;
	int m = j->m, al = j->al, ns = al * al;
	int64_t es = C > ocw ? C : ocw;
	float *V = j->c->scratch[tid];  /* [slots][nt][C] */
	float *Mb = V + ns * nt * C;    /* [slots][nt][ocw] */
	float *E = Mb + ns * nt * ocw;  /* [slots][es]: a tile's rows between the two steps */
	float *zero = E + ns * es;      /* C zeros */
	float *ap = zero + C;           /* pk_tile's packed rows */
	for (int64_t t = lo; t < hi; t++) {
		int64_t tc = t / j->nco, oc = t % j->nco;
		int64_t t0 = tc * nt, t1 = t0 + nt < j->T ? t0 + nt : j->T, n = t1 - t0;
		int64_t o0 = oc * ocw, o1 = o0 + ocw < O ? o0 + ocw : O, ow = o1 - o0;
		/* V = B^T d B: rows first (into E), then columns (into V) */
		for (int64_t ti = 0; ti < n; ti++) {
			int64_t tt = t0 + ti, tx = tt % j->tw, ty = tt / j->tw % j->th, nb = tt / (j->tw * j->th);
			const float *d[6];
			for (int r = 0; r < al; r++) {
				int64_t hi_ = ty * m - j->pt + r;
				for (int q = 0; q < al; q++) {
					int64_t wi = tx * m - j->pl + q;
					d[q] = hi_ < 0 || hi_ >= j->H || wi < 0 || wi >= j->W ? zero
											      : j->x + ((nb * j->H + hi_) * j->W + wi) * C;
				}
				wino_bt(m, d, E + r * al * es, es, C);
			}
			int64_t vs = nt * C;
			for (int b = 0; b < al; b++) {
				for (int r = 0; r < al; r++)
					d[r] = E + (r * al + b) * es;
				wino_bt(m, d, V + b * vs + ti * C, al * vs, C);
			}
		}
		if (j->panels) {
			int64_t np = (O + PK_NR - 1) / PK_NR, op = (ow + PK_NR - 1) / PK_NR;
			for (int xi = 0; xi < ns; xi++)
				cpu_pk_tile(V + xi * nt * C, C, n, C, j->u + ((int64_t)xi * np + o0 / PK_NR) * C * PK_NR, ow, 0, op,
					Mb + xi * nt * ow, ow, false, 0, ap);
		} else {
			for (int xi = 0; xi < ns; xi++)
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)ow, (blasint)C, 1.0f,
					    V + xi * nt * C, (blasint)C, j->u + ((int64_t)xi * O + o0) * C, (blasint)C, 0.0f,
					    Mb + xi * nt * ow, (blasint)ow);
		}
		/* Y = A^T M A (+ bias): rows into E (f[a][k]), then columns */
		for (int64_t ti = 0; ti < n; ti++) {
			int64_t tt = t0 + ti, tx = tt % j->tw, ty = tt / j->tw % j->th, nb = tt / (j->tw * j->th);
			int64_t y0 = ty * m, x0 = tx * m, ms = nt * ow;
			const float *x[6];
			float *y[4];
			for (int a = 0; a < al; a++) {
				for (int b = 0; b < al; b++)
					x[b] = Mb + ti * ow + (a * al + b) * ms;
				for (int k = 0; k < m; k++)
					y[k] = E + (a * m + k) * es;
				wino_at(m, x, y, NULL, ow);
			}
			for (int k = 0; k < m; k++) {
				for (int a = 0; a < al; a++)
					x[a] = E + (a * m + k) * es;
				for (int i = 0; i < m; i++) /* past the edge: a scratch row */
					y[i] = y0 + i < j->Ho && x0 + k < j->Wo
						       ? j->out + ((nb * j->Ho + y0 + i) * j->Wo + x0 + k) * O + o0
						       : E + (al * m + i) * es;
				wino_at(m, x, y, j->bias ? j->bias + o0 : NULL, ow);
			}
			/* the epilogue on the block's pixels (each of its rows m
			 * pixels, fewer at the right edge) and this task's
			 * channels, while they are in L1 */
			int64_t mw = j->Wo - x0 < m ? j->Wo - x0 : m;
			for (int i = 0; j->epi && i < m && y0 + i < j->Ho; i++) {
				int64_t p = (nb * j->Ho + y0 + i) * j->Wo + x0;
				j->epi(j->ebufs, p, p + mw, o0, o1);
			}
		}
	}
}

/* Whether the convolution in j takes the Winograd path: on maps of 7x7
 * and more with pk_kernel's products (ResNet-50's layer 4: 3.7 -> 3.0 ms
 * for its two 3x3s on 2 threads), of 10x10 and more on OpenBLAS's (7x7
 * measured faster by im2col there). */
static bool wino_ok(const rt_cpu *c, const cjob *j)
{
	int64_t least = cpu_pk_host() && !c->no_pack ? 49 : 100;
	return !c->no_wino && j->KH == 3 && j->KW == 3 && j->sh == 1 && j->sw == 1 && j->dh == 1 && j->dw == 1 &&
	       j->C >= 16 && j->O >= 16 && j->Ho * j->Wo >= least;
}

static int run_wino(rt_cpu *c, const cl_step *s, const cjob *cj, sn_err *e)
{
	int n = c->pool->n;
	wjob j = {.c = c, .x = cj->x, .w = cj->w, .bias = cj->bias, .out = cj->out, .H = cj->H, .W = cj->W,
		  .C = cj->C, .O = cj->O, .Ho = cj->Ho, .Wo = cj->Wo, .pt = cj->pt, .pl = cj->pl};
	j.panels = cpu_pk_host() && !c->no_pack;
	/* m = 4 on maps of 20x20 and more (ResNet-50's 56x56 and 28x28),
	 * where its blocks are little padding; SINTER_CPU_WINOGRAD=2 or 4
	 * asks for one (measurements) */
	j.m = !j.panels ? 2 : c->wino_m ? c->wino_m : j.Ho * j.Wo >= 400 ? 4 : 2;
	j.al = j.m + 2;
	int ns = j.al * j.al;
	j.th = (j.Ho + j.m - 1) / j.m, j.tw = (j.Wo + j.m - 1) / j.m;
	j.T = cj->N * j.th * j.tw;
	int64_t np = (j.O + PK_NR - 1) / PK_NR, ucols = j.panels ? np * PK_NR : j.O;
	size_t si = (size_t)(s - c->p->steps);
	bool fresh = !c->wino[si];
	if (fresh) { /* aligned for pk_kernel's loads; every float written below (zeros past O) */
		size_t ub = (size_t)(ns * ucols * j.C) * sizeof(float);
		if (!(c->wino[si] = cpu_weights_alloc(ub)))
			return sn_errf(e, SN_EINTERNAL, "out of memory (Winograd weights)");
	}
	j.u = c->wino[si];
	/* the weights transformed on the first run, on every run when they
	 * are not a weight of the plan (an input or computed) */
	if ((fresh || !is_weight(c, cj->n->in[1])) && j.panels)
		cpu_pool_for(c->pool, np, 1, wino_panel_task, &j);
	else if (fresh || !is_weight(c, cj->n->in[1]))
		cpu_pool_for(c->pool, j.O, 8, wino_weight_task, &j);
	/* The split: each task transforms its tiles' inputs and streams its
	 * channels' U. Where U fits a core's L2 (1 MiB), tiles: a share of
	 * them for two tasks per thread, in whole 6-row tiles of pk_kernel.
	 * Where it does not (ResNet-50's 14x14 layers: 4 MiB), every task
	 * streaming all of U from memory cost more than the products: all
	 * tiles a task can hold, and output channels split instead (each
	 * channel task transforms the tiles again, which costs less). Tiles
	 * per task at most what V holds within 1 MiB. */
	int64_t cap = 262144 / ns / j.C, share = (j.T + 2 * n - 1) / (2 * n);
	bool big = (double)ns * (double)ucols * (double)j.C * 4.0 > 1048576.0;
	j.nt = big ? j.T : share;
	if (j.nt > cap)
		j.nt = cap;
	if (j.panels && j.nt < j.T)
		j.nt = j.nt / PK_MR * PK_MR;
	if (j.nt < 6)
		j.nt = 6;
	int64_t tchunks = (j.T + j.nt - 1) / j.nt;
	j.nco = 1;
	j.ocw = j.O;
	int64_t want = big ? n : 2 * n; /* (2 n channel tasks measured 20 % slower on the 14x14 layers) */
	if (tchunks < want && j.O >= 64) {
		j.nco = (want + tchunks - 1) / tchunks;
		j.ocw = ((j.O + j.nco - 1) / j.nco + 15) / 16 * 16;
		j.nco = (j.O + j.ocw - 1) / j.ocw;
	}
	int64_t es = j.C > j.ocw ? j.C : j.ocw;
	size_t zoff = (size_t)(ns * j.nt * (j.C + j.ocw) + ns * es);
	size_t need = zoff + (size_t)j.C + (j.panels ? (size_t)((j.nt + PK_MR - 1) / PK_MR * PK_MR * j.C) : 0);
	if (cpu_scratch(c, need, "Winograd tiles", e))
		return SN_EINTERNAL;
	for (int i = 0; i < n; i++) /* the zero row past the tile rows */
		memset(c->scratch[i] + zoff, 0, (size_t)j.C * sizeof(float));
	sn_log(SN_LOG_DEBUG, "cpu winograd: F(%dx%d, 3x3), %lld tiles, %lld per task, %lld channel tasks", j.m, j.m,
	       (long long)j.T, (long long)j.nt, (long long)j.nco);
	j.epi = cj->epi;
	j.ebufs = cj->ebufs;
	cpu_pool_for(c->pool, tchunks * j.nco, 1, wino_task, &j);
	return SN_OK;
}

int cpu_run_conv(rt_cpu *c, const cl_step *s, void **ebufs, sn_err *e)
{
	const ir_graph *g = c->p->g;
	const ir_node *n = &g->nodes[s->node];
	const ir_shape *xs = &g->nodes[n->in[0]].shape, *ws = &g->nodes[n->in[1]].shape;
	const ir_attrs *a = n->attrs;
	cjob j = {.c = c, .s = s, .n = n, .x = addr_of(c, n->in[0]), .w = addr_of(c, n->in[1]),
		  .bias = n->nin > 2 ? addr_of(c, n->in[2]) : NULL, .out = addr_of(c, s->out)};
	j.N = xs->d[0], j.H = xs->d[1], j.W = xs->d[2], j.C = xs->d[3];
	j.O = ws->d[0], j.KH = ws->d[1], j.KW = ws->d[2];
	j.Ho = n->shape.d[1], j.Wo = n->shape.d[2];
	j.sh = a->stride.n > 0 ? a->stride.v[0] : 1, j.sw = a->stride.n > 1 ? a->stride.v[1] : 1;
	j.pt = a->pad.n > 0 ? a->pad.v[0] : 0, j.pl = a->pad.n > 1 ? a->pad.v[1] : 0;
	j.dh = a->dilation.n > 0 ? a->dilation.v[0] : 1, j.dw = a->dilation.n > 1 ? a->dilation.v[1] : 1;
	j.K = j.KH * j.KW * j.C;
	j.M = j.N * j.Ho * j.Wo;
	j.direct = j.KH == 1 && j.KW == 1 && j.sh == 1 && j.sw == 1 && j.pt == 0 && j.pl == 0 && j.Ho == j.H && j.Wo == j.W;
	j.epi = s->fn >= 0 ? c->fns[s->fn] : NULL;
	j.ebufs = ebufs;
	if (s->fn >= 0 && s->out != s->args[0])
		return sn_errf(e, SN_EINTERNAL, "cpu: convolution epilogue writes another buffer");
	sn_log(SN_LOG_DEBUG, "cpu conv: %s pixels=%lld k=%lld out=%lld (%lldx%lld stride %lld)",
	       wino_ok(c, &j) ? "winograd" : j.direct ? "direct" : "im2col", (long long)j.M, (long long)j.K,
	       (long long)j.O, (long long)j.KH, (long long)j.KW, (long long)j.sh);
	if (wino_ok(c, &j))
		return run_wino(c, s, &j, e);
	/* tasks: pixel tiles by output-channel tiles, two per thread at least.
	 * Each task's sgemm packs its channels' weights (ctile x K) and its
	 * pixels' rows (tile x K, copied by im2col first where not direct),
	 * so of the splits that make enough tasks, the one packing least:
	 * K (ntiles O + nct M) (twice the rows' part with im2col). Pixel
	 * tiles' im2col rows within 1 MiB (a core's L2), 16 rows at least. */
	int n2 = 2 * c->pool->n;
	int64_t cap = (int64_t)(262144 / (j.K ? j.K : 1));
	if (cap < 16)
		cap = 16;
	double best = -1;
	int64_t ntiles = 1;
	for (int64_t nct = 1; nct <= n2; nct++) {
		int64_t ctile = ((j.O + nct - 1) / nct + 15) / 16 * 16;
		if (nct > 1 && (ctile >= j.O || (j.O + ctile - 1) / ctile != nct))
			continue; /* not a split of its own */
		int64_t nt = (n2 + nct - 1) / nct;
		if (!j.direct && (j.M + nt - 1) / nt > cap)
			nt = (j.M + cap - 1) / cap;
		int64_t tile = (j.M + nt - 1) / nt;
		if (tile < 16)
			tile = 16;
		nt = (j.M + tile - 1) / tile;
		double cost = (double)nt * (double)j.O + (j.direct ? 1.0 : 2.0) * (double)nct * (double)j.M;
		if (best < 0 || cost < best) {
			best = cost;
			j.nct = nct;
			j.ctile = nct == 1 ? j.O : ctile;
			j.tile = tile;
			ntiles = nt;
		}
	}
	/* the weights packed once (first run) for pk_kernel when they are a
	 * weight of the plan: output-channel tiles are whole panels */
	size_t si = (size_t)(s - c->p->steps);
	if (cpu_pk_host() && !c->no_pack && j.K > 0 && j.M <= PK_MAX_ROWS && (j.nct == 1 || j.ctile % PK_NR == 0) &&
	    is_weight(c, n->in[1])) {
		int64_t np = (j.O + PK_NR - 1) / PK_NR;
		if (!c->wino[si]) {
			if (!(c->wino[si] = cpu_weights_alloc((size_t)(np * j.K * PK_NR) * sizeof(float))))
				return sn_errf(e, SN_EINTERNAL, "out of memory (packed weights)");
			pkjob pj = {.b = j.w, .bp = c->wino[si], .k = j.K, .n = j.O, .trans = true};
			cpu_pool_for(c->pool, np, 1, cpu_pk_pack_task, &pj);
		}
		j.wp = c->wino[si];
	}
	j.apoff = j.direct ? 0 : (size_t)j.tile * (size_t)j.K;
	size_t need = j.apoff + (j.wp ? (size_t)((j.tile + PK_MR - 1) / PK_MR * PK_MR) * (size_t)j.K : 0);
	if (cpu_scratch(c, need, "im2col tiles", e))
		return SN_EINTERNAL;
	cpu_pool_for(c->pool, ntiles * j.nct, 1, conv_task, &j);
	return SN_OK;
}
