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

/* What `nanoclock bench` runs (the tool parses its command line into this:
 * tools/bench_opts.c). */
enum nc_bench_sub {
	NC_BENCH_DEFAULT,
	NC_BENCH_INIT_ONCE, /* hidden: one cold init, for `bench` and `bench init` */
	NC_BENCH_INIT,
	NC_BENCH_UNIX,
	NC_BENCH_SYNC,
	NC_BENCH_STRESS,
	NC_BENCH_LATENCY,
	NC_BENCH_TRACE,
};
struct nc_bench_opts {
	int sub;
	int quick;         /* default, trace */
	const char *plot_dir; /* default: --plot DIR (points into argv) */
	long runs;         /* init (21), sync (100) */
	double idle;       /* init: seconds idle before each cold process (2) */
	double seconds;    /* unix (60), stress (60), --plot (30) */
	int step;          /* unix */
	long threads;      /* stress (16) */
	long long calls;   /* latency (10^8) */
};

/* ns per call, best of `rounds` rounds of `n` calls each */
void nc_measure_costs(struct nc_costs *c, long n, int rounds);
int nc_bench_run(const struct nc_bench_opts *o);
/* bench_stress.c: 0 if no inversion was seen */
int nc_bench_stress(long threads, double seconds);
/* bench_latency.c */
int nc_bench_latency(long long calls);
/* `nanoclock bench --plot DIR`: PNGs drawn by gnuplot (bench/plot.c) */
int nc_bench_plot(const char *dir, double seconds, int quick);

#endif
