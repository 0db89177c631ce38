/* SPDX-License-Identifier: MIT */
/* The checks compiled in by `make MODE=debug` (NC_DEBUG): in that build
 * the fast path hands every read to the library (lines are published
 * with len 0), where each thread's values are checked for order, each new
 * epoch for continuity, each
 * conversion rate for the 1 ns bound on sampled intervals, and each entry
 * into a function that requires nc__lib_lock for the lock (NC_LOCK_HELD,
 * lock.h).  A failed check is reported through the log hook at
 * NC_LOG_ERROR and counted (nc__debug_failures, kept in log.c); nothing
 * stops. */
#include "debug.h"
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

void nc__debug_fail(const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	__atomic_fetch_add(&nc__debug_failures, 1, __ATOMIC_RELAXED);
	/* callers may or may not hold the lock: the lock-free queueing path */
	nc__log_any(NC_LOG_ERROR, "debug check failed: %s", msg);
}

/* |ticks_to_ns(d) - d * 1e9 * 2^24 / q| < 1 ns, exactly, on sampled d
 * (the proof is in conv.c; this keeps the code honest to it). */
void nc__debug_check_conv(const nc_conv_t *c)
{
#if defined(__SIZEOF_INT128__)
	__extension__ typedef unsigned __int128 u128;
	uint64_t x = c->hz_q24 | 1;
	for (int i = 0; i < 64; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t d = x >> (i % 64);
		uint64_t out = nc_conv_ticks_to_ns(c, d);
		/* compare out * q with d * 1e9 * 2^24: within q means within 1 ns */
		u128 lhs = (u128)out * c->hz_q24;
		u128 rhs = (u128)d * 1000000000u;
		if (rhs >> 103) /* d*1e9*2^24 would overflow: beyond the 64-bit result range */
			continue;
		rhs <<= 24;
		u128 diff = lhs > rhs ? lhs - rhs : rhs - lhs;
		if (diff >= c->hz_q24 && out < UINT64_MAX - 1)
			nc__debug_fail("conversion off by >= 1 ns at %llu ticks (rate %.6f Hz)",
				       (unsigned long long)d, (double)c->hz_q24 / 16777216.0);
	}
#else
	(void)c;
#endif
}
