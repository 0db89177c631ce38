/* Option values for the tool: empty, garbage, trailing text, signs where
 * none belong, NaN, infinities and out-of-range values are refused with a
 * reason; nothing is silently clamped or truncated. */
#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int nc_arg_long(const char *opt, const char *s, long lo, long hi, long *out, char *why,
		size_t whylen)
{
	if (!s || !*s) {
		snprintf(why, whylen, "%s: empty value", opt);
		return -1;
	}
	const char *p = s;
	if (*p == '+' || (*p == '-' && lo < 0))
		p++;
	for (const char *q = p; *q; q++)
		if (!isdigit((unsigned char)*q) || q - p > 18) {
			snprintf(why, whylen, "%s: '%.40s' is not a whole number in %ld..%ld", opt, s, lo,
				 hi);
			return -1;
		}
	if (!*p) {
		snprintf(why, whylen, "%s: '%.40s' is not a whole number", opt, s);
		return -1;
	}
	errno = 0;
	long v = strtol(s, NULL, 10);
	if (errno == ERANGE || v < lo || v > hi) {
		snprintf(why, whylen, "%s: %.40s is outside %ld..%ld", opt, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int nc_arg_double(const char *opt, const char *s, double lo, double hi, double *out, char *why,
		  size_t whylen)
{
	if (!s || !*s) {
		snprintf(why, whylen, "%s: empty value", opt);
		return -1;
	}
	const char *p = s;
	if (*p == '+' || (*p == '-' && lo < 0))
		p++;
	if (!(isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) ||
	    (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))) {
		snprintf(why, whylen, "%s: '%.40s' is not a decimal number", opt, s);
		return -1;
	}
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (*end || errno == ERANGE || !isfinite(v)) {
		snprintf(why, whylen, "%s: '%.40s' is not a finite decimal number", opt, s);
		return -1;
	}
	if (!(v >= lo && v <= hi)) {
		snprintf(why, whylen, "%s: %.40s is outside %g..%g", opt, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}
