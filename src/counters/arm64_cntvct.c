/* Arm64: the generic timer's virtual count, CNTVCT_EL0.
 *
 * Fixed frequency (CNTFRQ_EL0, set by firmware: stated, so cross-checked),
 * at least 56 bits wide (64 from Armv8.6).  Reads are not ordered: an ISB
 * before the read keeps it from being taken early.  CPUs with FEAT_ECV
 * have the self-synchronised CNTVCTSS_EL0, which needs no ISB; Linux
 * reports it as HWCAP2_ECV.  A kernel may also disable EL0 access
 * (CNTKCTL_EL1.EL0VCTEN), and the read then faults: the probe traps that. */
#include "../internal.h"

#if defined(__aarch64__)
#include <stdio.h>
#include <sys/auxv.h>

#ifndef HWCAP2_ECV
#define HWCAP2_ECV (1UL << 19)
#endif

static uint64_t vct_read(void *ctx)
{
	(void)ctx;
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
}

static uint64_t vct_read_ordered(void *ctx)
{
	(void)ctx;
	uint64_t v;
	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(v) : : "memory");
	return v;
}

/* CNTVCTSS_EL0 is S3_3_C14_C0_6: written by encoding so that older
 * assemblers accept it. */
static uint64_t vctss_read_ordered(void *ctx)
{
	(void)ctx;
	uint64_t v;
	__asm__ __volatile__("mrs %0, S3_3_C14_C0_6\n\tisb" : "=r"(v) : : "memory");
	return v;
}

static int vct_stated(struct nc_hz_source *out, int max)
{
	if (max < 2)
		return 0;
	uint64_t f;
	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
	if (f == 0)
		nc__src_set(&out[0], "cntfrq_el0", 0, 0, "CNTFRQ_EL0 is zero (firmware left it unset)");
	else
		nc__src_set(&out[0], "cntfrq_el0", (double)f, 0, "CNTFRQ_EL0 register");
	nc__src_perf_page(&out[1]);
	return 2;
}

const struct nc__counter nc__counter_cntvct = {
	.name = "cntvct",
	.what = "Arm generic timer (CNTVCT_EL0)",
	.kind = NC__KIND_CALL,
	.read = vct_read,
	.read_ordered = vct_read_ordered,
	.bits = 64,
	.penalty_ns = 0,
	.stated = vct_stated,
};

/* Selected by select.c in place of the plain one where HWCAP2_ECV says so. */
const struct nc__counter nc__counter_cntvctss = {
	.name = "cntvct",
	.what = "Arm generic timer (CNTVCTSS_EL0, self-synchronised)",
	.kind = NC__KIND_CALL,
	.read = vct_read,
	.read_ordered = vctss_read_ordered,
	.bits = 64,
	.penalty_ns = 0,
	.stated = vct_stated,
};

int nc__arm64_has_ecv(void)
{
	return (getauxval(AT_HWCAP2) & HWCAP2_ECV) != 0;
}
#endif
