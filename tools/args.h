/* SPDX-License-Identifier: MIT */
/* Strict parsing of the tool's option values: a whole decimal number in a
 * range, or a clear one-line reason.  Shared by the tool and the bench. */
#ifndef NC_TOOL_ARGS_H
#define NC_TOOL_ARGS_H

#include <limits.h>
#include <stddef.h>

/* Digits only (no sign, space or exponent): their value, LLONG_MAX past
 * 18 of them (beyond every range the tool takes), or -1.  The tool's one
 * reading of a whole number: tool_arg_ll's, and the N of /dev/fd/N (inline:
 * a test builds tools/out_file.c alone). */
static inline long long tool_arg_digits(const char *s)
{
	long long v = 0;
	if (!*s)
		return -1;
	for (const char *c = s; *c; c++) {
		if (*c < '0' || *c > '9')
			return -1;
		v = c - s < 18 ? v * 10 + (*c - '0') : LLONG_MAX;
	}
	return v;
}

/* 0 and *out set, or -1 with why[] filled ("--runs: 'x' is not a whole number"). */
int tool_arg_long(const char *opt, const char *s, long lo, long hi, long *out, char *why,
		size_t whylen);
int tool_arg_ll(const char *opt, const char *s, long long lo, long long hi, long long *out,
	      char *why, size_t whylen);
int tool_arg_double(const char *opt, const char *s, double lo, double hi, double *out, char *why,
		  size_t whylen);
/* User text fit for a one-line message: at most 40 characters, control and
 * non-ASCII bytes shown as '?', "..." when cut.  Returns out. */
const char *tool_arg_quote(const char *s, char *out, size_t outlen);

#endif
