/* SPDX-License-Identifier: MIT */
/* The stated rate uncertainty under real contention: rounds of
 * 20 fresh processes (this program executed again, as programs start)
 * calibrate at the same moment (NANOCLOCK_SHARED=off) while a busy loop
 * runs on every CPU, and each one's rate must lie within what it states,
 * judged against a reference this test measures over the whole run.
 *
 * The reference is the counter over CLOCK_MONOTONIC_RAW between the
 * narrowest of many brackets at the start and at the end, read by a
 * process of its own (this one never initialises the library: its forks
 * must not inherit it).  Its error is bounded, not estimated: the counter
 * read lies inside each bracket, so the rate is off by at most half the
 * two widths (plus the clock's 1 ns) over the span.
 * A rate is within when |error| + that bound <= its stated uncertainty,
 * outside when |error| - the bound > it, and undecided between: then the
 * reference is extended (a longer span shrinks the bound) until each is
 * decided, or the case fails; it never passes a rate it cannot place.
 *
 * What is asserted is what the manual states for contention
 * (docs/clocks.md's limits, docs/guarantees.md): the uncertainty is a 4-sigma figure, and
 * under this load at most 1 rate in 1000 lies outside it, none beyond 1.5
 * times it (measured: 4 of 12,640, 1.12 times at worst; then, a busier
 * day, 11 of 2,080, 1.64 times, fixed by the t factor in calibrate.c: 3 of
 * 2,880 since, 1.23 times at worst).  So no rate
 * beyond 1.5 times, and at most 2 of the 160 outside: at 1 in 1000 three
 * or more come in fewer than 1 run in 1000 (Poisson, mean 0.16), at the
 * measured rate in 1 in 50,000; a claim wrong by a factor shows as many.
 *
 * 160 rates in about 6 s (the span the reference needs to be fine enough).
 * The large counts are scripts/calib-spread's (1200 per run there).  Not
 * run under an emulator or valgrind, whose counter and scheduling are not
 * the machine's (docs/clocks.md: a known limit there). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "skip.h"

#include "nanoclock.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { AT_ONCE = 20, ROUNDS = 8, MAX_BUSY = 64 };

/* one process's rate */
struct rate {
	double hz, ppm;
	char source[16], counter[32];
};

/* one end of the reference: the narrowest bracket of raw, counter, raw */
struct end {
	double raw, width; /* the bracket's middle and width, ns */
	uint64_t ticks;
	char counter[32];
};

static int64_t raw_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void take_end(struct end *e)
{
	e->width = INFINITY;
	for (int i = 0; i < 2000; i++) {
		int64_t a = raw_ns();
		uint64_t t = nc_ticks_begin();
		int64_t b = raw_ns();
		if ((double)(b - a) < e->width) {
			e->width = (double)(b - a);
			e->raw = ((double)a + (double)b) / 2;
			e->ticks = t;
		}
	}
	snprintf(e->counter, sizeof(e->counter), "%s", nc_counter_name());
}

static void put(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		_exit(3);
}

static int get(int fd, void *p, size_t n) { return read(fd, p, n) == (ssize_t)n; }

/* The reference process: an end at once, then one more each time it is
 * asked (a byte on cmd), until cmd closes. */
static pid_t start_reference(int *cmd, int *ends)
{
	int c[2], e[2];
	assert_int_equal(pipe(c), 0);
	assert_int_equal(pipe(e), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(c[1]);
		close(e[0]);
		setenv("NANOCLOCK_SHARED", "off", 1);
		nc_init();
		struct end x;
		char b;
		do {
			take_end(&x);
			put(e[1], &x, sizeof(x));
		} while (read(c[0], &b, 1) == 1);
		_exit(0);
	}
	close(c[0]);
	close(e[1]);
	*cmd = c[1];
	*ends = e[0];
	return pid;
}

/* A calibrating process (this program again, as a program starts: exec,
 * the loader, a first call): waits until fd go closes, calibrates
 * (nc_init) and writes what it measured to fd res. */
static int one_calibration(int go, int res)
{
	alarm(60);
	char b;
	if (read(go, &b, 1) != 0) /* closed: go */
		return 2;
	nc_init();
	struct rate r;
	memset(&r, 0, sizeof(r));
	r.hz = nc_ticks_per_second();
	r.ppm = nc_ticks_per_second_uncertainty_ppm();
	snprintf(r.source, sizeof(r.source), "%s", nc_ticks_per_second_source());
	snprintf(r.counter, sizeof(r.counter), "%s", nc_counter_name());
	put(res, &r, sizeof(r)); /* (one write, below PIPE_BUF: whole) */
	return 0;
}

/* One round: AT_ONCE fresh processes wait at a pipe, are let go together,
 * and each calibrates and says what it measured. */
static int round_of(struct rate *out)
{
	int go[2], res[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(res), 0);
	pid_t kids[AT_ONCE];
	for (int i = 0; i < AT_ONCE; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0) {
			close(go[1]);
			close(res[0]);
			char a[16], b[16];
			snprintf(a, sizeof(a), "%d", go[0]);
			snprintf(b, sizeof(b), "%d", res[1]);
			setenv("NANOCLOCK_SHARED", "off", 1);
			execl("/proc/self/exe", "test_contention", "--one-calibration", a, b, (char *)NULL);
			_exit(127);
		}
	}
	close(go[0]);
	close(res[1]);
	close(go[1]); /* all at once */
	int n = 0;
	while (n < AT_ONCE && get(res[0], &out[n], sizeof(out[n])))
		n++;
	close(res[0]);
	for (int i = 0; i < AT_ONCE; i++) {
		int st;
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fail_msg("a calibrating process ended with status 0x%x", st);
	}
	assert_int_equal(n, AT_ONCE);
	return n;
}

static void test_at_once_on_busy_cpus(void **state)
{
	(void)state;
	const char *emu = getenv("NC_TEST_RUN");
	if ((emu && emu[0]) || getenv("NC_TEST_VALGRIND")) {
		SKIP(emu && emu[0] ? "emulator" : "valgrind",
		     "under an emulator or valgrind: not the machine's contention");
	}
	static struct rate r[AT_ONCE * ROUNDS];
	int cmd, ends;
	pid_t ref = start_reference(&cmd, &ends);
	struct end e0, e1;
	assert_true(get(ends, &e0, sizeof(e0)));
	int64_t t0 = raw_ns();

	/* a busy loop on every CPU, all along */
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int nbusy = ncpu < 1 ? 1 : ncpu > MAX_BUSY ? MAX_BUSY : (int)ncpu;
	pid_t busy[MAX_BUSY];
	for (int i = 0; i < nbusy; i++) {
		busy[i] = fork();
		assert_true(busy[i] >= 0);
		if (busy[i] == 0) {
			alarm(120);
			for (volatile unsigned long x = 0;; x++)
				;
		}
	}
	int n = 0;
	for (int k = 0; k < ROUNDS; k++)
		n += round_of(r + n);
	for (int i = 0; i < nbusy; i++) {
		kill(busy[i], SIGKILL);
		waitpid(busy[i], NULL, 0);
	}

	int measured = 0, within = 0, outside = 0, undecided = 0, beyond = 0;
	double worst = 0, worst_err = 0, worst_ppm = 0, bound = 0, ref_hz = 0;
	for (double span_s = 6; span_s <= 48; span_s *= 2) {
		/* a span of span_s seconds at least, for a bound well below the
		 * statements (more when some rate could not be placed) */
		int64_t wait = t0 + (int64_t)(span_s * 1e9) - raw_ns();
		if (wait > 0) {
			struct timespec ts = {(time_t)(wait / 1000000000), (long)(wait % 1000000000)};
			nanosleep(&ts, NULL);
		}
		assert_int_equal(write(cmd, "x", 1), 1);
		assert_true(get(ends, &e1, sizeof(e1)));
		if (strcmp(e0.counter, "clock_monotonic_raw") == 0 || e1.ticks <= e0.ticks) {
			printf("  the reference's counter is %s: nothing to calibrate\n", e0.counter);
			break;
		}
		double span = e1.raw - e0.raw;
		ref_hz = (double)(e1.ticks - e0.ticks) / span * 1e9;
		bound = ((e0.width + e1.width) / 2 + 1) / span * 1e6;
		measured = within = outside = undecided = beyond = 0;
		worst = 0;
		for (int i = 0; i < n; i++) {
			if (strcmp(r[i].source, "measured") != 0 || strcmp(r[i].counter, e0.counter) != 0)
				continue; /* an OS clock (a calibration that failed): exact */
			measured++;
			double err = (r[i].hz / ref_hz - 1) * 1e6;
			if (fabs(err) + bound <= r[i].ppm)
				within++;
			else if (fabs(err) - bound > r[i].ppm)
				outside++;
			else
				undecided++;
			if (fabs(err) / r[i].ppm > worst) {
				worst = fabs(err) / r[i].ppm;
				worst_err = err;
				worst_ppm = r[i].ppm;
			}
			if (fabs(err) - bound > 1.5 * r[i].ppm)
				beyond++;
			if (fabs(err) - bound > r[i].ppm)
				printf("  %+.4f ppm outside its stated +-%.4f (reference +-%.5f)\n", err,
				       r[i].ppm, bound);
		}
		printf("  %d at once, %d rounds, %d busy loops; reference %.3f Hz +-%.5f ppm over %.1f "
		       "s: %d of %d rates within their stated uncertainty, %d outside, %d undecided; "
		       "worst |error|/stated %.3f (%+.4f ppm stated %.4f)\n",
		       AT_ONCE, ROUNDS, nbusy, ref_hz, bound, span / 1e9, within, measured, outside,
		       undecided, worst, worst_err, worst_ppm);
		if (beyond || !undecided)
			break;
	}
	close(cmd);
	close(ends);
	waitpid(ref, NULL, 0);
	if (ref_hz == 0)
		SKIP("machine", "the counter is an OS clock here: no rate is calibrated");
	if (beyond)
		fail_msg("%d rates beyond 1.5 times their stated uncertainty", beyond);
	assert_int_equal(undecided, 0);
	if (outside > 2)
		fail_msg("%d of %d rates outside their stated uncertainty: more than 1 in 1000 "
			 "allows (3 or more in fewer than 1 run in 1000)",
			 outside, measured);
	/* most of them measured the machine's counter (an OS clock is for a
	 * calibration that failed outright) */
	assert_true(measured >= n * 9 / 10);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--one-calibration") == 0)
		return one_calibration(atoi(argv[2]), atoi(argv[3]));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_at_once_on_busy_cpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
