/* SPDX-License-Identifier: MIT */
/* nc_now_ns: CLOCK_MONOTONIC_RAW's origin and rate, from the counter.
 *
 * Each refresh measures the counter's rate over the long baseline since
 * the last anchor (src/rate/) and picks the next slope so that the clock
 * meets CLOCK_MONOTONIC_RAW at the end of the next epoch (slewing, at most
 * 500 ppm; a clock more than 1 ms behind steps forward, never back).  The
 * slope comes from the measured rate only: a rate the user states for
 * intervals (NANOCLOCK_HZ, forced or not) never moves nc_now_ns.  Epoch
 * lengths double (4x the first calibration window, up to 1 s), so
 * refreshing costs a bracket against CLOCK_MONOTONIC_RAW and a look at the
 * time slept (a dozen clock_gettime calls) a second.  A counter that
 * ran through a suspend (or a VM pause) carries nc_now_ns ahead of
 * CLOCK_MONOTONIC_RAW by at most the horizon past the epoch (line.h),
 * which is then slewed out.
 *
 * Where the counter is an OS clock (exact by definition: clock_monotonic,
 * gettimeofday, which NTP slews or an administrator sets), nc_now_ns reads
 * CLOCK_MONOTONIC_RAW itself: that is its promise, and those clocks cannot
 * keep it.  So it does from the moment a counter stops. */
#include "now.h"
#include "events.h"
#include "../base/latch.h"
#include "../base/log.h"
#include "../base/refclock.h"
#include "../counter/counter.h"
#include "../shared/shared.h"

#include <math.h>

#define MAX_EPOCH_NS 1e9    /* refresh at least every second */
#define MAX_SLEW 500e-6     /* fraction of the rate */
#define STEP_FORWARD_NS 1e6 /* further behind than this: step */

/* Guarded by nc__lib_lock; `lead_ns` and `on_raw` are also read without it. */
static struct {
	int on_raw;            /* the line reads CLOCK_MONOTONIC_RAW, not the counter */
	double epoch_ns;       /* length of the next epoch */
	double first_epoch_ns; /* ... after a discontinuity: learn the rate again quickly */
	int64_t lead_ns;       /* how far ahead of CLOCK_MONOTONIC_RAW the line may be in
				  this epoch; also read without the lock (atomic) */
} now_line NC_GUARDED_BY(nc__lib_lock);

/* The line is ahead of CLOCK_MONOTONIC_RAW by `ahead` ns at its start; it
 * slews toward it through the epoch, off by at most the rate's uncertainty
 * over the epoch more, and 2 us of brackets. */
static void set_lead(double ahead) NC_REQUIRES(nc__lib_lock)
{
	double l = (ahead > 0 ? ahead : 0) + 2000 + now_line.epoch_ns * nc__rate_true_ppm() * 1e-6;
	__atomic_store_n(&now_line.lead_ns, (int64_t)l, __ATOMIC_RELAXED);
}

/* Unchecked by design: a reader's bound, any context (an atomic load). */
static uint64_t now_ahead_bound(void) NC_NO_TSA
{
	return (uint64_t)nc__mono_raw_ns() + (uint64_t)__atomic_load_n(&now_line.lead_ns, __ATOMIC_RELAXED);
}

/* Unchecked by design: the counter a reader of a CALL copy reads.
 * on_raw turns 1 once (the counter stopped), before the line moves to
 * CLOCK_MONOTONIC_RAW; a reader that raced it finds the line's sequence
 * moved and reads again (timeline.c). */
static uint64_t now_read(void) NC_NO_TSA
{
	return now_line.on_raw ? (uint64_t)nc__mono_raw_ns() : nc__counter_read();
}

NC_START static void publish(const struct nc__epoch *e) NC_REQUIRES(nc__lib_lock)
{
	nc__line_publish(&nc_impl_g.now, now_line.on_raw ? NC_IMPL_KIND_CALL : nc__counter_kind(),
			 !now_line.on_raw && nc__counter_inline(), e);
}

/* The counter's measured rate as a slope. */
static void true_slope(struct nc__epoch *e) NC_REQUIRES(nc__lib_lock)
{
	nc__slope_from_ns(1e9 / nc__rate_true_hz(), e);
}

/* From here on the line is CLOCK_MONOTONIC_RAW, continuing from v at
 * least (never back). */
static void move_to_raw(uint64_t v) NC_REQUIRES(nc__lib_lock)
{
	now_line.on_raw = 1;
	struct nc__epoch e = {0, NC_NO_END, 0, 1, 0};
	uint64_t raw = (uint64_t)nc__mono_raw_ns();
	e.c0 = v > raw ? v - raw : 0;
	__atomic_store_n(&now_line.lead_ns, (int64_t)e.c0, __ATOMIC_RELAXED);
	publish(&e);
}

NC_START void nc__now_start(void)
{
	NC_LOCK_HELD();
	if (nc__rate_is_exact()) {
		move_to_raw(0);
		return;
	}
	const struct nc__calib *cal = nc__rate_anchor();
	struct nc__epoch e;
	/* the first epoch starts at the fit's centroid, where counter and
	 * CLOCK_MONOTONIC_RAW are best known */
	uint64_t now = nc__counter_read();
	true_slope(&e);
	uint64_t st;
	int64_t sns;
	nc__rate_start(&st, &sns);
	e.t0 = st;
	e.c0 = nc__c0_for(e.t0, (uint64_t)sns, e.mi, e.mf);
	/* (a shared record's window may be hours: the first epoch stays short) */
	now_line.first_epoch_ns = now_line.epoch_ns = fmin(4.0 * (double)cal->window_ns, 80e6);
	e.span = (now - e.t0) + (uint64_t)(now_line.epoch_ns * nc__rate_true_hz() / 1e9);
	struct nc__bracket b = {st, sns, 0};
	nc__events_start(&b);
	set_lead(0);
	publish(&e);
}

/* Re-tie at t to CLOCK_MONOTONIC_RAW (bracket b): nobody read the clock
 * for a while, the process or machine slept, the counter jumped or was
 * reset.  It continues from the most a reader at t was handed or from the
 * reference, whichever is later: never back, and not counting a suspend. */
static void retie(const struct nc__epoch *old, uint64_t t, const struct nc__bracket *b)
	NC_REQUIRES(nc__lib_lock)
{
	uint64_t floor_v = nc__timeline_reader_value(&nc__now_timeline, old, t), v = floor_v;
	double hz = nc__rate_true_hz();
	uint64_t tgt = (uint64_t)nc__mono_raw_ns(); /* no bracket: the reference now */
	if (b->width != UINT64_MAX)
		tgt = (uint64_t)b->ref - (uint64_t)llround((double)(int64_t)(b->mid - t) * 1e9 / hz);
	if ((int64_t)(tgt - floor_v) > 0)
		v = tgt;
	set_lead((double)(int64_t)(v - tgt));
	struct nc__epoch e;
	e.t0 = t;
	true_slope(&e);
	/* readers still on old, at a counter value a little past t, were handed
	 * old's values: no slower than its successors may be, unless t is past
	 * the horizon, where they all were handed the same ceiling */
	uint64_t d = t - old->t0;
	if ((int64_t)d >= 0 && (d < old->span || d - old->span <= nc__epoch_horizon_ticks(old)))
		nc__clamp_slope(old, &e);
	e.c0 = nc__c0_for(e.t0, v, e.mi, e.mf);
	e.span = (uint64_t)(now_line.epoch_ns * hz / 1e9);
	publish(&e);
}

/* The next epoch, from the old one, for a read of t at or past its end,
 * or far behind its start. */
static void now_refresh(const struct nc__epoch *old, uint64_t t) NC_REQUIRES(nc__lib_lock)
{
	NC_LOCK_HELD();
	if (now_line.on_raw) /* never expires; republished as it was if asked */
		return;
	uint64_t L = old->t0 + old->span;
	struct nc__bracket b;
	int64_t slept;
	double slept_hw;
	nc__events_measure(&b, &slept, &slept_hw);
	int look = nc__events_look(&b, slept, slept_hw);
	if (look == NC_LOOK_STOP) {
		nc__events_counter_stopped();
		return;
	}
	if (look == NC_LOOK_OK && nc__rate_refine(&b))
		nc__events_rate_changed();
	else if (look == NC_LOOK_OK)
		nc__shared_after_refine();
	int ok = b.width != UINT64_MAX;
	double hz = nc__rate_true_hz(), rate_ns = 1e9 / hz; /* ns per tick, measured */
	double next = look == NC_LOOK_JUMP ? now_line.first_epoch_ns
		      : ok		   ? fmin(2 * now_line.epoch_ns, MAX_EPOCH_NS)
					   : now_line.epoch_ns;
	now_line.epoch_ns = next;

	if ((int64_t)(t - old->t0) < 0 || t - L > nc__epoch_horizon_ticks(old) || look == NC_LOOK_JUMP) {
		retie(old, t, &b);
		return;
	}
	uint64_t cl = nc__epoch_end_value(old);
	/* CLOCK_MONOTONIC_RAW at L, and how far ahead of it we are: integer
	 * differences first, absolute ns lose precision in a double */
	uint64_t target_l = ok ? (uint64_t)b.ref - (uint64_t)llround((double)(int64_t)(b.mid - L) * rate_ns)
			       : cl;
	struct nc__epoch e;
	e.t0 = L;
	e.span = (t - L) + (uint64_t)(next * hz / 1e9);
	double err = (double)(int64_t)(cl - target_l); /* > 0: we are ahead */
	uint64_t v = cl;
	double slope = rate_ns;
	if (err < -STEP_FORWARD_NS) {
		v = target_l; /* far behind: step forward, never back */
	} else {
		/* meet the reference at the end of the epoch */
		double adj = err / ((double)e.span * rate_ns);
		adj = fmax(-MAX_SLEW, fmin(MAX_SLEW, adj));
		slope = rate_ns * (1 - adj);
	}
	if (nc__slope_from_ns(slope, &e) != 0)
		true_slope(&e);
	nc__clamp_slope(old, &e); /* readers past L were handed at least this */
	e.c0 = nc__c0_for(e.t0, v, e.mi, e.mf);
	set_lead(v == cl ? err : 0);
	publish(&e);
	nc__log(NC_LOG_DEBUG, "nc_now_ns epoch of %.3f s: %+.0f ns from CLOCK_MONOTONIC_RAW, "
		"counter %.6f MHz measured", next / 1e9, err, hz / 1e6);
}

/* The counter stopped: CLOCK_MONOTONIC_RAW from here, continuing from the
 * most a reader was handed. */
static void now_counter_changed(void) NC_REQUIRES(nc__lib_lock)
{
	NC_LOCK_HELD();
	struct nc__epoch old;
	uint64_t kind;
	nc__line_read(&nc_impl_g.now, &old, &kind);
	uint64_t t = nc__timeline_counter(&nc__now_timeline, kind);
	move_to_raw(now_line.on_raw ? nc__epoch_value(&old, t)
			     : nc__timeline_reader_value(&nc__now_timeline, &old, t));
}

static void now_discontinuity(const struct nc__bracket *b) NC_REQUIRES(nc__lib_lock)
{
	NC_LOCK_HELD();
	if (now_line.on_raw)
		return;
	struct nc__epoch old;
	uint64_t kind;
	nc__line_read(&nc_impl_g.now, &old, &kind);
	now_line.epoch_ns = now_line.first_epoch_ns;
	retie(&old, nc__timeline_counter(&nc__now_timeline, kind), b);
}

const struct nc__timeline nc__now_timeline = {
	.name = "nc_now_ns",
	.line = &nc_impl_g.now,
	.read = now_read,
	.refresh = now_refresh,
	.counter_changed = now_counter_changed,
	.discontinuity = now_discontinuity,
	.ahead_bound = now_ahead_bound,
};
