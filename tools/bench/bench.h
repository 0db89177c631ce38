/* SPDX-License-Identifier: MIT */
/* Cost measurements shared by `nanoclock bench` and `nanoclock info`. */
#ifndef NC_BENCH_H
#define NC_BENCH_H

/* The calls measured, one row each (tool_costs.round[row][...]). */
enum tool_cost_row {
	NC_COST_RAW,
	NC_COST_ORDERED,
	NC_COST_CGT_MONO,
	NC_COST_CGT_RAW,
	NC_COST_CGT_REAL,
	NC_COST_TICKS,
	NC_COST_TICKS_BEGIN,
	NC_COST_TICKS_END,
	NC_COST_NOW_NS,
	NC_COST_UNIX_NS,
	NC_COST_UTC_NOW,
	NC_COST_RECENT, /* nc_recent_ns with the upkeep thread ticking */
	NC_COST_TICKS_TO_NS,
	NC_COST_CONV_PURE,
	NC_COST_CONV_BIASED,
	NC_COST_ORDERED_MUL, /* the ordered read and one 64x64->128 multiply-add:
				the floor under any read that converts */
	NC_COST_ROWS
};
#define NC_COST_MAX_ROUNDS 16

struct tool_costs {
	/* the inline counter read by hand, as baselines: unordered and
	 * ordered ("rdtsc", "lfence;rdtsc" on x86); NULL/0 where there is no
	 * inline counter */
	const char *raw_name, *ordered_name;
	double raw, ordered;
	double cgt_mono, cgt_raw, cgt_real; /* clock_gettime baselines */
	double ticks, ticks_begin, ticks_end, now_ns, unix_ns, utc_now, recent, ticks_to_ns;
	double conv_pure, conv_biased;      /* a pure conversion vs a WTMLIB-style one */
	/* every round of every call (ns per call; 0 where not measured): the
	 * calls are measured one after another within each round, so a
	 * disturbance hits a round of each; the figures above are the best */
	int rounds;
	double round[NC_COST_ROWS][NC_COST_MAX_ROUNDS];
};

/* What `nanoclock bench` runs (the tool parses its command line into this:
 * tools/bench_opts.c). */
enum tool_bench_sub {
	NC_BENCH_DEFAULT,
	NC_BENCH_INIT_ONCE, /* hidden: one cold init, for `bench` and `bench init` */
	NC_BENCH_FLOOR_ONCE, /* hidden: a shared start's system calls alone, for `bench init` */
	NC_BENCH_INIT,
	NC_BENCH_UNIX,
	NC_BENCH_SYNC,
	NC_BENCH_STRESS,
	NC_BENCH_LATENCY,
	NC_BENCH_TRACE,
};
struct tool_bench_opts {
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

/* ns per call, best of `rounds` rounds (at most NC_COST_MAX_ROUNDS) of `n`
 * calls each, and every round */
void tool_measure_costs(struct tool_costs *c, long n, int rounds);
int tool_bench_run(const struct tool_bench_opts *o);
/* bench_stress.c: 0 if no inversion was seen */
int tool_bench_stress(long threads, double seconds);
/* bench_latency.c */
int tool_bench_latency(long long calls);
/* `nanoclock bench --plot DIR`: PNGs drawn by gnuplot (plot.c) */
int tool_bench_plot(const char *dir, double seconds, int quick);

#endif
