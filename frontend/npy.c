/* npy.c: .npy and .npz reader and writer (npy.h). */
#include "frontend/npy.h"

#include "ir/file.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- CRC-32 ---- */

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		table[i] = c;
	}
}

uint32_t npy_crc32(uint32_t crc, const void *p, size_t n)
{
	pthread_once(&table_once, make_table);
	const uint8_t *b = p;
	crc = ~crc;
	for (size_t i = 0; i < n; i++)
		crc = table[(crc ^ b[i]) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* ---- .npy ---- */

static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* The NumPy dtypes read, by descr without its byte-order character. */
typedef struct kind {
	const char *code; /* "f4", "i8", ... */
	int size;
	ir_dtype to;      /* what it becomes */
	char how;         /* 'c' copy, 'f' float64 -> f32, 'i' signed int widened, 'u' unsigned widened */
} kind;

static const kind kinds[] = {
	{"f4", 4, IR_F32, 'c'}, {"f2", 2, IR_F16, 'c'}, {"f8", 8, IR_F32, 'f'}, {"i8", 8, IR_I64, 'c'},
	{"i4", 4, IR_I32, 'c'}, {"i1", 1, IR_I8, 'c'},  {"u1", 1, IR_U8, 'c'},  {"b1", 1, IR_BOOL, 'c'},
	{"i2", 2, IR_I32, 'i'}, {"u2", 2, IR_I32, 'u'}, {"u4", 4, IR_I64, 'u'},
};

typedef struct hdr {
	char descr[32];
	int fortran; /* -1 unset */
	int rank;    /* -1 unset */
	int64_t shape[IR_MAX_RANK];
} hdr;

typedef struct lex {
	const char *p, *end;
} lex;

static void skip(lex *l)
{
	while (l->p < l->end && (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r'))
		l->p++;
}

static bool eat(lex *l, char c)
{
	skip(l);
	if (l->p < l->end && *l->p == c) {
		l->p++;
		return true;
	}
	return false;
}

/* A quoted string without escapes into out[cap]. */
static bool str(lex *l, char *out, size_t cap)
{
	skip(l);
	if (l->p >= l->end || (*l->p != '\'' && *l->p != '"'))
		return false;
	char q = *l->p++;
	size_t n = 0;
	while (l->p < l->end && *l->p != q) {
		if (*l->p == '\\' || n + 1 >= cap)
			return false;
		out[n++] = *l->p++;
	}
	if (l->p >= l->end)
		return false;
	l->p++;
	out[n] = 0;
	return true;
}

static bool word(lex *l, const char *w)
{
	skip(l);
	size_t n = strlen(w);
	if ((size_t)(l->end - l->p) >= n && !memcmp(l->p, w, n)) {
		l->p += n;
		return true;
	}
	return false;
}

static int parse_header(const char *s, size_t n, const char *name, hdr *h, sn_err *e)
{
	lex l = {s, s + n};
	h->descr[0] = 0;
	h->fortran = h->rank = -1;
	if (!eat(&l, '{'))
		return sn_errf(e, SN_EINPUT, "%s: the .npy header is not a dict", name);
	while (!eat(&l, '}')) {
		char key[32];
		if (!str(&l, key, sizeof key) || !eat(&l, ':'))
			return sn_errf(e, SN_EINPUT, "%s: malformed .npy header", name);
		if (!strcmp(key, "descr") && !h->descr[0]) {
			skip(&l);
			if (l.p < l.end && *l.p == '[')
				return sn_errf(e, SN_EINPUT, "%s: a structured array (record dtype) is not a tensor", name);
			if (!str(&l, h->descr, sizeof h->descr) || !h->descr[0])
				return sn_errf(e, SN_EINPUT, "%s: malformed descr in the .npy header", name);
		} else if (!strcmp(key, "fortran_order") && h->fortran < 0) {
			if (word(&l, "True"))
				h->fortran = 1;
			else if (word(&l, "False"))
				h->fortran = 0;
			else
				return sn_errf(e, SN_EINPUT, "%s: fortran_order is neither True nor False", name);
		} else if (!strcmp(key, "shape") && h->rank < 0) {
			if (!eat(&l, '('))
				return sn_errf(e, SN_EINPUT, "%s: shape is not a tuple", name);
			h->rank = 0;
			while (!eat(&l, ')')) {
				skip(&l);
				int64_t v = 0;
				bool digit = false;
				while (l.p < l.end && *l.p >= '0' && *l.p <= '9') {
					if (v > (INT64_MAX - 9) / 10)
						return sn_errf(e, SN_EINPUT, "%s: a dim of the shape is too large", name);
					v = 10 * v + (*l.p++ - '0');
					digit = true;
				}
				skip(&l);
				if (l.p < l.end && *l.p == 'L') /* Python 2's long */
					l.p++;
				if (!digit)
					return sn_errf(e, SN_EINPUT, "%s: malformed shape in the .npy header", name);
				if (h->rank >= IR_MAX_RANK)
					return sn_errf(e, SN_EINPUT, "%s: rank over %d", name, IR_MAX_RANK);
				h->shape[h->rank++] = v;
				if (!eat(&l, ',')) {
					if (!eat(&l, ')'))
						return sn_errf(e, SN_EINPUT, "%s: malformed shape in the .npy header", name);
					break;
				}
			}
		} else {
			return sn_errf(e, SN_EINPUT, "%s: unexpected or repeated key '%s' in the .npy header", name, key);
		}
		if (!eat(&l, ',')) {
			if (!eat(&l, '}'))
				return sn_errf(e, SN_EINPUT, "%s: malformed .npy header", name);
			break;
		}
	}
	if (!h->descr[0] || h->fortran < 0 || h->rank < 0)
		return sn_errf(e, SN_EINPUT, "%s: the .npy header lacks descr, fortran_order or shape", name);
	return SN_OK;
}

/* Little-endian value of b[0..n) as unsigned. */
static uint64_t le(const uint8_t *b, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* A .npy's header, read from the first bytes of the file. */
typedef struct head {
	size_t pre;     /* magic, version and header length: 10 or 12 bytes */
	uint64_t hlen;  /* the dict's bytes */
	hdr h;
	const kind *k;
	uint64_t numel; /* 0 when a dim is 0 (the other dims' product may not fit) */
} head;

/* The header of the .npy whose first len bytes are b (the whole file, or
 * a prefix holding at least its header). */
static int npy_head(const uint8_t *b, size_t len, const char *name, head *hd, sn_err *e)
{
	if (len < 10 || memcmp(b, magic, 6))
		return sn_errf(e, SN_EINPUT, "%s: not a .npy file (no \\x93NUMPY magic)", name);
	int major = b[6];
	if (major < 1 || major > 3)
		return sn_errf(e, SN_EINPUT, "%s: .npy format version %d.%d is not one sinter reads (1, 2, 3)", name,
			       major, b[7]);
	size_t pre = major == 1 ? 10 : 12;
	if (len < pre)
		return sn_errf(e, SN_EINPUT, "%s: truncated .npy header", name);
	uint64_t hlen = le(b + 8, major == 1 ? 2 : 4);
	if (hlen > len - pre)
		return sn_errf(e, SN_EINPUT, "%s: the .npy header runs past the end of the file", name);
	hdr h;
	if (parse_header((const char *)b + pre, (size_t)hlen, name, &h, e))
		return e->code;
	char order = h.descr[0];
	const char *code = h.descr + (order == '<' || order == '>' || order == '|' || order == '=');
	const kind *k = NULL;
	for (size_t i = 0; i < SN_COUNT(kinds); i++)
		if (!strcmp(code, kinds[i].code))
			k = &kinds[i];
	if (!k)
		return sn_errf(e, SN_EINPUT,
			       "%s: dtype '%s' has no sinter equivalent (float16/32/64, int8/16/32/64, uint8/16/32, bool)",
			       name, h.descr);
	uint64_t numel = 1;
	for (int d = 0; d < h.rank; d++) {
		if (h.shape[d] && numel > UINT64_MAX / 8 / (uint64_t)h.shape[d])
			return sn_errf(e, SN_EINPUT, "%s: the shape's size overflows", name);
		numel *= (uint64_t)h.shape[d];
	}
	*hd = (head){.pre = pre, .hlen = hlen, .h = h, .k = k, .numel = numel};
	return SN_OK;
}

int npy_parse(const void *buf, size_t len, const char *name, npy_array *out, sn_err *e)
{
	memset(out, 0, sizeof *out);
	const uint8_t *b = buf;
	head hd;
	if (npy_head(b, len, name, &hd, e))
		return e->code;
	const kind *k = hd.k;
	const hdr h = hd.h;
	size_t pre = hd.pre;
	uint64_t hlen = hd.hlen, numel = hd.numel;
	bool swap = hd.h.descr[0] == '>' && k->size > 1;
	uint64_t have = len - pre - hlen;
	if (numel * (uint64_t)k->size != have)
		return sn_errf(e, SN_EINPUT, "%s: %llu bytes of data, the header's shape and dtype need %llu", name,
			       (unsigned long long)have, (unsigned long long)(numel * (uint64_t)k->size));
	size_t osz = ir_dtype_size(k->to);
	if (numel > SIZE_MAX / (osz ? osz : 1))
		return sn_errf(e, SN_EINPUT, "%s: too large", name);
	uint8_t *dst = malloc(numel ? (size_t)numel * osz : 1);
	if (!dst)
		return sn_errf(e, SN_EINTERNAL, "out of memory reading %s", name);
	const uint8_t *src = b + pre + hlen;
	/* strides of the source in elements: C order, or Fortran's reversed */
	int64_t stride[IR_MAX_RANK] = {0};
	if (!numel) {
		/* nothing to copy; the dims' product may not fit (0 x 2^60 ...) */
	} else if (h.fortran) {
		int64_t s = 1;
		for (int d = 0; d < h.rank; d++) {
			stride[d] = s;
			s *= h.shape[d];
		}
	} else {
		int64_t s = 1;
		for (int d = h.rank - 1; d >= 0; d--) {
			stride[d] = s;
			s *= h.shape[d];
		}
	}
	int64_t idx[IR_MAX_RANK] = {0};
	int64_t at = 0; /* source element of idx */
	for (uint64_t i = 0; i < numel; i++) {
		uint8_t v[8];
		memcpy(v, src + (size_t)at * (size_t)k->size, (size_t)k->size);
		if (swap)
			for (int a = 0, z = k->size - 1; a < z; a++, z--) {
				uint8_t t = v[a];
				v[a] = v[z];
				v[z] = t;
			}
		uint8_t *o = dst + i * osz;
		if (k->how == 'c') {
			memcpy(o, v, osz);
		} else if (k->how == 'f') {
			double x;
			memcpy(&x, v, 8);
			ir_store(IR_F32, dst, (size_t)i, x); /* correctly rounded */
		} else {
			uint64_t u = le(v, k->size);
			int64_t s = k->how == 'i' ? (int64_t)(int16_t)(uint16_t)u : (int64_t)u;
			if (k->to == IR_I32) {
				int32_t w = (int32_t)s;
				memcpy(o, &w, 4);
			} else {
				memcpy(o, &s, 8);
			}
		}
		/* next C-order index and its source element */
		for (int d = h.rank - 1; d >= 0; d--) {
			at += stride[d];
			if (++idx[d] < h.shape[d])
				break;
			at -= stride[d] * h.shape[d];
			idx[d] = 0;
		}
	}
	out->dtype = k->to;
	out->rank = h.rank;
	memcpy(out->shape, h.shape, sizeof out->shape);
	out->data = dst;
	out->nbytes = (size_t)(numel * osz);
	return SN_OK;
}

/* ---- inflate (RFC 1951) ---- */

typedef struct bits {
	const uint8_t *p;
	size_t n, pos; /* bytes; pos in bytes */
	uint32_t buf;
	int cnt;
	uint8_t *out;
	size_t olen, ocap;
	bool bad;
	bool prefix; /* stop, successfully, once out is full (full set) */
	bool full;
} bits;

static uint32_t need(bits *s, int n)
{
	while (s->cnt < n) {
		if (s->pos >= s->n) {
			s->bad = true;
			return 0;
		}
		s->buf |= (uint32_t)s->p[s->pos++] << s->cnt;
		s->cnt += 8;
	}
	uint32_t v = s->buf & ((1u << n) - 1);
	s->buf >>= n;
	s->cnt -= n;
	return v;
}

typedef struct huff {
	uint16_t count[16];
	uint16_t sym[320];
} huff;

/* Canonical code from lengths; false when over-subscribed. An incomplete
 * code is allowed (decoding a missing code fails). */
static bool build(huff *h, const uint8_t *len, int n)
{
	memset(h->count, 0, sizeof h->count);
	for (int i = 0; i < n; i++)
		h->count[len[i]]++;
	int left = 1;
	for (int l = 1; l < 16; l++) {
		left <<= 1;
		left -= h->count[l];
		if (left < 0)
			return false;
	}
	uint16_t offs[16];
	offs[1] = 0;
	for (int l = 1; l < 15; l++)
		offs[l + 1] = (uint16_t)(offs[l] + h->count[l]);
	for (int i = 0; i < n; i++)
		if (len[i])
			h->sym[offs[len[i]]++] = (uint16_t)i;
	return true;
}

static int decode(bits *s, const huff *h)
{
	int code = 0, first = 0, index = 0;
	for (int l = 1; l < 16; l++) {
		code |= (int)need(s, 1);
		if (s->bad)
			return -1;
		int count = h->count[l];
		if (code - first < count)
			return h->sym[index + code - first];
		index += count;
		first = (first + count) << 1;
		code <<= 1;
	}
	s->bad = true;
	return -1;
}

static const uint16_t lbase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
				   31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t lextra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dbase[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
				   193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dextra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

static bool codes(bits *s, const huff *lit, const huff *dist)
{
	for (;;) {
		int sym = decode(s, lit);
		if (sym < 0)
			return false;
		if (sym < 256) {
			if (s->olen >= s->ocap)
				return (s->full = s->prefix);
			s->out[s->olen++] = (uint8_t)sym;
		} else if (sym == 256) {
			return true;
		} else {
			sym -= 257;
			if (sym >= 29)
				return false;
			size_t len = lbase[sym] + need(s, lextra[sym]);
			int d = decode(s, dist);
			if (d < 0 || d >= 30)
				return false;
			size_t back = dbase[d] + need(s, dextra[d]);
			if (s->bad || back > s->olen || (len > s->ocap - s->olen && !s->prefix))
				return false;
			bool cut = len > s->ocap - s->olen;
			if (cut)
				len = s->ocap - s->olen;
			for (size_t i = 0; i < len; i++, s->olen++)
				s->out[s->olen] = s->out[s->olen - back];
			if (cut)
				return (s->full = true);
		}
	}
}

/* Inflates src into out[cap]; exactly cap bytes must come out. With
 * prefix, only the first cap bytes are wanted: it stops there. *got says
 * how many came out (fewer when the stream ends first, and on failure
 * those before the fault). */
static bool inflate_to(const uint8_t *src, size_t n, uint8_t *out, size_t cap, bool prefix, size_t *got)
{
	*got = 0;
	bits s = {.p = src, .n = n, .out = out, .ocap = cap, .prefix = prefix};
	static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
	int last;
	do {
		last = (int)need(&s, 1);
		int type = (int)need(&s, 2);
		if (s.bad)
			return (*got = s.olen, false);
		if (type == 0) {
			s.buf = 0;
			s.cnt = 0; /* to a byte boundary */
			if (s.n - s.pos < 4)
				return (*got = s.olen, false);
			size_t len = s.p[s.pos] | (size_t)s.p[s.pos + 1] << 8;
			size_t nlen = s.p[s.pos + 2] | (size_t)s.p[s.pos + 3] << 8;
			s.pos += 4;
			if (len != (~nlen & 0xffff) || len > s.n - s.pos)
				return (*got = s.olen, false);
			if (len > s.ocap - s.olen) {
				if (!prefix)
					return (*got = s.olen, false);
				len = s.ocap - s.olen;
				s.full = true;
			}
			memcpy(s.out + s.olen, s.p + s.pos, len);
			s.pos += len;
			s.olen += len;
		} else if (type == 1 || type == 2) {
			uint8_t lens[320];
			huff lit, dist;
			int nlit = 288, ndist = 30;
			if (type == 1) {
				int i = 0;
				for (; i < 144; i++)
					lens[i] = 8;
				for (; i < 256; i++)
					lens[i] = 9;
				for (; i < 280; i++)
					lens[i] = 7;
				for (; i < 288; i++)
					lens[i] = 8;
				for (i = 0; i < 30; i++)
					lens[288 + i] = 5;
			} else {
				nlit = (int)need(&s, 5) + 257;
				ndist = (int)need(&s, 5) + 1;
				int ncode = (int)need(&s, 4) + 4;
				if (s.bad || nlit > 286 || ndist > 30)
					return (*got = s.olen, false);
				uint8_t cl[19] = {0};
				for (int i = 0; i < ncode; i++)
					cl[order[i]] = (uint8_t)need(&s, 3);
				huff lc;
				if (s.bad || !build(&lc, cl, 19))
					return (*got = s.olen, false);
				int i = 0;
				while (i < nlit + ndist) {
					int sym = decode(&s, &lc);
					if (sym < 0)
						return (*got = s.olen, false);
					if (sym < 16) {
						lens[i++] = (uint8_t)sym;
						continue;
					}
					int rep, val = 0;
					if (sym == 16) {
						if (i == 0)
							return (*got = s.olen, false);
						val = lens[i - 1];
						rep = 3 + (int)need(&s, 2);
					} else if (sym == 17) {
						rep = 3 + (int)need(&s, 3);
					} else {
						rep = 11 + (int)need(&s, 7);
					}
					if (s.bad || i + rep > nlit + ndist)
						return (*got = s.olen, false);
					while (rep--)
						lens[i++] = (uint8_t)val;
				}
				if (lens[256] == 0) /* no end-of-block code */
					return (*got = s.olen, false);
				memmove(lens + 288, lens + nlit, (size_t)ndist);
				memset(lens + nlit, 0, (size_t)(288 - nlit));
			}
			if (!build(&lit, lens, 288) || !build(&dist, lens + 288, ndist))
				return (*got = s.olen, false);
			if (!codes(&s, &lit, &dist))
				return (*got = s.olen, false);
		} else {
			return (*got = s.olen, false);
		}
		if (s.full) {
			*got = s.olen;
			return true;
		}
	} while (!last);
	*got = s.olen;
	return prefix || s.olen == cap;
}

static bool inflate(const uint8_t *src, size_t n, uint8_t *out, size_t cap)
{
	size_t got;
	return inflate_to(src, n, out, cap, false, &got);
}

/* ---- .npz (ZIP) ---- */

typedef struct zent {
	uint64_t csize, usize, off;
	uint32_t crc;
	uint16_t method, nlen;
	const uint8_t *name;
} zent;

/* The ZIP64 extended information of a central entry (id 1): the fields
 * that are 0xFFFFFFFF in the fixed part, in order. */
static bool zip64_extra(const uint8_t *x, size_t xlen, zent *z, bool u, bool c, bool o)
{
	while (xlen >= 4) {
		size_t id = (size_t)le(x, 2), sz = (size_t)le(x + 2, 2);
		if (sz > xlen - 4)
			return false;
		if (id == 1) {
			size_t at = 4, want = 8 * ((size_t)u + c + o);
			if (sz < want)
				return false;
			if (u) {
				z->usize = le(x + at, 8);
				at += 8;
			}
			if (c) {
				z->csize = le(x + at, 8);
				at += 8;
			}
			if (o)
				z->off = le(x + at, 8);
			return true;
		}
		x += 4 + sz;
		xlen -= 4 + sz;
	}
	return !(u || c || o);
}

/* A member of the archive, located and checked before any is inflated. */
typedef struct zmem {
	zent z;
	const uint8_t *src; /* its data in the archive: csize bytes */
	char *ename;        /* malloc'ed: the name without ".npy" */
} zmem;

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A .npy header longer than this in a deflated member is refused (NumPy
 * itself refuses headers over 10000 bytes unless told otherwise). */
#define NPZ_MAX_HEADER ((size_t)1 << 20)

/* The header of member m: its first bytes inflated (deflated members),
 * as many as the header needs and no more, parsed into hd. */
static int member_head(const zmem *m, const char *what, head *hd, sn_err *e)
{
	if (m->z.method == 0)
		return npy_head(m->src, (size_t)m->z.usize, what, hd, e);
	size_t cap = m->z.usize < 4096 ? (size_t)m->z.usize : 4096, got = 0;
	uint8_t *pfx = malloc(cap ? cap : 1);
	if (!pfx)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	/* a fault in the stream after the header is found when the member
	 * is inflated whole; here only the header counts */
	inflate_to(m->src, (size_t)m->z.csize, pfx, cap, true, &got);
	bool ok = got >= 10 || got == m->z.usize;
	if (got >= 12 && !memcmp(pfx, magic, 6) && pfx[6] >= 1 && pfx[6] <= 3) {
		/* a header longer than the first 4 KiB: inflate as far as its end */
		size_t pre = pfx[6] == 1 ? 10 : 12;
		uint64_t end = pre + le(pfx + 8, pfx[6] == 1 ? 2 : 4);
		if (end > got && end <= m->z.usize) {
			free(pfx);
			if (end > NPZ_MAX_HEADER + 12)
				return sn_errf(e, SN_EINPUT, "%s: a .npy header of %llu bytes (more than 1 MiB)", what,
					       (unsigned long long)(end - pre));
			cap = (size_t)end;
			if (!(pfx = malloc(cap)))
				return sn_errf(e, SN_EINTERNAL, "out of memory");
			inflate_to(m->src, (size_t)m->z.csize, pfx, cap, true, &got);
			ok = got == cap;
		}
	}
	int rc = ok ? npy_head(pfx, got, what, hd, e) : sn_errf(e, SN_EINPUT, "%s: corrupt deflate stream", what);
	free(pfx);
	return rc;
}

int npz_parse_max(const void *buf, size_t len, const char *name, uint64_t max, const char *limit, npy_array **out,
		  size_t *n, sn_err *e)
{
	*out = NULL;
	*n = 0;
	const uint8_t *b = buf;
	/* the end of central directory record: 22 bytes plus a comment of up to 64 KiB */
	size_t eocd = SIZE_MAX;
	for (size_t i = len >= 22 ? len - 22 : 0, stop = len > 22 + 65535 ? len - 22 - 65535 : 0; len >= 22; i--) {
		if (le(b + i, 4) == 0x06054b50 && i + 22 + le(b + i + 20, 2) == len) {
			eocd = i;
			break;
		}
		if (i == stop)
			break;
	}
	if (eocd == SIZE_MAX)
		return sn_errf(e, SN_EINPUT, "%s: not a .npz file (no ZIP end of central directory)", name);
	uint64_t count = le(b + eocd + 10, 2), cdsize = le(b + eocd + 12, 4), cdoff = le(b + eocd + 16, 4);
	if (count == 0xffff || cdsize == 0xffffffff || cdoff == 0xffffffff) {
		/* ZIP64: a locator just before, pointing at the ZIP64 record */
		if (eocd < 20 || le(b + eocd - 20, 4) != 0x07064b50)
			return sn_errf(e, SN_EINPUT, "%s: ZIP64 archive without its locator", name);
		uint64_t r = le(b + eocd - 20 + 8, 8);
		if (r > len || len - r < 56 || le(b + r, 4) != 0x06064b50)
			return sn_errf(e, SN_EINPUT, "%s: bad ZIP64 end of central directory", name);
		count = le(b + r + 32, 8);
		cdsize = le(b + r + 40, 8);
		cdoff = le(b + r + 48, 8);
	}
	if (cdoff > len || cdsize > len - cdoff || count > cdsize / 46 + 1)
		return sn_errf(e, SN_EINPUT, "%s: the ZIP central directory lies outside the file", name);
	size_t cnt = (size_t)count, k = 0, done = 0;
	zmem *m = calloc(cnt ? cnt : 1, sizeof *m);
	char **sorted = calloc(cnt ? cnt : 1, sizeof *sorted);
	npy_array *arr = calloc(cnt ? cnt : 1, sizeof *arr);
	if (!m || !sorted || !arr) {
		sn_errf(e, SN_EINTERNAL, "out of memory");
		goto fail;
	}
	/* 1. every member located and checked; nothing inflated yet */
	size_t p = (size_t)cdoff;
	for (; k < cnt; k++) {
		if (len - p < 46 || p + 46 > cdoff + cdsize || le(b + p, 4) != 0x02014b50) {
			sn_errf(e, SN_EINPUT, "%s: bad ZIP central directory entry %zu", name, k);
			goto fail;
		}
		zent z = {.method = (uint16_t)le(b + p + 10, 2), .crc = (uint32_t)le(b + p + 16, 4),
			  .csize = le(b + p + 20, 4), .usize = le(b + p + 24, 4), .nlen = (uint16_t)le(b + p + 28, 2),
			  .off = le(b + p + 42, 4), .name = b + p + 46};
		size_t xlen = (size_t)le(b + p + 30, 2), clen = (size_t)le(b + p + 32, 2);
		uint16_t flags = (uint16_t)le(b + p + 8, 2);
		if (len - p - 46 < (size_t)z.nlen + xlen + clen) {
			sn_errf(e, SN_EINPUT, "%s: ZIP entry %zu runs past the file", name, k);
			goto fail;
		}
		if (!zip64_extra(b + p + 46 + z.nlen, xlen, &z, z.usize == 0xffffffff, z.csize == 0xffffffff,
				 z.off == 0xffffffff)) {
			sn_errf(e, SN_EINPUT, "%s: bad ZIP64 field in entry %zu", name, k);
			goto fail;
		}
		p += 46 + z.nlen + xlen + clen;
		if (z.nlen < 5 || z.nlen >= 512 || memcmp(z.name + z.nlen - 4, ".npy", 4)) {
			sn_errf(e, SN_EINPUT, "%s: entry %zu (%.*s) is not an array NAME.npy", name, k,
				z.nlen > 200 ? 200 : (int)z.nlen, (const char *)z.name);
			goto fail;
		}
		if (memchr(z.name, 0, z.nlen - 4u)) {
			sn_errf(e, SN_EINPUT, "%s: entry %zu has a NUL in its name", name, k);
			goto fail;
		}
		m[k].z = z;
		if (!(m[k].ename = strndup((const char *)z.name, z.nlen - 4u))) {
			sn_errf(e, SN_EINTERNAL, "out of memory");
			goto fail;
		}
		const char *ename = m[k].ename;
		if (flags & 1) {
			sn_errf(e, SN_EINPUT, "%s: %s.npy is encrypted", name, ename);
			goto fail;
		}
		if (z.off > len || len - z.off < 30 || le(b + z.off, 4) != 0x04034b50) {
			sn_errf(e, SN_EINPUT, "%s: %s.npy: bad ZIP local header", name, ename);
			goto fail;
		}
		uint64_t data = z.off + 30 + le(b + z.off + 26, 2) + le(b + z.off + 28, 2);
		if (data > len || z.csize > len - data) {
			sn_errf(e, SN_EINPUT, "%s: %s.npy: its data runs past the end of the file", name, ename);
			goto fail;
		}
		m[k].src = b + data;
		if (z.method == 8) {
			if (z.usize > SIZE_MAX - 1 || z.usize / 1032 > z.csize + 1) { /* deflate expands at most 1032:1 */
				sn_errf(e, SN_EINPUT, "%s: %s.npy: implausible uncompressed size", name, ename);
				goto fail;
			}
		} else if (z.method != 0 || z.csize != z.usize) {
			sn_errf(e, SN_EINPUT, "%s: %s.npy: ZIP method %u (sinter reads stored and deflated entries)", name,
				ename, z.method);
			goto fail;
		}
		sorted[k] = m[k].ename;
	}
	/* names sorted, neighbours compared: O(n log n) (70 k entries compared
	 * pairwise took 8 s) */
	qsort(sorted, cnt, sizeof *sorted, cmp_name);
	for (size_t i = 1; i < cnt; i++)
		if (!strcmp(sorted[i - 1], sorted[i])) {
			sn_errf(e, SN_EINPUT, "%s: two arrays named %s", name, sorted[i]);
			goto fail;
		}
	/* 2. what the members will take, from their headers (a deflated
	 * member's first bytes inflated, no more): each must match its ZIP
	 * entry's size, and the arrays with the largest member being inflated
	 * must fit, before anything large is allocated (a 2 MB zip bomb
	 * declaring 2 GiB is refused here, not after inflating it) */
	uint64_t arrays = 0, inflating = 0;
	char what[700];
	for (size_t i = 0; i < cnt; i++) {
		snprintf(what, sizeof what, "%s: %s.npy", name, m[i].ename);
		head hd;
		if (member_head(&m[i], what, &hd, e))
			goto fail;
		uint64_t need = hd.numel * (uint64_t)hd.k->size;
		if (hd.pre + hd.hlen + need != m[i].z.usize) {
			sn_errf(e, SN_EINPUT,
				"%s: its header's shape and dtype need %llu bytes of data, the ZIP entry holds %llu", what,
				(unsigned long long)need, (unsigned long long)(m[i].z.usize - hd.pre - hd.hlen));
			goto fail;
		}
		uint64_t bytes = hd.numel * ir_dtype_size(hd.k->to); /* npy_head bounded numel * 8 */
		arrays = bytes > UINT64_MAX / 2 - arrays ? UINT64_MAX / 2 : arrays + bytes; /* saturated */
		if (m[i].z.method == 8 && m[i].z.usize > inflating)
			inflating = m[i].z.usize; /* below SIZE_MAX */
	}
	if (arrays > max || inflating > max - arrays) {
		uint64_t total = inflating > UINT64_MAX - arrays ? UINT64_MAX : arrays + inflating;
		char need_s[32], max_s[32];
		sn_fmt_bytes(need_s, total);
		sn_fmt_bytes(max_s, max);
		sn_errf(e, SN_EINPUT,
			"%s: its arrays need %llu bytes (%s) in memory, as their .npy headers declare, more than %s "
			"(%s): refused before inflating",
			name, (unsigned long long)total, need_s, limit ? limit : "the limit", max_s);
		goto fail;
	}
	/* 3. inflated, checked and converted, one at a time */
	for (; done < cnt; done++) {
		const zent *z = &m[done].z;
		snprintf(what, sizeof what, "%s: %s.npy", name, m[done].ename);
		const uint8_t *src = m[done].src;
		uint8_t *tmp = NULL;
		if (z->method == 8) {
			tmp = malloc(z->usize ? (size_t)z->usize : 1);
			if (!tmp) {
				sn_errf(e, SN_EINTERNAL, "out of memory inflating %s", name);
				goto fail;
			}
			if (!inflate(src, (size_t)z->csize, tmp, (size_t)z->usize)) {
				free(tmp);
				sn_errf(e, SN_EINPUT, "%s: corrupt deflate stream", what);
				goto fail;
			}
			src = tmp;
		}
		if (npy_crc32(0, src, (size_t)z->usize) != z->crc) {
			free(tmp);
			sn_errf(e, SN_EINPUT, "%s: CRC mismatch (the archive is corrupt)", what);
			goto fail;
		}
		int rc = npy_parse(src, (size_t)z->usize, what, &arr[done], e);
		free(tmp);
		if (rc)
			goto fail;
		arr[done].name = m[done].ename; /* moved */
		m[done].ename = NULL;
	}
	for (size_t i = 0; i < cnt; i++)
		free(m[i].ename);
	free(m);
	free(sorted);
	*out = arr;
	*n = cnt;
	return SN_OK;
fail:
	if (m)
		for (size_t i = 0; i < cnt; i++)
			free(m[i].ename);
	free(m);
	free(sorted);
	npy_free(arr, done);
	return e->code;
}

int npz_parse(const void *buf, size_t len, const char *name, npy_array **out, size_t *n, sn_err *e)
{
	const char *limit = NULL;
	uint64_t max = sn_mem_available(&limit);
	return npz_parse_max(buf, len, name, max, limit, out, n, e);
}

void npy_free(npy_array *a, size_t n)
{
	if (!a)
		return;
	for (size_t i = 0; i < n; i++) {
		free(a[i].name);
		free(a[i].data);
	}
	free(a);
}

int npy_read(const char *path, npy_array **out, size_t *n, sn_err *e)
{
	*out = NULL;
	*n = 0;
	void *buf;
	size_t len;
	uint64_t max = sn_mem_bytes();
	if (sn_read_file(path, 0, max, NULL, &buf, &len, e))
		return e->code;
	int rc;
	if (len >= 4 && le(buf, 4) == 0x04034b50) {
		rc = npz_parse(buf, len, path, out, n, e);
	} else if (len == 22 && le(buf, 4) == 0x06054b50) {
		rc = SN_OK; /* an empty archive: np.savez() with no arrays */
	} else {
		npy_array *a = calloc(1, sizeof *a);
		rc = a ? npy_parse(buf, len, path, a, e) : sn_errf(e, SN_EINTERNAL, "out of memory");
		if (!rc && !(a->name = strdup(""))) {
			npy_free(a, 1);
			a = NULL;
			rc = sn_errf(e, SN_EINTERNAL, "out of memory");
		}
		if (rc) {
			free(a);
		} else {
			*out = a;
			*n = 1;
		}
	}
	free(buf);
	return rc;
}

/* ---- writing ---- */

/* The .npy header of a (magic, version, length, dict, padding) into
 * hdr[cap]; bytes, or 0 when it does not fit. *as: the dtype written. */
static size_t npy_header(const npy_array *a, uint8_t *h, size_t cap, ir_dtype *as)
{
	const char *descr;
	*as = a->dtype;
	switch (a->dtype) {
	case IR_F32: descr = "<f4"; break;
	case IR_F16: descr = "<f2"; break;
	case IR_I64: descr = "<i8"; break;
	case IR_I32: descr = "<i4"; break;
	case IR_I8: descr = "|i1"; break;
	case IR_U8: descr = "|u1"; break;
	case IR_BOOL: descr = "|b1"; break;
	default: descr = "<f4"; *as = IR_F32; break; /* bf16, fp8: float32, exactly */
	}
	char dict[512];
	int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
	for (int d = 0; d < a->rank; d++)
		n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld%s", (long long)a->shape[d],
			      a->rank == 1 ? "," : d + 1 < a->rank ? ", " : "");
	n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
	size_t pre = 10, total = pre + (size_t)n + 1;
	total = (total + 63) / 64 * 64; /* the whole header a multiple of 64 bytes */
	if (total - pre > 65535)
		return 0;
	if (total > cap)
		return 0;
	memcpy(h, magic, 6);
	h[6] = 1;
	h[7] = 0;
	h[8] = (uint8_t)((total - pre) & 0xff);
	h[9] = (uint8_t)((total - pre) >> 8);
	memcpy(h + pre, dict, (size_t)n);
	memset(h + pre + n, ' ', total - pre - (size_t)n - 1);
	h[total - 1] = '\n';
	return total;
}

/* The data of a as dtype `as` (a converted copy when they differ). */
static const void *npy_data(const npy_array *a, ir_dtype as, void **tmp, size_t *nbytes, sn_err *e)
{
	*tmp = NULL;
	*nbytes = a->nbytes;
	if (as == a->dtype)
		return a->data;
	size_t n = a->nbytes / ir_dtype_size(a->dtype);
	float *f = malloc(n ? n * 4 : 1);
	if (!f) {
		sn_errf(e, SN_EINTERNAL, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		f[i] = (float)ir_load(a->dtype, a->data, i);
	*tmp = f;
	*nbytes = n * 4;
	return f;
}

static int check_array(const npy_array *a, const char *path, sn_err *e)
{
	if ((unsigned)a->dtype >= IR_NDTYPES || a->rank < 0 || a->rank > IR_MAX_RANK)
		return sn_errf(e, SN_EINPUT, "%s: bad tensor description", path);
	uint64_t numel = 1;
	for (int d = 0; d < a->rank; d++) {
		if (a->shape[d] < 0)
			return sn_errf(e, SN_EINPUT, "%s: negative dim", path);
		numel *= (uint64_t)a->shape[d];
	}
	if (numel * ir_dtype_size(a->dtype) != a->nbytes)
		return sn_errf(e, SN_EINPUT, "%s: %s holds %zu bytes, its shape needs %llu", path,
			       a->name && a->name[0] ? a->name : "the tensor", a->nbytes,
			       (unsigned long long)(numel * ir_dtype_size(a->dtype)));
	return SN_OK;
}

int npy_write(const char *path, const npy_array *a, sn_err *e)
{
	if (check_array(a, path, e))
		return e->code;
	uint8_t h[1024];
	ir_dtype as;
	size_t hl = npy_header(a, h, sizeof h, &as);
	if (!hl)
		return sn_errf(e, SN_EINTERNAL, "%s: .npy header too long", path);
	void *tmp;
	size_t nb;
	const void *d = npy_data(a, as, &tmp, &nb, e);
	if (!d)
		return e->code;
	sn_out o = {0};
	int rc = sn_out_open(&o, path, 0666, e);
	if (!rc) {
		sn_out_write(&o, h, hl);
		sn_out_write(&o, d, nb);
		rc = sn_out_finish(&o, e);
	}
	if (!rc)
		rc = sn_out_commit(&o, e);
	sn_out_abort(&o);
	free(tmp);
	return rc;
}

static void put(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int npz_write(const char *path, const npy_array *a, size_t n, sn_err *e)
{
	for (size_t i = 0; i < n; i++) {
		if (check_array(a + i, path, e))
			return e->code;
		if (!a[i].name || !a[i].name[0] || strlen(a[i].name) > 400)
			return sn_errf(e, SN_EINPUT, "%s: every array of a .npz needs a name (up to 400 bytes)", path);
	}
	typedef struct ent {
		uint64_t off, size;
		uint32_t crc;
	} ent;
	ent *es = calloc(n ? n : 1, sizeof *es);
	uint8_t *cd = NULL;
	if (!es)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	sn_out o = {0};
	int rc = sn_out_open(&o, path, 0666, e);
	uint64_t at = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		uint8_t h[1024];
		ir_dtype as;
		size_t hl = npy_header(&a[i], h, sizeof h, &as);
		void *tmp;
		size_t nb;
		const void *d = hl ? npy_data(&a[i], as, &tmp, &nb, e) : NULL;
		if (!d) {
			rc = hl ? e->code : sn_errf(e, SN_EINTERNAL, "%s: .npy header too long", path);
			break;
		}
		size_t nl = strlen(a[i].name) + 4;
		es[i].off = at;
		es[i].size = hl + nb;
		es[i].crc = npy_crc32(npy_crc32(0, h, hl), d, nb);
		bool big = es[i].size >= 0xffffffffu;
		uint8_t lh[30 + 404 + 20];
		put(lh, 0x04034b50, 4);
		put(lh + 4, big ? 45 : 20, 2); /* version needed: 4.5 for ZIP64 */
		put(lh + 6, 0, 2);
		put(lh + 8, 0, 2);             /* stored */
		put(lh + 10, 0, 2);            /* time */
		put(lh + 12, (1 << 5) | 1, 2); /* date: 1980-01-01 */
		put(lh + 14, es[i].crc, 4);
		put(lh + 18, big ? 0xffffffffu : es[i].size, 4);
		put(lh + 22, big ? 0xffffffffu : es[i].size, 4);
		put(lh + 26, nl, 2);
		put(lh + 28, big ? 20 : 0, 2);
		memcpy(lh + 30, a[i].name, nl - 4);
		memcpy(lh + 30 + nl - 4, ".npy", 4);
		size_t ll = 30 + nl;
		if (big) {
			put(lh + ll, 1, 2);
			put(lh + ll + 2, 16, 2);
			put(lh + ll + 4, es[i].size, 8);
			put(lh + ll + 12, es[i].size, 8);
			ll += 20;
		}
		sn_out_write(&o, lh, ll);
		sn_out_write(&o, h, hl);
		sn_out_write(&o, d, nb);
		free(tmp);
		at += ll + es[i].size;
	}
	/* the central directory, then its end (ZIP64 records when needed) */
	size_t cap = n * (46 + 404 + 28) + 56 + 20 + 22, cl = 0;
	if (!rc && !(cd = malloc(cap)))
		rc = sn_errf(e, SN_EINTERNAL, "out of memory");
	for (size_t i = 0; !rc && i < n; i++) {
		size_t nl = strlen(a[i].name) + 4;
		bool bs = es[i].size >= 0xffffffffu, bo = es[i].off >= 0xffffffffu;
		size_t xl = bs || bo ? 4 + 16 * bs + 8 * bo : 0;
		uint8_t *c = cd + cl;
		put(c, 0x02014b50, 4);
		put(c + 4, 45 | 3 << 8, 2); /* made by: Unix, 4.5 */
		put(c + 6, xl ? 45 : 20, 2);
		put(c + 8, 0, 2);
		put(c + 10, 0, 2);
		put(c + 12, 0, 2);
		put(c + 14, (1 << 5) | 1, 2);
		put(c + 16, es[i].crc, 4);
		put(c + 20, bs ? 0xffffffffu : es[i].size, 4);
		put(c + 24, bs ? 0xffffffffu : es[i].size, 4);
		put(c + 28, nl, 2);
		put(c + 30, xl, 2);
		put(c + 32, 0, 2);
		put(c + 34, 0, 2);
		put(c + 36, 0, 2);
		put(c + 38, 0100644u << 16, 4); /* a regular file, rw-r--r-- */
		put(c + 42, bo ? 0xffffffffu : es[i].off, 4);
		memcpy(c + 46, a[i].name, nl - 4);
		memcpy(c + 46 + nl - 4, ".npy", 4);
		cl += 46 + nl;
		if (xl) {
			put(cd + cl, 1, 2);
			put(cd + cl + 2, xl - 4, 2);
			size_t x = cl + 4;
			if (bs) {
				put(cd + x, es[i].size, 8);
				put(cd + x + 8, es[i].size, 8);
				x += 16;
			}
			if (bo)
				put(cd + x, es[i].off, 8);
			cl += xl;
		}
	}
	if (!rc) {
		uint64_t cdoff = at, cdsize = cl;
		bool z64 = n >= 0xffff || cdoff >= 0xffffffffu || cdsize >= 0xffffffffu;
		if (z64) {
			uint8_t *r = cd + cl;
			put(r, 0x06064b50, 4);
			put(r + 4, 44, 8);
			put(r + 12, 45 | 3 << 8, 2);
			put(r + 14, 45, 2);
			put(r + 16, 0, 4);
			put(r + 20, 0, 4);
			put(r + 24, n, 8);
			put(r + 32, n, 8);
			put(r + 40, cdsize, 8);
			put(r + 48, cdoff, 8);
			put(r + 56, 0x07064b50, 4);
			put(r + 60, 0, 4);
			put(r + 64, cdoff + cdsize, 8);
			put(r + 72, 1, 4);
			cl += 76;
		}
		uint8_t *r = cd + cl;
		put(r, 0x06054b50, 4);
		put(r + 4, 0, 4);
		put(r + 8, z64 ? 0xffff : n, 2);
		put(r + 10, z64 ? 0xffff : n, 2);
		put(r + 12, z64 ? 0xffffffffu : cdsize, 4);
		put(r + 16, z64 ? 0xffffffffu : cdoff, 4);
		put(r + 20, 0, 2);
		cl += 22;
		sn_out_write(&o, cd, cl);
		rc = sn_out_finish(&o, e);
	}
	if (!rc)
		rc = sn_out_commit(&o, e);
	sn_out_abort(&o);
	free(cd);
	free(es);
	return rc;
}
