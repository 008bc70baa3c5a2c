/* test_tuning.c: tuning records and their local store (autotune/at.h).
 * Records round-trip through their JSON on random contents; every
 * single-byte change of a record, truncations and hand-made hostile
 * records are rejected; merge keeps the faster record per (spec, device);
 * the store's faster-wins rule, device isolation, and deletion of a bad
 * entry; record files (export, import, merge); 8 processes writing
 * overlapping keys into one store at once, every entry verified after. */
#include "autotune/at.h"
#include "check.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t rng = 0x1234567887654321ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static at_device dev_a = {"NVIDIA H100 80GB HBM3", 90, 13000, 13000, 130100};
static at_device dev_b = {"NVIDIA A100-SXM4-80GB", 80, 12040, 12040, 120400};

static at_record random_record(void)
{
	at_record r;
	memset(&r, 0, sizeof r);
	r.kind = rnd() % 3 == 0 ? AT_KERNEL : rnd() % 2 ? AT_BLAS : AT_GEMM;
	for (int i = 0; i < 16; i++)
		r.spec[i] = (uint8_t)rnd();
	r.dev = rnd() % 2 ? dev_a : dev_b;
	if (r.kind == AT_KERNEL) {
		r.cfg.block = (int32_t)(32 << rnd() % 6);
		r.cfg.vec = (int32_t)(1 << rnd() % 5);
		r.cfg.rows = (int32_t)(rnd() % 3);
	} else if (r.kind == AT_GEMM) { /* a product the GEMM template won */
		r.cfg = (cg_config){.variant = 1 + (int32_t)(rnd() % 2), .tile_m = (int32_t)(64 << rnd() % 2),
				    .tile_n = (int32_t)(32 << rnd() % 4), .warps = (int32_t)(4 << rnd() % 2),
				    .stages = 3 + (int32_t)(rnd() % 4), .split_k = (int32_t)(rnd() % 5)};
	} else {
		r.algo = (cg_blas_algo){.valid = 1, .id = (int32_t)(rnd() % 70), .tile = (int32_t)(rnd() % 40),
					.stages = (int32_t)(rnd() % 30), .splitk = 1 + (int32_t)(rnd() % 4),
					.swizzle = (int32_t)(rnd() % 2), .inner = (int32_t)(rnd() % 9),
					.cluster = (int32_t)(rnd() % 5)};
	}
	r.ms = (double)(rnd() % 100000) / 7919.0;
	r.default_ms = r.ms * 1.25;
	r.candidates = 1 + (int32_t)(rnd() % 25);
	snprintf(r.version, sizeof r.version, "0.1.0");
	return r;
}

static bool same(const at_record *a, const at_record *b)
{
	return a->kind == b->kind && !memcmp(a->spec, b->spec, 16) && at_device_eq(&a->dev, &b->dev) &&
	       !memcmp(&a->cfg, &b->cfg, sizeof a->cfg) &&
	       (a->kind != AT_BLAS || !memcmp(&a->algo, &b->algo, sizeof a->algo)) && a->ms == b->ms &&
	       a->default_ms == b->default_ms && a->candidates == b->candidates && !strcmp(a->version, b->version);
}

static void roundtrip(void)
{
	for (int k = 0; k < 500; k++) {
		at_record r = random_record(), back;
		sn_buf b = {0};
		at_record_write(&r, &b);
		sn_err e = {0};
		CHECK(at_record_parse(b.s, b.len, &back, &e) == SN_OK);
		CHECK(same(&r, &back));
		/* every single-byte change is rejected or reads back the same
		 * record (whitespace) */
		for (size_t i = 0; i < b.len && k < 20; i++) {
			char keep = b.s[i];
			b.s[i] = (char)(keep ^ (1 + (int)(rnd() % 127)));
			sn_err e2 = {0};
			at_record x;
			if (at_record_parse(b.s, b.len, &x, &e2) == SN_OK)
				CHECK(same(&r, &x));
			else
				CHECK(e2.code == SN_EINPUT);
			b.s[i] = keep;
		}
		/* every truncation is rejected */
		for (size_t n = 0; n + 1 < b.len && k < 20; n++) {
			sn_err e2 = {0};
			at_record x;
			CHECK(at_record_parse(b.s, n, &x, &e2) == SN_EINPUT);
		}
		sn_buf_free(&b);
	}
}

static void hostile(void)
{
	at_record r = random_record();
	r.kind = AT_KERNEL;
	r.cfg = (cg_config){.block = 256, .vec = 4};
	sn_buf b = {0};
	at_record_write(&r, &b);
	const char *good = b.s;
	sn_err e = {0};
	at_record x;
	CHECK(at_record_parse(good, strlen(good), &x, &e) == SN_OK);
	struct {
		const char *from, *to, *why;
	} edits[] = {
		{"\"vec\": 4", "\"vec\": 8", "checksum mismatch"},
		{"\"vec\": 4", "\"vec\": -4", "out of range"},
		{"\"vec\": 4", "\"vec\": 4.5", "not an integer"},
		{"\"vec\": 4", "\"vec\": 99999", "out of range"},
		{"\"schema\": 1", "\"schema\": 2", "schema 2"},
		{"\"kind\": \"kernel\"", "\"kind\": \"cubin\"", "kind"},
		{"\"kind\": \"kernel\"", "\"kind\": \"cublaslt\"", "carries a config"},
		{"\"kind\": \"kernel\"", "\"kind\": \"gemm_template\"", "checksum mismatch"},
		{"\"config\"", "\"algo\"", "unknown field"},
		{"\"ms\": ", "\"ms\": -", "time in ms"},
		{"\"candidates\"", "\"code\"", "unknown field"},
	};
	for (size_t i = 0; i < SN_COUNT(edits); i++) {
		const char *at = strstr(good, edits[i].from);
		CHECK(at != NULL);
		if (!at)
			continue;
		char buf[4096];
		snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - good), good, edits[i].to, at + strlen(edits[i].from));
		sn_err e2 = {0};
		CHECK(at_record_parse(buf, strlen(buf), &x, &e2) == SN_EINPUT);
		if (!strstr(e2.msg, edits[i].why))
			fprintf(stderr, "edit %zu: message '%s' lacks '%s'\n", i, e2.msg, edits[i].why);
		CHECK(strstr(e2.msg, edits[i].why) != NULL);
	}
	/* a duplicated field, trailing text, a second record on the line */
	char buf[8192];
	snprintf(buf, sizeof buf, "%.*s, \"ms\": 1}", (int)(strlen(good) - 2), good);
	CHECK(at_record_parse(buf, strlen(buf), &x, &e) == SN_EINPUT);
	snprintf(buf, sizeof buf, "%s x", good);
	CHECK(at_record_parse(buf, strlen(buf), &x, &e) == SN_EINPUT);
	snprintf(buf, sizeof buf, "%s%s", good, good);
	CHECK(at_record_parse(buf, strlen(buf), &x, &e) == SN_EINPUT);
	CHECK(at_record_parse("", 0, &x, &e) == SN_EINPUT);
	CHECK(at_record_parse("[]", 2, &x, &e) == SN_EINPUT);
	sn_buf_free(&b);
}

static void merging(void)
{
	at_record rs[6];
	for (int i = 0; i < 6; i++)
		rs[i] = random_record();
	/* 0, 1, 2: one spec on dev_a (2 the fastest); 3: same spec on
	 * dev_b; 4, 5: another spec, equal times (the first stays) */
	for (int i = 1; i < 4; i++)
		memcpy(rs[i].spec, rs[0].spec, 16);
	rs[0].dev = rs[1].dev = rs[2].dev = dev_a;
	rs[3].dev = dev_b;
	rs[0].ms = 3;
	rs[1].ms = 2;
	rs[2].ms = 1;
	rs[3].ms = 9;
	memcpy(rs[5].spec, rs[4].spec, 16);
	rs[5].dev = rs[4].dev;
	rs[4].ms = rs[5].ms = 5;
	rs[4].candidates = 11;
	rs[5].candidates = 12;
	size_t n = at_merge(rs, 6);
	CHECK(n == 3);
	int seen = 0;
	for (size_t i = 0; i < n; i++) {
		if (at_device_eq(&rs[i].dev, &dev_a) && rs[i].ms == 1)
			seen |= 1;
		if (at_device_eq(&rs[i].dev, &dev_b) && rs[i].ms == 9)
			seen |= 2;
		if (rs[i].ms == 5 && rs[i].candidates == 11)
			seen |= 4;
	}
	CHECK(seen == 7);
}

static void store(const char *dir)
{
	at_store *s;
	sn_err e = {0};
	CHECK(at_store_open(dir, NULL, NULL, NULL, &s, &e) == SN_OK);
	at_record r = random_record(), got;
	r.dev = dev_a;
	r.ms = 2.0;
	bool found;
	at_store_get(s, r.spec, &dev_a, &got, &found);
	CHECK(!found);
	at_store_put(s, &r);
	at_store_get(s, r.spec, &dev_a, &got, &found);
	CHECK(found && same(&r, &got));
	at_store_get(s, r.spec, &dev_b, &got, &found);
	CHECK(!found); /* another device's record is not this one's */
	at_record slow = r;
	slow.ms = 3.0;
	at_store_put(s, &slow);
	at_store_get(s, r.spec, &dev_a, &got, &found);
	CHECK(found && got.ms == 2.0); /* the faster stays */
	at_record fast = r;
	fast.ms = 1.0;
	at_store_put(s, &fast);
	at_store_get(s, r.spec, &dev_a, &got, &found);
	CHECK(found && got.ms == 1.0);
	/* the folders are private */
	char path[4200];
	struct stat sb;
	snprintf(path, sizeof path, "%s/tuning", dir);
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 077) == 0);
	/* a record others may rewrite decides nothing: refused on the open
	 * descriptor, counted, left alone; in a shared cache a group-writable
	 * record of the user's own is trusted, a world-writable one never */
	{
		uint8_t k[16];
		at_key(r.spec, &dev_a, k);
		char hx[33], rec[4300];
		for (int i = 0; i < 16; i++)
			snprintf(hx + 2 * i, 3, "%02x", k[i]);
		snprintf(rec, sizeof rec, "%s/tuning/%.2s/%s.json", dir, hx, hx + 2);
		size_t rej0 = at_store_stats_of(s)->rejected;
		CHECK(chmod(rec, 0620) == 0);
		at_store_get(s, r.spec, &dev_a, &got, &found);
		CHECK(!found && at_store_stats_of(s)->rejected == rej0 + 1 && access(rec, F_OK) == 0);
		setenv("SINTER_CACHE_SHARED", "1", 1);
		at_store_get(s, r.spec, &dev_a, &got, &found);
		CHECK(found && got.ms == 1.0);
		CHECK(chmod(rec, 0602) == 0);
		at_store_get(s, r.spec, &dev_a, &got, &found);
		CHECK(!found && access(rec, F_OK) == 0);
		unsetenv("SINTER_CACHE_SHARED");
		CHECK(chmod(rec, 0600) == 0);
		at_store_get(s, r.spec, &dev_a, &got, &found);
		CHECK(found && got.ms == 1.0);
	}
	/* a damaged entry is rejected, counted and deleted */
	at_record scan_before;
	(void)scan_before;
	at_record *all = NULL;
	size_t n = 0, rej = 0;
	CHECK(at_dir_scan(dir, &all, &n, &rej, &e) == SN_OK && n == 1 && rej == 0);
	free(all);
	uint8_t key[16];
	at_key(r.spec, &dev_a, key);
	char h[33];
	for (int i = 0; i < 16; i++)
		snprintf(h + 2 * i, 3, "%02x", key[i]);
	snprintf(path, sizeof path, "%s/tuning/%.2s/%s.json", dir, h, h + 2);
	FILE *f = fopen(path, "r+");
	CHECK(f != NULL);
	if (f) {
		fseek(f, 40, SEEK_SET);
		fputc('#', f);
		fclose(f);
	}
	CHECK(at_dir_scan(dir, &all, &n, &rej, &e) == SN_OK && n == 0 && rej == 1);
	free(all);
	size_t before = at_store_stats_of(s)->rejected;
	at_store_get(s, r.spec, &dev_a, &got, &found);
	CHECK(!found && at_store_stats_of(s)->rejected == before + 1);
	CHECK(access(path, F_OK) != 0);
	/* a record planted under another key is rejected */
	at_record other = random_record();
	other.dev = dev_a;
	sn_buf b = {0};
	at_record_write(&other, &b);
	mkdir(path, 0700); /* a folder where an entry should be: unreadable, not trusted */
	rmdir(path);
	f = fopen(path, "w");
	if (f) {
		fwrite(b.s, 1, b.len, f);
		fclose(f);
	}
	chmod(path, 0600);
	at_store_get(s, r.spec, &dev_a, &got, &found);
	CHECK(!found);
	sn_buf_free(&b);
	at_store_close(s);
}

static void files(const char *dir)
{
	char a[512], b[512], c[512], d2[512];
	snprintf(a, sizeof a, "%s/a.records", dir);
	snprintf(b, sizeof b, "%s/b.records", dir);
	snprintf(c, sizeof c, "%s/c.records", dir);
	snprintf(d2, sizeof d2, "%s/store2", dir);
	at_record ra[3], rb[3];
	for (int i = 0; i < 3; i++) {
		ra[i] = random_record();
		rb[i] = ra[i];
		rb[i].ms = ra[i].ms + (i == 1 ? -0.5 : 0.5); /* b wins only for 1 */
	}
	sn_err e = {0};
	CHECK(at_file_write(a, ra, 3, &e) == SN_OK);
	CHECK(at_file_write(b, rb, 3, &e) == SN_OK);
	/* a damaged line is rejected and counted; the others stay */
	FILE *f = fopen(b, "a");
	if (f) {
		fputs("{\"schema\": 1, \"kind\": \"kernel\"}\n", f);
		fclose(f);
	}
	at_record *got = NULL;
	size_t n = 0, rej = 0;
	CHECK(at_file_read(b, &got, &n, &rej, &e) == SN_OK && n == 3 && rej == 1);
	free(got);
	/* merge = import both into one store, export */
	size_t w;
	CHECK(at_file_read(a, &got, &n, &rej, &e) == SN_OK);
	CHECK(at_dir_import(d2, got, n, &w, &e) == SN_OK && w == 3);
	free(got);
	CHECK(at_file_read(b, &got, &n, &rej, &e) == SN_OK);
	CHECK(at_dir_import(d2, got, n, &w, &e) == SN_OK && w == 1);
	free(got);
	CHECK(at_dir_scan(d2, &got, &n, &rej, &e) == SN_OK && n == 3 && rej == 0);
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 3; k++)
			if (!memcmp(got[i].spec, ra[k].spec, 16))
				CHECK(got[i].ms == (k == 1 ? rb[k].ms : ra[k].ms));
	free(got);
	/* not a record file */
	f = fopen(c, "w");
	if (f) {
		fputs("{\"schema\": 1}\n", f);
		fclose(f);
	}
	sn_err e2 = {0};
	CHECK(at_file_read(c, &got, &n, &rej, &e2) == SN_EINPUT && strstr(e2.msg, "not a sinter tuning-record file"));
}

/* 8 processes, each writing 300 records over 40 shared keys (its own
 * times), reading as it goes; afterwards every entry parses, is one that
 * some process wrote, and every read during the run was a valid record. */
static void concurrent(const char *dir)
{
	enum { PROCS = 8, KEYS = 40, ROUNDS = 300 };
	at_record base[KEYS];
	for (int k = 0; k < KEYS; k++) {
		base[k] = random_record();
		base[k].dev = dev_a;
	}
	pid_t pids[PROCS];
	for (int p = 0; p < PROCS; p++) {
		pids[p] = fork();
		if (pids[p] == 0) {
			at_store *s;
			sn_err e = {0};
			if (at_store_open(dir, NULL, NULL, NULL, &s, &e))
				_exit(2);
			uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(p + 1);
			int bad = 0;
			for (int i = 0; i < ROUNDS; i++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				int k = (int)(x % KEYS);
				at_record r = base[k];
				r.candidates = p + 1; /* who wrote it */
				r.ms = 1.0 + (double)(x % 1000) / 100.0;
				at_store_put(s, &r);
				at_record got;
				bool found;
				at_store_get(s, r.spec, &dev_a, &got, &found);
				bad += !found || got.candidates < 1 || got.candidates > PROCS;
			}
			bad += (int)at_store_stats_of(s)->rejected;
			at_store_close(s);
			_exit(bad ? 1 : 0);
		}
	}
	int ok = 0;
	for (int p = 0; p < PROCS; p++) {
		int st;
		waitpid(pids[p], &st, 0);
		ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	CHECK(ok == PROCS);
	at_record *all = NULL;
	size_t n = 0, rej = 0;
	sn_err e = {0};
	CHECK(at_dir_scan(dir, &all, &n, &rej, &e) == SN_OK);
	CHECK(n == KEYS && rej == 0);
	for (size_t i = 0; i < n; i++) {
		int k = 0;
		while (k < KEYS && memcmp(all[i].spec, base[k].spec, 16))
			k++;
		CHECK(k < KEYS && all[i].candidates >= 1 && all[i].candidates <= PROCS);
	}
	free(all);
	/* no temp file left behind */
	char cmd[4400];
	snprintf(cmd, sizeof cmd, "test -z \"$(find '%s/tuning' -name '*.tmp*')\"", dir);
	CHECK(system(cmd) == 0);
	printf("concurrent: %d processes x %d writes over %d keys: %zu entries, all valid\n", PROCS, ROUNDS, KEYS, n);
}

int main(void)
{
	char dir[] = "/tmp/sinter-test-tuning-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	roundtrip();
	hostile();
	merging();
	char d1[256], d2[256];
	snprintf(d1, sizeof d1, "%s/store", dir);
	store(d1);
	files(dir);
	snprintf(d2, sizeof d2, "%s/conc", dir);
	concurrent(d2);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	printf("tuning: %d checks, %d failed\n", check_count, check_failures);
	return check_failures != 0;
}
