/* npy.h: NumPy's array files, written against NumPy's format specification
 * (numpy.lib.format: .npy versions 1.0, 2.0 and 3.0) and, for .npz, the
 * ZIP application note (stored and deflated entries, ZIP64) with RFC 1951
 * for inflating. A .npy holds one array: a magic string, a Python dict
 * literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded to 64 bytes, then the data. A .npz is a ZIP archive whose entries
 * NAME.npy are arrays named NAME (np.savez; np.savez_compressed deflates).
 * The reader refuses anything malformed with a message naming the file and
 * never reads outside its buffer. Prefix: npy_. */
#ifndef SINTER_NPY_H
#define SINTER_NPY_H

#include "ir/ir.h"

/* One array as sinter holds it: C order, little-endian, an IR dtype
 * (float64 read as f32, int16/uint16 as i32, uint32 as i64, each value
 * exactly or correctly rounded). */
typedef struct npy_array {
	char *name; /* malloc'ed: the .npz entry without ".npy"; for a .npy, NULL */
	ir_dtype dtype;
	int32_t rank;
	int64_t shape[IR_MAX_RANK];
	void *data; /* malloc'ed, nbytes */
	size_t nbytes;
} npy_array;

/* A .npy image in memory (not kept). Free out's name and data with npy_free. */
int npy_parse(const void *buf, size_t len, const char *name, npy_array *out, sn_err *e);
/* A .npz image in memory: *n arrays in archive order. Free with npy_free.
 * Before inflating anything it checks every member (names unique, sorted
 * not compared pairwise; each .npy header's shape and dtype against the
 * member's declared size, a deflated member's header inflated alone) and
 * refuses an archive whose arrays, with the largest member being
 * inflated, would take more than the memory available (sn_mem_available:
 * a zip bomb is refused before it expands). */
int npz_parse(const void *buf, size_t len, const char *name, npy_array **out, size_t *n, sn_err *e);
/* npz_parse with the limit given: at most max bytes, named limit in the
 * message ("more than LIMIT (MAX)"). */
int npz_parse_max(const void *buf, size_t len, const char *name, uint64_t max, const char *limit, npy_array **out,
		  size_t *n, sn_err *e);
/* Reads path: a .npz (a ZIP archive) or a .npy, told apart by their first
 * bytes. A .npy's one array is named "" (it matches by position). Free
 * with npy_free. */
int npy_read(const char *path, npy_array **out, size_t *n, sn_err *e);
void npy_free(npy_array *a, size_t n);

/* Writes one array as a .npy (version 1.0; 2.0 when the header needs it),
 * or n named arrays as a stored .npz (as np.savez; ZIP64 where an entry or
 * the archive passes 4 GiB), atomically. bf16 and fp8, which NumPy has no
 * dtype for, are written as float32 (exactly). */
int npy_write(const char *path, const npy_array *a, sn_err *e);
int npz_write(const char *path, const npy_array *a, size_t n, sn_err *e);

/* CRC-32 (ISO-HDLC, as ZIP uses) of n bytes, continuing from crc (0 to start). */
uint32_t npy_crc32(uint32_t crc, const void *p, size_t n);

#endif
