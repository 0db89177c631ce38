/* SPDX-License-Identifier: MIT */
/* x86 CPUID, read once per process, in two parts: the only place the
 * library executes CPUID.  The TSC driver, the kernel view and the stated frequencies all
 * use this one record.  Elsewhere the record is all zeros (valid == 0). */
#include "counter.h"

#include <string.h>

/* Written in two steps under nc__lib_lock (a flag, not pthread_once, whose
 * wake after the routine is a system call even when nobody waits): what
 * the start needs at the first call, the rest when first asked; each part
 * read-only once written. */
static struct nc__cpuid id;
static int have_id NC_GUARDED_BY(nc__lib_lock); /* 1: the start's leaves, 2: all */

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static void leaf(uint32_t l, uint32_t sub, uint32_t r[4])
{
	__cpuid_count(l, sub, r[0], r[1], r[2], r[3]);
}

/* What choosing the counter needs: a TSC, and an invariant one.  Three
 * leaves: each CPUID traps to the hypervisor in a VM, and a cold start is
 * the sum of such costs. */
static void read_core(void)
{
	uint32_t r[4];
#if defined(__i386__)
	/* i386 parts without CPUID exist in theory; __get_cpuid_max checks
	 * (one more CPUID; every x86-64 CPU has it) */
	if (__get_cpuid_max(0, NULL) == 0)
		return;
#endif
	id.valid = 1;
	leaf(1, 0, r);
	id.signature = r[0];
	id.tsc = (r[3] >> 4) & 1;
	id.hypervisor = (r[2] >> 31) & 1;
	leaf(0x80000000u, 0, r);
	id.max_ext = r[0];
	if (id.max_ext >= 0x80000007u) {
		leaf(0x80000007u, 0, r);
		id.invariant = (r[3] >> 8) & 1;
	}
}

/* The rest, for the report, the stated rates and RDTSCP: read when first
 * asked after the start (nc__machine_complete). */
static void read_rest(void)
{
	uint32_t r[4];
	if (!id.valid)
		return;
	leaf(0, 0, r);
	id.max_leaf = r[0];
	memcpy(id.vendor, &r[1], 4);
	memcpy(id.vendor + 4, &r[3], 4);
	memcpy(id.vendor + 8, &r[2], 4);
	id.vendor[12] = 0;
	if (id.max_ext >= 0x80000001u) {
		leaf(0x80000001u, 0, r);
		id.rdtscp = (r[3] >> 27) & 1;
	}
	if (id.max_leaf >= 0x15) {
		/* TSC = crystal (ECX) * EBX / EAX */
		leaf(0x15, 0, r);
		id.leaf15[0] = r[0];
		id.leaf15[1] = r[1];
		id.leaf15[2] = r[2];
	}
	if (id.hypervisor) {
		leaf(0x40000000u, 0, r);
		id.max_hv_leaf = r[0];
		memcpy(id.hv_sig, &r[1], 4);
		memcpy(id.hv_sig + 4, &r[2], 4);
		memcpy(id.hv_sig + 8, &r[3], 4);
		id.hv_sig[12] = 0;
		/* the timing leaf (VMware's convention, also KVM's and others'):
		 * only where the hypervisor's range reaches it */
		if (id.max_hv_leaf >= 0x40000010u && id.max_hv_leaf < 0x40010000u) {
			leaf(0x40000010u, 0, r);
			id.hv_tsc_khz = r[0];
		}
	}
}
#else
static void read_core(void) {}
static void read_rest(void) {}
#endif

NC_START const struct nc__cpuid *nc__cpuid(void)
{
	NC_LOCK_HELD();
	/* the flag after the reading: a child forked (without handlers) while
	 * another thread read takes the lock over and reads again */
	if (have_id < 1) {
		read_core();
		have_id = 1;
	}
	return &id;
}

const struct nc__cpuid *nc__cpuid_full(void)
{
	NC_LOCK_HELD();
	if (have_id < 2) {
		nc__cpuid();
		read_rest();
		id.full = 1;
		have_id = 2;
	}
	return &id;
}
