// SPDX-License-Identifier: GPL-2.0
/* Unit tests for workloads/cgutil.c, on files this test writes itself. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "../../workloads/cgutil.h"

struct seen {
	char keys[16][32];
	char values[16][32];
	int n;
};

static int collect(const char *key, const char *value, void *arg)
{
	struct seen *s = arg;

	if (s->n < 16) {
		snprintf(s->keys[s->n], sizeof(s->keys[0]), "%s", key);
		snprintf(s->values[s->n], sizeof(s->values[0]), "%s", value);
	}
	s->n++;
	return 0;
}

static int stop_at_second(const char *key, const char *value, void *arg)
{
	(void)key;
	(void)value;
	return ++*(int *)arg == 2 ? 42 : 0;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
}

int main(void)
{
	char buf[256], dir[] = "/tmp/test_cgutil.XXXXXX", path[512];
	struct seen s = { 0 };
	unsigned long long total;
	int calls = 0;

	snprintf(buf, sizeof(buf), "anon 123\nfile 456\nbroken\nextra 1 2\nneg -5\npgscan 7\n");
	is_int(kv_foreach(buf, collect, &s), 3, "kv_foreach skips and counts 3 malformed lines");
	is_int(s.n, 3, "and reports the 3 good ones");
	is_str(s.keys[0], "anon", "first key");
	is_str(s.values[1], "456", "second value");
	is_str(s.keys[2], "pgscan", "a key after malformed lines");

	snprintf(buf, sizeof(buf), "a 1\nb 2\nc 3\n");
	is_int(kv_foreach(buf, stop_at_second, &calls), 42, "a callback's non-zero result stops the walk");

	memset(&s, 0, sizeof(s));
	snprintf(buf, sizeof(buf),
		 "some avg10=0.12 avg60=1.00 avg300=0.00 total=123456\n"
		 "full avg10=0.00 avg60=0.00 avg300=0.00 total=789\n");
	is_int(psi_foreach(buf, collect, &s), 0, "psi_foreach parses a pressure file");
	is_int(s.n, 8, "into 8 values");
	is_str(s.keys[0], "some_avg10", "some_avg10 key");
	is_str(s.values[0], "0.12", "some_avg10 value");
	is_str(s.keys[7], "full_total", "full_total key");
	is_str(s.values[7], "789", "full_total value");
	memset(&s, 0, sizeof(s));
	snprintf(buf, sizeof(buf), "some avg10=x total=5\nhalf avg10=1\n");
	is_int(psi_foreach(buf, collect, &s), 2, "malformed pressure fields and lines are counted");
	is_int(s.n, 1, "and the good field is still reported");

	snprintf(buf, sizeof(buf), "12345\n");
	is_str(single_value(buf), "12345", "single_value of a number");
	snprintf(buf, sizeof(buf), "max\n");
	is_str(single_value(buf), "max", "single_value of max");
	snprintf(buf, sizeof(buf), "12 34\n");
	is_str(single_value(buf), NULL, "single_value refuses two words");
	snprintf(buf, sizeof(buf), "\n");
	is_str(single_value(buf), NULL, "single_value refuses an empty file");

	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp failed\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/a.slice", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/a.slice/memory.current", dir);
	write_file(path, "4096\n");
	is_int(cg_read(dir, "a.slice", "memory.current", buf, sizeof(buf)), 5, "cg_read reads a cgroup file");
	is_str(buf, "4096\n", "with its content");
	is_int(cg_read(dir, "b.slice", "memory.current", buf, sizeof(buf)), -ENOENT,
	       "cg_read of a missing cgroup is -ENOENT");
	is_int(cg_read(dir, "a.slice", "memory.current", buf, 4), -EFBIG,
	       "cg_read of a file larger than the buffer is -EFBIG");
	is_int(cg_write(dir, "a.slice", "memory.current", "8192"), 0,
	       "cg_write writes a cgroup file");
	cg_read(dir, "a.slice", "memory.current", buf, sizeof(buf));
	is_str(buf, "8192", "with the text given, in one write");
	is_int(cg_write(dir, "b.slice", "memory.reclaim", "1"), -ENOENT,
	       "cg_write to a missing cgroup is -ENOENT");
	is_int(cg_write(dir, "", "a.slice", "1"), -EISDIR,
	       "cg_write to a directory is -EISDIR");
	snprintf(path, sizeof(path), "%s/meminfo", dir);
	write_file(path, "MemTotal:        2014512 kB\nMemFree:  1 kB\n");
	ok(proc_meminfo_total(dir, &total) == 0 && total == 2014512ULL * 1024,
	   "proc_meminfo_total reads MemTotal in bytes");
	write_file(path, "MemFree:  1 kB\n");
	is_int(proc_meminfo_total(dir, &total), -EINVAL, "proc_meminfo_total without MemTotal fails");

	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	if (system(path))
		printf("# could not remove %s\n", dir);
	return done_testing();
}
