/* SPDX-License-Identifier: MIT */
/* The plot's directory and its files (plot.h).
 * Nothing the plot writes replaces what is not its own.  DIR is
 * made if missing (mode 0755, less the umask); an existing DIR is used only
 * if it is this user's, writable by no one else, and empty or an earlier
 * plot's (its plot.gp starts with PLOT_GP_FIRST, written first).  Every
 * file is written in the directory opened once, so a name swapped for a
 * link meanwhile changes nothing, and each earlier file of the plot is
 * checked (a regular file of this user's), removed, and created anew
 * exclusively: no link is followed, nothing else is replaced, and a hard
 * link kept elsewhere to an earlier PNG keeps that PNG.  gnuplot (whose
 * `set output` follows links) writes the PNGs after the same is done for
 * them, in a directory only this user can write. */
#include "plot.h"
/* the one internal header the tool shares with the library */
#include "../../src/base/safefile.h"

#include <nanoclock_info.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
const char *const plot_files[PLOT_NFILES] = {"plot.gp", "title.gp", "cost.dat", "cost-tail.dat",
					 "calib.dat", "calib-median.dat", "offset.dat",
					 "cost.png", "offset.png", "calib.png"};

int plot_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int plot_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("nanoclock bench --plot: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return -1;
}

/* A symbolic link's target (at dirfd/name), printable, for a message */
static const char *link_target(int dirfd, const char *name, char *buf, size_t len)
{
	ssize_t n = readlinkat(dirfd, name, buf, len - 1);
	buf[n > 0 ? n : 0] = 0;
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return buf;
}

/* name in the plot's directory may be replaced: absent, or a regular file
 * of this user's.  0, or -1 said. */
int file_ok(const struct pdir *d, const char *name)
{
	struct stat st;
	char k[64], t[256];
	if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : plot_fail("%s/%s: %s", d->name, name, strerror(errno));
	if (S_ISLNK(st.st_mode))
		return plot_fail("%s/%s: a symbolic link (to %s), not followed; left alone", d->name, name,
				 link_target(d->fd, name, t, sizeof(t)));
	if (!S_ISREG(st.st_mode))
		return plot_fail("%s/%s: %s; left alone", d->name, name, nc__stat_kind(&st, k, sizeof(k)));
	if (st.st_uid != geteuid())
		return plot_fail("%s/%s: a file of another user (uid %u); left alone", d->name, name,
				 (unsigned)st.st_uid);
	return 0;
}

/* Is the directory (open as d->fd) empty, or an earlier plot's? 1, 0, or
 * -1 with errno */
static int dir_is_ours(const struct pdir *d)
{
	int fd = fcntl(d->fd, F_DUPFD_CLOEXEC, 0);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int entries = 0;
	struct dirent *e;
	while ((e = readdir(dir)) != NULL)
		entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(dir);
	if (!entries)
		return 1;
	int g = openat(d->fd, "plot.gp", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (g < 0)
		return 0;
	struct stat st;
	char line[sizeof(PLOT_GP_FIRST)];
	ssize_t n = fstat(g, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()
			    ? read(g, line, sizeof(line))
			    : -1;
	close(g);
	return n == (ssize_t)sizeof(line) && !memcmp(line, PLOT_GP_FIRST "\n", sizeof(line));
}

/* Opens (makes if missing) the plot's directory and checks it and every
 * file the plot will write there.  0, or -1 said. */
int plot_dir_open(struct pdir *d, const char *dir)
{
	snprintf(d->name, sizeof(d->name), "%s", dir);
	size_t l = strlen(d->name);
	while (l > 1 && d->name[l - 1] == '/') /* "plots/" would follow a link */
		d->name[--l] = 0;
	d->fd = -1;
	struct stat st;
	char k[64], t[256], why[600] = "";
	/* the folders on the way (made where missing) */
	if (nc__safe_path(d->name, NC_SAFE_MKDIR, why, sizeof(why)) != 0)
		return plot_fail("%s; left alone", why);
	if (lstat(d->name, &st) != 0) {
		if (errno != ENOENT)
			return plot_fail("%s: %s", d->name, strerror(errno));
		if (mkdir(d->name, 0755) != 0 && errno != EEXIST)
			return plot_fail("cannot create %s: %s", d->name, strerror(errno));
		if (lstat(d->name, &st) != 0)
			return plot_fail("%s: %s", d->name, strerror(errno));
	}
	if (S_ISLNK(st.st_mode))
		return plot_fail("%s: a symbolic link (to %s), not followed; left alone", d->name,
				 link_target(AT_FDCWD, d->name, t, sizeof(t)));
	if (!S_ISDIR(st.st_mode))
		return plot_fail("%s: %s, not a directory; left alone", d->name, nc__stat_kind(&st, k, sizeof(k)));
	d->fd = open(d->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->fd < 0 || fstat(d->fd, &st) != 0)
		return plot_fail("%s: %s", d->name, strerror(errno));
	/* what is checked from here on is the directory opened */
	if (st.st_uid != geteuid())
		return plot_fail("%s: a directory of another user (uid %u); left alone", d->name,
				 (unsigned)st.st_uid);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return plot_fail("%s: a directory writable by others (mode %04o); left alone", d->name,
				 (unsigned)(st.st_mode & 07777));
	int r = dir_is_ours(d);
	if (r < 0)
		return plot_fail("%s: %s", d->name, strerror(errno));
	if (!r)
		return plot_fail("%s: a directory with other files in it, not an earlier plot's (no plot.gp "
				 "of nanoclock bench --plot); left alone",
				 d->name);
	for (size_t i = 0; i < sizeof(plot_files) / sizeof(plot_files[0]); i++)
		if (file_ok(d, plot_files[i]) != 0)
			return -1;
	return 0;
}

/* A file of the plot, new: the earlier one (checked again) removed first */
FILE *open_in(const struct pdir *d, const char *name)
{
	if (file_ok(d, name) != 0)
		return NULL;
	if (unlinkat(d->fd, name, 0) != 0 && errno != ENOENT) {
		plot_fail("cannot replace %s/%s: %s", d->name, name, strerror(errno));
		return NULL;
	}
	int fd = openat(d->fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		plot_fail("cannot write %s/%s: %s", d->name, name, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	return f;
}

/* Closes a file of the plot: 0, or -1 with its write error said */
int close_in(const struct pdir *d, const char *name, FILE *f)
{
	int e = 0;
	if (fflush(f) != 0)
		e = errno ? errno : EIO;
	else if (ferror(f))
		e = EIO;
	if (fclose(f) != 0 && !e)
		e = errno;
	return e ? plot_fail("%s/%s: write error: %s", d->name, name, strerror(e)) : 0;
}
