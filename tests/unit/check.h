/* check.h: the unit tests' assertions. A failed check prints where and
 * what, and the test exits 1 at the end (all failures are reported). */
#ifndef SINTER_CHECK_H
#define SINTER_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_failures, check_count;

#define CHECK(cond)                                                               \
	do {                                                                      \
		check_count++;                                                    \
		if (!(cond)) {                                                    \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
			check_failures++;                                         \
		}                                                                 \
	} while (0)

#define CHECK_NEAR(a, b, tol)                                                     \
	do {                                                                      \
		double ca_ = (a), cb_ = (b);                                      \
		check_count++;                                                    \
		if (!(fabs(ca_ - cb_) <= (tol))) {                                \
			fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.9g, %s = %.9g (tol %g)\n", \
				__FILE__, __LINE__, #a, ca_, #b, cb_, (double)(tol)); \
			check_failures++;                                         \
		}                                                                 \
	} while (0)

#define CHECK_STR(a, b)                                                           \
	do {                                                                      \
		const char *ca_ = (a), *cb_ = (b);                                \
		check_count++;                                                    \
		if (!ca_ || !cb_ || strcmp(ca_, cb_) != 0) {                      \
			fprintf(stderr, "%s:%d: CHECK_STR failed:\n  %s = \"%s\"\n  %s = \"%s\"\n", \
				__FILE__, __LINE__, #a, ca_ ? ca_ : "(null)", #b, cb_ ? cb_ : "(null)"); \
			check_failures++;                                         \
		}                                                                 \
	} while (0)

static inline int check_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
	return check_failures ? 1 : 0;
}

#endif
