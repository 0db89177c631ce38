/* SPDX-License-Identifier: MIT */
/* `nanoclock bench`'s command line (see tools/opts.h): pure, for the tool
 * and the fuzzer. */
#include "args.h"
#include "opts.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *name, *topic;
	int sub;
} subs[] = {
	{"init", "bench init", NC_BENCH_INIT},
	{"unix", "bench unix", NC_BENCH_UNIX},
	{"sync", "bench sync", NC_BENCH_SYNC},
	{"stress", "bench stress", NC_BENCH_STRESS},
	{"latency", "bench latency", NC_BENCH_LATENCY},
	{"trace", "bench trace", NC_BENCH_TRACE},
};

const char *tool_bench_help_topic(const char *sub)
{
	for (size_t k = 0; k < sizeof(subs) / sizeof(subs[0]); k++)
		if (!strcmp(sub, subs[k].name))
			return subs[k].topic;
	return NULL;
}

/* The option's value, or NULL with why[] filled. */
static const char *value(int argc, char *const *argv, int *i, char *why, size_t whylen)
{
	if (*i + 1 >= argc) {
		snprintf(why, whylen, "%s needs a value", argv[*i]);
		return NULL;
	}
	return argv[++*i];
}

int tool_parse_bench(int argc, char *const *argv, struct tool_bench_opts *o, char *why, size_t whylen)
{
	memset(o, 0, sizeof(*o));
	char q[48];
	int i = 0;
	o->sub = NC_BENCH_DEFAULT;
	if (argc > 0 && argv[0][0] != '-') {
		int found = 0;
		for (size_t k = 0; k < sizeof(subs) / sizeof(subs[0]); k++)
			if (!strcmp(argv[0], subs[k].name)) {
				o->sub = subs[k].sub;
				found = 1;
			}
		if (!found) {
			snprintf(why, whylen,
				 "unknown benchmark '%s': init, unix, sync, stress, latency or trace",
				 tool_arg_quote(argv[0], q, sizeof(q)));
			return -1;
		}
		i = 1;
	}
	int sub = o->sub, seconds_set = 0;
	o->runs = sub == NC_BENCH_INIT ? 21 : 100;
	o->idle = 2.0;
	o->seconds = 60;
	o->threads = 16;
	o->calls = 100000000;
	for (; i < argc; i++) {
		const char *a = argv[i], *v;
		if (!strcmp(a, "--init-once") && sub == NC_BENCH_DEFAULT) {
			o->sub = NC_BENCH_INIT_ONCE;
		} else if (!strcmp(a, "--floor-once") && sub == NC_BENCH_DEFAULT) {
			o->sub = NC_BENCH_FLOOR_ONCE;
		} else if (!strcmp(a, "--quick") && (sub == NC_BENCH_DEFAULT || sub == NC_BENCH_TRACE)) {
			o->quick = 1;
		} else if (!strcmp(a, "--plot") && sub == NC_BENCH_DEFAULT) {
			if (!(v = value(argc, argv, &i, why, whylen)))
				return -1;
			if (!v[0]) {
				snprintf(why, whylen, "--plot needs a directory");
				return -1;
			}
			o->plot_dir = v;
		} else if (!strcmp(a, "--runs") && (sub == NC_BENCH_INIT || sub == NC_BENCH_SYNC)) {
			if (!(v = value(argc, argv, &i, why, whylen)) ||
			    tool_arg_long(a, v, 1, 100000, &o->runs, why, whylen))
				return -1;
		} else if (!strcmp(a, "--seconds") &&
			   (sub == NC_BENCH_UNIX || sub == NC_BENCH_STRESS || sub == NC_BENCH_DEFAULT)) {
			if (!(v = value(argc, argv, &i, why, whylen)) ||
			    tool_arg_double(a, v, 0.1, 86400, &o->seconds, why, whylen))
				return -1;
			seconds_set = 1;
		} else if (!strcmp(a, "--step") && sub == NC_BENCH_UNIX) {
			o->step = 1;
		} else if (!strcmp(a, "--idle") && sub == NC_BENCH_INIT) {
			if (!(v = value(argc, argv, &i, why, whylen)) ||
			    tool_arg_double(a, v, 0, 3600, &o->idle, why, whylen))
				return -1;
		} else if (!strcmp(a, "--threads") && sub == NC_BENCH_STRESS) {
			if (!(v = value(argc, argv, &i, why, whylen)) ||
			    tool_arg_long(a, v, 1, 1024, &o->threads, why, whylen))
				return -1;
		} else if (!strcmp(a, "--calls") && sub == NC_BENCH_LATENCY) {
			/* at least one batch of the measurement; at most ~1 hour of calls */
			if (!(v = value(argc, argv, &i, why, whylen)) ||
			    tool_arg_ll(a, v, 10000, 100000000000LL, &o->calls, why, whylen))
				return -1;
		} else {
			snprintf(why, whylen, "unknown option '%s'%s%s (nanoclock bench%s%s --help lists them)",
				 tool_arg_quote(a, q, sizeof(q)), sub == NC_BENCH_DEFAULT ? "" : " for ",
				 sub == NC_BENCH_DEFAULT ? "" : argv[0], sub == NC_BENCH_DEFAULT ? "" : " ",
				 sub == NC_BENCH_DEFAULT ? "" : argv[0]);
			return -1;
		}
	}
	if (o->sub == NC_BENCH_DEFAULT && seconds_set && !o->plot_dir) {
		snprintf(why, whylen, "--seconds goes with --plot DIR");
		return -1;
	}
	if (o->plot_dir && !seconds_set)
		o->seconds = o->quick ? 2 : 30; /* the plot's default run */
	if ((o->sub == NC_BENCH_INIT_ONCE || o->sub == NC_BENCH_FLOOR_ONCE) &&
	    (o->quick || o->plot_dir)) {
		snprintf(why, whylen, "%s takes no other option",
			 o->sub == NC_BENCH_INIT_ONCE ? "--init-once" : "--floor-once");
		return -1;
	}
	return 0;
}
