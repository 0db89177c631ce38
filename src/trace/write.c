/* SPDX-License-Identifier: MIT */
/*
 * The writer's slow path: everything an append does besides storing a
 * 16-byte event in the current block.
 *
 * A thread's buffer is a ring of blocks.  A block is laid out exactly as
 * the BLOCK record the file holds (docs/trace-format.md): an 8-byte record
 * header and a 40-byte block header (both filled when the block is
 * closed), then records of whole 8-byte words, the first always a sync
 * record.  Events store only the low 32 bits of their stamp; the reader
 * adds them to the full value `base` of the latest sync record.  That is
 * exact while 0 <= stamp - base < 2^32, which the writer guarantees: an
 * event whose stamp is not within pub.span (the sync period, at most
 * 2^32 - 1 ticks) of base, or is below it (a thread that moved to a CPU
 * whose counter lags), first gets a sync record with base = its stamp.
 *
 * A sync record also brackets CLOCK_MONOTONIC_RAW and CLOCK_REALTIME
 * between two counter reads: the reader interpolates between them (LTT's
 * scheme), so the writer never converts anything.
 *
 * Concurrency: only the owning thread and its signal handlers write the
 * buffer, serialised by pub.busy (see nc_trace_event_at).  Another thread
 * (the flusher) takes blocks whose state is full, published with release
 * after the headers were written, and gives them back with release; the
 * writer takes a free block with acquire.
 */
#include "trace_internal.h"

#include <time.h>

#define EV_BYTES 16u
#define SYNC_BYTES (NC__TR_SYNC_WORDS_UTC * 8u)

/* The global sequence number, alone on its cache line (128 bytes: adjacent
 * line prefetchers pair lines on x86). */
static struct {
	uint64_t v;
	unsigned char pad[120];
} gseq_line __attribute__((aligned(128)));

uint64_t nc__tr_gseq(void) { return __atomic_fetch_add(&gseq_line.v, 1, __ATOMIC_RELAXED); }

uint64_t nc_trace_global_seq_next(void) { return nc__tr_gseq(); }

static unsigned ext_bytes(const struct nc__tr_buf *b)
{
	return ((b->flags & NC_TRACE_GSEQ) ? 8u : 0u) + ((b->flags & NC_TRACE_CPUTIME) ? 8u : 0u);
}

static uint64_t *at(struct nc__tr_buf *b, uint64_t off)
{
	return (uint64_t *)(void *)(b->pub.blk + off);
}

/* The inline path may store 16-byte events while pos < lim; 0 when every
 * append needs this file (per-event options, a full ring, an ended buffer). */
static void set_lim(struct nc__tr_buf *b)
{
	int slow = b->waiting || b->ended || !b->open || ext_bytes(b) != 0;
	b->pub.lim = slow ? 0 : b->bsize - EV_BYTES + 1;
}

static uint64_t cur_events(const struct nc__tr_buf *b)
{
	uint64_t pos = __atomic_load_n(&b->pub.pos, __ATOMIC_RELAXED);
	return (pos - NC__TR_BLOCK_HDR - b->slow_bytes) / EV_BYTES + b->slow_events;
}

static void inc(uint64_t *c) { __atomic_fetch_add(c, 1, __ATOMIC_RELAXED); }

/* The clocks between two counter reads: the narrower of two brackets. */
static void bracket(uint64_t *mid, uint64_t *width, int64_t *mono, int64_t *real)
{
	*width = UINT64_MAX;
	for (int i = 0; i < 2; i++) {
		uint64_t a = nc_ticks_begin();
		int64_t m = nc__ref.raw();
		int64_t r = nc__ref.real();
		uint64_t c = nc_ticks_end();
		if (c >= a && c - a < *width) {
			*width = c - a;
			*mid = a + (c - a) / 2;
			*mono = m;
			*real = r;
		}
	}
	if (*width == UINT64_MAX) { /* the counter went backwards twice: keep a reading */
		*mid = nc_ticks();
		*mono = nc__ref.raw();
		*real = nc__ref.real();
	}
}

/* A sync record with base `t` (room checked by the caller). */
static void write_sync(struct nc__tr_buf *b, uint64_t t, unsigned reason)
{
	uint64_t mid = 0, width;
	int64_t mono = 0, real = 0;
	bracket(&mid, &width, &mono, &real);
	/* the UTC interval now, as half widths around CLOCK_REALTIME: the
	 * library's bound on nc_unix_ns (its tie to CLOCK_REALTIME included,
	 * which covers the few hundred ns between the two reads), and how
	 * fast it grows, so that a reader can bound the events up to the next
	 * sync record (inline, wait-free: fine in a signal handler) */
	struct nc_utc u;
	int st = nc_utc_now(&u);
	int known = st == NC_UTC_SYNCHRONISED || st == NC_UTC_FREE_RUNNING;
	uint64_t *r = at(b, b->pub.pos);
	r[0] = (uint64_t)(uint32_t)t | (uint64_t)reason << 32 | (uint64_t)NC__TR_KIND_SYNC << 48 |
	       (uint64_t)NC__TR_SYNC_WORDS_UTC << 56;
	r[1] = t;
	r[2] = mid;
	r[3] = width;
	r[4] = (uint64_t)mono;
	r[5] = (uint64_t)real;
	r[6] = nc__tr_gseq();
	r[7] = known ? (uint64_t)u.unix_ns - (uint64_t)u.earliest_ns + 1 : UINT64_MAX;
	r[8] = known ? (uint64_t)u.latest_ns - (uint64_t)u.unix_ns + 1 : UINT64_MAX;
	r[9] = (uint64_t)u.as_of_ns;
	r[10] = (uint64_t)((uint32_t)st & 0xff) | (uint64_t)((uint32_t)u.source & 0xff) << 8 |
		(uint64_t)nc__utc_growth_ppb() << 32;
	__atomic_store_n(&b->pub.pos, b->pub.pos + SYNC_BYTES, __ATOMIC_RELAXED);
	b->slow_bytes += SYNC_BYTES;
	b->pub.base = t;
	inc(&b->n_syncs);
}

/* Fills the headers and hands the block to the flusher. */
static void close_block(struct nc__tr_buf *b)
{
	if (!b->open)
		return;
	uint64_t n = cur_events(b), len = b->pub.pos;
	uint64_t *h = at(b, 0);
	h[0] = NC__TR_BLOCK | len << 32;
	h[1] = b->index;
	h[2] = b->block_no;
	h[3] = b->first_seq;
	/* h[4], dropped_before, was set when the block opened */
	h[5] = n;
	b->next_seq = b->first_seq + n;
	b->open = 0;
	__atomic_store_n(&b->state[b->cur], 1, __ATOMIC_RELEASE);
}

/* Starts block `i` with a sync record at base t. */
static void open_block(struct nc__tr_buf *b, uint32_t i, uint64_t t, unsigned reason)
{
	b->cur = i;
	b->pub.blk = b->mem + (size_t)i * b->bsize;
	b->block_no++;
	/* appends dropped by nesting took sequence numbers too: the gap shows
	 * at this block's start (the handler could not number them itself) */
	uint64_t nested = __atomic_load_n(&b->n_nested, __ATOMIC_RELAXED);
	b->pending_drops += nested - b->nested_seen;
	b->nested_seen = nested;
	b->first_seq = b->next_seq + b->pending_drops;
	at(b, 0)[4] = b->pending_drops;
	b->pending_drops = 0;
	b->slow_bytes = 0;
	b->slow_events = 0;
	__atomic_store_n(&b->pub.pos, NC__TR_BLOCK_HDR, __ATOMIC_RELAXED);
	b->open = 1;
	b->waiting = 0;
	write_sync(b, t, reason);
}

/* Closes the current block and opens the next: 0 when the ring is full in
 * drop mode (then the buffer waits, dropping, until the flusher frees it). */
static int next_block(struct nc__tr_buf *b, uint64_t t)
{
	close_block(b);
	uint32_t nx = (b->cur + 1) % b->nblk;
	if (__atomic_load_n(&b->state[nx], __ATOMIC_ACQUIRE) != 0) {
		if (!b->overwrite) {
			b->waiting = 1;
			return 0;
		}
		/* flight recorder: the oldest block goes, its events with it */
		const uint64_t *h = (const uint64_t *)(const void *)(b->mem + (size_t)nx * b->bsize);
		__atomic_fetch_add(&b->n_overwritten, h[5], __ATOMIC_RELAXED);
		__atomic_store_n(&b->state[nx], 0, __ATOMIC_RELAXED);
	}
	open_block(b, nx, t, NC__TR_SYNC_BLOCK);
	return 1;
}

static void drop(struct nc__tr_buf *b)
{
	b->pending_drops++;
	inc(&b->n_dropped);
}

static void append(struct nc__tr_buf *b, uint64_t t, uint64_t head, uint64_t arg)
{
	if (b->ended) {
		inc(&b->n_late);
		return;
	}
	uint64_t ext = ext_bytes(b), need = EV_BYTES + ext;
	if (b->waiting && !next_block(b, t)) {
		drop(b);
		return;
	}
	if (t - b->pub.base >= b->pub.span) {
		unsigned why = t < b->pub.base ? NC__TR_SYNC_BACK
			       : b->period_span == UINT32_MAX ? NC__TR_SYNC_WRAP
							      : NC__TR_SYNC_PERIOD;
		if (b->pub.pos + SYNC_BYTES + need <= b->bsize)
			write_sync(b, t, why);
		else if (!next_block(b, t)) { /* the new block starts with a sync at t */
			drop(b);
			return;
		}
	}
	if (b->pub.pos + need > b->bsize && !next_block(b, t)) {
		drop(b);
		return;
	}
	uint64_t *r = at(b, b->pub.pos);
	unsigned w = (unsigned)(need / 8);
	r[0] = (head & ~(UINT64_C(0xff) << 56)) | (uint64_t)w << 56;
	r[1] = arg;
	unsigned k = 2;
	if (b->flags & NC_TRACE_GSEQ)
		r[k++] = nc__tr_gseq();
	if (b->flags & NC_TRACE_CPUTIME) {
		struct timespec ts;
		int64_t v = -1;
		if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
			v = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		r[k++] = (uint64_t)v;
	}
	__atomic_store_n(&b->pub.pos, b->pub.pos + need, __ATOMIC_RELAXED);
	if (need != EV_BYTES) {
		b->slow_bytes += need;
		b->slow_events++;
	}
}

static void release(struct nc__tr_buf *b)
{
	set_lim(b);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&b->pub.busy, 0, __ATOMIC_RELAXED);
}

void nc_impl_trace_append_slow(struct nc_trace_buf *pb, uint64_t ticks, uint64_t head, uint64_t arg)
{
	struct nc__tr_buf *b = (struct nc__tr_buf *)pb;
	append(b, ticks, head, arg);
	release(b);
}

void nc_impl_trace_append_nested(struct nc_trace_buf *pb)
{
	struct nc__tr_buf *b = (struct nc__tr_buf *)pb;
	inc(&b->n_nested);
}

/* Claims the buffer as an append would; 0 if an append is in progress (a
 * call from a signal handler that interrupted one). */
static int claim(struct nc__tr_buf *b)
{
	if (__atomic_load_n(&b->pub.busy, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&b->pub.busy, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return 1;
}

void nc__tr_buf_init(struct nc__tr_buf *b)
{
	b->pub.span = b->period_span;
	b->block_no = UINT64_MAX; /* open_block makes it 0 */
	open_block(b, 0, nc_ticks(), NC__TR_SYNC_FIRST);
	set_lim(b);
}

/* A last sync record (an anchor after the last event), then the block is
 * closed.  The owning thread, or anyone once it stopped appending. */
void nc__tr_buf_finish(struct nc__tr_buf *b)
{
	if (!claim(b))
		return;
	if (!b->ended) {
		if (b->open && b->pub.pos + SYNC_BYTES <= b->bsize)
			write_sync(b, nc_ticks(), NC__TR_SYNC_LAST);
		close_block(b);
		b->ended = 1;
	}
	release(b);
}

void nc_trace_thread_end(struct nc_trace_buf *pb)
{
	if (pb)
		nc__tr_buf_finish((struct nc__tr_buf *)pb);
}

void nc__tr_buf_counts(const struct nc__tr_buf *b, struct nc_trace_counts *o)
{
	uint64_t in_block = b->open ? cur_events(b) : 0;
	uint64_t seq0 = b->open ? b->first_seq : b->next_seq;
	o->events = seq0 + in_block + b->pending_drops +
		    (__atomic_load_n(&b->n_nested, __ATOMIC_RELAXED) - b->nested_seen);
	o->dropped = __atomic_load_n(&b->n_dropped, __ATOMIC_RELAXED);
	o->nested = __atomic_load_n(&b->n_nested, __ATOMIC_RELAXED);
	o->late = __atomic_load_n(&b->n_late, __ATOMIC_RELAXED);
	o->overwritten = __atomic_load_n(&b->n_overwritten, __ATOMIC_RELAXED);
	o->syncs = __atomic_load_n(&b->n_syncs, __ATOMIC_RELAXED);
}

void nc_trace_get_counts(const struct nc_trace_buf *pb, struct nc_trace_counts *out)
{
	if (!out)
		return;
	*out = (struct nc_trace_counts){0};
	if (pb)
		nc__tr_buf_counts((const struct nc__tr_buf *)pb, out);
}
