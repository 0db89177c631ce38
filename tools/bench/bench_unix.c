/* SPDX-License-Identifier: MIT */
/* `nanoclock bench unix` and `bench sync`, and the accuracy runs: nc_now_ns
 * against CLOCK_MONOTONIC_RAW, nc_unix_ns against CLOCK_REALTIME, how soon a
 * step is followed, and the cross-CPU check repeated. */
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


/* ---- accuracy of nc_now_ns against CLOCK_MONOTONIC_RAW ---- */
static volatile uint64_t sink; /* reads the compiler must keep */
/* keep the library in use (as an application would) while we wait */
static void use_for(double seconds)
{
	double end = mono() + seconds * 1e9;
	struct timespec ts = {0, 1000000};
	while (mono() < end) {
		sink += nc_now_ns();
		nanosleep(&ts, NULL);
	}
}

void bench_accuracy(const struct pair *p0, double hz0, double ppm0)
{
	printf("\naccuracy against CLOCK_MONOTONIC_RAW (library kept in use, 1 call/ms):\n");
	struct pair p1, p5, p10;
	use_for(1.0);
	take_pair(&p1);
	use_for(4.0);
	take_pair(&p5);
	double hz5 = nc_ticks_per_second(), ppm5 = nc_ticks_per_second_uncertainty_ppm();
	use_for(5.0);
	take_pair(&p10);
	double hz10 = nc_ticks_per_second(), ppm10 = nc_ticks_per_second_uncertainty_ppm();
	double ref5 = (double)(p5.tk - p0->tk) / (p5.raw - p0->raw) * 1e9;
	double ref10 = (double)(p10.tk - p0->tk) / (p10.raw - p0->raw) * 1e9;
	const struct pair *ps[] = {&p1, &p5, &p10};
	const char *names[] = {"1 s", "5 s", "10 s"};
	for (int i = 0; i < 3; i++) {
		double e_nc = (double)(ps[i]->nc - p0->nc), e_raw = ps[i]->raw - p0->raw;
		printf("  elapsed nc_now_ns over %-4s: %+.4f ppm vs CLOCK_MONOTONIC_RAW (%+.0f ns); "
		       "offset now %+.0f ns\n",
		       names[i], (e_nc / e_raw - 1) * 1e6, e_nc - e_raw, (double)ps[i]->nc - ps[i]->raw);
	}
	printf("  rate at init  : %.3f Hz, stated +-%.3f ppm, off the 5 s reference by %+.4f ppm\n",
	       hz0, ppm0, (hz0 / ref5 - 1) * 1e6);
	printf("  rate after 5 s: %.3f Hz, stated +-%.4f ppm, off the 5 s reference by %+.4f ppm\n",
	       hz5, ppm5, (hz5 / ref5 - 1) * 1e6);
	printf("  rate after 10s: %.3f Hz, stated +-%.4f ppm, off the 10 s reference by %+.4f ppm\n",
	       hz10, ppm10, (hz10 / ref10 - 1) * 1e6);
}

/* ---- Unix time against the system clock ---- */
static int64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* How long after a step of the system clock nc_unix_ns agrees with it
 * again (within 10 us): ns, or -1 after 3 s. */
static double follow_after_step(int64_t step_ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + step_ns;
	ts.tv_sec = (time_t)(t / 1000000000);
	ts.tv_nsec = (long)(t % 1000000000);
	int64_t r0 = raw_ns();
	if (clock_settime(CLOCK_REALTIME, &ts) != 0)
		return -2;
	while (raw_ns() - r0 < 3000000000) {
		int64_t a = real_ns(), u = nc_unix_ns(), b = real_ns();
		if (u >= a - 10000 && u <= b + 10000)
			return (double)(raw_ns() - r0);
	}
	return -1;
}

int bench_unix(double seconds, int step)
{
	nc_init();
	int64_t worst_out = 0, n = 0, within2 = 0;
	double nr_min = 1e30, nr_max = -1e30;
	int64_t end = raw_ns() + (int64_t)(seconds * 1e9);
	while (raw_ns() < end) {
		int64_t best = INT64_MAX, out = 0;
		for (int i = 0; i < 5; i++) { /* the narrowest of 5 brackets */
			int64_t a = real_ns(), u = nc_unix_ns(), b = real_ns();
			if (b - a < best) {
				best = b - a;
				out = u < a ? a - u : u > b ? u - b : 0;
			}
		}
		worst_out = out > worst_out ? out : worst_out;
		within2 += out <= 2000;
		n++;
		int64_t best_r = INT64_MAX;
		double off = 0;
		for (int i = 0; i < 5; i++) {
			int64_t a = raw_ns();
			uint64_t v = nc_now_ns();
			int64_t b = raw_ns();
			if (b - a < best_r) {
				best_r = b - a;
				off = (double)(int64_t)(v - (uint64_t)a) - (double)(b - a) / 2;
			}
		}
		nr_min = off < nr_min ? off : nr_min;
		nr_max = off > nr_max ? off : nr_max;
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	struct nc_unix_status st;
	nc_get_unix_status(&st);
	printf("nanoclock bench unix — %.0f s, a sample every 10 ms (%lld samples), counter %s\n",
	       seconds, (long long)n, nc_counter_name());
	printf("nc_unix_ns outside the bracketing CLOCK_REALTIME reads: worst %lld ns; within 2 us in "
	       "%lld of %lld samples\n",
	       (long long)worst_out, (long long)within2, (long long)n);
	printf("nc_now_ns - CLOCK_MONOTONIC_RAW moved by %.0f ns over the run (%.0f .. %.0f ns)\n",
	       nr_max - nr_min, nr_min, nr_max);
	printf("ties %u, steps followed %u; system clock %s\n", st.refreshes, st.steps,
	       st.synchronised == 1 ? "synchronised" : "not synchronised");
	if (!step)
		return 0;
	printf("\nstep of the system clock (+10 ms, then back):\n");
	for (int up = 0; up < 2; up++) {
		if (up && nc_upkeep_start() != 0)
			printf("  upkeep thread could not start\n");
		struct timespec ts = {0, 300000000};
		nanosleep(&ts, NULL);
		double f1 = follow_after_step(10000000);
		nanosleep(&ts, NULL);
		double f2 = follow_after_step(-10000000);
		if (f1 == -2 || f2 == -2) {
			printf("  cannot set the clock here (needs CAP_SYS_TIME): skipped\n");
			return 0;
		}
		printf("  %-26s followed after %.3f ms (+10 ms) and %.3f ms (-10 ms)\n",
		       up ? "with the upkeep thread:" : "readers only (1 s ties):", f1 / 1e6, f2 / 1e6);
		if (up)
			nc_upkeep_stop();
	}
	return 0;
}

/* ---- cross-CPU check: hand-off limit and repeated runs ---- */

/* Ping-pong of one cache line between two pinned threads.  The minimum
 * one-way time a->b plus the minimum b->a (counter read before the store,
 * counter read after the load that saw it) is the hand-off limit: no
 * probe-ordering method can bound a shift more tightly than that, and the
 * unknown shift between the CPUs cancels in the sum. */
#define PP_N 20000
struct pingpong {
	uint64_t flag __attribute__((aligned(64)));
	int cpu[2];
	uint64_t b_arrived; /* b's counter read on seeing a's store */
	uint64_t b_left;    /* b's counter read just before its reply */
};

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

static void *pp_b(void *arg)
{
	struct pingpong *p = arg;
	pin(p->cpu[1]);
	for (uint64_t i = 0; i < PP_N; i++) {
		while (__atomic_load_n(&p->flag, __ATOMIC_ACQUIRE) != 2 * i + 1)
			;
		__atomic_store_n(&p->b_arrived, nc_ticks_begin(), __ATOMIC_RELAXED);
		__atomic_store_n(&p->b_left, nc_ticks_begin(), __ATOMIC_RELAXED);
		__atomic_store_n(&p->flag, 2 * i + 2, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* The hand-off limit in ticks between cpu a and cpu b (0 if the threads
 * could not run). */
static uint64_t handoff_limit(int a, int b)
{
	static struct pingpong p; /* one at a time */
	memset(&p, 0, sizeof(p));
	p.cpu[0] = a;
	p.cpu[1] = b;
	pthread_t th;
	if (pthread_create(&th, NULL, pp_b, &p) != 0)
		return 0;
	cpu_set_t old;
	pthread_getaffinity_np(pthread_self(), sizeof(old), &old);
	pin(a);
	uint64_t best_ab = UINT64_MAX, best_ba = UINT64_MAX;
	for (uint64_t i = 0; i < PP_N; i++) {
		uint64_t t0 = nc_ticks_begin();
		__atomic_store_n(&p.flag, 2 * i + 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&p.flag, __ATOMIC_ACQUIRE) != 2 * i + 2)
			;
		uint64_t t3 = nc_ticks_begin();
		uint64_t t1 = __atomic_load_n(&p.b_arrived, __ATOMIC_RELAXED);
		uint64_t t2 = __atomic_load_n(&p.b_left, __ATOMIC_RELAXED);
		if (t1 - t0 < best_ab)
			best_ab = t1 - t0;
		if (t3 - t2 < best_ba)
			best_ba = t3 - t2;
	}
	pthread_join(th, NULL);
	pthread_setaffinity_np(pthread_self(), sizeof(old), &old);
	return best_ab + best_ba;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

int bench_sync(int runs)
{
	struct nc_sync_options o;
	nc_sync_default_options(&o);
	static struct nc_sync_report r;
	nc_sync_check(&o, &r); /* warm-up, and the CPU list */
	if (r.ncpus < 2) {
		printf("one CPU allowed: nothing to compare (report: %s, max shift %llu)\n",
		       nc_sync_verdict_name(r.verdict), (unsigned long long)r.max_shift_ticks);
		return 0;
	}
	int a = r.cpu[0].cpu, b = r.cpu[1].cpu;
	uint64_t lim1 = handoff_limit(a, b);
	uint64_t *bound = calloc((size_t)runs, sizeof(uint64_t));
	double *ms = calloc((size_t)runs, sizeof(double));
	if (!bound || !ms) {
		free(bound);
		free(ms);
		return 1;
	}
	int counts[3] = {0, 0, 0}, within = 0;
	uint64_t probes = 0;
	double total_ms = 0;
	for (int i = 0; i < runs; i++) {
		nc_sync_check(&o, &r);
		counts[r.verdict]++;
		bound[i] = r.max_shift_ticks;
		ms[i] = r.elapsed_ms;
		probes += r.probes;
		total_ms += r.elapsed_ms;
	}
	uint64_t lim2 = handoff_limit(a, b);
	uint64_t lim = lim1 < lim2 ? lim1 : lim2;
	for (int i = 0; i < runs; i++)
		if ((double)bound[i] <= 1.1 * (double)lim)
			within++;
	qsort(bound, (size_t)runs, sizeof(bound[0]), cmp_u64);
	qsort(ms, (size_t)runs, sizeof(ms[0]), cmp_d);
	unsigned per_cpu = (unsigned)(r.probes / (uint64_t)r.ncpus / r.rounds_done);
	printf("nanoclock bench sync — CPUs %d and %d, method cop, %u probes x %u rounds per run\n", a,
	       b, per_cpu, o.rounds);
	printf("hand-off limit (min a->b + min b->a): %llu ticks (before %llu, after %llu)\n",
	       (unsigned long long)lim, (unsigned long long)lim1, (unsigned long long)lim2);
	printf("%d runs: %d consistent, %d inconsistent, %d inconclusive\n", runs, counts[0],
	       counts[1], counts[2]);
	printf("max shift bound: min %llu, median %llu, max %llu ticks = %.3f / %.3f / %.3f x the "
	       "limit; %d of %d runs within 1.1x\n",
	       (unsigned long long)bound[0], (unsigned long long)bound[runs / 2],
	       (unsigned long long)bound[runs - 1], (double)bound[0] / lim,
	       (double)bound[runs / 2] / lim, (double)bound[runs - 1] / lim, within, runs);
	printf("elapsed per check: median %.2f ms, max %.2f ms\n", ms[runs / 2], ms[runs - 1]);
	/* cop serialises every probe through one cache line: time grows with
	 * ncpus * probes * rounds at the measured cost per probe */
	double per_probe_us = total_ms * 1e3 / (double)probes;
	printf("cost per probe: %.3f us; projected with the default probe counts (2000 per CPU at 64 "
	       "and 256 CPUs): 64 CPUs %.0f ms, 256 CPUs %.0f ms — if the hand-off cost stays the "
	       "same; contention on wider machines makes each probe dearer\n",
	       per_probe_us, 64.0 * 2000 * o.rounds * per_probe_us / 1e3,
	       256.0 * 2000 * o.rounds * per_probe_us / 1e3);
	free(bound);
	free(ms);
	return 0;
}
