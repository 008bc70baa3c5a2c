/* at_redis.c: the Redis client for the remote tuning store (at.h), through
 * Debian's libhiredis loaded with dlopen: a sinter built with hiredis's
 * headers still runs where the library is absent, and only a remote store
 * then fails (SN_EENV, naming the library). The library loaded is the one
 * whose soname matches the headers built against (struct layouts differ
 * between hiredis versions). Every call has a short timeout; any reply
 * other than the expected type is an error, never trusted. */
#include "autotune/at.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if __has_include(<hiredis/hiredis.h>)
#include <hiredis/hiredis.h>

#include <dlfcn.h>
#include <sys/time.h>

#define STR_(x) #x
#define STR(x) STR_(x)

struct at_redis {
	void *lib;
	redisContext *c;
	redisContext *(*Connect)(const char *, int, const struct timeval);
	int (*SetTimeout)(redisContext *, const struct timeval);
	void *(*Command)(redisContext *, const char *, ...);
	void (*FreeReply)(void *);
	void (*Free)(redisContext *);
};

void at_redis_close(at_redis *r)
{
	if (!r)
		return;
	if (r->c)
		r->Free(r->c);
	/* libhiredis stays loaded: cheap, and nothing of it may be in use */
	free(r);
}

int at_redis_open(const char *host, int port, int timeout_ms, at_redis **out, sn_err *e)
{
	*out = NULL;
	at_redis *r = calloc(1, sizeof *r);
	if (!r)
		return sn_errf(e, SN_EINTERNAL, "out of memory");
	const char *name = "libhiredis.so." STR(HIREDIS_SONAME);
	r->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!r->lib) {
		free(r);
		return sn_errf(e, SN_EENV, "no Redis client: cannot load %s (Debian: apt install libhiredis%s)", name,
			       STR(HIREDIS_SONAME));
	}
	*(void **)&r->Connect = dlsym(r->lib, "redisConnectWithTimeout");
	*(void **)&r->SetTimeout = dlsym(r->lib, "redisSetTimeout");
	*(void **)&r->Command = dlsym(r->lib, "redisCommand");
	*(void **)&r->FreeReply = dlsym(r->lib, "freeReplyObject");
	*(void **)&r->Free = dlsym(r->lib, "redisFree");
	if (!r->Connect || !r->SetTimeout || !r->Command || !r->FreeReply || !r->Free) {
		free(r);
		return sn_errf(e, SN_EENV, "no Redis client: %s lacks an entry point", name);
	}
	struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
	r->c = r->Connect(host, port, tv);
	if (!r->c || r->c->err) {
		sn_errf(e, SN_EENV, "cannot connect to %s:%d (%s)", host, port,
			r->c ? r->c->errstr : "out of memory");
		at_redis_close(r);
		return SN_EENV;
	}
	if (r->SetTimeout(r->c, tv) != REDIS_OK) {
		at_redis_close(r);
		return sn_errf(e, SN_EENV, "cannot set a timeout on the connection to %s:%d", host, port);
	}
	/* a server that does not answer PING with PONG is not Redis */
	redisReply *rep = r->Command(r->c, "PING");
	bool ok = rep && rep->type == REDIS_REPLY_STATUS && rep->len == 4 && !memcmp(rep->str, "PONG", 4);
	if (rep)
		r->FreeReply(rep);
	if (!ok) {
		sn_errf(e, SN_EENV, "%s:%d does not answer PING like Redis (%s)", host, port,
			r->c->err ? r->c->errstr : "unexpected reply");
		at_redis_close(r);
		return SN_EENV;
	}
	*out = r;
	return SN_OK;
}

int at_redis_get(at_redis *r, const char *key, char **val, size_t *len, sn_err *e)
{
	*val = NULL;
	*len = 0;
	if (!r || r->c->err)
		return sn_errf(e, SN_EENV, "not connected");
	redisReply *rep = r->Command(r->c, "GET %s", key);
	if (!rep)
		return sn_errf(e, SN_EENV, "%s", r->c->err ? r->c->errstr : "no reply");
	int rc = SN_OK;
	if (rep->type == REDIS_REPLY_NIL) {
		/* absent */
	} else if (rep->type == REDIS_REPLY_STRING && rep->len <= AT_RECORD_MAX) {
		*val = malloc(rep->len + 1);
		if (!*val) {
			rc = sn_errf(e, SN_EINTERNAL, "out of memory");
		} else {
			memcpy(*val, rep->str, rep->len);
			(*val)[rep->len] = 0;
			*len = rep->len;
		}
	} else {
		rc = sn_errf(e, SN_EENV, "GET answered a reply of type %d (%zu bytes)", rep->type, (size_t)rep->len);
	}
	r->FreeReply(rep);
	return rc;
}

int at_redis_set(at_redis *r, const char *key, const char *val, size_t len, sn_err *e)
{
	if (!r || r->c->err)
		return sn_errf(e, SN_EENV, "not connected");
	redisReply *rep = r->Command(r->c, "SET %s %b", key, val, len);
	if (!rep)
		return sn_errf(e, SN_EENV, "%s", r->c->err ? r->c->errstr : "no reply");
	bool ok = rep->type == REDIS_REPLY_STATUS && rep->len == 2 && !memcmp(rep->str, "OK", 2);
	int type = rep->type;
	r->FreeReply(rep);
	return ok ? SN_OK : sn_errf(e, SN_EENV, "SET answered a reply of type %d, not OK", type);
}

#else /* built without hiredis's headers */

struct at_redis {
	int unused;
};

int at_redis_open(const char *host, int port, int timeout_ms, at_redis **out, sn_err *e)
{
	(void)host;
	(void)port;
	(void)timeout_ms;
	*out = NULL;
	return sn_errf(e, SN_EENV, "no Redis client: this sinter was built without libhiredis's headers "
				  "(Debian: apt install libhiredis-dev, then rebuild)");
}

void at_redis_close(at_redis *r)
{
	(void)r;
}

int at_redis_get(at_redis *r, const char *key, char **val, size_t *len, sn_err *e)
{
	(void)r;
	(void)key;
	*val = NULL;
	*len = 0;
	return sn_errf(e, SN_EENV, "no Redis client");
}

int at_redis_set(at_redis *r, const char *key, const char *val, size_t len, sn_err *e)
{
	(void)r;
	(void)key;
	(void)val;
	(void)len;
	return sn_errf(e, SN_EENV, "no Redis client");
}

#endif
