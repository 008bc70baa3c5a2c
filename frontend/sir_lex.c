/* sir_lex.c: tokens of the .sir format and located diagnostics. */
#include "sir_lex.h"

#include <stdio.h>
#include <string.h>

void sir_lex_init(sir_lexer *L, const char *src, size_t len, const char *path, sn_err *e)
{
	memset(L, 0, sizeof *L);
	L->src = src;
	L->len = len;
	L->line = 1;
	L->path = path ? path : "<input>";
	L->e = e;
}

static bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_ident(int c) { return is_alpha(c) || is_digit(c); }
static bool is_name(int c) { return is_ident(c) || c == '.'; }

/* The caret line: the source line's tabs are kept so the caret aligns. */
int sir_diag(const sir_lexer *L, size_t off, uint32_t line, uint32_t col, const char *fmt, ...)
{
	if (!L->e || L->e->code != SN_OK)
		return SN_EINPUT;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (off > L->len)
		off = L->len;
	size_t bol = off - (col ? col - 1 : 0);
	if (bol > off)
		bol = 0;
	size_t eol = bol;
	while (eol < L->len && L->src[eol] != '\n')
		eol++;
	size_t shown = eol;
	if (shown > bol && L->src[shown - 1] == '\r')
		shown--;
	/* A very long line is cut so the message keeps the caret. */
	if (shown - bol > 1000)
		shown = bol + 1000;
	char caret[1040];
	size_t k = 0;
	for (size_t i = bol; i < off && k < 1000; i++)
		caret[k++] = i < shown && L->src[i] == '\t' ? '\t' : ' ';
	caret[k++] = '^';
	caret[k] = 0;
	return sn_errf(L->e, SN_EINPUT, "%s:%u:%u: error: %s\n%.*s\n%s", L->path, line, col, msg,
		       (int)(shown - bol), L->src + bol, caret);
}

int sir_diag_at(const sir_lexer *L, const sir_tok *t, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return sir_diag(L, t->off, t->line, t->col, "%s", msg);
}

bool sir_tok_is(const sir_tok *t, const char *word)
{
	return t->kind == SIR_IDENT && strlen(word) == t->n && memcmp(t->s, word, t->n) == 0;
}

void sir_tok_desc(const sir_tok *t, char *out, size_t cap)
{
	static const char *const punct[] = {
		[SIR_LPAREN] = "'('", [SIR_RPAREN] = "')'", [SIR_LBRACK] = "'['",
		[SIR_RBRACK] = "']'", [SIR_LBRACE] = "'{'", [SIR_RBRACE] = "'}'",
		[SIR_COMMA] = "','", [SIR_COLON] = "':'", [SIR_EQ] = "'='", [SIR_ARROW] = "'->'",
	};
	int n = t->n > 40 ? 40 : (int)t->n;
	const char *more = t->n > 40 ? "..." : "";
	switch (t->kind) {
	case SIR_EOF: snprintf(out, cap, "end of file"); break;
	case SIR_LOCAL: snprintf(out, cap, "%%%.*s%s", n, t->s, more); break;
	case SIR_GLOBAL: snprintf(out, cap, "@%.*s%s", n, t->s, more); break;
	case SIR_IDENT: snprintf(out, cap, "'%.*s%s'", n, t->s, more); break;
	case SIR_INT:
	case SIR_FLOAT: snprintf(out, cap, "number %.*s%s", n, t->s, more); break;
	case SIR_STRING: snprintf(out, cap, "string \"%.*s%s\"", n, t->s, more); break;
	default: snprintf(out, cap, "%s", punct[t->kind]); break;
	}
}

static int lex_error(sir_lexer *L, size_t off, const char *fmt, const char *arg)
{
	return sir_diag(L, off, L->line, (uint32_t)(off - L->line_start + 1), fmt, arg);
}

/* Skips blanks, newlines and comments. */
static void skip_space(sir_lexer *L)
{
	while (L->pos < L->len) {
		char c = L->src[L->pos];
		if (c == '\n') {
			L->pos++;
			L->line++;
			L->line_start = L->pos;
		} else if (c == ' ' || c == '\t' || c == '\r') {
			L->pos++;
		} else if (c == '#') {
			while (L->pos < L->len && L->src[L->pos] != '\n')
				L->pos++;
		} else {
			break;
		}
	}
}

/* A number: [-]digits[.digits][(e|E)[+-]digits], or -inf. */
static int lex_number(sir_lexer *L, sir_tok *t)
{
	const char *s = L->src;
	size_t p = L->pos, end = L->len;
	bool neg = s[p] == '-';
	if (neg)
		p++;
	if (p + 3 <= end && memcmp(s + p, "inf", 3) == 0 && (p + 3 == end || !is_name(s[p + 3]))) {
		t->kind = SIR_FLOAT;
		L->pos = p + 3;
		return SN_OK;
	}
	bool isf = false;
	uint64_t mag = 0;
	bool big = false;
	while (p < end && is_digit(s[p])) {
		unsigned dg = (unsigned)(s[p] - '0');
		if (mag > (UINT64_MAX - dg) / 10)
			big = true;
		else
			mag = mag * 10 + dg;
		p++;
	}
	if (p < end && s[p] == '.') {
		isf = true;
		p++;
		if (p >= end || !is_digit(s[p]))
			goto bad;
		while (p < end && is_digit(s[p]))
			p++;
	}
	if (p < end && (s[p] == 'e' || s[p] == 'E')) {
		isf = true;
		p++;
		if (p < end && (s[p] == '+' || s[p] == '-'))
			p++;
		if (p >= end || !is_digit(s[p]))
			goto bad;
		while (p < end && is_digit(s[p]))
			p++;
	}
	if (p < end && is_name(s[p]))
		goto bad;
	t->kind = isf ? SIR_FLOAT : SIR_INT;
	if (!isf) {
		uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
		if (big || mag > lim)
			t->overflow = true;
		else
			t->ival = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	}
	L->pos = p;
	return SN_OK;
bad:
	while (p < end && (is_name(s[p]) || s[p] == '+' || s[p] == '-'))
		p++;
	{
		char text[48];
		size_t n = p - t->off > 40 ? 40 : p - t->off;
		snprintf(text, sizeof text, "%.*s", (int)n, s + t->off);
		return lex_error(L, t->off, "malformed number '%s'", text);
	}
}

static int lex_string(sir_lexer *L, sir_tok *t)
{
	size_t p = L->pos + 1;
	while (p < L->len && L->src[p] != '"') {
		char c = L->src[p];
		if (c == '\n')
			break;
		if ((unsigned char)c < 0x20 && c != '\t') {
			char what[8];
			snprintf(what, sizeof what, "0x%02x", (unsigned char)c);
			return lex_error(L, p, "control character %s in string", what);
		}
		if (c == '\\') {
			if (p + 1 < L->len && (L->src[p + 1] == '"' || L->src[p + 1] == '\\')) {
				p += 2;
				continue;
			}
			if (p + 1 < L->len && L->src[p + 1] != '\n') {
				char esc[3] = {'\\', L->src[p + 1], 0};
				return lex_error(L, p, "unknown escape '%s' in string", esc);
			}
		}
		p++;
	}
	if (p >= L->len || L->src[p] != '"')
		return lex_error(L, t->off, "%s", "unterminated string");
	t->kind = SIR_STRING;
	t->s = L->src + L->pos + 1;
	t->n = p - L->pos - 1;
	L->pos = p + 1;
	return SN_OK;
}

int sir_next(sir_lexer *L)
{
	skip_space(L);
	sir_tok *t = &L->tok;
	memset(t, 0, sizeof *t);
	t->off = L->pos;
	t->line = L->line;
	t->col = (uint32_t)(L->pos - L->line_start + 1);
	t->s = L->src + L->pos;
	if (L->pos >= L->len) {
		t->kind = SIR_EOF;
		return SN_OK;
	}
	const char *s = L->src;
	char c = s[L->pos];
	int rc = SN_OK;
	switch (c) {
	case '(': t->kind = SIR_LPAREN; L->pos++; break;
	case ')': t->kind = SIR_RPAREN; L->pos++; break;
	case '[': t->kind = SIR_LBRACK; L->pos++; break;
	case ']': t->kind = SIR_RBRACK; L->pos++; break;
	case '{': t->kind = SIR_LBRACE; L->pos++; break;
	case '}': t->kind = SIR_RBRACE; L->pos++; break;
	case ',': t->kind = SIR_COMMA; L->pos++; break;
	case ':': t->kind = SIR_COLON; L->pos++; break;
	case '=': t->kind = SIR_EQ; L->pos++; break;
	case '"': return lex_string(L, t);
	case '%':
		if (L->pos + 1 < L->len && s[L->pos + 1] == '"') {
			/* %"name": a value name written verbatim (ONNX's input:0);
			 * no control character, quote or backslash inside */
			size_t p = L->pos + 2;
			while (p < L->len && s[p] != '"' && s[p] != '\\' && (unsigned char)s[p] >= 0x20 && s[p] != 0x7f)
				p++;
			if (p >= L->len || s[p] != '"')
				return lex_error(L, L->pos, "%s", "unterminated quoted name (a quote, backslash or "
								"control character inside?)");
			if (p == L->pos + 2)
				return lex_error(L, L->pos, "%s", "empty quoted name");
			t->kind = SIR_LOCAL;
			t->s = s + L->pos + 2;
			t->n = p - L->pos - 2;
			L->pos = p + 1;
			return SN_OK;
		}
		/* fall through */
	case '@': {
		size_t p = L->pos + 1;
		while (p < L->len && is_name(s[p]))
			p++;
		if (p == L->pos + 1)
			return lex_error(L, L->pos, "expected a name after '%s'", c == '%' ? "%" : "@");
		t->kind = c == '%' ? SIR_LOCAL : SIR_GLOBAL;
		t->s = s + L->pos + 1;
		t->n = p - L->pos - 1;
		L->pos = p;
		return SN_OK;
	}
	case '-':
		if (L->pos + 1 < L->len && s[L->pos + 1] == '>') {
			t->kind = SIR_ARROW;
			L->pos += 2;
			break;
		}
		if (L->pos + 1 < L->len && (is_digit(s[L->pos + 1]) || s[L->pos + 1] == 'i'))
			rc = lex_number(L, t);
		else
			return lex_error(L, L->pos, "unexpected character %s", "'-'");
		break;
	default:
		if (is_digit(c)) {
			rc = lex_number(L, t);
		} else if (is_alpha(c)) {
			size_t p = L->pos;
			while (p < L->len && is_ident(s[p]))
				p++;
			t->kind = SIR_IDENT;
			L->pos = p;
		} else {
			char what[16];
			if (c > 32 && c < 127)
				snprintf(what, sizeof what, "'%c'", c);
			else
				snprintf(what, sizeof what, "byte 0x%02x", (unsigned char)c);
			return lex_error(L, L->pos, "unexpected character %s", what);
		}
	}
	if (rc != SN_OK)
		return rc;
	t->n = L->pos - t->off;
	return SN_OK;
}
