/* SPDX-License-Identifier: MIT */
/* nc_now_ns's timeline (now.c). */
#ifndef NC_CLOCK_NOW_H
#define NC_CLOCK_NOW_H

#include "timeline.h"

NC_HIDDEN extern const struct nc__timeline nc__now_timeline;
/* Initialisation (nc__lib_lock held): the first epoch, from the
 * calibration's anchor, or CLOCK_MONOTONIC_RAW itself for an OS clock. */
NC_HIDDEN void nc__now_start(void) NC_REQUIRES(nc__lib_lock);

#endif
