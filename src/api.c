/* SPDX-License-Identifier: MIT */
/* The public entry points of the clocks: the fast path's way into the
 * library, the getters and setters.  Reads (nc_impl_*_slow,
 * nc_ticks_to_unix_ns) only initialise and read: they never wait, never
 * call the application, and are async-signal-safe after the first call.
 * Everything else enters (nc__enter), works under nc__lib_lock, and
 * delivers queued reports when it leaves. */
#include "init.h"
#include "base/fmt.h"
#include "base/latch.h"
#include "base/lock.h"
#include "base/refclock.h"
#include "clock/events.h"
#include "clock/now.h"
#include "clock/recent.h"
#include "clock/upkeep.h"
#include "clock/wall.h"
#include "counter/counter.h"
#include "rate/rate.h"
#include "shared/shared.h"
#include "utc/utc.h"

#include "nanoclock_info.h"
#include "nanoclock_shared.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* ---- reads ---- */
uint64_t nc_impl_now_slow(void)
{
	nc__ensure_init();
	nc__slow_calls++;
	return nc__timeline_read(&nc__now_timeline);
}

int64_t nc_impl_unix_slow(void)
{
	nc__ensure_init();
	nc__slow_calls++;
	return (int64_t)nc__timeline_read(&nc__wall_timeline);
}

/* The first call chooses and asks the source (under the lock, as a first
 * call initialises); later ones only read, never wait. */
int nc_impl_utc_slow(struct nc_utc *u)
{
	int e = errno; /* a read leaves errno as it was (a signal handler's caller) */
	nc__ensure_init();
	nc__slow_calls++;
	if (!nc__utc_started()) {
		nc__lock();
		nc__utc_start(nc__init_config());
		nc__unlock();
	}
	int st = nc__utc_read(u);
	errno = e;
	return st;
}

uint64_t nc_impl_ticks_slow(int how)
{
	nc__ensure_init();
	nc__slow_calls++;
	uint64_t k = nc__counter_kind();
	if (nc_impl_hw(k))
		return how == 0 ? nc_impl_raw(k) : how == 1 ? nc_impl_fenced(k) : nc_impl_fenced_end(k);
	const struct nc__counter *c = nc__counter();
	return how ? c->read_ordered(c->ctx) : c->read(c->ctx);
}

uint64_t nc_impl_ticks_to_ns_slow(uint64_t ticks)
{
	nc__ensure_init();
	nc__slow_calls++;
	uint64_t i, f;
	nc__latch_read_conv(&i, &f);
	return nc_impl_scale(ticks, i, f);
}

int64_t nc_ticks_to_unix_ns(uint64_t ticks)
{
	nc__ensure_init();
	struct nc__epoch e;
	uint64_t kind;
	nc__line_read(&nc_impl_g.wall, &e, &kind);
	return (int64_t)nc__epoch_value(&e, ticks); /* the tie, extended either way */
}

/* ---- everything else ---- */
NC_START int nc_init(void)
{
	nc__enter();
	nc__leave();
	return nc__init_status();
}

const char *nc_counter_name(void)
{
	nc__enter();
	const char *n = nc__counter()->name;
	nc__leave();
	return n;
}

/* The rate's state, as nc_get_info has it. */
static void rate_info(struct nc_info *o) NC_EXCLUDES(nc__lib_lock)
{
	nc__enter();
	nc__lock();
	nc__rate_info(o);
	nc__unlock();
	nc__leave();
}

double nc_ticks_per_second(void)
{
	struct nc_info o;
	rate_info(&o);
	return o.hz;
}

double nc_ticks_per_second_uncertainty_ppm(void)
{
	struct nc_info o;
	rate_info(&o);
	return o.hz_uncertainty_ppm;
}

const char *nc_ticks_per_second_source(void)
{
	struct nc_info o;
	rate_info(&o);
	return o.hz_source;
}

void nc_get_conv(nc_conv_t *out)
{
	nc__enter();
	nc__lock();
	nc__rate_conv(out);
	nc__unlock();
	nc__leave();
}

uint64_t nc_ns_to_ticks(uint64_t ns)
{
	nc_conv_t c;
	nc_get_conv(&c);
	return nc_conv_ns_to_ticks(&c, ns);
}

int nc_set_unix_refresh_ms(double ms)
{
	if (!(ms >= 1 && ms <= 60000))
		return NC_ERANGE;
	nc__enter();
	nc__lock();
	nc__wall_set_period(ms);
	nc__unlock();
	nc__leave();
	return 0;
}

int nc_unix_retie(void)
{
	nc__enter();
	nc__lock();
	nc__wall_retie();
	nc__unlock();
	nc__leave();
	return 0;
}

int nc_get_unix_status(struct nc_unix_status *st)
{
	if (!st)
		return NC_EINVAL;
	nc__enter();
	(void)nc_unix_ns(); /* refresh a stale tie first, as a reader would */
	memset(st, 0, sizeof(*st));
	struct nc__kclock k;
	int have_k;
	nc__lock();
	nc__events_check();
	nc__wall_status(st, &k, &have_k);
	nc__unlock();
	nc__utc_decode(&k, have_k, st->tie_error_ns, st);
	/* the error from UTC is the bound nc_utc_now gives: what the machine's
	 * source really knows, not the kernel's maxerror alone (timesyncd
	 * writes 0 there while milliseconds remain to be slewed) */
	struct nc_utc u;
	int ust = nc_utc_now(&u);
	if (ust == NC_UTC_SYNCHRONISED || ust == NC_UTC_FREE_RUNNING) {
		st->utc_error_ns = (double)(u.latest_ns - u.unix_ns);
		st->why[0] = 0;
	} else {
		struct nc_utc_status us;
		nc__lock();
		nc__utc_status(&us);
		nc__unlock();
		st->utc_error_ns = -1;
		nc__copy(st->why, sizeof(st->why), us.why);
	}
	nc__leave();
	return 0;
}

/* ---- a calibration to study (nanoclock_info.h) ---- */
int nc_measure_rate(double window_ms, struct nc_rate_measurement *out)
{
	if (!out || !(window_ms >= 0.01 && window_ms <= 10000))
		return NC_EINVAL;
	memset(out, 0, sizeof(*out));
	nc__enter();
	/* no lock: the calibration reads the counter and the reference and
	 * keeps its state on this stack */
	struct nc__calib_io io = {(void *)nc__counter(), nc__counter_io_read, nc__ref_io_raw};
	struct nc__calib c;
	int rc = nc__calibrate(&io, (int64_t)(window_ms * 1e6), &c);
	if (rc == 0) {
		out->hz = c.hz;
		out->uncertainty_ppm = c.ppm;
		out->worst_ppm = c.worst_ppm;
		out->sigma_ns = c.sigma_ns;
		out->window_ms = (double)c.window_ns / 1e6;
		out->brackets_used = c.n_used;
		out->brackets_total = c.n_total;
	}
	nc__leave();
	return rc;
}

/* ---- UTC bounds ---- */
int nc_utc_start(void)
{
	nc__enter();
	nc__lock();
	int rc = nc__utc_start(nc__init_config());
	nc__unlock();
	nc__leave();
	return rc;
}

void nc_utc_stop(void)
{
	nc__enter();
	nc__lock();
	nc__utc_stop();
	nc__unlock();
	nc__leave();
}

int nc_get_utc_status(struct nc_utc_status *st)
{
	if (!st)
		return NC_EINVAL;
	nc__enter();
	struct nc_utc r;
	(void)nc_utc_now(&r); /* starts it, and refreshes a stale tie as a reader would */
	nc__lock();
	nc__utc_status(st);
	nc__unlock();
	nc__leave();
	return 0;
}

int nc_utc_publish_clockbound(const char *path, char *why, size_t whylen)
{
	char w[256] = "";
	if (!path || path[0] != '/') {
		if (why && whylen)
			nc__copy(why, whylen, "not an absolute path");
		return NC_EINVAL;
	}
	nc__enter();
	/* what this process publishes is never its source (its figures would
	 * feed themselves): set before the source is chosen */
	nc__lock();
	nc__utc_clockbound_own(path);
	nc__unlock();
	struct nc_utc r;
	(void)nc_utc_now(&r); /* starts the source; a due refresh asks it */
	struct nc__clockbound_out o;
	nc__lock();
	int loop = nc__utc_clockbound_reads(path);
	nc__utc_clockbound_figures(&o);
	nc__unlock();
	int rc;
	if (loop) { /* chosen before this call named it (NANOCLOCK_UTC_SOURCE or auto) */
		nc__fmt(w, sizeof(w), "%s is this process's UTC source: publishing there would feed its "
				      "own figures back; left alone", path);
		errno = EINVAL;
		rc = NC_EINVAL;
	} else {
		rc = nc__utc_clockbound_publish(path, &o, w, sizeof(w)) == 0 ? 0 : NC_ESYS;
		if (rc == 0) {
			nc__lock();
			nc__utc_clockbound_own(path); /* made anew: its new file */
			nc__unlock();
		}
	}
	int e = errno;
	if (why && whylen)
		nc__copy(why, whylen, w);
	nc__leave();
	errno = e;
	return rc;
}

const char *nc_utc_status_name(int status)
{
	static const char *const names[] = {"unknown", "synchronised", "free-running", "disrupted"};
	return status >= 0 && status <= 3 ? names[status] : "?";
}

const char *nc_utc_source_name(int source)
{
	static const char *const names[] = {"none",	"adjtimex", "chrony",
					    "clockbound", "vmclock",  "ptp"};
	return source >= 0 && source <= 5 ? names[source] : "?";
}

/* Sleeps in steps no longer than what is left: earliest_ns advances at
 * about the clock's rate less the bound's growth, so the wait ends within
 * a few steps of the moment the condition holds. */
int nc_utc_wait_past(int64_t unix_ns, double timeout_s)
{
	if (!(timeout_s >= 0))
		return NC_EINVAL;
	uint64_t end = nc_now_ns() + (timeout_s > 1e9 ? (uint64_t)1e18 : (uint64_t)(timeout_s * 1e9));
	for (;;) {
		struct nc_utc u;
		int st = nc_utc_now(&u);
		if (st != NC_UTC_SYNCHRONISED && st != NC_UTC_FREE_RUNNING)
			return NC_EUNKNOWN;
		if (u.earliest_ns > unix_ns)
			return 0;
		uint64_t now = nc_now_ns();
		if (now >= end)
			return NC_ETIMEDOUT;
		uint64_t left = (uint64_t)(unix_ns - u.earliest_ns) + 1;
		if (left > end - now)
			left = end - now;
		struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
		}
	}
}

int nc_upkeep_start(void)
{
	nc__enter();
	nc__lock();
	int rc = nc__upkeep_start();
	nc__unlock();
	nc__leave();
	return rc;
}

int nc_upkeep_stop(void)
{
	nc__enter();
	nc__lock();
	int rc = nc__upkeep_stop();
	nc__unlock();
	nc__leave();
	return rc;
}

/* ---- the shared record ---- */
int nc_get_shared_status(struct nc_shared_status *st)
{
	if (!st)
		return NC_EINVAL;
	nc__enter();
	nc__lock();
	nc__shared_status(st);
	nc__unlock();
	nc__leave();
	return 0;
}

int nc_shared_publish(const char *path, int sync_verdict, double sync_max_shift_ns,
		      uint32_t sync_ncpus, char *why, size_t whylen)
{
	char buf[192];
	if (!why || whylen == 0) {
		why = buf;
		whylen = sizeof(buf);
	}
	why[0] = 0;
	nc__enter();
	nc__counter_complete(); /* the record's facts */
	nc__lock();
	int rc = nc__shared_write(path, sync_verdict, sync_max_shift_ns, sync_ncpus, why, whylen);
	nc__unlock();
	nc__leave();
	return rc;
}

/* ---- the coarse clock (clock/recent.c) ---- */
static __thread uint64_t recent_seen __attribute__((tls_model("initial-exec")));

uint64_t nc_recent_ns(void)
{
	uint64_t v;
	if (!nc__recent_now(&v))
		v = nc_now_ns();
	/* never behind what this thread was handed (across the thread's start
	 * and stop between ticks and full reads) */
	if (v < recent_seen)
		return recent_seen;
	recent_seen = v;
	return v;
}

int64_t nc_recent_unix_ns(void)
{
	int64_t v;
	return nc__recent_unix(&v) ? v : nc_unix_ns();
}

int nc_get_recent_status(struct nc_recent_status *st)
{
	if (!st)
		return NC_EINVAL;
	nc__recent_status(st);
	return 0;
}
