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
#define NC_VERSION_MINOR 2
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

NC_API const char *nc_strerror(int err);
NC_API const char *nc_version(void); /* "0.2.0": the library actually linked */

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
 * Later refreshes keep refining the rate either way.  Defaults: 1 ppm,
 * 20 ms; the environment (NANOCLOCK_CALIB_PPM, NANOCLOCK_CALIB_MAX_MS)
 * overrides them.  Before the first use only: NC_EBUSY afterwards,
 * NC_ERANGE for target_ppm outside [0.001, 1000] or max_ms outside
 * [0.1, 10000]. */
NC_API int nc_set_calibration_target(double target_ppm, double max_ms);

/* ---- conversion parameters you hold ---------------------------------------
 * A duration of d ticks is d * ns_per_tick nanoseconds, with ns_per_tick held
 * as a 64.64 fixed-point number: ns_int + ns_frac / 2^64.  See src/conv.c for
 * how the fields are computed and for the proof of the 1 ns error bound. */
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
 * counter.  Reads go through the function pointer (nc_ticks becomes a call). */
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
