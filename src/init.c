/* SPDX-License-Identifier: MIT */
/*
 * One-time initialisation, under pthread_once: concurrent first calls all
 * wait for the one that runs it, then see the finished state.  Phases:
 *
 *   1. read_configuration  freeze the registrations, read the environment once
 *   2. choose_counter      machine facts (CPUID once, /proc, /sys), selection
 *   3. calibrate_counter   adaptive calibration against CLOCK_MONOTONIC_RAW:
 *                          stops at the target uncertainty (1 ppm) or its cap
 *   4. decide_rate         the measured rate; the cheap stated sources
 *                          cross-checked against it; a rate the user states
 *                          (nc_set_counter's hz, NANOCLOCK_HZ) used, or refused
 *                          when measurement contradicts it
 *   5. publish             the fast path's lines (timeline.c)
 *
 * Slow or unlikely probes stay off this path: the perf_event page (whose
 * perf_event_open can take 10 ms on an idle VM) is read at most once,
 * later (nc__probe_deferred_sources).
 */
#include "internal.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct nc__lib nc__S;
int nc__init_runs;

#define CALIB_MIN_NS 250000 /* never stop the first calibration before this */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

void nc__lock(void) { pthread_mutex_lock(&mu); }

/* set while this thread runs the initialisation: reports wait for its end */
static __thread int initialising;

/* Unlocks, then hands over any reports queued meanwhile (log.c), one at a
 * time and unlocked, so that the application's function may call back —
 * but not from inside the initialisation, where a call back would wait
 * for itself: nc__ensure_init delivers those when it has finished. */
void nc__unlock(void)
{
	for (;;) {
		struct nc__logmsg m;
		nc_log_fn fn = NULL;
		void *ctx = NULL;
		int have = !initialising && nc__log_pending() && nc__log_pop(&m, &fn, &ctx);
		pthread_mutex_unlock(&mu);
		if (!have)
			return;
		if (fn)
			fn(ctx, m.level, m.msg);
		pthread_mutex_lock(&mu);
	}
}
int nc__trylock(void) { return pthread_mutex_trylock(&mu) == 0; }

static void set_status(int rc)
{
	if (nc__S.init_status == 0)
		nc__S.init_status = rc;
}

static void read_configuration(struct nc__registered *reg)
{
	struct nc__lib *S = &nc__S;
	nc__registry_freeze(reg);
	nc__config_read(&S->cfg, reg->app_ppm, reg->app_ms);
	if (S->cfg.hz_set && S->cfg.hz == 0) {
		snprintf(S->env_status, sizeof(S->env_status), "refused: %.150s", S->cfg.hz_why);
		set_status(NC_EINVAL);
	}
	if (S->cfg.calib_why[0] || S->cfg.unix_why[0] || S->cfg.force_why[0])
		set_status(NC_EINVAL);
}

static void choose_counter(const struct nc__registered *reg)
{
	struct nc__lib *S = &nc__S;
	nc__machine_read(&S->m);
	nc__select(&S->m, reg, S->cfg.counter, S->cands, &S->ncand, &S->sel);
	if (S->cfg.counter_why[0] && !S->sel.status) {
		/* an unusable NANOCLOCK_COUNTER value forces nothing, and says so */
		S->sel.status = NC_ENOCOUNTER;
		S->sel.forced_by = "NANOCLOCK_COUNTER";
		snprintf(S->sel.forced, sizeof(S->sel.forced), "(invalid)");
		snprintf(S->sel.error, sizeof(S->sel.error), "%.180s", S->cfg.counter_why);
	}
	if (S->sel.status)
		nc__S.init_status = S->sel.status; /* the forced counter comes first */
}

static uint64_t calib_read(void *ctx)
{
	const struct nc__counter *c = ctx;
	return c->read_ordered(c->ctx);
}
static int64_t calib_ref(void *ctx)
{
	(void)ctx;
	return nc__mono_raw_ns();
}

/* Calibrates the selected counter, moving to the next best if that fails
 * (never fail).  Returns 1 if the counter has an exact rate (an OS clock). */
static int calibrate_counter(void)
{
	struct nc__lib *S = &nc__S;
	int64_t max_ns = (int64_t)(S->cfg.calib_max_ms * 1e6);
	struct nc__calib_goal g = {CALIB_MIN_NS < max_ns ? CALIB_MIN_NS : max_ns, max_ns,
				   S->cfg.calib_ppm};
	for (;;) {
		S->ctr = S->sel.use;
		if (S->ctr->fixed_hz > 0)
			return 1;
		struct nc__calib_io io = {(void *)S->ctr, calib_read, calib_ref};
		int rc = nc__calibrate_until(&io, &g, &S->cal);
		if (rc == 0)
			return 0;
		char why[96];
		snprintf(why, sizeof(why), "calibration failed: %s", nc_strerror(rc));
		nc__select_next(S->cands, S->ncand, why, &S->sel);
	}
}

void nc__measurement(struct nc__meas *m)
{
	struct nc__lib *S = &nc__S;
	m->hz = S->meas_hz;
	m->ppm = S->meas_ppm;
	m->step_ppm = S->meas_window_ns > 0 ? (double)S->resolution * 1e9 / S->meas_hz /
						      S->meas_window_ns * 1e6
					    : 0;
}

static void decide_rate(int exact)
{
	struct nc__lib *S = &nc__S;
	if (exact) {
		nc__use_hz(S->ctr->fixed_hz, 0, "exact");
		S->fixed = 1;
		if (S->cfg.hz > 0)
			snprintf(S->env_status, sizeof(S->env_status),
				 "ignored: the %s counter has an exact rate", S->ctr->name);
		return;
	}
	S->meas_hz = S->cal.hz;
	S->meas_ppm = S->cal.ppm;
	S->meas_worst_ppm = S->cal.worst_ppm;
	S->meas_window_ns = (double)S->cal.window_ns;
	nc__use_hz(S->cal.hz, S->cal.ppm, "measured");

	struct nc__meas m;
	nc__measurement(&m);
	S->nsrc = S->ctr->stated ? S->ctr->stated(&S->m, S->src, NC_MAX_HZ_SOURCES) : 0;
	nc__check_stated(&m, S->src, S->nsrc);

	double claim, diff, tol;
	/* the application's stated rate (its counter's first source) */
	struct nc_hz_source *app = S->nsrc > 0 && !strcmp(S->src[0].name, "application") &&
					   S->src[0].hz > 0 ? &S->src[0] : NULL;
	if (app) {
		if (nc__user_rate_ok(app->hz, &m, 0, &claim, &diff, &tol)) {
			app->status = NC_SRC_ADOPTED;
			snprintf(app->reason, sizeof(app->reason),
				 "used: differs from measurement by %+.3f ppm", diff);
			nc__use_hz(app->hz, claim, app->name);
			S->app_rate = 1;
		} else {
			app->status = NC_SRC_REJECTED;
			snprintf(app->reason, sizeof(app->reason),
				 "refused: differs from measurement by %+.1f ppm (tolerance %.0f)", diff,
				 tol);
			set_status(NC_EOVERRIDE);
		}
	}
	if (S->cfg.hz > 0) {
		int ok = nc__user_rate_ok(S->cfg.hz, &m, S->cfg.hz_force, &claim, &diff, &tol);
		if (!ok) {
			snprintf(S->env_status, sizeof(S->env_status),
				 "refused: differs from measurement by %+.1f ppm (tolerance %.0f ppm); "
				 "NANOCLOCK_HZ_FORCE=1 uses it anyway",
				 diff, tol);
			set_status(NC_EOVERRIDE);
		} else {
			snprintf(S->env_status, sizeof(S->env_status),
				 "used%s: differs from measurement by %+.2f ppm",
				 fabs(diff) > tol ? " (forced by NANOCLOCK_HZ_FORCE)" : "", diff);
			nc__use_hz(S->cfg.hz, claim, "env NANOCLOCK_HZ");
			S->fixed = 1;
			S->app_rate = 0;
		}
	}
	if (S->sel.ext)
		nc__ext_set_hz(S->sel.ext, S->hz);
}

/* Appends to a NUL-terminated buffer, truncating. */
__attribute__((format(printf, 3, 4))) static void append(char *buf, size_t size, const char *fmt,
							 ...)
{
	size_t l = strlen(buf);
	if (l + 1 >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + l, size - l, fmt, ap);
	va_end(ap);
}

static void write_policy(void)
{
	struct nc__lib *S = &nc__S;
	const struct nc_candidate *c = &S->cands[S->sel.index];
	int forced = S->sel.forced[0] && strcmp(S->sel.forced, c->name) == 0;
	snprintf(S->policy, sizeof(S->policy), "%s selected: %s", c->name,
		 forced ? "forced" : "lowest resolution+cost+penalty among usable candidates");
	if (S->m.unreadable[0])
		append(S->policy, sizeof(S->policy),
		       "; %s: the kernel's view is unknown and the rates it states are absent, so the "
		       "rate is %s",
		       S->m.unreadable, S->ctr->fixed_hz > 0 ? "exact (an OS clock)" : "measured");
	if (strcmp(c->name, "tsc") == 0 && S->m.kv.tsc_unstable == 1)
		append(S->policy, sizeof(S->policy),
		       "; the kernel distrusts the TSC (%s) but its rate is invariant and "
		       "nanoclock's own checks pass (monotonic, advancing, consistent calibration); "
		       "cross-CPU agreement is not checked at init",
		       S->m.kv.tsc_unstable_why);
}

/* fork() while another thread holds a lock would leave the child's copy
 * locked for ever: hold them across the fork (nc__mu before extend.c's,
 * the order the slow path takes them in). */
static void fork_prepare(void)
{
	nc__lock();
	nc__ext_lock();
}
static void fork_parent(void)
{
	nc__ext_unlock();
	nc__unlock();
}
static void fork_child(void)
{
	nc__upkeep_forked();
	nc__ext_unlock();
	nc__unlock();
}

/* The decisions, for the application's log hook (queued: delivered when
 * initialisation has finished). */
static void report(void)
{
	struct nc__lib *S = &nc__S;
	if (!nc__log_wanted(NC_LOG_WARN))
		return;
	for (int i = 0; i < S->ncand; i++)
		if (S->cands[i].status == NC_CAND_REJECTED)
			nc__log(NC_LOG_DEBUG, "candidate %s rejected: %s", S->cands[i].name,
				S->cands[i].reason);
	if (S->sel.error[0])
		nc__log(NC_LOG_WARN, "%s (forced by %s)", S->sel.error, S->sel.forced_by);
	nc__log(NC_LOG_INFO, "%s", S->policy);
	for (int i = 0; i < S->nsrc; i++)
		if (S->src[i].status != NC_SRC_ABSENT)
			nc__log(NC_LOG_INFO, "stated rate %s %.6f MHz: %s", S->src[i].name,
				S->src[i].hz / 1e6, S->src[i].reason);
	if (S->cfg.hz_set)
		nc__log(S->env_status[0] == 'u' ? NC_LOG_INFO : NC_LOG_WARN, "NANOCLOCK_HZ=%s %s",
			S->cfg.hz_text, S->env_status);
	if (S->cfg.calib_why[0])
		nc__log(NC_LOG_WARN, "%s", S->cfg.calib_why);
	if (S->cfg.unix_why[0])
		nc__log(NC_LOG_WARN, "%s", S->cfg.unix_why);
	nc__log(NC_LOG_INFO, "rate %.6f MHz +-%.3g ppm (%s%s%.3f ms); initialised in %.3f ms",
		S->hz / 1e6, S->ppm, S->hz_source, S->meas_hz > 0 ? "; measured over " : "",
		S->meas_hz > 0 ? S->meas_window_ns / 1e6 : 0, S->init_ms);
}

static void do_init(void)
{
	struct nc__lib *S = &nc__S;
	initialising = 1;
	__atomic_fetch_add(&nc__init_runs, 1, __ATOMIC_RELAXED);
	int64_t t_start = nc__mono_raw_ns();
	struct nc__registered reg;
	read_configuration(&reg);
	int64_t t_cfg = nc__mono_raw_ns();
	choose_counter(&reg);
	int64_t t_sel = nc__mono_raw_ns();
	int exact = calibrate_counter();
	int64_t t_cal = nc__mono_raw_ns();
	S->resolution = S->cands[S->sel.index].resolution_ticks;
	decide_rate(exact);
	write_policy();
	uint64_t kind = S->ctr->kind;
	if (kind == NC_IMPL_KIND_TSC && S->m.cpuid->rdtscp)
		kind = NC_IMPL_KIND_TSCP;
	S->now_kind = kind;
	S->now_inline = nc_impl_hw(kind);
	nc__publish_first();
	nc__wall_first();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	int64_t t_end = nc__mono_raw_ns();
	S->init_ms = (double)(t_end - t_start) / 1e6;
	report();
	/* where a slow start went (the machine's files, the candidates, the
	 * calibration, the rest: stated rates, the first tie to the system clock) */
	nc__log(NC_LOG_DEBUG, "init phases: configuration and machine %.3f ms, selection %.3f ms, "
		"calibration %.3f ms, rate and ties %.3f ms", (double)(t_cfg - t_start) / 1e6,
		(double)(t_sel - t_cfg) / 1e6, (double)(t_cal - t_sel) / 1e6, (double)(t_end - t_cal) / 1e6);
	initialising = 0;
}

void nc__ensure_init(void)
{
	pthread_once(&once, do_init);
	if (NC_UNLIKELY(nc__log_pending())) { /* initialisation's reports */
		nc__lock();
		nc__unlock();
	}
}

int nc_init(void)
{
	nc__ensure_init();
	return nc__S.init_status;
}

/* The perf-page source, read at most once and never on the first call:
 * by nc_get_info and the upkeep thread.  The system call runs outside the
 * lock; like the other stated sources it is a cross-check. */
void nc__probe_deferred_sources(void)
{
	nc__ensure_init();
	struct nc__lib *S = &nc__S;
	nc__lock();
	int want = !S->perf_probed && S->meas_hz > 0 && nc__hw_counter(&S->m) == S->ctr &&
		   S->nsrc < NC_MAX_HZ_SOURCES;
	S->perf_probed = 1;
	nc__unlock();
	if (!want)
		return;
	struct nc_hz_source src;
	nc__src_perf_page(&src);
	nc__lock();
	struct nc_hz_source *s = &S->src[S->nsrc++];
	*s = src;
	struct nc__meas m;
	nc__measurement(&m);
	nc__check_stated(&m, s, 1);
	nc__unlock();
}
