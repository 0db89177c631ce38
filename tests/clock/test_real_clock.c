/* SPDX-License-Identifier: MIT */
/* The promises on the real kernel, while the system clock is disturbed as
 * NTP, chrony, an administrator or a user's environment disturb it.
 * `make check` (the clock left alone):
 *   - NANOCLOCK_HZ states a rate 50 ppm off the counter's: nc_now_ns keeps
 *     CLOCK_MONOTONIC_RAW's rate;
 *   - NANOCLOCK_HZ_FORCE=1 with a rate 2000 ppm off: kept, and nc_now_ns
 *     still on CLOCK_MONOTONIC_RAW.
 * `make check-destructive` (--destructive, tests/destructive.h; root):
 *   - the kernel's frequency changed with adjtimex (ADJ_FREQUENCY): the
 *     bound nc_get_unix_status states holds at every sample;
 *   - the gettimeofday counter while the system clock is set back:
 *     nc_now_ns never decreases;
 *   - a real clock_settime followed by the upkeep thread.
 * Whatever a destructive case does, the parent puts the clock back (the
 * frequency as it was, a step undone), and the script the kernel's whole
 * NTP state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "clocklock.h"
#include "destructive.h"
#include "skip.h"

#include "nanoclock.h"
#include "nanoclock_info.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SKIP_STATUS 77

static int64_t clk(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int can_set_time(void)
{
	struct timex tx;
	memset(&tx, 0, sizeof(tx));
	if (adjtimex(&tx) < 0)
		return 0;
	long freq = tx.freq;
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_FREQUENCY;
	tx.freq = freq; /* the same value: a harmless write that needs the capability */
	return adjtimex(&tx) >= 0;
}

/* Runs fn in a child; the parent restores the clock afterwards.  The child
 * says in *shared how far it stepped the clock (ns), for the parent to undo. */
static volatile int64_t *stepped_ns;

/* Two runs of this program at once (two build trees, a CI matrix) would
 * each restore what the other set: they take turns. */
static int take_turn(void)
{
	int fd = open("/tmp/nanoclock-test-real-clock.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd >= 0)
		flock(fd, LOCK_EX);
	return fd;
}

/* 1 in the destructive run: only there does a case write the clock */
static int destructive;

static int in_child(void (*fn)(void), const char *env_name, const char *env_value,
		    const char *env2_name, const char *env2_value)
{
	const char *emu = getenv("NC_TEST_RUN");
	if (emu && emu[0]) {
		/* an emulated read takes microseconds, so the samples' two reads
		 * are far apart; the code under test is the same natively */
		SKIP("emulator", "the real kernel's clock is tested natively");
	}
	int turn = destructive ? take_turn() : -1;
	struct timex saved;
	memset(&saved, 0, sizeof(saved));
	adjtimex(&saved);
	*stepped_ns = 0;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		if (env_name)
			setenv(env_name, env_value, 1);
		if (env2_name)
			setenv(env2_name, env2_value, 1);
		fn();
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	struct timex tx;
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_FREQUENCY | ADJ_TICK;
	tx.freq = saved.freq;
	tx.tick = saved.tick;
	if (destructive && adjtimex(&tx) < 0 && errno != EPERM)
		fprintf(stderr, "could not restore the kernel's frequency: %s\n", strerror(errno));
	if (destructive && *stepped_ns != 0) {
		struct timespec ts;
		int64_t r = clk(CLOCK_REALTIME) - *stepped_ns;
		ts.tv_sec = r / 1000000000;
		ts.tv_nsec = r % 1000000000;
		clock_settime(CLOCK_REALTIME, &ts);
	}
	if (turn >= 0)
		close(turn);
	if (!WIFEXITED(st))
		fail_msg("case killed by signal %d", WTERMSIG(st));
	if (WEXITSTATUS(st) == SKIP_STATUS)
		skip(); /* the case said why (SKIP[...] line) */
	return WEXITSTATUS(st);
}

#define CHECK(c)                                                                      \
	do {                                                                          \
		if (!(c)) {                                                           \
			fprintf(stderr, "case: %s:%d: %s\n", __FILE__, __LINE__, #c); \
			_exit(1);                                                     \
		}                                                                     \
	} while (0)

/* ---- the kernel's frequency changes ---- */
static double freq_ppm;

static void freq_case(void)
{
	if (!can_set_time()) {
		CHILD_SKIP_BECAUSE("root", "adjtimex(ADJ_FREQUENCY) needs CAP_SYS_TIME");
	}
	nc_init();
	int outside = 0, n = 0, retaken = 0;
	double worst = 0, worst_bound = 0;
	int64_t start = clk(CLOCK_MONOTONIC_RAW), changed = 0;
	for (;;) {
		int64_t now = clk(CLOCK_MONOTONIC_RAW) - start;
		if (now > 4000000000LL)
			break;
		if (!changed && now > 1000000000LL) {
			struct timex tx;
			memset(&tx, 0, sizeof(tx));
			adjtimex(&tx);
			long f = tx.freq + (long)(freq_ppm * 65536);
			memset(&tx, 0, sizeof(tx));
			tx.modes = ADJ_FREQUENCY;
			tx.freq = f;
			CHECK(adjtimex(&tx) >= 0);
			changed = now;
		}
		/* The bound is the one stated after the read: within a tie it
		 * only grows (here by at least the changed 500 ppm of the time
		 * since the tie), so one stated before the read is too narrow by
		 * that growth over any delay between the two (under ASan a
		 * sample 0.4 s into a tie was outside by 736 ns, a delay of
		 * ~1.5 ms).  A tie between the read and the status: the sample
		 * is taken again. */
		struct nc_unix_status st0, st;
		CHECK(nc_get_unix_status(&st0) == 0);
		int64_t a = clk(CLOCK_REALTIME);
		int64_t u = nc_unix_ns();
		int64_t b = clk(CLOCK_REALTIME);
		CHECK(nc_get_unix_status(&st) == 0);
		if (st.refreshes != st0.refreshes || st.steps != st0.steps) {
			retaken++;
			continue;
		}
		/* REALTIME is known between a and b: the bracket's half-width adds */
		double e = fabs((double)(u - (a + (b - a) / 2))), hw = (double)(b - a) / 2;
		if (e > st.tie_error_ns + hw) {
			outside++;
			if (outside <= 3)
				fprintf(stderr, "  at %.6f s (change at %.6f s): off %.0f ns, stated %.0f + %.0f "
					"ns (tie %.6f s old, +-%.0f ns, %u ties)\n", (double)now / 1e9,
					(double)changed / 1e9, e, st.tie_error_ns, hw, st.tie_age_s,
					st.tie_halfwidth_ns, st.refreshes);
		}
		if (e > worst) {
			worst = e;
			worst_bound = st.tie_error_ns + hw;
		}
		n++;
		struct timespec d = {0, 500000};
		nanosleep(&d, NULL);
	}
	fprintf(stderr, "  kernel frequency %+.0f ppm: %d of %d samples outside the stated bound; "
		"worst %.0f ns (stated %.0f); %d taken again (a tie between the read and its "
		"status)\n", freq_ppm, outside, n, worst, worst_bound, retaken);
	CHECK(outside == 0);
	CHECK(retaken < n / 10); /* ties are a second apart: a few, not most */
}

static void test_kernel_freq(void **state)
{
	freq_ppm = *(double *)*state;
	assert_int_equal(in_child(freq_case, NULL, NULL, NULL, NULL), 0);
}

/* ---- a stated or forced rate ---- */
static double measured_hz(void)
{
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		nc_init();
		double hz = nc_ticks_per_second();
		ssize_t w = write(fd[1], &hz, sizeof(hz));
		_exit(w == (ssize_t)sizeof(hz) ? 0 : 1);
	}
	double hz = 0;
	ssize_t r = read(fd[0], &hz, sizeof(hz));
	waitpid(pid, NULL, 0);
	close(fd[0]);
	close(fd[1]);
	assert_int_equal(r, sizeof(hz));
	return hz;
}

/* nc_now_ns - CLOCK_MONOTONIC_RAW, read between two reads of the latter */
static double now_offset(void)
{
	double best = 1e30, off = 0;
	for (int i = 0; i < 16; i++) {
		int64_t a = clk(CLOCK_MONOTONIC_RAW);
		uint64_t n = nc_now_ns();
		int64_t b = clk(CLOCK_MONOTONIC_RAW);
		if ((double)(b - a) < best) {
			best = (double)(b - a);
			off = (double)(int64_t)(n - (uint64_t)(a + (b - a) / 2));
		}
	}
	return off;
}

static void stated_case(void)
{
	nc_init();
	struct nc_info in;
	nc_get_info(&in);
	fprintf(stderr, "  NANOCLOCK_HZ=%s: %s; source %s\n", in.hz_env, in.hz_env_status, in.hz_source);
	CHECK(strcmp(in.hz_source, "env NANOCLOCK_HZ") == 0);
	struct timespec d = {1, 0};
	nanosleep(&d, NULL);
	double o1 = now_offset();
	d.tv_sec = 5;
	nanosleep(&d, NULL);
	double o2 = now_offset();
	nc_get_info(&in);
	fprintf(stderr, "  nc_now_ns - MONOTONIC_RAW: %+.0f ns at 1 s, %+.0f ns at 6 s (%+.2f ppm); "
		"%u jumps, %u rate changes\n", o1, o2, (o2 - o1) / 5e3, in.events.counter_jumps,
		in.events.rate_changes);
	/* on MONOTONIC_RAW's rate: a few ppm of measurement, not the 50 stated */
	CHECK(fabs(o2 - o1) < 5 * 5e3);
	CHECK(fabs(o2) < 50e3);
	CHECK(in.events.counter_jumps == 0);
}

static void test_stated_rate(void **state)
{
	(void)state;
	double hz = measured_hz();
	char v[64];
	snprintf(v, sizeof(v), "%.3f", hz * (1 + 50e-6));
	assert_int_equal(in_child(stated_case, "NANOCLOCK_HZ", v, NULL, NULL), 0);
}

static double forced_hz;
static void forced_case(void)
{
	nc_init();
	struct timespec d = {3, 0};
	nanosleep(&d, NULL);
	struct nc_info in;
	nc_get_info(&in);
	double o = now_offset();
	fprintf(stderr, "  forced %.3f Hz: %s; in use %.3f Hz (%s); %u jumps, %u rate changes; "
		"nc_now_ns - MONOTONIC_RAW %+.0f ns\n", forced_hz, in.hz_env_status, in.hz,
		in.hz_source, in.events.counter_jumps, in.events.rate_changes, o);
	CHECK(strcmp(in.hz_source, "env NANOCLOCK_HZ") == 0);
	CHECK(fabs(in.hz / forced_hz - 1) < 1e-9);
	CHECK(strstr(in.hz_env_status, "forced"));
	CHECK(in.events.counter_jumps == 0 && in.events.rate_changes == 0);
	CHECK(fabs(o) < 50e3);
}

static void test_forced_rate(void **state)
{
	(void)state;
	forced_hz = measured_hz() * (1 + 2000e-6);
	char v[64];
	snprintf(v, sizeof(v), "%.3f", forced_hz);
	assert_int_equal(in_child(forced_case, "NANOCLOCK_HZ", v, "NANOCLOCK_HZ_FORCE", "1"), 0);
}

/* ---- the gettimeofday counter while the clock is set ---- */
static void set_relative(int64_t ns)
{
	int64_t r = clk(CLOCK_REALTIME) + ns;
	struct timespec ts = {(time_t)(r / 1000000000), (long)(r % 1000000000)};
	CHECK(clock_settime(CLOCK_REALTIME, &ts) == 0);
	*stepped_ns += ns;
}

static void gtod_case(void)
{
	struct timespec probe;
	clock_gettime(CLOCK_REALTIME, &probe);
	if (clock_settime(CLOCK_REALTIME, &probe) != 0) {
		CHILD_SKIP_BECAUSE("root", "setting the clock needs CAP_SYS_TIME");
	}
	nc_init();
	CHECK(strcmp(nc_counter_name(), "gettimeofday") == 0);
	uint64_t last = nc_now_ns(), worst_back = 0;
	struct timespec d = {1, 200000000}; /* into the clock's life: a step back lands inside it */
	nanosleep(&d, NULL);
	long backs = 0;
	for (int phase = 0; phase < 3; phase++) {
		if (phase == 1)
			set_relative(-1000000000LL);
		if (phase == 2)
			set_relative(1000000000LL);
		for (int i = 0; i < 20000; i++) {
			uint64_t n = nc_now_ns();
			if (n < last) {
				backs++;
				if (last - n > worst_back)
					worst_back = last - n;
			}
			last = n;
		}
	}
	double o = now_offset();
	fprintf(stderr, "  gettimeofday counter, clock set back 1 s and forward: %ld decreases "
		"(worst %llu ns); nc_now_ns - MONOTONIC_RAW %+.0f ns\n", backs,
		(unsigned long long)worst_back, o);
	CHECK(backs == 0);
	CHECK(fabs(o) < 50e3);
}

/* ---- a real clock_settime, followed by the upkeep thread ---- */
/* The refresh period is a minute, so no read re-ties: only the upkeep
 * thread's timerfd (TFD_TIMER_CANCEL_ON_SET) sees the set.  Each of 6 sets
 * (+2 s, -2 s, ...) is followed when nc_unix_ns() is back within its
 * stated tie error (nc_get_unix_status) of CLOCK_REALTIME; the time from
 * clock_settime's return to that is the latency.  Stated (man 3): within
 * microseconds when the upkeep thread's CPU is free, and on a busy one
 * as soon as the scheduler runs it. */
static void settime_case(void)
{
	struct timespec probe;
	clock_gettime(CLOCK_REALTIME, &probe);
	if (clock_settime(CLOCK_REALTIME, &probe) != 0)
		CHILD_SKIP_BECAUSE("root", "setting the clock needs CAP_SYS_TIME");
	CHECK(nc_init() == 0);
	CHECK(nc_upkeep_start() == 0);
	struct nc_info in;
	nc_get_info(&in);
	if (in.upkeep_note[0]) {
		fprintf(stderr, "case: the upkeep thread runs without a timerfd here: %s\n", in.upkeep_note);
		_exit(1);
	}
	(void)nc_unix_ns();
	struct timespec d = {0, 100000000};
	nanosleep(&d, NULL);
	double best = INFINITY, worst = 0;
	for (int k = 0; k < 6; k++) {
		set_relative(k % 2 ? -2000000000LL : 2000000000LL);
		int64_t t0 = clk(CLOCK_MONOTONIC), t1 = 0;
		while (clk(CLOCK_MONOTONIC) - t0 < 2000000000) {
			int64_t a = clk(CLOCK_REALTIME);
			int64_t u = nc_unix_ns();
			int64_t b = clk(CLOCK_REALTIME);
			struct nc_unix_status st;
			nc_get_unix_status(&st);
			if (u >= a - st.tie_error_ns - 1 && u <= b + st.tie_error_ns + 1) {
				t1 = clk(CLOCK_MONOTONIC);
				break;
			}
		}
		CHECK(t1 != 0); /* followed within 2 s, or never */
		double us = (double)(t1 - t0) / 1e3;
		if (us < best)
			best = us;
		if (us > worst)
			worst = us;
		nanosleep(&d, NULL);
	}
	fprintf(stderr, "  6 real sets of the clock (+-2 s) followed by the upkeep thread in %.1f to "
		"%.1f us (from clock_settime's return to nc_unix_ns within its tie error)\n",
		best, worst);
	CHECK(best < 1000);
	nc_upkeep_stop(); /* its eventfd and timerfd closed (valgrind counts what is open at exit) */
}

static void test_upkeep_follows_settime(void **state)
{
	(void)state;
	assert_int_equal(in_child(settime_case, "NANOCLOCK_UNIX_REFRESH_MS", "60000", NULL, NULL), 0);
}

static void test_gettimeofday_steps(void **state)
{
	(void)state;
	assert_int_equal(in_child(gtod_case, "NANOCLOCK_COUNTER", "gettimeofday", NULL, NULL), 0);
}

int main(int argc, char **argv)
{
	destructive = destructive_mode(argc, argv);
	if (destructive < 0)
		return 2;
	stepped_ns = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (stepped_ns == MAP_FAILED)
		return 1;
	if (!destructive) {
		const struct CMUnitTest tests[] = {
			cmocka_unit_test(test_stated_rate),
			cmocka_unit_test(test_forced_rate),
		};
		return cmocka_run_group_tests(tests, NULL, NULL);
	}
	/* it changes the kernel's clock: no other suite's test takes
	 * CLOCK_REALTIME for the truth meanwhile (held to the end) */
	if (can_set_time())
		clock_lock(1);
	static double p10 = 10, m100 = -100, p500 = 500, m500 = -500;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_kernel_freq, &p10),
		cmocka_unit_test_prestate(test_kernel_freq, &m100),
		cmocka_unit_test_prestate(test_kernel_freq, &p500),
		cmocka_unit_test_prestate(test_kernel_freq, &m500),
		cmocka_unit_test(test_gettimeofday_steps),
		cmocka_unit_test(test_upkeep_follows_settime),
	};
	return cmocka_run_group_tests_name("test_real_clock --destructive", tests, NULL, NULL);
}
