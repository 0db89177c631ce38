/* SPDX-License-Identifier: MIT */
/* Frequencies stated by the hardware or the OS, and the rule for trusting
 * them.  None is taken on faith: each must agree with our own measurement
 * against CLOCK_MONOTONIC_RAW (nc__src_agrees).  The cheap sources are
 * read by the counters at init; the perf page, whose perf_event_open can
 * take 10 ms on an idle VM, only later (nc__probe_deferred_sources). */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__linux__)
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#endif

void nc__src_set(struct nc_hz_source *s, const char *name, double hz, double resolution_hz,
		 const char *reason)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->hz = hz;
	s->resolution_hz = resolution_hz;
	s->status = NC_SRC_ABSENT;
	snprintf(s->reason, sizeof(s->reason), "%s", reason);
}

/* The kernel's own TSC-to-ns conversion, published to user space in the
 * perf_event mmap page when cap_user_time is set: ns = cyc*mult >> shift. */
void nc__src_perf_page(struct nc_hz_source *s)
{
#if defined(__linux__) && defined(__NR_perf_event_open)
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.disabled = 1;
#ifndef PERF_FLAG_FD_CLOEXEC
#define PERF_FLAG_FD_CLOEXEC (1UL << 3)
#endif
	/* close-on-exec: another thread's exec during the probe inherits nothing */
	int fd = (int)syscall(__NR_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		nc__src_set(s, "perf-mmap", 0, 0, "perf_event_open refused");
		return;
	}
	long pg = sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		nc__src_set(s, "perf-mmap", 0, 0, "mmap of the perf page failed");
		return;
	}
	volatile struct perf_event_mmap_page *pc = m;
	uint32_t seq, mult = 0;
	uint16_t shift = 0;
	int cap = 0;
	/* the kernel's seqlock on the page; full barriers (read once, at init)
	 * rather than acquire fences, which ThreadSanitizer does not model */
	for (int tries = 0; tries < 1000; tries++) {
		seq = pc->lock;
		__sync_synchronize();
		cap = pc->cap_user_time;
		mult = pc->time_mult;
		shift = pc->time_shift;
		__sync_synchronize();
		if (pc->lock == seq)
			break;
	}
	munmap(m, (size_t)pg);
	close(fd);
	if (!cap || mult == 0) {
		nc__src_set(s, "perf-mmap", 0, 0, "kernel did not set cap_user_time");
		return;
	}
	double hz = ldexp(1e9, shift) / mult;
	nc__src_set(s, "perf-mmap", hz, hz * 0.5 / mult, "kernel time_mult/time_shift");
#else
	nc__src_set(s, "perf-mmap", 0, 0, "not Linux");
#endif
}

/* The adoption rule, in one place.  A stated value agrees with a
 * measurement when it lies within the measurement's stated uncertainty
 * (about 4 sigma) plus its own rounding (a kHz figure is +-500 Hz): so a
 * wrong table, a guest told the wrong rate, or a nominal frequency the
 * counter does not keep is rejected, with the discrepancy in ppm. */
int nc__src_agrees(const struct nc_hz_source *s, const struct nc__meas *m, double *diff_ppm,
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
int nc__check_stated(const struct nc__meas *m, struct nc_hz_source *src, int n)
{
	int agree = 0;
	for (int i = 0; i < n; i++) {
		if (!(src[i].hz > 0))
			continue;
		double diff, tol;
		if (!nc__src_agrees(&src[i], m, &diff, &tol)) {
			src[i].status = NC_SRC_REJECTED;
			snprintf(src[i].reason, sizeof(src[i].reason),
				 "refuted: differs from measurement by %+.2f ppm (tolerance %.2f)", diff,
				 tol);
		} else {
			agree++;
			src[i].status = NC_SRC_AGREES;
			snprintf(src[i].reason, sizeof(src[i].reason),
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
