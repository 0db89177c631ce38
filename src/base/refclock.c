/* SPDX-License-Identifier: MIT */
/* The reference clocks the library measures itself against: the counter
 * is calibrated against CLOCK_MONOTONIC_RAW, tied to CLOCK_MONOTONIC plus
 * CLOCK_REALTIME's offset from it for Unix time, and CLOCK_BOOTTIME tells a
 * suspend apart; adjtimex() says how
 * well the kernel knows UTC.  They are reached through one table so that
 * tests can drive the real timeline code with simulated clocks
 * (nc__test_set_refclocks, before the first use). */
#include "refclock.h"

#include <stdint.h>

#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOCK_MONOTONIC_RAW
#define CLOCK_MONOTONIC_RAW CLOCK_MONOTONIC
#endif
#ifndef CLOCK_BOOTTIME
#define CLOCK_BOOTTIME CLOCK_MONOTONIC
#endif

NC_START int64_t nc__clock_ns(int id)
{
	struct timespec ts;
	if (clock_gettime((clockid_t)id, &ts) != 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

NC_START static int64_t os_raw(void) { return nc__clock_ns(CLOCK_MONOTONIC_RAW); }
NC_START static int64_t os_mono(void) { return nc__clock_ns(CLOCK_MONOTONIC); }
NC_START static int64_t os_real(void) { return nc__clock_ns(CLOCK_REALTIME); }
NC_START static int64_t os_boot(void) { return nc__clock_ns(CLOCK_BOOTTIME); }

/* The kernel's nominal tick in us (its TICK_USEC): adjtimex's tick field
 * counts us per USER_HZ tick, and USER_HZ is 100 on every Linux
 * architecture this library builds for (1024 only on alpha and ia64).
 * sysconf(_SC_CLK_TCK) says the same number, but a start that asks it
 * touches two more pages of libc, two more page faults in a cold process;
 * test_timeline nominal_tick checks that the two agree. */
long nc__tick_nominal_us(void)
{
#if defined(__alpha__) || defined(__ia64__)
	const long user_hz = 1024;
#else
	const long user_hz = 100;
#endif
	return (1000000 + user_hz / 2) / user_hz;
}

/* adjtimex's reads need no privilege.  ADJ_OFFSET_SS_READ reads every
 * field as modes 0 does, except that offset is what adjtime() has left to
 * slew; the kernel's own offset is read by a second call.  Each costs a
 * system call: a tie makes two. */
NC_START static int os_kclock(struct nc__kclock *k)
{
	struct timex tx = {0};
	tx.modes = ADJ_OFFSET_SS_READ;
	int state = adjtimex(&tx);
	if (state < 0)
		return -1;
	k->state = state;
	k->status = tx.status;
	k->maxerror_us = tx.maxerror;
	k->esterror_us = tx.esterror;
	k->tai_s = tx.tai;
	/* freq is in ppm with a 16-bit fraction */
	k->freq_ppm = (double)tx.freq / 65536.0;
	k->tick_us = tx.tick;
	k->tick_nominal_us = nc__tick_nominal_us();
	k->adjtime_active = tx.offset != 0;
	k->adjtime_left_ns = (double)(tx.offset < 0 ? -tx.offset : tx.offset) * 1e3;
	k->pll_offset_ns = 0;
	k->pll_ppm = 0;
	/* The offset the kernel's PLL has still to slew (a second call: modes
	 * 0 reads it).  Read whatever the status says: an offset left when
	 * STA_PLL was cleared is slewed all the same (second_overflow applies
	 * it unconditionally: an offset left behind runs the clock off the
	 * rate the tie assumed, by far more than its statement).  The kernel
	 * moves the rate by offset / 2^(SHIFT_PLL + constant) per second,
	 * SHIFT_PLL = 2 (kernel/time/ntp.c), the whole offset with a PPS
	 * signal in use; offset is in us unless STA_NANO. */
	struct timex px = {0};
	if (adjtimex(&px) >= 0 && px.offset != 0) {
		double off_ns = (double)px.offset * ((px.status & STA_NANO) ? 1 : 1000);
		off_ns = off_ns < 0 ? -off_ns : off_ns;
		k->pll_offset_ns = off_ns;
		long sh = 2 + (px.constant > 0 && px.constant < 20 ? px.constant : 0);
		int pps = (px.status & STA_PPSTIME) && (px.status & STA_PPSSIGNAL);
		k->pll_ppm = (pps ? off_ns : off_ns / (double)(1L << sh)) / 1e3;
	}
	return 0;
}
struct nc__refclocks nc__ref = {os_raw, os_mono, os_real, os_boot, os_kclock};

NC_START int64_t nc__mono_raw_ns(void) { return nc__ref.raw(); }
NC_START int nc__ref_simulated(void) { return nc__ref.raw != os_raw; }
NC_START int64_t nc__ref_io_raw(void *ctx) { return (void)ctx, nc__ref.raw(); }
NC_START int64_t nc__ref_io_mono(void *ctx) { return (void)ctx, nc__ref.mono(); }

void nc__test_set_refclocks(const struct nc__refclocks *r) { nc__ref = *r; }
