/* cuda_cache.c: the cuda device's plan cache: a plan's key and its
 * components, the lookup, a tuned plan's key from its records, and
 * sinter cache explain. */
#include "api/cuda_compiled.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

/* ---- the plan cache ---- */

/* key = XXH3-128 of (plan format, sinter version, the model's canonical
 * text, the options that shape the plan, the device key, the weights'
 * identity). The weights' content is checked apart (their fingerprint). */
void api_cuda_plan_key(const sinter_model *m, const resolved *r, const rt_cuda *dev, const char *wid, uint8_t key[16])
{
	sn_buf b = {0};
	int nv = rt_nvrtc_lib_version();
	sn_buf_printf(&b, "sinter plan %d %s\nmode %s\npipeline %s\nprecision %d\nfusion %s\n", CG_PLAN_FORMAT,
		      SINTER_VERSION, r->mode, r->pipeline, (int)r->prec, r->unfused ? "off" : "on");
	sn_buf_printf(&b, "device %s sm_%d driver %d nvrtc %d cublasLt %d\nweights %s\n", dev->name, dev->sm,
		      dev->driver_version, nv, rt_blas_lib_version(), wid);
	ir_print(m->g, &b);
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits(b.s ? b.s : "", b.len));
	memcpy(key, c.digest, 16);
	sn_buf_free(&b);
}

/* The key's components as "label value" lines, for the .key file beside
 * a stored plan and for sinter cache explain: the key's fields with the
 * model's canonical text replaced by its hash (and its inputs' shapes, the
 * shape binding, spelled out), plus the records' digest of a tuned plan. */
void api_cuda_key_components(const sinter_model *m, const resolved *r, const rt_cuda *dev, const char *wid,
			     const char *records, sn_buf *b)
{
	static const char *const precs[] = {"fp32", "tf32", "bf16", "fp16", "fp8"};
	sn_buf_printf(b, "format %d\nversion %s\nmode %s\npipeline %s\nprecision %s\nfusion %s\n", CG_PLAN_FORMAT,
		      SINTER_VERSION, r->mode, r->pipeline, (unsigned)r->prec < 5 ? precs[r->prec] : "?",
		      r->unfused ? "off" : "on");
	sn_buf_printf(b, "device %s sm_%d driver %d\nnvrtc %d\ncublaslt %d\nweights %s\n", dev->name, dev->sm,
		      dev->driver_version, rt_nvrtc_lib_version(), rt_blas_lib_version(), wid);
	api_pc_model_components(m, b);
	sn_buf_printf(b, "records %s\n", records && records[0] ? records : "none");
}

/* The plan for m from the cache at path when it is there and current;
 * a corrupt or stale entry is reported once and deleted. */
cg_plan *api_cuda_cache_lookup(const char *path, const sinter_model *m, const cg_plan_info *want,
			       const sinter_compile_options *o)
{
	if (access(path, F_OK) != 0)
		return NULL;
	cg_plan *p = NULL;
	cg_plan_info have;
	sn_err e = {0};
	if (cg_plan_read(path, true, &p, &have, &e) != SN_OK) {
		/* a bad entry goes; one the system could not read (I/O, memory) stays */
		bool bad = e.code == SN_EINPUT;
		api_pc_warn(o, "plan cache: %s entry (%s)%s, rebuilding", bad ? "corrupt" : "unreadable", e.msg,
		     bad ? ": deleted" : "");
		if (bad)
			unlink(path);
		return NULL;
	}
	const char *changed = api_pc_stale(m, want, &have);
	if (changed) {
		api_pc_warn(o, "plan cache: stale entry %s (%s changed): rebuilding", path, changed);
		cg_plan_free(p);
		unlink(path);
		return NULL;
	}
	return p;
}

/* ---- max-autotune and the plan cache ----
 * A tuned plan depends on the tuning records it used, so its key is the
 * plain key extended with a digest of those records. Which records a
 * model uses is only known after its passes and lowering, so the list of
 * their specs is kept beside the plan cache under the plain key
 * (plans/XX/<30 hex>.tune: "sinter tuning specs 1", then one spec in hex
 * per line); a warm start reads it, asks the store for each record
 * (at_digest) and looks the plan up under the extended key. A list that
 * is missing, malformed, or names a spec without a record is a miss. */
#define TUNE_LIST_HEAD "sinter tuning specs 1\n"

static void tune_list_path(const char *plan_path, char *out, size_t cap)
{
	api_pc_sidecar(plan_path, ".tune", out, cap);
}

void api_cuda_extend_key(const uint8_t key0[16], const uint8_t digest[16], uint8_t key[16])
{
	uint8_t both[32];
	memcpy(both, key0, 16);
	memcpy(both + 16, digest, 16);
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits(both, 32));
	memcpy(key, c.digest, 16);
}

static int unhex_nibble(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The extended key for the plain key0 from the stored list, or false. */
bool api_cuda_tuned_key(const char *plan_path, at_store *st, const rt_cuda *dev, const uint8_t key0[16], uint8_t key[16],
			uint8_t digest[16])
{
	char path[4300];
	tune_list_path(plan_path, path, sizeof path);
	if (access(path, F_OK) != 0)
		return false;
	void *buf = NULL;
	size_t len = 0;
	sn_err e = {0};
	if (sn_read_file(path, SN_F_NOFOLLOW | SN_F_ENV, 1 << 22, NULL, &buf, &len, &e) != SN_OK)
		return false;
	size_t hl = strlen(TUNE_LIST_HEAD);
	bool ok = len >= hl && !memcmp(buf, TUNE_LIST_HEAD, hl) && (len - hl) % 33 == 0;
	size_t n = ok ? (len - hl) / 33 : 0;
	uint8_t (*specs)[16] = ok ? malloc((n ? n : 1) * sizeof *specs) : NULL;
	const char *t = (const char *)buf + hl;
	for (size_t i = 0; specs && ok && i < n; i++) {
		ok = t[33 * i + 32] == '\n';
		for (int k = 0; ok && k < 16; k++) {
			int hi = unhex_nibble(t[33 * i + 2 * k]), lo = unhex_nibble(t[33 * i + 2 * k + 1]);
			ok = hi >= 0 && lo >= 0;
			specs[i][k] = (uint8_t)(hi * 16 + lo);
		}
	}
	free(buf);
	bool complete = false;
	at_device d;
	at_device_of(dev, &d);
	if (specs && ok && at_digest(st, &d, (const uint8_t (*)[16])specs, n, digest, &complete) == SN_OK && complete)
		api_cuda_extend_key(key0, digest, key);
	free(specs);
	return specs && ok && complete;
}

void api_cuda_tune_list_write(const char *plan_path, const at_tune_stats *ts, const sinter_compile_options *o)
{
	char path[4300];
	tune_list_path(plan_path, path, sizeof path);
	sn_buf b = {0};
	sn_buf_puts(&b, TUNE_LIST_HEAD);
	for (size_t i = 0; i < ts->nspecs; i++) {
		for (int k = 0; k < 16; k++)
			sn_buf_printf(&b, "%02x", ts->specs[i][k]);
		sn_buf_puts(&b, "\n");
	}
	sn_err e = {0};
	if (b.oom || sn_write_file(path, b.s, b.len, 0600, &e) != SN_OK)
		api_pc_warn(o, "plan cache: tuning list not stored: %s", b.oom ? "out of memory" : e.msg);
	sn_buf_free(&b);
}

/* ---- sinter cache explain ---- */

static const char *const key_labels[] = {"format", "version", "mode", "pipeline", "precision", "fusion", "device",
					  "nvrtc", "cublaslt", "weights", "model", "shapes", "records"};

sinter_status api_cache_explain(const sinter_model *m, const sinter_compile_options *o, char **report,
				   sinter_error *err)
{
	*report = NULL;
	if (o->device == SINTER_DEVICE_CPU)
		return api_cpu_explain(m, o, report, err);
	resolved r;
	sinter_status st = api_cuda_resolve(o, &r, err);
	if (st || (st = api_need_shaped((sinter_model *)m, err)))
		return st;
	char cbuf[4096];
	const char *dir = api_cuda_cache_dir(o, cbuf, sizeof cbuf);
	if (!dir)
		return api_failf(err, SINTER_E_ENV, "no cache directory: set SINTER_CACHE_DIR, XDG_CACHE_HOME or HOME");
	rt_cuda *dev = NULL;
	sn_err e = {0};
	if (rt_cuda_open(0, &dev, &e) != SN_OK)
		return api_failf(err, SINTER_E_ENV, "explain needs the GPU the plans are for (their key holds its name and versions): %s",
				 e.msg);
	sn_buf b = {0};
	cg_plan_info info = {0};
	char wid[4200], path[4300], path0[4300] = "", records[33] = "";
	api_pc_weights_id(m, wid, sizeof wid, &info);
	uint8_t key0[16], key[16];
	api_cuda_plan_key(m, &r, dev, wid, key0);
	memcpy(key, key0, 16);
	sn_buf_printf(&b, "cache %s\n", dir);
	if (r.tune) {
		at_store *ts = NULL;
		if (at_store_open(dir, r.remote, o ? o->warn : NULL, o ? o->warn_ctx : NULL, &ts, &e) != SN_OK) {
			rt_cuda_close(dev);
			sn_buf_free(&b);
			return api_fail(err, &e);
		}
		uint8_t digest[16];
		if (kc_plan_path(dir, key0, false, path0, sizeof path0, &e) == SN_OK &&
		    api_cuda_tuned_key(path0, ts, dev, key0, key, digest)) {
			for (int i = 0; i < 16; i++)
				snprintf(records + 2 * i, 3, "%02x", digest[i]);
			sn_buf_printf(&b, "tuning: every listed kernel has a record for this GPU (plan key covers them)\n");
		} else {
			char lp[4400];
			tune_list_path(path0, lp, sizeof lp);
			sn_buf_printf(&b, "tuning: %s\n", access(lp, F_OK) == 0
								? "listed kernels lack records for this GPU (a compile would time them)"
								: "no tuned plan listed for this model and options (a compile would tune)");
		}
		const at_store_stats *ss = at_store_stats_of(ts);
		sn_buf_printf(&b, "tuning records read: %zu local, %zu remote, %zu missing, %zu rejected\n", ss->local_hits,
			      ss->remote_hits, ss->misses, ss->rejected);
		at_store_close(ts);
	}
	sn_buf ours = {0};
	api_cuda_key_components(m, &r, dev, wid, records, &ours);
	if (kc_plan_path(dir, key, false, path, sizeof path, &e) == SN_OK && access(path, F_OK) == 0) {
		sn_buf_printf(&b, "plan: hit %s\n", path);
	} else {
		sn_buf_printf(&b, "plan: miss\n");
		/* the nearest stored plan: fewest differing components */
		api_pc_explain_nearest(dir, ours.s ? ours.s : "", false, key_labels, SN_COUNT(key_labels), &b);
	}
	sn_buf_free(&ours);
	/* kernels: the default plan's, against the kernel cache */
	cg_plan *p = NULL;
	sinter_compile_stats cs = {0};
	sinter_error berr;
	if (api_cuda_build_plan(m, &r, dev->sm, &p, &cs, NULL, &berr) == SINTER_OK) {
		size_t hits = 0;
		int nv = rt_nvrtc_lib_version();
		for (uint32_t i = 0; i < p->nkerns; i++) {
			uint8_t kk[KC_KEY_SIZE];
			char kp[4400];
			kc_key(p->kerns[i].src, nv, dev->sm, RT_NVRTC_FLAGS, kk);
			hits += kc_entry_path(dir, kk, kp, sizeof kp, &e) == SN_OK && access(kp, F_OK) == 0;
		}
		sn_buf_printf(&b, "kernels: %zu of %u unique kernels (default configs) in the kernel cache\n", hits,
			      p->nkerns);
		cg_plan_free(p);
	} else {
		sn_buf_printf(&b, "kernels: not checked (%s)\n", berr.message);
	}
	rt_cuda_close(dev);
	if (b.oom) {
		sn_buf_free(&b);
		return api_failf(err, SINTER_E_INTERNAL, "out of memory");
	}
	*report = b.s;
	return SINTER_OK;
}
