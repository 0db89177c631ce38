/*
 * Measuring the counter's frequency against a reference clock
 * (CLOCK_MONOTONIC_RAW in the library, a simulation in the tests).
 *
 * A sample is a bracket: ordered counter read t1, reference read r, ordered
 * counter read t2.  The reference was read at some tick inside [t1, t2], so
 * the pair (mid = (t1+t2)/2, r) is off the true line by at most half the
 * width.  In practice the reference is read at almost the same place in
 * every bracket, so that offset is nearly constant and cancels out of the
 * slope; what remains is the jitter of that place.
 *
 * Algorithm:
 *  1. a warm-up finds the narrowest bracket w0; brackets wider than 2*w0+1
 *     were interrupted (preemption, an interrupt, a cache miss in the vDSO)
 *     and are dropped;
 *  2. for the whole window, brackets are taken back to back and the
 *     accepted ones go into a streaming least-squares fit r = a + b*mid
 *     (sums only: no sample array, any window length);
 *  3. the slope b is ns per tick, hz = 1e9 / b.  Its standard error is
 *     sigma / sqrt(Sxx), sigma being the residual scatter; the stated
 *     uncertainty is 4 standard errors (the reference's 1 ns quantum puts a
 *     floor under sigma), plus a systematic term: half the change of the
 *     mean bracket width between the first and last quarter of the window,
 *     over the distance between them (if brackets narrow as code warms up,
 *     the reference's place in them drifts).  The worst-case bound from bracket widths alone
 *     (each end anywhere in its bracket) is also reported: it is what a
 *     single pair of brackets could guarantee, and shrinks as 1/window.
 *
 * Later, nc__calib_extend() measures the rate over a much longer baseline:
 * from the fitted line's centroid (error ~ sigma/sqrt(n)) to one new
 * narrow bracket (error ~ sigma).  Over 5 s this is a few ppb.
 */
#include "internal.h"

#include <math.h>

void nc__take_bracket(const struct nc__calib_io *io, int tries, struct nc__bracket *out)
{
	out->width = UINT64_MAX;
	out->mid = 0;
	out->ref = 0;
	for (int i = 0; i < tries; i++) {
		uint64_t t1 = io->read(io->ctx);
		int64_t r = io->ref_ns(io->ctx);
		uint64_t t2 = io->read(io->ctx);
		uint64_t w = t2 - t1;
		if (t2 < t1) /* counter went backwards: never accept */
			continue;
		if (w < out->width) {
			out->width = w;
			out->mid = t1 + w / 2;
			out->ref = r;
		}
	}
}

#define WARMUP 32
/* Upper bound on brackets in one calibration, so that a reference clock
 * that does not advance cannot hang us (about 0.1-0.5 s of work). */
#define MAX_BRACKETS 4000000L

int nc__calibrate(const struct nc__calib_io *io, int64_t window_ns, struct nc__calib *out)
{
	if (!io || !out || window_ns <= 0)
		return NC_EINVAL;

	struct nc__bracket b;
	nc__take_bracket(io, WARMUP, &b);
	if (b.width == UINT64_MAX)
		return NC_ECALIB; /* counter only ever went backwards */
	uint64_t w0 = b.width;
	uint64_t accept = 2 * w0 + 1;

	/* origin of the fit: keeps the sums small and exact */
	uint64_t x0 = b.mid;
	int64_t r0 = b.ref;
	long double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
	uint32_t n = 0, total = 0;
	long double first_y = 0, last_y = 0;
	uint64_t first_w = 0, last_w = 0;
	/* bracket widths and positions in the first and last quarter of the
	 * window: a drift of the widths (warm-up, emulation, frequency change)
	 * moves where the reference falls in the bracket, a bias the residual
	 * scatter cannot show */
	long double qw[2] = {0, 0}, qx[2] = {0, 0};
	long qn[2] = {0, 0};

	for (long i = 0; i < MAX_BRACKETS; i++) {
		uint64_t t1 = io->read(io->ctx);
		int64_t r = io->ref_ns(io->ctx);
		uint64_t t2 = io->read(io->ctx);
		total++;
		if (t2 < t1 || t2 - t1 > accept || t1 < x0)
			continue;
		uint64_t w = t2 - t1;
		long double x = (long double)(t1 - x0) + 0.5L * (long double)w;
		long double y = (long double)(r - r0);
		if (n == 0) {
			first_y = y;
			first_w = w;
		}
		last_y = y;
		last_w = w;
		n++;
		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
		syy += y * y;
		long double rel = y - first_y;
		int q = rel < window_ns / 4 ? 0 : rel >= 3 * (window_ns / 4) ? 1 : -1;
		if (q >= 0) {
			qw[q] += (long double)w;
			qx[q] += x;
			qn[q]++;
		}
		if (rel >= window_ns && n >= 16)
			break;
		if (w < w0)
			w0 = w;
	}
	if (n < 16 || last_y - first_y <= 0)
		return NC_ECALIB; /* reference did not advance, or all brackets bad */

	long double mx = sx / n, my = sy / n;
	long double Sxx = sxx - sx * mx, Sxy = sxy - sx * my, Syy = syy - sy * my;
	if (!(Sxx > 0) || !(Sxy > 0))
		return NC_ECALIB; /* counter did not advance with the reference */
	long double slope = Sxy / Sxx; /* ns per tick */
	long double sse = Syy - slope * Sxy;
	if (sse < 0)
		sse = 0;
	long double sigma = n > 2 ? sqrtl(sse / (n - 2)) : 0;
	/* the reference is quantised to 1 ns: sigma cannot honestly be less */
	if (sigma < 0.2887L)
		sigma = 0.2887L;
	long double se = sigma / sqrtl(Sxx);

	out->hz = (double)(1e9L / slope);
	if (!(out->hz > 0) || !isfinite(out->hz))
		return NC_ECALIB;
	long double drift = 0;
	if (qn[0] > 0 && qn[1] > 0 && qx[1] / qn[1] > qx[0] / qn[0])
		drift = fabsl(qw[1] / qn[1] - qw[0] / qn[0]) / 2 / (qx[1] / qn[1] - qx[0] / qn[0]);
	out->ppm = (double)(1e6L * (4 * se / slope + drift));
	long double span_y = last_y - first_y;
	out->worst_ppm = (double)(1e6L * ((first_w + last_w) * 0.5L * slope + 2) / span_y);
	out->sigma_ns = (double)sigma;
	out->min_width = w0;
	out->accept_width = accept;
	out->n_used = n;
	out->n_total = total;
	out->window_ns = (int64_t)span_y;
	/* the fitted line passes through the centroid (mx, my) */
	long double fx = floorl(mx);
	out->anchor_tick = x0 + (uint64_t)fx;
	out->anchor_ns = r0 + (int64_t)llroundl(my - slope * (mx - fx));
	return 0;
}

int nc__calib_extend(const struct nc__calib *c, const struct nc__bracket *b, double *hz,
		     double *ppm)
{
	if (b->width > c->accept_width || b->mid <= c->anchor_tick || b->ref <= c->anchor_ns)
		return NC_ECALIB;
	long double dx = (long double)(b->mid - c->anchor_tick);
	long double dy = (long double)(b->ref - c->anchor_ns);
	/* the anchor's error is sigma/sqrt(n), the new bracket's about sigma;
	 * 4 sigma as in the fit, plus the reference quantum at each end */
	long double err = 4.0L * c->sigma_ns * sqrtl(1.0L + 1.0L / c->n_used) + 1.0L;
	*hz = (double)(1e9L * dx / dy);
	*ppm = (double)(1e6L * err / dy);
	return 0;
}
