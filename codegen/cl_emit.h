/* cl_emit.h: inside codegen, shared by the cpu device's LLVM emitters
 * (cl_emit.c: the emitter, its helpers and pointwise groups; cl_rows.c:
 * row kernels and row groups). Prefix: cle_. */
#ifndef SINTER_CL_EMIT_H
#define SINTER_CL_EMIT_H

#include "codegen/cl.h"

#include <llvm-c/Core.h>

#define VW 8

/* One LLVM context and module with its builder and types. */
typedef struct part {
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	LLVMTypeRef f32, i64, i32, i8, ptr, v8, fnty, vd;
} part;

struct cl_emitter {
	part parts[CL_NMOD];
	/* the part the current kernel goes to */
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	LLVMTypeRef f32, i64, i32, i8, ptr, v8, fnty, vd;
	/* per kernel */
	const ir_graph *g;
	const fu_plan *fp;
	uint32_t gid;
	ir_ref core; /* read in place from the root buffer (a conv epilogue) */
	LLVMValueRef bufs[CL_MAX_ARGS];
	ir_ref *args;
	uint32_t *nargs;
	LLVMValueRef rootlin; /* the root's linear index at the current element */
	struct memo {
		ir_ref r;
		int rank;
		LLVMValueRef ix[IR_MAX_RANK];
		LLVMValueRef v;
	} *memo;
	uint32_t nmemo, capmemo;
	/* a row group's (emit_row_group) values of one per row, its members
	 * of rows_n elements: each is the row's value wherever it is read
	 * from (a reshape's index need not be the row's), set in order */
	int64_t rows_n; /* 0: not a row group */
	uint32_t nrowv;
	ir_ref rowr[64];
	LLVMValueRef rowv[64];
	/* and the members of R*L elements one pass computes and later passes
	 * read back (scr_r, in pass scr_pass, stored in the row's scratch
	 * scr_p at the current element's offset in the row, lane) */
	int pass;
	LLVMValueRef lane;
	uint32_t nscr;
	ir_ref scr_r[8];
	int scr_pass[8];
	LLVMValueRef scr_p[8];
	bool fail;
	bool oom; /* an allocation failed: the lowering fails (not a fallback) */
	uint32_t nfn;
	/* emitted functions' bodies as text (without the name), for dedupe */
	char **texts;
	int32_t *tfn; /* the plan function index of texts[i] */
	uint32_t ntexts, captexts;
};

/* A counted loop: *iv runs over [from, to); body goes where the builder is
 * left; loop_end closes it. */
typedef struct loop {
	LLVMBasicBlockRef head, body, exit;
	LLVMValueRef iv, to;
} loop;

/* cl_emit.c: the helpers (see each one's comment there). */
void cle_dedupe(cl_emitter *m, LLVMValueRef f, cl_step *st, char **fns, uint32_t *nfns);
LLVMValueRef cle_ci(cl_emitter *m, int64_t v);
LLVMValueRef cle_cf(cl_emitter *m, double v);
LLVMValueRef cle_callf(cl_emitter *m, const char *name, LLVMTypeRef ty, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef cle_call1(cl_emitter *m, const char *name, LLVMValueRef x);
LLVMValueRef cle_gep(cl_emitter *m, LLVMTypeRef t, LLVMValueRef p, LLVMValueRef i);
LLVMValueRef cle_loadf(cl_emitter *m, LLVMTypeRef t, LLVMValueRef p);
void cle_storef(cl_emitter *m, LLVMValueRef v, LLVMValueRef p);
bool cle_ok_dtype(ir_dtype t);
bool cle_is_f(ir_dtype t);
LLVMValueRef cle_bf16_widen(cl_emitter *m, LLVMValueRef v);
LLVMValueRef cle_bf16_bits(cl_emitter *m, LLVMValueRef f);
LLVMValueRef cle_bf16_round(cl_emitter *m, LLVMValueRef f);
LLVMTypeRef cle_mem_type(cl_emitter *m, ir_dtype t);
void cle_store_val(cl_emitter *m, ir_dtype t, LLVMValueRef v, LLVMValueRef base, LLVMValueRef i);
LLVMValueRef cle_value(cl_emitter *m, ir_ref r, const LLVMValueRef *x, int rank);
LLVMValueRef cle_sel(cl_emitter *m, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef cle_fexp(cl_emitter *m, LLVMValueRef x, LLVMTypeRef ty);
LLVMValueRef cle_new_fn(cl_emitter *m, char **fns, uint32_t *nfns, cl_step *st, LLVMValueRef *lo, LLVMValueRef *hi);
void cle_loop_begin(cl_emitter *m, LLVMValueRef f, LLVMValueRef from, LLVMValueRef to, loop *l);
void cle_loop_end(cl_emitter *m, loop *l, int64_t step);
LLVMValueRef cle_carried(cl_emitter *m, loop *l, LLVMValueRef init, LLVMBasicBlockRef pre);
bool cle_collect_loads(const ir_graph *g, const fu_plan *fp, uint32_t gid, ir_ref core, cl_step *st);

/* cl_rows.c: a row kernel (softmax, log_softmax, layer_norm, rms_norm,
 * trailing-axis reductions) for node r, and a row group (FU_ROWS). */
bool cle_emit_rows(cl_emitter *m, const ir_graph *g, ir_ref r, cl_step *st, char **fns, uint32_t *nfns);
bool cle_emit_row_group(cl_emitter *m, const ir_graph *g, const fu_plan *fp, uint32_t gid, cl_step *st, char **fns,
			uint32_t *nfns);

#endif
