/* SPDX-License-Identifier: MIT */
/* Futex locks (Drepper's "Futexes are tricky", mutex 2).  A pthread mutex
 * would do for the waiters, but readers try these locks from any context,
 * signal handlers included, and POSIX does not list pthread_mutex_trylock
 * or _unlock as async-signal-safe; a compare-and-swap and a futex wake
 * (a system call) are.
 *
 * The primitives below are what clang's analysis takes on trust (their
 * annotations in lock.h say what they do; their atomics say nothing to
 * it): NC_NO_TSA on each. */
#include "lock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

struct nc__futex_lock nc__lib_lock = NC_FUTEX_LOCK_INIT;

static void futex(uint32_t *w, int op, uint32_t v)
{
	syscall(SYS_futex, w, op | FUTEX_PRIVATE_FLAG, v, NULL, NULL, 0);
}

#ifdef NC_DEBUG
/* the calling thread: the address of its own thread-local byte, no
 * system call (a read that tries the lock may run under a seccomp filter
 * that allows only the calls the manual lists; test_syscalls).  A forked
 * child's thread has its forking thread's address, but not its pid,
 * which nc__lock_held checks first. */
static __thread char this_thread __attribute__((tls_model("initial-exec")));
static uintptr_t tid(void) { return (uintptr_t)&this_thread; }
#endif

/* Taken by a process that is not this one: this is a child forked while
 * another thread of its parent held the lock, and no atfork handler ran
 * (_Fork(), a raw clone).  That thread is not here to release it: the
 * first caller that finds it so takes it over (one compare-and-swap on the
 * owner decides who).  What the holder was updating may be half done. */
static int take_over(struct nc__futex_lock *l)
{
	int32_t o = __atomic_load_n(&l->owner, __ATOMIC_ACQUIRE), me = (int32_t)getpid();
	if (o == 0 || o == me)
		return 0;
	if (!__atomic_compare_exchange_n(&l->owner, &o, me, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return 0;
#ifdef NC_DEBUG
	__atomic_store_n(&l->thread, tid(), __ATOMIC_RELAXED);
#endif
	__atomic_store_n(&l->word, 1, __ATOMIC_RELAXED);
	return 1;
}

static void owned(struct nc__futex_lock *l)
{
	__atomic_store_n(&l->owner, (int32_t)getpid(), __ATOMIC_RELAXED);
#ifdef NC_DEBUG
	__atomic_store_n(&l->thread, tid(), __ATOMIC_RELAXED);
#endif
}

int nc__futex_trylock(struct nc__futex_lock *l) NC_NO_TSA
{
	uint32_t free_ = 0;
	if (__atomic_compare_exchange_n(&l->word, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		owned(l);
		return 1;
	}
	return take_over(l);
}

NC_START void nc__futex_lock(struct nc__futex_lock *l) NC_NO_TSA
{
	uint32_t c = 0;
	if (__atomic_compare_exchange_n(&l->word, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		owned(l);
		return;
	}
	if (take_over(l))
		return;
	/* contended: mark waiters and sleep until the word is free */
	if (c != 2)
		c = __atomic_exchange_n(&l->word, 2, __ATOMIC_ACQUIRE);
	while (c != 0) {
		futex(&l->word, FUTEX_WAIT, 2);
		c = __atomic_exchange_n(&l->word, 2, __ATOMIC_ACQUIRE);
	}
	owned(l);
}

NC_START void nc__futex_unlock(struct nc__futex_lock *l) NC_NO_TSA
{
	__atomic_store_n(&l->owner, 0, __ATOMIC_RELAXED);
#ifdef NC_DEBUG
	__atomic_store_n(&l->thread, 0, __ATOMIC_RELAXED);
#endif
	if (__atomic_exchange_n(&l->word, 0, __ATOMIC_RELEASE) == 2)
		futex(&l->word, FUTEX_WAKE, 1);
}

NC_START void nc__lock(void) { nc__futex_lock(&nc__lib_lock); }
NC_START void nc__unlock(void) { nc__futex_unlock(&nc__lib_lock); }
int nc__trylock(void) { return nc__futex_trylock(&nc__lib_lock); }
void nc__lock_reset_in_child(void) { nc__futex_reset(&nc__lib_lock); }

#ifdef NC_DEBUG
/* Taken, by this process (a child that inherited its parent's hold has not
 * taken it over yet: not held), by this thread. */
int nc__lock_held(void)
{
	return __atomic_load_n(&nc__lib_lock.word, __ATOMIC_RELAXED) != 0 &&
	       __atomic_load_n(&nc__lib_lock.owner, __ATOMIC_RELAXED) == (int32_t)getpid() &&
	       __atomic_load_n(&nc__lib_lock.thread, __ATOMIC_RELAXED) == tid();
}
#endif
