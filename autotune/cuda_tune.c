/* cuda_tune.c: the autotuner (at_tune.h).
 *
 * 1. Items: every unique kernel of the plan (by spec key) and every unique
 *    cuBLASLt product (by at_mm_spec), with how often the plan runs it and
 *    a cost estimate from its bytes and flops.
 * 2. Candidates come from codegen itself: the graph is lowered again with
 *    cg_target.pick asking every kernel for one config of the search space
 *    (threads per block x vector width); a kernel whose renderer accepts it
 *    yields a candidate (its source, config and launch geometry), one that
 *    does not keeps its default. Products get the cuBLASLt heuristic's top
 *    algorithms and, lowered again with cg_target.pick_mm, the GEMM
 *    template's kernels for them (at_gemm_space), run on the product's
 *    own buffers; a template that wins turns the plan's product steps into
 *    launches (patch_mm_kernel) and is recorded as AT_GEMM. Kernels
 *    without any candidate are not tunable.
 * 3. A stored record for (spec, this device) decides an item without
 *    timing, once the renderer (or cublasLtMatmulAlgoCheck) accepts its
 *    choice and the chosen kernel's output matches the default's on random
 *    inputs; a record that fails either is rejected and counted.
 * 4. The other items, most expensive first: candidates compiled with NVRTC
 *    on every core (through the kernel cache), a chunk of items at a time;
 *    each runs once on random inputs and must match the default's output,
 *    then is timed (median of AT_REPS runs, the L2 flushed before each). A
 *    candidate that fails to compile, to launch, to match, or runs far
 *    slower than the default is scored out. The whole budget and each
 *    item's cap are checked before every candidate: when they run out the
 *    best so far wins (or the default). The winner is patched into the plan
 *    (the candidate plans share its buffers: the configs do not change the
 *    fusion groups) and written as a record.
 * A kernel that faults on the device leaves the context unusable; that is
 * reported as an error (generated candidates are not expected to fault).
 * Measuring (compiling candidates, checking them on random inputs,
 * timing them) is cuda_measure.c's; the search spaces, by kernel family,
 * are cuda_tune_space.c's. */
#include "autotune/cuda_tune_impl.h"

#include "ir/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AT_MAX_BLAS 8      /* cuBLASLt candidates asked for */
#define AT_CHUNK 8         /* items whose candidates compile together */

void at_device_of(const rt_cuda *c, at_device *d)
{
	memset(d, 0, sizeof *d);
	size_t i = 0;
	for (; c->name[i] && i + 1 < sizeof d->name; i++)
		d->name[i] = c->name[i] >= 0x20 && c->name[i] < 0x7f && c->name[i] != '"' && c->name[i] != '\\'
				     ? c->name[i]
				     : '?';
	d->sm = c->sm;
	d->driver = c->driver_version;
	d->nvrtc = rt_nvrtc_lib_version();
	d->blas = rt_blas_lib_version();
}

void at_tune_stats_free(at_tune_stats *s)
{
	free(s->specs);
	s->specs = NULL;
	s->nspecs = 0;
}

static void cand_free(at_cand *c)
{
	free(c->src);
	free(c->cubin);
	c->src = NULL;
	c->cubin = NULL;
}

static void items_free(at_item *it, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < it[i].nc; k++)
			cand_free(&it[i].c[k]);
		free(it[i].c);
	}
	free(it);
}

/* ---- progress ---- */

static double speedup(const at_tune_stats *s)
{
	return s->tuned_ms > 0 ? s->default_ms / s->tuned_ms : 1.0;
}

static void progress(at_tuner *tu, bool final)
{
	const at_tune_opts *o = tu->o;
	FILE *f = o->out ? o->out : stderr;
	at_tune_stats *s = tu->s;
	double el = sn_now() - tu->t0, left = tu->budget - el > 0 ? tu->budget - el : 0;
	int mode = o->progress == AT_PROGRESS_AUTO ? (tu->tty ? AT_PROGRESS_BAR : AT_PROGRESS_SUMMARY) : o->progress;
	if (mode == AT_PROGRESS_NONE)
		return;
	if (mode == AT_PROGRESS_JSON) {
		fprintf(f,
			"{\"tune\": \"%s\", \"done\": %zu, \"total\": %zu, \"from_records\": %zu, \"tuned\": %zu, "
			"\"untuned\": %zu, \"candidates\": %zu, \"timings\": %zu, \"failed\": %zu, \"rejected\": %zu, "
			"\"speedup\": %.4f, \"seconds\": %.3f, \"left_s\": %.3f, \"budget_out\": %s}\n",
			final ? "summary" : "progress", tu->done, tu->total, s->from_records, s->tuned, s->untuned,
			s->candidates, s->timings, s->failed, s->rejected, speedup(s), el, left,
			s->budget_out ? "true" : "false");
		fflush(f);
		return;
	}
	if (mode == AT_PROGRESS_BAR) {
		char bar[21];
		size_t fill = tu->total ? 20 * tu->done / tu->total : 20;
		for (size_t i = 0; i < 20; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[20] = 0;
		fprintf(f, "\rmax-autotune [%s] %zu/%zu kernels, %zu candidates timed, best %.2fx, %.1f s left ", bar,
			tu->done, tu->total, s->candidates, speedup(s), left);
		if (final)
			fputc('\n', f);
		fflush(f);
		if (!final)
			return;
	}
	if (final)
		fprintf(f,
			"max-autotune: %zu kernels (%zu from records, %zu tuned, %zu left at the default%s), %zu candidates "
			"timed, %zu scored out, %zu records rejected, %.2fx on the tuned steps, %.1f s\n",
			tu->total, s->from_records, s->tuned, s->untuned, s->budget_out ? ": budget spent" : "",
			s->candidates, s->failed, s->rejected, speedup(s), el);
}

/* ---- items ---- */

/* Whether a kernel that reports cfg was rendered with what asked asks
 * for: every field asked for has that value (fields left 0 are the
 * renderer's to choose). */
static bool consistent(const cg_config *asked, const cg_config *cfg)
{
	const int32_t a[] = {asked->variant, asked->block, asked->tile_m, asked->tile_n, asked->tile_k,
			     asked->warps, asked->stages, asked->vec, asked->rows, asked->split_k};
	const int32_t c[] = {cfg->variant, cfg->block, cfg->tile_m, cfg->tile_n, cfg->tile_k,
			     cfg->warps, cfg->stages, cfg->vec, cfg->rows, cfg->split_k};
	for (size_t i = 0; i < SN_COUNT(a); i++)
		if (a[i] && a[i] != c[i] && !(i == 7 && a[i] == 1 && c[i] == 0)) /* vec 1: scalar, 0 to some */
			return false;
	return true;
}

static int push(at_cand **cs, size_t *n, const at_cand *c)
{
	at_cand *nc = realloc(*cs, (*n + 1) * sizeof *nc);
	if (!nc)
		return SN_EINTERNAL;
	*cs = nc;
	nc[(*n)++] = *c;
	return SN_OK;
}

/* Kernel kk of plan p as a candidate: its source (copied), config and the
 * launch of its first step. */
static int cand_of(const cg_plan *p, uint32_t kk, at_cand *c)
{
	memset(c, 0, sizeof *c);
	uint32_t s = 0;
	while (s < p->nsteps && !(p->steps[s].kind == CG_LAUNCH && p->steps[s].kern == kk))
		s++;
	if (s == p->nsteps || !p->kerns[kk].src || !(c->src = strdup(p->kerns[kk].src)))
		return SN_EINTERNAL;
	const cg_pstep *ps = &p->steps[s];
	c->cfg = p->kerns[kk].cfg;
	memcpy(c->name, p->kerns[kk].name, sizeof c->name);
	memcpy(c->grid, ps->grid, sizeof c->grid);
	memcpy(c->block, ps->block, sizeof c->block);
	c->smem = ps->smem;
	c->nargs = ps->nargs;
	memcpy(c->args, ps->args, sizeof c->args);
	c->ntmaps = p->kerns[kk].ntmaps;
	memcpy(c->tmaps, p->kerns[kk].tmaps, sizeof c->tmaps);
	return SN_OK;
}

static at_item *find(at_item *it, size_t n, at_kind k, const uint8_t spec[16])
{
	for (size_t i = 0; i < n; i++)
		if (it[i].kind == k && !memcmp(it[i].spec, spec, 16))
			return &it[i];
	return NULL;
}

/* ---- lowering again with other configs ---- */

typedef struct pick_ctx {
	const at_item *it;
	size_t n;
	const cg_config *all;    /* every wanted kernel item gets this config */
	const cg_config *mm_all; /* every wanted product gets the GEMM template with this config */
	/* neither: each record's choice (kernels' configs, products' template configs) */
} pick_ctx;

static bool pick_hook(void *ctx, const uint8_t spec[16], const cg_config *def, cg_config *want)
{
	(void)def;
	pick_ctx *pc = ctx;
	if (pc->mm_all)
		return false;
	for (size_t i = 0; i < pc->n; i++) {
		const at_item *x = &pc->it[i];
		if (x->kind != AT_KERNEL || memcmp(x->spec, spec, 16))
			continue;
		if (pc->all) {
			if (!x->want)
				return false;
			*want = *pc->all;
			return true;
		}
		if (!x->record)
			return false;
		*want = x->rec.cfg;
		return true;
	}
	return false;
}

/* A product cuBLASLt would run: the GEMM template with a config of its
 * space, or the one its record chose. */
static bool pick_mm_hook(void *ctx, const cg_mm *mm, cg_config *want)
{
	pick_ctx *pc = ctx;
	if (pc->all)
		return false;
	uint8_t spec[16];
	at_mm_spec(mm, spec);
	for (size_t i = 0; i < pc->n; i++) {
		const at_item *x = &pc->it[i];
		if (x->kind != AT_BLAS || memcmp(x->spec, spec, 16))
			continue;
		if (pc->mm_all) {
			if (!x->want)
				return false;
			*want = *pc->mm_all;
			return true;
		}
		if (!x->record || x->rec.kind != AT_GEMM)
			return false;
		*want = x->rec.cfg;
		return true;
	}
	return false;
}

/* Lowers the graph again (no weights) with the hooks. */
static int relower(at_tuner *tu, pick_ctx *pc, cg_plan **out)
{
	cg_target t2 = *tu->t;
	t2.pick = pick_hook;
	t2.pick_mm = pick_mm_hook;
	t2.pick_ctx = pc;
	sn_err e = {0};
	return cg_lower(tu->g, NULL, &t2, out, &e);
}

/* Adds, for every product item asked for (asked: the config q was
 * lowered with; NULL: each record's), the GEMM template's kernel that
 * q runs at the item's step in place of cuBLASLt: a candidate when it
 * reads and writes only the product's buffers (its A, B, bias, C and
 * output, as the plan's step names them). */
static void harvest_mm(at_item *it, size_t n, const cg_plan *p, const cg_plan *q, const cg_config *asked)
{
	if (q->nsteps != p->nsteps)
		return; /* other groups: not comparable */
	for (size_t i = 0; i < n; i++) {
		at_item *x = &it[i];
		if (x->kind != AT_BLAS || (asked ? !x->want : !(x->record && x->rec.kind == AT_GEMM)) || x->nc < 1 ||
		    x->c[0].kern)
			continue; /* not asked, or no cuBLASLt default to compare with */
		const cg_pstep *qs = &q->steps[x->step];
		const cg_mm *g = &p->steps[x->step].mm;
		if (qs->kind != CG_LAUNCH || qs->kern >= q->nkerns || !q->kerns[qs->kern].src)
			continue;
		const cg_kern *k = &q->kerns[qs->kern];
		const cg_config *a = asked ? asked : &x->rec.cfg;
		if (!consistent(a, &k->cfg))
			continue;
		bool ok = qs->nargs <= CG_MAX_ARGS, dup = false;
		for (uint32_t j = 0; ok && j < qs->nargs; j++) {
			uint32_t b = qs->args[j];
			ok = b == g->a || b == g->b || b == g->out || (b == g->bias && b != CG_NO_BUF) ||
			     (b == g->c && b != CG_NO_BUF);
		}
		for (size_t j = 0; ok && j < x->nc && !dup; j++)
			dup = x->c[j].kern && !strcmp(x->c[j].name, k->name);
		if (!ok || dup)
			continue;
		at_cand c;
		memset(&c, 0, sizeof c);
		if (!(c.src = strdup(k->src)))
			continue;
		c.kern = true;
		c.asked = *a;
		c.cfg = k->cfg;
		c.ntmaps = k->ntmaps; /* over argument positions: the same on the item's buffers */
		memcpy(c.tmaps, k->tmaps, sizeof c.tmaps);
		memcpy(c.name, k->name, sizeof c.name);
		memcpy(c.grid, qs->grid, sizeof c.grid);
		memcpy(c.block, qs->block, sizeof c.block);
		c.smem = qs->smem;
		c.nargs = qs->nargs;
		memcpy(c.args, qs->args, sizeof c.args);
		if (push(&x->c, &x->nc, &c))
			cand_free(&c);
	}
}

/* Adds the kernels of plan q that differ from what each item has; asked:
 * the config q was lowered with (NULL: each record's). A kernel that does
 * not report what it was asked for was left at its default. */
static int harvest(at_item *it, size_t n, const cg_plan *q, const cg_config *asked)
{
	for (uint32_t kk = 0; kk < q->nkerns; kk++) {
		at_item *x = find(it, n, AT_KERNEL, q->kerns[kk].spec);
		if (!x || (asked ? !x->want : !x->record))
			continue;
		const cg_config *a = asked ? asked : &x->rec.cfg;
		if (!consistent(a, &q->kerns[kk].cfg)) {
			x->rec_bad |= !asked; /* the renderer does not take the record's config */
			continue;
		}
		bool dup = false;
		for (size_t k = 0; k < x->nc && !dup; k++)
			dup = !strcmp(x->c[k].name, q->kerns[kk].name);
		if (dup)
			continue;
		at_cand c;
		if (cand_of(q, kk, &c) != SN_OK)
			continue;
		c.asked = *a;
		/* the same buffers in the same order, or it is not comparable */
		if (c.nargs != x->c[0].nargs || memcmp(c.args, x->c[0].args, sizeof c.args) || push(&x->c, &x->nc, &c)) {
			cand_free(&c);
			continue;
		}
	}
	return SN_OK;
}

static int collect(at_tuner *tu, at_item **out, size_t *nout, sn_err *e)
{
	cg_plan *p = tu->p;
	at_item *it = NULL;
	size_t n = 0, cap = 0;
	for (uint32_t s = 0; s < p->nsteps; s++) {
		const cg_pstep *ps = &p->steps[s];
		uint8_t spec[16];
		at_kind k = ps->kind == CG_MATMUL ? AT_BLAS : AT_KERNEL;
		if (k == AT_BLAS)
			at_mm_spec(&ps->mm, spec);
		else
			memcpy(spec, p->kerns[ps->kern].spec, 16);
		at_item *x = find(it, n, k, spec);
		if (!x) {
			if (n == cap) {
				size_t nc = cap ? 2 * cap : 32;
				at_item *ni = realloc(it, nc * sizeof *ni);
				if (!ni) {
					items_free(it, n);
					return sn_errf(e, SN_EINTERNAL, "out of memory");
				}
				it = ni;
				cap = nc;
			}
			x = &it[n++];
			memset(x, 0, sizeof *x);
			x->kind = k;
			memcpy(x->spec, spec, 16);
			x->step = s;
			x->chosen = -1;
			if (k == AT_KERNEL) {
				at_cand d;
				x->kern = ps->kern;
				if (cand_of(p, ps->kern, &d) != SN_OK || push(&x->c, &x->nc, &d)) {
					items_free(it, n);
					return sn_errf(e, SN_EINTERNAL, "out of memory");
				}
			}
		}
		x->uses++;
		x->est += ps->bytes / 3e12 + ps->flops / 4e14;
	}
	*out = it;
	*nout = n;
	return SN_OK;
}

/* A product's candidates: the heuristic's top algorithms (the first is
 * the default). */
static int blas_space(at_tuner *tu, at_item *x, int max, sn_err *e)
{
	cg_blas_algo al[AT_MAX_BLAS];
	int na = 0;
	sn_err le = {0};
	if (rt_gemm_candidates(tu->blas, &tu->p->steps[x->step].mm, al, max, &na, &le) != SN_OK)
		na = 0; /* untunable here: the load's heuristic decides */
	for (int i = 0; i < na; i++) {
		at_cand c;
		memset(&c, 0, sizeof c);
		c.algo = al[i];
		bool dup = false;
		for (size_t k = 0; k < x->nc && !dup; k++)
			dup = at_same_algo(&x->c[k].algo, &c.algo);
		if (!dup && push(&x->c, &x->nc, &c))
			return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	return SN_OK;
}

/* A stored record for x: kept in x->rec when it is for this kind of
 * item and plausible; a kernel's is rendered by the record relowering, a
 * product's algorithm is checked by cuBLASLt when measured. */
static int from_record(at_tuner *tu, at_item *x, sn_err *e)
{
	bool found = false;
	at_record r;
	at_store_get(tu->st, x->spec, &tu->dev, &r, &found);
	if (!found)
		return SN_OK;
	bool kind_ok = r.kind == x->kind || (x->kind == AT_BLAS && r.kind == AT_GEMM);
	if (!kind_ok || (r.kind != AT_BLAS && !at_config_plausible(&r.cfg))) {
		tu->s->rejected++;
		return SN_OK;
	}
	x->record = true;
	x->rec = r;
	if (x->kind == AT_BLAS) {
		if (blas_space(tu, x, 1, e))
			return e->code;
		if (x->nc < 1) {
			x->record = false;
			tu->s->rejected++;
			return SN_OK;
		}
		if (r.kind == AT_BLAS && !at_same_algo(&x->c[0].algo, &r.algo)) {
			at_cand c;
			memset(&c, 0, sizeof c);
			c.algo = r.algo;
			if (push(&x->c, &x->nc, &c))
				return sn_errf(e, SN_EINTERNAL, "out of memory");
		}
	}
	return SN_OK;
}

/* The winner: the fastest candidate that passed, else the default. */
static void decide(at_tuner *tu, at_item *x)
{
	at_tune_stats *s = tu->s;
	if (x->record) {
		/* checked, not timed: the record's choice if it matched */
		x->chosen = x->nc > 1 && x->c[1].ok ? 1 : 0;
		if (x->nc > 1 && !x->c[1].ok)
			s->rejected++;
		s->from_records++;
		s->default_ms += x->uses * x->rec.default_ms;
		s->tuned_ms += x->uses * (x->chosen ? x->rec.ms : x->rec.default_ms);
		return;
	}
	if (x->nc == 0 || !x->c[0].ok) {
		x->chosen = -1;
		s->untuned++;
		return;
	}
	int best = 0;
	size_t tried = 0;
	for (size_t i = 1; i < x->nc; i++) {
		tried += x->c[i].ok;
		if (x->c[i].ok && x->c[i].ms < x->c[best].ms)
			best = (int)i;
	}
	x->chosen = best;
	if (x->nc > 1 && tried == 0 && s->budget_out) {
		s->untuned++;
		return; /* nothing timed: no record, so a later run tunes it */
	}
	s->tuned++;
	s->default_ms += x->uses * x->c[0].ms;
	s->tuned_ms += x->uses * x->c[best].ms;
	at_record r;
	memset(&r, 0, sizeof r);
	r.kind = x->kind;
	memcpy(r.spec, x->spec, 16);
	r.dev = tu->dev;
	if (x->kind == AT_KERNEL || x->c[best].kern) {
		r.kind = x->kind == AT_KERNEL ? AT_KERNEL : AT_GEMM; /* a product the template won */
		r.cfg = x->c[best].asked; /* what to ask the renderer for again */
	} else {
		r.algo = x->c[best].algo;
	}
	r.algo.valid = r.kind == AT_BLAS;
	r.ms = x->c[best].ms;
	r.default_ms = x->c[0].ms;
	r.candidates = (int32_t)(tried + 1);
	snprintf(r.version, sizeof r.version, "%s", SINTER_VERSION);
	at_store_put(tu->st, &r);
}

/* Buffer id of the product step to that plays the role id plays in from
 * (A, B, output, bias, C). */
static uint32_t role(const cg_mm *from, const cg_mm *to, uint32_t id)
{
	return id == from->a ? to->a : id == from->b ? to->b : id == from->out ? to->out : id == from->bias ? to->bias
													 : to->c;
}

/* The GEMM template won product x: every cuBLASLt step of x's spec
 * becomes a launch of the winner's kernel (added to the plan once, its
 * cubin moved in), on that step's buffers. */
static int patch_mm_kernel(at_tuner *tu, at_item *x, at_cand *c, sn_err *e)
{
	cg_plan *p = tu->p;
	uint32_t kk = 0;
	while (kk < p->nkerns && strcmp(p->kerns[kk].name, c->name))
		kk++;
	if (kk == p->nkerns) {
		cg_kern *nk = realloc(p->kerns, (p->nkerns + 1) * sizeof *nk);
		if (!nk)
			return sn_errf(e, SN_EINTERNAL, "out of memory");
		p->kerns = nk;
		cg_kern *k = &p->kerns[p->nkerns];
		memset(k, 0, sizeof *k);
		if (!(k->src = strdup(c->src)))
			return sn_errf(e, SN_EINTERNAL, "out of memory");
		p->nkerns++;
		memcpy(k->name, c->name, sizeof k->name);
		cg_spec_key(c->src, k->spec);
		k->cfg = c->cfg;
		k->ntmaps = c->ntmaps;
		memcpy(k->tmaps, c->tmaps, sizeof k->tmaps);
		k->cubin = c->cubin; /* moved: compile_kernels skips it */
		k->cubin_size = c->cubin ? c->cubin_size : 0;
		c->cubin = NULL;
	}
	const cg_mm from = p->steps[x->step].mm;
	for (uint32_t s = 0; s < p->nsteps; s++) {
		cg_pstep *ps = &p->steps[s];
		if (ps->kind != CG_MATMUL)
			continue;
		uint8_t spec[16];
		at_mm_spec(&ps->mm, spec);
		if (memcmp(spec, x->spec, 16))
			continue;
		const cg_mm to = ps->mm;
		ps->kind = CG_LAUNCH;
		ps->kern = kk;
		memcpy(ps->grid, c->grid, sizeof c->grid);
		memcpy(ps->block, c->block, sizeof c->block);
		ps->smem = c->smem;
		ps->nargs = c->nargs;
		for (uint32_t a = 0; a < c->nargs; a++)
			ps->args[a] = role(&from, &to, c->args[a]);
		memset(&ps->mm, 0, sizeof ps->mm);
	}
	return SN_OK;
}

/* Puts x's winner into the plan. */
static int patch(at_tuner *tu, at_item *x, sn_err *e)
{
	cg_plan *p = tu->p;
	if (x->chosen < 0)
		return SN_OK;
	at_cand *c = &x->c[x->chosen];
	if (x->kind == AT_BLAS && c->kern)
		return patch_mm_kernel(tu, x, c, e);
	if (x->kind == AT_BLAS) {
		cg_blas_algo a = c->algo;
		a.valid = 1;
		for (uint32_t s = 0; s < p->nsteps; s++) {
			if (p->steps[s].kind != CG_MATMUL)
				continue;
			uint8_t spec[16];
			at_mm_spec(&p->steps[s].mm, spec);
			if (!memcmp(spec, x->spec, 16))
				p->steps[s].mm.algo = a;
		}
		return SN_OK;
	}
	cg_kern *k = &p->kerns[x->kern];
	if (x->chosen == 0) {
		if (!k->cubin && c->cubin) { /* compiled here: compile_kernels skips it */
			k->cubin = c->cubin;
			k->cubin_size = c->cubin_size;
			c->cubin = NULL;
		}
		return SN_OK;
	}
	char *src = strdup(c->src);
	if (!src)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	free(k->src);
	k->src = src;
	memcpy(k->name, c->name, sizeof k->name);
	k->cfg = c->cfg;
	k->ntmaps = c->ntmaps;
	memcpy(k->tmaps, c->tmaps, sizeof k->tmaps);
	if (!p->map && !p->borrowed)
		free(k->cubin);
	k->cubin = c->cubin; /* moved: compile_kernels skips it */
	k->cubin_size = c->cubin ? c->cubin_size : 0;
	c->cubin = NULL;
	for (uint32_t s = 0; s < p->nsteps; s++)
		if (p->steps[s].kind == CG_LAUNCH && p->steps[s].kern == x->kern) {
			memcpy(p->steps[s].grid, c->grid, sizeof c->grid);
			memcpy(p->steps[s].block, c->block, sizeof c->block);
			p->steps[s].smem = c->smem;
		}
	return SN_OK;
}

static int cmp_est(const void *a, const void *b)
{
	const at_item *x = a, *y = b;
	if (x->record != y->record)
		return x->record ? -1 : 1; /* records first: they cost no timing */
	return (x->est < y->est) - (x->est > y->est);
}

int at_tune_plan(const ir_graph *g, const cg_target *t, cg_plan *p, rt_cuda *c, at_store *st,
		 const at_tune_opts *o, at_tune_stats *s, sn_err *e)
{
	memset(s, 0, sizeof *s);
	at_tuner tu = {.g = g, .t = t, .p = p, .c = c, .st = st, .o = o, .s = s, .t0 = sn_now(), .seed = 0x9e3779b97f4a7c15ull};
	tu.budget = o->budget_s > 0 ? o->budget_s : AT_DEFAULT_BUDGET_S;
	tu.cap = o->kernel_cap_s > 0 ? o->kernel_cap_s : AT_DEFAULT_KERNEL_CAP_S;
	tu.tty = isatty(fileno(o->out ? o->out : stderr));
	at_device_of(c, &tu.dev);
	at_item *it = NULL;
	size_t n = 0;
	if (collect(&tu, &it, &n, e))
		return e->code;
	int rc = SN_OK;
	bool any_blas = false;
	for (size_t i = 0; i < n; i++)
		any_blas |= it[i].kind == AT_BLAS;
	if ((rc = rt_nvrtc_open(&tu.nv, e)) || (rc = rt_timer_open(c, &tu.tm, e)) ||
	    (any_blas && (rc = rt_blas_open(c, &tu.blas, e))))
		goto done;
	/* records: a kernel's config must render to exactly that config */
	bool rec_kernels = false;
	for (size_t i = 0; i < n && !rc; i++) {
		rc = from_record(&tu, &it[i], e);
		rec_kernels |= it[i].record && (it[i].kind == AT_KERNEL || it[i].rec.kind == AT_GEMM);
	}
	if (rc)
		goto done;
	if (rec_kernels) {
		pick_ctx pc = {.it = it, .n = n};
		cg_plan *q = NULL;
		if (relower(&tu, &pc, &q) == SN_OK) {
			harvest(it, n, q, NULL);
			harvest_mm(it, n, p, q, NULL);
		}
		cg_plan_free(q);
	}
	for (size_t i = 0; i < n; i++) {
		at_item *x = &it[i];
		/* a kernel's record its renderer did not take, a product's
		 * template config the template did not */
		if (x->record && ((x->kind == AT_KERNEL && x->rec_bad) || (x->rec.kind == AT_GEMM && x->nc < 2))) {
			s->rejected++; /* this build does not render that config here */
			x->record = false;
		}
		x->want = !x->record;
	}
	/* candidates for the rest: products' algorithms (the heuristic's
	 * first is the default, c[0]), then the graph lowered once per config */
	for (size_t i = 0; i < n && !rc; i++)
		if (it[i].want && it[i].kind == AT_BLAS)
			rc = blas_space(&tu, &it[i], AT_MAX_BLAS, e);
	if (rc)
		goto done;
	bool want_kernels = false;
	for (size_t i = 0; i < n; i++)
		want_kernels |= it[i].want && it[i].kind == AT_KERNEL;
	for (size_t k = 0; want_kernels && k < at_space_n; k++) {
		pick_ctx pc = {.it = it, .n = n, .all = &at_space[k]};
		cg_plan *q = NULL;
		if (relower(&tu, &pc, &q) == SN_OK)
			harvest(it, n, q, &at_space[k]);
		cg_plan_free(q);
	}
	/* products: the GEMM template against cuBLASLt's algorithms */
	bool want_mm = false;
	for (size_t i = 0; i < n; i++)
		want_mm |= it[i].want && it[i].kind == AT_BLAS;
	for (size_t k = 0; want_mm && k < at_gemm_space_n; k++) {
		pick_ctx pc = {.it = it, .n = n, .mm_all = &at_gemm_space[k]};
		cg_plan *q = NULL;
		if (relower(&tu, &pc, &q) == SN_OK)
			harvest_mm(it, n, p, q, &at_gemm_space[k]);
		cg_plan_free(q);
	}
	/* an item with nothing to choose from is not tunable */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		bool keep = it[i].record || it[i].nc > 1;
		if (keep) {
			it[m++] = it[i];
		} else {
			for (size_t k = 0; k < it[i].nc; k++)
				cand_free(&it[i].c[k]);
			free(it[i].c);
		}
	}
	n = m;
	tu.total = n;
	s->tunable = n;
	s->specs = malloc((n ? n : 1) * sizeof *s->specs);
	if (!s->specs) {
		rc = sn_errf(e, SN_EINTERNAL, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		memcpy(s->specs[i], it[i].spec, 16);
	s->nspecs = n;
	qsort(it, n, sizeof *it, cmp_est);
	progress(&tu, false);
	/* One NVRTC batch first, so its wall is paid once: every default, every
	 * record's choice, the first chunk's candidates, and the plan's kernels
	 * nothing tunes. A second machine with imported records compiles
	 * nothing after it. */
	bool *all = calloc(n ? n : 1, sizeof *all);
	if (!all) {
		rc = sn_errf(e, SN_EINTERNAL, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		all[i] = it[i].record || i < AT_CHUNK;
	at_compile(&tu, it, n, all, true);
	free(all);
	if (tu.chk_cubin) {
		sn_err ce = {0};
		if (at_check_open(c, tu.chk_cubin, &tu.chk, &ce) != SN_OK && at_fatal(&ce)) {
			rc = sn_errf(e, SN_EINTERNAL, "autotuning: %s", ce.msg);
			goto done;
		}
	}
	for (size_t i0 = 0; i0 < n && !rc; i0 += AT_CHUNK) {
		size_t m = n - i0 < AT_CHUNK ? n - i0 : AT_CHUNK;
		bool spent = sn_now() - tu.t0 >= tu.budget;
		if (spent && !it[i0].record) {
			s->budget_out = true;
			/* the rest keep their defaults and get no record */
			for (size_t i = i0; i < n; i++, tu.done++)
				if (!it[i].record)
					s->untuned++;
			break;
		}
		at_compile(&tu, &it[i0], m, NULL, false);
		for (size_t i = i0; i < i0 + m && !rc; i++) {
			/* a record that chose the default needs no run */
			if (!(it[i].record && it[i].nc == 1))
				rc = it[i].kind == AT_KERNEL ? at_measure_kernel(&tu, &it[i], e) : at_measure_blas(&tu, &it[i], e);
			if (rc)
				break;
			decide(&tu, &it[i]);
			rc = patch(&tu, &it[i], e);
			tu.done++;
			progress(&tu, false);
		}
	}
	s->rejected += at_store_stats_of(st)->rejected;
done:
	s->seconds = sn_now() - tu.t0;
	if (!rc)
		progress(&tu, true);
	at_check_close(tu.chk);
	free(tu.chk_cubin);
	rt_blas_close(tu.blas);
	rt_timer_close(tu.tm);
	rt_nvrtc_close(tu.nv);
	items_free(it, n);
	if (rc)
		at_tune_stats_free(s);
	return rc;
}
