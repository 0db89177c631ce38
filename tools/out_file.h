/* SPDX-License-Identifier: MIT */
/* Output files and directories that never replace what is not the tool's
 * own (tools/out_file.c). */
#ifndef NC_TOOL_OUT_FILE_H
#define NC_TOOL_OUT_FILE_H

#include <stdio.h>
#include <sys/stat.h>

/* 1 if a file's first bytes (up to 4096) are an output this tool wrote. */
typedef int tool_out_ours_fn(const unsigned char *head, size_t n);

/* One output being written.  It must stay where tool_out_open put it until
 * tool_out_close (its stream writes through it). */
struct tool_out {
	FILE *f;
	char *path;      /* the name asked for (NULL: standard output) */
	char *tmp;       /* the temporary it is written as, put in place at the end */
	int dir;         /* a directory (CTF) */
	int dirfd;       /* tool_out_dir_open: the temporary directory */
	int fd;          /* what f writes to (-1: standard output) */
	int err;         /* the first write error (errno), 0 if none */
	int have_old;    /* an earlier output at path is to be replaced: */
	struct stat old; /* its identity */
	int oldfd;       /* a file: open on it for reading, to check it again */
	int keep_tmp;    /* tmp holds what is not ours (could not be swapped back) */
	tool_out_ours_fn *ours;
};

/* A file for `-o PATH`.  Written where nothing is, or over a regular file
 * of this user's that is empty or that ours() recognises (an earlier
 * export): to a new temporary beside PATH, put in place when complete,
 * never over anything else that appeared there meanwhile.  A FIFO with a
 * reader, the null device or a terminal is written in place; NULL, "-",
 * /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N are this
 * process's open descriptors (as a shell's `>(...)` names one).  Anything
 * else — another file, another user's, a symbolic link, a FIFO with no
 * reader, a socket, a directory, any other device — is left alone.  A new
 * file's mode is 0644 less the umask; a replaced file's mode is kept.
 * 0, or -1 with why[] one line naming the path and what is there. */
int tool_out_open(struct tool_out *o, const char *path, tool_out_ours_fn *ours, char *why, size_t whylen);
/* A directory (CTF): written as a new temporary directory beside the name
 * and put in its place at the end.  The name must not exist, or be a
 * directory of this user's that is empty or holds only an earlier CTF
 * export's files.  0, or -1 with why[]. */
int tool_out_dir_open(struct tool_out *o, const char *path, char *why, size_t whylen);
/* Finishes: ok = 1 puts the output in place (a write error found now makes
 * it 0, said with the path and the reason), ok = 0 removes the temporary.
 * Returns 0, or -1 with why[]. */
int tool_out_close(struct tool_out *o, int ok, char *why, size_t whylen);

#endif
