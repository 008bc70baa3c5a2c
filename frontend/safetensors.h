/* safetensors.h: reader and writer of the safetensors format.
 *
 * A file is an 8-byte little-endian u64 N, then N bytes of UTF-8 JSON: an
 * object mapping each tensor name to {"dtype": "F32", "shape": [2,3],
 * "data_offsets": [begin, end]}, plus an optional "__metadata__" object of
 * strings; then the data buffer, which the offsets index (little-endian,
 * row-major). The reader refuses anything malformed with a message that
 * names the file and never reads outside the file. Prefix: st_. */
#ifndef SINTER_SAFETENSORS_H
#define SINTER_SAFETENSORS_H

#include "ir/ir.h"
#include "ir/file.h"

typedef enum st_dtype {
	ST_F64, ST_F32, ST_F16, ST_BF16, ST_F8_E4M3, ST_F8_E5M2,
	ST_I64, ST_I32, ST_I8, ST_U8, ST_BOOL,
	ST_NDTYPES
} st_dtype;

typedef struct st_file st_file;

/* One tensor. From st_parse, data points into the caller's buffer and may
 * be unaligned: read it with memcpy or st_read_as. From st_open, data is
 * NULL: st_read_as reads the bytes from the file. Writers set name, dtype,
 * rank, shape, data and nbytes; file and offset are the reader's. */
typedef struct st_entry {
	const char *name;
	st_dtype dtype;
	int32_t rank;
	int64_t shape[IR_MAX_RANK];
	const void *data;
	size_t nbytes;
	const st_file *file; /* the file it was read from */
	uint64_t offset;     /* its first byte in the data buffer */
} st_entry;

/* The largest header the reader accepts (as the reference implementation). */
#define ST_MAX_HEADER (100u * 1000 * 1000)

/* Opens path (a regular file, through ir/file.h) and parses its header;
 * the tensors stay in the file until st_read_as reads them (pread, not a
 * mapping: a file truncated meanwhile is an error, never a SIGBUS). Free
 * with st_close.
 * Missing or unreadable file: SN_EINPUT "cannot open PATH: strerror". */
int st_open(const char *path, st_file **out, sn_err *e);
/* Parses an in-memory file (not copied: buf must outlive the result).
 * Free with st_close. name is used in messages. */
int st_parse(const void *buf, size_t len, const char *name, st_file **out, sn_err *e);
void st_close(st_file *f);

size_t st_count(const st_file *f);
const st_entry *st_get(const st_file *f, size_t i);          /* in header order */
const st_entry *st_find(const st_file *f, const char *name); /* NULL if absent */

/* The "__metadata__" pairs, in header order; strings live as long as f. */
size_t st_meta_count(const st_file *f);
const char *st_meta_key(const st_file *f, size_t i);
const char *st_meta_value(const st_file *f, size_t i);
const char *st_meta_find(const st_file *f, const char *key); /* NULL if absent */

const char *st_dtype_name(st_dtype t); /* "F32", ...; "?" if out of range */
size_t st_dtype_size(st_dtype t);
int st_dtype_parse(const char *s); /* -1 if unknown */
/* The IR dtype of a safetensors dtype; -1 for F64 (no IR dtype). */
int st_to_ir(st_dtype t);
st_dtype st_from_ir(ir_dtype t);
/* Element count of en's shape (shapes are checked when read, so no overflow). */
int64_t st_numel(const st_entry *en);

/* Copies en's elements into dst as IR dtype want, converting with
 * ir_load/ir_store's correctly rounded conversions (F64 is read as double,
 * integers go through double, so int64 beyond 2^53 round on the way).
 * dst holds numel * ir_dtype_size(want) bytes, aligned for want; the caller
 * checks the shape. en->data may be unaligned. */
int st_read_as(const st_entry *en, ir_dtype want, void *dst, sn_err *e);

/* st_read_as for a model's weights, where a silent change of value is a
 * wrong answer: floats convert among floats (correctly rounded); integers
 * (bool among them, as 0 and 1) convert among integers exactly, and an
 * element that does not fit the target is SN_EINPUT naming its index and
 * value; a conversion between the two families is SN_EINPUT (float to int
 * would truncate, NaN would become 0 or true). */
int st_read_exact(const st_entry *en, ir_dtype want, void *dst, sn_err *e);
/* Whether a safetensors dtype is a float (F64 included). */
bool st_dtype_is_float(st_dtype t);
/* The path st_open was given (NULL for st_parse's files). */
const char *st_path(const st_file *f);

/* ---- several files: a checkpoint as it ships ---------------------------- */

/* The tensors of several files as one set, by key. */
typedef struct st_set st_set;

/* Opens paths[0..n): each a .safetensors file, or a sharded checkpoint's
 * index (a name ending in ".json", as model.safetensors.index.json: an
 * object whose "weight_map" maps each key to its shard file, a path
 * relative to the index's folder that must stay inside it). Every shard
 * the index names is opened, and each key must be in the shard the index
 * says. A file named twice (the same device and inode) is opened once; a
 * key in two different files is SN_EINPUT "duplicate key K in A and B".
 * Free with st_set_close. */
int st_set_open(const char *const *paths, size_t n, st_set **out, sn_err *e);
void st_set_close(st_set *s);
size_t st_set_count(const st_set *s);                          /* tensors in all files */
const st_entry *st_set_get(const st_set *s, size_t i);         /* sorted by key */
const st_entry *st_set_find(const st_set *s, const char *key); /* NULL if absent */
/* The files opened, shards included, in the order read (for messages and
 * the plan cache's fingerprint). */
size_t st_set_nfiles(const st_set *s);
const char *st_set_file(const st_set *s, size_t i);

/* The entry a model's key names under prefix: prefix + key when the set
 * holds it, else key less prefix when key starts with it, else key as it
 * is (so a prefix the file's keys carry and one the model's keys carry are
 * both undone, and a key outside the prefix, as lm_head.weight beside
 * model.*, still matches). prefix NULL or "": key as it is. */
const st_entry *st_set_lookup(const st_set *s, const char *key, const char *prefix);
/* When some of keys[0..n) are not in s as they are, the prefixes ending
 * in '.' under which st_set_lookup finds every one (a key outside the
 * prefix, found as it is, included): 0 when there is none (or every key
 * is there as it is), 1 with *prefix, or 2 with *prefix and *other, two
 * of the prefixes that would do. The strings live as long as s. */
int st_set_guess_prefix(const st_set *s, const char *const *keys, size_t n, const char **prefix,
			const char **other);

/* Writes a file atomically (a temporary file in the same directory, then
 * rename). Tensors are laid out in the given order, back to back; the
 * header is padded with spaces to a multiple of 8 bytes. meta_kv holds
 * nmeta key/value pairs (2 * nmeta strings; may be NULL when nmeta is 0).
 * Names and metadata are written as JSON strings (escaped as needed).
 * Refused, before anything is written: duplicate names or metadata keys, a
 * tensor named "__metadata__", strings that are not valid UTF-8, a rank
 * above IR_MAX_RANK or a negative dim, nbytes that do not match the shape. */
int st_write(const char *path, const st_entry *entries, size_t n,
	     const char *const *meta_kv, size_t nmeta, sn_err *e);
/* The same file into a writer the caller opened (ir/file.h) and then
 * finishes and commits: how several files are replaced together. */
int st_write_to(sn_out *o, const st_entry *entries, size_t n, const char *const *meta_kv,
		size_t nmeta, sn_err *e);

#endif
