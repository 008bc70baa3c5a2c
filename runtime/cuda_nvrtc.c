/* cuda_nvrtc.c: NVRTC loaded with dlopen; one-source compiles and the
 * batch compiler (dedup, kernel cache, worker threads). */
#include "runtime/cuda_nvrtc.h"

#include "ir/file.h"
#include "ir/log.h"
#include "runtime/kcache.h"

#include <nvrtc.h>
#include <xxhash.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct rt_nvrtc {
	void *lib;
	char path[128];
	int major, minor;
	nvrtcResult (*Version)(int *, int *);
	const char *(*GetErrorString)(nvrtcResult);
	nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
				     const char *const *);
	nvrtcResult (*DestroyProgram)(nvrtcProgram *);
	nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
	nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
	nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
	nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
	nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
	/* optional (NVRTC 11.2+): the archs this NVRTC can target */
	nvrtcResult (*GetNumSupportedArchs)(int *);
	nvrtcResult (*GetSupportedArchs)(int *);
};

#define ENTRY(field, sym, req) {offsetof(struct rt_nvrtc, field), sym, req}
static const struct {
	size_t off;
	const char *sym;
	bool required;
} entries[] = {
	ENTRY(Version, "nvrtcVersion", true),
	ENTRY(GetErrorString, "nvrtcGetErrorString", true),
	ENTRY(CreateProgram, "nvrtcCreateProgram", true),
	ENTRY(DestroyProgram, "nvrtcDestroyProgram", true),
	ENTRY(CompileProgram, "nvrtcCompileProgram", true),
	ENTRY(GetProgramLogSize, "nvrtcGetProgramLogSize", true),
	ENTRY(GetProgramLog, "nvrtcGetProgramLog", true),
	ENTRY(GetCUBINSize, "nvrtcGetCUBINSize", true),
	ENTRY(GetCUBIN, "nvrtcGetCUBIN", true),
	ENTRY(GetNumSupportedArchs, "nvrtcGetNumSupportedArchs", false),
	ENTRY(GetSupportedArchs, "nvrtcGetSupportedArchs", false),
};
#undef ENTRY

static const char *const lib_names[] = {
	"libnvrtc.so.13",
	"libnvrtc.so.12",
	"libnvrtc.so",
	"/usr/local/cuda/lib64/libnvrtc.so.13",
	"/usr/local/cuda/lib64/libnvrtc.so.12",
};

#ifdef SINTER_FAULT
/* Fault injection (ir/fault.h): NVRTC calls that acquire or compute fail
 * with NVRTC_ERROR_OUT_OF_MEMORY, without being made; DestroyProgram and
 * GetErrorString always run. */
#include "ir/fault.h"
#define NF(f, params, args)                                                 \
	static nvrtcResult(*real_##f) params;                               \
	static nvrtcResult fw_##f params                                    \
	{                                                                   \
		return sn_fault_nvrtc_hit() ? NVRTC_ERROR_OUT_OF_MEMORY : real_##f args; \
	}
NF(Version, (int *a, int *b), (a, b))
NF(CreateProgram, (nvrtcProgram * a, const char *b, const char *c, int d, const char *const *f, const char *const *g),
   (a, b, c, d, f, g))
NF(CompileProgram, (nvrtcProgram a, int b, const char *const *c), (a, b, c))
NF(GetProgramLogSize, (nvrtcProgram a, size_t *b), (a, b))
NF(GetProgramLog, (nvrtcProgram a, char *b), (a, b))
NF(GetCUBINSize, (nvrtcProgram a, size_t *b), (a, b))
NF(GetCUBIN, (nvrtcProgram a, char *b), (a, b))
NF(GetNumSupportedArchs, (int *a), (a))
NF(GetSupportedArchs, (int *a), (a))
#undef NF

static void fault_wrap(rt_nvrtc *n)
{
#define W(f)                          \
	do {                          \
		if (n->f) {           \
			real_##f = n->f; \
			n->f = fw_##f;   \
		}                     \
	} while (0)
	W(Version); W(CreateProgram); W(CompileProgram); W(GetProgramLogSize); W(GetProgramLog);
	W(GetCUBINSize); W(GetCUBIN); W(GetNumSupportedArchs); W(GetSupportedArchs);
#undef W
}
#endif

/* An NVRTC failure other than a compile error: the machine (memory) is
 * the environment, anything else a bug of sinter. */
static int nvrtc_code(nvrtcResult r)
{
	return r == NVRTC_ERROR_OUT_OF_MEMORY ? SN_EENV : SN_EINTERNAL;
}

int rt_nvrtc_open(rt_nvrtc **out, sn_err *e)
{
	*out = NULL;
	rt_nvrtc *n = calloc(1, sizeof *n);
	if (!n)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	char why[512] = "";
	/* SINTER_NVRTC_LIBRARY names the one library to load (a chosen NVRTC;
	 * tests name a missing one to prove that packages need none) */
	const char *only = getenv("SINTER_NVRTC_LIBRARY");
	const char *one[] = {only};
	const char *const *names = only ? one : lib_names;
	size_t nnames = only ? 1 : SN_COUNT(lib_names);
	for (size_t i = 0; i < nnames && !n->lib; i++) {
		n->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (n->lib) {
			snprintf(n->path, sizeof n->path, "%s", names[i]);
		} else if (!why[0]) {
			const char *d = dlerror();
			snprintf(why, sizeof why, "%s", d ? d : "not found");
		}
	}
	if (!n->lib) {
		free(n);
		return sn_errf(e, SN_EENV, only ? "no NVRTC: cannot load %s (SINTER_NVRTC_LIBRARY) (%s)"
					       : "no NVRTC: cannot load libnvrtc.so.13 or .12, nor from /usr/local/cuda/lib64%s (%s)",
			       only ? only : "", why);
	}
	for (size_t i = 0; i < SN_COUNT(entries); i++) {
		void *f = dlsym(n->lib, entries[i].sym);
		if (!f && entries[i].required) {
			sn_errf(e, SN_EENV, "NVRTC at %s is too old: it lacks %s", n->path, entries[i].sym);
			rt_nvrtc_close(n);
			return SN_EENV;
		}
		memcpy((char *)n + entries[i].off, &f, sizeof f);
	}
#ifdef SINTER_FAULT
	fault_wrap(n);
#endif
	nvrtcResult r = n->Version(&n->major, &n->minor);
	if (r != NVRTC_SUCCESS) {
		sn_errf(e, SN_EENV, "nvrtcVersion: %s", n->GetErrorString(r));
		rt_nvrtc_close(n);
		return SN_EENV;
	}
	*out = n;
	return SN_OK;
}

void rt_nvrtc_close(rt_nvrtc *n)
{
	if (!n)
		return;
	/* The library stays loaded: NVRTC carries its own C++ runtime, whose
	 * buffers and exit handlers must outlive it (a later open reuses it). */
	free(n);
}

/* Found once per process (pthread_once: callers on several threads all
 * see the finished value, never a half-set one). */
static int lib_code;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void find_lib_version(void)
{
	const char *only = getenv("SINTER_NVRTC_LIBRARY");
	for (size_t i = 0; i < (only ? 1 : SN_COUNT(lib_names)); i++) {
		void *lib = dlopen(only ? only : lib_names[i], RTLD_LAZY | RTLD_LOCAL);
		if (!lib)
			continue;
		int (*ver)(int *, int *) = (int (*)(int *, int *))dlsym(lib, "nvrtcVersion");
		int major = 0, minor = 0;
		if (ver && ver(&major, &minor) == 0)
			lib_code = 1000 * major + 10 * minor;
		dlclose(lib);
		break;
	}
}

int rt_nvrtc_lib_version(void)
{
	pthread_once(&lib_once, find_lib_version);
	return lib_code;
}

void rt_nvrtc_version(const rt_nvrtc *n, int *major, int *minor)
{
	*major = n->major;
	*minor = n->minor;
}

int rt_nvrtc_version_code(const rt_nvrtc *n)
{
	return 1000 * n->major + 10 * n->minor;
}

const char *rt_nvrtc_path(const rt_nvrtc *n)
{
	return n->path;
}

/* ---- one source ---- */

static int check_name(const char *name, sn_err *e)
{
	size_t len = name ? strlen(name) : 0;
	bool ok = len > 0 && len <= 200 && name[0] != '.';
	for (size_t i = 0; ok && i < len; i++) {
		char c = name[i];
		ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		     c == '-' || c == '.';
	}
	if (!ok)
		return sn_errf(e, SN_EINTERNAL, "nvrtc: bad kernel name \"%.200s\"", name ? name : "(null)");
	return SN_OK;
}

/* An unsupported arch is the user's --target: SN_EINPUT listing the
 * supported ones. Without the query functions NVRTC itself will say. */
static int check_arch(const rt_nvrtc *n, int sm, sn_err *e)
{
	int count = 0;
	if (!n->GetNumSupportedArchs || !n->GetSupportedArchs ||
	    n->GetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0 || count > 256)
		return SN_OK;
	int archs[256];
	if (n->GetSupportedArchs(archs) != NVRTC_SUCCESS)
		return SN_OK;
	for (int i = 0; i < count; i++)
		if (archs[i] == sm)
			return SN_OK;
	char list[1024] = "";
	size_t len = 0;
	for (int i = 0; i < count && len < sizeof list - 16; i++)
		len += (size_t)snprintf(list + len, sizeof list - len, "%ssm_%d", i ? " " : "", archs[i]);
	return sn_errf(e, SN_EINPUT, "nvrtc: sm_%d is not a target of NVRTC %d.%d (it supports %s)", sm,
		       n->major, n->minor, list);
}

/* Through the one writer (ir/file.h): a symlink planted in the dump
 * folder is replaced, never written through. */
static int write_file(const char *path, const char *text, sn_err *e)
{
	return sn_write_file(path, text, strlen(text), 0666, e);
}

/* Writes a failed kernel's source where the user can read it:
 * dump_dir/NAME.cu (already there when dumped), else a fresh file in /tmp.
 * Returns whether it worked; path holds the file, or else the reason. */
static bool dump_failed(const char *name, const char *src, const char *dump_dir, bool dumped, char *path,
			size_t cap)
{
	sn_err de = {0};
	if (dump_dir) {
		snprintf(path, cap, "%s/%s.cu", dump_dir, name);
		if (dumped || write_file(path, src, &de) == SN_OK)
			return true;
	} else {
		snprintf(path, cap, "/tmp/sinter-%s-XXXXXX.cu", name);
		int fd = mkstemps(path, 3);
		if (fd < 0) {
			sn_errf(&de, SN_EENV, "cannot create a file in /tmp: %s", strerror(errno));
		} else {
			FILE *f = fdopen(fd, "wb");
			size_t len = strlen(src);
			bool ok = f && fwrite(src, 1, len, f) == len;
			int err = errno;
			if (f ? fclose(f) != 0 : close(fd) != 0)
				ok = false;
			if (ok)
				return true;
			sn_errf(&de, SN_EENV, "cannot write %s: %s", path, strerror(err));
		}
	}
	snprintf(path, cap, "%.1000s", de.msg);
	return false;
}

#define MAX_OPTS 16

bool rt_nvrtc_strict(void)
{
	const char *v = getenv("SINTER_NVRTC_STRICT");
	return v && *v && strcmp(v, "0") != 0;
}

/* The decimal number that ends just before p in log (0 when none). */
static long num_before(const char *log, const char *p)
{
	const char *b = p;
	while (b > log && b[-1] >= '0' && b[-1] <= '9')
		b--;
	return b < p ? strtol(b, NULL, 10) : 0;
}

/* ptxas's report (--ptxas-options=-v) in log: a kernel that spills
 * registers, or whose wgmma ptxas serialized (warnings C7510 and the like), is a defect
 * of its renderer. SN_OK when neither; else SN_EINTERNAL naming what. */
static int check_report(const char *name, int sm, const char *log, sn_err *e)
{
	/* C7510 and its siblings (C7511-C7513, C7520 name other causes) all
	 * say this */
	if (strstr(log, "C7510") || strstr(log, "wgmma.mma_async instructions are serialized"))
		return sn_errf(e, SN_EINTERNAL, "nvrtc: kernel %s for sm_%d: ptxas serialized its wgmma\n%s", name, sm,
			       log);
	/* "... N bytes spill stores, M bytes spill loads" per function */
	for (const char *p = strstr(log, " bytes spill stores"); p; p = strstr(p + 1, " bytes spill stores")) {
		const char *q = strstr(p, " bytes spill loads");
		long st = num_before(log, p), ld = q ? num_before(log, q) : 0;
		if (st > 0 || ld > 0)
			return sn_errf(e, SN_EINTERNAL,
				       "nvrtc: kernel %s for sm_%d spills registers (%ld bytes stored, %ld loaded)\n%s", name, sm,
				       st, ld, log);
	}
	return SN_OK;
}

static int compile_one(rt_nvrtc *n, const char *name, const char *src, int sm, void **cubin, size_t *size,
		       const char *dump_dir, bool dumped, sn_err *e)
{
	*cubin = NULL;
	*size = 0;
	if (check_name(name, e))
		return e->code;
	/* the options: RT_NVRTC_FLAGS split at spaces, then the arch */
	char flags[] = RT_NVRTC_FLAGS, arch[48];
	const char *opts[MAX_OPTS];
	int nopts = 0;
	char *save = NULL;
	for (char *t = strtok_r(flags, " ", &save); t && nopts < MAX_OPTS - 2; t = strtok_r(NULL, " ", &save))
		opts[nopts++] = t;
	/* sm_90 compiles for sm_90a, the arch-specific target whose cubins run on
	 * 9.0 devices only (as sm_90's do: no other 9.x exists): wgmma kernels
	 * (cg_flash_wg.c) need it, and other kernels compile the same */
	snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%s", sm, sm == 90 ? "a" : "");
	opts[nopts++] = arch;
	/* strict (CI): ptxas reports each kernel's resources, checked below;
	 * the cubin is the same, so the kernel cache's key does not change */
	bool strict = rt_nvrtc_strict();
	if (strict)
		opts[nopts++] = "--ptxas-options=-v";

	nvrtcProgram prog = NULL;
	nvrtcResult r = n->CreateProgram(&prog, src, name, 0, NULL, NULL);
	if (r != NVRTC_SUCCESS)
		return sn_errf(e, nvrtc_code(r), "nvrtc: kernel %s: nvrtcCreateProgram: %s", name,
			       n->GetErrorString(r));
	r = n->CompileProgram(prog, nopts, opts);
	char *log = NULL;
	size_t log_size = 0;
	if ((r != NVRTC_SUCCESS || strict) && n->GetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 0 &&
	    (log = malloc(log_size + 1))) {
		if (n->GetProgramLog(prog, log) != NVRTC_SUCCESS)
			log[0] = 0;
		log[log_size] = 0;
	}
	if (r == NVRTC_ERROR_COMPILATION) {
		char path[1200];
		bool written = dump_failed(name, src, dump_dir, dumped, path, sizeof path);
		sn_errf(e, SN_EINTERNAL, "nvrtc: kernel %s failed to compile for sm_%d; source %s %s\n%s", name, sm,
			written ? "written to" : "not written:", path, log ? log : "(no log)");
		goto done;
	}
	if (r != NVRTC_SUCCESS) {
		sn_errf(e, nvrtc_code(r), "nvrtc: kernel %s: nvrtcCompileProgram for sm_%d: %s\n%s", name, sm,
			n->GetErrorString(r), log ? log : "");
		goto done;
	}
	if (strict && log && check_report(name, sm, log, e) != SN_OK)
		goto done;
	size_t sz = 0;
	r = n->GetCUBINSize(prog, &sz);
	if (r != NVRTC_SUCCESS || sz == 0) {
		sn_errf(e, r != NVRTC_SUCCESS ? nvrtc_code(r) : SN_EINTERNAL, "nvrtc: kernel %s: nvrtcGetCUBINSize: %s", name,
			r != NVRTC_SUCCESS ? n->GetErrorString(r) : "empty cubin");
		goto done;
	}
	void *buf = malloc(sz);
	if (!buf) {
		sn_errf(e, SN_EINTERNAL, "out of memory");
		goto done;
	}
	r = n->GetCUBIN(prog, buf);
	if (r != NVRTC_SUCCESS) {
		free(buf);
		sn_errf(e, nvrtc_code(r), "nvrtc: kernel %s: nvrtcGetCUBIN: %s", name, n->GetErrorString(r));
		goto done;
	}
	*cubin = buf;
	*size = sz;
done:
	free(log);
	n->DestroyProgram(&prog);
	return *cubin ? SN_OK : e->code;
}

int rt_nvrtc_compile(rt_nvrtc *n, const char *name, const char *src, int sm, void **cubin, size_t *size,
		     const char *dump_dir, sn_err *e)
{
	*cubin = NULL;
	*size = 0;
	if (check_arch(n, sm, e))
		return e->code;
	return compile_one(n, name, src, sm, cubin, size, dump_dir, false, e);
}

/* ---- the batch ---- */

/* One distinct source. */
typedef struct unit {
	const char *name, *src;
	uint8_t key[KC_KEY_SIZE];
	void *cubin;
	size_t size;
	bool hit, corrupt;
	sn_err *err;    /* malloc'ed when this unit failed */
	char *warn[2];  /* malloc'ed cache reports */
} unit;

typedef struct batch {
	rt_nvrtc *n;
	unit *units;
	size_t nunits;
	int sm;
	const char *cache_dir, *dump_dir;
	atomic_size_t next, done;
	atomic_bool stop, cache_on;
	double t0; /* for the progress line */
} batch;

static void add_warn(unit *u, const char *msg)
{
	for (int i = 0; i < 2; i++)
		if (!u->warn[i]) {
			u->warn[i] = strdup(msg);
			return;
		}
}

/* The first cache I/O failure turns the cache off for the batch, with one
 * report; later ones are silent. */
static void cache_failed(batch *b, unit *u, const sn_err *ce)
{
	if (atomic_exchange(&b->cache_on, false)) {
		char msg[sizeof ce->msg + 64];
		snprintf(msg, sizeof msg, "%s; continuing without the kernel cache", ce->msg);
		add_warn(u, msg);
	}
}

static void run_unit(batch *b, unit *u)
{
	if (b->cache_dir && atomic_load(&b->cache_on)) {
		sn_err ce = {0};
		kc_status st;
		if (kc_get(b->cache_dir, u->key, &u->cubin, &u->size, &st, &ce) != SN_OK) {
			cache_failed(b, u, &ce);
		} else if (st.state == KC_HIT) {
			u->hit = true;
			return;
		} else if (st.state == KC_CORRUPT) {
			u->corrupt = true;
			add_warn(u, st.msg);
		}
	}
	sn_err ue = {0};
	if (compile_one(b->n, u->name, u->src, b->sm, &u->cubin, &u->size, b->dump_dir, b->dump_dir != NULL,
			&ue)) {
		u->err = malloc(sizeof *u->err);
		if (u->err)
			*u->err = ue;
		atomic_store(&b->stop, true);
		return;
	}
	if (b->cache_dir && atomic_load(&b->cache_on)) {
		sn_err ce = {0};
		if (kc_put(b->cache_dir, u->key, u->cubin, u->size, &ce) != SN_OK)
			cache_failed(b, u, &ce);
	}
}

static void *worker(void *arg)
{
	batch *b = arg;
	for (;;) {
		if (atomic_load(&b->stop))
			break;
		size_t i = atomic_fetch_add(&b->next, 1);
		if (i >= b->nunits)
			break;
		run_unit(b, &b->units[i]);
		sn_progress("nvrtc: kernels", atomic_fetch_add(&b->done, 1) + 1, b->nunits, b->t0);
	}
	return NULL;
}

/* mkdir -p for the dump directory. */
static int make_dirs(const char *dir, sn_err *e)
{
	char p[4096];
	if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
		return sn_errf(e, SN_EENV, "path too long: %.200s", dir);
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != 0)
			continue;
		char c = *s;
		*s = 0;
		if (mkdir(p, 0755) != 0 && errno != EEXIST)
			return sn_errf(e, SN_EENV, "cannot create directory %s: %s", p, strerror(errno));
		*s = c;
		if (!c)
			return SN_OK;
	}
}

static int dump_sources(const rt_job *jobs, size_t njobs, const char *dump_dir, sn_err *e)
{
	if (make_dirs(dump_dir, e))
		return e->code;
	char path[4096];
	for (size_t i = 0; i < njobs; i++) {
		if (snprintf(path, sizeof path, "%s/%s.cu", dump_dir, jobs[i].name) >= (int)sizeof path)
			return sn_errf(e, SN_EENV, "path too long: %.200s", dump_dir);
		if (write_file(path, jobs[i].src, e))
			return e->code;
	}
	return SN_OK;
}

void rt_jobs_free(rt_job *jobs, size_t njobs)
{
	for (size_t i = 0; i < njobs; i++) {
		free(jobs[i].cubin);
		jobs[i].cubin = NULL;
		jobs[i].size = 0;
		jobs[i].hit = false;
	}
}

int rt_compile_all(rt_nvrtc *n, rt_job *jobs, size_t njobs, int sm, const char *cache_dir, int nthreads,
		   const char *dump_dir, void (*warn)(void *, const char *), void *ctx, rt_compile_stats *stats,
		   sn_err *e)
{
	double t0 = sn_now();
	if (stats)
		memset(stats, 0, sizeof *stats);
	for (size_t i = 0; i < njobs; i++) {
		jobs[i].cubin = NULL;
		jobs[i].size = 0;
		jobs[i].hit = false;
	}
	if (njobs == 0)
		return SN_OK;
	if (cache_dir && !*cache_dir)
		cache_dir = NULL;
	if (check_arch(n, sm, e))
		return e->code;
	for (size_t i = 0; i < njobs; i++) {
		if (check_name(jobs[i].name, e))
			return e->code;
		if (!jobs[i].src)
			return sn_errf(e, SN_EINTERNAL, "nvrtc: kernel %s has no source", jobs[i].name);
	}
	if (dump_dir && dump_sources(jobs, njobs, dump_dir, e))
		return e->code;

	/* identical sources become one unit; of[i] is job i's unit */
	size_t *of = malloc(njobs * sizeof *of);
	uint64_t *hash = malloc(njobs * sizeof *hash);
	unit *units = calloc(njobs, sizeof *units);
	if (!of || !hash || !units) {
		free(of);
		free(hash);
		free(units);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	size_t nunits = 0;
	for (size_t i = 0; i < njobs; i++) {
		uint64_t h = XXH3_64bits(jobs[i].src, strlen(jobs[i].src));
		size_t u = 0;
		while (u < nunits && !(hash[u] == h && strcmp(units[u].src, jobs[i].src) == 0))
			u++;
		if (u == nunits) {
			hash[u] = h;
			units[u].name = jobs[i].name;
			units[u].src = jobs[i].src;
			kc_key(jobs[i].src, rt_nvrtc_version_code(n), sm, RT_NVRTC_FLAGS, units[u].key);
			nunits++;
		}
		of[i] = u;
	}
	free(hash);

	batch b = {.n = n, .units = units, .nunits = nunits, .sm = sm, .cache_dir = cache_dir,
		   .dump_dir = dump_dir};
	atomic_init(&b.next, 0);
	atomic_init(&b.done, 0);
	b.t0 = t0;
	atomic_init(&b.stop, false);
	atomic_init(&b.cache_on, cache_dir != NULL);
	long cores = nthreads > 0 ? nthreads : sysconf(_SC_NPROCESSORS_ONLN);
	size_t nt = cores > 0 ? (size_t)cores : 1;
	if (nt > nunits)
		nt = nunits;
	if (nt > 256)
		nt = 256;
	pthread_t tids[256];
	size_t started = 0;
	for (size_t t = 1; t < nt; t++) {
		if (pthread_create(&tids[started], NULL, worker, &b) != 0)
			break; /* fewer threads is still correct */
		started++;
	}
	worker(&b); /* the calling thread works too */
	for (size_t t = 0; t < started; t++)
		pthread_join(tids[t], NULL);
	sn_progress_end();

	/* reports in unit order, on this thread */
	size_t hits = 0, compiled = 0, corrupt = 0;
	const sn_err *first = NULL;
	for (size_t u = 0; u < nunits; u++) {
		for (int w = 0; w < 2; w++)
			if (units[u].warn[w] && warn)
				warn(ctx, units[u].warn[w]);
		hits += units[u].hit;
		compiled += units[u].cubin && !units[u].hit;
		sn_log(SN_LOG_DEBUG, "kernel cache: %s %s", units[u].name,
		       units[u].hit		    ? "hit"
		       : !cache_dir		    ? "compiled (cache off)"
		       : units[u].corrupt	    ? "miss (corrupt entry deleted), compiled"
		       : units[u].cubin		    ? "miss (no entry for this source, NVRTC version, arch and flags), compiled"
					    : "failed");
		corrupt += units[u].corrupt;
		if (!first && units[u].err)
			first = units[u].err;
	}
	int rc = SN_OK;
	if (first)
		rc = sn_errf(e, first->code, "%s", first->msg);
	else if (atomic_load(&b.stop)) /* a unit failed but its error could not be kept */
		rc = sn_errf(e, SN_EINTERNAL, "out of memory");
	for (size_t i = 0; i < njobs && !rc; i++) {
		const unit *u = &units[of[i]];
		jobs[i].cubin = malloc(u->size);
		if (!jobs[i].cubin) {
			rc = sn_errf(e, SN_EINTERNAL, "out of memory");
			break;
		}
		memcpy(jobs[i].cubin, u->cubin, u->size);
		jobs[i].size = u->size;
		jobs[i].hit = u->hit;
	}
	if (rc)
		rt_jobs_free(jobs, njobs);
	for (size_t u = 0; u < nunits; u++) {
		free(units[u].cubin);
		free(units[u].err);
		free(units[u].warn[0]);
		free(units[u].warn[1]);
	}
	free(units);
	free(of);
	if (stats && !rc) {
		stats->unique = nunits;
		stats->hits = hits;
		stats->compiled = compiled;
		stats->corrupt = corrupt;
		stats->seconds = sn_now() - t0;
	}
	return rc;
}
