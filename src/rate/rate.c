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
	int published;        /* readers have the conversion */
	/* the counter's own rate */
	struct nc__calib cal; /* the latest anchor for long baselines */
	double meas_hz, meas_ppm, meas_worst_ppm, meas_window_ns;
	int remeasure;        /* after a discontinuity: the next refresh measures afresh */
	uint32_t refreshes;
	uint64_t resolution;  /* ticks: a quantised counter's slope error */
	/* stated rates: cross-checks, or the application's, used */
	struct nc_hz_source src[NC_MAX_HZ_SOURCES];
	int nsrc;
	char env_status[160]; /* NANOCLOCK_HZ: used / refused / ignored, and why */
} R;

static void use(double hz, double ppm, const char *source)
{
	uint64_t q;
	nc_conv_t c;
	if (nc__hz_to_q24(hz, &q) != 0 || nc__conv_from_q24(&c, q) != 0)
		return; /* out of range: keep what we have */
	R.conv = c;
	R.hz = (double)q / 16777216.0;
	R.ppm = ppm;
	R.source = source;
	if (R.published)
		nc__rate_publish();
}

void nc__rate_publish(void)
{
#ifdef NC_DEBUG
	nc__debug_check_conv(&R.conv);
#endif
	nc__latch_write_conv(R.conv.ns_int, R.conv.ns_frac);
	R.published = 1;
}

void nc__rate_set_exact(double hz, const char *source, uint64_t resolution_ticks)
{
	R.resolution = resolution_ticks;
	R.exact = 1;
	R.stated = R.forced = 0;
	use(hz, 0, source);
}

void nc__rate_set_measured(const struct nc__calib *c, uint64_t resolution_ticks)
{
	R.cal = *c;
	R.resolution = resolution_ticks;
	R.meas_hz = c->hz;
	R.meas_ppm = c->ppm;
	R.meas_worst_ppm = c->worst_ppm;
	R.meas_window_ns = (double)c->window_ns;
	use(c->hz, c->ppm, "measured");
}

void nc__rate_measurement(struct nc__meas *m)
{
	m->hz = R.meas_hz;
	m->ppm = R.meas_ppm;
	m->step_ppm = R.meas_window_ns > 0
			      ? (double)R.resolution * 1e9 / R.meas_hz / R.meas_window_ns * 1e6
			      : 0;
}

int nc__rate_decide(struct nc_hz_source *stated, int nstated, const struct nc__config *cfg)
{
	int status = 0;
	if (R.exact) {
		if (cfg->hz > 0)
			snprintf(R.env_status, sizeof(R.env_status),
				 "ignored: the counter is an OS clock, exact by definition");
		return 0;
	}
	struct nc__meas m;
	nc__rate_measurement(&m);
	R.nsrc = nstated < NC_MAX_HZ_SOURCES ? nstated : NC_MAX_HZ_SOURCES;
	memcpy(R.src, stated, (size_t)R.nsrc * sizeof(R.src[0]));
	nc__check_stated(&m, R.src, R.nsrc);

	double claim, diff, tol;
	/* the application's stated rate (its counter's first source) */
	struct nc_hz_source *app = R.nsrc > 0 && !strcmp(R.src[0].name, "application") &&
					   R.src[0].hz > 0 ? &R.src[0] : NULL;
	if (app) {
		if (nc__user_rate_ok(app->hz, &m, 0, &claim, &diff, &tol)) {
			app->status = NC_SRC_ADOPTED;
			snprintf(app->reason, sizeof(app->reason),
				 "used: differs from measurement by %+.3f ppm", diff);
			use(app->hz, claim, app->name);
			R.stated = 1;
		} else {
			app->status = NC_SRC_REJECTED;
			snprintf(app->reason, sizeof(app->reason),
				 "refused: differs from measurement by %+.1f ppm (tolerance %.0f)", diff,
				 tol);
			status = NC_EOVERRIDE;
		}
	}
	if (cfg->hz > 0) {
		int ok = nc__user_rate_ok(cfg->hz, &m, cfg->hz_force, &claim, &diff, &tol);
		if (!ok) {
			snprintf(R.env_status, sizeof(R.env_status),
				 "refused: differs from measurement by %+.1f ppm (tolerance %.0f ppm); "
				 "NANOCLOCK_HZ_FORCE=1 uses it anyway",
				 diff, tol);
			status = NC_EOVERRIDE;
		} else {
			R.forced = cfg->hz_force && fabs(diff) > tol;
			snprintf(R.env_status, sizeof(R.env_status), "used%s: differs from measurement by %+.2f ppm",
				 R.forced ? " (forced by NANOCLOCK_HZ_FORCE)" : "", diff);
			use(cfg->hz, claim, "env NANOCLOCK_HZ");
			R.stated = 1;
		}
	}
	return status;
}

void nc__rate_env_status(const char *text)
{
	snprintf(R.env_status, sizeof(R.env_status), "%s", text);
}

int nc__rate_refine(const struct nc__bracket *b)
{
	double hz_l, ppm_l;
	if (R.exact || b->width == UINT64_MAX || nc__calib_extend(&R.cal, b, &hz_l, &ppm_l) != 0)
		return 0;
	R.refreshes++;
	if (R.remeasure) {
		/* after a discontinuity: the new baseline's rate as it is */
		R.remeasure = 0;
		int changed = fabs(hz_l - R.meas_hz) / R.meas_hz * 1e6 > ppm_l + R.meas_ppm;
		if (changed)
			nc__log(NC_LOG_WARN, "counter rate changed: %.6f -> %.6f MHz (%+.1f ppm)",
				R.meas_hz / 1e6, hz_l / 1e6, (hz_l / R.meas_hz - 1) * 1e6);
		R.meas_hz = hz_l;
		R.meas_ppm = R.meas_worst_ppm = ppm_l;
		R.meas_window_ns = (double)(b->ref - R.cal.anchor_ns);
		if (!R.forced) {
			R.stated = 0; /* a stated rate no longer describes this counter */
			use(hz_l, ppm_l, "measured");
		}
		return changed;
	}
	if (ppm_l < R.meas_ppm) {
		R.meas_hz = hz_l;
		R.meas_ppm = ppm_l;
		R.meas_worst_ppm = ppm_l; /* the long baseline's bound is already worst-case-like */
		R.meas_window_ns = (double)(b->ref - R.cal.anchor_ns);
	}
	if (R.forced)
		return 0;
	if (R.stated) {
		struct nc__meas m;
		double claim, diff, tol;
		nc__rate_measurement(&m);
		if (nc__user_rate_ok(R.hz, &m, 0, &claim, &diff, &tol)) {
			R.ppm = claim;
		} else {
			R.stated = 0;
			nc__log(NC_LOG_WARN, "the stated rate (%s) differs from a longer measurement "
				"by %+.1f ppm: measured %.6f MHz used", R.source, diff, R.meas_hz / 1e6);
			use(R.meas_hz, R.meas_ppm, "measured");
		}
	} else if (R.meas_ppm < R.ppm) {
		use(R.meas_hz, R.meas_ppm, "measured");
	}
	return 0;
}

void nc__rate_reanchor(const struct nc__bracket *b)
{
	R.cal.anchor_tick = b->mid;
	R.cal.anchor_ns = b->ref;
	R.remeasure = 1;
}

void nc__rate_counter_replaced(double hz, const char *source)
{
	R.meas_hz = R.meas_ppm = 0; /* a measurement of the old counter */
	nc__rate_set_exact(hz, source, 1);
}

int nc__rate_is_exact(void) { return R.exact; }
int nc__rate_remeasuring(void) { return R.remeasure; }
double nc__rate_true_hz(void) { return R.exact || R.meas_hz <= 0 ? R.hz : R.meas_hz; }
double nc__rate_true_ppm(void) { return R.exact || R.meas_hz <= 0 ? R.ppm : R.meas_ppm; }
double nc__rate_hz(void) { return R.hz; }
void nc__rate_conv(nc_conv_t *out) { *out = R.conv; }
const struct nc__calib *nc__rate_anchor(void) { return &R.cal; }
int nc__rate_sources_full(void) { return R.nsrc >= NC_MAX_HZ_SOURCES; }

void nc__rate_add_source(const struct nc_hz_source *s)
{
	if (R.nsrc >= NC_MAX_HZ_SOURCES)
		return;
	R.src[R.nsrc] = *s;
	struct nc__meas m;
	nc__rate_measurement(&m);
	nc__check_stated(&m, &R.src[R.nsrc], 1);
	R.nsrc++;
}

void nc__rate_info(struct nc_info *o)
{
	o->hz = R.hz;
	o->hz_uncertainty_ppm = R.ppm;
	o->hz_source = R.source;
	o->hz_measured = R.meas_hz;
	o->hz_measured_ppm = R.meas_ppm;
	o->hz_measured_worst_ppm = R.meas_worst_ppm;
	o->calib_window_ms = R.meas_window_ns / 1e6;
	o->refreshes = R.refreshes;
	o->resolution_ns = R.hz > 0 ? (double)R.resolution * 1e9 / R.hz : 0;
	snprintf(o->hz_env_status, sizeof(o->hz_env_status), "%s", R.env_status);
	o->n_hz_sources = R.nsrc;
	memcpy(o->hz_sources, R.src, sizeof(R.src));
}
