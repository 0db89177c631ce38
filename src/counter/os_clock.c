/* SPDX-License-Identifier: MIT */
/* OS clocks: the fallbacks that make "never fail" true.  Their ticks are
 * the clock's own unit, so the rate is exact and needs no calibration; the
 * cost is a vDSO call (or a system call), and the kernel picks what they
 * read.  Ordered as they are: the vDSO reads its counter with a fenced
 * read (rdtsc_ordered on x86, ISB on arm64) and a system call serialises. */
#include "counter.h"

#include <sys/time.h>
#include <time.h>

#ifndef CLOCK_MONOTONIC_RAW
#define CLOCK_MONOTONIC_RAW CLOCK_MONOTONIC
#endif

#define clock_ns(id) nc__clock_ns((int)(id))

/* through the reference table: the clock calibration and the timelines
 * measure against is the one this counter reads */
NC_START static uint64_t raw_read(void *ctx)
{
	(void)ctx;
	return (uint64_t)nc__mono_raw_ns();
}
NC_START static uint64_t mono_read(void *ctx)
{
	(void)ctx;
	return (uint64_t)clock_ns(CLOCK_MONOTONIC);
}
/* CLOCK_REALTIME in microseconds, as gettimeofday gives it (through the
 * reference table, so that the simulated world can set it) */
NC_START static uint64_t gtod_read(void *ctx)
{
	(void)ctx;
	return (uint64_t)nc__ref.real() / 1000;
}

NC_START static int raw_available(const struct nc__machine *m, char *why, size_t whylen)
{
	(void)m;
	(void)why;
	(void)whylen;
	return clock_ns(CLOCK_MONOTONIC_RAW) < 0 ? NC_ENOCOUNTER : 0;
}
NC_START static int mono_available(const struct nc__machine *m, char *why, size_t whylen)
{
	(void)m;
	(void)why;
	(void)whylen;
	return clock_ns(CLOCK_MONOTONIC) < 0 ? NC_ENOCOUNTER : 0;
}

/* Penalties (select.c explains the policy): a call instead of an inline
 * read; CLOCK_MONOTONIC is NTP-slewed, so its rate is not the one
 * nc_now_ns tracks; gettimeofday is CLOCK_REALTIME, which can be set
 * backwards: the very last resort. */
const struct nc__counter nc__counter_mono_raw = {
	.name = "clock_monotonic_raw",
	.what = "clock_gettime(CLOCK_MONOTONIC_RAW)",
	.kind = NC_IMPL_KIND_CALL,
	.read = raw_read,
	.read_ordered = raw_read,
	.bits = 64,
	.penalty_ns = 100,
	.fixed_hz = 1e9,
	.available = raw_available,
};

const struct nc__counter nc__counter_mono = {
	.name = "clock_monotonic",
	.what = "clock_gettime(CLOCK_MONOTONIC)",
	.kind = NC_IMPL_KIND_CALL,
	.read = mono_read,
	.read_ordered = mono_read,
	.bits = 64,
	.penalty_ns = 150,
	.fixed_hz = 1e9,
	.available = mono_available,
};

const struct nc__counter nc__counter_gettimeofday = {
	.name = "gettimeofday",
	.what = "gettimeofday (realtime, microseconds)",
	.kind = NC_IMPL_KIND_CALL,
	.read = gtod_read,
	.read_ordered = gtod_read,
	.bits = 64,
	.penalty_ns = 1e6,
	.fixed_hz = 1e6,
};

#if !(defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || \
      defined(__powerpc64__) || (defined(__riscv) && __riscv_xlen == 64))
/* An architecture without a counter driver: the OS clocks only. */
const struct nc__counter *nc__hw_counter(const struct nc__machine *m)
{
	(void)m;
	return NULL;
}
#endif
