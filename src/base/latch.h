/* SPDX-License-Identifier: MIT */
/* The latch (Linux's raw_write_seqcount_latch) behind every word the fast
 * path reads: nc_impl_g, defined here, in nanoclock_impl.h's layout.  A
 * writer (one at a time: it holds nc__lib_lock) moves readers to the other
 * copy, rewrites the copy they left, moves them back and rewrites the
 * second; a reader reads the copy the sequence word points to and checks
 * the word did not change meanwhile.  A reader never waits, even one that
 * interrupted the writer (a signal handler): the copy it reads is not the
 * one being written. */
#ifndef NC_BASE_LATCH_H
#define NC_BASE_LATCH_H

#include "compiler.h"

/* Publish c to both copies of l (nc__lib_lock held). */
NC_HIDDEN void nc__latch_write_line(struct nc_impl_line *l, const struct nc_impl_copy *c);
/* A consistent copy of l; returns the sequence word it was read under
 * (it changes with every write). */
NC_HIDDEN uint64_t nc__latch_read_line(const struct nc_impl_line *l, struct nc_impl_copy *out);
NC_HIDDEN uint64_t nc__latch_seq(const struct nc_impl_line *l);

/* The interval conversion (nc__lib_lock held); read by nc_ticks_to_ns. */
NC_HIDDEN void nc__latch_write_conv(uint64_t ns_int, uint64_t ns_frac);
/* 0 and the conversion, or -1 before the first write. */
NC_HIDDEN int nc__latch_read_conv(uint64_t *ns_int, uint64_t *ns_frac);

#endif
