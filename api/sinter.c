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

void sinter_free(void *p)
{
	free(p);
}

/* ---- devices, options and stats ---- */

const char *sinter_device_name(sinter_device d)
{
	static const char *const names[] = {"default", "cuda", "cpu", "ref"};
	return (unsigned)d < SN_COUNT(names) ? names[d] : "?";
}

sinter_status sinter_device_available(sinter_device d, char *info, size_t cap, sinter_error *err)
{
	char why[512];
	bool ok;
	if (d == SINTER_DEVICE_CUDA)
		ok = api_cuda_available(why, sizeof why);
	else if (d == SINTER_DEVICE_CPU)
		ok = api_cpu_available(why, sizeof why);
	else if (d == SINTER_DEVICE_REF)
		ok = snprintf(why, sizeof why, "the reference interpreter (plain C, fp64 accumulation)") > 0;
	else
		return api_failf(err, SINTER_E_USAGE, "device %d: name one (cuda, cpu or ref)", (int)d);
	if (info && cap)
		snprintf(info, cap, "%s", why);
	return ok ? SINTER_OK : api_failf(err, SINTER_E_ENV, "%s", why);
}

/* A struct of a caller's (options) into the library's own, *full: the
 * fields its size covers, zero for the rest. A caller built against a
 * newer header may pass a larger struct: its extra fields must be zero
 * (their defaults), or the library would ignore what it was asked. */
static sinter_status sized_in(const void *in, size_t in_size, void *full, size_t full_size, const char *what,
			      sinter_error *err)
{
	memset(full, 0, full_size);
	if (!in) {
		*(size_t *)full = full_size;
		return SINTER_OK;
	}
	if (in_size < sizeof(size_t))
		return api_failf(err, SINTER_E_USAGE, "%s.size is %zu: initialize the struct with %s_init", what,
				 in_size, what);
	for (size_t i = full_size; i < in_size; i++)
		if (((const unsigned char *)in)[i])
			return api_failf(err, SINTER_E_USAGE,
					 "%s: a field this library (version %s) does not know is set (the caller was built "
					 "against a newer sinter.h)",
					 what, SINTER_VERSION);
	memcpy(full, in, in_size < full_size ? in_size : full_size);
	*(size_t *)full = full_size;
	return SINTER_OK;
}

static sinter_status options_in(const sinter_compile_options *o, sinter_compile_options *full, sinter_error *err)
{
	sinter_status st = sized_in(o, o ? o->size : 0, full, sizeof *full, "sinter_compile_options", err);
	if (!st && (unsigned)full->device > SINTER_DEVICE_REF)
		st = api_failf(err, SINTER_E_USAGE, "unknown device %d (SINTER_DEVICE_CUDA, _CPU or _REF)",
			       (int)full->device);
	return st;
}

/* Devices that make no package, and explain no cache: ref. */
static sinter_status no_ref(const sinter_compile_options *o, const char *what, sinter_error *err)
{
	if (o->device == SINTER_DEVICE_REF)
		return api_failf(err, SINTER_E_USAGE, "%s: the reference interpreter (device ref) runs the model itself "
				 "(cuda or cpu make one)", what);
	return SINTER_OK;
}

static sinter_status stats_check(const sinter_compile_stats *s, sinter_error *err)
{
	if (s && s->size < sizeof(size_t))
		return api_failf(err, SINTER_E_USAGE,
				 "sinter_compile_stats.size is %zu: initialize the struct with sinter_compile_stats_init",
				 s->size);
	return SINTER_OK;
}

/* The library's stats into the caller's: the fields its size covers. */
static void stats_out(sinter_compile_stats *s, const sinter_compile_stats *full)
{
	if (!s)
		return;
	size_t n = s->size < sizeof *full ? s->size : sizeof *full;
	memcpy((char *)s + sizeof(size_t), (const char *)full + sizeof(size_t), n - sizeof(size_t));
}

sinter_status sinter_model_compile(const sinter_model *m, const sinter_compile_options *o, sinter_compiled **out,
				   sinter_compile_stats *stats, sinter_error *err)
{
	*out = NULL;
	sinter_compile_options fo;
	sinter_compile_stats fs;
	sinter_compile_stats_init(&fs);
	sinter_status st = options_in(o, &fo, err);
	if (!st)
		st = stats_check(stats, err);
	if (!st)
		st = api_model_compile(m, &fo, out, &fs, err);
	if (!st)
		stats_out(stats, &fs);
	return st;
}

sinter_status sinter_model_compile_kernels(const sinter_model *m, const sinter_compile_options *o,
					   const char *package, sinter_compile_stats *stats, sinter_error *err)
{
	sinter_compile_options fo;
	sinter_compile_stats fs;
	sinter_compile_stats_init(&fs);
	sinter_status st = options_in(o, &fo, err);
	if (!st)
		st = stats_check(stats, err);
	if (!st)
		st = no_ref(&fo, "a package", err);
	if (!st)
		st = api_model_compile_kernels(m, &fo, package, &fs, err);
	if (!st)
		stats_out(stats, &fs);
	return st;
}

sinter_status sinter_package_load(const char *path, const sinter_compile_options *o, sinter_compiled **out,
				  sinter_compile_stats *stats, sinter_error *err)
{
	*out = NULL;
	sinter_compile_options fo;
	sinter_compile_stats fs;
	sinter_compile_stats_init(&fs);
	sinter_status st = options_in(o, &fo, err);
	if (!st)
		st = stats_check(stats, err);
	if (!st)
		st = no_ref(&fo, "a package", err);
	if (!st)
		st = api_package_load(path, &fo, out, &fs, err);
	if (!st)
		stats_out(stats, &fs);
	return st;
}

sinter_status sinter_cache_explain(const sinter_model *m, const sinter_compile_options *o, char **report,
				   sinter_error *err)
{
	*report = NULL;
	sinter_compile_options fo;
	sinter_status st = options_in(o, &fo, err);
	if (!st)
		st = no_ref(&fo, "no cache", err);
	return st ? st : api_cache_explain(m, &fo, report, err);
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

static sir_bind *binds_of(const sinter_load_options *opt)
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

int api_set_tensor(sinter_tensor *t, const char *name, ir_dtype dt, const ir_shape *s);

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
		if (!d || api_set_tensor(&d[m->ndefaults++], in->name, in->dtype, &in->shape) != SN_OK) {
			sinter_model_free(m);
			return api_failf(err, SINTER_E_INTERNAL, "out of memory");
		}
		memcpy(d[m->ndefaults - 1].data, t->data, t->nbytes < d[m->ndefaults - 1].nbytes ? t->nbytes : d[m->ndefaults - 1].nbytes);
	}
	return SINTER_OK;
}

sinter_status sinter_model_load(const char *path, const sinter_load_options *opt,
				sinter_model **out, sinter_error *err)
{
	*out = NULL;
	sinter_load_options lo;
	if (sized_in(opt, opt ? opt->size : 0, &lo, sizeof lo, "sinter_load_options", err))
		return SINTER_E_USAGE;
	opt = &lo;
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
				 const sinter_load_options *opt, sinter_model **out,
				 sinter_error *err)
{
	*out = NULL;
	sinter_load_options lo;
	if (sized_in(opt, opt ? opt->size : 0, &lo, sizeof lo, "sinter_load_options", err))
		return SINTER_E_USAGE;
	opt = &lo;
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

void api_strs_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

/* A fresh, empty weight store for m; on OOM the old one stays (callers
 * say the weights are not loaded, so nothing reads it) and SN_EINTERNAL. */
int api_reset_ws(sinter_model *m)
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
	api_strs_free(m->wread, m->nwread);
	m->wfiles = m->wread = NULL;
	m->nwfiles = m->nwread = 0;
	m->wpath = m->wprefix = NULL;
}

void api_free_params(sinter_model *m)
{
	api_reset_ws(m); /* on OOM the old values stay, unused: weights is false */
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

sinter_status api_buf_take(sn_buf *b, char **text, sinter_error *err)
{
	*text = NULL;
	if (b->oom) {
		sn_buf_free(b);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	*text = b->s ? b->s : strdup("");
	return *text ? SINTER_OK : api_failf(err, SINTER_E_INTERNAL, "out of memory");
}

sinter_status sinter_model_print(const sinter_model *m, char **text, sinter_error *err)
{
	sn_buf b = {0};
	ir_print(m->g, &b);
	return api_buf_take(&b, text, err);
}

sinter_status sinter_model_print_plan(const sinter_model *m, sinter_device d, int target_sm, char **text,
				      sinter_error *err)
{
	*text = NULL;
	if (d == SINTER_DEVICE_CPU)
		return api_cpu_print_plan(m, text, err);
	if (d != SINTER_DEVICE_DEFAULT && d != SINTER_DEVICE_CUDA)
		return api_failf(err, SINTER_E_USAGE, "unknown device %d", (int)d);
	sn_buf b = {0};
	sn_err e = {0};
	cg_target t = {.sm = target_sm ? target_sm : 90};
	if (cg_fusion_groups(m->g, &t, &b, &e) != SN_OK) {
		sn_buf_free(&b);
		return api_fail(err, &e);
	}
	return api_buf_take(&b, text, err);
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

sinter_status sinter_model_input(const sinter_model *m, size_t i, sinter_tensor *d, sinter_error *err)
{
	if (i >= api_user_inputs(m->g))
		return api_failf(err, SINTER_E_USAGE, "no input %zu", i);
	describe(&m->g->nodes[m->g->inputs[i]], d);
	return SINTER_OK;
}

sinter_status sinter_model_output(const sinter_model *m, size_t i, sinter_tensor *d, sinter_error *err)
{
	if (i >= api_user_outputs(m->g))
		return api_failf(err, SINTER_E_USAGE, "no output %zu", i);
	const ir_graph *g = m->g;
	describe(&g->nodes[g->outputs[i]], d);
	/* An output that is a graph input or a param keeps that value's name. */
	return SINTER_OK;
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

sinter_status sinter_cache_kernel_stats(const char *dir, size_t *entries, uint64_t *bytes, sinter_error *err)
{
	return cache_count(dir, kc_stats, entries, bytes, err);
}

sinter_status sinter_cache_plan_stats(const char *dir, size_t *entries, uint64_t *bytes, sinter_error *err)
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

bool api_cuda_available(char *why, size_t cap)
{
	snprintf(why, cap, "this build of sinter has no CUDA backend (the CUDA toolkit was not found at build time)");
	return false;
}

sinter_status api_model_compile_kernels(const sinter_model *m, const sinter_compile_options *o, const char *package,
				     sinter_compile_stats *stats, sinter_error *err)
{
	if (o->device == SINTER_DEVICE_CPU)
		return api_cpu_compile_package(m, o, package, stats, err);
	return no_cuda(err);
}

sinter_status api_package_load(const char *path, const sinter_compile_options *o, sinter_compiled **out,
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
sinter_status sinter_compiled_input(const sinter_compiled *c, size_t i, sinter_tensor *desc, sinter_error *err)
{
	return api_host_input(c, i, desc, err);
}

sinter_status api_model_compile(const sinter_model *m, const sinter_compile_options *o,
			     sinter_compiled **out, sinter_compile_stats *stats, sinter_error *err)
{
	if (o->device == SINTER_DEVICE_CPU)
		return api_cpu_compile(m, o, out, stats, err);
	if (o->device == SINTER_DEVICE_REF)
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

sinter_status sinter_compiled_output(const sinter_compiled *c, size_t i, sinter_tensor *desc, sinter_error *err)
{
	return api_host_output(c, i, desc, err);
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

sinter_status api_cache_explain(const sinter_model *m, const sinter_compile_options *o, char **report,
				   sinter_error *err)
{
	*report = NULL;
	if (o->device == SINTER_DEVICE_CPU)
		return api_cpu_explain(m, o, report, err);
	return no_cuda(err);
}
#endif
