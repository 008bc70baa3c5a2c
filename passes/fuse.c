/* fuse.c: the fusion partition (fuse.h). */
#include "passes/fuse.h"

#include <stdlib.h>
#include <string.h>

bool fu_is_view(const ir_node *n)
{
	switch (n->op) {
	case IR_OP_reshape:
	case IR_OP_flatten:
	case IR_OP_squeeze:
	case IR_OP_unsqueeze: return n->nin == 1;
	default: return false;
	}
}

static bool is_elementwise(const ir_node *n)
{
	ir_kind k = ir_ops[n->op].kind;
	return k == IR_K_UNARY || k == IR_K_BINARY || k == IR_K_TERNARY;
}

bool fu_fusible(const ir_node *n)
{
	if (is_elementwise(n))
		return true;
	switch (n->op) {
	case IR_OP_transpose:
	case IR_OP_expand:
	case IR_OP_slice:
	case IR_OP_split: return n->nin == 1;
	default: return fu_is_view(n);
	}
}

static bool is_source(const ir_node *n)
{
	return n->op == IR_OP_input || n->op == IR_OP_param || n->op == IR_OP_const;
}

static bool same_shape(const ir_shape *a, const ir_shape *b)
{
	if (a->rank != b->rank)
		return false;
	for (int d = 0; d < a->rank; d++)
		if (a->d[d] != b->d[d])
			return false;
	return true;
}

/* ---- layouts ---- */

void fu_layout_whole(const ir_node *n, fu_layout *l)
{
	l->rank = n->shape.rank;
	l->offset = 0;
	int64_t st = 1;
	for (int d = n->shape.rank - 1; d >= 0; d--) {
		l->shape[d] = n->shape.d[d];
		l->strides[d] = st;
		st *= n->shape.d[d];
	}
}

/* Strides for viewing l (shape, strides) as shape `to` without moving
 * data, chunk by chunk of dims that are contiguous with each other (as
 * a strided view's reshape is computed); false when it cannot be. */
static bool view_as(fu_layout *l, const ir_shape *to)
{
	int64_t ns[IR_MAX_RANK];
	int od = l->rank - 1, vd = to->rank - 1;
	int64_t numel = 1;
	for (int d = 0; d < l->rank; d++)
		numel *= l->shape[d];
	int64_t tn = 1;
	for (int d = 0; d < to->rank; d++)
		tn *= to->d[d];
	if (tn != numel)
		return false;
	if (numel == 0 || l->rank == 0) {
		int64_t st = 1;
		for (int d = to->rank - 1; d >= 0; d--) {
			ns[d] = st;
			st *= to->d[d] ? to->d[d] : 1;
		}
	} else {
		int64_t base = l->strides[od], tnum = 1, vnum = 1;
		for (; od >= 0; od--) {
			tnum *= l->shape[od];
			if (od == 0 || (l->shape[od - 1] != 1 && l->strides[od - 1] != tnum * base)) {
				while (vd >= 0 && (vnum < tnum || to->d[vd] == 1)) {
					ns[vd] = vnum * base;
					vnum *= to->d[vd];
					vd--;
				}
				if (vnum != tnum)
					return false;
				if (od > 0) {
					base = l->strides[od - 1];
					tnum = vnum = 1;
				}
			}
		}
		if (vd != -1)
			return false;
	}
	l->rank = to->rank;
	for (int d = 0; d < to->rank; d++) {
		l->shape[d] = to->d[d];
		l->strides[d] = ns[d];
	}
	return true;
}

bool fu_layout_apply(const ir_node *n, fu_layout *l)
{
	const ir_attrs *at = n->attrs;
	const ir_shape *os = &n->shape;
	int64_t st[IR_MAX_RANK];
	switch (n->op) {
	case IR_OP_transpose:
		if (at->perm.n != l->rank)
			return false;
		for (int d = 0; d < l->rank; d++)
			st[d] = l->strides[at->perm.v[d]];
		memcpy(l->strides, st, sizeof st);
		break;
	case IR_OP_split: {
		int a = ir_axis(at->axis, l->rank);
		if (a < 0)
			return false;
		int64_t start = 0;
		for (int64_t i = 0; i < at->index && i < at->sizes.n; i++)
			start += at->sizes.v[i];
		l->offset += start * l->strides[a];
		break;
	}
	case IR_OP_slice:
		for (int i = 0; i < at->starts.n; i++) {
			int a = ir_axis(at->axes.n ? at->axes.v[i] : i, l->rank);
			int64_t step = at->steps.n ? at->steps.v[i] : 1, first = 0;
			if (a < 0 || step == 0)
				return false;
			if (ir_slice_axis(l->shape[a], at->starts.v[i], at->ends.v[i], step, &first) > 0)
				l->offset += first * l->strides[a];
			l->strides[a] *= step;
		}
		break;
	case IR_OP_expand:
		if (os->rank < l->rank)
			return false;
		for (int d = 0; d < os->rank; d++) {
			int sd = d - (os->rank - l->rank);
			st[d] = sd < 0 || l->shape[sd] == 1 ? 0 : l->strides[sd];
		}
		memcpy(l->strides, st, sizeof st);
		break;
	default:
		if (!fu_is_view(n))
			return false;
		return view_as(l, os);
	}
	l->rank = os->rank;
	for (int d = 0; d < os->rank; d++)
		l->shape[d] = os->d[d];
	return true;
}

bool fu_layout_unapply(const ir_graph *g, const ir_node *n, fu_layout *l)
{
	const ir_shape *is = &g->nodes[n->in[0]].shape;
	if (n->op == IR_OP_transpose) {
		const ir_ints *p = &n->attrs->perm;
		if (p->n != l->rank)
			return false;
		int64_t st[IR_MAX_RANK];
		for (int d = 0; d < l->rank; d++)
			st[p->v[d]] = l->strides[d];
		memcpy(l->strides, st, sizeof st);
		for (int d = 0; d < is->rank; d++)
			l->shape[d] = is->d[d];
		return true;
	}
	return fu_is_view(n) && view_as(l, is);
}

bool fu_layout_of(const ir_graph *g, const fu_plan *p, uint32_t gid, ir_ref v, ir_ref *top, fu_layout *l)
{
	ir_ref chain[64];
	int n = 0;
	ir_ref cur = v;
	while (p->group_of[cur] == gid && p->groups[gid].core != cur && n < 64) {
		chain[n++] = cur;
		cur = g->nodes[cur].in[0];
	}
	if (p->group_of[cur] == gid || !p->stored[cur])
		return false;
	*top = cur;
	fu_layout_whole(&g->nodes[cur], l);
	while (n-- > 0)
		if (!fu_layout_apply(&g->nodes[chain[n]], l))
			return false;
	return true;
}

bool fu_layout_out(const ir_graph *g, const fu_plan *p, uint32_t gid, fu_layout *l)
{
	const fu_group *gr = &p->groups[gid];
	fu_layout_whole(&g->nodes[gr->root], l);
	for (ir_ref cur = gr->root; cur != gr->core;) {
		const ir_node *n = &g->nodes[cur];
		if (p->group_of[cur] != gid || !n->nin || !fu_layout_unapply(g, n, l))
			return false;
		cur = n->in[0];
	}
	return true;
}

void fu_plan_free(fu_plan *p)
{
	if (!p)
		return;
	free(p->groups);
	free(p->members);
	free(p->group_of);
	free(p->stored);
	free(p->free_);
	memset(p, 0, sizeof *p);
}

/* The partition's working state. */
typedef struct part {
	const ir_graph *g;
	const fu_opts *o;
	uint32_t *cstart, *cons; /* consumers of node i: cons[cstart[i] .. cstart[i+1]) */
	uint8_t *isout;
	fu_plan *p;
	uint32_t cap;            /* of p->groups */
	/* the group being built */
	ir_ref *mem;
	uint32_t nmem;
	ir_ref cand[256];
	uint32_t ncand;
	ir_ref loads[16];
	uint32_t nloads, max_loads;
	/* cuBLASLt epilogues (match_gemms), per node */
	ir_ref *gemm_of, *gemm_root, *gemm_bias, *gemm_res;
	uint8_t *gemm_act;
	/* attention's layouts (match_attention), per node; att_lo per core:
	 * its lowest member, where the group's members start */
	ir_ref *att_of, *att_root, *att_lo;
	/* row groups (match_rows), per node: the group's root */
	ir_ref *rows_of;
	uint8_t *inm; /* scratch: in the row group being grown */
} part;

static unsigned caps_of(const part *s, ir_ref r)
{
	return s->o && s->o->caps ? s->o->caps(s->g, r, s->o->ctx) : 0;
}

static bool only_consumer_in(const part *s, ir_ref p, uint32_t gid)
{
	for (uint32_t k = s->cstart[p]; k < s->cstart[p + 1]; k++)
		if (s->p->group_of[s->cons[k]] != gid)
			return false;
	return true;
}

static uint32_t nconsumers(const part *s, ir_ref p)
{
	return s->cstart[p + 1] - s->cstart[p];
}

static bool is_scalar_const(const ir_node *n)
{
	return n->op == IR_OP_const && ir_numel(&n->shape) == 1;
}

/* Whether operand q of a member needs a load (stored, not inlined). */
static bool needs_load(const part *s, ir_ref q)
{
	return !s->p->free_[q] && !is_scalar_const(&s->g->nodes[q]);
}

/* The loads of the group if p joined it, within the cap: then makes it so. */
static bool take_loads(part *s, ir_ref p, uint32_t gid)
{
	ir_ref nl[16];
	uint32_t n = 0;
	for (uint32_t i = 0; i < s->nloads; i++)
		if (s->loads[i] != p)
			nl[n++] = s->loads[i];
	const ir_node *nd = &s->g->nodes[p];
	for (uint32_t k = 0; k < nd->nin; k++) {
		ir_ref q = nd->in[k];
		if (s->p->group_of[q] == gid || !needs_load(s, q))
			continue;
		bool have = false;
		for (uint32_t i = 0; i < n; i++)
			have |= nl[i] == q;
		if (have)
			continue;
		if (n >= s->max_loads)
			return false;
		nl[n++] = q;
	}
	memcpy(s->loads, nl, n * sizeof *nl);
	s->nloads = n;
	return true;
}

static void push_cand(part *s, ir_ref q)
{
	if (s->ncand < SN_COUNT(s->cand))
		s->cand[s->ncand++] = q;
}

static ir_ref pop_max(part *s)
{
	uint32_t best = 0;
	for (uint32_t i = 1; i < s->ncand; i++)
		if (s->cand[i] > s->cand[best])
			best = i;
	ir_ref r = s->cand[best];
	s->cand[best] = s->cand[--s->ncand];
	return r;
}

static void join(part *s, ir_ref p, uint32_t gid)
{
	s->p->group_of[p] = gid;
	s->mem[s->nmem++] = p;
}

static fu_group *new_group(part *s, fu_kind kind, ir_ref root)
{
	fu_plan *p = s->p;
	fu_group *gr = &p->groups[p->ngroups];
	*gr = (fu_group){.kind = kind, .root = root, .core = IR_NONE, .bias = IR_NONE, .residual = IR_NONE};
	p->group_of[root] = p->ngroups;
	s->nmem = 0;
	s->mem[s->nmem++] = root;
	s->ncand = 0;
	s->nloads = 0;
	return gr;
}

static ir_ref sole_consumer(const part *s, ir_ref x)
{
	return !s->isout[x] && nconsumers(s, x) == 1 ? s->cons[s->cstart[x]] : IR_NONE;
}

static bool no_fuse(const part *s, ir_ref x)
{
	return s->o && s->o->nofuse && s->o->nofuse[x];
}

/* From each matrix product cuBLASLt runs, down its chain of sole
 * consumers: [+ bias[n]] and [+ residual] (either order), then [act]
 * (relu or tanh gelu): the epilogue cuBLASLt applies before its store,
 * act(A @ B + C + bias). Marks the chain's nodes with the product
 * (gemm_of) and records the chain's last node as its root (gemm_root). */
static void match_gemms(part *s)
{
	const ir_graph *g = s->g;
	for (ir_ref x = 0; x < g->nnodes; x++) {
		const ir_node *n = &g->nodes[x];
		if ((n->op != IR_OP_matmul && n->op != IR_OP_linear && n->op != IR_OP_conv2d) || no_fuse(s, x) ||
		    !(caps_of(s, x) & FU_CAN_BLAS_EPI))
			continue;
		bool has_bias = (n->op == IR_OP_linear || n->op == IR_OP_conv2d) && n->nin > 2, has_res = false;
		ir_ref cur = x, bias = IR_NONE, res = IR_NONE;
		fu_act act = FU_ACT_NONE;
		for (;;) {
			ir_ref c = sole_consumer(s, cur);
			if (c == IR_NONE || no_fuse(s, c) || s->gemm_of[c] != IR_NONE)
				break; /* an add of two products: the first one takes it */
			const ir_node *cn = &g->nodes[c];
			const ir_node *cu = &g->nodes[cur];
			if (cn->op == IR_OP_add && cn->in[0] != cn->in[1] && same_shape(&cn->shape, &cu->shape) &&
			    cn->dtype == cu->dtype) {
				ir_ref o = cn->in[0] == cur ? cn->in[1] : cn->in[0];
				const ir_node *on = &g->nodes[o];
				int64_t cols = cn->shape.rank ? cn->shape.d[cn->shape.rank - 1] : 1;
				bool vec = on->shape.rank >= 1 && on->shape.rank <= cn->shape.rank &&
					   on->shape.d[on->shape.rank - 1] == cols && ir_numel(&on->shape) == cols;
				if (on->dtype != cn->dtype || s->p->free_[o] || no_fuse(s, o))
					break;
				if (vec && !has_bias && !same_shape(&on->shape, &cn->shape)) {
					has_bias = true;
					bias = o;
				} else if (same_shape(&on->shape, &cn->shape) && !has_res) {
					has_res = true;
					res = o;
				} else {
					break;
				}
				cur = c;
				continue;
			}
			if (cn->op == IR_OP_relu || (cn->op == IR_OP_gelu && cn->attrs->approximate == IR_GELU_TANH)) {
				act = cn->op == IR_OP_relu ? FU_ACT_RELU : FU_ACT_GELU;
				cur = c;
			}
			break;
		}
		if (cur == x)
			continue;
		/* a product that takes a generic epilogue (the GEMM template)
		 * keeps the whole chain when it goes on past what cuBLASLt can
		 * express: the consumer's group absorbs it (grow) */
		ir_ref nx = sole_consumer(s, cur);
		if ((caps_of(s, x) & FU_CAN_EPILOGUE) && nx != IR_NONE && !no_fuse(s, nx) && s->gemm_of[nx] == IR_NONE &&
		    is_elementwise(&g->nodes[nx]) && same_shape(&g->nodes[nx].shape, &n->shape))
			continue;
		s->gemm_root[cur] = x;
		s->gemm_bias[x] = bias;
		s->gemm_res[x] = res;
		s->gemm_act[x] = (uint8_t)act;
		for (ir_ref k = x; k != cur; k = s->cons[s->cstart[k]])
			s->gemm_of[k] = x;
		s->gemm_of[cur] = x;
	}
}

static bool layout_op(const ir_node *n)
{
	switch (n->op) {
	case IR_OP_transpose:
	case IR_OP_split:
	case IR_OP_slice:
	case IR_OP_expand: return n->nin == 1;
	default: return fu_is_view(n);
	}
}

/* Attention reads q, k and v where their index-only producers found them
 * and writes its output where its index-only consumers would put it:
 * those chains (of sole consumers) become layouts, no kernels. */
static void match_attention(part *s)
{
	const ir_graph *g = s->g;
	for (ir_ref x = 0; x < g->nnodes; x++) {
		const ir_node *n = &g->nodes[x];
		if (n->op != IR_OP_scaled_dot_product_attention || no_fuse(s, x) || !(caps_of(s, x) & FU_CAN_LAYOUT))
			continue;
		/* the output chain: transposes and reshapes, as long as the
		 * core's output stays a strided view of the chain's end */
		ir_ref chain[32];
		int k = 0;
		for (ir_ref cur = x, c; k < 32 && (c = sole_consumer(s, cur)) != IR_NONE; cur = c) {
			const ir_node *cn = &g->nodes[c];
			if ((cn->op != IR_OP_transpose && !fu_is_view(cn)) || no_fuse(s, c) || s->gemm_of[c] != IR_NONE)
				break;
			chain[k++] = c;
		}
		for (; k > 0; k--) {
			fu_layout l;
			fu_layout_whole(&g->nodes[chain[k - 1]], &l);
			bool ok = true;
			for (int j = k - 1; j >= 0 && ok; j--)
				ok = fu_layout_unapply(g, &g->nodes[chain[j]], &l);
			if (ok)
				break;
		}
		int nops = 0;
		for (uint32_t i = 0; i < 3 && i < n->nin; i++) {
			/* up from the operand while each node is read only by the chain */
			ir_ref up[32];
			int m = 0;
			for (ir_ref cur = n->in[i], below = x; m < 32; below = cur, cur = g->nodes[cur].in[0]) {
				const ir_node *cn = &g->nodes[cur];
				if (!layout_op(cn) || sole_consumer(s, cur) != below || no_fuse(s, cur) || s->p->free_[cur] ||
				    s->gemm_of[cur] != IR_NONE || s->att_of[cur] != IR_NONE)
					break;
				up[m++] = cur;
			}
			/* composed from the top down; a node that cannot be a
			 * layout ends the chain below it */
			int take = m;
			for (;;) {
				if (!take)
					break;
				fu_layout l;
				fu_layout_whole(&g->nodes[g->nodes[up[take - 1]].in[0]], &l);
				bool ok = true;
				for (int j = take - 1; j >= 0 && ok; j--)
					ok = fu_layout_apply(&g->nodes[up[j]], &l);
				if (ok)
					break;
				take--;
			}
			for (int j = 0; j < take; j++) {
				s->att_of[up[j]] = x;
				if (up[j] < s->att_lo[x])
					s->att_lo[x] = up[j];
			}
			nops += take;
		}
		if (!k && !nops)
			continue;
		for (int j = 0; j < k; j++)
			s->att_of[chain[j]] = x;
		s->att_of[x] = x;
		s->att_root[k ? chain[k - 1] : x] = x;
	}
}

/* ---- row groups ---- */

static bool is_row_reduce(const ir_node *n)
{
	return n->op == IR_OP_reduce_sum || n->op == IR_OP_reduce_mean || n->op == IR_OP_reduce_max ||
	       n->op == IR_OP_reduce_min;
}

/* A row group's iteration space: input shape S reduced over [a, rank),
 * R rows of L. */
typedef struct rowsp {
	ir_shape S;
	int a;
	int64_t R, L;
} rowsp;

/* The space reduction x iterates, or false when it is not over trailing
 * axes of a non-empty input with its dims kept. */
static bool row_space(const ir_graph *g, const ir_node *x, rowsp *sp)
{
	const ir_shape *is = &g->nodes[x->in[0]].shape;
	const ir_ints *ax = &x->attrs->axes;
	bool red[IR_MAX_RANK] = {0};
	for (int d = 0; d < is->rank; d++)
		red[d] = ax->n == 0;
	for (int i = 0; i < ax->n; i++) {
		int d = ir_axis(ax->v[i], is->rank);
		if (d < 0)
			return false;
		red[d] = true;
	}
	int a = is->rank;
	while (a > 0 && red[a - 1])
		a--;
	for (int d = 0; d < a; d++)
		if (red[d])
			return false;
	if (!x->attrs->keepdims || x->shape.rank != is->rank || ir_numel(is) <= 0)
		return false;
	sp->S = *is;
	sp->a = a;
	sp->R = 1;
	sp->L = 1;
	for (int d = 0; d < is->rank; d++)
		*(d < a ? &sp->R : &sp->L) *= is->d[d];
	return sp->L > 1;
}

/* 2: R*L elements (inside the row loop; element j in row j / L, as a
 * reshape of S keeps it); 1: one value per row, its dims (aligned to S's
 * last) S's row dims or 1; 0: neither. */
static int row_class(const rowsp *sp, const ir_shape *s)
{
	if (ir_numel(s) == sp->R * sp->L)
		return 2;
	if (ir_numel(s) != sp->R || s->rank > sp->S.rank)
		return 0;
	int off = sp->S.rank - s->rank;
	for (int d = 0; d < s->rank; d++)
		if (s->d[d] != 1 && (d + off >= sp->a || s->d[d] != sp->S.d[d + off]))
			return 0;
	return 1;
}

/* Whether reduction x may be in a row group of space sp. */
static bool row_reduce_in(const part *s, ir_ref x, const rowsp *sp)
{
	const ir_node *n = &s->g->nodes[x];
	rowsp o;
	return is_row_reduce(n) && (caps_of(s, x) & FU_CAN_ROWS) && row_space(s->g, n, &o) &&
	       same_shape(&o.S, &sp->S) && o.a == sp->a;
}

/* Whether node q is taken by no other matcher and may be a member. */
static bool row_free_node(const part *s, ir_ref q)
{
	return s->rows_of[q] == IR_NONE && s->gemm_of[q] == IR_NONE && s->att_of[q] == IR_NONE && !no_fuse(s, q) &&
	       !s->p->free_[q] && !is_source(&s->g->nodes[q]);
}

static bool row_member_ok(const part *s, ir_ref q, const rowsp *sp)
{
	const ir_node *n = &s->g->nodes[q];
	return row_reduce_in(s, q, sp) || ((is_elementwise(n) || fu_is_view(n)) && row_class(sp, &n->shape));
}

/* From each reduction that may be in a row group, the group grown to a
 * fixed point (fuse.h); members marked with their root in rows_of. */
static void match_rows(part *s)
{
	const ir_graph *g = s->g;
	uint32_t max_nodes = s->o && s->o->max_nodes ? s->o->max_nodes : 64;
	ir_ref mem[64];
	for (ir_ref x = 0; x < g->nnodes; x++) {
		const ir_node *xn = &g->nodes[x];
		rowsp sp;
		if (!is_row_reduce(xn) || !(caps_of(s, x) & FU_CAN_ROWS) || !row_free_node(s, x) ||
		    !row_space(g, xn, &sp))
			continue;
		uint32_t nm = 0;
		mem[nm++] = x;
		s->inm[x] = 1;
		ir_ref lo = x;
		for (bool changed = true; changed;) {
			changed = false;
			for (uint32_t i = 0; i < nm; i++) {
				const ir_node *mn = &g->nodes[mem[i]];
				/* producers read only by the group */
				for (uint32_t k = 0; k < mn->nin && nm < max_nodes && nm < SN_COUNT(mem); k++) {
					ir_ref q = mn->in[k];
					if (s->inm[q] || !row_free_node(s, q) || s->isout[q] || !row_member_ok(s, q, &sp))
						continue;
					bool all = true;
					for (uint32_t c = s->cstart[q]; c < s->cstart[q + 1] && all; c++)
						all = s->inm[s->cons[c]];
					if (!all)
						continue;
					mem[nm++] = q;
					s->inm[q] = 1;
					lo = q < lo ? q : lo;
					changed = true;
				}
				/* consumers whose other operands come before the group */
				for (uint32_t c = s->cstart[mem[i]]; c < s->cstart[mem[i] + 1] && nm < max_nodes && nm < SN_COUNT(mem); c++) {
					ir_ref q = s->cons[c];
					const ir_node *qn = &g->nodes[q];
					if (s->inm[q] || !row_free_node(s, q) || !row_member_ok(s, q, &sp) ||
					    (!nconsumers(s, q) && !s->isout[q]))
						continue;
					bool ok = true;
					for (uint32_t k = 0; k < qn->nin && ok; k++) {
						ir_ref o = qn->in[k];
						ok = s->inm[o] || o < lo || s->p->free_[o] || is_source(&g->nodes[o]);
					}
					if (!ok)
						continue;
					mem[nm++] = q;
					s->inm[q] = 1;
					changed = true;
				}
			}
		}
		/* one member read outside (the root, the last), few loads, and
		 * something besides a lone reduction */
		ir_ref root = IR_NONE, hi = 0, loads[8];
		uint32_t nout = 0, nl = 0;
		bool ok = nm > 1;
		for (uint32_t i = 0; i < nm && ok; i++) {
			ir_ref q = mem[i];
			const ir_node *qn = &g->nodes[q];
			hi = q > hi ? q : hi;
			bool out = s->isout[q];
			for (uint32_t c = s->cstart[q]; c < s->cstart[q + 1]; c++)
				out |= !s->inm[s->cons[c]];
			if (out) {
				root = q;
				nout++;
			}
			for (uint32_t k = 0; k < qn->nin && ok; k++) {
				ir_ref o = qn->in[k];
				if (s->inm[o] || !needs_load(s, o))
					continue;
				bool have = false;
				for (uint32_t j = 0; j < nl; j++)
					have |= loads[j] == o;
				if (!have && nl >= 6)
					ok = false;
				else if (!have)
					loads[nl++] = o;
			}
		}
		/* a member of R*L elements not shaped as S reads no per-row
		 * member (its broadcast would not be per row) */
		for (uint32_t i = 0; i < nm && ok; i++) {
			const ir_node *qn = &g->nodes[mem[i]];
			if (row_class(&sp, &qn->shape) != 2 || same_shape(&qn->shape, &sp.S))
				continue;
			for (uint32_t k = 0; k < qn->nin && ok; k++)
				ok = !s->inm[qn->in[k]] || row_class(&sp, &g->nodes[qn->in[k]].shape) == 2;
		}
		ok = ok && nout == 1 && root == hi;
		for (uint32_t i = 0; i < nm; i++) {
			s->inm[mem[i]] = 0;
			if (ok)
				s->rows_of[mem[i]] = root;
		}
	}
}

/* Makes the group of the product whose chain ends at r. */
static void gemm_group(part *s, ir_ref r, fu_group *gr)
{
	ir_ref x = s->gemm_root[r];
	gr->kind = FU_GEMM;
	gr->core = x;
	gr->bias = s->gemm_bias[x];
	gr->residual = s->gemm_res[x];
	gr->act = (fu_act)s->gemm_act[x];
	uint32_t gid = (uint32_t)(gr - s->p->groups);
	for (ir_ref k = x; k != r; k = s->cons[s->cstart[k]])
		join(s, k, gid);
}

/* Pulls producers into group gid from its candidates (pointwise groups and
 * norm prologues). */
static void grow(part *s, uint32_t gid)
{
	fu_plan *p = s->p;
	fu_group *gr = &p->groups[gid];
	const ir_graph *g = s->g;
	const ir_node *root = &g->nodes[gr->root];
	uint32_t max_nodes = s->o && s->o->max_nodes ? s->o->max_nodes : 64;
	while (s->ncand) {
		ir_ref q = pop_max(s);
		const ir_node *qn = &g->nodes[q];
		if (p->group_of[q] != FU_NO_GROUP || is_source(qn) || p->free_[q] || s->isout[q] ||
		    s->gemm_of[q] != IR_NONE || s->att_of[q] != IR_NONE || s->rows_of[q] != IR_NONE || no_fuse(s, q))
			continue;
		if (s->nmem >= max_nodes || !only_consumer_in(s, q, gid))
			continue;
		if (gr->kind == FU_REDUCE) {
			/* the core may use it as operand 0 only */
			const ir_node *c = &g->nodes[gr->core];
			bool bad = false;
			for (uint32_t k = 1; k < c->nin; k++)
				bad |= c->in[k] == q;
			if (bad)
				continue;
		}
		if (gr->kind == FU_POINTWISE && gr->core == IR_NONE &&
		    (qn->op == IR_OP_conv2d || qn->op == IR_OP_matmul || qn->op == IR_OP_linear) &&
		    (caps_of(s, q) & FU_CAN_EPILOGUE)) {
			/* a convolution or a product whose only consumers are
			 * this group's same-shaped elementwise nodes */
			bool ok = same_shape(&qn->shape, &root->shape) && ir_dtype_is_float(root->dtype);
			for (uint32_t i = 0; i < s->nmem && ok; i++) {
				const ir_node *m = &g->nodes[s->mem[i]];
				ok = is_elementwise(m) && same_shape(&m->shape, &root->shape);
			}
			/* the epilogue reads at most its cap */
			uint32_t nl = 0;
			for (uint32_t i = 0; i < s->nloads && ok; i++)
				nl += s->loads[i] != q;
			if (!ok || nl > 4)
				continue;
			gr->kind = FU_CONV;
			gr->core = q;
			uint32_t n = 0;
			for (uint32_t i = 0; i < s->nloads; i++)
				if (s->loads[i] != q)
					s->loads[n++] = s->loads[i];
			s->nloads = n;
			s->max_loads = 4;
			join(s, q, gid);
			continue; /* its operands stay stored */
		}
		if (!fu_fusible(qn))
			continue;
		if (gr->kind == FU_CONV && (!is_elementwise(qn) || !same_shape(&qn->shape, &root->shape)))
			continue;
		if (gr->kind == FU_CONV) {
			/* the core reads its operands from buffers: one of them,
			 * read also by the epilogue, stays stored (a member joins
			 * only when all its consumers are in the group, so an
			 * ancestor of the core is first one of its operands) */
			const ir_node *c = &g->nodes[gr->core];
			bool operand = false;
			for (uint32_t k = 0; k < c->nin; k++)
				operand |= c->in[k] == q;
			if (operand)
				continue;
		}
		if (!take_loads(s, q, gid))
			continue;
		join(s, q, gid);
		for (uint32_t k = 0; k < qn->nin; k++)
			push_cand(s, qn->in[k]);
	}
}

/* Whether consumer c (already grouped) computes operand r inline. */
static bool inlines(const part *s, ir_ref c, ir_ref r)
{
	uint32_t gid = s->p->group_of[c];
	if (gid == FU_NO_GROUP)
		return s->p->free_[c] && !s->p->stored[c]; /* inlined itself */
	const fu_group *gr = &s->p->groups[gid];
	switch (gr->kind) {
	case FU_POINTWISE: return true;
	case FU_CONV: return c != gr->core;
	case FU_REDUCE: return c != gr->core || s->g->nodes[c].in[0] == r;
	case FU_ROWS: return true;
	default: return false;
	}
}

int fu_partition(const ir_graph *g, const fu_opts *o, bool disable, fu_plan *out, sn_err *e)
{
	memset(out, 0, sizeof *out);
	uint32_t n = g->nnodes, cnt = n ? n : 1;
	part s = {.g = g, .o = o, .p = out};
	s.cstart = calloc((size_t)n + 1, sizeof *s.cstart);
	s.isout = calloc(cnt, 1);
	s.mem = malloc(cnt * sizeof *s.mem);
	out->groups = malloc(cnt * sizeof *out->groups);
	out->members = malloc(cnt * sizeof *out->members);
	out->group_of = malloc(cnt * sizeof *out->group_of);
	out->stored = calloc(cnt, 1);
	out->free_ = calloc(cnt, 1);
	uint64_t nuse = 0;
	for (uint32_t i = 0; i < n; i++)
		nuse += g->nodes[i].nin;
	s.cons = malloc((nuse ? nuse : 1) * sizeof *s.cons);
	s.gemm_of = malloc(cnt * sizeof *s.gemm_of);
	s.gemm_root = malloc(cnt * sizeof *s.gemm_root);
	s.gemm_bias = malloc(cnt * sizeof *s.gemm_bias);
	s.gemm_res = malloc(cnt * sizeof *s.gemm_res);
	s.gemm_act = calloc(cnt, 1);
	s.att_of = malloc(cnt * sizeof *s.att_of);
	s.att_root = malloc(cnt * sizeof *s.att_root);
	s.att_lo = malloc(cnt * sizeof *s.att_lo);
	s.rows_of = malloc(cnt * sizeof *s.rows_of);
	s.inm = calloc(cnt, 1);
	int rc = SN_OK;
	if (!s.cstart || !s.isout || !s.mem || !out->groups || !out->members || !out->group_of || !out->stored ||
	    !out->free_ || !s.cons || !s.gemm_of || !s.gemm_root || !s.gemm_bias || !s.gemm_res || !s.gemm_act || !s.att_of || !s.att_root || !s.att_lo || !s.rows_of || !s.inm) {
		rc = sn_errf(e, SN_EINTERNAL, "fusion: out of memory");
		goto done;
	}
	for (uint32_t i = 0; i < n; i++) {
		out->group_of[i] = FU_NO_GROUP;
		s.gemm_of[i] = s.gemm_root[i] = s.gemm_bias[i] = s.gemm_res[i] = IR_NONE;
		s.att_of[i] = s.att_root[i] = s.rows_of[i] = IR_NONE;
		s.att_lo[i] = i; /* the core itself until a lower operand joins */
		for (uint32_t k = 0; k < g->nodes[i].nin; k++)
			s.cstart[g->nodes[i].in[k] + 1]++;
	}
	for (uint32_t i = 0; i < n; i++)
		s.cstart[i + 1] += s.cstart[i];
	{
		uint32_t *fill = malloc(cnt * sizeof *fill);
		if (!fill) {
			rc = sn_errf(e, SN_EINTERNAL, "fusion: out of memory");
			goto done;
		}
		memcpy(fill, s.cstart, cnt * sizeof *fill);
		for (uint32_t i = 0; i < n; i++)
			for (uint32_t k = 0; k < g->nodes[i].nin; k++)
				s.cons[fill[g->nodes[i].in[k]]++] = i;
		free(fill);
	}
	for (uint32_t k = 0; k < g->noutputs; k++)
		s.isout[g->outputs[k]] = 1;
	for (uint32_t i = 0; i < n && !disable; i++) {
		const ir_node *nd = &g->nodes[i];
		bool f = nd->op == IR_OP_iota || is_scalar_const(nd);
		if (!f && fu_fusible(nd) && nd->nin) {
			f = true;
			for (uint32_t k = 0; k < nd->nin; k++)
				f &= out->free_[nd->in[k]] != 0;
		}
		out->free_[i] = f;
	}

	if (!disable) {
		match_gemms(&s);
		match_attention(&s);
		match_rows(&s);
	}
	/* From the outputs back: every node not yet in a group starts one. */
	for (uint32_t r = n; r-- > 0;) {
		const ir_node *nd = &g->nodes[r];
		if (is_source(nd)) {
			out->stored[r] = 1;
			continue;
		}
		if (out->group_of[r] != FU_NO_GROUP)
			continue;
		if (out->free_[r] && !s.isout[r] && nconsumers(&s, r) && !no_fuse(&s, r)) {
			bool all = true;
			for (uint32_t k = s.cstart[r]; k < s.cstart[r + 1] && all; k++)
				all = inlines(&s, s.cons[k], r);
			if (all)
				continue; /* computed where it is used */
		}
		out->stored[r] = 1;
		if (disable) {
			new_group(&s, fu_is_view(nd) ? FU_VIEW : FU_NODE, r);
		} else if (s.att_root[r] != IR_NONE) {
			ir_ref x = s.att_root[r];
			fu_group *gr = new_group(&s, FU_ATTENTION, r);
			gr->core = x;
			uint32_t gid = out->ngroups;
			for (ir_ref k = s.att_lo[x]; k < r; k++)
				if (s.att_of[k] == x)
					join(&s, k, gid);
		} else if (s.gemm_root[r] != IR_NONE) {
			gemm_group(&s, r, new_group(&s, FU_GEMM, r));
		} else if (s.rows_of[r] == r) {
			fu_group *gr = new_group(&s, FU_ROWS, r);
			uint32_t gid = out->ngroups;
			for (ir_ref k = 0; k < r; k++)
				if (s.rows_of[k] == r) {
					if (gr->core == IR_NONE && is_row_reduce(&g->nodes[k]))
						gr->core = k;
					join(&s, k, gid);
				}
			if (gr->core == IR_NONE)
				gr->core = r; /* the root is the only reduction */
		} else if (fu_is_view(nd) && !out->free_[nd->in[0]]) {
			new_group(&s, FU_VIEW, r);
		} else if (no_fuse(&s, r)) {
			fu_group *gr = new_group(&s, fu_fusible(nd) ? FU_POINTWISE : FU_NODE, r);
			if (!fu_fusible(nd))
				gr->core = r;
		} else if (fu_fusible(nd)) {
			fu_group *gr = new_group(&s, FU_POINTWISE, r);
			uint32_t gid = out->ngroups;
			s.max_loads = o && o->max_loads ? o->max_loads : 6;
			if (s.max_loads > SN_COUNT(s.loads))
				s.max_loads = SN_COUNT(s.loads);
			if (!take_loads(&s, r, gid)) {
				gr->kind = FU_NODE; /* more operands than a fused kernel takes */
			} else {
				for (uint32_t k = 0; k < nd->nin; k++)
					push_cand(&s, nd->in[k]);
				grow(&s, gid);
			}
		} else if ((caps_of(&s, r) & FU_CAN_PROLOGUE) && nd->nin >= 1) {
			fu_group *gr = new_group(&s, FU_REDUCE, r);
			gr->core = r;
			s.max_loads = 4;
			push_cand(&s, nd->in[0]);
			grow(&s, out->ngroups);
			if (s.nmem == 1 && !out->free_[nd->in[0]])
				gr->kind = FU_NODE; /* nothing to fuse */
		} else {
			fu_group *gr = new_group(&s, FU_NODE, r);
			gr->core = r;
		}
		fu_group *gr = &out->groups[out->ngroups];
		/* members ascending */
		for (uint32_t i = 1; i < s.nmem; i++)
			for (uint32_t j = i; j > 0 && s.mem[j - 1] > s.mem[j]; j--) {
				ir_ref t = s.mem[j];
				s.mem[j] = s.mem[j - 1];
				s.mem[j - 1] = t;
			}
		gr->first = out->nmembers;
		gr->n = s.nmem;
		memcpy(out->members + out->nmembers, s.mem, s.nmem * sizeof *s.mem);
		out->nmembers += s.nmem;
		out->ngroups++;
	}
	/* Groups were made from the outputs back: reverse them into an order
	 * that runs (a group's root follows every value it reads). */
	for (uint32_t i = 0, j = out->ngroups; i + 1 < j; i++, j--) {
		fu_group t = out->groups[i];
		out->groups[i] = out->groups[j - 1];
		out->groups[j - 1] = t;
	}
	for (uint32_t i = 0; i < out->ngroups; i++) {
		const fu_group *gr = &out->groups[i];
		for (uint32_t k = 0; k < gr->n; k++)
			out->group_of[out->members[gr->first + k]] = i;
	}
done:
	free(s.gemm_of);
	free(s.gemm_root);
	free(s.gemm_bias);
	free(s.gemm_res);
	free(s.gemm_act);
	free(s.att_of);
	free(s.att_root);
	free(s.att_lo);
	free(s.rows_of);
	free(s.inm);
	free(s.cstart);
	free(s.cons);
	free(s.isout);
	free(s.mem);
	if (rc)
		fu_plan_free(out);
	return rc;
}

static const char *kind_name(fu_kind k)
{
	static const char *const names[] = {"node", "view", "pointwise", "reduce", "conv", "gemm", "attention", "rows"};
	return (unsigned)k < SN_COUNT(names) ? names[k] : "?";
}

static void ref_name(const ir_graph *g, ir_ref r, sn_buf *b)
{
	const ir_node *n = &g->nodes[r];
	if (n->name)
		sn_buf_printf(b, "%%%s", n->name);
	else
		sn_buf_printf(b, "%%%u", r);
}

uint32_t fu_rows_needs(const ir_graph *g, const fu_plan *p, const fu_group *gr, uint64_t *need, int *red_of)
{
	const ir_ref *mem = p->members + gr->first;
	uint32_t nred = 0;
	for (uint32_t k = 0; k < gr->n; k++) {
		const ir_node *n = &g->nodes[mem[k]];
		need[k] = 0;
		red_of[k] = -1;
		for (uint32_t i = 0; i < n->nin; i++)
			for (uint32_t j = 0; j < k; j++)
				if (mem[j] == n->in[i])
					need[k] |= need[j] | (red_of[j] >= 0 ? UINT64_C(1) << red_of[j] : 0);
		if (ir_ops[n->op].kind == IR_K_REDUCE)
			red_of[k] = (int)nred++;
	}
	return nred;
}

void fu_plan_print(const ir_graph *g, const fu_plan *p, sn_buf *b)
{
	static const char *const acts[] = {"", " relu", " gelu"};
	for (uint32_t i = 0; i < p->ngroups; i++) {
		const fu_group *gr = &p->groups[i];
		if (gr->kind == FU_VIEW)
			continue;
		sn_buf_printf(b, "group %u %s ", i, kind_name(gr->kind));
		ref_name(g, gr->root, b);
		sn_buf_puts(b, ":");
		for (uint32_t k = 0; k < gr->n; k++) {
			sn_buf_puts(b, " ");
			ref_name(g, p->members[gr->first + k], b);
			sn_buf_printf(b, "(%s)", ir_ops[g->nodes[p->members[gr->first + k]].op].name);
		}
		if (gr->kind == FU_GEMM) {
			if (gr->bias != IR_NONE) {
				sn_buf_puts(b, " bias=");
				ref_name(g, gr->bias, b);
			}
			if (gr->residual != IR_NONE) {
				sn_buf_puts(b, " residual=");
				ref_name(g, gr->residual, b);
			}
			sn_buf_puts(b, acts[gr->act]);
		}
		sn_buf_puts(b, "\n");
	}
}
