/* cg_fuse.c: kernels for fusion groups (passes/fuse.h).
 *
 * The element emitter writes, for one element of a group's root, the
 * statements that compute it: every member is an expression evaluated at
 * an index vector (one C expression per dim), memoized per (node, index)
 * so a value used twice at the same place is computed once. Pointwise
 * nodes broadcast their operands' indices; index-only nodes (transpose,
 * expand, slice, split, reshape and friends) only rewrite the index, so
 * they cost no memory traffic; free nodes (iota, scalar consts and what is
 * computed from them alone, such as a causal mask) are computed where they
 * are used. Values outside the group are loaded from their buffers.
 *
 * Every value is rounded to its node's dtype as the unfused kernel would
 * store it (f16/bf16/fp8 and narrow integers go through their store and
 * load), so a fused kernel computes bit for bit what the unfused chain
 * does. The same emitter gives a pointwise group its own kernel (a
 * grid-stride loop over the root's elements), a convolution its epilogue
 * (sn_epi) and a norm its prologue (sn_pro). */
#include "codegen/cg_render.h"
#include "passes/fuse.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IXCAP 640
#define BLOCK 256
#define MAX_GRID 8192
#define ROW_CACHED 2  /* loads a row group keeps in registers */
#define ROW_VPT 16    /* values per thread a row group keeps, at most */

typedef struct ix {
	int rank;
	char d[IR_MAX_RANK][IXCAP];
} ix;

typedef struct memo {
	char *key;
	char var[96];
} memo;

typedef struct em {
	const ir_graph *g;
	const fu_plan *fp;
	uint32_t gid;
	ir_ref core;   /* its value is `v` at the root's own index (epilogues) */
	sn_buf hdr;    /* helper functions */
	sn_buf body;   /* the statements */
	const char *ind;
	memo *m;
	uint32_t nm, capm;
	ir_ref loads[CG_MAX_BUFS];
	uint32_t nloads, max_loads;
	char lp;       /* load parameters' letter */
	const ix *rix; /* the root's own index and its linear form: a load of */
	const ir_shape *rshape; /* a value shaped like the root at that index */
	const char *rlin;       /* reads at rlin, no arithmetic */
	uint32_t ntmp;
	/* row groups, a row held in registers: a load at the root's own index
	 * reads c<k>[c] (load k's values of this thread, filled once), for at
	 * most ROW_CACHED loads */
	bool cache;
	uint8_t cached[CG_MAX_BUFS];
	int64_t rows; /* row groups: R; a member of R elements is the row's value
		       * at any index, so it is read at its one index (rix's) */
	sn_err *e;
} em;

static void em_free(em *m)
{
	for (uint32_t i = 0; i < m->nm; i++)
		free(m->m[i].key);
	free(m->m);
	sn_buf_free(&m->hdr);
	sn_buf_free(&m->body);
}

static bool same_shape_(const ir_shape *a, const ir_shape *b)
{
	if (a->rank != b->rank)
		return false;
	for (int d = 0; d < a->rank; d++)
		if (a->d[d] != b->d[d])
			return false;
	return true;
}

static bool is_scalar_const(const ir_node *n)
{
	return n->op == IR_OP_const && ir_numel(&n->shape) == 1 && n->data;
}

static const char *vtype(ir_dtype t)
{
	return ir_dtype_is_float(t) ? "float" : "long long";
}

static int put(char *out, size_t cap, em *m, const char *what, const char *s)
{
	size_t n = strlen(s);
	if (n >= cap)
		return sn_errf(m->e, SN_EINPUT, "fusion: %s is too long for a fused kernel", what);
	memcpy(out, s, n + 1);
	return SN_OK;
}

/* The literal of a scalar const. */
static void const_literal(const ir_node *n, char *out, size_t cap)
{
	if (ir_dtype_is_float(n->dtype)) {
		cg_flit(out, cap, ir_load(n->dtype, n->data, 0));
	} else if (n->dtype == IR_I64) {
		int64_t v;
		memcpy(&v, n->data, sizeof v);
		if (v == INT64_MIN)
			snprintf(out, cap, "(-9223372036854775807LL - 1)");
		else
			snprintf(out, cap, "%" PRId64 "LL", v);
	} else {
		snprintf(out, cap, "%lldLL", (long long)ir_load(n->dtype, n->data, 0));
	}
}

static char *memo_key(ir_ref r, const ix *x)
{
	sn_buf k = {0};
	sn_buf_printf(&k, "%u|", r);
	for (int d = 0; d < x->rank; d++)
		sn_buf_printf(&k, "%s,", x->d[d]);
	if (k.oom) {
		sn_buf_free(&k);
		return NULL;
	}
	return k.s;
}

static const char *memo_find(const em *m, const char *key)
{
	for (uint32_t i = 0; i < m->nm; i++)
		if (!strcmp(m->m[i].key, key))
			return m->m[i].var;
	return NULL;
}

static int memo_add(em *m, char *key, const char *var)
{
	if (m->nm == m->capm) {
		uint32_t cap = m->capm ? 2 * m->capm : 32;
		memo *nm = realloc(m->m, cap * sizeof *nm);
		if (!nm) {
			free(key);
			return sn_errf(m->e, SN_EINTERNAL, "fusion: out of memory");
		}
		m->m = nm;
		m->capm = cap;
	}
	if (strlen(var) >= sizeof m->m[m->nm].var) {
		free(key);
		return sn_errf(m->e, SN_EINTERNAL, "fusion: value text too long");
	}
	m->m[m->nm].key = key;
	memcpy(m->m[m->nm].var, var, strlen(var) + 1);
	m->nm++;
	return SN_OK;
}

/* Operand index for an operand of shape s broadcast against x. */
static void bcast_ix(const ix *x, const ir_shape *s, ix *o)
{
	o->rank = s->rank;
	for (int od = 0; od < s->rank; od++) {
		int d = od + (x->rank - s->rank);
		snprintf(o->d[od], IXCAP, "%s", s->d[od] == 1 || d < 0 ? "0" : x->d[d]);
	}
}

/* Rounds variable var of dtype t as a store and a load would. */
static void round_to(em *m, ir_dtype t, const char *var)
{
	if (t == IR_F32 || t == IR_I64)
		return;
	cg_emit_dtype_helpers(&m->hdr, t);
	const char *n = ir_dtype_name(t);
	sn_buf_printf(&m->body, "%s{ %s r_; st_%s(&r_, 0, %s); %s = ld_%s(&r_, 0); }\n", m->ind, cg_ctype(t), n, var,
		      var, n);
}

static int value(em *m, ir_ref r, const ix *x, char *out, size_t cap);

/* An index expression into dst (IXCAP bytes); an error when it does not fit. */
static int ixf(em *m, char *dst, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int ixf(em *m, char *dst, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(dst, IXCAP, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= IXCAP)
		return sn_errf(m->e, SN_EINPUT, "fusion: an index expression is too long for a fused kernel");
	return SN_OK;
}

/* The index of reshape-like node n's operand for n's index x. */
static int view_ix(em *m, const ir_node *n, const ix *x, ix *o)
{
	const ir_shape *os = &n->shape, *is = &m->g->nodes[n->in[0]].shape;
	o->rank = is->rank;
	/* the dims other than 1 match in order: map them one to one */
	int a = 0, b = 0;
	bool same = true;
	while (same) {
		while (a < os->rank && os->d[a] == 1)
			a++;
		while (b < is->rank && is->d[b] == 1)
			b++;
		if (a == os->rank || b == is->rank) {
			same = a == os->rank && b == is->rank;
			break;
		}
		same = os->d[a] == is->d[b];
		a++, b++;
	}
	if (same) {
		int k = 0;
		for (int d = 0; d < is->rank; d++) {
			if (is->d[d] == 1) {
				snprintf(o->d[d], IXCAP, "0");
				continue;
			}
			while (os->d[k] == 1)
				k++;
			snprintf(o->d[d], IXCAP, "%s", x->d[k++]);
		}
		return SN_OK;
	}
	/* otherwise through the linear index */
	char lin[16];
	snprintf(lin, sizeof lin, "l%u", m->ntmp++);
	sn_buf_printf(&m->body, "%slong %s = 0", m->ind, lin);
	int64_t st = 1;
	for (int d = os->rank - 1; d >= 0; d--) {
		if (os->d[d] != 1 && strcmp(x->d[d], "0"))
			sn_buf_printf(&m->body, " + (long)(%s) * %" PRId64 "L", x->d[d], st);
		st *= os->d[d];
	}
	sn_buf_puts(&m->body, ";\n");
	st = 1;
	for (int d = is->rank - 1; d >= 0; d--) {
		if (is->d[d] == 1)
			snprintf(o->d[d], IXCAP, "0");
		else if (st == 1)
			snprintf(o->d[d], IXCAP, "(%s %% %" PRId64 "L)", lin, is->d[d]);
		else
			snprintf(o->d[d], IXCAP, "(%s / %" PRId64 "L %% %" PRId64 "L)", lin, st, is->d[d]);
		st *= is->d[d];
	}
	return SN_OK;
}

static int load(em *m, ir_ref r, const ix *x, char *var)
{
	const ir_node *n = &m->g->nodes[r];
	uint32_t k = 0;
	while (k < m->nloads && m->loads[k] != r)
		k++;
	if (k == m->nloads) {
		if (m->nloads >= m->max_loads)
			return sn_errf(m->e, SN_EINTERNAL, "fusion: a fused kernel would read more than %u buffers",
				       m->max_loads);
		m->loads[m->nloads++] = r;
	}
	cg_emit_dtype_helpers(&m->hdr, n->dtype);
	snprintf(var, 24, "t%u", m->ntmp++);
	bool same = m->rix && m->rshape->rank == n->shape.rank && m->rix->rank == x->rank;
	for (int d = 0; same && d < n->shape.rank; d++)
		same = m->rshape->d[d] == n->shape.d[d] && !strcmp(m->rix->d[d], x->d[d]);
	uint32_t ncached = 0;
	for (uint32_t i = 0; i < CG_MAX_BUFS; i++)
		ncached += m->cached[i];
	if (same && m->cache && (m->cached[k] || ncached < ROW_CACHED)) {
		m->cached[k] = 1;
		sn_buf_printf(&m->body, "%s%s %s = c%u[c];\n", m->ind, vtype(n->dtype), var, k);
		return SN_OK;
	}
	if (same) {
		sn_buf_printf(&m->body, "%s%s %s = ld_%s(%c%u, %s);\n", m->ind, vtype(n->dtype), var,
			      ir_dtype_name(n->dtype), m->lp, k, m->rlin);
		return SN_OK;
	}
	sn_buf_printf(&m->body, "%s%s %s = ld_%s(%c%u, 0", m->ind, vtype(n->dtype), var, ir_dtype_name(n->dtype),
		      m->lp, k);
	int64_t st = 1;
	for (int d = n->shape.rank - 1; d >= 0; d--) {
		if (n->shape.d[d] != 1 && strcmp(x->d[d], "0"))
			sn_buf_printf(&m->body, " + (long)(%s) * %" PRId64 "L", x->d[d], st);
		st *= n->shape.d[d];
	}
	sn_buf_puts(&m->body, ");\n");
	return SN_OK;
}

static int compute_elem(em *m, ir_ref r, const ix *x, char *var)
{
	const ir_node *n = &m->g->nodes[r];
	char a[3][IXCAP];
	ix *ox = malloc(sizeof *ox);
	if (!ox)
		return sn_errf(m->e, SN_EINTERNAL, "fusion: out of memory");
	for (uint32_t k = 0; k < n->nin; k++) {
		bcast_ix(x, &m->g->nodes[n->in[k]].shape, ox);
		int rc = value(m, n->in[k], ox, a[k], sizeof a[k]);
		if (rc) {
			free(ox);
			return rc;
		}
	}
	free(ox);
	snprintf(var, 24, "t%u", m->ntmp++);
	const char *vt = vtype(n->dtype);
	if (n->op == IR_OP_where) {
		sn_buf_printf(&m->body, "%s%s %s = (%s) ? %s : %s;\n", m->ind, vt, var, a[0], a[1], a[2]);
		round_to(m, n->dtype, var);
		return SN_OK;
	}
	ir_dtype it = m->g->nodes[n->in[0]].dtype;
	bool fdom = ir_dtype_is_float(it);
	cg_emit_op_helpers(&m->hdr, n->op, fdom);
	if (n->op == IR_OP_cast) {
		ir_dtype ot = n->dtype;
		const char *lo, *hi;
		if (ir_dtype_is_float(ot))
			sn_buf_printf(&m->body, "%sfloat %s = (float)(%s);\n", m->ind, var, a[0]);
		else if (ot == IR_BOOL)
			sn_buf_printf(&m->body, "%slong long %s = (long long)(%s != 0);\n", m->ind, var, a[0]);
		else if (fdom && ot == IR_I64)
			sn_buf_printf(&m->body, "%slong long %s = sn_f2ll(%s);\n", m->ind, var, a[0]);
		else if (cg_int_range(ot, &lo, &hi))
			sn_buf_printf(&m->body, "%slong long %s = sn_clampll(%s%s%s, %s, %s);\n", m->ind, var,
				      fdom ? "sn_f2ll(" : "", a[0], fdom ? ")" : "", lo, hi);
		else
			sn_buf_printf(&m->body, "%slong long %s = %s;\n", m->ind, var, a[0]);
		round_to(m, ot, var);
		return SN_OK;
	}
	char expr[512];
	if ((fdom ? cg_float_expr(n, expr, sizeof expr) : cg_int_expr(n, expr, sizeof expr)) != SN_OK)
		return sn_errf(m->e, SN_EINPUT, "%s on %s is not supported by the CUDA backend", ir_ops[n->op].name,
			       ir_dtype_name(it));
	const char *xt = fdom ? "float" : "long long";
	sn_buf_printf(&m->body, "%s%s %s;\n%s{\n%s\tconst %s x = %s;\n", m->ind, vt, var, m->ind, m->ind, xt, a[0]);
	if (n->nin > 1)
		sn_buf_printf(&m->body, "%s\tconst %s y = %s;\n", m->ind, xt, a[1]);
	sn_buf_printf(&m->body, "%s\t%s = %s;\n%s}\n", m->ind, var, expr, m->ind);
	round_to(m, n->dtype, var);
	return SN_OK;
}

/* The value of node r at index x, as an expression (a variable or a
 * literal) written to out. */
static int value(em *m, ir_ref r, const ix *x, char *out, size_t cap)
{
	const ir_graph *g = m->g;
	const ir_node *n = &g->nodes[r];
	if (r == m->core)
		return put(out, cap, m, "a value", "v");
	if (is_scalar_const(n)) {
		char lit[64];
		const_literal(n, lit, sizeof lit);
		return put(out, cap, m, "a literal", lit);
	}
	ix *cx = NULL;
	if (m->rows && m->fp->group_of[r] == m->gid && ir_numel(&n->shape) == m->rows) {
		if (!(cx = malloc(sizeof *cx)))
			return sn_errf(m->e, SN_EINTERNAL, "fusion: out of memory");
		bcast_ix(m->rix, &n->shape, cx);
		x = cx;
	}
	char *key = memo_key(r, x);
	if (!key) {
		free(cx);
		return sn_errf(m->e, SN_EINTERNAL, "fusion: out of memory");
	}
	const char *hit = memo_find(m, key);
	if (hit) {
		free(key);
		free(cx);
		return put(out, cap, m, "a value", hit);
	}
	bool here = m->fp->group_of[r] == m->gid || m->fp->free_[r];
	char var[IXCAP];
	int rc = SN_OK;
	ix *ox = NULL;
	if (!here) {
		if (!m->fp->stored[r]) {
			rc = sn_errf(m->e, SN_EINTERNAL, "fusion: node %u is neither stored nor computed", r);
			goto done;
		}
		rc = load(m, r, x, var);
		goto done;
	}
	ir_kind kind = ir_ops[n->op].kind;
	if (kind == IR_K_UNARY || kind == IR_K_BINARY || kind == IR_K_TERNARY) {
		rc = compute_elem(m, r, x, var);
		goto done;
	}
	if (n->op == IR_OP_iota) {
		int a = ir_axis(n->attrs->axis, n->shape.rank);
		if (a < 0) {
			rc = sn_errf(m->e, SN_EINPUT, "iota: axis out of range");
			goto done;
		}
		snprintf(var, 24, "t%u", m->ntmp++);
		sn_buf_printf(&m->body, "%s%s %s = (%s)(%s);\n", m->ind, vtype(n->dtype), var, vtype(n->dtype),
			      x->d[a]);
		round_to(m, n->dtype, var);
		goto done;
	}
	/* index-only: the operand at a rewritten index */
	ox = malloc(sizeof *ox);
	if (!ox) {
		rc = sn_errf(m->e, SN_EINTERNAL, "fusion: out of memory");
		goto done;
	}
	const ir_shape *is = &g->nodes[n->in[0]].shape;
	const ir_attrs *at = n->attrs;
	*ox = *x;
	ox->rank = is->rank;
	switch (n->op) {
	case IR_OP_transpose:
		for (int d = 0; d < at->perm.n && d < x->rank; d++)
			snprintf(ox->d[at->perm.v[d]], IXCAP, "%s", x->d[d]);
		break;
	case IR_OP_expand: bcast_ix(x, is, ox); break;
	case IR_OP_split: {
		int a = ir_axis(at->axis, is->rank);
		int64_t start = 0;
		for (int64_t i = 0; i < at->index && i < at->sizes.n; i++)
			start += at->sizes.v[i];
		if (a >= 0 && start)
			rc = ixf(m, ox->d[a], "(%s + %" PRId64 "L)", x->d[a], start);
		break;
	}
	case IR_OP_slice:
		for (int i = 0; i < at->starts.n; i++) {
			int a = ir_axis(at->axes.n ? at->axes.v[i] : i, is->rank);
			int64_t step = at->steps.n ? at->steps.v[i] : 1, first = 0;
			if (a < 0 || step == 0) {
				rc = sn_errf(m->e, SN_EINPUT, "slice: bad axis or zero step");
				goto done;
			}
			ir_slice_axis(is->d[a], at->starts.v[i], at->ends.v[i], step, &first);
			if ((step != 1 || first) &&
			    (rc = ixf(m, ox->d[a], "(%s * %" PRId64 "L + %" PRId64 "L)", x->d[a], step, first)))
				goto done;
		}
		break;
	default:
		if (!fu_is_view(n)) {
			rc = sn_errf(m->e, SN_EINTERNAL, "fusion: %s cannot be fused", ir_ops[n->op].name);
			goto done;
		}
		rc = view_ix(m, n, x, ox);
		break;
	}
	if (!rc)
		rc = value(m, n->in[0], ox, var, sizeof var);
done:
	free(ox);
	free(cx);
	if (!rc)
		rc = memo_add(m, key, var);
	else
		free(key);
	return rc ? rc : put(out, cap, m, "a value", var);
}

/* The index variables x0.. of a linear index `lin` over shape s (size-1
 * dims are "0"), declared in the body. */
static void decompose(em *m, const char *lin, const ir_shape *s, ix *x)
{
	x->rank = s->rank;
	int64_t st = 1;
	int first = -1;
	for (int d = 0; d < s->rank && first < 0; d++)
		if (s->d[d] != 1)
			first = d;
	for (int d = s->rank - 1; d >= 0; d--) {
		if (s->d[d] == 1) {
			snprintf(x->d[d], IXCAP, "0");
			continue;
		}
		snprintf(x->d[d], IXCAP, "x%d", d);
		if (d == first && st == 1)
			sn_buf_printf(&m->body, "%slong x%d = %s;\n", m->ind, d, lin);
		else if (d == first)
			sn_buf_printf(&m->body, "%slong x%d = %s / %" PRId64 "L;\n", m->ind, d, lin, st);
		else if (st == 1)
			sn_buf_printf(&m->body, "%slong x%d = %s %% %" PRId64 "L;\n", m->ind, d, lin, s->d[d]);
		else
			sn_buf_printf(&m->body, "%slong x%d = %s / %" PRId64 "L %% %" PRId64 "L;\n", m->ind, d, lin, st,
				      s->d[d]);
		st *= s->d[d];
	}
}

/* The spec comment of a group: its members, their operands (tK: member K,
 * "in": loaded, "free": computed from indices) and types. */
static void group_spec(sn_buf *b, const ir_graph *g, const fu_plan *fp, uint32_t gid, const char *what,
		       const char *config)
{
	const fu_group *gr = &fp->groups[gid];
	char ty[160];
	sn_buf_printf(b, "/* sinter kernel: fused %s of %u nodes\n", what, gr->n);
	for (uint32_t k = 0; k < gr->n; k++) {
		ir_ref r = fp->members[gr->first + k];
		const ir_node *n = &g->nodes[r];
		ir_type_str(g, n->dtype, &n->shape, ty, sizeof ty);
		sn_buf_printf(b, " * t%u = %s(", k, ir_ops[n->op].name);
		for (uint32_t i = 0; i < n->nin; i++) {
			ir_ref q = n->in[i];
			uint32_t at = gr->n;
			for (uint32_t j = 0; j < gr->n; j++)
				if (fp->members[gr->first + j] == q)
					at = j;
			char xt[160];
			ir_type_str(g, g->nodes[q].dtype, &g->nodes[q].shape, xt, sizeof xt);
			if (at < gr->n)
				sn_buf_printf(b, "%st%u", i ? ", " : "", at);
			else
				sn_buf_printf(b, "%s%s %s", i ? ", " : "", fp->free_[q] ? "free" : "in", xt);
		}
		sn_buf_printf(b, ") -> %s", ty);
		const ir_op_info *oi = &ir_ops[n->op];
		for (int id = 0; id < IR_NATTRS; id++)
			if (oi->attrs & (UINT64_C(1) << id))
				ir_print_attr(b, g, n->attrs, (ir_attr_id)id);
		sn_buf_puts(b, "\n");
	}
	sn_buf_printf(b, " * config: %s */\n", config);
}

/* Free nodes a group computes (directly or through members), so a group
 * of one node still needs the emitter. */
static bool reads_free(const ir_graph *g, const fu_plan *fp, uint32_t gid)
{
	const fu_group *gr = &fp->groups[gid];
	for (uint32_t k = 0; k < gr->n; k++) {
		const ir_node *n = &g->nodes[fp->members[gr->first + k]];
		for (uint32_t i = 0; i < n->nin; i++)
			if (fp->free_[n->in[i]] && !is_scalar_const(&g->nodes[n->in[i]]))
				return true;
	}
	return false;
}

bool cg_group_needs_emitter(const ir_graph *g, const fu_plan *fp, uint32_t gid)
{
	const fu_group *gr = &fp->groups[gid];
	return gr->n > 1 || fp->free_[gr->root] || reads_free(g, fp, gid);
}

int cg_render_pointwise_group(const ir_graph *g, const fu_plan *fp, uint32_t gid, const cg_target *t,
			      const cg_config *want, cg_step *st, sn_err *e)
{
	const fu_group *gr = &fp->groups[gid];
	const ir_node *root = &g->nodes[gr->root];
	int block = BLOCK;
	if (want && (want->vec > 1 || want->tile_m || want->tile_n || want->tile_k || want->stages || want->split_k))
		return sn_errf(e, SN_EUSAGE, "fused kernel: only block may be asked for");
	if (want && want->block) {
		if (want->block < 32 || want->block > 1024 || want->block % 32)
			return sn_errf(e, SN_EUSAGE, "fused kernel: block %d is not a multiple of 32 in [32, 1024]",
				       (int)want->block);
		block = want->block;
	}
	em m = {.g = g, .fp = fp, .gid = gid, .core = IR_NONE, .ind = "\t\t", .max_loads = CG_MAX_BUFS - 1,
		.lp = 'p', .e = e};
	int64_t total = ir_numel(&root->shape);
	ix *x = malloc(sizeof *x);
	char v[IXCAP];
	int rc = x ? SN_OK : sn_errf(e, SN_EINTERNAL, "fusion: out of memory");
	if (!rc) {
		decompose(&m, "i", &root->shape, x);
		m.rix = x, m.rshape = &root->shape, m.rlin = "i";
		rc = value(&m, gr->root, x, v, sizeof v);
	}
	free(x);
	cg_emit_dtype_helpers(&m.hdr, root->dtype);
	if (!rc && (m.hdr.oom || m.body.oom))
		rc = sn_errf(e, SN_EINTERNAL, "fusion: out of memory");
	if (rc) {
		em_free(&m);
		return rc;
	}
	sn_buf b = {0};
	char config[64];
	snprintf(config, sizeof config, "block=%d", block);
	group_spec(&b, g, fp, gid, "pointwise", config);
	if (m.hdr.s)
		sn_buf_puts(&b, m.hdr.s);
	sn_buf_printf(&b, "extern \"C\" __global__ void __launch_bounds__(%d) " CG_NAME "(", block);
	for (uint32_t k = 0; k < m.nloads; k++)
		sn_buf_printf(&b, "const %s *__restrict__ p%u, ", cg_ctype(g->nodes[m.loads[k]].dtype), k);
	sn_buf_printf(&b, "%s *__restrict__ out)\n{\n", cg_ctype(root->dtype));
	sn_buf_printf(&b, "\tfor (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < %" PRId64 "L; "
			  "i += (long)gridDim.x * blockDim.x) {\n",
		      total);
	if (m.body.s)
		sn_buf_puts(&b, m.body.s);
	sn_buf_printf(&b, "\t\tst_%s(out, i, %s);\n\t}\n}\n", ir_dtype_name(root->dtype), v);
	st->kind = CG_STEP_KERNEL;
	cg_kernel *k = &st->k;
	int64_t blocks = (total + block - 1) / block;
	k->grid[0] = (unsigned)(blocks < 1 ? 1 : blocks > MAX_GRID ? MAX_GRID : blocks);
	k->grid[1] = k->grid[2] = 1;
	k->block[0] = (unsigned)block;
	k->block[1] = k->block[2] = 1;
	k->smem = 0;
	k->cfg = (cg_config){.block = block};
	k->nbufs = 0;
	for (uint32_t i = 0; i < m.nloads; i++)
		k->bufs[k->nbufs++] = m.loads[i];
	k->bufs[k->nbufs++] = gr->root;
	em_free(&m);
	(void)t;
	return cg_finish(k, "fused", &b, e);
}

void cg_epilogue_free(cg_epilogue *x)
{
	if (!x)
		return;
	free(x->fn);
	free(x->params);
	free(x->args);
	memset(x, 0, sizeof *x);
}

/* fn/params/args of an emitted function. */
static int finish_fn(em *m, const char *head, const char *ret, cg_epilogue *x)
{
	sn_buf fn = {0}, params = {0}, args = {0};
	if (m->hdr.oom || m->body.oom)
		return sn_errf(m->e, SN_EINTERNAL, "fusion: out of memory");
	if (m->hdr.s)
		sn_buf_puts(&fn, m->hdr.s);
	for (uint32_t k = 0; k < m->nloads; k++) {
		ir_ref r = m->loads[k];
		sn_buf_printf(&params, ", const %s *__restrict__ %c%u", cg_ctype(m->g->nodes[r].dtype), m->lp, k);
		sn_buf_printf(&args, ", %c%u", m->lp, k);
		x->ex[k] = r;
	}
	x->nex = m->nloads;
	sn_buf_printf(&fn, "__device__ __forceinline__ float %s%s)\n{\n", head, params.s ? params.s : "");
	if (m->body.s)
		sn_buf_puts(&fn, m->body.s);
	sn_buf_printf(&fn, "\treturn (float)(%s);\n}\n", ret);
	bool oom = fn.oom || params.oom || args.oom;
	x->fn = fn.s ? fn.s : strdup("");
	x->params = params.s ? params.s : strdup("");
	x->args = args.s ? args.s : strdup("");
	if (oom || !x->fn || !x->params || !x->args) {
		cg_epilogue_free(x);
		return sn_errf(m->e, SN_EINTERNAL, "fusion: out of memory");
	}
	return SN_OK;
}

int cg_make_epilogue(const ir_graph *g, const fu_plan *fp, uint32_t gid, cg_epilogue *x, sn_err *e)
{
	const fu_group *gr = &fp->groups[gid];
	const ir_node *root = &g->nodes[gr->root];
	memset(x, 0, sizeof *x);
	em m = {.g = g, .fp = fp, .gid = gid, .core = gr->core, .ind = "\t", .max_loads = CG_MAX_EPI, .lp = 'e',
		.e = e};
	ix *ix_ = malloc(sizeof *ix_);
	char v[IXCAP];
	int rc = ix_ ? SN_OK : sn_errf(e, SN_EINTERNAL, "fusion: out of memory");
	if (!rc) {
		decompose(&m, "i", &root->shape, ix_);
		m.rix = ix_, m.rshape = &root->shape, m.rlin = "i";
		rc = value(&m, gr->root, ix_, v, sizeof v);
	}
	free(ix_);
	if (!rc)
		rc = finish_fn(&m, "sn_epi(float v, long i", v, x);
	x->out = gr->root;
	x->dtype = root->dtype;
	em_free(&m);
	return rc;
}

int cg_make_prologue(const ir_graph *g, const fu_plan *fp, uint32_t gid, cg_epilogue *x, sn_err *e)
{
	const fu_group *gr = &fp->groups[gid];
	ir_ref in = g->nodes[gr->core].in[0];
	const ir_node *xn = &g->nodes[in];
	memset(x, 0, sizeof *x);
	/* the core is a member but not part of its prologue */
	em m = {.g = g, .fp = fp, .gid = gid, .core = IR_NONE, .ind = "\t", .max_loads = CG_MAX_EPI, .lp = 'e',
		.e = e};
	ix *ix_ = malloc(sizeof *ix_);
	char v[IXCAP];
	int rc = ix_ ? SN_OK : sn_errf(e, SN_EINTERNAL, "fusion: out of memory");
	if (!rc) {
		decompose(&m, "i", &xn->shape, ix_);
		m.rix = ix_, m.rshape = &xn->shape, m.rlin = "i";
		rc = value(&m, in, ix_, v, sizeof v);
	}
	free(ix_);
	if (!rc)
		rc = finish_fn(&m, "sn_pro(long i", v, x);
	x->out = in;
	x->dtype = xn->dtype;
	em_free(&m);
	return rc;
}

/* ---- row groups (FU_ROWS) ----
 * One kernel for reductions over the same trailing axes of a shape S (R
 * rows of L) and the pointwise nodes of their iteration space
 * (passes/fuse.h). A row goes to G threads (a warp, or a whole block for
 * long rows: cg_row_groups). Each reduction, in node order (so a reduction
 * that reads an earlier one's value comes after it), is a pass over the
 * row: its operand computed by the element emitter at each of the row's
 * indices, combined per thread, then over the group. A per-row member is
 * computed once per row, as soon as the reductions it reads are done; a
 * root shaped as S is written by a last pass, a per-row root by lane 0.
 * When the row fits (at most ROW_VPT values per thread) the loads at the
 * row's own index are read once into registers ("persistent"); otherwise
 * every pass reads them again ("looped": the row stays in L2). */

bool cg_rows_takes(const ir_graph *g, ir_ref r)
{
	const ir_node *n = &g->nodes[r];
	bool red = n->op == IR_OP_reduce_sum || n->op == IR_OP_reduce_mean || n->op == IR_OP_reduce_max ||
		   n->op == IR_OP_reduce_min;
	return red && n->nin == 1 && ir_dtype_is_float(g->nodes[n->in[0]].dtype) && n->attrs->keepdims;
}

/* The index at which S's element (row, i) is read: r<d> for the row dims
 * (declared by the kernel), i taken apart over the reduced dims [a, rank);
 * with full false, the reduced dims are 0 (a per-row value's index, before
 * broadcasting to its shape). */
static void row_index(const ir_shape *S, int a, bool full, ix *x)
{
	x->rank = S->rank;
	int nz = 0;
	for (int d = a; d < S->rank; d++)
		nz += S->d[d] != 1;
	int64_t st = 1;
	for (int d = S->rank - 1; d >= 0; d--) {
		if (S->d[d] == 1 || (d >= a && !full)) {
			snprintf(x->d[d], IXCAP, "0");
		} else if (d < a) {
			snprintf(x->d[d], IXCAP, "r%d", d);
		} else if (nz == 1) {
			snprintf(x->d[d], IXCAP, "i");
		} else {
			bool outer = true;
			for (int k = a; k < d; k++)
				outer &= S->d[k] == 1;
			if (outer)
				snprintf(x->d[d], IXCAP, "(i / %" PRId64 "L)", st);
			else if (st == 1)
				snprintf(x->d[d], IXCAP, "(i %% %" PRId64 "L)", S->d[d]);
			else
				snprintf(x->d[d], IXCAP, "(i / %" PRId64 "L %% %" PRId64 "L)", st, S->d[d]);
		}
		if (d >= a)
			st *= S->d[d];
	}
}

static void row_loop_head(sn_buf *b, bool persistent, int vpt, int gs, int64_t len)
{
	if (persistent)
		sn_buf_printf(b, "#pragma unroll\n\tfor (int c = 0; c < %d; c++) {\n"
				 "\t\tlong i = lane + (long)c * %d;\n\t\tif (i >= %" PRId64 "L)\n\t\t\tbreak;\n",
			      vpt, gs, len);
	else
		sn_buf_printf(b, "\tfor (long i = lane; i < %" PRId64 "L; i += %d) {\n", len, gs);
}

/* Drops the memo entries made since n (values declared inside a loop). */
static void memo_cut(em *m, uint32_t n)
{
	while (m->nm > n)
		free(m->m[--m->nm].key);
}

int cg_render_row_group(const ir_graph *g, const fu_plan *fp, uint32_t gid, const cg_config *want, cg_step *st,
			sn_err *e)
{
	if (want)
		return sn_errf(e, SN_EUSAGE, "only the default config is built for this kernel family yet");
	const fu_group *gr = &fp->groups[gid];
	const ir_node *root = &g->nodes[gr->root], *c0 = &g->nodes[gr->core];
	const ir_shape *S = &g->nodes[c0->in[0]].shape;
	if (gr->n > 64 || c0->attrs->axes.n > S->rank)
		return sn_errf(e, SN_EINTERNAL, "fusion: row group %u is malformed", gid);
	int a = S->rank;
	if (c0->attrs->axes.n == 0)
		a = 0;
	for (int i = 0; i < c0->attrs->axes.n; i++) {
		int d = ir_axis(c0->attrs->axes.v[i], S->rank);
		a = d >= 0 && d < a ? d : a;
	}
	int64_t R = 1, L = 1;
	for (int d = 0; d < S->rank; d++)
		*(d < a ? &R : &L) *= S->d[d];
	int gs, gpb;
	cg_row_groups(L, &gs, &gpb);
	int64_t vpt = (L + gs - 1) / gs, blocks = (R + gpb - 1) / gpb;
	if (blocks > 0x7fffffff)
		return sn_errf(e, SN_EINPUT, "fusion: %lld rows are too many for one launch", (long long)R);
	bool persistent = vpt <= ROW_VPT;

	/* members in order; the reductions among them and what each member
	 * reads of them (need: a bit per reduction, through members) */
	const ir_ref *mem = fp->members + gr->first;
	uint32_t nm = gr->n;
	uint64_t need[64];
	int red_of[64];
	uint32_t nred = fu_rows_needs(g, fp, gr, need, red_of);

	em m = {.g = g, .fp = fp, .gid = gid, .core = IR_NONE, .ind = "\t", .max_loads = CG_MAX_BUFS - 1,
		.lp = 'p', .cache = persistent, .rows = R, .e = e};
	ix *fx = malloc(sizeof *fx), *px = malloc(sizeof *px);
	char v[IXCAP], rlin[64], var[24];
	bool done_[64] = {0};
	bool used[3] = {0};
	int rc = fx && px ? SN_OK : sn_errf(e, SN_EINTERNAL, "fusion: out of memory");
	if (!rc) {
		row_index(S, a, true, fx);
		snprintf(rlin, sizeof rlin, "(row * %" PRId64 "L + i)", L);
		m.rix = fx, m.rshape = S, m.rlin = rlin;
	}
	/* stage s: the per-row members that read reductions < s only, then
	 * reduction s's pass */
	for (uint32_t s = 0; s <= nred && !rc; s++) {
		uint64_t have = s >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << s) - 1;
		for (uint32_t k = 0; k < nm && !rc; k++) {
			const ir_node *n = &g->nodes[mem[k]];
			if (done_[k] || red_of[k] >= 0 || ir_numel(&n->shape) != R || (need[k] & ~have))
				continue;
			done_[k] = true;
			bcast_ix(fx, &n->shape, px);
			rc = value(&m, mem[k], px, v, sizeof v);
		}
		if (s == nred || rc)
			break;
		uint32_t k = 0;
		while (red_of[k] != (int)s)
			k++;
		const ir_node *rn = &g->nodes[mem[k]];
		cg_red kind = rn->op == IR_OP_reduce_max ? CG_RED_MAX : rn->op == IR_OP_reduce_min ? CG_RED_MIN : CG_RED_SUM;
		/* a sum accumulates in double (s<s>), as the reference's: a float
		 * sum of a long row drifts; its result is rounded to the float
		 * a<s> once (a mean after the division) */
		static const char *const fname[] = {"grp_sum", "grp_max", "grp_min"};
		static const char *const init[] = {"0.0", "-__int_as_float(0x7f800000)", "__int_as_float(0x7f800000)"};
		static const char *const comb[] = {"%s += (double)(%s);\n", "%s = (%s > %s || %s != %s) ? %s : %s;\n",
						   "%s = (%s < %s || %s != %s) ? %s : %s;\n"};
		used[kind] = true;
		char acc[24];
		snprintf(var, sizeof var, "a%u", s);
		snprintf(acc, sizeof acc, kind == CG_RED_SUM ? "s%u" : "a%u", s);
		sn_buf_printf(&m.body, "\t%s %s = %s;\n", kind == CG_RED_SUM ? "double" : "float", acc, init[kind]);
		row_loop_head(&m.body, persistent, (int)vpt, gs, L);
		uint32_t mark = m.nm;
		m.ind = "\t\t";
		rc = value(&m, rn->in[0], fx, v, sizeof v);
		if (!rc) {
			sn_buf_puts(&m.body, "\t\t");
			if (kind == CG_RED_SUM)
				sn_buf_printf(&m.body, comb[0], acc, v);
			else
				sn_buf_printf(&m.body, comb[kind], var, v, var, v, v, v, var);
		}
		sn_buf_puts(&m.body, "\t}\n");
		m.ind = "\t";
		memo_cut(&m, mark);
		if (kind == CG_RED_SUM) {
			char div[40] = "";
			if (rn->op == IR_OP_reduce_mean)
				snprintf(div, sizeof div, " / %" PRId64 ".0", L);
			sn_buf_printf(&m.body, "\tfloat %s = (float)(%s(%s)%s);\n", var, fname[kind], acc, div);
		} else {
			sn_buf_printf(&m.body, "\t%s = %s(%s);\n", var, fname[kind], var);
		}
		round_to(&m, rn->dtype, var);
		bcast_ix(fx, &rn->shape, px);
		char *key = rc ? NULL : memo_key(mem[k], px);
		if (!rc)
			rc = key ? memo_add(&m, key, var) : sn_errf(e, SN_EINTERNAL, "fusion: out of memory");
	}
	/* the root: a last pass, or lane 0's store */
	bool full = ir_numel(&root->shape) != R;
	if (!rc && full) {
		row_loop_head(&m.body, persistent, (int)vpt, gs, L);
		m.ind = "\t\t";
		if (same_shape_(&root->shape, S)) {
			rc = value(&m, gr->root, fx, v, sizeof v);
		} else { /* a reshape of S: its own index of element row * L + i */
			decompose(&m, rlin, &root->shape, px);
			rc = value(&m, gr->root, px, v, sizeof v);
		}
		if (!rc)
			sn_buf_printf(&m.body, "\t\tst_%s(out, %s, %s);\n\t}\n", ir_dtype_name(root->dtype), rlin, v);
	} else if (!rc) {
		bcast_ix(fx, &root->shape, px);
		rc = value(&m, gr->root, px, v, sizeof v);
		if (!rc)
			sn_buf_printf(&m.body, "\tif (lane == 0)\n\t\tst_%s(out, row, %s);\n", ir_dtype_name(root->dtype), v);
	}
	free(fx);
	free(px);
	cg_emit_dtype_helpers(&m.hdr, root->dtype);
	if (!rc && (m.hdr.oom || m.body.oom))
		rc = sn_errf(e, SN_EINTERNAL, "fusion: out of memory");
	if (rc) {
		em_free(&m);
		return rc;
	}
	sn_buf b = {0};
	char config[200];
	snprintf(config, sizeof config, "%" PRId64 " rows of %" PRId64 "; %d threads per row, %d rows per block; %s",
		 R, L, gs, gpb, persistent ? "row held in registers" : "row re-read per pass");
	group_spec(&b, g, fp, gid, "row reduction", config);
	if (m.hdr.s)
		sn_buf_puts(&b, m.hdr.s);
	static const char *const gname[] = {"grp_sum", "grp_max", "grp_min"};
	for (int k = 0; k < 3; k++)
		if (used[k])
			cg_emit_group_fn(&b, gname[k], gs, (cg_red)k);
	sn_buf_printf(&b, "extern \"C\" __global__ void __launch_bounds__(%d) " CG_NAME "(", gs * gpb);
	for (uint32_t k = 0; k < m.nloads; k++)
		sn_buf_printf(&b, "const %s *__restrict__ p%u, ", cg_ctype(g->nodes[m.loads[k]].dtype), k);
	sn_buf_printf(&b, "%s *__restrict__ out)\n{\n", cg_ctype(root->dtype));
	sn_buf_printf(&b, "\tlong row = (long)blockIdx.x * %d + threadIdx.x / %d;\n"
			  "\tint lane = threadIdx.x %% %d;\n"
			  "\tif (row >= %" PRId64 "L)\n\t\treturn; /* uniform per group */\n",
		      gpb, gs, gs, R);
	/* the row dims */
	int64_t rst = 1;
	int first = -1;
	for (int d = 0; d < a && first < 0; d++)
		if (S->d[d] != 1)
			first = d;
	for (int d = a - 1; d >= 0; d--) {
		if (S->d[d] == 1)
			continue;
		if (d == first && rst == 1)
			sn_buf_printf(&b, "\tlong r%d = row;\n", d);
		else if (d == first)
			sn_buf_printf(&b, "\tlong r%d = row / %" PRId64 "L;\n", d, rst);
		else if (rst == 1)
			sn_buf_printf(&b, "\tlong r%d = row %% %" PRId64 "L;\n", d, S->d[d]);
		else
			sn_buf_printf(&b, "\tlong r%d = row / %" PRId64 "L %% %" PRId64 "L;\n", d, rst, S->d[d]);
		rst *= S->d[d];
	}
	/* the loads kept in registers */
	bool anyc = false;
	for (uint32_t k = 0; k < m.nloads; k++)
		if (m.cached[k]) {
			sn_buf_printf(&b, "\t%s c%u[%d];\n", vtype(g->nodes[m.loads[k]].dtype), k, (int)vpt);
			anyc = true;
		}
	if (anyc) {
		row_loop_head(&b, true, (int)vpt, gs, L);
		for (uint32_t k = 0; k < m.nloads; k++)
			if (m.cached[k])
				sn_buf_printf(&b, "\t\tc%u[c] = ld_%s(p%u, %s);\n", k,
					      ir_dtype_name(g->nodes[m.loads[k]].dtype), k, rlin);
		sn_buf_puts(&b, "\t}\n");
	}
	if (m.body.s)
		sn_buf_puts(&b, m.body.s);
	sn_buf_puts(&b, "}\n");
	st->kind = CG_STEP_KERNEL;
	cg_kernel *k = &st->k;
	k->grid[0] = (unsigned)(blocks < 1 ? 1 : blocks);
	k->grid[1] = k->grid[2] = 1;
	k->block[0] = (unsigned)(gs * gpb);
	k->block[1] = k->block[2] = 1;
	k->smem = 0;
	k->cfg = (cg_config){.block = gs * gpb};
	k->nbufs = 0;
	for (uint32_t i = 0; i < m.nloads; i++)
		k->bufs[k->nbufs++] = m.loads[i];
	k->bufs[k->nbufs++] = gr->root;
	em_free(&m);
	return cg_finish(k, "rows", &b, e);
}
