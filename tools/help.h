/* SPDX-License-Identifier: MIT */
/* The tool's help texts: `nanoclock --help` and `nanoclock COMMAND --help`
 * (tools/help.c).  nanoclock(1) lists the same options for each command:
 * tests/tool/test_help.sh compares them. */
#ifndef NC_TOOL_HELP_H
#define NC_TOOL_HELP_H

/* The help of a topic ("" the tool's usage, "check", "bench init", ...: the
 * help_topic of struct tool_tool_opts), or NULL for an unknown topic.  The
 * `trace` command's own help is tools/trace.c's. */
const char *tool_help_text(const char *topic);

#endif
