/* SPDX-License-Identifier: MIT */
/*
 * Reading a trace: one pass over the whole file checks every record and
 * every block, indexes each thread's blocks and collects the sync records,
 * so that iteration later (trace_merge.c) never meets an error.
 *
 * Nothing in the file is trusted: every length is checked against what
 * remains before it is used, a record length of zero or one not a multiple
 * of 8 is refused (no loop can stall), thread numbers must be dense and
 * declared before use, and every allocation grows with records actually
 * present, so memory stays proportional to the file's size.
 */
#include "trace_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The largest file read: the reader holds it in memory (and half the
 * address space on 32-bit targets). */
#define MAX_FILE (UINT64_C(1) << 40)

static int fail(char *why, size_t whylen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *why, size_t whylen, int rc, const char *fmt, ...)
{
	if (why && whylen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
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

static int parse_domain(struct parse *ps, const unsigned char *p, size_t n, size_t off)
{
	struct nc_trace_reader *r = ps->r;
	struct nc_trace_info *in = &r->info;
	if (ps->have_domain)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: a second clock-domain record at byte %zu", off);
	if (n < NC__TR_DOMAIN_BYTES - 8)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: clock-domain record of %zu bytes at byte %zu is too short", n + 8,
			    off);
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

static int parse_thread(struct parse *ps, const unsigned char *p, size_t n, size_t off)
{
	struct nc_trace_reader *r = ps->r;
	if (n < NC__TR_THREAD_BYTES - 8)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: thread record at byte %zu is too short", off);
	uint32_t idx = nc__get32(p);
	if (idx != r->nth)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: thread record at byte %zu declares thread %u, expected %zu", off,
			    idx, r->nth);
	if (grow((void **)&r->th, &r->capth, r->nth, sizeof(*r->th)))
		return fail(ps->why, ps->whylen, NC_TRACE_ENOMEM, "out of memory");
	struct nc__tr_thread *t = &r->th[r->nth++];
	memset(t, 0, sizeof(*t));
	t->info.tid = (int64_t)nc__get64(p + 8);
	copy_str(t->info.name, sizeof(t->info.name), p + 16, 32);
	return 0;
}

static int parse_name(struct parse *ps, const unsigned char *p, size_t n, size_t off)
{
	struct nc_trace_reader *r = ps->r;
	if (n < NC__TR_NAME_BYTES - 8)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: name record at byte %zu is too short", off);
	uint32_t id = nc__get32(p);
	if (id > 0xffff)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: name record at byte %zu for event id %u (> 65535)", off, id);
	if (grow((void **)&r->names, &r->capnames, r->nnames, sizeof(*r->names)))
		return fail(ps->why, ps->whylen, NC_TRACE_ENOMEM, "out of memory");
	struct nc__tr_name *e = &r->names[r->nnames++];
	e->id = id;
	copy_str(e->name, sizeof(e->name), p + 8, 48);
	return 0;
}

static int add_anchor(struct nc_trace_reader *r, const unsigned char *w)
{
	if (grow((void **)&r->an, &r->capan, r->nan, sizeof(*r->an)))
		return -1;
	struct nc__tr_anchor *a = &r->an[r->nan++];
	memset(a, 0, sizeof(*a));
	a->t = nc__get64(w + 16);
	a->width = nc__get64(w + 24);
	a->mono = (int64_t)nc__get64(w + 32);
	a->real = (int64_t)nc__get64(w + 40);
	return 0;
}

/* A block: its records are walked and checked, and its events counted. */
static int parse_block(struct parse *ps, const unsigned char *p, size_t n, size_t off)
{
	struct nc_trace_reader *r = ps->r;
	struct nc_trace_info *in = &r->info;
	if (n < NC__TR_BLOCK_HDR - 8)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: block at byte %zu is too short", off);
	uint32_t ti = nc__get32(p);
	if (ti >= r->nth)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: block at byte %zu belongs to undeclared thread %u", off, ti);
	struct nc__tr_thread *t = &r->th[ti];
	uint64_t first_seq = nc__get64(p + 16);
	uint64_t nev = nc__get64(p + 32) & 0xffffffffu;
	if (t->info.blocks > 0 && first_seq < t->next_seq)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: block at byte %zu: thread %u's sequence goes back from %llu to "
			    "%llu",
			    off, ti, (unsigned long long)t->next_seq, (unsigned long long)first_seq);
	if (first_seq > UINT64_MAX - nev)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: block at byte %zu: sequence numbers overflow", off);
	/* the records */
	const unsigned char *d = p + (NC__TR_BLOCK_HDR - 8);
	size_t len = n - (NC__TR_BLOCK_HDR - 8), pos = 0;
	uint64_t base = 0, count = 0;
	int have_base = 0;
	while (pos < len) {
		uint64_t h = nc__get64(d + pos);
		unsigned words = (unsigned)(h >> 56), kind = (unsigned)(h >> 48) & 0xff;
		if (words == 0 || (size_t)words * 8 > len - pos)
			return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
				    "corrupt: block at byte %zu: record at byte %zu has length %u words, "
				    "%zu bytes remain",
				    off, off + NC__TR_BLOCK_HDR + pos, words, len - pos);
		const unsigned char *w = d + pos;
		if (kind == NC__TR_KIND_SYNC) {
			if (words < NC__TR_SYNC_WORDS)
				return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
					    "corrupt: block at byte %zu: short sync record", off);
			base = nc__get64(w + 8);
			if ((uint32_t)base != (uint32_t)h)
				return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
					    "corrupt: block at byte %zu: sync record at byte %zu "
					    "contradicts itself",
					    off, off + NC__TR_BLOCK_HDR + pos);
			have_base = 1;
			t->info.syncs++;
			in->syncs++;
			if (add_anchor(r, w))
				return fail(ps->why, ps->whylen, NC_TRACE_ENOMEM, "out of memory");
		} else if (kind < 0x80) {
			if (!have_base)
				return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
					    "corrupt: block at byte %zu does not start with a sync "
					    "record",
					    off);
			if (words < 2 + r->ext_words)
				return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
					    "corrupt: block at byte %zu: event of %u words, at least %u "
					    "expected",
					    off, words, 2 + r->ext_words);
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
				    "corrupt: block at byte %zu does not start with a sync record", off);
		}
		/* other kinds >= 0x80: records of a later minor version, skipped */
		pos += (size_t)words * 8;
	}
	if (!have_base)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: block at byte %zu has no sync record", off);
	if (count != nev)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: block at byte %zu holds %llu events, its header says %llu", off,
			    (unsigned long long)count, (unsigned long long)nev);
	if (grow((void **)&t->blk, &t->cap, t->nblk, sizeof(*t->blk)))
		return fail(ps->why, ps->whylen, NC_TRACE_ENOMEM, "out of memory");
	struct nc__tr_block *b = &t->blk[t->nblk++];
	b->off = (size_t)(d - r->data);
	b->len = len;
	b->first_seq = first_seq;
	b->nevents = (uint32_t)nev;
	/* a gap: events dropped or overwritten before this block (the first
	 * block of a thread should start at 0) */
	uint64_t expect = t->info.blocks > 0 ? t->next_seq : 0;
	if (first_seq > expect) {
		t->info.gaps++;
		t->info.missing += first_seq - expect;
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

static int parse_end(struct parse *ps, const unsigned char *p, size_t n, size_t off)
{
	struct nc_trace_reader *r = ps->r;
	if (n < NC__TR_END_HEAD - 8)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: totals record at byte %zu is too short", off);
	uint32_t nt = nc__get32(p), per = nc__get32(p + 4);
	if (nt != r->nth || per < NC__TR_END_PER_THREAD || per % 8 != 0 ||
	    (uint64_t)nt * per > n - (NC__TR_END_HEAD - 8))
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: totals record at byte %zu does not match the %zu threads", off,
			    r->nth);
	r->info.hz_final = get_f64(p + 8);
	r->info.hz_final_ppm = get_f64(p + 16);
	for (uint32_t i = 0; i < nt; i++) {
		const unsigned char *q = p + (NC__TR_END_HEAD - 8) + (size_t)i * per;
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

static int parse(struct parse *ps)
{
	struct nc_trace_reader *r = ps->r;
	const unsigned char *d = r->data;
	size_t len = r->len;
	if (len == 0)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT, "empty file");
	if (len < 8 || memcmp(d, NC__TR_MAGIC, 8) != 0)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "not a nanoclock trace (no NCTRACE signature)");
	if (len < NC__TR_FILE_HDR)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "truncated: %zu bytes, shorter than the file header", len);
	unsigned major = d[8] | (unsigned)d[9] << 8, minor = d[10] | (unsigned)d[11] << 8;
	r->info.version_major = major;
	r->info.version_minor = minor;
	if (major != NC__TR_MAJOR)
		return fail(ps->why, ps->whylen, NC_TRACE_EVERSION,
			    "trace format version %u.%u: this reader reads version %u", major, minor,
			    NC__TR_MAJOR);
	uint32_t hl = nc__get32(d + 12);
	if (nc__get64(d + 16) != NC__TR_BOM)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: byte-order mark is wrong (not a little-endian trace)");
	if (hl < NC__TR_FILE_HDR || hl % 8 != 0 || hl > len)
		return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
			    "corrupt: file header length %u (file of %zu bytes)", hl, len);
	size_t off = hl;
	while (off < len) {
		if (len - off < 8)
			return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
				    "truncated: %zu stray bytes at byte %zu, not a whole record", len - off,
				    off);
		uint32_t type = nc__get32(d + off), n = nc__get32(d + off + 4);
		if (n < 8 || n % 8 != 0)
			return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
				    "corrupt: record at byte %zu has length %u", off, n);
		if (n > len - off)
			return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
				    "truncated: record at byte %zu needs %u bytes, %zu remain", off, n,
				    len - off);
		const unsigned char *p = d + off + 8;
		size_t pl = n - 8;
		int rc = 0;
		if (!ps->have_domain && type != NC__TR_DOMAIN)
			return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
				    "corrupt: record at byte %zu comes before the clock-domain record", off);
		if (r->info.closed && type != NC__TR_END)
			return fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
				    "corrupt: record at byte %zu after the totals record", off);
		switch (type) {
		case NC__TR_DOMAIN: rc = parse_domain(ps, p, pl, off); break;
		case NC__TR_THREAD: rc = parse_thread(ps, p, pl, off); break;
		case NC__TR_NAME: rc = parse_name(ps, p, pl, off); break;
		case NC__TR_BLOCK: rc = parse_block(ps, p, pl, off); break;
		case NC__TR_END:
			rc = r->info.closed ? fail(ps->why, ps->whylen, NC_TRACE_EFORMAT,
						   "corrupt: a second totals record at byte %zu", off)
					    : parse_end(ps, p, pl, off);
			break;
		default: break; /* a record type of a later minor version */
		}
		if (rc)
			return rc;
		off += n;
	}
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
			t->info.missing += t->info.counts.events - next;
		}
		in->gaps += r->th[i].info.gaps;
		in->missing += r->th[i].info.missing;
		if (r->th[i].info.max_delta_ticks > in->max_delta_ticks)
			in->max_delta_ticks = r->th[i].info.max_delta_ticks;
		in->backwards += r->th[i].info.backwards;
	}
	/* extrapolation uses the best rate the file states */
	nc_conv_t c;
	if (in->closed && nc__hz_valid(in->hz_final) && nc_conv_init(&c, in->hz_final) == 0)
		r->conv = c;
	else
		in->hz_final = in->hz_final_ppm = 0;
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
	free(r->data);
	free(r);
}

static int cmp_name(const void *a, const void *b)
{
	const struct nc__tr_name *x = a, *y = b;
	if (x->id != y->id)
		return (x->id > y->id) - (x->id < y->id);
	return strcmp(x->name, y->name); /* a repeated id: deterministically one name */
}

/* Takes ownership of data (malloc'ed, len bytes). */
static int read_owned(struct nc_trace_reader **out, unsigned char *data, size_t len, char *why,
		      size_t whylen)
{
	struct nc_trace_reader *r = calloc(1, sizeof(*r));
	if (!r) {
		free(data);
		return fail(why, whylen, NC_TRACE_ENOMEM, "out of memory");
	}
	r->data = data;
	r->len = len;
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
	return read_owned(out, copy, len, why, whylen);
}

int nc_trace_read_file(struct nc_trace_reader **out, const char *path, char *why, size_t whylen)
{
	if (!out || !path)
		return fail(why, whylen, NC_EINVAL, "invalid argument");
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (!f)
		return fail(why, whylen, NC_TRACE_EIO, "cannot open: %s", strerror(errno));
	struct stat st;
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
		fclose(f);
		return fail(why, whylen, NC_TRACE_EIO, "not a regular file");
	}
	if ((uint64_t)st.st_size > MAX_FILE || (uint64_t)st.st_size > SIZE_MAX / 2) {
		fclose(f);
		return fail(why, whylen, NC_TRACE_EIO, "file too large (%lld bytes)",
			    (long long)st.st_size);
	}
	size_t len = (size_t)st.st_size;
	unsigned char *buf = malloc(len ? len : 1);
	if (!buf) {
		fclose(f);
		return fail(why, whylen, NC_TRACE_ENOMEM, "out of memory (%zu bytes)", len);
	}
	size_t got = fread(buf, 1, len, f);
	int err = ferror(f);
	fclose(f);
	if (err) {
		free(buf);
		return fail(why, whylen, NC_TRACE_EIO, "read error");
	}
	if (why && whylen)
		why[0] = 0;
	return read_owned(out, buf, got, why, whylen);
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
