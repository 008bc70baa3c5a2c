/* json.c: the streaming JSON reader (json.h). Every read checks the bound
 * first; nothing here reads past text + len. */
#include "json.h"

#include <stdio.h>
#include <string.h>

void js_init(js_cur *c, const char *text, size_t len, const char *what, sn_arena *a, sn_err *e)
{
	c->text = text;
	c->len = len;
	c->pos = 0;
	c->what = what;
	c->a = a;
	c->e = e;
}

int js_fail(js_cur *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return sn_errf(c->e, SN_EINPUT, "%s byte %zu: %s", c->what, c->pos, msg);
}

static void skip_ws(js_cur *c)
{
	while (c->pos < c->len) {
		char ch = c->text[c->pos];
		if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
			break;
		c->pos++;
	}
}

char js_peek(js_cur *c)
{
	skip_ws(c);
	return c->pos < c->len ? c->text[c->pos] : 0;
}

/* How a byte reads in a message: 'x', or its code, or the end. */
static const char *show(js_cur *c, char *buf)
{
	if (c->pos >= c->len)
		return "the end of the header";
	unsigned char ch = (unsigned char)c->text[c->pos];
	if (ch >= 0x21 && ch < 0x7f)
		snprintf(buf, 16, "'%c'", ch);
	else
		snprintf(buf, 16, "byte 0x%02x", ch);
	return buf;
}

int js_expect(js_cur *c, char ch, const char *ctx)
{
	char buf[16];
	if (js_peek(c) == ch && c->pos < c->len) {
		c->pos++;
		return SN_OK;
	}
	return js_fail(c, "expected '%c' %s, found %s", ch, ctx, show(c, buf));
}

bool js_accept(js_cur *c, char ch)
{
	if (js_peek(c) == ch && c->pos < c->len) {
		c->pos++;
		return true;
	}
	return false;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Four hex digits at c->pos + 2 (after "\u"); -1 if not. */
static long hex4(const js_cur *c, size_t at)
{
	if (c->len - at < 4)
		return -1;
	long v = 0;
	for (int i = 0; i < 4; i++) {
		int h = hexval(c->text[at + i]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/* Length of the valid UTF-8 sequence at s[0, n), 0 if invalid (overlong
 * forms, surrogates and code points above U+10FFFF are invalid). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char b = s[0];
	size_t k;
	uint32_t cp, min;
	if (b < 0x80)
		return 1;
	if (b >= 0xc2 && b <= 0xdf)
		k = 2, cp = b & 0x1f, min = 0x80;
	else if (b >= 0xe0 && b <= 0xef)
		k = 3, cp = b & 0x0f, min = 0x800;
	else if (b >= 0xf0 && b <= 0xf4)
		k = 4, cp = b & 0x07, min = 0x10000;
	else
		return 0;
	if (n < k)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return k;
}

bool js_utf8_valid(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = utf8_len((const unsigned char *)s + i, n - i);
		if (!k)
			return false;
		i += k;
	}
	return true;
}

static size_t put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Two passes: the first validates and finds the end, the second decodes
 * into a buffer no longer than the raw text (escapes never grow). */
int js_string(js_cur *c, char **out, size_t *n)
{
	int rc = js_expect(c, '"', "to start a string");
	if (rc)
		return rc;
	size_t start = c->pos;
	for (;;) {
		if (c->pos >= c->len)
			return js_fail(c, "unterminated string");
		unsigned char ch = (unsigned char)c->text[c->pos];
		if (ch == '"')
			break;
		if (ch < 0x20)
			return js_fail(c, "control character 0x%02x in a string", ch);
		if (ch == '\\') {
			if (c->len - c->pos < 2)
				return js_fail(c, "unterminated string");
			char esc = c->text[c->pos + 1];
			if (esc == 'u') {
				long u = hex4(c, c->pos + 2);
				if (u < 0)
					return js_fail(c, "\\u needs four hex digits");
				if (u >= 0xdc00 && u <= 0xdfff)
					return js_fail(c, "unpaired surrogate \\u%04lx", u);
				if (u >= 0xd800 && u <= 0xdbff) {
					long lo = -1;
					if (c->len - c->pos >= 8 && c->text[c->pos + 6] == '\\' &&
					    c->text[c->pos + 7] == 'u')
						lo = hex4(c, c->pos + 8);
					if (lo < 0xdc00 || lo > 0xdfff)
						return js_fail(c, "unpaired surrogate \\u%04lx", u);
					c->pos += 6;
				}
				c->pos += 6;
			} else if (strchr("\"\\/bfnrt", esc) && esc) {
				c->pos += 2;
			} else {
				return js_fail(c, "invalid escape in a string");
			}
			continue;
		}
		size_t k = utf8_len((const unsigned char *)c->text + c->pos, c->len - c->pos);
		if (!k)
			return js_fail(c, "invalid UTF-8 in a string");
		c->pos += k;
	}
	size_t end = c->pos++;
	if (!out)
		return SN_OK;
	char *s = sn_alloc(c->a, end - start + 1);
	if (!s)
		return sn_errf(c->e, SN_EINTERNAL, "%s: out of memory", c->what);
	size_t j = 0;
	for (size_t i = start; i < end;) {
		char ch = c->text[i];
		if (ch != '\\') {
			s[j++] = ch;
			i++;
			continue;
		}
		char esc = c->text[i + 1];
		i += 2;
		switch (esc) {
		case 'b': s[j++] = '\b'; break;
		case 'f': s[j++] = '\f'; break;
		case 'n': s[j++] = '\n'; break;
		case 'r': s[j++] = '\r'; break;
		case 't': s[j++] = '\t'; break;
		case 'u': {
			uint32_t u = (uint32_t)hex4(c, i);
			i += 4;
			if (u >= 0xd800 && u <= 0xdbff) {
				uint32_t lo = (uint32_t)hex4(c, i + 2);
				i += 6;
				u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
			}
			j += put_utf8(s + j, u);
			break;
		}
		default: s[j++] = esc; break; /* " \ / */
		}
	}
	s[j] = 0;
	*out = s;
	if (n)
		*n = j;
	return SN_OK;
}

static bool is_digit(const js_cur *c)
{
	return c->pos < c->len && c->text[c->pos] >= '0' && c->text[c->pos] <= '9';
}

int js_number(js_cur *c, const char **raw, size_t *n)
{
	char buf[16];
	skip_ws(c);
	size_t start = c->pos;
	if (c->pos < c->len && c->text[c->pos] == '-')
		c->pos++;
	if (!is_digit(c))
		return js_fail(c, "expected a digit, found %s", show(c, buf));
	if (c->text[c->pos] == '0')
		c->pos++;
	else
		while (is_digit(c))
			c->pos++;
	if (c->pos < c->len && c->text[c->pos] == '.') {
		c->pos++;
		if (!is_digit(c))
			return js_fail(c, "expected a digit after '.', found %s", show(c, buf));
		while (is_digit(c))
			c->pos++;
	}
	if (c->pos < c->len && (c->text[c->pos] == 'e' || c->text[c->pos] == 'E')) {
		c->pos++;
		if (c->pos < c->len && (c->text[c->pos] == '+' || c->text[c->pos] == '-'))
			c->pos++;
		if (!is_digit(c))
			return js_fail(c, "expected a digit in the exponent, found %s", show(c, buf));
		while (is_digit(c))
			c->pos++;
	}
	if (raw)
		*raw = c->text + start;
	if (n)
		*n = c->pos - start;
	return SN_OK;
}

static int word(js_cur *c, const char *w)
{
	size_t n = strlen(w);
	if (c->len - c->pos < n || memcmp(c->text + c->pos, w, n) != 0)
		return js_fail(c, "invalid literal (expected '%s')", w);
	c->pos += n;
	return SN_OK;
}

static int skip_depth(js_cur *c, int depth)
{
	char buf[16];
	int rc;
	if (depth > JS_MAX_DEPTH)
		return js_fail(c, "nested deeper than %d levels", JS_MAX_DEPTH);
	switch (js_peek(c)) {
	case '"':
		return js_string(c, NULL, NULL);
	case 't': return word(c, "true");
	case 'f': return word(c, "false");
	case 'n': return word(c, "null");
	case '[':
		c->pos++;
		if (js_accept(c, ']'))
			return SN_OK;
		do {
			if ((rc = skip_depth(c, depth + 1)))
				return rc;
		} while (js_accept(c, ','));
		return js_expect(c, ']', "or ',' in an array");
	case '{':
		c->pos++;
		if (js_accept(c, '}'))
			return SN_OK;
		do {
			if ((rc = js_string(c, NULL, NULL)) ||
			    (rc = js_expect(c, ':', "after an object key")) ||
			    (rc = skip_depth(c, depth + 1)))
				return rc;
		} while (js_accept(c, ','));
		return js_expect(c, '}', "or ',' in an object");
	default:
		if (js_peek(c) == '-' || is_digit(c))
			return js_number(c, NULL, NULL);
		return js_fail(c, "expected a value, found %s", show(c, buf));
	}
}

int js_skip(js_cur *c)
{
	return skip_depth(c, 1);
}

int js_end(js_cur *c)
{
	if (js_peek(c) != 0 || c->pos < c->len)
		return js_fail(c, "unexpected characters after the JSON object");
	return SN_OK;
}

int js_uint(const char *raw, size_t n, int64_t *v)
{
	if (n && raw[0] == '-')
		return 1;
	for (size_t i = 0; i < n; i++)
		if (raw[i] < '0' || raw[i] > '9')
			return 2;
	int64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		int d = raw[i] - '0';
		if (x > (INT64_MAX - d) / 10)
			return 3;
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}
