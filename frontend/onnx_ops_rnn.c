/* onnx_ops_rnn.c: ONNX LSTM, GRU and RNN, which sinter has no IR op for, as a
 * scan over time unrolled in the graph. The input projection of every time
 * step is one matmul up front ([T, B, I] x [I, G*H] plus the biases); each
 * step then adds the recurrent matmul of the previous hidden state and
 * computes the gates with sigmoid/tanh/mul/add; the per-step hidden states
 * are concatenated into Y. The sequence length must therefore be known at
 * import time; the graph grows by about 18 nodes per step and direction. */
#include "onnx_build.h"

#include <stdlib.h>

/* At most this many time steps: the loop is unrolled into the graph. */
#define RNN_MAX_STEPS 4096

static ir_ref slice1(ox_ctx *c, const onnx_node *nd, ir_ref x, int64_t axis, int64_t start, int64_t end)
{
	ir_attrs a;
	ir_attrs_init(IR_OP_slice, &a);
	a.axes = (ir_ints){1, {axis}};
	a.starts = (ir_ints){1, {start}};
	a.ends = (ir_ints){1, {end}};
	return emit1(c, nd, IR_OP_slice, x, &a);
}

static ir_ref squeeze1(ox_ctx *c, const onnx_node *nd, ir_ref x, int64_t axis, bool up)
{
	ir_op op = up ? IR_OP_unsqueeze : IR_OP_squeeze;
	ir_attrs a;
	ir_attrs_init(op, &a);
	a.axes = (ir_ints){1, {axis}};
	return emit1(c, nd, op, x, &a);
}

/* x[k] of a [D, ...] operand: [...]. */
static ir_ref pick(ox_ctx *c, const onnx_node *nd, ir_ref x, int64_t k)
{
	return squeeze1(c, nd, slice1(c, nd, x, 0, k, k + 1), 0, false);
}

static ir_ref concat(ox_ctx *c, const onnx_node *nd, const ir_ref *in, uint32_t n, int64_t axis)
{
	for (uint32_t i = 0; i < n; i++)
		if (in[i] == IR_NONE)
			return IR_NONE;
	if (n == 1)
		return in[0];
	ir_attrs a;
	ir_attrs_init(IR_OP_concat, &a);
	a.axis = axis;
	return ox_emit(c, nd, IR_OP_concat, in, n, &a);
}

/* A 2-d w [out, in] as [in, out], made once per direction: a known
 * weight transposed in every step would be folded into a param per step. */
static ir_ref tr2(ox_ctx *c, const onnx_node *nd, ir_ref w)
{
	static const int perm[2] = {1, 0};
	return transpose(c, nd, w, perm, 2);
}

/* ---- activations ---- */

typedef enum { ACT_SIGMOID, ACT_TANH, ACT_RELU, ACT_SOFTPLUS } rnn_act;

static const struct {
	const char *name;
	ir_op op;
} acts[] = {
	[ACT_SIGMOID] = {"Sigmoid", IR_OP_sigmoid},
	[ACT_TANH] = {"Tanh", IR_OP_tanh},
	[ACT_RELU] = {"Relu", IR_OP_relu},
	[ACT_SOFTPLUS] = {"Softplus", IR_OP_softplus},
};

/* The activations attribute: nper per direction (LSTM 3: f, g, h; GRU 2:
 * f, g), given for every direction or left to the defaults. */
static int read_acts(ox_ctx *c, const onnx_node *nd, int ndir, int nper, const rnn_act *def, rnn_act *out)
{
	for (int d = 0; d < ndir; d++)
		for (int k = 0; k < nper; k++)
			out[d * nper + k] = def[k];
	const onnx_attr *at = ox_attr(nd, "activations");
	if (!at || at->nstrings == 0)
		return SN_OK;
	if (at->nstrings != (size_t)(ndir * nper))
		return ox_fail(c, nd, "activations has %zu entries, expected %d (%d per direction)", at->nstrings,
			       ndir * nper, nper);
	for (size_t k = 0; k < at->nstrings; k++) {
		const onnx_bytes *s = &at->strings[k];
		size_t j = 0;
		while (j < SN_COUNT(acts) && !(strlen(acts[j].name) == s->n && memcmp(acts[j].name, s->p, s->n) == 0))
			j++;
		if (j == SN_COUNT(acts))
			return ox_fail(c, nd, "activation '%.*s' is not supported (Sigmoid, Tanh, Relu and Softplus are)",
				       (int)(s->n > 40 ? 40 : s->n), (const char *)s->p);
		out[k] = (rnn_act)j;
	}
	return SN_OK;
}

/* ---- the shared frame of LSTM and GRU ---- */

typedef struct rnn {
	int ngates;         /* 4 (LSTM: i o f c), 3 (GRU: z r h) or 1 (RNN) */
	int ndir;           /* 1 or 2 */
	bool reverse;       /* direction "reverse" (ndir 1) */
	bool layout1;       /* batch first */
	int64_t T, B, I, H; /* B may be a symbol */
	double clip;        /* > 0: pre-activations clamped to [-clip, clip] */
	rnn_act act[6];
	ir_ref x;           /* [T, B, I] */
	ir_ref w, r, b;     /* [D, G*H, I], [D, G*H, H], [D, 2*G*H] or IR_NONE */
	ir_ref h0, c0, p;   /* [D, B, H] or IR_NONE; P [D, 3H] */
	ir_ref live;        /* per step t: [T, B, 1] bool, t < sequence_lens[b]; IR_NONE: all live */
	ir_ref zero_bh, one; /* 0-d zero and one of X's type */
} rnn;

static ir_ref act(ox_ctx *c, const onnx_node *nd, const rnn *R, rnn_act f, ir_ref x)
{
	if (R->clip > 0) {
		ir_attrs a;
		ir_attrs_init(IR_OP_clamp, &a);
		a.min = -R->clip;
		a.max = R->clip;
		x = emit1(c, nd, IR_OP_clamp, x, &a);
	}
	return emit1(c, nd, acts[f].op, x, NULL);
}

/* Reads and checks the operands and attributes both ops share. */
static int rnn_read(ox_ctx *c, const onnx_node *nd, rnn *R, int nper, const rnn_act *defs)
{
	ir_ref x = ox_need(c, nd, 0), w = ox_need(c, nd, 1), r = ox_need(c, nd, 2);
	if (x == IR_NONE || w == IR_NONE || r == IR_NONE || c->e->code)
		return c->e->code;
	if (ox_as_is(nd, "direction", "forward", "forward"))
		R->ndir = 1, R->reverse = false;
	else if (ox_as_is(nd, "direction", "forward", "reverse"))
		R->ndir = 1, R->reverse = true;
	else if (ox_as_is(nd, "direction", "forward", "bidirectional"))
		R->ndir = 2, R->reverse = false;
	else
		return ox_fail(c, nd, "direction must be forward, reverse or bidirectional");
	int64_t layout = ox_ai(nd, "layout", 0);
	if (layout != 0 && layout != 1)
		return ox_fail(c, nd, "layout must be 0 or 1");
	R->layout1 = layout == 1;
	R->clip = ox_af(nd, "clip", 0);
	if (ox_attr(nd, "clip") && !(R->clip > 0))
		return ox_fail(c, nd, "clip must be positive");
	if (ox_attr(nd, "activation_alpha") || ox_attr(nd, "activation_beta"))
		return ox_fail(c, nd, "activation_alpha and activation_beta are not supported");
	if (read_acts(c, nd, R->ndir, nper, defs, R->act))
		return c->e->code;
	ir_shape xs = shape_of(c, x), ws = shape_of(c, w), rs = shape_of(c, r);
	if (xs.rank != 3 || ws.rank != 3 || rs.rank != 3)
		return ox_fail(c, nd, "X, W and R must have rank 3");
	if (!ir_dtype_is_float(dtype_of(c, x)) || dtype_of(c, w) != dtype_of(c, x) || dtype_of(c, r) != dtype_of(c, x))
		return ox_fail(c, nd, "X, W and R must be of one floating-point type");
	if (R->layout1) {
		static const int perm[3] = {1, 0, 2};
		x = transpose(c, nd, x, perm, 3);
		xs = shape_of(c, x);
	}
	R->T = xs.d[0], R->B = xs.d[1], R->I = xs.d[2];
	if (R->T < 0)
		return ox_fail(c, nd, "the sequence length (dim %d of X) is symbolic dim %s: the time loop is "
				      "unrolled at import; bind it to a value when loading the model",
			       R->layout1 ? 1 : 0, c->w->syms[IR_SYM_ID(R->T)]);
	if (R->T == 0 || R->T > RNN_MAX_STEPS)
		return ox_fail(c, nd, "sequence length %lld: between 1 and %d steps are supported (the time loop is "
				      "unrolled)", (long long)R->T, RNN_MAX_STEPS);
	int64_t hs = ox_ai(nd, "hidden_size", rs.d[2]);
	R->H = rs.d[2];
	int64_t G = R->ngates;
	if (R->I > ((int64_t)1 << 30) || R->H > ((int64_t)1 << 30))
		return ox_fail(c, nd, "input or hidden size above 2^30");
	if (R->I < 0 || R->H < 0 || hs != R->H || ws.d[0] != R->ndir || ws.d[1] != G * R->H || ws.d[2] != R->I ||
	    rs.d[0] != R->ndir || rs.d[1] != G * R->H)
		return ox_fail(c, nd, "W [%d, %lld*hidden, input] or R [%d, %lld*hidden, hidden] does not match X "
				      "and hidden_size",
			       R->ndir, (long long)G, R->ndir, (long long)G);
	R->x = x, R->w = w, R->r = r;
	R->b = ox_in(c, nd, 3);
	if (c->e->code)
		return c->e->code;
	if (R->b != IR_NONE) {
		ir_shape bs = shape_of(c, R->b);
		if (bs.rank != 2 || bs.d[0] != R->ndir || bs.d[1] != 2 * G * R->H || dtype_of(c, R->b) != dtype_of(c, x))
			return ox_fail(c, nd, "B must be [%d, %lld] of X's type", R->ndir, (long long)(2 * G * R->H));
	}
	/* initial states: [D, B, H] (layout 1: [B, D, H]) */
	ir_ref *st[2] = {&R->h0, &R->c0};
	for (int k = 0; k < 2; k++) {
		size_t i = 5 + (size_t)k;
		*st[k] = ox_in(c, nd, i);
		if (c->e->code)
			return c->e->code;
		if (*st[k] == IR_NONE)
			continue;
		if (R->layout1) {
			static const int perm[3] = {1, 0, 2};
			*st[k] = transpose(c, nd, *st[k], perm, 3);
		}
		ir_shape s = shape_of(c, *st[k]);
		if (s.rank != 3 || s.d[0] != R->ndir || s.d[1] != R->B || s.d[2] != R->H ||
		    dtype_of(c, *st[k]) != dtype_of(c, x))
			return ox_fail(c, nd, "input %zu (initial state) must be [num_directions, batch, hidden] of X's "
					      "type (layout %lld)",
				       i, (long long)layout);
	}
	R->zero_bh = ox_scalar(c, dtype_of(c, x), 0);
	R->one = ox_scalar(c, dtype_of(c, x), 1);
	/* sequence_lens: all equal to T (known) needs nothing; else a mask
	 * per step: a batch entry past its length keeps its state and
	 * outputs zeros (the reverse direction starts at its last step). */
	R->live = IR_NONE;
	ir_ref sl = ox_in(c, nd, 4);
	if (c->e->code)
		return c->e->code;
	if (sl != IR_NONE) {
		ir_shape ss = shape_of(c, sl);
		if (ss.rank != 1 || (ss.d[0] != R->B && R->B >= 0) || (dtype_of(c, sl) != IR_I32 && dtype_of(c, sl) != IR_I64))
			return ox_fail(c, nd, "sequence_lens must be int32 [batch]");
		const ir_tensor *k = ox_known(c, sl);
		bool full = k != NULL;
		for (int64_t i = 0; k && i < ss.d[0]; i++) {
			int64_t v = (int64_t)ir_load(k->dtype, k->data, (size_t)i);
			if (v < 0 || v > R->T)
				return ox_fail(c, nd, "sequence_lens[%lld] is %lld, outside 0 to %lld", (long long)i,
					       (long long)v, (long long)R->T);
			full &= v == R->T;
		}
		if (!full) {
			ir_attrs ca;
			ir_attrs_init(IR_OP_cast, &ca);
			ca.dtype = IR_I64;
			ir_ref len = emit1(c, nd, IR_OP_cast, sl, &ca); /* vanishes if i64 */
			ir_shape ts = {3, {R->T, 1, 1}};
			ir_ref t = ox_iota(c, nd, IR_I64, &ts, 0);
			ir_attrs ua;
			ir_attrs_init(IR_OP_unsqueeze, &ua);
			ua.axes = (ir_ints){2, {0, 2}};
			len = emit1(c, nd, IR_OP_unsqueeze, len, &ua);
			R->live = emit2(c, nd, IR_OP_less, t, len); /* [T, B, 1] */
			if (R->live == IR_NONE)
				return c->e->code;
		}
	}
	return c->e->code;
}

/* The input projection of direction d, all steps at once: X @ W[d]^T plus
 * bias (a [G*H] vector or IR_NONE): [T, B, G*H]. */
static ir_ref project(ox_ctx *c, const onnx_node *nd, const rnn *R, int d, ir_ref bias)
{
	ir_ref y = emit2(c, nd, IR_OP_matmul, R->x, tr2(c, nd, pick(c, nd, R->w, d)));
	return bias == IR_NONE ? y : emit2(c, nd, IR_OP_add, y, bias);
}

/* Step t's slice of the projection p [T, B, G*H]: [B, G*H]. */
static ir_ref step_of(ox_ctx *c, const onnx_node *nd, ir_ref p, int64_t t)
{
	return squeeze1(c, nd, slice1(c, nd, p, 0, t, t + 1), 0, false);
}

/* Gate k (of width H) of a [B, n*H] value. */
static ir_ref gate(ox_ctx *c, const onnx_node *nd, const rnn *R, ir_ref v, int k)
{
	return slice1(c, nd, v, 1, k * R->H, (k + 1) * R->H);
}

/* A state of zeros [B, H] (B may be a symbol). */
static ir_ref zero_state(ox_ctx *c, const onnx_node *nd, const rnn *R)
{
	ir_attrs a;
	ir_attrs_init(IR_OP_expand, &a);
	a.shape = (ir_ints){2, {R->B, R->H}};
	return emit1(c, nd, IR_OP_expand, R->zero_bh, &a);
}

/* A masked update: where step t is live for a batch entry, the new state,
 * else the old one. */
static ir_ref keep_live(ox_ctx *c, const onnx_node *nd, const rnn *R, int64_t t, ir_ref nw, ir_ref old)
{
	if (R->live == IR_NONE)
		return nw;
	return where3(c, nd, step_of(c, nd, R->live, t), nw, old);
}

/* Binds Y (the per-step hidden states of each direction, ys[d][t]: [B, H])
 * and Y_h / Y_c (the last states hl[d], cl[d]) in the node's layout. */
static int rnn_bind(ox_ctx *c, const onnx_node *nd, const rnn *R, ir_ref *const ys[2], const ir_ref *hl,
		    const ir_ref *cl, size_t nout)
{
	if (c->e->code)
		return c->e->code;
	if (nd->noutputs > 0 && nd->outputs[0][0]) {
		ir_ref dirs[2];
		for (int d = 0; d < R->ndir; d++) {
			for (int64_t t = 0; t < R->T; t++) {
				ir_ref y = ys[d][t];
				if (R->live != IR_NONE) /* zeros past each sequence's end */
					y = where3(c, nd, step_of(c, nd, R->live, t), y, R->zero_bh);
				ys[d][t] = squeeze1(c, nd, y, 0, true);
			}
			dirs[d] = squeeze1(c, nd, concat(c, nd, ys[d], (uint32_t)R->T, 0), 1, true); /* [T, 1, B, H] */
		}
		ir_ref y = concat(c, nd, dirs, (uint32_t)R->ndir, 1);
		if (R->layout1) {
			static const int perm[4] = {2, 0, 1, 3};
			y = transpose(c, nd, y, perm, 4);
		}
		if (y == IR_NONE || ox_out(c, nd, 0, y))
			return c->e->code;
	}
	const ir_ref *last[2] = {hl, cl};
	for (size_t k = 1; k < nout && k < nd->noutputs; k++) {
		if (!nd->outputs[k][0])
			continue;
		ir_ref v[2];
		for (int d = 0; d < R->ndir; d++)
			v[d] = squeeze1(c, nd, last[k - 1][d], 0, true);
		ir_ref y = concat(c, nd, v, (uint32_t)R->ndir, 0);
		if (R->layout1) {
			static const int perm[3] = {1, 0, 2};
			y = transpose(c, nd, y, perm, 3);
		}
		if (y == IR_NONE || ox_out(c, nd, k, y))
			return c->e->code;
	}
	return c->e->code;
}

/* ---- LSTM ---- */

/* Gates i, o, f, c (ONNX order). it = f(Xi + H Ri + Pi C + b), ft likewise
 * with Pf (input_forget: ft = 1 - it), ct = g(Xc + H Rc + b), C = ft C +
 * it ct, ot = f(Xo + H Ro + Po C + b) with the new C, H = ot h(C); clip
 * clamps the input of every activation, h's included, as onnxruntime does. */
int ox_tr_lstm(ox_ctx *c, const onnx_node *nd)
{
	static const rnn_act defs[3] = {ACT_SIGMOID, ACT_TANH, ACT_TANH};
	rnn R = {.ngates = 4};
	if (rnn_read(c, nd, &R, 3, defs))
		return c->e->code;
	bool coupled = ox_ai(nd, "input_forget", 0) != 0; /* ft = 1 - it (onnxruntime's coupling) */
	R.p = ox_in(c, nd, 7);
	if (c->e->code)
		return c->e->code;
	if (R.p != IR_NONE) {
		ir_shape ps = shape_of(c, R.p);
		if (ps.rank != 2 || ps.d[0] != R.ndir || ps.d[1] != 3 * R.H || dtype_of(c, R.p) != dtype_of(c, R.x))
			return ox_fail(c, nd, "P must be [%d, %lld] of X's type", R.ndir, (long long)(3 * R.H));
	}
	ir_ref *ys[2] = {NULL, NULL};
	ir_ref hl[2] = {IR_NONE, IR_NONE}, cl[2] = {IR_NONE, IR_NONE};
	int rc = SN_OK;
	for (int d = 0; d < R.ndir && !rc; d++) {
		ys[d] = malloc((size_t)R.T * sizeof *ys[d]);
		if (!ys[d]) {
			rc = OOM(c);
			break;
		}
		ir_ref bias = IR_NONE;
		if (R.b != IR_NONE) { /* Wb + Rb */
			ir_ref bd = pick(c, nd, R.b, d);
			bias = emit2(c, nd, IR_OP_add, slice1(c, nd, bd, 0, 0, 4 * R.H),
				     slice1(c, nd, bd, 0, 4 * R.H, 8 * R.H));
		}
		ir_ref xp = project(c, nd, &R, d, bias);
		ir_ref rtr = tr2(c, nd, pick(c, nd, R.r, d)); /* [H, 4H] */
		ir_ref pi = IR_NONE, po = IR_NONE, pf = IR_NONE;
		if (R.p != IR_NONE) {
			ir_ref pd = pick(c, nd, R.p, d);
			pi = slice1(c, nd, pd, 0, 0, R.H);
			po = slice1(c, nd, pd, 0, R.H, 2 * R.H);
			pf = slice1(c, nd, pd, 0, 2 * R.H, 3 * R.H);
		}
		ir_ref h = R.h0 != IR_NONE ? pick(c, nd, R.h0, d) : zero_state(c, nd, &R);
		ir_ref cs = R.c0 != IR_NONE ? pick(c, nd, R.c0, d) : zero_state(c, nd, &R);
		const rnn_act *fa = R.act + 3 * d;
		bool rev = R.reverse || d == 1;
		for (int64_t s = 0; s < R.T && !c->e->code; s++) {
			int64_t t = rev ? R.T - 1 - s : s;
			ir_ref g = emit2(c, nd, IR_OP_add, step_of(c, nd, xp, t), emit2(c, nd, IR_OP_matmul, h, rtr));
			ir_ref gi = gate(c, nd, &R, g, 0), go = gate(c, nd, &R, g, 1), gf = gate(c, nd, &R, g, 2),
			       gc = gate(c, nd, &R, g, 3);
			if (pi != IR_NONE) {
				gi = emit2(c, nd, IR_OP_add, gi, emit2(c, nd, IR_OP_mul, pi, cs));
				if (!coupled)
					gf = emit2(c, nd, IR_OP_add, gf, emit2(c, nd, IR_OP_mul, pf, cs));
			}
			ir_ref it = act(c, nd, &R, fa[0], gi), ct = act(c, nd, &R, fa[1], gc);
			ir_ref ft = coupled ? emit2(c, nd, IR_OP_sub, R.one, it) : act(c, nd, &R, fa[0], gf);
			ir_ref cn = emit2(c, nd, IR_OP_add, emit2(c, nd, IR_OP_mul, ft, cs), emit2(c, nd, IR_OP_mul, it, ct));
			if (po != IR_NONE)
				go = emit2(c, nd, IR_OP_add, go, emit2(c, nd, IR_OP_mul, po, cn));
			ir_ref hn = emit2(c, nd, IR_OP_mul, act(c, nd, &R, fa[0], go), act(c, nd, &R, fa[2], cn));
			ys[d][t] = hn;
			h = keep_live(c, nd, &R, t, hn, h);
			cs = keep_live(c, nd, &R, t, cn, cs);
		}
		hl[d] = h, cl[d] = cs;
		rc = c->e->code;
	}
	if (!rc)
		rc = rnn_bind(c, nd, &R, ys, hl, cl, 3);
	free(ys[0]);
	free(ys[1]);
	return rc;
}

/* ---- GRU ---- */

/* Gates z, r, h (ONNX order). zt = f(Xz + H Rz + b), rt = f(Xr + H Rr + b),
 * ht = g(Xh + (rt H) Rh + Rbh + Wbh) (linear_before_reset 0) or g(Xh + rt
 * (H Rh + Rbh) + Wbh) (1), H = (1 - zt) ht + zt H. */
int ox_tr_gru(ox_ctx *c, const onnx_node *nd)
{
	static const rnn_act defs[2] = {ACT_SIGMOID, ACT_TANH};
	rnn R = {.ngates = 3};
	if (rnn_read(c, nd, &R, 2, defs))
		return c->e->code;
	bool lbr = ox_ai(nd, "linear_before_reset", 0) != 0;
	ir_ref *ys[2] = {NULL, NULL};
	ir_ref hl[2] = {IR_NONE, IR_NONE};
	int rc = SN_OK;
	int64_t H = R.H;
	for (int d = 0; d < R.ndir && !rc; d++) {
		ys[d] = malloc((size_t)R.T * sizeof *ys[d]);
		if (!ys[d]) {
			rc = OOM(c);
			break;
		}
		/* the projection's bias: Wb + Rb for z and r; Wbh, plus Rbh
		 * unless it is applied inside the reset (lbr) */
		ir_ref bias = IR_NONE, rbh = IR_NONE;
		if (R.b != IR_NONE) {
			ir_ref bd = pick(c, nd, R.b, d);
			ir_ref wb = slice1(c, nd, bd, 0, 0, 3 * H), rb = slice1(c, nd, bd, 0, 3 * H, 6 * H);
			rbh = slice1(c, nd, rb, 0, 2 * H, 3 * H);
			ir_ref bzr = emit2(c, nd, IR_OP_add, slice1(c, nd, wb, 0, 0, 2 * H), slice1(c, nd, rb, 0, 0, 2 * H));
			ir_ref bh = slice1(c, nd, wb, 0, 2 * H, 3 * H);
			if (!lbr)
				bh = emit2(c, nd, IR_OP_add, bh, rbh);
			bias = concat(c, nd, (ir_ref[2]){bzr, bh}, 2, 0);
		}
		ir_ref xp = project(c, nd, &R, d, bias);
		ir_ref rd = pick(c, nd, R.r, d);
		ir_ref rdt = tr2(c, nd, rd); /* [H, 3H]: z, r, h */
		ir_ref rzr = slice1(c, nd, rdt, 1, 0, 2 * H), rh = slice1(c, nd, rdt, 1, 2 * H, 3 * H);
		ir_ref h = R.h0 != IR_NONE ? pick(c, nd, R.h0, d) : zero_state(c, nd, &R);
		const rnn_act *fa = R.act + 2 * d;
		bool rev = R.reverse || d == 1;
		for (int64_t s = 0; s < R.T && !c->e->code; s++) {
			int64_t t = rev ? R.T - 1 - s : s;
			ir_ref x = step_of(c, nd, xp, t);
			ir_ref zr, hh;
			if (lbr) {
				ir_ref hr = emit2(c, nd, IR_OP_matmul, h, rdt); /* [B, 3H] */
				zr = emit2(c, nd, IR_OP_add, slice1(c, nd, x, 1, 0, 2 * H), slice1(c, nd, hr, 1, 0, 2 * H));
				ir_ref lin = slice1(c, nd, hr, 1, 2 * H, 3 * H);
				if (rbh != IR_NONE)
					lin = emit2(c, nd, IR_OP_add, lin, rbh);
				ir_ref rt = act(c, nd, &R, fa[0], gate(c, nd, &R, zr, 1));
				hh = emit2(c, nd, IR_OP_add, gate(c, nd, &R, x, 2), emit2(c, nd, IR_OP_mul, rt, lin));
			} else {
				zr = emit2(c, nd, IR_OP_add, slice1(c, nd, x, 1, 0, 2 * H), emit2(c, nd, IR_OP_matmul, h, rzr));
				ir_ref rt = act(c, nd, &R, fa[0], gate(c, nd, &R, zr, 1));
				hh = emit2(c, nd, IR_OP_add, gate(c, nd, &R, x, 2),
					   emit2(c, nd, IR_OP_matmul, emit2(c, nd, IR_OP_mul, rt, h), rh));
			}
			ir_ref zt = act(c, nd, &R, fa[0], gate(c, nd, &R, zr, 0));
			hh = act(c, nd, &R, fa[1], hh);
			/* (1 - z) hh + z H = hh + z (H - hh) */
			ir_ref hn = emit2(c, nd, IR_OP_add, hh, emit2(c, nd, IR_OP_mul, zt, emit2(c, nd, IR_OP_sub, h, hh)));
			ys[d][t] = hn;
			h = keep_live(c, nd, &R, t, hn, h);
		}
		hl[d] = h;
		rc = c->e->code;
	}
	if (!rc)
		rc = rnn_bind(c, nd, &R, ys, hl, NULL, 2);
	free(ys[0]);
	free(ys[1]);
	return rc;
}

/* ---- RNN ---- */

/* One gate: H = f(Xt W^T + H R^T + Wb + Rb). */
int ox_tr_rnn(ox_ctx *c, const onnx_node *nd)
{
	static const rnn_act defs[1] = {ACT_TANH};
	rnn R = {.ngates = 1};
	if (rnn_read(c, nd, &R, 1, defs))
		return c->e->code;
	ir_ref *ys[2] = {NULL, NULL};
	ir_ref hl[2] = {IR_NONE, IR_NONE};
	int rc = SN_OK;
	for (int d = 0; d < R.ndir && !rc; d++) {
		ys[d] = malloc((size_t)R.T * sizeof *ys[d]);
		if (!ys[d]) {
			rc = OOM(c);
			break;
		}
		ir_ref bias = IR_NONE;
		if (R.b != IR_NONE) { /* Wb + Rb */
			ir_ref bd = pick(c, nd, R.b, d);
			bias = emit2(c, nd, IR_OP_add, slice1(c, nd, bd, 0, 0, R.H), slice1(c, nd, bd, 0, R.H, 2 * R.H));
		}
		ir_ref xp = project(c, nd, &R, d, bias);
		ir_ref rtr = tr2(c, nd, pick(c, nd, R.r, d));
		ir_ref h = R.h0 != IR_NONE ? pick(c, nd, R.h0, d) : zero_state(c, nd, &R);
		bool rev = R.reverse || d == 1;
		for (int64_t s = 0; s < R.T && !c->e->code; s++) {
			int64_t t = rev ? R.T - 1 - s : s;
			ir_ref hn = act(c, nd, &R, R.act[d],
					emit2(c, nd, IR_OP_add, step_of(c, nd, xp, t), emit2(c, nd, IR_OP_matmul, h, rtr)));
			ys[d][t] = hn;
			h = keep_live(c, nd, &R, t, hn, h);
		}
		hl[d] = h;
		rc = c->e->code;
	}
	if (!rc)
		rc = rnn_bind(c, nd, &R, ys, hl, NULL, 2);
	free(ys[0]);
	free(ys[1]);
	return rc;
}
