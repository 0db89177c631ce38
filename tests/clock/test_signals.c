/* SPDX-License-Identifier: MIT */
/* The application's signal state around the one place the library traps
 * faults: probing an application counter (nc_set_counter) that faults.
 * Afterwards every signal the probe touched must read back identical —
 * field by field through sigaction(), and byte for byte in the kernel's
 * own record (the raw rt_sigaction system call, which shows what glibc's
 * sigaction() hides: the SA_RESTORER flag and the restorer it adds when
 * it installs an action) — and so must the thread's signal mask.  Each
 * case runs in a child: initialisation happens once per process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"
#include "child.h"
#include "illegal.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The signals the trap handles (src/counter/trap.c), plus neighbours it must not touch. */
static const int fault_sigs[] = {SIGILL, SIGSEGV, SIGBUS, SIGFPE};
#define NFAULT 4
static const int watch[] = {SIGILL, SIGSEGV, SIGBUS, SIGFPE, SIGUSR1, SIGUSR2, SIGTRAP, SIGSYS};
#define NWATCH (int)(sizeof(watch) / sizeof(watch[0]))

/* The kernel's struct sigaction as bytes: its layout differs between
 * architectures, but equal bytes mean an equal action on any of them. */
struct kact {
	unsigned long w[8];
};
static int kget(int sig, struct kact *k)
{
	memset(k, 0, sizeof(*k));
	return (int)syscall(SYS_rt_sigaction, sig, NULL, k, (size_t)(_NSIG / 8));
}
static int kset(int sig, const struct kact *k)
{
	return (int)syscall(SYS_rt_sigaction, sig, k, NULL, (size_t)(_NSIG / 8));
}

struct snap {
	struct sigaction sa[NWATCH];
	struct kact k[NWATCH];
	sigset_t mask;
	stack_t alt;
};

static void take(struct snap *s)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < NWATCH; i++) {
		CHECK(sigaction(watch[i], NULL, &s->sa[i]) == 0);
		CHECK(kget(watch[i], &s->k[i]) == 0);
	}
	CHECK(pthread_sigmask(SIG_BLOCK, NULL, &s->mask) == 0);
	CHECK(sigaltstack(NULL, &s->alt) == 0);
}

/* Field by field, with the signal named on a mismatch. */
static void same(const struct snap *a, const struct snap *b)
{
	for (int i = 0; i < NWATCH; i++) {
		const struct sigaction *x = &a->sa[i], *y = &b->sa[i];
		int sig = watch[i];
		if (x->sa_handler != y->sa_handler || x->sa_flags != y->sa_flags) {
			fprintf(stderr, "case: signal %d: handler %s, flags %#x -> %#x\n", sig,
				x->sa_handler != y->sa_handler ? "changed" : "same", (unsigned)x->sa_flags,
				(unsigned)y->sa_flags);
			_exit(1);
		}
		for (int s = 1; s < _NSIG; s++)
			if (sigismember(&x->sa_mask, s) != sigismember(&y->sa_mask, s)) {
				fprintf(stderr, "case: signal %d: sa_mask differs at %d\n", sig, s);
				_exit(1);
			}
		if (memcmp(&a->k[i], &b->k[i], sizeof(a->k[i])) != 0) {
			fprintf(stderr, "case: signal %d: the kernel's record differs\n", sig);
			for (int w = 0; w < 4; w++)
				fprintf(stderr, "  word %d: %#lx -> %#lx\n", w, a->k[i].w[w], b->k[i].w[w]);
			_exit(1);
		}
	}
	for (int s = 1; s < _NSIG; s++)
		if (sigismember(&a->mask, s) != sigismember(&b->mask, s)) {
			fprintf(stderr, "case: the thread's signal mask differs at %d\n", s);
			_exit(1);
		}
	CHECK(a->alt.ss_sp == b->alt.ss_sp && a->alt.ss_flags == b->alt.ss_flags &&
	      a->alt.ss_size == b->alt.ss_size);
}

static volatile uintptr_t unmapped = 8; /* the zero page is never mapped */
static uint64_t segv(void *ctx)
{
	(void)ctx;
	return *(volatile uint64_t *)unmapped;
}

static volatile sig_atomic_t app_hits;
static void app_handler(int sig)
{
	(void)sig;
	app_hits++;
}
static void app_info_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	app_hits++;
}

/* The application's own state: a SIGILL handler (mask SIGUSR2, SA_RESTART),
 * a SA_SIGINFO handler for SIGFPE, SIGSEGV and SIGBUS left at whatever
 * the process started with (default: never installed through glibc, so
 * the kernel's record has no SA_RESTORER), SIGUSR1 blocked; with
 * `block_fault`, the faulting signal blocked too. */
static void app_setup(int block_fault)
{
	/* SIGSEGV and SIGBUS as a freshly exec'd process has them (cmocka,
	 * our parent, installed its own): the kernel's all-zero record */
	struct kact dfl;
	memset(&dfl, 0, sizeof(dfl));
	CHECK(kset(SIGSEGV, &dfl) == 0 && kset(SIGBUS, &dfl) == 0);
	struct sigaction mine;
	memset(&mine, 0, sizeof(mine));
	mine.sa_handler = app_handler;
	mine.sa_flags = SA_RESTART;
	sigemptyset(&mine.sa_mask);
	sigaddset(&mine.sa_mask, SIGUSR2);
	CHECK(sigaction(SIGILL, &mine, NULL) == 0);
	memset(&mine, 0, sizeof(mine));
	mine.sa_sigaction = app_info_handler;
	mine.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&mine.sa_mask);
	CHECK(sigaction(SIGFPE, &mine, NULL) == 0);
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	if (block_fault) {
		sigaddset(&m, SIGILL);
		sigaddset(&m, SIGSEGV);
	}
	CHECK(pthread_sigmask(SIG_BLOCK, &m, NULL) == 0);
}

static void probe_and_compare(uint64_t (*rd)(void *), const char *signame)
{
	struct snap before, after;
	take(&before);
	struct nc_counter_spec s = {"faulty", rd, NULL, 0, 64};
	CHECK(nc_set_counter(&s) == 0);
	CHECK(nc_init() == NC_ENOCOUNTER); /* the application's counter was refused ... */
	struct nc_info in;
	nc_get_info(&in);
	CHECK(strstr(in.counter_error, signame)); /* ... because it faulted */
	CHECK(strcmp(in.counter, "faulty") != 0);
	take(&after);
	same(&before, &after);
	/* and the application's handler still works */
	sigset_t un;
	sigemptyset(&un);
	sigaddset(&un, SIGILL);
	CHECK(pthread_sigmask(SIG_UNBLOCK, &un, NULL) == 0);
	int h = app_hits;
	raise(SIGILL);
	CHECK(app_hits == h + 1);
}

static void child_sigill(const char *arg)
{
	(void)arg;
	app_setup(0);
	probe_and_compare(illegal, "SIGILL");
}

static void child_sigsegv(const char *arg)
{
	(void)arg;
	app_setup(0);
	probe_and_compare(segv, "SIGSEGV");
}

/* A fault signal blocked in the probing thread: a synchronous fault that
 * is blocked kills the process (the kernel resets the action), so the
 * probe unblocks the four for its duration, and restores the mask. */
static void child_blocked(const char *arg)
{
	(void)arg;
	app_setup(1);
	probe_and_compare(illegal, "SIGILL");
}

/* Another thread's signal during the probe goes to the application's
 * action: the counter's first read has a second thread raise SIGFPE
 * (handled by the application) before it faults itself. */
static void *raiser(void *arg)
{
	(void)arg;
	raise(SIGFPE);
	return NULL;
}
static uint64_t raise_then_fault(void *ctx)
{
	(void)ctx;
	pthread_t th;
	if (pthread_create(&th, NULL, raiser, NULL) == 0)
		pthread_join(th, NULL);
	return illegal(NULL);
}
static void child_forward(const char *arg)
{
	(void)arg;
	app_setup(0);
	int h = app_hits;
	probe_and_compare(raise_then_fault, "SIGILL");
	CHECK(app_hits == h + 2); /* the forwarded SIGFPE, and the SIGILL raised afterwards */
}

/* An alternate signal stack is the application's: left alone. */
static void child_altstack(const char *arg)
{
	(void)arg;
	static char stack[1 << 16];
	stack_t ss = {.ss_sp = stack, .ss_size = sizeof(stack), .ss_flags = 0};
	CHECK(sigaltstack(&ss, NULL) == 0);
	app_setup(0);
	probe_and_compare(segv, "SIGSEGV");
}

/* The built-in counters never trap: with no application counter, not
 * even the kernel's record of a fault signal changes. */
static void child_builtin(const char *arg)
{
	(void)arg;
	struct snap before, after;
	take(&before);
	CHECK(nc_init() == 0);
	struct nc_info in;
	nc_get_info(&in);
	take(&after);
	same(&before, &after);
}

static const struct child_case cases[] = {
	{"sigill_exact", child_sigill, NULL, NULL, NULL},
	{"sigsegv_exact", child_sigsegv, NULL, NULL, NULL},
	{"fault_blocked", child_blocked, NULL, NULL, NULL},
	{"altstack", child_altstack, NULL, NULL, NULL},
	{"other_thread_forwarded", child_forward, NULL, NULL, NULL},
	{"builtin_untouched", child_builtin, NULL, NULL, NULL},
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

int main(int argc, char **argv)
{
	(void)fault_sigs;
	return child_program("test_signals", argc, argv, NULL, 0, cases, NCASES, NULL, 0);
}
