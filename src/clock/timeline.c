/* SPDX-License-Identifier: MIT */
/* The registered timelines, and the reader's way through the library.
 *
 * Readers never wait.  A reader whose counter value lies past its copy's
 * epoch tries nc__lib_lock once: taken, it refreshes the line (at most
 * twice: epochs may expire as fast as they are made on a slow machine) and
 * reads again; not taken — another thread is refreshing, or this thread
 * was interrupted inside the library by the signal handler now reading —
 * it returns the epoch's overdue value (line.h: a lower bound of the next
 * epoch, held still 1 ms past the end).  A reader behind the epoch's start
 * gets the start's value (another CPU's counter a little behind), or, far
 * behind (a counter that went back), the line's bound now (its reference
 * clock plus how far ahead of it the line may be, kept within the epoch's
 * start and ceiling) unless it can refresh.  So a read is
 * a bounded number of steps whatever other threads or interrupted code do:
 * wait-free, and async-signal-safe after the first call. */
#include "timeline.h"
#include "../base/debug.h"
#include "../base/latch.h"
#include "../base/lock.h"

#define MAX_TIMELINES 4

/* Written at initialisation (nc__lib_lock held), read-only afterwards. */
static const struct nc__timeline *registered[MAX_TIMELINES] NC_GUARDED_BY(nc__lib_lock);
static int nregistered NC_GUARDED_BY(nc__lib_lock);

__thread long nc__slow_calls __attribute__((tls_model("initial-exec")));
__thread long nc__held_reads __attribute__((tls_model("initial-exec")));
__thread long nc__overdue_reads __attribute__((tls_model("initial-exec")));

NC_START void nc__timeline_register(const struct nc__timeline *tl)
{
	if (nregistered < MAX_TIMELINES)
		registered[nregistered++] = tl;
}
/* Unchecked by design: the table is complete before any reader can see
 * a line (initialisation publishes the lines after registering). */
int nc__timeline_count(void) NC_NO_TSA { return __atomic_load_n(&nregistered, __ATOMIC_ACQUIRE); }
const struct nc__timeline *nc__timeline_at(int i) NC_NO_TSA { return registered[i]; }

uint64_t nc__timeline_counter(const struct nc__timeline *tl, uint64_t kind)
{
	return nc_impl_hw(kind) ? nc_impl_fenced(kind) : tl->read();
}

uint64_t nc__timeline_reader_value(const struct nc__timeline *tl, const struct nc__epoch *e,
				   uint64_t t)
{
	uint64_t d = t - e->t0;
	if ((int64_t)d >= 0 || (uint64_t)(-(int64_t)d) <= nc__epoch_behind_ticks(e))
		return nc__epoch_reader_value(e, t);
	uint64_t lo = nc__epoch_value(e, e->t0), hi = nc__epoch_ceiling(e), b = tl->ahead_bound();
	return b < lo ? lo : b > hi ? hi : b;
}

static uint64_t timeline_read(const struct nc__timeline *tl)
{
	for (int round = 0;; round++) {
		struct nc__epoch e;
		uint64_t kind;
		uint64_t seq = nc__line_read(tl->line, &e, &kind);
		uint64_t t = nc__timeline_counter(tl, kind);
		/* a copy read through the library's own counter (kind CALL) must
		 * still be the one published when the counter was read: the
		 * counter behind CALL changes when it stops */
		if (!nc_impl_hw(kind) && round < 4 && nc__latch_seq(tl->line) != seq)
			continue;
		uint64_t d = t - e.t0;
		if (d < e.span)
			return nc__epoch_value(&e, t);
		int past = (int64_t)d >= 0;
		if (!past && (uint64_t)(-(int64_t)d) <= nc__epoch_behind_ticks(&e))
			return nc__epoch_value(&e, e.t0); /* another CPU's counter, slightly behind */
		if (round < 6 && nc__trylock()) {
			if (nc__latch_seq(tl->line) == seq)
				tl->refresh(&e, t);
			nc__unlock();
			continue;
		}
		if (past && t - (e.t0 + e.span) > nc__epoch_horizon_ticks(&e))
			nc__held_reads++; /* held still at the horizon: the tests tell it apart */
		else if (past)
			nc__overdue_reads++; /* past the end, at the held slope: likewise */
		return nc__timeline_reader_value(tl, &e, t);
	}
}

#ifdef NC_DEBUG
/* Every value a thread gets must not be below the one it got before from
 * the same line, unless the line stepped back in between. */
uint64_t nc__timeline_read(const struct nc__timeline *tl)
{
	static __thread uint64_t last[MAX_TIMELINES] __attribute__((tls_model("initial-exec")));
	static __thread uint32_t steps_seen[MAX_TIMELINES] __attribute__((tls_model("initial-exec")));
	int i = 0;
	while (i < nc__timeline_count() - 1 && nc__timeline_at(i) != tl)
		i++;
	uint32_t steps = tl->steps ? tl->steps() : 0;
	uint64_t v = timeline_read(tl);
	int back = tl->steps ? (int64_t)(v - last[i]) < 0 && steps == steps_seen[i] && last[i]
			     : v < last[i];
	if (back)
		nc__debug_fail("%s went back by %llu ns on one thread", tl->name,
			       (unsigned long long)(last[i] - v));
	last[i] = v;
	steps_seen[i] = steps;
	return v;
}
#else
uint64_t nc__timeline_read(const struct nc__timeline *tl) { return timeline_read(tl); }
#endif

double nc__timeline_due_ns(const struct nc__timeline *tl)
{
	struct nc__epoch e;
	uint64_t kind;
	nc__line_read(tl->line, &e, &kind);
	if (e.span >= NC_NO_END)
		return 1e12;
	uint64_t d = nc__timeline_counter(tl, kind) - e.t0;
	double m = (double)e.mi + (double)e.mf * 0x1p-64; /* ns per tick on this line */
	return d >= e.span ? 0 : (double)(e.span - d) * m;
}

void nc__timeline_refresh_if_due(const struct nc__timeline *tl)
{
	struct nc__epoch e;
	uint64_t kind;
	nc__line_read(tl->line, &e, &kind);
	uint64_t t = nc__timeline_counter(tl, kind);
	if (t - e.t0 >= e.span && (int64_t)(t - e.t0) >= 0)
		tl->refresh(&e, t);
}
