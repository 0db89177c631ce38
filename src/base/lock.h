/* SPDX-License-Identifier: MIT */
/* Locks that readers may try from any context (lock.c).
 *
 * nc__lib_lock guards every piece of the library's slow-path state (each
 * state block names it beside its fields, and says so to the compiler:
 * NC_GUARDED_BY, compiler.h).  Readers of the clocks never wait for it:
 * they only try it (nc__trylock), so a read from a signal handler that
 * interrupted the holder goes on without it.  Everything else takes it.
 * The narrow counters' extension has a lock of the same kind
 * (src/counter/extend.c). */
#ifndef NC_BASE_LOCK_H
#define NC_BASE_LOCK_H

#include "compiler.h"

#include <pthread.h>
#include <stdint.h>

/* A futex lock: 0 free, 1 taken, 2 taken with waiters; and the process
 * that took it (a child forked without atfork handlers, by _Fork or
 * clone, takes over a lock its parent's other thread held).  The debug
 * build records the thread too, for nc__lock_held. */
struct NC_CAPABILITY("mutex") nc__futex_lock {
	uint32_t word;
	int32_t owner;
#ifdef NC_DEBUG
	uintptr_t thread; /* the holder's thread (debug: nc__lock_held) */
#endif
};
#ifdef NC_DEBUG
#define NC_FUTEX_LOCK_INIT {0, 0, 0}
#else
#define NC_FUTEX_LOCK_INIT {0, 0}
#endif
NC_HIDDEN void nc__futex_lock(struct nc__futex_lock *l) NC_ACQUIRE(*l);
NC_HIDDEN void nc__futex_unlock(struct nc__futex_lock *l) NC_RELEASE(*l);
/* 1 if taken: one compare-and-swap, never waits, async-signal-safe */
NC_HIDDEN int nc__futex_trylock(struct nc__futex_lock *l) NC_TRY_ACQUIRE(1, *l);
/* fork(): the child has one thread, so a lock the atfork handlers took
 * before the fork is free there (a primitive: NC_NO_TSA, as in lock.c) */
static inline void nc__futex_reset(struct nc__futex_lock *l) NC_RELEASE(*l) NC_NO_TSA
{
	__atomic_store_n(&l->owner, 0, __ATOMIC_RELAXED);
#ifdef NC_DEBUG
	__atomic_store_n(&l->thread, 0, __ATOMIC_RELAXED);
#endif
	__atomic_store_n(&l->word, 0, __ATOMIC_RELAXED);
}

/* The library's lock, named for the annotations (NC_GUARDED_BY(nc__lib_lock));
 * taken and released only through these: */
NC_HIDDEN extern struct nc__futex_lock nc__lib_lock;
NC_HIDDEN void nc__lock(void) NC_ACQUIRE(nc__lib_lock);
NC_HIDDEN void nc__unlock(void) NC_RELEASE(nc__lib_lock);
NC_HIDDEN int nc__trylock(void) NC_TRY_ACQUIRE(1, nc__lib_lock);
/* fork(): nc__futex_reset of nc__lib_lock in the child */
NC_HIDDEN void nc__lock_reset_in_child(void) NC_RELEASE(nc__lib_lock);

/* A pthread mutex the analysis can name, for the two locks that no reader
 * tries (the registry's, the fault trap's): the same calls, through these
 * (inline: the same code). */
struct NC_CAPABILITY("mutex") nc__mutex {
	pthread_mutex_t m;
};
#define NC_MUTEX_INIT {PTHREAD_MUTEX_INITIALIZER}
static inline void nc__mutex_lock(struct nc__mutex *l) NC_ACQUIRE(*l) NC_NO_TSA
{
	pthread_mutex_lock(&l->m);
}
static inline void nc__mutex_unlock(struct nc__mutex *l) NC_RELEASE(*l) NC_NO_TSA
{
	pthread_mutex_unlock(&l->m);
}

/* NC_LOCK_HELD(), first thing in the main functions that require
 * nc__lib_lock: the debug build checks at run time what the annotation
 * says (the analysis follows no call through a pointer, nor the tests'
 * calls).  nc__lock_held: this thread of this process holds it (a load
 * and two system calls: async-signal-safe).  A failure is counted and
 * reported as the other debug checks' (debug.h), by log.c, whose own
 * queue functions check too and could not call back into debug.c. */
#ifdef NC_DEBUG
NC_HIDDEN int nc__lock_held(void);
NC_HIDDEN void nc__lock_not_held(const char *func);
#define NC_LOCK_HELD() (nc__lock_held() ? (void)0 : nc__lock_not_held(__func__))
#else
#define NC_LOCK_HELD() ((void)0)
#endif

#endif
