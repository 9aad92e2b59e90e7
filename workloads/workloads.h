/* SPDX-License-Identifier: GPL-2.0 */
/* The workloads of bench-load; each lives in its own file. */
#ifndef BENCH_WORKLOADS_H
#define BENCH_WORKLOADS_H

struct workload {
	const char *name;
	const char *summary;
	int (*main)(int argc, char **argv);
};

int ws_main(int argc, char **argv);
int pressure_main(int argc, char **argv);
int ramp_main(int argc, char **argv);
int reclaim_main(int argc, char **argv);

#endif
