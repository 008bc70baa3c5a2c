/* cpu_gemm.c: the cpu runtime's products (cpu_int.h): by OpenBLAS per
 * tile of rows or columns, on weights packed once for our AVX2/FMA
 * micro-kernel (pk_kernel, cpu_pk_tile: also the convolutions' products), and
 * on bf16 values widened by tiles; the activations fused after them. */
#include "runtime/cpu_int.h"

#include <cblas.h>
#include <math.h>

#include <sys/mman.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* e^x for the tanh-GELU epilogue: Cody-Waite reduction and Cephes' expf
 * polynomial (as cl_emit.c's fexp), no libm call, so the loop vectorizes:
 * rint(x log2 e) by adding and taking away 1.5 * 2^23 (exact for
 * |x log2 e| < 2^22, the same round to nearest even as rintf; the build's
 * ISO C keeps the sum from being folded or fused). x is clamped to
 * [-150, 89] and 2^n applied as two normal powers of two (y 2^n1 is
 * exact, the second product rounds once), so the whole range is right:
 * inf from 88.73 on, subnormals, 0 below -103.9. */
static inline float fast_exp(float x)
{
	float c = x > 89.0f ? 89.0f : x < -150.0f ? -150.0f : x == x ? x : 0.0f;
	float n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
	float r = c - n * 0.693359375f - n * -2.12194440e-4f;
	float p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	float y = p * r * r + r + 1.0f;
	int32_t n1 = (int32_t)n / 2, n2 = (int32_t)n - n1; /* n in [-217, 128]: each in [-109, 64] */
	int32_t b1 = (n1 + 127) * 8388608, b2 = (n2 + 127) * 8388608; /* << 23 */
	float e1, e2;
	memcpy(&e1, &b1, sizeof e1);
	memcpy(&e2, &b2, sizeof e2);
	return x != x ? x : y * e1 * e2;
}

/* 0.5 v (1 + tanh(u)) written as v sigmoid(2u): v / (1 + e^-2u) for
 * u >= 0, v e^2u / (1 + e^2u) below (e^-2u would overflow: v = -10.1
 * gave -6e-38, not -1.2e-38; and -7e-38 for v = -12, not 0) */
static inline float gelu_tanh(float v)
{
	float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
	float e = fast_exp(-2.0f * fabsf(u));
	return (u < 0.0f ? v * e : v) / (1.0f + e);
}

/* A product's activation over one row of a tile, o[0..n): relu (act 1)
 * or tanh-GELU (act 2). Built for the baseline and, on x86-64, again for
 * AVX2 (8 lanes; no FMA contraction under ISO C, so both give the same
 * floats), picked once by what the host has. */
#define ACT_ROW_BODY                                                                                                   \
	{                                                                                                              \
		if (act == 1)                                                                                          \
			for (int64_t i = 0; i < n; i++)                                                                \
				o[i] = o[i] < 0.0f ? 0.0f : o[i];                                                      \
		else if (act == 2)                                                                                     \
			for (int64_t i = 0; i < n; i++)                                                                \
				o[i] = gelu_tanh(o[i]);                                                                \
	}

static void act_row_base(float *restrict o, int act, int64_t n) ACT_ROW_BODY

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void act_row_avx2(float *restrict o, int act, int64_t n) ACT_ROW_BODY
#endif

typedef void act_row_fn(float *restrict o, int act, int64_t n);
static act_row_fn *act_row = act_row_base;
static pthread_once_t act_once = PTHREAD_ONCE_INIT;
static void act_pick(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		act_row = act_row_avx2;
#endif
}

typedef struct gjob {
	rt_cpu *c;
	const cl_step *s;
	const float *a, *b, *bias;
	const float *res;
	float *out;
	bool by_rows;
	int64_t tile;
} gjob;

static void gemm_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	gjob *j = ctx;
	const cl_step *s = j->s;
	for (int64_t t = lo; t < hi; t++) {
		int64_t per = j->by_rows ? (s->m + j->tile - 1) / j->tile : (s->n + j->tile - 1) / j->tile;
		int64_t b = t / per, q = t % per;
		const float *A = j->a + b * s->sa, *B = j->b + b * s->sb;
		float *C = j->out + b * s->sc;
		const float *R = j->res ? j->res + b * s->sc : NULL;
		int64_t r0 = 0, r1 = s->m, c0 = 0, c1 = s->n;
		if (j->by_rows) {
			r0 = q * j->tile;
			r1 = r0 + j->tile < s->m ? r0 + j->tile : s->m;
		} else {
			c0 = q * j->tile;
			c1 = c0 + j->tile < s->n ? c0 + j->tile : s->n;
		}
		const float *Bt = s->trans_b ? B + c0 * s->k : B + c0;
		/* the bias (and the residual) first, the product added to it
		 * (beta 1): OpenBLAS's zeroing pass over C becomes this one, and
		 * no second pass reads the tile back for them */
		float beta = 0.0f;
		if (j->bias || R) {
			for (int64_t i = r0; i < r1; i++) {
				float *o = C + i * s->n + c0;
				const float *rr = R ? R + i * s->n + c0 : NULL;
				if (j->bias && rr)
					for (int64_t jj = 0; jj < c1 - c0; jj++)
						o[jj] = j->bias[c0 + jj] + rr[jj];
				else if (j->bias)
					memcpy(o, j->bias + c0, (size_t)(c1 - c0) * sizeof *o);
				else if (rr != o)
					memcpy(o, rr, (size_t)(c1 - c0) * sizeof *o);
			}
			beta = 1.0f;
		}
		if (r1 - r0 == 1) {
			/* one row: a matrix-vector product, bound by reading B once */
			if (s->trans_b)
				cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)(c1 - c0), (blasint)s->k, 1.0f, Bt,
					    (blasint)s->k, A + r0 * s->k, 1, beta, C + r0 * s->n + c0, 1);
			else
				cblas_sgemv(CblasRowMajor, CblasTrans, (blasint)s->k, (blasint)(c1 - c0), 1.0f, Bt,
					    (blasint)s->n, A + r0 * s->k, 1, beta, C + r0 * s->n + c0, 1);
		} else
			cblas_sgemm(CblasRowMajor, CblasNoTrans, s->trans_b ? CblasTrans : CblasNoTrans, (blasint)(r1 - r0),
				    (blasint)(c1 - c0), (blasint)s->k, 1.0f, A + r0 * s->k, (blasint)s->k, Bt,
				    (blasint)(s->trans_b ? s->k : s->n), beta, C + r0 * s->n + c0, (blasint)s->n);
		if (s->act)
			for (int64_t i = r0; i < r1; i++)
				act_row(C + i * s->n + c0, s->act, c1 - c0);
	}
}

/* ---- products on weights packed once (the first run): B in panels of
 * 16 columns, [N/16][K][16], zero padded, so no call packs it again
 * (OpenBLAS packs B on every call: a pass over the weights, which GPT-2
 * reads from memory each time); C in 6 x 16 tiles by an AVX2/FMA
 * micro-kernel (12 accumulators), A packed per task in [K/256][M/6][kc][6]
 * blocks, C blocks of 8 panels kept in cache across the K blocks. ---- */

static bool pk_host; /* the host has AVX2 and FMA */
static pthread_once_t pk_once = PTHREAD_ONCE_INIT;
static void pk_pick(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	pk_host = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
}

bool cpu_pk_host(void)
{
	pthread_once(&pk_once, pk_pick);
	return pk_host;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* c (mr x nr of a 6 x 16 tile, row stride ldc) = or += a (kc x 6) b (kc x 16) */
__attribute__((target("avx2,fma"))) static void pk_kernel(int64_t kc, const float *a, const float *b, float *c,
							    int64_t ldc, bool add, int64_t mr, int64_t nr)
{
	__m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
	       c40 = c00, c41 = c00, c50 = c00, c51 = c00;
	for (int64_t k = 0; k < kc; k++) {
		__m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8), t;
		t = _mm256_broadcast_ss(a + 0);
		c00 = _mm256_fmadd_ps(t, b0, c00);
		c01 = _mm256_fmadd_ps(t, b1, c01);
		t = _mm256_broadcast_ss(a + 1);
		c10 = _mm256_fmadd_ps(t, b0, c10);
		c11 = _mm256_fmadd_ps(t, b1, c11);
		t = _mm256_broadcast_ss(a + 2);
		c20 = _mm256_fmadd_ps(t, b0, c20);
		c21 = _mm256_fmadd_ps(t, b1, c21);
		t = _mm256_broadcast_ss(a + 3);
		c30 = _mm256_fmadd_ps(t, b0, c30);
		c31 = _mm256_fmadd_ps(t, b1, c31);
		t = _mm256_broadcast_ss(a + 4);
		c40 = _mm256_fmadd_ps(t, b0, c40);
		c41 = _mm256_fmadd_ps(t, b1, c41);
		t = _mm256_broadcast_ss(a + 5);
		c50 = _mm256_fmadd_ps(t, b0, c50);
		c51 = _mm256_fmadd_ps(t, b1, c51);
		a += PK_MR;
		b += PK_NR;
	}
	__m256 acc[12] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
	if (mr == PK_MR && nr == PK_NR) {
		for (int r = 0; r < PK_MR; r++) {
			float *cr = c + r * ldc;
			if (add) {
				acc[2 * r] = _mm256_add_ps(_mm256_loadu_ps(cr), acc[2 * r]);
				acc[2 * r + 1] = _mm256_add_ps(_mm256_loadu_ps(cr + 8), acc[2 * r + 1]);
			}
			_mm256_storeu_ps(cr, acc[2 * r]);
			_mm256_storeu_ps(cr + 8, acc[2 * r + 1]);
		}
		return;
	}
	float t[PK_MR * PK_NR];
	for (int r = 0; r < PK_MR; r++) {
		_mm256_storeu_ps(t + r * PK_NR, acc[2 * r]);
		_mm256_storeu_ps(t + r * PK_NR + 8, acc[2 * r + 1]);
	}
	for (int64_t r = 0; r < mr; r++)
		for (int64_t q = 0; q < nr; q++)
			c[r * ldc + q] = add ? c[r * ldc + q] + t[r * PK_NR + q] : t[r * PK_NR + q];
}
#else
static void pk_kernel(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, bool add, int64_t mr,
		      int64_t nr)
{
	(void)kc, (void)a, (void)b, (void)c, (void)ldc, (void)add, (void)mr, (void)nr; /* pk_host is false */
}
#endif

void *cpu_weights_alloc(size_t n)
{
	size_t huge = (size_t)2 << 20;
	if (n < huge)
		return aligned_alloc(CL_ALIGN, (n + CL_ALIGN - 1) / CL_ALIGN * CL_ALIGN);
	size_t sz = (n + huge - 1) / huge * huge;
	void *p = aligned_alloc(huge, sz);
#ifdef MADV_HUGEPAGE
	if (p)
		(void)madvise(p, sz, MADV_HUGEPAGE); /* advice: fine to be refused */
#endif
	return p;
}

void cpu_pk_pack_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	pkjob *j = ctx;
	for (int64_t p = lo; p < hi; p++) {
		float *d = j->bp + p * j->k * PK_NR;
		int64_t c0 = p * PK_NR, w = j->n - c0 < PK_NR ? j->n - c0 : PK_NR;
		if (!j->trans) {
			for (int64_t k = 0; k < j->k; k++) {
				memcpy(d + k * PK_NR, j->b + k * j->n + c0, (size_t)w * sizeof *d);
				for (int64_t q = w; q < PK_NR; q++)
					d[k * PK_NR + q] = 0.0f;
			}
			continue;
		}
		/* column q of the panel is row c0 + q of B: the panel written in
		 * order, its 16 rows read side by side */
		const float *r[PK_NR];
		for (int64_t q = 0; q < PK_NR; q++)
			r[q] = q < w ? j->b + (c0 + q) * j->k : NULL;
		for (int64_t k = 0; k < j->k; k++, d += PK_NR)
			for (int64_t q = 0; q < PK_NR; q++)
				d[q] = r[q] ? r[q][k] : 0.0f;
	}
}

/* rows [i0, i1) (whole 6-row tiles but the last) of A's rows [0, m) (row
 * stride lda) packed into ap, which holds all m: [K/256][ceil(m/6)][kc][6] */
static void pk_pack_rows(const float *A, int64_t lda, int64_t m, int64_t K, float *ap, int64_t i0, int64_t i1)
{
	int64_t mp = (m + PK_MR - 1) / PK_MR * PK_MR;
	for (int64_t k0 = 0; k0 < K; k0 += PK_KC) {
		int64_t kc = K - k0 < PK_KC ? K - k0 : PK_KC;
		float *blk = ap + k0 * mp;
		for (int64_t i = i0; i < i1; i += PK_MR) {
			float *d = blk + i / PK_MR * kc * PK_MR;
			int64_t mr = m - i < PK_MR ? m - i : PK_MR;
			const float *r0 = A + i * lda + k0;
			if (mr == PK_MR) {
				const float *r1 = r0 + lda, *r2 = r1 + lda, *r3 = r2 + lda, *r4 = r3 + lda, *r5 = r4 + lda;
				for (int64_t k = 0; k < kc; k++, d += PK_MR) {
					d[0] = r0[k];
					d[1] = r1[k];
					d[2] = r2[k];
					d[3] = r3[k];
					d[4] = r4[k];
					d[5] = r5[k];
				}
				continue;
			}
			for (int64_t k = 0; k < kc; k++)
				for (int64_t r = 0; r < PK_MR; r++)
					d[k * PK_MR + r] = r < mr ? r0[r * lda + k] : 0.0f;
		}
	}
}

static void pk_pack_a(const float *A, int64_t lda, int64_t m, int64_t K, float *ap)
{
	pk_pack_rows(A, lda, m, K, ap, 0, m);
}

void cpu_pk_tile(const float *A, int64_t lda, int64_t m, int64_t K, const float *bp, int64_t N, int64_t p0,
		 int64_t p1, float *C, int64_t ldc, bool add, int act, float *ap)
{
	if (A)
		pk_pack_a(A, lda, m, K, ap);
	int64_t mp = (m + PK_MR - 1) / PK_MR * PK_MR;
	/* blocks of PK_MC rows: a block's packed A (PK_MC x 256) stays in
	 * L2 while the panels go by */
	for (int64_t i0 = 0; i0 < m; i0 += PK_MC) {
		int64_t i1 = i0 + PK_MC < m ? i0 + PK_MC : m, mb = i1 - i0;
		for (int64_t jc = p0; jc < p1; jc += PK_NCP) {
			int64_t je = jc + PK_NCP < p1 ? jc + PK_NCP : p1;
			for (int64_t k0 = 0; k0 < K; k0 += PK_KC) {
				int64_t kc = K - k0 < PK_KC ? K - k0 : PK_KC;
				const float *a = ap + k0 * mp;
				for (int64_t p = jc; p < je; p++) {
					const float *b = bp + (p * K + k0) * PK_NR;
					int64_t nr = N - p * PK_NR < PK_NR ? N - p * PK_NR : PK_NR;
					/* the next panel's block fetched from memory while
					 * this one is used: a share of its lines per tile */
					const char *nb = (const char *)(p + 1 < p1 ? bp + ((p + 1) * K + k0) * PK_NR : b);
					int64_t lines = kc * PK_NR * 4 / 64, per = (lines * PK_MR + mb - 1) / mb, l = 0;
					for (int64_t i = i0; i < i1; i += PK_MR) {
						for (int64_t q = 0; q < per && l < lines; q++, l++)
							__builtin_prefetch(nb + l * 64, 0, 3);
						pk_kernel(kc, a + i / PK_MR * kc * PK_MR, b, C + i * ldc + p * PK_NR, ldc,
							  add || k0 > 0, i1 - i < PK_MR ? i1 - i : PK_MR, nr);
					}
				}
			}
			if (act) {
				int64_t a0 = jc * PK_NR, a1 = je * PK_NR < N ? je * PK_NR : N;
				for (int64_t i = i0; i < i1; i++)
					act_row(C + i * ldc + a0, act, a1 - a0);
			}
		}
	}
}

typedef struct pgjob {
	rt_cpu *c;
	const cl_step *s;
	const float *a, *bp, *bias, *res;
	float *out;
	int64_t rb, nrb, pchunk, nchunk; /* rows per task, row blocks; panels per task, panel chunks */
	float *ap;                       /* one row block: A packed once for every task (else NULL) */
} pgjob;

/* 6-row tiles [lo, hi) of a one-block product's A packed into j->ap */
static void pgemm_pack_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	pgjob *j = ctx;
	int64_t m = j->s->m, i1 = hi * PK_MR < m ? hi * PK_MR : m;
	pk_pack_rows(j->a, j->s->k, m, j->s->k, j->ap, lo * PK_MR, i1);
}

static void pgemm_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	pgjob *j = ctx;
	const cl_step *s = j->s;
	int64_t K = s->k, N = s->n, np = (N + PK_NR - 1) / PK_NR;
	float *ap = j->ap ? j->ap : j->c->scratch[tid];
	for (int64_t t = lo; t < hi; t++) {
		int64_t rbi = t / j->nchunk, ch = t % j->nchunk;
		int64_t r0 = rbi * j->rb, r1 = r0 + j->rb < s->m ? r0 + j->rb : s->m, m = r1 - r0;
		int64_t p0 = ch * j->pchunk, p1 = p0 + j->pchunk < np ? p0 + j->pchunk : np;
		int64_t c0 = p0 * PK_NR, c1 = p1 * PK_NR < N ? p1 * PK_NR : N;
		float *C = j->out + r0 * N;
		/* the bias and the residual first, as run_gemm's */
		bool add = j->bias || j->res;
		for (int64_t i = 0; add && i < m; i++) {
			float *o = C + i * N + c0;
			const float *rr = j->res ? j->res + (r0 + i) * N + c0 : NULL;
			if (j->bias && rr)
				for (int64_t q = 0; q < c1 - c0; q++)
					o[q] = j->bias[c0 + q] + rr[q];
			else if (j->bias)
				memcpy(o, j->bias + c0, (size_t)(c1 - c0) * sizeof *o);
			else if (rr != o)
				memcpy(o, rr, (size_t)(c1 - c0) * sizeof *o);
		}
		cpu_pk_tile(j->ap ? NULL : j->a + r0 * K, K, m, K, j->bp, N, p0, p1, C, N, add, s->act, ap);
	}
}

/* Whether the product runs on packed weights: B a weight (not batched),
 * 2 to PK_MAX_ROWS rows, and a host with AVX2 and FMA. */
static bool pk_ok(const rt_cpu *c, const cl_step *s)
{
	return !c->no_pack && pk_host && s->batch == 1 && s->m >= 2 && s->m <= PK_MAX_ROWS && is_weight(c, s->b);
}

static int run_pgemm(rt_cpu *c, const cl_step *s, sn_err *e)
{
	size_t si = (size_t)(s - c->p->steps);
	int n = c->pool->n;
	int64_t np = (s->n + PK_NR - 1) / PK_NR;
	if (!c->wino[si]) {
		if (!(c->wino[si] = cpu_weights_alloc((size_t)(np * s->k * PK_NR) * sizeof(float))))
			return sn_errf(e, SN_EINTERNAL, "out of memory (packed weights)");
		pkjob pj = {.b = addr_of(c, s->b), .bp = c->wino[si], .k = s->k, .n = s->n, .trans = s->trans_b};
		cpu_pool_for(c->pool, np, 1, cpu_pk_pack_task, &pj);
	}
	pgjob j = {.c = c, .s = s, .a = addr_of(c, s->a), .bp = c->wino[si], .bias = addr_of(c, s->bias),
		   .res = addr_of(c, s->c), .out = addr_of(c, s->out)};
	/* row blocks of up to PK_MC rows (whole 6-row tiles), then chunks of
	 * panels for two tasks per thread at least; each task packs its rows
	 * of A, which costs little next to B's panels it streams */
	j.nrb = (s->m + PK_MC - 1) / PK_MC;
	j.rb = ((s->m + j.nrb - 1) / j.nrb + PK_MR - 1) / PK_MR * PK_MR;
	j.nrb = (s->m + j.rb - 1) / j.rb;
	j.nchunk = (2 * n + j.nrb - 1) / j.nrb;
	if (j.nchunk > np)
		j.nchunk = np;
	j.pchunk = (np + j.nchunk - 1) / j.nchunk;
	j.nchunk = (np + j.pchunk - 1) / j.pchunk;
	/* one row block split over panel chunks: A packed once, on the pool,
	 * into the first thread's scratch (every task packed all of it, 5 %
	 * of GPT-2's time on 2 threads) */
	size_t need = (size_t)j.rb * (size_t)s->k;
	if (cpu_scratch(c, need, "packed rows", e))
		return SN_EINTERNAL;
	if (j.nrb == 1 && j.nchunk > 1) {
		j.ap = c->scratch[0];
		cpu_pool_for(c->pool, (s->m + PK_MR - 1) / PK_MR, 1, pgemm_pack_task, &j);
	}
	cpu_pool_for(c->pool, j.nrb * j.nchunk, 1, pgemm_task, &j);
	return SN_OK;
}

static void run_gemm(rt_cpu *c, const cl_step *s)
{
	gjob j = {.c = c, .s = s, .a = addr_of(c, s->a), .b = addr_of(c, s->b), .bias = addr_of(c, s->bias),
		  .res = addr_of(c, s->c), .out = addr_of(c, s->out)};
	int n = c->pool->n;
	/* split the dim whose repeated packing costs less: each task of rows
	 * packs all of B (k x n), each task of columns all of its rows of A
	 * (m x k); so rows when m > n (and enough of them), else columns */
	j.by_rows = s->m > s->n && s->m >= 8 * n;
	int64_t dim = j.by_rows ? s->m : s->n;
	int64_t parts = s->batch >= n ? 1 : 2 * n;
	int64_t tile = (dim + parts - 1) / parts;
	if (j.by_rows && tile < 8)
		tile = 8;
	if (!j.by_rows)
		tile = (tile + 15) / 16 * 16;
	if (tile < 1)
		tile = 1;
	j.tile = tile;
	int64_t per = (dim + tile - 1) / tile;
	pthread_once(&act_once, act_pick);
	cpu_pool_for(c->pool, s->batch * per, 1, gemm_task, &j);
}

/* ---- bf16 products (cpu_int.h: bf16 storage) ---- */

typedef struct bjob {
	const cl_step *s;
	const uint16_t *a, *b, *bias, *res;
	uint16_t *out;
	float **scratch;
	int64_t rb, nb, nrb, ncb; /* rows and columns per task, tasks along each */
} bjob;

/* One (batch, row block, column block) of a bf16 product: the A rows and
 * the B columns widened into the thread's scratch, sgemm (sgemv for one
 * row), then bias, residual and activation in f32 and one rounding. */
static void gemm_bf16_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	const bjob *j = ctx;
	const cl_step *s = j->s;
	float *A = j->scratch[tid], *B = A + j->rb * s->k, *C = B + j->nb * s->k;
	for (int64_t t = lo; t < hi; t++) {
		int64_t cb = t % j->ncb, rbk = t / j->ncb % j->nrb, b = t / (j->ncb * j->nrb);
		int64_t r0 = rbk * j->rb, r1 = r0 + j->rb < s->m ? r0 + j->rb : s->m;
		int64_t c0 = cb * j->nb, c1 = c0 + j->nb < s->n ? c0 + j->nb : s->n;
		int64_t mr = r1 - r0, nc = c1 - c0;
		const uint16_t *Ab = j->a + b * s->sa + r0 * s->k, *Bb = j->b + b * s->sb;
		for (int64_t i = 0; i < mr * s->k; i++)
			A[i] = bf16_f(Ab[i]);
		if (s->trans_b) { /* B is n x k: columns c0..c1 are rows, one run */
			const uint16_t *src = Bb + c0 * s->k;
			for (int64_t i = 0; i < nc * s->k; i++)
				B[i] = bf16_f(src[i]);
		} else { /* B is k x n: each of its rows gives nc floats */
			for (int64_t kk = 0; kk < s->k; kk++)
				for (int64_t q = 0; q < nc; q++)
					B[kk * nc + q] = bf16_f(Bb[kk * s->n + c0 + q]);
		}
		if (mr == 1)
			cblas_sgemv(CblasRowMajor, s->trans_b ? CblasNoTrans : CblasTrans, (blasint)(s->trans_b ? nc : s->k),
				    (blasint)(s->trans_b ? s->k : nc), 1.0f, B, (blasint)(s->trans_b ? s->k : nc), A, 1, 0.0f,
				    C, 1);
		else
			cblas_sgemm(CblasRowMajor, CblasNoTrans, s->trans_b ? CblasTrans : CblasNoTrans, (blasint)mr,
				    (blasint)nc, (blasint)s->k, 1.0f, A, (blasint)s->k, B, (blasint)(s->trans_b ? s->k : nc),
				    0.0f, C, (blasint)nc);
		uint16_t *O = j->out + b * s->sc;
		const uint16_t *R = j->res ? j->res + b * s->sc : NULL;
		for (int64_t i = 0; i < mr; i++)
			for (int64_t q = 0; q < nc; q++) {
				float v = C[i * nc + q];
				if (j->bias)
					v += bf16_f(j->bias[c0 + q]);
				if (R)
					v += bf16_f(R[(r0 + i) * s->n + c0 + q]);
				if (s->act == 1)
					v = v < 0.0f ? 0.0f : v;
				else if (s->act == 2)
					v = gelu_tanh(v);
				O[(r0 + i) * s->n + c0 + q] = f_bf16(v);
			}
	}
}

static int run_gemm_bf16(rt_cpu *c, const cl_step *s, sn_err *e)
{
	bjob j = {.s = s, .a = addr_of(c, s->a), .b = addr_of(c, s->b), .bias = addr_of(c, s->bias),
		  .res = addr_of(c, s->c), .out = addr_of(c, s->out), .scratch = c->scratch};
	/* the widened blocks within about 2 MiB (A) and 1 MiB (B) */
	int64_t k = s->k ? s->k : 1;
	j.rb = 524288 / k;
	j.rb = j.rb < 16 ? 16 : j.rb > 256 ? 256 : j.rb;
	j.rb = j.rb > s->m ? s->m : j.rb;
	j.nb = 262144 / k / 16 * 16;
	j.nb = j.nb < 16 ? 16 : j.nb > 128 ? 128 : j.nb;
	j.nb = j.nb > s->n ? s->n : j.nb;
	if (j.rb < 1 || j.nb < 1)
		return SN_OK;
	j.nrb = (s->m + j.rb - 1) / j.rb;
	j.ncb = (s->n + j.nb - 1) / j.nb;
	size_t need = (size_t)((j.rb + j.nb) * k + j.rb * j.nb);
	if (cpu_scratch(c, need, "bf16 product tiles", e))
		return SN_EINTERNAL;
	cpu_pool_for(c->pool, s->batch * j.nrb * j.ncb, 1, gemm_bf16_task, &j);
	return SN_OK;
}

int cpu_run_product(rt_cpu *c, const cl_step *s, sn_err *e)
{
	int rc = SN_OK;
	pthread_once(&pk_once, pk_pick);
	pthread_once(&act_once, act_pick);
	if (c->p->g->nodes[s->out].dtype == IR_BF16)
		rc = run_gemm_bf16(c, s, e);
	else if (pk_ok(c, s))
		rc = run_pgemm(c, s, e);
	else
		run_gemm(c, s);
	return rc;
}
