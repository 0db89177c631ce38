/* SPDX-License-Identifier: MIT */
/* The way to a writer's file (src/base/safefile.c): a symbolic link or a
 * folder that a stranger planted in a world-writable sticky folder is never
 * gone through, whatever fs.protected_symlinks says, by the walk itself and
 * by each of the library's writers (the shared record, the ClockBound
 * segment, a trace file); tests/tool/test_outputs.sh does the same for the
 * tool's (trace export -o, bench --plot).  Ordinary links (this user's, the
 * folder owner's, or anybody's in a folder not open to all) are followed as
 * the kernel would.  A stranger's name needs root to make: without root
 * those cases say SKIP[root]. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "skip.h"

#include "base/safefile.h"
#include "nanoclock.h"
#include "nanoclock_shared.h"
#include "nanoclock_trace.h"
#include "utc/utc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STRANGER 65534 /* nobody */

static char top[64];   /* this test's own folder */
static char pub[128];  /* top/pub: mode 1777, like /tmp */
static char prey[128]; /* top/prey: where a planted link leads */

/* a path into out (600 bytes), or the test fails */
__attribute__((format(printf, 2, 3))) static void path(char *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out, 600, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= 600)
		fail_msg("a path too long for the test");
}

static void sh(const char *fmt, const char *a)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), fmt, a, a, a);
	if (system(cmd) != 0)
		fail_msg("%s failed", cmd);
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* name in pub: a link to prey that nobody owns (1), or 0 where this process
 * cannot give one away (not root) */
static int plant_link(const char *name)
{
	char p[600];
	path(p, "%s/%s", pub, name);
	unlink(p);
	assert_int_equal(symlink(prey, p), 0);
	if (geteuid() != 0)
		return 0;
	assert_int_equal(lchown(p, STRANGER, STRANGER), 0);
	return 1;
}

static int setup(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "%s/nc-safefile-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(top))
		return -1;
	snprintf(pub, sizeof(pub), "%s/pub", top);
	snprintf(prey, sizeof(prey), "%s/prey", top);
	if (mkdir(pub, 0777) != 0 || chmod(pub, 01777) != 0 || mkdir(prey, 0755) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sh("rm -rf '%s'", top);
	return 0;
}

static void expect_refused(const char *path, int err, const char *words)
{
	char why[256] = "";
	errno = 0;
	assert_int_equal(nc__safe_path(path, 0, why, sizeof(why)), -1);
	assert_int_equal(errno, err);
	if (words && !strstr(why, words))
		fail_msg("%s: reason \"%s\" lacks \"%s\"", path, why, words);
	if (!strstr(why, path))
		fail_msg("reason \"%s\" does not name %s", why, path);
}

static void expect_ok(const char *path, unsigned flags)
{
	char why[256] = "";
	if (nc__safe_path(path, flags, why, sizeof(why)) != 0)
		fail_msg("%s refused: %s", path, why);
}

/* A stranger's link or folder in the sticky folder: refused, and what lies
 * past it untouched. */
static void walk_refuses_strangers(void **state)
{
	(void)state;
	if (!plant_link("evil")) {
		SKIP("root", "not root: no name of another user's can be planted");
		return;
	}
	char p[600];
	path(p, "%s/evil/file", pub);
	expect_refused(p, ELOOP, "world-writable sticky folder: not followed");
	path(p, "%s/evil/a/b/file", pub);
	assert_int_equal(nc__safe_path(p, NC_SAFE_MKDIR, NULL, 0), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(entries(prey), 0);
	/* a stranger's real folder there: its owner may swap it for a link
	 * at any time, so it is not gone through either */
	char d[600];
	path(d, "%s/theirs", pub);
	assert_int_equal(mkdir(d, 0777), 0);
	assert_int_equal(chown(d, STRANGER, STRANGER), 0);
	path(p, "%s/file", d);
	expect_refused(p, ELOOP, "uid 65534's");
	/* the stranger's link reached through a link of this user's
	 * elsewhere: the way is checked wherever the links lead */
	char mine[600];
	path(mine, "%s/mine", top);
	unlink(mine);
	assert_int_equal(symlink("pub/evil", mine), 0);
	path(p, "%s/x/file", mine);
	expect_refused(p, ELOOP, "not followed");
	assert_int_equal(entries(prey), 0);
	unlink(mine);
	rmdir(d);
	/* a path ending in '/' names a folder: the stranger's link is its last
	 * name, and the kernel would follow it even with O_NOFOLLOW */
	path(p, "%s/evil/", pub);
	expect_refused(p, ELOOP, "not followed");
	/* a sticky folder anybody may write to, owned by a stranger: its
	 * owner may rename anything in it, this user's folders too */
	char s2[600], in[600];
	path(s2, "%s/theirs-sticky", top);
	assert_int_equal(mkdir(s2, 0777), 0);
	assert_int_equal(chmod(s2, 01777), 0);
	assert_int_equal(chown(s2, STRANGER, STRANGER), 0);
	path(in, "%s/mine", s2);
	assert_int_equal(mkdir(in, 0755), 0);
	path(p, "%s/file", in);
	expect_refused(p, ELOOP, "sticky folder of uid 65534's");
	/* a folder anybody may write to without the sticky bit: anybody may
	 * rename any name in it, root's own folders too */
	char w[600];
	path(w, "%s/open", top);
	assert_int_equal(mkdir(w, 0777), 0);
	assert_int_equal(chmod(w, 0777), 0);
	path(in, "%s/mine", w);
	assert_int_equal(mkdir(in, 0755), 0);
	path(p, "%s/file", in);
	expect_refused(p, ELOOP, "anybody may write to");
	sh("rm -rf '%s/theirs-sticky' '%s/open'", top);
}

/* What the kernel follows with fs.protected_symlinks=1 is followed. */
static void walk_follows_ordinary_links(void **state)
{
	(void)state;
	char p[600], l[600];
	/* this user's link in the sticky folder */
	path(l, "%s/own", pub);
	unlink(l);
	assert_int_equal(symlink(prey, l), 0);
	path(p, "%s/file", l);
	expect_ok(p, 0);
	unlink(l);
	/* a stranger's link in a folder only this user may write to */
	char priv[600];
	path(priv, "%s/priv", top);
	assert_int_equal(mkdir(priv, 0755), 0);
	path(l, "%s/theirs", priv);
	assert_int_equal(symlink(prey, l), 0);
	if (geteuid() == 0)
		assert_int_equal(lchown(l, STRANGER, STRANGER), 0);
	path(p, "%s/file", l);
	expect_ok(p, 0);
	/* relative targets, "..", "." and doubled slashes, as the kernel goes:
	 * priv/up -> ../prey/sub; priv/up/../x is prey/x (the folder above
	 * the one reached, not above the link) */
	char sub[600];
	path(sub, "%s/sub", prey);
	assert_int_equal(mkdir(sub, 0755), 0);
	path(l, "%s/up", priv);
	assert_int_equal(symlink("../prey/sub", l), 0);
	path(p, "%s/up/.././/sub/file", priv);
	expect_ok(p, 0);
	path(p, "%s/up/../nothere/file", priv);
	expect_refused(p, ENOENT, "nothere");
	/* a name alone, the root, a relative path */
	expect_ok("file", 0);
	expect_ok("/file", 0);
	expect_ok("./file", 0);
	sh("rm -rf '%s'", priv);
	rmdir(sub);
}

static void walk_mkdir_and_errors(void **state)
{
	(void)state;
	char p[600], l[600];
	/* folders made where asked, and only then */
	path(p, "%s/made/a/b/file", top);
	expect_refused(p, ENOENT, "made");
	expect_ok(p, NC_SAFE_MKDIR);
	struct stat st;
	path(l, "%s/made/a/b", top);
	assert_int_equal(stat(l, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	/* a file on the way */
	path(l, "%s/plain", top);
	close(open(l, O_CREAT | O_WRONLY, 0644));
	path(p, "%s/plain/file", top);
	expect_refused(p, ENOTDIR, "not a folder");
	/* a loop of links */
	char a[600], b[600];
	path(a, "%s/la", top);
	path(b, "%s/lb", top);
	assert_int_equal(symlink(b, a), 0);
	assert_int_equal(symlink(a, b), 0);
	path(p, "%s/file", a);
	expect_refused(p, ELOOP, "cannot be followed");
	/* a way of exactly 1023 bytes once the link is put in: taken (the
	 * buffer's 1024th byte is its end) */
	char tgt[1100];
	memset(tgt, 0, sizeof(tgt));
	for (int i = 0; i < 509; i++)
		memcpy(tgt + 2 * i, "./", 2);
	memcpy(tgt + 1018, "prey", 4);
	assert_int_equal(strlen(tgt), 1022);
	path(l, "%s/long", top);
	unlink(l);
	assert_int_equal(symlink(tgt, l), 0);
	path(p, "%s/long/file", top);
	expect_ok(p, 0);
	unlink(l);
	/* nothing, and a way too long */
	assert_int_equal(nc__safe_path("", 0, NULL, 0), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(nc__safe_path(NULL, 0, NULL, 0), -1);
	char longp[1100];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = 0;
	assert_int_equal(nc__safe_path(longp, 0, NULL, 0), -1);
	assert_int_equal(errno, ENAMETOOLONG);
	sh("rm -rf '%s/made' '%s/plain'", top);
	unlink(a);
	unlink(b);
}

/* A step that fails for want of a descriptor still says why (the tool
 * prints the reason as given). */
static void walk_says_why(void **state)
{
	(void)state;
	if (getenv("NC_TEST_VALGRIND")) {
		/* valgrind keeps descriptors of its own above the program's:
		 * a lowered RLIMIT_NOFILE does not bite the same way */
		SKIP("valgrind", "descriptor limits under valgrind are valgrind's");
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		int lowest = dup(0);
		close(lowest);
		struct rlimit rl = {(rlim_t)lowest + 1, (rlim_t)lowest + 1};
		char why[256] = "";
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			_exit(3);
		int rc = nc__safe_path("../x/f", 0, why, sizeof(why));
		_exit(rc == -1 && errno == EMFILE && strstr(why, "cannot be reached") ? 0 : 1);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* The library's three writers, each given a way through the stranger's
 * link: refused with the walk's reason, nothing written past it; given a
 * way through this user's own link there, written. */
static void writers_refuse_strangers(void **state)
{
	(void)state;
	if (!plant_link("evil")) {
		SKIP("root", "not root: no name of another user's can be planted");
		return;
	}
	char p[600], why[600] = "";
	char own[600];
	path(own, "%s/own", pub);
	unlink(own);
	assert_int_equal(symlink(prey, own), 0);

	/* the shared record (this process calibrated itself: NANOCLOCK_SHARED
	 * is off, set before the library started).  On an OS clock (an
	 * emulator's counter may fail the checks) there is no record to
	 * write at all: said, and that part left out */
	path(p, "%s/plain-record", top);
	int sharable = nc_shared_publish(p, -1, 0, 0, why, sizeof(why)) == 0;
	unlink(p);
	const char *emu = getenv("NC_TEST_RUN");
	if (!sharable && emu && emu[0]) {
		nc_skip_note("emulator", "no shared record here (%s): its writer not tried", why);
	} else {
		if (!sharable)
			fail_msg("no shared record can be written: %s", why);
		path(p, "%s/evil/record", pub);
		errno = 0;
		assert_int_equal(nc_shared_publish(p, -1, 0, 0, why, sizeof(why)), NC_ESYS);
		assert_int_equal(errno, ELOOP);
		if (!strstr(why, "not followed"))
			fail_msg("shared record: \"%s\"", why);
		assert_int_equal(entries(prey), 0);
		path(p, "%s/own/record", pub);
		int rc = nc_shared_publish(p, -1, 0, 0, why, sizeof(why));
		if (rc != 0)
			fail_msg("shared record through this user's link: %d %s", rc, why);
		assert_int_equal(entries(prey), 1);
		unlink(p);
	}

	/* the ClockBound segment */
	struct nc__clockbound_out o = {.as_of_ns = 1, .void_ns = 2, .bound_ns = 1000, .status = 1};
	path(p, "%s/evil/shm0", pub);
	why[0] = 0;
	errno = 0;
	assert_int_equal(nc__utc_clockbound_publish(p, &o, why, sizeof(why)), -1);
	assert_int_equal(errno, ELOOP);
	if (!strstr(why, "not followed"))
		fail_msg("clockbound: \"%s\"", why);
	assert_int_equal(entries(prey), 0);
	path(p, "%s/own/shm0", pub);
	if (nc__utc_clockbound_publish(p, &o, why, sizeof(why)) != 0)
		fail_msg("clockbound through this user's link: %s", why);
	assert_int_equal(entries(prey), 1);
	unlink(p);

	/* a trace file */
	struct nc_trace *t = NULL;
	path(p, "%s/evil/run.nct", pub);
	errno = 0;
	assert_int_equal(nc_trace_open(&t, p, NULL), NC_TRACE_EIO);
	assert_int_equal(errno, ELOOP);
	assert_null(t);
	assert_int_equal(entries(prey), 0);
	path(p, "%s/own/run.nct", pub);
	assert_int_equal(nc_trace_open(&t, p, NULL), 0);
	assert_int_equal(nc_trace_close(t), 0);
	assert_int_equal(entries(prey), 1);
	unlink(p);
	unlink(own);
}

int main(void)
{
	/* this process's own calibration, so that it may publish one */
	setenv("NANOCLOCK_SHARED", "off", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(walk_refuses_strangers),
		cmocka_unit_test(walk_follows_ordinary_links),
		cmocka_unit_test(walk_mkdir_and_errors),
		cmocka_unit_test(walk_says_why),
		cmocka_unit_test(writers_refuse_strangers),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
