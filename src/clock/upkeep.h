/* SPDX-License-Identifier: MIT */
/* The optional upkeep thread (upkeep.c). */
#ifndef NC_CLOCK_UPKEEP_H
#define NC_CLOCK_UPKEEP_H

#include "../base/lock.h"

/* nc__lib_lock held (stop unlocks it while it joins, and takes it again). */
NC_HIDDEN int nc__upkeep_start(void) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN int nc__upkeep_stop(void) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN int nc__upkeep_running(void) NC_REQUIRES(nc__lib_lock);
/* A degraded mode, said ("" when none): no timerfd (seccomp, no fds). */
NC_HIDDEN const char *nc__upkeep_note(void) NC_REQUIRES(nc__lib_lock);
/* fork(): the child handler (async-signal-safe; the lock its prepare
 * handler took is held), and the child's first call that is not a read
 * (nc__lib_lock held) starts it again.  fork_pending: any thread, no lock. */
NC_HIDDEN void nc__upkeep_forked(void) NC_REQUIRES(nc__lib_lock);
NC_HIDDEN int nc__upkeep_fork_pending(void);
NC_HIDDEN void nc__upkeep_after_fork(void) NC_REQUIRES(nc__lib_lock);

#endif
