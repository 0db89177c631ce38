/* SPDX-License-Identifier: MIT */
/* Sanity check of a candidate counter before it is trusted: read it many
 * times back to back; it must never decrease and must advance.  The
 * smallest nonzero step is its resolution (21 ticks on a VM whose TSC is
 * scaled by the hypervisor, 1 on most bare metal). */
#include "counter.h"
#include "base/fmt.h"

#include <math.h>

#include <stdio.h>

int nc__counter_check(const struct nc__counter *c, int n, uint64_t *resolution, double *cost_ns,
		      char *why, size_t whylen)
{
	uint64_t res = UINT64_MAX, prev = c->read(c->ctx);
	int advanced = 0;
	/* the cost per read is the fastest quarter's: one preemption in the
	 * middle (a busy machine, valgrind: milliseconds) would otherwise make
	 * the counter look that slow, and lose it the selection (seen: the
	 * TSC under valgrind with both CPUs busy, beaten by CLOCK_MONOTONIC) */
	int chunk = n >= 8 ? n / 4 : n;
	double best = INFINITY;
	int64_t t0 = nc__mono_raw_ns(), tc = t0;
	for (int i = 1; i < n; i++) {
		if (i % chunk == 0) {
			int64_t t = nc__mono_raw_ns();
			if ((double)(t - tc) / chunk < best)
				best = (double)(t - tc) / chunk;
			tc = t;
		}
		uint64_t v = c->read(c->ctx);
		if (v < prev) {
			nc__fmt(why, whylen, "went backwards by %llu ticks at read %d",
				 (unsigned long long)(prev - v), i);
			return NC_ENOCOUNTER;
		}
		if (v != prev) {
			advanced = 1;
			if (v - prev < res)
				res = v - prev;
		}
		prev = v;
	}
	int64_t t1 = nc__mono_raw_ns();
	if (chunk < n && (double)(t1 - tc) / (n - (n - 1) / chunk * chunk) < best)
		best = (double)(t1 - tc) / (n - (n - 1) / chunk * chunk);
	if (!advanced) {
		nc__fmt(why, whylen, "did not advance in %d reads", n);
		return NC_CHECK_STILL; /* may just be coarse: the caller can read longer */
	}
	if (resolution)
		*resolution = res;
	if (cost_ns)
		*cost_ns = isfinite(best) ? best : (double)(t1 - t0) / n;
	return 0;
}
