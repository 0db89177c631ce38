/* SPDX-License-Identifier: MIT */
/* A program with raised privileges does not obey its caller's
 * environment: a setuid-root copy of this program, run by an unprivileged
 * user with NANOCLOCK_HZ=100G NANOCLOCK_HZ_FORCE=1 (which would run its
 * intervals at 0.026x real time) and NANOCLOCK_COUNTER, measures its rate
 * and says the variables were ignored.  Needs root (to make the copy
 * setuid root) and a file system that honours setuid: skipped otherwise,
 * with the reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "skip.h"
#include "run.h"

#include "nanoclock.h"
#include "nanoclock_info.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

/* The probe: what the privileged copy reports, one line. */
static int probe(void)
{
	struct nc_info in;
	nc_get_info(&in);
	printf("counter=%s source=%s hz=%.0f ignored=%s env=%s\n", in.counter, in.hz_source, in.hz,
	       in.env_ignored, in.hz_env_status);
	return 0;
}

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0700);
	if (in < 0 || out < 0)
		return -1;
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			return -1;
	close(in);
	return close(out);
}

/* In the probe's child before its exec: a program with raised privileges
 * ignores NANOCLOCK_SHARED and writes the user's record,
 * /dev/shm/nanoclock-0-ARCH for root: the test's own /dev/shm (a tmpfs in
 * a mount namespace), so that it never rewrites the real one (where
 * namespaces are refused, as in some containers, it does); then, if asked,
 * as uid/gid 65534. */
static void probe_child(void *drop)
{
	if (unshare(CLONE_NEWNS) == 0 && mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) == 0 &&
	    mount("none", "/dev/shm", "tmpfs", 0, "size=64k,mode=1777") == 0)
		(void)!write(1, "shm=own ", 8);
	if (*(int *)drop && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0))
		_exit(3);
}

/* Runs prog --probe with envp, as uid/gid 65534 if drop (under an
 * emulator, through it: binfmt_misc may not be there to run a foreign
 * binary); its output in out. */
static int run_probe(const char *prog, char *const envp[], int drop, char *out, size_t len)
{
	const char *args[] = {"--probe", NULL};
	return run_capture(prog, args, envp, probe_child, &drop, out, len);
}

/* A fingerprint of root's records in the real /dev/shm (names, sizes and
 * modification times), to see that the test left them alone. */
static unsigned long long shm_records(void)
{
	unsigned long long h = 1469598103934665603ull;
	DIR *d = opendir("/dev/shm");
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "nanoclock-0", 11) != 0)
			continue;
		struct stat st;
		char p[300];
		snprintf(p, sizeof(p), "/dev/shm/%s", e->d_name);
		if (stat(p, &st) != 0)
			continue;
		unsigned long long v[3] = {(unsigned long long)st.st_size,
					   (unsigned long long)st.st_mtim.tv_sec,
					   (unsigned long long)st.st_mtim.tv_nsec};
		for (const char *c = e->d_name; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ull;
		for (int i = 0; i < 3; i++)
			h = (h ^ v[i]) * 1099511628211ull;
	}
	closedir(d);
	return h;
}

/* Runs a setuid-root copy of self as nobody with envp; its probe line in
 * out.  Skips the case (cmocka's skip leaves it) where that cannot be done. */
static int run_setuid_copy(const char *self, char *const envp[], char *out, size_t len)
{
	if (geteuid() != 0) {
		SKIP("root", "making a setuid-root copy needs root");
	}
	const char *emu = getenv("NC_TEST_RUN");
	if (emu && emu[0]) {
		SKIP("emulator", "an emulated program is not run setuid (binfmt_misc without "
					 "credentials)");
	}
	if (getenv("NC_TEST_VALGRIND")) {
		SKIP("valgrind", "valgrind does not run setuid programs");
	}
	char dir[] = "/tmp/nc_priv_XXXXXX";
	assert_non_null(mkdtemp(dir));
	chmod(dir, 0755);
	struct statvfs vfs;
	if (statvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_NOSUID)) {
		rmdir(dir);
		SKIP("machine", "%s is on a nosuid file system", dir);
	}
	char copy[64];
	snprintf(copy, sizeof(copy), "%s/probe", dir);
	assert_int_equal(copy_file(self, copy), 0);
	assert_int_equal(chmod(copy, 04755), 0); /* setuid root */
	unsigned long long shm_before = shm_records();
	int st = run_probe(copy, envp, 1, out, len);
	unlink(copy);
	rmdir(dir);
	/* its record went to the test's own /dev/shm (run_probe), where one
	 * could be made */
	if (strncmp(out, "shm=own ", 8) == 0)
		assert_true(shm_records() == shm_before);
	return st;
}

static void test_setuid_ignores_environment(void **state)
{
	const char *self = *state;
	/* an ordinary user runs the setuid program, with a hostile environment */
	char *const envp[] = {"NANOCLOCK_HZ=100G", "NANOCLOCK_HZ_FORCE=1",
			      "NANOCLOCK_COUNTER=gettimeofday", NULL};
	char out[1024];
	int st = run_setuid_copy(self, envp, out, sizeof(out));
	fprintf(stderr, "  setuid copy run as nobody with NANOCLOCK_HZ=100G NANOCLOCK_HZ_FORCE=1: %s",
		out);
	assert_int_equal(st, 0);
	assert_null(strstr(out, "source=env"));
	assert_null(strstr(out, "counter=gettimeofday"));
	assert_non_null(strstr(out, "NANOCLOCK_HZ"));
	assert_non_null(strstr(out, "raised privileges"));
	/* the rate is its own, not 100 GHz */
	const char *hz = strstr(out, "hz=");
	assert_non_null(hz);
	assert_true(atof(hz + 3) < 5e10);
}

/* Only NANOCLOCK_HZ_FORCE set: that one is listed as ignored, and
 * NANOCLOCK_HZ's status is not "ignored" (it was never set; a substring
 * match of the ignored list said it was). */
static void test_setuid_names_what_it_ignored(void **state)
{
	const char *self = *state;
	char *const envp[] = {"NANOCLOCK_HZ_FORCE=1", NULL};
	char out[1024];
	int st = run_setuid_copy(self, envp, out, sizeof(out));
	fprintf(stderr, "  setuid copy with NANOCLOCK_HZ_FORCE=1 alone: %s", out);
	assert_int_equal(st, 0);
	const char *ign = strstr(out, "ignored=NANOCLOCK_HZ_FORCE");
	assert_non_null(ign);
	const char *env = strstr(out, " env=");
	assert_non_null(env);
	assert_null(strstr(env, "raised privileges"));
}

/* ... and the same program, unprivileged, obeys it (the test can fail). */
static void test_unprivileged_obeys(void **state)
{
	const char *self = *state;
	char *const envp[] = {"NANOCLOCK_COUNTER=gettimeofday", NULL};
	char out[1024];
	assert_int_equal(run_probe(self, envp, 0, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "counter=gettimeofday"));
	assert_non_null(strstr(out, "ignored= "));
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--probe") == 0)
		return probe();
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_setuid_ignores_environment, self),
		cmocka_unit_test_prestate(test_setuid_names_what_it_ignored, self),
		cmocka_unit_test_prestate(test_unprivileged_obeys, self),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
