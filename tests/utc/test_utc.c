/* SPDX-License-Identifier: MIT */
/* Bounds on UTC (src/utc/, nc_utc_now) from the kernel and from chrony: the
 * interval holds the truth the source states, is no wider than the
 * source's own bound plus the tie and the drift since, and is never
 * narrower or stale when the source goes bad.  Cases in fresh processes
 * (the library starts its UTC source once):
 *   - adjtimex as written by each daemon (pure): the timesyncd pattern
 *     never gives a bound below the offset still to slew;
 *   - chrony's tracking reply (pure): good ones decoded, every bad one
 *     (another request's, another protocol version, refused, truncated,
 *     implausible, unsynchronised, local stratum) refused with its reason;
 *   - a chronyd of the test's own on loopback (a thread answering the
 *     command protocol with chosen figures): every interval holds the
 *     truth; silent, it turns free-running then unknown, its interval
 *     never narrowing; a spoofed or malformed reply keeps the last good
 *     figures, widening; commit-wait and the order of two stamps;
 *   - a descriptor of the source's reused by the program; a step of the
 *     clock followed;
 *   - the real kernel's NTP state set to timesyncd's pattern, and slewing
 *     (root; restored after; `make check-destructive` only: --destructive,
 *     tests/destructive.h);
 *   - a real chronyd pair from the Debian package on loopback, the client
 *     told (offset) that the clock is 50 ms slow: every interval holds the
 *     injected truth.
 * ClockBound, VMClock and traces: test_utc_clockbound.c, test_utc_vmclock.c,
 * test_utc_trace.c. */
#include "utc_fixtures.h"

/* ---- adjtimex, as each writer writes it ---- */
static void case_adjtimex_writers(const char *arg)
{
	(void)arg;
	/* ntpd: maxerror 800 us, esterror 20, the PLL with 300 us left */
	struct nc__kclock ntpd = {TIME_OK, STA_PLL, 800, 20, 37, 12.5, 10000, 10000, 0.1, 0, 300e3, 0};
	/* timesyncd right after a correction: maxerror and esterror 0, 4 ms
	 * for the PLL to slew */
	struct nc__kclock ts = {TIME_OK, STA_PLL, 0, 0, 0, 3.0, 10000, 10000, 1.0, 0, 4e6, 0};
	struct nc__kclock unsync = {TIME_ERROR, STA_UNSYNC, 16000000, 16000000, 0, 0, 10000, 10000, 0, 0, 0, 0};
	struct nc__kclock adjt = {TIME_OK, 0, 1000, 50, 0, 0, 10000, 10000, 0, 1, 0, 2e6};
	struct nc__utc_fix f;
	nc__utc_adjtimex_decode(&ntpd, NC_KW_NTPD, &f);
	CHECK(f.status == NC_UTC_SYNCHRONISED && f.bound_ns == 800e3 + 300e3 && f.slew_ns == 300e3);
	nc__utc_adjtimex_decode(&ntpd, NC_KW_UNKNOWN, &f);
	CHECK(f.status == NC_UTC_UNKNOWN && strstr(f.why, "someone unknown"));
	nc__utc_adjtimex_decode(&ntpd, NC_KW_CHRONYD, &f);
	CHECK(f.status == NC_UTC_UNKNOWN && strstr(f.why, "slews itself"));
	nc__utc_adjtimex_decode(&ntpd, NC_KW_SEVERAL, &f);
	CHECK(f.status == NC_UTC_UNKNOWN && strstr(f.why, "more than one kind"));
	/* the pattern: no bound, whoever is said to have written it */
	for (int w = NC_KW_UNKNOWN; w <= NC_KW_SEVERAL; w++) {
		nc__utc_adjtimex_decode(&ts, (enum nc__kwriter)w, &f);
		fprintf(stderr, "case: timesyncd's pattern, writer %d: %s\n", w, f.why);
		CHECK(f.status == NC_UTC_UNKNOWN);
	}
	/* and as the kernel grows maxerror (500 us a second), never a bound
	 * below the offset still to slew, for any state it passes through */
	for (long me = 0; me <= 20000; me += 250) {
		for (int w = NC_KW_UNKNOWN; w <= NC_KW_SEVERAL; w++) {
			ts.maxerror_us = me;
			ts.esterror_us = me % 500 == 0 ? 0 : me / 1000;
			nc__utc_adjtimex_decode(&ts, (enum nc__kwriter)w, &f);
			CHECK(f.status == NC_UTC_UNKNOWN || f.bound_ns >= ts.pll_offset_ns);
		}
	}
	nc__utc_adjtimex_decode(&unsync, NC_KW_TRUSTED, &f);
	CHECK(f.status == NC_UTC_UNKNOWN && strstr(f.why, "STA_UNSYNC"));
	nc__utc_adjtimex_decode(&adjt, NC_KW_TRUSTED, &f);
	CHECK(f.status == NC_UTC_SYNCHRONISED && f.bound_ns == 1000e3 + 2e6);
}

/* ---- who wrote adjtimex: a /proc of the test's own ---- */
static char proc_dir[64];

static void fake_proc(int pid, const char *comm, const char *capeff)
{
	char p[160];
	snprintf(p, sizeof(p), "%s/%d", proc_dir, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%d/comm", proc_dir, pid);
	FILE *f = fopen(p, "w");
	if (f) {
		fprintf(f, "%s\n", comm);
		fclose(f);
	}
	snprintf(p, sizeof(p), "%s/%d/status", proc_dir, pid);
	f = fopen(p, "w");
	if (f) {
		fprintf(f, "Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nCapInh:\t0000000000000000\n"
			   "CapPrm:\t%s\nCapEff:\t%s\nCapBnd:\t000001ffffffffff\n",
			comm, capeff, capeff);
		fclose(f);
	}
}

static void case_adjtimex_find_writer(const char *arg)
{
	(void)arg;
	snprintf(proc_dir, sizeof(proc_dir), "/tmp/nc-proc-XXXXXX");
	CHECK(mkdtemp(proc_dir) != NULL);
	const char *sys_time = "0000000002000000", *none = "0000000000000000",
		   *root = "000001ffffffffff";
	/* nothing known runs */
	fake_proc(1, "init", root);
	fake_proc(77, "bash", none);
	CHECK(nc__utc_find_writer(proc_dir) == NC_KW_UNKNOWN);
	/* a program merely named ntpd, without CAP_SYS_TIME, vouches for nothing */
	fake_proc(300, "ntpd", none);
	CHECK(nc__utc_find_writer(proc_dir) == NC_KW_UNKNOWN);
	/* the real one (Debian's ntpd runs as user ntp, CAP_SYS_TIME kept) */
	fake_proc(301, "ntpd", sys_time);
	CHECK(nc__utc_find_writer(proc_dir) == NC_KW_NTPD);
	/* timesyncd beside it: which one wrote the kernel's state is unknown */
	fake_proc(302, "systemd-timesyn", sys_time);
	CHECK(nc__utc_find_writer(proc_dir) == NC_KW_SEVERAL);
	/* a comm that is a symbolic link is not followed */
	char p[160], q[160];
	snprintf(p, sizeof(p), "%s/302/comm", proc_dir);
	unlink(p);
	snprintf(q, sizeof(q), "%s/301/comm", proc_dir);
	CHECK(symlink(q, p) == 0);
	CHECK(nc__utc_find_writer(proc_dir) == NC_KW_NTPD);
	/* chronyd alone, as root */
	snprintf(p, sizeof(p), "rm -rf %s/30[0-2]", proc_dir);
	CHECK(system(p) == 0);
	fake_proc(400, "chronyd", root);
	CHECK(nc__utc_find_writer(proc_dir) == NC_KW_CHRONYD);
	/* a directory that is not there: nobody known */
	CHECK(nc__utc_find_writer("/nonexistent/proc") == NC_KW_UNKNOWN);
	snprintf(p, sizeof(p), "rm -rf %s", proc_dir);
	CHECK(system(p) == 0);
	/* and the real /proc answers without failing (what runs here varies) */
	enum nc__kwriter w = nc__utc_find_writer("/proc");
	fprintf(stderr, "case: the writer among this machine's processes: %d\n", (int)w);
	CHECK(w >= NC_KW_UNKNOWN && w <= NC_KW_SEVERAL && w != NC_KW_TRUSTED);
}

static void case_chrony_decode(const char *arg)
{
	(void)arg;
	unsigned char req[128], p[128];
	CHECK(nc__utc_chrony_request(req, sizeof(req), 0x01020304) == 104);
	CHECK(req[0] == 6 && req[1] == 1 && req[4] == 0 && req[5] == 33 && req[8] == 1 && req[11] == 4);
	struct figures g = good_figures();
	struct nc__utc_fix f;
	int64_t now = real_ns();
	make_reply(p, 77, &g);
	CHECK(nc__utc_chrony_decode(p, 104, 77, now, &f) == 0 && f.status == NC_UTC_SYNCHRONISED);
	double want = (0.0125 + 0.0001 + 0.00005) * 1e9;
	fprintf(stderr, "case: bound %.1f ns (want %.1f), slew %.1f, drift %.4f ppm\n", f.bound_ns, want,
		f.slew_ns, f.drift_ppm);
	CHECK(fabs(f.bound_ns - want) < 2 && fabs(f.slew_ns - 12.5e6) < 2);
	CHECK(fabs(f.drift_ppm - (0.05 + 0.001 + 1)) < 1e-6 && f.as_of_ns == g.ref_ns);
	/* each bad reply refused, with its reason */
	struct {
		const char *why;
		int rc;
	} bad[] = {
		{"another request", -1}, {"version", -1}, {"refused the request", -1},
		{"not a tracking report", -1}, {"not a reply", -1}, {"not synchronised", 0},
		{"local stratum", 0}, {"future", -1}, {"out of range", -1},
		{"future", -1},       /* 1.5 s ahead, beyond the reply's bound */
		{"a bound of 0", -1},
	};
	for (int i = 0; i < (int)(sizeof(bad) / sizeof(bad[0])); i++) {
		struct figures b = good_figures();
		size_t n = 104;
		uint32_t seq = 77;
		if (i == 5)
			b.leap = 3;
		if (i == 6)
			b.ref_id = 0x7f7f0101;
		if (i == 7)
			b.ref_ns = now + 5000000000;
		if (i == 8)
			b.disp = 100;
		if (i == 9)
			b.ref_ns = now + 1500000000;
		if (i == 10)
			b.corr = 0, b.delay = 0, b.disp = 0;
		make_reply(p, i == 0 ? 78 : seq, &b);
		if (i == 1)
			p[0] = 5;
		if (i == 2)
			put16(p + 8, 2);
		if (i == 3)
			n = 60;
		if (i == 4)
			p[1] = 1;
		int rc = nc__utc_chrony_decode(p, n, seq, now, &f);
		fprintf(stderr, "case: bad reply %d: rc %d, %s\n", i, rc, f.why);
		CHECK(rc == bad[i].rc && f.status == NC_UTC_UNKNOWN && strstr(f.why, bad[i].why));
	}
}

static void case_fake_good(const char *arg)
{
	(void)arg;
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "50", 1);
	start_fake(GOOD);
	CHECK(nc_utc_start() == 0);
	int64_t shift = truth_shift();
	double widest_extra = 0;
	int free_running = 0;
	for (int i = 0; i < 2000; i++) {
		struct nc_utc u;
		int64_t a = real_ns();
		int st = nc_utc_now(&u);
		int64_t b = real_ns();
		/* free-running is right where four refreshes in a row found no
		 * answer yet (the fake's thread starved: CI's TSan run on a busy
		 * machine); counted, and most reads must be synchronised */
		CHECK((st == NC_UTC_SYNCHRONISED || st == NC_UTC_FREE_RUNNING) &&
		      u.source == NC_UTC_SRC_CHRONY);
		free_running += st == NC_UTC_FREE_RUNNING;
		check_holds(&u, a, b, shift);
		if (i % 100 == 0) {
			/* no wider than the source's bound, the tie and the drift since */
			struct nc_utc_status s;
			CHECK(nc_get_utc_status(&s) == 0);
			/* (+3 ns: the rounding; the status is read a little after
			 * the read: the drift over that time) */
			double allowed = s.source_bound_ns + s.tie_ns + s.drift_ppm * 1e-6 * (s.age_s * 1e9) + 3;
			double extra = s.half_width_ns - allowed;
			widest_extra = fmax(widest_extra, extra);
			if (!(s.half_width_ns <= allowed) || s.status == NC_UTC_UNKNOWN)
				fprintf(stderr, "case: read %d: %s, half width %.0f ns, allowed %.0f (bound %.0f, "
					"tie %.0f, drift %.3g ppm, age %.3f s): %s\n", i,
					nc_utc_status_name(s.status), s.half_width_ns, allowed, s.source_bound_ns,
					s.tie_ns, s.drift_ppm, s.age_s, s.why);
			CHECK(s.status != NC_UTC_UNKNOWN && s.half_width_ns <= allowed);
			CHECK(fabs(s.source_bound_ns - (0.0125 + 0.0001 + 0.00005) * 1e9) < 2);
		}
		usleep(500);
	}
	fprintf(stderr, "case: 2000 reads over ~1.2 s, every one holding the truth; %d answers; %d reads "
		"free-running\n", __atomic_load_n(&fake.answered, __ATOMIC_RELAXED), free_running);
	CHECK(free_running <= 200); /* the source followed: at least 90% synchronised */
	CHECK(__atomic_load_n(&fake.answered, __ATOMIC_RELAXED) >= 5); /* asked at the ties, not once */
	/* commit-wait: past a time 3 ms beyond the latest end now */
	struct nc_utc u;
	nc_utc_now(&u);
	int64_t t = u.latest_ns + 3000000;
	CHECK(nc_utc_wait_past(t, 5) == 0);
	nc_utc_now(&u);
	CHECK(u.earliest_ns > t);
	CHECK(real_ns() + shift >= t); /* the truth is past it too */
	CHECK(nc_utc_wait_past(u.latest_ns + 1000000000, 0.01) == NC_ETIMEDOUT);
	/* order: a stamp and one taken 2 half-widths later are ordered; two
	 * at once are concurrent */
	struct nc_utc x, y;
	nc_utc_now(&x);
	nc_utc_now(&y);
	CHECK(nc_utc_order(&x, &y) == 0 && nc_utc_order(&y, &x) == 0);
	CHECK(nc_utc_wait_past(x.latest_ns, 5) == 0);
	nc_utc_now(&y);
	CHECK(nc_utc_order(&x, &y) == -1 && nc_utc_order(&y, &x) == 1);
	y.status = NC_UTC_UNKNOWN;
	CHECK(nc_utc_order(&x, &y) == 0);
}

/* The status's parts add up to its half width even when the tie's epoch
 * has run out while nothing refreshed it (the status is taken under the
 * library's lock, which the refreshing thread then waits for; check-cross
 * riscv64 under qemu-user met it: +6.3 us not in any part). */
static void case_fake_status_overdue(const char *arg)
{
	(void)arg;
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "50", 1);
	start_fake(GOOD);
	CHECK(nc_utc_start() == 0);
	struct nc_utc u;
	for (int i = 0; i < 200 && nc_utc_now(&u) != NC_UTC_SYNCHRONISED; i++)
		usleep(10000);
	CHECK(u.status == NC_UTC_SYNCHRONISED);
	for (int round = 0; round < 3; round++) {
		struct nc_utc_status s;
		nc__lock();
		/* 4 periods: the epoch (one period) is past its end */
		usleep(200000);
		nc__utc_status(&s);
		nc__unlock();
		/* (+4: the line's rounding and the ceilings) */
		double allowed = s.source_bound_ns + s.tie_ns + s.drift_ppm * 1e-6 * (s.age_s * 1e9) + 4;
		fprintf(stderr, "case: round %d: %s, half width %.0f ns, allowed %.0f (bound %.0f, tie %.0f, "
			"drift %.3g ppm, age %.3f s)\n", round, nc_utc_status_name(s.status), s.half_width_ns,
			allowed, s.source_bound_ns, s.tie_ns, s.drift_ppm, s.age_s);
		CHECK(s.status != NC_UTC_UNKNOWN && s.half_width_ns <= allowed);
		/* and the epoch was refreshed: the tie is the bracket's and the
		 * rate's over a period, not the 200 ms the lock was held */
		CHECK(s.tie_ns < 1e6);
	}
}

/* silent: synchronised for fresh_s, then free-running, then unknown past
 * the horizon; the interval holds the truth and never narrows */
static void case_fake_silent(const char *arg)
{
	(void)arg;
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "50", 1);
	setenv("NANOCLOCK_UTC_HORIZON_S", "2", 1);
	start_fake(GOOD);
	CHECK(nc_utc_start() == 0);
	/* read meanwhile: the figures are asked for at the ties readers make */
	for (int i = 0; i < 100; i++) {
		struct nc_utc w;
		CHECK(nc_utc_now(&w) == NC_UTC_SYNCHRONISED);
		usleep(2000);
	}
	__atomic_store_n(&fake.mode, SILENT, __ATOMIC_RELEASE);
	int64_t shift = truth_shift(), t0 = real_ns();
	double last_src = 0;
	int64_t as_of = 0;
	int seen[4] = {0, 0, 0, 0}, late_sync = 0;
	for (;;) {
		CHECK(real_ns() - t0 < 10000000000); /* unknown well within the 2 s horizon + fresh */
		struct nc_utc u;
		int64_t a = real_ns();
		int st = nc_utc_now(&u);
		int64_t b = real_ns();
		seen[st]++;
		if (st == NC_UTC_SYNCHRONISED) {
			struct nc_utc_status q;
			nc_get_utc_status(&q);
			late_sync += q.age_s > q.fresh_s + 0.01; /* (the status is read after) */
		}
		if (st == NC_UTC_UNKNOWN) {
			CHECK(u.earliest_ns == INT64_MIN && u.latest_ns == INT64_MAX);
			struct nc_utc_status s;
			nc_get_utc_status(&s);
			fprintf(stderr, "case: unknown after %.2f s: %s\n", (double)(real_ns() - t0) / 1e9, s.why);
			CHECK(strstr(s.why, "horizon"));
			break;
		}
		check_holds(&u, a, b, shift);
		/* never narrower: the source's part (its bound and the drift
		 * since) only grows; the tie's part a new tie measures afresh */
		struct nc_utc_status s;
		nc_get_utc_status(&s);
		if (s.status == NC_UTC_UNKNOWN) {
			/* the horizon passed between the read and the status: the
			 * next read says so too */
			CHECK(strstr(s.why, "horizon") && real_ns() - t0 > 1000000000);
			continue;
		}
		double src = s.source_bound_ns + s.drift_ppm * s.age_s * 1e3;
		if (real_ns() - t0 > 150000000) { /* replies already on their way, taken */
			if (!as_of)
				as_of = s.as_of_ns;
			if (!(s.as_of_ns == as_of && src >= last_src && s.half_width_ns + 2 >= src))
				fprintf(stderr, "case: at %.3f s: %s, figures as of %lld (first seen %lld), the "
					"source's part %.0f ns (before %.0f), half width %.0f ns\n",
					(double)(real_ns() - t0) / 1e9, nc_utc_status_name(s.status),
					(long long)s.as_of_ns, (long long)as_of, src, last_src, s.half_width_ns);
			CHECK(s.as_of_ns == as_of && src >= last_src && s.half_width_ns + 2 >= src);
		}
		last_src = src;
		usleep(2000);
	}
	fprintf(stderr, "case: silent chronyd: %d synchronised, %d free-running reads, then unknown\n",
		seen[1], seen[2]);
	/* (how many reads stay synchronised depends on how slowly this runs:
	 * a sanitizer; none may once the figures are older than four refresh
	 * periods, which the reads above check through the status) */
	CHECK(seen[2] > 0 && late_sync == 0);
}

/* a reply that must be refused, arriving after good figures: the last good
 * ones stay, widening and free-running; never the bad reply's narrow bound */
static void case_fake_turns_bad(const char *arg)
{
	int mode = atoi(arg);
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "50", 1);
	start_fake(GOOD);
	CHECK(nc_utc_start() == 0);
	struct nc_utc u;
	for (int i = 0; i < 100; i++) {
		CHECK(nc_utc_now(&u) == NC_UTC_SYNCHRONISED);
		usleep(2000);
	}
	double hw0 = (double)(u.latest_ns - u.unix_ns);
	__atomic_store_n(&fake.mode, mode, __ATOMIC_RELEASE);
	int64_t shift = truth_shift();
	double last = 0;
	int64_t as_of = 0;
	int free_running = 0;
	for (int i = 0; i < 600; i++) {
		int64_t a = real_ns();
		int st = nc_utc_now(&u);
		int64_t b = real_ns();
		CHECK(st == NC_UTC_SYNCHRONISED || st == NC_UTC_FREE_RUNNING);
		free_running += st == NC_UTC_FREE_RUNNING;
		check_holds(&u, a, b, shift);
		struct nc_utc_status s1; /* as in fake_silent */
		nc_get_utc_status(&s1);
		double src = s1.source_bound_ns + s1.drift_ppm * s1.age_s * 1e3;
		if (i >= 150) { /* replies already on their way, taken */
			if (!as_of)
				as_of = s1.as_of_ns;
			CHECK(s1.as_of_ns == as_of && src >= last && s1.half_width_ns + 2 >= src);
		}
		last = src;
		usleep(1000);
	}
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	fprintf(stderr, "case: mode %d after good figures: %s, +-%.0f ns (was %.0f); %s\n", mode,
		nc_utc_status_name(s.status), s.half_width_ns, hw0, s.why);
	CHECK(s.status == NC_UTC_FREE_RUNNING && free_running > 0 && s.why[0]);
}

/* A reply to this request that must be refused (chronyd refusing it,
 * another protocol version, a reference time in the future beyond the
 * reply's own bound, a bound of 0, figures 29 days old with a bound of
 * 1 us) is an answer all the same: the first period's refresh after it was
 * sent takes it, and from then on the status is free-running from the last
 * good figures, never synchronised on figures the source no longer
 * stands by (the freshness allowance, four periods, is for a source that
 * does not answer).  Counted in refreshes, not time: a refresh that
 * followed a set of the clock (a time daemon's) asks nothing, and a
 * sample spanning one is not counted. */
static void case_fake_refused(const char *arg)
{
	int mode = atoi(arg);
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "100", 1);
	start_fake(GOOD);
	CHECK(nc_utc_start() == 0);
	struct nc_utc u;
	for (int i = 0; i < 100; i++) {
		CHECK(nc_utc_now(&u) == NC_UTC_SYNCHRONISED);
		usleep(2000);
	}
	int64_t shift = truth_shift();
	int base = __atomic_load_n(&fake.bad_sent, __ATOMIC_ACQUIRE);
	__atomic_store_n(&fake.mode, mode, __ATOMIC_RELEASE);
	int armed = 0, free_at = -1;
	uint32_t r0 = 0, s0 = 0;
	struct nc_unix_status us;
	for (int64_t t0 = real_ns(); real_ns() - t0 < 3000000000 && free_at < 0;) {
		int64_t a = real_ns();
		int st = nc_utc_now(&u);
		int64_t b = real_ns();
		CHECK(nc_get_unix_status(&us) == 0);
		if (st == NC_UTC_SYNCHRONISED || st == NC_UTC_FREE_RUNNING)
			check_holds(&u, a, b, shift);
		if (!armed && __atomic_load_n(&fake.bad_sent, __ATOMIC_ACQUIRE) > base) {
			armed = 1; /* a refused reply is in the socket from here */
			r0 = us.refreshes, s0 = us.steps;
		} else if (armed && us.refreshes - r0 >= 2 + (us.steps - s0)) {
			/* at least one period's refresh since: it took the reply */
			if (st != NC_UTC_FREE_RUNNING) {
				struct nc_utc_status s;
				nc_get_utc_status(&s);
				fprintf(stderr, "case: mode %d: %s %u refreshes after a refused reply "
					"was sent: %s\n", mode, nc_utc_status_name(st), us.refreshes - r0,
					s.why);
				_exit(1);
			}
			free_at = (int)(us.refreshes - r0);
		}
		usleep(1000);
	}
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	fprintf(stderr, "case: mode %d: free-running %d refreshes after the refused reply was sent: "
		"%s\n", mode, free_at, s.why);
	CHECK(free_at >= 0 && s.why[0]);
}

/* a bad chronyd from the start: unknown, with the reason */
static void case_fake_bad_start(const char *arg)
{
	int mode = atoi(arg);
	start_fake(mode);
	CHECK(nc_utc_start() == NC_EUNKNOWN);
	struct nc_utc u;
	CHECK(nc_utc_now(&u) == NC_UTC_UNKNOWN && u.earliest_ns == INT64_MIN && u.latest_ns == INT64_MAX);
	CHECK(nc_utc_wait_past(0, 1) == NC_EUNKNOWN);
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	fprintf(stderr, "case: mode %d from the start: %s (chosen: %s)\n", mode, s.why, s.chosen);
	static const char *const want[] = {"", "did not answer", "did not answer", "version",
					   "future", "not synchronised", "local stratum", "did not answer"};
	CHECK(strstr(s.why, want[mode]) != NULL);
	struct nc_unix_status us;
	nc_get_unix_status(&us);
	CHECK(us.utc_error_ns < 0 && us.why[0]);
}

/* nothing listens where chrony is named: unknown at once, said */
static void case_chrony_absent(const char *arg)
{
	(void)arg;
	setenv("NANOCLOCK_UTC_SOURCE", "chrony:127.0.0.1:9", 1);
	int64_t a = real_ns();
	CHECK(nc_utc_start() == NC_EUNKNOWN);
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	fprintf(stderr, "case: %s, in %.1f ms\n", s.why, (double)(real_ns() - a) / 1e6);
	CHECK(strstr(s.why, "nothing listens") || strstr(s.why, "did not answer"));
	setenv("NANOCLOCK_UTC_SOURCE", "off", 1);
}

static void case_off(const char *arg)
{
	(void)arg;
	setenv("NANOCLOCK_UTC_SOURCE", "off", 1);
	struct nc_utc u;
	CHECK(nc_utc_now(&u) == NC_UTC_UNKNOWN && u.source == NC_UTC_SRC_NONE);
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	CHECK(strstr(s.why, "NANOCLOCK_UTC_SOURCE=off"));
	/* the read still gives nc_unix_ns's time */
	int64_t a = real_ns();
	nc_utc_now(&u);
	CHECK(llabs(u.unix_ns - a) < 1000000000);
}

/* ---- the real kernel's NTP state (root; restored) ---- */
static struct timex saved_kernel;

/* Sets the kernel's PLL slewing offset_us (STA_FREQHOLD: its frequency is
 * left alone), then status: 0, or CHILD_SKIP without CAP_SYS_TIME. */
static int kernel_pll(long offset_us, int status, long maxerror, long esterror)
{
	clock_lock(1); /* no other suite's test takes REALTIME for the truth meanwhile */
	memset(&saved_kernel, 0, sizeof(saved_kernel));
	if (adjtimex(&saved_kernel) < 0)
		return -1;
	struct timex tx = {0};
	tx.modes = ADJ_STATUS;
	tx.status = STA_PLL | STA_FREQHOLD;
	if (adjtimex(&tx) < 0) {
		fprintf(stderr, "case: adjtimex: %s: needs CAP_SYS_TIME\n", strerror(errno));
		return -1;
	}
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_OFFSET;
	tx.offset = offset_us;
	adjtimex(&tx);
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_STATUS | ADJ_MAXERROR | ADJ_ESTERROR;
	tx.status = status;
	tx.maxerror = maxerror;
	tx.esterror = esterror;
	adjtimex(&tx);
	return 0;
}

/* The PLL's offset ended while it still runs (an offset left behind is
 * slewed even with STA_PLL cleared), then everything as it was. */
static void kernel_restore(void)
{
	struct timex tx = {0};
	tx.modes = ADJ_STATUS;
	tx.status = STA_PLL | STA_FREQHOLD;
	adjtimex(&tx);
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_OFFSET;
	tx.offset = 0;
	adjtimex(&tx);
	memset(&tx, 0, sizeof(tx));
	/* the constant set in nanosecond mode: in microsecond mode the kernel
	 * adds 4 to what is set (it reads back as it is kept) */
	tx.modes = ADJ_STATUS | ADJ_NANO | ADJ_MAXERROR | ADJ_ESTERROR | ADJ_TIMECONST | ADJ_FREQUENCY;
	tx.status = saved_kernel.status;
	tx.maxerror = saved_kernel.maxerror;
	tx.esterror = saved_kernel.esterror;
	tx.constant = saved_kernel.constant;
	tx.freq = saved_kernel.freq;
	adjtimex(&tx);
	memset(&tx, 0, sizeof(tx));
	tx.modes = (saved_kernel.status & STA_NANO) ? ADJ_NANO : ADJ_MICRO;
	adjtimex(&tx);
	memset(&tx, 0, sizeof(tx));
	adjtimex(&tx);
	/* the kernel applies the PLL's offset in one-second chunks: the one in
	 * effect runs out at the next second (the cases after this one start
	 * on a clock no longer slewed) */
	usleep(1100000);
	if (tx.offset != 0 || tx.constant != saved_kernel.constant || tx.status != saved_kernel.status)
		fprintf(stderr, "case: after the restore: offset %ld, constant %ld (was %ld), status "
			"0x%x (was 0x%x)\n", tx.offset, tx.constant, saved_kernel.constant, tx.status,
			saved_kernel.status);
}

static void case_kernel_timesyncd(const char *arg)
{
	(void)arg;
	/* what timesyncd writes: STA_PLL, maxerror and esterror 0, 3 ms for
	 * the PLL to slew */
	if (kernel_pll(3000, STA_PLL | STA_FREQHOLD, 0, 0) != 0)
		CHILD_SKIP_BECAUSE("root", "setting the kernel's NTP state needs CAP_SYS_TIME");
	setenv("NANOCLOCK_UTC_SOURCE", "adjtimex", 1);
	int rc = nc_utc_start();
	struct nc_utc u;
	int st = nc_utc_now(&u);
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	struct nc_unix_status us;
	nc_get_unix_status(&us);
	kernel_restore();
	fprintf(stderr, "case: the kernel in timesyncd's pattern: rc %d, %s: %s\n", rc,
		nc_utc_status_name(st), s.why);
	CHECK(rc == NC_EUNKNOWN && st == NC_UTC_UNKNOWN && strstr(s.why, "no honest bound"));
	/* nc_unix_status no longer says maxerror + tie (tens of ns) */
	CHECK(us.utc_error_ns < 0 && strstr(us.why, "no honest bound"));
}

/* The system clock slewed by the kernel (an offset its PLL slews at up to
 * ~250 ppm; left behind with STA_PLL cleared, as the test above used to
 * leave it): every interval still holds the truth a source states. */
static void case_kernel_slewing(const char *arg)
{
	(void)arg;
	if (kernel_pll(1000, STA_UNSYNC, 16000000, 16000000) != 0)
		CHILD_SKIP_BECAUSE("root", "setting the kernel's NTP state needs CAP_SYS_TIME");
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "100", 1);
	start_fake(GOOD);
	int rc = nc_utc_start();
	int64_t shift = truth_shift(), t0 = real_ns();
	long n = 0, bad = 0;
	while (rc == 0 && real_ns() - t0 < 2500000000) {
		struct nc_utc u;
		int64_t a = real_ns();
		nc_utc_now(&u);
		int64_t b = real_ns();
		n++;
		if (u.earliest_ns > b + shift || u.latest_ns < a + shift) {
			if (bad++ < 3)
				fprintf(stderr, "case: read %ld: [%+lld, %+lld] from the truth\n", n,
					(long long)(u.earliest_ns - (b + shift)),
					(long long)(u.latest_ns - (a + shift)));
		}
		usleep(500);
	}
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	kernel_restore();
	fprintf(stderr, "case: the kernel slewing: %ld reads, %ld not holding the truth; tie part %.0f "
		"ns\n", n, bad, s.tie_ns);
	CHECK(rc == 0 && n > 1000 && bad == 0);
}

/* the descriptors whose link in /proc/self/fd begins with `prefix`, other
 * than `not`: how many, and the last in *fd */
static int count_fds(const char *prefix, int not, int *last)
{
	int count = 0;
	for (int fd = 3; fd < 1024; fd++) {
		char p[64], l[256];
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(p, l, sizeof(l) - 1);
		if (n <= 0 || fd == not)
			continue;
		l[n] = 0;
		if (strncmp(l, prefix, strlen(prefix)) == 0) {
			count++;
			if (last)
				*last = fd;
		}
	}
	return count;
}

/* A program that closes descriptors it does not own (a daemon's closefrom
 * after the library started) and opens its own under the same number: the
 * library never writes to it, never reads it as its source, never closes
 * it; it opens its own again and goes on.  chrony: the program's socket,
 * connected to a sink of the test's, gets no datagram.  clockbound: the
 * library holds no descriptor between refreshes (it opens the segment by
 * path at each), so a program's own descriptor of the very same file —
 * which no device-and-inode check could tell from the library's — is
 * never the library's to read or close, nc_utc_stop included. */
static void case_fd_reused(const char *arg)
{
	int chrony = strcmp(arg, "chrony") == 0;
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "50", 1);
	struct cbseg g = cb_good(5000000);
	int64_t shift = 4000000;
	if (chrony) {
		start_fake(GOOD);
		shift = truth_shift();
	} else {
		cb_make(&g);
	}
	CHECK(nc_utc_start() == 0);
	const char *kind = chrony ? "socket:" : cb_path;
	int L = -1;
	/* the library's socket; no descriptor of the segment */
	CHECK(count_fds(kind, fake.fd, &L) == (chrony ? 1 : 0));
	/* the program's own descriptor under the library's number */
	int sink = -1, mine;
	if (chrony) {
		struct sockaddr_in a;
		memset(&a, 0, sizeof(a));
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sink = socket(AF_INET, SOCK_DGRAM, 0);
		CHECK(sink >= 0 && bind(sink, (struct sockaddr *)&a, sizeof(a)) == 0);
		socklen_t al = sizeof(a);
		CHECK(getsockname(sink, (struct sockaddr *)&a, &al) == 0);
		mine = socket(AF_INET, SOCK_DGRAM, 0);
		CHECK(mine >= 0 && connect(mine, (struct sockaddr *)&a, sizeof(a)) == 0);
	} else {
		mine = open(cb_path, O_RDONLY | O_CLOEXEC); /* the same file as the library's source */
		CHECK(mine >= 0);
	}
	struct stat was;
	CHECK(fstat(mine, &was) == 0);
	if (chrony) {
		CHECK(dup2(mine, L) == L);
		close(mine);
	} else {
		L = mine;
	}
	int answered = __atomic_load_n(&fake.answered, __ATOMIC_RELAXED);
	long n = 0;
	for (int64_t t0 = real_ns(); real_ns() - t0 < 1000000000; n++) {
		struct nc_utc u;
		int64_t a = real_ns();
		int st = nc_utc_now(&u);
		int64_t b = real_ns();
		CHECK(st == NC_UTC_SYNCHRONISED);
		check_holds(&u, a, b, shift);
		if (!chrony && n % 50 == 0) {
			struct nc_utc_status s;
			nc_get_utc_status(&s);
			CHECK(s.source_bound_ns == 5e6);
		}
		usleep(1000);
	}
	if (!chrony)
		nc_utc_stop(); /* closes what the library holds: nothing of the program's */
	/* the program's descriptor is still its own, untouched */
	struct stat now;
	CHECK(fstat(L, &now) == 0 && now.st_ino == was.st_ino && now.st_dev == was.st_dev);
	if (chrony) {
		char buf[512];
		ssize_t got = recv(sink, buf, sizeof(buf), MSG_DONTWAIT);
		if (got >= 0)
			fprintf(stderr, "case: the library sent %zd bytes on the program's socket\n", got);
		CHECK(got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
		/* asked at the ties through a socket of its own again */
		CHECK(__atomic_load_n(&fake.answered, __ATOMIC_RELAXED) >= answered + 5);
	}
	/* besides the program's (and the sink): the library's own socket,
	 * once; of the segment, the program's only */
	CHECK(count_fds(kind, fake.fd, NULL) == (chrony ? 3 : 1));
	fprintf(stderr, "case: %s: the program's descriptor %d left alone over %ld reads, each holding "
		"the truth\n", arg, L, n);
	/* stopped: the source's descriptor closed, the program's left */
	nc_utc_stop();
	CHECK(count_fds(kind, fake.fd, NULL) == (chrony ? 2 : 1));
	CHECK(fstat(L, &now) == 0 && now.st_ino == was.st_ino);
	/* unknown (the whole line) until started again, then as before */
	struct nc_utc u;
	CHECK(nc_utc_now(&u) == NC_UTC_UNKNOWN && u.earliest_ns == INT64_MIN && u.latest_ns == INT64_MAX);
	struct nc_utc_status s;
	CHECK(nc_get_utc_status(&s) == 0 && s.status == NC_UTC_UNKNOWN && strstr(s.why, "nc_utc_stop"));
	CHECK(nc_utc_start() == 0);
	CHECK(nc_utc_now(&u) == NC_UTC_SYNCHRONISED);
	CHECK(count_fds(kind, fake.fd, NULL) == (chrony ? 3 : 1));
	nc_utc_stop();
	CHECK(count_fds(kind, fake.fd, NULL) == (chrony ? 2 : 1));
}

/* A step of the system clock followed by nanoclock (a set, then a retie, as
 * the upkeep thread does at once), the source's figures taken before it:
 * the interval still holds UTC.  The figures from before were kept as they
 * were on the stepped line, and excluded UTC (a 10 s set: [+9998 ms,
 * +10002 ms] around it, synchronised).  src: "vmclock" or "chrony". */
static void case_step(const char *arg)
{
	int vm = !strcmp(arg, "vmclock");
	int64_t shift = vm ? 0 : 12500000;
	steppable_realtime();
	if (vm)
		vm_env();
	else
		start_fake(GOOD);
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "1000", 1);
	nc_init();
	if (vm) {
		if (!on_tsc())
			CHILD_SKIP_BECAUSE("machine", "the counter is %s, not the TSC a VMClock page "
					   "states", nc_counter_name());
		struct vmpage g = vm_good(0); /* its UTC: the real CLOCK_REALTIME */
		g.maxerr_ns = 100000 + g.truth_ns;
		vm_make(&g);
	}
	CHECK(nc_utc_start() == 0);
	struct nc_utc u;
	int64_t a = real_ns();
	CHECK(nc_utc_now(&u) == NC_UTC_SYNCHRONISED);
	check_holds(&u, a, real_ns(), shift);
	static const int64_t steps[] = {10000000000, -25000000000, 3000000};
	for (int i = 0; i < 3; i++) {
		__atomic_add_fetch(&sim_offset, steps[i], __ATOMIC_RELEASE);
		CHECK(nc_unix_retie() == 0);
		for (int k = 0; k < 50; k++) {
			a = real_ns();
			int st = nc_utc_now(&u);
			int64_t b = real_ns();
			if (st == NC_UTC_SYNCHRONISED || st == NC_UTC_FREE_RUNNING)
				check_holds(&u, a, b, shift);
			usleep(1000);
		}
		struct nc_utc_status s;
		nc_get_utc_status(&s);
		fprintf(stderr, "case: %s, a set of %+.3f s followed: %s, +-%.3f ms (%s)\n", arg,
			(double)steps[i] / 1e9, nc_utc_status_name(s.status), s.half_width_ns / 1e6,
			s.why[0] ? s.why : "held UTC");
		if (!vm && s.status != NC_UTC_UNKNOWN) {
			/* the parts add up, the step followed among them (in the tie) */
			double parts = s.source_bound_ns + s.tie_ns + s.drift_ppm * 1e-6 * (s.age_s * 1e9);
			fprintf(stderr, "case: bound %.0f + tie %.0f + drift %.3g ppm over %.3f s = %.0f ns; "
				"half width %.0f ns\n", s.source_bound_ns, s.tie_ns, s.drift_ppm, s.age_s,
				parts, s.half_width_ns);
			CHECK(s.half_width_ns <= parts + 4);
		}
	}
}

/* ---- a real chronyd pair (Debian's chrony) on loopback ---- */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof(a);
	int port = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
			   getsockname(fd, (struct sockaddr *)&a, &al) == 0
		       ? ntohs(a.sin_port)
		       : -1;
	if (fd >= 0)
		close(fd);
	return port;
}

static const char *chronyd_path(void)
{
	static const char *const where[] = {"/usr/sbin/chronyd", "/sbin/chronyd", "/usr/bin/chronyd"};
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (access(where[i], X_OK) == 0)
			return where[i];
	return NULL;
}

/* chronyd -d -x (never touches the clock) with conf, in a child; its pid */
static pid_t run_chronyd(const char *dir, const char *name, const char *conf)
{
	char cp[256], lp[256];
	snprintf(cp, sizeof(cp), "%s/%s.conf", dir, name);
	snprintf(lp, sizeof(lp), "%s/%s.log", dir, name);
	FILE *f = fopen(cp, "w");
	CHECK(f && fputs(conf, f) >= 0 && fclose(f) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int fd = open(lp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		const char *cd = chronyd_path();
		if (geteuid() == 0)
			execl(cd, "chronyd", "-d", "-x", "-u", "root", "-f", cp, (char *)NULL);
		else
			execl(cd, "chronyd", "-d", "-x", "-f", cp, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void case_real_chronyd(const char *arg)
{
	(void)arg;
	if (!chronyd_path()) {
		CHILD_SKIP_BECAUSE("machine", "no chronyd (Debian: chrony; scripts/install-test-deps "
					   "installs it)");
	}
	clock_lock(0); /* REALTIME + 50 ms is the truth: no other suite slews it meanwhile */
	char dir[] = "/tmp/nc-chronyd-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	CHECK(chmod(dir, 0755) == 0);
	int ntp = free_port(), cmd = free_port();
	CHECK(ntp > 0 && cmd > 0 && ntp != cmd);
	char conf[1024];
	/* the server: its own clock at stratum 1 on loopback */
	snprintf(conf, sizeof(conf),
		 "port %d\nbindaddress 127.0.0.1\nlocal stratum 1\nallow 127.0.0.1\ncmdport 0\n"
		 "bindcmdaddress %s/server.sock\npidfile %s/server.pid\n", ntp, dir, dir);
	pid_t server = run_chronyd(dir, "server", conf);
	/* the client: told its source is 50 ms ahead (offset): it then says
	 * the system clock is 50 ms slow of NTP time: the injected truth */
	snprintf(conf, sizeof(conf),
		 "server 127.0.0.1 port %d iburst minpoll -4 maxpoll -4 offset 0.050\nport 0\n"
		 "cmdport %d\nbindcmdaddress 127.0.0.1\nbindcmdaddress %s/client.sock\n"
		 "cmdallow 127.0.0.1\npidfile %s/client.pid\n", ntp, cmd, dir, dir);
	pid_t client = run_chronyd(dir, "client", conf);
	char v[64];
	snprintf(v, sizeof(v), "chrony:127.0.0.1:%d", cmd);
	setenv("NANOCLOCK_UTC_SOURCE", v, 1);
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "100", 1);
	setenv("NANOCLOCK_UTC_HORIZON_S", "3", 1);
	nc_utc_start();
	/* synchronised within 30 s (iburst at 1/16 s polls: a few seconds) */
	struct nc_utc u;
	int64_t t0 = real_ns();
	while (nc_utc_now(&u) != NC_UTC_SYNCHRONISED && real_ns() - t0 < 30000000000)
		usleep(20000);
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	fprintf(stderr, "case: chronyd pair on 127.0.0.1:%d (commands :%d): %s after %.1f s: %s%s\n",
		ntp, cmd, nc_utc_status_name(s.status), (double)(real_ns() - t0) / 1e9, s.why,
		s.status == NC_UTC_SYNCHRONISED ? "" : " (see the logs in /tmp)");
	int ok = s.status == NC_UTC_SYNCHRONISED;
	/* every interval holds REALTIME + 50 ms, for 3 s */
	int64_t inject = 50000000;
	long n = 0, bad = 0, unjudged = 0;
	double widest = 0;
	/* the server's clock is this machine's: a step of it by another
	 * process steps the truth too, which the line follows within a
	 * refresh period (100 ms) */
	struct clockstep cs = {0};
	const int64_t lag = 100000000 + 20000000; /* the period, and the read that ties */
	while (ok && real_ns() - t0 < 60000000000 && n < 3000) {
		int calm = clockstep_calm(&cs, lag);
		int64_t a = real_ns();
		int st = nc_utc_now(&u);
		int64_t b = real_ns();
		if (!clockstep_calm(&cs, lag) || !calm) {
			unjudged++;
			usleep(1000);
			continue;
		}
		n++;
		/* synchronised throughout, unless the clock was stepped: chronyd
		 * then re-measures, and free-running meanwhile is honest (the
		 * interval must still hold the truth) */
		int bounded = st == NC_UTC_SYNCHRONISED ||
			      (st == NC_UTC_FREE_RUNNING && cs.steps > 0);
		if (!bounded || u.earliest_ns > b + inject || u.latest_ns < a + inject) {
			bad++;
			int64_t r0 = real_ns(), un = nc_unix_ns(), r1 = real_ns();
			fprintf(stderr, "case: nc_unix_ns - REALTIME %+lld ns; the read's unix_ns - REALTIME "
				"%+lld\n", (long long)(un - (r0 + r1) / 2), (long long)(u.unix_ns - (a + b) / 2));
			struct nc_utc_status e;
			nc_get_utc_status(&e);
			fprintf(stderr, "case: read %ld: %s, [%+lld after, %+lld before] REALTIME + 50 ms "
				"(read in %lld ns); bound %.0f ns, tie %.0f, drift %.3g ppm, age %.3f s\n", n,
				nc_utc_status_name(st), (long long)(u.earliest_ns - (a + inject)),
				(long long)(u.latest_ns - (a + inject)), (long long)(b - a), e.source_bound_ns,
				e.tie_ns, e.drift_ppm, e.age_s);
		}
		widest = fmax(widest, (double)(u.latest_ns - u.unix_ns));
		usleep(1000);
	}
	nc_get_utc_status(&s);
	fprintf(stderr, "case: %ld reads, %ld not holding REALTIME + 50 ms; half width up to %.3f ms "
		"(chronyd's bound %.3f ms); %ld reads near %ld steps by another process not judged\n",
		n, bad, widest / 1e6, s.source_bound_ns / 1e6, unjudged, cs.steps);
	/* chronyd stopped: free-running, growing, then unknown past 3 s */
	int seen_free = 0, unknown = 0;
	if (ok) {
		kill(client, SIGTERM);
		waitpid(client, NULL, 0);
		client = 0;
		int64_t t1 = real_ns();
		while (real_ns() - t1 < 10000000000) {
			int calm = clockstep_calm(&cs, lag);
			int64_t a = real_ns();
			int st = nc_utc_now(&u);
			int64_t b = real_ns();
			if (st == NC_UTC_UNKNOWN) {
				unknown = 1;
				break;
			}
			seen_free += st == NC_UTC_FREE_RUNNING;
			if (calm && clockstep_calm(&cs, lag) &&
			    (u.earliest_ns > b + inject || u.latest_ns < a + inject))
				bad++;
			usleep(5000);
		}
		nc_get_utc_status(&s);
		fprintf(stderr, "case: chronyd stopped: %d free-running reads, then %s: %s\n", seen_free,
			unknown ? "unknown" : "still known", s.why);
	}
	if (client)
		kill(client, SIGTERM);
	kill(server, SIGTERM);
	if (client)
		waitpid(client, NULL, 0);
	waitpid(server, NULL, 0);
	if (!ok) { /* the logs, for whoever reads the failure */
		char cmdline[512];
		snprintf(cmdline, sizeof(cmdline), "tail -n 5 %s/server.log %s/client.log >&2", dir, dir);
		(void)!system(cmdline);
	}
	char rm[300];
	snprintf(rm, sizeof(rm), "rm -rf %s", dir);
	(void)!system(rm);
	CHECK(ok && n >= 1000 && bad == 0 && seen_free > 0 && unknown);
	CHECK(s.source == NC_UTC_SRC_CHRONY);
}

static const struct child_case cases[] = {
	{"adjtimex_writers", case_adjtimex_writers, NULL, NULL, NULL},
	{"adjtimex_find_writer", case_adjtimex_find_writer, NULL, NULL, NULL},
	{"chrony_decode", case_chrony_decode, NULL, NULL, NULL},
	{"fake_good", case_fake_good, NULL, NULL, NULL},
	{"fake_status_overdue", case_fake_status_overdue, NULL, NULL, NULL},
	{"fake_silent", case_fake_silent, NULL, NULL, NULL},
	{"fake_turns_wrong_seq", case_fake_turns_bad, "2", NULL, NULL},
	{"fake_turns_wrong_version", case_fake_turns_bad, "3", NULL, NULL},
	{"fake_turns_future", case_fake_turns_bad, "4", NULL, NULL},
	{"fake_turns_unsync", case_fake_turns_bad, "5", NULL, NULL},
	{"fake_turns_narrow_stale", case_fake_turns_bad, "7", NULL, NULL},
	{"fake_refused_version", case_fake_refused, "3", NULL, NULL},
	{"fake_refused_future", case_fake_refused, "4", NULL, NULL},
	{"fake_refused_not_allowed", case_fake_refused, "8", NULL, NULL},
	{"fake_refused_zero_bound", case_fake_refused, "9", NULL, NULL},
	{"fake_refused_29_days_old", case_fake_refused, "10", NULL, NULL},
	{"fake_refused_near_future", case_fake_refused, "11", NULL, NULL},
	{"fake_bad_start_silent", case_fake_bad_start, "1", NULL, NULL},
	{"fake_bad_start_version", case_fake_bad_start, "3", NULL, NULL},
	{"fake_bad_start_future", case_fake_bad_start, "4", NULL, NULL},
	{"fake_bad_start_unsync", case_fake_bad_start, "5", NULL, NULL},
	{"fake_bad_start_local", case_fake_bad_start, "6", NULL, NULL},
	{"chrony_absent", case_chrony_absent, NULL, NULL, NULL},
	{"off", case_off, NULL, NULL, NULL},
	{"real_chronyd", case_real_chronyd, NULL, NULL, NULL},
	{"fd_reused_chrony", case_fd_reused, "chrony", NULL, NULL},
	{"fd_reused_clockbound", case_fd_reused, "clockbound", NULL, NULL},
	{"step_vmclock", case_step, "vmclock", NULL, NULL},
	{"step_chrony", case_step, "chrony", NULL, NULL},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* They set the kernel's NTP state: `make check-destructive` only */
static const struct child_case destructive_cases[] = {
	{"kernel_timesyncd", case_kernel_timesyncd, NULL, NULL, NULL},
	{"kernel_slewing", case_kernel_slewing, NULL, NULL, NULL},
};
#define NDCASES ((int)(sizeof(destructive_cases) / sizeof(destructive_cases[0])))

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	return child_program("test_utc", argc, argv, NULL, 0, cases, NCASES, destructive_cases, NDCASES);
}
