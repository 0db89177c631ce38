/* Frequencies stated by the hardware or the OS, and the rule for trusting
 * them.  None is taken on faith: each must agree with our own measurement
 * against CLOCK_MONOTONIC_RAW (see nc__adopt_stated). */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__linux__)
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#endif

static void src_set(struct nc_hz_source *s, const char *name, double hz, const char *reason)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->hz = hz;
	s->status = NC_SRC_ABSENT;
	snprintf(s->reason, sizeof(s->reason), "%s", reason);
}

/* The kernel's own TSC-to-ns conversion, published to user space in the
 * perf_event mmap page when cap_user_time is set: ns = cyc*mult >> shift. */
static void perf_page(struct nc_hz_source *s)
{
#if defined(__linux__) && defined(__NR_perf_event_open)
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.disabled = 1;
	int fd = (int)syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0) {
		src_set(s, "perf-mmap", 0, "perf_event_open refused");
		return;
	}
	long pg = sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		src_set(s, "perf-mmap", 0, "mmap of the perf page failed");
		return;
	}
	volatile struct perf_event_mmap_page *pc = m;
	uint32_t seq, mult = 0;
	uint16_t shift = 0;
	int cap = 0;
	for (int tries = 0; tries < 1000; tries++) {
		seq = pc->lock;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		cap = pc->cap_user_time;
		mult = pc->time_mult;
		shift = pc->time_shift;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (pc->lock == seq)
			break;
	}
	munmap(m, (size_t)pg);
	close(fd);
	if (!cap || mult == 0) {
		src_set(s, "perf-mmap", 0, "kernel did not set cap_user_time");
		return;
	}
	src_set(s, "perf-mmap", ldexp(1e9, shift) / mult, "kernel time_mult/time_shift");
	s->resolution_hz = s->hz * 0.5 / mult;
#else
	src_set(s, "perf-mmap", 0, "not Linux");
#endif
}

static void sysfs_khz(struct nc_hz_source *s)
{
	FILE *f = fopen("/sys/devices/system/cpu/cpu0/tsc_freq_khz", "r");
	unsigned long long khz = 0;
	if (!f) {
		src_set(s, "sysfs-tsc_freq_khz", 0, "no /sys/.../cpu0/tsc_freq_khz");
		return;
	}
	int ok = fscanf(f, "%llu", &khz) == 1 && khz > 0;
	fclose(f);
	if (!ok)
		src_set(s, "sysfs-tsc_freq_khz", 0, "unreadable tsc_freq_khz");
	else
	{
		src_set(s, "sysfs-tsc_freq_khz", (double)khz * 1e3, "kernel tsc_freq_khz");
		s->resolution_hz = 500;
	}
}

static void cpuid_15h(struct nc_hz_source *s, const struct nc__cpuid *c)
{
	uint32_t r[4];
	if (c->max_leaf < 0x15) {
		src_set(s, "cpuid-15h", 0, "CPUID leaf 15h not supported");
		return;
	}
	nc__cpuid_raw(0x15, 0, r);
	/* TSC = crystal * EBX / EAX; crystal Hz in ECX (0 = not enumerated).
	 * ECX*EBX < 2^64 since both are 32-bit: exact in 64-bit integers. */
	if (r[0] == 0 || r[1] == 0) {
		src_set(s, "cpuid-15h", 0, "TSC/crystal ratio not enumerated");
		return;
	}
	if (r[2] == 0) {
		src_set(s, "cpuid-15h", 0, "crystal frequency not enumerated");
		return;
	}
	uint64_t num = (uint64_t)r[2] * r[1];
	double hz = (double)(num / r[0]) + (double)(num % r[0]) / r[0];
	src_set(s, "cpuid-15h", hz, "crystal * ratio");
}

static void cpuid_hv(struct nc_hz_source *s, const struct nc__cpuid *c)
{
	uint32_t r[4];
	if (!c->hypervisor || c->max_hv_leaf < 0x40000010u) {
		src_set(s, "cpuid-40000010h", 0, c->hypervisor ? "hypervisor has no timing leaf"
							       : "no hypervisor");
		return;
	}
	nc__cpuid_raw(0x40000010u, 0, r);
	if (r[0] == 0) {
		src_set(s, "cpuid-40000010h", 0, "hypervisor timing leaf is zero");
		return;
	}
	src_set(s, "cpuid-40000010h", (double)r[0] * 1e3, "hypervisor TSC kHz");
	s->resolution_hz = 500;
}

int nc__stated_sources(const char *counter, struct nc_hz_source *out, int max)
{
	int n = 0;
	if (strcmp(counter, "tsc") != 0 || max < 4)
		return 0;
	struct nc__cpuid c;
	nc__cpuid_read(&c);
	perf_page(&out[n++]);
	sysfs_khz(&out[n++]);
	cpuid_15h(&out[n++], &c);
	cpuid_hv(&out[n++], &c);
	return n;
}

/* Adoption rule: a stated value is adopted when it lies within the
 * measurement's stated uncertainty (4 sigma) plus its own rounding (a kHz
 * value is +-500 Hz), so a wrong table, a guest told the wrong rate, or a
 * nominal frequency that the counter does not keep is rejected with the
 * discrepancy in ppm as the reason.  Sources are tried in the order given
 * (the kernel's own conversion first); the first that agrees is adopted,
 * later ones that agree are marked so. */
int nc__adopt_stated(double measured_hz, double measured_ppm, struct nc_hz_source *src, int n)
{
	int adopted = -1;
	for (int i = 0; i < n; i++) {
		if (!(src[i].hz > 0))
			continue;
		double quantum_ppm = src[i].resolution_hz / src[i].hz * 1e6;
		double diff_ppm = (src[i].hz - measured_hz) / measured_hz * 1e6;
		double tol = measured_ppm + quantum_ppm;
		if (!(fabs(diff_ppm) <= tol)) {
			src[i].status = NC_SRC_REJECTED;
			snprintf(src[i].reason, sizeof(src[i].reason),
				 "disagrees with measurement by %+.2f ppm (tolerance %.2f)", diff_ppm,
				 tol);
		} else if (adopted < 0) {
			adopted = i;
			src[i].status = NC_SRC_ADOPTED;
			snprintf(src[i].reason, sizeof(src[i].reason),
				 "adopted: agrees with measurement (%+.2f ppm)", diff_ppm);
		} else {
			src[i].status = NC_SRC_AGREES;
			snprintf(src[i].reason, sizeof(src[i].reason),
				 "agrees with measurement (%+.2f ppm)", diff_ppm);
		}
	}
	return adopted;
}
