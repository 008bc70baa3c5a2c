/* model.c: a model loaded, optimized and made ready to run or compile:
 * what run, bench, compile and cache explain share. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cli_load(const cli_opts *o, sinter_model **m)
{
	sinter_load_options so;
	sinter_load_options_init(&so);
	so.shapes = o->shapes;
	so.nshapes = o->nshapes;
	so.states = o->states;
	so.nstates = o->nstates;
	sinter_error err;
	if (sinter_model_load(o->file, &so, m, &err) != SINTER_OK)
		return cli_report(&err);
	return 0;
}

/* Runs the passes the options ask for: --passes, --mode, --precision.
 * `always`: the default mode's pipeline even when none was named. */
int cli_optimize(const cli_opts *o, sinter_model *m, bool always, int sm)
{
	if (!always && !o->mode && !o->passes && !o->precision)
		return 0;
	sinter_error err;
	sinter_precision prec = SINTER_PREC_FP32;
	if (o->precision && sinter_precision_parse(o->precision, &prec, &err))
		return cli_report(&err);
	if (sinter_model_optimize(m, o->mode, o->passes, prec, sm,
				  o->passes || o->mode ? o->dump_dir : NULL, &err))
		return cli_report(&err);
	return 0;
}

double cli_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double cli_wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Binds the symbols of the model's inputs from the shapes of the given
 * tensors, adding to o->shapes; returns 1 if any binding was added. */
static int bind_from_inputs(sinter_model *m, const sinter_tensor *ts, size_t n, cli_opts *o)
{
	int added = 0;
	for (size_t i = 0; i < sinter_model_num_inputs(m); i++) {
		sinter_tensor d;
		sinter_model_input(m, i, &d, NULL);
		const sinter_tensor *t = NULL;
		for (size_t k = 0; k < n; k++)
			if (d.name && !strcmp(ts[k].name, d.name))
				t = &ts[k];
		if (!t && n == 1 && !ts[0].name[0] && sinter_model_num_inputs(m) == 1)
			t = &ts[0]; /* a .npy's one unnamed array */
		if (!t || t->rank != d.rank)
			continue; /* the run reports the mismatch */
		for (int k = 0; k < d.rank; k++) {
			const char *sym = sinter_model_input_symbol(m, i, k);
			bool known = false;
			for (size_t j = 0; sym && j < o->nshapes; j++)
				known |= !strcmp(o->shapes[j].name, sym);
			if (sym && !known && o->nshapes < 16) {
				o->shapes[o->nshapes].name = sym;
				o->shapes[o->nshapes++].value = t->shape[k];
				added = 1;
			}
		}
	}
	return added;
}

void cli_prepared_free(cli_prepared *p)
{
	sinter_tensors_free(p->ins, p->nins);
	sinter_model_free(p->m);
	memset(p, 0, sizeof *p);
}

int cli_prepare(cli_opts *o, bool default_random, cli_prepared *p)
{
	memset(p, 0, sizeof *p);
	const char *init = o->init ? o->init : default_random && !o->weights ? "random" : NULL;
	if (init && strcmp(init, "random"))
		return cli_usage_error("run", "--init takes 'random', got '%s'", init);
	if (o->init && o->weights)
		return cli_usage_error("run", "%s", "--init random and --weights exclude each other");
	sinter_error err;
	const char *ins[18];
	size_t nins = cli_input_files(o, ins);
	if (o->out && sinter_output_check(NULL, o->out, ins, nins, &err) != SINTER_OK)
		return cli_report(&err);
	if (o->out && cli_check_tensors_ext("run", o->out))
		return CLI_EXIT_USAGE;
	if (o->inputs && sinter_tensors_read(o->inputs, &p->ins, &p->nins, &err) != SINTER_OK)
		return cli_report(&err);
	double t0 = cli_now();
	int rc = cli_load(o, &p->m);
	if (!rc && p->ins && sinter_model_num_symbols(p->m) && bind_from_inputs(p->m, p->ins, p->nins, o)) {
		sinter_model *bound;
		/* names in o->shapes point into p->m: load the bound model first */
		rc = cli_load(o, &bound);
		for (size_t i = 0; i < o->nshapes; i++)
			o->shapes[i].name = NULL;
		sinter_model_free(p->m);
		p->m = rc ? NULL : bound;
	}
	p->parse_s = cli_now() - t0;
	if (rc) {
		cli_prepared_free(p);
		return rc;
	}
	/* -o: never one of the inputs (the weights line's file included),
	 * checked before the weights are read or anything runs */
	if (o->out && sinter_output_check(p->m, o->out, ins, nins, &err) != SINTER_OK)
		goto fail;
	size_t nout = sinter_model_num_outputs(p->m), olen = o->out ? strlen(o->out) : 0;
	if (olen > 4 && !strcmp(o->out + olen - 4, ".npy") && nout != 1) {
		/* the writer's rule, told before the run rather than after */
		err.status = SINTER_E_USAGE;
		snprintf(err.message, sizeof err.message, "%s: a .npy holds one array, the model has %zu outputs: write a .npz",
			 o->out, nout);
		goto fail;
	}
	t0 = cli_now();
	/* bench's default: the model's own weights (an ONNX file's
	 * initializers, a `weights` line's file) where it has them, else
	 * random params, said on stderr (a benchmark of random weights gives
	 * the same times, not the model's outputs) */
	bool own = false;
	if (init && !o->init && default_random) {
		sinter_error we;
		own = cli_load_weights(o, p->m, &we) == SINTER_OK;
		if (!own)
			fprintf(stderr, "sinter bench: params random (seed %llu): %s\n", (unsigned long long)o->seed,
				we.message);
	}
	o->own_weights = own;
	if (!own && (init ? sinter_model_init_random(p->m, o->seed, &err)
			  : cli_load_weights(o, p->m, &err)))
		goto fail;
	if (!p->ins && !init) {
		err.status = SINTER_E_USAGE;
		snprintf(err.message, sizeof err.message,
			 "sinter run: no inputs: pass --inputs FILE (.safetensors, .npz, .npy) or --init random");
		goto fail;
	}
	if (!p->ins && sinter_model_random_inputs(p->m, o->seed, &p->ins, &p->nins, &err))
		goto fail;
	p->load_s = cli_now() - t0;
	return 0;
fail:
	cli_prepared_free(p);
	return cli_report(&err);
}

sinter_status cli_load_weights(const cli_opts *o, sinter_model *m, sinter_error *err)
{
	return sinter_model_load_weights(m, o->weight_files, o->nweights, o->weights_prefix, err);
}

size_t cli_input_files(const cli_opts *o, const char *ins[18])
{
	size_t n = 0;
	ins[n++] = o->file;
	for (size_t i = 0; i < o->nweights; i++)
		ins[n++] = o->weight_files[i];
	ins[n++] = o->inputs;
	return n;
}

bool cli_is_package(const char *file)
{
	size_t n = strlen(file);
	return n > 10 && !strcmp(file + n - 10, ".sinterpkg");
}

sinter_device cli_device(const char *name)
{
	return !name ? SINTER_DEVICE_DEFAULT
	       : !strcmp(name, "cpu") ? SINTER_DEVICE_CPU
	       : !strcmp(name, "cuda") ? SINTER_DEVICE_CUDA
	       : !strcmp(name, "ref")  ? SINTER_DEVICE_REF
				       : SINTER_DEVICE_DEFAULT;
}

/* The library's one options struct from the flags; the library decides
 * what the mode and precision mean. */
void cli_compile_opts(const cli_opts *o, sinter_compile_options *co)
{
	sinter_compile_options_init(co);
	co->mode = o->mode;
	co->passes = o->passes;
	if (o->precision) /* checked by the argument parser */
		(void)sinter_precision_parse(o->precision, &co->precision, NULL);
	co->cache_dir = o->no_cache ? "" : o->cache_dir;
	co->dump_dir = o->dump_dir;
	co->no_fusion = o->no_fusion;
	co->tune_budget_s = o->tune_budget;
	co->tune_progress = o->tune_progress;
	co->cache_remote = o->cache_remote;
	co->device = o->device && !strcmp(o->device, "cpu") ? SINTER_DEVICE_CPU : SINTER_DEVICE_DEFAULT;
	co->threads = o->threads;
}

/* Random inputs for a compiled model (packages carry no model). */
int cli_package_inputs(sinter_compiled *c, const cli_opts *o, sinter_tensor **ins, size_t *n, sinter_error *err)
{
	size_t k = sinter_compiled_num_inputs(c);
	sinter_tensor *d = calloc(k ? k : 1, sizeof *d);
	if (!d)
		return SINTER_E_INTERNAL;
	for (size_t i = 0; i < k; i++)
		sinter_compiled_input(c, i, &d[i], NULL);
	int rc = sinter_tensors_random(d, k, o->seed, ins, err);
	*n = k;
	free(d);
	return rc;
}
