/* wstore.h: a weight store: named host tensors (the values of params, by
 * key). Weights live here, not in the graph, so graphs stay weight-free for
 * hashing and printing; passes that derive weights (conv-BN folding,
 * layout, precision) read and add entries by key. Prefix: ir_ws_. */
#ifndef SINTER_WSTORE_H
#define SINTER_WSTORE_H

#include "ir/ir.h"

typedef struct ir_wstore ir_wstore;

/* Created by ir_ws_new, freed (with every tensor's data) by ir_ws_free. */
ir_wstore *ir_ws_new(void);
/* A store layered over base (which must outlive it): lookups fall through
 * to base, additions stay here. Freed by ir_ws_free (base is not). */
ir_wstore *ir_ws_new_over(const ir_wstore *base);
void ir_ws_free(ir_wstore *ws);

/* Adds or replaces key's tensor. The store takes ownership of t->data,
 * which must come from malloc (on failure it is freed too). */
int ir_ws_put(ir_wstore *ws, const char *key, ir_tensor t, sn_err *e);
/* key's tensor, or NULL. */
const ir_tensor *ir_ws_get(const ir_wstore *ws, const char *key);
/* Count and keys of this layer's own entries. */
size_t ir_ws_count(const ir_wstore *ws);
const char *ir_ws_key(const ir_wstore *ws, size_t i);

/* Copies key's tensor into dst as dtype `want` (dst holds numel * size
 * bytes); the shape must equal `shape`. Floats convert with correct
 * rounding. SN_EINPUT naming the key when missing or mismatched. */
int ir_ws_read_as(const ir_wstore *ws, const char *key, ir_dtype want, const ir_shape *shape,
		  void *dst, sn_err *e);

#endif
