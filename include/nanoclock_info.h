/* SPDX-License-Identifier: MIT */
/*
 * nanoclock — what the library found out about this machine (slow path;
 * used by `nanoclock info`, useful to log next to measurements).
 */
#ifndef NANOCLOCK_INFO_H
#define NANOCLOCK_INFO_H

#include <stdint.h>

#include "nanoclock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A frequency the hardware or the OS states for the counter. */
struct nc_hz_source {
	char name[24];    /* e.g. "cpuid-15h", "cpuinfo-mhz", "perf-mmap", "cntfrq_el0" */
	double hz;        /* 0 when the source is absent */
	double resolution_hz; /* rounding of the stated value (a kHz figure: 500) */
	int status;       /* NC_SRC_* */
	char reason[96];  /* why absent / refuted / agreeing / used */
};
#define NC_SRC_ABSENT 0
#define NC_SRC_ADOPTED 1  /* in use: a rate the application stated (nc_set_counter) */
#define NC_SRC_AGREES 2   /* consistent with measurement (a cross-check) */
#define NC_SRC_REJECTED 3 /* refuted by measurement */

/* The kernel's view of the clocks; -1 where it could not be told. */
struct nc_kernel_view {
	char clocksource[32];            /* current clocksource, read by nc_get_info */
	char available_clocksources[160];
	int tsc_unstable;                /* 1: the kernel distrusts the TSC */
	char tsc_unstable_why[96];
	/* x86 CPUID bits (-1 elsewhere) */
	int cpuid_tsc, cpuid_rdtscp, cpuid_invariant_tsc, cpuid_hypervisor;
	char hypervisor[13];
	/* TSC flags the kernel derived (/proc/cpuinfo), space separated */
	char cpuinfo_tsc_flags[128];
};

#define NC_MAX_HZ_SOURCES 6

/* One counter the library considered (`nanoclock info` prints the table). */
struct nc_candidate {
	char name[32];
	char what[48];
	int status;                 /* NC_CAND_* */
	char reason[160];
	uint64_t resolution_ticks;  /* step 9 in 10 back-to-back steps reach */
	double resolution_ns;
	double cost_ns;             /* per read */
	double hz;                  /* stated, exact or roughly measured */
	char hz_source[24];
	double penalty_ns;
	double score;               /* resolution_ns + cost_ns + penalty_ns: lowest wins */
};
#define NC_CAND_REJECTED 0
#define NC_CAND_USABLE 1
#define NC_CAND_SELECTED 2
#define NC_CAND_SKIPPED 3  /* not measured: a shared record's counter was taken */
#define NC_MAX_CANDIDATES 12

/* What the clock saw happen since it started (each refresh compares the
 * counter with CLOCK_MONOTONIC_RAW, and CLOCK_BOOTTIME with CLOCK_MONOTONIC). */
struct nc_events {
	uint32_t suspends;        /* CLOCK_BOOTTIME moved while CLOCK_MONOTONIC did not */
	double suspended_s;       /* their total length */
	uint32_t counter_jumps;   /* the counter moved unlike CLOCK_MONOTONIC_RAW between
				     two refreshes (a VM paused or migrated, a counter reset):
				     re-tied, rate re-measured */
	uint32_t rate_changes;    /* ... and its rate had changed beyond its uncertainty */
	uint32_t counter_stops;   /* the counter stopped: nc_now_ns follows
				     CLOCK_MONOTONIC_RAW since (nc_ticks does not) */
};

struct nc_info {
	int init_status;          /* what nc_init() returns */
	const char *counter;
	double hz;                /* in use for conversions */
	double hz_uncertainty_ppm;
	const char *hz_source;    /* "measured", "env NANOCLOCK_HZ", a source name, "os" */
	double hz_measured;       /* our own latest measurement (0 if none) */
	double hz_measured_ppm;
	double hz_measured_worst_ppm; /* worst case from bracket widths alone */
	double calib_window_ms;   /* reference span of the latest measurement */
	uint32_t refreshes;       /* rate refreshes done so far */
	uint64_t resolution_ticks;
	double resolution_ns;
	uint64_t seconds_before_wrap;
	double init_ms;           /* time nc_init() took */
	char hz_env[96];          /* NANOCLOCK_HZ as found ("" if unset) */
	char hz_env_status[160];  /* used / refused / ignored, and why */
	int n_hz_sources;
	struct nc_hz_source hz_sources[NC_MAX_HZ_SOURCES];
	char policy[384];         /* why this counter is trusted */
	char counter_forced[32];  /* NANOCLOCK_COUNTER or the installed counter ("" if none) */
	char counter_error[192];  /* why the forced counter was not used ("" if it was) */
	int n_candidates;
	struct nc_candidate candidates[NC_MAX_CANDIDATES];
	struct nc_kernel_view kernel;
	struct nc_events events;
	struct nc_unix_status unix_status; /* as nc_get_unix_status() */
	double unix_refresh_ms;   /* the tie's refresh period */
	int upkeep_running;       /* the upkeep thread runs in this process */
	char upkeep_note[128];    /* its degraded mode, or why it could not start ("" when
				     none): e.g. no timerfd (seccomp, no descriptors left), so
				     a set of the system clock is seen within a period, not at once */
	char env_ignored[160];    /* NANOCLOCK_* variables set but ignored: the program runs
				     with raised privileges (setuid, setgid, capabilities) */
	double calib_target_ppm;  /* the first calibration's goal ... */
	double calib_max_ms;      /* ... and its cap */
	char calib_status[128];   /* a refused NANOCLOCK_CALIB_*, NANOCLOCK_UNIX_REFRESH_MS,
				     NANOCLOCK_HZ_FORCE or NANOCLOCK_UTC_* setting ("" if none) */
	int calib_early;          /* 1: no target was asked for: the first calibration stated
				     early and the refreshes reach calib_target_ppm */
};

/* Fill *out (initialising the library first).  Returns nc_init()'s result. */
__attribute__((visibility("default"))) int nc_get_info(struct nc_info *out);

/* One calibration of the counter in use against CLOCK_MONOTONIC_RAW over a
 * fixed window of reference time, measured and stated as the first
 * calibration measures and states it; nothing the library uses changes.
 * For studying how the statement shrinks with the window on a machine
 * (`nanoclock bench --plot`).  The call takes about window_ms (more where
 * the process is preempted).  Returns 0, NC_EINVAL (out NULL, or
 * window_ms not in 0.01..10000), or NC_ECALIB (the counter did not
 * advance with the reference). */
struct nc_rate_measurement {
	double hz;                /* ticks per second */
	double uncertainty_ppm;   /* stated, as for the first calibration */
	double worst_ppm;         /* from the bracket widths alone */
	double sigma_ns;          /* scatter of the accepted brackets about the fit */
	double window_ms;         /* reference time the fit spans */
	unsigned brackets_used, brackets_total;
};
__attribute__((visibility("default"))) int nc_measure_rate(double window_ms,
							     struct nc_rate_measurement *out);

#ifdef __cplusplus
}
#endif
#endif
