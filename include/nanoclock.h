/*
 * nanoclock — nanosecond wall-clock time at the cost of a counter read.
 *
 * Link with -lnanoclock (pkg-config: nanoclock). Every function is safe to
 * call from any thread, including the very first call: the library
 * initialises itself once (nc_init() does it explicitly).
 *
 * Fast path: nc_ticks*, nc_now_ns, nc_ticks_to_ns and nc_conv_* are inline
 * and only read shared memory.  The parameters they read live in one
 * 128-byte block guarded by a sequence counter (a seqlock): the rare writer
 * (initialisation and the periodic rate refresh) bumps the counter to an odd
 * value, rewrites the block and bumps it again; a reader that sees an odd or
 * changed counter leaves the fast path for an out-of-line function.
 */
#ifndef NANOCLOCK_H
#define NANOCLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NC_VERSION_MAJOR 0
#define NC_VERSION_MINOR 1
#define NC_VERSION_PATCH 0

#if defined(__GNUC__) || defined(__clang__)
#define NC__LIKELY(x) __builtin_expect(!!(x), 1)
#define NC__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define NC_API __attribute__((visibility("default")))
#else
#error "nanoclock needs GCC or Clang (inline asm and __atomic builtins)"
#endif

/* ---- error codes (negative; nc_strerror() names them) ------------------- */
#define NC_OK 0
#define NC_EINVAL (-1)      /* bad argument */
#define NC_ERANGE (-2)      /* value out of the supported range */
#define NC_ENOCOUNTER (-3)  /* forced counter unknown or unusable */
#define NC_ECALIB (-4)      /* calibration failed (counter or OS clock broken) */
#define NC_ESYS (-5)        /* an OS call failed */
#define NC_EBUSY (-6)       /* too late: the library is already initialised */

/* ---- conversion parameters ------------------------------------------------
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

/* ---- a counter of your own ------------------------------------------------
 * A PTP hardware clock, a device clock, a mock.  Install it before the
 * library's first use (before nc_init() or any other nc_ call, e.g. at the
 * start of main): once initialised, ticks already handed out belong to the
 * selected counter, so a later install returns NC_EBUSY.  It is then the
 * forced choice: if it fails the checks (faults, goes backwards, does not
 * advance) nc_init() returns NC_ENOCOUNTER with the reason in
 * `nanoclock info`, and the library runs on its own best counter.
 * Reads go through the function pointer (nc_ticks becomes a call). */
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

/* ---- initialisation and information -------------------------------------- */
NC_API int nc_init(void);                 /* optional; 0 or negative error */
NC_API const char *nc_strerror(int err);
NC_API const char *nc_counter_name(void); /* e.g. "tsc", "clock_monotonic_raw" */
NC_API double nc_ticks_per_second(void);  /* current best estimate */
NC_API double nc_ticks_per_second_uncertainty_ppm(void);
NC_API const char *nc_ticks_per_second_source(void);
NC_API uint64_t nc_seconds_before_wrap(void); /* from the counter's current value */
NC_API uint64_t nc_ns_to_ticks(uint64_t ns);
NC_API void nc_get_conv(nc_conv_t *out); /* snapshot of the current parameters */

/* ---- inline internals (not API; names kept in the nc_ namespace) -------- */

/* Out-of-line paths taken at first use, while the block is being rewritten,
 * when a rate refresh is due, or when the counter is not read inline. */
NC_API uint64_t nc__ticks_slow(int ordered);
NC_API uint64_t nc__now_slow(void);
NC_API uint64_t nc__ticks_to_ns_slow(uint64_t ticks);

/* How the selected counter is read (nc__g.kind). */
#define NC__KIND_NONE 0      /* not initialised yet */
#define NC__KIND_TSC 1       /* x86 RDTSC, ordered reads use LFENCE */
#define NC__KIND_TSCP 2      /* x86 RDTSC, CPUID advertises RDTSCP */
#define NC__KIND_CALL 3      /* read through a function (OS clock fallback) */

struct nc__state {
	/* cache line 1: everything nc_ticks* and nc_now_ns read */
	uint64_t seq;        /* odd: not ready / being rewritten */
	uint64_t kind;       /* NC__KIND_*; set once before seq first turns even */
	uint64_t base_ticks; /* nc_now_ns epoch: start tick ... */
	uint64_t span;       /* ... refresh due at base_ticks + span */
	uint64_t base_ns;    /* value of nc_now_ns at base_ticks */
	uint64_t now_int;    /* slewed ns per tick for nc_now_ns (64.64) */
	uint64_t now_frac;
	uint64_t pad0;
	/* cache line 2: interval conversion (best unslewed estimate) */
	uint64_t conv_int;
	uint64_t conv_frac;
	uint64_t pad1[6];
} __attribute__((aligned(64)));

NC_API extern struct nc__state nc__g;

/* Seqlock reads: relaxed loads, then one acquire fence before the sequence
 * is checked again.  ThreadSanitizer does not model fences, so under it
 * every load is an acquire instead (the same guarantee, said its way). */
#if defined(__SANITIZE_THREAD__)
#define NC__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NC__TSAN 1
#endif
#endif
#ifdef NC__TSAN
#define NC__LD_ORDER __ATOMIC_ACQUIRE
#define NC__RFENCE() ((void)0)
#else
#define NC__LD_ORDER __ATOMIC_RELAXED
#define NC__RFENCE() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#endif
#define NC__LD(field) __atomic_load_n(&nc__g.field, NC__LD_ORDER)

#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 nc__u128;
#endif

/* high 64 bits of a 64x64 product; the low 64 in *lo */
static inline uint64_t nc__mulhi(uint64_t a, uint64_t b, uint64_t *lo)
{
#if defined(__SIZEOF_INT128__)
	nc__u128 p = (nc__u128)a * b;
	*lo = (uint64_t)p;
	return (uint64_t)(p >> 64);
#else
	/* 32-bit targets: four 32x32 partial products */
	uint64_t al = (uint32_t)a, ah = a >> 32, bl = (uint32_t)b, bh = b >> 32;
	uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
	uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
	*lo = (mid << 32) | (uint32_t)ll;
	return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
#endif
}

/* round(d * f / 2^64): adding bit 63 of the low word is adding 2^63
 * before taking the high word. */
static inline uint64_t nc__frac_round(uint64_t d, uint64_t f)
{
#if defined(__SIZEOF_INT128__)
	nc__u128 p = (nc__u128)d * f;
	return (uint64_t)(p >> 64) + ((uint64_t)p >> 63);
#else
	uint64_t lo, hi = nc__mulhi(d, f, &lo);
	return hi + (lo >> 63);
#endif
}

static inline uint64_t nc__frac_floor(uint64_t d, uint64_t f)
{
#if defined(__SIZEOF_INT128__)
	return (uint64_t)(((nc__u128)d * f) >> 64);
#else
	uint64_t lo;
	return nc__mulhi(d, f, &lo);
#endif
}

/* round(d * (i + f/2^64)).  Most counters tick faster than 1 GHz (i == 0):
 * a predictable branch that compilers hoist out of loops saves a multiply. */
static inline uint64_t nc__scale(uint64_t d, uint64_t i, uint64_t f)
{
	uint64_t r = nc__frac_round(d, f);
	return i ? d * i + r : r;
}

/* floor(d * (i + f/2^64)): one add shorter than nc__scale, for nc_now_ns,
 * whose values need monotonicity, not the 1 ns interval bound. */
static inline uint64_t nc__scale_floor(uint64_t d, uint64_t i, uint64_t f)
{
	return d * i + nc__frac_floor(d, f);
}

#if defined(__x86_64__) || defined(__i386__)
#define NC__HAVE_TSC 1
static inline uint64_t nc__rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
/* LFENCE first: the read waits for every earlier instruction (loads
 * included) to complete, so it cannot be taken before an earlier acquire. */
static inline uint64_t nc__rdtsc_after(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}
/* ... and LFENCE after: later instructions wait for the read. */
static inline uint64_t nc__rdtsc_fenced(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t nc__rdtscp_fenced(void)
{
	uint32_t lo, hi, aux;
	__asm__ __volatile__("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
	(void)aux;
	return ((uint64_t)hi << 32) | lo;
}
#else
#define NC__HAVE_TSC 0
#endif

/* ---- the fast path ------------------------------------------------------- */

/* Raw counter, unordered: the CPU may execute it before earlier
 * instructions finish.  The cheapest read; good for stamps and for
 * intervals much longer than the out-of-order window. */
static inline uint64_t nc_ticks(void)
{
#if NC__HAVE_TSC
	if (NC__LIKELY(NC__LD(kind) - NC__KIND_TSC <= NC__KIND_TSCP - NC__KIND_TSC))
		return nc__rdtsc();
#endif
	return nc__ticks_slow(0);
}

/* Ordered read to start a measurement: taken after every earlier
 * instruction completed, and before any later one starts. */
static inline uint64_t nc_ticks_begin(void)
{
#if NC__HAVE_TSC
	if (NC__LIKELY(NC__LD(kind) - NC__KIND_TSC <= NC__KIND_TSCP - NC__KIND_TSC))
		return nc__rdtsc_fenced();
#endif
	return nc__ticks_slow(1);
}

/* Ordered read to end a measurement: taken after the measured code
 * completed; later code does not start before it.  RDTSCP where CPUID
 * advertises it, LFENCE;RDTSC;LFENCE otherwise. */
static inline uint64_t nc_ticks_end(void)
{
#if NC__HAVE_TSC
	uint64_t k = NC__LD(kind);
	if (NC__LIKELY(k == NC__KIND_TSCP))
		return nc__rdtscp_fenced();
	if (NC__LIKELY(k == NC__KIND_TSC))
		return nc__rdtsc_fenced();
#endif
	return nc__ticks_slow(1);
}

/* Monotonic nanoseconds.  Same origin and rate as CLOCK_MONOTONIC_RAW (it
 * is calibrated against it and slewed towards it, never stepped back), so
 * values can be compared with clock_gettime(CLOCK_MONOTONIC_RAW).
 * Ordered: a read that happens-after another read (through a lock, an
 * atomic handoff, a join) never returns a smaller value, on any thread. */
static inline uint64_t nc_now_ns(void)
{
	uint64_t s = __atomic_load_n(&nc__g.seq, __ATOMIC_ACQUIRE);
	uint64_t k = NC__LD(kind), bt = NC__LD(base_ticks), sp = NC__LD(span);
	uint64_t bn = NC__LD(base_ns), mi = NC__LD(now_int), mf = NC__LD(now_frac);
	NC__RFENCE();
	if (NC__UNLIKELY((s & 1) | (s ^ NC__LD(seq))))
		return nc__now_slow();
#if NC__HAVE_TSC
	if (NC__LIKELY(k != NC__KIND_CALL)) {
		uint64_t d = nc__rdtsc_after() - bt;
		/* one unsigned compare catches both "refresh due" and "counter
		 * behind the epoch start" (d wrapped to a huge value) */
		if (NC__LIKELY(d < sp))
			return bn + nc__scale_floor(d, mi, mf);
	}
#else
	(void)k; (void)bt; (void)sp; (void)bn; (void)mi; (void)mf;
#endif
	return nc__now_slow();
}

/* Pure conversion: a duration in ticks to nanoseconds, error <= 1 ns. */
static inline uint64_t nc_conv_ticks_to_ns(const nc_conv_t *c, uint64_t ticks)
{
	return nc__scale(ticks, c->ns_int, c->ns_frac);
}

/* Pure conversion: nanoseconds to ticks (rounded to nearest tick). */
static inline uint64_t nc_conv_ns_to_ticks(const nc_conv_t *c, uint64_t ns)
{
	return nc__scale(ns, c->tk_int, c->tk_frac);
}

/* A duration in ticks (a difference of two reads) to nanoseconds, with the
 * library's current best frequency estimate. */
static inline uint64_t nc_ticks_to_ns(uint64_t ticks)
{
	uint64_t s = __atomic_load_n(&nc__g.seq, __ATOMIC_ACQUIRE);
	uint64_t ci = NC__LD(conv_int), cf = NC__LD(conv_frac);
	NC__RFENCE();
	if (NC__UNLIKELY((s & 1) | (s ^ NC__LD(seq))))
		return nc__ticks_to_ns_slow(ticks);
	return nc__scale(ticks, ci, cf);
}

#undef NC__LD

#ifdef __cplusplus
}
#endif
#endif /* NANOCLOCK_H */
