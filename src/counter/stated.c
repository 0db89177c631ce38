/* SPDX-License-Identifier: MIT */
/* Frequencies the hardware or the OS states for a counter: the helper the
 * counters fill their stated sources with, and the kernel's own TSC-to-ns
 * conversion from the perf_event mmap page (slow: perf_event_open can take
 * milliseconds, so never on the first call).  Whether a stated rate
 * is believed is the rate's business (src/rate/sources.c). */
#include "counter.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__linux__)
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#endif

NC_START
void nc__stated_set(struct nc_hz_source *s, const char *name, double hz, double resolution_hz,
		 const char *reason)
{
	memset(s, 0, sizeof(*s));
	nc__copy(s->name, sizeof(s->name), name);
	s->hz = hz;
	s->resolution_hz = resolution_hz;
	s->status = NC_SRC_ABSENT;
	nc__copy(s->reason, sizeof(s->reason), reason);
}

/* The kernel's own TSC-to-ns conversion, published to user space in the
 * perf_event mmap page when cap_user_time is set: ns = cyc*mult >> shift. */
void nc__stated_perf_page(struct nc_hz_source *s)
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
		nc__stated_set(s, "perf-mmap", 0, 0, "perf_event_open refused");
		return;
	}
	long pg = sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		nc__stated_set(s, "perf-mmap", 0, 0, "mmap of the perf page failed");
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
		nc__stated_set(s, "perf-mmap", 0, 0, "kernel did not set cap_user_time");
		return;
	}
	double hz = ldexp(1e9, shift) / mult;
	nc__stated_set(s, "perf-mmap", hz, hz * 0.5 / mult, "kernel time_mult/time_shift");
#else
	nc__stated_set(s, "perf-mmap", 0, 0, "not Linux");
#endif
}

