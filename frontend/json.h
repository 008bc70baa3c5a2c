/* json.h: a small streaming JSON reader for hostile input (RFC 8259).
 * The caller drives it value by value, so memory stays proportional to what
 * the caller keeps, not to the text; values it does not want are validated
 * and skipped. Nesting is limited to JS_MAX_DEPTH. Prefix: js_. */
#ifndef SINTER_JSON_H
#define SINTER_JSON_H

#include "ir/base.h"

#define JS_MAX_DEPTH 64

/* A cursor over text[0, len). Errors read "WHAT byte POS: MESSAGE", where
 * POS is the offset in text. Strings are decoded into arena a. */
typedef struct js_cur {
	const char *text;
	size_t len, pos;
	const char *what;
	sn_arena *a;
	sn_err *e;
} js_cur;

void js_init(js_cur *c, const char *text, size_t len, const char *what, sn_arena *a, sn_err *e);
/* Sets e with the cursor's position and returns SN_EINPUT. */
int js_fail(js_cur *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Skips whitespace; returns the next byte, or 0 at the end of the text. */
char js_peek(js_cur *c);
/* Skips whitespace and consumes ch, or fails with "expected ch ctx". */
int js_expect(js_cur *c, char ch, const char *ctx);
/* Skips whitespace; if the next byte is ch, consumes it and returns true. */
bool js_accept(js_cur *c, char ch);
/* Reads a string: checks escapes and UTF-8; *out (if out) gets the decoded,
 * NUL-terminated text in the arena and *n its length (it may hold NULs
 * written as \u0000). */
int js_string(js_cur *c, char **out, size_t *n);
/* Reads a number (JSON grammar); *raw points to its text in the input. */
int js_number(js_cur *c, const char **raw, size_t *n);
/* Validates and skips one value of any type. */
int js_skip(js_cur *c);
/* Fails unless only whitespace remains. */
int js_end(js_cur *c);

/* Whether s[0, n) is valid UTF-8 (no overlong forms, surrogates, or code
 * points above U+10FFFF). */
bool js_utf8_valid(const char *s, size_t n);

/* The non-negative integer written as raw (from js_number): 0 and *v on
 * success; 1 if negative, 2 if not an integer (fraction or exponent),
 * 3 if it exceeds INT64_MAX. */
int js_uint(const char *raw, size_t n, int64_t *v);

#endif
