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
 * This process's view (status) is written by initialisation and by
 * refreshes, under nc__lib_lock. */
#include "shared.h"
#include "base/fmt.h"
#include "../base/lock.h"
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

#define rec nc__shared_rec

/* The library's version and this build's architecture: the machine facts
 * are its structures, laid out as this build's compiler lays them out (an
 * i386 program on an x86_64 machine, or another architecture under
 * qemu-user, shares the boot id; its record may be another size, i386's,
 * or the same size in another layout or byte order, so the name decides) */
#if defined(__x86_64__) && defined(__ILP32__)
#define ARCH "x32"
#elif defined(__x86_64__)
#define ARCH "x86_64"
#elif defined(__i386__)
#define ARCH "i386"
#elif defined(__aarch64__)
#define ARCH "aarch64"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARCH "ppc64le"
#elif defined(__powerpc64__)
#define ARCH "ppc64"
#elif defined(__riscv) && __riscv_xlen == 64
#define ARCH "riscv64"
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && __SIZEOF_POINTER__ == 8
#define ARCH "any-le64" /* its fields in its own byte order and sizes */
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARCH "any-le32"
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ && __SIZEOF_POINTER__ == 8
#define ARCH "any-be64"
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define ARCH "any-be32"
#else
#define ARCH "any"
#endif
#define REC_STR_(x) #x
#define REC_STR(x) REC_STR_(x)
#define BUILD REC_STR(NC_VERSION_MAJOR) "." REC_STR(NC_VERSION_MINOR) "." REC_STR(NC_VERSION_PATCH) " " ARCH
/* "0.3.0 ppc64le" fits the record's 16 bytes */
_Static_assert(sizeof(BUILD) <= 16, "version and architecture too long for the record");
const char *nc__shared_build(void) { return BUILD; }

#define SYSTEM_RECORD "/run/nanoclock/record"


/* This process's view, guarded by nc__lib_lock. */
static struct {
	int looked, adopted, published;
	char path[256];          /* adopted, written, or the last looked at */
	char own_path[256];      /* where this process publishes ("" : nowhere) */
	char status[384];
	struct rec r;            /* the record adopted or written */
	int have_r;
	struct rec cand;         /* the first record that passed load_record ... */
	int cand_i;              /* ... and its place (-1: none) */
	char boot[40];           /* this boot's id, read once (have_ids) */
	char cpu_text[32];       /* the CPU as the last record written named it */
	int due;                 /* a refresh found a rewrite due (atomic: nc__shared_flush) */
	int pending;             /* not written at init: the first statement was wider than ... */
	double goal_ppm;         /* ... the goal; written once a refresh meets it */
	int have_ids;
} sh NC_GUARDED_BY(nc__lib_lock);

static const char MAGIC[8] = {'N', 'C', 'S', 'H', 'A', 'R', 'E', 'D'};

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t rec_sum(const struct rec *r) { return fnv1a(r, offsetof(struct rec, checksum)); }
uint64_t nc__shared_checksum(const struct nc__shared_rec *r) { return rec_sum(r); }

/* The boot id: 0, or -1 when unreadable (then nothing is shared: a
 * record from another boot could not be told apart). */
static int boot_id(char out[40])
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

static void cpu_identity(char out[32], const struct nc__cpuid *c)
{
	memset(out, 0, 32);
	if (c->valid) {
		nc__fmt(out, 32, "%s %08x", c->vendor, (unsigned)c->signature);
		return;
	}
	struct utsname u;
	nc__fmt(out, 32, "%.31s", uname(&u) == 0 ? u.machine : "unknown");
}

/* Reasons where the caller wants them: a refresh (why NULL) formats none,
 * formatting being work a refresh (perhaps in a signal handler) need not do. */
#define SAY(...)                                       \
	do {                                           \
		if (why)                               \
			nc__fmt(why, len, __VA_ARGS__); \
	} while (0)

/* Once, at initialisation: a refresh may later run in a signal handler. */
NC_START static int ids(void) NC_REQUIRES(nc__lib_lock)
{
	if (!sh.have_ids) {
		if (boot_id(sh.boot) != 0)
			return -1;
		sh.have_ids = 1;
	}
	return 0;
}

/* Sharing is for the machine's own hardware counter, measured against the
 * real CLOCK_MONOTONIC_RAW: not for an OS clock (exact already), an
 * application's counter, or a test's simulated world. */
NC_START static int shareable(char *why, size_t len)
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
NC_START static void user_path(char *out, size_t len)
{
	const char *x = secure_getenv("XDG_RUNTIME_DIR");
	if (x && x[0] == '/' && strlen(x) + sizeof("/nanoclock-record-" ARCH) <= len)
		nc__fmt(out, len, "%s/nanoclock-record-%s", x, ARCH);
	else
		nc__fmt(out, len, "/dev/shm/nanoclock-%u-%s", (unsigned)geteuid(), ARCH);
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
NC_START static const char *implausible(const struct rec *r, int64_t now)
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
static int load_record(const char *path, const struct nc__config *cfg, struct rec *r, char *why,
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
	if (rec_sum(r) != r->checksum) {
		nc__fmt(why, len, "refused: checksum does not match (corrupt)");
		return 0;
	}
	r->boot_id[39] = r->counter[15] = r->cpu[31] = r->writer[15] = 0;
	if (ids() != 0) {
		nc__fmt(why, len, "refused: this boot's id is unreadable");
		return 0;
	}
	if (strcmp(sh.boot, r->boot_id) != 0) {
		nc__fmt(why, len, "refused: written during another boot");
		return 0;
	}
	const char *bad = implausible(r, nc__mono_raw_ns());
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

/* The record against the counter chosen: 1 with its calibration in *out,
 * or 0 with why. */
static int check_line(const struct rec *r, struct nc__calib *out, struct nc__bracket *start,
		      char *why, size_t len)
{
	const struct nc__counter *c = nc__counter();
	if (strcmp(c->name, r->counter) != 0) {
		nc__fmt(why, len, "refused: for counter %.15s, this process uses %s", r->counter, c->name);
		return 0;
	}
	/* the calibration this process takes if the check below passes */
	struct nc__calib k;
	memset(&k, 0, sizeof(k));
	k.hz = r->hz;
	k.ppm = r->ppm;
	k.worst_ppm = r->worst_ppm;
	k.sigma_ns = r->sigma_ns;
	k.anchor_sd_ns = r->anchor_sd_ns;
	k.min_width = r->min_width;
	k.accept_width = r->accept_width;
	k.anchor_tick = r->anchor_tick;
	k.anchor_ns = r->anchor_ns;
	k.window_ns = r->window_ns;
	struct nc__calib_io io = {NULL, nc__counter_io_read, nc__ref_io_raw};
	/* the narrowest of 3 x 16 brackets: its width counts in the allowance
	 * below, so a slow machine (a sanitizer, an emulator) only weakens the
	 * check; beyond 100 us it says too little */
	struct nc__bracket b, t;
	b.width = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		nc__take_bracket(&io, 16, &t);
		if (t.width < b.width)
			b = t;
	}
	if (b.width == UINT64_MAX || (double)b.width * 1e9 / r->hz > 1e5) {
		nc__fmt(why, len, "refused: no narrow bracket of the counter could be taken now");
		return 0;
	}
	if (b.mid <= r->anchor_tick || b.ref <= r->anchor_ns) {
		nc__fmt(why, len, "refused: the counter or CLOCK_MONOTONIC_RAW is behind the record's "
			 "tie (a reset?)");
		return 0;
	}
	/* where the record's line puts the bracket's middle, against where it
	 * is: off by at most the rate's stated error over the baseline, the
	 * tie's (4 standard errors, as the record states its rate) and half
	 * the bracket (the reference read lies inside it), plus the clocks'
	 * 1 ns quantum */
	long double dy = (long double)(b.ref - r->anchor_ns);
	long double pred = (long double)(b.mid - r->anchor_tick) * 1e9L / (long double)r->hz;
	double dev = (double)(dy - pred);
	double allow = r->ppm * 1e-6 * (double)dy +
		       4 * sqrt(r->sigma_ns * r->sigma_ns + r->anchor_sd_ns * r->anchor_sd_ns) +
		       (double)b.width / 2 * 1e9 / r->hz + 1;
	if (!(fabs(dev) <= allow)) {
		nc__fmt(why, len, "refused: the counter now is off its line by %+.0f ns over %.3f s "
			 "(%+.3f ppm; allowed %.0f ns)", dev, (double)dy / 1e9, dev / (double)dy * 1e6,
			 allow);
		return 0;
	}
	/* brackets wider than twice this process's narrowest are not used
	 * for its refinements, as in its own calibration: the writer's
	 * narrowest may be narrower than anything this process can take (a
	 * native writer, a reader under valgrind: it never refined) */
	if (2 * b.width + 1 > k.accept_width)
		k.accept_width = 2 * b.width + 1;
	*out = k;
	*start = b;
	return 1;
}

static void status_add(const char *fmt_path, const char *what) NC_REQUIRES(nc__lib_lock)
{
	size_t l = strlen(sh.status);
	nc__fmt(sh.status + l, sizeof(sh.status) - l, "%s%s: %s", l ? "; " : "", fmt_path, what);
}

/* The places, in order: NANOCLOCK_SHARED's path alone, or the system's
 * record then the user's. */
static int places(const struct nc__config *cfg, const char *out[2]) NC_REQUIRES(nc__lib_lock)
{
	if (cfg->shared_path[0]) {
		out[0] = cfg->shared_path;
		return 1;
	}
	out[0] = SYSTEM_RECORD;
	out[1] = sh.own_path;
	return 2;
}

NC_START
const struct nc__machine_facts *nc__shared_look(const struct nc__config *cfg, char counter[16])
{
	NC_LOCK_HELD();
	char why[192];
	counter[0] = 0;
	sh.looked = 1;
	sh.cand_i = -1;
	if (cfg->shared_off) {
		nc__fmt(sh.status, sizeof(sh.status), "off (%s)",
			 cfg->shared_why[0] ? cfg->shared_why : "NANOCLOCK_SHARED=off");
		return NULL;
	}
	if (nc__ref_simulated()) {
		nc__fmt(sh.status, sizeof(sh.status), "not used: the reference clocks are simulated");
		return NULL;
	}
	if (cfg->shared_path[0])
		nc__copy(sh.own_path, sizeof(sh.own_path), cfg->shared_path);
	else
		user_path(sh.own_path, sizeof(sh.own_path));
	const char *p[2];
	int n = places(cfg, p);
	for (int i = 0; i < n; i++) {
		nc__copy(sh.path, sizeof(sh.path), p[i]);
		if (load_record(p[i], cfg, &sh.cand, why, sizeof(why))) {
			sh.cand_i = i;
			memcpy(counter, sh.cand.counter, 16);
			return &sh.cand.facts;
		}
		status_add(p[i], why);
		if (strncmp(why, "refused", 7) == 0)
			nc__log(NC_LOG_INFO, "shared record %s %s", p[i], why);
	}
	return NULL;
}

NC_START
int nc__shared_adopt(const struct nc__config *cfg, struct nc__calib *out, struct nc__bracket *start)
{
	NC_LOCK_HELD();
	char why[192];
	if (sh.cand_i < 0)
		return 0;
	if (!shareable(why, sizeof(why))) {
		status_add(sh.path, "not used");
		size_t l = strlen(sh.status);
		nc__fmt(sh.status + l, sizeof(sh.status) - l, " (%s)", why);
		return 0;
	}
	const char *p[2];
	int n = places(cfg, p);
	for (int i = sh.cand_i; i < n; i++) {
		struct rec r;
		nc__copy(sh.path, sizeof(sh.path), p[i]);
		int ok = i == sh.cand_i ? (r = sh.cand, 1) : load_record(p[i], cfg, &r, why, sizeof(why));
		if (ok && check_line(&r, out, start, why, sizeof(why))) {
			sh.adopted = sh.have_r = 1;
			sh.r = r;
			memcpy(sh.cpu_text, r.cpu, sizeof(sh.cpu_text));
			status_add(p[i], "adopted");
			return 1;
		}
		status_add(p[i], why);
		if (strncmp(why, "refused", 7) == 0)
			nc__log(NC_LOG_INFO, "shared record %s %s", p[i], why);
	}
	return 0;
}

/* The record of this process's rate and tie. */
static int fill(struct rec *r, int sync_verdict, double shift_ns, uint32_t ncpus, char *why,
		size_t len) NC_REQUIRES(nc__lib_lock)
{
	memset(r, 0, sizeof(*r));
	if (!shareable(why, len))
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
	if (ids() != 0) {
		SAY("this boot's id is unreadable");
		return NC_ESYS;
	}
	memcpy(r->boot_id, sh.boot, sizeof(r->boot_id));
	nc__copy(r->lib_version, sizeof(r->lib_version), nc__shared_build());
	r->facts_size = sizeof(r->facts);
	nc__counter_machine_facts(&r->facts);
	/* fill runs at the start, in nc_shared_publish and in
	 * nc__shared_flush: none a read's path, so formatting is fine (the
	 * first write of a process without a target comes from the flush,
	 * and named no CPU when only a reason's caller formatted it) */
	if (!sh.cpu_text[0]) {
		cpu_identity(r->cpu, &r->facts.cpuid);
		memcpy(sh.cpu_text, r->cpu, sizeof(sh.cpu_text));
	} else
		memcpy(r->cpu, sh.cpu_text, sizeof(r->cpu));
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
	const char *bad = implausible(r, r->written_raw_ns);
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
	    memcmp(o.magic, MAGIC, sizeof(MAGIC)) == 0 && rec_sum(&o) == o.checksum)
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
	r->checksum = rec_sum(r);
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
		const char *p = path ? path : sh.own_path;
		char own[256];
		if (!p[0]) {
			user_path(own, sizeof(own));
			p = own;
		}
		rc = write_rec(p, &r, why, whylen);
		if (rc == 0) {
			sh.published = sh.have_r = 1;
			sh.adopted = 0;
			sh.r = r;
			nc__copy(sh.path, sizeof(sh.path), p);
		}
	}
	return rc;
}

NC_START void nc__shared_publish_own(double goal_ppm)
{
	NC_LOCK_HELD();
	if (sh.adopted || !sh.own_path[0])
		return;
	char why[192];
	struct rec r;
	struct nc__meas m;
	nc__rate_measurement(&m);
	if (m.ppm > goal_ppm || !nc__counter_machine()->kernel_read) {
		/* a record is what others take instead of calibrating: only a
		 * measurement as certain as the goal is one to hand them, with
		 * the machine's facts whole (read after the start) */
		sh.pending = 1;
		sh.goal_ppm = goal_ppm;
		if (m.ppm > goal_ppm)
			nc__fmt(why, sizeof(why), "not yet written: this process's first statement "
				"(+-%.3f ppm) is wider than the goal (+-%.3f ppm); written once a refresh "
				"measures the rate to it", m.ppm, goal_ppm);
		else
			nc__fmt(why, sizeof(why), "not yet written: the machine's facts are read after "
				"the start; written once a refresh confirms the rate");
		status_add(sh.own_path, why);
		return;
	}
	if (fill(&r, -1, 0, 0, why, sizeof(why)) == 0) {
		nc__fmt(r.writer, sizeof(r.writer), "process");
		if (write_rec(sh.own_path, &r, why, sizeof(why)) == 0) {
			sh.published = sh.have_r = 1;
			sh.r = r;
			nc__copy(sh.path, sizeof(sh.path), sh.own_path);
			status_add(sh.own_path, "written by this process");
			return;
		}
	}
	char msg[240];
	nc__fmt(msg, sizeof(msg), "not written: %s", why);
	status_add(sh.own_path, msg);
	/* something not a record at the path (a typo in NANOCLOCK_SHARED?):
	 * said, as it is left alone */
	nc__log(strstr(why, "left alone") ? NC_LOG_WARN : NC_LOG_INFO, "shared record %s %s",
		sh.own_path, msg);
}

void nc__shared_after_refine(void)
{
	NC_LOCK_HELD();
	/* a refresh, maybe in a signal handler, maybe a read's: it only
	 * decides (no system call, errno untouched); the write is
	 * nc__shared_flush's, outside the reading paths */
	if (!sh.own_path[0] || nc__rate_remeasuring() || !nc__rate_meas_own() ||
	    __atomic_load_n(&sh.due, __ATOMIC_RELAXED))
		return;
	if (sh.pending) { /* the first write, once the goal is met */
		struct nc__meas pm;
		nc__rate_measurement(&pm);
		if (pm.ppm > 0 && pm.ppm <= sh.goal_ppm)
			__atomic_store_n(&sh.due, 1, __ATOMIC_RELEASE);
		return;
	}
	if (!sh.have_r)
		return;
	/* only the record this process adopted or wrote at its own path, and
	 * only for a measurement four times as certain over a second or more */
	if (strcmp(sh.path, sh.own_path) != 0)
		return;
	struct nc__meas m;
	nc__rate_measurement(&m);
	if (!(m.ppm > 0 && m.ppm * 4 <= sh.r.ppm && nc__rate_meas_window_ns() >= 1e9))
		return;
	const struct nc__calib *a = nc__rate_anchor();
	if (a->anchor_tick != sh.r.anchor_tick || a->anchor_ns != sh.r.anchor_ns)
		return; /* re-anchored since: not the same line */
	__atomic_store_n(&sh.due, 1, __ATOMIC_RELEASE);
}

/* Unchecked by design: the flag every call that is not a read tests
 * before it takes the lock (an atomic load; looked at again under it). */
static int flush_due(void) NC_NO_TSA { return __atomic_load_n(&sh.due, __ATOMIC_ACQUIRE); }

NC_START void nc__shared_flush(void)
{
	if (!flush_due())
		return;
	struct rec r;
	char path[256];
	nc__counter_complete(); /* the record's facts: once, outside the lock */
	nc__lock();
	int first = sh.pending;
	int go = __atomic_load_n(&sh.due, __ATOMIC_RELAXED) &&
		 (first ? fill(&r, -1, 0, 0, NULL, 0) == 0
			: fill(&r, sh.r.sync_verdict, sh.r.sync_max_shift_ns, sh.r.sync_ncpus, NULL,
			       0) == 0);
	__atomic_store_n(&sh.due, 0, __ATOMIC_RELAXED);
	if (go) {
		r.sync_raw_ns = sh.r.sync_raw_ns;
		memcpy(r.writer, "process", 8);
		memcpy(path, sh.own_path, sizeof(path));
	}
	nc__unlock();
	/* the file's system calls outside the lock: readers are never held
	 * at a horizon by a slow file system */
	if (!go || write_rec(path, &r, NULL, 0) != 0)
		return;
	nc__lock();
	sh.r = r;
	sh.published = sh.have_r = 1;
	if (first) {
		sh.pending = 0;
		nc__copy(sh.path, sizeof(sh.path), sh.own_path);
		status_add(sh.own_path, "written by this process (once a refresh met the goal)");
	}
	nc__unlock();
}

void nc__shared_status(struct nc_shared_status *st)
{
	NC_LOCK_HELD();
	memset(st, 0, sizeof(*st));
	st->adopted = sh.adopted;
	st->published = sh.published;
	nc__copy(st->path, sizeof(st->path), sh.looked ? sh.path : "");
	nc__copy(st->status, sizeof(st->status), sh.status);
	st->sync_verdict = -1;
	if (!sh.have_r)
		return;
	const struct rec *r = &sh.r;
	nc__copy(st->writer, sizeof(st->writer), r->writer);
	st->writer_uid = r->writer_uid;
	st->writer_pid = r->writer_pid;
	st->generation = r->generation;
	int64_t now = nc__mono_raw_ns();
	st->age_s = (double)(now - r->written_raw_ns) / 1e9;
	st->baseline_s = (double)r->window_ns / 1e9;
	st->hz = r->hz;
	st->ppm = r->ppm;
	st->sync_verdict = r->sync_verdict;
	st->sync_ncpus = r->sync_ncpus;
	st->sync_max_shift_ns = r->sync_max_shift_ns;
	st->sync_age_s = r->sync_verdict >= 0 ? (double)(now - r->sync_raw_ns) / 1e9 : 0;
}
