/* NANOCLOCK_HZ parsing and its effect, and the rule for adopting
 * frequencies stated by the hardware or the OS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"

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

/* End to end in a child process (initialisation happens once a process):
 * the child sets NANOCLOCK_HZ, initialises and reports through its exit
 * code. 0 = as expected. */
static int child_with(const char *value, int expect_used, double expect_hz)
{
	pid_t pid = fork();
	if (pid == 0) {
		setenv("NANOCLOCK_HZ", value, 1);
		if (nc_init() != 0)
			_exit(10);
		struct nc_info in;
		nc_get_info(&in);
		if (strcmp(in.hz_env, value) != 0)
			_exit(11);
		if (expect_used) {
			if (strcmp(in.hz_source, "env NANOCLOCK_HZ") != 0 &&
			    strcmp(in.counter, "tsc") == 0)
				_exit(12);
			if (strcmp(in.counter, "tsc") == 0 && fabs(in.hz - expect_hz) > 1e-3)
				_exit(13);
		} else {
			if (strncmp(in.hz_env_status, "ignored", 7) != 0)
				_exit(14);
			if (strcmp(in.hz_source, "env NANOCLOCK_HZ") == 0)
				_exit(15);
			/* the clock still works and is sane */
			if (!(in.hz >= 1e3 && in.hz <= 1e11))
				_exit(16);
		}
		uint64_t a = nc_now_ns(), b = nc_now_ns();
		_exit(b >= a ? 0 : 17);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static void test_env_end_to_end(void **state)
{
	(void)state;
	const char *bad[] = {"garbage", "", "0", "-5", "nan", "inf", "1e200", "10", "2e9x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = child_with(bad[i], 0, 0);
		if (rc != 0)
			fail_msg("NANOCLOCK_HZ='%s': child status %d", bad[i], rc);
	}
	assert_int_equal(child_with("2.5GHz", 1, 2.5e9), 0);
	assert_int_equal(child_with("1234567890", 1, 1234567890.0), 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_env_end_to_end),
		cmocka_unit_test(test_adopt_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
