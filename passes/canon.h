/* canon.h: what canon.c (the driver) and canon_rules.c (the algebraic
 * rules) share. Internal to passes/. Prefix: canon_. */
#ifndef SINTER_CANON_H
#define SINTER_CANON_H

#include "passes/rewrite.h"

/* One sweep's state: the rebuild and the hash-consing table of dst. */
typedef struct canon {
	rw r;
	ir_ref *tab; /* open addressing over dst ids, IR_NONE empty */
	size_t cap, cnt;
	unsigned changes;
} canon;

/* The dst node standing for n (a node not in dst whose operands are dst
 * ids; its type is inferred here): an identical existing node, else a new
 * one, which takes like's name (when free) and location. IR_NONE with e
 * set when n does not type-check. */
ir_ref canon_emit(canon *c, const ir_node *n, const ir_node *like, sn_err *e);

/* An algebraic rule: a node of op `root` that `match`es (n is the node
 * about to be emitted: operands are dst ids, type inferred) is replaced by
 * what `rewrite` returns, a dst node of n's type. */
typedef struct canon_rule {
	const char *name;
	ir_op root;
	bool (*match)(const ir_graph *dst, const ir_node *n);
	ir_ref (*rewrite)(canon *c, const ir_node *n, const ir_node *like, sn_err *e);
} canon_rule;

extern const canon_rule canon_rules[];
extern const size_t canon_nrules;

#endif
