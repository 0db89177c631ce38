/* SPDX-License-Identifier: MIT */
/* The tool's command line (see opts.h): info, now and check here, bench in
 * tools/bench_opts.c. */
#include "opts.h"
#include "args.h"

#include <nanoclock_sync.h>

#include <stdio.h>
#include <string.h>

static int unknown(const char *cmd, const char *arg, char *why, size_t whylen)
{
	char q[48];
	snprintf(why, whylen, "unknown option '%s' (nanoclock %s --help lists them)",
		 tool_arg_quote(arg, q, sizeof(q)), cmd);
	return -1;
}

int tool_parse_info(int argc, char *const *argv, struct tool_info_opts *o, char *why, size_t whylen)
{
	memset(o, 0, sizeof(*o));
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			o->json = 1;
		else
			return unknown("info", argv[i], why, whylen);
	}
	return 0;
}

int tool_parse_now(int argc, char *const *argv, struct tool_now_opts *o, char *why, size_t whylen)
{
	memset(o, 0, sizeof(*o));
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--unix"))
			o->mode = NC_NOW_UNIX;
		else if (!strcmp(argv[i], "--iso"))
			o->mode = NC_NOW_ISO;
		else if (!strcmp(argv[i], "--json"))
			o->mode = NC_NOW_JSON;
		else
			return unknown("now", argv[i], why, whylen);
	}
	return 0;
}

int tool_parse_check(int argc, char *const *argv, struct tool_check_opts *o, char *why, size_t whylen)
{
	memset(o, 0, sizeof(*o));
	o->method = NC_SYNC_COP;
	char q[48];
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--json")) {
			o->json = 1;
		} else if (!strcmp(a, "--method")) {
			if (i + 1 >= argc) {
				snprintf(why, whylen, "--method needs a value: cop or switch");
				return -1;
			}
			const char *m = argv[++i];
			if (!strcmp(m, "cop")) {
				o->method = NC_SYNC_COP;
			} else if (!strcmp(m, "switch")) {
				o->method = NC_SYNC_SWITCH;
			} else {
				snprintf(why, whylen, "--method: '%s' is not cop or switch",
					 tool_arg_quote(m, q, sizeof(q)));
				return -1;
			}
		} else if (!strcmp(a, "--probes") || !strcmp(a, "--rounds")) {
			int probes = !strcmp(a, "--probes");
			if (i + 1 >= argc) {
				snprintf(why, whylen, "%s needs a value", a);
				return -1;
			}
			long v;
			if (tool_arg_long(a, argv[++i], 1, probes ? 100000000 : 1000, &v, why, whylen))
				return -1;
			if (probes)
				o->probes = v;
			else
				o->rounds = v;
		} else {
			return unknown("check", a, why, whylen);
		}
	}
	return 0;
}

#define DEFAULT_RECORD "/run/nanoclock/record"

int tool_parse_daemon(int argc, char *const *argv, struct tool_daemon_opts *o, char *why, size_t whylen)
{
	o->record = DEFAULT_RECORD;
	o->interval_s = 60;
	o->once = 0;
	o->clockbound = NULL;
	char q[48];
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--once")) {
			o->once = 1;
		} else if (!strcmp(a, "--record")) {
			if (i + 1 >= argc) {
				snprintf(why, whylen, "--record needs a path");
				return -1;
			}
			o->record = argv[++i];
			if (o->record[0] != '/' || strlen(o->record) > 240) {
				snprintf(why, whylen, "--record: '%s' is not an absolute path of at most 240 "
					 "bytes", tool_arg_quote(o->record, q, sizeof(q)));
				return -1;
			}
		} else if (!strcmp(a, "--clockbound")) {
			if (i + 1 >= argc) {
				snprintf(why, whylen, "--clockbound needs a path");
				return -1;
			}
			o->clockbound = argv[++i];
			if (o->clockbound[0] != '/' || strlen(o->clockbound) > 240) {
				snprintf(why, whylen, "--clockbound: '%s' is not an absolute path of at most "
					 "240 bytes", tool_arg_quote(o->clockbound, q, sizeof(q)));
				return -1;
			}
		} else if (!strcmp(a, "--interval")) {
			if (i + 1 >= argc) {
				snprintf(why, whylen, "--interval needs a value");
				return -1;
			}
			if (tool_arg_double(a, argv[++i], 0.01, 86400, &o->interval_s, why, whylen))
				return -1;
		} else {
			return unknown("daemon", a, why, whylen);
		}
	}
	return 0;
}

int tool_arg_is_help(const char *s)
{
	return s && (!strcmp(s, "-h") || !strcmp(s, "--help"));
}

static int wants_help(int argc, char *const *argv)
{
	for (int i = 0; i < argc; i++)
		if (tool_arg_is_help(argv[i]))
			return 1;
	return 0;
}

int tool_parse_command(int argc, char *const *argv, struct tool_tool_opts *o, char *why, size_t whylen)
{
	memset(o, 0, sizeof(*o));
	o->help_topic = "";
	char q[48], sub[200];
	if (argc < 2 || !argv[1]) { /* no command: the usage */
		o->cmd = NC_CMD_HELP;
		return 0;
	}
	const char *c = argv[1];
	int rc;
	if (tool_arg_is_help(c) || !strcmp(c, "help")) {
		if (argc > 2) {
			snprintf(why, whylen, "%s takes nothing after it: for a command's help, nanoclock "
				 "COMMAND --help",
				 c);
			return -1;
		}
		o->cmd = NC_CMD_HELP;
		return 0;
	} else if (!strcmp(c, "--version")) {
		if (argc > 2) {
			snprintf(why, whylen, "--version takes nothing after it");
			return -1;
		}
		o->cmd = NC_CMD_VERSION;
		return 0;
	} else if (!strcmp(c, "info")) {
		o->help_topic = "info";
		o->cmd = NC_CMD_INFO;
		rc = wants_help(argc - 2, argv + 2) ? 1
						    : tool_parse_info(argc - 2, argv + 2, &o->info, sub, sizeof(sub));
	} else if (!strcmp(c, "now")) {
		o->help_topic = "now";
		o->cmd = NC_CMD_NOW;
		rc = wants_help(argc - 2, argv + 2) ? 1
						    : tool_parse_now(argc - 2, argv + 2, &o->now, sub, sizeof(sub));
	} else if (!strcmp(c, "check")) {
		o->help_topic = "check";
		o->cmd = NC_CMD_CHECK;
		rc = wants_help(argc - 2, argv + 2)
			     ? 1
			     : tool_parse_check(argc - 2, argv + 2, &o->check, sub, sizeof(sub));
	} else if (!strcmp(c, "bench")) {
		o->cmd = NC_CMD_BENCH;
		o->help_topic = "bench";
		if (argc > 2 && argv[2][0] != '-')
			o->help_topic = tool_bench_help_topic(argv[2]);
		/* an unknown benchmark is an error, --help or not */
		rc = o->help_topic && wants_help(argc - 2, argv + 2)
			     ? 1
			     : tool_parse_bench(argc - 2, argv + 2, &o->bench, sub, sizeof(sub));
	} else if (!strcmp(c, "daemon")) {
		o->help_topic = "daemon";
		o->cmd = NC_CMD_DAEMON;
		rc = wants_help(argc - 2, argv + 2)
			     ? 1
			     : tool_parse_daemon(argc - 2, argv + 2, &o->daemon, sub, sizeof(sub));
	} else if (!strcmp(c, "trace")) {
		o->cmd = NC_CMD_TRACE; /* its options and its --help: tools/trace.c */
		return 0;
	} else {
		snprintf(why, whylen, "unknown command '%s': info, now, check, bench, trace or daemon "
			 "(nanoclock --help)",
			 tool_arg_quote(c, q, sizeof(q)));
		return -1;
	}
	if (rc == 1) {
		o->cmd = NC_CMD_HELP;
		return 0;
	}
	if (rc != 0)
		snprintf(why, whylen, "%s: %s", c, sub);
	else
		o->help_topic = "";
	return rc;
}
