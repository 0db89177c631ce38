/* SPDX-License-Identifier: MIT */
/* CSV export: one line per event with every number nanoclock has for it
 * (the reference the other exports are compared with in the tests). */
#include "export.h"

#include <inttypes.h>
#include <string.h>

static const char *kind_name(unsigned k)
{
	static const char *n[] = {"instant", "begin", "end", "counter"};
	return k < 4 ? n[k] : "other";
}

static void csv_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"')
			fputs("\"\"", f);
		else
			fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
	}
	fputc('"', f);
}

/* the first line: also how an earlier CSV export is recognised */
static const char header[] = "file,thread,thread_name,seq,gseq,kind,id,name,arg,ticks,mono_ns,"
			     "unix_ns,cpu_ns,utc_earliest_ns,utc_latest_ns,utc_status,concurrent\n";
/* before the UTC columns (an export of 0.3.0's first builds) */
static const char header_0[] =
	"file,thread,thread_name,seq,gseq,kind,id,name,arg,ticks,mono_ns,unix_ns,cpu_ns\n";

int tool_export_csv_is_ours(const unsigned char *head, size_t n)
{
	return (n >= sizeof(header) - 1 && !memcmp(head, header, sizeof(header) - 1)) ||
	       (n >= sizeof(header_0) - 1 && !memcmp(head, header_0, sizeof(header_0) - 1));
}

int tool_export_csv(FILE *f, struct tool_export *x)
{
	char nb[32];
	struct nc_trace_rec e;
	fputs(header, f);
	while (tool_export_next(x, &e)) {
		struct nc_trace_thread_info t;
		nc_trace_read_thread(x->r[e.file], e.thread, &t);
		fprintf(f, "%u,%u,", e.file, e.thread);
		csv_str(f, t.name);
		fprintf(f, ",%" PRIu64 ",", e.seq);
		if (e.gseq != UINT64_MAX)
			fprintf(f, "%" PRIu64, e.gseq);
		fprintf(f, ",%s,%u,", kind_name(e.kind), e.id);
		csv_str(f, tool_export_ev_name(x, e.file, e.id, nb, sizeof(nb)));
		fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRId64 ",%" PRId64 ",", e.arg, e.ticks, e.mono_ns,
			e.unix_ns);
		if (e.cpu_ns >= 0)
			fprintf(f, "%" PRId64, e.cpu_ns);
		/* the interval, empty when unknown; concurrent: it overlaps an
		 * event of another machine (1), or not (0) */
		const struct nc_utc *u = &x->utc;
		if (u->status == NC_UTC_SYNCHRONISED || u->status == NC_UTC_FREE_RUNNING)
			fprintf(f, ",%" PRId64 ",%" PRId64, u->earliest_ns, u->latest_ns);
		else
			fputs(",,", f);
		fprintf(f, ",%s,%d\n", nc_utc_status_name(u->status), x->concurrent);
	}
	return 0;
}
