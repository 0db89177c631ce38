/* SPDX-License-Identifier: MIT */
/* The x86 time-stamp counter (x86-64 and i386).
 *
 * The inline fast path (nanoclock_impl.h) reads it directly; these
 * out-of-line readers serve selection and calibration.  The ordered end
 * read uses RDTSCP only where CPUID.80000001h:EDX[27] says so — some
 * hypervisors hide the bit yet let the instruction run, returning a
 * meaningless TSC_AUX, so the flag is tested, never the instruction.
 * Nothing here executes an instruction that might fault: CPUID says
 * whether there is a TSC, prctl(PR_GET_TSC) whether this thread may read
 * it (machine.c), so the TSC is probed without trapping signals. */
#include "counter.h"
#include "base/fmt.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)

NC_START static uint64_t tsc_read(void *ctx)
{
	(void)ctx;
	return nc_impl_raw(NC_IMPL_KIND_TSC);
}
NC_START static uint64_t tsc_read_ordered(void *ctx)
{
	(void)ctx;
	return nc_impl_fenced(NC_IMPL_KIND_TSC);
}

/* The TSC policy.  Usable when CPUID reports a TSC whose rate does not
 * change with power states (CPUID 80000007h:EDX[8], or the kernel's
 * constant_tsc + nonstop_tsc) and this thread may read it.  The kernel's
 * own distrust (tsc=unstable, TSC missing from the clocksources) is
 * reported, not obeyed: it reflects the kernel's needs (one clocksource
 * for every CPU, across suspend, with a watchdog); nanoclock runs its own
 * checks on the CPUs it is used on — monotonic and advancing reads, a
 * consistent calibration — and the cross-CPU check is the user's to run. */
NC_START static int tsc_available(const struct nc__machine *m, char *why, size_t whylen)
{
	const struct nc__cpuid *c = m->cpuid;
	if (!c->valid || !c->tsc) {
		nc__fmt(why, whylen, "CPUID does not report a TSC");
		return NC_ENOCOUNTER;
	}
	if (m->tsc_user_disabled) {
		nc__fmt(why, whylen, "RDTSC is disabled for this process (prctl PR_TSC_SIGSEGV)");
		return NC_ENOCOUNTER;
	}
	int steady = c->invariant || (strstr(m->kv.cpuinfo_tsc_flags, "constant_tsc") &&
				      strstr(m->kv.cpuinfo_tsc_flags, "nonstop_tsc"));
	if (!steady) {
		nc__fmt(why, whylen, "rate may change with power states (no invariant-TSC bit, "
				      "no constant_tsc+nonstop_tsc)");
		return NC_ENOCOUNTER;
	}
	return 0;
}

/* "cpu MHz" is the kernel's TSC rate where it knows it from hardware or
 * the hypervisor (tsc_known_freq) and the CPU has no APERF/MPERF to show a
 * live core clock instead; printed to 1 kHz. */
static void cpuinfo_mhz(struct nc_hz_source *s, const struct nc__machine *m)
{
	if (!(m->cpuinfo_mhz > 0))
		nc__stated_set(s, "cpuinfo-mhz", 0, 0, "no \"cpu MHz\" in /proc/cpuinfo");
	else if (!m->tsc_known_freq)
		nc__stated_set(s, "cpuinfo-mhz", 0, 0,
			    "\"cpu MHz\" is not the TSC rate (no tsc_known_freq flag)");
	else
		nc__stated_set(s, "cpuinfo-mhz", m->cpuinfo_mhz * 1e6, 500,
			    "/proc/cpuinfo cpu MHz with tsc_known_freq");
}

static void sysfs_khz(struct nc_hz_source *s, const struct nc__machine *m)
{
	if (m->sysfs_tsc_khz == 0)
		nc__stated_set(s, "sysfs-tsc_freq_khz", 0, 0, "no /sys/.../cpu0/tsc_freq_khz");
	else if (m->sysfs_tsc_khz < 0)
		nc__stated_set(s, "sysfs-tsc_freq_khz", 0, 0, "unreadable tsc_freq_khz");
	else
		nc__stated_set(s, "sysfs-tsc_freq_khz", (double)m->sysfs_tsc_khz * 1e3, 500,
			    "kernel tsc_freq_khz");
}

static void cpuid_15h(struct nc_hz_source *s, const struct nc__cpuid *c)
{
	const uint32_t *r = c->leaf15;
	if (c->max_leaf < 0x15) {
		nc__stated_set(s, "cpuid-15h", 0, 0, "CPUID leaf 15h not supported");
	} else if (r[0] == 0 || r[1] == 0) {
		nc__stated_set(s, "cpuid-15h", 0, 0, "TSC/crystal ratio not enumerated");
	} else if (r[2] == 0) {
		nc__stated_set(s, "cpuid-15h", 0, 0, "crystal frequency not enumerated");
	} else {
		/* ECX*EBX < 2^64 since both are 32-bit: exact in 64-bit integers */
		uint64_t num = (uint64_t)r[2] * r[1];
		double hz = (double)(num / r[0]) + (double)(num % r[0]) / r[0];
		nc__stated_set(s, "cpuid-15h", hz, 0, "crystal * ratio");
	}
}

static void cpuid_hv(struct nc_hz_source *s, const struct nc__cpuid *c)
{
	if (!c->hypervisor)
		nc__stated_set(s, "cpuid-40000010h", 0, 0, "no hypervisor");
	else if (c->hv_tsc_khz == 0)
		nc__stated_set(s, "cpuid-40000010h", 0, 0, "hypervisor states no TSC rate");
	else
		nc__stated_set(s, "cpuid-40000010h", (double)c->hv_tsc_khz * 1e3, 500,
			    "hypervisor TSC kHz");
}

/* Cheap sources only, the hardware's own first.  The kernel's perf-page
 * conversion is read later (stated.c). */
NC_START static int tsc_stated(const struct nc__machine *m, struct nc_hz_source *out, int max)
{
	if (max < 4 || !m->kernel_read)
		return 0; /* not read at the start: handed over later (nc__counter_stated_late) */
	cpuid_15h(&out[0], m->cpuid);
	cpuid_hv(&out[1], m->cpuid);
	cpuinfo_mhz(&out[2], m);
	sysfs_khz(&out[3], m);
	return 4;
}

const struct nc__counter nc__counter_tsc = {
	.name = "tsc",
	.what = "x86 time-stamp counter (RDTSC)",
	.kind = NC_IMPL_KIND_TSC,
	.read = tsc_read,
	.read_ordered = tsc_read_ordered,
	.bits = 64,
	.penalty_ns = 0,
	.stated = tsc_stated,
	.available = tsc_available,
};

NC_START const struct nc__counter *nc__hw_counter(const struct nc__machine *m)
{
	(void)m;
	return &nc__counter_tsc;
}

#endif
