/* SPDX-License-Identifier: MIT */
/* What the library promises not to do to the program that links it:
 *   - print: the whole API, good and bad inputs, a faulting application
 *     counter, bad environment values, the cross-CPU check and the upkeep
 *     thread, with fds 1 and 2 on a file that must stay empty;
 *   - change the caller's CPU affinity or signal mask (nc_sync_check, both
 *     methods, and the upkeep thread), or leave a thread behind;
 *   - need /proc or /sys: in a mount namespace with empty tmpfs over both,
 *     it measures and says so (skipped where namespaces are not permitted).
 * (Never exiting, and never calling printf-like functions, is checked on
 * the objects by scripts/check-hygiene; leaks by `make check-valgrind`;
 * fork by tests/clock/test_threads.c.)  Each case runs in a child. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"
#include "nanoclock_shared.h"
#include "nanoclock_trace.h"
#include "child.h"
#include "stated.h"
#include "skip.h"
#include "illegal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Threads of this process, or -1 where /proc cannot tell. */
static int count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Every public function, with good and bad arguments. */
static void whole_api(void)
{
	struct nc_counter_spec bad = {NULL, NULL, NULL, -1, 99};
	(void)nc_set_counter(&bad);
	(void)nc_set_counter(NULL);
	(void)nc_set_calibration_target(NAN, -1);
	(void)nc_set_calibration_target(1e9, 1e9);
	(void)nc_init();
	(void)nc_init();
	(void)nc_version();
	for (int e = -10; e <= 2; e++)
		(void)nc_strerror(e);
	uint64_t acc = nc_ticks() + nc_ticks_begin() + nc_ticks_end() + nc_now_ns() +
		       (uint64_t)nc_unix_ns() + nc_ticks_to_ns(12345) + nc_ns_to_ticks(12345) +
		       (uint64_t)nc_ticks_to_unix_ns(nc_ticks()) + nc_seconds_before_wrap();
	acc += (uint64_t)nc_ticks_per_second() + (uint64_t)nc_ticks_per_second_uncertainty_ppm();
	acc += strlen(nc_ticks_per_second_source()) + strlen(nc_counter_name());
	nc_conv_t c;
	nc_get_conv(&c);
	acc += nc_conv_ticks_to_ns(&c, 999) + nc_conv_ns_to_ticks(&c, 999);
	(void)nc_conv_init(&c, NAN);
	(void)nc_conv_init(&c, -1);
	(void)nc_conv_init(&c, 1e300);
	(void)nc_conv_init(NULL, 1e9);
	(void)nc_conv_init(&c, 1e9);
	(void)nc_set_counter(&bad); /* too late */
	(void)nc_set_unix_refresh_ms(NAN);
	(void)nc_set_unix_refresh_ms(-5);
	(void)nc_set_unix_refresh_ms(1e12);
	(void)nc_set_unix_refresh_ms(5);
	struct nc_unix_status st;
	(void)nc_get_unix_status(NULL);
	(void)nc_get_unix_status(&st);
	struct nc_info in;
	(void)nc_get_info(&in);
	struct nc_rate_measurement rm;
	(void)nc_measure_rate(-1, &rm);
	(void)nc_measure_rate(0.2, &rm);
	(void)nc_upkeep_stop();
	(void)nc_upkeep_start();
	(void)nc_upkeep_start();
	(void)nc_recent_ns(); /* the coarse clock's ticks asked for */
	(void)nc_recent_unix_ns();
	struct nc_recent_status rst;
	(void)nc_get_recent_status(NULL);
	(void)nc_get_recent_status(&rst);
	struct timespec ts = {0, 20000000};
	nanosleep(&ts, NULL);
	(void)nc_recent_ns();
	(void)nc_upkeep_stop();
	struct nc_sync_options o;
	nc_sync_default_options(&o);
	o.probes = 2000;
	o.rounds = 1;
	struct nc_sync_report r;
	(void)nc_sync_check(&o, &r);
	o.method = NC_SYNC_SWITCH;
	o.probes = 20;
	(void)nc_sync_check(&o, &r);
	o.method = 99;
	(void)nc_sync_check(&o, &r);
	(void)nc_sync_check(NULL, NULL);
	for (int v = -1; v <= 3; v++)
		acc += strlen(nc_sync_verdict_name(v));
	(void)nc_set_log(NULL, NULL, NC_LOG_WARN);
	(void)nc_set_log(NULL, NULL, 99);
	(void)nc_unix_retie();
	/* the shared record */
	char why[256], path[80];
	struct nc_shared_status sh;
	(void)nc_get_shared_status(&sh);
	(void)nc_get_shared_status(NULL);
	(void)nc_shared_publish("relative/record", -1, 0, 0, why, sizeof(why));
	snprintf(path, sizeof(path), "/tmp/nc-hygiene-rec-%d", (int)getpid());
	(void)nc_shared_publish(path, -1, 0, 0, why, sizeof(why));
	(void)nc_shared_publish(path, 0, 100, 2, NULL, 0);
	unlink(path);
	/* UTC */
	struct nc_utc u1, u2;
	(void)nc_utc_start();
	(void)nc_utc_now(&u1);
	(void)nc_utc_now(&u2);
	acc += (uint64_t)(nc_utc_order(&u1, &u2) + 1);
	(void)nc_utc_wait_past(0, 0.001);
	(void)nc_utc_wait_past(INT64_MAX, 0.001);
	(void)nc_utc_wait_past(0, NAN);
	struct nc_utc_status us;
	(void)nc_get_utc_status(&us);
	nc_utc_stop();
	(void)nc_utc_now(&u1);
	(void)nc_get_utc_status(&us);
	nc_utc_stop();
	(void)nc_utc_start();
	for (int v = -1; v <= 5; v++)
		acc += strlen(nc_utc_status_name(v)) + strlen(nc_utc_source_name(v));
	(void)nc_utc_publish_clockbound("relative", why, sizeof(why));
	(void)nc_utc_publish_clockbound(NULL, NULL, 0);
	snprintf(path, sizeof(path), "/tmp/nc-hygiene-cb-%d", (int)getpid());
	(void)nc_utc_publish_clockbound(path, why, sizeof(why));
	unlink(path);
	/* a trace written and read back, and bad arguments */
	for (int e = -20; e <= 2; e++)
		acc += strlen(nc_trace_strerror(e));
	struct nc_trace_config cfg;
	nc_trace_default_config(&cfg);
	struct nc_trace *t = NULL;
	(void)nc_trace_open(&t, NULL, &cfg);
	(void)nc_trace_open(NULL, "/tmp/x", &cfg);
	cfg.block_bytes = 3;
	(void)nc_trace_open(&t, "/tmp/nc-hygiene-never", &cfg);
	nc_trace_default_config(&cfg);
	snprintf(path, sizeof(path), "/tmp/nc-hygiene-trace-%d", (int)getpid());
	unlink(path);
	if (nc_trace_open(&t, path, &cfg) == 0) {
		struct nc_trace_buf *b;
		(void)nc_trace_name(t, 1, "one");
		(void)nc_trace_name(t, 70000, "too big");
		if (nc_trace_thread_start(t, "hygiene", &b) == 0) {
			nc_trace_instant(b, 1, 1);
			nc_trace_begin(b, 1, 2);
			nc_trace_end(b, 1, 3);
			nc_trace_counter(b, 2, 4);
			nc_trace_event(b, NC_TRACE_INSTANT, 3, 5);
			nc_trace_event_at(b, nc_ticks(), NC_TRACE_INSTANT, 4, 6);
			struct nc_trace_counts cn;
			nc_trace_get_counts(b, &cn);
			acc += nc_trace_global_seq_next();
			(void)nc_trace_flush(t);
			nc_trace_thread_end(b);
		}
		(void)nc_trace_close(t);
		struct nc_trace_reader *rd;
		if (nc_trace_read_file(&rd, path, why, sizeof(why)) == 0) {
			struct nc_trace_info ti0;
			nc_trace_read_info(rd, &ti0);
			struct nc_trace_thread_info ti;
			(void)nc_trace_read_thread(rd, 0, &ti);
			(void)nc_trace_read_thread(rd, 99, &ti);
			(void)nc_trace_read_name(rd, 1);
			(void)nc_trace_read_name(rd, 99999);
			uint64_t used;
			(void)nc_trace_read_complete(rd, &used, why, sizeof(why));
			struct nc_trace_merge *m;
			if (nc_trace_merge_open(&m, &rd, 1) == 0) {
				struct nc_trace_rec ev;
				struct nc_utc u;
				while (nc_trace_merge_next(m, &ev))
					(void)nc_trace_read_utc(rd, ev.ticks, &u);
				(void)nc_trace_merge_error(m);
				nc_trace_merge_close(m);
			}
			nc_trace_read_close(rd);
		}
	}
	unlink(path);
	struct nc_trace_reader *g;
	static const unsigned char garbage[64] = "NCTRACE\x1a garbage";
	if (nc_trace_read_mem(&g, garbage, sizeof(garbage), why, sizeof(why)) == 0)
		nc_trace_read_close(g);
	(void)nc_trace_read_file(&g, "/nonexistent/trace", why, sizeof(why));
	(void)nc_trace_read_file(&g, "/dev/null", why, sizeof(why));
	if (acc == 42)
		(void)nc_now_ns();
}

/* fds 1 and 2 on a fresh file while fn() runs; returns what was written. */
static long silent_run(void (*fn)(void))
{
	char path[] = "/tmp/nc-hygiene-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	fflush(NULL);
	int o1 = dup(1), o2 = dup(2);
	CHECK(o1 >= 0 && o2 >= 0);
	CHECK(dup2(fd, 1) == 1 && dup2(fd, 2) == 2);
	fn();
	fflush(NULL);
	struct stat sb;
	CHECK(fstat(fd, &sb) == 0);
	dup2(o1, 1);
	dup2(o2, 2);
	close(o1);
	close(o2);
	if (sb.st_size > 0) {
		char buf[512];
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = 0;
		fprintf(stderr, "case: the library wrote %lld bytes to stdout/stderr:\n%s\n",
			(long long)sb.st_size, buf);
	}
	close(fd);
	return (long)sb.st_size;
}

static void child_silent(const char *arg)
{
	if (arg && strcmp(arg, "bad") == 0) {
		/* every environment variable malformed, and a counter that faults */
		setenv("NANOCLOCK_COUNTER", "no-such-counter-with-a-very-long-name-indeed-yes", 1);
		setenv("NANOCLOCK_HZ", "nan", 1);
		setenv("NANOCLOCK_HZ_FORCE", "maybe", 1);
		setenv("NANOCLOCK_CALIB_PPM", "-1", 1);
		setenv("NANOCLOCK_CALIB_MAX_MS", "1e999", 1);
		setenv("NANOCLOCK_UNIX_REFRESH_MS", "", 1);
		struct nc_counter_spec s = {"faulty", illegal, NULL, 0, 64};
		CHECK(nc_set_counter(&s) == 0);
	}
	CHECK(silent_run(whole_api) == 0);
}

/* ---- affinity, mask, threads ---- */
static void *nothing(void *arg)
{
	return arg;
}

static void child_affinity_mask(const char *arg)
{
	(void)arg;
	/* a mask of our own, and an affinity narrower than the machine's
	 * when there is more than one CPU (the check must not widen it) */
	sigset_t m, m0, m1;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	sigaddset(&m, SIGUSR2);
	sigaddset(&m, SIGRTMIN + 1);
	CHECK(pthread_sigmask(SIG_BLOCK, &m, NULL) == 0);
	cpu_set_t a0, a1, all;
	CHECK(pthread_getaffinity_np(pthread_self(), sizeof(all), &all) == 0);
	if (CPU_COUNT(&all) > 2) { /* drop one: the rest still have two to compare */
		for (int c = CPU_SETSIZE - 1; c >= 0; c--)
			if (CPU_ISSET(c, &all)) {
				CPU_CLR(c, &all);
				break;
			}
		CHECK(pthread_setaffinity_np(pthread_self(), sizeof(all), &all) == 0);
	}
	CHECK(pthread_sigmask(SIG_BLOCK, NULL, &m0) == 0);
	CHECK(pthread_getaffinity_np(pthread_self(), sizeof(a0), &a0) == 0);
	/* a thread first, so that a sanitizer's helper thread (ThreadSanitizer
	 * starts one with the first thread) is there before the count */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, nothing, NULL) == 0 && pthread_join(t, NULL) == 0);
	/* the count once it holds still for 50 ms (up to 2 s): under qemu-user
	 * the joined thread's host thread outlives it (riscv64 counted 3
	 * before, 2 after) */
	int th0 = count_threads();
	for (int i = 0, same = 0; i < 400 && same < 10; i++) {
		struct timespec w = {0, 5000000};
		nanosleep(&w, NULL);
		int n = count_threads();
		same = n == th0 ? same + 1 : 0;
		th0 = n;
	}

	CHECK(nc_init() == 0);
	struct nc_sync_options o;
	nc_sync_default_options(&o);
	o.probes = 2000;
	o.rounds = 2;
	struct nc_sync_report r;
	CHECK(nc_sync_check(&o, &r) == 0);
	o.method = NC_SYNC_SWITCH;
	o.probes = 50;
	CHECK(nc_sync_check(&o, &r) == 0);
	CHECK(nc_upkeep_start() == 0);
	struct timespec ts = {0, 10000000};
	nanosleep(&ts, NULL);
	CHECK(nc_upkeep_stop() == 0);

	CHECK(pthread_sigmask(SIG_BLOCK, NULL, &m1) == 0);
	CHECK(pthread_getaffinity_np(pthread_self(), sizeof(a1), &a1) == 0);
	for (int s = 1; s < _NSIG; s++)
		if (sigismember(&m0, s) != sigismember(&m1, s)) {
			fprintf(stderr, "case: signal mask changed at %d\n", s);
			_exit(1);
		}
	CHECK(CPU_EQUAL(&a0, &a1));
	if (th0 > 0) {
		/* every thread joined.  A joined thread can still be listed for a
		 * moment under qemu-user, whose host thread outlives the guest's
		 * (seen on aarch64): wait up to 2 s for the count to settle */
		int n = count_threads();
		for (int i = 0; i < 400 && n != th0; i++) {
			struct timespec w = {0, 5000000};
			nanosleep(&w, NULL);
			n = count_threads();
		}
		if (n != th0)
			fprintf(stderr, "case: %d threads after, %d before\n", n, th0);
		CHECK(n == th0);
	}
}

/* ---- no /proc, no /sys ---- */
static int hide_proc_sys(char *why, size_t len)
{
	if (unshare(CLONE_NEWNS) != 0) {
		/* unprivileged: a user namespace of our own grants mounting */
		uid_t uid = getuid();
		gid_t gid = getgid();
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
			snprintf(why, len, "unshare(CLONE_NEWNS): %s, and a user namespace too",
				 strerror(errno));
			return -1;
		}
		char map[64];
		int fd = open("/proc/self/setgroups", O_WRONLY);
		if (fd >= 0) {
			(void)!write(fd, "deny", 4);
			close(fd);
		}
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
		fd = open("/proc/self/uid_map", O_WRONLY);
		if (fd >= 0) {
			(void)!write(fd, map, strlen(map));
			close(fd);
		}
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
		fd = open("/proc/self/gid_map", O_WRONLY);
		if (fd >= 0) {
			(void)!write(fd, map, strlen(map));
			close(fd);
		}
	}
	if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("none", "/proc", "tmpfs", 0, "size=16k") != 0 ||
	    mount("none", "/sys", "tmpfs", 0, "size=16k") != 0) {
		snprintf(why, len, "mounting tmpfs over /proc and /sys: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void child_no_proc_sys(const char *arg)
{
	(void)arg;
	char why[160];
	if (hide_proc_sys(why, sizeof(why)) != 0) {
		CHILD_SKIP_BECAUSE(geteuid() ? "root" : "machine", "%s", why);
	}
	CHECK(access("/proc/cpuinfo", F_OK) != 0 && access("/sys/devices", F_OK) != 0);
	CHECK(nc_init() == 0);
	struct nc_info in;
	CHECK(nc_get_info(&in) == 0);
	CHECK(strstr(in.policy, "/proc and /sys not readable"));
	CHECK(in.kernel.clocksource[0] == 0 && in.kernel.tsc_unstable == -1);
	if (strstr(in.policy, "rate is measured"))
		CHECK(in.hz_measured > 0 && strcmp(in.hz_source, "measured") == 0);
	/* a working clock: nc_now_ns on CLOCK_MONOTONIC_RAW's time line,
	 * within its bracket widened by the lead the library states for it
	 * (tests/stated.h), and nc_unix_ns within its stated tie error */
	int64_t l0 = nc_test_now_lead_ns();
	int64_t a = nc__mono_raw_ns();
	int64_t v = (int64_t)nc_now_ns();
	int64_t b = nc__mono_raw_ns();
	int64_t l1 = nc_test_now_lead_ns(), lead = l0 > l1 ? l0 : l1;
	fprintf(stderr, "  without /proc and /sys: nc_now_ns %+lld ns outside its %lld ns CLOCK_MONOTONIC_RAW "
		"bracket, stated lead %lld ns\n", (long long)(v < a ? v - a : v > b ? v - b : 0),
		(long long)(b - a), (long long)lead);
	CHECK(nc_test_now_within(a, v, b, lead));
	CHECK(child_unix_within_stated() == 0);
}

static const struct child_case cases[] = {
	{"silent_api", child_silent, "good", NULL, NULL},
	{"silent_api_bad_input", child_silent, "bad", NULL, NULL},
	{"affinity_and_mask_kept", child_affinity_mask, NULL, NULL, NULL},
	{"no_proc_no_sys", child_no_proc_sys, NULL, NULL, NULL},
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

int main(int argc, char **argv)
{
	return child_program("test_hygiene", argc, argv, NULL, 0, cases, NCASES, NULL, 0);
}
