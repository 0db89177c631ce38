/* Time a short piece of code with ordered reads, convert to ns, and stamp
 * events with nc_now_ns.  Build: cc basic.c $(pkg-config --cflags --libs nanoclock) */
#include <nanoclock.h>

#include <stdio.h>

static volatile unsigned sink;

static void work(void)
{
	for (unsigned i = 0; i < 1000; i++)
		sink += i * i;
}

int main(void)
{
	int rc = nc_init(); /* optional: the first call would do it */
	if (rc != 0)
		fprintf(stderr, "nc_init: %s (falling back, still usable)\n", nc_strerror(rc));

	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 100; i++) {
		uint64_t t0 = nc_ticks_begin();
		work();
		uint64_t t1 = nc_ticks_end();
		if (t1 - t0 < best)
			best = t1 - t0;
	}
	uint64_t stamp = nc_now_ns();
	printf("counter %s at %.3f MHz (+-%.3g ppm, %s)\n", nc_counter_name(),
	       nc_ticks_per_second() / 1e6, nc_ticks_per_second_uncertainty_ppm(),
	       nc_ticks_per_second_source());
	printf("work(): best of 100 = %llu ticks = %llu ns; stamped at %llu ns\n",
	       (unsigned long long)best, (unsigned long long)nc_ticks_to_ns(best),
	       (unsigned long long)stamp);
	return 0;
}
