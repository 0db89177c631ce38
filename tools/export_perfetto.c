/* SPDX-License-Identifier: MIT */
/*
 * Perfetto's own format: a Trace message, i.e. a sequence of
 * `TracePacket packet = 1` records, protobuf wire format written here by
 * hand (no runtime dependency).  Field numbers are Perfetto's
 * (protos/perfetto/trace/: trace_packet.proto, clock_snapshot.proto,
 * track_event/track_event.proto, track_descriptor.proto, process_ and
 * thread_descriptor.proto, debug_annotation.proto, interned_data/); the tests
 * decode the output with protoc against tests/perfetto/nanoclock_perfetto.proto.
 *
 * One packet sequence per file (trusted_packet_sequence_id = file + 1):
 *   - a first packet clears incremental state, interns the argument names
 *     and holds a ClockSnapshot tying the sequence's own clock (id 64, a
 *     sequence-scoped clock: nanoclock's interpolated CLOCK_MONOTONIC_RAW
 *     of that file, in ns) to BUILTIN_CLOCK_REALTIME (nanoclock's Unix
 *     time), with REALTIME as the primary trace clock;
 *   - the snapshot is repeated whenever nanoclock's Unix - MONOTONIC_RAW
 *     offset moved (NTP slew, a clock set) since the last one, so a reader
 *     converting with the latest snapshot gets nanoclock's Unix time to
 *     the ns;
 *   - a TrackDescriptor for the process (pid, name), one per thread (pid,
 *     tid, name) and one per counter (lazily, on its first value);
 *   - a TrackEvent per event: SLICE_BEGIN / SLICE_END / INSTANT on the
 *     thread's track, COUNTER on the counter's; names interned (iid = id +
 *     1, sent with the first event that uses it); debug annotations arg,
 *     seq, ticks, unix_ns (and gseq, cpu_ns when recorded), the UTC
 *     interval utc_earliest_ns, utc_latest_ns (when known), utc_status and,
 *     with several machines' traces, concurrent, with "end_"
 *     names on a slice's end so a reader merging the pair keeps both.
 * Memory: a bit per event id per file, and the counters declared.
 */
#include "export.h"

#include <stdlib.h>
#include <string.h>

/* field numbers */
enum {
	TRACE_PACKET = 1,
	TP_TIMESTAMP = 8, TP_CLOCK_ID = 58, TP_SEQ_ID = 10, TP_SEQ_FLAGS = 13, TP_INTERNED = 12,
	TP_TRACK_EVENT = 11, TP_TRACK_DESCRIPTOR = 60, TP_CLOCK_SNAPSHOT = 6,
	CS_CLOCKS = 1, CS_PRIMARY = 2, CLK_ID = 1, CLK_TIMESTAMP = 2,
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8,
	PD_PID = 1, PD_NAME = 6, THD_PID = 1, THD_TID = 2, THD_NAME = 5,
	TE_TYPE = 9, TE_TRACK = 11, TE_NAME_IID = 10, TE_COUNTER = 30, TE_ANNOTATIONS = 4,
	DA_NAME_IID = 1, DA_BOOL = 2, DA_UINT = 3, DA_INT = 4, DA_STRING = 6,
	ID_EVENT_NAMES = 2, ID_ANNOTATION_NAMES = 3, IN_IID = 1, IN_NAME = 2,
};
enum { CLOCK_REALTIME_ID = 1, CLOCK_NANOCLOCK = 64 };
enum { SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2 };
enum { TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
/* argument names' iids: 1..NARGS at a begin or instant, NARGS+1.. at an end */
enum { NARGS = 10 };
static const char *const arg_names[] = {
	"arg", "seq", "ticks", "unix_ns", "gseq", "cpu_ns", "utc_earliest_ns", "utc_latest_ns",
	"utc_status", "concurrent",
	"end_arg", "end_seq", "end_ticks", "end_unix_ns", "end_gseq", "end_cpu_ns",
	"end_utc_earliest_ns", "end_utc_latest_ns", "end_utc_status", "end_concurrent"};

/* A message being built: bounded (names are short), overflow flagged. */
struct pb {
	unsigned char b[2048];
	size_t n;
	int over;
};

static void put(struct pb *m, const void *p, size_t n)
{
	if (m->over || n > sizeof(m->b) - m->n) {
		m->over = 1;
		return;
	}
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

static void varint(struct pb *m, uint64_t v)
{
	unsigned char t[10];
	size_t k = 0;
	do {
		t[k++] = (unsigned char)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		v >>= 7;
	} while (v);
	put(m, t, k);
}

static void u64(struct pb *m, unsigned field, uint64_t v)
{
	varint(m, (uint64_t)field << 3 | 0);
	varint(m, v);
}

static void bytes(struct pb *m, unsigned field, const void *p, size_t n)
{
	varint(m, (uint64_t)field << 3 | 2);
	varint(m, n);
	put(m, p, n);
}

static void str(struct pb *m, unsigned field, const char *s) { bytes(m, field, s, strlen(s)); }

static void msg(struct pb *m, unsigned field, const struct pb *inner)
{
	if (inner->over)
		m->over = 1;
	bytes(m, field, inner->b, inner->n);
}

struct seq_state {
	unsigned char named[65536 / 8]; /* event ids interned */
	int64_t off;                    /* Unix - mono of the last snapshot */
};

struct counters {                       /* counter tracks declared: a hash set */
	uint64_t *slot;
	size_t cap, n;
};

static int counter_seen(struct counters *c, uint64_t uuid)
{
	if (c->n * 2 >= c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		uint64_t *s = calloc(cap, sizeof(*s));
		if (!s)
			return -1;
		for (size_t i = 0; i < c->cap; i++)
			if (c->slot[i]) {
				size_t h = (size_t)(c->slot[i] * 0x9e3779b97f4a7c15u) & (cap - 1);
				while (s[h])
					h = (h + 1) & (cap - 1);
				s[h] = c->slot[i];
			}
		free(c->slot);
		c->slot = s;
		c->cap = cap;
	}
	size_t h = (size_t)(uuid * 0x9e3779b97f4a7c15u) & (c->cap - 1);
	while (c->slot[h]) {
		if (c->slot[h] == uuid)
			return 1;
		h = (h + 1) & (c->cap - 1);
	}
	c->slot[h] = uuid;
	c->n++;
	return 0;
}

static uint64_t process_uuid(unsigned file) { return ((uint64_t)file + 1) << 48; }
static uint64_t thread_uuid(unsigned file, unsigned thread)
{
	return process_uuid(file) | ((uint64_t)thread + 1) << 17;
}
static uint64_t counter_uuid(unsigned file, unsigned thread, unsigned id)
{
	return thread_uuid(file, thread) | UINT64_C(1) << 16 | id;
}

static int emit(FILE *f, const struct pb *packet)
{
	if (packet->over)
		return -1;
	struct pb head = {.n = 0};
	varint(&head, (uint64_t)TRACE_PACKET << 3 | 2);
	varint(&head, packet->n);
	fwrite(head.b, 1, head.n, f);
	fwrite(packet->b, 1, packet->n, f);
	return 0;
}

static uint64_t clamp_ns(int64_t v) { return v < 0 ? 0 : (uint64_t)v; }

static void snapshot(struct pb *p, int64_t mono, int64_t unx)
{
	struct pb cs = {.n = 0}, c = {.n = 0};
	u64(&c, CLK_ID, CLOCK_NANOCLOCK);
	u64(&c, CLK_TIMESTAMP, clamp_ns(mono));
	msg(&cs, CS_CLOCKS, &c);
	c.n = 0;
	u64(&c, CLK_ID, CLOCK_REALTIME_ID);
	u64(&c, CLK_TIMESTAMP, clamp_ns(unx));
	msg(&cs, CS_CLOCKS, &c);
	u64(&cs, CS_PRIMARY, CLOCK_REALTIME_ID);
	msg(p, TP_CLOCK_SNAPSHOT, &cs);
}

/* A sequence's first packet up to its clocks: the sequence, state
 * cleared, the argument names interned. */
static void first_fields(struct pb *p, unsigned file)
{
	struct pb id = {.n = 0}, e = {.n = 0};
	u64(p, TP_SEQ_ID, file + 1);
	u64(p, TP_SEQ_FLAGS, SEQ_CLEARED);
	for (unsigned i = 0; i < sizeof(arg_names) / sizeof(arg_names[0]); i++) {
		e.n = 0;
		u64(&e, IN_IID, i + 1);
		str(&e, IN_NAME, arg_names[i]);
		msg(&id, ID_ANNOTATION_NAMES, &e);
	}
	msg(p, TP_INTERNED, &id);
}

/* An earlier export: a first packet (field 1, its length) that starts
 * with the first file's fields exactly as first_fields writes them. */
int tool_export_perfetto_is_ours(const unsigned char *head, size_t n)
{
	struct pb p = {.n = 0};
	first_fields(&p, 0);
	size_t k = 1;
	if (n < 2 || head[0] != (TRACE_PACKET << 3 | 2))
		return 0;
	while (k < n && k < 11 && (head[k] & 0x80))
		k++;
	k++; /* the length's last byte */
	return !p.over && n >= k && n - k >= p.n && !memcmp(head + k, p.b, p.n);
}

/* The sequence's first packets: state cleared, argument names, clocks,
 * the process's and threads' tracks. */
static int sequence_start(FILE *f, const struct tool_export *x, unsigned file, struct seq_state *s)
{
	struct nc_trace_info in;
	nc_trace_read_info(x->r[file], &in);
	int64_t mono = in.events ? in.first_mono_ns : in.tie_mono_ns;
	int64_t unx = in.events ? in.first_unix_ns : in.tie_unix_ns;
	struct pb p = {.n = 0};
	first_fields(&p, file);
	snapshot(&p, mono, unx);
	s->off = (int64_t)((uint64_t)unx - (uint64_t)mono);
	if (emit(f, &p))
		return -1;
	/* the process */
	char name[260], clean[160];
	tool_export_clean(clean, sizeof(clean), x->names ? x->names[file] : "trace");
	char host[64];
	tool_export_clean(host, sizeof(host), in.host);
	snprintf(name, sizeof(name), "%s: pid %u on %s", clean, in.pid, host[0] ? host : "?");
	struct pb td = {.n = 0}, d = {.n = 0};
	u64(&d, PD_PID, in.pid);
	str(&d, PD_NAME, name);
	u64(&td, TD_UUID, process_uuid(file));
	msg(&td, TD_PROCESS, &d);
	p.n = 0;
	u64(&p, TP_SEQ_ID, file + 1);
	msg(&p, TP_TRACK_DESCRIPTOR, &td);
	if (emit(f, &p))
		return -1;
	for (unsigned k = 0; k < in.threads; k++) {
		struct nc_trace_thread_info t;
		nc_trace_read_thread(x->r[file], k, &t);
		tool_export_clean(clean, sizeof(clean), t.name[0] ? t.name : "thread");
		td.n = d.n = p.n = 0;
		u64(&d, THD_PID, in.pid);
		u64(&d, THD_TID, (uint64_t)t.tid);
		str(&d, THD_NAME, clean);
		u64(&td, TD_UUID, thread_uuid(file, k));
		u64(&td, TD_PARENT, process_uuid(file));
		msg(&td, TD_THREAD, &d);
		u64(&p, TP_SEQ_ID, file + 1);
		msg(&p, TP_TRACK_DESCRIPTOR, &td);
		if (emit(f, &p))
			return -1;
	}
	return 0;
}

static void annotation(struct pb *te, unsigned iid, int is_signed, uint64_t v)
{
	struct pb a = {.n = 0};
	u64(&a, DA_NAME_IID, iid);
	u64(&a, is_signed ? DA_INT : DA_UINT, v);
	msg(te, TE_ANNOTATIONS, &a);
}

/* A begin's, an end's or an instant's annotations: the event's own
 * fields (from b: an end's names follow a begin's), the UTC bound, and
 * where machines were merged whether it is concurrent with another's */
static void annotations(struct pb *te, const struct tool_export *x, const struct nc_trace_rec *e,
			unsigned b)
{
	annotation(te, b, 0, e->arg);
	annotation(te, b + 1, 0, e->seq);
	annotation(te, b + 2, 0, e->ticks);
	annotation(te, b + 3, 1, (uint64_t)e->unix_ns);
	if (e->gseq != UINT64_MAX)
		annotation(te, b + 4, 0, e->gseq);
	if (e->cpu_ns >= 0)
		annotation(te, b + 5, 1, (uint64_t)e->cpu_ns);
	const struct nc_utc *u = &x->utc;
	if (u->status == NC_UTC_SYNCHRONISED || u->status == NC_UTC_FREE_RUNNING) {
		annotation(te, b + 6, 1, (uint64_t)u->earliest_ns);
		annotation(te, b + 7, 1, (uint64_t)u->latest_ns);
	}
	struct pb a = {.n = 0};
	u64(&a, DA_NAME_IID, b + 8);
	str(&a, DA_STRING, nc_utc_status_name(u->status));
	msg(te, TE_ANNOTATIONS, &a);
	if (x->hosts > 1) {
		a.n = 0;
		u64(&a, DA_NAME_IID, b + 9);
		u64(&a, DA_BOOL, (uint64_t)x->concurrent);
		msg(te, TE_ANNOTATIONS, &a);
	}
}

/* One event as its packet, after the packets it needs first (a counter's
 * track, the clocks where the Unix offset moved): 0 or NC_TRACE_ENOMEM */
static int event_packet(FILE *f, struct tool_export *x, const struct nc_trace_rec *e,
			struct seq_state *s, struct counters *ctr)
{
	char nb[32], clean[64];
	const char *nm = tool_export_ev_name(x, e->file, e->id, nb, sizeof(nb));
	tool_export_clean(clean, sizeof(clean), nm);
	struct pb p = {.n = 0}, te = {.n = 0};
	unsigned type = e->kind == NC_TRACE_BEGIN	? TYPE_BEGIN
			: e->kind == NC_TRACE_END	? TYPE_END
			: e->kind == NC_TRACE_COUNTER ? TYPE_COUNTER
						      : TYPE_INSTANT;
	uint64_t track = thread_uuid(e->file, e->thread);
	if (type == TYPE_COUNTER) {
		track = counter_uuid(e->file, e->thread, e->id);
		int seen = counter_seen(ctr, track);
		if (seen < 0)
			return NC_TRACE_ENOMEM;
		if (!seen) {
			struct pb td = {.n = 0}, cd = {.n = 0};
			u64(&td, TD_UUID, track);
			u64(&td, TD_PARENT, thread_uuid(e->file, e->thread));
			str(&td, TD_NAME, clean);
			msg(&td, TD_COUNTER, &cd);
			u64(&p, TP_SEQ_ID, e->file + 1);
			msg(&p, TP_TRACK_DESCRIPTOR, &td);
			emit(f, &p);
			p.n = 0;
		}
	}
	/* the clocks again where nanoclock's Unix offset moved */
	int64_t off = (int64_t)((uint64_t)e->unix_ns - (uint64_t)e->mono_ns);
	if (off != s->off) {
		u64(&p, TP_SEQ_ID, e->file + 1);
		snapshot(&p, e->mono_ns, e->unix_ns);
		emit(f, &p);
		p.n = 0;
		s->off = off;
	}
	u64(&p, TP_TIMESTAMP, clamp_ns(e->mono_ns));
	u64(&p, TP_CLOCK_ID, CLOCK_NANOCLOCK);
	u64(&p, TP_SEQ_ID, e->file + 1);
	u64(&p, TP_SEQ_FLAGS, SEQ_NEEDS_STATE);
	u64(&te, TE_TYPE, type);
	u64(&te, TE_TRACK, track);
	if (type == TYPE_COUNTER) {
		u64(&te, TE_COUNTER, e->arg); /* int64 on the wire: two's complement */
	} else {
		if (type != TYPE_END) {
			if (!(s->named[e->id / 8] & (1u << (e->id % 8)))) {
				struct pb id = {.n = 0}, en = {.n = 0};
				u64(&en, IN_IID, (uint64_t)e->id + 1);
				str(&en, IN_NAME, clean);
				msg(&id, ID_EVENT_NAMES, &en);
				msg(&p, TP_INTERNED, &id);
				s->named[e->id / 8] |= (unsigned char)(1u << (e->id % 8));
			}
			u64(&te, TE_NAME_IID, (uint64_t)e->id + 1);
		}
		annotations(&te, x, e, type == TYPE_END ? NARGS + 1 : 1);
	}
	msg(&p, TP_TRACK_EVENT, &te);
	return emit(f, &p) ? NC_TRACE_ENOMEM : 0;
}

int tool_export_perfetto(FILE *f, struct tool_export *x)
{
	struct seq_state *seq = calloc(x->n ? x->n : 1, sizeof(*seq));
	struct counters ctr = {0};
	int rc = seq ? 0 : NC_TRACE_ENOMEM;
	for (unsigned i = 0; i < x->n && !rc; i++)
		if (sequence_start(f, x, i, &seq[i]))
			rc = NC_TRACE_ENOMEM;
	struct nc_trace_rec e;
	while (!rc && tool_export_next(x, &e))
		rc = event_packet(f, x, &e, &seq[e.file], &ctr);
	free(ctr.slot);
	free(seq);
	return rc;
}
