/* cg_reduce.c: reduce_sum/mean/max/min over any set of axes.
 *
 * The input's dims are split into kept and reduced ones; size-1 dims are
 * dropped and neighbours of the same class that are contiguous with each
 * other are merged, so the common cases become [outer, L] (contiguous rows)
 * or [outer, L, inner] (columns). Every output element is reduced by a
 * group of G threads: a warp (short rows) or a whole block (long rows),
 * or a single thread when the reduced elements of neighbouring outputs are
 * neighbours in memory (columns: coalesced across threads). Float dtypes
 * accumulate in fp32; integers in 64-bit integers (exact, as the reference
 * does) and store as the reference does: wrapping, saturating for a mean. */
#include "codegen/cg_render.h"

#include <stdio.h>
#include <string.h>

typedef struct rdim {
	int64_t size, stride;
} rdim;

/* Dims of class `want` (reduced or kept) of x, in order, size-1 dims
 * dropped, contiguous neighbours merged. Returns how many. */
static int collect(const ir_shape *x, const bool *red, bool want, rdim *out)
{
	int64_t st[IR_MAX_RANK], s = 1;
	for (int d = x->rank - 1; d >= 0; d--) {
		st[d] = s;
		s *= x->d[d];
	}
	int n = 0;
	for (int d = 0; d < x->rank; d++) {
		if (red[d] != want || x->d[d] == 1)
			continue;
		if (n > 0 && out[n - 1].stride == x->d[d] * st[d]) {
			out[n - 1].size *= x->d[d];
			out[n - 1].stride = st[d];
		} else {
			out[n++] = (rdim){x->d[d], st[d]};
		}
	}
	return n;
}

/* A device function `name(i)` mapping a linear index over dims (last
 * fastest) to an element offset. */
static void emit_offset_fn(sn_buf *b, const char *name, const rdim *d, int n)
{
	sn_buf_printf(b, "static __device__ __forceinline__ long %s(long i)\n{\n", name);
	if (n == 0) {
		sn_buf_puts(b, "\treturn 0;\n}\n\n");
		return;
	}
	if (n == 1 && d[0].stride == 1) {
		sn_buf_puts(b, "\treturn i;\n}\n\n");
		return;
	}
	sn_buf_puts(b, "\tlong off = 0;\n");
	for (int k = n - 1; k >= 0; k--) {
		if (k > 0)
			sn_buf_printf(b, "\toff += (i %% %lldL) * %lldL;\n\ti /= %lldL;\n", (long long)d[k].size,
				      (long long)d[k].stride, (long long)d[k].size);
		else
			sn_buf_printf(b, "\toff += i * %lldL;\n", (long long)d[k].stride);
	}
	sn_buf_puts(b, "\treturn off;\n}\n\n");
}

/* Emits `acc_t group_reduce(acc_t a)` for groups of g threads (1, 32 or a
 * whole block of g threads, g a multiple of 32): every thread of the group
 * gets the result. combine(acc_t, acc_t) must be defined. */
static void emit_group_reduce(sn_buf *b, int g)
{
	sn_buf_puts(b, "static __device__ __forceinline__ acc_t group_reduce(acc_t a)\n{\n");
	if (g >= 32) {
		sn_buf_puts(b, "\tfor (int m = 16; m > 0; m >>= 1)\n"
			       "\t\ta = combine(a, __shfl_xor_sync(0xffffffffu, a, m));\n");
	}
	if (g > 32) {
		sn_buf_printf(b, "\t__shared__ acc_t part[%d];\n"
				 "\tint w = threadIdx.x >> 5, lane = threadIdx.x & 31;\n"
				 "\t__syncthreads(); /* part may still be read by a previous call */\n"
				 "\tif (lane == 0)\n\t\tpart[w] = a;\n"
				 "\t__syncthreads();\n"
				 "\ta = part[0];\n"
				 "\tfor (int k = 1; k < %d; k++)\n\t\ta = combine(a, part[k]);\n",
			      g / 32, g / 32);
	}
	sn_buf_puts(b, "\treturn a;\n}\n\n");
}

/* Emits `T sat_store(long long)` for integer dtype t: ir_store's
 * saturating conversion, which the reference uses for an integer mean. */
static void emit_sat_store(sn_buf *b, ir_dtype t)
{
	const char *ct = cg_ctype(t);
	const char *lo = "-9223372036854775807LL - 1", *hi = "9223372036854775807LL";
	switch (t) {
	case IR_I32: lo = "-2147483648LL"; hi = "2147483647LL"; break;
	case IR_I8: lo = "-128LL"; hi = "127LL"; break;
	case IR_U8: lo = "0LL"; hi = "255LL"; break;
	default: break;
	}
	sn_buf_printf(b, "static __device__ __forceinline__ %s sat_store(long long v)\n{\n"
			 "\treturn (%s)(v < (%s) ? (%s) : v > (%s) ? (%s) : v);\n}\n\n",
		      ct, ct, lo, lo, hi, hi);
}

void cg_emit_spec(sn_buf *b, const ir_graph *g, ir_ref r, const char *config); /* cg_common.c */

int cg_render_reduce(const ir_graph *g, ir_ref r, const cg_target *tg, const cg_config *want, cg_step *st, sn_err *e)
{
	if (want)
		return sn_errf(e, SN_EUSAGE, "only the default config is built for this kernel family yet");
	const ir_node *n = &g->nodes[r];
	if (n->op == IR_OP_argmax || n->op == IR_OP_argmin || n->op == IR_OP_topk)
		return cg_render_scan(g, r, tg, want, st, e);
	const ir_node *x = &g->nodes[n->in[0]];
	const char *opname = ir_ops[n->op].name;
	const ir_shape *xs = &x->shape;
	bool red[IR_MAX_RANK];
	for (int d = 0; d < xs->rank; d++)
		red[d] = n->attrs->axes.n == 0;
	for (int i = 0; i < n->attrs->axes.n; i++) {
		int d = ir_axis(n->attrs->axes.v[i], xs->rank);
		if (d < 0)
			return sn_errf(e, SN_EINPUT, "%s: axis %lld out of range for rank %d", opname,
				       (long long)n->attrs->axes.v[i], xs->rank);
		red[d] = true;
	}
	rdim kd[IR_MAX_RANK], rd[IR_MAX_RANK];
	int nk = collect(xs, red, false, kd), nr = collect(xs, red, true, rd);
	int64_t nout = 1, len = 1;
	for (int i = 0; i < nk; i++)
		nout *= kd[i].size;
	for (int i = 0; i < nr; i++)
		len *= rd[i].size;
	if (ir_numel(xs) == 0)
		len = 0; /* a zero dim among the kept ones: no output at all */

	ir_dtype t = x->dtype;
	bool isf = ir_dtype_is_float(t);
	bool rows = nr == 1 && rd[0].stride == 1;            /* reduced elements contiguous */
	bool cols = !rows && nk > 0 && kd[nk - 1].stride == 1; /* neighbours' reductions interleave */
	int gsize, gpb;
	const char *how;
	if (cols && (nout >= 4096 || len <= 64)) {
		gsize = 1, gpb = 256, how = "one thread per output (columns, coalesced across threads)";
	} else if (len <= 1024) {
		gsize = 32, gpb = 8, how = "one warp per output";
	} else {
		gsize = len >= 65536 ? 1024 : 256, gpb = 1, how = "one block per output";
	}
	int64_t blocks = (nout + gpb - 1) / gpb;
	if (blocks > 0x7fffffff)
		return sn_errf(e, SN_EINPUT, "%s: %lld outputs are too many for one launch", opname, (long long)nout);

	char cfg[256];
	snprintf(cfg, sizeof cfg, "%lld outputs, each reducing %lld elements; %s; accumulation in %s",
		 (long long)nout, (long long)len, how, isf ? "fp32" : "64-bit integers");
	sn_buf b = {0};
	cg_emit_spec(&b, g, r, cfg);
	sn_buf_puts(&b, "\n");
	cg_emit_dtype_helpers(&b, t);
	sn_buf_printf(&b, "\ntypedef %s acc_t;\n\n", isf ? "float" : "long long");
	if (!isf && n->op == IR_OP_reduce_mean)
		emit_sat_store(&b, n->dtype);
	const char *init, *comb;
	switch (n->op) {
	case IR_OP_reduce_max:
		init = isf ? "-__int_as_float(0x7f800000)" : "(-9223372036854775807LL - 1)";
		comb = isf ? "(v > a || v != v) ? v : a; /* NaN sticks */" : "v > a ? v : a;";
		break;
	case IR_OP_reduce_min:
		init = isf ? "__int_as_float(0x7f800000)" : "9223372036854775807LL";
		comb = isf ? "(v < a || v != v) ? v : a; /* NaN sticks */" : "v < a ? v : a;";
		break;
	default:
		init = isf ? "0.0f" : "0LL";
		comb = isf ? "a + v;" : "(acc_t)((unsigned long long)a + (unsigned long long)v);";
		break;
	}
	sn_buf_printf(&b, "static __device__ __forceinline__ acc_t combine(acc_t a, acc_t v)\n{\n"
			  "\treturn %s\n}\n\n", comb);
	emit_group_reduce(&b, gsize);
	emit_offset_fn(&b, "out_base", kd, nk);
	emit_offset_fn(&b, "red_off", rd, nr);

	const char *ct = cg_ctype(t), *oct = cg_ctype(n->dtype);
	sn_buf_printf(&b, "extern \"C\" __global__ void __launch_bounds__(%d)\n"
			  "%s(const %s *__restrict__ x, %s *__restrict__ y)\n{\n"
			  "\tlong o = (long)blockIdx.x * %d + threadIdx.x / %d;\n"
			  "\tint lane = threadIdx.x %% %d;\n",
		      gsize * gpb, CG_NAME, ct, oct, gpb, gsize, gsize);
	/* uniform per group: a whole-block group returns as one */
	sn_buf_printf(&b, "\tif (o >= %lldL)\n\t\treturn;\n", (long long)nout);
	sn_buf_printf(&b, "\tlong base = out_base(o);\n\tacc_t a = %s;\n"
			  "#pragma unroll 4\n"
			  "\tfor (long i = lane; i < %lldL; i += %d) {\n",
		      init, (long long)len, gsize);
	sn_buf_printf(&b, "\t\tacc_t v = ld_%s(x, base + red_off(i));\n", ir_dtype_name(t));
	sn_buf_puts(&b, "\t\ta = combine(a, v);\n\t}\n\ta = group_reduce(a);\n\tif (lane == 0) {\n");
	if (isf) {
		const char *fin = n->op == IR_OP_reduce_mean ? " / (float)" : "";
		char cnt[32] = "";
		if (*fin)
			snprintf(cnt, sizeof cnt, "%lld", (long long)len);
		sn_buf_printf(&b, "\t\tst_%s(y, o, a%s%s);\n", ir_dtype_name(n->dtype), fin, cnt);
	} else if (n->op == IR_OP_reduce_mean) {
		/* as the reference: the mean in double, truncated toward zero */
		sn_buf_printf(&b, "\t\tdouble m = (double)a / %lld.0;\n"
				  "\t\ty[o] = sat_store(m != m ? 0LL : m >= 9.2e18 ? 9223372036854775807LL :"
				  " m <= -9.2e18 ? (-9223372036854775807LL - 1) : (long long)m);\n",
			      (long long)len);
	} else {
		sn_buf_printf(&b, "\t\tst_%s(y, o, a); /* wraps, as the reference */\n", ir_dtype_name(n->dtype));
	}
	sn_buf_puts(&b, "\t}\n}\n");

	st->kind = CG_STEP_KERNEL;
	cg_kernel *k = &st->k;
	k->grid[0] = (unsigned)(blocks > 0 ? blocks : 1);
	k->grid[1] = k->grid[2] = 1;
	k->block[0] = (unsigned)(gsize * gpb);
	k->block[1] = k->block[2] = 1;
	k->smem = 0;
	k->nbufs = 2;
	k->bufs[0] = n->in[0];
	k->bufs[1] = r;
	(void)tg;
	return cg_finish(k, opname, &b, e);
}
