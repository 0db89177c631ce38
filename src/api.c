/* SPDX-License-Identifier: MIT */
/* The public entry points of the clocks: the fast path's way into the
 * library, the getters and setters.  Reads (nc_impl_*_slow,
 * nc_ticks_to_unix_ns) only initialise and read: they never wait, never
 * call the application, and are async-signal-safe after the first call.
 * Everything else enters (nc__enter), works under nc__lib_lock, and
 * delivers queued reports when it leaves. */
#include "init.h"
#include "base/latch.h"
#include "base/lock.h"
#include "clock/events.h"
#include "clock/now.h"
#include "clock/upkeep.h"
#include "clock/utc.h"
#include "clock/wall.h"
#include "counter/counter.h"
#include "rate/rate.h"
#include "shared/shared.h"

#include "nanoclock_info.h"
#include "nanoclock_shared.h"

#include <string.h>

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
int nc_init(void)
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
static void rate_info(struct nc_info *o)
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
	nc__leave();
	return 0;
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
	nc__lock();
	int rc = nc__shared_write(path, sync_verdict, sync_max_shift_ns, sync_ncpus, why, whylen);
	nc__unlock();
	nc__leave();
	return rc;
}
