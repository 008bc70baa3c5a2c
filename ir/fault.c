/* fault.c: the counters behind fault.h. Compiled in every build (it is
 * small); the hooks only reach it when SINTER_FAULT is on. */
#include "ir/fault.h"

#include <stdatomic.h>
#include <stdio.h>

/* The real functions here (the build may force-include fault.h). */
#undef malloc
#undef calloc
#undef realloc
#undef strdup
#undef strndup

static atomic_long alloc_n, file_n, cuda_n, nvrtc_n;
static bool trace;
static long alloc_at = -1, file_at = -1, cuda_at = -1, nvrtc_at = -1; /* -1: not read yet; 0: never */
static atomic_flag once = ATOMIC_FLAG_INIT;
static atomic_bool ready;

static void report(void)
{
	fprintf(stderr, "sinter-fault: %ld allocations, %ld file operations, %ld CUDA calls, %ld NVRTC calls\n",
		(long)atomic_load(&alloc_n), (long)atomic_load(&file_n), (long)atomic_load(&cuda_n),
		(long)atomic_load(&nvrtc_n));
}

static void init(void)
{
	if (atomic_load(&ready))
		return;
	if (!atomic_flag_test_and_set(&once)) {
		const char *a = getenv("SINTER_FAULT_ALLOC"), *f = getenv("SINTER_FAULT_FILE"),
			   *c = getenv("SINTER_FAULT_COUNT");
		const char *g = getenv("SINTER_FAULT_CUDA"), *v = getenv("SINTER_FAULT_NVRTC");
		alloc_at = a ? atol(a) : 0;
		file_at = f ? atol(f) : 0;
		cuda_at = g ? atol(g) : 0;
		nvrtc_at = v ? atol(v) : 0;
		if (c && *c == '1')
			atexit(report);
		const char *t = getenv("SINTER_FAULT_TRACE");
		trace = t && *t == '1';
		atomic_store(&ready, true);
	}
	while (!atomic_load(&ready))
		;
}

/* Under ASan, where the injected failure lands (SINTER_FAULT_TRACE=1). */
void __sanitizer_print_stack_trace(void) __attribute__((weak));

static bool hit(bool yes)
{
	if (yes && trace && __sanitizer_print_stack_trace)
		__sanitizer_print_stack_trace();
	return yes;
}

bool sn_fault_alloc_hit(void)
{
	init();
	long k = atomic_fetch_add(&alloc_n, 1) + 1;
	return hit(alloc_at > 0 && k == alloc_at);
}

bool sn_fault_file_hit(void)
{
	init();
	long k = atomic_fetch_add(&file_n, 1) + 1;
	return hit(file_at > 0 && k == file_at);
}

bool sn_fault_cuda_hit(void)
{
	init();
	long k = atomic_fetch_add(&cuda_n, 1) + 1;
	return hit(cuda_at > 0 && k == cuda_at);
}

bool sn_fault_nvrtc_hit(void)
{
	init();
	long k = atomic_fetch_add(&nvrtc_n, 1) + 1;
	return hit(nvrtc_at > 0 && k == nvrtc_at);
}

void *sn_fault_malloc(size_t n) { return sn_fault_alloc_hit() ? NULL : malloc(n); }
void *sn_fault_calloc(size_t n, size_t k) { return sn_fault_alloc_hit() ? NULL : calloc(n, k); }
void *sn_fault_realloc(void *p, size_t n) { return sn_fault_alloc_hit() ? NULL : realloc(p, n); }
char *sn_fault_strdup(const char *s) { return sn_fault_alloc_hit() ? NULL : strdup(s); }
char *sn_fault_strndup(const char *s, size_t n) { return sn_fault_alloc_hit() ? NULL : strndup(s, n); }
