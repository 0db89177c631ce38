/* SPDX-License-Identifier: MIT */
/*
 * The bound on UTC that nc_utc_now reads: chosen source, asked at each
 * period's tie of nc_unix_ns, published beside the tie's epoch.
 *
 * The interval is nc_unix_ns's value for the read plus or minus
 *   tie:    |line - CLOCK_REALTIME| as the tie states it (its brackets, the
 *           correction being slewed in, the followed rate's uncertainty and
 *           the kernel's slew over the tie's age: wall.c's model);
 *   source: the source's bound on |CLOCK_REALTIME - UTC| when it answered,
 *           the correction it is still slewing in included;
 *   slew:   the line follows the clock's rate a period late: a slew that
 *           stops leaves the line past the clock by up to what the period
 *           before slewed, at most the previous answer's correction; where
 *           that is the larger it stands in for this answer's (a slew that
 *           starts moves the clock toward UTC while the line keeps the old
 *           offset: the source's bound holds for it);
 *   drift:  both grown since at the source's stated drift (or
 *           NANOCLOCK_UTC_DRIFT_PPM's) plus the tie's rate uncertainty.
 * Linear in the counter, so the fast path computes it from one latch copy
 * (nanoclock_impl.h) with a multiply.  The source's figures stay good for
 * fresh_s after they held (q_tick: when they were asked for, or when the
 * source measured them where it says), then the read says free-running;
 * past horizon_s it says unknown.  An answer without a bound
 * (the source lost its own, or refused: a bad reply) keeps the last good
 * figures and makes them free-running at once: never a stale figure called
 * fresh, never a narrower interval.
 *
 * State guarded by nc__lib_lock; `started` is also read without it.
 */
#include "utc.h"
#include "../base/fmt.h"
#include "../base/latch.h"
#include "../base/lock.h"
#include "../base/log.h"
#include "../clock/timeline.h"
#include "../clock/wall.h"
#include "../counter/counter.h"
#include "../rate/rate.h"

#include <math.h>
#include <string.h>
#include <time.h>

struct nc_impl_utc nc_impl_utc_g;

#define CHRONY_WAIT_MS 50.0  /* the first question's wait (loopback answers much sooner) */
#define RETRY_CHRONY_S 64.0  /* auto without chrony: asked again this often */

/* Guarded by nc__lib_lock. */
static struct {
	int started;                        /* also read without the lock (atomic) */
	int stopped;                        /* nc_utc_stop: unknown until nc_utc_start */
	const struct nc__utc_source *src;   /* NULL: none */
	int is_auto;
	int have_good;                      /* good: the last figures with a bound */
	struct nc__utc_fix good;
	int lost;                           /* answers since have had no bound */
	int disrupted;                      /* the source said so: no bound until a good one */
	uint64_t watch_addr, watch_val;     /* the source's disruption marker, for the reads */
	double step_ns;                     /* steps of the system clock followed since the
					       figures were taken: added until figures taken
					       after them come */
	double step_back_ns;                /* ... of which steps back */
	uint64_t step_tick;                 /* the counter at the latest such step */
	char last_why[320];                 /* the latest answer's or failure's reason */
	double prev_slew_ns;                /* the figures before good's slew */
	double drift_default, horizon_s, fresh_s;
	int64_t retry_raw;                  /* auto: when chrony is asked again */
	int chrony_probe;                   /* auto: a request to chrony is out */
	char chosen[384];
} u NC_GUARDED_BY(nc__lib_lock);

static void say(char *buf, size_t len, const char *fmt, const char *a, const char *b)
{
	size_t l = strlen(buf);
	nc__fmt(buf + l, len - l, fmt, l ? "; " : "", a, b);
}

/* ---- the latch ---- */
static void utc_store(void *obj, int i, const void *src)
{
	struct nc_impl_utc_copy *d = &((struct nc_impl_utc *)obj)->copy[i];
	const struct nc_impl_utc_copy *c = src;
	NC_ST(d->line.kind, c->line.kind);
	NC_ST(d->line.t0, c->line.t0);
	NC_ST(d->line.len, c->line.len);
	NC_ST(d->line.c0, c->line.c0);
	NC_ST(d->line.mul_int, c->line.mul_int);
	NC_ST(d->line.mul_frac, c->line.mul_frac);
	NC_ST(d->line.span, c->line.span);
	NC_ST(d->as_of_tick, c->as_of_tick);
	NC_ST(d->err0, c->err0);
	NC_ST(d->slope, c->slope);
	NC_ST(d->fresh_len, c->fresh_len);
	NC_ST(d->horizon_len, c->horizon_len);
	NC_ST(d->as_of_ns, c->as_of_ns);
	NC_ST(d->status_source, c->status_source);
	NC_ST(d->watch_addr, c->watch_addr);
	NC_ST(d->watch_val, c->watch_val);
}
static void utc_load(const void *obj, int i, void *dst)
{
	const struct nc_impl_utc_copy *c = &((const struct nc_impl_utc *)obj)->copy[i];
	struct nc_impl_utc_copy *o = dst;
	o->line.kind = NC_LD(c->line.kind);
	o->line.t0 = NC_LD(c->line.t0);
	o->line.len = NC_LD(c->line.len);
	o->line.c0 = NC_LD(c->line.c0);
	o->line.mul_int = NC_LD(c->line.mul_int);
	o->line.mul_frac = NC_LD(c->line.mul_frac);
	o->line.span = NC_LD(c->line.span);
	o->as_of_tick = NC_LD(c->as_of_tick);
	o->err0 = NC_LD(c->err0);
	o->slope = NC_LD(c->slope);
	o->fresh_len = NC_LD(c->fresh_len);
	o->horizon_len = NC_LD(c->horizon_len);
	o->as_of_ns = NC_LD(c->as_of_ns);
	o->status_source = NC_LD(c->status_source);
	o->watch_addr = NC_LD(c->watch_addr);
	o->watch_val = NC_LD(c->watch_val);
}

/* ticks from `from` to `end`, 0 when end is not after it */
static uint64_t ticks_left(uint64_t from, uint64_t end)
{
	return (int64_t)(end - from) > 0 ? end - from : 0;
}

/* how long figures stay fresh (s): the source's own figure, else four
 * refresh periods, or four of the source's own renewals where slower (a
 * ptp4l measuring once a second, asked ten times a second) */
static double fresh_of(const struct nc__utc_fix *g) NC_REQUIRES(nc__lib_lock)
{
	if (g->fresh_ns > 0)
		return g->fresh_ns / 1e9;
	double c = 4 * g->cadence_ns / 1e9;
	return c > u.fresh_s ? c : u.fresh_s;
}

static void publish(void) NC_REQUIRES(nc__lib_lock)
{
	struct nc__wall_tie ti;
	nc__wall_tie(&ti);
	struct nc_impl_utc_copy c;
	memset(&c, 0, sizeof(c));
	c.line = ti.line;
	uint64_t status = NC_UTC_UNKNOWN, source = u.src ? (uint64_t)u.src->id : NC_UTC_SRC_NONE;
	if (u.have_good) {
		const struct nc__utc_fix *g = &u.good;
		double ns_tick = ti.ns_per_tick, d_ppm = g->drift_ppm >= 0 ? g->drift_ppm : u.drift_default;
		/* both parts at the later of the tie and the answer, growing
		 * together after it */
		uint64_t T = (int64_t)(g->q_tick - ti.tick) > 0 ? g->q_tick : ti.tick;
		double tie = ti.err0_ns + ns_tick * ti.ppm * 1e-6 * (double)(T - ti.tick);
		double src = g->bound_ns + ns_tick * d_ppm * 1e-6 * (double)(T - g->q_tick);
		/* the source's bound has its correction in it; the previous
		 * figures' correction, if larger, stands in for it (a slew that
		 * stopped leaves the line up to that far past the clock) */
		double more = u.prev_slew_ns > g->slew_ns ? u.prev_slew_ns - g->slew_ns : 0;
		/* a step of the system clock since the figures were taken moved
		 * CLOCK_REALTIME (and the line with it) by that much from where
		 * the figures put it */
		double err0 = tie + src + more + u.step_ns + 2; /* 2: the line's rounding */
		double slope = ns_tick * (ti.ppm + d_ppm) * 1e-6;
		double tps = 1e9 / ns_tick;
		double hor = u.horizon_s;
		if (g->horizon_ns > 0 && g->horizon_ns / 1e9 < hor) /* the source's own void-after */
			hor = g->horizon_ns / 1e9;
		/* the half width stays below 2^62 ns within the horizon */
		if (err0 + slope * hor * tps > 0x1p62)
			hor = (0x1p62 - err0) / (slope * tps);
		c.as_of_tick = T;
		c.err0 = err0 < 0x1p62 ? (uint64_t)ceil(err0) : (uint64_t)1 << 62;
		c.slope = slope < 0x1p15 ? (uint64_t)ceil(slope * 0x1p48) : (uint64_t)1 << 63;
		double fresh = fresh_of(g);
		if (fresh > hor)
			fresh = hor;
		c.fresh_len = ticks_left(T, g->q_tick + (uint64_t)(fresh * tps));
		c.horizon_len = hor > 0 ? ticks_left(T, g->q_tick + (uint64_t)(hor * tps)) : 0;
		c.as_of_ns = g->as_of_ns;
		status = u.lost ? NC_UTC_FREE_RUNNING : NC_UTC_SYNCHRONISED;
	}
	if (u.disrupted)
		status = NC_UTC_DISRUPTED;
	c.status_source = status | source << 32;
	/* a disruption the source marks (VMClock) is seen by every read at once */
	c.watch_addr = u.watch_addr;
	c.watch_val = u.watch_val;
	nc__latch_write(&nc_impl_utc_g.seq, &nc_impl_utc_g, utc_store, &c);
}

/* ---- asking ---- */
static void take(const struct nc__utc_fix *f) NC_REQUIRES(nc__lib_lock)
{
	if (f->watch_addr) {
		u.watch_addr = f->watch_addr;
		u.watch_val = f->watch_val;
	}
	if (f->status == NC_UTC_DISRUPTED) {
		/* the source says the clock was disrupted (a VM moved): nothing
		 * known before holds; no bound until it gives a valid one */
		if (!u.disrupted)
			nc__log(NC_LOG_WARN, "UTC source %s: %s", u.src->name, f->why);
		u.disrupted = 1;
		u.have_good = 0;
		u.prev_slew_ns = 0;
		nc__copy(u.last_why, sizeof(u.last_why), f->why);
	} else if (f->status == NC_UTC_SYNCHRONISED || f->status == NC_UTC_FREE_RUNNING) {
		/* figures that held after the tie followed the latest step
		 * know of it (where their time came from CLOCK_REALTIME
		 * differences, a step back may have made it look later by up
		 * to that step: past that margin; a step forward only makes
		 * it look earlier) */
		int64_t after = (int64_t)(f->q_tick - u.step_tick);
		if (u.step_ns > 0 && after > 0 &&
		    (!f->q_by_realtime || (double)after * 1e9 / nc__rate_true_hz() > u.step_back_ns))
			u.step_ns = u.step_back_ns = 0;
		u.prev_slew_ns = u.have_good ? u.good.slew_ns : 0;
		u.good = *f;
		u.have_good = 1;
		u.disrupted = 0;
		/* a source free-running itself: its bound, widening, and said */
		u.lost = f->status == NC_UTC_FREE_RUNNING;
		if (u.lost)
			nc__copy(u.last_why, sizeof(u.last_why), f->why);
		else
			u.last_why[0] = 0;
	} else if (f->drop) {
		/* no bound, and the figures before it void too (a VMClock page
		 * that no longer states time against this counter) */
		u.have_good = 0;
		u.prev_slew_ns = 0;
		nc__copy(u.last_why, sizeof(u.last_why), f->why);
	} else {
		if (u.have_good && !u.lost)
			nc__log(NC_LOG_INFO, "UTC source %s: %s: free-running from its last figures",
				u.src->name, f->why);
		u.lost = 1;
		nc__copy(u.last_why, sizeof(u.last_why), f->why);
	}
}

static void ask(double wait_ms) NC_REQUIRES(nc__lib_lock)
{
	struct nc__utc_fix f;
	if (u.src->ask(&f, wait_ms))
		take(&f);
	else if (f.why[0])
		nc__copy(u.last_why, sizeof(u.last_why), f.why);
}

/* auto on a machine where chrony did not answer at the start: asked again
 * now and then (a daemon started after the program), never waiting: one
 * period's refresh sends the request, the next takes the answer */
static void retry_chrony(void) NC_REQUIRES(nc__lib_lock)
{
	struct nc__utc_fix f;
	if (!u.chrony_probe) {
		int64_t now = nc__ref.raw();
		if (now < u.retry_raw)
			return;
		u.retry_raw = now + (int64_t)(RETRY_CHRONY_S * 1e9);
		char why[8];
		if (nc__utc_chrony.open("", why, sizeof(why)) != 0)
			return;
		u.chrony_probe = 1;
		(void)nc__utc_chrony.ask(&f, 0); /* sends */
		return;
	}
	u.chrony_probe = 0;
	/* the socket lives only from the request to its answer's refresh */
	if (!nc__utc_chrony.ask(&f, 0) || f.status != NC_UTC_SYNCHRONISED) {
		nc__utc_chrony.close();
		return;
	}
	if (u.src)
		u.src->close();
	u.src = &nc__utc_chrony;
	u.have_good = 0;
	u.lost = 0;
	u.prev_slew_ns = 0;
	take(&f);
	say(u.chosen, sizeof(u.chosen), "%schrony: answered later%s%s", "", "");
	nc__log(NC_LOG_INFO, "UTC source: chronyd answers now: chrony chosen");
}

/* wall.c's listener: a new epoch of Unix time (period: a period's tie;
 * stepped_ns: the step of the system clock it followed) */
static void on_wall(int period, double stepped_ns) NC_REQUIRES(nc__lib_lock)
{
	NC_LOCK_HELD();
	/* counted with no figures yet too: the first may be older than it */
	if (stepped_ns != 0) {
		u.step_ns += fabs(stepped_ns);
		if (stepped_ns < 0)
			u.step_back_ns -= stepped_ns;
		u.step_tick = nc__counter_read();
	}
	/* a source that states UTC against the counter (VMClock) is asked at
	 * every new epoch: its figures are about the line itself */
	if (u.src && (period || (u.have_good && u.good.on_line)))
		ask(0);
	if (period && u.is_auto && (!u.src || u.src == &nc__utc_adjtimex))
		retry_chrony();
	publish();
}

/* ---- choosing ---- */
static int try_source(const struct nc__utc_source *s, const char *arg, int keep)
	NC_REQUIRES(nc__lib_lock)
{
	char why[320];
	if (s->open(arg, why, sizeof(why)) != 0) {
		say(u.chosen, sizeof(u.chosen), "%s%s: %s", s->name, why);
		return 0;
	}
	struct nc__utc_fix f;
	/* the daemons that answer over a socket: the first answer waited for */
	int got = s->ask(&f, s == &nc__utc_chrony || s == &nc__utc_ptp ? CHRONY_WAIT_MS : 0);
	int bounded = f.status == NC_UTC_SYNCHRONISED || f.status == NC_UTC_FREE_RUNNING;
	if (got && (bounded || keep)) {
		u.src = s;
		take(&f);
		char where[96];
		s->where(where, sizeof(where));
		say(u.chosen, sizeof(u.chosen), "%s%s: used (%s)", s->name, where);
		return 1;
	}
	if (keep) { /* named by the user: kept, and asked again at each refresh */
		u.src = s;
		nc__copy(u.last_why, sizeof(u.last_why), f.why);
		say(u.chosen, sizeof(u.chosen), "%s%s: chosen by NANOCLOCK_UTC_SOURCE, %s", s->name,
		    f.why[0] ? f.why : "no answer yet");
		return 1;
	}
	say(u.chosen, sizeof(u.chosen), "%s%s: %s", s->name, f.why[0] ? f.why : "no answer");
	s->close();
	return 0;
}

static int utc_read(struct nc_utc *out, double *raised);

/* What nc_utc_start says: 0 when a read now is synchronised (what it
 * published, not what the source said: figures past their horizon, or a
 * source's figures refused, read as unknown), else NC_EUNKNOWN */
static int start_result(void) NC_REQUIRES(nc__lib_lock)
{
	/* as a read would: an overdue epoch refreshed first (the lock held
	 * here, the read could not) */
	nc__timeline_refresh_if_due(&nc__wall_timeline);
	struct nc_utc r;
	double raised;
	return utc_read(&r, &raised) == NC_UTC_SYNCHRONISED ? 0 : NC_EUNKNOWN;
}

int nc__utc_start(const struct nc__config *cfg)
{
	NC_LOCK_HELD();
	if (u.started && !u.stopped)
		return start_result();
	if (u.stopped) { /* chosen again from nothing (the figures were cleared at the stop) */
		u.stopped = 0;
		u.chosen[0] = u.last_why[0] = 0;
		u.retry_raw = 0;
	}
	u.drift_default = cfg->utc_drift_ppm;
	u.horizon_s = cfg->utc_horizon_s;
	u.fresh_s = 4 * nc__wall_period_ms() / 1e3; /* four answers missed */
	if (cfg->utc_why[0])
		say(u.chosen, sizeof(u.chosen), "%s%s%s", cfg->utc_why, "");
	const char *name = cfg->utc_source;
	u.is_auto = !strcmp(name, "auto");
	if (!strcmp(name, "vmclock")) {
		try_source(&nc__utc_vmclock, cfg->utc_arg, 1);
	} else if (!strcmp(name, "clockbound")) {
		try_source(&nc__utc_clockbound, cfg->utc_arg, 1);
	} else if (!strcmp(name, "ptp")) {
		try_source(&nc__utc_ptp, cfg->utc_arg, 1);
	} else if (!strcmp(name, "off")) {
		say(u.chosen, sizeof(u.chosen), "%s%s%s", "off (NANOCLOCK_UTC_SOURCE=off)", "");
		nc__copy(u.last_why, sizeof(u.last_why), "no UTC source: NANOCLOCK_UTC_SOURCE=off");
	} else if (!strcmp(name, "chrony")) {
		try_source(&nc__utc_chrony, cfg->utc_arg, 1);
	} else if (!strcmp(name, "adjtimex")) {
		try_source(&nc__utc_adjtimex, "trusted", 1);
	} else if (!try_source(&nc__utc_vmclock, "", 0) && !try_source(&nc__utc_clockbound, "", 0) &&
		   !try_source(&nc__utc_ptp, "", 0) && !try_source(&nc__utc_chrony, "", 0) &&
		   !try_source(&nc__utc_adjtimex, "", 0)) {
		/* nothing honest: adjtimex kept, to say why at each refresh;
		 * chrony asked again now and then */
		if (nc__utc_adjtimex.open("", u.last_why, sizeof(u.last_why)) == 0)
			u.src = &nc__utc_adjtimex;
		struct nc__utc_fix f;
		if (u.src && u.src->ask(&f, 0))
			nc__copy(u.last_why, sizeof(u.last_why), f.why);
		u.retry_raw = nc__ref.raw() + (int64_t)(RETRY_CHRONY_S * 1e9);
	}
	if (!u.have_good && !u.last_why[0])
		nc__copy(u.last_why, sizeof(u.last_why), "no source gave a bound");
	nc__wall_listener = on_wall;
	/* a set of the system clock since the last tie, or while nothing
	 * listened, is told now rather than at the next tie: the figures just
	 * taken may be older than it */
	nc__wall_tell_sets();
	publish();
	nc__log(NC_LOG_INFO, "UTC source: %s", u.chosen);
	__atomic_store_n(&u.started, 1, __ATOMIC_RELEASE);
	return start_result();
}

/* The source's descriptor closed, its figures forgotten; reads say unknown
 * ("stopped") with the whole line until nc__utc_start chooses again.
 * `started` stays set, so a read never starts it again behind the caller's
 * back (nor in a signal handler). */
void nc__utc_stop(void)
{
	NC_LOCK_HELD();
	if (!u.started || u.stopped)
		return;
	if (u.src)
		u.src->close();
	if (u.chrony_probe && u.src != &nc__utc_chrony)
		nc__utc_chrony.close();
	u.src = NULL;
	u.is_auto = u.have_good = u.lost = u.disrupted = u.chrony_probe = 0;
	u.watch_addr = u.watch_val = 0;
	/* (the sets of the clock followed stay: a source started again may
	 * give figures older than them) */
	u.prev_slew_ns = 0;
	u.stopped = 1;
	nc__copy(u.chosen, sizeof(u.chosen), "stopped (nc_utc_stop)");
	nc__copy(u.last_why, sizeof(u.last_why), "stopped: nc_utc_stop was called; nc_utc_start starts it again");
	publish();
	nc__log(NC_LOG_INFO, "UTC source: stopped");
}

/* Unchecked by design: a read asks it, any context (an acquire load). */
int nc__utc_started(void) NC_NO_TSA { return __atomic_load_n(&u.started, __ATOMIC_ACQUIRE); }

/* ---- reading from the library ---- */
uint32_t nc__utc_growth_ppb(void)
{
	struct nc_impl_utc_copy c;
	nc__latch_read(&nc_impl_utc_g.seq, &nc_impl_utc_g, utc_load, &c);
	/* slope: ns of bound per tick (2^-48); the line: ns per tick (64.64) */
	double ns_tick = (double)c.line.mul_int + (double)c.line.mul_frac * 0x1p-64;
	if (!(ns_tick > 0) || c.slope == 0)
		return 0;
	double ppb = ceil((double)c.slope * 0x1p-48 / ns_tick * 1e9);
	return ppb >= 4294967295.0 ? UINT32_MAX : (uint32_t)ppb;
}

/* raised: what the latest end was raised by for an overdue epoch (ns) */
static int utc_read(struct nc_utc *out, double *raised)
{
	*raised = 0;
	for (int round = 0;; round++) {
		struct nc_impl_utc_copy c;
		uint64_t seq = nc__latch_read(&nc_impl_utc_g.seq, &nc_impl_utc_g, utc_load, &c);
		struct nc__epoch e = {c.line.t0, c.line.span, c.line.c0, c.line.mul_int, c.line.mul_frac};
		uint64_t t = nc__timeline_counter(&nc__wall_timeline, c.line.kind);
		uint64_t d = t - e.t0;
		if (c.watch_addr &&
		    __atomic_load_n((const uint64_t *)(uintptr_t)c.watch_addr, __ATOMIC_RELAXED) != c.watch_val) {
			/* the source marked a disruption: asked again now if the lock
			 * is free (it republishes); else said as it is */
			if (round < 6 && nc__trylock()) {
				if (u.src)
					ask(0);
				publish();
				nc__unlock();
				continue;
			}
			c.status_source = NC_UTC_DISRUPTED | (c.status_source >> 32 << 32);
		}
		if (d < e.span || ((int64_t)d < 0 && (uint64_t)(-(int64_t)d) <= nc__epoch_behind_ticks(&e)))
			return nc_impl_utc_fill(out, nc__timeline_reader_value(&nc__wall_timeline, &e, t), t,
						c.as_of_tick, c.err0, c.slope, c.fresh_len, c.horizon_len,
						c.as_of_ns, c.status_source);
		if (round < 6 && nc__trylock()) {
			if (nc__latch_read(&nc_impl_utc_g.seq, &nc_impl_utc_g, utc_load, &c) == seq)
				nc__timeline_refresh_if_due(&nc__wall_timeline);
			nc__unlock();
			continue;
		}
		/* the refreshing thread is away: what nc_unix_ns hands out (the
		 * held lower bound), and the latest end raised by what the next
		 * epoch may have run ahead of it (its fastest slope: 1000 ppm) */
		uint64_t v = nc__timeline_reader_value(&nc__wall_timeline, &e, t);
		int st = nc_impl_utc_fill(out, v, t, c.as_of_tick, c.err0, c.slope, c.fresh_len,
					  c.horizon_len, c.as_of_ns, c.status_source);
		if ((st == NC_UTC_SYNCHRONISED || st == NC_UTC_FREE_RUNNING) && (int64_t)d > 0) {
			double ns = (double)(d - e.span) * ((double)e.mi + (double)e.mf * 0x1p-64) * 1.002 + 2;
			out->latest_ns = out->latest_ns + (int64_t)ceil(ns);
			*raised = ceil(ns);
		}
		return st;
	}
}

int nc__utc_read(struct nc_utc *out)
{
	double raised;
	return utc_read(out, &raised);
}

/* ---- what it is made of ---- */
void nc__utc_status(struct nc_utc_status *st)
{
	NC_LOCK_HELD();
	memset(st, 0, sizeof(*st));
	/* A read under this lock cannot refresh an overdue epoch (the thread
	 * that would waits for the lock): it holds the time and raises the
	 * latest end by all the time since.  Refreshed here first, and what
	 * is still raised is counted in the tie (as a followed step of the
	 * system clock is, below), so that the parts add up. */
	nc__timeline_refresh_if_due(&nc__wall_timeline);
	struct nc_utc r;
	double raised;
	utc_read(&r, &raised);
	st->status = r.status;
	st->source = r.source;
	st->as_of_ns = r.as_of_ns;
	st->half_width_ns = r.status == NC_UTC_SYNCHRONISED || r.status == NC_UTC_FREE_RUNNING
				    ? (double)(r.latest_ns - r.unix_ns)
				    : -1;
	st->fresh_s = u.have_good ? fresh_of(&u.good) : u.fresh_s;
	st->horizon_s = u.horizon_s;
	if (u.src)
		u.src->where(st->source_arg, sizeof(st->source_arg));
	nc__copy(st->chosen, sizeof(st->chosen), u.chosen);
	if (u.have_good) {
		/* the half width is source_bound_ns + drift_ppm * age_s + tie_ns */
		struct nc__wall_tie ti;
		nc__wall_tie(&ti);
		uint64_t now = nc__counter_read();
		st->age_s = (double)(int64_t)(now - u.good.q_tick) * ti.ns_per_tick / 1e9;
		st->source_bound_ns = u.good.bound_ns;
		st->tie_ns = ti.err0_ns + ti.ns_per_tick * ti.ppm * 1e-6 * (double)(int64_t)(now - ti.tick) +
			     (u.prev_slew_ns > u.good.slew_ns ? u.prev_slew_ns - u.good.slew_ns : 0) +
			     u.step_ns + raised;
		st->drift_ppm = u.good.drift_ppm >= 0 ? u.good.drift_ppm : u.drift_default;
	}
	if (r.status == NC_UTC_SYNCHRONISED && u.have_good) {
		nc__copy(st->why, sizeof(st->why), u.good.why); /* what the source said */
	} else {
		const char *why = u.last_why[0] ? u.last_why : r.status == NC_UTC_FREE_RUNNING ?
			"the source's figures are older than the freshness allowed" : "no source gave a bound";
		if (r.status == NC_UTC_FREE_RUNNING && !u.last_why[0] && u.have_good)
			/* answers still come, with figures that stopped moving
			 * (ptp4l's last measurement while its master is silent) */
			nc__fmt(st->why, sizeof(st->why), "the source's figures are %.1f s old, older than "
				"the freshness allowed (%.1f s): %s", st->age_s,
				fresh_of(&u.good), u.good.why);
		else if (r.status == NC_UTC_UNKNOWN && u.have_good)
			nc__fmt(st->why, sizeof(st->why), "the last figures are older than the horizon "
				"(%.0f s)%s%s", u.horizon_s, u.last_why[0] ? ": " : "", u.last_why);
		else
			nc__copy(st->why, sizeof(st->why), why);
	}
}

/* ---- as a ClockBound segment (the daemon's --clockbound) ----
 * The figures as of when the source gave them (their COARSE time), never
 * fresher: the bound then, growing at the drift from there, so that a
 * ClockBound client sees the source's staleness as it would see
 * clockbound-d's (free-running 5 s on, unknown past the void-after time),
 * and this process's own status beside it. */
void nc__utc_clockbound_figures(struct nc__clockbound_out *o)
{
	NC_LOCK_HELD();
	memset(o, 0, sizeof(*o));
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	int64_t coarse = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	o->as_of_ns = o->void_ns = coarse;
	if (u.disrupted || !u.have_good) {
		o->status = u.disrupted ? 3 : 0;
		return;
	}
	const struct nc__utc_fix *g = &u.good;
	double ns_tick = 1e9 / nc__rate_true_hz();
	double age = (double)(int64_t)(nc__counter_read() - g->q_tick) * ns_tick;
	if (age < 0)
		age = 0;
	double d = g->drift_ppm >= 0 ? g->drift_ppm : u.drift_default;
	double hor = u.horizon_s * 1e9;
	if (g->horizon_ns > 0 && g->horizon_ns < hor)
		hor = g->horizon_ns;
	if (age >= hor) {
		o->status = 0;
		return;
	}
	/* the bound on CLOCK_REALTIME itself (no tie) as of the figures */
	double b = g->bound_ns + u.step_ns;
	if (g->on_line) {
		/* a bound on the line: CLOCK_REALTIME is off it by the tie too,
		 * which grows at its own rate: added to the drift */
		struct nc__wall_tie ti;
		nc__wall_tie(&ti);
		double since = (double)(int64_t)(g->q_tick - ti.tick);
		b += ti.err0_ns + ti.ns_per_tick * ti.ppm * 1e-6 * (since > 0 ? since : 0);
		d += ti.ppm;
	}
	o->as_of_ns = coarse - (int64_t)age;
	o->bound_ns = (int64_t)ceil(b) + 1;
	o->drift_ppb = (uint32_t)ceil(d * 1e3);
	o->void_ns = o->as_of_ns + (int64_t)hor;
	double fresh = fresh_of(g) * 1e9;
	o->status = u.lost || age > fresh ? 2 : 1;
}
