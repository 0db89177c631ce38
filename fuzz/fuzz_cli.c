/* SPDX-License-Identifier: MIT */
/* libFuzzer: the tool's whole command line (tool_parse_command: info, now,
 * check and bench with their options, --help and --version; trace's own
 * options are parsed by tools/trace.c, whose file reader
 * fuzz/trace_decode.c drives).  The input is split at NUL bytes into up to
 * 12 arguments after "nanoclock".  Invariants: 0 with every option in its
 * range (a request for help names a topic that has a text), or -1 with a
 * one-line reason. */
#include "../tools/help.h"
#include "../tools/opts.h"
#include "fuzz_util.h"

#include <nanoclock_sync.h>

#include <math.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXARG 12

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = fuzz_str(data, size);
	char *argv[MAXARG + 2];
	int argc = 0;
	argv[argc++] = "nanoclock";
	size_t i = 0;
	while (argc < MAXARG + 1 && i <= size) {
		argv[argc++] = buf + i;
		i += strlen(buf + i) + 1;
	}
	if (size == 0)
		argc = 1; /* no command at all */
	argv[argc] = NULL;
	struct tool_tool_opts o;
	char why[256];
	memset(why, 'x', sizeof(why));
	why[sizeof(why) - 1] = 0;
	int rc = tool_parse_command(argc, argv, &o, why, sizeof(why));
	if (rc == -1) {
		fuzz_check_line(why, sizeof(why), 1);
	} else if (rc == 0) {
		const struct tool_check_opts *c = &o.check;
		const struct tool_bench_opts *b = &o.bench;
		if (o.cmd < NC_CMD_HELP || o.cmd > NC_CMD_DAEMON)
			abort();
		const struct tool_daemon_opts *d = &o.daemon;
		if (o.cmd == NC_CMD_DAEMON &&
		    (!d->record || d->record[0] != '/' || strlen(d->record) > 240 ||
		     !(d->interval_s >= 0.01 && d->interval_s <= 86400) || (d->once != 0 && d->once != 1)))
			abort();
		if (o.now.mode < 0 || o.now.mode > 3)
			abort();
		if (o.cmd == NC_CMD_HELP && (!o.help_topic || !tool_help_text(o.help_topic)))
			abort();
		if ((c->method != NC_SYNC_COP && c->method != NC_SYNC_SWITCH) || c->probes < 0 ||
		    c->probes > 100000000 || c->rounds < 0 || c->rounds > 1000)
			abort();
		if (o.cmd == NC_CMD_BENCH &&
		    (b->sub < NC_BENCH_DEFAULT || b->sub > NC_BENCH_TRACE || b->runs < 1 ||
		     b->runs > 100000 || !(b->idle >= 0 && b->idle <= 3600) ||
		     !(b->seconds >= 0.1 && b->seconds <= 86400) || b->threads < 1 || b->threads > 1024 ||
		     b->calls < 10000 || b->calls > 100000000000LL ||
		     (b->plot_dir && (!b->plot_dir[0] || b->sub != NC_BENCH_DEFAULT))))
			abort();
	} else {
		abort();
	}
	free(buf);
	return 0;
}
