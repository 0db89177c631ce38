/* SPDX-License-Identifier: MIT */
/* What the UTC test programs share (test_utc.c: adjtimex and chrony;
 * test_utc_clockbound.c; test_utc_vmclock.c; test_utc_trace.c): CLOCK_REALTIME
 * as the library reads it, steppable by the test; a chronyd of the test's
 * own; ClockBound segments and VMClock pages written by the test from the
 * protocols' texts; the check that an interval holds the truth.  Every
 * helper is static (one copy per program), marked unused where a program
 * does not need it. */
#ifndef NC_TEST_UTC_FIXTURES_H
#define NC_TEST_UTC_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "nanoclock_trace.h"
#include "utc/utc.h"
#include "clock/wall.h" /* nc__wall_steps: sets of the clock the line followed */
/* a case's process lets its UTC source go (valgrind counts its descriptor) */
#define CHILD_AFTER() nc_utc_stop()
#include "child.h"
#include "skip.h"
#include "run.h"
#include "clocklock.h"
#include "clockstep.h"
#include "destructive.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timex.h>
#include <sys/wait.h>

__attribute__((unused)) static int64_t real_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* ---- CLOCK_REALTIME as the library reads it, steppable by the test (the
 * real clock is never set): the real one plus sim_offset ---- */
__attribute__((unused)) static int64_t sim_offset;

__attribute__((unused)) static int64_t sim_real(void) { return real_ns() + __atomic_load_n(&sim_offset, __ATOMIC_ACQUIRE); }

__attribute__((unused)) static void steppable_realtime(void)
{
	struct nc__refclocks r = nc__ref;
	r.real = sim_real;
	nc__test_set_refclocks(&r);
}

/* ---- chrony's protocol, as the test writes it ---- */
__attribute__((unused)) static uint32_t enc_float(double x)
{
	int e = 0;
	if (x != 0)
		(void)frexp(x, &e);
	int E = e + 1;
	long c = lround(ldexp(x, 25 - E));
	if (c >= (1L << 24) || c < -(1L << 24)) {
		c /= 2;
		E++;
	}
	return ((uint32_t)(E & 0x7f) << 25) | ((uint32_t)c & 0x1ffffffu);
}

__attribute__((unused)) static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8),
	p[3] = (unsigned char)v;
}

__attribute__((unused)) static void put16(unsigned char *p, unsigned v) { p[0] = (unsigned char)(v >> 8), p[1] = (unsigned char)v; }

struct figures {
	double corr, delay, disp, skew, resid;
	int64_t ref_ns;
	unsigned stratum, leap;
	uint32_t ref_id;
};

/* A tracking reply to sequence seq (104 bytes) */
__attribute__((unused)) static size_t make_reply(unsigned char *p, uint32_t seq, const struct figures *g)
{
	memset(p, 0, 104);
	p[0] = 6;
	p[1] = 2;
	put16(p + 4, 33);
	put16(p + 6, 5);
	put32(p + 16, seq);
	unsigned char *d = p + 28;
	put32(d, g->ref_id);
	put16(d + 24, g->stratum);
	put16(d + 26, g->leap);
	put32(d + 28, 0);
	put32(d + 32, (uint32_t)(g->ref_ns / 1000000000));
	put32(d + 36, (uint32_t)(g->ref_ns % 1000000000));
	put32(d + 40, enc_float(g->corr));
	put32(d + 60, enc_float(g->skew));
	put32(d + 56, enc_float(g->resid));
	put32(d + 64, enc_float(g->delay));
	put32(d + 68, enc_float(g->disp));
	return 104;
}

__attribute__((unused)) static struct figures good_figures(void)
{
	struct figures g = {0.0125, 0.0002, 0.00005, 0.05, 0.001, real_ns() - 500000000, 2, 0, 0x7f000001};
	return g;
}

/* ---- a chronyd of the test's own ---- */
enum { GOOD, SILENT, WRONG_SEQ, WRONG_VERSION, FUTURE, UNSYNC, LOCAL, NARROW_STALE, REFUSED,
       ZERO_BOUND, OLD, NEAR_FUTURE };

__attribute__((unused)) static struct {
	int fd, port;
	int mode;
	struct figures g;
	int answered;
	int bad_sent; /* replies sent in a mode other than GOOD */
} fake;

__attribute__((unused)) static void *fake_chronyd(void *arg)
{
	(void)arg;
	for (;;) {
		unsigned char in[512], out[128];
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(fake.fd, in, sizeof(in), 0, (struct sockaddr *)&from, &fl);
		if (n < 12 || in[1] != 1)
			continue;
		uint32_t seq = (uint32_t)in[8] << 24 | (uint32_t)in[9] << 16 | (uint32_t)in[10] << 8 | in[11];
		int mode = __atomic_load_n(&fake.mode, __ATOMIC_ACQUIRE);
		if (mode == SILENT)
			continue;
		struct figures g = fake.g;
		/* a chronyd measures the system clock as it is: a step of it
		 * (the test's simulated one) changes the correction it states */
		g.corr -= (double)__atomic_load_n(&sim_offset, __ATOMIC_ACQUIRE) / 1e9;
		g.ref_ns = real_ns() - 200000000;
		if (mode == FUTURE)
			g.ref_ns = real_ns() + 10000000000;
		if (mode == UNSYNC)
			g.leap = 3;
		if (mode == LOCAL)
			g.ref_id = 0x7f7f0101;
		if (mode == NARROW_STALE) { /* a narrow bound for another request */
			g.corr = 0, g.delay = 0, g.disp = 1e-9;
			seq ^= 1;
		}
		if (mode == ZERO_BOUND)
			g.corr = 0, g.delay = 0, g.disp = 0;
		if (mode == OLD) /* 29 days old, and a bound of 1 us */
			g.ref_ns = real_ns() - (int64_t)29 * 86400 * 1000000000, g.corr = 0, g.delay = 0,
			g.disp = 1e-6;
		if (mode == NEAR_FUTURE) /* 1.5 s ahead: beyond the reply's bound (12.6 ms) */
			g.ref_ns = real_ns() + 1500000000;
		make_reply(out, mode == WRONG_SEQ ? seq + 1 : seq, &g);
		if (mode == WRONG_VERSION) {
			out[0] = 5;
			put32(out + 28 + 68, enc_float(1e-9));
		}
		if (mode == REFUSED)
			put16(out + 8, 2); /* "not allowed from here" */
		sendto(fake.fd, out, 104, 0, (struct sockaddr *)&from, fl);
		__atomic_add_fetch(&fake.answered, 1, __ATOMIC_RELAXED);
		if (mode != GOOD)
			__atomic_add_fetch(&fake.bad_sent, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* starts the fake chronyd and points NANOCLOCK_UTC_SOURCE at it */
__attribute__((unused)) static void start_fake(int mode)
{
	fake.fd = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK(fake.fd >= 0);
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(fake.fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	socklen_t al = sizeof(a);
	CHECK(getsockname(fake.fd, (struct sockaddr *)&a, &al) == 0);
	fake.port = ntohs(a.sin_port);
	fake.g = good_figures();
	__atomic_store_n(&fake.mode, mode, __ATOMIC_RELEASE);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, fake_chronyd, NULL) == 0);
	char v[64];
	snprintf(v, sizeof(v), "chrony:127.0.0.1:%d", fake.port);
	setenv("NANOCLOCK_UTC_SOURCE", v, 1);
}

/* truth: chrony says the system clock is corr slow of NTP time */
__attribute__((unused)) static int64_t truth_shift(void) { return (int64_t)llround(fake.g.corr * 1e9); }

/* One read: the interval holds REALTIME + shift at the read's moment,
 * which lies between the REALTIME reads on either side of it: it fails
 * only by ending before the first or starting after the second. */
__attribute__((unused)) static void check_holds(const struct nc_utc *u, int64_t before, int64_t after, int64_t shift)
{
	/* The truth is REALTIME + shift only while nobody else steps the
	 * clock: a read near such a step (before the line followed it, a
	 * refresh period) is not judged (tests/clockstep.h) */
	static struct clockstep cs;
	static uint32_t steps_before; /* the steps the line followed, at the last call */
	const char *ms = getenv("NANOCLOCK_UNIX_REFRESH_MS");
	double period_ms = ms && atof(ms) > 0 ? atof(ms) : 1000;
	int64_t lag = (int64_t)(period_ms * 1e6) + 20000000;
	uint32_t steps0 = steps_before;
	steps_before = nc__wall_steps();
	if (!clockstep_calm(&cs, lag))
		return;
	if (!(u->earliest_ns <= after + shift && u->latest_ns >= before + shift &&
	      u->earliest_ns <= u->unix_ns && u->unix_ns <= u->latest_ns)) {
		/* a step before the first look: excused only where the line
		 * followed a set of the clock since the last call, or does
		 * within the lag */
		struct timespec p = {(time_t)(lag / 1000000000), (long)(lag % 1000000000)};
		nanosleep(&p, NULL);
		(void)nc_unix_ns(); /* a read past the lag: the line follows what it must */
		if (nc__wall_steps() != steps0) {
			fprintf(stderr, "case: a read across a set of the clock the line then followed: "
				"not judged\n");
			steps_before = nc__wall_steps();
			return;
		}
		fprintf(stderr, "case: [%lld, %lld] around %lld does not hold the truth %lld..%lld\n",
			(long long)u->earliest_ns, (long long)u->latest_ns, (long long)u->unix_ns,
			(long long)(before + shift), (long long)(after + shift));
		_exit(1);
	}
}

/* ---- ClockBound's segment, written by the test from the protocol's text ---- */
struct cbseg {
	uint16_t version, generation;
	int64_t as_of_ns, void_ns, bound_ns; /* CLOCK_MONOTONIC_COARSE */
	uint64_t marker;
	uint32_t drift_ppb;
	int32_t status;
	uint32_t size;
	const char *magic;
	uint8_t support; /* disruption support (version 2) */
};

__attribute__((unused)) static int64_t coarse_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* PROTOCOL.md, version 2 (native byte order): magic, segment size (u32),
 * version (u16), generation (u16), as-of and void-after (i64 s, i64 ns),
 * bound (i64 ns), disruption marker (u64), max drift (u32 ppb), status
 * (i32), disruption support (u8); version 1: max drift at 56, status at 64 */
__attribute__((unused)) static void cb_encode(unsigned char *p, const struct cbseg *g)
{
	memset(p, 0, 80);
	/* the magic: two native 32-bit words (clock-bound-shm's SHM_MAGIC) */
	uint32_t magic[2] = {0x414d5a4eu, 0x43420200u};
	memcpy(p, magic, 8);
	if (g->magic)
		memcpy(p, g->magic, 8);
	memcpy(p + 8, &g->size, 4);
	memcpy(p + 12, &g->version, 2);
	memcpy(p + 14, &g->generation, 2);
	int64_t t[4] = {g->as_of_ns / 1000000000, g->as_of_ns % 1000000000, g->void_ns / 1000000000,
			g->void_ns % 1000000000};
	memcpy(p + 16, t, 32);
	memcpy(p + 48, &g->bound_ns, 8);
	if (g->version == 1) {
		memcpy(p + 56, &g->drift_ppb, 4);
		memcpy(p + 64, &g->status, 4);
	} else {
		memcpy(p + 56, &g->marker, 8);
		memcpy(p + 64, &g->drift_ppb, 4);
		memcpy(p + 68, &g->status, 4);
		p[72] = g->support;
	}
}

__attribute__((unused)) static struct cbseg cb_good(int64_t bound_ns)
{
	int64_t now = coarse_ns();
	struct cbseg g = {2, 2, now, now + 60000000000, bound_ns, 0, 15000, 1, 80, NULL, 0};
	return g;
}

__attribute__((unused)) static char cb_path[64];

__attribute__((unused)) static volatile unsigned char *cb_map;

/* the segment's file, mapped: the test writes it in place as clockbound-d does */
__attribute__((unused)) static void cb_make(const struct cbseg *g)
{
	snprintf(cb_path, sizeof(cb_path), "/tmp/nc-cb-%d", (int)getpid());
	unlink(cb_path);
	int fd = open(cb_path, O_RDWR | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0 && ftruncate(fd, 80) == 0);
	void *m = mmap(NULL, 80, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED);
	close(fd);
	cb_map = m;
	unsigned char b[80];
	cb_encode(b, g);
	memcpy((void *)(uintptr_t)cb_map, b, 80);
	char v[96];
	snprintf(v, sizeof(v), "clockbound:%s", cb_path);
	setenv("NANOCLOCK_UTC_SOURCE", v, 1);
}

/* rewritten in place: generation odd, the fields, generation even */
__attribute__((unused)) static void cb_write(struct cbseg *g)
{
	uint16_t gen = (uint16_t)(g->generation + 1);
	__atomic_store_n((uint16_t *)(uintptr_t)(cb_map + 14), gen, __ATOMIC_RELEASE);
	unsigned char b[80];
	g->generation = gen;
	cb_encode(b, g);
	for (int i = 0; i < 80; i++)
		if (i < 14 || i >= 16)
			cb_map[i] = b[i];
	g->generation = (uint16_t)(gen + 1);
	__atomic_store_n((uint16_t *)(uintptr_t)(cb_map + 14), g->generation, __ATOMIC_RELEASE);
}

/* ---- a VMClock page, in a file, written by the test from the ABI header ---- */
struct vmpage {
	uint32_t seq;
	uint64_t marker, flags;
	uint8_t counter_id, time_type, status;
	uint64_t counter, period, maxerr_rate, time_s, time_frac, maxerr_ns;
	uint64_t truth_ns; /* (not on the page) how far its time may be off the truth */
	int64_t made_ns;   /* (nor these) CLOCK_REALTIME when it was made */
	double rate_ppm;   /* its rate error, in ppm */
};

__attribute__((unused)) static char vm_path[64];

__attribute__((unused)) static volatile unsigned char *vm_map;

__attribute__((unused)) static void vm_put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* include/uapi/linux/vmclock-abi.h, little endian */
__attribute__((unused)) static void vm_encode(unsigned char *p, const struct vmpage *g)
{
	memset(p, 0, 112);
	vm_put64(p, 0x4b4c4356u | (uint64_t)112 << 32); /* magic "VCLK", size */
	p[8] = 1;                                          /* version */
	p[10] = g->counter_id;
	p[11] = g->time_type;
	vm_put64(p + 16, g->marker);
	vm_put64(p + 24, g->flags);
	p[34] = g->status;
	p[39] = 0; /* period shift */
	vm_put64(p + 40, g->counter);
	vm_put64(p + 48, g->period);
	vm_put64(p + 64, g->maxerr_rate);
	vm_put64(p + 72, g->time_s);
	vm_put64(p + 80, g->time_frac);
	vm_put64(p + 96, g->maxerr_ns);
}

/* UTC per the page: REALTIME + shift at a counter read now, this counter's
 * rate as nanoclock measured it, +-2 ms.  The page must not lie, or a
 * failure is the test's: its time is the middle of the narrowest of a few
 * brackets of the counter read by CLOCK_REALTIME (under valgrind the first
 * took ~93 us, and a 100 us page missed by half of it on a slower host),
 * its maximum error has that half bracket in it (truth_ns, for a caller
 * that sets its own), and its rate error is what the library states of
 * the rate plus how far the kernel may be moving CLOCK_REALTIME's rate:
 * its frequency correction, its tick's, and 500 ppm while a slew (the
 * PLL's offset or adjtime()'s) is under way. */
__attribute__((unused)) static double kernel_rate_ppm(void)
{
	struct timex tx;
	memset(&tx, 0, sizeof(tx));
	if (adjtimex(&tx) < 0)
		return 1000;
	long hz = sysconf(_SC_CLK_TCK), nominal = hz > 0 ? 1000000 / hz : 10000;
	double ppm = fabs((double)tx.freq / 65536.0) + fabs((double)(tx.tick - nominal)) * 1e6 / (double)nominal;
	struct timex ss;
	memset(&ss, 0, sizeof(ss));
	ss.modes = ADJ_OFFSET_SS_READ;
	if (tx.offset != 0 || adjtimex(&ss) < 0 || ss.offset != 0)
		ppm += 500;
	return ppm;
}

__attribute__((unused)) static struct vmpage vm_good(int64_t shift)
{
	struct vmpage g;
	memset(&g, 0, sizeof(g));
	int64_t a = 0, b = INT64_MAX;
	uint64_t t = 0;
	for (int i = 0; i < 8 && b - a > 2000; i++) {
		int64_t a1 = real_ns();
		uint64_t t1 = nc_ticks_begin();
		int64_t b1 = real_ns();
		if (b1 >= a1 && b1 - a1 < b - a) /* (a bracket across a step back: not one) */
			a = a1, b = b1, t = t1;
	}
	if (b == INT64_MAX) { /* CLOCK_REALTIME stepped back at every try */
		a = b = real_ns();
		t = nc_ticks_begin();
	}
	int64_t utc = a + (b - a) / 2 + shift;
	/* the rate taken once (the writer thread must not call into the
	 * library: a refresh there would take the move for this thread) */
	static double hz, rate_ppm;
	if (hz == 0) {
		hz = nc_ticks_per_second();
		rate_ppm = nc_ticks_per_second_uncertainty_ppm() + kernel_rate_ppm() + 1;
	}
	g.counter_id = 1; /* x86 TSC */
	g.time_type = 0;  /* UTC */
	g.status = 2;     /* synchronised */
	g.flags = (1u << 4) | (1u << 6); /* period and time maximum errors valid */
	g.counter = t;
	g.period = (uint64_t)llround(ldexp(1.0 / hz, 64));
	g.maxerr_rate = (uint64_t)ceil((double)g.period * rate_ppm * 1e-6);
	g.time_s = (uint64_t)(utc / 1000000000);
	g.time_frac = (uint64_t)ldexpl((long double)(utc % 1000000000) / 1e9L, 64);
	g.truth_ns = (uint64_t)((b - a + 1) / 2 + 1);
	g.maxerr_ns = 2000000 + g.truth_ns;
	g.marker = 42;
	g.made_ns = utc - shift;
	g.rate_ppm = rate_ppm;
	return g;
}

/* NANOCLOCK_UTC_SOURCE for the page, before the library reads it (its
 * initialisation: the page needs the counter's rate, so it is made after) */
__attribute__((unused)) static void vm_env(void)
{
	snprintf(vm_path, sizeof(vm_path), "/tmp/nc-vmclock-%d", (int)getpid());
	char v[96];
	snprintf(v, sizeof(v), "vmclock:%s", vm_path);
	setenv("NANOCLOCK_UTC_SOURCE", v, 1);
}

__attribute__((unused)) static void vm_make(const struct vmpage *g)
{
	unlink(vm_path);
	int fd = open(vm_path, O_RDWR | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0 && ftruncate(fd, 4096) == 0);
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED);
	/* the library's own mapping of the page, as of a device's (a seqlock
	 * read through other addresses than the writer's, as a hypervisor's
	 * page is: TSan sees no race of the test's making) */
	void *lib = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(lib != MAP_FAILED);
	close(fd);
	vm_map = m;
	unsigned char b[112];
	vm_encode(b, g);
	memcpy((void *)(uintptr_t)vm_map, b, 112);
	__atomic_store_n((uint32_t *)(uintptr_t)(vm_map + 12), g->seq, __ATOMIC_RELEASE);
	/* read by the library as a device's page: mapped, a move seen by the
	 * very next read (a file at the path is read at each refresh: the
	 * vmclock_file_* cases) */
	nc__lock();
	nc__utc_vmclock_test_page(lib);
	nc__unlock();
}

/* as the hypervisor: sequence odd, the fields, sequence even */
__attribute__((unused)) static void vm_write(struct vmpage *g)
{
	__atomic_store_n((uint32_t *)(uintptr_t)(vm_map + 12), g->seq | 1, __ATOMIC_RELEASE);
	unsigned char b[112];
	vm_encode(b, g);
	for (int i = 0; i < 112; i++)
		if (i < 12 || i >= 16)
			vm_map[i] = b[i];
	g->seq = (g->seq | 1) + 1;
	__atomic_store_n((uint32_t *)(uintptr_t)(vm_map + 12), g->seq, __ATOMIC_RELEASE);
}

__attribute__((unused)) static int on_tsc(void) { return strcmp(nc_counter_name(), "tsc") == 0; }

/* ---- `nanoclock daemon --clockbound`, relaying a source ---- */

/* The tool built beside the test, run as the tests run (tests/run.h), once:
 * it relays the source NANOCLOCK_UTC_SOURCE names into a segment made in
 * a new directory dir (a mkdtemp template), at seg; its output on stderr. */
__attribute__((unused)) static void relay_once(char *tool, size_t toollen, char *dir, char *seg, size_t seglen)
{
	CHECK(run_built("nanoclock", tool, toollen) == 0);
	CHECK(mkdtemp(dir) != NULL);
	char rec[128];
	snprintf(seg, seglen, "%s/shm0", dir);
	snprintf(rec, sizeof(rec), "%s/record", dir);
	const char *args[] = {"daemon", "--once", "--record", rec, "--clockbound", seg, NULL};
	static char out[8192];
	int rc = run_capture(tool, args, NULL, NULL, NULL, out, sizeof(out));
	fputs(out, stderr);
	CHECK(rc == 0);
}

/* The relayed segment taken as nanoclock's own source: what nc_utc_start
 * said, and one read, which holds REALTIME + shift. */
__attribute__((unused)) static int read_relayed(const char *seg, int64_t shift, struct nc_utc *u)
{
	char v[160];
	snprintf(v, sizeof(v), "clockbound:%s", seg);
	setenv("NANOCLOCK_UTC_SOURCE", v, 1);
	int rc = nc_utc_start();
	int64_t a = real_ns();
	(void)nc_utc_now(u);
	check_holds(u, a, real_ns(), shift);
	return rc;
}

__attribute__((unused)) static void remove_dir(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	(void)!system(cmd);
}

/* ---- traces: each sync record's interval, and several machines merged ---- */

/* Records n events `gap_us` apart on this thread, each with CLOCK_REALTIME
 * read just before it as its argument (the truth is bracketed by an
 * event's argument and the next one's). */
__attribute__((unused)) static void record(const char *path, int n, int gap_us, struct cbseg *g, int64_t new_bound)
{
	struct nc_trace *t;
	struct nc_trace_buf *b;
	CHECK(nc_trace_open(&t, path, NULL) == 0);
	CHECK(nc_trace_thread_start(t, "main", &b) == 0);
	for (int i = 0; i < n; i++) {
		if (g && i == n / 2) { /* the source's figures change half-way */
			g->bound_ns = new_bound;
			g->as_of_ns = coarse_ns();
			cb_write(g);
		}
		nc_trace_instant(b, 1, (uint64_t)real_ns());
		usleep((useconds_t)gap_us);
	}
	nc_trace_instant(b, 2, (uint64_t)real_ns()); /* the last one's "after" */
	nc_trace_thread_end(b);
	CHECK(nc_trace_close(t) == 0);
}

#endif
