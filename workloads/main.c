// SPDX-License-Identifier: GPL-2.0
/*
 * bench-load WORKLOAD [options]: the suite's memory workloads in one binary.
 * A new workload is one file and one line in the table below.
 */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "workloads.h"

static const struct workload workloads[] = {
	{ "ws", "hold a working set and keep touching it", ws_main },
	{ "pressure", "re-read a large file and/or grow anonymous memory", pressure_main },
	{ "ramp", "hold memory that grows by a step every interval", ramp_main },
	{ "reclaim", "ask a cgroup's memory.reclaim for an amount at a fixed cadence", reclaim_main },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: bench-load WORKLOAD [options]   (WORKLOAD --help for its options)\n\n");
	for (i = 0; i < ARRAY_SIZE(workloads); i++)
		fprintf(f, "  %-10s %s\n", workloads[i].name, workloads[i].summary);
}

int main(int argc, char **argv)
{
	size_t i;

	prog_name = "bench-load";
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return EXIT_OK;
	}
	for (i = 0; i < ARRAY_SIZE(workloads); i++) {
		if (!strcmp(argv[1], workloads[i].name)) {
			prog_name = workloads[i].name;
			if (install_stop_handlers()) {
				err_msg(0, "cannot install signal handlers");
				return EXIT_FAIL;
			}
			return workloads[i].main(argc - 1, argv + 1);
		}
	}
	err_msg(0, "unknown workload '%s'", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
