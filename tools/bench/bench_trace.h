/* SPDX-License-Identifier: MIT */
/* `nanoclock bench trace` (bench_trace.c). */
#ifndef NC_BENCH_TRACE_H
#define NC_BENCH_TRACE_H

int tool_bench_trace(int quick);

#endif
