/* plan_cache.c: what the two devices' plan caches share (plan_cache.h). */
#include "api/plan_cache.h"

#include "ir/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* The files m's params come from (every shard, as read), or none
 * (random, none): *n of them. */
static const char *const *weights_files(const sinter_model *m, size_t *n)
{
	*n = m->wsrc == API_W_FILE ? m->nwread : m->wsrc == API_W_ONNX && m->path ? 1 : 0;
	return m->wsrc == API_W_FILE ? (const char *const *)m->wread : (const char *const *)&m->path;
}

void api_pc_weights_id(const sinter_model *m, char *id, size_t cap, cg_plan_info *info)
{
	size_t n;
	const char *const *files = weights_files(m, &n);
	if (m->wsrc == API_W_RANDOM) {
		snprintf(id, cap, "random seed=%llu", (unsigned long long)m->seed);
	} else if (n) {
		/* every file, and the prefix that maps their keys onto the params;
		 * the fingerprint folds their sizes, times and inodes together */
		size_t k = 0;
		uint64_t size = 0, mtime = 0, ino = 0;
		for (size_t i = 0; i < n && k < cap; i++) {
			char *real = realpath(files[i], NULL);
			k += (size_t)snprintf(id + k, cap - k, "%sfile %s", i ? "; " : "", real ? real : files[i]);
			free(real);
			struct stat sb;
			if (stat(files[i], &sb) == 0) {
				size += (uint64_t)sb.st_size;
				mtime = mtime * 31 + (uint64_t)sb.st_mtim.tv_sec * 1000000000u + (uint64_t)sb.st_mtim.tv_nsec;
				ino = ino * 31 + (uint64_t)sb.st_ino;
			}
		}
		info->w_size = size;
		info->w_mtime_ns = mtime;
		info->w_ino = ino;
		if (k < cap && m->wsrc == API_W_FILE && m->wprefix && m->wprefix[0])
			snprintf(id + k, cap - k, "; prefix %s", m->wprefix);
	} else {
		snprintf(id, cap, "%s", m->weights ? "none" : "not loaded");
	}
}

/* The content hash of the files, in order (one file: its own hash). */
static bool files_hash(const char *const *files, size_t n, uint8_t h[16])
{
	if (!api_pc_file_hash(files[0], h))
		return false;
	for (size_t i = 1; i < n; i++) {
		uint8_t hi[16];
		if (!api_pc_file_hash(files[i], hi))
			return false;
		XXH128_canonical_t c;
		XXH128_canonicalFromHash(&c, XXH3_128bits_withSeed(hi, 16, XXH3_64bits(h, 16)));
		memcpy(h, c.digest, 16);
	}
	return true;
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
	size_t n;
	const char *const *files = weights_files(m, &n);
	if (n)
		files_hash(files, n, info->w_hash);
}

const char *api_pc_stale(const sinter_model *m, const cg_plan_info *want, const cg_plan_info *have)
{
	bool fresh = have->w_size == want->w_size && have->w_mtime_ns == want->w_mtime_ns && have->w_ino == want->w_ino;
	size_t n;
	const char *const *files = weights_files(m, &n);
	if (!fresh && n) {
		/* touched or copied: the same content is still a hit */
		uint8_t h[16];
		fresh = files_hash(files, n, h) && !memcmp(h, have->w_hash, 16);
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

void api_pc_model_components(const sinter_model *m, sn_buf *b)
{
	sn_buf t = {0};
	ir_print(m->g, &t);
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits(t.s ? t.s : "", t.len));
	sn_buf_free(&t);
	sn_buf_puts(b, "model ");
	for (int i = 0; i < 16; i++)
		sn_buf_printf(b, "%02x", c.digest[i]);
	sn_buf_puts(b, "\nshapes");
	for (uint32_t i = 0; i < m->g->ninputs; i++) {
		const ir_node *n = &m->g->nodes[m->g->inputs[i]];
		sn_buf_printf(b, " %s:[", n->name ? n->name : "?");
		for (int d = 0; d < n->shape.rank; d++)
			sn_buf_printf(b, "%s%lld", d ? "," : "", (long long)n->shape.d[d]);
		sn_buf_puts(b, "]");
	}
	sn_buf_puts(b, "\n");
}

/* The value of label in "label value" lines (NULL when absent), into out. */
static const char *component(const char *text, const char *label, char *out, size_t cap)
{
	size_t ll = strlen(label);
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (n > ll && !strncmp(p, label, ll) && p[ll] == ' ') {
			snprintf(out, cap, "%.*s", (int)(n - ll - 1), p + ll + 1);
			return out;
		}
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}

/* How many of labels differ between ours and entry. */
static int differences(const char *ours, const char *entry, const char *const *labels, size_t nlabels)
{
	int d = 0;
	for (size_t i = 0; i < nlabels; i++) {
		char a[1024], b[1024];
		const char *x = component(ours, labels[i], a, sizeof a), *y = component(entry, labels[i], b, sizeof b);
		d += !x || !y || strcmp(x, y);
	}
	return d;
}

void api_pc_explain_nearest(const char *dir, const char *ours, bool cpu, const char *const *labels, size_t nlabels,
			    sn_buf *b)
{
	char best[4600] = "", *best_text = NULL;
	int best_d = 1 << 30;
	for (int i = 0; i < 256; i++) {
		char sub[4200];
		snprintf(sub, sizeof sub, "%s/plans/%02x", dir, i);
		DIR *dd = opendir(sub);
		struct dirent *de;
		while (dd && (de = readdir(dd))) {
			size_t l = strlen(de->d_name);
			if (l < 5 || strcmp(de->d_name + l - 4, ".key"))
				continue;
			char f[4500];
			snprintf(f, sizeof f, "%s/%s", sub, de->d_name);
			void *text = NULL;
			size_t len;
			sn_err re = {0};
			if (sn_read_file(f, SN_F_NOFOLLOW | SN_F_ENV, 1 << 16, NULL, &text, &len, &re) != SN_OK)
				continue;
			if ((strstr(text, "\ndevice cpu ") != NULL) != cpu) { /* the other device's */
				free(text);
				continue;
			}
			int d = differences(ours, text, labels, nlabels);
			if (d < best_d) {
				best_d = d;
				snprintf(best, sizeof best, "%s", f);
				free(best_text);
				best_text = text;
			} else {
				free(text);
			}
		}
		if (dd)
			closedir(dd);
	}
	if (!best_text) {
		sn_buf_printf(b, "  no stored plan to compare with\n");
		return;
	}
	sn_buf_printf(b, "  nearest stored plan %s differs in %d component%s:\n", best, best_d, best_d == 1 ? "" : "s");
	for (size_t i = 0; i < nlabels; i++) {
		char a[1024], c2[1024];
		const char *x = component(ours, labels[i], a, sizeof a), *y = component(best_text, labels[i], c2, sizeof c2);
		if (!x || !y || strcmp(x, y))
			sn_buf_printf(b, "    %-9s this compile: %s\n              the entry:    %s\n", labels[i], x ? x : "(none)",
				      y ? y : "(none)");
	}
	free(best_text);
}
