/* NANOCLOCK_HZ parsing and its effect, and the rule for adopting
 * frequencies stated by the hardware or the OS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"
#include "child.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_parse_good(void **state)
{
	(void)state;
	struct {
		const char *s;
		double hz;
	} ok[] = {{"2100000000", 2.1e9}, {"2.1e9", 2.1e9},  {"2.1G", 2.1e9},   {"2100MHz", 2.1e9},
		  {"24 MHz", 24e6},      {" 1000 ", 1000}, {"+3.5GHz", 3.5e9}, {"100G", 1e11},
		  {"1k", 1000},          {".5G", 5e8},     {"19.2M", 19.2e6}};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		double hz = 0;
		char why[96] = "";
		int rc = nc__parse_hz(ok[i].s, &hz, why, sizeof(why));
		if (rc != 0)
			fail_msg("'%s' refused: %s", ok[i].s, why);
		assert_true(fabs(hz - ok[i].hz) <= ok[i].hz * 1e-12);
	}
}

static void test_parse_bad(void **state)
{
	(void)state;
	const char *bad[] = {"",     "   ",   "abc",    "2.1GHz!", "-2e9",  "0",    "nan",
			     "NaN",  "inf",   "-inf",   "1e400",   "999",   "0.5k", "1e12",
			     "0x1p31", "2e9 2e9", "2..1", "G",     "1e-300", "100.1G"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		double hz = 12345;
		char why[96] = "";
		int rc = nc__parse_hz(bad[i], &hz, why, sizeof(why));
		if (rc == 0)
			fail_msg("'%s' accepted as %g", bad[i], hz);
		assert_true(rc == NC_EINVAL || rc == NC_ERANGE);
		assert_true(strlen(why) > 0); /* a reason for nanoclock info */
		assert_true(hz == 12345);     /* untouched */
	}
	double hz;
	char why[8];
	assert_int_equal(nc__parse_hz(NULL, &hz, why, sizeof(why)), NC_EINVAL);
}

/* End to end, in a process of its own (initialisation happens once a
 * process): a bad NANOCLOCK_HZ is ignored with a reason, a good one used. */
static void child_hz_bad(const char *value)
{
	CHECK(nc_init() == 0);
	struct nc_info in;
	nc_get_info(&in);
	CHECK(strcmp(in.hz_env, value) == 0);
	CHECK(strncmp(in.hz_env_status, "ignored", 7) == 0);
	CHECK(strcmp(in.hz_source, "env NANOCLOCK_HZ") != 0);
	CHECK(in.hz >= 1e3 && in.hz <= 1e11); /* the clock still works and is sane */
	uint64_t a = nc_now_ns(), b = nc_now_ns();
	CHECK(b >= a);
}

static void child_hz_good(const char *value)
{
	double want = strtod(value, NULL) * (strchr(value, 'G') ? 1e9 : 1);
	CHECK(nc_init() == 0);
	struct nc_info in;
	nc_get_info(&in);
	CHECK(strcmp(in.hz_env, value) == 0);
	if (in.candidates[0].name[0] && strcmp(in.counter, "tsc") == 0) {
		CHECK(strcmp(in.hz_source, "env NANOCLOCK_HZ") == 0);
		CHECK(fabs(in.hz - want) < 1e-3);
		CHECK(strncmp(in.hz_env_status, "used", 4) == 0);
	} else {
		/* exact-rate OS clocks keep their rate: said so */
		CHECK(in.hz_env_status[0] != 0);
	}
}

static const struct child_case cases[] = {
	{"hz_garbage", child_hz_bad, "garbage", NULL, "garbage"},
	{"hz_empty", child_hz_bad, "", NULL, ""},
	{"hz_zero", child_hz_bad, "0", NULL, "0"},
	{"hz_negative", child_hz_bad, "-5", NULL, "-5"},
	{"hz_nan", child_hz_bad, "nan", NULL, "nan"},
	{"hz_inf", child_hz_bad, "inf", NULL, "inf"},
	{"hz_huge", child_hz_bad, "1e200", NULL, "1e200"},
	{"hz_tiny", child_hz_bad, "10", NULL, "10"},
	{"hz_trailing", child_hz_bad, "2e9x", NULL, "2e9x"},
	{"hz_good_unit", child_hz_good, "2.5GHz", NULL, "2.5GHz"},
	{"hz_good_plain", child_hz_good, "1234567890", NULL, "1234567890"},
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

static void run_child_case(void **state)
{
	const struct child_case *c = *state;
	RUN_CASE(c);
}

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
	int a = nc__adopt_stated(m, 1.0, s, 4);
	assert_int_equal(a, 2);
	assert_int_equal(s[0].status, NC_SRC_REJECTED);
	assert_non_null(strstr(s[0].reason, "disagrees"));
	assert_int_equal(s[1].status, NC_SRC_ABSENT);
	assert_int_equal(s[2].status, NC_SRC_ADOPTED);
	assert_int_equal(s[3].status, NC_SRC_AGREES);
	/* nothing agrees: measurement stays */
	struct nc_hz_source t[1] = {src("wrong", 2.1e9, 500)};
	assert_int_equal(nc__adopt_stated(m, 1.0, t, 1), -1);
	assert_int_equal(t[0].status, NC_SRC_REJECTED);
}

int main(int argc, char **argv)
{
	int rc = child_main(argc, argv, cases, NCASES);
	if (rc >= 0)
		return rc;
	struct CMUnitTest tests[NCASES + 3] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_adopt_rule),
	};
	for (int i = 0; i < NCASES; i++) {
		struct CMUnitTest t = {cases[i].name, run_child_case, NULL, NULL, (void *)&cases[i]};
		tests[3 + i] = t;
	}
	return _cmocka_run_group_tests("test_env", tests, NCASES + 3, NULL, NULL);
}
