/* SPDX-License-Identifier: MIT */
/* A case that cannot run here says so, with its kind and reason, on a line
 * of its own that scripts/test-summary counts:
 *     SKIP[kind]: reason
 * Kinds: emulator (qemu-user: not the machine's kernel or counter),
 * valgrind (one thread at a time, its own scheduler), sanitizer (ASan's
 * and TSan's address space, their own allocator), root (needs a
 * privilege this user does not hold), machine (this machine lacks what the
 * case needs: a second CPU, a hardware counter, a tmpfs, ...), cross (what
 * only the native build can test, in a cross build: LTTng's daemons
 * tracing a program of another architecture).  `make check` prints every
 * skip and fails on one it cannot excuse: emulator, valgrind, sanitizer
 * and cross only in those runs, root and machine only outside CI
 * (NC_STRICT_SKIPS=1, where every case must run). */
#ifndef NC_TEST_SKIP_H
#define NC_TEST_SKIP_H

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((format(printf, 2, 3))) static inline void nc_skip_note(const char *kind,
								      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("SKIP[%s]: ", kind);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

/* in a cmocka test */
#define SKIP(kind, ...)                                                                    \
	do {                                                                               \
		nc_skip_note(kind, __VA_ARGS__);                                           \
		skip();                                                                    \
	} while (0)

/* in a case run in a child process (tests/child.h: exit status 77) */
#define CHILD_SKIP_BECAUSE(kind, ...)                                                      \
	do {                                                                               \
		nc_skip_note(kind, __VA_ARGS__);                                           \
		_exit(77);                                                                 \
	} while (0)

#endif
