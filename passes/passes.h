/* passes.h: the passes of pass_table, one function each (pass.h, pass_fn).
 * The precision pass is pass_precision_run: pass_precision names the
 * precision enum of pass.h. Prefix: pass_. */
#ifndef SINTER_PASSES_H
#define SINTER_PASSES_H

#include "passes/pass.h"

pass_fn pass_canonicalize; /* passes/canon.c */
pass_fn pass_fold_bn;      /* passes/fold_bn.c */
pass_fn pass_layout;       /* passes/layout.c */
pass_fn pass_precision_run; /* passes/precision.c */
pass_fn pass_attention;     /* passes/attention.c */

#endif
