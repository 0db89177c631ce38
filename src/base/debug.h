/* SPDX-License-Identifier: MIT */
/* The checks of `make MODE=debug` (NC_DEBUG), reported through the log at
 * NC_LOG_ERROR and counted; nothing stops. */
#ifndef NC_BASE_DEBUG_H
#define NC_BASE_DEBUG_H

#include "compiler.h"

NC_HIDDEN void nc__debug_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
NC_HIDDEN void nc__debug_check_conv(const nc_conv_t *c);
NC_HIDDEN extern long nc__debug_failures;

#endif
