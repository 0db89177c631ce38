/* SPDX-License-Identifier: MIT */
/* Running code that may fault — an application counter's read, which
 * nothing can vouch for in advance — without taking the process down, and
 * without leaving a trace.  The built-in counters never come here: their
 * availability is asked of the system (see the files in src/counter/).
 *
 * For the duration of fn(), SIGILL, SIGSEGV, SIGBUS and SIGFPE get our
 * handler, and are unblocked in the probing thread (a synchronous fault
 * that is blocked is not held pending: the kernel resets its action to the
 * default and the process dies).  A thread-local pointer says whether the
 * faulting thread is the one probing: if it is, we jump back out
 * (siglongjmp).  Afterwards, for each of the four:
 *
 *   - the action is put back exactly.  glibc's sigaction() cannot do that
 *     alone: re-installing any action, SIG_DFL included, makes it add
 *     SA_RESTORER and its own restorer to the kernel's record, so a signal
 *     never installed through glibc would read back with different flags.
 *     The kernel's own record (struct sigaction of the kernel, whose layout
 *     differs per architecture) is saved as bytes by the raw rt_sigaction
 *     system call before anything changes, and written back the same way
 *     when glibc's restore left it different.  Bytes read from the kernel
 *     and handed back to it need no knowledge of the layout.  The restore
 *     goes through sigaction() first so that interceptors of sigaction
 *     (ThreadSanitizer, valgrind) keep their view in step with the kernel's.
 *   - the thread's signal mask is set back to the one saved before (on
 *     both paths: after a fault siglongjmp would restore it too).
 *   - the alternate signal stack is never touched; our handler runs on it
 *     (SA_ONSTACK) where the thread has one, as the application's would.
 *
 * Another thread of the application that faults during the probe gets its
 * signal forwarded to the action saved before the probe (forward()): a
 * handler is called with the application's sa_mask added; an unhandled or
 * ignored fault ends the process with the default action, as the kernel
 * would have; a signal sent by kill() to an ignoring process is dropped.
 * SA_RESETHAND and SA_NODEFER of the application's action are not
 * emulated for such a forwarded signal.
 *
 * The remaining race, stated: dispositions are process-wide, and nothing
 * can stop another thread's sigaction() during the probe.  The window is
 * one probe, once per process, inside nc_init(), only when the application
 * installed a counter of its own (nc_set_counter) — about 1000 reads of
 * that counter.  If another thread calls sigaction() on one of the four
 * signals within it:
 *   - its call returns our handler as the old action;
 *   - its new action is kept: we restore a signal only while our handler
 *     is still the installed one (checked just before each restore; a
 *     sigaction() landing between that check and the restore, a window of
 *     one system call, is overwritten by the saved action);
 *   - if it later re-installs the old action it was given, that is our
 *     handler, which forwards every fault to the action saved before the
 *     probe.
 * An application that cannot accept that calls nc_init() before starting
 * its threads, or installs no counter of its own. */
#include "counter.h"
#include "../base/lock.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

/* The raw call where its arguments are the generic four (sparc and alpha
 * take a restorer argument too: glibc's restore alone is used there). */
#if defined(__linux__) && defined(SYS_rt_sigaction) && !defined(__sparc__) && !defined(__alpha__)
#define HAVE_RAW 1
#endif

static const int sigs[] = {SIGILL, SIGSEGV, SIGBUS, SIGFPE};
#define NSIGS (int)(sizeof(sigs) / sizeof(sigs[0]))

/* The kernel's record of an action, as bytes (larger than any
 * architecture's layout: 20 bytes on i386, 24 on riscv64, 32 on x86-64,
 * arm64 and ppc64). */
struct kact {
	unsigned long w[8];
};

/* The probe's state: this file owns it, guarded by trap_lock (one probe
 * at a time); the handler also reads `saved` without it, in another thread
 * that faults during a probe (forward). */
static struct nc__mutex trap_lock = NC_MUTEX_INIT;
static struct {
	struct sigaction saved[NSIGS]; /* glibc's view, for forwarding and restore */
	struct kact saved_k[NSIGS];    /* the kernel's, for the exact restore */
	int have_k[NSIGS];
} probe NC_GUARDED_BY(trap_lock);
/* the probing thread's way out (its own: no lock) */
static __thread sigjmp_buf *trap_env __attribute__((tls_model("initial-exec")));

static int kget(int sig, struct kact *k)
{
	memset(k, 0, sizeof(*k));
#ifdef HAVE_RAW
	/* the kernel's sigset is _NSIG bits; glibc's sigset_t is larger */
	return (int)syscall(SYS_rt_sigaction, sig, NULL, k, (size_t)(_NSIG / 8));
#else
	(void)sig;
	return -1;
#endif
}

static int kset(int sig, const struct kact *k)
{
#ifdef HAVE_RAW
	return (int)syscall(SYS_rt_sigaction, sig, k, NULL, (size_t)(_NSIG / 8));
#else
	(void)sig, (void)k;
	return -1;
#endif
}

/* A fault in a thread that is not probing: what the application's action
 * would have done.  Only async-signal-safe calls.  Unchecked by design:
 * it reads the saved action without the lock, which the probing thread
 * holds (it wrote the actions before it installed this handler). */
static void forward(int i, int sig, siginfo_t *si, void *uc) NC_NO_TSA
{
	const struct sigaction *o = &probe.saved[i];
	int sent = si && si->si_code <= 0; /* kill(), raise(), sigqueue(): not a fault */
	if (o->sa_handler == SIG_IGN && sent)
		return;
	if (o->sa_handler == SIG_DFL || o->sa_handler == SIG_IGN) {
		/* the default action, as if we were not here: the process ends
		 * (an ignored synchronous fault too, as the kernel does it) */
		struct sigaction d;
		memset(&d, 0, sizeof(d));
		d.sa_handler = SIG_DFL;
		sigemptyset(&d.sa_mask);
		sigaction(sig, &d, NULL);
		sigset_t m;
		sigemptyset(&m);
		sigaddset(&m, sig);
		pthread_sigmask(SIG_UNBLOCK, &m, NULL);
		raise(sig);
		return; /* a fault re-executes its instruction: the default action either way */
	}
	sigset_t old;
	pthread_sigmask(SIG_BLOCK, &o->sa_mask, &old);
	if (o->sa_flags & SA_SIGINFO)
		o->sa_sigaction(sig, si, uc);
	else
		o->sa_handler(sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *env = trap_env;
	if (env)
		siglongjmp(*env, sig);
	for (int i = 0; i < NSIGS; i++)
		if (sigs[i] == sig) {
			forward(i, sig, si, uc);
			return;
		}
}

/* Puts signal i's action back, unless someone replaced ours meanwhile. */
static void restore(int i) NC_REQUIRES(trap_lock)
{
	struct sigaction cur;
	if (sigaction(sigs[i], NULL, &cur) != 0 || !(cur.sa_flags & SA_SIGINFO) ||
	    cur.sa_sigaction != on_fault)
		return; /* another thread installed its own action: it stands */
	sigaction(sigs[i], &probe.saved[i], NULL);
	struct kact now;
	if (probe.have_k[i] && kget(sigs[i], &now) == 0 &&
	    memcmp(&now, &probe.saved_k[i], sizeof(now)) != 0)
		kset(sigs[i], &probe.saved_k[i]);
}

int nc__trap_run(void (*fn)(void *), void *arg)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigset_t faults, mask;
	sigemptyset(&faults);
	for (int i = 0; i < NSIGS; i++)
		sigaddset(&faults, sigs[i]);

	nc__mutex_lock(&trap_lock);
	pthread_sigmask(SIG_UNBLOCK, &faults, &mask);
	int installed[NSIGS];
	for (int i = 0; i < NSIGS; i++) {
		probe.have_k[i] = kget(sigs[i], &probe.saved_k[i]) == 0;
		installed[i] = sigaction(sigs[i], &sa, &probe.saved[i]) == 0;
	}
	sigjmp_buf env;
	volatile int rc = 0;
	int s = sigsetjmp(env, 0); /* the mask is restored below, on both paths */
	if (s == 0) {
		trap_env = &env;
		fn(arg);
	} else {
		rc = s;
	}
	trap_env = NULL;
	for (int i = 0; i < NSIGS; i++)
		if (installed[i])
			restore(i);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	nc__mutex_unlock(&trap_lock);
	return rc;
}
