/* Strict parsing of the tool's option values: a whole decimal number in a
 * range, or a clear one-line reason.  Shared by the tool and the bench. */
#ifndef NC_TOOL_ARGS_H
#define NC_TOOL_ARGS_H

#include <stddef.h>

/* 0 and *out set, or -1 with why[] filled ("--runs: 'x' is not a whole number"). */
int nc_arg_long(const char *opt, const char *s, long lo, long hi, long *out, char *why,
		size_t whylen);
int nc_arg_double(const char *opt, const char *s, double lo, double hi, double *out, char *why,
		  size_t whylen);

#endif
