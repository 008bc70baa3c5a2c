/* memplan.h: the memory planner. Gives every computed value an offset in
 * one device arena so that buffers are reused after their last reader.
 * Prefix: mp_.
 *
 * Liveness is in node order (the order the plan runs): a buffer is live
 * from the node that writes it to its last reader, inclusive, so a node's
 * output never shares bytes with its operands. Graph outputs live to the
 * end. A view (is_alias: reshape and friends) has no storage of its own:
 * it uses its root's (the first non-view up its chain of operand 0) and
 * extends the root's lifetime to the view's readers.
 *
 * Offsets: greedy by size. Buffers are placed largest first (ties: earlier
 * first); each goes into the lowest gap, among the buffers already placed
 * whose lifetimes overlap its own, that is large enough (first fit in
 * offset order), else after the last of them. Sizes are rounded up to
 * `align`, so every offset is a multiple of it. The peak is the largest
 * end offset. */
#ifndef SINTER_MEMPLAN_H
#define SINTER_MEMPLAN_H

#include "ir/ir.h"

#define MP_NONE SIZE_MAX

typedef struct mp_plan_t {
	uint32_t n;      /* g->nnodes */
	size_t *offset;  /* per node: arena offset; MP_NONE for sources (input,
			  * param, const) and views of sources, which live outside
			  * the arena */
	size_t *size;    /* per node: bytes of its own buffer, rounded up to align;
			  * 0 for sources and views */
	ir_ref *root;    /* per node: the node that owns its storage (itself
			  * unless it is a view) */
	uint32_t *first, *last; /* per owning node: the node range it is live */
	size_t peak;     /* arena bytes needed */
} mp_plan_t;

/* Plans g (fully shaped). is_alias may be NULL (no views). align: a power
 * of two (0 means 1). Free with mp_plan_free. SN_EINPUT when a shape has
 * unbound symbols or sizes overflow; SN_EINTERNAL on OOM. */
int mp_plan(const ir_graph *g, bool (*is_alias)(const ir_graph *, const ir_node *), size_t align,
	    mp_plan_t *out, sn_err *e);
void mp_plan_free(mp_plan_t *p);

/* The placement alone, for callers that know their buffers' lifetimes (the
 * fused plan: steps are fusion groups, not nodes). items[i]: a buffer of
 * size bytes (already a multiple of the alignment) live over the steps
 * [first, last], last <= nsteps; id breaks ties (earlier first). Fills
 * offset[i] and *peak with the same greedy rule as mp_plan. */
typedef struct mp_item {
	size_t size;
	uint32_t first, last, id;
} mp_item;
int mp_place(const mp_item *items, uint32_t n, uint32_t nsteps, size_t *offset, size_t *peak, sn_err *e);

#endif
