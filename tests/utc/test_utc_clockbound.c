/* SPDX-License-Identifier: MIT */
/* The ClockBound source and writer (src/utc/clockbound.c): segments of
 * both versions written by the test from the protocol's text, read as the
 * protocol says; every malformed, torn, stale, void or disrupted one
 * refused with its reason; a segment truncated, re-created or left over by
 * daemons and programs followed; the daemon's segment (nanoclock daemon
 * --clockbound) agreeing with what a reader of it says; ClockBound's
 * disruption marker against a VMClock page. */
#include "utc_fixtures.h"

/* a good segment: every interval holds REALTIME + 4 ms (the bound is
 * 5 ms); no wider than its bound + the drift since + the tie */
static void case_clockbound_good(const char *arg)
{
	int version = atoi(arg);
	struct cbseg g = cb_good(5000000);
	g.version = (uint16_t)version;
	g.size = version == 1 ? 72 : 80;
	cb_make(&g);
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "50", 1);
	CHECK(nc_utc_start() == 0);
	long n = 0;
	for (int64_t t0 = real_ns(); real_ns() - t0 < 1000000000; n++) {
		struct nc_utc u;
		int64_t a = real_ns();
		int st = nc_utc_now(&u);
		int64_t b = real_ns();
		CHECK(st == NC_UTC_SYNCHRONISED && u.source == NC_UTC_SRC_CLOCKBOUND);
		check_holds(&u, a, b, 4000000);
		if (n % 100 == 0) {
			struct nc_utc_status s;
			nc_get_utc_status(&s);
			/* ClockBound's as-of is the coarse clock's: the age counted from
			 * the fine one is at least its own */
			double allowed = s.source_bound_ns + s.tie_ns + s.drift_ppm * s.age_s * 1e3 + 3;
			CHECK(s.half_width_ns <= allowed && s.source_bound_ns == 5e6 && s.drift_ppm == 15);
		}
		usleep(500);
	}
	fprintf(stderr, "case: version %d segment: %ld reads, each holding REALTIME + 4 ms\n", version, n);
}

/* a segment to refuse from the start: unknown (or disrupted), the reason */
static void case_clockbound_bad(const char *arg)
{
	int which = atoi(arg);
	struct cbseg g = cb_good(5000000);
	static const char *const want[] = {"its magic", "version 3", "bytes", "void", "unknown status",
					   "disrupted", "mid-write", "out of range"};
	if (which == 0)
		g.magic = "AMZNCB\x02\x00"; /* PROTOCOL.md's bytes in their listed order: not the words */
	if (which == 1)
		g.version = 3;
	if (which == 2)
		g.size = 40;
	if (which == 3)
		g.void_ns = g.as_of_ns + 1, g.as_of_ns -= 1000000;
	if (which == 4)
		g.status = 0;
	if (which == 5)
		g.status = 3;
	if (which == 6)
		g.generation = 7; /* a writer that died mid-write */
	if (which == 7)
		g.bound_ns = -5;
	cb_make(&g);
	CHECK(nc_utc_start() == NC_EUNKNOWN);
	struct nc_utc u;
	int st = nc_utc_now(&u);
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	fprintf(stderr, "case: segment %d: %s: %s\n", which, nc_utc_status_name(st), s.why);
	CHECK(st == (which == 5 ? NC_UTC_DISRUPTED : NC_UTC_UNKNOWN));
	CHECK(u.earliest_ns == INT64_MIN && u.latest_ns == INT64_MAX && strstr(s.why, want[which]));
	unlink(cb_path);
}

/* a writer rewriting the segment all the time, its fields garbage while
 * the generation is odd: no read ever takes a torn version (each whole
 * version holds the truth, a torn one would not) */
static int cb_stop;

static void *cb_writer(void *arg)
{
	struct cbseg *g = arg;
	for (uint64_t i = 0; !__atomic_load_n(&cb_stop, __ATOMIC_ACQUIRE); i++) {
		uint16_t gen = (uint16_t)(g->generation + 1);
		__atomic_store_n((uint16_t *)(uintptr_t)(cb_map + 14), gen, __ATOMIC_RELEASE);
		int64_t zero = 0;
		memcpy((void *)(uintptr_t)(cb_map + 48), &zero, 8); /* garbage mid-write: bound 0 */
		for (volatile int k = 0; k < 200; k++) {
		}
		g->generation = gen;
		g->bound_ns = i & 1 ? 3000000 : 2000000;
		g->as_of_ns = coarse_ns();
		g->void_ns = g->as_of_ns + 60000000000;
		unsigned char b[80];
		cb_encode(b, g);
		for (int j = 0; j < 80; j++)
			if (j < 14 || j >= 16)
				cb_map[j] = b[j];
		g->generation = (uint16_t)(gen + 1);
		__atomic_store_n((uint16_t *)(uintptr_t)(cb_map + 14), g->generation, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void case_clockbound_torn(const char *arg)
{
	(void)arg;
	static struct cbseg g;
	g = cb_good(2000000);
	cb_make(&g);
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "2", 1);
	CHECK(nc_utc_start() == 0);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, cb_writer, &g) == 0);
	long n = 0, torn = 0;
	/* 1.5 s, or as long as 1000 reads take (valgrind runs ~10 times
	 * slower: more time for the same evidence, up to 30 s) */
	long want = getenv("NC_TEST_VALGRIND") ? 100 : 1000;
	for (int64_t t0 = real_ns(); (real_ns() - t0 < 1500000000 || n <= want) &&
				    real_ns() - t0 < 30000000000;
	     n++) {
		struct nc_utc u;
		int64_t a = real_ns();
		int st = nc_utc_now(&u);
		int64_t b = real_ns();
		/* the truth: REALTIME + 1.5 ms, inside both whole versions' bounds */
		if (st == NC_UTC_SYNCHRONISED || st == NC_UTC_FREE_RUNNING)
			check_holds(&u, a, b, 1500000);
		else
			torn++;
		usleep(200);
	}
	__atomic_store_n(&cb_stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	fprintf(stderr, "case: %ld reads beside a writer on the other CPU: every one held the truth "
		"(%ld without a bound; %s)\n", n, torn, s.why[0] ? s.why : "synchronised");
	/* valgrind runs one thread at a time, the writer's slices long: 155
	 * reads in 30 s there; it checks the memory of these paths (the race
	 * is TSan's and the native run's) */
	CHECK(n > (getenv("NC_TEST_VALGRIND") ? 100 : 1000));
	unlink(cb_path);
}

/* The same promise made deterministic: the test reads the segment for the
 * library (nc__utc_clockbound_test_read) and, once armed, splits a copy
 * of it at the bound: the header, generation and times of the version
 * there, then a whole new version written in place (generation bumped),
 * then the bound, drift and status of the new one.  A reader that did not
 * load the generation again after its copy would take that mix.  The two
 * versions differ in every field the interval is made of (bound, drift,
 * as-of ten seconds apart): what the library publishes must be one of them
 * whole, or a refusal; a tear at the start, then one at a refresh. */
static struct cbseg tear_seg, tear_next; /* the segment now; what the tear writes */
static int tear_armed, tears;

static ssize_t tearing_read(int fd, void *buf, size_t n, off_t off)
{
	if (!tear_armed || off != 0 || n <= 48)
		return pread(fd, buf, n, off);
	tear_armed = 0;
	ssize_t head = pread(fd, buf, 48, 0);
	tear_next.generation = tear_seg.generation;
	cb_write(&tear_next);
	tear_seg = tear_next;
	ssize_t tail = pread(fd, (unsigned char *)buf + 48, n - 48, 48);
	tears++;
	return head == 48 && tail >= 0 ? 48 + tail : -1;
}

/* the figures the library publishes are v's, whole: its bound, drift and
 * as-of, and the interval no wider than they make it */
static int tear_is(const struct nc_utc_status *s, const struct cbseg *v)
{
	double age = (double)(coarse_ns() - v->as_of_ns) / 1e9;
	double allowed = (double)v->bound_ns + s->tie_ns + s->drift_ppm * s->age_s * 1e3 + 3;
	return s->source_bound_ns == (double)v->bound_ns && s->drift_ppm == v->drift_ppb / 1e3 &&
	       fabs(s->age_s - age) < 4 && s->half_width_ns >= (double)v->bound_ns &&
	       s->half_width_ns <= allowed;
}

/* one of the two versions whole, or no bound: which ("old", "new",
 * "refused"); a mix fails the case with its figures */
static const char *tear_check(const char *when, const struct cbseg *old, const struct cbseg *now)
{
	struct nc_utc_status s;
	struct nc_utc u;
	CHECK(nc_get_utc_status(&s) == 0);
	int64_t a = real_ns();
	int st = nc_utc_now(&u);
	int64_t b = real_ns();
	if (s.status != NC_UTC_SYNCHRONISED && s.status != NC_UTC_FREE_RUNNING) {
		CHECK(s.half_width_ns < 0 && st != NC_UTC_SYNCHRONISED);
		return "refused";
	}
	/* the truth: REALTIME + 0.5 ms, inside both versions' bounds */
	if (st == NC_UTC_SYNCHRONISED || st == NC_UTC_FREE_RUNNING)
		check_holds(&u, a, b, 500000);
	if (tear_is(&s, old))
		return "old";
	if (tear_is(&s, now))
		return "new";
	fprintf(stderr, "case: %s: a torn read was used: bound %.0f us, drift %.0f ppm, as of %.1f s "
		"ago, half width %.0f us (the old version: %.0f us, %.0f ppm, %.1f s ago; the new: "
		"%.0f us, %.0f ppm, %.1f s ago)\n", when, s.source_bound_ns / 1e3, s.drift_ppm, s.age_s,
		s.half_width_ns / 1e3, (double)old->bound_ns / 1e3, old->drift_ppb / 1e3,
		(double)(coarse_ns() - old->as_of_ns) / 1e9, (double)now->bound_ns / 1e3,
		now->drift_ppb / 1e3, (double)(coarse_ns() - now->as_of_ns) / 1e9);
	_exit(1);
}

static void case_clockbound_torn_interposed(const char *arg)
{
	(void)arg;
	/* ten seconds old, 5 ms, 10 ppm; fresh, 1 ms, 50 ppm */
	struct cbseg aged = cb_good(5000000), fresh = cb_good(1000000);
	aged.as_of_ns -= 10000000000;
	aged.drift_ppb = 10000;
	fresh.drift_ppb = 50000;
	fresh.void_ns -= 30000000000;
	tear_seg = aged;
	cb_make(&tear_seg);
	/* a long period: no refresh reads the segment again between a tear
	 * and the look at what it published */
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "500", 1);
	nc__lock();
	nc__utc_clockbound_test_read(tearing_read);
	nc__unlock();
	/* at the start: the aged version's times, the fresh one's bound */
	tear_next = fresh;
	tear_armed = 1;
	(void)nc_utc_start();
	CHECK(tears == 1);
	const char *first = tear_check("at the start", &aged, &fresh);
	/* at a refresh: the fresh version's times, the aged one's bound
	 * (looked at as soon as that refresh is seen, a period before the next) */
	struct cbseg was = tear_seg;
	tear_next = aged;
	tear_next.as_of_ns = coarse_ns() - 10000000000;
	tear_next.void_ns = tear_next.as_of_ns + 60000000000;
	nc__lock();
	tear_armed = 1;
	nc__unlock();
	const char *second = NULL;
	for (int64_t t0 = real_ns(); real_ns() - t0 < 10000000000;) {
		struct nc_utc_status s;
		nc_get_utc_status(&s);
		nc__lock();
		int done = tears == 2;
		nc__unlock();
		if (done) {
			second = tear_check("at a refresh", &was, &tear_next);
			break;
		}
		usleep(1000);
	}
	CHECK(second != NULL);
	nc__lock();
	nc__utc_clockbound_test_read(NULL);
	nc__unlock();
	fprintf(stderr, "case: a new version written between a read's two loads of the generation: "
		"at the start the library published %s, at a refresh %s; never a mix\n",
		first, second);
	unlink(cb_path);
}

/* a good segment that turns bad: void, then disrupted (a VM moved): no
 * stale interval, disrupted at the next refresh */
static void case_clockbound_turns_bad(const char *arg)
{
	(void)arg;
	struct cbseg g = cb_good(5000000);
	cb_make(&g);
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "20", 1);
	CHECK(nc_utc_start() == 0);
	struct nc_utc u;
	for (int i = 0; i < 50; i++) {
		CHECK(nc_utc_now(&u) == NC_UTC_SYNCHRONISED);
		usleep(1000);
	}
	/* void: its own void-after time passes (clockbound-d stopped) */
	g.as_of_ns = coarse_ns() - 1000000;
	g.void_ns = coarse_ns() + 1000000;
	cb_write(&g);
	usleep(100000);
	int st = nc_utc_now(&u);
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	fprintf(stderr, "case: void: %s: %s\n", nc_utc_status_name(st), s.why);
	CHECK(st == NC_UTC_FREE_RUNNING || st == NC_UTC_UNKNOWN);
	/* disrupted: within one refresh (20 ms), no bound */
	g = cb_good(5000000);
	g.generation = 100;
	g.status = 3;
	cb_write(&g);
	int64_t t0 = real_ns();
	while ((st = nc_utc_now(&u)) != NC_UTC_DISRUPTED && real_ns() - t0 < 1000000000)
		usleep(500);
	fprintf(stderr, "case: disrupted after %.1f ms\n", (double)(real_ns() - t0) / 1e6);
	CHECK(st == NC_UTC_DISRUPTED && u.earliest_ns == INT64_MIN && u.latest_ns == INT64_MAX);
	CHECK(real_ns() - t0 < 200000000);
	CHECK(nc_utc_wait_past(0, 1) == NC_EUNKNOWN);
	/* valid again: a bound again */
	g.status = 1;
	g.as_of_ns = coarse_ns();
	g.void_ns = g.as_of_ns + 60000000000;
	cb_write(&g);
	t0 = real_ns();
	while ((st = nc_utc_now(&u)) != NC_UTC_SYNCHRONISED && real_ns() - t0 < 1000000000)
		usleep(500);
	CHECK(st == NC_UTC_SYNCHRONISED);
	unlink(cb_path);
}

/* `nanoclock daemon --clockbound PATH --once` with the test's chronyd as the
 * source: a segment that a reader written from PROTOCOL.md (python) decodes
 * to the source's bound, and that nanoclock reads back */
static void case_clockbound_daemon(const char *arg)
{
	(void)arg;
	start_fake(GOOD); /* sets NANOCLOCK_UTC_SOURCE for the tool */
	char tool[4200], dir[] = "/tmp/nc-cbd-XXXXXX", seg[96], cmd[2048];
	relay_once(tool, sizeof(tool), dir, seg, sizeof(seg));
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import struct,sys\n"
		 "b=open(\"%s\",\"rb\").read()\n"
		 "assert struct.unpack_from(\"=II\",b,0)==(0x414D5A4E,0x43420200),\"magic\"\n"
		 "size,ver,gen=struct.unpack_from(\"=IHH\",b,8)\n"
		 "a,an,v,vn,bound,marker,drift,status=struct.unpack_from(\"=qqqqqQIi\",b,16)\n"
		 "assert size>=len(b)-0 and ver==2 and gen%%2==0 and status==1,(size,ver,gen,status)\n"
		 "print(bound,drift,(v*10**9+vn)-(a*10**9+an),a*10**9+an)' > %s/decoded", seg, dir);
	int rc = system(cmd);
	char dp[128];
	snprintf(dp, sizeof(dp), "%s/decoded", dir);
	FILE *f = fopen(dp, "r");
	long long bound = -1, drift = -1, void_after = -1, as_of = -1;
	if (f) {
		CHECK(fscanf(f, "%lld %lld %lld %lld", &bound, &drift, &void_after, &as_of) == 4);
		fclose(f);
	}
	double want = (0.0125 + 0.0001 + 0.00005) * 1e9;
	fprintf(stderr, "case: python decoded rc %d: bound %lld ns (the source's %.0f), drift %lld ppb, "
		"void after %.1f s\n", rc, bound, want, drift, (double)void_after / 1e9);
	/* (1051 ppb: skew 0.05 + residual 0.001 + 1 ppm, rounded up from chrony's
	 * float encoding) */
	CHECK(rc == 0 && bound >= want && bound < want + 1000 && drift >= 1051 && drift <= 1052 &&
	      void_after > 0);
	/* and read back by nanoclock itself: synchronised, or free-running
	 * where the source's figures the daemon published (its as-of is the
	 * source's) are over 5 s old by now (valgrind runs all this slowly) */
	struct nc_utc u;
	int src = read_relayed(seg, truth_shift(), &u);
	double age_s = (double)(coarse_ns() - as_of) / 1e9;
	fprintf(stderr, "case: read back %.3f s after the figures: %s\n", age_s, nc_utc_status_name(u.status));
	if (age_s < 4.9)
		CHECK(src == 0 && u.status == NC_UTC_SYNCHRONISED);
	else
		CHECK(u.status == NC_UTC_FREE_RUNNING || u.status == NC_UTC_SYNCHRONISED);
	remove_dir(dir);
}

/* ClockBound with its disruption support on: the segment's marker is the
 * VMClock page's as clockbound-d last saw it.  A migration (the page's
 * marker moves on) makes the very next read say disrupted (the reads
 * watch the page's word), and the refreshes keep saying so while the
 * segment's marker lags; clockbound-d catching up gives a bound again.
 * arg "none": the support on and no page readable: a migration would go
 * unseen, so the segment is refused (no bound), as ClockBound's client
 * refuses it. */
static void case_clockbound_disruption(const char *arg)
{
	int none = !strcmp(arg, "none");
	snprintf(vm_path, sizeof(vm_path), "/tmp/nc-vmclock-%d", (int)getpid());
	nc__lock();
	nc__utc_clockbound_test_vmclock(none ? "/nonexistent/vmclock0" : vm_path);
	nc__unlock();
	struct cbseg g = cb_good(5000000);
	g.marker = 42;
	g.support = 1;
	cb_make(&g); /* (the source named before the library starts) */
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "20", 1);
	static struct vmpage v;
	if (!none) {
		v = vm_good(0);
		v.marker = 42;
		vm_make(&v);
	}
	struct nc_utc u;
	struct nc_utc_status s;
	if (none) {
		CHECK(nc_utc_start() == NC_EUNKNOWN);
		CHECK(nc_utc_now(&u) == NC_UTC_UNKNOWN && u.earliest_ns == INT64_MIN);
		nc_get_utc_status(&s);
		fprintf(stderr, "case: support on, no page: %s\n", s.why);
		CHECK(strstr(s.why, "no VMClock page is readable") != NULL);
		unlink(cb_path);
		return;
	}
	CHECK(nc_utc_start() == 0);
	CHECK(nc_utc_now(&u) == NC_UTC_SYNCHRONISED);
	nc_get_utc_status(&s);
	fprintf(stderr, "case: markers agree: %s [%s]\n", s.chosen, s.source_arg);
	/* the VM moves */
	v.marker = 43;
	vm_write(&v);
	int st = nc_utc_now(&u);
	CHECK(st == NC_UTC_DISRUPTED && u.earliest_ns == INT64_MIN && u.latest_ns == INT64_MAX);
	/* refreshes (20 ms) while clockbound-d has not caught up: still */
	for (int i = 0; i < 100; i++) {
		CHECK(nc_utc_now(&u) == NC_UTC_DISRUPTED);
		usleep(1000);
	}
	nc_get_utc_status(&s);
	fprintf(stderr, "case: the page moved on, the segment not: %s\n", s.why);
	CHECK(strstr(s.why, "differs from the VMClock page") != NULL);
	/* clockbound-d catches up */
	g.marker = 43;
	g.as_of_ns = coarse_ns();
	g.void_ns = g.as_of_ns + 60000000000;
	cb_write(&g);
	int64_t t0 = real_ns();
	while ((st = nc_utc_now(&u)) != NC_UTC_SYNCHRONISED && real_ns() - t0 < 1000000000)
		usleep(500);
	fprintf(stderr, "case: bound again after %.1f ms\n", (double)(real_ns() - t0) / 1e6);
	CHECK(st == NC_UTC_SYNCHRONISED);
	unlink(cb_path);
	unlink(vm_path);
}

/* A process never publishes the ClockBound segment it reads (its figures
 * would feed themselves, growing from an as-of that never moves): named
 * as the source, publishing there is refused and the segment left as it
 * was. */
static void case_clockbound_own(const char *arg)
{
	(void)arg;
	struct cbseg g = cb_good(5000000);
	cb_make(&g);
	unsigned char before[80], after[80];
	memcpy(before, (const void *)(uintptr_t)cb_map, 80);
	char why[256] = "";
	CHECK(nc_utc_start() == 0);
	int rc = nc_utc_publish_clockbound(cb_path, why, sizeof(why));
	memcpy(after, (const void *)(uintptr_t)cb_map, 80);
	fprintf(stderr, "case: publishing the source: %d, %s\n", rc, why);
	CHECK(rc == NC_EINVAL && strstr(why, "this process's UTC source") && !memcmp(before, after, 80));
	unlink(cb_path);
}

/* published first, then named as the source: refused as the source */
static void case_clockbound_own_first(const char *arg)
{
	(void)arg;
	struct cbseg g = cb_good(5000000);
	cb_make(&g); /* a good segment there, named as the source */
	const char *path = cb_path;
	char why[256] = "";
	/* publishing first: the source is not that file, so nothing to tell;
	 * the segment (this user's) is rewritten with what this process has */
	CHECK(nc_utc_publish_clockbound(path, why, sizeof(why)) == 0);
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	fprintf(stderr, "case: the published segment as the source: %s (%s)\n",
		nc_utc_status_name(s.status), s.chosen);
	CHECK(s.status == NC_UTC_UNKNOWN && strstr(s.chosen, "never its own source"));
	unlink(path);
}

/* ---- ClockBound against what daemons and programs do to the file ---- */

/* The segment published (nc_utc_publish_clockbound) from the fake chronyd
 * while another process truncates the file over and over (clockbound-d
 * truncates it when it starts): the publisher never maps it, so it lives
 * on, and every publication leaves a whole segment. */
static void case_clockbound_publish_truncated(const char *arg)
{
	(void)arg;
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "50", 1);
	start_fake(GOOD);
	CHECK(nc_utc_start() == 0);
	char path[64], why[256] = "";
	snprintf(path, sizeof(path), "/tmp/nc-cb-pub-%d", (int)getpid());
	unlink(path);
	CHECK(nc_utc_publish_clockbound(path, why, sizeof(why)) == 0);
	fflush(NULL);
	pid_t cutter = fork();
	CHECK(cutter >= 0);
	if (cutter == 0) { /* bounded, and gone with the case's process */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (int64_t t0 = real_ns(); real_ns() - t0 < 5000000000;)
			(void)truncate(path, 0);
		_exit(0);
	}
	int n = 0;
	for (int64_t t0 = real_ns(); real_ns() - t0 < 500000000; n++) {
		if (nc_utc_publish_clockbound(path, why, sizeof(why)) != 0) {
			fprintf(stderr, "case: publication %d: %s (%s)\n", n, why, strerror(errno));
			_exit(1);
		}
	}
	kill(cutter, SIGKILL);
	waitpid(cutter, NULL, 0);
	CHECK(nc_utc_publish_clockbound(path, why, sizeof(why)) == 0);
	unsigned char b[128];
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	ssize_t got = read(fd, b, sizeof(b));
	close(fd);
	uint16_t gen;
	memcpy(&gen, b + 14, 2);
	fprintf(stderr, "case: %d publications while another process truncated the file: alive; the "
		"last one %zd bytes, generation %u\n", n, got, gen);
	CHECK(got == 80 && nc__utc_clockbound_is_segment(b, 8) && gen % 2 == 0);
	unlink(path);
}

/* A segment clockbound-d no longer rewrites: synchronised while its
 * figures are at most 5 s old, free-running after (ClockBound's client's
 * rule), though its void-after time is far away. */
static void case_clockbound_stale(const char *arg)
{
	(void)arg;
	struct cbseg g = cb_good(5000000);
	g.as_of_ns = coarse_ns() - 4000000000; /* 4 s old (an emulator starts slowly) */
	g.void_ns = g.as_of_ns + 1023000000000;
	cb_make(&g);
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "20", 1);
	CHECK(nc_utc_start() == 0);
	/* The ages read on the segment's own clock (COARSE, which lags the
	 * library's fine one by a jiffy at most, 10 ms): every synchronised
	 * read began while the figures were at most 5 s old; the first
	 * free-running one ended after they were at least 5 s less a jiffy. */
	struct nc_utc u;
	int st = NC_UTC_SYNCHRONISED;
	double last_sync = 0, free_at = 0;
	int64_t t0 = real_ns();
	while (real_ns() - t0 < 3000000000) {
		int64_t c0 = coarse_ns();
		st = nc_utc_now(&u);
		int64_t c1 = coarse_ns();
		if (st != NC_UTC_SYNCHRONISED) {
			free_at = (double)(c1 - g.as_of_ns) / 1e9;
			break;
		}
		last_sync = (double)(c0 - g.as_of_ns) / 1e9;
		usleep(1000);
	}
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	fprintf(stderr, "case: a segment no longer rewritten: synchronised up to %.3f s old, then %s "
		"by %.3f s: %s\n", last_sync, nc_utc_status_name(st), free_at, s.why);
	CHECK(last_sync > 4.0 && last_sync <= 5.0);
	CHECK(st == NC_UTC_FREE_RUNNING && free_at >= 5.0 - 0.011 && free_at < 5.5);
	unlink(cb_path);
}

/* The segment removed and made again under the path (clockbound-d
 * restarted): the new file's figures are read at the next refresh, not
 * the deleted one's. */
static void case_clockbound_recreated(const char *arg)
{
	(void)arg;
	struct cbseg g = cb_good(5000000);
	cb_make(&g);
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "20", 1);
	CHECK(nc_utc_start() == 0);
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	CHECK(s.source_bound_ns == 5e6);
	munmap((void *)(uintptr_t)cb_map, 80);
	struct cbseg h = cb_good(7000000);
	cb_make(&h); /* unlinked, then created anew */
	usleep(100000);
	struct nc_utc u;
	CHECK(nc_utc_now(&u) == NC_UTC_SYNCHRONISED);
	nc_get_utc_status(&s);
	fprintf(stderr, "case: the segment made again: bound %.0f us (the new one's 7000, the deleted "
		"one's 5000)\n", s.source_bound_ns / 1e3);
	CHECK(s.source_bound_ns == 7e6);
	unlink(cb_path);
}

/* clockbound-d turning its status to unknown mid-run: no bound (unknown,
 * the whole line), not free-running on the figures before. */
static void case_clockbound_turns_unknown(const char *arg)
{
	(void)arg;
	static struct cbseg g;
	g = cb_good(5000000);
	cb_make(&g);
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "20", 1);
	CHECK(nc_utc_start() == 0);
	struct nc_utc u;
	CHECK(nc_utc_now(&u) == NC_UTC_SYNCHRONISED);
	g.status = 0;
	cb_write(&g);
	usleep(100000);
	int st = nc_utc_now(&u);
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	fprintf(stderr, "case: status turned 0: %s: %s\n", nc_utc_status_name(st), s.why);
	CHECK(st == NC_UTC_UNKNOWN && u.earliest_ns == INT64_MIN && u.latest_ns == INT64_MAX);
	unlink(cb_path);
}

/* A file PATH.<pid>.new left by a publisher killed between create and
 * rename, whose pid this one has (a container's first process): never in
 * the way. */
static void case_clockbound_leftover(const char *arg)
{
	(void)arg;
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "50", 1);
	start_fake(GOOD);
	CHECK(nc_utc_start() == 0);
	char path[64], left[96], why[256] = "";
	snprintf(path, sizeof(path), "/tmp/nc-cb-left-%d", (int)getpid());
	snprintf(left, sizeof(left), "%s.%d.new", path, (int)getpid());
	unlink(path);
	int fd = open(left, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	close(fd);
	int rc = nc_utc_publish_clockbound(path, why, sizeof(why));
	fprintf(stderr, "case: a dead writer's %s there: publish %d %s\n", left, rc, why);
	CHECK(rc == 0 && access(path, F_OK) == 0);
	unlink(path);
	unlink(left);
}

/* A relaying daemon publishes the source's as-of, never a fresher one: the
 * fake chronyd falls silent, and the published as-of stays at its last
 * answer while the publications go on; the status turns free-running. */
static void case_clockbound_relay_stale(const char *arg)
{
	(void)arg;
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "50", 1);
	start_fake(GOOD);
	CHECK(nc_utc_start() == 0);
	char path[64], why[256] = "";
	snprintf(path, sizeof(path), "/tmp/nc-cb-relay-%d", (int)getpid());
	unlink(path);
	usleep(200000);
	__atomic_store_n(&fake.mode, SILENT, __ATOMIC_RELEASE);
	int64_t silent = coarse_ns();
	struct cbseg last;
	memset(&last, 0, sizeof(last));
	for (int i = 0; i < 10; i++) { /* a second of publications, 100 ms apart */
		struct nc_utc u;
		(void)nc_utc_now(&u);
		CHECK(nc_utc_publish_clockbound(path, why, sizeof(why)) == 0);
		unsigned char b[80];
		int fd = open(path, O_RDONLY);
		CHECK(fd >= 0 && read(fd, b, 80) == 80);
		close(fd);
		int64_t t[2];
		memcpy(t, b + 16, 16);
		last.as_of_ns = t[0] * 1000000000 + t[1];
		memcpy(&last.status, b + 68, 4);
		/* as of the last answer: before the silence (and its request) */
		CHECK(last.as_of_ns <= silent + 5000000);
		usleep(100000);
	}
	fprintf(stderr, "case: the source silent for 1 s: published as of %.3f s before the silence, "
		"status %d\n", (double)(silent - last.as_of_ns) / 1e9, last.status);
	CHECK(last.status == 2);
	unlink(path);
}

/* nc_utc_start says what a read says: figures past the horizon
 * (NANOCLOCK_UTC_HORIZON_S=1, a segment as of 1.5 s ago) read unknown, so
 * the start says NC_EUNKNOWN; as of 0.5 s ago, both synchronised. */
static void case_clockbound_start_agrees(const char *arg)
{
	int old = !strcmp(arg, "old");
	struct cbseg g = cb_good(5000000);
	g.as_of_ns = coarse_ns() - (old ? 1500000000 : 500000000);
	cb_make(&g);
	setenv("NANOCLOCK_UTC_HORIZON_S", "1", 1);
	int rc = nc_utc_start();
	struct nc_utc u;
	int st = nc_utc_now(&u);
	fprintf(stderr, "case: figures %s s old, horizon 1 s: nc_utc_start %d, a read %s\n",
		old ? "1.5" : "0.5", rc, nc_utc_status_name(st));
	CHECK(old ? rc == NC_EUNKNOWN && st == NC_UTC_UNKNOWN : rc == 0 && st == NC_UTC_SYNCHRONISED);
	unlink(cb_path);
}

static const struct child_case cases[] = {
	{"clockbound_own", case_clockbound_own, NULL, NULL, NULL},
	{"clockbound_own_first", case_clockbound_own_first, NULL, NULL, NULL},
	{"clockbound_disruption", case_clockbound_disruption, "", NULL, NULL},
	{"clockbound_disruption_none", case_clockbound_disruption, "none", NULL, NULL},
	{"clockbound_good_v2", case_clockbound_good, "2", NULL, NULL},
	{"clockbound_good_v1", case_clockbound_good, "1", NULL, NULL},
	{"clockbound_foreign", case_clockbound_bad, "0", NULL, NULL},
	{"clockbound_version", case_clockbound_bad, "1", NULL, NULL},
	{"clockbound_size", case_clockbound_bad, "2", NULL, NULL},
	{"clockbound_void", case_clockbound_bad, "3", NULL, NULL},
	{"clockbound_unknown", case_clockbound_bad, "4", NULL, NULL},
	{"clockbound_disrupted", case_clockbound_bad, "5", NULL, NULL},
	{"clockbound_stuck_odd", case_clockbound_bad, "6", NULL, NULL},
	{"clockbound_range", case_clockbound_bad, "7", NULL, NULL},
	{"clockbound_torn", case_clockbound_torn, NULL, NULL, NULL},
	{"clockbound_torn_interposed", case_clockbound_torn_interposed, NULL, NULL, NULL},
	{"clockbound_turns_bad", case_clockbound_turns_bad, NULL, NULL, NULL},
	{"clockbound_daemon", case_clockbound_daemon, NULL, NULL, NULL},
	{"clockbound_publish_truncated", case_clockbound_publish_truncated, NULL, NULL, NULL},
	{"clockbound_stale", case_clockbound_stale, NULL, NULL, NULL},
	{"clockbound_recreated", case_clockbound_recreated, NULL, NULL, NULL},
	{"clockbound_turns_unknown", case_clockbound_turns_unknown, NULL, NULL, NULL},
	{"clockbound_leftover", case_clockbound_leftover, NULL, NULL, NULL},
	{"clockbound_relay_stale", case_clockbound_relay_stale, NULL, NULL, NULL},
	{"clockbound_start_agrees_old", case_clockbound_start_agrees, "old", NULL, NULL},
	{"clockbound_start_agrees_fresh", case_clockbound_start_agrees, "fresh", NULL, NULL},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	return child_program("test_utc_clockbound", argc, argv, NULL, 0, cases, NCASES, NULL, 0);
}
