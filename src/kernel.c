/* The kernel's view of the clocks, gathered for the report and for the TSC
 * policy.  Everything is read from /sys and /proc; nothing is required. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		buf[0] = 0;
		return -1;
	}
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	/* trailing blanks (available_clocksource ends with one) */
	size_t n = strlen(buf);
	while (n && buf[n - 1] == ' ')
		buf[--n] = 0;
	return 0;
}

static int has_word(const char *list, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = list; (p = strstr(p, w)) != NULL; p += n) {
		int start = p == list || p[-1] == ' ' || p[-1] == '\t';
		int end = p[n] == 0 || p[n] == ' ' || p[n] == '\t' || p[n] == '\n';
		if (start && end)
			return 1;
	}
	return 0;
}

void nc__kernel_view(struct nc_kernel_view *kv)
{
	memset(kv, 0, sizeof(*kv));
	read_line("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		  kv->clocksource, sizeof(kv->clocksource));
	read_line("/sys/devices/system/clocksource/clocksource0/available_clocksource",
		  kv->available_clocksources, sizeof(kv->available_clocksources));

	struct nc__cpuid c;
	nc__cpuid_read(&c);
	kv->cpuid_tsc = c.valid ? c.tsc : -1;
	kv->cpuid_rdtscp = c.valid ? c.rdtscp : -1;
	kv->cpuid_invariant_tsc = c.valid ? c.invariant : -1;
	kv->cpuid_hypervisor = c.valid ? c.hypervisor : -1;
	snprintf(kv->hypervisor, sizeof(kv->hypervisor), "%s", c.hv_sig);

	/* TSC flags the kernel derived; the first "flags" line is enough */
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (f) {
		char line[4096];
		while (fgets(line, sizeof(line), f)) {
			if (strncmp(line, "flags", 5) != 0)
				continue;
			static const char *const want[] = {"constant_tsc", "nonstop_tsc",
							   "tsc_reliable", "tsc_known_freq",
							   "tsc_adjust", "rdtscp"};
			char *p = strchr(line, ':');
			for (size_t i = 0; p && i < sizeof(want) / sizeof(want[0]); i++)
				if (has_word(p + 1, want[i])) {
					size_t l = strlen(kv->cpuinfo_tsc_flags);
					snprintf(kv->cpuinfo_tsc_flags + l,
						 sizeof(kv->cpuinfo_tsc_flags) - l, "%s%s",
						 l ? " " : "", want[i]);
				}
			break;
		}
		fclose(f);
	}

	kv->tsc_unstable = -1;
	if (kv->cpuid_tsc != 1)
		return;
	char cmd[2048];
	read_line("/proc/cmdline", cmd, sizeof(cmd));
	if (has_word(cmd, "tsc=unstable")) {
		kv->tsc_unstable = 1;
		snprintf(kv->tsc_unstable_why, sizeof(kv->tsc_unstable_why),
			 "boot parameter tsc=unstable");
	} else if (kv->available_clocksources[0] && !has_word(kv->available_clocksources, "tsc")) {
		kv->tsc_unstable = 1;
		snprintf(kv->tsc_unstable_why, sizeof(kv->tsc_unstable_why),
			 "tsc is not among the kernel's clocksources");
	} else if (kv->available_clocksources[0]) {
		kv->tsc_unstable = 0;
		snprintf(kv->tsc_unstable_why, sizeof(kv->tsc_unstable_why),
			 "tsc is a registered clocksource");
	}
}
