// SPDX-License-Identifier: GPL-2.0
/*
 * bench-collect: sample per-cgroup memory counters and global reclaim and
 * pressure counters at a fixed interval, as a long-format CSV.
 *
 * Output (schema 1), one value per row, flushed after every sample:
 *
 *   # bench-collect schema=1 interval_s=1 cgroup_root=... proc_root=...
 *   time_s,step,cgroup,source,key,value
 *   1.000,s3,workload.slice,memory.stat,pgscan,12345
 *
 * time_s   seconds since the collector started (monotonic clock)
 * step     the first line of --step-file at that sample, or "-"
 * cgroup   path below the cgroup root, or "-" for global sources
 * source   the file: memory.stat, memory.events, memory.events.local,
 *          memory.current, memory.peak, memory.low, memory.min, memory.high,
 *          memory.max, memory.swap.current, memory.pressure, vmstat,
 *          pressure.memory; "app" for an --app NAME=FILE counter file
 *          (NAME in the cgroup column); or "_status" for a file that could
 *          not be read
 * key      the counter ("pgscan", "some_total"); "value" for one-value files;
 *          for _status, the file that failed
 * value    the number as the kernel printed it ("max" for an unset limit);
 *          for _status: "missing" (ENOENT), "malformed:N" (N lines skipped),
 *          or "error:<errno name>"
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cgutil.h"
#include "common.h"

#define SCHEMA_VERSION	1
#define STEP_MAX	64
#define APPS_MAX	8

enum kind { KV, SINGLE, PSI };

struct source {
	const char *file;	/* below the cgroup, or below /proc */
	const char *name;	/* the source column */
	enum kind kind;
};

static const struct source cgroup_sources[] = {
	{ "memory.stat", "memory.stat", KV },
	{ "memory.events", "memory.events", KV },
	{ "memory.events.local", "memory.events.local", KV },
	{ "memory.current", "memory.current", SINGLE },
	{ "memory.peak", "memory.peak", SINGLE },
	{ "memory.low", "memory.low", SINGLE },
	{ "memory.min", "memory.min", SINGLE },
	{ "memory.high", "memory.high", SINGLE },
	{ "memory.max", "memory.max", SINGLE },
	{ "memory.swap.current", "memory.swap.current", SINGLE },
	{ "memory.pressure", "memory.pressure", PSI },
};

static const struct source global_sources[] = {
	{ "vmstat", "vmstat", KV },
	{ "pressure/memory", "pressure.memory", PSI },
};

/* A workload's --stats file, sampled as source "app", cgroup column NAME. */
struct app {
	const char *name;
	const char *path;
};

struct options {
	struct app apps[APPS_MAX];
	int napps;
	double interval;
	long count;
	const char *out;
	const char *step_file;
	const char *cgroup_root;
	const char *proc_root;
	bool quiet;
};

struct row_ctx {
	FILE *f;
	const char *time;
	const char *step;
	const char *cgroup;
	const char *source;
};

static char buf[64 * 1024];

static int write_row(const char *key, const char *value, void *arg)
{
	struct row_ctx *c = arg;

	fprintf(c->f, "%s,%s,%s,%s,%s,%s\n", c->time, c->step, c->cgroup,
		c->source, key, value);
	return 0;
}

static void write_status(struct row_ctx *c, const char *file, ssize_t err,
			 int malformed)
{
	char value[64];
	struct row_ctx s = *c;

	if (malformed)
		snprintf(value, sizeof(value), "malformed:%d", malformed);
	else if (err == -ENOENT)
		snprintf(value, sizeof(value), "missing");
	else
		snprintf(value, sizeof(value), "error:%s",
			 strerrorname_np((int)-err) ?: "unknown");
	s.source = "_status";
	write_row(file, value, &s);
}

/* Read one source and write its rows. */
static void sample_source(struct row_ctx *c, const struct options *o,
			  const struct source *src, bool global)
{
	const char *value;
	ssize_t n;
	int bad = 0;

	c->source = src->name;
	if (global)
		n = proc_read(o->proc_root, src->file, buf, sizeof(buf));
	else
		n = cg_read(o->cgroup_root, c->cgroup, src->file, buf, sizeof(buf));
	if (n < 0) {
		write_status(c, src->name, n, 0);
		return;
	}
	switch (src->kind) {
	case KV:
		bad = kv_foreach(buf, write_row, c);
		break;
	case PSI:
		bad = psi_foreach(buf, write_row, c);
		break;
	case SINGLE:
		value = single_value(buf);
		if (value)
			write_row("value", value, c);
		else
			bad = 1;
		break;
	}
	if (bad)
		write_status(c, src->name, 0, bad);
}

/* Read an app's "key value" stats file and write its rows. */
static void sample_app(struct row_ctx *c, const struct app *app)
{
	ssize_t n;
	int bad;

	c->cgroup = app->name;
	c->source = "app";
	n = file_read(app->path, buf, sizeof(buf));
	if (n < 0) {
		write_status(c, "app", n, 0);
		return;
	}
	bad = kv_foreach(buf, write_row, c);
	if (bad)
		write_status(c, "app", 0, bad);
}

/* The current step label: the step file's first line, made CSV-safe. */
static void read_step(const char *path, char *step)
{
	char line[STEP_MAX + 1];
	FILE *f;
	size_t i;

	strcpy(step, "-");
	if (!path)
		return;
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		for (i = 0; line[i]; i++) {
			char ch = line[i];

			if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			      (ch >= '0' && ch <= '9') || strchr("._=%+-:", ch)))
				line[i] = '_';
		}
		if (line[0])
			strcpy(step, line);
	}
	fclose(f);
}

static void sample(FILE *f, const struct options *o, char **cgroups,
		   int ncgroups, uint64_t start)
{
	char time[32], step[STEP_MAX + 1];
	struct row_ctx c = { .f = f };
	size_t i;
	int g;

	snprintf(time, sizeof(time), "%.3f",
		 (double)(now_ns() - start) / NSEC_PER_SEC);
	read_step(o->step_file, step);
	c.time = time;
	c.step = step;
	for (g = 0; g < ncgroups; g++) {
		c.cgroup = cgroups[g];
		for (i = 0; i < ARRAY_SIZE(cgroup_sources); i++)
			sample_source(&c, o, &cgroup_sources[i], false);
	}
	c.cgroup = "-";
	for (i = 0; i < ARRAY_SIZE(global_sources); i++)
		sample_source(&c, o, &global_sources[i], true);
	for (g = 0; g < o->napps; g++)
		sample_app(&c, &o->apps[g]);
	fflush(f);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options] CGROUP...\n"
		"Sample memory counters of each CGROUP (a path below the cgroup root)\n"
		"and the global reclaim and pressure counters, as CSV.\n\n"
		"  -i, --interval SEC     seconds between samples (default 1)\n"
		"  -n, --count N          take N samples, then exit (default: until\n"
		"                         SIGTERM or SIGINT)\n"
		"  -o, --out FILE         write to FILE (default: standard output)\n"
		"  -s, --step-file FILE   label samples with FILE's first line\n"
		"  -a, --app NAME=FILE    also sample FILE (\"key value\" lines, a workload's\n"
		"                         --stats) as source \"app\", cgroup column NAME\n"
		"      --cgroup-root DIR  cgroup2 mount (default %s)\n"
		"      --proc-root DIR    procfs (default %s)\n"
		"  -q, --quiet            no cost report on exit\n",
		prog_name, CGROUP_ROOT_DEFAULT, PROC_ROOT_DEFAULT);
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "out", required_argument, NULL, 'o' },
		{ "step-file", required_argument, NULL, 's' },
		{ "app", required_argument, NULL, 'a' },
		{ "cgroup-root", required_argument, NULL, 'C' },
		{ "proc-root", required_argument, NULL, 'P' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *eq, *bad;
	double d;
	int opt, i;

	while ((opt = getopt_long(argc, argv, "i:n:o:s:a:qh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			if (opt_seconds("--interval", optarg, &o->interval))
				return -EINVAL;
			break;
		case 'n':
			if (parse_double(optarg, &d) || d < 1 || d != (long)d) {
				err_msg(0, "--count: '%s' is not a positive whole number", optarg);
				return -EINVAL;
			}
			o->count = (long)d;
			break;
		case 'o':
			o->out = optarg;
			break;
		case 's':
			o->step_file = optarg;
			break;
		case 'a':
			eq = strchr(optarg, '=');
			bad = strpbrk(optarg, ",\n\"");
			if (!eq || eq == optarg || !eq[1] || (bad && bad < eq)) {
				err_msg(0, "--app: '%s' is not NAME=FILE (NAME without commas or quotes)",
					optarg);
				return -EINVAL;
			}
			if (o->napps == APPS_MAX) {
				err_msg(0, "--app: at most %d", APPS_MAX);
				return -EINVAL;
			}
			*eq = '\0';
			o->apps[o->napps].name = optarg;
			o->apps[o->napps++].path = eq + 1;
			break;
		case 'C':
			o->cgroup_root = optarg;
			break;
		case 'P':
			o->proc_root = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_OK);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind >= argc) {
		err_msg(0, "name at least one cgroup (e.g. workload.slice)");
		return -EINVAL;
	}
	for (i = optind; i < argc; i++) {
		if (strpbrk(argv[i], ",\n\"") || strstr(argv[i], "..")) {
			err_msg(0, "cgroup '%s': commas, quotes, newlines and '..' are not allowed",
				argv[i]);
			return -EINVAL;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = {
		.interval = 1,
		.cgroup_root = CGROUP_ROOT_DEFAULT,
		.proc_root = PROC_ROOT_DEFAULT,
	};
	struct rusage ru;
	uint64_t start, next;
	long taken = 0;
	double cpu_ms;
	FILE *f = stdout;

	prog_name = "bench-collect";
	if (parse_args(argc, argv, &o))
		return EXIT_USAGE;
	if (o.out) {
		f = fopen(o.out, "we");
		if (!f) {
			err_msg(errno, "cannot create '%s'", o.out);
			return EXIT_FAIL;
		}
	}
	if (install_stop_handlers()) {
		err_msg(errno, "cannot install signal handlers");
		return EXIT_FAIL;
	}
	fprintf(f, "# bench-collect schema=%d interval_s=%g cgroup_root=%s proc_root=%s\n",
		SCHEMA_VERSION, o.interval, o.cgroup_root, o.proc_root);
	fprintf(f, "time_s,step,cgroup,source,key,value\n");
	fflush(f);

	start = now_ns();
	next = start;
	while (!stop_requested && (!o.count || taken < o.count)) {
		uint64_t now = now_ns();

		if (now < next) {
			sleep_ns(next - now);
			continue;
		}
		sample(f, &o, argv + optind, argc - optind, start);
		taken++;
		next += (uint64_t)(o.interval * NSEC_PER_SEC);
	}
	if (ferror(f) || (f != stdout && fclose(f))) {
		err_msg(errno, "cannot write '%s'", o.out ? o.out : "standard output");
		return EXIT_FAIL;
	}
	if (!o.quiet && taken) {
		getrusage(RUSAGE_SELF, &ru);
		cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
			 (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
		fprintf(stderr, "%s: %ld samples, %.3f ms CPU per sample\n",
			prog_name, taken, cpu_ms / taken);
	}
	return EXIT_OK;
}
