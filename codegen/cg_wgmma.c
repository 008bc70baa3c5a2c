/* cg_wgmma.c: the CUDA C that every wgmma kernel shares (see cg_wgmma.h).
 * PTX ISA 8.x: wgmma.mma_async, wgmma.fence/commit_group/wait_group,
 * matrix descriptors (start address >> 4 in bits 0-13, leading byte
 * offset >> 4 in 16-29, stride byte offset >> 4 in 32-45, swizzle mode in
 * 62-63), mbarrier and cp.async. */
#include "codegen/cg_wgmma.h"

#include <string.h>

const char *cg_wgmma_type(ir_dtype t, bool tf32)
{
	switch (t) {
	case IR_BF16: return "bf16";
	case IR_F16: return "f16";
	case IR_F32: return tf32 ? "tf32" : NULL;
	case IR_F8E4M3: return "e4m3";
	case IR_F8E5M2: return "e5m2";
	default: return NULL;
	}
}

int cg_wgmma_k(const char *ty)
{
	if (!ty)
		return 0;
	if (!strcmp(ty, "bf16") || !strcmp(ty, "f16"))
		return 16;
	if (!strcmp(ty, "tf32"))
		return 8;
	if (!strcmp(ty, "e4m3") || !strcmp(ty, "e5m2"))
		return 32;
	return 0;
}

static void emit_mma(sn_buf *b, const char *fn, int n, const char *ty, bool areg, bool tnsp_b)
{
	int nd = n / 2; /* accumulator registers per thread */
	/* the transpose immediates exist for f16/bf16 only: other types are
	 * K-major in both operands */
	bool half = cg_wgmma_k(ty) == 16;
	if (areg)
		sn_buf_printf(b, "static __device__ __forceinline__ void %s(float (&d)[%d], const unsigned (&a)[4], "
				 "unsigned long long bd)\n{\n", fn, nd);
	else
		sn_buf_printf(b, "static __device__ __forceinline__ void %s(float (&d)[%d], unsigned long long ad, "
				 "unsigned long long bd, int acc)\n{\n", fn, nd);
	sn_buf_printf(b, "\tasm volatile(\"{ .reg .pred p; setp.ne.b32 p, %%%d, 0; "
			 "wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s {",
		      areg ? nd + 5 : nd + 2, n, cg_wgmma_k(ty), ty, ty);
	for (int i = 0; i < nd; i++)
		sn_buf_printf(b, "%s%%%d", i ? "," : "", i);
	if (areg)
		sn_buf_printf(b, "}, {%%%d,%%%d,%%%d,%%%d}, %%%d, p, 1, 1, 1; }\"\n\t\t     :", nd, nd + 1, nd + 2,
			      nd + 3, nd + 4);
	else
		sn_buf_printf(b, "}, %%%d, %%%d, p, 1, 1%s; }\"\n\t\t     :", nd, nd + 1,
			      !half ? "" : tnsp_b ? ", 0, 1" : ", 0, 0");
	for (int i = 0; i < nd; i++)
		sn_buf_printf(b, "%s \"+f\"(d[%d])", i ? "," : "", i);
	if (areg)
		sn_buf_puts(b, "\n\t\t     : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(bd), \"n\"(1)"
			       "\n\t\t     : \"memory\");\n}\n\n");
	else
		sn_buf_puts(b, "\n\t\t     : \"l\"(ad), \"l\"(bd), \"r\"(acc)\n\t\t     : \"memory\");\n}\n\n");
}

void cg_wgmma_emit_mma(sn_buf *b, const char *fn, int n, const char *ty, bool areg)
{
	emit_mma(b, fn, n, ty, areg, false);
}

void cg_wgmma_emit_mma_tb(sn_buf *b, const char *fn, int n, const char *ty, bool tnsp_b)
{
	emit_mma(b, fn, n, ty, false, tnsp_b && cg_wgmma_k(ty) == 16);
}

static const char prims[] =
	"static __device__ __forceinline__ unsigned smem_u32(const void *p)\n{\n"
	"\tunsigned r;\n"
	"\tasm(\"{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }\" : \"=r\"(r) : \"l\"(p));\n"
	"\treturn r;\n}\n\n"
	"static __device__ __forceinline__ unsigned long long desc(unsigned long long base, unsigned addr)\n{\n"
	"\treturn base | ((addr >> 4) & 0x3fffu);\n}\n\n"
	"static __device__ __forceinline__ void mbar_init(unsigned a, unsigned count)\n{\n"
	"\tasm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"(a), \"r\"(count) : \"memory\");\n}\n\n"
	"static __device__ __forceinline__ void mbar_wait(unsigned a, unsigned parity)\n{\n"
	"\tunsigned ok;\n"
	"\tdo\n"
	"\t\tasm volatile(\"{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }\"\n"
	"\t\t\t     : \"=r\"(ok) : \"r\"(a), \"r\"(parity) : \"memory\");\n"
	"\twhile (!ok);\n}\n\n"
	"static __device__ __forceinline__ void mbar_arrive(unsigned a)\n{\n"
	"\tasm volatile(\"{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }\" :: \"r\"(a) : \"memory\");\n}\n\n"
	"static __device__ __forceinline__ void cp_async16(unsigned dst, const void *src, bool ok)\n{\n"
	"\tasm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"(dst), \"l\"(src), \"r\"(ok ? 16 : 0) : \"memory\");\n}\n\n"
	"static __device__ __forceinline__ void cp_commit(void)\n{\n"
	"\tasm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n}\n\n"
	"template <int N>\n"
	"static __device__ __forceinline__ void cp_wait(void)\n{\n"
	"\tasm volatile(\"cp.async.wait_group %0;\" :: \"n\"(N) : \"memory\");\n}\n\n"
	"static __device__ __forceinline__ void wg_fence(void)\n{\n"
	"\tasm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");\n}\n\n"
	"static __device__ __forceinline__ void wg_commit(void)\n{\n"
	"\tasm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");\n}\n\n"
	"template <int N>\n"
	"static __device__ __forceinline__ void wg_wait(void)\n{\n"
	"\tasm volatile(\"wgmma.wait_group.sync.aligned %0;\" :: \"n\"(N) : \"memory\");\n}\n\n"
	"/* keeps the compiler from moving register reads or writes across a wait */\n"
	"template <int N>\n"
	"static __device__ __forceinline__ void hold(float (&d)[N])\n{\n"
	"#pragma unroll\n"
	"\tfor (int i = 0; i < N; i++)\n"
	"\t\tasm volatile(\"\" : \"+f\"(d[i]) :: \"memory\");\n}\n\n";

void cg_wgmma_emit_prims(sn_buf *b)
{
	sn_buf_puts(b, prims);
}

static const char tma[] =
	"/* a CUtensorMap, passed by value as a __grid_constant__ parameter */\n"
	"struct __align__(64) sn_tmap { unsigned long long v[16]; };\n\n"
	"static __device__ __forceinline__ void mbar_expect_tx(unsigned a, unsigned bytes)\n{\n"
	"\tasm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: \"r\"(a), \"r\"(bytes) : \"memory\");\n}\n\n"
	"static __device__ __forceinline__ void mbar_fence_init(void)\n{\n"
	"\tasm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n}\n\n"
	"static __device__ __forceinline__ void tma_prefetch(const sn_tmap *m)\n{\n"
	"\tasm volatile(\"prefetch.tensormap [%0];\" :: \"l\"(m) : \"memory\");\n}\n\n"
	"static __device__ __forceinline__ void tma_load2(unsigned dst, const sn_tmap *m, int c0, int c1, unsigned bar)\n{\n"
	"\tasm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\"\n"
	"\t\t     :: \"r\"(dst), \"l\"(m), \"r\"(c0), \"r\"(c1), \"r\"(bar) : \"memory\");\n}\n\n"
	"static __device__ __forceinline__ void tma_load3(unsigned dst, const sn_tmap *m, int c0, int c1, int c2, unsigned bar)\n{\n"
	"\tasm volatile(\"cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\"\n"
	"\t\t     :: \"r\"(dst), \"l\"(m), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(bar) : \"memory\");\n}\n\n"
	"template <int R>\n"
	"static __device__ __forceinline__ void regs_dec(void)\n{\n"
	"\tasm volatile(\"setmaxnreg.dec.sync.aligned.u32 %0;\" :: \"n\"(R));\n}\n\n"
	"template <int R>\n"
	"static __device__ __forceinline__ void regs_inc(void)\n{\n"
	"\tasm volatile(\"setmaxnreg.inc.sync.aligned.u32 %0;\" :: \"n\"(R));\n}\n\n";

void cg_wgmma_emit_tma(sn_buf *b)
{
	sn_buf_puts(b, tma);
}
