/* cpu_ops.c: the cpu runtime's attention, pooling and gather steps
 * (cpu_int.h), over the thread pool. */
#include "runtime/cpu_int.h"

#include <cblas.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- attention: per (batch, head) scores = q k^T (sgemm), the causal
 * mask or a mask tensor (bool: false masks out; f32: added), softmax,
 * then p v (sgemm). A row with every score masked is NaN, as the
 * reference's (and PyTorch's). ---- */

typedef struct ajob {
	rt_cpu *c;
	const float *q, *k, *v;
	float *out;
	int64_t B, H, Hk, L, S, D, Dv;
	float scale;
	bool causal;
	const void *mask; /* NULL: none */
	bool mbool;
	int64_t msb, msh, msl, mss; /* the mask's strides over (batch, head, L, S); 0 where broadcast */
} ajob;

static void attn_rows(const ajob *j, int64_t b, int64_t h, const float *Q, const float *K, const float *V, float *O,
		      float *sc, int64_t i0, int64_t i1);

static void attn_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	ajob *j = ctx;
	float *sc = j->c->scratch[tid];
	for (int64_t t = lo; t < hi; t++) {
		int64_t b = t / j->H, h = t % j->H, hk = h / (j->H / j->Hk);
		const float *Q = j->q + (b * j->H + h) * j->L * j->D;
		const float *K = j->k + (b * j->Hk + hk) * j->S * j->D;
		const float *V = j->v + (b * j->Hk + hk) * j->S * j->Dv;
		float *O = j->out + (b * j->H + h) * j->L * j->Dv;
		/* causal: blocks of 32 rows, each with the keys its last row
		 * sees (GPT-2's 128 tokens: 62 % of the scores and products) */
		int64_t rb = j->causal ? 32 : j->L;
		for (int64_t i0 = 0; i0 < j->L; i0 += rb)
			attn_rows(j, b, h, Q, K, V, O, sc, i0, i0 + rb < j->L ? i0 + rb : j->L);
	}
}

/* Rows [i0, i1) of one (batch, head): the scores (sc, row stride S) of
 * the keys they see, softmax, times V into O. */
static void attn_rows(const ajob *j, int64_t b, int64_t h, const float *Q, const float *K, const float *V, float *O,
		      float *sc, int64_t i0, int64_t i1)
{
	int64_t ns = j->causal && i1 < j->S ? i1 : j->S;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)(i1 - i0), (blasint)ns, (blasint)j->D, j->scale,
		    Q + i0 * j->D, (blasint)j->D, K, (blasint)j->D, 0.0f, sc + i0 * j->S, (blasint)j->S);
	for (int64_t i = i0; i < i1; i++) {
		float *r = sc + i * j->S;
		int64_t valid = j->causal ? (i + 1 < j->S ? i + 1 : j->S) : j->S;
		if (j->mask) {
			int64_t mo = b * j->msb + h * j->msh + i * j->msl, ms = j->mss;
			if (j->mbool) {
				const uint8_t *m = (const uint8_t *)j->mask + mo;
				for (int64_t s = 0; s < ns; s++)
					r[s] = m[s * ms] ? r[s] : -INFINITY;
			} else {
				const float *m = (const float *)j->mask + mo;
				for (int64_t s = 0; s < ns; s++)
					r[s] += m[s * ms];
			}
		}
		float mx = -INFINITY;
		for (int64_t s = 0; s < valid; s++)
			mx = r[s] > mx || r[s] != r[s] ? r[s] : mx;
		/* every score masked: mx is -inf and e^(-inf - -inf) NaN */
		double sum = 0; /* as the reference's */
		for (int64_t s = 0; s < valid; s++) {
			r[s] = expf(r[s] - mx);
			sum += r[s];
		}
		float inv = (float)(1.0 / sum);
		for (int64_t s = 0; s < valid; s++)
			r[s] *= inv;
		for (int64_t s = valid; s < ns; s++)
			r[s] = 0;
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)(i1 - i0), (blasint)j->Dv, (blasint)ns, 1.0f,
		    sc + i0 * j->S, (blasint)j->S, V, (blasint)j->Dv, 0.0f, O + i0 * j->Dv, (blasint)j->Dv);
}

int cpu_run_attn(rt_cpu *c, const cl_step *s, sn_err *e)
{
	const ir_graph *g = c->p->g;
	const ir_node *n = &g->nodes[s->node];
	const ir_shape *qs = &g->nodes[n->in[0]].shape, *ks = &g->nodes[n->in[1]].shape, *vs = &g->nodes[n->in[2]].shape;
	ajob j = {.c = c, .q = addr_of(c, n->in[0]), .k = addr_of(c, n->in[1]), .v = addr_of(c, n->in[2]),
		  .out = addr_of(c, s->out)};
	j.B = qs->d[0], j.H = qs->d[1], j.Hk = ks->d[1], j.L = qs->d[2], j.S = ks->d[2], j.D = qs->d[3], j.Dv = vs->d[3];
	j.scale = (float)(n->attrs->scale != 0 ? n->attrs->scale : 1 / sqrt((double)j.D));
	j.causal = n->attrs->causal;
	if (n->nin > 3) {
		/* the mask's dims line up with (B, H, L, S) from the right */
		const ir_node *mn = &g->nodes[n->in[3]];
		const ir_shape *m = &mn->shape;
		int64_t *st[4] = {&j.msb, &j.msh, &j.msl, &j.mss}, full[4] = {j.B, j.H, j.L, j.S}, stride = 1;
		for (int d = 3; d >= 0; d--) {
			int md = d - (4 - m->rank);
			int64_t ext = md >= 0 ? m->d[md] : 1;
			if (ext != 1 && ext != full[d])
				return sn_errf(e, SN_EINTERNAL, "cpu: attention mask dim %lld does not broadcast to %lld",
					       (long long)ext, (long long)full[d]);
			*st[d] = ext == 1 ? 0 : stride;
			stride *= ext;
		}
		j.mask = addr_of(c, n->in[3]);
		j.mbool = mn->dtype == IR_BOOL;
	}
	size_t need = (size_t)j.L * (size_t)j.S;
	if (cpu_scratch(c, need, "attention scores", e))
		return SN_EINTERNAL;
	cpu_pool_for(c->pool, j.B * j.H, 1, attn_task, &j);
	return SN_OK;
}

/* ---- pooling, NHWC f32: max over the window (padding never wins, NaN
 * does), and the mean over H and W, summed in double by blocks of
 * channels (as the reference's: a float sum over 2^20 pixels was 1e-5
 * off) ---- */

typedef struct pjob {
	const ir_node *n;
	const ir_shape *xs;
	const float *x;
	float *out;
} pjob;

static void pool_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	pjob *j = ctx;
	const ir_attrs *a = j->n->attrs;
	int64_t H = j->xs->d[1], W = j->xs->d[2], C = j->xs->d[3];
	int64_t Ho = j->n->shape.d[1], Wo = j->n->shape.d[2];
	if (j->n->op == IR_OP_global_avg_pool) {
		enum { CB = 256 };
		double acc[CB];
		for (int64_t b = lo; b < hi; b++)
			for (int64_t c0 = 0; c0 < C; c0 += CB) {
				int64_t nc = C - c0 < CB ? C - c0 : CB;
				for (int64_t c = 0; c < nc; c++)
					acc[c] = 0;
				for (int64_t p = 0; p < H * W; p++) {
					const float *x = j->x + (b * H * W + p) * C + c0;
					for (int64_t c = 0; c < nc; c++)
						acc[c] += x[c];
				}
				for (int64_t c = 0; c < nc; c++)
					j->out[b * C + c0 + c] = (float)(acc[c] / (double)(H * W));
			}
		return;
	}
	int64_t kh = a->kernel.v[0], kw = a->kernel.n > 1 ? a->kernel.v[1] : kh;
	int64_t sh = a->stride.n > 0 ? a->stride.v[0] : kh, sw = a->stride.n > 1 ? a->stride.v[1] : kw;
	int64_t pt = a->pad.n > 0 ? a->pad.v[0] : 0, pl = a->pad.n > 1 ? a->pad.v[1] : 0;
	int64_t dh = a->dilation.n > 0 ? a->dilation.v[0] : 1, dw = a->dilation.n > 1 ? a->dilation.v[1] : 1;
	for (int64_t r = lo; r < hi; r++) { /* r: (n, ho) */
		int64_t b = r / Ho, ho = r % Ho;
		for (int64_t wo = 0; wo < Wo; wo++) {
			float *o = j->out + ((b * Ho + ho) * Wo + wo) * C;
			for (int64_t c = 0; c < C; c++)
				o[c] = -INFINITY;
			for (int64_t p = 0; p < kh; p++) {
				int64_t hi_ = ho * sh - pt + p * dh;
				if (hi_ < 0 || hi_ >= H)
					continue;
				for (int64_t q = 0; q < kw; q++) {
					int64_t wi = wo * sw - pl + q * dw;
					if (wi < 0 || wi >= W)
						continue;
					const float *x = j->x + ((b * H + hi_) * W + wi) * C;
					for (int64_t c = 0; c < C; c++)
						o[c] = x[c] > o[c] || x[c] != x[c] ? x[c] : o[c];
				}
			}
		}
	}
}

void cpu_run_pool(rt_cpu *c, const cl_step *s)
{
	const ir_graph *g = c->p->g;
	const ir_node *n = &g->nodes[s->node];
	pjob j = {.n = n, .xs = &g->nodes[n->in[0]].shape, .x = addr_of(c, n->in[0]), .out = addr_of(c, s->out)};
	int64_t rows = n->op == IR_OP_global_avg_pool ? j.xs->d[0] : n->shape.d[0] * n->shape.d[1];
	cpu_pool_for(c->pool, rows, 1, pool_task, &j);
}

/* ---- gather: rows of the data copied by index, over the pool ---- */

typedef struct gjob2 {
	const char *x;
	char *out;
	const void *ix; /* NULL: 0..ni-1 */
	bool i32;
	int64_t len, ni;
	size_t chunk; /* bytes per row */
} gjob2;

static int64_t gather_index(const gjob2 *j, int64_t t)
{
	int64_t v = !j->ix ? t : j->i32 ? ((const int32_t *)j->ix)[t] : ((const int64_t *)j->ix)[t];
	return v < 0 ? v + j->len : v;
}

static void gather_task(void *ctx, int64_t lo, int64_t hi, int tid)
{
	(void)tid;
	gjob2 *j = ctx;
	for (int64_t r = lo; r < hi; r++) { /* r = o * ni + t */
		int64_t o = r / j->ni, t = r % j->ni;
		memcpy(j->out + (size_t)r * j->chunk, j->x + (size_t)(o * j->len + gather_index(j, t)) * j->chunk,
		       j->chunk);
	}
}

int cpu_run_gather(rt_cpu *c, const cl_step *s, sn_err *e)
{
	const ir_graph *g = c->p->g;
	const ir_node *n = &g->nodes[s->node];
	const ir_shape *xs = &g->nodes[n->in[0]].shape;
	const ir_node *in = &g->nodes[n->in[1]];
	int a = ir_axis(n->attrs->axis, xs->rank);
	if (a < 0)
		return sn_errf(e, SN_EINPUT, "gather: axis %lld out of range", (long long)n->attrs->axis);
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < a; d++)
		outer *= xs->d[d];
	for (int d = a + 1; d < xs->rank; d++)
		inner *= xs->d[d];
	gjob2 j = {.x = addr_of(c, s->b), .out = addr_of(c, s->out), .ix = s->a == IR_NONE ? NULL : addr_of(c, s->a),
		   .i32 = in->dtype == IR_I32, .len = xs->d[a], .ni = ir_numel(&in->shape),
		   .chunk = (size_t)inner * ir_dtype_size(n->dtype)};
	for (int64_t t = 0; t < j.ni; t++) { /* every index checked first, as the reference does */
		int64_t v = !j.ix ? t : j.i32 ? ((const int32_t *)j.ix)[t] : ((const int64_t *)j.ix)[t];
		if (v < -j.len || v >= j.len)
			return sn_errf(e, SN_EINPUT, "gather: index %lld out of range [%lld, %lld)", (long long)v,
				       (long long)-j.len, (long long)j.len);
	}
	if (j.chunk && outer > 0 && j.ni > 0)
		cpu_pool_for(c->pool, outer * j.ni, (int64_t)(65536 / j.chunk) + 1, gather_task, &j);
	return SN_OK;
}
