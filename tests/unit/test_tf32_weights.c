/* test_tf32_weights.c: under --precision tf32 the conv weights are stored
 * in the weight image rounded to TF32 (codegen/cg_common.c, cg_lower.c),
 * so that a conv kernel may take them as rounded. Checked: the rounding
 * against values worked out by hand (cvt.rna.tf32.f32: to nearest, ties
 * away from zero, 13 low bits cleared; NaN and infinity untouched); which
 * params the rule takes (an f32 param whose every use is a conv2d's
 * weight); and ResNet-50 lowered with random weights under tf32: its conv
 * weights rounded in the image, every other param's bytes as they were,
 * and nothing rounded without tf32. */
#include "check.h"
#include "api/model.h"
#include "codegen/cg_render.h"

#include <stdlib.h>
#include <string.h>

static uint32_t rounded(uint32_t v)
{
	cg_round_tf32(&v, 1);
	return v;
}

static void by_hand(void)
{
	CHECK(rounded(0x3f800000u) == 0x3f800000u); /* 1.0 */
	CHECK(rounded(0x3f800fffu) == 0x3f800000u); /* under half an ulp: down */
	CHECK(rounded(0x3f801000u) == 0x3f802000u); /* a tie: away from zero */
	CHECK(rounded(0xbf801000u) == 0xbf802000u); /* negative tie: away from zero */
	CHECK(rounded(0x3f801001u) == 0x3f802000u); /* over half: up */
	CHECK(rounded(0x3fffffffu) == 0x40000000u); /* carries into the exponent */
	CHECK(rounded(0x00000fffu) == 0x00000000u); /* a subnormal, down */
	CHECK(rounded(0x7f800000u) == 0x7f800000u); /* infinity */
	CHECK(rounded(0x7fc00123u) == 0x7fc00123u); /* NaN keeps its payload */
	CHECK(rounded(0xff800001u) == 0xff800001u);
}

/* x -> conv(x, w) + b; w also feeds an add when shared */
static void rule(void)
{
	sn_err e = {0};
	for (int shared = 0; shared < 2; shared++) {
		ir_graph *g = ir_graph_new();
		ir_shape xs = {4, {1, 4, 6, 6}}, ws = {4, {8, 4, 3, 3}}, bs = {1, {8}};
		ir_ref x = ir_add_input(g, "x", IR_F32, &xs, &e);
		ir_ref w = ir_add_param(g, "w", IR_F32, &ws, &e);
		ir_ref b = ir_add_param(g, "b", IR_F32, &bs, &e);
		ir_attrs a;
		ir_attrs_init(IR_OP_conv2d, &a);
		a.stride = (ir_ints){2, {1, 1}};
		a.pad = (ir_ints){4, {1, 1, 1, 1}};
		a.dilation = (ir_ints){2, {1, 1}};
		a.groups = 1;
		ir_ref y = ir_add(g, IR_OP_conv2d, (ir_ref[]){x, w, b}, 3, &a, &e);
		ir_add_output(g, y);
		if (shared) {
			ir_ref s = ir_add(g, IR_OP_add, (ir_ref[]){w, w}, 2, NULL, &e);
			ir_add_output(g, s);
		}
		CHECK(!e.code);
		cg_target on = {.sm = 90, .tf32 = true}, off = {.sm = 90};
		CHECK(cg_tf32_weight(g, w, &on) == !shared);
		CHECK(!cg_tf32_weight(g, b, &on)); /* the bias is no weight operand */
		CHECK(!cg_tf32_weight(g, x, &on)); /* an input, not a param */
		CHECK(!cg_tf32_weight(g, w, &off));
		uint8_t *f = NULL;
		CHECK(cg_tf32_weights(g, &on, &f) == SN_OK);
		CHECK(shared ? f == NULL : f && f[w] && !f[b] && !f[x] && !f[y]);
		free(f);
		CHECK(cg_tf32_weights(g, &off, &f) == SN_OK && f == NULL);
		ir_graph_free(g);
	}
}

static void resnet(void)
{
	sinter_shape_binding sb = {"N", 1};
	sinter_load_options o = {.size = sizeof(sinter_load_options), .shapes = &sb, .nshapes = 1};
	sinter_model *m = NULL;
	sinter_error err;
	CHECK(!sinter_model_load(SINTER_SOURCE_DIR "/samples/resnet50.sir", &o, &m, &err));
	CHECK(m && !sinter_model_init_random(m, 3, &err) && !api_materialize(m, &err));
	ir_tensor *vals = NULL;
	CHECK(m && !api_param_vals(m->g, m->ws, &vals, &err));
	if (!m || !vals) {
		sinter_model_free(m);
		return;
	}
	cg_target on = {.sm = 90, .tf32 = true}, off = {.sm = 90};
	cg_plan *p = NULL, *q = NULL;
	sn_err e = {0};
	CHECK(cg_lower(m->g, vals, &on, &p, &e) == SN_OK && cg_lower(m->g, vals, &off, &q, &e) == SN_OK);
	int convw = 0, other = 0, changed = 0;
	for (uint32_t i = 0; p && q && i < m->g->nnodes; i++) {
		const ir_node *n = &m->g->nodes[i];
		if (n->op != IR_OP_param)
			continue;
		bool w = cg_tf32_weight(m->g, i, &on);
		/* find the param's bytes in each image: the unrounded plan holds
		 * them as given */
		const cg_buf *bp = NULL, *bq = NULL;
		for (uint32_t k = 0; k < q->nbufs && !bq; k++)
			if (q->bufs[k].where == CG_IN_WEIGHT && q->bufs[k].bytes == vals[i].nbytes &&
			    !memcmp((char *)q->weights + q->bufs[k].offset, vals[i].data, vals[i].nbytes)) {
				bq = &q->bufs[k];
				bp = k < p->nbufs ? &p->bufs[k] : NULL;
			}
		CHECK(bq && bp && bp->offset == bq->offset && bp->bytes == bq->bytes);
		if (!bp || !bq)
			continue;
		const unsigned char *got = (const unsigned char *)p->weights + bp->offset;
		if (!w) {
			other++;
			CHECK(!memcmp(got, vals[i].data, vals[i].nbytes));
			continue;
		}
		convw++;
		size_t nv = vals[i].nbytes / 4;
		bool ok = true;
		for (size_t k = 0; k < nv && ok; k++) {
			uint32_t v, r;
			memcpy(&v, (const unsigned char *)vals[i].data + 4 * k, 4);
			memcpy(&r, got + 4 * k, 4);
			ok = r == rounded(v);
			changed += r != v;
		}
		CHECK(ok);
	}
	CHECK(convw >= 50 && other > 0 && changed > 0); /* 53 convs (batch norms folded into them) */
	cg_plan_free(p);
	cg_plan_free(q);
	api_vals_free(m->g, m->ws, vals);
	sinter_model_free(m);
}

int main(void)
{
	by_hand();
	rule();
	resnet();
	return check_done("tf32_weights");
}
