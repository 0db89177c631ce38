/* SPDX-License-Identifier: MIT */
/* The trace writer and reader on hostile paths, each case in a
 * forked child so a signal that would kill the host, or a hang, shows as a
 * failure of that case only:
 *   - a FIFO whose reader quits: the write error is reported, the process
 *     lives and no SIGPIPE is left pending (caller's thread and flusher);
 *   - a FIFO with no reader: nc_trace_open refuses at once (ENXIO);
 *   - a symbolic link at the path: not followed, its target untouched;
 *   - the flush thread blocks every signal (the application's handlers
 *     never run on it);
 *   - a trace cut short: every complete record read, where and why it
 *     stops said;
 *   - a huge file that is not a trace, and a trace followed by gigabytes of
 *     zeros: refused or read in bounded memory (an address-space limit of
 *     256 MiB in the child);
 *   - sequence gaps whose total would wrap: saturated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "trace_util.h"
#include "base/lock.h"
#include "base/log.h"
#include "child.h"
#include "skip.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NC_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define NC_SANITIZED 1
#endif
#endif

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

static char *fifo_path(void)
{
	char *p = tmp_path("fifo");
	unlink(p);
	CHECK(mkfifo(p, 0600) == 0);
	return p;
}

static int sigpipe_pending(void)
{
	sigset_t s;
	sigpending(&s);
	return sigismember(&s, SIGPIPE);
}

/* The reader of the FIFO goes away; the next flush (in this thread) fails
 * with NC_TRACE_EIO instead of killing the process. */
static void case_fifo_reader_quits(const char *arg)
{
	(void)arg;
	char *p = fifo_path();
	int rd = open(p, O_RDONLY | O_NONBLOCK);
	CHECK(rd >= 0);
	struct nc_trace *t = open_small(p, 4096, 4, NC_TRACE_DROP, 0);
	CHECK(t != NULL);
	close(rd);
	struct nc_trace_buf *b;
	CHECK(nc_trace_thread_start(t, "w", &b) == 0);
	for (int i = 0; i < 2000; i++)
		nc_trace_instant(b, 1, (uint64_t)i);
	/* errno says why, at every return of the error (it was left at
	 * whatever an earlier call had set: ENOENT) */
	errno = ENOENT;
	CHECK(nc_trace_flush(t) == NC_TRACE_EIO);
	CHECK(errno == EPIPE);
	CHECK(!sigpipe_pending());
	nc_trace_thread_end(b);
	errno = 0;
	CHECK(nc_trace_close(t) == NC_TRACE_EIO);
	CHECK(errno == EPIPE);
	CHECK(!sigpipe_pending());
	unlink(p);
	free(p);
}

/* The same with the library's flush thread doing the writing. */
static void case_fifo_reader_quits_flusher(const char *arg)
{
	(void)arg;
	char *p = fifo_path();
	int rd = open(p, O_RDONLY | O_NONBLOCK);
	CHECK(rd >= 0);
	struct nc_trace_config c;
	nc_trace_default_config(&c);
	c.block_bytes = 4096;
	c.blocks = 4;
	c.flush_ms = 1;
	struct nc_trace *t = NULL;
	CHECK(nc_trace_open(&t, p, &c) == 0);
	close(rd);
	struct nc_trace_buf *b;
	CHECK(nc_trace_thread_start(t, "w", &b) == 0);
	for (int i = 0; i < 2000; i++)
		nc_trace_instant(b, 1, (uint64_t)i);
	sleep_ms(100); /* the flush thread writes the full blocks */
	nc_trace_thread_end(b);
	errno = 0;
	CHECK(nc_trace_close(t) == NC_TRACE_EIO);
	CHECK(errno == EPIPE);
	CHECK(!sigpipe_pending());
	unlink(p);
	free(p);
}

/* No reader: refused at once, not blocked for ever (the alarm would kill
 * the child). */
static void case_fifo_no_reader(const char *arg)
{
	(void)arg;
	char *p = fifo_path();
	alarm(5);
	struct nc_trace *t = NULL;
	errno = 0;
	CHECK(nc_trace_open(&t, p, NULL) == NC_TRACE_EIO);
	CHECK(errno == ENXIO);
	CHECK(t == NULL);
	/* and the reader refuses a FIFO without blocking on it */
	struct nc_trace_reader *r;
	char why[256];
	CHECK(nc_trace_read_file(&r, p, why, sizeof(why)) == NC_TRACE_EIO);
	CHECK(strstr(why, "not a regular file") != NULL);
	alarm(0);
	unlink(p);
	free(p);
}

/* A link planted at the trace's path: the open fails, the target keeps
 * its bytes. */
static void case_symlink(const char *arg)
{
	(void)arg;
	char *target = tmp_path("target"), *link = tmp_path("link");
	FILE *f = fopen(target, "w");
	CHECK(f && fputs("precious", f) >= 0 && fclose(f) == 0);
	unlink(link);
	CHECK(symlink(target, link) == 0);
	struct nc_trace *t = NULL;
	errno = 0;
	CHECK(nc_trace_open(&t, link, NULL) == NC_TRACE_EIO);
	CHECK(errno == ELOOP);
	size_t n;
	unsigned char *b = slurp(target, &n);
	CHECK(b && n == 8 && memcmp(b, "precious", 8) == 0);
	free(b);
	/* the target itself is not a trace: left alone too (never_replaces) */
	CHECK(nc_trace_open(&t, target, NULL) == NC_TRACE_EIO && errno == EEXIST);
	b = slurp(target, &n);
	CHECK(b && n == 8 && memcmp(b, "precious", 8) == 0);
	free(b);
	unlink(link);
	unlink(target);
	free(link);
	free(target);
}

static volatile pid_t handler_tid;
static void on_usr1(int sig)
{
	(void)sig;
	handler_tid = (pid_t)syscall(SYS_gettid);
}

/* SIGUSR1 blocked in every application thread: before the fix the flush
 * thread was the one thread that accepted it and ran the handler. */
static void case_flusher_blocks_signals(const char *arg)
{
	(void)arg;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	nc_init(); /* the upkeep thread blocks all signals already */
	char *p = tmp_path("sig");
	struct nc_trace_config c;
	nc_trace_default_config(&c);
	c.flush_ms = 1;
	struct nc_trace *t = NULL;
	CHECK(nc_trace_open(&t, p, &c) == 0);
	/* the open leaves the caller's mask as it was */
	sigset_t now;
	CHECK(pthread_sigmask(SIG_SETMASK, NULL, &now) == 0);
	CHECK(!sigismember(&now, SIGUSR1) && !sigismember(&now, SIGTERM));
	/* blocked here only after the flush thread started (a new thread
	 * inherits its creator's mask) */
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	CHECK(pthread_sigmask(SIG_BLOCK, &usr1, NULL) == 0);
	kill(getpid(), SIGUSR1);
	sleep_ms(50);
	CHECK(handler_tid == 0);
	sigset_t pend;
	sigpending(&pend);
	CHECK(sigismember(&pend, SIGUSR1));
	CHECK(nc_trace_close(t) == 0);
	int sig = 0;
	CHECK(sigwait(&usr1, &sig) == 0 && sig == SIGUSR1);
	unlink(p);
	free(p);
}

/* A trace whose writer was killed: the records before the cut are read,
 * the reader says where and why it stopped. */
static unsigned char *small_trace(size_t *n, unsigned flags)
{
	char *p = tmp_path("cut");
	struct nc_trace *t = open_small(p, 512, 16, NC_TRACE_DROP, flags);
	CHECK(t != NULL);
	struct nc_trace_buf *a, *b;
	CHECK(nc_trace_thread_start(t, "alpha", &a) == 0 && nc_trace_thread_start(t, "beta", &b) == 0);
	for (int i = 0; i < 100; i++) {
		nc_trace_begin(i % 2 ? a : b, 1, (uint64_t)i);
		nc_trace_end(i % 2 ? a : b, 1, (uint64_t)i);
	}
	nc_trace_thread_end(a);
	nc_trace_thread_end(b);
	CHECK(nc_trace_close(t) == 0);
	unsigned char *d = slurp(p, n);
	CHECK(d != NULL);
	unlink(p);
	free(p);
	return d;
}

static void case_truncated(const char *arg)
{
	(void)arg;
	size_t n;
	unsigned char *d = small_trace(&n, 0);
	/* the last block record, cut in its middle */
	size_t last_blk = 0;
	for (size_t o = NC__TR_FILE_HDR; o < n; o += nc__get32(d + o + 4))
		if (nc__get32(d + o) == NC__TR_BLOCK)
			last_blk = o;
	CHECK(last_blk > 0);
	size_t cut = last_blk + 100;
	struct nc_trace_reader *r;
	char why[256] = "";
	int rc = nc_trace_read_mem(&r, d, cut, why, sizeof(why));
	if (rc != 0)
		fprintf(stderr, "case: refused: %s\n", why);
	CHECK(rc == 0);
	struct nc_trace_info in;
	nc_trace_read_info(r, &in);
	CHECK(!in.closed && in.events > 0 && in.events < 200);
	uint64_t used = 0;
	char stop[256] = "";
	CHECK(nc_trace_read_complete(r, &used, stop, sizeof(stop)) == 0);
	CHECK(used == last_blk);
	CHECK(strstr(stop, "cut short") && !strchr(stop, '\n'));
	/* a whole file is complete */
	nc_trace_read_close(r);
	CHECK(nc_trace_read_mem(&r, d, n, why, sizeof(why)) == 0);
	CHECK(nc_trace_read_complete(r, &used, stop, sizeof(stop)) == 1 && used == n);
	nc_trace_read_close(r);
	free(d);
}

/* 3 GiB: a sparse file; the child may map at most 256 MiB. */
#define HUGE_BYTES (UINT64_C(3) << 30)
static void limit_memory(const char *path)
{
#ifdef NC_SANITIZED
	/* the sanitizers reserve terabytes of address space; _exit: the leak
	 * checker would count the path as lost */
	unlink(path);
	CHILD_SKIP_BECAUSE("sanitizer", "the sanitizers reserve terabytes of address space: no "
					"memory limit can be set");
#else
	(void)path;
	struct rlimit rl = {256u << 20, 256u << 20};
	CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
#endif
}

static void case_huge_not_a_trace(const char *arg)
{
	(void)arg;
	char *p = tmp_path("huge");
	int fd = open(p, O_WRONLY);
	CHECK(fd >= 0 && write(fd, "GARBAGE!", 8) == 8 && ftruncate(fd, (off_t)HUGE_BYTES) == 0);
	close(fd);
	limit_memory(p);
	struct nc_trace_reader *r;
	char why[256];
	int rc = nc_trace_read_file(&r, p, why, sizeof(why));
	if (rc != NC_TRACE_EFORMAT)
		fprintf(stderr, "case: %d: %s\n", rc, why);
	CHECK(rc == NC_TRACE_EFORMAT && strstr(why, "not a nanoclock trace"));
	unlink(p);
	free(p);
}

/* A valid trace followed by gigabytes of zeros (a crash after the file
 * was extended): the trace is read, the zeros are where it stops. */
static void case_huge_zero_tail(const char *arg)
{
	(void)arg;
	size_t n;
	unsigned char *d = small_trace(&n, 0);
	char *p = tmp_path("tail");
	int fd = open(p, O_WRONLY);
	CHECK(fd >= 0 && write(fd, d, n) == (ssize_t)n && ftruncate(fd, (off_t)HUGE_BYTES) == 0);
	close(fd);
	free(d);
	limit_memory(p);
	struct nc_trace_reader *r;
	char why[256];
	int rc = nc_trace_read_file(&r, p, why, sizeof(why));
	if (rc != 0)
		fprintf(stderr, "case: %d: %s\n", rc, why);
	CHECK(rc == 0);
	struct nc_trace_info in;
	nc_trace_read_info(r, &in);
	CHECK(in.closed && in.events == 200);
	uint64_t used;
	char stop[256];
	CHECK(nc_trace_read_complete(r, &used, stop, sizeof(stop)) == 0 && used == n);
	CHECK(strstr(stop, "zero"));
	struct nc_trace_merge *m;
	CHECK(nc_trace_merge_open(&m, &r, 1) == 0);
	struct nc_trace_rec e;
	uint64_t k = 0;
	while (nc_trace_merge_next(m, &e))
		k++;
	CHECK(k == 200);
	nc_trace_merge_close(m);
	nc_trace_read_close(r);
	unlink(p);
	free(p);
}

/* Two threads whose last blocks claim nearly 2^64 events missing each: the
 * total saturates at 2^64 - 1 instead of wrapping to 0. */
static void case_gap_totals_saturate(const char *arg)
{
	(void)arg;
	size_t n;
	unsigned char *d = small_trace(&n, 0);
	size_t last[2] = {0, 0};
	for (size_t o = NC__TR_FILE_HDR; o < n; o += nc__get32(d + o + 4))
		if (nc__get32(d + o) == NC__TR_BLOCK)
			last[nc__get32(d + o + 8) & 1] = o;
	CHECK(last[0] && last[1]);
	for (int i = 0; i < 2; i++)
		nc__put64(d + last[i] + 24, UINT64_MAX - 4096);
	struct nc_trace_reader *r;
	char why[256];
	int rc = nc_trace_read_mem(&r, d, n, why, sizeof(why));
	if (rc)
		fprintf(stderr, "case: %s\n", why);
	CHECK(rc == 0);
	struct nc_trace_info in;
	nc_trace_read_info(r, &in);
	CHECK(in.missing == UINT64_MAX);
	nc_trace_read_close(r);
	free(d);
}

/* What nc_trace_open finds at its path: it writes only where nothing is,
 * into a FIFO with a reader or /dev/null, or over this user's empty file
 * (the mktemp pattern) or earlier trace (its mode kept).  Anything else is
 * left exactly as it was: a text file (EEXIST: it truncated it before),
 * another user's file, a symbolic link (ELOOP), a socket, a directory
 * (EISDIR), a device node (EEXIST; root wrote into one before), a FIFO
 * with no reader (ENXIO).  Run as this user, then, as root, as nobody in a
 * sticky directory. */
struct tsnap {
	struct stat st;
	int exists;
	char data[64];
	ssize_t n;
};

static void tsnap_of(const char *p, struct tsnap *s)
{
	memset(s, 0, sizeof(*s));
	s->exists = lstat(p, &s->st) == 0;
	s->n = -1;
	if (s->exists && S_ISREG(s->st.st_mode)) {
		int fd = open(p, O_RDONLY | O_NOFOLLOW);
		CHECK(fd >= 0);
		s->n = read(fd, s->data, sizeof(s->data));
		close(fd);
	}
}

static int tsame(const char *p, const struct tsnap *a)
{
	struct tsnap b;
	tsnap_of(p, &b);
	return a->exists == b.exists && a->st.st_ino == b.st.st_ino && a->st.st_mode == b.st.st_mode &&
	       a->st.st_uid == b.st.st_uid && a->st.st_size == b.st.st_size &&
	       a->st.st_rdev == b.st.st_rdev && a->n == b.n &&
	       (a->n <= 0 || memcmp(a->data, b.data, (size_t)a->n) == 0);
}

/* kind k made at p: 0 when it cannot be made here */
static int trace_kind(int k, const char *d, const char *p, int *sock)
{
	char target[300];
	snprintf(target, sizeof(target), "%s/target", d);
	FILE *f;
	switch (k) {
	case 0: /* a text file */
	case 1: /* another user's (root: nobody's; nobody: root's) */
		f = fopen(p, "w");
		CHECK(f && fputs("precious data\n", f) >= 0 && fclose(f) == 0);
		if (k == 1)
			return geteuid() == 0 ? chown(p, 65534, 65534) == 0 : getuid() == 65534;
		return 1;
	case 2: /* a symbolic link to a text file */
		f = fopen(target, "w");
		CHECK(f && fputs("precious target\n", f) >= 0 && fclose(f) == 0);
		return symlink(target, p) == 0;
	case 3: /* a socket */ {
		struct sockaddr_un a;
		memset(&a, 0, sizeof(a));
		a.sun_family = AF_UNIX;
		size_t l = strlen(p);
		if (l >= sizeof(a.sun_path))
			return 0;
		memcpy(a.sun_path, p, l + 1);
		*sock = socket(AF_UNIX, SOCK_STREAM, 0);
		return *sock >= 0 && bind(*sock, (struct sockaddr *)&a, sizeof(a)) == 0;
	}
	case 4: /* a directory */
		return mkdir(p, 0755) == 0;
	case 5: /* a device node: /dev/zero's numbers */
		return geteuid() == 0 && mknod(p, S_IFCHR | 0666, makedev(1, 5)) == 0;
	case 6: /* a FIFO with no reader */
		return mkfifo(p, 0644) == 0;
	case 7: /* another name of an empty file of this user's (a hard link) */
		f = fopen(target, "w");
		CHECK(f && fclose(f) == 0);
		return link(target, p) == 0;
	case 8: /* another user's FIFO, with a reader (root: nobody's; nobody: root's) */
		if (mkfifo(p, 0644) != 0)
			return 0;
		/* (as nobody: root's FIFO cannot be made here) */
		if (geteuid() != 0 || chown(p, 65534, 65534) != 0)
			return 0;
		return (*sock = open(p, O_RDONLY | O_NONBLOCK)) >= 0; /* the reader */
	}
	return 0;
}

static const char *const trace_kinds[] = {"a text file", "another user's file", "a symbolic link",
					  "a socket", "a directory", "a device node",
					  "a FIFO with no reader", "a hard link to an empty file",
					  "another user's FIFO with a reader"};

/* nobody_of_root: the run as nobody that root's case makes, where the
 * kinds only root can make are root's run's (no skip) */
static void never_replaces_in(const char *d, int nobody_of_root)
{
	char p[300], target[300];
	snprintf(p, sizeof(p), "%s/notes.txt", d);
	snprintf(target, sizeof(target), "%s/target", d);
	int made = 0;
	for (int k = 0; k < 9; k++) {
		int sock = -1;
		if (!trace_kind(k, d, p, &sock)) {
			if (nobody_of_root)
				fprintf(stderr, "case: %s: not made as nobody (root's run has it)\n",
					trace_kinds[k]);
			else
				nc_skip_note(geteuid() ? "root" : "machine", "never replaces: %s at the "
					     "trace's path cannot be made here (uid %u)", trace_kinds[k],
					     (unsigned)geteuid());
			unlink(p);
			continue;
		}
		made++;
		struct tsnap before, tbefore;
		tsnap_of(p, &before);
		tsnap_of(target, &tbefore);
		struct nc_trace *t = NULL;
		errno = 0;
		int rc = nc_trace_open(&t, p, NULL);
		int e = errno;
		if (rc == 0)
			nc_trace_close(t);
		if (rc != NC_TRACE_EIO || !tsame(p, &before) || !tsame(target, &tbefore)) {
			fprintf(stderr, "case: %s at the trace's path: rc %d (%s); left as it was: %d\n",
				trace_kinds[k], rc, strerror(e), tsame(p, &before) && tsame(target, &tbefore));
			_exit(1);
		}
		fprintf(stderr, "case: %s: refused (%s), left alone\n", trace_kinds[k], strerror(e));
		if (rmdir(p) != 0)
			unlink(p);
		unlink(target);
		if (sock >= 0)
			close(sock);
	}
	CHECK(made >= 5);

	/* what it may write over: an empty file of this user's, an earlier
	 * trace (their modes kept), /dev/null */
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0);
	close(fd);
	struct nc_trace *t = NULL;
	CHECK(nc_trace_open(&t, p, NULL) == 0);
	CHECK(nc_trace_close(t) == 0);
	CHECK(nc_trace_open(&t, p, NULL) == 0);
	CHECK(nc_trace_close(t) == 0);
	struct stat st;
	CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600);
	size_t n;
	unsigned char *b = slurp(p, &n);
	CHECK(b && n > 8 && memcmp(b, NC__TR_MAGIC, 8) == 0);
	free(b);
	unlink(p);
	CHECK(nc_trace_open(&t, "/dev/null", NULL) == 0);
	CHECK(nc_trace_close(t) == 0);
	CHECK(lstat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
}

static void case_never_replaces(const char *arg)
{
	(void)arg;
	char *d = tmp_path("kinds");
	unlink(d);
	CHECK(mkdir(d, 0700) == 0);
	never_replaces_in(d, 0);
	if (geteuid() != 0) {
		nc_skip_note("root", "never replaces: an ordinary user in a sticky directory anyone "
			     "may write needs root to make (this user's own run is above)");
		rmdir(d);
		free(d);
		return;
	}
	/* an ordinary user, in a sticky directory anyone may write */
	CHECK(chmod(d, 01777) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
			_exit(3);
		never_replaces_in(d, 1);
		_exit(0);
	}
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	rmdir(d);
	free(d);
}

/* The application's log function runs with none of the library's locks
 * held, nc_trace_close's own included: one that flushes the very trace
 * being closed does not deadlock (a report queued just before the close is
 * delivered by the library calls the close makes; a deadlock ends the
 * child by SIGALRM). */
static struct nc_trace *log_trace;
static int log_calls;
static void flushing_log(void *ctx, int level, const char *msg)
{
	(void)ctx, (void)level, (void)msg;
	log_calls++;
	if (log_trace)
		(void)nc_trace_flush(log_trace);
}

static void case_log_during_close(const char *arg)
{
	(void)arg;
	char path[] = "/tmp/nc-trace-log-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	struct nc_trace_config c;
	nc_trace_default_config(&c);
	c.flush_ms = 0; /* no flusher thread: only the close delivers */
	CHECK(nc_trace_open(&log_trace, path, &c) == 0);
	CHECK(nc_set_log(flushing_log, NULL, NC_LOG_WARN) == 0);
	alarm(10);
	nc__lock(); /* reports are queued under the library's lock */
	nc__log(NC_LOG_WARN, "a report queued just before the close");
	nc__unlock();
	CHECK(nc_trace_close(log_trace) == 0);
	log_trace = NULL;
	alarm(0);
	unlink(path);
	CHECK(log_calls >= 1);
}

static const struct child_case cases[] = {
	{"log_during_close", case_log_during_close, NULL, NULL, NULL},
	{"fifo_reader_quits", case_fifo_reader_quits, NULL, NULL, NULL},
	{"fifo_reader_quits_flusher", case_fifo_reader_quits_flusher, NULL, NULL, NULL},
	{"fifo_no_reader", case_fifo_no_reader, NULL, NULL, NULL},
	{"symlink", case_symlink, NULL, NULL, NULL},
	{"never_replaces", case_never_replaces, NULL, NULL, NULL},
	{"flusher_blocks_signals", case_flusher_blocks_signals, NULL, NULL, NULL},
	{"truncated", case_truncated, NULL, NULL, NULL},
	{"huge_not_a_trace", case_huge_not_a_trace, NULL, NULL, NULL},
	{"huge_zero_tail", case_huge_zero_tail, NULL, NULL, NULL},
	{"gap_totals_saturate", case_gap_totals_saturate, NULL, NULL, NULL},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

int main(int argc, char **argv)
{
	return child_program("test_trace_hostile", argc, argv, NULL, 0, cases, NCASES, NULL, 0);
}
