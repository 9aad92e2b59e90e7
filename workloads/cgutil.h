/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one module that reads cgroupfs and procfs. Every path is taken
 * relative to a root that defaults to the real one (/sys/fs/cgroup, /proc)
 * and that tests point at fixture trees.
 */
#ifndef BENCH_CGUTIL_H
#define BENCH_CGUTIL_H

#include <sys/types.h>

#define CGROUP_ROOT_DEFAULT	"/sys/fs/cgroup"
#define PROC_ROOT_DEFAULT	"/proc"

/*
 * Read the whole of root/cgroup/file (cgroup may be "" for the root) into
 * buf, NUL-terminated. Returns its length, or -errno (-EFBIG if it does not
 * fit, -ENAMETOOLONG if the path does not).
 */
ssize_t cg_read(const char *root, const char *cgroup, const char *file,
		char *buf, size_t size);
/*
 * Write text to root/cgroup/file in one write(2), as cgroupfs wants a value
 * per write. Returns 0 or -errno (memory.reclaim: -EAGAIN when the kernel
 * could not reclaim the amount, -EINTR when a signal came first; neither is
 * retried here).
 */
int cg_write(const char *root, const char *cgroup, const char *file,
	     const char *text);
/* The same for proc_root/file; proc_root NULL means /proc. */
ssize_t proc_read(const char *proc_root, const char *file,
		  char *buf, size_t size);
/* The same for any path (a workload's --stats file). */
ssize_t file_read(const char *path, char *buf, size_t size);

/*
 * Called for every key and value; returning non-zero stops the walk and is
 * passed back.
 */
typedef int (*kv_fn)(const char *key, const char *value, void *arg);

/*
 * Walk "key value" lines (memory.stat, memory.events, /proc/vmstat),
 * changing buf. Lines that are not a key and a number are skipped and
 * counted. Returns the number of skipped lines, or fn's non-zero result.
 */
int kv_foreach(char *buf, kv_fn fn, void *arg);

/*
 * Walk a pressure file ("some avg10=0.12 avg60=0 avg300=0 total=123"),
 * calling fn with keys such as "some_avg10" and "full_total". Returns the
 * number of malformed fields, or fn's non-zero result.
 */
int psi_foreach(char *buf, kv_fn fn, void *arg);

/* A single-value file's content ("12345", "max"), or NULL if malformed. */
const char *single_value(char *buf);

/* True if s is a number the collector can write ("123", "0.45"). */
int is_number(const char *s);

/* MemTotal from proc_root/meminfo, in bytes. Returns 0 or -errno. */
int proc_meminfo_total(const char *proc_root, unsigned long long *bytes);

#endif
