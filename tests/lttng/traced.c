/* SPDX-License-Identifier: MIT */
/*
 * The program tests/tool/test_lttng.sh traces: N events nanoclock_test:tick,
 * about GAP_US apart, each carrying an ordered counter read
 * (nc_ticks_begin) taken just before the tracepoint, so LTTng's stamp of
 * event i, if it is nanoclock's counter, lies between the reads of events
 * i and i+1.  It prints, one "key value" a line, what the test compares
 * the trace with: the clocks before the first event and after the last
 * (CLOCK_REALTIME, which LTTng's timestamps are converted to through the
 * clock's offset; CLOCK_MONOTONIC_RAW), and nc_now_ns() at the first and
 * last event (the interval the trace must show), with an ordered read
 * before each of those two (how long before its event's stamp it was
 * taken is then told by the stamp); what the test's tolerances are made
 * of: the rate's stated uncertainty, how far the kernel may be moving
 * CLOCK_REALTIME's rate from CLOCK_MONOTONIC_RAW's (kernel_ppm), and the
 * narrowest of ten counter brackets around
 * CLOCK_REALTIME (how LTTng's session daemon measures the clock's offset:
 * its half width is the offset's error, measured here the same way).
 *   traced N GAP_US
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#include <nanoclock.h>

#include "tp.h"

static long long ns_of(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* How far CLOCK_REALTIME's rate may be from CLOCK_MONOTONIC_RAW's, by
 * what adjtimex states (as the library reads it, src/base/refclock.c):
 * the frequency and tick corrections, the offset the kernel's PLL still
 * slews (offset / 2^(2 + constant) per second, the whole of it with a PPS
 * signal) and adjtime()'s 500 ppm while it has any left. */
static double kernel_ppm(void)
{
	struct timex tx = {0}, px = {0};
	tx.modes = ADJ_OFFSET_SS_READ;
	if (adjtimex(&tx) < 0)
		return 0;
	long hz = sysconf(_SC_CLK_TCK), nominal = hz > 0 ? 1000000 / hz : 10000;
	double rate = ((1 + (double)tx.freq / 65536.0 * 1e-6) * (double)tx.tick / (double)nominal - 1) * 1e6;
	double ppm = rate < 0 ? -rate : rate;
	if (tx.offset != 0)
		ppm += 500;
	if (adjtimex(&px) >= 0 && px.offset != 0) {
		double off = (double)px.offset * ((px.status & STA_NANO) ? 1 : 1000);
		off = off < 0 ? -off : off;
		long sh = 2 + (px.constant > 0 && px.constant < 20 ? px.constant : 0);
		int pps = (px.status & STA_PPSTIME) && (px.status & STA_PPSSIGNAL);
		ppm += (pps ? off : off / (double)(1L << sh)) / 1e3;
	}
	return ppm;
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
	/* the offset's bracket as lttng-sessiond takes it (its
	 * measure_clock_offset: the clock's read, CLOCK_REALTIME, the clock's
	 * read, ten times, the narrowest kept) */
	uint64_t offset_bracket = UINT64_MAX;
	for (int i = 0; i < 10; i++) {
		uint64_t c0 = nc_ticks();
		(void)ns_of(CLOCK_REALTIME);
		uint64_t c1 = nc_ticks();
		if (c1 - c0 < offset_bracket)
			offset_bracket = c1 - c0;
	}
	long long rt0 = ns_of(CLOCK_REALTIME), raw0 = ns_of(CLOCK_MONOTONIC_RAW);
	uint64_t first_ns = 0, last_ns = 0, pre_first = 0, pre_last = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t pre = nc_ticks_begin();
		uint64_t now = nc_now_ns();
		uint64_t t = nc_ticks_begin();
		lttng_ust_tracepoint(nanoclock_test, tick, i, t);
		if (i == 0) {
			first_ns = now;
			pre_first = pre;
		}
		last_ns = now;
		pre_last = pre;
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
	printf("ticks_pre_first %llu\nticks_pre_last %llu\n", (unsigned long long)pre_first,
	       (unsigned long long)pre_last);
	printf("offset_bracket_ticks %llu\n", (unsigned long long)offset_bracket);
	printf("kernel_ppm %.6f\n", kernel_ppm());
	return 0;
}
