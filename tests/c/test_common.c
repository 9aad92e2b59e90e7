// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for workloads/common.c: sizes, numbers, rate limiting, the
 * atomic file writes.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "../../workloads/common.h"

#define K 1024ULL
#define M (1024 * K)
#define G (1024 * M)

static void size_ok(const char *s, unsigned long long ram,
		    unsigned long long want)
{
	unsigned long long got = 0;
	int ret = parse_size(s, ram, &got);

	ok(ret == 0 && got == want, "parse_size(\"%s\") = %llu", s, want);
	if (ret || got != want)
		printf("# returned %d, %llu\n", ret, got);
}

static void size_bad(const char *s, unsigned long long ram)
{
	unsigned long long got = 12345;

	is_int(parse_size(s, ram, &got), -EINVAL, "parse_size(\"%s\") is refused", s);
	is_int(got, 12345, "and leaves the result alone");
}

static char *slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static void files(void)
{
	static const char *const keys[] = { "pages_touched", "majflt" };
	unsigned long long vals[] = { 123, 4 };
	char dir[] = "/tmp/test_common.XXXXXX", path[4200], tmp[4300], bad[4200];
	char *longname;

	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/stats", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	is_int(write_atomic(path, "one\n"), 0, "write_atomic writes a new file");
	is_str(slurp(path), "one\n", "with the text");
	is_int(write_atomic(path, "two\n"), 0, "and replaces it");
	is_str(slurp(path), "two\n", "with the new text, not appended");
	ok(access(tmp, F_OK) && errno == ENOENT, "no .tmp file is left");
	snprintf(bad, sizeof(bad), "%s/no-such-dir/stats", dir);
	is_int(write_atomic(bad, "x"), -ENOENT, "a missing directory is -ENOENT");
	longname = calloc(1, 4100);
	memset(longname, 'a', 4095);
	is_int(write_atomic(longname, "x"), -ENAMETOOLONG, "a name with no room for .tmp is -ENAMETOOLONG");
	free(longname);
	/* A directory in the way: rename fails, and the .tmp goes again. */
	snprintf(bad, sizeof(bad), "%s/adir", dir);
	mkdir(bad, 0700);
	is_int(write_atomic(bad, "x"), -EISDIR, "renaming over a directory fails with -EISDIR");
	snprintf(tmp, sizeof(tmp), "%s.tmp", bad);
	ok(access(tmp, F_OK) && errno == ENOENT, "and its .tmp file is removed");
	rmdir(bad);
	is_int(stats_write(path, keys, vals, 2), 0, "stats_write writes key value lines");
	is_str(slurp(path), "pages_touched 123\nmajflt 4\n", "in the order given");
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	struct rate_limit r;
	uint64_t t0;
	double d;

	size_ok("4096", 0, 4096);
	size_ok("0", 0, 0);
	size_ok("512K", 0, 512 * K);
	size_ok("512M", 0, 512 * M);
	size_ok("1.5G", 0, 3 * G / 2);
	size_ok("2T", 0, 2 * 1024 * G);
	size_ok("40%", 2 * G, (unsigned long long)(2 * G * 0.4));
	size_ok("100%", 8 * G, 8 * G);
	size_ok("0.5%", 1000, 5);
	size_bad("12Q", 0);
	size_bad("", 0);
	size_bad("M", 0);
	size_bad("-1G", 0);
	size_bad("+1G", 0);
	size_bad("1.5.5G", 0);
	size_bad("1G ", 0);
	size_bad("0x10", 0);
	size_bad("40%", 0);
	size_bad("101%", 8 * G);
	size_bad("nan", 0);
	size_bad("inf", 0);
	size_bad("99999999999999999999T", 0);
	size_bad("1gg", 0);

	ok(parse_double("0.25", &d) == 0 && d == 0.25, "parse_double(\"0.25\")");
	is_int(parse_double("-1", &d), -EINVAL, "parse_double refuses negatives");
	is_int(parse_double("1s", &d), -EINVAL, "parse_double refuses trailing junk");
	is_int(parse_double(NULL, &d), -EINVAL, "parse_double refuses NULL");

	/* 200 operations at 1000/s take about 0.2 s. */
	t0 = now_ns();
	rate_init(&r, 1000);
	for (int i = 0; i < 20; i++)
		rate_wait(&r, 10);
	d = (double)(now_ns() - t0) / NSEC_PER_SEC;
	ok(d >= 0.19 && d < 0.5, "rate_wait holds 200 operations at 1000/s to ~0.2 s (%.3f s)", d);
	t0 = now_ns();
	rate_init(&r, 0);
	rate_wait(&r, 1000000);
	ok(now_ns() - t0 < NSEC_PER_SEC / 100, "rate 0 means no limit");
	files();

	return done_testing();
}
