/* SPDX-License-Identifier: MIT */
/* The shared record written: this process's rate and tie as PATH.new,
 * created exclusively and locked, then renamed over PATH where nothing is
 * or over this user's record (record.c's header says why a reader never
 * sees half of one); at initialisation's end, when a refresh refined the
 * rate enough, and for nc_shared_publish. */
#include "record.h"
#include "../base/log.h"
#include "../base/refclock.h"
#include "../base/safefile.h"
#include "../counter/counter.h"
#include "nanoclock.h"
#include "nanoclock_shared.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>


/* The record of this process's rate and tie. */
static int fill(struct rec *r, int sync_verdict, double shift_ns, uint32_t ncpus, char *why,
		size_t len) NC_REQUIRES(nc__lib_lock)
{
	memset(r, 0, sizeof(*r));
	if (!nc__shared_shareable(why, len))
		return NC_EINVAL;
	if (nc__rate_remeasuring()) {
		/* after a discontinuity: the new anchor with the old fit's
		 * errors would be a record no measurement made */
		SAY("the rate is being measured again after a discontinuity");
		return NC_EINVAL;
	}
	if (!nc__rate_meas_own()) {
		/* adopted: the rate is the record's claim until a refresh
		 * measures it here finer than that claim; written back, a writer would state a
		 * confidence it never measured (and, with two writers, one
		 * neither of them did at the time written) */
		SAY("its rate is the adopted record's, not yet measured by this process (once a "
		    "refresh measures it finer than the record's claim, it is)");
		return NC_EINVAL;
	}
	if (!nc__counter_machine()->kernel_read) {
		/* the facts an adopter takes instead of reading them: whole */
		SAY("the machine's facts are not read yet");
		return NC_EINVAL;
	}
	if (nc__shared_ids() != 0) {
		SAY("this boot's id is unreadable");
		return NC_ESYS;
	}
	memcpy(r->boot_id, V.boot, sizeof(r->boot_id));
	nc__copy(r->lib_version, sizeof(r->lib_version), nc__shared_build());
	r->facts_size = sizeof(r->facts);
	nc__counter_machine_facts(&r->facts);
	/* fill runs at the start, in nc_shared_publish and in
	 * nc__shared_flush: none a read's path, so formatting is fine (the
	 * first write of a process without a target comes from the flush,
	 * and named no CPU when only a reason's caller formatted it) */
	if (!V.cpu_text[0]) {
		nc__shared_cpu_identity(r->cpu, &r->facts.cpuid);
		memcpy(V.cpu_text, r->cpu, sizeof(V.cpu_text));
	} else
		memcpy(r->cpu, V.cpu_text, sizeof(r->cpu));
	const struct nc__calib *a = nc__rate_anchor();
	struct nc__meas m;
	nc__rate_measurement(&m);
	memcpy(r->magic, MAGIC, sizeof(MAGIC));
	r->version = REC_VERSION;
	r->size = sizeof(*r);
	nc__copy(r->counter, sizeof(r->counter), nc__counter()->name);
	/* the rate as this process measured it (its calibration, or the
	 * baseline from the tie to its latest bracket), and the tie it was
	 * measured from: the tie's errors are its measurer's, the writer's
	 * own calibration or the record it adopted and checked */
	r->hz = m.hz;
	r->ppm = m.ppm;
	double worst = nc__rate_meas_worst_ppm();
	r->worst_ppm = worst > m.ppm ? worst : m.ppm;
	r->sigma_ns = a->sigma_ns;
	r->anchor_sd_ns = a->anchor_sd_ns;
	r->accept_width = a->accept_width;
	r->min_width = a->min_width;
	r->anchor_tick = a->anchor_tick;
	r->anchor_ns = a->anchor_ns;
	r->window_ns = (int64_t)nc__rate_meas_window_ns();
	r->written_raw_ns = nc__mono_raw_ns();
	r->written_real_ns = nc__clock_ns(CLOCK_REALTIME);
	r->writer_uid = (uint32_t)geteuid();
	r->writer_pid = (uint32_t)getpid();
	r->sync_verdict = sync_verdict;
	r->sync_ncpus = ncpus;
	r->sync_max_shift_ns = sync_verdict >= 0 ? shift_ns : 0;
	r->sync_raw_ns = sync_verdict >= 0 ? r->written_raw_ns : 0;
	if (!nc__hz_valid(r->hz) || !(r->ppm > 0) || r->window_ns <= 0 || r->accept_width == 0) {
		SAY("this process has no measured rate to share");
		return NC_EINVAL;
	}
	const char *bad = nc__shared_implausible(r, r->written_raw_ns);
	if (bad) {
		SAY("its measurement has %s: a reader would refuse it", bad);
		return NC_EINVAL;
	}
	return 0;
}

/* What a writer may replace: nothing, or a nanoclock record of this user
 * (the magic at its start, at most a page long: this build's, another
 * build's, a torn or corrupt one).  Never a file of another kind, another
 * user's file, a symbolic link, a FIFO, a socket, a directory or a device:
 * NANOCLOCK_SHARED=notes.txt replaced the user's notes, and root turned
 * /dev/zero into a file.  0: nothing there; 1: a record, its identity in
 * *id; -1: anything else, with why. */
static int replaceable(const char *path, struct stat *id, char *why, size_t len)
{
	if (lstat(path, id) != 0) {
		if (errno == ENOENT)
			return 0;
		SAY("cannot look at %s (%s)", path, strerror(errno));
		return -1;
	}
	const char *kind = S_ISLNK(id->st_mode)    ? "a symbolic link"
			   : S_ISFIFO(id->st_mode) ? "a FIFO"
			   : S_ISSOCK(id->st_mode) ? "a socket"
			   : S_ISDIR(id->st_mode)  ? "a directory"
			   : S_ISCHR(id->st_mode) || S_ISBLK(id->st_mode) ? "a device"
			   : !S_ISREG(id->st_mode) ? "not a regular file"
						   : NULL;
	if (kind) {
		SAY("%s is %s: left alone", path, kind);
		return -1;
	}
	if (id->st_uid != geteuid()) {
		SAY("%s is owned by uid %u, not this user: left alone", path, (unsigned)id->st_uid);
		return -1;
	}
	char m[sizeof(MAGIC)];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	int ok = fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == id->st_dev && st.st_ino == id->st_ino &&
		 st.st_size >= (off_t)sizeof(m) && st.st_size <= 4096 &&
		 pread(fd, m, sizeof(m), 0) == (ssize_t)sizeof(m) && memcmp(m, MAGIC, sizeof(m)) == 0;
	if (fd >= 0)
		close(fd);
	if (!ok) {
		SAY("%s is not a nanoclock record (a file of %lld bytes): left alone", path,
		    (long long)id->st_size);
		return -1;
	}
	return 1;
}

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
static int rename2(const char *from, const char *to, unsigned flags)
{
	return nc__rename2(AT_FDCWD, from, AT_FDCWD, to, flags);
}
#define unsupported nc__rename2_unsupported

/* tmp put at path where nothing is: never over something that appeared
 * there meanwhile (EEXIST).  Without renameat2, link() refuses the same. */
static int put_new(const char *tmp, const char *path)
{
	if (rename2(tmp, path, RENAME_NOREPLACE) == 0)
		return 0;
	if (!unsupported(errno))
		return -1;
	if (link(tmp, path) != 0)
		return -1;
	unlink(tmp);
	return 0;
}

/* tmp put at path in place of the record *id, locked by the caller (so no
 * other writer takes it for a dead writer's leftover): swapped, then the
 * old one, now at tmp, removed if it is that record; if something else had
 * taken its place meanwhile it is swapped back, never lost.  Without
 * RENAME_EXCHANGE the identity is checked again just before the rename: a
 * file put there in between by this user or root (nobody else can, in
 * the sticky /dev/shm or a directory of the user's) would be replaced. */
static int put_over(const char *tmp, const char *path, const struct stat *id)
{
	struct stat st;
	if (rename2(tmp, path, RENAME_EXCHANGE) == 0) {
		if (lstat(tmp, &st) == 0 && st.st_dev == id->st_dev && st.st_ino == id->st_ino) {
			unlink(tmp);
			return 0;
		}
		rename2(tmp, path, RENAME_EXCHANGE);
		errno = EBUSY;
		return -1;
	}
	if (!unsupported(errno))
		return -1;
	if (lstat(path, &st) != 0 || st.st_dev != id->st_dev || st.st_ino != id->st_ino) {
		errno = EBUSY;
		return -1;
	}
	return rename(tmp, path);
}

/* A PATH.new found at tmp: removed if it is a writer's leftover whose writer
 * is gone (writers hold an flock on theirs until it is renamed: a free lock
 * on this user's empty or record-headed file is a dead writer's).  1:
 * removed; 0: a live writer's; -1: not a writer's file (left alone). */
static int remove_dead_writers(const char *tmp, char *why, size_t len)
{
	int fd = open(tmp, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st, now;
	char m[sizeof(MAGIC)];
	if (fd < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		if (errno == ENOENT)
			return 1; /* gone already: try again */
		SAY("%s is not a nanoclock writer's file: left alone", tmp);
		return -1;
	}
	ssize_t n = st.st_size > 0 ? pread(fd, m, sizeof(m), 0) : 0;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size > 4096 || n < 0 ||
	    memcmp(m, MAGIC, (size_t)n) != 0) {
		close(fd);
		SAY("%s is not a nanoclock writer's file: left alone", tmp);
		return -1;
	}
	int r = 0;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		/* still the same file under the name: then no live writer has it */
		if (lstat(tmp, &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino)
			r = unlink(tmp) == 0;
		else
			r = 1;
	}
	close(fd);
	if (!r)
		SAY("another writer is busy (%s exists)", tmp);
	return r;
}

/* The record write_rec replaces: opened, still the file replaceable()
 * looked at, and locked; its generation followed in r.  The descriptor, or
 * -1 with errno EBUSY. */
static int lock_old(const char *path, const struct stat *id, struct rec *r, char *why, size_t len)
{
	struct stat st;
	int old = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (old < 0 || fstat(old, &st) != 0 || st.st_dev != id->st_dev || st.st_ino != id->st_ino ||
	    flock(old, LOCK_EX | LOCK_NB) != 0) {
		if (old >= 0)
			close(old);
		SAY("another writer is busy (%s changed or is locked)", path);
		errno = EBUSY;
		return -1;
	}
	struct rec o;
	if (st.st_size == (off_t)sizeof(o) && pread(old, &o, sizeof(o), 0) == (ssize_t)sizeof(o) &&
	    memcmp(o.magic, MAGIC, sizeof(MAGIC)) == 0 && nc__shared_rec_sum(&o) == o.checksum)
		r->generation = o.generation + 1;
	return old;
}

/* tmp, created by this writer (O_EXCL, a dead writer's left one removed),
 * locked at once and still its own under the name: a writer that found it
 * before the lock took it for a dead writer's and removed it.  The
 * descriptor and *mine, or -1 with errno (EBUSY: another writer). */
static int create_tmp(const char *tmp, struct stat *mine, char *why, size_t len)
{
	struct stat st;
	int fd = -1, e = 0;
	for (int attempt = 0; fd < 0; attempt++) {
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0)
			break;
		e = errno;
		if (e == EEXIST && attempt < 2 && remove_dead_writers(tmp, why, len) > 0)
			continue;
		if (e != EEXIST)
			SAY("cannot create %s", tmp);
		else if (attempt >= 2)
			SAY("another writer is busy (%s exists)", tmp);
		errno = e == EEXIST ? EBUSY : e;
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0 || fstat(fd, mine) != 0 || lstat(tmp, &st) != 0 ||
	    st.st_dev != mine->st_dev || st.st_ino != mine->st_ino) {
		close(fd);
		SAY("another writer is busy (%s taken)", tmp);
		errno = EBUSY;
		return -1;
	}
	return fd;
}

/* PATH.new, created exclusively and locked, then put at PATH where nothing
 * is or over this user's record (never over anything else: replaceable).
 * The lock is held until the new record is in place, and the record
 * replaced is locked too: no other writer takes either for a dead
 * writer's leftover.  Async-signal-safe system calls only on a refresh's
 * path (why NULL). */
static int write_rec(const char *path, struct rec *r, char *why, size_t len)
{
	char tmp[272];
	size_t pl = strlen(path);
	if (path[0] != '/' || pl + 5 > sizeof(tmp)) {
		SAY("not an absolute path of at most %zu bytes", sizeof(tmp) - 5);
		return NC_EINVAL;
	}
	memcpy(tmp, path, pl);
	memcpy(tmp + pl, ".new", 5);
	if (nc__safe_path(path, 0, why, len) != 0)
		return NC_ESYS;
	struct stat id, st, mine;
	int there = replaceable(path, &id, why, len);
	if (there < 0) {
		errno = EEXIST;
		return NC_ESYS;
	}
	/* the record replaced: locked, and its generation followed */
	r->generation = 1;
	int old = -1;
	if (there && (old = lock_old(path, &id, r, why, len)) < 0)
		return NC_ESYS;
	r->checksum = nc__shared_rec_sum(r);
	int fd = create_tmp(tmp, &mine, why, len), e;
	if (fd < 0) {
		e = errno;
		if (old >= 0)
			close(old);
		errno = e;
		return NC_ESYS;
	}
	ssize_t n = write(fd, r, sizeof(*r));
	e = errno;
	int rc = NC_ESYS;
	/* fchmod: the umask may have taken read permission away from others */
	if (n == (ssize_t)sizeof(*r) && fchmod(fd, 0644) == 0) {
		if ((there ? put_over(tmp, path, &id) : put_new(tmp, path)) == 0)
			rc = 0;
		else if ((e = errno) == EEXIST || e == EBUSY)
			SAY("%s changed while being written (left alone)", path);
		else
			SAY("cannot rename %s over %s", tmp, path);
	} else {
		if (n == (ssize_t)sizeof(*r))
			e = errno;
		SAY(n >= 0 && n < (ssize_t)sizeof(*r) ? "short write to %s" : "cannot write %s", tmp);
		if (n >= 0 && n < (ssize_t)sizeof(*r))
			e = ENOSPC;
	}
	/* what is left at tmp is this writer's own (locked: no one else
	 * removes or replaces it) */
	if (rc != 0 && lstat(tmp, &st) == 0 && st.st_dev == mine.st_dev && st.st_ino == mine.st_ino)
		unlink(tmp);
	close(fd);
	if (old >= 0)
		close(old);
	errno = e;
	return rc;
}

int nc__shared_write(const char *path, int sync_verdict, double sync_shift_ns, uint32_t sync_ncpus,
		     char *why, size_t whylen)
{
	NC_LOCK_HELD();
	struct rec r;
	int rc = fill(&r, sync_verdict, sync_shift_ns, sync_ncpus, why, whylen);
	if (rc == 0) {
		nc__copy(r.writer, sizeof(r.writer), path ? "daemon" : "process");
		const char *p = path ? path : V.own_path;
		char own[256];
		if (!p[0]) {
			nc__shared_user_path(own, sizeof(own));
			p = own;
		}
		rc = write_rec(p, &r, why, whylen);
		if (rc == 0) {
			V.published = V.have_r = 1;
			V.adopted = 0;
			V.r = r;
			nc__copy(V.path, sizeof(V.path), p);
			if (V.pending && !strcmp(p, V.own_path)) {
				/* the write held back at the start is this one (with
				 * its verdict): not done again later without it */
				V.pending = 0;
				__atomic_store_n(&V.due, 0, __ATOMIC_RELAXED);
				if (V.pending_at < sizeof(V.status))
					V.status[V.pending_at] = 0;
				nc__shared_status_add(V.own_path, "written by this process");
			}
		}
	}
	return rc;
}

NC_START void nc__shared_publish_own(double goal_ppm)
{
	NC_LOCK_HELD();
	if (V.adopted || !V.own_path[0])
		return;
	char why[192];
	struct rec r;
	struct nc__meas m;
	nc__rate_measurement(&m);
	if (m.ppm > goal_ppm || !nc__counter_machine()->kernel_read) {
		/* a record is what others take instead of calibrating: only a
		 * measurement as certain as the goal is one to hand them, with
		 * the machine's facts whole (read after the start) */
		V.pending = 1;
		V.goal_ppm = goal_ppm;
		if (m.ppm > goal_ppm)
			nc__fmt(why, sizeof(why), "not yet written: this process's first statement "
				"(+-%.3f ppm) is wider than the goal (+-%.3f ppm); written once a refresh "
				"measures the rate to it", m.ppm, goal_ppm);
		else
			nc__fmt(why, sizeof(why), "not yet written: the machine's facts are read after "
				"the start; written once a refresh confirms the rate");
		V.pending_at = strlen(V.status);
		nc__shared_status_add(V.own_path, why);
		return;
	}
	if (fill(&r, -1, 0, 0, why, sizeof(why)) == 0) {
		nc__fmt(r.writer, sizeof(r.writer), "process");
		if (write_rec(V.own_path, &r, why, sizeof(why)) == 0) {
			V.published = V.have_r = 1;
			V.r = r;
			nc__copy(V.path, sizeof(V.path), V.own_path);
			nc__shared_status_add(V.own_path, "written by this process");
			return;
		}
	}
	char msg[240];
	nc__fmt(msg, sizeof(msg), "not written: %s", why);
	nc__shared_status_add(V.own_path, msg);
	/* something not a record at the path (a typo in NANOCLOCK_SHARED?):
	 * said, as it is left alone */
	nc__log(strstr(why, "left alone") ? NC_LOG_WARN : NC_LOG_INFO, "shared record %s %s",
		V.own_path, msg);
}

void nc__shared_after_refine(void)
{
	NC_LOCK_HELD();
	/* a refresh, maybe in a signal handler, maybe a read's: it only
	 * decides (no system call, errno untouched); the write is
	 * nc__shared_flush's, outside the reading paths */
	if (!V.own_path[0] || nc__rate_remeasuring() || !nc__rate_meas_own() ||
	    __atomic_load_n(&V.due, __ATOMIC_RELAXED))
		return;
	if (V.pending) { /* the first write, once the goal is met */
		struct nc__meas pm;
		nc__rate_measurement(&pm);
		if (pm.ppm > 0 && pm.ppm <= V.goal_ppm)
			__atomic_store_n(&V.due, 1, __ATOMIC_RELEASE);
		return;
	}
	if (!V.have_r)
		return;
	/* only the record this process adopted or wrote at its own path, and
	 * only for a measurement four times as certain over a second or more */
	if (strcmp(V.path, V.own_path) != 0)
		return;
	struct nc__meas m;
	nc__rate_measurement(&m);
	if (!(m.ppm > 0 && m.ppm * 4 <= V.r.ppm && nc__rate_meas_window_ns() >= 1e9))
		return;
	const struct nc__calib *a = nc__rate_anchor();
	if (a->anchor_tick != V.r.anchor_tick || a->anchor_ns != V.r.anchor_ns)
		return; /* re-anchored since: not the same line */
	__atomic_store_n(&V.due, 1, __ATOMIC_RELEASE);
}

/* Unchecked by design: the flag every call that is not a read tests
 * before it takes the lock (an atomic load; looked at again under it). */
static int flush_due(void) NC_NO_TSA { return __atomic_load_n(&V.due, __ATOMIC_ACQUIRE); }

NC_START void nc__shared_flush(void)
{
	if (!flush_due())
		return;
	struct rec r;
	char path[256];
	nc__counter_complete(); /* the record's facts: once, outside the lock */
	nc__lock();
	int first = V.pending;
	int go = __atomic_load_n(&V.due, __ATOMIC_RELAXED) &&
		 (first ? fill(&r, -1, 0, 0, NULL, 0) == 0
			: fill(&r, V.r.sync_verdict, V.r.sync_max_shift_ns, V.r.sync_ncpus, NULL,
			       0) == 0);
	__atomic_store_n(&V.due, 0, __ATOMIC_RELAXED);
	if (go) {
		r.sync_raw_ns = V.r.sync_raw_ns;
		memcpy(r.writer, "process", 8);
		memcpy(path, V.own_path, sizeof(path));
	}
	nc__unlock();
	/* the file's system calls outside the lock: readers are never held
	 * at a horizon by a slow file system */
	if (!go || write_rec(path, &r, NULL, 0) != 0)
		return;
	nc__lock();
	V.r = r;
	V.published = V.have_r = 1;
	if (first) {
		V.pending = 0;
		nc__copy(V.path, sizeof(V.path), V.own_path);
		/* in place of "not yet written" */
		if (V.pending_at < sizeof(V.status))
			V.status[V.pending_at] = 0;
		nc__shared_status_add(V.own_path, "written by this process (once a refresh met the goal)");
	}
	nc__unlock();
}
