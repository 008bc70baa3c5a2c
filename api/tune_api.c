/* tune_api.c: the public API's tuning-record entry points (sinter.h,
 * caches): stats, export, import, merge and clear over the local store
 * (autotune/at.h). No CUDA here. */
#include "api/model.h"

#include "autotune/at.h"
#include "ir/file.h"
#include "ir/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static sinter_status dir_or_default(const char **dir, char *buf, size_t cap, sinter_error *err)
{
	if (*dir)
		return SINTER_OK;
	sinter_status st = sinter_cache_dir(buf, cap, err);
	*dir = buf;
	return st;
}

sinter_status sinter_tuning_stats(const char *dir, size_t *valid, size_t *rejected, sinter_error *err)
{
	char def[4096];
	sinter_status st = dir_or_default(&dir, def, sizeof def, err);
	if (st)
		return st;
	at_record *r = NULL;
	sn_err e = {0};
	if (at_dir_scan(dir, &r, valid, rejected, &e) != SN_OK)
		return api_fail(err, &e);
	free(r);
	return SINTER_OK;
}

sinter_status sinter_tuning_export(const char *dir, const char *file, size_t *n, sinter_error *err)
{
	char def[4096];
	sinter_status st = dir_or_default(&dir, def, sizeof def, err);
	if (st)
		return st;
	at_record *r = NULL;
	size_t rej;
	sn_err e = {0};
	if (sn_out_check(file, &e) != SN_OK || at_dir_scan(dir, &r, n, &rej, &e) != SN_OK ||
	    at_file_write(file, r, *n, &e) != SN_OK) {
		free(r);
		return api_fail(err, &e);
	}
	free(r);
	return SINTER_OK;
}

sinter_status sinter_tuning_import(const char *dir, const char *file, size_t *read, size_t *written,
				   size_t *rejected, sinter_error *err)
{
	char def[4096];
	sinter_status st = dir_or_default(&dir, def, sizeof def, err);
	if (st)
		return st;
	at_record *r = NULL;
	sn_err e = {0};
	if (at_file_read(file, &r, read, rejected, &e) != SN_OK ||
	    at_dir_import(dir, r, *read, written, &e) != SN_OK) {
		free(r);
		return api_fail(err, &e);
	}
	free(r);
	return SINTER_OK;
}

sinter_status sinter_tuning_merge(const char *a, const char *b, const char *out, size_t *n, size_t *rejected,
				  sinter_error *err)
{
	at_record *ra = NULL, *rb = NULL;
	size_t na = 0, nb = 0, xa = 0, xb = 0;
	sn_err e = {0};
	if (sn_out_check(out, &e) != SN_OK || at_file_read(a, &ra, &na, &xa, &e) != SN_OK ||
	    at_file_read(b, &rb, &nb, &xb, &e) != SN_OK) {
		free(ra);
		free(rb);
		return api_fail(err, &e);
	}
	at_record *all = realloc(ra, (na + nb ? na + nb : 1) * sizeof *all);
	if (!all) {
		free(ra);
		free(rb);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	if (nb)
		memcpy(all + na, rb, nb * sizeof *rb);
	free(rb);
	*n = at_merge(all, na + nb);
	*rejected = xa + xb;
	sinter_status st = at_file_write(out, all, *n, &e) == SN_OK ? SINTER_OK : api_fail(err, &e);
	free(all);
	return st;
}

/* Deletes the files in dir/sub/XX/ whose names end in suffix (and
 * leftover temp files of such entries); never follows a symlink. One that
 * cannot be deleted is reported (a warning) and counted in *failed; the
 * rest are still deleted. */
static size_t clear_kind(const char *dir, const char *sub, const char *suffix, size_t *failed)
{
	size_t removed = 0, sl = strlen(suffix);
	for (int i = 0; i < 256; i++) {
		char path[4400];
		snprintf(path, sizeof path, "%s/%s/%02x", dir, sub, i);
		int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		DIR *d = fdopendir(fd);
		if (!d) {
			close(fd);
			continue;
		}
		struct dirent *de;
		while ((de = readdir(d))) {
			size_t l = strlen(de->d_name);
			bool entry = l > sl && !strcmp(de->d_name + l - sl, suffix);
			bool tmp = de->d_name[0] == '.' && strstr(de->d_name, suffix) && strstr(de->d_name, ".tmp");
			if (!entry && !tmp)
				continue;
			if (unlinkat(dirfd(d), de->d_name, 0) == 0) {
				removed += entry;
			} else if (errno != ENOENT) {
				sn_log(SN_LOG_WARN, "cache clear: cannot delete %s/%s: %s", path, de->d_name, strerror(errno));
				(*failed)++;
			}
		}
		closedir(d);
	}
	return removed;
}

sinter_status sinter_tuning_clear(const char *dir, size_t *removed, sinter_error *err)
{
	char def[4096];
	sinter_status st = dir_or_default(&dir, def, sizeof def, err);
	if (st)
		return st;
	size_t failed = 0;
	*removed = clear_kind(dir, "tuning", ".json", &failed);
	clear_kind(dir, "plans", ".tune", &failed);
	clear_kind(dir, "plans", ".key", &failed);
	if (failed)
		return api_failf(err, SINTER_E_ENV, "tuning records: cannot delete %zu files under %s (each named above)",
				 failed, dir);
	return SINTER_OK;
}
