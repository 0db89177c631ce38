/* SPDX-License-Identifier: MIT */
/* Another process may step the system clock while a test runs (a time
 * daemon, an administrator, `make check-destructive` on a shared machine).
 * A test that takes CLOCK_REALTIME for the truth cannot judge a sample
 * taken across such a step, nor one taken before the library has followed
 * it: it looks (CLOCK_REALTIME - CLOCK_MONOTONIC_RAW, the narrowest of
 * three brackets) before and after each sample, and leaves unjudged every
 * sample from a step until lag_ns after it was seen — the lag the library
 * documents for following a set of the clock (a refresh period) — then
 * takes more samples.  A slew moves that difference slowly (500 ppm at
 * most: 0.5 us a ms) and is not taken for a step; a change of the
 * kernel's frequency or tick (adjtimex, read only) is a disturbance too:
 * the library's bound on Unix time states it, but a figure taken before
 * it (the tie's part in a status read earlier) does not.  A step before the
 * first look cannot be seen this way: a sample that fails is judged again
 * after the lag, and excused only if the library followed a set of the
 * clock meanwhile (its count of steps moved), which says one happened. */
#ifndef NC_TEST_CLOCKSTEP_H
#define NC_TEST_CLOCKSTEP_H

#include <stdint.h>
#include <string.h>
#include <sys/timex.h>
#include <time.h>

struct clockstep {
	int64_t d, at, hw;   /* REALTIME - RAW at RAW at, +-hw, the last look */
	int64_t quiet_until; /* RAW: no sample is judged before */
	long freq, tick;     /* the kernel's rate correction at the last look */
	long steps;          /* steps seen */
	int have;
};

static inline int64_t clockstep_ns(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* 1: a sample taken now may be judged (no step seen since lag_ns ago);
 * 0: not (a step in sight, said once on stderr) */
static inline int clockstep_calm(struct clockstep *c, int64_t lag_ns)
{
	int64_t best = INT64_MAX, d = 0, at = 0;
	for (int i = 0; i < 3; i++) {
		int64_t a = clockstep_ns(CLOCK_MONOTONIC_RAW), r = clockstep_ns(CLOCK_REALTIME),
			b = clockstep_ns(CLOCK_MONOTONIC_RAW);
		if (b - a < best)
			best = b - a, d = r - (a + (b - a) / 2), at = a;
	}
	struct timex tx;
	memset(&tx, 0, sizeof(tx));
	if (adjtimex(&tx) < 0)
		tx.freq = c->freq, tx.tick = c->tick;
	if (c->have && (tx.freq != c->freq || tx.tick != c->tick)) {
		if (c->steps++ < 20)
			fprintf(stderr, "case: the kernel's frequency changed by another process: "
				"samples until %.0f ms after it not judged\n", (double)lag_ns / 1e6);
		c->quiet_until = at + lag_ns;
	}
	c->freq = tx.freq, c->tick = tx.tick;
	if (c->have) {
		int64_t moved = d - c->d, dt = at - c->at;
		/* 500 ppm, both brackets, 2 us */
		int64_t slew = dt / 2000 + best / 2 + c->hw + 2000;
		if (moved > slew || -moved > slew) {
			if (c->steps++ < 20)
				fprintf(stderr, "case: CLOCK_REALTIME stepped %+.3f ms by another process: "
					"samples until %.0f ms after it not judged\n", (double)moved / 1e6,
					(double)lag_ns / 1e6);
			c->quiet_until = at + lag_ns;
		}
	}
	c->d = d, c->at = at, c->hw = best / 2 + 1, c->have = 1;
	return at >= c->quiet_until;
}

/* For a sample taken over a span (a recording judged afterwards): a look,
 * then lag_ns of waiting (a step just before it followed by then), then
 * another; clockstep_span_calm after the span says whether no step was
 * seen from the first look on. */
static inline void clockstep_begin(struct clockstep *c, int64_t lag_ns)
{
	c->have = 0;
	c->steps = 0;
	(void)clockstep_calm(c, lag_ns);
	struct timespec p = {(time_t)(lag_ns / 1000000000), (long)(lag_ns % 1000000000)};
	nanosleep(&p, NULL);
	(void)clockstep_calm(c, lag_ns);
}

static inline int clockstep_span_calm(struct clockstep *c, int64_t lag_ns)
{
	(void)clockstep_calm(c, lag_ns);
	return c->steps == 0;
}

#endif
