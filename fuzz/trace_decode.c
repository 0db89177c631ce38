/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the trace decoder: every input goes through the
 * reader's checks; one it accepts goes through everything the tool does
 * with a trace — stats (text and JSON), merged export (CSV and Chrome
 * JSON, one file and the same file twice, which merges on Unix time).
 * A refused input must come with a one-line reason.
 *   scripts/fuzz-trace [SECONDS]   builds and runs it (clang, libFuzzer)
 */
#include "../tools/trace.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink_file(void)
{
	static FILE *f;
	if (!f)
		f = fopen("/dev/null", "w");
	return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nc_trace_reader *r;
	char why[256];
	int rc = nc_trace_read_mem(&r, data, size, why, sizeof(why));
	if (rc != 0) {
		/* a refusal says why, on one line */
		if (why[0] == 0 || strchr(why, '\n'))
			__builtin_trap();
		return 0;
	}
	FILE *f = sink_file();
	nc_trace_print_stats(f, r, "fuzz", 0);
	nc_trace_print_stats(f, r, "fuzz", 1);
	const char *names[2] = {"a", "b"};
	struct nc_trace_reader *two[2] = {r, r};
	nc_trace_print_export(f, two, names, 1, 0);
	nc_trace_print_export(f, two, names, 1, 1);
	nc_trace_print_export(f, two, names, 2, 1);
	struct nc_trace_rec e;
	struct nc_trace_merge *m;
	if (nc_trace_merge_open(&m, two, 1) == 0) {
		uint64_t n = 0;
		struct nc_trace_info in;
		nc_trace_read_info(r, &in);
		while (nc_trace_merge_next(m, &e))
			n++;
		if (n != in.events) /* every checked event comes out exactly once */
			__builtin_trap();
		nc_trace_merge_close(m);
	}
	nc_trace_read_close(r);
	return 0;
}
