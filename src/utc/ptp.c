/* SPDX-License-Identifier: MIT */
/*
 * linuxptp's ptp4l, over its management socket (a Unix datagram socket,
 * /var/run/ptp4l by default, root's: mode 0660), with the management
 * messages of IEEE 1588 that `pmc` sends: GET PORT_DATA_SET (each port's
 * state and sync interval), PORT_PROPERTIES_NP (its time stamping and
 * interface), CURRENT_DATA_SET (the mean path delay), PARENT_DATA_SET (the
 * grandmaster's stated accuracy), PORT_HWCLOCK_NP (the PHC a port uses;
 * linuxptp 4 answers, 3 refuses: optional), TIME_PROPERTIES_DATA_SET (the
 * timescale, UTC offset and leap flags) and TIME_STATUS_NP (the last
 * offset from the master and when it was measured, and whether a
 * grandmaster is present).
 *
 * Where ptp4l's clock is CLOCK_REALTIME (software time stamps) it measures
 * the system clock itself against the master: the system clock was within
 * |offset| + the mean path delay (what an asymmetric path can hide: the
 * delay is assumed to be half the round trip) + the grandmaster's stated
 * accuracy of the master's time when the offset was measured (the ingress
 * time).  The figures are dated then, and the bound grows from then at the
 * drift assumed; they stay fresh four of ptp4l's sync intervals (or four
 * refreshes, the longer).  A port in SLAVE or UNCALIBRATED (the servo not
 * locked, or ptp4l told not to steer the clock: free_running) with a
 * grandmaster present is enough: the bound is the measurement, not the
 * servo's work.
 *
 * Where ptp4l's clock is a PTP hardware clock (PHC), its offset is the
 * PHC's, not the system clock's.  Whatever steers the system clock from
 * the PHC (phc2sys, chrony, nothing), phc.c reads the system clock against
 * the PHC at each answer, and that offset and half its reading's bracket
 * are added.  The PHC keeps the grandmaster's timescale: PTP's (TAI, from
 * which currentUtcOffset reaches UTC, as phc2sys takes it) or an arbitrary
 * one (taken as it is, as phc2sys does; named in the reason).  The
 * measurement's time is the PHC's, brought to CLOCK_REALTIME's by the
 * offset read, and its age is counted on the PHC.
 *
 * PTP's timescale with a UTC offset the grandmaster does not mark valid
 * gives no bound: the seconds are not known.  Around a leap second the
 * grandmaster's offset is the old one until its next announce, and nothing
 * says the system clock took the leap: figures from before the end of the
 * day a leap was announced for are void at that end, and those measured in
 * the LEAP_SETTLE_NS after it carry one second more.
 *
 * Anything else gives no bound: no port following a master, no
 * grandmaster, a PHC that cannot be read, a reply refused or implausible.
 * "Synchronised" is to the grandmaster's time: a grandmaster that is not
 * traceable to UTC (its clock class says so) is named in the reason.
 *
 * The exchange never waits inside a refresh, as for chrony: each refresh
 * takes the answers to the requests the previous one sent and sends the
 * next.  ptp4l answers only a socket with a name in the file system, so
 * the library binds one of its own (in $XDG_RUNTIME_DIR, /run for root,
 * else /tmp) for as long as the source is used, and removes it when the
 * source is closed or the process exits.
 */
#include "utc.h"
#include "../base/fmt.h"
#include "../counter/counter.h"
#include "../rate/rate.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define MSG_MANAGEMENT 0x0d
#define PTP_MAJOR 2
#define HDR_LEN 48 /* the header (34) and the management fields (14) */
#define TLV_MANAGEMENT 0x0001
#define TLV_ERROR 0x0002
#define ACTION_GET 0
#define ACTION_RESPONSE 2
#define PORT_UNCALIBRATED 8
#define PORT_SLAVE 9
#define TF_LEAP 0x03          /* TIME_PROPERTIES flags: leap61, leap59 */
#define TF_UTC_VALID 0x04     /* currentUtcOffsetValid */
#define TF_PTP_TIMESCALE 0x08 /* ptpTimescale */
#define MAX_OFFSET_NS 1e12 /* 1000 s: more is no measurement */
#define MAX_DELAY_NS 1e9
#define MAX_AGE_NS 3600e9      /* an older measurement is no figure of now */
#define LEAP_SETTLE_NS 16000000000ll /* the grandmaster's announces after a leap (8 at 2 s) */
#define DAY_NS 86400000000000ll

/* what is asked, in the order sent: ptp4l answers in turn, so the last
 * answer arriving means every port has answered the ones before */
static const struct {
	uint16_t id;
	uint16_t len; /* the data's size in a reply (at least) */
	uint16_t pad; /* the request's, as pmc sends it: zeros, the size of a fixed-size
			 data set; none where the size varies (ptp4l drops the GET else) */
	const char *name;
} ask_of[NC__PTP_NQ] = {
	{0x2004, 26, 26, "PORT_DATA_SET"},
	{0xc004, 13, 0, "PORT_PROPERTIES_NP"},
	{0x2001, 18, 18, "CURRENT_DATA_SET"},
	{0x2002, 32, 32, "PARENT_DATA_SET"},
	{0xc009, 16, 0, "PORT_HWCLOCK_NP"},
	{0x2003, 4, 4, "TIME_PROPERTIES_DATA_SET"},
	{0xc000, 50, 50, "TIME_STATUS_NP"},
};
#define NEEDED (((1u << NC__PTP_NQ) - 1) & ~(1u << NC__PTP_HWCLOCK))

static unsigned be16(const unsigned char *p) { return (unsigned)p[0] << 8 | p[1]; }
static uint64_t be64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}
static void put16(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

size_t nc__utc_ptp_request(unsigned char *p, size_t len, int q, uint16_t seq, uint16_t port)
{
	if (q < 0 || q >= NC__PTP_NQ || len < HDR_LEN + 6 + (size_t)ask_of[q].pad)
		return 0;
	size_t n = HDR_LEN + 6 + ask_of[q].pad;
	memset(p, 0, n);
	p[0] = MSG_MANAGEMENT;
	p[1] = PTP_MAJOR;
	put16(p + 2, (unsigned)n);
	put16(p + 28, port); /* sourcePortIdentity: clock 0, this port number */
	put16(p + 30, seq);
	p[32] = 0x04; /* controlField: management */
	p[33] = 0x7f; /* logMessageInterval */
	memset(p + 34, 0xff, 10); /* targetPortIdentity: every clock, every port */
	p[46] = ACTION_GET;
	put16(p + 48, TLV_MANAGEMENT);
	put16(p + 50, 2u + ask_of[q].pad);
	put16(p + 52, ask_of[q].id);
	return n;
}

/* The grandmaster's stated accuracy (IEEE 1588 clockAccuracy), ns; 0 for
 * "unknown" (0xfe) and reserved values, which add nothing and are said */
static double accuracy_ns(unsigned a)
{
	static const double v[] = {1e-3,  2.5e-3, 1e-2,  2.5e-2, 0.1,   0.25, 1,    2.5,
				   10,    25,     100,   250,    1e3,   2.5e3, 1e4,  2.5e4,
				   1e5,   2.5e5,  1e6,   2.5e6,  1e7,   2.5e7, 1e8,  2.5e8,
				   1e9,   1e10};
	/* 0x17 (1 ps, IEEE 1588-2019) up to 0x30 (10 s); 0x31: beyond 10 s */
	if (a >= 0x17 && a <= 0x30)
		return v[a - 0x17];
	return a == 0x31 ? INFINITY : 0;
}

int nc__utc_ptp_take(struct nc__ptp_figs *g, const unsigned char *p, size_t n, uint16_t seq0,
		     char *why, size_t len)
{
	if (n < HDR_LEN + 4 || (p[0] & 0x0f) != MSG_MANAGEMENT || (p[1] & 0x0f) != PTP_MAJOR) {
		nc__fmt(why, len, "not a PTP management message (%zu bytes)", n);
		return -1;
	}
	size_t mlen = be16(p + 2);
	if (mlen > n || mlen < HDR_LEN + 4) {
		nc__fmt(why, len, "a message length of %zu in %zu bytes", mlen, n);
		return -1;
	}
	unsigned seq = be16(p + 30);
	int q = (int)(uint16_t)(seq - seq0);
	if (q >= NC__PTP_NQ)
		return 1; /* another request's (late): not this exchange's */
	if ((p[46] & 0x0f) != ACTION_RESPONSE) {
		nc__fmt(why, len, "a management message that is no response (action %u)", p[46] & 0x0f);
		return -1;
	}
	unsigned type = be16(p + 48), tlen = be16(p + 50);
	if (HDR_LEN + 4 + (size_t)tlen > mlen || tlen < 2) {
		nc__fmt(why, len, "a TLV of %u bytes in a message of %zu", tlen, mlen);
		return -1;
	}
	const unsigned char *d = p + HDR_LEN + 6;
	size_t dl = tlen - 2;
	if (type == TLV_ERROR && q == NC__PTP_HWCLOCK && tlen >= 8 && be16(p + 54) == ask_of[q].id) {
		g->got |= 1u << q; /* (linuxptp before 4: the kernel's PHC is looked up) */
		return 0;
	}
	if (type == TLV_ERROR) {
		nc__fmt(why, len, "ptp4l refused GET %s (error %u)", ask_of[q].name, be16(p + 52));
		return -1;
	}
	if (type != TLV_MANAGEMENT || be16(p + 52) != ask_of[q].id || dl < ask_of[q].len) {
		nc__fmt(why, len, "the answer to GET %s is a TLV %u, id 0x%x, of %zu bytes", ask_of[q].name,
			type, be16(p + 52), dl);
		return -1;
	}
	g->got |= 1u << q;
	switch (q) {
	case NC__PTP_PORT:
		/* several ports: the best one following a master */
		if (d[10] == PORT_SLAVE || (d[10] == PORT_UNCALIBRATED && g->port_state != PORT_SLAVE) ||
		    !g->port_state) {
			g->port_state = d[10] ? d[10] : 0xff;
			g->port_num = be16(d + 8);
		}
		break;
	case NC__PTP_HWCLOCK:
		if (g->hw_n < (int)(sizeof(g->hw) / sizeof(g->hw[0]))) {
			g->hw[g->hw_n].port = be16(d + 8);
			g->hw[g->hw_n].phc_index = (int32_t)((uint32_t)d[10] << 24 | (uint32_t)d[11] << 16 |
							    (uint32_t)d[12] << 8 | d[13]);
			g->hw[g->hw_n].flags = d[14];
			g->hw_n++;
		}
		break;
	case NC__PTP_PROPS:
		/* the port following the master's, else the first's; its
		 * interface, a PTPText (a length, then that many bytes) */
		if (dl < 13u + d[12]) {
			nc__fmt(why, len, "an interface name of %u bytes in %zu", d[12], dl);
			return -1;
		}
		if (be16(d + 8) == g->port_num || !g->got_props) {
			g->timestamping = d[11];
			size_t il = d[12] < sizeof(g->iface) - 1 ? d[12] : 0; /* too long: none */
			memcpy(g->iface, d + 13, il);
			g->iface[il] = 0;
			if (strlen(g->iface) != il)
				g->iface[0] = 0; /* a NUL inside: none */
		}
		g->got_props = 1;
		break;
	case NC__PTP_CURRENT:
		g->steps_removed = be16(d);
		g->offset_cur_ns = (double)(int64_t)be64(d + 2) / 65536;
		g->delay_ns = (double)(int64_t)be64(d + 10) / 65536;
		break;
	case NC__PTP_PARENT:
		g->gm_class = d[19]; /* grandmasterClockQuality, after priority1 */
		g->gm_accuracy = d[20];
		memcpy(g->gm_id, d + 24, 8);
		break;
	case NC__PTP_TIMEPROPS:
		g->utc_offset = (int16_t)be16(d);
		g->time_flags = d[2];
		break;
	case NC__PTP_STATUS:
		g->offset_ns = (double)(int64_t)be64(d);
		g->ingress_ns = (int64_t)be64(d + 8);
		g->gm_present = (int32_t)((uint32_t)d[38] << 24 | (uint32_t)d[39] << 16 | (uint32_t)d[40] << 8 | d[41]) != 0;
		break;
	}
	return 0;
}

/* ptp4l's clock is a PHC: hardware time stamps (0 software and 2, legacy
 * hardware time stamps, keep CLOCK_REALTIME as ptp4l's clock) */
static int on_phc(const struct nc__ptp_figs *g)
{
	return g->timestamping != 0 && g->timestamping != 2;
}

static const char *port_name(unsigned s)
{
	static const char *const n[] = {"none",	  "INITIALIZING", "FAULTY",	 "DISABLED",
					"LISTENING", "PRE_MASTER",   "MASTER",	 "PASSIVE",
					"UNCALIBRATED", "SLAVE"};
	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "unknown";
}

void nc__utc_ptp_leap(int64_t now, int flagged, int64_t *at, int64_t *until)
{
	if (*at && now > *at && (*until ? now > *until : now > *at + LEAP_SETTLE_NS))
		*at = *until = 0; /* settled */
	if (!flagged) {
		if (*at && now > *at && !*until)
			*until = *at + LEAP_SETTLE_NS;
		return;
	}
	if (!*at) {
		int64_t day0 = now / DAY_NS * DAY_NS;
		*at = now - day0 < DAY_NS / 4 ? day0 : day0 + DAY_NS;
		*until = 0;
	}
	if (now >= *at)
		*until = now + LEAP_SETTLE_NS; /* the flag still up after it */
}

void nc__utc_ptp_cadence(int64_t moved, double *cadence, double win[2], int *n)
{
	if (moved <= 0)
		return;
	/* (the window's smallest: a silent master's long gap never counts
	 * for more than its window) */
	if (*n == 0 || (double)moved < win[1])
		win[1] = (double)moved;
	if (++*n >= 16) {
		win[0] = win[1];
		*n = 0;
	}
	double c = win[0] > 0 && win[0] < win[1] ? win[0] : win[1];
	*cadence = c < 1e6 ? 1e6 : c > 64e9 ? 64e9 : c;
}

int nc__utc_ptp_fix(const struct nc__ptp_figs *g, const struct nc__phc_meas *m,
		    int64_t now_real_ns, struct nc__utc_fix *f)
{
	memset(f, 0, sizeof(*f));
	f->status = NC_UTC_UNKNOWN;
	f->drift_ppm = -1;
	if ((g->got & NEEDED) != NEEDED) {
		nc__fmt(f->why, sizeof(f->why), "ptp4l did not answer every request");
		return -1;
	}
	if (g->port_state != PORT_SLAVE && g->port_state != PORT_UNCALIBRATED) {
		nc__fmt(f->why, sizeof(f->why), "ptp4l follows no master (port %s)",
			port_name(g->port_state));
		return 0;
	}
	if (!g->gm_present) {
		nc__fmt(f->why, sizeof(f->why), "ptp4l has no grandmaster");
		return 0;
	}
	int scale_ptp = (g->time_flags & TF_PTP_TIMESCALE) != 0;
	if (scale_ptp && !(g->time_flags & TF_UTC_VALID)) {
		/* TAI, and no word on how far UTC is from it: the seconds are
		 * not known (phc2sys and ptp4l take the figure all the same) */
		nc__fmt(f->why, sizeof(f->why), "the grandmaster keeps PTP's timescale (TAI) and "
			"does not vouch for its UTC offset (%d s, currentUtcOffsetValid 0)", g->utc_offset);
		return 0;
	}
	/* the system clock's offset from the clock ptp4l measured (0: the
	 * same clock), and the measurement's time on CLOCK_REALTIME */
	double sys = 0, sys_half = 0;
	int64_t as_of = g->ingress_ns;
	const char *bad = NULL;
	if (on_phc(g)) {
		if (!m || m->why[0]) {
			nc__fmt(f->why, sizeof(f->why), "ptp4l time-stamps in hardware on %s, and its "
				"PTP hardware clock was not read: %s", g->iface[0] ? g->iface : "a port",
				m ? m->why : "not asked");
			return 0;
		}
		if (scale_ptp && (g->utc_offset < 0 || g->utc_offset > 1000))
			bad = "a UTC offset out of range";
		/* PTP's timescale is TAI: UTC is currentUtcOffset seconds behind */
		sys = m->off_ns + (scale_ptp ? g->utc_offset * 1e9 : 0);
		sys_half = m->half_ns;
		if (!bad && !(fabs(sys) <= MAX_OFFSET_NS)) {
			nc__fmt(f->why, sizeof(f->why), "the system clock is %.0f s from %s (%s): "
				"nothing steers it from that PTP hardware clock", sys / 1e9, m->dev, g->iface);
			return 0;
		}
		/* (|off_ns| is at most 2,000 s here: no overflow below) */
		if (!bad && g->ingress_ns > 0 && g->ingress_ns < INT64_MAX / 2)
			as_of = g->ingress_ns + (int64_t)m->off_ns;
	}
	double acc = accuracy_ns(g->gm_accuracy);
	double bound = fabs(g->offset_ns) + g->delay_ns + acc + fabs(sys) + sys_half;
	if (bad)
		;
	else if (!(fabs(g->offset_ns) <= MAX_OFFSET_NS) || !(g->delay_ns >= 0 && g->delay_ns <= MAX_DELAY_NS))
		bad = "an offset or path delay out of range";
	else if (!isfinite(acc))
		bad = "a grandmaster stating an accuracy beyond 10 s";
	else if (g->ingress_ns <= 0 || as_of <= 0 || (double)(as_of - now_real_ns) > bound + 1e9)
		bad = "a measurement time in the future";
	else if ((double)(now_real_ns - as_of) > MAX_AGE_NS)
		bad = "a measurement time over an hour old";
	else if (!(bound > 0))
		bad = "a bound of 0";
	if (bad) {
		nc__fmt(f->why, sizeof(f->why), "ptp4l's figures have %s: refused", bad);
		return -1;
	}
	/* A leap second: until the grandmaster's next announce after it,
	 * its UTC offset is the old one, and nothing says the system clock
	 * took the leap.  Figures from before the end of the day it was
	 * announced for are void at that end; those measured in the first
	 * LEAP_SETTLE_NS after it carry the second more. */
	const char *leap = "";
	if (g->leap_at_ns > 0 && as_of < g->leap_at_ns) {
		f->horizon_ns = (double)(g->leap_at_ns - as_of);
		leap = ", a leap second at the day's end";
	} else if (g->leap_at_ns > 0 && as_of < (g->leap_until_ns > g->leap_at_ns + LEAP_SETTLE_NS
							 ? g->leap_until_ns
							 : g->leap_at_ns + LEAP_SETTLE_NS)) {
		bound += 1e9;
		leap = ", +1 s: a leap second just past";
	}
	f->status = NC_UTC_SYNCHRONISED;
	f->bound_ns = bound;
	/* what the servos may still steer the clock by: ptp4l's, and what
	 * steers the system clock from the PHC */
	f->slew_ns = fabs(g->offset_ns) + fabs(sys);
	f->as_of_ns = as_of;
	f->cadence_ns = g->cadence_ns;
	char accs[40], hw[150] = "";
	if (acc > 0)
		nc__fmt(accs, sizeof(accs), "accuracy %.0f ns", acc);
	else
		nc__fmt(accs, sizeof(accs), "accuracy not stated");
	if (on_phc(g))
		nc__fmt(hw, sizeof(hw), "; %s (%s, %s): the system clock %+.0f ns from it, +-%.0f",
			m->dev, g->iface, scale_ptp ? "TAI" : "arbitrary timescale", sys, sys_half);
	nc__fmt(f->why, sizeof(f->why), "ptp4l: port %s, offset %+.0f ns, path delay %.0f ns, %u "
		"step%s from a grandmaster of class %u%s (%s)%s%s", port_name(g->port_state),
		g->offset_ns, g->delay_ns, g->steps_removed, g->steps_removed == 1 ? "" : "s",
		g->gm_class, g->gm_class >= 187 ? ", not traceable to UTC" : "", accs, leap, hw);
	return 0;
}

/* ---- the source: one bound, connected datagram socket ----
 * Guarded by nc__lib_lock (core.c opens, asks and closes it under it). */
static struct {
	int fd;
	pid_t pid; /* the process that opened fd (a forked child opens its own) */
	dev_t dev; /* fd's socket (nc__utc_fd_ours) */
	ino_t ino;
	struct sockaddr_un peer;
	char own[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* the bound name ("" none) */
	uint16_t seq0;
	int outstanding;
	uint64_t sent_tick;
	int64_t sent_raw, sent_real;
	uint32_t stir;
	struct nc__ptp_figs figs;
	int64_t leap_at, leap_until; /* nc__utc_ptp_leap's */
	int64_t last_ingress;        /* the last answer's measurement time */
	double cadence, cad_win[2];  /* nc__utc_ptp_cadence's */
	int cad_n;
	int at_exit;
} pt NC_GUARDED_BY(nc__lib_lock) = {.fd = -1};

/* the bound name, removed at exit (a file in a folder): no lock, the
 * process is ending */
static char own_at_exit[sizeof(pt.own)];
static pid_t own_pid_at_exit; /* a forked child's exit leaves its parent's alone */
static void remove_own(void)
{
	if (own_at_exit[0] && own_pid_at_exit == getpid())
		unlink(own_at_exit);
}

static void unbind(void) NC_REQUIRES(nc__lib_lock)
{
	if (pt.own[0] && pt.pid == getpid())
		unlink(pt.own);
	pt.own[0] = 0;
	own_at_exit[0] = 0;
}

static int own_fd(void) NC_REQUIRES(nc__lib_lock)
{
	if (pt.fd >= 0 && !nc__utc_fd_ours(pt.fd, pt.dev, pt.ino)) {
		pt.fd = -1; /* the program's now: never closed */
		pt.outstanding = 0;
	}
	return pt.fd;
}

static uint32_t mix(void) NC_REQUIRES(nc__lib_lock)
{
	uint64_t x = nc__counter_read() ^ ((uint64_t)getpid() << 32) ^ ((uint64_t)++pt.stir << 48);
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint32_t)x;
}

static int connect_socket(char *why, size_t len) NC_REQUIRES(nc__lib_lock)
{
	if (own_fd() >= 0)
		close(pt.fd); /* (a forked child's copy too; the name stays its parent's) */
	unbind();
	pt.fd = -1;
	pt.outstanding = 0;
	pt.pid = getpid();
	struct stat st;
	if (stat(pt.peer.sun_path, &st) != 0 || !S_ISSOCK(st.st_mode)) {
		/* nothing bound for it until ptp4l is there */
		nc__fmt(why, len, "%s: %s", pt.peer.sun_path,
			errno == EACCES ? "permission denied" : "no ptp4l there");
		return -1;
	}
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		nc__fmt(why, len, "no socket (%s)", strerror(errno));
		return -1;
	}
	const char *x = secure_getenv("XDG_RUNTIME_DIR");
	const char *dir = x && x[0] == '/' && strlen(x) < 60 ? x : geteuid() == 0 ? "/run" : "/tmp";
	struct sockaddr_un me = {.sun_family = AF_UNIX};
	nc__fmt(me.sun_path, sizeof(me.sun_path), "%s/nanoclock-ptp.%d.%x", dir, (int)getpid(),
		(unsigned)mix());
	if (bind(fd, (struct sockaddr *)&me, sizeof(me)) != 0) {
		nc__fmt(why, len, "cannot bind %s (%s)", me.sun_path, strerror(errno));
		close(fd);
		return -1;
	}
	nc__copy(pt.own, sizeof(pt.own), me.sun_path);
	if (connect(fd, (struct sockaddr *)&pt.peer, sizeof(pt.peer)) != 0 || fstat(fd, &st) != 0) {
		int e = errno;
		nc__fmt(why, len, "%s: %s", pt.peer.sun_path,
			e == ENOENT || e == ECONNREFUSED ? "no ptp4l there"
			: e == EACCES			  ? "permission denied (ptp4l's socket is root's)"
							  : strerror(e));
		close(fd);
		unbind();
		return -1;
	}
	pt.fd = fd;
	pt.dev = st.st_dev;
	pt.ino = st.st_ino;
	nc__copy(own_at_exit, sizeof(own_at_exit), pt.own);
	own_pid_at_exit = getpid();
	if (!pt.at_exit)
		pt.at_exit = atexit(remove_own) == 0;
	return 0;
}

static int pt_open(const char *arg, char *why, size_t len) NC_REQUIRES(nc__lib_lock)
{
	const char *path = arg[0] ? arg : "/var/run/ptp4l";
	if (strlen(path) >= sizeof(pt.peer.sun_path)) {
		nc__fmt(why, len, "a socket path over %zu bytes", sizeof(pt.peer.sun_path) - 1);
		return -1;
	}
	memset(&pt.peer, 0, sizeof(pt.peer));
	pt.peer.sun_family = AF_UNIX;
	nc__copy(pt.peer.sun_path, sizeof(pt.peer.sun_path), path);
	/* no ptp4l yet is no failure: each refresh tries again (named by
	 * NANOCLOCK_UTC_SOURCE, the source is kept; in the auto order the
	 * first answer decides) */
	(void)connect_socket(why, len);
	return 0;
}

static void send_requests(void) NC_REQUIRES(nc__lib_lock)
{
	pt.seq0 = (uint16_t)mix();
	memset(&pt.figs, 0, sizeof(pt.figs));
	pt.sent_tick = nc__counter_read();
	pt.sent_raw = nc__ref.raw();
	pt.sent_real = nc__ref.real();
	pt.outstanding = 1;
	for (int q = 0; q < NC__PTP_NQ; q++) {
		unsigned char req[HDR_LEN + 6 + 64];
		size_t n = nc__utc_ptp_request(req, sizeof(req), q, (uint16_t)(pt.seq0 + q),
					       (uint16_t)getpid());
		if (send(pt.fd, req, n, MSG_NOSIGNAL) != (ssize_t)n)
			pt.outstanding = 0;
	}
}

/* the PHC ptp4l says its port following the master uses (-1: it does not
 * say: linuxptp before 4) */
static int phc_of(const struct nc__ptp_figs *g)
{
	for (int i = 0; i < g->hw_n; i++)
		if (g->hw[i].port == g->port_num)
			return g->hw[i].phc_index >= 0 ? g->hw[i].phc_index : -1;
	return -1;
}

/* The answers to the outstanding requests, waiting at most wait_ms: 1 with
 * *f, 0 without (why in f->why when there is one) */
static int take_replies(struct nc__utc_fix *f, double wait_ms) NC_REQUIRES(nc__lib_lock)
{
	int64_t until = nc__ref.raw() + (int64_t)(wait_ms * 1e6);
	for (;;) {
		unsigned char buf[1500];
		ssize_t n = recv(pt.fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int64_t left = until - nc__ref.raw();
			if (left <= 0)
				return 0;
			struct pollfd pf = {pt.fd, POLLIN, 0};
			(void)poll(&pf, 1, (int)((left + 999999) / 1000000));
			continue;
		}
		if (n < 0) {
			pt.outstanding = 0;
			nc__fmt(f->why, sizeof(f->why), "ptp4l does not answer on %s (%s)",
				pt.peer.sun_path, strerror(errno));
			return 0;
		}
		char why[160];
		int r = nc__utc_ptp_take(&pt.figs, buf, (size_t)n, pt.seq0, why, sizeof(why));
		if (r > 0)
			continue; /* an earlier exchange's */
		if (r < 0) {
			/* this exchange's answer, refused: no figures from it */
			pt.outstanding = 0;
			memset(f, 0, sizeof(*f));
			f->status = NC_UTC_UNKNOWN;
			f->drift_ppm = -1;
			nc__fmt(f->why, sizeof(f->why), "%s: refused", why);
			return 1;
		}
		if (!(pt.figs.got & (1u << NC__PTP_STATUS)))
			continue; /* more to come (TIME_STATUS_NP is answered last) */
		pt.outstanding = 0;
		struct nc__phc_meas m;
		int hw = on_phc(&pt.figs);
		if (hw)
			(void)nc__utc_phc_measure(pt.figs.iface, phc_of(&pt.figs), &m);
		int64_t now_real = nc__ref.real();
		nc__utc_ptp_leap(now_real, (pt.figs.time_flags & TF_LEAP) != 0, &pt.leap_at, &pt.leap_until);
		pt.figs.leap_at_ns = pt.leap_at;
		pt.figs.leap_until_ns = pt.leap_until;
		/* (times from the wire: only plausible ones subtracted) */
		int64_t ing = pt.figs.ingress_ns;
		if (ing > 0 && ing < INT64_MAX / 2 && pt.last_ingress > 0)
			nc__utc_ptp_cadence(ing - pt.last_ingress, &pt.cadence, pt.cad_win, &pt.cad_n);
		pt.last_ingress = ing > 0 && ing < INT64_MAX / 2 ? ing : 0;
		pt.figs.cadence_ns = pt.cadence;
		(void)nc__utc_ptp_fix(&pt.figs, hw ? &m : NULL, now_real, f);
		/* the PHC's index asked again after anything but a bound (a
		 * driver reloaded may have numbered the clocks anew) */
		if (hw && f->status != NC_UTC_SYNCHRONISED)
			nc__utc_phc_close();
		/* The figures held when ptp4l measured, up to a sync interval
		 * (or, its master silent, much longer) before they were asked
		 * for: dated then, so that the bound grows from then and the
		 * freshness runs from then.  With a PHC, the age is on the
		 * PHC's own time (no step of the system clock in it), from the
		 * counter before its reading; else on CLOCK_REALTIME's, which
		 * core.c knows a step may distort. */
		double ns_tick = 1e9 / nc__rate_true_hz();
		f->q_tick = pt.sent_tick;
		if (f->status != NC_UTC_UNKNOWN) {
			int64_t age;
			if (hw) {
				f->q_tick = m.at_tick;
				age = (m.at_ns - (int64_t)m.off_ns) - pt.figs.ingress_ns;
			} else {
				age = pt.sent_real - f->as_of_ns;
				f->q_by_realtime = 1;
			}
			if (age > 0)
				f->q_tick -= (uint64_t)((double)age / ns_tick + 1);
		}
		return 1;
	}
}

static int pt_ask(struct nc__utc_fix *f, double wait_ms) NC_REQUIRES(nc__lib_lock)
{
	memset(f, 0, sizeof(*f));
	/* a forked child, a descriptor no longer the library's, or ptp4l
	 * restarted (its socket made again: the connection is gone): anew */
	if (own_fd() < 0 || pt.pid != getpid()) {
		char why[160];
		if (connect_socket(why, sizeof(why)) != 0) {
			nc__fmt(f->why, sizeof(f->why), "%s", why);
			return 0;
		}
	}
	int got = 0;
	if (pt.outstanding) {
		got = take_replies(f, 0);
		if (!got && pt.outstanding && nc__ref.raw() - pt.sent_raw > 3000000000)
			pt.outstanding = 0; /* a request dropped: asked again */
	}
	if (!got && wait_ms > 0) {
		if (!pt.outstanding)
			send_requests();
		if (pt.outstanding)
			got = take_replies(f, wait_ms);
		if (!got && !f->why[0])
			nc__fmt(f->why, sizeof(f->why), "ptp4l did not answer on %s within %.0f ms",
				pt.peer.sun_path, wait_ms);
	}
	if (!pt.outstanding) {
		send_requests();
		/* ptp4l restarted: its new socket is another file, and a send
		 * on the old connection fails; connected again next time */
		if (!pt.outstanding && pt.fd >= 0) {
			close(pt.fd);
			pt.fd = -1;
			unbind();
		}
	}
	return got;
}

static void pt_close(void) NC_REQUIRES(nc__lib_lock)
{
	if (own_fd() >= 0 && pt.pid == getpid())
		close(pt.fd);
	pt.fd = -1;
	pt.outstanding = 0;
	unbind();
	nc__utc_phc_close();
}

static void pt_where(char *out, size_t len) NC_REQUIRES(nc__lib_lock)
{
	nc__fmt(out, len, "%s", pt.peer.sun_path);
}

const struct nc__utc_source nc__utc_ptp = {"ptp", NC_UTC_SRC_PTP, pt_open, pt_ask, pt_close, pt_where};
