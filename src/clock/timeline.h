/* SPDX-License-Identifier: MIT */
/* Timelines: nc_now_ns's (now.c) and nc_unix_ns's (wall.c) are siblings
 * that register here what the rest of the library may ask of them; the
 * reader's way into the library (nc__timeline_read) and the upkeep thread
 * go through this table, never to a timeline by name. */
#ifndef NC_CLOCK_TIMELINE_H
#define NC_CLOCK_TIMELINE_H

#include "line.h"
#include "../rate/rate.h"

struct nc__timeline {
	const char *name;
	struct nc_impl_line *line;
	/* the counter its copies of kind NC_IMPL_KIND_CALL read (ordered) */
	uint64_t (*read)(void);
	/* nc__lib_lock held, the line still at old: a read of t at or past
	 * old's end, or far behind its start.  Publishes an epoch holding t.
	 * (The analysis follows no call through these pointers: each
	 * function behind them is annotated NC_REQUIRES where it is defined.) */
	void (*refresh)(const struct nc__epoch *old, uint64_t t);
	/* nc__lib_lock held: the counter in use changed (it stopped) */
	void (*counter_changed)(void);
	/* nc__lib_lock held: the counter jumped (b: a bracket taken after); NULL */
	void (*discontinuity)(const struct nc__bracket *b);
	/* nc__lib_lock held: the system clock was set (set = 1), or a look at
	 * whether the kernel changed its rate (set = 0); NULL */
	void (*system_clock)(int set);
	/* steps the line took back (the debug build's order check); NULL */
	uint32_t (*steps)(void);
	/* The most the line may read now: its reference clock now plus how far
	 * ahead of it the line may be.  Async-signal-safe (a clock read and an
	 * atomic load): what a reader far behind an epoch's start returns. */
	uint64_t (*ahead_bound)(void);
};

/* Initialisation (nc__lib_lock held); the table is read-only afterwards,
 * read without the lock. */
NC_HIDDEN void nc__timeline_register(const struct nc__timeline *tl) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN int nc__timeline_count(void);
NC_HIDDEN const struct nc__timeline *nc__timeline_at(int i);

/* The value of tl now, from a reader that left the fast path.  Never waits:
 * it refreshes an overdue epoch if it can take nc__lib_lock at once, else
 * returns the bounded lower bound (line.h). */
NC_HIDDEN uint64_t nc__timeline_read(const struct nc__timeline *tl);
/* What a reader of tl at counter value t was handed from epoch e, at most:
 * the value in the epoch, the overdue value past it (line.h), the start's
 * value a little behind it (another CPU's counter); far behind it (the
 * counter went back) the line's bound now, between the start's value and
 * the ceiling: so a counter that goes back never takes the line back. */
NC_HIDDEN uint64_t nc__timeline_reader_value(const struct nc__timeline *tl, const struct nc__epoch *e,
					     uint64_t t);
/* A counter value as the line's copies read it, ordered. */
NC_HIDDEN uint64_t nc__timeline_counter(const struct nc__timeline *tl, uint64_t kind);
/* ns until tl's epoch ends (0: due; 1e12: never), at its own slope. */
NC_HIDDEN double nc__timeline_due_ns(const struct nc__timeline *tl);
/* Refresh tl if its epoch is due (nc__lib_lock held). */
NC_HIDDEN void nc__timeline_refresh_if_due(const struct nc__timeline *tl) NC_REQUIRES(nc__lib_lock);
/* this thread's calls that left the inline path (tests) */
NC_HIDDEN extern __thread long nc__slow_calls __attribute__((tls_model("initial-exec")));
/* this thread's reads that returned an epoch's value held at its horizon
 * (the refreshing thread was away more than 1 ms): tests */
NC_HIDDEN extern __thread long nc__held_reads __attribute__((tls_model("initial-exec")));
/* reads past their epoch's end, before its horizon, that could not refresh
 * it (another thread held the lock): at the held slope, up to 0.4% slow */
NC_HIDDEN extern __thread long nc__overdue_reads __attribute__((tls_model("initial-exec")));

#endif
