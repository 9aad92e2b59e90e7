// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "cgutil.h"

const char *prog_name = "bench";
volatile sig_atomic_t stop_requested;

void err_msg(int errnum, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (errnum)
		fprintf(stderr, ": %s", strerror(errnum));
	fputc('\n', stderr);
}

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

int install_stop_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) || sigaction(SIGINT, &sa, NULL))
		return -errno;
	return 0;
}

int parse_double(const char *s, double *v)
{
	char *end;
	double d;

	if (!s || !*s || strspn(s, "0123456789.") != strlen(s))
		return -EINVAL;
	errno = 0;
	d = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(d) || d < 0)
		return -EINVAL;
	*v = d;
	return 0;
}

int parse_size(const char *s, unsigned long long ram_bytes,
	       unsigned long long *bytes)
{
	char num[64];
	size_t len;
	double d, mult = 1;
	char last;

	if (!s || !*s)
		return -EINVAL;
	len = strlen(s);
	if (len >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, len + 1);
	last = num[len - 1];
	switch (last) {
	case 'K':
		mult = 1024.0;
		break;
	case 'M':
		mult = 1024.0 * 1024;
		break;
	case 'G':
		mult = 1024.0 * 1024 * 1024;
		break;
	case 'T':
		mult = 1024.0 * 1024 * 1024 * 1024;
		break;
	case '%':
		if (!ram_bytes)
			return -EINVAL;
		mult = ram_bytes / 100.0;
		break;
	default:
		last = 0;
	}
	if (last)
		num[len - 1] = '\0';
	if (parse_double(num, &d))
		return -EINVAL;
	if (last == '%' && d > 100)
		return -EINVAL;
	d *= mult;
	if (d >= 18446744073709551615.0)
		return -EINVAL;
	*bytes = (unsigned long long)d;
	return 0;
}

int parse_size_ram(const char *s, unsigned long long *bytes)
{
	unsigned long long ram = 0;

	if (strchr(s, '%') && proc_meminfo_total(NULL, &ram))
		return -EINVAL;
	return parse_size(s, ram, bytes);
}

int opt_size(const char *opt, const char *s, unsigned long long *v)
{
	if (!parse_size_ram(s, v))
		return 0;
	err_msg(0, "%s: '%s' is not a size (e.g. 512M, 1.5G, 40%%)", opt, s);
	return -EINVAL;
}

int opt_number(const char *opt, const char *s, const char *unit, double *v)
{
	if (!parse_double(s, v))
		return 0;
	err_msg(0, "%s: '%s' is not a number of %s", opt, s, unit);
	return -EINVAL;
}

int opt_seconds(const char *opt, const char *s, double *v)
{
	return opt_number(opt, s, "seconds", v);
}

int opt_fraction(const char *opt, const char *s, double *v)
{
	if (!parse_double(s, v) && *v <= 1)
		return 0;
	err_msg(0, "%s: '%s' is not a fraction between 0 and 1", opt, s);
	return -EINVAL;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

void sleep_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = ns / NSEC_PER_SEC,
		.tv_nsec = ns % NSEC_PER_SEC,
	};

	/* A signal ends the sleep early: the caller checks stop_requested. */
	if (!stop_requested)
		nanosleep(&ts, NULL);
}

void rate_init(struct rate_limit *r, double per_sec)
{
	r->per_sec = per_sec;
	r->start_ns = now_ns();
	r->done = 0;
}

void rate_wait(struct rate_limit *r, uint64_t n)
{
	uint64_t due, now;

	r->done += n;
	if (r->per_sec <= 0)
		return;
	due = r->start_ns + (uint64_t)(r->done / r->per_sec * NSEC_PER_SEC);
	now = now_ns();
	if (due > now)
		sleep_ns(due - now);
}

void ticker_init(struct ticker *t, double interval_s)
{
	t->interval_ns = (uint64_t)(interval_s * NSEC_PER_SEC);
	t->next_ns = now_ns() + t->interval_ns;
}

bool ticker_due(struct ticker *t)
{
	uint64_t now = now_ns();

	if (now < t->next_ns)
		return false;
	t->next_ns += t->interval_ns;
	if (t->next_ns < now)
		t->next_ns = now + t->interval_ns;
	return true;
}

void fault_counts(unsigned long long *majflt, unsigned long long *minflt)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*majflt = ru.ru_majflt;
	*minflt = ru.ru_minflt;
}

int write_atomic(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;
	int err;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fputs(text, f);
	if (fclose(f) || rename(tmp, path)) {
		err = errno;
		unlink(tmp);
		return -err;
	}
	return 0;
}

int stats_write(const char *path, const char *const *keys,
		const unsigned long long *vals, size_t n)
{
	char *text = NULL;
	size_t len = 0, i;
	FILE *f;
	int err;

	f = open_memstream(&text, &len);
	if (!f) {
		err = -errno;
		goto out;
	}
	for (i = 0; i < n; i++)
		fprintf(f, "%s %llu\n", keys[i], vals[i]);
	if (fclose(f)) {
		err = -errno;
		goto out;
	}
	err = write_atomic(path, text);
out:
	if (err)
		err_msg(-err, "cannot write the stats file '%s'", path);
	free(text);
	return err;
}
