/* SPDX-License-Identifier: MIT */
/*
 * Merged iteration over the events of one or more checked traces.
 *
 * Each (file, thread) is a stream: its blocks in file order, each block's
 * records in order, a sync record setting the base that later compact
 * stamps extend (stamp = base + (low 32 bits - base's low 32 bits) mod
 * 2^32).  A binary heap picks the stream whose next event comes first: on
 * the counter within one file (all its threads read the same counter),
 * on Unix time across files (different processes or machines).  Equal
 * times go in global sequence order within a file that recorded one, then
 * by file, thread and the thread's sequence.  Memory: one stream per
 * thread, each holding the one block it is in (read from the file when
 * the stream reaches it); the events are decoded as they are taken.  A
 * read error (the file changed or went away since it was checked) ends
 * the iteration early: nc_trace_merge_error() tells.
 */
#include "trace_internal.h"

#include <stdlib.h>
#include <string.h>

struct stream {
	const struct nc_trace_reader *r;
	const struct nc__tr_thread *th;
	unsigned file, thread;
	size_t blk, pos;          /* next record: block index, offset in its records */
	unsigned char *buf;       /* block blk's records, once loaded */
	size_t cap;
	int loaded;
	uint64_t base, seq;
	struct nc_trace_rec ev;   /* the stream's next event */
};

struct nc_trace_merge {
	struct stream *s;
	size_t ns;
	size_t *heap;
	size_t nh;
	int by_unix;
	int err;
};

/* Decodes the stream's next event into s->ev: 0 at its end (or at a
 * read error, counted in *err). */
static int advance(struct stream *s, int *err)
{
	const struct nc_trace_reader *r = s->r;
	while (s->blk < s->th->nblk) {
		const struct nc__tr_block *b = &s->th->blk[s->blk];
		if (!s->loaded) {
			if (b->len > s->cap) {
				unsigned char *nb = realloc(s->buf, b->len);
				if (!nb) {
					*err = NC_TRACE_ENOMEM;
					break;
				}
				s->buf = nb;
				s->cap = b->len;
			}
			if (nc__tr_pread(r, b->off, s->buf, b->len)) {
				*err = NC_TRACE_EIO;
				break;
			}
			s->loaded = 1;
			s->pos = 0;
			s->seq = b->first_seq;
		}
		if (s->pos + 8 > b->len) {
			s->blk++;
			s->loaded = 0;
			continue;
		}
		const unsigned char *w = s->buf + s->pos;
		uint64_t h = nc__get64(w);
		unsigned words = (unsigned)(h >> 56), kind = (unsigned)(h >> 48) & 0xff;
		/* checked at open; a file rewritten since is not trusted either */
		size_t rec = (size_t)(words ? words : 1) * 8;
		unsigned need = kind == NC__TR_KIND_SYNC ? NC__TR_SYNC_WORDS
				: kind < 0x80		 ? 2 + r->ext_words
							 : 1;
		if (rec > b->len - s->pos || words < need) {
			*err = NC_TRACE_EIO;
			break;
		}
		s->pos += rec;
		if (kind == NC__TR_KIND_SYNC) {
			s->base = nc__get64(w + 8);
			continue;
		}
		if (kind >= 0x80)
			continue;
		struct nc_trace_rec *e = &s->ev;
		e->ticks = s->base + (uint32_t)((uint32_t)h - (uint32_t)s->base);
		e->id = (unsigned)(h >> 32) & 0xffff;
		e->kind = kind;
		e->arg = nc__get64(w + 8);
		unsigned k = 2;
		e->gseq = (r->info.flags & NC_TRACE_GSEQ) ? nc__get64(w + 8 * k++) : UINT64_MAX;
		e->cpu_ns = (r->info.flags & NC_TRACE_CPUTIME) ? (int64_t)nc__get64(w + 8 * k++) : -1;
		e->seq = s->seq++;
		e->file = s->file;
		e->thread = s->thread;
		nc__tr_convert(r, e->ticks, &e->mono_ns, &e->unix_ns);
		return 1;
	}
	free(s->buf); /* done with this stream */
	s->buf = NULL;
	s->cap = 0;
	return 0;
}

static int before(const struct nc_trace_merge *m, const struct nc_trace_rec *a,
		  const struct nc_trace_rec *b)
{
	if (m->by_unix) {
		if (a->unix_ns != b->unix_ns)
			return a->unix_ns < b->unix_ns;
	} else if (a->ticks != b->ticks) {
		return a->ticks < b->ticks;
	}
	if (a->file != b->file)
		return a->file < b->file;
	if (a->gseq != b->gseq) /* UINT64_MAX for both when not recorded */
		return a->gseq < b->gseq;
	if (a->thread != b->thread)
		return a->thread < b->thread;
	return a->seq < b->seq;
}

static int less(const struct nc_trace_merge *m, size_t i, size_t j)
{
	return before(m, &m->s[m->heap[i]].ev, &m->s[m->heap[j]].ev);
}

static void swap(size_t *h, size_t i, size_t j)
{
	size_t x = h[i];
	h[i] = h[j];
	h[j] = x;
}

static void sift_down(struct nc_trace_merge *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, best = i;
		if (l < m->nh && less(m, l, best))
			best = l;
		if (r < m->nh && less(m, r, best))
			best = r;
		if (best == i)
			return;
		swap(m->heap, i, best);
		i = best;
	}
}

static void sift_up(struct nc_trace_merge *m, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!less(m, i, p))
			return;
		swap(m->heap, i, p);
		i = p;
	}
}

int nc_trace_merge_open(struct nc_trace_merge **out, struct nc_trace_reader *const *r, unsigned n)
{
	if (!out || (!r && n))
		return NC_EINVAL;
	*out = NULL;
	size_t ns = 0;
	for (unsigned i = 0; i < n; i++) {
		if (!r[i])
			return NC_EINVAL;
		ns += r[i]->nth;
	}
	struct nc_trace_merge *m = calloc(1, sizeof(*m));
	if (!m)
		return NC_TRACE_ENOMEM;
	m->s = calloc(ns ? ns : 1, sizeof(*m->s));
	m->heap = calloc(ns ? ns : 1, sizeof(*m->heap));
	if (!m->s || !m->heap) {
		nc_trace_merge_close(m);
		return NC_TRACE_ENOMEM;
	}
	m->by_unix = n > 1;
	for (unsigned i = 0; i < n; i++)
		for (size_t t = 0; t < r[i]->nth; t++) {
			struct stream *s = &m->s[m->ns++];
			s->r = r[i];
			s->th = &r[i]->th[t];
			s->file = i;
			s->thread = (unsigned)t;
			if (advance(s, &m->err)) {
				m->heap[m->nh++] = m->ns - 1;
				sift_up(m, m->nh - 1);
			}
		}
	*out = m;
	return 0;
}

int nc_trace_merge_next(struct nc_trace_merge *m, struct nc_trace_rec *ev)
{
	if (!m || !ev || m->nh == 0)
		return 0;
	struct stream *s = &m->s[m->heap[0]];
	*ev = s->ev;
	if (advance(s, &m->err)) {
		sift_down(m, 0);
	} else {
		m->heap[0] = m->heap[--m->nh];
		sift_down(m, 0);
	}
	return 1;
}

int nc_trace_merge_error(const struct nc_trace_merge *m) { return m ? m->err : NC_EINVAL; }

void nc_trace_merge_close(struct nc_trace_merge *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->ns; i++)
		free(m->s[i].buf);
	free(m->s);
	free(m->heap);
	free(m);
}
