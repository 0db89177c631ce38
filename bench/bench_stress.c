/*
 * `nanoclock bench stress [--threads N] [--seconds S]`: the ordering
 * guarantee under load.  N threads (16) take one mutex in turn for S
 * seconds (60); holding it, each reads every ordered clock the library has
 * — nc_now_ns, nc_unix_ns, nc_ticks_begin, nc_ticks_end — and compares
 * each with the last value any thread read from it under the same mutex.
 * The unlock/lock pair orders one holder's reads before the next one's
 * (happens-before), so a smaller value is an inversion:
 *   - nc_now_ns and nc_unix_ns promise none (nc_unix_ns except across a
 *     step of the system clock, which the library counts: inversions while
 *     the step count moved are reported apart, not as failures);
 *   - nc_ticks_begin/nc_ticks_end are ordered reads of the raw counter:
 *     none where the CPUs' counters agree (`nanoclock check`).
 * With more threads than CPUs the mutex passes between threads on
 * different CPUs and between threads that were preempted and migrated; the
 * hand-offs between different threads are counted, so a run in which one
 * thread kept the lock to itself is visible.
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
	uint64_t unix_excused;   /* nc_unix_ns inversions while the system clock was stepped */
	uint32_t steps;          /* the library's count of system clock steps */
	int stop;
} st = {.mu = PTHREAD_MUTEX_INITIALIZER, .owner = -1};

static uint32_t clock_steps(void)
{
	struct nc_unix_status u;
	nc_get_unix_status(&u);
	return u.steps;
}

static void compare(int k, uint64_t v)
{
	if (st.have && v < st.last[k]) {
		if (k == C_UNIX && clock_steps() != st.steps) {
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

int nc_bench_stress(long threads, double seconds)
{
	int rc = nc_init();
	st.steps = clock_steps();
	pthread_t *th = calloc((size_t)threads, sizeof(*th));
	if (!th) {
		fprintf(stderr, "nanoclock bench stress: out of memory\n");
		return 1;
	}
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
	free(th);
	if (started < threads) {
		fprintf(stderr, "nanoclock bench stress: only %ld of %ld threads could start\n", started,
			threads);
		return 1;
	}
	double hz = nc_ticks_per_second();
	printf("nanoclock bench stress — %ld threads, %.1f s, one mutex; counter %s%s\n", threads,
	       seconds, nc_counter_name(), rc ? " (nc_init reported an error)" : "");
	printf("turns under the mutex: %llu (%llu passed between different threads)\n",
	       (unsigned long long)st.reads, (unsigned long long)st.handoffs);
	uint64_t total = 0;
	for (int k = 0; k < NCLK; k++) {
		double worst = k >= C_BEGIN ? (double)st.worst[k] * 1e9 / hz : (double)st.worst[k];
		printf("  %-15s %llu reads, %llu inversions", clk_name[k], (unsigned long long)st.reads,
		       (unsigned long long)st.inversions[k]);
		if (st.inversions[k])
			printf(" (largest step back %.0f ns)", worst);
		if (k == C_UNIX && st.unix_excused)
			printf(", %llu more across a step of the system clock (allowed)",
			       (unsigned long long)st.unix_excused);
		printf("\n");
		total += st.inversions[k];
	}
	printf("%s\n", total ? "FAILED: a clock went backwards between threads"
			     : "0 inversions: every clock stayed ordered across threads");
	return total ? 1 : 0;
}
