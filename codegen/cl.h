/* cl.h: the CPU plan (--device cpu), codegen's product for the CPU runtime
 * (runtime/cpu_exec.h), the CPU's counterpart of cg.h. The same fusion
 * partition (passes/fuse.h) and arena placement (passes/memplan.h) as the
 * CUDA plan; each group becomes one step:
 *   CL_KERNEL  a function of the plan's LLVM module (pointwise and
 *              index-only groups, softmax, log_softmax, layer_norm,
 *              rms_norm, trailing-axis reductions and row groups: a
 *              decomposed norm or softmax), called over a range of outer
 *              rows by the thread pool;
 *   CL_GEMM    matmul / linear through cblas_sgemm, bias, residual and
 *              activation applied on each output tile;
 *   CL_CONV    conv2d through cblas_sgemm (1x1 stride 1 as one product,
 *              others im2col by tiles of output rows), the group's
 *              pointwise epilogue (a CL kernel) applied on the tile;
 *   CL_ATTN    scaled_dot_product_attention, per (batch, head) two products
 *              and a softmax in between;
 *   CL_POOL    max_pool2d and global_avg_pool, NHWC f32, in the runtime's C;
 *   CL_GATHER  gather of any dtype by i64/i32 indices (a = the indices, or
 *              IR_NONE for a 1-D iota: rows 0..n-1), rows copied by the
 *              runtime, every index checked first;
 *   CL_REF     anything else: the reference interpreter's implementation of
 *              each member of the group, on the plan's buffers.
 * The plan keeps the optimized graph (fallback steps and convolutions read
 * their nodes) and the LLVM module until the runtime compiles it.
 * Prefix: cl_. */
#ifndef SINTER_CL_H
#define SINTER_CL_H

#include "codegen/cg.h"
#include "ir/ir.h"
#include "passes/fuse.h"

#define CL_MAX_ARGS 10
#define CL_NMOD 2 /* LLVM modules per plan, optimized and compiled in parallel */
#define CL_ALIGN 64

typedef enum cl_where { CL_NOWHERE, CL_ARENA, CL_WEIGHT, CL_INPUT, CL_VIEW } cl_where;

/* Where a node's value lives (its buffer), per node. */
typedef struct cl_val {
	cl_where where;
	uint64_t offset; /* CL_ARENA / CL_WEIGHT: bytes */
	uint32_t index;  /* CL_INPUT: input i; CL_VIEW: the node whose storage it shares */
} cl_val;

typedef enum cl_kind { CL_KERNEL, CL_GEMM, CL_CONV, CL_ATTN, CL_REF, CL_SKIP, CL_POOL, CL_GATHER } cl_kind;

typedef struct cl_step {
	cl_kind kind;
	char op[32];       /* the IR op of its core or root (profiles) */
	uint32_t group;    /* its fusion group */
	ir_ref node;       /* core (or root) */
	int32_t fn;        /* CL_KERNEL: the function; CL_GEMM/CL_CONV: its epilogue or -1 */
	uint32_t nargs;    /* the function's buffers: args[0] is written */
	ir_ref args[CL_MAX_ARGS];
	int64_t rows;      /* CL_KERNEL: the range the function is called over */
	int64_t inner;     /* elements per row (an epilogue applied by tile) */
	/* CL_GEMM: out[b] (m x n) = act(A[b] (m x k) op(B[b]) + bias + C[b]) */
	ir_ref a, b, bias, c, out;
	int64_t batch, m, n, k, sa, sb, sc;
	bool trans_b;
	int act;           /* 0 none, 1 relu, 2 tanh gelu */
} cl_step;

typedef struct cl_plan {
	ir_graph *g;       /* the optimized graph (owned) */
	fu_plan fp;
	cl_val *vals;      /* per node */
	cl_step *steps;
	uint32_t nsteps;
	uint64_t arena_bytes;
	void *weights;     /* params and consts, CL_ALIGN-aligned (owned, or in map) */
	uint64_t weight_bytes;
	char **fns;        /* function names, nfns (owned) */
	uint32_t nfns;
	/* LLVMContextRef and LLVMModuleRef of each module (kernels go to them
	 * in turn) until the runtime compiles them; NULL after */
	void *llctx[CL_NMOD], *llmod[CL_NMOD];
	uint32_t nref, nkernel, ngemm, nconv, nattn, npool, ngather; /* steps of each kind */
	/* the kernel cache keys of module k's object (set by the runtime's
	 * load, or read from a plan file: the code of a plan without modules) */
	uint8_t objkey[CL_NMOD][16];
	bool has_obj[CL_NMOD];
	/* the objects' bytes (owned), in an AOT package: a plan read from one
	 * links them and compiles nothing; set by the runtime's load when
	 * keep_obj is (a package being written) */
	void *obj[CL_NMOD];
	uint64_t obj_size[CL_NMOD];
	bool keep_obj;
	/* what the objects were compiled for (rt_cpu_host's text; owned; NULL
	 * until the runtime's load) */
	char *host;
	/* a plan read from a file: the file mapped read-only (weights point
	 * into it), unmapped by cl_plan_free */
	void *map;
	size_t map_size;
	bool borrowed; /* weights point into memory the caller keeps (cl_plan_parse) */
} cl_plan;

/* Lowers g (verified, concrete shapes; taken on success: the plan owns it
 * then; on failure it is still the caller's) into a CPU plan; vals as for cg_lower (params' values),
 * copied into the plan's weight image. no_fusion: one step per node.
 * Free with cl_plan_free. */
int cl_lower(ir_graph *g, const ir_tensor *vals, bool no_fusion, cl_plan **out, sn_err *e);
void cl_plan_free(cl_plan *p);
/* Whether n is attention the runtime's CL_ATTN step runs (its operands'
 * dtypes and shapes; the lowering also wants a mask stored). */
bool cl_attn_fits(const ir_graph *g, const ir_node *n);

/* ---- codegen/cl_io.c: cpu plan files (the plan cache's cpu entries) ----
 * A 64-byte header (magic SINTCPUP, CL_PLAN_FORMAT, total size, XXH3-64
 * of the tables, their size, the weight image's offset and size), the
 * tables (info, the graph as .sir text, per-node places, the fusion
 * partition, the steps, function names, the objects' kernel cache keys,
 * the host they were compiled for and, in a package, their bytes, an
 * XXH3-64 per 16 MiB of the weight image), then the weight image on a
 * 4 KiB boundary. Writes p (its modules compiled: llmod NULL, has_obj
 * set) to path through a temp file and a rename. */
#define CL_PLAN_FORMAT 3
int cl_plan_write(const char *path, const cl_plan *p, const cg_plan_info *info, sn_err *e);
/* An AOT package (sinter compile --device cpu -o FILE.sinterpkg): the
 * same file with the objects' bytes and the host they were compiled for
 * in its tables (p->obj, p->host: set by rt_cpu_load with p->keep_obj). */
int cl_package_write(const char *path, const cl_plan *p, const cg_plan_info *info, sn_err *e);
/* Reads a package: read into private memory (never mapped: a file
 * truncated while in use is a read error here, not a SIGBUS later), no
 * trust rule (the user names it), checked as cl_plan_read; SN_EINPUT
 * "PATH: why" for a bad file, "PATH: not a package: ..." for a cache
 * entry without its objects. Free with cl_plan_free. */
int cl_package_read(const char *path, cl_plan **out, cg_plan_info *info, sn_err *e);
/* Whether the first bytes of a file (n of them) are a cpu plan's magic. */
bool cl_is_cpu_plan(const void *head, size_t n);
/* Reads path (no symlink; refused unless sn_cache_trusted), the file
 * read into private memory (never mapped: an entry truncated while its
 * plan runs is no SIGBUS); every table checked, the graph parsed and verified,
 * the weight image's checksums verified. SN_EINPUT "PATH: why" for a bad
 * file. The plan has no modules: its code is p->objkey's objects. Free
 * with cl_plan_free. */
int cl_plan_read(const char *path, cl_plan **out, cg_plan_info *info, sn_err *e);
/* The same over bytes in memory (fuzzing): the plan borrows data. */
int cl_plan_parse(const void *data, size_t size, cl_plan **out, cg_plan_info *info, sn_err *e);

/* The fusion groups cl_lower would make of g, as cg_fusion_groups. */
int cl_fusion_groups(const ir_graph *g, sn_buf *b, sn_err *e);

/* One line per step ("kernel softmax k3 rows=.. inner=.. nodes=..", with
 * the nodes its group computes; "gemm linear m=.. n=.. k=..", "ref
 * gather", ...): sinter print --device cpu, golden tests. */
void cl_plan_list(const cl_plan *p, sn_buf *b);

/* ---- codegen/cl_emit.c: LLVM IR through the LLVM-C API ---- */
/* The emitted kernels' version, in the plan cache's key (a plan names
 * its objects, which an older emitter made): 2, issue 31's full-range
 * exp, sums in double, NaN-propagating max and min, norms in double; 3,
 * row groups (a decomposed norm or softmax one kernel: another partition
 * and other kernels for the same graph). */
#define CL_EMIT_VERSION 3
typedef struct cl_emitter cl_emitter;
/* A new module in its own context; free with cl_emit_free (or hand the
 * module and context to the plan with cl_emit_finish). */
int cl_emit_new(cl_emitter **out, sn_err *e);
void cl_emit_free(cl_emitter *m);
/* Tries to emit group gid's kernel (pointwise groups, a convolution's
 * epilogue, norms, softmax, reductions) as function st->fn, filling args,
 * rows and inner. false (nothing emitted) when the group has something the
 * emitter does not take: the step falls back. */
bool cl_emit_group(cl_emitter *m, const ir_graph *g, const fu_plan *fp, uint32_t gid, cl_step *st,
		   char **fns, uint32_t *nfns);
/* Whether an allocation failed while emitting (the lowering must fail
 * then: a fallback would compute other bits than the plan asked for). */
bool cl_emit_oom(const cl_emitter *m);
/* Moves the modules and their contexts into p. */
void cl_emit_finish(cl_emitter *m, cl_plan *p);
/* Disposes a module and its context (either may be NULL). */
void cl_module_dispose(void *ctx, void *mod);

#endif
