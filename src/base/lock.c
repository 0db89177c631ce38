/* SPDX-License-Identifier: MIT */
/* nc__lib_lock: a futex lock (Drepper's "Futexes are tricky", mutex 2).
 * The word is 0 free, 1 taken, 2 taken with waiters.  A pthread mutex would
 * do for the waiters, but readers try the lock from any context, signal
 * handlers included, and POSIX does not list pthread_mutex_trylock or
 * _unlock as async-signal-safe; a compare-and-swap and a futex wake are. */
#include "lock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

static uint32_t nc__lib_lock;

static void futex(uint32_t *w, int op, uint32_t v)
{
	syscall(SYS_futex, w, op | FUTEX_PRIVATE_FLAG, v, NULL, NULL, 0);
}

int nc__trylock(void)
{
	uint32_t free_ = 0;
	return __atomic_compare_exchange_n(&nc__lib_lock, &free_, 1, 0, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

void nc__lock(void)
{
	uint32_t c = 0;
	if (__atomic_compare_exchange_n(&nc__lib_lock, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	/* contended: mark waiters and sleep until the word is free */
	if (c != 2)
		c = __atomic_exchange_n(&nc__lib_lock, 2, __ATOMIC_ACQUIRE);
	while (c != 0) {
		futex(&nc__lib_lock, FUTEX_WAIT, 2);
		c = __atomic_exchange_n(&nc__lib_lock, 2, __ATOMIC_ACQUIRE);
	}
}

void nc__unlock(void)
{
	if (__atomic_exchange_n(&nc__lib_lock, 0, __ATOMIC_RELEASE) == 2)
		futex(&nc__lib_lock, FUTEX_WAKE, 1);
}

void nc__lock_reset_in_child(void) { __atomic_store_n(&nc__lib_lock, 0, __ATOMIC_RELAXED); }
