/* SPDX-License-Identifier: MIT */
/* nc_unix_ns's timeline (wall.c). */
#ifndef NC_CLOCK_WALL_H
#define NC_CLOCK_WALL_H

#include "timeline.h"
#include "../base/refclock.h"

NC_HIDDEN extern const struct nc__timeline nc__wall_timeline;
/* Initialisation (nc__lib_lock held): the first tie; period_ms 0: 1 s. */
NC_HIDDEN void nc__wall_start(double period_ms) NC_REQUIRES(nc__lib_lock);
/* nc__lib_lock held: */
NC_HIDDEN void nc__wall_set_period(double ms) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN double nc__wall_period_ms(void) NC_REQUIRES(nc__lib_lock);
/* Tie again now: a set of the system clock followed as a step at once
 * (nc_unix_retie, the upkeep thread's clock-set notice; nc__lib_lock held). */
NC_HIDDEN void nc__wall_retie(void) NC_REQUIRES(nc__lib_lock);
/* What the tie states: everything in nc_unix_status but the kernel's view
 * (nc__lib_lock held; checks the kernel's rate first, re-tying if it
 * changed). */
NC_HIDDEN void nc__wall_status(struct nc_unix_status *st, struct nc__kclock *k, int *have_k)
	NC_REQUIRES(nc__lib_lock);
/* Its error model alone, for the kernel's state k: the bound without the
 * look at CLOCK_REALTIME that nc__wall_status adds (tested on its own) */
NC_HIDDEN double nc__wall_model_ns(const struct nc__kclock *k, int have_k)
	NC_REQUIRES(nc__lib_lock);
/* readable without the lock */
NC_HIDDEN uint32_t nc__wall_steps(void);

/* The tie as a bound on |nc_unix_ns - CLOCK_REALTIME| that grows with the
 * counter: at most err0_ns + ns_per_tick * ppm * 1e-6 * (t - tick) for a
 * counter value t at or after tick, until the next tie (which republishes)
 * — the model nc_get_unix_status states, without its look at
 * CLOCK_REALTIME now.  With the epoch readers use now (nc__lib_lock held). */
struct nc__wall_tie {
	struct nc_impl_copy line; /* the epoch as the fast path reads it */
	uint64_t tick;            /* the tie's counter value */
	double err0_ns, ppm, ns_per_tick;
	int have_k;               /* adjtimex as read at the tie */
	struct nc__kclock k;
};
NC_HIDDEN void nc__wall_tie(struct nc__wall_tie *t) NC_REQUIRES(nc__lib_lock);
/* Called (nc__lib_lock held) after every new epoch of Unix time, period 1
 * when a period's tie made it, stepped_ns the set of the system clock seen
 * since the last call (REALTIME's offset from MONOTONIC moved; 0: none;
 * > 0 forward, < 0 back), whether the line stepped with it or slews it in;
 * also after a set the line had nothing to follow for: the UTC bound is
 * republished with it (set by src/utc/ when it starts; a pointer, so that
 * the clocks call nothing above them). */
NC_HIDDEN extern void (*nc__wall_listener)(int period, double stepped_ns) NC_GUARDED_BY(nc__lib_lock);
/* Tells the listener now of a set of the system clock it has not heard of
 * (one since the last tie, or from before it listened), the line left as
 * it is (the next tie follows the set). */
NC_HIDDEN void nc__wall_tell_sets(void) NC_REQUIRES(nc__lib_lock);

#endif
