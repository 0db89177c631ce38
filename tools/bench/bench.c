/* SPDX-License-Identifier: MIT */
/*
 * `nanoclock bench`: figures, as ratios against baselines measured in the
 * same run (a shared machine is noisy):
 *   bench [--quick]           cost of every read/convert call against the bare
 *                             counter instruction and clock_gettime; cold init;
 *                             accuracy of nc_now_ns over 1/5/10 s
 *   bench init [--runs N] [--idle S]
 *                             N cold processes, each after S seconds of idle:
 *                             nc_init() time, and each one's rate against one
 *                             reference measured by this process over the run
 *   bench unix [--seconds N] [--step]
 *                             nc_unix_ns against bracketed CLOCK_REALTIME and
 *                             nc_now_ns against CLOCK_MONOTONIC_RAW for N s (60);
 *                             --step (needs CAP_SYS_TIME) steps the system clock
 *                             by +-10 ms and times how soon nc_unix_ns follows
 *   bench sync [--runs N]     the cross-CPU check, repeated
 *   bench --plot DIR [--seconds N] [--quick]
 *                             PNGs drawn with gnuplot: the cost of one call,
 *                             offsets over N s (30), calibration against
 *                             window length (plot.c)
 *   bench stress [--threads N] [--seconds S]
 *                             ordering of every ordered clock under a lock
 *                             (bench_stress.c)
 *   bench latency [--calls N] distribution of one nc_now_ns call, and the
 *                             refresh's own cost (bench_latency.c)
 * The command line is parsed in tools/bench_opts.c; bench init lives in
 * bench_init.c, bench unix and sync in bench_unix.c, --plot in plot.c and
 * plot_dir.c.
 * Costs are the best of several rounds: on a noisy machine the minimum is
 * the figure that repeats; the spread over rounds and each ratio's range
 * over rounds say how noisy the run was, and whether a target was met,
 * missed, or could not be told.
 */
#include "bench.h"
#include "bench_trace.h"
#include "bench_util.h"

#include <nanoclock.h>
#include <nanoclock_shared.h>
#include <nanoclock_info.h>
#include <nanoclock_sync.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__))
#include <sys/prctl.h>
#endif
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;


/* ---- baselines: the counter instruction by hand ----
 * Not nanoclock_impl.h's reads: a baseline must not move when the
 * library's instructions change, and the ordered one (a fence, then the
 * read) is there only behind nc_impl_after's test of the counter's kind,
 * which gcc keeps in the loop. */
#if defined(__x86_64__) || defined(__i386__)
#define HAVE_BASELINE 1
#define RAW_NAME "rdtsc"
#define ORDERED_NAME "lfence;rdtsc"
static inline uint64_t base_raw(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t base_ordered(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}
#elif defined(__aarch64__)
#define HAVE_BASELINE 1
#define RAW_NAME "mrs cntvct_el0"
#define ORDERED_NAME "isb;mrs cntvct_el0"
static inline uint64_t base_raw(void)
{
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
}
static inline uint64_t base_ordered(void)
{
	uint64_t v;
	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}
#elif defined(__powerpc64__)
#define HAVE_BASELINE 1
#define RAW_NAME "mftb"
#define ORDERED_NAME "isync;mftb"
static inline uint64_t base_raw(void)
{
	uint64_t v;
	__asm__ __volatile__("mfspr %0, 268" : "=r"(v));
	return v;
}
static inline uint64_t base_ordered(void)
{
	uint64_t v;
	__asm__ __volatile__("isync\n\tmfspr %0, 268" : "=r"(v) : : "memory");
	return v;
}
#elif defined(__riscv) && __riscv_xlen == 64
#define HAVE_BASELINE 1
#define RAW_NAME "rdtime"
#define ORDERED_NAME "fence;rdtime"
static inline uint64_t base_raw(void)
{
	uint64_t v;
	__asm__ __volatile__("rdtime %0" : "=r"(v));
	return v;
}
static inline uint64_t base_ordered(void)
{
	uint64_t v;
	__asm__ __volatile__("fence iorw, iorw\n\trdtime %0" : "=r"(v) : : "memory");
	return v;
}
#else
#define HAVE_BASELINE 0
#endif

/* Keeps results alive without a store per iteration in the timed loop. */
static volatile uint64_t sink;

#if HAVE_BASELINE
/* The ordered read and what any conversion to ns adds at least: a 64x64
 * multiply's high half and an add (nc_now_ns also loads its line and
 * checks it, off the result's path).  The factors are loaded each time,
 * as a line's are. */
static volatile uint64_t floor_mul = 0x7a120000aaaaaaabull, floor_add = 12345;
static inline uint64_t base_ordered_mul(void)
{
	uint64_t lo;
	uint64_t t = base_ordered();
	uint64_t hi = nc_impl_mulhi(t, floor_mul, &lo);
	(void)lo;
	return hi + floor_add;
}
#endif

#define LOOP(n, expr)                                                                      \
	__extension__({                                                                    \
		uint64_t acc_ = 0;                                                         \
		double t0_ = mono();                                                       \
		for (long i_ = 0; i_ < (n); i_++) {                                        \
			acc_ += (expr);                                                    \
			__asm__ __volatile__("" : "+r"(acc_));                             \
		}                                                                          \
		double t1_ = mono();                                                       \
		sink = acc_;                                                               \
		(t1_ - t0_) / (double)(n);                                                 \
	})

static uint64_t cgt(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_nsec;
}

/* ---- conversions: a buffer of tick deltas, converted as a tracer would
 * convert a block of stamps ---- */
#define NDELTA 4096
static uint64_t deltas[NDELTA];

/* WTMLIB-style conversion (fixed shift, truncated multiplier): the cost
 * baseline the conversion target refers to; its bias is why we do not use it. */
struct biased {
	uint64_t mult, shift, mod_bits, ns_per_mod;
};
static inline uint64_t biased_conv(const struct biased *b, uint64_t t)
{
	return (t >> b->mod_bits) * b->ns_per_mod +
	       (((t & ((UINT64_C(1) << b->mod_bits) - 1)) * b->mult) >> b->shift);
}

__attribute__((noinline)) static double conv_pure_loop(const nc_conv_t *cvp, long n)
{
	nc_conv_t cv = *cvp;
	const uint64_t *d = deltas;
	return LOOP(n, nc_conv_ticks_to_ns(&cv, d[i_ & (NDELTA - 1)]));
}

__attribute__((noinline)) static double conv_global_loop(long n)
{
	const uint64_t *d = deltas;
	return LOOP(n, nc_ticks_to_ns(d[i_ & (NDELTA - 1)]));
}

__attribute__((noinline)) static double conv_biased_loop(const struct biased *bp, long n)
{
	struct biased b = *bp;
	const uint64_t *d = deltas;
	return LOOP(n, biased_conv(&b, d[i_ & (NDELTA - 1)]));
}

static void prepare_conversions(struct biased *b)
{
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < NDELTA; i++) { /* 1 tick .. ~2^40 ticks, spread */
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		deltas[i] = x >> (24 + (x & 15));
	}
	double hz = nc_ticks_per_second();
	/* as in WTMLIB: remainder of 2^mod_bits ticks times mult >> shift */
	b->mod_bits = 32;
	b->shift = 64 - 33;
	b->mult = (uint64_t)(ldexp(1.0, (int)b->shift) * 1e9 / hz);
	b->ns_per_mod = (((UINT64_C(1) << b->mod_bits)) * b->mult) >> b->shift;
}

/* nc_utc_now, the interval's ends summed: the bound is computed, not
 * left unused */
static inline uint64_t utc_read(void)
{
	struct nc_utc u;
	nc_utc_now(&u);
	return (uint64_t)u.earliest_ns + (uint64_t)u.latest_ns;
}

void tool_measure_costs(struct tool_costs *c, long n, int rounds)
{
	memset(c, 0, sizeof(*c));
	nc_init();
	if (rounds > NC_COST_MAX_ROUNDS)
		rounds = NC_COST_MAX_ROUNDS;
	if (rounds < 1)
		rounds = 1;
	c->rounds = rounds;
	struct biased b = {0, 0, 0, 0};
	prepare_conversions(&b);
	nc_conv_t cv;
	nc_get_conv(&cv);
	(void)utc_read(); /* the first call chooses and asks the UTC source */
	/* round after round, every call in each: a disturbance (another
	 * process, an interrupt storm) hits one round of several calls rather
	 * than all rounds of one, and the calls of a round compare fairly */
	for (int r = 0; r < rounds; r++) {
		double *v = &c->round[0][r];
#define ROW(row) v[(row) * NC_COST_MAX_ROUNDS]
#if HAVE_BASELINE
		ROW(NC_COST_RAW) = LOOP(n, base_raw());
		ROW(NC_COST_ORDERED) = LOOP(n, base_ordered());
		ROW(NC_COST_ORDERED_MUL) = LOOP(n, base_ordered_mul());
#endif
		ROW(NC_COST_CGT_MONO) = LOOP(n, cgt(CLOCK_MONOTONIC));
		ROW(NC_COST_CGT_RAW) = LOOP(n, cgt(CLOCK_MONOTONIC_RAW));
		ROW(NC_COST_CGT_REAL) = LOOP(n, cgt(CLOCK_REALTIME));
		ROW(NC_COST_TICKS) = LOOP(n, nc_ticks());
		ROW(NC_COST_TICKS_BEGIN) = LOOP(n, nc_ticks_begin());
		ROW(NC_COST_TICKS_END) = LOOP(n, nc_ticks_end());
		ROW(NC_COST_NOW_NS) = LOOP(n, nc_now_ns());
		ROW(NC_COST_UNIX_NS) = LOOP(n, (uint64_t)nc_unix_ns());
		ROW(NC_COST_UTC_NOW) = LOOP(n, utc_read());
		ROW(NC_COST_TICKS_TO_NS) = conv_global_loop(n * 4);
		ROW(NC_COST_CONV_PURE) = conv_pure_loop(&cv, n * 4);
		ROW(NC_COST_CONV_BIASED) = conv_biased_loop(&b, n * 4);
#undef ROW
	}
	/* the coarse clock, with the upkeep thread ticking it (measured on its
	 * own: the thread's wake-ups stay out of the other rows) */
	struct nc_recent_status rs;
	if (nc_upkeep_start() == 0) {
		for (int i = 0; i < 200; i++) {
			(void)nc_recent_ns(); /* asks for the ticks */
			if (nc_get_recent_status(&rs) == 0 && rs.ticking)
				break;
			usleep(10000);
		}
		for (int r = 0; r < rounds; r++)
			c->round[NC_COST_RECENT][r] = LOOP(n, nc_recent_ns());
		nc_upkeep_stop();
	}
	double best[NC_COST_ROWS];
	for (int row = 0; row < NC_COST_ROWS; row++) {
		best[row] = c->round[row][0];
		for (int r = 1; r < rounds; r++)
			if (c->round[row][r] < best[row])
				best[row] = c->round[row][r];
	}
#if HAVE_BASELINE
	c->raw_name = RAW_NAME;
	c->ordered_name = ORDERED_NAME;
	c->raw = best[NC_COST_RAW];
	c->ordered = best[NC_COST_ORDERED];
#endif
	c->cgt_mono = best[NC_COST_CGT_MONO];
	c->cgt_raw = best[NC_COST_CGT_RAW];
	c->cgt_real = best[NC_COST_CGT_REAL];
	c->ticks = best[NC_COST_TICKS];
	c->ticks_begin = best[NC_COST_TICKS_BEGIN];
	c->ticks_end = best[NC_COST_TICKS_END];
	c->now_ns = best[NC_COST_NOW_NS];
	c->unix_ns = best[NC_COST_UNIX_NS];
	c->utc_now = best[NC_COST_UTC_NOW];
	c->recent = best[NC_COST_RECENT];
	c->ticks_to_ns = best[NC_COST_TICKS_TO_NS];
	c->conv_pure = best[NC_COST_CONV_PURE];
	c->conv_biased = best[NC_COST_CONV_BIASED];
}


/* The spread of a call over rounds: how much the median round exceeds the
 * best, in % of the best. */
static double spread_pct(const struct tool_costs *c, int row)
{
	double v[NC_COST_MAX_ROUNDS];
	int n = c->rounds;
	memcpy(v, c->round[row], (size_t)n * sizeof(v[0]));
	qsort(v, (size_t)n, sizeof(v[0]), cmp_d);
	double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return v[0] > 0 ? (med / v[0] - 1) * 100 : 0;
}

/* A ratio of two calls over the rounds: each round's ratio (both measured
 * in that round), their median and range; with 5 rounds or more the
 * lowest and the highest are left out of the range (one disturbed round
 * should not decide). */
struct ratio {
	double med, lo, hi;
};
static struct ratio round_ratio(const struct tool_costs *c, int num, int den)
{
	double v[NC_COST_MAX_ROUNDS];
	int n = c->rounds;
	for (int r = 0; r < n; r++)
		v[r] = c->round[den][r] > 0 ? c->round[num][r] / c->round[den][r] : NAN;
	qsort(v, (size_t)n, sizeof(v[0]), cmp_d);
	struct ratio q;
	q.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	int cut = n >= 5 ? 1 : 0;
	q.lo = v[cut];
	q.hi = v[n - 1 - cut];
	return q;
}

/* met, not met, or too noisy to tell: the range against the limit */
static const char *verdict(struct ratio q, double limit, int strict)
{
	if (isnan(q.lo) || isnan(q.hi))
		return "not measured";
	int in_hi = strict ? q.hi < limit : q.hi <= limit;
	int in_lo = strict ? q.lo < limit : q.lo <= limit;
	return in_hi ? "met" : !in_lo ? "NOT met" : "too noisy to tell";
}

/* the noise threshold: a baseline whose median round is more than this
 * much slower than its best round was disturbed too often for a ratio
 * to mean much */
#define NOISY_PCT 10.0

/* Each call's best cost, its spread over rounds and its ratios to the
 * baselines */
static void print_cost_table(const struct tool_costs *c)
{
	char h1[32], h2[32];
	snprintf(h1, sizeof(h1), "x %s", c->raw_name ? c->raw_name : "raw");
	snprintf(h2, sizeof(h2), "x %s", c->ordered_name ? c->ordered_name : "ordered");
	printf("%-26s %9s %8s %14s %16s %8s\n", "call", "best ns", "spread", h1, h2, "x cgt");
	static const struct {
		const char *name;
		int row;
		int ratios; /* 0: conversion throughput, no read ratios */
	} rows[] = {
		{NULL, NC_COST_RAW, 1},
		{NULL, NC_COST_ORDERED, 1},
		{"clock_gettime MONOTONIC", NC_COST_CGT_MONO, 1},
		{"clock_gettime MONO_RAW", NC_COST_CGT_RAW, 1},
		{"clock_gettime REALTIME", NC_COST_CGT_REAL, 1},
		{"nc_ticks", NC_COST_TICKS, 1},
		{"nc_ticks_begin", NC_COST_TICKS_BEGIN, 1},
		{"nc_ticks_end", NC_COST_TICKS_END, 1},
		{"ordered read + multiply", NC_COST_ORDERED_MUL, 1},
		{"nc_now_ns", NC_COST_NOW_NS, 1},
		{"nc_unix_ns", NC_COST_UNIX_NS, 1},
		{"nc_utc_now", NC_COST_UTC_NOW, 1},
		{"nc_recent_ns (ticking)", NC_COST_RECENT, 1},
		{"nc_ticks_to_ns", NC_COST_TICKS_TO_NS, 0},
		{"nc_conv_ticks_to_ns", NC_COST_CONV_PURE, 0},
		{"WTMLIB-style conversion", NC_COST_CONV_BIASED, 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int row = rows[i].row;
		const char *name = rows[i].name;
		if (!name)
			name = row == NC_COST_RAW ? c->raw_name : c->ordered_name;
		if (!name) /* no inline counter here: no baseline */
			continue;
		double best = c->round[row][0];
		for (int r = 1; r < c->rounds; r++)
			best = c->round[row][r] < best ? c->round[row][r] : best;
		char r1[32] = "-", r2[32] = "-", r3[32] = "-", sp[32];
		if (c->raw > 0 && rows[i].ratios)
			snprintf(r1, sizeof(r1), "%.3f", best / c->raw);
		if (c->ordered > 0 && rows[i].ratios)
			snprintf(r2, sizeof(r2), "%.3f", best / c->ordered);
		if (rows[i].ratios)
			snprintf(r3, sizeof(r3), "%.3f", best / c->cgt_mono);
		double s = spread_pct(c, row);
		snprintf(sp, sizeof(sp), "%.1f%%%s", s, s > NOISY_PCT ? "!" : "");
		printf("%-26s %9.3f %8s %14s %16s %8s\n", name, best, sp, r1, r2, r3);
	}
	printf("(best: the fastest of %d rounds; spread: the median round's excess over the best, "
	       "! above %.0f%%)\n",
	       c->rounds, NOISY_PCT);

}

/* The targets' ratios, each over the rounds, the floor any converting read
 * pays, and whether the machine was too noisy to say */
static void print_cost_targets(const struct tool_costs *c)
{
	printf("\ntargets — each ratio is the median of the %d rounds' own ratios, [range]%s:\n",
	       c->rounds, c->rounds >= 5 ? " without the lowest and highest round" : "");
	struct {
		const char *what;
		int num, den;
		double limit;
		int strict;
		const char *goal_what;
		double goal;
	} t[] = {
		{"nc_now_ns / ordered read", NC_COST_NOW_NS, NC_COST_ORDERED, 1.10, 0, "goal", 1.05},
		{"nc_ticks / bare read", NC_COST_TICKS, NC_COST_RAW, 1.05, 0, NULL, 0},
		{"nc_unix_ns / ordered read", NC_COST_UNIX_NS, NC_COST_ORDERED, 1.20, 0, NULL, 0},
		{"nc_unix_ns / clock_gettime REALTIME", NC_COST_UNIX_NS, NC_COST_CGT_REAL, 1.00, 1, NULL,
		 0},
		{"nc_utc_now / nc_unix_ns", NC_COST_UTC_NOW, NC_COST_UNIX_NS, 1.20, 0, NULL, 0},
		{"nc_recent_ns / nc_now_ns", NC_COST_RECENT, NC_COST_NOW_NS, 0.50, 0, NULL, 0},
		{"nc_ticks_to_ns / WTMLIB-style", NC_COST_TICKS_TO_NS, NC_COST_CONV_BIASED, 1.00, 0, NULL,
		 0},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if ((t[i].den == NC_COST_ORDERED || t[i].den == NC_COST_RAW) && !c->raw_name) {
			printf("  %-36s no inline counter here: not measured\n", t[i].what);
			continue;
		}
		struct ratio q = round_ratio(c, t[i].num, t[i].den);
		printf("  %-36s %6.3f [%.3f..%.3f]  target %s %.2f: %s", t[i].what, q.med, q.lo, q.hi,
		       t[i].strict ? "<" : "<=", t[i].limit, verdict(q, t[i].limit, t[i].strict));
		if (t[i].goal_what)
			printf("; %s <= %.2f: %s", t[i].goal_what, t[i].goal, verdict(q, t[i].goal, 0));
		printf("\n");
	}
	if (c->raw_name) {
		/* why nc_now_ns / ordered read cannot reach its 1.05 goal where a
		 * multiply's latency is more than 5% of the read: the floor */
		struct ratio f = round_ratio(c, NC_COST_ORDERED_MUL, NC_COST_ORDERED);
		struct ratio g = round_ratio(c, NC_COST_NOW_NS, NC_COST_ORDERED_MUL);
		printf("  floor: (ordered read + multiply) / ordered read %.3f [%.3f..%.3f]: any read "
		       "that converts pays it; nc_now_ns / that floor %.3f [%.3f..%.3f]\n",
		       f.med, f.lo, f.hi, g.med, g.lo, g.hi);
	}
	double sr = c->raw_name ? spread_pct(c, NC_COST_RAW) : 0;
	double so = c->raw_name ? spread_pct(c, NC_COST_ORDERED) : 0;
	double sg = spread_pct(c, NC_COST_CGT_MONO);
	double worst = sr > so ? sr : so;
	worst = sg > worst ? sg : worst;
	if (worst > NOISY_PCT)
		printf("noise: TOO NOISY — the baselines' rounds spread by up to %.0f%% (more than "
		       "%.0f%%): the machine was busy; the ratios above mean little, run again when it "
		       "is quiet\n",
		       worst, NOISY_PCT);
	else
		printf("noise: the baselines' rounds spread by at most %.1f%% (threshold %.0f%%)\n", worst,
		       NOISY_PCT);
}

/* ---- the default bench: costs, a few cold inits, accuracy ---- */
static int bench_default(int quick)
{
	/* the tool initialised the library before the command ran: its own
	 * record of how long that took */
	nc_init();
	static struct nc_info in;
	nc_get_info(&in);
	double init_here = in.init_ms;
	double hz0 = nc_ticks_per_second(), ppm0 = nc_ticks_per_second_uncertainty_ppm();
	struct pair p0;
	take_pair(&p0);

	struct tool_costs c;
	tool_measure_costs(&c, quick ? 200000 : 2000000, quick ? 7 : 9);
	printf("nanoclock bench — counter %s, %.6f MHz (%s)\n\n", nc_counter_name(), hz0 / 1e6,
	       nc_ticks_per_second_source());
	print_cost_table(&c);
	print_cost_targets(&c);

	int runs = quick ? 5 : 21;
	double v[21];
	int k = 0;
	for (int i = 0; i < runs; i++) {
		struct cold cd;
		if (run_cold(&cd) == 0)
			v[k++] = cd.init_ms;
	}
	if (k > 0) {
		double med = median(v, k);
		printf("\ninit: %.3f ms in this process; %d cold processes back to back: median %.3f ms "
		       "(min %.3f, max %.3f) — `nanoclock bench init` measures them after idle\n",
		       init_here, k, med, v[0], v[k - 1]);
	}
	if (!quick)
		bench_accuracy(&p0, hz0, ppm0);
	return 0;
}

int tool_bench_run(const struct tool_bench_opts *o)
{
	switch (o->sub) {
	case NC_BENCH_INIT_ONCE: return init_once();
	case NC_BENCH_FLOOR_ONCE: return floor_once();
	case NC_BENCH_SYNC: return bench_sync((int)o->runs);
	case NC_BENCH_INIT: return bench_init((int)o->runs, o->idle);
	case NC_BENCH_UNIX: return bench_unix(o->seconds, o->step);
	case NC_BENCH_STRESS: return tool_bench_stress(o->threads, o->seconds);
	case NC_BENCH_LATENCY: return tool_bench_latency(o->calls);
	case NC_BENCH_TRACE: return tool_bench_trace(o->quick);
	default:
		if (o->plot_dir)
			return tool_bench_plot(o->plot_dir, o->seconds, o->quick);
		return bench_default(o->quick);
	}
}
