/* state.c: state kept across runs, the ref device, and the host devices'
 * dispatch (state.h). */
#include "api/state.h"

#include <stdlib.h>
#include <string.h>

#include "ir/ref/ref.h"
#include "passes/rewrite.h"

/* ---- state buffers ---- */

sinter_status api_state_init(api_state *s, const ir_graph *g, sinter_error *err)
{
	memset(s, 0, sizeof *s);
	if (!g->nstates)
		return SINTER_OK;
	if (!(s->t = calloc(g->nstates, sizeof *s->t)))
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	s->n = g->nstates;
	for (uint32_t k = 0; k < s->n; k++) {
		const ir_node *in = &g->nodes[g->inputs[api_user_inputs(g) + k]];
		sinter_tensor *t = &s->t[k];
		int64_t numel = ir_numel(&in->shape);
		if (numel < 0) {
			api_state_free(s);
			return api_failf(err, SINTER_E_USAGE, "state %%%s has a symbolic shape: bind its symbols",
					 in->name ? in->name : "?");
		}
		t->name = strdup(in->name ? in->name : "");
		t->dtype = (sinter_dtype)in->dtype;
		t->rank = in->shape.rank;
		memcpy(t->shape, in->shape.d, sizeof t->shape);
		t->nbytes = (size_t)numel * ir_dtype_size(in->dtype);
		t->data = calloc(1, t->nbytes ? t->nbytes : 1);
		if (!t->name || !t->data) {
			api_state_free(s);
			return api_failf(err, SINTER_E_INTERNAL, "out of memory");
		}
	}
	return SINTER_OK;
}

void api_state_free(api_state *s)
{
	if (s->t)
		sinter_tensors_free(s->t, s->n);
	memset(s, 0, sizeof *s);
}

void api_state_bind(const api_state *s, const ir_graph *g, ir_tensor *vals)
{
	for (uint32_t k = 0; k < s->n && k < g->nstates; k++) {
		ir_tensor *v = &vals[g->inputs[api_user_inputs(g) + k]];
		v->data = s->t[k].data;
		v->nbytes = s->t[k].nbytes;
	}
}

void api_state_take(api_state *s, const ir_graph *g, ir_tensor *outs)
{
	for (uint32_t k = 0; k < s->n && k < g->nstates; k++) {
		ir_tensor *o = &outs[api_user_outputs(g) + k];
		free(s->t[k].data);
		s->t[k].data = o->data;
		o->data = NULL;
	}
}

/* ---- states named from outside (sinter_load_options.states) ---- */

sinter_status api_mark_states(sinter_model *m, const sinter_state_binding *sb, size_t n, sinter_error *err)
{
	ir_graph *g = m->g;
	if (!n)
		return SINTER_OK;
	if (g->nstates)
		return api_failf(err, SINTER_E_INPUT, "the model declares states of its own: --state adds none to them");
	if (n > g->ninputs || n > g->noutputs)
		return api_failf(err, SINTER_E_INPUT, "%zu states for %u inputs and %u outputs", n, g->ninputs, g->noutputs);
	uint32_t *in = calloc(n, sizeof *in), *out = calloc(n, sizeof *out);
	if (!in || !out) {
		free(in), free(out);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	sinter_status st = SINTER_OK;
	for (size_t k = 0; k < n && !st; k++) {
		const char *on = sb[k].output ? sb[k].output : "", *inn = sb[k].input ? sb[k].input : "";
		uint32_t i = 0, o = 0;
		while (i < g->ninputs && (!g->nodes[g->inputs[i]].name || strcmp(g->nodes[g->inputs[i]].name, inn)))
			i++;
		while (o < g->noutputs && (!g->nodes[g->outputs[o]].name || strcmp(g->nodes[g->outputs[o]].name, on)))
			o++;
		if (i == g->ninputs)
			st = api_failf(err, SINTER_E_INPUT, "state %s=%s: the model has no input %s", on, inn, inn);
		else if (o == g->noutputs)
			st = api_failf(err, SINTER_E_INPUT, "state %s=%s: the model has no output %s", on, inn, on);
		for (size_t j = 0; !st && j < k; j++)
			if (in[j] == i || out[j] == o)
				st = api_failf(err, SINTER_E_INPUT, "state %s=%s: %s is named by two states", on, inn,
					       in[j] == i ? inn : on);
		const ir_node *a = &g->nodes[g->inputs[i < g->ninputs ? i : 0]];
		const ir_node *b = &g->nodes[g->outputs[o < g->noutputs ? o : 0]];
		if (!st && (a->dtype != b->dtype || !ir_shape_eq(&a->shape, &b->shape))) {
			char ta[160], tb[160];
			ir_type_str(g, a->dtype, &a->shape, ta, sizeof ta);
			ir_type_str(g, b->dtype, &b->shape, tb, sizeof tb);
			st = api_failf(err, SINTER_E_INPUT, "state %s=%s: output %s is %s but input %s is %s", on, inn, on, tb,
				       inn, ta);
		}
		if (!st && g->outputs[o] == g->inputs[i])
			st = api_failf(err, SINTER_E_INPUT, "state %s=%s: the output is the input itself", on, inn);
		in[k] = i;
		out[k] = o;
	}
	/* the graph again: the other inputs, the states' inputs, the rest of
	 * the nodes; then the outputs reordered alike */
	rw r;
	sn_err e = {0};
	ir_graph *d = NULL;
	if (!st && rw_begin(&r, g, &e) == SN_OK) {
		bool ok = true;
		for (uint32_t i = 0; ok && i < g->ninputs; i++) {
			bool state = false;
			for (size_t k = 0; k < n; k++)
				state |= in[k] == i;
			ok = state || rw_copy(&r, g->inputs[i], &e) != IR_NONE;
		}
		for (size_t k = 0; ok && k < n; k++)
			ok = rw_copy(&r, g->inputs[in[k]], &e) != IR_NONE;
		for (uint32_t i = 0; ok && i < g->nnodes; i++)
			ok = g->nodes[i].op == IR_OP_input || rw_copy(&r, i, &e) != IR_NONE;
		if (!ok)
			rw_abort(&r);
		else
			d = rw_finish(&r, &e);
	}
	if (d) {
		ir_ref *o2 = malloc(d->noutputs * sizeof *o2);
		uint32_t w = 0;
		for (uint32_t o = 0; o2 && o < d->noutputs; o++) {
			bool state = false;
			for (size_t k = 0; k < n; k++)
				state |= out[k] == o;
			if (!state)
				o2[w++] = d->outputs[o];
		}
		for (size_t k = 0; o2 && k < n; k++)
			o2[w++] = d->outputs[out[k]];
		if (o2) {
			memcpy(d->outputs, o2, d->noutputs * sizeof *o2);
			d->nstates = (uint32_t)n;
		}
		free(o2);
		if (!o2 || ir_verify(d, &e) != SN_OK) {
			ir_graph_free(d);
			d = NULL;
			if (!e.code)
				sn_errf(&e, SN_EINTERNAL, "out of memory");
		}
	}
	if (!st && !d)
		st = api_fail(err, &e);
	if (d) {
		ir_graph_free(m->g);
		m->g = d;
	}
	free(in);
	free(out);
	return st;
}

/* ---- the ref device ---- */

typedef struct api_ref {
	api_device device; /* API_DEV_REF: first, as in every compiled handle */
	sinter_model *m;   /* borrowed: the caller keeps it alive */
	api_state st;
	pthread_mutex_t lock; /* runs and state calls take turns */
} api_ref;

sinter_status api_ref_compile(const sinter_model *m, const sinter_compile_options *o, sinter_compiled **out,
			      sinter_compile_stats *stats, sinter_error *err)
{
	*out = NULL;
	if (stats)
		memset(stats, 0, sizeof *stats);
	sinter_status st = api_need_shaped(m, err);
	if (st)
		return st;
	const char *mode = o && o->mode ? o->mode : "default";
	if (strcmp(mode, "default") && strcmp(mode, "reduce-overhead"))
		return api_failf(err, SINTER_E_USAGE, "mode '%s' on ref: the reference interpreter takes default", mode);
	api_ref *r = calloc(1, sizeof *r);
	if (!r)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	r->device = API_DEV_REF;
	r->m = (sinter_model *)m;
	if ((st = api_state_init(&r->st, m->g, err))) {
		free(r);
		return st;
	}
	pthread_mutex_init(&r->lock, NULL);
	if (stats)
		stats->steps = m->g->nnodes;
	*out = (sinter_compiled *)r;
	return SINTER_OK;
}

static api_ref *ref_of(const sinter_compiled *c)
{
	return (api_ref *)(void *)c;
}

/* ---- dispatch between the host devices ---- */

static bool is_ref(const sinter_compiled *c)
{
	return api_device_of(c) == API_DEV_REF;
}

size_t api_host_num_inputs(const sinter_compiled *c)
{
	return is_ref(c) ? sinter_model_num_inputs(ref_of(c)->m) : api_cpu_num_inputs(c);
}

size_t api_host_num_outputs(const sinter_compiled *c)
{
	return is_ref(c) ? sinter_model_num_outputs(ref_of(c)->m) : api_cpu_num_outputs(c);
}

sinter_status api_host_input(const sinter_compiled *c, size_t i, sinter_tensor *d, sinter_error *err)
{
	return is_ref(c) ? sinter_model_input(ref_of(c)->m, i, d, err) : api_cpu_input(c, i, d, err);
}

sinter_status api_host_output(const sinter_compiled *c, size_t i, sinter_tensor *d, sinter_error *err)
{
	return is_ref(c) ? sinter_model_output(ref_of(c)->m, i, d, err) : api_cpu_output(c, i, d, err);
}

void api_host_free(sinter_compiled *c)
{
	if (!c)
		return;
	if (!is_ref(c)) {
		api_cpu_free(c);
		return;
	}
	api_ref *r = ref_of(c);
	api_state_free(&r->st);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

sinter_status api_host_run(sinter_compiled *c, const sinter_tensor *inputs, size_t n, sinter_tensor **outputs,
			   sinter_error *err)
{
	if (!is_ref(c))
		return api_cpu_run(c, inputs, n, outputs, err);
	api_ref *r = ref_of(c);
	pthread_mutex_lock(&r->lock);
	sinter_status st = api_run_ref(r->m, inputs, n, &r->st, outputs, err);
	pthread_mutex_unlock(&r->lock);
	return st;
}

sinter_status api_host_bench(sinter_compiled *c, int warmup, int iters, double *ms, sinter_error *err)
{
	if (!is_ref(c))
		return api_cpu_bench(c, warmup, iters, ms, err);
	return api_failf(err, SINTER_E_USAGE, "bench on ref: the reference interpreter is not timed (run it)");
}

/* ---- the public state functions ---- */

/* c's state and the lock its runs hold (NULL: none to take). */
static sinter_status state_of(sinter_compiled *c, api_state **out, pthread_mutex_t **lock, sinter_error *err)
{
	*out = NULL;
	*lock = NULL;
	if (!c)
		return api_failf(err, SINTER_E_USAGE, "no compiled model");
	if (is_ref(c)) {
		*lock = &ref_of(c)->lock;
		*out = &ref_of(c)->st;
		return SINTER_OK;
	}
	*out = api_device_of(c) == API_DEV_CPU ? api_cpu_state(c) : api_cuda_state(c);
	if (!*out)
		return api_failf(err, SINTER_E_USAGE, "state on %s is not built in this build",
				 sinter_device_name(sinter_compiled_device(c)));
	return SINTER_OK;
}

sinter_status sinter_compiled_state_read(sinter_compiled *c, sinter_tensor **states, size_t *n, sinter_error *err)
{
	*states = NULL;
	*n = 0;
	pthread_mutex_t *lock;
	api_state *s;
	sinter_status st = state_of(c, &s, &lock, err);
	if (st)
		return st;
	if (lock)
		pthread_mutex_lock(lock);
	sinter_tensor *ts = calloc(s->n ? s->n : 1, sizeof *ts);
	bool ok = ts != NULL;
	for (uint32_t k = 0; ok && k < s->n; k++) {
		ts[k] = s->t[k];
		ts[k].name = strdup(s->t[k].name);
		ts[k].data = malloc(s->t[k].nbytes ? s->t[k].nbytes : 1);
		ok = ts[k].name && ts[k].data;
		if (ok && s->t[k].nbytes)
			memcpy(ts[k].data, s->t[k].data, s->t[k].nbytes);
	}
	uint32_t count = s->n;
	if (lock)
		pthread_mutex_unlock(lock);
	if (!ok) {
		sinter_tensors_free(ts, count);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	*states = ts;
	*n = count;
	return SINTER_OK;
}

sinter_status sinter_compiled_state_write(sinter_compiled *c, const sinter_tensor *states, size_t n,
					  sinter_error *err)
{
	pthread_mutex_t *lock;
	api_state *s;
	sinter_status st = state_of(c, &s, &lock, err);
	if (st)
		return st;
	/* every tensor checked before any is written: all or nothing */
	for (size_t i = 0; i < n; i++) {
		const sinter_tensor *t = &states[i];
		uint32_t k = 0;
		while (k < s->n && (!t->name || strcmp(t->name, s->t[k].name)))
			k++;
		if (k == s->n)
			return api_failf(err, SINTER_E_INPUT, "state_write: the model has no state named '%s'",
					 t->name ? t->name : "(unnamed)");
		bool same = t->dtype == s->t[k].dtype && t->rank == s->t[k].rank;
		for (int d = 0; same && d < t->rank; d++)
			same = t->shape[d] == s->t[k].shape[d];
		if (!same || !t->data || t->nbytes < s->t[k].nbytes)
			return api_failf(err, SINTER_E_INPUT,
					 "state_write: '%s' differs from the state's dtype or shape, or holds fewer "
					 "than its %zu bytes",
					 t->name, s->t[k].nbytes);
	}
	if (lock)
		pthread_mutex_lock(lock);
	for (size_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < s->n; k++)
			if (!strcmp(states[i].name, s->t[k].name) && s->t[k].nbytes)
				memcpy(s->t[k].data, states[i].data, s->t[k].nbytes);
	if (lock)
		pthread_mutex_unlock(lock);
	return SINTER_OK;
}

sinter_status sinter_compiled_state_reset(sinter_compiled *c, sinter_error *err)
{
	pthread_mutex_t *lock;
	api_state *s;
	sinter_status st = state_of(c, &s, &lock, err);
	if (st)
		return st;
	if (lock)
		pthread_mutex_lock(lock);
	for (uint32_t k = 0; k < s->n; k++)
		if (s->t[k].nbytes)
			memset(s->t[k].data, 0, s->t[k].nbytes);
	if (lock)
		pthread_mutex_unlock(lock);
	return SINTER_OK;
}
