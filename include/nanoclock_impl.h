/* SPDX-License-Identifier: MIT */
/*
 * nanoclock — the inline fast path, included at the end of nanoclock.h.
 *
 * Not API: applications call the functions declared in nanoclock.h and
 * never name anything here.  It is ABI: the layout of struct nc_impl_state
 * and the NC_IMPL_KIND_* values are compiled into every program that calls
 * an inline function, so changing either bumps the soname
 * (libnanoclock.so.N, see the Makefile); the static assertions below pin
 * the layout.  Names use the nc_impl_ / NC_IMPL_ prefix (C++, which also
 * includes this file, reserves every name containing "__"), and the helper
 * macros are undefined again at the end.
 *
 * Shared state: one latch per timeline, read, never written, by the fast
 * path.  A latch (Linux's raw_write_seqcount_latch) holds two copies of
 * the timeline's parameters and a sequence word whose low bit says which
 * copy readers use.  The rare writer (initialisation and the periodic
 * refresh, src/clock/) moves readers to the other copy, rewrites the one
 * they left, moves them back and rewrites the second: a reader always
 * finds a stable copy, even one that interrupted the writer (a signal
 * handler), so no read ever waits.  The inline reads use copy 0, the one
 * readers use whenever no write is under way; one that finds a write under
 * way (seq odd) or the sequence word changed while it read, or a counter
 * value outside the copy's epoch, calls into the library, which reads the
 * copy the latch points to and never waits either (src/clock/timeline.c).
 */
#ifndef NANOCLOCK_IMPL_H
#define NANOCLOCK_IMPL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How the selected counter is read (nc_impl_line.kind). */
#define NC_IMPL_KIND_NONE 0     /* not initialised yet */
#define NC_IMPL_KIND_TSC 1      /* x86 RDTSC; ordered reads with LFENCE */
#define NC_IMPL_KIND_TSCP 2     /* x86 RDTSC, and CPUID advertises RDTSCP */
#define NC_IMPL_KIND_CNTVCT 3   /* arm64 CNTVCT_EL0, ordered with ISB */
#define NC_IMPL_KIND_CNTVCTSS 4 /* arm64 CNTVCTSS_EL0 (FEAT_ECV, self-synchronised) */
#define NC_IMPL_KIND_TIMEBASE 5 /* POWER mftb, ordered with isync */
#define NC_IMPL_KIND_RDTIME 6   /* RISC-V rdtime, ordered with fence */
#define NC_IMPL_KIND_CALL 7     /* through a function: OS clock, own counter */

/* One copy of a timeline.  For counter values t with t - t0 < len
 * (unsigned), its value is c0 + floor(t * (mul_int + mul_frac / 2^64))
 * modulo 2^64: the absolute form keeps the subtraction of t0 off the path
 * from the counter read to the result (it only feeds the range check).
 * An epoch never spans the counter's wrap (the library ends it there).
 * Any other t (past the end, or behind the start), or len == 0 (the
 * counter is not read inline) sends the reader into the library. */
struct nc_impl_copy {
	uint64_t kind;     /* NC_IMPL_KIND_*: how the counter is read */
	uint64_t t0;       /* first counter value of the epoch */
	uint64_t len;      /* epoch length in ticks (0: not inline) */
	uint64_t c0;       /* the value at counter value 0 (mod 2^64) */
	uint64_t mul_int;  /* ns per tick in this epoch: integer part ... */
	uint64_t mul_frac; /* ... and fraction, in units of 2^-64 */
	uint64_t span;     /* the epoch's length for the library (len is 0
			      when the counter is not read inline) */
};

/* A timeline's latch: 128 bytes; the sequence word and copy 0 (the one
 * readers use between writes) share the first cache line. */
struct nc_impl_line {
	uint64_t seq;                /* bit 0: the copy readers use */
	struct nc_impl_copy copy[2];
	uint64_t reserved;
};

/* Interval conversion (nc_ticks_to_ns): ns per tick as 64.64, latched. */
struct nc_impl_conv_copy {
	uint64_t ns_int, ns_frac;
};
struct nc_impl_conv {
	uint64_t fast;       /* ns per tick in units of 2^-64 when below 1 ns
				(counters faster than 1 GHz): one word, read
				without the latch; 0: use the copies */
	uint64_t seq;        /* bit 0: the copy readers use */
	struct nc_impl_conv_copy copy[2];
	uint64_t reserved[2];
};

struct nc_impl_state {
	struct nc_impl_line now;  /* nc_now_ns; copy[0].kind also serves nc_ticks* */
	struct nc_impl_line wall; /* nc_unix_ns */
	struct nc_impl_conv conv;
} __attribute__((aligned(64)));

/* nc_utc_now's latch (a global of its own, nc_impl_utc_g: adding it left
 * nc_impl_state as it was).  A copy holds nc_unix_ns's epoch and the bound
 * on UTC for counter values in it: a half width of err0 + slope * (t -
 * as_of_tick) ns, the slope as 16.48 fixed point ns per tick; the status
 * stays as given until fresh_len ticks past as_of_tick, synchronised turns
 * free-running after that, and anything known turns unknown after
 * horizon_len. */
struct nc_impl_utc_copy {
	struct nc_impl_copy line; /* nc_unix_ns's epoch (len 0: not read inline) */
	uint64_t as_of_tick;      /* the counter value err0 holds at */
	uint64_t err0;            /* ns */
	uint64_t slope;           /* ns per tick, in units of 2^-48 */
	uint64_t fresh_len, horizon_len; /* ticks past as_of_tick */
	int64_t as_of_ns;         /* the source's figures' time (Unix ns) */
	uint64_t status_source;   /* NC_UTC_* | NC_UTC_SRC_* << 32 */
	uint64_t watch_addr;      /* 0, or a word that must still hold watch_val (a */
	uint64_t watch_val;       /* VMClock page's disruption marker) */
};
struct nc_impl_utc {
	uint64_t seq; /* bit 0: the copy readers use */
	uint64_t reserved;
	struct nc_impl_utc_copy copy[2];
} __attribute__((aligned(64)));

#ifdef __cplusplus
#define NC_IMPL_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define NC_IMPL_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif
NC_IMPL_STATIC_ASSERT(sizeof(struct nc_impl_copy) == 56, "nanoclock ABI: a copy is 56 bytes");
NC_IMPL_STATIC_ASSERT(sizeof(struct nc_impl_line) == 128, "nanoclock ABI: a line is 128 bytes");
NC_IMPL_STATIC_ASSERT(sizeof(struct nc_impl_conv) == 64, "nanoclock ABI: the conversion is 64 bytes");
NC_IMPL_STATIC_ASSERT(sizeof(struct nc_impl_state) == 320, "nanoclock ABI: the state is 320 bytes");
NC_IMPL_STATIC_ASSERT(__builtin_offsetof(struct nc_impl_state, wall) == 128 &&
			      __builtin_offsetof(struct nc_impl_state, conv) == 256 &&
			      __builtin_offsetof(struct nc_impl_line, copy) == 8 &&
			      __builtin_offsetof(struct nc_impl_copy, mul_frac) == 40 &&
			      __builtin_offsetof(struct nc_impl_conv, copy) == 16,
		      "nanoclock ABI: field offsets");
NC_IMPL_STATIC_ASSERT(sizeof(struct nc_impl_utc_copy) == 128 && sizeof(struct nc_impl_utc) == 320 &&
			      __builtin_offsetof(struct nc_impl_utc, copy) == 16,
		      "nanoclock ABI: the UTC latch's layout");

NC_API extern struct nc_impl_state nc_impl_g;
NC_API extern struct nc_impl_utc nc_impl_utc_g;

/* Out-of-line paths: first use, a refresh due, a rewrite in progress, a
 * counter not read inline. */
NC_API uint64_t nc_impl_ticks_slow(int how); /* 0 unordered, 1 begin, 2 end */
NC_API uint64_t nc_impl_now_slow(void);
NC_API int64_t nc_impl_unix_slow(void);
NC_API uint64_t nc_impl_ticks_to_ns_slow(uint64_t ticks);
NC_API int nc_impl_utc_slow(struct nc_utc *u);

#define NC_IMPL_LIKELY(x) __builtin_expect(!!(x), 1)
#define NC_IMPL_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Latch reads: an acquire load of seq picks the copy; relaxed loads of
 * its fields, then an acquire fence before seq is loaded again.  The fence
 * pairs with the release fence the writer issues after each change of seq
 * (src/base/latch.c), so a reader that saw any field the writer rewrote
 * also sees seq changed, and goes to the library.  ThreadSanitizer does
 * not model fences: under it every load is an acquire instead, which gives
 * the same guarantee in a form it checks. */
#if defined(__SANITIZE_THREAD__)
#define NC_IMPL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NC_IMPL_TSAN 1
#endif
#endif
#ifdef NC_IMPL_TSAN
#define NC_IMPL_LD_ORDER __ATOMIC_ACQUIRE
#define NC_IMPL_RFENCE() ((void)0)
#else
#define NC_IMPL_LD_ORDER __ATOMIC_RELAXED
#define NC_IMPL_RFENCE() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#endif
#define NC_IMPL_LD(lv) __atomic_load_n(&(lv), NC_IMPL_LD_ORDER)

/* ---- 64x64-bit products ---- */
#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 nc_impl_u128;
#endif

/* high 64 bits of a*b; the low 64 in *lo */
static inline uint64_t nc_impl_mulhi(uint64_t a, uint64_t b, uint64_t *lo)
{
#if defined(__SIZEOF_INT128__)
	nc_impl_u128 p = (nc_impl_u128)a * b;
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

/* round(d * f / 2^64): bit 63 of the low word is the half to round up */
static inline uint64_t nc_impl_frac_round(uint64_t d, uint64_t f)
{
	uint64_t lo, hi = nc_impl_mulhi(d, f, &lo);
	return hi + (lo >> 63);
}

/* round(d * (i + f / 2^64)) */
static inline uint64_t nc_impl_scale(uint64_t d, uint64_t i, uint64_t f)
{
	uint64_t r = nc_impl_frac_round(d, f);
	return NC_IMPL_LIKELY(i == 0) ? r : d * i + r;
}

/* ---- the counter instructions, per architecture ----
 * nc_impl_hw(k): the counter of kind k is read inline here.
 * nc_impl_raw(k): unordered read.  nc_impl_fenced(k): ordered on both
 * sides.  nc_impl_after(k, &t): t taken after every earlier instruction
 * (loads included) completed; 0 if the counter of kind *k is not inline. */
#if defined(__x86_64__) || defined(__i386__)
static inline int nc_impl_hw(uint64_t k)
{
	return k - NC_IMPL_KIND_TSC <= (uint64_t)(NC_IMPL_KIND_TSCP - NC_IMPL_KIND_TSC);
}
static inline uint64_t nc_impl_raw(uint64_t k)
{
	uint32_t lo, hi;
	(void)k;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t nc_impl_fenced(uint64_t k)
{
	uint32_t lo, hi;
	(void)k;
	__asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t nc_impl_fenced_end(uint64_t k)
{
	uint32_t lo, hi, aux;
	if (k != NC_IMPL_KIND_TSCP)
		return nc_impl_fenced(k);
	__asm__ __volatile__("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
	(void)aux;
	return ((uint64_t)hi << 32) | lo;
}
/* LFENCE first, then the kind, then RDTSC: the check sits after the fence,
 * so it does not delay it, and RDTSC runs speculatively behind the
 * predicted branch.  Where the TSC is not used (not selected, or disabled
 * for the thread with PR_SET_TSC) the branch goes the other way and a
 * faulting RDTSC on the wrong path is discarded, never delivered. */
static inline int nc_impl_after(const uint64_t *kp, uint64_t *t)
{
	__asm__ __volatile__("lfence" : : : "memory");
	uint64_t k = NC_IMPL_LD(*kp);
	if (NC_IMPL_LIKELY(nc_impl_hw(k))) {
		*t = nc_impl_raw(k);
		return 1;
	}
	return 0;
}
#elif defined(__aarch64__)
static inline int nc_impl_hw(uint64_t k)
{
	return k - NC_IMPL_KIND_CNTVCT <= (uint64_t)(NC_IMPL_KIND_CNTVCTSS - NC_IMPL_KIND_CNTVCT);
}
static inline uint64_t nc_impl_raw(uint64_t k)
{
	uint64_t v;
	(void)k;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
}
/* CNTVCTSS_EL0 is S3_3_C14_C0_6, written by encoding for old assemblers;
 * it is self-synchronised: no ISB before it. */
static inline uint64_t nc_impl_fenced(uint64_t k)
{
	uint64_t v;
	if (k == NC_IMPL_KIND_CNTVCTSS)
		__asm__ __volatile__("mrs %0, S3_3_C14_C0_6\n\tisb" : "=r"(v) : : "memory");
	else
		__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0\n\tisb" : "=r"(v) : : "memory");
	return v;
}
static inline uint64_t nc_impl_fenced_end(uint64_t k) { return nc_impl_fenced(k); }
static inline int nc_impl_after(const uint64_t *kp, uint64_t *t)
{
	uint64_t k = NC_IMPL_LD(*kp), v;
	if (NC_IMPL_LIKELY(k == NC_IMPL_KIND_CNTVCT)) {
		__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	} else if (k == NC_IMPL_KIND_CNTVCTSS) {
		__asm__ __volatile__("mrs %0, S3_3_C14_C0_6" : "=r"(v) : : "memory");
	} else {
		return 0;
	}
	*t = v;
	return 1;
}
#elif defined(__powerpc64__)
static inline int nc_impl_hw(uint64_t k) { return k == NC_IMPL_KIND_TIMEBASE; }
static inline uint64_t nc_impl_raw(uint64_t k)
{
	uint64_t v;
	(void)k;
	__asm__ __volatile__("mfspr %0, 268" : "=r"(v));
	return v;
}
static inline uint64_t nc_impl_fenced(uint64_t k)
{
	uint64_t v;
	(void)k;
	__asm__ __volatile__("isync\n\tmfspr %0, 268\n\tisync" : "=r"(v) : : "memory");
	return v;
}
static inline uint64_t nc_impl_fenced_end(uint64_t k) { return nc_impl_fenced(k); }
static inline int nc_impl_after(const uint64_t *kp, uint64_t *t)
{
	uint64_t v;
	if (NC_IMPL_UNLIKELY(!nc_impl_hw(NC_IMPL_LD(*kp))))
		return 0;
	__asm__ __volatile__("isync\n\tmfspr %0, 268" : "=r"(v) : : "memory");
	*t = v;
	return 1;
}
#elif defined(__riscv) && __riscv_xlen == 64
static inline int nc_impl_hw(uint64_t k) { return k == NC_IMPL_KIND_RDTIME; }
static inline uint64_t nc_impl_raw(uint64_t k)
{
	uint64_t v;
	(void)k;
	__asm__ __volatile__("rdtime %0" : "=r"(v));
	return v;
}
static inline uint64_t nc_impl_fenced(uint64_t k)
{
	uint64_t v;
	(void)k;
	__asm__ __volatile__("fence iorw, iorw\n\trdtime %0\n\tfence iorw, iorw" : "=r"(v) : : "memory");
	return v;
}
static inline uint64_t nc_impl_fenced_end(uint64_t k) { return nc_impl_fenced(k); }
static inline int nc_impl_after(const uint64_t *kp, uint64_t *t)
{
	uint64_t v;
	if (NC_IMPL_UNLIKELY(!nc_impl_hw(NC_IMPL_LD(*kp))))
		return 0;
	__asm__ __volatile__("fence iorw, iorw\n\trdtime %0" : "=r"(v) : : "memory");
	*t = v;
	return 1;
}
#else
/* no inline counter: every read is a call */
static inline int nc_impl_hw(uint64_t k) { return (void)k, 0; }
static inline uint64_t nc_impl_raw(uint64_t k) { return (void)k, 0; }
static inline uint64_t nc_impl_fenced(uint64_t k) { return (void)k, 0; }
static inline uint64_t nc_impl_fenced_end(uint64_t k) { return (void)k, 0; }
static inline int nc_impl_after(const uint64_t *kp, uint64_t *t)
{
	(void)kp;
	(void)t;
	return 0;
}
#endif

/* The value of line l now, read inline, if the counter is read inline, its
 * value lies in the epoch of copy 0, and the latch pointed readers at copy
 * 0 throughout (seq even and unchanged).  Copy 0 is the one readers use
 * whenever no write is under way; while one is (seq odd) the read goes to
 * the library, which reads copy 1 and does not wait.  Reading copy 0
 * directly keeps every load independent of the others, so that they all
 * run beside the counter read: as fast as a plain sequence lock. */
static inline __attribute__((always_inline)) int nc_impl_read(const struct nc_impl_line *l,
							      uint64_t *v)
{
	const struct nc_impl_copy *c = &l->copy[0];
	uint64_t t, lo;
	if (NC_IMPL_UNLIKELY(!nc_impl_after(&c->kind, &t)))
		return 0;
	uint64_t s = __atomic_load_n(&l->seq, __ATOMIC_ACQUIRE);
	uint64_t t0 = NC_IMPL_LD(c->t0), len = NC_IMPL_LD(c->len), c0 = NC_IMPL_LD(c->c0);
	uint64_t mi = NC_IMPL_LD(c->mul_int), mf = NC_IMPL_LD(c->mul_frac);
	NC_IMPL_RFENCE(); /* pairs with the writer's release fence after it changed seq */
	if (NC_IMPL_UNLIKELY((s & 1) | (s ^ NC_IMPL_LD(l->seq))))
		return 0;
	if (NC_IMPL_UNLIKELY(t - t0 >= len))
		return 0;
	uint64_t r = c0 + nc_impl_mulhi(t, mf, &lo);
	(void)lo;
	if (NC_IMPL_UNLIKELY(mi != 0)) /* counters of 1 GHz and slower */
		r += t * mi;
	*v = r;
	return 1;
}

/* ---- the inline API (declared in nanoclock.h) ---- */

static inline uint64_t nc_ticks(void)
{
	uint64_t k = NC_IMPL_LD(nc_impl_g.now.copy[0].kind);
	if (NC_IMPL_LIKELY(nc_impl_hw(k)))
		return nc_impl_raw(k);
	return nc_impl_ticks_slow(0);
}

static inline uint64_t nc_ticks_begin(void)
{
	uint64_t k = NC_IMPL_LD(nc_impl_g.now.copy[0].kind);
	if (NC_IMPL_LIKELY(nc_impl_hw(k)))
		return nc_impl_fenced(k);
	return nc_impl_ticks_slow(1);
}

/* RDTSCP where CPUID advertises it (it waits for the measured code; the
 * LFENCE after it holds back later code), else the same as begin. */
static inline uint64_t nc_ticks_end(void)
{
	uint64_t k = NC_IMPL_LD(nc_impl_g.now.copy[0].kind);
	if (NC_IMPL_LIKELY(nc_impl_hw(k)))
		return nc_impl_fenced_end(k);
	return nc_impl_ticks_slow(2);
}

static inline uint64_t nc_now_ns(void)
{
	uint64_t v;
	if (NC_IMPL_LIKELY(nc_impl_read(&nc_impl_g.now, &v)))
		return v;
	return nc_impl_now_slow();
}

static inline int64_t nc_unix_ns(void)
{
	uint64_t v;
	if (NC_IMPL_LIKELY(nc_impl_read(&nc_impl_g.wall, &v)))
		return (int64_t)v;
	return nc_impl_unix_slow();
}

/* The interval for counter value t from a copy's bound fields (read
 * already): shared by the inline read and the library's. */
static inline __attribute__((always_inline)) int nc_impl_utc_fill(struct nc_utc *u, uint64_t v,
								 uint64_t t, uint64_t at,
				   uint64_t err0, uint64_t slope, uint64_t fresh, uint64_t hor,
				   int64_t as_of, uint64_t ss)
{
	uint64_t dt = t - at, lo;
	if ((int64_t)dt < 0) /* a counter value before the bound's own: it grows both ways */
		dt = -dt;
	int32_t st = (int32_t)(uint32_t)ss;
	if (dt > fresh && st == NC_UTC_SYNCHRONISED)
		st = NC_UTC_FREE_RUNNING;
	if (dt > hor && st != NC_UTC_DISRUPTED)
		st = NC_UTC_UNKNOWN;
	u->unix_ns = (int64_t)v;
	u->as_of_ns = as_of;
	u->status = st;
	u->source = (int32_t)(ss >> 32);
	if (NC_IMPL_LIKELY(st == NC_UTC_SYNCHRONISED || st == NC_UTC_FREE_RUNNING)) {
		uint64_t hi = nc_impl_mulhi(dt, slope, &lo);
		uint64_t e = err0 + (hi << 16 | lo >> 48);
		u->earliest_ns = (int64_t)(v - e);
		u->latest_ns = (int64_t)(v + e);
	} else {
		u->earliest_ns = INT64_MIN;
		u->latest_ns = INT64_MAX;
	}
	return st;
}

/* One counter read, the epoch and the bound from copy 0 of one latch, as
 * nc_impl_read; anything else (the first call, a write under way, a
 * counter value past the epoch) goes to the library, which never waits. */
static inline __attribute__((always_inline)) int nc_utc_now(struct nc_utc *u)
{
	const struct nc_impl_utc_copy *c = &nc_impl_utc_g.copy[0];
	uint64_t t, lo;
	if (NC_IMPL_UNLIKELY(!nc_impl_after(&c->line.kind, &t)))
		return nc_impl_utc_slow(u);
	uint64_t s = __atomic_load_n(&nc_impl_utc_g.seq, __ATOMIC_ACQUIRE);
	uint64_t t0 = NC_IMPL_LD(c->line.t0), len = NC_IMPL_LD(c->line.len), c0 = NC_IMPL_LD(c->line.c0);
	uint64_t mi = NC_IMPL_LD(c->line.mul_int), mf = NC_IMPL_LD(c->line.mul_frac);
	uint64_t at = NC_IMPL_LD(c->as_of_tick), err0 = NC_IMPL_LD(c->err0), sl = NC_IMPL_LD(c->slope);
	uint64_t fresh = NC_IMPL_LD(c->fresh_len), hor = NC_IMPL_LD(c->horizon_len);
	int64_t as_of = NC_IMPL_LD(c->as_of_ns);
	uint64_t ss = NC_IMPL_LD(c->status_source), wa = NC_IMPL_LD(c->watch_addr);
	uint64_t wv = NC_IMPL_LD(c->watch_val);
	NC_IMPL_RFENCE(); /* pairs with the writer's release fence after it changed seq */
	if (NC_IMPL_UNLIKELY((s & 1) | (s ^ NC_IMPL_LD(nc_impl_utc_g.seq))))
		return nc_impl_utc_slow(u);
	if (NC_IMPL_UNLIKELY(t - t0 >= len))
		return nc_impl_utc_slow(u);
	/* the source's disruption marker, where it has one: changed (a VM
	 * moved) since the bound was published, the library says so */
	if (NC_IMPL_UNLIKELY(wa != 0) &&
	    __atomic_load_n((const uint64_t *)(uintptr_t)wa, __ATOMIC_RELAXED) != wv)
		return nc_impl_utc_slow(u);
	uint64_t v = c0 + nc_impl_mulhi(t, mf, &lo);
	if (NC_IMPL_UNLIKELY(mi != 0))
		v += t * mi;
	return nc_impl_utc_fill(u, v, t, at, err0, sl, fresh, hor, as_of, ss);
}

static inline int nc_utc_order(const struct nc_utc *a, const struct nc_utc *b)
{
	int known = (a->status == NC_UTC_SYNCHRONISED || a->status == NC_UTC_FREE_RUNNING) &&
		    (b->status == NC_UTC_SYNCHRONISED || b->status == NC_UTC_FREE_RUNNING);
	if (known && a->latest_ns < b->earliest_ns)
		return -1;
	if (known && b->latest_ns < a->earliest_ns)
		return 1;
	return 0;
}

static inline uint64_t nc_conv_ticks_to_ns(const nc_conv_t *c, uint64_t ticks)
{
	return nc_impl_scale(ticks, c->ns_int, c->ns_frac);
}

static inline uint64_t nc_conv_ns_to_ticks(const nc_conv_t *c, uint64_t ns)
{
	return nc_impl_scale(ns, c->tk_int, c->tk_frac);
}

static inline uint64_t nc_ticks_to_ns(uint64_t ticks)
{
	/* one word for counters faster than 1 GHz: always consistent */
	uint64_t f = NC_IMPL_LD(nc_impl_g.conv.fast);
	if (NC_IMPL_LIKELY(f != 0))
		return nc_impl_frac_round(ticks, f);
	/* copy 0 when no write is under way, as nc_impl_read */
	uint64_t s = __atomic_load_n(&nc_impl_g.conv.seq, __ATOMIC_ACQUIRE);
	uint64_t ci = NC_IMPL_LD(nc_impl_g.conv.copy[0].ns_int);
	uint64_t cf = NC_IMPL_LD(nc_impl_g.conv.copy[0].ns_frac);
	NC_IMPL_RFENCE(); /* pairs with the writer's release fence (src/base/latch.c) */
	if (NC_IMPL_UNLIKELY((s & 1) | (s ^ NC_IMPL_LD(nc_impl_g.conv.seq)) | ((ci | cf) == 0)))
		return nc_impl_ticks_to_ns_slow(ticks);
	return nc_impl_scale(ticks, ci, cf);
}

#undef NC_IMPL_STATIC_ASSERT
#undef NC_IMPL_TSAN
#undef NC_IMPL_LD_ORDER
#undef NC_IMPL_RFENCE
#undef NC_IMPL_LD
#undef NC_IMPL_LIKELY
#undef NC_IMPL_UNLIKELY

#ifdef __cplusplus
}
#endif
#endif /* NANOCLOCK_IMPL_H */
