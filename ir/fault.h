/* fault.h: fault injection for tests, in the manner of SQLite's and Lua's
 * harnesses. Built only with -DSINTER_FAULT=ON, which force-includes this
 * header into every library source: malloc, calloc, realloc, strdup and
 * strndup then go through sn_fault_alloc_hit(), and ir/file.c asks
 * sn_fault_file_hit() before every system call it makes.
 *
 * Environment (read once, here and nowhere else):
 *   SINTER_FAULT_ALLOC=N   the N-th allocation fails (returns NULL)
 *   SINTER_FAULT_FILE=N    the N-th file operation fails with EIO
 *   SINTER_FAULT_COUNT=1   print the counts at exit: "sinter-fault: A allocations, F file operations"
 *   SINTER_FAULT_TRACE=1   print the stack where the failure is injected (ASan builds)
 * A failure is injected once; later calls succeed (the code must handle
 * one failure cleanly wherever it lands). Prefix: sn_fault_. */
#ifndef SINTER_FAULT_H
#define SINTER_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

bool sn_fault_alloc_hit(void);
bool sn_fault_file_hit(void);

void *sn_fault_malloc(size_t n);
void *sn_fault_calloc(size_t n, size_t k);
void *sn_fault_realloc(void *p, size_t n);
char *sn_fault_strdup(const char *s);
char *sn_fault_strndup(const char *s, size_t n);

#ifdef SINTER_FAULT
#define malloc(n) sn_fault_malloc(n)
#define calloc(n, k) sn_fault_calloc(n, k)
#define realloc(p, n) sn_fault_realloc(p, n)
#define strdup(s) sn_fault_strdup(s)
#define strndup(s, n) sn_fault_strndup(s, n)
#endif

#endif
