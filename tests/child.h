/* SPDX-License-Identifier: MIT */
/* Test cases that need a fresh process (the library initialises once per
 * process).  Each runs in a forked child and reports through its exit
 * status and a line on stderr; `test_x --case NAME` runs one in the
 * current process (for a debugger), `--list-cases` lists them. */
#ifndef NC_TEST_CHILD_H
#define NC_TEST_CHILD_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "destructive.h"

struct child_case {
	const char *name;
	void (*fn)(const char *arg);
	const char *arg;
	const char *counter_env; /* NANOCLOCK_COUNTER for the case, or NULL */
	const char *hz_env;      /* NANOCLOCK_HZ for the case, or NULL */
};

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "case: %s:%d: %s\n", __FILE__, __LINE__, #cond);   \
			_exit(1);                                                          \
		}                                                                          \
	} while (0)

/* What a case's process does after the case passed: a test file may
 * define it before including this (test_utc releases the library's UTC
 * source, whose descriptor valgrind would count as left open). */
#ifndef CHILD_AFTER
#define CHILD_AFTER() ((void)0)
#endif

static inline void child_setup(const struct child_case *c)
{
	if (c->counter_env)
		setenv("NANOCLOCK_COUNTER", c->counter_env, 1);
	else
		unsetenv("NANOCLOCK_COUNTER");
	if (c->hz_env)
		setenv("NANOCLOCK_HZ", c->hz_env, 1);
	else
		unsetenv("NANOCLOCK_HZ");
}

/* Handles --list-cases and --case NAME; returns -1 when neither is given. */
static inline int child_main(int argc, char **argv, const struct child_case *cases, int n)
{
	if (argc >= 2 && strcmp(argv[1], "--list-cases") == 0) {
		for (int i = 0; i < n; i++)
			printf("%s\n", cases[i].name);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "--case") == 0) {
		for (int i = 0; i < n; i++)
			if (strcmp(cases[i].name, argv[2]) == 0) {
				child_setup(&cases[i]);
				cases[i].fn(cases[i].arg);
				CHILD_AFTER();
				return 0;
			}
		fprintf(stderr, "no case '%s'\n", argv[2]);
		return 2;
	}
	return -1;
}

/* valgrind cannot always grow a forked child's main stack while it
 * delivers a signal ("Can't extend stack ... during signal delivery"),
 * which the fault-probing cases need: the child maps 256 KiB of stack
 * first, so that no signal frame lands on a page not yet there. */
__attribute__((noinline)) static void child_touch_stack(void)
{
	volatile char pages[256 * 1024];
	for (size_t i = 0; i < sizeof(pages); i += 1024)
		pages[i] = 0;
}

/* A case's exit status for "cannot run here" (reported as a skip). */
#define CHILD_SKIP 77

/* Inside a cmocka test: run one case in a forked child. */
static inline void child_run(const struct child_case *c)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		child_touch_stack();
		child_setup(c);
		c->fn(c->arg);
		CHILD_AFTER();
		_exit(0);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st))
		fail_msg("case %s: killed by signal %d", c->name, WTERMSIG(st));
	if (WEXITSTATUS(st) == CHILD_SKIP)
		skip();
	if (WEXITSTATUS(st) != 0)
		fail_msg("case %s failed", c->name);
}
#define RUN_CASE(c) child_run(c)

static inline void child_run_state(void **state) { child_run((const struct child_case *)*state); }

/* The cases as cmocka tests, one per case, into t[0..n-1]. */
static inline void child_tests(struct CMUnitTest *t, const struct child_case *cases, int n)
{
	for (int i = 0; i < n; i++) {
		struct CMUnitTest u = {cases[i].name, child_run_state, NULL, NULL, (void *)&cases[i]};
		t[i] = u;
	}
}

/* A test program's main: `--list-cases` and `--case NAME` (child_main),
 * else the plain cmocka tests (nplain of them, may be 0) then each case in
 * a child of its own, as the group name.  With destructive cases (dn > 0,
 * tests/destructive.h): `--destructive` runs those instead, refused (exit
 * 2) without NANOCLOCK_TEST_DESTRUCTIVE=1. */
static inline int child_program(const char *name, int argc, char **argv,
				const struct CMUnitTest *plain, int nplain,
				const struct child_case *cases, int n,
				const struct child_case *dcases, int dn)
{
	if (dn > 0) {
		int d = destructive_mode(argc, argv);
		if (d < 0)
			return 2;
		if (d) {
			argc--, argv++;
			cases = dcases, n = dn, nplain = 0;
		}
	}
	int rc = child_main(argc, argv, cases, n);
	if (rc >= 0)
		return rc;
	/* on the stack (a test may replace malloc: test_syscalls counts) */
	struct CMUnitTest t[nplain + n];
	for (int i = 0; i < nplain; i++)
		t[i] = plain[i];
	child_tests(t + nplain, cases, n);
	return _cmocka_run_group_tests(name, t, (size_t)(nplain + n), NULL, NULL);
}

#if defined(NANOCLOCK_H) && defined(NC_BASE_REFCLOCK_H)
#include "nanoclock_info.h" /* the tie's refresh period */
#include "clockstep.h"

/* nc_unix_ns() against CLOCK_REALTIME read before and after it: within the
 * bound the library states (nc_get_unix_status, before and after the read:
 * a tie made by the read itself may state a different one), and that bound
 * under a ceiling: the stated bound is the library's own reading of its
 * line against CLOCK_REALTIME, so a wrong line widens it too, and only the
 * ceiling catches that.  The ceiling is the most the line may be off by
 * the library's own rules (nanoclock.h, "Wall-clock time"): a difference
 * that a refresh period can slew in at 1000 ppm is slewed in, a larger one
 * is followed as a step; plus the half-width of the bracket that made the
 * tie.  The read is bracketed because a busy or emulated machine may take
 * the thread off its CPU for milliseconds between two reads: that is not
 * an error of either clock.  0, or -1 with the figures on stderr. */
static inline int child_unix_within_stated(void)
{
	struct nc_unix_status s0, s1;
	struct nc_info in;
	if (nc_get_unix_status(&s0) != 0 || nc_get_info(&in) != 0)
		return -1;
	/* a sample across a step of the clock by another process, or before
	 * the library followed it (a refresh period), is taken again
	 * (tests/clockstep.h), for up to three such periods */
	static struct clockstep cs;
	int64_t lag = (int64_t)(in.unix_refresh_ms * 1e6) + 20000000;
	int64_t a = 0, u = 0, b = 0, until = nc__clock_ns(CLOCK_MONOTONIC_RAW) + 3 * lag;
	for (;;) {
		int calm = clockstep_calm(&cs, lag);
		a = nc__clock_ns(CLOCK_REALTIME), u = nc_unix_ns(), b = nc__clock_ns(CLOCK_REALTIME);
		if ((clockstep_calm(&cs, lag) && calm) || nc__clock_ns(CLOCK_MONOTONIC_RAW) > until)
			break;
		struct timespec p = {0, 20000000};
		nanosleep(&p, NULL);
		if (nc_get_unix_status(&s0) != 0)
			return -1;
	}
	if (nc_get_unix_status(&s1) != 0)
		return -1;
	double stated = s0.tie_error_ns > s1.tie_error_ns ? s0.tie_error_ns : s1.tie_error_ns;
	double hw = s0.tie_halfwidth_ns > s1.tie_halfwidth_ns ? s0.tie_halfwidth_ns : s1.tie_halfwidth_ns;
	double ceiling = 1000e-6 * in.unix_refresh_ms * 1e6 + hw;
	int64_t bound = (int64_t)ceil(stated < ceiling ? stated : ceiling);
	if (stated <= ceiling && u >= a - bound && u <= b + bound)
		return 0;
	/* a step before the first look: the library follows it within the
	 * lag, and its count of steps says so; then a sample of its own */
	static int retaken;
	if (!retaken) {
		struct timespec p = {(time_t)(lag / 1000000000), (long)(lag % 1000000000)};
		nanosleep(&p, NULL);
		struct nc_unix_status s2;
		if (nc_get_unix_status(&s2) == 0 && s2.steps != s1.steps) {
			retaken = 1;
			fprintf(stderr, "case: the library followed a set of the clock meanwhile: "
				"sampled again\n");
			return child_unix_within_stated();
		}
	}
	fprintf(stderr, "case: nc_unix_ns %lld, CLOCK_REALTIME %lld before and %lld after it: "
		"%+lld ns from the bracket, stated bound %.0f ns (ceiling %.0f: 1000 ppm of the %.0f ms "
		"refresh period and the tie's +-%.0f ns; tie %.3f s old)\n", (long long)u, (long long)a,
		(long long)b, (long long)(u < a ? u - a : u > b ? u - b : 0), stated, ceiling,
		in.unix_refresh_ms, hw, s1.tie_age_s);
	return -1;
}
#endif

#endif
