/* SPDX-License-Identifier: MIT */
/* The core's public face: initialisation (init.c) and the public entry
 * points (api.c, info.c).  Only public entry points call these: those
 * here, and the public functions of the layers above (docs/architecture.md). */
#ifndef NC_INIT_H
#define NC_INIT_H

#include "base/compiler.h"
#include "base/config.h"
#include "base/lock.h"

/* A read's way in: initialises once (the first call only is not
 * async-signal-safe); the thread that initialised delivers the reports
 * initialisation made, at the end of its first call. */
NC_HIDDEN void nc__ensure_init(void) NC_EXCLUDES(nc__lib_lock);
/* Any other public function: initialises, starts the upkeep thread again
 * in a forked child; nc__leave delivers queued reports. */
NC_HIDDEN void nc__enter(void) NC_EXCLUDES(nc__lib_lock);
NC_HIDDEN void nc__leave(void) NC_EXCLUDES(nc__lib_lock);

/* Set once by initialisation, read-only afterwards. */
NC_HIDDEN int nc__init_status(void);
NC_HIDDEN double nc__init_ms(void);
NC_HIDDEN const struct nc__config *nc__init_config(void);
NC_HIDDEN extern int nc__init_runs; /* tests: initialisation ran this many times */

#endif
