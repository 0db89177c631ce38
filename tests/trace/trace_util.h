/* SPDX-License-Identifier: MIT */
/* Helpers for the trace tests: temporary files, sessions, reading back. */
#ifndef NC_TEST_TRACE_UTIL_H
#define NC_TEST_TRACE_UTIL_H

#include "trace/trace_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A fresh temporary path (the file exists, empty); free() it, unlink it. */
static inline char *tmp_path(const char *tag)
{
	const char *dir = getenv("TMPDIR");
	char *p = malloc(256);
	if (!p)
		abort();
	snprintf(p, 256, "%s/nc-test-%s-XXXXXX", dir && *dir ? dir : "/tmp", tag);
	int fd = mkstemp(p);
	if (fd < 0)
		abort();
	close(fd);
	return p;
}

/* A small-block session: flush by hand only. */
static inline struct nc_trace *open_small(const char *path, unsigned bb, unsigned nb, int mode,
					  unsigned flags)
{
	struct nc_trace_config c;
	nc_trace_default_config(&c);
	c.block_bytes = bb;
	c.blocks = nb;
	c.mode = mode;
	c.flags = flags;
	c.flush_ms = 0;
	struct nc_trace *t = NULL;
	if (nc_trace_open(&t, path, &c) != 0)
		return NULL;
	return t;
}

/* Every event of the files, merged; returns the count (-1: unreadable). */
static inline long read_merged(const char *const *paths, unsigned n, struct nc_trace_reader **r,
			       struct nc_trace_rec **out)
{
	char why[256];
	*out = NULL;
	for (unsigned i = 0; i < n; i++)
		if (nc_trace_read_file(&r[i], paths[i], why, sizeof(why)) != 0) {
			fprintf(stderr, "read %s: %s\n", paths[i], why);
			return -1;
		}
	struct nc_trace_merge *m;
	if (nc_trace_merge_open(&m, r, n) != 0)
		return -1;
	size_t cap = 1024, k = 0;
	struct nc_trace_rec *ev = malloc(cap * sizeof(*ev));
	while (ev && nc_trace_merge_next(m, &ev[k])) {
		if (++k == cap) {
			cap *= 2;
			ev = realloc(ev, cap * sizeof(*ev));
		}
	}
	nc_trace_merge_close(m);
	*out = ev;
	return ev ? (long)k : -1;
}

/* The whole file in memory. */
static inline unsigned char *slurp(const char *path, size_t *len)
{
	*len = 0;
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	if (n < 0) {
		fclose(f);
		return NULL;
	}
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

#endif
