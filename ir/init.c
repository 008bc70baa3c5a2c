/* init.c: deterministic random params and inputs (init.h). */
#include "ir/init.h"

#include <math.h>
#include <stdlib.h>

/* splitmix64: small, fast, and good enough to fill weights and inputs. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_uniform(uint64_t *s) /* [0, 1) */
{
	return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

static double rng_normal(uint64_t *s)
{
	double u = rng_uniform(s), v = rng_uniform(s);
	return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

static uint64_t str_seed(const char *s, uint64_t seed)
{
	uint64_t h = 1469598103934665603ull ^ seed;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

enum fill { FILL_UNIFORM, FILL_ONES, FILL_ZEROS, FILL_NORMAL };

/* How a param is filled: by its first reader (norm statistics, embedding
 * tables), and the fan-in that sets the uniform bound. reader: the first
 * node that reads p (IR_NONE: none). */
static enum fill param_role(const ir_graph *g, ir_ref p, ir_ref reader, double *fan_in)
{
	const ir_shape *s = &g->nodes[p].shape;
	int64_t numel = ir_numel(s);
	*fan_in = s->rank >= 2 && s->d[0] > 0 ? (double)numel / (double)s->d[0] : (double)numel;
	if (reader != IR_NONE) {
		const ir_node *n = &g->nodes[reader];
		for (uint32_t k = 0; k < n->nin; k++) {
			if (n->in[k] != p)
				continue;
			switch (n->op) {
			case IR_OP_batch_norm:
				return k == 1 || k == 4 ? FILL_ONES : FILL_ZEROS;
			case IR_OP_layer_norm:
			case IR_OP_rms_norm:
				return k == 1 ? FILL_ONES : FILL_ZEROS;
			case IR_OP_gather:
				return k == 0 ? FILL_NORMAL : FILL_UNIFORM;
			case IR_OP_conv2d:
			case IR_OP_linear:
				if (k == 2) { /* bias: the weight's fan-in */
					const ir_shape *w = &g->nodes[n->in[1]].shape;
					*fan_in = (double)ir_numel(w) / (double)(w->d[0] ? w->d[0] : 1);
				}
				return FILL_UNIFORM;
			case IR_OP_matmul:
				if (k == 1 && s->rank >= 2) /* x @ W with W [.., in, out] */
					*fan_in = (double)s->d[s->rank - 2];
				return FILL_UNIFORM;
			default:
				return FILL_UNIFORM;
			}
		}
	}
	return FILL_UNIFORM;
}

int ir_init_params(const ir_graph *g, uint64_t seed, ir_wstore *ws, sn_err *e)
{
	ir_ref *reader = malloc((g->nnodes ? g->nnodes : 1) * sizeof *reader);
	if (!reader)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	for (uint32_t i = 0; i < g->nnodes; i++)
		reader[i] = IR_NONE;
	for (uint32_t i = 0; i < g->nnodes; i++)
		for (uint32_t k = 0; k < g->nodes[i].nin; k++)
			if (g->nodes[i].in[k] < g->nnodes && reader[g->nodes[i].in[k]] == IR_NONE)
				reader[g->nodes[i].in[k]] = i;
	int rc = SN_OK;
	for (uint32_t i = 0; !rc && i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		if (n->op != IR_OP_param)
			continue;
		int64_t count = ir_numel(&n->shape);
		if (count < 0) {
			rc = sn_errf(e, SN_EUSAGE, "param \"%s\" has a symbolic shape", n->pname);
			break;
		}
		size_t nb = (size_t)count * ir_dtype_size(n->dtype);
		void *p = malloc(nb ? nb : 1);
		if (!p) {
			rc = sn_errf(e, SN_EINTERNAL, "out of memory");
			break;
		}
		double fan;
		enum fill how = param_role(g, i, reader[i], &fan);
		double bound = 1.0 / sqrt(fan > 0 ? fan : 1);
		uint64_t s = str_seed(n->pname, seed);
		for (int64_t k = 0; k < count; k++) {
			double x = how == FILL_ONES ? 1 : how == FILL_ZEROS ? 0
				 : how == FILL_NORMAL ? rng_normal(&s)
				 : (2 * rng_uniform(&s) - 1) * bound;
			if (!ir_dtype_is_float(n->dtype))
				x = (double)(rng_next(&s) % 10);
			ir_store(n->dtype, p, (size_t)k, x);
		}
		rc = ir_ws_put(ws, n->pname, (ir_tensor){n->dtype, n->shape, p, nb}, e);
	}
	free(reader);
	return rc;
}

void ir_init_tensor(ir_tensor *t, const char *name, uint64_t seed, int64_t limit)
{
	uint64_t s = str_seed(name, seed ^ 0x5eed);
	size_t count = (size_t)ir_numel(&t->shape);
	for (size_t k = 0; k < count; k++) {
		double x = ir_dtype_is_float(t->dtype) ? rng_normal(&s)
			 : t->dtype == IR_BOOL ? (double)(rng_next(&s) & 1)
			 : (double)(rng_next(&s) % (uint64_t)(limit > 0 ? limit : 1));
		ir_store(t->dtype, t->data, k, x);
	}
}

int64_t ir_init_index_limit(const ir_graph *g, ir_ref in)
{
	for (uint32_t k = 0; k < g->nnodes; k++) {
		const ir_node *u = &g->nodes[k];
		if (u->op == IR_OP_gather && u->nin > 1 && u->in[1] == in) {
			const ir_shape *d = &g->nodes[u->in[0]].shape;
			return d->d[ir_axis(u->attrs->axis, d->rank)];
		}
	}
	return 10;
}
