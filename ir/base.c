/* base.c: errors, arena, string buffer, number formatting. */
#include "base.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sn_verrf(sn_err *e, int code, const char *fmt, va_list ap)
{
	if (e && e->code == SN_OK) {
		e->code = code;
		vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	}
	return code;
}

int sn_errf(sn_err *e, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sn_verrf(e, code, fmt, ap);
	va_end(ap);
	return code;
}

/* Arena: a list of chunks; large requests get a chunk of their own. */
typedef struct chunk {
	struct chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
} chunk;

struct sn_arena {
	chunk *head;
	size_t total;
};

enum { CHUNK = 64 * 1024 };

sn_arena *sn_arena_new(void)
{
	return calloc(1, sizeof(sn_arena));
}

void sn_arena_free(sn_arena *a)
{
	if (!a)
		return;
	for (chunk *c = a->head, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	free(a);
}

void *sn_alloc(sn_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n == 0)
		n = 16;
	chunk *c = a->head;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > CHUNK ? n : CHUNK;
		chunk *nc = malloc(sizeof(chunk) + cap);
		if (!nc)
			return NULL;
		nc->used = 0;
		nc->cap = cap;
		if (c && n > CHUNK) {
			/* keep the current chunk on top for small allocations */
			nc->next = c->next;
			c->next = nc;
		} else {
			nc->next = c;
			a->head = nc;
		}
		c = nc;
	}
	void *p = c->data + c->used;
	c->used += n;
	a->total += n;
	memset(p, 0, n);
	return p;
}

char *sn_strndup(sn_arena *a, const char *s, size_t n)
{
	char *p = sn_alloc(a, n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = 0;
	}
	return p;
}

char *sn_strdup(sn_arena *a, const char *s)
{
	return sn_strndup(a, s, strlen(s));
}

size_t sn_arena_used(const sn_arena *a)
{
	return a->total;
}

static void buf_grow(sn_buf *b, size_t need)
{
	if (b->oom || b->len + need + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + need + 1)
		cap *= 2;
	char *s = realloc(b->s, cap);
	if (!s) {
		b->oom = true;
		return;
	}
	b->s = s;
	b->cap = cap;
}

void sn_buf_printf(sn_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	buf_grow(b, (size_t)n);
	if (b->oom)
		return;
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void sn_buf_puts(sn_buf *b, const char *s)
{
	size_t n = strlen(s);
	buf_grow(b, n);
	if (b->oom)
		return;
	memcpy(b->s + b->len, s, n + 1);
	b->len += n;
}

void sn_buf_free(sn_buf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

void sn_fmt_double(char *out, double x)
{
	if (isnan(x)) {
		strcpy(out, "nan");
		return;
	}
	if (isinf(x)) {
		strcpy(out, x < 0 ? "-inf" : "inf");
		return;
	}
	for (int p = 1; p <= 17; p++) {
		snprintf(out, 32, "%.*g", p, x);
		if (strtod(out, NULL) == x)
			break;
	}
}

void sn_fmt_float(char *out, float x)
{
	if (isnan(x) || isinf(x)) {
		sn_fmt_double(out, x);
		return;
	}
	for (int p = 1; p <= 9; p++) {
		snprintf(out, 32, "%.*g", p, (double)x);
		if (strtof(out, NULL) == x)
			break;
	}
}
