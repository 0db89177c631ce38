/* SPDX-License-Identifier: MIT */
/* The trace module's internal interface (src/trace/): the file format's
 * constants, a thread's buffer, and a checked file in memory.  Nothing
 * outside src/trace/ and its tests uses it. */
#ifndef NC_TRACE_INTERNAL_H
#define NC_TRACE_INTERNAL_H

#include "../base/compiler.h"
#include "../base/config.h"
#include "../base/refclock.h"
#include "../rate/rate.h"
#include "../utc/utc.h"
#include "nanoclock_info.h"
#include "nanoclock_sync.h"
#include "nanoclock_trace.h"

#include <stddef.h>
#include <stdint.h>

/* ---- event traces (nanoclock_trace.h, docs/trace-format.md) ----
 * session.c: sessions, registration, the file; write.c: the append slow
 * path, sync records and blocks; read.c: parsing and checking a file;
 * time.c: anchors and conversion; merge.c: merged iteration. */
#define NC__TR_MAGIC "NCTRACE\x1a"
#define NC__TR_MAJOR 1
#define NC__TR_MINOR 2             /* 1: the shared record in the clock-domain record;
				    * 2: the UTC interval in sync records */
#define NC__TR_FILE_HDR 24          /* magic, version, header length, byte-order mark */
#define NC__TR_BOM UINT64_C(0x0102030405060708)
#define NC__TR_DOMAIN 1             /* record types */
#define NC__TR_THREAD 2
#define NC__TR_NAME 3
#define NC__TR_BLOCK 4
#define NC__TR_END 5
#define NC__TR_BLOCK_HDR 48         /* record header and block header */
#define NC__TR_KIND_SYNC 0x80       /* in-block record kinds >= 0x80 are not events */
#define NC__TR_SYNC_WORDS 7         /* the shortest a reader takes (1.0, 1.1) */
#define NC__TR_SYNC_WORDS_UTC 11    /* 1.2: with the UTC interval (words 7-10) */
#define NC__TR_DOMAIN_BYTES 416     /* the records as this version writes them */
#define NC__TR_DOMAIN_BYTES_1_0 248 /* ... as version 1.0 did: the shortest read */
#define NC__TR_THREAD_BYTES 56
#define NC__TR_NAME_BYTES 64
#define NC__TR_END_HEAD 32
#define NC__TR_END_PER_THREAD 48
#define NC__TR_SYNC_FIRST 1         /* why a sync record was written (its id field) */
#define NC__TR_SYNC_BLOCK 2
#define NC__TR_SYNC_PERIOD 3
#define NC__TR_SYNC_WRAP 4
#define NC__TR_SYNC_BACK 5
#define NC__TR_SYNC_LAST 6

/* One thread's buffer; the public head must come first. */
struct nc__tr_buf {
	struct nc_trace_buf pub;
	struct nc_trace *t;
	unsigned index;           /* thread number in the file */
	unsigned flags;           /* the session's NC_TRACE_* flags */
	int overwrite;
	uint64_t bsize;
	uint32_t nblk;
	uint32_t cur;             /* current block */
	uint32_t rd;              /* next block the flusher writes (drop mode) */
	unsigned char *mem;       /* nblk blocks of bsize bytes */
	uint32_t *state;          /* per block: 0 free, 1 full (written, not yet in the file) */
	uint64_t period_span;     /* what pub.span is set to */
	uint64_t block_no;        /* of the current block */
	uint64_t first_seq;       /* sequence number of its first event */
	uint64_t next_seq;        /* after the last closed block */
	uint64_t pending_drops;   /* dropped since the last block was closed */
	uint64_t nested_seen;     /* n_nested already numbered (at a block start) */
	uint64_t slow_bytes, slow_events; /* written by the slow path into the current block */
	int open;                 /* the current block accepts records */
	int waiting;              /* drop mode: the ring is full */
	int ended;
	uint64_t n_dropped, n_nested, n_late, n_overwritten, n_syncs; /* relaxed atomics */
	char name[32];
	int64_t tid;
};
/* The session's part the writer needs. */
NC_HIDDEN uint64_t nc__tr_period_ticks(const struct nc_trace *t);
NC_HIDDEN void nc__tr_buf_init(struct nc__tr_buf *b); /* opens block 0 */
NC_HIDDEN void nc__tr_buf_finish(struct nc__tr_buf *b); /* last sync, close block */
NC_HIDDEN void nc__tr_buf_counts(const struct nc__tr_buf *b, struct nc_trace_counts *o);
/* The global sequence line. */
NC_HIDDEN uint64_t nc__tr_gseq(void);

/* Little-endian fields, whatever the host. */
static inline void nc__put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static inline void nc__put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint32_t nc__get32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}
static inline uint64_t nc__get64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* read.c / time.c / merge.c: a checked file, read in place (pread) or
 * from a copy in memory; what stays in memory is an index of its blocks
 * and the anchors, never the events. */
#define NC__TR_MAX_BLOCK ((16u << 20) + NC__TR_BLOCK_HDR) /* the writer's largest */
struct nc__tr_block {
	uint64_t off;             /* the in-block records: offset in the file */
	uint32_t len;             /* their bytes */
	uint32_t nevents;
	uint64_t first_seq;
};
struct nc__tr_thread {
	struct nc_trace_thread_info info;
	struct nc__tr_block *blk;
	size_t nblk, cap;
	uint64_t next_seq;        /* expected first_seq of the next block */
	uint64_t last_ticks;
	int have_last;
};
struct nc__tr_anchor {
	uint64_t t;               /* counter value at the middle of the bracket */
	uint64_t width;           /* bracket width, ticks */
	int64_t mono, real;       /* CLOCK_MONOTONIC_RAW, CLOCK_REALTIME there */
	uint64_t mi, mf;          /* ns per tick from here to the next anchor (64.64) */
	int have_slope;
	uint64_t ui, uf;          /* ... and of Unix time, where it is interpolated */
	int have_uslope;
	int step;                 /* the system clock was set before the next anchor */
	/* 1.2: the UTC interval around `real` (UINT64_MAX: unknown), the
	 * source's figures' time, how fast the bound grows, status, source */
	uint64_t utc_below, utc_above;
	int64_t utc_as_of;
	uint32_t utc_growth_ppb;
	int utc_status, utc_source;
};
struct nc__tr_name {
	unsigned id;
	char name[49];
};
struct nc_trace_reader {
	int fd;                   /* the file, or -1: ... */
	unsigned char *mem;       /* ... a copy in memory (nc_trace_read_mem) */
	uint64_t size;            /* bytes in the file */
	uint64_t used;            /* bytes of complete records read */
	int complete;             /* the whole file was read */
	char stop[200];           /* else where and why the reading stopped */
	struct nc_trace_info info;
	nc_conv_t conv;           /* for extrapolation: the final rate if known */
	unsigned ext_words;       /* optional event words: gseq, CPU time */
	struct nc__tr_thread *th;
	size_t nth, capth;
	struct nc__tr_name *names;
	size_t nnames, capnames;
	struct nc__tr_anchor *an;
	size_t nan, capan;
	size_t an_kept;           /* anchors after the last thinning */
	uint64_t an_total, an_wide; /* sync records seen, too wide to use */
};
/* Reads n bytes at off: 0, or -1 (a read error, or the file shrank). */
NC_HIDDEN int nc__tr_pread(const struct nc_trace_reader *r, uint64_t off, void *buf, size_t n);
/* A sync record's bracket as an anchor (thins them now and then, so that
 * memory follows the trace's duration, not its size): 0 or -1 (memory). */
NC_HIDDEN int nc__tr_anchor_add(struct nc_trace_reader *r, const unsigned char *sync,
				 unsigned words);
/* Builds the anchors from the collected sync records (sorts, thins, slopes). */
NC_HIDDEN void nc__tr_anchors_build(struct nc_trace_reader *r);
/* The UTC interval of the counter value t (nc_trace_read_utc). */
NC_HIDDEN int nc__tr_utc(const struct nc_trace_reader *r, uint64_t t, struct nc_utc *out);
/* The counter value t as CLOCK_MONOTONIC_RAW and Unix ns. */
NC_HIDDEN void nc__tr_convert(const struct nc_trace_reader *r, uint64_t t, int64_t *mono,
			      int64_t *unx);

#endif
