/* file.h: the one way sinter reads and writes files. Every reader (.sir,
 * safetensors, ONNX and its external data, the kernel cache) opens through
 * sn_open_read; every writer (-o, import's pair of files, cache entries)
 * goes through sn_out. Prefix: sn_ (base.h's).
 *
 * Reading: opened O_NONBLOCK (a FIFO or a device never blocks), checked on
 * the open descriptor to be a regular file no larger than the caller's
 * cap, O_NOFOLLOW when the path is one sinter made. A path the model names
 * (a .sir weights line, ONNX external data) is resolved with realpath and
 * must stay inside the model's folder (sn_path_confine); only a path the
 * user passed on the command line may be absolute or lead elsewhere.
 *
 * Writing: a unique temp file created with O_EXCL in the destination
 * folder, written, fsync'ed (not a cache entry that sets no_sync), then
 * renamed over the destination; several
 * outputs that belong together are all written and synced before the
 * first is renamed, so a failure replaces nothing.
 *
 * Error codes (docs/CLI.md): a path the user gave that does not work as
 * given (missing, not a regular file, a directory, outside the model's
 * folder, the same file as an input) is SN_EINPUT; the system refusing an
 * operation on a good path (permission, read-only or full disk, I/O) is
 * SN_EENV. */
#ifndef SINTER_FILE_H
#define SINTER_FILE_H

#include "ir/base.h"

#include <sys/stat.h>

enum {
	SN_F_NOFOLLOW = 1u, /* the last component must not be a symlink */
	SN_F_ENV = 2u,      /* failures are SN_EENV (a cache sinter owns), not SN_EINPUT */
};

/* Opens path for reading and checks it on the descriptor: a regular file
 * of at most max bytes. *fd is O_CLOEXEC; *sb (may be NULL) its fstat.
 * what ("weights", "external data", ...) prefixes nothing when NULL and
 * otherwise names the file's role in messages: "cannot open WHAT PATH: ...". */
int sn_open_read(const char *path, unsigned flags, uint64_t max, const char *what, int *fd,
		 struct stat *sb, sn_err *e);
/* close(2), for modules that cannot include unistd.h. */
void sn_close(int fd);
/* Reads exactly n bytes at offset off; a short read (the file shrank) is
 * an error naming path. */
int sn_pread_full(int fd, void *buf, size_t n, uint64_t off, const char *path, sn_err *e);
/* The whole file into a malloc'ed buffer (*buf, NUL-terminated, *len bytes
 * before the NUL). Files over max bytes are refused before reading. */
int sn_read_file(const char *path, unsigned flags, uint64_t max, const char *what, void **buf,
		 size_t *len, sn_err *e);

/* rel, as written in a model file in folder dir, resolved (realpath) and
 * confined to dir: *out (free it) is the real path of an existing file
 * inside dir's real path. An absolute rel, or one that leads outside dir
 * (through "..", or a symlink), is SN_EINPUT naming what and rel. */
int sn_path_confine(const char *dir, const char *rel, const char *what, char **out, sn_err *e);

/* The folder of path ("." when it has no slash) into a malloc'ed string. */
char *sn_dirname(const char *path);

/* Physical memory in bytes (a cap for what is read into memory and for
 * tensors a run allocates); UINT64_MAX when unknown. */
uint64_t sn_mem_bytes(void);
/* Bytes this process may still allocate and touch: the memory the kernel
 * says is available (MemAvailable plus SwapFree in /proc/meminfo; free
 * RAM and swap from sysinfo where that is missing), no more than
 * RLIMIT_AS and RLIMIT_DATA leave above what the process holds already.
 * *what (when not NULL) names the bound that decided it: "available
 * memory", "the address-space limit (ulimit -v)" or "the data-segment
 * limit (ulimit -d)". UINT64_MAX when nothing is known. For a check
 * before a large allocation that would otherwise end in the OOM killer. */
uint64_t sn_mem_available(const char **what);
/* "1.5 GiB", "12 bytes": a byte count for messages, into out[32]. */
void sn_fmt_bytes(char *out, uint64_t n);

/* ---- sinter's caches (docs/CACHE.md) ---- */

/* Whether SINTER_CACHE_SHARED=1: the cache folder is shared by a group
 * (read on every call, so a process may change it). */
bool sn_cache_shared(void);
/* Whether a file found in a cache may be trusted; sb is its fstat, taken
 * on the open descriptor. Private (the default): owned by this user and
 * writable by no one else. Shared: writable by no one outside its group,
 * its group one of this process's, and owned by this user or by a member
 * of that group. Otherwise false with *why ("not owned by you", "writable
 * by others", ...). */
bool sn_cache_trusted(const struct stat *sb, const char **why);
/* Creates one cache folder: 0700, or when shared 02770 (group rwx and
 * setgid, so entries get the folder's group; set past the umask). 0 or -1
 * with errno; an existing folder is not changed and is not an error. */
int sn_cache_mkdir(const char *path);

/* ---- writing ---- */

typedef struct sn_out {
	char *path, *tmp; /* heap */
	int fd;           /* -1 once closed */
	int err;          /* the first errno of a failed write, 0 if none */
	bool no_sync;     /* set after sn_out_open: sn_out_finish skips the fsync
			   * (a cache entry whose reader verifies its checksums and
			   * rebuilds it, so a crash can only cost the entry) */
	int slot;         /* 1 + its slot in the list sn_out_remove_temps reads, or 0 */
} sn_out;

/* Checks, before any work, that path can be an output: nothing there yet
 * or a regular file (not a directory, a FIFO, a device, or a symlink,
 * which the rename would replace rather than write through), in a folder
 * that exists and is writable. */
int sn_out_check(const char *path, sn_err *e);
/* Whether a and b name the same existing file (device and inode). */
bool sn_same_file(const char *a, const char *b);
/* Unlinks the temp file of every write in progress (open, not yet
 * committed or aborted): async-signal-safe, for a SIGINT or SIGTERM
 * handler that then re-raises the signal (sinter_temp_files_remove). */
void sn_out_remove_temps(void);
/* Creates the temp file for path (mode as for open, before the umask). */
int sn_out_open(sn_out *o, const char *path, unsigned mode, sn_err *e);
/* Appends n bytes; a failure is kept in o->err and reported by finish. */
void sn_out_write(sn_out *o, const void *p, size_t n);
/* fsync and close the temp file; an error removes it (no rename). */
int sn_out_finish(sn_out *o, sn_err *e);
/* Renames the finished temp file over the destination. */
int sn_out_commit(sn_out *o, sn_err *e);
/* Removes the temp file if it is still there and frees o's strings; safe
 * after commit and on a zeroed sn_out. */
void sn_out_abort(sn_out *o);
/* open, write n bytes, finish, commit: one file, atomically. */
int sn_write_file(const char *path, const void *p, size_t n, unsigned mode, sn_err *e);

#endif
