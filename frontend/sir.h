/* sir.h: the .sir text format (docs/IR.md): parser with file:line:col
 * diagnostics. The canonical printer is ir_print (ir/print.c). Prefix: sir_. */
#ifndef SINTER_SIR_H
#define SINTER_SIR_H

#include "ir/ir.h"

/* A value for a symbolic dim, e.g. {"N", 32} from --shape N=32. */
typedef struct sir_bind {
	const char *name;
	int64_t value;
} sir_bind;

/* Parses .sir text (src need not be NUL-terminated) into a new graph,
 * freed with ir_graph_free. path is used in messages (NULL: "<input>").
 * A bound symbol is replaced by its value everywhere (input, param and
 * const types, dims attributes), so a fully bound graph has no symbol.
 * Errors: SN_EINPUT with "path:line:col: error: message", the source line
 * and a caret line; SN_EUSAGE for a bad binding ("symbol M is bound but
 * FILE has no symbol M"); SN_EINTERNAL on OOM. *out is NULL on error. */
int sir_parse(const char *src, size_t len, const char *path, const sir_bind *binds,
	      size_t nbinds, ir_graph **out, sn_err *e);

/* The largest .sir file read (a text model of millions of nodes fits). */
#define SIR_MAX_FILE ((uint64_t)1 << 30)

/* Reads path and parses it (a missing or unreadable file, or one that is
 * not a regular file or is larger than SIR_MAX_FILE, is SN_EINPUT:
 * "cannot read PATH: reason"); the graph's path is path. */
int sir_parse_file(const char *path, const sir_bind *binds, size_t nbinds, ir_graph **out,
		   sn_err *e);

#endif
