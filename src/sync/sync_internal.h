/* SPDX-License-Identifier: MIT */
/* The cross-CPU check (src/sync/): sync.c collects the readings (threads
 * pinned to each CPU), analysis.c says what they mean (pure). */
#ifndef NC_SYNC_INTERNAL_H
#define NC_SYNC_INTERNAL_H

#include "../base/compiler.h"
#include "nanoclock_sync.h"

#include <stddef.h>
#include <stdint.h>

/* ---- analysis.c: the pure part of the cross-CPU check ---- */
struct nc__sync_rec {
	uint32_t idx; /* index into the CPU list; 0 is the base */
	uint64_t t;
};
struct nc__sync_iv {
	int64_t lo, hi;
	int has_lo, has_hi;
};
struct nc__sync_acc {
	int ncpu;
	const int *cpus;
	struct nc__sync_iv iv[NC_SYNC_MAX_CPUS];
	uint64_t enclosed[NC_SYNC_MAX_CPUS], probes[NC_SYNC_MAX_CPUS];
	int advanced[NC_SYNC_MAX_CPUS];
	int watched[NC_SYNC_MAX_CPUS]; /* two readings of it in one round: advancing can be told */
	uint64_t decreases, total;
	int pace_ok, empty, shifted, bad_idx;
	char evidence[256];
};
NC_HIDDEN void nc__sync_acc_init(struct nc__sync_acc *a, const int *cpus, int ncpu);
/* One round's records, in the order they happened. */
NC_HIDDEN void nc__sync_analyse_round(struct nc__sync_acc *a, const struct nc__sync_rec *r,
				      size_t n);
NC_HIDDEN int nc__sync_enough(const struct nc__sync_acc *a, unsigned min_enclosed);
/* The report from the accumulated rounds (verdict, bounds, evidence). */
NC_HIDDEN void nc__sync_report(struct nc__sync_acc *a, unsigned min_enclosed, double hz,
			       int judge, struct nc_sync_report *rep);

/* ---- sync.c ---- */
NC_HIDDEN extern int nc__sync_fail_create_at;
NC_HIDDEN int nc__pin_self(int cpu); /* 0, or an errno */

#endif
