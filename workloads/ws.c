// SPDX-License-Identifier: GPL-2.0
/*
 * ws: hold a working set (anonymous, file page cache, or both) and keep
 * touching it in a chosen pattern, optionally at a limited rate. Reports
 * pages touched per second and page faults, so reclaim's cost to the
 * workload shows, not only the kernel's scan counters.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "region.h"

enum pattern { SEQ, RANDOM, HOTCOLD };

struct ws_opts {
	unsigned long long size;
	const char *backing;
	double anon_share;
	const char *file;
	const char *dir;
	enum pattern pattern;
	double hot, hot_share;
	double rate;
	double duration;
	double interval;
	const char *stats;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench-load ws --size SIZE [options]\n"
		"  -s, --size SIZE        working set: bytes, 512M, 1.5G, or 40%% of RAM\n"
		"  -b, --backing KIND     anon, file or mix (default anon)\n"
		"      --anon-share F     with mix: the anonymous share, 0..1 (default 0.5)\n"
		"  -f, --file PATH        file for file backing (default: a sparse\n"
		"                         temporary file in --dir, removed at exit)\n"
		"  -d, --dir DIR          directory for the temporary file (default /var/tmp)\n"
		"  -p, --pattern P        seq, random or hotcold (default seq)\n"
		"      --hot F            hotcold: the hot part of the set (default 0.2)\n"
		"      --hot-share F      hotcold: the share of touches it gets (default 0.8)\n"
		"  -r, --rate N           at most N page touches per second (default: no limit)\n"
		"  -t, --duration SEC     stop after SEC seconds (default: at SIGTERM/SIGINT)\n"
		"  -i, --interval SEC     progress line on stderr every SEC seconds (default 5, 0: none)\n"
		"      --stats FILE       rewrite FILE every %gs with pages_touched, majflt, minflt\n",
		STATS_INTERVAL_S);
}

static int parse(int argc, char **argv, struct ws_opts *o)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "backing", required_argument, NULL, 'b' },
		{ "anon-share", required_argument, NULL, 'A' },
		{ "file", required_argument, NULL, 'f' },
		{ "dir", required_argument, NULL, 'd' },
		{ "pattern", required_argument, NULL, 'p' },
		{ "hot", required_argument, NULL, 'H' },
		{ "hot-share", required_argument, NULL, 'S' },
		{ "rate", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 't' },
		{ "interval", required_argument, NULL, 'i' },
		{ "stats", required_argument, NULL, OPT_STATS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "s:b:f:d:p:r:t:i:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			if (opt_size("--size", optarg, &o->size))
				return -1;
			break;
		case 'b':
			if (strcmp(optarg, "anon") && strcmp(optarg, "file") && strcmp(optarg, "mix")) {
				err_msg(0, "--backing: '%s' is not anon, file or mix", optarg);
				return -1;
			}
			o->backing = optarg;
			break;
		case 'A':
			if (opt_fraction("--anon-share", optarg, &o->anon_share))
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
		case 'p':
			if (!strcmp(optarg, "seq")) {
				o->pattern = SEQ;
			} else if (!strcmp(optarg, "random")) {
				o->pattern = RANDOM;
			} else if (!strcmp(optarg, "hotcold")) {
				o->pattern = HOTCOLD;
			} else {
				err_msg(0, "--pattern: '%s' is not seq, random or hotcold", optarg);
				return -1;
			}
			break;
		case 'H':
			if (opt_fraction("--hot", optarg, &o->hot))
				return -1;
			break;
		case 'S':
			if (opt_fraction("--hot-share", optarg, &o->hot_share))
				return -1;
			break;
		case 'r':
			if (opt_number("--rate", optarg, "pages per second", &o->rate))
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
	if (!o->size) {
		err_msg(0, "--size is required");
		usage(stderr);
		return -1;
	}
	if (o->file && !strcmp(o->backing, "anon")) {
		err_msg(0, "--file needs --backing file or mix");
		return -1;
	}
	return 0;
}

static uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static size_t next_page(const struct ws_opts *o, size_t pages, size_t *seq,
			uint64_t *rng)
{
	size_t hot_pages;

	switch (o->pattern) {
	case SEQ:
		if (*seq >= pages)
			*seq = 0;
		return (*seq)++;
	case RANDOM:
		return xorshift64(rng) % pages;
	case HOTCOLD:
		hot_pages = (size_t)(pages * o->hot);
		if (!hot_pages)
			hot_pages = 1;
		if (hot_pages >= pages ||
		    (double)(xorshift64(rng) % 1000000) < o->hot_share * 1000000)
			return xorshift64(rng) % hot_pages;
		return hot_pages + xorshift64(rng) % (pages - hot_pages);
	}
	return 0;
}

/* The --stats file: counters since the start. */
static int write_stats(const char *path, unsigned long long touched,
		       unsigned long long majflt0, unsigned long long minflt0)
{
	static const char *const keys[] = { "pages_touched", "majflt", "minflt" };
	unsigned long long vals[3], majflt, minflt;

	fault_counts(&majflt, &minflt);
	vals[0] = touched;
	vals[1] = majflt - majflt0;
	vals[2] = minflt - minflt0;
	return stats_write(path, keys, vals, ARRAY_SIZE(keys));
}

int ws_main(int argc, char **argv)
{
	struct ws_opts o = {
		.backing = "anon", .anon_share = 0.5, .dir = "/var/tmp",
		.pattern = SEQ, .hot = 0.2, .hot_share = 0.8, .interval = 5,
	};
	unsigned long long anon = 0, file = 0, majflt0, minflt0, majflt, minflt;
	unsigned long long touched = 0, last_touched = 0, last_maj;
	struct rate_limit rate;
	struct ticker tick, stats_tick;
	struct region r;
	uint64_t start, end = 0, rng = 0x9e3779b97f4a7c15ULL, last;
	int ret = EXIT_OK;
	size_t pages, seq = 0;
	double secs;
	int err;

	if (parse(argc, argv, &o))
		return EXIT_USAGE;
	if (!strcmp(o.backing, "anon"))
		anon = o.size;
	else if (!strcmp(o.backing, "file"))
		file = o.size;
	else {
		anon = (unsigned long long)(o.size * o.anon_share);
		file = o.size - anon;
	}
	err = region_init(&r, anon, file, o.file, o.dir);
	if (err) {
		region_free(&r);
		return EXIT_FAIL;
	}
	pages = region_pages(&r);
	if (!pages) {
		err_msg(0, "--size %llu is less than a page", o.size);
		region_free(&r);
		return EXIT_USAGE;
	}

	fault_counts(&majflt0, &minflt0);
	last_maj = majflt0;
	start = last = now_ns();
	if (o.duration > 0)
		end = start + (uint64_t)(o.duration * NSEC_PER_SEC);
	rate_init(&rate, o.rate);
	ticker_init(&tick, o.interval);
	ticker_init(&stats_tick, STATS_INTERVAL_S);
	while (!stop_requested) {
		/* Check the clock once per batch of pages, not per page. */
		for (int i = 0; i < 256; i++)
			region_touch(&r, next_page(&o, pages, &seq, &rng));
		touched += 256;
		rate_wait(&rate, 256);
		if (end && now_ns() >= end)
			break;
		if (o.stats && ticker_due(&stats_tick) &&
		    write_stats(o.stats, touched, majflt0, minflt0)) {
			ret = EXIT_FAIL;
			break;
		}
		if (o.interval > 0 && ticker_due(&tick)) {
			uint64_t now = now_ns();

			fault_counts(&majflt, &minflt);
			secs = (double)(now - last) / NSEC_PER_SEC;
			fprintf(stderr, "ws: t=%.1fs %.0f pages/s majflt %.1f/s held %llu pages\n",
				(double)(now - start) / NSEC_PER_SEC,
				(touched - last_touched) / secs,
				(majflt - last_maj) / secs, (unsigned long long)pages);
			last = now;
			last_touched = touched;
			last_maj = majflt;
		}
	}
	secs = (double)(now_ns() - start) / NSEC_PER_SEC;
	fault_counts(&majflt, &minflt);
	printf("ws: seconds=%.2f pages=%zu pages_touched=%llu pages_per_sec=%.0f majflt=%llu minflt=%llu\n",
	       secs, pages, touched, touched / secs, majflt - majflt0, minflt - minflt0);
	if (o.stats && ret == EXIT_OK && write_stats(o.stats, touched, majflt0, minflt0))
		ret = EXIT_FAIL;
	region_free(&r);
	return ret;
}
