/* SPDX-License-Identifier: MIT */
/* What the library states about a read, for the tests' tolerances: a test
 * compares a read with a reference read around it (the bracket [a, b],
 * which already covers the reference's own reads, however long a busy
 * machine held them) and allows the error the library states for that
 * read, never a round number.  Include after internal.h. */
#ifndef NC_TEST_STATED_H
#define NC_TEST_STATED_H

#include <stdint.h>

/* The library's bound on |nc_now_ns() - CLOCK_MONOTONIC_RAW| now: the
 * lead it keeps for its line (src/clock/now.c, set_lead: what the line was
 * ahead at the epoch's start, 2 us of brackets, and the rate's stated
 * uncertainty over the epoch; on an OS clock what it was ahead when it
 * moved onto CLOCK_MONOTONIC_RAW, 0 from the start), which it hands
 * readers far behind an epoch as the most the line may read
 * (nc__now_timeline.ahead_bound() = CLOCK_MONOTONIC_RAW + lead).  Read as
 * that bound less CLOCK_MONOTONIC_RAW taken just before it: an
 * overestimate by the distance of the two clock reads, the narrowest of
 * three (tens of ns; a preempted one is passed over). */
static inline int64_t nc_test_now_lead_ns(void)
{
	int64_t best = INT64_MAX, lead = 0;
	for (int i = 0; i < 3; i++) {
		int64_t r0 = nc__mono_raw_ns();
		int64_t bound = (int64_t)nc__now_timeline.ahead_bound();
		int64_t r1 = nc__mono_raw_ns();
		if (r1 - r0 < best) {
			best = r1 - r0;
			lead = bound - r0;
		}
	}
	return lead;
}

/* Whole nanoseconds: nc_now_ns() truncates its line (a read up to 1 ns
 * below it) and the library keeps its lead truncated too (up to 1 ns
 * short). */
#define NC_TEST_NOW_FLOOR_NS 2

/* Is v, an nc_now_ns() read between CLOCK_MONOTONIC_RAW reads a and b,
 * where the library says it is?  lead: nc_test_now_lead_ns() taken before
 * and after the three reads, the larger (a refresh between them may have
 * restated it). */
static inline int nc_test_now_within(int64_t a, int64_t v, int64_t b, int64_t lead)
{
	return v >= a - lead - NC_TEST_NOW_FLOOR_NS && v <= b + lead + NC_TEST_NOW_FLOOR_NS;
}

#endif
