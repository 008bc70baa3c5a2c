/* generate.c: sinter generate, a decoder LLM's tokens: the prompt run once
 * (prefill), then one token per call (decode) on the KV cache the model
 * keeps as state (docs/CLI.md, docs/DESIGN.md, State).
 *
 * The model's contract (samples/llama.sir keeps it): its first input is
 * the token ids i64[T] or i64[B,T] with B 1 or a symbol (bound to 1), its
 * second the position of the first token, i64[]; its first output the
 * logits [.., T, vocab]; T is a symbol. The model is loaded twice, T bound
 * to the prompt's length (prefill) and to 1 (decode), and compiled twice
 * for the device; the prefill's state (the cache) is copied into the
 * decode model once (sinter_compiled_state_read, _write). */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_generate_help[] =
	"usage: sinter generate FILE.sir --prompt-ids 1,2,3 [--max-new N] [options]\n"
	"\n"
	"Runs a decoder LLM whose KV cache is state (samples/llama.sir): the prompt\n"
	"once (prefill), then one token per call (decode), each new token the next\n"
	"call's input. Prints the generated ids, the time to the first token and\n"
	"the decode's tokens/s. The model takes the ids i64[1,T] (or [T]) and the\n"
	"position i64[] of the first, and returns the logits [1,T,vocab] first;\n"
	"T is bound to the prompt's length, then to 1.\n"
	"  --prompt-ids A,B,C the prompt's token ids (required)\n"
	"  --max-new N        tokens to generate (default 16)\n"
	"  --temperature T    sample from softmax(logits / T) (default 0: greedy,\n"
	"                     the first largest logit)\n"
	"  --top-k K          sample among the K largest logits only (0: all)\n"
	"  --seed S           the sampler's seed, and --init random's (default 0)\n"
	"  --device D         ref, cpu or cuda (default: cpu when this build has it,\n"
	"                     else ref; cuda copies the cache in and out each call)\n"
	"  --threads N        cpu: worker threads (default: the cores)\n"
	"  --weights FILE     read params from FILE (repeatable; a sharded\n"
	"                     checkpoint's index names its shards); without it the\n"
	"                     model's weights line's file, else random params (said)\n"
	"  --weights-prefix P a key prefix the file's keys carry and the model's lack\n"
	"  --init random      random params (--seed) even when a weights file exists\n"
	"  --cache-dir DIR    kernel and plan caches' folder instead of the default\n"
	"  --json             one JSON object: ids, ttft_s, tokens_per_s, device\n";

/* splitmix64: the sampler's generator, seeded by --seed */
static uint64_t next_u64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static double logit_at(const sinter_tensor *t, size_t i)
{
	switch (t->dtype) {
	case SINTER_F32: return ((const float *)t->data)[i];
	case SINTER_F16:
	case SINTER_BF16: {
		uint16_t h = ((const uint16_t *)t->data)[i];
		if (t->dtype == SINTER_BF16) {
			uint32_t u = (uint32_t)h << 16;
			float f;
			memcpy(&f, &u, 4);
			return f;
		}
		int e = (h >> 10) & 31, m = h & 1023;
		double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
		return h & 0x8000 ? -v : v;
	}
	default: return NAN;
	}
}

typedef struct cand {
	double v;
	int64_t id;
} cand;

static int cand_desc(const void *a, const void *b)
{
	const cand *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The next token from the last row of logits [.., T, V]: greedy (the first
 * largest), or sampled with temperature among the top k. -1 on OOM. */
static int64_t pick(const sinter_tensor *lg, const cli_opts *o, uint64_t *rng)
{
	size_t V = (size_t)lg->shape[lg->rank - 1];
	size_t rows = V ? lg->nbytes / (V * (lg->dtype == SINTER_F32 ? 4 : 2)) : 0;
	size_t base = (rows - 1) * V;
	if (o->temperature <= 0) {
		size_t best = 0;
		for (size_t i = 1; i < V; i++)
			if (logit_at(lg, base + i) > logit_at(lg, base + best))
				best = i;
		return (int64_t)best;
	}
	cand *c = malloc(V * sizeof *c);
	if (!c)
		return -1;
	for (size_t i = 0; i < V; i++)
		c[i] = (cand){logit_at(lg, base + i) / o->temperature, (int64_t)i};
	qsort(c, V, sizeof *c, cand_desc);
	size_t k = o->top_k > 0 && (size_t)o->top_k < V ? (size_t)o->top_k : V;
	double sum = 0;
	for (size_t i = 0; i < k; i++)
		sum += (c[i].v = exp(c[i].v - c[0].v));
	double u = (double)(next_u64(rng) >> 11) / 9007199254740992.0 * sum;
	int64_t id = c[k - 1].id;
	for (size_t i = 0; i < k; i++) {
		if (u < c[i].v) {
			id = c[i].id;
			break;
		}
		u -= c[i].v;
	}
	free(c);
	return id;
}

/* "1,2,3" into ids (malloc'ed); a usage error otherwise. */
static int parse_ids(const char *s, int64_t **ids, size_t *n)
{
	*ids = NULL;
	*n = 0;
	if (!s || !*s)
		return cli_usage_error("generate", "%s", "--prompt-ids A,B,C is required (the prompt's token ids)");
	size_t cap = 1;
	for (const char *p = s; *p; p++)
		cap += *p == ',';
	int64_t *v = malloc(cap * sizeof *v);
	char *dup = strdup(s);
	if (!v || !dup) {
		free(v);
		free(dup);
		return SINTER_E_INTERNAL;
	}
	size_t k = 0;
	for (char *tok = dup, *next; tok; tok = next) {
		char *comma = strchr(tok, ',');
		next = comma ? comma + 1 : NULL;
		if (comma)
			*comma = 0;
		if (cli_parse_int(tok, &v[k]) || v[k] < 0) {
			free(v);
			free(dup);
			return cli_usage_error("generate", "--prompt-ids wants token ids >= 0 separated by ',', got '%s'", s);
		}
		k++;
	}
	free(dup);
	*ids = v;
	*n = k;
	return 0;
}

/* The model bound for T tokens and compiled for the device, weights
 * loaded (or random): *m and *c, freed by the caller. */
static int build(cli_opts *o, const char *seq, const char *batch, int64_t T, sinter_model **m, sinter_compiled **c,
		 sinter_error *err)
{
	*m = NULL;
	*c = NULL;
	size_t keep = o->nshapes;
	if (seq)
		o->shapes[o->nshapes++] = (sinter_shape_binding){seq, T};
	if (batch)
		o->shapes[o->nshapes++] = (sinter_shape_binding){batch, 1};
	int rc = cli_load(o, m);
	o->nshapes = keep;
	if (rc)
		return rc;
	bool random = o->init != NULL;
	if (!random && cli_load_weights(o, *m, err) != SINTER_OK) {
		if (o->nweights)
			return cli_report(err);
		fprintf(stderr, "sinter generate: params random (seed %llu): %s\n", (unsigned long long)o->seed,
			err->message);
		random = true;
	}
	if (random && sinter_model_init_random(*m, o->seed, err))
		return cli_report(err);
	sinter_compile_options co;
	cli_compile_opts(o, &co);
	co.device = cli_device(o->device);
	if (sinter_model_compile(*m, &co, c, NULL, err))
		return cli_report(err);
	return 0;
}

/* Runs c on ids[0..n) at position pos: the logits (output 0) into *out. */
static int step(sinter_compiled *c, const sinter_tensor *desc, const int64_t *ids, size_t n, int64_t pos,
		sinter_tensor **out, sinter_error *err)
{
	sinter_tensor in[2];
	char n0[256], n1[256];
	sinter_tensor d1;
	if (sinter_compiled_input(c, 1, &d1, NULL)) {
		snprintf(err->message, sizeof err->message, "the model has no position input (its second input, i64[])");
		err->status = SINTER_E_INPUT;
		return cli_report(err);
	}
	snprintf(n0, sizeof n0, "%s", desc->name ? desc->name : "");
	snprintf(n1, sizeof n1, "%s", d1.name ? d1.name : "");
	in[0] = (sinter_tensor){.name = n0, .dtype = SINTER_I64, .rank = desc->rank, .data = (void *)ids,
				.nbytes = n * sizeof *ids};
	for (int k = 0; k < desc->rank; k++)
		in[0].shape[k] = 1;
	in[0].shape[desc->rank - 1] = (int64_t)n;
	in[1] = (sinter_tensor){.name = n1, .dtype = SINTER_I64, .rank = 0, .data = &pos, .nbytes = sizeof pos};
	if (sinter_compiled_run(c, in, 2, out, err)) {
		int rc = cli_report(err);
		/* e.g. an index past the cache: the prompt and the new tokens exceed it */
		fprintf(stderr, "sinter generate: the call of %zu token%s at position %lld failed\n", n, n == 1 ? "" : "s",
			(long long)pos);
		return rc;
	}
	return 0;
}

int cli_cmd_generate(cli_opts *o)
{
	char why[512];
	if (o->device && strcmp(o->device, "ref") && strcmp(o->device, "cpu") && strcmp(o->device, "cuda"))
		return cli_usage_error("generate", "unknown device '%s' (ref, cpu or cuda)", o->device);
	if (!o->device)
		o->device = sinter_device_available(SINTER_DEVICE_CPU, why, sizeof why, NULL) == SINTER_OK ? "cpu" : "ref";
	int64_t *prompt;
	size_t np;
	int rc = parse_ids(o->prompt_ids, &prompt, &np);
	if (rc)
		return rc;
	int max_new = o->max_new ? o->max_new : 16;
	if (o->nshapes > 14) {
		free(prompt);
		return cli_usage_error("generate", "%s", "too many --shape bindings (generate binds two more)");
	}

	/* the symbols of the ids' input: T its last dim, a batch before it */
	sinter_error err;
	sinter_model *probe = NULL;
	if ((rc = cli_load(o, &probe))) {
		free(prompt);
		return rc;
	}
	sinter_tensor d0;
	const char *seq = NULL, *batch = NULL;
	char seqb[64] = "", batchb[64] = "";
	if (sinter_model_num_inputs(probe) < 2 || sinter_model_input(probe, 0, &d0, NULL) || d0.dtype != SINTER_I64 ||
	    d0.rank < 1 || d0.rank > 2 || sinter_model_num_outputs(probe) < 1) {
		sinter_model_free(probe);
		free(prompt);
		fprintf(stderr, "sinter generate: %s: the model must take the token ids i64[T] or i64[B,T] and the "
				"position i64[], and return the logits first (samples/llama.sir)\n",
			o->file);
		return SINTER_E_INPUT;
	}
	const char *s = sinter_model_input_symbol(probe, 0, d0.rank - 1);
	if (s)
		snprintf(seqb, sizeof seqb, "%s", s), seq = seqb;
	s = d0.rank == 2 ? sinter_model_input_symbol(probe, 0, 0) : NULL;
	if (s)
		snprintf(batchb, sizeof batchb, "%s", s), batch = batchb;
	sinter_model_free(probe);
	if (!seq && np != 1) {
		free(prompt);
		fprintf(stderr, "sinter generate: %s: the ids' last dim is no symbol, so a prompt of %zu tokens cannot "
				"be run at once\n",
			o->file, np);
		return SINTER_E_INPUT;
	}

	sinter_model *mp = NULL, *md = NULL;
	sinter_compiled *cp = NULL, *cd = NULL;
	sinter_tensor *lg = NULL, *st = NULL;
	size_t nst = 0;
	int64_t *ids = calloc(np + (size_t)max_new, sizeof *ids);
	uint64_t rng = o->seed ^ 0x5eed5eed5eedu;
	double t0 = cli_now(), t_first = 0, t_end = 0;
	rc = ids ? 0 : SINTER_E_INTERNAL;
	if (!rc)
		memcpy(ids, prompt, np * sizeof *ids);
	/* prefill: the prompt at position 0 */
	if (!rc)
		rc = build(o, seq, batch, (int64_t)np, &mp, &cp, &err);
	sinter_tensor desc;
	if (!rc)
		sinter_compiled_input(cp, 0, &desc, NULL);
	double t_run = cli_now();
	if (!rc)
		rc = step(cp, &desc, prompt, np, 0, &lg, &err);
	size_t n = np;
	if (!rc) {
		int64_t t = pick(lg, o, &rng);
		sinter_tensors_free(lg, sinter_compiled_num_outputs(cp));
		lg = NULL;
		if (t < 0)
			rc = SINTER_E_INTERNAL;
		ids[n++] = t;
		t_first = cli_now();
	}
	/* decode: one token per call, the cache moved over once */
	if (!rc && max_new > 1) {
		if (np == 1) {
			cd = cp, md = mp; /* T=1 already */
			cp = NULL, mp = NULL;
		} else {
			rc = build(o, seq, batch, 1, &md, &cd, &err);
			if (!rc && (sinter_compiled_state_read(cp, &st, &nst, &err) ||
				    sinter_compiled_state_write(cd, st, nst, &err)))
				rc = cli_report(&err);
		}
		if (!rc)
			sinter_compiled_input(cd, 0, &desc, NULL);
	}
	double t_dec = cli_now();
	while (!rc && n < np + (size_t)max_new) {
		rc = step(cd, &desc, &ids[n - 1], 1, (int64_t)(n - 1), &lg, &err);
		if (rc)
			break;
		int64_t t = pick(lg, o, &rng);
		sinter_tensors_free(lg, sinter_compiled_num_outputs(cd));
		lg = NULL;
		if (t < 0)
			rc = SINTER_E_INTERNAL;
		ids[n++] = t;
	}
	t_end = cli_now();
	if (!rc) {
		size_t ndec = n - np - 1;
		/* the first token's time from the prefill's start (its compile and
		 * the weights' reading before it are load_s) */
		double ttft = t_first - t_run, load = t_run - t0;
		double tps = ndec && t_end > t_dec ? ndec / (t_end - t_dec) : 0;
		if (o->json) {
			printf("{\"ok\": true, \"file\": ");
			cli_json_str(o->file);
			printf(", \"device\": \"%s\", \"prompt\": %zu, \"ids\": [", o->device, np);
			for (size_t i = np; i < n; i++)
				printf("%s%lld", i > np ? ", " : "", (long long)ids[i]);
			printf("], \"load_s\": %.6f, \"ttft_s\": %.6f, \"decode_tokens\": %zu, \"tokens_per_s\": %.3f}\n", load,
			       ttft, ndec, tps);
		} else {
			for (size_t i = np; i < n; i++)
				printf("%s%lld", i > np ? "," : "", (long long)ids[i]);
			printf("\n");
			fprintf(stderr,
				"generated %zu tokens on %s after a %zu-token prompt: first token %.1f ms, then %.1f tokens/s "
				"(loaded and compiled in %.3f s)\n",
				n - np, o->device, np, ttft * 1e3, tps, load);
		}
	}
	sinter_tensors_free(st, nst);
	sinter_compiled_free(cp);
	sinter_compiled_free(cd);
	sinter_model_free(mp);
	sinter_model_free(md);
	free(ids);
	free(prompt);
	return rc;
}
