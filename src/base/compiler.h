/* SPDX-License-Identifier: MIT */
/* What every file of the library uses: visibility, branch hints, the
 * one place that tells whether ThreadSanitizer is watching, the lock
 * annotations, and a string copy. */
#ifndef NC_BASE_COMPILER_H
#define NC_BASE_COMPILER_H

#include "nanoclock.h"

#include <stddef.h>

#define NC_HIDDEN __attribute__((visibility("hidden")))
#define NC_LIKELY(x) __builtin_expect(!!(x), 1)
#define NC_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* Large buffers that a start does not touch (the machine's text when
 * there is no record, the log's report, the test counters): kept in a
 * section of their own, apart from the state a start writes, which then
 * shares fewer pages.  A cold process pays a page fault for each page it
 * first touches (more for one read before it is written); with these
 * buffers between that state's pieces, a cold start faulted in pages it
 * never used (`nanoclock bench init` counts the faults).  A section named
 * outside .bss keeps its zeros in the file, in the library and in a
 * program that links it statically.  The name is not a C identifier, so
 * no __start_/__stop_ symbols.  Not under AddressSanitizer, which puts no
 * redzones around a global in a section of its own (gcc and clang both):
 * there these buffers stay where it watches them. */
#ifndef __has_feature
#define NC_HAS_FEATURE(x) 0
#else
#define NC_HAS_FEATURE(x) __has_feature(x)
#endif
/* The code a start runs (nc_init's path, adopting a shared record or
 * calibrating), together in .text.startup, where the linkers put the
 * compiler's own run-once code: a cold process's first call then touches a
 * few adjacent pages of code instead of pages spread over the library, each
 * first touch a page fault and TLB misses (scripts/ab-start compares two
 * builds' starts).  scripts/check-start-layout names what a start runs
 * outside it. */
#if defined(__ELF__)
#define NC_START __attribute__((section(".text.startup")))
#else
#define NC_START
#endif
#if defined(__ELF__) && !defined(__SANITIZE_ADDRESS__) && !NC_HAS_FEATURE(address_sanitizer)
#define NC_COLD __attribute__((section("nanoclock.cold")))
#else
#define NC_COLD
#endif

/* ThreadSanitizer does not model fences: under it the latch's writer
 * stores with release and its readers load with acquire instead (the same
 * guarantee, in a form it checks).  gcc says so with __SANITIZE_THREAD__,
 * clang with __has_feature. */
#if defined(__SANITIZE_THREAD__)
#define NC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NC_TSAN 1
#endif
#endif
#ifdef NC_TSAN
#define NC_LD_ORDER __ATOMIC_ACQUIRE
#define NC_ST_ORDER __ATOMIC_RELEASE
#define NC_RFENCE() ((void)0)
#define NC_WFENCE() ((void)0)
#else
#define NC_LD_ORDER __ATOMIC_RELAXED
#define NC_ST_ORDER __ATOMIC_RELAXED
#define NC_RFENCE() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define NC_WFENCE() __atomic_thread_fence(__ATOMIC_RELEASE)
#endif
#define NC_LD(lv) __atomic_load_n(&(lv), NC_LD_ORDER)
#define NC_ST(lv, v) __atomic_store_n(&(lv), (v), NC_ST_ORDER)

/* Lock rules the compiler checks: clang's thread-safety analysis
 * (-Wthread-safety, which the Makefile turns on, as an error, where the
 * compiler has it).  A capability is a lock; state says which lock guards
 * it, functions say what they need held (REQUIRES), must not hold
 * (EXCLUDES: they take it), take (ACQUIRE, TRY_ACQUIRE: taken when the
 * result is the value given) or release.  Attributes only: no code, and
 * nothing at all under other compilers.  NC_NO_TSA marks the few
 * functions that read guarded state without its lock by design (latched
 * or atomic values, write-once state, the lock primitives themselves):
 * each says why where it is used. */
#if defined(__clang__) && defined(__has_attribute)
#if __has_attribute(capability) && __has_attribute(requires_capability)
#define NC_TSA(x) __attribute__((x))
#endif
#endif
#ifndef NC_TSA
#define NC_TSA(x)
#endif
#define NC_CAPABILITY(name) NC_TSA(capability(name))
#define NC_GUARDED_BY(l) NC_TSA(guarded_by(l))
#define NC_REQUIRES(...) NC_TSA(requires_capability(__VA_ARGS__))
#define NC_EXCLUDES(...) NC_TSA(locks_excluded(__VA_ARGS__))
#define NC_ACQUIRE(...) NC_TSA(acquire_capability(__VA_ARGS__))
#define NC_RELEASE(...) NC_TSA(release_capability(__VA_ARGS__))
#define NC_TRY_ACQUIRE(...) NC_TSA(try_acquire_capability(__VA_ARGS__))
#define NC_NO_TSA NC_TSA(no_thread_safety_analysis)

/* src into dst[n], cut short and always terminated, the rest zeroed:
 * snprintf(dst, n, "%s", src) without the formatter (a cold start makes
 * dozens of these copies), and async-signal-safe */
static inline void nc__copy(char *dst, size_t n, const char *src)
{
	if (n == 0) /* as snprintf(NULL, 0, ...): nothing to write */
		return;
	size_t l = __builtin_strlen(src);
	if (l >= n)
		l = n - 1;
	__builtin_memcpy(dst, src, l);
	__builtin_memset(dst + l, 0, n - l);
}

#endif
