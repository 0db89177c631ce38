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
#include "export.h"
#include "out_file.h"

#include <nanoclock.h>

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- output helpers ---- */
#define jstr tool_export_jstr

/* Standard output's write error (a full disk, /dev/full, a closed pipe):
 * one line, and the command fails. */
static int stdout_failed(void)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return 0;
	fprintf(stderr, "nanoclock trace: standard output: write error%s%s\n", errno ? ": " : "",
		errno ? strerror(errno) : "");
	return 1;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

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

/* ---- stats ---- */
/* What the threads' counts add up to (hostile totals saturate instead of
 * wrapping) */
struct losses {
	uint64_t dropped, overwritten, nested, late;
};
static struct losses losses_of(const struct nc_trace_reader *r, unsigned threads)
{
	struct losses l = {0, 0, 0, 0};
	for (unsigned i = 0; i < threads; i++) {
		struct nc_trace_thread_info t;
		nc_trace_read_thread(r, i, &t);
		l.dropped = sat_add(l.dropped, t.counts.dropped);
		l.overwritten = sat_add(l.overwritten, t.counts.overwritten);
		l.nested = sat_add(l.nested, t.counts.nested);
		l.late = sat_add(l.late, t.counts.late);
	}
	return l;
}

static void stats_json_threads(FILE *f, const struct nc_trace_reader *r, unsigned threads)
{
	fprintf(f, "  \"per_thread\": [");
	for (unsigned i = 0; i < threads; i++) {
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
	fprintf(f, "%s]", threads ? "\n  " : "");
}

static void stats_json(FILE *f, const struct nc_trace_reader *r, const char *name,
		       const struct nc_trace_info *in, const struct losses *l, int64_t span)
{
	fprintf(f, "{\n  \"file\": ");
	jstr(f, name);
	fprintf(f, ",\n  \"format\": \"%u.%u\",\n  \"closed\": %s,\n  \"counter\": ",
		in->version_major, in->version_minor, in->closed ? "true" : "false");
	jstr(f, in->counter);
	/* numbers from the file may be NaN or infinite: null in JSON */
	fprintf(f, ",\n  \"hz\": ");
	tool_export_jnum(f, "%.6f", in->hz);
	fprintf(f, ",\n  \"hz_ppm\": ");
	tool_export_jnum(f, "%.6g", in->hz_ppm);
	fprintf(f, ",\n  \"hz_final\": ");
	tool_export_jnum(f, "%.6f", in->hz_final);
	fprintf(f, ",\n  \"hz_final_ppm\": ");
	tool_export_jnum(f, "%.6g", in->hz_final_ppm);
	fprintf(f, ",\n  \"host\": ");
	jstr(f, in->host);
	fprintf(f, ",\n  \"pid\": %u,\n  \"mode\": \"%s\",\n  \"cputime\": %s,\n"
		   "  \"global_seq\": %s,\n",
		in->pid, in->mode == NC_TRACE_OVERWRITE ? "overwrite" : "drop",
		(in->flags & NC_TRACE_CPUTIME) ? "true" : "false",
		(in->flags & NC_TRACE_GSEQ) ? "true" : "false");
	fprintf(f, "  \"unix_tie_error_ns\": ");
	tool_export_jnum(f, "%.1f", in->tie_error_ns);
	fprintf(f, ",\n  \"utc_error_ns\": ");
	if (in->utc_error_ns >= 0)
		tool_export_jnum(f, "%.0f", in->utc_error_ns);
	else
		fprintf(f, "null");
	fprintf(f, ",\n  \"cross_cpu\": \"%s\",\n  \"cross_cpu_max_shift_ticks\": %" PRIu64 ",\n",
		verdict_name(in->sync_verdict), in->sync_max_shift_ticks);
	fprintf(f, "  \"shared_record\": \"%s\",\n  \"shared_record_path\": ",
		in->shared == 1 ? "adopted" : in->shared == 2 ? "written" : "none");
	jstr(f, in->shared_path);
	fprintf(f, ",\n  \"shared_record_writer_pid\": %u,\n  \"shared_record_generation\": %" PRIu64
		   ",\n",
		in->shared_writer_pid, in->shared_generation);
	fprintf(f, "  \"threads\": %u,\n  \"events\": %" PRIu64 ",\n  \"blocks\": %" PRIu64
		   ",\n  \"dropped\": %" PRIu64 ",\n  \"dropped_nested\": %" PRIu64
		   ",\n  \"dropped_late\": %" PRIu64 ",\n  \"overwritten\": %" PRIu64
		   ",\n  \"sequence_gaps\": %" PRIu64 ",\n  \"events_missing\": %" PRIu64 ",\n",
		in->threads, in->events, in->blocks_read, l->dropped, l->nested, l->late, l->overwritten,
		in->gaps, in->missing);
	fprintf(f, "  \"first_ticks\": %" PRIu64 ",\n  \"last_ticks\": %" PRIu64
		   ",\n  \"first_mono_ns\": %" PRId64 ",\n  \"last_mono_ns\": %" PRId64
		   ",\n  \"first_unix_ns\": %" PRId64 ",\n  \"last_unix_ns\": %" PRId64
		   ",\n  \"span_ns\": %" PRId64 ",\n",
		in->first_ticks, in->last_ticks, in->first_mono_ns, in->last_mono_ns, in->first_unix_ns,
		in->last_unix_ns, in->events ? span : 0);
	fprintf(f, "  \"stamps\": {\"syncs\": %" PRIu64 ", \"anchors\": %" PRIu64
		   ", \"anchors_rejected\": %" PRIu64 ", \"max_anchor_halfwidth_ns\": ",
		in->syncs, in->anchors, in->anchors_rejected);
	tool_export_jnum(f, "%.1f", in->max_anchor_halfwidth_ns);
	fprintf(f, ", \"anchor_rate_vs_stated_ppm\": ");
	tool_export_jnum(f, "%.4f", in->anchor_rate_ppm);
	fprintf(f, ", \"max_compact_delta_ticks\": %" PRIu64 ", \"backwards\": %" PRIu64 "},\n",
		in->max_delta_ticks, in->backwards);
	uint64_t used;
	char stop[256];
	int complete = nc_trace_read_complete(r, &used, stop, sizeof(stop));
	fprintf(f, "  \"complete\": %s,\n  \"bytes_read\": %" PRIu64 ",\n  \"stopped\": ",
		complete ? "true" : "false", used);
	if (complete)
		fprintf(f, "null");
	else
		jstr(f, stop);
	fprintf(f, ",\n");
	stats_json_threads(f, r, in->threads);
	fprintf(f, "\n}\n");
}

static void stats_text_threads(FILE *f, const struct nc_trace_reader *r, unsigned threads)
{
	fprintf(f, "threads      %4s %-20s %8s %10s %7s %12s %12s %6s %8s %8s\n", "#", "name", "tid",
		"events", "blocks", "first seq", "last seq", "gaps", "missing", "syncs");
	for (unsigned i = 0; i < threads; i++) {
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

static void stats_text(FILE *f, const struct nc_trace_reader *r, const char *name,
		       const struct nc_trace_info *in, const struct losses *l, int64_t span)
{
	char a[64], b[64], c[64];
	fprintf(f, "trace %s: format %u.%u, %s\n", name, in->version_major, in->version_minor,
		in->closed ? "closed" : "NOT closed (no totals record: the writer did not finish)");
	fprintf(f, "clock        %s at %.6f MHz ± %.3g ppm", in->counter, in->hz / 1e6, in->hz_ppm);
	if (in->hz_final > 0)
		fprintf(f, " (at close %.6f MHz ± %.3g ppm)", in->hz_final / 1e6, in->hz_final_ppm);
	fprintf(f, "; host %s, pid %u\n", in->host[0] ? in->host : "?", in->pid);
	fprintf(f, "unix tie     ±%.0f ns to CLOCK_REALTIME; ", in->tie_error_ns);
	if (in->utc_error_ns >= 0)
		fprintf(f, "±%.3f ms to UTC", in->utc_error_ns / 1e6);
	else
		fprintf(f, "error from UTC unknown");
	fprintf(f, "; cross-CPU check %s", verdict_name(in->sync_verdict));
	if (in->sync_verdict >= 0)
		fprintf(f, " (%u CPUs, max shift %" PRIu64 " ticks)", in->sync_ncpus,
			in->sync_max_shift_ticks);
	if (in->shared)
		fprintf(f, "\nshared rec.  %s %s (writer pid %u, uid %u, generation %" PRIu64
			   ": %.6f MHz ± %.3g ppm)",
			in->shared == 1 ? "adopted" : "written", in->shared_path, in->shared_writer_pid,
			in->shared_writer_uid, in->shared_generation, in->shared_hz / 1e6, in->shared_ppm);
	else if (in->version_minor >= 1)
		fprintf(f, "\nshared rec.  none");
	fprintf(f, "\nrecording    %s mode, %u blocks of %u bytes per thread%s%s\n",
		in->mode == NC_TRACE_OVERWRITE ? "overwrite" : "drop", in->blocks, in->block_bytes,
		(in->flags & NC_TRACE_CPUTIME) ? ", thread CPU time per event" : "",
		(in->flags & NC_TRACE_GSEQ) ? ", global sequence number per event" : "");
	if (in->events) {
		secs(a, sizeof(a), span);
		iso(b, sizeof(b), in->first_unix_ns);
		iso(c, sizeof(c), in->last_unix_ns);
		fprintf(f, "time span    %s s: %s .. %s\n", a, b, c);
	} else {
		fprintf(f, "time span    (no events)\n");
	}
	fprintf(f, "events       %" PRIu64 " in %u threads, %" PRIu64 " blocks; dropped %" PRIu64
		   " (ring full) + %" PRIu64 " (signal handler nesting) + %" PRIu64
		   " (after thread end), overwritten %" PRIu64 "\n",
		in->events, in->threads, in->blocks_read, l->dropped, l->nested, l->late,
		l->overwritten);
	fprintf(f, "sequence     %" PRIu64 " gaps, %" PRIu64 " events missing\n", in->gaps, in->missing);
	fprintf(f, "stamps       %" PRIu64 " sync records, %" PRIu64 " used as anchors (%" PRIu64
		   " rejected), widest ±%.0f ns; anchors' rate %+.3f ppm from the stated one\n"
		   "             largest compact delta %" PRIu64 " ticks (%.4f%% of 2^32); %" PRIu64
		   " events stamped below their predecessor\n",
		in->syncs, in->anchors, in->anchors_rejected, in->max_anchor_halfwidth_ns,
		in->anchor_rate_ppm, in->max_delta_ticks,
		(double)in->max_delta_ticks / 4294967296.0 * 100, in->backwards);
	stats_text_threads(f, r, in->threads);
}

void tool_trace_print_stats(FILE *f, const struct nc_trace_reader *r, const char *name, int json)
{
	struct nc_trace_info in;
	nc_trace_read_info(r, &in);
	int64_t span = (int64_t)((uint64_t)in.last_mono_ns - (uint64_t)in.first_mono_ns);
	struct losses l = losses_of(r, in.threads);
	if (json)
		stats_json(f, r, name, &in, &l, span);
	else
		stats_text(f, r, name, &in, &l, span);
}

/* ---- help ---- */
static const char help_trace[] =
	"usage: nanoclock trace stats FILE [--json]\n"
	"       nanoclock trace export --format ctf|perfetto|chrome|csv [-o OUT] FILE...\n"
	"       nanoclock trace demo FILE [--threads N] [--items N] [--block-bytes N] [--blocks N]\n"
	"                                 [--overwrite] [--cputime] [--gseq] [--sync-check]\n"
	"       nanoclock trace [COMMAND] --help | -h\n"
	"exit status: 0 ok; 1 a file could not be read, is not a valid trace, or an output\n"
	"             could not be written; 2 bad command line; 5 a trace was cut short\n"
	"             (its complete records are used; one line on stderr says where)\n";
static const char help_stats[] =
	"usage: nanoclock trace stats FILE [--json]\n"
	"What a trace holds: clock, threads, events, losses, time span, stamps.\n"
	"  --json      one JSON object\n"
	"  -h, --help  this text\n"
	"exit status: 0 ok; 1 unreadable or not a valid trace; 2 bad command line;\n"
	"             5 cut short (the stats cover its complete records)\n";
static const char help_export[] =
	"usage: nanoclock trace export --format ctf|perfetto|chrome|csv [-o OUT] FILE...\n"
	"Every event of the FILEs (several: merged on Unix time) with its exact counter\n"
	"value and nanoclock's ns, streamed in bounded memory.\n"
	"  --format ctf       CTF 1.8 directory (-o DIR needed): babeltrace2, Trace Compass\n"
	"  --format perfetto  Perfetto protobuf (-o FILE, or a pipe): ui.perfetto.dev\n"
	"  --format chrome    Chrome Trace Event JSON: Perfetto UI, chrome://tracing\n"
	"  --format csv       one line per event, every field\n"
	"  -o OUT             output file or directory (default: standard output, also -,\n"
	"                     /dev/stdout, /dev/fd/N); written where nothing is, or over an\n"
	"                     earlier export or an empty file of this user's, through a\n"
	"                     temporary put in place when complete (mode 0644, 0755 for a\n"
	"                     directory, less the umask; a replaced file keeps its mode);\n"
	"                     a FIFO with a reader, /dev/null or a terminal in place;\n"
	"                     anything else (another file, a link, a device...) is left\n"
	"                     alone: exit status 1, one line saying what is there\n"
	"  -h, --help         this text\n"
	"A progress line goes to stderr on long exports when it is a terminal.\n"
	"exit status: 0 ok; 1 unreadable, not a valid trace, or the output failed;\n"
	"             2 bad command line; 5 a FILE was cut short (its complete records exported)\n";
static const char help_demo[] =
	"usage: nanoclock trace demo FILE [options]\n"
	"Producers and consumers through a bounded queue, traced into FILE.\n"
	"  --threads N      producers, and as many consumers (1..64, default 2)\n"
	"  --items N        items per producer (1..100000000, default 20000)\n"
	"  --block-bytes N  block size, a power of two (512..16777216, default 65536)\n"
	"  --blocks N       blocks per thread (2..65536, default 16)\n"
	"  --overwrite      flight-recorder mode: the oldest blocks are overwritten\n"
	"  --cputime        each event also carries the thread's CPU time\n"
	"  --gseq           each event also takes a global sequence number\n"
	"  --sync-check     run the cross-CPU check at open and store its verdict\n"
	"  -h, --help       this text\n"
	"exit status: 0 ok; 1 the trace or a thread could not be made, or output failed;\n"
	"             2 bad command line\n";

static int is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

static int help(const char *text)
{
	fputs(text, stdout);
	return stdout_failed();
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
	int abort;         /* a thread could not start: everyone stops */
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
		while (d->count == QCAP && !d->abort)
			pthread_cond_wait(&d->not_full, &d->mu);
		if (d->abort) {
			pthread_mutex_unlock(&d->mu);
			break;
		}
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
		while (d->count == 0 && d->producers_left > 0 && !d->abort)
			pthread_cond_wait(&d->not_empty, &d->mu);
		if (d->count == 0 || d->abort) {
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
		fprintf(stderr, "nanoclock trace%s%s: %s '%s' (nanoclock trace%s%s --help)\n",
			cmd[0] ? " " : "", cmd, what, tool_arg_quote(arg, q, sizeof(q)), cmd[0] ? " " : "", cmd);
	else
		fprintf(stderr, "nanoclock trace%s%s: %s (nanoclock trace%s%s --help)\n", cmd[0] ? " " : "",
			cmd, what, cmd[0] ? " " : "", cmd);
	return 2;
}

struct demo_opts {
	const char *path;
	long threads, items;
	struct nc_trace_config c;
};

/* The command line: -1 to go on, else the exit status (help, bad usage) */
static int demo_options(int argc, char **argv, struct demo_opts *o)
{
	long bb = 65536, nb = 16;
	char why[160];
	o->path = NULL;
	o->threads = 2;
	o->items = 20000;
	nc_trace_default_config(&o->c);
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i];
		if (is_help(a))
			return help(help_demo);
		long *target = !strcmp(a, "--threads")       ? &o->threads
			       : !strcmp(a, "--items")       ? &o->items
			       : !strcmp(a, "--block-bytes") ? &bb
			       : !strcmp(a, "--blocks")      ? &nb
							     : NULL;
		if (target) {
			long lo = target == &o->threads ? 1 : target == &o->items ? 1 : target == &bb ? 512 : 2;
			long hi = target == &o->threads ? 64
				  : target == &o->items ? 100000000
				  : target == &bb       ? 16777216
							: 65536;
			if (i + 1 >= argc)
				snprintf(why, sizeof(why), "%s needs a value", a);
			if (i + 1 >= argc || tool_arg_long(a, argv[++i], lo, hi, target, why, sizeof(why))) {
				fprintf(stderr, "nanoclock trace demo: %s\n", why);
				return 2;
			}
		} else if (!strcmp(a, "--overwrite")) {
			o->c.mode = NC_TRACE_OVERWRITE;
		} else if (!strcmp(a, "--cputime")) {
			o->c.flags |= NC_TRACE_CPUTIME;
		} else if (!strcmp(a, "--gseq")) {
			o->c.flags |= NC_TRACE_GSEQ;
		} else if (!strcmp(a, "--sync-check")) {
			o->c.flags |= NC_TRACE_SYNC_CHECK;
		} else if (a[0] != '-' && !o->path) {
			o->path = a;
		} else {
			return bad("demo", o->path && a[0] != '-' ? "one FILE only, not also" : "unknown option",
				   a);
		}
	}
	if (!o->path)
		return bad("demo", "a FILE to write is needed", NULL);
	if (bb & (bb - 1)) {
		fprintf(stderr, "nanoclock trace demo: --block-bytes: %ld is not a power of two\n", bb);
		return 2;
	}
	o->c.block_bytes = (unsigned)bb;
	o->c.blocks = (unsigned)nb;
	o->c.max_threads = (unsigned)(2 * o->threads);
	return -1;
}

/* nc_trace_open's refusal, e its errno, as one line */
static void demo_open_failed(const char *path, int rc, int e)
{
	if (rc == NC_ESYS) /* the flush thread (clone denied, no memory for a stack) */
		fprintf(stderr, "nanoclock trace demo: %s: the trace's flush thread could not "
			"start: %s\n", path, strerror(e));
	else
		fprintf(stderr, "nanoclock trace demo: %s: %s\n", path,
			rc != NC_TRACE_EIO ? nc_trace_strerror(rc)
			: e == ENXIO	   ? "a FIFO with no reader"
			: e == ELOOP	   ? "a symbolic link (not followed)"
			: e == EEXIST	   ? "something is there that is not an earlier trace of this "
					     "user's (left alone)"
			: e == EISDIR	   ? "a directory"
					   : strerror(e));
}

/* The producers and consumers, started and joined */
static void demo_run(struct demo *d, long threads)
{
	pthread_t th[128];
	int started = 0;
	for (long i = 0; i < 2 * threads; i++) {
		int e = pthread_create(&th[started], NULL, i % 2 ? consumer : producer, d);
		if (e != 0) {
			/* one line, and every thread started so far stops: a missing
			 * consumer would leave producers waiting for ever */
			fprintf(stderr, "nanoclock trace demo: cannot start thread %ld of %ld: %s\n", i + 1,
				2 * threads, strerror(e));
			pthread_mutex_lock(&d->mu);
			d->abort = 1;
			pthread_cond_broadcast(&d->not_empty);
			pthread_cond_broadcast(&d->not_full);
			pthread_mutex_unlock(&d->mu);
			d->err = 2;
			break;
		}
		started++;
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}

static int cmd_demo(int argc, char **argv)
{
	struct demo_opts o;
	int rc = demo_options(argc, argv, &o);
	if (rc >= 0)
		return rc;
	const char *path = o.path;
	struct demo d;
	memset(&d, 0, sizeof(d));
	pthread_mutex_init(&d.mu, NULL);
	pthread_cond_init(&d.not_empty, NULL);
	pthread_cond_init(&d.not_full, NULL);
	d.items = o.items;
	d.producers_left = (int)o.threads;
	rc = nc_trace_open(&d.t, path, &o.c);
	if (rc) {
		demo_open_failed(path, rc, errno);
		return 1;
	}
	nc_trace_name(d.t, ID_PRODUCE, "produce");
	nc_trace_name(d.t, ID_CONSUME, "consume");
	nc_trace_name(d.t, ID_DEPTH, "queue depth");
	uint64_t t0 = nc_now_ns();
	demo_run(&d, o.threads);
	uint64_t t1 = nc_now_ns();
	rc = nc_trace_close(d.t);
	if (rc) {
		int e = errno; /* the failed write's */
		fprintf(stderr, "nanoclock trace demo: %s: %s: %s\n", path, nc_trace_strerror(rc),
			strerror(e));
		return 1;
	}
	if (d.err == 2)
		return 1; /* said above */
	printf("wrote %s: %ld producers and %ld consumers, %ld items each producer, %.3f ms\n"
	       "next:  nanoclock trace stats %s\n"
	       "       nanoclock trace export --format perfetto -o trace.pftrace %s   "
	       "(https://ui.perfetto.dev)\n"
	       "       nanoclock trace export --format ctf -o trace-ctf %s   (babeltrace2 trace-ctf)\n",
	       path, o.threads, o.threads, o.items, (double)(t1 - t0) / 1e6, path, path, path);
	if (stdout_failed())
		return 1;
	return d.err ? 1 : 0;
}

/* ---- the command ---- */
#define EXIT_CUT_SHORT 5

/* 0 read whole, 5 read but cut short (said on stderr), 1 refused (said). */
static int open_trace(const char *path, struct nc_trace_reader **r)
{
	char why[256];
	int rc = nc_trace_read_file(r, path, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "nanoclock trace: %s: %s\n", path, why[0] ? why : nc_trace_strerror(rc));
		return 1;
	}
	if (!nc_trace_read_complete(*r, NULL, why, sizeof(why))) {
		fprintf(stderr, "nanoclock trace: %s: %s; every complete record before it is used\n",
			path, why);
		return EXIT_CUT_SHORT;
	}
	return 0;
}

static int cmd_stats(int argc, char **argv)
{
	const char *path = NULL;
	int json = 0;
	for (int i = 3; i < argc; i++) {
		if (is_help(argv[i]))
			return help(help_stats);
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
	int st = open_trace(path, &r);
	if (st == 1)
		return 1;
	tool_trace_print_stats(stdout, r, path, json);
	nc_trace_read_close(r);
	return stdout_failed() ? 1 : st;
}

enum { FMT_NONE, FMT_CSV, FMT_CHROME, FMT_PERFETTO, FMT_CTF };

/* An earlier export in any of the file formats: -o may replace it */
static int export_is_ours(const unsigned char *head, size_t n)
{
	return tool_export_csv_is_ours(head, n) || tool_export_chrome_is_ours(head, n) ||
	       tool_export_perfetto_is_ours(head, n);
}

struct export_opts {
	int fmt;
	const char *out;
	const char **files; /* argc of them at most */
	unsigned n;
};

/* The command line: -1 to go on, else the exit status (help, bad usage) */
static int export_options(int argc, char **argv, struct export_opts *o)
{
	int rc = 0;
	for (int i = 3; i < argc && !rc; i++) {
		if (is_help(argv[i]))
			return help(help_export);
		if (!strcmp(argv[i], "--format") && i + 1 < argc) {
			const char *v = argv[++i];
			o->fmt = !strcmp(v, "csv")	  ? FMT_CSV
				 : !strcmp(v, "chrome")   ? FMT_CHROME
				 : !strcmp(v, "perfetto") ? FMT_PERFETTO
				 : !strcmp(v, "ctf")	  ? FMT_CTF
							  : -1;
			if (o->fmt < 0)
				rc = bad("export", "--format: not ctf, perfetto, chrome or csv:", v);
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			o->out = argv[++i];
		} else if (argv[i][0] != '-') {
			o->files[o->n++] = argv[i];
		} else {
			rc = bad("export",
				 !strcmp(argv[i], "--format") || !strcmp(argv[i], "-o") ? "a value is needed after"
											: "unknown option",
				 argv[i]);
		}
	}
	if (!rc && (o->fmt == FMT_NONE || o->n == 0))
		rc = bad("export", o->fmt == FMT_NONE ? "--format ctf, perfetto, chrome or csv is needed"
						      : "a FILE to read is needed",
			 NULL);
	if (!rc && o->n > 256) /* the concurrency marks number the machines in a byte */
		rc = bad("export", "at most 256 traces at once", NULL);
	if (!rc && o->fmt == FMT_CTF && !o->out)
		rc = bad("export", "--format ctf writes a directory: -o DIR is needed", NULL);
	if (!rc && o->fmt == FMT_PERFETTO &&
	    (!o->out || !strcmp(o->out, "-") || !strcmp(o->out, "/dev/stdout")) && isatty(STDOUT_FILENO))
		rc = bad("export", "--format perfetto is binary: -o FILE, or a pipe, is needed", NULL);
	return rc ? rc : -1;
}

/* The traces open in r[], written out: 0 or 1 (said on stderr) */
static int export_write(const struct export_opts *eo, struct nc_trace_reader **r)
{
	int fmt = eo->fmt;
	const char *out = eo->out;
	struct tool_out o;
	char why[512] = "";
	/* any earlier export of this tool's may be replaced, whatever its
	 * format: nothing else */
	int e = fmt == FMT_CTF ? tool_out_dir_open(&o, out, why, sizeof(why))
			       : tool_out_open(&o, out, export_is_ours, why, sizeof(why));
	if (e) {
		fprintf(stderr, "nanoclock trace export: %s\n", why);
		return 1;
	}
	int rc = 0;
	struct tool_export x;
	e = tool_export_begin(&x, r, eo->files, eo->n, isatty(STDERR_FILENO));
	why[0] = 0;
	if (!e) {
		e = fmt == FMT_CSV	  ? tool_export_csv(o.f, &x)
		    : fmt == FMT_CHROME	  ? tool_export_chrome(o.f, &x)
		    : fmt == FMT_PERFETTO ? tool_export_perfetto(o.f, &x)
					  : tool_export_ctf(o.dirfd, &x, why, sizeof(why));
		int me = tool_export_end(&x);
		if (!e)
			e = me;
	}
	if (e) {
		/* the output named: a CTF file's write error says only its own
		 * name (stream_0_0: No space left on device) */
		fprintf(stderr, "nanoclock trace export: %s%s%s%s\n", fmt == FMT_CTF ? out : "",
			fmt == FMT_CTF ? ": " : "", why[0] ? why : nc_trace_strerror(e),
			fmt != FMT_CTF ? "" : o.have_old ? "; the earlier export there is left as it was"
							 : "; nothing was put there");
		rc = 1;
	}
	if (tool_out_close(&o, !rc, why, sizeof(why)) != 0) {
		fprintf(stderr, "nanoclock trace export: %s\n", why);
		rc = 1;
	}
	return rc;
}

static int cmd_export(int argc, char **argv)
{
	struct export_opts eo = {FMT_NONE, NULL, calloc((size_t)argc, sizeof(*eo.files)), 0};
	if (!eo.files)
		return 1;
	int rc = export_options(argc, argv, &eo);
	if (rc >= 0) {
		free(eo.files);
		return rc;
	}
	unsigned n = eo.n;
	struct nc_trace_reader **r = calloc(n, sizeof(*r));
	int cut = 0;
	rc = r ? 0 : 1;
	for (unsigned i = 0; i < n && !rc; i++) {
		int st = open_trace(eo.files[i], &r[i]);
		if (st == EXIT_CUT_SHORT)
			cut = 1;
		else
			rc = st;
	}
	if (!rc)
		rc = export_write(&eo, r);
	for (unsigned i = 0; r && i < n; i++)
		nc_trace_read_close(r[i]);
	free(r);
	free(eo.files);
	return rc ? rc : cut ? EXIT_CUT_SHORT : 0;
}

int tool_trace_main(int argc, char **argv)
{
	const char *sub = argc >= 3 ? argv[2] : "";
	if (is_help(sub))
		return help(help_trace);
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
