/* safetensors.c: the safetensors reader (a checked copy + a schema-driven walk of the
 * header JSON), st_read_as, and the atomic writer. Every check that guards a
 * read of the data buffer is done before a pointer into it is formed. */
#include "safetensors.h"
#include "json.h"
#include "ir/file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- dtypes ------------------------------------------------------------ */

static const struct {
	const char *name;
	size_t size;
	int ir; /* -1: none */
} dtypes[ST_NDTYPES] = {
	[ST_F64] = {"F64", 8, -1},
	[ST_F32] = {"F32", 4, IR_F32},
	[ST_F16] = {"F16", 2, IR_F16},
	[ST_BF16] = {"BF16", 2, IR_BF16},
	[ST_F8_E4M3] = {"F8_E4M3", 1, IR_F8E4M3},
	[ST_F8_E5M2] = {"F8_E5M2", 1, IR_F8E5M2},
	[ST_I64] = {"I64", 8, IR_I64},
	[ST_I32] = {"I32", 4, IR_I32},
	[ST_I8] = {"I8", 1, IR_I8},
	[ST_U8] = {"U8", 1, IR_U8},
	[ST_BOOL] = {"BOOL", 1, IR_BOOL},
};

const char *st_dtype_name(st_dtype t)
{
	return (unsigned)t < ST_NDTYPES ? dtypes[t].name : "?";
}

size_t st_dtype_size(st_dtype t)
{
	return (unsigned)t < ST_NDTYPES ? dtypes[t].size : 0;
}

int st_dtype_parse(const char *s)
{
	for (int i = 0; i < ST_NDTYPES; i++)
		if (strcmp(dtypes[i].name, s) == 0)
			return i;
	return -1;
}

int st_to_ir(st_dtype t)
{
	return (unsigned)t < ST_NDTYPES ? dtypes[t].ir : -1;
}

st_dtype st_from_ir(ir_dtype t)
{
	for (int i = 0; i < ST_NDTYPES; i++)
		if (dtypes[i].ir == (int)t)
			return (st_dtype)i;
	return ST_F32; /* not reached for a valid ir_dtype */
}

int64_t st_numel(const st_entry *en)
{
	int64_t n = 1;
	for (int i = 0; i < en->rank; i++)
		n *= en->shape[i];
	return n;
}

/* "F32[2,3]" */
static void type_str(char *out, size_t cap, st_dtype t, int32_t rank, const int64_t *shape)
{
	size_t k = (size_t)snprintf(out, cap, "%s[", st_dtype_name(t));
	for (int i = 0; i < rank && k < cap; i++)
		k += (size_t)snprintf(out + k, cap - k, "%s%" PRId64, i ? "," : "", shape[i]);
	if (k < cap)
		snprintf(out + k, cap - k, "]");
}

/* The byte size of a shape, or -1 if it overflows int64. */
static int64_t byte_size(st_dtype t, int32_t rank, const int64_t *shape)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++) {
		if (shape[i] < 0)
			return -1;
		if (shape[i] && n > INT64_MAX / shape[i])
			return -1;
		n *= shape[i];
	}
	int64_t sz = (int64_t)st_dtype_size(t);
	if (n > INT64_MAX / sz)
		return -1;
	return n * sz;
}

/* ---- the file ------------------------------------------------------------ */

struct st_file {
	sn_arena *a;
	const unsigned char *data; /* the data buffer, after the header; NULL when read from fd */
	size_t dlen;
	int fd;           /* st_open's file, read with pread by st_read_as; -1 for st_parse */
	uint64_t dstart;  /* the data buffer's offset in the file */
	const char *path; /* st_open's path (arena), for messages */
	st_entry *ents; /* heap, header order */
	size_t n, cap;
	const st_entry **byname; /* heap, sorted by name */
	const char **meta; /* heap, key/value pairs */
	size_t nmeta, metacap;
};

void st_close(st_file *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		sn_close(f->fd);
	free(f->ents);
	free(f->byname);
	free(f->meta);
	sn_arena_free(f->a);
	free(f);
}

size_t st_count(const st_file *f) { return f->n; }
const st_entry *st_get(const st_file *f, size_t i) { return i < f->n ? &f->ents[i] : NULL; }
size_t st_meta_count(const st_file *f) { return f->nmeta; }
const char *st_meta_key(const st_file *f, size_t i) { return i < f->nmeta ? f->meta[2 * i] : NULL; }
const char *st_meta_value(const st_file *f, size_t i) { return i < f->nmeta ? f->meta[2 * i + 1] : NULL; }

const char *st_meta_find(const st_file *f, const char *key)
{
	for (size_t i = 0; i < f->nmeta; i++)
		if (strcmp(f->meta[2 * i], key) == 0)
			return f->meta[2 * i + 1];
	return NULL;
}

static int cmp_entry_name(const void *a, const void *b)
{
	return strcmp((*(const st_entry *const *)a)->name, (*(const st_entry *const *)b)->name);
}

const st_entry *st_find(const st_file *f, const char *name)
{
	st_entry key = {.name = name};
	const st_entry *kp = &key;
	const st_entry **hit = f->n ? bsearch(&kp, f->byname, f->n, sizeof *f->byname, cmp_entry_name) : NULL;
	return hit ? *hit : NULL;
}

/* ---- the header ---------------------------------------------------------- */

typedef struct parser {
	st_file *f;
	js_cur c;
	const char *name; /* the file, for messages */
	sn_err *e;
} parser;

static int oom(parser *p)
{
	return sn_errf(p->e, SN_EINTERNAL, "%s: out of memory", p->name);
}

/* Reads "[n, ...]" of at most max non-negative integers into v. field names
 * the list in messages ("shape", "data_offsets"). */
static int read_ints(parser *p, const char *tname, const char *field, int64_t *v, int max, int *count)
{
	int rc;
	*count = 0;
	if ((rc = js_expect(&p->c, '[', "to start a list")))
		return rc;
	if (js_accept(&p->c, ']'))
		return SN_OK;
	do {
		int i = *count;
		char ch = js_peek(&p->c);
		if (ch != '-' && !(ch >= '0' && ch <= '9'))
			return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": %s[%d] is not a number",
				       p->name, tname, field, i);
		const char *raw;
		size_t n;
		if ((rc = js_number(&p->c, &raw, &n)))
			return rc;
		int bad = js_uint(raw, n, i < max ? &v[i] : &(int64_t){0});
		int shown = n > 40 ? 40 : (int)n;
		const char *tail = n > 40 ? "..." : "";
		if (bad == 1)
			return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": %s[%d] is negative: %.*s%s",
				       p->name, tname, field, i, shown, raw, tail);
		if (bad == 2)
			return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": %s[%d] is not an integer: %.*s%s",
				       p->name, tname, field, i, shown, raw, tail);
		if (bad == 3)
			return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": %s[%d] overflows int64: %.*s%s",
				       p->name, tname, field, i, shown, raw, tail);
		if (i == max) {
			if (max == IR_MAX_RANK)
				return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": rank exceeds the maximum %d",
					       p->name, tname, IR_MAX_RANK);
			return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": %s must hold %d integers",
				       p->name, tname, field, max);
		}
		(*count)++;
	} while (js_accept(&p->c, ','));
	return js_expect(&p->c, ']', "or ',' in a list");
}

static bool is_key(const char *k, size_t kn, const char *want)
{
	return kn == strlen(want) && memcmp(k, want, kn) == 0;
}

static int parse_tensor(parser *p, const char *tname)
{
	int rc;
	st_entry en = {.name = tname};
	int64_t off[2];
	bool have_dt = false, have_shape = false, have_off = false;
	if (js_peek(&p->c) != '{')
		return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\" is not an object", p->name, tname);
	p->c.pos++;
	if (!js_accept(&p->c, '}')) {
		do {
			char *k;
			size_t kn;
			if ((rc = js_string(&p->c, &k, &kn)) ||
			    (rc = js_expect(&p->c, ':', "after a key")))
				return rc;
			bool *seen = is_key(k, kn, "dtype") ? &have_dt
				     : is_key(k, kn, "shape") ? &have_shape
				     : is_key(k, kn, "data_offsets") ? &have_off : NULL;
			if (!seen) {
				if ((rc = js_skip(&p->c)))
					return rc;
				continue;
			}
			if (*seen)
				return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": duplicate key \"%s\"",
					       p->name, tname, k);
			*seen = true;
			char ch = js_peek(&p->c);
			if (seen == &have_dt) {
				if (ch != '"')
					return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": \"dtype\" is not a string",
						       p->name, tname);
				char *dt;
				size_t dn;
				if ((rc = js_string(&p->c, &dt, &dn)))
					return rc;
				int t = strlen(dt) == dn ? st_dtype_parse(dt) : -1;
				if (t < 0)
					return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": unsupported dtype \"%.40s\"",
						       p->name, tname, dt);
				en.dtype = (st_dtype)t;
			} else if (seen == &have_shape) {
				if (ch != '[')
					return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": \"shape\" is not a list",
						       p->name, tname);
				int r;
				if ((rc = read_ints(p, tname, "shape", en.shape, IR_MAX_RANK, &r)))
					return rc;
				en.rank = r;
			} else {
				int cnt;
				if (ch != '[')
					return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": \"data_offsets\" is not a list",
						       p->name, tname);
				if ((rc = read_ints(p, tname, "data_offsets", off, 2, &cnt)))
					return rc;
				if (cnt != 2)
					return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": data_offsets must hold 2 integers",
						       p->name, tname);
			}
		} while (js_accept(&p->c, ','));
		if ((rc = js_expect(&p->c, '}', "or ',' in a tensor")))
			return rc;
	}
	const char *missing = !have_dt ? "dtype" : !have_shape ? "shape" : !have_off ? "data_offsets" : NULL;
	if (missing)
		return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": missing \"%s\"", p->name, tname, missing);

	char ts[256];
	type_str(ts, sizeof ts, en.dtype, en.rank, en.shape);
	int64_t size = byte_size(en.dtype, en.rank, en.shape);
	if (size < 0)
		return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": the byte size of %s overflows",
			       p->name, tname, ts);
	if (off[0] > off[1])
		return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": data_offsets [%" PRId64 ", %" PRId64
			       "] end before they begin", p->name, tname, off[0], off[1]);
	if (off[1] - off[0] != size)
		return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": %s needs %" PRId64
			       " bytes but data_offsets [%" PRId64 ", %" PRId64 "] span %" PRId64,
			       p->name, tname, ts, size, off[0], off[1], off[1] - off[0]);
	if ((uint64_t)off[1] > p->f->dlen)
		return sn_errf(p->e, SN_EINPUT, "%s: tensor \"%s\": data_offsets [%" PRId64 ", %" PRId64
			       "] exceed the data buffer of %zu bytes", p->name, tname, off[0], off[1], p->f->dlen);
	en.file = p->f;
	en.offset = (uint64_t)off[0];
	en.data = p->f->data ? p->f->data + off[0] : NULL;
	en.nbytes = (size_t)size;

	st_file *f = p->f;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		st_entry *ne = realloc(f->ents, cap * sizeof *ne);
		if (!ne)
			return oom(p);
		f->ents = ne;
		f->cap = cap;
	}
	f->ents[f->n++] = en;
	return SN_OK;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int parse_meta(parser *p)
{
	int rc = SN_OK;
	st_file *f = p->f;
	if (js_peek(&p->c) != '{')
		return sn_errf(p->e, SN_EINPUT, "%s: \"__metadata__\" is not an object", p->name);
	p->c.pos++;
	if (!js_accept(&p->c, '}')) {
		do {
			char *k, *v;
			size_t kn, vn;
			if ((rc = js_string(&p->c, &k, &kn)) ||
			    (rc = js_expect(&p->c, ':', "after a key")))
				return rc;
			if (js_peek(&p->c) != '"')
				return sn_errf(p->e, SN_EINPUT, "%s: \"__metadata__\": the value of \"%s\" is not a string",
					       p->name, k);
			if ((rc = js_string(&p->c, &v, &vn)))
				return rc;
			if (strlen(k) != kn || strlen(v) != vn)
				return sn_errf(p->e, SN_EINPUT, "%s: \"__metadata__\": \"%s\" holds a NUL character",
					       p->name, k);
			if (f->nmeta == f->metacap) {
				size_t cap = f->metacap ? 2 * f->metacap : 8;
				const char **nm = realloc(f->meta, 2 * cap * sizeof *nm);
				if (!nm)
					return oom(p);
				f->meta = nm;
				f->metacap = cap;
			}
			f->meta[2 * f->nmeta] = k;
			f->meta[2 * f->nmeta + 1] = v;
			f->nmeta++;
		} while (js_accept(&p->c, ','));
		if ((rc = js_expect(&p->c, '}', "or ',' in \"__metadata__\"")))
			return rc;
	}
	/* duplicate keys: sort a copy of the keys */
	if (f->nmeta > 1) {
		const char **keys = malloc(f->nmeta * sizeof *keys);
		if (!keys)
			return oom(p);
		for (size_t i = 0; i < f->nmeta; i++)
			keys[i] = f->meta[2 * i];
		qsort(keys, f->nmeta, sizeof *keys, cmp_str);
		for (size_t i = 1; i < f->nmeta; i++)
			if (strcmp(keys[i - 1], keys[i]) == 0) {
				rc = sn_errf(p->e, SN_EINPUT, "%s: \"__metadata__\": duplicate key \"%s\"",
					     p->name, keys[i]);
				break;
			}
		free(keys);
	}
	return rc;
}

static int cmp_entry_offset(const void *a, const void *b)
{
	const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

/* Names are unique, no two non-empty tensors share a byte. */
static int check_layout(parser *p)
{
	st_file *f = p->f;
	if (!f->n)
		return SN_OK;
	f->byname = malloc(f->n * sizeof *f->byname);
	const st_entry **byoff = malloc(f->n * sizeof *byoff);
	if (!f->byname || !byoff) {
		free(byoff);
		return oom(p);
	}
	for (size_t i = 0; i < f->n; i++)
		f->byname[i] = byoff[i] = &f->ents[i];
	qsort(f->byname, f->n, sizeof *f->byname, cmp_entry_name);
	qsort(byoff, f->n, sizeof *byoff, cmp_entry_offset);
	int rc = SN_OK;
	for (size_t i = 1; i < f->n; i++)
		if (strcmp(f->byname[i - 1]->name, f->byname[i]->name) == 0) {
			rc = sn_errf(p->e, SN_EINPUT, "%s: duplicate tensor \"%s\"", p->name, f->byname[i]->name);
			goto done;
		}
	const st_entry *last = NULL; /* the non-empty tensor reaching furthest so far */
	for (size_t i = 0; i < f->n; i++) {
		const st_entry *en = byoff[i];
		if (!en->nbytes)
			continue;
		uint64_t d = en->offset;
		if (last && d < last->offset + last->nbytes) {
			size_t lb = (size_t)last->offset;
			size_t b = (size_t)d;
			rc = sn_errf(p->e, SN_EINPUT, "%s: tensors \"%s\" [%zu, %zu] and \"%s\" [%zu, %zu] overlap",
				     p->name, last->name, lb, lb + last->nbytes, en->name, b, b + en->nbytes);
			goto done;
		}
		if (!last || d + en->nbytes > last->offset + last->nbytes)
			last = en;
	}
done:
	free(byoff);
	return rc;
}

static int parse_header(parser *p)
{
	int rc;
	bool have_meta = false;
	if (js_peek(&p->c) != '{')
		return sn_errf(p->e, SN_EINPUT, "%s: header is not a JSON object", p->name);
	p->c.pos++;
	if (!js_accept(&p->c, '}')) {
		do {
			char *k;
			size_t kn;
			if ((rc = js_string(&p->c, &k, &kn)) ||
			    (rc = js_expect(&p->c, ':', "after a tensor name")))
				return rc;
			if (strlen(k) != kn)
				return sn_errf(p->e, SN_EINPUT, "%s: tensor name \"%s...\" holds a NUL character",
					       p->name, k);
			if (strcmp(k, "__metadata__") == 0) {
				if (have_meta)
					return sn_errf(p->e, SN_EINPUT, "%s: duplicate \"__metadata__\"", p->name);
				have_meta = true;
				rc = parse_meta(p);
			} else {
				rc = parse_tensor(p, k);
			}
			if (rc)
				return rc;
		} while (js_accept(&p->c, ','));
		if ((rc = js_expect(&p->c, '}', "or ',' after a tensor")))
			return rc;
	}
	if ((rc = js_end(&p->c)))
		return rc;
	return check_layout(p);
}

static uint64_t le64(const unsigned char *b)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* The header at hdr (hlen bytes) of a file of len bytes; data is the data
 * buffer in memory, or NULL when st_read_as reads it from fd. */
static int parse_image(const unsigned char *hdr, uint64_t hlen, uint64_t len, const unsigned char *data,
		       int fd, const char *name, st_file **out, sn_err *e)
{
	*out = NULL;
	if (hlen > len - 8)
		return sn_errf(e, SN_EINPUT, "%s: header length %" PRIu64 " exceeds the file size %" PRIu64,
			       name, hlen, len);
	if (hlen > ST_MAX_HEADER)
		return sn_errf(e, SN_EINPUT, "%s: header length %" PRIu64 " exceeds the limit of %u bytes",
			       name, hlen, ST_MAX_HEADER);
	st_file *f = calloc(1, sizeof *f);
	if (!f || !(f->a = sn_arena_new())) {
		free(f);
		return sn_errf(e, SN_EINTERNAL, "%s: out of memory", name);
	}
	f->fd = -1;
	f->data = data;
	f->dlen = (size_t)(len - 8 - hlen);
	f->dstart = 8 + hlen;
	parser p = {.f = f, .name = name, .e = e};
	char what[512];
	snprintf(what, sizeof what, "%s: header", name);
	js_init(&p.c, (const char *)hdr, (size_t)hlen, what, f->a, e);
	int rc = parse_header(&p);
	if (rc) {
		st_close(f);
		return rc;
	}
	f->fd = fd;
	*out = f;
	return SN_OK;
}

int st_parse(const void *buf, size_t len, const char *name, st_file **out, sn_err *e)
{
	const unsigned char *b = buf;
	*out = NULL;
	if (len < 8)
		return sn_errf(e, SN_EINPUT, "%s: file of %zu bytes is too short for a safetensors header",
			       name, len);
	uint64_t hlen = le64(b);
	const unsigned char *data = hlen <= len - 8 ? b + 8 + hlen : NULL;
	return parse_image(b + 8, hlen, len, data, -1, name, out, e);
}

int st_open(const char *path, st_file **out, sn_err *e)
{
	/* Not mapped: a mapped file that another process truncates kills the
	 * reader with SIGBUS. The header is read here; st_read_as reads each
	 * tensor with pread straight into the caller's memory (one copy, as a
	 * mapping's memcpy was), and a file that shrank is an error. */
	*out = NULL;
	int fd;
	struct stat sb;
	int rc = sn_open_read(path, 0, UINT64_MAX, NULL, &fd, &sb, e);
	if (rc)
		return rc;
	uint64_t len = (uint64_t)sb.st_size;
	unsigned char len8[8], *hdr = NULL;
	if (len < 8) {
		sn_close(fd);
		return sn_errf(e, SN_EINPUT, "%s: file of %" PRIu64 " bytes is too short for a safetensors header",
			       path, len);
	}
	uint64_t hlen = 0;
	if (!(rc = sn_pread_full(fd, len8, 8, 0, path, e))) {
		hlen = le64(len8);
		if (hlen <= len - 8 && hlen <= ST_MAX_HEADER) {
			if (!(hdr = malloc(hlen ? hlen : 1)))
				rc = sn_errf(e, SN_EINTERNAL, "%s: out of memory", path);
			else
				rc = sn_pread_full(fd, hdr, (size_t)hlen, 8, path, e);
		}
	}
	st_file *f = NULL;
	if (!rc)
		rc = parse_image(hdr, hlen, len, NULL, fd, path, &f, e);
	free(hdr);
	if (rc) {
		sn_close(fd);
		return rc;
	}
	f->path = sn_strdup(f->a, path);
	if (!f->path) {
		st_close(f);
		return sn_errf(e, SN_EINTERNAL, "%s: out of memory", path);
	}
	*out = f;
	return SN_OK;
}

/* ---- conversion ------------------------------------------------------------ */

bool st_dtype_is_float(st_dtype t)
{
	return t == ST_F64 || t == ST_F32 || t == ST_F16 || t == ST_BF16 || t == ST_F8_E4M3 || t == ST_F8_E5M2;
}

const char *st_path(const st_file *f)
{
	return f ? f->path : NULL;
}

/* An integer element (bool as 0 or 1) exactly, no double on the way. */
static int64_t load_int(st_dtype t, const unsigned char *b)
{
	switch (t) {
	case ST_I64: {
		int64_t v;
		memcpy(&v, b, 8);
		return v;
	}
	case ST_I32: {
		int32_t v;
		memcpy(&v, b, 4);
		return v;
	}
	case ST_I8: return (int8_t)b[0];
	case ST_U8: return b[0];
	default: return b[0] != 0; /* ST_BOOL */
	}
}

/* Stores v as integer dtype t at dst[i] if it fits; false otherwise. */
static bool store_int(ir_dtype t, void *dst, size_t i, int64_t v)
{
	switch (t) {
	case IR_I64: ((int64_t *)dst)[i] = v; return true;
	case IR_I32:
		if (v < INT32_MIN || v > INT32_MAX)
			return false;
		((int32_t *)dst)[i] = (int32_t)v;
		return true;
	case IR_I8:
		if (v < INT8_MIN || v > INT8_MAX)
			return false;
		((int8_t *)dst)[i] = (int8_t)v;
		return true;
	case IR_U8:
	case IR_BOOL:
		if (v < 0 || v > (t == IR_BOOL ? 1 : UINT8_MAX))
			return false;
		((uint8_t *)dst)[i] = (uint8_t)v;
		return true;
	default: return false;
	}
}

static int read_conv(const st_entry *en, ir_dtype want, void *dst, bool exact, sn_err *e)
{
	if ((unsigned)en->dtype >= ST_NDTYPES || (unsigned)want >= IR_NDTYPES)
		return sn_errf(e, SN_EINPUT, "tensor \"%s\": bad dtype", en->name);
	int64_t size = byte_size(en->dtype, en->rank, en->shape);
	if (en->rank < 0 || en->rank > IR_MAX_RANK || size < 0 || (uint64_t)size != en->nbytes)
		return sn_errf(e, SN_EINPUT, "tensor \"%s\": %zu bytes do not match its shape",
			       en->name, en->nbytes);
	bool ints = !st_dtype_is_float(en->dtype);
	if (exact && ints == ir_dtype_is_float(want))
		return sn_errf(e, SN_EINPUT, "tensor \"%s\" is %s and is not converted to %s: sinter converts "
			       "among floats and among integers, never between the two", en->name,
			       st_dtype_name(en->dtype), ir_dtype_name(want));
	const st_file *f = en->file;
	bool from_fd = !en->data && en->nbytes;
	if (from_fd && (!f || f->fd < 0))
		return sn_errf(e, SN_EINTERNAL, "tensor \"%s\": no data to read", en->name);
	if (dtypes[en->dtype].ir == (int)want) {
		if (from_fd)
			return sn_pread_full(f->fd, dst, en->nbytes, f->dstart + en->offset, f->path, e);
		if (en->nbytes)
			memcpy(dst, en->data, en->nbytes);
		return SN_OK;
	}
	size_t n = (size_t)st_numel(en), es = dtypes[en->dtype].size;
	int irt = dtypes[en->dtype].ir;
	enum { CHUNK = 1 << 16 }; /* elements converted per read from the file */
	unsigned char *chunk = from_fd ? malloc(CHUNK * es) : NULL;
	if (from_fd && !chunk)
		return sn_errf(e, SN_EINTERNAL, "tensor \"%s\": out of memory", en->name);
	int rc = SN_OK;
	for (size_t base = 0; base < n && !rc; base += CHUNK) {
		size_t k = n - base < CHUNK ? n - base : CHUNK;
		const unsigned char *src = (const unsigned char *)en->data + base * es;
		if (from_fd) {
			if ((rc = sn_pread_full(f->fd, chunk, k * es, f->dstart + en->offset + base * es, f->path, e)))
				break;
			src = chunk;
		}
		for (size_t i = 0; i < k; i++) {
			if (exact && ints) {
				int64_t v = load_int(en->dtype, src + i * es);
				if (!store_int(want, dst, base + i, v)) {
					rc = sn_errf(e, SN_EINPUT, "tensor \"%s\": element %zu is %" PRId64
						     ", which does not fit %s", en->name, base + i, v, ir_dtype_name(want));
					break;
				}
				continue;
			}
			union {
				double d;
				int64_t i64;
				unsigned char b[8];
			} tmp;
			memcpy(tmp.b, src + i * es, es); /* the source may be unaligned */
			double x = irt < 0 ? tmp.d : ir_load((ir_dtype)irt, tmp.b, 0);
			ir_store(want, dst, base + i, x);
		}
	}
	free(chunk);
	return rc;
}

int st_read_as(const st_entry *en, ir_dtype want, void *dst, sn_err *e)
{
	return read_conv(en, want, dst, false, e);
}

int st_read_exact(const st_entry *en, ir_dtype want, void *dst, sn_err *e)
{
	return read_conv(en, want, dst, true, e);
}

/* ---- several files ----------------------------------------------------------- */

struct st_set {
	sn_arena *a;
	st_file **files; /* heap */
	size_t nfiles, cap;
	const st_entry **byname; /* heap, sorted by key */
	size_t n;
};

void st_set_close(st_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nfiles; i++)
		st_close(s->files[i]);
	free(s->files);
	free(s->byname);
	sn_arena_free(s->a);
	free(s);
}

size_t st_set_count(const st_set *s) { return s->n; }
const st_entry *st_set_get(const st_set *s, size_t i) { return i < s->n ? s->byname[i] : NULL; }
size_t st_set_nfiles(const st_set *s) { return s->nfiles; }
const char *st_set_file(const st_set *s, size_t i) { return i < s->nfiles ? s->files[i]->path : NULL; }

const st_entry *st_set_find(const st_set *s, const char *key)
{
	st_entry k = {.name = key};
	const st_entry *kp = &k;
	const st_entry **hit = s->n ? bsearch(&kp, s->byname, s->n, sizeof *s->byname, cmp_entry_name) : NULL;
	return hit ? *hit : NULL;
}

/* Opens path into s unless s has that file already; *f (may be NULL) gets it. */
static int set_add(st_set *s, const char *path, st_file **f, sn_err *e)
{
	for (size_t i = 0; i < s->nfiles; i++)
		if (sn_same_file(path, s->files[i]->path)) {
			if (f)
				*f = s->files[i];
			return SN_OK;
		}
	if (s->nfiles == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;
		st_file **nf = realloc(s->files, cap * sizeof *nf);
		if (!nf)
			return sn_errf(e, SN_EINTERNAL, "out of memory");
		s->files = nf;
		s->cap = cap;
	}
	int rc = st_open(path, &s->files[s->nfiles], e);
	if (rc)
		return rc;
	if (f)
		*f = s->files[s->nfiles];
	s->nfiles++;
	return SN_OK;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);
	return n >= k && !strcmp(s + n - k, tail);
}

/* A sharded checkpoint's index: {"weight_map": {KEY: SHARD, ...}, ...}. */
static int set_add_index(st_set *s, const char *path, sn_err *e)
{
	void *buf = NULL;
	size_t len = 0;
	int rc = sn_read_file(path, 0, ST_MAX_HEADER, NULL, &buf, &len, e);
	if (rc)
		return rc;
	char *dir = sn_dirname(path);
	sn_arena *a = sn_arena_new();
	char what[600];
	snprintf(what, sizeof what, "%s:", path);
	js_cur c;
	if (!dir || !a) {
		rc = sn_errf(e, SN_EINTERNAL, "out of memory");
		goto done;
	}
	js_init(&c, buf, len, what, a, e);
	if (js_peek(&c) != '{') {
		rc = sn_errf(e, SN_EINPUT, "%s: a safetensors index is a JSON object", path);
		goto done;
	}
	c.pos++;
	bool have_map = false;
	if (!js_accept(&c, '}')) {
		do {
			char *k;
			size_t kn;
			if ((rc = js_string(&c, &k, &kn)) || (rc = js_expect(&c, ':', "after a key")))
				goto done;
			if (strcmp(k, "weight_map") != 0) {
				if ((rc = js_skip(&c)))
					goto done;
				continue;
			}
			if (have_map || js_peek(&c) != '{') {
				rc = sn_errf(e, SN_EINPUT, "%s: %s \"weight_map\"", path,
					     have_map ? "a second" : "a non-object");
				goto done;
			}
			have_map = true;
			c.pos++;
			if (js_accept(&c, '}'))
				continue;
			do {
				char *key, *shard;
				size_t keyn, shn;
				if ((rc = js_string(&c, &key, &keyn)) || (rc = js_expect(&c, ':', "after a key")))
					goto done;
				if (js_peek(&c) != '"') {
					rc = sn_errf(e, SN_EINPUT, "%s: weight_map: the shard of \"%s\" is not a string",
						     path, key);
					goto done;
				}
				if ((rc = js_string(&c, &shard, &shn)))
					goto done;
				char *full = NULL, sw[700];
				snprintf(sw, sizeof sw, "%s: the shard of \"%.100s\"", path, key);
				st_file *f = NULL;
				if ((rc = strlen(shard) != shn ? sn_errf(e, SN_EINPUT, "%s holds a NUL", sw)
							       : sn_path_confine(dir, shard, sw, &full, e)) ||
				    (rc = set_add(s, full, &f, e))) {
					free(full);
					goto done;
				}
				free(full);
				if (!st_find(f, key)) {
					rc = sn_errf(e, SN_EINPUT, "%s: weight_map puts \"%s\" in %s, which does not hold it",
						     path, key, shard);
					goto done;
				}
			} while (js_accept(&c, ','));
			if ((rc = js_expect(&c, '}', "or ',' in weight_map")))
				goto done;
		} while (js_accept(&c, ','));
		if ((rc = js_expect(&c, '}', "or ',' in the index")))
			goto done;
	}
	if ((rc = js_end(&c)))
		goto done;
	if (!have_map)
		rc = sn_errf(e, SN_EINPUT, "%s: no \"weight_map\": not a safetensors index", path);
done:
	sn_arena_free(a);
	free(dir);
	free(buf);
	return rc;
}

int st_set_open(const char *const *paths, size_t n, st_set **out, sn_err *e)
{
	*out = NULL;
	st_set *s = calloc(1, sizeof *s);
	if (!s || !(s->a = sn_arena_new())) {
		free(s);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	int rc = SN_OK;
	for (size_t i = 0; i < n && !rc; i++)
		rc = ends_with(paths[i], ".json") ? set_add_index(s, paths[i], e) : set_add(s, paths[i], NULL, e);
	size_t total = 0;
	for (size_t i = 0; i < s->nfiles; i++)
		total += s->files[i]->n;
	if (!rc && total && !(s->byname = malloc(total * sizeof *s->byname)))
		rc = sn_errf(e, SN_EINTERNAL, "out of memory");
	if (!rc) {
		for (size_t i = 0; i < s->nfiles; i++)
			for (size_t k = 0; k < s->files[i]->n; k++)
				s->byname[s->n++] = &s->files[i]->ents[k];
		if (s->n)
			qsort(s->byname, s->n, sizeof *s->byname, cmp_entry_name);
		for (size_t i = 1; i < s->n && !rc; i++)
			if (!strcmp(s->byname[i - 1]->name, s->byname[i]->name)) {
				/* in file order, whatever the sort left */
				const st_file *x = s->byname[i - 1]->file, *y = s->byname[i]->file;
				size_t ix = 0, iy = 0;
				for (size_t k = 0; k < s->nfiles; k++) {
					ix = s->files[k] == x ? k : ix;
					iy = s->files[k] == y ? k : iy;
				}
				if (iy < ix) {
					const st_file *t = x;
					x = y;
					y = t;
				}
				rc = sn_errf(e, SN_EINPUT, "duplicate key \"%s\" in %s and %s", s->byname[i]->name,
					     x->path, y->path);
			}
	}
	if (rc) {
		st_set_close(s);
		return rc;
	}
	*out = s;
	return SN_OK;
}

const st_entry *st_set_lookup(const st_set *s, const char *key, const char *prefix)
{
	size_t pn = prefix ? strlen(prefix) : 0;
	if (pn) {
		size_t kn = strlen(key);
		char *buf = malloc(pn + kn + 1);
		const st_entry *en = NULL;
		if (buf) {
			memcpy(buf, prefix, pn);
			memcpy(buf + pn, key, kn + 1);
			en = st_set_find(s, buf);
			free(buf);
		}
		if (!en && !strncmp(key, prefix, pn))
			en = st_set_find(s, key + pn);
		if (en)
			return en;
	}
	return st_set_find(s, key);
}

/* Whether every key is found under prefix p. */
static bool all_under(const st_set *s, const char *const *keys, size_t n, const char *p)
{
	for (size_t i = 0; i < n; i++)
		if (!st_set_lookup(s, keys[i], p))
			return false;
	return true;
}

int st_set_guess_prefix(const st_set *s, const char *const *keys, size_t n, const char **prefix,
			const char **other)
{
	*prefix = *other = NULL;
	size_t miss = 0;
	while (miss < n && st_set_find(s, keys[miss]))
		miss++;
	if (miss == n)
		return 0; /* every key is there as it is */
	/* the candidates come from the first key missing: a file key that
	 * ends in ".KEY" (the file's keys carry it), or KEY's own start up to
	 * a '.' (the model's keys carry it) */
	const char *k0 = keys[miss];
	size_t k0n = strlen(k0);
	int found = 0;
	for (size_t i = 0; i < s->n + k0n && found < 2; i++) {
		const char *cand;
		size_t cn;
		if (i < s->n) {
			const char *nm = s->byname[i]->name;
			size_t nn = strlen(nm);
			if (nn <= k0n + 1 || strcmp(nm + nn - k0n, k0) || nm[nn - k0n - 1] != '.')
				continue;
			cand = nm;
			cn = nn - k0n;
		} else {
			size_t j = i - s->n;
			if (k0[j] != '.' || j + 1 >= k0n)
				continue;
			cand = k0;
			cn = j + 1;
		}
		if (*prefix && strlen(*prefix) == cn && !strncmp(*prefix, cand, cn))
			continue; /* tried */
		char *p = sn_strndup(s->a, cand, cn);
		if (!p || !all_under(s, keys, n, p))
			continue;
		*(found ? other : prefix) = p;
		found++;
	}
	return found;
}

/* ---- writer ------------------------------------------------------------------- */

static void put_json_str(sn_buf *b, const char *s)
{
	sn_buf_puts(b, "\"");
	for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
		if (*q == '"' || *q == '\\')
			sn_buf_printf(b, "\\%c", *q);
		else if (*q < 0x20)
			sn_buf_printf(b, "\\u%04x", *q);
		else
			sn_buf_printf(b, "%c", *q);
	}
	sn_buf_puts(b, "\"");
}

static int check_entries(const char *path, const st_entry *en, size_t n, const char *const *kv,
			 size_t nmeta, sn_err *e)
{
	for (size_t i = 0; i < n; i++) {
		const st_entry *t = &en[i];
		if (!t->name || !js_utf8_valid(t->name, strlen(t->name)))
			return sn_errf(e, SN_EINPUT, "cannot write %s: tensor %zu has no name or one that is not UTF-8",
				       path, i);
		if (strcmp(t->name, "__metadata__") == 0)
			return sn_errf(e, SN_EINPUT, "cannot write %s: a tensor cannot be named \"__metadata__\"", path);
		if ((unsigned)t->dtype >= ST_NDTYPES)
			return sn_errf(e, SN_EINPUT, "cannot write %s: tensor \"%s\": bad dtype %d",
				       path, t->name, (int)t->dtype);
		if (t->rank < 0 || t->rank > IR_MAX_RANK)
			return sn_errf(e, SN_EINPUT, "cannot write %s: tensor \"%s\": rank %d is out of range",
				       path, t->name, (int)t->rank);
		char ts[256];
		type_str(ts, sizeof ts, t->dtype, t->rank, t->shape);
		int64_t size = byte_size(t->dtype, t->rank, t->shape);
		if (size < 0)
			return sn_errf(e, SN_EINPUT, "cannot write %s: tensor \"%s\": bad shape %s",
				       path, t->name, ts);
		if ((uint64_t)size != t->nbytes || (size && !t->data))
			return sn_errf(e, SN_EINPUT, "cannot write %s: tensor \"%s\": %s needs %" PRId64
				       " bytes, got %zu", path, t->name, ts, size, t->nbytes);
	}
	for (size_t i = 0; i < 2 * nmeta; i++)
		if (!kv[i] || !js_utf8_valid(kv[i], strlen(kv[i])))
			return sn_errf(e, SN_EINPUT, "cannot write %s: metadata %s %zu is missing or not UTF-8",
				       path, i % 2 ? "value" : "key", i / 2);
	size_t m = n > nmeta ? n : nmeta;
	const char **names = malloc((m ? m : 1) * sizeof *names);
	if (!names)
		return sn_errf(e, SN_EINTERNAL, "cannot write %s: out of memory", path);
	int rc = SN_OK;
	for (int pass = 0; pass < 2 && !rc; pass++) {
		size_t k = pass ? nmeta : n;
		for (size_t i = 0; i < k; i++)
			names[i] = pass ? kv[2 * i] : en[i].name;
		qsort(names, k, sizeof *names, cmp_str);
		for (size_t i = 1; i < k; i++)
			if (strcmp(names[i - 1], names[i]) == 0) {
				rc = sn_errf(e, SN_EINPUT, "cannot write %s: duplicate %s \"%s\"", path,
					     pass ? "metadata key" : "tensor", names[i]);
				break;
			}
	}
	free(names);
	return rc;
}

int st_write_to(sn_out *o, const st_entry *entries, size_t n, const char *const *meta_kv,
		size_t nmeta, sn_err *e)
{
	const char *path = o->path;
	int rc = check_entries(path, entries, n, meta_kv, nmeta, e);
	if (rc)
		return rc;
	sn_buf h = {0};
	sn_buf_puts(&h, "{");
	if (nmeta) {
		sn_buf_puts(&h, "\"__metadata__\":{");
		for (size_t i = 0; i < nmeta; i++) {
			if (i)
				sn_buf_puts(&h, ",");
			put_json_str(&h, meta_kv[2 * i]);
			sn_buf_puts(&h, ":");
			put_json_str(&h, meta_kv[2 * i + 1]);
		}
		sn_buf_puts(&h, "}");
	}
	uint64_t off = 0;
	for (size_t i = 0; i < n; i++) {
		const st_entry *t = &entries[i];
		if (i || nmeta)
			sn_buf_puts(&h, ",");
		put_json_str(&h, t->name);
		sn_buf_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype_name(t->dtype));
		for (int d = 0; d < t->rank; d++)
			sn_buf_printf(&h, "%s%" PRId64, d ? "," : "", t->shape[d]);
		sn_buf_printf(&h, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", off, off + t->nbytes);
		off += t->nbytes;
	}
	sn_buf_puts(&h, "}");
	while (h.len % 8 && !h.oom) /* a failed append adds nothing: stop */
		sn_buf_puts(&h, " ");
	if (h.oom)
		rc = sn_errf(e, SN_EINTERNAL, "cannot write %s: out of memory", path);
	else if (h.len > ST_MAX_HEADER)
		rc = sn_errf(e, SN_EINPUT, "cannot write %s: header of %zu bytes exceeds the limit of %u",
			     path, h.len, ST_MAX_HEADER);
	if (!rc) {
		unsigned char len8[8];
		for (int i = 0; i < 8; i++)
			len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
		sn_out_write(o, len8, 8);
		sn_out_write(o, h.s, h.len);
		for (size_t i = 0; i < n; i++)
			if (entries[i].nbytes)
				sn_out_write(o, entries[i].data, entries[i].nbytes);
	}
	sn_buf_free(&h);
	return rc;
}

int st_write(const char *path, const st_entry *entries, size_t n,
	     const char *const *meta_kv, size_t nmeta, sn_err *e)
{
	/* Checked before the temp file exists, so a refusal leaves nothing. */
	int rc = check_entries(path, entries, n, meta_kv, nmeta, e);
	if (rc)
		return rc;
	sn_out o;
	if ((rc = sn_out_open(&o, path, 0666, e)))
		return rc;
	rc = st_write_to(&o, entries, n, meta_kv, nmeta, e);
	if (!rc)
		rc = sn_out_finish(&o, e);
	if (!rc)
		rc = sn_out_commit(&o, e);
	sn_out_abort(&o);
	return rc;
}
