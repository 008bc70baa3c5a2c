/* test_cuda_tune_space.c: every candidate max-autotune can make compiles,
 * without a GPU. Samples (after the default passes, bf16, fused) are
 * lowered once per config of the search space (at_space) with
 * cg_target.pick asking every kernel for it, as the tuner does; each
 * kernel a renderer rendered with the config it was asked for must say so
 * in its cg_config, keep its spec key, and every distinct variant is
 * NVRTC-compiled, for sm_80 and sm_90 each lowered for its own arch (the
 * attention wgmma configs exist on sm_90 only; GPT-2 in bf16 takes them;
 * the MLP's linear + erf GELU is a GEMM template kernel and takes its tiles;
 * the wgmma convolution's too: resblock's convs take it in bf16 and, as a
 * last sample on sm_90, under TF32). Then once per config of the GEMM
 * template's space against cuBLASLt (at_gemm_space) with cg_target.pick_mm
 * asking every cuBLASLt product for it: each becomes a template launch
 * on the product's own buffers, and those kernels (split-K over clusters
 * on sm_90 among them) are compiled too.
 * Skipped (exit 0) without NVRTC. */
#include "api/model.h"
#include "autotune/at_tune.h"
#include "autotune/cuda_check.h"
#include "runtime/cuda_nvrtc.h"

#include "check.h"

#include <stdlib.h>

static const cg_config *asked;

static bool pick_all(void *ctx, const uint8_t spec[16], const cg_config *def, cg_config *want)
{
	(void)ctx;
	(void)spec;
	(void)def;
	*want = *asked;
	return true;
}

/* every product cuBLASLt would run, as the GEMM template with `asked` */
static bool pick_mm_all(void *ctx, const cg_mm *mm, cg_config *want)
{
	(void)ctx;
	(void)mm;
	*want = *asked;
	return true;
}

typedef struct variant {
	char name[64];
	char *src;
} variant;

/* Lowers the samples for sm once per config of the space and compiles
 * every distinct variant for sm (wgmma kernels exist on sm_90 only). */
static void space_for(rt_nvrtc *nv, int sm)
{
	sn_err e = {0};
	/* GPT-2 (bf16) for its attention's wgmma configs, which exist on sm_90 only */
	static const char *const samples[][3] = {
		{"resblock", "2", "bf16"}, {"mlp", "2", "bf16"}, {"gpt2", "1", "bf16"}, {"resblock", "2", "tf32"}};
	size_t nsamples = sm == 90 ? 4 : 2;
	variant *vs = NULL;
	size_t nv_ = 0, cap = 0, taken = 0, convs = 0, gemms = 0, products = 0, splitk = 0;
	for (size_t si = 0; si < nsamples; si++) {
		char path[512];
		snprintf(path, sizeof path, SINTER_SOURCE_DIR "/samples/%s.sir", samples[si][0]);
		sinter_shape_binding b = {"N", atoll(samples[si][1])};
		sinter_load_options o = {.size = sizeof(sinter_load_options), .shapes = &b, .nshapes = 1};
		sinter_model *m = NULL;
		sinter_error err;
		CHECK(!sinter_model_load(path, &o, &m, &err));
		if (!m)
			continue;
		bool tf32 = !strcmp(samples[si][2], "tf32");
		CHECK(!sinter_model_optimize(m, "max-autotune", NULL, tf32 ? SINTER_PREC_TF32 : SINTER_PREC_BF16, sm, NULL,
					     &err));
		cg_target t0 = {.sm = sm, .tf32 = tf32};
		cg_plan *def = NULL;
		CHECK(cg_lower(m->g, NULL, &t0, &def, &e) == SN_OK);
		for (size_t k = 0; def && k < at_space_n; k++) {
			asked = &at_space[k];
			cg_target t = {.sm = sm, .tf32 = tf32, .pick = pick_all};
			cg_plan *p = NULL;
			sn_err le = {0};
			CHECK(cg_lower(m->g, NULL, &t, &p, &le) == SN_OK);
			/* the same steps; a kernel differs only where its config does */
			CHECK(p && p->nsteps == def->nsteps && p->nkerns == def->nkerns);
			for (uint32_t i = 0; p && i < p->nkerns && i < def->nkerns; i++) {
				const cg_kern *a = &p->kerns[i], *d = &def->kerns[i];
				CHECK(!memcmp(a->spec, d->spec, 16));
				if (!strcmp(a->name, d->name))
					continue;
				/* rendered with what it was asked for */
				const int32_t want[] = {asked->block, asked->vec, asked->tile_m, asked->tile_n, asked->warps,
							asked->stages};
				const int32_t got[] = {a->cfg.block, a->cfg.vec, a->cfg.tile_m, a->cfg.tile_n, a->cfg.warps,
						       a->cfg.stages};
				for (size_t f = 0; f < SN_COUNT(want); f++)
					CHECK(!want[f] || want[f] == got[f] || (f == 1 && got[f] == 0));
				convs += a->cfg.tile_m != 0;
				gemms += !strncmp(a->name, "gemm_tc_", 8); /* the MLP's linear + GELU */
				taken++;
				bool dup = false;
				for (size_t j = 0; j < nv_ && !dup; j++)
					dup = !strcmp(vs[j].name, a->name);
				if (dup)
					continue;
				if (nv_ == cap) {
					cap = cap ? 2 * cap : 64;
					vs = realloc(vs, cap * sizeof *vs);
				}
				memcpy(vs[nv_].name, a->name, 64);
				vs[nv_++].src = strdup(a->src);
			}
			cg_plan_free(p);
		}
		/* the GEMM template's configs against cuBLASLt (at_gemm_space):
		 * every product step becomes a template launch on the same
		 * buffers where the template takes the config */
		for (size_t k = 0; def && k < at_gemm_space_n; k++) {
			asked = &at_gemm_space[k];
			cg_target t = {.sm = sm, .tf32 = tf32, .pick_mm = pick_mm_all};
			cg_plan *p = NULL;
			sn_err le = {0};
			CHECK(cg_lower(m->g, NULL, &t, &p, &le) == SN_OK);
			CHECK(p && p->nsteps == def->nsteps);
			for (uint32_t i = 0; p && i < p->nsteps && i < def->nsteps; i++) {
				const cg_pstep *a = &p->steps[i], *d = &def->steps[i];
				if (d->kind != CG_MATMUL || a->kind != CG_LAUNCH)
					continue;
				const cg_kern *kk = &p->kerns[a->kern];
				CHECK(!strncmp(kk->name, asked->variant == 16 ? "gemv_" : "gemm_tc_", asked->variant == 16 ? 5 : 8));
				for (uint32_t j = 0; j < a->nargs; j++) {
					uint32_t id = a->args[j];
					CHECK(id == d->mm.a || id == d->mm.b || id == d->mm.out || id == d->mm.bias || id == d->mm.c);
				}
				const int32_t want[] = {asked->variant, asked->tile_m, asked->tile_n, asked->warps, asked->stages,
							asked->split_k};
				const int32_t got[] = {kk->cfg.variant, kk->cfg.tile_m, kk->cfg.tile_n, kk->cfg.warps,
						       kk->cfg.stages, kk->cfg.split_k};
				for (size_t f = 0; f < SN_COUNT(want); f++)
					CHECK(!want[f] || want[f] == got[f]);
				products++;
				splitk += kk->cfg.variant == 2 && kk->cfg.split_k > 1;
				bool dup = false;
				for (size_t j = 0; j < nv_ && !dup; j++)
					dup = !strcmp(vs[j].name, kk->name);
				if (dup)
					continue;
				if (nv_ == cap) {
					cap = cap ? 2 * cap : 64;
					vs = realloc(vs, cap * sizeof *vs);
				}
				memcpy(vs[nv_].name, kk->name, 64);
				vs[nv_++].src = strdup(kk->src);
			}
			cg_plan_free(p);
		}
		cg_plan_free(def);
		sinter_model_free(m);
	}
	CHECK(nv_ > 10 && convs > 0 && gemms > 0);
	/* products against cuBLASLt, split-K over clusters among them (GPT-2's
	 * products; sm_80's samples, resblock and the MLP, have none that
	 * cuBLASLt runs: the MLP's take the template by default) */
	CHECK(sm != 90 || (products > 0 && splitk > 0));
	printf("sm_%d: %zu cuBLASLt products rendered as the GEMM template (%zu with split-K over a cluster)\n", sm,
	       products, splitk);
	/* the tuner's own check kernels (autotune/cuda_check.c) */
	if (nv_ == cap) {
		cap = cap ? 2 * cap : 64;
		vs = realloc(vs, cap * sizeof *vs);
	}
	snprintf(vs[nv_].name, sizeof vs[nv_].name, "%s", AT_CHECK_JOB);
	vs[nv_++].src = strdup(at_check_src());
	printf("sm_%d: %zu kernels took a config of the space (%zu tiled, %zu of them the GEMM template); %zu distinct "
	       "variants\n", sm, taken, convs, gemms, nv_);
	rt_job *jobs = calloc(nv_ ? nv_ : 1, sizeof *jobs);
	for (size_t i = 0; i < nv_; i++) {
		jobs[i].name = vs[i].name;
		jobs[i].src = vs[i].src;
	}
	sn_err ce = {0};
	rt_compile_stats cs = {0};
	int rc = rt_compile_all(nv, jobs, nv_, sm, NULL, 0, NULL, NULL, NULL, &cs, &ce);
	if (rc)
		fprintf(stderr, "%s\n", ce.msg);
	CHECK(rc == SN_OK && cs.compiled == nv_);
	printf("sm_%d: %zu variants compiled in %.1f s\n", sm, cs.compiled, cs.seconds);
	rt_jobs_free(jobs, nv_);
	for (size_t i = 0; i < nv_; i++)
		free(vs[i].src);
	free(vs);
	free(jobs);
}

int main(void)
{
	rt_nvrtc *nv = NULL;
	sn_err e = {0};
	if (rt_nvrtc_open(&nv, &e) != SN_OK) {
		printf("skipped: %s\n", e.msg);
		return 0;
	}
	space_for(nv, 80);
	space_for(nv, 90);
	rt_nvrtc_close(nv);
	printf("tune_space: %d checks, %d failed\n", check_count, check_failures);
	return check_failures != 0;
}
