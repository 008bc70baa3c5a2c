/* ref_impl.h: what the reference interpreter's files share (ir/ref/ref*.c
 * only). Each op family lives in its own file; every kernel has the
 * signature ref_kernel: out is already allocated with n's dtype and shape
 * (out->data holds out->nbytes bytes) and the kernel writes every element.
 * Operands have been checked against the node's operand types. */
#ifndef SINTER_REF_IMPL_H
#define SINTER_REF_IMPL_H

#include "ir/ref/ref.h"

typedef int ref_kernel(const ir_node *n, const ir_tensor *in, ir_tensor *out, sn_err *e);

/* ref_elem.c */
ref_kernel ref_unary, ref_binary, ref_where, ref_cast;
/* ref_reduce.c */
ref_kernel ref_reduce, ref_softmax, ref_layer_norm, ref_batch_norm, ref_cumsum, ref_arg_reduce,
	ref_group_norm, ref_topk;
/* ref_linalg.c */
ref_kernel ref_matmul, ref_linear, ref_attention;
/* ref_conv.c */
ref_kernel ref_conv2d, ref_pool, ref_global_pool;
/* ref_move.c */
ref_kernel ref_copy, ref_transpose, ref_expand, ref_concat, ref_split, ref_slice,
	ref_gather, ref_pad;
/* ref_index.c */
ref_kernel ref_gather_elements, ref_scatter_elements, ref_scatter_nd;

/* ---- helpers (ref.c) ---- */

/* A walk over every element of an output shape in row-major order that
 * keeps, for each of up to REF_MAX_OPS operands, the element offset that
 * output position maps to. An operand is described by a base offset and a
 * stride per output dim (0 where it is broadcast), so broadcasting,
 * transposes, expands and strided slices all share this one loop. */
#define REF_MAX_OPS 4
typedef struct ref_iter {
	int rank, nop;
	int64_t dims[IR_MAX_RANK], idx[IR_MAX_RANK];
	int64_t st[REF_MAX_OPS][IR_MAX_RANK];
	int64_t off[REF_MAX_OPS];
} ref_iter;

void ref_iter_init(ref_iter *it, const ir_shape *out);
/* Adds an operand of shape s broadcast (numpy rules) to the output shape;
 * returns its slot, or -1 if s does not broadcast to it (callers report
 * it: the shape rules should have refused such a graph). */
int ref_iter_bcast(ref_iter *it, const ir_shape *s);
/* The error for an operand that does not broadcast (SN_EINPUT). */
int ref_bcast_fail(const ir_node *n, sn_err *e);
/* Adds an operand with explicit strides (one per output dim) and base. */
int ref_iter_view(ref_iter *it, int64_t base, const int64_t *st);
/* Moves to the next output position (row-major). */
static inline void ref_iter_next(ref_iter *it)
{
	for (int d = it->rank - 1; d >= 0; d--) {
		for (int k = 0; k < it->nop; k++)
			it->off[k] += it->st[k][d];
		if (++it->idx[d] < it->dims[d])
			return;
		for (int k = 0; k < it->nop; k++)
			it->off[k] -= it->st[k][d] * it->dims[d];
		it->idx[d] = 0;
	}
}

/* Row-major strides of s, in elements. */
void ref_strides(const ir_shape *s, int64_t *st);
/* Number of elements (the shape is concrete and was size-checked). */
int64_t ref_numel(const ir_shape *s);
/* Product of dims [from, to). */
int64_t ref_span(const ir_shape *s, int from, int to);
/* The whole tensor converted to double; malloc'ed, NULL (and e set) on OOM. */
double *ref_to_double(const ir_tensor *t, sn_err *e);
/* malloc that sets e on failure; never returns NULL for n == 0. */
void *ref_malloc(size_t n, sn_err *e);
/* Whether integer arithmetic applies (every integer dtype and bool). */
static inline bool ref_is_int(ir_dtype t) { return !ir_dtype_is_float(t); }
/* Integer element access: exact for every integer dtype (and bool). Stores
 * wrap like C casts to the narrower type (PyTorch's integer overflow). */
int64_t ref_load_int(ir_dtype t, const void *base, size_t i);
void ref_store_int(ir_dtype t, void *base, size_t i, int64_t v);
/* Copies elements of size es. */
static inline void ref_copy_elem(void *dst, size_t di, const void *src, size_t si, size_t es)
{
	switch (es) {
	case 1: ((uint8_t *)dst)[di] = ((const uint8_t *)src)[si]; break;
	case 2: ((uint16_t *)dst)[di] = ((const uint16_t *)src)[si]; break;
	case 4: ((uint32_t *)dst)[di] = ((const uint32_t *)src)[si]; break;
	default: ((uint64_t *)dst)[di] = ((const uint64_t *)src)[si]; break;
	}
}

/* y[m, p] += w[m, k] col[k, p] in fp64, four rows of y at a time so each
 * row of col is loaded once per four outputs (ref_conv.c; the matrix
 * products of ref_linalg.c too). */
void ref_gemm_acc(double *y, const double *w, const double *col, int64_t m, int64_t k, int64_t p);

#endif
