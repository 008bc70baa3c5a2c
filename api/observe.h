/* observe.h: what the API's files share for traces (api/observe.c). */
#ifndef SINTER_API_OBSERVE_H
#define SINTER_API_OBSERVE_H

#include "sinter.h"

/* When a trace is recording: each profiled step as a device event named
 * "op kernel", back to back from host time t0 on the track of gpu
 * (their device times, each step launched alone and timed with CUDA
 * events), with bytes, flops and achieved rates as arguments. */
void api_trace_profile(const sinter_profile_entry *p, size_t n, double t0, const char *gpu);
/* The same on the track named track (the cpu device's profile). */
void api_trace_steps(const sinter_profile_entry *p, size_t n, double t0, const char *track);

/* "x f32[2,3], y i64[4]" (or "none"): the tensors given, for messages
 * naming what a file holds when an input is missing. */
void api_list_tensors(const sinter_tensor *ts, size_t n, char *out, size_t cap);

#endif
