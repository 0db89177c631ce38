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

#include <math.h>
#include <stdint.h>
#include <stdio.h>

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

/* sign, then zeros or spaces to width, then the body */
static void emit(struct sink *s, char sign, const char *body, int blen, int width, int zero)
{
	int total = blen + (sign != 0);
	if (!zero)
		for (int i = total; i < width; i++)
			put(s, ' ');
	if (sign)
		put(s, sign);
	if (zero)
		for (int i = total; i < width; i++)
			put(s, '0');
	for (int i = 0; i < blen; i++)
		put(s, body[i]);
}

static void fixed(struct sink *s, double v, int prec, int plus, int width, int zero)
{
	char sign = signbit(v) ? '-' : plus ? '+' : 0;
	double a = fabs(v);
	if (isnan(v) || isinf(v)) {
		emit(s, sign, isnan(v) ? "nan" : "inf", 3, width, 0);
		return;
	}
	double ip = floor(a);
	if (ip >= 1e18 || prec > 15) {
		char big[400];
		int l = snprintf(big, sizeof(big), "%.*f", prec, a);
		if (l > (int)sizeof(big) - 1)
			l = (int)sizeof(big) - 1;
		emit(s, sign, big, l, width, zero);
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
		char f[24];
		int fl = digits(f, fr, 10);
		for (int i = fl; i < prec; i++)
			body[l++] = '0';
		for (int i = 0; i < fl; i++)
			body[l++] = f[i];
	}
	emit(s, sign, body, l, width, zero);
}

int nc__vfmt(char *buf, size_t n, const char *fmt, va_list ap)
{
	struct sink s = {buf, n, 0};
	for (const char *p = fmt; *p; p++) {
		if (*p != '%') {
			put(&s, *p);
			continue;
		}
		const char *start = p++;
		int plus = 0, zero = 0, width = 0, prec = -1, lng = 0;
		for (;; p++) {
			if (*p == '+')
				plus = 1;
			else if (*p == '0')
				zero = 1;
			else
				break;
		}
		if (*p == '*') {
			width = va_arg(ap, int);
			p++;
		}
		while (*p >= '0' && *p <= '9')
			width = width * 10 + (*p++ - '0');
		if (*p == '.') {
			prec = 0;
			if (*++p == '*') {
				prec = va_arg(ap, int);
				p++;
			}
			for (; *p >= '0' && *p <= '9'; p++)
				prec = prec * 10 + (*p - '0');
		}
		if (*p == 'z') {
			lng = 3;
			p++;
		} else if (*p == 'l') {
			lng = 1;
			if (*++p == 'l') {
				lng = 2;
				p++;
			}
		}
		char body[24];
		switch (*p) {
		case 'd':
		case 'i': {
			long long v = lng == 2 ? va_arg(ap, long long)
				      : lng == 1 ? va_arg(ap, long)
				      : lng == 3 ? (long long)va_arg(ap, ptrdiff_t)
						 : va_arg(ap, int);
			unsigned long long m = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
			emit(&s, v < 0 ? '-' : plus ? '+' : 0, body, digits(body, m, 10), width, zero);
			break;
		}
		case 'u':
		case 'x':
		case 'o': {
			unsigned long long v = lng == 2 ? va_arg(ap, unsigned long long)
					       : lng == 1 ? va_arg(ap, unsigned long)
					       : lng == 3 ? va_arg(ap, size_t)
							  : va_arg(ap, unsigned);
			emit(&s, 0, body, digits(body, v, *p == 'u' ? 10 : *p == 'x' ? 16 : 8), width,
			     zero);
			break;
		}
		case 'f':
			fixed(&s, va_arg(ap, double), prec < 0 ? 6 : prec, plus, width, zero);
			break;
		case 's': {
			const char *v = va_arg(ap, const char *);
			if (!v)
				v = "(null)";
			size_t max = prec < 0 ? (size_t)-1 : (size_t)prec, l = 0;
			while (l < max && v[l])
				l++;
			for (size_t i = l; i < (size_t)(width > 0 ? width : 0); i++)
				put(&s, ' ');
			puts_n(&s, v, l);
			break;
		}
		case 'c':
			for (int i = 1; i < width; i++)
				put(&s, ' ');
			put(&s, (char)va_arg(ap, int));
			break;
		case '%':
			put(&s, '%');
			break;
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

int nc__fmt(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = nc__vfmt(buf, n, fmt, ap);
	va_end(ap);
	return r;
}
