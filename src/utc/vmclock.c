/* SPDX-License-Identifier: MIT */
/*
 * A VM's VMClock page (Linux drivers/ptp/ptp_vmclock.c maps it at
 * /dev/vmclock0; the layout is include/uapi/linux/vmclock-abi.h, little
 * endian): the hypervisor states UTC against the CPU's counter directly —
 * a counter value, the time then, the counter's period — with a maximum
 * error of each, a status, and a disruption marker that changes when the
 * counter was disrupted (a live migration).
 *   0 magic "VCLK" (u32)  4 size  8 version (u16, 1)  10 counter id
 *   (0 arm64 CNTVCT, 1 x86 TSC)  11 time type (0 UTC)  12 seq (u32, odd
 *   while written)  16 disruption marker (u64)  24 flags (u64)
 *   34 status (0 unknown, 1 initialising, 2 synchronised, 3 free-running,
 *   4 unreliable)  39 period shift  40 counter value  48 period
 *   (2^-(64 + shift) s)  56 period esterror rate  64 period maxerror rate
 *   72 time (s)  80 time (2^-64 s)  88 time esterror (ns)  96 time maxerror
 *   (ns)
 *
 * The page needs no tie of its own: at a refresh nanoclock's Unix-time
 * line and the page's UTC are both evaluated at one counter value, and the
 * bound is their difference plus the page's maximum error then; it grows
 * at the difference of their rates plus the page's period error rate.  A
 * changed disruption marker makes every read say disrupted at once (the
 * fast path watches the marker's word) until a refresh finds a valid page;
 * a sequence that stays odd says disrupted too; another counter, another
 * time type, a status other than synchronised or free-running, or a page
 * without a maximum error give no bound.  The mapping is never unmapped
 * once published (the fast path reads the marker from it).
 *
 * Only a device is mapped: a device page cannot shrink.  A regular file
 * standing for it (a page writer's, a test's) can be truncated by anyone
 * who may write it, and a read of a mapped page past the end of its file
 * is a SIGBUS in the reading process: a file is read with pread at each
 * refresh, opened by path each time (a re-created file is followed, no
 * descriptor is held that a program could reuse), and its marker copied
 * to a word of ours that the reads watch, so a disruption in a file is
 * seen at the next refresh.  Both layouts are read: the first (104
 * bytes, before vm_generation_counter) and the current (112): nothing
 * past byte 104 is used.
 */
#include "utc.h"
#include "../base/fmt.h"
#include "../base/latch.h"
#include "../clock/line.h"
#include "../counter/counter.h"
#include "../rate/rate.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define VMCLOCK_MAGIC 0x4b4c4356u
#define VMCLOCK_SIZE 112    /* the current layout */
#define VMCLOCK_MIN_SIZE 104 /* the first layout: all this reader uses */
/* a time in seconds whose ns fit an int64_t with room (year ~2262) */
#define VMCLOCK_MAX_TIME_S 9000000000ull
#define FLAG_PERIOD_MAXERROR_VALID (1u << 4)
#define FLAG_TIME_MAXERROR_VALID (1u << 6)

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Guarded by nc__lib_lock (core.c opens and asks under it, ClockBound's
 * source reads the marker under it). */
static struct {
	const volatile unsigned char *map; /* a device's, kept for the process's life */
	size_t len;
	int is_file;       /* a regular file: read, never mapped */
	char path[160];
	uint64_t marker;   /* the marker of the last good page */
	int have_marker;
} vm NC_GUARDED_BY(nc__lib_lock);

/* A file's disruption marker as last read, where the reads watch it:
 * written at a refresh (nc__lib_lock held), read by any reader. */
static uint64_t file_marker;

/* Is the file at vm.path one to trust: 0, or -1 with *bad said */
static int file_ok(const struct stat *st, const char **bad)
{
	*bad = !S_ISREG(st->st_mode) && !S_ISCHR(st->st_mode)	      ? "not a device or a file"
	       : st->st_uid != 0 && st->st_uid != geteuid()		      ? "owned by another user"
	       : S_ISREG(st->st_mode) && (st->st_mode & (S_IWGRP | S_IWOTH)) ? "writable by others"
	       : S_ISREG(st->st_mode) && st->st_size < VMCLOCK_MIN_SIZE      ? "shorter than a page"
									      : NULL;
	return *bad ? -1 : 0;
}

static int vm_open(const char *arg, char *why, size_t len) NC_REQUIRES(nc__lib_lock)
{
	if (vm.map || vm.is_file)
		return 0; /* mapped already (never unmapped), or a file read at each refresh */
	nc__copy(vm.path, sizeof(vm.path), arg[0] ? arg : "/dev/vmclock0");
	int fd = open(vm.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0) {
		nc__fmt(why, len, "%s: %s", vm.path, errno == ENOENT ? "none (no VMClock device)"
						     : errno == ELOOP ? "a symbolic link: refused"
								      : strerror(errno));
		return -1;
	}
	/* the device, or a file standing for it, root's or this user's and
	 * writable by no one else */
	const char *bad = NULL;
	if (fstat(fd, &st) != 0)
		bad = "cannot be looked at";
	else
		file_ok(&st, &bad);
	if (!bad && S_ISREG(st.st_mode)) {
		close(fd);
		vm.is_file = 1;
		return 0;
	}
	void *m = bad ? MAP_FAILED : mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		nc__fmt(why, len, "%s: %s", vm.path, bad ? bad : "cannot be mapped");
		return -1;
	}
	vm.map = m;
	vm.len = 4096;
	return 0;
}

struct page {
	uint32_t magic, size;
	uint16_t version;
	uint8_t counter_id, time_type, status, shift;
	uint32_t seq;
	uint64_t marker, flags, counter, period, maxerr_rate, time_s, time_frac, maxerr_ns;
};

/* A whole version of the file's page: opened by path, checked, read, and
 * its sequence read again (the writer may be mid-write): 0, -1 while the
 * sequence stays odd or moves, -2 when the file is gone, refused or too
 * short (*why said). */
static int read_file(unsigned char *c, char *why, size_t len) NC_REQUIRES(nc__lib_lock)
{
	int fd = open(vm.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		nc__fmt(why, len, "%s: %s", vm.path, strerror(errno));
		return -2;
	}
	struct stat st;
	const char *bad = NULL;
	if (fstat(fd, &st) != 0)
		bad = "cannot be looked at";
	else if (file_ok(&st, &bad) == 0 && !S_ISREG(st.st_mode))
		bad = "no longer a file";
	int rc = bad ? -2 : -1;
	for (int tries = 0; !bad && tries < 16; tries++) {
		unsigned char s2[4];
		ssize_t n = pread(fd, c, VMCLOCK_SIZE, 0);
		if (n < VMCLOCK_MIN_SIZE) {
			bad = n < 0 ? strerror(errno) : "shorter than a page";
			rc = -2;
			break;
		}
		if (n < VMCLOCK_SIZE)
			memset(c + n, 0, VMCLOCK_SIZE - (size_t)n);
		if ((c[12] & 1) || pread(fd, s2, 4, 12) != 4 || memcmp(s2, c + 12, 4) != 0)
			continue;
		rc = 0;
		break;
	}
	close(fd);
	if (bad)
		nc__fmt(why, len, "%s: %s", vm.path, bad);
	return rc;
}

/* a whole version of the page, between two even, equal sequence numbers
 * (a few tries, never a wait): 0, -1 when it stays odd, -2 when a file
 * standing for the page is gone or too short (*why said) */
static int read_page(struct page *pg, char *why, size_t len) NC_REQUIRES(nc__lib_lock)
{
	unsigned char c[VMCLOCK_SIZE];
	int rc = -1;
	if (vm.is_file) {
		rc = read_file(c, why, len);
	} else {
		const volatile uint32_t *seq = (const volatile uint32_t *)(vm.map + 12);
		for (int tries = 0; tries < 16 && rc != 0; tries++) {
			uint32_t s0 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
			if (s0 & 1)
				continue;
			for (size_t i = 0; i < sizeof(c); i++)
				c[i] = vm.map[i];
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(seq, __ATOMIC_RELAXED) == s0)
				rc = 0;
		}
	}
	if (rc != 0)
		return rc;
	pg->magic = (uint32_t)le64(c) & 0xffffffffu;
	pg->size = (uint32_t)(le64(c + 4) & 0xffffffffu);
	pg->version = (uint16_t)(c[8] | c[9] << 8);
	pg->counter_id = c[10];
	pg->time_type = c[11];
	pg->seq = (uint32_t)(le64(c + 12) & 0xffffffffu);
	pg->marker = le64(c + 16);
	pg->flags = le64(c + 24);
	pg->status = c[34];
	pg->shift = c[39];
	pg->counter = le64(c + 40);
	pg->period = le64(c + 48);
	pg->maxerr_rate = le64(c + 64);
	pg->time_s = le64(c + 72);
	pg->time_frac = le64(c + 80);
	pg->maxerr_ns = le64(c + 96);
	if (vm.is_file) /* where the reads watch it (a device's: in its page) */
		__atomic_store_n(&file_marker, pg->marker, __ATOMIC_RELEASE);
	return 0;
}

/* where the reads watch the marker */
static uint64_t marker_addr(void) NC_REQUIRES(nc__lib_lock)
{
	return vm.is_file ? (uint64_t)(uintptr_t)&file_marker : (uint64_t)(uintptr_t)(vm.map + 16);
}

static int is_page(const struct page *pg)
{
	return pg->magic == VMCLOCK_MAGIC && pg->version == 1 && pg->size >= VMCLOCK_MIN_SIZE;
}

/* The fix from a usable page: the line and the page at one counter value,
 * their difference and the page's stated error its bound. */
static int line_against_page(struct nc__utc_fix *f, const struct page *pg)
	NC_REQUIRES(nc__lib_lock)
{
	struct nc_impl_copy ln;
	nc__latch_read_line(&nc_impl_g.wall, &ln);
	uint64_t t = nc__counter_read();
	struct nc__epoch e = {ln.t0, ln.span, ln.c0, ln.mul_int, ln.mul_frac};
	int64_t line_ns = (int64_t)nc__epoch_extended(&e, t);
	/* the page: time + (t - counter) * period, in ns; the difference taken
	 * in integers first (a Unix time in ns has a 256 ns ulp in a double) */
	double per_ns = ldexp((double)pg->period, -(64 + pg->shift)) * 1e9; /* ns per tick */
	double dt = (double)(int64_t)(t - pg->counter);
	double page_frac_ns = ldexp((double)pg->time_frac, -64) * 1e9 + dt * per_ns;
	double diff = (double)(line_ns - (int64_t)pg->time_s * 1000000000) - page_frac_ns;
	double rate_err = (pg->flags & FLAG_PERIOD_MAXERROR_VALID)
				  ? ldexp((double)pg->maxerr_rate, -(64 + pg->shift)) * 1e9
				  : per_ns * 50e-6; /* unstated: the counters' usual +-50 ppm */
	double line_per = ((double)ln.mul_int + ldexp((double)ln.mul_frac, -64));
	/* a page far from the line (a counter value or period of another
	 * world) or stating an error of hours gives no bound: its figures
	 * would not fit the integers that carry them */
	double bound = fabs(diff) + (double)pg->maxerr_ns + fabs(dt) * rate_err + 1;
	if (!(fabs(diff) < 1e15) || !(bound <= 1e12))
		return -1;
	f->status = pg->status == 2 ? NC_UTC_SYNCHRONISED : NC_UTC_FREE_RUNNING;
	f->bound_ns = bound;
	f->slew_ns = 0; /* the line itself was measured against the page */
	f->on_line = 1;
	f->drift_ppm = (fabs(line_per - per_ns) + rate_err) / per_ns * 1e6;
	f->q_tick = t;
	f->as_of_ns = line_ns - (int64_t)diff;
	nc__fmt(f->why, sizeof(f->why), "VMClock: maximum error %llu ns, the line %+.0f ns off the "
		"page", (unsigned long long)pg->maxerr_ns, diff);
	return 0;
}

static int vm_ask(struct nc__utc_fix *f, double wait_ms) NC_REQUIRES(nc__lib_lock)
{
	(void)wait_ms;
	memset(f, 0, sizeof(*f));
	f->status = NC_UTC_UNKNOWN;
	if (!vm.map && !vm.is_file) {
		nc__fmt(f->why, sizeof(f->why), "no VMClock page mapped");
		return 0;
	}
	struct page pg;
	int rc = read_page(&pg, f->why, sizeof(f->why));
	if (rc == -2) { /* a file gone, refused or cut short: no page, no bound */
		f->drop = 1;
		return 1;
	}
	f->watch_addr = marker_addr();
	if (rc != 0) {
		/* (the marker watched stays the last good one's: the reads do not
		 * leave the fast path for a page that is still being written) */
		f->watch_addr = 0;
		f->status = NC_UTC_DISRUPTED;
		nc__fmt(f->why, sizeof(f->why), "the VMClock page stays mid-update (sequence odd)");
		return 1;
	}
	f->watch_val = pg.marker;
	if (!is_page(&pg)) {
		f->drop = 1;
		nc__fmt(f->why, sizeof(f->why), "not a VMClock page (magic, version %u or size %u)",
			pg.version, pg.size);
		return 1;
	}
	if (vm.have_marker && pg.marker != vm.marker) {
		/* disrupted (a migration): this page is the first after it; the
		 * reads said disrupted since the marker changed, this refresh
		 * takes the new marker as the one to watch */
		f->status = NC_UTC_DISRUPTED;
		vm.marker = pg.marker;
		nc__fmt(f->why, sizeof(f->why), "VMClock's disruption marker changed (the VM moved)");
		return 1;
	}
	const char *want = NULL;
	uint64_t kind = nc__counter_kind();
	int tsc = kind == NC_IMPL_KIND_TSC || kind == NC_IMPL_KIND_TSCP;
	int cntvct = kind == NC_IMPL_KIND_CNTVCT || kind == NC_IMPL_KIND_CNTVCTSS;
	if (!((pg.counter_id == 1 && tsc) || (pg.counter_id == 0 && cntvct)))
		want = "a counter this process does not read (counter id)";
	else if (pg.time_type != 0)
		want = "a time other than UTC (time type)";
	else if (pg.status != 2 && pg.status != 3)
		want = "a status other than synchronised or free-running";
	else if (!(pg.flags & FLAG_TIME_MAXERROR_VALID))
		want = "no maximum error";
	else if (pg.period == 0 || pg.shift > 63 || pg.maxerr_ns > 1000000000000ull ||
		 pg.time_s > VMCLOCK_MAX_TIME_S)
		want = "values out of range";
	if (want) {
		f->drop = 1;
		nc__fmt(f->why, sizeof(f->why), "the VMClock page states %s: no bound", want);
		return 1;
	}
	vm.marker = pg.marker;
	vm.have_marker = 1;
	if (line_against_page(f, &pg) != 0) {
		memset(f, 0, sizeof(*f));
		f->status = NC_UTC_UNKNOWN;
		f->drop = 1;
		nc__fmt(f->why, sizeof(f->why), "the VMClock page states values out of range: no bound");
	}
	return 1;
}

int nc__utc_vmclock_marker(const char *path, uint64_t *marker, uint64_t *addr, char *why,
			   size_t len)
{
	if (vm_open(path ? path : "", why, len) != 0)
		return -1;
	struct page pg;
	int rc = read_page(&pg, why, len);
	if (rc != 0) {
		if (rc == -1)
			nc__fmt(why, len, "the VMClock page stays mid-update (sequence odd)");
		return -1;
	}
	if (!is_page(&pg)) {
		nc__fmt(why, len, "%s is not a VMClock page", vm.path);
		return -1;
	}
	*marker = pg.marker;
	*addr = marker_addr();
	return 0;
}

void nc__utc_vmclock_test_page(const volatile unsigned char *page)
{
	vm.map = page;
	vm.len = 4096;
	vm.is_file = 0;
	nc__copy(vm.path, sizeof(vm.path), "a test's page");
}

static void vm_close(void) {} /* the mapping stays: the fast path may read its marker */
static void vm_where(char *out, size_t len) NC_REQUIRES(nc__lib_lock)
{
	nc__fmt(out, len, "%s", vm.path);
}

const struct nc__utc_source nc__utc_vmclock = {"vmclock", NC_UTC_SRC_VMCLOCK, vm_open, vm_ask,
					       vm_close, vm_where};
