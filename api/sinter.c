/* sinter.c: the public API. A thin layer that sequences frontend, IR and
 * runtime; it owns no algorithm. */
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

_Static_assert((int)SINTER_BOOL == (int)IR_BOOL && (int)SINTER_F8E5M2 == (int)IR_F8E5M2,
	       "sinter_dtype follows ir_dtype");
_Static_assert(SINTER_MAX_RANK == IR_MAX_RANK, "one maximum rank");

sinter_status api_fail(sinter_error *err, const sn_err *e)
{
	if (err) {
		err->status = (sinter_status)e->code;
		snprintf(err->message, sizeof err->message, "%s", e->msg);
	}
	return (sinter_status)e->code;
}

sinter_status api_failf(sinter_error *err, sinter_status st, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		err->status = st;
		vsnprintf(err->message, sizeof err->message, fmt, ap);
		va_end(ap);
	}
	return st;
}

const char *sinter_version(void)
{
	return SINTER_VERSION;
}

const char *sinter_dtype_name(sinter_dtype t)
{
	return ir_dtype_name((ir_dtype)t);
}

size_t sinter_dtype_size(sinter_dtype t)
{
	return (unsigned)t < IR_NDTYPES ? ir_dtype_size((ir_dtype)t) : 0;
}

void sinter_options_init(sinter_options *o)
{
	memset(o, 0, sizeof *o);
}

void sinter_free(void *p)
{
	free(p);
}

/* ---- models ---- */

static int cmp_param_key(const void *a, const void *b)
{
	const ir_node *x = *(const ir_node *const *)a, *y = *(const ir_node *const *)b;
	int c = strcmp(x->pname, y->pname);
	return c ? c : x->line != y->line ? (x->line < y->line ? -1 : 1) : (x->col > y->col) - (x->col < y->col);
}

/* One key is one tensor: two params with one key and two shapes cannot
 * both be read from it (a dtype may differ: the value converts). */
static int check_param_keys(const ir_graph *g, sn_err *e)
{
	size_t np = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		np += g->nodes[i].op == IR_OP_param;
	if (np < 2)
		return SN_OK;
	const ir_node **ps = malloc(np * sizeof *ps);
	if (!ps)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	np = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].op == IR_OP_param)
			ps[np++] = &g->nodes[i];
	qsort(ps, np, sizeof *ps, cmp_param_key);
	int rc = SN_OK;
	for (size_t i = 1; i < np && !rc; i++) {
		const ir_node *a = ps[i - 1], *b = ps[i];
		if (strcmp(a->pname, b->pname) || ir_shape_eq(&a->shape, &b->shape))
			continue;
		char ta[160], tb[160], loc[512] = "", other[64] = "";
		ir_type_str(g, a->dtype, &a->shape, ta, sizeof ta);
		ir_type_str(g, b->dtype, &b->shape, tb, sizeof tb);
		if (g->path && b->line)
			snprintf(loc, sizeof loc, "%s:%u:%u: error: ", g->path, b->line, b->col);
		else if (g->path)
			snprintf(loc, sizeof loc, "%s: ", g->path);
		if (a->line)
			snprintf(other, sizeof other, " at line %u", a->line);
		rc = sn_errf(e, SN_EINPUT, "%sparam \"%s\" is %s here and %s%s: one key cannot hold two shapes",
			     loc, b->pname, tb, ta, other);
	}
	free(ps);
	return rc;
}

static sinter_status wrap(ir_graph *g, const char *path, sinter_model **out, sinter_error *err)
{
	sn_err e = {0};
	if (ir_verify(g, &e) != SN_OK || check_param_keys(g, &e) != SN_OK) {
		ir_graph_free(g);
		return api_fail(err, &e);
	}
	sinter_model *m = calloc(1, sizeof *m);
	if (m && pthread_mutex_init(&m->lock, NULL)) {
		free(m);
		m = NULL;
	}
	if (m)
		m->ws = ir_ws_new();
	if (m)
		m->dir = path ? sn_dirname(path) : strdup(".");
	if (!m || !m->ws || !m->dir) {
		if (m) {
			ir_ws_free(m->ws);
			free(m->dir);
			pthread_mutex_destroy(&m->lock);
		}
		free(m);
		ir_graph_free(g);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	m->g = g;
	if (path && !(m->path = strdup(path))) {
		sinter_model_free(m);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	*out = m;
	return SINTER_OK;
}

static sir_bind *binds_of(const sinter_options *opt)
{
	if (!opt || !opt->nshapes)
		return NULL;
	sir_bind *b = calloc(opt->nshapes, sizeof *b);
	for (size_t i = 0; b && i < opt->nshapes; i++) {
		b[i].name = opt->shapes[i].name;
		b[i].value = opt->shapes[i].value;
	}
	return b;
}

static int set_tensor(sinter_tensor *t, const char *name, ir_dtype dt, const ir_shape *s);

/* The import put each default (an input's initializer) in the weights
 * under the input's name: m->defaults gets them (the weights may be
 * replaced later). On failure m is freed. */
static sinter_status onnx_defaults(sinter_model *m, sinter_error *err)
{
	const ir_graph *g = m->g;
	for (uint32_t i = 0; i < g->ninputs; i++) {
		const ir_node *in = &g->nodes[g->inputs[i]];
		const ir_tensor *t = in->name ? ir_ws_get(m->ws, in->name) : NULL;
		if (!t || t->dtype != in->dtype || !ir_shape_eq(&t->shape, &in->shape))
			continue;
		sinter_tensor *d = realloc(m->defaults, (m->ndefaults + 1) * sizeof *d);
		if (d)
			m->defaults = d;
		if (!d || set_tensor(&d[m->ndefaults++], in->name, in->dtype, &in->shape) != SN_OK) {
			sinter_model_free(m);
			return api_failf(err, SINTER_E_INTERNAL, "out of memory");
		}
		memcpy(d[m->ndefaults - 1].data, t->data, t->nbytes < d[m->ndefaults - 1].nbytes ? t->nbytes : d[m->ndefaults - 1].nbytes);
	}
	return SINTER_OK;
}

sinter_status sinter_model_load(const char *path, const sinter_options *opt,
				sinter_model **out, sinter_error *err)
{
	*out = NULL;
	sn_err e = {0};
	ir_graph *g = NULL;
	sir_bind *b = binds_of(opt);
	if (opt && opt->nshapes && !b)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	size_t n = strlen(path);
	bool onnx = n >= 5 && !strcmp(path + n - 5, ".onnx");
	double t0 = sn_now();
	ir_wstore *ws = onnx ? ir_ws_new() : NULL;
	char **srcs = NULL;
	size_t nsrcs = 0;
	int rc = onnx ? (ws ? onnx_load_files(path, b, b ? opt->nshapes : 0, &g, ws, &srcs, &nsrcs, &e)
			   : sn_errf(&e, SN_EINTERNAL, "out of memory"))
		      : sir_parse_file(path, b, b ? opt->nshapes : 0, &g, &e);
	free(b);
	if (rc != SN_OK) {
		ir_ws_free(ws);
		return api_fail(err, &e);
	}
	sinter_status st = wrap(g, path, out, err);
	if (st == SINTER_OK)
		sn_stage(onnx ? "import" : "parse", t0, "%s, %u nodes", path, g->nnodes);
	if (st == SINTER_OK && opt && opt->nstates && (st = api_mark_states(*out, opt->states, opt->nstates, err))) {
		sinter_model_free(*out); /* the inputs named states, their outputs their updates */
		*out = NULL;
	}
	if (st != SINTER_OK || !onnx) {
		ir_ws_free(ws);
		onnx_files_free(srcs, nsrcs);
		return st;
	}
	(*out)->srcs = srcs;
	(*out)->nsrcs = nsrcs;
	/* The initializers are the weights: the model is ready to run. */
	ir_ws_free((*out)->ws);
	(*out)->ws = ws;
	(*out)->weights = true;
	(*out)->onnx = true;
	(*out)->wsrc = API_W_ONNX;
	(*out)->materialized = true;
	sinter_status st2 = onnx_defaults(*out, err);
	if (st2)
		*out = NULL; /* freed */
	return st2;
}

sinter_status sinter_model_save(const sinter_model *m, const char *sir_path, sinter_error *err)
{
	const ir_graph *g = m->g;
	size_t n = strlen(sir_path);
	if (n < 5 || strcmp(sir_path + n - 4, ".sir"))
		return api_failf(err, SINTER_E_USAGE, "%s: the output must be a .sir file", sir_path);
	if (!m->weights)
		return api_failf(err, SINTER_E_USAGE, "the model's weights are not loaded");
	/* the values are read on first use; the model's contents do not change */
	sinter_status ms = api_materialize((sinter_model *)m, err);
	if (ms)
		return ms;
	char *wpath = malloc(n + 16);
	if (!wpath)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	memcpy(wpath, sir_path, n - 4);
	strcpy(wpath + n - 4, ".safetensors");
	const char *slash = strrchr(wpath, '/');
	const char *base = slash ? slash + 1 : wpath;
	sn_err e = {0};
	if (sn_out_check(sir_path, &e) != SN_OK || sn_out_check(wpath, &e) != SN_OK) {
		free(wpath);
		return api_fail(err, &e);
	}
	/* neither output may be the model or a file it was read from (its
	 * weights, its external data): same device and inode, whatever the name */
	for (int i = 0; i < 2; i++) {
		const char *out = i ? wpath : sir_path;
		char *scratch;
		const char *in = api_model_file(m, out, &scratch);
		sinter_status fs = SINTER_OK;
		if (in)
			fs = api_failf(err, SINTER_E_INPUT, "cannot write %s: it is the same file as %s, which the "
				       "model was read from; refusing to overwrite an input", out, in);
		free(scratch);
		if (fs) {
			free(wpath);
			return fs;
		}
	}

	/* The weights file: every param's value once, by key. */
	size_t np = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		np += g->nodes[i].op == IR_OP_param;
	st_entry *en = calloc(np ? np : 1, sizeof *en);
	ir_tensor *vals = NULL;
	sinter_status st = en ? api_param_vals(g, m->ws, &vals, err)
			      : api_failf(err, SINTER_E_INTERNAL, "out of memory");
	size_t k = 0;
	for (uint32_t i = 0; !st && i < g->nnodes; i++) {
		const ir_node *nd = &g->nodes[i];
		bool dup = false;
		for (size_t j = 0; nd->op == IR_OP_param && j < k; j++)
			dup |= !strcmp(en[j].name, nd->pname);
		if (nd->op != IR_OP_param || dup)
			continue;
		en[k] = (st_entry){.name = nd->pname, .dtype = st_from_ir(nd->dtype), .rank = nd->shape.rank,
				   .data = vals[i].data, .nbytes = vals[i].nbytes};
		memcpy(en[k].shape, nd->shape.d, sizeof en[k].shape);
		k++;
	}
	/* Both files are written and synced to temp files before either is
	 * renamed: a failure replaces neither. */
	sn_out wo = {.fd = -1}, so = {.fd = -1};
	if (!st && (sn_out_open(&wo, wpath, 0666, &e) || st_write_to(&wo, en, k, NULL, 0, &e) ||
		    sn_out_finish(&wo, &e)))
		st = api_fail(err, &e);
	api_vals_free(g, m->ws, vals);
	free(en);

	/* The text, naming the weights file beside it. */
	if (!st) {
		ir_graph *copy = ir_graph_clone(g, &e);
		if (!copy) {
			st = api_fail(err, &e);
		} else {
			copy->weights = base;
			sn_buf text = {0};
			ir_print(copy, &text);
			if (text.oom)
				st = api_failf(err, SINTER_E_INTERNAL, "out of memory");
			else if (sn_out_open(&so, sir_path, 0666, &e) ||
				 (sn_out_write(&so, text.s, text.len), sn_out_finish(&so, &e)))
				st = api_fail(err, &e);
			sn_buf_free(&text);
			ir_graph_free(copy);
		}
	}
	if (!st && (sn_out_commit(&wo, &e) || sn_out_commit(&so, &e)))
		st = api_fail(err, &e);
	sn_out_abort(&wo);
	sn_out_abort(&so);
	free(wpath);
	return st;
}

sinter_status sinter_model_parse(const char *text, size_t len, const char *name,
				 const sinter_options *opt, sinter_model **out,
				 sinter_error *err)
{
	*out = NULL;
	sn_err e = {0};
	ir_graph *g = NULL;
	sir_bind *b = binds_of(opt);
	if (opt && opt->nshapes && !b)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	int rc = sir_parse(text, len, name, b, b ? opt->nshapes : 0, &g, &e);
	free(b);
	if (rc != SN_OK)
		return api_fail(err, &e);
	return wrap(g, NULL, out, err);
}

static void strs_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

/* A fresh, empty weight store for m; on OOM the old one stays (callers
 * say the weights are not loaded, so nothing reads it) and SN_EINTERNAL. */
static int reset_ws(sinter_model *m)
{
	ir_wstore *ws = ir_ws_new();
	if (!ws)
		return SN_EINTERNAL;
	ir_ws_free(m->ws);
	m->ws = ws;
	return SN_OK;
}

static void drop_files(sinter_model *m)
{
	for (size_t i = 0; i < m->nwfiles; i++)
		free(m->wfiles[i]); /* wpath is wfiles[0] */
	free(m->wfiles);
	free(m->wprefix);
	strs_free(m->wread, m->nwread);
	m->wfiles = m->wread = NULL;
	m->nwfiles = m->nwread = 0;
	m->wpath = m->wprefix = NULL;
}

static void free_params(sinter_model *m)
{
	reset_ws(m); /* on OOM the old values stay, unused: weights is false */
	m->weights = false;
	m->materialized = false;
	m->wsrc = API_W_NONE;
	drop_files(m);
}

void sinter_model_free(sinter_model *m)
{
	if (!m)
		return;
	ir_ws_free(m->ws);
	sinter_tensors_free(m->defaults, m->ndefaults);
	free(m->dir);
	free(m->path);
	drop_files(m);
	onnx_files_free(m->srcs, m->nsrcs);
	ir_graph_free(m->g);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

const char *api_model_file(const sinter_model *m, const char *path, char **scratch)
{
	*scratch = NULL;
	if (!m)
		return NULL;
	if (m->g->path && sn_same_file(path, m->g->path))
		return m->g->path;
	for (size_t i = 0; i < m->nsrcs; i++)
		if (sn_same_file(path, m->srcs[i]))
			return m->srcs[i];
	for (size_t i = 0; i < m->nwfiles; i++)
		if (sn_same_file(path, m->wfiles[i]))
			return m->wfiles[i];
	if (m->g->weights && !m->onnx) {
		size_t k = strlen(m->dir) + strlen(m->g->weights) + 2;
		if ((*scratch = malloc(k))) {
			snprintf(*scratch, k, "%s/%s", m->dir, m->g->weights);
			if (sn_same_file(path, *scratch))
				return *scratch;
		}
	}
	return NULL;
}

char *sinter_model_print(const sinter_model *m)
{
	sn_buf b = {0};
	ir_print(m->g, &b);
	if (b.oom) {
		sn_buf_free(&b);
		return NULL;
	}
	return b.s;
}

char *sinter_model_print_groups(const sinter_model *m, int target_sm, sinter_error *err)
{
	sn_buf b = {0};
	sn_err e = {0};
	cg_target t = {.sm = target_sm ? target_sm : 90};
	if (cg_fusion_groups(m->g, &t, &b, &e) != SN_OK) {
		sn_buf_free(&b);
		api_fail(err, &e);
		return NULL;
	}
	if (!b.s)
		return strdup("");
	return b.s;
}

void sinter_model_hash(const sinter_model *m, char hex[33])
{
	uint8_t h[16];
	ir_hash(m->g, h);
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", h[i]);
}

/* The first symbol some value's shape still holds, or NULL. */
static const char *unbound_symbol(const ir_graph *g)
{
	for (uint32_t i = 0; i < g->nnodes; i++)
		for (int k = 0; k < g->nodes[i].shape.rank; k++)
			if (IR_IS_SYM(g->nodes[i].shape.d[k]))
				return g->syms[IR_SYM_ID(g->nodes[i].shape.d[k])];
	return NULL;
}

const char *sinter_model_input_symbol(const sinter_model *m, size_t i, int dim)
{
	if (i >= m->g->ninputs)
		return NULL;
	const ir_shape *s = &m->g->nodes[m->g->inputs[i]].shape;
	if (dim < 0 || dim >= s->rank || !IR_IS_SYM(s->d[dim]))
		return NULL;
	return m->g->syms[IR_SYM_ID(s->d[dim])];
}

/* Sizes are checked before anything is allocated: a value larger than
 * this machine's memory, or params and inputs that together are, is bad
 * input (exit 1) with the size it would need, not an allocation failure. */
static sinter_status check_memory(const ir_graph *g, sinter_error *err)
{
	uint64_t mem = sn_mem_bytes(), held = 0;
	char need[32], have[32], ts[160];
	sn_fmt_bytes(have, mem);
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		int64_t k = ir_numel(&n->shape);
		if (k < 0)
			continue;
		uint64_t nb = (uint64_t)k * ir_dtype_size(n->dtype); /* ir_verify bounded it */
		if (n->op == IR_OP_param || n->op == IR_OP_input)
			held += nb;
		if (nb > mem || held > mem) {
			ir_type_str(g, n->dtype, &n->shape, ts, sizeof ts);
			sn_fmt_bytes(need, nb > mem ? nb : held);
			if (nb > mem)
				return api_failf(err, SINTER_E_INPUT,
						 "%s%s%s: %s needs %" PRIu64 " bytes (%s), more than this machine's memory (%s)",
						 g->path ? g->path : "", g->path ? ": %" : "%", n->name ? n->name : "?", ts,
						 nb, need, have);
			return api_failf(err, SINTER_E_INPUT,
					 "%s%sthe inputs and params need %" PRIu64 " bytes (%s), more than this machine's memory (%s)",
					 g->path ? g->path : "", g->path ? ": " : "", held, need, have);
		}
	}
	return SINTER_OK;
}

sinter_status api_need_shaped(const sinter_model *m, sinter_error *err)
{
	const char *s = unbound_symbol(m->g);
	if (!s)
		return check_memory(m->g, err);
	return api_failf(err, SINTER_E_USAGE, "symbol %s is not bound: give it a value (e.g. %s=1) when loading the model", s, s);
}

size_t sinter_model_num_nodes(const sinter_model *m) { return m->g->nnodes; }
size_t sinter_model_num_symbols(const sinter_model *m)
{
	return unbound_symbol(m->g) ? m->g->nsyms : 0;
}
/* the inputs and outputs a caller sees: the states are kept out (state.h) */
size_t sinter_model_num_inputs(const sinter_model *m) { return api_user_inputs(m->g); }
size_t sinter_model_num_outputs(const sinter_model *m) { return api_user_outputs(m->g); }

const char *sinter_model_symbol(const sinter_model *m, size_t i)
{
	return i < m->g->nsyms ? m->g->syms[i] : NULL;
}

static void describe(const ir_node *n, sinter_tensor *d)
{
	memset(d, 0, sizeof *d);
	d->name = n->name;
	d->dtype = (sinter_dtype)n->dtype;
	d->rank = n->shape.rank;
	for (int i = 0; i < n->shape.rank; i++)
		d->shape[i] = n->shape.d[i] < 0 ? -1 : n->shape.d[i];
	int64_t k = ir_numel(&n->shape);
	d->nbytes = k < 0 ? 0 : (size_t)k * ir_dtype_size(n->dtype);
}

sinter_status sinter_model_input(const sinter_model *m, size_t i, sinter_tensor *d)
{
	if (i >= api_user_inputs(m->g))
		return api_failf(NULL, SINTER_E_USAGE, "no input %zu", i);
	describe(&m->g->nodes[m->g->inputs[i]], d);
	return SINTER_OK;
}

sinter_status sinter_model_output(const sinter_model *m, size_t i, sinter_tensor *d)
{
	if (i >= api_user_outputs(m->g))
		return api_failf(NULL, SINTER_E_USAGE, "no output %zu", i);
	const ir_graph *g = m->g;
	describe(&g->nodes[g->outputs[i]], d);
	/* An output that is a graph input or a param keeps that value's name. */
	return SINTER_OK;
}


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
	if (fill && !e.code && reset_ws(m) != SN_OK)
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
			strs_free(*read, *nread);
	}
	st_set_close(f);
	if (e.code != SN_OK) {
		if (fill)
			reset_ws(m);
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

sinter_status sinter_model_load_weights(sinter_model *m, const char *path, sinter_error *err)
{
	return sinter_model_load_weights_files(m, path ? &path : NULL, path ? 1 : 0, NULL, err);
}

sinter_status sinter_model_load_weights_files(sinter_model *m, const char *const *paths, size_t n,
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
		free_params(m);
		if (oom) {
			strs_free(keep, n);
			strs_free(read, nread);
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
	free_params(m);
	m->wsrc = API_W_RANDOM;
	m->seed = seed;
	m->weights = true; /* drawn on first use (api_materialize) */
	return SINTER_OK;
}

static sinter_status fill_random(sinter_model *m, uint64_t seed, sinter_error *err)
{
	sn_err e = {0};
	if (reset_ws(m) != SN_OK)
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

void sinter_remove_temp_files(void)
{
	sn_out_remove_temps();
}

static int set_tensor(sinter_tensor *t, const char *name, ir_dtype dt, const ir_shape *s)
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

sinter_status sinter_random_inputs(const sinter_model *m, uint64_t seed,
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
		if (set_tensor(&ts[i], in->name, in->dtype, &in->shape) != SN_OK) {
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

sinter_status sinter_random_tensors(const sinter_tensor *descs, size_t n, uint64_t seed, sinter_tensor **out,
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
		if (set_tensor(&ts[i], d->name, (ir_dtype)d->dtype, &s) != SN_OK) {
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
		if (set_tensor(&dst->defaults[k], s->name, (ir_dtype)s->dtype, &sh) != SN_OK)
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

sinter_status sinter_run_ref(sinter_model *m, const sinter_tensor *inputs, size_t ninputs,
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
static bool is_numpy(const char *path)
{
	size_t n = strlen(path);
	return n >= 4 && (!strcmp(path + n - 4, ".npy") || !strcmp(path + n - 4, ".npz"));
}

static sinter_status numpy_read(const char *path, sinter_tensor **out, size_t *n, sinter_error *err)
{
	sn_err e = {0};
	npy_array *a = NULL;
	size_t count = 0;
	if (npy_read(path, &a, &count, &e) != SN_OK)
		return api_fail(err, &e);
	sinter_tensor *ts = calloc(count ? count : 1, sizeof *ts);
	if (!ts) {
		npy_free(a, count);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	for (size_t i = 0; i < count; i++) { /* moved, not copied */
		ts[i].name = a[i].name;
		ts[i].dtype = (sinter_dtype)a[i].dtype;
		ts[i].rank = a[i].rank;
		memcpy(ts[i].shape, a[i].shape, sizeof ts[i].shape);
		ts[i].data = a[i].data;
		ts[i].nbytes = a[i].nbytes;
		a[i].name = NULL;
		a[i].data = NULL;
	}
	npy_free(a, count);
	*out = ts;
	*n = count;
	return SINTER_OK;
}

static sinter_status numpy_write(const char *path, const sinter_tensor *ts, size_t n, sinter_error *err)
{
	size_t len = strlen(path);
	bool npz = !strcmp(path + len - 4, ".npz");
	if (!npz && n != 1)
		return api_failf(err, SINTER_E_USAGE, "%s: a .npy holds one array, there are %zu: write a .npz", path, n);
	npy_array *a = calloc(n ? n : 1, sizeof *a);
	if (!a)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		a[i].name = (char *)ts[i].name; /* borrowed: not freed here */
		a[i].dtype = (ir_dtype)ts[i].dtype;
		a[i].rank = ts[i].rank;
		memcpy(a[i].shape, ts[i].shape, sizeof a[i].shape);
		a[i].data = ts[i].data;
		a[i].nbytes = ts[i].nbytes;
	}
	sn_err e = {0};
	int rc = npz ? npz_write(path, a, n, &e) : npy_write(path, a, &e);
	free(a);
	return rc == SN_OK ? SINTER_OK : api_fail(err, &e);
}

sinter_status sinter_tensors_read(const char *path, sinter_tensor **out, size_t *n, sinter_error *err)
{
	*out = NULL;
	*n = 0;
	if (is_numpy(path))
		return numpy_read(path, out, n, err);
	sn_err e = {0};
	st_file *f = NULL;
	if (st_open(path, &f, &e) != SN_OK)
		return api_fail(err, &e);
	size_t count = st_count(f);
	sinter_tensor *ts = calloc(count ? count : 1, sizeof *ts);
	if (!ts) {
		st_close(f);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	for (size_t i = 0; i < count && e.code == SN_OK; i++) {
		const st_entry *en = st_get(f, i);
		int t = st_to_ir(en->dtype);
		ir_shape s = {.rank = en->rank};
		memcpy(s.d, en->shape, sizeof s.d);
		if (set_tensor(&ts[i], en->name, t < 0 ? IR_F32 : (ir_dtype)t, &s) != SN_OK)
			sn_errf(&e, SN_EINTERNAL, "out of memory");
		else
			st_read_as(en, t < 0 ? IR_F32 : (ir_dtype)t, ts[i].data, &e);
	}
	st_close(f);
	if (e.code != SN_OK) {
		sinter_tensors_free(ts, count);
		return api_fail(err, &e);
	}
	*out = ts;
	*n = count;
	return SINTER_OK;
}

sinter_status sinter_output_check(const sinter_model *m, const char *path, const char *const *inputs,
				  size_t n, sinter_error *err)
{
	sn_err e = {0};
	if (sn_out_check(path, &e) != SN_OK)
		return api_fail(err, &e);
	const char *what = NULL;
	for (size_t i = 0; i < n && !what; i++)
		if (inputs[i] && sn_same_file(path, inputs[i]))
			what = inputs[i];
	char *w = NULL;
	if (!what)
		what = api_model_file(m, path, &w);
	sinter_status st = SINTER_OK;
	if (what)
		st = api_failf(err, SINTER_E_INPUT, "cannot write %s: it is the same file as the input %s; "
			       "refusing to overwrite an input", path, what);
	free(w);
	return st;
}

sinter_status sinter_tensors_write(const char *path, const sinter_tensor *ts, size_t n, sinter_error *err)
{
	if (is_numpy(path))
		return numpy_write(path, ts, n, err);
	st_entry *en = calloc(n ? n : 1, sizeof *en);
	if (!en)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if ((unsigned)ts[i].dtype >= IR_NDTYPES || ts[i].rank < 0 || ts[i].rank > IR_MAX_RANK) {
			free(en);
			return api_failf(err, SINTER_E_INPUT, "tensor %zu: bad description", i);
		}
		en[i].name = ts[i].name;
		en[i].dtype = st_from_ir((ir_dtype)ts[i].dtype);
		en[i].rank = ts[i].rank;
		memcpy(en[i].shape, ts[i].shape, sizeof en[i].shape);
		en[i].data = ts[i].data;
		en[i].nbytes = ts[i].nbytes;
	}
	sn_err e = {0};
	int rc = st_write(path, en, n, NULL, 0, &e);
	free(en);
	return rc == SN_OK ? SINTER_OK : api_fail(err, &e);
}

/* ---- caches ---- */

sinter_status sinter_cache_dir(char *out, size_t cap, sinter_error *err)
{
	if (kc_default_dir(out, cap) != SN_OK)
		return api_failf(err, SINTER_E_ENV,
				 "no cache directory: set SINTER_CACHE_DIR, XDG_CACHE_HOME or HOME");
	return SINTER_OK;
}

/* Counts a cache's entries in dir (NULL: the default directory). */
static sinter_status cache_count(const char *dir, int (*count)(const char *, size_t *, uint64_t *, sn_err *),
				 size_t *entries, uint64_t *bytes, sinter_error *err)
{
	char def[4096];
	if (!dir) {
		sinter_status st = sinter_cache_dir(def, sizeof def, err);
		if (st)
			return st;
		dir = def;
	}
	sn_err e = {0};
	return count(dir, entries, bytes, &e) == SN_OK ? SINTER_OK : api_fail(err, &e);
}

sinter_status sinter_cache_stats(const char *dir, size_t *entries, uint64_t *bytes, sinter_error *err)
{
	return cache_count(dir, kc_stats, entries, bytes, err);
}

sinter_status sinter_plan_cache_stats(const char *dir, size_t *entries, uint64_t *bytes, sinter_error *err)
{
	return cache_count(dir, kc_plan_stats, entries, bytes, err);
}

sinter_status sinter_cache_clear(const char *dir, size_t *removed, sinter_error *err)
{
	char def[4096];
	if (!dir) {
		sinter_status st = sinter_cache_dir(def, sizeof def, err);
		if (st)
			return st;
		dir = def;
	}
	sn_err e = {0};
	return kc_clear(dir, removed, &e) == SN_OK ? SINTER_OK : api_fail(err, &e);
}

#ifndef SINTER_HAVE_CUDA
/* Built without the CUDA toolkit: every device entry point says so. */
static sinter_status no_cuda(sinter_error *err)
{
	return api_failf(err, SINTER_E_ENV, "this build of sinter has no CUDA backend (the CUDA toolkit was not found at build time)");
}

bool sinter_cuda_available(char *why, size_t cap)
{
	snprintf(why, cap, "this build of sinter has no CUDA backend");
	return false;
}

void sinter_compile_options_init(sinter_compile_options *o)
{
	memset(o, 0, sizeof *o);
}

sinter_status sinter_compile_kernels(const sinter_model *m, const sinter_compile_options *o, const char *package,
				     sinter_compile_stats *stats, sinter_error *err)
{
	if (o && o->device && !strcmp(o->device, "cpu"))
		return api_cpu_compile_package(m, o, package, stats, err);
	return no_cuda(err);
}

sinter_status sinter_load_package(const char *path, const sinter_compile_options *o, sinter_compiled **out,
				  sinter_compile_stats *stats, sinter_error *err)
{
	*out = NULL;
	sinter_status routed;
	if (api_package_route(path, o, out, stats, err, &routed)) /* a cpu package, or the wrong device */
		return routed;
	return no_cuda(err);
}

size_t sinter_compiled_num_inputs(const sinter_compiled *c) { return api_host_num_inputs(c); }
size_t sinter_compiled_num_outputs(const sinter_compiled *c) { return api_host_num_outputs(c); }
sinter_status sinter_compiled_input(const sinter_compiled *c, size_t i, sinter_tensor *desc)
{
	return api_host_input(c, i, desc);
}

sinter_status sinter_compile(const sinter_model *m, const sinter_compile_options *o,
			     sinter_compiled **out, sinter_compile_stats *stats, sinter_error *err)
{
	if (o && o->device && !strcmp(o->device, "cpu"))
		return api_cpu_compile(m, o, out, stats, err);
	if (o && o->device && !strcmp(o->device, "ref"))
		return api_ref_compile(m, o, out, stats, err);
	*out = NULL;
	return no_cuda(err);
}

void sinter_compiled_free(sinter_compiled *c)
{
	if (c)
		api_host_free(c);
}

sinter_status sinter_compiled_run(sinter_compiled *c, const sinter_tensor *inputs, size_t ninputs,
				  sinter_tensor **outputs, sinter_error *err)
{
	return api_host_run(c, inputs, ninputs, outputs, err);
}

sinter_status sinter_compiled_bench(sinter_compiled *c, int warmup, int iters, double *ms,
				    sinter_error *err)
{
	return api_host_bench(c, warmup, iters, ms, err);
}

sinter_status sinter_compiled_output(const sinter_compiled *c, size_t i, sinter_tensor *desc)
{
	return api_host_output(c, i, desc);
}

sinter_status sinter_compiled_run_device(sinter_compiled *c, const sinter_tensor *inputs, size_t ninputs,
					 const sinter_tensor *outputs, size_t noutputs, void *stream,
					 sinter_error *err)
{
	return no_cuda(err);
}

api_state *api_cuda_state(sinter_compiled *c)
{
	return NULL;
}

sinter_status sinter_compiled_profile(sinter_compiled *c, int iters, sinter_profile_entry **entries,
				      size_t *n, sinter_error *err)
{
	if (api_device_of(c) == API_DEV_REF)
		return api_failf(err, SINTER_E_USAGE, "profile on ref: the reference interpreter is not timed");
	return api_cpu_profile(c, iters, entries, n, err);
}

sinter_status sinter_cache_explain(const sinter_model *m, const sinter_compile_options *o, char **report,
				   sinter_error *err)
{
	*report = NULL;
	if (o && o->device && !strcmp(o->device, "cpu"))
		return api_cpu_explain(m, o, report, err);
	return no_cuda(err);
}
#endif
