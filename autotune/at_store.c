/* at_store.c: where tuning records live (at.h). Locally one small file per
 * (spec, device) key, dir/tuning/<2 hex>/<30 hex>.json, written through
 * ir/file.h's writer (a unique temp file beside the entry, fsync, rename:
 * atomic for concurrent writers and on a shared network folder); folders
 * 0700. Remotely Redis, read-through and write-through, under the key
 * "sinter:tuning:<32 hex>"; Redis away, slow or answering garbage makes
 * the store fall back to the local folder for the rest of the run. */
#include "autotune/at.h"

#include "ir/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* Redis calls wait at most this long; a slow Redis is a Redis away. */
#define AT_REDIS_TIMEOUT_MS 200
/* After this many failed calls the remote store is given up for the run. */
#define AT_REDIS_MAX_ERRORS 3

struct at_store {
	char *dir; /* the cache dir, or NULL */
	at_redis *redis;
	char *remote;
	void (*warn)(void *, const char *);
	void *ctx;
	at_store_stats st;
};

static void say(const at_store *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const at_store *s, const char *fmt, ...)
{
	char msg[4608];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (s->warn)
		s->warn(s->ctx, msg);
	else
		fprintf(stderr, "sinter: warning: %s\n", msg);
}

static void key_hex(const uint8_t key[16], char out[33])
{
	static const char d[] = "0123456789abcdef";
	for (int i = 0; i < 16; i++) {
		out[2 * i] = d[key[i] >> 4];
		out[2 * i + 1] = d[key[i] & 15];
	}
	out[32] = 0;
}

/* dir/tuning/XX/<30 hex>.json into out; make: create the folders (0700). */
static int entry_path(const char *dir, const uint8_t key[16], bool make, char *out, size_t cap, sn_err *e)
{
	char h[33];
	key_hex(key, h);
	int n = snprintf(out, cap, "%s/tuning/%.2s/%s.json", dir, h, h + 2);
	if (n < 0 || (size_t)n >= cap)
		return sn_errf(e, SN_EENV, "tuning store: path under %s is too long", dir);
	if (make) {
		char sub[4200];
		const char *parts[] = {"", "/tuning", "/tuning/"};
		for (int i = 0; i < 3; i++) {
			snprintf(sub, sizeof sub, "%s%s%.*s", dir, parts[i], i == 2 ? 2 : 0, h);
			if (sn_cache_mkdir(sub) != 0)
				return sn_errf(e, SN_EENV, "tuning store: cannot create %s: %s", sub, strerror(errno));
		}
	}
	return SN_OK;
}

/* "redis://HOST:PORT" with HOST of letters, digits, '.', '-' and PORT
 * 1..65535. */
static int parse_remote(const char *url, char *host, size_t cap, int *port, sn_err *e)
{
	const char *p = strncmp(url, "redis://", 8) ? NULL : url + 8;
	const char *colon = p ? strrchr(p, ':') : NULL;
	size_t hl = colon ? (size_t)(colon - p) : 0;
	bool ok = colon && hl > 0 && hl < cap && colon[1];
	for (size_t i = 0; ok && i < hl; i++)
		ok = (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= '0' && p[i] <= '9') ||
		     p[i] == '.' || p[i] == '-';
	long v = 0;
	for (const char *d = ok ? colon + 1 : ""; ok && *d; d++) {
		ok = *d >= '0' && *d <= '9';
		v = v * 10 + (*d - '0');
		ok = ok && v <= 65535;
	}
	if (!ok || v < 1)
		return sn_errf(e, SN_EUSAGE, "remote tuning store '%s': expected redis://HOST:PORT", url);
	memcpy(host, p, hl);
	host[hl] = 0;
	*port = (int)v;
	return SN_OK;
}

int at_store_open(const char *dir, const char *remote, void (*warn)(void *, const char *), void *ctx,
		  at_store **out, sn_err *e)
{
	*out = NULL;
	char host[256];
	int port = 0;
	if (remote && remote[0] && parse_remote(remote, host, sizeof host, &port, e))
		return e->code;
	at_store *s = calloc(1, sizeof *s);
	if (!s)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	s->warn = warn;
	s->ctx = ctx;
	if ((dir && dir[0] && !(s->dir = strdup(dir))) || (remote && remote[0] && !(s->remote = strdup(remote)))) {
		at_store_close(s);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	if (s->remote) {
		sn_err sub = {0};
		if (at_redis_open(host, port, AT_REDIS_TIMEOUT_MS, &s->redis, &sub) != SN_OK) {
			if (sub.code == SN_EENV && strstr(sub.msg, "libhiredis")) {
				at_store_close(s);
				return sn_errf(e, SN_EENV, "%s", sub.msg);
			}
			say(s, "tuning store: %s: %s; using the local store only", s->remote, sub.msg);
			s->st.remote_down = true;
			s->st.remote_errors++;
		}
	}
	*out = s;
	return SN_OK;
}

void at_store_close(at_store *s)
{
	if (!s)
		return;
	at_redis_close(s->redis);
	free(s->dir);
	free(s->remote);
	free(s);
}

const at_store_stats *at_store_stats_of(const at_store *s)
{
	return &s->st;
}

static void remote_failed(at_store *s, const char *what, const char *why)
{
	s->st.remote_errors++;
	if (s->st.remote_errors >= AT_REDIS_MAX_ERRORS && !s->st.remote_down) {
		s->st.remote_down = true;
		say(s, "tuning store: %s: %s failed (%s); using the local store only from now on", s->remote, what,
		    why);
		at_redis_close(s->redis);
		s->redis = NULL;
	} else if (!s->st.remote_down) {
		say(s, "tuning store: %s: %s failed (%s)", s->remote, what, why);
	}
}

/* Parses text as the record for key; false (counted) when it is not. */
static bool accept(at_store *s, const char *text, size_t len, const uint8_t spec[16], const at_device *d,
		   at_record *out, const char *where)
{
	sn_err e = {0};
	if (at_record_parse(text, len, out, &e) != SN_OK) {
		s->st.rejected++;
		say(s, "tuning store: rejected record %s (%s)", where, e.msg);
		return false;
	}
	if (memcmp(out->spec, spec, 16) || !at_device_eq(&out->dev, d)) {
		s->st.rejected++;
		say(s, "tuning store: rejected record %s (it is for another %s)", where,
		    memcmp(out->spec, spec, 16) ? "kernel" : "device");
		return false;
	}
	return true;
}

/* A record file read whole into *buf (NUL-terminated, free it), checked
 * on the open descriptor: a regular file of at most AT_RECORD_MAX bytes,
 * and one no other user could have written (the kernel cache's rule,
 * sn_cache_trusted; docs/CACHE.md). *distrusted says the file was refused
 * for who may write it (to be left alone), not for what it holds. */
static int read_record(const char *path, char **buf, size_t *len, bool *distrusted, sn_err *e)
{
	*buf = NULL;
	*distrusted = false;
	int fd;
	struct stat sb;
	int rc = sn_open_read(path, SN_F_NOFOLLOW | SN_F_ENV, AT_RECORD_MAX, NULL, &fd, &sb, e);
	if (rc != SN_OK)
		return rc;
	const char *why = NULL;
	if (!sn_cache_trusted(&sb, &why)) {
		sn_close(fd);
		*distrusted = true;
		return sn_errf(e, SN_EENV, "%s", why);
	}
	*len = (size_t)sb.st_size;
	*buf = malloc(*len + 1);
	rc = *buf ? sn_pread_full(fd, *buf, *len, 0, path, e) : sn_errf(e, SN_EENV, "out of memory");
	sn_close(fd);
	if (rc != SN_OK) {
		free(*buf);
		*buf = NULL;
		return rc;
	}
	(*buf)[*len] = 0;
	return SN_OK;
}

static bool local_get(at_store *s, const uint8_t key[16], const uint8_t spec[16], const at_device *d,
		      at_record *out)
{
	char path[4300];
	sn_err e = {0};
	if (!s->dir || entry_path(s->dir, key, false, path, sizeof path, &e) || access(path, F_OK) != 0)
		return false;
	char *buf;
	size_t len;
	bool distrusted;
	if (read_record(path, &buf, &len, &distrusted, &e) != SN_OK) {
		s->st.rejected++;
		if (distrusted) {
			say(s, "tuning store: refused record %s (%s): ignored", path, e.msg);
		} else {
			say(s, "tuning store: rejected record %s (%s): deleted", path, e.msg);
			unlink(path);
		}
		return false;
	}
	bool ok = accept(s, buf, len, spec, d, out, path);
	free(buf);
	if (!ok)
		unlink(path);
	return ok;
}

static void local_put(at_store *s, const uint8_t key[16], const at_record *r)
{
	char path[4300];
	sn_err e = {0};
	sn_buf b = {0};
	at_record_write(r, &b);
	if (!b.oom && !entry_path(s->dir, key, true, path, sizeof path, &e) &&
	    sn_write_file(path, b.s, b.len, sn_cache_shared() ? 0640 : 0600, &e) == SN_OK)
		s->st.writes++;
	else
		say(s, "tuning store: record not stored: %s", b.oom ? "out of memory" : e.msg);
	sn_buf_free(&b);
}

int at_store_get(at_store *s, const uint8_t spec[16], const at_device *d, at_record *out, bool *found)
{
	*found = false;
	uint8_t key[16];
	at_key(spec, d, key);
	if (local_get(s, key, spec, d, out)) {
		s->st.local_hits++;
		*found = true;
		return SN_OK;
	}
	if (s->redis && !s->st.remote_down) {
		char rk[64], h[33];
		key_hex(key, h);
		snprintf(rk, sizeof rk, "sinter:tuning:%s", h);
		char *val = NULL;
		size_t len = 0;
		sn_err e = {0};
		if (at_redis_get(s->redis, rk, &val, &len, &e) != SN_OK) {
			remote_failed(s, "GET", e.msg);
		} else if (val) {
			char where[160];
			snprintf(where, sizeof where, "%s from %s", rk, s->remote);
			if (accept(s, val, len, spec, d, out, where)) {
				s->st.remote_hits++;
				*found = true;
				if (s->dir)
					local_put(s, key, out); /* read-through */
			}
			free(val);
			if (*found)
				return SN_OK;
		}
	}
	s->st.misses++;
	return SN_OK;
}

void at_store_put(at_store *s, const at_record *r)
{
	uint8_t key[16];
	at_key(r->spec, &r->dev, key);
	at_record old;
	bool have = false;
	if (s->dir && local_get(s, key, r->spec, &r->dev, &old))
		have = old.ms <= r->ms;
	if (s->dir && !have)
		local_put(s, key, r);
	if (s->redis && !s->st.remote_down) {
		char rk[64], h[33];
		key_hex(key, h);
		snprintf(rk, sizeof rk, "sinter:tuning:%s", h);
		char *val = NULL;
		size_t len = 0;
		sn_err e = {0};
		/* the faster record wins there too */
		if (at_redis_get(s->redis, rk, &val, &len, &e) != SN_OK) {
			remote_failed(s, "GET", e.msg);
			return;
		}
		bool keep = false;
		if (val) {
			at_record cur;
			sn_err pe = {0};
			keep = at_record_parse(val, len, &cur, &pe) == SN_OK && !memcmp(cur.spec, r->spec, 16) &&
			       at_device_eq(&cur.dev, &r->dev) && cur.ms <= r->ms;
			free(val);
		}
		if (keep)
			return;
		sn_buf b = {0};
		at_record_write(r, &b);
		if (!b.oom && at_redis_set(s->redis, rk, b.s, b.len, &e) != SN_OK)
			remote_failed(s, "SET", e.msg);
		else if (!b.oom)
			s->st.remote_writes++;
		sn_buf_free(&b);
	}
}

/* ---- the local store as a whole ---- */

int at_dir_scan(const char *dir, at_record **recs, size_t *n, size_t *rejected, sn_err *e)
{
	*recs = NULL;
	*n = *rejected = 0;
	char path[4300];
	snprintf(path, sizeof path, "%s/tuning", dir);
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? SN_OK : sn_errf(e, SN_EENV, "tuning store %s: %s", path, strerror(errno));
	close(dfd);
	size_t cap = 0;
	at_record *out = NULL;
	for (int i = 0; i < 256; i++) {
		char sub[4400];
		snprintf(sub, sizeof sub, "%s/%02x", path, i);
		int sfd = open(sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sfd < 0)
			continue;
		DIR *d = fdopendir(sfd);
		if (!d) {
			close(sfd);
			continue;
		}
		struct dirent *de;
		while ((de = readdir(d))) {
			size_t l = strlen(de->d_name);
			if (l != 35 || strcmp(de->d_name + 30, ".json"))
				continue;
			char f[4700];
			snprintf(f, sizeof f, "%s/%s", sub, de->d_name);
			char *buf;
			size_t len;
			bool distrusted;
			sn_err sub_e = {0};
			at_record r;
			bool ok = read_record(f, &buf, &len, &distrusted, &sub_e) == SN_OK;
			if (ok) {
				ok = at_record_parse(buf, len, &r, &sub_e) == SN_OK;
				free(buf);
			}
			/* the file's name must be the record's key */
			if (ok) {
				uint8_t key[16];
				char h[33], name[40];
				at_key(r.spec, &r.dev, key);
				key_hex(key, h);
				snprintf(name, sizeof name, "%.2s", h);
				char want[40];
				snprintf(want, sizeof want, "%02x", i);
				ok = !strcmp(name, want) && !strncmp(de->d_name, h + 2, 30);
			}
			if (!ok) {
				(*rejected)++;
				continue;
			}
			if (*n == cap) {
				size_t nc = cap ? 2 * cap : 64;
				at_record *nr = realloc(out, nc * sizeof *nr);
				if (!nr) {
					closedir(d);
					free(out);
					return sn_errf(e, SN_EINTERNAL, "out of memory");
				}
				out = nr;
				cap = nc;
			}
			out[(*n)++] = r;
		}
		closedir(d);
	}
	*recs = out;
	return SN_OK;
}

int at_dir_import(const char *dir, const at_record *recs, size_t n, size_t *written, sn_err *e)
{
	*written = 0;
	at_store *s;
	if (at_store_open(dir, NULL, NULL, NULL, &s, e))
		return e->code;
	for (size_t i = 0; i < n; i++) {
		size_t before = s->st.writes;
		at_store_put(s, &recs[i]);
		*written += s->st.writes - before;
	}
	at_store_close(s);
	return SN_OK;
}

int at_digest(at_store *s, const at_device *d, const uint8_t (*specs)[16], size_t n, uint8_t out[16],
	      bool *complete)
{
	*complete = true;
	XXH3_state_t *h = XXH3_createState();
	if (!h)
		return SN_EINTERNAL;
	XXH3_128bits_reset(h);
	for (size_t i = 0; i < n; i++) {
		at_record r;
		bool found;
		at_store_get(s, specs[i], d, &r, &found);
		if (!found) {
			*complete = false;
			continue;
		}
		char buf[256];
		const cg_blas_algo *a = &r.algo;
		const cg_config *c = &r.cfg;
		int k = r.kind == AT_BLAS
				? snprintf(buf, sizeof buf, "blas %d %d %d %d %d %d %d %d %d", a->id, a->tile, a->stages,
					   a->splitk, a->reduction, a->swizzle, a->custom, a->inner, a->cluster)
				: snprintf(buf, sizeof buf, "%s %d %d %d %d %d %d %d %d %d %d",
					   r.kind == AT_GEMM ? "gemm" : "kernel", c->variant, c->block,
					   c->tile_m, c->tile_n, c->tile_k, c->warps, c->stages, c->vec, c->rows, c->split_k);
		XXH3_128bits_update(h, specs[i], 16);
		XXH3_128bits_update(h, buf, (size_t)k);
	}
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h));
	memcpy(out, c.digest, 16);
	XXH3_freeState(h);
	return SN_OK;
}
