/* SPDX-License-Identifier: MIT */
/* The public API on the real machine: values, errors, the wrap horizon,
 * ordered reads, and the info report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"
#include "stated.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void test_init_idempotent(void **state)
{
	(void)state;
	assert_int_equal(nc_init(), 0);
	assert_int_equal(nc_init(), 0);
	assert_int_equal(nc__init_runs, 1);
	assert_non_null(nc_counter_name());
	double hz = nc_ticks_per_second();
	assert_true(hz >= 1e3 && hz <= 1e11);
	double ppm = nc_ticks_per_second_uncertainty_ppm();
	assert_true(ppm >= 0 && isfinite(ppm));
	assert_non_null(nc_ticks_per_second_source());
}

static void test_reads_advance(void **state)
{
	(void)state;
	uint64_t a = nc_ticks(), b = nc_ticks_begin(), c = nc_ticks_end();
	assert_true(b >= a && c >= b);
	/* over ~2 ms every read kind advances and agrees with the rate.  Each
	 * end is bracketed by two CLOCK_MONOTONIC_RAW reads, so the elapsed time
	 * lies within [inner, outer] however long a preemption (a busy machine,
	 * qemu-user) held any of the reads: the check is never loosened for
	 * load, the bracket widens with it.  Slack, from what the library
	 * states: the rate's uncertainty over the interval, two ticks of
	 * resolution and 2 ns of conversion; nc_now_ns also slews toward
	 * CLOCK_MONOTONIC_RAW by at most 500 ppm (man 3). */
	int64_t ra0 = nc__mono_raw_ns();
	uint64_t t0 = nc_ticks_begin(), n0 = nc_now_ns();
	int64_t rb0 = nc__mono_raw_ns();
	while (nc__mono_raw_ns() - rb0 < 2000000)
		;
	int64_t ra1 = nc__mono_raw_ns();
	uint64_t t1 = nc_ticks_end(), n1 = nc_now_ns();
	int64_t rb1 = nc__mono_raw_ns();
	double inner = (double)(ra1 - rb0), outer = (double)(rb1 - ra0);
	double ppm = nc_ticks_per_second_uncertainty_ppm(), tick = 1e9 / nc_ticks_per_second();
	double slack_ticks = ppm * 1e-6 * outer + 2 * tick + 2;
	double slack_now = (ppm + 500) * 1e-6 * outer + 2 * tick + 2;
	double by_ticks = (double)nc_ticks_to_ns(t1 - t0);
	double by_now = (double)(n1 - n0);
	if (!(by_ticks >= inner - slack_ticks && by_ticks <= outer + slack_ticks) ||
	    !(by_now >= inner - slack_now && by_now <= outer + slack_now))
		print_error("elapsed %.0f..%.0f ns: by ticks %.0f (+-%.0f), by now %.0f (+-%.0f)\n",
			    inner, outer, by_ticks, slack_ticks, by_now, slack_now);
	assert_true(by_ticks >= inner - slack_ticks && by_ticks <= outer + slack_ticks);
	assert_true(by_now >= inner - slack_now && by_now <= outer + slack_now);
}

static void test_now_tracks_mono_raw(void **state)
{
	(void)state;
	/* same origin and rate as CLOCK_MONOTONIC_RAW: every one of 100 reads
	 * lies inside its bracket of CLOCK_MONOTONIC_RAW reads (which covers
	 * the reference's own reads, however long a busy machine held them),
	 * widened by the lead the library states for the line, taken before
	 * and after (tests/stated.h) */
	int64_t worst = 0, worst_lead = 0, max_lead = 0, narrowest = INT64_MAX;
	long off_track = 0;
	for (int i = 0; i < 100; i++) {
		int64_t l0 = nc_test_now_lead_ns();
		int64_t a = nc__mono_raw_ns();
		int64_t v = (int64_t)nc_now_ns();
		int64_t b = nc__mono_raw_ns();
		int64_t l1 = nc_test_now_lead_ns(), lead = l0 > l1 ? l0 : l1;
		/* bound: [a - lead - 2, b + lead + 2]: a, b the reference bracket
		 * (measured), lead the library's stated lead (now.c set_lead), 2 ns
		 * truncation (NC_TEST_NOW_FLOOR_NS) */
		off_track += !nc_test_now_within(a, v, b, lead);
		int64_t out = v < a ? v - a : v > b ? v - b : 0;
		if (llabs(out) >= llabs(worst)) {
			worst = out;
			worst_lead = lead;
		}
		max_lead = lead > max_lead ? lead : max_lead;
		narrowest = b - a < narrowest ? b - a : narrowest;
	}
	if (off_track)
		fail_msg("%ld of 100 nc_now_ns reads off CLOCK_MONOTONIC_RAW (the worst %+lld ns outside "
			 "its bracket, stated bound %lld ns)", off_track, (long long)worst, (long long)worst_lead);
	printf("  nc_now_ns against CLOCK_MONOTONIC_RAW: the read furthest outside its bracket %+lld ns "
	       "(stated bound %lld ns; up to %lld ns; narrowest bracket %lld ns)\n", (long long)worst,
	       (long long)worst_lead, (long long)max_lead, (long long)narrowest);
}

static void test_conversions(void **state)
{
	(void)state;
	nc_conv_t c;
	nc_get_conv(&c);
	assert_true(c.hz_q24 > 0);
	/* global and pure conversions agree */
	for (uint64_t t = 1; t < (UINT64_C(1) << 60); t = t * 3 + 7)
		assert_int_equal(nc_ticks_to_ns(t), nc_conv_ticks_to_ns(&c, t));
	/* one second in ticks is the rate */
	double hz = nc_ticks_per_second();
	assert_true(fabs((double)nc_ns_to_ticks(1000000000) - hz) <= 1);
	uint64_t back = nc_ticks_to_ns(nc_ns_to_ticks(1000000000));
	assert_true(back >= 1000000000 - 1e9 / hz - 1 && back <= 1000000000 + 1e9 / hz + 1);
}

/* The horizon counts from the counter's current value. */
static void test_wrap_horizon(void **state)
{
	(void)state;
	uint64_t t = nc_ticks();
	uint64_t s = nc_seconds_before_wrap();
	double hz = nc_ticks_per_second();
	double by_counter = (double)(UINT64_MAX - t) / hz;
	double by_ns = ((double)UINT64_MAX - (double)nc_now_ns()) / 1e9;
	double expect = fmin(by_counter, by_ns);
	assert_true(fabs((double)s - expect) <= expect * 1e-6 + 2);
	/* a 64-bit counter below 100 GHz lasts > 5 years from any value a
	 * machine reaches in practice */
	assert_true(s > 5 * 365.25 * 86400);
}

static void test_strerror(void **state)
{
	(void)state;
	int codes[] = {NC_OK, NC_EINVAL, NC_ERANGE, NC_ENOCOUNTER, NC_ECALIB, NC_ESYS, -999, 42};
	const char *seen[8];
	for (int i = 0; i < 8; i++) {
		seen[i] = nc_strerror(codes[i]);
		assert_non_null(seen[i]);
		assert_true(strlen(seen[i]) > 0);
	}
	for (int i = 0; i < 6; i++)
		for (int j = i + 1; j < 6; j++)
			assert_string_not_equal(seen[i], seen[j]);
}

static void test_info(void **state)
{
	(void)state;
	struct nc_info in;
	assert_int_equal(nc_get_info(&in), 0);
	assert_string_equal(in.counter, nc_counter_name());
	assert_true(in.hz == nc_ticks_per_second());
	assert_true(in.resolution_ticks >= 1);
	assert_true(in.init_ms > 0 && in.init_ms < 10000);
	assert_true(in.policy[0] != 0);
	if (strcmp(in.counter, "tsc") == 0) {
		assert_true(in.hz_measured > 0);
		assert_true(in.hz_measured_worst_ppm >= in.hz_measured_ppm);
		assert_true(in.n_hz_sources == 5); /* 4 cheap ones, and the perf page read later */
		assert_int_equal(in.kernel.cpuid_tsc, 1);
	}
}

/* nc_measure_rate: bad windows refused; a measurement agrees with the
 * rate in use within the two stated uncertainties (each a bound the
 * library states; an OS clock's rate is exact), and nothing in use moves */
static void test_measure_rate(void **state)
{
	(void)state;
	struct nc_rate_measurement m;
	assert_int_equal(nc_measure_rate(1, NULL), NC_EINVAL);
	assert_int_equal(nc_measure_rate(0, &m), NC_EINVAL);
	assert_int_equal(nc_measure_rate(NAN, &m), NC_EINVAL);
	assert_int_equal(nc_measure_rate(10001, &m), NC_EINVAL);
	double hz = nc_ticks_per_second(), ppm = nc_ticks_per_second_uncertainty_ppm();
	assert_int_equal(nc_measure_rate(2, &m), 0);
	assert_true(m.window_ms > 0 && m.window_ms < 10000); /* the fit's span: under valgrind a few slow brackets may span less than asked */
	assert_true(m.brackets_used >= 2 && m.brackets_used <= m.brackets_total); /* 2: the two ends (calibrate.c) */
	assert_true(m.worst_ppm > 0 && m.uncertainty_ppm > 0 && m.sigma_ns >= 0);
	double diff = fabs(m.hz / hz - 1) * 1e6;
	if (!(diff <= m.uncertainty_ppm + ppm))
		print_message("measured %.3f Hz +-%.4f ppm, in use %.3f +-%.4f: %.4f ppm apart\n",
			      m.hz, m.uncertainty_ppm, hz, ppm, diff);
	assert_true(diff <= m.uncertainty_ppm + ppm);
	assert_true(nc_ticks_per_second() == hz);
}

/* Where the selected counter is read inline (the TSC; on arm64, POWER
 * and RISC-V their counters when selected), reads and conversions stay
 * out of the library: a few refreshes at most. */
static void test_inline_reads(void **state)
{
	(void)state;
	struct nc_info in;
	nc_get_info(&in);
	uint64_t k = __atomic_load_n(&nc_impl_g.now.copy[0].kind, __ATOMIC_RELAXED);
	long before = nc__slow_calls;
	uint64_t acc = 0;
	for (int i = 0; i < 100000; i++)
		acc += nc_ticks() + nc_ticks_begin() + nc_ticks_end() + nc_now_ns() +
		       nc_ticks_to_ns((uint64_t)i);
	long slow = nc__slow_calls - before;
	assert_true(acc != 0);
#ifdef NC_DEBUG
	/* the debug build hands every nc_now_ns to the library, to check it */
	assert_true(slow >= 100000);
	printf("  %s (debug build): %ld of 500000 calls out of line\n", in.counter, slow);
	return;
#endif
	if (nc_impl_hw(k)) {
		if (slow > 20)
			fail_msg("counter %s is read inline, yet %ld of 500000 calls left the fast path",
				 in.counter, slow);
	} else {
		assert_true(slow >= 100000 * 4); /* an OS clock: every read is a call */
	}
	printf("  %s: %ld of 500000 calls out of line\n", in.counter, slow);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_idempotent), cmocka_unit_test(test_reads_advance),
		cmocka_unit_test(test_now_tracks_mono_raw), cmocka_unit_test(test_conversions),
		cmocka_unit_test(test_wrap_horizon),    cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_info),            cmocka_unit_test(test_inline_reads),
		cmocka_unit_test(test_measure_rate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
