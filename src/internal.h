/* Internal interfaces between the library's files.  Nothing here is
 * exported from the shared library (-fvisibility=hidden); the tests link the
 * static archive and may call these directly. */
#ifndef NC_INTERNAL_H
#define NC_INTERNAL_H

#include "nanoclock.h"
#include "nanoclock_info.h"

#include <stdint.h>

#define NC_HIDDEN __attribute__((visibility("hidden")))

/* ---- conv.c ---- */
/* Conversion parameters from a frequency in Hz * 2^24 (see conv.c). */
NC_HIDDEN int nc__conv_from_q24(nc_conv_t *c, uint64_t hz_q24);
NC_HIDDEN int nc__hz_to_q24(double hz, uint64_t *q24);

/* ---- env.c ---- */
/* Parse a NANOCLOCK_HZ value.  0 and *hz set, or NC_EINVAL/NC_ERANGE with a
 * reason in why[]. */
NC_HIDDEN int nc__parse_hz(const char *s, double *hz, char *why, size_t whylen);

/* ---- calibrate.c ---- */
/* Where calibration reads its counter and its reference clock.  The real
 * library passes the selected counter and CLOCK_MONOTONIC_RAW; tests pass a
 * simulated pair. */
struct nc__calib_io {
	void *ctx;
	uint64_t (*read)(void *ctx);    /* ordered counter read */
	int64_t (*ref_ns)(void *ctx);   /* reference clock, ns */
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
NC_HIDDEN int nc__calibrate(const struct nc__calib_io *io, int64_t window_ns,
			    struct nc__calib *out);
/* Rate over the long baseline from c's anchor to bracket b; 0 on success. */
NC_HIDDEN int nc__calib_extend(const struct nc__calib *c, const struct nc__bracket *b,
			       double *hz, double *ppm);

/* ---- freq_sources.c ---- */
/* Frequencies the hardware or the OS state for the counter named `counter`.
 * Fills up to max entries of out[] (value 0 with a reason when a source is
 * absent); returns the number filled. */
NC_HIDDEN void nc__src_set(struct nc_hz_source *s, const char *name, double hz,
			   double resolution_hz, const char *reason);
/* The kernel's counter-to-ns conversion in the perf_event mmap page. */
NC_HIDDEN void nc__src_perf_page(struct nc_hz_source *s);
/* Decide between a measured estimate and the stated sources (pure). Sets
 * status and reason of each source; returns the index of the adopted one,
 * or -1 when measurement is used. */
NC_HIDDEN int nc__adopt_stated(double measured_hz, double measured_ppm,
			       struct nc_hz_source *src, int n);

/* ---- kernel.c ---- */
NC_HIDDEN void nc__kernel_view(struct nc_kernel_view *kv);

/* ---- counters ---- */
struct nc__counter {
	const char *name;
	const char *what;              /* one-line description */
	uint64_t kind;                 /* NC__KIND_TSC: read inline; else NC__KIND_CALL */
	uint64_t (*read)(void *ctx);   /* unordered */
	uint64_t (*read_ordered)(void *ctx);
	void *ctx;
	unsigned bits;                 /* counter width; < 64 is extended (extend.c) */
	double penalty_ns;             /* selection penalty (select.c) */
	double fixed_hz;               /* > 0: exact rate by definition, no calibration */
	/* frequencies the hardware/OS state for it; NULL: none */
	int (*stated)(struct nc_hz_source *out, int max);
	/* 0 if it may be used on this machine, else NC_ENOCOUNTER and why[];
	 * NULL: always */
	int (*available)(const struct nc_kernel_view *kv, char *why, size_t whylen);
};
#if defined(__x86_64__) || defined(__i386__)
NC_HIDDEN extern const struct nc__counter nc__counter_tsc;
#endif
#if defined(__aarch64__)
NC_HIDDEN extern const struct nc__counter nc__counter_cntvct;
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

/* user.c: the counter installed with nc_set_counter (NULL if none), and
 * extra candidates the tests add through nc__test_add_candidate. */
NC_HIDDEN const struct nc__counter *nc__user_counter(void);
NC_HIDDEN int nc__test_candidates(const struct nc__counter **out, int max);
NC_HIDDEN int nc__test_add_candidate(const struct nc_counter_spec *spec);
NC_HIDDEN int nc__initialised(void);

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
	double hz_hint;                /* stated or rough rate (0: none) */
	int status;                    /* 0 or NC_ENOCOUNTER (forced one failed) */
	char error[192];
};
NC_HIDDEN void nc__select(const struct nc_kernel_view *kv, struct nc_candidate *cands, int *n,
			  struct nc__selection *sel);
/* After the selected one failed later (calibration): pick the next best. */
NC_HIDDEN void nc__select_next(struct nc_candidate *cands, int n, const char *why,
			       struct nc__selection *sel);

/* x86 CPUID facts (zeros elsewhere). */
struct nc__cpuid {
	int valid, tsc, rdtscp, invariant, hypervisor;
	uint32_t max_leaf, max_hv_leaf;
	char hv_sig[13];
};
NC_HIDDEN void nc__cpuid_read(struct nc__cpuid *c);
NC_HIDDEN int nc__cpuid_raw(uint32_t leaf, uint32_t sub, uint32_t r[4]);

/* Read a counter n times: 0 if it never decreased and advanced at least
 * once; resolution = smallest nonzero step, cost in ns per read.  Else
 * NC_ENOCOUNTER (it went backwards) or NC__CHECK_STILL (it did not move),
 * with why[] filled. */
#define NC__CHECK_STILL 1
NC_HIDDEN int nc__counter_check(const struct nc__counter *c, int n, uint64_t *resolution,
				double *cost_ns, char *why, size_t whylen);

NC_HIDDEN int64_t nc__mono_raw_ns(void);

/* ---- counters/arm64_cntvct.c: CNTVCTSS_EL0 present (FEAT_ECV) ---- */
NC_HIDDEN int nc__arm64_has_ecv(void);

/* ---- sync.c ---- */
NC_HIDDEN extern int nc__sync_fail_create_at;

/* ---- clock.c ---- */
NC_HIDDEN extern int nc__init_runs;

#endif
