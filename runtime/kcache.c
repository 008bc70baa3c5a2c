/* kcache.c: the content-addressed kernel cache (see kcache.h and
 * docs/CACHE.md for the layout and guarantees). */
#include "runtime/kcache.h"
#include "ir/file.h"
#include "ir/log.h"

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KC_PATH_MAX 4096

static const char kc_magic[8] = {'S', 'N', 'K', 'C', 'U', 'B', 'I', 'N'};

static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* ---- key ---- */

static void key_field(XXH3_state_t *s, const void *p, size_t n)
{
	uint8_t len[8];
	le64(len, n);
	XXH3_128bits_update(s, len, sizeof len);
	if (n)
		XXH3_128bits_update(s, p, n);
}

static void key_int(XXH3_state_t *s, int64_t v)
{
	uint8_t b[8];
	le64(b, (uint64_t)v);
	key_field(s, b, sizeof b);
}

void kc_key(const char *src, int nvrtc_version, int sm, const char *flags, uint8_t key[KC_KEY_SIZE])
{
	XXH3_state_t s;
	memset(&s, 0, sizeof s);
	XXH3_128bits_reset(&s);
	key_int(&s, KC_SCHEMA_VERSION);
	key_int(&s, KC_RENDERER_VERSION);
	key_field(&s, src ? src : "", src ? strlen(src) : 0);
	key_int(&s, nvrtc_version);
	key_int(&s, sm);
	key_field(&s, flags ? flags : "", flags ? strlen(flags) : 0);
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&s));
	memcpy(key, c.digest, KC_KEY_SIZE);
}

void kc_key_hex(const uint8_t key[KC_KEY_SIZE], char out[33])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < KC_KEY_SIZE; i++) {
		out[2 * i] = hex[key[i] >> 4];
		out[2 * i + 1] = hex[key[i] & 15];
	}
	out[32] = 0;
}

/* ---- paths ---- */

static bool fits(char *out, size_t cap, const char *fmt, const char *a, const char *b)
{
	int n = snprintf(out, cap, fmt, a, b);
	return n >= 0 && (size_t)n < cap;
}

int kc_default_dir(char *out, size_t cap)
{
	const char *v = getenv("SINTER_CACHE_DIR");
	if (v && *v)
		return fits(out, cap, "%s%s", v, "") ? SN_OK : SN_EENV;
	v = getenv("XDG_CACHE_HOME");
	if (v && v[0] == '/')
		return fits(out, cap, "%s%s", v, "/sinter") ? SN_OK : SN_EENV;
	v = getenv("HOME");
	if (v && *v)
		return fits(out, cap, "%s%s", v, "/.cache/sinter") ? SN_OK : SN_EENV;
	if (cap)
		out[0] = 0;
	return SN_EENV;
}

/* dir/kernels/xx into sub, and the entry's file name (30 hex + .cubin). */
static int entry_parts(const char *dir, const uint8_t key[KC_KEY_SIZE], char *sub, size_t cap,
		       char name[40], sn_err *e)
{
	if (!dir || !*dir)
		return sn_errf(e, SN_EENV, "kernel cache: no directory given");
	char hex[33];
	kc_key_hex(key, hex);
	char two[3] = {hex[0], hex[1], 0};
	snprintf(name, 40, "%s.cubin", hex + 2);
	int n = snprintf(sub, cap, "%s/kernels/%s", dir, two);
	if (n < 0 || (size_t)n + 1 + strlen(name) >= cap)
		return sn_errf(e, SN_EENV, "kernel cache: path too long under %s", dir);
	return SN_OK;
}

int kc_entry_path(const char *dir, const uint8_t key[KC_KEY_SIZE], char *out, size_t cap, sn_err *e)
{
	char sub[KC_PATH_MAX], name[40];
	if (entry_parts(dir, key, sub, sizeof sub, name, e))
		return e->code;
	if (!fits(out, cap, "%s/%s", sub, name))
		return sn_errf(e, SN_EENV, "kernel cache: path too long under %s", dir);
	return SN_OK;
}

/* ---- an entry's path taken by a directory ---- */

static bool is_hex(const char *s, size_t n);
static bool is_entry_name(const char *s, const char *suffix);
static bool is_temp_name(const char *s);

/* A name sinter itself writes in an entry folder: an entry (a kernel, a
 * plan, a plan's key or tuning list), or a temp file of one. */
static bool is_ours(const char *s)
{
	return is_entry_name(s, ".cubin") || is_entry_name(s, ".plan") || is_entry_name(s, ".key") ||
	       is_entry_name(s, ".tune") || is_temp_name(s);
}

int kc_drop_dir(const char *path, char *msg, size_t cap)
{
	struct stat sb;
	if (lstat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		snprintf(msg, cap, "not a directory");
		return 0;
	}
	/* only what sinter writes is deleted: a user's file keeps it all */
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		int err = errno;
		if (fd >= 0)
			close(fd);
		snprintf(msg, cap, "a directory, left alone: cannot open it: %s", strerror(err));
		return -1;
	}
	const char *foreign = NULL;
	char name[256] = "";
	struct dirent *de;
	for (int pass = 0; pass < 2 && !foreign; pass++) { /* look, then delete */
		rewinddir(d);
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			struct stat fb;
			if (!is_ours(de->d_name) || fstatat(fd, de->d_name, &fb, AT_SYMLINK_NOFOLLOW) != 0 ||
			    !S_ISREG(fb.st_mode)) {
				snprintf(name, sizeof name, "%s", de->d_name);
				foreign = name;
				break;
			}
			if (pass == 1 && unlinkat(fd, de->d_name, 0) != 0 && errno != ENOENT) {
				snprintf(msg, cap, "a directory, left alone: cannot delete %s in it: %s", de->d_name,
					 strerror(errno));
				closedir(d);
				return -1;
			}
		}
	}
	closedir(d);
	if (foreign) {
		snprintf(msg, cap, "a directory holding %s, which sinter did not write: left alone", foreign);
		return -1;
	}
	if (rmdir(path) != 0 && errno != ENOENT) {
		snprintf(msg, cap, "a directory, left alone: cannot remove it: %s", strerror(errno));
		return -1;
	}
	snprintf(msg, cap, "a directory: removed");
	return 1;
}

/* ---- read ---- */

static ssize_t read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* Deletes a corrupt entry, unless another process has already replaced it
 * with a new file (then that one is left alone), and says so in st. */
static void drop_corrupt(const char *path, int fd, const char *why, kc_status *st)
{
	struct stat a, b;
	const char *what = "deleted";
	char buf[160];
	if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && (a.st_dev != b.st_dev || a.st_ino != b.st_ino)) {
		what = "already replaced";
	} else if (unlink(path) != 0 && errno != ENOENT) {
		snprintf(buf, sizeof buf, "could not delete it: %s", strerror(errno));
		what = buf;
	}
	st->state = KC_CORRUPT;
	snprintf(st->msg, sizeof st->msg, "kernel cache: corrupt entry %s (%s): %s", path, why, what);
}

int kc_get(const char *dir, const uint8_t key[KC_KEY_SIZE], void **data, size_t *size, kc_status *st,
	   sn_err *e)
{
	*data = NULL;
	*size = 0;
	st->state = KC_MISS;
	st->msg[0] = 0;
	char path[KC_PATH_MAX];
	if (kc_entry_path(dir, key, path, sizeof path, e))
		return e->code;
	/* The path is ours: never follow a link, never block on a FIFO. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return SN_OK;
		if (errno == ELOOP) { /* a symlink planted in the cache: removed, not followed */
			st->state = KC_CORRUPT;
			snprintf(st->msg, sizeof st->msg, "kernel cache: corrupt entry %s (a symbolic link): %s", path,
				 unlink(path) == 0 ? "deleted" : "could not delete it");
			return SN_OK;
		}
		if (errno == EACCES) { /* a shared cache's member wrote it unreadable: a miss */
			st->state = KC_CORRUPT;
			snprintf(st->msg, sizeof st->msg, "kernel cache: refused entry %s (not readable by you): ignored",
				 path);
			return SN_OK;
		}
		return sn_errf(e, SN_EENV, "kernel cache: cannot open %s: %s", path, strerror(errno));
	}
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		int err = errno;
		close(fd);
		return sn_errf(e, SN_EENV, "kernel cache: cannot stat %s: %s", path, strerror(err));
	}
	uint8_t h[KC_HEADER_SIZE];
	const char *why = NULL;
	char whybuf[96];
	void *payload = NULL;
	uint64_t fsize = (uint64_t)sb.st_size, psize = 0;
	if (S_ISDIR(sb.st_mode)) {
		/* a miss, once: removed when it is empty or sinter's, so the
		 * put after the compile stores the entry and the next run hits */
		close(fd);
		char why[600];
		kc_drop_dir(path, why, sizeof why);
		st->state = KC_CORRUPT;
		snprintf(st->msg, sizeof st->msg, "kernel cache: corrupt entry %s (%.400s)", path, why);
		return SN_OK;
	}
	if (!S_ISREG(sb.st_mode)) {
		why = "not a regular file";
		goto corrupt;
	}
	/* Another user's file, or one others may rewrite, could hold anything
	 * under a valid key and checksum: refused, left alone, recompiled. */
	const char *distrust = NULL;
	if (!sn_cache_trusted(&sb, &distrust)) {
		st->state = KC_CORRUPT;
		snprintf(st->msg, sizeof st->msg, "kernel cache: refused entry %s (%s): ignored", path, distrust);
		close(fd);
		return SN_OK;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	ssize_t n = read_full(fd, h, sizeof h);
	if (n < 0)
		goto io_error;
	if ((size_t)n < sizeof h) {
		why = "truncated";
		goto corrupt;
	}
	if (memcmp(h, kc_magic, sizeof kc_magic) != 0) {
		why = "bad magic";
		goto corrupt;
	}
	if (rd32(h + 8) != KC_FORMAT_VERSION || rd32(h + 12) != KC_HEADER_SIZE) {
		snprintf(whybuf, sizeof whybuf, "format version %u, expected %d", (unsigned)rd32(h + 8),
			 KC_FORMAT_VERSION);
		why = whybuf;
		goto corrupt;
	}
	psize = rd64(h + 16);
	if (psize > KC_MAX_PAYLOAD) {
		why = "oversized payload";
		goto corrupt;
	}
	if (fsize < KC_HEADER_SIZE + psize) {
		why = "truncated";
		goto corrupt;
	}
	if (fsize > KC_HEADER_SIZE + psize) {
		why = "size mismatch";
		goto corrupt;
	}
	if (memcmp(h + 32, key, KC_KEY_SIZE) != 0) {
		why = "key mismatch";
		goto corrupt;
	}
	payload = malloc(psize ? psize : 1);
	if (!payload) {
		close(fd);
		return sn_errf(e, SN_EINTERNAL, "kernel cache: out of memory reading %s", path);
	}
	n = read_full(fd, payload, psize);
	if (n < 0)
		goto io_error;
	if ((uint64_t)n < psize) {
		why = "truncated";
		goto corrupt;
	}
	if (XXH3_64bits(payload, psize) != rd64(h + 24)) {
		why = "checksum mismatch";
		goto corrupt;
	}
	close(fd);
	*data = payload;
	*size = psize;
	st->state = KC_HIT;
	return SN_OK;
corrupt:
	free(payload);
	drop_corrupt(path, fd, why, st);
	close(fd);
	return SN_OK;
io_error:;
	int err = errno;
	free(payload);
	close(fd);
	return sn_errf(e, SN_EENV, "kernel cache: cannot read %s: %s", path, strerror(err));
}

/* ---- write ---- */

/* mkdir -p: every component of path, ignoring those that exist. */
static int mkdirs(char *path, sn_err *e)
{
	if (!*path)
		return SN_OK;
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != 0)
			continue;
		char c = *p;
		*p = 0;
		/* private (or the group's, when shared): another user could plant entries */
		int r = sn_cache_mkdir(path);
		int err = errno;
		*p = c;
		if (r != 0) {
			*p = 0;
			sn_errf(e, SN_EENV, "kernel cache: cannot create directory %s: %s", path, strerror(err));
			*p = c;
			return e->code;
		}
		if (!c)
			return SN_OK;
	}
}

int kc_put(const char *dir, const uint8_t key[KC_KEY_SIZE], const void *data, size_t size, sn_err *e)
{
	if ((uint64_t)size > KC_MAX_PAYLOAD)
		return sn_errf(e, SN_EINTERNAL, "kernel cache: payload of %zu bytes is too large", size);
	char sub[KC_PATH_MAX], name[40], path[KC_PATH_MAX];
	if (entry_parts(dir, key, sub, sizeof sub, name, e))
		return e->code;
	if (!fits(path, sizeof path, "%s/%s", sub, name) || strlen(path) + 64 >= KC_PATH_MAX)
		return sn_errf(e, SN_EENV, "kernel cache: path too long under %s", dir);
	if (mkdirs(sub, e))
		return e->code;
	char why[600];
	if (kc_drop_dir(path, why, sizeof why) < 0) /* rename cannot replace a directory */
		return sn_errf(e, SN_EENV, "kernel cache: entry %s is %s", path, why);
	uint8_t h[KC_HEADER_SIZE];
	memcpy(h, kc_magic, sizeof kc_magic);
	le32(h + 8, KC_FORMAT_VERSION);
	le32(h + 12, KC_HEADER_SIZE);
	le64(h + 16, size);
	le64(h + 24, XXH3_64bits(data, size));
	memcpy(h + 32, key, KC_KEY_SIZE);
	/* The one writer (ir/file.h): a unique temp file beside the entry,
	 * fsync, rename. Entries are 0644 at most: never writable by others. */
	sn_out o;
	sn_err we = {0};
	int rc = sn_out_open(&o, path, 0644, &we);
	/* shared: the group reads every entry, whatever the writer's umask */
	if (!rc && sn_cache_shared())
		fchmod(o.fd, 0640);
	if (!rc) {
		sn_out_write(&o, h, sizeof h);
		sn_out_write(&o, data, size);
		rc = sn_out_finish(&o, &we);
		if (!rc)
			rc = sn_out_commit(&o, &we);
		sn_out_abort(&o);
	}
	if (rc)
		return sn_errf(e, SN_EENV, "kernel cache: %s", we.msg);
	return SN_OK;
}

/* ---- stats and clear ---- */

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool is_entry_name(const char *s, const char *suffix)
{
	return strlen(s) == 30 + strlen(suffix) && is_hex(s, 30) && strcmp(s + 30, suffix) == 0;
}

/* Temp files: ir/file.h's writer (".<entry>.tmp-..."), the plan writer's
 * ("<entry>.plan.tmp..."), older sinters' (".tmp-..."). */
static bool is_temp_name(const char *s)
{
	return strncmp(s, ".tmp-", 5) == 0 || (strlen(s) > 30 && is_hex(s, 30) && strstr(s, ".plan.tmp.")) ||
	       (s[0] == '.' && strlen(s) > 31 && is_hex(s + 1, 30) && strstr(s, ".tmp-"));
}

/* Visits every entry (and, when temps, every temp file) in dir/kernels/xx/;
 * clear deletes them. */
static int walk(const char *dir, const char *kind, const char *suffix, bool clear, size_t *entries, uint64_t *bytes,
		sn_err *e)
{
	*entries = 0;
	if (bytes)
		*bytes = 0;
	char top[KC_PATH_MAX], sub[KC_PATH_MAX];
	if (!dir || !*dir)
		return sn_errf(e, SN_EENV, "kernel cache: no directory given");
	if (!fits(top, sizeof top, "%s/%s", dir, kind))
		return sn_errf(e, SN_EENV, "kernel cache: path too long under %s", dir);
	int rc = SN_OK;
	size_t failed = 0; /* clear: entries that could not be deleted */
	char first[KC_PATH_MAX + 512] = "";
	/* Nothing below dir is followed: kernels/ (plans/) and their xx/ that
	 * are symlinks (out of the cache) are skipped, never walked. */
	int tfd = open(top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0) {
		if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)
			return SN_OK;
		return sn_errf(e, SN_EENV, "kernel cache: cannot open %s: %s", top, strerror(errno));
	}
	DIR *d = fdopendir(tfd);
	if (!d) {
		close(tfd);
		return sn_errf(e, SN_EENV, "kernel cache: cannot open %s: %s", top, strerror(errno));
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strlen(de->d_name) != 2 || !is_hex(de->d_name, 2))
			continue;
		if (!fits(sub, sizeof sub, "%s/%s", top, de->d_name))
			continue;
		int sfd = openat(tfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *sd = sfd < 0 ? NULL : fdopendir(sfd);
		if (!sd) {
			int err = errno;
			if (sfd >= 0)
				close(sfd);
			else if (err == ENOENT || err == ENOTDIR || err == ELOOP)
				continue;
			if (!clear) {
				rc = sn_errf(e, SN_EENV, "kernel cache: cannot open %s: %s", sub, strerror(err));
				break;
			}
			sn_log(SN_LOG_WARN, "cache clear: cannot open %s: %s", sub, strerror(err));
			if (!failed++)
				snprintf(first, sizeof first, "%s: %s", sub, strerror(err));
			continue;
		}
		struct dirent *fe;
		while ((fe = readdir(sd))) {
			bool entry = is_entry_name(fe->d_name, suffix);
			if (!entry && !(clear && is_temp_name(fe->d_name)))
				continue;
			if (clear) {
				if (unlinkat(sfd, fe->d_name, 0) != 0) {
					if (errno == ENOENT)
						continue;
					/* reported, and the rest still deleted: the
					 * error (the first) comes after the walk */
					sn_log(SN_LOG_WARN, "cache clear: cannot delete %s/%s: %s", sub, fe->d_name,
					       strerror(errno));
					if (!failed++)
						snprintf(first, sizeof first, "%s/%s: %s", sub, fe->d_name, strerror(errno));
					continue;
				}
				if (entry)
					(*entries)++;
				continue;
			}
			struct stat sb;
			if (fstatat(sfd, fe->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode))
				continue; /* deleted meanwhile, or not ours */
			(*entries)++;
			*bytes += (uint64_t)sb.st_size;
		}
		closedir(sd);
		if (rc)
			break;
	}
	closedir(d);
	if (!rc && failed == 1)
		rc = sn_errf(e, SN_EENV, "kernel cache: cannot delete %s", first);
	else if (!rc && failed)
		rc = sn_errf(e, SN_EENV, "kernel cache: cannot delete %zu entries under %s (the first: %s)", failed, top,
			     first);
	return rc;
}

int kc_stats(const char *dir, size_t *entries, uint64_t *bytes, sn_err *e)
{
	return walk(dir, "kernels", ".cubin", false, entries, bytes, e);
}

int kc_clear(const char *dir, size_t *removed, sn_err *e)
{
	size_t plans = 0;
	/* both walks, whatever the first met: clear deletes all it can */
	int rc = walk(dir, "kernels", ".cubin", true, removed, NULL, e);
	sn_err pe = {0};
	int prc = walk(dir, "plans", ".plan", true, &plans, NULL, &pe);
	if (!rc && prc)
		*e = pe, rc = prc;
	*removed += plans;
	return rc;
}

int kc_plan_stats(const char *dir, size_t *entries, uint64_t *bytes, sn_err *e)
{
	return walk(dir, "plans", ".plan", false, entries, bytes, e);
}

int kc_plan_path(const char *dir, const uint8_t key[KC_KEY_SIZE], bool make_dir, char *out, size_t cap, sn_err *e)
{
	if (!dir || !*dir)
		return sn_errf(e, SN_EENV, "plan cache: no directory given");
	char hex[33];
	kc_key_hex(key, hex);
	char sub[KC_PATH_MAX];
	if (!fits(sub, sizeof sub, "%s/plans/%.2s", dir, hex) || !fits(out, cap, "%s/%s.plan", sub, hex + 2))
		return sn_errf(e, SN_EENV, "plan cache: path too long under %s", dir);
	if (!make_dir)
		return SN_OK;
	if (mkdirs(sub, e))
		return e->code;
	/* about to write: a directory in the entry's place (a rename
	 * cannot replace it) goes, when it is empty or sinter's */
	char why[600];
	if (kc_drop_dir(out, why, sizeof why) < 0)
		return sn_errf(e, SN_EENV, "plan cache: entry %s is %s", out, why);
	return SN_OK;
}
