/* The x86 time-stamp counter (x86-64 and i386).
 *
 * The inline fast path in nanoclock.h reads it directly; these out-of-line
 * readers serve calibration and the candidate checks.  CPUID decides the
 * ordered variant: RDTSCP only where CPUID.80000001h:EDX[27] says so —
 * some hypervisors hide the bit yet let the instruction run, returning a
 * meaningless TSC_AUX, so the flag is tested, never the instruction. */
#include "../internal.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

int nc__cpuid_raw(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	__cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
	return 0;
}

void nc__cpuid_read(struct nc__cpuid *c)
{
	uint32_t r[4];
	memset(c, 0, sizeof(*c));
	/* i386 parts without CPUID exist in theory; __get_cpuid_max checks */
	if (__get_cpuid_max(0, NULL) == 0)
		return;
	c->valid = 1;
	nc__cpuid_raw(0, 0, r);
	c->max_leaf = r[0];
	nc__cpuid_raw(1, 0, r);
	c->tsc = (r[3] >> 4) & 1;
	c->hypervisor = (r[2] >> 31) & 1;
	nc__cpuid_raw(0x80000000u, 0, r);
	uint32_t max_ext = r[0];
	if (max_ext >= 0x80000001u) {
		nc__cpuid_raw(0x80000001u, 0, r);
		c->rdtscp = (r[3] >> 27) & 1;
	}
	if (max_ext >= 0x80000007u) {
		nc__cpuid_raw(0x80000007u, 0, r);
		c->invariant = (r[3] >> 8) & 1;
	}
	if (c->hypervisor) {
		nc__cpuid_raw(0x40000000u, 0, r);
		c->max_hv_leaf = r[0];
		memcpy(c->hv_sig, &r[1], 4);
		memcpy(c->hv_sig + 4, &r[2], 4);
		memcpy(c->hv_sig + 8, &r[3], 4);
		c->hv_sig[12] = 0;
	}
}

static uint64_t tsc_read(void *ctx)
{
	(void)ctx;
	return nc__rdtsc();
}
static uint64_t tsc_read_ordered(void *ctx)
{
	(void)ctx;
	return nc__rdtsc_fenced();
}

/* The TSC policy.  Usable when CPUID reports a TSC whose rate does not
 * change with power states (CPUID 80000007h:EDX[8], or the kernel's
 * constant_tsc + nonstop_tsc).  The kernel's own distrust (tsc=unstable,
 * TSC missing from the clocksources) is reported, not obeyed: it reflects
 * the kernel's needs (one clocksource for every CPU, across suspend, with
 * a watchdog); nanoclock runs its own checks on the CPUs it is used on —
 * monotonic and advancing reads, a consistent calibration — and the
 * cross-CPU check is the user's to run. */
static int tsc_available(const struct nc_kernel_view *kv, char *why, size_t whylen)
{
	struct nc__cpuid c;
	nc__cpuid_read(&c);
	if (!c.valid || !c.tsc) {
		snprintf(why, whylen, "CPUID does not report a TSC");
		return NC_ENOCOUNTER;
	}
	int steady = c.invariant || (strstr(kv->cpuinfo_tsc_flags, "constant_tsc") &&
				     strstr(kv->cpuinfo_tsc_flags, "nonstop_tsc"));
	if (!steady) {
		snprintf(why, whylen, "rate may change with power states (no invariant-TSC bit, "
				      "no constant_tsc+nonstop_tsc)");
		return NC_ENOCOUNTER;
	}
	return 0;
}

static void sysfs_khz(struct nc_hz_source *s)
{
	FILE *f = fopen("/sys/devices/system/cpu/cpu0/tsc_freq_khz", "r");
	unsigned long long khz = 0;
	if (!f) {
		nc__src_set(s, "sysfs-tsc_freq_khz", 0, 0, "no /sys/.../cpu0/tsc_freq_khz");
		return;
	}
	int ok = fscanf(f, "%llu", &khz) == 1 && khz > 0;
	fclose(f);
	if (!ok)
		nc__src_set(s, "sysfs-tsc_freq_khz", 0, 0, "unreadable tsc_freq_khz");
	else
		nc__src_set(s, "sysfs-tsc_freq_khz", (double)khz * 1e3, 500, "kernel tsc_freq_khz");
}

static void cpuid_15h(struct nc_hz_source *s, const struct nc__cpuid *c)
{
	uint32_t r[4];
	if (c->max_leaf < 0x15) {
		nc__src_set(s, "cpuid-15h", 0, 0, "CPUID leaf 15h not supported");
		return;
	}
	nc__cpuid_raw(0x15, 0, r);
	/* TSC = crystal * EBX / EAX; crystal Hz in ECX (0 = not enumerated).
	 * ECX*EBX < 2^64 since both are 32-bit: exact in 64-bit integers. */
	if (r[0] == 0 || r[1] == 0) {
		nc__src_set(s, "cpuid-15h", 0, 0, "TSC/crystal ratio not enumerated");
		return;
	}
	if (r[2] == 0) {
		nc__src_set(s, "cpuid-15h", 0, 0, "crystal frequency not enumerated");
		return;
	}
	uint64_t num = (uint64_t)r[2] * r[1];
	double hz = (double)(num / r[0]) + (double)(num % r[0]) / r[0];
	nc__src_set(s, "cpuid-15h", hz, 0, "crystal * ratio");
}

static void cpuid_hv(struct nc_hz_source *s, const struct nc__cpuid *c)
{
	uint32_t r[4];
	if (!c->hypervisor || c->max_hv_leaf < 0x40000010u) {
		nc__src_set(s, "cpuid-40000010h", 0, 0,
			    c->hypervisor ? "hypervisor has no timing leaf" : "no hypervisor");
		return;
	}
	nc__cpuid_raw(0x40000010u, 0, r);
	if (r[0] == 0) {
		nc__src_set(s, "cpuid-40000010h", 0, 0, "hypervisor timing leaf is zero");
		return;
	}
	nc__src_set(s, "cpuid-40000010h", (double)r[0] * 1e3, 500, "hypervisor TSC kHz");
}

/* In order of trust: the kernel's own conversion first. */
static int tsc_stated(struct nc_hz_source *out, int max)
{
	if (max < 4)
		return 0;
	struct nc__cpuid c;
	nc__cpuid_read(&c);
	nc__src_perf_page(&out[0]);
	sysfs_khz(&out[1]);
	cpuid_15h(&out[2], &c);
	cpuid_hv(&out[3], &c);
	return 4;
}

const struct nc__counter nc__counter_tsc = {
	.name = "tsc",
	.what = "x86 time-stamp counter (RDTSC)",
	.kind = NC__KIND_TSC,
	.read = tsc_read,
	.read_ordered = tsc_read_ordered,
	.bits = 64,
	.penalty_ns = 0,
	.stated = tsc_stated,
	.available = tsc_available,
};

#else /* not x86 */

int nc__cpuid_raw(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	(void)leaf;
	(void)sub;
	memset(r, 0, 4 * sizeof(r[0]));
	return NC_ENOCOUNTER;
}

void nc__cpuid_read(struct nc__cpuid *c) { memset(c, 0, sizeof(*c)); }

#endif
