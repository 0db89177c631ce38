/* SPDX-License-Identifier: MIT */
/*
 * Chrome Trace Event JSON (the legacy format Perfetto's UI, chrome://tracing
 * and DevTools-model readers load).  What independent readers need:
 *   - metadata events (process and thread names) carry "cat" and "ts"
 *     like every other event (a reader crashed on them without);
 *   - a slice's begin and end arguments use different keys ("arg", "seq",
 *     "ticks", "unix_ns" at the begin, "end_arg", ... at the end): readers
 *     that merge a B/E pair's arguments into one slice keep both instead
 *     of overwriting the begin's with the end's and warning per slice;
 *   - instants are thread-scoped ("s": "t"); counters put their value
 *     under the event's name.
 * "ts" is microseconds with three decimals (ns) from the earliest event:
 * CLOCK_MONOTONIC_RAW for one file, Unix time across files.  otherData
 * carries each file's clock record: counter, rate and uncertainty, Unix
 * tie and its width, UTC bound, cross-CPU verdict.
 */
#include "export.h"

#include <inttypes.h>
#include <nanoclock.h>
#include <string.h>

/* microseconds from origin, with ns decimals */
static void rel_us(FILE *f, int64_t v, int64_t origin)
{
	int64_t d;
	if (__builtin_sub_overflow(v, origin, &d))
		d = v < origin ? INT64_MIN + 1 : INT64_MAX;
	uint64_t a = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
	fprintf(f, "%s%" PRIu64 ".%03" PRIu64, d < 0 ? "-" : "", a / 1000, a % 1000);
}

static const char *verdict_name(int v)
{
	return v == 0 ? "consistent" : v == 1 ? "inconsistent" : v == 2 ? "inconclusive" : "not run";
}

static void clock_record(FILE *f, const struct tool_export *x, unsigned i)
{
	struct nc_trace_info in;
	nc_trace_read_info(x->r[i], &in);
	fprintf(f, "%s\n   {\"file\": ", i ? "," : "");
	tool_export_jstr(f, x->names ? x->names[i] : "trace");
	fprintf(f, ", \"pid\": %u, \"host\": ", in.pid);
	tool_export_jstr(f, in.host);
	fprintf(f, ", \"counter\": ");
	tool_export_jstr(f, in.counter);
	fprintf(f, ", \"hz\": ");
	tool_export_jnum(f, "%.3f", in.hz);
	fprintf(f, ", \"hz_ppm\": ");
	tool_export_jnum(f, "%.6g", in.hz_ppm);
	fprintf(f, ", \"unix_tie_error_ns\": ");
	tool_export_jnum(f, "%.1f", in.tie_error_ns);
	fprintf(f, ", \"utc_error_ns\": ");
	if (in.utc_error_ns >= 0)
		tool_export_jnum(f, "%.0f", in.utc_error_ns);
	else
		fputs("null", f);
	fprintf(f, ", \"max_anchor_halfwidth_ns\": ");
	tool_export_jnum(f, "%.1f", in.max_anchor_halfwidth_ns);
	fprintf(f, ", \"cross_cpu\": \"%s\"}", verdict_name(in.sync_verdict));
}

/* The text every export starts with, up to the version: also how an
 * earlier one is recognised (a JSON reader sees an ordinary key). */
#define HEAD "{\"displayTimeUnit\": \"ns\",\n \"otherData\": {\"generator\": \"nanoclock "

int tool_export_chrome_is_ours(const unsigned char *head, size_t n)
{
	return n >= sizeof(HEAD) - 1 && !memcmp(head, HEAD, sizeof(HEAD) - 1);
}

/* The time origin: the earliest event (mono for one file, Unix time
 * across files); *origin_unix, its Unix time */
static int64_t time_origin(const struct tool_export *x, int64_t *origin_unix)
{
	int have = 0;
	int64_t origin = 0;
	*origin_unix = 0;
	for (unsigned i = 0; i < x->n; i++) {
		struct nc_trace_info in;
		nc_trace_read_info(x->r[i], &in);
		if (!in.events)
			continue;
		int64_t o = x->by_unix ? in.first_unix_ns : in.first_mono_ns;
		if (!have || o < origin) {
			origin = o;
			*origin_unix = in.first_unix_ns;
		}
		have = 1;
	}
	return origin;
}

/* The metadata records: each file a process, its threads named */
static void name_records(FILE *f, const struct tool_export *x)
{
	for (unsigned i = 0; i < x->n; i++) {
		struct nc_trace_info in;
		nc_trace_read_info(x->r[i], &in);
		fprintf(f, "%s\n  {\"ph\": \"M\", \"cat\": \"__metadata\", \"name\": \"process_name\", "
			   "\"pid\": %u, \"tid\": 0, \"ts\": 0, \"args\": {\"name\": ",
			i ? "," : "", i + 1);
		char pn[160];
		snprintf(pn, sizeof(pn), "%s: pid %u on %s", x->names ? x->names[i] : "trace", in.pid,
			 in.host[0] ? in.host : "?");
		tool_export_jstr(f, pn);
		fprintf(f, "}}");
		for (unsigned k = 0; k < in.threads; k++) {
			struct nc_trace_thread_info t;
			nc_trace_read_thread(x->r[i], k, &t);
			char tn[80];
			snprintf(tn, sizeof(tn), "%s (tid %" PRId64 ")", t.name[0] ? t.name : "thread",
				 t.tid);
			fprintf(f, ",\n  {\"ph\": \"M\", \"cat\": \"__metadata\", \"name\": "
				   "\"thread_name\", \"pid\": %u, \"tid\": %u, \"ts\": 0, \"args\": "
				   "{\"name\": ",
				i + 1, k + 1);
			tool_export_jstr(f, tn);
			fprintf(f, "}}");
		}
	}
}

/* One event's record (first: no comma before it) */
static void event_record(FILE *f, const struct tool_export *x, const struct nc_trace_rec *e,
			 int64_t origin, int first)
{
	static const char ph[] = {'i', 'B', 'E', 'C'};
	char nb[32];
	const char *nm = tool_export_ev_name(x, e->file, e->id, nb, sizeof(nb));
	fprintf(f, "%s\n  {\"ph\": \"%c\", \"name\": ", first ? "" : ",",
		e->kind < 4 ? ph[e->kind] : 'i');
	tool_export_jstr(f, nm);
	fprintf(f, ", \"cat\": \"nanoclock\", \"pid\": %u, \"tid\": %u, \"ts\": ", e->file + 1,
		e->thread + 1);
	rel_us(f, x->by_unix ? e->unix_ns : e->mono_ns, origin);
	if (e->kind == NC_TRACE_COUNTER) {
		fprintf(f, ", \"args\": {");
		tool_export_jstr(f, nm);
		fprintf(f, ": %" PRIu64 "}}", e->arg);
		return;
	}
	if (e->kind == NC_TRACE_INSTANT || e->kind >= 4)
		fprintf(f, ", \"s\": \"t\"");
	/* an end's keys differ from its begin's: merged into one slice,
	 * both sets stay */
	const char *p = e->kind == NC_TRACE_END ? "end_" : "";
	fprintf(f, ", \"args\": {\"%sarg\": %" PRIu64 ", \"%sseq\": %" PRIu64
		   ", \"%sticks\": %" PRIu64 ", \"%sunix_ns\": %" PRId64,
		p, e->arg, p, e->seq, p, e->ticks, p, e->unix_ns);
	if (e->gseq != UINT64_MAX)
		fprintf(f, ", \"%sgseq\": %" PRIu64, p, e->gseq);
	if (e->cpu_ns >= 0)
		fprintf(f, ", \"%scpu_ns\": %" PRId64, p, e->cpu_ns);
	/* the UTC interval (a counter's args are its series: not there) */
	const struct nc_utc *u = &x->utc;
	if (u->status == NC_UTC_SYNCHRONISED || u->status == NC_UTC_FREE_RUNNING)
		fprintf(f, ", \"%sutc_earliest_ns\": %" PRId64 ", \"%sutc_latest_ns\": %" PRId64, p,
			u->earliest_ns, p, u->latest_ns);
	fprintf(f, ", \"%sutc_status\": \"%s\"", p, nc_utc_status_name(u->status));
	if (x->hosts > 1)
		fprintf(f, ", \"%sconcurrent\": %s", p, x->concurrent ? "true" : "false");
	fprintf(f, "}}");
}

int tool_export_chrome(FILE *f, struct tool_export *x)
{
	int64_t origin_unix, origin = time_origin(x, &origin_unix);
	fprintf(f, HEAD "%s\", \"time_origin_unix_ns\": %" PRId64 ", \"timebase\": \"%s\",\n  \"clocks\": [",
		nc_version(), origin_unix, x->by_unix ? "unix" : "CLOCK_MONOTONIC_RAW");
	for (unsigned i = 0; i < x->n; i++)
		clock_record(f, x, i);
	fprintf(f, "]},\n \"traceEvents\": [");
	name_records(f, x);
	int first = x->n == 0;
	struct nc_trace_rec e;
	while (tool_export_next(x, &e)) {
		event_record(f, x, &e, origin, first);
		first = 0;
	}
	fprintf(f, "\n]}\n");
	return 0;
}
