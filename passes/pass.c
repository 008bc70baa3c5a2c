/* pass.c: the pass table, the modes' pipelines and the pass runner. */
#include "passes/pass.h"
#include "ir/file.h"
#include "passes/passes.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

const pass_info pass_table[] = {
	{"canonicalize", pass_canonicalize,
	 "constant folding, CSE, DCE and algebraic simplification until nothing changes"},
	{"fold-bn", pass_fold_bn, "fold inference batch_norm into the conv2d or linear before it"},
	{"layout", pass_layout, "run convolutional regions channels-last (NHWC)"},
	{"precision", pass_precision_run, "convert weights and activations to the chosen precision"},
	{"attention", pass_attention, "rewrite matmul, scale, mask, softmax, matmul into scaled_dot_product_attention"},
};
const size_t pass_count = SN_COUNT(pass_table);

static const struct {
	const char *mode, *list;
} pipelines[] = {
	{"default", "canonicalize,fold-bn,layout,precision,attention,canonicalize"},
	{"reduce-overhead", "canonicalize,fold-bn,layout,precision,attention,canonicalize"},
	{"max-autotune", "canonicalize,fold-bn,layout,precision,attention,canonicalize"},
};

const char *pass_pipeline(const char *mode)
{
	for (size_t i = 0; mode && i < SN_COUNT(pipelines); i++)
		if (strcmp(pipelines[i].mode, mode) == 0)
			return pipelines[i].list;
	return NULL;
}

static const pass_info *find(const char *s, size_t n)
{
	for (size_t i = 0; i < pass_count; i++)
		if (strlen(pass_table[i].name) == n && memcmp(pass_table[i].name, s, n) == 0)
			return &pass_table[i];
	return NULL;
}

static int unknown(const char *s, size_t n, sn_err *e)
{
	char known[256];
	size_t k = 0;
	known[0] = 0;
	for (size_t i = 0; i < pass_count && k < sizeof known; i++)
		k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", i ? ", " : "", pass_table[i].name);
	if (n == 0)
		return sn_errf(e, SN_EUSAGE, "empty pass name in the pass list (known passes: %s)", known);
	return sn_errf(e, SN_EUSAGE, "unknown pass '%.*s' (known passes: %s)", (int)(n > 64 ? 64 : n), s,
		       known);
}

static int dump(const ir_graph *g, const char *dir, unsigned idx, const char *name, sn_err *e)
{
	char path[4096];
	int k = snprintf(path, sizeof path, "%s/%02u-%s.sir", dir, idx, name);
	if (k < 0 || (size_t)k >= sizeof path)
		return sn_errf(e, SN_EENV, "dump directory path is too long: %s", dir);
	sn_buf b = {0};
	ir_print(g, &b);
	if (b.oom) {
		sn_buf_free(&b);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	/* the one writer (ir/file.h): a symlink planted in the folder is
	 * replaced, never written through */
	int rc = sn_write_file(path, b.s ? b.s : "", b.len, 0666, e);
	sn_buf_free(&b);
	return rc;
}

int pass_run_list(ir_graph **g, const char *list, pass_ctx *ctx, sn_err *e)
{
	if (!list)
		list = "";
	/* Check every name before running anything. */
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		if (!find(p, n))
			return unknown(p, n, e);
		p += n;
		if (*p == ',' && !*++p)
			return unknown(p, 0, e);
	}
	pass_ctx none = {0};
	if (!ctx)
		ctx = &none;
	sn_err ve = {0};
	if (ir_verify(*g, &ve) != SN_OK)
		return sn_errf(e, ve.code == SN_EINTERNAL ? SN_EINTERNAL : SN_EINPUT,
			       "the graph is invalid before the passes: %s", ve.msg);
	unsigned idx = 0;
	if (ctx->dump_dir && dump(*g, ctx->dump_dir, idx, "input", e) != SN_OK)
		return e->code;
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ",");
		const pass_info *pi = find(p, n);
		p += n + (p[n] == ',');
		if (pi->fn(g, ctx, e) != SN_OK)
			return e->code ? e->code : sn_errf(e, SN_EINTERNAL, "pass %s failed", pi->name);
		if (!*g)
			return sn_errf(e, SN_EINTERNAL, "pass %s returned no graph", pi->name);
		if (ir_verify(*g, &ve) != SN_OK)
			return sn_errf(e, SN_EINTERNAL, "pass %s broke the graph: %s", pi->name, ve.msg);
		if (ctx->dump_dir && dump(*g, ctx->dump_dir, ++idx, pi->name, e) != SN_OK)
			return e->code;
	}
	return SN_OK;
}
