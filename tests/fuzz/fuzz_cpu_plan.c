/* fuzz_cpu_plan.c: libFuzzer target for the cpu plan-file reader (the
 * plan cache's cpu entries and the cpu AOT packages, codegen/cl_io.c:
 * one parser, packages carrying the objects' bytes and the host they
 * were compiled for). On a successful parse the weight image and the
 * objects are read through (ASan sees any pointer outside the input), the
 * host text goes through the package loader's check against this host
 * (runtime/cpu_exec.c, rt_cpu_host_check),
 * every step's nodes and buffers are visited as the runtime would and the
 * plan is listed. The fuzz build skips the checksums
 * (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION), so mutations reach the
 * tables behind them. Built only with the cpu device. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef SINTER_HAVE_CPU
#include "codegen/cl.h"
#include "runtime/cpu_exec.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
#ifdef SINTER_HAVE_CPU
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);
	cl_plan *p = NULL;
	cg_plan_info info;
	sn_err e = {0};
	if (cl_plan_parse(buf, size, &p, &info, &e) == SN_OK) {
		volatile unsigned sum = 0;
		for (uint64_t k = 0; k < p->weight_bytes; k++)
			sum += ((const uint8_t *)p->weights)[k];
		for (uint32_t i = 0; i < p->nsteps; i++) {
			const cl_step *s = &p->steps[i];
			const ir_node *n = &p->g->nodes[s->node];
			sum += (unsigned)n->op + (unsigned)p->fp.groups[s->group].root;
			for (uint32_t k = 0; k < s->nargs; k++)
				sum += (unsigned)p->vals[s->args[k]].where;
			if (s->fn >= 0)
				sum += (unsigned)p->fns[s->fn][0];
		}
		for (int k = 0; k < CL_NMOD; k++)
			for (uint64_t i = 0; i < p->obj_size[k]; i++)
				sum += ((const uint8_t *)p->obj[k])[i];
		sn_err he = {0};
		if (p->host)
			(void)rt_cpu_host_check(p->host, &he);
		sn_buf b = {0};
		cl_plan_list(p, &b);
		sn_buf_free(&b);
		cl_plan_free(p);
	}
	free(buf);
#else
	(void)data, (void)size;
#endif
	return 0;
}
