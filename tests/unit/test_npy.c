/* test_npy.c: the .npy/.npz reader against files NumPy wrote (tests/npy/,
 * values known by construction: README.md there), the writer read back,
 * every truncation and many corruptions of valid files refused cleanly,
 * the CRC-32 against its published check value, zip bombs refused before
 * they are inflated, and 65 000 members read with their names' check in
 * O(n log n). Runs in tests/. */
#include "frontend/npy.h"
#include "check.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static npy_array *get(npy_array *a, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(a[i].name, name))
			return &a[i];
	return NULL;
}

static void read_fixtures(void)
{
	npy_array *a;
	size_t n;
	sn_err e = {0};
	CHECK(npy_read("npy/f64_fortran.npy", &a, &n, &e) == SN_OK && n == 1);
	if (!e.code) {
		CHECK(a[0].dtype == IR_F32 && a[0].rank == 3 && a[0].shape[0] == 2 && a[0].shape[2] == 4);
		const float *f = a[0].data;
		int bad = 0;
		for (int i = 0; i < 24; i++) /* C order out of a Fortran file */
			bad += f[i] != (float)(i * 0.5 - 3);
		CHECK(bad == 0);
		CHECK_STR(a[0].name, "");
		npy_free(a, n);
	}
	CHECK(npy_read("npy/i2_big.npy", &a, &n, &e) == SN_OK && n == 1);
	if (!e.code) {
		CHECK(a[0].dtype == IR_I32 && a[0].rank == 2 && a[0].shape[0] == 3 && a[0].shape[1] == 2);
		const int32_t *v = a[0].data;
		CHECK(v[0] == 0 && v[1] == -1000 && v[5] == -5000);
		npy_free(a, n);
	}
	CHECK(npy_read("npy/u4.npy", &a, &n, &e) == SN_OK && n == 1);
	if (!e.code) {
		const int64_t *v = a[0].data;
		CHECK(a[0].dtype == IR_I64 && v[0] == 0 && v[1] == 1 && v[2] == 4294967295LL);
		npy_free(a, n);
	}
	CHECK(npy_read("npy/bool0d.npy", &a, &n, &e) == SN_OK && n == 1);
	if (!e.code) {
		CHECK(a[0].dtype == IR_BOOL && a[0].rank == 0 && a[0].nbytes == 1 && *(uint8_t *)a[0].data == 1);
		npy_free(a, n);
	}
	CHECK(npy_read("npy/stored.npz", &a, &n, &e) == SN_OK && n == 2);
	if (!e.code) {
		npy_array *x = get(a, n, "x"), *ids = get(a, n, "ids");
		CHECK(x && x->dtype == IR_F32 && x->shape[0] == 5 && ((float *)x->data)[4] == 4.0f);
		CHECK(ids && ids->dtype == IR_I64 && ids->rank == 2 && ((int64_t *)ids->data)[3] == 3);
		npy_free(a, n);
	}
	CHECK(npy_read("npy/deflated.npz", &a, &n, &e) == SN_OK && n == 2);
	if (!e.code) {
		npy_array *w = get(a, n, "w"), *v = get(a, n, "v");
		int bad = 0;
		for (int i = 0; w && i < 5000; i++)
			bad += ((int32_t *)w->data)[i] != i % 100;
		CHECK(w && w->dtype == IR_I32 && w->shape[0] == 50 && w->shape[1] == 100 && bad == 0);
		/* linspace(-1, 1, 7) in f16: -1, -2/3, -1/3, 0, ...; -2/3 rounds to 0xB955 */
		CHECK(v && v->dtype == IR_F16 && ((uint16_t *)v->data)[0] == 0xBC00 && ((uint16_t *)v->data)[1] == 0xB955 &&
		      ((uint16_t *)v->data)[3] == 0 && ((uint16_t *)v->data)[6] == 0x3C00);
		npy_free(a, n);
	}
	sn_err e2 = {0};
	CHECK(npy_read("npy/c8.npy", &a, &n, &e2) == SN_EINPUT && strstr(e2.msg, "'<c8'"));
	sn_err e3 = {0};
	CHECK(npy_read("npy/missing.npy", &a, &n, &e3) == SN_EINPUT && strstr(e3.msg, "missing.npy"));
	/* found by fuzz_npy: shape (0, 26666666666666666, 6666666, 66) has no
	 * element, but its dims' product overflowed while computing strides */
	sn_err e4 = {0};
	int rc4 = npy_read("fuzz/corpus_npy/regress-empty-huge-dims.npy", &a, &n, &e4);
	CHECK(rc4 == SN_OK || rc4 == SN_EINPUT);
	if (rc4 == SN_OK) {
		CHECK(n == 1 && a[0].shape[0] == 0);
		npy_free(a, n);
	}
	if (e.code)
		fprintf(stderr, "%s\n", e.msg);
}

/* every prefix of a valid file, and every byte flipped: refused or read,
 * never a crash (ASan watches) */
static void corrupt(const char *path, bool npz)
{
	FILE *f = fopen(path, "rb");
	unsigned char buf[4096];
	size_t len = f ? fread(buf, 1, sizeof buf, f) : 0;
	if (f)
		fclose(f);
	CHECK(len > 0);
	int refused = 0;
	for (size_t cut = 0; cut < len; cut++) {
		unsigned char *b = malloc(cut ? cut : 1);
		memcpy(b, buf, cut);
		npy_array *a = NULL, one;
		size_t n = 0;
		sn_err e = {0};
		int rc = npz ? npz_parse(b, cut, "cut", &a, &n, &e) : npy_parse(b, cut, "cut", &one, &e);
		refused += rc == SN_EINPUT;
		if (!rc && npz)
			npy_free(a, n);
		else if (!rc)
			free(one.data);
		free(b);
	}
	CHECK(refused == (int)len); /* a shorter file is never valid */
	for (size_t i = 0; i < len; i++) {
		unsigned char *b = malloc(len);
		memcpy(b, buf, len);
		b[i] ^= 0x5a;
		npy_array *a = NULL, one;
		size_t n = 0;
		sn_err e = {0};
		int rc = npz ? npz_parse(b, len, "flip", &a, &n, &e) : npy_parse(b, len, "flip", &one, &e);
		CHECK(rc == SN_OK || rc == SN_EINPUT);
		if (!rc && npz)
			npy_free(a, n);
		else if (!rc)
			free(one.data);
		free(b);
	}
}

static void round_trip(void)
{
	char dir[] = "/tmp/sinter-npy-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char p1[128], p2[128];
	snprintf(p1, sizeof p1, "%s/a.npz", dir);
	snprintf(p2, sizeof p2, "%s/b.npy", dir);
	float f[6] = {1.5f, -2, 0, 3.25f, 1e-8f, -7};
	int64_t q[3] = {-1, 1LL << 40, 7};
	uint16_t bf[2] = {0x3FC0, 0xC040}; /* bf16 1.5, -3: written as float32 */
	npy_array in[3] = {
		{.name = "f", .dtype = IR_F32, .rank = 2, .shape = {2, 3}, .data = f, .nbytes = sizeof f},
		{.name = "q", .dtype = IR_I64, .rank = 1, .shape = {3}, .data = q, .nbytes = sizeof q},
		{.name = "bf", .dtype = IR_BF16, .rank = 1, .shape = {2}, .data = bf, .nbytes = sizeof bf},
	};
	sn_err e = {0};
	CHECK(npz_write(p1, in, 3, &e) == SN_OK);
	CHECK(npy_write(p2, &in[1], &e) == SN_OK);
	npy_array *a;
	size_t n;
	CHECK(npy_read(p1, &a, &n, &e) == SN_OK && n == 3);
	if (!e.code) {
		CHECK(a[0].dtype == IR_F32 && a[0].shape[1] == 3 && !memcmp(a[0].data, f, sizeof f));
		CHECK(a[1].dtype == IR_I64 && !memcmp(a[1].data, q, sizeof q));
		CHECK(a[2].dtype == IR_F32 && ((float *)a[2].data)[0] == 1.5f && ((float *)a[2].data)[1] == -3.0f);
		CHECK_STR(a[2].name, "bf");
		npy_free(a, n);
	}
	CHECK(npy_read(p2, &a, &n, &e) == SN_OK && n == 1);
	if (!e.code) {
		CHECK(a[0].dtype == IR_I64 && a[0].rank == 1 && !memcmp(a[0].data, q, sizeof q));
		npy_free(a, n);
	}
	corrupt(p1, true);
	corrupt(p2, false);
	npy_array bad = {.name = "x", .dtype = IR_F32, .rank = 1, .shape = {4}, .data = f, .nbytes = 8};
	sn_err e2 = {0};
	CHECK(npy_write(p2, &bad, &e2) == SN_EINPUT && strstr(e2.msg, "needs 16"));
	unlink(p1);
	unlink(p2);
	rmdir(dir);
}

/* ---- archives built in memory (ZIP application note: local headers,
 * the central directory, its end record; no ZIP64) ---- */

typedef struct zbuf {
	unsigned char *p;
	size_t len, cap;
} zbuf;

static void zput(zbuf *z, const void *p, size_t n)
{
	if (z->len + n > z->cap) {
		z->cap = (z->len + n) * 2;
		z->p = realloc(z->p, z->cap);
	}
	memcpy(z->p + z->len, p, n);
	z->len += n;
}

static void zle(zbuf *z, uint64_t v, int n)
{
	unsigned char b[8];
	for (int i = 0; i < n; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	zput(z, b, (size_t)n);
}

typedef struct zmember {
	char name[32];
	int method;          /* 0 stored, 8 deflated */
	const void *data;    /* csize bytes as stored */
	uint32_t csize, usize, crc;
} zmember;

/* The archive of n members (its bytes malloc'ed into *len). */
static unsigned char *zip(const zmember *m, size_t n, size_t *len)
{
	zbuf z = {0}, cd = {0};
	for (size_t i = 0; i < n; i++) {
		size_t nl = strlen(m[i].name), off = z.len;
		zle(&z, 0x04034b50, 4), zle(&z, 20, 2), zle(&z, 0, 2), zle(&z, (uint64_t)m[i].method, 2);
		zle(&z, 0, 4), zle(&z, m[i].crc, 4), zle(&z, m[i].csize, 4), zle(&z, m[i].usize, 4);
		zle(&z, nl, 2), zle(&z, 0, 2), zput(&z, m[i].name, nl), zput(&z, m[i].data, m[i].csize);
		zle(&cd, 0x02014b50, 4), zle(&cd, 20, 2), zle(&cd, 20, 2), zle(&cd, 0, 2);
		zle(&cd, (uint64_t)m[i].method, 2), zle(&cd, 0, 4), zle(&cd, m[i].crc, 4), zle(&cd, m[i].csize, 4);
		zle(&cd, m[i].usize, 4), zle(&cd, nl, 2), zle(&cd, 0, 2), zle(&cd, 0, 2), zle(&cd, 0, 2);
		zle(&cd, 0, 2), zle(&cd, 0, 4), zle(&cd, off, 4), zput(&cd, m[i].name, nl);
	}
	size_t cdoff = z.len;
	zput(&z, cd.p, cd.len);
	zle(&z, 0x06054b50, 4), zle(&z, 0, 2), zle(&z, 0, 2), zle(&z, n, 2), zle(&z, n, 2);
	zle(&z, cd.len, 4), zle(&z, cdoff, 4), zle(&z, 0, 2);
	free(cd.p);
	*len = z.len;
	return z.p;
}

/* A version 1.0 .npy header for descr and shape (a Python tuple's text),
 * padded to 64 bytes, into h; its length. */
static size_t npy_hdr(unsigned char *h, const char *descr, const char *shape)
{
	char dict[200];
	int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
	size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64, hl = total - 10;
	memcpy(h, "\x93NUMPY\x01\x00", 8);
	h[8] = (unsigned char)hl, h[9] = (unsigned char)(hl >> 8);
	memset(h + 10, ' ', hl);
	memcpy(h + 10, dict, (size_t)n);
	h[total - 1] = '\n';
	return total;
}

/* Zip bombs: a deflated member of 2.1 MB (inside deflate's 1032:1, so
 * not "implausible") whose uncompressed size is 2 GiB. Its stream is a
 * stored block holding a .npy header, then noise: what is inflated of it
 * decides the message. It was inflated whole (2 GiB allocated and
 * written) before anything was refused; now only the header is, and the
 * member is refused from it, whatever the machine's memory. */
static void zip_bomb(void)
{
	const uint32_t big = 2147483648u - 4096; /* the declared uncompressed size */
	size_t clen = 2100000;
	unsigned char *c = malloc(clen);
	for (size_t i = 0; i < clen; i++)
		c[i] = (unsigned char)(i * 2654435761u >> 13);
	unsigned char h[256];
	/* 1. the header says 8 bytes of data, the member 2 GiB: refused */
	size_t hl = npy_hdr(h, "<f4", "(2,)");
	c[0] = 0; /* BFINAL 0, BTYPE 00 (stored) */
	c[1] = (unsigned char)hl, c[2] = (unsigned char)(hl >> 8), c[3] = (unsigned char)~hl,
	c[4] = (unsigned char)(~hl >> 8);
	memcpy(c + 5, h, hl);
	zmember m = {.name = "x.npy", .method = 8, .data = c, .csize = (uint32_t)clen, .usize = big};
	size_t len;
	unsigned char *z = zip(&m, 1, &len);
	npy_array *a = NULL;
	size_t n = 0;
	sn_err e = {0};
	CHECK(npz_parse(z, len, "bomb.npz", &a, &n, &e) == SN_EINPUT);
	CHECK(strstr(e.msg, "bomb.npz: x.npy: its header's shape and dtype need 8 bytes of data, the ZIP entry holds") ==
	      e.msg);
	free(z);
	/* 2. the header agrees (f8, (big - 128) / 8 elements): refused when
	 * it does not fit the limit, naming both sizes */
	char shape[40];
	snprintf(shape, sizeof shape, "(%u,)", (unsigned)((big - 128) / 8));
	hl = npy_hdr(h, "<f8", shape);
	CHECK(hl == 128);
	memcpy(c + 5, h, hl);
	z = zip(&m, 1, &len);
	sn_err e2 = {0};
	CHECK(npz_parse_max(z, len, "bomb.npz", 64 << 20, "the limit", &a, &n, &e2) == SN_EINPUT);
	CHECK(strstr(e2.msg, "bomb.npz: its arrays need ") == e2.msg && strstr(e2.msg, "more than the limit (64.0 MiB)") &&
	      strstr(e2.msg, "refused before inflating"));
	if (!strstr(e2.msg, "more than the limit (64.0 MiB)"))
		fprintf(stderr, "%s\n", e2.msg);
	free(z);
	free(c);
	/* a real archive within the limit reads; below it, refused: w is
	 * 5000 i32 and v 7 f16 (20014 bytes), w inflated (20128) */
	FILE *f = fopen("npy/deflated.npz", "rb");
	unsigned char buf[65536];
	size_t got = f ? fread(buf, 1, sizeof buf, f) : 0;
	if (f)
		fclose(f);
	sn_err e3 = {0}, e4 = {0};
	CHECK(npz_parse_max(buf, got, "d.npz", 40142, "the limit", &a, &n, &e3) == SN_OK && n == 2);
	if (!e3.code)
		npy_free(a, n);
	CHECK(npz_parse_max(buf, got, "d.npz", 40141, "the limit", &a, &n, &e4) == SN_EINPUT &&
	      strstr(e4.msg, "need 40142 bytes"));
	if (!strstr(e4.msg, "need 40142 bytes"))
		fprintf(stderr, "%s\n", e4.msg);
}

/* 65 000 members (the most a ZIP without ZIP64 holds), the last one's
 * name a repeat: the duplicate check compared every pair (70 000: 8 s);
 * now the names are sorted first. CPU time,
 * not wall time: the shared machine's load does not count. */
static void many_members(void)
{
	enum { N = 65000 };
	unsigned char one[256];
	size_t hl = npy_hdr(one, "<f4", "(1,)");
	float v = 1.5f;
	memcpy(one + hl, &v, 4);
	uint32_t crc = npy_crc32(0, one, hl + 4);
	zmember *m = calloc(N, sizeof *m);
	for (int i = 0; i < N; i++) {
		m[i] = (zmember){.method = 0, .data = one, .csize = (uint32_t)(hl + 4), .usize = (uint32_t)(hl + 4),
				 .crc = crc};
		snprintf(m[i].name, sizeof m[i].name, "a%05d.npy", i == N - 1 ? 1234 : i);
	}
	size_t len;
	unsigned char *z = zip(m, N, &len);
	npy_array *a = NULL;
	size_t n = 0;
	sn_err e = {0};
	clock_t t0 = clock();
	CHECK(npz_parse(z, len, "many.npz", &a, &n, &e) == SN_EINPUT);
	double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
	CHECK_STR(e.msg, "many.npz: two arrays named a01234");
	if (!(cpu < 1.5))
		fprintf(stderr, "65000 members: %.2f s of CPU to find the repeated name\n", cpu);
	CHECK(cpu < 1.5);
	free(z);
	/* without the repeat: every member read, in archive order */
	snprintf(m[N - 1].name, sizeof m[N - 1].name, "a%05d.npy", N - 1);
	z = zip(m, N, &len);
	sn_err e2 = {0};
	CHECK(npz_parse(z, len, "many.npz", &a, &n, &e2) == SN_OK && n == N);
	if (!e2.code) {
		CHECK_STR(a[N - 1].name, "a64999");
		CHECK(a[N - 1].nbytes == 4 && ((float *)a[N - 1].data)[0] == 1.5f);
		npy_free(a, n);
	}
	free(z);
	free(m);
}

int main(void)
{
	CHECK(npy_crc32(0, "123456789", 9) == 0xCBF43926u); /* the check value of CRC-32/ISO-HDLC */
	read_fixtures();
	round_trip();
	corrupt("npy/deflated.npz", true);
	corrupt("npy/f64_fortran.npy", false);
	zip_bomb();
	many_members();
	return check_done("npy");
}
