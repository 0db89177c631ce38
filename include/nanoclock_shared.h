/* SPDX-License-Identifier: MIT */
/* The shared calibration record: one rate and one tie to
 * CLOCK_MONOTONIC_RAW for every process of the machine (docs/shared-clock.md).
 *
 * At its first call a process looks for a record (NANOCLOCK_SHARED=PATH,
 * or the system record that `nanoclock daemon` keeps, then the user's own)
 * and adopts it instead of calibrating when it is owned by root or by the
 * process's effective user, writable by nobody else, for this boot, this
 * counter and this CPU, intact (checksum), as certain as the calibration
 * goal, and a bracket of the counter against CLOCK_MONOTONIC_RAW taken
 * now agrees with it.  Otherwise it calibrates as without a record and
 * says why here.  NANOCLOCK_SHARED=off turns sharing off. */
#ifndef NANOCLOCK_SHARED_H
#define NANOCLOCK_SHARED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct nc_shared_status {
	int adopted;            /* 1: this process's rate and tie are the record's */
	int published;          /* 1: this process wrote the record at path */
	char path[256];         /* the record adopted, written or last looked at ("" if off) */
	char status[384];       /* what happened, with the reason for each place looked at */
	/* the record adopted or written (zero when neither) */
	char writer[16];        /* "daemon" or "process" */
	uint32_t writer_uid, writer_pid;
	uint64_t generation;    /* counts the writes of that record */
	double age_s;           /* since it was written (CLOCK_MONOTONIC_RAW) */
	double baseline_s;      /* the span of its rate's measurement */
	double hz, ppm;         /* its rate and stated uncertainty */
	int sync_verdict;       /* the cross-CPU check's NC_SYNC_*, -1 if none is recorded */
	uint32_t sync_ncpus;
	double sync_max_shift_ns; /* INFINITY where the check bounded no shift */
	double sync_age_s;      /* since that check ran */
};

/* Fill *st (initialising the library first).  0, or NC_EINVAL (st NULL). */
__attribute__((visibility("default"))) int nc_get_shared_status(struct nc_shared_status *st);

/* Write this process's rate and tie as a record at path (NULL: this
 * user's default record): where nothing is, or over a record of this
 * user's, atomically (readers see one or the other, whole); anything else
 * at path is left alone (NC_ESYS, errno EEXIST, why[] says what is there),
 * and a link or folder on the way that another user made in a
 * world-writable sticky folder such as /tmp is not gone through, nor any
 * name in a sticky folder another user owns or in a folder anybody may
 * write to without the sticky bit (NC_ESYS, errno ELOOP).  A
 * cross-CPU verdict (NC_SYNC_*, or -1 for none) with its maximum shift and
 * the number of CPUs may be recorded with it.  0, or NC_EINVAL (relative
 * or too long path, an OS clock's exact rate needs no record, a rate
 * adopted from a record and not yet measured by this process: its first
 * refresh, 80 ms at most after the start, measures it), NC_ESYS (errno
 * set; why[] says which step); why may be NULL. */
__attribute__((visibility("default"))) int nc_shared_publish(const char *path, int sync_verdict,
							    double sync_max_shift_ns,
							    uint32_t sync_ncpus, char *why,
							    size_t whylen);

#ifdef __cplusplus
}
#endif
#endif
