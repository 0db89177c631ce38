/* SPDX-License-Identifier: MIT */
/*
 * Unix time: nc_unix_ns's line, tied to the system clock every period
 * (1 s by default).
 *
 * CLOCK_REALTIME is CLOCK_MONOTONIC plus an offset that changes only when
 * the clock is set (settimeofday, an NTP step, a leap second, a resume
 * from suspend); CLOCK_MONOTONIC carries NTP's frequency corrections and
 * slewing.  So a tie has two parts: the counter against CLOCK_MONOTONIC
 * (the narrowest of 8 brackets: ordered counter read, CLOCK_MONOTONIC,
 * ordered counter read), and REALTIME's offset from MONOTONIC (the
 * narrowest of 4: MONOTONIC, REALTIME, MONOTONIC).  At each refresh
 * (wall_update):
 *   - the rate to follow is CLOCK_MONOTONIC's against the counter since the
 *     previous tie: NTP's corrections are followed, and a set of the clock,
 *     which MONOTONIC does not see, never pollutes it;
 *   - err = (MONOTONIC + offset) - the old epoch's value at the tie is the
 *     correction to make;
 *   - if |err| fits in what the next period can slew at MAX_WALL_SLEW
 *     (1000 ppm: twice NTP's own slew), the next epoch starts where the old
 *     one ends, continuous, and its slope (rate * (1 + err/period), never
 *     below the lock-free floor of timeline.c) meets the system clock at
 *     its end: nc_unix_ns never decreases;
 *   - otherwise the clock was stepped: the next epoch starts at the tie,
 *     with the system clock's value — a step like the system clock's own.
 *     The upkeep thread learns of a clock set as it happens and re-ties at
 *     once, mid-epoch, by the same rule: a set smaller than a period's slew
 *     (1 ms by default) is slewed in, a larger one followed as a step.
 * What nc_unix_ns may be off CLOCK_REALTIME by (tie_error): the two
 * brackets' half-widths, the correction still being slewed in, and the
 * rate's uncertainty times the tie's age.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_WALL_SLEW 1000e-6
#define TIE_TRIES 8
#define NTP_DRIFT_PPM 0.1 /* NTP's frequency moving within a period, allowed for */
#define WIDE_NS 20000.0   /* a tie wider than this was preempted: not used to correct */

static struct {
	double period_ns;
	int have;            /* a tie was made */
	uint64_t a_tick;     /* the previous tie: where the rate is measured from */
	int64_t a_mono;
	double hw_ns;        /* the latest tie's half-widths (both parts) */
	int64_t tie_raw;     /* CLOCK_MONOTONIC_RAW at the latest tie */
	double err_ns;       /* the correction being slewed in */
	double rate_ppm;     /* uncertainty of the rate followed */
	uint32_t steps, refreshes;
} W = {.period_ns = 1e9};

static void wall_refresh(const struct nc_impl_line *p, uint64_t t);
static const struct nc__timeline wall_tl = {&nc_impl_g.wall, wall_refresh};

static uint64_t tie_read(void *ctx)
{
	(void)ctx;
	return nc__read_ordered(nc__S.now_kind);
}
static int64_t tie_mono(void *ctx)
{
	(void)ctx;
	return nc__ref.mono();
}

/* REALTIME - MONOTONIC, and half the bracket it was read in */
static int64_t realtime_offset(double *hw)
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

static void publish_wall(const struct nc__epoch *e)
{
	nc__publish_line(&nc_impl_g.wall, nc__S.now_kind, e, nc__S.now_inline);
}

/* old: the published epoch, or NULL for the first tie; t: the read that
 * asked for it; force_step: the system clock was set. */
static void wall_update(const struct nc__epoch *old, uint64_t t, int force_step)
{
	struct nc__lib *S = &nc__S;
	struct nc__bracket b;
	struct nc__calib_io io = {NULL, tie_read, tie_mono};
	nc__take_bracket(&io, TIE_TRIES, &b);
	/* the measured rate: Unix time follows the system clock, even where
	 * NANOCLOCK_HZ_FORCE imposed another rate on intervals */
	double ns_tick = 1e9 / nc__true_hz();
	if (b.width == UINT64_MAX) { /* the counter only went backwards: tie to one read */
		b.mid = nc__read_ordered(S->now_kind);
		b.ref = nc__ref.mono();
		b.width = 0;
	}
	double off_hw;
	int64_t off = realtime_offset(&off_hw);
	double hw = (double)b.width * ns_tick / 2 + off_hw;
	/* On a busy machine every try may have been preempted: try again a
	 * few times; a tie still that wide is not used to correct anything
	 * (it could be off by its width), only to see a real step. */
	for (int again = 0; again < 3 && hw > WIDE_NS; again++) {
		struct nc__bracket b2;
		double hw2;
		nc__take_bracket(&io, TIE_TRIES, &b2);
		int64_t off2 = realtime_offset(&hw2);
		if (b2.width != UINT64_MAX && (double)b2.width * ns_tick / 2 + hw2 < hw) {
			b = b2;
			off = off2;
			hw = (double)b2.width * ns_tick / 2 + hw2;
		}
	}
	int unsure = hw > WIDE_NS;
	int64_t real_at_mid = b.ref + off;
	/* CLOCK_MONOTONIC's rate, in ns per tick, since the previous tie */
	double rate = ns_tick, rate_ppm = S->ppm;
	if (W.have && b.mid > W.a_tick && !unsure) {
		double dt = (double)(b.mid - W.a_tick);
		double r = (double)(b.ref - W.a_mono) / dt;
		if (dt * ns_tick >= 0.05 * W.period_ns && fabs(r / ns_tick - 1) < 2e-3) {
			rate = r;
			rate_ppm = (hw + W.hw_ns) / (dt * ns_tick) * 1e6 + NTP_DRIFT_PPM;
		}
	}
	uint64_t span = (uint64_t)(W.period_ns / ns_tick);
	struct nc__epoch e;
	double err = 0;
	int step = old == NULL;
	if (old) {
		err = (double)(int64_t)((uint64_t)real_at_mid - nc__epoch_value(old, b.mid));
		/* A period ended: a difference larger than a period's slew is a
		 * step of the system clock, followed; a smaller one is slewed.
		 * Forced (the system clock was set): a step as soon as the
		 * difference exceeds what the line may differ by without a set
		 * (both ties' half-widths, the previous correction still being
		 * slewed in, and 1 us), as CLOCK_REALTIME steps. */
		step = force_step ? fabs(err) > 2 * hw + W.hw_ns + fabs(W.err_ns) + 1000
				  : fabs(err) > MAX_WALL_SLEW * W.period_ns + hw;
		/* Forced with no set to follow (a set to the same time): keep the
		 * line, which the next refresh slews on schedule.  A re-tie inside
		 * the epoch cannot start at once below what readers still on the
		 * old line are handed meanwhile (a slope lowered mid-epoch falls
		 * under the old one's values): bench stress saw nc_unix_ns go back. */
		if (force_step && !step)
			return;
	}
	uint64_t L = old ? old->t0 + old->span : 0;
	/* where the read that asked for the tie is: behind the epoch's start
	 * (a reset counter), inside it (a forced step), or past its end */
	int behind = old && (int64_t)(t - old->t0) < 0;
	int mid_epoch = old && !behind && (int64_t)(t - L) < 0;
	if (!step && unsure) {
		/* no trustworthy tie: the old epoch goes on, as it was */
		e = *old;
		e.span = ((int64_t)(t - e.t0) > 0 ? t - e.t0 : 0) + span;
		publish_wall(&e);
		nc__log_locked(NC_LOG_DEBUG, "tie to the system clock skipped: bracket +-%.0f ns", hw);
		return;
	} else if (step) {
		/* follow the system clock's step: from the tie, at its rate */
		e.t0 = b.mid;
		nc__slope_from_ns(rate, &e);
		e.c0 = nc__c0_for(b.mid, (uint64_t)real_at_mid, e.mi, e.mf);
		if (old) {
			__atomic_store_n(&W.steps, W.steps + 1, __ATOMIC_RELAXED);
			nc__log_locked(NC_LOG_INFO, "system clock %s by %+.6f s: followed as a step",
				       force_step ? "set" : "stepped", err / 1e9);
		}
		err = 0;
	} else if (behind || (!mid_epoch && t - L > nc__lockfree_ticks)) {
		/* late (nobody asked for a while): re-tie at the tie, never below
		 * what readers may have been handed, slewing any rest */
		uint64_t ceiling = nc__lockfree_ceiling(old);
		uint64_t v = (uint64_t)real_at_mid;
		double adj = 0;
		if ((int64_t)(v - ceiling) < 0 && b.mid >= L) {
			adj = -(double)(int64_t)(ceiling - v) / W.period_ns;
			v = ceiling;
		}
		e.t0 = b.mid;
		nc__slope_from_ns(rate * (1 + fmax(-MAX_WALL_SLEW, adj)), &e);
		e.c0 = nc__c0_for(b.mid, v, e.mi, e.mf);
	} else {
		/* on time: continue from L, meeting the system clock a period on */
		uint64_t cl = nc__epoch_value(old, L);
		/* differences first: an absolute Unix time has a 256 ns ulp in a double */
		double err_l = (double)(int64_t)((uint64_t)real_at_mid - cl) +
			       (double)(int64_t)(L - b.mid) * rate;
		double len_ns = ((double)(int64_t)(t - L > 0 && !mid_epoch ? t - L : 0) + (double)span) *
				rate;
		double adj = fmax(-MAX_WALL_SLEW, fmin(MAX_WALL_SLEW, err_l / len_ns));
		e.t0 = L;
		nc__slope_from_ns(rate * (1 + adj), &e);
		nc__clamp_slope(old, &e); /* lock-free readers assumed at least this past L */
		e.c0 = nc__c0_for(L, cl, e.mi, e.mf);
	}
	e.span = ((int64_t)(t - e.t0) > 0 ? t - e.t0 : 0) + span;
	publish_wall(&e);
	W.have = 1;
	W.a_tick = b.mid;
	W.a_mono = b.ref;
	W.hw_ns = hw;
	W.tie_raw = nc__mono_raw_ns();
	W.err_ns = err;
	W.rate_ppm = rate_ppm;
	__atomic_store_n(&W.refreshes, W.refreshes + 1, __ATOMIC_RELAXED);
}

static void wall_refresh(const struct nc_impl_line *p, uint64_t t)
{
	struct nc__epoch old;
	nc__line_epoch(p, &old);
	nc__upkeep_after_fork_check();
	nc__observe(); /* a suspend, a jump, a stop: seen within a period */
	if (__atomic_load_n(&nc_impl_g.wall.seq, __ATOMIC_ACQUIRE) != p->seq)
		return; /* re-tied meanwhile (the counter stopped) */
	wall_update(&old, t, 0);
}

void nc__wall_first(void)
{
	if (nc__S.cfg.unix_refresh_ms > 0)
		W.period_ns = nc__S.cfg.unix_refresh_ms * 1e6;
	wall_update(NULL, nc__read_ordered(nc__S.now_kind), 0);
}

/* The counter changed under nc_unix_ns (it stopped; nc__mu held): tie again. */
void nc__wall_counter_changed(void)
{
	W.have = 0;
	wall_update(NULL, nc__read_ordered(nc__S.now_kind), 0);
}

int64_t nc_impl_unix_slow(void)
{
	nc__ensure_init();
	nc__slow_calls++;
	return (int64_t)nc__timeline_read(&wall_tl);
}

int64_t nc_ticks_to_unix_ns(uint64_t ticks)
{
	nc__ensure_init();
	struct nc_impl_line p;
	struct nc__epoch e;
	nc__snapshot(&nc_impl_g.wall, &p);
	nc__line_epoch(&p, &e);
	return (int64_t)nc__epoch_value(&e, ticks); /* the tie, extended either way */
}

/* The system clock was set (upkeep thread): a step now, if there is one. */
void nc__wall_clock_was_set(void)
{
	nc__ensure_init();
	struct nc_impl_line p;
	struct nc__epoch old;
	nc__lock();
	nc__snapshot(&nc_impl_g.wall, &p);
	nc__line_epoch(&p, &old);
	wall_update(&old, nc__read_ordered(p.kind), 1);
	nc__unlock();
}

/* ns until the tie is due (0: due) */
double nc__wall_due_ns(void)
{
	struct nc_impl_line p;
	nc__snapshot(&nc_impl_g.wall, &p);
	uint64_t d = nc__read_ordered(p.kind) - p.t0;
	return d >= p.span ? 0 : (double)(p.span - d) * 1e9 / nc__true_hz();
}

/* The upkeep thread: refresh if due, as a reader would. */
void nc__wall_upkeep(void)
{
	struct nc_impl_line p;
	nc__snapshot(&nc_impl_g.wall, &p);
	uint64_t t = nc__read_ordered(p.kind);
	if (t - p.t0 >= p.span && (int64_t)(t - p.t0) >= 0) {
		nc__lock();
		if (__atomic_load_n(&nc_impl_g.wall.seq, __ATOMIC_ACQUIRE) == p.seq)
			wall_refresh(&p, t);
		nc__unlock();
	}
}

double nc__wall_refresh_ns(void) { return W.period_ns; }

/* may be called without the lock (the debug build's order check) */
void nc__wall_events(uint32_t *steps, uint32_t *refreshes)
{
	*steps = __atomic_load_n(&W.steps, __ATOMIC_RELAXED);
	*refreshes = __atomic_load_n(&W.refreshes, __ATOMIC_RELAXED);
}

int nc_set_unix_refresh_ms(double ms)
{
	if (!(ms >= 1 && ms <= 60000))
		return NC_ERANGE;
	nc__ensure_init();
	nc__lock();
	W.period_ns = ms * 1e6; /* from the next refresh on */
	nc__unlock();
	return 0;
}

int nc_get_unix_status(struct nc_unix_status *st)
{
	if (!st)
		return NC_EINVAL;
	nc__ensure_init();
	(void)nc_unix_ns(); /* refresh a stale tie first, as a reader would */
	memset(st, 0, sizeof(*st));
	nc__lock();
	nc__observe();
	double age_s = (double)(nc__mono_raw_ns() - W.tie_raw) / 1e9;
	st->tie_halfwidth_ns = W.hw_ns;
	st->tie_age_s = age_s;
	double tie_error = W.hw_ns + fabs(W.err_ns) + age_s * W.rate_ppm * 1e3;
	st->steps = W.steps;
	st->refreshes = W.refreshes;
	nc__unlock();
	struct nc__kclock k;
	int have = nc__ref.kclock(&k) == 0;
	nc__utc_decode(&k, have, tie_error, st);
	return 0;
}
