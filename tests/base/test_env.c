/* SPDX-License-Identifier: MIT */
/* NANOCLOCK_HZ parsing and its effect, and the rule for adopting
 * frequencies stated by the hardware or the OS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"
#include "child.h"
#include "skip.h"
#include "fresh.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
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
 * process).  A malformed NANOCLOCK_HZ is refused: nc_init() says
 * NC_EINVAL, info says why, the measured rate is used. */
static void child_hz_bad(const char *value)
{
	CHECK(nc_init() == NC_EINVAL);
	struct nc_info in;
	nc_get_info(&in);
	CHECK(strncmp(in.hz_env, value, sizeof(in.hz_env) - 1) == 0); /* kept, truncated if long */
	CHECK(strncmp(in.hz_env_status, "refused", 7) == 0);
	CHECK(strcmp(in.hz_source, "env NANOCLOCK_HZ") != 0);
	CHECK(in.hz >= 1e3 && in.hz <= 1e11); /* the clock still works and is sane */
	uint64_t a = nc_now_ns(), b = nc_now_ns();
	CHECK(b >= a);
}

static int calibrated(const struct nc_info *in)
{
	return in->hz_measured > 0; /* not an exact-rate OS clock */
}

/* A well-formed value that measurement contradicts (1 kHz for a counter of
 * MHz or GHz) is refused with NC_EOVERRIDE; an exact-rate OS clock keeps
 * its rate and says so. */
static void child_hz_contradicted(const char *value)
{
	int rc = nc_init();
	struct nc_info in;
	nc_get_info(&in);
	CHECK(strcmp(in.hz_env, value) == 0);
	if (calibrated(&in)) {
		CHECK(rc == NC_EOVERRIDE);
		CHECK(strncmp(in.hz_env_status, "refused: differs from measurement", 33) == 0);
		CHECK(strstr(in.hz_env_status, "NANOCLOCK_HZ_FORCE"));
		CHECK(strcmp(in.hz_source, "env NANOCLOCK_HZ") != 0);
		CHECK(fabs(in.hz - in.hz_measured) / in.hz_measured < 1e-3);
	} else {
		CHECK(rc == 0);
		CHECK(strncmp(in.hz_env_status, "ignored", 7) == 0);
	}
}

/* ... unless forced, spelled out. */
static void child_hz_forced(const char *value)
{
	setenv("NANOCLOCK_HZ_FORCE", "1", 1);
	CHECK(nc_init() == 0);
	struct nc_info in;
	nc_get_info(&in);
	if (calibrated(&in)) {
		CHECK(strcmp(in.hz_source, "env NANOCLOCK_HZ") == 0);
		CHECK(fabs(in.hz - strtod(value, NULL) * 1e3) < 1e-6);
		CHECK(strncmp(in.hz_env_status, "used (forced", 12) == 0);
	}
	/* Unix time follows the system clock, not the imposed rate */
	for (int i = 0; i < 3; i++) {
		CHECK(child_unix_within_stated() == 0);
		struct timespec ts = {0, 300000000};
		nanosleep(&ts, NULL);
	}
}

/* A value within the tolerance is used (the value is set by the parent,
 * 50 ppm from the rate it measured). */
static char close_hz[64];
static void child_hz_close(const char *value)
{
	CHECK(nc_init() == 0);
	struct nc_info in;
	nc_get_info(&in);
	if (calibrated(&in)) {
		CHECK(strcmp(in.hz_source, "env NANOCLOCK_HZ") == 0);
		CHECK(fabs(in.hz - strtod(value, NULL)) < 1e-3);
		CHECK(strncmp(in.hz_env_status, "used: differs", 13) == 0);
		CHECK(in.hz_uncertainty_ppm >= 49); /* the discrepancy is part of it */
	}
}

static void child_calib_bad(const char *value)
{
	setenv("NANOCLOCK_CALIB_PPM", value, 1);
	CHECK(nc_init() == NC_EINVAL);
	struct nc_info in;
	nc_get_info(&in);
	CHECK(strstr(in.calib_status, "NANOCLOCK_CALIB_PPM refused"));
	CHECK(in.calib_target_ppm == 1.0); /* the default stays */
	uint64_t a = nc_now_ns(), b = nc_now_ns();
	CHECK(b >= a);
}

static void child_calib_good(const char *value)
{
	setenv("NANOCLOCK_CALIB_PPM", value, 1);
	setenv("NANOCLOCK_CALIB_MAX_MS", "5", 1);
	CHECK(nc_init() == 0);
	struct nc_info in;
	nc_get_info(&in);
	CHECK(in.calib_target_ppm == strtod(value, NULL));
	CHECK(in.calib_max_ms == 5);
	CHECK(in.calib_status[0] == 0);
	/* the API is closed once initialised */
	CHECK(nc_set_calibration_target(1, 10) == NC_EBUSY);
}

/* nc_set_calibration_target takes effect: a goal no 2 ms can meet
 * (0.001 ppm) with a 2 ms cap stops at the cap, not at the default 20 ms;
 * a loose goal (500 ppm) is met.  Each in fresh processes calibrating on
 * their own; a process preempted past the cap may overrun it by the time
 * it was off its CPU, so the cap is judged over up to 20 of them: one
 * within 2 ms + 0.5 ms (a bracket and the stop's own check) shows it, 20
 * overruns fail (20 ms, the default, would show in all of them).  On a
 * machine busy with a build on both CPUs, 5 tries in a row all overran
 * in a CI run: more tries, not a wider mark. */
/* One cold calibration asked for ppm within max_ms: its window (ms) and,
 * in *active_ms, its active time (ms; the window less what exceeded
 * NC__CALIB_GAP_NS of each gap) */
struct target {
	double ppm, max_ms;
};

/* one_target's child: the window, uncertainty and active time in out */
static size_t target_child(void *arg, void *out, size_t size)
{
	const struct target *t = arg;
	double ppm = t->ppm, max_ms = t->max_ms;
	setenv("NANOCLOCK_SHARED", "off", 1);
	unsetenv("NANOCLOCK_CALIB_PPM");
	unsetenv("NANOCLOCK_CALIB_MAX_MS");
	double *r = out;
	r[0] = r[1] = r[2] = -1;
	/* the first calibration's own window, from the debug log (the
	 * info's window is the latest measurement's: on a machine as slow
	 * as valgrind an epoch ends during nc_init and its longer
	 * baseline replaces the first calibration's) */
	int lp[2];
	if (pipe(lp) != 0)
		_exit(1);
	int saved = dup(2);
	dup2(lp[1], 2);
	setenv("NANOCLOCK_LOG", "stderr:debug", 1);
	int ok = nc_set_calibration_target(0, max_ms) == NC_ERANGE &&
		 nc_set_calibration_target(ppm, 1e9) == NC_ERANGE &&
		 nc_set_calibration_target(ppm, max_ms) == 0 && nc_init() == 0;
	dup2(saved, 2);
	close(lp[1]);
	static char log[65536];
	size_t got = 0;
	ssize_t k;
	while (got < sizeof(log) - 1 && (k = read(lp[0], log + got, sizeof(log) - 1 - got)) > 0)
		got += (size_t)k;
	log[got] = 0;
	const char *w = strstr(log, " brackets over ");
	double first_ms = -1, act_ms = -1;
	if (!w || sscanf(w, " brackets over %lf ms, %lf ms active", &first_ms, &act_ms) != 2)
		first_ms = -1;
	if (ok && strncmp(nc_ticks_per_second_source(), "exact", 5) == 0) {
		r[0] = r[1] = r[2] = -3; /* an OS clock: nothing calibrated */
	} else if (ok) {
		struct nc_info in;
		nc_get_info(&in);
		if (in.calib_target_ppm == ppm && in.calib_max_ms == max_ms &&
		    nc_set_calibration_target(ppm, max_ms) == NC_EBUSY && first_ms >= 0) {
			r[0] = first_ms;
			r[1] = nc_ticks_per_second_uncertainty_ppm();
			r[2] = act_ms;
		}
	}
	return size;
}

static double one_target(double ppm, double max_ms, double *got_ppm, double *active_ms)
{
	struct target t = {ppm, max_ms};
	double r[3];
	int st = 0;
	CHECK(in_fresh_process(target_child, &t, r, sizeof(r), &st) == (ssize_t)sizeof(r));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (r[0] == -3) {
		const char *emu = getenv("NC_TEST_RUN");
		CHILD_SKIP_BECAUSE(emu && emu[0] ? "emulator" : "machine",
				   "the counter here is an OS clock (its rate exact): no calibration to "
				   "target");
	}
	CHECK(r[0] >= 0 && r[2] >= 0); /* the API said what it should */
	*got_ppm = r[1];
	*active_ms = r[2];
	return r[0];
}

/* nc_set_calibration_target taken: a goal no 2 ms can reach stops at the
 * cap, active (a preemption's gap counted as NC__CALIB_GAP_NS, as the
 * library counts it) for less than the cap plus one such gap: the overrun
 * docs/clocks.md states (the bracket in hand, or a preemption's gap) and no
 * more, each time, on a busy machine too; a goal of 500 ppm stops early. */
static void child_calib_target_api(const char *arg)
{
	(void)arg;
	double ppm, act;
	for (int i = 0; i < 5; i++) {
		double w = one_target(0.001, 2, &ppm, &act);
		fprintf(stderr, "case: goal 0.001 ppm, cap 2 ms: window %.3f ms, %.3f ms active, +-%.3g "
			"ppm\n", w, act, ppm);
		CHECK(ppm > 0.001); /* unreachable in 2 ms: it says what it got */
		CHECK(act < 2 + NC__CALIB_GAP_NS / 1e6);
	}
	double w = one_target(500, 50, &ppm, &act);
	fprintf(stderr, "case: goal 500 ppm, cap 50 ms: window %.3f ms, %.3f ms active, +-%.3g ppm\n",
		w, act, ppm);
	CHECK(ppm <= 500 && act < 50);
}

/* Any NANOCLOCK_* variable with a bad value ("VAR=value" in arg): an
 * error code from nc_init(), a reason in nc_get_info() on one line, and a
 * working clock. */
static void child_env_bad(const char *arg)
{
	char var[64];
	const char *eq = strchr(arg, '=');
	CHECK(eq && (size_t)(eq - arg) < sizeof(var));
	memcpy(var, arg, (size_t)(eq - arg));
	var[eq - arg] = 0;
	setenv(var, eq + 1, 1);
	int rc = nc_init();
	CHECK(rc == NC_EINVAL || rc == NC_ENOCOUNTER || rc == NC_ERANGE);
	CHECK(nc_init() == rc); /* stays the answer */
	struct nc_info in;
	CHECK(nc_get_info(&in) == rc);
	const char *why = rc == NC_ENOCOUNTER ? in.counter_error
			  : !strcmp(var, "NANOCLOCK_HZ") ? in.hz_env_status : in.calib_status;
	CHECK(why[0] != 0);
	for (const char *p = why; *p; p++)
		CHECK((unsigned char)*p >= 0x20); /* one line */
	uint64_t a = nc_now_ns();
	struct timespec ts = {0, 1000000};
	nanosleep(&ts, NULL);
	CHECK(nc_now_ns() > a);
}

#define LONG300 \
	"999999999999999999999999999999999999999999999999999999999999999999999999999999999999" \
	"999999999999999999999999999999999999999999999999999999999999999999999999999999999999" \
	"999999999999999999999999999999999999999999999999999999999999999999999999999999999999" \
	"999999999999999999999999999999999999999999999999"
#define ENV_BAD(var, tag, value) {var "_" tag, child_env_bad, var "=" value, NULL, NULL}
#define ENV_BAD_ALL(var)                                                                   \
	ENV_BAD(var, "empty", ""), ENV_BAD(var, "garbage", "garbage"),                     \
		ENV_BAD(var, "negative", "-1"), ENV_BAD(var, "nan", "nan"),                \
		ENV_BAD(var, "huge", "1e400"), ENV_BAD(var, "overlong", LONG300),          \
		ENV_BAD(var, "newline", "1\n2")

static const struct child_case cases[] = {
	ENV_BAD_ALL("NANOCLOCK_COUNTER"),
	ENV_BAD_ALL("NANOCLOCK_HZ_FORCE"),
	ENV_BAD_ALL("NANOCLOCK_CALIB_MAX_MS"),
	ENV_BAD_ALL("NANOCLOCK_UNIX_REFRESH_MS"),
	ENV_BAD("NANOCLOCK_HZ_FORCE", "two", "2"),
	ENV_BAD("NANOCLOCK_HZ", "newline", "2\n9"),
	{"hz_garbage", child_hz_bad, "garbage", NULL, "garbage"},
	{"hz_empty", child_hz_bad, "", NULL, ""},
	{"hz_zero", child_hz_bad, "0", NULL, "0"},
	{"hz_negative", child_hz_bad, "-5", NULL, "-5"},
	{"hz_nan", child_hz_bad, "nan", NULL, "nan"},
	{"hz_inf", child_hz_bad, "inf", NULL, "inf"},
	{"hz_huge", child_hz_bad, "1e200", NULL, "1e200"},
	{"hz_tiny", child_hz_bad, "10", NULL, "10"},
	{"hz_trailing", child_hz_bad, "2e9x", NULL, "2e9x"},
	{"hz_overlong", child_hz_bad,
	 "123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890"
	 "12345678901234567890",
	 NULL,
	 "123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890"
	 "12345678901234567890"},
	{"hz_contradicted", child_hz_contradicted, "1k", NULL, "1k"},
	{"hz_forced", child_hz_forced, "1k", NULL, "1k"},
	{"calib_garbage", child_calib_bad, "fast", NULL, NULL},
	{"calib_negative", child_calib_bad, "-1", NULL, NULL},
	{"calib_nan", child_calib_bad, "nan", NULL, NULL},
	{"calib_huge", child_calib_bad, "1e300", NULL, NULL},
	{"calib_good", child_calib_good, "0.5", NULL, NULL},
	{"calib_target_api", child_calib_target_api, NULL, NULL, NULL},
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

/* test_hz_close's first child: the rate it measured, 50 ppm off, as text */
static size_t hz_child(void *arg, void *out, size_t size)
{
	(void)arg;
	unsetenv("NANOCLOCK_HZ");
	nc_init();
	int n = snprintf(out, size, "%.3f", nc_ticks_per_second() * (1 + 50e-6));
	return n > 0 ? (size_t)n : 0;
}

/* One child measures the rate, the next gets NANOCLOCK_HZ 50 ppm off it
 * (the parent stays uninitialised: children fork from it). */
static void test_hz_close(void **state)
{
	(void)state;
	ssize_t n = in_fresh_process(hz_child, NULL, close_hz, sizeof(close_hz) - 1, NULL);
	assert_true(n > 0);
	close_hz[n] = 0;
	struct child_case c = {"hz_close", child_hz_close, close_hz, NULL, close_hz};
	RUN_CASE(&c);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest plain[] = {cmocka_unit_test(test_parse_good), cmocka_unit_test(test_parse_bad), cmocka_unit_test(test_hz_close)};
	return child_program("test_env", argc, argv, plain, (int)(sizeof(plain) / sizeof(plain[0])), cases,
			     NCASES, NULL, 0);
}
