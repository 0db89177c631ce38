/* SPDX-License-Identifier: MIT */
/* Epochs: the piecewise-linear lines nc_now_ns and nc_unix_ns are made of,
 * and their publication to the fast path (line.c). */
#ifndef NC_CLOCK_LINE_H
#define NC_CLOCK_LINE_H

#include "../base/compiler.h"
#include "../base/lock.h"

#include <stdint.h>

#define NC_NO_END (UINT64_MAX >> 1) /* an epoch that never ends (an exact-rate OS
				       clock); half the range, so that "behind" stays visible */

/* For counter values t in [t0, t0 + span): c0 + floor(t * m) mod 2^64, m
 * = ns per tick as 64.64 (mi + mf / 2^64). */
struct nc__epoch {
	uint64_t t0, span, c0, mi, mf;
};
NC_HIDDEN uint64_t nc__epoch_value(const struct nc__epoch *e, uint64_t t);
/* c0 that makes the line pass through value V at counter value L */
NC_HIDDEN uint64_t nc__c0_for(uint64_t L, uint64_t V, uint64_t mi, uint64_t mf);
/* e's line at t, extended past its end (past the counter's wrap too) */
NC_HIDDEN uint64_t nc__epoch_extended(const struct nc__epoch *e, uint64_t t);
/* the value at the epoch's end (at the counter's wrap too) */
NC_HIDDEN uint64_t nc__epoch_end_value(const struct nc__epoch *e);
NC_HIDDEN int nc__slope_from_ns(double ns_per_tick, struct nc__epoch *e);
/* e's slope raised to the slowest a successor of old may have */
NC_HIDDEN void nc__clamp_slope(const struct nc__epoch *old, struct nc__epoch *e);

/* What a reader that cannot refresh returns for t past e's end: a lower
 * bound of any later epoch's value (the value at the end plus t - end at
 * the slowest successor slope), held still past the horizon (1 ms past the
 * end): bounded, and never above what a refresh will continue from. */
NC_HIDDEN uint64_t nc__epoch_overdue(const struct nc__epoch *e, uint64_t t);
/* The most any reader was handed from e (its overdue value at the
 * horizon): the floor for a re-tie that starts past it. */
NC_HIDDEN uint64_t nc__epoch_ceiling(const struct nc__epoch *e);
/* What a reader at counter value t was handed from e, at most: the value
 * in the epoch, the overdue value past it, the start's value behind it. */
NC_HIDDEN uint64_t nc__epoch_reader_value(const struct nc__epoch *e, uint64_t t);
/* The horizon in ticks (1 ms at e's slope). */
NC_HIDDEN uint64_t nc__epoch_horizon_ticks(const struct nc__epoch *e);
/* How far behind e's start a reader may be (another CPU's counter a
 * little behind) and still be handed e's start value. */
NC_HIDDEN uint64_t nc__epoch_behind_ticks(const struct nc__epoch *e);

/* Publish epoch e to line l (nc__lib_lock held): read by the fast path if
 * inline_ok, else through the library.  kind: how its counter is read. */
NC_HIDDEN void nc__line_publish(struct nc_impl_line *l, uint64_t kind, int inline_ok,
				const struct nc__epoch *e) NC_REQUIRES(nc__lib_lock);
/* The epoch readers of l use now and how its counter is read; returns the
 * latch's sequence word (a refresh checks it did not move). */
NC_HIDDEN uint64_t nc__line_read(const struct nc_impl_line *l, struct nc__epoch *e, uint64_t *kind);

#endif
