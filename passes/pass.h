/* pass.h: the pass manager. A pass is a row {name, fn} in pass_table; a
 * mode's pipeline is a list of names. Passes only rewrite IR (DESIGN.md,
 * Passes). Prefix: pass_. */
#ifndef SINTER_PASS_H
#define SINTER_PASS_H

#include "ir/ir.h"
#include "ir/wstore.h"

typedef enum pass_precision {
	PASS_FP32, /* as declared */
	PASS_TF32, /* fp32, but fp32 contractions may use TF32 tensor cores */
	PASS_BF16,
	PASS_FP16,
	PASS_FP8,  /* bf16 activations, e4m3 matmul/linear weights with a per-tensor scale */
} pass_precision;

typedef struct pass_ctx {
	/* Weights by param key. NULL when there are none (sinter print): passes
	 * that derive weights (conv-BN folding, layout, precision) still rewrite
	 * the graph, with the derived params' keys, and compute no values. */
	ir_wstore *ws;
	pass_precision precision;
	int sm;               /* target arch, e.g. 90; 0 when unknown */
	const char *dump_dir; /* when set: the IR after each pass, NN-name.sir */
} pass_ctx;

/* Rewrites *g. A pass may build a new graph and replace *g with it (freeing
 * the old one). Returns SN_OK or an error. */
typedef int pass_fn(ir_graph **g, pass_ctx *ctx, sn_err *e);

typedef struct pass_info {
	const char *name;
	pass_fn *fn;
	const char *doc; /* one line for --help */
} pass_info;

extern const pass_info pass_table[];
extern const size_t pass_count;

/* The pipeline of a mode ("default", "reduce-overhead", "max-autotune"), as
 * a comma list of pass names; NULL for an unknown mode. */
const char *pass_pipeline(const char *mode);

/* Runs the passes named in `list` (comma separated) in order. After every
 * pass the verifier runs; a failure names the pass that broke the graph
 * ("pass layout broke the graph: node 12 ..."). An unknown name is SN_EUSAGE
 * listing the known ones. */
int pass_run_list(ir_graph **g, const char *list, pass_ctx *ctx, sn_err *e);

#endif
