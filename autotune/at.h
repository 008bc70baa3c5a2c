/* at.h: autotuning decisions as data, and where they are kept
 * (DESIGN.md, Caches; docs/CACHE.md, Tuning records). A tuning record says
 * which config won for one kernel spec on one device: for a generated
 * kernel a cg_config, for a cuBLASLt product an algorithm as id +
 * attributes (cg_blas_algo). Records hold decisions, never code: a record
 * can only pick among candidates this build generates, and everything read
 * (from the local store, Redis, or a file) is parsed strictly and checked
 * before use. No CUDA here (the tuner that times candidates is
 * autotune/cuda_tune.c, at_tune.h). Prefix: at_. */
#ifndef SINTER_AT_H
#define SINTER_AT_H

#include "codegen/cg.h"

/* Bump when the record's fields or their meaning change: older records
 * are then rejected (and counted), never misread. */
#define AT_SCHEMA 1
/* A record is one line of JSON; anything longer is not one. */
#define AT_RECORD_MAX 2048

typedef enum at_kind {
	AT_KERNEL = 1, /* a generated kernel: cfg */
	AT_BLAS = 2,   /* a cuBLASLt matrix product: algo */
	AT_GEMM = 3,   /* a product cuBLASLt would run, won by the GEMM template: cfg
			* (its spec is the product's at_mm_spec, as AT_BLAS's) */
} at_kind;

/* What must match for a timing to mean anything on another machine. */
typedef struct at_device {
	char name[96];  /* "NVIDIA H100 80GB HBM3" */
	int32_t sm;     /* 90 */
	int32_t driver; /* cuDriverGetVersion */
	int32_t nvrtc;  /* 1000 * major + 10 * minor */
	int32_t blas;   /* cublasLtGetVersion */
} at_device;

typedef struct at_record {
	at_kind kind;
	uint8_t spec[16];  /* cg_kern.spec, or at_mm_spec for a product */
	at_device dev;
	cg_config cfg;     /* AT_KERNEL, AT_GEMM: the winner */
	cg_blas_algo algo; /* AT_BLAS: the winner (valid = 1) */
	double ms;         /* the winner's median device time */
	double default_ms; /* the default's, measured in the same run */
	int32_t candidates; /* candidates timed */
	char version[32];  /* the sinter that measured it */
} at_record;

/* The store key of a (spec, device) pair: XXH3-128 over both. */
void at_key(const uint8_t spec[16], const at_device *d, uint8_t key[16]);
/* A product's spec key: its shape, strides, dtype, epilogue and precision
 * (not its buffers or algorithm). */
void at_mm_spec(const cg_mm *g, uint8_t spec[16]);
bool at_device_eq(const at_device *a, const at_device *b);

/* Appends r as one line of canonical JSON ending in a checksum field and
 * a newline. */
void at_record_write(const at_record *r, sn_buf *b);
/* Parses one record (text[0, len), surrounding whitespace allowed):
 * exactly the fields at_record_write writes, each once, of the right type
 * and range, and the checksum over the canonical text must match.
 * SN_EINPUT naming what is wrong; never reads past len. */
int at_record_parse(const char *text, size_t len, at_record *r, sn_err *e);

/* Whether config c lies in the search space the tuner uses for kernels of
 * this family (the renderer is asked again before use). */
bool at_config_plausible(const cg_config *c);

/* ---- stores ---- */
typedef struct at_store at_store;

typedef struct at_store_stats {
	size_t local_hits, remote_hits, misses;
	size_t rejected;      /* records read that failed a check (deleted locally) */
	size_t writes, remote_writes;
	size_t remote_errors; /* Redis calls that failed, timed out or answered garbage */
	bool remote_down;     /* the remote store was given up for this run */
} at_store_stats;

/* Opens the store: dir/tuning/ (dir NULL or "": no local store) and, when
 * remote is not NULL, Redis at remote ("redis://HOST:PORT"; SN_EUSAGE for
 * another form). Redis unreachable is not an error: a warning through
 * warn (may be NULL: stderr) and the local store alone. SN_EENV when
 * libhiredis cannot be loaded. Free with at_store_close. */
int at_store_open(const char *dir, const char *remote, void (*warn)(void *, const char *), void *ctx,
		  at_store **out, sn_err *e);
void at_store_close(at_store *s);
/* Looks up spec on device d: locally, then (on a miss) in Redis, whose
 * answer is copied into the local store. *found false on a miss; a record
 * that fails a check is a miss, counted (and deleted locally). */
int at_store_get(at_store *s, const uint8_t spec[16], const at_device *d, at_record *out, bool *found);
/* Writes r locally (atomically) and to Redis, unless a valid record for
 * the same key is at least as fast. Failures are warnings, never errors. */
void at_store_put(at_store *s, const at_record *r);
const at_store_stats *at_store_stats_of(const at_store *s);

/* The identity of the decisions stored for specs[0..n) on d, for the plan
 * cache's key: XXH3-128 over each spec and its record's choice. *complete
 * is false when a spec has no record (the plan would be tuned again). */
int at_digest(at_store *s, const at_device *d, const uint8_t (*specs)[16], size_t n, uint8_t out[16],
	      bool *complete);

/* ---- files and the local store as a whole (sinter cache ...) ---- */
/* A record file: a first line {"sinter_tuning_records": 1}, then one
 * record per line. Reads path: *recs (malloc'ed, free it) holds the valid
 * records, *rejected counts lines that failed a check. A file without
 * the first line is SN_EINPUT. */
int at_file_read(const char *path, at_record **recs, size_t *n, size_t *rejected, sn_err *e);
/* Writes n records to path atomically. */
int at_file_write(const char *path, const at_record *recs, size_t n, sn_err *e);
/* Keeps one record per (spec, device): the faster. Reorders and shrinks
 * recs in place; returns the new count. */
size_t at_merge(at_record *recs, size_t n);
/* Every record of dir's local store: valid ones into *recs (malloc'ed),
 * *rejected counts entries that failed a check. */
int at_dir_scan(const char *dir, at_record **recs, size_t *n, size_t *rejected, sn_err *e);
/* Puts recs into dir's local store (the faster record wins per key);
 * *written counts those that replaced or added an entry. */
int at_dir_import(const char *dir, const at_record *recs, size_t n, size_t *written, sn_err *e);

/* ---- Redis (autotune/at_redis.c) ---- */
typedef struct at_redis at_redis;
/* Connects to host:port with short timeouts. SN_EENV when libhiredis is
 * missing or the server cannot be reached. Free with at_redis_close. */
int at_redis_open(const char *host, int port, int timeout_ms, at_redis **out, sn_err *e);
void at_redis_close(at_redis *r);
/* GET key: *val (malloc'ed, NUL-terminated) or NULL when absent. A reply
 * of any other type, an error or a timeout is SN_EENV. */
int at_redis_get(at_redis *r, const char *key, char **val, size_t *len, sn_err *e);
int at_redis_set(at_redis *r, const char *key, const char *val, size_t len, sn_err *e);

#endif
