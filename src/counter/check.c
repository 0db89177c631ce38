/* SPDX-License-Identifier: MIT */
/* Sanity check of a candidate counter before it is trusted: read it many
 * times back to back; it must never decrease and must advance.  The
 * smallest nonzero step is its resolution (21 ticks on a VM whose TSC is
 * scaled by the hypervisor, 1 on most bare metal). */
#include "counter.h"

#include <stdio.h>

int nc__counter_check(const struct nc__counter *c, int n, uint64_t *resolution, double *cost_ns,
		      char *why, size_t whylen)
{
	uint64_t res = UINT64_MAX, prev = c->read(c->ctx);
	int advanced = 0;
	int64_t t0 = nc__mono_raw_ns();
	for (int i = 1; i < n; i++) {
		uint64_t v = c->read(c->ctx);
		if (v < prev) {
			snprintf(why, whylen, "went backwards by %llu ticks at read %d",
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
	if (!advanced) {
		snprintf(why, whylen, "did not advance in %d reads", n);
		return NC_CHECK_STILL; /* may just be coarse: the caller can read longer */
	}
	if (resolution)
		*resolution = res;
	if (cost_ns)
		*cost_ns = (double)(t1 - t0) / n;
	return 0;
}
