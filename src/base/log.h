/* SPDX-License-Identifier: MIT */
/* Reports to the application (nc_set_log, NANOCLOCK_LOG=stderr).  A
 * report is captured where a decision is taken — its arguments copied,
 * nothing formatted, nothing called, so capturing is async-signal-safe —
 * into a queue guarded by nc__lib_lock, and delivered later, outside the
 * lock, by a call that is not a read (nc__log_deliver): the application's
 * function never runs inside the library's lock nor inside a read that a
 * signal handler made. */
#ifndef NC_BASE_LOG_H
#define NC_BASE_LOG_H

#include "compiler.h"
#include "lock.h"

#include <stddef.h>

/* Reads NANOCLOCK_LOG once (nc__lib_lock held: initialisation, nc_set_log). */
NC_HIDDEN void nc__log_config(void) NC_REQUIRES(nc__lib_lock);
/* Would a report of this level go anywhere?  One atomic load. */
NC_HIDDEN int nc__log_wanted(int level);
/* nc__lib_lock held: queue a report (printf format, a string literal). */
NC_HIDDEN void nc__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)))
	NC_REQUIRES(nc__lib_lock);
/* From any context, the lock held or not (the debug checks): queued when
 * the lock can be taken at once, else written straight to NANOCLOCK_LOG's
 * stderr or counted as dropped. */
NC_HIDDEN void nc__log_any(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Not from a read, nor with nc__lib_lock held: hand every queued report
 * to the application's function, in order, one at a time, unlocked. */
NC_HIDDEN void nc__log_deliver(void) NC_EXCLUDES(nc__lib_lock);
NC_HIDDEN int nc__log_pending(void);
/* Formats a report captured from fmt and its arguments (the tests'). */
NC_HIDDEN void nc__log_format_test(char *out, size_t outlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
