/* SPDX-License-Identifier: MIT */
/* Telling the application what the library decided, without printing:
 * nc_set_log() installs the application's function; by default nothing is
 * reported anywhere.  NANOCLOCK_LOG=stderr[:LEVEL] lets a user see the
 * reports of any program without recompiling — the one place the library
 * writes to a file descriptor, and only when asked.
 *
 * Capture and delivery are apart (log.h).  Capturing walks the format
 * once and copies each argument by its conversion (strings into the
 * report's own text); delivery walks it again and formats one conversion
 * at a time with snprintf.  So the reader that refreshed a clock inside a
 * signal handler only copied a few words, and the formatting and the
 * application's function run later, in a call that is not a read. */
#include "log.h"
#include "debug.h"
#include "lock.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QLEN 32
#define MSGLEN 224
#define NARG 8
#define TEXTLEN 192

enum { A_INT, A_UINT, A_LONG, A_ULONG, A_LLONG, A_ULLONG, A_SIZE, A_DOUBLE, A_STR, A_PTR };

struct report {
	int level;
	const char *fmt;   /* a string literal */
	int bad;           /* a conversion capture does not know: the format is shown as is */
	unsigned n;
	unsigned char type[NARG];
	union {
		long long i;
		unsigned long long u;
		double d;
		const void *p;
		unsigned off; /* A_STR: offset in text */
	} a[NARG];
	unsigned text_used;
	char text[TEXTLEN];
};

/* Where reports go, and the queue: guarded by nc__lib_lock (src/base/lock.c).
 * `level` and `pending` are also read without it (one atomic load each),
 * and `fn` by a report made while another thread holds it (busy_to_stderr). */
static struct {
	nc_log_fn fn;
	void *ctx;
	int level;                /* below every level (-1): off */
	struct report q[QLEN];    /* a ring */
	int head, n;
	unsigned dropped;
	int pending;
} reports NC_GUARDED_BY(nc__lib_lock) = {.level = -1};
/* NANOCLOCK_LOG read (under nc__lib_lock: a flag, not pthread_once, whose
 * wake after the routine is a system call even when nobody waits) */
static int env_read NC_GUARDED_BY(nc__lib_lock);

/* The debug checks' failures (debug.h), counted here where they are
 * reported: this file's own checks (NC_LOCK_HELD in the queue's functions)
 * count them too, without a call back into debug.c, which reports through
 * this file. */
long nc__debug_failures;

static void to_stderr(void *ctx, int level, const char *msg)
{
	(void)ctx;
	static const char *const names[] = {"error", "warning", "info", "debug"};
	char line[MSGLEN + 32];
	int n = snprintf(line, sizeof(line), "nanoclock: %s: %s\n",
			 level >= 0 && level <= 3 ? names[level] : "?", msg);
	if (n > 0) {
		ssize_t w = write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		(void)w; /* nowhere to report a failed report */
	}
}

/* NANOCLOCK_LOG's one rule: "stderr" logs at info, "stderr:LEVEL" at
 * LEVEL (error, warning, info, debug or 0-3); "stderr:" with anything else
 * (a level mistyped) at info, the first report a warning naming the value;
 * a value that names no destination this library knows logs nothing
 * (there is nowhere to say so).  secure_getenv: a setuid program does not
 * write where its caller's environment says.  Once, with nc__lib_lock held
 * (initialisation, nc_set_log). */
NC_START static void read_env(void) NC_REQUIRES(nc__lib_lock)
{
	const char *v = secure_getenv("NANOCLOCK_LOG");
	if (!v || reports.fn || (strcmp(v, "stderr") != 0 && strncmp(v, "stderr:", 7) != 0))
		return;
	int level = v[6] ? -1 : NC_LOG_INFO;
	static const char *const names[] = {"error", "warning", "info", "debug"};
	for (int i = 0; i < 4 && v[6]; i++)
		if (!strcmp(v + 7, names[i]) || (v[7] == '0' + i && !v[8]))
			level = i;
	reports.fn = to_stderr;
	reports.ctx = NULL;
	__atomic_store_n(&reports.level, level < 0 ? NC_LOG_INFO : level, __ATOMIC_RELEASE);
	if (level < 0)
		nc__log(NC_LOG_WARN, "NANOCLOCK_LOG=%.40s: not a level (error, warning, info, debug or "
			"0-3): info used", v);
}

NC_START void nc__log_config(void)
{
	NC_LOCK_HELD();
	/* the flag after the reading (a child forked while another thread
	 * read reads again); read_env calls nothing that comes back here */
	if (!env_read) {
		read_env();
		env_read = 1;
	}
}

int nc_set_log(nc_log_fn fn, void *ctx, int level)
{
	if (fn && (level < NC_LOG_ERROR || level > NC_LOG_DEBUG))
		return NC_EINVAL;
	nc__lock(); /* read_env writes L under it too (initialisation holds it) */
	nc__log_config();
	reports.fn = fn;
	reports.ctx = ctx;
	__atomic_store_n(&reports.level, fn ? level : -1, __ATOMIC_RELEASE);
	nc__unlock();
	return 0;
}

/* Unchecked by design: any context may ask, the lock held or not. */
NC_START int nc__log_wanted(int level) NC_NO_TSA
{
	return level <= __atomic_load_n(&reports.level, __ATOMIC_ACQUIRE);
}

/* ---- capture: one pass over the format, each argument copied by type ---- */
static const char *skip_flags_width(const char *p, struct report *r, va_list *ap)
{
	while (*p && strchr("-+ #0'", *p))
		p++;
	for (int part = 0; part < 2; part++) { /* width, then precision */
		if (part == 1) {
			if (*p != '.')
				break;
			p++;
		}
		if (*p == '*') {
			if (r->n < NARG) {
				r->type[r->n] = A_INT;
				r->a[r->n++].i = va_arg(*ap, int);
			} else {
				r->bad = 1;
			}
			p++;
		}
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return p;
}

/* Argument k, copied by type as its conversion conv and length modifier
 * len say (a string into the report's own text); r->bad where it cannot be. */
static void copy_arg(struct report *r, unsigned k, char conv, int len, va_list *ap)
{
	switch (conv) {
	case 'd': case 'i': case 'c':
		if (len == 1) {
			r->type[k] = A_LONG;
			r->a[k].i = va_arg(*ap, long);
		} else if (len == 2) {
			r->type[k] = A_LLONG;
			r->a[k].i = va_arg(*ap, long long);
		} else if (len == 3) {
			r->type[k] = A_SIZE;
			r->a[k].u = va_arg(*ap, size_t);
		} else {
			r->type[k] = A_INT;
			r->a[k].i = va_arg(*ap, int);
		}
		break;
	case 'u': case 'x': case 'X': case 'o':
		if (len == 1) {
			r->type[k] = A_ULONG;
			r->a[k].u = va_arg(*ap, unsigned long);
		} else if (len == 2) {
			r->type[k] = A_ULLONG;
			r->a[k].u = va_arg(*ap, unsigned long long);
		} else if (len == 3) {
			r->type[k] = A_SIZE;
			r->a[k].u = va_arg(*ap, size_t);
		} else {
			r->type[k] = A_UINT;
			r->a[k].u = va_arg(*ap, unsigned);
		}
		break;
	case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
		r->type[k] = A_DOUBLE;
		r->a[k].d = va_arg(*ap, double);
		break;
	case 's': {
		const char *s = va_arg(*ap, const char *);
		r->type[k] = A_STR;
		r->a[k].off = r->text_used;
		size_t room = TEXTLEN - r->text_used, l = s ? strlen(s) : 6;
		if (room == 0) {
			r->bad = 1;
			break;
		}
		if (l >= room)
			l = room - 1;
		memcpy(r->text + r->text_used, s ? s : "(null)", l);
		r->text[r->text_used + l] = 0;
		r->text_used += (unsigned)l + 1;
		break;
	}
	case 'p':
		r->type[k] = A_PTR;
		r->a[k].p = va_arg(*ap, void *);
		break;
	default:
		r->bad = 1;
	}
}

static void capture(struct report *r, int level, const char *fmt, va_list ap0)
{
	va_list ap;
	va_copy(ap, ap0);
	r->level = level;
	r->fmt = fmt;
	r->bad = 0;
	r->n = 0;
	r->text_used = 0;
	for (const char *p = fmt; *p && !r->bad; p++) {
		if (*p != '%')
			continue;
		if (*++p == '%')
			continue;
		p = skip_flags_width(p, r, &ap);
		int len = 0; /* 1 l, 2 ll, 3 z, -1 h or hh */
		if (*p == 'l') {
			len = p[1] == 'l' ? 2 : 1;
			p += len;
		} else if (*p == 'z') {
			len = 3;
			p++;
		} else if (*p == 'h') {
			len = -1;
			p += p[1] == 'h' ? 2 : 1;
		}
		if (r->n >= NARG) {
			r->bad = 1;
			break;
		}
		copy_arg(r, r->n++, *p, len, &ap);
	}
	va_end(ap);
}

/* ---- delivery: the format again, one conversion at a time ---- */
static void render(const struct report *r, char *out, size_t outlen)
{
	size_t o = 0;
	unsigned k = 0;
	if (r->bad) {
		nc__copy(out, outlen, r->fmt);
		return;
	}
	for (const char *p = r->fmt; *p && o + 1 < outlen;) {
		if (*p != '%') {
			out[o++] = *p++;
			continue;
		}
		if (p[1] == '%') {
			out[o++] = '%';
			p += 2;
			continue;
		}
		/* the conversion, with '*' replaced by the captured values */
		char spec[48];
		size_t s = 0;
		spec[s++] = *p++;
		while (*p && !strchr("diucxXofFeEgGaAsp", *p) && s + 12 < sizeof(spec)) {
			if (*p == '*' && k < r->n) {
				int v = (int)r->a[k++].i;
				if (v < 0 && s > 0 && spec[s - 1] == '.')
					s--; /* a negative precision is none */
				else
					s += (size_t)snprintf(spec + s, sizeof(spec) - s, "%d", v);
				p++;
			} else {
				spec[s++] = *p++;
			}
		}
		if (!*p || k >= r->n) {
			nc__copy(out, outlen, r->fmt);
			return;
		}
		spec[s++] = *p++;
		spec[s] = 0;
		char *d = out + o;
		size_t room = outlen - o;
		int w = 0;
		switch (r->type[k]) {
		case A_INT: w = snprintf(d, room, spec, (int)r->a[k].i); break;
		case A_UINT: w = snprintf(d, room, spec, (unsigned)r->a[k].u); break;
		case A_LONG: w = snprintf(d, room, spec, (long)r->a[k].i); break;
		case A_ULONG: w = snprintf(d, room, spec, (unsigned long)r->a[k].u); break;
		case A_LLONG: w = snprintf(d, room, spec, r->a[k].i); break;
		case A_ULLONG: w = snprintf(d, room, spec, r->a[k].u); break;
		case A_SIZE: w = snprintf(d, room, spec, (size_t)r->a[k].u); break;
		case A_DOUBLE: w = snprintf(d, room, spec, r->a[k].d); break;
		case A_STR: w = snprintf(d, room, spec, r->text + r->a[k].off); break;
		default: w = snprintf(d, room, spec, r->a[k].p); break;
		}
		k++;
		if (w < 0)
			break;
		o += (size_t)w < room ? (size_t)w : room - 1;
	}
	out[o < outlen ? o : outlen - 1] = 0;
}

void nc__log_format_test(char *out, size_t outlen, const char *fmt, ...)
{
	struct report r;
	va_list ap;
	va_start(ap, fmt);
	capture(&r, 0, fmt, ap);
	va_end(ap);
	render(&r, out, outlen);
}

static void enqueue(int level, const char *fmt, va_list ap) NC_REQUIRES(nc__lib_lock)
{
	if (reports.n == QLEN) {
		__atomic_fetch_add(&reports.dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	capture(&reports.q[(reports.head + reports.n) % QLEN], level, fmt, ap);
	reports.n++;
	__atomic_store_n(&reports.pending, 1, __ATOMIC_RELEASE);
}

NC_START void nc__log(int level, const char *fmt, ...)
{
	NC_LOCK_HELD();
	if (!nc__log_wanted(level))
		return;
	va_list ap;
	va_start(ap, fmt);
	enqueue(level, fmt, ap);
	va_end(ap);
}

/* The lock busy (another thread, or the code this signal handler
 * interrupted): is NANOCLOCK_LOG's stderr where reports go?  Unchecked by
 * design: `fn` read without the lock (set at initialisation or by
 * nc_set_log; a report that races nc_set_log goes to either side of it). */
static int busy_to_stderr(void) NC_NO_TSA { return reports.fn == to_stderr; }

void nc__log_any(int level, const char *fmt, ...)
{
	if (!nc__log_wanted(level))
		return;
	va_list ap;
	va_start(ap, fmt);
	if (nc__trylock()) {
		enqueue(level, fmt, ap);
		nc__unlock();
	} else if (busy_to_stderr()) {
		char msg[MSGLEN];
		vsnprintf(msg, sizeof(msg), fmt, ap);
		to_stderr(NULL, level, msg);
	} else {
		__atomic_fetch_add(&reports.dropped, 1, __ATOMIC_RELAXED); /* said at the next delivery */
	}
	va_end(ap);
}

#ifdef NC_DEBUG
void nc__lock_not_held(const char *func)
{
	__atomic_fetch_add(&nc__debug_failures, 1, __ATOMIC_RELAXED);
	nc__log_any(NC_LOG_ERROR, "debug check failed: %s called without nc__lib_lock", func);
}
#endif

/* Unchecked by design: a flag any call may test before taking the lock. */
int nc__log_pending(void) NC_NO_TSA { return __atomic_load_n(&reports.pending, __ATOMIC_ACQUIRE); }

/* nc__lib_lock held: the oldest report and where it goes, or 0. */
static int pop(struct report *out, nc_log_fn *fn, void **ctx) NC_REQUIRES(nc__lib_lock)
{
	NC_LOCK_HELD();
	unsigned dropped = __atomic_load_n(&reports.dropped, __ATOMIC_RELAXED);
	if (dropped && reports.n < QLEN) { /* say so, in order */
		static const char fmt[] = "%u reports dropped (more than %d at once)";
		struct report *r = &reports.q[(reports.head + reports.n) % QLEN];
		r->level = NC_LOG_WARN;
		r->fmt = fmt;
		r->bad = 0;
		r->n = 2;
		r->type[0] = A_UINT;
		r->a[0].u = __atomic_exchange_n(&reports.dropped, 0, __ATOMIC_RELAXED);
		r->type[1] = A_INT;
		r->a[1].i = QLEN;
		r->text_used = 0;
		reports.n++;
	}
	if (reports.n == 0) {
		__atomic_store_n(&reports.pending, 0, __ATOMIC_RELEASE);
		return 0;
	}
	*out = reports.q[reports.head];
	reports.head = (reports.head + 1) % QLEN;
	reports.n--;
	*fn = reports.fn;
	*ctx = reports.ctx;
	return 1;
}

NC_START void nc__log_deliver(void)
{
	while (nc__log_pending()) {
		struct report r;
		nc_log_fn fn = NULL;
		void *ctx = NULL;
		nc__lock();
		int have = pop(&r, &fn, &ctx);
		nc__unlock();
		if (!have)
			return;
		if (fn) {
			char msg[MSGLEN];
			render(&r, msg, sizeof(msg));
			fn(ctx, r.level, msg);
		}
	}
}
