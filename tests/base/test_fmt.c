/* SPDX-License-Identifier: MIT */
/* The library's own formatter (src/base/fmt.c) against the C library's
 * snprintf: the same text and the same return for every conversion it
 * claims, cut short at every buffer size; %f digit for digit, ties (to
 * even) included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/fmt.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

/* both formatters on the same arguments, at full size and every cut */
#define SAME(...)                                                                     \
	do {                                                                          \
		char want[512], got[512];                                             \
		int rw = snprintf(want, sizeof(want), __VA_ARGS__);                   \
		int rg = nc__fmt(got, sizeof(got), __VA_ARGS__);                      \
		if (rw != rg || strcmp(want, got) != 0)                               \
			print_error("want %d '%s', got %d '%s'\n", rw, want, rg, got); \
		assert_int_equal(rw, rg);                                             \
		assert_string_equal(want, got);                                       \
		for (size_t cut = 0; cut <= (size_t)rw + 1 && cut < 64; cut++) {      \
			char g2[64];                                                  \
			memset(g2, 'X', sizeof(g2));                                  \
			assert_int_equal(nc__fmt(g2, cut, __VA_ARGS__), rw);          \
			if (cut > 0) {                                                \
				size_t l = cut - 1 < (size_t)rw ? cut - 1 : (size_t)rw;  \
				assert_memory_equal(g2, want, l);                     \
				assert_int_equal(g2[l], 0);                           \
			} else {                                                      \
				assert_int_equal(g2[0], 'X'); /* nothing written */  \
			}                                                             \
		}                                                                     \
	} while (0)

static void integers_and_strings(void **state)
{
	(void)state;
	SAME("plain text, no conversion");
	SAME("%d %i %u", 0, -1, 0u);
	SAME("%d %d", INT32_MAX, INT32_MIN);
	SAME("%ld %lu", (long)INT64_MIN, (unsigned long)UINT64_MAX);
	SAME("%lld %llu", (long long)INT64_MIN, (unsigned long long)UINT64_MAX);
	SAME("%zu %zd", (size_t)SIZE_MAX, (ptrdiff_t)-5);
	SAME("%08x %04o %x", 0xbeefu, 0755u, 0u);
	SAME("%+d %+d %+lld", 5, -5, 0LL);
	SAME("%5d|%05d|%*d|%3s", 42, -42, 6, 7, "a");
	SAME("%s|%.3s|%.0s|%.90s", "abc", "abcdef", "x", "short");
	SAME("%c%c 100%%", 'o', 'k');
	SAME("%s%s: %s", "", "/dev/shm/nanoclock-0", "adopted");
	SAME("%.7s %s", "0.3.0-dirty", "x86_64");
	/* '-' and a negative '*' width (left-justified), a negative '*'
	 * precision (none), integer precisions */
	SAME("%-5d|%*d|%*s|%-3c|%0*d|%-+6d|", 3, -5, 3, -5, "ab", 'x', -5, 42, 7);
	SAME("%.3d|%.0d|%.0u|%8.4x|%-8.3o|%+.2d", 5, 0, 0u, 0xabu, 8u, 3);
	SAME("%.*d|%.*s|%*.*f|%-*f|", -1, 12, -2, "abcdef", 10, 2, 3.14159, -12, 1.5);

	for (int i = 0; i < 20000; i++) {
		uint64_t v = next() >> (next() % 64);
		SAME("%llu %lld %x %u %d", (unsigned long long)v, (long long)v, (unsigned)v,
		     (unsigned)(v >> 3), (int)v);
	}
}

static void fixed_point(void **state)
{
	(void)state;
	static const double fixed[] = {0,	 -0.0,	  0.5,	   1.5,	   2.5,	     0.125,  -0.125,
				       0.0005,	 0.9995,  9.9996,  99.9995, 1e-9,    1e6,    2596.145563,
				       0.168,	 -76.6,	  1e17,	   -1e17,   123456789.987654321};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		for (int prec = 0; prec <= 9; prec++)
			SAME("%.*f|%+.*f|%f", prec, fixed[i], prec, fixed[i], fixed[i]);
	SAME("%f %f %+f %f", INFINITY, -INFINITY, INFINITY, NAN);
	SAME("%.3f ms, %+.2f ppm (tolerance %.0f)", 0.118, -0.005, 33.0);
	/* 1e18 and over, or more than 15 decimals: the libc formatter,
	 * exactly, however long (written straight into the buffer) */
	SAME("%.2f %.0f %f", 1e18, -3.5e40, DBL_MAX);
	SAME("%.17f|%+-30.20f|%012.1f", 0.1, 2.5, 1e19);
	{
		char want[600], got[600];
		int rw = snprintf(want, sizeof(want), "x%.100f", 1e300);
		int rg = nc__fmt(got, sizeof(got), "x%.100f", 1e300);
		assert_int_equal(rw, rg);
		assert_string_equal(want, got);
		assert_int_equal(nc__fmt(got, 10, "x%.100f", 1e300), rw);
		assert_memory_equal(got, want, 9);
		assert_int_equal(got[9], 0);
	}
	/* a lone '%' at the end: an error, as for snprintf */
	{
		char got[16];
		const char *volatile lone = "abc%s%"; /* not a literal: no warning */
		assert_int_equal(nc__fmt(got, sizeof(got), lone, ""), -1);
	}

	/* random values over the library's range, ties among them (values
	 * with few bits after the point): the C library's text exactly */
	for (int i = 0; i < 300000; i++) {
		int bits = (int)(next() % 4 == 0 ? 1 + next() % 11 : 53); /* 1..53: shifts below 64 */
		double v = ldexp((double)(next() >> (64 - bits)), -(int)(next() % (bits + 40))) *
			   ((next() & 1) ? -1 : 1);
		int prec = (int)(next() % 12);
		char want[128], got[128];
		int rw = snprintf(want, sizeof(want), "%+.*f", prec, v);
		int rg = nc__fmt(got, sizeof(got), "%+.*f", prec, v);
		if (rw != rg || strcmp(want, got) != 0)
			print_error("%.17g at %d: want %s, got %s\n", v, prec, want, got);
		assert_string_equal(want, got);
		assert_int_equal(rw, rg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(integers_and_strings),
		cmocka_unit_test(fixed_point),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
