/* tensor_files.c: the public API's tensor files: .safetensors, .npz and .npy
 * read and written, and the check that an output path can be written. */
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

static bool is_numpy(const char *path)
{
	size_t n = strlen(path);
	return n >= 4 && (!strcmp(path + n - 4, ".npy") || !strcmp(path + n - 4, ".npz"));
}

static sinter_status numpy_read(const char *path, sinter_tensor **out, size_t *n, sinter_error *err)
{
	sn_err e = {0};
	npy_array *a = NULL;
	size_t count = 0;
	if (npy_read(path, &a, &count, &e) != SN_OK)
		return api_fail(err, &e);
	sinter_tensor *ts = calloc(count ? count : 1, sizeof *ts);
	if (!ts) {
		npy_free(a, count);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	for (size_t i = 0; i < count; i++) { /* moved, not copied */
		ts[i].name = a[i].name;
		ts[i].dtype = (sinter_dtype)a[i].dtype;
		ts[i].rank = a[i].rank;
		memcpy(ts[i].shape, a[i].shape, sizeof ts[i].shape);
		ts[i].data = a[i].data;
		ts[i].nbytes = a[i].nbytes;
		a[i].name = NULL;
		a[i].data = NULL;
	}
	npy_free(a, count);
	*out = ts;
	*n = count;
	return SINTER_OK;
}

static sinter_status numpy_write(const char *path, const sinter_tensor *ts, size_t n, sinter_error *err)
{
	size_t len = strlen(path);
	bool npz = !strcmp(path + len - 4, ".npz");
	if (!npz && n != 1)
		return api_failf(err, SINTER_E_USAGE, "%s: a .npy holds one array, there are %zu: write a .npz", path, n);
	npy_array *a = calloc(n ? n : 1, sizeof *a);
	if (!a)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		a[i].name = (char *)ts[i].name; /* borrowed: not freed here */
		a[i].dtype = (ir_dtype)ts[i].dtype;
		a[i].rank = ts[i].rank;
		memcpy(a[i].shape, ts[i].shape, sizeof a[i].shape);
		a[i].data = ts[i].data;
		a[i].nbytes = ts[i].nbytes;
	}
	sn_err e = {0};
	int rc = npz ? npz_write(path, a, n, &e) : npy_write(path, a, &e);
	free(a);
	return rc == SN_OK ? SINTER_OK : api_fail(err, &e);
}

sinter_status sinter_tensors_read(const char *path, sinter_tensor **out, size_t *n, sinter_error *err)
{
	*out = NULL;
	*n = 0;
	if (is_numpy(path))
		return numpy_read(path, out, n, err);
	sn_err e = {0};
	st_file *f = NULL;
	if (st_open(path, &f, &e) != SN_OK)
		return api_fail(err, &e);
	size_t count = st_count(f);
	sinter_tensor *ts = calloc(count ? count : 1, sizeof *ts);
	if (!ts) {
		st_close(f);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	for (size_t i = 0; i < count && e.code == SN_OK; i++) {
		const st_entry *en = st_get(f, i);
		int t = st_to_ir(en->dtype);
		ir_shape s = {.rank = en->rank};
		memcpy(s.d, en->shape, sizeof s.d);
		if (api_set_tensor(&ts[i], en->name, t < 0 ? IR_F32 : (ir_dtype)t, &s) != SN_OK)
			sn_errf(&e, SN_EINTERNAL, "out of memory");
		else
			st_read_as(en, t < 0 ? IR_F32 : (ir_dtype)t, ts[i].data, &e);
	}
	st_close(f);
	if (e.code != SN_OK) {
		sinter_tensors_free(ts, count);
		return api_fail(err, &e);
	}
	*out = ts;
	*n = count;
	return SINTER_OK;
}

sinter_status sinter_output_check(const sinter_model *m, const char *path, const char *const *inputs,
				  size_t n, sinter_error *err)
{
	sn_err e = {0};
	if (sn_out_check(path, &e) != SN_OK)
		return api_fail(err, &e);
	const char *what = NULL;
	for (size_t i = 0; i < n && !what; i++)
		if (inputs[i] && sn_same_file(path, inputs[i]))
			what = inputs[i];
	char *w = NULL;
	if (!what)
		what = api_model_file(m, path, &w);
	sinter_status st = SINTER_OK;
	if (what)
		st = api_failf(err, SINTER_E_INPUT, "cannot write %s: it is the same file as the input %s; "
			       "refusing to overwrite an input", path, what);
	free(w);
	return st;
}

sinter_status sinter_tensors_write(const char *path, const sinter_tensor *ts, size_t n, sinter_error *err)
{
	if (is_numpy(path))
		return numpy_write(path, ts, n, err);
	st_entry *en = calloc(n ? n : 1, sizeof *en);
	if (!en)
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if ((unsigned)ts[i].dtype >= IR_NDTYPES || ts[i].rank < 0 || ts[i].rank > IR_MAX_RANK) {
			free(en);
			return api_failf(err, SINTER_E_INPUT, "tensor %zu: bad description", i);
		}
		en[i].name = ts[i].name;
		en[i].dtype = st_from_ir((ir_dtype)ts[i].dtype);
		en[i].rank = ts[i].rank;
		memcpy(en[i].shape, ts[i].shape, sizeof en[i].shape);
		en[i].data = ts[i].data;
		en[i].nbytes = ts[i].nbytes;
	}
	sn_err e = {0};
	int rc = st_write(path, en, n, NULL, 0, &e);
	free(en);
	return rc == SN_OK ? SINTER_OK : api_fail(err, &e);
}
