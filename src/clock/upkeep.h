/* SPDX-License-Identifier: MIT */
/* The optional upkeep thread (upkeep.c). */
#ifndef NC_CLOCK_UPKEEP_H
#define NC_CLOCK_UPKEEP_H

#include "../base/compiler.h"

/* nc__lib_lock held (stop unlocks it while it joins, and takes it again). */
NC_HIDDEN int nc__upkeep_start(void);
NC_HIDDEN int nc__upkeep_stop(void);
NC_HIDDEN int nc__upkeep_running(void);
/* A degraded mode, said ("" when none): no timerfd (seccomp, no fds). */
NC_HIDDEN const char *nc__upkeep_note(void);
/* fork(): the child handler (async-signal-safe), and the child's first
 * call that is not a read (nc__lib_lock held) starts it again. */
NC_HIDDEN void nc__upkeep_forked(void);
NC_HIDDEN int nc__upkeep_fork_pending(void);
NC_HIDDEN void nc__upkeep_after_fork(void);

#endif
