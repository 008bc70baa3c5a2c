/* memplan.c: liveness-based arena offsets, greedy by size (memplan.h). */
#include "passes/memplan.h"

#include <stdlib.h>
#include <string.h>

static bool is_source(const ir_node *n)
{
	return n->op == IR_OP_input || n->op == IR_OP_param || n->op == IR_OP_const;
}

void mp_plan_free(mp_plan_t *p)
{
	if (!p)
		return;
	free(p->offset);
	free(p->size);
	free(p->root);
	free(p->first);
	free(p->last);
	memset(p, 0, sizeof *p);
}

typedef struct item {
	uint32_t idx; /* into the caller's items */
	size_t size;
	uint32_t first, last, id;
} item;

static int by_size_desc(const void *a, const void *b)
{
	const item *x = a, *y = b;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

typedef struct placed {
	size_t off, end;
} placed;

static int by_offset(const void *a, const void *b)
{
	const placed *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

int mp_place(const mp_item *in, uint32_t ni, uint32_t n, size_t *offset, size_t *peak, sn_err *e)
{
	/* Greedy by size. The placed buffers that overlap a lifetime are found
	 * through per-step lists of the buffers live at that step (a buffer
	 * is listed at every step of its lifetime), so a chain of 100k nodes
	 * plans in linear time; graphs whose lifetimes sum to more than a few
	 * times their size scan every placed buffer instead, as before. Both
	 * find the same set, so the offsets are the same. */
	size_t cnt = ni ? ni : 1;
	item *items = malloc(cnt * sizeof *items);
	placed *live = malloc(cnt * sizeof *live);
	int rc = SN_OK;
	*peak = 0;
	if (!items || !live) {
		rc = sn_errf(e, SN_EINTERNAL, "memplan: out of memory");
		goto done;
	}
	uint64_t span = 0;
	for (uint32_t i = 0; i < ni; i++) {
		items[i] = (item){i, in[i].size, in[i].first, in[i].last, in[i].id};
		span += (uint64_t)in[i].last - in[i].first + 1;
	}
	qsort(items, ni, sizeof *items, by_size_desc);
	bool lists = span <= 16 * (uint64_t)n + (1u << 20);
	uint32_t *head = NULL, *next = NULL, *who = NULL, *seen = NULL;
	uint64_t nent = 0;
	if (lists) {
		/* step t's list: head[t] -> next[...] over entries, who[] the item */
		head = malloc((size_t)(n + 1) * sizeof *head);
		next = malloc((size_t)(span ? span : 1) * sizeof *next);
		who = malloc((size_t)(span ? span : 1) * sizeof *who);
		seen = calloc(cnt, sizeof *seen);
		if (!head || !next || !who || !seen) {
			rc = sn_errf(e, SN_EINTERNAL, "memplan: out of memory");
			goto lists_done;
		}
		for (uint32_t t = 0; t <= n; t++)
			head[t] = UINT32_MAX;
	}
	for (uint32_t a = 0; a < ni; a++) {
		item *it = &items[a];
		uint32_t nl = 0;
		if (lists) {
			for (uint32_t t = it->first; t <= it->last && t <= n; t++)
				for (uint32_t k = head[t]; k != UINT32_MAX; k = next[k]) {
					uint32_t b = who[k];
					if (seen[b] == a + 1)
						continue;
					seen[b] = a + 1;
					const item *o = &items[b];
					live[nl++] = (placed){offset[o->idx], offset[o->idx] + o->size};
				}
		} else {
			for (uint32_t b = 0; b < a; b++) { /* placed buffers live at the same time */
				const item *o = &items[b];
				if (o->size && o->first <= it->last && it->first <= o->last)
					live[nl++] = (placed){offset[o->idx], offset[o->idx] + o->size};
			}
		}
		qsort(live, nl, sizeof *live, by_offset);
		size_t at = 0;
		for (uint32_t b = 0; b < nl && it->size; b++) {
			if (live[b].off >= at && live[b].off - at >= it->size)
				break; /* the gap before this one fits */
			if (live[b].end > at)
				at = live[b].end;
		}
		if (!it->size)
			at = 0;
		if (at + it->size < at) {
			rc = sn_errf(e, SN_EINPUT, "memplan: the arena would exceed the address space");
			goto lists_done;
		}
		offset[it->idx] = at;
		if (at + it->size > *peak)
			*peak = at + it->size;
		if (lists && it->size)
			for (uint32_t t = it->first; t <= it->last && t <= n; t++) {
				who[nent] = a;
				next[nent] = head[t];
				head[t] = (uint32_t)nent++;
			}
	}
lists_done:
	free(head);
	free(next);
	free(who);
	free(seen);
done:
	free(items);
	free(live);
	return rc;
}

int mp_plan(const ir_graph *g, bool (*is_alias)(const ir_graph *, const ir_node *), size_t align,
	    mp_plan_t *out, sn_err *e)
{
	memset(out, 0, sizeof *out);
	if (align == 0)
		align = 1;
	if (align & (align - 1))
		return sn_errf(e, SN_EINPUT, "memplan: alignment %zu is not a power of two", align);
	uint32_t n = g->nnodes;
	out->n = n;
	size_t cnt = n ? n : 1;
	out->offset = malloc(cnt * sizeof *out->offset);
	out->size = calloc(cnt, sizeof *out->size);
	out->root = malloc(cnt * sizeof *out->root);
	out->first = calloc(cnt, sizeof *out->first);
	out->last = calloc(cnt, sizeof *out->last);
	mp_item *items = malloc(cnt * sizeof *items);
	int rc = SN_OK;
	if (!out->offset || !out->size || !out->root || !out->first || !out->last || !items) {
		rc = sn_errf(e, SN_EINTERNAL, "memplan: out of memory");
		goto done;
	}

	/* Roots, sizes and lifetimes. Operands precede users, so a view's
	 * operand already knows its root. */
	for (uint32_t i = 0; i < n; i++) {
		const ir_node *nd = &g->nodes[i];
		out->offset[i] = MP_NONE;
		out->root[i] = i;
		if (!is_source(nd) && is_alias && nd->nin >= 1 && nd->in[0] < i && is_alias(g, nd)) {
			out->root[i] = out->root[nd->in[0]];
		} else if (!is_source(nd)) {
			int64_t numel = ir_numel(&nd->shape);
			size_t es = ir_dtype_size(nd->dtype), bytes;
			if (numel < 0) {
				rc = sn_errf(e, SN_EINPUT, "memplan: node %u (%s) has unbound symbols in its shape",
					     i, ir_ops[nd->op].name);
				goto done;
			}
			if (__builtin_mul_overflow((size_t)numel, es, &bytes) ||
			    __builtin_add_overflow(bytes, align - 1, &bytes)) {
				rc = sn_errf(e, SN_EINPUT, "memplan: node %u (%s) is too large", i, ir_ops[nd->op].name);
				goto done;
			}
			out->size[i] = bytes & ~(align - 1);
		}
		out->first[i] = out->last[i] = i;
	}
	for (uint32_t i = 0; i < n; i++) {
		const ir_node *nd = &g->nodes[i];
		for (uint32_t k = 0; k < nd->nin; k++) {
			ir_ref r = nd->in[k] < n ? out->root[nd->in[k]] : IR_NONE;
			if (r != IR_NONE && out->last[r] < i)
				out->last[r] = i;
		}
		ir_ref r = out->root[i]; /* a view keeps its root alive at least this far */
		if (out->last[r] < i)
			out->last[r] = i;
	}
	for (uint32_t k = 0; k < g->noutputs; k++)
		if (g->outputs[k] < n)
			out->last[out->root[g->outputs[k]]] = n; /* past the last node */

	uint32_t ni = 0;
	for (uint32_t i = 0; i < n; i++)
		if (out->root[i] == i && !is_source(&g->nodes[i]))
			items[ni++] = (mp_item){out->size[i], out->first[i], out->last[i], i};
	size_t *off = malloc((ni ? ni : 1) * sizeof *off);
	if (!off) {
		rc = sn_errf(e, SN_EINTERNAL, "memplan: out of memory");
		goto done;
	}
	rc = mp_place(items, ni, n, off, &out->peak, e);
	for (uint32_t i = 0; i < ni && !rc; i++)
		out->offset[items[i].id] = off[i];
	free(off);
	if (rc)
		goto done;
	/* Views get their root's offset (MP_NONE when the root is a source). */
	for (uint32_t i = 0; i < n; i++)
		if (out->root[i] != i)
			out->offset[i] = out->offset[out->root[i]];
done:
	free(items);
	if (rc != SN_OK)
		mp_plan_free(out);
	return rc;
}
