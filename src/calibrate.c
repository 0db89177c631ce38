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
 *     (running means and co-moments: no sample array, any window length);
 *  3. the slope b is ns per tick, hz = 1e9 / b.  Its standard error is
 *     sigma / sqrt(Sxx), sigma being the residual scatter, if the scatter
 *     is independent from bracket to bracket.  It often is not (a timer
 *     catching up, an emulator, a core changing speed), so the same error
 *     is also estimated from the means of 8 batches of the window, which
 *     keep slow wander at full size, and the larger estimate is used
 *     (this covers wander with periods up to the window's length; slower
 *     wander is, over the window, a rate change no fit can tell from the
 *     counter's own, and the longer baselines later average it out).  The
 *     stated uncertainty is 4 such standard errors (the reference's 1 ns
 *     quantum puts a floor under sigma), plus a systematic term: half the
 *     change of the mean bracket width between the first and last quarter
 *     of the window, over the distance between them (if brackets narrow as
 *     code warms up, the reference's place in them drifts).  The worst-case
 *     bound from bracket widths alone (each end anywhere in its bracket) is
 *     also reported: it is what a single pair of brackets could guarantee,
 *     and shrinks as 1/window.
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
/* Batches the window is cut into, by reference time, for the check on
 * correlated scatter and for the bracket-width drift (first and last
 * quarter: 2 batches each). */
#define NB 8

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

	/* origin of the fit: keeps the values small and exact in a double */
	uint64_t x0 = b.mid;
	int64_t r0 = b.ref;
	/* Running means and co-moments (Welford): stable in double precision
	 * for any window, and cheap where long double is emulated in software
	 * (aarch64, riscv64, ppc64), which would slow each bracket down
	 * several-fold. */
	double mx = 0, my = 0, cxx = 0, cxy = 0, cyy = 0;
	uint32_t n = 0, total = 0;
	double first_y = 0, last_y = 0;
	uint64_t first_w = 0, last_w = 0;
	double bn[NB] = {0}, bx[NB] = {0}, by[NB] = {0}, bw[NB] = {0};
	double per_batch = (double)window_ns / NB;

	for (long i = 0; i < MAX_BRACKETS; i++) {
		uint64_t t1 = io->read(io->ctx);
		int64_t r = io->ref_ns(io->ctx);
		uint64_t t2 = io->read(io->ctx);
		total++;
		if (t2 < t1 || t2 - t1 > accept || t1 < x0)
			continue;
		uint64_t w = t2 - t1;
		double x = (double)(t1 - x0) + 0.5 * (double)w;
		double y = (double)(r - r0);
		if (n == 0) {
			first_y = y;
			first_w = w;
		}
		last_y = y;
		last_w = w;
		n++;
		double dx = x - mx, dy = y - my;
		mx += dx / n;
		my += dy / n;
		cxx += dx * (x - mx);
		cxy += dx * (y - my);
		cyy += dy * (y - my);
		double rel = y - first_y;
		int k = (int)(rel / per_batch);
		if (k > NB - 1)
			k = NB - 1;
		bn[k] += 1;
		bx[k] += x;
		by[k] += y;
		bw[k] += (double)w;
		if (rel >= (double)window_ns && n >= 16)
			break;
		if (w < w0)
			w0 = w;
	}
	if (n < 16 || last_y - first_y <= 0)
		return NC_ECALIB; /* reference did not advance, or all brackets bad */
	if (!(cxx > 0) || !(cxy > 0))
		return NC_ECALIB; /* counter did not advance with the reference */
	double slope = cxy / cxx; /* ns per tick */
	double sse = cyy - slope * cxy;
	if (sse < 0)
		sse = 0;
	double sigma = n > 2 ? sqrt(sse / (n - 2)) : 0;
	/* the reference is quantised to 1 ns: sigma cannot honestly be less */
	if (sigma < 0.2887)
		sigma = 0.2887;
	double se = sigma / sqrt(cxx);

	/* sigma/sqrt(Sxx) assumes independent scatter.  Scatter that wanders
	 * (a core's clock changing, an emulator's or hypervisor's timer
	 * catching up, cache state drifting) moves the slope far more.  So the
	 * same slope error is also estimated from the batch means' residuals
	 * about the fitted line, which carry any slow wander at its full size;
	 * the larger of the two is used. */
	double bss = 0, bxx = 0, nsum = 0;
	int used = 0;
	for (int k = 0; k < NB; k++) {
		if (bn[k] == 0)
			continue;
		double xm = bx[k] / bn[k], e = by[k] / bn[k] - (my + slope * (xm - mx));
		bss += bn[k] * e * e;
		bxx += bn[k] * (xm - mx) * (xm - mx);
		nsum += bn[k];
		used++;
	}
	double se_b = used > 2 && bxx > 0 ? sqrt(bss / (used - 2) / bxx) : se;
	if (se_b > se)
		se = se_b;
	/* likewise the line's height at the centroid, the long baselines' anchor */
	double sd_a = sigma / sqrt((double)n);
	double sd_ab = used > 2 ? sqrt(bss / (used - 2) / nsum) : sd_a;
	out->anchor_sd_ns = sd_ab > sd_a ? sd_ab : sd_a;

	out->hz = 1e9 / slope;
	if (!(out->hz > 0) || !isfinite(out->hz))
		return NC_ECALIB;
	/* Bracket widths drifting between the first and last quarter move the
	 * reference's place in the bracket, a bias no scatter shows: half the
	 * change in mean width, over the distance between the quarters. */
	double q[2][3] = {{0, 0, 0}, {0, 0, 0}}; /* count, sum x, sum width */
	for (int k = 0; k < NB / 4; k++)
		for (int h = 0; h < 2; h++) {
			int j = h ? NB - 1 - k : k;
			q[h][0] += bn[j];
			q[h][1] += bx[j];
			q[h][2] += bw[j];
		}
	double drift = 0;
	if (q[0][0] > 0 && q[1][0] > 0 && q[1][1] / q[1][0] > q[0][1] / q[0][0])
		drift = fabs(q[1][2] / q[1][0] - q[0][2] / q[0][0]) / 2 /
			(q[1][1] / q[1][0] - q[0][1] / q[0][0]);
	out->ppm = 1e6 * (4 * se / slope + drift);
	double span_y = last_y - first_y;
	out->worst_ppm = 1e6 * (((double)first_w + (double)last_w) * 0.5 * slope + 2) / span_y;
	out->sigma_ns = sigma;
	out->min_width = w0;
	out->accept_width = accept;
	out->n_used = n;
	out->n_total = total;
	out->window_ns = (int64_t)span_y;
	/* the fitted line passes through the centroid (mx, my) */
	double fx = floor(mx);
	out->anchor_tick = x0 + (uint64_t)fx;
	out->anchor_ns = r0 + (int64_t)llround(my - slope * (mx - fx));
	return 0;
}

int nc__calib_extend(const struct nc__calib *c, const struct nc__bracket *b, double *hz,
		     double *ppm)
{
	if (b->width > c->accept_width || b->mid <= c->anchor_tick || b->ref <= c->anchor_ns)
		return NC_ECALIB;
	long double dx = (long double)(b->mid - c->anchor_tick);
	long double dy = (long double)(b->ref - c->anchor_ns);
	/* the anchor's error is anchor_sd (sigma/sqrt(n) for independent
	 * scatter), the new bracket's about sigma; 4 sigma as in the fit, plus
	 * the reference quantum at each end */
	long double err = 4.0L * sqrtl((long double)c->sigma_ns * c->sigma_ns +
				       (long double)c->anchor_sd_ns * c->anchor_sd_ns) +
			  1.0L;
	*hz = (double)(1e9L * dx / dy);
	*ppm = (double)(1e6L * err / dy);
	return 0;
}
