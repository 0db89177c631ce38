/* SPDX-License-Identifier: MIT */
/* Internal interfaces between the library's files.  Nothing here is
 * exported from the shared library (-fvisibility=hidden); the tests link the
 * static archive and may call these directly.
 *
 * How the pieces depend on each other (one way only):
 *   counters/user.c (registrations) --frozen by--> init.c
 *   env.c (the environment, read once) ----------> init.c
 *   cpuid.c, kernel.c (machine facts) -----------> init.c -> select.c -> the counters
 *   select.c (choice) -> calibrate.c -> freq_sources.c (adoption) -> timeline.c
 */
#ifndef NC_INTERNAL_H
#define NC_INTERNAL_H

#include "nanoclock.h"
#include "nanoclock_info.h"
#include "nanoclock_sync.h"
#include "nanoclock_trace.h"

#include <stddef.h>
#include <stdint.h>

#define NC_HIDDEN __attribute__((visibility("hidden")))
#define NC_LIKELY(x) __builtin_expect(!!(x), 1)
#define NC_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ThreadSanitizer does not model fences: the library's seqlock writer uses
 * release stores instead under it (see publish_line in timeline.c). */
#if defined(__SANITIZE_THREAD__)
#define NC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NC_TSAN 1
#endif
#endif
#ifdef NC_TSAN
#define NC_LD_ORDER __ATOMIC_ACQUIRE
#define NC_RFENCE() ((void)0)
#else
#define NC_LD_ORDER __ATOMIC_RELAXED
#define NC_RFENCE() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#endif

/* ---- the one rule for a plausible counter frequency ---- */
#define NC_HZ_MIN 1e3   /* 1 kHz */
#define NC_HZ_MAX 1e11  /* 100 GHz */
static inline int nc__hz_valid(double hz) { return hz >= NC_HZ_MIN && hz <= NC_HZ_MAX; }

/* ---- conv.c ---- */
/* Conversion parameters from a frequency in Hz * 2^24 (see conv.c). */
NC_HIDDEN int nc__conv_from_q24(nc_conv_t *c, uint64_t hz_q24);
NC_HIDDEN int nc__hz_to_q24(double hz, uint64_t *q24);
/* 64.64 ns-per-tick for a rate, rounded to nearest (0 on bad input) */
NC_HIDDEN int nc__ns_per_tick(double hz, uint64_t *ip, uint64_t *fp);

/* ---- env.c: the environment, read once by init ---- */
struct nc__config {
	char counter[32];        /* NANOCLOCK_COUNTER ("" if unset or refused) */
	int counter_set;
	char counter_why[160];   /* set but empty or too long: refused, and why */
	char hz_text[96];        /* NANOCLOCK_HZ as found */
	int hz_set;
	double hz;               /* parsed value, 0 if unset or refused */
	char hz_why[128];        /* why refused */
	int hz_force;            /* NANOCLOCK_HZ_FORCE=1: use even if measurement disagrees */
	char force_why[96];      /* NANOCLOCK_HZ_FORCE neither 0 nor 1: refused, and why */
	double calib_ppm;        /* target uncertainty of the first calibration */
	double calib_max_ms;     /* its cap */
	char calib_why[128];     /* a refused calibration setting, if any */
	double unix_refresh_ms;  /* NANOCLOCK_UNIX_REFRESH_MS, 0 if unset */
	char unix_why[128];      /* ... refused, and why */
};
/* User text fit for a one-line reason: at most 40 bytes, control and
 * non-ASCII bytes as '?', "..." when cut.  Returns out. */
NC_HIDDEN const char *nc__quote(const char *s, char *out, size_t outlen);
/* Parse a NANOCLOCK_HZ value.  0 and *hz set, or NC_EINVAL/NC_ERANGE with a
 * reason in why[]. */
NC_HIDDEN int nc__parse_hz(const char *s, double *hz, char *why, size_t whylen);
/* A plain positive decimal in [lo, hi]: 0, or NC_EINVAL/NC_ERANGE with why[]. */
NC_HIDDEN int nc__parse_positive(const char *s, double lo, double hi, double *out, char *why,
				 size_t whylen);
/* Fill *c from the environment and from what the application set before
 * init (app_ppm/app_ms, 0 if not set). */
NC_HIDDEN void nc__config_read(struct nc__config *c, double app_ppm, double app_ms);
/* ... from another environment: get(name, ctx) returns a value or NULL
 * (the fuzzer's; nc__config_read passes getenv). */
NC_HIDDEN void nc__config_read_from(struct nc__config *c, double app_ppm, double app_ms,
				    const char *(*get)(const char *name, void *ctx), void *ctx);

/* ---- calibrate.c ---- */
/* Where calibration reads its counter and its reference clock.  The real
 * library passes the selected counter and CLOCK_MONOTONIC_RAW; tests pass a
 * simulated pair. */
struct nc__calib_io {
	void *ctx;
	uint64_t (*read)(void *ctx);    /* ordered counter read */
	int64_t (*ref_ns)(void *ctx);   /* reference clock, ns */
};

/* When the first calibration may stop. */
struct nc__calib_goal {
	int64_t min_ns;      /* never stop before this much reference time */
	int64_t max_ns;      /* always stop here */
	double target_ppm;   /* stop at the first checkpoint with ppm <= this (0: run to max) */
};

struct nc__calib {
	double hz;            /* ticks per second */
	double ppm;           /* stated uncertainty (about 4 sigma) */
	double worst_ppm;     /* worst case from bracket widths alone */
	double sigma_ns;      /* residual scatter of accepted samples */
	double anchor_sd_ns;  /* standard error of the fitted line at its centroid */
	uint64_t min_width;   /* narrowest bracket seen, ticks */
	uint64_t accept_width;/* brackets wider than this were dropped */
	uint32_t n_used, n_total;
	/* A point on the fitted line (its centroid), the anchor for longer
	 * baselines later: counter value and reference ns. */
	uint64_t anchor_tick;
	int64_t anchor_ns;
	int64_t window_ns;    /* reference time the fit spans */
};

/* One bracket: counter, reference, counter.  mid is the counter value at
 * the middle of the bracket, width its width, both in ticks. */
struct nc__bracket {
	uint64_t mid;
	int64_t ref;
	uint64_t width;
};
NC_HIDDEN void nc__take_bracket(const struct nc__calib_io *io, int tries,
				struct nc__bracket *out);
/* Fixed window (the tests' and the bench's form). */
NC_HIDDEN int nc__calibrate(const struct nc__calib_io *io, int64_t window_ns,
			    struct nc__calib *out);
/* Adaptive: stops as soon as the goal is met. */
NC_HIDDEN int nc__calibrate_until(const struct nc__calib_io *io, const struct nc__calib_goal *g,
				  struct nc__calib *out);
/* Rate over the long baseline from c's anchor to bracket b; 0 on success. */
NC_HIDDEN int nc__calib_extend(const struct nc__calib *c, const struct nc__bracket *b,
			       double *hz, double *ppm);

/* ---- cpuid.c: x86 CPUID, read once (zeros elsewhere) ---- */
struct nc__cpuid {
	int valid, tsc, rdtscp, invariant, hypervisor;
	uint32_t max_leaf, max_hv_leaf;
	char hv_sig[13];
	uint32_t leaf15[3];  /* EAX (denominator), EBX (numerator), ECX (crystal Hz) */
	uint32_t hv_tsc_khz; /* leaf 40000010h EAX, 0 if absent */
};
NC_HIDDEN const struct nc__cpuid *nc__cpuid(void);

/* ---- kernel.c: what the machine and the OS tell (read once at init) ---- */
struct nc__machine {
	struct nc_kernel_view kv;     /* reported as is by nanoclock info */
	const struct nc__cpuid *cpuid;
	double cpuinfo_mhz;           /* /proc/cpuinfo "cpu MHz" of the first CPU, 0 if none */
	int tsc_known_freq;           /* the kernel took the TSC rate from hardware/hypervisor */
	int tsc_user_disabled;        /* prctl(PR_GET_TSC): RDTSC faults in this thread */
	char unreadable[48];          /* "/proc and /sys not readable", ... ("" if both were) */
};
NC_HIDDEN void nc__machine_read(struct nc__machine *m);

/* ---- freq_sources.c ---- */
NC_HIDDEN void nc__src_set(struct nc_hz_source *s, const char *name, double hz,
			   double resolution_hz, const char *reason);
/* The kernel's counter-to-ns conversion in the perf_event mmap page.  Slow
 * (perf_event_open can take 10 ms on an idle VM): never on the first call. */
NC_HIDDEN void nc__src_perf_page(struct nc_hz_source *s);
/* A measurement as evidence about stated values: the rate, its stated
 * uncertainty, and the most one counter step can bias it over the window
 * (a quantised counter's slope can be off by a step over the baseline). */
struct nc__meas {
	double hz, ppm, step_ppm;
};
/* The one adoption rule: does stated source s agree with measurement m?
 * diff and tolerance in ppm returned. */
NC_HIDDEN int nc__src_agrees(const struct nc_hz_source *s, const struct nc__meas *m,
			     double *diff_ppm, double *tol_ppm);
/* Apply it to every stated source: sets status and reason of each
 * (cross-checks only: the measurement is used); returns how many agree. */
NC_HIDDEN int nc__check_stated(const struct nc__meas *m, struct nc_hz_source *src, int n);
/* The one rule for a rate the user states (NANOCLOCK_HZ, nc_set_counter):
 * used unless measurement contradicts it; *claim_ppm its uncertainty. */
#define NC_USER_RATE_TOL_PPM 1000.0
NC_HIDDEN int nc__user_rate_ok(double stated_hz, const struct nc__meas *m, int force,
			       double *claim_ppm, double *diff_ppm, double *tol_ppm);

/* ---- counters ---- */
struct nc__counter {
	const char *name;
	const char *what;              /* one-line description */
	uint64_t kind;                 /* NC_IMPL_KIND_*: read inline, or CALL */
	uint64_t (*read)(void *ctx);   /* unordered */
	uint64_t (*read_ordered)(void *ctx);
	void *ctx;
	unsigned bits;                 /* counter width; < 64 is extended (extend.c) */
	double penalty_ns;             /* selection penalty (select.c) */
	double fixed_hz;               /* > 0: exact rate by definition, no calibration */
	int trap;                      /* probe with faults trapped (nothing can tell
					  in advance whether a read faults) */
	/* frequencies the hardware/OS state for it, cheap ones only; NULL: none */
	int (*stated)(const struct nc__machine *m, struct nc_hz_source *out, int max);
	/* 0 if it may be used on this machine, else NC_ENOCOUNTER and why[];
	 * NULL: always */
	int (*available)(const struct nc__machine *m, char *why, size_t whylen);
};
#if defined(__x86_64__) || defined(__i386__)
NC_HIDDEN extern const struct nc__counter nc__counter_tsc;
#endif
#if defined(__aarch64__)
NC_HIDDEN extern const struct nc__counter nc__counter_cntvct;
NC_HIDDEN extern const struct nc__counter nc__counter_cntvctss;
#endif
#if defined(__powerpc64__)
NC_HIDDEN extern const struct nc__counter nc__counter_timebase;
#endif
#if defined(__riscv) && __riscv_xlen == 64
NC_HIDDEN extern const struct nc__counter nc__counter_rdtime;
#endif
NC_HIDDEN extern const struct nc__counter nc__counter_mono_raw;
NC_HIDDEN extern const struct nc__counter nc__counter_mono;
NC_HIDDEN extern const struct nc__counter nc__counter_gettimeofday;
/* This architecture's hardware counter for this machine, or NULL. */
NC_HIDDEN const struct nc__counter *nc__hw_counter(const struct nc__machine *m);

/* counters/user.c: registrations.  Initialisation freezes them (after
 * which nc_set_counter and nc__test_add_candidate return NC_EBUSY) and
 * hands them to selection. */
#define NC_MAX_REGISTERED 7
struct nc__registered {
	const struct nc__counter *app;  /* nc_set_counter's, or NULL */
	const struct nc__counter *test[NC_MAX_REGISTERED - 1];
	int ntest;
	double app_ppm, app_ms;         /* nc_set_calibration_target, 0 if not set */
};
NC_HIDDEN void nc__registry_freeze(struct nc__registered *out);
NC_HIDDEN int nc__test_add_candidate(const struct nc_counter_spec *spec);

/* ---- extend.c: counters narrower than 64 bits ---- */
struct nc__ext {
	const struct nc__counter *raw;
	uint64_t mask;
	uint64_t last_raw, ext;
	int64_t last_os;
	uint64_t first_ext; /* the first read: a rough rate before hz is known */
	int64_t first_os;
	double hz;         /* 0 until known: then wraps are also counted by time */
	int started;
	long backsteps;    /* raw values that went backwards (see extend.c) */
	struct nc__counter wrapped; /* reads the extended value */
};
NC_HIDDEN void nc__ext_init(struct nc__ext *e, const struct nc__counter *raw);
NC_HIDDEN void nc__ext_set_hz(struct nc__ext *e, double hz);
/* The pure core: the next extended value for raw value `raw` read at OS
 * time os_ns (caller serialises). */
NC_HIDDEN uint64_t nc__ext_step(struct nc__ext *e, uint64_t raw, int64_t os_ns);

/* ---- trap.c: run code that may fault ---- */
/* Runs fn(arg) with SIGILL, SIGSEGV, SIGBUS and SIGFPE trapped for this
 * thread.  Returns 0, or the signal number if fn faulted.  The process's
 * handlers and this thread's signal mask are restored exactly. */
NC_HIDDEN int nc__trap_run(void (*fn)(void *), void *arg);

/* ---- select.c ---- */
struct nc__selection {
	const struct nc__counter *use; /* selected (extended if narrow) */
	int index;                     /* in cands */
	struct nc__ext *ext;           /* its extension state if narrow, else NULL */
	int status;                    /* 0 or NC_ENOCOUNTER (forced one failed) */
	char forced[32];               /* the counter asked for ("" if none) */
	const char *forced_by;         /* "NANOCLOCK_COUNTER", "the application" or NULL */
	char error[192];               /* why the forced one was not used */
};
NC_HIDDEN void nc__select(const struct nc__machine *m, const struct nc__registered *reg,
			  const char *env_counter, struct nc_candidate *cands, int *n,
			  struct nc__selection *sel);
/* After the selected one failed later (calibration): pick the next best. */
NC_HIDDEN void nc__select_next(struct nc_candidate *cands, int n, const char *why,
			       struct nc__selection *sel);

/* Read a counter n times: 0 if it never decreased and advanced at least
 * once; resolution = smallest nonzero step, cost in ns per read.  Else
 * NC_ENOCOUNTER (it went backwards) or NC_CHECK_STILL (it did not move),
 * with why[] filled. */
#define NC_CHECK_STILL 1
NC_HIDDEN int nc__counter_check(const struct nc__counter *c, int n, uint64_t *resolution,
				double *cost_ns, char *why, size_t whylen);

/* ---- refclock.c: the reference clocks, through one table ---- */
struct nc__kclock { /* what adjtimex() says */
	int state;       /* its return value: TIME_OK, TIME_INS, ..., TIME_ERROR */
	int status;      /* STA_* bits */
	long maxerror_us, esterror_us, tai_s;
	double freq_ppm;
	long tick_us, tick_nominal_us; /* us per clock tick, and its nominal value */
};
struct nc__refclocks {
	int64_t (*raw)(void);  /* CLOCK_MONOTONIC_RAW, ns */
	int64_t (*mono)(void); /* CLOCK_MONOTONIC, ns: NTP's rate, no steps */
	int64_t (*real)(void); /* CLOCK_REALTIME, ns since 1970 */
	int64_t (*boot)(void); /* CLOCK_BOOTTIME, ns */
	int (*kclock)(struct nc__kclock *k); /* 0, or -1 if unavailable */
};
NC_HIDDEN extern struct nc__refclocks nc__ref;
NC_HIDDEN void nc__test_set_refclocks(const struct nc__refclocks *r); /* tests, before init */
NC_HIDDEN int64_t nc__mono_raw_ns(void);
NC_HIDDEN int64_t nc__clock_ns(int clock_id); /* -1 on error */

/* ---- sync_analysis.c: the pure part of the cross-CPU check ---- */
struct nc__sync_rec {
	uint32_t idx; /* index into the CPU list; 0 is the base */
	uint64_t t;
};
struct nc__sync_iv {
	int64_t lo, hi;
	int has_lo, has_hi;
};
struct nc__sync_acc {
	int ncpu;
	const int *cpus;
	struct nc__sync_iv iv[NC_SYNC_MAX_CPUS];
	uint64_t enclosed[NC_SYNC_MAX_CPUS], probes[NC_SYNC_MAX_CPUS];
	int advanced[NC_SYNC_MAX_CPUS];
	uint64_t decreases, total;
	int pace_ok, empty, shifted, bad_idx;
	char evidence[256];
};
NC_HIDDEN void nc__sync_acc_init(struct nc__sync_acc *a, const int *cpus, int ncpu);
/* One round's records, in the order they happened. */
NC_HIDDEN void nc__sync_analyse_round(struct nc__sync_acc *a, const struct nc__sync_rec *r,
				      size_t n);
NC_HIDDEN int nc__sync_enough(const struct nc__sync_acc *a, unsigned min_enclosed);
/* The report from the accumulated rounds (verdict, bounds, evidence). */
NC_HIDDEN void nc__sync_report(struct nc__sync_acc *a, unsigned min_enclosed, double hz,
			       int judge, struct nc_sync_report *rep);

/* ---- sync.c ---- */
NC_HIDDEN extern int nc__sync_fail_create_at;
NC_HIDDEN int nc__pin_self(int cpu); /* 0, or an errno */

/* ---- the library's state (init.c, timeline.c, wall.c, info.c) ---- */
/* The slow-path state: written during init (inside pthread_once) and
 * afterwards under nc__mu. */
struct nc__lib {
	const struct nc__counter *ctr;
	int init_status;
	int fixed;            /* rate fixed (exact OS clock or NANOCLOCK_HZ): no refinement */
	nc_conv_t conv;       /* in use for intervals */
	double hz, ppm;
	const char *hz_source;
	struct nc__calib cal; /* the latest anchor for long baselines */
	double meas_hz, meas_ppm, meas_worst_ppm, meas_window_ns;
	uint32_t refreshes;
	double epoch_ns;      /* length of the current nc_now_ns epoch */
	double first_epoch_ns;
	uint64_t now_kind;    /* how nc_now_ns's line reads the counter */
	int now_inline;       /* ... and whether the fast path may */
	/* the last refresh's observation (timeline.c observe) */
	int have_obs, remeasure;
	uint64_t obs_t;
	int64_t obs_raw, obs_boot;
	struct nc_events ev;
	uint64_t resolution;
	double init_ms;
	struct nc__config cfg;
	char env_status[160];
	struct nc_hz_source src[NC_MAX_HZ_SOURCES];
	int nsrc;
	int app_rate;         /* the rate in use is the one nc_set_counter stated */
	int perf_probed;      /* the deferred perf-page source has been read */
	char policy[384];
	struct nc__machine m;
	struct nc_candidate cands[NC_MAX_CANDIDATES];
	int ncand;
	struct nc__selection sel;
};
NC_HIDDEN extern struct nc__lib nc__S;
NC_HIDDEN extern int nc__init_runs;  /* tests: initialisation ran this many times */
NC_HIDDEN extern __thread long nc__slow_calls; /* tests: this thread's calls that left the inline path */
NC_HIDDEN void nc__ensure_init(void);
NC_HIDDEN void nc__lock(void);
NC_HIDDEN void nc__unlock(void);
NC_HIDDEN int nc__trylock(void); /* 1 if taken */

/* timeline.c: epochs and lines, shared by nc_now_ns and nc_unix_ns */
#define NC_NO_END (UINT64_MAX >> 1) /* an epoch that never ends (exact or forced rate);
				       half the range, so that "behind" stays visible */
struct nc__epoch {
	uint64_t t0, span, c0, mi, mf;
};
NC_HIDDEN extern uint64_t nc__lockfree_ticks, nc__behind_ticks;
NC_HIDDEN uint64_t nc__epoch_value(const struct nc__epoch *e, uint64_t t);
NC_HIDDEN uint64_t nc__c0_for(uint64_t L, uint64_t V, uint64_t mi, uint64_t mf);
NC_HIDDEN int nc__slope_from_ns(double ns_per_tick, struct nc__epoch *e);
/* e's slope raised to the slowest a successor of old may have */
NC_HIDDEN void nc__clamp_slope(const struct nc__epoch *old, struct nc__epoch *e);
NC_HIDDEN uint64_t nc__lockfree_ceiling(const struct nc__epoch *e);
NC_HIDDEN void nc__publish_line(struct nc_impl_line *l, uint64_t kind, const struct nc__epoch *e,
				int inline_ok);
NC_HIDDEN void nc__snapshot(const struct nc_impl_line *l, struct nc_impl_line *p);
NC_HIDDEN void nc__line_epoch(const struct nc_impl_line *p, struct nc__epoch *e);
NC_HIDDEN uint64_t nc__read_ordered(uint64_t kind); /* the selected counter, out of line */
struct nc__timeline {
	struct nc_impl_line *line;
	/* nc__mu held, the line still p: a read of t at or past its end, or
	 * far behind its start */
	void (*refresh)(const struct nc_impl_line *p, uint64_t t);
};
NC_HIDDEN uint64_t nc__timeline_read(const struct nc__timeline *tl);
NC_HIDDEN void nc__now_upkeep(void);
NC_HIDDEN void nc__observe(void); /* nc__mu held */
NC_HIDDEN double nc__now_due_ns(void);
NC_HIDDEN void nc__use_hz(double hz, double ppm, const char *source);
/* the counter's measured rate where there is one (NANOCLOCK_HZ may impose
 * another on intervals), else the one in use */
NC_HIDDEN double nc__true_hz(void);
/* init.c: the latest measurement as evidence (nc__lock held, or init) */
NC_HIDDEN void nc__measurement(struct nc__meas *m);
/* First publication: nc_now_ns's first epoch from the calibration's
 * anchor (fixed: the exact-rate OS clock form), the conversion. */
NC_HIDDEN void nc__publish_first(void);

/* wall.c: nc_unix_ns's line */
NC_HIDDEN void nc__wall_first(void);
NC_HIDDEN void nc__wall_counter_changed(void); /* nc__mu held */
NC_HIDDEN void nc__wall_clock_was_set(void);   /* the upkeep thread saw a clock set */
NC_HIDDEN void nc__wall_upkeep(void);
NC_HIDDEN double nc__wall_due_ns(void);
NC_HIDDEN double nc__wall_refresh_ns(void);
NC_HIDDEN void nc__wall_events(uint32_t *steps, uint32_t *refreshes);

/* utc.c: adjtimex's view of UTC and nanoclock's tie combined (pure) */
NC_HIDDEN void nc__utc_decode(const struct nc__kclock *k, int have_k, double tie_error_ns,
			      struct nc_unix_status *st);

/* log.c: reports to the application (nc_set_log), delivered outside the
 * lock: nc__unlock and nc__ensure_init hand them over */
#define NC_LOG_MSGLEN 224
struct nc__logmsg {
	int level;
	char msg[NC_LOG_MSGLEN];
};
NC_HIDDEN int nc__log_wanted(int level);
NC_HIDDEN void nc__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
NC_HIDDEN void nc__log_locked(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
NC_HIDDEN void nc__log_any(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
NC_HIDDEN int nc__log_pop(struct nc__logmsg *out, nc_log_fn *fn, void **ctx); /* nc__mu held */
NC_HIDDEN int nc__log_pending(void);

/* debug.c: the checks of `make MODE=debug` (NC_DEBUG), reported through
 * the log hook at NC_LOG_ERROR and counted */
NC_HIDDEN void nc__debug_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
NC_HIDDEN void nc__debug_check_conv(const nc_conv_t *c);
NC_HIDDEN extern long nc__debug_failures;

/* upkeep.c */
NC_HIDDEN void nc__upkeep_after_fork_check(void); /* nc__mu held */
NC_HIDDEN void nc__upkeep_forked(void);
NC_HIDDEN int nc__upkeep_running(void);

/* extend.c: its lock, for fork (taken after nc__mu) */
NC_HIDDEN void nc__ext_lock(void);
NC_HIDDEN void nc__ext_unlock(void);
/* The deferred perf-page source (nc_get_info, the upkeep thread). */
NC_HIDDEN void nc__probe_deferred_sources(void);

#endif
