/* SPDX-License-Identifier: MIT */
/* The frequency rules (src/rate/sources.c): stated values cross-checked
 * against the measurement, and rates the user states accepted, refused or
 * forced, with the uncertainty claimed for them. */
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

static void test_check_rule(void **state)
{
	(void)state;
	double m = 2e9; /* measured, +-1 ppm */
	struct nc_hz_source s[4] = {
		src("far", m * (1 + 100e-6), 0),   /* 100 ppm off: refuted */
		src("absent", 0, 0),               /* not there */
		src("close", m * (1 + 0.5e-6), 0), /* within: agrees */
		src("khz", m * (1 + 1.2e-6), 500), /* within 1 ppm + 0.25 ppm rounding: agrees */
	};
	struct nc__meas me = {m, 1.0, 0};
	assert_int_equal(nc__check_stated(&me, s, 4), 2);
	assert_int_equal(s[0].status, NC_SRC_REJECTED);
	assert_non_null(strstr(s[0].reason, "refuted"));
	assert_int_equal(s[1].status, NC_SRC_ABSENT);
	assert_int_equal(s[2].status, NC_SRC_AGREES);
	assert_int_equal(s[3].status, NC_SRC_AGREES);
	struct nc_hz_source t[1] = {src("wrong", 2.1e9, 500)};
	assert_int_equal(nc__check_stated(&me, t, 1), 0);
	assert_int_equal(t[0].status, NC_SRC_REJECTED);
}

/* A counter with coarse steps cannot refute a value closer than a step
 * over the window: 3 ns steps over 4 ms allow 0.75 ppm more. */
static void test_step_slack(void **state)
{
	(void)state;
	struct nc_hz_source s = src("crystal", 1e9 / 3, 0);
	struct nc__meas fine = {1e9 / 3 * (1 + 0.9e-6), 0.5, 0};
	struct nc__meas coarse = {1e9 / 3 * (1 + 0.9e-6), 0.5, 0.75};
	double diff, tol;
	assert_false(nc__rate_source_agrees(&s, &fine, &diff, &tol));
	assert_true(nc__rate_source_agrees(&s, &coarse, &diff, &tol));
	assert_true(fabs(tol - 1.25) < 1e-9);
}

/* A rate the user states is used unless measurement contradicts it by
 * more than 1000 ppm (or twice its own uncertainty); its claimed
 * uncertainty is the discrepancy plus the measurement's. */
static void test_user_rate_rule(void **state)
{
	(void)state;
	struct nc__meas m = {2e9, 0.6, 0};
	double claim, diff, tol;
	assert_true(nc__user_rate_ok(2e9 * (1 + 50e-6), &m, 0, &claim, &diff, &tol));
	assert_true(fabs(claim - 50.6) < 1e-6 && fabs(diff - 50) < 1e-6 && tol == 1000);
	/* a wrong unit: refused, unless forced */
	assert_false(nc__user_rate_ok(2e6, &m, 0, &claim, &diff, &tol));
	assert_true(diff < -998000);
	assert_true(nc__user_rate_ok(2e6, &m, 1, &claim, &diff, &tol));
	assert_true(claim > 999000); /* forced, and the claim says how wrong */
	/* a measurement too coarse to judge 1500 ppm widens the tolerance */
	struct nc__meas coarse = {2e9, 900, 0};
	assert_true(nc__user_rate_ok(2e9 * (1 + 1500e-6), &coarse, 0, &claim, &diff, &tol));
	assert_true(tol == 1800);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_rule),
		cmocka_unit_test(test_step_slack),
		cmocka_unit_test(test_user_rate_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
