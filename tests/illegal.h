/* SPDX-License-Identifier: MIT */
/* A counter read that runs an illegal instruction (the architecture's
 * own, so the kernel raises SIGILL as it would for a counter instruction
 * the CPU lacks): what the tests register to see that the library's probe
 * survives it, restores the signal's handler and never raises it again. */
#ifndef NC_TEST_ILLEGAL_H
#define NC_TEST_ILLEGAL_H

#include <signal.h>
#include <stdint.h>

static uint64_t illegal(void *ctx)
{
	(void)ctx;
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("ud2");
#elif defined(__aarch64__)
	__asm__ __volatile__(".inst 0x00000000");
#elif defined(__powerpc64__)
	__asm__ __volatile__(".long 0");
#elif defined(__riscv)
	__asm__ __volatile__("unimp");
#else
	raise(SIGILL);
#endif
	return 1;
}

#endif
