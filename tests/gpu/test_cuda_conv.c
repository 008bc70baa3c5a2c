/* test_cuda_conv.c: conv2d on CUDA against the reference: every distinct
 * convolution of torchvision's ResNet-50 at batch 1 (and two at batch 32),
 * in f32 (SIMT, exact fp32), f16 and bf16 (tensor cores), NCHW and NHWC;
 * then the odd cases: groups, depthwise (the direct kernel), dilation,
 * asymmetric padding, non-square kernels, C = 1, channel counts that are
 * no multiple of 8 or of the 64-wide tile, a bias, batches > 1, integers.
 * Inputs are fresh random values (gpu_check.c): floats in [-1, 1),
 * integers in [0, 4). */
#include "gpu_conv.h"

#include <stdio.h>
#include <string.h>

typedef gpu_conv_spec cspec;

/* A graph computing conv2d(x, w[, b]) for c in dtype t and layout lay. */
static void conv(const cspec *c, ir_dtype t, ir_layout lay, double tol, const char *what)
{
	ir_graph *g = ir_graph_new();
	ir_ref r = gpu_conv_graph(g, c, t, lay, false);
	char label[192];
	snprintf(label, sizeof label, "conv2d %s %s %s n%lld c%lld %lldx%lld o%lld k%lldx%lld s%lld p%lld g%lld%s",
		 what, ir_dtype_name(t), ir_layout_name(lay), (long long)c->n, (long long)c->c, (long long)c->h,
		 (long long)c->w, (long long)c->o, (long long)c->kh, (long long)c->kw, (long long)c->sh,
		 (long long)c->pad[0], (long long)c->groups, c->bias ? " bias" : "");
	gpu_run(g, r, tol, label);
}

#define SQ(n, c, hw, o, k, s, p) {n, c, hw, hw, o, k, k, s, s, {p, p, p, p}, 1, 1, false}

/* ResNet-50 (torchvision, stride on the 3x3): every distinct conv shape */
static const cspec resnet[] = {
	SQ(1, 3, 224, 64, 7, 2, 3),     /* stem */
	SQ(1, 64, 56, 64, 1, 1, 0),     /* layer1 */
	SQ(1, 64, 56, 64, 3, 1, 1),
	SQ(1, 64, 56, 256, 1, 1, 0),    /* conv3 and the downsample */
	SQ(1, 256, 56, 64, 1, 1, 0),
	SQ(1, 256, 56, 128, 1, 1, 0),   /* layer2 */
	SQ(1, 128, 56, 128, 3, 2, 1),
	SQ(1, 128, 28, 512, 1, 1, 0),
	SQ(1, 256, 56, 512, 1, 2, 0),   /* downsample */
	SQ(1, 512, 28, 128, 1, 1, 0),
	SQ(1, 128, 28, 128, 3, 1, 1),
	SQ(1, 512, 28, 256, 1, 1, 0),   /* layer3 */
	SQ(1, 256, 28, 256, 3, 2, 1),
	SQ(1, 256, 14, 1024, 1, 1, 0),
	SQ(1, 512, 28, 1024, 1, 2, 0),  /* downsample */
	SQ(1, 1024, 14, 256, 1, 1, 0),
	SQ(1, 256, 14, 256, 3, 1, 1),
	SQ(1, 1024, 14, 512, 1, 1, 0),  /* layer4 */
	SQ(1, 512, 14, 512, 3, 2, 1),
	SQ(1, 512, 7, 2048, 1, 1, 0),
	SQ(1, 1024, 14, 2048, 1, 2, 0), /* downsample */
	SQ(1, 2048, 7, 512, 1, 1, 0),
	SQ(1, 512, 7, 512, 3, 1, 1),
};

static const cspec odd[] = {
	{2, 20, 9, 11, 36, 3, 3, 2, 2, {1, 1, 1, 1}, 2, 2, true}, /* groups 2, dilation 2, bias */
	{1, 32, 12, 12, 32, 3, 3, 1, 1, {1, 1, 1, 1}, 1, 32, true}, /* depthwise */
	{2, 24, 10, 10, 48, 3, 3, 2, 2, {1, 1, 1, 1}, 1, 24, false}, /* depthwise, multiplier 2 */
	{1, 1, 5, 5, 70, 2, 2, 1, 1, {0, 0, 0, 0}, 1, 1, true},   /* C = 1, 70 filters */
	{3, 5, 17, 13, 33, 1, 7, 1, 2, {0, 3, 0, 3}, 1, 1, true},  /* 1x7, C = 5 */
	{1, 16, 17, 13, 24, 7, 1, 1, 1, {3, 0, 3, 0}, 1, 1, false}, /* 7x1 */
	{2, 40, 15, 15, 100, 3, 3, 2, 2, {1, 0, 2, 1}, 1, 1, true}, /* asymmetric pad */
	{1, 64, 8, 8, 64, 1, 1, 2, 2, {0, 0, 0, 0}, 1, 1, false},   /* 1x1 stride 2 */
	{1, 128, 9, 9, 192, 3, 3, 1, 1, {2, 2, 2, 2}, 2, 4, true},  /* 4 groups of 32 -> 48, dilated */
	{4, 8, 6, 6, 16, 5, 5, 1, 1, {0, 0, 0, 0}, 1, 1, false},    /* 2x2 outputs, K = 200 */
};

int main(void)
{
	static const ir_dtype fdt[] = {IR_F32, IR_F16, IR_BF16};
	if (!gpu_available())
		return gpu_done();
	for (size_t d = 0; d < SN_COUNT(fdt); d++)
		for (int l = 0; l < 2; l++)
			for (size_t i = 0; i < SN_COUNT(resnet); i++)
				conv(&resnet[i], fdt[d], l ? IR_NHWC : IR_NCHW, gpu_tol(fdt[d]), "resnet50");
	/* batch 32: the stem and a 3x3 of layer3 */
	cspec b32a = resnet[0], b32b = resnet[16];
	b32a.n = b32b.n = 32;
	conv(&b32a, IR_F16, IR_NHWC, gpu_tol(IR_F16), "resnet50 b32");
	conv(&b32b, IR_F16, IR_NCHW, gpu_tol(IR_F16), "resnet50 b32");
	conv(&b32b, IR_F32, IR_NHWC, gpu_tol(IR_F32), "resnet50 b32");
	for (size_t d = 0; d < SN_COUNT(fdt); d++)
		for (int l = 0; l < 2; l++)
			for (size_t i = 0; i < SN_COUNT(odd); i++)
				conv(&odd[i], fdt[d], l ? IR_NHWC : IR_NCHW, gpu_tol(fdt[d]), "odd");
	static const ir_dtype idt[] = {IR_I32, IR_I64};
	for (size_t d = 0; d < SN_COUNT(idt); d++)
		for (int l = 0; l < 2; l++) {
			conv(&odd[0], idt[d], l ? IR_NHWC : IR_NCHW, 0, "int");
			conv(&odd[6], idt[d], l ? IR_NHWC : IR_NCHW, 0, "int");
		}
	return gpu_done();
}
