/* SPDX-License-Identifier: MIT */
/* What the three files of the shared record share among themselves:
 * record.c the format, its loading and this process's view, adopt.c the
 * trust rules, publish.c the writing.  Private to src/shared/;
 * shared.h is what the rest of the library sees. */
#ifndef NC_SHARED_RECORD_H
#define NC_SHARED_RECORD_H

#include "shared.h"
#include "../base/fmt.h"
#include "../base/lock.h"

#include <stddef.h>
#include <stdint.h>

#define rec nc__shared_rec

/* The library's version and this build's architecture: the machine facts
 * are its structures, laid out as this build's compiler lays them out (an
 * i386 program on an x86_64 machine, or another architecture under
 * qemu-user, shares the boot id; its record may be another size, i386's,
 * or the same size in another layout or byte order, so the name decides) */
#if defined(__x86_64__) && defined(__ILP32__)
#define ARCH "x32"
#elif defined(__x86_64__)
#define ARCH "x86_64"
#elif defined(__i386__)
#define ARCH "i386"
#elif defined(__aarch64__)
#define ARCH "aarch64"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARCH "ppc64le"
#elif defined(__powerpc64__)
#define ARCH "ppc64"
#elif defined(__riscv) && __riscv_xlen == 64
#define ARCH "riscv64"
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && __SIZEOF_POINTER__ == 8
#define ARCH "any-le64" /* its fields in its own byte order and sizes */
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARCH "any-le32"
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ && __SIZEOF_POINTER__ == 8
#define ARCH "any-be64"
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define ARCH "any-be32"
#else
#define ARCH "any"
#endif

#define SYSTEM_RECORD "/run/nanoclock/record"

/* a record's first bytes */
static const char MAGIC[8] = {'N', 'C', 'S', 'H', 'A', 'R', 'E', 'D'};

/* Reasons where the caller wants them: a refresh (why NULL) formats none,
 * formatting being work a refresh (perhaps in a signal handler) need not do. */
#define SAY(...)                                       \
	do {                                           \
		if (why)                               \
			nc__fmt(why, len, __VA_ARGS__); \
	} while (0)

/* This process's view, guarded by nc__lib_lock. */
struct nc__shared_view {
	int looked, adopted, published;
	char path[256];          /* adopted, written, or the last looked at */
	char own_path[256];      /* where this process publishes ("" : nowhere) */
	char status[384];
	struct rec r;            /* the record adopted or written */
	int have_r;
	struct rec cand;         /* the first record that passed load_record ... */
	int cand_i;              /* ... and its place (-1: none) */
	char boot[40];           /* this boot's id, read once (have_ids) */
	char cpu_text[32];       /* the CPU as the last record written named it */
	int due;                 /* a refresh found a rewrite due (atomic: nc__shared_flush) */
	int pending;             /* not written at init: the first statement was wider than ... */
	size_t pending_at;       /* (where status says so, to be replaced once written) */
	double goal_ppm;         /* ... the goal; written once a refresh meets it */
	int have_ids;
};
/* the one view (record.c's), V in the three files */
NC_HIDDEN extern struct nc__shared_view nc__shared_view NC_GUARDED_BY(nc__lib_lock);
#define V nc__shared_view

/* record.c: the format */
NC_HIDDEN uint64_t nc__shared_rec_sum(const struct rec *r);
NC_HIDDEN int nc__shared_boot_id(char out[40]);
NC_HIDDEN void nc__shared_cpu_identity(char out[32], const struct nc__cpuid *c);
/* path's record in *r: 1 if it is a record of this build's, whole and
 * intact, written this boot; else 0 with why */
NC_HIDDEN int nc__shared_load(const char *path, const struct nc__config *cfg, struct rec *r,
			      char *why, size_t len) NC_REQUIRES(nc__lib_lock);
/* what is implausible in r's figures (as of now, CLOCK_MONOTONIC_RAW),
 * or NULL: checked on reading and before writing */
NC_HIDDEN const char *nc__shared_implausible(const struct rec *r, int64_t now);
/* this boot's id in V.boot, read once, at initialisation (0), or -1 */
NC_HIDDEN int nc__shared_ids(void) NC_REQUIRES(nc__lib_lock);
/* 1 if this process's calibration may be shared, else 0 and why */
NC_HIDDEN int nc__shared_shareable(char *why, size_t len);
/* the user's own record's path */
NC_HIDDEN void nc__shared_user_path(char *out, size_t len);
/* adopt.c: the status's lines, which the writer adds to too */
NC_HIDDEN void nc__shared_status_add(const char *fmt_path, const char *what)
	NC_REQUIRES(nc__lib_lock);

#endif
