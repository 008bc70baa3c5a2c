/* observe.c: the public API's logging, trace and graph-picture entry points
 * (sinter.h, "logging, traces, graphs") over ir/log.h. */
#include "api/model.h"
#include "api/observe.h"

#include "ir/log.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

typedef void (*log_fn)(void *, sinter_log_level, const char *);
static _Atomic(log_fn) user_fn; /* set while other threads may be logging */

static void trampoline(void *ctx, int level, const char *msg)
{
	log_fn fn = atomic_load(&user_fn);
	if (fn)
		fn(ctx, (sinter_log_level)level, msg);
}

void sinter_log_set_level(sinter_log_level level)
{
	sn_log_set_level((int)level);
}

sinter_log_level sinter_log_get_level(void)
{
	return (sinter_log_level)sn_log_level();
}

void sinter_log_set_handler(void (*fn)(void *ctx, sinter_log_level level, const char *msg), void *ctx)
{
	atomic_store(&user_fn, fn);
	sn_log_set_handler(fn ? trampoline : NULL, ctx);
}

void sinter_progress_enable(bool on)
{
	sn_progress_enable(on);
}

void sinter_trace_start(void)
{
	sn_trace_start();
}

sinter_status sinter_trace_write(const char *path, sinter_error *err)
{
	char why[512];
	int rc = sn_trace_write(path, why, sizeof why);
	if (rc)
		return api_failf(err, (sinter_status)rc, "trace %s: %s", path, why);
	sn_log(SN_LOG_INFO, "trace written to %s", path);
	return SINTER_OK;
}

static void dot_str(sn_buf *b, const char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			sn_buf_printf(b, "\\%c", *s);
		else
			sn_buf_printf(b, "%c", *s);
}

static void dot_type(sn_buf *b, const ir_graph *g, const ir_node *n)
{
	sn_buf_printf(b, "%s[", ir_dtype_name(n->dtype));
	for (int d = 0; d < n->shape.rank; d++) {
		int64_t v = n->shape.d[d];
		if (IR_IS_SYM(v) && (uint32_t)IR_SYM_ID(v) < g->nsyms)
			sn_buf_printf(b, "%s%s", d ? "," : "", g->syms[IR_SYM_ID(v)]);
		else
			sn_buf_printf(b, "%s%lld", d ? "," : "", (long long)v);
	}
	sn_buf_puts(b, "]");
}

sinter_status sinter_model_print_dot(const sinter_model *m, char **text, sinter_error *err)
{
	const ir_graph *g = m->g;
	sn_buf b = {0};
	sn_buf_puts(&b, "digraph \"");
	dot_str(&b, g->func ? g->func : "main");
	sn_buf_puts(&b, "\" {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fillcolor=white, "
			"fontname=\"Helvetica\", fontsize=10];\n  edge [fontsize=8, color=gray40];\n");
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const ir_node *n = &g->nodes[i];
		const char *op = ir_ops[n->op].name;
		bool io = n->op == IR_OP_input, data = n->op == IR_OP_param || n->op == IR_OP_const;
		sn_buf_printf(&b, "  n%u [label=\"", i);
		if (n->name) {
			sn_buf_puts(&b, "%");
			dot_str(&b, n->name);
			sn_buf_puts(&b, " = ");
		}
		dot_str(&b, op);
		if (n->op == IR_OP_param && n->pname) {
			sn_buf_puts(&b, " \\\"");
			dot_str(&b, n->pname);
			sn_buf_puts(&b, "\\\"");
		}
		sn_buf_puts(&b, "\\n");
		dot_type(&b, g, n);
		sn_buf_printf(&b, "\"%s];\n", io     ? ", shape=oval, fillcolor=lightblue"
					     : data ? ", shape=note, fillcolor=lightyellow, fontsize=8"
						    : "");
		for (uint32_t k = 0; k < n->nin; k++)
			sn_buf_printf(&b, "  n%u -> n%u;\n", n->in[k], i);
	}
	for (uint32_t i = 0; i < g->noutputs; i++)
		sn_buf_printf(&b, "  out%u [label=\"output %u\", shape=oval, fillcolor=palegreen];\n  n%u -> out%u;\n", i,
			      i, g->outputs[i], i);
	sn_buf_puts(&b, "}\n");
	return api_buf_take(&b, text, err);
}

void api_trace_profile(const sinter_profile_entry *p, size_t n, double t0, const char *gpu)
{
	char track[256];
	snprintf(track, sizeof track, "%s: steps (CUDA events, each launched alone)", gpu ? gpu : "GPU");
	api_trace_steps(p, n, t0, track);
}

void api_trace_steps(const sinter_profile_entry *p, size_t n, double t0, const char *track)
{
	if (!sn_trace_on())
		return;
	char name[256], args[512];
	double t = t0;
	for (size_t i = 0; i < n; i++) {
		double s = p[i].ms * 1e-3;
		snprintf(name, sizeof name, "%s %s", p[i].op, p[i].kernel);
		snprintf(args, sizeof args,
			 "\"step\": %zu, \"op\": \"%s\", \"kernel\": \"%s\", \"ms\": %.6f, \"bytes\": %.0f, \"flops\": %.0f, "
			 "\"GB/s\": %.2f, \"TFLOP/s\": %.3f",
			 i, p[i].op, p[i].kernel, p[i].ms, p[i].bytes, p[i].flops, s > 0 ? p[i].bytes / s * 1e-9 : 0.0,
			 s > 0 ? p[i].flops / s * 1e-12 : 0.0);
		sn_trace_device(track, name, t, s, args);
		t += s;
	}
}
