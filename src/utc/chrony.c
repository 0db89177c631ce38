/* SPDX-License-Identifier: MIT */
/*
 * chronyd's own bound, over its command port (UDP, 127.0.0.1:323 by
 * default; no privilege needed): the tracking report, the figures
 * `chronyc tracking` prints.  The bound on |CLOCK_REALTIME - UTC| when
 * chronyd answered is the correction it is still slewing in (|current
 * correction|: "System time ... fast of NTP time") plus half the root delay
 * plus the root dispersion (which chronyd grows from its last update to
 * the moment it answers); it grows after that at chronyd's skew plus its
 * residual frequency plus its default maximum clock error (1 ppm), as
 * chronyd grows its own dispersion.  The correction is also what chronyd
 * may still slew the system clock by (the Unix-time line follows the
 * clock's rate a period late).
 *
 * The exchange never waits inside a refresh: each refresh takes the
 * answer to the request the previous one sent (MSG_DONTWAIT) and sends the
 * next.  A reply is taken only if it is the tracking report answering
 * this request (its sequence number, chosen afresh each time), of the
 * protocol's version 6, and plausible; anything else is refused with the
 * reason, and core.c keeps the last good figures, widening them (never a
 * stale or narrower interval).  chronyd serving only its own clock (local
 * stratum, reference id LOCAL) or saying it is not synchronised gives no
 * bound.  The protocol is chrony's candm.h (request 33, reply 5).
 */
#include "utc.h"
#include "../base/fmt.h"
#include "../counter/counter.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PROTO_VERSION 6
#define PKT_REQUEST 1
#define PKT_REPLY 2
#define REQ_TRACKING 33
#define RPY_TRACKING 5
/* a request's header is 20 bytes; it is padded to the reply's length
 * (chronyd refuses a shorter one: no amplification) */
#define REPLY_LEN 104
#define REF_ID_LOCAL 0x7f7f0101u
#define LEAP_UNSYNC 3
#define MAX_CLOCK_ERROR_PPM 1.0 /* chronyd's default maxclockerror */

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static unsigned be16(const unsigned char *p) { return (unsigned)p[0] << 8 | p[1]; }

/* chrony's 32-bit float: a 7-bit signed exponent and a 25-bit signed
 * coefficient, coef * 2^(exp - 25) */
static double cfloat(uint32_t x)
{
	int32_t e = (int32_t)(x >> 25);
	if (e >= 64)
		e -= 128;
	int32_t c = (int32_t)(x & 0x1ffffffu);
	if (c >= (1 << 24))
		c -= 1 << 25;
	return ldexp((double)c, e - 25);
}

size_t nc__utc_chrony_request(unsigned char *p, size_t len, uint32_t seq)
{
	if (len < REPLY_LEN)
		return 0;
	memset(p, 0, REPLY_LEN);
	p[0] = PROTO_VERSION;
	p[1] = PKT_REQUEST;
	p[4] = REQ_TRACKING >> 8;
	p[5] = REQ_TRACKING & 0xff;
	p[8] = (unsigned char)(seq >> 24); /* after the command and the attempt */
	p[9] = (unsigned char)(seq >> 16);
	p[10] = (unsigned char)(seq >> 8);
	p[11] = (unsigned char)seq;
	return REPLY_LEN;
}

int nc__utc_chrony_decode(const unsigned char *p, size_t n, uint32_t seq, int64_t now_real_ns,
			  struct nc__utc_fix *f)
{
	memset(f, 0, sizeof(*f));
	f->status = NC_UTC_UNKNOWN;
	f->drift_ppm = -1;
	if (n < 28 || p[1] != PKT_REPLY || be16(p + 4) != REQ_TRACKING) {
		nc__fmt(f->why, sizeof(f->why), "chronyd's reply is not a reply to a tracking request "
			"(%zu bytes)", n);
		return -1;
	}
	if (be32(p + 16) != seq) {
		nc__fmt(f->why, sizeof(f->why), "a reply to another request (sequence %u, asked %u)",
			be32(p + 16), seq);
		return -1;
	}
	if (p[0] != PROTO_VERSION) {
		nc__fmt(f->why, sizeof(f->why), "chronyd speaks command protocol version %u, this "
			"library %u", p[0], PROTO_VERSION);
		return -1;
	}
	if (be16(p + 8) != 0) {
		unsigned st = be16(p + 8);
		nc__fmt(f->why, sizeof(f->why), "chronyd refused the request (status %u%s)", st,
			st == 2 ? ": not allowed from here" : st == 18 || st == 19 ? ": a packet it cannot read" : "");
		return -1;
	}
	if (be16(p + 6) != RPY_TRACKING || n < REPLY_LEN) {
		nc__fmt(f->why, sizeof(f->why), "chronyd's reply is not a tracking report (type %u, "
			"%zu bytes)", be16(p + 6), n);
		return -1;
	}
	const unsigned char *d = p + 28;
	uint32_t ref_id = be32(d);
	unsigned stratum = be16(d + 24), leap = be16(d + 26);
	uint32_t sec_hi = be32(d + 28), sec_lo = be32(d + 32), nsec = be32(d + 36);
	int64_t sec = sec_hi == 0x7fffffffu ? (int64_t)sec_lo : (int64_t)((uint64_t)sec_hi << 32 | sec_lo);
	double corr = cfloat(be32(d + 40)), resid = cfloat(be32(d + 56)), skew = cfloat(be32(d + 60));
	double delay = cfloat(be32(d + 64)), disp = cfloat(be32(d + 68));
	if (leap == LEAP_UNSYNC || stratum == 0 || sec == 0) {
		nc__fmt(f->why, sizeof(f->why), "chronyd is not synchronised");
		return 0;
	}
	if (ref_id == REF_ID_LOCAL) {
		nc__fmt(f->why, sizeof(f->why), "chronyd serves its own clock (local stratum %u), not "
			"one synchronised to UTC", stratum);
		return 0;
	}
	int64_t ref_ns = sec < (int64_t)1 << 40 ? sec * 1000000000 + (int64_t)nsec : 0;
	/* what the reply says of UTC: within bound of CLOCK_REALTIME when
	 * chronyd answered, so its reference time (its clock's last update)
	 * cannot be later than that; and chronyd grows its root dispersion
	 * from that update by at least its maximum clock error (1 ppm by
	 * default): a dispersion under a hundredth of that over the reference
	 * time's age is no figure chronyd states (a month-old reference time
	 * with a 1 us bound).  An old reference time is otherwise honest:
	 * chronyd polls up to every 1024 s by default, more when set. */
	double bound = fabs(corr) + delay / 2 + disp;
	const char *bad = NULL;
	if (!(fabs(corr) <= 1000) || !(delay >= 0 && delay <= 64) || !(disp >= 0 && disp <= 64))
		bad = "a correction or root distance out of range";
	else if (!(skew >= 0 && skew < 1e6) || !(fabs(resid) < 1e6))
		bad = "a skew or residual frequency out of range";
	else if (leap > 3 || stratum > 15 || nsec >= 1000000000u)
		bad = "a leap status, stratum or time out of range";
	else if (!(bound > 0))
		bad = "a bound of 0";
	else if (sec < 0 || sec >= (int64_t)1 << 40 || (double)(ref_ns - now_real_ns) > bound * 1e9)
		bad = "a reference time in the future";
	else if (disp < (double)(now_real_ns - ref_ns) * 1e-9 * MAX_CLOCK_ERROR_PPM * 1e-6 / 100)
		bad = "a root dispersion too small for the reference time's age";

	if (bad) {
		nc__fmt(f->why, sizeof(f->why), "chronyd's tracking report has %s: refused", bad);
		return -1;
	}
	f->status = NC_UTC_SYNCHRONISED;
	f->bound_ns = bound * 1e9;
	f->slew_ns = fabs(corr) * 1e9;
	f->drift_ppm = skew + fabs(resid) + MAX_CLOCK_ERROR_PPM;
	f->as_of_ns = ref_ns;
	nc__fmt(f->why, sizeof(f->why), "chronyd: stratum %u, correction %+.0f us, root delay %.0f "
		"us, root dispersion %.0f us, skew %.3f ppm", stratum, corr * 1e6, delay * 1e6,
		disp * 1e6, skew);
	return 0;
}

/* ---- the source: one connected UDP socket, one request outstanding ----
 * Guarded by nc__lib_lock (core.c opens, asks and closes it under it). */
static struct {
	int fd;
	pid_t pid;             /* the process that opened fd (a forked child reopens) */
	dev_t dev;             /* fd's socket (nc__utc_fd_ours) */
	ino_t ino;
	struct sockaddr_storage addr;
	socklen_t alen;
	char where[80];
	uint32_t seq;
	int outstanding;
	uint64_t sent_tick;
	int64_t sent_raw;
	uint32_t stir;
} ch NC_GUARDED_BY(nc__lib_lock) = {.fd = -1};

static int parse_addr(const char *arg, char *why, size_t len) NC_REQUIRES(nc__lib_lock)
{
	char host[64] = "127.0.0.1";
	unsigned long port = 323;
	if (arg[0] && nc__host_port(arg, host, sizeof(host), &port, why, len) != 0)
		return -1;
	memset(&ch.addr, 0, sizeof(ch.addr));
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ch.addr;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ch.addr;
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		ch.alen = sizeof(*a4);
	} else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		ch.alen = sizeof(*a6);
	} else {
		nc__fmt(why, len, "'%.60s' is not a numeric address (no name is looked up)", host);
		return -1;
	}
	nc__fmt(ch.where, sizeof(ch.where), strchr(host, ':') ? "[%s]:%lu" : "%s:%lu", host, port);
	return 0;
}

/* the socket's descriptor if it still is the library's, else forgotten
 * (never closed: the program's own now) */
static int own_fd(void) NC_REQUIRES(nc__lib_lock)
{
	if (ch.fd >= 0 && !nc__utc_fd_ours(ch.fd, ch.dev, ch.ino)) {
		ch.fd = -1;
		ch.outstanding = 0;
	}
	return ch.fd;
}

static int connect_socket(void) NC_REQUIRES(nc__lib_lock)
{
	if (own_fd() >= 0)
		close(ch.fd);
	ch.outstanding = 0;
	ch.pid = getpid();
	ch.fd = socket(ch.addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (ch.fd < 0)
		return -1;
	struct stat st;
	if (fstat(ch.fd, &st) != 0 || connect(ch.fd, (struct sockaddr *)&ch.addr, ch.alen) != 0) {
		close(ch.fd);
		ch.fd = -1;
		return -1;
	}
	ch.dev = st.st_dev;
	ch.ino = st.st_ino;
	return 0;
}

static int ch_open(const char *arg, char *why, size_t len) NC_REQUIRES(nc__lib_lock)
{
	if (parse_addr(arg, why, len) != 0)
		return -1;
	if (connect_socket() != 0) {
		nc__fmt(why, len, "no socket to %s (%s)", ch.where, strerror(errno));
		return -1;
	}
	return 0;
}

/* a sequence number nobody else on the machine can foresee easily */
static uint32_t next_seq(void) NC_REQUIRES(nc__lib_lock)
{
	uint64_t x = nc__counter_read() ^ ((uint64_t)ch.pid << 32) ^ ((uint64_t)++ch.stir << 48);
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return (uint32_t)x;
}

static void send_request(void) NC_REQUIRES(nc__lib_lock)
{
	unsigned char req[REPLY_LEN];
	ch.seq = next_seq();
	size_t n = nc__utc_chrony_request(req, sizeof(req), ch.seq);
	ch.sent_tick = nc__counter_read();
	ch.sent_raw = nc__ref.raw();
	ch.outstanding = send(ch.fd, req, n, MSG_NOSIGNAL) == (ssize_t)n;
}

/* The answer to the outstanding request, waiting at most wait_ms: 1 with
 * *f, 0 without (why in f->why when there is one) */
static int take_reply(struct nc__utc_fix *f, double wait_ms) NC_REQUIRES(nc__lib_lock)
{
	int64_t until = nc__ref.raw() + (int64_t)(wait_ms * 1e6);
	int other = 0; /* replies to other requests seen (late, or spoofed) */
	for (;;) {
		unsigned char buf[512];
		ssize_t n = recv(ch.fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int64_t left = until - nc__ref.raw();
			if (left <= 0) {
				if (other)
					nc__fmt(f->why, sizeof(f->why), "%d replies to other requests than this "
						"one's (sequence) refused", other);
				return 0;
			}
			struct pollfd pf = {ch.fd, POLLIN, 0};
			(void)poll(&pf, 1, (int)((left + 999999) / 1000000));
			continue;
		}
		if (n < 0) {
			ch.outstanding = 0;
			nc__fmt(f->why, sizeof(f->why), "chronyd does not answer on %s (%s)", ch.where,
				errno == ECONNREFUSED ? "nothing listens there" : "the socket failed");
			return 0;
		}
		struct nc__utc_fix g;
		if (nc__utc_chrony_decode(buf, (size_t)n, ch.seq, nc__ref.real(), &g) != 0) {
			/* another request's answer (late) is not a reason to stop */
			if (n >= 20 && be32(buf + 16) != ch.seq) {
				other++;
				continue;
			}
			/* this request's answer, refused: an answer all the same, and
			 * no figures from it (free-running from the last good ones) */
			ch.outstanding = 0;
			*f = g;
			return 1;
		}
		ch.outstanding = 0;
		*f = g;
		/* the figures held when chronyd answered: after the request left */
		f->q_tick = ch.sent_tick;
		return 1;
	}
}

static int ch_ask(struct nc__utc_fix *f, double wait_ms) NC_REQUIRES(nc__lib_lock)
{
	memset(f, 0, sizeof(*f));
	/* a forked child: a socket of its own; a socket no longer the
	 * library's (closed by the program, the number reused): a new one */
	if (own_fd() < 0 || ch.pid != getpid()) {
		if (connect_socket() != 0) {
			nc__fmt(f->why, sizeof(f->why), "no socket to %s", ch.where);
			return 0;
		}
	}
	int got = 0;
	if (ch.outstanding) {
		got = take_reply(f, 0);
		/* a request chronyd dropped (or a reply lost): asked again */
		if (!got && ch.outstanding && nc__ref.raw() - ch.sent_raw > 3000000000)
			ch.outstanding = 0;
	}
	if (!got && wait_ms > 0) {
		if (!ch.outstanding)
			send_request();
		if (ch.outstanding)
			got = take_reply(f, wait_ms);
		if (!got && !f->why[0])
			nc__fmt(f->why, sizeof(f->why), "chronyd did not answer on %s within %.0f ms",
				ch.where, wait_ms);
	}
	/* one request left for the next refresh to take */
	if (!ch.outstanding)
		send_request();
	return got;
}

static void ch_close(void) NC_REQUIRES(nc__lib_lock)
{
	if (own_fd() >= 0)
		close(ch.fd);
	ch.fd = -1;
	ch.outstanding = 0;
}

static void ch_where(char *out, size_t len) NC_REQUIRES(nc__lib_lock)
{
	nc__fmt(out, len, "%s", ch.where);
}

const struct nc__utc_source nc__utc_chrony = {"chrony", NC_UTC_SRC_CHRONY, ch_open, ch_ask, ch_close,
					      ch_where};
