/* SPDX-License-Identifier: MIT */
/* A simulated world for the timeline tests: one true time T, and the
 * clocks the library reads — a counter, CLOCK_MONOTONIC_RAW,
 * CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME, adjtimex — each a
 * function of T that the test can bend: the system clock stepped (its
 * offset from MONOTONIC moves) or slewed (MONOTONIC's rate), the counter's rate
 * changed (a migration), stopped, or running through a suspend while
 * MONOTONIC_RAW stands still.  Every read advances T by a fixed cost, so
 * brackets have width and time passes as the library works.  Install with
 * world_install() before the library's first use. */
#ifndef NC_TEST_WORLD_H
#define NC_TEST_WORLD_H

#include "internal.h"

#include <stdint.h>
#include <string.h>
#include <sys/timex.h>

struct world {
	long double T;              /* true time, ns */
	double cost_ns;             /* each read advances T by this */
	long double ctr_v0, ctr_T0; /* counter = ctr_base + ctr_v0 + (T - ctr_T0) * ctr_rate */
	uint64_t ctr_base;          /* added modulo 2^64, an integer: a counter near its wrap
				       stays exact where long double is only a double
				       (valgrind: a quantum of 2048 ticks near 2^64) */
	double ctr_rate;            /* ticks per true ns */
	long double raw_lost;       /* CLOCK_MONOTONIC_RAW = T - raw_lost */
	long double mono_v0, mono_T0; /* CLOCK_MONOTONIC = mono_v0 + (T - mono_T0) * real_rate,
					 standing still in a suspend like RAW */
	double real_rate;
	int64_t real_off;           /* CLOCK_REALTIME = CLOCK_MONOTONIC + real_off: an
				       integer, so that Unix time (~1.8e18 ns) stays exact
				       where long double is only a double (valgrind) */
	int64_t boot_off;           /* CLOCK_BOOTTIME = CLOCK_MONOTONIC + boot_off (the
				       time slept), as the kernel keeps it */
	struct nc__kclock k;
	int have_k;
};

static struct world w;

static inline void world_tick(void) { w.T += w.cost_ns; }

static inline long double world_ctr(void)
{
	return w.ctr_v0 + (w.T - w.ctr_T0) * (long double)w.ctr_rate;
}
static inline long double world_mono(void)
{
	return w.mono_v0 + (w.T - w.mono_T0) * (long double)w.real_rate;
}
static inline int64_t world_real(void) { return (int64_t)world_mono() + w.real_off; }
static inline int64_t world_raw_now(void) { return (int64_t)(w.T - w.raw_lost); }

static uint64_t w_ctr(void *ctx)
{
	(void)ctx;
	world_tick();
	long double c = world_ctr();
	while (c >= 18446744073709551616.0L)
		c -= 18446744073709551616.0L;
	return w.ctr_base + (uint64_t)c; /* a 64-bit counter wraps */
}
static int64_t w_raw(void)
{
	world_tick();
	return world_raw_now();
}
static int64_t w_mono(void)
{
	world_tick();
	return (int64_t)world_mono();
}
static int64_t w_real(void)
{
	world_tick();
	return (int64_t)world_real();
}
static int64_t w_boot(void)
{
	world_tick();
	return (int64_t)world_mono() + w.boot_off;
}
static int w_kclock(struct nc__kclock *k)
{
	*k = w.k;
	return w.have_k ? 0 : -1;
}

/* T starts at 100 s; the counter at 3 GHz from an arbitrary origin; the
 * system clock in 2026. */
static inline void world_install(void)
{
	memset(&w, 0, sizeof(w));
	w.T = 100e9L;
	w.cost_ns = 20;
	w.ctr_v0 = 123456789012345.0L;
	w.ctr_T0 = w.T;
	w.ctr_rate = 3.0;
	w.mono_v0 = 50e9L;
	w.boot_off = 50000000000LL;
	w.mono_T0 = w.T;
	w.real_rate = 1.0;
	w.real_off = 1795000000000000000LL - 50000000000LL;
	w.k.state = TIME_OK;
	w.k.maxerror_us = 2000;
	w.k.esterror_us = 100;
	w.k.tick_us = 10000;
	w.k.tick_nominal_us = 10000;
	w.have_k = 1;
	struct nc__refclocks r = {w_raw, w_mono, w_real, w_boot, w_kclock};
	nc__test_set_refclocks(&r);
	struct nc_counter_spec s = {"world", w_ctr, NULL, 0, 64};
	nc__test_add_candidate(&s);
}

/* Changes that keep each clock continuous at T. */
static inline void world_ctr_rate(double r)
{
	w.ctr_v0 = world_ctr();
	w.ctr_T0 = w.T;
	w.ctr_rate = r;
}
/* CLOCK_MONOTONIC's rate, set as the kernel sets it (adjtimex
 * ADJ_FREQUENCY): adjtimex states the new frequency. */
static inline void world_real_rate(double r)
{
	w.mono_v0 = world_mono();
	w.mono_T0 = w.T;
	w.real_rate = r;
	w.k.freq_ppm = (r - 1) * 1e6;
}
static inline void world_real_step(int64_t ns) { w.real_off += ns; }

/* A suspend of ns: MONOTONIC_RAW and MONOTONIC stand still; REALTIME and
 * BOOTTIME go on (the kernel moves REALTIME's offset); the counter stops
 * too unless counter_runs. */
static inline void world_suspend(long double ns, int counter_runs)
{
	if (!counter_runs) {
		w.ctr_v0 = world_ctr();
		w.ctr_T0 = w.T + ns;
	}
	w.mono_v0 = world_mono();
	w.mono_T0 = w.T + ns;
	w.real_off += (int64_t)ns;
	w.boot_off += (int64_t)ns;
	w.T += ns;
	w.raw_lost += ns;
}

#endif
