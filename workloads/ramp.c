// SPDX-License-Identifier: GPL-2.0
/*
 * ramp: hold anonymous memory that grows by a step every --every seconds and
 * is re-dirtied each time (like stress --vm-keep), until told to stop, until
 * a maximum, or until the kernel kills it. The second test in upstream
 * 9783aa9917f8's commit message: does proportional protection cause
 * premature OOMs?
 *
 * How far it got is written after every step to --report (atomically), so it
 * is known even when the OOM killer ends the process.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

struct ramp_opts {
	unsigned long long start, step, max;
	double every;
	double interval;
	double duration;
	const char *report;
	const char *stats;
	bool retouch;
};

struct chunk {
	char *mem;
	size_t bytes;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench-load ramp --step SIZE [options]\n"
		"      --start SIZE       hold SIZE from the start (default 0)\n"
		"  -s, --step SIZE        grow by SIZE every --every seconds\n"
		"  -e, --every SEC        seconds between steps (default 1)\n"
		"  -m, --max SIZE         stop growing at SIZE (default: no limit)\n"
		"  -t, --duration SEC     stop after SEC seconds (default: at SIGTERM/SIGINT)\n"
		"  -o, --report FILE      rewrite FILE with how far it got after every step\n"
		"      --no-retouch       do not re-dirty held memory at each step\n"
		"  -i, --interval SEC     progress line on stderr every SEC seconds (default 5, 0: none)\n"
		"      --stats FILE       rewrite FILE after every step with held_bytes, steps\n"
		"SIZE: bytes, 512M, 1.5G, or 40%% of RAM.\n");
}

static int parse(int argc, char **argv, struct ramp_opts *o)
{
	static const struct option longopts[] = {
		{ "start", required_argument, NULL, 'S' },
		{ "step", required_argument, NULL, 's' },
		{ "every", required_argument, NULL, 'e' },
		{ "interval", required_argument, NULL, 'i' },
		{ "max", required_argument, NULL, 'm' },
		{ "duration", required_argument, NULL, 't' },
		{ "report", required_argument, NULL, 'o' },
		{ "no-retouch", no_argument, NULL, 'N' },
		{ "stats", required_argument, NULL, OPT_STATS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "s:e:i:m:t:o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'S':
			if (opt_size("--start", optarg, &o->start))
				return -1;
			break;
		case 's':
			if (opt_size("--step", optarg, &o->step))
				return -1;
			break;
		case 'm':
			if (opt_size("--max", optarg, &o->max))
				return -1;
			break;
		case 'e':
			if (opt_seconds("--every", optarg, &o->every))
				return -1;
			break;
		case 'i':
			if (opt_seconds("--interval", optarg, &o->interval))
				return -1;
			break;
		case 't':
			if (opt_seconds("--duration", optarg, &o->duration))
				return -1;
			break;
		case 'o':
			o->report = optarg;
			break;
		case 'N':
			o->retouch = false;
			break;
		case OPT_STATS:
			o->stats = optarg;
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
	if (!o->step) {
		err_msg(0, "--step SIZE is required and must not be 0");
		usage(stderr);
		return -1;
	}
	if (o->every <= 0) {
		err_msg(0, "--every must be more than 0 seconds");
		return -1;
	}
	if (o->max && o->max < o->start) {
		err_msg(0, "--max is smaller than --start");
		return -1;
	}
	return 0;
}

static void touch(char *mem, size_t bytes, size_t page)
{
	for (size_t off = 0; off < bytes; off += page)
		mem[off]++;
}

static int write_report(const char *path, double secs, unsigned long long held,
			unsigned long nsteps, const char *state)
{
	char line[256];

	if (!path)
		return 0;
	snprintf(line, sizeof(line), "seconds=%.2f held_bytes=%llu steps=%lu state=%s\n",
		 secs, held, nsteps, state);
	return write_atomic(path, line);
}

int ramp_main(int argc, char **argv)
{
	struct ramp_opts o = { .every = 1, .interval = 5, .retouch = true };
	struct ticker tick;
	struct chunk *chunks = NULL;
	size_t nchunks = 0, page = sysconf(_SC_PAGESIZE);
	unsigned long long held = 0, want;
	unsigned long nsteps = 0;
	const char *state = "stopped";
	uint64_t start, end = 0, next;
	int ret = EXIT_OK, err;
	double secs;

	if (parse(argc, argv, &o))
		return EXIT_USAGE;
	start = next = now_ns();
	ticker_init(&tick, o.interval);
	if (o.duration > 0)
		end = start + (uint64_t)(o.duration * NSEC_PER_SEC);
	want = o.start;
	while (!stop_requested) {
		if (want > held) {
			size_t bytes = want - held;
			struct chunk *c = realloc(chunks, (nchunks + 1) * sizeof(*c));

			if (!c) {
				err_msg(ENOMEM, "cannot grow the chunk list");
				state = "failed";
				ret = EXIT_FAIL;
				break;
			}
			chunks = c;
			c[nchunks].mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
					      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (c[nchunks].mem == MAP_FAILED) {
				err_msg(errno, "cannot grow beyond %llu bytes", held);
				state = "failed";
				ret = EXIT_FAIL;
				break;
			}
			c[nchunks].bytes = bytes;
			touch(c[nchunks].mem, bytes, page);
			nchunks++;
			held = want;
		} else if (o.retouch) {
			for (size_t i = 0; i < nchunks; i++)
				touch(chunks[i].mem, chunks[i].bytes, page);
		}
		secs = (double)(now_ns() - start) / NSEC_PER_SEC;
		err = write_report(o.report, secs, held, nsteps, "running");
		if (err) {
			err_msg(-err, "cannot write the report '%s'", o.report);
			ret = EXIT_FAIL;
			break;
		}
		if (o.stats) {
			static const char *const keys[] = { "held_bytes", "steps" };
			unsigned long long vals[] = { held, nsteps };

			if (stats_write(o.stats, keys, vals, ARRAY_SIZE(keys))) {
				ret = EXIT_FAIL;
				break;
			}
		}
		if (o.interval > 0 && ticker_due(&tick))
			fprintf(stderr, "ramp: t=%.1fs held %llu MiB after %lu steps\n",
				secs, held >> 20, nsteps);
		if (end && now_ns() >= end)
			break;
		next += (uint64_t)(o.every * NSEC_PER_SEC);
		if (next > now_ns())
			sleep_ns(next - now_ns());
		if (!o.max || want + o.step <= o.max) {
			want += o.step;
			nsteps++;
		} else if (want < o.max) {
			want = o.max;
			nsteps++;
		} else {
			state = "at-max";
		}
	}
	if (ret == EXIT_OK && !strcmp(state, "stopped") && o.max && held >= o.max)
		state = "at-max";
	secs = (double)(now_ns() - start) / NSEC_PER_SEC;
	write_report(o.report, secs, held, nsteps, state);
	printf("ramp: seconds=%.2f held_bytes=%llu steps=%lu state=%s\n",
	       secs, held, nsteps, state);
	for (size_t i = 0; i < nchunks; i++)
		munmap(chunks[i].mem, chunks[i].bytes);
	free(chunks);
	return ret;
}
