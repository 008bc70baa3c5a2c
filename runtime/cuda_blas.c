/* cuda_blas.c: cuBLASLt loaded with dlopen; cg_mm steps as cuBLASLt
 * matmuls.
 *
 * cuBLASLt is column-major and sinter is row-major. A row-major r x c
 * matrix with leading dimension c is, byte for byte, a column-major c x r
 * matrix, so the row-major product out = A @ op(B) is computed as the
 * column-major out^T = op(B)^T @ A^T: cuBLASLt's "A" is our B, its "B" is
 * our A, and its D (n x m, ld n) is our out (m x n, row-major). */
#include "runtime/cuda_blas.h"

#include <cublasLt.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rt_blas {
	void *lib;
	rt_cuda *c;
	cublasLtHandle_t h;
	CUdeviceptr ws;
	size_t ws_size;
	int version;
	cublasStatus_t (*Create)(cublasLtHandle_t *);
	cublasStatus_t (*Destroy)(cublasLtHandle_t);
	size_t (*GetVersion)(void);
	const char *(*GetStatusName)(cublasStatus_t);
	const char *(*GetStatusString)(cublasStatus_t);
	cublasStatus_t (*MatmulDescCreate)(cublasLtMatmulDesc_t *, cublasComputeType_t, cudaDataType_t);
	cublasStatus_t (*MatmulDescDestroy)(cublasLtMatmulDesc_t);
	cublasStatus_t (*MatmulDescSetAttribute)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t,
						 const void *, size_t);
	cublasStatus_t (*MatrixLayoutCreate)(cublasLtMatrixLayout_t *, cudaDataType, uint64_t, uint64_t,
					     int64_t);
	cublasStatus_t (*MatrixLayoutDestroy)(cublasLtMatrixLayout_t);
	cublasStatus_t (*MatrixLayoutSetAttribute)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t,
						   const void *, size_t);
	cublasStatus_t (*MatmulPreferenceCreate)(cublasLtMatmulPreference_t *);
	cublasStatus_t (*MatmulPreferenceDestroy)(cublasLtMatmulPreference_t);
	cublasStatus_t (*MatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t,
						       cublasLtMatmulPreferenceAttributes_t, const void *, size_t);
	cublasStatus_t (*MatmulAlgoGetHeuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
						 cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
						 cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
						 cublasLtMatmulHeuristicResult_t[], int *);
	cublasStatus_t (*Matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *,
				 cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t, const void *,
				 const void *, cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,
				 const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t);
	cublasStatus_t (*MatmulAlgoInit)(cublasLtHandle_t, cublasComputeType_t, cudaDataType_t, cudaDataType_t,
					 cudaDataType_t, cudaDataType_t, cudaDataType_t, int, cublasLtMatmulAlgo_t *);
	cublasStatus_t (*MatmulAlgoCheck)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
					  cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
					  const cublasLtMatmulAlgo_t *, cublasLtMatmulHeuristicResult_t *);
	cublasStatus_t (*MatmulAlgoConfigSetAttribute)(cublasLtMatmulAlgo_t *, cublasLtMatmulAlgoConfigAttributes_t,
						       const void *, size_t);
	cublasStatus_t (*MatmulAlgoConfigGetAttribute)(const cublasLtMatmulAlgo_t *,
						       cublasLtMatmulAlgoConfigAttributes_t, void *, size_t, size_t *);
};

struct rt_gemm {
	rt_blas *b;
	cg_mm g;
	bool empty; /* nothing to compute (a zero dim) */
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, lc; /* cuBLASLt's A (our B), B (our A), C = D (our out) */
	cublasLtMatmulHeuristicResult_t algo;
};

#define ENTRY(field, sym) {offsetof(struct rt_blas, field), sym}
static const struct {
	size_t off;
	const char *sym;
} entries[] = {
	ENTRY(Create, "cublasLtCreate"),
	ENTRY(Destroy, "cublasLtDestroy"),
	ENTRY(GetVersion, "cublasLtGetVersion"),
	ENTRY(GetStatusName, "cublasLtGetStatusName"),
	ENTRY(GetStatusString, "cublasLtGetStatusString"),
	ENTRY(MatmulDescCreate, "cublasLtMatmulDescCreate"),
	ENTRY(MatmulDescDestroy, "cublasLtMatmulDescDestroy"),
	ENTRY(MatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute"),
	ENTRY(MatrixLayoutCreate, "cublasLtMatrixLayoutCreate"),
	ENTRY(MatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy"),
	ENTRY(MatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute"),
	ENTRY(MatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate"),
	ENTRY(MatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy"),
	ENTRY(MatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute"),
	ENTRY(MatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic"),
	ENTRY(Matmul, "cublasLtMatmul"),
	ENTRY(MatmulAlgoInit, "cublasLtMatmulAlgoInit"),
	ENTRY(MatmulAlgoCheck, "cublasLtMatmulAlgoCheck"),
	ENTRY(MatmulAlgoConfigSetAttribute, "cublasLtMatmulAlgoConfigSetAttribute"),
	ENTRY(MatmulAlgoConfigGetAttribute, "cublasLtMatmulAlgoConfigGetAttribute"),
};
#undef ENTRY

static const char *const lib_names[] = {
	"libcublasLt.so.13",
	"libcublasLt.so.12",
	"/usr/local/cuda/lib64/libcublasLt.so.13",
	"/usr/local/cuda/lib64/libcublasLt.so.12",
};

/* "what: CUBLAS_STATUS_X (text)" for a failed call; SN_OK on success. An
 * invalid value is a bug in what sinter asked for; the rest (not
 * initialized, allocation, architecture, execution) is the environment. */
static int check(const rt_blas *b, cublasStatus_t s, const char *what, sn_err *e)
{
	if (s == CUBLAS_STATUS_SUCCESS)
		return SN_OK;
	const char *name = b->GetStatusName ? b->GetStatusName(s) : NULL;
	const char *text = b->GetStatusString ? b->GetStatusString(s) : NULL;
	return sn_errf(e, s == CUBLAS_STATUS_INVALID_VALUE ? SN_EINTERNAL : SN_EENV, "%s: %s (%s)", what,
		       name ? name : "CUBLAS_STATUS_?", text ? text : "");
}

#ifdef SINTER_FAULT
/* Fault injection (ir/fault.h): cuBLASLt calls count as CUDA calls
 * (SINTER_FAULT_CUDA); those that create, configure, choose or compute
 * fail with CUBLAS_STATUS_ALLOC_FAILED (cublasLtMatmul with
 * CUBLAS_STATUS_EXECUTION_FAILED), without being made; destroys, the
 * version and the status strings always run. */
#include "ir/fault.h"
#define BF(f, fail, params, args)                                             \
	static cublasStatus_t(*real_##f) params;                              \
	static cublasStatus_t fw_##f params                                   \
	{                                                                     \
		return sn_fault_cuda_hit() ? (fail) : real_##f args;          \
	}
#define AF CUBLAS_STATUS_ALLOC_FAILED
BF(Create, AF, (cublasLtHandle_t * a), (a))
BF(MatmulDescCreate, AF, (cublasLtMatmulDesc_t * a, cublasComputeType_t b, cudaDataType_t c), (a, b, c))
BF(MatmulDescSetAttribute, AF, (cublasLtMatmulDesc_t a, cublasLtMatmulDescAttributes_t b, const void *c, size_t d),
   (a, b, c, d))
BF(MatrixLayoutCreate, AF, (cublasLtMatrixLayout_t * a, cudaDataType b, uint64_t c, uint64_t d, int64_t f),
   (a, b, c, d, f))
BF(MatrixLayoutSetAttribute, AF,
   (cublasLtMatrixLayout_t a, cublasLtMatrixLayoutAttribute_t b, const void *c, size_t d), (a, b, c, d))
BF(MatmulPreferenceCreate, AF, (cublasLtMatmulPreference_t * a), (a))
BF(MatmulPreferenceSetAttribute, AF,
   (cublasLtMatmulPreference_t a, cublasLtMatmulPreferenceAttributes_t b, const void *c, size_t d), (a, b, c, d))
BF(MatmulAlgoGetHeuristic, AF,
   (cublasLtHandle_t a, cublasLtMatmulDesc_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
    cublasLtMatrixLayout_t f, cublasLtMatrixLayout_t g, cublasLtMatmulPreference_t h, int i,
    cublasLtMatmulHeuristicResult_t j[], int *k),
   (a, b, c, d, f, g, h, i, j, k))
BF(Matmul, CUBLAS_STATUS_EXECUTION_FAILED,
   (cublasLtHandle_t a, cublasLtMatmulDesc_t b, const void *c, const void *d, cublasLtMatrixLayout_t f,
    const void *g, cublasLtMatrixLayout_t h, const void *i, const void *j, cublasLtMatrixLayout_t k, void *l,
    cublasLtMatrixLayout_t m, const cublasLtMatmulAlgo_t *n, void *o, size_t p, cudaStream_t q),
   (a, b, c, d, f, g, h, i, j, k, l, m, n, o, p, q))
BF(MatmulAlgoInit, AF,
   (cublasLtHandle_t a, cublasComputeType_t b, cudaDataType_t c, cudaDataType_t d, cudaDataType_t f,
    cudaDataType_t g, cudaDataType_t h, int i, cublasLtMatmulAlgo_t *j),
   (a, b, c, d, f, g, h, i, j))
BF(MatmulAlgoCheck, AF,
   (cublasLtHandle_t a, cublasLtMatmulDesc_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
    cublasLtMatrixLayout_t f, cublasLtMatrixLayout_t g, const cublasLtMatmulAlgo_t *h,
    cublasLtMatmulHeuristicResult_t *i),
   (a, b, c, d, f, g, h, i))
BF(MatmulAlgoConfigSetAttribute, AF,
   (cublasLtMatmulAlgo_t * a, cublasLtMatmulAlgoConfigAttributes_t b, const void *c, size_t d), (a, b, c, d))
BF(MatmulAlgoConfigGetAttribute, AF,
   (const cublasLtMatmulAlgo_t *a, cublasLtMatmulAlgoConfigAttributes_t b, void *c, size_t d, size_t *f),
   (a, b, c, d, f))
#undef AF
#undef BF

static void fault_wrap(rt_blas *b)
{
#define W(f)                      \
	do {                      \
		real_##f = b->f;  \
		b->f = fw_##f;    \
	} while (0)
	W(Create); W(MatmulDescCreate); W(MatmulDescSetAttribute); W(MatrixLayoutCreate);
	W(MatrixLayoutSetAttribute); W(MatmulPreferenceCreate); W(MatmulPreferenceSetAttribute);
	W(MatmulAlgoGetHeuristic); W(Matmul); W(MatmulAlgoInit); W(MatmulAlgoCheck);
	W(MatmulAlgoConfigSetAttribute); W(MatmulAlgoConfigGetAttribute);
#undef W
}
#endif

int rt_blas_open(rt_cuda *c, rt_blas **out, sn_err *e)
{
	*out = NULL;
	rt_blas *b = calloc(1, sizeof *b);
	if (!b)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	b->c = c;
	char why[512] = "";
	for (size_t i = 0; i < SN_COUNT(lib_names) && !b->lib; i++) {
		b->lib = dlopen(lib_names[i], RTLD_NOW | RTLD_LOCAL);
		if (!b->lib && !why[0]) {
			const char *d = dlerror();
			snprintf(why, sizeof why, "%s", d ? d : "not found");
		}
	}
	if (!b->lib) {
		free(b);
		return sn_errf(e, SN_EENV,
			       "no cuBLASLt: cannot load libcublasLt.so.13 or .12, nor from /usr/local/cuda/lib64 (%s)",
			       why);
	}
	for (size_t i = 0; i < SN_COUNT(entries); i++) {
		void *f = dlsym(b->lib, entries[i].sym);
		if (!f) {
			sn_errf(e, SN_EENV, "cuBLASLt is too old: it lacks %s", entries[i].sym);
			rt_blas_close(b);
			return SN_EENV;
		}
		memcpy((char *)b + entries[i].off, &f, sizeof f);
	}
#ifdef SINTER_FAULT
	fault_wrap(b);
#endif
	b->version = (int)b->GetVersion();
	if (check(b, b->Create(&b->h), "cublasLtCreate", e)) {
		b->h = NULL;
		rt_blas_close(b);
		return e->code;
	}
	if (rt_check(c, c->d.MemAlloc(&b->ws, RT_BLAS_WORKSPACE), "cuMemAlloc (cuBLASLt workspace)", e)) {
		b->ws = 0;
		rt_blas_close(b);
		return e->code;
	}
	b->ws_size = RT_BLAS_WORKSPACE;
	*out = b;
	return SN_OK;
}

void rt_blas_close(rt_blas *b)
{
	if (!b)
		return;
	if (b->ws)
		b->c->d.MemFree(b->ws);
	if (b->h)
		b->Destroy(b->h);
	/* the library stays loaded: cuBLASLt keeps process-wide state (its
	 * CUDA runtime and kernel modules) that must not be unmapped */
	free(b);
}

/* Found once per process (pthread_once: callers on several threads all
 * see the finished value, never a half-set one). */
static int lib_version;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void find_lib_version(void)
{
	for (size_t i = 0; i < SN_COUNT(lib_names); i++) {
		void *lib = dlopen(lib_names[i], RTLD_LAZY | RTLD_LOCAL);
		if (!lib)
			continue;
		size_t (*get)(void) = (size_t (*)(void))dlsym(lib, "cublasLtGetVersion");
		lib_version = get ? (int)get() : 0;
		break; /* stays loaded, as rt_blas_close explains */
	}
}

int rt_blas_lib_version(void)
{
	pthread_once(&lib_once, find_lib_version);
	return lib_version;
}

int rt_blas_version(const rt_blas *b)
{
	return b->version;
}

/* The largest power of two (at most RT_GEMM_ALIGN) dividing every batch's
 * start, given a RT_GEMM_ALIGN-aligned base. */
static uint32_t batch_align(int64_t batch, int64_t stride, size_t esize)
{
	uint64_t bytes = (uint64_t)stride * esize;
	if (batch <= 1 || bytes == 0)
		return RT_GEMM_ALIGN;
	uint64_t low = bytes & (~bytes + 1);
	return low < RT_GEMM_ALIGN ? (uint32_t)low : RT_GEMM_ALIGN;
}

static int layout(rt_blas *b, cublasLtMatrixLayout_t *l, cudaDataType t, int64_t rows, int64_t cols, int64_t ld,
		  int64_t batch, int64_t stride, const char *what, sn_err *e)
{
	char call[96];
	snprintf(call, sizeof call, "cublasLtMatrixLayoutCreate (%s)", what);
	if (check(b, b->MatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld), call, e)) {
		*l = NULL;
		return e->code;
	}
	if (batch > 1) {
		int32_t count = (int32_t)batch;
		snprintf(call, sizeof call, "cublasLtMatrixLayoutSetAttribute (%s batch)", what);
		if (check(b, b->MatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
			  call, e) ||
		    check(b, b->MatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
							 sizeof stride),
			  call, e))
			return e->code;
	}
	return SN_OK;
}

static int set_desc(rt_blas *b, cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const void *v,
		    size_t size, const char *what, sn_err *e)
{
	char call[96];
	snprintf(call, sizeof call, "cublasLtMatmulDescSetAttribute (%s)", what);
	return check(b, b->MatmulDescSetAttribute(d, attr, v, size), call, e);
}

static int set_pref(rt_blas *b, cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr,
		    const void *v, size_t size, sn_err *e)
{
	return check(b, b->MatmulPreferenceSetAttribute(p, attr, v, size), "cublasLtMatmulPreferenceSetAttribute",
		     e);
}

/* The algorithm's configuration as data (cg_blas_algo), read back. */
static void algo_read(const rt_blas *b, const cublasLtMatmulAlgo_t *a, cg_blas_algo *out)
{
	int32_t id = 0;
	uint32_t tile = 0, stages = 0, red = 0, swz = 0, cust = 0;
	int32_t splitk = 1;
	uint16_t inner = 0, cluster = 0;
	size_t w;
	b->MatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
	b->MatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
	b->MatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
	b->MatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
	b->MatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &w);
	b->MatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz, &w);
	b->MatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &cust, sizeof cust, &w);
	b->MatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &inner, sizeof inner, &w);
	b->MatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &w);
	*out = (cg_blas_algo){.valid = 1, .id = id, .tile = (int32_t)tile, .stages = (int32_t)stages,
			      .splitk = splitk, .reduction = (int32_t)red, .swizzle = (int32_t)swz,
			      .custom = (int32_t)cust, .inner = inner, .cluster = cluster};
}

/* Builds the algorithm a cg_blas_algo describes and checks it against the
 * problem: false when it is not valid here (another cuBLASLt, another GPU). */
static bool algo_from(rt_blas *b, rt_gemm *gm, cublasComputeType_t ct, cudaDataType t, const cg_blas_algo *d)
{
	cublasLtMatmulAlgo_t a;
	if (b->MatmulAlgoInit(b->h, ct, CUDA_R_32F, t, t, t, t, d->id, &a) != CUBLAS_STATUS_SUCCESS)
		return false;
	uint32_t tile = (uint32_t)d->tile, stages = (uint32_t)d->stages, red = (uint32_t)d->reduction,
		 swz = (uint32_t)d->swizzle, cust = (uint32_t)d->custom;
	int32_t splitk = d->splitk;
	uint16_t inner = (uint16_t)d->inner, cluster = (uint16_t)d->cluster;
	if (b->MatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile) ||
	    b->MatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages) ||
	    b->MatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk) ||
	    b->MatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red) ||
	    b->MatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz) ||
	    b->MatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &cust, sizeof cust) ||
	    b->MatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &inner, sizeof inner) ||
	    b->MatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster))
		return false;
	cublasLtMatmulHeuristicResult_t r;
	memset(&r, 0, sizeof r);
	if (b->MatmulAlgoCheck(b->h, gm->desc, gm->la, gm->lb, gm->lc, gm->lc, &a, &r) != CUBLAS_STATUS_SUCCESS ||
	    r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > b->ws_size)
		return false;
	r.algo = a;
	gm->algo = r;
	return true;
}

int rt_gemm_prepare(rt_blas *b, const cg_mm *g, rt_gemm **out, cg_blas_algo *chosen, sn_err *e)
{
	*out = NULL;
	char what[200];
	cg_mm_describe(g, what, sizeof what);
	cudaDataType t;
	switch (g->dtype) {
	case IR_F32: t = CUDA_R_32F; break;
	case IR_F16: t = CUDA_R_16F; break;
	case IR_BF16: t = CUDA_R_16BF; break;
	default: return sn_errf(e, SN_EINPUT, "%s: cuBLASLt takes f32, f16 or bf16", what);
	}
	if (g->batch < 0 || g->m < 0 || g->n < 0 || g->k < 0 || g->stride_a < 0 || g->stride_b < 0 ||
	    g->stride_c < 0)
		return sn_errf(e, SN_EINTERNAL, "%s: negative size or stride", what);
	if (g->batch > INT32_MAX || g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX)
		return sn_errf(e, SN_EINPUT, "%s: a dimension exceeds cuBLASLt's 32-bit limit", what);
	if (g->batch > 1 && g->stride_c < g->m * g->n)
		return sn_errf(e, SN_EINTERNAL, "%s: output batches overlap (stride %lld)", what,
			       (long long)g->stride_c);
	rt_gemm *gm = calloc(1, sizeof *gm);
	if (!gm)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	gm->b = b;
	gm->g = *g;
	if (g->batch == 0 || g->m == 0 || g->n == 0) {
		gm->empty = true;
		*out = gm;
		return SN_OK;
	}
	if (g->k == 0) {
		free(gm);
		return sn_errf(e, SN_EINPUT, "%s: an empty contraction (k = 0) is not supported by cuBLASLt", what);
	}

	/* f32 accumulation and scale for every dtype; CUBLAS_COMPUTE_32F is
	 * true fp32, CUBLAS_COMPUTE_32F_FAST_TF32 (f32 with tf32 set) rounds
	 * the f32 operands to TF32 on the tensor cores, accumulating in fp32 */
	cublasLtMatmulPreference_t pref = NULL;
	cublasComputeType_t ct = g->tf32 && g->dtype == IR_F32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
	if (check(b, b->MatmulDescCreate(&gm->desc, ct, CUDA_R_32F), "cublasLtMatmulDescCreate",
		  e)) {
		gm->desc = NULL;
		goto fail;
	}
	int32_t opa = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, opb = CUBLAS_OP_N;
	bool bias = g->bias != CG_NO_BUF;
	uint32_t epi = bias ? (g->act == CG_ACT_RELU   ? CUBLASLT_EPILOGUE_RELU_BIAS
			       : g->act == CG_ACT_GELU ? CUBLASLT_EPILOGUE_GELU_BIAS
						       : CUBLASLT_EPILOGUE_BIAS)
			    : (g->act == CG_ACT_RELU   ? CUBLASLT_EPILOGUE_RELU
			       : g->act == CG_ACT_GELU ? CUBLASLT_EPILOGUE_GELU
						       : CUBLASLT_EPILOGUE_DEFAULT);
	/* the bias pointer is set per run (rt_gemm_run); the bias vector
	 * (length n = rows of cuBLASLt's D) has the output's dtype, the
	 * default, and is shared by all batches (bias batch stride 0) */
	if (set_desc(b, gm->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa, "transa", e) ||
	    set_desc(b, gm->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb, "transb", e) ||
	    set_desc(b, gm->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi, "epilogue", e))
		goto fail;

	/* cuBLASLt's A = our B: stored n x k row-major (trans_b), i.e. k x n
	 * column-major, used transposed; or k x n row-major = n x k
	 * column-major, used as is. Its B = our A (m x k row-major = k x m
	 * column-major). D = our out (m x n row-major = n x m column-major). */
	if ((g->trans_b ? layout(b, &gm->la, t, g->k, g->n, g->k, g->batch, g->stride_b, "B", e)
			: layout(b, &gm->la, t, g->n, g->k, g->n, g->batch, g->stride_b, "B", e)) ||
	    layout(b, &gm->lb, t, g->k, g->m, g->k, g->batch, g->stride_a, "A", e) ||
	    layout(b, &gm->lc, t, g->n, g->m, g->n, g->batch, g->stride_c, "out", e))
		goto fail;

	size_t es = ir_dtype_size(g->dtype);
	uint64_t ws = b->ws_size;
	uint32_t al_a = batch_align(g->batch, g->stride_b, es), al_b = batch_align(g->batch, g->stride_a, es),
		 al_c = batch_align(g->batch, g->stride_c, es);
	if (check(b, b->MatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", e)) {
		pref = NULL;
		goto fail;
	}
	if (set_pref(b, pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws, e) ||
	    set_pref(b, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof al_a, e) ||
	    set_pref(b, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof al_b, e) ||
	    set_pref(b, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof al_c, e) ||
	    set_pref(b, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof al_c, e))
		goto fail;
	/* an algorithm recorded in the plan is used when cuBLASLt accepts it
	 * for this problem; else (or when none was recorded) the heuristic */
	if (g->algo.valid && algo_from(b, gm, ct, t, &g->algo)) {
		b->MatmulPreferenceDestroy(pref);
		if (chosen)
			*chosen = g->algo;
		*out = gm;
		return SN_OK;
	}
	int found = 0;
	cublasStatus_t s = b->MatmulAlgoGetHeuristic(b->h, gm->desc, gm->la, gm->lb, gm->lc, gm->lc, pref, 1,
						     &gm->algo, &found);
	if (s == CUBLAS_STATUS_NOT_SUPPORTED || (s == CUBLAS_STATUS_SUCCESS && found == 0)) {
		sn_errf(e, SN_EINTERNAL, "cublasLtMatmulAlgoGetHeuristic: no algorithm for %s", what);
		goto fail;
	}
	if (check(b, s, "cublasLtMatmulAlgoGetHeuristic", e))
		goto fail;
	if (check(b, gm->algo.state, "cublasLtMatmulAlgoGetHeuristic (result)", e))
		goto fail;
	if (gm->algo.workspaceSize > b->ws_size) {
		sn_errf(e, SN_EINTERNAL, "cuBLASLt: the algorithm for %s wants %zu bytes of workspace", what,
			gm->algo.workspaceSize);
		goto fail;
	}
	b->MatmulPreferenceDestroy(pref);
	if (chosen)
		algo_read(b, &gm->algo.algo, chosen);
	*out = gm;
	return SN_OK;
fail:
	if (pref)
		b->MatmulPreferenceDestroy(pref);
	rt_gemm_free(gm);
	return e->code;
}

int rt_gemm_run(rt_blas *b, rt_gemm *gm, CUdeviceptr a, CUdeviceptr bm, CUdeviceptr bias, CUdeviceptr out,
		CUstream s, sn_err *e)
{
	return rt_gemm_run_c(b, gm, a, bm, bias, 0, out, s, e);
}

int rt_gemm_run_c(rt_blas *b, rt_gemm *gm, CUdeviceptr a, CUdeviceptr bm, CUdeviceptr bias, CUdeviceptr c,
		  CUdeviceptr out, CUstream s, sn_err *e)
{
	if (gm->empty)
		return SN_OK;
	const cg_mm *g = &gm->g;
	bool has_bias = g->bias != CG_NO_BUF, has_c = g->c != CG_NO_BUF;
	const struct {
		CUdeviceptr p;
		const char *name;
	} ops[] = {{a, "A"}, {bm, "B"}, {out, "out"}, {has_bias ? bias : RT_GEMM_ALIGN, "bias"},
		   {has_c ? c : RT_GEMM_ALIGN, "C"}};
	for (size_t i = 0; i < SN_COUNT(ops); i++)
		if (!ops[i].p || ops[i].p % RT_GEMM_ALIGN) {
			char what[200];
			cg_mm_describe(g, what, sizeof what);
			return sn_errf(e, SN_EINTERNAL, "%s: operand %s at 0x%llx is not %d-byte aligned", what,
				       ops[i].name, (unsigned long long)ops[i].p, RT_GEMM_ALIGN);
		}
	if (has_bias) {
		const void *p = (const void *)(uintptr_t)bias;
		if (set_desc(b, gm->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p, sizeof p, "bias pointer", e))
			return e->code;
	}
	const float alpha = 1.0f, beta = has_c ? 1.0f : 0.0f;
	void *d = (void *)(uintptr_t)out;
	const void *cp = has_c ? (const void *)(uintptr_t)c : d;
	/* cuBLASLt's A is our B and its B our A (see the top of the file);
	 * beta = 0 without C, so C (= D) is not read; C has D's layout */
	return check(b,
		     b->Matmul(b->h, gm->desc, &alpha, (const void *)(uintptr_t)bm, gm->la,
			       (const void *)(uintptr_t)a, gm->lb, &beta, cp, gm->lc, d, gm->lc, &gm->algo.algo,
			       (void *)(uintptr_t)b->ws, b->ws_size, (cudaStream_t)s),
		     "cublasLtMatmul", e);
}

void rt_gemm_free(rt_gemm *gm)
{
	if (!gm)
		return;
	rt_blas *b = gm->b;
	if (gm->la)
		b->MatrixLayoutDestroy(gm->la);
	if (gm->lb)
		b->MatrixLayoutDestroy(gm->lb);
	if (gm->lc)
		b->MatrixLayoutDestroy(gm->lc);
	if (gm->desc)
		b->MatmulDescDestroy(gm->desc);
	free(gm);
}

/* ---- candidates for the autotuner ---- */

int rt_gemm_candidates(rt_blas *b, const cg_mm *g, cg_blas_algo *out, int max, int *n, sn_err *e)
{
	*n = 0;
	cg_mm d = *g;
	d.algo.valid = 0;
	rt_gemm *gm = NULL;
	if (rt_gemm_prepare(b, &d, &gm, NULL, e))
		return e->code;
	if (gm->empty || max <= 0) {
		rt_gemm_free(gm);
		return SN_OK;
	}
	/* the same preferences as rt_gemm_prepare's, asking for up to max */
	size_t es = ir_dtype_size(g->dtype);
	uint64_t ws = b->ws_size;
	uint32_t al_a = batch_align(g->batch, g->stride_b, es), al_b = batch_align(g->batch, g->stride_a, es),
		 al_c = batch_align(g->batch, g->stride_c, es);
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t *res = calloc((size_t)max, sizeof *res);
	int found = 0;
	if (!res) {
		rt_gemm_free(gm);
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	}
	if (check(b, b->MatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", e))
		pref = NULL;
	else if (!set_pref(b, pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws, e) &&
		 !set_pref(b, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof al_a, e) &&
		 !set_pref(b, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof al_b, e) &&
		 !set_pref(b, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof al_c, e) &&
		 !set_pref(b, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof al_c, e))
		check(b, b->MatmulAlgoGetHeuristic(b->h, gm->desc, gm->la, gm->lb, gm->lc, gm->lc, pref, max, res, &found),
		      "cublasLtMatmulAlgoGetHeuristic", e);
	for (int i = 0; !e->code && i < found; i++)
		if (res[i].state == CUBLAS_STATUS_SUCCESS && res[i].workspaceSize <= b->ws_size)
			algo_read(b, &res[i].algo, &out[(*n)++]);
	if (pref)
		b->MatmulPreferenceDestroy(pref);
	free(res);
	rt_gemm_free(gm);
	return e->code;
}
