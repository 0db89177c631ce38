/* SPDX-License-Identifier: MIT */
/* The rate in use and the measured one: this file owns them.
 *
 * Two rates, kept apart on purpose:
 *   - the counter's true rate, measured against CLOCK_MONOTONIC_RAW (or
 *     exact for an OS clock): nc_now_ns and nc_unix_ns follow it, and the
 *     checks for jumps and stops compare the counter with it;
 *   - the rate in use for intervals (nc_ticks_to_ns, nc_conv): the
 *     measured one, or one the user states (NANOCLOCK_HZ, nc_set_counter)
 *     while measurement does not contradict it, or one NANOCLOCK_HZ_FORCE
 *     imposes whatever measurement says.
 * A stated rate may seed what intervals use; it never replaces the
 * measurement, so it cannot pull nc_now_ns off CLOCK_MONOTONIC_RAW, and a
 * forced one is never mistaken for a jump of the counter.
 *
 * The measurement is refined at every refresh of nc_now_ns over the long
 * baseline from the first calibration's centroid (calibrate.c), and
 * restarted from a new anchor after a discontinuity. */
#include "rate.h"
#include "base/fmt.h"
#include "../base/debug.h"
#include "../base/latch.h"
#include "../base/log.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Guarded by nc__lib_lock (src/base/lock.c).  The conversion in use is
 * also published to readers, by the latch (nc_impl_g.conv). */
static struct {
	/* in use for intervals */
	nc_conv_t conv;
	double hz, ppm;
	const char *source;
	int exact;            /* an OS clock: the rate is exact by definition */
	int stated;           /* a rate the user stated is in use */
	int forced;           /* ... kept whatever measurement says (NANOCLOCK_HZ_FORCE) */
	int shared;           /* a shared record's rate is in use */
	uint64_t start_tick;  /* where nc_now_ns starts (nc__rate_start) */
	int64_t start_ns;
	int published;        /* readers have the conversion */
	/* the counter's own rate */
	struct nc__calib cal; /* the latest anchor for long baselines */
	double meas_hz, meas_ppm, meas_worst_ppm, meas_window_ns;
	int meas_own;         /* ... made by this process, not a shared record's claim */
	int remeasure;        /* after a discontinuity: the next refresh measures afresh */
	uint32_t refreshes;
	uint64_t resolution;  /* ticks: a quantised counter's slope error */
	/* stated rates: cross-checks, or the application's, used */
	struct nc_hz_source src[NC_MAX_HZ_SOURCES];
	int nsrc;
	char env_status[160]; /* NANOCLOCK_HZ: used / refused / ignored, and why */
} rate NC_GUARDED_BY(nc__lib_lock);

NC_START static void use(double hz, double ppm, const char *source) NC_REQUIRES(nc__lib_lock)
{
	uint64_t q;
	nc_conv_t c;
	if (nc__hz_to_q24(hz, &q) != 0 || nc__conv_from_q24(&c, q) != 0)
		return; /* out of range: keep what we have */
	rate.conv = c;
	rate.hz = (double)q / 16777216.0;
	rate.ppm = ppm;
	rate.source = source;
	if (rate.published)
		nc__rate_publish();
}

NC_START void nc__rate_publish(void)
{
	NC_LOCK_HELD();
#ifdef NC_DEBUG
	nc__debug_check_conv(&rate.conv);
#endif
	nc__latch_write_conv(rate.conv.ns_int, rate.conv.ns_frac);
	rate.published = 1;
}

void nc__rate_set_exact(double hz, const char *source, uint64_t resolution_ticks)
{
	NC_LOCK_HELD();
	rate.resolution = resolution_ticks;
	rate.exact = 1;
	rate.stated = rate.forced = rate.shared = 0;
	use(hz, 0, source);
}

NC_START void nc__rate_set_measured(const struct nc__calib *c, uint64_t resolution_ticks)
{
	NC_LOCK_HELD();
	rate.cal = *c;
	rate.resolution = resolution_ticks;
	rate.meas_hz = c->hz;
	rate.meas_ppm = c->ppm;
	rate.meas_worst_ppm = c->worst_ppm;
	rate.meas_window_ns = (double)c->window_ns;
	rate.meas_own = 1;
	use(c->hz, c->ppm, "measured");
}

NC_START
void nc__rate_set_shared(const struct nc__calib *c, uint64_t resolution_ticks,
			 const struct nc__bracket *start)
{
	NC_LOCK_HELD();
	nc__rate_set_measured(c, resolution_ticks);
	rate.meas_own = 0; /* the record's claim until a refresh measures it here */
	rate.shared = 1;
	rate.start_tick = start->mid;
	rate.start_ns = start->ref;
	use(c->hz, c->ppm, "shared");
}

NC_START void nc__rate_start(uint64_t *tick, int64_t *ns)
{
	*tick = rate.shared && rate.start_ns ? rate.start_tick : rate.cal.anchor_tick;
	*ns = rate.shared && rate.start_ns ? rate.start_ns : rate.cal.anchor_ns;
}

double nc__rate_meas_window_ns(void) { return rate.meas_window_ns; }
int nc__rate_meas_own(void) { return rate.meas_own; }
double nc__rate_meas_worst_ppm(void) { return rate.meas_worst_ppm; }

void nc__rate_measurement(struct nc__meas *m)
{
	m->hz = rate.meas_hz;
	m->ppm = rate.meas_ppm;
	m->step_ppm = rate.meas_window_ns > 0
			      ? (double)rate.resolution * 1e9 / rate.meas_hz / rate.meas_window_ns * 1e6
			      : 0;
}

NC_START int nc__rate_decide(struct nc_hz_source *stated, int nstated, const struct nc__config *cfg)
{
	NC_LOCK_HELD();
	int status = 0;
	if (rate.exact) {
		if (cfg->hz > 0)
			nc__fmt(rate.env_status, sizeof(rate.env_status),
				 "ignored: the counter is an OS clock, exact by definition");
		return 0;
	}
	struct nc__meas m;
	nc__rate_measurement(&m);
	rate.nsrc = nstated < NC_MAX_HZ_SOURCES ? nstated : NC_MAX_HZ_SOURCES;
	memcpy(rate.src, stated, (size_t)rate.nsrc * sizeof(rate.src[0]));
	nc__check_stated(&m, rate.src, rate.nsrc);

	double claim, diff, tol;
	/* the application's stated rate (its counter's first source) */
	struct nc_hz_source *app = rate.nsrc > 0 && !strcmp(rate.src[0].name, "application") &&
					   rate.src[0].hz > 0 ? &rate.src[0] : NULL;
	if (app) {
		if (nc__user_rate_ok(app->hz, &m, 0, &claim, &diff, &tol)) {
			app->status = NC_SRC_ADOPTED;
			nc__fmt(app->reason, sizeof(app->reason),
				 "used: differs from measurement by %+.3f ppm", diff);
			use(app->hz, claim, app->name);
			rate.stated = 1;
		} else {
			app->status = NC_SRC_REJECTED;
			nc__fmt(app->reason, sizeof(app->reason),
				 "refused: differs from measurement by %+.1f ppm (tolerance %.0f)", diff,
				 tol);
			status = NC_EOVERRIDE;
		}
	}
	if (cfg->hz > 0) {
		int ok = nc__user_rate_ok(cfg->hz, &m, cfg->hz_force, &claim, &diff, &tol);
		if (!ok) {
			nc__fmt(rate.env_status, sizeof(rate.env_status),
				 "refused: differs from measurement by %+.1f ppm (tolerance %.0f ppm); "
				 "NANOCLOCK_HZ_FORCE=1 uses it anyway",
				 diff, tol);
			status = NC_EOVERRIDE;
		} else {
			rate.forced = cfg->hz_force && fabs(diff) > tol;
			nc__fmt(rate.env_status, sizeof(rate.env_status), "used%s: differs from measurement by %+.2f ppm",
				 rate.forced ? " (forced by NANOCLOCK_HZ_FORCE)" : "", diff);
			use(cfg->hz, claim, "env NANOCLOCK_HZ");
			rate.stated = 1;
		}
	}
	return status;
}

void nc__rate_env_status(const char *text)
{
	nc__copy(rate.env_status, sizeof(rate.env_status), text);
}

int nc__rate_refine(const struct nc__bracket *b)
{
	NC_LOCK_HELD();
	double hz_l, ppm_l;
	if (rate.exact || b->width == UINT64_MAX || nc__calib_extend(&rate.cal, b, &hz_l, &ppm_l) != 0)
		return 0;
	rate.refreshes++;
	if (rate.remeasure) {
		/* after a discontinuity: the new baseline's rate as it is */
		rate.remeasure = 0;
		int changed = fabs(hz_l - rate.meas_hz) / rate.meas_hz * 1e6 > ppm_l + rate.meas_ppm;
		if (changed)
			nc__log(NC_LOG_WARN, "counter rate changed: %.6f -> %.6f MHz (%+.1f ppm)",
				rate.meas_hz / 1e6, hz_l / 1e6, (hz_l / rate.meas_hz - 1) * 1e6);
		rate.meas_hz = hz_l;
		rate.meas_ppm = rate.meas_worst_ppm = ppm_l;
		rate.meas_window_ns = (double)(b->ref - rate.cal.anchor_ns);
		rate.meas_own = 1;
		if (!rate.forced) {
			rate.stated = 0; /* a stated rate no longer describes this counter */
			rate.shared = 0;
			use(hz_l, ppm_l, "measured");
		}
		return changed;
	}
	/* the baseline from the tie (this process's own, or the record's it
	 * adopted, checked at adoption) to this process's bracket: measured
	 * here, and from the first such refresh on it replaces a record's
	 * claim (published as this process's own only then) */
	if (ppm_l < rate.meas_ppm) {
		rate.meas_hz = hz_l;
		rate.meas_ppm = ppm_l;
		rate.meas_worst_ppm = ppm_l; /* the long baseline's bound is already worst-case-like */
		rate.meas_window_ns = (double)(b->ref - rate.cal.anchor_ns);
		rate.meas_own = 1;
	}
	if (rate.forced)
		return 0;
	if (rate.stated) {
		struct nc__meas m;
		double claim, diff, tol;
		nc__rate_measurement(&m);
		if (nc__user_rate_ok(rate.hz, &m, 0, &claim, &diff, &tol)) {
			rate.ppm = claim;
		} else {
			rate.stated = 0;
			nc__log(NC_LOG_WARN, "the stated rate (%s) differs from a longer measurement "
				"by %+.1f ppm: measured %.6f MHz used", rate.source, diff, rate.meas_hz / 1e6);
			use(rate.meas_hz, rate.meas_ppm, "measured");
		}
	} else if (rate.shared) {
		/* one rate for every process that adopted the record: kept
		 * while this process's own measurement over the long baseline
		 * (this bracket's, not the best so far, which may still be the
		 * record's own claim) agrees with it */
		double diff = (hz_l / rate.hz - 1) * 1e6;
		if (fabs(diff) > ppm_l + rate.ppm) {
			rate.shared = 0;
			rate.meas_hz = hz_l;
			rate.meas_ppm = rate.meas_worst_ppm = ppm_l;
			rate.meas_window_ns = (double)(b->ref - rate.cal.anchor_ns);
			rate.meas_own = 1;
			nc__log(NC_LOG_WARN, "the shared record's rate differs from this process's "
				"measurement by %+.3f ppm (beyond both uncertainties, %.3g ppm): measured "
				"%.6f MHz used", diff, ppm_l + rate.ppm, hz_l / 1e6);
			use(hz_l, ppm_l, "measured");
		}
	} else if (rate.meas_ppm < rate.ppm) {
		use(rate.meas_hz, rate.meas_ppm, "measured");
	}
	return 0;
}

void nc__rate_reanchor(const struct nc__bracket *b)
{
	NC_LOCK_HELD();
	rate.cal.anchor_tick = b->mid;
	rate.cal.anchor_ns = b->ref;
	rate.remeasure = 1;
}

void nc__rate_counter_replaced(double hz, const char *source)
{
	NC_LOCK_HELD();
	rate.meas_hz = rate.meas_ppm = 0; /* a measurement of the old counter */
	rate.meas_own = 0;
	nc__rate_set_exact(hz, source, 1);
}

NC_START int nc__rate_is_exact(void) { return rate.exact; }
int nc__rate_remeasuring(void) { return rate.remeasure; }
NC_START
double nc__rate_true_hz(void) { return rate.exact || rate.meas_hz <= 0 ? rate.hz : rate.meas_hz; }
NC_START
double nc__rate_true_ppm(void) { return rate.exact || rate.meas_hz <= 0 ? rate.ppm : rate.meas_ppm; }
double nc__rate_hz(void) { return rate.hz; }
void nc__rate_conv(nc_conv_t *out) { *out = rate.conv; }
NC_START const struct nc__calib *nc__rate_anchor(void) { return &rate.cal; }
int nc__rate_sources_full(void) { return rate.nsrc >= NC_MAX_HZ_SOURCES; }

void nc__rate_add_source(struct nc_hz_source *s)
{
	NC_LOCK_HELD();
	if (rate.nsrc >= NC_MAX_HZ_SOURCES)
		return;
	rate.src[rate.nsrc] = *s;
	struct nc__meas m;
	nc__rate_measurement(&m);
	nc__check_stated(&m, &rate.src[rate.nsrc], 1);
	*s = rate.src[rate.nsrc++]; /* the verdict, for the caller's log */
}

void nc__rate_info(struct nc_info *o)
{
	NC_LOCK_HELD();
	o->hz = rate.hz;
	o->hz_uncertainty_ppm = rate.ppm;
	o->hz_source = rate.source;
	o->hz_measured = rate.meas_hz;
	o->hz_measured_ppm = rate.meas_ppm;
	o->hz_measured_worst_ppm = rate.meas_worst_ppm;
	o->calib_window_ms = rate.meas_window_ns / 1e6;
	o->refreshes = rate.refreshes;
	o->resolution_ns = rate.hz > 0 ? (double)rate.resolution * 1e9 / rate.hz : 0;
	nc__copy(o->hz_env_status, sizeof(o->hz_env_status), rate.env_status);
	o->n_hz_sources = rate.nsrc;
	memcpy(o->hz_sources, rate.src, sizeof(rate.src));
}
