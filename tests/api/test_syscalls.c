/* SPDX-License-Identifier: MIT */
/* What a read may do (man 3, "Reads never wait"): after the first call
 * the reads, conversions and trace appends call nothing but the counter
 * instruction, clock_gettime(2), adjtimex(2) and sysconf(3) (which makes
 * no system call for what the library asks), and never allocate.
 *
 * A child initialises, warms every read up, then installs a seccomp
 * filter that traps every system call but those (and exit), and runs
 * every read and conversion for 0.3 s with a 1 ms refresh period, so
 * that the reads themselves refresh the timelines hundreds of times.  A
 * trapped call is reported by number (its SIGSYS handler writes it to a
 * shared page and exits).  malloc and its kin are this program's own,
 * counting: no call may come from the reads.  A case with a ClockBound
 * segment as the UTC source shows what its refresh adds, once per period
 * in the reader that refreshes: the segment opened by its path, an fstat
 * of it, a pread64 of it and its close. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "nanoclock.h"
#include "nanoclock_trace.h"
#include "child.h"
#include "skip.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NC_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define NC_SANITIZED 1
#endif
#endif

#ifdef NC_SANITIZED
/* the sanitizers' runtimes own malloc and make system calls of their own
 * (shadow memory, their threads' bookkeeping): the plain build is the test */
static volatile long allocs;
#else
/* ---- an allocator that counts (a bump arena: free does nothing) ---- */
static unsigned char arena[64 << 20] __attribute__((aligned(64)));
static size_t used;
static volatile long allocs;

/* (not named malloc inside calloc: the compiler would make malloc +
 * memset a call of calloc, itself) */
static void *bump(size_t n)
{
	size_t a = (n + 63) & ~(size_t)63;
	size_t at = __atomic_fetch_add(&used, a + 64, __ATOMIC_RELAXED);
	if (at + a + 64 > sizeof(arena))
		return NULL;
	memcpy(arena + at, &n, sizeof(n)); /* the size, for realloc */
	return arena + at + 64;
}
void *malloc(size_t n)
{
	allocs++;
	return bump(n);
}
void free(void *p) { (void)p; }
void *calloc(size_t k, size_t n)
{
	if (n && k > SIZE_MAX / n)
		return NULL;
	allocs++;
	return bump(k * n); /* the arena is zero and never reused */
}
void *realloc(void *p, size_t n)
{
	void *q = malloc(n);
	if (p && q) {
		size_t old;
		memcpy(&old, (unsigned char *)p - 64, sizeof(old));
		memcpy(q, p, old < n ? old : n);
	}
	return q;
}
int posix_memalign(void **out, size_t al, size_t n)
{
	if (al > 64)
		return EINVAL;
	*out = malloc(n);
	return *out ? 0 : ENOMEM;
}
void *aligned_alloc(size_t al, size_t n)
{
	return al <= 64 ? malloc(n) : NULL;
}
#endif

/* ---- the filter ---- */
struct report {
	int trapped, nr;
	long allocs;
	int done;
};
static struct report *rep;

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	rep->trapped = 1;
	rep->nr = si->si_syscall;
	syscall(SYS_exit_group, 3); /* allowed */
}

#define ALLOW(n) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/* filter f (n instructions) for this thread and its children, a trapped
 * call reported by on_sigsys */
static void load_filter(struct sock_filter *f, size_t n)
{
	struct sock_fprog prog = {(unsigned short)n, f};
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	CHECK(sigaction(SIGSYS, &sa, NULL) == 0);
	CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
}

static void install(int extra)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		ALLOW(SYS_clock_gettime),
#ifdef SYS_clock_gettime64
		ALLOW(SYS_clock_gettime64),
#endif
#ifdef SYS_gettimeofday
		ALLOW(SYS_gettimeofday),
#endif
		ALLOW(SYS_adjtimex),
		ALLOW(SYS_clock_adjtime),
#ifdef SYS_clock_adjtime64
		ALLOW(SYS_clock_adjtime64),
#endif
		ALLOW(SYS_getpid), /* the lock's owner, the upkeep thread's process */
		ALLOW(SYS_exit_group),
		ALLOW(SYS_exit),
		ALLOW(SYS_rt_sigreturn),
		ALLOW(extra >= 0 ? extra : SYS_exit),
		/* with a file source: opened by path at each refresh, closed after */
#ifdef SYS_open
		ALLOW(extra >= 0 ? SYS_open : SYS_exit),
#endif
		ALLOW(extra >= 0 ? SYS_openat : SYS_exit),
		ALLOW(extra >= 0 ? SYS_close : SYS_exit),
	/* with a source's descriptor: fstat, to see it is the file it should
	 * be (whichever call the libc makes of it) */
#ifdef SYS_fstat
		ALLOW(extra >= 0 ? SYS_fstat : SYS_exit),
#endif
#ifdef SYS_newfstatat
		ALLOW(extra >= 0 ? SYS_newfstatat : SYS_exit),
#endif
#ifdef SYS_fstat64
		ALLOW(extra >= 0 ? SYS_fstat64 : SYS_exit),
#endif
#ifdef SYS_fstatat64
		ALLOW(extra >= 0 ? SYS_fstatat64 : SYS_exit),
#endif
#ifdef SYS_statx
		ALLOW(extra >= 0 ? SYS_statx : SYS_exit),
#endif
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
	};
	load_filter(f, sizeof(f) / sizeof(f[0]));
}

/* every read and conversion, once */
static uint64_t all_reads(struct nc_trace_buf *b, const nc_conv_t *c)
{
	uint64_t s = nc_ticks() + nc_ticks_begin() + nc_ticks_end() + nc_now_ns();
	s += (uint64_t)nc_unix_ns();
	uint64_t t = nc_ticks();
	s += nc_ticks_to_ns(t) + nc_ns_to_ticks(12345) + (uint64_t)nc_ticks_to_unix_ns(t);
	s += nc_conv_ticks_to_ns(c, t) + nc_conv_ns_to_ticks(c, 1000);
	struct nc_utc u;
	s += (uint64_t)nc_utc_now(&u);
	if (b)
		nc_trace_instant(b, 1, s);
	return s;
}

/* the filtered run, in a process of its own */
static void filtered_run(int extra, int want)
{
	setenv("NANOCLOCK_UNIX_REFRESH_MS", "1", 1);
	CHECK(nc_init() == 0);
	struct nc_trace *tr = NULL;
	struct nc_trace_buf *b = NULL;
	char path[64];
	snprintf(path, sizeof(path), "/tmp/nc-sys-trace-%d", (int)getpid());
	unlink(path);
	CHECK(nc_trace_open(&tr, path, NULL) == 0);
	unlink(path); /* (the session keeps its descriptor) */
	CHECK(nc_trace_thread_start(tr, "reader", &b) == 0);
	nc_conv_t c;
	nc_get_conv(&c);
	(void)all_reads(b, &c); /* the first calls */
	struct nc_utc u;
	CHECK(nc_utc_now(&u) == want);
	long a0 = allocs;
	install(extra);
	uint64_t s = 0, n = 0;
	for (uint64_t end = nc_now_ns() + 300000000; nc_now_ns() < end; n++)
		s += all_reads(n % 64 == 0 ? b : NULL, &c);
	rep->allocs = allocs - a0;
	rep->done = (int)(n > 1000);
	(void)s;
	syscall(SYS_exit_group, 0);
}

static void reads_case(const char *arg)
{
	const char *emu = getenv("NC_TEST_RUN");
	if (emu && emu[0])
		CHILD_SKIP_BECAUSE("emulator", "qemu-user's own system calls pass the filter too");
	if (getenv("NC_TEST_VALGRIND"))
		CHILD_SKIP_BECAUSE("valgrind", "valgrind's own system calls pass the filter too");
#ifdef NC_SANITIZED
	CHILD_SKIP_BECAUSE("sanitizer", "a sanitizer's runtime owns malloc and makes system calls "
					"of its own");
#endif
	rep = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(rep != MAP_FAILED);
	int extra = -1, want = NC_UTC_UNKNOWN;
	char seg[64] = "";
	if (strcmp(arg, "clockbound") == 0) {
		/* a ClockBound segment (its PROTOCOL.md, version 2): 1 ms */
		snprintf(seg, sizeof(seg), "/tmp/nc-sys-cb-%d", (int)getpid());
		unlink(seg);
		unsigned char p[80] = {0};
		uint32_t magic[2] = {0x414d5a4eu, 0x43420200u}, size = 80, drift = 15000;
		uint16_t ver = 2, gen = 2;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
		int64_t t[4] = {now.tv_sec, now.tv_nsec, now.tv_sec + 3600, now.tv_nsec}, bound = 1000000;
		int32_t st = 1;
		memcpy(p, magic, 8);
		memcpy(p + 8, &size, 4);
		memcpy(p + 12, &ver, 2);
		memcpy(p + 14, &gen, 2);
		memcpy(p + 16, t, 32);
		memcpy(p + 48, &bound, 8);
		memcpy(p + 64, &drift, 4);
		memcpy(p + 68, &st, 4);
		int fd = open(seg, O_WRONLY | O_CREAT | O_EXCL, 0644);
		CHECK(fd >= 0 && write(fd, p, sizeof(p)) == (ssize_t)sizeof(p) && close(fd) == 0);
		char v[96];
		snprintf(v, sizeof(v), "clockbound:%s", seg);
		setenv("NANOCLOCK_UTC_SOURCE", v, 1);
		extra = SYS_pread64;
		want = NC_UTC_SYNCHRONISED;
	} else {
		setenv("NANOCLOCK_UTC_SOURCE", "off", 1);
	}
	/* no shared record: its rewrite (the upkeep thread's, when this
	 * process measures the rate four times as certain as the record over a
	 * second: seen once in make check as geteuid) is a write, not a read */
	setenv("NANOCLOCK_SHARED", "off", 1);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		filtered_run(extra, want);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (seg[0])
		unlink(seg);
	if (rep->trapped)
		fprintf(stderr, "case: a read made system call %d, not one the manual lists\n", rep->nr);
	CHECK(!rep->trapped);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "case: the filtered run ended with status 0x%x\n", st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	fprintf(stderr, "case: %s: 0.3 s of every read, conversion and trace append, refreshing "
			"every 1 ms: no other system call, %ld allocations\n",
		arg, rep->allocs);
	CHECK(rep->done && rep->allocs == 0);
}

/* A start that no other thread contends makes no futex call: the
 * library's one-time initialisation and its log's environment are
 * guarded by its own lock, not pthread_once, whose wake after the init
 * routine is a system call whether anyone waits or not (two of a shared
 * start's 16 calls; each a first call of its kind in a cold process).
 * Every other call is allowed; a futex one ends the child. */
/* x86 with CPUID's invariant-TSC bit: the TSC policy needs no file */
static int invariant_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	return __get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u &&
	       __get_cpuid(0x80000007u, &a, &b, &c, &d) && ((d >> 8) & 1);
#else
	return 0;
#endif
}

/* A record for the adopting start, written by a process of its own (with
 * a loose goal: on a busy machine a 1 ppm start may rightly write none). */
static void write_record(const char *path)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		setenv("NANOCLOCK_SHARED", path, 1);
		nc_init();
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
}

/* A start makes no futex call when nothing contends it: calibrating
 * ("off"), or adopting a record ("adopt").  "no-open": a calibrating
 * start on x86 with an invariant TSC opens no file at all (the kernel's
 * files are read after the start). */
static void start_case(const char *arg)
{
	const char *emu = getenv("NC_TEST_RUN");
	if (emu && emu[0])
		CHILD_SKIP_BECAUSE("emulator", "qemu-user's own system calls pass the filter too");
	if (getenv("NC_TEST_VALGRIND"))
		CHILD_SKIP_BECAUSE("valgrind", "valgrind's own system calls pass the filter too");
#ifdef NC_SANITIZED
	CHILD_SKIP_BECAUSE("sanitizer", "a sanitizer's runtime makes system calls of its own");
#endif
	int no_open = strcmp(arg, "no-open") == 0, adopt = strcmp(arg, "adopt") == 0;
	if (no_open && !invariant_tsc())
		CHILD_SKIP_BECAUSE("machine", "no invariant-TSC bit: the TSC policy reads the kernel's flags");
	rep = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(rep != MAP_FAILED);
	char dir[] = "/tmp/nc-syscalls-XXXXXX", record[64];
	if (adopt) {
		CHECK(mkdtemp(dir) != NULL);
		snprintf(record, sizeof(record), "%s/record", dir);
		/* the goal both keep: met at the writer's start, which writes */
		setenv("NANOCLOCK_CALIB_PPM", "50", 1);
		setenv("NANOCLOCK_CALIB_MAX_MS", "200", 1);
		write_record(record);
		setenv("NANOCLOCK_SHARED", record, 1);
	} else {
		setenv("NANOCLOCK_SHARED", "off", 1);
	}
	setenv("NANOCLOCK_LOG", "stderr:debug", 1); /* the log's environment read too */
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_futex, 3, 0),
#ifdef SYS_open
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, no_open ? SYS_open : SYS_futex, 2, 0),
#else
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_futex, 2, 0),
#endif
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, no_open ? SYS_openat : SYS_futex, 1, 0),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		};
		load_filter(f, sizeof(f) / sizeof(f[0]));
		CHECK(nc_init() == 0);
		(void)nc_now_ns();
		/* a record refused would have been a calibrating start */
		if (adopt && strcmp(nc_ticks_per_second_source(), "shared") != 0)
			syscall(SYS_exit_group, 3);
		syscall(SYS_exit_group, 0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (adopt) {
		unlink(record);
		rmdir(dir);
	}
	if (rep->trapped)
		fprintf(stderr, "case: an uncontended start made system call %d\n", rep->nr);
	CHECK(!rep->trapped);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
		fprintf(stderr, "case: the start did not adopt the record\n");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	fprintf(stderr, "case: a start (%s) made no %s call\n", arg,
		no_open ? "futex or open" : "futex");
}

static const struct child_case cases[] = {
	{"reads_only_listed_calls", reads_case, "plain", NULL, NULL},
	{"reads_with_clockbound_source", reads_case, "clockbound", NULL, NULL},
	{"start_no_futex", start_case, "off", NULL, NULL},
	{"start_no_futex_adopting", start_case, "adopt", NULL, NULL},
	{"start_opens_no_file", start_case, "no-open", NULL, NULL},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

int main(int argc, char **argv)
{
	return child_program("test_syscalls", argc, argv, NULL, 0, cases, NCASES, NULL, 0);
}
