/* init.h: deterministic random values for params and inputs, when a user
 * has no weights or inputs at hand (`--init random`): PyTorch-like default
 * scales, the same values on every machine for a seed and a name. Prefix:
 * ir_init_. */
#ifndef SINTER_IR_INIT_H
#define SINTER_IR_INIT_H

#include "ir/ir.h"
#include "ir/wstore.h"

/* Puts a value for every param of g into ws, from seed and the param's
 * key: conv/linear weights and biases uniform in +-1/sqrt(fan_in), norm
 * weights and running variances 1, norm biases and running means 0,
 * embedding tables N(0, 1); integer params in [0, 10). Params must have
 * concrete shapes. Linear in the size of g. */
int ir_init_params(const ir_graph *g, uint64_t seed, ir_wstore *ws, sn_err *e);

/* Fills t (dtype, shape and data set) from seed and name: floats N(0, 1),
 * bools 0 or 1, other integers in [0, limit). */
void ir_init_tensor(ir_tensor *t, const char *name, uint64_t seed, int64_t limit);

/* The range integer input `in` must stay in: the size of the gathered dim
 * when it indexes a gather, else 10. */
int64_t ir_init_index_limit(const ir_graph *g, ir_ref in);

#endif
