/* state.h: the state a compiled model keeps across runs (docs/DESIGN.md,
 * State). A graph's states are its last nstates inputs, and their new
 * values its last nstates outputs (ir.h); the public API shows neither:
 * a run takes the other inputs, returns the other outputs, and the handle
 * feeds its state buffers in and takes the updates back. The ref and cpu
 * devices keep them in host memory. Also the ref device: sinter_model_compile
 * with device "ref" (the reference interpreter on the model as written),
 * and the dispatch of the compiled handle's entry points between the
 * host devices (ref, cpu). Prefix: api_state_, api_ref_, api_host_. */
#ifndef SINTER_API_STATE_H
#define SINTER_API_STATE_H

#include "api/model.h"

typedef struct api_state {
	uint32_t n;
	sinter_tensor *t; /* n tensors named after the states, data owned (host) */
} api_state;

/* Zeroed buffers for g's states (none when g has no state). Freed by
 * api_state_free. */
sinter_status api_state_init(api_state *s, const ir_graph *g, sinter_error *err);
void api_state_free(api_state *s);
/* Points vals (g->nnodes entries) at the state buffers: the values of g's
 * state inputs. */
void api_state_bind(const api_state *s, const ir_graph *g, ir_tensor *vals);
/* Takes the run's new values: outs (g->noutputs entries) from a run that
 * malloc'ed them; the state outputs' data becomes the state's (the old
 * buffers freed), and outs' entries for them are cleared. */
void api_state_take(api_state *s, const ir_graph *g, ir_tensor *outs);

/* The graph's inputs and outputs the caller sees (without the states). */
static inline uint32_t api_user_inputs(const ir_graph *g) { return g->ninputs - g->nstates; }
static inline uint32_t api_user_outputs(const ir_graph *g) { return g->noutputs - g->nstates; }

/* Makes each bound input of m a state updated by its output (sinter_load_options'
 * states): m's graph rebuilt with those inputs last and those outputs
 * last, in the bindings' order. SINTER_E_INPUT for a name m lacks, a type
 * that differs, an input or output named twice, or a model with states
 * already. */
sinter_status api_mark_states(sinter_model *m, const sinter_state_binding *sb, size_t n, sinter_error *err);

/* The reference interpreter on m with state s (NULL: zeroed for this run
 * only): sinter_model_run_ref's body. */
sinter_status api_run_ref(sinter_model *m, const sinter_tensor *inputs, size_t ninputs, api_state *s,
			  sinter_tensor **outputs, sinter_error *err);

/* The ref device (state.c): a handle over m, which must outlive it. */
sinter_status api_ref_compile(const sinter_model *m, const sinter_compile_options *o, sinter_compiled **out,
			      sinter_compile_stats *stats, sinter_error *err);

/* The compiled handle's entry points on the host devices: ref here, cpu
 * in cpu_api.c. */
size_t api_host_num_inputs(const sinter_compiled *c);
size_t api_host_num_outputs(const sinter_compiled *c);
sinter_status api_host_input(const sinter_compiled *c, size_t i, sinter_tensor *d, sinter_error *err);
sinter_status api_host_output(const sinter_compiled *c, size_t i, sinter_tensor *d, sinter_error *err);
void api_host_free(sinter_compiled *c);
sinter_status api_host_run(sinter_compiled *c, const sinter_tensor *inputs, size_t n, sinter_tensor **outputs,
			   sinter_error *err);
sinter_status api_host_bench(sinter_compiled *c, int warmup, int iters, double *ms, sinter_error *err);

/* The cpu handle's state (cpu_api.c), the cuda handle's (cuda_api.c);
 * NULL in a build without the device. */
api_state *api_cpu_state(sinter_compiled *c);
api_state *api_cuda_state(sinter_compiled *c);

#endif
