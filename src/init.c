/* SPDX-License-Identifier: MIT */
/*
 * One-time initialisation, under nc__lib_lock: concurrent first calls all
 * wait for the one that runs it (on the lock), then see the finished state
 * (`done`).  Not pthread_once: its wake after the routine is a system call
 * whether anyone waits or not, one more first call in a cold process.  Phases:
 *
 *   1. read_configuration  freeze the registrations, read the environment once
 *   2. choose_counter      machine facts (CPUID's TSC leaves; /proc, /sys and
 *                          the rest of CPUID after the start), selection
 *   3. calibrate_counter   adaptive calibration against CLOCK_MONOTONIC_RAW:
 *                          stops at the target uncertainty (1 ppm) or its cap;
 *                          a counter that fails it gives way to the next best
 *   4. decide_rate         the measured rate; the cheap stated sources
 *                          cross-checked against it; a rate the user states
 *                          (nc_set_counter's hz, NANOCLOCK_HZ) used for
 *                          intervals, or refused when measurement contradicts it
 *   5. publish             the conversion, nc_now_ns's and nc_unix_ns's lines,
 *                          registered as timelines
 *
 * Slow or unlikely probes stay off this path: the perf_event page (whose
 * perf_event_open can take milliseconds) is read at most once,
 * later (info.c).
 */
#include "init.h"
#include "base/fmt.h"
#include "base/lock.h"
#include "base/log.h"
#include "base/refclock.h"
#include "clock/now.h"
#include "clock/upkeep.h"
#include "clock/wall.h"
#include "counter/counter.h"
#include "rate/rate.h"
#include "shared/shared.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define CALIB_MIN_NS 250000 /* never stop the first calibration before this */
#define EARLY_PPM 1e6       /* the early statement's target: any */

/* Written once, by the initialisation (nc__lib_lock held), read-only
 * afterwards (the getters below: `done`'s acquire orders their reads after). */
static struct {
	int status;           /* what nc_init() returns */
	double init_ms;
	struct nc__config cfg;
} init NC_GUARDED_BY(nc__lib_lock);
int nc__init_runs;

/* 1 once the initialisation finished: stored under nc__lib_lock with
 * release, read without it with acquire (what the initialisation wrote is
 * seen after).  A child forked while another thread of its parent ran the
 * initialisation takes the lock over (lock.c) and runs it again, as
 * pthread_once's fork handling did. */
static int done;
/* set in the thread that ran the initialisation, until it delivered its
 * reports (initial-exec: no allocation at a thread's first access, which a
 * read in a signal handler may be) */
static __thread int ran_init __attribute__((tls_model("initial-exec")));

static void set_status(int rc) NC_REQUIRES(nc__lib_lock)
{
	if (init.status == 0)
		init.status = rc;
}

static void read_configuration(struct nc__registered *reg) NC_REQUIRES(nc__lib_lock)
{
	nc__registry_freeze(reg);
	nc__config_read(&init.cfg, reg->app_ppm, reg->app_ms);
	nc__log_config();
	if (init.cfg.hz_set && init.cfg.hz == 0)
		set_status(NC_EINVAL);
	if (init.cfg.calib_why[0] || init.cfg.unix_why[0] || init.cfg.force_why[0] ||
	    init.cfg.shared_why[0] || init.cfg.utc_why[0])
		set_status(NC_EINVAL);
}

/* Returns 1 if the counter has an exact rate (an OS clock); never fails:
 * CLOCK_MONOTONIC_RAW is always there at the end of the list. */
static int calibrate_counter(struct nc__calib *cal) NC_REQUIRES(nc__lib_lock)
{
	int64_t max_ns = (int64_t)(init.cfg.calib_max_ms * 1e6);
	/* asked for a target: calibrate to it; otherwise state what the
	 * first CALIB_MIN_NS back (any statement meets EARLY_PPM) and let the
	 * refreshes' long baselines reach the goal (calibrate.c, step 4) */
	struct nc__calib_goal g = {CALIB_MIN_NS < max_ns ? CALIB_MIN_NS : max_ns, max_ns,
				   init.cfg.calib_set ? init.cfg.calib_ppm : EARLY_PPM};
	for (;;) {
		const struct nc__counter *c = nc__counter();
		if (c->fixed_hz > 0)
			return 1;
		struct nc__calib_io io = {(void *)c, nc__counter_io_read, nc__ref_io_raw};
		int rc = nc__calibrate_until(&io, &g, cal);
		if (rc == 0) {
			nc__log(NC_LOG_DEBUG,
				"calibration: +-%.3f ppm; slope's standard error %.4f ppm (scatter, "
				"sigma %.2f ns), %.4f ppm (%d bins); width drift %.4f + %.4f ppm",
				cal->ppm, cal->se_fit_ppm, cal->sigma_ns, cal->se_bins_ppm, cal->bins,
				cal->drift_ppm, cal->drift_hidden_ppm);
			nc__log(NC_LOG_DEBUG,
				"calibration: %u of %u brackets over %.3f ms, %.3f ms active",
				cal->n_used, cal->n_total, cal->window_ns / 1e6, cal->active_ns / 1e6);
			return 0;
		}
		char why[96];
		nc__fmt(why, sizeof(why), "calibration failed: %s", nc_strerror(rc));
		nc__counter_next(why);
	}
}

static void decide_rate(int exact, const struct nc__bracket *shared, const struct nc__calib *cal)
	NC_REQUIRES(nc__lib_lock)
{
	const struct nc__counter *c = nc__counter();
	if (exact)
		nc__rate_set_exact(c->fixed_hz, "exact", nc__counter_resolution());
	else if (shared)
		nc__rate_set_shared(cal, nc__counter_resolution(), shared);
	else
		nc__rate_set_measured(cal, nc__counter_resolution());
	struct nc_hz_source src[NC_MAX_HZ_SOURCES];
	int n = !exact ? nc__counter_stated(src, NC_MAX_HZ_SOURCES) : 0;
	set_status(nc__rate_decide(src, n, &init.cfg));
	if (init.cfg.hz_set && init.cfg.hz == 0) {
		char why[160];
		nc__fmt(why, sizeof(why), "refused: %.150s", init.cfg.hz_why);
		nc__rate_env_status(why);
	}
	if (init.cfg.hz_ignored)
		nc__rate_env_status("ignored: the program runs with raised privileges (setuid, setgid "
				    "or capabilities), so the environment is not trusted");
}

/* fork() while another thread holds a lock would leave the child's copy
 * locked for ever: hold them across the fork (nc__lib_lock before the
 * narrow counters', the order the slow path takes them in). */
static void fork_prepare(void) NC_ACQUIRE(nc__lib_lock, nc__ext_mutex)
{
	nc__lock();
	nc__ext_lock();
}
static void fork_parent(void) NC_RELEASE(nc__lib_lock, nc__ext_mutex)
{
	nc__ext_unlock();
	nc__unlock();
}
static void fork_child(void) NC_RELEASE(nc__lib_lock, nc__ext_mutex)
{
	nc__upkeep_forked();
	nc__ext_reset_in_child();
	nc__lock_reset_in_child();
}

/* The decisions, for the application's log (delivered when the
 * initialising thread's first call ends). */
static void report(void) NC_REQUIRES(nc__lib_lock)
{
	if (!nc__log_wanted(NC_LOG_WARN))
		return;
	NC_COLD static struct nc_info o; /* large: not on the stack of a first call */
	memset(&o, 0, sizeof(o));
	nc__counter_info(&o);
	nc__rate_info(&o);
	for (int i = 0; i < o.n_candidates; i++)
		if (o.candidates[i].status == NC_CAND_REJECTED)
			nc__log(NC_LOG_DEBUG, "candidate %s rejected: %s", o.candidates[i].name,
				o.candidates[i].reason);
	if (o.counter_error[0])
		nc__log(NC_LOG_WARN, "%s (forced: %s)", o.counter_error, o.counter_forced);
	nc__log(NC_LOG_INFO, "%s", o.policy);
	for (int i = 0; i < o.n_hz_sources; i++)
		if (o.hz_sources[i].status != NC_SRC_ABSENT)
			nc__log(NC_LOG_INFO, "stated rate %s %.6f MHz: %s", o.hz_sources[i].name,
				o.hz_sources[i].hz / 1e6, o.hz_sources[i].reason);
	if (init.cfg.hz_set || init.cfg.hz_ignored)
		nc__log(o.hz_env_status[0] == 'u' ? NC_LOG_INFO : NC_LOG_WARN, "NANOCLOCK_HZ=%s %s",
			init.cfg.hz_text, o.hz_env_status);
	if (init.cfg.ignored[0])
		nc__log(NC_LOG_WARN, "ignored in a program with raised privileges: %s", init.cfg.ignored);
	if (init.cfg.calib_why[0])
		nc__log(NC_LOG_WARN, "%s", init.cfg.calib_why);
	if (init.cfg.unix_why[0])
		nc__log(NC_LOG_WARN, "%s", init.cfg.unix_why);
	if (init.cfg.shared_why[0])
		nc__log(NC_LOG_WARN, "%s", init.cfg.shared_why);
	char over[48] = "";
	if (o.hz_measured > 0)
		nc__fmt(over, sizeof(over), "; measured over %.3f ms", o.calib_window_ms);
	nc__log(NC_LOG_INFO, "rate %.6f MHz +-%.3g ppm (%s%s); initialised in %.3f ms", o.hz / 1e6,
		o.hz_uncertainty_ppm, o.hz_source, over, init.init_ms);
}

NC_START static void do_init(void) NC_EXCLUDES(nc__lib_lock)
{
	nc__lock();
	if (__atomic_load_n(&done, __ATOMIC_RELAXED)) { /* another thread ran it meanwhile */
		nc__unlock();
		return;
	}
	__atomic_fetch_add(&nc__init_runs, 1, __ATOMIC_RELAXED);
	int64_t t_start = nc__mono_raw_ns();
	struct nc__registered reg;
	read_configuration(&reg);
	int64_t t_cfg = nc__mono_raw_ns();
	char prefer[16];
	const struct nc__machine_facts *facts = nc__shared_look(&init.cfg, prefer);
	int64_t t_look = nc__mono_raw_ns();
	/* the kernel's files at the start only for a calibration to a target
	 * (its record is written at the start): otherwise when first asked */
	int full = init.cfg.calib_set;
	if (facts)
		nc__counter_machine_from(facts);
	else
		nc__counter_machine_read(full);
	int64_t t_mach = nc__mono_raw_ns();
	nc__counter_choose(&reg, init.cfg.counter, init.cfg.counter_why, prefer[0] ? prefer : NULL);
	set_status(nc__counter_status()); /* the forced counter comes first */
	int64_t t_sel = nc__mono_raw_ns();
	struct nc__calib cal;
	struct nc__bracket start;
	/* a trusted shared record replaces the calibration */
	int shared = nc__shared_adopt(&init.cfg, &cal, &start);
	if (facts && !shared) {
		/* a refused record's facts are not this process's: read the
		 * machine and choose again, as without a record */
		nc__counter_machine_read(full);
		nc__counter_choose(&reg, init.cfg.counter, init.cfg.counter_why, NULL);
	}
	int exact = shared ? 0 : calibrate_counter(&cal);
	int64_t t_cal = nc__mono_raw_ns();
	decide_rate(exact, shared ? &start : NULL, &cal);
	nc__counter_settle(nc__rate_true_hz());
	nc__rate_publish();
	nc__now_start();
	nc__wall_start(init.cfg.unix_refresh_ms);
	nc__timeline_register(&nc__now_timeline);
	nc__timeline_register(&nc__wall_timeline);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	int64_t t_pub = nc__mono_raw_ns();
	/* on an OS clock nothing is written, and the status says why */
	if (!shared)
		nc__shared_publish_own(init.cfg.calib_ppm);
	int64_t t_end = nc__mono_raw_ns();
	init.init_ms = (double)(t_end - t_start) / 1e6;
	report();
	/* where a slow start went (the machine's files, the candidates, the
	 * calibration, the rest: stated rates, the first tie to the system clock) */
	nc__log(NC_LOG_DEBUG, "init phases, selection's part: shared record looked for %.3f ms, "
		"machine %s %.3f ms, candidates %.3f ms", (double)(t_look - t_cfg) / 1e6,
		facts ? "taken from the record" : "read", (double)(t_mach - t_look) / 1e6,
		(double)(t_sel - t_mach) / 1e6);
	nc__log(NC_LOG_DEBUG, "init phases: configuration and machine %.3f ms, selection %.3f ms, "
		"%s %.3f ms, rate and ties %.3f ms, shared record written %.3f ms",
		(double)(t_cfg - t_start) / 1e6, (double)(t_sel - t_cfg) / 1e6,
		shared ? "shared record read and checked" : "calibration", (double)(t_cal - t_sel) / 1e6,
		(double)(t_pub - t_cal) / 1e6, (double)(t_end - t_pub) / 1e6);
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	nc__unlock();
	ran_init = 1;
}

void nc__ensure_init(void)
{
	if (NC_UNLIKELY(!__atomic_load_n(&done, __ATOMIC_ACQUIRE)))
		do_init();
	if (NC_UNLIKELY(ran_init)) {
		ran_init = 0;
		nc__log_deliver();
	}
}

NC_START void nc__enter(void)
{
	nc__ensure_init();
	if (NC_UNLIKELY(nc__upkeep_fork_pending())) {
		nc__lock();
		nc__upkeep_after_fork();
		nc__unlock();
	}
}

NC_START void nc__leave(void)
{
	nc__shared_flush(); /* a republish a refresh found due: never on a read's path */
	nc__log_deliver();
}

/* Unchecked by design: write-once state, read after nc__ensure_init. */
NC_START int nc__init_status(void) NC_NO_TSA { return init.status; }
double nc__init_ms(void) NC_NO_TSA { return init.init_ms; }
const struct nc__config *nc__init_config(void) NC_NO_TSA { return &init.cfg; }
