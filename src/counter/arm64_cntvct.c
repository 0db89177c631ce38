/* SPDX-License-Identifier: MIT */
/* Arm64: the generic timer's virtual count, CNTVCT_EL0.
 *
 * Fixed frequency (CNTFRQ_EL0, set by firmware: stated, so cross-checked),
 * at least 56 bits wide (64 from Armv8.6).  Reads are not ordered: an ISB
 * before the read keeps it from being taken early.  CPUs with FEAT_ECV
 * have the self-synchronised CNTVCTSS_EL0, which needs no ISB; Linux
 * reports it as HWCAP2_ECV.  The inline fast path (nanoclock_impl.h) reads
 * either; these readers serve selection and calibration.
 * Where firmware or an erratum workaround denies EL0 access to the
 * counter, Linux traps the read and emulates it (its
 * arch/arm64/kernel/traps.c handles CNTVCT_EL0, CNTVCTSS_EL0 and
 * CNTFRQ_EL0): the read never faults, it is
 * only slow, and selection's cost measurement then prefers the OS clock.
 * So the probe needs no signal trap. */
#include "counter.h"

#if defined(__aarch64__)
#include <stdio.h>
#include <sys/auxv.h>

#ifndef HWCAP2_ECV
#define HWCAP2_ECV (1UL << 19)
#endif

NC_START static uint64_t vct_read(void *ctx)
{
	(void)ctx;
	return nc_impl_raw(NC_IMPL_KIND_CNTVCT);
}

NC_START static uint64_t vct_read_ordered(void *ctx)
{
	(void)ctx;
	return nc_impl_fenced(NC_IMPL_KIND_CNTVCT);
}

NC_START static uint64_t vctss_read_ordered(void *ctx)
{
	(void)ctx;
	return nc_impl_fenced(NC_IMPL_KIND_CNTVCTSS);
}

NC_START static int vct_stated(const struct nc__machine *m, struct nc_hz_source *out, int max)
{
	(void)m;
	if (max < 1)
		return 0;
	uint64_t f;
	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
	if (f == 0)
		nc__stated_set(&out[0], "cntfrq_el0", 0, 0, "CNTFRQ_EL0 is zero (firmware left it unset)");
	else
		nc__stated_set(&out[0], "cntfrq_el0", (double)f, 0, "CNTFRQ_EL0 register");
	return 1;
}

const struct nc__counter nc__counter_cntvct = {
	.name = "cntvct",
	.what = "Arm generic timer (CNTVCT_EL0)",
	.kind = NC_IMPL_KIND_CNTVCT,
	.read = vct_read,
	.read_ordered = vct_read_ordered,
	.bits = 64,
	.penalty_ns = 0,
	.stated = vct_stated,
};

const struct nc__counter nc__counter_cntvctss = {
	.name = "cntvct",
	.what = "Arm generic timer (CNTVCTSS_EL0, self-synchronised)",
	.kind = NC_IMPL_KIND_CNTVCTSS,
	.read = vct_read,
	.read_ordered = vctss_read_ordered,
	.bits = 64,
	.penalty_ns = 0,
	.stated = vct_stated,
};

NC_START const struct nc__counter *nc__hw_counter(const struct nc__machine *m)
{
	(void)m;
	return (getauxval(AT_HWCAP2) & HWCAP2_ECV) ? &nc__counter_cntvctss : &nc__counter_cntvct;
}
#endif
