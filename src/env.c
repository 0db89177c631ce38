/* Parsing of the environment overrides.  A bad value is never fatal: the
 * caller ignores it and records the reason for `nanoclock info`. */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Accepts a decimal number with an optional unit: "2100000000",
 * "2.1e9", "2.1G", "2100MHz", "24 MHz".  Hex floats, "inf", "nan", signs
 * other than a leading '+', and trailing text are refused. */
int nc__parse_hz(const char *s, double *hz, char *why, size_t whylen)
{
	if (!s || !*s) {
		snprintf(why, whylen, "empty value");
		return NC_EINVAL;
	}
	const char *p = s;
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '+')
		p++;
	if (!(isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1])))) {
		snprintf(why, whylen, "'%.40s' is not a positive decimal number", s);
		return NC_EINVAL;
	}
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		snprintf(why, whylen, "'%.40s': hexadecimal is not accepted", s);
		return NC_EINVAL;
	}
	char *end;
	errno = 0;
	double v = strtod(p, &end);
	if (end == p || errno == ERANGE || !isfinite(v)) {
		snprintf(why, whylen, "'%.40s' is not a finite number", s);
		return NC_EINVAL;
	}
	while (isspace((unsigned char)*end))
		end++;
	double unit = 1;
	switch (*end) {
	case 'k': case 'K': unit = 1e3; end++; break;
	case 'M': unit = 1e6; end++; break;
	case 'G': unit = 1e9; end++; break;
	default: break;
	}
	if ((end[0] == 'H' || end[0] == 'h') && (end[1] == 'z' || end[1] == 'Z'))
		end += 2;
	while (isspace((unsigned char)*end))
		end++;
	if (*end) {
		snprintf(why, whylen, "'%.40s': unexpected text '%.16s'", s, end);
		return NC_EINVAL;
	}
	v *= unit;
	if (!(v >= 1e3 && v <= 1e11)) {
		snprintf(why, whylen, "%.6g Hz is outside 1 kHz .. 100 GHz", v);
		return NC_ERANGE;
	}
	*hz = v;
	return 0;
}
