// SPDX-License-Identifier: GPL-2.0
/*
 * reclaim: drive reclaim of one cgroup's subtree at a known rate, by writing
 * --amount to its memory.reclaim every --every seconds (proactive reclaim,
 * Linux 5.19 and later). The kernel reclaims that much from the cgroup and
 * its children, each child's protection taken relative to the cgroup, or
 * gives up with EAGAIN when it cannot. So how much reclaim runs, and when,
 * is set here and not left to whichever task allocates.
 *
 * Requests are made at a fixed cadence: a request that takes longer than
 * --every is counted as "late", and the next one follows at once. A request
 * the kernel refuses with EAGAIN is counted and the cadence goes on; any
 * other error (the cgroup is gone, the kernel has no memory.reclaim) ends
 * the workload with a failure.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgutil.h"
#include "common.h"

struct reclaim_opts {
	const char *cgroup;
	const char *cgroup_root;
	unsigned long long amount;
	double every;
	double interval;
	double duration;
	const char *stats;
};

struct reclaim_counts {
	unsigned long long requests;	/* writes made */
	unsigned long long failed;	/* of them refused with EAGAIN */
	unsigned long long late;	/* took longer than --every */
	unsigned long long busy_us;	/* time spent inside the writes */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench-load reclaim --cgroup PATH --amount SIZE [options]\n"
		"  -c, --cgroup PATH      the cgroup to reclaim from, below the cgroup root\n"
		"  -a, --amount SIZE      bytes asked of memory.reclaim per request\n"
		"  -e, --every SEC        seconds between requests (default 1)\n"
		"  -t, --duration SEC     stop after SEC seconds (default: at SIGTERM/SIGINT)\n"
		"  -i, --interval SEC     progress line on stderr every SEC seconds (default 5, 0: none)\n"
		"      --stats FILE       rewrite FILE every %.1f s with requests, failed, late, busy_us\n"
		"      --cgroup-root DIR  cgroup2 mount (default %s)\n"
		"SIZE: bytes, 4M, 1.5G.\n",
		STATS_INTERVAL_S, CGROUP_ROOT_DEFAULT);
}

static int parse(int argc, char **argv, struct reclaim_opts *o)
{
	static const struct option longopts[] = {
		{ "cgroup", required_argument, NULL, 'c' },
		{ "amount", required_argument, NULL, 'a' },
		{ "every", required_argument, NULL, 'e' },
		{ "duration", required_argument, NULL, 't' },
		{ "interval", required_argument, NULL, 'i' },
		{ "stats", required_argument, NULL, OPT_STATS },
		{ "cgroup-root", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "c:a:e:t:i:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			o->cgroup = optarg;
			break;
		case 'a':
			if (opt_size("--amount", optarg, &o->amount))
				return -1;
			break;
		case 'e':
			if (opt_seconds("--every", optarg, &o->every))
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
		case OPT_STATS:
			o->stats = optarg;
			break;
		case 'C':
			o->cgroup_root = optarg;
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
	if (!o->cgroup || !*o->cgroup) {
		err_msg(0, "--cgroup PATH is required");
		usage(stderr);
		return -1;
	}
	if (!o->amount) {
		err_msg(0, "--amount SIZE is required and must not be 0");
		usage(stderr);
		return -1;
	}
	if (o->every <= 0) {
		err_msg(0, "--every must be more than 0 seconds");
		return -1;
	}
	return 0;
}

static int write_stats(const char *path, const struct reclaim_counts *c)
{
	static const char *const keys[] = { "requests", "failed", "late", "busy_us" };
	unsigned long long vals[] = { c->requests, c->failed, c->late, c->busy_us };

	if (!path)
		return 0;
	return stats_write(path, keys, vals, ARRAY_SIZE(keys));
}

int reclaim_main(int argc, char **argv)
{
	struct reclaim_opts o = { .every = 1, .interval = 5 };
	struct reclaim_counts c = { 0 };
	struct ticker tick, stats_tick;
	uint64_t start, end = 0, next, t0, t1, step;
	char amount[32];
	int ret = EXIT_OK, err;

	if (parse(argc, argv, &o))
		return EXIT_USAGE;
	snprintf(amount, sizeof(amount), "%llu", o.amount);
	step = (uint64_t)(o.every * NSEC_PER_SEC);
	start = next = now_ns();
	ticker_init(&tick, o.interval);
	ticker_init(&stats_tick, STATS_INTERVAL_S);
	if (o.duration > 0)
		end = start + (uint64_t)(o.duration * NSEC_PER_SEC);
	if (write_stats(o.stats, &c))
		return EXIT_FAIL;
	while (!stop_requested && (!end || now_ns() < end)) {
		t0 = now_ns();
		err = cg_write(o.cgroup_root, o.cgroup, "memory.reclaim", amount);
		if (err == -EINTR && stop_requested)
			break;
		t1 = now_ns();
		c.requests++;
		c.busy_us += (t1 - t0) / 1000;
		if (t1 - t0 > step)
			c.late++;
		if (err == -EAGAIN) {
			c.failed++;
		} else if (err) {
			err_msg(-err, "cannot write '%s/%s/memory.reclaim'",
				o.cgroup_root ? o.cgroup_root : CGROUP_ROOT_DEFAULT, o.cgroup);
			ret = EXIT_FAIL;
			break;
		}
		if (ticker_due(&stats_tick) && write_stats(o.stats, &c)) {
			ret = EXIT_FAIL;
			break;
		}
		if (o.interval > 0 && ticker_due(&tick))
			fprintf(stderr, "reclaim: t=%.1fs %llu requests, %llu refused, %llu late\n",
				(double)(now_ns() - start) / NSEC_PER_SEC,
				c.requests, c.failed, c.late);
		next += step;
		if (next > now_ns())
			sleep_ns(next - now_ns());
		else
			next = now_ns();
	}
	if (write_stats(o.stats, &c))
		ret = EXIT_FAIL;
	printf("reclaim: seconds=%.2f requests=%llu failed=%llu late=%llu busy_us=%llu amount=%llu\n",
	       (double)(now_ns() - start) / NSEC_PER_SEC, c.requests, c.failed,
	       c.late, c.busy_us, o.amount);
	return ret;
}
