/* SPDX-License-Identifier: MIT */
/* Output files and directories created safely (tools/out_file.c). */
#ifndef NC_TOOL_OUT_FILE_H
#define NC_TOOL_OUT_FILE_H

#include <stdio.h>

struct nc_out {
	FILE *f;
	char *path;  /* the name asked for (NULL: standard output) */
	char *tmp;   /* the temporary it is written as, renamed at the end */
	int dirfd;   /* nc_out_dir_open: the temporary directory */
};

/* A file: standard output for NULL or "-"; an existing FIFO or character
 * device is written in place (a FIFO must have a reader already); anything
 * else is written to a new temporary file beside it (created exclusively:
 * no link is followed) renamed over the name at the end, with mode 0644
 * less the umask.  0, or -1 with why[] one line. */
int nc_out_open(struct nc_out *o, const char *path, char *why, size_t whylen);
/* A directory (CTF): written as a new temporary directory beside the name
 * and renamed to it at the end.  The name must not exist, or be an empty
 * directory, or one an earlier CTF export wrote (its files are replaced).
 * A symbolic link there is refused.  0, or -1 with why[]. */
int nc_out_dir_open(struct nc_out *o, const char *path, char *why, size_t whylen);
/* Finishes: ok = 1 puts the output in place (a write error found now makes
 * it 0), ok = 0 removes the temporary.  Returns 0, or -1 with why[]. */
int nc_out_close(struct nc_out *o, int ok, char *why, size_t whylen);

#endif
