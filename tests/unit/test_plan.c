/* test_plan.c: the plan as data, without a GPU. Lowering a sample gives a
 * self-contained plan (buffers in range, views after their roots, inputs
 * and outputs named as written, the weight image holding the params'
 * values); kernel configs are data (the same spec with another config is
 * another kernel with the same spec key; families that cannot honour a
 * config refuse it); and plan files round-trip exactly, while every
 * corruption (each byte of the tables flipped, truncation at many
 * lengths, a bad version) is refused with a message, never trusted. */
#include "check.h"
#include "api/model.h"
#include "codegen/cg_render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

static bool contains(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

static sinter_model *load(const char *path, int64_t n)
{
	sinter_shape_binding b = {"N", n};
	sinter_load_options o = {.size = sizeof(sinter_load_options), .shapes = &b, .nshapes = 1};
	sinter_model *m = NULL;
	sinter_error err;
	if (sinter_model_load(path, &o, &m, &err)) {
		fprintf(stderr, "%s\n", err.message);
		return NULL;
	}
	return m;
}

/* mlp with random weights, lowered with its weight image; 17 rows, so
 * that its products are cuBLASLt's (16 or fewer take cg_gemv.c). */
static cg_plan *lower_mlp(sinter_model **mout)
{
	sinter_model *m = load(SINTER_SOURCE_DIR "/samples/mlp.sir", 17);
	sinter_error err;
	CHECK(m && !sinter_model_init_random(m, 1, &err) && !api_materialize(m, &err));
	ir_tensor *vals = NULL;
	CHECK(m && !api_param_vals(m->g, m->ws, &vals, &err));
	cg_target t = {.sm = 90};
	cg_plan *p = NULL;
	sn_err e = {0};
	CHECK(m && vals && cg_lower(m->g, vals, &t, &p, &e) == SN_OK);
	/* the image holds every param's value at its buffer's offset */
	for (uint32_t i = 0; p && i < m->g->nnodes; i++) {
		const ir_node *n = &m->g->nodes[i];
		if (n->op != IR_OP_param)
			continue;
		bool found = false;
		for (uint32_t b = 0; b < p->nbufs && !found; b++)
			found = p->bufs[b].where == CG_IN_WEIGHT && p->bufs[b].bytes == vals[i].nbytes &&
				!memcmp((char *)p->weights + p->bufs[b].offset, vals[i].data, vals[i].nbytes);
		CHECK(found);
	}
	api_vals_free(m->g, m->ws, vals);
	*mout = m;
	return p;
}

static void test_structure(void)
{
	sinter_model *m = NULL;
	cg_plan *p = lower_mlp(&m);
	if (!p)
		return;
	CHECK(p->sm == 90 && p->ninputs == 1 && p->noutputs == 1);
	CHECK_STR(p->inputs[0].name, "x");
	CHECK(p->inputs[0].rank == 2 && p->inputs[0].shape[0] == 17 && p->inputs[0].shape[1] == 4096);
	CHECK(p->bufs[p->inputs[0].buf].where == CG_IN_INPUT);
	for (uint32_t b = 0; b < p->nbufs; b++) {
		const cg_buf *x = &p->bufs[b];
		if (x->where == CG_IN_ARENA)
			CHECK(x->offset % CG_ALIGN == 0 && x->offset + x->bytes <= p->arena_bytes);
		if (x->where == CG_IN_WEIGHT)
			CHECK(x->offset % CG_ALIGN == 0 && x->offset + x->bytes <= p->weight_bytes);
		if (x->where == CG_IN_VIEW)
			CHECK(x->index < b);
	}
	size_t launches = 0, mms = 0;
	for (uint32_t i = 0; i < p->nsteps; i++) {
		const cg_pstep *s = &p->steps[i];
		if (s->kind == CG_LAUNCH) {
			launches++;
			CHECK(s->kern < p->nkerns && s->nargs >= 1);
			for (uint32_t a = 0; a < s->nargs; a++)
				CHECK(s->args[a] < p->nbufs);
		} else {
			mms++;
			CHECK(s->mm.a < p->nbufs && s->mm.b < p->nbufs && s->mm.out < p->nbufs);
			CHECK(s->flops == 2.0 * (double)s->mm.batch * (double)s->mm.m * (double)s->mm.n * (double)s->mm.k);
		}
	}
	/* 4 linear layers through cuBLASLt and 4 GELUs as kernels (one unique) */
	CHECK(mms == 4 && launches == 4 && p->nkerns == 1);
	cg_plan_free(p);
	sinter_model_free(m);
}

static void test_configs(void)
{
	ir_graph *g = ir_graph_new();
	sn_err e = {0};
	ir_shape s = {2, {64, 1000}};
	ir_ref x = ir_add_input(g, "x", IR_F32, &s, &e);
	ir_ref y = ir_add(g, IR_OP_exp, &x, 1, NULL, &e);
	CHECK(g && y != IR_NONE && ir_add_output(g, y) == SN_OK && ir_verify(g, &e) == SN_OK);
	cg_target t = {.sm = 90};
	cg_step d, c, v;
	memset(&d, 0, sizeof d);
	memset(&c, 0, sizeof c);
	memset(&v, 0, sizeof v);
	d.node = c.node = v.node = y;
	cg_config want = {.block = 128}, wantv = {.vec = 1};
	CHECK(cg_render_elementwise(g, y, &t, NULL, &d, &e) == SN_OK);
	CHECK(cg_render_elementwise(g, y, &t, &want, &c, &e) == SN_OK);
	CHECK(cg_render_elementwise(g, y, &t, &wantv, &v, &e) == SN_OK);
	CHECK(d.k.block[0] == 256 && d.k.cfg.block == 256 && d.k.cfg.vec == 4);
	CHECK(c.k.block[0] == 128 && c.k.cfg.block == 128 && strstr(c.k.src, "__launch_bounds__(128)"));
	CHECK(d.k.grid[0] == (16000 + 255) / 256 && c.k.grid[0] == (16000 + 127) / 128);
	CHECK(v.k.cfg.vec == 1 && !strstr(v.k.src, "int4"));
	CHECK(strcmp(d.k.name, c.k.name) && strcmp(d.k.name, v.k.name));
	/* refused configs: a family without a search space, and bad values */
	cg_config bad = {.block = 100};
	cg_step b;
	memset(&b, 0, sizeof b);
	e = (sn_err){0};
	CHECK(cg_render_elementwise(g, y, &t, &bad, &b, &e) == SN_EUSAGE && strstr(e.msg, "multiple of 32"));
	free(b.k.src);
	char str[128];
	cg_config_str(&c.k.cfg, str, sizeof str);
	CHECK_STR(str, "block=128 vec=4");
	cg_config_str(&(cg_config){0}, str, sizeof str);
	CHECK_STR(str, "default");
	free(d.k.src);
	free(c.k.src);
	free(v.k.src);
	ir_graph_free(g);
}

static void test_spec_key(void)
{
	/* two plans of one model, lowered alike: same kernels, same spec keys */
	sinter_model *m = NULL;
	cg_plan *p = lower_mlp(&m);
	cg_target t = {.sm = 90};
	cg_plan *q = NULL;
	sn_err e = {0};
	CHECK(p && cg_lower(m->g, NULL, &t, &q, &e) == SN_OK);
	CHECK(p && q && p->nkerns == q->nkerns);
	for (uint32_t i = 0; p && q && i < p->nkerns && i < q->nkerns; i++) {
		CHECK_STR(p->kerns[i].name, q->kerns[i].name);
		CHECK(!memcmp(p->kerns[i].spec, q->kerns[i].spec, 16));
	}
	/* without values the image is zeros, of the same size */
	CHECK(p && q && p->weight_bytes == q->weight_bytes);
	cg_plan_free(p);
	cg_plan_free(q);
	sinter_model_free(m);
}

static void test_files(void)
{
	sinter_model *m = NULL;
	cg_plan *p = lower_mlp(&m);
	if (!p)
		return;
	/* stand-in cubins: the format carries bytes, it does not read them */
	for (uint32_t i = 0; i < p->nkerns; i++) {
		p->kerns[i].cubin_size = 100 + i;
		p->kerns[i].cubin = malloc(p->kerns[i].cubin_size);
		memset(p->kerns[i].cubin, 0x40 + (int)i, p->kerns[i].cubin_size);
	}
	p->steps[0].mm.algo = (cg_blas_algo){.valid = 1, .id = 21, .tile = 18, .stages = 3, .splitk = 1};
	/* a tensor map on the first kernel: carried as written */
	p->kerns[0].ntmaps = 1;
	p->kerns[0].tmaps[0] = (cg_tmap){.arg = 0, .dtype = 9, .rank = 3, .swizzle = 3, .dims = {96, 64, 5},
					 .strides = {0, 192, 12288}, .box = {64, 128, 1}};
	char path[] = "/tmp/sinter-test-plan-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	cg_plan_info info = {.w_size = 7, .w_mtime_ns = 8, .w_ino = 9};
	snprintf(info.version, sizeof info.version, "test");
	snprintf(info.source, sizeof info.source, "mlp.sir");
	sn_err e = {0};
	CHECK(cg_plan_write(path, p, &info, &e) == SN_OK);
	cg_plan *q = NULL;
	cg_plan_info got;
	CHECK(cg_plan_read(path, true, &q, &got, &e) == SN_OK);
	if (q) {
		sn_buf a = {0}, b = {0};
		cg_plan_list(p, &a);
		cg_plan_list(q, &b);
		CHECK(a.s && b.s && !strcmp(a.s, b.s));
		sn_buf_free(&a);
		sn_buf_free(&b);
		CHECK(q->nbufs == p->nbufs && !memcmp(q->bufs, p->bufs, p->nbufs * sizeof *p->bufs));
		CHECK(q->weight_bytes == p->weight_bytes && !memcmp(q->weights, p->weights, p->weight_bytes));
		CHECK(q->arena_bytes == p->arena_bytes && q->nkerns == p->nkerns);
		for (uint32_t i = 0; i < p->nkerns; i++)
			CHECK(q->kerns[i].cubin_size == p->kerns[i].cubin_size &&
			      !memcmp(q->kerns[i].cubin, p->kerns[i].cubin, p->kerns[i].cubin_size) &&
			      !memcmp(q->kerns[i].spec, p->kerns[i].spec, 16) && !q->kerns[i].src &&
			      q->kerns[i].ntmaps == p->kerns[i].ntmaps &&
			      !memcmp(q->kerns[i].tmaps, p->kerns[i].tmaps, sizeof q->kerns[i].tmaps));
		CHECK(q->steps[0].mm.algo.valid && q->steps[0].mm.algo.id == 21 && q->steps[0].mm.algo.tile == 18);
		CHECK_STR(q->inputs[0].name, "x");
		CHECK_STR(got.source, "mlp.sir");
		CHECK(got.w_size == 7 && got.w_mtime_ns == 8 && got.w_ino == 9);
		CHECK(((uintptr_t)q->weights % 4096) == 0);
	}
	cg_plan_free(q);

	/* corruption: every byte of the header and tables, flipped one at a
	 * time, and every truncation length up to there and a few beyond,
	 * must be refused (never a crash under ASan, never a plan) */
	FILE *f = fopen(path, "rb");
	fseek(f, 0, SEEK_END);
	size_t size = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *data = malloc(size);
	CHECK(fread(data, 1, size, f) == size);
	fclose(f);
	uint64_t meta;
	memcpy(&meta, data + 32, 8);
	size_t refused = 0, tried = 0;
	for (size_t i = 0; i < 64 + meta && i < size; i++) {
		data[i] ^= 0x5a;
		cg_plan *r = NULL;
		e = (sn_err){0};
		bool bad = cg_plan_parse(data, size, &r, NULL, &e) != SN_OK;
		refused += bad;
		tried++;
		cg_plan_free(r);
		data[i] ^= 0x5a;
	}
	CHECK(refused == tried);
	for (size_t n = 0; n < size; n += n < 4096 ? 7 : 65537) {
		cg_plan *r = NULL;
		e = (sn_err){0};
		CHECK(cg_plan_parse(data, n, &r, NULL, &e) == SN_EINPUT && !r);
	}
	/* a flipped weight byte is caught by the checksum too */
	data[size - 1] ^= 1;
	cg_plan *r = NULL;
	e = (sn_err){0};
	CHECK(cg_plan_parse(data, size, &r, NULL, &e) == SN_EINPUT && strstr(e.msg, "checksum"));
	data[size - 1] ^= 1;
	CHECK(cg_plan_parse(data, size, &r, NULL, &e) == SN_OK);
	cg_plan_free(r);
	printf("plan files: %zu of %zu flipped bytes refused\n", refused, tried);
	/* a symlink is refused where sinter reads its own folders */
	char link[64];
	snprintf(link, sizeof link, "%s.lnk", path);
	CHECK(symlink(path, link) == 0);
	e = (sn_err){0};
	CHECK(cg_plan_read(link, true, &r, NULL, &e) != SN_OK && !r);
	CHECK(cg_plan_read(link, false, &r, NULL, &e) == SN_OK);
	cg_plan_free(r);
	unlink(link);
	/* in a cache, an entry others may write is not trusted; one the group
	 * may write is, when the cache is shared (SINTER_CACHE_SHARED=1) */
	r = NULL;
	CHECK(chmod(path, 0664) == 0);
	e = (sn_err){0};
	CHECK(cg_plan_read(path, true, &r, NULL, &e) == SN_EINPUT && !r && contains(e.msg, "writable by others"));
	CHECK(cg_plan_read(path, false, &r, NULL, &e) == SN_OK && r); /* a package the user named */
	cg_plan_free(r);
	r = NULL;
	setenv("SINTER_CACHE_SHARED", "1", 1);
	CHECK(cg_plan_read(path, true, &r, NULL, &e) == SN_OK && r);
	cg_plan_free(r);
	r = NULL;
	CHECK(chmod(path, 0666) == 0);
	e = (sn_err){0};
	CHECK(cg_plan_read(path, true, &r, NULL, &e) == SN_EINPUT && !r && contains(e.msg, "writable by others"));
	unsetenv("SINTER_CACHE_SHARED");
	CHECK(chmod(path, 0644) == 0);
	/* a plan file truncated while the plan is loaded (a package on a
	 * network disk, a cache entry replaced): the plan holds its own copy,
	 * so reading every weight and cubin byte afterwards is no SIGBUS (it
	 * was while the file was mapped); reading the truncated file is a
	 * clean error */
	r = NULL;
	CHECK(cg_plan_read(path, true, &r, NULL, &e) == SN_OK && r);
	CHECK(truncate(path, (off_t)(size / 2)) == 0);
	if (r) {
		CHECK(r->weight_bytes && !memcmp(r->weights, data + size - r->weight_bytes, r->weight_bytes));
		unsigned sum = 0;
		for (uint32_t i = 0; i < r->nkerns; i++)
			for (uint64_t j = 0; j < r->kerns[i].cubin_size; j++)
				sum += ((const unsigned char *)r->kerns[i].cubin)[j];
		CHECK(sum != 0);
	}
	cg_plan_free(r);
	r = NULL;
	e = (sn_err){0};
	CHECK(cg_plan_read(path, true, &r, NULL, &e) == SN_EINPUT && !r && contains(e.msg, path));
	CHECK(truncate(path, 0) == 0);
	e = (sn_err){0};
	CHECK(cg_plan_read(path, true, &r, NULL, &e) == SN_EINPUT && !r && contains(e.msg, "empty"));
	free(data);
	unlink(path);
	cg_plan_free(p);
	sinter_model_free(m);
}

/* Inputs the fuzzer found: each must be refused cleanly (the ASan build
 * runs this test too; the fuzz build skips the checksum, this one does not,
 * so each is also fed with its checksum fixed up). */
static void test_regressions(void)
{
	static const char *const files[] = {"regress-counts-without-arrays"};
	for (size_t i = 0; i < SN_COUNT(files); i++) {
		char path[512];
		snprintf(path, sizeof path, "%s/tests/fuzz/corpus_plan/%s", SINTER_SOURCE_DIR, files[i]);
		FILE *f = fopen(path, "rb");
		CHECK(f != NULL);
		if (!f)
			continue;
		unsigned char buf[1 << 16];
		size_t n = fread(buf, 1, sizeof buf, f);
		fclose(f);
		cg_plan *p = NULL;
		sn_err e = {0};
		CHECK(cg_plan_parse(buf, n, &p, NULL, &e) != SN_OK && !p);
		uint64_t w_off;
		if (n >= 64) {
			memcpy(&w_off, buf + 48, 8);
			if (w_off >= 64 && w_off <= n) {
				uint64_t sum = XXH3_64bits(buf + 64, w_off - 64);
				memcpy(buf + 24, &sum, 8);
			}
		}
		e = (sn_err){0};
		CHECK(cg_plan_parse(buf, n, &p, NULL, &e) != SN_OK && !p);
	}
}

int main(void)
{
	test_regressions();
	test_structure();
	test_configs();
	test_spec_key();
	test_files();
	printf("plan: %d checks, %d failures\n", check_count, check_failures);
	return check_failures != 0;
}
