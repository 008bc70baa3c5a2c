/* base.h: what every internal module shares: status codes, the error record,
 * the bump arena, and small helpers. Prefix: sn_. */
#ifndef SINTER_BASE_H
#define SINTER_BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* Status codes double as the CLI's exit codes (DESIGN.md, Errors). */
enum {
	SN_OK = 0,
	SN_EINPUT = 1,    /* bad input: malformed file, shape mismatch, ... */
	SN_EUSAGE = 2,    /* wrong flag or argument */
	SN_EENV = 3,      /* environment: no GPU, missing library, I/O */
	SN_EINTERNAL = 4, /* a bug in sinter */
};

/* An error: the first error set wins, later ones are ignored, so a caller
 * deep in a stack keeps the most precise message. */
typedef struct sn_err {
	int code;
	char msg[4096];
} sn_err;

/* Sets e (if e->code is SN_OK) and returns code. */
int sn_errf(sn_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int sn_verrf(sn_err *e, int code, const char *fmt, va_list ap);

/* A bump arena: allocation is a pointer bump, freeing is one call.
 * Created by sn_arena_new, freed by sn_arena_free. Returns NULL on OOM. */
typedef struct sn_arena sn_arena;
sn_arena *sn_arena_new(void);
void sn_arena_free(sn_arena *a);
void *sn_alloc(sn_arena *a, size_t n);   /* zeroed, 16-byte aligned; NULL on OOM */
char *sn_strdup(sn_arena *a, const char *s);
char *sn_strndup(sn_arena *a, const char *s, size_t n);
size_t sn_arena_used(const sn_arena *a);

/* A growable string buffer (heap). Free with sn_buf_free. */
typedef struct sn_buf {
	char *s;
	size_t len, cap;
	bool oom;
} sn_buf;
void sn_buf_printf(sn_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sn_buf_puts(sn_buf *b, const char *s);
void sn_buf_free(sn_buf *b);

/* Shortest decimal text that reads back (strtod) to exactly x; "inf",
 * "-inf", "nan" for the specials. out must hold 32 bytes. */
void sn_fmt_double(char *out, double x);
/* Same for a value that is exactly a float (shortest that round-trips as float). */
void sn_fmt_float(char *out, float x);

#define SN_COUNT(a) (sizeof(a) / sizeof((a)[0]))

#endif
