/* json.c: outputs summarized, as text or JSON, and the JSON helpers
 * every command's --json uses. */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A JSON string. */
void cli_json_str(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* {"name", "dtype", "shape"}: a symbolic dim as its symbol's name when m
 * (and the input's index) says which, else null. */
static void json_desc_open(const sinter_tensor *d, const sinter_model *m, int input)
{
	printf("{\"name\": ");
	cli_json_str(d->name ? d->name : "");
	printf(", \"dtype\": \"%s\", \"shape\": [", sinter_dtype_name(d->dtype));
	for (int k = 0; k < d->rank; k++) {
		const char *sym = m && d->shape[k] < 0 ? sinter_model_input_symbol(m, (size_t)input, k) : NULL;
		printf("%s", k ? ", " : "");
		if (sym)
			cli_json_str(sym);
		else if (d->shape[k] < 0)
			printf("null");
		else
			printf("%" PRId64, d->shape[k]);
	}
	printf("]");
}

void cli_json_desc(const sinter_tensor *d, const sinter_model *m, int input)
{
	json_desc_open(d, m, input);
	printf("}");
}

static void type_str(const sinter_tensor *t, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s[", sinter_dtype_name(t->dtype));
	for (int i = 0; i < t->rank && n > 0 && (size_t)n < cap; i++)
		n += snprintf(out + n, cap - (size_t)n, "%s%" PRId64, i ? "," : "", t->shape[i]);
	if (n > 0 && (size_t)n < cap)
		snprintf(out + n, cap - (size_t)n, "]");
}

static double elem(const sinter_tensor *t, size_t i);

void cli_summarize(const sinter_tensor *t)
{
	char type[200];
	type_str(t, type, sizeof type);
	size_t n = t->nbytes / (sinter_dtype_size(t->dtype) ? sinter_dtype_size(t->dtype) : 1);
	double sum = 0, amax = 0;
	for (size_t i = 0; i < n; i++) {
		double x = elem(t, i);
		sum += x;
		if (fabs(x) > amax || isnan(x))
			amax = isnan(x) ? x : fabs(x);
	}
	printf("%%%s: %s  mean %.6g  abs-max %.6g  first:", t->name, type, n ? sum / (double)n : 0.0, amax);
	for (size_t i = 0; i < n && i < 6; i++)
		printf(" %.6g", elem(t, i));
	printf("%s\n", n > 6 ? " ..." : "");
}

/* summarize's numbers as a JSON object. */
static void json_output(const sinter_tensor *t)
{
	size_t n = t->nbytes / (sinter_dtype_size(t->dtype) ? sinter_dtype_size(t->dtype) : 1);
	double sum = 0, amax = 0;
	for (size_t i = 0; i < n; i++) {
		double x = elem(t, i);
		sum += x;
		if (fabs(x) > amax || isnan(x))
			amax = isnan(x) ? x : fabs(x);
	}
	json_desc_open(t, NULL, 0);
	double mean = n ? sum / (double)n : 0.0;
	printf(", \"mean\": ");
	isfinite(mean) ? printf("%.9g", mean) : printf("null");
	printf(", \"abs_max\": ");
	isfinite(amax) ? printf("%.9g", amax) : printf("null");
	printf(", \"first\": [");
	for (size_t i = 0; i < n && i < 6; i++)
		isfinite(elem(t, i)) ? printf("%s%.9g", i ? ", " : "", elem(t, i)) : printf("%snull", i ? ", " : "");
	printf("]}");
}

/* The run object's last member and its close: each output's summary. */
void cli_json_outputs(const sinter_tensor *outs, size_t n)
{
	printf(",\n \"outputs\": [");
	for (size_t i = 0; i < n; i++) {
		printf("%s", i ? ",\n  " : "");
		json_output(&outs[i]);
	}
	printf("]}\n");
}

/* Element i as a double, for the summary (via the bit layouts of the dtypes). */
static double elem(const sinter_tensor *t, size_t i)
{
	const unsigned char *p = t->data;
	switch (t->dtype) {
	case SINTER_F32: { float f; memcpy(&f, p + 4 * i, 4); return f; }
	case SINTER_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
	case SINTER_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
	case SINTER_I8: return (int8_t)p[i];
	case SINTER_U8: return p[i];
	case SINTER_BOOL: return p[i] != 0;
	case SINTER_BF16: {
		uint32_t u = (uint32_t)(p[2 * i] | p[2 * i + 1] << 8) << 16;
		float f;
		memcpy(&f, &u, 4);
		return f;
	}
	case SINTER_F16: {
		unsigned h = (unsigned)(p[2 * i] | p[2 * i + 1] << 8);
		int ex = (h >> 10) & 31, man = h & 1023;
		double v = ex == 0 ? ldexp(man, -24) : ex == 31 ? (man ? NAN : INFINITY)
								  : ldexp(man | 1024, ex - 25);
		return h & 0x8000 ? -v : v;
	}
	default: return NAN; /* fp8 summaries are not needed yet */
	}
}

/* The number after "key": in a one-line JSON object; -1 when absent. */
double cli_json_num(const char *line, const char *key)
{
	char q[64];
	snprintf(q, sizeof q, "\"%s\": ", key);
	const char *p = strstr(line, q);
	return p ? strtod(p + strlen(q), NULL) : -1;
}
