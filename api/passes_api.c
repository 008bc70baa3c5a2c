/* passes_api.c: the public API's graph passes (sinter_model_optimize). */
#include "api/model.h"

#include "ir/log.h"
#include "passes/pass.h"

#include <string.h>

sinter_status sinter_precision_parse(const char *s, sinter_precision *out, sinter_error *err)
{
	static const char *const names[] = {"fp32", "tf32", "bf16", "fp16", "fp8"};
	for (int i = 0; i < (int)SN_COUNT(names); i++)
		if (s && !strcmp(s, names[i])) {
			*out = (sinter_precision)i;
			return SINTER_OK;
		}
	return api_failf(err, SINTER_E_USAGE, "unknown precision '%s' (fp32, tf32, bf16, fp16 or fp8)", s ? s : "");
}

sinter_status sinter_model_optimize(sinter_model *m, const char *mode, const char *passes,
				    sinter_precision precision, int target_sm, const char *dump_dir,
				    sinter_error *err)
{
	if (!passes) {
		passes = pass_pipeline(mode ? mode : "default");
		if (!passes)
			return api_failf(err, SINTER_E_USAGE,
					 "unknown mode '%s' (default, reduce-overhead or max-autotune)", mode);
	}
	if ((unsigned)precision > SINTER_PREC_FP8)
		return api_failf(err, SINTER_E_USAGE, "unknown precision %d", (int)precision);
	if (m->weights) {
		sinter_status ms = api_materialize(m, err);
		if (ms)
			return ms;
	}
	pass_ctx ctx = {
		.ws = m->weights ? m->ws : NULL,
		.precision = (pass_precision)precision,
		.sm = target_sm,
		.dump_dir = dump_dir,
	};
	sn_err e = {0};
	double t0 = sn_now();
	if (pass_run_list(&m->g, passes, &ctx, &e) != SN_OK)
		return api_fail(err, &e);
	sn_stage("passes", t0, "%s, %u nodes after", passes, m->g->nnodes);
	return SINTER_OK;
}
