/* SPDX-License-Identifier: MIT */
/* The counters (src/counter/): one file per counter, the machine facts
 * they need, the selection policy, and the counter in use.
 *
 *   registry.c  counters the application or the tests register
 *   machine.c, cpuid.c, stated.c  what the machine and the OS tell
 *   x86_tsc.c ... os_clock.c  one file per counter
 *   check.c, trap.c, extend.c  probing, fault trapping, narrow counters
 *   select.c    the choice among the candidates
 *   current.c   the counter in use (owner of its state)
 *
 * Its layer, and what a new counter must provide: docs/architecture.md. */
#ifndef NC_COUNTER_H
#define NC_COUNTER_H

#include "../base/compiler.h"
#include "../base/config.h"
#include "../base/lock.h"
#include "../base/refclock.h"
#include "nanoclock_info.h"

#include <stddef.h>
#include <stdint.h>

/* ---- cpuid.c: x86 CPUID, read once (zeros elsewhere) ---- */
struct nc__cpuid {
	int valid, tsc, invariant, hypervisor; /* the start's part (leaves 1, 80000007h) */
	int full;                              /* 1 once the rest below was read too */
	int rdtscp;
	uint32_t max_leaf, max_ext, max_hv_leaf;
	char hv_sig[13];
	uint32_t leaf15[3];  /* EAX (denominator), EBX (numerator), ECX (crystal Hz) */
	uint32_t hv_tsc_khz; /* leaf 40000010h EAX, 0 if absent */
	char vendor[13];     /* leaf 0: "GenuineIntel", "AuthenticAMD", ... */
	uint32_t signature;  /* leaf 1 EAX: family, model, stepping */
};
/* the start's part, read at the first call (nc__lib_lock held: the
 * machine's reading); nc__cpuid_full adds the rest when first asked (the
 * same record, completed in place) */
NC_HIDDEN const struct nc__cpuid *nc__cpuid(void) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN const struct nc__cpuid *nc__cpuid_full(void) NC_REQUIRES(nc__lib_lock);

/* ---- machine.c: what the machine and the OS tell ---- */
struct nc__machine {
	struct nc_kernel_view kv;     /* reported as is by nanoclock info */
	const struct nc__cpuid *cpuid;
	/* 1 once the kernel's files and the rest of CPUID were read (at most
	 * once, under nc__lib_lock: nc__machine_complete); until then the
	 * fields below and kv's say unknown: the start reads only CPUID's
	 * start part and PR_GET_TSC */
	int kernel_read;
	double cpuinfo_mhz;           /* /proc/cpuinfo "cpu MHz" of the first CPU, 0 if none */
	int tsc_known_freq;           /* the kernel took the TSC rate from hardware/hypervisor */
	int cpuinfo_rdtscp;           /* the kernel's flags list rdtscp: 1, 0, -1 if unread */
	int tsc_user_disabled;        /* prctl(PR_GET_TSC): RDTSC faults in this thread */
	/* /sys/devices/system/cpu/cpu0/tsc_freq_khz (x86): kHz, 0 if absent,
	 * -1 unreadable; a fact of the boot, so a shared record carries it */
	long long sysfs_tsc_khz;
	char unreadable[48];          /* "/proc and /sys not readable", ... ("" if both were) */
};
/* What the kernel's files say, read without the library's lock (no
 * shared state: the caller's buffer and struct) and applied under it. */
struct nc__machine_files {
	int sys_ok, proc_ok, have_cmd, cmd_tsc_unstable;
	char available_clocksources[160];
	char flags[128];
	double cpuinfo_mhz;
	int tsc_known_freq, cpuinfo_rdtscp;
	long long sysfs_tsc_khz;
};
/* the start's reading; full: the kernel's files too (its buffer is the
 * initialisation's) */
NC_HIDDEN void nc__machine_read(struct nc__machine *m, int full) NC_REQUIRES(nc__lib_lock);
/* buf: scratch for /proc/cpuinfo's first block (NC_CPUINFO_BUF: a flags
 * line of ~2.4 KB fits many times over) */
#define NC_CPUINFO_BUF 16384
NC_HIDDEN void nc__machine_files_read(struct nc__machine_files *f, char *buf, size_t len);
/* the rest of CPUID and the files into m, once (a no-op when kernel_read) */
NC_HIDDEN void nc__machine_complete(struct nc__machine *m, const struct nc__machine_files *f)
	NC_REQUIRES(nc__lib_lock);
/* the kernel's current clocksource, read now ("" if unreadable) */
NC_HIDDEN void nc__machine_clocksource(char *buf, size_t len);
/* ... the part that belongs to the process, not the boot (PR_GET_TSC) */
NC_HIDDEN void nc__machine_process(struct nc__machine *m);
/* The facts of the boot as a shared record carries them: no pointers
 * (cpuid NULL in m; the record is refused unless written by this very
 * version of the library, so the layout is this one). */
struct nc__machine_facts {
	struct nc__machine m;
	struct nc__cpuid cpuid;
};
/* "/proc/cpuinfo"; tests point it at a file of their own before the first call */
NC_HIDDEN extern const char *nc__cpuinfo_path;

/* ---- stated.c ---- */
NC_HIDDEN void nc__stated_set(struct nc_hz_source *s, const char *name, double hz,
			   double resolution_hz, const char *reason);
/* The kernel's counter-to-ns conversion in the perf_event mmap page.  Slow
 * (perf_event_open can take milliseconds): never on the first call. */
NC_HIDDEN void nc__stated_perf_page(struct nc_hz_source *s);

/* ---- the counters ---- */
struct nc__counter {
	const char *name;
	const char *what;              /* one-line description */
	uint64_t kind;                 /* NC_IMPL_KIND_*: read inline, or CALL */
	uint64_t (*read)(void *ctx);   /* unordered */
	uint64_t (*read_ordered)(void *ctx);
	void *ctx;
	unsigned bits;                 /* counter width; < 64 is extended (extend.c) */
	double penalty_ns;             /* selection penalty (select.c) */
	double fixed_hz;               /* > 0: exact rate by definition, no calibration */
	int trap;                      /* probe with faults trapped (nothing can tell
					  in advance whether a read faults) */
	/* frequencies the hardware/OS state for it, cheap ones only; NULL: none */
	int (*stated)(const struct nc__machine *m, struct nc_hz_source *out, int max);
	/* 0 if it may be used on this machine, else NC_ENOCOUNTER and why[];
	 * NULL: always */
	int (*available)(const struct nc__machine *m, char *why, size_t whylen);
};
#if defined(__x86_64__) || defined(__i386__)
NC_HIDDEN extern const struct nc__counter nc__counter_tsc;
#endif
#if defined(__aarch64__)
NC_HIDDEN extern const struct nc__counter nc__counter_cntvct;
NC_HIDDEN extern const struct nc__counter nc__counter_cntvctss;
#endif
#if defined(__powerpc64__)
NC_HIDDEN extern const struct nc__counter nc__counter_timebase;
#endif
#if defined(__riscv) && __riscv_xlen == 64
NC_HIDDEN extern const struct nc__counter nc__counter_rdtime;
#endif
NC_HIDDEN extern const struct nc__counter nc__counter_mono_raw;
NC_HIDDEN extern const struct nc__counter nc__counter_mono;
NC_HIDDEN extern const struct nc__counter nc__counter_gettimeofday;
/* This architecture's hardware counter for this machine, or NULL. */
NC_HIDDEN const struct nc__counter *nc__hw_counter(const struct nc__machine *m);

/* ---- registry.c: registrations.  Initialisation freezes them (after
 * which nc_set_counter and nc__test_add_candidate return NC_EBUSY) and
 * hands them to selection.  Guarded by the registry's own lock
 * (registry.c), which nothing else takes. ---- */
#define NC_MAX_REGISTERED 7
struct nc__registered {
	const struct nc__counter *app;  /* nc_set_counter's, or NULL */
	const struct nc__counter *test[NC_MAX_REGISTERED - 1];
	int ntest;
	double app_ppm, app_ms;         /* nc_set_calibration_target, 0 if not set */
};
NC_HIDDEN void nc__registry_freeze(struct nc__registered *out);
NC_HIDDEN int nc__test_add_candidate(const struct nc_counter_spec *spec);

/* ---- extend.c: counters narrower than 64 bits ---- */
struct nc__ext {
	const struct nc__counter *raw;
	uint64_t mask;
	uint64_t last_raw, ext;
	int64_t last_os;
	uint64_t first_ext; /* the first read: a rough rate before hz is known */
	int64_t first_os;
	int64_t first_hw, last_hw; /* half the OS-time bracket of those reads */
	double hz;         /* 0 until known: then wraps are also counted by time */
	int started;
	long backsteps;    /* raw values that went backwards (see extend.c) */
	long gaps;         /* gaps no rate could count in periods (see extend.c) */
	int reading;       /* a read holds nc__ext_mutex for it (a fault leaves it held) */
	/* the last (raw, extended) pair, latched for readers that find the
	 * extension busy (a signal handler interrupting a read) */
	uint64_t pub_seq, pub_raw[2], pub_ext[2];
	int64_t pub_os[2], pub_hw[2];
	struct nc__counter wrapped; /* reads the extended value */
};
/* Its lock, which guards every nc__ext (readers only try it), named for
 * the annotations; taken for fork too, after nc__lib_lock. */
NC_HIDDEN extern struct nc__futex_lock nc__ext_mutex;
NC_HIDDEN void nc__ext_lock(void) NC_ACQUIRE(nc__ext_mutex);
NC_HIDDEN void nc__ext_unlock(void) NC_RELEASE(nc__ext_mutex);
NC_HIDDEN void nc__ext_reset_in_child(void) NC_RELEASE(nc__ext_mutex);
NC_HIDDEN void nc__ext_init(struct nc__ext *e, const struct nc__counter *raw);
NC_HIDDEN void nc__ext_set_hz(struct nc__ext *e, double hz) NC_EXCLUDES(nc__ext_mutex);
/* after a trapped read of e faulted: releases the lock it left held */
NC_HIDDEN void nc__ext_after_fault(struct nc__ext *e);
/* The pure core: the next extended value for raw value `raw` read at OS
 * time os_ns +- hw_ns (caller serialises). */
NC_HIDDEN uint64_t nc__ext_step(struct nc__ext *e, uint64_t raw, int64_t os_ns, int64_t hw_ns);

/* ---- trap.c: run code that may fault ---- */
/* Runs fn(arg) with SIGILL, SIGSEGV, SIGBUS and SIGFPE trapped for this
 * thread.  Returns 0, or the signal number if fn faulted.  The process's
 * handlers and this thread's signal mask are restored exactly. */
NC_HIDDEN int nc__trap_run(void (*fn)(void *), void *arg);

/* ---- check.c ---- */
/* Read a counter n times: 0 if it never decreased and advanced at least
 * once; resolution = the step nine in ten nonzero steps reach (check.c),
 * cost in ns per read.  Else
 * NC_ENOCOUNTER (it went backwards) or NC_CHECK_STILL (it did not move),
 * with why[] filled. */
#define NC_CHECK_STILL 1
NC_HIDDEN int nc__counter_check(const struct nc__counter *c, int n, uint64_t *resolution,
				double *cost_ns, char *why, size_t whylen);

/* ---- select.c (nc__lib_lock held: the initialisation) ---- */
struct nc__selection {
	const struct nc__counter *use; /* selected (extended if narrow) */
	int index;                     /* in cands */
	struct nc__ext *ext;           /* its extension state if narrow, else NULL */
	int status;                    /* 0 or NC_ENOCOUNTER (forced one failed) */
	char forced[32];               /* the counter asked for ("" if none) */
	const char *forced_by;         /* "NANOCLOCK_COUNTER", "the application" or NULL */
	char error[192];               /* why the forced one was not used */
};
/* prefer: the counter a shared record names (NULL: none) */
NC_HIDDEN void nc__select(const struct nc__machine *m, const struct nc__registered *reg,
			  const char *env_counter, const char *prefer, struct nc_candidate *cands, int *n,
			  struct nc__selection *sel) NC_REQUIRES(nc__lib_lock);
/* The stated rates of candidate i as its evaluation read them (-1 if it
 * was not evaluated): a source is read once per process. */
NC_HIDDEN int nc__select_stated(int i, struct nc_hz_source *out, int max) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN int nc__select_stated_n(int i) NC_REQUIRES(nc__lib_lock);
/* After the selected one failed later (calibration): pick the next best. */
NC_HIDDEN void nc__select_next(struct nc_candidate *cands, int n, const char *why,
			       struct nc__selection *sel) NC_REQUIRES(nc__lib_lock);

/* ---- current.c: the counter in use.  Chosen at initialisation; changed
 * once at most afterwards, to CLOCK_MONOTONIC_RAW, if it stops.  Guarded
 * by nc__lib_lock; the pointer to the counter and its kind are also read
 * without it (acquire loads), and the counter read. ---- */
/* Initialisation: the machine facts (first), then the choice (env_counter: the
 * NANOCLOCK_COUNTER value, env_why: why it was refused, or ""). */
NC_HIDDEN void nc__counter_machine_read(int full) NC_REQUIRES(nc__lib_lock);
/* The rest of the machine's facts (machine.c), once, after the start: the
 * files read outside the lock, applied under it; the policy line and the
 * candidates' reasons follow (logged).  From any call that is not a read
 * (slow, and only once). */
NC_HIDDEN void nc__counter_complete(void) NC_EXCLUDES(nc__lib_lock);
/* The machine's stated rates for the counter in use, once, if the start
 * did not have them (the facts were not read yet): for the rate's
 * cross-checks.  0 otherwise. */
NC_HIDDEN int nc__counter_stated_late(struct nc_hz_source *out, int max)
	NC_REQUIRES(nc__lib_lock);
/* ... or the boot's facts from a shared record (with the process's own
 * part read again), and the facts in use for one. */
NC_HIDDEN void nc__counter_machine_from(const struct nc__machine_facts *f)
	NC_REQUIRES(nc__lib_lock);
NC_HIDDEN void nc__counter_machine_facts(struct nc__machine_facts *f) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN void nc__counter_choose(const struct nc__registered *reg, const char *env_counter,
				  const char *env_why, const char *prefer)
	NC_REQUIRES(nc__lib_lock);
/* The selected counter's stated rates (none for an OS clock). */
NC_HIDDEN int nc__counter_stated(struct nc_hz_source *out, int max) NC_REQUIRES(nc__lib_lock);
/* 0, or NC_ENOCOUNTER when a forced counter could not be used. */
NC_HIDDEN int nc__counter_status(void) NC_REQUIRES(nc__lib_lock);
/* The selected counter failed (calibration): the next best. */
NC_HIDDEN void nc__counter_next(const char *why) NC_REQUIRES(nc__lib_lock);
/* Initialisation, after calibration: how it is read, why it was chosen;
 * rate_hz for the extension of a narrow counter. */
NC_HIDDEN void nc__counter_settle(double rate_hz) NC_REQUIRES(nc__lib_lock);
/* These two from any context, without the lock: */
NC_HIDDEN const struct nc__counter *nc__counter(void);
NC_HIDDEN uint64_t nc__counter_kind(void);   /* NC_IMPL_KIND_* of the counter in use */
NC_HIDDEN int nc__counter_inline(void) NC_REQUIRES(nc__lib_lock); /* the fast path may read it inline */
NC_HIDDEN uint64_t nc__counter_resolution(void) NC_REQUIRES(nc__lib_lock);
/* The machine's facts: written by the initialisation, completed once
 * after it (nc__counter_complete); read under the lock. */
NC_HIDDEN const struct nc__machine *nc__counter_machine(void);
/* The counter in use, ordered (out of line). */
NC_HIDDEN uint64_t nc__counter_read(void);
/* A measurement's counter (struct nc__calib_io's read): ctx the counter
 * to read, ordered, or NULL for the one in use. */
NC_HIDDEN uint64_t nc__counter_io_read(void *ctx);
/* The counter stopped: CLOCK_MONOTONIC_RAW from now on (lock held). */
NC_HIDDEN void nc__counter_fall_back(void) NC_REQUIRES(nc__lib_lock);
/* For nc_get_info (lock held). */
struct nc_info;
NC_HIDDEN void nc__counter_info(struct nc_info *o) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN const char *nc__counter_policy(void) NC_REQUIRES(nc__lib_lock);

#endif
