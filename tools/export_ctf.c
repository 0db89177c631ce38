/* SPDX-License-Identifier: MIT */
/*
 * CTF 1.8 (the Common Trace Format of LTTng; read by babeltrace2 and Trace
 * Compass): a directory with a `metadata` file (TSDL text) and one stream
 * file per thread of every input file, so several files (processes) are
 * one trace.
 *
 * The clock.  Its values are nanoclock's own Unix time of each event (the
 * counter value interpolated between the sync records that bracket
 * CLOCK_REALTIME), as a 1 GHz clock with offset 0 from the Unix epoch: a
 * reader shows exactly the ns nanoclock's CSV export gives.  Raw counter
 * ticks with one `freq` would have been smaller but wrong: a single rate
 * cannot follow the piecewise interpolation (the oscillator drifts, NTP
 * slews), so a reader's times would drift from nanoclock's by the rate
 * error times the trace's length (1 ppm is 1 us per second).  `precision`
 * is the stated uncertainty of those Unix times against the recording
 * machine's CLOCK_REALTIME (the widest anchor bracket, halved, plus 1 ns
 * of rounding; the tie's width plus the rate's uncertainty over the span
 * where a file has under two anchors); `absolute` is TRUE only when every
 * file had a bound on CLOCK_REALTIME's error from UTC.  A stream's times
 * must not go back: where Unix time did (the system clock set back during
 * the trace), an event keeps its stream's previous time and the metadata
 * counts it (env nanoclock_times_held).
 *
 * Streams: packets of up to 64 KiB (less with many threads: memory is a
 * packet per thread, 16 MiB in all at most), each with a packet header
 * (magic, uuid, stream instance), a context (begin and end times, sizes,
 * sequence number, events discarded so far: the gaps in the thread's
 * sequence numbers, file, thread, tid, pid), then events: a header (class
 * id, timestamp) and the fields event_id, event_name, arg, seq, ticks,
 * mono_ns, gseq (2^64 - 1 when not recorded), cpu_ns (-1 likewise), the
 * UTC interval utc_earliest_ns..utc_latest_ns (INT64_MIN..INT64_MAX when
 * unknown), utc_status (enum: unknown, synchronised, free_running,
 * disrupted) and concurrent (1: it overlaps an event of another machine's
 * trace, which cannot be said to come before or after it).
 * Every field is byte-aligned, little-endian.  The metadata is written
 * last, so its env block can hold the totals.
 */
#include "export.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <nanoclock.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CTF_MAGIC 0xC1FC1FC1u
#define PKT_HEAD 32 /* magic, uuid, stream_id, stream_instance_id */
#define PKT_CTX 68  /* see the metadata's packet.context */
#define PKT_HDR (PKT_HEAD + PKT_CTX)
#define MAX_EVENT 160 /* header 12, a name of at most 48 + 1, fixed fields 66 */

struct stream {
	unsigned file, thread;
	unsigned char *buf;
	size_t n;               /* bytes in buf (the header's room included) */
	uint64_t first_ts, last_ts, packets, discarded, next_seq, events;
	int created, have_ts, have_seq;
	int64_t tid;
	unsigned pid;
};

struct ctf {
	int dirfd;
	struct stream *s;
	size_t ns, cap_packet;
	unsigned *base;         /* first stream of each file */
	unsigned char uuid[16];
	uint64_t held, written;
	char *why;
	size_t whylen;
	int err;
};

static void put16(unsigned char *p, uint16_t v) { p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8); }
static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static int write_all(int fd, const void *p, size_t n)
{
	const unsigned char *b = p;
	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static void set_err(struct ctf *c, const char *what)
{
	if (!c->err) {
		c->err = NC_TRACE_EIO;
		snprintf(c->why, c->whylen, "%s: %s", what, strerror(errno ? errno : EIO));
	}
}

static void stream_name(char *b, size_t len, const struct stream *s)
{
	snprintf(b, len, "stream_%u_%u", s->file, s->thread);
}

/* The packet in s->buf, headers filled, appended to the stream's file. */
static void flush_packet(struct ctf *c, struct stream *s)
{
	if (s->n <= PKT_HDR || c->err)
		return;
	unsigned char *p = s->buf;
	put32(p, CTF_MAGIC);
	memcpy(p + 4, c->uuid, 16);
	put32(p + 20, 0);                      /* stream_id: the one stream class */
	put64(p + 24, (uint64_t)(s - c->s));   /* stream_instance_id */
	unsigned char *q = p + PKT_HEAD;
	put64(q, s->first_ts);
	put64(q + 8, s->last_ts);
	put64(q + 16, (uint64_t)s->n * 8);     /* content_size, bits */
	put64(q + 24, (uint64_t)s->n * 8);     /* packet_size: no padding */
	put64(q + 32, s->packets);
	put64(q + 40, s->discarded);
	put32(q + 48, s->file);
	put32(q + 52, s->thread);
	put64(q + 56, (uint64_t)s->tid);
	put32(q + 64, s->pid);
	char name[64];
	stream_name(name, sizeof(name), s);
	/* the directory is new and ours: a file is created once, exclusively */
	int fd = openat(c->dirfd, name,
			O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | (s->created ? 0 : O_CREAT | O_EXCL),
			0644);
	if (fd < 0 || write_all(fd, p, s->n) != 0) {
		set_err(c, name);
		if (fd >= 0)
			close(fd);
		return;
	}
	if (close(fd) != 0)
		set_err(c, name);
	s->created = 1;
	s->packets++;
	s->n = PKT_HDR;
	s->have_ts = 0;
}

static void add_event(struct ctf *c, struct stream *s, const struct nc_trace_rec *e, const char *name,
		      const struct nc_utc *u, int concurrent)
{
	uint64_t ts = e->unix_ns < 0 ? 0 : (uint64_t)e->unix_ns;
	if (s->events && ts < s->last_ts) {
		ts = s->last_ts; /* a stream's times never go back */
		c->held++;
	}
	if (s->have_seq && e->seq > s->next_seq)
		s->discarded += e->seq - s->next_seq;
	s->next_seq = e->seq + 1;
	s->have_seq = 1;
	unsigned char ev[MAX_EVENT];
	size_t k = 0;
	put16(ev, (uint16_t)(e->kind < 4 ? e->kind : NC_TRACE_INSTANT));
	put64(ev + 2, ts);
	put16(ev + 10, (uint16_t)e->id);
	k = 12;
	size_t nl = strlen(name);
	if (nl > 48)
		nl = 48;
	memcpy(ev + k, name, nl);
	k += nl;
	ev[k++] = 0;
	put64(ev + k, e->arg);
	put64(ev + k + 8, e->seq);
	put64(ev + k + 16, e->ticks);
	put64(ev + k + 24, (uint64_t)e->mono_ns);
	put64(ev + k + 32, e->gseq);
	put64(ev + k + 40, (uint64_t)e->cpu_ns);
	put64(ev + k + 48, (uint64_t)u->earliest_ns);
	put64(ev + k + 56, (uint64_t)u->latest_ns);
	ev[k + 64] = (unsigned char)(u->status >= 0 && u->status <= 3 ? u->status : 0);
	ev[k + 65] = (unsigned char)(concurrent != 0);
	k += 66;
	if (s->n + k > c->cap_packet)
		flush_packet(c, s);
	if (!s->have_ts) {
		s->first_ts = ts;
		s->have_ts = 1;
	}
	memcpy(s->buf + s->n, ev, k);
	s->n += k;
	s->last_ts = ts;
	s->events++;
	c->written++;
}

/* ---- the metadata ---- */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3u;
	return h;
}

/* A uuid derived from the inputs: the same files give the same trace. */
static void make_uuid(struct ctf *c, const struct tool_export *x)
{
	uint64_t h1 = 0xcbf29ce484222325u, h2 = 0x84222325cbf29ce4u;
	for (unsigned i = 0; i < x->n; i++) {
		struct nc_trace_info in;
		nc_trace_read_info(x->r[i], &in);
		uint64_t v[6] = {in.pid, in.tie_ticks, (uint64_t)in.tie_unix_ns, in.events, in.first_ticks,
				 in.last_ticks};
		h1 = fnv(h1, v, sizeof(v));
		h1 = fnv(h1, in.host, strlen(in.host));
		h2 = fnv(h2 ^ h1, v, sizeof(v));
	}
	put64(c->uuid, h1);
	put64(c->uuid + 8, h2);
	c->uuid[6] = (unsigned char)((c->uuid[6] & 0x0f) | 0x80); /* RFC 9562 version 8: custom */
	c->uuid[8] = (unsigned char)((c->uuid[8] & 0x3f) | 0x80);
}

static void uuid_text(char *b, const unsigned char *u)
{
	static const char hex[] = "0123456789abcdef";
	size_t k = 0;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			b[k++] = '-';
		b[k++] = hex[u[i] >> 4];
		b[k++] = hex[u[i] & 15];
	}
	b[k] = 0;
}

/* A TSDL string literal's contents: printable ASCII without quote or backslash. */
static void tsdl_clean(char *dst, size_t dlen, const char *src)
{
	tool_export_clean(dst, dlen, src);
	for (char *p = dst; *p; p++)
		if (*p == '"' || *p == '\\')
			*p = '_';
}

static const char *verdict_name(int v)
{
	return v == 0 ? "consistent" : v == 1 ? "inconsistent" : v == 2 ? "inconclusive" : "not run";
}

static void env_str(FILE *f, unsigned i, const char *key, const char *val)
{
	char clean[256];
	tsdl_clean(clean, sizeof(clean), val);
	fprintf(f, "\tfile%u_%s = \"%s\";\n", i, key, clean);
}

static void env_num(FILE *f, unsigned i, const char *key, double v, const char *fmt)
{
	char b[64];
	if (isfinite(v))
		snprintf(b, sizeof(b), fmt, v);
	else
		snprintf(b, sizeof(b), "unknown");
	env_str(f, i, key, b);
}

/* The stated uncertainty of a file's Unix times against CLOCK_REALTIME, ns. */
static double file_error_ns(const struct nc_trace_info *in)
{
	if (in->anchors >= 2)
		return in->max_anchor_halfwidth_ns + 1;
	double span = fabs((double)(in->last_mono_ns - in->first_mono_ns));
	double ppm = isfinite(in->hz_ppm) ? in->hz_ppm : 1e6;
	return (isfinite(in->tie_error_ns) ? fabs(in->tie_error_ns) : 0) + ppm * 1e-6 * span + 1;
}

/* The clock's precision: the largest error from CLOCK_REALTIME of the
 * files (capped at 1e15 ns) in *err; 1 where every file had a bound on
 * UTC (the clock is absolute), else 0 */
static int clock_bound(const struct tool_export *x, double *err)
{
	*err = 0;
	int absolute = 1;
	for (unsigned i = 0; i < x->n; i++) {
		struct nc_trace_info in;
		nc_trace_read_info(x->r[i], &in);
		double e = file_error_ns(&in);
		if (!(e <= 1e15))
			e = 1e15;
		if (e > *err)
			*err = e;
		if (!(in.utc_error_ns >= 0))
			absolute = 0;
	}
	return absolute;
}

/* File i's part of the env block: what it was recorded with */
static void env_file(FILE *f, const struct tool_export *x, unsigned i)
{
	struct nc_trace_info in;
	nc_trace_read_info(x->r[i], &in);
	char b[64];
	env_str(f, i, "path", x->names ? x->names[i] : "trace");
	env_str(f, i, "host", in.host);
	fprintf(f, "\tfile%u_pid = %u;\n", i, in.pid);
	env_str(f, i, "counter", in.counter);
	env_num(f, i, "hz", in.hz, "%.3f");
	env_num(f, i, "hz_ppm", in.hz_ppm, "%.6g");
	env_num(f, i, "hz_final", in.hz_final > 0 ? in.hz_final : NAN, "%.3f");
	env_num(f, i, "hz_final_ppm", in.hz_final > 0 ? in.hz_final_ppm : NAN, "%.6g");
	snprintf(b, sizeof(b), "%" PRIu64, in.tie_ticks);
	env_str(f, i, "unix_tie_ticks", b);
	snprintf(b, sizeof(b), "%" PRId64, in.tie_unix_ns);
	env_str(f, i, "unix_tie_ns", b);
	env_num(f, i, "unix_tie_error_ns", in.tie_error_ns, "%.1f");
	env_num(f, i, "utc_error_ns", in.utc_error_ns >= 0 ? in.utc_error_ns : NAN, "%.0f");
	env_str(f, i, "utc_synchronised",
		in.synchronised == 1 ? "yes" : in.synchronised == 0 ? "no" : "unknown");
	env_str(f, i, "cross_cpu", verdict_name(in.sync_verdict));
	snprintf(b, sizeof(b), "%" PRIu64, in.sync_max_shift_ticks);
	env_str(f, i, "cross_cpu_max_shift_ticks", b);
	fprintf(f, "\tfile%u_anchors = %" PRIu64 ";\n", i, in.anchors);
	env_num(f, i, "max_anchor_halfwidth_ns", in.max_anchor_halfwidth_ns, "%.1f");
	env_num(f, i, "error_vs_realtime_ns", file_error_ns(&in), "%.1f");
	for (unsigned k = 0; k < in.threads; k++) {
		struct nc_trace_thread_info t;
		nc_trace_read_thread(x->r[i], k, &t);
		char key[48];
		snprintf(key, sizeof(key), "thread%u_name", k);
		env_str(f, i, key, t.name);
	}
}

/* The stream's packet and event headers, and the four event classes */
static void write_streams(FILE *f)
{
	fprintf(f, "stream {\n\tid = 0;\n\tpacket.context := struct {\n"
		   "\t\tuint64_clock_t timestamp_begin;\n\t\tuint64_clock_t timestamp_end;\n"
		   "\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n\t\tuint64_t packet_seq_num;\n"
		   "\t\tuint64_t events_discarded;\n\t\tuint32_t file;\n\t\tuint32_t thread;\n"
		   "\t\tint64_t tid;\n\t\tuint32_t pid;\n\t};\n"
		   "\tevent.header := struct {\n\t\tuint16_t id;\n\t\tuint64_clock_t timestamp;\n\t};\n};\n");
	static const char *const cls[] = {"instant", "begin", "end", "counter"};
	for (int k = 0; k < 4; k++)
		fprintf(f, "\nevent {\n\tname = \"nanoclock:%s\";\n\tid = %d;\n\tstream_id = 0;\n"
			   "\tfields := struct {\n\t\tuint16_t event_id;\n\t\tstring event_name;\n"
			   "\t\tuint64_t %s;\n\t\tuint64_t seq;\n\t\tuint64_t ticks;\n\t\tint64_t mono_ns;\n"
			   "\t\tuint64_t gseq;\n\t\tint64_t cpu_ns;\n"
			   "\t\tint64_t utc_earliest_ns;\n\t\tint64_t utc_latest_ns;\n"
			   "\t\tenum : uint8_t { unknown = 0, synchronised = 1, free_running = 2, "
			   "disrupted = 3 } utc_status;\n"
			   "\t\tuint8_t concurrent;\n\t};\n};\n",
			cls[k], k, k == 3 ? "value" : "arg");
}

static int write_metadata(struct ctf *c, const struct tool_export *x)
{
	int fd = openat(c->dirfd, "metadata", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		set_err(c, "metadata");
		return -1;
	}
	char u[40];
	uuid_text(u, c->uuid);
	double err;
	int absolute = clock_bound(x, &err);
	fprintf(f, "/* CTF 1.8 */\n\n"
		   "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
		   "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
		   "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
		   "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
		   "typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n"
		   "typealias integer { size = 64; align = 8; signed = false; "
		   "map = clock.nanoclock_unix.value; } := uint64_clock_t;\n\n");
	fprintf(f, "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"%s\";\n\tbyte_order = le;\n"
		   "\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n"
		   "\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n\t};\n};\n\n",
		u);
	struct nc_trace_info in0;
	nc_trace_read_info(x->r[0], &in0);
	char host[80];
	tsdl_clean(host, sizeof(host), in0.host[0] ? in0.host : "unknown");
	fprintf(f, "env {\n\thostname = \"%s\";\n\ttracer_name = \"nanoclock\";\n"
		   "\ttracer_version = \"%s\";\n\tnanoclock_files = %u;\n"
		   "\tnanoclock_events = %" PRIu64 ";\n\tnanoclock_times_held = %" PRIu64 ";\n"
		   "\tnanoclock_clock = \"Unix ns as nanoclock converts each event: its counter value "
		   "interpolated between sync records bracketing CLOCK_REALTIME\";\n",
		host, nc_version(), x->n, c->written, c->held);
	for (unsigned i = 0; i < x->n; i++)
		env_file(f, x, i);
	fprintf(f, "};\n\n");
	fprintf(f, "clock {\n\tname = nanoclock_unix;\n\tuuid = \"%s\";\n"
		   "\tdescription = \"Unix time as nanoclock converts it (counter interpolated between "
		   "sync records); within precision ns of the recording machine's CLOCK_REALTIME%s\";\n"
		   "\tfreq = 1000000000;\n\tprecision = %.0f;\n\toffset_s = 0;\n\toffset = 0;\n"
		   "\tabsolute = %s;\n};\n\n",
		u, absolute ? ", which had a bound on its error from UTC" : "", ceil(err),
		absolute ? "TRUE" : "FALSE");
	write_streams(f);
	int bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		set_err(c, "metadata");
		return -1;
	}
	return 0;
}

int tool_export_ctf(int dirfd, struct tool_export *x, char *why, size_t whylen)
{
	struct ctf c;
	memset(&c, 0, sizeof(c));
	c.dirfd = dirfd;
	c.why = why;
	c.whylen = whylen;
	c.base = calloc(x->n ? x->n : 1, sizeof(*c.base));
	if (!c.base)
		return NC_TRACE_ENOMEM;
	for (unsigned i = 0; i < x->n; i++) {
		struct nc_trace_info in;
		nc_trace_read_info(x->r[i], &in);
		c.base[i] = (unsigned)c.ns;
		c.ns += in.threads;
	}
	c.s = calloc(c.ns ? c.ns : 1, sizeof(*c.s));
	c.cap_packet = 65536;
	while (c.cap_packet > 4096 && c.cap_packet * c.ns > (16u << 20))
		c.cap_packet /= 2;
	int rc = c.s ? 0 : NC_TRACE_ENOMEM;
	for (unsigned i = 0; i < x->n && !rc; i++) {
		struct nc_trace_info in;
		nc_trace_read_info(x->r[i], &in);
		for (unsigned k = 0; k < in.threads; k++) {
			struct stream *s = &c.s[c.base[i] + k];
			struct nc_trace_thread_info t;
			nc_trace_read_thread(x->r[i], k, &t);
			s->file = i;
			s->thread = k;
			s->tid = t.tid;
			s->pid = in.pid;
			s->n = PKT_HDR;
		}
	}
	make_uuid(&c, x);
	char nb[32], clean[64];
	struct nc_trace_rec e;
	while (!rc && !c.err && tool_export_next(x, &e)) {
		struct stream *s = &c.s[c.base[e.file] + e.thread];
		if (!s->buf && !(s->buf = malloc(c.cap_packet))) {
			rc = NC_TRACE_ENOMEM;
			break;
		}
		tool_export_clean(clean, sizeof(clean), tool_export_ev_name(x, e.file, e.id, nb, sizeof(nb)));
		add_event(&c, s, &e, clean, &x->utc, x->concurrent);
	}
	for (size_t i = 0; i < c.ns; i++) {
		if (!rc && c.s[i].buf)
			flush_packet(&c, &c.s[i]);
		free(c.s[i].buf);
	}
	if (!rc && !c.err)
		write_metadata(&c, x);
	free(c.s);
	free(c.base);
	return rc ? rc : c.err;
}
