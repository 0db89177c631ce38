/* SPDX-License-Identifier: MIT */
/*
 * Reading a trace: one pass over the whole file checks every record and
 * every block, indexes each thread's blocks and collects the sync records,
 * so that iteration later (merge.c) never meets an error in the file.
 *
 * The file is read in place, record by record (pread), never whole: the
 * signature is checked before anything else, and what stays in memory is
 * an index of 24 bytes per block, the thinned anchors (one per 10 ms of
 * the trace) and the names; a block is read into one buffer of at most
 * the writer's largest block (16 MiB).
 *
 * Nothing in the file is trusted: every length is checked against what
 * remains before it is used, a record length of zero or one not a multiple
 * of 8 is refused (no loop can stall), thread numbers must be dense and
 * declared before use, and every allocation grows with records actually
 * present.  A file cut short (the writer killed, the disk full) is read up
 * to its last complete record: nc_trace_read_complete() says where and why
 * it stops (a record running past the end, stray bytes, a tail of zeros).
 */
#include "trace_internal.h"
#include "base/fmt.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *why, size_t whylen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *why, size_t whylen, int rc, const char *fmt, ...)
{
	if (why && whylen) {
		va_list ap;
		va_start(ap, fmt);
		nc__vfmt(why, whylen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static double get_f64(const unsigned char *p)
{
	uint64_t u = nc__get64(p);
	double d;
	memcpy(&d, &u, 8);
	return d;
}

/* Grows *arr (elements of size sz) to hold one more; 0 or -1. */
static int grow(void **arr, size_t *cap, size_t n, size_t sz)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 8;
	if (c > SIZE_MAX / sz)
		return -1;
	void *p = realloc(*arr, c * sz);
	if (!p)
		return -1;
	*arr = p;
	*cap = c;
	return 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static void copy_str(char *dst, size_t dlen, const unsigned char *src, size_t slen)
{
	size_t n = 0;
	while (n < slen && n + 1 < dlen && src[n])
		n++;
	memcpy(dst, src, n);
	dst[n] = 0;
}

struct parse {
	struct nc_trace_reader *r;
	char *why;
	size_t whylen;
	int have_domain;
};

static int parse_domain(struct parse *ps, const unsigned char *p, size_t n, uint64_t off)
{
	struct nc_trace_reader *r = ps->r;
	struct nc_trace_info *in = &r->info;
	if (ps->have_domain)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: a second clock-domain record at byte %llu", (unsigned long long)off);
	if (n < NC__TR_DOMAIN_BYTES_1_0 - 8)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: clock-domain record of %zu bytes at byte %llu is too short", n + 8,
			    (unsigned long long)off);
	copy_str(in->counter, sizeof(in->counter), p, 32);
	in->hz = get_f64(p + 32);
	in->hz_ppm = get_f64(p + 40);
	in->conv.ns_int = nc__get64(p + 48);
	in->conv.ns_frac = nc__get64(p + 56);
	in->conv.tk_int = nc__get64(p + 64);
	in->conv.tk_frac = nc__get64(p + 72);
	in->conv.hz_q24 = nc__get64(p + 80);
	in->tie_ticks = nc__get64(p + 88);
	in->tie_unix_ns = (int64_t)nc__get64(p + 96);
	in->tie_mono_ns = (int64_t)nc__get64(p + 104);
	in->tie_error_ns = get_f64(p + 112);
	in->utc_error_ns = get_f64(p + 120);
	in->synchronised = (int32_t)nc__get32(p + 128);
	in->sync_verdict = (int32_t)nc__get32(p + 132);
	in->sync_max_shift_ticks = nc__get64(p + 136);
	in->sync_ncpus = nc__get32(p + 144);
	in->pid = nc__get32(p + 148);
	in->flags = nc__get32(p + 152);
	in->mode = (int32_t)nc__get32(p + 156);
	in->block_bytes = nc__get32(p + 160);
	in->blocks = nc__get32(p + 164);
	in->sync_period_ticks = nc__get64(p + 168);
	copy_str(in->host, sizeof(in->host), p + 176, 64);
	if (n >= NC__TR_DOMAIN_BYTES - 8) { /* 1.1: the shared record the writer used */
		in->shared = (int32_t)nc__get32(p + 240);
		in->shared_writer_pid = nc__get32(p + 244);
		in->shared_writer_uid = nc__get32(p + 248);
		in->shared_generation = nc__get64(p + 256);
		in->shared_hz = get_f64(p + 264);
		in->shared_ppm = get_f64(p + 272);
		copy_str(in->shared_path, sizeof(in->shared_path), p + 280, 128);
		if (in->shared < 0 || in->shared > 2)
			return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
				    "corrupt: the clock-domain record's shared-record state is %d",
				    in->shared);
	}
	/* the conversion must be the one its rate gives: a reader converts
	 * with it where no sync record reaches */
	nc_conv_t c;
	uint64_t q24;
	if (!nc__hz_valid(in->hz) || nc__hz_to_q24(in->hz, &q24) != 0 || q24 != in->conv.hz_q24 ||
	    nc__conv_from_q24(&c, in->conv.hz_q24) != 0 || memcmp(&c, &in->conv, sizeof(c)) != 0)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: the clock-domain record's rate and conversion disagree");
	if (!(in->hz_ppm >= 0 && in->hz_ppm < 1e6))
		in->hz_ppm = NAN;
	r->conv = in->conv;
	r->ext_words = ((in->flags & NC_TRACE_GSEQ) ? 1u : 0u) + ((in->flags & NC_TRACE_CPUTIME) ? 1u : 0u);
	ps->have_domain = 1;
	return 0;
}

static int parse_thread(struct parse *ps, const unsigned char *p, size_t n, uint64_t off)
{
	struct nc_trace_reader *r = ps->r;
	if (n < NC__TR_THREAD_BYTES - 8)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: thread record at byte %llu is too short", (unsigned long long)off);
	uint32_t idx = nc__get32(p);
	if (idx != r->nth)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: thread record at byte %llu declares thread %u, expected %zu", (unsigned long long)off,
			    idx, r->nth);
	if (grow((void **)&r->th, &r->capth, r->nth, sizeof(*r->th)))
		return fail(ps->why, ps->whylen, NC_TRACE_ENOMEM, "out of memory");
	struct nc__tr_thread *t = &r->th[r->nth++];
	memset(t, 0, sizeof(*t));
	t->info.tid = (int64_t)nc__get64(p + 8);
	copy_str(t->info.name, sizeof(t->info.name), p + 16, 32);
	return 0;
}

static int parse_name(struct parse *ps, const unsigned char *p, size_t n, uint64_t off)
{
	struct nc_trace_reader *r = ps->r;
	if (n < NC__TR_NAME_BYTES - 8)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: name record at byte %llu is too short", (unsigned long long)off);
	uint32_t id = nc__get32(p);
	if (id > 0xffff)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: name record at byte %llu for event id %u (> 65535)", (unsigned long long)off, id);
	if (grow((void **)&r->names, &r->capnames, r->nnames, sizeof(*r->names)))
		return fail(ps->why, ps->whylen, NC_TRACE_ENOMEM, "out of memory");
	struct nc__tr_name *e = &r->names[r->nnames++];
	e->id = id;
	copy_str(e->name, sizeof(e->name), p + 8, 48);
	return 0;
}

/* A block's records (d, len bytes; o: the block's file offset), each
 * checked, its events counted into thread t and the totals; the count
 * must be the nev the header states. */
static int walk_records(struct parse *ps, struct nc__tr_thread *t, const unsigned char *d,
			size_t len, unsigned long long o, uint64_t nev)
{
	struct nc_trace_reader *r = ps->r;
	struct nc_trace_info *in = &r->info;
	size_t pos = 0;
	uint64_t base = 0, count = 0;
	int have_base = 0;
	while (pos < len) {
		uint64_t h = nc__get64(d + pos);
		unsigned words = (unsigned)(h >> 56), kind = (unsigned)(h >> 48) & 0xff;
		if (words == 0 || (size_t)words * 8 > len - pos)
			return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
				    "corrupt: block at byte %llu: record at byte %llu has length %u "
				    "words, %zu bytes remain",
				    o, o + NC__TR_BLOCK_HDR + pos, words, len - pos);
		const unsigned char *w = d + pos;
		if (kind == NC__TR_KIND_SYNC) {
			if (words < NC__TR_SYNC_WORDS)
				return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
					    "corrupt: block at byte %llu: short sync record", o);
			base = nc__get64(w + 8);
			if ((uint32_t)base != (uint32_t)h)
				return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
					    "corrupt: block at byte %llu: sync record at byte %llu "
					    "contradicts itself",
					    o, o + NC__TR_BLOCK_HDR + pos);
			have_base = 1;
			t->info.syncs++;
			in->syncs++;
			if (nc__tr_anchor_add(r, w, words))
				return fail(ps->why, ps->whylen, NC_TRACE_ENOMEM, "out of memory");
		} else if (kind < 0x80) {
			if (!have_base)
				return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
					    "corrupt: block at byte %llu does not start with a sync "
					    "record",
					    o);
			if (words < 2 + r->ext_words)
				return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
					    "corrupt: block at byte %llu: event of %u words, at least "
					    "%u expected",
					    o, words, 2 + r->ext_words);
			uint64_t delta = (uint32_t)((uint32_t)h - (uint32_t)base);
			uint64_t tk = base + delta;
			if (delta > t->info.max_delta_ticks)
				t->info.max_delta_ticks = delta;
			if (t->have_last && tk < t->last_ticks)
				t->info.backwards++;
			t->last_ticks = tk;
			t->have_last = 1;
			if (in->events == 0 || tk < in->first_ticks)
				in->first_ticks = tk;
			if (in->events == 0 || tk > in->last_ticks)
				in->last_ticks = tk;
			in->events++;
			count++;
		} else if (!have_base) {
			return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
				    "corrupt: block at byte %llu does not start with a sync record", o);
		}
		/* other kinds >= 0x80: records of a later minor version, skipped */
		pos += (size_t)words * 8;
	}
	if (!have_base)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: block at byte %llu has no sync record", o);
	if (count != nev)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: block at byte %llu holds %llu events, its header says %llu", o,
			    (unsigned long long)count, (unsigned long long)nev);
	return 0;
}

/* A block: its records are walked and checked, and its events counted.
 * p: the block header after the record header, n bytes; at: the file
 * offset of p. */
static int parse_block(struct parse *ps, const unsigned char *p, size_t n, uint64_t off,
		       uint64_t at)
{
	struct nc_trace_reader *r = ps->r;
	struct nc_trace_info *in = &r->info;
	unsigned long long o = off;
	if (n < NC__TR_BLOCK_HDR - 8)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: block at byte %llu is too short", o);
	uint32_t ti = nc__get32(p);
	if (ti >= r->nth)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: block at byte %llu belongs to undeclared thread %u", o, ti);
	struct nc__tr_thread *t = &r->th[ti];
	uint64_t first_seq = nc__get64(p + 16);
	uint64_t nev = nc__get64(p + 32) & 0xffffffffu;
	if (t->info.blocks > 0 && first_seq < t->next_seq)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: block at byte %llu: thread %u's sequence goes back from %llu to "
			    "%llu",
			    o, ti, (unsigned long long)t->next_seq, (unsigned long long)first_seq);
	if (first_seq > UINT64_MAX - nev)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: block at byte %llu: sequence numbers overflow", o);
	size_t len = n - (NC__TR_BLOCK_HDR - 8);
	int rc = walk_records(ps, t, p + (NC__TR_BLOCK_HDR - 8), len, o, nev);
	if (rc)
		return rc;
	if (grow((void **)&t->blk, &t->cap, t->nblk, sizeof(*t->blk)))
		return fail(ps->why, ps->whylen, NC_TRACE_ENOMEM, "out of memory");
	struct nc__tr_block *b = &t->blk[t->nblk++];
	b->off = at + (NC__TR_BLOCK_HDR - 8);
	b->len = (uint32_t)len;
	b->first_seq = first_seq;
	b->nevents = (uint32_t)nev;
	/* a gap: events dropped or overwritten before this block (the first
	 * block of a thread should start at 0) */
	uint64_t expect = t->info.blocks > 0 ? t->next_seq : 0;
	if (first_seq > expect) {
		t->info.gaps++;
		t->info.missing = sat_add(t->info.missing, first_seq - expect);
	}
	if (nev > 0) {
		if (t->info.events == 0)
			t->info.first_seq = first_seq;
		t->info.last_seq = first_seq + nev - 1;
	}
	t->next_seq = first_seq + nev;
	t->info.events += nev;
	t->info.blocks++;
	in->blocks_read++;
	return 0;
}

/* The totals record: its head is in p (n bytes of the body in the file,
 * at `at`); each thread's entry is read on its own (a hostile stride
 * cannot make the reader load the record whole). */
static int parse_end(struct parse *ps, const unsigned char *p, uint64_t n, uint64_t off, uint64_t at)
{
	struct nc_trace_reader *r = ps->r;
	unsigned long long o = off;
	if (n < NC__TR_END_HEAD - 8)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: totals record at byte %llu is too short", o);
	uint32_t nt = nc__get32(p), per = nc__get32(p + 4);
	if (nt != r->nth || per < NC__TR_END_PER_THREAD || per % 8 != 0 ||
	    (uint64_t)nt * per > n - (NC__TR_END_HEAD - 8))
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: totals record at byte %llu does not match the %zu threads", o,
			    r->nth);
	r->info.hz_final = get_f64(p + 8);
	r->info.hz_final_ppm = get_f64(p + 16);
	for (uint32_t i = 0; i < nt; i++) {
		unsigned char q[NC__TR_END_PER_THREAD];
		if (nc__tr_pread(r, at + (NC__TR_END_HEAD - 8) + (uint64_t)i * per, q, sizeof(q)))
			return fail(ps->why, ps->whylen, NC_TRACE_EIO, "read error: %s", strerror(errno));
		struct nc_trace_counts *c = &r->th[i].info.counts;
		c->events = nc__get64(q);
		c->dropped = nc__get64(q + 8);
		c->nested = nc__get64(q + 16);
		c->late = nc__get64(q + 24);
		c->overwritten = nc__get64(q + 32);
		c->syncs = nc__get64(q + 40);
		r->th[i].info.have_counts = 1;
	}
	r->info.closed = 1;
	return 0;
}

int nc__tr_pread(const struct nc_trace_reader *r, uint64_t off, void *buf, size_t n)
{
	if (off > r->size || n > r->size - off) {
		errno = EIO; /* the file shrank under us */
		return -1;
	}
	if (r->fd < 0) {
		memcpy(buf, r->mem + off, n);
		return 0;
	}
	unsigned char *b = buf;
	while (n > 0) {
		ssize_t got = pread(r->fd, b, n, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			if (got == 0)
				errno = EIO;
			return -1;
		}
		b += got;
		off += (uint64_t)got;
		n -= (size_t)got;
	}
	return 0;
}

/* Whether the file holds only zero bytes from off on (holes skipped
 * without reading them). */
static int zero_tail(const struct nc_trace_reader *r, uint64_t off)
{
	unsigned char buf[4096];
	while (off < r->size) {
#ifdef SEEK_DATA
		if (r->fd >= 0) {
			off_t d = lseek(r->fd, (off_t)off, SEEK_DATA);
			if (d < 0 && errno == ENXIO)
				return 1; /* a hole to the end */
			if (d > (off_t)off)
				off = (uint64_t)d;
			if (off >= r->size)
				return 1;
		}
#endif
		size_t n = r->size - off < sizeof(buf) ? (size_t)(r->size - off) : sizeof(buf);
		if (nc__tr_pread(r, off, buf, n))
			return 0;
		for (size_t i = 0; i < n; i++)
			if (buf[i])
				return 0;
		off += n;
	}
	return 1;
}

/* The file stops being readable at off: every record before it stands. */
static void cut_short(struct nc_trace_reader *r, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void cut_short(struct nc_trace_reader *r, uint64_t off, const char *fmt, ...)
{
	r->complete = 0;
	r->used = off;
	int k = nc__fmt(r->stop, sizeof(r->stop), "cut short at byte %llu of %llu: ",
			 (unsigned long long)off, (unsigned long long)r->size);
	if (k < 0 || (size_t)k >= sizeof(r->stop))
		return;
	va_list ap;
	va_start(ap, fmt);
	nc__vfmt(r->stop + k, sizeof(r->stop) - (size_t)k, fmt, ap);
	va_end(ap);
}

/* How much of a record the parser needs (the rest, fields of a later
 * version, is skipped unread). */
static uint64_t needed(uint32_t type, uint32_t n)
{
	uint64_t want = type == NC__TR_DOMAIN ? NC__TR_DOMAIN_BYTES
			: type == NC__TR_THREAD ? NC__TR_THREAD_BYTES
			: type == NC__TR_NAME   ? NC__TR_NAME_BYTES
			: type == NC__TR_END    ? NC__TR_END_HEAD
			: type == NC__TR_BLOCK  ? n
						: 8;
	return want < n ? want : n;
}

/* The file header, the signature first, before anything is trusted or
 * allocated; *hl: its length, where the records start. */
static int parse_header(struct parse *ps, uint32_t *hl_out)
{
	struct nc_trace_reader *r = ps->r;
	uint64_t len = r->size;
	unsigned char h[NC__TR_FILE_HDR];
	if (len == 0)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT, "empty file");
	if (nc__tr_pread(r, 0, h, len < sizeof(h) ? (size_t)len : sizeof(h)))
		return fail(ps->why, ps->whylen, NC_TRACE_EIO, "read error: %s", strerror(errno));
	if (len < 8 || memcmp(h, NC__TR_MAGIC, 8) != 0)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "not a nanoclock trace (no NCTRACE signature)");
	if (len < NC__TR_FILE_HDR)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "truncated: %llu bytes, shorter than the file header",
			    (unsigned long long)len);
	unsigned major = h[8] | (unsigned)h[9] << 8, minor = h[10] | (unsigned)h[11] << 8;
	r->info.version_major = major;
	r->info.version_minor = minor;
	if (major != NC__TR_MAJOR)
		return fail(ps->why, ps->whylen, NC_TRACE_EVERSION,
			    "trace format version %u.%u: this reader reads version %u", major, minor,
			    NC__TR_MAJOR);
	uint32_t hl = nc__get32(h + 12);
	if (nc__get64(h + 16) != NC__TR_BOM)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: byte-order mark is wrong (not a little-endian trace)");
	if (hl < NC__TR_FILE_HDR || hl % 8 != 0 || hl > len)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: file header length %u (file of %llu bytes)", hl,
			    (unsigned long long)len);
	*hl_out = hl;
	return 0;
}

/* One record's body, as much of it as the parser reads (into *buf, grown
 * as needed), handed to the parser of its type. */
static int parse_record(struct parse *ps, unsigned char **buf, size_t *cap, uint32_t type,
			uint32_t n, uint64_t off)
{
	size_t want = (size_t)needed(type, n) - 8;
	if (want > *cap) {
		unsigned char *nb = realloc(*buf, want);
		if (!nb)
			return fail(ps->why, ps->whylen, NC_TRACE_ENOMEM, "out of memory");
		*buf = nb;
		*cap = want;
	}
	if (want && nc__tr_pread(ps->r, off + 8, *buf, want))
		return fail(ps->why, ps->whylen, NC_TRACE_EIO, "read error: %s", strerror(errno));
	const unsigned char *b = *buf;
	switch (type) {
	case NC__TR_DOMAIN: return parse_domain(ps, b, want, off);
	case NC__TR_THREAD: return parse_thread(ps, b, want, off);
	case NC__TR_NAME: return parse_name(ps, b, want, off);
	case NC__TR_BLOCK: return parse_block(ps, b, want, off, off + 8);
	case NC__TR_END:
		return ps->r->info.closed
			       ? fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
				      "corrupt: a second totals record at byte %llu",
				      (unsigned long long)off)
			       : parse_end(ps, b, (uint64_t)n - 8, off, off + 8);
	default: return 0; /* a record type of a later minor version */
	}
}

static int parse(struct parse *ps)
{
	struct nc_trace_reader *r = ps->r;
	uint64_t len = r->size;
	uint32_t hl = 0; /* set by parse_header where rc is 0 (gcc cannot tell) */
	int rc = parse_header(ps, &hl);
	if (rc)
		return rc;
	unsigned char *buf = NULL;
	size_t cap = 0;
	uint64_t off = hl;
	r->complete = 1;
	r->used = len;
	while (off < len && rc == 0) {
		unsigned long long o = off;
		unsigned char rh[8];
		if (len - off < 8) {
			if (!ps->have_domain)
				rc = fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
					  "truncated: %llu stray bytes at byte %llu, not a whole record",
					  (unsigned long long)(len - off), o);
			else
				cut_short(r, off, "%llu stray bytes, not a whole record",
					  (unsigned long long)(len - off));
			break;
		}
		if (nc__tr_pread(r, off, rh, 8)) {
			rc = fail(ps->why, ps->whylen, NC_TRACE_EIO, "read error: %s", strerror(errno));
			break;
		}
		uint32_t type = nc__get32(rh), n = nc__get32(rh + 4);
		if (ps->have_domain && type == 0 && n == 0 && zero_tail(r, off)) {
			/* space the file system gave the file before the writer
			 * stopped (a crash): not records */
			cut_short(r, off, "the remaining %llu bytes are zeros",
				  (unsigned long long)(len - off));
			break;
		}
		if (n < 8 || n % 8 != 0) {
			rc = fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
				  "corrupt: record at byte %llu has length %u", o, n);
			break;
		}
		if (type == NC__TR_BLOCK && n > NC__TR_MAX_BLOCK) {
			rc = fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
				  "corrupt: block at byte %llu of %u bytes (at most %u)", o, n,
				  NC__TR_MAX_BLOCK);
			break;
		}
		if (n > len - off) {
			if (!ps->have_domain)
				rc = fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
					  "truncated: record at byte %llu needs %u bytes, %llu remain", o,
					  n, (unsigned long long)(len - off));
			else
				cut_short(r, off, "a record of %u bytes, %llu bytes remain", n,
					  (unsigned long long)(len - off));
			break;
		}
		if (!ps->have_domain && type != NC__TR_DOMAIN) {
			rc = fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
				  "corrupt: record at byte %llu comes before the clock-domain record", o);
			break;
		}
		if (r->info.closed && type != NC__TR_END) {
			rc = fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
				  "corrupt: record at byte %llu after the totals record", o);
			break;
		}
		rc = parse_record(ps, &buf, &cap, type, n, off);
		off += n;
	}
	free(buf);
	if (rc)
		return rc;
	if (!ps->have_domain)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "truncated: no clock-domain record after the file header");
	return 0;
}

static void finish(struct nc_trace_reader *r)
{
	struct nc_trace_info *in = &r->info;
	in->threads = (unsigned)r->nth;
	in->names = r->nnames;
	for (size_t i = 0; i < r->nth; i++) {
		/* events lost after the thread's last block: the totals say how
		 * many were appended */
		struct nc__tr_thread *t = &r->th[i];
		uint64_t next = t->info.blocks ? t->next_seq : 0;
		if (t->info.have_counts && t->info.counts.events > next) {
			t->info.gaps++;
			t->info.missing = sat_add(t->info.missing, t->info.counts.events - next);
		}
		in->gaps = sat_add(in->gaps, r->th[i].info.gaps);
		in->missing = sat_add(in->missing, r->th[i].info.missing);
		if (r->th[i].info.max_delta_ticks > in->max_delta_ticks)
			in->max_delta_ticks = r->th[i].info.max_delta_ticks;
		in->backwards = sat_add(in->backwards, r->th[i].info.backwards);
	}
	/* extrapolation uses the best rate the file states */
	nc_conv_t c;
	if (in->closed && nc__hz_valid(in->hz_final) && nc_conv_init(&c, in->hz_final) == 0)
		r->conv = c;
	else
		in->hz_final = in->hz_final_ppm = 0;
	if (!(in->hz_final_ppm >= 0 && in->hz_final_ppm < 1e6))
		in->hz_final_ppm = NAN;
	nc__tr_anchors_build(r);
	if (in->events > 0) {
		nc__tr_convert(r, in->first_ticks, &in->first_mono_ns, &in->first_unix_ns);
		nc__tr_convert(r, in->last_ticks, &in->last_mono_ns, &in->last_unix_ns);
	}
}

void nc_trace_read_close(struct nc_trace_reader *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nth; i++)
		free(r->th[i].blk);
	free(r->th);
	free(r->names);
	free(r->an);
	free(r->mem);
	if (r->fd >= 0)
		close(r->fd);
	free(r);
}

static int cmp_name(const void *a, const void *b)
{
	const struct nc__tr_name *x = a, *y = b;
	if (x->id != y->id)
		return (x->id > y->id) - (x->id < y->id);
	return strcmp(x->name, y->name); /* a repeated id: deterministically one name */
}

/* Takes ownership of the source (fd >= 0, or mem: malloc'ed, size bytes). */
static int read_source(struct nc_trace_reader **out, int fd, unsigned char *mem, uint64_t size,
		       char *why, size_t whylen)
{
	struct nc_trace_reader *r = calloc(1, sizeof(*r));
	if (!r) {
		free(mem);
		if (fd >= 0)
			close(fd);
		return fail(why, whylen, NC_TRACE_ENOMEM, "out of memory");
	}
	r->fd = fd;
	r->mem = mem;
	r->size = size;
	struct parse ps = {r, why, whylen, 0};
	int rc = parse(&ps);
	if (rc) {
		nc_trace_read_close(r);
		return rc;
	}
	if (r->nnames > 1)
		qsort(r->names, r->nnames, sizeof(*r->names), cmp_name);
	finish(r);
	*out = r;
	return 0;
}

int nc_trace_read_mem(struct nc_trace_reader **out, const void *data, size_t len, char *why,
		      size_t whylen)
{
	if (why && whylen)
		why[0] = 0;
	if (!out || (!data && len))
		return fail(why, whylen, NC_EINVAL, "invalid argument");
	*out = NULL;
	unsigned char *copy = malloc(len ? len : 1);
	if (!copy)
		return fail(why, whylen, NC_TRACE_ENOMEM, "out of memory (%zu bytes)", len);
	if (len)
		memcpy(copy, data, len);
	return read_source(out, -1, copy, len, why, whylen);
}

int nc_trace_read_file(struct nc_trace_reader **out, const char *path, char *why, size_t whylen)
{
	if (why && whylen)
		why[0] = 0;
	if (!out || !path)
		return fail(why, whylen, NC_EINVAL, "invalid argument");
	*out = NULL;
	/* O_NONBLOCK: opening a FIFO must not wait for a writer; anything but
	 * a regular file is refused right after */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return fail(why, whylen, NC_TRACE_EIO, "cannot open: %s", strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail(why, whylen, NC_TRACE_EIO, "not a regular file");
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return read_source(out, fd, NULL, (uint64_t)st.st_size, why, whylen);
}

int nc_trace_read_utc(const struct nc_trace_reader *r, uint64_t ticks, struct nc_utc *out)
{
	if (!r || !out)
		return NC_EINVAL;
	return nc__tr_utc(r, ticks, out);
}

void nc_trace_read_info(const struct nc_trace_reader *r, struct nc_trace_info *out)
{
	if (r && out)
		*out = r->info;
}

int nc_trace_read_thread(const struct nc_trace_reader *r, unsigned i,
			 struct nc_trace_thread_info *out)
{
	if (!r || !out || i >= r->nth)
		return NC_EINVAL;
	*out = r->th[i].info;
	return 0;
}

const char *nc_trace_read_name(const struct nc_trace_reader *r, unsigned id)
{
	if (!r || r->nnames == 0)
		return NULL;
	/* the last of equal ids */
	size_t lo = 0, hi = r->nnames;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->names[mid].id <= id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || r->names[lo - 1].id != id)
		return NULL;
	return r->names[lo - 1].name;
}

int nc_trace_read_complete(const struct nc_trace_reader *r, uint64_t *used_bytes, char *why,
			   size_t whylen)
{
	if (used_bytes)
		*used_bytes = r ? r->used : 0;
	if (why && whylen)
		nc__copy(why, whylen, r && !r->complete ? r->stop : "");
	return r ? r->complete : 0;
}
