/* SPDX-License-Identifier: MIT */
/* Traces written and read back in this process: exact reconstruction of
 * injected stamps, the compact field's wrap rules, losses (drop, overwrite,
 * signal-handler nesting, after the end), merge order within and across
 * files, and conversion accuracy on the real clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "trace_util.h"

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#define TWO32 (UINT64_C(1) << 32)

/* events of one small session with injected stamps, read back */
static long roundtrip(const uint64_t *stamps, size_t n, unsigned flags, struct nc_trace_info *in,
		      struct nc_trace_rec **ev, struct nc_trace_reader **r)
{
	char *p = tmp_path("trace");
	struct nc_trace *t = open_small(p, 4096, 4, NC_TRACE_DROP, flags);
	assert_non_null(t);
	struct nc_trace_buf *b;
	assert_int_equal(nc_trace_thread_start(t, "inject", &b), 0);
	for (size_t i = 0; i < n; i++)
		nc_trace_event_at(b, stamps[i], NC_TRACE_INSTANT, (unsigned)i, stamps[i]);
	nc_trace_thread_end(b);
	assert_int_equal(nc_trace_close(t), 0);
	const char *paths[1] = {p};
	long k = read_merged(paths, 1, r, ev);
	nc_trace_read_info(r[0], in);
	unlink(p);
	free(p);
	return k;
}

static void check_exact(const uint64_t *stamps, size_t n, const struct nc_trace_rec *ev, long k)
{
	assert_int_equal(k, (long)n);
	/* one thread: merge order is the thread's order */
	for (size_t i = 0; i < n; i++) {
		if (ev[i].ticks != stamps[i] || ev[i].arg != stamps[i])
			fail_msg("event %zu: ticks %llu, stamped %llu", i,
				 (unsigned long long)ev[i].ticks, (unsigned long long)stamps[i]);
		assert_int_equal(ev[i].seq, i);
		assert_int_equal(ev[i].id, i);
	}
}

/* Stamps far apart, across 2^32 boundaries, going back, wrapping the
 * 64-bit counter: every one comes back exactly. */
static void test_stamps_exact(void **state)
{
	(void)state;
	uint64_t s[] = {
		1000, 1001, 1001, TWO32 - 1, TWO32, TWO32 + 1,  /* low bits wrap */
		3 * TWO32 + 5,                                  /* gap > 2^32 */
		4 * TWO32 + 5,                                  /* gap = 2^32: same low bits */
		5 * TWO32 + 4,                                  /* gap = 2^32 - 1 */
		6 * TWO32 + 2,                                  /* gap = 2^32 - 2 */
		6 * TWO32 + 1,                                  /* back by one */
		6 * TWO32 - 1000000,                            /* back further */
		UINT64_MAX - 5, UINT64_MAX, 3,                  /* the counter wraps */
		123456789012345, 123456789012345 + 17,
	};
	size_t n = sizeof(s) / sizeof(s[0]);
	struct nc_trace_info in;
	struct nc_trace_rec *ev;
	struct nc_trace_reader *r[1];
	long k = roundtrip(s, n, 0, &in, &ev, r);
	check_exact(s, n, ev, k);
	assert_true(in.closed);
	assert_true(in.max_delta_ticks < TWO32);
	free(ev);
	nc_trace_read_close(r[0]);
	/* the same with sync records only where the compact field demands one */
	k = roundtrip(s, n, NC_TRACE_NO_PERIODIC, &in, &ev, r);
	check_exact(s, n, ev, k);
	free(ev);
	nc_trace_read_close(r[0]);
}

/* The boundary of the wrap rule, without periodic sync records: a gap of
 * 2^32 - 2 ticks fits the compact field and needs no sync record; 2^32 - 1
 * and more get one (so no sync "between" the events is ever missing). */
static void test_wrap_boundary(void **state)
{
	(void)state;
	uint64_t base = 5 * TWO32 + 77;
	struct {
		uint64_t gap;
		uint64_t extra_syncs;
	} cases[] = {{TWO32 - 2, 0}, {TWO32 - 1, 1}, {TWO32, 1}, {TWO32 + 1, 1}, {7 * TWO32 + 3, 1}};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		uint64_t s[2] = {base, base + cases[c].gap};
		struct nc_trace_info in;
		struct nc_trace_rec *ev;
		struct nc_trace_reader *r[1];
		long k = roundtrip(s, 2, NC_TRACE_NO_PERIODIC, &in, &ev, r);
		check_exact(s, 2, ev, k);
		struct nc_trace_thread_info ti;
		assert_int_equal(nc_trace_read_thread(r[0], 0, &ti), 0);
		/* first sync, the base for the first event, the last one: 3 + extra */
		if (ti.syncs != 3 + cases[c].extra_syncs)
			fail_msg("gap %llu: %llu sync records", (unsigned long long)cases[c].gap,
				 (unsigned long long)ti.syncs);
		free(ev);
		nc_trace_read_close(r[0]);
	}
}

/* Drop mode: a full ring drops and counts; after a flush the next block
 * starts at the right sequence number, so the loss is a visible gap. */
static void test_overflow_drop(void **state)
{
	(void)state;
	char *p = tmp_path("drop");
	struct nc_trace *t = open_small(p, 512, 2, NC_TRACE_DROP, 0);
	assert_non_null(t);
	struct nc_trace_buf *b;
	assert_int_equal(nc_trace_thread_start(t, "dropper", &b), 0);
	/* per block: (512 - 48 header - 88 sync) / 16 = 23 events; the first
	 * block's sync is the thread's first, the second's its block start */
	const long per = (512 - NC__TR_BLOCK_HDR - NC__TR_SYNC_WORDS_UTC * 8) / 16, total = 1000, after = 10;
	uint64_t t0 = nc_ticks(); /* within a sync period of the first sync record */
	for (long i = 0; i < total; i++)
		nc_trace_event_at(b, t0 + (uint64_t)i, NC_TRACE_INSTANT, 1, (uint64_t)i);
	struct nc_trace_counts c;
	nc_trace_get_counts(b, &c);
	assert_int_equal(c.events, total);
	assert_int_equal(c.dropped, total - 2 * per);
	assert_int_equal(nc_trace_flush(t), 0);
	for (long i = 0; i < after; i++)
		nc_trace_event_at(b, t0 + 5000 + (uint64_t)i, NC_TRACE_INSTANT, 2, (uint64_t)(total + i));
	nc_trace_thread_end(b);
	assert_int_equal(nc_trace_close(t), 0);
	const char *paths[1] = {p};
	struct nc_trace_reader *r[1];
	struct nc_trace_rec *ev;
	long k = read_merged(paths, 1, r, &ev);
	assert_int_equal(k, 2 * per + after);
	for (long i = 0; i < k; i++) /* seq = the index the writer appended it at */
		assert_int_equal(ev[i].seq, ev[i].arg);
	struct nc_trace_thread_info ti;
	nc_trace_read_thread(r[0], 0, &ti);
	assert_int_equal(ti.gaps, 1);
	assert_int_equal(ti.missing, total - 2 * per);
	assert_int_equal(ti.counts.dropped, total - 2 * per);
	assert_int_equal(ti.counts.events, total + after);
	assert_int_equal(ti.last_seq, total + after - 1);
	free(ev);
	nc_trace_read_close(r[0]);
	unlink(p);
	free(p);
}

/* Overwrite mode: the newest blocks survive; what was overwritten is
 * counted and is the gap at the start of the sequence. */
static void test_overflow_overwrite(void **state)
{
	(void)state;
	char *p = tmp_path("ovw");
	struct nc_trace *t = open_small(p, 512, 4, NC_TRACE_OVERWRITE, 0);
	assert_non_null(t);
	struct nc_trace_buf *b;
	assert_int_equal(nc_trace_thread_start(t, "recorder", &b), 0);
	const long total = 1000;
	uint64_t t0 = nc_ticks();
	for (long i = 0; i < total; i++)
		nc_trace_event_at(b, t0 + (uint64_t)i, NC_TRACE_INSTANT, 1, (uint64_t)i);
	nc_trace_thread_end(b);
	assert_int_equal(nc_trace_close(t), 0);
	const char *paths[1] = {p};
	struct nc_trace_reader *r[1];
	struct nc_trace_rec *ev;
	long k = read_merged(paths, 1, r, &ev);
	assert_true(k > 50 && k <= 4 * 25);
	for (long i = 0; i < k; i++) {
		assert_int_equal(ev[i].seq, ev[i].arg);
		assert_int_equal(ev[i].ticks, t0 + ev[i].arg);
	}
	assert_int_equal(ev[k - 1].arg, total - 1); /* the newest survive */
	struct nc_trace_thread_info ti;
	nc_trace_read_thread(r[0], 0, &ti);
	assert_int_equal(ti.first_seq, ev[0].seq);
	assert_int_equal(ti.counts.overwritten, ev[0].seq);
	assert_int_equal(ti.missing, ev[0].seq); /* the gap at the start */
	assert_int_equal(ti.counts.overwritten + (uint64_t)k, total);
	free(ev);
	nc_trace_read_close(r[0]);
	unlink(p);
	free(p);
}

/* An append from a signal handler that interrupts an append of the same
 * buffer is dropped and counted; after the end, appends are counted as
 * late; a NULL buffer records nothing. */
static void test_nested_and_late(void **state)
{
	(void)state;
	char *p = tmp_path("nest");
	struct nc_trace *t = open_small(p, 4096, 4, NC_TRACE_DROP, 0);
	struct nc_trace_buf *b;
	assert_int_equal(nc_trace_thread_start(t, "n", &b), 0);
	nc_trace_instant(b, 1, 1);
	/* what a handler sees in the middle of an append */
	__atomic_store_n(&b->busy, 1, __ATOMIC_RELAXED);
	nc_trace_instant(b, 2, 2);
	__atomic_store_n(&b->busy, 0, __ATOMIC_RELAXED);
	nc_trace_instant(b, 3, 3);
	nc_trace_instant(NULL, 4, 4);
	nc_trace_thread_end(b);
	nc_trace_instant(b, 5, 5);
	struct nc_trace_counts c;
	nc_trace_get_counts(b, &c);
	assert_int_equal(c.nested, 1);
	assert_int_equal(c.late, 1);
	assert_int_equal(c.events, 3); /* the nested one took a sequence number */
	assert_int_equal(nc_trace_close(t), 0);
	unlink(p);
	free(p);
}

/* A real signal storm: a timer's handler appends to the buffer the main
 * loop appends to.  Whatever interleaving happened, the file decodes,
 * every recorded event is intact, every append took a sequence number,
 * and the recorded events plus the gaps are all of them. */
static struct nc_trace_buf *sig_buf;
static volatile sig_atomic_t sig_count;

static void on_alarm(int sig)
{
	(void)sig;
	nc_trace_instant(sig_buf, 9, 0xabcdef);
	sig_count++;
}

static void test_signal_storm(void **state)
{
	(void)state;
	char *p = tmp_path("sig");
	struct nc_trace *t = open_small(p, 4096, 64, NC_TRACE_OVERWRITE, 0);
	assert_non_null(t);
	assert_int_equal(nc_trace_thread_start(t, "sig", &sig_buf), 0);
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, &old);
	struct itimerval it = {{0, 50}, {0, 50}}, off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_PROF, &it, NULL);
	long n = 0;
	int64_t start = nc__mono_raw_ns();
	/* 200 ms, or until 50 signals came (the profiling timer fires at the
	 * kernel's tick: fewer on a slow or busy machine), at most 10 s */
	while ((nc__mono_raw_ns() - start < 200000000 || sig_count < 50) &&
	       nc__mono_raw_ns() - start < 10000000000 && sig_count < 2000) {
		nc_trace_instant(sig_buf, 1, (uint64_t)n);
		n++;
	}
	setitimer(ITIMER_PROF, &off, NULL);
	/* a signal still pending is discarded, never delivered to the default
	 * action (which ends the process) */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPROF, &sa, NULL);
	(void)old;
	struct nc_trace_counts c;
	nc_trace_get_counts(sig_buf, &c);
	long sigs = sig_count;
	if (sigs < 50) /* a storm that never came tests nothing */
		fail_msg("only %ld signals delivered in 10 s", sigs);
	assert_int_equal(c.events, (uint64_t)(n + sigs));
	nc_trace_thread_end(sig_buf);
	assert_int_equal(nc_trace_close(t), 0);
	const char *paths[1] = {p};
	struct nc_trace_reader *r[1];
	struct nc_trace_rec *ev;
	long k = read_merged(paths, 1, r, &ev);
	assert_true(k > 0);
	uint64_t last = 0;
	for (long i = 0; i < k; i++) {
		if (ev[i].id == 9) {
			assert_int_equal(ev[i].arg, 0xabcdef);
		} else {
			assert_int_equal(ev[i].id, 1);
			if (i > 0 && ev[i].arg <= last && last != 0)
				fail_msg("main-loop events out of order: %llu after %llu",
					 (unsigned long long)ev[i].arg, (unsigned long long)last);
			last = ev[i].arg;
		}
		if (i > 0)
			assert_true(ev[i].seq > ev[i - 1].seq);
	}
	struct nc_trace_thread_info ti;
	nc_trace_read_thread(r[0], 0, &ti);
	assert_int_equal(ti.events + ti.missing, c.events);
	assert_int_equal(ti.counts.nested, c.nested);
	printf("      %ld main-loop events, %ld from the handler, %llu of them dropped nested\n", n, sigs,
	       (unsigned long long)c.nested);
	free(ev);
	nc_trace_read_close(r[0]);
	unlink(p);
	free(p);
}

/* Equal stamps in two threads: the global sequence number orders them
 * when recorded; otherwise the thread number does. */
static void merge_two(unsigned flags, const unsigned *expect_thread, const uint64_t *expect_ticks)
{
	char *p = tmp_path("merge");
	struct nc_trace *t = open_small(p, 4096, 4, NC_TRACE_DROP, flags);
	struct nc_trace_buf *a, *b;
	assert_int_equal(nc_trace_thread_start(t, "A", &a), 0);
	assert_int_equal(nc_trace_thread_start(t, "B", &b), 0);
	/* appended in this order (one OS thread may own both buffers) */
	nc_trace_event_at(a, 100, NC_TRACE_INSTANT, 0, 0);
	nc_trace_event_at(b, 200, NC_TRACE_INSTANT, 0, 0);
	nc_trace_event_at(b, 300, NC_TRACE_INSTANT, 0, 0);
	nc_trace_event_at(a, 300, NC_TRACE_INSTANT, 0, 0);
	nc_trace_event_at(a, 300, NC_TRACE_INSTANT, 0, 0);
	nc_trace_event_at(b, 400, NC_TRACE_INSTANT, 0, 0);
	nc_trace_event_at(a, 500, NC_TRACE_INSTANT, 0, 0);
	nc_trace_thread_end(a);
	nc_trace_thread_end(b);
	assert_int_equal(nc_trace_close(t), 0);
	const char *paths[1] = {p};
	struct nc_trace_reader *r[1];
	struct nc_trace_rec *ev;
	long k = read_merged(paths, 1, r, &ev);
	assert_int_equal(k, 7);
	for (long i = 0; i < k; i++) {
		if (ev[i].thread != expect_thread[i] || ev[i].ticks != expect_ticks[i])
			fail_msg("position %ld: thread %u at %llu, expected thread %u at %llu", i,
				 ev[i].thread, (unsigned long long)ev[i].ticks, expect_thread[i],
				 (unsigned long long)expect_ticks[i]);
		if (flags & NC_TRACE_GSEQ) {
			assert_true(ev[i].gseq != UINT64_MAX);
			if (i > 0 && ev[i].ticks == ev[i - 1].ticks)
				assert_true(ev[i].gseq > ev[i - 1].gseq);
		}
	}
	free(ev);
	nc_trace_read_close(r[0]);
	unlink(p);
	free(p);
}

static void test_merge_ties(void **state)
{
	(void)state;
	const uint64_t ticks[7] = {100, 200, 300, 300, 300, 400, 500};
	const unsigned by_gseq[7] = {0, 1, 1, 0, 0, 1, 0};
	const unsigned by_thread[7] = {0, 1, 0, 0, 1, 1, 0};
	merge_two(NC_TRACE_GSEQ, by_gseq, ticks);
	merge_two(0, by_thread, ticks);
}

/* Real threads taking turns under a lock, each stamping with an ordered
 * read inside it: the merge puts every event once, each thread's in its
 * order, and the whole in the lock's order except where two stamps are
 * closer than the CPUs' counters may disagree. */
#define NTHR 4
#define PER 3000
static pthread_mutex_t turn_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t turn;
static struct nc_trace *turn_t;

static void *turn_thread(void *arg)
{
	(void)arg;
	struct nc_trace_buf *b;
	if (nc_trace_thread_start(turn_t, "turns", &b) != 0)
		return (void *)1;
	for (int i = 0; i < PER; i++) {
		pthread_mutex_lock(&turn_mu);
		nc_trace_event_at(b, nc_ticks_begin(), NC_TRACE_INSTANT, 1, turn++);
		pthread_mutex_unlock(&turn_mu);
	}
	nc_trace_thread_end(b);
	return NULL;
}

static void test_merge_threads(void **state)
{
	(void)state;
	char *p = tmp_path("thr");
	struct nc_trace_config c;
	nc_trace_default_config(&c);
	c.flush_ms = 1; /* the flush thread runs beside the writers */
	c.block_bytes = 1024;
	c.blocks = 4096;
	assert_int_equal(nc_trace_open(&turn_t, p, &c), 0);
	pthread_t th[NTHR];
	for (int i = 0; i < NTHR; i++)
		assert_int_equal(pthread_create(&th[i], NULL, turn_thread, NULL), 0);
	for (int i = 0; i < NTHR; i++) {
		void *rv;
		pthread_join(th[i], &rv);
		assert_null(rv);
	}
	assert_int_equal(nc_trace_close(turn_t), 0);
	const char *paths[1] = {p};
	struct nc_trace_reader *r[1];
	struct nc_trace_rec *ev;
	long k = read_merged(paths, 1, r, &ev);
	assert_int_equal(k, NTHR * PER);
	char *seen = calloc(k > 0 ? (size_t)k : 1, 1);
	uint64_t prev_seq[NTHR] = {0}, slack = (uint64_t)(nc_ticks_per_second() * 2e-6);
	int have[NTHR] = {0};
	long inversions = 0;
	for (long i = 0; i < k; i++) {
		assert_true(ev[i].arg < (uint64_t)k && !seen[ev[i].arg]);
		seen[ev[i].arg] = 1;
		assert_true(ev[i].thread < NTHR);
		if (have[ev[i].thread] && ev[i].seq <= prev_seq[ev[i].thread])
			fail_msg("thread %u's events out of order", ev[i].thread);
		prev_seq[ev[i].thread] = ev[i].seq;
		have[ev[i].thread] = 1;
		if (i > 0 && ev[i].arg < ev[i - 1].arg) {
			inversions++;
			if (ev[i].ticks - ev[i - 1].ticks > slack)
				fail_msg("lock order %llu after %llu, %llu ticks apart",
					 (unsigned long long)ev[i].arg, (unsigned long long)ev[i - 1].arg,
					 (unsigned long long)(ev[i].ticks - ev[i - 1].ticks));
		}
		if (i > 0)
			assert_true(ev[i].ticks >= ev[i - 1].ticks);
	}
	if (inversions)
		printf("      %ld lock-order inversions within %llu ticks (counters of different CPUs)\n",
		       inversions, (unsigned long long)slack);
	free(seen);
	free(ev);
	nc_trace_read_close(r[0]);
	unlink(p);
	free(p);
}

/* Two files (two sessions: as two processes would write) merge on Unix
 * time, in the order the events happened. */
static void test_merge_files(void **state)
{
	(void)state;
	char *p[2] = {tmp_path("fa"), tmp_path("fb")};
	struct nc_trace *t[2];
	struct nc_trace_buf *b[2];
	for (int i = 0; i < 2; i++) {
		t[i] = open_small(p[i], 4096, 8, NC_TRACE_DROP, 0);
		assert_non_null(t[i]);
		assert_int_equal(nc_trace_thread_start(t[i], i ? "b" : "a", &b[i]), 0);
	}
	const int n = 40;
	for (int i = 0; i < n; i++) {
		int f = (i * 7 + i / 3) % 2; /* an irregular interleaving */
		nc_trace_instant(b[f], 1, (uint64_t)i);
		int64_t s = nc__mono_raw_ns(); /* 20 us: well above the conversion's error */
		while (nc__mono_raw_ns() - s < 20000)
			;
	}
	for (int i = 0; i < 2; i++) {
		nc_trace_thread_end(b[i]);
		assert_int_equal(nc_trace_close(t[i]), 0);
	}
	const char *paths[2] = {p[0], p[1]};
	struct nc_trace_reader *r[2];
	struct nc_trace_rec *ev;
	long k = read_merged(paths, 2, r, &ev);
	assert_int_equal(k, n);
	for (int i = 0; i < n; i++) {
		assert_int_equal(ev[i].arg, (uint64_t)i);
		assert_int_equal(ev[i].file, (unsigned)((i * 7 + i / 3) % 2));
	}
	free(ev);
	for (int i = 0; i < 2; i++) {
		nc_trace_read_close(r[i]);
		unlink(p[i]);
		free(p[i]);
	}
}

/* the kernel's rate correction now, in ppm: its frequency and its tick
 * (each us of a 10,000 us tick is 100 ppm) */
static double kernel_freq_ppm(void)
{
	struct timex tx;
	memset(&tx, 0, sizeof(tx));
	if (adjtimex(&tx) < 0)
		return 0;
	long nominal = nc__tick_nominal_us();
	return (double)tx.freq / 65536.0 + (nominal > 0 ? (double)(tx.tick - nominal) / (double)nominal * 1e6 : 0);
}

static int64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC_RAW, the narrowest of three brackets:
 * where it is (*at, raw) and half the bracket (*hw) */
static int64_t realtime_look(int64_t *at, int64_t *hw)
{
	int64_t best = INT64_MAX, d = 0;
	for (int k = 0; k < 3; k++) {
		int64_t a = nc__mono_raw_ns(), r = realtime_ns(), b = nc__mono_raw_ns();
		if (b - a < best)
			best = b - a, d = r - (a + (b - a) / 2), *at = a;
	}
	*hw = best / 2 + 1;
	return d;
}

/* On the real clock: each event's ns and Unix time against the library's
 * own conversion of the same stamp and CLOCK_MONOTONIC_RAW read around it.
 * Another program may step or re-tune the system clock meanwhile (make
 * check-disturbed does): the trace's Unix times then hold only what
 * docs/traces.md's limits state, which is what is checked for them. */
static void test_accuracy_real(void **state)
{
	(void)state;
	/* not while test_real_clock (another program of the suite, maybe
	 * running at once) changes the kernel's frequency: it holds the lock
	 * exclusively while it disturbs the clock */
	int lk = open("/tmp/nanoclock-test-real-clock.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (lk >= 0)
		flock(lk, LOCK_SH);
	char *p = tmp_path("acc");
	double freq0 = kernel_freq_ppm();
	struct nc_trace *t = open_small(p, 65536, 8, NC_TRACE_DROP, 0);
	assert_non_null(t);
	struct nc_trace_buf *b;
	assert_int_equal(nc_trace_thread_start(t, "acc", &b), 0);
	enum { N = 400 };
	/* looks at the system clock against CLOCK_MONOTONIC_RAW and at the
	 * kernel's frequency, before each event and after the last: where
	 * another program steps or re-tunes it */
	static int64_t before[N], after[N], unix_lib[N], off[N + 1], off_hw[N + 1], look_at[N + 1];
	static double tie_err[N], freq[N];
	for (int i = 0; i < N; i++) {
		freq[i] = kernel_freq_ppm();
		off[i] = realtime_look(&look_at[i], &off_hw[i]);
		before[i] = nc__mono_raw_ns();
		uint64_t tk = nc_ticks_begin();
		nc_trace_event_at(b, tk, NC_TRACE_INSTANT, 1, tk);
		after[i] = nc__mono_raw_ns();
		unix_lib[i] = nc_ticks_to_unix_ns(tk);
		/* what the library states its Unix time may be off the system
		 * clock by, then: on a busy machine the run outlasts the tie's
		 * period and a re-tie may be slewing a correction in, which the
		 * status at the end no longer shows */
		struct nc_unix_status sti;
		nc_get_unix_status(&sti);
		tie_err[i] = sti.tie_error_ns;
		struct timespec ts = {0, 100000}; /* 40 ms in all: several anchors */
		nanosleep(&ts, NULL);
	}
	off[N] = realtime_look(&look_at[N], &off_hw[N]);
	nc_trace_thread_end(b);
	assert_int_equal(nc_trace_close(t), 0);
	double freq_end = kernel_freq_ppm();
	const char *paths[1] = {p};
	struct nc_trace_reader *r[1];
	struct nc_trace_rec *ev;
	long k = read_merged(paths, 1, r, &ev);
	assert_int_equal(k, N);
	struct nc_trace_info in;
	nc_trace_read_info(r[0], &in);
	assert_true(in.anchors >= 2);
	struct nc_unix_status st;
	nc_get_unix_status(&st);
	/* an anchor's error is half its bracket; the slope between anchors 10 ms
	 * apart adds at most their sum over 10 ms times the distance */
	double e = 2 * in.max_anchor_halfwidth_ns + 2;
	/* the longest an event can be from the sync record before it: a
	 * record is written at the first event a sync period past the last;
	 * with records dropped (too wide), the whole run */
	double gap_ns = in.anchors_rejected ? (double)(after[N - 1] - before[0]) + 1e6
					    : (double)in.sync_period_ticks / in.hz * 1e9;
	/* docs/traces.md: a change of the kernel's frequency between two
	 * records is interpolated over, off by up to the change times the
	 * time since the earlier record */
	double dfreq = fabs(freq[0] - freq0) + fabs(freq_end - freq[N - 1]);
	for (int i = 1; i < N; i++)
		dfreq += fabs(freq[i] - freq[i - 1]);
	double widen_f = dfreq * 1e-6 * gap_ns;
	double worst_mono = 0, worst_unix = 0, worst_excess = -1e300, worst_tie = 0;
	int worst_i = 0, steps = 0, stepped_events = 0;
	for (int i = 0; i < N; i++) {
		assert_int_equal(ev[i].ticks, ev[i].arg);
		double lo = (double)before[i] - e, hi = (double)after[i] + e;
		if ((double)ev[i].mono_ns < lo || (double)ev[i].mono_ns > hi)
			fail_msg("event %d: %lld ns, CLOCK_MONOTONIC_RAW read %lld..%lld (±%.0f)", i,
				 (long long)ev[i].mono_ns, (long long)before[i], (long long)after[i], e);
		/* the library's Unix time and the trace's both follow
		 * CLOCK_REALTIME, each within its own tie: the library's as it
		 * stated it at the conversion (its status right after), the
		 * trace's within e; 1 us for the rate error over the stamp's age
		 * and the status read a moment later */
		double d = (double)(ev[i].unix_ns - unix_lib[i]);
		double du = fabs(d);
		int kept_old = 0;
		/* docs/traces.md: a step shows from the first sync record after
		 * it; until then (a sync period) the trace keeps the old offset.
		 * A step is a jump of over 1 ms, beyond both brackets, between
		 * two looks (the kernel's frequency moves them by 60 ns at most
		 * here); it happened before look j and shows by a sync period
		 * after it */
		for (int j = 1; j <= N; j++) {
			int64_t jump = off[j] - off[j - 1], noise = 1000000 + off_hw[j] + off_hw[j - 1];
			if (jump <= noise && jump >= -noise)
				continue;
			if (i == 0)
				steps++;
			if (i >= j - 1 && (double)(before[i] - look_at[j]) < gap_ns && fabs(d + (double)jump) < du) {
				du = fabs(d + (double)jump);
				kept_old = 1;
			}
		}
		stepped_events += kept_old;
		double bound_i = (tie_err[i] > st.tie_error_ns ? tie_err[i] : st.tie_error_ns) + e + 1000 +
				 widen_f;
		if (du > worst_unix)
			worst_unix = du;
		if (tie_err[i] > worst_tie)
			worst_tie = tie_err[i];
		if (du - bound_i > worst_excess) {
			worst_excess = du - bound_i;
			worst_i = i;
		}
		double mid = ((double)before[i] + (double)after[i]) / 2;
		if (fabs((double)ev[i].mono_ns - mid) > worst_mono)
			worst_mono = fabs((double)ev[i].mono_ns - mid);
	}
	if (worst_excess > 0)
		fail_msg("event %d: Unix time %.0f ns off the library's (bound %.0f: the library's stated "
			 "tie error then %.0f ns, at the end %.0f ns, anchors ±%.0f ns, frequency changes "
			 "%.3f ppm over %.0f ns; kernel frequency correction %+.3f ppm, tie %.3f s old; "
			 "%d steps during the run)",
			 worst_i, fabs((double)(ev[worst_i].unix_ns - unix_lib[worst_i])),
			 fabs((double)(ev[worst_i].unix_ns - unix_lib[worst_i])) - worst_excess,
			 tie_err[worst_i], st.tie_error_ns, in.max_anchor_halfwidth_ns, dfreq, gap_ns,
			 st.kernel_freq_ppm, st.tie_age_s, steps);
	printf("      worst |mono - reference| %.0f ns, |unix - nc_ticks_to_unix_ns| %.0f ns; anchors "
	       "±%.0f ns; library's stated tie error up to %.0f ns",
	       worst_mono, worst_unix, in.max_anchor_halfwidth_ns, worst_tie);
	if (steps || dfreq > 0)
		printf("; another program stepped the clock %d times (%d events kept the old offset) "
		       "and changed its frequency by %.3f ppm in all (widened %.0f ns)",
		       steps, stepped_events, dfreq, widen_f);
	printf("\n");
	free(ev);
	nc_trace_read_close(r[0]);
	unlink(p);
	free(p);
	if (lk >= 0)
		close(lk); /* releases the lock */
}

/* Arguments and configurations that are refused. */
static void test_api_errors(void **state)
{
	(void)state;
	struct nc_trace *t;
	struct nc_trace_config c;
	nc_trace_default_config(&c);
	assert_int_equal(nc_trace_open(NULL, "/tmp/x", NULL), NC_EINVAL);
	assert_int_equal(nc_trace_open(&t, NULL, NULL), NC_EINVAL);
	c.block_bytes = 1000;
	assert_int_equal(nc_trace_open(&t, "/tmp/x", &c), NC_ERANGE);
	nc_trace_default_config(&c);
	c.blocks = 1;
	assert_int_equal(nc_trace_open(&t, "/tmp/x", &c), NC_ERANGE);
	nc_trace_default_config(&c);
	c.mode = 7;
	assert_int_equal(nc_trace_open(&t, "/tmp/x", &c), NC_EINVAL);
	nc_trace_default_config(&c);
	c.sync_period_ms = NAN;
	assert_int_equal(nc_trace_open(&t, "/tmp/x", &c), NC_ERANGE);
	assert_int_equal(nc_trace_open(&t, "/nonexistent-dir/x", NULL), NC_TRACE_EIO);
	char *p = tmp_path("full");
	nc_trace_default_config(&c);
	c.max_threads = 1;
	c.flush_ms = 0;
	assert_int_equal(nc_trace_open(&t, p, &c), 0);
	struct nc_trace_buf *b1, *b2;
	assert_int_equal(nc_trace_thread_start(t, "one", &b1), 0);
	assert_int_equal(nc_trace_thread_start(t, "two", &b2), NC_TRACE_EFULL);
	assert_null(b2);
	assert_int_equal(nc_trace_name(t, 70000, "x"), NC_EINVAL);
	assert_int_equal(nc_trace_name(t, 5, "five"), 0);
	nc_trace_thread_end(b1);
	assert_int_equal(nc_trace_close(t), 0);
	struct nc_trace_reader *r;
	char why[200];
	assert_int_equal(nc_trace_read_file(&r, p, why, sizeof(why)), 0);
	assert_string_equal(nc_trace_read_name(r, 5), "five");
	assert_null(nc_trace_read_name(r, 6));
	nc_trace_read_close(r);
	assert_string_equal(nc_trace_strerror(NC_TRACE_EFORMAT), "not a nanoclock trace, or a corrupt one");
	assert_string_equal(nc_trace_strerror(NC_EINVAL), nc_strerror(NC_EINVAL));
	unlink(p);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stamps_exact),
		cmocka_unit_test(test_wrap_boundary),
		cmocka_unit_test(test_overflow_drop),
		cmocka_unit_test(test_overflow_overwrite),
		cmocka_unit_test(test_nested_and_late),
		cmocka_unit_test(test_signal_storm),
		cmocka_unit_test(test_merge_ties),
		cmocka_unit_test(test_merge_threads),
		cmocka_unit_test(test_merge_files),
		cmocka_unit_test(test_accuracy_real),
		cmocka_unit_test(test_api_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
