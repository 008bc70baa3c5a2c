/* cuda_run.c: running a compiled model on the cuda device: its inputs and
 * outputs, the plan slot for the inputs' shapes (compiled on first use),
 * runs on host or device memory, benchmarking and profiling. */
#include "api/cuda_compiled.h"
#include "api/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- running ---- */

size_t sinter_compiled_num_inputs(const sinter_compiled *c)
{
	if (api_device_of(c) != API_DEV_CUDA) /* cpu or ref */
		return api_host_num_inputs(c);
	return c->desc ? sinter_model_num_inputs(c->desc) : c->last ? c->last->plan->ninputs : 0;
}

size_t sinter_compiled_num_outputs(const sinter_compiled *c)
{
	if (api_device_of(c) != API_DEV_CUDA) /* cpu or ref */
		return api_host_num_outputs(c);
	return c->desc ? sinter_model_num_outputs(c->desc) : c->last ? c->last->plan->noutputs : 0;
}

static void describe_io(const cg_io *io, sinter_tensor *d)
{
	memset(d, 0, sizeof *d);
	d->name = io->name;
	d->dtype = (sinter_dtype)io->dtype;
	d->rank = io->rank;
	memcpy(d->shape, io->shape, sizeof d->shape);
	size_t n = 1;
	for (int k = 0; k < io->rank; k++)
		n *= (size_t)io->shape[k];
	d->nbytes = n * ir_dtype_size(io->dtype);
}

sinter_status sinter_compiled_input(const sinter_compiled *c, size_t i, sinter_tensor *d, sinter_error *err)
{
	if (api_device_of(c) != API_DEV_CUDA) /* cpu or ref */
		return api_host_input(c, i, d, err);
	if (c->desc)
		return sinter_model_input(c->desc, i, d, err);
	if (!c->last || i >= c->last->plan->ninputs)
		return api_failf(err, SINTER_E_USAGE, "no input %zu", i);
	describe_io(&c->last->plan->inputs[i], d);
	return SINTER_OK;
}

/* The input of t matching plan input i: by name, else by position. */
static const sinter_tensor *match_input(const cg_io *io, uint32_t i, const sinter_tensor *ts, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (ts[k].name && io->name[0] && !strcmp(ts[k].name, io->name))
			return &ts[k];
	if (i < n && (!ts[i].name || !ts[i].name[0] || !io->name[0]))
		return &ts[i];
	return NULL;
}

/* The slot for these inputs: the only one, or (unbound symbols) the one
 * for the values they bind, built on first use. */
static sinter_status slot_for(sinter_compiled *c, const sinter_tensor *ins, size_t nin, slot **out, sinter_error *err)
{
	if (!c->nsyms) {
		*out = c->last;
		return c->last ? SINTER_OK : api_failf(err, SINTER_E_INTERNAL, "no plan loaded");
	}
	int64_t vals[16];
	for (int k = 0; k < 16; k++)
		vals[k] = -1;
	const ir_graph *g = c->desc->g;
	for (uint32_t i = 0; i < api_user_inputs(g); i++) { /* states have no symbols (compile refuses) */
		const ir_node *in = &g->nodes[g->inputs[i]];
		const sinter_tensor *t = NULL;
		for (size_t k = 0; k < nin && !t; k++)
			if (ins[k].name && in->name && !strcmp(ins[k].name, in->name))
				t = &ins[k];
		if (!t && i < nin && (!ins[i].name || !ins[i].name[0]))
			t = &ins[i];
		if (!t) {
			char have[512];
			api_list_tensors(ins, nin, have, sizeof have);
			return api_failf(err, SINTER_E_INPUT, "no tensor for input %%%s; the inputs hold: %s",
					 in->name ? in->name : "?", have);
		}
		if (t->rank != in->shape.rank)
			return api_failf(err, SINTER_E_INPUT, "input %%%s: rank %d, the model takes rank %d",
					 in->name ? in->name : "?", (int)t->rank, in->shape.rank);
		for (int d = 0; d < in->shape.rank; d++) {
			if (!IR_IS_SYM(in->shape.d[d]))
				continue;
			uint32_t id = IR_SYM_ID(in->shape.d[d]);
			if (id >= 16)
				continue;
			if (vals[id] >= 0 && vals[id] != t->shape[d])
				return api_failf(err, SINTER_E_INPUT, "symbol %s is %lld and %lld in the inputs",
						 c->syms[id], (long long)vals[id], (long long)t->shape[d]);
			vals[id] = t->shape[d];
		}
	}
	for (size_t i = 0; i < c->nslots; i++)
		if (!memcmp(c->slots[i].vals, vals, sizeof vals)) {
			c->slots[i].used = ++c->tick;
			*out = c->last = &c->slots[i];
			return SINTER_OK;
		}
	/* first use of these values: the model loaded again, bound */
	sinter_shape_binding binds[16];
	size_t nb = 0;
	for (uint32_t k = 0; k < c->nsyms; k++)
		if (vals[k] >= 0)
			binds[nb++] = (sinter_shape_binding){c->syms[k], vals[k]};
	sinter_load_options so;
	sinter_load_options_init(&so);
	so.shapes = binds;
	so.nshapes = nb;
	sinter_model *m = NULL;
	sinter_status st = sinter_model_load(c->path, &so, &m, err);
	if (!st && c->wsrc == API_W_FILE)
		st = sinter_model_load_weights(m, (const char *const *)c->wfiles, c->nwfiles, c->wprefix, err);
	else if (!st && c->wsrc == API_W_RANDOM)
		st = sinter_model_init_random(m, c->seed, err);
	else if (!st && c->wsrc == API_W_NONE)
		st = sinter_model_load_weights(m, NULL, 0, NULL, err);
	sinter_compile_stats s = {0};
	slot *sl = NULL;
	if (!st)
		st = api_cuda_compile_bound(c, m, vals, &s, &sl, err);
	sinter_model_free(m);
	if (st)
		return st;
	*out = c->last = sl;
	return SINTER_OK;
}

sinter_status sinter_compiled_run(sinter_compiled *c, const sinter_tensor *inputs, size_t ninputs,
				  sinter_tensor **outputs, sinter_error *err)
{
	if (api_device_of(c) != API_DEV_CUDA) /* cpu or ref */
		return api_host_run(c, inputs, ninputs, outputs, err);
	*outputs = NULL;
	/* the defaults of the inputs not given (an ONNX input's initializer) */
	sinter_tensor *all = NULL;
	size_t nall = ninputs;
	sinter_status st = c->desc ? api_with_defaults(c->desc, c->desc->g, inputs, ninputs, &all, &nall, err) : SINTER_OK;
	if (st)
		return st;
	if (all) {
		st = sinter_compiled_run(c, all, nall, outputs, err);
		free(all);
		return st;
	}
	slot *sl;
	st = slot_for(c, inputs, ninputs, &sl, err);
	if (st)
		return st;
	const cg_plan *p = sl->plan;
	const void **ins = calloc(p->ninputs ? p->ninputs : 1, sizeof *ins);
	void **outs = calloc(p->noutputs ? p->noutputs : 1, sizeof *outs);
	sinter_tensor *res = calloc(p->noutputs ? p->noutputs : 1, sizeof *res);
	if (!ins || !outs || !res) {
		st = api_failf(err, SINTER_E_INTERNAL, "out of memory");
		goto done;
	}
	/* the states: the last inputs and outputs, copied in and out */
	uint32_t nst = c->st.n, nres = p->noutputs - nst;
	for (uint32_t i = 0; i < p->ninputs; i++) {
		const cg_io *io = &p->inputs[i];
		if (i >= p->ninputs - nst) {
			ins[i] = c->st.t[i - (p->ninputs - nst)].data;
			continue;
		}
		const sinter_tensor *t = match_input(io, i, inputs, ninputs);
		bool same = t && (ir_dtype)t->dtype == io->dtype && t->rank == io->rank;
		for (int d = 0; same && d < io->rank; d++)
			same = t->shape[d] == io->shape[d];
		if (!t) {
			char have[512];
			api_list_tensors(inputs, ninputs, have, sizeof have);
			st = api_failf(err, SINTER_E_INPUT, "no tensor for input %%%s; the inputs hold: %s", io->name, have);
			goto done;
		}
		if (!same) {
			st = api_failf(err, SINTER_E_INPUT, "input %%%s: dtype or shape differs from the model's", io->name);
			goto done;
		}
		if (!t->data || t->nbytes < p->bufs[io->buf].bytes) {
			st = api_failf(err, SINTER_E_INPUT, "input %%%s: %zu bytes of data, it needs %llu", io->name,
				       t->nbytes, (unsigned long long)p->bufs[io->buf].bytes);
			goto done;
		}
		ins[i] = t->data;
	}
	for (uint32_t i = 0; i < p->noutputs; i++) {
		const cg_io *io = &p->outputs[i];
		uint64_t nb = p->bufs[io->buf].bytes;
		char name[32];
		snprintf(name, sizeof name, "output%u", i);
		res[i].name = strdup(io->name[0] ? io->name : name);
		res[i].dtype = (sinter_dtype)io->dtype;
		res[i].rank = io->rank;
		memcpy(res[i].shape, io->shape, sizeof res[i].shape);
		res[i].nbytes = (size_t)nb;
		res[i].data = malloc(nb ? nb : 1);
		outs[i] = res[i].data;
		if (!res[i].name || !res[i].data) {
			st = api_failf(err, SINTER_E_INTERNAL, "out of memory");
			goto done;
		}
	}
	sn_err e = {0};
	double t0 = sn_now();
	if (rt_model_run(sl->rm, (const void *const *)ins, outs, &e) != SN_OK)
		st = api_fail(err, &e);
	else
		sn_stage("run (cuda)", t0, "%u steps, inputs copied in and outputs out", p->nsteps);
	for (uint32_t k = 0; !st && k < nst; k++) { /* the new values become the states */
		free(c->st.t[k].data);
		c->st.t[k].data = res[nres + k].data;
		res[nres + k].data = NULL;
		free((char *)res[nres + k].name);
		res[nres + k].name = NULL;
	}
done:
	if (st) {
		sinter_tensors_free(res, p->noutputs);
		res = NULL;
	}
	*outputs = res;
	free(ins);
	free(outs);
	return st;
}

/* ---- running on device memory (sinter_compiled_run_device) ---- */

sinter_status sinter_compiled_output(const sinter_compiled *c, size_t i, sinter_tensor *d, sinter_error *err)
{
	if (api_device_of(c) != API_DEV_CUDA) /* cpu or ref */
		return api_host_output(c, i, d, err);
	if (c->desc)
		return sinter_model_output(c->desc, i, d, err);
	if (!c->last || i >= c->last->plan->noutputs)
		return api_failf(err, SINTER_E_USAGE, "no output %zu", i);
	describe_io(&c->last->plan->outputs[i], d);
	return SINTER_OK;
}

/* t matches io exactly (dtype, shape) and holds its bytes. */
static sinter_status same_io(const cg_io *io, const sinter_tensor *t, uint64_t bytes, const char *what,
			     sinter_error *err)
{
	bool same = (ir_dtype)t->dtype == io->dtype && t->rank == io->rank;
	for (int d = 0; same && d < io->rank; d++)
		same = t->shape[d] == io->shape[d];
	if (!same)
		return api_failf(err, SINTER_E_INPUT, "%s %%%s: dtype or shape differs from the model's", what, io->name);
	if (!t->data || t->nbytes < bytes)
		return api_failf(err, SINTER_E_INPUT, "%s %%%s: %zu bytes of device memory, it needs %llu", what,
				 io->name, t->nbytes, (unsigned long long)bytes);
	return SINTER_OK;
}

sinter_status sinter_compiled_run_device(sinter_compiled *c, const sinter_tensor *inputs, size_t ninputs,
					 const sinter_tensor *outputs, size_t noutputs, void *stream,
					 sinter_error *err)
{
	if (api_device_of(c) != API_DEV_CUDA)
		return api_failf(err, SINTER_E_USAGE, "run_device runs on CUDA memory: this model is compiled for %s",
				 sinter_device_name(sinter_compiled_device(c)));
	if (c->st.n)
		return api_failf(err, SINTER_E_USAGE, "run_device of a model with state is not built yet (sinter_compiled_run "
				 "keeps its state)");
	slot *sl;
	sinter_status st = slot_for(c, inputs, ninputs, &sl, err);
	if (st)
		return st;
	const cg_plan *p = sl->plan;
	if (noutputs != p->noutputs)
		return api_failf(err, SINTER_E_USAGE, "%zu output tensors given, the model has %u", noutputs,
				 p->noutputs);
	CUdeviceptr *ins = calloc(p->ninputs + p->noutputs + 1, sizeof *ins), *outs = ins + p->ninputs;
	if (!ins)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	for (uint32_t i = 0; !st && i < p->ninputs; i++) {
		const cg_io *io = &p->inputs[i];
		const sinter_tensor *t = match_input(io, i, inputs, ninputs);
		char have[512];
		if (!t && (api_list_tensors(inputs, ninputs, have, sizeof have), 1))
			st = api_failf(err, SINTER_E_INPUT, "no tensor for input %%%s; the inputs hold: %s", io->name,
				       have);
		else if (!(st = same_io(io, t, p->bufs[io->buf].bytes, "input", err)))
			ins[i] = (CUdeviceptr)(uintptr_t)t->data;
	}
	for (uint32_t i = 0; !st && i < p->noutputs; i++) {
		const cg_io *io = &p->outputs[i];
		if (!(st = same_io(io, &outputs[i], p->bufs[io->buf].bytes, "output", err)))
			outs[i] = (CUdeviceptr)(uintptr_t)outputs[i].data;
	}
	sn_err e = {0};
	if (!st && rt_model_run_device(sl->rm, ins, outs, (CUstream)stream, &e) != SN_OK)
		st = api_fail(err, &e);
	free(ins);
	return st;
}

sinter_status sinter_compiled_bench(sinter_compiled *c, int warmup, int iters, double *ms,
				    sinter_error *err)
{
	if (api_device_of(c) != API_DEV_CUDA) /* cpu or ref */
		return api_host_bench(c, warmup, iters, ms, err);
	if (!c->last)
		return api_failf(err, SINTER_E_USAGE, "run the model once before timing it");
	sn_err e = {0};
	return rt_model_time(c->last->rm, warmup, iters, ms, &e) == SN_OK ? SINTER_OK : api_fail(err, &e);
}

sinter_status sinter_compiled_profile(sinter_compiled *c, int iters, sinter_profile_entry **entries,
				      size_t *n, sinter_error *err)
{
	if (api_device_of(c) == API_DEV_CPU)
		return api_cpu_profile(c, iters, entries, n, err);
	_Static_assert(sizeof(sinter_profile_entry) == sizeof(rt_prof), "one layout");
	if (api_device_of(c) == API_DEV_REF)
		return api_failf(err, SINTER_E_USAGE, "profile on ref: the reference interpreter is not timed");
	if (!c->last)
		return api_failf(err, SINTER_E_USAGE, "run the model once before profiling it");
	sn_err e = {0};
	rt_prof *p = NULL;
	double t0 = sn_now();
	if (rt_model_profile(c->last->rm, iters, &p, n, &e) != SN_OK)
		return api_fail(err, &e);
	*entries = (sinter_profile_entry *)p; /* same fields in the same order */
	api_trace_profile(*entries, *n, t0, c->dev->name);
	return SINTER_OK;
}
