/* SPDX-License-Identifier: MIT */
/* RISC-V: the time CSR (rdtime), a platform timer of fixed frequency that
 * the device tree states as /cpus/timebase-frequency.  Linux lets user
 * space read it (the vDSO does; a platform that traps it to firmware only
 * makes it slow, and selection's cost measurement sees that).  rdcycle
 * counts core cycles and is privileged since Linux 6.6: not used.  A fence
 * before the read orders it after earlier accesses.  The inline fast path
 * (nanoclock_impl.h) reads it; these readers serve selection and
 * calibration. */
#include "counter.h"

#if defined(__riscv) && __riscv_xlen == 64
#include <stdio.h>

NC_START static uint64_t rt_read(void *ctx)
{
	(void)ctx;
	return nc_impl_raw(NC_IMPL_KIND_RDTIME);
}

NC_START static uint64_t rt_read_ordered(void *ctx)
{
	(void)ctx;
	return nc_impl_fenced(NC_IMPL_KIND_RDTIME);
}

/* The property is a big-endian 32- or 64-bit cell. */
NC_START static int rt_stated(const struct nc__machine *m, struct nc_hz_source *out, int max)
{
	(void)m;
	if (max < 1)
		return 0;
	FILE *f = fopen("/proc/device-tree/cpus/timebase-frequency", "rbe");
	unsigned char b[8];
	size_t n = 0;
	if (f) {
		n = fread(b, 1, sizeof(b), f);
		fclose(f);
	}
	uint64_t hz = 0;
	if (n == 4 || n == 8)
		for (size_t i = 0; i < n; i++)
			hz = (hz << 8) | b[i];
	if (hz)
		nc__stated_set(&out[0], "dt-timebase-frequency", (double)hz, 0, "device tree");
	else
		nc__stated_set(&out[0], "dt-timebase-frequency", 0, 0,
			    "no /proc/device-tree/cpus/timebase-frequency");
	return 1;
}

const struct nc__counter nc__counter_rdtime = {
	.name = "rdtime",
	.what = "RISC-V time CSR (rdtime)",
	.kind = NC_IMPL_KIND_RDTIME,
	.read = rt_read,
	.read_ordered = rt_read_ordered,
	.bits = 64,
	.penalty_ns = 0,
	.stated = rt_stated,
};

NC_START const struct nc__counter *nc__hw_counter(const struct nc__machine *m)
{
	(void)m;
	return &nc__counter_rdtime;
}
#endif
