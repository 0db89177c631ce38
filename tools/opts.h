/* SPDX-License-Identifier: MIT */
/* The tool's command line, parsed by pure functions: options in a
 * struct, or a one-line reason.  No output, no exit, no library call, so
 * that the fuzzer (fuzz/fuzz_cli.c) can drive them with any argv. */
#ifndef NC_TOOL_OPTS_H
#define NC_TOOL_OPTS_H

#include <stddef.h>

enum nc_cmd { NC_CMD_HELP, NC_CMD_INFO, NC_CMD_NOW, NC_CMD_CHECK, NC_CMD_BENCH, NC_CMD_TRACE };

struct nc_info_opts {
	int json;
};

#define NC_NOW_TEXT 0
#define NC_NOW_UNIX 1
#define NC_NOW_ISO 2
#define NC_NOW_JSON 3
struct nc_now_opts {
	int mode;
};

struct nc_check_opts {
	int method; /* NC_SYNC_COP or NC_SYNC_SWITCH */
	long probes, rounds; /* 0: the library's default */
	int json;
};

enum nc_bench_sub {
	NC_BENCH_DEFAULT,
	NC_BENCH_INIT_ONCE, /* hidden: one cold init, for `bench` and `bench init` */
	NC_BENCH_INIT,
	NC_BENCH_UNIX,
	NC_BENCH_SYNC,
	NC_BENCH_STRESS,
	NC_BENCH_LATENCY,
	NC_BENCH_TRACE,
};
struct nc_bench_opts {
	int sub;
	int quick;         /* default, trace */
	const char *plot_dir; /* default: --plot DIR (points into argv) */
	long runs;         /* init (21), sync (100) */
	double idle;       /* init: seconds idle before each cold process (2) */
	double seconds;    /* unix (60), stress (60), --plot (30) */
	int step;          /* unix */
	long threads;      /* stress (16) */
	long long calls;   /* latency (10^8) */
};

struct nc_tool_opts {
	int cmd;
	struct nc_info_opts info;
	struct nc_now_opts now;
	struct nc_check_opts check;
	struct nc_bench_opts bench;
};

/* Each parses the arguments after its subcommand's name (argv[0] is the
 * first option).  0 and *o filled, or -1 with a one-line reason in why[]
 * that names the option (the caller prefixes "nanoclock <command>: "). */
int nc_parse_info(int argc, char *const *argv, struct nc_info_opts *o, char *why, size_t whylen);
int nc_parse_now(int argc, char *const *argv, struct nc_now_opts *o, char *why, size_t whylen);
int nc_parse_check(int argc, char *const *argv, struct nc_check_opts *o, char *why, size_t whylen);
int nc_parse_bench(int argc, char *const *argv, struct nc_bench_opts *o, char *why, size_t whylen);
/* The whole command line (argv[0] is the program).  On error why[] starts
 * with the command ("check: --probes: ..."). */
int nc_parse_command(int argc, char *const *argv, struct nc_tool_opts *o, char *why, size_t whylen);

#endif
