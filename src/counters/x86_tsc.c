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

static uint64_t tsc_read(void) { return nc__rdtsc(); }
static uint64_t tsc_read_ordered(void) { return nc__rdtsc_fenced(); }

static int tsc_available(char *why, size_t whylen)
{
	struct nc__cpuid c;
	nc__cpuid_read(&c);
	if (!c.valid || !c.tsc) {
		snprintf(why, whylen, "CPUID does not report a TSC");
		return NC_ENOCOUNTER;
	}
	return 0;
}

const struct nc__counter nc__counter_tsc = {
	.name = "tsc",
	.kind = NC__KIND_TSC,
	.read = tsc_read,
	.read_ordered = tsc_read_ordered,
	.fixed_hz = 0,
	.bits = 64,
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
