/* SPDX-License-Identifier: MIT */
/* adjtimex's view of UTC and nanoclock's tie combined (utc.c, pure). */
#ifndef NC_CLOCK_UTC_H
#define NC_CLOCK_UTC_H

#include "../base/refclock.h"

NC_HIDDEN void nc__utc_decode(const struct nc__kclock *k, int have_k, double tie_error_ns,
			      struct nc_unix_status *st);

#endif
