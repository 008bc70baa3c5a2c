/* at_record.c: tuning records as one line of JSON each, written
 * canonically and read strictly (at.h); record files and merging. The
 * checksum is XXH3-64 of the record's canonical text without the checksum
 * field: a reader parses, writes the values back canonically and compares,
 * so a record that was edited, truncated or damaged is rejected. */
#include "autotune/at.h"

#include "frontend/json.h"
#include "ir/file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static void hex(const uint8_t *p, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[p[i] >> 4];
		out[2 * i + 1] = d[p[i] & 15];
	}
	out[2 * n] = 0;
}

static int unhex(const char *s, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i++) {
		int v = 0;
		for (int k = 0; k < 2; k++) {
			char c = s[2 * i + k];
			int x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
			if (x < 0)
				return -1;
			v = v * 16 + x;
		}
		out[i] = (uint8_t)v;
	}
	return 0;
}

static void canon128(const void *p, size_t n, uint8_t out[16])
{
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits(p, n));
	memcpy(out, c.digest, 16);
}

void at_key(const uint8_t spec[16], const at_device *d, uint8_t key[16])
{
	char buf[256];
	char sh[33];
	hex(spec, 16, sh);
	int n = snprintf(buf, sizeof buf, "sinter tuning %d\n%s\n%s\nsm %d driver %d nvrtc %d cublaslt %d", AT_SCHEMA,
			 sh, d->name, (int)d->sm, (int)d->driver, (int)d->nvrtc, (int)d->blas);
	canon128(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1, key);
}

void at_mm_spec(const cg_mm *g, uint8_t spec[16])
{
	char buf[320];
	int n = snprintf(buf, sizeof buf,
			 "cublaslt matmul batch=%lld m=%lld n=%lld k=%lld strides=%lld,%lld,%lld trans_b=%d dtype=%s "
			 "act=%d bias=%d c=%d tf32=%d",
			 (long long)g->batch, (long long)g->m, (long long)g->n, (long long)g->k, (long long)g->stride_a,
			 (long long)g->stride_b, (long long)g->stride_c, (int)g->trans_b, ir_dtype_name(g->dtype),
			 (int)g->act, g->bias != CG_NO_BUF, g->c != CG_NO_BUF, (int)g->tf32);
	canon128(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1, spec);
}

bool at_device_eq(const at_device *a, const at_device *b)
{
	return !strcmp(a->name, b->name) && a->sm == b->sm && a->driver == b->driver && a->nvrtc == b->nvrtc &&
	       a->blas == b->blas;
}

bool at_config_plausible(const cg_config *c)
{
	const int32_t v[] = {c->variant, c->block, c->tile_m, c->tile_n, c->tile_k,
			     c->warps, c->stages, c->vec, c->rows, c->split_k};
	for (size_t i = 0; i < SN_COUNT(v); i++)
		if (v[i] < 0 || v[i] > 4096)
			return false;
	return true;
}

/* ---- writing ---- */

static const char *const cfg_names[] = {"variant", "block", "tile_m", "tile_n", "tile_k",
					 "warps", "stages", "vec", "rows", "split_k"};
static const char *const algo_names[] = {"id", "tile", "stages", "splitk", "reduction",
					  "swizzle", "custom", "inner", "cluster"};

static int32_t *cfg_field(cg_config *c, size_t i)
{
	int32_t *f[] = {&c->variant, &c->block, &c->tile_m, &c->tile_n, &c->tile_k,
			&c->warps, &c->stages, &c->vec, &c->rows, &c->split_k};
	return f[i];
}

static int32_t *algo_field(cg_blas_algo *a, size_t i)
{
	int32_t *f[] = {&a->id, &a->tile, &a->stages, &a->splitk, &a->reduction,
			&a->swizzle, &a->custom, &a->inner, &a->cluster};
	return f[i];
}

/* A name as it may appear in a record: printable ASCII without quotes or
 * backslashes (others become '?'), so it needs no escapes. */
static void plain(const char *s, char *out, size_t cap)
{
	size_t i = 0;
	for (; s[i] && i + 1 < cap; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\' ? s[i] : '?';
	out[i] = 0;
}

/* The canonical text without the checksum field and closing brace. */
static void body(const at_record *r, sn_buf *b)
{
	char sh[33], name[96], ver[32], ms[32], dms[32];
	hex(r->spec, 16, sh);
	plain(r->dev.name, name, sizeof name);
	plain(r->version, ver, sizeof ver);
	sn_fmt_double(ms, r->ms);
	sn_fmt_double(dms, r->default_ms);
	sn_buf_printf(b,
		      "{\"schema\": %d, \"kind\": \"%s\", \"spec\": \"%s\", \"device\": {\"name\": \"%s\", \"sm\": %d, "
		      "\"driver\": %d, \"nvrtc\": %d, \"cublaslt\": %d}, ",
		      AT_SCHEMA, r->kind == AT_BLAS ? "cublaslt" : r->kind == AT_GEMM ? "gemm_template" : "kernel", sh, name,
		      (int)r->dev.sm,
		      (int)r->dev.driver, (int)r->dev.nvrtc, (int)r->dev.blas);
	if (r->kind == AT_BLAS) {
		cg_blas_algo a = r->algo;
		sn_buf_puts(b, "\"algo\": {");
		for (size_t i = 0; i < SN_COUNT(algo_names); i++)
			sn_buf_printf(b, "%s\"%s\": %d", i ? ", " : "", algo_names[i], (int)*algo_field(&a, i));
	} else {
		cg_config c = r->cfg;
		sn_buf_puts(b, "\"config\": {");
		for (size_t i = 0; i < SN_COUNT(cfg_names); i++)
			sn_buf_printf(b, "%s\"%s\": %d", i ? ", " : "", cfg_names[i], (int)*cfg_field(&c, i));
	}
	sn_buf_printf(b, "}, \"ms\": %s, \"default_ms\": %s, \"candidates\": %d, \"sinter\": \"%s\"", ms, dms,
		      (int)r->candidates, ver);
}

static uint64_t checksum(const at_record *r, bool *oom)
{
	sn_buf b = {0};
	body(r, &b);
	*oom = b.oom;
	uint64_t h = XXH3_64bits(b.s ? b.s : "", b.len);
	sn_buf_free(&b);
	return h;
}

void at_record_write(const at_record *r, sn_buf *b)
{
	size_t start = b->len;
	body(r, b);
	uint64_t h = XXH3_64bits(b->s ? b->s + start : "", b->len - start);
	sn_buf_printf(b, ", \"checksum\": \"%016llx\"}\n", (unsigned long long)h);
}

/* ---- reading ---- */

static int read_int(js_cur *c, const char *what, int64_t lo, int64_t hi, int32_t *out)
{
	const char *raw;
	size_t n;
	if (js_number(c, &raw, &n))
		return SN_EINPUT;
	bool neg = n && raw[0] == '-';
	int64_t v;
	if (js_uint(neg ? raw + 1 : raw, neg ? n - 1 : n, &v) != 0)
		return js_fail(c, "%s: not an integer", what);
	if (neg)
		v = -v;
	if (v < lo || v > hi)
		return js_fail(c, "%s: %lld is out of range [%lld, %lld]", what, (long long)v, (long long)lo,
			       (long long)hi);
	*out = (int32_t)v;
	return SN_OK;
}

static int read_ms(js_cur *c, const char *what, double *out)
{
	const char *raw;
	size_t n;
	if (js_number(c, &raw, &n))
		return SN_EINPUT;
	char buf[64];
	if (n >= sizeof buf)
		return js_fail(c, "%s: number too long", what);
	memcpy(buf, raw, n);
	buf[n] = 0;
	char *end;
	double v = strtod(buf, &end);
	if (*end || !isfinite(v) || v < 0 || v > 1e6)
		return js_fail(c, "%s: %s is not a time in ms in [0, 1e6]", what, buf);
	*out = v;
	return SN_OK;
}

/* A string of plain characters (see plain()) into out[cap]. */
static int read_plain(js_cur *c, const char *what, char *out, size_t cap)
{
	char *s;
	size_t n;
	if (js_peek(c) != '"')
		return js_fail(c, "%s: expected a string", what);
	if (js_string(c, &s, &n))
		return SN_EINPUT;
	if (n + 1 > cap)
		return js_fail(c, "%s: longer than %zu bytes", what, cap - 1);
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] >= 0x7f || s[i] == '"' || s[i] == '\\')
			return js_fail(c, "%s: a character outside printable ASCII", what);
	memcpy(out, s, n);
	out[n] = 0;
	return SN_OK;
}

/* Reads an object of int fields named names[0..n), each exactly once. */
static int read_ints(js_cur *c, const char *what, const char *const *names, size_t n, int32_t **fields,
		     int64_t lo, int64_t hi)
{
	uint32_t seen = 0;
	if (js_expect(c, '{', what))
		return SN_EINPUT;
	if (!js_accept(c, '}')) {
		do {
			char *key;
			if (js_peek(c) != '"')
				return js_fail(c, "%s: expected a field name", what);
			if (js_string(c, &key, NULL) || js_expect(c, ':', "after a field name"))
				return SN_EINPUT;
			size_t i = 0;
			while (i < n && strcmp(names[i], key))
				i++;
			if (i == n)
				return js_fail(c, "%s: unknown field \"%s\"", what, key);
			if (seen & (1u << i))
				return js_fail(c, "%s: field \"%s\" twice", what, key);
			seen |= 1u << i;
			if (read_int(c, key, lo, hi, fields[i]))
				return SN_EINPUT;
		} while (js_accept(c, ','));
		if (js_expect(c, '}', what))
			return SN_EINPUT;
	}
	for (size_t i = 0; i < n; i++)
		if (!(seen & (1u << i)))
			return js_fail(c, "%s: field \"%s\" missing", what, names[i]);
	return SN_OK;
}

static int parse(js_cur *c, at_record *r)
{
	enum { F_SCHEMA, F_KIND, F_SPEC, F_DEVICE, F_CONFIG, F_MS, F_DMS, F_CAND, F_SINTER, F_SUM, F_N };
	static const char *const top[F_N] = {"schema", "kind", "spec", "device", "config",
					     "ms", "default_ms", "candidates", "sinter", "checksum"};
	uint32_t seen = 0;
	uint64_t sum = 0;
	bool have_cfg = false, have_algo = false;
	memset(r, 0, sizeof *r);
	if (js_expect(c, '{', "at the start of a record"))
		return SN_EINPUT;
	do {
		char *key;
		if (js_peek(c) != '"')
			return js_fail(c, "expected a field name");
		if (js_string(c, &key, NULL) || js_expect(c, ':', "after a field name"))
			return SN_EINPUT;
		size_t f = 0;
		bool is_algo = !strcmp(key, "algo");
		while (f < F_N && strcmp(top[f], key))
			f++;
		if (is_algo)
			f = F_CONFIG;
		if (f == F_N)
			return js_fail(c, "unknown field \"%s\"", key);
		if (seen & (1u << f))
			return js_fail(c, "field \"%s\" twice (or both config and algo)", key);
		seen |= 1u << f;
		int32_t v;
		char s[40];
		switch (f) {
		case F_SCHEMA:
			if (read_int(c, "schema", 0, 1000, &v))
				return SN_EINPUT;
			if (v != AT_SCHEMA)
				return js_fail(c, "schema %d, this sinter reads %d", (int)v, AT_SCHEMA);
			break;
		case F_KIND:
			if (read_plain(c, "kind", s, sizeof s))
				return SN_EINPUT;
			if (!strcmp(s, "kernel"))
				r->kind = AT_KERNEL;
			else if (!strcmp(s, "cublaslt"))
				r->kind = AT_BLAS;
			else if (!strcmp(s, "gemm_template"))
				r->kind = AT_GEMM;
			else
				return js_fail(c, "kind \"%s\" (kernel, cublaslt or gemm_template)", s);
			break;
		case F_SPEC:
			if (read_plain(c, "spec", s, sizeof s))
				return SN_EINPUT;
			if (strlen(s) != 32 || unhex(s, 16, r->spec))
				return js_fail(c, "spec: not 32 lowercase hex digits");
			break;
		case F_DEVICE: {
			static const char *const dn[] = {"name", "sm", "driver", "nvrtc", "cublaslt"};
			uint32_t ds = 0;
			if (js_expect(c, '{', "device"))
				return SN_EINPUT;
			do {
				char *dk;
				if (js_peek(c) != '"')
					return js_fail(c, "device: expected a field name");
				if (js_string(c, &dk, NULL) || js_expect(c, ':', "after a field name"))
					return SN_EINPUT;
				size_t i = 0;
				while (i < SN_COUNT(dn) && strcmp(dn[i], dk))
					i++;
				if (i == SN_COUNT(dn))
					return js_fail(c, "device: unknown field \"%s\"", dk);
				if (ds & (1u << i))
					return js_fail(c, "device: field \"%s\" twice", dk);
				ds |= 1u << i;
				int32_t *dst[] = {NULL, &r->dev.sm, &r->dev.driver, &r->dev.nvrtc, &r->dev.blas};
				if (i == 0 ? read_plain(c, "device name", r->dev.name, sizeof r->dev.name)
					   : read_int(c, dk, 0, i == 1 ? 1000 : 100000000, dst[i]))
					return SN_EINPUT;
			} while (js_accept(c, ','));
			if (js_expect(c, '}', "device"))
				return SN_EINPUT;
			if (ds != (1u << SN_COUNT(dn)) - 1)
				return js_fail(c, "device: a field is missing");
			break;
		}
		case F_CONFIG:
			if (is_algo) {
				int32_t *fs[SN_COUNT(algo_names)];
				for (size_t i = 0; i < SN_COUNT(algo_names); i++)
					fs[i] = algo_field(&r->algo, i);
				if (read_ints(c, "algo", algo_names, SN_COUNT(algo_names), fs, 0, 1 << 20))
					return SN_EINPUT;
				r->algo.valid = 1;
				have_algo = true;
			} else {
				int32_t *fs[SN_COUNT(cfg_names)];
				for (size_t i = 0; i < SN_COUNT(cfg_names); i++)
					fs[i] = cfg_field(&r->cfg, i);
				if (read_ints(c, "config", cfg_names, SN_COUNT(cfg_names), fs, 0, 4096))
					return SN_EINPUT;
				have_cfg = true;
			}
			break;
		case F_MS:
			if (read_ms(c, "ms", &r->ms))
				return SN_EINPUT;
			break;
		case F_DMS:
			if (read_ms(c, "default_ms", &r->default_ms))
				return SN_EINPUT;
			break;
		case F_CAND:
			if (read_int(c, "candidates", 0, 1000000, &r->candidates))
				return SN_EINPUT;
			break;
		case F_SINTER:
			if (read_plain(c, "sinter", r->version, sizeof r->version))
				return SN_EINPUT;
			break;
		case F_SUM: {
			uint8_t h[8];
			if (read_plain(c, "checksum", s, sizeof s))
				return SN_EINPUT;
			if (strlen(s) != 16 || unhex(s, 8, h))
				return js_fail(c, "checksum: not 16 lowercase hex digits");
			for (int i = 0; i < 8; i++)
				sum = sum << 8 | h[i];
			break;
		}
		}
	} while (js_accept(c, ','));
	if (js_expect(c, '}', "at the end of a record"))
		return SN_EINPUT;
	if (seen != (1u << F_N) - 1) {
		for (int f = 0; f < F_N; f++)
			if (!(seen & (1u << f)))
				return js_fail(c, "field \"%s\" missing", f == F_CONFIG ? "config (or algo)" : top[f]);
	}
	if ((r->kind == AT_BLAS) != have_algo || (r->kind != AT_BLAS) != have_cfg)
		return js_fail(c, "a %s record carries %s",
			       r->kind == AT_BLAS ? "cublaslt" : r->kind == AT_GEMM ? "gemm_template" : "kernel",
			       have_algo ? "an algo" : "a config");
	bool oom;
	uint64_t want = checksum(r, &oom);
	if (oom)
		return sn_errf(c->e, SN_EINTERNAL, "out of memory");
	if (want != sum)
		return js_fail(c, "checksum mismatch");
	return SN_OK;
}

int at_record_parse(const char *text, size_t len, at_record *r, sn_err *e)
{
	if (len > AT_RECORD_MAX)
		return sn_errf(e, SN_EINPUT, "tuning record: %zu bytes, more than a record's %d", len, AT_RECORD_MAX);
	sn_arena *a = sn_arena_new();
	if (!a)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	js_cur c;
	js_init(&c, text, len, "tuning record", a, e);
	int rc = parse(&c, r);
	if (!rc)
		rc = js_end(&c);
	sn_arena_free(a);
	if (rc)
		memset(r, 0, sizeof *r);
	return rc;
}

/* ---- record files ---- */

#define FILE_HEAD "{\"sinter_tuning_records\": 1}"
#define FILE_MAX ((uint64_t)1 << 30)

int at_file_read(const char *path, at_record **recs, size_t *n, size_t *rejected, sn_err *e)
{
	*recs = NULL;
	*n = *rejected = 0;
	void *buf;
	size_t len;
	if (sn_read_file(path, 0, FILE_MAX, "tuning records", &buf, &len, e))
		return e->code;
	const char *s = buf, *end = s + len;
	const char *nl = memchr(s, '\n', len);
	size_t hl = nl ? (size_t)(nl - s) : len;
	if (hl != strlen(FILE_HEAD) || memcmp(s, FILE_HEAD, hl)) {
		free(buf);
		return sn_errf(e, SN_EINPUT, "%s: not a sinter tuning-record file (its first line is not %s)", path,
			       FILE_HEAD);
	}
	size_t cap = 0;
	at_record *out = NULL;
	for (const char *p = nl ? nl + 1 : end; p < end;) {
		const char *q = memchr(p, '\n', (size_t)(end - p));
		size_t ll = q ? (size_t)(q - p) : (size_t)(end - p);
		bool blank = true;
		for (size_t i = 0; i < ll && blank; i++)
			blank = p[i] == ' ' || p[i] == '\t' || p[i] == '\r';
		if (!blank) {
			at_record r;
			sn_err sub = {0};
			if (at_record_parse(p, ll, &r, &sub) != SN_OK) {
				if (sub.code == SN_EINTERNAL) {
					free(out);
					free(buf);
					return sn_errf(e, SN_EINTERNAL, "out of memory");
				}
				(*rejected)++;
			} else {
				if (*n == cap) {
					size_t nc = cap ? 2 * cap : 64;
					at_record *nr = realloc(out, nc * sizeof *nr);
					if (!nr) {
						free(out);
						free(buf);
						return sn_errf(e, SN_EINTERNAL, "out of memory");
					}
					out = nr;
					cap = nc;
				}
				out[(*n)++] = r;
			}
		}
		p = q ? q + 1 : end;
	}
	free(buf);
	*recs = out;
	return SN_OK;
}

int at_file_write(const char *path, const at_record *recs, size_t n, sn_err *e)
{
	sn_buf b = {0};
	sn_buf_puts(&b, FILE_HEAD "\n");
	for (size_t i = 0; i < n; i++)
		at_record_write(&recs[i], &b);
	if (b.oom) {
		sn_buf_free(&b);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	int rc = sn_write_file(path, b.s, b.len, 0644, e);
	sn_buf_free(&b);
	return rc;
}

typedef struct keyed {
	uint8_t key[16];
	size_t i;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
	const keyed *x = a, *y = b;
	int c = memcmp(x->key, y->key, 16);
	return c ? c : (x->i > y->i) - (x->i < y->i);
}

size_t at_merge(at_record *recs, size_t n)
{
	if (n < 2)
		return n;
	keyed *k = malloc(n * sizeof *k);
	at_record *out = malloc(n * sizeof *out);
	if (!k || !out) {
		free(k);
		free(out);
		return n; /* unmerged, still valid */
	}
	for (size_t i = 0; i < n; i++) {
		at_key(recs[i].spec, &recs[i].dev, k[i].key);
		k[i].i = i;
	}
	qsort(k, n, sizeof *k, cmp_keyed);
	size_t m = 0;
	for (size_t i = 0; i < n;) {
		size_t best = k[i].i, j = i + 1;
		for (; j < n && !memcmp(k[j].key, k[i].key, 16); j++)
			if (recs[k[j].i].ms < recs[best].ms)
				best = k[j].i; /* ties: the first seen stays */
		out[m++] = recs[best];
		i = j;
	}
	memcpy(recs, out, m * sizeof *out);
	free(k);
	free(out);
	return m;
}
