/* SPDX-License-Identifier: MIT */
/*
 * Trace sessions: the file, the threads' buffers, flushing.
 *
 * The file is written only here, under the session's mutex: the header and
 * the clock-domain record at open, then (at each flush) thread and name
 * records not yet written, followed by every full block in each buffer's
 * ring order, and at close the partial blocks and the per-thread totals.
 * A thread's record always precedes its blocks because registration only
 * queues it and the flush writes queued records first.
 *
 * Drop mode streams: a flush returns written blocks to their writers.
 * Overwrite mode (a flight recorder) keeps everything in memory and writes
 * each ring oldest block first at close.
 *
 * Hostile paths: the file is opened without following a symbolic link and
 * without waiting for a FIFO's reader (none: ENXIO at once); a write to a
 * FIFO or socket whose reader went away is an error (NC_TRACE_EIO), never
 * a SIGPIPE: the writing thread blocks SIGPIPE around the write and takes
 * back the one its write raised.  The flush thread blocks every signal,
 * so no application handler ever runs on it.
 */
#include "trace_internal.h"
#include "nanoclock_shared.h"
#include "../base/safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct nc_trace {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int fd;
	int err;                   /* the first write error ... */
	int err_errno;             /* ... and its errno, given back with it */
	struct nc_trace_config cfg;
	uint64_t period_ticks;     /* sync period in ticks, capped at 2^32 - 1 */
	struct nc__tr_buf **bufs;
	unsigned nbufs, threads_written;
	struct nc__tr_name *names; /* queued, not yet written */
	size_t nnames, capnames;
	pthread_t flusher;
	int flusher_on, stop;
};

const char *nc_trace_strerror(int err)
{
	switch (err) {
	case NC_TRACE_EFORMAT: return "not a nanoclock trace, or a corrupt one";
	case NC_TRACE_EVERSION: return "unsupported trace format version";
	case NC_TRACE_EIO: return "trace file read or write failed";
	case NC_TRACE_EFULL: return "too many trace buffers for this session";
	case NC_TRACE_ENOMEM: return "out of memory";
	default: return nc_strerror(err);
	}
}

void nc_trace_default_config(struct nc_trace_config *c)
{
	if (!c)
		return;
	c->block_bytes = 65536;
	c->blocks = 16;
	c->mode = NC_TRACE_DROP;
	c->flags = 0;
	c->sync_period_ms = 10;
	c->flush_ms = 10;
	c->max_threads = 256;
}

uint64_t nc__tr_period_ticks(const struct nc_trace *t) { return t->period_ticks; }

static int check_config(const struct nc_trace_config *c)
{
	unsigned bb = c->block_bytes;
	if (bb < 512 || bb > (16u << 20) || (bb & (bb - 1)) != 0)
		return NC_ERANGE;
	if (c->blocks < 2 || c->blocks > 65536 || c->max_threads < 1 || c->max_threads > 65536)
		return NC_ERANGE;
	if (c->mode != NC_TRACE_DROP && c->mode != NC_TRACE_OVERWRITE)
		return NC_EINVAL;
	if (c->flags & ~(NC_TRACE_CPUTIME | NC_TRACE_GSEQ | NC_TRACE_SYNC_CHECK | NC_TRACE_NO_PERIODIC))
		return NC_EINVAL;
	if (!(c->sync_period_ms >= 0.001 && c->sync_period_ms <= 3600e3))
		return NC_ERANGE;
	if (!(c->flush_ms == 0 || (c->flush_ms >= 0.1 && c->flush_ms <= 3600e3)))
		return NC_ERANGE;
	return 0;
}

/* ---- writing ---- */
/* write(), with the SIGPIPE a reader that went away would raise blocked
 * and consumed: the error comes back as EPIPE. */
static ssize_t write_no_sigpipe(int fd, const void *p, size_t n)
{
	sigset_t pipe_set, old, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	int was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	ssize_t w = write(fd, p, n);
	int e = errno;
	if (w < 0 && e == EPIPE && !was_pending) {
		const struct timespec zero = {0, 0};
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return w;
}

static int write_all(struct nc_trace *t, const void *p, size_t n)
{
	const unsigned char *s = p;
	while (n > 0 && !t->err) {
		ssize_t w = write_no_sigpipe(t->fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			t->err = NC_TRACE_EIO;
			t->err_errno = w < 0 ? errno : EIO;
			break;
		}
		s += w;
		n -= (size_t)w;
	}
	return t->err;
}

static void rec_head(unsigned char *p, uint32_t type, uint32_t bytes)
{
	nc__put32(p, type);
	nc__put32(p + 4, bytes);
}

/* A block as stored: its words are little-endian on the file. */
static void write_block(struct nc_trace *t, const unsigned char *blk)
{
	uint64_t h0;
	memcpy(&h0, blk, 8);
	size_t len = (size_t)(h0 >> 32);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	unsigned char tmp[4096];
	for (size_t off = 0; off < len; off += sizeof(tmp)) {
		size_t n = len - off < sizeof(tmp) ? len - off : sizeof(tmp);
		for (size_t i = 0; i < n; i += 8) {
			uint64_t w;
			memcpy(&w, blk + off + i, 8);
			nc__put64(tmp + i, w);
		}
		write_all(t, tmp, n);
	}
#else
	write_all(t, blk, len);
#endif
}

static void write_thread_rec(struct nc_trace *t, const struct nc__tr_buf *b)
{
	unsigned char r[NC__TR_THREAD_BYTES] = {0};
	rec_head(r, NC__TR_THREAD, sizeof(r));
	nc__put32(r + 8, b->index);
	nc__put64(r + 16, (uint64_t)b->tid);
	memcpy(r + 24, b->name, sizeof(b->name) - 1);
	write_all(t, r, sizeof(r));
}

static void write_pending(struct nc_trace *t)
{
	for (; t->threads_written < t->nbufs; t->threads_written++)
		write_thread_rec(t, t->bufs[t->threads_written]);
	for (size_t i = 0; i < t->nnames; i++) {
		unsigned char r[NC__TR_NAME_BYTES] = {0};
		rec_head(r, NC__TR_NAME, sizeof(r));
		nc__put32(r + 8, t->names[i].id);
		memcpy(r + 16, t->names[i].name, 48);
		write_all(t, r, sizeof(r));
	}
	t->nnames = 0;
}

/* Drop mode: every full block, in ring order, back to its writer. */
static void flush_locked(struct nc_trace *t)
{
	write_pending(t);
	if (t->cfg.mode != NC_TRACE_DROP)
		return;
	for (unsigned i = 0; i < t->nbufs; i++) {
		struct nc__tr_buf *b = t->bufs[i];
		while (__atomic_load_n(&b->state[b->rd], __ATOMIC_ACQUIRE) == 1) {
			write_block(t, b->mem + (size_t)b->rd * b->bsize);
			__atomic_store_n(&b->state[b->rd], 0, __ATOMIC_RELEASE);
			b->rd = (b->rd + 1) % b->nblk;
		}
	}
}

int nc_trace_flush(struct nc_trace *t)
{
	if (!t)
		return NC_EINVAL;
	pthread_mutex_lock(&t->mu);
	flush_locked(t);
	int rc = t->err, e = t->err_errno;
	pthread_mutex_unlock(&t->mu);
	if (rc)
		errno = e;
	return rc;
}

static void *flusher(void *arg)
{
	struct nc_trace *t = arg;
	pthread_mutex_lock(&t->mu);
	while (!t->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		double ns = (double)ts.tv_nsec + t->cfg.flush_ms * 1e6;
		ts.tv_sec += (time_t)(ns / 1e9);
		ts.tv_nsec = (long)(ns - (double)(time_t)(ns / 1e9) * 1e9);
		pthread_cond_timedwait(&t->cv, &t->mu, &ts);
		if (!t->stop)
			flush_locked(t);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

/* ---- the clock-domain record: what a reader needs to convert without the
 * machine ---- */
static void write_domain(struct nc_trace *t)
{
	unsigned char r[NC__TR_DOMAIN_BYTES] = {0};
	rec_head(r, NC__TR_DOMAIN, sizeof(r));
	unsigned char *p = r + 8;
	strncpy((char *)p, nc_counter_name(), 31);
	double hz = nc_ticks_per_second(), ppm = nc_ticks_per_second_uncertainty_ppm();
	uint64_t u;
	memcpy(&u, &hz, 8);
	nc__put64(p + 32, u);
	memcpy(&u, &ppm, 8);
	nc__put64(p + 40, u);
	/* the parameters of exactly this rate (nc_get_conv's, unless a refresh
	 * came between the two calls) */
	nc_conv_t c;
	if (nc_conv_init(&c, hz) != 0)
		nc_get_conv(&c);
	nc__put64(p + 48, c.ns_int);
	nc__put64(p + 56, c.ns_frac);
	nc__put64(p + 64, c.tk_int);
	nc__put64(p + 72, c.tk_frac);
	nc__put64(p + 80, c.hz_q24);
	/* the Unix-time tie: a counter value, its Unix time and MONOTONIC_RAW */
	uint64_t a = nc_ticks_begin();
	int64_t mono = nc__ref.raw();
	uint64_t b = nc_ticks_end();
	uint64_t mid = a + (b - a) / 2;
	nc__put64(p + 88, mid);
	nc__put64(p + 96, (uint64_t)nc_ticks_to_unix_ns(mid));
	nc__put64(p + 104, (uint64_t)mono);
	struct nc_unix_status st;
	nc_get_unix_status(&st);
	memcpy(&u, &st.tie_error_ns, 8);
	nc__put64(p + 112, u);
	memcpy(&u, &st.utc_error_ns, 8);
	nc__put64(p + 120, u);
	nc__put32(p + 128, (uint32_t)st.synchronised);
	int verdict = -1;
	uint64_t shift = 0;
	unsigned ncpus = 0;
	if (t->cfg.flags & NC_TRACE_SYNC_CHECK) {
		struct nc_sync_report *rep = malloc(sizeof(*rep));
		if (rep && nc_sync_check(NULL, rep) == 0) {
			verdict = rep->verdict;
			shift = rep->max_shift_ticks;
			ncpus = (unsigned)rep->ncpus;
		}
		free(rep);
	}
	nc__put32(p + 132, (uint32_t)verdict);
	nc__put64(p + 136, shift);
	nc__put32(p + 144, ncpus);
	nc__put32(p + 148, (uint32_t)getpid());
	nc__put32(p + 152, t->cfg.flags);
	nc__put32(p + 156, (uint32_t)t->cfg.mode);
	nc__put32(p + 160, t->cfg.block_bytes);
	nc__put32(p + 164, t->cfg.blocks);
	nc__put64(p + 168, t->period_ticks);
	char host[64] = "";
	gethostname(host, sizeof(host) - 1);
	memcpy(p + 176, host, 63);
	/* 1.1: which shared record the rate came from, so that files of several
	 * processes can be seen to share one clock */
	struct nc_shared_status sh;
	nc_get_shared_status(&sh);
	if (sh.adopted || sh.published) {
		nc__put32(p + 240, sh.adopted ? 1 : 2);
		nc__put32(p + 244, sh.writer_pid);
		nc__put32(p + 248, sh.writer_uid);
		nc__put64(p + 256, sh.generation);
		memcpy(&u, &sh.hz, 8);
		nc__put64(p + 264, u);
		memcpy(&u, &sh.ppm, 8);
		nc__put64(p + 272, u);
		size_t pl = strnlen(sh.path, 127); /* cut at 127: the field's size */
		memcpy(p + 280, sh.path, pl);
	}
	write_all(t, r, sizeof(r));
}

/* The trace's file.  Created (mode 0644 less the umask) where nothing is;
 * where something is, written only if it is a FIFO (a reader's pipe; one
 * with no reader fails at once, ENXIO, instead of blocking), /dev/null, or
 * a regular file of this user's that is empty (mktemp's) or a nanoclock
 * trace (emptied; its mode kept).  Never anything else: a text file, another
 * user's file, a socket, a device (EEXIST), a directory (EISDIR), or through
 * a symbolic link (ELOOP), nor past a stranger's name in a world-writable
 * sticky folder (ELOOP, safefile.h): a wrong path must not cost the user a
 * file.  The
 * descriptor (O_NONBLOCK still set), or -1 with errno. */
static int open_file(const char *path)
{
	const int fl = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
	if (nc__safe_path(path, 0, NULL, 0) != 0)
		return -1; /* ELOOP: a stranger's link or folder on the way */
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | fl, 0644);
	if (fd >= 0 || errno != EEXIST)
		return fd;
	struct stat st, now;
	if (lstat(path, &st) != 0)
		return -1;
	if (S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode)) {
		errno = S_ISLNK(st.st_mode) ? ELOOP : EISDIR;
		return -1;
	}
	int reg = S_ISREG(st.st_mode);
	/* a FIFO of this user's (another user's could be anyone's reader), a
	 * regular file of this user's with no other name (a hard link would
	 * be another file emptied) */
	if (!((S_ISFIFO(st.st_mode) && st.st_uid == geteuid()) ||
	      (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) ||
	      nc__safe_ours(&st))) {
		errno = EEXIST;
		return -1;
	}
	fd = open(path, (reg ? O_RDWR : O_WRONLY) | fl);
	if (fd < 0)
		return -1;
	char head[8];
	ssize_t n = 0;
	/* the same thing that was looked at; a file, empty or a trace's start */
	int ok = fstat(fd, &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino &&
		 (now.st_mode & S_IFMT) == (st.st_mode & S_IFMT);
	if (ok && reg) {
		n = now.st_size > 0 ? pread(fd, head, sizeof(head), 0) : 0;
		ok = n >= 0 && memcmp(head, NC__TR_MAGIC, (size_t)n) == 0 && ftruncate(fd, 0) == 0;
	}
	if (!ok) {
		close(fd);
		errno = EEXIST;
		return -1;
	}
	return fd;
}

int nc_trace_open(struct nc_trace **out, const char *path, const struct nc_trace_config *cfg)
{
	if (!out || !path)
		return NC_EINVAL;
	*out = NULL;
	struct nc_trace_config c;
	nc_trace_default_config(&c);
	if (cfg)
		c = *cfg;
	int rc = check_config(&c);
	if (rc)
		return rc;
	nc_init();
	/* the UTC source is chosen and asked here, not at the first sync
	 * record (which may be written in a signal handler) */
	(void)nc_utc_start();
	struct nc_trace *t = calloc(1, sizeof(*t));
	if (!t)
		return NC_TRACE_ENOMEM;
	t->cfg = c;
	t->bufs = calloc(c.max_threads, sizeof(*t->bufs));
	if (!t->bufs) {
		free(t);
		return NC_TRACE_ENOMEM;
	}
	double ticks = c.sync_period_ms * 1e-3 * nc_ticks_per_second();
	t->period_ticks = (c.flags & NC_TRACE_NO_PERIODIC) || ticks >= (double)UINT32_MAX
				  ? UINT32_MAX
				  : ticks < 1 ? 1 : (uint64_t)ticks;
	t->fd = open_file(path);
	if (t->fd < 0) {
		int e = errno;
		free(t->bufs);
		free(t);
		errno = e;
		return NC_TRACE_EIO;
	}
	int fl = fcntl(t->fd, F_GETFL);
	if (fl >= 0)
		fcntl(t->fd, F_SETFL, fl & ~O_NONBLOCK);
	pthread_mutex_init(&t->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cv, &ca);
	pthread_condattr_destroy(&ca);
	unsigned char h[NC__TR_FILE_HDR];
	memcpy(h, NC__TR_MAGIC, 8);
	h[8] = NC__TR_MAJOR;
	h[9] = 0;
	h[10] = NC__TR_MINOR;
	h[11] = 0;
	nc__put32(h + 12, NC__TR_FILE_HDR);
	nc__put64(h + 16, NC__TR_BOM);
	write_all(t, h, sizeof(h));
	write_domain(t);
	if (t->err) {
		nc_trace_close(t);
		return NC_TRACE_EIO;
	}
	if (c.mode == NC_TRACE_DROP && c.flush_ms > 0) {
		/* the thread starts with every signal blocked (it inherits this
		 * mask); the caller's is restored */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		int prc = pthread_create(&t->flusher, NULL, flusher, t);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (prc != 0) {
			nc_trace_close(t);
			errno = prc; /* what pthread_create said (clone denied: EPERM) */
			return NC_ESYS;
		}
		t->flusher_on = 1;
	}
	*out = t;
	return 0;
}

int nc_trace_thread_start(struct nc_trace *t, const char *name, struct nc_trace_buf **out)
{
	if (!t || !out)
		return NC_EINVAL;
	*out = NULL;
	struct nc__tr_buf *b = NULL;
	if (posix_memalign((void **)&b, 64, sizeof(*b)) != 0)
		return NC_TRACE_ENOMEM;
	memset(b, 0, sizeof(*b));
	b->t = t;
	b->flags = t->cfg.flags;
	b->overwrite = t->cfg.mode == NC_TRACE_OVERWRITE;
	b->bsize = t->cfg.block_bytes;
	b->nblk = t->cfg.blocks;
	b->period_span = t->period_ticks;
	b->state = calloc(b->nblk, sizeof(*b->state));
	if (!b->state || posix_memalign((void **)&b->mem, 64, (size_t)b->nblk * b->bsize) != 0) {
		free(b->state);
		free(b);
		return NC_TRACE_ENOMEM;
	}
	if (name)
		strncpy(b->name, name, sizeof(b->name) - 1);
	b->tid = (int64_t)syscall(SYS_gettid);
	pthread_mutex_lock(&t->mu);
	if (t->nbufs == t->cfg.max_threads) {
		pthread_mutex_unlock(&t->mu);
		free(b->mem);
		free(b->state);
		free(b);
		return NC_TRACE_EFULL;
	}
	b->index = t->nbufs;
	nc__tr_buf_init(b);
	t->bufs[t->nbufs++] = b;
	pthread_mutex_unlock(&t->mu);
	*out = &b->pub;
	return 0;
}

int nc_trace_name(struct nc_trace *t, unsigned id, const char *name)
{
	if (!t || !name || id > 0xffff)
		return NC_EINVAL;
	pthread_mutex_lock(&t->mu);
	if (t->nnames == t->capnames) {
		size_t cap = t->capnames ? 2 * t->capnames : 16;
		struct nc__tr_name *n = realloc(t->names, cap * sizeof(*n));
		if (!n) {
			pthread_mutex_unlock(&t->mu);
			return NC_TRACE_ENOMEM;
		}
		t->names = n;
		t->capnames = cap;
	}
	struct nc__tr_name *e = &t->names[t->nnames++];
	memset(e, 0, sizeof(*e));
	e->id = id;
	strncpy(e->name, name, 47);
	pthread_mutex_unlock(&t->mu);
	return 0;
}

static void write_end(struct nc_trace *t, double hz, double ppm)
{
	size_t n = NC__TR_END_HEAD + (size_t)t->nbufs * NC__TR_END_PER_THREAD;
	unsigned char *r = calloc(1, n);
	if (!r) {
		if (!t->err) {
			t->err = NC_TRACE_ENOMEM;
			t->err_errno = ENOMEM;
		}
		return;
	}
	rec_head(r, NC__TR_END, (uint32_t)n);
	nc__put32(r + 8, t->nbufs);
	nc__put32(r + 12, NC__TR_END_PER_THREAD);
	uint64_t u;
	memcpy(&u, &hz, 8);
	nc__put64(r + 16, u);
	memcpy(&u, &ppm, 8);
	nc__put64(r + 24, u);
	for (unsigned i = 0; i < t->nbufs; i++) {
		struct nc_trace_counts c;
		nc__tr_buf_counts(t->bufs[i], &c);
		unsigned char *p = r + NC__TR_END_HEAD + (size_t)i * NC__TR_END_PER_THREAD;
		nc__put64(p, c.events);
		nc__put64(p + 8, c.dropped);
		nc__put64(p + 16, c.nested);
		nc__put64(p + 24, c.late);
		nc__put64(p + 32, c.overwritten);
		nc__put64(p + 40, c.syncs);
	}
	write_all(t, r, n);
	free(r);
}

int nc_trace_close(struct nc_trace *t)
{
	if (!t)
		return NC_EINVAL;
	if (t->flusher_on) {
		pthread_mutex_lock(&t->mu);
		t->stop = 1;
		pthread_cond_signal(&t->cv);
		pthread_mutex_unlock(&t->mu);
		pthread_join(t->flusher, NULL);
	}
	/* the library's calls before the session's lock: they may deliver a
	 * report to the application's log function, which may use the trace */
	double hz = nc_ticks_per_second(), ppm = nc_ticks_per_second_uncertainty_ppm();
	pthread_mutex_lock(&t->mu);
	for (unsigned i = 0; i < t->nbufs; i++)
		nc__tr_buf_finish(t->bufs[i]);
	flush_locked(t);
	if (t->cfg.mode == NC_TRACE_OVERWRITE) {
		for (unsigned i = 0; i < t->nbufs; i++) {
			struct nc__tr_buf *b = t->bufs[i];
			for (uint32_t k = 1; k <= b->nblk; k++) {
				uint32_t j = (b->cur + k) % b->nblk;
				if (__atomic_load_n(&b->state[j], __ATOMIC_ACQUIRE) == 1)
					write_block(t, b->mem + (size_t)j * b->bsize);
			}
		}
	}
	write_end(t, hz, ppm);
	int rc = t->err, e = t->err_errno;
	pthread_mutex_unlock(&t->mu);
	if (close(t->fd) != 0 && rc == 0) {
		rc = NC_TRACE_EIO;
		e = errno;
	}
	for (unsigned i = 0; i < t->nbufs; i++) {
		free(t->bufs[i]->mem);
		free(t->bufs[i]->state);
		free(t->bufs[i]);
	}
	free(t->bufs);
	free(t->names);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	free(t);
	if (rc)
		errno = e;
	return rc;
}
