/* SPDX-License-Identifier: MIT */
/* nc_unix_ns's timeline (wall.c). */
#ifndef NC_CLOCK_WALL_H
#define NC_CLOCK_WALL_H

#include "timeline.h"
#include "../base/refclock.h"

NC_HIDDEN extern const struct nc__timeline nc__wall_timeline;
/* Initialisation (nc__lib_lock held): the first tie; period_ms 0: 1 s. */
NC_HIDDEN void nc__wall_start(double period_ms);
/* nc__lib_lock held: */
NC_HIDDEN void nc__wall_set_period(double ms);
NC_HIDDEN double nc__wall_period_ms(void);
/* Tie again now: a set of the system clock followed as a step at once
 * (nc_unix_retie, the upkeep thread's clock-set notice). */
NC_HIDDEN void nc__wall_retie(void);
/* What the tie states: everything in nc_unix_status but the kernel's view
 * (nc__lib_lock held; checks the kernel's rate first, re-tying if it
 * changed). */
NC_HIDDEN void nc__wall_status(struct nc_unix_status *st, struct nc__kclock *k, int *have_k);
/* readable without the lock */
NC_HIDDEN uint32_t nc__wall_steps(void);

#endif
