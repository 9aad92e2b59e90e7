/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the workloads and the collector: size parsing, monotonic
 * time, rate limiting, clean stop on SIGTERM/SIGINT, error messages.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit codes, as in kselftest. */
#define EXIT_OK		0
#define EXIT_FAIL	1
#define EXIT_USAGE	2
#define EXIT_SKIP	4

#define NSEC_PER_SEC	1000000000ULL

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

extern const char *prog_name;
extern volatile sig_atomic_t stop_requested;

/* "prog: message" on stderr; with errnum != 0, ": strerror(errnum)" too. */
void err_msg(int errnum, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* SIGTERM and SIGINT set stop_requested instead of killing the process. */
int install_stop_handlers(void);

/*
 * Parse a size: bytes ("4096"), with a binary suffix ("512K", "512M",
 * "1.5G", "2T"), or a percentage of ram_bytes ("40%"). Returns 0 or -EINVAL.
 */
int parse_size(const char *s, unsigned long long ram_bytes,
	       unsigned long long *bytes);
/* parse_size() with the percentage taken of this machine's MemTotal. */
int parse_size_ram(const char *s, unsigned long long *bytes);
/* A non-negative decimal number ("0.5", "10"). Returns 0 or -EINVAL. */
int parse_double(const char *s, double *v);

/*
 * Option values: on a bad value these print "OPT: 'VALUE' is not ..." and
 * return -EINVAL.
 */
int opt_size(const char *opt, const char *s, unsigned long long *v);
int opt_seconds(const char *opt, const char *s, double *v);
int opt_fraction(const char *opt, const char *s, double *v);
/* A non-negative number of UNIT ("pages per second"). */
int opt_number(const char *opt, const char *s, const char *unit, double *v);

uint64_t now_ns(void);
/* Sleep for ns nanoseconds, or until a stop is requested. */
void sleep_ns(uint64_t ns);

/* Keep an operation count at or below per_sec per second (0: no limit). */
struct rate_limit {
	double per_sec;
	uint64_t start_ns;
	uint64_t done;
};
void rate_init(struct rate_limit *r, double per_sec);
/* Account n more operations, sleeping first if they would exceed the rate. */
void rate_wait(struct rate_limit *r, uint64_t n);

/* True once every interval_ns; the first time one interval after init. */
struct ticker {
	uint64_t next_ns;
	uint64_t interval_ns;
};
void ticker_init(struct ticker *t, double interval_s);
bool ticker_due(struct ticker *t);

/*
 * Replace path's contents with text atomically: readers see the old file or
 * the new one, never a part (path.tmp is written, then renamed over it; it
 * is removed again on failure). Returns 0 or -errno; says nothing.
 */
int write_atomic(const char *path, const char *text);

/*
 * Rewrite path with "key value" lines (the format of memory.stat, which the
 * collector's --app samples), atomically (write_atomic()). Returns 0,
 * or -errno after saying which file could not be written.
 */
int stats_write(const char *path, const char *const *keys,
		const unsigned long long *vals, size_t n);

/* Interval of the --stats files the workloads write, and its option. */
#define STATS_INTERVAL_S	0.5
#define OPT_STATS		1000

/* Major and minor page faults of this process so far. */
void fault_counts(unsigned long long *majflt, unsigned long long *minflt);

#endif
