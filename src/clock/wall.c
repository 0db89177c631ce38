/* SPDX-License-Identifier: MIT */
/*
 * Unix time: nc_unix_ns's line, tied to the system clock every period
 * (1 s by default).
 *
 * CLOCK_REALTIME is CLOCK_MONOTONIC plus an offset that changes only when
 * the clock is set (settimeofday, an NTP step, a leap second, a resume
 * from suspend); CLOCK_MONOTONIC carries the kernel's frequency
 * corrections (adjtimex: freq, tick, the PLL, adjtime()).  So a tie has two
 * parts: the counter against CLOCK_MONOTONIC (the narrowest of 8
 * brackets), and REALTIME's offset from MONOTONIC (the narrowest of 4:
 * MONOTONIC, REALTIME, MONOTONIC).  A refresh (wall_update) goes through
 * named phases:
 *   take_tie        the two brackets, again if preempted, and adjtimex;
 *   followed_rate   CLOCK_MONOTONIC's rate against the counter: measured
 *                   since the previous tie, or, when the kernel says its
 *                   rate changed since (freq, tick), the previous rate moved
 *                   by exactly that change — a mixed period's average would
 *                   be wrong for seconds;
 *   decide          the difference from the old line at the tie is a step
 *                   of the system clock where REALTIME's offset from
 *                   MONOTONIC moved and the difference is larger than a
 *                   period can slew at 1000 ppm, followed as a step; a
 *                   line that is behind by that much steps forward; else
 *                   it is slewed in (up to 3000 ppm back where it is far
 *                   ahead: a counter that ran fast), continuous, never
 *                   decreasing;
 *   publish         the next epoch, and what the tie states.
 * A rate change is followed from the end of the epoch in which it is seen:
 * an epoch's slope is never lowered mid-epoch (readers still on the old
 * copy would be handed more than its successor), so until then the bound
 * nc_get_unix_status states grows by the change times the tie's age.
 * The upkeep thread learns of a clock set as it happens and re-ties at
 * once, mid-epoch: a step where REALTIME's offset from MONOTONIC moved and
 * the line is off by more than the brackets allow; a notice with the offset
 * unmoved (nc_unix_retie while the kernel slews) steps nothing.
 *
 * What nc_unix_ns may be off CLOCK_REALTIME by (the tie error): both
 * brackets' half-widths, the correction still being slewed in, and the
 * tie's age times the followed rate's uncertainty, plus the kernel's own
 * rate moves since the tie (a change adjtimex states, and the most its
 * PLL or an adjtime() slew may move it).
 */
#include "wall.h"
#include "events.h"
#include "../base/latch.h"
#include "../base/log.h"
#include "../base/refclock.h"
#include "../counter/counter.h"

#include <math.h>
#include <string.h>

#define MAX_WALL_SLEW 1000e-6 /* a period's correction: twice NTP's own slew */
#define MAX_BACK_SLEW 3000e-6 /* a larger one the line is ahead by, that no set of the
				 clock explains (a counter that ran fast): within the
				 slowest successor slope (line.c) */
#define TIE_TRIES 8
#define NTP_DRIFT_PPM 0.1 /* a measured rate moving within a period, allowed for */
#define WIDE_NS 20000.0   /* a tie wider than this was preempted: not used to correct */
#define ADJTIME_PPM 500.0 /* adjtime()'s slew rate (MAX_TICKADJ) */
#define SAME_PPM 1e-4     /* kernel rates closer than this are the same */

/* Guarded by nc__lib_lock; steps and refreshes are also read without it. */
static struct {
	double period_ns;
	int have;            /* a tie was made */
	uint64_t a_tick;     /* the latest tie: where the next rate is measured from */
	int64_t a_mono;
	int64_t off;         /* REALTIME - MONOTONIC there */
	double hw_ns;        /* its half-widths (both parts) */
	int64_t tie_raw;     /* CLOCK_MONOTONIC_RAW there */
	double err_ns;       /* the correction being slewed in */
	double rate;         /* ns of CLOCK_MONOTONIC per tick followed (0: none yet) */
	double rate_ppm;     /* its uncertainty */
	int have_k;          /* adjtimex answered at the tie ... */
	struct nc__kclock k; /* ... and said this */
	uint32_t steps, refreshes;
	uint64_t tie_tick;   /* the latest tie's counter value (a set's too) */
	double prev_kslew_ppm; /* the kernel's slew at the tie before the latest */
	int64_t lead_ns;     /* how far ahead of CLOCK_REALTIME the line may be until
				the next tie; also read without the lock (atomic) */
	int64_t tie_real;    /* CLOCK_REALTIME at the latest tie's tie_tick ... */
	double tie_rate;     /* ... and the rate followed from it, ns per tick */
	int told;            /* the listener's baseline is taken: */
	int64_t off_told;    /* REALTIME - MONOTONIC as of the last set it heard of ... */
	double off_told_hw;  /* ... +- this */
	int64_t boot_told;   /* BOOTTIME - MONOTONIC then ... */
	double boot_told_hw; /* ... +- this */
} wall NC_GUARDED_BY(nc__lib_lock); /* zero-initialised (period set by
					  nc__wall_start): in .bss with the rest of the
					  start's state, not the one variable of .data a
					  start wrote (no fewer faults measured) */

enum { WHY_FIRST, WHY_PERIOD, WHY_SET };

static uint64_t wall_read(void) { return nc__counter_read(); }

static void publish(const struct nc__epoch *e) NC_REQUIRES(nc__lib_lock)
{
	nc__line_publish(&nc_impl_g.wall, nc__counter_kind(), nc__counter_inline(), e);
}

/* ---- take_tie ---- */
struct tie {
	struct nc__bracket b; /* counter against CLOCK_MONOTONIC */
	int64_t off;          /* REALTIME - MONOTONIC ... */
	double off_hw;        /* ... +- this, ns */
	double hw;            /* both half-widths, ns */
	int unsure;           /* still wider than WIDE_NS */
	int64_t real_at_mid;  /* REALTIME at b.mid */
	int have_k;
	struct nc__kclock k;
};

/* REALTIME - MONOTONIC, and half the bracket it was read in */
NC_START static int64_t realtime_offset(double *hw)
{
	int64_t best = INT64_MAX, off = 0;
	for (int i = 0; i < 4; i++) {
		int64_t a = nc__ref.mono(), r = nc__ref.real(), b = nc__ref.mono();
		if (b >= a && b - a < best) {
			best = b - a;
			off = r - (a + (b - a) / 2);
		}
	}
	*hw = best == INT64_MAX ? 0 : (double)best / 2;
	return off;
}

static void take_tie(struct tie *ti, double ns_tick, int read_kernel) NC_REQUIRES(nc__lib_lock)
{
	struct nc__calib_io io = {NULL, nc__counter_io_read, nc__ref_io_mono};
	nc__take_bracket(&io, TIE_TRIES, &ti->b);
	if (ti->b.width == UINT64_MAX) { /* the counter only went backwards: tie to one read */
		ti->b.mid = nc__counter_read();
		ti->b.ref = nc__ref.mono();
		ti->b.width = 0;
	}
	double off_hw;
	ti->off = realtime_offset(&off_hw);
	ti->off_hw = off_hw;
	ti->hw = (double)ti->b.width * ns_tick / 2 + off_hw;
	/* On a busy machine every try may have been preempted: try again a
	 * few times; a tie still that wide is not used to correct anything
	 * (it could be off by its width), only to see a real step. */
	for (int again = 0; again < 3 && ti->hw > WIDE_NS; again++) {
		struct nc__bracket b2;
		double hw2;
		nc__take_bracket(&io, TIE_TRIES, &b2);
		int64_t off2 = realtime_offset(&hw2);
		if (b2.width != UINT64_MAX && (double)b2.width * ns_tick / 2 + hw2 < ti->hw) {
			ti->b = b2;
			ti->off = off2;
			ti->off_hw = hw2;
			ti->hw = (double)b2.width * ns_tick / 2 + hw2;
		}
	}
	ti->unsure = ti->hw > WIDE_NS;
	ti->real_at_mid = ti->b.ref + ti->off;
	if (read_kernel) {
		ti->have_k = nc__ref.kclock(&ti->k) == 0;
	} else {
		/* a set: the kernel's rate is looked at again at the period's tie */
		ti->have_k = wall.have_k;
		ti->k = wall.k;
	}
}

/* ---- followed_rate ---- */
/* The kernel's own rate moves that no measurement can foresee: its PLL
 * still slewing an offset, an adjtime() in progress. */
static double kernel_slew_ppm(const struct nc__kclock *k, int have_k)
{
	return !have_k ? 0 : fabs(k->pll_ppm) + (k->adjtime_active ? ADJTIME_PPM : 0);
}

static int kernel_rate_changed(const struct tie *ti) NC_REQUIRES(nc__lib_lock)
{
	return wall.have && ti->have_k && wall.have_k &&
	       fabs(nc__kclock_rate_ppm(&ti->k) - nc__kclock_rate_ppm(&wall.k)) > SAME_PPM;
}

/* ns of CLOCK_MONOTONIC per tick to follow from this tie, and its
 * uncertainty in ppm. */
static double followed_rate(const struct tie *ti, double ns_tick, double *rate_ppm)
	NC_REQUIRES(nc__lib_lock)
{
	double slew = kernel_slew_ppm(&ti->k, ti->have_k);
	if (kernel_rate_changed(ti) && wall.rate > 0) {
		/* the rate the kernel states, applied to the one last followed */
		double dk = nc__kclock_rate_ppm(&ti->k) - nc__kclock_rate_ppm(&wall.k);
		double r = wall.rate * (1 + nc__kclock_rate_ppm(&ti->k) * 1e-6) /
			   (1 + nc__kclock_rate_ppm(&wall.k) * 1e-6);
		/* the kernel applies a new frequency at its next timekeeping
		 * updates (its tick), not when adjtimex returns: until then the
		 * old rate runs, so the change itself is the uncertainty */
		*rate_ppm = wall.rate_ppm + slew + fabs(dk);
		return r;
	}
	if (wall.have && ti->b.mid > wall.a_tick && !ti->unsure) {
		double dt = (double)(ti->b.mid - wall.a_tick);
		double r = (double)(ti->b.ref - wall.a_mono) / dt;
		if (dt * ns_tick >= 0.05 * wall.period_ns && fabs(r / ns_tick - 1) < 2e-3) {
			*rate_ppm = (ti->hw + wall.hw_ns) / (dt * ns_tick) * 1e6 + NTP_DRIFT_PPM + slew;
			return r;
		}
	}
	/* no usable baseline (the first tie, a short or disturbed period): the
	 * counter's measured rate, moved by what the kernel states */
	double k = ti->have_k ? nc__kclock_rate_ppm(&ti->k) : 0;
	*rate_ppm = nc__rate_true_ppm() + slew;
	return ns_tick * (1 + k * 1e-6);
}

/* ---- publish and record ---- */
static void record(const struct tie *ti, double rate, double rate_ppm, double err, int why)
	NC_REQUIRES(nc__lib_lock)
{
	if (why != WHY_SET) {
		/* a set's re-tie read no adjtimex and moves no rate: the next
		 * period's rate is measured from the period's tie, against the
		 * kernel state seen there */
		wall.a_tick = ti->b.mid;
		wall.a_mono = ti->b.ref;
		wall.rate = rate;
		wall.rate_ppm = rate_ppm;
		wall.prev_kslew_ppm = kernel_slew_ppm(&wall.k, wall.have_k);
		wall.have_k = ti->have_k;
		wall.k = ti->k;
	}
	wall.have = 1;
	wall.tie_tick = ti->b.mid;
	wall.tie_real = ti->real_at_mid;
	wall.tie_rate = rate;
	wall.off = ti->off;
	wall.hw_ns = ti->hw;
	wall.tie_raw = nc__mono_raw_ns();
	wall.err_ns = err;
	double lead = (err < 0 ? -err : 0) + ti->hw + 2000 + wall.period_ns * wall.rate_ppm * 1e-6;
	__atomic_store_n(&wall.lead_ns, (int64_t)lead, __ATOMIC_RELAXED);
	__atomic_store_n(&wall.refreshes, wall.refreshes + 1, __ATOMIC_RELAXED);
}

/* Unchecked by design: a reader's bound, any context (an atomic load). */
static uint64_t wall_ahead_bound(void) NC_NO_TSA
{
	return (uint64_t)nc__ref.real() + (uint64_t)__atomic_load_n(&wall.lead_ns, __ATOMIC_RELAXED);
}

/* The phase "decide" (at the top), for a tie after the first: whether
 * the line follows a step of the system clock (returned), the difference
 * from the old line at the tie (*err_out, ns) and whether the clock was
 * set (*set_out). */
static int decide(const struct nc__epoch *old, uint64_t t, const struct tie *ti, int why,
		  double *err_out, int *set_out) NC_REQUIRES(nc__lib_lock)
{
	double err =
		(double)(int64_t)((uint64_t)ti->real_at_mid - nc__epoch_extended(old, ti->b.mid));
	double slewable = MAX_WALL_SLEW * wall.period_ns + ti->hw;
	int set, step;
	if (why == WHY_SET) {
		/* a set: a step as soon as the difference exceeds what the line
		 * may differ by without one (both ties' half-widths, the
		 * previous correction still being slewed in, and 1 us), as
		 * CLOCK_REALTIME steps — where REALTIME's offset from
		 * MONOTONIC moved, which only a set does.  A notice with the
		 * offset unmoved (a set to the same time, or an application's
		 * nc_unix_retie while the kernel slews the clock: the line
		 * then lags the rate by up to a period's slew) steps nothing */
		set = fabs((double)(ti->off - wall.off)) > ti->hw + wall.hw_ns + 1000;
		step = set && fabs(err) > 2 * ti->hw + wall.hw_ns + fabs(wall.err_ns) + 1000;
	} else {
		/* a period ended: a step back only where the system clock was
		 * set, which REALTIME's offset from MONOTONIC says (a rate
		 * change, ADJ_TICK's up to 10%, never moves it), and where the
		 * line is that far ahead, or the counter went back with the
		 * clock (the gettimeofday counter); a line that far behind
		 * steps forward, which keeps it monotonic */
		set = !wall.have || fabs((double)(ti->off - wall.off)) > slewable + wall.hw_ns;
		step = err > slewable || /* behind: forward, never back */
		       (set && (-err > slewable || (int64_t)(t - old->t0) < 0));
	}
	*err_out = err;
	*set_out = set;
	return step;
}

/* The set of the system clock since the listener last heard of one:
 * REALTIME's offset from MONOTONIC moved (only a set, a leap second or a
 * resume moves it) by more than both looks' brackets.  Whether or not the
 * line follows it as a step -- a set smaller than a period slews is slewed
 * in, and a line re-tied late takes it silently -- CLOCK_REALTIME moved by
 * this much from where a time source's older figures put it: the UTC bound
 * allows for it.  Returned in ns, > 0 forward, its size widened by both
 * brackets (0: none).  The time a resume injects moves BOOTTIME's offset
 * too and is not a set.  Kept, not told, while nobody listens: the UTC
 * source started later may take figures older than it.  Only a narrow
 * look is compared or kept (a wide one could hide a set in its bracket). */
NC_START static double set_since_told(const struct tie *ti) NC_REQUIRES(nc__lib_lock)
{
	if (ti->off_hw > WIDE_NS)
		return 0;
	if (!wall.told) {
		wall.told = 1;
		wall.off_told = ti->off;
		wall.off_told_hw = ti->off_hw;
		wall.boot_told = nc__events_slept(&wall.boot_told_hw);
		return 0;
	}
	double unc = ti->off_hw + wall.off_told_hw + 2; /* 2: the midpoints' rounding */
	double moved = (double)(ti->off - wall.off_told);
	if (fabs(moved) <= unc || !nc__wall_listener)
		return 0;
	double bhw;
	int64_t boot = nc__events_slept(&bhw);
	double slept = (double)(boot - wall.boot_told);
	if (fabs(slept) > bhw + wall.boot_told_hw + 2) {
		moved -= slept;
		unc += bhw + wall.boot_told_hw + 2;
	}
	wall.off_told = ti->off;
	wall.off_told_hw = ti->off_hw;
	wall.boot_told = boot;
	wall.boot_told_hw = bhw;
	if (fabs(moved) <= unc)
		return 0;
	return moved > 0 ? moved + unc : moved - unc;
}

/* The next epoch where the tie is late (nobody asked for a while): re-tie
 * at the tie, never below what readers may have been handed, slewing any
 * rest.  L: old's end; behind: the read that asked is before old's start. */
static void late_epoch(const struct nc__epoch *old, uint64_t L, const struct tie *ti, double rate,
		       int behind, struct nc__epoch *e) NC_REQUIRES(nc__lib_lock)
{
	uint64_t floor_v = nc__timeline_reader_value(&nc__wall_timeline, old, ti->b.mid);
	uint64_t v = (uint64_t)ti->real_at_mid;
	double adj = 0;
	if ((int64_t)(v - floor_v) < 0) {
		adj = -(double)(int64_t)(floor_v - v) / wall.period_ns;
		v = floor_v;
	}
	e->t0 = ti->b.mid;
	nc__slope_from_ns(rate * (1 + fmax(-MAX_WALL_SLEW, adj)), e);
	if (!behind && ti->b.mid - L <= nc__epoch_horizon_ticks(old))
		nc__clamp_slope(old, e); /* readers past L were handed at least this */
	e->c0 = nc__c0_for(e->t0, v, e->mi, e->mf);
}

/* The next epoch where the tie is on time: continue from old's end L,
 * meeting the system clock a period (span ticks) on; t: the read that
 * asked, mid_epoch: before L. */
static void on_time_epoch(const struct nc__epoch *old, uint64_t L, uint64_t t, const struct tie *ti,
			  double rate, uint64_t span, int mid_epoch, struct nc__epoch *e)
	NC_REQUIRES(nc__lib_lock)
{
	uint64_t cl = nc__epoch_end_value(old);
	/* differences first: an absolute Unix time has a 256 ns ulp in a double */
	double err_l = (double)(int64_t)((uint64_t)ti->real_at_mid - cl) +
		       (double)(int64_t)(L - ti->b.mid) * rate;
	double len_ns = ((double)(int64_t)(t - L > 0 && !mid_epoch ? t - L : 0) + (double)span) *
			rate;
	double adj = err_l / len_ns;
	adj = fmax(adj < -MAX_WALL_SLEW * 1.5 ? -MAX_BACK_SLEW : -MAX_WALL_SLEW,
		   fmin(MAX_WALL_SLEW, adj));
	e->t0 = L;
	nc__slope_from_ns(rate * (1 + adj), e);
	nc__clamp_slope(old, e); /* readers past L were handed at least this */
	e->c0 = nc__c0_for(e->t0, cl, e->mi, e->mf);
}

/* ---- wall_update: the phases in order ----
 * old: the published epoch, or NULL for the first tie; t: the read that
 * asked for it. */
NC_START
static void wall_update(const struct nc__epoch *old, uint64_t t, int why) NC_REQUIRES(nc__lib_lock)
{
	NC_LOCK_HELD();
	double ns_tick = 1e9 / nc__rate_true_hz(); /* the counter's own rate */
	struct tie ti;
	take_tie(&ti, ns_tick, why != WHY_SET); /* a set is followed at once: no system call more */
	double rate_ppm, rate = followed_rate(&ti, ns_tick, &rate_ppm);
	uint64_t span = (uint64_t)(wall.period_ns / ns_tick);

	/* decide */
	double err = 0;
	int set = 0;
	int step = old ? decide(old, t, &ti, why, &err, &set) : 1;
	/* the set for the listener, ns, > 0 forward: not from a tie too wide
	 * to trust (the next one tells it) */
	double moved = !step && ti.unsure ? 0 : set_since_told(&ti);
	/* A set with nothing to follow (a set to the same time, or the line
	 * already where it goes): keep the line, which the next refresh slews
	 * on schedule.  A re-tie inside the epoch cannot lower its slope:
	 * readers still on the old copy would be handed more than its
	 * successor. */
	if (why == WHY_SET && !step) {
		if (moved != 0 && nc__wall_listener)
			nc__wall_listener(0, moved);
		return;
	}
	uint64_t L = old ? old->t0 + old->span : 0;
	/* where the read that asked for the tie is: behind the epoch's start
	 * (a reset counter), inside it (a set), or past its end */
	int behind = old && (int64_t)(t - old->t0) < 0;
	int mid_epoch = old && !behind && (int64_t)(t - L) < 0;
	struct nc__epoch e;
	if (!step && ti.unsure) {
		/* no trustworthy tie: the old epoch goes on, as it was */
		e = *old;
		e.span = ((int64_t)(t - e.t0) > 0 ? t - e.t0 : 0) + span;
		publish(&e);
		nc__log(NC_LOG_DEBUG, "tie to the system clock skipped: bracket +-%.0f ns", ti.hw);
		if (nc__wall_listener)
			nc__wall_listener(why == WHY_PERIOD, 0);
		return;
	} else if (step) {
		/* follow the system clock's step: from the tie, at its rate */
		e.t0 = ti.b.mid;
		nc__slope_from_ns(rate, &e);
		e.c0 = nc__c0_for(e.t0, (uint64_t)ti.real_at_mid, e.mi, e.mf);
		if (old && set) {
			__atomic_store_n(&wall.steps, wall.steps + 1, __ATOMIC_RELAXED);
			nc__log(NC_LOG_INFO, "system clock %s by %+.6f s: followed as a step",
				why == WHY_SET ? "set" : "stepped", err / 1e9);
		} else if (old) {
			nc__log(NC_LOG_INFO, "Unix time was %.6f s behind the system clock, whose rate "
				"changed faster than a period slews: stepped forward", err / 1e9);
		}
		err = 0;
	} else if (behind || (!mid_epoch && t - L > nc__epoch_horizon_ticks(old))) {
		late_epoch(old, L, &ti, rate, behind, &e);
	} else {
		on_time_epoch(old, L, t, &ti, rate, span, mid_epoch, &e);
	}
	e.span = ((int64_t)(t - e.t0) > 0 ? t - e.t0 : 0) + span;
	publish(&e);
	/* what the new line is off the system clock at the tie: the correction
	 * its slope slews in (an epoch that starts at L, before the tie, has
	 * already run at its new rate since) */
	double left = (double)(int64_t)((uint64_t)ti.real_at_mid - nc__epoch_value(&e, ti.b.mid));
	record(&ti, rate, rate_ppm, left, why);
	if (nc__wall_listener)
		nc__wall_listener(why == WHY_PERIOD, moved);
	nc__log(NC_LOG_DEBUG, "Unix time tied: +-%.0f ns, %+.0f ns to slew in (%+.0f from the old "
		"line), CLOCK_MONOTONIC %+.3f ppm from the counter's rate (+-%.3f)", ti.hw, left, err,
		(rate / ns_tick - 1) * 1e6, rate_ppm);
}

/* ---- the timeline's entries ---- */
static void wall_refresh(const struct nc__epoch *old, uint64_t t) NC_REQUIRES(nc__lib_lock)
{
	uint64_t seq = nc__latch_seq(&nc_impl_g.wall);
	nc__events_check(); /* a suspend, a jump, a stop: seen within a period */
	if (nc__latch_seq(&nc_impl_g.wall) != seq)
		return; /* re-tied meanwhile (the counter stopped) */
	wall_update(old, t, WHY_PERIOD);
}

/* The counter changed under Unix time (it stopped): tie again. */
static void wall_counter_changed(void) NC_REQUIRES(nc__lib_lock)
{
	wall.have = 0;
	wall_update(NULL, nc__counter_read(), WHY_FIRST);
}

static void wall_system_clock(int set) NC_REQUIRES(nc__lib_lock)
{
	if (!set)
		return; /* a rate change is followed at the end of the epoch */
	struct nc__epoch old;
	uint64_t kind;
	nc__line_read(&nc_impl_g.wall, &old, &kind);
	wall_update(&old, nc__timeline_counter(&nc__wall_timeline, kind), WHY_SET);
}

/* Unchecked by design: the debug build's readers ask it, any context (an
 * atomic load). */
uint32_t nc__wall_steps(void) NC_NO_TSA { return __atomic_load_n(&wall.steps, __ATOMIC_RELAXED); }

const struct nc__timeline nc__wall_timeline = {
	.name = "nc_unix_ns",
	.line = &nc_impl_g.wall,
	.read = wall_read,
	.refresh = wall_refresh,
	.counter_changed = wall_counter_changed,
	.system_clock = wall_system_clock,
	.steps = nc__wall_steps,
	.ahead_bound = wall_ahead_bound,
};

NC_START void nc__wall_start(double period_ms)
{
	wall.period_ns = (period_ms > 0 ? period_ms : 1000) * 1e6;
	wall_update(NULL, nc__counter_read(), WHY_FIRST);
}

void nc__wall_set_period(double ms) { wall.period_ns = ms * 1e6; /* from the next refresh on */ }
double nc__wall_period_ms(void) { return wall.period_ns / 1e6; }

void nc__wall_retie(void)
{
	struct nc__epoch old;
	uint64_t kind;
	nc__line_read(&nc_impl_g.wall, &old, &kind);
	uint64_t t = nc__timeline_counter(&nc__wall_timeline, kind);
	wall_update(&old, t, WHY_SET);
}

void (*nc__wall_listener)(int period, double stepped_ns);

void nc__wall_tell_sets(void)
{
	if (!wall.have || !nc__wall_listener)
		return;
	struct tie ti;
	memset(&ti, 0, sizeof(ti));
	ti.off = realtime_offset(&ti.off_hw);
	for (int again = 0; again < 3 && ti.off_hw > WIDE_NS; again++) { /* preempted: as take_tie */
		double hw;
		int64_t off = realtime_offset(&hw);
		if (hw < ti.off_hw)
			ti.off = off, ti.off_hw = hw;
	}
	double moved = set_since_told(&ti);
	if (moved != 0)
		nc__wall_listener(0, moved);
}

void nc__wall_tie(struct nc__wall_tie *t)
{
	NC_LOCK_HELD();
	nc__latch_read_line(&nc_impl_g.wall, &t->line);
	t->tick = wall.tie_tick;
	t->ns_per_tick = 1e9 / nc__rate_true_hz();
	/* as nc__wall_status's model: the brackets, the correction being
	 * slewed in, and the followed rate's uncertainty and the kernel's
	 * slew over the tie's age */
	t->err0_ns = wall.hw_ns + fabs(wall.err_ns);
	/* the kernel applies its PLL's offset in one-second chunks: for up to
	 * a second after a daemon replaced the offset, the chunk of the old
	 * one may still run, which adjtimex does not show: the previous tie's
	 * slew stands in for it where it was the larger */
	double ks = kernel_slew_ppm(&wall.k, wall.have_k);
	t->ppm = wall.rate_ppm + (wall.prev_kslew_ppm > ks ? wall.prev_kslew_ppm : ks);
	t->have_k = wall.have_k;
	t->k = wall.k;
}

/* The error model alone: what the tie, the correction left and the
 * rates say the line may be off CLOCK_REALTIME by now, given the kernel's
 * state k (nc__wall_status adds a look at the clock to it) */
double nc__wall_model_ns(const struct nc__kclock *k, int have_k)
{
	NC_LOCK_HELD();
	double age_s = (double)(nc__mono_raw_ns() - wall.tie_raw) / 1e9;
	/* the kernel's rate moved since the tie (by what adjtimex states, and
	 * by what its PLL or an adjtime() may): the line follows from its next
	 * epoch; until then it drifts by that much */
	double moved_ppm = 0;
	if (have_k && wall.have_k)
		moved_ppm = fabs(nc__kclock_rate_ppm(k) - nc__kclock_rate_ppm(&wall.k));
	moved_ppm += kernel_slew_ppm(k, have_k);
	/* where the published line is now against where CLOCK_REALTIME is by
	 * the tie and the rate followed: the correction left at the tie as the
	 * line's actual slope has slewed it since (a slope clamped for readers
	 * already past the epoch's end can overshoot |left|) */
	double off_now = fabs(wall.err_ns);
	if (wall.have && wall.tie_rate > 0) {
		struct nc__epoch e;
		uint64_t kind;
		nc__line_read(&nc_impl_g.wall, &e, &kind);
		uint64_t t = nc__timeline_counter(&nc__wall_timeline, kind);
		uint64_t v = nc__timeline_reader_value(&nc__wall_timeline, &e, t);
		double want = (double)(int64_t)(t - wall.tie_tick) * wall.tie_rate;
		double pred = (double)(int64_t)(v - (uint64_t)wall.tie_real) - want;
		if (fabs(pred) > off_now)
			off_now = fabs(pred);
	}
	return wall.hw_ns + off_now + age_s * (wall.rate_ppm + moved_ppm) * 1e3;
}

void nc__wall_status(struct nc_unix_status *st, struct nc__kclock *k, int *have_k)
{
	NC_LOCK_HELD();
	*have_k = nc__ref.kclock(k) == 0;
	st->tie_halfwidth_ns = wall.hw_ns;
	st->tie_age_s = (double)(nc__mono_raw_ns() - wall.tie_raw) / 1e9;
	double model = nc__wall_model_ns(k, *have_k);
	/* The model cannot see what it was not told: a kernel frequency that
	 * moved and came back between two looks (chrony slewing an offset
	 * out), a clock the kernel slewed harder than it said.  So look: the
	 * line against CLOCK_REALTIME now, the narrowest of three brackets,
	 * and state the larger. */
	double seen = 0, best = 1e30;
	for (int i = 0; i < 3; i++) {
		struct nc__epoch e;
		uint64_t kind;
		nc__line_read(&nc_impl_g.wall, &e, &kind);
		int64_t a = nc__ref.real();
		uint64_t v = nc__timeline_reader_value(&nc__wall_timeline, &e,
						       nc__timeline_counter(&nc__wall_timeline, kind));
		int64_t b = nc__ref.real();
		if (b >= a && (double)(b - a) < best) {
			best = (double)(b - a);
			seen = fabs((double)(int64_t)(v - (uint64_t)(a + (b - a) / 2))) + best / 2;
		}
	}
	st->tie_error_ns = seen > model ? seen : model;
	st->steps = __atomic_load_n(&wall.steps, __ATOMIC_RELAXED);
	st->refreshes = __atomic_load_n(&wall.refreshes, __ATOMIC_RELAXED);
}
