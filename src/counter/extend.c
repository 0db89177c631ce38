/* SPDX-License-Identifier: MIT */
/* Counters narrower than 64 bits (a 32-bit device clock, a 56-bit timer)
 * are extended to 64 bits here.
 *
 * Each read takes the raw value and CLOCK_MONOTONIC_RAW under a lock and
 * adds the step since the previous read to a 64-bit total.  The step is
 * the difference modulo 2^bits, plus whole wrap periods when the OS clock
 * says more than half a period passed: so wraps are counted even if nobody
 * read the counter for hours.  The rate for that is the calibrated one, or
 * before calibration ends a rough one from the reads since the first, its
 * error from the OS-time brackets of those two reads; a gap is counted in
 * periods only where that error cannot make the count wrong.  A raw value
 * just below the previous one (a counter running backwards, or two CPUs
 * disagreeing) would look like an almost full wrap; when the OS clock
 * says that much time cannot have passed, the step is taken as zero and
 * counted as a backward step, which selection rejects.  A gap no rate can
 * count yet (the first 10 us of reads, or a thread preempted for
 * milliseconds while the rough rate is still rough: a busy machine) is
 * another matter: a raw value below the last one there may be a backward
 * step or a wrap, so it is counted as neither but as an unresolved gap
 * (selection checks again) and the rough rate starts afresh after it.  A
 * jump of more than half a period within 20 us (the widest bracket read
 * before a rate is known) is a backward step whatever the rate: a counter
 * that wraps that fast cannot be followed here.
 * The lock makes reads of narrow counters cost a mutex and a vDSO call:
 * they are a fallback for devices, not a fast path.  A read never waits
 * for it: one that finds it taken (a signal handler that interrupted a
 * read, another thread reading) extends from the last published value
 * without storing anything. */
#include "counter.h"
#include "../base/latch.h"
#include "../base/lock.h"

#include <math.h>
#include <string.h>

/* nc__ext_mutex guards every nc__ext (a narrow counter is read through
 * the library, never inline); readers only try it */
struct nc__futex_lock nc__ext_mutex = NC_FUTEX_LOCK_INIT;

/* Ticks per ns: the calibrated rate, or until there is one (selection and
 * calibration read through here too) a rough one from the reads so far,
 * with its relative error (the two reads' OS-time half-brackets and 100 ns
 * over the span).  0 if neither. */
static double ext_rate(const struct nc__ext *e, double *rel_err)
{
	*rel_err = 0;
	if (e->hz > 0)
		return e->hz / 1e9;
	int64_t span = e->last_os - e->first_os;
	if (!e->started || span < 10000 || e->ext <= e->first_ext)
		return 0;
	*rel_err = (double)(e->first_hw + e->last_hw + 100) / (double)span;
	return (double)(e->ext - e->first_ext) / (double)span;
}

#define FAST_GAP_NS 20000 /* the widest OS bracket before a rate is known */

uint64_t nc__ext_step(struct nc__ext *e, uint64_t raw, int64_t os_ns, int64_t hw_ns)
{
	raw &= e->mask;
	if (hw_ns < 0)
		hw_ns = 0;
	if (!e->started) {
		__atomic_store_n(&e->started, 1, __ATOMIC_RELAXED);
		e->last_raw = raw;
		e->ext = raw;
		e->last_os = os_ns;
		e->first_ext = raw;
		e->first_os = os_ns;
		e->first_hw = e->last_hw = hw_ns;
		return e->ext;
	}
	double period = (double)e->mask + 1.0;
	uint64_t delta = (raw - e->last_raw) & e->mask;
	/* a rate is trusted only for gaps its error (and the two stamps'
	 * brackets) cannot turn into a wrong count of periods */
	double rel_err, rate = ext_rate(e, &rel_err);
	double expect = -1; /* ticks the OS clock says passed; < 0: unknown */
	int64_t gap = os_ns - e->last_os;
	if (rate > 0 && gap >= 0) {
		expect = (double)gap * rate;
		/* the calibrated rate is always trusted: its reads' brackets
		 * are at most an eighth of a period (ext_read_with), and a gap
		 * must never lose periods silently; a rough one only where its
		 * error and the stamps' brackets cannot miscount them */
		if (e->hz <= 0 &&
		    expect * rel_err + (double)(hw_ns + e->last_hw) * rate >= period / 4)
			expect = -1;
	}
	int unresolved = 0;
	if (expect >= period / 2) {
		/* long gap: whole periods from the OS clock, rest from the counter */
		double k = nearbyint((expect - (double)delta) / period);
		if (k > 0)
			delta += (uint64_t)k * (e->mask + 1);
	} else if (expect < 0 && e->hz <= 0 && gap > FAST_GAP_NS) {
		/* whole periods may hide in the gap, and a value below the last
		 * may be a wrap or a backward step: no rate can tell yet.
		 * Counted from the new value on (the difference if it is below
		 * half a period, else nothing: the extended value stays
		 * monotonic), and the rough rate starts afresh below: it never
		 * spans a gap it could not count */
		e->gaps++;
		unresolved = 1;
		if ((double)delta > period / 2)
			delta = 0;
	} else if ((double)delta > period / 2 &&
		   (expect < 0 || (double)delta > expect + period / 4)) {
		/* keep measuring from the highest value seen, and from the time
		 * it was seen: a later read is then judged against the whole gap
		 * (taking "now" here made every read after one late stamp look
		 * like another backward step) */
		e->backsteps++;
		return e->ext;
	}
	e->ext += delta;
	e->last_raw = raw;
	e->last_os = os_ns;
	e->last_hw = hw_ns;
	if (unresolved) {
		e->first_ext = e->ext;
		e->first_os = os_ns;
		e->first_hw = hw_ns;
	}
	return e->ext;
}

/* The last (raw, extended, OS time) triple, for readers that find the
 * extension busy: a latch (src/base/latch.c). */
struct triple {
	uint64_t raw, ext;
	int64_t os, hw;
};
static void triple_store(void *obj, int i, const void *src)
{
	struct nc__ext *e = obj;
	const struct triple *v = src;
	NC_ST(e->pub_raw[i], v->raw);
	NC_ST(e->pub_ext[i], v->ext);
	NC_ST(e->pub_os[i], v->os);
	NC_ST(e->pub_hw[i], v->hw);
}
static void triple_load(const void *obj, int i, void *dst)
{
	const struct nc__ext *e = obj;
	struct triple *v = dst;
	v->raw = NC_LD(e->pub_raw[i]);
	v->ext = NC_LD(e->pub_ext[i]);
	v->os = NC_LD(e->pub_os[i]);
	v->hw = NC_LD(e->pub_hw[i]);
}

static void publish(struct nc__ext *e)
{
	struct triple v = {e->last_raw, e->ext, e->last_os, e->last_hw};
	nc__latch_write(&e->pub_seq, e, triple_store, &v);
}

/* The extension busy (a signal handler interrupted a read on its thread,
 * or another thread is reading): extend from the last published triple
 * on a private copy, counting wraps the same way, storing nothing. */
static uint64_t extend_aside(struct nc__ext *e, uint64_t raw, int64_t os_ns, int64_t hw_ns)
{
	/* mask and hz are set at initialisation, before any reader; the rest
	 * changes with reads: from the latch.  No rough rate here (its first
	 * read moves after a gap): before hz is known a gap aside is not
	 * counted in periods */
	struct nc__ext tmp;
	memset(&tmp, 0, sizeof(tmp));
	tmp.raw = e->raw;
	tmp.mask = e->mask;
	__atomic_load(&e->hz, &tmp.hz, __ATOMIC_RELAXED);
	tmp.started = __atomic_load_n(&e->started, __ATOMIC_RELAXED);
	struct triple v;
	nc__latch_read(&e->pub_seq, e, triple_load, &v);
	tmp.last_raw = v.raw;
	tmp.ext = tmp.first_ext = v.ext;
	tmp.last_os = tmp.first_os = v.os;
	tmp.last_hw = tmp.first_hw = v.hw;
	if (!tmp.started || (tmp.last_raw | tmp.ext) == 0)
		return raw & e->mask;
	return nc__ext_step(&tmp, raw, os_ns, hw_ns);
}

/* The OS time of a raw read is taken on both sides of it: a thread
 * preempted between the two would stamp the value late, and a stamp late by
 * half a period miscounts a wrap.  A wide pair is read again. */
static uint64_t ext_read_with(struct nc__ext *e, uint64_t (*rd)(void *))
{
	if (!nc__futex_trylock(&nc__ext_mutex)) {
		int64_t a = nc__mono_raw_ns();
		uint64_t raw = rd(e->raw->ctx);
		int64_t b = nc__mono_raw_ns();
		return extend_aside(e, raw, a + (b - a) / 2, (b - a + 1) / 2);
	}
	double rel_err, rate = ext_rate(e, &rel_err);
	/* an eighth of a period, or 20 us while the rate is unknown */
	double max_ns = rate > 0 ? ((double)e->mask + 1.0) / rate / 8 : 20000;
	int64_t os1, os2;
	uint64_t raw;
	/* a trapped counter may fault in rd(): nc__ext_after_fault then
	 * knows the lock was left held */
	__atomic_store_n(&e->reading, 1, __ATOMIC_RELAXED);
	for (int tries = 0;; tries++) {
		os1 = nc__mono_raw_ns();
		raw = rd(e->raw->ctx);
		os2 = nc__mono_raw_ns();
		if ((double)(os2 - os1) <= max_ns || tries == 15)
			break;
	}
	uint64_t v = nc__ext_step(e, raw, os1 + (os2 - os1) / 2, (os2 - os1 + 1) / 2);
	publish(e);
	__atomic_store_n(&e->reading, 0, __ATOMIC_RELAXED);
	nc__futex_unlock(&nc__ext_mutex);
	return v;
}

/* Unchecked by design: it releases a hold the analysis never saw taken
 * (ext_read_with's, left by a fault's siglongjmp out of the read). */
void nc__ext_after_fault(struct nc__ext *e) NC_NO_TSA
{
	/* the read that faulted held the lock for this extension (one that
	 * found it taken read aside, holding nothing): only its thread
	 * reads a candidate under probe, so the lock is that thread's */
	if (__atomic_load_n(&e->reading, __ATOMIC_RELAXED)) {
		__atomic_store_n(&e->reading, 0, __ATOMIC_RELAXED);
		nc__futex_unlock(&nc__ext_mutex);
	}
}

static uint64_t ext_read(void *ctx)
{
	struct nc__ext *e = ctx;
	return ext_read_with(e, e->raw->read);
}

static uint64_t ext_read_ordered(void *ctx)
{
	struct nc__ext *e = ctx;
	return ext_read_with(e, e->raw->read_ordered);
}

void nc__ext_init(struct nc__ext *e, const struct nc__counter *raw)
{
	memset(e, 0, sizeof(*e));
	e->raw = raw;
	e->mask = raw->bits >= 64 ? UINT64_MAX : (UINT64_C(1) << raw->bits) - 1;
	e->wrapped = *raw;
	e->wrapped.kind = NC_IMPL_KIND_CALL;
	e->wrapped.read = ext_read;
	e->wrapped.read_ordered = ext_read_ordered;
	e->wrapped.ctx = e;
	e->wrapped.bits = 64;
}

void nc__ext_set_hz(struct nc__ext *e, double hz)
{
	nc__futex_lock(&nc__ext_mutex);
	__atomic_store(&e->hz, &hz, __ATOMIC_RELAXED); /* extend_aside reads it unlocked */
	nc__futex_unlock(&nc__ext_mutex);
}

void nc__ext_lock(void) { nc__futex_lock(&nc__ext_mutex); }
void nc__ext_reset_in_child(void) { nc__futex_reset(&nc__ext_mutex); }
void nc__ext_unlock(void) { nc__futex_unlock(&nc__ext_mutex); }
