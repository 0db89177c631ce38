/* SPDX-License-Identifier: MIT */
/*
 * AWS ClockBound's shared memory segment (/var/run/clockbound/shm0; its
 * docs/PROTOCOL.md, version 2, and version 1 at .../shm): a bound on
 * |CLOCK_REALTIME - UTC| in nanoseconds as of a CLOCK_MONOTONIC_COARSE
 * time, the time after which it must not be trusted (void-after), the
 * maximum drift (ppb) and a status, written by clockbound-d from chronyd's
 * figures.  Native byte order:
 *   0 magic (u32 0x414d5a4e, u32 0x43420200)  8 segment size (u32)  12 version (u16)
 *   14 generation (u16: odd while the writer writes)
 *   16 as-of (i64 s, i64 ns)  32 void-after (i64 s, i64 ns)  48 bound (i64 ns)
 *   version 2: 56 disruption marker (u64)  64 max drift (u32 ppb)
 *              68 status (i32)  72 disruption support (u8)
 *   version 1: 56 max drift (u32 ppb)  60 reserved  64 status (i32)
 * status: 0 unknown, 1 synchronised, 2 free-running, 3 disrupted.
 * With disruption support on (version 2), the segment's marker is the
 * VMClock page's as clockbound-d last saw it: a page whose marker differs
 * has seen a migration the segment does not yet reflect (disrupted, as
 * ClockBound's client says), and while they agree the reads watch the
 * page's marker word as they do for the VMClock source, so a migration
 * after this refresh makes every read say disrupted at once.
 *
 * A read copies the fields between two loads of the generation, which must
 * be even and unchanged (a few tries, never a wait); a segment that stays
 * odd, another magic, version or size, a bound or time out of range, or a
 * void-after time passed is refused with the reason.  The segment is a
 * regular file of root's or this user's that no one else may write (a
 * reader must not be lied to by another user), opened by its path at each
 * refresh and read with pread, never mapped (clockbound-d truncates it
 * when it starts: a mapped read past its end is a SIGBUS), and closed
 * again: a segment re-created under the path is followed, and no
 * descriptor is held that a program closing descriptors it does not own
 * could reuse.
 *
 * Staleness follows ClockBound's client: figures as of more than 5 s ago
 * are free-running (clockbound-d rewrites the segment every second), a
 * status of unknown gives no bound, and disruption support on with no
 * VMClock page readable is refused, as ClockBound's client refuses it.
 *
 * nc__utc_clockbound_publish (the daemon's --clockbound) writes the same
 * layout, version 2, in place with pwrite (clients keep their mapping of
 * the file; the writer maps nothing another program could truncate under
 * it): generation odd, the fields, generation even.
 */
#include "utc.h"
#include "../base/fmt.h"
#include "../base/safefile.h"
#include "../counter/counter.h"
#include "../rate/rate.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CB_SIZE_V2 80  /* the header and the version 2 fields, padded */
#define CB_SIZE_V1 72
#define CB_FRESH_NS 5e9 /* ClockBound's client: older figures are free-running */
/* Two native-endian 32-bit words, as clockbound-d writes them
 * (clock-bound-shm's SHM_MAGIC; PROTOCOL.md lists the words' bytes in
 * big-endian order): on x86 and arm64 the bytes are 4e 5a 4d 41 00 02 42 43 */
static const uint32_t CB_MAGIC[2] = {0x414d5a4eu, 0x43420200u};

struct cb_fields {
	uint16_t version, generation;
	int64_t as_of_ns, void_ns, bound_ns;
	uint64_t marker;
	uint32_t drift_ppb;
	int32_t status;
	uint8_t disruption_support;
};

static int64_t ts_ns(const unsigned char *p)
{
	int64_t s, ns;
	memcpy(&s, p, 8);
	memcpy(&ns, p + 8, 8);
	if (s < 0 || s > ((int64_t)1 << 32) || ns < 0 || ns >= 1000000000)
		return -1;
	return s * 1000000000 + ns;
}

/* How the segment is read: pread, or a test's stand-in that writes a new
 * version between a read's two loads of the generation (a tear made on
 * purpose, not by chance).  Only the source's ask calls it (the start, a
 * refresh), never nc_utc_now's inline read: the indirect call costs
 * nothing beside the system call. */
typedef ssize_t (*cb_read_fn)(int fd, void *buf, size_t n, off_t off);
static cb_read_fn cb_read NC_GUARDED_BY(nc__lib_lock) = pread;

void nc__utc_clockbound_test_read(ssize_t (*fn)(int fd, void *buf, size_t n, off_t off))
{
	cb_read = fn ? fn : pread;
}

/* The fields of a whole version of the segment in fd (len bytes): 0, or
 * -1 with why.  Read with pread, not a mapping: clockbound-d truncates the
 * file when it starts (a mapped read past the end would raise SIGBUS in
 * the host program). */
static int read_fields(int fd, size_t len, struct cb_fields *f, char *why, size_t wlen)
	NC_REQUIRES(nc__lib_lock)
{
	unsigned char c[CB_SIZE_V2];
	memset(c, 0, sizeof(c));
	for (int tries = 0;; tries++) {
		if (tries == 16) {
			nc__fmt(why, wlen, "the segment stays mid-write (generation odd): refused as torn");
			return -1;
		}
		size_t n = len < sizeof(c) ? len : sizeof(c);
		/* the generation (bytes 14-15) is copied before the fields after
		 * it; read again after them: equal and even, the copy is whole */
		ssize_t got = cb_read(fd, c, n, 0);
		uint16_t g0, g1;
		if (got < 16) {
			nc__fmt(why, wlen, "the ClockBound segment is %zd bytes long: refused", got);
			return -1;
		}
		memcpy(&g0, c + 14, 2);
		if (g0 & 1)
			continue;
		if (cb_read(fd, &g1, 2, 14) != 2)
			continue;
		if (g0 == g1) {
			len = (size_t)got;
			break;
		}
	}
	if (memcmp(c, CB_MAGIC, sizeof(CB_MAGIC)) != 0) {
		nc__fmt(why, wlen, "not a ClockBound segment (its magic)");
		return -1;
	}
	uint32_t size;
	memcpy(&size, c + 8, 4);
	memcpy(&f->version, c + 12, 2);
	memcpy(&f->generation, c + 14, 2);
	size_t need = f->version == 2 ? CB_SIZE_V2 - 7 : CB_SIZE_V1 - 4;
	if (f->version != 1 && f->version != 2) {
		nc__fmt(why, wlen, "ClockBound segment version %u (this library reads 1 and 2)", f->version);
		return -1;
	}
	if (size < need || len < need) {
		nc__fmt(why, wlen, "a ClockBound segment of %u bytes (version %u needs %zu, the file has %zu)",
			size, f->version, need, len);
		return -1;
	}
	f->as_of_ns = ts_ns(c + 16);
	f->void_ns = ts_ns(c + 32);
	memcpy(&f->bound_ns, c + 48, 8);
	f->marker = 0;
	f->disruption_support = 0;
	if (f->version == 2) {
		f->disruption_support = c[72];
		memcpy(&f->marker, c + 56, 8);
		memcpy(&f->drift_ppb, c + 64, 4);
		memcpy(&f->status, c + 68, 4);
	} else {
		memcpy(&f->drift_ppb, c + 56, 4);
		memcpy(&f->status, c + 64, 4);
	}
	if (f->as_of_ns < 0 || f->void_ns < f->as_of_ns || f->bound_ns < 0 ||
	    f->bound_ns > (int64_t)1000000000000 || f->drift_ppb > 100000000 || f->status < 0 ||
	    f->status > 3) {
		nc__fmt(why, wlen, "the ClockBound segment's values are out of range: refused");
		return -1;
	}
	return 0;
}

/* ---- the source ----
 * Guarded by nc__lib_lock (core.c opens, asks and closes it under it; the
 * API names the segment it publishes under it too). */
static struct {
	int open;  /* cb_open found a segment to read */
	char path[160];
	dev_t dev; /* the segment file last read */
	ino_t ino;
	/* the segment this process publishes (nanoclock daemon --clockbound):
	 * never its own source, or its figures would feed themselves */
	int own_set;
	dev_t own_dev;
	ino_t own_ino;
	const char *vmclock; /* tests: the page to compare markers with */
	int no_page;         /* disruption support on, no VMClock page readable */
} cb NC_GUARDED_BY(nc__lib_lock);

void nc__utc_clockbound_test_vmclock(const char *path) { cb.vmclock = path; }

void nc__utc_clockbound_own(const char *path)
{
	struct stat st;
	if (path && stat(path, &st) == 0) {
		cb.own_dev = st.st_dev;
		cb.own_ino = st.st_ino;
		cb.own_set = 1;
	}
}

int nc__utc_clockbound_reads(const char *path)
{
	struct stat st;
	return cb.open && path && stat(path, &st) == 0 && st.st_dev == cb.dev && st.st_ino == cb.ino;
}

/* The segment at cb.path, opened and checked: its descriptor (the caller
 * closes it), or -1 with why */
static int segment_fd(char *why, size_t len) NC_REQUIRES(nc__lib_lock)
{
	int fd = open(cb.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0) {
		nc__fmt(why, len, "%s: %s", cb.path, errno == ENOENT ? "none (no clockbound-d here)"
						     : errno == ELOOP ? "a symbolic link: refused"
								      : strerror(errno));
		return -1;
	}
	const char *bad = fstat(fd, &st) != 0	       ? "cannot be looked at"
			  : !S_ISREG(st.st_mode)       ? "not a regular file"
			  : st.st_uid != 0 && st.st_uid != geteuid() ? "owned by another user"
			  : (st.st_mode & (S_IWGRP | S_IWOTH)) ? "writable by others"
			  : st.st_size < CB_SIZE_V1 - 4 || st.st_size > 65536 ? "not a segment's size"
			  : cb.own_set && st.st_dev == cb.own_dev && st.st_ino == cb.own_ino
			      ? "the segment this process publishes (nanoclock daemon --clockbound), never "
				"its own source"
			      : NULL;
	if (bad) {
		close(fd);
		nc__fmt(why, len, "%s: %s: refused", cb.path, bad);
		return -1;
	}
	cb.dev = st.st_dev;
	cb.ino = st.st_ino;
	return fd;
}

static int cb_open(const char *arg, char *why, size_t len) NC_REQUIRES(nc__lib_lock)
{
	nc__copy(cb.path, sizeof(cb.path), arg[0] ? arg : "/var/run/clockbound/shm0");
	int fd = segment_fd(why, len);
	if (fd < 0)
		return -1;
	close(fd);
	cb.open = 1;
	return 0;
}

static int cb_ask(struct nc__utc_fix *f, double wait_ms) NC_REQUIRES(nc__lib_lock)
{
	(void)wait_ms;
	memset(f, 0, sizeof(*f));
	f->status = NC_UTC_UNKNOWN;
	if (!cb.open) {
		nc__fmt(f->why, sizeof(f->why), "no ClockBound segment open");
		return 0;
	}
	/* the path again at each refresh (a segment re-created is followed);
	 * gone or refused: no bound */
	int fd = segment_fd(f->why, sizeof(f->why));
	if (fd < 0) {
		f->drop = 1;
		return 1;
	}
	struct cb_fields g;
	/* the counter and CLOCK_MONOTONIC after the copy: the segment's age is
	 * then never under-counted (COARSE, which ClockBound writes, lags the
	 * fine clock) */
	int rc = read_fields(fd, CB_SIZE_V2, &g, f->why, sizeof(f->why));
	close(fd);
	if (rc != 0)
		return 1;
	uint64_t now_tick = nc__counter_read();
	int64_t mono = nc__ref.mono(), real = nc__ref.real();
	if (mono >= g.void_ns) {
		nc__fmt(f->why, sizeof(f->why), "ClockBound's bound is void (%.3f s past its void-after "
			"time): clockbound-d is not updating it", (double)(mono - g.void_ns) / 1e9);
		return 1;
	}
	if (g.as_of_ns > mono + 1000000000) {
		nc__fmt(f->why, sizeof(f->why), "ClockBound's as-of time is in the future: refused");
		return 1;
	}
	if (g.status == 0 || g.status == 3) {
		/* unknown: no bound, and the figures before it void too */
		f->status = g.status == 3 ? NC_UTC_DISRUPTED : NC_UTC_UNKNOWN;
		f->drop = g.status == 0;
		nc__fmt(f->why, sizeof(f->why), "ClockBound says the clock is %s",
			g.status == 3 ? "disrupted" : "of unknown status");
		return 1;
	}
	cb.no_page = 0;
	if (g.disruption_support) {
		uint64_t marker = 0, addr = 0;
		char vwhy[96];
		if (nc__utc_vmclock_marker(cb.vmclock, &marker, &addr, vwhy, sizeof(vwhy)) != 0) {
			/* a migration would go unseen: ClockBound's client refuses
			 * such a segment, and so does this one */
			cb.no_page = 1;
			f->drop = 1;
			nc__fmt(f->why, sizeof(f->why), "ClockBound's segment says disruption support "
				"is on and no VMClock page is readable here (%s): refused, as ClockBound's "
				"client refuses it", vwhy);
			return 1;
		} else if (marker != g.marker) {
			/* watched from this page's marker: the reads stop asking
			 * again until the page moves once more */
			f->watch_addr = addr;
			f->watch_val = marker;
			f->status = NC_UTC_DISRUPTED;
			nc__fmt(f->why, sizeof(f->why), "ClockBound's disruption marker %llu differs from "
				"the VMClock page's %llu: the VM moved since clockbound-d's last update",
				(unsigned long long)g.marker, (unsigned long long)marker);
			return 1;
		} else {
			f->watch_addr = addr;
			f->watch_val = marker;
		}
	}
	double ns_tick = 1e9 / nc__rate_true_hz();
	double age = (double)(mono > g.as_of_ns ? mono - g.as_of_ns : 0);
	f->status = g.status == 1 && age <= CB_FRESH_NS ? NC_UTC_SYNCHRONISED : NC_UTC_FREE_RUNNING;
	f->bound_ns = (double)g.bound_ns;
	f->slew_ns = 0; /* ClockBound's bound is on CLOCK_REALTIME itself (its correction in it) */
	f->drift_ppm = (double)g.drift_ppb / 1e3;
	f->q_tick = now_tick - (uint64_t)(age / ns_tick + 1);
	f->as_of_ns = real - (int64_t)age;
	f->horizon_ns = (double)(g.void_ns - g.as_of_ns);
	/* synchronised while its figures are fresh (as ClockBound's client
	 * says: clockbound-d rewrites them every second); void after its
	 * void-after time */
	f->fresh_ns = CB_FRESH_NS < f->horizon_ns ? CB_FRESH_NS : f->horizon_ns;
	nc__fmt(f->why, sizeof(f->why), "ClockBound: bound %.0f us as of %.3f s ago, drift %u ppb, "
		"void after %.0f s", (double)g.bound_ns / 1e3, age / 1e9, g.drift_ppb,
		(double)(g.void_ns - g.as_of_ns) / 1e9);
	return 1;
}

static void cb_close(void) NC_REQUIRES(nc__lib_lock) { cb.open = 0; }

static void cb_where(char *out, size_t len) NC_REQUIRES(nc__lib_lock)
{
	nc__fmt(out, len, "%s%s", cb.path,
		cb.no_page ? "; disruption support on, no VMClock page readable here: refused" : "");
}

const struct nc__utc_source nc__utc_clockbound = {"clockbound", NC_UTC_SRC_CLOCKBOUND, cb_open,
						  cb_ask, cb_close, cb_where};

/* ---- the writer (nanoclock daemon --clockbound) ---- */
/* The segment's bytes for o (version 2), the generation left out */
static void encode(unsigned char c[CB_SIZE_V2], const struct nc__clockbound_out *o)
{
	memset(c, 0, CB_SIZE_V2);
	memcpy(c, CB_MAGIC, sizeof(CB_MAGIC));
	uint32_t size = CB_SIZE_V2;
	uint16_t version = 2;
	memcpy(c + 8, &size, 4);
	memcpy(c + 12, &version, 2);
	int64_t t[4] = {o->as_of_ns / 1000000000, o->as_of_ns % 1000000000, o->void_ns / 1000000000,
			o->void_ns % 1000000000};
	memcpy(c + 16, t, 32);
	memcpy(c + 48, &o->bound_ns, 8);
	memcpy(c + 56, &o->marker, 8);
	memcpy(c + 64, &o->drift_ppb, 4);
	memcpy(c + 68, &o->status, 4);
}

/* A new version written into the segment file fd with pwrite, as
 * ClockBound's writer writes its mapping: the generation odd (odd
 * already: a writer died mid-write), the fields, the next even one (2
 * after a wrap).  Each pwrite lands in the page cache before the next
 * begins, which is the order a reader's mapping sees.  0, or -1 (errno). */
static int store(int fd, const struct nc__clockbound_out *o)
{
	/* two of this library's writers on one segment take turns (an open
	 * file description's lock: released with the descriptor); the
	 * generation's read and its two writes are then one writer's */
	struct flock fl;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	while (fcntl(fd, F_OFD_SETLKW, &fl) != 0)
		if (errno != EINTR)
			break; /* (no OFD locks here: one writer is the rule) */
	uint16_t g = 0;
	if (pread(fd, &g, 2, 14) != 2)
		g = 0; /* a file cut short by someone else: written whole again */
	uint16_t odd = (uint16_t)(g | 1), even = (uint16_t)(odd + 1);
	if (even == 0)
		even = 2;
	unsigned char c[CB_SIZE_V2];
	encode(c, o);
	if (pwrite(fd, &odd, 2, 14) != 2 || pwrite(fd, c, 14, 0) != 14 ||
	    pwrite(fd, c + 16, CB_SIZE_V2 - 16, 16) != CB_SIZE_V2 - 16 || pwrite(fd, &even, 2, 14) != 2)
		return -1;
	return 0;
}

size_t nc__utc_clockbound_size(void) { return CB_SIZE_V2; }

int nc__utc_clockbound_is_segment(const unsigned char *p, size_t n)
{
	return n >= sizeof(CB_MAGIC) && memcmp(p, CB_MAGIC, sizeof(CB_MAGIC)) == 0;
}

/* The file this process last published (its device and inode): a writer
 * may find it cut short by another program (clockbound-d truncates the
 * segment when it starts), which leaves it this process's all the same.
 * Any thread that publishes sets it (atomics: publishing takes no lock). */
static uint64_t published_dev, published_ino;

/* fd starts as a segment does; or it is the file this process last
 * published, whatever another program left of it */
static int segment_head(int fd, const struct stat *st)
{
	unsigned char head[8];
	ssize_t n = pread(fd, head, sizeof(head), 0);
	if (n == 8 && nc__utc_clockbound_is_segment(head, 8))
		return 1;
	/* what another program left of this process's segment: no longer than
	 * one, starting blank or as the magic does (an inode number reused by
	 * another file of this user's is not enough) */
	static const unsigned char zero[8];
	return n >= 0 && st->st_size <= CB_SIZE_V2 &&
	       __atomic_load_n(&published_ino, __ATOMIC_ACQUIRE) == (uint64_t)st->st_ino &&
	       __atomic_load_n(&published_dev, __ATOMIC_ACQUIRE) == (uint64_t)st->st_dev &&
	       (memcmp(head, zero, (size_t)n) == 0 || memcmp(head, CB_MAGIC, (size_t)n) == 0);
}

/* Where to write: this user's ClockBound segment at path (updated in
 * place), or nothing there (made beside it under a name no other writer
 * uses, complete, then linked into place: never over something that
 * appeared meanwhile).  Anything else is left alone.  A file cut short by
 * another program (clockbound-d truncates it when it starts) is still a
 * segment: it is written whole again. */
static int open_segment(const char *path, char *tmp, size_t tmplen, int *created, char *why,
			size_t len)
{
	*created = 0;
	struct stat st;
	if (lstat(path, &st) == 0) {
		const char *kind = S_ISLNK(st.st_mode)	 ? "a symbolic link"
				   : S_ISDIR(st.st_mode) ? "a directory"
				   : !S_ISREG(st.st_mode) ? "not a regular file"
				   : st.st_uid != geteuid() ? "another user's file"
				   : st.st_nlink != 1	 ? "a file with other names (hard links)"
							     : NULL;
		int fd = kind ? -1 : open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		struct stat now;
		if (!kind && (fd < 0 || fstat(fd, &now) != 0 || now.st_ino != st.st_ino ||
			      now.st_dev != st.st_dev || now.st_size > 65536 || !segment_head(fd, &now)))
			kind = "not a ClockBound segment";
		if (kind) {
			if (fd >= 0)
				close(fd);
			nc__fmt(why, len, "%s is %s: left alone", path, kind);
			errno = EEXIST;
			return -1;
		}
		return fd;
	}
	if (errno != ENOENT) {
		nc__fmt(why, len, "%s: cannot be looked at", path);
		return -1;
	}
	/* the pid and the counter in the name: a file left by a writer that
	 * died (in a container, its pid may be this one's) is never in the way */
	int fd = -1;
	for (int i = 0; fd < 0 && i < 8; i++) {
		nc__fmt(tmp, tmplen, "%s.%d.%llx.new", path, (int)getpid(),
			(unsigned long long)(nc__counter_read() * 0x9e3779b97f4a7c15ull >> 24));
		fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		nc__fmt(why, len, "%s: cannot create %s", path, tmp);
		return -1;
	}
	if (fchmod(fd, 0644) != 0 || ftruncate(fd, CB_SIZE_V2) != 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		nc__fmt(why, len, "%s: cannot size %s", path, tmp);
		errno = e;
		return -1;
	}
	*created = 1;
	return fd; /* the caller writes it, then links it into place */
}

int nc__utc_clockbound_publish(const char *path, const struct nc__clockbound_out *o, char *why,
			       size_t len)
{
	char tmp[300];
	if (!path) {
		nc__fmt(why, len, "no path");
		errno = EINVAL;
		return -1;
	}
	if (strlen(path) + 48 > sizeof(tmp)) {
		nc__fmt(why, len, "a path of more than %zu bytes", sizeof(tmp) - 48);
		errno = ENAMETOOLONG;
		return -1;
	}
	if (nc__safe_path(path, 0, why, len) != 0)
		return -1;
	int fresh;
	int fd = open_segment(path, tmp, sizeof(tmp), &fresh, why, len);
	if (fd < 0)
		return -1;
	if (store(fd, o) != 0) {
		int e = errno;
		close(fd);
		if (fresh)
			unlink(tmp);
		nc__fmt(why, len, "%s: cannot be written (%s)", path, strerror(e));
		errno = e;
		return -1;
	}
	int rc = 0;
	if (fresh) {
		if (link(tmp, path) != 0) {
			int e = errno;
			nc__fmt(why, len, e == EEXIST ? "%s appeared meanwhile: left alone" : "%s: cannot link "
				"it into place", path);
			errno = e;
			rc = -1;
		}
		unlink(tmp);
	}
	struct stat st;
	if (rc == 0 && fstat(fd, &st) == 0) {
		__atomic_store_n(&published_dev, (uint64_t)st.st_dev, __ATOMIC_RELEASE);
		__atomic_store_n(&published_ino, (uint64_t)st.st_ino, __ATOMIC_RELEASE);
	}
	close(fd);
	return rc;
}
