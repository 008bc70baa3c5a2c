/* rewrite.h: rebuilding a graph. Passes build a new graph node by node from
 * an old one; rw keeps the map from old ids to new ids. Prefix: rw_. */
#ifndef SINTER_REWRITE_H
#define SINTER_REWRITE_H

#include "ir/ir.h"

typedef struct rw {
	const ir_graph *src;
	ir_graph *dst;
	ir_ref *map; /* src id -> dst id, IR_NONE until set */
	/* The value names dst holds, counted (a hash table over names that
	 * live in dst's arena), so that asking whether a name is taken is
	 * O(1), not a scan of dst: rebuilding stays linear in the graph. */
	const char **nkey;
	uint32_t *ncnt;
	size_t ncap, nlen;
	uint32_t nupto; /* dst nodes [0, nupto) are counted */
} rw;

/* Starts dst as an empty graph with src's function name, weights file,
 * path and symbols; map all IR_NONE. End with rw_finish or rw_abort. */
int rw_begin(rw *r, const ir_graph *src, sn_err *e);
/* Copies src node `old` into dst with its operands mapped (they must be
 * mapped already), keeping its name, location, attributes, param key and
 * const data; sets map[old]. Inputs are added as graph inputs. */
ir_ref rw_copy(rw *r, ir_ref old, sn_err *e);
/* Whether some dst node carries value name s (dst nodes added since the
 * last call are counted first). */
bool rw_name_used(rw *r, const char *s);
/* Names dst node id (NULL: no name), keeping the count; SN_EINTERNAL on
 * OOM. Names set on dst nodes must go through here, or be set before the
 * next rw_name_used (nodes are counted when first seen). */
int rw_set_name(rw *r, ir_ref id, const char *name);

/* Adds dst outputs for src's outputs through the map, frees the map, and
 * returns dst (the caller frees src if it wants). */
ir_graph *rw_finish(rw *r, sn_err *e);
void rw_abort(rw *r);

/* Copies every src node in order with rw_copy except where `fn` returns a
 * replacement: fn(r, old, ctx, e) returns the dst id standing for old, or
 * IR_NONE to copy it unchanged (fn sets e on error). DCE is not done here. */
typedef ir_ref rw_fn(rw *r, ir_ref old, void *ctx, sn_err *e);
ir_graph *rw_map(const ir_graph *src, rw_fn *fn, void *ctx, sn_err *e);

/* The number of readers of each node (graph outputs count as readers):
 * a malloc'ed array of g->nnodes counts. */
uint32_t *rw_uses(const ir_graph *g);

#endif
