/* SPDX-License-Identifier: MIT */
/* Time a block of code with ordered reads, and stamp events with nc_now_ns.
 *
 *   nc_ticks_begin()  taken after every earlier instruction, before the block
 *   nc_ticks_end()    taken after the block, before any later instruction
 *   nc_ticks_to_ns()  the difference in ns (error < 1 ns)
 *
 * Unordered nc_ticks() is cheaper but the CPU may move it across the code
 * being timed: use it for stamps, not for brackets of short code.
 *
 * Build: cc basic.c $(pkg-config --cflags --libs nanoclock)
 * (in the source tree: make examples; ./build/examples/basic) */
#include <nanoclock.h>

#include <stdio.h>
#include <stdlib.h>

static volatile unsigned sink;

static void work(void)
{
	for (unsigned i = 0; i < 1000; i++)
		sink += i * i;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

#define RUNS 101

int main(void)
{
	int rc = nc_init(); /* optional: the first call would do it */
	if (rc != 0)
		fprintf(stderr, "nc_init: %s (falling back, still usable)\n", nc_strerror(rc));

	/* the cost of the bracket itself: its narrowest is the fixed part */
	uint64_t empty = UINT64_MAX;
	for (int i = 0; i < 1000; i++) {
		uint64_t t0 = nc_ticks_begin();
		uint64_t t1 = nc_ticks_end();
		if (t1 - t0 < empty)
			empty = t1 - t0;
	}

	uint64_t d[RUNS];
	uint64_t stamp = nc_now_ns(); /* an event stamp: monotonic ns */
	for (int i = 0; i < RUNS; i++) {
		uint64_t t0 = nc_ticks_begin();
		work();
		uint64_t t1 = nc_ticks_end();
		d[i] = t1 - t0;
	}
	uint64_t elapsed = nc_now_ns() - stamp;
	qsort(d, RUNS, sizeof(d[0]), cmp_u64);

	printf("counter %s at %.3f MHz (+-%.3g ppm, %s)\n", nc_counter_name(),
	       nc_ticks_per_second() / 1e6, nc_ticks_per_second_uncertainty_ppm(),
	       nc_ticks_per_second_source());
	printf("work(): best %llu ns, median %llu ns of %d runs (bracket overhead %llu ns, not "
	       "subtracted)\n",
	       (unsigned long long)nc_ticks_to_ns(d[0]), (unsigned long long)nc_ticks_to_ns(d[RUNS / 2]),
	       RUNS, (unsigned long long)nc_ticks_to_ns(empty));
	printf("the %d runs took %llu ns by nc_now_ns (stamped at %llu ns)\n", RUNS,
	       (unsigned long long)elapsed, (unsigned long long)stamp);
	return d[0] <= d[RUNS / 2] && elapsed > 0 ? 0 : 1;
}
