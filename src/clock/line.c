/* SPDX-License-Identifier: MIT */
/* Epochs and their publication.
 *
 * A line holds one epoch: for counter values t in [t0, t0 + span) the
 * value is c0 + floor(t * m) modulo 2^64, m = ns per tick as a 64.64
 * number; an epoch ends at the counter's wrap at the latest (publication
 * caps it), so that the form holds across its whole span.  A refresh
 * starts the next epoch at L = t0 + span with the value the old one had at
 * L, exactly as readers computed it: values are continuous at L, every
 * slope is positive, so the line never decreases (Unix time adds steps of
 * the system clock, which are meant to be steps).
 *
 * A reader past the end that cannot refresh (another thread, or the code a
 * signal handler interrupted, is refreshing) returns a lower bound of what
 * the next epoch will say: the old value at L plus (t - L) at the slowest
 * slope a refresh may choose (the old one less 1/256; every refresh clamps
 * to it).  Any value a later epoch gives for a later t is at least that,
 * so order is kept; the bound lags by at most 0.4% of the time past L.  It
 * is held still at the horizon, 1 ms past L: a counter that jumped far
 * ahead (a VM restored, a counter reset) cannot carry the clock with it
 * before a refresh has looked, and a re-tie past the horizon starts no
 * lower than that ceiling. */
#include "line.h"
#include "../base/debug.h"
#include "../base/latch.h"
#include "../rate/rate.h"

#define HORIZON_NS 1e6 /* readers hold still this far past an epoch's end */
#define BEHIND_NS 1e6  /* a counter further behind an epoch start was reset */

static uint64_t floor_mul(uint64_t t, uint64_t mi, uint64_t mf)
{
	uint64_t lo;
	return t * mi + nc_impl_mulhi(t, mf, &lo);
}

NC_START uint64_t nc__epoch_value(const struct nc__epoch *e, uint64_t t)
{
	return e->c0 + floor_mul(t, e->mi, e->mf);
}

uint64_t nc__epoch_extended(const struct nc__epoch *e, uint64_t t)
{
	uint64_t d = t - e->t0;
	if ((int64_t)d < 0 || d < e->span)
		return nc__epoch_value(e, t);
	return nc__epoch_end_value(e) + floor_mul(d - e->span, e->mi, e->mf);
}

NC_START uint64_t nc__c0_for(uint64_t L, uint64_t V, uint64_t mi, uint64_t mf)
{
	return V - floor_mul(L, mi, mf);
}

/* The value at the epoch's end.  An epoch that ends exactly at the
 * counter's wrap (line publication caps it there) ends at 2^64, whose
 * product with m is 2^64 * mi + mf: mf, modulo 2^64. */
uint64_t nc__epoch_end_value(const struct nc__epoch *e)
{
	uint64_t L = e->t0 + e->span;
	if (L == 0 && e->t0 != 0)
		return e->c0 + e->mf;
	return nc__epoch_value(e, L);
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

NC_START int nc__slope_from_ns(double ns_per_tick, struct nc__epoch *e)
{
	return ns_per_tick > 0 ? nc__ns_per_tick(1e9 / ns_per_tick, &e->mi, &e->mf) : NC_ERANGE;
}

/* ticks in ns at e's slope: the same double expression for every reader
 * and the writer, so they agree on where the horizon is */
static uint64_t ticks_for_ns(const struct nc__epoch *e, double ns)
{
	double m = (double)e->mi + (double)e->mf * 0x1p-64;
	return m > 0 ? (uint64_t)(ns / m) : 0;
}

uint64_t nc__epoch_behind_ticks(const struct nc__epoch *e) { return ticks_for_ns(e, BEHIND_NS); }
uint64_t nc__epoch_horizon_ticks(const struct nc__epoch *e) { return ticks_for_ns(e, HORIZON_NS); }

uint64_t nc__epoch_overdue(const struct nc__epoch *e, uint64_t t)
{
	uint64_t L = e->t0 + e->span, mi, mf, past = t - L, h = ticks_for_ns(e, HORIZON_NS);
	slope_min(e->mi, e->mf, &mi, &mf);
	return nc__epoch_end_value(e) + floor_mul(past < h ? past : h, mi, mf);
}

uint64_t nc__epoch_ceiling(const struct nc__epoch *e)
{
	return nc__epoch_overdue(e, e->t0 + e->span + ticks_for_ns(e, HORIZON_NS));
}

uint64_t nc__epoch_reader_value(const struct nc__epoch *e, uint64_t t)
{
	uint64_t d = t - e->t0;
	if (d < e->span)
		return nc__epoch_value(e, t);
	return (int64_t)d >= 0 ? nc__epoch_overdue(e, t) : nc__epoch_value(e, e->t0);
}

NC_START
void nc__line_publish(struct nc_impl_line *l, uint64_t kind, int inline_ok, const struct nc__epoch *e)
{
#ifdef NC_DEBUG
	inline_ok = 0; /* every read goes through the library, where it is checked */
	if (e->span == 0 || (e->mi == 0 && e->mf == 0))
		nc__debug_fail("epoch published with span %llu and a zero slope",
			       (unsigned long long)e->span);
#endif
	uint64_t span = e->span;
	if (e->t0 + span < e->t0) /* it would span the counter's wrap: end there */
		span = -e->t0;
	struct nc_impl_copy c = {kind, e->t0, inline_ok ? span : 0, e->c0, e->mi, e->mf, span};
	nc__latch_write_line(l, &c);
}

uint64_t nc__line_read(const struct nc_impl_line *l, struct nc__epoch *e, uint64_t *kind)
{
	struct nc_impl_copy c;
	uint64_t seq = nc__latch_read_line(l, &c);
	e->t0 = c.t0;
	e->span = c.span;
	e->c0 = c.c0;
	e->mi = c.mul_int;
	e->mf = c.mul_frac;
	*kind = c.kind;
	return seq;
}
