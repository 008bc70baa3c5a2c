/* onnx_ops_einsum.c: ONNX Einsum, which sinter has no IR op for, written
 * as transposes, reshapes and a matmul per pair of terms. */
#include "onnx_build.h"

#include <stdio.h>
#include <string.h>

/* ---- Einsum ---- */

/* An operand while contracting: its value and one letter per dim. */
typedef struct eterm {
	ir_ref v;
	char l[IR_MAX_RANK + 1];
} eterm;

/* Sums x over the letters not in keep. */
static int ein_reduce(ox_ctx *c, const onnx_node *nd, eterm *x, const char *keep)
{
	ir_attrs a;
	ir_attrs_init(IR_OP_reduce_sum, &a);
	char rest[IR_MAX_RANK + 1];
	int nr = 0;
	for (int i = 0; x->l[i]; i++) {
		if (strchr(keep, x->l[i]))
			rest[nr++] = x->l[i];
		else
			a.axes.v[a.axes.n++] = i;
	}
	rest[nr] = 0;
	if (!a.axes.n)
		return SN_OK;
	if ((x->v = emit1(c, nd, IR_OP_reduce_sum, x->v, &a)) == IR_NONE)
		return c->e->code;
	memcpy(x->l, rest, (size_t)nr + 1);
	return SN_OK;
}

/* The dims of x for the letters of group, in order; the product (one dim
 * of 1 for an empty group) into *prod (-1: a product over a symbol). */
static void ein_group(ox_ctx *c, const eterm *x, const char *group, ir_shape *dims, int64_t *prod)
{
	ir_shape s = shape_of(c, x->v);
	dims->rank = 0;
	*prod = 1;
	for (int i = 0; group[i]; i++) {
		int64_t d = s.d[strchr(x->l, group[i]) - x->l];
		dims->d[dims->rank++] = d;
		if (d < 0 && group[1])
			*prod = -1;
		else if (*prod >= 0)
			*prod = group[1] ? *prod * d : d;
	}
}

/* x's dims permuted into the order of letters (a permutation of x->l). */
static ir_ref ein_order(ox_ctx *c, const onnx_node *nd, const eterm *x, const char *letters)
{
	int perm[IR_MAX_RANK], r = (int)strlen(letters);
	for (int i = 0; i < r; i++)
		perm[i] = (int)(strchr(x->l, letters[i]) - x->l);
	return transpose(c, nd, x->v, perm, r);
}

/* dst = a b c (letters), cut to cap - 1. */
static void cat3(char *dst, size_t cap, const char *a, const char *b, const char *c)
{
	size_t k = 0;
	for (const char *p[3] = {a, b, c}, **q = p; q < p + 3; q++)
		for (const char *s = *q; *s && k + 1 < cap; s++)
			dst[k++] = *s;
	dst[k] = 0;
}

/* a and b contracted into a term with the letters of both that keep
 * holds: batch letters (both, kept), then a's own, then b's own, through
 * one matmul of [batch..., L, K] by [batch..., K, R]. */
static int ein_pair(ox_ctx *c, const onnx_node *nd, eterm *a, eterm *b, const char *keep, eterm *out)
{
	char batch[IR_MAX_RANK + 1] = "", con[IR_MAX_RANK + 1] = "", left[IR_MAX_RANK + 1] = "",
	     right[IR_MAX_RANK + 1] = "";
	int nb = 0, nc = 0, nl = 0, nr = 0;
	for (int i = 0; a->l[i]; i++) {
		char ch = a->l[i];
		if (!strchr(b->l, ch))
			left[nl++] = ch;
		else if (strchr(keep, ch))
			batch[nb++] = ch;
		else
			con[nc++] = ch;
	}
	for (int i = 0; b->l[i]; i++)
		if (!strchr(a->l, b->l[i]))
			right[nr++] = b->l[i];
	batch[nb] = con[nc] = left[nl] = right[nr] = 0;
	char la[2 * IR_MAX_RANK + 1], lb[2 * IR_MAX_RANK + 1];
	cat3(la, sizeof la, batch, left, con);
	cat3(lb, sizeof lb, batch, con, right);
	ir_shape bd, ld, cd, rd, bbd;
	int64_t bp, lp, cp, rp;
	ein_group(c, a, batch, &bd, &bp);
	ein_group(c, b, batch, &bbd, &bp);
	ein_group(c, a, left, &ld, &lp);
	ein_group(c, a, con, &cd, &cp);
	ein_group(c, b, right, &rd, &rp);
	if (lp < 0 || cp < 0 || rp < 0)
		return ox_fail(c, nd, "einsum: a group of several dims holds a symbolic dim; bind it to a value when loading the model");
	if (nb + 2 > IR_MAX_RANK || nb + nl + nr > IR_MAX_RANK)
		return ox_fail(c, nd, "einsum: too many dims");
	ir_shape sa = bd, sb = bbd;
	sa.d[sa.rank++] = lp;
	sa.d[sa.rank++] = cp;
	sb.d[sb.rank++] = cp;
	sb.d[sb.rank++] = rp;
	ir_ref A = reshape(c, nd, ein_order(c, nd, a, la), &sa);
	ir_ref B = reshape(c, nd, ein_order(c, nd, b, lb), &sb);
	ir_ref y = emit2(c, nd, IR_OP_matmul, A, B);
	if (y == IR_NONE)
		return c->e->code;
	ir_shape ys = shape_of(c, y), so = {0};
	for (int i = 0; i < nb; i++)
		so.d[so.rank++] = ys.d[i];
	for (int i = 0; i < nl; i++)
		so.d[so.rank++] = ld.d[i];
	for (int i = 0; i < nr; i++)
		so.d[so.rank++] = rd.d[i];
	out->v = reshape(c, nd, y, &so);
	cat3(out->l, sizeof out->l, batch, left, right);
	return out->v == IR_NONE ? c->e->code : SN_OK;
}

/* The letters of one term of the equation; "..." becomes the letters
 * '0'.. (ellipsis dims, aligned from the right) for a rank-r operand. */
static int ein_term(ox_ctx *c, const onnx_node *nd, const char *s, size_t n, int rank, char *out, int *nell)
{
	int k = 0, named = 0;
	for (size_t i = 0; i < n; i++)
		named += s[i] != '.' && s[i] != ' ';
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ')
			continue;
		if (s[i] == '.') {
			if (i + 2 >= n + 0 || s[i + 1] != '.' || s[i + 2] != '.')
				return ox_fail(c, nd, "einsum: malformed ellipsis");
			int ne = rank < 0 ? *nell : rank - named;
			if (ne < 0 || (*nell >= 0 && rank >= 0 && ne > *nell && *nell != ne))
				return ox_fail(c, nd, "einsum: ellipsis does not fit the operand's rank");
			if (*nell < ne)
				*nell = ne;
			for (int j = 0; j < ne && k < IR_MAX_RANK; j++)
				out[k++] = (char)('0' + (*nell - ne) + j);
			i += 2;
			continue;
		}
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
			return ox_fail(c, nd, "einsum: unexpected character '%c' in the equation", s[i]);
		if (k >= IR_MAX_RANK)
			return ox_fail(c, nd, "einsum: a term has too many letters");
		out[k++] = s[i];
	}
	out[k] = 0;
	for (int i = 0; i < k; i++)
		if (strchr(out + i + 1, out[i]))
			return ox_fail(c, nd, "einsum: repeated letter '%c' in one term (diagonals) is not supported", out[i]);
	return SN_OK;
}

int ox_tr_einsum(ox_ctx *c, const onnx_node *nd)
{
	const onnx_attr *at = ox_attr(nd, "equation");
	char eq[256];
	if (!at || !at->s.n || at->s.n >= sizeof eq || memchr(at->s.p, 0, at->s.n))
		return ox_fail(c, nd, "equation is required (at most %zu characters)", sizeof eq - 1);
	memcpy(eq, at->s.p, at->s.n);
	eq[at->s.n] = 0;
	const char *arrow = strstr(eq, "->");
	size_t lhs = arrow ? (size_t)(arrow - eq) : strlen(eq);
	if (nd->ninputs < 1 || nd->ninputs > 8)
		return ox_fail(c, nd, "einsum: 1 to 8 operands are supported");
	eterm t[8];
	int nell = -1;
	size_t start = 0, k = 0;
	for (size_t i = 0; i <= lhs; i++) {
		if (i < lhs && eq[i] != ',')
			continue;
		if (k >= nd->ninputs)
			return ox_fail(c, nd, "einsum: the equation has more terms than inputs");
		if ((t[k].v = ox_need(c, nd, k)) == IR_NONE)
			return c->e->code;
		if (ein_term(c, nd, eq + start, i - start, shape_of(c, t[k].v).rank, t[k].l, &nell))
			return c->e->code;
		if ((int)strlen(t[k].l) != shape_of(c, t[k].v).rank)
			return ox_fail(c, nd, "einsum: term %zu has %zu letters for an operand of rank %d", k,
				       strlen(t[k].l), shape_of(c, t[k].v).rank);
		k++;
		start = i + 1;
	}
	if (k != nd->ninputs)
		return ox_fail(c, nd, "einsum: the equation has %zu terms for %zu inputs", k, nd->ninputs);
	char outl[IR_MAX_RANK + 1] = "";
	if (arrow) {
		if (ein_term(c, nd, arrow + 2, strlen(arrow + 2), -1, outl, &nell))
			return c->e->code;
	} else { /* implicit: the ellipsis, then letters seen once, sorted */
		int no = 0;
		for (int j = 0; j < nell; j++)
			outl[no++] = (char)('0' + j);
		for (int ch = 'A'; ch <= 'z'; ch++) {
			int seen = 0;
			for (size_t i = 0; i < k; i++)
				seen += strchr(t[i].l, ch) != NULL && ch != 0;
			if (seen == 1 && no < IR_MAX_RANK && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
				outl[no++] = (char)ch;
		}
		outl[no] = 0;
	}
	for (int i = 0; outl[i]; i++) {
		bool found = false;
		for (size_t j = 0; j < k; j++)
			found |= strchr(t[j].l, outl[i]) != NULL;
		if (!found)
			return ox_fail(c, nd, "einsum: output letter '%c' is in no input", outl[i]);
	}
	/* fold left to right; a letter is kept while the output or a later
	 * operand needs it */
	eterm acc = t[0];
	for (size_t i = 0; i < k; i++) {
		char keep[IR_MAX_RANK * 9 + 1];
		snprintf(keep, sizeof keep, "%s", outl);
		for (size_t j = i + 1; j < k; j++)
			strncat(keep, t[j].l, sizeof keep - strlen(keep) - 1);
		if (i == 0) {
			if (ein_reduce(c, nd, &acc, keep))
				return c->e->code;
			continue;
		}
		/* letters only one side has and nobody needs: summed first */
		char keep_a[sizeof keep + IR_MAX_RANK + 1], keep_b[sizeof keep + IR_MAX_RANK + 1];
		snprintf(keep_a, sizeof keep_a, "%s%s", keep, t[i].l);
		snprintf(keep_b, sizeof keep_b, "%s%s", keep, acc.l);
		eterm b = t[i];
		if (ein_reduce(c, nd, &acc, keep_a) || ein_reduce(c, nd, &b, keep_b) ||
		    ein_pair(c, nd, &acc, &b, keep, &acc))
			return c->e->code;
	}
	if (ein_reduce(c, nd, &acc, outl))
		return c->e->code;
	if (strlen(acc.l) != strlen(outl))
		return ox_fail(c, nd, "einsum: could not form the output");
	return bind(c, nd, ein_order(c, nd, &acc, outl));
}
