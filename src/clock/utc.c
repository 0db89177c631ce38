/* SPDX-License-Identifier: MIT */
/* How far from UTC: what adjtimex() says the kernel knows (synchronised
 * or not, its maximum error, a pending leap second, TAI - UTC), plus
 * nanoclock's own tie to CLOCK_REALTIME.  Pure: the tests feed it
 * recorded adjtimex results. */
#include "utc.h"
#include "base/fmt.h"

#include <stdio.h>
#include <sys/timex.h>

/* the kernel's maxerror saturates here (NTP_PHASE_LIMIT): unsynchronised */
#define MAXERROR_LIMIT_US 16000000L

void nc__utc_decode(const struct nc__kclock *k, int have_k, double tie_error_ns,
		    struct nc_unix_status *st)
{
	st->tie_error_ns = tie_error_ns;
	if (!have_k) {
		st->synchronised = -1;
		st->kernel_state = -1;
		st->utc_error_ns = -1;
		nc__fmt(st->why, sizeof(st->why), "adjtimex() is not available: UTC error unknown");
		return;
	}
	st->kernel_state = k->state;
	st->leap_pending = (k->status & STA_INS) ? 1 : (k->status & STA_DEL) ? -1 : 0;
	st->tai_offset_s = (int)k->tai_s;
	st->kernel_max_error_us = (double)k->maxerror_us;
	st->kernel_est_error_us = (double)k->esterror_us;
	st->kernel_freq_ppm = k->freq_ppm;
	const char *why = NULL;
	if (k->status & STA_UNSYNC)
		why = "the system clock is not synchronised (adjtimex: STA_UNSYNC)";
	else if (k->state == TIME_ERROR)
		why = "the system clock is not synchronised (adjtimex: TIME_ERROR)";
	else if (k->maxerror_us >= MAXERROR_LIMIT_US || k->maxerror_us < 0)
		why = "the kernel's maximum error has saturated (16 s): not synchronised";
	if (why) {
		st->synchronised = 0;
		st->utc_error_ns = -1;
		nc__copy(st->why, sizeof(st->why), why);
		return;
	}
	st->synchronised = 1;
	st->utc_error_ns = (double)k->maxerror_us * 1e3 + tie_error_ns;
	st->why[0] = 0;
}
