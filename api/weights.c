/* weights.c: the public API's weights: a model's params read from safetensors files
 * (and sharded checkpoints), or drawn at random, on first use. */
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

/* ---- weights ---- */

/* The files named, for messages: "A", "A and B", "A and 3 more files". */
static void files_str(const char *const *paths, size_t n, char *out, size_t cap)
{
	if (n == 1)
		snprintf(out, cap, "%s", paths[0]);
	else if (n == 2)
		snprintf(out, cap, "%s and %s", paths[0], paths[1]);
	else
		snprintf(out, cap, "%s and %zu more files", paths[0], n - 1);
}

/* Checks every param against the safetensors files (key, under prefix;
 * dtype family; shape) and, when fill, reads their values into m->ws.
 * prefix NULL: guessed when no key is in the files as it is (said on
 * stderr; *guessed, malloc'ed, gets it); "": none. read (may be NULL):
 * every file opened, shards of an index included (malloc'ed strings). */
static sinter_status read_weights(sinter_model *m, const char *const *paths, size_t np, const char *prefix,
				  bool fill, char **guessed, char ***read, size_t *nread, sinter_error *err)
{
	const ir_graph *g = m->g;
	sn_err e = {0};
	st_set *f = NULL;
	char where[1024];
	files_str(paths, np, where, sizeof where);
	if (guessed)
		*guessed = NULL;
	if (st_set_open(paths, np, &f, &e) != SN_OK)
		return api_fail(err, &e);
	size_t nk = 0;
	const char **keys = malloc((g->nnodes ? g->nnodes : 1) * sizeof *keys);
	if (!keys) {
		st_set_close(f);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].op == IR_OP_param)
			keys[nk++] = g->nodes[i].pname;
	if (!prefix) {
		const char *p1, *p2;
		int k = st_set_guess_prefix(f, keys, nk, &p1, &p2);
		if (k == 2) {
			sn_errf(&e, SN_EINPUT, "the model's params are in %s under the key prefix \"%s\" and under "
				"\"%s\": name the one to use (--weights-prefix)", where, p1, p2);
		} else if (k == 1) {
			size_t pn = strlen(p1);
			bool model_side = !strncmp(keys[0], p1, pn) && st_set_find(f, keys[0] + pn);
			if (model_side)
				sn_log(SN_LOG_WARN, "weights: the model's param keys carry the prefix \"%s\" that the keys of "
				       "%s lack: matched without it", p1, where);
			else
				sn_log(SN_LOG_WARN, "weights: the keys of %s carry the prefix \"%s\" that the model's param "
				       "keys lack: matched without it", where, p1);
			prefix = p1;
			if (guessed && !(*guessed = strdup(p1)))
				sn_errf(&e, SN_EINTERNAL, "out of memory");
		}
	}
	if (fill && !e.code && api_reset_ws(m) != SN_OK)
		sn_errf(&e, SN_EINTERNAL, "out of memory");
	size_t matched = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		matched += g->nodes[i].op == IR_OP_param && st_set_lookup(f, g->nodes[i].pname, prefix);
	for (uint32_t i = 0; i < g->nnodes && e.code == SN_OK; i++) {
		const ir_node *n = &g->nodes[i];
		if (n->op != IR_OP_param)
			continue;
		const st_entry *en = st_set_lookup(f, n->pname, prefix);
		const char *in = en && st_set_nfiles(f) > 1 ? st_path(en->file) : where;
		char want[160], have[160];
		ir_type_str(g, n->dtype, &n->shape, want, sizeof want);
		char loc[512] = "";
		if (g->path && n->line)
			snprintf(loc, sizeof loc, "%s:%u:%u: error: ", g->path, n->line, n->col);
		if (!en) {
			const st_entry *any = st_set_get(f, 0);
			if (!matched && any)
				sn_errf(&e, SN_EINPUT, "%sparam \"%s\" (%s) is not in %s, nor is any other param of the "
					"model (its keys are like \"%s\"; a prefix to strip or add can be named: "
					"--weights-prefix)", loc, n->pname, want, where, any->name);
			else
				sn_errf(&e, SN_EINPUT, "%sparam \"%s\" (%s) is not in %s", loc, n->pname, want, where);
			break;
		}
		ir_shape s = {.rank = en->rank};
		memcpy(s.d, en->shape, sizeof s.d);
		int t = st_to_ir(en->dtype);
		const char *key = strcmp(en->name, n->pname) ? en->name : NULL;
		if (!ir_shape_eq(&s, &n->shape)) {
			ir_type_str(g, t < 0 ? IR_F32 : (ir_dtype)t, &s, have, sizeof have);
			if (t < 0)
				memcpy(have, "f64", 3); /* f64 has no IR dtype; the dims are what differ */
			sn_errf(&e, SN_EINPUT, "%sparam \"%s\" is %s in %s%s%s%s, the model declares %s", loc,
				n->pname, have, in, key ? " (as \"" : "", key ? key : "", key ? "\")" : "", want);
			break;
		}
		if (st_dtype_is_float(en->dtype) != ir_dtype_is_float(n->dtype)) {
			sn_errf(&e, SN_EINPUT, "%sparam \"%s\" is %s in %s%s%s%s, the model declares %s: not converted "
				"(sinter converts among floats and among integers, never between the two)", loc,
				n->pname, st_dtype_name(en->dtype), in, key ? " (as \"" : "", key ? key : "",
				key ? "\")" : "", ir_dtype_name(n->dtype));
			break;
		}
		if (!fill)
			continue;
		size_t nb = (size_t)ir_numel(&n->shape) * ir_dtype_size(n->dtype);
		void *p = malloc(nb ? nb : 1);
		if (!p) {
			sn_errf(&e, SN_EINTERNAL, "out of memory");
			break;
		}
		sn_err re = {0};
		if (st_read_exact(en, n->dtype, p, &re) != SN_OK) {
			free(p);
			sn_errf(&e, re.code, "%sparam \"%s\" from %s: %s", loc, n->pname, in, re.msg);
			break;
		}
		ir_ws_put(m->ws, n->pname, (ir_tensor){n->dtype, n->shape, p, nb}, &e);
	}
	free(keys);
	if (read && !e.code) {
		*nread = st_set_nfiles(f);
		*read = calloc(*nread ? *nread : 1, sizeof **read);
		for (size_t i = 0; *read && i < *nread; i++)
			if (!((*read)[i] = strdup(st_set_file(f, i))))
				sn_errf(&e, SN_EINTERNAL, "out of memory");
		if (!*read)
			sn_errf(&e, SN_EINTERNAL, "out of memory");
		if (e.code)
			api_strs_free(*read, *nread);
	}
	st_set_close(f);
	if (e.code != SN_OK) {
		if (fill)
			api_reset_ws(m);
		if (guessed) {
			free(*guessed);
			*guessed = NULL;
		}
		return api_fail(err, &e);
	}
	return SINTER_OK;
}

/* Params must have concrete shapes (other values may keep symbols). */
static sinter_status params_shaped(const sinter_model *m, sinter_error *err)
{
	const ir_graph *g = m->g;
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].op == IR_OP_param && !ir_shape_concrete(&g->nodes[i].shape))
			return api_failf(err, SINTER_E_USAGE, "param \"%s\" has a symbolic shape: bind its symbols when loading the model",
					 g->nodes[i].pname);
	return SINTER_OK;
}

sinter_status sinter_model_load_weights(sinter_model *m, const char *const *paths, size_t n,
					      const char *prefix, sinter_error *err)
{
	const ir_graph *g = m->g;
	sinter_status st = params_shaped(m, err);
	if (st != SINTER_OK)
		return st;
	char *full = NULL;
	if (!n && m->onnx)
		return SINTER_OK; /* the initializers are loaded already */
	if (!n) {
		bool any = false;
		for (uint32_t i = 0; i < g->nnodes; i++)
			any |= g->nodes[i].op == IR_OP_param;
		if (!any) {
			m->weights = true;
			return SINTER_OK;
		}
		if (!g->weights)
			return api_failf(err, SINTER_E_INPUT,
				     "%s: the model has params but names no weights file (add a `weights \"FILE\"` line, name a weights file, or initialize the params randomly)",
				     g->path ? g->path : "model");
		/* The model names it: resolved inside the model's folder, never
		 * outside it (an absolute path only from the command line). */
		sn_err ce = {0};
		char what[600];
		snprintf(what, sizeof what, "%s: the weights file", g->path ? g->path : "model");
		if (sn_path_confine(m->dir, g->weights, what, &full, &ce) != SN_OK)
			return api_fail(err, &ce);
		paths = (const char *const *)&full;
		n = 1;
	}
	/* checked now, read on first use (api_materialize) */
	char *guessed = NULL, **read = NULL;
	size_t nread = 0;
	st = read_weights(m, paths, n, prefix, false, &guessed, &read, &nread, err);
	if (st == SINTER_OK) {
		char **keep = calloc(n, sizeof *keep);
		bool oom = !keep;
		for (size_t i = 0; keep && i < n; i++)
			oom |= !(keep[i] = strdup(paths[i]));
		char *pre = strdup(guessed ? guessed : prefix ? prefix : "");
		oom |= !pre;
		api_free_params(m);
		if (oom) {
			api_strs_free(keep, n);
			api_strs_free(read, nread);
			free(pre);
			st = api_failf(err, SINTER_E_INTERNAL, "out of memory");
		} else {
			m->wfiles = keep;
			m->nwfiles = n;
			m->wread = read;
			m->nwread = nread;
			m->wpath = keep[0];
			m->wprefix = pre;
			m->wsrc = API_W_FILE;
			m->weights = true;
		}
	}
	free(guessed);
	free(full);
	return st;
}

sinter_status sinter_model_init_random(sinter_model *m, uint64_t seed, sinter_error *err)
{
	sinter_status st = params_shaped(m, err);
	if (st != SINTER_OK)
		return st;
	api_free_params(m);
	m->wsrc = API_W_RANDOM;
	m->seed = seed;
	m->weights = true; /* drawn on first use (api_materialize) */
	return SINTER_OK;
}

static sinter_status fill_random(sinter_model *m, uint64_t seed, sinter_error *err)
{
	sn_err e = {0};
	if (api_reset_ws(m) != SN_OK)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	return ir_init_params(m->g, seed, m->ws, &e) == SN_OK ? SINTER_OK : api_fail(err, &e);
}

static sinter_status materialize_locked(sinter_model *m, sinter_error *err);

/* Threads sharing m for reading (sinter.h) may all get here first: one reads
 * the weights, the others wait for it. */
sinter_status api_materialize(sinter_model *m, sinter_error *err)
{
	if (!m->weights)
		return api_failf(err, SINTER_E_USAGE, "the model's weights are not loaded");
	pthread_mutex_lock(&m->lock);
	sinter_status st = materialize_locked(m, err);
	pthread_mutex_unlock(&m->lock);
	return st;
}

static sinter_status materialize_locked(sinter_model *m, sinter_error *err)
{
	if (m->materialized)
		return SINTER_OK;
	bool any = false;
	for (uint32_t i = 0; i < m->g->nnodes; i++)
		any |= m->g->nodes[i].op == IR_OP_param;
	sinter_status st = SINTER_OK;
	double t0 = sn_now();
	if (any && m->wsrc == API_W_FILE)
		st = read_weights(m, (const char *const *)m->wfiles, m->nwfiles, m->wprefix ? m->wprefix : "", true,
				  NULL, NULL, NULL, err);
	else if (any && m->wsrc == API_W_RANDOM)
		st = fill_random(m, m->seed, err);
	if (st == SINTER_OK)
		m->materialized = true;
	if (st == SINTER_OK && any)
		sn_stage("weights", t0, "%s", m->wsrc == API_W_FILE ? m->wpath : "random");
	return st;
}
