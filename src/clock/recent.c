/* SPDX-License-Identifier: MIT */
/*
 * nc_recent_ns(): the time as of the upkeep thread's last tick, read with
 * one load.  For code that stamps often and can take a tick's staleness
 * (a cache's expiry, a log line's time, a rate limiter), at a fraction of
 * a counter read.  The upkeep thread (nc_upkeep_start) ticks every period
 * (NANOCLOCK_RECENT_US, default 1000 us) once a coarse read asked for it;
 * each tick stores nc_now_ns() and nc_unix_ns().  A read is then that
 * store's value: never newer than the time, and older by at most the
 * period plus the tick's lateness (the thread not running on time: a
 * busy machine), the largest of which nc_get_recent_status states.  The
 * ticks and their lateness are on CLOCK_MONOTONIC, what the thread sleeps
 * on; the values on the counter (they differ by the kernel's frequency
 * correction and the rate's uncertainty: a few hundred ppm at most).
 * Without the thread a coarse read is a full read, and says so.
 *
 * The public calls are api.c's: they read here, and fall back to a full
 * read while nothing ticks; each thread keeps the largest value it was
 * handed (thread-local: no shared memory written), which covers the
 * switch between full reads and ticks when the thread starts or stops.
 */
#include "recent.h"
#include "now.h"
#include "timeline.h"
#include "wall.h"
#include "nanoclock.h"

#include <time.h>

#include <stdlib.h>
#include <string.h>

/* Written by the upkeep thread's ticks (one writer), read anywhere. */
static struct {
	uint64_t now;    /* nc_now_ns() at the last tick */
	int64_t unix_ns; /* nc_unix_ns() then */
	int on;          /* the values are ticking (else: full reads) */
	int wanted;      /* a coarse read asked for ticks */
	int64_t last_raw, late_max_ns, ticks;
	int64_t period_ns; /* read once, from NANOCLOCK_RECENT_US */
} rc;


int64_t nc__recent_period_ns(void)
{
	int64_t p = __atomic_load_n(&rc.period_ns, __ATOMIC_RELAXED);
	if (p)
		return p;
	/* 10 us .. 1 s; anything else: the default */
	const char *v = secure_getenv("NANOCLOCK_RECENT_US");
	char *end;
	double us = v ? strtod(v, &end) : 0;
	p = v && end != v && !*end && us >= 10 && us <= 1e6 ? (int64_t)(us * 1e3) : 1000000;
	__atomic_store_n(&rc.period_ns, p, __ATOMIC_RELAXED);
	return p;
}

int nc__recent_wanted(void) { return __atomic_load_n(&rc.wanted, __ATOMIC_RELAXED); }

static int64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void nc__recent_tick(int64_t due_ns)
{
	uint64_t now = nc__timeline_read(&nc__now_timeline);
	int64_t unix_ns = (int64_t)nc__timeline_read(&nc__wall_timeline);
	int64_t raw = mono_ns();
	__atomic_store_n(&rc.now, now, __ATOMIC_RELAXED);
	__atomic_store_n(&rc.unix_ns, unix_ns, __ATOMIC_RELAXED);
	/* the values before the flag: a read that sees it on sees them */
	__atomic_store_n(&rc.on, 1, __ATOMIC_RELEASE);
	int64_t late = due_ns ? raw - due_ns : 0;
	if (late > __atomic_load_n(&rc.late_max_ns, __ATOMIC_RELAXED))
		__atomic_store_n(&rc.late_max_ns, late, __ATOMIC_RELAXED);
	__atomic_store_n(&rc.last_raw, raw, __ATOMIC_RELAXED);
	__atomic_store_n(&rc.ticks, __atomic_load_n(&rc.ticks, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

void nc__recent_stop(void) { __atomic_store_n(&rc.on, 0, __ATOMIC_RELEASE); }

int nc__recent_now(uint64_t *v)
{
	if (__atomic_load_n(&rc.on, __ATOMIC_ACQUIRE)) {
		*v = __atomic_load_n(&rc.now, __ATOMIC_RELAXED);
		return 1;
	}
	if (!__atomic_load_n(&rc.wanted, __ATOMIC_RELAXED))
		__atomic_store_n(&rc.wanted, 1, __ATOMIC_RELAXED); /* once */
	return 0;
}

int nc__recent_unix(int64_t *v)
{
	if (__atomic_load_n(&rc.on, __ATOMIC_ACQUIRE)) {
		*v = __atomic_load_n(&rc.unix_ns, __ATOMIC_RELAXED);
		return 1;
	}
	if (!__atomic_load_n(&rc.wanted, __ATOMIC_RELAXED))
		__atomic_store_n(&rc.wanted, 1, __ATOMIC_RELAXED);
	return 0;
}

void nc__recent_status(struct nc_recent_status *st)
{
	memset(st, 0, sizeof(*st));
	st->ticking = __atomic_load_n(&rc.on, __ATOMIC_ACQUIRE);
	st->period_ns = (double)nc__recent_period_ns();
	st->late_max_ns = (double)__atomic_load_n(&rc.late_max_ns, __ATOMIC_RELAXED);
	st->ticks = (uint64_t)__atomic_load_n(&rc.ticks, __ATOMIC_RELAXED);
	int64_t last = __atomic_load_n(&rc.last_raw, __ATOMIC_RELAXED);
	st->age_ns = st->ticking && last ? (double)(mono_ns() - last) : 0;
}
