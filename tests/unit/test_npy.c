/* test_npy.c: the .npy/.npz reader against files NumPy wrote (tests/npy/,
 * values known by construction: README.md there), the writer read back,
 * every truncation and many corruptions of valid files refused cleanly,
 * and the CRC-32 against its published check value. Runs in tests/. */
#include "frontend/npy.h"
#include "check.h"

#include <stdlib.h>
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

int main(void)
{
	CHECK(npy_crc32(0, "123456789", 9) == 0xCBF43926u); /* the check value of CRC-32/ISO-HDLC */
	read_fixtures();
	round_trip();
	corrupt("npy/deflated.npz", true);
	corrupt("npy/f64_fortran.npy", false);
	return check_done("npy");
}
