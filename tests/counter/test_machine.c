/* SPDX-License-Identifier: MIT */
/* The machine's facts as the library reads them: the start only what
 * choosing the counter needs, the rest at the first report.  RDTSCP is used for the
 * end of a measurement only where the kernel's flags list it as well as
 * CPUID: under valgrind on a CPU without RDTSCP, valgrind's CPUID claimed
 * it and every nc_ticks_end died of SIGILL (CI on a bhyve guest). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fresh.h"
#include "skip.h"

#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
/* A copy of /proc/cpuinfo with the word rdtscp taken out of the flags. */
static const char *cpuinfo_without_rdtscp(void)
{
	static char path[] = "/tmp/nc-cpuinfo-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *in = fopen("/proc/cpuinfo", "r"), *out = fdopen(fd, "w");
	assert_non_null(in);
	assert_non_null(out);
	char line[8192];
	while (fgets(line, sizeof(line), in)) {
		char *p;
		while ((p = strstr(line, " rdtscp")) != NULL)
			memmove(p, p + 7, strlen(p + 7) + 1);
		fputs(line, out);
	}
	fclose(in);
	fclose(out);
	return path;
}

struct seen {
	uint64_t kind, kind_after; /* after nc_init; after nc_get_info */
	int tsc, cpuid_rdtscp, cpuinfo_rdtscp, ordered, ordered_after;
	int read_at_start, read_after; /* the machine's kernel_read */
	int invariant;                 /* CPUID states an invariant TSC */
	char unreadable_at_start[48];
	int sources_at_start, sources_after; /* nc_info's stated rates */
	char cpuinfo_source[160];            /* cpuinfo-mhz's reason, after */
};

static int hz_sources(void)
{
	struct nc_info o;
	nc__lock();
	memset(&o, 0, sizeof(o));
	nc__rate_info(&o);
	nc__unlock();
	return o.n_hz_sources;
}

/* in a child that forks before this process ever calls the library (a
 * fresh start): what the library settles on at the start, and after the
 * first call that reports */
static struct seen in_child(const char *cpuinfo, int target)
{
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(60);
		if (cpuinfo)
			nc__cpuinfo_path = cpuinfo;
		/* the machine's facts read here, not taken from a shared record;
		 * no calibration target: the start reads only what it needs;
		 * a target: the start reads the files too */
		setenv("NANOCLOCK_SHARED", "off", 1);
		if (target)
			setenv("NANOCLOCK_CALIB_PPM", "1000", 1);
		else
			unsetenv("NANOCLOCK_CALIB_PPM");
		nc_init();
		struct seen s;
		memset(&s, 0, sizeof(s));
		uint64_t t = nc_ticks_begin(), e = nc_ticks_end();
		s.ordered = e >= t;
		s.kind = nc__counter_kind();
		s.tsc = strcmp(nc_counter_name(), "tsc") == 0;
		const struct nc__machine *m = nc__counter_machine();
		nc__lock();
		s.read_at_start = m->kernel_read;
		s.invariant = m->cpuid && m->cpuid->invariant;
		snprintf(s.unreadable_at_start, sizeof(s.unreadable_at_start), "%s", m->unreadable);
		nc__unlock();
		s.sources_at_start = hz_sources();
		struct nc_info *o = calloc(1, sizeof(*o));
		if (!o)
			_exit(3);
		nc_get_info(o);
		for (int i = 0; i < o->n_hz_sources; i++)
			if (strcmp(o->hz_sources[i].name, "cpuinfo-mhz") == 0)
				snprintf(s.cpuinfo_source, sizeof(s.cpuinfo_source), "%s",
					 o->hz_sources[i].reason);
		free(o);
		t = nc_ticks_begin();
		e = nc_ticks_end();
		s.ordered_after = e >= t;
		s.kind_after = nc__counter_kind();
		nc__lock();
		s.read_after = m->kernel_read;
		s.cpuid_rdtscp = m->cpuid->rdtscp;
		s.cpuinfo_rdtscp = m->cpuinfo_rdtscp;
		nc__unlock();
		s.sources_after = hz_sources();
		(void)!write(pfd[1], &s, sizeof(s));
		_exit(0);
	}
	close(pfd[1]);
	struct seen k;
	assert_int_equal(read(pfd[0], &k, sizeof(k)), (ssize_t)sizeof(k));
	close(pfd[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return k;
}
#endif

static void test_rdtscp_needs_the_kernels_word(void **state)
{
	(void)state;
#if defined(__x86_64__) || defined(__i386__)
	/* a start that read no flags: LFENCE;RDTSC;LFENCE ends, for good
	 * (reading them later does not switch: the lines carry the kind) */
	struct seen early = in_child(NULL, 0);
	if (!early.tsc)
		SKIP("machine", "the TSC is not the counter here");
	assert_true(early.ordered);
	assert_true(early.ordered_after);
	assert_int_equal(early.kind, NC_IMPL_KIND_TSC);
	assert_int_equal(early.kind_after, NC_IMPL_KIND_TSC);
	/* a start that read them (a calibration target): RDTSCP where both
	 * CPUID and the kernel's flags list it */
	struct seen real = in_child(NULL, 1);
	assert_int_equal(real.read_at_start, 1);
	assert_true(real.ordered);
	if (!real.cpuid_rdtscp || real.cpuinfo_rdtscp != 1) {
		/* one of them says no (valgrind on a CPU without it): never used */
		assert_int_equal(real.kind, NC_IMPL_KIND_TSC);
		assert_int_equal(real.kind_after, NC_IMPL_KIND_TSC);
		printf("  rdtscp: CPUID %d, kernel %d: lfence;rdtsc;lfence ends\n",
		       real.cpuid_rdtscp, real.cpuinfo_rdtscp);
		return;
	}
	assert_int_equal(real.kind, NC_IMPL_KIND_TSCP);
	assert_int_equal(real.kind_after, NC_IMPL_KIND_TSCP);
	const char *p = cpuinfo_without_rdtscp();
	struct seen without = in_child(p, 1);
	unlink(p);
	assert_int_equal(without.cpuinfo_rdtscp, 0);
	assert_true(without.ordered_after);
	assert_int_equal(without.kind, NC_IMPL_KIND_TSC);
	assert_int_equal(without.kind_after, NC_IMPL_KIND_TSC);
#else
	SKIP("machine", "not an x86 machine: no TSC");
#endif
}

/* The start reads none of the kernel's files (on an invariant TSC, the
 * TSC policy needs only CPUID; without one it reads them): a cpuinfo path that does not exist leaves
 * no trace at the start; the first report reads the files, says what was
 * unreadable, and cross-checks the stated rates it found against the
 * measurement then.  With a calibration target the start reads them, and
 * the report adds none twice. */
static void test_start_reads_no_kernel_file(void **state)
{
	(void)state;
#if defined(__x86_64__) || defined(__i386__)
	struct seen real = in_child(NULL, 0);
	if (!real.tsc)
		SKIP("machine", "the TSC is not the counter here");
	if (!real.invariant) {
		/* a CPU whose CPUID states no invariant TSC (qemu-user's, for
		 * one): the start needs the kernel's files, and reads them */
		assert_int_equal(real.read_at_start, 1);
		assert_true(real.sources_at_start >= 4);
		printf("  CPUID states no invariant TSC: the start read the kernel's files\n");
		return;
	}
	assert_int_equal(real.read_at_start, 0);
	assert_int_equal(real.sources_at_start, 0);
	assert_int_equal(real.read_after, 1);
	/* the four the TSC states (CPUID 15h, 40000010h, cpu MHz, sysfs),
	 * each with a verdict, and the perf page */
	assert_true(real.sources_after >= 4);
	assert_true(real.cpuinfo_source[0]);
	printf("  cpuinfo-mhz after the start: %s\n", real.cpuinfo_source);
	struct seen none = in_child("/nonexistent/cpuinfo", 0);
	assert_int_equal(none.read_at_start, 0);
	assert_int_equal(none.read_after, 1);
	assert_int_equal(none.cpuinfo_rdtscp, -1);
	assert_string_equal(none.cpuinfo_source, "no \"cpu MHz\" in /proc/cpuinfo");
	struct seen full = in_child(NULL, 1);
	assert_int_equal(full.read_at_start, 1);
	assert_true(full.sources_at_start >= 4);
	assert_true(full.sources_after >= full.sources_at_start);
	assert_true(full.sources_after <= full.sources_at_start + 1); /* the perf page */
#else
	SKIP("machine", "not an x86 machine: no TSC");
#endif
}

/* Each stated rate once, on every architecture: the sources the start
 * read and those handed over after it (x86's, from the kernel's files)
 * are not the same ones twice, however many reports follow. */
static void test_stated_sources_once(void **state)
{
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(60);
		setenv("NANOCLOCK_SHARED", "off", 1);
		if (*(const int *)state)
			setenv("NANOCLOCK_CALIB_PPM", "1000", 1); /* the files read at the start */
		else
			unsetenv("NANOCLOCK_CALIB_PPM");
		struct nc_info *o = calloc(1, sizeof(*o));
		int bad = !o;
		for (int round = 0; !bad && round < 3; round++) {
			nc_get_info(o);
			for (int i = 0; i < o->n_hz_sources; i++)
				for (int j = i + 1; j < o->n_hz_sources; j++)
					if (!strcmp(o->hz_sources[i].name, o->hz_sources[j].name)) {
						printf("  %s stated twice: %d sources\n",
						       o->hz_sources[i].name, o->n_hz_sources);
						bad = 1;
					}
		}
		if (o)
			printf("  %s: %d stated sources\n", o->counter, o->n_hz_sources);
		fflush(stdout);
		_exit(bad);
	}
	close(pfd[1]);
	close(pfd[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

#if defined(__x86_64__) || defined(__i386__)
/* The kernel's stance on the TSC, as a process reads it from the kernel's
 * own files: in a mount namespace of the child's, /proc/cmdline and the
 * clocksource list are files the test wrote (bind mounts), so a guest
 * booted tsc=unstable, one whose kernel dropped the TSC from its
 * clocksources and one that lists it run on any x86 host, whatever this
 * one was booted with (the command lines are the test's own).
 * scripts/emulate-distrust shows a whole process the same files. */
struct stance {
	const char *cmdline, *clocksources;
	int unstable;
	const char *why;
};

static const char *sys_list = "/sys/devices/system/clocksource/clocksource0/available_clocksource";

static void write_text(char *path, const char *text)
{
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static size_t stance_child(void *arg, void *out, size_t size)
{
	const char **paths = arg; /* cmdline, clocksource list */
	/* mount's type is ignored for these but named ("none"): valgrind
	 * reads it as a string */
	if (unshare(CLONE_NEWNS) != 0)
		CHILD_SKIP_BECAUSE("root", "unshare(CLONE_NEWNS): %s", strerror(errno));
	if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0)
		CHILD_SKIP_BECAUSE("root", "a private mount namespace: %s", strerror(errno));
	if (mount(paths[0], "/proc/cmdline", "none", MS_BIND, NULL) != 0 ||
	    mount(paths[1], sys_list, "none", MS_BIND, NULL) != 0) {
		/* no /proc or /sys to cover (a minimal container): the machine's */
		if (errno == ENOENT)
			CHILD_SKIP_BECAUSE("machine", "no /proc/cmdline or %s: %s", sys_list,
					   strerror(errno));
		CHILD_SKIP_BECAUSE("root", "bind mounts over /proc/cmdline and %s: %s", sys_list,
				   strerror(errno));
	}
	setenv("NANOCLOCK_SHARED", "off", 1); /* the facts read here, not adopted */
	static struct nc_info in;
	nc_get_info(&in);
	return (size_t)snprintf(out, size, "%d|%d|%s|%s", in.kernel.cpuid_tsc,
				in.kernel.tsc_unstable, in.kernel.tsc_unstable_why,
				in.kernel.available_clocksources);
}
#endif

static void test_kernel_stance_from_its_files(void **state)
{
	(void)state;
#if defined(__x86_64__) || defined(__i386__)
	static const struct stance cases[] = {
		{"BOOT_IMAGE=/vmlinuz ro quiet tsc=unstable", "tsc kvm-clock hpet acpi_pm ", 1,
		 "boot parameter tsc=unstable"},
		{"tsc=unstable ro", "tsc hpet ", 1, "boot parameter tsc=unstable"},
		{"ro notsc=unstable tsc=unstable console=ttyS0", "tsc ", 1,
		 "boot parameter tsc=unstable"},
		{"BOOT_IMAGE=/vmlinuz ro", "kvm-clock hpet acpi_pm ", 1,
		 "tsc is not among the kernel's clocksources"},
		{"BOOT_IMAGE=/vmlinuz ro", "tsc kvm-clock ", 0, "tsc is a registered clocksource"},
		/* words, not substrings */
		{"ro notsc=unstable tsc=unstable2", "tsc-early tsc hpet ", 0,
		 "tsc is a registered clocksource"},
		{"ro xtsc=unstable", "tsc-early hpet ", 1, "tsc is not among the kernel's clocksources"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char cpath[] = "/tmp/nc-cmdline-XXXXXX", lpath[] = "/tmp/nc-clocksources-XXXXXX";
		char text[256];
		snprintf(text, sizeof(text), "%s\n", cases[i].cmdline);
		write_text(cpath, text);
		snprintf(text, sizeof(text), "%s\n", cases[i].clocksources);
		write_text(lpath, text);
		const char *paths[2] = {cpath, lpath};
		static char got[512];
		int wst = 0;
		ssize_t n = in_fresh_process(stance_child, paths, got, sizeof(got) - 1, &wst);
		unlink(cpath);
		unlink(lpath);
		assert_true(WIFEXITED(wst));
		if (WEXITSTATUS(wst) == 77)
			skip(); /* the child said why */
		assert_int_equal(WEXITSTATUS(wst), 0);
		assert_true(n > 0);
		print_message("  case %zu: %s\n", i, got);
		int tsc = 0, unstable = -2;
		assert_int_equal(sscanf(got, "%d|%d|", &tsc, &unstable), 2);
		if (tsc != 1)
			SKIP("machine", "CPUID states no TSC: the kernel's stance is not read");
		assert_int_equal(unstable, cases[i].unstable);
		/* the reason and the list as read (its last blank dropped), whole */
		char want[256];
		snprintf(want, sizeof(want), "%d|%d|%s|%s", tsc, cases[i].unstable, cases[i].why,
			 cases[i].clocksources);
		want[strlen(want) - 1] = 0;
		if (strcmp(got, want) != 0)
			print_error("want '%s'\n", want);
		assert_string_equal(got, want);
	}
#else
	SKIP("machine", "not an x86 machine: no TSC");
#endif
}

/* /proc/cpuinfo is read with read(2) up to the first CPU's block: its
 * values, not the second CPU's, even when the block is longer than one
 * read; "cpu MHz" whatever the locale's decimal point. */
static void test_cpuinfo_first_block(void **state)
{
	(void)state;
	char path[] = "/tmp/nc-cpuinfo-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *out = fdopen(fd, "w");
	assert_non_null(out);
	fprintf(out, "processor\t: 0\nmodel name\t: test\ncpu MHz\t\t: 1234.5678\nflags\t\t: fpu");
	for (int i = 0; i < 300; i++) /* a flags line of ~2.4 KB: several reads */
		fprintf(out, " pad%d", i);
	fprintf(out, " constant_tsc tsc_known_freq\n\nprocessor\t: 1\ncpu MHz\t\t: 999.0\n"
		     "flags\t\t: fpu rdtscp nonstop_tsc\n\n");
	fclose(out);
	struct nc__machine m;
	nc__cpuinfo_path = path;
	nc__lock(); /* the machine read's buffer is the initialisation's */
	nc__machine_read(&m, 1);
	nc__unlock();
	assert_true(m.cpuinfo_mhz == 1234.5678);
	assert_int_equal(m.tsc_known_freq, 1);
	assert_int_equal(m.cpuinfo_rdtscp, 0);
	assert_string_equal(m.kv.cpuinfo_tsc_flags, "constant_tsc tsc_known_freq");
	/* the same through the reading after the start (its own buffer) */
	nc__cpuinfo_path = path;
	struct nc__machine_files f;
	char *buf = malloc(NC_CPUINFO_BUF);
	assert_non_null(buf);
	nc__machine_files_read(&f, buf, NC_CPUINFO_BUF);
	free(buf);
	nc__cpuinfo_path = "/proc/cpuinfo";
	unlink(path);
	assert_true(f.cpuinfo_mhz == 1234.5678);
	assert_int_equal(f.cpuinfo_rdtscp, 0);
	assert_string_equal(f.flags, "constant_tsc tsc_known_freq");

	/* "cpu MHz" as a decimal number only: leading zeros are fine, an
	 * exponent or trailing text is not a rate */
	static const struct {
		const char *text;
		double mhz;
	} mhz[] = {{"0002596.146", 2596.146}, {"  7", 7}, {"12.", 12}, {"1e3", 0},
		   {"2596.146 MHz", 0}, {"abc", 0}, {"1234567890123456", 0}};
	for (size_t i = 0; i < sizeof(mhz) / sizeof(mhz[0]); i++) {
		char p2[] = "/tmp/nc-cpuinfo-XXXXXX";
		int fd2 = mkstemp(p2);
		assert_true(fd2 >= 0);
		FILE *o2 = fdopen(fd2, "w");
		assert_non_null(o2);
		fprintf(o2, "processor\t: 0\ncpu MHz\t\t: %s\nflags\t\t: fpu\n\n", mhz[i].text);
		fclose(o2);
		nc__cpuinfo_path = p2;
		nc__lock();
		nc__machine_read(&m, 1);
		nc__unlock();
		nc__cpuinfo_path = "/proc/cpuinfo";
		unlink(p2);
		if (m.cpuinfo_mhz != mhz[i].mhz)
			print_error("'%s': %.17g, want %.17g\n", mhz[i].text, m.cpuinfo_mhz, mhz[i].mhz);
		assert_true(m.cpuinfo_mhz == mhz[i].mhz);
	}
}

/* The kernel formats /proc/cpuinfo a CPU's block at a time as reads reach
 * it: the library stops once it has the lines it wants ("cpu MHz" and
 * "flags"), before the end of the first block, so that no read reaches
 * into the second one.  Shown with a FIFO the test holds open for writing:
 * what the library did not read is still in it afterwards (the whole first
 * block used to be read, to its blank line). */
static void test_cpuinfo_stops_at_wanted_lines(void **state)
{
	(void)state;
	char path[] = "/tmp/nc-cpuinfo-fifo-XXXXXX";
	int tmp = mkstemp(path);
	assert_true(tmp >= 0);
	close(tmp);
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	int w = open(path, O_RDWR | O_NONBLOCK); /* a writer, so the reader's open does not wait */
	assert_true(w >= 0);
	char block[8192];
	int n = snprintf(block, sizeof(block), "processor\t: 0\ncpu MHz\t\t: 2596.146\nflags\t\t: fpu");
	for (int i = 0; i < 150; i++) /* a flags line past the first KB, as real ones reach */
		n += snprintf(block + n, sizeof(block) - (size_t)n, " pad%03d", i);
	n += snprintf(block + n, sizeof(block) - (size_t)n, " tsc constant_tsc tsc_known_freq rdtscp\n");
	int wanted = n; /* the reader needs no byte after this */
	assert_true(wanted > 1024);
	for (int i = 0; i < 40; i++) /* the rest of the block: bugs, bogomips, ... (~1 KB) */
		n += snprintf(block + n, sizeof(block) - (size_t)n, "extra line %02d\t: x\n", i);
	n += snprintf(block + n, sizeof(block) - (size_t)n,
		      "\nprocessor\t: 1\ncpu MHz\t\t: 999.0\nflags\t\t: fpu\n\n");
	assert_int_equal(write(w, block, (size_t)n), n);
	struct nc__machine m;
	nc__cpuinfo_path = path;
	/* a read past the data would wait for ever (the test holds the FIFO
	 * open for writing): SIGALRM ends the test instead */
	alarm(10);
	nc__lock();
	nc__machine_read(&m, 1);
	nc__unlock();
	alarm(0);
	nc__cpuinfo_path = "/proc/cpuinfo";
	int left = -1;
	int io = ioctl(w, FIONREAD, &left);
	close(w);
	unlink(path);
	assert_int_equal(io, 0);
	assert_true(m.cpuinfo_mhz == 2596.146);
	assert_int_equal(m.tsc_known_freq, 1);
	assert_int_equal(m.cpuinfo_rdtscp, 1);
	/* read: the first KB, then 128 bytes at a time up to the wanted lines */
	int read_bytes = n - left;
	if (read_bytes > wanted + 128)
		print_error("read %d bytes of %d; the wanted lines end at %d\n", read_bytes, n, wanted);
	assert_true(read_bytes <= wanted + 128);
	assert_true(read_bytes >= wanted);
}

static const int no_target = 0, with_target = 1;

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rdtscp_needs_the_kernels_word),
		cmocka_unit_test(test_start_reads_no_kernel_file),
		cmocka_unit_test(test_kernel_stance_from_its_files),
		cmocka_unit_test_prestate(test_stated_sources_once, (void *)&no_target),
		cmocka_unit_test_prestate(test_stated_sources_once, (void *)&with_target),
		cmocka_unit_test(test_cpuinfo_first_block),
		cmocka_unit_test(test_cpuinfo_stops_at_wanted_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
