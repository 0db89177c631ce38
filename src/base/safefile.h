/* SPDX-License-Identifier: MIT */
/* Where a writer may put a file, and what it may replace: the rules every
 * writer of the library and the tool shares (the shared record, the
 * ClockBound segment, trace files, trace exports, plots).
 *
 * The way to a file: in a world-writable sticky folder (/tmp, /dev/shm)
 * anybody can plant a name, so a symbolic link there is not followed unless
 * it is this user's or the folder owner's, as fs.protected_symlinks would
 * have it, whatever that sysctl says.  nc__safe_path goes further: it
 * passes only through names there that are this user's or the folder
 * owner's, links or directories, and only where that owner is root or this
 * user.  Nobody else can rename or remove those (that is what the sticky
 * bit means; the folder's owner could), so the path stays what was checked
 * and the writer may go on to use it by name.  A folder anybody may write
 * to without the sticky bit is gone through by no name: anybody may rename
 * any of them.  Elsewhere a folder's entries are its owner's (and group's)
 * to change, as for the kernel.  A path ending in '/' names a folder: its
 * last name is walked too.
 *
 * The last name is the writer's to judge (each opens it with O_NOFOLLOW and
 * replaces only what nc__safe_ours says it may).
 *
 * System calls only (no allocation, no stdio): usable on the library's
 * refresh path and after fork.  The tool shares this file with the library
 * (the one internal header it includes). */
#ifndef NC_BASE_SAFEFILE_H
#define NC_BASE_SAFEFILE_H

#include "compiler.h"

#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>

#define NC_SAFE_MKDIR 1u /* make the missing directories on the way (0755 less the umask) */

/* 0 when every directory on the way to path's last name may be trusted (and,
 * with NC_SAFE_MKDIR, exists); else -1 with errno and a one-line reason in
 * why naming the path: ELOOP for a stranger's name in a world-writable
 * sticky folder, a name in a folder anybody may write to, or more than 40
 * links; ENOTDIR, ENOENT, ENAMETOOLONG (a way longer than 1023 bytes once
 * links are put in), or what a call failed with. */
NC_HIDDEN int nc__safe_path(const char *path, unsigned flags, char *why, size_t len);

/* st describes a regular file of this user's with no other name: one a
 * writer may empty or replace (a hard link would be somebody's other file). */
NC_HIDDEN int nc__safe_ours(const struct stat *st);

/* What st describes, for a message that says why a writer left it alone:
 * "a file", "a symbolic link", "a character device (1:3)", ...  (buf
 * holds a device's text: the result is buf or a constant.) */
NC_HIDDEN const char *nc__stat_kind(const struct stat *st, char *buf, size_t len);

/* renameat2 by its system call (C libraries before glibc 2.28 lack it);
 * ENOSYS where there is none. */
NC_HIDDEN int nc__rename2(int fromdir, const char *from, int todir, const char *to,
			  unsigned flags);

/* renameat2 refused for want of support: no system call (ENOSYS), a file
 * system without it (EINVAL, ENOTSUP), or a sandbox that denies it (EPERM) */
static inline int nc__rename2_unsupported(int e)
{
	return e == ENOSYS || e == EINVAL || e == EPERM || e == ENOTSUP;
}

#endif
