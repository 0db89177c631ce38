/* SPDX-License-Identifier: MIT */
/*
 * A PTP hardware clock (PHC, /dev/ptpN) read against CLOCK_REALTIME, for
 * the PTP source where ptp4l time-stamps in hardware.  ptp4l then keeps the
 * PHC near its master and knows nothing of the system clock; whatever
 * steers the system clock from the PHC (phc2sys, chrony's PHC refclock, or
 * nothing at all), its offset from the PHC is measured here, at each of
 * ptp4l's answers, rather than taken from that steering program's word.
 *
 * Which PHC: the one ptp4l says its port uses (PORT_HWCLOCK_NP, linuxptp
 * 4), else the one the interface ptp4l names time-stamps with, as the
 * kernel's ethtool interface says (SIOCETHTOOL, ETHTOOL_GET_TS_INFO: its
 * phc_index); /dev/ptp<index>.  ptp4l may run on a virtual clock of that
 * PHC instead (phc_index in its configuration), which only its own answer
 * tells: without it, a PHC with virtual clocks is refused.  The ethtool
 * answer is kept for the interface (the call takes the kernel's RTNL lock,
 * which a driver may hold for long) and asked again when the interface
 * changes, a reading gives no bound, or a minute has passed.  The interface must be in this process's
 * network namespace.
 *
 * The device is opened for each reading and closed after it: two opens of
 * one device share its inode, so a descriptor kept between readings could
 * not be told from one the program opened under the same number after
 * closing the library's.
 *
 * The reading: PTP_SYS_OFFSET_EXTENDED gives samples of (CLOCK_REALTIME
 * before, the PHC, CLOCK_REALTIME after), the driver reading the PHC as
 * close to the middle of the two system reads as it can.  The PHC's reading
 * fell somewhere inside the bracket, so the system clock's offset from the
 * PHC is the bracket's middle minus the PHC's reading, within half the
 * bracket's width; the narrowest bracket of the samples is the best one.
 * A driver without it answers EOPNOTSUPP: PTP_SYS_OFFSET then, whose
 * samples alternate system and PHC reads, each PHC read bracketed by the
 * system reads beside it.  A bracket past PHC_MAX_BRACKET_NS (the PHC behind
 * a slow bus, or the process preempted in every sample) is no reading.
 *
 * State guarded by nc__lib_lock (ptp.c calls in with it held).
 */
#include "utc.h"
#include "../base/fmt.h"
#include "../counter/counter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/ptp_clock.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define PHC_SAMPLES 7
#define PHC_MAX_BRACKET_NS 1000000
#define ASK_AGAIN_NS 60000000000ll /* the interface's PHC asked about again this often */

static int real_ioctl(int fd, unsigned long req, void *arg) { return ioctl(fd, req, arg); }

static struct {
	char iface[IFNAMSIZ]; /* the interface the kernel's answer is for ... */
	int index;            /* ... its PHC (-1: not asked) ... */
	int64_t asked_raw;    /* ... as of then (CLOCK_MONOTONIC_RAW) */
	int (*ioctl_fn)(int fd, unsigned long req, void *arg); /* NULL: ioctl */
	char dir[64]; /* "": /dev and /sys/class/ptp */
} phc NC_GUARDED_BY(nc__lib_lock) = {.index = -1};

/* a PHC's or the system's reading in ns; -1 for one no clock gives */
static int clock_ns(const struct ptp_clock_time *t, int64_t *ns)
{
	/* (to 2106: its ns, and any two's difference, fit in 64 bits) */
	if (t->sec < 0 || t->sec >= 4294967296ll || t->nsec >= 1000000000u)
		return -1;
	*ns = (int64_t)t->sec * 1000000000 + t->nsec;
	return 0;
}

int nc__utc_phc_pick(const int64_t (*s)[3], int n, struct nc__phc_meas *m)
{
	int best = -1;
	int64_t width = 0;
	for (int i = 0; i < n; i++) {
		int64_t w = s[i][2] - s[i][0];
		/* (out of order: the system clock stepped between its reads) */
		if (w >= 0 && s[i][1] > 0 && (best < 0 || w < width)) {
			best = i;
			width = w;
		}
	}
	if (best < 0) {
		nc__fmt(m->why, sizeof(m->why), "none of %d readings of %s has its system reads in "
			"order", n, m->dev);
		return -1;
	}
	if (width > PHC_MAX_BRACKET_NS) {
		nc__fmt(m->why, sizeof(m->why), "the best of %d readings of %s took %.0f us "
			"(more than %d us is no reading)", n, m->dev, (double)width / 1e3,
			PHC_MAX_BRACKET_NS / 1000);
		return -1;
	}
	m->at_ns = s[best][0] + width / 2;
	m->off_ns = (double)(m->at_ns - s[best][1]) + (double)(width % 2) / 2;
	m->half_ns = (double)width / 2;
	return 0;
}

/* the PHC index the interface time-stamps with: >= 0, or -1 with why */
static int phc_index_of(const char *iface, struct nc__phc_meas *m) NC_REQUIRES(nc__lib_lock)
{
	if (!iface[0] || strlen(iface) >= IFNAMSIZ) {
		nc__fmt(m->why, sizeof(m->why), "ptp4l names no interface it time-stamps on");
		return -1;
	}
	if (phc.index >= 0 && strcmp(phc.iface, iface) == 0 &&
	    nc__ref.raw() - phc.asked_raw < ASK_AGAIN_NS)
		return phc.index;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		nc__fmt(m->why, sizeof(m->why), "no socket to ask which PTP hardware clock %s uses "
			"(%s)", iface, strerror(errno));
		return -1;
	}
	struct ethtool_ts_info ti;
	memset(&ti, 0, sizeof(ti));
	ti.cmd = ETHTOOL_GET_TS_INFO;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, iface, strlen(iface));
	ifr.ifr_data = (void *)&ti;
	int r = (phc.ioctl_fn ? phc.ioctl_fn : real_ioctl)(s, SIOCETHTOOL, &ifr);
	int e = errno;
	close(s);
	if (r != 0) {
		if (e == ENODEV)
			nc__fmt(m->why, sizeof(m->why), "no interface %s in this process's network "
				"namespace (ptp4l's is another?)", iface);
		else
			nc__fmt(m->why, sizeof(m->why), "the kernel does not say which PTP hardware "
				"clock %s uses (%s)", iface, strerror(e));
		return -1;
	}
	if (ti.phc_index < 0) {
		nc__fmt(m->why, sizeof(m->why), "%s has no PTP hardware clock", iface);
		return -1;
	}
	nc__copy(phc.iface, sizeof(phc.iface), iface);
	phc.index = ti.phc_index;
	phc.asked_raw = nc__ref.raw();
	return ti.phc_index;
}

/* the virtual clocks made on PHC idx (ptp4l may use one of them): their
 * number, 0 where the kernel has none (or no such file: before Linux 5.14) */
static int vclocks(int idx) NC_REQUIRES(nc__lib_lock)
{
	char path[128], buf[16];
	if (phc.dir[0])
		nc__fmt(path, sizeof(path), "%s/ptp%d.n_vclocks", phc.dir, idx);
	else
		nc__fmt(path, sizeof(path), "/sys/class/ptp/ptp%d/n_vclocks", idx);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	int v = 0;
	for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9' && v < 100000; i++)
		v = v * 10 + (buf[i] - '0');
	return v;
}

/* one reading of the PHC on fd into s (n samples): 0, or -1 with m->why */
static int read_phc(int fd, int64_t (*s)[3], int *n, struct nc__phc_meas *m)
	NC_REQUIRES(nc__lib_lock)
{
	int (*fn)(int, unsigned long, void *) = phc.ioctl_fn ? phc.ioctl_fn : real_ioctl;
	struct ptp_sys_offset_extended x;
	memset(&x, 0, sizeof(x));
	x.n_samples = PHC_SAMPLES;
	*n = 0;
	if (fn(fd, PTP_SYS_OFFSET_EXTENDED, &x) == 0) {
		for (int i = 0; i < PHC_SAMPLES; i++, (*n)++)
			for (int k = 0; k < 3; k++)
				if (clock_ns(&x.ts[i][k], &s[i][k]) != 0)
					s[i][0] = s[i][1] = 0, s[i][2] = -1, k = 3;
		return 0;
	}
	if (errno != EOPNOTSUPP && errno != ENOTTY) {
		nc__fmt(m->why, sizeof(m->why), "%s: PTP_SYS_OFFSET_EXTENDED: %s", m->dev,
			strerror(errno));
		return -1;
	}
	struct ptp_sys_offset y;
	memset(&y, 0, sizeof(y));
	y.n_samples = PHC_SAMPLES;
	if (fn(fd, PTP_SYS_OFFSET, &y) != 0) {
		nc__fmt(m->why, sizeof(m->why), "%s: PTP_SYS_OFFSET: %s", m->dev, strerror(errno));
		return -1;
	}
	for (int i = 0; i < PHC_SAMPLES; i++, (*n)++)
		if (clock_ns(&y.ts[2 * i], &s[i][0]) != 0 || clock_ns(&y.ts[2 * i + 1], &s[i][1]) != 0 ||
		    clock_ns(&y.ts[2 * i + 2], &s[i][2]) != 0)
			s[i][0] = s[i][1] = 0, s[i][2] = -1;
	return 0;
}

int nc__utc_phc_measure(const char *iface, int phc_index, struct nc__phc_meas *m)
{
	NC_LOCK_HELD();
	memset(m, 0, sizeof(*m));
	int idx = phc_index;
	if (idx < 0) {
		idx = phc_index_of(iface, m);
		if (idx < 0)
			return -1;
		int nv = vclocks(idx);
		if (nv > 0) {
			nc__fmt(m->why, sizeof(m->why), "ptp%d, %s's PTP hardware clock, has %d virtual "
				"clocks and ptp4l may use one (a ptp4l that answers PORT_HWCLOCK_NP says "
				"which)", idx, iface, nv);
			return -1;
		}
	}
	nc__fmt(m->dev, sizeof(m->dev), "%s/ptp%d", phc.dir[0] ? phc.dir : "/dev", idx);
	int fd = open(m->dev, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		int e = errno;
		nc__fmt(m->why, sizeof(m->why), "%s: %s", m->dev,
			e == EACCES ? "permission denied (give this user read access to it)"
				    : strerror(e));
		if (fd >= 0)
			close(fd);
		phc.index = -1; /* the interface asked about again next time */
		return -1;
	}
	/* a device, but for the tests' stand-in (a file they made) */
	if (!S_ISCHR(st.st_mode) && !phc.ioctl_fn) {
		nc__fmt(m->why, sizeof(m->why), "%s is no device", m->dev);
		close(fd);
		return -1;
	}
	int64_t s[PHC_SAMPLES][3];
	int n;
	m->at_tick = nc__counter_read(); /* (at or before the reading) */
	int r = read_phc(fd, s, &n, m);
	close(fd);
	if (r == 0)
		r = nc__utc_phc_pick((const int64_t(*)[3])s, n, m);
	if (r != 0)
		phc.index = -1;
	return r;
}

void nc__utc_phc_close(void)
{
	NC_LOCK_HELD();
	phc.index = -1;
}

void nc__utc_phc_test(int (*fn)(int fd, unsigned long req, void *arg), const char *dev_dir)
{
	phc.index = -1; /* the interface asked about anew */
	phc.ioctl_fn = fn;
	nc__copy(phc.dir, sizeof(phc.dir), dev_dir ? dev_dir : "");
}
