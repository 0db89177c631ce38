/* SPDX-License-Identifier: MIT */
/* Cost measurements shared by `nanoclock bench` and `nanoclock info`. */
#ifndef NC_BENCH_H
#define NC_BENCH_H

struct nc_costs {
	/* the inline counter read by hand, as baselines: unordered and
	 * ordered ("rdtsc", "lfence;rdtsc" on x86); NULL/0 where there is no
	 * inline counter */
	const char *raw_name, *ordered_name;
	double raw, ordered;
	double cgt_mono, cgt_raw, cgt_real; /* clock_gettime baselines */
	double ticks, ticks_begin, ticks_end, now_ns, unix_ns, ticks_to_ns;
	double conv_pure, conv_biased;      /* a pure conversion vs a WTMLIB-style one */
};

#include "../tools/opts.h"

/* ns per call, best of `rounds` rounds of `n` calls each */
void nc_measure_costs(struct nc_costs *c, long n, int rounds);
int nc_bench_main(int argc, char **argv); /* argv[1] is "bench" */
int nc_bench_run(const struct nc_bench_opts *o);
/* bench_stress.c: 0 if no inversion was seen */
int nc_bench_stress(long threads, double seconds);
/* bench_latency.c */
int nc_bench_latency(long long calls);
/* `nanoclock bench --plot DIR`: PNGs drawn by gnuplot (bench/plot.c) */
int nc_bench_plot(const char *dir, double seconds, int quick);

#endif
