/* SPDX-License-Identifier: MIT */
/*
 * `nanoclock bench stress [--threads N] [--seconds S]`: the ordering
 * guarantee under load.  N threads (16) take one mutex in turn for S
 * seconds (60); holding it, each reads every ordered clock the library has
 * — nc_now_ns, nc_unix_ns, nc_ticks_begin, nc_ticks_end — and compares
 * each with the last value any thread read from it under the same mutex.
 * The unlock/lock pair orders one holder's reads before the next one's
 * (happens-before), so a smaller value is an inversion:
 *   - nc_now_ns and nc_unix_ns promise none (nc_unix_ns except across a
 *     step of the system clock: an inversion is excused, and reported
 *     apart, only when CLOCK_REALTIME - CLOCK_MONOTONIC moved by more than
 *     2 us since the start, i.e. the clock really was set — not when the
 *     library merely counted a step of its own);
 *   - nc_ticks_begin/nc_ticks_end are ordered reads of the raw counter:
 *     none where the CPUs' counters agree (`nanoclock check`).
 * With more threads than CPUs the mutex passes between threads on
 * different CPUs and between threads that were preempted and migrated; the
 * hand-offs between different threads are counted, so a run in which one
 * thread kept the lock to itself is visible.
 * Meanwhile one more thread disturbs the library (a 1 us sleep between
 * rounds: every few tens of us) as the
 * upkeep thread would on a clock set (a forced re-tie of Unix time,
 * nc_unix_retie) and as nc_get_unix_status does (a look, which
 * may re-tie): that is how a re-tie that started below values already
 * handed out was found.
 * Exit status 0 when no clock went backwards.
 */
#include "bench.h"

#include <nanoclock.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { C_NOW, C_UNIX, C_BEGIN, C_END, NCLK };
static const char *const clk_name[NCLK] = {"nc_now_ns", "nc_unix_ns", "nc_ticks_begin",
					   "nc_ticks_end"};

static struct {
	pthread_mutex_t mu;
	uint64_t last[NCLK];
	int have;
	long owner;              /* index of the thread that held the lock last */
	uint64_t reads, handoffs;
	uint64_t inversions[NCLK];
	uint64_t worst[NCLK];    /* largest backward step, in the clock's unit */
	uint64_t unix_excused;   /* nc_unix_ns inversions after the system clock was set */
	int64_t offset0;         /* CLOCK_REALTIME - CLOCK_MONOTONIC at the start */
	int stop;
} st = {.mu = PTHREAD_MUTEX_INITIALIZER, .owner = -1};

static int64_t ns_of(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC, from the narrowest of 5 brackets: it
 * moves only when the system clock is set (NTP's slewing moves both). */
static int64_t realtime_offset(void)
{
	int64_t best = INT64_MAX, off = 0;
	for (int i = 0; i < 5; i++) {
		int64_t a = ns_of(CLOCK_MONOTONIC), r = ns_of(CLOCK_REALTIME), b = ns_of(CLOCK_MONOTONIC);
		if (b - a < best) {
			best = b - a;
			off = r - (a + (b - a) / 2);
		}
	}
	return off;
}

static int clock_was_set(void)
{
	int64_t d = realtime_offset() - st.offset0;
	return d > 2000 || d < -2000;
}

static void compare(int k, uint64_t v)
{
	if (st.have && v < st.last[k]) {
		if (k == C_UNIX && clock_was_set()) {
			st.unix_excused++;
		} else {
			st.inversions[k]++;
			if (st.last[k] - v > st.worst[k])
				st.worst[k] = st.last[k] - v;
		}
	}
	st.last[k] = v;
}

static void *worker(void *arg)
{
	long self = (long)(intptr_t)arg;
	while (!__atomic_load_n(&st.stop, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&st.mu);
		uint64_t v[NCLK];
		/* each clock read once per turn, in an order that rotates so that
		 * every clock is sometimes read first after the hand-off */
		int first = (int)(st.reads % NCLK);
		for (int j = 0; j < NCLK; j++) {
			int k = (first + j) % NCLK;
			switch (k) {
			case C_NOW: v[k] = nc_now_ns(); break;
			case C_UNIX: v[k] = (uint64_t)nc_unix_ns(); break;
			case C_BEGIN: v[k] = nc_ticks_begin(); break;
			default: v[k] = nc_ticks_end(); break;
			}
		}
		for (int k = 0; k < NCLK; k++)
			compare(k, v[k]);
		st.have = 1;
		st.reads++;
		if (st.owner != self)
			st.handoffs++;
		st.owner = self;
		pthread_mutex_unlock(&st.mu);
	}
	return NULL;
}

static uint64_t disturbances;
static void *disturber(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 1000};
	while (!__atomic_load_n(&st.stop, __ATOMIC_RELAXED)) {
		nc_unix_retie();
		struct nc_unix_status u;
		nc_get_unix_status(&u);
		disturbances++;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int tool_bench_stress(long threads, double seconds)
{
	int rc = nc_init();
	/* Unix time re-tied every millisecond (the shortest period allowed):
	 * a thousand re-ties a second under the readers' feet */
	nc_set_unix_refresh_ms(1);
	st.offset0 = realtime_offset();
	pthread_t *th = calloc((size_t)threads, sizeof(*th));
	if (!th) {
		fprintf(stderr, "nanoclock bench stress: out of memory\n");
		return 1;
	}
	pthread_t dist;
	int have_dist = pthread_create(&dist, NULL, disturber, NULL) == 0;
	long started = 0;
	for (; started < threads; started++)
		if (pthread_create(&th[started], NULL, worker, (void *)(intptr_t)started) != 0)
			break;
	struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
	while (started > 0 && nanosleep(&ts, &ts) != 0)
		;
	__atomic_store_n(&st.stop, 1, __ATOMIC_RELAXED);
	for (long i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (have_dist)
		pthread_join(dist, NULL);
	free(th);
	if (started < threads) {
		fprintf(stderr, "nanoclock bench stress: only %ld of %ld threads could start\n", started,
			threads);
		return 1;
	}
	double hz = nc_ticks_per_second();
	printf("nanoclock bench stress — %ld threads, %.1f s, one mutex; counter %s%s\n", threads,
	       seconds, nc_counter_name(), rc ? " (nc_init reported an error)" : "");
	printf("turns under the mutex: %llu (%llu passed between different threads); %llu forced "
	       "re-ties and looks meanwhile\n",
	       (unsigned long long)st.reads, (unsigned long long)st.handoffs,
	       (unsigned long long)disturbances);
	uint64_t total = 0;
	for (int k = 0; k < NCLK; k++) {
		double worst = k >= C_BEGIN ? (double)st.worst[k] * 1e9 / hz : (double)st.worst[k];
		printf("  %-15s %llu reads, %llu inversions", clk_name[k], (unsigned long long)st.reads,
		       (unsigned long long)st.inversions[k]);
		if (st.inversions[k])
			printf(" (largest step back %.0f ns)", worst);
		if (k == C_UNIX && st.unix_excused)
			printf(", %llu more after the system clock was set (allowed)",
			       (unsigned long long)st.unix_excused);
		printf("\n");
		total += st.inversions[k];
	}
	printf("%s\n", total ? "FAILED: a clock went backwards between threads"
			     : "0 inversions: every clock stayed ordered across threads");
	return total ? 1 : 0;
}
