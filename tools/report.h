/* SPDX-License-Identifier: MIT */
/* What more than one command prints alike: Unix time's error from UTC
 * (info, now) and a cross-CPU check's report (info, check). */
#ifndef NC_TOOL_REPORT_H
#define NC_TOOL_REPORT_H

#include <stddef.h>

#include <nanoclock.h>
#include <nanoclock_sync.h>

void utc_error_text(const struct nc_unix_status *st, char *buf, size_t len);
void unix_status_json(const struct nc_unix_status *st, int depth);
void sync_json(const struct nc_sync_report *r, int depth);
void sync_line(const struct nc_sync_report *r);

#endif
