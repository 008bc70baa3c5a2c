/* cuda_check.c: the tuner's fill and compare kernels (cuda_check.h).
 * Every kernel parameter is 8 bytes (rt_kfn_launch passes 8-byte
 * values): pointers, counts, a dtype code, and doubles as their bits. */
#include "autotune/cuda_check.h"

#include <stdlib.h>
#include <string.h>

/* dtype codes shared by the source and dcode() */
enum { K_F32, K_BF16, K_F16, K_E4M3, K_E5M2, K_BOOL, K_I8, K_I32, K_I64, K_U8 };

static const char src[] =
	"typedef unsigned long long u64;\n"
	"typedef unsigned int u32;\n"
	"__device__ __forceinline__ u64 sn_mix(u64 x)\n"
	"{\n"
	"\tx += 0x9e3779b97f4a7c15ull;\n"
	"\tx = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;\n"
	"\tx = (x ^ (x >> 27)) * 0x94d049bb133111ebull;\n"
	"\treturn x ^ (x >> 31);\n"
	"}\n"
	"/* sign from bit 63, mantissa from bits 8.., exponent offset in [0, 5) from bits 32..47 */\n"
	"extern \"C\" __global__ void sn_at_fill(u64 p_, u64 n, u64 kind, u64 seed)\n"
	"{\n"
	"\tunsigned char *p = (unsigned char *)p_;\n"
	"\tfor (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {\n"
	"\t\tu64 r = sn_mix(seed ^ sn_mix(i));\n"
	"\t\tu64 sg = r >> 63, e5 = ((r >> 32) & 0xffff) * 5 >> 16;\n"
	"\t\tswitch (kind) {\n"
	"\t\tcase 0: ((u32 *)p)[i] = (u32)(sg << 31 | (122 + e5) << 23 | ((r >> 8) & 0x7fffff)); break;\n"
	"\t\tcase 1: ((unsigned short *)p)[i] = (unsigned short)(sg << 15 | (122 + e5) << 7 | ((r >> 8) & 0x7f)); break;\n"
	"\t\tcase 2: ((unsigned short *)p)[i] = (unsigned short)(sg << 15 | (10 + e5) << 10 | ((r >> 8) & 0x3ff)); break;\n"
	"\t\tcase 3: p[i] = (unsigned char)(sg << 7 | (3 + ((r >> 32) & 3)) << 3 | ((r >> 8) & 7)); break;\n"
	"\t\tcase 4: p[i] = (unsigned char)(sg << 7 | (10 + e5) << 2 | ((r >> 8) & 3)); break;\n"
	"\t\tcase 5: p[i] = (unsigned char)(r & 1); break;\n"
	"\t\tcase 6: case 9: p[i] = (unsigned char)(1 + r % 9); break;\n"
	"\t\tcase 7: ((int *)p)[i] = (int)(1 + r % 9); break;\n"
	"\t\tdefault: ((long long *)p)[i] = (long long)(1 + r % 9); break;\n"
	"\t\t}\n"
	"\t}\n"
	"}\n"
	"__device__ __forceinline__ double sn_pow2(int e)\n"
	"{\n"
	"\treturn __longlong_as_double((long long)(e + 1023) << 52);\n"
	"}\n"
	"/* element i as a double; NaN and infinities kept */\n"
	"__device__ double sn_at_get(const unsigned char *p, u64 i, u64 kind)\n"
	"{\n"
	"\tswitch (kind) {\n"
	"\tcase 0: return (double)__int_as_float(((const int *)p)[i]);\n"
	"\tcase 1: return (double)__int_as_float((int)((u32)((const unsigned short *)p)[i] << 16));\n"
	"\tcase 2: {\n"
	"\t\tu32 h = ((const unsigned short *)p)[i], s = h >> 15, ex = (h >> 10) & 31, m = h & 1023;\n"
	"\t\tdouble v = ex == 31 ? (m ? __longlong_as_double(0x7ff8000000000000ll) : __longlong_as_double(0x7ff0000000000000ll))\n"
	"\t\t\t: ex == 0 ? m * sn_pow2(-24) : (1024 + m) * sn_pow2((int)ex - 25);\n"
	"\t\treturn s ? -v : v;\n"
	"\t}\n"
	"\tcase 3: {\n"
	"\t\tu32 b = p[i], s = b >> 7, ex = (b >> 3) & 15, m = b & 7;\n"
	"\t\tdouble v = (ex == 15 && m == 7) ? __longlong_as_double(0x7ff8000000000000ll)\n"
	"\t\t\t: ex == 0 ? m * sn_pow2(-9) : (8 + m) * sn_pow2((int)ex - 10);\n"
	"\t\treturn s ? -v : v;\n"
	"\t}\n"
	"\tdefault: {\n"
	"\t\tu32 b = p[i], s = b >> 7, ex = (b >> 2) & 31, m = b & 3;\n"
	"\t\tdouble v = ex == 31 ? (m ? __longlong_as_double(0x7ff8000000000000ll) : __longlong_as_double(0x7ff0000000000000ll))\n"
	"\t\t\t: ex == 0 ? m * sn_pow2(-16) : (4 + m) * sn_pow2((int)ex - 17);\n"
	"\t\treturn s ? -v : v;\n"
	"\t}\n"
	"\t}\n"
	"}\n"
	"__device__ __forceinline__ bool sn_nan(double x) { return x != x; }\n"
	"__device__ __forceinline__ bool sn_inf(double x) { return x == x && x - x != 0.0; }\n"
	"__device__ __forceinline__ double sn_abs(double x) { return x < 0 ? -x : x; }\n"
	"/* out[1] = max over finite |a[i]| (as the bits of a non-negative double) */\n"
	"extern \"C\" __global__ void sn_at_absmax(u64 a_, u64 n, u64 kind, u64 out_)\n"
	"{\n"
	"\tconst unsigned char *a = (const unsigned char *)a_;\n"
	"\tu64 *out = (u64 *)out_;\n"
	"\tdouble m = 0;\n"
	"\tfor (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {\n"
	"\t\tdouble v = sn_abs(sn_at_get(a, i, kind));\n"
	"\t\tif (!sn_nan(v) && !sn_inf(v) && v > m)\n"
	"\t\t\tm = v;\n"
	"\t}\n"
	"\tatomicMax(&out[1], (u64)__double_as_longlong(m));\n"
	"}\n"
	"/* out[0] += the elements of want and got that differ (bits: esize > 0, else as floats) */\n"
	"extern \"C\" __global__ void sn_at_diff(u64 want_, u64 got_, u64 n, u64 kind, u64 esize, u64 rtol_, u64 scale, u64 out_)\n"
	"{\n"
	"\tconst unsigned char *w = (const unsigned char *)want_, *g = (const unsigned char *)got_;\n"
	"\tu64 *out = (u64 *)out_;\n"
	"\tdouble rtol = __longlong_as_double((long long)rtol_), big = __longlong_as_double((long long)out[1]);\n"
	"\tu64 bad = 0;\n"
	"\tfor (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {\n"
	"\t\tif (esize) {\n"
	"\t\t\tfor (u64 b = 0; b < esize; b++)\n"
	"\t\t\t\tif (w[i * esize + b] != g[i * esize + b]) {\n"
	"\t\t\t\t\tbad++;\n"
	"\t\t\t\t\tbreak;\n"
	"\t\t\t\t}\n"
	"\t\t\tcontinue;\n"
	"\t\t}\n"
	"\t\tdouble a = sn_at_get(w, i, kind), b = sn_at_get(g, i, kind);\n"
	"\t\tif (sn_nan(a) || sn_nan(b)) {\n"
	"\t\t\tbad += sn_nan(a) != sn_nan(b);\n"
	"\t\t\tcontinue;\n"
	"\t\t}\n"
	"\t\tif (sn_inf(a) || sn_inf(b)) {\n"
	"\t\t\tbad += a != b;\n"
	"\t\t\tcontinue;\n"
	"\t\t}\n"
	"\t\tdouble tol = scale ? rtol * big + 1e-30 : 1e-6 + rtol * sn_abs(a);\n"
	"\t\tbad += sn_abs(a - b) > tol;\n"
	"\t}\n"
	"\tif (bad)\n"
	"\t\tatomicAdd(&out[0], bad);\n"
	"}\n";

const char *at_check_src(void)
{
	return src;
}

struct at_check {
	rt_cuda *c;
	rt_kfn *fill, *absmax, *diff;
	CUdeviceptr out; /* [0] the count, [1] the largest |want| */
};

void at_check_close(at_check *k)
{
	if (!k)
		return;
	rt_kfn_free(k->fill);
	rt_kfn_free(k->absmax);
	rt_kfn_free(k->diff);
	if (k->out)
		rt_dev_free(k->c, k->out);
	free(k);
}

int at_check_open(rt_cuda *c, const void *cubin, at_check **out, sn_err *e)
{
	*out = NULL;
	at_check *k = calloc(1, sizeof *k);
	if (!k)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	k->c = c;
	if (rt_kfn_load(c, cubin, "sn_at_fill", 0, &k->fill, e) || rt_kfn_load(c, cubin, "sn_at_absmax", 0, &k->absmax, e) ||
	    rt_kfn_load(c, cubin, "sn_at_diff", 0, &k->diff, e) || rt_dev_alloc(c, 16, &k->out, e)) {
		at_check_close(k);
		return e->code;
	}
	*out = k;
	return SN_OK;
}

static int dcode(ir_dtype t)
{
	switch (t) {
	case IR_F32: return K_F32;
	case IR_BF16: return K_BF16;
	case IR_F16: return K_F16;
	case IR_F8E4M3: return K_E4M3;
	case IR_F8E5M2: return K_E5M2;
	case IR_BOOL: return K_BOOL;
	case IR_I8: return K_I8;
	case IR_U8: return K_U8;
	case IR_I32: return K_I32;
	case IR_I64: return K_I64;
	default: return -1;
	}
}

bool at_check_takes(ir_dtype t)
{
	return dcode(t) >= 0;
}

/* a grid-stride launch over n elements */
static void shape(size_t n, unsigned grid[3], unsigned block[3])
{
	size_t blocks = (n + 255) / 256;
	grid[0] = blocks == 0 ? 1 : blocks > 4096 ? 4096 : (unsigned)blocks;
	grid[1] = grid[2] = 1;
	block[0] = 256;
	block[1] = block[2] = 1;
}

static CUdeviceptr bits(double d)
{
	CUdeviceptr u;
	memcpy(&u, &d, sizeof u);
	return u;
}

int at_check_fill(at_check *k, CUdeviceptr p, ir_dtype t, size_t n, uint64_t seed, sn_err *e)
{
	if (dcode(t) < 0)
		return sn_errf(e, SN_EINTERNAL, "the tuner's check takes no %s", ir_dtype_name(t));
	unsigned g[3], b[3];
	shape(n, g, b);
	CUdeviceptr a[] = {p, (CUdeviceptr)n, (CUdeviceptr)dcode(t), (CUdeviceptr)seed};
	return rt_kfn_launch(k->fill, g, b, 0, a, 4, e);
}

int at_check_diff(at_check *k, CUdeviceptr want, CUdeviceptr got, ir_dtype t, size_t n, double rtol, bool scale,
		  uint64_t *bad, sn_err *e)
{
	*bad = 0;
	if (dcode(t) < 0)
		return sn_errf(e, SN_EINTERNAL, "the tuner's check takes no %s", ir_dtype_name(t));
	bool fl = ir_dtype_is_float(t) && rtol >= 0;
	unsigned g[3], b[3];
	shape(n, g, b);
	int rc = rt_dev_fill(k->c, k->out, 0, 16, e);
	if (!rc && fl && scale) {
		CUdeviceptr a[] = {want, (CUdeviceptr)n, (CUdeviceptr)dcode(t), k->out};
		rc = rt_kfn_launch(k->absmax, g, b, 0, a, 4, e);
	}
	if (!rc) {
		CUdeviceptr a[] = {want, got, (CUdeviceptr)n, (CUdeviceptr)dcode(t),
				   (CUdeviceptr)(fl ? 0 : ir_dtype_size(t)), bits(rtol), (CUdeviceptr)scale, k->out};
		rc = rt_kfn_launch(k->diff, g, b, 0, a, 8, e);
	}
	uint64_t r[2] = {0, 0};
	if (!rc)
		rc = rt_dev_download(k->c, r, k->out, sizeof r, e);
	*bad = r[0];
	return rc;
}
