/* SPDX-License-Identifier: MIT */
/* A small snprintf: see fmt.h for why and what it formats.
 *
 * %f: the integer part and the fraction are formatted apart.  floor() and
 * the subtraction are exact for a double, so the fraction is exact; it is
 * scaled by 10^precision with the product's rounding error kept (fma), so
 * rounding to nearest (a tie to even) is decided on the exact value and the
 * text is the C library's, digit for digit; a carry goes into the integer
 * part.  An integer part of 10^18 or more or a precision over 15 (never
 * one of this library's) is handed to the libc formatter. */
#include "fmt.h"
#include "debug.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct sink {
	char *buf;
	size_t n, len;
};

static void put(struct sink *s, char c)
{
	if (s->len + 1 < s->n)
		s->buf[s->len] = c;
	s->len++;
}

static void puts_n(struct sink *s, const char *p, size_t max)
{
	for (size_t i = 0; i < max && p[i]; i++)
		put(s, p[i]);
}

/* digits of v in base b, most significant first, into d (at least 24
 * bytes); returns how many */
static int digits(char *d, unsigned long long v, unsigned b)
{
	char t[24];
	int k = 0;
	do {
		t[k++] = "0123456789abcdef"[v % b];
		v /= b;
	} while (v);
	for (int i = 0; i < k; i++)
		d[i] = t[k - 1 - i];
	return k;
}

/* how a conversion is laid out: flags, width, precision */
struct spec {
	int plus, zero, left, width, prec;
};

static void pad(struct sink *s, char c, int n)
{
	for (int i = 0; i < n; i++)
		put(s, c);
}

/* sign, then zeros or spaces to the width (spaces after with '-'), then
 * the body; zeros first to make `lead` digits (an integer's precision) */
NC_START
static void emit(struct sink *s, char sign, const char *body, int blen, int lead,
		 const struct spec *f)
{
	int zeros = lead > blen ? lead - blen : 0;
	int total = blen + zeros + (sign != 0);
	int fill = f->width > total ? f->width - total : 0;
	int zero_fill = f->zero && !f->left && f->prec < 0;
	if (!f->left && !zero_fill)
		pad(s, ' ', fill);
	if (sign)
		put(s, sign);
	if (zero_fill)
		pad(s, '0', fill);
	pad(s, '0', zeros);
	for (int i = 0; i < blen; i++)
		put(s, body[i]);
	if (f->left)
		pad(s, ' ', fill);
}

static void fixed(struct sink *s, double v, const struct spec *f)
{
	int prec = f->prec < 0 ? 6 : f->prec;
	char sign = signbit(v) ? '-' : f->plus ? '+' : 0;
	double a = fabs(v);
	if (isnan(v) || isinf(v)) {
		struct spec g = *f;
		g.zero = 0; /* never zeros before nan or inf */
		emit(s, sign, isnan(v) ? "nan" : "inf", 3, 0, &g);
		return;
	}
	double ip = floor(a);
	if (ip >= 1e18 || prec > 15) {
		/* the libc formatter, straight into what is left of the buffer
		 * (not async-signal-safe, and its decimal point is the locale's:
		 * never a figure of this library's) */
		char spec[12] = "%", *q = spec + 1;
		if (f->plus)
			*q++ = '+';
		if (f->zero)
			*q++ = '0';
		if (f->left)
			*q++ = '-';
		memcpy(q, "*.*f", 5);
		size_t room = s->len < s->n ? s->n - s->len : 0;
		int l = snprintf(room ? s->buf + s->len : NULL, room, spec, f->width, prec, v);
		if (l > 0)
			s->len += (size_t)l;
		return;
	}
	unsigned long long scale = 1;
	for (int i = 0; i < prec; i++)
		scale *= 10;
	unsigned long long in = (unsigned long long)ip;
	/* frac * scale = x + err exactly (fma gives the product's rounding
	 * error), so the rounding below is decided on the exact value: to
	 * nearest, a tie to even, as the C library does */
	double frac = a - ip, x = frac * (double)scale;
	double err = fma(frac, (double)scale, -x);
	double t = floor(x), rem = x - t;
	unsigned long long fr = (unsigned long long)t;
	unsigned long long last = prec > 0 ? fr : in; /* the digit a tie makes even */
	if (rem > 0.5 || (rem == 0.5 && (err > 0 || (err == 0 && (last & 1)))))
		fr++;
	if (fr >= scale) {
		fr -= scale;
		in++;
	}
	char body[48];
	int l = digits(body, in, 10);
	if (prec > 0) {
		body[l++] = '.';
		char fd[24];
		int fl = digits(fd, fr, 10);
		for (int i = fl; i < prec; i++)
			body[l++] = '0';
		for (int i = 0; i < fl; i++)
			body[l++] = fd[i];
	}
	struct spec g = *f;
	g.prec = -1; /* a float's precision is its decimals, not leading zeros */
	emit(s, sign, body, l, 0, &g);
}

/* The flags, width, precision and length modifier of the conversion at p
 * (just past its '%'); returns where its letter is.  lng: 1 l, 2 ll, 3 z. */
static const char *parse_spec(const char *p, struct spec *f, int *lng, va_list *ap)
{
	for (;; p++) {
		if (*p == '+')
			f->plus = 1;
		else if (*p == '0')
			f->zero = 1;
		else if (*p == '-')
			f->left = 1;
		else
			break;
	}
	if (*p == '*') {
		f->width = va_arg(*ap, int);
		if (f->width < 0) { /* as C says: a '-' flag */
			f->left = 1;
			f->width = f->width == INT_MIN ? INT_MAX : -f->width;
		}
		p++;
	}
	while (*p >= '0' && *p <= '9')
		f->width = f->width * 10 + (*p++ - '0');
	if (*p == '.') {
		f->prec = 0;
		if (*++p == '*') {
			f->prec = va_arg(*ap, int);
			if (f->prec < 0) /* as if none were given */
				f->prec = -1;
			p++;
		}
		for (; *p >= '0' && *p <= '9'; p++)
			f->prec = f->prec * 10 + (*p - '0');
	}
	if (*p == 'z') {
		*lng = 3;
		p++;
	} else if (*p == 'l') {
		*lng = 1;
		if (*++p == 'l') {
			*lng = 2;
			p++;
		}
	}
	return p;
}

/* %d %i %u %x %o: the argument as its length modifier says, its digits */
static void put_int(struct sink *s, char conv, int lng, const struct spec *f, va_list *ap)
{
	char body[24];
	if (conv == 'd' || conv == 'i') {
		long long v = lng == 2 ? va_arg(*ap, long long)
			      : lng == 1 ? va_arg(*ap, long)
			      : lng == 3 ? (long long)va_arg(*ap, ptrdiff_t)
					 : va_arg(*ap, int);
		unsigned long long m = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
		/* precision: at least that many digits (0 with .0: none) */
		int l = m == 0 && f->prec == 0 ? 0 : digits(body, m, 10);
		emit(s, v < 0 ? '-' : f->plus ? '+' : 0, body, l, f->prec, f);
		return;
	}
	unsigned long long v = lng == 2 ? va_arg(*ap, unsigned long long)
			       : lng == 1 ? va_arg(*ap, unsigned long)
			       : lng == 3 ? va_arg(*ap, size_t)
					  : va_arg(*ap, unsigned);
	int l = v == 0 && f->prec == 0 ? 0 : digits(body, v, conv == 'u' ? 10 : conv == 'x' ? 16 : 8);
	emit(s, 0, body, l, f->prec, f);
}

/* %s, cut to the precision */
static void put_str(struct sink *s, const char *v, const struct spec *f)
{
	if (!v) /* glibc's text, which it leaves out if cut */
		v = f->prec >= 0 && f->prec < 6 ? "" : "(null)";
	size_t max = f->prec < 0 ? (size_t)-1 : (size_t)f->prec, l = 0;
	while (l < max && v[l])
		l++;
	int fill = f->width > 0 && (size_t)f->width > l ? f->width - (int)l : 0;
	if (!f->left)
		pad(s, ' ', fill);
	puts_n(s, v, l);
	if (f->left)
		pad(s, ' ', fill);
}

/* nc__vfmt's walk: the text as it is, each conversion by its letter */
static int format(char *buf, size_t n, const char *fmt, va_list *ap)
{
	struct sink s = {buf, n, 0};
	for (const char *p = fmt; *p; p++) {
		if (*p != '%') {
			put(&s, *p);
			continue;
		}
		const char *start = p++;
		struct spec f = {0, 0, 0, 0, -1};
		int lng = 0;
		p = parse_spec(p, &f, &lng, ap);
		switch (*p) {
		case 'd':
		case 'i':
		case 'u':
		case 'x':
		case 'o':
			put_int(&s, *p, lng, &f, ap);
			break;
		case 'f':
			fixed(&s, va_arg(*ap, double), &f);
			break;
		case 's':
			put_str(&s, va_arg(*ap, const char *), &f);
			break;
		case 'c': {
			int fill = f.width > 1 ? f.width - 1 : 0;
			if (!f.left)
				pad(&s, ' ', fill);
			put(&s, (char)va_arg(*ap, int));
			if (f.left)
				pad(&s, ' ', fill);
			break;
		}
		case '%':
			put(&s, '%');
			break;
		case 0: /* a lone '%' at the end: an error, as for snprintf */
			if (n > 0)
				buf[s.len < n ? s.len : n - 1] = 0;
			return -1;
		default:
			/* not one of ours: the text as written, and a debug
			 * build says so (a caller to fix, not an input) */
#ifdef NC_DEBUG
			nc__debug_fail("nc__fmt: unknown conversion in \"%.60s\"", fmt);
#endif
			for (const char *q = start; q <= p && *q; q++)
				put(&s, *q);
			if (!*p)
				p--;
			break;
		}
	}
	if (n > 0)
		buf[s.len < n ? s.len : n - 1] = 0;
	return s.len > (size_t)INT32_MAX ? INT32_MAX : (int)s.len;
}

NC_START int nc__vfmt(char *buf, size_t n, const char *fmt, va_list ap)
{
	/* a copy the phases share by pointer: where va_list is an array
	 * (x86-64), a parameter's address is not a va_list * */
	va_list aq;
	va_copy(aq, ap);
	int r = format(buf, n, fmt, &aq);
	va_end(aq);
	return r;
}

NC_START int nc__fmt(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = nc__vfmt(buf, n, fmt, ap);
	va_end(ap);
	return r;
}
