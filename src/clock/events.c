/* SPDX-License-Identifier: MIT */
/* Looks at the counter against CLOCK_MONOTONIC_RAW, and at CLOCK_BOOTTIME's
 * offset from CLOCK_MONOTONIC (the time slept):
 * every refresh of either line, the upkeep thread, nc_get_info and
 * nc_get_unix_status compare them since the last look.  A suspend, a
 * counter that jumped, changed rate or stopped is counted; on a jump the
 * long baseline is re-anchored, the rate re-measured and nc_now_ns re-tied
 * at once.  Readers alone cannot see a counter that stopped (it is their
 * only clock): the upkeep thread, or the next nc_get_info or
 * nc_get_unix_status, does.  The comparison uses the counter's measured
 * rate, never a rate the user stated for intervals: a forced rate is not
 * a jump. */
#include "events.h"
#include "timeline.h"
#include "../base/log.h"
#include "../base/refclock.h"
#include "../counter/counter.h"

#include <math.h>

#define SUSPEND_NS 1e6 /* BOOTTIME's offset from MONOTONIC moved by more: a suspend */

/* Guarded by nc__lib_lock. */
static struct {
	int have;            /* a look was taken */
	uint64_t t;          /* its counter value */
	int64_t raw;         /* CLOCK_MONOTONIC_RAW there */
	int64_t slept;       /* CLOCK_BOOTTIME - CLOCK_MONOTONIC then ... */
	double slept_hw;     /* ... +- this */
	struct nc_events ev;
} seen NC_GUARDED_BY(nc__lib_lock);

/* CLOCK_BOOTTIME - CLOCK_MONOTONIC: the time slept in suspends, which
 * nothing else moves (both run at the kernel's corrected rate; against
 * MONOTONIC_RAW, BOOTTIME drifts by that correction, 2.5 ms in 5 s at
 * 500 ppm).  The narrowest of three brackets. */
NC_START int64_t nc__events_slept(double *hw)
{
	int64_t best = INT64_MAX, off = 0;
	for (int i = 0; i < 3; i++) {
		int64_t a = nc__ref.mono(), r = nc__ref.boot(), b = nc__ref.mono();
		if (b >= a && b - a < best) {
			best = b - a;
			off = r - (a + (b - a) / 2);
		}
	}
	if (hw)
		*hw = best == INT64_MAX ? 0 : (double)best / 2;
	return off;
}

void nc__events_measure(struct nc__bracket *b, int64_t *slept, double *slept_hw)
{
	struct nc__calib_io io = {NULL, nc__counter_io_read, nc__ref_io_raw};
	nc__take_bracket(&io, 8, b);
	*slept = nc__events_slept(slept_hw);
}

static void remember(const struct nc__bracket *b, int64_t slept, double slept_hw)
	NC_REQUIRES(nc__lib_lock)
{
	seen.t = b->mid;
	seen.raw = b->ref;
	seen.slept = slept;
	seen.slept_hw = slept_hw;
	seen.have = 1;
}

NC_START void nc__events_start(const struct nc__bracket *b)
{
	double hw;
	int64_t slept = nc__events_slept(&hw);
	remember(b, slept, hw);
}

int nc__events_look(const struct nc__bracket *b, int64_t slept, double slept_hw)
{
	NC_LOCK_HELD();
	if (!seen.have || b->width == UINT64_MAX) {
		if (b->width != UINT64_MAX)
			remember(b, slept, slept_hw);
		return NC_LOOK_OK;
	}
	double draw = (double)(b->ref - seen.raw);
	/* (beyond both looks' brackets: a look preempted for ms is no suspend) */
	double dslept = (double)(slept - seen.slept);
	if (dslept > SUSPEND_NS + slept_hw + seen.slept_hw) {
		seen.ev.suspends++;
		seen.ev.suspended_s += dslept / 1e9;
		nc__log(NC_LOG_INFO, "suspend of %.3f s seen (CLOCK_BOOTTIME moved past "
			"CLOCK_MONOTONIC)", dslept / 1e9);
	}
	int64_t dt = (int64_t)(b->mid - seen.t);
	double hz = nc__rate_true_hz();
	double dt_ns = (double)dt * 1e9 / hz;
	if (dt == 0 && draw > SUSPEND_NS) {
		seen.ev.counter_stops++;
		nc__log(NC_LOG_WARN, "the %s counter stopped for %.3f ms of CLOCK_MONOTONIC_RAW: "
			"nc_now_ns follows CLOCK_MONOTONIC_RAW from now on",
			nc__counter()->name, draw / 1e6);
		remember(b, slept, slept_hw);
		return NC_LOOK_STOP;
	}
	/* 2 us for the brackets and scheduling, the rate's uncertainty, and
	 * 100 ppm of slack below which a change is left to the slewing; while
	 * the rate is being re-measured after a discontinuity, only that */
	double tol = 2000 + fabs(draw) * (nc__rate_true_ppm() + 100) * 1e-6;
	int jump = !nc__rate_remeasuring() && fabs(dt_ns - draw) > tol && draw >= 0;
	if (jump) {
		seen.ev.counter_jumps++;
		nc__log(NC_LOG_WARN, "the counter moved %+.3f ms unlike CLOCK_MONOTONIC_RAW "
			"over %.3f ms (a pause, a migration, a reset): re-tied, re-measuring",
			(dt_ns - draw) / 1e6, draw / 1e6);
		nc__rate_reanchor(b);
	}
	remember(b, slept, slept_hw);
	return jump ? NC_LOOK_JUMP : NC_LOOK_OK;
}

void nc__events_rate_changed(void) { seen.ev.rate_changes++; }

void nc__events_counter_stopped(void)
{
	NC_LOCK_HELD();
	nc__counter_fall_back();
	nc__rate_counter_replaced(1e9, "exact (the counter stopped)");
	for (int i = 0; i < nc__timeline_count(); i++)
		nc__timeline_at(i)->counter_changed();
}

void nc__events_check(void)
{
	NC_LOCK_HELD();
	if (nc__rate_is_exact())
		return;
	struct nc__bracket b;
	int64_t slept;
	double slept_hw;
	nc__events_measure(&b, &slept, &slept_hw);
	int r = nc__events_look(&b, slept, slept_hw);
	if (r == NC_LOOK_STOP) {
		nc__events_counter_stopped();
	} else if (r == NC_LOOK_JUMP) {
		for (int i = 0; i < nc__timeline_count(); i++)
			if (nc__timeline_at(i)->discontinuity)
				nc__timeline_at(i)->discontinuity(&b);
	}
}

void nc__events_get(struct nc_events *out) { *out = seen.ev; }
