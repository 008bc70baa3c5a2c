/* precision.c: the precision pass (--precision fp32|tf32|bf16|fp16|fp8).
 *
 * fp32 and tf32 leave the graph alone: tf32 only changes how fp32
 * contractions run (cg_target.tf32, set by the API).
 *
 * bf16 and fp16 ("low") rebuild the graph so that every float value is low:
 *   - float params become low params with the same key (the API converts
 *     the stored values with correct rounding when it builds the weights);
 *   - float consts are converted here (finite values beyond the range
 *     saturate, fp16 to +-65504, bf16 to +-3.39e38, as finfo.min masks
 *     expect; infinities stay);
 *   - float graph inputs keep their declared dtype and are cast to low
 *     right after the input;
 *   - every float op is rebuilt from its low operands, so it computes in low
 *     (a cast to another float dtype becomes a cast to low);
 *   - graph outputs are cast back to their declared dtype; the cast takes
 *     the output's name (outputs are named after it), the low value gets
 *     "<name>.<dtype>".
 * Params and consts read only as the weight, bias or statistics of a norm
 * (batch_norm, layer_norm, rms_norm: their rules take these in any float
 * dtype) stay as declared: they are small, and the kernels read them as
 * fp32 anyway. Accumulation stays fp32 inside the kernels (matmul, conv,
 * reductions, softmax, norm statistics); the reference computes in fp64.
 *
 * The arguments of sin and cos stay as declared when they are computed
 * from sources alone: graph inputs, params, consts, iotas and casts from
 * integers, through elementwise ops, data movement and matmul (a timestep
 * or position embedding: cast(t) * freqs, RoPE's inv_freq @ positions).
 * Such arguments reach the thousands, where bf16's spacing is 4 to 8 and
 * fp16's 0.5 to 1, so a low argument makes sin and cos noise (issue 26: a
 * DDPM UNet's timestep embedding, 3.7e-2 relative L2 in bf16 where
 * PyTorch, which computes it in f32 as the model says, has 1.0e-2). Those
 * nodes ("wide") are copied as declared, the sin and cos that read them
 * too, and every other reader gets the value cast to low (one cast per
 * value, named "<name>.<dtype>"; a wide graph input is cast there instead
 * of right after the input; a const gets a low copy of that name). A
 * param or const that a wide node reads stays as declared (its low
 * readers read the cast). Sin and cos end the region: their results are
 * in [-1, 1], where low is as good as it gets.
 *
 * fp8 is bf16 plus: a float param read as a matmul operand or as linear's
 * weight becomes two params, "<key>@fp8" (f8e4m3, same shape) and
 * "<key>@fp8scale" (bf16[]), and the weight the product reads is
 * mul(cast(w8, bf16), scale). scale = amax / 448 rounded to bf16 (1 when
 * the weight is all zeros), w8 = w / scale rounded to e4m3 and clamped to
 * +-448. The values are computed here from ctx->ws when it is set. Other
 * readers of the same param (a tied embedding) read it as bf16. fp8 is
 * refused when ctx->sm is known and below 89. */
#include "passes/passes.h"
#include "passes/rewrite.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define E4M3_MAX 448.0
#define F16_MAX 65504.0
#define BF16_MAX 3.3895313892515355e38

typedef struct prec {
	rw r;
	ir_wstore *ws;
	ir_dtype low;
	bool fp8;
	bool *keep;   /* per src node: a param/const left as declared */
	bool *wide;   /* per src node: computed as declared (a sin/cos argument) */
	ir_ref *w8;   /* per src node: its fp8-dequantized weight in dst */
	ir_ref *lowv; /* per src node: its wide value cast to low, made on first use */
	uint32_t *uses;
} prec;

static bool is_norm(ir_op op)
{
	return op == IR_OP_batch_norm || op == IR_OP_layer_norm || op == IR_OP_rms_norm;
}

/* Whether operand k of n is a weight that fp8 quantizes. */
static bool fp8_slot(const ir_node *n, uint32_t k)
{
	return n->op == IR_OP_matmul || (n->op == IR_OP_linear && k == 1);
}

/* Marks the float params and consts of g that only norms read, as their
 * weight, bias or statistics (operand 1 and up), and that are no output. */
static void mark_keep(const ir_graph *g, bool *keep)
{
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		keep[i] = (n->op == IR_OP_param || n->op == IR_OP_const) && ir_dtype_is_float(n->dtype);
	}
	bool *read = calloc(g->nnodes ? g->nnodes : 1, sizeof *read);
	if (!read) { /* keeping nothing is always correct */
		memset(keep, 0, g->nnodes * sizeof *keep);
		return;
	}
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		for (uint32_t k = 0; k < n->nin; k++) {
			read[n->in[k]] = true;
			if (!is_norm(n->op) || k == 0)
				keep[n->in[k]] = false;
		}
	}
	for (uint32_t i = 0; i < g->noutputs; i++)
		keep[g->outputs[i]] = false;
	for (uint32_t i = 0; i < g->nnodes; i++)
		keep[i] = keep[i] && read[i];
	free(read);
}

/* Ops that carry a sin/cos argument computed from sources alone: they
 * compute exactly what they read (no weights of their own, no statistics). */
static bool arg_op(ir_op op)
{
	if (op == IR_OP_sin || op == IR_OP_cos)
		return false; /* they end the region */
	ir_kind k = ir_ops[op].kind;
	return k == IR_K_UNARY || k == IR_K_BINARY || k == IR_K_TERNARY || k == IR_K_MOVE || op == IR_OP_matmul;
}

/* Marks wide: the float values of g computed from sources alone (inputs,
 * params, consts, iotas, casts from integers; through arg_op ops) that a
 * sin or cos reads, directly or through other such values, and those sin
 * and cos. A wide param or const is kept as declared. 0 or SN_EINTERNAL. */
static int mark_wide(const ir_graph *g, bool *wide, bool *keep)
{
	bool *src = calloc(g->nnodes ? g->nnodes : 1, sizeof *src);
	if (!src)
		return SN_EINTERNAL;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		if (!ir_dtype_is_float(n->dtype))
			continue;
		if (ir_ops[n->op].kind == IR_K_SOURCE) {
			src[i] = true;
		} else if (n->op == IR_OP_cast && !ir_dtype_is_float(g->nodes[n->in[0]].dtype)) {
			src[i] = true;
		} else if (arg_op(n->op)) {
			src[i] = true;
			for (uint32_t k = 0; k < n->nin; k++) {
				ir_ref o = n->in[k];
				if (ir_dtype_is_float(g->nodes[o].dtype) && !src[o])
					src[i] = false;
			}
		}
	}
	/* backwards: readers come after what they read */
	for (uint32_t i = g->nnodes; i-- > 0;) {
		const ir_node *n = &g->nodes[i];
		if ((n->op == IR_OP_sin || n->op == IR_OP_cos) && src[n->in[0]])
			wide[i] = true;
		if (!wide[i])
			continue;
		for (uint32_t k = 0; k < n->nin; k++)
			if (src[n->in[k]])
				wide[n->in[k]] = true;
	}
	for (uint32_t i = 0; i < g->nnodes; i++) {
		ir_op op = g->nodes[i].op;
		if (wide[i] && (op == IR_OP_param || op == IR_OP_const))
			keep[i] = true;
	}
	free(src);
	return SN_OK;
}

static bool name_taken(const ir_graph *g, const char *s)
{
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].name && strcmp(g->nodes[i].name, s) == 0)
			return true;
	return false;
}

/* Names dst node r "<base><suffix>" when no node of src or dst has that
 * name (else leaves it unnamed: the printer makes one up). Derived names
 * never take a src name, so src names can be copied without a check. */
static int name_derived(prec *p, ir_ref r, const char *base, const char *suffix, sn_err *e)
{
	if (!base)
		return SN_OK;
	char s[512];
	int n = snprintf(s, sizeof s, "%s%s", base, suffix);
	if (n < 0 || (size_t)n >= sizeof s || name_taken(p->r.src, s) || name_taken(p->r.dst, s))
		return SN_OK;
	if (ir_set_name(p->r.dst, r, s) != SN_OK)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	return SN_OK;
}

/* Gives dst node r src node old's name and location. */
static int take_name(prec *p, ir_ref r, ir_ref old, sn_err *e)
{
	const ir_node *o = &p->r.src->nodes[old];
	ir_node *d = &p->r.dst->nodes[r];
	d->line = o->line;
	d->col = o->col;
	if (o->name && ir_set_name(p->r.dst, r, o->name) != SN_OK)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	return SN_OK;
}

static const char *low_suffix(const prec *p)
{
	return p->low == IR_F16 ? ".f16" : ".bf16";
}

static ir_ref add_cast(ir_graph *g, ir_ref x, ir_dtype t, sn_err *e)
{
	ir_attrs a;
	ir_attrs_init(IR_OP_cast, &a);
	a.dtype = t;
	return ir_add(g, IR_OP_cast, &x, 1, &a, e);
}

/* A float const converted to low. */
static ir_ref low_const(prec *p, const ir_node *n, sn_err *e)
{
	int64_t count = ir_numel(&n->shape);
	size_t nb = (size_t)count * ir_dtype_size(p->low);
	void *buf = malloc(nb ? nb : 1);
	if (!buf) {
		sn_errf(e, SN_EINTERNAL, "out of memory");
		return IR_NONE;
	}
	for (int64_t i = 0; i < count; i++) {
		double x = ir_load(n->dtype, n->data, (size_t)i);
		if (p->low == IR_F16 && isfinite(x) && fabs(x) > F16_MAX)
			x = x < 0 ? -F16_MAX : F16_MAX;
		/* bf16 too: f32's finfo.min rounds to -inf, and HF's
		 * (1 - mask) * finfo.min is then 0 * -inf, NaN */
		if (p->low == IR_BF16 && isfinite(x) && fabs(x) > BF16_MAX)
			x = x < 0 ? -BF16_MAX : BF16_MAX;
		ir_store(p->low, buf, (size_t)i, x);
	}
	ir_ref r = ir_add_const(p->r.dst, p->low, &n->shape, buf, e);
	free(buf);
	return r;
}

/* The dst value standing for src node old, made on first use for params
 * and consts (so a param only fp8 products read leaves no dead copy). */
static ir_ref value(prec *p, ir_ref old, sn_err *e)
{
	if (p->r.map[old] != IR_NONE)
		return p->r.map[old];
	const ir_node *n = &p->r.src->nodes[old];
	if ((n->op != IR_OP_param && n->op != IR_OP_const) || !ir_dtype_is_float(n->dtype) ||
	    p->keep[old] || n->dtype == p->low)
		return rw_copy(&p->r, old, e);
	ir_ref r = n->op == IR_OP_param ? ir_add_param(p->r.dst, n->pname, p->low, &n->shape, e)
					: low_const(p, n, e);
	if (r == IR_NONE || take_name(p, r, old, e) != SN_OK)
		return IR_NONE;
	return p->r.map[old] = r;
}

/* Wide src node old's dst value v cast to low, made once, named
 * "<name>.<dtype>"; a const is converted here instead (as value would:
 * fp16 saturates). */
static ir_ref low_of(prec *p, ir_ref old, ir_ref v, sn_err *e)
{
	if (p->lowv[old] != IR_NONE)
		return p->lowv[old];
	const ir_node *n = &p->r.src->nodes[old];
	ir_ref c = n->op == IR_OP_const ? low_const(p, n, e) : add_cast(p->r.dst, v, p->low, e);
	if (c == IR_NONE || name_derived(p, c, n->name, low_suffix(p), e) != SN_OK)
		return IR_NONE;
	return p->lowv[old] = c;
}

/* ---- fp8 weights ---- */

static char *key_with(const char *key, const char *suffix)
{
	size_t n = strlen(key) + strlen(suffix) + 1;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s%s", key, suffix);
	return s;
}

/* Computes "<key>@fp8" and "<key>@fp8scale" from key's tensor in ws. */
static int quantize(prec *p, const ir_node *n, const char *k8, const char *ks, sn_err *e)
{
	const ir_tensor *t = ir_ws_get(p->ws, n->pname);
	if (!t)
		return sn_errf(e, SN_EINPUT, "precision fp8: param \"%s\" has no value", n->pname);
	if (!ir_dtype_is_float(t->dtype) || !ir_shape_eq(&t->shape, &n->shape))
		return sn_errf(e, SN_EINPUT, "precision fp8: param \"%s\" has a value of another type", n->pname);
	size_t count = (size_t)ir_numel(&t->shape);
	double amax = 0;
	for (size_t i = 0; i < count; i++) {
		double x = fabs(ir_load(t->dtype, t->data, i));
		if (!isfinite(x))
			return sn_errf(e, SN_EINPUT, "precision fp8: param \"%s\" holds a non-finite value", n->pname);
		if (x > amax)
			amax = x;
	}
	double scale = amax > 0 ? ir_bf16_to_double(ir_bf16_from_double(amax / E4M3_MAX)) : 1;
	if (scale == 0) /* amax / 448 below bf16's range */
		scale = 1;
	uint8_t *q = malloc(count ? count : 1);
	uint16_t *s = malloc(sizeof *s);
	if (!q || !s) {
		free(q);
		free(s);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	for (size_t i = 0; i < count; i++) {
		double x = ir_load(t->dtype, t->data, i) / scale;
		q[i] = ir_f8e4m3_from_double(fmax(-E4M3_MAX, fmin(E4M3_MAX, x)));
	}
	*s = ir_bf16_from_double(scale);
	ir_shape scalar = {.rank = 0};
	if (ir_ws_put(p->ws, k8, (ir_tensor){IR_F8E4M3, n->shape, q, count}, e) != SN_OK) {
		free(s);
		return e->code;
	}
	return ir_ws_put(p->ws, ks, (ir_tensor){IR_BF16, scalar, s, sizeof *s}, e);
}

/* The dequantized fp8 weight for src param old: mul(cast(w8, low), scale). */
static ir_ref fp8_weight(prec *p, ir_ref old, sn_err *e)
{
	if (p->w8[old] != IR_NONE)
		return p->w8[old];
	const ir_node *n = &p->r.src->nodes[old];
	ir_graph *g = p->r.dst;
	ir_ref r = IR_NONE;
	char *k8 = key_with(n->pname, "@fp8"), *ks = key_with(n->pname, "@fp8scale");
	if (!k8 || !ks) {
		sn_errf(e, SN_EINTERNAL, "out of memory");
		goto done;
	}
	if (p->ws && quantize(p, n, k8, ks, e) != SN_OK)
		goto done;
	ir_shape scalar = {.rank = 0};
	ir_ref w8 = ir_add_param(g, k8, IR_F8E4M3, &n->shape, e);
	if (w8 == IR_NONE || name_derived(p, w8, n->name, ".fp8", e) != SN_OK)
		goto done;
	ir_ref sc = ir_add_param(g, ks, p->low, &scalar, e);
	if (sc == IR_NONE || name_derived(p, sc, n->name, ".fp8scale", e) != SN_OK)
		goto done;
	ir_ref wl = add_cast(g, w8, p->low, e);
	if (wl == IR_NONE || name_derived(p, wl, n->name, p->low == IR_F16 ? ".fp8.f16" : ".fp8.bf16", e) != SN_OK)
		goto done;
	ir_ref in[2] = {wl, sc};
	r = ir_add(g, IR_OP_mul, in, 2, NULL, e);
	if (r != IR_NONE && name_derived(p, r, n->name, ".dq", e) != SN_OK)
		r = IR_NONE;
	if (r != IR_NONE)
		p->w8[old] = r;
done:
	free(k8);
	free(ks);
	return r;
}

/* ---- the rebuild ---- */

static ir_ref rebuild(prec *p, ir_ref old, sn_err *e)
{
	const ir_graph *src = p->r.src;
	const ir_node *n = &src->nodes[old];
	ir_graph *g = p->r.dst;
	switch (n->op) {
	case IR_OP_param:
	case IR_OP_const:
		return IR_NONE; /* made on first use (value) */
	case IR_OP_input: {
		ir_ref r = rw_copy(&p->r, old, e);
		if (r == IR_NONE || !ir_dtype_is_float(n->dtype) || n->dtype == p->low || p->wide[old])
			return r;
		ir_ref c = add_cast(g, r, p->low, e);
		if (c == IR_NONE || name_derived(p, c, n->name, low_suffix(p), e) != SN_OK)
			return IR_NONE;
		return p->r.map[old] = c;
	}
	case IR_OP_iota: {
		if (!ir_dtype_is_float(n->dtype) || n->dtype == p->low || p->wide[old])
			return rw_copy(&p->r, old, e);
		ir_ref r = ir_add_iota(g, p->low, &n->shape, n->attrs->axis, e);
		if (r == IR_NONE || take_name(p, r, old, e) != SN_OK)
			return IR_NONE;
		return p->r.map[old] = r;
	}
	default:
		break;
	}
	if (p->wide[old]) { /* as declared: its float operands are wide too */
		for (uint32_t k = 0; k < n->nin; k++)
			if (value(p, n->in[k], e) == IR_NONE)
				return IR_NONE;
		return rw_copy(&p->r, old, e);
	}
	ir_ref stack[8], *in = n->nin <= 8 ? stack : malloc(n->nin * sizeof *in);
	if (!in) {
		sn_errf(e, SN_EINTERNAL, "out of memory");
		return IR_NONE;
	}
	ir_ref r = IR_NONE;
	for (uint32_t k = 0; k < n->nin; k++) {
		ir_ref o = n->in[k];
		const ir_node *on = &src->nodes[o];
		bool q = p->fp8 && fp8_slot(n, k) && on->op == IR_OP_param && ir_dtype_is_float(on->dtype);
		if ((in[k] = q ? fp8_weight(p, o, e) : value(p, o, e)) == IR_NONE)
			goto done;
		/* a wide value (or a param kept for a wide reader) read by a low
		 * op: norms take their params in any float dtype */
		if (ir_dtype_is_float(on->dtype) && g->nodes[in[k]].dtype != p->low && !(is_norm(n->op) && k > 0) &&
		    (in[k] = low_of(p, o, in[k], e)) == IR_NONE)
			goto done;
	}
	ir_attrs a = *n->attrs;
	if (n->op == IR_OP_cast && ir_dtype_is_float(a.dtype)) {
		a.dtype = p->low;
		if (g->nodes[in[0]].dtype == p->low) { /* nothing left to convert */
			r = p->r.map[old] = in[0];
			goto done;
		}
	}
	r = ir_add(g, n->op, in, n->nin, &a, e);
	if (r == IR_NONE || take_name(p, r, old, e) != SN_OK)
		r = IR_NONE;
	else
		p->r.map[old] = r;
done:
	if (in != stack)
		free(in);
	return r;
}

/* Casts every output whose low value differs from its declared dtype back
 * to that dtype; the cast takes the output's name. */
static int cast_outputs(prec *p, sn_err *e)
{
	const ir_graph *src = p->r.src;
	ir_graph *g = p->r.dst;
	for (uint32_t i = 0; i < src->noutputs; i++) {
		ir_ref o = src->outputs[i];
		ir_ref v = value(p, o, e);
		if (v == IR_NONE)
			return e->code ? e->code : sn_errf(e, SN_EINTERNAL, "precision: output %u has no value", i);
		ir_dtype want = src->nodes[o].dtype;
		if (g->nodes[v].dtype == want)
			continue;
		ir_ref c = add_cast(g, v, want, e);
		if (c == IR_NONE)
			return e->code;
		const char *name = g->nodes[v].name;
		if (name && src->nodes[o].name && strcmp(name, src->nodes[o].name) == 0) {
			ir_set_name(g, v, NULL);
			if (ir_set_name(g, c, name) != SN_OK ||
			    name_derived(p, v, name, low_suffix(p), e) != SN_OK)
				return sn_errf(e, SN_EINTERNAL, "out of memory");
		}
		p->r.map[o] = c;
	}
	return SN_OK;
}

/* Frees p's per-node arrays (not p->r). */
static void prec_free(prec *p)
{
	free(p->keep);
	free(p->wide);
	free(p->w8);
	free(p->lowv);
}

int pass_precision_run(ir_graph **gp, pass_ctx *ctx, sn_err *e)
{
	pass_precision pr = ctx ? ctx->precision : PASS_FP32;
	switch (pr) {
	case PASS_FP32:
	case PASS_TF32:
		return SN_OK;
	case PASS_FP8:
		if (ctx->sm > 0 && ctx->sm < 89)
			return sn_errf(e, SN_EUSAGE, "fp8 needs sm_89 or newer (target sm_%d)", ctx->sm);
		break;
	case PASS_BF16:
	case PASS_FP16:
		break;
	default:
		return sn_errf(e, SN_EUSAGE, "precision: unknown precision %d", (int)pr);
	}
	const ir_graph *src = *gp;
	prec p = {.ws = ctx->ws, .low = pr == PASS_FP16 ? IR_F16 : IR_BF16, .fp8 = pr == PASS_FP8};
	size_t nn = src->nnodes ? src->nnodes : 1;
	p.keep = calloc(nn, sizeof *p.keep);
	p.wide = calloc(nn, sizeof *p.wide);
	p.w8 = malloc(nn * sizeof *p.w8);
	p.lowv = malloc(nn * sizeof *p.lowv);
	if (!p.keep || !p.wide || !p.w8 || !p.lowv) {
		prec_free(&p);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	for (uint32_t i = 0; i < src->nnodes; i++)
		p.w8[i] = p.lowv[i] = IR_NONE;
	mark_keep(src, p.keep);
	if (mark_wide(src, p.wide, p.keep) != SN_OK) {
		prec_free(&p);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	if (rw_begin(&p.r, src, e) != SN_OK) {
		prec_free(&p);
		return e->code;
	}
	int rc = SN_OK;
	for (uint32_t i = 0; i < src->nnodes && rc == SN_OK; i++) {
		if (rebuild(&p, i, e) == IR_NONE && e->code)
			rc = e->code;
	}
	if (rc == SN_OK)
		rc = cast_outputs(&p, e);
	prec_free(&p);
	if (rc != SN_OK) {
		rw_abort(&p.r);
		return rc;
	}
	ir_graph *out = rw_finish(&p.r, e);
	if (!out)
		return e->code ? e->code : sn_errf(e, SN_EINTERNAL, "precision: rebuilding the graph failed");
	ir_graph_free(*gp);
	*gp = out;
	return SN_OK;
}
