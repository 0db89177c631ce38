/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the trace decoder and every exporter: each input
 * goes through the reader's checks; one it accepts (whole or cut short)
 * goes through everything the tool does with a trace — stats (text and
 * JSON), and the CSV, Chrome JSON, Perfetto and CTF exports of one file
 * and of the same file twice (which merges on Unix time).  Every checked
 * event must come out of the merge exactly once; a refused input must
 * come with a one-line reason, a cut-short one with a one-line stop.
 *   scripts/fuzz-trace [SECONDS]   builds and runs it (clang, libFuzzer)
 */
#include "../tools/export.h"
#include "../tools/trace.h"

#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink_file(void)
{
	static FILE *f;
	if (!f)
		f = fopen("/dev/null", "w");
	return f;
}

/* A directory of the harness's own for the CTF export, emptied each run. */
static int ctf_dir(void)
{
	static int fd = -1;
	static char path[] = "/tmp/nc-fuzz-ctf-XXXXXX";
	if (fd < 0) {
		if (!mkdtemp(path))
			abort();
		fd = open(path, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			abort();
	}
	DIR *d = fdopendir(dup(fd));
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			unlinkat(fd, e->d_name, 0);
	if (d)
		closedir(d);
	return fd;
}

static void export_all(struct nc_trace_reader **r, unsigned n)
{
	static const char *const names[2] = {"a", "b"};
	FILE *f = sink_file();
	for (int fmt = 0; fmt < 4; fmt++) {
		struct tool_export x;
		if (tool_export_begin(&x, r, names, n, 0) != 0)
			continue;
		char why[256];
		switch (fmt) {
		case 0: tool_export_csv(f, &x); break;
		case 1: tool_export_chrome(f, &x); break;
		case 2: tool_export_perfetto(f, &x); break;
		default: tool_export_ctf(ctf_dir(), &x, why, sizeof(why)); break;
		}
		tool_export_end(&x);
	}
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
	uint64_t used;
	if (!nc_trace_read_complete(r, &used, why, sizeof(why)) &&
	    (why[0] == 0 || strchr(why, '\n') || used >= size))
		__builtin_trap();
	FILE *f = sink_file();
	tool_trace_print_stats(f, r, "fuzz", 0);
	tool_trace_print_stats(f, r, "fuzz", 1);
	struct nc_trace_reader *two[2] = {r, r};
	export_all(two, 1);
	export_all(two, 2);
	struct nc_trace_rec e;
	struct nc_trace_merge *m;
	if (nc_trace_merge_open(&m, two, 1) == 0) {
		uint64_t n = 0;
		struct nc_trace_info in;
		nc_trace_read_info(r, &in);
		while (nc_trace_merge_next(m, &e)) {
			/* an interval holds its own Unix time, or is unknown and all */
			struct nc_utc u;
			int st = nc_trace_read_utc(r, e.ticks, &u);
			int known = st == NC_UTC_SYNCHRONISED || st == NC_UTC_FREE_RUNNING;
			if (st != u.status || u.unix_ns != e.unix_ns ||
			    (known && !(u.earliest_ns <= u.unix_ns && u.unix_ns <= u.latest_ns)) ||
			    (!known && (u.earliest_ns != INT64_MIN || u.latest_ns != INT64_MAX)))
				__builtin_trap();
			n++;
		}
		if (n != in.events || nc_trace_merge_error(m)) /* every checked event, once */
			__builtin_trap();
		nc_trace_merge_close(m);
	}
	nc_trace_read_close(r);
	return 0;
}
