/* SPDX-License-Identifier: MIT */
/* `nanoclock trace`: stats, export and demo (tools/trace.c).  The writers
 * are separate from the command line so the fuzzer drives them too; the
 * exports are in export.h. */
#ifndef NC_TOOL_TRACE_H
#define NC_TOOL_TRACE_H

#include <nanoclock_trace.h>

#include <stdio.h>

int tool_trace_main(int argc, char **argv);

/* The stats of one checked trace (name: how to call it). */
void tool_trace_print_stats(FILE *f, const struct nc_trace_reader *r, const char *name, int json);

#endif
