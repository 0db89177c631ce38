/* SPDX-License-Identifier: MIT */
/* What the library decided, for the application and `nanoclock info`:
 * the getters and nc_get_info.  Everything here is the slow path: it
 * initialises the library if needed and reads its state under the lock. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

const char *nc_counter_name(void)
{
	nc__ensure_init();
	return nc__S.ctr->name;
}

double nc_ticks_per_second(void)
{
	nc__ensure_init();
	nc__lock();
	double hz = nc__S.hz;
	nc__unlock();
	return hz;
}

double nc_ticks_per_second_uncertainty_ppm(void)
{
	nc__ensure_init();
	nc__lock();
	double ppm = nc__S.ppm;
	nc__unlock();
	return ppm;
}

const char *nc_ticks_per_second_source(void)
{
	nc__ensure_init();
	nc__lock();
	const char *s = nc__S.hz_source;
	nc__unlock();
	return s;
}

void nc_get_conv(nc_conv_t *out)
{
	nc__ensure_init();
	nc__lock();
	*out = nc__S.conv;
	nc__unlock();
}

uint64_t nc_ns_to_ticks(uint64_t ns)
{
	nc_conv_t c;
	nc_get_conv(&c);
	return nc_conv_ns_to_ticks(&c, ns);
}

/* Seconds until either the counter wraps or a nanosecond result no longer
 * fits in 64 bits, from the counter's current value. */
static uint64_t before_wrap(uint64_t t, uint64_t now_ns)
{
	uint64_t left = nc__S.ctr->bits >= 64 ? UINT64_MAX - t
					  : ((UINT64_C(1) << nc__S.ctr->bits) - 1) - (t & ((UINT64_C(1) << nc__S.ctr->bits) - 1));
	double s = (double)left / nc__S.hz;
	double ns_room = ((double)UINT64_MAX - (double)now_ns) / 1e9;
	if (ns_room < s)
		s = ns_room;
	return s >= 1.8e19 ? UINT64_MAX : (uint64_t)s;
}

uint64_t nc_seconds_before_wrap(void)
{
	nc__ensure_init();
	uint64_t t = nc_ticks(), now = nc_now_ns(); /* before mu: may refresh */
	nc__lock();
	uint64_t s = before_wrap(t, now);
	nc__unlock();
	return s;
}

int nc_get_info(struct nc_info *o)
{
	nc__probe_deferred_sources(); /* initialises, and reads the slow sources once */
	memset(o, 0, sizeof(*o));
	uint64_t t = nc_ticks(), now = nc_now_ns(); /* before mu: may refresh */
	nc__lock();
	nc__observe();
	o->init_status = nc__S.init_status;
	o->counter = nc__S.ctr->name;
	o->hz = nc__S.hz;
	o->hz_uncertainty_ppm = nc__S.ppm;
	o->hz_source = nc__S.hz_source;
	o->hz_measured = nc__S.meas_hz;
	o->hz_measured_ppm = nc__S.meas_ppm;
	o->hz_measured_worst_ppm = nc__S.meas_worst_ppm;
	o->calib_window_ms = nc__S.meas_window_ns / 1e6;
	o->refreshes = nc__S.refreshes;
	o->resolution_ticks = nc__S.resolution;
	o->resolution_ns = nc__S.resolution * 1e9 / nc__S.hz;
	o->seconds_before_wrap = before_wrap(t, now);
	o->init_ms = nc__S.init_ms;
	snprintf(o->hz_env, sizeof(o->hz_env), "%s", nc__S.cfg.hz_text);
	snprintf(o->hz_env_status, sizeof(o->hz_env_status), "%s", nc__S.env_status);
	o->n_hz_sources = nc__S.nsrc;
	memcpy(o->hz_sources, nc__S.src, sizeof(nc__S.src));
	snprintf(o->policy, sizeof(o->policy), "%s", nc__S.policy);
	snprintf(o->counter_forced, sizeof(o->counter_forced), "%s", nc__S.sel.forced);
	snprintf(o->counter_error, sizeof(o->counter_error), "%s", nc__S.sel.error);
	o->n_candidates = nc__S.ncand;
	memcpy(o->candidates, nc__S.cands, sizeof(nc__S.cands));
	o->kernel = nc__S.m.kv;
	o->events = nc__S.ev;
	o->unix_refresh_ms = nc__wall_refresh_ns() / 1e6;
	o->upkeep_running = nc__upkeep_running();
	o->calib_target_ppm = nc__S.cfg.calib_ppm;
	o->calib_max_ms = nc__S.cfg.calib_max_ms;
	snprintf(o->calib_status, sizeof(o->calib_status), "%s",
		 nc__S.cfg.calib_why[0]  ? nc__S.cfg.calib_why
		 : nc__S.cfg.unix_why[0] ? nc__S.cfg.unix_why
					 : nc__S.cfg.force_why);
	nc__unlock();
	nc_get_unix_status(&o->unix_status);
	return o->init_status;
}
