/* SPDX-License-Identifier: MIT */
/* What the exporters share: the merged event stream with an optional
 * progress line, names, and text escaping. */
#include "export.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Which machine each file is from: files with one host name share a
 * system clock, whose UTC error is common to them (their merge on Unix
 * time orders them); files of different hosts compare through their UTC
 * intervals only. */
static unsigned host_of(struct nc_trace_reader *const *r, unsigned i)
{
	struct nc_trace_info a, b;
	nc_trace_read_info(r[i], &a);
	for (unsigned j = 0; j < i; j++) {
		nc_trace_read_info(r[j], &b);
		if (strcmp(a.host, b.host) == 0)
			return host_of(r, j);
	}
	return i;
}

struct span {
	int64_t e, l;
};
static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return (x->e > y->e) - (x->e < y->e);
}

/* An event is concurrent when its UTC interval overlaps that of an event
 * of another machine: neither can be said to come first (nc_utc_order
 * gives 0; an unknown interval overlaps everything).  A first pass over
 * the merge collects the intervals (16 bytes and a host number per event:
 * the one place the export keeps per-event state, and only for traces of
 * several machines); per machine, sorted by earliest end with a running
 * maximum of the latest, an interval [E, L] overlaps one of that machine's
 * iff the largest latest among those with earliest <= L is >= E. */
struct spans {
	struct span *all;    /* each event's UTC interval, in the merge's order */
	unsigned char *host; /* ... and its machine */
	uint64_t n;
	uint64_t count[256]; /* events per machine */
};

/* The first pass over the merge: every event's interval and machine.  0
 * or an error; what was allocated is in *s either way. */
static int collect_spans(const struct tool_export *x, const unsigned *host, struct spans *s)
{
	struct nc_trace_merge *m;
	int rc = nc_trace_merge_open(&m, x->r, x->n);
	if (rc)
		return rc;
	uint64_t cap = x->total ? x->total : 1;
	s->all = malloc(cap * sizeof(*s->all));
	s->host = malloc(cap);
	rc = s->all && s->host ? 0 : NC_TRACE_ENOMEM;
	struct nc_trace_rec e;
	while (!rc && nc_trace_merge_next(m, &e)) {
		if (s->n == cap) { /* more events than the files' totals said */
			struct span *a2 = realloc(s->all, 2 * cap * sizeof(*s->all));
			unsigned char *h2 = a2 ? realloc(s->host, 2 * cap) : NULL;
			if (a2)
				s->all = a2;
			if (!h2) {
				rc = NC_TRACE_ENOMEM;
				break;
			}
			s->host = h2;
			cap *= 2;
		}
		struct nc_utc u;
		nc_trace_read_utc(x->r[e.file], e.ticks, &u);
		s->all[s->n].e = u.earliest_ns; /* INT64_MIN..MAX when unknown */
		s->all[s->n].l = u.latest_ns;
		s->host[s->n] = (unsigned char)host[e.file];
		s->count[s->host[s->n]]++;
		s->n++;
	}
	if (!rc)
		rc = nc_trace_merge_error(m);
	nc_trace_merge_close(m);
	return rc;
}

/* Does one of a machine's intervals (sorted, l a running maximum) overlap
 * sp?  The last with earliest <= sp's latest reaches sp's earliest. */
static int overlaps(const struct span *per, uint64_t count, struct span sp)
{
	uint64_t lo = 0, hi = count;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (per[mid].e <= sp.l)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && per[lo - 1].l >= sp.e;
}

static int mark_concurrent(struct tool_export *x)
{
	unsigned host[256], hosts = 0;
	for (unsigned i = 0; i < x->n && i < 256; i++) {
		host[i] = host_of(x->r, i);
		if (host[i] == i)
			hosts++;
	}
	x->hosts = (int)hosts;
	if (x->n > 256)
		return NC_EINVAL; /* the tool takes at most 256 */
	if (hosts < 2)
		return 0;
	struct spans s = {0};
	int rc = collect_spans(x, host, &s);
	struct span *per[256] = {0};
	for (unsigned h = 0; !rc && h < 256; h++) {
		if (!s.count[h])
			continue;
		per[h] = malloc(s.count[h] * sizeof(*per[h]));
		if (!per[h])
			rc = NC_TRACE_ENOMEM;
	}
	if (!rc) {
		uint64_t k[256] = {0};
		for (uint64_t i = 0; i < s.n; i++)
			per[s.host[i]][k[s.host[i]]++] = s.all[i];
		for (unsigned h = 0; h < 256; h++) {
			if (!s.count[h])
				continue;
			qsort(per[h], s.count[h], sizeof(*per[h]), cmp_span);
			for (uint64_t i = 1; i < s.count[h]; i++) /* l: running maximum */
				if (per[h][i].l < per[h][i - 1].l)
					per[h][i].l = per[h][i - 1].l;
		}
		x->conc = calloc(s.n / 8 + 1, 1);
		if (!x->conc)
			rc = NC_TRACE_ENOMEM;
	}
	for (uint64_t i = 0; !rc && i < s.n; i++)
		for (unsigned h = 0; h < 256; h++)
			if (s.count[h] && h != s.host[i] && overlaps(per[h], s.count[h], s.all[i])) {
				x->conc[i / 8] |= (uint8_t)(1u << (i % 8));
				x->nconc++;
				break;
			}
	for (unsigned h = 0; h < 256; h++)
		free(per[h]);
	free(s.all);
	free(s.host);
	return rc;
}

int tool_export_begin(struct tool_export *x, struct nc_trace_reader *const *r, const char *const *names,
		    unsigned n, int progress)
{
	memset(x, 0, sizeof(*x));
	x->r = r;
	x->names = names;
	x->n = n;
	x->by_unix = n > 1;
	x->progress = progress;
	for (unsigned i = 0; i < n; i++) {
		struct nc_trace_info in;
		nc_trace_read_info(r[i], &in);
		x->total += in.events;
	}
	x->last_print_ns = mono_ns();
	x->next_look = 65536;
	int rc = mark_concurrent(x);
	if (rc)
		return rc;
	return nc_trace_merge_open(&x->m, r, n);
}

int tool_export_next(struct tool_export *x, struct nc_trace_rec *e)
{
	if (!nc_trace_merge_next(x->m, e))
		return 0;
	nc_trace_read_utc(x->r[e->file], e->ticks, &x->utc);
	uint64_t i = x->done;
	x->concurrent = x->conc && (x->conc[i / 8] >> (i % 8) & 1);
	if (++x->done >= x->next_look && x->progress) {
		/* at most one line a second; looking at the clock every 64 Ki events */
		x->next_look = x->done + 65536;
		int64_t now = mono_ns();
		if (now - x->last_print_ns >= 1000000000) {
			x->last_print_ns = now;
			fprintf(stderr, "\rnanoclock trace export: %" PRIu64 " of %" PRIu64 " events (%.0f%%)",
				x->done, x->total, x->total ? 100.0 * (double)x->done / (double)x->total : 100.0);
			x->progress = 2; /* a line to clear at the end */
		}
	}
	return 1;
}

int tool_export_end(struct tool_export *x)
{
	int rc = x->m ? nc_trace_merge_error(x->m) : 0;
	nc_trace_merge_close(x->m);
	x->m = NULL;
	free(x->conc);
	x->conc = NULL;
	if (x->progress == 2)
		fprintf(stderr, "\r%60s\r", "");
	return rc;
}

const char *tool_export_ev_name(const struct tool_export *x, unsigned file, unsigned id, char *buf,
			      size_t len)
{
	const char *n = nc_trace_read_name(x->r[file], id);
	if (n && n[0])
		return n;
	snprintf(buf, len, "event %u", id);
	return buf;
}

void tool_export_clean(char *dst, size_t dlen, const char *src)
{
	size_t i = 0;
	for (; src && src[i] && i + 1 < dlen; i++) {
		unsigned char c = (unsigned char)src[i];
		dst[i] = c < 0x20 || c >= 0x7f ? '?' : (char)c;
	}
	if (dlen)
		dst[i < dlen ? i : dlen - 1] = 0;
}

void tool_export_jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f) /* bytes from the file: kept ASCII */
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void tool_export_jnum(FILE *f, const char *fmt, double v)
{
	if (isfinite(v))
		fprintf(f, fmt, v);
	else
		fputs("null", f);
}
