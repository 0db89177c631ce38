/* SPDX-License-Identifier: MIT */
/* What the exporters share: the merged event stream with an optional
 * progress line, names, and text escaping. */
#include "export.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <time.h>

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int nc_export_begin(struct nc_export *x, struct nc_trace_reader *const *r, const char *const *names,
		    unsigned n, int progress)
{
	memset(x, 0, sizeof(*x));
	x->r = r;
	x->names = names;
	x->n = n;
	x->by_unix = n > 1;
	x->progress = progress;
	for (unsigned i = 0; i < n; i++) {
		struct nc_trace_info in;
		nc_trace_read_info(r[i], &in);
		x->total += in.events;
	}
	x->last_print_ns = mono_ns();
	x->next_look = 65536;
	return nc_trace_merge_open(&x->m, r, n);
}

int nc_export_next(struct nc_export *x, struct nc_trace_rec *e)
{
	if (!nc_trace_merge_next(x->m, e))
		return 0;
	if (++x->done >= x->next_look && x->progress) {
		/* at most one line a second; looking at the clock every 64 Ki events */
		x->next_look = x->done + 65536;
		int64_t now = mono_ns();
		if (now - x->last_print_ns >= 1000000000) {
			x->last_print_ns = now;
			fprintf(stderr, "\rnanoclock trace export: %" PRIu64 " of %" PRIu64 " events (%.0f%%)",
				x->done, x->total, x->total ? 100.0 * (double)x->done / (double)x->total : 100.0);
			x->progress = 2; /* a line to clear at the end */
		}
	}
	return 1;
}

int nc_export_end(struct nc_export *x)
{
	int rc = x->m ? nc_trace_merge_error(x->m) : 0;
	nc_trace_merge_close(x->m);
	x->m = NULL;
	if (x->progress == 2)
		fprintf(stderr, "\r%60s\r", "");
	return rc;
}

const char *nc_export_ev_name(const struct nc_export *x, unsigned file, unsigned id, char *buf,
			      size_t len)
{
	const char *n = nc_trace_read_name(x->r[file], id);
	if (n && n[0])
		return n;
	snprintf(buf, len, "event %u", id);
	return buf;
}

void nc_export_clean(char *dst, size_t dlen, const char *src)
{
	size_t i = 0;
	for (; src && src[i] && i + 1 < dlen; i++) {
		unsigned char c = (unsigned char)src[i];
		dst[i] = c < 0x20 || c >= 0x7f ? '?' : (char)c;
	}
	if (dlen)
		dst[i < dlen ? i : dlen - 1] = 0;
}

void nc_export_jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f) /* bytes from the file: kept ASCII */
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void nc_export_jnum(FILE *f, const char *fmt, double v)
{
	if (isfinite(v))
		fprintf(f, fmt, v);
	else
		fputs("null", f);
}
