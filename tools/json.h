/* SPDX-License-Identifier: MIT */
/* The tool's JSON output (--json of info, now and check), written to
 * stdout as it goes: an object is a depth and a count of its members. */
#ifndef NC_TOOL_JSON_H
#define NC_TOOL_JSON_H

struct jobj {
	int depth, n; /* n: members written */
};
/* the length of the well-formed UTF-8 sequence at p, or 0 */
int utf8_len(const unsigned char *p);
/* s as a JSON string, quoted and escaped (bytes that are not UTF-8 as \ufffd) */
void json_str(const char *s);
void jkey(struct jobj *o, const char *k);
void jend(const struct jobj *o);
void jstr(struct jobj *o, const char *k, const char *v);
void jfmt(struct jobj *o, const char *k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* 1, 0, anything else: "yes", "no", "unknown" (text); true, false, null (JSON) */
const char *tri(int v);
const char *jtri(int v);

#endif
