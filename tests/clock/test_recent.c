/* SPDX-License-Identifier: MIT */
/* The coarse clock (nc_recent_ns, src/clock/recent.c): what nanoclock.h
 * states of it, each in a fresh process:
 *   - without the upkeep thread it is a full read (ticking 0);
 *   - with it, once asked, it ticks: every value is never newer than
 *     nc_now_ns() and never older than the period plus the largest
 *     lateness of a tick the status then states (the rate's stated
 *     uncertainty between the two clocks allowed for), and never behind a
 *     value the same thread was handed, on four threads at once;
 *   - the thread stopped, and in a forked child (no thread there): full
 *     reads again, never behind what the thread was handed;
 *   - nc_recent_unix_ns is nc_unix_ns at the same tick. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "nanoclock.h"
#include "child.h"
#include "skip.h"

#include <pthread.h>
#include <sys/wait.h>

static void wait_ticking(int want)
{
	struct nc_recent_status st;
	for (int i = 0; i < 300; i++) {
		(void)nc_recent_ns();
		CHECK(nc_get_recent_status(&st) == 0);
		if (st.ticking == want)
			return;
		usleep(10000);
	}
	fprintf(stderr, "case: ticking never became %d\n", want);
	CHECK(0);
}

static void case_no_thread(const char *arg)
{
	(void)arg;
	uint64_t prev = 0;
	for (int i = 0; i < 100000; i++) {
		uint64_t a = nc_now_ns(), r = nc_recent_ns(), b = nc_now_ns();
		CHECK(a <= r && r <= b && r >= prev);
		prev = r;
	}
	struct nc_recent_status st;
	CHECK(nc_get_recent_status(&st) == 0 && st.ticking == 0 && st.ticks == 0);
	CHECK(nc_get_recent_status(NULL) == NC_EINVAL);
}

#define SAMPLES 200000
struct sampler {
	uint64_t worst_stale; /* nc_now_ns() before a read, less the value read */
	int backwards, newer;
};

static void *sample(void *p)
{
	struct sampler *s = p;
	uint64_t prev = 0;
	for (int i = 0; i < SAMPLES; i++) {
		uint64_t a = nc_now_ns(), r = nc_recent_ns(), b = nc_now_ns();
		s->newer += r > b;
		s->backwards += r < prev;
		if (a > r && a - r > s->worst_stale)
			s->worst_stale = a - r;
		prev = r;
	}
	return NULL;
}

static void case_ticks(const char *arg)
{
	(void)arg;
	CHECK(nc_upkeep_start() == 0);
	wait_ticking(1);
	struct sampler s[4];
	pthread_t th[4];
	memset(s, 0, sizeof(s));
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&th[i], NULL, sample, &s[i]) == 0);
	for (int i = 0; i < 4; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	/* the lateness of the tick after the last sample counts too */
	struct nc_recent_status st;
	CHECK(nc_get_recent_status(&st) == 0);
	usleep((useconds_t)(2 * st.period_ns / 1e3) + 1000);
	CHECK(nc_get_recent_status(&st) == 0 && st.ticking == 1);
	/* the ticks' lateness is on CLOCK_MONOTONIC, the values on the
	 * counter: they differ by the kernel's frequency correction and the
	 * rate's stated uncertainty */
	struct nc_unix_status us;
	CHECK(nc_get_unix_status(&us) == 0);
	double ppm = nc_ticks_per_second_uncertainty_ppm() + fabs(us.kernel_freq_ppm) / 4 + 1;
	double allowed = (st.period_ns + st.late_max_ns) * (1 + 4 * ppm * 1e-6) + 2;
	uint64_t worst = 0;
	for (int i = 0; i < 4; i++) {
		CHECK(s[i].backwards == 0 && s[i].newer == 0);
		if (s[i].worst_stale > worst)
			worst = s[i].worst_stale;
	}
	fprintf(stderr, "case: 4 x %d reads, the oldest %.1f us old; period %.0f us, latest tick %.1f us "
		"late: allowed %.1f us; %llu ticks\n", SAMPLES, worst / 1e3, st.period_ns / 1e3,
		st.late_max_ns / 1e3, allowed / 1e3, (unsigned long long)st.ticks);
	CHECK((double)worst <= allowed);
	/* nc_recent_unix_ns: nc_unix_ns at the same tick */
	for (int i = 0; i < 1000; i++) {
		int64_t a = nc_unix_ns(), r = nc_recent_unix_ns(), b = nc_unix_ns();
		CHECK(nc_get_recent_status(&st) == 0);
		CHECK(r <= b && (double)(a - r) <= (st.period_ns + st.late_max_ns) * (1 + 4 * ppm * 1e-6) + 2);
	}
	/* stopped: full reads again, never behind what the thread was handed */
	uint64_t last = nc_recent_ns();
	CHECK(nc_upkeep_stop() == 0);
	CHECK(nc_get_recent_status(&st) == 0 && st.ticking == 0);
	uint64_t a = nc_now_ns(), r = nc_recent_ns();
	CHECK(r >= last && r >= a);
}

static void case_fork(const char *arg)
{
	(void)arg;
	CHECK(nc_upkeep_start() == 0);
	wait_ticking(1);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		/* no thread here: full reads, at once */
		struct nc_recent_status st;
		if (nc_get_recent_status(&st) != 0 || st.ticking)
			_exit(3);
		for (int i = 0; i < 1000; i++) {
			uint64_t a = nc_now_ns(), r = nc_recent_ns();
			if (r < a)
				_exit(4);
		}
		_exit(0);
	}
	int w;
	CHECK(waitpid(pid, &w, 0) == pid && WIFEXITED(w));
	if (WEXITSTATUS(w))
		fprintf(stderr, "case: the child exited %d\n", WEXITSTATUS(w));
	CHECK(WEXITSTATUS(w) == 0);
	CHECK(nc_upkeep_stop() == 0);
}

static const struct child_case cases[] = {
	{"recent_no_thread", case_no_thread, NULL, NULL, NULL},
	{"recent_ticks", case_ticks, NULL, NULL, NULL},
	{"recent_fork", case_fork, NULL, NULL, NULL},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

int main(int argc, char **argv)
{
	return child_program("test_recent", argc, argv, NULL, 0, cases, NCASES, NULL, 0);
}
