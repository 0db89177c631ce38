/* SPDX-License-Identifier: MIT */
/* The tool's JSON output (json.h). */
#include "json.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* The length of the well-formed UTF-8 sequence at p (RFC 3629: no
 * overlong forms, no surrogates, at most U+10FFFF), or 0. */
int utf8_len(const unsigned char *p)
{
	int n;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (int i = 1; i < n; i++) /* a NUL ends it too: not a continuation byte */
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
	    (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
		return 0;
	return n;
}

/* A JSON string; bytes that are not UTF-8 (a path can hold any) become
 * U+FFFD, as JSON text must be UTF-8. */
void json_str(const char *s)
{
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
		unsigned char ch = *p;
		int n;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else if (ch < 0x80)
			putchar(ch);
		else if ((n = utf8_len(p)) > 0) {
			fwrite(p, 1, (size_t)n, stdout);
			p += n - 1;
		}
		else
			fputs("\\ufffd", stdout);
	}
	putchar('"');
}

void jkey(struct jobj *o, const char *k)
{
	printf("%s%*s\"%s\": ", o->n++ ? ",\n" : "{\n", 2 * o->depth, "", k);
}

void jend(const struct jobj *o)
{
	printf("%s\n%*s}", o->n ? "" : "{", 2 * (o->depth - 1), "");
}

void jstr(struct jobj *o, const char *k, const char *v)
{
	jkey(o, k);
	json_str(v);
}

void jfmt(struct jobj *o, const char *k, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	jkey(o, k);
	vprintf(fmt, ap);
	va_end(ap);
}

const char *tri(int v) { return v == 1 ? "yes" : v == 0 ? "no" : "unknown"; }

const char *jtri(int v) { return v == 1 ? "true" : v == 0 ? "false" : "null"; }
