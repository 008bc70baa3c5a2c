/* test_safetensors.c: the safetensors reader and writer against byte
 * layouts written here by hand from the published format, conversions
 * against hand-worked bit patterns, and malformed files with their exact
 * messages. Runs in tests/ (fixtures in st/). */
#include "frontend/safetensors.h"
#include "check.h"

#include <dirent.h>
#include <stdlib.h>
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
	rmdir(tmpdir);
	return check_done("safetensors");
}
