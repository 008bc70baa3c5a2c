/* wstore.c: the weight store, an open-addressing hash map from key to
 * tensor plus the insertion order. */
#include "ir/wstore.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
	char *key;
	ir_tensor t;
} entry;

struct ir_wstore {
	entry *items; /* insertion order */
	size_t n, cap;
	uint32_t *slot; /* 1 + index into items, 0 = empty */
	size_t nslots;
	const ir_wstore *base; /* looked up when a key is not here */
};

ir_wstore *ir_ws_new(void)
{
	return calloc(1, sizeof(ir_wstore));
}

ir_wstore *ir_ws_new_over(const ir_wstore *base)
{
	ir_wstore *ws = calloc(1, sizeof(ir_wstore));
	if (ws)
		ws->base = base;
	return ws;
}

void ir_ws_free(ir_wstore *ws)
{
	if (!ws)
		return;
	for (size_t i = 0; i < ws->n; i++) {
		free(ws->items[i].key);
		free(ws->items[i].t.data);
	}
	free(ws->items);
	free(ws->slot);
	free(ws);
}

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The slot holding key, or the empty slot where it would go. */
static size_t find(const ir_wstore *ws, const char *key)
{
	size_t mask = ws->nslots - 1, i = hash(key) & mask;
	while (ws->slot[i] && strcmp(ws->items[ws->slot[i] - 1].key, key))
		i = (i + 1) & mask;
	return i;
}

static int rehash(ir_wstore *ws)
{
	size_t ns = ws->nslots ? ws->nslots * 2 : 64;
	uint32_t *slot = calloc(ns, sizeof *slot);
	if (!slot)
		return -1;
	free(ws->slot);
	ws->slot = slot;
	ws->nslots = ns;
	for (size_t k = 0; k < ws->n; k++)
		ws->slot[find(ws, ws->items[k].key)] = (uint32_t)(k + 1);
	return 0;
}

int ir_ws_put(ir_wstore *ws, const char *key, ir_tensor t, sn_err *e)
{
	if ((ws->n + 1) * 2 > ws->nslots && rehash(ws)) {
		free(t.data);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	size_t s = find(ws, key);
	if (ws->slot[s]) {
		entry *it = &ws->items[ws->slot[s] - 1];
		free(it->t.data);
		it->t = t;
		return SN_OK;
	}
	if (ws->n == ws->cap) {
		size_t cap = ws->cap ? ws->cap * 2 : 64;
		entry *items = realloc(ws->items, cap * sizeof *items);
		if (!items) {
			free(t.data);
			return sn_errf(e, SN_EINTERNAL, "out of memory");
		}
		ws->items = items;
		ws->cap = cap;
	}
	char *k = strdup(key);
	if (!k) {
		free(t.data);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	ws->items[ws->n] = (entry){k, t};
	ws->slot[s] = (uint32_t)++ws->n;
	return SN_OK;
}

const ir_tensor *ir_ws_get(const ir_wstore *ws, const char *key)
{
	if (!ws)
		return NULL;
	if (!ws->nslots)
		return ir_ws_get(ws->base, key);
	size_t s = find(ws, key);
	return ws->slot[s] ? &ws->items[ws->slot[s] - 1].t : ir_ws_get(ws->base, key);
}

size_t ir_ws_count(const ir_wstore *ws)
{
	return ws ? ws->n : 0;
}

const char *ir_ws_key(const ir_wstore *ws, size_t i)
{
	return i < ws->n ? ws->items[i].key : NULL;
}

int ir_ws_read_as(const ir_wstore *ws, const char *key, ir_dtype want, const ir_shape *shape,
		  void *dst, sn_err *e)
{
	const ir_tensor *t = ir_ws_get(ws, key);
	if (!t)
		return sn_errf(e, SN_EINPUT, "no weight \"%s\"", key);
	if (!ir_shape_eq(&t->shape, shape))
		return sn_errf(e, SN_EINPUT, "weight \"%s\" has another shape than its param", key);
	size_t n = (size_t)ir_numel(shape);
	if (t->dtype == want) {
		memcpy(dst, t->data, n * ir_dtype_size(want));
		return SN_OK;
	}
	if (t->dtype == IR_F32 && want == IR_BF16) {
		/* The common case (--precision bf16) on a fast path: round to
		 * nearest even on the bits, exact for every finite f32; NaN stays
		 * a quiet NaN. Same results as ir_store, checked in test_wstore. */
		const uint32_t *src = t->data;
		uint16_t *out = dst;
		for (size_t i = 0; i < n; i++) {
			uint32_t u = src[i];
			if ((u & 0x7fffffffu) > 0x7f800000u)
				out[i] = (uint16_t)((u >> 16) | 0x40u);
			else
				out[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
		}
		return SN_OK;
	}
	for (size_t i = 0; i < n; i++)
		ir_store(want, dst, i, ir_load(t->dtype, t->data, i));
	return SN_OK;
}
