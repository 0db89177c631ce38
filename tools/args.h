/* SPDX-License-Identifier: MIT */
/* Strict parsing of the tool's option values: a whole decimal number in a
 * range, or a clear one-line reason.  Shared by the tool and the bench. */
#ifndef NC_TOOL_ARGS_H
#define NC_TOOL_ARGS_H

#include <stddef.h>

/* 0 and *out set, or -1 with why[] filled ("--runs: 'x' is not a whole number"). */
int nc_arg_long(const char *opt, const char *s, long lo, long hi, long *out, char *why,
		size_t whylen);
int nc_arg_ll(const char *opt, const char *s, long long lo, long long hi, long long *out,
	      char *why, size_t whylen);
int nc_arg_double(const char *opt, const char *s, double lo, double hi, double *out, char *why,
		  size_t whylen);
/* User text fit for a one-line message: at most 40 characters, control and
 * non-ASCII bytes shown as '?', "..." when cut.  Returns out. */
const char *nc_arg_quote(const char *s, char *out, size_t outlen);

#endif
