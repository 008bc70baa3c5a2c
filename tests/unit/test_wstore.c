/* test_wstore.c: the weight store: put, get, replace, growth, conversion. */
#include "check.h"

#include "ir/wstore.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static ir_tensor vec(ir_dtype t, int n, double first)
{
	ir_tensor x = {.dtype = t, .shape = {1, {n}}};
	x.nbytes = (size_t)n * ir_dtype_size(t);
	x.data = malloc(x.nbytes);
	for (int i = 0; i < n; i++)
		ir_store(t, x.data, (size_t)i, first + i);
	return x;
}

int main(void)
{
	sn_err e = {0};
	ir_wstore *ws = ir_ws_new();
	char key[32];
	/* enough keys to grow the table several times */
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof key, "layer%d.weight", i);
		CHECK(ir_ws_put(ws, key, vec(IR_F32, 3, i), &e) == SN_OK);
	}
	CHECK(ir_ws_count(ws) == 1000);
	CHECK_STR(ir_ws_key(ws, 7), "layer7.weight");
	const ir_tensor *t = ir_ws_get(ws, "layer417.weight");
	CHECK(t && t->shape.d[0] == 3 && ((float *)t->data)[2] == 419.0f);
	CHECK(ir_ws_get(ws, "layer1000.weight") == NULL);
	/* replacing keeps the count and the order */
	CHECK(ir_ws_put(ws, "layer7.weight", vec(IR_F32, 2, -1), &e) == SN_OK);
	CHECK(ir_ws_count(ws) == 1000);
	CHECK(ir_ws_get(ws, "layer7.weight")->shape.d[0] == 2);
	/* read_as converts: 1/3 as f32 read into bf16 rounds to 0x3eab */
	ir_tensor third = {.dtype = IR_F32, .shape = {1, {1}}, .nbytes = 4, .data = malloc(4)};
	((float *)third.data)[0] = 1.0f / 3.0f;
	CHECK(ir_ws_put(ws, "third", third, &e) == SN_OK);
	uint16_t h = 0;
	ir_shape s1 = {1, {1}}, s2 = {1, {2}};
	CHECK(ir_ws_read_as(ws, "third", IR_BF16, &s1, &h, &e) == SN_OK);
	CHECK(h == 0x3eab);
	sn_err e2 = {0};
	CHECK(ir_ws_read_as(ws, "third", IR_BF16, &s2, &h, &e2) == SN_EINPUT);
	CHECK_STR(e2.msg, "weight \"third\" has another shape than its param");
	sn_err e3 = {0};
	CHECK(ir_ws_read_as(ws, "nope", IR_F32, &s1, &h, &e3) == SN_EINPUT);
	CHECK_STR(e3.msg, "no weight \"nope\"");
	/* the bf16 fast path agrees with ir_store on awkward values: ties,
	 * subnormals, the largest finite values, infinities, NaN */
	static const float vals[] = {1.0f, 1.00390625f, 1.01171875f, -2.5e-39f, 1e-45f, 3.3961775e38f,
				     3.4028235e38f, -INFINITY, INFINITY, 0.1f, -0.0f, 65504.0f, 1.0f / 3.0f};
	size_t nv = SN_COUNT(vals);
	ir_tensor many = {.dtype = IR_F32, .shape = {1, {(int64_t)nv + 1000}}};
	many.nbytes = (nv + 1000) * 4;
	many.data = malloc(many.nbytes);
	memcpy(many.data, vals, sizeof vals);
	uint64_t z = 12345;
	for (size_t i = nv; i < nv + 1000; i++) { /* random bit patterns */
		z = z * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t u = (uint32_t)(z >> 32);
		memcpy((float *)many.data + i, &u, 4);
	}
	CHECK(ir_ws_put(ws, "many", many, &e) == SN_OK);
	uint16_t out[1013 + 16];
	CHECK(ir_ws_read_as(ws, "many", IR_BF16, &many.shape, out, &e) == SN_OK);
	int bad = 0;
	for (size_t i = 0; i < nv + 1000; i++) {
		uint16_t want;
		ir_store(IR_BF16, &want, 0, ir_load(IR_F32, ir_ws_get(ws, "many")->data, i));
		bool both_nan = (want & 0x7fff) > 0x7f80 && (out[i] & 0x7fff) > 0x7f80;
		bad += out[i] != want && !both_nan;
	}
	CHECK(bad == 0);
	ir_ws_free(ws);
	return check_done("wstore");
}
