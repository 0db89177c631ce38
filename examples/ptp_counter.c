/* SPDX-License-Identifier: MIT */
/* A counter of your own: a PTP hardware clock, or a mock where there is none.
 *
 * A NIC's PTP hardware clock (PHC, /dev/ptpN, disciplined by ptp4l) stamps
 * packets in hardware; reading the same clock for your own events puts them
 * on the packets' timeline.  The kernel exposes it as a dynamic POSIX clock:
 * clock_gettime(FD_TO_CLOCKID(fd)).  nc_set_counter() makes it nanoclock's
 * counter: it is probed and checked like the built-in ones, its rate is
 * measured against CLOCK_MONOTONIC_RAW (hz = 0) or a stated rate is
 * cross-checked, and nc_now_ns / nc_ticks_to_ns work on it as usual (reads
 * become a call).
 *
 * Without /dev/ptp0 (or without permission to open it) this registers a
 * mock: a 24 MHz, 32-bit counter (like an arm64 generic timer), started
 * 50 ms before it wraps, to show that narrower counters are extended to 64
 * bits across the wrap.
 *
 *   ptp_counter [/dev/ptpN]
 *
 * Register before the library's first use: afterwards nc_set_counter
 * returns NC_EBUSY.  NANOCLOCK_COUNTER in the environment wins over it.
 *
 * Build: cc ptp_counter.c $(pkg-config --cflags --libs nanoclock) */
#include <nanoclock.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* linux/posix-timers.h, as the kernel's testptp.c defines it */
#define FD_TO_CLOCKID(fd) ((clockid_t)((((unsigned int)~(fd)) << 3) | 3))

static int64_t raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the PTP hardware clock: nanoseconds of PTP time (TAI) ---- */
static uint64_t phc_read(void *ctx)
{
	struct timespec ts;
	if (clock_gettime(*(const clockid_t *)ctx, &ts) != 0)
		return 0; /* fails the library's checks: it falls back */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the mock: 24 MHz, 32 bits, wrapping 50 ms after the start ---- */
#define MOCK_HZ 24000000u
struct mock {
	int64_t t0_ns;
	uint32_t start;
};

static uint64_t mock_read(void *ctx)
{
	const struct mock *m = ctx;
	uint64_t ns = (uint64_t)(raw_ns() - m->t0_ns);
	uint64_t ticks = ns / 1000u * (MOCK_HZ / 1000000u) + ns % 1000u * (MOCK_HZ / 1000000u) / 1000u;
	return (uint32_t)(m->start + ticks); /* only 32 bits, as the hardware would */
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "/dev/ptp0";
	static clockid_t phc;
	static struct mock mock;
	struct nc_counter_spec spec;
	int fd = open(dev, O_RDONLY);
	int is_mock = fd < 0;
	if (!is_mock) {
		phc = FD_TO_CLOCKID(fd); /* the fd stays open while the clock is used */
		spec = (struct nc_counter_spec){"phc", phc_read, &phc, 0 /* measure it */, 64};
		printf("counter: the PTP hardware clock %s\n", dev);
	} else {
		mock.t0_ns = raw_ns();
		mock.start = UINT32_MAX - MOCK_HZ / 20 + 1; /* wraps after 50 ms */
		spec = (struct nc_counter_spec){"mock24m", mock_read, &mock, MOCK_HZ, 32};
		printf("counter: no %s here, a mock 24 MHz 32-bit counter instead\n", dev);
	}

	int rc = nc_set_counter(&spec);
	if (rc != 0) {
		fprintf(stderr, "nc_set_counter: %s\n", nc_strerror(rc));
		return 1;
	}
	rc = nc_init();
	printf("nc_init: %s; counter in use %s, %.6f MHz +-%.3g ppm (%s)\n",
	       rc ? nc_strerror(rc) : "ok", nc_counter_name(), nc_ticks_per_second() / 1e6,
	       nc_ticks_per_second_uncertainty_ppm(), nc_ticks_per_second_source());
	if (rc != 0) /* e.g. NANOCLOCK_COUNTER set, or the PHC failed its checks */
		printf("(the library runs on its own best counter; `nanoclock info` shows why)\n");

	/* time 100 ms of sleep with both clocks: across the mock's wrap */
	int64_t r0 = raw_ns();
	uint64_t n0 = nc_now_ns(), t0 = nc_ticks_begin();
	sleep_ms(100);
	uint64_t t1 = nc_ticks_end(), n1 = nc_now_ns();
	int64_t r1 = raw_ns();
	double by_ticks = (double)nc_ticks_to_ns(t1 - t0), by_now = (double)(n1 - n0);
	double by_raw = (double)(r1 - r0);
	printf("100 ms sleep: %.3f ms by nc_ticks_to_ns, %.3f ms by nc_now_ns, %.3f ms by "
	       "CLOCK_MONOTONIC_RAW\n",
	       by_ticks / 1e6, by_now / 1e6, by_raw / 1e6);
	if (fd >= 0)
		close(fd);
	/* the mock is a test too: its wrap must not show.  The two reads
	 * enclose the 100 ms sleep and sit inside the CLOCK_MONOTONIC_RAW
	 * bracket (give or take the 42 ns step); a lost wrap would be 179 s. */
	if (is_mock && rc == 0 && (by_ticks > by_raw + 1e3 || by_ticks < 100e6 - 1e3)) {
		fprintf(stderr, "ptp_counter: the interval across the wrap is wrong\n");
		return 1;
	}
	return 0;
}
