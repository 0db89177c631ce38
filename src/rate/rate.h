/* SPDX-License-Identifier: MIT */
/* The rate (src/rate/): ticks to nanoseconds.
 *
 *   conv.c       fixed-point conversion and the proof of its 1 ns bound
 *   calibrate.c  measuring a counter against a reference clock
 *   sources.c    the rule for believing a stated rate
 *   rate.c       the rate in use and the measured one (owner of that state)
 *
 * The counter and the reference clock come in through struct
 * nc__calib_io, so a test can calibrate a simulated world (the layers:
 * docs/architecture.md). */
#ifndef NC_RATE_H
#define NC_RATE_H

#include "../base/compiler.h"
#include "../base/config.h"
#include "../base/lock.h"
#include "nanoclock_info.h"

#include <stdint.h>

/* ---- conv.c ---- */
/* Conversion parameters from a frequency in Hz * 2^24 (see conv.c). */
NC_HIDDEN int nc__conv_from_q24(nc_conv_t *c, uint64_t hz_q24);
NC_HIDDEN int nc__hz_to_q24(double hz, uint64_t *q24);
/* 64.64 ns-per-tick for a rate, rounded to nearest (0 on bad input) */
NC_HIDDEN int nc__ns_per_tick(double hz, uint64_t *ip, uint64_t *fp);

/* ---- calibrate.c ---- */
/* Where calibration reads its counter and its reference clock: the
 * selected counter and CLOCK_MONOTONIC_RAW, or a test's simulated pair. */
struct nc__calib_io {
	void *ctx;
	uint64_t (*read)(void *ctx);    /* ordered counter read */
	int64_t (*ref_ns)(void *ctx);   /* reference clock, ns */
};
/* When the first calibration may stop. */
struct nc__calib_goal {
	int64_t min_ns;      /* never stop before this much reference time */
	int64_t max_ns;      /* always stop here */
	double target_ppm;   /* stop at the first checkpoint with ppm <= this (0: run to max) */
};
#define NC__CALIB_GAP_NS 100000.0 /* a gap between brackets: longer than this */

struct nc__calib {
	double hz;            /* ticks per second */
	double ppm;           /* stated uncertainty (about 4 sigma) */
	double worst_ppm;     /* worst case from bracket widths alone */
	double sigma_ns;      /* residual scatter of accepted samples */
	double anchor_sd_ns;  /* standard error of the fitted line at its centroid */
	uint64_t min_width;   /* narrowest bracket seen, ticks */
	uint64_t accept_width;/* brackets wider than this were dropped */
	uint32_t n_used, n_total;
	/* A point on the fitted line (its centroid), the anchor for longer
	 * baselines later: counter value and reference ns. */
	uint64_t anchor_tick;
	int64_t anchor_ns;
	int64_t window_ns;    /* reference time the fit spans */
	/* how the statement was made (debug log): the slope's standard error
	 * from the scatter and from the bins (ppm), the width-drift terms
	 * (ppm), bins used, active time (gaps cut, ns) */
	double se_fit_ppm, se_bins_ppm, drift_ppm, drift_hidden_ppm, active_ns;
	/* active time counts at most NC__CALIB_GAP_NS of each gap between
	 * brackets: a calibration stopped at its cap is active for less than
	 * the cap plus that (calibrate.c, GAP_NS) */
	int bins;
	/* mean width of the accepted brackets, ticks (0: unknown, as for a
	 * shared record's calibration: accept_width stands in for it) */
	double mean_width;
	double place_ppm;     /* the statement's part for a step of the reference's place */
};
/* One bracket: counter, reference, counter.  mid is the counter value at
 * the middle of the bracket, width its width, both in ticks (UINT64_MAX:
 * no bracket could be taken, the counter only went backwards). */
struct nc__bracket {
	uint64_t mid;
	int64_t ref;
	uint64_t width;
};
NC_HIDDEN void nc__take_bracket(const struct nc__calib_io *io, int tries, struct nc__bracket *out);
/* Fixed window (the tests' and the bench's form). */
NC_HIDDEN int nc__calibrate(const struct nc__calib_io *io, int64_t window_ns, struct nc__calib *out);
/* Adaptive: stops as soon as the goal is met. */
NC_HIDDEN int nc__calibrate_until(const struct nc__calib_io *io, const struct nc__calib_goal *g,
				  struct nc__calib *out);
/* Rate over the long baseline from c's anchor to bracket b; 0 on success. */
NC_HIDDEN int nc__calib_extend(const struct nc__calib *c, const struct nc__bracket *b, double *hz,
			       double *ppm);

/* ---- sources.c ---- */
/* A measurement as evidence about stated values: the rate, its stated
 * uncertainty, and the most one counter step can bias it over the window
 * (a quantised counter's slope can be off by a step over the baseline;
 * the step is the resolution, which includes a read's time: an
 * overestimate, so a tolerance a little wider). */
struct nc__meas {
	double hz, ppm, step_ppm;
};
/* The one adoption rule: does stated source s agree with measurement m?
 * diff and tolerance in ppm returned. */
NC_HIDDEN int nc__rate_source_agrees(const struct nc_hz_source *s, const struct nc__meas *m,
			     double *diff_ppm, double *tol_ppm);
/* Apply it to every stated source: sets status and reason of each
 * (cross-checks only: the measurement is used); returns how many agree. */
NC_HIDDEN int nc__check_stated(const struct nc__meas *m, struct nc_hz_source *src, int n);
/* The one rule for a rate the user states (NANOCLOCK_HZ, nc_set_counter):
 * used unless measurement contradicts it; *claim_ppm its uncertainty. */
#define NC_USER_RATE_TOL_PPM 1000.0
NC_HIDDEN int nc__user_rate_ok(double stated_hz, const struct nc__meas *m, int force,
			       double *claim_ppm, double *diff_ppm, double *tol_ppm);

/* ---- rate.c: the rate in use (for intervals: nc_ticks_to_ns) and the
 * counter's measured rate (for nc_now_ns, nc_unix_ns and the checks).
 * Guarded by nc__lib_lock, which each function here requires; the
 * conversion in use is published to readers by the latch (nc_impl_g.conv).
 * ---- */
/* Initialisation: an OS clock, exact by definition, and its resolution. */
NC_HIDDEN void nc__rate_set_exact(double hz, const char *source, uint64_t resolution_ticks)
	NC_REQUIRES(nc__lib_lock);
/* Initialisation: the first calibration, and the counter's resolution. */
NC_HIDDEN void nc__rate_set_measured(const struct nc__calib *c, uint64_t resolution_ticks)
	NC_REQUIRES(nc__lib_lock);
/* Initialisation: a shared record's calibration (src/shared/), kept for
 * intervals while this process's own measurement agrees with it. */
struct nc__bracket;
NC_HIDDEN void nc__rate_set_shared(const struct nc__calib *c, uint64_t resolution_ticks,
				   const struct nc__bracket *start) NC_REQUIRES(nc__lib_lock);
/* Where nc_now_ns starts: the calibration's centroid, or for a shared
 * record the bracket taken when it was checked (its tie may be hours old:
 * its rate's error over that age would be an offset from the start). */
NC_HIDDEN void nc__rate_start(uint64_t *tick, int64_t *ns) NC_REQUIRES(nc__lib_lock);
/* Initialisation: the rates stated for the counter (cross-checked; the
 * application's, named "application", used if measurement agrees) and
 * NANOCLOCK_HZ (used if measurement agrees, or forced).  0, or
 * NC_EOVERRIDE when a stated rate was refused. */
NC_HIDDEN int nc__rate_decide(struct nc_hz_source *stated, int nstated, const struct nc__config *cfg)
	NC_REQUIRES(nc__lib_lock);
/* What became of NANOCLOCK_HZ when it was refused or ignored before it
 * reached the rule (initialisation). */
NC_HIDDEN void nc__rate_env_status(const char *text) NC_REQUIRES(nc__lib_lock);
/* Publish the conversion in use (initialisation's last step). */
NC_HIDDEN void nc__rate_publish(void) NC_REQUIRES(nc__lib_lock);
/* The long baseline to bracket b (a refresh): the measurement refined, the
 * rate in use updated by the rules above.  Returns 1 when a re-measurement
 * after a discontinuity found the rate changed beyond both uncertainties. */
NC_HIDDEN int nc__rate_refine(const struct nc__bracket *b) NC_REQUIRES(nc__lib_lock);
/* The counter jumped: measure again from bracket b. */
NC_HIDDEN void nc__rate_reanchor(const struct nc__bracket *b) NC_REQUIRES(nc__lib_lock);
/* ... until the next refresh has: 1 meanwhile. */
NC_HIDDEN int nc__rate_remeasuring(void) NC_REQUIRES(nc__lib_lock);
/* The counter stopped: the OS clock that replaces it, exact. */
NC_HIDDEN void nc__rate_counter_replaced(double hz, const char *source) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN int nc__rate_is_exact(void) NC_REQUIRES(nc__lib_lock);
/* The counter's own rate: measured (whatever rate is stated for
 * intervals), or exact; its uncertainty in ppm. */
NC_HIDDEN double nc__rate_true_hz(void) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN double nc__rate_true_ppm(void) NC_REQUIRES(nc__lib_lock);
/* The rate in use for intervals. */
NC_HIDDEN double nc__rate_hz(void) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN void nc__rate_conv(nc_conv_t *out) NC_REQUIRES(nc__lib_lock);
/* The latest measurement as evidence (nc__user_rate_ok). */
NC_HIDDEN void nc__rate_measurement(struct nc__meas *m) NC_REQUIRES(nc__lib_lock);
/* The latest measurement's span (ns), 0 if none. */
NC_HIDDEN double nc__rate_meas_window_ns(void) NC_REQUIRES(nc__lib_lock);
/* 1 when the latest measurement is this process's own (its calibration,
 * or a refresh's baseline ending at its own bracket); 0 while it is a
 * shared record's claim, adopted and not yet measured here. */
NC_HIDDEN int nc__rate_meas_own(void) NC_REQUIRES(nc__lib_lock);
/* Its worst case from bracket widths alone (ppm). */
NC_HIDDEN double nc__rate_meas_worst_ppm(void) NC_REQUIRES(nc__lib_lock);
/* The anchor: the calibration's centroid (the first epoch starts there). */
NC_HIDDEN const struct nc__calib *nc__rate_anchor(void) NC_REQUIRES(nc__lib_lock);
/* A stated source learnt later (the machine's, read after the start; the
 * perf page): cross-checked and kept. */
NC_HIDDEN void nc__rate_add_source(struct nc_hz_source *s) NC_REQUIRES(nc__lib_lock); /* *s: its verdict after */
NC_HIDDEN int nc__rate_sources_full(void) NC_REQUIRES(nc__lib_lock);
struct nc_info;
NC_HIDDEN void nc__rate_info(struct nc_info *o) NC_REQUIRES(nc__lib_lock);

#endif
