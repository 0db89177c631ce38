/* SPDX-License-Identifier: MIT */
/* The shared calibration record: one rate and one tie to
 * CLOCK_MONOTONIC_RAW for all the processes of a boot, so that a start
 * costs a file read instead of a calibration and every process that
 * adopted the record converts ticks the same way.
 *
 * The record is a small fixed-size file (struct rec), read with pread:
 * no mapping of a file others may truncate (SIGBUS), no lock.  A writer
 * publishes by writing a new file beside it (PATH.new, created
 * exclusively and flock-ed until it is in place) and renaming it over
 * PATH: readers open one whole version or the other, and a writer killed
 * mid-update leaves only PATH.new, unlocked, which the next writer
 * removes at once.  Only a record is ever replaced (replaceable): never a
 * file of another kind or owner, a link, a FIFO, a device.  The
 * generation counts the versions; the checksum catches what rename cannot
 * (a copy cut short, bytes changed on the disk, a foreign file).
 *
 * Trust (adopt): a record can make a process slower, never wrong.  It is
 * opened with O_NOFOLLOW (not through a symbolic link), O_NONBLOCK (a
 * FIFO cannot block the first call) and O_CLOEXEC, and adopted only if it
 * is a regular file owned by root or by the process's effective user and
 * writable by no one else, exactly one record long, of this format, intact,
 * written during this boot (boot id) for this counter on this CPU, no less
 * certain than the process's calibration goal, and if a bracket of the
 * counter against CLOCK_MONOTONIC_RAW taken now lies on its line: the
 * rate over the long baseline from the record's tie to now must agree
 * with the record's within both uncertainties (nc__calib_extend's, which
 * counts the tie's error, the bracket's width and the clock's quantum).
 * Anything else: the process calibrates itself and says why.
 *
 * This file: the format, its loading and this process's view (status);
 * adopt.c the trust rules, publish.c the writing (record.h). */
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

/* This process's view (record.h), guarded by nc__lib_lock. */
struct nc__shared_view nc__shared_view = {0};

/* Once, at initialisation: a refresh may later run in a signal handler. */
NC_START int nc__shared_ids(void) NC_REQUIRES(nc__lib_lock)
{
	if (!V.have_ids) {
		if (nc__shared_boot_id(V.boot) != 0)
			return -1;
		V.have_ids = 1;
	}
	return 0;
}

/* Sharing is for the machine's own hardware counter, measured against the
 * real CLOCK_MONOTONIC_RAW: not for an OS clock (exact already), an
 * application's counter, or a test's simulated world. */
NC_START int nc__shared_shareable(char *why, size_t len)
{
	const struct nc__counter *c = nc__counter();
	if (nc__ref_simulated()) {
		SAY("the reference clocks are simulated (a test)");
		return 0;
	}
	if (c->fixed_hz > 0) {
		SAY("the counter (%s) is an OS clock: its rate is exact", c->name);
		return 0;
	}
	if (c != nc__hw_counter(nc__counter_machine())) {
		SAY("the counter (%s) is not the machine's own", c->name);
		return 0;
	}
	return 1;
}

/* The user's own record: $XDG_RUNTIME_DIR (a directory only the user can
 * write, on tmpfs), else /dev/shm with the effective uid in the name; and
 * the build's architecture in the name, so that the user's i386 and x86_64
 * programs each keep a record they can read, instead of each refusing and
 * rewriting the other's at every start. */
NC_START void nc__shared_user_path(char *out, size_t len)
{
	const char *x = secure_getenv("XDG_RUNTIME_DIR");
	if (x && x[0] == '/' && strlen(x) + sizeof("/nanoclock-record-" ARCH) <= len)
		nc__fmt(out, len, "%s/nanoclock-record-%s", x, ARCH);
	else
		nc__fmt(out, len, "/dev/shm/nanoclock-%u-%s", (unsigned)geteuid(), ARCH);
}

#define REC_STR_(x) #x
#define REC_STR(x) REC_STR_(x)
#define BUILD REC_STR(NC_VERSION_MAJOR) "." REC_STR(NC_VERSION_MINOR) "." REC_STR(NC_VERSION_PATCH) " " ARCH
/* "0.3.0 ppc64le" fits the record's 16 bytes */
_Static_assert(sizeof(BUILD) <= 16, "version and architecture too long for the record");
const char *nc__shared_build(void) { return BUILD; }

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

uint64_t nc__shared_rec_sum(const struct rec *r) { return fnv1a(r, offsetof(struct rec, checksum)); }
uint64_t nc__shared_checksum(const struct nc__shared_rec *r) { return nc__shared_rec_sum(r); }

/* The boot id: 0, or -1 when unreadable (then nothing is shared: a
 * record from another boot could not be told apart). */
NC_START int nc__shared_boot_id(char out[40])
{
	memset(out, 0, 40);
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, out, 39);
	close(fd);
	if (n < 32)
		return -1;
	/* up to the newline; a loop, not strchr: a cold start's only call of
	 * it, whose page of libc it would fault in */
	for (ssize_t i = 0, end = n; i < 40; i++) {
		if (i < end && out[i] == '\n')
			end = i;
		if (i >= end)
			out[i] = 0;
	}
	return 0;
}

void nc__shared_cpu_identity(char out[32], const struct nc__cpuid *c)
{
	memset(out, 0, 32);
	if (c->valid) {
		nc__fmt(out, 32, "%s %08x", c->vendor, (unsigned)c->signature);
		return;
	}
	struct utsname u;
	nc__fmt(out, 32, "%.31s", uname(&u) == 0 ? u.machine : "unknown");
}

/* 1 and why if the record was written by another build (its version
 * string: at the same offset in every build, the facts beginning at 280
 * in all of them, asserted, and the same in either byte order); size: the
 * file's, when it is not this build's record size, else 0. */
static int other_build(struct rec *h, off_t size, char *why, size_t len)
{
	h->lib_version[sizeof(h->lib_version) - 1] = 0;
	if (strcmp(h->lib_version, nc__shared_build()) == 0)
		return 0;
	char sizes[64] = "";
	if (size)
		nc__fmt(sizes, sizeof(sizes), "%lld bytes; ", (long long)size);
	nc__fmt(why, len, "refused: written by nanoclock %s, another build (%sthis is %s)",
		 h->lib_version, sizes, nc__shared_build());
	return 1;
}

/* A file of the wrong size: another build's record, or a torn one. */
static void wrong_size(int fd, off_t size, char *why, size_t len)
{
	struct rec h;
	size_t head = offsetof(struct rec, facts);
	int is_rec = size >= (off_t)head && pread(fd, &h, head, 0) == (ssize_t)head &&
		     memcmp(h.magic, MAGIC, sizeof(MAGIC)) == 0;
	if (is_rec && other_build(&h, size, why, len))
		return;
	nc__fmt(why, len, "refused: %lld bytes, a record is %zu (%s)", (long long)size, sizeof(h),
		 !is_rec ? "truncated or not a record" : size < (off_t)sizeof(h) ? "truncated" : "grown");
}

/* Plausible, and consistent with itself, or what is not: scatter of at
 * most 2 us, the stated uncertainty no finer than half the tie's 4
 * standard errors over the baseline, brackets of at most 100 us, a tie
 * before the record was written and a baseline begun after boot, written
 * before now.
 * The writer asks it too: it never writes what a reader would refuse. */
NC_START const char *nc__shared_implausible(const struct rec *r, int64_t now)
{
	if (!nc__hz_valid(r->hz))
		return "a rate out of range";
	if (!(r->ppm > 0 && r->ppm < 1e3) || !(r->worst_ppm >= 0 && r->worst_ppm < 1e6))
		return "an uncertainty out of range";
	if (!(r->sigma_ns >= 0 && r->sigma_ns <= 2e3) || !(r->anchor_sd_ns >= 0 && r->anchor_sd_ns <= 2e3))
		return "a scatter above 2 us (values out of range)";
	if (r->min_width == 0 || r->accept_width < r->min_width ||
	    (double)r->accept_width * 1e9 / r->hz > 1e5)
		return "brackets wider than 100 us (values out of range)";
	/* the tie lies inside the baseline (the fit's centroid: early or late
	 * as the accepted brackets fell), the baseline began after boot */
	if (r->window_ns <= 0 || r->anchor_ns <= 0 || r->written_raw_ns < r->anchor_ns ||
	    r->window_ns > r->written_raw_ns)
		return "a baseline inconsistent with its times (values inconsistent)";
	if (r->written_raw_ns > now)
		return "written after now (values inconsistent)";
	if (r->ppm * 1e-6 * (double)r->window_ns < 2 * r->anchor_sd_ns)
		return "an uncertainty finer than its tie allows (values inconsistent)";
	return NULL;
}

/* The file at path, opened without following a link and read if it is a
 * regular file of a record's size, owned by root or this user and
 * writable by no one else: 1, or 0 with why. */
NC_START static int read_file(const char *path, struct rec *r, char *why, size_t len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			nc__fmt(why, len, "none");
		else if (errno == ELOOP)
			nc__fmt(why, len, "refused: a symbolic link");
		else
			nc__fmt(why, len, "refused: cannot open (%s)", strerror(errno));
		return 0;
	}
	struct stat st;
	ssize_t n = -1;
	char buf[sizeof(*r) + 1];
	if (fstat(fd, &st) != 0) {
		nc__fmt(why, len, "refused: cannot stat (%s)", strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		nc__fmt(why, len, "refused: not a regular file (%s)",
			 S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory"
										 : "a device or socket");
	} else if (st.st_uid != 0 && st.st_uid != geteuid()) {
		nc__fmt(why, len, "refused: owned by uid %u (neither root nor this user)",
			 (unsigned)st.st_uid);
	} else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		nc__fmt(why, len, "refused: writable by others (mode %04o)",
			 (unsigned)(st.st_mode & 07777));
	} else if (st.st_size != (off_t)sizeof(*r)) {
		wrong_size(fd, st.st_size, why, len);
	} else if ((n = pread(fd, buf, sizeof(buf), 0)) != (ssize_t)sizeof(*r)) {
		/* one byte more asked: a file that grew since fstat is seen */
		nc__fmt(why, len, "refused: read %zd bytes, a record is %zu", n, sizeof(*r));
		n = -1;
	} else {
		memcpy(r, buf, sizeof(*r));
	}
	close(fd);
	return n == (ssize_t)sizeof(*r);
}

/* Reads the record at path and checks all that does not need the counter:
 * 1, or 0 with why. */
NC_START
int nc__shared_load(const char *path, const struct nc__config *cfg, struct rec *r, char *why,
		       size_t len) NC_REQUIRES(nc__lib_lock)
{
	if (!read_file(path, r, why, len))
		return 0;
	if (memcmp(r->magic, MAGIC, sizeof(MAGIC)) != 0) {
		nc__fmt(why, len, "refused: not a nanoclock record");
		return 0;
	}
	/* another build's first (a string: the same in either byte order),
	 * then what this build's layout says */
	if (other_build(r, 0, why, len))
		return 0;
	if (r->size != sizeof(*r) || r->facts_size != sizeof(r->facts)) {
		nc__fmt(why, len, "refused: not a nanoclock record (sizes inside it wrong)");
		return 0;
	}
	if (r->version != REC_VERSION) {
		nc__fmt(why, len, "refused: record version %u, this library reads %u", r->version,
			 REC_VERSION);
		return 0;
	}
	if (nc__shared_rec_sum(r) != r->checksum) {
		nc__fmt(why, len, "refused: checksum does not match (corrupt)");
		return 0;
	}
	r->boot_id[39] = r->counter[15] = r->cpu[31] = r->writer[15] = 0;
	if (nc__shared_ids() != 0) {
		nc__fmt(why, len, "refused: this boot's id is unreadable");
		return 0;
	}
	if (strcmp(V.boot, r->boot_id) != 0) {
		nc__fmt(why, len, "refused: written during another boot");
		return 0;
	}
	const char *bad = nc__shared_implausible(r, nc__mono_raw_ns());
	if (bad) {
		nc__fmt(why, len, "refused: %s", bad);
		return 0;
	}
	/* the facts' strings are printed: terminated whatever the file says */
	struct nc_kernel_view *kv = &r->facts.m.kv;
	kv->clocksource[sizeof(kv->clocksource) - 1] = 0;
	kv->available_clocksources[sizeof(kv->available_clocksources) - 1] = 0;
	kv->tsc_unstable_why[sizeof(kv->tsc_unstable_why) - 1] = 0;
	kv->hypervisor[sizeof(kv->hypervisor) - 1] = 0;
	kv->cpuinfo_tsc_flags[sizeof(kv->cpuinfo_tsc_flags) - 1] = 0;
	r->facts.m.unreadable[sizeof(r->facts.m.unreadable) - 1] = 0;
	r->facts.cpuid.hv_sig[sizeof(r->facts.cpuid.hv_sig) - 1] = 0;
	r->facts.cpuid.vendor[sizeof(r->facts.cpuid.vendor) - 1] = 0;
	if (r->ppm > cfg->calib_ppm) {
		snprintf(why, len, "refused: its uncertainty (+-%.3g ppm) is above this process's goal "
			 "(%.3g ppm)", r->ppm, cfg->calib_ppm);
		return 0;
	}
	return 1;
}
