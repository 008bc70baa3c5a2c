/* kcache.h: the content-addressed kernel cache (DESIGN.md, Caches;
 * docs/CACHE.md). A key is XXH3-128 of everything that decides a cubin's
 * bytes; an entry is one file <dir>/kernels/<2 hex>/<30 hex>.cubin holding
 * a small header (magic, format version, payload size, XXH3-64 of the
 * payload, the key) and the cubin. Entries are written to a temp file and
 * renamed into place, so readers never see a partial entry; an entry that
 * fails verification is reported, deleted and treated as a miss. Safe for
 * several processes sharing one directory. No CUDA here. Prefix: kc_. */
#ifndef SINTER_KCACHE_H
#define SINTER_KCACHE_H

#include "ir/base.h"

/* Bump KC_SCHEMA_VERSION when the key's fields change, KC_FORMAT_VERSION
 * when the entry file's layout changes, KC_RENDERER_VERSION when the
 * codegen renderers change what a source means (not needed when the
 * source text itself changes, as it is part of the key). */
#define KC_SCHEMA_VERSION 1
#define KC_FORMAT_VERSION 1
#define KC_RENDERER_VERSION 1

#define KC_KEY_SIZE 16
#define KC_HEADER_SIZE 48
/* Payloads larger than this are refused by kc_put and flagged corrupt by
 * kc_get (a cubin is a few MiB at most). */
#define KC_MAX_PAYLOAD ((uint64_t)1 << 30)

/* key = XXH3-128 over (KC_SCHEMA_VERSION, KC_RENDERER_VERSION, src,
 * nvrtc_version, sm, flags), each field length-prefixed. flags may be NULL
 * (same as ""). */
void kc_key(const char *src, int nvrtc_version, int sm, const char *flags, uint8_t key[KC_KEY_SIZE]);
/* 32 lowercase hex digits and a NUL into out[33]. */
void kc_key_hex(const uint8_t key[KC_KEY_SIZE], char out[33]);

/* The cache directory: $SINTER_CACHE_DIR, else $XDG_CACHE_HOME/sinter, else
 * $HOME/.cache/sinter (empty or relative XDG_CACHE_HOME is ignored, as the
 * XDG spec says). Returns SN_OK, or SN_EENV when no variable is set or the
 * path does not fit in cap bytes. */
int kc_default_dir(char *out, size_t cap);

/* The path of key's entry under dir (out holds at least cap bytes).
 * Returns SN_OK, or SN_EENV when it does not fit. */
int kc_entry_path(const char *dir, const uint8_t key[KC_KEY_SIZE], char *out, size_t cap, sn_err *e);

typedef enum kc_state {
	KC_MISS,    /* no entry */
	KC_HIT,     /* *data holds the verified payload */
	KC_CORRUPT, /* an entry failed verification and was deleted, or was
		     * refused (not owned by the user, writable by others) and
		     * left alone: a miss, reported in msg */
} kc_state;

typedef struct kc_status {
	kc_state state;
	/* KC_CORRUPT: "kernel cache: corrupt entry PATH (WHY): deleted", where
	 * WHY is "bad magic", "truncated", "checksum mismatch", ... */
	char msg[4608];
} kc_status;

/* Looks key up in dir. The entry is opened O_NOFOLLOW and O_NONBLOCK: a
 * symlink, a FIFO or any other file that is not regular is corrupt (and
 * deleted); an entry another user owns, or one writable by group or
 * others, is refused with a warning (KC_CORRUPT, "refused entry"). */
/* Looks key up in dir. On KC_HIT *data is a malloc'ed copy of the payload
 * (free it) and *size its length; otherwise *data is NULL and *size 0.
 * Returns SN_OK for hits, misses and corrupt entries alike; SN_EENV (path
 * and strerror) when the entry exists but cannot be read, SN_EINTERNAL on
 * OOM. */
int kc_get(const char *dir, const uint8_t key[KC_KEY_SIZE], void **data, size_t *size, kc_status *st,
	   sn_err *e);

/* Stores size bytes under key in dir, creating directories as needed
 * (mode 0700: another user must not plant entries) with ir/file.h's writer:
 * writes a unique temp file beside the entry, then renames it into place
 * (atomic; concurrent writers of one key are safe, the last one wins and
 * both entries are valid). SN_EENV with the path and strerror on failure. */
int kc_put(const char *dir, const uint8_t key[KC_KEY_SIZE], const void *data, size_t size, sn_err *e);

/* Counts the entries (*.cubin files under dir/kernels/xx/) and their bytes
 * on disk. A missing dir or kernels/ is an empty cache. */
int kc_stats(const char *dir, size_t *entries, uint64_t *bytes, sn_err *e);

/* Deletes every entry and every leftover temp file under dir/kernels/xx/
 * and dir/plans/xx/ and nothing else (other files and the directories
 * stay); a kernels/, plans/ or xx/ that is a symlink is skipped, never
 * followed out of dir. *removed counts the deleted entries (temp files are not counted). */
int kc_clear(const char *dir, size_t *removed, sn_err *e);

/* The plan cache lives beside the kernels: dir/plans/<2 hex>/<30 hex>.plan,
 * files in the plan format (codegen/cg.h, plan files). The path of key's
 * entry into out[cap]; make_dir creates its folder and removes a
 * directory in the entry's place as kc_drop_dir does (SN_EENV when one
 * is left there). */
int kc_plan_path(const char *dir, const uint8_t key[KC_KEY_SIZE], bool make_dir, char *out, size_t cap, sn_err *e);
/* A directory where an entry belongs (mkdir by hand, a tool gone wrong)
 * makes every read a miss and every write fail (rename cannot replace
 * it). Removes the directory at path when it is empty or holds only
 * regular files named as sinter names its entries and temp files, never
 * anything else (a user's file keeps the directory and all in it). 1:
 * removed; 0: path is not a directory; -1: left alone. msg[cap] says
 * which ("a directory: removed", "a directory holding NAME, which sinter
 * did not write: left alone", ...). */
int kc_drop_dir(const char *path, char *msg, size_t cap);
/* Counts the plan entries and their bytes. */
int kc_plan_stats(const char *dir, size_t *entries, uint64_t *bytes, sn_err *e);

#endif
