/* SPDX-License-Identifier: MIT */
/* `nanoclock bench init` and the cold start's figures: processes started
 * cold, each one's nc_init() time and rate against this one's reference. */
#include "bench.h"
#include "bench_trace.h"
#include "bench_util.h"

#include <nanoclock.h>
#include <nanoclock_shared.h>
#include <nanoclock_info.h>
#include <nanoclock_sync.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__))
#include <sys/prctl.h>
#endif
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;


/* Runs `nanoclock bench MODE` (--init-once, --floor-once) and reads its
 * line. */
static char cold_why[160];

static int run_cold_as(struct cold *out, char *mode)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	char *argv[] = {"nanoclock", "bench", mode, NULL};
	pid_t pid;
	int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fd[1]);
	char buf[256] = "";
	int st = 0;
	if (rc == 0) {
		ssize_t r = read(fd[0], buf, sizeof(buf) - 1);
		buf[r > 0 ? r : 0] = 0;
		waitpid(pid, &st, 0);
	}
	close(fd[0]);
	if (rc == 0 && sscanf(buf, "%lf %lf %lf %d %31s %ld %lf", &out->init_ms, &out->hz, &out->ppm,
			      &out->status, out->source, &out->faults, &out->touch_us) == 7)
		return 0;
	/* said once in the summary: why the cold processes gave nothing */
	if (rc != 0)
		snprintf(cold_why, sizeof(cold_why), "cannot start /proc/self/exe: %s", strerror(rc));
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		snprintf(cold_why, sizeof(cold_why),
			 "/proc/self/exe could not be executed (under an emulator without binfmt_misc?)");
	else
		snprintf(cold_why, sizeof(cold_why), "a cold process ended with status 0x%x and printed '%.60s'",
			 st, buf);
	return -1;
}

int run_cold(struct cold *out) { return run_cold_as(out, "--init-once"); }

/* NC_BENCH_START_AT (CLOCK_REALTIME, ns since the epoch): the cold
 * processes a script started one after another wait for the same moment
 * and call nc_init() together (scripts/calib-spread: started with `&`,
 * each one's exec takes long enough that twenty barely overlap) */
static void wait_start_at(void)
{
	const char *at = getenv("NC_BENCH_START_AT");
	if (!at || !at[0])
		return;
	long long ns = strtoll(at, NULL, 10);
	struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
	while (ns > 0 && clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* What a page fault costs in this process, in us, or -1: fresh anonymous
 * pages written one by one, as the library's state is at a start (an
 * estimate: a code page mapped from the page cache may cost less), never a
 * huge page.  Several times dearer on a nested VM, where the faults are a
 * large part of a start: the summary says how much. */
static double touch_cost_us(void)
{
	enum { PAGES = 16 };
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, (size_t)pg * PAGES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (m == MAP_FAILED)
		return -1;
#ifdef MADV_NOHUGEPAGE
	(void)madvise(m, (size_t)pg * PAGES, MADV_NOHUGEPAGE);
#endif
	int64_t a = raw_ns();
	for (int i = 0; i < PAGES; i++)
		((volatile char *)m)[(long)i * pg] = 1;
	int64_t b = raw_ns();
	munmap(m, (size_t)pg * PAGES);
	return (double)(b - a) / PAGES / 1e3;
}

int init_once(void)
{
	wait_start_at();
	/* the page faults too, and what one costs here (under an emulator,
	 * qemu-user, both are the emulator's own) */
	struct rusage u0, u1;
	/* raw_ns and getrusage called once first: their own first touches
	 * are not nc_init's */
	(void)raw_ns();
	getrusage(RUSAGE_SELF, &u0);
	getrusage(RUSAGE_SELF, &u0);
	int64_t a = raw_ns();
	int rc = nc_init();
	int64_t b = raw_ns();
	getrusage(RUSAGE_SELF, &u1);
	const char *src = nc_ticks_per_second_source();
	double touch = touch_cost_us();
	printf("%.4f %.6f %.6g %d %s %ld %.2f\n", (double)(b - a) / 1e6, nc_ticks_per_second(),
	       nc_ticks_per_second_uncertainty_ppm(), rc, strchr(src, ' ') ? "other" : src,
	       (long)(u1.ru_minflt - u0.ru_minflt + u1.ru_majflt - u0.ru_majflt), touch);
	return 0;
}

/* The floor of a shared start on this machine: in a cold process that
 * never calls the library, the system calls bench init's shared start
 * makes, as it makes them (through libc, in this order; tests/tool/test_cli.sh
 * compares the two under strace): the lock's getpid, the record's open,
 * fstat, geteuid where root does not own it, pread and close
 * (NANOCLOCK_SHARED's path), the boot id's open, read and close,
 * prctl(PR_GET_TSC) on x86, and the Unix tie's two adjtimex.  No state is
 * written and no code of the library's is run: what is left of a start
 * above this is the library's own work and first touches.  One line, as
 * --init-once's (its rate fields 0, its status 1 where it read nothing,
 * its source "floor"). */
int floor_once(void)
{
	const char *rec = getenv("NANOCLOCK_SHARED");
	struct rusage u0, u1;
	char buf[1024], id[40];
	struct stat st;
	struct timex tx;
	memset(buf, 0, sizeof(buf));
	memset(&st, 0, sizeof(st));
	memset(&tx, 0, sizeof(tx)); /* the library's are on a written stack too */
	(void)raw_ns();
	getrusage(RUSAGE_SELF, &u0);
	getrusage(RUSAGE_SELF, &u0);
	int64_t a = raw_ns();
	volatile pid_t me = getpid(); /* the library's lock names its owner */
	(void)me;
	int fd = rec && rec[0] == '/' ? open(rec, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
	ssize_t n = -1;
	if (fd >= 0) {
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_uid == 0 || st.st_uid == geteuid()))
			n = pread(fd, buf, sizeof(buf), 0);
		close(fd);
	}
	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t m = fd >= 0 ? read(fd, id, sizeof(id) - 1) : -1;
	if (fd >= 0)
		close(fd);
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__)) && defined(PR_GET_TSC)
	int mode = 0;
	(void)prctl(PR_GET_TSC, &mode, 0, 0, 0);
#endif
	tx.modes = ADJ_OFFSET_SS_READ;
	int s1 = adjtimex(&tx);
	memset(&tx, 0, sizeof(tx));
	int s2 = adjtimex(&tx);
	int64_t b = raw_ns();
	getrusage(RUSAGE_SELF, &u1);
	double touch = touch_cost_us();
	/* a floor that did not read what a start reads is no floor */
	int ok = n > 0 && m >= 32 && s1 >= 0 && s2 >= 0;
	printf("%.4f 0 0 %d floor %ld %.2f\n", (double)(b - a) / 1e6, ok ? 0 : 1,
	       (long)(u1.ru_minflt - u0.ru_minflt + u1.ru_majflt - u0.ru_majflt), touch);
	return 0;
}


void take_pair(struct pair *p)
{
	int64_t best = INT64_MAX;
	for (int i = 0; i < 50; i++) {
		int64_t a = raw_ns();
		uint64_t nc = nc_now_ns();
		uint64_t tk = nc_ticks_begin();
		int64_t b = raw_ns();
		if (b - a < best) {
			best = b - a;
			p->raw = (a + b) / 2.0;
			p->nc = nc;
			p->tk = tk;
			p->width = (double)(b - a);
		}
	}
}

/* One column of the table: the cold starts of one kind judged against the
 * reference rate. */
static void summary(const char *what, struct cold *c, int k, double ref, double ref_ppm, double *ms,
		    double target_ms)
{
	int within = 0, adopted = 0;
	double worst = 0;
	for (int i = 0; i < k; i++) {
		double err = (c[i].hz / ref - 1) * 1e6;
		within += fabs(err) <= c[i].ppm + ref_ppm;
		adopted += strcmp(c[i].source, "shared") == 0;
		worst = fmax(worst, fabs(err));
		ms[i] = c[i].init_ms;
	}
	if (k == 0)
		return;
	double med = median(ms, k);
	printf("%-9s init median %.3f ms (min %.3f, max %.3f); rate within its stated uncertainty "
	       "(and the reference's) in %d of %d; worst |error| %.4f ppm; %d of %d adopted the "
	       "shared record",
	       what, med, ms[0], ms[k - 1], within, k, worst, adopted, k);
	for (int i = 0; i < k; i++)
		ms[i] = (double)c[i].faults;
	med = median(ms, k);
	printf("; page faults in nc_init median %.0f (min %.0f, max %.0f)\n", med, ms[0], ms[k - 1]);
	/* where the start went: its page faults at what a first touch cost in
	 * the same process, and the rest (medians over the runs) */
	double faults = med;
	int kt = 0; /* the runs that measured a first touch */
	for (int i = 0; i < k; i++)
		if (c[i].touch_us >= 0)
			ms[kt++] = c[i].touch_us;
	double touch = kt ? median(ms, kt) : -1;
	kt = 0;
	for (int i = 0; i < k; i++)
		if (c[i].touch_us >= 0)
			ms[kt++] = c[i].init_ms - (double)c[i].faults * c[i].touch_us / 1e3;
	double rest = kt ? median(ms, kt) : 0;
	if (kt)
		printf("%-9s a first touch of a page %.2f us here (median): the faults ~%.3f ms, the "
		       "start without them ~%.3f ms\n", what, touch, faults * touch / 1e3, rest);
	/* the start's targets: the median, and all but 1 in 21 within */
	for (int i = 0; i < k; i++)
		ms[i] = c[i].init_ms;
	double med_ms = median(ms, k);
	int need = k - k / 21;
	printf("target %-9s median <= %.1f ms with >= %d of %d within: %s (%.3f ms, %d within)\n", what,
	       target_ms, need, k, med_ms <= target_ms && within >= need ? "met" : "NOT met", med_ms,
	       within);
}

/* why a floor run gave nothing (the first one) */
static char floor_why[160];

/* The shared start against its floor (floor_once), medians over the runs:
 * how much of it the machine's system calls take whatever the library
 * does, and what is the library's own.  Only the starts that adopted the
 * record count: one that refused it calibrated, and is no shared start. */
static void floor_summary(struct cold *fl, int kf, int runs, const struct cold *sh, int ks,
			  double *ms)
{
	if (kf == 0) {
		printf("floor:    not measured (%s)\n", floor_why[0] ? floor_why : "no record");
		return;
	}
	for (int i = 0; i < kf; i++)
		ms[i] = fl[i].init_ms;
	double f = median(ms, kf), lo = ms[0], hi = ms[kf - 1];
	for (int i = 0; i < kf; i++)
		ms[i] = (double)fl[i].faults;
	double ff = median(ms, kf);
	printf("floor:    a shared start's system calls alone, in a cold process without the "
	       "library (the lock's getpid; the record's open, fstat, pread, close; the boot id's "
	       "open, read, close;"
#if defined(__x86_64__) || defined(__i386__)
	       " prctl;"
#endif
	       " two adjtimex): median %.3f ms (min %.3f, max %.3f), page faults median %.0f; "
	       "%d of %d runs\n",
	       f, lo, hi, ff, kf, runs);
	int ka = 0;
	for (int i = 0; i < ks; i++)
		if (strcmp(sh[i].source, "shared") == 0)
			ms[ka++] = sh[i].init_ms;
	if (ka == 0)
		return;
	double s = median(ms, ka);
	printf("floor:    the shared start (the %d that adopted) is %.2fx its floor: %.3f ms above it "
	       "are the library's own work and first touches%s\n",
	       ka, s / f, s - f, f > 0.1 ? "; the floor alone is above the 0.1 ms target here" : "");
}

/* A line a run: each cold process's init time and rate against the
 * reference, unshared and shared */
static void print_init_runs(const struct cold *c, int k, const struct cold *sh, int ks, int runs,
			    double ref, double ref_ppm)
{
	printf("%4s | %10s %12s %10s %6s | %10s %12s %10s %6s %s\n", "run", "unshared", "error ppm",
	       "stated", "within", "shared", "error ppm", "stated", "within", "source");
	for (int i = 0; i < runs; i++) {
		printf("%4d |", i + 1);
		if (i < k) {
			double e = (c[i].hz / ref - 1) * 1e6;
			printf(" %8.3fms %+12.4f %10.4f %6s |", c[i].init_ms, e, c[i].ppm,
			       fabs(e) <= c[i].ppm + ref_ppm ? "yes" : "NO");
		} else {
			printf(" %10s %12s %10s %6s |", "-", "-", "-", "-");
		}
		if (i < ks) {
			double e = (sh[i].hz / ref - 1) * 1e6;
			printf(" %8.3fms %+12.4f %10.2g %6s %s\n", sh[i].init_ms, e, sh[i].ppm,
			       fabs(e) <= sh[i].ppm + ref_ppm ? "yes" : "NO", sh[i].source);
		} else {
			printf(" %10s\n", "-");
		}
	}
}

/* The counter is shared by every process on the machine: one reference
 * rate measured by this process across all the runs judges each child's
 * rate at init.  Each run starts two cold processes, each after the idle
 * time: one with sharing off (it calibrates), one that finds a shared
 * record — this process keeps it fresh in a temporary directory, as
 * `nanoclock daemon` would, rewriting it before each start — and a third,
 * after the idle time too, the shared start's floor (floor_once). */
int bench_init(int runs, double idle_s)
{
	struct cold *c = calloc((size_t)runs, sizeof(*c)), *sh = calloc((size_t)runs, sizeof(*sh));
	struct cold *fl = calloc((size_t)runs, sizeof(*fl));
	double *ms = calloc((size_t)runs, sizeof(double));
	/* where the records users' processes find are: a tmpfs (/run/nanoclock,
	 * /dev/shm, $XDG_RUNTIME_DIR), not the disk (/tmp may be a disk's file
	 * system, where a shared start is slower) */
	char dir[] = "/dev/shm/nanoclock-bench-XXXXXX", rec[64] = "";
	if (!c || !sh || !fl || !ms) {
		free(c);
		free(sh);
		free(fl);
		free(ms);
		return 1;
	}
	int have_dir = mkdtemp(dir) != NULL;
	if (!have_dir) {
		memcpy(dir, "/tmp/nanoclock-bench-XXXXXX", sizeof("/tmp/nanoclock-bench-XXXXXX"));
		have_dir = mkdtemp(dir) != NULL;
	}
	if (have_dir)
		snprintf(rec, sizeof(rec), "%s/record", dir);
	/* this process's own measurement, not a record it would adopt (then
	 * it could publish nothing until it measured finer than that claim) */
	setenv("NANOCLOCK_SHARED", have_dir ? rec : "off", 1);
	nc_init();
	struct pair a, b;
	take_pair(&a);
	int k = 0, ks = 0, kf = 0;
	char why[192] = "";
	int wrote = 0;
	for (int i = 0; i < runs; i++) {
		if (idle_s > 0)
			sleep_s(idle_s);
		setenv("NANOCLOCK_SHARED", "off", 1);
		if (run_cold(&c[k]) == 0)
			k++;
		(void)nc_now_ns(); /* a due refresh refines the rate first */
		if (have_dir && nc_shared_publish(rec, -1, 0, 0, why, sizeof(why)) == 0)
			wrote++;
		if (idle_s > 0)
			sleep_s(idle_s);
		setenv("NANOCLOCK_SHARED", have_dir ? rec : "off", 1);
		if (run_cold(&sh[ks]) == 0)
			ks++;
		/* the floor: the same record's system calls, without the library */
		if (have_dir) {
			if (idle_s > 0)
				sleep_s(idle_s);
			int r = run_cold_as(&fl[kf], "--floor-once");
			if (r == 0 && fl[kf].status == 0)
				kf++;
			else if (!floor_why[0])
				snprintf(floor_why, sizeof(floor_why), "%s",
					 r == 0 ? "it could not read the record or the boot id" : cold_why);
		}
	}
	unsetenv("NANOCLOCK_SHARED");
	if (k < runs || idle_s < 2.5)
		sleep_s(5); /* the reference needs a baseline of seconds */
	take_pair(&b);
	double ref = (double)(b.tk - a.tk) / (b.raw - a.raw) * 1e9;
	/* the reference's own error: half of each end's bracket over the span
	 * (a record's stated uncertainty may be finer than that: then the
	 * check can only say its rate is as good as the reference can tell) */
	double ref_ppm = ((a.width + b.width) / 2 + 1) / (b.raw - a.raw) * 1e6;
	printf("nanoclock bench init — %d runs of two cold processes and a floor, %.1f s idle "
	       "before each; counter %s\n"
	       "reference rate %.3f Hz +-%.4f ppm over %.1f s (this process)\n"
	       "unshared: NANOCLOCK_SHARED=off (calibrates); shared: a record this process rewrote "
	       "before each start at %s (%d written%s%s)\n\n",
	       k, idle_s, nc_counter_name(), ref, ref_ppm, (b.raw - a.raw) / 1e9,
	       have_dir ? rec : "(none: no directory)", wrote,
	       why[0] ? "; " : "", why);
	if (k < runs || ks < runs)
		printf("%d of %d cold starts gave no result: %s\n\n", 2 * runs - k - ks, 2 * runs,
		       cold_why);
	print_init_runs(c, k, sh, ks, runs, ref, ref_ppm);
	printf("\n");
	summary("unshared:", c, k, ref, ref_ppm, ms, 0.5);
	summary("shared:", sh, ks, ref, ref_ppm, ms, 0.1);
	floor_summary(fl, kf, runs, sh, ks, ms);
	if (have_dir) {
		char p[96];
		unlink(rec);
		snprintf(p, sizeof(p), "%s.new", rec);
		unlink(p);
		rmdir(dir);
	}
	free(c);
	free(sh);
	free(fl);
	free(ms);
	return k == runs && ks == runs ? 0 : 1;
}
