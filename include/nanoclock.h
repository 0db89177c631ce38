/* SPDX-License-Identifier: MIT */
/*
 * nanoclock — nanosecond time at the cost of a counter read.
 *
 * Link with -lnanoclock (pkg-config: nanoclock).  Every function may be
 * called from any thread, including the very first call: the library
 * initialises itself once (nc_init() does it explicitly).  It never prints,
 * never exits and installs no signal handler for its built-in counters.
 *
 * The reads and conversions below are inline: they read shared memory and
 * never write it.  Their implementation is in nanoclock_impl.h.
 */
#ifndef NANOCLOCK_H
#define NANOCLOCK_H

#include <stddef.h>
#include <stdint.h>

/* The version: the one place it is written (the Makefile reads it here). */
#define NC_VERSION_MAJOR 0
#define NC_VERSION_MINOR 3
#define NC_VERSION_PATCH 0
#define NC_VERSION_NUMBER (NC_VERSION_MAJOR * 10000 + NC_VERSION_MINOR * 100 + NC_VERSION_PATCH)

#if defined(__GNUC__) || defined(__clang__)
#define NC_API __attribute__((visibility("default")))
#else
#error "nanoclock needs GCC or Clang (inline asm and __atomic builtins)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- error codes (negative; nc_strerror() names them) ------------------- */
#define NC_OK 0
#define NC_EINVAL (-1)      /* bad argument */
#define NC_ERANGE (-2)      /* value out of the supported range */
#define NC_ENOCOUNTER (-3)  /* forced counter unknown or unusable */
#define NC_ECALIB (-4)      /* calibration failed (counter or OS clock broken) */
#define NC_ESYS (-5)        /* an OS call failed */
#define NC_EBUSY (-6)       /* too late: the library is already initialised */
#define NC_EOVERRIDE (-7)   /* NANOCLOCK_HZ contradicts measurement: refused */
#define NC_ETIMEDOUT (-8)   /* the time given passed before the condition held */
#define NC_EUNKNOWN (-9)    /* no honest bound on UTC here now (nc_get_utc_status says why) */

NC_API const char *nc_strerror(int err);
NC_API const char *nc_version(void); /* "MAJOR.MINOR.PATCH" of the library actually linked */

/* ---- reading the clock (inline) -------------------------------------------
 * uint64_t nc_ticks(void)        raw counter, unordered: the cheapest read; the
 *                                CPU may take it before earlier instructions end
 * uint64_t nc_ticks_begin(void)  ordered: after every earlier instruction, before
 *                                any later one (start of a measured block)
 * uint64_t nc_ticks_end(void)    ordered: after the measured block, before later code
 * uint64_t nc_now_ns(void)       monotonic nanoseconds, origin and rate of
 *                                CLOCK_MONOTONIC_RAW; ordered across threads: a read
 *                                that happens-after another never returns less
 * uint64_t nc_ticks_to_ns(uint64_t ticks)  an interval (difference of two reads)
 *                                in ns with the current rate; error < 1 ns
 * int64_t  nc_unix_ns(void)      ns since 1970-01-01 UTC, as CLOCK_REALTIME says
 *                                now (see "Wall-clock time" below); ordered the
 *                                same way, never decreasing between steps of the
 *                                system clock
 */

/* ---- initialisation and information -------------------------------------- */
NC_API int nc_init(void);                 /* optional; 0 or negative error */
NC_API const char *nc_counter_name(void); /* e.g. "tsc", "clock_monotonic_raw" */
NC_API double nc_ticks_per_second(void);  /* current best estimate */
NC_API double nc_ticks_per_second_uncertainty_ppm(void);
NC_API const char *nc_ticks_per_second_source(void);
NC_API uint64_t nc_seconds_before_wrap(void); /* from the counter's current value */
NC_API uint64_t nc_ns_to_ticks(uint64_t ns);

/* How precisely the first calibration must know the rate before nc_init()
 * returns: it stops as soon as its stated uncertainty is at most
 * `target_ppm`, or after `max_ms` (then the uncertainty says what it got).
 * Not asked for (here or by NANOCLOCK_CALIB_PPM), the first calibration
 * takes 0.25 ms and states what that backs (nc_ticks_per_second_uncertainty_ppm
 * says how much), and the refreshes' long baselines bring the rate to 1 ppm
 * (within about 100 ms of reads of nc_now_ns / nc_unix_ns, or of the upkeep
 * thread); either way later refreshes keep refining it.  Defaults: 1 ppm,
 * 20 ms; the environment (NANOCLOCK_CALIB_PPM, NANOCLOCK_CALIB_MAX_MS)
 * overrides them.  Before the first use only: NC_EBUSY afterwards,
 * NC_ERANGE for target_ppm outside [0.001, 1000] or max_ms outside
 * [0.1, 10000]. */
NC_API int nc_set_calibration_target(double target_ppm, double max_ms);

/* ---- what the library decided, told to the application ----------------------
 * The counter chosen and why, frequency sources adopted or rejected, steps
 * of the system clock, suspends, counter jumps, cross-CPU verdicts.  By
 * default nothing is reported and nothing is printed, ever.  fn is called
 * with reports at `level` and more important, never with a library lock
 * held (it may call nanoclock), from whichever thread made the decision.
 * fn NULL turns reports off.  NANOCLOCK_LOG=stderr[:error|warning|info|debug]
 * prints them to standard error in any program, unless the program set
 * its own.  0, or NC_EINVAL for a bad level. */
#define NC_LOG_ERROR 0 /* a check of the debug build failed */
#define NC_LOG_WARN 1  /* something the user should know: a refused setting, a jump */
#define NC_LOG_INFO 2  /* decisions */
#define NC_LOG_DEBUG 3 /* every refresh */
typedef void (*nc_log_fn)(void *ctx, int level, const char *msg);
NC_API int nc_set_log(nc_log_fn fn, void *ctx, int level);

/* ---- wall-clock time -------------------------------------------------------
 * nc_unix_ns() reads the counter and applies a tie to CLOCK_REALTIME that
 * the library refreshes every second (nc_set_unix_refresh_ms; environment
 * NANOCLOCK_UNIX_REFRESH_MS), when a reader finds it stale or, if started,
 * from the upkeep thread.  At each refresh CLOCK_REALTIME is read between
 * two counter reads: its rate is followed (NTP slewing included), small
 * differences are slewed in at most 1000 ppm (so nc_unix_ns never
 * decreases between steps), and a difference larger than a refresh period
 * can slew (a settimeofday, an NTP step, a resume) is followed as a step,
 * as CLOCK_REALTIME itself does.  With the upkeep thread running, a set of
 * the system clock is seen as it happens and followed at once as a step
 * when it exceeds the tie's uncertainty (a few us). */

/* A stamp taken earlier with nc_ticks*() as Unix time, with the current
 * tie.  An old stamp carries the tie's rate error times its age, and a
 * step of the system clock since it was taken moves it with the step. */
NC_API int64_t nc_ticks_to_unix_ns(uint64_t ticks);

/* How far nc_unix_ns() may be from UTC: the kernel's view (adjtimex), the
 * tie to CLOCK_REALTIME, and the bound nc_utc_now gives (below). */
struct nc_unix_status {
	int synchronised;         /* 1: the kernel's clock is synchronised (NTP/PTP);
				     0: it says it is not; -1: cannot tell */
	int kernel_state;         /* adjtimex(): 0 OK, 1 leap insert pending, 2 leap
				     delete pending, 3 leap in progress, 4 leap done,
				     5 error (unsynchronised); -1 unavailable */
	int leap_pending;         /* +1: a second is inserted at the end of the UTC
				     day, -1: deleted, 0: none */
	int tai_offset_s;         /* TAI - UTC in seconds as the kernel knows it (0: unset) */
	double kernel_max_error_us;  /* the kernel's maximum error (adjtimex maxerror) */
	double kernel_est_error_us;  /* and its estimate (esterror) */
	double kernel_freq_ppm;   /* NTP's frequency correction of the system clock */
	double tie_halfwidth_ns;  /* half the bracket that tied the counter to CLOCK_REALTIME */
	double tie_age_s;         /* time since that tie */
	double tie_error_ns;      /* bound on |nc_unix_ns() - CLOCK_REALTIME| now */
	double utc_error_ns;      /* bound on |nc_unix_ns() - UTC| now: nc_utc_now's
				     half width (the source's bound, the tie, the drift
				     since); < 0: unknown */
	char why[128];            /* when unknown: why ("the system clock is not
				     synchronised", "systemd-timesyncd writes ...") */
	uint32_t steps;           /* system clock steps followed */
	uint32_t refreshes;       /* ties made */
};
/* Fills *st.  0, or NC_EINVAL (st NULL). */
NC_API int nc_get_unix_status(struct nc_unix_status *st);

/* The tie's refresh period: 1 ms .. 60 s (default 1 s).  0, NC_ERANGE. */
NC_API int nc_set_unix_refresh_ms(double ms);

/* Tie Unix time to the system clock again now, as the upkeep thread does
 * when the clock is set: a step of the system clock is followed as a step
 * at once.  For a program that sets the clock itself, or learns that it
 * was set, without the upkeep thread.  With nothing set (REALTIME's offset
 * from MONOTONIC unmoved; a slew is not a set) it moves nothing.  0. */
NC_API int nc_unix_retie(void);

/* An optional helper thread that keeps the ties fresh, so that readers
 * rarely refresh them, and follows a step of the system clock within
 * microseconds (Linux: a timerfd with TFD_TIMER_CANCEL_ON_SET wakes on any
 * clock set).  Idempotent; a fork()ed child restarts it at its first
 * refresh.  nc_upkeep_stop() joins it.  0, or NC_ESYS. */
NC_API int nc_upkeep_start(void);
NC_API int nc_upkeep_stop(void);

/* ---- a coarse clock at one load ----------------------------------------------
 * nc_recent_ns(): nc_now_ns() as of the upkeep thread's last tick, one load
 * (a function call, no counter read): for stamps that can take a tick's
 * staleness.  Once a coarse read asked, the upkeep thread (nc_upkeep_start)
 * ticks every NANOCLOCK_RECENT_US (10 .. 1e6, default 1000 us).  A value is
 * never newer than nc_now_ns() and never older than the period plus the
 * largest lateness of a tick, which nc_get_recent_status states (a busy
 * machine delays the thread); never behind a value the same thread was
 * handed.  Without the upkeep thread it is nc_now_ns() itself (ticking 0).
 * nc_recent_unix_ns(): nc_unix_ns() at the same tick (steps of the system
 * clock followed, as nc_unix_ns follows them).  The first coarse read asks
 * for the ticks (one store); the others write nothing shared. */
struct nc_recent_status {
	int32_t ticking;    /* 1: the values are the upkeep thread's ticks; 0: full reads */
	double period_ns;   /* the ticks' period */
	double late_max_ns; /* the largest lateness of a tick seen: a value is at most
			       period_ns + late_max_ns old (when the next tick comes) */
	double age_ns;      /* since the last tick */
	uint64_t ticks;     /* ticks so far */
};
NC_API uint64_t nc_recent_ns(void);
NC_API int64_t nc_recent_unix_ns(void);
NC_API int nc_get_recent_status(struct nc_recent_status *st);

/* ---- Unix time with bounds: an interval that holds UTC ----------------------
 * nc_utc_now(&u) reads the counter once and gives nc_unix_ns()'s value for
 * that read (u.unix_ns) and an interval [u.earliest_ns, u.latest_ns] that
 * contains true UTC whenever the machine's time source's own figures hold:
 * the source's bound on CLOCK_REALTIME's error, nanoclock's tie to
 * CLOCK_REALTIME, and both widened since they were taken at a stated
 * maximum drift.  Inline, wait-free, no system call, safe in a signal
 * handler after the first call (which chooses and asks the source: see
 * nc_utc_start).  The source is the best one the machine has (chrony's
 * command port, the kernel's adjtimex where its writer writes an honest
 * bound; NANOCLOCK_UTC_SOURCE chooses), asked again at each refresh of the
 * tie, never inside an inline read.  Where no honest bound exists the
 * status says so and the interval is the whole line (INT64_MIN, INT64_MAX):
 * "unknown" rather than a number nothing backs. */
#define NC_UTC_UNKNOWN 0      /* no honest bound: [INT64_MIN, INT64_MAX] */
#define NC_UTC_SYNCHRONISED 1 /* the source is synchronised; its figures are fresh */
#define NC_UTC_FREE_RUNNING 2 /* the source's last good figures (as_of_ns), widened
				 since at the stated drift: it stopped answering or lost
				 its own sources; unknown past the horizon */
#define NC_UTC_DISRUPTED 3    /* the source says the clock was disrupted (a VM moved):
				 no bound until it is valid again */
#define NC_UTC_SRC_NONE 0
#define NC_UTC_SRC_ADJTIMEX 1 /* the kernel's maxerror and offset (adjtimex) */
#define NC_UTC_SRC_CHRONY 2   /* chronyd's tracking report over its command port */
#define NC_UTC_SRC_CLOCKBOUND 3 /* AWS ClockBound's shared memory segment */
#define NC_UTC_SRC_VMCLOCK 4  /* a VM's VMClock page: UTC against the counter */
#define NC_UTC_SRC_PTP 5      /* linuxptp's ptp4l over its management socket */
struct nc_utc {
	int64_t earliest_ns;  /* UTC is at or after this (Unix ns) ... */
	int64_t latest_ns;    /* ... and at or before this */
	int64_t unix_ns;      /* nc_unix_ns() for the same counter read: inside */
	int64_t as_of_ns;     /* when the source's figures were last good (Unix ns;
				 0: never) */
	int32_t status;       /* NC_UTC_* */
	int32_t source;       /* NC_UTC_SRC_* */
};
/* inline: int nc_utc_now(struct nc_utc *u);   fills *u, returns u->status
 * inline: int nc_utc_order(const struct nc_utc *a, const struct nc_utc *b);
 *   two stamps, perhaps taken on different machines: -1 when a was certainly
 *   before b (a's latest < b's earliest), +1 when certainly after, 0 when
 *   their intervals overlap (concurrent) or either is unknown or disrupted. */

/* Choose the source and ask it now (else the first nc_utc_now does).  0,
 * or NC_EUNKNOWN when no honest bound is to be had (nc_get_utc_status says
 * why; reads say unknown, and the source is asked again at each refresh). */
NC_API int nc_utc_start(void);
/* Stop following the source: its socket or file descriptor is closed and
 * its figures forgotten; reads say unknown (the whole line) until
 * nc_utc_start chooses again.  For a program done with UTC, or one about
 * to close descriptors it does not own. */
NC_API void nc_utc_stop(void);
/* Commit-wait: returns 0 once UTC is certainly past unix_ns (earliest_ns >
 * unix_ns), sleeping meanwhile; NC_ETIMEDOUT after timeout_s seconds;
 * NC_EUNKNOWN at once (and whenever it becomes so) where the bound is
 * unknown or disrupted. */
NC_API int nc_utc_wait_past(int64_t unix_ns, double timeout_s);
NC_API const char *nc_utc_status_name(int status); /* "synchronised", ... */
NC_API const char *nc_utc_source_name(int source); /* "chrony", "adjtimex", "none" */

/* What the interval is made of, and why this source. */
struct nc_utc_status {
	int32_t status, source;
	int64_t as_of_ns;          /* the source's last good figures (Unix ns) */
	double age_s;              /* since they were taken */
	double source_bound_ns;    /* the source's bound on |CLOCK_REALTIME - UTC| then */
	double drift_ppm;          /* its growth since (the source's own figure, or
				      NANOCLOCK_UTC_DRIFT_PPM) */
	double tie_ns;             /* nanoclock's tie to CLOCK_REALTIME now (and a slew
				      of the system clock the line may not follow yet,
				      a step of it followed since the figures, and time
				      a tie not refreshed may have run) */
	double half_width_ns;      /* the interval's half width now (-1: unknown):
				      source_bound_ns + drift_ppm * age_s + tie_ns */
	double fresh_s, horizon_s; /* synchronised while the figures are this young;
				      unknown once they are this old */
	char source_arg[128];      /* chrony's host:port, ... */
	char why[256];             /* unknown or free-running: why; synchronised:
				      what the source's figures said */
	char chosen[384];          /* how the source was chosen: each one looked at
				      and why it was or was not used */
};
NC_API int nc_get_utc_status(struct nc_utc_status *st);

/* Publishes the bound on |CLOCK_REALTIME - UTC| (the source's bound and
 * its drift since, without nanoclock's tie) as an AWS ClockBound shared
 * memory segment, protocol version 2, at path: existing ClockBound clients
 * read it unchanged.  Updated in place (clients keep their mapping); made
 * where nothing is; never over anything but a ClockBound segment of this
 * user's (anything else is left alone: NC_ESYS, errno EEXIST, why says
 * what is there).  `nanoclock daemon --clockbound PATH` calls it every
 * second.  A segment this process publishes is never its own source.
 * 0, NC_EINVAL (not an absolute path, or the segment this process reads
 * as its source), NC_ESYS with why[]. */
NC_API int nc_utc_publish_clockbound(const char *path, char *why, size_t whylen);

/* Initialise when the program loads rather than at the first call: write
 * NC_INIT_AT_LOAD() once, at file scope, in one source file of the
 * program.  Off unless asked: a library that spends a millisecond in every
 * process that links it is a bad neighbour. */
#define NC_INIT_AT_LOAD()                                                                  \
	__attribute__((constructor)) static void nc_init_at_load_(void) { (void)nc_init(); }

/* ---- conversion parameters you hold ---------------------------------------
 * A duration of d ticks is d * ns_per_tick nanoseconds, with ns_per_tick held
 * as a 64.64 fixed-point number: ns_int + ns_frac / 2^64.  See
 * src/rate/conv.c for how the fields are computed and for the proof of the
 * 1 ns error bound. */
typedef struct nc_conv {
	uint64_t ns_int;  /* integer part of ns per tick */
	uint64_t ns_frac; /* fraction of ns per tick, in units of 2^-64 */
	uint64_t tk_int;  /* integer part of ticks per ns */
	uint64_t tk_frac; /* fraction of ticks per ns, in units of 2^-64 */
	uint64_t hz_q24;  /* the frequency the fields were made from, Hz * 2^24 */
} nc_conv_t;

/* Fill *c for a counter of `hz` ticks per second (1 kHz .. 100 GHz).
 * Returns 0, NC_EINVAL (c NULL, hz NaN) or NC_ERANGE. */
NC_API int nc_conv_init(nc_conv_t *c, double hz);
NC_API void nc_get_conv(nc_conv_t *out); /* snapshot of the current parameters */
/* inline: uint64_t nc_conv_ticks_to_ns(const nc_conv_t *c, uint64_t ticks);
 *         uint64_t nc_conv_ns_to_ticks(const nc_conv_t *c, uint64_t ns);
 * Pure: keep *c in a local variable and the compiler keeps it in registers. */

/* ---- a counter of your own ------------------------------------------------
 * A PTP hardware clock, a device clock, a mock.  Register it before the
 * library's first use (before nc_init() or any other nc_ call, e.g. at the
 * start of main): initialisation freezes the registration, because ticks
 * already handed out belong to the selected counter; a later call returns
 * NC_EBUSY.  It is then the forced choice: if it fails the checks (faults,
 * goes backwards, does not advance) nc_init() returns NC_ENOCOUNTER with
 * the reason in `nanoclock info`, and the library runs on its own best
 * counter.  Reads go through the function pointer (nc_ticks becomes a call).
 * The read function must not call nanoclock: the library probes it holding
 * its own lock, so such a call would wait for itself. */
struct nc_counter_spec {
	const char *name;            /* copied; at most 31 characters */
	uint64_t (*read)(void *ctx); /* callable from any thread */
	void *ctx;
	double hz;                   /* ticks per second, or 0: calibrate it */
	unsigned bits;               /* 1..64; narrower counters are extended to
					64 bits (read at least once per wrap period,
					or wraps are counted from CLOCK_MONOTONIC_RAW) */
};
NC_API int nc_set_counter(const struct nc_counter_spec *spec);

#ifdef __cplusplus
}
#endif

/* The inline implementation: part of the ABI (see that file). */
#include "nanoclock_impl.h"

#endif /* NANOCLOCK_H */
