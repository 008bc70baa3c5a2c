/* log.c: logging, the trace recorder and the progress line (log.h). */
#include "ir/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ir/base.h"
#include "ir/file.h"

static atomic_int level = -1; /* -1: not read from the environment yet */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* handler, trace, progress */
static void (*handler)(void *, int, const char *);
static void *handler_ctx;

double sn_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int sn_log_level(void)
{
	int l = atomic_load_explicit(&level, memory_order_relaxed);
	if (l >= 0)
		return l;
	const char *s = getenv("SINTER_LOG");
	l = SN_LOG_WARN;
	if (s && (!strcmp(s, "quiet") || !strcmp(s, "off") || !strcmp(s, "0")))
		l = SN_LOG_QUIET;
	else if (s && (!strcmp(s, "info") || !strcmp(s, "2")))
		l = SN_LOG_INFO;
	else if (s && (!strcmp(s, "debug") || !strcmp(s, "3")))
		l = SN_LOG_DEBUG;
	int want = -1;
	atomic_compare_exchange_strong(&level, &want, l); /* a concurrent set wins */
	return atomic_load(&level);
}

void sn_log_set_level(int l)
{
	atomic_store(&level, l < 0 ? 0 : l > SN_LOG_DEBUG ? SN_LOG_DEBUG : l);
}

void sn_log_set_handler(void (*fn)(void *, int, const char *), void *ctx)
{
	pthread_mutex_lock(&lock);
	handler = fn;
	handler_ctx = ctx;
	pthread_mutex_unlock(&lock);
}

static bool progress_drawn;

void sn_log(int l, const char *fmt, ...)
{
	if (sn_log_level() < l || l <= SN_LOG_QUIET)
		return;
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	static const char *const names[] = {"", "warning", "info", "debug"};
	pthread_mutex_lock(&lock);
	if (handler) {
		handler(handler_ctx, l, msg);
	} else {
		if (progress_drawn) {
			fputs("\r\033[K", stderr);
			progress_drawn = false;
		}
		fprintf(stderr, "sinter: %s: %s\n", names[l], msg);
	}
	pthread_mutex_unlock(&lock);
}

/* ---- trace ---- */

typedef struct ev {
	char *name, *cat, *args, *track; /* track NULL: a host thread */
	double t0, dur;
	unsigned tid;
} ev;

static atomic_bool tracing;
static double trace_t0;
static ev *evs;
static size_t nevs, capevs;
static atomic_uint next_tid;
static _Thread_local unsigned my_tid;

void sn_trace_start(void)
{
	pthread_mutex_lock(&lock);
	trace_t0 = sn_now();
	atomic_store(&tracing, true);
	pthread_mutex_unlock(&lock);
}

bool sn_trace_on(void)
{
	return atomic_load_explicit(&tracing, memory_order_relaxed);
}

static void add(const char *track, const char *cat, const char *name, double t0, double dur, const char *args)
{
	if (!my_tid)
		my_tid = atomic_fetch_add(&next_tid, 1) + 1;
	pthread_mutex_lock(&lock);
	if (atomic_load(&tracing) && (nevs < capevs || (capevs < (1u << 24)))) {
		if (nevs == capevs) {
			size_t cap = capevs ? 2 * capevs : 256;
			ev *n = realloc(evs, cap * sizeof *n);
			if (!n)
				goto out;
			evs = n;
			capevs = cap;
		}
		ev *e = &evs[nevs];
		e->name = strdup(name ? name : "?");
		e->cat = strdup(cat ? cat : "");
		e->args = args ? strdup(args) : NULL;
		e->track = track ? strdup(track) : NULL;
		if (e->name && e->cat && (!args || e->args) && (!track || e->track)) {
			e->t0 = t0;
			e->dur = dur;
			e->tid = my_tid;
			nevs++;
		} else {
			free(e->name);
			free(e->cat);
			free(e->args);
			free(e->track);
		}
	}
out:
	pthread_mutex_unlock(&lock);
}

void sn_trace_span(const char *cat, const char *name, double t0, double t1, const char *args)
{
	if (sn_trace_on())
		add(NULL, cat, name, t0, t1 - t0, args);
}

void sn_trace_device(const char *track, const char *name, double t0, double dur, const char *args)
{
	if (sn_trace_on())
		add(track, "device", name, t0, dur, args);
}

static void json_str(sn_buf *b, const char *s)
{
	sn_buf_puts(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			sn_buf_printf(b, "\\%c", c);
		else if (c < 0x20)
			sn_buf_printf(b, "\\u%04x", c);
		else
			sn_buf_printf(b, "%c", c);
	}
	sn_buf_puts(b, "\"");
}

int sn_trace_write(const char *path, char *why, size_t cap)
{
	pthread_mutex_lock(&lock);
	atomic_store(&tracing, false);
	sn_buf b = {0};
	sn_buf_printf(&b, "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"producer\": \"sinter %s\"},\n"
			  "\"traceEvents\": [\n", SINTER_VERSION);
	/* pid 1: the host, one track per thread; pid 2: the device tracks,
	 * numbered in order of appearance */
	sn_buf_puts(&b, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"args\": {\"name\": \"host\"}},\n");
	sn_buf_puts(&b, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 2, \"args\": {\"name\": \"device\"}}");
	const char *tracks[64];
	size_t ntracks = 0;
	for (size_t i = 0; i < nevs; i++) {
		const ev *e = &evs[i];
		unsigned tid = e->tid;
		if (e->track) {
			size_t t = 0;
			while (t < ntracks && strcmp(tracks[t], e->track))
				t++;
			if (t == ntracks && ntracks < 64) {
				tracks[ntracks++] = e->track;
				sn_buf_printf(&b, ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 2, \"tid\": %zu, "
						  "\"args\": {\"name\": ", t + 1);
				json_str(&b, e->track);
				sn_buf_puts(&b, "}}");
			}
			tid = (unsigned)(t < 64 ? t + 1 : 64);
		}
		sn_buf_puts(&b, ",\n{\"ph\": \"X\", \"name\": ");
		json_str(&b, e->name);
		sn_buf_puts(&b, ", \"cat\": ");
		json_str(&b, e->cat);
		sn_buf_printf(&b, ", \"pid\": %d, \"tid\": %u, \"ts\": %.3f, \"dur\": %.3f", e->track ? 2 : 1, tid,
			      (e->t0 - trace_t0) * 1e6, e->dur * 1e6);
		if (e->args)
			sn_buf_printf(&b, ", \"args\": {%s}", e->args);
		sn_buf_puts(&b, "}");
	}
	sn_buf_puts(&b, "\n]}\n");
	for (size_t i = 0; i < nevs; i++) {
		free(evs[i].name);
		free(evs[i].cat);
		free(evs[i].args);
		free(evs[i].track);
	}
	free(evs);
	evs = NULL;
	nevs = capevs = 0;
	pthread_mutex_unlock(&lock);
	int rc = SN_OK;
	if (b.oom) {
		snprintf(why, cap, "out of memory");
		rc = SN_EINTERNAL;
	} else {
		sn_err e = {0};
		if ((rc = sn_write_file(path, b.s, b.len, 0666, &e)) != SN_OK)
			snprintf(why, cap, "%s", e.msg);
	}
	sn_buf_free(&b);
	return rc;
}

void sn_stage(const char *name, double t0, const char *fmt, ...)
{
	double t1 = sn_now();
	char detail[512] = "";
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(detail, sizeof detail, fmt, ap);
		va_end(ap);
	}
	sn_log(SN_LOG_INFO, "%s: %.1f ms%s%s", name, 1e3 * (t1 - t0), detail[0] ? ", " : "", detail);
	sn_trace_span("compile", name, t0, t1, NULL);
}

/* ---- progress ---- */

static atomic_bool progress_on;
static double progress_last;
static _Atomic double progress_after = 2.0;

void sn_progress_enable(bool on)
{
	atomic_store(&progress_on, on);
}

void sn_progress_set_after(double s)
{
	atomic_store(&progress_after, s);
}

void sn_progress(const char *what, size_t done, size_t total, double t0)
{
	if (!atomic_load_explicit(&progress_on, memory_order_relaxed))
		return;
	double t = sn_now();
	if (t - t0 < atomic_load_explicit(&progress_after, memory_order_relaxed))
		return;
	pthread_mutex_lock(&lock);
	if (t - progress_last >= 0.1 || done == total) {
		progress_last = t;
		double eta = done ? (t - t0) * (double)(total - done) / (double)done : 0;
		char left[48] = ""; /* none before the first unit is done */
		if (done)
			snprintf(left, sizeof left, ", about %.0f s left", eta);
		fprintf(stderr, "\r\033[Ksinter: %s: %zu/%zu (%.0f%%), %.1f s%s", what, done, total,
			total ? 100.0 * (double)done / (double)total : 100.0, t - t0, left);
		fflush(stderr);
		progress_drawn = true;
	}
	pthread_mutex_unlock(&lock);
}

void sn_progress_end(void)
{
	pthread_mutex_lock(&lock);
	if (progress_drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		progress_drawn = false;
	}
	pthread_mutex_unlock(&lock);
}
