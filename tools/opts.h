/* SPDX-License-Identifier: MIT */
/* The tool's command line, parsed by pure functions: options in a
 * struct, or a one-line reason.  No output, no exit, no library call, so
 * that the fuzzer (fuzz/fuzz_cli.c) can drive them with any argv. */
#ifndef NC_TOOL_OPTS_H
#define NC_TOOL_OPTS_H

#include <stddef.h>

#include "bench/bench.h" /* struct tool_bench_opts: what the bench runs */

enum tool_cmd {
	NC_CMD_HELP,    /* print the help of `help_topic` on stdout, exit 0 */
	NC_CMD_VERSION, /* nanoclock --version */
	NC_CMD_INFO,
	NC_CMD_NOW,
	NC_CMD_CHECK,
	NC_CMD_BENCH,
	NC_CMD_TRACE, /* tools/trace.c parses the rest, its --help included */
	NC_CMD_DAEMON,
};

struct tool_info_opts {
	int json;
};

#define NC_NOW_TEXT 0
#define NC_NOW_UNIX 1
#define NC_NOW_ISO 2
#define NC_NOW_JSON 3
struct tool_now_opts {
	int mode;
};

struct tool_check_opts {
	int method; /* NC_SYNC_COP or NC_SYNC_SWITCH */
	long probes, rounds; /* 0: the library's default */
	int json;
};

struct tool_daemon_opts {
	const char *record;  /* the record's path (argv's) */
	double interval_s;   /* between writes */
	int once;            /* write once and exit */
	const char *clockbound; /* a ClockBound segment to publish the UTC bound in (NULL: none) */
};

struct tool_tool_opts {
	int cmd;
	/* NC_CMD_HELP: whose help ("" the tool's, "check", "bench init", ...:
	 * a static string, see tools/help.c) */
	const char *help_topic;
	struct tool_info_opts info;
	struct tool_now_opts now;
	struct tool_check_opts check;
	struct tool_bench_opts bench;
	struct tool_daemon_opts daemon;
};

/* Each parses the arguments after its subcommand's name (argv[0] is the
 * first option).  0 and *o filled, or -1 with a one-line reason in why[]
 * that names the option (the caller prefixes "nanoclock <command>: ").
 * -h or --help anywhere among them is not an option but a request for the
 * command's help: tool_parse_command looks for it first (tool_arg_is_help). */
int tool_parse_info(int argc, char *const *argv, struct tool_info_opts *o, char *why, size_t whylen);
int tool_parse_now(int argc, char *const *argv, struct tool_now_opts *o, char *why, size_t whylen);
int tool_parse_check(int argc, char *const *argv, struct tool_check_opts *o, char *why, size_t whylen);
/* `nanoclock daemon` (tools/daemon.c): its exit status */
int tool_daemon_main(const struct tool_daemon_opts *o);
int tool_parse_daemon(int argc, char *const *argv, struct tool_daemon_opts *o, char *why, size_t whylen);
int tool_parse_bench(int argc, char *const *argv, struct tool_bench_opts *o, char *why, size_t whylen);
/* The whole command line (argv[0] is the program).  On error why[] starts
 * with the command ("check: --probes: ...").  No command, "help", -h or
 * --help: NC_CMD_HELP with help_topic ""; "help CMD [SUB]" and
 * "CMD [SUB] ... --help": CMD's (SUB's) help; --version: NC_CMD_VERSION. */
int tool_parse_command(int argc, char *const *argv, struct tool_tool_opts *o, char *why, size_t whylen);
/* 1 if s is -h or --help */
int tool_arg_is_help(const char *s);
/* The help topic of `bench`'s subcommand name ("bench init"), or NULL for an
 * unknown name (tools/bench_opts.c). */
const char *tool_bench_help_topic(const char *sub);

#endif
