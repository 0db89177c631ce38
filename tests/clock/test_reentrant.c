/* SPDX-License-Identifier: MIT */
/* Reads from a signal handler, and the upkeep thread started and stopped
 * by racing threads.
 *
 * The handler case: a POSIX timer sends SIGALRM to one thread every 40 us
 * (25 kHz); the handler reads every clock and appends a trace event while
 * the thread it interrupts reads too, re-ties Unix time and asks for looks
 * at the counter in a loop — so the handler lands inside refreshes and
 * publications.  Readers must never wait for anything the interrupted
 * code holds: a watchdog fails the case if it hangs, and every value the
 * handler gets must not be below one the thread saw before the signal.
 *
 * The upkeep case: eight threads start and stop the upkeep thread as fast
 * as they can while others read; afterwards no upkeep thread and no
 * descriptor may be left. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"
#include "clock/wall.h" /* nc__wall_steps: sets of the clock the line followed */
#include "nanoclock_trace.h"
#include "child.h"
#include "skip.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Slower worlds (valgrind, qemu-user) run longer for the same evidence. */
static double run_seconds(double s)
{
	const char *emu = getenv("NC_TEST_RUN");
	return getenv("NC_TEST_VALGRIND") || (emu && emu[0]) ? 4 * s : s;
}

/* How long the signal cases read: natively 3 s (~70,000 signals); under
 * qemu-user 4 times that for the same evidence; under valgrind, which
 * checks memory and runs one thread at a time (the handler can only ever
 * interrupt between two of valgrind's scheduling slices, never inside a
 * read: the race itself is TSan's and the native run's to show), the
 * native 3 s: ~2,000 signals through every reading path. */
static double signal_seconds(void)
{
	return getenv("NC_TEST_VALGRIND") ? 3 : run_seconds(3);
}

/* ---- a watchdog: a hang fails the case instead of blocking make check ---- */
static double watchdog_s;
static void *watchdog(void *arg)
{
	(void)arg;
	struct timespec ts = {(time_t)watchdog_s, 0};
	nanosleep(&ts, NULL);
	static const char msg[] = "case: hung (watchdog)\n";
	ssize_t w = write(2, msg, sizeof(msg) - 1);
	(void)w;
	_exit(1);
}
static void start_watchdog(double s)
{
	watchdog_s = s;
	pthread_t th;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* the watchdog takes no signal */
	CHECK(pthread_create(&th, NULL, watchdog, NULL) == 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_detach(th);
}

/* ---- the handler ---- */
/* What the interrupted thread saw last (written before each of its reads
 * completes, so the handler compares against a value already handed out). */
static volatile uint64_t seen_now;
static volatile int64_t seen_unix;
static volatile uint32_t seen_steps;
static volatile long handled, now_back, unix_back, conv_bad;
static struct nc_trace_buf *volatile hbuf;

static void on_alarm(int sig)
{
	(void)sig;
	int saved = errno;
	uint64_t before_now = seen_now;
	int64_t before_unix = seen_unix;
	uint32_t steps = seen_steps;
	uint64_t t = nc_ticks();
	uint64_t n = nc_now_ns();
	int64_t u = nc_unix_ns();
	int64_t tu = nc_ticks_to_unix_ns(t);
	uint64_t d = nc_ticks_to_ns(1000000);
	/* the UTC interval too (the interrupted thread may hold the lock in a
	 * refresh): it holds its own Unix time, or says it has no bound */
	struct nc_utc w;
	int ws = nc_utc_now(&w);
	if (ws < 0 || ws > 3 || w.earliest_ns > w.unix_ns || w.latest_ns < w.unix_ns)
		conv_bad++;
	if (n < before_now)
		now_back++;
	/* Unix time may step back only when the system clock was set: the
	 * thread noted the sets the line had followed before it read the
	 * value it left, and a set followed since (by this read's refresh,
	 * say) excuses it; none other may */
	if (u < before_unix && nc__wall_steps() == steps)
		unix_back++;
	if (tu <= 0 || d == 0)
		conv_bad++;
	if (hbuf)
		nc_trace_instant(hbuf, 7, n);
	handled++;
	errno = saved;
}

/* a 32-bit counter of the application's, extended by the library through
 * its lock: 2^32 ns wraps every 4.3 s */
static uint64_t narrow_read(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint32_t)((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

/* qemu-user's i386 signal frames do not keep the x87 registers across a
 * handler (qemu 7.2, Debian 12: 3,950 of 2,000,000 doubles returned in
 * st(0) came back wrong under a 25 kHz SIGALRM storm whose handler does
 * x87 arithmetic; none with SSE math, none without the storm).  A kernel
 * saves them; where the runner does not, nothing a signal case computes
 * can be trusted, the library's figures or the test's own (the loop's
 * length came back 0): probed here the way the case would meet it.  How
 * many of n computations a storm corrupted (0 where doubles are not kept
 * in x87 registers). */
#if defined(__i386__) && !defined(__SSE2_MATH__)
static volatile double x87_sink;
static void x87_handler(int sig)
{
	(void)sig;
	double a = 1.5;
	for (int i = 0; i < 20; i++)
		a = a * 1.000001 + 0.25;
	x87_sink = a;
}
__attribute__((noinline)) static double x87_times4(double v) { return 4 * v; }
#endif
static long x87_corrupted(long n)
{
#if defined(__i386__) && !defined(__SSE2_MATH__)
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = x87_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGALRM, &sa, &old) == 0);
	struct itimerval on = {{0, 40}, {0, 40}}, off = {{0, 0}, {0, 0}};
	CHECK(setitimer(ITIMER_REAL, &on, NULL) == 0);
	volatile double three = 3, r;
	long bad = 0;
	for (long i = 0; i < n; i++) {
		r = x87_times4(three);
		bad += r != 12;
	}
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	return bad;
#else
	(void)n;
	return 0;
#endif
}

static void handler_case(const char *arg)
{
	long n87 = 2000000, bad87 = x87_corrupted(n87);
	if (bad87) {
		const char *emu = getenv("NC_TEST_RUN");
		if (emu && emu[0])
			CHILD_SKIP_BECAUSE("emulator", "%s does not keep the x87 registers across a signal "
					   "handler: %ld of %ld doubles came back wrong under a SIGALRM storm",
					   emu, bad87, n87);
		fprintf(stderr, "case: this kernel does not keep the x87 registers across a signal "
			"handler: %ld of %ld doubles came back wrong\n", bad87, n87);
		CHECK(bad87 == 0);
	}
	double period_ms = atof(arg);
	if (strcmp(arg, "narrow") == 0) {
		struct nc_counter_spec spec = {"narrow32", narrow_read, NULL, 0, 32};
		CHECK(nc_set_counter(&spec) == 0);
		period_ms = 1;
	}
	start_watchdog(run_seconds(60));
	CHECK(nc_init() == 0); /* never fails: an OS clock at worst */
	CHECK(nc_set_unix_refresh_ms(period_ms) == 0);
	if (strcmp(arg, "narrow") == 0)
		CHECK(strcmp(nc_counter_name(), "narrow32") == 0);
	char path[] = "/tmp/nc_reentrant_XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	struct nc_trace *tr;
	CHECK(nc_trace_open(&tr, path, NULL) == 0);
	struct nc_trace_buf *b;
	CHECK(nc_trace_thread_start(tr, "main", &b) == 0);
	hbuf = b;

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGALRM;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t tm;
	CHECK(timer_create(CLOCK_MONOTONIC, &sev, &tm) == 0);
	/* the run's length before the storm starts */
	const uint64_t run_ns = (uint64_t)(signal_seconds() * 1e9);
	struct itimerspec its = {{0, 40000}, {0, 40000}};
	CHECK(timer_settime(tm, 0, &its, NULL) == 0);

	uint64_t end = nc_now_ns() + run_ns;
	long loops = 0, my_back = 0;
	for (;;) {
		uint64_t n = nc_now_ns();
		if (n < seen_now)
			my_back++;
		seen_now = n;
		uint32_t steps = nc__wall_steps(); /* (before the read: see on_alarm) */
		int64_t u = nc_unix_ns();
		struct nc_unix_status st;
		if ((loops & 63) == 0) {
			/* a re-tie (what the upkeep thread does when the clock is
			 * set) and a look at the counter, both under the lock */
			struct nc_utc w;
			(void)nc_utc_now(&w);
			nc_unix_retie();
			CHECK(nc_get_unix_status(&st) == 0);
			steps = nc__wall_steps();
			u = nc_unix_ns();
		}
		/* the value first, then the sets before it: a handler between
		 * the two sees an older count, which excuses more, never less */
		seen_unix = u;
		seen_steps = steps;
		loops++;
		/* at least 1000 signals handled (below), however slow the world:
		 * past the planned time a run goes on until it has them, up to
		 * ten times as long (valgrind with both CPUs busy: 882 in 3 s) */
		if (n >= end && (__atomic_load_n(&handled, __ATOMIC_RELAXED) >= 1000 ||
				 n >= end + 9 * run_ns))
			break;
	}
	struct itimerspec off = {{0, 0}, {0, 0}};
	timer_settime(tm, 0, &off, NULL);
	timer_delete(tm);
	hbuf = NULL;
	nc_trace_thread_end(b);
	CHECK(nc_trace_close(tr) == 0);
	unlink(path);
	fprintf(stderr, "case: %ld loops, %ld signals handled\n", loops, handled);
	CHECK(my_back == 0);
	CHECK(now_back == 0);
	CHECK(unix_back == 0);
	CHECK(conv_bad == 0);
	/* the handler ran often enough for the case to mean something (25 kHz
	 * asked; valgrind delivers far fewer) */
	CHECK(handled >= 1000);
}

/* ---- upkeep started and stopped by racing threads ---- */
static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static volatile int racing; /* read and written with __atomic builtins */
static void *starter(void *arg)
{
	long k = (long)arg;
	/* valgrind runs one thread at a time and a thread's start costs it
	 * milliseconds: 8 x 200 starts and stops x 5 rounds outlasted the
	 * watchdog (240 s) on a busy machine, 8 x 40 x 5 took 90 s; there it
	 * checks the memory of the start and stop paths (the race is TSan's
	 * and the native run's): 8 x 16 x 2 */
	int n = getenv("NC_TEST_VALGRIND") ? 16 : 200;
	for (int i = 0; i < n; i++) {
		if ((i + k) & 1)
			(void)nc_upkeep_start();
		else
			(void)nc_upkeep_stop();
		(void)nc_now_ns();
	}
	return NULL;
}
static void *reader(void *arg)
{
	(void)arg;
	uint64_t last = 0;
	while (__atomic_load_n(&racing, __ATOMIC_ACQUIRE)) {
		uint64_t n = nc_now_ns();
		if (n < last)
			abort();
		last = n;
		(void)nc_unix_ns();
	}
	return NULL;
}

static void upkeep_race_case(const char *arg)
{
	(void)arg;
	start_watchdog(run_seconds(60));
	CHECK(nc_init() == 0); /* never fails: an OS clock at worst */
	int fds0 = count_dir("/proc/self/fd"), tasks0 = count_dir("/proc/self/task");
	int rounds = getenv("NC_TEST_VALGRIND") ? 2 : 5;
	for (int round = 0; round < rounds; round++) {
		pthread_t st[8], rd[2];
		racing = 1;
		for (int i = 0; i < 2; i++)
			CHECK(pthread_create(&rd[i], NULL, reader, NULL) == 0);
		for (long i = 0; i < 8; i++)
			CHECK(pthread_create(&st[i], NULL, starter, (void *)i) == 0);
		for (int i = 0; i < 8; i++)
			pthread_join(st[i], NULL);
		__atomic_store_n(&racing, 0, __ATOMIC_RELEASE);
		for (int i = 0; i < 2; i++)
			pthread_join(rd[i], NULL);
		CHECK(nc_upkeep_stop() == 0);
	}
	struct nc_info in;
	nc_get_info(&in);
	CHECK(!in.upkeep_running);
	/* a joined thread's task entry can linger a moment */
	int fds = -1, tasks = -1;
	for (int i = 0; i < 200; i++) {
		fds = count_dir("/proc/self/fd");
		tasks = count_dir("/proc/self/task");
		if (fds == fds0 && tasks == tasks0)
			break;
		usleep(10000);
	}
	if (fds != fds0 || tasks != tasks0)
		fprintf(stderr, "case: fds %d -> %d, threads %d -> %d\n", fds0, fds, tasks0, tasks);
	CHECK(fds == fds0);
	CHECK(tasks == tasks0);
}

/* ---- the upkeep thread without a timerfd: a degraded mode, said ---- */
static int warned;
static void on_log(void *ctx, int level, const char *msg)
{
	(void)ctx;
	if (level == NC_LOG_WARN && strstr(msg, "upkeep"))
		warned++;
}

static void degraded_case(const char *how)
{
	const char *emu = getenv("NC_TEST_RUN");
	if (emu && emu[0]) {
		CHILD_SKIP_BECAUSE("emulator", "seccomp and descriptor limits under an emulator "
						"are the host's");
	}
	CHECK(nc_set_log(on_log, NULL, NC_LOG_WARN) == 0);
	CHECK(nc_init() == 0); /* never fails: an OS clock at worst */
	if (strcmp(how, "seccomp") == 0) {
		/* timerfd_create fails with EPERM, as under a container's profile */
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_timerfd_create, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};
		CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
		CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
	} else {
		if (getenv("NC_TEST_VALGRIND")) {
			CHILD_SKIP_BECAUSE("valgrind", "valgrind keeps descriptors above the limit");
		}
		/* one descriptor left: the eventfd gets it, the timerfd none */
		struct rlimit rl = {64, 64};
		CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
		int last = -1, fd;
		while ((fd = open("/dev/null", O_RDONLY)) >= 0)
			last = fd;
		CHECK(errno == EMFILE && last >= 0);
		close(last);
	}
	CHECK(nc_upkeep_start() == 0); /* it runs, on time only */
	struct nc_info in;
	nc_get_info(&in);
	fprintf(stderr, "case: %s: running %d, note: %s\n", how, in.upkeep_running, in.upkeep_note);
	CHECK(in.upkeep_running);
	CHECK(strstr(in.upkeep_note, "on time only") && strstr(in.upkeep_note, "timerfd_create"));
	CHECK(warned == 1);
	uint64_t a = nc_now_ns();
	usleep(20000);
	CHECK(nc_now_ns() > a);
	CHECK(nc_upkeep_stop() == 0);
}

/* ---- review findings: a stop from the log function on the upkeep thread,
 * two stops at once, a _Fork() while another thread holds the lock ---- */
static pthread_t main_thread;
static _Atomic int upkeep_reports, entered, stopped_from_log, stop_rc = 99;
static void stop_from_log(void *ctx, int level, const char *msg)
{
	(void)ctx;
	(void)level;
	(void)msg;
	if (pthread_equal(pthread_self(), main_thread))
		return;
	upkeep_reports++;
	if (!entered++) {
		stop_rc = nc_upkeep_stop(); /* on the upkeep thread itself */
		/* only now: the main thread reads stop_rc once it sees this
		 * (set before the stop, it read 99 under a loaded TSan run) */
		stopped_from_log = 1;
	}
}

static int wait_tasks(int want)
{
	int n = -1;
	for (int i = 0; i < 300 && n != want; i++) {
		usleep(10000);
		n = count_dir("/proc/self/task");
	}
	return n;
}

static void stop_from_log_case(const char *arg)
{
	(void)arg;
	start_watchdog(run_seconds(30));
	main_thread = pthread_self();
	CHECK(nc_init() == 0); /* never fails: an OS clock at worst */
	int tasks0 = count_dir("/proc/self/task"), fds0 = count_dir("/proc/self/fd");
	CHECK(nc_set_unix_refresh_ms(5) == 0);
	CHECK(nc_set_log(stop_from_log, NULL, NC_LOG_DEBUG) == 0);
	CHECK(nc_upkeep_start() == 0);
	for (int i = 0; i < 500 && !stopped_from_log; i++)
		usleep(2000);
	CHECK(stopped_from_log);
	CHECK(stop_rc == 0);
	/* the thread ends by itself once the log function returns */
	int tasks = wait_tasks(tasks0), fds = count_dir("/proc/self/fd");
	fprintf(stderr, "case: threads %d -> %d, fds %d -> %d\n", tasks0, tasks, fds0, fds);
	CHECK(tasks == tasks0 && fds == fds0);
	struct nc_info in;
	nc_get_info(&in);
	CHECK(!in.upkeep_running);
	CHECK(nc_set_log(NULL, NULL, 0) == 0);
	CHECK(nc_upkeep_start() == 0); /* and it starts again */
	CHECK(nc_upkeep_stop() == 0);
}

static _Atomic int slow_cb_on;
static void slow_log(void *ctx, int level, const char *msg)
{
	(void)ctx;
	(void)level;
	(void)msg;
	if (pthread_equal(pthread_self(), main_thread))
		return;
	slow_cb_on = 1;
	usleep(200000); /* a slow log function on the upkeep thread */
}
static void *stopper_thread(void *p)
{
	(void)p;
	nc_upkeep_stop();
	return NULL;
}

/* Two stops at once: each returns only when the thread has ended. */
static void stop_stop_case(const char *arg)
{
	(void)arg;
	start_watchdog(run_seconds(30));
	main_thread = pthread_self();
	CHECK(nc_init() == 0); /* never fails: an OS clock at worst */
	int tasks0 = count_dir("/proc/self/task");
	CHECK(nc_set_unix_refresh_ms(5) == 0);
	CHECK(nc_set_log(slow_log, NULL, NC_LOG_DEBUG) == 0);
	CHECK(nc_upkeep_start() == 0);
	while (!slow_cb_on)
		usleep(100);
	pthread_t a;
	CHECK(pthread_create(&a, NULL, stopper_thread, NULL) == 0);
	usleep(20000);
	CHECK(nc_upkeep_stop() == 0);
	/* main, stopper A (perhaps still returning), no upkeep thread */
	int n = count_dir("/proc/self/task");
	const char *emu = getenv("NC_TEST_RUN");
	if (n > tasks0 + 1 && emu && emu[0]) {
		/* under qemu-user a guest thread that has ended can leave its
		 * host task a moment longer (ppc64le, three suites at once with
		 * both CPUs busy: 5 for 3): given up to 3 s to go, which the
		 * upkeep thread, were it still running, never would */
		for (int i = 0; i < 300 && n > tasks0 + 1; i++) {
			usleep(10000);
			n = count_dir("/proc/self/task");
		}
	}
	fprintf(stderr, "case: after the second stop: %d threads (before start %d)\n", n, tasks0);
	CHECK(n <= tasks0 + 1);
	pthread_join(a, NULL);
	CHECK(wait_tasks(tasks0) == tasks0);
	CHECK(nc_set_log(NULL, NULL, 0) == 0);
}

/* _Fork() (async-signal-safe, no atfork handlers) while another thread holds
 * the library's lock: the child's clock still runs.  arg "first": the
 * library not yet initialised (as when the other thread is inside the
 * initialisation, which holds the lock): the child's first read takes the
 * lock over and initialises. */
static _Atomic int holding_lock, release_lock;
static void *lock_holder(void *p)
{
	(void)p;
	nc__lock();
	holding_lock = 1;
	while (!release_lock)
		usleep(100);
	nc__unlock();
	return NULL;
}

static void fork_locked_case(const char *arg)
{
	int first = arg && !strcmp(arg, "first");
	const char *emu = getenv("NC_TEST_RUN");
	if ((emu && emu[0]) || getenv("NC_TEST_VALGRIND")) {
		CHILD_SKIP_BECAUSE(emu && emu[0] ? "emulator" : "valgrind",
				   "a bare fork of a threaded process under an emulator or valgrind");
	}
	if (!first)
		CHECK(nc_init() == 0); /* never fails: an OS clock at worst */
	pthread_t th;
	CHECK(pthread_create(&th, NULL, lock_holder, NULL) == 0);
	while (!holding_lock)
		usleep(100);
	fflush(NULL);
	pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0); /* fork without atfork handlers */
	if (pid == 0) {
		/* each read bracketed by CLOCK_MONOTONIC_RAW: the child's first
		 * read may be slow (a sanitizer's runtime), never wrong */
		struct timespec a0, a1, b0, b1, d = {2, 0};
		clock_gettime(CLOCK_MONOTONIC_RAW, &a0);
		uint64_t n0 = nc_now_ns();
		clock_gettime(CLOCK_MONOTONIC_RAW, &a1);
		nanosleep(&d, NULL);
		clock_gettime(CLOCK_MONOTONIC_RAW, &b0);
		uint64_t n1 = nc_now_ns();
		clock_gettime(CLOCK_MONOTONIC_RAW, &b1);
#define TS_NS(t) ((double)(t).tv_sec * 1e9 + (double)(t).tv_nsec)
		double lo = TS_NS(b0) - TS_NS(a1), hi = TS_NS(b1) - TS_NS(a0);
		double now = (double)(n1 - n0), slack = 100e3 + 2e9 * 1e-4; /* 100 us + 100 ppm */
		int ok = now >= lo - slack && now <= hi + slack;
		/* "first": the child's first read ran the initialisation, once */
		if (first && __atomic_load_n(&nc__init_runs, __ATOMIC_RELAXED) != 1) {
			fprintf(stderr, "case: child: the initialisation ran %d times\n", nc__init_runs);
			ok = 0;
		}
		if (!ok)
			fprintf(stderr, "case: child: nc_now_ns advanced %.0f ns, CLOCK_MONOTONIC_RAW %.0f to %.0f ns (first read took %.0f ns)\n",
				now, lo, hi, TS_NS(a1) - TS_NS(a0));
		_exit(ok ? 0 : 1);
	}
	CHECK(pid > 0);
	release_lock = 1;
	pthread_join(th, NULL);
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	fprintf(stderr, "case: child %s\n", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "kept time" : "clock stood still");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static const struct child_case cases[] = {
	{"handler_reads_1ms", handler_case, "1", NULL, NULL},
	{"handler_reads_1s", handler_case, "1000", NULL, NULL},
	{"handler_reads_narrow_counter", handler_case, "narrow", NULL, NULL},
	{"upkeep_start_stop_race", upkeep_race_case, NULL, NULL, NULL},
	{"upkeep_without_timerfd_seccomp", degraded_case, "seccomp", NULL, NULL},
	{"upkeep_without_timerfd_no_fds", degraded_case, "rlimit", NULL, NULL},
	{"upkeep_stopped_from_its_log_function", stop_from_log_case, NULL, NULL, NULL},
	{"upkeep_two_stops_at_once", stop_stop_case, NULL, NULL, NULL},
	{"fork_without_handlers_lock_held", fork_locked_case, NULL, NULL, NULL},
	{"fork_without_handlers_before_init", fork_locked_case, "first", NULL, NULL},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

int main(int argc, char **argv)
{
	return child_program("test_reentrant", argc, argv, NULL, 0, cases, NCASES, NULL, 0);
}
