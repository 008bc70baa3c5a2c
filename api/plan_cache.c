/* plan_cache.c: what the two devices' plan caches share (plan_cache.h). */
#include "api/plan_cache.h"

#include "ir/file.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* The weights file m's params come from, or NULL (random, none). */
static const char *weights_file(const sinter_model *m)
{
	return m->wsrc == API_W_FILE ? m->wpath : m->wsrc == API_W_ONNX ? m->path : NULL;
}

void api_pc_weights_id(const sinter_model *m, char *id, size_t cap, cg_plan_info *info)
{
	const char *file = weights_file(m);
	if (m->wsrc == API_W_RANDOM)
		snprintf(id, cap, "random seed=%llu", (unsigned long long)m->seed);
	else if (file) {
		char *real = realpath(file, NULL);
		snprintf(id, cap, "file %s", real ? real : file);
		free(real);
		struct stat sb;
		if (stat(file, &sb) == 0) {
			info->w_size = (uint64_t)sb.st_size;
			info->w_mtime_ns = (uint64_t)sb.st_mtim.tv_sec * 1000000000u + (uint64_t)sb.st_mtim.tv_nsec;
			info->w_ino = (uint64_t)sb.st_ino;
		}
	} else {
		snprintf(id, cap, "%s", m->weights ? "none" : "not loaded");
	}
}

bool api_pc_file_hash(const char *path, uint8_t h[16])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	struct stat sb;
	XXH3_state_t *st = XXH3_createState();
	char *buf = malloc(1 << 20);
	bool ok = st && buf && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
	if (ok) {
		XXH3_128bits_reset(st);
		ssize_t n;
		while ((n = read(fd, buf, 1 << 20)) > 0)
			XXH3_128bits_update(st, buf, (size_t)n);
		ok = n == 0;
		XXH128_canonical_t c;
		XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
		memcpy(h, c.digest, 16);
	}
	free(buf);
	XXH3_freeState(st);
	close(fd);
	return ok;
}

void api_pc_info_for_write(const sinter_model *m, cg_plan_info *info)
{
	snprintf(info->version, sizeof info->version, "%s", SINTER_VERSION);
	snprintf(info->source, sizeof info->source, "%s", m->path ? m->path : "");
	const char *file = weights_file(m);
	if (file)
		api_pc_file_hash(file, info->w_hash);
}

const char *api_pc_stale(const sinter_model *m, const cg_plan_info *want, const cg_plan_info *have)
{
	bool fresh = have->w_size == want->w_size && have->w_mtime_ns == want->w_mtime_ns && have->w_ino == want->w_ino;
	const char *file = weights_file(m);
	if (!fresh && file) {
		/* touched or copied: the same content is still a hit */
		uint8_t h[16];
		fresh = api_pc_file_hash(file, h) && !memcmp(h, have->w_hash, 16);
	} else if (!fresh) {
		fresh = true; /* random or no weights: the key says it all */
	}
	if (!fresh)
		return "the weights";
	return strcmp(have->version, SINTER_VERSION) ? "sinter" : NULL;
}

void api_pc_sidecar(const char *plan_path, const char *ext, char *out, size_t cap)
{
	snprintf(out, cap, "%s", plan_path);
	size_t n = strlen(out);
	if (n > 5 && !strcmp(out + n - 5, ".plan"))
		memcpy(out + n - 5, ext, 5);
}

void api_warn_stderr(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "sinter: warning: %s\n", msg);
}

void api_pc_warn(const sinter_compile_options *o, const char *fmt, ...)
{
	char msg[4608];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	(o && o->warn ? o->warn : api_warn_stderr)(o ? o->warn_ctx : NULL, msg);
}
