/* SPDX-License-Identifier: MIT */
/* Locks that readers may try from any context (lock.c).
 *
 * nc__lib_lock guards every piece of the library's slow-path state (each
 * state block names it beside its fields).  Readers of the clocks never
 * wait for it: they only try it (nc__trylock), so a read from a signal
 * handler that interrupted the holder goes on without it.  Everything
 * else takes it.  The narrow counters' extension has a lock of the same
 * kind (src/counter/extend.c). */
#ifndef NC_BASE_LOCK_H
#define NC_BASE_LOCK_H

#include "compiler.h"

#include <stdint.h>

/* A futex lock: 0 free, 1 taken, 2 taken with waiters; and the process
 * that took it (a child forked without atfork handlers, by _Fork or
 * clone, takes over a lock its parent's other thread held). */
struct nc__futex_lock {
	uint32_t word;
	int32_t owner;
};
#define NC_FUTEX_LOCK_INIT {0, 0}
NC_HIDDEN void nc__futex_lock(struct nc__futex_lock *l);
NC_HIDDEN void nc__futex_unlock(struct nc__futex_lock *l);
/* 1 if taken: one compare-and-swap, never waits, async-signal-safe */
NC_HIDDEN int nc__futex_trylock(struct nc__futex_lock *l);

/* nc__lib_lock */
NC_HIDDEN void nc__lock(void);
NC_HIDDEN void nc__unlock(void);
NC_HIDDEN int nc__trylock(void);
/* fork(): the child has one thread, so the locks are free there */
NC_HIDDEN void nc__lock_reset_in_child(void);

#endif
