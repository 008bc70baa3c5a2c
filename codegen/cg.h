/* cg.h: the compiled plan, codegen's product and the runtime's only input
 * (DESIGN.md, The compiled plan). A plan is plain data: a buffer table, a
 * list of steps (generated kernels and cuBLASLt matrix products) naming
 * buffers by index, the model's inputs and outputs, the unique kernels
 * (source and/or cubin), and the weight image with every derived weight
 * already folded, permuted and converted. It holds no IR: the runtime loads
 * and runs it, the plan cache and AOT packages store it (codegen/cg_io.c).
 * Lowering a graph into a plan is cg_lower (codegen/cg_lower.c). Prefix: cg_. */
#ifndef SINTER_CG_H
#define SINTER_CG_H

#include "ir/ir.h"

#define CG_MAX_ARGS 8
#define CG_NO_BUF UINT32_MAX
/* Every buffer (arena offsets, weight-image offsets, inputs) starts on a
 * multiple of this many bytes; vectorized kernels and cuBLASLt rely on it. */
#define CG_ALIGN 256

/* A kernel's configuration as data: every renderer takes one (NULL: its
 * family's default, today's heuristics) and records the one it used, so the
 * autotuner can ask for "the same kernel with another config". Fields a
 * family does not use are 0. */
typedef struct cg_config {
	int32_t variant;            /* family-specific algorithm choice */
	int32_t block;              /* threads per block */
	int32_t tile_m, tile_n, tile_k;
	int32_t warps, stages, vec; /* vec: elements per vector access */
	int32_t rows;               /* rows per block (reductions, norms, attention) */
	int32_t split_k;
} cg_config;

/* "block=256 vec=4" (only the fields set), into out[cap]. */
/* A kernel source's spec key (cg_kern.spec): XXH3-128 of the renderer
 * version and the source up to its config line. */
void cg_spec_key(const char *src, uint8_t key[16]);
void cg_config_str(const cg_config *c, char *out, size_t cap);

typedef enum cg_where {
	CG_IN_ARENA,  /* offset: into the arena */
	CG_IN_WEIGHT, /* offset: into the weight image */
	CG_IN_INPUT,  /* index: the model's input i (a static device buffer) */
	CG_IN_VIEW,   /* index: the buffer it views; offset: bytes into it */
} cg_where;

typedef struct cg_buf {
	cg_where where;
	ir_dtype dtype;
	int32_t rank;
	int64_t shape[IR_MAX_RANK];
	int64_t strides[IR_MAX_RANK]; /* elements; row-major contiguous today */
	uint64_t bytes;
	uint64_t offset;
	uint32_t index;
} cg_buf;

/* A TMA tensor map a kernel takes by value (a `const __grid_constant__`
 * parameter of 128 bytes after its buffers, in order): what
 * cuTensorMapEncodeTiled needs besides the address, which is that of the
 * kernel's buffer parameter `arg` at launch. The runtime encodes it once
 * per step (runtime/cuda_exec.c) and per timed candidate (autotune), and
 * refuses a map that would reach past its buffer. Sizes are elements,
 * innermost dimension first; strides are bytes (strides[0] unused). */
#define CG_MAX_TMAPS 2
#define CG_TMAP_RANK 5
typedef struct cg_tmap {
	uint32_t arg;
	uint32_t dtype;   /* CUtensorMapDataType */
	uint32_t rank;    /* 1 .. CG_TMAP_RANK */
	uint32_t swizzle; /* CUtensorMapSwizzle */
	uint64_t dims[CG_TMAP_RANK];
	uint64_t strides[CG_TMAP_RANK];
	uint32_t box[CG_TMAP_RANK];
} cg_tmap;

/* A unique kernel of the plan. The spec key hashes what it computes (op,
 * dtypes, shapes, attributes, renderer version) without its config; the
 * name (a content hash of the source) and the kernel-cache key add it. */
typedef struct cg_kern {
	char name[64];
	char *src;              /* CUDA C (malloc'ed); NULL in a plan read from a file */
	uint8_t spec[16];
	cg_config cfg;
	void *cubin;            /* malloc'ed, or pointing into a mapped plan file */
	uint64_t cubin_size;
	uint32_t ntmaps;        /* tensor maps after its buffers (sm_90 TMA kernels) */
	cg_tmap tmaps[CG_MAX_TMAPS];
} cg_kern;

typedef enum cg_act { CG_ACT_NONE, CG_ACT_RELU, CG_ACT_GELU } cg_act;

/* A cuBLASLt algorithm as data: its id and configuration attributes (never
 * the opaque bytes), checked with cublasLtMatmulAlgoCheck before use. */
typedef struct cg_blas_algo {
	int32_t valid; /* 0: not chosen yet (ask the heuristic at load) */
	int32_t id, tile, stages, splitk, reduction, swizzle, custom, inner, cluster;
} cg_blas_algo;

/* A matrix product for cuBLASLt, in row-major terms:
 * out[b] (m x n) = act(A[b] (m x k) @ op(B[b]) (k x n) [+ C[b]] [+ bias (n)])
 * where op(B) = B^T when trans_b (B stored n x k, as linear's weight), and
 * batch b of A/B/out starts at b * stride_{a,b,c} elements (a stride of 0
 * broadcasts). C (a residual, laid out as out) is added with beta = 1.
 * Operands are buffer ids; bias and c are CG_NO_BUF when absent. */
typedef struct cg_mm {
	uint32_t a, b, bias, out, c;
	int64_t batch, m, n, k;
	int64_t stride_a, stride_b, stride_c;
	bool trans_b;
	ir_dtype dtype; /* of A, B, bias and out */
	cg_act act;
	bool tf32; /* f32 only: operands may round to TF32 (CUBLAS_COMPUTE_32F_FAST_TF32) */
	cg_blas_algo algo;
} cg_mm;

typedef enum cg_step_kind { CG_LAUNCH, CG_MATMUL } cg_step_kind;

typedef struct cg_pstep {
	cg_step_kind kind;
	char op[32];        /* the IR op it computes (profiles, traces) */
	double bytes;       /* operands read once, the output written once */
	double flops;       /* contractions and convolutions; else 0 */
	/* CG_LAUNCH: kernel kern with the buffers args[0..nargs) */
	uint32_t kern;
	uint32_t grid[3], block[3], smem;
	uint32_t nargs;
	uint32_t args[CG_MAX_ARGS];
	cg_mm mm;           /* CG_MATMUL */
} cg_pstep;

/* An input or output as the user wrote it. */
typedef struct cg_io {
	char *name; /* malloc'ed; "" when unnamed */
	ir_dtype dtype;
	int32_t rank;
	int64_t shape[IR_MAX_RANK];
	uint32_t buf;
} cg_io;

typedef struct cg_plan {
	int32_t sm;     /* the arch its kernels are written and compiled for */
	cg_buf *bufs;
	uint32_t nbufs;
	cg_kern *kerns;
	uint32_t nkerns;
	cg_pstep *steps;
	uint32_t nsteps;
	cg_io *inputs, *outputs;
	uint32_t ninputs, noutputs;
	uint64_t arena_bytes;
	void *weights;  /* the weight image */
	uint64_t weight_bytes;
	/* who owns the memory behind kernels' cubins and the weight image:
	 * cg_plan_free frees them, or unmaps `map` when the plan was read
	 * from a file (cg_io.c: the file's bytes copied into anonymous pages,
	 * never the file mapped, so a file truncated later cannot SIGBUS) */
	void *map;
	size_t map_size;
	bool borrowed; /* cubins and weights point into memory the plan does not own */
} cg_plan;

typedef struct cg_target {
	int sm;    /* 80, 90, ...: the arch the sources are written for */
	bool tf32; /* fp32 contractions may use TF32 (--precision tf32) */
	bool unfused; /* one step per node (no fusion groups): for comparison */
	bool conv_kernels; /* 1x1 convs stay generated kernels, no cuBLASLt product (benchmarks) */
	/* autotuning (may be NULL): asked once per kernel after its default
	 * rendering, with its spec key and the config it got; true and *want:
	 * render it again with *want (kept when the renderer accepts it) */
	bool (*pick)(void *ctx, const uint8_t spec[16], const cg_config *def, cg_config *want);
	/* autotuning (may be NULL): asked once per product that cuBLASLt
	 * would run (matmul, linear, a 1x1 conv), with its description
	 * (buffers unset; bias and c CG_NO_BUF when absent); true and *want:
	 * render it, with its group's epilogue, as the GEMM template with
	 * *want instead (kept when the template takes it; the fusion groups
	 * do not change) */
	bool (*pick_mm)(void *ctx, const cg_mm *mm, cg_config *want);
	void *pick_ctx;
} cg_target;

/* Lowers g (verified, no symbols) into a plan for t: renders every node's
 * step (kernels deduplicated by name), gives every value a buffer (a view
 * shares its root's storage), plans the arena over the buffers' lifetimes
 * (passes/memplan.h) and packs params and consts into the weight image.
 * vals: g->nnodes entries whose params hold their values (as for ref_run),
 * or NULL for a plan without weights (the image is then zero-filled: for
 * compile-only and listing). Free with cg_plan_free. An op the CUDA
 * backend cannot handle is SN_EINPUT naming the op and node. */
int cg_lower(const ir_graph *g, const ir_tensor *vals, const cg_target *t, cg_plan **out, sn_err *e);
void cg_plan_free(cg_plan *p);

/* The fusion groups cg_lower would make of g for t, one line per group
 * (passes/fuse.h's fu_plan_print), appended to b: sinter print --groups. */
int cg_fusion_groups(const ir_graph *g, const cg_target *t, sn_buf *b, sn_err *e);

/* Whether node n is a view of its operand 0 (reshape, flatten, squeeze,
 * unsqueeze): it shares that buffer. */
bool cg_is_alias(const ir_graph *g, const ir_node *n);

/* One line per step ("kernel conv2d conv2d_1234abcd5678 grid=... " or
 * "gemm linear batch=1 m=..."), appended to b: the golden list of a plan. */
void cg_plan_list(const cg_plan *p, sn_buf *b);

/* ---- plan files (codegen/cg_io.c) ----
 * One format for plan-cache entries and AOT packages: a 64-byte header
 * (magic, format version, sizes, XXH3-64 of the tables and cubins), the
 * plan's tables (with an XXH3-64 per 16 MiB chunk of the weight image,
 * verified on several cores), the cubins, and the weight image on a 4 KiB
 * boundary so it can be uploaded straight from the page-aligned copy. Written to a unique temp file
 * and renamed into place; read with checked preads into private memory (a
 * file truncated meanwhile is an error, never a SIGBUS), every count, index,
 * offset and size checked before use. */
#define CG_PLAN_FORMAT 3 /* 2: matrix products carry C; 3: kernels carry tensor maps */

/* What a plan file says about where it came from. */
typedef struct cg_plan_info {
	char version[32];      /* the sinter that wrote it */
	char source[256];      /* the model file it was compiled from */
	uint64_t w_size, w_mtime_ns, w_ino; /* the weights' fingerprint... */
	uint8_t w_hash[16];    /* ...and their content hash (zero: none) */
} cg_plan_info;

int cg_plan_write(const char *path, const cg_plan *p, const cg_plan_info *info, sn_err *e);
/* Reads path (nofollow: refuse a symlink, and a file another user owns
 * or others may write, for files in sinter's own folders). SN_EINPUT "PATH: not a sinter plan" / "truncated" / "checksum
 * mismatch" / "format version N" for a bad file. The plan holds a private
 * copy of the file: kernels carry cubins, no sources. Free with cg_plan_free. */
int cg_plan_read(const char *path, bool nofollow, cg_plan **out, cg_plan_info *info, sn_err *e);
/* The same over bytes in memory (fuzzing); the plan borrows data. */
int cg_plan_parse(const void *data, size_t size, cg_plan **out, cg_plan_info *info, sn_err *e);

/* "matmul 64x4096x4096 f16 batch 2, B transposed, bias, gelu", into out. */
void cg_mm_describe(const cg_mm *g, char *out, size_t cap);

#endif
