/* SPDX-License-Identifier: MIT */
/* Cases that move the machine's clock (clock_settime, adjtimex writes) run
 * only in `make check-destructive` (scripts/check-destructive), never in
 * `make check`: the clock is every process's on the machine.  A test
 * program keeps such cases in a table of their own and runs them only when
 * called with --destructive and NANOCLOCK_TEST_DESTRUCTIVE=1 in its
 * environment; the script saves the kernel's clock state first and puts
 * it back after. */
#ifndef NC_TEST_DESTRUCTIVE_H
#define NC_TEST_DESTRUCTIVE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1: argv asks for the destructive cases and the environment allows them;
 * 0: the ordinary cases; -1: asked without the variable (said on stderr:
 * the caller exits non-zero having touched nothing) */
static inline int destructive_mode(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--destructive") != 0)
		return 0;
	const char *v = getenv("NANOCLOCK_TEST_DESTRUCTIVE");
	if (v && strcmp(v, "1") == 0)
		return 1;
	fprintf(stderr, "%s --destructive: refused: these cases set and slew the machine's clock; "
		"run them through `make check-destructive` with NANOCLOCK_TEST_DESTRUCTIVE=1\n",
		argv[0]);
	return -1;
}

#endif
