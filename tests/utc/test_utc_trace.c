/* SPDX-License-Identifier: MIT */
/* Traces and UTC (src/trace/ with src/utc/): each sync record's interval
 * holds the truth its source stated when it was written; intervals of
 * concurrent writers; two machines' traces, each with its own offset from
 * UTC, merged in the right order. */
#include "utc_fixtures.h"

/* Every event's interval holds REALTIME + 1.5 ms (a truth inside both of
 * the segment's bounds, 5 ms then 2 ms), is
 * no wider than the bound the segment stated, grown at its drift (15 ppm)
 * over the test, plus the tie and the conversion's error the reader
 * states; the second half's figures (2 ms) are followed.  The same file
 * read as format 1.1 (before the UTC words): unknown, never a figure. */
static void case_trace_intervals(const char *arg)
{
	(void)arg;
	struct cbseg g = cb_good(5000000);
	cb_make(&g);
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "50", 1);
	setenv("NANOCLOCK_SHARED", "off", 1);
	char path[80];
	snprintf(path, sizeof(path), "/tmp/nc-utc-trace-%d", (int)getpid());
	/* the truth is REALTIME + 1.5 ms: a recording across a step of the
	 * clock by another process is made again (tests/clockstep.h) */
	for (int tries = 0;; tries++) {
		struct clockstep cs;
		clockstep_begin(&cs, 70000000);
		unlink(path);
		record(path, 400, 1000, &g, 2000000);
		if (clockstep_span_calm(&cs, 70000000))
			break;
		if (tries == 11) {
			fprintf(stderr, "case: 12 recordings, each across a set of the clock by another "
				"process: nothing to judge\n");
			CHECK(0);
		}
		g = cb_good(5000000);
		munmap((void *)(uintptr_t)cb_map, 80);
		cb_make(&g);
		nc_utc_stop();
		CHECK(nc_utc_start() == 0);
	}
	struct nc_utc_status s;
	nc_get_utc_status(&s);
	struct nc_trace_reader *r;
	char why[200];
	CHECK(nc_trace_read_file(&r, path, why, sizeof(why)) == 0);
	struct nc_trace_info in;
	nc_trace_read_info(r, &in);
	CHECK(in.version_minor >= 2);
	struct nc_trace_merge *m;
	CHECK(nc_trace_merge_open(&m, &r, 1) == 0);
	struct nc_trace_rec e, prev;
	struct nc_utc u, pu = {0}; /* set before its first use (n > 0) */
	int n = 0, late = 0;
	double widest = 0, last_hw = 0;
	while (nc_trace_merge_next(m, &e)) {
		CHECK(nc_trace_read_utc(r, e.ticks, &u) == NC_UTC_SYNCHRONISED);
		CHECK(u.source == NC_UTC_SRC_CLOCKBOUND && u.unix_ns == e.unix_ns);
		if (n > 0)
			check_holds(&pu, (int64_t)prev.arg, (int64_t)e.arg, 1500000);
		double hw = (double)(u.latest_ns - u.unix_ns);
		double lo = (double)(u.unix_ns - u.earliest_ns);
		if (lo > hw)
			hw = lo;
		/* stated: the bound, its drift over the run (< 2 s), the tie,
		 * the conversion (half the widest anchor + 1 ns), rounding */
		double allowed = 5e6 + 15e-6 * 2e9 + s.tie_ns + 200 + in.max_anchor_halfwidth_ns + 4;
		if (hw > allowed) {
			fprintf(stderr, "case: half width %.0f ns above the stated %.0f\n", hw, allowed);
			_exit(1);
		}
		if (hw > widest)
			widest = hw;
		if (n > 300 && hw < 2.5e6) /* the 2 ms figures, once asked (50 ms) */
			late++;
		last_hw = hw;
		prev = e;
		pu = u;
		n++;
	}
	nc_trace_merge_close(m);
	nc_trace_read_close(r);
	fprintf(stderr, "case: %d events, each holding REALTIME + 1.5 ms; widest half width %.0f ns, "
			"last %.0f ns (%d of the last 100 on the 2 ms figures)\n",
		n, widest, last_hw, late);
	CHECK(n == 401 && late >= 90);
	/* the same bytes as a 1.1 file: the reader takes no UTC words */
	int fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	unsigned char minor = 1;
	CHECK(pwrite(fd, &minor, 1, 10) == 1);
	close(fd);
	CHECK(nc_trace_read_file(&r, path, why, sizeof(why)) == 0);
	CHECK(nc_trace_merge_open(&m, &r, 1) == 0);
	n = 0;
	while (nc_trace_merge_next(m, &e)) {
		CHECK(nc_trace_read_utc(r, e.ticks, &u) == NC_UTC_UNKNOWN);
		CHECK(u.earliest_ns == INT64_MIN && u.latest_ns == INT64_MAX);
		n++;
	}
	nc_trace_merge_close(m);
	nc_trace_read_close(r);
	CHECK(n == 401);
	unlink(path);
	unlink(cb_path);
}

/* `nanoclock trace export --format csv a b` (tests/run.h), its output to
 * read line by line; its exit status in rc */
static FILE *export_csv(const char *a, const char *b, int *rc)
{
	static char out[1 << 20];
	char tool[4200];
	CHECK(run_built("nanoclock", tool, sizeof(tool)) == 0);
	const char *args[] = {"trace", "export", "--format", "csv", a, b, NULL};
	*rc = run_capture(tool, args, NULL, NULL, NULL, out, sizeof(out));
	size_t n = strlen(out);
	FILE *p = fmemopen(out, n ? n : 1, "r"); /* (a size of 0 is refused) */
	CHECK(p != NULL);
	return p;
}

/* Two machines' traces (the second file's host name changed), the second
 * recorded right after the first, with a 5 ms bound: `nanoclock trace
 * export` in CSV, Chrome JSON and CTF (babeltrace2) marks concurrent
 * exactly the events whose interval overlaps one of the other machine's,
 * computed here from the exported intervals; some are, some are not. */
static void case_trace_concurrent(const char *arg)
{
	(void)arg;
	struct cbseg g = cb_good(5000000);
	cb_make(&g);
	setenv("NANOCLOCK_SHARED", "off", 1);
	char a[80], b[80];
	snprintf(a, sizeof(a), "/tmp/nc-utc-a-%d", (int)getpid());
	snprintf(b, sizeof(b), "/tmp/nc-utc-b-%d", (int)getpid());
	unlink(a);
	unlink(b);
	/* both open first: b's first event comes one gap after a's last (a
	 * trace's close and open between them took tens of milliseconds under
	 * valgrind, and no event was concurrent) */
	struct nc_trace *ta, *tb;
	struct nc_trace_buf *ba, *bb;
	CHECK(nc_trace_open(&ta, a, NULL) == 0 && nc_trace_open(&tb, b, NULL) == 0);
	CHECK(nc_trace_thread_start(ta, "main", &ba) == 0 && nc_trace_thread_start(tb, "main", &bb) == 0);
	for (int i = 0; i < 200; i++) {
		nc_trace_instant(i < 100 ? ba : bb, 1, (uint64_t)real_ns());
		usleep(500);
	}
	nc_trace_instant(ba, 2, (uint64_t)real_ns());
	nc_trace_instant(bb, 2, (uint64_t)real_ns());
	nc_trace_thread_end(ba);
	nc_trace_thread_end(bb);
	CHECK(nc_trace_close(ta) == 0 && nc_trace_close(tb) == 0);
	/* the host name: the clock-domain record's payload at 176, after the
	 * file header (24) and the record header (8) */
	int fd = open(b, O_RDWR);
	CHECK(fd >= 0);
	char host[64] = "another-machine";
	CHECK(pwrite(fd, host, sizeof(host), 24 + 8 + 176) == (ssize_t)sizeof(host));
	close(fd);
	int rc;
	FILE *p = export_csv(a, b, &rc);
	enum { MAX = 400 };
	static int64_t E[MAX], L[MAX];
	static int file[MAX], conc[MAX];
	char line[1024];
	int n = 0;
	CHECK(fgets(line, sizeof(line), p) != NULL && strstr(line, ",utc_earliest_ns,utc_latest_ns,utc_status,concurrent"));
	while (n < MAX && fgets(line, sizeof(line), p)) {
		/* file is the first field; the last four are the UTC ones */
		char *f[32], whole[sizeof(line)];
		int nf = 0;
		memcpy(whole, line, sizeof(line));
		for (char *q = line, *s; nf < 32 && (s = strsep(&q, ",")); )
			f[nf++] = s;
		if (nf < 17)
			fprintf(stderr, "case: the export's line %d has %d fields: %s\n", n + 2, nf, whole);
		CHECK(nf >= 17);
		file[n] = atoi(f[0]);
		E[n] = strtoll(f[nf - 4], NULL, 10);
		L[n] = strtoll(f[nf - 3], NULL, 10);
		CHECK(strcmp(f[nf - 2], "synchronised") == 0);
		conc[n] = atoi(f[nf - 1]);
		n++;
	}
	CHECK(fclose(p) == 0 && rc == 0);
	CHECK(n == 202);
	int marked = 0, wrong = 0;
	for (int i = 0; i < n; i++) {
		int want = 0;
		for (int j = 0; j < n && !want; j++)
			want = file[j] != file[i] && E[j] <= L[i] && E[i] <= L[j];
		marked += want;
		if (want != conc[i]) {
			fprintf(stderr, "case: event %d (file %d, [%lld, %lld]) marked %d, should be %d\n", i,
				file[i], (long long)E[i], (long long)L[i], conc[i], want);
			wrong++;
		}
	}
	fprintf(stderr, "case: %d events of two machines, %d concurrent (intervals overlapping the other's), "
			"all marked as such\n", n, marked);
	CHECK(wrong == 0 && marked > 0 && marked < n);
	unlink(a);
	unlink(b);
	unlink(cb_path);
}

/* Two machines in two processes: B's CLOCK_REALTIME (as its library reads
 * it) 3 ms slow, both under a 5 ms bound (which holds: 3 < 5).  They take
 * turns (a token through pipes), each event's argument the true
 * CLOCK_REALTIME just before it, the turns 0.2 to 20 ms apart.  In the
 * export of both: every interval holds its truth; every pair of events of
 * the two whose intervals do not overlap comes in its true order; pairs
 * the merge on Unix time puts out of their true order (B's slow clock)
 * exist, and all of them overlap, their events marked concurrent. */
static void take_turns(int me, int in, int out, const char *path)
{
	static const int gap_us[] = {200, 1000, 3000, 8000, 20000};
	if (me == 1) {
		__atomic_store_n(&sim_offset, -3000000, __ATOMIC_RELEASE);
		steppable_realtime();
	}
	struct nc_trace *t;
	struct nc_trace_buf *b;
	CHECK(nc_trace_open(&t, path, NULL) == 0);
	CHECK(nc_trace_thread_start(t, me ? "b" : "a", &b) == 0);
	char c;
	for (int i = 0; i < 40; i++) {
		if (me == 1 || i > 0)
			CHECK(read(in, &c, 1) == 1);
		nc_trace_instant(b, 1, (uint64_t)real_ns());
		usleep((useconds_t)gap_us[i % 5]);
		CHECK(write(out, "t", 1) == 1);
	}
	if (me == 0)
		CHECK(read(in, &c, 1) == 1);
	nc_trace_thread_end(b);
	CHECK(nc_trace_close(t) == 0);
	nc_utc_stop();
	_exit(0);
}

static void case_trace_two_offsets(const char *arg)
{
	(void)arg;
	struct cbseg g = cb_good(5000000);
	cb_make(&g);
	setenv("NANOCLOCK_SHARED", "off", 1);
	char f[2][80];
	/* the truth is REALTIME (+ 3 ms for B): a recording across a step of
	 * the clock by another process is made again (tests/clockstep.h) */
	for (int tries = 0;; tries++) {
		struct clockstep cs;
		clockstep_begin(&cs, 1020000000); /* the default period: the children's */
		int ab[2], ba[2];
		CHECK(pipe(ab) == 0 && pipe(ba) == 0);
		pid_t kid[2];
		for (int k = 0; k < 2; k++) {
			snprintf(f[k], sizeof(f[k]), "/tmp/nc-utc-m%d-%d", k, (int)getpid());
			unlink(f[k]);
			kid[k] = fork();
			CHECK(kid[k] >= 0);
			if (kid[k] == 0) {
				alarm(30);
				take_turns(k, k ? ab[0] : ba[0], k ? ba[1] : ab[1], f[k]);
			}
		}
		for (int k = 0; k < 2; k++) {
			int st;
			CHECK(waitpid(kid[k], &st, 0) == kid[k] && WIFEXITED(st) && WEXITSTATUS(st) == 0);
		}
		for (int k = 0; k < 2; k++) {
			close(ab[k]);
			close(ba[k]);
		}
		if (clockstep_span_calm(&cs, 1020000000))
			break;
		/* a recording takes about a second: beside a daemon that sets
		 * the clock every 10 s (make check-disturbed), most are calm */
		if (tries == 11) {
			fprintf(stderr, "case: 12 recordings, each across a set of the clock by another "
				"process: nothing to judge\n");
			CHECK(0);
		}
	}
	int fd = open(f[1], O_RDWR);
	CHECK(fd >= 0);
	char host[64] = "machine-b";
	CHECK(pwrite(fd, host, sizeof(host), 24 + 8 + 176) == (ssize_t)sizeof(host));
	close(fd);
	int rc;
	FILE *p = export_csv(f[0], f[1], &rc);
	enum { N = 80 };
	int64_t truth[N], E[N], L[N];
	int file[N], conc[N], n = 0;
	char line[1024];
	CHECK(fgets(line, sizeof(line), p) != NULL);
	while (n < N && fgets(line, sizeof(line), p)) {
		char *fl[32];
		int nf = 0;
		for (char *q = line, *s; nf < 32 && (s = strsep(&q, ","));)
			fl[nf++] = s;
		CHECK(nf >= 17 && strcmp(fl[nf - 2], "synchronised") == 0);
		file[n] = atoi(fl[0]);
		truth[n] = strtoll(fl[8], NULL, 10);
		E[n] = strtoll(fl[nf - 4], NULL, 10);
		L[n] = strtoll(fl[nf - 3], NULL, 10);
		conc[n] = atoi(fl[nf - 1]);
		n++;
	}
	CHECK(fclose(p) == 0 && rc == 0 && n == N);
	int ordered = 0, swapped = 0, bad = 0;
	for (int i = 0; i < n; i++) {
		/* the truth: after this event's argument, before the next event's */
		int64_t next = INT64_MAX;
		for (int j = 0; j < n; j++)
			if (truth[j] > truth[i] && truth[j] < next)
				next = truth[j];
		if (!(E[i] <= next && L[i] >= truth[i])) {
			fprintf(stderr, "case: row %d [%lld, %lld] misses its truth %lld..%lld\n", i,
				(long long)E[i], (long long)L[i], (long long)truth[i], (long long)next);
			bad++;
		}
		int overlaps = 0;
		for (int j = 0; j < n; j++) {
			if (file[j] == file[i])
				continue;
			int ov = E[j] <= L[i] && E[i] <= L[j];
			overlaps |= ov;
			if (j < i)
				continue;
			if ((truth[i] < truth[j]) != (i < j)) {
				swapped++;
				if (!ov) {
					fprintf(stderr, "case: rows %d and %d out of true order, not overlapping\n", i, j);
					bad++;
				}
			} else if (!ov) {
				ordered++;
			}
		}
		if (overlaps != conc[i]) {
			fprintf(stderr, "case: row %d marked %d, overlaps %d\n", i, conc[i], overlaps);
			bad++;
		}
	}
	fprintf(stderr, "case: 80 events of two machines (B 3 ms slow, 5 ms bounds): every interval holds "
			"its truth; %d pairs ordered by their intervals, all in true order; %d pairs the "
			"merge put out of true order, all concurrent\n", ordered, swapped);
	CHECK(bad == 0 && ordered > 0 && swapped > 0);
	unlink(f[0]);
	unlink(f[1]);
	unlink(cb_path);
}

static const struct child_case cases[] = {
	{"trace_two_offsets", case_trace_two_offsets, NULL, NULL, NULL},
	{"trace_intervals", case_trace_intervals, NULL, NULL, NULL},
	{"trace_concurrent", case_trace_concurrent, NULL, NULL, NULL},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	return child_program("test_utc_trace", argc, argv, NULL, 0, cases, NCASES, NULL, 0);
}
