/* tensors.c: the public API's host tensors: random inputs, matching a caller's
 * inputs to a graph, and the reference interpreter's runs. */
#include "api/model.h"
#include "api/observe.h"
#include "api/state.h"
#include "codegen/cg.h"
#include "ir/log.h"

#include "frontend/npy.h"
#include "frontend/safetensors.h"
#include "frontend/onnx.h"
#include "frontend/sir.h"
#include "ir/file.h"
#include "ir/init.h"
#include "ir/ir.h"
#include "runtime/kcache.h"
#include "ir/ref/ref.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tensors ---- */

void sinter_tensors_free(sinter_tensor *ts, size_t n)
{
	if (!ts)
		return;
	for (size_t i = 0; i < n; i++) {
		free(ts[i].data);
		free((char *)ts[i].name);
	}
	free(ts);
}

void sinter_temp_files_remove(void)
{
	sn_out_remove_temps();
}

int api_set_tensor(sinter_tensor *t, const char *name, ir_dtype dt, const ir_shape *s)
{
	memset(t, 0, sizeof *t);
	t->name = strdup(name ? name : "");
	t->dtype = (sinter_dtype)dt;
	t->rank = s->rank;
	memcpy(t->shape, s->d, sizeof t->shape);
	t->nbytes = (size_t)ir_numel(s) * ir_dtype_size(dt);
	t->data = malloc(t->nbytes ? t->nbytes : 1);
	return t->name && t->data ? SN_OK : SN_EINTERNAL;
}

/* ts[0..n) without the inputs that have a default (they take it): the
 * count kept, in order. */
static size_t drop_defaulted(const sinter_model *m, sinter_tensor *ts, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		bool dflt = false;
		for (size_t j = 0; j < m->ndefaults && !dflt; j++)
			dflt = !strcmp(m->defaults[j].name, ts[i].name);
		if (dflt) {
			free((char *)ts[i].name);
			free(ts[i].data);
		} else {
			ts[k++] = ts[i];
		}
	}
	return k;
}

sinter_status sinter_model_random_inputs(const sinter_model *m, uint64_t seed,
				   sinter_tensor **inputs, size_t *n, sinter_error *err)
{
	const ir_graph *g = m->g;
	*inputs = NULL;
	*n = 0;
	sinter_status st = api_need_shaped(m, err);
	if (st != SINTER_OK)
		return st;
	uint32_t nin = api_user_inputs(g); /* states start zeroed, not random */
	sinter_tensor *ts = calloc(nin ? nin : 1, sizeof *ts);
	if (!ts)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	for (uint32_t i = 0; i < nin; i++) {
		const ir_node *in = &g->nodes[g->inputs[i]];
		if (api_set_tensor(&ts[i], in->name, in->dtype, &in->shape) != SN_OK) {
			sinter_tensors_free(ts, i + 1);
			return api_failf(err, SINTER_E_INTERNAL, "out of memory");
		}
		ir_tensor t = {in->dtype, in->shape, ts[i].data, ts[i].nbytes};
		ir_init_tensor(&t, in->name ? in->name : "", seed, ir_init_index_limit(g, g->inputs[i]));
	}
	*inputs = ts;
	*n = drop_defaulted(m, ts, nin);
	return SINTER_OK;
}

sinter_status sinter_tensors_random(const sinter_tensor *descs, size_t n, uint64_t seed, sinter_tensor **out,
				    sinter_error *err)
{
	*out = NULL;
	sinter_tensor *ts = calloc(n ? n : 1, sizeof *ts);
	if (!ts)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const sinter_tensor *d = &descs[i];
		ir_shape s = {.rank = d->rank};
		bool ok = (unsigned)d->dtype < IR_NDTYPES && d->rank >= 0 && d->rank <= IR_MAX_RANK;
		for (int k = 0; ok && k < d->rank; k++)
			ok = (s.d[k] = d->shape[k]) >= 0;
		if (!ok) {
			sinter_tensors_free(ts, i);
			return api_failf(err, SINTER_E_INPUT, "tensor %zu: bad description", i);
		}
		if (api_set_tensor(&ts[i], d->name, (ir_dtype)d->dtype, &s) != SN_OK) {
			sinter_tensors_free(ts, i + 1);
			return api_failf(err, SINTER_E_INTERNAL, "out of memory");
		}
		ir_tensor t = {(ir_dtype)d->dtype, s, ts[i].data, ts[i].nbytes};
		ir_init_tensor(&t, d->name ? d->name : "", seed, 10);
	}
	*out = ts;
	return SINTER_OK;
}

/* name as the ONNX importer once sanitized it (characters outside
 * [A-Za-z0-9_.] become '_', a leading digit or an empty name gets a 'v'),
 * into out[cap]; false if it does not fit. */
static bool sanitized(const char *name, char *out, size_t cap)
{
	size_t k = 0;
	if (!name[0] || (name[0] >= '0' && name[0] <= '9'))
		out[k++] = 'v';
	for (; *name; name++) {
		char ch = *name;
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
			  ch == '_' || ch == '.';
		if (k + 1 >= cap)
			return false;
		out[k++] = ok ? ch : '_';
	}
	out[k] = 0;
	return true;
}

/* Whether tensor name t and input name v agree once both are sanitized:
 * an inputs file written with either spelling (input:0 or input_0) binds
 * to an input named either way (.sir files imported before names were
 * kept verbatim have the second). */
static bool same_sanitized(const char *t, const char *v)
{
	char a[512], b[512];
	return sanitized(t, a, sizeof a) && sanitized(v, b, sizeof b) && strcmp(a, b) == 0;
}

static const sinter_tensor *find_input(const sinter_tensor *ts, size_t n, const char *name, size_t pos)
{
	for (size_t i = 0; i < n; i++)
		if (ts[i].name && name && strcmp(ts[i].name, name) == 0)
			return &ts[i];
	for (size_t i = 0; i < n; i++)
		if (ts[i].name && name && same_sanitized(ts[i].name, name))
			return &ts[i];
	if (pos < n && (!ts[pos].name || !ts[pos].name[0]))
		return &ts[pos];
	return NULL;
}

sinter_status api_with_defaults(const sinter_model *m, const ir_graph *g, const sinter_tensor *inputs, size_t n,
				sinter_tensor **all, size_t *nall, sinter_error *err)
{
	*all = NULL;
	*nall = n;
	for (size_t k = 0; m && k < m->ndefaults; k++) {
		const sinter_tensor *d = &m->defaults[k];
		uint32_t pos = 0;
		while (pos < g->ninputs && (!g->nodes[g->inputs[pos]].name || strcmp(g->nodes[g->inputs[pos]].name, d->name)))
			pos++;
		if (pos == g->ninputs || find_input(inputs, n, d->name, pos))
			continue; /* not an input of g, or given */
		if (!*all) {
			if (!(*all = malloc((n + m->ndefaults) * sizeof **all)))
				return api_failf(err, SINTER_E_INTERNAL, "out of memory");
			if (n)
				memcpy(*all, inputs, n * sizeof **all);
		}
		(*all)[(*nall)++] = *d;
	}
	return SINTER_OK;
}

sinter_status api_bind_with_defaults(const sinter_model *m, const ir_graph *g, const sinter_tensor *inputs, size_t n,
				     ir_tensor *vals, sinter_error *err)
{
	sinter_tensor *all;
	size_t nall;
	sinter_status st = api_with_defaults(m, g, inputs, n, &all, &nall, err);
	if (!st)
		st = api_bind_inputs(g, all ? all : inputs, nall, vals, err);
	free(all);
	return st;
}

sinter_status api_defaults_copy(sinter_model *dst, const sinter_model *src, sinter_error *err)
{
	if (!src->ndefaults)
		return SINTER_OK;
	if (!(dst->defaults = calloc(src->ndefaults, sizeof *dst->defaults)))
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	for (size_t k = 0; k < src->ndefaults; k++) {
		const sinter_tensor *s = &src->defaults[k];
		ir_shape sh = {.rank = s->rank};
		memcpy(sh.d, s->shape, sizeof sh.d);
		dst->ndefaults = k + 1;
		if (api_set_tensor(&dst->defaults[k], s->name, (ir_dtype)s->dtype, &sh) != SN_OK)
			return api_failf(err, SINTER_E_INTERNAL, "out of memory");
		memcpy(dst->defaults[k].data, s->data, s->nbytes);
	}
	return SINTER_OK;
}

/* "a f32[2,3], b i64[4]" (the tensors given), or "none", into out. */
static void list_tensors(const sinter_tensor *ts, size_t n, char *out, size_t cap)
{
	size_t k = 0;
	out[0] = 0;
	if (!n)
		snprintf(out, cap, "none");
	for (size_t i = 0; i < n && k + 1 < cap; i++) {
		int w = snprintf(out + k, cap - k, "%s%s %s[", i ? ", " : "", ts[i].name ? ts[i].name : "(unnamed)",
				 (unsigned)ts[i].dtype < IR_NDTYPES ? ir_dtype_name((ir_dtype)ts[i].dtype) : "?");
		for (int d = 0; w > 0 && d < ts[i].rank && d < IR_MAX_RANK && k + (size_t)w + 1 < cap; d++)
			w += snprintf(out + k + (size_t)w, cap - k - (size_t)w, "%s%lld", d ? "," : "",
				      (long long)ts[i].shape[d]);
		if (w > 0 && k + (size_t)w + 1 < cap)
			w += snprintf(out + k + (size_t)w, cap - k - (size_t)w, "]");
		if (w < 0)
			break;
		k += (size_t)w;
		if (k >= cap)
			k = cap - 1;
	}
}

void api_list_tensors(const sinter_tensor *ts, size_t n, char *out, size_t cap)
{
	list_tensors(ts, n, out, cap);
}

/* The reference interpreter's peak: the bytes of the values it computes
 * that are live at once (ref_run frees each after its last reader; params,
 * inputs and constants are held already), checked against what this
 * process may still allocate. Each value fitting is not enough: values
 * that together do not fit ended in the OOM killer. */
static sinter_status check_ref_memory(const ir_graph *g, sinter_error *err)
{
	uint32_t *last = calloc(g->nnodes ? g->nnodes : 1, sizeof *last);
	if (!last)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	for (uint32_t i = 0; i < g->nnodes; i++)
		for (uint32_t k = 0; k < g->nodes[i].nin; k++)
			if (g->nodes[i].in[k] < g->nnodes)
				last[g->nodes[i].in[k]] = i;
	for (uint32_t i = 0; i < g->noutputs; i++)
		if (g->outputs[i] < g->nnodes)
			last[g->outputs[i]] = UINT32_MAX;
	uint64_t live = 0, peak = 0;
	uint32_t at = 0;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		if (n->op == IR_OP_input || n->op == IR_OP_param || (n->op == IR_OP_const && n->data))
			continue;
		int64_t k = ir_numel(&n->shape);
		live += k > 0 ? (uint64_t)k * ir_dtype_size(n->dtype) : 0; /* check_memory bounded each */
		if (live > peak)
			peak = live, at = i;
		for (uint32_t j = 0; j <= n->nin; j++) { /* its operands read for the last time, then itself unread */
			uint32_t r = j < n->nin ? n->in[j] : i;
			const ir_node *o = &g->nodes[r];
			bool owned = !(o->op == IR_OP_input || o->op == IR_OP_param || (o->op == IR_OP_const && o->data));
			bool dead = j < n->nin ? last[r] == i : last[r] == 0;
			bool first = true; /* an operand read twice is freed once */
			for (uint32_t q = 0; q < j && j < n->nin; q++)
				first &= n->in[q] != r;
			int64_t rk = ir_numel(&o->shape);
			if (owned && dead && first && rk > 0)
				live -= (uint64_t)rk * ir_dtype_size(o->dtype);
		}
	}
	free(last);
	const char *limit = NULL;
	uint64_t room = sn_mem_available(&limit);
	if (peak <= room)
		return SINTER_OK;
	char need[32], have[32];
	sn_fmt_bytes(need, peak);
	sn_fmt_bytes(have, room);
	const ir_node *n = &g->nodes[at];
	return api_failf(err, SINTER_E_ENV,
			 "%s%sthe reference interpreter needs %" PRIu64 " bytes (%s) live at once (at %%%s, node %u of "
			 "%u), more than %s allows (%" PRIu64 " bytes, %s): refused before running",
			 g->path ? g->path : "", g->path ? ": " : "", peak, need, n->name ? n->name : "?", at,
			 g->nnodes, limit, room, have);
}

sinter_status sinter_model_run_ref(sinter_model *m, const sinter_tensor *inputs, size_t ninputs,
			     sinter_tensor **outputs, sinter_error *err)
{
	return api_run_ref(m, inputs, ninputs, NULL, outputs, err);
}

sinter_status api_run_ref(sinter_model *m, const sinter_tensor *inputs, size_t ninputs, api_state *state,
			  sinter_tensor **outputs, sinter_error *err)
{
	const ir_graph *g = m->g;
	*outputs = NULL;
	sinter_status st = api_need_shaped(m, err);
	if (st != SINTER_OK)
		return st;
	st = api_materialize(m, err);
	if (st != SINTER_OK)
		return st;
	st = check_ref_memory(g, err);
	if (st != SINTER_OK)
		return st;
	ir_tensor *vals;
	st = api_param_vals(g, m->ws, &vals, err);
	if (st != SINTER_OK)
		return st;
	st = api_bind_with_defaults(m, g, inputs, ninputs, vals, err);
	if (st != SINTER_OK) {
		api_vals_free(g, m->ws, vals);
		return st;
	}
	api_state once = {0}; /* no state given: zeroed for this run */
	if (!state && (st = api_state_init(&once, g, err))) {
		api_vals_free(g, m->ws, vals);
		return st;
	}
	api_state_bind(state ? state : &once, g, vals);
	ir_tensor *outs = calloc(g->noutputs ? g->noutputs : 1, sizeof *outs);
	if (!outs) {
		api_vals_free(g, m->ws, vals);
		api_state_free(&once);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	sn_err e = {0};
	double t0 = sn_now();
	int rc = ref_run(g, vals, outs, &e);
	if (rc == SN_OK)
		sn_stage("run (ref)", t0, "%u nodes", g->nnodes);
	api_vals_free(g, m->ws, vals);
	api_state_free(&once);
	if (rc != SN_OK) {
		free(outs);
		return api_fail(err, &e);
	}
	if (state) /* the new values become the state (api_wrap_outputs frees them otherwise) */
		api_state_take(state, g, outs);
	*outputs = api_wrap_outputs(g, outs);
	free(outs);
	return *outputs ? SINTER_OK : api_failf(err, SINTER_E_INTERNAL, "out of memory");
}

sinter_status api_param_vals(const ir_graph *g, const ir_wstore *ws, ir_tensor **out,
			     sinter_error *err)
{
	ir_tensor *vals = calloc(g->nnodes ? g->nnodes : 1, sizeof *vals);
	if (!vals)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	sn_err e = {0};
	for (uint32_t i = 0; i < g->nnodes && !e.code; i++) {
		const ir_node *n = &g->nodes[i];
		vals[i].dtype = n->dtype;
		vals[i].shape = n->shape;
		if (n->op != IR_OP_param)
			continue;
		const ir_tensor *t = ir_ws_get(ws, n->pname);
		size_t nb = (size_t)ir_numel(&n->shape) * ir_dtype_size(n->dtype);
		vals[i].nbytes = nb;
		if (t && t->dtype == n->dtype && ir_shape_eq(&t->shape, &n->shape)) {
			vals[i].data = t->data; /* borrowed */
			continue;
		}
		if (!(vals[i].data = malloc(nb ? nb : 1)))
			sn_errf(&e, SN_EINTERNAL, "out of memory");
		else
			ir_ws_read_as(ws, n->pname, n->dtype, &n->shape, vals[i].data, &e);
	}
	if (e.code) {
		api_vals_free(g, ws, vals);
		return api_fail(err, &e);
	}
	*out = vals;
	return SINTER_OK;
}

void api_vals_free(const ir_graph *g, const ir_wstore *ws, ir_tensor *vals)
{
	if (!vals)
		return;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		if (n->op != IR_OP_param || !vals[i].data)
			continue;
		const ir_tensor *t = ir_ws_get(ws, n->pname);
		if (!t || t->data != vals[i].data)
			free(vals[i].data);
	}
	free(vals);
}

sinter_tensor *api_wrap_outputs(const ir_graph *g, ir_tensor *outs)
{
	uint32_t nres = api_user_outputs(g);
	for (uint32_t i = nres; i < g->noutputs; i++) { /* the states' new values, not taken */
		free(outs[i].data);
		outs[i].data = NULL;
	}
	sinter_tensor *res = calloc(nres ? nres : 1, sizeof *res);
	if (!res) {
		for (uint32_t i = 0; i < nres; i++)
			free(outs[i].data);
		return NULL;
	}
	bool oom = false;
	for (uint32_t i = 0; i < nres; i++) {
		const ir_node *o = &g->nodes[g->outputs[i]];
		char name[32];
		snprintf(name, sizeof name, "output%u", i);
		res[i].name = strdup(o->name ? o->name : name);
		oom |= !res[i].name;
		res[i].dtype = (sinter_dtype)outs[i].dtype;
		res[i].rank = outs[i].shape.rank;
		memcpy(res[i].shape, outs[i].shape.d, sizeof res[i].shape);
		res[i].data = outs[i].data;
		res[i].nbytes = outs[i].nbytes;
	}
	if (oom) {
		sinter_tensors_free(res, nres);
		return NULL;
	}
	return res;
}

sinter_status api_bind_inputs(const ir_graph *g, const sinter_tensor *inputs, size_t ninputs,
			      ir_tensor *vals, sinter_error *err)
{
	for (uint32_t i = 0; i < api_user_inputs(g); i++) { /* states: api_state_bind */
		const ir_node *in = &g->nodes[g->inputs[i]];
		const sinter_tensor *t = find_input(inputs, ninputs, in->name, i);
		char want[160], have[160];
		ir_type_str(g, in->dtype, &in->shape, want, sizeof want);
		if (!t) {
			char have_list[512];
			list_tensors(inputs, ninputs, have_list, sizeof have_list);
			return api_failf(err, SINTER_E_INPUT, "no tensor for input %%%s (%s); the inputs hold: %s",
					 in->name, want, have_list);
		}
		ir_shape s = {.rank = t->rank};
		memcpy(s.d, t->shape, sizeof s.d);
		if ((unsigned)t->dtype >= IR_NDTYPES || t->rank < 0 || t->rank > IR_MAX_RANK)
			return api_failf(err, SINTER_E_INPUT, "input %%%s: bad tensor description", in->name);
		ir_type_str(g, (ir_dtype)t->dtype, &s, have, sizeof have);
		if ((ir_dtype)t->dtype != in->dtype || !ir_shape_eq(&s, &in->shape))
			return api_failf(err, SINTER_E_INPUT, "input %%%s: got %s, the model takes %s", in->name,
				     have, want);
		if (t->nbytes < (size_t)ir_numel(&s) * ir_dtype_size(in->dtype) || !t->data)
			return api_failf(err, SINTER_E_INPUT, "input %%%s: %zu bytes of data, %s needs more",
				     in->name, t->nbytes, want);
		vals[g->inputs[i]].data = t->data;
		vals[g->inputs[i]].nbytes = t->nbytes;
	}
	return SINTER_OK;
}

/* NumPy's .npy and .npz: by extension. */
