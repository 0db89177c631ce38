/* OS clocks: the fallback that makes "never fail" true.  Ticks are
 * nanoseconds of CLOCK_MONOTONIC_RAW, so the rate is exact (1 GHz) and needs
 * no calibration; the cost is a vDSO call (or a system call). */
#include "../internal.h"

#include <time.h>

#ifndef CLOCK_MONOTONIC_RAW
#define CLOCK_MONOTONIC_RAW CLOCK_MONOTONIC
#endif

int64_t nc__mono_raw_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC_RAW, &ts) != 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t mono_raw_read(void) { return (uint64_t)nc__mono_raw_ns(); }

static int mono_raw_available(char *why, size_t whylen)
{
	(void)why;
	(void)whylen;
	return nc__mono_raw_ns() < 0 ? NC_ESYS : 0;
}

const struct nc__counter nc__counter_mono_raw = {
	.name = "clock_monotonic_raw",
	.kind = NC__KIND_CALL,
	.read = mono_raw_read,
	/* ordered as it is: the vDSO reads its counter with a fenced read
	 * (rdtsc_ordered on x86) and a system call serialises */
	.read_ordered = mono_raw_read,
	.fixed_hz = 1e9,
	.bits = 64,
	.available = mono_raw_available,
};
