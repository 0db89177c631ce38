/* SPDX-License-Identifier: MIT */
/* The tracepoint provider of tests/lttng/traced.c (LTTng-UST 2.13 macros):
 * one event, nanoclock_test:tick, carrying its sequence number and the
 * program's own ordered counter read taken just before it, so that
 * tests/tool/test_lttng.sh can place LTTng's stamp between two of ours. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER nanoclock_test

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./tp.h"

#if !defined(NC_TEST_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define NC_TEST_LTTNG_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(nanoclock_test, tick,
	LTTNG_UST_TP_ARGS(uint32_t, seq, uint64_t, ticks),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint32_t, seq, seq)
		lttng_ust_field_integer(uint64_t, ticks, ticks)
	)
)

#endif /* NC_TEST_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
