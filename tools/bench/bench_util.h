/* SPDX-License-Identifier: MIT */
/* What the bench's files share: small helpers, a cold process's figures
 * and the commands' entry points (bench.c dispatches). */
#ifndef NC_TOOL_BENCH_UTIL_H
#define NC_TOOL_BENCH_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static inline int64_t raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static inline double median(double *v, int k)
{
	qsort(v, (size_t)k, sizeof(v[0]), cmp_d);
	return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

static inline void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* ---- cold processes ---- */
struct cold {
	double init_ms, hz, ppm;
	int status;
	char source[32]; /* nc_ticks_per_second_source(): "shared" when a record was adopted */
	long faults;     /* page faults during nc_init() */
	double touch_us; /* a first touch of a page in that process (touch_cost_us) */
};

/* A bracket of an ordered counter read around CLOCK_MONOTONIC_RAW. */
struct pair {
	double raw;  /* middle of the narrowest raw bracket around the reads */
	uint64_t nc; /* nc_now_ns inside it */
	uint64_t tk; /* an ordered counter read inside it */
	double width; /* that bracket's width, ns */
};

/* bench_init.c */
int run_cold(struct cold *out);
int init_once(void);
int floor_once(void);
void take_pair(struct pair *p);
int bench_init(int runs, double idle_s);
/* bench_unix.c */
void bench_accuracy(const struct pair *p0, double hz0, double ppm0);
int bench_unix(double seconds, int step);
int bench_sync(int runs);

#endif
