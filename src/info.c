/* SPDX-License-Identifier: MIT */
/* What the library decided, for the application and `nanoclock info`:
 * nc_get_info, nc_seconds_before_wrap, and the deferred perf-page source.
 * Each piece comes from the module that owns it, under nc__lib_lock. */
#include "init.h"
#include "base/fmt.h"
#include "base/lock.h"
#include "base/log.h"
#include "clock/events.h"
#include "clock/upkeep.h"
#include "clock/wall.h"
#include "counter/counter.h"
#include "rate/rate.h"

#include <stdio.h>
#include <string.h>

/* Seconds until either the counter wraps or a nanosecond result no longer
 * fits in 64 bits, from the counter's current value (lock held). */
static uint64_t before_wrap(uint64_t t, uint64_t now_ns) NC_REQUIRES(nc__lib_lock)
{
	const struct nc__counter *c = nc__counter();
	uint64_t left = c->bits >= 64 ? UINT64_MAX - t
				       : ((UINT64_C(1) << c->bits) - 1) - (t & ((UINT64_C(1) << c->bits) - 1));
	double s = (double)left / nc__rate_hz();
	double ns_room = ((double)UINT64_MAX - (double)now_ns) / 1e9;
	if (ns_room < s)
		s = ns_room;
	return s >= 1.8e19 ? UINT64_MAX : (uint64_t)s;
}

uint64_t nc_seconds_before_wrap(void)
{
	nc__enter();
	uint64_t t = nc_ticks(), now = nc_now_ns();
	nc__lock();
	uint64_t s = before_wrap(t, now);
	nc__unlock();
	nc__leave();
	return s;
}

/* The stated sources the start left out: the machine's (its files, read
 * once whoever asks first) and the perf page, read at most once and never
 * on the first call.  System calls outside the lock; like every stated
 * source they are cross-checks. */
static void probe_deferred_sources(void) NC_EXCLUDES(nc__lib_lock)
{
	static int probed NC_GUARDED_BY(nc__lib_lock);
	nc__counter_complete(); /* the kernel's files and the rest of CPUID */
	nc__lock();
	/* the stated rates the start did not read, cross-checked now */
	struct nc_hz_source late[NC_MAX_HZ_SOURCES];
	int n = nc__rate_is_exact() ? 0 : nc__counter_stated_late(late, NC_MAX_HZ_SOURCES);
	for (int i = 0; i < n; i++) {
		nc__rate_add_source(&late[i]);
		if (late[i].hz > 0) /* what the start's report would have said */
			nc__log(NC_LOG_INFO, "stated rate %s %.6f MHz: %s", late[i].name,
				late[i].hz / 1e6, late[i].reason);
	}
	int want = !probed && !nc__rate_is_exact() &&
		   nc__hw_counter(nc__counter_machine()) == nc__counter() && !nc__rate_sources_full();
	probed = 1;
	nc__unlock();
	if (!want)
		return;
	struct nc_hz_source src;
	nc__stated_perf_page(&src);
	nc__lock();
	nc__rate_add_source(&src);
	nc__unlock();
}

int nc_get_info(struct nc_info *o)
{
	nc__enter();
	probe_deferred_sources();
	memset(o, 0, sizeof(*o));
	uint64_t t = nc_ticks(), now = nc_now_ns(); /* before the lock: may refresh */
	const struct nc__config *cfg = nc__init_config();
	/* the kernel's current clocksource, now (it can change): a sysfs read,
	 * so before the lock, which readers with an overdue epoch try */
	char clocksource[sizeof(o->kernel.clocksource)];
	nc__machine_clocksource(clocksource, sizeof(clocksource));
	nc__lock();
	nc__events_check();
	o->init_status = nc__init_status();
	nc__counter_info(o);
	memcpy(o->kernel.clocksource, clocksource, sizeof(clocksource));
	nc__rate_info(o);
	o->seconds_before_wrap = before_wrap(t, now);
	o->init_ms = nc__init_ms();
	nc__copy(o->hz_env, sizeof(o->hz_env), cfg->hz_text);
	nc__events_get(&o->events);
	o->unix_refresh_ms = nc__wall_period_ms();
	o->upkeep_running = nc__upkeep_running();
	nc__copy(o->upkeep_note, sizeof(o->upkeep_note), nc__upkeep_note());
	nc__copy(o->env_ignored, sizeof(o->env_ignored), cfg->ignored);
	o->calib_target_ppm = cfg->calib_ppm;
	o->calib_early = !cfg->calib_set;
	o->calib_max_ms = cfg->calib_max_ms;
	nc__fmt(o->calib_status, sizeof(o->calib_status), "%s",
		 cfg->calib_why[0]  ? cfg->calib_why
		 : cfg->unix_why[0] ? cfg->unix_why
		 : cfg->force_why[0] ? cfg->force_why
				    : cfg->utc_why);
	nc__unlock();
	nc__leave();
	nc_get_unix_status(&o->unix_status);
	return o->init_status;
}
