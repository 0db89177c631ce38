/* SPDX-License-Identifier: MIT */
/* The commands main() dispatches to (cli.c), one file each: info.c,
 * now.c, check.c; bench, daemon and trace have their own headers.  Each
 * returns the tool's exit status. */
#ifndef NC_TOOL_COMMANDS_H
#define NC_TOOL_COMMANDS_H

#include "opts.h"

int cmd_info(const struct tool_info_opts *io);
int cmd_now(const struct tool_now_opts *o);
int cmd_check(const struct tool_check_opts *co);

#endif
