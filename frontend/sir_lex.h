/* sir_lex.h: the .sir lexer and located diagnostics, internal to the
 * frontend. Newlines are whitespace: the grammar needs no terminators. */
#ifndef SINTER_SIR_LEX_H
#define SINTER_SIR_LEX_H

#include "ir/base.h"

typedef enum sir_tok_kind {
	SIR_EOF,
	SIR_LOCAL,  /* %name: text excludes the '%' */
	SIR_GLOBAL, /* @name: text excludes the '@' */
	SIR_IDENT,
	SIR_INT,    /* [-]digits */
	SIR_FLOAT,  /* [-]digits.digits[e[+-]digits], [-]digits e..., -inf */
	SIR_STRING, /* text is the raw body between the quotes, escapes kept */
	SIR_LPAREN, SIR_RPAREN, SIR_LBRACK, SIR_RBRACK, SIR_LBRACE, SIR_RBRACE,
	SIR_COMMA, SIR_COLON, SIR_EQ, SIR_ARROW,
} sir_tok_kind;

typedef struct sir_tok {
	sir_tok_kind kind;
	const char *s; /* text in the source */
	size_t n;
	size_t off;    /* byte offset of the token's first character */
	uint32_t line, col;
	bool overflow; /* SIR_INT that does not fit int64 */
	int64_t ival;  /* SIR_INT's value */
} sir_tok;

typedef struct sir_lexer {
	const char *src;
	size_t len, pos;
	uint32_t line;
	size_t line_start;
	const char *path;
	sir_tok tok; /* the current token */
	sn_err *e;
} sir_lexer;

void sir_lex_init(sir_lexer *L, const char *src, size_t len, const char *path, sn_err *e);
/* Reads the next token into L->tok; SN_EINPUT (e set) on a bad token. */
int sir_next(sir_lexer *L);
/* A short description of a token for messages: "'('", "end of file",
 * "identifier 'foo'", "%x", "integer 3", "string \"k\"". */
void sir_tok_desc(const sir_tok *t, char *out, size_t cap);
bool sir_tok_is(const sir_tok *t, const char *word); /* an identifier equal to word */

/* Sets e to "path:line:col: error: MSG\nSOURCE LINE\nCARET" for the
 * position off (line/col as counted by the lexer). Returns SN_EINPUT. */
int sir_diag(const sir_lexer *L, size_t off, uint32_t line, uint32_t col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
int sir_diag_at(const sir_lexer *L, const sir_tok *t, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
