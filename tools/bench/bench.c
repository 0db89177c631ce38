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
 * The command line is parsed in tools/bench_opts.c.
 * Costs are the best of several rounds: on a noisy machine the minimum is
 * the figure that repeats; the spread over rounds and each ratio's range
 * over rounds say how noisy the run was, and whether a target was met,
 * missed, or could not be told.
 */
#include "bench.h"
#include "bench_trace.h"

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

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int64_t raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

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
	c->ticks_to_ns = best[NC_COST_TICKS_TO_NS];
	c->conv_pure = best[NC_COST_CONV_PURE];
	c->conv_biased = best[NC_COST_CONV_BIASED];
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
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

/* ---- cold processes ---- */
struct cold {
	double init_ms, hz, ppm;
	int status;
	char source[32]; /* nc_ticks_per_second_source(): "shared" when a record was adopted */
	long faults;     /* page faults during nc_init() */
	double touch_us; /* a first touch of a page in that process (touch_cost_us) */
};

/* Runs `nanoclock bench MODE` (--init-once, --floor-once) and reads its
 * line. */
static char cold_why[160];

static int run_cold_as(struct cold *out, char *mode)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	char *argv[] = {"nanoclock", "bench", mode, NULL};
	pid_t pid;
	int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fd[1]);
	char buf[256] = "";
	int st = 0;
	if (rc == 0) {
		ssize_t r = read(fd[0], buf, sizeof(buf) - 1);
		buf[r > 0 ? r : 0] = 0;
		waitpid(pid, &st, 0);
	}
	close(fd[0]);
	if (rc == 0 && sscanf(buf, "%lf %lf %lf %d %31s %ld %lf", &out->init_ms, &out->hz, &out->ppm,
			      &out->status, out->source, &out->faults, &out->touch_us) == 7)
		return 0;
	/* said once in the summary: why the cold processes gave nothing */
	if (rc != 0)
		snprintf(cold_why, sizeof(cold_why), "cannot start /proc/self/exe: %s", strerror(rc));
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		snprintf(cold_why, sizeof(cold_why),
			 "/proc/self/exe could not be executed (under an emulator without binfmt_misc?)");
	else
		snprintf(cold_why, sizeof(cold_why), "a cold process ended with status 0x%x and printed '%.60s'",
			 st, buf);
	return -1;
}

static int run_cold(struct cold *out) { return run_cold_as(out, "--init-once"); }

/* NC_BENCH_START_AT (CLOCK_REALTIME, ns since the epoch): the cold
 * processes a script started one after another wait for the same moment
 * and call nc_init() together (scripts/calib-spread: started with `&`,
 * each one's exec takes long enough that twenty barely overlap) */
static void wait_start_at(void)
{
	const char *at = getenv("NC_BENCH_START_AT");
	if (!at || !at[0])
		return;
	long long ns = strtoll(at, NULL, 10);
	struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
	while (ns > 0 && clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* What a page fault costs in this process, in us, or -1: fresh anonymous
 * pages written one by one, as the library's state is at a start (an
 * estimate: a code page mapped from the page cache may cost less), never a
 * huge page.  Several times dearer on a nested VM, where the faults are a
 * large part of a start: the summary says how much. */
static double touch_cost_us(void)
{
	enum { PAGES = 16 };
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, (size_t)pg * PAGES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (m == MAP_FAILED)
		return -1;
#ifdef MADV_NOHUGEPAGE
	(void)madvise(m, (size_t)pg * PAGES, MADV_NOHUGEPAGE);
#endif
	int64_t a = raw_ns();
	for (int i = 0; i < PAGES; i++)
		((volatile char *)m)[(long)i * pg] = 1;
	int64_t b = raw_ns();
	munmap(m, (size_t)pg * PAGES);
	return (double)(b - a) / PAGES / 1e3;
}

static int init_once(void)
{
	wait_start_at();
	/* the page faults too, and what one costs here (under an emulator,
	 * qemu-user, both are the emulator's own) */
	struct rusage u0, u1;
	/* raw_ns and getrusage called once first: their own first touches
	 * are not nc_init's */
	(void)raw_ns();
	getrusage(RUSAGE_SELF, &u0);
	getrusage(RUSAGE_SELF, &u0);
	int64_t a = raw_ns();
	int rc = nc_init();
	int64_t b = raw_ns();
	getrusage(RUSAGE_SELF, &u1);
	const char *src = nc_ticks_per_second_source();
	double touch = touch_cost_us();
	printf("%.4f %.6f %.6g %d %s %ld %.2f\n", (double)(b - a) / 1e6, nc_ticks_per_second(),
	       nc_ticks_per_second_uncertainty_ppm(), rc, strchr(src, ' ') ? "other" : src,
	       (long)(u1.ru_minflt - u0.ru_minflt + u1.ru_majflt - u0.ru_majflt), touch);
	return 0;
}

/* The floor of a shared start on this machine: in a cold process that
 * never calls the library, the system calls bench init's shared start
 * makes, as it makes them (through libc, in this order; tests/tool/test_cli.sh
 * compares the two under strace): the lock's getpid, the record's open,
 * fstat, geteuid where root does not own it, pread and close
 * (NANOCLOCK_SHARED's path), the boot id's open, read and close,
 * prctl(PR_GET_TSC) on x86, and the Unix tie's two adjtimex.  No state is
 * written and no code of the library's is run: what is left of a start
 * above this is the library's own work and first touches.  One line, as
 * --init-once's (its rate fields 0, its status 1 where it read nothing,
 * its source "floor"). */
static int floor_once(void)
{
	const char *rec = getenv("NANOCLOCK_SHARED");
	struct rusage u0, u1;
	char buf[1024], id[40];
	struct stat st;
	struct timex tx;
	memset(buf, 0, sizeof(buf));
	memset(&st, 0, sizeof(st));
	memset(&tx, 0, sizeof(tx)); /* the library's are on a written stack too */
	(void)raw_ns();
	getrusage(RUSAGE_SELF, &u0);
	getrusage(RUSAGE_SELF, &u0);
	int64_t a = raw_ns();
	volatile pid_t me = getpid(); /* the library's lock names its owner */
	(void)me;
	int fd = rec && rec[0] == '/' ? open(rec, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
	ssize_t n = -1;
	if (fd >= 0) {
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_uid == 0 || st.st_uid == geteuid()))
			n = pread(fd, buf, sizeof(buf), 0);
		close(fd);
	}
	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t m = fd >= 0 ? read(fd, id, sizeof(id) - 1) : -1;
	if (fd >= 0)
		close(fd);
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__)) && defined(PR_GET_TSC)
	int mode = 0;
	(void)prctl(PR_GET_TSC, &mode, 0, 0, 0);
#endif
	tx.modes = ADJ_OFFSET_SS_READ;
	int s1 = adjtimex(&tx);
	memset(&tx, 0, sizeof(tx));
	int s2 = adjtimex(&tx);
	int64_t b = raw_ns();
	getrusage(RUSAGE_SELF, &u1);
	double touch = touch_cost_us();
	/* a floor that did not read what a start reads is no floor */
	int ok = n > 0 && m >= 32 && s1 >= 0 && s2 >= 0;
	printf("%.4f 0 0 %d floor %ld %.2f\n", (double)(b - a) / 1e6, ok ? 0 : 1,
	       (long)(u1.ru_minflt - u0.ru_minflt + u1.ru_majflt - u0.ru_majflt), touch);
	return 0;
}

static double median(double *v, int k)
{
	qsort(v, (size_t)k, sizeof(v[0]), cmp_d);
	return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* A bracket of an ordered counter read around CLOCK_MONOTONIC_RAW. */
struct pair {
	double raw;  /* middle of the narrowest raw bracket around the reads */
	uint64_t nc; /* nc_now_ns inside it */
	uint64_t tk; /* an ordered counter read inside it */
	double width; /* that bracket's width, ns */
};

static void take_pair(struct pair *p)
{
	int64_t best = INT64_MAX;
	for (int i = 0; i < 50; i++) {
		int64_t a = raw_ns();
		uint64_t nc = nc_now_ns();
		uint64_t tk = nc_ticks_begin();
		int64_t b = raw_ns();
		if (b - a < best) {
			best = b - a;
			p->raw = (a + b) / 2.0;
			p->nc = nc;
			p->tk = tk;
			p->width = (double)(b - a);
		}
	}
}

/* One column of the table: the cold starts of one kind judged against the
 * reference rate. */
static void summary(const char *what, struct cold *c, int k, double ref, double ref_ppm, double *ms,
		    double target_ms)
{
	int within = 0, adopted = 0;
	double worst = 0;
	for (int i = 0; i < k; i++) {
		double err = (c[i].hz / ref - 1) * 1e6;
		within += fabs(err) <= c[i].ppm + ref_ppm;
		adopted += strcmp(c[i].source, "shared") == 0;
		worst = fmax(worst, fabs(err));
		ms[i] = c[i].init_ms;
	}
	if (k == 0)
		return;
	double med = median(ms, k);
	printf("%-9s init median %.3f ms (min %.3f, max %.3f); rate within its stated uncertainty "
	       "(and the reference's) in %d of %d; worst |error| %.4f ppm; %d of %d adopted the "
	       "shared record",
	       what, med, ms[0], ms[k - 1], within, k, worst, adopted, k);
	for (int i = 0; i < k; i++)
		ms[i] = (double)c[i].faults;
	med = median(ms, k);
	printf("; page faults in nc_init median %.0f (min %.0f, max %.0f)\n", med, ms[0], ms[k - 1]);
	/* where the start went: its page faults at what a first touch cost in
	 * the same process, and the rest (medians over the runs) */
	double faults = med;
	int kt = 0; /* the runs that measured a first touch */
	for (int i = 0; i < k; i++)
		if (c[i].touch_us >= 0)
			ms[kt++] = c[i].touch_us;
	double touch = kt ? median(ms, kt) : -1;
	kt = 0;
	for (int i = 0; i < k; i++)
		if (c[i].touch_us >= 0)
			ms[kt++] = c[i].init_ms - (double)c[i].faults * c[i].touch_us / 1e3;
	double rest = kt ? median(ms, kt) : 0;
	if (kt)
		printf("%-9s a first touch of a page %.2f us here (median): the faults ~%.3f ms, the "
		       "start without them ~%.3f ms\n", what, touch, faults * touch / 1e3, rest);
	/* the start's targets: the median, and all but 1 in 21 within */
	for (int i = 0; i < k; i++)
		ms[i] = c[i].init_ms;
	double med_ms = median(ms, k);
	int need = k - k / 21;
	printf("target %-9s median <= %.1f ms with >= %d of %d within: %s (%.3f ms, %d within)\n", what,
	       target_ms, need, k, med_ms <= target_ms && within >= need ? "met" : "NOT met", med_ms,
	       within);
}

/* why a floor run gave nothing (the first one) */
static char floor_why[160];

/* The shared start against its floor (floor_once), medians over the runs:
 * how much of it the machine's system calls take whatever the library
 * does, and what is the library's own.  Only the starts that adopted the
 * record count: one that refused it calibrated, and is no shared start. */
static void floor_summary(struct cold *fl, int kf, int runs, const struct cold *sh, int ks,
			  double *ms)
{
	if (kf == 0) {
		printf("floor:    not measured (%s)\n", floor_why[0] ? floor_why : "no record");
		return;
	}
	for (int i = 0; i < kf; i++)
		ms[i] = fl[i].init_ms;
	double f = median(ms, kf), lo = ms[0], hi = ms[kf - 1];
	for (int i = 0; i < kf; i++)
		ms[i] = (double)fl[i].faults;
	double ff = median(ms, kf);
	printf("floor:    a shared start's system calls alone, in a cold process without the "
	       "library (the lock's getpid; the record's open, fstat, pread, close; the boot id's "
	       "open, read, close;"
#if defined(__x86_64__) || defined(__i386__)
	       " prctl;"
#endif
	       " two adjtimex): median %.3f ms (min %.3f, max %.3f), page faults median %.0f; "
	       "%d of %d runs\n",
	       f, lo, hi, ff, kf, runs);
	int ka = 0;
	for (int i = 0; i < ks; i++)
		if (strcmp(sh[i].source, "shared") == 0)
			ms[ka++] = sh[i].init_ms;
	if (ka == 0)
		return;
	double s = median(ms, ka);
	printf("floor:    the shared start (the %d that adopted) is %.2fx its floor: %.3f ms above it "
	       "are the library's own work and first touches%s\n",
	       ka, s / f, s - f, f > 0.1 ? "; the floor alone is above the 0.1 ms target here" : "");
}

/* A line a run: each cold process's init time and rate against the
 * reference, unshared and shared */
static void print_init_runs(const struct cold *c, int k, const struct cold *sh, int ks, int runs,
			    double ref, double ref_ppm)
{
	printf("%4s | %10s %12s %10s %6s | %10s %12s %10s %6s %s\n", "run", "unshared", "error ppm",
	       "stated", "within", "shared", "error ppm", "stated", "within", "source");
	for (int i = 0; i < runs; i++) {
		printf("%4d |", i + 1);
		if (i < k) {
			double e = (c[i].hz / ref - 1) * 1e6;
			printf(" %8.3fms %+12.4f %10.4f %6s |", c[i].init_ms, e, c[i].ppm,
			       fabs(e) <= c[i].ppm + ref_ppm ? "yes" : "NO");
		} else {
			printf(" %10s %12s %10s %6s |", "-", "-", "-", "-");
		}
		if (i < ks) {
			double e = (sh[i].hz / ref - 1) * 1e6;
			printf(" %8.3fms %+12.4f %10.2g %6s %s\n", sh[i].init_ms, e, sh[i].ppm,
			       fabs(e) <= sh[i].ppm + ref_ppm ? "yes" : "NO", sh[i].source);
		} else {
			printf(" %10s\n", "-");
		}
	}
}

/* The counter is shared by every process on the machine: one reference
 * rate measured by this process across all the runs judges each child's
 * rate at init.  Each run starts two cold processes, each after the idle
 * time: one with sharing off (it calibrates), one that finds a shared
 * record — this process keeps it fresh in a temporary directory, as
 * `nanoclock daemon` would, rewriting it before each start — and a third,
 * after the idle time too, the shared start's floor (floor_once). */
static int bench_init(int runs, double idle_s)
{
	struct cold *c = calloc((size_t)runs, sizeof(*c)), *sh = calloc((size_t)runs, sizeof(*sh));
	struct cold *fl = calloc((size_t)runs, sizeof(*fl));
	double *ms = calloc((size_t)runs, sizeof(double));
	/* where the records users' processes find are: a tmpfs (/run/nanoclock,
	 * /dev/shm, $XDG_RUNTIME_DIR), not the disk (/tmp may be a disk's file
	 * system, where a shared start is slower) */
	char dir[] = "/dev/shm/nanoclock-bench-XXXXXX", rec[64] = "";
	if (!c || !sh || !fl || !ms) {
		free(c);
		free(sh);
		free(fl);
		free(ms);
		return 1;
	}
	int have_dir = mkdtemp(dir) != NULL;
	if (!have_dir) {
		memcpy(dir, "/tmp/nanoclock-bench-XXXXXX", sizeof("/tmp/nanoclock-bench-XXXXXX"));
		have_dir = mkdtemp(dir) != NULL;
	}
	if (have_dir)
		snprintf(rec, sizeof(rec), "%s/record", dir);
	/* this process's own measurement, not a record it would adopt (then
	 * it could publish nothing until it measured finer than that claim) */
	setenv("NANOCLOCK_SHARED", have_dir ? rec : "off", 1);
	nc_init();
	struct pair a, b;
	take_pair(&a);
	int k = 0, ks = 0, kf = 0;
	char why[192] = "";
	int wrote = 0;
	for (int i = 0; i < runs; i++) {
		if (idle_s > 0)
			sleep_s(idle_s);
		setenv("NANOCLOCK_SHARED", "off", 1);
		if (run_cold(&c[k]) == 0)
			k++;
		(void)nc_now_ns(); /* a due refresh refines the rate first */
		if (have_dir && nc_shared_publish(rec, -1, 0, 0, why, sizeof(why)) == 0)
			wrote++;
		if (idle_s > 0)
			sleep_s(idle_s);
		setenv("NANOCLOCK_SHARED", have_dir ? rec : "off", 1);
		if (run_cold(&sh[ks]) == 0)
			ks++;
		/* the floor: the same record's system calls, without the library */
		if (have_dir) {
			if (idle_s > 0)
				sleep_s(idle_s);
			int r = run_cold_as(&fl[kf], "--floor-once");
			if (r == 0 && fl[kf].status == 0)
				kf++;
			else if (!floor_why[0])
				snprintf(floor_why, sizeof(floor_why), "%s",
					 r == 0 ? "it could not read the record or the boot id" : cold_why);
		}
	}
	unsetenv("NANOCLOCK_SHARED");
	if (k < runs || idle_s < 2.5)
		sleep_s(5); /* the reference needs a baseline of seconds */
	take_pair(&b);
	double ref = (double)(b.tk - a.tk) / (b.raw - a.raw) * 1e9;
	/* the reference's own error: half of each end's bracket over the span
	 * (a record's stated uncertainty may be finer than that: then the
	 * check can only say its rate is as good as the reference can tell) */
	double ref_ppm = ((a.width + b.width) / 2 + 1) / (b.raw - a.raw) * 1e6;
	printf("nanoclock bench init — %d runs of two cold processes and a floor, %.1f s idle "
	       "before each; counter %s\n"
	       "reference rate %.3f Hz +-%.4f ppm over %.1f s (this process)\n"
	       "unshared: NANOCLOCK_SHARED=off (calibrates); shared: a record this process rewrote "
	       "before each start at %s (%d written%s%s)\n\n",
	       k, idle_s, nc_counter_name(), ref, ref_ppm, (b.raw - a.raw) / 1e9,
	       have_dir ? rec : "(none: no directory)", wrote,
	       why[0] ? "; " : "", why);
	if (k < runs || ks < runs)
		printf("%d of %d cold starts gave no result: %s\n\n", 2 * runs - k - ks, 2 * runs,
		       cold_why);
	print_init_runs(c, k, sh, ks, runs, ref, ref_ppm);
	printf("\n");
	summary("unshared:", c, k, ref, ref_ppm, ms, 0.5);
	summary("shared:", sh, ks, ref, ref_ppm, ms, 0.1);
	floor_summary(fl, kf, runs, sh, ks, ms);
	if (have_dir) {
		char p[96];
		unlink(rec);
		snprintf(p, sizeof(p), "%s.new", rec);
		unlink(p);
		rmdir(dir);
	}
	free(c);
	free(sh);
	free(fl);
	free(ms);
	return k == runs && ks == runs ? 0 : 1;
}

/* ---- accuracy of nc_now_ns against CLOCK_MONOTONIC_RAW ---- */
/* keep the library in use (as an application would) while we wait */
static void use_for(double seconds)
{
	double end = mono() + seconds * 1e9;
	struct timespec ts = {0, 1000000};
	while (mono() < end) {
		sink += nc_now_ns();
		nanosleep(&ts, NULL);
	}
}

static void bench_accuracy(const struct pair *p0, double hz0, double ppm0)
{
	printf("\naccuracy against CLOCK_MONOTONIC_RAW (library kept in use, 1 call/ms):\n");
	struct pair p1, p5, p10;
	use_for(1.0);
	take_pair(&p1);
	use_for(4.0);
	take_pair(&p5);
	double hz5 = nc_ticks_per_second(), ppm5 = nc_ticks_per_second_uncertainty_ppm();
	use_for(5.0);
	take_pair(&p10);
	double hz10 = nc_ticks_per_second(), ppm10 = nc_ticks_per_second_uncertainty_ppm();
	double ref5 = (double)(p5.tk - p0->tk) / (p5.raw - p0->raw) * 1e9;
	double ref10 = (double)(p10.tk - p0->tk) / (p10.raw - p0->raw) * 1e9;
	const struct pair *ps[] = {&p1, &p5, &p10};
	const char *names[] = {"1 s", "5 s", "10 s"};
	for (int i = 0; i < 3; i++) {
		double e_nc = (double)(ps[i]->nc - p0->nc), e_raw = ps[i]->raw - p0->raw;
		printf("  elapsed nc_now_ns over %-4s: %+.4f ppm vs CLOCK_MONOTONIC_RAW (%+.0f ns); "
		       "offset now %+.0f ns\n",
		       names[i], (e_nc / e_raw - 1) * 1e6, e_nc - e_raw, (double)ps[i]->nc - ps[i]->raw);
	}
	printf("  rate at init  : %.3f Hz, stated +-%.3f ppm, off the 5 s reference by %+.4f ppm\n",
	       hz0, ppm0, (hz0 / ref5 - 1) * 1e6);
	printf("  rate after 5 s: %.3f Hz, stated +-%.4f ppm, off the 5 s reference by %+.4f ppm\n",
	       hz5, ppm5, (hz5 / ref5 - 1) * 1e6);
	printf("  rate after 10s: %.3f Hz, stated +-%.4f ppm, off the 10 s reference by %+.4f ppm\n",
	       hz10, ppm10, (hz10 / ref10 - 1) * 1e6);
}

/* ---- Unix time against the system clock ---- */
static int64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* How long after a step of the system clock nc_unix_ns agrees with it
 * again (within 10 us): ns, or -1 after 3 s. */
static double follow_after_step(int64_t step_ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + step_ns;
	ts.tv_sec = (time_t)(t / 1000000000);
	ts.tv_nsec = (long)(t % 1000000000);
	int64_t r0 = raw_ns();
	if (clock_settime(CLOCK_REALTIME, &ts) != 0)
		return -2;
	while (raw_ns() - r0 < 3000000000) {
		int64_t a = real_ns(), u = nc_unix_ns(), b = real_ns();
		if (u >= a - 10000 && u <= b + 10000)
			return (double)(raw_ns() - r0);
	}
	return -1;
}

static int bench_unix(double seconds, int step)
{
	nc_init();
	int64_t worst_out = 0, n = 0, within2 = 0;
	double nr_min = 1e30, nr_max = -1e30;
	int64_t end = raw_ns() + (int64_t)(seconds * 1e9);
	while (raw_ns() < end) {
		int64_t best = INT64_MAX, out = 0;
		for (int i = 0; i < 5; i++) { /* the narrowest of 5 brackets */
			int64_t a = real_ns(), u = nc_unix_ns(), b = real_ns();
			if (b - a < best) {
				best = b - a;
				out = u < a ? a - u : u > b ? u - b : 0;
			}
		}
		worst_out = out > worst_out ? out : worst_out;
		within2 += out <= 2000;
		n++;
		int64_t best_r = INT64_MAX;
		double off = 0;
		for (int i = 0; i < 5; i++) {
			int64_t a = raw_ns();
			uint64_t v = nc_now_ns();
			int64_t b = raw_ns();
			if (b - a < best_r) {
				best_r = b - a;
				off = (double)(int64_t)(v - (uint64_t)a) - (double)(b - a) / 2;
			}
		}
		nr_min = off < nr_min ? off : nr_min;
		nr_max = off > nr_max ? off : nr_max;
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	struct nc_unix_status st;
	nc_get_unix_status(&st);
	printf("nanoclock bench unix — %.0f s, a sample every 10 ms (%lld samples), counter %s\n",
	       seconds, (long long)n, nc_counter_name());
	printf("nc_unix_ns outside the bracketing CLOCK_REALTIME reads: worst %lld ns; within 2 us in "
	       "%lld of %lld samples\n",
	       (long long)worst_out, (long long)within2, (long long)n);
	printf("nc_now_ns - CLOCK_MONOTONIC_RAW moved by %.0f ns over the run (%.0f .. %.0f ns)\n",
	       nr_max - nr_min, nr_min, nr_max);
	printf("ties %u, steps followed %u; system clock %s\n", st.refreshes, st.steps,
	       st.synchronised == 1 ? "synchronised" : "not synchronised");
	if (!step)
		return 0;
	printf("\nstep of the system clock (+10 ms, then back):\n");
	for (int up = 0; up < 2; up++) {
		if (up && nc_upkeep_start() != 0)
			printf("  upkeep thread could not start\n");
		struct timespec ts = {0, 300000000};
		nanosleep(&ts, NULL);
		double f1 = follow_after_step(10000000);
		nanosleep(&ts, NULL);
		double f2 = follow_after_step(-10000000);
		if (f1 == -2 || f2 == -2) {
			printf("  cannot set the clock here (needs CAP_SYS_TIME): skipped\n");
			return 0;
		}
		printf("  %-26s followed after %.3f ms (+10 ms) and %.3f ms (-10 ms)\n",
		       up ? "with the upkeep thread:" : "readers only (1 s ties):", f1 / 1e6, f2 / 1e6);
		if (up)
			nc_upkeep_stop();
	}
	return 0;
}

/* ---- cross-CPU check: hand-off limit and repeated runs ---- */

/* Ping-pong of one cache line between two pinned threads.  The minimum
 * one-way time a->b plus the minimum b->a (counter read before the store,
 * counter read after the load that saw it) is the hand-off limit: no
 * probe-ordering method can bound a shift more tightly than that, and the
 * unknown shift between the CPUs cancels in the sum. */
#define PP_N 20000
struct pingpong {
	uint64_t flag __attribute__((aligned(64)));
	int cpu[2];
	uint64_t b_arrived; /* b's counter read on seeing a's store */
	uint64_t b_left;    /* b's counter read just before its reply */
};

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

static void *pp_b(void *arg)
{
	struct pingpong *p = arg;
	pin(p->cpu[1]);
	for (uint64_t i = 0; i < PP_N; i++) {
		while (__atomic_load_n(&p->flag, __ATOMIC_ACQUIRE) != 2 * i + 1)
			;
		__atomic_store_n(&p->b_arrived, nc_ticks_begin(), __ATOMIC_RELAXED);
		__atomic_store_n(&p->b_left, nc_ticks_begin(), __ATOMIC_RELAXED);
		__atomic_store_n(&p->flag, 2 * i + 2, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* The hand-off limit in ticks between cpu a and cpu b (0 if the threads
 * could not run). */
static uint64_t handoff_limit(int a, int b)
{
	static struct pingpong p; /* one at a time */
	memset(&p, 0, sizeof(p));
	p.cpu[0] = a;
	p.cpu[1] = b;
	pthread_t th;
	if (pthread_create(&th, NULL, pp_b, &p) != 0)
		return 0;
	cpu_set_t old;
	pthread_getaffinity_np(pthread_self(), sizeof(old), &old);
	pin(a);
	uint64_t best_ab = UINT64_MAX, best_ba = UINT64_MAX;
	for (uint64_t i = 0; i < PP_N; i++) {
		uint64_t t0 = nc_ticks_begin();
		__atomic_store_n(&p.flag, 2 * i + 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&p.flag, __ATOMIC_ACQUIRE) != 2 * i + 2)
			;
		uint64_t t3 = nc_ticks_begin();
		uint64_t t1 = __atomic_load_n(&p.b_arrived, __ATOMIC_RELAXED);
		uint64_t t2 = __atomic_load_n(&p.b_left, __ATOMIC_RELAXED);
		if (t1 - t0 < best_ab)
			best_ab = t1 - t0;
		if (t3 - t2 < best_ba)
			best_ba = t3 - t2;
	}
	pthread_join(th, NULL);
	pthread_setaffinity_np(pthread_self(), sizeof(old), &old);
	return best_ab + best_ba;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int bench_sync(int runs)
{
	struct nc_sync_options o;
	nc_sync_default_options(&o);
	static struct nc_sync_report r;
	nc_sync_check(&o, &r); /* warm-up, and the CPU list */
	if (r.ncpus < 2) {
		printf("one CPU allowed: nothing to compare (report: %s, max shift %llu)\n",
		       nc_sync_verdict_name(r.verdict), (unsigned long long)r.max_shift_ticks);
		return 0;
	}
	int a = r.cpu[0].cpu, b = r.cpu[1].cpu;
	uint64_t lim1 = handoff_limit(a, b);
	uint64_t *bound = calloc((size_t)runs, sizeof(uint64_t));
	double *ms = calloc((size_t)runs, sizeof(double));
	if (!bound || !ms) {
		free(bound);
		free(ms);
		return 1;
	}
	int counts[3] = {0, 0, 0}, within = 0;
	uint64_t probes = 0;
	double total_ms = 0;
	for (int i = 0; i < runs; i++) {
		nc_sync_check(&o, &r);
		counts[r.verdict]++;
		bound[i] = r.max_shift_ticks;
		ms[i] = r.elapsed_ms;
		probes += r.probes;
		total_ms += r.elapsed_ms;
	}
	uint64_t lim2 = handoff_limit(a, b);
	uint64_t lim = lim1 < lim2 ? lim1 : lim2;
	for (int i = 0; i < runs; i++)
		if ((double)bound[i] <= 1.1 * (double)lim)
			within++;
	qsort(bound, (size_t)runs, sizeof(bound[0]), cmp_u64);
	qsort(ms, (size_t)runs, sizeof(ms[0]), cmp_d);
	unsigned per_cpu = (unsigned)(r.probes / (uint64_t)r.ncpus / r.rounds_done);
	printf("nanoclock bench sync — CPUs %d and %d, method cop, %u probes x %u rounds per run\n", a,
	       b, per_cpu, o.rounds);
	printf("hand-off limit (min a->b + min b->a): %llu ticks (before %llu, after %llu)\n",
	       (unsigned long long)lim, (unsigned long long)lim1, (unsigned long long)lim2);
	printf("%d runs: %d consistent, %d inconsistent, %d inconclusive\n", runs, counts[0],
	       counts[1], counts[2]);
	printf("max shift bound: min %llu, median %llu, max %llu ticks = %.3f / %.3f / %.3f x the "
	       "limit; %d of %d runs within 1.1x\n",
	       (unsigned long long)bound[0], (unsigned long long)bound[runs / 2],
	       (unsigned long long)bound[runs - 1], (double)bound[0] / lim,
	       (double)bound[runs / 2] / lim, (double)bound[runs - 1] / lim, within, runs);
	printf("elapsed per check: median %.2f ms, max %.2f ms\n", ms[runs / 2], ms[runs - 1]);
	/* cop serialises every probe through one cache line: time grows with
	 * ncpus * probes * rounds at the measured cost per probe */
	double per_probe_us = total_ms * 1e3 / (double)probes;
	printf("cost per probe: %.3f us; projected with the default probe counts (2000 per CPU at 64 "
	       "and 256 CPUs): 64 CPUs %.0f ms, 256 CPUs %.0f ms — if the hand-off cost stays the "
	       "same; contention on wider machines makes each probe dearer\n",
	       per_probe_us, 64.0 * 2000 * o.rounds * per_probe_us / 1e3,
	       256.0 * 2000 * o.rounds * per_probe_us / 1e3);
	free(bound);
	free(ms);
	return 0;
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
