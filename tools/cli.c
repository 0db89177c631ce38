/* SPDX-License-Identifier: MIT */
/* nanoclock — the tool a user runs first on a new machine.
 *   nanoclock info [--json]   what the library chose, and why (info.c)
 *   nanoclock now ...         the time and its error from UTC (now.c)
 *   nanoclock check ...       do the CPUs' counters agree? (check.c)
 *   nanoclock bench ...       costs, init time and accuracy (bench/bench.c),
 *                             and PNGs with --plot DIR (bench/plot.c)
 *   nanoclock daemon ...      the shared record kept (daemon.c)
 *   nanoclock trace ...       event traces: stats, export, demo (trace.c)
 * The command line: opts.c (pure, fuzzed); the help texts: help.c; what
 * several commands print alike: report.c, json.c.  This file: main(). 
 */
#include "bench/bench.h"
#include "args.h"
#include "commands.h"
#include "help.h"
#include "opts.h"
#include "trace.h"

#include <nanoclock.h>
#include <nanoclock_info.h>
#include <nanoclock_shared.h>
#include <nanoclock_sync.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* A setting the library refused (the environment's NANOCLOCK_*), as one
 * line: what and why.  The command's output above it shows the rest. */
static void init_error_line(int rc)
{
	static struct nc_info in;
	nc_get_info(&in);
	const char *what = "", *detail = "";
	if (rc == NC_ENOCOUNTER) {
		what = "NANOCLOCK_COUNTER";
		detail = in.counter_error;
	} else if (rc == NC_EOVERRIDE ||
		   (in.hz_env_status[0] && !strncmp(in.hz_env_status, "refused", 7))) {
		what = "NANOCLOCK_HZ";
		detail = in.hz_env_status;
	} else if (in.calib_status[0]) {
		detail = in.calib_status; /* names its variable */
	} else {
		/* NANOCLOCK_SHARED refused: the shared record's status says why */
		static struct nc_shared_status sh;
		nc_get_shared_status(&sh);
		const char *p = strstr(sh.status, "NANOCLOCK_SHARED refused");
		if (p) {
			/* it sits inside "off (...)": the closing parenthesis
			 * left over is not the reason's */
			static char buf[sizeof(sh.status)];
			snprintf(buf, sizeof(buf), "%s", p);
			int depth = 0;
			for (const char *c = buf; *c; c++)
				depth += (*c == '(') - (*c == ')');
			size_t l = strlen(buf);
			if (depth < 0 && l && buf[l - 1] == ')')
				buf[l - 1] = 0;
			detail = buf;
		}
	}
	fprintf(stderr, "nanoclock: nc_init: %s%s%s%s%s (the clock runs on its defaults)\n",
		nc_strerror(rc), what[0] || detail[0] ? ": " : "", what, what[0] && detail[0] ? " " : "",
		detail);
}

int main(int argc, char **argv)
{
	struct tool_tool_opts o;
	char why[256];
	if (tool_parse_command(argc, argv, &o, why, sizeof(why)) != 0) {
		fprintf(stderr, "nanoclock %s\n", why);
		return 2;
	}
	if (o.cmd == NC_CMD_HELP || o.cmd == NC_CMD_VERSION) {
		if (o.cmd == NC_CMD_HELP)
			fputs(tool_help_text(o.help_topic), stdout);
		else /* the tool links the library statically: one version */
			printf("nanoclock %s\n", nc_version());
		if (fflush(stdout) != 0 || ferror(stdout)) {
			fprintf(stderr, "nanoclock: standard output: write error\n");
			return 1;
		}
		return 0;
	}
	/* trace files are read and written by tools/trace.c, which parses the
	 * rest of its command line itself */
	if (o.cmd == NC_CMD_TRACE)
		return tool_trace_main(argc, argv);
	if (o.cmd == NC_CMD_DAEMON) /* it sets NANOCLOCK_SHARED before nc_init */
		return tool_daemon_main(&o.daemon);
	/* the cold-start child of `bench` reports its own status on stdout;
	 * `bench init` chooses its own record before it initialises; its
	 * floor child never initialises */
	int init_rc = o.cmd == NC_CMD_BENCH &&
			      (o.bench.sub == NC_BENCH_INIT_ONCE || o.bench.sub == NC_BENCH_INIT ||
			       o.bench.sub == NC_BENCH_FLOOR_ONCE)
			      ? 0
			      : nc_init();
	int rc = 0;
	switch (o.cmd) {
	case NC_CMD_INFO: rc = cmd_info(&o.info); break;
	case NC_CMD_NOW: rc = cmd_now(&o.now); break;
	case NC_CMD_CHECK: rc = cmd_check(&o.check); break;
	default: rc = tool_bench_run(&o.bench); break;
	}
	/* the UTC source let go before the exit (ptp4l's: a socket and its
	 * bound name; chrony's: a socket), as the daemon does */
	if (o.cmd != NC_CMD_BENCH)
		nc_utc_stop();
	/* a full disk, /dev/full, a closed pipe: the command failed */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "nanoclock: standard output: write error\n");
		return 1;
	}
	if (init_rc != 0) {
		init_error_line(init_rc);
		return 4;
	}
	return rc;
}
