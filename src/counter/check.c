/* SPDX-License-Identifier: MIT */
/* Sanity check of a candidate counter before it is trusted: read it many
 * times back to back; it must never decrease and must advance.  Its
 * resolution is the step that at least 90% of the nonzero steps between
 * back-to-back reads reach (the tenth-smallest in a hundred; the second
 * smallest where there are fewer than twenty): what an interval measured
 * with it can resolve, read cost included (on most bare metal the time of
 * one read; on a VM whose TSC the hypervisor scales, a step of its grid
 * or two).  The smallest step alone overstates it: a scaled TSC reads on a
 * grid of several ticks and now and then one tick off it, and the
 * smallest step would then call one tick the resolution. */
#include "counter.h"
#include "base/fmt.h"

#include <math.h>

#include <stdio.h>

/* The m smallest steps so far, as a max-heap in h[0..*n): a step enters
 * only while the heap is filling or when below its largest. */
static void keep_small(uint32_t *h, int *n, int m, uint32_t d)
{
	int i;
	if (*n < m) {
		for (i = (*n)++; i > 0 && h[(i - 1) / 2] < d; i = (i - 1) / 2)
			h[i] = h[(i - 1) / 2];
		h[i] = d;
		return;
	}
	if (d >= h[0])
		return;
	for (i = 0;;) {
		int c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] > h[c])
			c++;
		if (h[c] <= d)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = d;
}

NC_START
int nc__counter_check(const struct nc__counter *c, int n, uint64_t *resolution, double *cost_ns,
		      char *why, size_t whylen)
{
	/* the smallest tenth of the nonzero steps (and two more), for the
	 * resolution; 512 bytes of stack at most */
	enum { KEEP = 128 };
	uint32_t small[KEEP];
	int nsmall = 0, nonzero = 0, keep = n / 10 + 2 < KEEP ? n / 10 + 2 : KEEP;
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
			keep_small(small, &nsmall, keep, v - prev > UINT32_MAX ? UINT32_MAX : (uint32_t)(v - prev));
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
		/* the need-th smallest step: nine in ten steps reach it (with
		 * fewer than two steps kept, the one there is) */
		for (int i = 1; i < nsmall; i++)
			for (int j = i; j > 0 && small[j - 1] > small[j]; j--) {
				uint32_t t = small[j];
				small[j] = small[j - 1];
				small[j - 1] = t;
			}
		int need = nonzero / 10 > 2 ? nonzero / 10 : 2;
		*resolution = small[(need < nsmall ? need : nsmall) - 1];
	}
	if (cost_ns)
		*cost_ns = isfinite(best) ? best : (double)(t1 - t0) / n;
	return 0;
}
