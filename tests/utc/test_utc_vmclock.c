/* SPDX-License-Identifier: MIT */
/* The VMClock source (src/utc/vmclock.c): pages written by the test from
 * the ABI header, in a file read as the device would be; a page that
 * moves, is stuck mid-write, is for another counter or time scale, states
 * no error, or is truncated, replaced, of the ABI's first layout or out of
 * range, each read as the ABI says or refused with its reason. */
#include "utc_fixtures.h"

/* a page 7 ms off CLOCK_REALTIME: every interval holds its UTC, and is no
 * wider than its bound (the line's offset from it and its maximum error)
 * plus the tie and the drift since */
static void case_vmclock_good(const char *arg)
{
	(void)arg;
	vm_env();
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "50", 1);
	nc_init();
	if (!on_tsc()) {
		CHILD_SKIP_BECAUSE("machine", "the counter is %s, not the TSC a VMClock page states",
				   nc_counter_name());
	}
	struct vmpage g = vm_good(7000000);
	vm_make(&g);
	CHECK(nc_utc_start() == 0);
	long n = 0;
	for (int64_t t0 = real_ns(); real_ns() - t0 < 1000000000; n++) {
		struct nc_utc u;
		int64_t a = real_ns();
		int st = nc_utc_now(&u);
		int64_t b = real_ns();
		CHECK(st == NC_UTC_SYNCHRONISED && u.source == NC_UTC_SRC_VMCLOCK);
		check_holds(&u, a, b, 7000000);
		if (n % 100 == 0) {
			struct nc_utc_status s;
			nc_get_utc_status(&s);
			double allowed = s.source_bound_ns + s.tie_ns + s.drift_ppm * s.age_s * 1e3 + 3;
			/* the source's bound: the page's offset (7 ms) and maximum
			 * error, its stated rate error over the page's age twice (in
			 * the bound, and in how far the offset may have moved), and
			 * 100 us for the line's own distance from CLOCK_REALTIME */
			double most = 7e6 + (double)g.maxerr_ns +
				      2 * g.rate_ppm * 1e-6 * (double)(real_ns() - g.made_ns) + 1e5;
			if (!(s.half_width_ns <= allowed && s.source_bound_ns >= 7e6 && s.source_bound_ns < most))
				fprintf(stderr, "case: half width %.0f, allowed %.0f, source bound %.0f (at most "
					"%.0f), tie %.0f, drift %.3g ppm, age %.3f s: %s\n", s.half_width_ns,
					allowed, s.source_bound_ns, most, s.tie_ns, s.drift_ppm, s.age_s, s.why);
			CHECK(s.half_width_ns <= allowed && s.source_bound_ns >= 7e6 && s.source_bound_ns < most);
		}
		usleep(500);
	}
	fprintf(stderr, "case: a page 7 ms off: %ld reads, each holding its UTC\n", n);
	unlink(vm_path);
}

/* the hypervisor rewriting the page on the other CPU, and the VM moved now
 * and then (a new disruption marker, the new host's UTC 33 ms away from
 * the old one's): the first read after a move says disrupted (the fast
 * path watches the marker) or, where a refresh in that read already found
 * the new page valid, holds the new page's UTC; every read with a bound
 * holds the page's UTC of its moment (a bound from before a move would
 * not); a valid page gives a bound again */
static int vm_stop;

static pthread_mutex_t vm_mu = PTHREAD_MUTEX_INITIALIZER; /* one writer of the page at a time */
static int64_t vm_shift = 7000000; /* the page's UTC - CLOCK_REALTIME (under vm_mu) */
static void *vm_writer(void *arg)
{
	struct vmpage *g = arg;
	while (!__atomic_load_n(&vm_stop, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&vm_mu);
		struct vmpage n = vm_good(vm_shift);
		n.seq = g->seq;
		n.marker = g->marker;
		*g = n;
		vm_write(g);
		pthread_mutex_unlock(&vm_mu);
		usleep(300);
	}
	return NULL;
}

static void case_vmclock_moves(const char *arg)
{
	(void)arg;
	vm_env();
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "20", 1);
	nc_init();
	if (!on_tsc())
		CHILD_SKIP_BECAUSE("machine", "the counter is %s, not the TSC a VMClock page states",
				   nc_counter_name());
	static struct vmpage g;
	g = vm_good(7000000);
	vm_make(&g);
	CHECK(nc_utc_start() == 0);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, vm_writer, &g) == 0);
	long n = 0, disrupted = 0;
	int moves = 0, at_once = 0;
	for (int64_t t0 = real_ns(); real_ns() - t0 < 1500000000; n++) {
		if (n % 150 == 149) {
			/* a move, made by this thread (the only reader): the read
			 * right after it says disrupted, whatever came before */
			pthread_mutex_lock(&vm_mu);
			vm_shift = vm_shift == 7000000 ? 40000000 : 7000000; /* the new host's UTC */
			struct vmpage m = vm_good(vm_shift);
			m.seq = g.seq;
			m.marker = g.marker + 1;
			g = m;
			vm_write(&g);
			pthread_mutex_unlock(&vm_mu);
			moves++;
			struct nc_utc d;
			int64_t da = real_ns();
			int dst = nc_utc_now(&d);
			int64_t db = real_ns();
			/* disrupted, or (a refresh in this read found the new page
			 * valid) a bound from the new page: never the old one's */
			if (dst == NC_UTC_SYNCHRONISED)
				check_holds(&d, da, db, vm_shift);
			CHECK(dst == NC_UTC_SYNCHRONISED || (dst == NC_UTC_DISRUPTED && d.earliest_ns == INT64_MIN));
			at_once += dst == NC_UTC_DISRUPTED;
		}
		struct nc_utc u;
		int64_t a = real_ns();
		int st = nc_utc_now(&u);
		int64_t b = real_ns();
		if (st == NC_UTC_SYNCHRONISED)
			check_holds(&u, a, b, vm_shift); /* (this thread alone changes it) */
		else
			disrupted++;
		CHECK(st == NC_UTC_SYNCHRONISED || st == NC_UTC_DISRUPTED);
		usleep(300);
	}
	__atomic_store_n(&vm_stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	/* the writer stopped: a valid page gives a bound again (the first
	 * refresh may find the last move) */
	struct nc_utc u;
	int st;
	int64_t tq = real_ns();
	while ((st = nc_utc_now(&u)) != NC_UTC_SYNCHRONISED && real_ns() - tq < 1000000000)
		usleep(1000);
	fprintf(stderr, "case: %ld reads beside the writer, %d moves (the page's UTC 7 ms, then 40 ms "
		"off, by turns; %d said disrupted by the next read, the others already bounded by the new "
		"page), %ld reads disrupted; now %s\n", n, moves, at_once, disrupted,
		nc_utc_status_name(st));
	CHECK(moves >= 3 && at_once > 0 && st == NC_UTC_SYNCHRONISED);
	unlink(vm_path);
}

/* pages with no bound: the reason, never a bound */
static void case_vmclock_bad(const char *arg)
{
	int which = atoi(arg);
	vm_env();
	nc_init();
	if (!on_tsc())
		CHILD_SKIP_BECAUSE("machine", "the counter is %s, not the TSC a VMClock page states",
				   nc_counter_name());
	struct vmpage g = vm_good(7000000);
	static const char *const want[] = {"mid-update", "counter id", "time type", "status",
					   "no maximum error", "not a VMClock page"};
	if (which == 0)
		g.seq = 5; /* stays odd */
	if (which == 1)
		g.counter_id = 0; /* arm64's */
	if (which == 2)
		g.time_type = 1; /* TAI */
	if (which == 3)
		g.status = 4; /* unreliable */
	if (which == 4)
		g.flags = 0;
	vm_make(&g);
	if (which == 5)
		vm_map[0] = 'X';
	CHECK(nc_utc_start() == NC_EUNKNOWN);
	struct nc_utc u;
	int st = nc_utc_now(&u);
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	fprintf(stderr, "case: page %d: %s: %s\n", which, nc_utc_status_name(st), s.why);
	CHECK(st == (which == 0 ? NC_UTC_DISRUPTED : NC_UTC_UNKNOWN) && u.latest_ns == INT64_MAX);
	CHECK(strstr(s.why, want[which]));
	unlink(vm_path);
}

/* A file standing for the VMClock page (a page writer's): written with
 * pwrite, never mapped by the test, size_field in the page, len bytes in
 * the file; replace: a new file under the path (the old one unlinked) */
static void vm_file(const struct vmpage *g, unsigned size_field, size_t len, int replace)
{
	unsigned char b[4096];
	memset(b, 0, sizeof(b));
	vm_encode(b, g);
	vm_put64(b, 0x4b4c4356u | (uint64_t)size_field << 32);
	b[12] = (unsigned char)g->seq;
	if (replace)
		unlink(vm_path);
	int fd = open(vm_path, O_WRONLY | O_CREAT, 0644);
	CHECK(fd >= 0 && pwrite(fd, b, len, 0) == (ssize_t)len && ftruncate(fd, (off_t)len) == 0);
	close(fd);
}

/* reads every 1 ms for up to 1 s until one says want (and, synchronised,
 * holds REALTIME + shift): 1, or 0 */
static int vm_file_until(int want, int64_t shift)
{
	for (int64_t t0 = real_ns(); real_ns() - t0 < 1000000000;) {
		struct nc_utc u;
		int64_t a = real_ns();
		int st = nc_utc_now(&u);
		int64_t b = real_ns();
		if (st == want) {
			if (st == NC_UTC_SYNCHRONISED)
				check_holds(&u, a, b, shift);
			return 1;
		}
		usleep(1000);
	}
	return 0;
}

/* A file at the VMClock source's path, as page writers and older
 * hypervisors make it: read at each refresh (20 ms), never mapped, so
 * another program truncating it cannot kill this one (a read of a mapped
 * page past the file's end is a SIGBUS); a file replaced under the path is
 * followed; the first layout (104 bytes) is read; a time whose ns do not
 * fit 64 bits is refused, not overflowed.
 *   arg: truncated, replaced, v104, huge_time */
static void case_vmclock_file(const char *arg)
{
	vm_env();
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "20", 1);
	nc_init();
	if (!on_tsc())
		CHILD_SKIP_BECAUSE("machine", "the counter is %s, not the TSC a VMClock page states",
				   nc_counter_name());
	struct vmpage g = vm_good(7000000);
	struct nc_utc_status s;
	if (!strcmp(arg, "huge_time")) {
		g.time_s = 10000000000ull; /* year 2286: its ns overflow an int64_t */
		vm_file(&g, 112, 112, 0);
		CHECK(nc_utc_start() == NC_EUNKNOWN);
		nc_get_utc_status(&s);
		fprintf(stderr, "case: a time of 1e10 s: %s\n", s.why);
		CHECK(strstr(s.why, "out of range") != NULL);
		unlink(vm_path);
		return;
	}
	int v104 = !strcmp(arg, "v104");
	vm_file(&g, v104 ? 104 : 112, v104 ? 104 : 4096, 0);
	CHECK(nc_utc_start() == 0);
	CHECK(vm_file_until(NC_UTC_SYNCHRONISED, 7000000));
	if (v104) {
		nc_get_utc_status(&s);
		fprintf(stderr, "case: the 104-byte layout: synchronised (%s)\n", s.chosen);
	} else if (!strcmp(arg, "truncated")) {
		CHECK(truncate(vm_path, 0) == 0);
		CHECK(vm_file_until(NC_UTC_UNKNOWN, 0)); /* alive, and no bound from no page */
		nc_get_utc_status(&s);
		fprintf(stderr, "case: truncated by another program: %s\n", s.why);
		CHECK(strstr(s.why, "shorter than a page") != NULL);
		vm_file(&g, 112, 4096, 0); /* written again */
		CHECK(vm_file_until(NC_UTC_SYNCHRONISED, 7000000));
	} else {
		g = vm_good(40000000); /* another writer's page, 40 ms off */
		vm_file(&g, 112, 4096, 1);
		usleep(50000); /* two refreshes: the new file read */
		/* and only that one: every read for 100 ms holds its truth */
		for (int i = 0; i < 100; i++) {
			struct nc_utc u;
			int64_t a = real_ns();
			CHECK(nc_utc_now(&u) == NC_UTC_SYNCHRONISED);
			check_holds(&u, a, real_ns(), 40000000);
			usleep(1000);
		}
		fprintf(stderr, "case: the file replaced under the path: its page followed\n");
	}
	unlink(vm_path);
}

static const struct child_case cases[] = {
	{"vmclock_good", case_vmclock_good, NULL, NULL, NULL},
	{"vmclock_moves", case_vmclock_moves, NULL, NULL, NULL},
	{"vmclock_stuck_odd", case_vmclock_bad, "0", NULL, NULL},
	{"vmclock_other_counter", case_vmclock_bad, "1", NULL, NULL},
	{"vmclock_tai", case_vmclock_bad, "2", NULL, NULL},
	{"vmclock_unreliable", case_vmclock_bad, "3", NULL, NULL},
	{"vmclock_no_maxerror", case_vmclock_bad, "4", NULL, NULL},
	{"vmclock_foreign", case_vmclock_bad, "5", NULL, NULL},
	{"vmclock_file_truncated", case_vmclock_file, "truncated", NULL, NULL},
	{"vmclock_file_replaced", case_vmclock_file, "replaced", NULL, NULL},
	{"vmclock_file_v104", case_vmclock_file, "v104", NULL, NULL},
	{"vmclock_file_huge_time", case_vmclock_file, "huge_time", NULL, NULL},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	return child_program("test_utc_vmclock", argc, argv, NULL, 0, cases, NCASES, NULL, 0);
}
