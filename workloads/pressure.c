// SPDX-License-Identifier: GPL-2.0
/*
 * pressure: the competing "system software". Re-reads a file over and over
 * (page cache churn; a sparse file costs no disk I/O) and/or holds
 * anonymous memory and keeps touching it, optionally rate-limited.
 *
 * Streaming a file much larger than memory once per pass mostly recycles its
 * own use-once pages; re-reading a file that fits in memory beside the
 * workload makes both working sets compete: that is the pressure under which
 * protection shows (docs/scenarios.md).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "region.h"

struct pressure_opts {
	unsigned long long stream, anon;
	const char *file;
	const char *dir;
	double rate_mb;
	double duration;
	double interval;
	const char *stats;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench-load pressure [--stream SIZE] [--anon SIZE] [options]\n"
		"      --stream SIZE      re-read a file of SIZE, pass after pass\n"
		"      --anon SIZE        hold SIZE of anonymous memory and keep touching it\n"
		"  -f, --file PATH        the file to re-read (default: a sparse temporary\n"
		"                         file in --dir, removed at exit)\n"
		"  -d, --dir DIR          directory for the temporary file (default /var/tmp)\n"
		"  -r, --rate MB          at most MB megabytes (MiB) per second in all\n"
		"  -t, --duration SEC     stop after SEC seconds (default: at SIGTERM/SIGINT)\n"
		"  -i, --interval SEC     progress line every SEC seconds (default 5, 0: none)\n"
		"      --stats FILE       rewrite FILE every %gs with bytes, passes, majflt\n"
		"SIZE: bytes, 512M, 1.5G, or 40%% of RAM. At least one of --stream, --anon.\n",
		STATS_INTERVAL_S);
}

static int parse(int argc, char **argv, struct pressure_opts *o)
{
	static const struct option longopts[] = {
		{ "stream", required_argument, NULL, 'S' },
		{ "anon", required_argument, NULL, 'A' },
		{ "file", required_argument, NULL, 'f' },
		{ "dir", required_argument, NULL, 'd' },
		{ "rate", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 't' },
		{ "interval", required_argument, NULL, 'i' },
		{ "stats", required_argument, NULL, OPT_STATS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "f:d:r:t:i:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'S':
			if (opt_size("--stream", optarg, &o->stream))
				return -1;
			break;
		case 'A':
			if (opt_size("--anon", optarg, &o->anon))
				return -1;
			break;
		case 'f':
			o->file = optarg;
			break;
		case 'd':
			o->dir = optarg;
			break;
		case OPT_STATS:
			o->stats = optarg;
			break;
		case 'r':
			if (opt_number("--rate", optarg, "MB per second", &o->rate_mb))
				return -1;
			break;
		case 't':
			if (opt_seconds("--duration", optarg, &o->duration))
				return -1;
			break;
		case 'i':
			if (opt_seconds("--interval", optarg, &o->interval))
				return -1;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_OK);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		err_msg(0, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (!o->stream && !o->anon) {
		err_msg(0, "say --stream SIZE, --anon SIZE, or both");
		usage(stderr);
		return -1;
	}
	if (o->file && !o->stream) {
		err_msg(0, "--file needs --stream");
		return -1;
	}
	return 0;
}

/* The --stats file: counters since the start. */
static int write_stats(const char *path, unsigned long long bytes,
		       unsigned long long passes, unsigned long long majflt0)
{
	static const char *const keys[] = { "bytes", "passes", "majflt" };
	unsigned long long vals[3], majflt, minflt;

	fault_counts(&majflt, &minflt);
	vals[0] = bytes;
	vals[1] = passes;
	vals[2] = majflt - majflt0;
	return stats_write(path, keys, vals, ARRAY_SIZE(keys));
}

int pressure_main(int argc, char **argv)
{
	struct pressure_opts o = { .dir = "/var/tmp", .interval = 5 };
	unsigned long long majflt0, minflt0, majflt, minflt, passes = 0;
	unsigned long long stream_pages = 0, anon_pages = 0, last_bytes = 0;
	struct rate_limit rate;
	struct ticker tick, stats_tick;
	struct region r;
	uint64_t start, end = 0, last;
	int ret = EXIT_OK;
	size_t next_file = 0, next_anon = 0;
	double secs;

	if (parse(argc, argv, &o))
		return EXIT_USAGE;
	if (region_init(&r, o.anon, o.stream, o.file, o.dir)) {
		region_free(&r);
		return EXIT_FAIL;
	}
	fault_counts(&majflt0, &minflt0);
	start = last = now_ns();
	if (o.duration > 0)
		end = start + (uint64_t)(o.duration * NSEC_PER_SEC);
	/* The rate is counted in pages. */
	rate_init(&rate, o.rate_mb * 1024 * 1024 / r.page_size);
	ticker_init(&tick, o.interval);
	ticker_init(&stats_tick, STATS_INTERVAL_S);
	while (!stop_requested) {
		/* Alternate 1 MiB of each, so both kinds of pressure are steady. */
		for (size_t i = 0; i < (1 << 20) / r.page_size; i++) {
			if (r.file_pages) {
				region_touch(&r, r.anon_pages + next_file);
				stream_pages++;
				if (++next_file == r.file_pages) {
					next_file = 0;
					passes++;
				}
			}
			if (r.anon_pages) {
				region_touch(&r, next_anon);
				anon_pages++;
				if (++next_anon == r.anon_pages)
					next_anon = 0;
			}
		}
		rate_wait(&rate, (1 << 20) / r.page_size * (!!r.file_pages + !!r.anon_pages));
		if (end && now_ns() >= end)
			break;
		if (o.stats && ticker_due(&stats_tick) &&
		    write_stats(o.stats, (stream_pages + anon_pages) * r.page_size,
				passes, majflt0)) {
			ret = EXIT_FAIL;
			break;
		}
		if (o.interval > 0 && ticker_due(&tick)) {
			uint64_t now = now_ns();
			unsigned long long bytes = (stream_pages + anon_pages) * r.page_size;

			secs = (double)(now - last) / NSEC_PER_SEC;
			fprintf(stderr, "pressure: t=%.1fs %.1f MB/s, %llu passes of the file\n",
				(double)(now - start) / NSEC_PER_SEC,
				(bytes - last_bytes) / secs / (1024 * 1024), passes);
			last = now;
			last_bytes = bytes;
		}
	}
	secs = (double)(now_ns() - start) / NSEC_PER_SEC;
	fault_counts(&majflt, &minflt);
	printf("pressure: seconds=%.2f stream_bytes=%llu stream_passes=%llu anon_bytes_touched=%llu majflt=%llu minflt=%llu\n",
	       secs, stream_pages * r.page_size, passes, anon_pages * r.page_size,
	       majflt - majflt0, minflt - minflt0);
	if (o.stats && ret == EXIT_OK &&
	    write_stats(o.stats, (stream_pages + anon_pages) * r.page_size, passes, majflt0))
		ret = EXIT_FAIL;
	region_free(&r);
	return ret;
}
