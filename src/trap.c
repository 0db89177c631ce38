/* Running code that may fault — a counter read the kernel or the CPU
 * forbids — without taking the process down, and without leaving a trace.
 *
 * The four synchronous fault signals get our handler for the duration of
 * fn(); a thread-local pointer says whether the faulting thread is the one
 * probing.  If it is, we jump back out (siglongjmp restores the thread's
 * signal mask saved by sigsetjmp).  If another thread of the application
 * faults meanwhile, its signal goes to the application's own disposition.
 * Afterwards every saved action is put back exactly as it was.  One probe
 * runs at a time (a mutex), and the library only probes during its
 * one-time initialisation. */
#include "internal.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

static const int sigs[] = {SIGILL, SIGSEGV, SIGBUS, SIGFPE};
#define NSIGS (int)(sizeof(sigs) / sizeof(sigs[0]))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction saved[NSIGS];
static __thread sigjmp_buf *trap_env;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *env = trap_env;
	if (env)
		siglongjmp(*env, sig);
	for (int i = 0; i < NSIGS; i++) {
		if (sigs[i] != sig)
			continue;
		const struct sigaction *o = &saved[i];
		if (o->sa_flags & SA_SIGINFO) {
			o->sa_sigaction(sig, si, uc);
		} else if (o->sa_handler == SIG_IGN) {
			return;
		} else if (o->sa_handler == SIG_DFL) {
			sigaction(sig, o, NULL); /* the default action, as if we were not here */
			raise(sig);
		} else {
			o->sa_handler(sig);
		}
		return;
	}
}

int nc__trap_run(void (*fn)(void *), void *arg)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);

	pthread_mutex_lock(&mu);
	for (int i = 0; i < NSIGS; i++)
		sigaction(sigs[i], &sa, &saved[i]);
	sigjmp_buf env;
	volatile int rc = 0;
	int s = sigsetjmp(env, 1);
	if (s == 0) {
		trap_env = &env;
		fn(arg);
	} else {
		rc = s;
	}
	trap_env = NULL;
	for (int i = 0; i < NSIGS; i++)
		sigaction(sigs[i], &saved[i], NULL);
	pthread_mutex_unlock(&mu);
	return rc;
}
