/* SPDX-License-Identifier: GPL-2.0 */
/* A minimal TAP producer for the C unit tests. */
#ifndef BENCH_TAP_H
#define BENCH_TAP_H

#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

/*
 * Why a check failed: on stderr, as Test::More does, so that prove shows it
 * without -v. stdout is flushed first to keep the two in order.
 */
#define tap_diag(...) do {						\
	fflush(stdout);							\
	fprintf(stderr, __VA_ARGS__);					\
} while (0)

/* COND is evaluated once: it may have side effects. */
#define ok(cond, ...) do {						\
	int _pass = !!(cond);						\
	tap_n++;							\
	if (!_pass)							\
		tap_failed++;						\
	printf("%sok %d - ", _pass ? "" : "not ", tap_n);		\
	printf(__VA_ARGS__);						\
	printf("\n");							\
} while (0)

#define is_int(got, want, ...) do {					\
	long long _g = (got), _w = (want);				\
	ok(_g == _w, __VA_ARGS__);					\
	if (_g != _w)							\
		tap_diag("# got %lld, want %lld\n", _g, _w);		\
} while (0)

#define is_str(got, want, ...) do {					\
	const char *_g = (got), *_w = (want);				\
	int _same = _g && _w ? !strcmp(_g, _w) : _g == _w;		\
	ok(_same, __VA_ARGS__);						\
	if (!_same)							\
		tap_diag("# got '%s', want '%s'\n", _g ? _g : "(null)", \
			 _w ? _w : "(null)");				\
} while (0)

static inline int done_testing(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
