/* test_cuda_reduce.c: reductions, softmax/log_softmax, layer_norm,
 * rms_norm, batch_norm and pooling on CUDA against the reference: every
 * kernel strategy of codegen/cg_reduce.c, cg_norm.c and cg_pool.c (warp per
 * row, block per row, a thread per column, rows in registers or re-read),
 * reduced axes that are contiguous or not, each float dtype and the integer
 * paths, both layouts. Inputs are fresh random values (gpu_check.c):
 * floats in [-1, 1), integers in [0, 4), batch_norm variances positive. */
#include "gpu_check.h"

#include <stdio.h>
#include <string.h>

static void shape_str(const ir_shape *s, char *out, size_t cap)
{
	size_t n = (size_t)snprintf(out, cap, "[");
	for (int i = 0; i < s->rank && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s%lld", i ? "," : "", (long long)s->d[i]);
	if (n < cap)
		snprintf(out + n, cap - n, "]");
}

static const ir_dtype fdt[] = {IR_F32, IR_F16, IR_BF16};

static void reductions(void)
{
	static const ir_op ops[] = {IR_OP_reduce_sum, IR_OP_reduce_mean, IR_OP_reduce_max, IR_OP_reduce_min};
	struct {
		ir_shape s;
		ir_ints axes;
		bool keep;
	} cases[] = {
		{GPU_SHAPE(100, 300), GPU_INTS(1), false},        /* warp per row */
		{GPU_SHAPE(3, 5000), GPU_INTS(-1), true},         /* block per row */
		{GPU_SHAPE(2, 70000), GPU_INTS(1), false},        /* block of 1024 per row */
		{GPU_SHAPE(64, 10, 128), GPU_INTS(1), false},     /* columns: a thread per output */
		{GPU_SHAPE(4, 7, 33), GPU_INTS(1), true},         /* few columns: a warp per output */
		{GPU_SHAPE(2, 3, 4, 5), GPU_INTS(0, 2), true},    /* axes that are not contiguous */
		{GPU_SHAPE(6, 7, 8), GPU_INTS(), false},          /* everything */
		{GPU_SHAPE(2, 64, 56, 56), GPU_INTS(2, 3), true}, /* spatial mean */
		{GPU_SHAPE(5, 1, 9), GPU_INTS(1), false},         /* a size-1 reduced axis */
	};
	char label[128], ss[64];
	for (size_t c = 0; c < SN_COUNT(cases); c++)
		for (size_t o = 0; o < SN_COUNT(ops); o++)
			for (size_t d = 0; d < SN_COUNT(fdt); d++) {
				ir_graph *g = ir_graph_new();
				ir_attrs a;
				ir_attrs_init(ops[o], &a);
				a.axes = cases[c].axes;
				a.keepdims = cases[c].keep;
				ir_ref x = gpu_in(g, "x", fdt[d], cases[c].s);
				shape_str(&cases[c].s, ss, sizeof ss);
				snprintf(label, sizeof label, "%s %s %s axes %d", ir_ops[ops[o]].name, ir_dtype_name(fdt[d]),
					 ss, cases[c].axes.n ? (int)cases[c].axes.v[0] : -99);
				gpu_run(g, ir_add(g, ops[o], &x, 1, &a, &gpu_err), gpu_tol(fdt[d]), label);
			}
	static const ir_dtype idt[] = {IR_I32, IR_I64, IR_I8, IR_U8};
	for (size_t d = 0; d < SN_COUNT(idt); d++)
		for (size_t o = 0; o < SN_COUNT(ops); o++)
			for (int c = 0; c < 2; c++) {
				ir_graph *g = ir_graph_new();
				ir_attrs a;
				ir_attrs_init(ops[o], &a);
				a.axes = c ? GPU_INTS(0, 2) : GPU_INTS(-1);
				ir_ref x = gpu_in(g, "x", idt[d], c ? GPU_SHAPE(5, 3, 7) : GPU_SHAPE(9, 3000));
				snprintf(label, sizeof label, "%s %s case %d", ir_ops[ops[o]].name, ir_dtype_name(idt[d]), c);
				gpu_run(g, ir_add(g, ops[o], &x, 1, &a, &gpu_err), 0, label); /* integers: exact */
			}
}

static void softmaxes(void)
{
	struct {
		ir_shape s;
		int axis;
	} cases[] = {
		{GPU_SHAPE(37, 100), -1},       /* warp per row, in registers */
		{GPU_SHAPE(4, 1000), 1},        /* warp per row, 32 values per lane */
		{GPU_SHAPE(3, 3000), -1},       /* block per row, in registers */
		{GPU_SHAPE(2, 50257), -1},      /* vocabulary-sized rows, re-read */
		{GPU_SHAPE(2, 5, 7, 3), 1},     /* an inner axis */
		{GPU_SHAPE(3, 9, 12, 64), 0},   /* the outermost axis */
		{GPU_SHAPE(1, 12, 128, 128), 3},/* attention scores */
	};
	char label[128], ss[64];
	for (size_t c = 0; c < SN_COUNT(cases); c++)
		for (size_t d = 0; d < SN_COUNT(fdt); d++)
			for (int lg = 0; lg < 2; lg++) {
				ir_op o = lg ? IR_OP_log_softmax : IR_OP_softmax;
				ir_graph *g = ir_graph_new();
				ir_attrs a;
				ir_attrs_init(o, &a);
				a.axis = cases[c].axis;
				ir_ref x = gpu_in(g, "x", fdt[d], cases[c].s);
				shape_str(&cases[c].s, ss, sizeof ss);
				snprintf(label, sizeof label, "%s %s %s axis %d", ir_ops[o].name, ir_dtype_name(fdt[d]), ss,
					 cases[c].axis);
				gpu_run(g, ir_add(g, o, &x, 1, &a, &gpu_err), gpu_tol(fdt[d]), label);
			}
}

static void norms(void)
{
	struct {
		ir_shape s;
		int axis, nin;
	} cases[] = {
		{GPU_SHAPE(2, 16, 768), -1, 3},   /* GPT-2's layer norm */
		{GPU_SHAPE(4, 100), 1, 1},        /* no weight, warp per row */
		{GPU_SHAPE(3, 4, 9000), 1, 2},    /* over two dims, re-read */
		{GPU_SHAPE(5, 4096), -1, 2},      /* block per row, in registers */
		{GPU_SHAPE(7, 33), -1, 3},        /* a row shorter than a warp's stride */
	};
	char label[128], ss[64];
	for (size_t c = 0; c < SN_COUNT(cases); c++)
		for (size_t d = 0; d < SN_COUNT(fdt); d++)
			for (int rms = 0; rms < 2; rms++) {
				ir_op o = rms ? IR_OP_rms_norm : IR_OP_layer_norm;
				int nin = rms && cases[c].nin > 2 ? 2 : cases[c].nin;
				ir_graph *g = ir_graph_new();
				ir_attrs a;
				ir_attrs_init(o, &a);
				a.axis = cases[c].axis;
				const ir_shape *xs = &cases[c].s;
				int ax = ir_axis(a.axis, xs->rank);
				ir_shape ws = {xs->rank - ax, {0}};
				for (int i = ax; i < xs->rank; i++)
					ws.d[i - ax] = xs->d[i];
				ir_ref ins[3] = {gpu_in(g, "x", fdt[d], *xs), gpu_in(g, "w", fdt[d], ws), gpu_in(g, "b", fdt[d], ws)};
				shape_str(xs, ss, sizeof ss);
				snprintf(label, sizeof label, "%s %s %s axis %d, %d operands", ir_ops[o].name,
					 ir_dtype_name(fdt[d]), ss, cases[c].axis, nin);
				gpu_run(g, ir_add(g, o, ins, (uint32_t)nin, &a, &gpu_err), gpu_tol(fdt[d]), label);
			}
	for (size_t d = 0; d < SN_COUNT(fdt); d++)
		for (int l = 0; l < 3; l++) {
			ir_graph *g = ir_graph_new();
			ir_attrs a;
			ir_attrs_init(IR_OP_batch_norm, &a);
			a.layout = l == 1 ? IR_NHWC : IR_NCHW;
			ir_shape xs = l == 0 ? GPU_SHAPE(2, 64, 7, 9) : l == 1 ? GPU_SHAPE(2, 7, 9, 64) : GPU_SHAPE(6, 10);
			int64_t c = l == 1 ? 64 : xs.d[1];
			ir_ref ins[5] = {gpu_in(g, "x", fdt[d], xs), gpu_in(g, "w", fdt[d], GPU_SHAPE(c)), gpu_in(g, "b", fdt[d], GPU_SHAPE(c)),
					 gpu_in(g, "mean", fdt[d], GPU_SHAPE(c)), gpu_in(g, "var", fdt[d], GPU_SHAPE(c))};
			snprintf(label, sizeof label, "batch_norm %s %s rank %d", ir_dtype_name(fdt[d]),
				 ir_layout_name(a.layout), xs.rank);
			gpu_run(g, ir_add(g, IR_OP_batch_norm, ins, 5, &a, &gpu_err), gpu_tol(fdt[d]), label);
		}
}

static void pools(void)
{
	char label[160];
	for (size_t d = 0; d < SN_COUNT(fdt); d++)
		for (int l = 0; l < 2; l++) {
			ir_layout lay = l ? IR_NHWC : IR_NCHW;
			const char *ln = ir_layout_name(lay), *dn = ir_dtype_name(fdt[d]);
			struct {
				ir_ints k, s, p, dil;
				bool ceil;
			} mp[] = {
				{GPU_INTS(3, 3), GPU_INTS(2, 2), GPU_INTS(1, 1, 1, 1), GPU_INTS(1, 1), false}, /* ResNet's stem */
				{GPU_INTS(2, 2), {0}, GPU_INTS(0, 0, 0, 0), GPU_INTS(1, 1), false},        /* stride = kernel */
				{GPU_INTS(3, 2), GPU_INTS(2, 1), GPU_INTS(1, 0, 1, 1), GPU_INTS(2, 1), true},  /* dilation, ceil */
			};
			for (size_t c = 0; c < SN_COUNT(mp); c++) {
				ir_graph *g = ir_graph_new();
				ir_ref x = gpu_in(g, "x", fdt[d], l ? GPU_SHAPE(2, 17, 19, 8) : GPU_SHAPE(2, 8, 17, 19));
				ir_attrs a;
				ir_attrs_init(IR_OP_max_pool2d, &a);
				a.layout = lay, a.kernel = mp[c].k, a.stride = mp[c].s, a.pad = mp[c].p;
				a.dilation = mp[c].dil, a.ceil_mode = mp[c].ceil;
				snprintf(label, sizeof label, "max_pool2d %s %s case %zu", dn, ln, c);
				gpu_run(g, ir_add(g, IR_OP_max_pool2d, &x, 1, &a, &gpu_err), gpu_tol(fdt[d]), label);
			}
			for (int c = 0; c < 4; c++) {
				ir_graph *g = ir_graph_new();
				ir_ref x = gpu_in(g, "x", fdt[d], l ? GPU_SHAPE(2, 17, 19, 8) : GPU_SHAPE(2, 8, 17, 19));
				ir_attrs a;
				ir_attrs_init(IR_OP_avg_pool2d, &a);
				a.layout = lay;
				a.kernel = c < 2 ? GPU_INTS(3, 3) : GPU_INTS(3, 2);
				a.stride = c < 2 ? GPU_INTS(2, 2) : GPU_INTS(2, 3);
				a.pad = c < 2 ? GPU_INTS(1, 1, 1, 1) : GPU_INTS(1, 0, 0, 1);
				a.ceil_mode = c >= 2;
				a.count_include_pad = c & 1;
				snprintf(label, sizeof label, "avg_pool2d %s %s ceil %d count_include_pad %d", dn, ln,
					 a.ceil_mode, a.count_include_pad);
				gpu_run(g, ir_add(g, IR_OP_avg_pool2d, &x, 1, &a, &gpu_err), gpu_tol(fdt[d]), label);
			}
			for (int c = 0; c < 3; c++) {
				ir_graph *g = ir_graph_new();
				ir_shape xs = c == 0 ? GPU_SHAPE(2, 2048, 7, 7) : c == 1 ? GPU_SHAPE(1, 3, 80, 80) : GPU_SHAPE(3, 5, 1, 9);
				if (l)
					xs = (ir_shape){4, {xs.d[0], xs.d[2], xs.d[3], xs.d[1]}};
				ir_ref x = gpu_in(g, "x", fdt[d], xs);
				ir_attrs a;
				ir_attrs_init(IR_OP_global_avg_pool, &a);
				a.layout = lay;
				snprintf(label, sizeof label, "global_avg_pool %s %s case %d", dn, ln, c);
				gpu_run(g, ir_add(g, IR_OP_global_avg_pool, &x, 1, &a, &gpu_err), gpu_tol(fdt[d]), label);
			}
		}
	static const ir_dtype idt[] = {IR_I32, IR_U8, IR_I64};
	for (size_t d = 0; d < SN_COUNT(idt); d++) {
		ir_graph *g = ir_graph_new();
		ir_ref x = gpu_in(g, "x", idt[d], GPU_SHAPE(2, 3, 9, 10));
		ir_attrs a;
		ir_attrs_init(IR_OP_max_pool2d, &a);
		a.kernel = GPU_INTS(3, 3);
		a.stride = GPU_INTS(2, 2);
		a.pad = GPU_INTS(1, 1, 1, 1);
		snprintf(label, sizeof label, "max_pool2d %s", ir_dtype_name(idt[d]));
		gpu_run(g, ir_add(g, IR_OP_max_pool2d, &x, 1, &a, &gpu_err), 0, label);
	}
}

int main(void)
{
	if (!gpu_available())
		return gpu_done();
	reductions();
	softmaxes();
	norms();
	pools();
	return gpu_done();
}
