/* SPDX-License-Identifier: MIT */
/*
 * The timelines the inline fast path reads (nanoclock_impl.h): their
 * publication, their epochs, the out-of-line reads, and nc_now_ns's own
 * refresh.  Unix time's line is refreshed in wall.c with the same
 * machinery.
 *
 * Publication is a seqlock per 64-byte line (nc__publish_line).  The
 * writer makes seq odd, issues a release fence, rewrites the fields and
 * stores the new even seq with release; each fence says which fence it
 * pairs with.
 *
 * Epochs.  A line holds one epoch: for counter values t in [t0, t0 + span)
 * the value is c0 + floor(t * m), m = ns per tick as a 64.64 number.  A
 * read at or past the end takes the slow path, whose refresh starts the
 * next epoch at L = t0 + span with the value the old one had at L, exactly
 * as readers computed it: values are continuous at L, every slope is
 * positive, so the line never decreases (wall.c adds steps of the system
 * clock, which are meant to be steps).
 *
 * nc_now_ns's refresh measures the rate over the long baseline since the
 * last anchor (calibrate.c) and picks the next slope so that the clock
 * meets CLOCK_MONOTONIC_RAW at the end of the next epoch (slewing, at most
 * 500 ppm; a clock more than 1 ms behind steps forward — never back).
 * Epoch lengths double (4x the first calibration window, up to 1 s), so
 * refreshing costs one bracketed clock_gettime a second.  Every refresh of
 * either line (and the upkeep thread, nc_get_info and nc_unix_status)
 * also compares the counter with CLOCK_MONOTONIC_RAW and CLOCK_BOOTTIME
 * since the last look (nc__observe): a suspend, a counter that jumped,
 * changed rate or stopped is counted; on a discontinuity the long
 * baseline is re-anchored, the rate re-measured and nc_now_ns re-tied at
 * once.  A counter that ran through a suspend (or a VM pause) carries
 * nc_now_ns ahead of CLOCK_MONOTONIC_RAW by at most what was left of the
 * epoch (1 s), which is then slewed out; readers alone cannot see a
 * counter that stopped (it is their only clock): the upkeep thread, or
 * the next nc_get_info/nc_unix_status, does.
 *
 * Readers never wait for a refresh.  The first reader past the end takes
 * the refresh (a trylock); the others, meanwhile, return a lower bound of
 * what the next epoch will say: the old value at L plus (t - L) at the
 * slowest slope the refresh may choose (the old one less 1/256; every
 * refresh clamps to it).  Any value a later epoch gives for a later t is
 * at least that, so order is kept, and the bound is off by at most ~0.4%
 * of the time the refresh takes (nanoseconds).  Only a reader far past the
 * end (more than LOCKFREE_NS: the process slept, the machine was
 * suspended) or far behind the start (the counter was reset) waits, for a
 * re-tie that no lower bound could anticipate.
 */
#include "internal.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

struct nc_impl_state nc_impl_g = {.now = {.seq = 1}, .wall = {.seq = 1}, .conv_seq = 1};
__thread long nc__slow_calls;

#define MAX_EPOCH_NS 1e9        /* refresh at least every second: also bounds how far a
				   counter that ran through a suspend can carry nc_now_ns */
#define MAX_SLEW 500e-6         /* fraction of the rate */
#define STEP_FORWARD_NS 1e6     /* further behind than this: step */
#define LOCKFREE_NS 1e6         /* readers this far past an epoch's end do not wait */
#define BEHIND_NS 1e6           /* a counter further behind an epoch start was reset */
#define SUSPEND_NS 1e6          /* BOOTTIME ahead of MONOTONIC_RAW by more: a suspend */

/* Set once by nc__publish_first, read-only afterwards. */
uint64_t nc__lockfree_ticks, nc__behind_ticks;

/* ---- the line formula, as the fast path computes it ---- */
static uint64_t floor_mul(uint64_t t, uint64_t mi, uint64_t mf)
{
	uint64_t lo;
	return t * mi + nc_impl_mulhi(t, mf, &lo);
}

uint64_t nc__epoch_value(const struct nc__epoch *e, uint64_t t)
{
	return e->c0 + floor_mul(t, e->mi, e->mf);
}

uint64_t nc__c0_for(uint64_t L, uint64_t V, uint64_t mi, uint64_t mf)
{
	return V - floor_mul(L, mi, mf);
}

/* m - m/256 in 64.64: the slowest slope a refresh may follow m with
 * (3900 ppm slower: room for Unix time to follow NTP's fastest slew and
 * correct its own error in the same period) */
static void slope_min(uint64_t mi, uint64_t mf, uint64_t *oi, uint64_t *of)
{
	uint64_t di = mi >> 8, df = (mf >> 8) | (mi << 56);
	*oi = mi - di - (mf < df);
	*of = mf - df;
}

void nc__clamp_slope(const struct nc__epoch *old, struct nc__epoch *e)
{
	uint64_t mi, mf;
	slope_min(old->mi, old->mf, &mi, &mf);
	if (e->mi < mi || (e->mi == mi && e->mf < mf)) {
		e->mi = mi;
		e->mf = mf;
	}
}

int nc__slope_from_ns(double ns_per_tick, struct nc__epoch *e)
{
	return ns_per_tick > 0 ? nc__ns_per_tick(1e9 / ns_per_tick, &e->mi, &e->mf) : NC_ERANGE;
}

/* The largest value a lock-free reader may have returned past the end of
 * epoch e: a floor for a re-tie. */
uint64_t nc__lockfree_ceiling(const struct nc__epoch *e)
{
	uint64_t mi, mf;
	slope_min(e->mi, e->mf, &mi, &mf);
	return nc__epoch_value(e, e->t0 + e->span) + floor_mul(nc__lockfree_ticks, mi, mf);
}

static uint64_t lower_bound(const struct nc__epoch *e, uint64_t t)
{
	uint64_t L = e->t0 + e->span, mi, mf;
	slope_min(e->mi, e->mf, &mi, &mf);
	return nc__epoch_value(e, L) + floor_mul(t - L, mi, mf);
}

/* ---- publication ---- */
#ifdef NC_TSAN
#define ST_ORDER __ATOMIC_RELEASE
#else
#define ST_ORDER __ATOMIC_RELAXED
#endif

void nc__publish_line(struct nc_impl_line *l, uint64_t kind, const struct nc__epoch *e,
		      int inline_ok)
{
	uint64_t s = __atomic_load_n(&l->seq, __ATOMIC_RELAXED);
	int first = s & 1; /* the initial odd value: no reader has seen the line yet */
#ifdef NC_DEBUG
	/* every read goes through the library, where it is checked */
	inline_ok = 0;
	if (first && s != 1)
		nc__debug_fail("seqlock: a line was odd (%llu) when a writer began",
			       (unsigned long long)s);
	if (e->span == 0 || (e->mi == 0 && e->mf == 0))
		nc__debug_fail("epoch published with span %llu and a zero slope",
			       (unsigned long long)e->span);
#endif
	if (!first) {
		__atomic_store_n(&l->seq, s + 1, __ATOMIC_RELAXED);
#ifndef NC_TSAN
		/* pairs with the reader's acquire fence between its field loads
		 * and its second load of seq: a reader that saw any field below
		 * sees the odd seq there and retries */
		__atomic_thread_fence(__ATOMIC_RELEASE);
#endif
	}
	__atomic_store_n(&l->kind, kind, ST_ORDER);
	__atomic_store_n(&l->t0, e->t0, ST_ORDER);
	__atomic_store_n(&l->len, inline_ok ? e->span : 0, ST_ORDER);
	__atomic_store_n(&l->c0, e->c0, ST_ORDER);
	__atomic_store_n(&l->mul_int, e->mi, ST_ORDER);
	__atomic_store_n(&l->mul_frac, e->mf, ST_ORDER);
	__atomic_store_n(&l->span, e->span, ST_ORDER);
	/* pairs with the reader's acquire load of seq: a reader that sees the
	 * new even seq sees every field above */
	__atomic_store_n(&l->seq, first ? 2 : s + 2, __ATOMIC_RELEASE);
}

void nc__snapshot(const struct nc_impl_line *l, struct nc_impl_line *p)
{
	for (unsigned spins = 0;; spins++) {
		p->seq = __atomic_load_n(&l->seq, __ATOMIC_ACQUIRE);
		p->kind = __atomic_load_n(&l->kind, NC_LD_ORDER);
		p->t0 = __atomic_load_n(&l->t0, NC_LD_ORDER);
		p->len = __atomic_load_n(&l->len, NC_LD_ORDER);
		p->c0 = __atomic_load_n(&l->c0, NC_LD_ORDER);
		p->mul_int = __atomic_load_n(&l->mul_int, NC_LD_ORDER);
		p->mul_frac = __atomic_load_n(&l->mul_frac, NC_LD_ORDER);
		p->span = __atomic_load_n(&l->span, NC_LD_ORDER);
		NC_RFENCE(); /* pairs with nc__publish_line's release fence */
		if (!(p->seq & 1) && p->seq == __atomic_load_n(&l->seq, NC_LD_ORDER))
			return;
		if (spins > 64)
			sched_yield(); /* the writer was preempted mid-update */
	}
}

void nc__line_epoch(const struct nc_impl_line *p, struct nc__epoch *e)
{
	e->t0 = p->t0;
	e->span = p->span;
	e->c0 = p->c0;
	e->mi = p->mul_int;
	e->mf = p->mul_frac;
}

/* The interval conversion: one word for counters faster than 1 GHz (the
 * fast path reads it alone), a seqlocked pair otherwise.  The word is
 * cleared before the pair changes to a rate it cannot hold. */
static void publish_conv(const nc_conv_t *c)
{
#ifdef NC_DEBUG
	nc__debug_check_conv(c);
#endif
	if (c->ns_int != 0)
		__atomic_store_n(&nc_impl_g.conv_fast, 0, __ATOMIC_RELEASE);
	uint64_t s = __atomic_load_n(&nc_impl_g.conv_seq, __ATOMIC_RELAXED);
	int first = s & 1;
	if (!first) {
		__atomic_store_n(&nc_impl_g.conv_seq, s + 1, __ATOMIC_RELAXED);
#ifndef NC_TSAN
		__atomic_thread_fence(__ATOMIC_RELEASE); /* pairs with nc_ticks_to_ns's acquire fence */
#endif
	}
	__atomic_store_n(&nc_impl_g.conv_int, c->ns_int, ST_ORDER);
	__atomic_store_n(&nc_impl_g.conv_frac, c->ns_frac, ST_ORDER);
	__atomic_store_n(&nc_impl_g.conv_seq, first ? 2 : s + 2, __ATOMIC_RELEASE);
	if (c->ns_int == 0)
		__atomic_store_n(&nc_impl_g.conv_fast, c->ns_frac, __ATOMIC_RELEASE);
}

/* ---- the rate in use ---- */
void nc__use_hz(double hz, double ppm, const char *source)
{
	uint64_t q;
	nc_conv_t c;
	if (nc__hz_to_q24(hz, &q) != 0 || nc__conv_from_q24(&c, q) != 0)
		return; /* out of range: keep what we have */
	nc__S.conv = c;
	nc__S.hz = (double)q / 16777216.0;
	nc__S.ppm = ppm;
	nc__S.hz_source = source;
	if (__atomic_load_n(&nc_impl_g.conv_seq, __ATOMIC_RELAXED) != 1)
		publish_conv(&c); /* after the first publication: keep readers current */
}

/* ---- reading the selected counter out of line ---- */
uint64_t nc__read_ordered(uint64_t kind)
{
	if (nc_impl_hw(kind))
		return nc_impl_fenced(kind);
	/* the counter changes only when it stopped (fall_back_to_os_clock) */
	const struct nc__counter *c = __atomic_load_n(&nc__S.ctr, __ATOMIC_ACQUIRE);
	return c->read_ordered(c->ctx);
}

static uint64_t calib_read(void *ctx)
{
	(void)ctx;
	return nc__read_ordered(nc__S.now_kind);
}
static int64_t calib_ref(void *ctx)
{
	(void)ctx;
	return nc__mono_raw_ns();
}

double nc__true_hz(void)
{
	return nc__S.meas_hz > 0 ? nc__S.meas_hz : nc__S.hz;
}

/* ---- the generic slow path ---- */
static uint64_t timeline_read(const struct nc__timeline *tl);

#ifdef NC_DEBUG
/* Every value a thread gets must not be below the one it got before from
 * the same line, unless the system clock was stepped in between. */
uint64_t nc__timeline_read(const struct nc__timeline *tl)
{
	static __thread uint64_t last[2];
	static __thread uint32_t steps_seen;
	int i = tl->line == &nc_impl_g.wall;
	uint32_t steps = 0, ties;
	if (i)
		nc__wall_events(&steps, &ties);
	uint64_t v = timeline_read(tl);
	int back = i ? (int64_t)(v - last[1]) < 0 && steps == steps_seen && last[1] : v < last[0];
	if (back)
		nc__debug_fail("%s went back by %llu ns on one thread", i ? "nc_unix_ns" : "nc_now_ns",
			       (unsigned long long)(last[i] - v));
	last[i] = v;
	if (i)
		steps_seen = steps;
	return v;
}
#else
uint64_t nc__timeline_read(const struct nc__timeline *tl) { return timeline_read(tl); }
#endif

static uint64_t timeline_read(const struct nc__timeline *tl)
{
	for (int round = 0;; round++) {
		struct nc_impl_line p;
		struct nc__epoch e;
		nc__snapshot(tl->line, &p);
		nc__line_epoch(&p, &e);
		uint64_t t = nc__read_ordered(p.kind);
		uint64_t d = t - p.t0;
		if (d < p.span)
			return nc__epoch_value(&e, t);
		if ((int64_t)d < 0 && (uint64_t)(-(int64_t)d) <= nc__behind_ticks)
			return nc__epoch_value(&e, p.t0); /* another CPU's counter, slightly behind */
		if ((int64_t)d >= 0 && round >= 3)
			return lower_bound(&e, t); /* epochs expire as fast as they are made */
		if ((int64_t)d >= 0 && nc__trylock()) {
			if (__atomic_load_n(&tl->line->seq, __ATOMIC_ACQUIRE) == p.seq)
				tl->refresh(&p, t);
			nc__unlock();
			continue;
		}
		if ((int64_t)d >= 0 && d - p.span <= nc__lockfree_ticks)
			return lower_bound(&e, t);
		/* far past the end, or far behind the start (a reset counter):
		 * wait for the refresh, or do it */
		nc__lock();
		if (__atomic_load_n(&tl->line->seq, __ATOMIC_ACQUIRE) == p.seq)
			tl->refresh(&p, t);
		nc__unlock();
	}
}

/* ---- nc_now_ns ---- */
static void now_refresh(const struct nc_impl_line *p, uint64_t t);
static const struct nc__timeline now_tl = {&nc_impl_g.now, now_refresh};

static void publish_now(const struct nc__epoch *e)
{
	nc__publish_line(&nc_impl_g.now, nc__S.now_kind, e, nc__S.now_inline);
}

/* A bracket of CLOCK_MONOTONIC_RAW, and CLOCK_BOOTTIME read just after. */
static void measure(struct nc__bracket *b, int64_t *boot)
{
	struct nc__calib_io io = {NULL, calib_read, calib_ref};
	nc__take_bracket(&io, 8, b);
	*boot = nc__ref.boot();
}

static void remember(const struct nc__bracket *b, int64_t boot)
{
	nc__S.obs_t = b->mid;
	nc__S.obs_raw = b->ref;
	nc__S.obs_boot = boot;
	nc__S.have_obs = 1;
}

void nc__publish_first(void)
{
	struct nc__lib *S = &nc__S;
	nc__lockfree_ticks = (uint64_t)(LOCKFREE_NS * nc__true_hz() / 1e9);
	nc__behind_ticks = (uint64_t)(BEHIND_NS * nc__true_hz() / 1e9);
	struct nc__epoch e;
	e.mi = S->conv.ns_int;
	e.mf = S->conv.ns_frac;
	if (S->ctr->fixed_hz > 0) {
		/* exact-rate OS clock: ticks map to ns by a fixed factor; the
		 * origin is put on CLOCK_MONOTONIC_RAW's, once */
		int64_t a = nc__mono_raw_ns();
		e.t0 = S->ctr->read_ordered(S->ctr->ctx);
		int64_t b = nc__mono_raw_ns();
		e.c0 = nc__c0_for(e.t0, (uint64_t)(a + (b - a) / 2), e.mi, e.mf);
		e.span = NC_NO_END;
	} else {
		/* the first epoch starts at the fit's centroid, where counter and
		 * CLOCK_MONOTONIC_RAW are best known */
		uint64_t now = nc__read_ordered(S->now_kind);
		e.t0 = S->cal.anchor_tick;
		e.c0 = nc__c0_for(e.t0, (uint64_t)S->cal.anchor_ns, e.mi, e.mf);
		S->first_epoch_ns = S->epoch_ns = 4.0 * (double)S->cal.window_ns;
		e.span = S->fixed ? NC_NO_END : (now - e.t0) + (uint64_t)(S->epoch_ns * S->hz / 1e9);
		struct nc__bracket b = {S->cal.anchor_tick, S->cal.anchor_ns, 0};
		remember(&b, nc__ref.boot() - (nc__mono_raw_ns() - S->cal.anchor_ns));
	}
	publish_conv(&S->conv);
	publish_now(&e);
}

/* The long-baseline rate from the anchor to bracket b: updates the
 * measured rate and uses it once it is more precise; keeps a rate the
 * application stated while measurement does not contradict it (the rule
 * that accepted it); after a discontinuity takes the new baseline's rate
 * as it is, counting a rate change when it moved. */
static void refine_rate(const struct nc__bracket *b)
{
	struct nc__lib *S = &nc__S;
	double hz_l, ppm_l;
	if (b->width == UINT64_MAX || nc__calib_extend(&S->cal, b, &hz_l, &ppm_l) != 0)
		return;
	S->refreshes++;
	if (S->remeasure) {
		S->remeasure = 0;
		if (fabs(hz_l - S->hz) / S->hz * 1e6 > ppm_l + S->ppm) {
			S->ev.rate_changes++;
			nc__log_locked(NC_LOG_WARN, "counter rate changed: %.6f -> %.6f MHz (%+.1f ppm)",
				       S->hz / 1e6, hz_l / 1e6, (hz_l / S->hz - 1) * 1e6);
		}
		S->meas_hz = hz_l;
		S->meas_ppm = ppm_l;
		S->meas_worst_ppm = ppm_l;
		S->meas_window_ns = (double)(b->ref - S->cal.anchor_ns);
		S->app_rate = 0; /* a stated rate no longer describes this counter */
		nc__use_hz(hz_l, ppm_l, "measured");
		return;
	}
	if (ppm_l < S->meas_ppm) {
		S->meas_hz = hz_l;
		S->meas_ppm = ppm_l;
		S->meas_worst_ppm = ppm_l; /* the long baseline's bound is already worst-case-like */
		S->meas_window_ns = (double)(b->ref - S->cal.anchor_ns);
	}
	if (S->app_rate) {
		struct nc__meas m;
		double claim, diff, tol;
		nc__measurement(&m);
		if (nc__user_rate_ok(S->hz, &m, 0, &claim, &diff, &tol)) {
			S->ppm = claim;
		} else {
			S->app_rate = 0;
			nc__log_locked(NC_LOG_WARN, "the application's stated rate differs from a "
				       "longer measurement by %+.1f ppm: measured %.6f MHz used",
				       diff, S->meas_hz / 1e6);
			nc__use_hz(S->meas_hz, S->meas_ppm, "measured");
		}
	} else if (S->meas_ppm < S->ppm) {
		nc__use_hz(S->meas_hz, S->meas_ppm, "measured");
	}
}

/* Since the last look: did the machine suspend, did the counter jump,
 * drift or stop against CLOCK_MONOTONIC_RAW?  Returns 1 on a
 * discontinuity (the long baseline is then re-anchored at b and
 * re-measured), 2 if the counter stopped. */
static int observe(const struct nc__bracket *b, int64_t boot)
{
	struct nc__lib *S = &nc__S;
	if (!S->have_obs || b->width == UINT64_MAX) {
		if (b->width != UINT64_MAX)
			remember(b, boot);
		return 0;
	}
	double draw = (double)(b->ref - S->obs_raw);
	double dboot = (double)(boot - S->obs_boot);
	if (dboot - draw > SUSPEND_NS) {
		S->ev.suspends++;
		S->ev.suspended_s += (dboot - draw) / 1e9;
		nc__log_locked(NC_LOG_INFO, "suspend of %.3f s seen (CLOCK_BOOTTIME moved, "
			       "CLOCK_MONOTONIC_RAW did not)", (dboot - draw) / 1e9);
	}
	int64_t dt = (int64_t)(b->mid - S->obs_t);
	double dt_ns = (double)dt * 1e9 / S->hz;
	if (dt == 0 && draw > SUSPEND_NS) {
		S->ev.counter_stops++;
		nc__log_locked(NC_LOG_WARN, "the %s counter stopped for %.3f ms of CLOCK_MONOTONIC_RAW: "
			       "nc_now_ns follows CLOCK_MONOTONIC_RAW from now on",
			       S->ctr->name, draw / 1e6);
		remember(b, boot);
		return 2;
	}
	/* 2 us for the brackets and scheduling, the rate's uncertainty, and
	 * 100 ppm of slack below which a change is left to the slewing; while
	 * the rate is being re-measured after a discontinuity, only that */
	double tol = 2000 + fabs(draw) * (S->ppm + 100) * 1e-6;
	int jump = !S->remeasure && fabs(dt_ns - draw) > tol && draw >= 0;
	if (jump) {
		S->ev.counter_jumps++;
		nc__log_locked(NC_LOG_WARN, "the counter moved %+.3f ms unlike CLOCK_MONOTONIC_RAW "
			       "over %.3f ms (a pause, a migration, a reset): re-tied, re-measuring",
			       (dt_ns - draw) / 1e6, draw / 1e6);
		S->cal.anchor_tick = b->mid;
		S->cal.anchor_ns = b->ref;
		S->remeasure = 1;
		S->epoch_ns = S->first_epoch_ns; /* learn the rate again quickly */
	}
	remember(b, boot);
	return jump;
}

/* The counter stopped: nc_now_ns follows CLOCK_MONOTONIC_RAW from here,
 * through the slow path, continuing from where it was. */
static void fall_back_to_os_clock(const struct nc__epoch *old, uint64_t t)
{
	struct nc__lib *S = &nc__S;
	uint64_t was = nc__epoch_value(old, t);
	__atomic_store_n(&S->ctr, &nc__counter_mono_raw, __ATOMIC_RELEASE);
	S->now_kind = NC_IMPL_KIND_CALL;
	S->now_inline = 0;
	S->fixed = 1;
	S->meas_hz = S->meas_ppm = 0; /* a measurement of the old counter */
	S->app_rate = 0;
	nc__use_hz(1e9, 0, "exact (the counter stopped)");
	struct nc__epoch e = {0, NC_NO_END, 0, 1, 0};
	e.t0 = (uint64_t)nc__mono_raw_ns();
	e.c0 = nc__c0_for(e.t0, was > e.t0 ? was : e.t0, 1, 0);
	publish_now(&e);
	nc__wall_counter_changed();
}

/* Re-tie at t to CLOCK_MONOTONIC_RAW (bracket b): nobody read the clock
 * for a while, the process or machine slept, the counter jumped or was
 * reset.  No reader returned more than the old epoch's lock-free ceiling
 * (t past its start) or its start value (t behind it), so the clock
 * continues from there or from the reference, whichever is later: it
 * never goes back, and it does not count a suspend. */
static void retie_now(const struct nc__epoch *old, uint64_t t, const struct nc__bracket *b)
{
	struct nc__lib *S = &nc__S;
	int past = (int64_t)(t - old->t0) >= 0;
	uint64_t floor_v = past ? nc__lockfree_ceiling(old) : nc__epoch_value(old, old->t0);
	if (past && t - old->t0 < old->span) /* mid-epoch (a look from elsewhere) */
		floor_v = nc__epoch_value(old, t);
	uint64_t v = floor_v;
	if (b->width != UINT64_MAX) {
		uint64_t tgt = (uint64_t)b->ref - (uint64_t)llround((double)(int64_t)(b->mid - t) * 1e9 / S->hz);
		if ((int64_t)(tgt - floor_v) > 0)
			v = tgt;
	}
	struct nc__epoch e;
	e.t0 = t;
	e.mi = S->conv.ns_int;
	e.mf = S->conv.ns_frac;
	e.c0 = nc__c0_for(t, v, e.mi, e.mf);
	e.span = (uint64_t)(S->epoch_ns * S->hz / 1e9);
	publish_now(&e);
}

/* The next epoch, from the old one p, for a read of t at or past its end,
 * or far behind its start. */
static void now_refresh(const struct nc_impl_line *p, uint64_t t)
{
	struct nc__lib *S = &nc__S;
	struct nc__epoch old, e;
	nc__line_epoch(p, &old);
	uint64_t L = old.t0 + old.span;
	nc__upkeep_after_fork_check();
	struct nc__bracket b;
	int64_t boot;
	measure(&b, &boot);
	int jumped = observe(&b, boot);
	if (jumped == 2 && S->ctr->fixed_hz == 0) {
		fall_back_to_os_clock(&old, t);
		return;
	}
	if (!jumped)
		refine_rate(&b);
	int ok = b.width != UINT64_MAX;
	double rate_ns = 1e9 / S->hz; /* ns per tick in use */
	double next = ok && !jumped ? fmin(2 * S->epoch_ns, MAX_EPOCH_NS) : S->epoch_ns;
	S->epoch_ns = next;

	if ((int64_t)(t - old.t0) < 0 || t - L > nc__lockfree_ticks || jumped) {
		retie_now(&old, t, &b);
		return;
	}
	uint64_t cl = nc__epoch_value(&old, L);
	/* CLOCK_MONOTONIC_RAW at L, and how far ahead of it we are: integer
	 * differences first, absolute ns lose precision in a double */
	uint64_t target_l = ok ? (uint64_t)b.ref - (uint64_t)llround((double)(int64_t)(b.mid - L) * rate_ns)
			       : cl;
	e.t0 = L;
	e.span = (t - L) + (uint64_t)(next * S->hz / 1e9);
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
	if (nc__slope_from_ns(slope, &e) != 0) {
		e.mi = S->conv.ns_int;
		e.mf = S->conv.ns_frac;
	}
	nc__clamp_slope(&old, &e); /* lock-free readers assumed at least this past L */
	e.c0 = nc__c0_for(L, v, e.mi, e.mf);
#ifdef NC_DEBUG
	if (nc__epoch_value(&e, L) != v || (v == cl && nc__epoch_value(&e, L) != cl))
		nc__debug_fail("nc_now_ns epoch not continuous at its start");
#endif
	publish_now(&e);
	nc__log_locked(NC_LOG_DEBUG, "nc_now_ns epoch of %.3f s: %+.0f ns from CLOCK_MONOTONIC_RAW, "
		       "rate %.6f MHz +-%.3g ppm (%s)", next / 1e9, err, S->hz / 1e6, S->ppm,
		       S->hz_source);
}

/* A look at the counter against the reference clocks from elsewhere (a
 * refresh of Unix time, the upkeep thread, nc_get_info): on a
 * discontinuity nc_now_ns is re-tied at once (nc__mu held). */
void nc__observe(void)
{
	struct nc__lib *S = &nc__S;
	nc__upkeep_after_fork_check();
	if (S->ctr->fixed_hz > 0)
		return;
	struct nc_impl_line p;
	nc__snapshot(&nc_impl_g.now, &p);
	struct nc__bracket b;
	int64_t boot;
	measure(&b, &boot);
	int r = observe(&b, boot);
	if (r == 0)
		return;
	struct nc__epoch old;
	nc__line_epoch(&p, &old);
	uint64_t t = nc__read_ordered(p.kind);
	if (r == 2)
		fall_back_to_os_clock(&old, t);
	else
		retie_now(&old, t, &b);
}

uint64_t nc_impl_now_slow(void)
{
	nc__ensure_init();
	nc__slow_calls++;
	return nc__timeline_read(&now_tl);
}

/* The upkeep thread: refresh if due (or nearly), as a reader would. */
void nc__now_upkeep(void)
{
	struct nc_impl_line p;
	nc__snapshot(&nc_impl_g.now, &p);
	uint64_t t = nc__read_ordered(p.kind);
	if (t - p.t0 >= p.span && (int64_t)(t - p.t0) >= 0) {
		nc__lock();
		if (__atomic_load_n(&nc_impl_g.now.seq, __ATOMIC_ACQUIRE) == p.seq)
			now_refresh(&p, t);
		nc__unlock();
	}
}

/* ns until the nc_now_ns epoch ends (0: due) */
double nc__now_due_ns(void)
{
	struct nc_impl_line p;
	nc__snapshot(&nc_impl_g.now, &p);
	uint64_t t = nc__read_ordered(p.kind), d = t - p.t0;
	if (p.span >= NC_NO_END)
		return 1e12;
	return d >= p.span ? 0 : (double)(p.span - d) * 1e9 / nc__S.hz;
}

uint64_t nc_impl_ticks_slow(int how)
{
	nc__ensure_init();
	nc__slow_calls++;
	uint64_t k = __atomic_load_n(&nc_impl_g.now.kind, NC_LD_ORDER);
	if (nc_impl_hw(k))
		return how == 0 ? nc_impl_raw(k) : how == 1 ? nc_impl_fenced(k) : nc_impl_fenced_end(k);
	const struct nc__counter *c = __atomic_load_n(&nc__S.ctr, __ATOMIC_ACQUIRE);
	return how ? c->read_ordered(c->ctx) : c->read(c->ctx);
}

uint64_t nc_impl_ticks_to_ns_slow(uint64_t ticks)
{
	nc__ensure_init();
	nc__slow_calls++;
	for (;;) {
		uint64_t s = __atomic_load_n(&nc_impl_g.conv_seq, __ATOMIC_ACQUIRE);
		uint64_t ci = __atomic_load_n(&nc_impl_g.conv_int, NC_LD_ORDER);
		uint64_t cf = __atomic_load_n(&nc_impl_g.conv_frac, NC_LD_ORDER);
		NC_RFENCE(); /* pairs with publish_conv's release fence */
		if (!(s & 1) && s == __atomic_load_n(&nc_impl_g.conv_seq, NC_LD_ORDER))
			return nc_impl_scale(ticks, ci, cf);
		sched_yield();
	}
}
