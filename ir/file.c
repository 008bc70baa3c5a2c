/* file.c: checked reads, confined paths, atomic writes (file.h). */
#include "ir/file.h"
#include "ir/fault.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

/* Every system call of this layer, so that a fault-injection build
 * (ir/fault.h) can fail the n-th one with EIO. */
#ifdef SINTER_FAULT
#define FAULT(ret)                                 \
	do {                                       \
		if (sn_fault_file_hit()) {         \
			errno = EIO;               \
			return ret;                \
		}                                  \
	} while (0)
#else
#define FAULT(ret) ((void)0)
#endif
static int f_open(const char *p, int flags, mode_t mode) { FAULT(-1); return open(p, flags, mode); }
static int f_fstat(int fd, struct stat *sb) { FAULT(-1); return fstat(fd, sb); }
static ssize_t f_pread(int fd, void *b, size_t n, off_t off) { FAULT(-1); return pread(fd, b, n, off); }
static ssize_t f_write(int fd, const void *b, size_t n) { FAULT(-1); return write(fd, b, n); }
static int f_fsync(int fd) { FAULT(-1); return fsync(fd); }
static int f_rename(const char *a, const char *b) { FAULT(-1); return rename(a, b); }
static char *f_realpath(const char *p) { FAULT(NULL); return realpath(p, NULL); }

/* Exit codes by category (docs/CLI.md): a file the user named that cannot
 * be read as given is bad input (1); a folder that refuses a write, a full
 * disk, an I/O error or exhausted descriptors are the environment (3). */
static int code_read(int err, unsigned flags)
{
	if (flags & SN_F_ENV)
		return SN_EENV;
	switch (err) {
	case EIO: case EMFILE: case ENFILE: case ENOMEM:
		return SN_EENV;
	default:
		return SN_EINPUT;
	}
}

static int code_write(int err)
{
	switch (err) {
	case EACCES: case EPERM: case EROFS: case ENOSPC: case EDQUOT: case EIO: case EMFILE:
	case ENFILE: case ENOMEM: case ETXTBSY:
		return SN_EENV;
	default:
		return SN_EINPUT;
	}
}

static const char *role(const char *what, char *buf, size_t cap)
{
	if (!what)
		return "";
	snprintf(buf, cap, "%s ", what);
	return buf;
}

void sn_fmt_bytes(char *out, uint64_t n)
{
	static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	if (n < 1024) {
		snprintf(out, 32, "%" PRIu64 " bytes", n);
		return;
	}
	double v = (double)n;
	int u = -1;
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(out, 32, "%.1f %s", v, unit[u]);
}

uint64_t sn_mem_bytes(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	if (pages <= 0 || size <= 0)
		return UINT64_MAX;
	return (uint64_t)pages * (uint64_t)size;
}

/* The value of "Key:" in kB from a /proc file's text, as bytes; -1 when absent. */
static int64_t proc_kb(const char *text, const char *key)
{
	const char *at = strstr(text, key);
	if (!at)
		return -1;
	long long v = strtoll(at + strlen(key), NULL, 10);
	return v < 0 ? -1 : (int64_t)v * 1024;
}

/* A small /proc file into buf (NUL-terminated); false when unreadable.
 * Plain system calls: not a file operation fault injection should fail. */
static bool proc_text(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	size_t got = 0;
	ssize_t r;
	while (got + 1 < cap && ((r = read(fd, buf + got, cap - 1 - got)) > 0 || (r < 0 && errno == EINTR)))
		got += r > 0 ? (size_t)r : 0;
	close(fd);
	buf[got] = 0;
	return got > 0;
}

uint64_t sn_mem_available(const char **what)
{
	uint64_t room = UINT64_MAX;
	const char *why = "available memory";
	char text[8192];
	int64_t avail = -1, swap = 0;
	if (proc_text("/proc/meminfo", text, sizeof text)) {
		avail = proc_kb(text, "MemAvailable:");
		swap = proc_kb(text, "SwapFree:");
	}
	struct sysinfo si;
	if (avail < 0 && sysinfo(&si) == 0) {
		avail = (int64_t)((uint64_t)si.freeram * si.mem_unit + (uint64_t)si.bufferram * si.mem_unit);
		swap = (int64_t)((uint64_t)si.freeswap * si.mem_unit);
	}
	if (avail >= 0)
		room = (uint64_t)avail + (uint64_t)(swap > 0 ? swap : 0);
	/* the process's own limits, less what it holds: statm's size and data
	 * (data and stack, as RLIMIT_DATA counts them) in pages */
	unsigned long long pages[7] = {0};
	long page = sysconf(_SC_PAGESIZE);
	bool statm = proc_text("/proc/self/statm", text, sizeof text) && page > 0 &&
		     sscanf(text, "%llu %llu %llu %llu %llu %llu", &pages[0], &pages[1], &pages[2], &pages[3],
			    &pages[4], &pages[5]) == 6;
	static const struct {
		int res, idx;
		const char *why;
	} lims[] = {{RLIMIT_AS, 0, "the address-space limit (ulimit -v)"},
		    {RLIMIT_DATA, 5, "the data-segment limit (ulimit -d)"}};
	for (size_t i = 0; i < sizeof lims / sizeof lims[0]; i++) {
		struct rlimit rl;
		if (getrlimit(lims[i].res, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
			continue;
		uint64_t held = statm ? (uint64_t)pages[lims[i].idx] * (uint64_t)page : 0;
		uint64_t left = (uint64_t)rl.rlim_cur > held ? (uint64_t)rl.rlim_cur - held : 0;
		if (left < room) {
			room = left;
			why = lims[i].why;
		}
	}
	if (what)
		*what = why;
	return room;
}

static int open_read(const char *path, unsigned flags, uint64_t max, const char *what,
		     const char *verb, int *fd, struct stat *sb, sn_err *e)
{
	char rb[64];
	const char *r = role(what, rb, sizeof rb);
	*fd = -1;
	int of = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (flags & SN_F_NOFOLLOW ? O_NOFOLLOW : 0);
	int f = f_open(path, of, 0);
	if (f < 0) {
		int err = errno;
		if (err == ELOOP && (flags & SN_F_NOFOLLOW))
			return sn_errf(e, code_read(EINVAL, flags), "cannot %s %s%s: a symbolic link", verb, r, path);
		return sn_errf(e, code_read(err, flags), "cannot %s %s%s: %s", verb, r, path, strerror(err));
	}
	struct stat st;
	if (f_fstat(f, &st) != 0) {
		int err = errno;
		close(f);
		return sn_errf(e, code_read(err, flags), "cannot %s %s%s: %s", verb, r, path, strerror(err));
	}
	if (!S_ISREG(st.st_mode)) {
		close(f);
		return sn_errf(e, code_read(EINVAL, flags), "cannot %s %s%s: not a regular file", verb, r, path);
	}
	if ((uint64_t)st.st_size > max) {
		char have[32], cap[32];
		sn_fmt_bytes(have, (uint64_t)st.st_size);
		sn_fmt_bytes(cap, max);
		close(f);
		return sn_errf(e, code_read(EFBIG, flags), "cannot read %s%s: %s (%" PRIu64
			       " bytes) exceeds the limit of %s", r, path, have, (uint64_t)st.st_size, cap);
	}
	/* Reads of a regular file never block; the flag only guarded the open. */
	int fl = fcntl(f, F_GETFL);
	if (fl >= 0)
		fcntl(f, F_SETFL, fl & ~O_NONBLOCK);
	if (sb)
		*sb = st;
	*fd = f;
	return SN_OK;
}

int sn_open_read(const char *path, unsigned flags, uint64_t max, const char *what, int *fd,
		 struct stat *sb, sn_err *e)
{
	return open_read(path, flags, max, what, "open", fd, sb, e);
}

void sn_close(int fd)
{
	if (fd >= 0)
		close(fd);
}

int sn_pread_full(int fd, void *buf, size_t n, uint64_t off, const char *path, sn_err *e)
{
	unsigned char *p = buf;
	while (n) {
		size_t chunk = n > ((size_t)1 << 30) ? (size_t)1 << 30 : n;
		ssize_t r = f_pread(fd, p, chunk, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sn_errf(e, code_read(errno, 0), "cannot read %s: %s", path, strerror(errno));
		if (r == 0)
			return sn_errf(e, SN_EINPUT, "cannot read %s: the file was truncated while it was read",
				       path);
		p += r;
		off += (uint64_t)r;
		n -= (size_t)r;
	}
	return SN_OK;
}

int sn_read_file(const char *path, unsigned flags, uint64_t max, const char *what, void **buf,
		 size_t *len, sn_err *e)
{
	*buf = NULL;
	*len = 0;
	int fd;
	struct stat sb;
	int rc = open_read(path, flags, max, what, "read", &fd, &sb, e);
	if (rc)
		return rc;
	size_t n = (size_t)sb.st_size;
	char *b = malloc(n + 1);
	if (!b) {
		close(fd);
		char sz[32];
		sn_fmt_bytes(sz, n);
		return sn_errf(e, SN_EINTERNAL, "cannot read %s: out of memory for %s", path, sz);
	}
	rc = sn_pread_full(fd, b, n, 0, path, e);
	close(fd);
	if (rc) {
		free(b);
		return rc;
	}
	b[n] = 0;
	*buf = b;
	*len = n;
	return SN_OK;
}

char *sn_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

int sn_path_confine(const char *dir, const char *rel, const char *what, char **out, sn_err *e)
{
	*out = NULL;
	if (!rel[0] || rel[0] == '/')
		return sn_errf(e, SN_EINPUT, "%s \"%s\" is not a relative path inside the model's folder %s",
			       what, rel, dir);
	char *rdir = f_realpath(dir);
	if (!rdir)
		return sn_errf(e, code_read(errno, 0), "cannot resolve the model's folder %s: %s", dir,
			       strerror(errno));
	size_t n = strlen(dir) + strlen(rel) + 2;
	char *joined = malloc(n);
	if (!joined) {
		free(rdir);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	snprintf(joined, n, "%s/%s", dir, rel);
	char *full = f_realpath(joined);
	int rc = SN_OK;
	if (!full) {
		rc = sn_errf(e, code_read(errno, 0), "cannot open %s %s: %s", what, joined, strerror(errno));
	} else {
		size_t k = strlen(rdir);
		bool inside = strncmp(full, rdir, k) == 0 && (full[k] == '/' || (k == 1 && rdir[0] == '/'));
		struct stat sb;
		if ((inside || !strcmp(full, rdir)) && stat(full, &sb) == 0 && S_ISDIR(sb.st_mode))
			rc = sn_errf(e, SN_EINPUT, "%s \"%s\" names a folder (%s), not a file", what, rel, full);
		else if (!inside)
			rc = sn_errf(e, SN_EINPUT, "%s \"%s\" leads outside the model's folder %s (to %s)", what,
				     rel, dir, full);
	}
	free(joined);
	free(rdir);
	if (rc) {
		free(full);
		return rc;
	}
	*out = full;
	return SN_OK;
}

/* ---- sinter's caches ---- */

#include <grp.h>
#include <pwd.h>

bool sn_cache_shared(void)
{
	const char *v = getenv("SINTER_CACHE_SHARED");
	return v && !strcmp(v, "1");
}

/* Whether gid is this process's effective or a supplementary group. */
static bool in_my_groups(gid_t gid)
{
	if (gid == getegid())
		return true;
	gid_t list[256];
	int n = getgroups(SN_COUNT(list), list);
	for (int i = 0; i < n; i++)
		if (list[i] == gid)
			return true;
	return false;
}

/* Whether user uid belongs to group gid (its primary group, or listed). */
static bool user_in_group(uid_t uid, gid_t gid)
{
	char buf[16384];
	struct passwd pw, *pwp = NULL;
	if (getpwuid_r(uid, &pw, buf, sizeof buf, &pwp) != 0 || !pwp)
		return false;
	if (pw.pw_gid == gid)
		return true;
	char name[256];
	snprintf(name, sizeof name, "%s", pw.pw_name);
	struct group gr, *grp = NULL;
	if (getgrgid_r(gid, &gr, buf, sizeof buf, &grp) != 0 || !grp)
		return false;
	for (char **m = gr.gr_mem; m && *m; m++)
		if (!strcmp(*m, name))
			return true;
	return false;
}

bool sn_cache_trusted(const struct stat *sb, const char **why)
{
	if (!sn_cache_shared()) {
		if (sb->st_uid != geteuid()) {
			*why = "not owned by you";
			return false;
		}
		if (sb->st_mode & (S_IWGRP | S_IWOTH)) {
			*why = "writable by others";
			return false;
		}
		return true;
	}
	if (sb->st_mode & S_IWOTH) {
		*why = "writable by others";
		return false;
	}
	if (sb->st_uid == geteuid())
		return true;
	if (!in_my_groups(sb->st_gid)) {
		*why = "not owned by you, and its group is not yours";
		return false;
	}
	if (!user_in_group(sb->st_uid, sb->st_gid)) {
		*why = "its owner is not a member of its group";
		return false;
	}
	return true;
}

int sn_cache_mkdir(const char *path)
{
	bool shared = sn_cache_shared();
	if (mkdir(path, shared ? 02770 : 0700) != 0)
		return errno == EEXIST ? 0 : -1;
	/* the umask may have taken the group's bits: set them as asked */
	return shared ? chmod(path, 02770) : 0;
}

/* ---- writing ---- */

bool sn_same_file(const char *a, const char *b)
{
	struct stat x, y;
	return a && b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
	       x.st_ino == y.st_ino;
}

int sn_out_check(const char *path, sn_err *e)
{
	if (!path[0])
		return sn_errf(e, SN_EINPUT, "cannot write an output with an empty name");
	size_t n = strlen(path);
	if (path[n - 1] == '/')
		return sn_errf(e, SN_EINPUT, "cannot write %s: it names a directory", path);
	struct stat sb;
	if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
		return sn_errf(e, SN_EINPUT, "cannot write %s: it is a directory", path);
	/* The rename replaces whatever the name is: a FIFO, a device, or a
	 * symlink itself rather than its target (as root, -o /dev/stdout
	 * replaced /dev's link with a file). Only a regular file, or no file,
	 * is an output. */
	if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode))
		return sn_errf(e, SN_EINPUT, "cannot write %s: it is a symbolic link (name the file it points to)",
			       path);
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
		return sn_errf(e, SN_EINPUT, "cannot write %s: not a regular file", path);
	char *dir = sn_dirname(path);
	if (!dir)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	int rc = SN_OK;
	if (stat(dir, &sb) != 0)
		rc = sn_errf(e, code_write(errno), "cannot write %s: folder %s: %s", path, dir, strerror(errno));
	else if (!S_ISDIR(sb.st_mode))
		rc = sn_errf(e, SN_EINPUT, "cannot write %s: %s is not a folder", path, dir);
	else if (access(dir, W_OK | X_OK) != 0)
		rc = sn_errf(e, code_write(errno), "cannot write %s: folder %s: %s", path, dir, strerror(errno));
	free(dir);
	return rc;
}

/* The temp files being written, for sn_out_remove_temps (a SIGINT or
 * SIGTERM handler): fixed slots, so that the handler reads no heap memory
 * that another thread may free. A slot is 0 free, 1 being filled, 2 live;
 * a name is registered before its file is created and released after its
 * rename or unlink, so the handler never misses a file of ours (unlinking
 * a name that is not there, or no longer there, is harmless). */
enum { TMP_SLOTS = 32, TMP_PATH = 4096 };
static struct {
	_Atomic int state;
	char path[TMP_PATH];
} tmp_live[TMP_SLOTS];

static int tmp_register(const char *tmp)
{
	if (strlen(tmp) >= TMP_PATH)
		return 0; /* not cleaned up on a signal; the write itself is fine */
	for (int i = 0; i < TMP_SLOTS; i++) {
		int free_ = 0;
		if (atomic_compare_exchange_strong(&tmp_live[i].state, &free_, 1)) {
			memcpy(tmp_live[i].path, tmp, strlen(tmp) + 1);
			atomic_store(&tmp_live[i].state, 2);
			return i + 1;
		}
	}
	return 0;
}

static void tmp_release(sn_out *o)
{
	if (o->slot > 0)
		atomic_store(&tmp_live[o->slot - 1].state, 0);
	o->slot = 0;
}

void sn_out_remove_temps(void)
{
	for (int i = 0; i < TMP_SLOTS; i++)
		if (atomic_load(&tmp_live[i].state) == 2)
			unlink(tmp_live[i].path);
}

int sn_out_open(sn_out *o, const char *path, unsigned mode, sn_err *e)
{
	memset(o, 0, sizeof *o);
	o->fd = -1;
	/* The temp file: a hidden name in the destination folder, unique by
	 * pid, a counter and a clock; O_EXCL never opens (or follows) what is
	 * there already. */
	static _Atomic unsigned counter;
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
	size_t cap = strlen(path) + 64;
	o->path = strdup(path);
	o->tmp = malloc(cap);
	if (!o->path || !o->tmp) {
		sn_out_abort(o);
		return sn_errf(e, SN_EINTERNAL, "cannot write %s: out of memory", path);
	}
	int err = 0;
	for (int tries = 0; tries < 100 && o->fd < 0; tries++) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(o->tmp, cap, "%.*s.%s.tmp-%ld-%u-%lx", (int)dlen, path, path + dlen, (long)getpid(),
			 counter++, (unsigned long)ts.tv_nsec);
		tmp_release(o);
		o->slot = tmp_register(o->tmp);
		o->fd = f_open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
		err = errno;
		if (o->fd < 0 && err != EEXIST)
			break;
	}
	if (o->fd < 0) {
		tmp_release(o);
		free(o->tmp);
		o->tmp = NULL; /* nothing of ours to remove */
		sn_out_abort(o);
		return sn_errf(e, code_write(err), "cannot write %s: %s", path, strerror(err));
	}
	return SN_OK;
}

void sn_out_write(sn_out *o, const void *p, size_t n)
{
	const unsigned char *b = p;
	while (n && !o->err && o->fd >= 0) {
		ssize_t w = f_write(o->fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			o->err = w < 0 ? errno : EIO;
			break;
		}
		b += w;
		n -= (size_t)w;
	}
}

int sn_out_finish(sn_out *o, sn_err *e)
{
	if (o->fd < 0)
		return sn_errf(e, SN_EINTERNAL, "cannot write %s: not open", o->path ? o->path : "?");
	int err = o->err;
	if (!err && !o->no_sync && f_fsync(o->fd) != 0)
		err = errno;
	if (close(o->fd) != 0 && !err)
		err = errno;
	o->fd = -1;
	if (err) {
		unlink(o->tmp);
		tmp_release(o);
		free(o->tmp);
		o->tmp = NULL;
		return sn_errf(e, code_write(err), "cannot write %s: %s", o->path, strerror(err));
	}
	return SN_OK;
}

int sn_out_commit(sn_out *o, sn_err *e)
{
	if (!o->tmp || o->fd >= 0)
		return sn_errf(e, SN_EINTERNAL, "cannot write %s: not finished", o->path ? o->path : "?");
	if (f_rename(o->tmp, o->path) != 0) {
		int err = errno;
		unlink(o->tmp);
		tmp_release(o);
		free(o->tmp);
		o->tmp = NULL;
		return sn_errf(e, code_write(err), "cannot write %s: %s", o->path, strerror(err));
	}
	tmp_release(o);
	free(o->tmp);
	o->tmp = NULL;
	return SN_OK;
}

void sn_out_abort(sn_out *o)
{
	if (o->tmp && o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->tmp)
		unlink(o->tmp);
	tmp_release(o);
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
}

int sn_write_file(const char *path, const void *p, size_t n, unsigned mode, sn_err *e)
{
	sn_out o;
	int rc = sn_out_open(&o, path, mode, e);
	if (rc)
		return rc;
	sn_out_write(&o, p, n);
	rc = sn_out_finish(&o, e);
	if (!rc)
		rc = sn_out_commit(&o, e);
	sn_out_abort(&o);
	return rc;
}
