/* test_onnx_mutator.c: the fuzzer's structure-aware ONNX mutator
 * (tests/fuzz/onnx_mutator.h). Parsed and written back without mutations,
 * every model of the fuzz corpus imports to the same graph; mutated, the
 * models stay protobuf that the decoder reads (so the importer's own
 * checks are what the fuzzer reaches), they change, and importing them
 * never crashes (this test runs in the ASan build). */
#include "frontend/onnx.h"
#include "frontend/onnx_pb.h"
#include "check.h"
#include "../fuzz/onnx_mutator.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *p = malloc((size_t)len + 1);
	if (p && fread(p, 1, (size_t)len, f) != (size_t)len) {
		free(p);
		p = NULL;
	}
	fclose(f);
	*n = (size_t)len;
	return p;
}

/* The printed graph of an import, or NULL when it fails (*code: its code). */
static char *import_text(const uint8_t *p, size_t n, int *code)
{
	ir_graph *g = NULL;
	ir_wstore *ws = ir_ws_new();
	sn_err e = {0};
	*code = onnx_load_buffer(p, n, "m.onnx", NULL, 0, &g, ws, &e);
	char *text = NULL;
	if (*code == SN_OK) {
		sn_buf b = {0};
		ir_print(g, &b);
		text = b.s;
	} else {
		CHECK(!g && e.msg[0]); /* a failure says why */
	}
	ir_graph_free(g);
	ir_ws_free(ws);
	return text;
}

static int decodes(const uint8_t *p, size_t n)
{
	sn_arena *a = sn_arena_new();
	onnx_model *m = NULL;
	sn_err e = {0};
	int rc = onnx_pb_decode(p, n, "m.onnx", a, &m, &e);
	sn_arena_free(a);
	return rc == SN_OK;
}

int main(void)
{
	const char *dir = "fuzz/corpus_onnx";
	DIR *d = opendir(dir);
	CHECK(d != NULL);
	if (!d)
		return 1;
	size_t models = 0, same = 0, mutants = 0, changed = 0, decoded = 0, imported = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		/* the named seeds only (the fuzzers' finds are named by their SHA-1) */
		size_t len = strlen(de->d_name);
		if (de->d_name[0] == '.' || (len == 40 && strspn(de->d_name, "0123456789abcdef") == 40))
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		size_t n;
		uint8_t *orig = slurp(path, &n);
		if (!orig)
			continue;
		int code0;
		char *text0 = import_text(orig, n, &code0);
		size_t cap = n * 2 + 4096;
		uint8_t *buf = malloc(cap);
		/* written back unchanged: the same graph */
		memcpy(buf, orig, n);
		size_t m = om_mutate(buf, n, cap, 1, 0);
		if (text0) {
			models++;
			CHECK(m > 0);
			int code1;
			char *text1 = m ? import_text(buf, m, &code1) : NULL;
			CHECK(text1 && !strcmp(text0, text1));
			same += text1 && !strcmp(text0, text1);
			free(text1);
		}
		/* mutated: still protobuf, different, and never a crash */
		for (unsigned seed = 1; seed <= 300; seed++) {
			memcpy(buf, orig, n);
			size_t k = om_mutate(buf, n, cap, seed, -1);
			if (!k)
				continue;
			mutants++;
			changed += k != n || memcmp(buf, orig, n) != 0;
			decoded += decodes(buf, k);
			int code;
			char *t = import_text(buf, k, &code);
			imported += t != NULL;
			free(t);
		}
		free(text0);
		free(buf);
		free(orig);
	}
	closedir(d);
	printf("onnx mutator: %zu of %zu models written back to the same graph; %zu mutants: %zu changed, "
	       "%zu decode, %zu import\n", same, models, mutants, changed, decoded, imported);
	CHECK(models >= 8 && same == models);
	CHECK(mutants >= 300 * models);
	CHECK(changed * 100 >= mutants * 95);
	CHECK(decoded * 100 >= mutants * 90); /* structure kept: byte flips mostly fail here */
	CHECK(imported * 10 >= mutants);      /* and many import: the translators are reached */
	CHECK(imported < decoded);            /* and the importer's checks refuse some */
	return check_failures != 0;
}
