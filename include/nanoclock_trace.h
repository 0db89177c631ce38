/* SPDX-License-Identifier: MIT */
/*
 * nanoclock — event stamps and traces.
 *
 * A trace session writes one file.  Each thread that records registers once
 * and gets its own buffer (a ring of blocks); an event costs a counter read
 * and two 8-byte stores: the low 32 bits of the counter, an event id, a kind
 * and a 64-bit argument.  The full counter value, CLOCK_MONOTONIC_RAW and
 * CLOCK_REALTIME are written in a sync record at the start of every block,
 * before an event more than a sync period (10 ms by default) after the
 * previous sync record, and before any event whose counter value could not
 * be told from its low 32 bits, so every event can be
 * reconstructed exactly and converted to nanoseconds and Unix time offline,
 * by interpolation between sync records (`nanoclock trace export`).  The
 * file format is in docs/trace-format.md.
 *
 *   struct nc_trace *t;
 *   nc_trace_open(&t, "run.nctrace", NULL);       // defaults: see nc_trace_config
 *   struct nc_trace_buf *b;                         // in each thread:
 *   nc_trace_thread_start(t, "worker", &b);
 *   nc_trace_begin(b, 1, 0); work(); nc_trace_end(b, 1, 0);
 *   nc_trace_thread_end(b);                         // before the thread stops
 *   nc_trace_close(t);                              // after every thread ended
 *
 * Appending (nc_trace_event and the helpers below) is inline, lock-free,
 * never blocks, never allocates and is safe in a signal handler.  When the
 * ring is full the event is dropped and counted (NC_TRACE_DROP) or the
 * oldest block is overwritten (NC_TRACE_OVERWRITE); either way the loss
 * shows as a gap in the thread's sequence numbers.  An event appended by a
 * signal handler that interrupted an append of the same buffer is dropped
 * and counted too (the interrupted append owns the buffer for those few
 * instructions); its sequence number is skipped at the next block's start.
 */
#ifndef NANOCLOCK_TRACE_H
#define NANOCLOCK_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "nanoclock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors (besides nanoclock.h's; nc_trace_strerror names all) -------- */
#define NC_TRACE_EFORMAT (-100) /* not a trace file, or a corrupt one */
#define NC_TRACE_EVERSION (-101) /* a trace format version this reader cannot read */
#define NC_TRACE_EIO (-102)     /* reading or writing the file failed */
#define NC_TRACE_EFULL (-103)   /* max_threads buffers already registered */
#define NC_TRACE_ENOMEM (-104)  /* out of memory */
NC_API const char *nc_trace_strerror(int err);

/* ---- configuration ------------------------------------------------------ */
#define NC_TRACE_DROP 0      /* ring full: drop new events, count them */
#define NC_TRACE_OVERWRITE 1 /* flight recorder: overwrite the oldest block; the
				file is written at nc_trace_close() */

#define NC_TRACE_CPUTIME 0x1u   /* each event also carries the thread's CPU time
				   (CLOCK_THREAD_CPUTIME_ID: a system call per event) */
#define NC_TRACE_GSEQ 0x2u      /* each event also takes a global sequence number
				   (one shared atomic counter: a total order) */
#define NC_TRACE_SYNC_CHECK 0x4u /* run nc_sync_check() at open and store the
				    verdict in the file (about 15 ms per CPU pair) */
#define NC_TRACE_NO_PERIODIC 0x8u /* sync records only at block starts and where the
				     compact stamp could wrap (tests; larger errors) */

struct nc_trace_config {
	unsigned block_bytes; /* block size: power of two, 512 .. 16 MiB (default 64 KiB) */
	unsigned blocks;      /* blocks per thread: 2 .. 65536 (default 16) */
	int mode;             /* NC_TRACE_DROP (default) or NC_TRACE_OVERWRITE */
	unsigned flags;       /* NC_TRACE_* above */
	double sync_period_ms; /* a sync record at least this often (default 10) */
	double flush_ms;      /* NC_TRACE_DROP: a library thread writes full blocks
				 this often (default 10); 0: only nc_trace_flush() */
	unsigned max_threads; /* buffers per session (default 256, at most 65536) */
};
NC_API void nc_trace_default_config(struct nc_trace_config *c);

struct nc_trace;     /* a session: one file */
struct nc_trace_buf; /* one thread's buffer (layout below: ABI) */

/* Creates `path` (mode 0644 less the umask), writes the header and the
 * clock-domain record (initialising the library first).  c may be NULL
 * (defaults).  Something already at `path` is written only if it is this
 * user's empty file or an earlier trace (emptied; it keeps its mode), a
 * FIFO, or /dev/null; anything else is left as it was: another file or
 * another user's, a socket, a device (NC_TRACE_EIO, errno EEXIST), a
 * directory (EISDIR), a symbolic link, never followed (ELOOP).  Nor is a
 * link or folder on the way that another user made in a world-writable
 * sticky folder such as /tmp gone through, nor any name in a sticky
 * folder another user owns or in a folder anybody may write to without
 * the sticky bit (ELOOP).  A FIFO must
 * have a reader already (else NC_TRACE_EIO, errno ENXIO, at once).  A
 * write error later, a FIFO's reader gone included, is returned by
 * nc_trace_flush / nc_trace_close with errno set to the write's (EPIPE,
 * ENOSPC...; no SIGPIPE is raised).  The flush
 * thread runs with every signal blocked.
 * 0, NC_EINVAL, NC_ERANGE (a config value), NC_TRACE_EIO (errno says
 * why), NC_TRACE_ENOMEM, NC_ESYS (the flush thread could not start: errno
 * says why). */
NC_API int nc_trace_open(struct nc_trace **out, const char *path,
			 const struct nc_trace_config *c);

/* Gives the calling thread a buffer (allocates it: not in a signal
 * handler).  name: up to 31 characters, may be NULL.  0, NC_EINVAL,
 * NC_TRACE_EFULL, NC_TRACE_ENOMEM. */
NC_API int nc_trace_thread_start(struct nc_trace *t, const char *name,
				 struct nc_trace_buf **out);
/* The owning thread is done with b: a last sync record, the partial block
 * handed over for writing.  Later appends to b are dropped and counted. */
NC_API void nc_trace_thread_end(struct nc_trace_buf *b);

/* A name for an event id (the exporters show it).  0, NC_EINVAL. */
NC_API int nc_trace_name(struct nc_trace *t, unsigned id, const char *name);

/* Writes every full block (and pending thread and name records) to the
 * file.  Any thread; NC_TRACE_DROP sessions without a flush thread call it
 * to make room.  NC_TRACE_OVERWRITE sessions write at close only: 0.
 * 0 or NC_TRACE_EIO (the first write error, errno its cause, at every
 * call after it). */
NC_API int nc_trace_flush(struct nc_trace *t);

/* Stops the flush thread, writes everything (the partial blocks of threads
 * that did not end, with a last sync record each), the per-thread totals,
 * closes the file and frees the session and every buffer.  Call it when no
 * thread appends any more.  0 or the first error met while writing (errno
 * its cause). */
NC_API int nc_trace_close(struct nc_trace *t);

/* Per-thread totals so far (any thread; approximate while it appends). */
struct nc_trace_counts {
	uint64_t events;     /* appended, the dropped ones included: the next
				sequence number (appends after the end take none) */
	uint64_t dropped;    /* ring full (NC_TRACE_DROP) */
	uint64_t nested;     /* dropped: appended from a signal handler during an
				append of the same buffer */
	uint64_t late;       /* dropped: appended after nc_trace_thread_end */
	uint64_t overwritten; /* lost to NC_TRACE_OVERWRITE */
	uint64_t syncs;      /* sync records written */
};
NC_API void nc_trace_get_counts(const struct nc_trace_buf *b, struct nc_trace_counts *out);

/* ---- sequence numbers ----------------------------------------------------
 * The global sequence number: one 64-bit counter alone on its cache line,
 * incremented atomically: a total order across threads and CPUs, at the
 * price of that line moving between CPUs (`nanoclock bench trace` measures
 * it).  Sync records carry it; with NC_TRACE_GSEQ every event does.  Each
 * buffer also numbers its own events (no sharing, no cost: the file stores
 * each block's first number). */
NC_API uint64_t nc_trace_global_seq_next(void);

/* ---- appending (inline) --------------------------------------------------
 * Kinds, as the exporters show them (Chrome: i, B, E, C).  An id is 0..65535
 * (higher bits are ignored); arg is free (the value for a counter). */
#define NC_TRACE_INSTANT 0
#define NC_TRACE_BEGIN 1
#define NC_TRACE_END 2
#define NC_TRACE_COUNTER 3

/* The buffer.  Written by its thread (and that thread's signal handlers)
 * only; the writer's hot fields share the first line.  Not API: use the
 * functions; the layout is pinned below because the inline append reads it. */
struct nc_trace_buf {
	uint64_t busy;  /* 1 while an append of this thread owns the buffer */
	uint64_t pos;   /* offset of the next record in the current block */
	uint64_t lim;   /* a 16-byte event fits while pos < lim; 0 sends every
			   append to the library (options, full ring, ended) */
	uint64_t base;  /* the counter value compact stamps are relative to */
	uint64_t span;  /* an event with stamp - base >= span needs a sync first */
	union {
		unsigned char *blk; /* the current block */
		uint64_t blk_word;  /* (the same size on 32-bit targets) */
	};
	uint64_t reserved[2];
	/* the library's part (see src/internal.h) follows */
};
#ifdef __cplusplus
#define NC_TRACE_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define NC_TRACE_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif
NC_TRACE_STATIC_ASSERT(sizeof(struct nc_trace_buf) == 64, "nanoclock trace ABI: 64-byte head");

/* Out of line: everything but the common case. */
NC_API void nc_impl_trace_append_slow(struct nc_trace_buf *b, uint64_t ticks, uint64_t head,
				 uint64_t arg);
NC_API void nc_impl_trace_append_nested(struct nc_trace_buf *b);

/* The record header word: low 32 bits of the stamp, id, kind, length in
 * 8-byte words (docs/trace-format.md). */
static inline uint64_t nc_impl_trace_head(uint64_t ticks, unsigned kind, unsigned id, unsigned words)
{
	return (uint64_t)(uint32_t)ticks | (uint64_t)(id & 0xffffu) << 32 |
	       (uint64_t)(kind & 0x7fu) << 48 | (uint64_t)words << 56;
}

/* An event stamped `ticks` (a value of nc_ticks*(), from this thread).
 * b may be NULL: nothing is recorded.  The busy flag is claimed before the
 * state is read, so a signal handler that interrupts either sees the flag
 * (and only counts its event) or runs entirely before the state is read;
 * relaxed atomics and signal fences compile to plain moves. */
static inline void nc_trace_event_at(struct nc_trace_buf *b, uint64_t ticks, unsigned kind,
				     unsigned id, uint64_t arg)
{
	if (__builtin_expect(b == NULL, 0))
		return;
	if (__builtin_expect(__atomic_load_n(&b->busy, __ATOMIC_RELAXED) != 0, 0)) {
		nc_impl_trace_append_nested(b);
		return;
	}
	__atomic_store_n(&b->busy, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uint64_t p = __atomic_load_n(&b->pos, __ATOMIC_RELAXED);
	uint64_t head = nc_impl_trace_head(ticks, kind, id, 2);
	if (__builtin_expect(p < b->lim && ticks - b->base < b->span, 1)) {
		uint64_t *r = (uint64_t *)(void *)(b->blk + p);
		r[0] = head;
		r[1] = arg;
		__atomic_store_n(&b->pos, p + 16, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(&b->busy, 0, __ATOMIC_RELAXED);
		return;
	}
	nc_impl_trace_append_slow(b, ticks, head, arg); /* releases busy */
}

static inline void nc_trace_event(struct nc_trace_buf *b, unsigned kind, unsigned id, uint64_t arg)
{
	nc_trace_event_at(b, nc_ticks(), kind, id, arg);
}
static inline void nc_trace_instant(struct nc_trace_buf *b, unsigned id, uint64_t arg)
{
	nc_trace_event_at(b, nc_ticks(), NC_TRACE_INSTANT, id, arg);
}
static inline void nc_trace_begin(struct nc_trace_buf *b, unsigned id, uint64_t arg)
{
	nc_trace_event_at(b, nc_ticks(), NC_TRACE_BEGIN, id, arg);
}
static inline void nc_trace_end(struct nc_trace_buf *b, unsigned id, uint64_t arg)
{
	nc_trace_event_at(b, nc_ticks(), NC_TRACE_END, id, arg);
}
static inline void nc_trace_counter(struct nc_trace_buf *b, unsigned id, uint64_t value)
{
	nc_trace_event_at(b, nc_ticks(), NC_TRACE_COUNTER, id, value);
}

/* ---- reading traces --------------------------------------------------------
 * A reader checks the whole file when it opens it (every record, every
 * block, every stamp), so iteration afterwards meets no error in the file
 * (only a read error if the file changes underneath).  The file is read in
 * place, never whole: memory is an index of 24 bytes per block, one
 * anchor per 10 ms of the trace and the names, plus one block per thread
 * while iterating.  Nothing in the file is trusted; a file cut short is
 * read up to its last complete record (nc_trace_read_complete). */
struct nc_trace_reader;

/* Reads and checks a trace held in memory (data is copied).  0, or
 * NC_TRACE_EFORMAT / NC_TRACE_EVERSION / NC_TRACE_ENOMEM with a one-line
 * reason in why[] ("truncated: ..."). */
NC_API int nc_trace_read_mem(struct nc_trace_reader **out, const void *data, size_t len,
			     char *why, size_t whylen);
/* The same from a file, read in place (NC_TRACE_EIO if it cannot be
 * opened or read, or is not a regular file: a FIFO is refused without
 * waiting for a writer).  The reader keeps the file open until
 * nc_trace_read_close. */
NC_API int nc_trace_read_file(struct nc_trace_reader **out, const char *path, char *why,
			      size_t whylen);
NC_API void nc_trace_read_close(struct nc_trace_reader *r);
/* Whether the reader took in the whole file: 1, or 0 when it stopped
 * early (the file was cut short: a writer killed, a full disk) with
 * *used_bytes the length of the complete records it read and why[] one
 * line saying where and why it stopped.  Either way every complete
 * record is read.  used_bytes and why may be NULL. */
NC_API int nc_trace_read_complete(const struct nc_trace_reader *r, uint64_t *used_bytes, char *why,
				  size_t whylen);

/* What the file says about the clock that stamped it, and totals. */
struct nc_trace_info {
	unsigned version_major, version_minor;
	char counter[32];
	double hz, hz_ppm;        /* rate and uncertainty at open */
	double hz_final, hz_final_ppm; /* at close (0 if the trace was not closed) */
	nc_conv_t conv;           /* the conversion parameters at open */
	uint64_t tie_ticks;       /* Unix-time tie at open: counter value ... */
	int64_t tie_unix_ns;      /* ... and its Unix time */
	int64_t tie_mono_ns;      /* CLOCK_MONOTONIC_RAW there */
	double tie_error_ns;      /* bound on the tie vs CLOCK_REALTIME */
	double utc_error_ns;      /* bound vs UTC (< 0: unknown) */
	int synchronised;         /* the kernel's clock: 1, 0, -1 unknown */
	int sync_verdict;         /* NC_SYNC_* of the cross-CPU check, -1: not run */
	uint64_t sync_max_shift_ticks;
	unsigned sync_ncpus;
	unsigned pid;
	char host[64];
	unsigned flags;           /* NC_TRACE_CPUTIME | NC_TRACE_GSEQ | ... as recorded */
	int mode;
	unsigned block_bytes, blocks;
	uint64_t sync_period_ticks;
	int closed;               /* the file ends with the totals record */
	unsigned threads;
	uint64_t events, blocks_read, syncs, names;
	uint64_t gaps, missing;   /* sequence gaps over all threads, events missing */
	uint64_t anchors;         /* sync records used for interpolation */
	uint64_t anchors_rejected; /* sync records whose clocks went backwards */
	double max_anchor_halfwidth_ns; /* the widest bracket among the anchors, halved */
	double anchor_rate_ppm;   /* rate between first and last anchor vs hz */
	uint64_t max_delta_ticks; /* largest compact stamp decoded (of 2^32) */
	uint64_t backwards;       /* events stamped below their predecessor in the thread */
	uint64_t first_ticks, last_ticks;    /* earliest / latest event */
	int64_t first_mono_ns, last_mono_ns;
	int64_t first_unix_ns, last_unix_ns;
	/* the shared calibration record the writer used (format 1.1; 0 and
	 * "" in a 1.0 file): 0 none, 1 adopted, 2 written by the writer */
	int shared;
	unsigned shared_writer_pid, shared_writer_uid;
	uint64_t shared_generation;
	double shared_hz, shared_ppm;
	char shared_path[128];
};
NC_API void nc_trace_read_info(const struct nc_trace_reader *r, struct nc_trace_info *out);

struct nc_trace_thread_info {
	char name[32];
	int64_t tid;              /* the OS thread id */
	uint64_t events;          /* events in the file */
	uint64_t blocks;
	uint64_t first_seq, last_seq; /* of the events in the file */
	uint64_t gaps, missing;   /* sequence gaps (dropped or overwritten events) */
	uint64_t syncs;
	uint64_t max_delta_ticks;
	uint64_t backwards;
	int have_counts;          /* the writer's totals below are known (closed file) */
	struct nc_trace_counts counts;
};
/* i < info.threads: 0, else NC_EINVAL. */
NC_API int nc_trace_read_thread(const struct nc_trace_reader *r, unsigned i,
				struct nc_trace_thread_info *out);
/* The name given to event id, or NULL. */
NC_API const char *nc_trace_read_name(const struct nc_trace_reader *r, unsigned id);

/* One event, decoded. */
struct nc_trace_rec {
	uint64_t ticks;   /* the counter value, reconstructed exactly */
	int64_t mono_ns;  /* CLOCK_MONOTONIC_RAW, interpolated between sync records */
	int64_t unix_ns;  /* CLOCK_REALTIME, likewise */
	uint64_t seq;     /* the thread's sequence number */
	uint64_t gseq;    /* global sequence number (NC_TRACE_GSEQ), else UINT64_MAX */
	int64_t cpu_ns;   /* thread CPU time (NC_TRACE_CPUTIME), else -1 */
	uint64_t arg;
	unsigned file;    /* index of the reader in the merge */
	unsigned thread;
	unsigned id, kind;
};

/* The UTC interval of an event of this file (its ticks): unix_ns as the
 * export converts it, and earliest_ns..latest_ns, which hold UTC whenever
 * the figures of the UTC source the writer used held (nc_utc_now(3)): the
 * bound the sync record before it states, grown at the source's drift to
 * the event, plus the conversion's own error (the anchors' half brackets
 * and 1 ns).  A file of format 1.0 or 1.1, or written without a source,
 * gives NC_UTC_UNKNOWN with INT64_MIN..INT64_MAX.  Returns the status,
 * or NC_EINVAL. */
NC_API int nc_trace_read_utc(const struct nc_trace_reader *r, uint64_t ticks, struct nc_utc *out);

/* Events of one or more traces in time order: one file's threads on the
 * counter, several files' on Unix time; equal times in global sequence
 * order where both have one, then file, thread and sequence.  Each
 * thread's own events keep their order.  The readers must outlive it. */
struct nc_trace_merge;
NC_API int nc_trace_merge_open(struct nc_trace_merge **out, struct nc_trace_reader *const *r,
			       unsigned n);
/* 1 and *ev filled, or 0 at the end. */
NC_API int nc_trace_merge_next(struct nc_trace_merge *m, struct nc_trace_rec *ev);
/* 0, or why the iteration ended early: NC_TRACE_EIO (the file could not
 * be read again, or changed since it was checked), NC_TRACE_ENOMEM. */
NC_API int nc_trace_merge_error(const struct nc_trace_merge *m);
NC_API void nc_trace_merge_close(struct nc_trace_merge *m);

#undef NC_TRACE_STATIC_ASSERT

#ifdef __cplusplus
}
#endif
#endif /* NANOCLOCK_TRACE_H */
