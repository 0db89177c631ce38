/* SPDX-License-Identifier: MIT */
/* POWER: the time base register (mftb).  Fixed frequency, stated by the
 * kernel as "timebase" in /proc/cpuinfo (512 MHz on POWER8/9/10); 64 bits;
 * always readable from user space on Linux (the vDSO reads it).  Reads are
 * not ordered: isync before the read keeps it from being taken early.  The
 * inline fast path (nanoclock_impl.h) reads it; these readers serve
 * selection and calibration. */
#include "counter.h"

#if defined(__powerpc64__)
#include <stdio.h>
#include <string.h>

NC_START static uint64_t tb_read(void *ctx)
{
	(void)ctx;
	return nc_impl_raw(NC_IMPL_KIND_TIMEBASE);
}

NC_START static uint64_t tb_read_ordered(void *ctx)
{
	(void)ctx;
	return nc_impl_fenced(NC_IMPL_KIND_TIMEBASE);
}

NC_START static int tb_stated(const struct nc__machine *m, struct nc_hz_source *out, int max)
{
	(void)m;
	if (max < 1)
		return 0;
	FILE *f = fopen("/proc/cpuinfo", "re");
	unsigned long long hz = 0;
	if (f) {
		char line[256];
		while (fgets(line, sizeof(line), f)) {
			const char *colon = strchr(line, ':');
			if (strncmp(line, "timebase", 8) == 0 && colon &&
			    sscanf(colon + 1, "%llu", &hz) == 1)
				break;
		}
		fclose(f);
	}
	if (hz)
		nc__stated_set(&out[0], "cpuinfo-timebase", (double)hz, 0, "/proc/cpuinfo timebase");
	else
		nc__stated_set(&out[0], "cpuinfo-timebase", 0, 0, "no timebase line in /proc/cpuinfo");
	return 1;
}

const struct nc__counter nc__counter_timebase = {
	.name = "timebase",
	.what = "POWER time base (mftb)",
	.kind = NC_IMPL_KIND_TIMEBASE,
	.read = tb_read,
	.read_ordered = tb_read_ordered,
	.bits = 64,
	.penalty_ns = 0,
	.stated = tb_stated,
};

NC_START const struct nc__counter *nc__hw_counter(const struct nc__machine *m)
{
	(void)m;
	return &nc__counter_timebase;
}
#endif
