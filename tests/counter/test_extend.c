/* SPDX-License-Identifier: MIT */
/* Counters narrower than 64 bits (src/counter/extend.c): the pure extension step
 * on synthetic values, and end to end a 20-bit counter that wraps every
 * 1.05 ms, read often, not read for several periods, and read by a thread
 * preempted between the counter and the OS clock.  End-to-end cases run in
 * a child each (initialisation happens once a process). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"
#include "child.h"
#include "stated.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const struct nc_candidate *find(const struct nc_info *in, const char *name)
{
	for (int i = 0; i < in->n_candidates; i++)
		if (strcmp(in->candidates[i].name, name) == 0)
			return &in->candidates[i];
	return NULL;
}

static void add(const char *name, uint64_t (*rd)(void *), double hz, unsigned bits)
{
	struct nc_counter_spec s = {name, rd, NULL, hz, bits};
	CHECK(nc__test_add_candidate(&s) == 0);
}

/* 20 bits at 1 GHz: wraps every 1.05 ms.  Under valgrind, where a read of
 * it (through the library's extension) can take longer than half that, 16
 * times slower (62.5 MHz, 16.8 ms): a counter read less than twice a wrap
 * period is not one the extension promises to follow.  The loops below
 * scale with it. */
static unsigned slow_shift;
static uint64_t wrap20(void *ctx)
{
	(void)ctx;
	return ((uint64_t)nc__mono_raw_ns() >> slow_shift) & ((1u << 20) - 1);
}
static double wrap20_hz(void)
{
	slow_shift = getenv("NC_TEST_VALGRIND") ? 4 : 0;
	return 1e9 / (double)(1u << slow_shift);
}

/* The same, with the thread preempted right after every 5th read once
 * late_reads is set, for longer than half a wrap period: whoever stamps
 * the read with the OS clock afterwards gets a time 0.7 ms late. */
static int late_reads;
static uint64_t wrap20_late(void *ctx)
{
	static int calls;
	uint64_t v = wrap20(ctx);
	if (late_reads && ++calls % 5 == 0) {
		struct timespec ts = {0, 700000L << slow_shift};
		nanosleep(&ts, NULL);
	}
	return v;
}

/* `ticks` between two reads, the first taken between reference times b0
 * and a0, the second between b1 and a1: the elapsed time must lie in
 * [b1 - a0, a1 - b0] whatever the scheduler did in between, widened by
 * what the library states for the interval: the rate in use off by its
 * stated uncertainty over the interval, a tick of quantisation (1e9 / the
 * stated rate: a difference of two reads of a counter that steps a tick at
 * a time is off by less than one) and the conversion's 1 ns (nanoclock.h).
 * The counters here are CLOCK_MONOTONIC_RAW itself, narrowed (raw >>
 * slow_shift: one tick a step, by construction, so the library's stated
 * resolution, which includes a read's own time and is already in the
 * bracket, is not needed): no other term.  A wrap counted wrongly moves
 * it by a whole wrap period.  The interval nearest its bound is kept for
 * the report. */
static double worst_slack_ns, worst_bracket_ns, worst_ppm, worst_miss_ns = -1e18;
static void check_elapsed(uint64_t ticks, int64_t b0, int64_t a0, int64_t b1, int64_t a1)
{
	double u0 = nc_ticks_per_second_uncertainty_ppm();
	double el = (double)nc_ticks_to_ns(ticks);
	double u1 = nc_ticks_per_second_uncertainty_ppm(), u = (u0 > u1 ? u0 : u1) * 1e-6;
	/* slack: el * u / (1 - u) (the stated rate uncertainty, either side
	 * of a refresh) + 1e9 / hz (a tick) + 1 ns (nc_ticks_to_ns's stated
	 * error); bracket [b1 - a0, a1 - b0] measured */
	double slack = el * u / (1 - u) + 1e9 / nc_ticks_per_second() + 1;
	double lo = (double)(b1 - a0), hi = (double)(a1 - b0);
	double miss = lo - el > el - hi ? lo - el : el - hi; /* < 0: inside, by that much */
	if (miss - slack > worst_miss_ns - worst_slack_ns) {
		worst_miss_ns = miss;
		worst_slack_ns = slack;
		worst_bracket_ns = hi - lo;
		worst_ppm = u * 1e6;
	}
	if (el < lo - slack || el > hi + slack) {
		fprintf(stderr, "child: %.0f ns elapsed, reference %.0f..%.0f ns, stated slack %.1f ns "
			"(%.6f ppm)\n", el, lo, hi, slack, u * 1e6);
		_exit(1);
	}
}
static void report_elapsed(const char *what)
{
	fprintf(stderr, "  %s: the interval nearest its bound %+.0f ns outside its reference bracket "
		"(%.0f ns wide; < 0: inside), stated slack %.1f ns (%.6f ppm)\n", what, worst_miss_ns,
		worst_bracket_ns, worst_slack_ns, worst_ppm);
}

/* nc_init, and what it said when it did not return 0.  A counter refused
 * because its reads came further apart than its wrap period (the library
 * says "a busy machine?": CI's TSan run, the other suite on both CPUs, saw
 * it three times in a row for the 1.05 ms wrap) is the library's right
 * answer on that machine at that moment, not this case's subject: the
 * process exits with BUSY and the case runs again in a fresh one
 * (retrying()). */
#define BUSY 75
static int init_saying(void)
{
	int rc = nc_init();
	if (rc != 0) {
		struct nc_info in;
		nc_get_info(&in);
		fprintf(stderr, "case: nc_init %d (%s); counter %s, %s; hz %.0f %s\n", rc, nc_strerror(rc),
			in.counter, in.counter_error, in.hz, in.hz_source);
		int busy = 0;
		for (int i = 0; i < in.n_candidates; i++) {
			fprintf(stderr, "  candidate %s: %s\n", in.candidates[i].name, in.candidates[i].reason);
			busy |= strstr(in.candidates[i].reason, "gaps longer than a wrap period") != NULL;
		}
		for (int i = 0; i < in.n_hz_sources; i++)
			fprintf(stderr, "  source %s: %s\n", in.hz_sources[i].name, in.hz_sources[i].reason);
		if (busy)
			_exit(BUSY);
	}
	return rc;
}

/* body in fresh processes until one is not too busy to follow the
 * counter, five at most: five in a row fail the case */
static void retrying(void (*body)(const char *), const char *arg)
{
	for (int attempt = 1; attempt <= 5; attempt++) {
		fflush(NULL);
		pid_t p = fork();
		CHECK(p >= 0);
		if (p == 0) {
			body(arg);
			_exit(0);
		}
		int st;
		CHECK(waitpid(p, &st, 0) == p && WIFEXITED(st));
		if (WEXITSTATUS(st) != BUSY) {
			CHECK(WEXITSTATUS(st) == 0);
			return;
		}
		fprintf(stderr, "case: attempt %d: the machine too busy to follow the counter (said so): "
			"again in a fresh process\n", attempt);
	}
	CHECK(!"five processes in a row too busy to follow the counter");
}

/* Two reads ns apart with none between: the elapsed time is right. */
static void check_gap(long ns)
{
	int64_t b0 = nc__mono_raw_ns();
	uint64_t t0 = nc_ticks_begin();
	int64_t a0 = nc__mono_raw_ns();
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
	int64_t b1 = nc__mono_raw_ns();
	uint64_t t1 = nc_ticks_end();
	int64_t a1 = nc__mono_raw_ns();
	check_elapsed(t1 - t0, b0, a0, b1, a1);
}

/* 20-bit counter: extended to 64 bits across many wraps, also when
 * nobody reads it for several wrap periods. */
static void wrap_body(const char *arg)
{
	(void)arg;
	add("wrap20", wrap20, wrap20_hz(), 20);
	CHECK(init_saying() == 0);
	CHECK(strcmp(nc_counter_name(), "wrap20") == 0);
	struct nc_info in;
	nc_get_info(&in);
	CHECK(strstr(find(&in, "wrap20")->reason, "extended"));
	/* ~19 wraps, read often, each read bracketed by the reference */
	int64_t b0 = nc__mono_raw_ns();
	uint64_t prev = nc_ticks(), first = prev;
	int64_t a0 = nc__mono_raw_ns();
	for (;;) {
		int64_t b = nc__mono_raw_ns();
		uint64_t v = nc_ticks();
		int64_t a = nc__mono_raw_ns();
		CHECK(v >= prev);
		prev = v;
		check_elapsed(v - first, b0, a0, b, a);
		if (b - a0 > (20000000LL << slow_shift)) /* b: before the read, so v is at least this late */
			break;
	}
	CHECK(prev - first > (1u << 20) * 15); /* beyond 20 bits */
	/* a 10 ms gap (~10 wraps) with no reads at all */
	check_gap(10000000);
	report_elapsed("wrap20");
}

/* Reads preempted between the counter and the OS clock: no wrap counted
 * twice or missed. */
static void wrap_late_body(const char *arg)
{
	(void)arg;
	add("wrap20_late", wrap20_late, wrap20_hz(), 20);
	CHECK(init_saying() == 0);
	CHECK(strcmp(nc_counter_name(), "wrap20_late") == 0);
	int64_t b0 = nc__mono_raw_ns();
	uint64_t t0 = nc_ticks_begin();
	int64_t a0 = nc__mono_raw_ns();
	late_reads = 1;
	uint64_t prev = t0;
	for (int i = 0; i < 40; i++) { /* 8 late reads: ~6 ms of gaps */
		uint64_t v = nc_ticks();
		CHECK(v >= prev);
		prev = v;
	}
	late_reads = 0;
	int64_t b1 = nc__mono_raw_ns();
	uint64_t t1 = nc_ticks_end();
	int64_t a1 = nc__mono_raw_ns();
	/* late stamps without the bracketed read made this 170-230 us long */
	check_elapsed(t1 - t0, b0, a0, b1, a1);
	report_elapsed("wrap20_late");
}

static void child_wrap(const char *arg) { retrying(wrap_body, arg); }
static void child_wrap_late(const char *arg) { retrying(wrap_late_body, arg); }

/* 16 bits at 1 GHz (16 times slower under valgrind): wraps every 65.5 us.
 * While `stalling`, its 30th, 70th, 110th and 150th reads arm a timer
 * that takes the thread off its CPU for 1.2 ms (18 wrap periods) a few
 * microseconds later: between two reads as a busy machine does (or inside
 * a read's bracket, which is then read again), in the first check of the
 * counter (200 reads). */
static int stalling;
static uint64_t wrap16(void *ctx)
{
	(void)ctx;
	static int calls;
	uint64_t v = ((uint64_t)nc__mono_raw_ns() >> slow_shift) & 0xffff;
	if (stalling && (++calls == 30 || calls == 70 || calls == 110 || calls == 150)) {
		struct itimerval it = {{0, 0}, {0, 5}};
		setitimer(ITIMER_REAL, &it, NULL);
	}
	return v;
}

static int stalls;
static void stall(int sig)
{
	(void)sig;
	stalls++;
	int e = errno;
	struct timespec ts = {0, 1200000L << slow_shift};
	nanosleep(&ts, NULL);
	errno = e;
}

/* A narrow counter selected while its thread is preempted for many wrap
 * periods: a gap no rough rate can count yet is not a backward step.  The
 * counter is checked again and followed, and counts right (or, where the
 * machine itself adds such gaps to every check, refused as one that could
 * not be followed); never called one that went backwards, and the clock
 * works either way. */
static void child_wrap_stalled(const char *arg)
{
	(void)arg;
	add("wrap16", wrap16, wrap20_hz(), 16);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = stall;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
	/* the timers fire when asked, not up to 50 us later (the default
	 * slack): within the check's 200 reads */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	/* one selection (a record found and refused would run a second,
	 * unstalled one over the first's reasons) */
	setenv("NANOCLOCK_SHARED", "off", 1);
	stalling = 1;
	int rc = nc_init();
	stalling = 0;
	struct nc_info in;
	nc_get_info(&in); /* nc_init's error if it had one */
	const struct nc_candidate *c = find(&in, "wrap16");
	CHECK(c != NULL);
	fprintf(stderr, "  wrap16 (nc_init %d, %d stalls): %s\n", rc, stalls, c->reason);
	CHECK(!strstr(c->reason, "backwards"));
	if (strcmp(nc_counter_name(), "wrap16") == 0) {
		CHECK(rc == 0);
		/* a 1 ms gap (15 periods) with no reads: counted right */
		check_gap(1000000);
		report_elapsed("wrap16");
	} else {
		CHECK(rc == NC_ENOCOUNTER);
		CHECK(strstr(c->reason, "could not be followed"));
	}
	/* the clock works either way: nc_now_ns, on wrap16 or on the counter
	 * the library chose instead, inside its CLOCK_MONOTONIC_RAW bracket
	 * [a, b] (measured) widened by the lead the library states for its
	 * line, taken before and after, and 2 ns truncation (tests/stated.h) */
	int64_t l0 = nc_test_now_lead_ns();
	int64_t a = nc__mono_raw_ns();
	int64_t v = (int64_t)nc_now_ns();
	int64_t b = nc__mono_raw_ns();
	int64_t l1 = nc_test_now_lead_ns(), lead = l0 > l1 ? l0 : l1;
	fprintf(stderr, "  %s: nc_now_ns %+lld ns outside its %lld ns CLOCK_MONOTONIC_RAW bracket, "
		"stated lead %lld ns\n", nc_counter_name(), (long long)(v < a ? v - a : v > b ? v - b : 0),
		(long long)(b - a), (long long)lead);
	CHECK(nc_test_now_within(a, v, b, lead));
}

/* A narrow counter of the application's that faults when read: refused
 * as faulted, and the extension's lock, held by the read that faulted, is
 * free again: the next fork() (whose handler takes it) does not hang. */
static volatile uintptr_t unmapped = 8; /* the zero page is never mapped */
static uint64_t faulty16(void *ctx)
{
	(void)ctx;
	return *(volatile uint16_t *)unmapped; /* SIGSEGV */
}

static void child_wrap_faulting(const char *arg)
{
	(void)arg;
	alarm(20); /* a lock left held hangs fork() below: killed, reported */
	add("faulty16", faulty16, 1e9, 16);
	CHECK(nc_init() == NC_ENOCOUNTER);
	struct nc_info in;
	nc_get_info(&in);
	const struct nc_candidate *c = find(&in, "faulty16");
	CHECK(c && strstr(c->reason, "faulted"));
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0)
		_exit(nc_now_ns() > 0 ? 0 : 1);
	int st;
	CHECK(waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Pure extension logic on synthetic values. */
static void test_extend_step(void **state)
{
	(void)state;
	struct nc__counter raw = {.name = "x", .bits = 8};
	struct nc__ext e;
	nc__ext_init(&e, &raw);
	assert_int_equal(nc__ext_step(&e, 250, 0, 0), 250);
	assert_int_equal(nc__ext_step(&e, 5, 10, 0), 261);   /* wrapped once */
	assert_int_equal(nc__ext_step(&e, 100, 20, 0), 356);
	assert_int_equal(nc__ext_step(&e, 99, 30, 0), 356);  /* backwards: held */
	assert_int_equal(e.backsteps, 1);
	assert_int_equal(nc__ext_step(&e, 110, 40, 0), 366); /* measured from 100 */
	/* with a rate, whole periods come from the OS clock: 1 tick/ns, 1000 ns
	 * = 3 periods + 232 ticks */
	nc__ext_set_hz(&e, 1e9);
	assert_int_equal(nc__ext_step(&e, (110 + 1000) & 255, 1040, 0), 366 + 1000);
	/* Before the rate is known (selection, calibration) a gap of more than
	 * half a period must not be taken for a backward step: the extension
	 * learns a rough rate from its own reads.  8 bits at 1 tick/ns: reads
	 * every 20 ns for 20 us, then a gap of 1000 ns (3.9 periods), then 300
	 * ns (1.2 periods, 44 ticks past a wrap: the raw value is lower). */
	nc__ext_init(&e, &raw);
	uint64_t v = 0;
	for (int64_t t = 0; t <= 20000; t += 20)
		v = nc__ext_step(&e, (uint64_t)t & 255, t, 0);
	assert_int_equal(v, 20000);
	assert_int_equal(nc__ext_step(&e, (20000 + 1000) & 255, 21000, 0), 21000);
	assert_int_equal(nc__ext_step(&e, (21000 + 300) & 255, 21300, 0), 21300);
	assert_int_equal(e.backsteps, 0);
	assert_int_equal(e.gaps, 0);

	/* A thread preempted for 100 us (390 periods) before any rate: whole
	 * periods may hide in the gap, and a value below the last may be a
	 * wrap or a backward step.  Neither is counted: an unresolved gap,
	 * the value advanced by the difference only, the rough rate started
	 * afresh from there (selection checks again). */
	nc__ext_init(&e, &raw);
	for (int64_t t = 0; t <= 5000; t += 20)
		v = nc__ext_step(&e, (uint64_t)t & 255, t, 0);
	assert_int_equal(v, 5000); /* raw 136; 5 us: no rate yet */
	assert_int_equal(nc__ext_step(&e, 104930 & 255, 104930, 0), 5000 + 90); /* raw 226 */
	assert_int_equal(e.gaps, 1);
	assert_int_equal(e.backsteps, 0);
	assert_int_equal(nc__ext_step(&e, 104950 & 255, 104950, 0), 5110);
	assert_int_equal(e.first_os, 104930); /* the rough rate's new start */
	/* lower after the gap: held */
	nc__ext_init(&e, &raw);
	for (int64_t t = 0; t <= 5000; t += 20)
		v = nc__ext_step(&e, (uint64_t)t & 255, t, 0);
	assert_int_equal(nc__ext_step(&e, 100, 90000, 0), 5000);
	assert_int_equal(e.gaps, 1);
	assert_int_equal(e.backsteps, 0);
	/* a jump back within 20 us is a backward step whatever the rate: a
	 * counter that wraps that fast cannot be followed */
	nc__ext_init(&e, &raw);
	for (int64_t t = 0; t <= 5000; t += 20)
		v = nc__ext_step(&e, (uint64_t)t & 255, t, 0);
	assert_int_equal(nc__ext_step(&e, (5000 - 10) & 255, 5100, 0), 5000);
	assert_int_equal(e.backsteps, 1);
	assert_int_equal(e.gaps, 0);

	/* The rough rate is trusted only as far as the reads' OS brackets
	 * allow.  400 us of reads, then a gap of 100.2 us (391 periods and
	 * 104 ticks): bracketed +-10 ns the rate is good to 3e-4 and the
	 * periods are counted; bracketed +-2 us the two stamps alone may be
	 * 4000 ticks off, beyond a quarter period: not counted.  Once the
	 * rate is calibrated the same gap is counted whatever the brackets
	 * (never a period lost silently). */
	for (int pass = 0; pass < 2; pass++) {
		int64_t hw = pass ? 10 : 2000;
		nc__ext_init(&e, &raw);
		for (int64_t t = 0; t <= 400000; t += 100)
			v = nc__ext_step(&e, (uint64_t)t & 255, t, hw);
		assert_int_equal(v, 400000);
		v = nc__ext_step(&e, 500200 & 255, 500200, hw);
		assert_int_equal(e.backsteps, 0);
		if (pass) {
			assert_int_equal(v, 500200);
			assert_int_equal(e.gaps, 0);
		} else {
			assert_int_equal(v, 400000 + 104);
			assert_int_equal(e.gaps, 1);
		}
		nc__ext_init(&e, &raw);
		for (int64_t t = 0; t <= 400000; t += 100)
			v = nc__ext_step(&e, (uint64_t)t & 255, t, hw);
		e.hz = 1e9;
		v = nc__ext_step(&e, 500200 & 255, 500200, 2000);
		assert_int_equal(v, 500200);
		assert_int_equal(e.gaps, 0);
	}
	/* 64-bit raw counters pass through */
	struct nc__counter raw64 = {.name = "y", .bits = 64};
	nc__ext_init(&e, &raw64);
	assert_int_equal(nc__ext_step(&e, UINT64_MAX - 1, 0, 0), UINT64_MAX - 1);
}

static const struct child_case cases[] = {
	{"narrow_wrapping", child_wrap, NULL, "wrap20", NULL},
	{"narrow_preempted", child_wrap_late, NULL, "wrap20_late", NULL},
	{"narrow_stalled", child_wrap_stalled, NULL, "wrap16", NULL},
	{"narrow_faulting", child_wrap_faulting, NULL, "faulty16", NULL},
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

int main(int argc, char **argv)
{
	const struct CMUnitTest plain[] = {cmocka_unit_test(test_extend_step)};
	return child_program("test_extend", argc, argv, plain, (int)(sizeof(plain) / sizeof(plain[0])), cases,
			     NCASES, NULL, 0);
}
