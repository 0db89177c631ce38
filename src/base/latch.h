/* SPDX-License-Identifier: MIT */
/* The latch (Linux's raw_write_seqcount_latch), written once here for
 * every two-copy structure that readers may read from any context: the
 * timelines and the conversion the fast path reads (nc_impl_g, defined
 * here, in nanoclock_impl.h's layout) and a narrow counter's last value
 * (src/counter/extend.c).  A writer (one at a time: it holds the owner's
 * lock) writes the copy readers are not on, moves them to it, and writes
 * the other; a reader reads the copy the sequence word points to and
 * checks the word did not change meanwhile.
 * A reader never waits, even one that interrupted the writer (a signal
 * handler): the copy it reads is not the one being written. */
#ifndef NC_BASE_LATCH_H
#define NC_BASE_LATCH_H

#include "compiler.h"
#include "lock.h"

/* The generic form: store(i, src) writes copy i with atomic stores
 * (NC_ST), load(i, dst) reads it with atomic loads (NC_LD). */
NC_HIDDEN void nc__latch_write(uint64_t *seq, void *obj, void (*store)(void *obj, int i, const void *src),
			       const void *src);
/* Returns the sequence word the copy was read under. */
NC_HIDDEN uint64_t nc__latch_read(const uint64_t *seq, const void *obj,
				  void (*load)(const void *obj, int i, void *dst), void *dst);

/* nc_impl_g's timelines and conversion (nc__lib_lock held to write; read
 * from any context, nc_impl_g itself is not annotated: the inline reads
 * in nanoclock_impl.h are the application's code). */
NC_HIDDEN void nc__latch_write_line(struct nc_impl_line *l, const struct nc_impl_copy *c)
	NC_REQUIRES(nc__lib_lock);
NC_HIDDEN uint64_t nc__latch_read_line(const struct nc_impl_line *l, struct nc_impl_copy *out);
NC_HIDDEN uint64_t nc__latch_seq(const struct nc_impl_line *l);
NC_HIDDEN void nc__latch_write_conv(uint64_t ns_int, uint64_t ns_frac) NC_REQUIRES(nc__lib_lock);
/* 0 and the conversion, or -1 before the first write. */
NC_HIDDEN int nc__latch_read_conv(uint64_t *ns_int, uint64_t *ns_frac);

#endif
