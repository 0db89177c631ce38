/* SPDX-License-Identifier: MIT */
/*
 * `nanoclock trace`: event traces (nanoclock_trace.h).
 *   trace stats FILE [--json]          what a trace holds: threads, events,
 *                                      losses, time span, stamp reconstruction
 *   trace export --format chrome|csv [-o OUT] FILE...
 *                                      every event with its full counter value,
 *                                      ns and Unix time, threads (and files)
 *                                      merged in time order
 *   trace demo FILE [options]          a producer/consumer workload, traced
 * A file that cannot be read, or is not a valid trace, gets one line on
 * stderr and exit status 1; bad usage exit status 2.
 */
#include "trace.h"
#include "args.h"

#include <nanoclock.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- output helpers ---- */
static void jstr(FILE *f, const char *s)
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

/* ns as seconds with 9 decimals, any sign */
static void secs(char *buf, size_t len, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	snprintf(buf, len, "%s%" PRIu64 ".%09" PRIu64, ns < 0 ? "-" : "", a / 1000000000u,
		 a % 1000000000u);
}

static void iso(char *buf, size_t len, int64_t ns)
{
	int64_t s = ns / 1000000000, r = ns % 1000000000;
	if (r < 0) {
		r += 1000000000;
		s--;
	}
	time_t tt = (time_t)s;
	struct tm tm;
	if (!gmtime_r(&tt, &tm)) {
		snprintf(buf, len, "?");
		return;
	}
	size_t l = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	if (l == 0) {
		snprintf(buf, len, "?");
		return;
	}
	snprintf(buf + l, len - l, ".%09" PRId64 "Z", r);
}

static const char *verdict_name(int v)
{
	return v == 0 ? "consistent" : v == 1 ? "inconsistent" : v == 2 ? "inconclusive" : "not run";
}

static const char *kind_name(unsigned k)
{
	static const char *n[] = {"instant", "begin", "end", "counter"};
	return k < 4 ? n[k] : "other";
}

/* ---- stats ---- */
void nc_trace_print_stats(FILE *f, const struct nc_trace_reader *r, const char *name, int json)
{
	struct nc_trace_info in;
	nc_trace_read_info(r, &in);
	int64_t span = (int64_t)((uint64_t)in.last_mono_ns - (uint64_t)in.first_mono_ns);
	uint64_t dropped = 0, overwritten = 0, nested = 0, late = 0;
	for (unsigned i = 0; i < in.threads; i++) {
		struct nc_trace_thread_info t;
		nc_trace_read_thread(r, i, &t);
		dropped += t.counts.dropped;
		overwritten += t.counts.overwritten;
		nested += t.counts.nested;
		late += t.counts.late;
	}
	char a[64], b[64], c[64];
	if (json) {
		fprintf(f, "{\n  \"file\": ");
		jstr(f, name);
		fprintf(f, ",\n  \"format\": \"%u.%u\",\n  \"closed\": %s,\n  \"counter\": ",
			in.version_major, in.version_minor, in.closed ? "true" : "false");
		jstr(f, in.counter);
		fprintf(f, ",\n  \"hz\": %.6f,\n  \"hz_ppm\": %.6g,\n  \"hz_final\": %.6f,\n"
			   "  \"hz_final_ppm\": %.6g,\n  \"host\": ",
			in.hz, in.hz_ppm, in.hz_final, in.hz_final_ppm);
		jstr(f, in.host);
		fprintf(f, ",\n  \"pid\": %u,\n  \"mode\": \"%s\",\n  \"cputime\": %s,\n"
			   "  \"global_seq\": %s,\n",
			in.pid, in.mode == NC_TRACE_OVERWRITE ? "overwrite" : "drop",
			(in.flags & NC_TRACE_CPUTIME) ? "true" : "false",
			(in.flags & NC_TRACE_GSEQ) ? "true" : "false");
		fprintf(f, "  \"unix_tie_error_ns\": %.1f,\n  \"utc_error_ns\": ", in.tie_error_ns);
		if (in.utc_error_ns >= 0)
			fprintf(f, "%.0f", in.utc_error_ns);
		else
			fprintf(f, "null");
		fprintf(f, ",\n  \"cross_cpu\": \"%s\",\n  \"cross_cpu_max_shift_ticks\": %" PRIu64 ",\n",
			verdict_name(in.sync_verdict), in.sync_max_shift_ticks);
		fprintf(f, "  \"threads\": %u,\n  \"events\": %" PRIu64 ",\n  \"blocks\": %" PRIu64
			   ",\n  \"dropped\": %" PRIu64 ",\n  \"dropped_nested\": %" PRIu64
			   ",\n  \"dropped_late\": %" PRIu64 ",\n  \"overwritten\": %" PRIu64
			   ",\n  \"sequence_gaps\": %" PRIu64 ",\n  \"events_missing\": %" PRIu64 ",\n",
			in.threads, in.events, in.blocks_read, dropped, nested, late, overwritten, in.gaps,
			in.missing);
		fprintf(f, "  \"first_ticks\": %" PRIu64 ",\n  \"last_ticks\": %" PRIu64
			   ",\n  \"first_mono_ns\": %" PRId64 ",\n  \"last_mono_ns\": %" PRId64
			   ",\n  \"first_unix_ns\": %" PRId64 ",\n  \"last_unix_ns\": %" PRId64
			   ",\n  \"span_ns\": %" PRId64 ",\n",
			in.first_ticks, in.last_ticks, in.first_mono_ns, in.last_mono_ns, in.first_unix_ns,
			in.last_unix_ns, in.events ? span : 0);
		fprintf(f, "  \"stamps\": {\"syncs\": %" PRIu64 ", \"anchors\": %" PRIu64
			   ", \"anchors_rejected\": %" PRIu64 ", \"max_anchor_halfwidth_ns\": %.1f"
			   ", \"anchor_rate_vs_stated_ppm\": %.4f, \"max_compact_delta_ticks\": %" PRIu64
			   ", \"backwards\": %" PRIu64 "},\n",
			in.syncs, in.anchors, in.anchors_rejected, in.max_anchor_halfwidth_ns,
			in.anchor_rate_ppm, in.max_delta_ticks, in.backwards);
		fprintf(f, "  \"per_thread\": [");
		for (unsigned i = 0; i < in.threads; i++) {
			struct nc_trace_thread_info t;
			nc_trace_read_thread(r, i, &t);
			fprintf(f, "%s\n    {\"thread\": %u, \"name\": ", i ? "," : "", i);
			jstr(f, t.name);
			fprintf(f, ", \"tid\": %" PRId64 ", \"events\": %" PRIu64 ", \"blocks\": %" PRIu64
				   ", \"first_seq\": %" PRIu64 ", \"last_seq\": %" PRIu64
				   ", \"gaps\": %" PRIu64 ", \"missing\": %" PRIu64 ", \"syncs\": %" PRIu64
				   ", \"max_compact_delta_ticks\": %" PRIu64 ", \"backwards\": %" PRIu64,
				t.tid, t.events, t.blocks, t.first_seq, t.last_seq, t.gaps, t.missing,
				t.syncs, t.max_delta_ticks, t.backwards);
			if (t.have_counts)
				fprintf(f, ", \"appended\": %" PRIu64 ", \"dropped\": %" PRIu64
					   ", \"dropped_nested\": %" PRIu64 ", \"dropped_late\": %" PRIu64
					   ", \"overwritten\": %" PRIu64,
					t.counts.events, t.counts.dropped, t.counts.nested, t.counts.late,
					t.counts.overwritten);
			fprintf(f, "}");
		}
		fprintf(f, "%s]\n}\n", in.threads ? "\n  " : "");
		return;
	}
	fprintf(f, "trace %s: format %u.%u, %s\n", name, in.version_major, in.version_minor,
		in.closed ? "closed" : "NOT closed (no totals record: the writer did not finish)");
	fprintf(f, "clock        %s at %.6f MHz ± %.3g ppm", in.counter, in.hz / 1e6, in.hz_ppm);
	if (in.hz_final > 0)
		fprintf(f, " (at close %.6f MHz ± %.3g ppm)", in.hz_final / 1e6, in.hz_final_ppm);
	fprintf(f, "; host %s, pid %u\n", in.host[0] ? in.host : "?", in.pid);
	fprintf(f, "unix tie     ±%.0f ns to CLOCK_REALTIME; ", in.tie_error_ns);
	if (in.utc_error_ns >= 0)
		fprintf(f, "±%.3f ms to UTC", in.utc_error_ns / 1e6);
	else
		fprintf(f, "error from UTC unknown");
	fprintf(f, "; cross-CPU check %s", verdict_name(in.sync_verdict));
	if (in.sync_verdict >= 0)
		fprintf(f, " (%u CPUs, max shift %" PRIu64 " ticks)", in.sync_ncpus,
			in.sync_max_shift_ticks);
	fprintf(f, "\nrecording    %s mode, %u blocks of %u bytes per thread%s%s\n",
		in.mode == NC_TRACE_OVERWRITE ? "overwrite" : "drop", in.blocks, in.block_bytes,
		(in.flags & NC_TRACE_CPUTIME) ? ", thread CPU time per event" : "",
		(in.flags & NC_TRACE_GSEQ) ? ", global sequence number per event" : "");
	if (in.events) {
		secs(a, sizeof(a), span);
		iso(b, sizeof(b), in.first_unix_ns);
		iso(c, sizeof(c), in.last_unix_ns);
		fprintf(f, "time span    %s s: %s .. %s\n", a, b, c);
	} else {
		fprintf(f, "time span    (no events)\n");
	}
	fprintf(f, "events       %" PRIu64 " in %u threads, %" PRIu64 " blocks; dropped %" PRIu64
		   " (ring full) + %" PRIu64 " (signal handler nesting) + %" PRIu64
		   " (after thread end), overwritten %" PRIu64 "\n",
		in.events, in.threads, in.blocks_read, dropped, nested, late, overwritten);
	fprintf(f, "sequence     %" PRIu64 " gaps, %" PRIu64 " events missing\n", in.gaps, in.missing);
	fprintf(f, "stamps       %" PRIu64 " sync records, %" PRIu64 " used as anchors (%" PRIu64
		   " rejected), widest ±%.0f ns; anchors' rate %+.3f ppm from the stated one\n"
		   "             largest compact delta %" PRIu64 " ticks (%.4f%% of 2^32); %" PRIu64
		   " events stamped below their predecessor\n",
		in.syncs, in.anchors, in.anchors_rejected, in.max_anchor_halfwidth_ns,
		in.anchor_rate_ppm, in.max_delta_ticks, (double)in.max_delta_ticks / 4294967296.0 * 100,
		in.backwards);
	fprintf(f, "threads      %4s %-20s %8s %10s %7s %12s %12s %6s %8s %8s\n", "#", "name", "tid",
		"events", "blocks", "first seq", "last seq", "gaps", "missing", "syncs");
	for (unsigned i = 0; i < in.threads; i++) {
		struct nc_trace_thread_info t;
		nc_trace_read_thread(r, i, &t);
		char nm[40];
		snprintf(nm, sizeof(nm), "%s", t.name);
		for (char *q = nm; *q; q++)
			if ((unsigned char)*q < 0x20 || (unsigned char)*q >= 0x7f)
				*q = '?';
		fprintf(f, "             %4u %-20s %8" PRId64 " %10" PRIu64 " %7" PRIu64 " %12" PRIu64
			   " %12" PRIu64 " %6" PRIu64 " %8" PRIu64 " %8" PRIu64 "\n",
			i, nm, t.tid, t.events, t.blocks, t.first_seq, t.last_seq, t.gaps, t.missing,
			t.syncs);
	}
}

/* ---- export ---- */
static const char *ev_name(const struct nc_trace_reader *r, unsigned id, char *buf, size_t len)
{
	const char *n = nc_trace_read_name(r, id);
	if (n && n[0])
		return n;
	snprintf(buf, len, "event %u", id);
	return buf;
}

/* microseconds from origin, with ns decimals */
static void rel_us(FILE *f, int64_t v, int64_t origin)
{
	int64_t d;
	if (__builtin_sub_overflow(v, origin, &d))
		d = v < origin ? INT64_MIN + 1 : INT64_MAX;
	uint64_t a = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
	fprintf(f, "%s%" PRIu64 ".%03" PRIu64, d < 0 ? "-" : "", a / 1000, a % 1000);
}

int nc_trace_print_export(FILE *f, struct nc_trace_reader *const *r, const char *const *names,
			  unsigned n, int chrome)
{
	struct nc_trace_merge *m;
	int rc = nc_trace_merge_open(&m, r, n);
	if (rc)
		return rc;
	/* the time origin for Chrome: the earliest event (mono for one file,
	 * Unix time across files) */
	int by_unix = n > 1, have = 0;
	int64_t origin = 0, origin_unix = 0;
	for (unsigned i = 0; i < n; i++) {
		struct nc_trace_info in;
		nc_trace_read_info(r[i], &in);
		if (!in.events)
			continue;
		int64_t o = by_unix ? in.first_unix_ns : in.first_mono_ns;
		if (!have || o < origin) {
			origin = o;
			origin_unix = in.first_unix_ns;
		}
		have = 1;
	}
	char nb[32];
	struct nc_trace_rec e;
	if (!chrome) {
		fprintf(f, "file,thread,thread_name,seq,gseq,kind,id,name,arg,ticks,mono_ns,unix_ns,"
			   "cpu_ns\n");
		while (nc_trace_merge_next(m, &e)) {
			struct nc_trace_thread_info t;
			nc_trace_read_thread(r[e.file], e.thread, &t);
			fprintf(f, "%u,%u,", e.file, e.thread);
			csv_str(f, t.name);
			fprintf(f, ",%" PRIu64 ",", e.seq);
			if (e.gseq != UINT64_MAX)
				fprintf(f, "%" PRIu64, e.gseq);
			fprintf(f, ",%s,%u,", kind_name(e.kind), e.id);
			csv_str(f, ev_name(r[e.file], e.id, nb, sizeof(nb)));
			fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRId64 ",%" PRId64 ",", e.arg, e.ticks,
				e.mono_ns, e.unix_ns);
			if (e.cpu_ns >= 0)
				fprintf(f, "%" PRId64, e.cpu_ns);
			fputc('\n', f);
		}
		nc_trace_merge_close(m);
		return 0;
	}
	fprintf(f, "{\"displayTimeUnit\": \"ns\",\n \"otherData\": {\"generator\": \"nanoclock %s\", "
		   "\"time_origin_unix_ns\": %" PRId64 ", \"timebase\": \"%s\"},\n \"traceEvents\": [",
		nc_version(), origin_unix, by_unix ? "unix" : "CLOCK_MONOTONIC_RAW");
	int first = 1;
	for (unsigned i = 0; i < n; i++) {
		struct nc_trace_info in;
		nc_trace_read_info(r[i], &in);
		fprintf(f, "%s\n  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %u, \"tid\": 0, "
			   "\"args\": {\"name\": ",
			first ? "" : ",", i + 1);
		first = 0;
		char pn[160];
		snprintf(pn, sizeof(pn), "%s: pid %u on %s", names ? names[i] : "trace", in.pid,
			 in.host[0] ? in.host : "?");
		jstr(f, pn);
		fprintf(f, "}}");
		for (unsigned k = 0; k < in.threads; k++) {
			struct nc_trace_thread_info t;
			nc_trace_read_thread(r[i], k, &t);
			char tn[80];
			snprintf(tn, sizeof(tn), "%s (tid %" PRId64 ")", t.name[0] ? t.name : "thread",
				 t.tid);
			fprintf(f, ",\n  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %u, \"tid\": "
				   "%u, \"args\": {\"name\": ",
				i + 1, k + 1);
			jstr(f, tn);
			fprintf(f, "}}");
		}
	}
	static const char ph[] = {'i', 'B', 'E', 'C'};
	while (nc_trace_merge_next(m, &e)) {
		const char *nm = ev_name(r[e.file], e.id, nb, sizeof(nb));
		fprintf(f, ",\n  {\"ph\": \"%c\", \"name\": ", e.kind < 4 ? ph[e.kind] : 'i');
		jstr(f, nm);
		fprintf(f, ", \"cat\": \"nanoclock\", \"pid\": %u, \"tid\": %u, \"ts\": ", e.file + 1,
			e.thread + 1);
		rel_us(f, by_unix ? e.unix_ns : e.mono_ns, origin);
		if (e.kind == NC_TRACE_COUNTER) {
			fprintf(f, ", \"args\": {");
			jstr(f, nm);
			fprintf(f, ": %" PRIu64 "}}", e.arg);
			continue;
		}
		if (e.kind == NC_TRACE_INSTANT || e.kind >= 4)
			fprintf(f, ", \"s\": \"t\"");
		fprintf(f, ", \"args\": {\"arg\": %" PRIu64 ", \"seq\": %" PRIu64 ", \"ticks\": %" PRIu64
			   ", \"unix_ns\": %" PRId64,
			e.arg, e.seq, e.ticks, e.unix_ns);
		if (e.gseq != UINT64_MAX)
			fprintf(f, ", \"gseq\": %" PRIu64, e.gseq);
		if (e.cpu_ns >= 0)
			fprintf(f, ", \"cpu_ns\": %" PRId64, e.cpu_ns);
		fprintf(f, "}}");
	}
	fprintf(f, "\n]}\n");
	nc_trace_merge_close(m);
	return 0;
}

/* ---- demo: producers and consumers through a bounded queue ---- */
#define ID_PRODUCE 1
#define ID_CONSUME 2
#define ID_DEPTH 3
#define QCAP 64

struct demo {
	struct nc_trace *t;
	pthread_mutex_t mu;
	pthread_cond_t not_empty, not_full;
	uint64_t q[QCAP];
	unsigned head, count;
	long items;        /* per producer */
	int producers_left;
	int err;
};

static uint64_t work(uint64_t x, int rounds)
{
	for (int i = 0; i < rounds; i++) { /* xorshift: a little CPU per item */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

static void *producer(void *arg)
{
	struct demo *d = arg;
	struct nc_trace_buf *b;
	if (nc_trace_thread_start(d->t, "producer", &b) != 0) {
		d->err = 1;
		b = NULL; /* appends to NULL record nothing; the queue still runs */
	}
	uint64_t x = (uint64_t)(uintptr_t)&b | 1;
	for (long i = 0; i < d->items; i++) {
		nc_trace_begin(b, ID_PRODUCE, (uint64_t)i);
		x = work(x, 200 + (int)(x & 511));
		nc_trace_end(b, ID_PRODUCE, (uint64_t)i);
		pthread_mutex_lock(&d->mu);
		while (d->count == QCAP)
			pthread_cond_wait(&d->not_full, &d->mu);
		d->q[(d->head + d->count++) % QCAP] = x;
		unsigned depth = d->count;
		pthread_cond_signal(&d->not_empty);
		pthread_mutex_unlock(&d->mu);
		nc_trace_counter(b, ID_DEPTH, depth);
	}
	pthread_mutex_lock(&d->mu);
	d->producers_left--;
	pthread_cond_broadcast(&d->not_empty);
	pthread_mutex_unlock(&d->mu);
	nc_trace_thread_end(b);
	return NULL;
}

static void *consumer(void *arg)
{
	struct demo *d = arg;
	struct nc_trace_buf *b;
	if (nc_trace_thread_start(d->t, "consumer", &b) != 0) {
		d->err = 1;
		b = NULL;
	}
	for (;;) {
		pthread_mutex_lock(&d->mu);
		while (d->count == 0 && d->producers_left > 0)
			pthread_cond_wait(&d->not_empty, &d->mu);
		if (d->count == 0) {
			pthread_mutex_unlock(&d->mu);
			break;
		}
		uint64_t x = d->q[d->head];
		d->head = (d->head + 1) % QCAP;
		d->count--;
		pthread_cond_signal(&d->not_full);
		pthread_mutex_unlock(&d->mu);
		nc_trace_begin(b, ID_CONSUME, x & 0xffff);
		work(x, 100 + (int)(x & 255));
		nc_trace_end(b, ID_CONSUME, x & 0xffff);
	}
	nc_trace_thread_end(b);
	return NULL;
}

/* A bad command line: one line on stderr naming the problem, exit 2 (the
 * tool's convention; nanoclock --help lists the options). */
static int bad(const char *cmd, const char *what, const char *arg)
{
	char q[48];
	if (arg)
		fprintf(stderr, "nanoclock trace%s%s: %s '%s' (nanoclock --help)\n", cmd[0] ? " " : "",
			cmd, what, nc_arg_quote(arg, q, sizeof(q)));
	else
		fprintf(stderr, "nanoclock trace%s%s: %s (nanoclock --help)\n", cmd[0] ? " " : "", cmd, what);
	return 2;
}

static int cmd_demo(int argc, char **argv)
{
	const char *path = NULL;
	long threads = 2, items = 20000, bb = 65536, nb = 16;
	struct nc_trace_config c;
	nc_trace_default_config(&c);
	char why[160];
	for (int i = 3; i < argc; i++) {
		const char *o = argv[i];
		long *target = !strcmp(o, "--threads")       ? &threads
			       : !strcmp(o, "--items")       ? &items
			       : !strcmp(o, "--block-bytes") ? &bb
			       : !strcmp(o, "--blocks")      ? &nb
							     : NULL;
		if (target) {
			long lo = target == &threads ? 1 : target == &items ? 1 : target == &bb ? 512 : 2;
			long hi = target == &threads ? 64 : target == &items ? 100000000 : target == &bb ? 16777216 : 65536;
			if (i + 1 >= argc || nc_arg_long(o, argv[++i], lo, hi, target, why, sizeof(why))) {
				fprintf(stderr, "nanoclock trace demo: %s\n",
					i < argc ? why : "option needs a value");
				return 2;
			}
		} else if (!strcmp(o, "--overwrite")) {
			c.mode = NC_TRACE_OVERWRITE;
		} else if (!strcmp(o, "--cputime")) {
			c.flags |= NC_TRACE_CPUTIME;
		} else if (!strcmp(o, "--gseq")) {
			c.flags |= NC_TRACE_GSEQ;
		} else if (!strcmp(o, "--sync-check")) {
			c.flags |= NC_TRACE_SYNC_CHECK;
		} else if (o[0] != '-' && !path) {
			path = o;
		} else {
			return bad("demo", path && o[0] != '-' ? "one FILE only, not also" : "unknown option", o);
		}
	}
	if (!path)
		return bad("demo", "a FILE to write is needed", NULL);
	if (bb & (bb - 1)) {
		fprintf(stderr, "nanoclock trace demo: --block-bytes: %ld is not a power of two\n", bb);
		return 2;
	}
	c.block_bytes = (unsigned)bb;
	c.blocks = (unsigned)nb;
	c.max_threads = (unsigned)(2 * threads);
	struct demo d;
	memset(&d, 0, sizeof(d));
	pthread_mutex_init(&d.mu, NULL);
	pthread_cond_init(&d.not_empty, NULL);
	pthread_cond_init(&d.not_full, NULL);
	d.items = items;
	d.producers_left = (int)threads;
	int rc = nc_trace_open(&d.t, path, &c);
	if (rc) {
		fprintf(stderr, "nanoclock trace demo: %s: %s\n", path, nc_trace_strerror(rc));
		return 1;
	}
	nc_trace_name(d.t, ID_PRODUCE, "produce");
	nc_trace_name(d.t, ID_CONSUME, "consume");
	nc_trace_name(d.t, ID_DEPTH, "queue depth");
	pthread_t th[128];
	int started = 0;
	uint64_t t0 = nc_now_ns();
	for (long i = 0; i < 2 * threads; i++) {
		if (pthread_create(&th[started], NULL, i % 2 ? consumer : producer, &d) != 0) {
			fprintf(stderr, "nanoclock trace demo: cannot start a thread\n");
			/* a missing producer would leave consumers waiting */
			pthread_mutex_lock(&d.mu);
			if (i % 2 == 0)
				d.producers_left--;
			pthread_cond_broadcast(&d.not_empty);
			pthread_mutex_unlock(&d.mu);
			d.err = 1;
			continue;
		}
		started++;
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	uint64_t t1 = nc_now_ns();
	rc = nc_trace_close(d.t);
	if (rc) {
		fprintf(stderr, "nanoclock trace demo: %s: %s\n", path, nc_trace_strerror(rc));
		return 1;
	}
	printf("wrote %s: %ld producers and %ld consumers, %ld items each producer, %.3f ms\n"
	       "next:  nanoclock trace stats %s\n"
	       "       nanoclock trace export --format chrome -o trace.json %s   (open in "
	       "https://ui.perfetto.dev or chrome://tracing)\n",
	       path, threads, threads, items, (double)(t1 - t0) / 1e6, path, path);
	return d.err ? 1 : 0;
}

/* ---- the command ---- */
static int open_trace(const char *path, struct nc_trace_reader **r)
{
	char why[256];
	int rc = nc_trace_read_file(r, path, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "nanoclock trace: %s: %s\n", path, why[0] ? why : nc_trace_strerror(rc));
		return 1;
	}
	return 0;
}

static int finish_out(FILE *f, const char *out)
{
	int bad = ferror(f);
	if (f != stdout)
		bad |= fclose(f) != 0;
	else
		bad |= fflush(f) != 0;
	if (bad) {
		fprintf(stderr, "nanoclock trace: %s: write error\n", out ? out : "standard output");
		return 1;
	}
	return 0;
}

static int cmd_stats(int argc, char **argv)
{
	const char *path = NULL;
	int json = 0;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!path && (argv[i][0] != '-' || !argv[i][1]))
			path = argv[i];
		else
			return bad("stats", path && argv[i][0] != '-' ? "one FILE only, not also" : "unknown option",
				   argv[i]);
	}
	if (!path)
		return bad("stats", "a FILE to read is needed", NULL);
	struct nc_trace_reader *r;
	if (open_trace(path, &r))
		return 1;
	nc_trace_print_stats(stdout, r, path, json);
	nc_trace_read_close(r);
	return finish_out(stdout, NULL);
}

static int cmd_export(int argc, char **argv)
{
	int chrome = -1;
	const char *out = NULL;
	const char **files = calloc((size_t)argc, sizeof(*files));
	unsigned n = 0;
	if (!files)
		return 1;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--format") && i + 1 < argc) {
			i++;
			if (!strcmp(argv[i], "chrome"))
				chrome = 1;
			else if (!strcmp(argv[i], "csv"))
				chrome = 0;
			else {
				free(files);
				return bad("export", "--format: not chrome or csv:", argv[i]);
			}
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (argv[i][0] != '-') {
			files[n++] = argv[i];
		} else {
			free(files);
			return bad("export",
				   !strcmp(argv[i], "--format") || !strcmp(argv[i], "-o") ? "a value is needed after"
											: "unknown option",
				   argv[i]);
		}
	}
	if (chrome < 0 || n == 0) {
		free(files);
		return bad("export", chrome < 0 ? "--format chrome or --format csv is needed" : "a FILE to read is needed",
			   NULL);
	}
	struct nc_trace_reader **r = calloc(n, sizeof(*r));
	int rc = r ? 0 : 1;
	for (unsigned i = 0; i < n && !rc; i++)
		rc = open_trace(files[i], &r[i]);
	FILE *f = NULL;
	if (!rc) {
		f = out ? fopen(out, "w") : stdout;
		if (!f) {
			fprintf(stderr, "nanoclock trace: %s: cannot create\n", out);
			rc = 1;
		}
	}
	if (!rc) {
		int e = nc_trace_print_export(f, r, files, n, chrome);
		if (e) {
			fprintf(stderr, "nanoclock trace: %s\n", nc_trace_strerror(e));
			rc = 1;
		}
		rc |= finish_out(f, out);
	}
	for (unsigned i = 0; r && i < n; i++)
		nc_trace_read_close(r[i]);
	free(r);
	free(files);
	return rc;
}

int nc_trace_main(int argc, char **argv)
{
	const char *sub = argc >= 3 ? argv[2] : "";
	if (!strcmp(sub, "stats"))
		return cmd_stats(argc, argv);
	if (!strcmp(sub, "export"))
		return cmd_export(argc, argv);
	if (!strcmp(sub, "demo"))
		return cmd_demo(argc, argv);
	if (!sub[0])
		return bad("", "a command is needed: stats, export or demo", NULL);
	return bad("", "unknown command (stats, export or demo):", sub);
}
