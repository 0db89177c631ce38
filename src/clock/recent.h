/* SPDX-License-Identifier: MIT */
/* The coarse clock (recent.c): nc_now_ns() and nc_unix_ns() as of the
 * upkeep thread's last tick, which upkeep.c drives. */
#ifndef NC_CLOCK_RECENT_H
#define NC_CLOCK_RECENT_H

#include "../base/compiler.h"

#include <stdint.h>

/* the upkeep thread's: 1 while someone has read the coarse clock (it then
 * ticks every nc__recent_period_ns); any thread, no lock */
NC_HIDDEN int nc__recent_wanted(void);
NC_HIDDEN int64_t nc__recent_period_ns(void);
/* a tick due at due_ns (CLOCK_MONOTONIC): the values taken now */
NC_HIDDEN void nc__recent_tick(int64_t due_ns);
/* the upkeep thread stops (or a forked child has none): reads go back to
 * full reads */
NC_HIDDEN void nc__recent_stop(void);
/* the last tick's values: 1 with *v, or 0 while nothing ticks (the ticks
 * then asked for); any thread, no lock, one load */
NC_HIDDEN int nc__recent_now(uint64_t *v);
NC_HIDDEN int nc__recent_unix(int64_t *v);
struct nc_recent_status;
NC_HIDDEN void nc__recent_status(struct nc_recent_status *st);

#endif
