/* SPDX-License-Identifier: MIT */
/* Shared by the libFuzzer harnesses: invariants every reason must keep. */
#ifndef NC_FUZZ_UTIL_H
#define NC_FUZZ_UTIL_H

#include <stdlib.h>
#include <string.h>

/* A reason shown to a user: NUL-terminated inside its buffer, non-empty
 * when required, and one printable line (no control byte: a newline in the
 * user's value must not break `nanoclock info` or the tool's error line). */
static inline void fuzz_check_line(const char *s, size_t cap, int need)
{
	size_t n = strnlen(s, cap);
	if (n == cap)
		abort(); /* not terminated */
	if (need && n == 0)
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f)
			abort();
}

/* A copy of data as a C string (the fuzzer's bytes may hold NULs: the
 * string ends at the first, as an environment value or argument would). */
static inline char *fuzz_str(const unsigned char *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = 0;
	return s;
}

#endif
