/*
 * The library's state: one-time initialisation, the seqlocked parameter
 * block the inline fast path reads, and the rate refresh.
 *
 * Initialisation (once, under pthread_once, so concurrent first calls all
 * wait for the one that runs it and then see the finished state):
 *   kernel view -> counter choice -> 2 ms calibration against
 *   CLOCK_MONOTONIC_RAW -> stated frequencies cross-checked -> NANOCLOCK_HZ
 *   -> parameters published (seq turns even).
 *
 * nc_now_ns epochs.  The block holds one epoch: for ticks t in
 * [base_ticks, base_ticks + span) the value is base_ns + (t - base_ticks) *
 * slope.  A read at or past the end takes the slow path, which (under a
 * mutex, once) starts the next epoch at L = base_ticks + span with
 * base_ns' = the old epoch's value at L, exactly as readers compute it.
 * Values are therefore continuous at L, and since every slope is positive
 * and every epoch starts where the previous one ends, nc_now_ns never
 * decreases.  The refresh also measures the rate over the long baseline
 * since calibration and picks the next slope so that the clock meets
 * CLOCK_MONOTONIC_RAW at the end of the next epoch (slewing, at most
 * 500 ppm; a clock more than 1 ms behind steps forward — never back).
 * Epoch lengths double (4x the calibration window first, up to 16 s), so
 * the refresh costs one bracketed clock_gettime now and then and nothing
 * on the fast path but the compare it already does.
 */
#include "internal.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nc__state nc__g = {.seq = 1};

#define CALIB_WINDOW_NS 2000000   /* 2 ms: < 1 ppm here, init < 5 ms */
#define MAX_EPOCH_NS 16e9         /* refresh at least every 16 s */
#define MAX_SLEW 500e-6           /* fraction of the rate */
#define STEP_FORWARD_NS 1e6       /* further behind than this: step */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* Slow-path state: written during init (inside pthread_once) and under mu. */
static struct {
	const struct nc__counter *ctr;
	int init_status;
	int fixed;            /* rate fixed (exact OS clock or NANOCLOCK_HZ): no refresh */
	nc_conv_t conv;       /* in use for intervals */
	double hz, ppm;
	const char *hz_source;
	struct nc__calib cal; /* the init fit: anchor for long baselines */
	double meas_hz, meas_ppm, meas_worst_ppm, meas_window_ns;
	uint32_t refreshes;
	double epoch_ns;      /* length of the current epoch */
	uint64_t resolution;
	double init_ms;
	char env[96], env_status[128];
	struct nc_hz_source src[NC_MAX_HZ_SOURCES];
	int nsrc, adopted;
	char policy[384];
	struct nc_kernel_view kv;
	struct nc_candidate cands[NC_MAX_CANDIDATES];
	int ncand;
	struct nc__selection sel;
	char forced[32];
} S;

static int init_started;

int nc__initialised(void)
{
	return __atomic_load_n(&init_started, __ATOMIC_ACQUIRE);
}

/* ---- calibration I/O on the real counter ---- */
static uint64_t io_read(void *ctx)
{
	const struct nc__counter *c = ctx;
	return c->read_ordered(c->ctx);
}
static int64_t io_ref(void *ctx)
{
	(void)ctx;
	return nc__mono_raw_ns();
}

/* ---- publishing ---- */
/* The odd sequence number must be visible before any field changes: a
 * release fence after it, or (ThreadSanitizer does not model fences) a
 * release store of every field. */
#ifdef NC__TSAN
#define ST_ORDER __ATOMIC_RELEASE
#else
#define ST_ORDER __ATOMIC_RELAXED
#endif

static void publish(uint64_t kind, uint64_t bt, uint64_t sp, uint64_t bn, const nc_conv_t *now,
		    const nc_conv_t *conv)
{
	uint64_t s = __atomic_load_n(&nc__g.seq, __ATOMIC_RELAXED);
	int first = s & 1; /* the initial odd value: no readers to fence */
	if (!first) {
		__atomic_store_n(&nc__g.seq, s + 1, __ATOMIC_RELAXED);
#ifndef NC__TSAN
		__atomic_thread_fence(__ATOMIC_RELEASE);
#endif
	}
	__atomic_store_n(&nc__g.kind, kind, ST_ORDER);
	__atomic_store_n(&nc__g.base_ticks, bt, ST_ORDER);
	__atomic_store_n(&nc__g.span, sp, ST_ORDER);
	__atomic_store_n(&nc__g.base_ns, bn, ST_ORDER);
	__atomic_store_n(&nc__g.now_int, now->ns_int, ST_ORDER);
	__atomic_store_n(&nc__g.now_frac, now->ns_frac, ST_ORDER);
	__atomic_store_n(&nc__g.conv_int, conv->ns_int, ST_ORDER);
	__atomic_store_n(&nc__g.conv_frac, conv->ns_frac, ST_ORDER);
	__atomic_store_n(&nc__g.seq, first ? 2 : s + 2, __ATOMIC_RELEASE);
}

struct snap {
	uint64_t seq, kind, bt, sp, bn, mi, mf, ci, cf;
};

static void snapshot(struct snap *p)
{
	for (unsigned spins = 0;; spins++) {
		p->seq = __atomic_load_n(&nc__g.seq, __ATOMIC_ACQUIRE);
		p->kind = __atomic_load_n(&nc__g.kind, NC__LD_ORDER);
		p->bt = __atomic_load_n(&nc__g.base_ticks, NC__LD_ORDER);
		p->sp = __atomic_load_n(&nc__g.span, NC__LD_ORDER);
		p->bn = __atomic_load_n(&nc__g.base_ns, NC__LD_ORDER);
		p->mi = __atomic_load_n(&nc__g.now_int, NC__LD_ORDER);
		p->mf = __atomic_load_n(&nc__g.now_frac, NC__LD_ORDER);
		p->ci = __atomic_load_n(&nc__g.conv_int, NC__LD_ORDER);
		p->cf = __atomic_load_n(&nc__g.conv_frac, NC__LD_ORDER);
		NC__RFENCE();
		if (!(p->seq & 1) && p->seq == __atomic_load_n(&nc__g.seq, NC__LD_ORDER))
			return;
		if (spins > 64)
			sched_yield(); /* the writer was preempted mid-update */
	}
}

static void set_measured(const struct nc__calib *c)
{
	S.meas_hz = c->hz;
	S.meas_ppm = c->ppm;
	S.meas_worst_ppm = c->worst_ppm;
	S.meas_window_ns = (double)c->window_ns;
}

static void use_hz(double hz, double ppm, const char *source)
{
	uint64_t q;
	if (nc__hz_to_q24(hz, &q) != 0 || nc__conv_from_q24(&S.conv, q) != 0)
		return; /* out of range: keep what we have */
	S.hz = (double)q / 16777216.0;
	S.ppm = ppm;
	S.hz_source = source;
}

int nc__init_runs; /* for the tests: initialisation ran this many times */

static void write_policy(void)
{
	const struct nc_candidate *c = &S.cands[S.sel.index];
	int l = snprintf(S.policy, sizeof(S.policy), "%s selected: %s", c->name,
			 S.forced[0] && strcmp(S.forced, c->name) == 0
				 ? "forced"
				 : "lowest resolution+cost+penalty among usable candidates");
	if (strcmp(c->name, "tsc") == 0 && S.kv.tsc_unstable == 1 && l > 0)
		snprintf(S.policy + l, sizeof(S.policy) - (size_t)l,
			 "; the kernel distrusts the TSC (%s) but its rate is invariant and "
			 "nanoclock's own checks pass (monotonic, advancing, consistent calibration); "
			 "cross-CPU agreement is not checked at init",
			 S.kv.tsc_unstable_why);
}

/* Exact-rate counters (OS clocks): ticks map to ns by a fixed factor; the
 * origin is put on CLOCK_MONOTONIC_RAW's, once. */
static void init_fixed(void)
{
	S.resolution = S.cands[S.sel.index].resolution_ticks;
	use_hz(S.ctr->fixed_hz, 0, "exact");
	S.fixed = 1;
	uint64_t bt = 0, bn = 0;
	if (S.ctr != &nc__counter_mono_raw) {
		int64_t a = nc__mono_raw_ns();
		bt = S.ctr->read_ordered(S.ctr->ctx);
		int64_t b = nc__mono_raw_ns();
		bn = (uint64_t)(a + (b - a) / 2);
	}
	publish(NC__KIND_CALL, bt, UINT64_MAX, bn, &S.conv, &S.conv);
}

static void do_init(void)
{
	__atomic_store_n(&init_started, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&nc__init_runs, 1, __ATOMIC_RELAXED);
	int64_t t_start = nc__mono_raw_ns();
	nc__kernel_view(&S.kv);
	nc__select(&S.kv, S.cands, &S.ncand, &S.sel);
	S.init_status = S.sel.status;
	const char *fenv = getenv("NANOCLOCK_COUNTER");
	const struct nc__counter *u = nc__user_counter();
	snprintf(S.forced, sizeof(S.forced), "%s", fenv && *fenv ? fenv : u ? u->name : "");

	const char *env = getenv("NANOCLOCK_HZ");
	double env_hz = 0;
	if (env) {
		char why[96];
		snprintf(S.env, sizeof(S.env), "%s", env);
		if (nc__parse_hz(env, &env_hz, why, sizeof(why)) != 0) {
			snprintf(S.env_status, sizeof(S.env_status), "ignored: %s", why);
			env_hz = 0;
		}
	}

	for (;;) {
		S.ctr = S.sel.use;
		if (S.ctr->fixed_hz > 0) {
			init_fixed();
			if (env_hz > 0)
				snprintf(S.env_status, sizeof(S.env_status),
					 "ignored: the %s counter has an exact rate", S.ctr->name);
			write_policy();
			S.init_ms = (nc__mono_raw_ns() - t_start) / 1e6;
			return;
		}
		struct nc__calib_io io = {(void *)S.ctr, io_read, io_ref};
		int rc = nc__calibrate(&io, CALIB_WINDOW_NS, &S.cal);
		if (rc == 0)
			break;
		/* never fail: the next best candidate */
		char why[96];
		snprintf(why, sizeof(why), "calibration failed: %s", nc_strerror(rc));
		nc__select_next(S.cands, S.ncand, why, &S.sel);
	}
	S.resolution = S.cands[S.sel.index].resolution_ticks;
	uint64_t kind = S.ctr->kind;
	if (kind == NC__KIND_TSC && S.kv.cpuid_rdtscp == 1)
		kind = NC__KIND_TSCP;
	set_measured(&S.cal);
	use_hz(S.cal.hz, S.cal.ppm, "measured");

	S.nsrc = S.ctr->stated ? S.ctr->stated(S.src, NC_MAX_HZ_SOURCES) : 0;
	S.adopted = nc__adopt_stated(S.cal.hz, S.cal.ppm, S.src, S.nsrc);
	if (S.adopted >= 0)
		use_hz(S.src[S.adopted].hz, S.cal.ppm, S.src[S.adopted].name);

	if (env_hz > 0) {
		double diff = (env_hz - S.cal.hz) / S.cal.hz * 1e6;
		snprintf(S.env_status, sizeof(S.env_status),
			 "used: differs from measurement by %+.2f ppm", diff);
		use_hz(env_hz, fabs(diff) + S.cal.ppm, "env NANOCLOCK_HZ");
		S.fixed = 1;
	}
	if (S.sel.ext)
		nc__ext_set_hz(S.sel.ext, S.hz);
	write_policy();

	/* First epoch starts at the fit's centroid, where counter and
	 * CLOCK_MONOTONIC_RAW are best known; nc_now_ns shares its origin. */
	uint64_t now = S.ctr->read_ordered(S.ctr->ctx);
	S.epoch_ns = 4.0 * CALIB_WINDOW_NS;
	uint64_t span = S.fixed ? UINT64_MAX - 1
				: (now - S.cal.anchor_tick) + (uint64_t)(S.epoch_ns * S.hz / 1e9);
	publish(kind, S.cal.anchor_tick, span, (uint64_t)S.cal.anchor_ns, &S.conv, &S.conv);
	S.init_ms = (nc__mono_raw_ns() - t_start) / 1e6;
}

static void ensure_init(void)
{
	pthread_once(&once, do_init);
}

int nc_init(void)
{
	ensure_init();
	return S.init_status;
}

/* ---- refresh (mu held, the snapshot p is still the published one) ---- */
static void refresh(const struct snap *p, uint64_t t)
{
	uint64_t L = p->bt + p->sp;
	uint64_t cl = p->bn + nc__scale_floor(p->sp, p->mi, p->mf); /* clock value at L */
	double rate_ns = 1e9 / S.hz;                         /* ns per tick in use */
	double slope = rate_ns, target_l = (double)cl;
	int ok = 0;

	struct nc__bracket b;
	struct nc__calib_io io = {(void *)S.ctr, io_read, io_ref};
	nc__take_bracket(&io, 8, &b);
	double hz_l, ppm_l;
	if (b.width != UINT64_MAX && nc__calib_extend(&S.cal, &b, &hz_l, &ppm_l) == 0) {
		ok = 1;
		S.refreshes++;
		if (ppm_l < S.meas_ppm) {
			S.meas_hz = hz_l;
			S.meas_ppm = ppm_l;
			S.meas_worst_ppm = ppm_l; /* the long baseline's bound is already worst-case-like */
			S.meas_window_ns = (double)(b.ref - S.cal.anchor_ns);
		}
		if (S.adopted >= 0 && S.hz_source == S.src[S.adopted].name) {
			/* keep a stated value while measurement confirms it */
			struct nc_hz_source *s = &S.src[S.adopted];
			double diff = (s->hz - S.meas_hz) / S.meas_hz * 1e6;
			double tol = S.meas_ppm + s->resolution_hz / s->hz * 1e6;
			if (fabs(diff) > tol) {
				s->status = NC_SRC_REJECTED;
				snprintf(s->reason, sizeof(s->reason),
					 "dropped: longer measurement disagrees by %+.3f ppm", diff);
				use_hz(S.meas_hz, S.meas_ppm, "measured");
			} else {
				S.ppm = S.meas_ppm;
			}
		} else if (S.meas_ppm < S.ppm) {
			use_hz(S.meas_hz, S.meas_ppm, "measured");
		}
		/* where CLOCK_MONOTONIC_RAW is at L, by the best measured rate */
		double meas_ns = 1e9 / S.meas_hz;
		rate_ns = meas_ns;
		target_l = (double)b.ref - (double)(int64_t)(b.mid - L) * meas_ns;
	}

	double next = ok ? fmin(2 * S.epoch_ns, MAX_EPOCH_NS) : S.epoch_ns;
	S.epoch_ns = next;
	uint64_t span = (t - L) + (uint64_t)(next * S.hz / 1e9);
	double err = (double)cl - target_l; /* > 0: we are ahead */
	uint64_t bn = cl;
	if (err < -STEP_FORWARD_NS) {
		bn = (uint64_t)target_l; /* far behind: step forward, never back */
	} else {
		/* meet the reference at the end of the epoch */
		double adj = err / ((double)span * rate_ns);
		if (adj > MAX_SLEW)
			adj = MAX_SLEW;
		if (adj < -MAX_SLEW)
			adj = -MAX_SLEW;
		slope = rate_ns * (1 - adj);
	}
	nc_conv_t now;
	uint64_t q;
	if (nc__hz_to_q24(1e9 / slope, &q) != 0 || nc__conv_from_q24(&now, q) != 0)
		now = S.conv;
	publish(p->kind, L, span, bn, &now, &S.conv);
}

/* ---- out-of-line paths ---- */
static uint64_t read_ordered(uint64_t kind)
{
#if NC__HAVE_TSC
	if (kind == NC__KIND_TSC || kind == NC__KIND_TSCP)
		return nc__rdtsc_after();
#else
	(void)kind;
#endif
	return S.ctr->read_ordered(S.ctr->ctx);
}

uint64_t nc__now_slow(void)
{
	ensure_init();
	for (;;) {
		struct snap p;
		snapshot(&p);
		uint64_t d = read_ordered(p.kind) - p.bt;
		if (d < p.sp)
			return p.bn + nc__scale_floor(d, p.mi, p.mf);
		if ((int64_t)d < 0)
			return p.bn; /* counter behind the epoch start: clamp */
		pthread_mutex_lock(&mu);
		if (__atomic_load_n(&nc__g.seq, __ATOMIC_ACQUIRE) == p.seq)
			refresh(&p, p.bt + d);
		pthread_mutex_unlock(&mu);
	}
}

uint64_t nc__ticks_slow(int ordered)
{
	ensure_init();
	uint64_t k = __atomic_load_n(&nc__g.kind, NC__LD_ORDER);
#if NC__HAVE_TSC
	if (k == NC__KIND_TSC || k == NC__KIND_TSCP)
		return ordered ? nc__rdtsc_fenced() : nc__rdtsc();
#else
	(void)k;
#endif
	return ordered ? S.ctr->read_ordered(S.ctr->ctx) : S.ctr->read(S.ctr->ctx);
}

uint64_t nc__ticks_to_ns_slow(uint64_t ticks)
{
	ensure_init();
	struct snap p;
	snapshot(&p);
	return nc__scale(ticks, p.ci, p.cf);
}

/* ---- information ---- */
const char *nc_counter_name(void)
{
	ensure_init();
	return S.ctr->name;
}

double nc_ticks_per_second(void)
{
	ensure_init();
	pthread_mutex_lock(&mu);
	double hz = S.hz;
	pthread_mutex_unlock(&mu);
	return hz;
}

double nc_ticks_per_second_uncertainty_ppm(void)
{
	ensure_init();
	pthread_mutex_lock(&mu);
	double ppm = S.ppm;
	pthread_mutex_unlock(&mu);
	return ppm;
}

const char *nc_ticks_per_second_source(void)
{
	ensure_init();
	pthread_mutex_lock(&mu);
	const char *s = S.hz_source;
	pthread_mutex_unlock(&mu);
	return s;
}

void nc_get_conv(nc_conv_t *out)
{
	ensure_init();
	pthread_mutex_lock(&mu);
	*out = S.conv;
	pthread_mutex_unlock(&mu);
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
	uint64_t left = S.ctr->bits >= 64 ? UINT64_MAX - t
					  : ((UINT64_C(1) << S.ctr->bits) - 1) - (t & ((UINT64_C(1) << S.ctr->bits) - 1));
	double s = (double)left / S.hz;
	double ns_room = ((double)UINT64_MAX - (double)now_ns) / 1e9;
	if (ns_room < s)
		s = ns_room;
	return s >= 1.8e19 ? UINT64_MAX : (uint64_t)s;
}

uint64_t nc_seconds_before_wrap(void)
{
	ensure_init();
	uint64_t t = nc_ticks(), now = nc_now_ns(); /* before mu: may refresh */
	pthread_mutex_lock(&mu);
	uint64_t s = before_wrap(t, now);
	pthread_mutex_unlock(&mu);
	return s;
}

int nc_get_info(struct nc_info *o)
{
	ensure_init();
	memset(o, 0, sizeof(*o));
	uint64_t t = nc_ticks(), now = nc_now_ns(); /* before mu: may refresh */
	pthread_mutex_lock(&mu);
	o->init_status = S.init_status;
	o->counter = S.ctr->name;
	o->hz = S.hz;
	o->hz_uncertainty_ppm = S.ppm;
	o->hz_source = S.hz_source;
	o->hz_measured = S.meas_hz;
	o->hz_measured_ppm = S.meas_ppm;
	o->hz_measured_worst_ppm = S.meas_worst_ppm;
	o->calib_window_ms = S.meas_window_ns / 1e6;
	o->refreshes = S.refreshes;
	o->resolution_ticks = S.resolution;
	o->resolution_ns = S.resolution * 1e9 / S.hz;
	o->seconds_before_wrap = before_wrap(t, now);
	o->init_ms = S.init_ms;
	snprintf(o->hz_env, sizeof(o->hz_env), "%s", S.env);
	snprintf(o->hz_env_status, sizeof(o->hz_env_status), "%s", S.env_status);
	o->n_hz_sources = S.nsrc;
	memcpy(o->hz_sources, S.src, sizeof(S.src));
	snprintf(o->policy, sizeof(o->policy), "%s", S.policy);
	snprintf(o->counter_forced, sizeof(o->counter_forced), "%s", S.forced);
	snprintf(o->counter_error, sizeof(o->counter_error), "%s", S.sel.error);
	o->n_candidates = S.ncand;
	memcpy(o->candidates, S.cands, sizeof(S.cands));
	o->kernel = S.kv;
	pthread_mutex_unlock(&mu);
	return o->init_status;
}
