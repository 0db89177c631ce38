/* SPDX-License-Identifier: MIT */
/*
 * Outputs that never replace what is not the tool's own: `-o notes.txt`
 * given by mistake must not lose the notes, nor, as root, `-o /dev/sda`
 * replace the device node or `-o /dev/mem` write into it.
 *
 * `-o NAME` is written where nothing is, or over a regular file of this
 * user's that is empty (mktemp's) or an earlier export (recognised by its
 * content), always through a new temporary beside NAME that is put in
 * place only when complete: renameat2 RENAME_NOREPLACE where nothing was
 * (whatever appeared meanwhile stays), RENAME_EXCHANGE where the earlier
 * file was (what comes out is checked to be that file, and swapped back if
 * it is not).  A FIFO with a reader, the null device and a terminal are
 * written in place.  Anything else is left as it was: a link is not
 * followed, a device is not even opened (opening one can act: a tape
 * rewinds, a watchdog starts), nothing is replaced.
 *
 * An export interrupted (SIGINT, SIGTERM, SIGHUP) removes its temporary
 * before the signal ends the tool (a hidden file of tens of MB was left
 * behind); a signal the tool was started with ignored stays ignored.
 */
#include "out_file.h"
#include "args.h"
/* the one internal header the tool shares with the library */
#include "../src/base/safefile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* tests/trace/test_trace_tool.c builds this file in with NC_OUT_TEST to try the
 * paths taken without renameat2 */
#ifdef NC_OUT_TEST
static int tool_out_test_no_renameat2;
#endif

enum { HEAD_BYTES = 4096 };

static int say(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char *why, size_t whylen, const char *fmt, ...)
{
	if (why && whylen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
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

/* The CTF files in a temporary directory, which an interrupted export
 * removes in its signal handler: only system calls (getdents64, unlinkat,
 * rmdir) and string compares, which are async-signal-safe. */
static int ctf_name(const char *name);
static void remove_dir_in_handler(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[4096] __attribute__((aligned(8)));
	long n;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			/* struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name */
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, 2);
			const char *name = buf + off + 19;
			if (ctf_name(name))
				unlinkat(fd, name, 0);
			off += reclen;
		}
	}
	close(fd);
	rmdir(path);
}

/* The temporary being written, for the handler (the tool writes one
 * output at a time) */
static const char *volatile pending_tmp;
static volatile sig_atomic_t pending_dir;

static void on_interrupt(int sig)
{
	const char *t = pending_tmp;
	if (t) {
		if (pending_dir)
			remove_dir_in_handler(t);
		else
			unlink(t);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Removed if the tool is interrupted from now on (NULL: nothing) */
static void pending(const char *tmp, int dir)
{
	static int installed;
	if (tmp && !installed) {
		installed = 1;
		static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
			struct sigaction old, sa;
			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = on_interrupt;
			sigemptyset(&sa.sa_mask);
			if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
				sigaction(sigs[i], &sa, NULL);
		}
	}
	pending_dir = dir;
	pending_tmp = tmp;
}

/* renameat2 (safefile.h), or the lack of it when a test asks */
static int rename2(const char *from, const char *to, unsigned flags)
{
#ifdef NC_OUT_TEST
	if (tool_out_test_no_renameat2) {
		errno = ENOSYS;
		return -1;
	}
#endif
	return nc__rename2(AT_FDCWD, from, AT_FDCWD, to, flags);
}
#define unsupported nc__rename2_unsupported

static int same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* A symbolic link's target, printable, for a message */
static void link_target(const char *path, char *buf, size_t len)
{
	ssize_t n = readlink(path, buf, len - 1);
	buf[n > 0 ? n : 0] = 0;
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

/* Linux's null device: writing to it does nothing */
static int is_null(dev_t d) { return major(d) == 1 && minor(d) == 3; }

/* A terminal: the tty class in sysfs, or a pseudo-terminal (majors
 * 136-143, which sysfs does not list).  Decided without opening it. */
static int is_terminal(dev_t d)
{
	if (major(d) >= 136 && major(d) <= 143)
		return 1;
	char p[64], l[256];
	snprintf(p, sizeof(p), "/sys/dev/char/%u:%u/subsystem", major(d), minor(d));
	ssize_t n = readlink(p, l, sizeof(l) - 1);
	if (n <= 0)
		return 0;
	l[n] = 0;
	const char *s = strrchr(l, '/');
	return s && !strcmp(s + 1, "tty");
}

/* The inode pathfd (O_PATH) refers to, opened with flags: through /proc
 * it is that inode even if the name changed meanwhile.  Without /proc,
 * by the name, and refused (EBUSY) if that is now another inode. */
static int reopen(int pathfd, const char *path, const struct stat *id, int flags)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", pathfd);
	int fd = open(p, flags | O_CLOEXEC);
	if (fd >= 0 || errno != ENOENT)
		return fd;
	fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) != 0 || !same(&st, id))) {
		close(fd);
		errno = EBUSY;
		return -1;
	}
	return fd;
}

/* Is the file open on fd still empty or an output of ours? */
static int still_ours(int fd, tool_out_ours_fn *ours)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	if (st.st_size == 0)
		return 1;
	unsigned char head[HEAD_BYTES];
	size_t n = 0;
	while (n < sizeof(head)) {
		ssize_t r = pread(fd, head + n, sizeof(head) - n, (off_t)n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	return ours && ours(head, n);
}

enum { AT_NOTHING, AT_OURS, AT_IN_PLACE, AT_REFUSED };

/* What is at path and what -o may do with it.  AT_OURS: a regular file of
 * this user's, empty or recognised by ours(): *st its identity, *oldfd open
 * on it for reading.  AT_IN_PLACE (only with wfd): *wfd open for writing on
 * a FIFO with a reader, the null device or a terminal.  AT_REFUSED: why[]
 * says what is there. */
static int look(const char *path, tool_out_ours_fn *ours, struct stat *st, int *oldfd, int *wfd,
		char *why, size_t whylen)
{
	*oldfd = -1;
	if (wfd)
		*wfd = -1;
	/* O_PATH: the thing itself, whatever it is, without opening it */
	int pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0) {
		if (errno == ENOENT)
			return AT_NOTHING;
		say(why, whylen, "%s: %s", path, strerror(errno));
		return AT_REFUSED;
	}
	if (fstat(pfd, st) != 0) {
		say(why, whylen, "%s: %s", path, strerror(errno));
		close(pfd);
		return AT_REFUSED;
	}
	int r = AT_REFUSED;
	char k[64];
	if (S_ISLNK(st->st_mode)) {
		char t[256];
		link_target(path, t, sizeof(t));
		say(why, whylen, "%s: a symbolic link (to %s), not followed; left alone", path, t);
	} else if (S_ISREG(st->st_mode)) {
		int fd = -1;
		if (st->st_uid != geteuid())
			say(why, whylen, "%s: a file of another user (uid %u); left alone", path,
			    (unsigned)st->st_uid);
		else if ((fd = reopen(pfd, path, st, O_RDONLY | O_NONBLOCK)) < 0)
			say(why, whylen, "%s: %s", path, strerror(errno));
		else if (!still_ours(fd, ours))
			say(why, whylen, "%s: a file that is not an earlier nanoclock export (%lld bytes); "
					 "left alone",
			    path, (long long)st->st_size);
		else {
			*oldfd = fd;
			fd = -1;
			r = AT_OURS;
		}
		if (fd >= 0)
			close(fd);
	} else if (S_ISCHR(st->st_mode) && !is_null(st->st_rdev) && !is_terminal(st->st_rdev)) {
		say(why, whylen, "%s: %s, not the null device or a terminal; left alone", path,
		    nc__stat_kind(st, k, sizeof(k)));
	} else if ((S_ISCHR(st->st_mode) || S_ISFIFO(st->st_mode)) && !wfd) {
		say(why, whylen, "%s: %s; left alone", path, nc__stat_kind(st, k, sizeof(k)));
	} else if (S_ISCHR(st->st_mode) || S_ISFIFO(st->st_mode)) {
		/* O_NONBLOCK: a FIFO with no reader fails at once (ENXIO) instead
		 * of waiting, a serial line does not wait for its carrier */
		int fd = reopen(pfd, path, st, O_WRONLY | O_NONBLOCK | O_NOCTTY);
		if (fd < 0) {
			say(why, whylen, "%s: %s", path,
			    errno == ENXIO && S_ISFIFO(st->st_mode) ? "a FIFO with no reader; left alone"
								     : strerror(errno));
		} else {
			int fl = fcntl(fd, F_GETFL);
			if (fl >= 0)
				fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
			*wfd = fd;
			r = AT_IN_PLACE;
		}
	} else {
		say(why, whylen, "%s: %s; left alone", path, nc__stat_kind(st, k, sizeof(k)));
	}
	close(pfd);
	return r;
}

/* ---- the stream: every write's error kept, to be said with its reason ---- */
static ssize_t out_write(void *cookie, const char *buf, size_t n)
{
	struct tool_out *o = cookie;
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(o->fd, buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!o->err)
				o->err = w < 0 ? errno : EIO;
			return -1;
		}
		done += (size_t)w;
	}
	return (ssize_t)n;
}

/* the descriptor is closed by tool_out_close, after fsync */
static int out_noclose(void *cookie)
{
	(void)cookie;
	return 0;
}

static int stream(struct tool_out *o, char *why, size_t whylen)
{
	cookie_io_functions_t io = {NULL, out_write, NULL, out_noclose};
	o->f = fopencookie(o, "w", io);
	if (!o->f)
		return say(why, whylen, "%s: %s", o->path ? o->path : "output", strerror(errno));
	setvbuf(o->f, NULL, _IOFBF, 1 << 16);
	return 0;
}

/* "-", /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: N, else -1 */
static int fd_name(const char *path)
{
	if (!strcmp(path, "-") || !strcmp(path, "/dev/stdout"))
		return 1;
	if (!strcmp(path, "/dev/stderr"))
		return 2;
	const char *n = !strncmp(path, "/dev/fd/", 8)	     ? path + 8
			: !strncmp(path, "/proc/self/fd/", 14) ? path + 14
							       : NULL;
	long long v = n ? tool_arg_digits(n) : -1;
	return v < 0 || v > 1 << 20 ? -1 : (int)v;
}

static void init(struct tool_out *o, tool_out_ours_fn *ours)
{
	memset(o, 0, sizeof(*o));
	o->dirfd = o->fd = o->oldfd = -1;
	o->ours = ours;
}

int tool_out_open(struct tool_out *o, const char *path, tool_out_ours_fn *ours, char *why, size_t whylen)
{
	init(o, ours);
	int n = path ? fd_name(path) : 1;
	if (n == 1) {
		o->f = stdout;
		return 0;
	}
	if (n >= 0) {
		/* a descriptor the shell opened: written as it is */
		int fl = fcntl(n, F_GETFL);
		if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY)
			return say(why, whylen, "%s: %s", path,
				   fl < 0 ? "not an open descriptor of this process" : "open for reading only");
		o->path = strdup(path);
		o->fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
		int e = errno;
		if (!o->path || o->fd < 0) {
			tool_out_close(o, 0, NULL, 0);
			return say(why, whylen, "%s: %s", path, strerror(e));
		}
		if (stream(o, why, whylen) != 0) {
			tool_out_close(o, 0, NULL, 0);
			return -1;
		}
		return 0;
	}
	if (path[0] == 0 || path[strlen(path) - 1] == '/')
		return say(why, whylen, "%s: not a file name", path);
	if (nc__safe_path(path, 0, why, whylen) != 0)
		return -1;
	int wfd;
	int at = look(path, ours, &o->old, &o->oldfd, &wfd, why, whylen);
	if (at == AT_REFUSED)
		return -1;
	o->path = strdup(path);
	if (!o->path) {
		tool_out_close(o, 0, NULL, 0);
		return say(why, whylen, "out of memory");
	}
	if (at == AT_IN_PLACE) {
		o->fd = wfd;
		if (stream(o, why, whylen) != 0) {
			tool_out_close(o, 0, NULL, 0);
			return -1;
		}
		return 0;
	}
	o->have_old = at == AT_OURS;
	o->tmp = temp_name(path);
	if (!o->tmp) {
		tool_out_close(o, 0, NULL, 0);
		return say(why, whylen, "out of memory");
	}
	o->fd = mkostemp(o->tmp, O_CLOEXEC);
	if (o->fd < 0) {
		int e = errno;
		free(o->tmp);
		o->tmp = NULL;
		tool_out_close(o, 0, NULL, 0);
		return say(why, whylen, "%s: cannot create: %s", path, strerror(e));
	}
	pending(o->tmp, 0);
	/* mkostemp made it 0600: a new file gets 0644 less the umask, a
	 * replaced one keeps its mode (mktemp's 0600 stays private) and,
	 * where allowed, its group */
	if (o->have_old && o->old.st_gid != getegid() && fchown(o->fd, (uid_t)-1, o->old.st_gid) != 0)
		errno = 0; /* a group this user is not in: the default one */
	fchmod(o->fd, o->have_old ? o->old.st_mode & 0777 : 0644 & ~umask_now());
	if (stream(o, why, whylen) != 0) {
		tool_out_close(o, 0, NULL, 0);
		return -1;
	}
	return 0;
}

/* ---- CTF directories ---- */

/* The files a CTF export writes: metadata and stream_F_T. */
static int ctf_name(const char *name)
{
	return !strcmp(name, "metadata") || !strncmp(name, "stream_", 7);
}

/* 1: the directory can be replaced (empty, or only an earlier export's
 * files, regular and this user's, with a nanoclock metadata), 0 not, -1
 * error. */
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
		struct stat st;
		if (!ctf_name(e->d_name) || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			ok = 0;
	}
	if (ok && entries) {
		/* and the metadata says nanoclock wrote it */
		int mfd = openat(dirfd(d), "metadata", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
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

/* What is at path for a CTF directory: AT_NOTHING, AT_OURS (*st its
 * identity) or AT_REFUSED with why[]. */
static int look_dir(const char *path, struct stat *st, char *why, size_t whylen)
{
	char k[64];
	if (lstat(path, st) != 0) {
		if (errno == ENOENT)
			return AT_NOTHING;
		say(why, whylen, "%s: %s", path, strerror(errno));
		return AT_REFUSED;
	}
	if (S_ISLNK(st->st_mode)) {
		char t[256];
		link_target(path, t, sizeof(t));
		say(why, whylen, "%s: a symbolic link (to %s), not followed; left alone", path, t);
	} else if (!S_ISDIR(st->st_mode)) {
		say(why, whylen, "%s: %s, not a directory; left alone", path, nc__stat_kind(st, k, sizeof(k)));
	} else if (st->st_uid != geteuid()) {
		say(why, whylen, "%s: a directory of another user (uid %u); left alone", path,
		    (unsigned)st->st_uid);
	} else {
		int r = replaceable(path);
		if (r > 0)
			return AT_OURS;
		say(why, whylen, "%s: %s", path,
		    r < 0 ? strerror(errno)
			  : "a directory with other files in it, not an earlier CTF export; left alone");
	}
	return AT_REFUSED;
}

int tool_out_dir_open(struct tool_out *o, const char *path, char *why, size_t whylen)
{
	init(o, NULL);
	o->dir = 1;
	char clean[4096];
	snprintf(clean, sizeof(clean), "%s", path);
	size_t l = strlen(clean);
	while (l > 1 && clean[l - 1] == '/')
		clean[--l] = 0;
	const char *base = strrchr(clean, '/');
	base = base ? base + 1 : clean;
	if (!l || !strcmp(base, ".") || !strcmp(base, ".."))
		return say(why, whylen, "%s: a name for the output directory is needed", path);
	if (nc__safe_path(clean, 0, why, whylen) != 0)
		return -1;
	int at = look_dir(clean, &o->old, why, whylen);
	if (at == AT_REFUSED)
		return -1;
	o->have_old = at == AT_OURS;
	o->path = strdup(clean);
	o->tmp = temp_name(clean);
	if (!o->path || !o->tmp || !mkdtemp(o->tmp)) {
		int e = errno;
		free(o->tmp);
		o->tmp = NULL;
		tool_out_close(o, 0, NULL, 0);
		return say(why, whylen, "%s: cannot create: %s", clean, strerror(e));
	}
	pending(o->tmp, 1);
	chmod(o->tmp, o->have_old ? o->old.st_mode & 0777 : 0755 & ~umask_now());
	o->dirfd = open(o->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (o->dirfd < 0) {
		int e = errno;
		tool_out_close(o, 0, NULL, 0);
		return say(why, whylen, "%s: %s", clean, strerror(e));
	}
	return 0;
}

/* Removes a directory of ours: the CTF files in it, then it (which fails
 * if anything else is in it: that stays). */
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
		if (ctf_name(e->d_name))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	rmdir(path);
}

/* ---- putting the output in place ---- */

/* Removes what is at tmp: our temporary, or the earlier output swapped
 * out to it. */
static void remove_tmp(const struct tool_out *o)
{
	if (o->dir)
		remove_dir(o->tmp);
	else
		unlink(o->tmp);
}

/* Is the earlier output, now at name, still what look() found? */
static int old_still_there(const struct tool_out *o, const char *name)
{
	struct stat st;
	if (lstat(name, &st) != 0 || !same(&st, &o->old))
		return 0;
	return o->dir ? replaceable(name) > 0 : still_ours(o->oldfd, o->ours);
}

/* tmp put where nothing is: 0; 1 something is there now; -1 error */
static int put_new(const struct tool_out *o)
{
	if (rename2(o->tmp, o->path, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno == EEXIST)
		return 1;
	if (!unsupported(errno))
		return -1;
	/* no renameat2: link() never replaces either */
	if (!o->dir) {
		if (link(o->tmp, o->path) == 0) {
			unlink(o->tmp);
			return 0;
		}
		if (errno == EEXIST)
			return 1;
	}
	/* a directory, or a file system without hard links (vfat): checked
	 * just before the rename, the best there is without renameat2 */
	struct stat st;
	if (lstat(o->path, &st) == 0)
		return 1;
	return rename(o->tmp, o->path) == 0 ? 0 : -1;
}

/* tmp put in place of the earlier output: 0; 1 that is no longer there;
 * -1 error; -2 what was swapped out could not be swapped back (it is at
 * tmp now, and stays there) */
static int put_over(const struct tool_out *o)
{
	if (rename2(o->tmp, o->path, RENAME_EXCHANGE) == 0) {
		/* what came out is checked: if it is not the earlier output any
		 * more, it goes back, never lost */
		if (old_still_there(o, o->tmp)) {
			remove_tmp(o);
			return 0;
		}
		if (rename2(o->tmp, o->path, RENAME_EXCHANGE) != 0)
			return -2;
		return 1;
	}
	if (errno == ENOENT)
		return 1;
	if (!unsupported(errno))
		return -1;
	/* no renameat2: checked just before the rename; a change in between by
	 * this user or root could be replaced (for a directory: it is emptied
	 * of the CTF files alone, and a non-empty one is not replaced) */
	if (!old_still_there(o, o->path))
		return 1;
	if (o->dir)
		remove_dir(o->path);
	return rename(o->tmp, o->path) == 0 ? 0 : -1;
}

/* Puts the finished temporary at o->path.  When what is there changed
 * since the open, it is looked at again and decides. */
static int place(struct tool_out *o, char *why, size_t whylen)
{
	for (int tries = 0; tries < 4; tries++) {
		int r = o->have_old ? put_over(o) : put_new(o);
		if (r == 0)
			return 0;
		if (r == -2) {
			o->keep_tmp = 1;
			return say(why, whylen, "%s: changed during the export and could not be put back (%s): "
					       "it is at %s now",
				   o->path, strerror(errno), o->tmp);
		}
		if (r < 0)
			return say(why, whylen, "%s: cannot put the output there: %s", o->path,
				   strerror(errno));
		if (o->oldfd >= 0)
			close(o->oldfd);
		o->oldfd = -1;
		int at = o->dir ? look_dir(o->path, &o->old, why, whylen)
				: look(o->path, o->ours, &o->old, &o->oldfd, NULL, why, whylen);
		if (at == AT_REFUSED) {
			size_t l = strlen(why);
			snprintf(why + l, whylen - l, " (found there at the end; the export was not kept)");
			return -1;
		}
		o->have_old = at == AT_OURS;
	}
	return say(why, whylen, "%s: kept changing during the export, which was not kept", o->path);
}

int tool_out_close(struct tool_out *o, int ok, char *why, size_t whylen)
{
	int rc = 0;
	const char *name = o->path ? o->path : "standard output";
	if (o->f) {
		errno = 0;
		if (fflush(o->f) != 0 && !o->err)
			o->err = errno ? errno : EIO;
		if (ferror(o->f) && !o->err)
			o->err = EIO;
		if (o->f != stdout)
			fclose(o->f);
		o->f = NULL;
	}
	if (o->fd >= 0) {
		/* on the disk before it takes the name: a crash cannot leave an
		 * empty file where the earlier export was, and errors that show
		 * only now (NFS, quotas) are seen */
		if (ok && !o->err && o->tmp && fsync(o->fd) != 0)
			o->err = errno;
		if (close(o->fd) != 0 && !o->err && errno != EINTR)
			o->err = errno;
		o->fd = -1;
	}
	if (o->dirfd >= 0)
		close(o->dirfd);
	o->dirfd = -1;
	if (ok && o->err) {
		ok = 0;
		rc = say(why, whylen, "%s: write error: %s%s", name, strerror(o->err),
			 !o->tmp	 ? ""
			 : o->have_old ? "; the earlier export there is left as it was"
				       : "; nothing was put there");
	}
	if (o->tmp) {
		/* from the first rename on, the temporary's name may hold what was
		 * at the output (swapped out, and back if it was not the earlier
		 * export): no longer the handler's to remove */
		pending(NULL, 0);
		if (ok && place(o, why, whylen) != 0) {
			ok = 0;
			rc = -1;
		}
		if (!ok && !o->keep_tmp)
			remove_tmp(o);
	}
	if (o->oldfd >= 0)
		close(o->oldfd);
	o->oldfd = -1;
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
	return rc;
}
