/* SPDX-License-Identifier: MIT */
/* The rule for trusting a frequency the hardware, the OS or the user
 * states.  None is taken on faith: each must agree with our own
 * measurement against CLOCK_MONOTONIC_RAW (nc__rate_source_agrees).  The counters
 * read what is stated (src/counter/stated.c). */
#include "rate.h"
#include "base/fmt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* The adoption rule, in one place.  A stated value agrees with a
 * measurement when it lies within the measurement's stated uncertainty
 * (about 4 sigma) plus its own rounding (a kHz figure is +-500 Hz): so a
 * wrong table, a guest told the wrong rate, or a nominal frequency the
 * counter does not keep is rejected, with the discrepancy in ppm. */
int nc__rate_source_agrees(const struct nc_hz_source *s, const struct nc__meas *m, double *diff_ppm,
		   double *tol_ppm)
{
	double quantum_ppm = s->resolution_hz / s->hz * 1e6;
	*diff_ppm = (s->hz - m->hz) / m->hz * 1e6;
	*tol_ppm = m->ppm + m->step_ppm + quantum_ppm;
	return fabs(*diff_ppm) <= *tol_ppm;
}

/* Stated by the hardware or the OS: cross-checks, never used.  A stated
 * value can only be claimed to within its discrepancy plus the
 * measurement's uncertainty (unless trusted blindly), which is never better
 * than the measurement alone: so the measurement is used, and each source
 * is marked as agreeing with it or refuted by it.  Returns how many agree. */
NC_START int nc__check_stated(const struct nc__meas *m, struct nc_hz_source *src, int n)
{
	int agree = 0;
	for (int i = 0; i < n; i++) {
		if (!(src[i].hz > 0))
			continue;
		double diff, tol;
		if (!nc__rate_source_agrees(&src[i], m, &diff, &tol)) {
			src[i].status = NC_SRC_REJECTED;
			nc__fmt(src[i].reason, sizeof(src[i].reason),
				 "refuted: differs from measurement by %+.2f ppm (tolerance %.2f)", diff,
				 tol);
		} else {
			agree++;
			src[i].status = NC_SRC_AGREES;
			nc__fmt(src[i].reason, sizeof(src[i].reason),
				 "agrees with measurement (%+.3f ppm)", diff);
		}
	}
	return agree;
}

/* A rate the user states (NANOCLOCK_HZ, nc_set_counter's hz) overrides
 * the measurement unless the measurement contradicts it: by more than
 * 1000 ppm (a typo, a wrong unit) or twice the measurement's own
 * uncertainty, whichever is larger — or `force`.  Its uncertainty is what
 * the measurement proves: the discrepancy plus the measurement's own.
 * Returns 1 if the stated rate is to be used; *diff_ppm, *tol_ppm say why. */
int nc__user_rate_ok(double stated_hz, const struct nc__meas *m, int force, double *claim_ppm,
		     double *diff_ppm, double *tol_ppm)
{
	*diff_ppm = (stated_hz - m->hz) / m->hz * 1e6;
	*tol_ppm = fmax(NC_USER_RATE_TOL_PPM, 2 * (m->ppm + m->step_ppm));
	*claim_ppm = fabs(*diff_ppm) + m->ppm;
	return force || fabs(*diff_ppm) <= *tol_ppm;
}
