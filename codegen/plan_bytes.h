/* plan_bytes.h: what the two plan-file formats share (codegen/cg_io.c for
 * CUDA plans, codegen/cl_io.c for cpu plans): a growing little-endian
 * byte buffer for writing, a bounds-checked cursor for reading (a short
 * read sets bad and yields zeros), and the weight image's checksums, one
 * XXH3-64 per WCHUNK bytes, verified on several cores. Internal to
 * codegen. */
#ifndef SINTER_PLAN_BYTES_H
#define SINTER_PLAN_BYTES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The weight image is checksummed in chunks, so a reader can verify them
 * on several cores at once (a warm start reads hundreds of MB). */
#define WCHUNK ((uint64_t)16 << 20)

typedef struct wbuf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
} wbuf;

static inline void put(wbuf *b, const void *v, size_t n)
{
	if (b->oom || !n)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *q = realloc(b->p, cap);
		if (!q) {
			b->oom = true;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, v, n);
	b->len += n;
}
static inline void put32(wbuf *b, uint32_t v) { put(b, &v, 4); }
static inline void put64(wbuf *b, uint64_t v) { put(b, &v, 8); }

typedef struct rbuf {
	const uint8_t *p;
	size_t len, at;
	bool bad;
} rbuf;

static inline void get(rbuf *r, void *v, size_t n)
{
	if (r->bad || r->len - r->at < n) {
		r->bad = true;
		memset(v, 0, n);
		return;
	}
	memcpy(v, r->p + r->at, n);
	r->at += n;
}
static inline uint32_t get32(rbuf *r)
{
	uint32_t v;
	get(r, &v, 4);
	return v;
}
static inline uint64_t get64(rbuf *r)
{
	uint64_t v;
	get(r, &v, 8);
	return v;
}

/* Whether each of the n WCHUNK-byte chunks of data[0 .. size) has the
 * XXH3-64 in sums[i]; on up to 8 threads (the cores). Always true in a
 * fuzzing build, so mutations reach what follows. */
bool cg_check_chunks(const uint8_t *data, uint64_t size, const uint64_t *sums, uint64_t n);

#endif
