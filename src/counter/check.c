/* SPDX-License-Identifier: MIT */
/* Sanity check of a candidate counter before it is trusted: read it many
 * times back to back; it must never decrease and must advance.  Its
 * resolution is the step that at least 90% of the nonzero steps between
 * back-to-back reads reach (the smallest step kept once the smallest tenth
 * is set aside; at least two seen): what an interval measured with it can
 * resolve, read cost included (21 ticks on a VM whose TSC is scaled by
 * the hypervisor; on most bare metal the time of one read).  The smallest
 * step alone overstated it: on an AMD EPYC KVM guest the TSC reads on a
 * 13-tick (5 ns) grid, 26 ticks apart back to back, and now and then one
 * tick off it (0.1% of the steps in a warm loop, 3.8% in a cold nc_init),
 * and `nanoclock info` said 1 tick = 0.385 ns. */
#include "counter.h"
#include "base/fmt.h"

#include <math.h>

#include <stdio.h>

/* Counts step d among the k smallest distinct steps kept, ascending. */
static void keep_step(uint64_t *step, int *seen, int *n, int k, uint64_t d)
{
	int i = 0;
	while (i < *n && step[i] < d)
		i++;
	if (i < *n && step[i] == d) {
		seen[i]++;
		return;
	}
	if (i == k)
		return; /* larger than the k kept */
	int last = *n < k ? *n : k - 1; /* the largest falls off when full */
	for (int j = last; j > i; j--) {
		step[j] = step[j - 1];
		seen[j] = seen[j - 1];
	}
	step[i] = d;
	seen[i] = 1;
	if (*n < k)
		(*n)++;
}

int nc__counter_check(const struct nc__counter *c, int n, uint64_t *resolution, double *cost_ns,
		      char *why, size_t whylen)
{
	/* the K smallest distinct nonzero steps and how often each was seen */
	enum { K = 4 };
	uint64_t step[K];
	int seen[K], nstep = 0, nonzero = 0;
	uint64_t prev = c->read(c->ctx);
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
			nonzero++;
			keep_step(step, seen, &nstep, K, v - prev);
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
	if (resolution) {
		int need = nonzero / 10 > 2 ? nonzero / 10 : 2, cum = 0;
		*resolution = step[0]; /* too few steps to judge: the smallest */
		for (int k = 0; k < nstep; k++) {
			cum += seen[k];
			if (cum >= need) {
				*resolution = step[k];
				break;
			}
		}
	}
	if (cost_ns)
		*cost_ns = isfinite(best) ? best : (double)(t1 - t0) / n;
	return 0;
}
