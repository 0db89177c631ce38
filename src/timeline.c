/*
 * The timelines the inline fast path reads (nanoclock_impl.h): their
 * publication, their epochs and refreshes, and the out-of-line reads.
 *
 * Publication is a seqlock per 64-byte line (publish_line).  The writer
 * makes seq odd, issues a release fence, rewrites the fields and stores
 * the new even seq with release; each fence says which fence it pairs with.
 *
 * nc_now_ns epochs.  A line holds one epoch: for counter values t in
 * [t0, t0 + span) the value is c0 + floor(t * m), m = ns per tick as a
 * 64.64 number.  A read at or past the end takes the slow path, whose
 * refresh starts the next epoch at L = t0 + span with the value the old
 * one had at L, exactly as readers computed it: values are continuous at
 * L, every slope is positive, so nc_now_ns never decreases.  The refresh
 * measures the rate over the long baseline since calibration
 * (calibrate.c) and picks the next slope so that the clock meets
 * CLOCK_MONOTONIC_RAW at the end of the next epoch (slewing, at most
 * 500 ppm; a clock more than 1 ms behind steps forward — never back).
 * Epoch lengths double (4x the first calibration window, up to 16 s), so
 * refreshing costs one bracketed clock_gettime now and then.
 *
 * Readers never wait for a refresh.  The first reader past the end takes
 * the refresh (a trylock); the others, meanwhile, return a lower bound of
 * what the next epoch will say: the old value at L plus (t - L) at the
 * slowest slope the refresh may choose (the old one less 1/1024; the
 * refresh clamps to it).  Any value a later epoch gives for a later t is
 * at least that, so order is kept, and the bound is off by at most
 * ~0.1% of the time the refresh takes (nanoseconds).  Only a reader far
 * past the end (more than LOCKFREE_NS: the process slept, the machine was
 * suspended) waits for the refresh, which then re-ties the clock.
 */
#include "internal.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

struct nc_impl_state nc_impl_g = {.now = {.seq = 1}, .wall = {.seq = 1}, .conv_seq = 1};
__thread long nc__slow_calls;

#define MAX_EPOCH_NS 16e9       /* refresh at least every 16 s */
#define MAX_SLEW 500e-6         /* fraction of the rate */
#define STEP_FORWARD_NS 1e6     /* further behind than this: step */
#define LOCKFREE_NS 1e6         /* readers this far past an epoch's end do not wait */
#define BEHIND_NS 1e6           /* a counter further behind an epoch start was reset */
#define NO_END (UINT64_MAX >> 1) /* an epoch that never ends (exact or forced rate);
				    half the range, so that "behind" stays visible */

/* Set once by nc__publish_first, read-only afterwards. */
static uint64_t lockfree_ticks, behind_ticks;

/* ---- the line formula, as the fast path computes it ---- */
struct epoch {
	uint64_t t0, span, c0, mi, mf;
};

static uint64_t floor_mul(uint64_t t, uint64_t mi, uint64_t mf)
{
	uint64_t lo;
	return t * mi + nc_impl_mulhi(t, mf, &lo);
}

static uint64_t epoch_value(const struct epoch *e, uint64_t t)
{
	return e->c0 + floor_mul(t, e->mi, e->mf);
}

/* c0 such that the value at counter value L is exactly V */
static uint64_t c0_for(uint64_t L, uint64_t V, uint64_t mi, uint64_t mf)
{
	return V - floor_mul(L, mi, mf);
}

/* m - m/1024 in 64.64: the slowest slope a refresh may follow m with */
static void slope_min(uint64_t mi, uint64_t mf, uint64_t *oi, uint64_t *of)
{
	uint64_t di = mi >> 10, df = (mf >> 10) | (mi << 54);
	*oi = mi - di - (mf < df);
	*of = mf - df;
}

static int slope_less(uint64_t ai, uint64_t af, uint64_t bi, uint64_t bf)
{
	return ai < bi || (ai == bi && af < bf);
}

/* ---- publication ---- */
#ifdef NC_TSAN
#define ST_ORDER __ATOMIC_RELEASE
#else
#define ST_ORDER __ATOMIC_RELAXED
#endif

static void publish_line(struct nc_impl_line *l, uint64_t kind, const struct epoch *e,
			 int inline_ok)
{
	uint64_t s = __atomic_load_n(&l->seq, __ATOMIC_RELAXED);
	int first = s & 1; /* the initial odd value: no reader has seen the line yet */
	if (!first) {
		__atomic_store_n(&l->seq, s + 1, __ATOMIC_RELAXED);
#ifndef NC_TSAN
		/* pairs with the reader's acquire fence between its field loads
		 * and its second load of seq: a reader that saw any field below
		 * sees the odd seq there and retries */
		__atomic_thread_fence(__ATOMIC_RELEASE);
#endif
	}
	__atomic_store_n(&l->kind, kind, ST_ORDER);
	__atomic_store_n(&l->t0, e->t0, ST_ORDER);
	__atomic_store_n(&l->len, inline_ok ? e->span : 0, ST_ORDER);
	__atomic_store_n(&l->c0, e->c0, ST_ORDER);
	__atomic_store_n(&l->mul_int, e->mi, ST_ORDER);
	__atomic_store_n(&l->mul_frac, e->mf, ST_ORDER);
	__atomic_store_n(&l->span, e->span, ST_ORDER);
	/* pairs with the reader's acquire load of seq: a reader that sees the
	 * new even seq sees every field above */
	__atomic_store_n(&l->seq, first ? 2 : s + 2, __ATOMIC_RELEASE);
}

/* A consistent copy of a line (the slow path's seqlock read). */
static void snapshot(const struct nc_impl_line *l, struct nc_impl_line *p)
{
	for (unsigned spins = 0;; spins++) {
		p->seq = __atomic_load_n(&l->seq, __ATOMIC_ACQUIRE);
		p->kind = __atomic_load_n(&l->kind, NC_LD_ORDER);
		p->t0 = __atomic_load_n(&l->t0, NC_LD_ORDER);
		p->len = __atomic_load_n(&l->len, NC_LD_ORDER);
		p->c0 = __atomic_load_n(&l->c0, NC_LD_ORDER);
		p->mul_int = __atomic_load_n(&l->mul_int, NC_LD_ORDER);
		p->mul_frac = __atomic_load_n(&l->mul_frac, NC_LD_ORDER);
		p->span = __atomic_load_n(&l->span, NC_LD_ORDER);
		NC_RFENCE(); /* pairs with publish_line's release fence */
		if (!(p->seq & 1) && p->seq == __atomic_load_n(&l->seq, NC_LD_ORDER))
			return;
		if (spins > 64)
			sched_yield(); /* the writer was preempted mid-update */
	}
}

static void line_epoch(const struct nc_impl_line *p, struct epoch *e)
{
	e->t0 = p->t0;
	e->span = p->span;
	e->c0 = p->c0;
	e->mi = p->mul_int;
	e->mf = p->mul_frac;
}

/* The interval conversion: one word for counters faster than 1 GHz (the
 * fast path reads it alone), a seqlocked pair otherwise.  The word is
 * cleared before the pair changes to a rate it cannot hold. */
static void publish_conv(const nc_conv_t *c)
{
	if (c->ns_int != 0)
		__atomic_store_n(&nc_impl_g.conv_fast, 0, __ATOMIC_RELEASE);
	uint64_t s = __atomic_load_n(&nc_impl_g.conv_seq, __ATOMIC_RELAXED);
	int first = s & 1;
	if (!first) {
		__atomic_store_n(&nc_impl_g.conv_seq, s + 1, __ATOMIC_RELAXED);
#ifndef NC_TSAN
		__atomic_thread_fence(__ATOMIC_RELEASE); /* pairs with nc_ticks_to_ns's acquire fence */
#endif
	}
	__atomic_store_n(&nc_impl_g.conv_int, c->ns_int, ST_ORDER);
	__atomic_store_n(&nc_impl_g.conv_frac, c->ns_frac, ST_ORDER);
	__atomic_store_n(&nc_impl_g.conv_seq, first ? 2 : s + 2, __ATOMIC_RELEASE);
	if (c->ns_int == 0)
		__atomic_store_n(&nc_impl_g.conv_fast, c->ns_frac, __ATOMIC_RELEASE);
}

/* ---- the rate in use ---- */
void nc__use_hz(double hz, double ppm, const char *source)
{
	uint64_t q;
	nc_conv_t c;
	if (nc__hz_to_q24(hz, &q) != 0 || nc__conv_from_q24(&c, q) != 0)
		return; /* out of range: keep what we have */
	nc__S.conv = c;
	nc__S.hz = (double)q / 16777216.0;
	nc__S.ppm = ppm;
	nc__S.hz_source = source;
	if (__atomic_load_n(&nc_impl_g.conv_seq, __ATOMIC_RELAXED) != 1)
		publish_conv(&c); /* after the first publication: keep readers current */
}

/* ---- reading the selected counter out of line ---- */
static uint64_t read_ordered(uint64_t kind)
{
	if (nc_impl_hw(kind))
		return nc_impl_fenced(kind);
	return nc__S.ctr->read_ordered(nc__S.ctr->ctx);
}

static uint64_t calib_read(void *ctx)
{
	const struct nc__counter *c = ctx;
	return c->read_ordered(c->ctx);
}
static int64_t calib_ref(void *ctx)
{
	(void)ctx;
	return nc__mono_raw_ns();
}

/* ---- nc_now_ns: first epoch and refreshes (nc__mu held, or init) ---- */
static struct {
	uint64_t kind;
	int inline_ok;
} now_line;

static void publish_now(const struct epoch *e)
{
	publish_line(&nc_impl_g.now, now_line.kind, e, now_line.inline_ok);
}

void nc__publish_first(uint64_t kind, int inline_ok)
{
	struct nc__lib *S = &nc__S;
	now_line.kind = kind;
	now_line.inline_ok = inline_ok;
	lockfree_ticks = (uint64_t)(LOCKFREE_NS * S->hz / 1e9);
	behind_ticks = (uint64_t)(BEHIND_NS * S->hz / 1e9);
	struct epoch e;
	e.mi = S->conv.ns_int;
	e.mf = S->conv.ns_frac;
	if (S->ctr->fixed_hz > 0) {
		/* exact-rate OS clock: ticks map to ns by a fixed factor; the
		 * origin is put on CLOCK_MONOTONIC_RAW's, once */
		int64_t a = nc__mono_raw_ns();
		e.t0 = S->ctr->read_ordered(S->ctr->ctx);
		int64_t b = nc__mono_raw_ns();
		e.c0 = c0_for(e.t0, (uint64_t)(a + (b - a) / 2), e.mi, e.mf);
		e.span = NO_END;
	} else {
		/* the first epoch starts at the fit's centroid, where counter and
		 * CLOCK_MONOTONIC_RAW are best known */
		uint64_t now = read_ordered(kind);
		e.t0 = S->cal.anchor_tick;
		e.c0 = c0_for(e.t0, (uint64_t)S->cal.anchor_ns, e.mi, e.mf);
		S->epoch_ns = 4.0 * (double)S->cal.window_ns;
		e.span = S->fixed ? NO_END : (now - e.t0) + (uint64_t)(S->epoch_ns * S->hz / 1e9);
	}
	publish_conv(&S->conv);
	publish_now(&e);
}

/* The long-baseline measurement at a refresh: updates the measured rate,
 * keeps a stated rate while measurement confirms it (the same rule that
 * adopted it), and returns the bracket in *b.  0 if it produced one. */
static int refine_rate(struct nc__bracket *b)
{
	struct nc__lib *S = &nc__S;
	struct nc__calib_io io = {(void *)S->ctr, calib_read, calib_ref};
	nc__take_bracket(&io, 8, b);
	double hz_l, ppm_l;
	if (b->width == UINT64_MAX || nc__calib_extend(&S->cal, b, &hz_l, &ppm_l) != 0)
		return -1;
	S->refreshes++;
	if (ppm_l < S->meas_ppm) {
		S->meas_hz = hz_l;
		S->meas_ppm = ppm_l;
		S->meas_worst_ppm = ppm_l; /* the long baseline's bound is already worst-case-like */
		S->meas_window_ns = (double)(b->ref - S->cal.anchor_ns);
	}
	if (S->adopted >= 0 && S->hz_source == S->src[S->adopted].name) {
		struct nc_hz_source *s = &S->src[S->adopted];
		double diff, tol, claim;
		struct nc__meas m;
		nc__measurement(&m);
		if (nc__src_keep(s, &m, &claim)) {
			S->ppm = claim;
		} else {
			int agrees = nc__src_agrees(s, &m, &diff, &tol);
			s->status = agrees ? NC_SRC_AGREES : NC_SRC_REJECTED;
			snprintf(s->reason, sizeof(s->reason),
				 agrees ? "agrees (%+.4f ppm); measurement now finer than its rounding"
					: "dropped: longer measurement disagrees by %+.3f ppm",
				 diff);
			nc__use_hz(S->meas_hz, S->meas_ppm, "measured");
		}
	} else if (S->meas_ppm < S->ppm) {
		nc__use_hz(S->meas_hz, S->meas_ppm, "measured");
	}
	return 0;
}

/* The next epoch, from the old one p, triggered by a read of t >= L. */
static void refresh_now(const struct nc_impl_line *p, uint64_t t)
{
	struct nc__lib *S = &nc__S;
	struct epoch old, e;
	line_epoch(p, &old);
	uint64_t L = old.t0 + old.span;
	uint64_t cl = epoch_value(&old, L);
	double rate_ns = 1e9 / S->hz; /* ns per tick in use */
	double target_l = (double)cl; /* where CLOCK_MONOTONIC_RAW is at L */
	struct nc__bracket b;
	int ok = refine_rate(&b) == 0;
	if (ok) {
		rate_ns = 1e9 / S->meas_hz;
		target_l = (double)b.ref - (double)(int64_t)(b.mid - L) * rate_ns;
	}
	double next = ok ? fmin(2 * S->epoch_ns, MAX_EPOCH_NS) : S->epoch_ns;
	S->epoch_ns = next;

	uint64_t mi_min, mf_min;
	slope_min(old.mi, old.mf, &mi_min, &mf_min);
	if (t - L > lockfree_ticks) {
		/* Late (nobody read the clock for a while, or the process or
		 * machine slept): no reader returned a value past L +
		 * lockfree, so re-tie at t to CLOCK_MONOTONIC_RAW, never below
		 * what was handed out. */
		uint64_t floor_v = cl + floor_mul(lockfree_ticks, mi_min, mf_min);
		double tgt = target_l + (double)(t - L) * rate_ns;
		e.t0 = t;
		e.mi = S->conv.ns_int;
		e.mf = S->conv.ns_frac;
		uint64_t v = tgt > (double)floor_v ? (uint64_t)tgt : floor_v;
		e.c0 = c0_for(t, v, e.mi, e.mf);
		e.span = (uint64_t)(next * S->hz / 1e9);
		publish_now(&e);
		return;
	}
	e.t0 = L;
	e.span = (t - L) + (uint64_t)(next * S->hz / 1e9);
	double err = (double)cl - target_l; /* > 0: we are ahead */
	uint64_t v = cl;
	double slope = rate_ns;
	if (err < -STEP_FORWARD_NS) {
		v = (uint64_t)target_l; /* far behind: step forward, never back */
	} else {
		/* meet the reference at the end of the epoch */
		double adj = err / ((double)e.span * rate_ns);
		adj = fmax(-MAX_SLEW, fmin(MAX_SLEW, adj));
		slope = rate_ns * (1 - adj);
	}
	if (nc__ns_per_tick(1e9 / slope, &e.mi, &e.mf) != 0) {
		e.mi = S->conv.ns_int;
		e.mf = S->conv.ns_frac;
	}
	/* lock-free readers assumed at least this slope past L */
	if (slope_less(e.mi, e.mf, mi_min, mf_min)) {
		e.mi = mi_min;
		e.mf = mf_min;
	}
	e.c0 = c0_for(L, v, e.mi, e.mf);
	publish_now(&e);
}

/* The counter read far behind the epoch's start: it was reset (a resume
 * from suspend restarts some TSCs).  Re-tie at t, never below the epoch's
 * start value. */
static void retie_behind(const struct nc_impl_line *p, uint64_t t)
{
	struct nc__lib *S = &nc__S;
	struct epoch old, e;
	line_epoch(p, &old);
	uint64_t v0 = epoch_value(&old, old.t0);
	struct nc__bracket b;
	struct nc__calib_io io = {(void *)S->ctr, calib_read, calib_ref};
	nc__take_bracket(&io, 8, &b);
	double tgt = b.width != UINT64_MAX ? (double)b.ref - (double)(int64_t)(b.mid - t) * 1e9 / S->hz
					   : 0;
	e.t0 = t;
	e.mi = S->conv.ns_int;
	e.mf = S->conv.ns_frac;
	e.c0 = c0_for(t, tgt > (double)v0 ? (uint64_t)tgt : v0, e.mi, e.mf);
	e.span = (uint64_t)(S->epoch_ns * S->hz / 1e9);
	/* the long baseline's anchor no longer matches the counter */
	if (b.width != UINT64_MAX) {
		S->cal.anchor_tick = b.mid;
		S->cal.anchor_ns = b.ref;
	}
	publish_now(&e);
}

static uint64_t lower_bound(const struct nc_impl_line *p, uint64_t t)
{
	struct epoch e;
	line_epoch(p, &e);
	uint64_t L = e.t0 + e.span, mi, mf;
	slope_min(e.mi, e.mf, &mi, &mf);
	return epoch_value(&e, L) + floor_mul(t - L, mi, mf);
}

uint64_t nc_impl_now_slow(void)
{
	nc__ensure_init();
	nc__slow_calls++;
	for (;;) {
		struct nc_impl_line p;
		struct epoch e;
		snapshot(&nc_impl_g.now, &p);
		line_epoch(&p, &e);
		uint64_t t = read_ordered(p.kind);
		uint64_t d = t - p.t0;
		if (d < p.span)
			return epoch_value(&e, t);
		if ((int64_t)d < 0 && (uint64_t)(-(int64_t)d) <= behind_ticks)
			return epoch_value(&e, p.t0); /* another CPU's counter, slightly behind */
		if ((int64_t)d < 0) {
			nc__lock();
			if (__atomic_load_n(&nc_impl_g.now.seq, __ATOMIC_ACQUIRE) == p.seq)
				retie_behind(&p, t);
			nc__unlock();
			continue;
		}
		if (nc__trylock()) {
			if (__atomic_load_n(&nc_impl_g.now.seq, __ATOMIC_ACQUIRE) == p.seq)
				refresh_now(&p, t);
			nc__unlock();
			continue;
		}
		if (d - p.span <= lockfree_ticks)
			return lower_bound(&p, t);
		nc__lock(); /* far past the end: wait for the re-tie */
		nc__unlock();
	}
}

uint64_t nc_impl_ticks_slow(int how)
{
	nc__ensure_init();
	nc__slow_calls++;
	uint64_t k = __atomic_load_n(&nc_impl_g.now.kind, NC_LD_ORDER);
	if (nc_impl_hw(k))
		return how == 0 ? nc_impl_raw(k) : how == 1 ? nc_impl_fenced(k) : nc_impl_fenced_end(k);
	const struct nc__counter *c = nc__S.ctr;
	return how ? c->read_ordered(c->ctx) : c->read(c->ctx);
}

uint64_t nc_impl_ticks_to_ns_slow(uint64_t ticks)
{
	nc__ensure_init();
	nc__slow_calls++;
	for (;;) {
		uint64_t s = __atomic_load_n(&nc_impl_g.conv_seq, __ATOMIC_ACQUIRE);
		uint64_t ci = __atomic_load_n(&nc_impl_g.conv_int, NC_LD_ORDER);
		uint64_t cf = __atomic_load_n(&nc_impl_g.conv_frac, NC_LD_ORDER);
		NC_RFENCE(); /* pairs with publish_conv's release fence */
		if (!(s & 1) && s == __atomic_load_n(&nc_impl_g.conv_seq, NC_LD_ORDER))
			return nc_impl_scale(ticks, ci, cf);
		sched_yield();
	}
}
