/* SPDX-License-Identifier: MIT */
/* The probes of tests/lttng/tp.h, built into the traced program. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "tp.h"
