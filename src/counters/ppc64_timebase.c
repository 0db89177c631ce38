/* POWER: the time base register (mftb).  Fixed frequency, stated by the
 * kernel as "timebase" in /proc/cpuinfo (512 MHz on POWER8/9/10); 64 bits.
 * Reads are not ordered; isync before the read keeps it from being taken
 * early. */
#include "../internal.h"

#if defined(__powerpc64__)
#include <stdio.h>
#include <string.h>

static uint64_t tb_read(void *ctx)
{
	(void)ctx;
	uint64_t v;
	__asm__ __volatile__("mfspr %0, 268" : "=r"(v));
	return v;
}

static uint64_t tb_read_ordered(void *ctx)
{
	(void)ctx;
	uint64_t v;
	__asm__ __volatile__("isync\n\tmfspr %0, 268\n\tisync" : "=r"(v) : : "memory");
	return v;
}

static int tb_stated(struct nc_hz_source *out, int max)
{
	if (max < 2)
		return 0;
	FILE *f = fopen("/proc/cpuinfo", "r");
	unsigned long long hz = 0;
	if (f) {
		char line[256];
		while (fgets(line, sizeof(line), f))
			if (strncmp(line, "timebase", 8) == 0 && sscanf(strchr(line, ':') ? strchr(line, ':') + 1 : "", "%llu", &hz) == 1)
				break;
		fclose(f);
	}
	if (hz)
		nc__src_set(&out[0], "cpuinfo-timebase", (double)hz, 0, "/proc/cpuinfo timebase");
	else
		nc__src_set(&out[0], "cpuinfo-timebase", 0, 0, "no timebase line in /proc/cpuinfo");
	nc__src_perf_page(&out[1]);
	return 2;
}

const struct nc__counter nc__counter_timebase = {
	.name = "timebase",
	.what = "POWER time base (mftb)",
	.kind = NC__KIND_CALL,
	.read = tb_read,
	.read_ordered = tb_read_ordered,
	.bits = 64,
	.penalty_ns = 0,
	.stated = tb_stated,
};
#endif
