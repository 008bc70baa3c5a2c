/* layout.c: prints the size and field offsets of the sinter.h structs that
 * python/sinter/_lib.py mirrors with ctypes, as "struct.field offset" lines
 * (test_numpy.py compares them). */
#include <sinter.h>

#include <stddef.h>
#include <stdio.h>

#define F(s, f) printf("%s.%s %zu\n", #s, #f, offsetof(s, f))

int main(void)
{
	F(sinter_tensor, name); F(sinter_tensor, dtype); F(sinter_tensor, rank); F(sinter_tensor, shape);
	F(sinter_tensor, data); F(sinter_tensor, nbytes);
	printf("sinter_tensor._size %zu\n", sizeof(sinter_tensor));
	printf("sinter_load_options._size %zu\n", sizeof(sinter_load_options));
	F(sinter_error, status); F(sinter_error, message);
	F(sinter_load_options, size); F(sinter_load_options, shapes); F(sinter_load_options, nshapes);
	F(sinter_load_options, states); F(sinter_load_options, nstates);
	F(sinter_shape_binding, name); F(sinter_shape_binding, value);
	F(sinter_state_binding, output); F(sinter_state_binding, input);
	F(sinter_compile_options, size); F(sinter_compile_options, device); F(sinter_compile_options, mode);
	F(sinter_compile_options, precision); F(sinter_compile_options, passes);
	F(sinter_compile_options, target_sm); F(sinter_compile_options, dump_dir); F(sinter_compile_options, cache_dir);
	F(sinter_compile_options, no_plan_cache); F(sinter_compile_options, poison); F(sinter_compile_options, no_fusion);
	F(sinter_compile_options, max_plans); F(sinter_compile_options, warn); F(sinter_compile_options, warn_ctx);
	F(sinter_compile_options, tune_budget_s); F(sinter_compile_options, tune_kernel_s);
	F(sinter_compile_options, cache_remote); F(sinter_compile_options, tune_progress);
	F(sinter_compile_options, threads);
	printf("sinter_compile_options._size %zu\n", sizeof(sinter_compile_options));
	F(sinter_compile_stats, size); F(sinter_compile_stats, passes_s); F(sinter_compile_stats, plan_s); F(sinter_compile_stats, kernels);
	F(sinter_compile_stats, weight_bytes); F(sinter_compile_stats, context_s); F(sinter_compile_stats, capture_s);
	F(sinter_compile_stats, plan_hit); F(sinter_compile_stats, tune_kernels); F(sinter_compile_stats, tune_s);
	F(sinter_compile_stats, ref_steps);
	printf("sinter_compile_stats._size %zu\n", sizeof(sinter_compile_stats));
	return 0;
}
