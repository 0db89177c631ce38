/* SPDX-License-Identifier: MIT */
/* The library's lock, nc__lib_lock: it guards every piece of the
 * library's slow-path state (each state block names it beside its
 * fields).  Readers of the clocks never wait for it: they only try it
 * (nc__trylock), so a read from a signal handler that interrupted the
 * holder goes on without it.  Everything else takes it. */
#ifndef NC_BASE_LOCK_H
#define NC_BASE_LOCK_H

#include "compiler.h"

NC_HIDDEN void nc__lock(void);
NC_HIDDEN void nc__unlock(void);
/* 1 if taken: one compare-and-swap, never waits, async-signal-safe */
NC_HIDDEN int nc__trylock(void);
/* fork(): the child has one thread, so the lock is free there */
NC_HIDDEN void nc__lock_reset_in_child(void);

#endif
