/* SPDX-License-Identifier: MIT */
/* Wall-clock stamps with their stated error.
 *
 * nc_unix_ns() is Unix time (ns since 1970-01-01 UTC) at the cost of a
 * counter read, tied to CLOCK_REALTIME.  nc_get_unix_status() says how far
 * it may be from UTC: the kernel's own maximum error (adjtimex: what NTP or
 * PTP achieved, or "not synchronised") plus the library's tie to the system
 * clock.  Log the bound next to the stamps: a stamp without its error is
 * half a measurement.
 *
 * Stamps taken on a hot path with nc_ticks() (the cheapest read) can be
 * converted later with nc_ticks_to_unix_ns().
 *
 * Build: cc wallclock.c $(pkg-config --cflags --libs nanoclock) */
#include <nanoclock.h>

#include <stdio.h>
#include <time.h>

/* 2026-11-23T08:39:49.123456789Z */
static void iso8601(int64_t ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / 1000000000);
	long frac = (long)(ns % 1000000000);
	if (frac < 0) {
		frac += 1000000000;
		s--;
	}
	struct tm tm;
	size_t n = gmtime_r(&s, &tm) ? strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm) : 0;
	snprintf(buf + n, len - n, ".%09ldZ", frac);
}

static void print_error(const struct nc_unix_status *st)
{
	if (st->utc_error_ns >= 0)
		printf("  +-%.3f ms from UTC (kernel's maximum error %.0f us, tie to the system clock "
		       "+-%.0f ns)\n",
		       st->utc_error_ns / 1e6, st->kernel_max_error_us, st->tie_error_ns);
	else
		printf("  error from UTC unknown: %s;\n  within +-%.0f ns of the system clock\n", st->why,
		       st->tie_error_ns);
}

int main(void)
{
	nc_init();
	struct nc_unix_status st;
	char buf[64];

	/* stamps on a hot path: raw ticks, converted afterwards */
	uint64_t ticks[3];
	for (int i = 0; i < 3; i++) {
		ticks[i] = nc_ticks();
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}

	/* a stamp now, its error, and the system clock around it */
	struct timespec a, b;
	clock_gettime(CLOCK_REALTIME, &a);
	int64_t now = nc_unix_ns();
	clock_gettime(CLOCK_REALTIME, &b);
	if (nc_get_unix_status(&st) != 0)
		return 1;
	iso8601(now, buf, sizeof(buf));
	printf("now   %s\n", buf);
	print_error(&st);
	int64_t lo = (int64_t)a.tv_sec * 1000000000 + a.tv_nsec;
	int64_t hi = (int64_t)b.tv_sec * 1000000000 + b.tv_nsec;
	double off = now < lo ? (double)(now - lo) : now > hi ? (double)(now - hi) : 0;
	printf("  CLOCK_REALTIME read around it: %.0f ns outside that bracket (stated bound %.0f "
	       "ns)\n",
	       off < 0 ? -off : off, st.tie_error_ns);
	if (st.synchronised == 1)
		printf("  the kernel's clock is synchronised (NTP/PTP)%s\n",
		       st.leap_pending ? "; a leap second is pending" : "");

	for (int i = 0; i < 3; i++) {
		iso8601(nc_ticks_to_unix_ns(ticks[i]), buf, sizeof(buf));
		printf("stamp %s  (taken with nc_ticks, converted later)\n", buf);
	}
	printf("%u ties to the system clock so far, %u steps of it followed\n", st.refreshes,
	       st.steps);
	return 0;
}
