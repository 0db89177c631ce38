/* SPDX-License-Identifier: MIT */
/* Conversion: the 1 ns bound against the exact rational, edges, no bias,
 * round trips, bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"
#include "sim.h"

#include <math.h>
#include <stdio.h>

/* 128-bit helpers built on the header's portable 64x64 multiply, so the
 * reference is exact on 32-bit targets too. */
struct w {
	uint64_t hi, lo;
};
static struct w mul(uint64_t a, uint64_t b)
{
	struct w r;
	r.hi = nc_impl_mulhi(a, b, &r.lo);
	return r;
}
static int ge(struct w a, struct w b) { return a.hi > b.hi || (a.hi == b.hi && a.lo >= b.lo); }
static struct w sub(struct w a, struct w b)
{
	struct w r = {a.hi - b.hi - (a.lo < b.lo), a.lo - b.lo};
	return r;
}

/* Signed error of out against the exact ns(d) = d*1e9*2^24/q, in units of
 * 1/q ns: returns 1 and sets *err_q when |err| fits in 64 bits. */
static int err_vs_exact(uint64_t out, uint64_t d, uint64_t q, int64_t *err_q)
{
	struct w a = mul(out, q), b = mul(d, UINT64_C(1000000000) << 24);
	struct w diff = ge(a, b) ? sub(a, b) : sub(b, a);
	if (diff.hi != 0 || diff.lo > (uint64_t)INT64_MAX)
		return 0;
	*err_q = ge(a, b) ? (int64_t)diff.lo : -(int64_t)diff.lo;
	return 1;
}

/* largest d whose exact result is below 2^64 - 2 (within 1e-14: the
 * margin keeps it below wherever long double has only double's precision,
 * as on arm64/ppc64 with some ABIs, and under valgrind, which emulates the
 * x87's 80-bit arithmetic with 64-bit doubles) */
static uint64_t max_d(const nc_conv_t *c)
{
	long double r = 1e9L * 16777216.0L / (long double)c->hz_q24;
	long double m = 18446744073709551613.0L / r * (1 - 1e-14L);
	return m >= 18446744073709551615.0L ? UINT64_MAX : (uint64_t)m - 2;
}

static void check_bound(const nc_conv_t *c, uint64_t d)
{
	int64_t e;
	uint64_t out = nc_conv_ticks_to_ns(c, d);
	if (!err_vs_exact(out, d, c->hz_q24, &e))
		fail_msg("error too large to represent: hz_q24=%llu d=%llu out=%llu",
			 (unsigned long long)c->hz_q24, (unsigned long long)d, (unsigned long long)out);
	/* |error| <= 1 ns  <=>  |e| <= q */
	if (e > (int64_t)c->hz_q24 || e < -(int64_t)c->hz_q24)
		fail_msg("bound violated: hz=%.6f d=%llu out=%llu err=%.4f ns",
			 c->hz_q24 / 16777216.0, (unsigned long long)d, (unsigned long long)out,
			 (double)e / c->hz_q24);
}

static const double rates[] = {1e3,         1000.5,      32768,       19.2e6,     24e6,
			       25e6,        100e6,       512e6,       999999999.7, 1e9,
			       1000000000.3, 2095998040.1, 2.6e9,      3.3333333e9, 4.7e9,
			       2e10,        99999999999.0, 1e11};

static void test_bound_edges(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		nc_conv_t c;
		assert_int_equal(nc_conv_init(&c, rates[i]), 0);
		uint64_t top = max_d(&c);
		uint64_t edges[] = {0, 1, 2, 3, 21, 1000, UINT32_MAX, (uint64_t)UINT32_MAX + 1,
				    UINT64_C(1) << 40, (UINT64_C(1) << 53) + 1, UINT64_C(1) << 62,
				    top, top - 1, top / 2, top / 3};
		for (size_t k = 0; k < sizeof(edges) / sizeof(edges[0]); k++)
			if (edges[k] <= top)
				check_bound(&c, edges[k]);
		assert_int_equal(nc_conv_ticks_to_ns(&c, 0), 0);
	}
}

static void test_bound_random(void **state)
{
	(void)state;
	struct sim s;
	sim_default(&s, 1e9, 42);
	for (int r = 0; r < 300; r++) {
		/* log-uniform rate over the whole supported range */
		double hz = r < (int)(sizeof(rates) / sizeof(rates[0]))
				    ? rates[r]
				    : pow(10, 3 + 8 * sim_uniform(&s));
		nc_conv_t c;
		assert_int_equal(nc_conv_init(&c, hz), 0);
		uint64_t top = max_d(&c);
		for (int k = 0; k < 2000; k++) {
			/* intervals of every magnitude up to the wrap horizon */
			int bits = 1 + (int)(sim_uniform(&s) * 64);
			uint64_t d = (uint64_t)(sim_uniform(&s) * 18446744073709551615.0);
			d = bits >= 64 ? d : d >> (64 - bits);
			if (d > top)
				d = top - (d % 1000);
			check_bound(&c, d);
		}
	}
}

/* The multiplier is rounded, not truncated, so its error has no fixed
 * sign.  For one rate the mean error over large intervals d is
 * (P - F) * d / 2^64, bounded by d / 2^65; over many rates these average
 * out to ~0.  A truncated 64.64 multiplier would average about -d/2^66
 * (-0.1 ns at d ~ 2^62.6), a truncated 32-bit one (the WTMLIB seed) far
 * more: ~0.1 ms a day. */
static void test_no_bias(void **state)
{
	(void)state;
	struct sim s;
	sim_default(&s, 1e9, 7);
	long double grand = 0;
	int rates_n = 200;
	for (int i = 0; i < rates_n; i++) {
		double hz = 1e9 + 3e9 * sim_uniform(&s);
		nc_conv_t c;
		assert_int_equal(nc_conv_init(&c, hz), 0);
		long double sum = 0;
		int n = 2000;
		for (int k = 0; k < n; k++) {
			uint64_t d = (UINT64_C(1) << 62) +
				     (uint64_t)(sim_uniform(&s) * 4611686018427387904.0);
			int64_t e;
			assert_true(err_vs_exact(nc_conv_ticks_to_ns(&c, d), d, c.hz_q24, &e));
			sum += (long double)e / c.hz_q24;
		}
		double mean = (double)(sum / n);
		/* d < 2^63: multiplier part <= 0.25 ns, rounding averages ~0 */
		if (fabs(mean) > 0.3)
			fail_msg("mean error %.4f ns at hz %.1f", mean, hz);
		grand += mean;
	}
	double avg = (double)(grand / rates_n);
	if (fabs(avg) > 0.03)
		fail_msg("mean error over %d rates is %.4f ns: systematic bias", rates_n, avg);
}

static void test_round_trip(void **state)
{
	(void)state;
	struct sim s;
	sim_default(&s, 1e9, 9);
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		nc_conv_t c;
		assert_int_equal(nc_conv_init(&c, rates[i]), 0);
		double ns_per_tick = 1e9 / rates[i];
		uint64_t top = max_d(&c) / 2;
		for (int k = 0; k < 20000; k++) {
			uint64_t n = (uint64_t)(sim_uniform(&s) * (double)top * ns_per_tick / 2);
			if (k < 100)
				n = (uint64_t)k;
			/* ns -> ticks -> ns lands within one tick of where it began */
			uint64_t back = nc_conv_ticks_to_ns(&c, nc_conv_ns_to_ticks(&c, n));
			/* differences in integers: doubles lose the low bits here */
			double err = (double)(back > n ? back - n : n - back);
			if (err > ns_per_tick + 1)
				fail_msg("ns round trip off by %.2f ns (tick %.4f ns)", err, ns_per_tick);
			/* ticks -> ns -> ticks: within one tick where a tick is >= 2 ns;
			 * faster counters lose what 1 ns cannot express */
			uint64_t t = (uint64_t)(sim_uniform(&s) * (double)top);
			uint64_t t2 = nc_conv_ns_to_ticks(&c, nc_conv_ticks_to_ns(&c, t));
			double terr = (double)(t2 > t ? t2 - t : t - t2);
			double allowed = ns_per_tick >= 2 ? 1 : ceil(1.5 / ns_per_tick) + 1;
			if (terr > allowed)
				fail_msg("tick round trip off by %.0f ticks at %.1f Hz", terr, rates[i]);
		}
	}
}

static void test_bad_input(void **state)
{
	(void)state;
	nc_conv_t c;
	assert_int_equal(nc_conv_init(NULL, 1e9), NC_EINVAL);
	assert_int_equal(nc_conv_init(&c, NAN), NC_EINVAL);
	assert_int_equal(nc_conv_init(&c, INFINITY), NC_ERANGE);
	assert_int_equal(nc_conv_init(&c, -1e9), NC_ERANGE);
	assert_int_equal(nc_conv_init(&c, 0), NC_ERANGE);
	assert_int_equal(nc_conv_init(&c, 999.9), NC_ERANGE);
	assert_int_equal(nc_conv_init(&c, 1.0001e11), NC_ERANGE);
	assert_int_equal(nc_conv_init(&c, 1e3), 0);
	assert_int_equal(nc_conv_init(&c, 1e11), 0);
}

/* exact cases: 1 GHz is the identity, 500 MHz doubles */
static void test_exact_rates(void **state)
{
	(void)state;
	nc_conv_t c;
	assert_int_equal(nc_conv_init(&c, 1e9), 0);
	assert_int_equal(c.ns_int, 1);
	assert_int_equal(c.ns_frac, 0);
	assert_int_equal(nc_conv_ticks_to_ns(&c, UINT64_MAX - 5), UINT64_MAX - 5);
	assert_int_equal(nc_conv_init(&c, 5e8), 0);
	assert_int_equal(nc_conv_ticks_to_ns(&c, 123456789), 246913578);
	assert_int_equal(nc_conv_ns_to_ticks(&c, 246913578), 123456789);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bound_edges),   cmocka_unit_test(test_bound_random),
		cmocka_unit_test(test_no_bias),       cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_bad_input),     cmocka_unit_test(test_exact_rates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
