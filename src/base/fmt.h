/* SPDX-License-Identifier: MIT */
/* The library's own small snprintf, for the texts it keeps (reasons,
 * statuses, paths).  Why not snprintf: a process's first nc_init() is
 * often its first formatted output, and the libc formatter's code and
 * tables are pages a cold start then faults in: a cold nc_init() adopting
 * a shared record faults fewer pages in and ends sooner with this
 * (scripts/ab-start compares the two).  And it is async-signal-safe where
 * snprintf is not (no locale, no allocation, no errno), but for the
 * fallback named in fmt.c.
 *
 * The conversions: %d %i %u %x %o with the length modifiers l, ll, z;
 * %s; %c; %%; %f, rounded to nearest; the flags '+', '0' and '-', a width
 * and a precision (each may be '*').  Not %g, %e, %p, %X, the flags ' '
 * and '#', h or hh, or positional arguments: a conversion it does not know
 * is copied as text, and a debug build (MODE=debug) reports it
 * (scripts/check-hygiene checks every format given to it).  Returns what
 * snprintf would: the length of the whole text, of which at most n-1 bytes
 * are written, and the text is always terminated when n > 0. */
#ifndef NC_BASE_FMT_H
#define NC_BASE_FMT_H

#include "compiler.h"

#include <stdarg.h>
#include <stddef.h>

NC_HIDDEN int nc__fmt(char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
NC_HIDDEN int nc__vfmt(char *buf, size_t n, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

#endif
