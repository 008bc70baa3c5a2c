/* test_tuning_redis.c: the remote tuning store against a real
 * redis-server (Debian's package) that this test starts on a free loopback
 * port: write-through, read-through into a second cache dir, a tampered
 * value rejected, Redis killed mid-run (the store goes on with the local
 * folder, quickly), Redis away at open, and fake servers that answer
 * garbage or nothing (short timeouts, fallback, nothing trusted). Skipped,
 * saying so, only when redis-server is not installed. */
#include "autotune/at.h"
#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int nwarn;
static void on_warn(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg;
	nwarn++;
}

static const char *redis_server(void)
{
	static const char *const paths[] = {"/usr/bin/redis-server", "/usr/local/bin/redis-server"};
	for (size_t i = 0; i < SN_COUNT(paths); i++)
		if (access(paths[i], X_OK) == 0)
			return paths[i];
	return NULL;
}

/* A listening loopback socket on a free port (*port). */
static int listen_free(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof a;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 8) ||
	    getsockname(fd, (struct sockaddr *)&a, &l)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static pid_t start_redis(const char *bin, int port)
{
	char p[16];
	snprintf(p, sizeof p, "%d", port);
	pid_t pid = fork();
	if (pid == 0) {
		freopen("/dev/null", "w", stdout);
		execl(bin, bin, "--port", p, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize",
		      "no", (char *)NULL);
		_exit(127);
	}
	/* ready when it answers PING */
	for (int i = 0; i < 100; i++) {
		at_redis *r;
		sn_err e = {0};
		if (at_redis_open("127.0.0.1", port, 200, &r, &e) == SN_OK) {
			at_redis_close(r);
			return pid;
		}
		usleep(50000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* A fake server: answers PING with PONG when pong, then `reply` to every
 * later command (NULL: never answers). */
static pid_t fake_server(int fd, bool pong, const char *reply)
{
	pid_t pid = fork();
	if (pid == 0) {
		for (;;) {
			int c = accept(fd, NULL, NULL);
			if (c < 0)
				_exit(0);
			char buf[4096];
			bool first = true;
			ssize_t n;
			while ((n = read(c, buf, sizeof buf)) > 0) {
				const char *ans = first && pong ? "+PONG\r\n" : reply;
				first = false;
				if (ans && write(c, ans, strlen(ans)) < 0)
					break;
			}
			close(c);
		}
	}
	return pid;
}

static at_record record(uint8_t tag, double ms)
{
	at_record r;
	memset(&r, 0, sizeof r);
	r.kind = AT_KERNEL;
	for (int i = 0; i < 16; i++)
		r.spec[i] = (uint8_t)(tag * 31 + i);
	r.dev = (at_device){"NVIDIA H100 80GB HBM3", 90, 13000, 13000, 130100};
	r.cfg = (cg_config){.block = 128, .vec = 8};
	r.ms = ms;
	r.default_ms = ms * 1.5;
	r.candidates = 9;
	snprintf(r.version, sizeof r.version, "0.1.0");
	return r;
}

static void remote_key(const at_record *r, char out[64])
{
	uint8_t k[16];
	at_key(r->spec, &r->dev, k);
	int n = snprintf(out, 64, "sinter:tuning:");
	for (int i = 0; i < 16; i++)
		n += snprintf(out + n, (size_t)(64 - n), "%02x", k[i]);
}

int main(void)
{
	const char *bin = redis_server();
	if (!bin) {
		printf("skipped: redis-server is not installed (Debian: apt install redis-server)\n");
		return 0;
	}
	at_redis *probe;
	sn_err pe = {0};
	if (at_redis_open("127.0.0.1", 1, 50, &probe, &pe) == SN_EENV && strstr(pe.msg, "libhiredis")) {
		fprintf(stderr, "FAIL: %s\n", pe.msg);
		return 1; /* the client library must be there: scripts/deps installs it */
	}
	char dir[] = "/tmp/sinter-test-redis-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char d1[256], d2[256], d3[256], url[64];
	snprintf(d1, sizeof d1, "%s/one", dir);
	snprintf(d2, sizeof d2, "%s/two", dir);
	snprintf(d3, sizeof d3, "%s/three", dir);
	int port;
	int lfd = listen_free(&port);
	close(lfd); /* free again: redis-server takes it */
	pid_t rp = start_redis(bin, port);
	CHECK(rp > 0);
	if (rp <= 0) {
		fprintf(stderr, "redis-server did not start on port %d\n", port);
		return 1;
	}
	snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);

	/* write-through: local file and Redis both hold it */
	at_store *s1, *s2;
	sn_err e = {0};
	CHECK(at_store_open(d1, url, on_warn, NULL, &s1, &e) == SN_OK);
	at_record r1 = record(1, 2.0), got;
	at_store_put(s1, &r1);
	CHECK(at_store_stats_of(s1)->writes == 1 && at_store_stats_of(s1)->remote_writes == 1);
	at_redis *raw;
	CHECK(at_redis_open("127.0.0.1", port, 200, &raw, &e) == SN_OK);
	char rk[64];
	remote_key(&r1, rk);
	char *val = NULL;
	size_t len = 0;
	CHECK(at_redis_get(raw, rk, &val, &len, &e) == SN_OK && val);
	at_record parsed;
	CHECK(val && at_record_parse(val, len, &parsed, &e) == SN_OK && parsed.ms == 2.0);
	free(val);

	/* read-through from a second, empty cache dir */
	CHECK(at_store_open(d2, url, on_warn, NULL, &s2, &e) == SN_OK);
	bool found;
	at_store_get(s2, r1.spec, &r1.dev, &got, &found);
	CHECK(found && got.ms == 2.0 && at_store_stats_of(s2)->remote_hits == 1);
	at_store *local2;
	CHECK(at_store_open(d2, NULL, NULL, NULL, &local2, &e) == SN_OK);
	at_store_get(local2, r1.spec, &r1.dev, &got, &found);
	CHECK(found); /* copied into the second dir */
	at_store_close(local2);

	/* the faster record wins in Redis too */
	at_record slow = r1;
	slow.ms = 5.0;
	at_store_put(s2, &slow);
	CHECK(at_redis_get(raw, rk, &val, &len, &e) == SN_OK && val && at_record_parse(val, len, &parsed, &e) == SN_OK &&
	      parsed.ms == 2.0);
	free(val);

	/* a tampered value in Redis is rejected and counted, not used */
	at_record r2 = record(2, 1.0);
	sn_buf b = {0};
	at_record_write(&r2, &b);
	char *vec = strstr(b.s, "\"vec\": 8");
	if (vec)
		vec[8] = '1'; /* vec 1: the checksum no longer matches */
	char rk2[64];
	remote_key(&r2, rk2);
	CHECK(at_redis_set(raw, rk2, b.s, b.len, &e) == SN_OK);
	sn_buf_free(&b);
	size_t rej = at_store_stats_of(s2)->rejected;
	at_store_get(s2, r2.spec, &r2.dev, &got, &found);
	CHECK(!found && at_store_stats_of(s2)->rejected == rej + 1);
	at_redis_close(raw);

	/* Redis killed mid-run: puts still land locally, gets miss fast */
	kill(rp, SIGKILL);
	waitpid(rp, NULL, 0);
	at_record r3 = record(3, 3.0), r4 = record(4, 4.0);
	double t0 = now();
	at_store_put(s1, &r3);
	at_store_get(s1, r4.spec, &r4.dev, &got, &found);
	at_store_get(s1, r3.spec, &r3.dev, &got, &found);
	CHECK(found && got.ms == 3.0); /* from the local folder */
	for (int i = 0; i < 5; i++)
		at_store_get(s1, r4.spec, &r4.dev, &got, &found);
	CHECK(now() - t0 < 2.0);
	CHECK(at_store_stats_of(s1)->remote_errors >= 1 && at_store_stats_of(s1)->remote_down);
	at_store_close(s1);
	at_store_close(s2);

	/* Redis away when the store opens: a warning, the local store */
	int w0 = nwarn;
	at_store *s3;
	CHECK(at_store_open(d3, url, on_warn, NULL, &s3, &e) == SN_OK && nwarn > w0);
	CHECK(at_store_stats_of(s3)->remote_down);
	at_store_put(s3, &r4);
	at_store_get(s3, r4.spec, &r4.dev, &got, &found);
	CHECK(found);
	at_store_close(s3);

	/* fake servers: garbage for PING; PONG then garbage; PONG then a
	 * string that is no record; PONG then silence (timeout) */
	struct {
		bool pong;
		const char *reply;
		const char *what;
	} fakes[] = {
		{false, "%%% not redis %%%\r\n", "garbage"},
		{true, "*garbage\r\n", "garbage after PONG"},
		{true, "$5\r\nhello\r\n", "a string that is no record"},
		{true, ":42\r\n", "an integer"},
		{true, NULL, "silence"},
	};
	for (size_t i = 0; i < SN_COUNT(fakes); i++) {
		int fport;
		int fd = listen_free(&fport);
		pid_t fp = fake_server(fd, fakes[i].pong, fakes[i].reply);
		close(fd);
		char furl[64];
		snprintf(furl, sizeof furl, "redis://127.0.0.1:%d", fport);
		at_store *fs;
		t0 = now();
		CHECK(at_store_open(d3, furl, on_warn, NULL, &fs, &e) == SN_OK);
		at_record r5 = record((uint8_t)(10 + i), 1.5);
		at_store_get(fs, r5.spec, &r5.dev, &got, &found);
		CHECK(!found);
		at_store_put(fs, &r5);
		at_store_get(fs, r5.spec, &r5.dev, &got, &found);
		CHECK(found && got.ms == 1.5); /* the local store still works */
		double dt = now() - t0;
		CHECK(dt < 3.0);
		const at_store_stats *st = at_store_stats_of(fs);
		CHECK(st->remote_down || st->remote_errors > 0 || st->rejected > 0);
		printf("fake server (%s): %.2f s, remote errors %zu, rejected %zu, remote %s\n", fakes[i].what, dt,
		       st->remote_errors, st->rejected, st->remote_down ? "given up" : "kept");
		at_store_close(fs);
		kill(fp, SIGKILL);
		waitpid(fp, NULL, 0);
	}
	/* a malformed URL is a usage error */
	at_store *bad;
	sn_err ue = {0};
	CHECK(at_store_open(d3, "http://127.0.0.1:80", NULL, NULL, &bad, &ue) == SN_EUSAGE);
	CHECK(at_store_open(d3, "redis://host:99999", NULL, NULL, &bad, &ue) == SN_EUSAGE);

	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	printf("tuning_redis: %d checks, %d failed\n", check_count, check_failures);
	return check_failures != 0;
}
