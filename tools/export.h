/* SPDX-License-Identifier: MIT */
/* `nanoclock trace export`: the exporters and what they share (tools/export*.c).
 * Every exporter streams: it takes the merged events one at a time
 * (tool_export_next) and keeps per thread, never per event, state. */
#ifndef NC_TOOL_EXPORT_H
#define NC_TOOL_EXPORT_H

#include <nanoclock_trace.h>

#include <stdint.h>
#include <stdio.h>

struct tool_export {
	struct nc_trace_reader *const *r;
	const char *const *names; /* the files' names (process names), may be NULL */
	unsigned n;
	int by_unix;             /* several files: merged and shown on Unix time */
	struct nc_trace_merge *m;
	uint64_t total, done;    /* events */
	int progress;            /* a progress line on stderr */
	uint64_t next_look;
	int64_t last_print_ns;
	/* the event tool_export_next returned last: its UTC interval and whether
	 * it overlaps an event of another machine (several hosts' traces) */
	struct nc_utc utc;
	int concurrent;
	int hosts;               /* machines (host names) among the files */
	uint8_t *conc;           /* several hosts: a bit per event, merge order */
	uint64_t nconc;          /* events marked */
};

/* Opens the merge of r[0..n-1]; progress: print a progress line on stderr
 * (the caller passes isatty(2)).  0 or a negative error. */
int tool_export_begin(struct tool_export *x, struct nc_trace_reader *const *r, const char *const *names,
		    unsigned n, int progress);
/* The next event in time order: 1, or 0 at the end.  x->utc and
 * x->concurrent are that event's. */
int tool_export_next(struct tool_export *x, struct nc_trace_rec *e);
/* Closes the merge: 0, or why the events ended early (NC_TRACE_EIO). */
int tool_export_end(struct tool_export *x);

/* An event id's name in file `file` ("event ID" when it has none). */
const char *tool_export_ev_name(const struct tool_export *x, unsigned file, unsigned id, char *buf,
			      size_t len);
/* A string from the file made printable ASCII (anything else: '?'). */
void tool_export_clean(char *dst, size_t dlen, const char *src);
/* A JSON string literal, bytes outside printable ASCII as \u00XX. */
void tool_export_jstr(FILE *f, const char *s);
/* A number for JSON: null if not finite. */
void tool_export_jnum(FILE *f, const char *fmt, double v);

/* 1 if head[0..n-1], the first bytes of a file, begin an export of this
 * format that this tool wrote: CSV (its header line), Chrome JSON (its
 * first key, naming nanoclock), Perfetto (its first packet's fields).
 * Such a file of the user's may be replaced by a new export
 * (tools/out_file.c); nothing else is.  The first 4096 bytes are enough. */
int tool_export_csv_is_ours(const unsigned char *head, size_t n);
int tool_export_chrome_is_ours(const unsigned char *head, size_t n);
int tool_export_perfetto_is_ours(const unsigned char *head, size_t n);

/* The exporters.  0, or a negative NC_* error; the output's own write
 * errors are the caller's to check (ferror). */
int tool_export_csv(FILE *f, struct tool_export *x);
int tool_export_chrome(FILE *f, struct tool_export *x);
int tool_export_perfetto(FILE *f, struct tool_export *x);
/* CTF writes a directory: dirfd is an empty directory of its own; why[]
 * gets a one-line reason for an error of its own (a write error). */
int tool_export_ctf(int dirfd, struct tool_export *x, char *why, size_t whylen);

#endif
