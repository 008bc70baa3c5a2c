/* onnx_tensor.c: ONNX import: a TensorProto into an ir_tensor, its data
 * inline or in an external file beside the model (checked: the location
 * stays inside the model's folder, the file is opened without following
 * links, the range is inside it). */
#include "onnx_impl.h"

#include "ir/file.h"
#include "ir/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int oom(sn_err *e) { return sn_errf(e, SN_EINTERNAL, "out of memory"); }

/* Refused as text before anything is resolved: empty, absolute, "..". */
static bool safe_location(const char *loc)
{
	if (!loc[0] || loc[0] == '/')
		return false;
	for (const char *p = loc; *p;) {
		const char *q = strchr(p, '/');
		size_t n = q ? (size_t)(q - p) : strlen(p);
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return false;
		p += n + (q ? 1 : 0);
	}
	return true;
}

/* Adds path to the external data files read, once. */
static int keep_file(ox_ctx *c, const char *path)
{
	for (size_t i = 0; i < c->nfiles; i++)
		if (!strcmp(c->files[i], path))
			return SN_OK;
	char **f = realloc(c->files, (c->nfiles + 1) * sizeof *f);
	if (!f)
		return SN_EINTERNAL;
	c->files = f;
	if (!(f[c->nfiles] = strdup(path)))
		return SN_EINTERNAL;
	c->nfiles++;
	return SN_OK;
}

/* Opens the file of an external-data tensor: its location resolved inside
 * the model's folder (a symlink leading out is refused like "../"), a
 * regular file that holds [offset, offset + nb). Checked before the
 * tensor's memory is allocated. */
static int open_external(ox_ctx *c, const onnx_tensor *tp, const char *what, size_t nb, int *fd,
			 char **path)
{
	*fd = -1;
	*path = NULL;
	if (!c->dir)
		return ox_fail(c, NULL, "%s: external data is not supported when reading from memory", what);
	if (tp->bad_ext) {
		const char *v = tp->bad_ext_val;
		size_t n = strlen(v), digits = strspn(v + (v[0] == '-'), "0123456789");
		const char *why = !n ? "is empty" : digits + (v[0] == '-') < n || !digits ? "is not a number"
						: v[0] == '-' ? "is negative" : "is out of range";
		return ox_fail(c, NULL, "%s: external data %s '%.40s' %s", what, tp->bad_ext, v, why);
	}
	if (!tp->location || !safe_location(tp->location))
		return ox_fail(c, NULL, "%s: external data location '%s' is not a relative path inside the model's directory",
			       what, tp->location ? tp->location : "");
	if (tp->length >= 0 && (uint64_t)tp->length != nb)
		return ox_fail(c, NULL, "%s: external data length %lld differs from the tensor's %zu bytes",
			       what, (long long)tp->length, nb);
	sn_err fe = {0};
	struct stat sb;
	char label[700];
	snprintf(label, sizeof label, "%s: external data location", what);
	if (sn_path_confine(c->dir, tp->location, label, path, &fe) == SN_OK)
		sn_open_read(*path, SN_F_NOFOLLOW, UINT64_MAX, NULL, fd, &sb, &fe);
	if (fe.code) {
		free(*path);
		*path = NULL;
		if (fe.code == SN_EINPUT)
			return ox_fail(c, NULL, "%s", fe.msg);
		return sn_errf(c->e, fe.code, "%s: %s", c->name, fe.msg);
	}
	if (c->keep_files && keep_file(c, *path)) {
		sn_close(*fd);
		*fd = -1;
		free(*path);
		*path = NULL;
		return oom(c->e);
	}
	uint64_t size = (uint64_t)sb.st_size;
	if ((uint64_t)tp->offset > size || nb > size - (uint64_t)tp->offset) {
		int rc = ox_fail(c, NULL, "%s: external data [%lld, +%zu) runs past the end of %s (%llu bytes)",
				 what, (long long)tp->offset, nb, *path, (unsigned long long)size);
		sn_close(*fd);
		*fd = -1;
		free(*path);
		*path = NULL;
		return rc;
	}
	return SN_OK;
}

int ox_tensor(ox_ctx *c, const onnx_tensor *tp, const char *what, ir_tensor *out)
{
	ir_dtype t;
	if (ox_map_dtype(tp->data_type, &t))
		return ox_fail(c, NULL, "%s: data type %s (%d) is not supported", what,
			       ox_onnx_type_name(tp->data_type), tp->data_type);
	if (tp->ndims > IR_MAX_RANK)
		return ox_fail(c, NULL, "%s: rank %zu is above %d", what, tp->ndims, IR_MAX_RANK);
	if (tp->has_segment)
		return ox_fail(c, NULL, "%s: segmented tensors are not supported", what);
	ir_shape s = {(int32_t)tp->ndims, {0}};
	uint64_t numel = 1;
	for (size_t i = 0; i < tp->ndims; i++) {
		if (tp->dims[i] < 0)
			return ox_fail(c, NULL, "%s: negative dim %lld", what, (long long)tp->dims[i]);
		s.d[i] = tp->dims[i];
		if (tp->dims[i] && numel > ((uint64_t)1 << 40) / (uint64_t)tp->dims[i])
			return ox_fail(c, NULL, "%s: too many elements", what);
		numel *= (uint64_t)tp->dims[i];
	}
	size_t es = ir_dtype_size(t), nb = (size_t)numel * es;
	/* Check what the file holds before allocating what the dims claim. */
	size_t inline_count = tp->has_raw ? tp->raw.n / es
			    : tp->nfloat ? tp->nfloat : tp->nint64 ? tp->nint64 : tp->nint32;
	if (!tp->external && !(tp->has_raw && tp->raw.n != nb) && inline_count != numel &&
	    !tp->ndouble && !tp->nuint64 && !tp->nstring)
		return ox_fail(c, NULL, "%s: %zu values for a shape of %llu elements", what, inline_count,
			       (unsigned long long)numel);
	if (tp->external && (tp->length < 0 ? nb > ((size_t)1 << 40) : (uint64_t)tp->length != nb))
		return ox_fail(c, NULL, "%s: external data length %lld differs from the tensor's %zu bytes",
			       what, (long long)tp->length, nb);
	if (!tp->external && tp->has_raw && tp->raw.n != nb)
		return ox_fail(c, NULL, "%s: raw_data holds %zu bytes, the shape needs %zu", what,
			       tp->raw.n, nb);
	if (nb > sn_mem_bytes()) {
		char need[32], have_mem[32];
		sn_fmt_bytes(need, nb);
		sn_fmt_bytes(have_mem, sn_mem_bytes());
		return ox_fail(c, NULL, "%s: needs %zu bytes (%s), more than this machine's memory (%s)", what,
			       nb, need, have_mem);
	}
	int efd = -1;
	char *epath = NULL;
	if (tp->external && open_external(c, tp, what, nb, &efd, &epath))
		return c->e->code;
	void *p = malloc(nb ? nb : 1);
	if (!p) {
		if (efd >= 0)
			sn_close(efd);
		free(epath);
		return oom(c->e);
	}
	int rc = SN_OK;
	size_t have = 0;
	const char *field = NULL;
	if (tp->external) {
		sn_err fe = {0};
		if (sn_pread_full(efd, p, nb, (uint64_t)tp->offset, epath, &fe))
			rc = fe.code == SN_EINPUT ? ox_fail(c, NULL, "%s: %s", what, fe.msg)
						  : sn_errf(c->e, fe.code, "%s: %s: %s", c->name, what, fe.msg);
		sn_close(efd);
		free(epath);
		have = numel;
	} else if (tp->has_raw) {
		if (tp->raw.n != nb)
			rc = ox_fail(c, NULL, "%s: raw_data holds %zu bytes, the shape needs %zu", what,
				     tp->raw.n, nb);
		else if (nb)
			memcpy(p, tp->raw.p, nb);
		have = numel;
	} else if (tp->nfloat) {
		field = "float_data", have = tp->nfloat;
		if (t != IR_F32)
			rc = -1;
		else if (have == numel)
			memcpy(p, tp->float_data, nb);
	} else if (tp->nint64) {
		field = "int64_data", have = tp->nint64;
		if (t != IR_I64)
			rc = -1;
		else if (have == numel)
			memcpy(p, tp->int64_data, nb);
	} else if (tp->nint32) {
		field = "int32_data", have = tp->nint32;
		if (t == IR_F32 || t == IR_I64)
			rc = -1;
		else if (have == numel)
			for (size_t i = 0; i < numel; i++) {
				int64_t v = tp->int32_data[i];
				if (t == IR_F16 || t == IR_BF16)
					((uint16_t *)p)[i] = (uint16_t)v;
				else if (t == IR_F8E4M3 || t == IR_F8E5M2 || t == IR_U8)
					((uint8_t *)p)[i] = (uint8_t)v;
				else if (t == IR_BOOL)
					((uint8_t *)p)[i] = v != 0;
				else
					ir_store(t, p, i, (double)v);
			}
	} else if (tp->ndouble || tp->nuint64 || tp->nstring) {
		field = tp->ndouble ? "double_data" : tp->nuint64 ? "uint64_data" : "string_data";
		rc = -1;
	}
	if (rc == -1)
		rc = ox_fail(c, NULL, "%s: a %s tensor cannot store its values in %s", what,
			     ox_onnx_type_name(tp->data_type), field);
	else if (rc == SN_OK && have != numel)
		rc = ox_fail(c, NULL, "%s: %zu values for a shape of %llu elements", what, have,
			     (unsigned long long)numel);
	if (rc) {
		free(p);
		return rc;
	}
	*out = (ir_tensor){t, s, p, nb};
	return SN_OK;
}
