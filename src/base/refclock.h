/* SPDX-License-Identifier: MIT */
/* The reference clocks, through one table that tests can replace with a
 * simulated world (nc__test_set_refclocks, before the first use). */
#ifndef NC_BASE_REFCLOCK_H
#define NC_BASE_REFCLOCK_H

#include "compiler.h"

struct nc__kclock { /* what adjtimex() says */
	int state;       /* its return value: TIME_OK, TIME_INS, ..., TIME_ERROR */
	int status;      /* STA_* bits */
	long maxerror_us, esterror_us, tai_s;
	double freq_ppm;
	long tick_us, tick_nominal_us; /* us per clock tick, and its nominal value */
	double pll_ppm;  /* the most the kernel's phase-locked loop may move the
			    rate over the next second (0 when it is idle) */
	int adjtime_active; /* an adjtime() slew (500 ppm) is in progress */
	double pll_offset_ns;  /* the offset the kernel's PLL has still to slew (|offset|) */
	double adjtime_left_ns; /* what adjtime() has still to slew (|offset|) */
};
/* The system clock's rate against CLOCK_MONOTONIC_RAW that adjtimex states:
 * freq and tick, in ppm. */
static inline double nc__kclock_rate_ppm(const struct nc__kclock *k)
{
	double tick = k->tick_nominal_us > 0 ? (double)k->tick_us / (double)k->tick_nominal_us : 1;
	return ((1 + k->freq_ppm * 1e-6) * tick - 1) * 1e6;
}

struct nc__refclocks {
	int64_t (*raw)(void);  /* CLOCK_MONOTONIC_RAW, ns */
	int64_t (*mono)(void); /* CLOCK_MONOTONIC, ns: NTP's rate, no steps */
	int64_t (*real)(void); /* CLOCK_REALTIME, ns since 1970 */
	int64_t (*boot)(void); /* CLOCK_BOOTTIME, ns */
	int (*kclock)(struct nc__kclock *k); /* 0, or -1 if unavailable */
};
/* Written once before the first use (tests), read-only afterwards. */
NC_HIDDEN extern struct nc__refclocks nc__ref;
NC_HIDDEN void nc__test_set_refclocks(const struct nc__refclocks *r);
NC_HIDDEN int64_t nc__mono_raw_ns(void);
NC_HIDDEN long nc__tick_nominal_us(void); /* adjtimex's nominal tick, us */
/* a test replaced the reference clocks (nothing is shared then) */
NC_HIDDEN int nc__ref_simulated(void);
/* The reference clocks as a measurement's reference (struct nc__calib_io's
 * ref_ns; ctx unused). */
NC_HIDDEN int64_t nc__ref_io_raw(void *ctx);
NC_HIDDEN int64_t nc__ref_io_mono(void *ctx);
NC_HIDDEN int64_t nc__clock_ns(int clock_id); /* -1 on error */

#endif
