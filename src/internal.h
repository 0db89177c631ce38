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
NC_HIDDEN int nc__stated_sources(const char *counter, struct nc_hz_source *out, int max);
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
	uint64_t kind;                 /* NC__KIND_* for the inline fast path */
	uint64_t (*read)(void);        /* unordered */
	uint64_t (*read_ordered)(void);
	double fixed_hz;               /* > 0: exact rate, no calibration needed */
	unsigned bits;                 /* counter width */
	/* 0 if usable on this machine, else NC_ENOCOUNTER with why[] filled */
	int (*available)(char *why, size_t whylen);
};
NC_HIDDEN extern const struct nc__counter nc__counter_tsc;
NC_HIDDEN extern const struct nc__counter nc__counter_mono_raw;

/* x86 CPUID facts (zeros elsewhere). */
struct nc__cpuid {
	int valid, tsc, rdtscp, invariant, hypervisor;
	uint32_t max_leaf, max_hv_leaf;
	char hv_sig[13];
};
NC_HIDDEN void nc__cpuid_read(struct nc__cpuid *c);
NC_HIDDEN int nc__cpuid_raw(uint32_t leaf, uint32_t sub, uint32_t r[4]);

/* Read a counter n times: 0 if it never decreased and advanced at least
 * once; resolution = smallest nonzero step, cost in ns per read. */
NC_HIDDEN int nc__counter_check(uint64_t (*read)(void), int n, uint64_t *resolution,
				double *cost_ns, char *why, size_t whylen);

NC_HIDDEN int64_t nc__mono_raw_ns(void);

/* ---- clock.c ---- */
NC_HIDDEN extern int nc__init_runs;

#endif
