/* SPDX-License-Identifier: MIT */
/*
 * The program tests/test_lttng.sh traces: N events nanoclock_test:tick,
 * about GAP_US apart, each carrying an ordered counter read
 * (nc_ticks_begin) taken just before the tracepoint, so LTTng's stamp of
 * event i, if it is nanoclock's counter, lies between the reads of events
 * i and i+1.  It prints, one "key value" a line, what the test compares
 * the trace with: the clocks before the first event and after the last
 * (CLOCK_REALTIME, which LTTng's timestamps are converted to through the
 * clock's offset; CLOCK_MONOTONIC_RAW), and nc_now_ns() at the first and
 * last event (the interval the trace must show).
 *   traced N GAP_US
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <nanoclock.h>

#include "tp.h"

static long long ns_of(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: traced N GAP_US\n");
		return 2;
	}
	unsigned n = (unsigned)strtoul(argv[1], NULL, 10);
	long gap_us = strtol(argv[2], NULL, 10);
	if (n < 2 || gap_us < 0) {
		fprintf(stderr, "traced: N >= 2, GAP_US >= 0\n");
		return 2;
	}
	nc_init();
	long long rt0 = ns_of(CLOCK_REALTIME), raw0 = ns_of(CLOCK_MONOTONIC_RAW);
	uint64_t first_ns = 0, last_ns = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t now = nc_now_ns();
		uint64_t t = nc_ticks_begin();
		lttng_ust_tracepoint(nanoclock_test, tick, i, t);
		if (i == 0)
			first_ns = now;
		last_ns = now;
		if (gap_us > 0 && i + 1 < n) {
			struct timespec d = {gap_us / 1000000, (gap_us % 1000000) * 1000};
			nanosleep(&d, NULL);
		}
	}
	uint64_t t_end = nc_ticks_begin();
	long long raw1 = ns_of(CLOCK_MONOTONIC_RAW), rt1 = ns_of(CLOCK_REALTIME);
	printf("counter %s\n", nc_counter_name());
	printf("hz %.3f\n", nc_ticks_per_second());
	printf("ppm %.6f\n", nc_ticks_per_second_uncertainty_ppm());
	printf("realtime_before %lld\nrealtime_after %lld\n", rt0, rt1);
	printf("monoraw_before %lld\nmonoraw_after %lld\n", raw0, raw1);
	printf("nc_first_ns %llu\nnc_last_ns %llu\n", (unsigned long long)first_ns,
	       (unsigned long long)last_ns);
	printf("ticks_end %llu\n", (unsigned long long)t_end);
	return 0;
}
