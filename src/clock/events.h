/* SPDX-License-Identifier: MIT */
/* What happened to the counter since the last look (events.c): a suspend,
 * a jump, a changed rate, a stop. */
#ifndef NC_CLOCK_EVENTS_H
#define NC_CLOCK_EVENTS_H

#include "../rate/rate.h"
#include "nanoclock_info.h"

enum { NC_LOOK_OK, NC_LOOK_JUMP, NC_LOOK_STOP };

/* A bracket of the counter in use against CLOCK_MONOTONIC_RAW (*slept,
 * *slept_hw: nc__events_slept() just after). */
NC_HIDDEN void nc__events_measure(struct nc__bracket *b, int64_t *slept, double *slept_hw);
/* CLOCK_BOOTTIME - CLOCK_MONOTONIC now: the time slept in suspends (*hw,
 * if not NULL: half the bracket it was read in). */
NC_HIDDEN int64_t nc__events_slept(double *hw);
/* The first look: the calibration's anchor (initialisation). */
NC_HIDDEN void nc__events_start(const struct nc__bracket *b) NC_REQUIRES(nc__lib_lock);
/* nc__lib_lock held: compare bracket b with the last look, count what
 * happened.  On a jump the rate is re-anchored at b.  The caller acts on
 * the verdict (NC_LOOK_*). */
NC_HIDDEN int nc__events_look(const struct nc__bracket *b, int64_t slept, double slept_hw)
	NC_REQUIRES(nc__lib_lock);
/* nc__lib_lock held: a look from outside a refresh (upkeep, status, info),
 * and what it calls for: a jump re-ties the timelines, a stop moves them
 * to CLOCK_MONOTONIC_RAW. */
NC_HIDDEN void nc__events_check(void) NC_REQUIRES(nc__lib_lock);
/* nc__lib_lock held: the counter stopped (after a look said so). */
NC_HIDDEN void nc__events_counter_stopped(void) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN void nc__events_rate_changed(void) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN void nc__events_get(struct nc_events *out) NC_REQUIRES(nc__lib_lock);

#endif
