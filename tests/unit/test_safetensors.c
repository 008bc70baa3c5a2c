/* test_safetensors.c: the safetensors reader and writer against byte
 * layouts written here by hand from the published format, conversions
 * against hand-worked bit patterns, and malformed files with their exact
 * messages. Runs in tests/ (fixtures in st/). */
#include "frontend/safetensors.h"
#include "sinter.h"
#include "sinter_tools.h"
#include "check.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[64];

/* A file image: u64 length of header, header, then data. */
static unsigned char *image(const char *header, const void *data, size_t dlen, size_t *len)
{
	size_t h = strlen(header);
	*len = 8 + h + dlen;
	unsigned char *b = malloc(*len);
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)((uint64_t)h >> (8 * i));
	memcpy(b + 8, header, h);
	if (dlen)
		memcpy(b + 8 + h, data, dlen);
	return b;
}

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *de; d && (de = readdir(d));)
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* ---- every dtype through st_write and st_open ---------------------------- */

static void test_roundtrip(void)
{
	double f64[3] = {0.1, -2.5e300, 3.0 / 7};
	float f32[2][2] = {{1.5f, -0.3f}, {1e-30f, 65504.5f}};
	uint16_t f16[3] = {0x3555, 0xfbff, 0x0001};
	uint16_t bf16[2] = {0x3dcd, 0xc2f7};
	uint8_t e4m3[4] = {0x38, 0x7e, 0xfe, 0x01};
	uint8_t e5m2[3] = {0x3c, 0x7b, 0x83};
	int64_t i64[2] = {INT64_C(0x123456789abcdef0), INT64_MIN + 5};
	int32_t i32 = -123456789; /* a scalar */
	int8_t i8[5] = {-128, 127, -1, 42, 7};
	uint8_t u8[2][1][2] = {{{255, 1}}, {{128, 9}}};
	uint8_t bools[3] = {1, 0, 1};
	st_entry in[] = {
		{"f64 \"quoted\"", ST_F64, 1, {3}, f64, sizeof f64, NULL, 0},
		{"layer.0.weight", ST_F32, 2, {2, 2}, f32, sizeof f32, NULL, 0},
		{"f16\n\x01", ST_F16, 1, {3}, f16, sizeof f16, NULL, 0},
		{"bf16", ST_BF16, 2, {1, 2}, bf16, sizeof bf16, NULL, 0},
		{"e4m3", ST_F8_E4M3, 1, {4}, e4m3, sizeof e4m3, NULL, 0},
		{"e5m2", ST_F8_E5M2, 1, {3}, e5m2, sizeof e5m2, NULL, 0},
		{"i64", ST_I64, 1, {2}, i64, sizeof i64, NULL, 0},
		{"i32 scalar", ST_I32, 0, {0}, &i32, sizeof i32, NULL, 0},
		{"i8 \xc3\xa9\xf0\x9f\x98\x80", ST_I8, 1, {5}, i8, sizeof i8, NULL, 0},
		{"u8", ST_U8, 3, {2, 1, 2}, u8, sizeof u8, NULL, 0},
		{"empty", ST_F32, 2, {0, 3}, NULL, 0, NULL, 0},
		{"bool", ST_BOOL, 1, {3}, bools, sizeof bools, NULL, 0},
	};
	const char *meta[] = {"format", "pt", "note", "a \"b\"\\c\td \xc3\xa9"};
	char path[128];
	snprintf(path, sizeof path, "%s/all.safetensors", tmpdir);
	sn_err e = {0};
	CHECK(st_write(path, in, SN_COUNT(in), meta, 2, &e) == SN_OK);
	CHECK_STR(e.msg, "");
	/* writing again replaces the file and leaves no temporary behind */
	CHECK(st_write(path, in, SN_COUNT(in), meta, 2, &e) == SN_OK);
	CHECK(count_files(tmpdir) == 1);

	st_file *f;
	CHECK(st_open(path, &f, &e) == SN_OK);
	CHECK_STR(e.msg, "");
	if (!f)
		return;
	CHECK(st_count(f) == SN_COUNT(in));
	for (size_t i = 0; i < SN_COUNT(in) && i < st_count(f); i++) {
		const st_entry *g = st_get(f, i);
		CHECK_STR(g->name, in[i].name);
		CHECK(g->dtype == in[i].dtype);
		CHECK(g->rank == in[i].rank);
		CHECK(memcmp(g->shape, in[i].shape, (size_t)in[i].rank * sizeof(int64_t)) == 0);
		CHECK(g->nbytes == in[i].nbytes);
		/* st_open leaves the bytes in the file: st_read_as preads them */
		CHECK(g->data == NULL);
		unsigned char got[64];
		int t = st_to_ir(g->dtype);
		if (t >= 0 && in[i].nbytes <= sizeof got) {
			CHECK(st_read_as(g, (ir_dtype)t, got, &e) == SN_OK);
			CHECK(!in[i].nbytes || memcmp(got, in[i].data, in[i].nbytes) == 0);
		}
		CHECK(st_find(f, in[i].name) == g);
	}
	/* the header is padded to 8 bytes, so the first tensor is 8-aligned */
	FILE *raw = fopen(path, "rb");
	unsigned char h8[8] = {0};
	CHECK(raw && fread(h8, 1, 8, raw) == 8);
	if (raw)
		fclose(raw);
	CHECK(h8[0] % 8 == 0);
	CHECK(st_find(f, "nope") == NULL);
	CHECK(st_meta_count(f) == 2);
	CHECK_STR(st_meta_key(f, 1), "note");
	CHECK_STR(st_meta_value(f, 1), meta[3]);
	CHECK_STR(st_meta_find(f, "format"), "pt");
	/* values through st_read_as, checked against the inputs */
	float ef[4];
	CHECK(st_read_as(st_find(f, "e4m3"), IR_F32, ef, &e) == SN_OK);
	CHECK(ef[0] == 1.0f && ef[1] == 448.0f && ef[2] == -448.0f && ef[3] == 0.001953125f);
	int64_t sc;
	CHECK(st_read_as(st_find(f, "i32 scalar"), IR_I64, &sc, &e) == SN_OK);
	CHECK(sc == -123456789);
	st_close(f);
	unlink(path);
}

/* ---- a file written by hand, byte by byte, as the spec says -------------- */

static void test_hand_bytes(void)
{
	/* Header of 241 bytes (odd: the data is unaligned), keys out of order,
	 * an unknown key, whitespace, \u escapes; tensors listed b, a, é😀. */
	static const char header[] =
		" { \"b\" : {\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[8,16]},\n"
		"\"__metadata__\":{\"k\":\"v\\u0041\"},"
		"\"a\":{\"data_offsets\":[0,8],\"shape\":[2,2],\"dtype\":\"BF16\",\"x\":[1,{\"y\":null}]},"
		"\"\\u00e9\\ud83d\\ude00\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[16,16]}   } ";
	static const unsigned char data[18] = {
		0x80, 0x3f, 0x00, 0xc0, 0x00, 0x3f, 0x40, 0x40, /* bf16 1, -2, 0.5, 3 */
		0xff, 0xff, 0xff, 0xff, 0x04, 0x03, 0x02, 0x01, /* i32 -1, 0x01020304 */
		0xaa, 0xbb,                                     /* a hole at the end */
	};
	CHECK(strlen(header) % 2 == 1);
	size_t len;
	unsigned char *buf = image(header, data, sizeof data, &len);
	sn_err e = {0};
	st_file *f;
	CHECK(st_parse(buf, len, "hand", &f, &e) == SN_OK);
	CHECK_STR(e.msg, "");
	if (f) {
		CHECK(st_count(f) == 3);
		const st_entry *b = st_get(f, 0), *a = st_get(f, 1), *u = st_get(f, 2);
		CHECK_STR(b->name, "b");
		CHECK_STR(a->name, "a");
		CHECK_STR(u->name, "\xc3\xa9\xf0\x9f\x98\x80");
		CHECK(a->dtype == ST_BF16 && a->rank == 2 && a->shape[0] == 2 && a->shape[1] == 2);
		CHECK(a->nbytes == 8 && (const unsigned char *)a->data == buf + 8 + strlen(header));
		CHECK(b->dtype == ST_I32 && b->rank == 1 && b->shape[0] == 2 && b->nbytes == 8);
		CHECK(u->dtype == ST_U8 && u->rank == 1 && u->shape[0] == 0 && u->nbytes == 0);
		CHECK_STR(st_meta_find(f, "k"), "vA");
		float af[4];
		CHECK(st_read_as(a, IR_F32, af, &e) == SN_OK);
		CHECK(af[0] == 1.0f && af[1] == -2.0f && af[2] == 0.5f && af[3] == 3.0f);
		int64_t bi[2];
		CHECK(st_read_as(b, IR_I64, bi, &e) == SN_OK);
		CHECK(bi[0] == -1 && bi[1] == 0x01020304);
		int32_t bs[2];
		CHECK(st_read_as(b, IR_I32, bs, &e) == SN_OK); /* same dtype: a copy */
		CHECK(bs[0] == -1 && bs[1] == 0x01020304);
		st_close(f);
	}
	free(buf);
}

/* ---- the writer's exact bytes ----------------------------------------------- */

static void test_writer_bytes(void)
{
	float x[2] = {1.0f, -2.0f};
	st_entry en = {"x", ST_F32, 1, {2}, x, sizeof x, NULL, 0};
	const char *meta[] = {"fmt", "pt"};
	/* 82 bytes of JSON + 6 spaces = 88 = 0x58 */
	static const char want_header[] =
		"{\"__metadata__\":{\"fmt\":\"pt\"},\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}      ";
	unsigned char want[8 + 88 + 8] = {0x58, 0, 0, 0, 0, 0, 0, 0};
	CHECK(sizeof want_header - 1 == 88);
	memcpy(want + 8, want_header, 88);
	memcpy(want + 96, (const unsigned char[]){0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0}, 8);

	char path[128];
	snprintf(path, sizeof path, "%s/w.safetensors", tmpdir);
	sn_err e = {0};
	CHECK(st_write(path, &en, 1, meta, 1, &e) == SN_OK);
	FILE *fp = fopen(path, "rb");
	unsigned char got[256];
	size_t n = fp ? fread(got, 1, sizeof got, fp) : 0;
	if (fp)
		fclose(fp);
	CHECK(n == sizeof want);
	CHECK(n == sizeof want && memcmp(got, want, n) == 0);

	/* an escaped name, no metadata, zero tensors */
	int8_t v = -3;
	st_entry q = {"a\"\\\n", ST_I8, 0, {0}, &v, 1, NULL, 0};
	CHECK(st_write(path, &q, 1, NULL, 0, &e) == SN_OK);
	fp = fopen(path, "rb");
	n = fp ? fread(got, 1, sizeof got, fp) : 0;
	if (fp)
		fclose(fp);
	static const char qh[] = "{\"a\\\"\\\\\\u000a\":{\"dtype\":\"I8\",\"shape\":[],\"data_offsets\":[0,1]}}  ";
	CHECK(sizeof qh - 1 == 64);
	CHECK(n == 8 + 64 + 1 && got[0] == 64 && memcmp(got + 8, qh, 64) == 0 && got[72] == 0xfd);
	CHECK(st_write(path, NULL, 0, NULL, 0, &e) == SN_OK);
	fp = fopen(path, "rb");
	n = fp ? fread(got, 1, sizeof got, fp) : 0;
	if (fp)
		fclose(fp);
	CHECK(n == 16 && got[0] == 8 && memcmp(got + 8, "{}      ", 8) == 0);
	CHECK_STR(e.msg, "");
	unlink(path);

	/* refusals, before anything is written */
	st_entry dup[2] = {en, en};
	e = (sn_err){0};
	CHECK(st_write(path, dup, 2, NULL, 0, &e) == SN_EINPUT);
	char want_msg[256];
	snprintf(want_msg, sizeof want_msg, "cannot write %s: duplicate tensor \"x\"", path);
	CHECK_STR(e.msg, want_msg);
	const char *dmeta[] = {"k", "1", "k", "2"};
	e = (sn_err){0};
	CHECK(st_write(path, &en, 1, dmeta, 2, &e) == SN_EINPUT);
	snprintf(want_msg, sizeof want_msg, "cannot write %s: duplicate metadata key \"k\"", path);
	CHECK_STR(e.msg, want_msg);
	st_entry bad = {"y", ST_F32, 2, {2, 3}, x, sizeof x, NULL, 0};
	e = (sn_err){0};
	CHECK(st_write(path, &bad, 1, NULL, 0, &e) == SN_EINPUT);
	snprintf(want_msg, sizeof want_msg, "cannot write %s: tensor \"y\": F32[2,3] needs 24 bytes, got 8", path);
	CHECK_STR(e.msg, want_msg);
	st_entry md = {"__metadata__", ST_F32, 1, {2}, x, sizeof x, NULL, 0};
	e = (sn_err){0};
	CHECK(st_write(path, &md, 1, NULL, 0, &e) == SN_EINPUT);
	CHECK(count_files(tmpdir) == 0);
	e = (sn_err){0};
	CHECK(st_write("/nonexistent-dir/o.safetensors", &en, 1, NULL, 0, &e) == SN_EINPUT);
	CHECK_STR(e.msg, "cannot write /nonexistent-dir/o.safetensors: No such file or directory");
}

/* ---- conversions -------------------------------------------------------------- */

static void test_read_as(void)
{
	sn_err e = {0};
	/* F64 0.1 = 1.6 * 2^-4: bf16 keeps 7 bits, 1.6 * 128 = 204.8 -> 205 =
	 * 0xcd, exponent 123 = 0x7b: 0 01111011 1001101 = 0x3dcd. Unaligned. */
	unsigned char raw[1 + 2 * 8];
	double src64[2] = {0.1, -1.0 / 3};
	memcpy(raw + 1, src64, sizeof src64);
	st_entry a = {"a", ST_F64, 1, {2}, raw + 1, 16, NULL, 0};
	uint16_t bf[2];
	CHECK(st_read_as(&a, IR_BF16, bf, &e) == SN_OK);
	CHECK(bf[0] == 0x3dcd);
	/* -1/3 = -1.333 * 2^-2: 1.333 * 128 = 170.67 -> 171 = 0xab: 1 01111101 0101011 */
	CHECK(bf[1] == 0xbeab);
	/* F64 0.1 -> F32 is the float nearest 0.1, 0x3dcccccd */
	float f[2];
	uint32_t fb;
	CHECK(st_read_as(&a, IR_F32, f, &e) == SN_OK);
	memcpy(&fb, &f[0], 4);
	CHECK(fb == 0x3dcccccd);

	/* F32 1/3 -> F16: 1.333 * 2^-2, 1.333 * 1024 = 1365.3 -> 1365 = 0x555
	 * (mantissa 0x155), exponent 13: 0 01101 0101010101 = 0x3555.
	 * 65520 is halfway between 65504 and 65536: ties to even overflows to inf. */
	float third[3] = {1.0f / 3, 65520.0f, -0.0f};
	st_entry b = {"b", ST_F32, 1, {3}, third, sizeof third, NULL, 0};
	uint16_t h[3];
	CHECK(st_read_as(&b, IR_F16, h, &e) == SN_OK);
	CHECK(h[0] == 0x3555 && h[1] == 0x7c00 && h[2] == 0x8000);

	/* I64 -> I32 saturates; -> F32 is exact below 2^24 */
	int64_t big[4] = {5, -7, INT64_C(3000000000), INT64_C(-3000000000)};
	st_entry c = {"c", ST_I64, 1, {4}, big, sizeof big, NULL, 0};
	int32_t s32[4];
	CHECK(st_read_as(&c, IR_I32, s32, &e) == SN_OK);
	CHECK(s32[0] == 5 && s32[1] == -7 && s32[2] == INT32_MAX && s32[3] == INT32_MIN);

	/* F32 -> I8 truncates toward zero and saturates */
	float fl[4] = {2.7f, -3.9f, 300.0f, -1000.0f};
	st_entry d = {"d", ST_F32, 2, {2, 2}, fl, sizeof fl, NULL, 0};
	int8_t s8[4];
	CHECK(st_read_as(&d, IR_I8, s8, &e) == SN_OK);
	CHECK(s8[0] == 2 && s8[1] == -3 && s8[2] == 127 && s8[3] == -128);
	/* F32 -> F8_E4M3: 1.0 = 0 0111 000 = 0x38; 448 = 1.75 * 2^8 = 0 1111 110 = 0x7e;
	 * 300 = 1.171875 * 2^8: 1.171875 * 8 = 9.375 -> 9, so 1.125 * 2^8 = 288 =
	 * 0 1111 001 = 0x79 (320, the next one up, is further away) */
	float f8in[3] = {1.0f, 448.0f, 300.0f};
	st_entry g = {"g", ST_F32, 1, {3}, f8in, sizeof f8in, NULL, 0};
	uint8_t f8[3];
	CHECK(st_read_as(&g, IR_F8E4M3, f8, &e) == SN_OK);
	CHECK(f8[0] == 0x38 && f8[1] == 0x7e && f8[2] == 0x79);

	/* F16 subnormal 0x0001 = 2^-24; U8 -> BOOL; BOOL -> F32 */
	uint16_t sub[2] = {0x0001, 0xc100}; /* 2^-24, -2.5 */
	st_entry s = {"s", ST_F16, 1, {2}, sub, sizeof sub, NULL, 0};
	CHECK(st_read_as(&s, IR_F32, f, &e) == SN_OK);
	CHECK(f[0] == 0x1p-24f && f[1] == -2.5f);
	uint8_t u[3] = {0, 5, 255};
	st_entry uu = {"u", ST_U8, 1, {3}, u, sizeof u, NULL, 0};
	uint8_t bo[3];
	CHECK(st_read_as(&uu, IR_BOOL, bo, &e) == SN_OK);
	CHECK(bo[0] == 0 && bo[1] == 1 && bo[2] == 1);
	st_entry bb = {"bb", ST_BOOL, 1, {3}, bo, sizeof bo, NULL, 0};
	float bf32[3];
	CHECK(st_read_as(&bb, IR_F32, bf32, &e) == SN_OK);
	CHECK(bf32[0] == 0.0f && bf32[1] == 1.0f && bf32[2] == 1.0f);
	CHECK_STR(e.msg, "");

	/* a shape that does not match nbytes is refused */
	st_entry w = {"w", ST_F32, 1, {5}, fl, sizeof fl, NULL, 0};
	CHECK(st_read_as(&w, IR_F32, bf32, &e) == SN_EINPUT);
	CHECK_STR(e.msg, "tensor \"w\": 16 bytes do not match its shape");

	/* the dtype maps */
	CHECK(st_to_ir(ST_F64) == -1 && st_to_ir(ST_BF16) == IR_BF16 && st_to_ir(ST_BOOL) == IR_BOOL);
	for (int t = 0; t < IR_NDTYPES; t++)
		CHECK(st_to_ir(st_from_ir((ir_dtype)t)) == t);
	CHECK_STR(st_dtype_name(ST_F8_E5M2), "F8_E5M2");
	CHECK(st_dtype_size(ST_F64) == 8 && st_dtype_size(ST_BF16) == 2 && st_dtype_size(ST_BOOL) == 1);
}

/* ---- malformed files ------------------------------------------------------------ */

static const unsigned char pattern[32] = {
	1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
	17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
};

static void bad(const char *header, size_t dlen, const char *want)
{
	size_t len;
	unsigned char *buf = image(header, pattern, dlen, &len);
	sn_err e = {0};
	st_file *f = (st_file *)1;
	int rc = st_parse(buf, len, "m.safetensors", &f, &e);
	CHECK(rc == SN_EINPUT);
	CHECK(f == NULL);
	if (strcmp(e.msg, want) != 0)
		fprintf(stderr, "header: %s\n", header);
	CHECK_STR(e.msg, want);
	free(buf);
}

#define T(x) "{\"t\":{" x "}}"

static void test_malformed(void)
{
	sn_err e = {0};
	st_file *f;
	/* shorter than the length field */
	CHECK(st_parse("\x02\0\0\0\0", 5, "m.safetensors", &f, &e) == SN_EINPUT);
	CHECK_STR(e.msg, "m.safetensors: file of 5 bytes is too short for a safetensors header");
	/* header length beyond the file: 123456789 = 0x075bcd15 */
	unsigned char big[1024];
	memset(big, ' ', sizeof big);
	memcpy(big, "\x15\xcd\x5b\x07\0\0\0\0", 8);
	e = (sn_err){0};
	CHECK(st_parse(big, sizeof big, "m.safetensors", &f, &e) == SN_EINPUT);
	CHECK_STR(e.msg, "m.safetensors: header length 123456789 exceeds the file size 1024");
	/* 1017 = 1024 - 7: one byte too many */
	memcpy(big, "\xf9\x03\0\0\0\0\0\0", 8);
	e = (sn_err){0};
	CHECK(st_parse(big, sizeof big, "m.safetensors", &f, &e) == SN_EINPUT);
	CHECK_STR(e.msg, "m.safetensors: header length 1017 exceeds the file size 1024");
	/* over the 100 MB limit (the buffer is large but only its first bytes are read) */
	size_t hugelen = 100000001 + 8;
	unsigned char *huge = malloc(hugelen);
	memcpy(huge, "\x01\xe1\xf5\x05\0\0\0\0", 8); /* 100000001 */
	e = (sn_err){0};
	CHECK(st_parse(huge, hugelen, "m.safetensors", &f, &e) == SN_EINPUT);
	CHECK_STR(e.msg, "m.safetensors: header length 100000001 exceeds the limit of 100000000 bytes");
	free(huge);

	bad("", 0, "m.safetensors: header is not a JSON object");
	bad("[1,2]", 0, "m.safetensors: header is not a JSON object");
	bad("{\"a\" 1}", 0, "m.safetensors: header byte 5: expected ':' after a tensor name, found '1'");
	bad("{\"a\":{}", 0, "m.safetensors: tensor \"a\": missing \"dtype\"");
	bad("{\"\xff\":{}}", 0, "m.safetensors: header byte 2: invalid UTF-8 in a string");
	bad("{\"\xc0\xaf\":{}}", 0, "m.safetensors: header byte 2: invalid UTF-8 in a string"); /* overlong '/' */
	bad("{\"\xed\xa0\x80\":{}}", 0, "m.safetensors: header byte 2: invalid UTF-8 in a string"); /* surrogate */
	bad("{} x", 0, "m.safetensors: header byte 3: unexpected characters after the JSON object");
	/* a NUL byte after the object is not whitespace */
	memcpy(big, "\x04\0\0\0\0\0\0\0{} \0", 12);
	e = (sn_err){0};
	CHECK(st_parse(big, 12, "m.safetensors", &f, &e) == SN_EINPUT);
	CHECK_STR(e.msg, "m.safetensors: header byte 3: unexpected characters after the JSON object");
	bad("{\"a\":1,}", 0, "m.safetensors: tensor \"a\" is not an object");
	bad(T("\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[0,2]"), 2,
	    "m.safetensors: tensor \"t\": unsupported dtype \"I16\"");
	bad(T("\"dtype\":\"F32\",\"data_offsets\":[0,4]"), 4, "m.safetensors: tensor \"t\": missing \"shape\"");
	bad(T("\"dtype\":\"F32\",\"shape\":[1]"), 4, "m.safetensors: tensor \"t\": missing \"data_offsets\"");
	bad(T("\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]"), 4,
	    "m.safetensors: tensor \"t\": \"dtype\" is not a string");
	bad(T("\"dtype\":\"F32\",\"shape\":{},\"data_offsets\":[0,4]"), 4,
	    "m.safetensors: tensor \"t\": \"shape\" is not a list");
	bad(T("\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]"), 4,
	    "m.safetensors: tensor \"t\": shape[0] is not a number");
	bad(T("\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,4]"), 4,
	    "m.safetensors: tensor \"t\": shape[1] is negative: -1");
	bad(T("\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]"), 4,
	    "m.safetensors: tensor \"t\": shape[0] is not an integer: 1.0");
	bad(T("\"dtype\":\"F32\",\"shape\":[1e0],\"data_offsets\":[0,4]"), 4,
	    "m.safetensors: tensor \"t\": shape[0] is not an integer: 1e0");
	bad(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,9223372036854775808]"), 4,
	    "m.safetensors: tensor \"t\": data_offsets[1] overflows int64: 9223372036854775808");
	bad(T("\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]"), 4,
	    "m.safetensors: tensor \"t\": rank exceeds the maximum 8");
	bad(T("\"dtype\":\"F32\",\"shape\":[4611686018427387904,2],\"data_offsets\":[0,4]"), 4,
	    "m.safetensors: tensor \"t\": the byte size of F32[4611686018427387904,2] overflows");
	bad(T("\"dtype\":\"F32\",\"shape\":[2305843009213693952],\"data_offsets\":[0,4]"), 4,
	    "m.safetensors: tensor \"t\": the byte size of F32[2305843009213693952] overflows");
	bad(T("\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]"), 32,
	    "m.safetensors: tensor \"t\": F32[2,3] needs 24 bytes but data_offsets [0, 20] span 20");
	bad(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]"), 32,
	    "m.safetensors: tensor \"t\": data_offsets [8, 4] end before they begin");
	bad(T("\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]"), 16,
	    "m.safetensors: tensor \"t\": data_offsets [0, 24] exceed the data buffer of 16 bytes");
	bad(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]"), 16,
	    "m.safetensors: tensor \"t\": data_offsets must hold 2 integers");
	bad(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4]"), 16,
	    "m.safetensors: tensor \"t\": data_offsets must hold 2 integers");
	bad(T("\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]"), 16,
	    "m.safetensors: tensor \"t\": duplicate key \"dtype\"");
	bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
	    "\"z\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[2,2]},"
	    "\"b\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[12,16]}}", 16,
	    "m.safetensors: tensors \"a\" [0, 16] and \"b\" [12, 16] overlap");
	bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
	    "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
	    "m.safetensors: duplicate tensor \"a\"");
	bad("{\"__metadata__\":[\"x\"]}", 0, "m.safetensors: \"__metadata__\" is not an object");
	bad("{\"__metadata__\":{\"k\":1}}", 0,
	    "m.safetensors: \"__metadata__\": the value of \"k\" is not a string");
	bad("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0,
	    "m.safetensors: \"__metadata__\": duplicate key \"k\"");
	bad("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "m.safetensors: duplicate \"__metadata__\"");
	bad("{\"a\\u0000b\":{}}", 0, "m.safetensors: tensor name \"a...\" holds a NUL character");
	bad("{\"\\ud800x\":{}}", 0, "m.safetensors: header byte 2: unpaired surrogate \\ud800");
	bad("{\"\\u12\":{}}", 0, "m.safetensors: header byte 2: \\u needs four hex digits");
	bad("{\"\\q\":{}}", 0, "m.safetensors: header byte 2: invalid escape in a string");
	bad("{\"a\tb\":{}}", 0, "m.safetensors: header byte 3: control character 0x09 in a string");
	bad("{\"a", 0, "m.safetensors: header byte 3: unterminated string");
	bad(T("\"x\":tru"), 0, "m.safetensors: header byte 10: invalid literal (expected 'true')");
	bad(T("\"x\":01"), 0, "m.safetensors: header byte 11: expected '}' or ',' in a tensor, found '1'");
	bad(T("\"x\":-"), 0, "m.safetensors: header byte 11: expected a digit, found '}'");

	/* nesting: 64 levels inside an unknown key are fine, 65 are not */
	char deep[400];
	for (int lim = 64; lim <= 65; lim++) {
		int k = snprintf(deep, sizeof deep, "{\"t\":{\"x\":");
		for (int i = 0; i < lim; i++)
			deep[k++] = '[';
		for (int i = 0; i < lim; i++)
			deep[k++] = ']';
		snprintf(deep + k, sizeof deep - (size_t)k, "}}");
		if (lim == 64)
			bad(deep, 0, "m.safetensors: tensor \"t\": missing \"dtype\"");
		else
			bad(deep, 0, "m.safetensors: header byte 74: nested deeper than 64 levels");
	}

	/* accepted edge cases: trailing spaces, an empty object, holes */
	const char *ok[] = {
		"{}        ",
		"\t{ }\r\n",
		"{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[6,8]},\"b\":{\"dtype\":\"U8\","
		"\"shape\":[],\"data_offsets\":[1,2]}}",
	};
	for (size_t i = 0; i < SN_COUNT(ok); i++) {
		size_t len;
		unsigned char *buf = image(ok[i], pattern, 8, &len);
		e = (sn_err){0};
		f = NULL;
		CHECK(st_parse(buf, len, "ok", &f, &e) == SN_OK);
		CHECK_STR(e.msg, "");
		CHECK(f && st_count(f) == (i == 2 ? 2u : 0u));
		if (f && i == 2) {
			CHECK(*(const uint8_t *)st_find(f, "b")->data == 2);
			CHECK(((const uint8_t *)st_find(f, "a")->data)[1] == 8);
		}
		st_close(f);
		free(buf);
	}
}

/* ---- files on disk ----------------------------------------------------------------- */

static void test_files(void)
{
	sn_err e = {0};
	st_file *f = NULL;
	CHECK(st_open("st/valid.safetensors", &f, &e) == SN_OK);
	CHECK_STR(e.msg, "");
	if (f) {
		CHECK(st_count(f) == 3);
		CHECK_STR(st_meta_find(f, "format"), "pt");
		const st_entry *w = st_get(f, 0), *b = st_get(f, 1), *ids = st_get(f, 2);
		CHECK_STR(w->name, "weight");
		CHECK(w->dtype == ST_F32 && w->rank == 2 && w->shape[0] == 2 && w->shape[1] == 3);
		float wv[6];
		CHECK(st_read_as(w, IR_F32, wv, &e) == SN_OK);
		CHECK(wv[0] == 1.5f && wv[1] == -2.25f && wv[2] == 3.0f && wv[3] == 0.125f &&
		      wv[4] == -0.5f && wv[5] == 100.0f);
		CHECK_STR(b->name, "bias");
		float bv[3];
		CHECK(st_read_as(b, IR_F32, bv, &e) == SN_OK);
		CHECK(bv[0] == 1.0f && bv[1] == -2.0f && bv[2] == 0.5f);
		CHECK_STR(ids->name, "ids");
		int32_t iv[2];
		CHECK(st_read_as(ids, IR_I32, iv, &e) == SN_OK); /* data at an unaligned offset */
		CHECK(iv[0] == 7 && iv[1] == -9);
		st_close(f);
	}
	e = (sn_err){0};
	CHECK(st_open("st/truncated.safetensors", &f, &e) == SN_EINPUT && !f);
	CHECK_STR(e.msg, "st/truncated.safetensors: tensor \"weight\": data_offsets [0, 24] "
			 "exceed the data buffer of 10 bytes");
	e = (sn_err){0};
	CHECK(st_open("st/overlap.safetensors", &f, &e) == SN_EINPUT && !f);
	CHECK_STR(e.msg, "st/overlap.safetensors: tensors \"a\" [0, 8] and \"b\" [4, 12] overlap");
	e = (sn_err){0};
	CHECK(st_open("st/missing.safetensors", &f, &e) == SN_EINPUT && !f);
	CHECK_STR(e.msg, "cannot open st/missing.safetensors: No such file or directory");
	e = (sn_err){0};
	CHECK(st_open("st", &f, &e) == SN_EINPUT && !f);
	CHECK_STR(e.msg, "cannot open st: not a regular file");

	char path[128];
	snprintf(path, sizeof path, "%s/empty.safetensors", tmpdir);
	FILE *fp = fopen(path, "wb");
	if (fp)
		fclose(fp);
	e = (sn_err){0};
	CHECK(st_open(path, &f, &e) == SN_EINPUT && !f);
	char want[256];
	snprintf(want, sizeof want, "%s: file of 0 bytes is too short for a safetensors header", path);
	CHECK_STR(e.msg, want);
	unlink(path);
}


/* ---- weights: no silent change of value (issue 31, item 15) -------------------- */

static bool has(const char *s, const char *part)
{
	if (!strstr(s, part))
		fprintf(stderr, "  \"%s\" lacks \"%s\"\n", s, part);
	return strstr(s, part) != NULL;
}

static void test_read_exact(void)
{
	sn_err e = {0};
	/* float to integer: st_read_as truncates and takes NaN to 0 or true,
	 * st_read_exact refuses */
	float fl[2] = {2.7f, NAN};
	st_entry a = {"a", ST_F32, 1, {2}, fl, sizeof fl, NULL, 0};
	int32_t i32[3];
	uint8_t u8[3];
	CHECK(st_read_as(&a, IR_I32, i32, &e) == SN_OK && i32[0] == 2);
	CHECK(st_read_exact(&a, IR_I32, i32, &e) == SN_EINPUT);
	CHECK_STR(e.msg, "tensor \"a\" is F32 and is not converted to i32: sinter converts among floats and among "
			 "integers, never between the two");
	e = (sn_err){0};
	CHECK(st_read_exact(&a, IR_BOOL, u8, &e) == SN_EINPUT && has(e.msg, "is F32 and is not converted to bool"));
	/* integer to float */
	int64_t i64[3] = {5, -7, INT64_C(1) << 40};
	st_entry b = {"b", ST_I64, 1, {3}, i64, sizeof i64, NULL, 0};
	float f[3];
	e = (sn_err){0};
	CHECK(st_read_exact(&b, IR_F32, f, &e) == SN_EINPUT && has(e.msg, "is I64 and is not converted to f32"));
	/* integers narrow when every value fits, exactly; the first that does
	 * not is named with its index and value */
	e = (sn_err){0};
	CHECK(st_read_exact(&b, IR_I32, i32, &e) == SN_EINPUT);
	CHECK_STR(e.msg, "tensor \"b\": element 2 is 1099511627776, which does not fit i32");
	st_entry b2 = {"b2", ST_I64, 1, {2}, i64, 2 * sizeof *i64, NULL, 0};
	e = (sn_err){0};
	CHECK(st_read_exact(&b2, IR_I32, i32, &e) == SN_OK && i32[0] == 5 && i32[1] == -7);
	CHECK(st_read_exact(&b2, IR_U8, u8, &e) == SN_EINPUT && has(e.msg, "element 1 is -7, which does not fit u8"));
	/* 2^53 + 1 widens exactly (through double it would round) */
	int32_t big32[2] = {INT32_MIN, 123456789};
	st_entry c = {"c", ST_I32, 1, {2}, big32, sizeof big32, NULL, 0};
	int64_t w64[2];
	e = (sn_err){0};
	CHECK(st_read_exact(&c, IR_I64, w64, &e) == SN_OK && w64[0] == INT32_MIN && w64[1] == 123456789);
	int64_t odd[1] = {(INT64_C(1) << 53) + 1};
	st_entry d = {"d", ST_I64, 1, {1}, odd, sizeof odd, NULL, 0};
	CHECK(st_read_exact(&d, IR_I64, w64, &e) == SN_OK && w64[0] == odd[0]);
	/* u8 to bool: 0 and 1 fit, 5 does not; bool widens to i8; u8 200 does not fit i8 */
	uint8_t u[3] = {1, 0, 5}, bo[3];
	st_entry uu = {"u", ST_U8, 1, {3}, u, sizeof u, NULL, 0};
	CHECK(st_read_exact(&uu, IR_BOOL, bo, &e) == SN_EINPUT && has(e.msg, "element 2 is 5, which does not fit bool"));
	uu.shape[0] = 2;
	uu.nbytes = 2;
	e = (sn_err){0};
	CHECK(st_read_exact(&uu, IR_BOOL, bo, &e) == SN_OK && bo[0] == 1 && bo[1] == 0);
	st_entry bb = {"bb", ST_BOOL, 1, {2}, bo, 2, NULL, 0};
	int8_t s8[2];
	CHECK(st_read_exact(&bb, IR_I8, s8, &e) == SN_OK && s8[0] == 1 && s8[1] == 0);
	uint8_t two[1] = {200};
	st_entry t2 = {"t", ST_U8, 1, {1}, two, 1, NULL, 0};
	CHECK(st_read_exact(&t2, IR_I8, s8, &e) == SN_EINPUT && has(e.msg, "element 0 is 200, which does not fit i8"));
	/* floats still convert among themselves, correctly rounded */
	double d64[1] = {0.1};
	st_entry g = {"g", ST_F64, 1, {1}, d64, sizeof d64, NULL, 0};
	e = (sn_err){0};
	uint32_t fb;
	CHECK(st_read_exact(&g, IR_F32, f, &e) == SN_OK);
	memcpy(&fb, &f[0], 4);
	CHECK(fb == 0x3dcccccd);
}

/* ---- several files, sharded checkpoints, key prefixes (issue 31, item 8) ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static float rnd(void)
{
	rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
	return (float)((double)(rng_state >> 40) / (double)(1u << 24) * 4.0 - 2.0);
}

static void put_text(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	if (fp) {
		fputs(text, fp);
		fclose(fp);
	}
}

static void put_st(const char *path, const char *k1, const float *v1, const char *k2, const float *v2)
{
	st_entry en[2] = {{.name = k1, .dtype = ST_F32, .rank = 1, .shape = {3}, .data = v1, .nbytes = 12},
			  {.name = k2, .dtype = ST_F32, .rank = 1, .shape = {3}, .data = v2, .nbytes = 12}};
	sn_err e = {0};
	CHECK(st_write(path, en, k2 ? 2 : 1, NULL, 0, &e) == SN_OK);
}

static void test_sets(void)
{
	char d[128], pa[192], pb[192], pc[192], sub[160], s1[192], s2[192], idx[192];
	snprintf(d, sizeof d, "%s/set", tmpdir);
	mkdir(d, 0700);
	snprintf(sub, sizeof sub, "%s/ckpt", d);
	mkdir(sub, 0700);
	float w[3], b[3], w2[3];
	for (int i = 0; i < 3; i++) {
		w[i] = rnd();
		b[i] = rnd();
		w2[i] = rnd();
	}
	snprintf(pa, sizeof pa, "%s/a.safetensors", d);
	snprintf(pb, sizeof pb, "%s/b.safetensors", d);
	snprintf(pc, sizeof pc, "%s/c.safetensors", d);
	snprintf(s1, sizeof s1, "%s/s1.safetensors", sub);
	snprintf(s2, sizeof s2, "%s/s2.safetensors", sub);
	snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", sub);
	put_st(pa, "w", w, NULL, NULL);
	put_st(pb, "b", b, NULL, NULL);
	put_st(pc, "w", w2, NULL, NULL);
	put_st(s1, "w", w, NULL, NULL);
	put_st(s2, "b", b, NULL, NULL);

	/* two files: one set of keys; the same file twice is opened once */
	sn_err e = {0};
	st_set *s = NULL;
	const char *two[] = {pa, pb, pa};
	CHECK(st_set_open(two, 3, &s, &e) == SN_OK && s);
	if (s) {
		CHECK(st_set_count(s) == 2 && st_set_nfiles(s) == 2);
		const st_entry *en = st_set_find(s, "b");
		float got[3];
		CHECK(en && !strcmp(st_path(en->file), pb) && st_read_exact(en, IR_F32, got, &e) == SN_OK &&
		      !memcmp(got, b, sizeof b));
		st_set_close(s);
	}
	/* a key in two files */
	const char *dup[] = {pa, pb, pc};
	e = (sn_err){0};
	CHECK(st_set_open(dup, 3, &s, &e) == SN_EINPUT && !s);
	char want[600];
	snprintf(want, sizeof want, "duplicate key \"w\" in %s and %s", pa, pc);
	CHECK_STR(e.msg, want);

	/* a sharded checkpoint's index: shards beside it */
	put_text(idx, "{\"metadata\": {\"total_size\": 24},\n \"weight_map\": {\"w\": \"s1.safetensors\", "
		      "\"b\": \"s2.safetensors\"}}\n");
	const char *one[] = {idx, s1}; /* a shard named again is the same file */
	e = (sn_err){0};
	CHECK(st_set_open(one, 2, &s, &e) == SN_OK && s);
	if (s) {
		CHECK(st_set_count(s) == 2 && st_set_nfiles(s) == 2);
		const st_entry *en = st_set_find(s, "w");
		float got[3];
		CHECK(en && st_read_exact(en, IR_F32, got, &e) == SN_OK && !memcmp(got, w, sizeof w));
		st_set_close(s);
	}
	/* the index with a file that repeats one of its keys */
	const char *withdup[] = {idx, pc};
	e = (sn_err){0};
	CHECK(st_set_open(withdup, 2, &s, &e) == SN_EINPUT && has(e.msg, "duplicate key \"w\" in ") &&
	      has(e.msg, "s1.safetensors and ") && has(e.msg, "c.safetensors"));
	/* bad indexes */
	const struct {
		const char *text, *msg;
	} bad[] = {
		{"{\"weight_map\": {\"w\": \"../a.safetensors\"}}", "leads outside the model's folder"},
		{"{\"weight_map\": {\"w\": \"/etc/passwd\"}}", "is not a relative path"},
		{"{\"weight_map\": {\"b\": \"s1.safetensors\"}}", "weight_map puts \"b\" in s1.safetensors, which does not hold it"},
		{"{\"weight_map\": {\"w\": \"nope.safetensors\"}}", "nope.safetensors: No such file or directory"},
		{"{\"weight_map\": {\"w\": 3}}", "weight_map: the shard of \"w\" is not a string"},
		{"{\"metadata\": {}}", "no \"weight_map\": not a safetensors index"},
		{"[1, 2]", "a safetensors index is a JSON object"},
		{"{\"weight_map\": {\"w\": \"s1.safetensors\"", "expected"},
	};
	for (size_t i = 0; i < SN_COUNT(bad); i++) {
		put_text(idx, bad[i].text);
		e = (sn_err){0};
		const char *p[] = {idx};
		CHECK(st_set_open(p, 1, &s, &e) == SN_EINPUT && !s && has(e.msg, bad[i].msg));
	}

	/* key prefixes: the file's keys carry one, or the model's do */
	char pp[192];
	snprintf(pp, sizeof pp, "%s/pre.safetensors", d);
	put_st(pp, "transformer.w", w, "lm_head.weight", b);
	const char *pre[] = {pp};
	e = (sn_err){0};
	CHECK(st_set_open(pre, 1, &s, &e) == SN_OK && s);
	if (s) {
		const char *p1, *p2;
		const char *k1[] = {"w"}, *k2[] = {"w", "lm_head.weight"}, *k3[] = {"w", "zz"};
		CHECK(st_set_guess_prefix(s, k1, 1, &p1, &p2) == 1 && !strcmp(p1, "transformer."));
		/* lm_head.weight is outside the prefix and still found as it is */
		CHECK(st_set_guess_prefix(s, k2, 2, &p1, &p2) == 1 && !strcmp(p1, "transformer."));
		CHECK(st_set_lookup(s, "lm_head.weight", p1) == st_set_find(s, "lm_head.weight"));
		CHECK(st_set_lookup(s, "w", p1) == st_set_find(s, "transformer.w"));
		CHECK(st_set_guess_prefix(s, k3, 2, &p1, &p2) == 0 && !p1);
		const char *m1[] = {"model.transformer.w"}; /* the model's keys carry "model." */
		CHECK(st_set_guess_prefix(s, m1, 1, &p1, &p2) == 1 && !strcmp(p1, "model."));
		CHECK(st_set_lookup(s, "model.transformer.w", "model.") == st_set_find(s, "transformer.w"));
		st_set_close(s);
	}
	char pt[192];
	snprintf(pt, sizeof pt, "%s/two.safetensors", d);
	put_st(pt, "a.w", w, "c.w", b);
	const char *twopre[] = {pt};
	e = (sn_err){0};
	CHECK(st_set_open(twopre, 1, &s, &e) == SN_OK && s);
	if (s) {
		const char *p1, *p2, *k1[] = {"w"};
		CHECK(st_set_guess_prefix(s, k1, 1, &p1, &p2) == 2 && !strcmp(p1, "a.") && !strcmp(p2, "c."));
		st_set_close(s);
	}
	const char *rm[] = {pa, pb, pc, s1, s2, idx, pp, pt};
	for (size_t i = 0; i < SN_COUNT(rm); i++)
		unlink(rm[i]);
	rmdir(sub);
	rmdir(d);
}

static char logged[1024];
static void keep_log(void *ctx, sinter_log_level level, const char *msg)
{
	(void)ctx;
	(void)level;
	snprintf(logged, sizeof logged, "%s", msg);
}

/* Through the API: y = x * w + b on the reference interpreter, the params
 * from a prefixed file, from two files, from a sharded checkpoint, checked
 * against the product worked out here; and the refusals, with the param,
 * the file and both dtypes named. */
static void test_api_weights(void)
{
	char d[128], sir[192], pre[192], f1[192], f2[192], idx[192], ints[192], isir[192];
	snprintf(d, sizeof d, "%s/api", tmpdir);
	mkdir(d, 0700);
	snprintf(sir, sizeof sir, "%s/m.sir", d);
	snprintf(pre, sizeof pre, "%s/pre.safetensors", d);
	snprintf(f1, sizeof f1, "%s/f1.safetensors", d);
	snprintf(f2, sizeof f2, "%s/f2.safetensors", d);
	snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", d);
	snprintf(ints, sizeof ints, "%s/ints.safetensors", d);
	snprintf(isir, sizeof isir, "%s/i.sir", d);
	put_text(sir, "sinter 1\n\nfunc @main(%x: f32[3]) -> (f32[3]) {\n  %w = param f32[3] \"h.w\"\n"
		      "  %b = param f32[3] \"h.b\"\n  %m = mul(%x, %w)\n  %y = add(%m, %b)\n  return %y\n}\n");
	float w[3], b[3], x[3];
	for (int i = 0; i < 3; i++) {
		w[i] = rnd();
		b[i] = rnd();
		x[i] = rnd();
	}
	put_st(pre, "transformer.h.w", w, "transformer.h.b", b);
	put_st(f1, "h.w", w, NULL, NULL);
	put_st(f2, "h.b", b, NULL, NULL);
	put_text(idx, "{\"weight_map\": {\"h.w\": \"f1.safetensors\", \"h.b\": \"f2.safetensors\"}}");
	sinter_tensor in = {.name = "x", .dtype = SINTER_F32, .rank = 1, .shape = {3}, .data = x, .nbytes = sizeof x};
	/* dup: f1 twice is one file; its h.w and pre's transformer.h.w are two
	 * keys (the prefix maps h.w to the latter, h.b falls back to none) */
	const char *one_pre[] = {pre}, *two[] = {f1, f2}, *index[] = {idx}, *dup[] = {f1, f1, pre};
	const struct {
		const char *const *files;
		size_t n;
		const char *prefix;
	} ok[] = {{one_pre, 1, NULL}, {one_pre, 1, "transformer."}, {two, 2, NULL}, {index, 1, ""}, {dup, 3, "transformer."}};
	for (size_t c = 0; c < SN_COUNT(ok); c++) {
		sinter_model *m = NULL;
		sinter_error err = {0};
		CHECK(sinter_model_load(sir, NULL, &m, &err) == SINTER_OK);
		if (!m)
			continue;
		logged[0] = 0;
		sinter_log_set_handler(keep_log, NULL);
		sinter_status st = sinter_model_load_weights(m, ok[c].files, ok[c].n, ok[c].prefix, &err);
		sinter_log_set_handler(NULL, NULL);
		CHECK(st == SINTER_OK);
		/* a guessed prefix is said, one given is not */
		if (c == 0)
			CHECK(has(logged, "weights: the keys of ") &&
			      has(logged, "pre.safetensors carry the prefix \"transformer.\" that the model's param keys "
					  "lack: matched without it"));
		else
			CHECK_STR(logged, "");
		if (st)
			fprintf(stderr, "  case %zu: %s\n", c, err.message);
		sinter_tensor *out = NULL;
		if (!st && sinter_model_run_ref(m, &in, 1, &out, &err) == SINTER_OK) {
			const float *y = out[0].data;
			for (int i = 0; i < 3; i++)
				CHECK_NEAR(y[i], (double)x[i] * w[i] + b[i], 1e-6);
			sinter_tensors_free(out, 1);
		}
		sinter_model_free(m);
	}
	/* refused: a file with no param under any one prefix; a key in two
	 * files; an integer file for float params */
	int64_t iv[3] = {3, -1, 4};
	st_entry ie[2] = {{.name = "h.w", .dtype = ST_I64, .rank = 1, .shape = {3}, .data = iv, .nbytes = sizeof iv},
			  {.name = "h.b", .dtype = ST_F32, .rank = 1, .shape = {3}, .data = b, .nbytes = sizeof b}};
	sn_err e = {0};
	CHECK(st_write(ints, ie, 2, NULL, 0, &e) == SN_OK);
	const char *nopre[] = {pre}, *intf[] = {ints};
	char want_dup[600], want_int[600];
	snprintf(want_int, sizeof want_int, "%s:4:8: error: param \"h.w\" is I64 in %s, the model declares f32: not "
		 "converted (sinter converts among floats and among integers, never between the two)", sir, ints);
	const struct {
		const char *const *files;
		size_t n;
		const char *prefix, *msg;
	} bad[] = {{nopre, 1, "", "param \"h.w\" (f32[3]) is not in"}, {intf, 1, NULL, want_int}};
	for (size_t c = 0; c < SN_COUNT(bad); c++) {
		sinter_model *m = NULL;
		sinter_error err = {0};
		CHECK(sinter_model_load(sir, NULL, &m, &err) == SINTER_OK);
		if (!m)
			continue;
		sinter_status st = sinter_model_load_weights(m, bad[c].files, bad[c].n, bad[c].prefix, &err);
		CHECK(st == SINTER_E_INPUT && has(err.message, bad[c].msg));
		sinter_model_free(m);
	}
	{
		/* two files holding one key */
		const char *dd[] = {f1, f2, f1};
		char f3[192];
		snprintf(f3, sizeof f3, "%s/f3.safetensors", d);
		put_st(f3, "h.b", w, NULL, NULL);
		dd[2] = f3;
		sinter_model *m = NULL;
		sinter_error err = {0};
		CHECK(sinter_model_load(sir, NULL, &m, &err) == SINTER_OK);
		snprintf(want_dup, sizeof want_dup, "duplicate key \"h.b\" in %s and %s", f2, f3);
		CHECK(m && sinter_model_load_weights(m, dd, 3, NULL, &err) == SINTER_E_INPUT);
		CHECK_STR(err.message, want_dup);
		sinter_model_free(m);
		unlink(f3);
	}
	/* an i32 param from an I64 file: read when every value fits, refused
	 * (at the first use, when the values are read) naming the element that
	 * does not */
	put_text(isir, "sinter 1\n\nfunc @main(%x: i32[3]) -> (i32[3]) {\n  %k = param i32[3] \"h.w\"\n"
		       "  %y = add(%x, %k)\n  return %y\n}\n");
	for (int big = 0; big < 2; big++) {
		iv[1] = big ? INT64_C(5000000000) : -1;
		e = (sn_err){0};
		CHECK(st_write(ints, ie, 2, NULL, 0, &e) == SN_OK);
		sinter_model *m = NULL;
		sinter_error err = {0};
		CHECK(sinter_model_load(isir, NULL, &m, &err) == SINTER_OK);
		if (!m)
			continue;
		CHECK(sinter_model_load_weights(m, (const char *const[]){ints}, 1, NULL, &err) == SINTER_OK);
		int32_t xi[3] = {10, 20, 30};
		sinter_tensor tin = {.name = "x", .dtype = SINTER_I32, .rank = 1, .shape = {3}, .data = xi, .nbytes = 12};
		sinter_tensor *out = NULL;
		sinter_status st = sinter_model_run_ref(m, &tin, 1, &out, &err);
		if (!big) {
			CHECK(st == SINTER_OK);
			const int32_t *y = out ? out[0].data : NULL;
			CHECK(y && y[0] == 13 && y[1] == 19 && y[2] == 34);
		} else {
			CHECK(st == SINTER_E_INPUT && has(err.message, "param \"h.w\" from ") &&
			      has(err.message, "element 1 is 5000000000, which does not fit i32"));
		}
		sinter_tensors_free(out, out ? 1 : 0);
		sinter_model_free(m);
	}
	const char *rm[] = {sir, pre, f1, f2, idx, ints, isir};
	for (size_t i = 0; i < SN_COUNT(rm); i++)
		unlink(rm[i]);
	rmdir(d);
}

/* Messages (issue 31, item 17): a weights line naming a folder says so;
 * one param key with two shapes is refused when the model loads (so
 * `check` refuses it), with the file, the line and both types. */
static void test_messages(void)
{
	char d[128], sir[192], sub[192];
	snprintf(d, sizeof d, "%s/msg", tmpdir);
	mkdir(d, 0700);
	snprintf(sub, sizeof sub, "%s/sub", d);
	mkdir(sub, 0700);
	snprintf(sir, sizeof sir, "%s/m.sir", d);
	const char *lines[] = {".", "sub", "sub/.."};
	for (size_t i = 0; i < SN_COUNT(lines); i++) {
		char text[512], want[600];
		snprintf(text, sizeof text, "sinter 1\nweights \"%s\"\n\nfunc @main(%%x: f32[2]) -> (f32[2]) {\n"
			 "  %%p = param f32[2] \"p\"\n  %%y = add(%%x, %%p)\n  return %%y\n}\n", lines[i]);
		put_text(sir, text);
		sinter_model *m = NULL;
		sinter_error err = {0};
		CHECK(sinter_model_load(sir, NULL, &m, &err) == SINTER_OK);
		if (!m)
			continue;
		char *real = realpath(i == 1 ? sub : d, NULL);
		snprintf(want, sizeof want, "%s: the weights file \"%s\" names a folder (%s), not a file", sir, lines[i],
			 real ? real : "?");
		free(real);
		CHECK(sinter_model_load_weights(m, NULL, 0, NULL, &err) == SINTER_E_INPUT);
		CHECK_STR(err.message, want);
		sinter_model_free(m);
	}
	put_text(sir, "sinter 1\n\nfunc @main(%x: f32[2], %z: f32[3]) -> (f32[2], f32[3]) {\n"
		      "  %w = param f32[2] \"w\"\n  %v = param f32[3] \"w\"\n  %y = add(%x, %w)\n"
		      "  %u = add(%z, %v)\n  return %y, %u\n}\n");
	sinter_model *m = NULL;
	sinter_error err = {0};
	char want[600];
	snprintf(want, sizeof want, "%s:5:8: error: param \"w\" is f32[3] here and f32[2] at line 4: one key "
		 "cannot hold two shapes", sir);
	CHECK(sinter_model_load(sir, NULL, &m, &err) == SINTER_E_INPUT && !m);
	CHECK_STR(err.message, want);
	sinter_model_free(m);
	/* one key, one shape, two dtypes: one tensor, converted */
	put_text(sir, "sinter 1\n\nfunc @main(%x: f32[2], %z: f16[2]) -> (f32[2], f16[2]) {\n"
		      "  %w = param f32[2] \"w\"\n  %v = param f16[2] \"w\"\n  %y = add(%x, %w)\n"
		      "  %u = add(%z, %v)\n  return %y, %u\n}\n");
	CHECK(sinter_model_load(sir, NULL, &m, &err) == SINTER_OK);
	sinter_model_free(m);
	unlink(sir);
	rmdir(sub);
	rmdir(d);
}

int main(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/sinter-st-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_roundtrip();
	test_hand_bytes();
	test_writer_bytes();
	test_read_as();
	test_malformed();
	test_files();
	test_read_exact();
	test_sets();
	test_api_weights();
	test_messages();
	rmdir(tmpdir);
	return check_done("safetensors");
}
