/* SPDX-License-Identifier: MIT */
/*
 * nanoclock — do the CPUs' counters agree?  An experiment, not a guess.
 *
 * nc_sync_check() reads the counter on every CPU of the calling thread's
 * affinity mask in a known order and reports an upper bound on the shift
 * between any two CPUs' counters, each CPU's shift interval against a base
 * CPU, whether readings taken one after another (on the same or different
 * CPUs) were monotonic, whether the counters ran at the same pace and
 * advanced at all, and how much evidence there was.  See src/sync/.
 */
#ifndef NANOCLOCK_SYNC_H
#define NANOCLOCK_SYNC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NC_SYNC_COP 0    /* CAS-ordered probes: one pinned thread per CPU */
#define NC_SYNC_SWITCH 1 /* one thread hopping between CPUs */

#define NC_SYNC_CONSISTENT 0   /* all checks passed, enough evidence */
#define NC_SYNC_INCONSISTENT 1 /* evidence of disagreement: see evidence/bad_cpu */
#define NC_SYNC_INCONCLUSIVE 2 /* too little evidence (quality below threshold) */

#define NC_SYNC_MAX_CPUS 256

struct nc_sync_options {
	int method;             /* NC_SYNC_COP or NC_SYNC_SWITCH */
	unsigned probes;        /* cop: probes per CPU per round (0: 20000 for up to 2 CPUs,
				   40000/ncpus, at least 2000, above); switch: visits per CPU (0: 200) */
	unsigned rounds;        /* independent rounds; shift intervals are intersected */
	unsigned min_enclosed;  /* quality: probes of each CPU enclosed by base-CPU probes */
	double time_limit_ms;   /* probing stops at the limit; the analysis of what was
				   read follows it (7-28 ms measured after a 30 ms limit) */
	/* The counter to test, read in order; NULL: the library's counter.
	 * Called on the CPU being tested (tests use it to simulate counters). */
	uint64_t (*read)(void *ctx);
	void *ctx;
	double hz;              /* its rate, for the ns figures; 0: the library's */
};

struct nc_sync_cpu {
	int cpu;                /* CPU id */
	int64_t shift_lo;       /* counter(cpu) - counter(base) lies in [lo, hi] ticks */
	int64_t shift_hi;
	int bounded;            /* 0: too few enclosed probes for an interval */
	uint64_t probes;
	uint64_t enclosed;      /* probes with a base probe before and after */
	int advancing;          /* its counter moved during the check (1 also when it
				   could not be told: never two of its readings in a round) */
};

struct nc_sync_report {
	int verdict;            /* NC_SYNC_* */
	int method;
	int ncpus;
	int truncated;          /* the mask had more than NC_SYNC_MAX_CPUS CPUs */
	int base_cpu;
	struct nc_sync_cpu cpu[NC_SYNC_MAX_CPUS];
	int bounded;            /* every CPU got a shift interval; if 0, max_shift covers
				   only the CPUs that did (and the verdict is not consistent) */
	uint64_t max_shift_ticks; /* upper bound on the shift between any two CPUs */
	double max_shift_ns;
	int monotonic;          /* no reading smaller than the one before it */
	int same_pace;          /* shifts did not move between halves of the run */
	int advancing;          /* every CPU's counter moved */
	double quality;         /* min over CPUs of enclosed / min_enclosed, capped at 1 */
	uint64_t probes;        /* readings taken in all */
	uint64_t decreases;     /* readings smaller than their predecessor */
	unsigned rounds_done;
	int timed_out;
	double elapsed_ms;
	int bad_cpu;            /* a CPU named by the evidence, or -1 */
	char evidence[256];     /* why inconsistent / inconclusive ("" if consistent) */
	/* Reported beside the experiment, never replacing it: */
	int kernel_tsc_unstable; /* the kernel's verdict (-1 unknown) */
	int cpuid_invariant_tsc; /* CPUID's invariant-TSC bit (-1 unknown) */
};

/* Defaults: cop, automatic probe count, 3 rounds, 50 enclosed, 2000 ms. */
__attribute__((visibility("default"))) void nc_sync_default_options(struct nc_sync_options *o);

/* Runs the check.  o may be NULL (defaults).  Returns 0 with *r filled, or
 * NC_EINVAL (r NULL, bad options) or NC_ESYS (affinity or threads could not
 * be set up; *r says what, verdict inconclusive).  Never changes the
 * caller's affinity, never leaves a thread behind. */
__attribute__((visibility("default"))) int nc_sync_check(const struct nc_sync_options *o,
							 struct nc_sync_report *r);

__attribute__((visibility("default"))) const char *nc_sync_verdict_name(int verdict);

#ifdef __cplusplus
}
#endif
#endif
