/* SPDX-License-Identifier: MIT */
/* Option values for the tool: empty, garbage, trailing text, signs where
 * none belong, NaN, infinities and out-of-range values are refused with a
 * reason; nothing is silently clamped or truncated.  Reasons are one line:
 * the user's text is quoted through tool_arg_quote (a value with a newline
 * in it must not break the line). */
#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* User text in a one-line message: printable ASCII kept, anything else
 * (a newline, an escape sequence) shown as '?', cut at 40 characters with
 * "..." (the rule the library's own messages follow) */
const char *tool_arg_quote(const char *s, char *out, size_t outlen)
{
	size_t n = 0, i = 0;
	if (outlen == 0)
		return out;
	for (s = s ? s : ""; s[i] && i < 40 && n + 1 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];
		out[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	for (int k = 0; s[i] && k < 3 && n + 1 < outlen; k++)
		out[n++] = '.';
	out[n] = 0;
	return out;
}

/* What every number must be before its digits: not empty, and a sign
 * only where it can be meant ('+', or '-' where the range has negative
 * values).  Where the digits start, or NULL with why[] filled. */
static const char *digits_start(const char *opt, const char *s, int negative, char *why,
				size_t whylen)
{
	if (!s || !*s) {
		snprintf(why, whylen, "%s: empty value", opt);
		return NULL;
	}
	return *s == '+' || (*s == '-' && negative) ? s + 1 : s;
}

/* A whole number: digits only (tool_arg_digits) */
int tool_arg_ll(const char *opt, const char *s, long long lo, long long hi, long long *out,
	      char *why, size_t whylen)
{
	char q[48];
	const char *p = digits_start(opt, s, lo < 0, why, whylen);
	if (!p)
		return -1;
	if (!*p) {
		snprintf(why, whylen, "%s: '%s' is not a whole number", opt, tool_arg_quote(s, q, sizeof(q)));
		return -1;
	}
	long long v = tool_arg_digits(p);
	if (v < 0) {
		snprintf(why, whylen, "%s: '%s' is not a whole number in %lld..%lld", opt,
			 tool_arg_quote(s, q, sizeof(q)), lo, hi);
		return -1;
	}
	if (*s == '-')
		v = -v;
	if (v < lo || v > hi) {
		snprintf(why, whylen, "%s: %s is outside %lld..%lld", opt, tool_arg_quote(s, q, sizeof(q)),
			 lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int tool_arg_long(const char *opt, const char *s, long lo, long hi, long *out, char *why,
		size_t whylen)
{
	long long v;
	if (tool_arg_ll(opt, s, lo, hi, &v, why, whylen) != 0)
		return -1;
	*out = (long)v;
	return 0;
}

/* A decimal number strtod reads to its end, without hex, inf or nan */
int tool_arg_double(const char *opt, const char *s, double lo, double hi, double *out, char *why,
		  size_t whylen)
{
	char q[48];
	const char *p = digits_start(opt, s, lo < 0, why, whylen);
	if (!p)
		return -1;
	if (!(isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) ||
	    (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))) {
		snprintf(why, whylen, "%s: '%s' is not a decimal number", opt, tool_arg_quote(s, q, sizeof(q)));
		return -1;
	}
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (*end || errno == ERANGE || !isfinite(v)) {
		snprintf(why, whylen, "%s: '%s' is not a finite decimal number", opt,
			 tool_arg_quote(s, q, sizeof(q)));
		return -1;
	}
	if (!(v >= lo && v <= hi)) {
		snprintf(why, whylen, "%s: %s is outside %g..%g", opt, tool_arg_quote(s, q, sizeof(q)), lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}
