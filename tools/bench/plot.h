/* SPDX-License-Identifier: MIT */
/* `nanoclock bench --plot`: its directory and files (plot_dir.c), shared
 * with the measuring and drawing (plot.c). */
#ifndef NC_TOOL_PLOT_H
#define NC_TOOL_PLOT_H

#include <stdio.h>

struct pdir {
	char name[4096];
	int fd;
};

/* plot.gp's first line: also how an earlier plot's directory is recognised */
#define PLOT_GP_FIRST "# Drawn by `nanoclock bench --plot`: cd to this directory and run gnuplot plot.gp"

#define PLOT_NFILES 10
/* every file a plot writes in its directory */
extern const char *const plot_files[PLOT_NFILES];

/* a message on stderr, "nanoclock bench --plot: ...": -1 */
int plot_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* DIR opened (made if missing) and checked, with every file the plot will
 * write there: 0, or -1 said */
int plot_dir_open(struct pdir *d, const char *dir);
/* name in the plot's directory may be replaced: absent, or a regular
 * file of this user's.  0, or -1 said. */
int file_ok(const struct pdir *d, const char *name);
/* name in the directory, created anew (an earlier plot's removed first) */
FILE *open_in(const struct pdir *d, const char *name);
int close_in(const struct pdir *d, const char *name, FILE *f);

#endif
