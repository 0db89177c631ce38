/* SPDX-License-Identifier: MIT */
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
 *  2. brackets are taken back to back and the accepted ones go into a
 *     streaming least-squares fit r = a + b*mid (running means and
 *     co-moments: no sample array, any window length), and into bins of
 *     equal active time: reference time with each gap between accepted
 *     brackets cut to 100 us.  A gap is the process off its CPU (many
 *     processes starting at once): the brackets after it sit far from
 *     those before, leverage no bracket earned, and the reference's place
 *     in them may have moved (caches cold, another CPU).  The rate is the
 *     fit's, at the real positions; its uncertainty (3.) is computed at
 *     the positions with the gaps cut (trusting the leverage, some starts
 *     of many processes at once on busy CPUs fell outside their stated
 *     uncertainty);
 *  2a. adaptive stop: at checkpoints (125 us of active time, then every
 *     6.25% more) the fit is evaluated; the first calibration stops at the
 *     second checkpoint in a row whose stated uncertainty meets its target
 *     (1 ppm by default), or at its cap (in reference time: a start stays
 *     bounded).  The statement is an estimate (batches of 14-30 degrees of
 *     freedom) and the first one under the target is more often one that
 *     came out low: stopping there (checkpoints 25% apart), some rates of
 *     many processes at once on busy CPUs fell outside it; after two in a
 *     row far fewer do, and quiet starts are no slower
 *     (tests/clock/test_contention.c).  Each checkpoint has 16 to 32 bins;
 *  3. the slope b is ns per tick, hz = 1e9 / b.  Its standard error is
 *     sigma / sqrt(Sxx), sigma being the residual scatter, if the scatter
 *     is independent from bracket to bracket.  It often is not (a timer
 *     catching up, an emulator, a core changing speed), so the same error
 *     is also estimated from the means of 16-32 batches of the window, which
 *     keep slow wander at full size, and the larger estimate is used
 *     (this covers wander with periods up to the window's length; slower
 *     wander is, over the window, a rate change no fit can tell from the
 *     counter's own, and the longer baselines later average it out).  The
 *     stated uncertainty is 4 standard errors from the scatter, or from
 *     the bins the t distribution's 4-sigma point for their degrees of
 *     freedom (5.62 at 16 bins, 4.65 at 32: their scatter is itself an
 *     estimate; taken as exact, some contended rates fell outside),
 *     whichever is larger (the reference's 1 ns
 *     quantum puts a floor under sigma), plus a systematic term: half the
 *     change of the mean bracket width between the first and last quarter
 *     of the window, over the distance between them (if brackets narrow as
 *     code warms up, the reference's place in them drifts): the change
 *     beyond 4 of its standard errors in full, the rest in quadrature.
 *     The worst-case bound from bracket widths alone (each end anywhere
 *     in its bracket) is also reported: it is what a single pair of
 *     brackets could guarantee, and shrinks as 1/window; where it is the
 *     narrower (a window mostly of gaps), the two ends' rate is taken with
 *     it.
 *
 *  4. the reference's place in the bracket is not fixed: it steps when
 *     what runs beside the calibration changes (the other CPU's work, the
 *     host moving the vCPU), by a few percent of the bracket's width where
 *     many calibrations run at once.  Inside the window a step is a rate, and
 *     nothing in it tells one apart (the scatter, the bins, the widths
 *     were each tried); a step mid-window bends the slope by 1.5 step /
 *     span, which the statement adds: PLACE_STEP of the mean width.  It
 *     shrinks only as 1 / span, so a 1 ppm statement needs a few ms of
 *     brackets: the first calibration states what a short window can
 *     honestly back, and the long baselines below bring it to the goal.
 *
 * Later, nc__calib_extend() measures the rate over a much longer baseline:
 * from the fitted line's centroid (error ~ sigma/sqrt(n)) to one new
 * narrow bracket (error ~ sigma), never stated below the sure bound of
 * the two ends' half widths.  Over 5 s this is a few ppb.
 */
#include "rate.h"

#include <math.h>
#include <string.h>

NC_START void nc__take_bracket(const struct nc__calib_io *io, int tries, struct nc__bracket *out)
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
/* Batches: the window is cut into bins of equal reference time; at each
 * checkpoint there are 16 of them (up to 32 between checkpoints: when the
 * 33rd would start, neighbours merge and bins double in width). */
#define MAX_BINS 32
#define FIRST_CHECKPOINT_NS 125000.0

/* The two-sided 4-sigma point of Student's t with nu degrees of freedom
 * (the tail a normal variable has beyond 4 sigma, 6.3e-5): what "4
 * standard errors" must be when the standard error is itself estimated
 * from a few batch means.  Rounded up; past the table, the Cornish-Fisher
 * expansion, within 0.01 of the true point there. */
static double t_4sigma(int nu)
{
	static const double t[31] = {0,      10051.0, 125.65, 32.62, 17.45, 12.29, 9.85,  8.47,
				     7.60,   7.00,    6.57,   6.25,  5.99,  5.79,  5.62,  5.48,
				     5.37,   5.27,    5.18,   5.11,  5.04,  4.98,  4.93,  4.88,
				     4.84,   4.80,    4.76,   4.73,  4.70,  4.67,  4.65};
	if (nu < 1)
		return INFINITY;
	if (nu <= 30)
		return t[nu];
	double n = nu;
	return 4 + 68 / (4 * n) + (5 * 1024 + 16 * 64 + 12) / (96 * n * n) + 0.01;
}

/* The streaming least-squares fit r = a + b*mid and the batch bins. */
struct fit {
	uint64_t x0;       /* origin of the fit: keeps values small and exact */
	int64_t r0;
	uint64_t accept;   /* widest bracket accepted */
	uint64_t w0;       /* narrowest bracket seen */
	uint64_t warm_w;   /* the warm-up's narrowest, the point (0, 0) */
	int64_t r_start;   /* the reference at the calibration's start */
	/* running means and co-moments (Welford): stable in double precision
	 * for any window, and cheap where long double is emulated in software
	 * (aarch64, riscv64, ppc64), which would slow each bracket down
	 * several-fold */
	double mx, my, cxx, cxy, cyy;
	/* the same brackets with the gaps taken out (see fit_add): the
	 * uncertainty's positions, running mean and co-moment */
	double gap_x, gap_y;   /* ticks and ns taken out so far */
	double mxa, cxxa;
	uint32_t n, total;
	double first_x, first_y, last_y, last_x;
	uint64_t first_w, last_w;
	double bin_ns;
	int nbins;
	double bn[MAX_BINS], bx[MAX_BINS], bxa[MAX_BINS], by[MAX_BINS], bw[MAX_BINS], bw2[MAX_BINS];
};

/* Phase 1: the narrowest of a few brackets sets the acceptance width;
 * brackets wider than 2*w0+1 were interrupted (preemption, an interrupt, a
 * cache miss in the vDSO) and are dropped. */
static int warm_up(const struct nc__calib_io *io, struct fit *f, int64_t max_ns)
{
	/* WARMUP brackets, or fewer where they take a quarter of the cap (a
	 * machine where a call takes 100 us and more: the cap bounds the
	 * whole calibration) */
	struct nc__bracket b = {0, 0, UINT64_MAX};
	int64_t r_first = 0;
	for (int i = 0; i < WARMUP; i++) {
		uint64_t t1 = io->read(io->ctx);
		int64_t r = io->ref_ns(io->ctx);
		uint64_t t2 = io->read(io->ctx);
		if (i == 0)
			r_first = r;
		if (t2 >= t1 && t2 - t1 < b.width) {
			b.width = t2 - t1;
			b.mid = t1 + b.width / 2;
			b.ref = r;
		}
		if (b.width != UINT64_MAX && r - r_first >= max_ns / 4)
			break;
	}
	if (b.width == UINT64_MAX)
		return NC_ECALIB; /* counter only ever went backwards */
	memset(f, 0, sizeof(*f));
	f->w0 = b.width;
	f->warm_w = b.width;
	f->r_start = r_first;
	f->accept = 2 * b.width + 1;
	f->x0 = b.mid;
	f->r0 = b.ref;
	f->bin_ns = FIRST_CHECKPOINT_NS / (MAX_BINS / 2);
	return 0;
}

static void merge_bins(struct fit *f)
{
	for (int k = 0; k < MAX_BINS / 2; k++) {
		f->bn[k] = f->bn[2 * k] + f->bn[2 * k + 1];
		f->bx[k] = f->bx[2 * k] + f->bx[2 * k + 1];
		f->bxa[k] = f->bxa[2 * k] + f->bxa[2 * k + 1];
		f->by[k] = f->by[2 * k] + f->by[2 * k + 1];
		f->bw[k] = f->bw[2 * k] + f->bw[2 * k + 1];
		f->bw2[k] = f->bw2[2 * k] + f->bw2[2 * k + 1];
	}
	for (int k = MAX_BINS / 2; k < MAX_BINS; k++)
		f->bn[k] = f->bx[k] = f->bxa[k] = f->by[k] = f->bw[k] = f->bw2[k] = 0;
	f->bin_ns *= 2;
	f->nbins = MAX_BINS / 2;
}

/* The active time between two accepted brackets: reference time beyond
 * this (the process was preempted, or migrated, or its brackets were all
 * too wide) is a gap.  Longer than a quiet machine's interrupts, shorter
 * than a time slice. */
#define GAP_NS NC__CALIB_GAP_NS

/* How far the reference's place in a bracket may step, as a fraction of
 * the mean width (step 4 at the top): a little above the largest step seen
 * with many calibrations running at once. */
#define PLACE_STEP 0.04

/* Phase 2: one bracket t1, r, t2 into the fit.  Returns 1 if accepted.
 * The rate's fit takes the real positions; the uncertainty, the bins and
 * the checkpoints the positions with each gap cut to GAP_NS (step 2 at
 * the top). */
static int fit_add(struct fit *f, uint64_t t1, int64_t r, uint64_t t2)
{
	f->total++;
	if (t2 < t1 || t2 - t1 > f->accept || t1 < f->x0)
		return 0;
	uint64_t w = t2 - t1;
	double x = (double)(t1 - f->x0) + 0.5 * (double)w;
	double y = (double)(r - f->r0);
	if (f->n == 0) {
		f->first_x = x;
		f->first_y = y;
		f->first_w = w;
	} else if (y - f->last_y > GAP_NS) {
		double cut = 1 - GAP_NS / (y - f->last_y);
		f->gap_y += (y - f->last_y) * cut;
		f->gap_x += (x - f->last_x) * cut;
	}
	f->last_y = y;
	f->last_x = x;
	f->last_w = w;
	f->n++;
	double dx = x - f->mx, dy = y - f->my;
	f->mx += dx / f->n;
	f->my += dy / f->n;
	f->cxx += dx * (x - f->mx);
	f->cxy += dx * (y - f->my);
	f->cyy += dy * (y - f->my);
	double xa = x - f->gap_x, dxa = xa - f->mxa;
	f->mxa += dxa / f->n;
	f->cxxa += dxa * (xa - f->mxa);
	double rel = y - f->first_y - f->gap_y; /* active time */
	int k = rel > 0 ? (int)(rel / f->bin_ns) : 0;
	while (k >= MAX_BINS) {
		merge_bins(f);
		k = (int)(rel / f->bin_ns);
	}
	if (k + 1 > f->nbins)
		f->nbins = k + 1;
	f->bn[k] += 1;
	f->bx[k] += x;
	f->bxa[k] += xa;
	f->by[k] += y;
	f->bw[k] += (double)w;
	f->bw2[k] += (double)w * (double)w;
	if (w < f->w0)
		f->w0 = w;
	return 1;
}

/* The sure bound on a rate between two brackets of widths wa and wb
 * (ticks), span_y ns apart: each reference read anywhere in its bracket,
 * the 1 ns quantum at each end; ppm. */
static double sure_ppm(double wa, double wb, double slope, double span_y)
{
	/* a read's tick stands for the whole tick: (w + 1) / 2 from the
	 * middle at each end (a 24 MHz counter's brackets are mostly 0 wide) */
	return 1e6 * ((wa + wb + 2) * 0.5 * slope + 2) / span_y;
}

/* Phase 3a: the slope's standard error again from the batch means'
 * residuals about the fitted line, which keep slow wander at full size
 * (se: the brackets' own).  Returns the statement's statistical part, ns
 * per tick; *nsum_out: the brackets in the bins. */
static double bins_error(const struct fit *f, uint32_t n, double slope, double sigma, double se,
			 double *nsum_out, struct nc__calib *out)
{
	double bss = 0, bxx = 0, nsum = 0;
	int used = 0;
	for (int k = 0; k < f->nbins; k++) {
		if (f->bn[k] == 0)
			continue;
		double xm = f->bx[k] / f->bn[k], xam = f->bxa[k] / f->bn[k];
		double e = f->by[k] / f->bn[k] - (f->my + slope * (xm - f->mx));
		bss += f->bn[k] * e * e;
		bxx += f->bn[k] * (xam - f->mxa) * (xam - f->mxa);
		nsum += f->bn[k];
		used++;
	}
	double se_b = used > 2 && bxx > 0 ? sqrt(bss / (used - 2) / bxx) : se;
	out->se_fit_ppm = 1e6 * se / slope;
	out->se_bins_ppm = 1e6 * se_b / slope;
	out->bins = used;
	/* 4 standard errors where the error comes from thousands of brackets;
	 * from the bins' few means, the t distribution's 4-sigma point: their
	 * scatter is itself a rough estimate, and taken as exact it let a few
	 * rates of many processes calibrating at once on busy CPUs fall outside
	 * their statement */
	double k4 = used > 2 && bxx > 0 ? t_4sigma(used - 2) : 4;
	double stat_ns = 4 * se > k4 * se_b ? 4 * se : k4 * se_b;
	/* likewise the line's height at the centroid, the long baselines' anchor */
	double sd_a = sigma / sqrt((double)n);
	double sd_ab = used > 2 ? sqrt(bss / (used - 2) / nsum) : sd_a;
	out->anchor_sd_ns = sd_ab > sd_a ? sd_ab : sd_a;
	*nsum_out = nsum;
	return stat_ns;
}

/* Phase 3b, width drift: first and last quarter of the bins in use.  The mean
 * widths of the two quarters differ by chance too (an accepted bracket
 * may be up to twice the narrowest): only a difference beyond 4 of its
 * standard errors is evidence of a trend, and counts in full; a trend
 * hidden below that can bias the slope by at most half of it over the
 * distance, which is added in quadrature with the slope's own error.
 * (Counted in full, the chance part alone kept the first calibration
 * going twice as long after an idle spell: 0.5-2 ppm of "drift" in
 * windows where the slope's error was already below 1 ppm.) */
static void width_drift(const struct fit *f, double *drift_out, double *hidden_out)
{
	int quarter = f->nbins / 4 > 0 ? f->nbins / 4 : 1;
	/* count, sum x (gaps cut), sum width, sum width^2 */
	double q[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
	for (int k = 0; k < quarter; k++)
		for (int h = 0; h < 2; h++) {
			int j = h ? f->nbins - 1 - k : k;
			q[h][0] += f->bn[j];
			q[h][1] += f->bxa[j];
			q[h][2] += f->bw[j];
			q[h][3] += f->bw2[j];
		}
	double drift = 0, drift_hidden = 0;
	if (q[0][0] > 1 && q[1][0] > 1 && q[1][1] / q[1][0] > q[0][1] / q[0][0]) {
		double dist = q[1][1] / q[1][0] - q[0][1] / q[0][0];
		double var_mean = 0;
		for (int h = 0; h < 2; h++) {
			double m = q[h][2] / q[h][0];
			double var = (q[h][3] - q[h][0] * m * m) / (q[h][0] - 1);
			var_mean += (var > 0 ? var : 0) / q[h][0];
		}
		double dw = fabs(q[1][2] / q[1][0] - q[0][2] / q[0][0]);
		double noise = 4 * sqrt(var_mean);
		drift = (dw > noise ? dw - noise : 0) / 2 / dist;
		drift_hidden = (dw < noise ? dw : noise) / 2 / dist;
	}
	*drift_out = drift;
	*hidden_out = drift_hidden;
}

/* Phase 3: the rate and its stated uncertainty from the fit so far.
 * The slope b is ns per tick, hz = 1e9 / b.  Its standard error is
 * sigma / sqrt(Sxx) if the scatter is independent from bracket to bracket.
 * It often is not (a timer catching up, an emulator, a core changing
 * speed), so the same error is also estimated from the bins' means, which
 * keep slow wander at full size, and the larger estimate is used.  The
 * stated uncertainty is 4 such standard errors plus a systematic term for
 * bracket widths drifting between the first and last quarter of the
 * window (the reference's place in the bracket moves with them). */
NC_START static int fit_result(const struct fit *f, struct nc__calib *out)
{
	uint32_t n = f->n;
	if (n < 16 || f->last_y - f->first_y <= 0)
		return NC_ECALIB; /* reference did not advance, or all brackets bad */
	if (!(f->cxx > 0) || !(f->cxy > 0) || !(f->cxxa > 0))
		return NC_ECALIB; /* counter did not advance with the reference */
	double slope = f->cxy / f->cxx; /* ns per tick */
	double sse = f->cyy - slope * f->cxy;
	if (sse < 0)
		sse = 0;
	double sigma = n > 2 ? sqrt(sse / (n - 2)) : 0;
	/* the reference is quantised to 1 ns: sigma cannot honestly be less */
	if (sigma < 0.2887)
		sigma = 0.2887;
	/* the slope's errors at the positions with the gaps cut (fit_add) */
	double se = sigma / sqrt(f->cxxa);
	double nsum;
	double stat_ns = bins_error(f, n, slope, sigma, se, &nsum, out);

	out->hz = 1e9 / slope;
	if (!(out->hz > 0) || !isfinite(out->hz))
		return NC_ECALIB;
	double drift, drift_hidden;
	width_drift(f, &drift, &drift_hidden);
	double stat = stat_ns / slope;
	double span_y = f->last_y - f->first_y;
	double sw = 0;
	for (int k = 0; k < f->nbins; k++)
		sw += f->bw[k];
	out->mean_width = nsum > 0 ? sw / nsum : 0;
	/* the reference's place in the bracket may step (step 4 at the top):
	 * a step of PLACE_STEP of the mean width, mid-window, bends the fit's
	 * slope by 1.5 step / span */
	out->place_ppm = 1e6 * 1.5 * PLACE_STEP * out->mean_width * slope / span_y;
	out->ppm = 1e6 * (sqrt(stat * stat + drift_hidden * drift_hidden) + drift);
	out->worst_ppm = sure_ppm((double)f->first_w, (double)f->last_w, slope, span_y);
	/* A window mostly of gaps (a process starved at the cap) has few bins
	 * and a wide statistical statement, but its two ends are far apart:
	 * the rate between the first and last brackets is then known better,
	 * and for certain (each reference read lies inside its bracket, 1 ns
	 * quantum at each end), than the fit's.  Taken where it is the
	 * narrower statement. */
	/* ... only where the brackets behave as that bound assumes: a scatter
	 * about the line wider than half a bracket says the reference is not
	 * read inside them (a simulated or emulated clock), and the bound
	 * would not be sure (under valgrind a simulated world's rate stated
	 * by it was off by more than the statement, and Unix time drifted) */
	int ends_sure = sigma <= 0.5 * out->mean_width * slope + 1;
	out->ppm += out->place_ppm;
	if (ends_sure && out->worst_ppm < out->ppm && f->last_x > f->first_x) {
		/* (each end anywhere in its bracket: the place's steps included) */
		double hz_ends = 1e9 * (f->last_x - f->first_x) / span_y;
		if (hz_ends > 0 && isfinite(hz_ends)) {
			out->hz = hz_ends;
			out->ppm = out->worst_ppm;
			out->place_ppm = 0;
		}
	}
	out->sigma_ns = sigma;
	out->drift_ppm = 1e6 * drift;
	out->drift_hidden_ppm = 1e6 * drift_hidden;
	out->active_ns = span_y - f->gap_y;
	out->min_width = f->w0;
	out->accept_width = f->accept;
	out->n_used = n;
	out->n_total = f->total;
	out->window_ns = (int64_t)span_y;
	/* the fitted line passes through the centroid (mx, my) */
	double fx = floor(f->mx);
	out->anchor_tick = f->x0 + (uint64_t)fx;
	out->anchor_ns = f->r0 + (int64_t)llround(f->my - slope * (f->mx - fx));
	return 0;
}

/* what of a gap in reference time is not active time */
static double cut_gap(double d) { return d > GAP_NS ? d - GAP_NS : 0; }

/* At the cap with fewer brackets than a fit needs (a machine where each
 * call takes 100 us and more: valgrind's first translations): the rate
 * between the warm-up's narrowest bracket, the point (0, 0), and the last
 * one (x, y, width w: the last accepted, or the one at hand), with the
 * sure bound of their half widths; the scatter taken as half the mean
 * width (for the long baselines later). */
static int ends_result(const struct fit *f, double x, double y, uint64_t w, struct nc__calib *out)
{
	if (!(x > 0) || !(y > 0))
		return NC_ECALIB;
	memset(out, 0, sizeof(*out));
	double slope = y / x;
	out->hz = 1e9 / slope;
	if (!(out->hz > 0) || !isfinite(out->hz))
		return NC_ECALIB;
	out->worst_ppm = sure_ppm((double)f->warm_w, (double)w, slope, y);
	out->ppm = out->worst_ppm;
	out->mean_width = ((double)f->warm_w + (double)w) / 2;
	out->sigma_ns = out->mean_width * 0.5 * slope;
	out->anchor_sd_ns = out->sigma_ns;
	out->min_width = f->w0;
	out->accept_width = f->accept > w ? f->accept : w;
	out->n_used = 2;
	out->n_total = f->total;
	out->window_ns = (int64_t)y;
	/* active time as everywhere: each gap cut to GAP_NS, those between
	 * the accepted brackets (gap_y), from the warm-up's point to the first
	 * of them, and from the last of them to this point (the bracket at
	 * hand, after a preemption, whose gap would otherwise count as active
	 * time, far past the cap) */
	double act = y;
	if (f->n > 0)
		act -= f->gap_y + cut_gap(f->first_y) + cut_gap(y - f->last_y);
	else
		act -= cut_gap(y);
	out->active_ns = act;
	out->anchor_tick = f->x0;
	out->anchor_ns = f->r0;
	return 0;
}

NC_START
int nc__calibrate_until(const struct nc__calib_io *io, const struct nc__calib_goal *g,
			struct nc__calib *out)
{
	if (!io || !out || !g || g->max_ns <= 0 || g->min_ns > g->max_ns)
		return NC_EINVAL;
	struct fit f;
	int rc = warm_up(io, &f, g->max_ns);
	if (rc)
		return rc;
	double checkpoint = FIRST_CHECKPOINT_NS;
	int met = 0; /* checkpoints in a row that met the goal */
	uint32_t n_before = 0; /* accepted before the last 64 brackets */
	for (long i = 0; i < MAX_BRACKETS; i++) {
		/* fewer than 1 in 8 of the last 64 brackets accepted: the
		 * warm-up's narrowest was a fluke of the machine (valgrind, an
		 * emulator: 16 accepted took many times the cap there), not a
		 * width it keeps; the width accepted doubles (a quiet machine
		 * accepts all but a few in 1000, and never gets here) */
		if (i > 0 && i % 64 == 0) {
			if (f.n - n_before < 8 && f.accept < UINT64_MAX / 4)
				f.accept = 2 * f.accept + 1;
			n_before = f.n;
		}
		uint64_t t1 = io->read(io->ctx);
		int64_t r = io->ref_ns(io->ctx);
		uint64_t t2 = io->read(io->ctx);
		int accepted = fit_add(&f, t1, r, t2);
		/* the cap in reference time: at the first accepted bracket past
		 * it, or, with fewer than the 16 a fit needs, at any bracket past
		 * it, counted from the start (the two ends' rate then: under
		 * valgrind, where a bracket may take a millisecond, waiting for 16
		 * ran far past the cap; where few brackets are accepted, the
		 * width accepted doubles above); the checkpoints in active time
		 * (a gap gives no evidence: checked again only when the brackets
		 * after it are 6.25% more) */
		if (f.n < 16 && r - f.r_start >= g->max_ns) {
			if (f.n > 0)
				return ends_result(&f, f.last_x, f.last_y, f.last_w, out);
			if (t2 >= t1 && t1 >= f.x0)
				return ends_result(&f, (double)(t1 - f.x0) + 0.5 * (double)(t2 - t1),
						   (double)(r - f.r0), t2 - t1, out);
		}
		if (!accepted || f.n < 16)
			continue;
		if (f.last_y - f.first_y >= (double)g->max_ns)
			return fit_result(&f, out);
		double act = f.last_y - f.first_y - f.gap_y;
		if (act < checkpoint)
			continue;
		while (checkpoint <= act)
			checkpoint *= 1.0625;
		/* a checkpoint: stop if the goal is met here and at the one
		 * before (step 2a at the top: a single estimate under the goal
		 * is too often a low one) */
		if (g->target_ppm > 0 && act >= (double)g->min_ns && fit_result(&f, out) == 0 &&
		    out->ppm <= g->target_ppm) {
			if (++met >= 2)
				return 0;
		} else {
			met = 0;
		}
	}
	return fit_result(&f, out);
}

int nc__calibrate(const struct nc__calib_io *io, int64_t window_ns, struct nc__calib *out)
{
	if (window_ns <= 0)
		return NC_EINVAL;
	struct nc__calib_goal g = {window_ns, window_ns, 0};
	return nc__calibrate_until(io, &g, out);
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
	 * the reference quantum at each end.  That holds where the reference
	 * sits in a lone bracket where it sat in the fit's; it may not (a
	 * bracket taken cold, the code around it slowed: under TSan a lone
	 * bracket's place was off by twice the statement): never less than
	 * the sure bound, each end anywhere in its
	 * bracket (the anchor's, an average of the fit's, within half their
	 * mean width), plus the quantum at each end */
	long double err = 4.0L * sqrtl((long double)c->sigma_ns * c->sigma_ns +
				       (long double)c->anchor_sd_ns * c->anchor_sd_ns) +
			  1.0L;
	long double ns_tick = dy / dx;
	long double w_anchor = c->mean_width > 0 ? (long double)c->mean_width
						 : (long double)c->accept_width;
	long double sure = ((long double)b->width + w_anchor + 2.0L) * 0.5L * ns_tick + 2.0L;
	if (sure > err)
		err = sure;
	/* and the place's step between the two ends (step 4 at the top) */
	err += (long double)PLACE_STEP * w_anchor * ns_tick;
	*hz = (double)(1e9L * dx / dy);
	*ppm = (double)(1e6L * err / dy);
	return 0;
}
