/* The stated-frequency rule (src/freq_sources.c): which stated values are
 * adopted, kept, or dropped, and what uncertainty is claimed for them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"

#include <math.h>
#include <string.h>

static struct nc_hz_source src(const char *name, double hz, double res)
{
	struct nc_hz_source s;
	memset(&s, 0, sizeof(s));
	strcpy(s.name, name);
	s.hz = hz;
	s.resolution_hz = res;
	return s;
}

static void test_adopt_rule(void **state)
{
	(void)state;
	double m = 2e9; /* measured, +-1 ppm */
	struct nc_hz_source s[4] = {
		src("far", m * (1 + 100e-6), 0),   /* 100 ppm off: rejected */
		src("absent", 0, 0),               /* not there */
		src("close", m * (1 + 0.5e-6), 0), /* within: adopted */
		src("khz", m * (1 + 1.2e-6), 500), /* within 1 ppm + 0.25 ppm rounding: agrees */
	};
	struct nc__meas me = {m, 1.0, 0};
	int a = nc__adopt_stated(&me, s, 4);
	assert_int_equal(a, 2);
	assert_int_equal(s[0].status, NC_SRC_REJECTED);
	assert_non_null(strstr(s[0].reason, "disagrees"));
	assert_int_equal(s[1].status, NC_SRC_ABSENT);
	assert_int_equal(s[2].status, NC_SRC_ADOPTED);
	assert_int_equal(s[3].status, NC_SRC_AGREES);
	/* nothing agrees: measurement stays */
	struct nc_hz_source t[1] = {src("wrong", 2.1e9, 500)};
	assert_int_equal(nc__adopt_stated(&me, t, 1), -1);
	assert_int_equal(t[0].status, NC_SRC_REJECTED);
}

static int keep(const struct nc_hz_source *s, double hz, double ppm, double *claim)
{
	struct nc__meas m = {hz, ppm, 0};
	return nc__src_keep(s, &m, claim);
}

/* A counter with coarse steps cannot refute a value closer than a step
 * over the window: 3 ns steps over 4 ms allow 0.75 ppm more. */
static void test_step_slack(void **state)
{
	(void)state;
	struct nc_hz_source s = src("application", 1e9 / 3, 0);
	struct nc__meas fine = {1e9 / 3 * (1 + 0.9e-6), 0.5, 0};
	struct nc__meas coarse = {1e9 / 3 * (1 + 0.9e-6), 0.5, 0.75};
	double diff, tol;
	assert_false(nc__src_agrees(&s, &fine, &diff, &tol));
	assert_true(nc__src_agrees(&s, &coarse, &diff, &tol));
	assert_true(fabs(tol - 1.25) < 1e-9);
}

/* A kHz figure stays in use while the measurement is coarser than its
 * rounding, with the discrepancy plus the measurement as its uncertainty;
 * once the measurement is finer, or disagrees, the measurement is used. */
static void test_keep_rule(void **state)
{
	(void)state;
	struct nc_hz_source s = src("khz", 2299998000.0, 500); /* rounding 0.217 ppm */
	double claim;
	/* init: measured +-0.6 ppm, 0.011 ppm away: kept, claims 0.611 */
	double m = 2299998000.0 * (1 + 0.011e-6);
	assert_true(keep(&s, m, 0.6, &claim));
	assert_true(fabs(claim - 0.611) < 1e-3);
	/* later: measured +-0.0005 ppm, finer than the rounding: not kept, and
	 * the claim would be 0.0115, never the measurement's 0.0005 */
	assert_false(keep(&s, m, 0.0005, &claim));
	assert_true(claim > 0.011);
	/* disagreeing: 1 ppm off, measured +-0.3: not kept */
	assert_false(keep(&s, 2299998000.0 * (1 + 1e-6), 0.3, &claim));
	/* an exact-looking value (no rounding) is kept only while it agrees */
	struct nc_hz_source x = src("crystal", 2e9, 0);
	assert_true(keep(&x, 2e9 * (1 + 0.2e-6), 0.5, &claim));
	assert_true(fabs(claim - 0.7) < 1e-6);
	assert_false(keep(&x, 2e9 * (1 + 0.2e-6), 0.1, &claim));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_adopt_rule),
		cmocka_unit_test(test_keep_rule),
		cmocka_unit_test(test_step_slack),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
