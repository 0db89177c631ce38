/* SPDX-License-Identifier: MIT */
/* The way to a writer's file, walked one name at a time (safefile.h says
 * what is trusted and why the path stays what was checked). */
#include "safefile.h"

#include "fmt.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define WAY_MAX 1024
#define LINKS_MAX 40 /* the kernel's own limit */

/* a message only where there is room for one (the refresh path passes none) */
#define SAY(...) ((why) && (len) ? (void)nc__fmt((why), (len), __VA_ARGS__) : (void)0)

/* May a name in the folder d, owned by uid, be gone through?  A folder
 * anybody may write to without the sticky bit: no name in it (anybody may
 * rename any of them after the walk).  With the sticky bit (/tmp): names
 * of this user's or the folder owner's, if that owner is root or this user
 * (the owner of a sticky folder may still rename everything in it). */
static int trusted(const struct stat *d, uid_t uid)
{
	if (!(d->st_mode & S_IWOTH))
		return 1;
	if (!(d->st_mode & S_ISVTX))
		return 0;
	uid_t me = geteuid();
	return (d->st_uid == 0 || d->st_uid == me) && (uid == me || uid == d->st_uid);
}

/* The root, for an absolute way: through /proc/self/root where there is
 * one (an emulator given a sysroot, qemu-user -L, maps "/" itself into
 * that sysroot, but not a path it does not hold), else "/" */
static int open_root(void)
{
	int fd = open("/proc/self/root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd >= 0 ? fd : open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* The next name of the way at *p (slashes skipped), copied to name; *p moves
 * past it.  0 at the end of the way, -1 for a name over 255 bytes. */
static int next_name(const char **p, char name[256])
{
	const char *s = *p;
	while (*s == '/')
		s++;
	size_t n = strcspn(s, "/");
	if (n > 255)
		return -1;
	memcpy(name, s, n);
	name[n] = 0;
	*p = s + n;
	return n > 0;
}

/* The directory dfd (described by ds) stepped into name, or a link there
 * followed into the way.  1: *dfd and *ds are now that directory; 2: a
 * link, way rewritten (and *dfd reset to / for an absolute target); -1
 * with errno. */
static int step(int *dfd, struct stat *ds, const char *name, char *way, const char *rest,
		int *links, unsigned flags, const char *path, char *why, size_t len)
{
	int fd = openat(*dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && (flags & NC_SAFE_MKDIR)) {
		if (mkdirat(*dfd, name, 0755) != 0 && errno != EEXIST) {
			int e = errno;
			SAY("%s: cannot make the folder %s on its way (%s)", path, name, strerror(e));
			errno = e;
			return -1;
		}
		fd = openat(*dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		SAY("%s: %s on its way cannot be reached (%s)", path, name, strerror(e));
		errno = e;
		return -1;
	}
	if (!trusted(ds, st.st_uid)) {
		close(fd);
		if (!(ds->st_mode & S_ISVTX))
			SAY("%s: %s on its way is in a folder anybody may write to: not followed", path,
			    name);
		else if (ds->st_uid != 0 && ds->st_uid != geteuid())
			SAY("%s: %s on its way is in a world-writable sticky folder of uid %u's: not "
			    "followed", path, name, (unsigned)ds->st_uid);
		else
			SAY("%s: %s on its way is uid %u's, in a world-writable sticky folder: not "
			    "followed", path, name, (unsigned)st.st_uid);
		errno = ELOOP;
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		close(*dfd);
		*dfd = fd;
		*ds = st;
		return 1;
	}
	if (!S_ISLNK(st.st_mode)) {
		close(fd);
		SAY("%s: %s on its way is not a folder", path, name);
		errno = ENOTDIR;
		return -1;
	}
	/* the way becomes the link's target, then what was left of it: the
	 * rest moved to the buffer's end, the target read before it (one
	 * buffer: this runs on small stacks) */
	size_t rn = strlen(rest);
	memmove(way + WAY_MAX - rn - 1, rest, rn + 1);
	/* room for the target: all of the buffer before the rest, and a '/'
	 * (the rest's NUL is the buffer's last byte at most) */
	size_t room = WAY_MAX - rn - 1;
	ssize_t tn = ++*links > LINKS_MAX ? -2 : room < 2 ? -3 : readlinkat(fd, "", way, room);
	int e = errno;
	close(fd);
	if (tn < 0 || (size_t)tn >= room) {
		e = tn == -2 ? ELOOP : tn == -1 ? e : ENAMETOOLONG;
		SAY("%s: the link %s on its way cannot be followed (%s)", path, name, strerror(e));
		errno = e;
		return -1;
	}
	way[tn] = '/';
	memmove(way + tn + 1, way + WAY_MAX - rn - 1, rn + 1);
	if (way[0] == '/') {
		int root = open_root();
		if (root < 0 || fstat(root, ds) != 0) {
			e = errno;
			if (root >= 0)
				close(root);
			SAY("%s: the root on its way (the link %s) cannot be reached (%s)", path, name,
			    strerror(e));
			errno = e;
			return -1;
		}
		close(*dfd);
		*dfd = root;
	}
	return 2;
}

int nc__safe_path(const char *path, unsigned flags, char *why, size_t len)
{
	size_t n = path ? strlen(path) : 0;
	if (n == 0 || n >= WAY_MAX) {
		SAY("%s: %s", n ? path : "(none)", n ? "a path too long" : "an empty path");
		errno = n ? ENAMETOOLONG : EINVAL;
		return -1;
	}
	/* the folders only: the last name dropped, unless slashes follow it
	 * ("dir/": a folder, which the kernel reaches through a link even
	 * with O_NOFOLLOW) */
	char way[WAY_MAX];
	memcpy(way, path, n + 1);
	if (way[n - 1] != '/') {
		char *last = strrchr(way, '/');
		if (!last)
			return 0; /* a name in the working directory, which is where it is */
		last[last == way] = 0; /* "/name": the root */
	}

	int dfd = way[0] == '/' ? open_root() : open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat ds;
	if (dfd < 0 || fstat(dfd, &ds) != 0) {
		int e = errno;
		if (dfd >= 0)
			close(dfd);
		SAY("%s: cannot start its way (%s)", path, strerror(e));
		errno = e;
		return -1;
	}
	const char *p = way;
	char name[256];
	int links = 0, r;
	while ((r = next_name(&p, name)) != 0) {
		if (r < 0) {
			close(dfd);
			SAY("%s: a name on its way is over 255 bytes", path);
			errno = ENAMETOOLONG;
			return -1;
		}
		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			/* the folder above the one reached (as the kernel goes) */
			int up = openat(dfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (up < 0 || fstat(up, &ds) != 0) {
				int e = errno;
				if (up >= 0)
					close(up);
				close(dfd);
				SAY("%s: the folder above one on its way cannot be reached (%s)", path,
				    strerror(e));
				errno = e;
				return -1;
			}
			close(dfd);
			dfd = up;
			continue;
		}
		r = step(&dfd, &ds, name, way, p, &links, flags, path, why, len);
		if (r < 0) {
			int e = errno;
			close(dfd);
			errno = e;
			return -1;
		}
		if (r == 2)
			p = way; /* the link's target, then the rest */
	}
	close(dfd);
	return 0;
}

int nc__safe_ours(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_uid == geteuid() && st->st_nlink == 1;
}

int nc__rename2(int fromdir, const char *from, int todir, const char *to, unsigned flags)
{
#ifdef SYS_renameat2
	return (int)syscall(SYS_renameat2, fromdir, from, todir, to, flags);
#else
	(void)fromdir, (void)from, (void)todir, (void)to, (void)flags;
	errno = ENOSYS;
	return -1;
#endif
}

const char *nc__stat_kind(const struct stat *st, char *buf, size_t len)
{
	switch (st->st_mode & S_IFMT) {
	case S_IFREG: return "a file";
	case S_IFDIR: return "a directory";
	case S_IFLNK: return "a symbolic link";
	case S_IFIFO: return "a FIFO";
	case S_IFSOCK: return "a socket";
	case S_IFBLK:
	case S_IFCHR:
		nc__fmt(buf, len, "a %s device (%u:%u)", S_ISBLK(st->st_mode) ? "block" : "character",
			major(st->st_rdev), minor(st->st_rdev));
		return buf;
	default: return "something of an unknown kind";
	}
}
