/* SPDX-License-Identifier: MIT */
/*
 * From counter values to nanoseconds, offline.
 *
 * Every sync record brackets CLOCK_MONOTONIC_RAW and CLOCK_REALTIME between
 * two counter reads: a point (t, mono, real) known to within half the
 * bracket.  All threads of a process read the same counter, so the sync
 * records of all of them form one set of anchors:
 *   - anchors with brackets wider than 1 ms are useless and dropped;
 *   - in every 10 ms window of the counter (a fixed grid: window t / 10 ms,
 *     so thinning can run while the file is read and memory follows the
 *     trace's duration, not its size) the narrowest anchor is kept: interpolating
 *     between anchors closer than that would turn their bracket noise into
 *     rate errors (two 30 ns errors over 1 ms are 60 ppm; over 10 ms, 6);
 *     and the latest, written after the file's last events;
 *   - an anchor whose MONOTONIC_RAW is not above the previous one's is
 *     dropped (a corrupt or hostile file; the clock never goes back).
 * Between two anchors a counter value converts by linear interpolation
 * (the anchors' own rate, as a 64.64 fixed-point ns-per-tick rounded to
 * nearest, the core's conversion); before the first and after the last it
 * is extrapolated with the trace's rate (its final, longest-baseline one
 * when the file was closed).  So the error at any point is at most the
 * larger half-bracket of the two anchors around it plus the rounding, and
 * within a process time never goes back as the counter goes forward.
 *
 * Unix time adds CLOCK_REALTIME's offset from MONOTONIC_RAW, interpolated
 * the same way (NTP slews it slowly) and rounded to whole ns, so that it
 * moves only as often as it changes by a ns; where it shrinks, Unix time is
 * the line between the anchors' CLOCK_REALTIME and MONOTONIC_RAW that
 * offset below it: either way neither goes back as the counter goes
 * forward.  Where the offset changed by more than a slew could (1 ms plus
 * 1000 ppm of the interval) the system clock was set, and the earlier
 * offset holds until the anchor after the step.
 */
#include "trace_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WIDTH_S 1e-3
#define WINDOW_S 10e-3
#define MAX_SLEW 1000e-6
#define MAX_STEP_NS 1e6

static int cmp_anchor(const void *a, const void *b)
{
	const struct nc__tr_anchor *x = a, *y = b;
	if (x->t != y->t)
		return (x->t > y->t) - (x->t < y->t);
	return (x->width > y->width) - (x->width < y->width);
}

/* a - b for int64 values that may be anything (hostile files) */
static int64_t sub64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }

/* Sorts the anchors and keeps the narrowest usable one of each window, and
 * the latest. */
static void thin(struct nc_trace_reader *r)
{
	double hz = r->info.hz;
	uint64_t maxw = (uint64_t)(hz * MAX_WIDTH_S), win = (uint64_t)(hz * WINDOW_S);
	if (win == 0)
		win = 1;
	size_t n = 0;
	for (size_t i = 0; i < r->nan; i++) {
		if (r->an[i].width <= maxw)
			r->an[n++] = r->an[i];
		else
			r->an_wide++;
	}
	if (n > 1)
		qsort(r->an, n, sizeof(*r->an), cmp_anchor);
	if (n == 0) {
		r->nan = r->an_kept = 0;
		return;
	}
	/* the latest is kept too: a closed file's last sync record, written
	 * after its last events, which would otherwise be extrapolated from
	 * an earlier anchor of its window at the counter's rate (off by
	 * NTP's rate times up to 10 ms) */
	struct nc__tr_anchor last = r->an[n - 1];
	size_t k = 0;
	for (size_t i = 0; i < n;) {
		size_t best = i, j = i;
		for (; j < n && r->an[j].t / win == r->an[i].t / win; j++)
			if (r->an[j].width < r->an[best].width)
				best = j;
		r->an[k++] = r->an[best]; /* (best >= i >= k: nothing unread overwritten) */
		i = j;
	}
	if (r->an[k - 1].t != last.t)
		r->an[k++] = last;
	r->nan = k;
	r->an_kept = k;
}

int nc__tr_anchor_add(struct nc_trace_reader *r, const unsigned char *w, unsigned words)
{
	r->an_total++;
	if (r->nan == r->capan) {
		/* thin before growing: the kept anchors are one per window */
		if (r->nan >= 4096 && r->nan >= 2 * r->an_kept)
			thin(r);
		if (r->nan == r->capan) {
			size_t c = r->capan ? r->capan * 2 : 64;
			if (c > SIZE_MAX / sizeof(*r->an))
				return -1;
			struct nc__tr_anchor *a = realloc(r->an, c * sizeof(*a));
			if (!a)
				return -1;
			r->an = a;
			r->capan = c;
		}
	}
	struct nc__tr_anchor *a = &r->an[r->nan++];
	memset(a, 0, sizeof(*a));
	a->t = nc__get64(w + 16);
	a->width = nc__get64(w + 24);
	a->mono = (int64_t)nc__get64(w + 32);
	a->real = (int64_t)nc__get64(w + 40);
	a->utc_below = a->utc_above = UINT64_MAX;
	a->utc_status = NC_UTC_UNKNOWN;
	a->utc_source = NC_UTC_SRC_NONE;
	if (words >= NC__TR_SYNC_WORDS_UTC && r->info.version_minor >= 2) {
		uint64_t w10 = nc__get64(w + 80);
		int st = (int)(w10 & 0xff);
		a->utc_as_of = (int64_t)nc__get64(w + 72);
		a->utc_source = (int)(w10 >> 8 & 0xff);
		a->utc_growth_ppb = (uint32_t)(w10 >> 32);
		/* a known status with its half widths, or nothing */
		if ((st == NC_UTC_SYNCHRONISED || st == NC_UTC_FREE_RUNNING) &&
		    nc__get64(w + 56) < ((uint64_t)1 << 62) && nc__get64(w + 64) < ((uint64_t)1 << 62)) {
			a->utc_status = st;
			a->utc_below = nc__get64(w + 56);
			a->utc_above = nc__get64(w + 64);
		} else if (st == NC_UTC_DISRUPTED) {
			a->utc_status = st;
		}
	}
	return 0;
}

void nc__tr_anchors_build(struct nc_trace_reader *r)
{
	struct nc_trace_info *in = &r->info;
	double hz = in->hz;
	thin(r);
	/* time must go forward with the counter */
	size_t k = 0, back = 0;
	for (size_t i = 0; i < r->nan; i++) {
		if (k == 0 || (r->an[i].t > r->an[k - 1].t && r->an[i].mono > r->an[k - 1].mono))
			r->an[k++] = r->an[i];
		else
			back++;
	}
	r->nan = k;
	in->anchors = k;
	in->anchors_rejected = r->an_wide + back; /* too wide, or going back */
	double maxhw = 0;
	for (size_t i = 0; i < k; i++) {
		struct nc__tr_anchor *a = &r->an[i];
		if ((double)a->width / 2 / hz * 1e9 > maxhw)
			maxhw = (double)a->width / 2 / hz * 1e9;
		a->have_slope = 0;
		a->step = 0;
		if (i + 1 == k)
			break;
		const struct nc__tr_anchor *b = &r->an[i + 1];
		uint64_t dt = b->t - a->t;
		uint64_t dm = (uint64_t)b->mono - (uint64_t)a->mono;
		double seg_hz = (double)dt / (double)dm * 1e9;
		/* a segment far off the trace's rate is a clock event (a suspend,
		 * a VM paused), not a rate: extrapolate across it */
		if (fabs(seg_hz / hz - 1) < 0.01 && nc__ns_per_tick(seg_hz, &a->mi, &a->mf) == 0)
			a->have_slope = 1;
		int64_t doff = sub64(sub64(b->real, b->mono), sub64(a->real, a->mono));
		if (fabs((double)doff) > MAX_STEP_NS + MAX_SLEW * (double)dm)
			a->step = 1;
		/* Unix time as one line of its own from a's to b's where the
		 * offset shrinks (the system clock slewed slower): MONOTONIC_RAW
		 * plus the offset, each rounded alone, could go back a ns between
		 * two counter values there */
		int64_t dr = sub64(b->real, a->real);
		a->have_uslope = 0;
		if (a->have_slope && !a->step && dr > 0 &&
		    nc__ns_per_tick((double)dt / (double)dr * 1e9, &a->ui, &a->uf) == 0)
			a->have_uslope = 1;
	}
	in->max_anchor_halfwidth_ns = maxhw;
	if (k >= 2) {
		const struct nc__tr_anchor *a = &r->an[0], *b = &r->an[k - 1];
		double rate = (double)(b->t - a->t) / (double)((uint64_t)b->mono - (uint64_t)a->mono) * 1e9;
		in->anchor_rate_ppm = (rate / hz - 1) * 1e6;
	}
}

/* d ticks from a point, either direction, with conversion c */
static uint64_t signed_conv(const nc_conv_t *c, uint64_t from, uint64_t t)
{
	if (t >= from)
		return nc_conv_ticks_to_ns(c, t - from);
	return (uint64_t)0 - nc_conv_ticks_to_ns(c, from - t);
}

void nc__tr_convert(const struct nc_trace_reader *r, uint64_t t, int64_t *mono, int64_t *unx)
{
	size_t n = r->nan;
	if (n == 0) {
		const struct nc_trace_info *in = &r->info;
		uint64_t d = signed_conv(&r->conv, in->tie_ticks, t);
		*mono = (int64_t)((uint64_t)in->tie_mono_ns + d);
		*unx = (int64_t)((uint64_t)in->tie_unix_ns + d);
		return;
	}
	const struct nc__tr_anchor *an = r->an;
	/* the last anchor at or before t (or the first) */
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (an[mid].t <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t i = lo ? lo - 1 : 0;
	const struct nc__tr_anchor *a = &an[i];
	int64_t off = sub64(a->real, a->mono);
	uint64_t m;
	if (t >= a->t && i + 1 < n) {
		const struct nc__tr_anchor *b = &an[i + 1];
		uint64_t d = t - a->t;
		m = (uint64_t)a->mono + (a->have_slope ? nc_impl_scale(d, a->mi, a->mf)
						       : nc_conv_ticks_to_ns(&r->conv, d));
		if (!a->step) {
			int64_t doff = sub64(sub64(b->real, b->mono), off);
			double f = (double)d / (double)(b->t - a->t);
			off = (int64_t)((uint64_t)off + (uint64_t)(int64_t)llround((double)doff * f));
			if (doff < 0 && a->have_uslope) {
				/* the offset shrinks: Unix time as its own line and
				 * MONOTONIC_RAW that offset below it, so that both
				 * still never go back (the offset moves |doff| times,
				 * as it does the other way) */
				uint64_t u = (uint64_t)a->real + nc_impl_scale(d, a->ui, a->uf);
				*unx = (int64_t)u;
				*mono = (int64_t)(u - (uint64_t)off);
				return;
			}
		}
	} else {
		m = (uint64_t)a->mono + signed_conv(&r->conv, a->t, t);
	}
	*mono = (int64_t)m;
	*unx = (int64_t)(m + (uint64_t)off);
}

/* The UTC interval of counter value t.  The sync record at or before t
 * (the first one for a value before all) states a bound on |CLOCK_REALTIME
 * - UTC| there and how fast it grows; grown to t it bounds the clock at t,
 * and the Unix time converted for t is off CLOCK_REALTIME by at most the
 * larger half bracket of the anchors around it plus 1 ns (above).  Only
 * the earlier record's figures are carried forward: a later one's need not
 * hold backwards (the clock may have been corrected in between). */
int nc__tr_utc(const struct nc_trace_reader *r, uint64_t t, struct nc_utc *out)
{
	int64_t mono;
	nc__tr_convert(r, t, &mono, &out->unix_ns);
	out->earliest_ns = INT64_MIN;
	out->latest_ns = INT64_MAX;
	out->as_of_ns = 0;
	out->status = NC_UTC_UNKNOWN;
	out->source = NC_UTC_SRC_NONE;
	size_t n = r->nan;
	if (n == 0)
		return out->status;
	const struct nc__tr_anchor *an = r->an;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (an[mid].t <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t i = lo ? lo - 1 : 0;
	const struct nc__tr_anchor *a = &an[i];
	out->as_of_ns = a->utc_as_of;
	out->source = a->utc_source;
	out->status = a->utc_status;
	if (a->utc_status != NC_UTC_SYNCHRONISED && a->utc_status != NC_UTC_FREE_RUNNING)
		return out->status;
	uint64_t w = a->width;
	if (t >= a->t && i + 1 < n && an[i + 1].width > w)
		w = an[i + 1].width;
	uint64_t d = t >= a->t ? t - a->t : a->t - t;
	double dns = (double)nc_conv_ticks_to_ns(&r->conv, d);
	double conv = (double)nc_conv_ticks_to_ns(&r->conv, w / 2 + 1) + 1;
	double grow = ceil(dns * (double)a->utc_growth_ppb * 1e-9);
	double below = (double)a->utc_below + grow + conv, above = (double)a->utc_above + grow + conv;
	if (below > 0x1p62 || above > 0x1p62) {
		out->status = NC_UTC_UNKNOWN;
		return out->status;
	}
	int64_t e, l; /* a hostile file's times may be anywhere */
	if (__builtin_sub_overflow(out->unix_ns, (int64_t)below, &e) ||
	    __builtin_add_overflow(out->unix_ns, (int64_t)above, &l)) {
		out->status = NC_UTC_UNKNOWN;
		return out->status;
	}
	out->earliest_ns = e;
	out->latest_ns = l;
	return out->status;
}
