/* SPDX-License-Identifier: MIT */
/*
 * Output files created safely: `-o NAME` never follows a symbolic link
 * planted at NAME (root writing through one overwrote another file) and
 * never leaves a half-written file under NAME: the output goes to a new
 * temporary (O_EXCL, beside NAME) that is renamed over NAME only when
 * complete.  A FIFO or character device at NAME (a pipe, /dev/null) is
 * written in place; a FIFO without a reader is refused at once.
 */
#include "out_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int say(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -1;
}

static mode_t umask_now(void)
{
	mode_t m = umask(022);
	umask(m);
	return m;
}

/* "DIR/.BASE.XXXXXX" for path "DIR/BASE" */
static char *temp_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
	const char *base = slash ? slash + 1 : path;
	size_t n = dl + strlen(base) + 16;
	char *t = malloc(n);
	if (t)
		snprintf(t, n, "%.*s.%s.XXXXXX", (int)dl, path, base);
	return t;
}

int nc_out_open(struct nc_out *o, const char *path, char *why, size_t whylen)
{
	memset(o, 0, sizeof(*o));
	o->dirfd = -1;
	if (!path || !strcmp(path, "-")) {
		o->f = stdout;
		return 0;
	}
	struct stat st;
	if (path[0] == 0 || path[strlen(path) - 1] == '/')
		return say(why, whylen, "%s: not a file name", path);
	if (lstat(path, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
		int fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			return say(why, whylen, "%s: %s", path,
				   errno == ENXIO ? "a FIFO with no reader" : strerror(errno));
		int fl = fcntl(fd, F_GETFL);
		if (fl >= 0)
			fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
		o->f = fdopen(fd, "w");
		if (!o->f) {
			close(fd);
			return say(why, whylen, "%s: %s", path, strerror(errno));
		}
		return 0;
	}
	if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return say(why, whylen, "%s: is a directory", path);
	o->path = strdup(path);
	o->tmp = temp_name(path);
	if (!o->path || !o->tmp) {
		nc_out_close(o, 0, NULL, 0);
		return say(why, whylen, "out of memory");
	}
	int fd = mkostemp(o->tmp, O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		free(o->tmp);
		o->tmp = NULL;
		nc_out_close(o, 0, NULL, 0);
		return say(why, whylen, "%s: cannot create: %s", path, strerror(e));
	}
	fchmod(fd, 0644 & ~umask_now()); /* mkostemp made it 0600 */
	o->f = fdopen(fd, "w");
	if (!o->f) {
		close(fd);
		nc_out_close(o, 0, NULL, 0);
		return say(why, whylen, "%s: %s", path, strerror(errno));
	}
	return 0;
}

/* The files a CTF export writes: metadata and stream_F_T. */
static int ours(const char *name)
{
	return !strcmp(name, "metadata") || !strncmp(name, "stream_", 7);
}

/* 1: the directory can be replaced (empty, or only an earlier export's
 * files with a nanoclock metadata), 0 not, -1 error. */
static int replaceable(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	int ok = 1, entries = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		entries++;
		if (!ours(e->d_name))
			ok = 0;
	}
	if (ok && entries) {
		/* and the metadata says nanoclock wrote it */
		int mfd = openat(dirfd(d), "metadata", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		char buf[4096];
		ssize_t n = mfd >= 0 ? read(mfd, buf, sizeof(buf) - 1) : -1;
		if (mfd >= 0)
			close(mfd);
		buf[n > 0 ? n : 0] = 0;
		ok = n > 0 && strstr(buf, "tracer_name = \"nanoclock\"") != NULL;
	}
	closedir(d);
	return ok;
}

int nc_out_dir_open(struct nc_out *o, const char *path, char *why, size_t whylen)
{
	memset(o, 0, sizeof(*o));
	o->dirfd = -1;
	char clean[4096];
	snprintf(clean, sizeof(clean), "%s", path);
	size_t l = strlen(clean);
	while (l > 1 && clean[l - 1] == '/')
		clean[--l] = 0;
	if (!l)
		return say(why, whylen, "an output directory is needed");
	struct stat st;
	if (lstat(clean, &st) == 0) {
		if (S_ISLNK(st.st_mode))
			return say(why, whylen, "%s: is a symbolic link (not followed)", clean);
		if (!S_ISDIR(st.st_mode))
			return say(why, whylen, "%s: exists and is not a directory", clean);
		int r = replaceable(clean);
		if (r <= 0)
			return say(why, whylen, "%s: %s", clean,
				   r < 0 ? strerror(errno)
					 : "a directory with other files in it (not an earlier CTF export)");
	}
	o->path = strdup(clean);
	o->tmp = temp_name(clean);
	if (!o->path || !o->tmp || !mkdtemp(o->tmp)) {
		int e = errno;
		free(o->tmp);
		o->tmp = NULL;
		nc_out_close(o, 0, NULL, 0);
		return say(why, whylen, "%s: cannot create: %s", clean, strerror(e));
	}
	chmod(o->tmp, 0755 & ~umask_now());
	o->dirfd = open(o->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (o->dirfd < 0) {
		int e = errno;
		nc_out_close(o, 0, NULL, 0);
		return say(why, whylen, "%s: %s", clean, strerror(e));
	}
	return 0;
}

/* Removes a directory of ours and what it holds (one level). */
static void remove_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	rmdir(path);
}

int nc_out_close(struct nc_out *o, int ok, char *why, size_t whylen)
{
	int rc = 0;
	if (o->f) {
		int bad = ferror(o->f);
		if (o->f == stdout)
			bad |= fflush(o->f) != 0;
		else
			bad |= fclose(o->f) != 0;
		if (bad && ok) {
			ok = 0;
			rc = why ? say(why, whylen, "%s: write error", o->path ? o->path : "standard output")
				 : -1;
		}
		o->f = NULL;
	}
	if (o->dirfd >= 0)
		close(o->dirfd);
	o->dirfd = -1;
	if (o->tmp) {
		struct stat st;
		int is_dir = stat(o->tmp, &st) == 0 && S_ISDIR(st.st_mode);
		if (ok && is_dir && lstat(o->path, &st) == 0 && S_ISDIR(st.st_mode))
			remove_dir(o->path); /* checked replaceable at the open */
		if (ok && rename(o->tmp, o->path) != 0) {
			ok = 0;
			rc = why ? say(why, whylen, "%s: cannot rename into place: %s", o->path,
				       strerror(errno))
				 : -1;
		}
		if (!ok) {
			if (is_dir)
				remove_dir(o->tmp);
			else
				unlink(o->tmp);
		}
	}
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
	return rc;
}
