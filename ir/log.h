/* log.h: the library's one logging function, its Chrome trace recorder and
 * its progress line. Process-wide and thread-safe; everything is off
 * unless asked for (SINTER_LOG, sinter_log_set_level, sinter_trace_start,
 * sinter_progress_enable). Prefix: sn_. */
#ifndef SINTER_LOG_H
#define SINTER_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum { SN_LOG_QUIET = 0, SN_LOG_WARN = 1, SN_LOG_INFO = 2, SN_LOG_DEBUG = 3 };

/* The level in force: set by sn_log_set_level, else $SINTER_LOG
 * (quiet|warn|info|debug), else warn. */
int sn_log_level(void);
void sn_log_set_level(int level);
/* Where messages go: fn(ctx, level, message without newline); NULL: stderr,
 * as "sinter: LEVEL: message". */
void sn_log_set_handler(void (*fn)(void *ctx, int level, const char *msg), void *ctx);
/* Logs at level when the level in force allows it. */
void sn_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define sn_log_on(level) (sn_log_level() >= (level))

/* Seconds on the monotonic clock. */
double sn_now(void);

/* ---- Chrome trace (the JSON Object Format Perfetto and chrome://tracing read) ---- */
void sn_trace_start(void);
bool sn_trace_on(void);
/* A complete event on the calling thread's host track, from t0 to t1
 * (sn_now seconds). args: a JSON object's members ("\"k\": 1") or NULL. */
void sn_trace_span(const char *cat, const char *name, double t0, double t1, const char *args);
/* A complete event on the device track `track` (e.g. "GPU 0: steps timed
 * one by one"), at host time t0 for dur seconds. */
void sn_trace_device(const char *track, const char *name, double t0, double dur, const char *args);
/* Writes the events recorded since sn_trace_start to path and stops
 * recording. SN_OK, or the error's code (SN_EINTERNAL out of memory,
 * ir/file.h's codes for the write) with why set. */
int sn_trace_write(const char *path, char *why, size_t cap);

/* A stage: logs "NAME: X ms" at info and records a host span, from t0 to now. */
void sn_stage(const char *name, double t0, const char *detail_fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- progress line ---- */
/* Off until enabled (the CLI enables it when stderr is a terminal). */
void sn_progress_enable(bool on);
/* Work `what` (done of total) started at t0: after two seconds, and at
 * most ten times a second, redraws one line on stderr. */
void sn_progress(const char *what, size_t done, size_t total, double t0);
/* The seconds before a line is drawn (2 by default; tests set 0). */
void sn_progress_set_after(double s);
/* Clears the line if one was drawn. */
void sn_progress_end(void);

#endif
