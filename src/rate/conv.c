/* SPDX-License-Identifier: MIT */
/*
 * Division-free tick <-> nanosecond conversion.
 *
 * The frequency is held as an integer q = round(hz * 2^24) (the "calibrated
 * frequency" is exactly q / 2^24 Hz), so the exact conversion is the
 * rational  ns(d) = d * 1e9 * 2^24 / q.
 *
 * We store P = round(2^64 * 1e9 * 2^24 / q) as a 64.64 fixed-point number
 * (ns_int = P >> 64, ns_frac = P mod 2^64) and compute, in nc__scale(),
 *
 *     out(d) = d * ns_int + floor((d * ns_frac + 2^63) / 2^64)
 *            = floor((d * P + 2^63) / 2^64)        (round half up of d*P/2^64)
 *
 * Error bound.  Let F = 2^64 * 1e9 * 2^24 / q (exact), so |P - F| <= 1/2.
 *   |out(d) - d*P/2^64| <= 1/2                    (rounding to nearest)
 *   |d*P/2^64 - d*F/2^64| <= d / 2^65 < 1/2       (for every d < 2^64)
 * so |out(d) - ns(d)| < 1 ns for every 64-bit interval whose result fits in
 * 64 bits (584 years): the whole wrap horizon.  Because P is rounded, not
 * truncated, the multiplier carries no systematic bias: its total
 * contribution over the full counter range is below half a nanosecond
 * (a truncated 32-bit multiplier, by contrast, loses up to one part in
 * 2^32 relative — about 0.1 ms a day at 2 GHz, more with smaller shifts).
 *
 * The same construction with T = round(2^64 * q / (2^24 * 1e9)) converts
 * nanoseconds to ticks, rounded to the nearest tick.
 *
 * Cost: one 64x64->128 multiply, one 64x64 multiply, two adds and a shift
 * (four 32x32 multiplies for the high word on 32-bit targets).
 */
#include "rate.h"

#include <math.h>

/* 128-bit unsigned as two words; only used off the fast path. */
struct u128 {
	uint64_t hi, lo;
};

/* n / d rounded to the nearest integer (ties up), for d < 2^62: DIVQ on
 * x86-64, the compiler's 128-bit division where it has one, else
 * shift-and-subtract
 * (128 steps, a large share of what a start with a shared record
 * executes). */
static struct u128 div_round(struct u128 n, uint64_t d)
{
#if defined(__x86_64__)
	/* two DIVQ, the high word first (its remainder, below d, keeps the
	 * second quotient within 64 bits): the compiler's 128-bit division
	 * calls libgcc's __udivti3, code nothing else a start runs sits beside,
	 * one page fault more in a cold start */
	uint64_t qh = n.hi / d, r = n.hi % d, ql;
	__asm__("divq %4" : "=a"(ql), "=d"(r) : "a"(n.lo), "d"(r), "rm"(d));
	if (r >= d - r) { /* 2*rem >= d without overflow */
		if (++ql == 0)
			qh++;
	}
	struct u128 out = {qh, ql};
	return out;
#elif defined(__SIZEOF_INT128__)
	__extension__ typedef unsigned __int128 wide;
	wide nn = ((wide)n.hi << 64) | n.lo;
	wide qq = nn / d;
	uint64_t r = (uint64_t)(nn % d);
	if (r >= d - r) /* 2*rem >= d without overflow */
		qq++;
	struct u128 out = {(uint64_t)(qq >> 64), (uint64_t)qq};
	return out;
#else
	struct u128 q = {0, 0};
	uint64_t rem = 0;
	for (int i = 127; i >= 0; i--) {
		uint64_t bit = i >= 64 ? (n.hi >> (i - 64)) & 1 : (n.lo >> i) & 1;
		rem = (rem << 1) | bit;
		q.hi = (q.hi << 1) | (q.lo >> 63);
		q.lo <<= 1;
		if (rem >= d) {
			rem -= d;
			q.lo |= 1;
		}
	}
	if (rem >= d - rem) { /* 2*rem >= d without overflow */
		q.lo++;
		if (q.lo == 0)
			q.hi++;
	}
	return q;
#endif
}

static struct u128 shl(uint64_t v, unsigned s)
{
	struct u128 r;
	if (s == 0) {
		r.hi = 0;
		r.lo = v;
	} else if (s < 64) {
		r.hi = v >> (64 - s);
		r.lo = v << s;
	} else {
		r.hi = v << (s - 64);
		r.lo = 0;
	}
	return r;
}

NC_START int nc__hz_to_q24(double hz, uint64_t *q24)
{
	if (isnan(hz))
		return NC_EINVAL;
	if (!nc__hz_valid(hz))
		return NC_ERANGE;
	/* hz * 2^24 <= 1.7e18 < 2^63: exact enough and representable */
	*q24 = (uint64_t)(hz * 16777216.0 + 0.5);
	return 0;
}

NC_START int nc__conv_from_q24(nc_conv_t *c, uint64_t q)
{
	if (!c)
		return NC_EINVAL;
	if (q < (uint64_t)(NC_HZ_MIN * 16777216.0) || q > (uint64_t)(NC_HZ_MAX * 16777216.0))
		return NC_ERANGE;
	/* P = round(1e9 * 2^88 / q): 1e9 < 2^30, so the numerator < 2^118 */
	struct u128 p = div_round(shl(1000000000u, 88), q);
	/* T = round(q * 2^40 / 1e9): q < 2^61, numerator < 2^101 */
	struct u128 t = div_round(shl(q, 40), 1000000000u);
	c->ns_int = p.hi;
	c->ns_frac = p.lo;
	c->tk_int = t.hi;
	c->tk_frac = t.lo;
	c->hz_q24 = q;
	return 0;
}

NC_START int nc_conv_init(nc_conv_t *c, double hz)
{
	uint64_t q;
	if (!c)
		return NC_EINVAL;
	int rc = nc__hz_to_q24(hz, &q);
	if (rc)
		return rc;
	return nc__conv_from_q24(c, q);
}

NC_START int nc__ns_per_tick(double hz, uint64_t *ip, uint64_t *fp)
{
	nc_conv_t c;
	int rc = nc_conv_init(&c, hz);
	if (rc)
		return rc;
	*ip = c.ns_int;
	*fp = c.ns_frac;
	return 0;
}
