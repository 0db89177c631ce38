/* SPDX-License-Identifier: MIT */
/* The shared calibration record (src/shared/): record.c owns its format
 * and this process's view of it (status, guarded by nc__lib_lock, which
 * the functions here require but nc__shared_flush, which takes it),
 * adopt.c the trust rules, publish.c the writing (record.h, private to the
 * folder).  Its layer: docs/architecture.md. */
#ifndef NC_SHARED_H
#define NC_SHARED_H

#include "../base/compiler.h"
#include "../base/config.h"
#include "../base/lock.h"
#include "../counter/counter.h"
#include "../rate/rate.h"

#include <stddef.h>
#include <stdint.h>

#define REC_VERSION 1u
/* The file, native byte order (a record never leaves its machine); every
 * field naturally aligned, so the struct has no padding and the bytes
 * written are all initialised. */
struct nc__shared_rec {
	char magic[8];           /* "NCSHARED" */
	uint32_t version;        /* REC_VERSION */
	uint32_t size;           /* sizeof(struct nc__shared_rec) */
	uint64_t generation;     /* versions written at this path, this one included */
	char boot_id[40];        /* /proc/sys/kernel/random/boot_id */
	char counter[16];        /* the counter's name */
	char cpu[32];            /* x86: CPUID vendor and signature; else the architecture */
	double hz, ppm, worst_ppm;      /* the counter's rate against CLOCK_MONOTONIC_RAW */
	double sigma_ns, anchor_sd_ns;  /* the fit's scatter and its centroid's error */
	uint64_t accept_width, min_width; /* brackets: widest accepted, narrowest seen */
	uint64_t anchor_tick;    /* the tie: this counter value ... */
	int64_t anchor_ns;       /* ... is this CLOCK_MONOTONIC_RAW time */
	int64_t window_ns;       /* the rate's baseline */
	int64_t written_raw_ns, written_real_ns;
	uint32_t writer_uid, writer_pid;
	char writer[16];         /* "daemon" or "process" */
	int32_t sync_verdict;    /* NC_SYNC_*, -1: none */
	uint32_t sync_ncpus;
	double sync_max_shift_ns;
	int64_t sync_raw_ns;     /* when the cross-CPU check ran */
	char lib_version[16];    /* the writer's nanoclock version: the facts' layout */
	uint64_t facts_size;
	/* the boot's machine facts as the writer read them (CPUID, /proc,
	 * /sys): a reader of the same boot takes them instead of reading
	 * them again (on a VM each CPUID is an exit to the hypervisor) */
	struct nc__machine_facts facts;
	/* (aligned: on i386 the facts end at 4 mod 8; the padding is zero) */
	uint64_t checksum __attribute__((aligned(8))); /* FNV-1a 64 of every byte before it */
};
_Static_assert(offsetof(struct nc__shared_rec, facts) == 280 && offsetof(struct nc__shared_rec, checksum) % 8 == 0,
	       "struct nc__shared_rec has padding");
/* "0.3.0 x86_64": the writer's version and build, which a reader must
 * share (the facts' layout is the build's); the user's record is named
 * after the build */
NC_HIDDEN const char *nc__shared_build(void);
/* FNV-1a 64 of every byte before the checksum */
NC_HIDDEN uint64_t nc__shared_checksum(const struct nc__shared_rec *r);

/* Initialisation, first: the first record that passes the checks needing
 * no counter; its counter's name in counter ("" if none), which selection
 * may take without measuring the others, and its machine facts (NULL if
 * none), which this process then need not read. */
struct nc__machine_facts;
NC_HIDDEN const struct nc__machine_facts *nc__shared_look(const struct nc__config *cfg,
							  char counter[16]) NC_REQUIRES(nc__lib_lock);
/* Initialisation, after the counter is chosen: a trusted record's rate and
 * tie in *out and the bracket that checked it in *start (1), or 0 with the
 * reason kept for nanoclock info. */
NC_HIDDEN int nc__shared_adopt(const struct nc__config *cfg, struct nc__calib *out,
			       struct nc__bracket *start) NC_REQUIRES(nc__lib_lock);
/* Initialisation's end: where nothing was adopted, this process's
 * calibration is written as the user's record (or NANOCLOCK_SHARED's) if
 * it is as certain as the goal (goal_ppm); an early, wider statement is
 * written once a refresh measures the rate to the goal. */
NC_HIDDEN void nc__shared_publish_own(double goal_ppm) NC_REQUIRES(nc__lib_lock);
/* A refresh refined the rate (lock held; no system call): a rewrite is
 * due when this process's measurement is now four times as certain as the
 * record's ... */
NC_HIDDEN void nc__shared_after_refine(void) NC_REQUIRES(nc__lib_lock);
/* ... and done here, by the entry points that are not reads and the upkeep
 * thread (lock not held: it takes it, and writes outside it). */
NC_HIDDEN void nc__shared_flush(void) NC_EXCLUDES(nc__lib_lock);
/* nc_shared_publish's work (lock held). */
NC_HIDDEN int nc__shared_write(const char *path, int sync_verdict, double sync_shift_ns,
			       uint32_t sync_ncpus, char *why, size_t whylen)
	NC_REQUIRES(nc__lib_lock);
struct nc_shared_status;
NC_HIDDEN void nc__shared_status(struct nc_shared_status *st) NC_REQUIRES(nc__lib_lock);

#endif
