/* test_files.c: nothing the user gave is lost, nothing outside its folders
 * is touched, no input hangs (issue 16). Each test is a defect found by
 * trying sinter as a hostile or careless user would: FIFOs and devices
 * where files are expected, symlinks out of the model's folder, outputs
 * onto inputs, planted temp files, truncated weights, hostile cache
 * entries, sizes that cannot be allocated. An alarm turns a hang into a
 * failure. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "sinter.h"
#include "sinter_tools.h"
#include "frontend/onnx.h"
#include "frontend/safetensors.h"
#include "frontend/sir.h"
#include "ir/file.h"
#include "runtime/kcache.h"
#include "check.h"
#include "onnx_writer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];

/* root/name, in one of a few rotating buffers */
static const char *P(const char *name)
{
	static char buf[8][512];
	static int k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof buf[k], "%s/%s", root, name);
	return buf[k];
}

static void put(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (!f)
		return;
	CHECK(fwrite(data, 1, n, f) == n);
	fclose(f);
}

/* The whole file as a NUL-terminated string (static), or "" if absent. */
static const char *slurp(const char *path)
{
	static char buf[4096];
	buf[0] = 0;
	FILE *f = fopen(path, "rb");
	if (!f)
		return buf;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static bool contains(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	if (!d)
		return -1;
	for (struct dirent *de; (de = readdir(d));)
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

/* ---- readers: only regular files, never a block ------------------------------ */

static void test_readers_refuse_special_files(void)
{
	sn_err e = {0};
	void *buf;
	size_t len;
	/* `sinter check /dev/zero` read forever */
	CHECK(sn_read_file("/dev/zero", 0, 1 << 20, NULL, &buf, &len, &e) == SN_EINPUT);
	CHECK_STR(e.msg, "cannot read /dev/zero: not a regular file");
	ir_graph *g = NULL;
	e = (sn_err){0};
	CHECK(sir_parse_file("/dev/zero", NULL, 0, &g, &e) == SN_EINPUT && !g);
	CHECK_STR(e.msg, "cannot read /dev/zero: not a regular file");
	/* a FIFO with no writer: the open itself must not block */
	CHECK(mkfifo(P("fifo"), 0600) == 0);
	e = (sn_err){0};
	CHECK(sir_parse_file(P("fifo"), NULL, 0, &g, &e) == SN_EINPUT);
	CHECK(contains(e.msg, "not a regular file"));
	st_file *f = NULL;
	e = (sn_err){0};
	CHECK(st_open(P("fifo"), &f, &e) == SN_EINPUT && !f);
	CHECK(contains(e.msg, "not a regular file"));
	ir_wstore *ws = ir_ws_new();
	e = (sn_err){0};
	CHECK(onnx_load(P("fifo"), NULL, 0, &g, ws, &e) == SN_EINPUT);
	CHECK(contains(e.msg, "not a regular file"));
	ir_ws_free(ws);
	/* a directory */
	e = (sn_err){0};
	CHECK(sn_read_file(root, 0, 1 << 20, NULL, &buf, &len, &e) == SN_EINPUT);
	CHECK(contains(e.msg, "not a regular file"));
	/* sizes capped before reading */
	put(P("big.bin"), "0123456789abcdef", 16);
	e = (sn_err){0};
	CHECK(sn_read_file(P("big.bin"), 0, 10, NULL, &buf, &len, &e) == SN_EINPUT);
	CHECK(contains(e.msg, "16 bytes) exceeds the limit of 10 bytes"));
	e = (sn_err){0};
	CHECK(sn_read_file(P("big.bin"), 0, 16, NULL, &buf, &len, &e) == SN_OK && len == 16);
	CHECK(memcmp(buf, "0123456789abcdef", 17) == 0);
	free(buf);
	/* O_NOFOLLOW where the path is ours */
	CHECK(symlink("big.bin", P("link.bin")) == 0);
	int fd;
	e = (sn_err){0};
	CHECK(sn_open_read(P("link.bin"), SN_F_NOFOLLOW, 100, "cache entry", &fd, NULL, &e) == SN_EINPUT);
	CHECK(contains(e.msg, "cannot open cache entry ") && contains(e.msg, "a symbolic link"));
	e = (sn_err){0};
	CHECK(sn_open_read(P("link.bin"), 0, 100, NULL, &fd, NULL, &e) == SN_OK);
	close(fd);
	unlink(P("fifo"));
	unlink(P("link.bin"));
	unlink(P("big.bin"));
}

/* ---- model-relative paths stay in the model's folder --------------------------- */

static void test_confine(void)
{
	/* root/m/ holds the model; root/secret is outside it */
	mkdir(P("m"), 0700);
	put(P("secret"), "s", 1);
	put(P("m/in.bin"), "i", 1);
	CHECK(symlink("..", P("m/up")) == 0);
	char *out = NULL;
	sn_err e = {0};
	CHECK(sn_path_confine(P("m"), "in.bin", "weights", &out, &e) == SN_OK && out);
	char *real = realpath(P("m/in.bin"), NULL);
	CHECK(out && real && !strcmp(out, real));
	free(out);
	free(real);
	const char *bad[] = {"up/secret", "../secret", "/etc/passwd", ""};
	for (size_t i = 0; i < SN_COUNT(bad); i++) {
		e = (sn_err){0};
		out = NULL;
		CHECK(sn_path_confine(P("m"), bad[i], "weights", &out, &e) == SN_EINPUT && !out);
		CHECK(contains(e.msg, i < 2 ? "leads outside the model's folder" : "is not a relative path"));
	}
	unlink(P("m/up"));
	unlink(P("m/in.bin"));
	unlink(P("secret"));
	rmdir(P("m"));
}

/* A .sir weights line names a file inside the model's folder only. */
static void test_sir_weights_line(void)
{
	mkdir(P("w"), 0700);
	float v[2] = {1, 2};
	st_entry en = {.name = "p", .dtype = ST_F32, .rank = 1, .shape = {2}, .data = v, .nbytes = sizeof v};
	sn_err e = {0};
	CHECK(st_write(P("outside.safetensors"), &en, 1, NULL, 0, &e) == SN_OK);
	CHECK(st_write(P("w/in.safetensors"), &en, 1, NULL, 0, &e) == SN_OK);
	CHECK(symlink("..", P("w/up")) == 0);
	char abs_line[600];
	snprintf(abs_line, sizeof abs_line, "%s", P("outside.safetensors"));
	const char *lines[] = {"in.safetensors", "../outside.safetensors", "up/outside.safetensors", abs_line};
	for (size_t i = 0; i < SN_COUNT(lines); i++) {
		char text[1024];
		snprintf(text, sizeof text,
			 "sinter 1\nweights \"%s\"\n\nfunc @main(%%x: f32[2]) -> (f32[2]) {\n"
			 "  %%p = param f32[2] \"p\"\n  %%y = add(%%x, %%p)\n  return %%y\n}\n", lines[i]);
		put(P("w/m.sir"), text, strlen(text));
		sinter_model *m = NULL;
		sinter_error err = {0};
		CHECK(sinter_model_load(P("w/m.sir"), NULL, &m, &err) == SINTER_OK);
		if (!m)
			continue;
		sinter_status st = sinter_model_load_weights(m, NULL, 0, NULL, &err);
		if (i == 0) {
			CHECK(st == SINTER_OK);
		} else {
			CHECK(st == SINTER_E_INPUT);
			CHECK(contains(err.message, i == 3 ? "is not a relative path" : "leads outside the model's folder"));
		}
		/* the same file from the command line is the user's choice */
		if (i == 3)
			CHECK(sinter_model_load_weights(m, (const char *const[]){P("outside.safetensors")}, 1, NULL, &err) == SINTER_OK);
		sinter_model_free(m);
	}
	unlink(P("w/up"));
	unlink(P("w/m.sir"));
	unlink(P("w/in.safetensors"));
	unlink(P("outside.safetensors"));
	rmdir(P("w"));
}

/* ---- ONNX: external data and initializer sizes ------------------------------- */

/* A model y = x * w with w[n] an initializer: external data at location
 * (offset 0), or raw bytes when location is NULL. */
static void write_onnx(const char *path, int64_t n, const char *location, const void *raw, size_t nraw)
{
	pbw g = {0}, t = {0};
	pbw_int(&t, 1, n);
	pbw_int(&t, 2, W_FLOAT);
	pbw_str(&t, 8, "w");
	if (location) {
		const char *kv[2][2] = {{"location", location}, {"offset", "0"}};
		for (int i = 0; i < 2; i++) {
			pbw en = {0};
			pbw_str(&en, 1, kv[i][0]);
			pbw_str(&en, 2, kv[i][1]);
			pbw_msg(&t, 13, &en);
		}
		pbw_int(&t, 14, 1);
	} else {
		pbw_bytes(&t, 9, raw, nraw);
	}
	pbw_msg(&g, 5, &t);
	char dims[32];
	snprintf(dims, sizeof dims, "%lld", (long long)n);
	w_node(&g, "Mul", "mul", L("x", "w"), L("y"), NULL);
	w_value(&g, 11, "x", W_FLOAT, L(dims));
	w_value(&g, 12, "y", W_FLOAT, NULL);
	pbw m = w_model(&g, 17);
	put(path, m.p, m.n);
	free(m.p);
}

static int load_onnx(const char *path, sn_err *e)
{
	ir_graph *g = NULL;
	ir_wstore *ws = ir_ws_new();
	int rc = onnx_load(path, NULL, 0, &g, ws, e);
	ir_graph_free(g);
	ir_ws_free(ws);
	return rc;
}

static void test_onnx_external(void)
{
	mkdir(P("o"), 0700);
	mkdir(P("etc"), 0700);
	static const float w4[4] = {1, 2, 3, 4};
	put(P("etc/passwd"), w4, sizeof w4);
	put(P("o/w.data"), w4, sizeof w4);
	sn_err e = {0};
	write_onnx(P("o/ok.onnx"), 4, "w.data", NULL, 0);
	CHECK(load_onnx(P("o/ok.onnx"), &e) == SN_OK);
	CHECK_STR(e.msg, "");
	/* a symlink inside the folder leading out: `link -> etc`, `link/passwd` */
	CHECK(symlink(P("etc"), P("o/link")) == 0);
	write_onnx(P("o/escape.onnx"), 4, "link/passwd", NULL, 0);
	e = (sn_err){0};
	CHECK(load_onnx(P("o/escape.onnx"), &e) == SN_EINPUT);
	CHECK(contains(e.msg, "external data location \"link/passwd\" leads outside the model's folder"));
	/* a FIFO as external data: refused at once, never read */
	CHECK(mkfifo(P("o/fifo.data"), 0600) == 0);
	write_onnx(P("o/fifo.onnx"), 4, "fifo.data", NULL, 0);
	e = (sn_err){0};
	CHECK(load_onnx(P("o/fifo.onnx"), &e) == SN_EINPUT);
	CHECK(contains(e.msg, "not a regular file"));
	/* 2^33 elements declared over 12 bytes: refused before allocating
	 * (it used to allocate 32 GiB first), with the size it would need */
	static const char twelve[12] = "0123456789a";
	write_onnx(P("o/huge.onnx"), (int64_t)1 << 33, NULL, twelve, 12);
	e = (sn_err){0};
	CHECK(load_onnx(P("o/huge.onnx"), &e) == SN_EINPUT);
	CHECK(contains(e.msg, "raw_data holds 12 bytes, the shape needs 34359738368"));
	/* the same as external data of 16 bytes */
	write_onnx(P("o/huge_ext.onnx"), (int64_t)1 << 33, "w.data", NULL, 0);
	e = (sn_err){0};
	CHECK(load_onnx(P("o/huge_ext.onnx"), &e) == SN_EINPUT);
	CHECK(contains(e.msg, "34359738368"));
	const char *names[] = {"o/ok.onnx", "o/escape.onnx", "o/fifo.onnx", "o/huge.onnx", "o/huge_ext.onnx",
			       "o/link", "o/fifo.data", "o/w.data", "etc/passwd"};
	for (size_t i = 0; i < SN_COUNT(names); i++)
		unlink(P(names[i]));
	rmdir(P("o"));
	rmdir(P("etc"));
}

/* ---- truncated weights: an error, not SIGBUS ------------------------------------- */

static void test_truncated_weights(void)
{
	size_t n = 1 << 18;
	float *v = calloc(n, sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = (float)i;
	st_entry en = {.name = "t", .dtype = ST_F32, .rank = 1, .shape = {(int64_t)n}, .data = v, .nbytes = n * 4};
	sn_err e = {0};
	CHECK(st_write(P("t.safetensors"), &en, 1, NULL, 0, &e) == SN_OK);
	st_file *f = NULL;
	CHECK(st_open(P("t.safetensors"), &f, &e) == SN_OK && f);
	/* another process truncates it while it is open (a mapping would SIGBUS) */
	CHECK(truncate(P("t.safetensors"), 4096) == 0);
	float *got = malloc(n * 4);
	if (f) {
		CHECK(st_read_as(st_find(f, "t"), IR_F32, got, &e) == SN_EINPUT);
		CHECK(contains(e.msg, "truncated while it was read"));
		e = (sn_err){0};
		/* and converting through a chunk reads the same checked way */
		CHECK(st_read_as(st_find(f, "t"), IR_BF16, got, &e) == SN_EINPUT);
	}
	st_close(f);
	free(got);
	free(v);
	unlink(P("t.safetensors"));
}

/* ---- outputs: one atomic writer, never onto an input ---------------------------- */

static void test_writer(void)
{
	/* a planted file and a symlink where a naive writer puts its temp file */
	put(P("victim"), "victim", 6);
	put(P("o.bin.tmp"), "planted", 7);
	CHECK(symlink(P("victim"), P(".o.bin.tmp")) == 0);
	sn_err e = {0};
	CHECK(sn_write_file(P("o.bin"), "new", 3, 0644, &e) == SN_OK);
	CHECK_STR(slurp(P("o.bin")), "new");
	CHECK_STR(slurp(P("victim")), "victim");
	CHECK_STR(slurp(P("o.bin.tmp")), "planted");
	CHECK(count_entries(root) == 4); /* no temp file left behind */
	/* output checks before any work */
	e = (sn_err){0};
	CHECK(sn_out_check(root, &e) == SN_EINPUT && contains(e.msg, "is a directory"));
	e = (sn_err){0};
	CHECK(sn_out_check(P("nofolder/x"), &e) == SN_EINPUT && contains(e.msg, "No such file"));
	e = (sn_err){0};
	CHECK(sn_out_check(P("victim/x"), &e) == SN_EINPUT);
	CHECK(sn_out_check(P("fresh"), &e) == SN_OK);
	e = (sn_err){0};
	CHECK(sn_out_check("/dev/null", &e) == SN_EINPUT && contains(e.msg, "not a regular file"));
	/* /dev/stdout is a symlink: renaming over it would replace the link */
	e = (sn_err){0};
	CHECK(sn_out_check("/dev/stdout", &e) == SN_EINPUT && contains(e.msg, "symbolic link"));
	CHECK(symlink(P("victim"), P("outlink")) == 0);
	e = (sn_err){0};
	CHECK(sn_out_check(P("outlink"), &e) == SN_EINPUT && contains(e.msg, "symbolic link"));
	unlink(P("outlink"));
	/* same device and inode: a hard link is the same file */
	CHECK(link(P("victim"), P("hard")) == 0);
	CHECK(sn_same_file(P("hard"), P("victim")));
	CHECK(!sn_same_file(P("o.bin"), P("victim")));
	sinter_error err = {0};
	const char *ins[] = {NULL, P("victim")};
	CHECK(sinter_output_check(NULL, P("hard"), ins, 2, &err) == SINTER_E_INPUT);
	CHECK(contains(err.message, "same file as the input"));
	CHECK(sinter_output_check(NULL, P("o.bin"), ins, 2, &err) == SINTER_OK);
	/* a failed write leaves the old file and no temp */
	unlink(P(".o.bin.tmp"));
	sn_out o;
	e = (sn_err){0};
	CHECK(sn_out_open(&o, P("o.bin"), 0644, &e) == SN_OK);
	sn_out_write(&o, "partial", 7);
	sn_out_abort(&o);
	CHECK_STR(slurp(P("o.bin")), "new");
	const char *names[] = {"victim", "o.bin.tmp", "o.bin", "hard"};
	for (size_t i = 0; i < SN_COUNT(names); i++)
		unlink(P(names[i]));
	CHECK(count_entries(root) == 0);
}

/* import -o m.sir: neither m.sir.tmp nor a symlink there is touched; when
 * the .sir cannot be written the .safetensors beside it stays as it was;
 * the model itself is never an output. */
static void test_import_pair(void)
{
	mkdir(P("imp"), 0700);
	static const float w4[4] = {1, 2, 3, 4};
	write_onnx(P("imp/m.onnx"), 4, NULL, w4, sizeof w4);
	sinter_model *m = NULL;
	sinter_error err = {0};
	CHECK(sinter_model_load(P("imp/m.onnx"), NULL, &m, &err) == SINTER_OK);
	if (!m)
		return;
	put(P("imp/victim"), "victim", 6);
	CHECK(symlink(P("imp/victim"), P("imp/m.sir.tmp")) == 0);
	CHECK(sinter_model_save(m, P("imp/m.sir"), &err) == SINTER_OK);
	CHECK_STR(slurp(P("imp/victim")), "victim");
	struct stat sb;
	CHECK(lstat(P("imp/m.sir.tmp"), &sb) == 0 && S_ISLNK(sb.st_mode));
	CHECK(contains(slurp(P("imp/m.sir")), "weights \"m.safetensors\""));
	CHECK(count_entries(P("imp")) == 5); /* m.onnx victim m.sir.tmp m.sir m.safetensors */
	/* the .sir cannot be written (a directory): the weights stay as they were */
	mkdir(P("imp/d.sir"), 0700);
	put(P("imp/d.safetensors"), "OLD", 3);
	CHECK(sinter_model_save(m, P("imp/d.sir"), &err) != SINTER_OK);
	CHECK_STR(slurp(P("imp/d.safetensors")), "OLD");
	CHECK(count_entries(P("imp")) == 7);
	sinter_model_free(m);
	const char *names[] = {"imp/m.onnx", "imp/victim", "imp/m.sir.tmp", "imp/m.sir", "imp/m.safetensors",
			       "imp/d.safetensors"};
	for (size_t i = 0; i < SN_COUNT(names); i++)
		unlink(P(names[i]));
	rmdir(P("imp/d.sir"));
	rmdir(P("imp"));
}

/* import -o and run -o never replace the model's own external data file,
 * whatever name reaches it (the .safetensors import writes beside the
 * .sir, a hard link); the same for the weights line of a .sir */
static void test_outputs_onto_external_data(void)
{
	mkdir(P("ext"), 0700);
	static const float w4[4] = {1, 2, 3, 4};
	put(P("ext/m.safetensors"), w4, sizeof w4); /* raw floats, named as import's weights would be */
	write_onnx(P("ext/m.onnx"), 4, "m.safetensors", NULL, 0);
	sinter_model *m = NULL;
	sinter_error err = {0};
	CHECK(sinter_model_load(P("ext/m.onnx"), NULL, &m, &err) == SINTER_OK);
	if (!m)
		return;
	/* import -o ext/m.sir would write ext/m.safetensors: the external data */
	err = (sinter_error){0};
	CHECK(sinter_model_save(m, P("ext/m.sir"), &err) == SINTER_E_INPUT);
	CHECK(contains(err.message, "m.safetensors") && contains(err.message, "refusing to overwrite an input"));
	CHECK(access(P("ext/m.sir"), F_OK) != 0);
	/* the .sir itself a hard link to the external data */
	CHECK(link(P("ext/m.safetensors"), P("ext/h.sir")) == 0);
	err = (sinter_error){0};
	CHECK(sinter_model_save(m, P("ext/h.sir"), &err) == SINTER_E_INPUT);
	CHECK(access(P("ext/h.safetensors"), F_OK) != 0);
	/* run -o onto it (through the hard link too) */
	err = (sinter_error){0};
	CHECK(sinter_output_check(m, P("ext/h.sir"), NULL, 0, &err) == SINTER_E_INPUT);
	CHECK(contains(err.message, "refusing to overwrite an input"));
	/* the data unchanged: the model still loads */
	FILE *f = fopen(P("ext/m.safetensors"), "rb");
	float back[5] = {0};
	CHECK(f && fread(back, 4, 5, f) == 4 && !memcmp(back, w4, sizeof w4));
	if (f)
		fclose(f);
	/* an unrelated output is fine */
	err = (sinter_error){0};
	CHECK(sinter_model_save(m, P("ext/n.sir"), &err) == SINTER_OK);
	sinter_model_free(m);
	const char *names[] = {"ext/m.onnx", "ext/m.safetensors", "ext/h.sir", "ext/n.sir", "ext/n.safetensors"};
	for (size_t i = 0; i < SN_COUNT(names); i++)
		unlink(P(names[i]));
	CHECK(rmdir(P("ext")) == 0);
}

/* ---- a cache shared by a group (SINTER_CACHE_SHARED=1) -------------------------- */

static void test_cache_shared(void)
{
	mode_t old_umask = umask(022);
	setenv("SINTER_CACHE_SHARED", "1", 1);
	char cache[600], path[4096], sub[4096];
	snprintf(cache, sizeof cache, "%s", P("shared"));
	uint8_t key[KC_KEY_SIZE] = {0x5e, 7};
	sn_err e = {0};
	CHECK(kc_put(cache, key, "cubin", 5, &e) == SN_OK);
	/* folders group-writable with the setgid bit, past the umask; nothing for others */
	struct stat sb;
	kc_entry_path(cache, key, path, sizeof path, &e);
	snprintf(sub, sizeof sub, "%s/kernels/5e", cache);
	const char *dirs[] = {cache, sub};
	for (size_t i = 0; i < SN_COUNT(dirs); i++)
		CHECK(stat(dirs[i], &sb) == 0 && (sb.st_mode & 07777) == 02770);
	/* entries readable by the group, writable by no one else */
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0640);
	void *data;
	size_t size;
	kc_status st;
	/* group-writable: trusted when shared, refused when private */
	CHECK(chmod(path, 0664) == 0);
	CHECK(kc_get(cache, key, &data, &size, &st, &e) == SN_OK && st.state == KC_HIT);
	free(data);
	unsetenv("SINTER_CACHE_SHARED");
	CHECK(kc_get(cache, key, &data, &size, &st, &e) == SN_OK && st.state == KC_CORRUPT && !data);
	CHECK(contains(st.msg, "writable by others"));
	setenv("SINTER_CACHE_SHARED", "1", 1);
	/* writable by others: refused, shared or not */
	CHECK(chmod(path, 0666) == 0);
	CHECK(kc_get(cache, key, &data, &size, &st, &e) == SN_OK && st.state == KC_CORRUPT && !data);
	CHECK(contains(st.msg, "writable by others"));
	CHECK(chmod(path, 0640) == 0);
	/* another user's entries (root makes them): trusted only from a member of
	 * a group of ours. "daemon" (whose primary group is its own) writes one. */
	struct passwd *pw = getpwnam("daemon");
	struct passwd *nobody = getpwnam("nobody");
	gid_t mine[64];
	int nmine = getgroups(64, mine);
	if (geteuid() == 0 && pw && nobody && nobody->pw_gid != pw->pw_gid && nmine >= 0 && nmine < 63) {
		uid_t du = pw->pw_uid, nu = nobody->pw_uid;
		gid_t dg = pw->pw_gid;
		bool had = getegid() == dg;
		for (int i = 0; i < nmine; i++)
			had |= mine[i] == dg;
		CHECK(chown(path, du, dg) == 0);
		if (!had) { /* not our group yet: refused */
			CHECK(kc_get(cache, key, &data, &size, &st, &e) == SN_OK && st.state == KC_CORRUPT);
			CHECK(contains(st.msg, "its group is not yours"));
			gid_t more[64];
			memcpy(more, mine, (size_t)nmine * sizeof *mine);
			more[nmine] = dg;
			CHECK(setgroups((size_t)nmine + 1, more) == 0);
		}
		/* a member of our group: trusted */
		CHECK(kc_get(cache, key, &data, &size, &st, &e) == SN_OK && st.state == KC_HIT);
		free(data);
		/* the same group, but an owner outside it: refused */
		CHECK(chown(path, nu, dg) == 0);
		CHECK(kc_get(cache, key, &data, &size, &st, &e) == SN_OK && st.state == KC_CORRUPT);
		CHECK(contains(st.msg, "not a member of its group"));
		/* and private again: another user's entry is never trusted */
		unsetenv("SINTER_CACHE_SHARED");
		CHECK(chown(path, du, dg) == 0);
		CHECK(kc_get(cache, key, &data, &size, &st, &e) == SN_OK && st.state == KC_CORRUPT);
		CHECK(contains(st.msg, "not owned by you"));
		setenv("SINTER_CACHE_SHARED", "1", 1);
		if (!had)
			CHECK(setgroups((size_t)nmine, mine) == 0);
		CHECK(chown(path, 0, 0) == 0);
	}
	unsetenv("SINTER_CACHE_SHARED");
	umask(old_umask);
}

/* ---- the kernel cache: private, and hostile entries refused --------------------- */

static void test_kcache_hostile(void)
{
	char cache[600], path[4096], sub[4096];
	snprintf(cache, sizeof cache, "%s", P("cache"));
	uint8_t key[KC_KEY_SIZE] = {0xab, 1, 2, 3};
	sn_err e = {0};
	CHECK(kc_put(cache, key, "cubin", 5, &e) == SN_OK);
	/* folders created 0700 */
	struct stat sb;
	snprintf(sub, sizeof sub, "%s/kernels", cache);
	CHECK(stat(cache, &sb) == 0 && (sb.st_mode & 077) == 0);
	CHECK(stat(sub, &sb) == 0 && (sb.st_mode & 077) == 0);
	kc_entry_path(cache, key, path, sizeof path, &e);
	CHECK(stat(path, &sb) == 0 && !(sb.st_mode & (S_IWGRP | S_IWOTH)));
	void *data;
	size_t size;
	kc_status st;
	/* writable by others: refused with a warning, left alone */
	chmod(path, 0666);
	CHECK(kc_get(cache, key, &data, &size, &st, &e) == SN_OK && st.state == KC_CORRUPT && !data);
	CHECK(contains(st.msg, "writable by others"));
	CHECK(access(path, F_OK) == 0);
	chmod(path, 0644);
	CHECK(kc_get(cache, key, &data, &size, &st, &e) == SN_OK && st.state == KC_HIT);
	free(data);
	/* another user's entry (needs root to make one) */
	if (geteuid() == 0 && chown(path, 65534, 65534) == 0) {
		CHECK(kc_get(cache, key, &data, &size, &st, &e) == SN_OK && st.state == KC_CORRUPT);
		CHECK(contains(st.msg, "not owned by you"));
		CHECK(chown(path, 0, 0) == 0);
	}
	/* a FIFO entry, and a symlink to a FIFO outside: no hang, link removed,
	 * nothing outside touched */
	unlink(path);
	CHECK(mkfifo(path, 0600) == 0);
	CHECK(kc_get(cache, key, &data, &size, &st, &e) == SN_OK && st.state == KC_CORRUPT);
	CHECK(contains(st.msg, "not a regular file"));
	CHECK(access(path, F_OK) != 0);
	CHECK(mkfifo(P("outfifo"), 0600) == 0);
	CHECK(symlink(P("outfifo"), path) == 0);
	CHECK(kc_get(cache, key, &data, &size, &st, &e) == SN_OK && st.state == KC_CORRUPT);
	CHECK(contains(st.msg, "symbolic link"));
	CHECK(access(P("outfifo"), F_OK) == 0);
	/* cache clear never follows a symlinked subfolder out of the cache */
	mkdir(P("outside"), 0700);
	char victim[700];
	snprintf(victim, sizeof victim, "%s/%s", P("outside"), "0123456789abcdef0123456789abcd.cubin");
	put(victim, "keep", 4);
	snprintf(sub, sizeof sub, "%s/kernels/cd", cache);
	CHECK(symlink(P("outside"), sub) == 0);
	uint8_t k2[KC_KEY_SIZE] = {0x12};
	CHECK(kc_put(cache, k2, "x", 1, &e) == SN_OK);
	size_t removed = 0;
	CHECK(kc_clear(cache, &removed, &e) == SN_OK && removed == 1);
	CHECK_STR(slurp(victim), "keep");
	/* and kernels/ itself as a symlink out */
	char kdir[700];
	snprintf(kdir, sizeof kdir, "%s/kernels", P("cache2"));
	mkdir(P("cache2"), 0700);
	mkdir(P("outside/cd"), 0700);
	char victim2[800];
	snprintf(victim2, sizeof victim2, "%s/0123456789abcdef0123456789abcd.cubin", P("outside/cd"));
	put(victim2, "keep", 4);
	CHECK(symlink(P("outside"), kdir) == 0);
	CHECK(kc_clear(P("cache2"), &removed, &e) == SN_OK && removed == 0);
	CHECK_STR(slurp(victim2), "keep");
	unlink(victim2);
	rmdir(P("outside/cd"));
	unlink(kdir);
	rmdir(P("cache2"));
	unlink(sub);
	unlink(victim);
	rmdir(P("outside"));
	unlink(P("outfifo"));
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void on_alarm(int sig)
{
	static const char msg[] = "test_files: hung (an open or read blocked)\n";
	(void)!write(2, msg, sizeof msg - 1);
	_exit(1);
}

int main(void)
{
	signal(SIGALRM, on_alarm);
	alarm(60);
	snprintf(root, sizeof root, "/tmp/sinter_files_XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_readers_refuse_special_files();
	test_confine();
	test_sir_weights_line();
	test_onnx_external();
	test_truncated_weights();
	test_writer();
	test_import_pair();
	test_outputs_onto_external_data();
	test_kcache_hostile();
	test_cache_shared();
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	printf("files: %d checks, %d failed\n", check_count, check_failures);
	return check_failures != 0;
}
